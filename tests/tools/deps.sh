#!/bin/sh
# deps.sh - check pvagent's build and test dependencies (commands,
# pkg-config modules and modules of Debian's /usr/bin/python3). With --check
# only report; otherwise, as root on Debian, install what is missing with
# apt-get, else print the exact apt-get line and fail.
#   deps.sh [--check] "DEB PACKAGES" "COMMANDS" "PKG-CONFIG MODULES" ["PYTHON MODULES"]
set -u
check_only=0
if [ "${1:-}" = "--check" ]; then check_only=1; shift; fi
debs=$1 cmds=$2 mods=$3 pymods=${4:-}

missing() {
	out=""
	for c in $cmds; do
		[ -x "/usr/sbin/$c" ] || command -v "$c" >/dev/null 2>&1 || out="$out cmd:$c"
	done
	if command -v pkg-config >/dev/null 2>&1; then
		for m in $mods; do
			pkg-config --exists "$m" || out="$out pkg:$m"
		done
	else
		out="$out cmd:pkg-config"
	fi
	for m in $pymods; do
		/usr/bin/python3 -c "import $m" >/dev/null 2>&1 || out="$out py:$m"
	done
	echo "$out"
}

miss=$(missing)
[ -z "$miss" ] && exit 0
if [ "$check_only" = 1 ]; then
	echo "missing dependencies:$miss" >&2
	echo "run 'make deps' (as root on Debian) to install them" >&2
	exit 1
fi
line="apt-get install -y --no-install-recommends $debs"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "deps: installing:$miss"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null || { echo "deps: apt-get update failed" >&2; exit 1; }
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $debs >/dev/null || {
		echo "deps: '$line' failed" >&2; exit 1; }
	miss=$(missing)
	[ -z "$miss" ] && exit 0
	echo "deps: still missing after install:$miss" >&2
	exit 1
fi
echo "missing dependencies:$miss" >&2
echo "install them as root with:" >&2
echo "  $line" >&2
exit 1
