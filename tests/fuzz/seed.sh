#!/bin/sh
# seed.sh - add the shipped files and fixtures (templates/, conf/,
# tests/guests/*/, tests/pvesim/scenarios/) to the checked-in seed corpora
# (tests/fuzz/corpus/T), minimised with libFuzzer's -merge=1: only inputs
# that add coverage to what the corpus already holds (hand-written seeds
# with readable names, earlier merges named by their SHA-1) are kept.
# Needs the fuzz build:
#   make build/fuzz/bin/T...  &&  sh tests/fuzz/seed.sh build/fuzz
set -eu
fuzzdir=$1
raw=$fuzzdir/seeds
rm -rf "$raw"
g=tests/guests

# add T FILE...: copy the files into the raw seeds of target T
add() {
	t=$1
	shift
	mkdir -p "$raw/$t"
	for f in "$@"; do
		[ -f "$f" ] && cp "$f" "$raw/$t/$(echo "$f" | tr '/' '_')"
	done
	return 0
}

add ini templates/*.tmpl conf/*.conf conf/*.example tests/unit/data/*.tmpl tests/bench/*.tmpl
add conf conf/*.conf conf/*.example
add tmpl templates/*.tmpl tests/unit/data/*.tmpl tests/bench/*.tmpl
add osfacts $g/*/facts
add sim_scenario tests/pvesim/scenarios/*.json
for kind in root expected-virtio expected-switch expected-final; do
	add rw_kv $g/*/$kind/boot/loader.conf $g/*/$kind/etc/rc.conf
	add rw_rcconf $g/*/$kind/etc/rc.conf
	add rw_fstab $g/*/$kind/etc/fstab
	add rw_grub $g/*/$kind/boot/grub/menu.lst $g/*/$kind/boot/grub/device.map \
		$g/*/$kind/etc/default/grub $g/*/$kind/etc/initramfs-tools/conf.d/resume
	add rw_modules $g/*/$kind/etc/initramfs-tools/modules
	add rw_interfaces $g/*/$kind/etc/network/interfaces
	add rw_netplan $g/*/$kind/etc/netplan/*.yaml
	add rw_udev $g/*/$kind/etc/udev/rules.d/*.rules
done
# guest configs and their property strings from the scenarios
mkdir -p "$raw/pvecfg_hw" "$raw/propstr"
for s in tests/pvesim/scenarios/*.json; do
	jq -c '.guests[].config' "$s" | split -l 1 - "$raw/pvecfg_hw/$(basename "$s" .json)-"
	jq -r '.guests[].config | to_entries[] | .value | strings' "$s" >"$raw/propstr/$(basename "$s")"
done
for d in "$raw"/*/; do
	t=$(basename "$d")
	mkdir -p "tests/fuzz/corpus/$t"
	"$fuzzdir/bin/$t" -merge=1 "tests/fuzz/corpus/$t" "$d" >"$fuzzdir/seed-$t.log" 2>&1 ||
		{ echo "seed.sh: merge for $t failed, see $fuzzdir/seed-$t.log" >&2; exit 1; }
	echo "$t: $(find "tests/fuzz/corpus/$t" -type f | wc -l) inputs"
done
