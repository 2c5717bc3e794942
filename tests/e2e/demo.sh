#!/bin/bash
# demo.sh - `make demo`: the whole pvagent flow against the bundled PVE
# simulator, as a new user would see it. Also run by `make test` (with the
# sanitizer builds), so the demo keeps working. As root, the scenario's
# running legacy guest fbsd9-legacy (VMID 190, FreeBSD 9.0 on IDE/e1000,
# 127.0.1.90) is a real sshd chrooted into the freebsd-9.0 fixture
# (tests/guests/guestd) that follows the simulator's boot model, and so are
# the VMs the demo creates (spare guests the simulator hands to them), so
# `up` writes their files over SSH as it would on a real cluster.
source "$(dirname "$0")/lib/sim.sh"

if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B= N=; fi
say() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
run() {
	printf '%s$ pvagent %s%s\n' "$B" "$*" "$N"
	pvagent "$@"
}
# run_to FILE ARGS...: run, its output shown as it comes and kept in FILE;
# the exit status is pvagent's. On a terminal pvagent gets one too (script:
# a pty), so its live progress lines redraw as they would for you; FILE
# keeps the text without the terminal's control sequences.
run_to() {
	local out=$1
	shift
	printf '%s$ pvagent %s%s\n' "$B" "$*" "$N"
	if [ -t 1 ]; then
		local cmd rc
		cmd=$(printf '%q ' "$PVAGENT_BIN" "$@")
		script -qefc "$cmd" /dev/null | tee "$out.tty"
		rc=${PIPESTATUS[0]}
		sed -e 's/\x1b\[[0-9;]*[A-Za-z]//g' -e 's/\r//g' "$out.tty" >"$out"
		return "$rc"
	fi
	pvagent "$@" 2>&1 | tee "$out"
	return "${PIPESTATUS[0]}"
}
demo_t0=$SECONDS

