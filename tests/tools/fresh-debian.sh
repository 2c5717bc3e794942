#!/usr/bin/env bash
# fresh-debian.sh - run a command in a clean clone of this repository inside
# a bare Debian (minbase plus git, make and ca-certificates: what a user
# needs to get the project), as root, the way a new user's machine is: no
# -dev package, no compiler, no Criterion. CI runs `make demo` so (.ci/run),
# so that a missing install step fails CI instead of a user.
#
#   tests/tools/fresh-debian.sh [--suite bookworm] [--keep] -- make demo
#
# The base system is made once with mmdebstrap (installed when missing) and
# cached in /var/cache/fresh-debian/SUITE.tar (about 100 s the first time,
# then seconds). The clone is of HEAD (commit first); ../shared, when it
# exists, is copied beside it (tests read ../shared/pve-api). The mounts and
# the root are removed on every exit, a failure's included. Prints how long
# it took; its exit status is the command's (2: this script failed).
# Needs root and Debian's archive.
set -u
suite=bookworm keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	--suite) suite=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--) shift; break ;;
	*) break ;;
	esac
done
die() {
	echo "fresh-debian.sh: $*" >&2
	exit 2
}
[ $# -gt 0 ] || die "usage: fresh-debian.sh [--suite S] [--keep] -- COMMAND..."
[ "$(id -u)" = 0 ] || die "needs root (chroot, mounts)"
top=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || die "not in a git checkout"
t0=$SECONDS
cache=/var/cache/fresh-debian
tar="$cache/$suite.tar"
mkdir -p "$cache" || die "cannot make $cache"
if [ ! -f "$tar" ]; then
	export DEBIAN_FRONTEND=noninteractive
	command -v mmdebstrap >/dev/null ||
		apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null 2>&1 &&
			apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null 2>&1; } ||
		die "cannot install mmdebstrap"
	# mmdebstrap picks the format by the name's ending: .tar makes a tarball
	part="$cache/$suite.part.tar"
	mmdebstrap --variant=minbase --include=ca-certificates,git,make "$suite" "$part" \
		>"$cache/$suite.log" 2>&1 && mv "$part" "$tar" ||
		{ rm -f "$part"; die "mmdebstrap $suite failed (its log: $cache/$suite.log)"; }
	echo "fresh-debian.sh: made $tar in $((SECONDS - t0)) s"
fi
root=$(mktemp -d -t fresh-debian.XXXXXX) || die "mktemp failed"
mounted=()
cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[i]}" 2>/dev/null
	done
	if [ "$keep" = 1 ]; then
		echo "fresh-debian.sh: kept $root" >&2
	else
		rm -rf --one-file-system "$root"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
tar -C "$root" -xf "$tar" || die "cannot unpack $tar"
git clone -q "$top" "$root/root/project" || die "cannot clone $top"
[ -d "$top/../shared" ] && cp -r "$top/../shared" "$root/root/shared"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
mnt() { # mnt TARGET ARGS...: mount, and remember it for cleanup
	local at=$root/$1
	shift
	mount "$@" "$at" && mounted+=("$at")
}
mnt proc -t proc proc && mnt sys --rbind /sys && mnt dev --bind /dev &&
	mnt dev/pts --bind /dev/pts || die "cannot mount /proc, /sys, /dev in $root"
cmd=$(printf '%q ' "$@")
rc=0
chroot "$root" /bin/bash -c "apt-get update -q >/dev/null 2>&1; cd /root/project && $cmd" || rc=$?
echo "fresh-debian.sh: '$*' exited $rc after $((SECONDS - t0)) s"
exit "$rc"