guest=
if [ "$(id -u)" = 0 ]; then
	say "Starting the guests: file trees behind real sshds on loopback"
	guestd_start freebsd-9.0 127.0.1.90
	guest=yes
	legacy_root=$GUEST_ROOT
	echo "fbsd9-legacy (FreeBSD 9.0): sshd on 127.0.1.90 port $GUEST_PORT, chrooted into $GUEST_ROOT"
	sim_args=(--guest-root "190=$GUEST_ROOT")
	spare_guests_start 2 freebsd-14
	web1_root=${SIM_SPARE_ARGS[1]#*=}
	cp "$web1_root/etc/rc.conf" "$E2E_DIR/web1.rc.conf.before"
	echo "two FreeBSD 14 trees for the VMs up will create, on 127.0.2.10 and .11"
	echo "their host keys are in the agent's known_hosts; pvagent.conf [ssh] port = $GUEST_PORT"
else
	say "Not root: no guest sshd (it runs chrooted), the guest-side step is left out"
	sim_args=()
fi

say "Starting the PVE simulator (demo scenario: 2 nodes, template VMs, one legacy IDE guest)"
sim_start tests/pvesim/scenarios/demo.json --time-scale 100 "${sim_args[@]}" "${SIM_SPARE_ARGS[@]}"
echo "simulator at $SIM_URL, certificate SHA-256 $SIM_FINGERPRINT"
echo "its clock runs 100 times faster than yours: PVE's figures (a migration's \"in 186s\","
echo "an estimate) are simulated time, a step's own timing (\"migrate 2.4s\") is yours"
echo "configuration: $PVAGENT_CONF (from conf/demo.conf)"

say "What is there"
run nodes
run list
run templates

if [ -n "$guest" ]; then
	say "Preview the guest-side setup of fbsd9-legacy over SSH (--dry-run: nothing is written)"
	tree_sum() {
		(cd "$legacy_root" && find . \( -path ./.pvagent-facts -o -path ./tmp -o -path ./dev \) \
			-prune -o -printf '%p %m %s\n' | sort &&
			find . \( -path ./.pvagent-facts -o -path ./tmp -o -path ./dev \) -prune -o \
				-type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum
	}
	rc_before=$(sha256sum <"$legacy_root/etc/rc.conf")
	tree_before=$(tree_sum)
	rc=0
	run_to "$E2E_DIR/inject.out" inject fbsd9-legacy -t freebsd-9.0 --var ip=127.0.1.90 \
		--dry-run || rc=$?
	[ $rc = 0 ] || fail "inject --dry-run exited $rc"
	grep -qx -- '--- a/etc/rc.conf' "$E2E_DIR/inject.out" &&
		grep -qx -- '+++ b/etc/rc.conf' "$E2E_DIR/inject.out" ||
		fail "inject --dry-run showed no diff for /etc/rc.conf"
	grep -qx -- '+hostname="fbsd9-legacy"' "$E2E_DIR/inject.out" ||
		fail "inject --dry-run did not show the new hostname"
	[ "$(sha256sum <"$legacy_root/etc/rc.conf")" = "$rc_before" ] ||
		fail "inject --dry-run changed the guest's /etc/rc.conf"
	[ "$(tree_sum)" = "$tree_before" ] || fail "inject --dry-run changed the guest's files"
	echo "(checked: the guest's /etc/rc.conf and every other file are unchanged)"

	say "Convert fbsd9-legacy from IDE/e1000 to virtio, measuring the disk before and after"
	rc=0
	run_to "$E2E_DIR/virtio.out" virtio fbsd9-legacy --address 127.0.1.90 --bench --size 16 ||
		rc=$?
	[ $rc = 0 ] || fail "virtio exited $rc"
	grep -q '^fbsd9-legacy: converted to virtio-blk$' "$E2E_DIR/virtio.out" ||
		fail "virtio did not report the conversion"
	grep -qE '^sequential write \(MB/s\) +[0-9.]+ +[0-9.]+ +[0-9.]+x$' "$E2E_DIR/virtio.out" ||
		fail "virtio --bench printed no before/after table"
	grep -q '^ifconfig_vtnet0="DHCP"$' "$legacy_root/etc/rc.conf" &&
		! grep -q '^ifconfig_em0=' "$legacy_root/etc/rc.conf" ||
		fail "the guest's rc.conf was not moved to vtnet0"
	grep -q '^virtio_blk_load="YES"$' "$legacy_root/boot/loader.conf" ||
		fail "the guest's loader.conf has no virtio_blk line"
	[ -f "$legacy_root/boot/modules/virtio_blk.ko" ] || fail "virtio-kmod was not installed"
	run list --long --node pve1 | tee "$E2E_DIR/list.out"
	grep -qE '^190 +fbsd9-legacy +pve1 +qemu +running .* virtio +virtio$' "$E2E_DIR/list.out" ||
		fail "fbsd9-legacy is not running on virtio"
	say "Run it again: nothing left to convert"
	run virtio fbsd9-legacy --address 127.0.1.90 | tee "$E2E_DIR/virtio2.out"
	grep -q 'already virtio' "$E2E_DIR/virtio2.out" || fail "a second virtio run changed something"
	say "Benchmark it again later: every run is stored and compared with the last one"
	run bench fbsd9-legacy --address 127.0.1.90 --size 16 | tee "$E2E_DIR/bench.out"
	grep -q '^compared with the last run:$' "$E2E_DIR/bench.out" ||
		fail "bench did not compare with the stored run"
	grep -qE '^sequential read \(MB/s\) +[0-9.]+ +[0-9.]+ +[0-9.]+x$' "$E2E_DIR/bench.out" ||
		fail "bench printed no comparison row"
fi

say "Provision two FreeBSD 14 VMs, two at a time: clone, configure, start, then their files over SSH"
if [ -n "$guest" ]; then
	run_to "$E2E_DIR/up.out" up web1 db1 -t freebsd-14 --parallel 2 --set cores=2
	grep -qE '^web1 +[0-9]+ +pve1 +127\.0\.2\.1[01] +created ' "$E2E_DIR/up.out" ||
		fail "up did not create web1 at its guest's address"
	grep -qE 'web1: inject .*changed: FreeBSD 14.*/etc/rc.conf' "$E2E_DIR/up.out" ||
		fail "up did not write web1's files"
	say "What up wrote into web1 over SSH (its /etc/rc.conf before and after)"
	diff -u --label a/etc/rc.conf --label b/etc/rc.conf "$E2E_DIR/web1.rc.conf.before" \
		"$(grep -l '^hostname="web1"' "${SIM_SPARE_ARGS[1]#*=}/etc/rc.conf" \
			"${SIM_SPARE_ARGS[3]#*=}/etc/rc.conf")" || true
else
	run up web1 db1 -t freebsd-14 --parallel 2 --set cores=2 --no-inject
fi
say "An Ubuntu 24.04 VM and an LXC container (no sshd behind them here: --no-inject)"
run up app1 -t ubuntu-24.04 --no-inject
run up ct1 -t ubuntu-24.04-ct --no-inject
run list

say "Run up again: it converges (applies the difference) instead of making a second guest"
if [ -n "$guest" ]; then
	run up web1 -t freebsd-14 --set cores=4
else
	run up web1 -t freebsd-14 --set cores=4 --no-inject
fi

say "Migrate web1 live to pve2: the downtime PVE measured, and the gap its clients saw"
echo "(clients: a TCP connect to web1's SSH port every 10 ms during the migration; here web1"
echo "is a real sshd that the simulator cannot pause, so it sees no gap: on a real cluster"
echo "it is the guest's pause as the network sees it)"
run_to "$E2E_DIR/migrate.out" migrate web1 pve2 --max-downtime 100
grep -qE '^web1: migrated to pve2 \(online\) in [0-9]+[smh].*downtime [0-9.]+m?s \(PVE\)' \
	"$E2E_DIR/migrate.out" || fail "migrate printed no downtime"
if [ -n "$guest" ]; then
	grep -qE 'downtime [0-9.]+m?s \(PVE\), clients saw ' "$E2E_DIR/migrate.out" ||
		fail "migrate did not say what the clients saw"
fi
run migrate web1 pve2 | tee "$E2E_DIR/migrate2.out"
grep -q '^web1: already on pve2$' "$E2E_DIR/migrate2.out" || fail "a second migrate moved web1 again"

say "Drain pve1 for maintenance (templates stay), then bring its guests home"
echo "(a container cannot move live: it migrates by a restart, so its downtime is the restart's)"
run drain pve1 --dry-run
run_to "$E2E_DIR/drain.out" drain pve1 --max-workers 2
grep -qE '^ct1 .* restart +pve2 .* moved ' "$E2E_DIR/drain.out" ||
	fail "drain did not move ct1 by a restart migration"
run list --node pve1
pvagent --json list --node pve1 | jq -e '[.guests[] | select(.template | not)] | length == 0' \
	>/dev/null || fail "drain left guests on pve1"
run undrain pve1
pvagent --json list --node pve2 | jq -e '[.guests[] | select(.name == "web1")] | length == 1' \
	>/dev/null || fail "undrain moved web1, which was not drained from pve1"
run undrain pve1 | tee "$E2E_DIR/undrain2.out"
grep -q '0 guests to bring home' "$E2E_DIR/undrain2.out" || fail "a second undrain moved something"
run migrate web1 pve1

say "Clean up (on a terminal down lists each guest with its disks and asks; a script says --yes)"
run down db1 --yes
run down app1 --yes
run down ct1 --purge --yes
run down web1 --yes
rc=0
run down web1 --yes || rc=$?
[ "$rc" = 2 ] || fail "a second down of web1 exited $rc, not 2 (no such guest)"
run list

say "Every up, down, virtio, inject and bench was a job in state.db: steps, UPIDs, events"
run jobs --limit 8
vj=$(pvagent --json jobs --limit 100 | jq -r '[.jobs[] | select(.workflow == "up")][-1].id')
[ -n "$vj" ] && [ "$vj" != null ] || fail "no up job in the store"
run job "$vj"
open=$(pvagent --json jobs --limit 100 |
	jq -r '[.jobs[] | select(.state != "done" and .state != "cancelled")] | length')
[ "$open" = 0 ] || fail "$open jobs did not end done (the second down of web1, not found, stores none)"
pvagent --json job "$vj" | jq -e '.job.steps[] | select(.name == "clone") | .upid' >/dev/null ||
	fail "the clone step of job $vj has no UPID"

bad=$(requests_failing_schema)
[ -z "$bad" ] || fail "requests refused by the simulator's schema check: $bad"
say "Done: every request pvagent sent passed the PVE API schema check ($(wc -l <"$E2E_DIR/requests.jsonl") requests)"
echo "Next: 'make sandbox' runs this cluster in the background for you to try any command;"
echo "on a real host, 'pvagent setup https://HOST:8006' makes the API token and the config."
echo "(the demo took $((SECONDS - demo_t0)) s of wall time)"
