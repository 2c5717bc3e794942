#!/bin/sh
# deps.sh - check the dependencies one purpose of pvagent's build needs
# (make demo, test, bench, lint, fuzz: the Makefile's deps-* targets):
# Debian packages, commands, pkg-config modules and modules of Debian's
# /usr/bin/python3. With --check only report; otherwise, as root on Debian,
# say which packages it installs, then install them with apt-get, else print
# the exact apt-get line and fail. openssh-server is wanted for its sshd
# binary only (the tests' and the demo's private sshd on loopback): when this
# script installs it, the system's ssh service is not started, and is left
# disabled.
#   deps.sh [--check] "DEB PACKAGES" "COMMANDS" "PKG-CONFIG MODULES" ["PYTHON MODULES"]
set -u
check_only=0
if [ "${1:-}" = "--check" ]; then check_only=1; shift; fi
debs=$1 cmds=$2 mods=$3 pymods=${4:-}

# Debian packages of the list that are not installed (none without dpkg).
missing_debs() {
	command -v dpkg-query >/dev/null 2>&1 || return 0
	for p in $debs; do
		dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || printf ' %s' "$p"
	done
}

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
todo=$(missing_debs)
[ -z "$miss" ] && [ -z "$todo" ] && exit 0
[ -n "$todo" ] || todo=" $debs"
line="apt-get install -y --no-install-recommends$todo"
if [ "$check_only" = 1 ]; then
	echo "missing dependencies:$miss${todo:+ (packages:$todo)}" >&2
	echo "run 'make deps' (as root on Debian) to install them" >&2
	exit 1
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "deps: installing Debian packages:$todo"
	new_sshd=0
	case " $todo " in *" openssh-server "*) [ -x /usr/sbin/sshd ] || new_sshd=1 ;; esac
	# policy-rc.d (Debian's hook for invoke-rc.d and deb-systemd-invoke)
	# keeps a newly installed sshd from starting; ours exists only for the
	# install, and an administrator's own is left as it is.
	policy=/usr/sbin/policy-rc.d
	own_policy=0
	if [ "$new_sshd" = 1 ] && [ ! -e "$policy" ]; then
		printf '#!/bin/sh\n# pvagent deps.sh: no service starts during its install\nexit 101\n' >"$policy" &&
			chmod 0755 "$policy" && own_policy=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	rc=0
	apt-get update -q >/dev/null || { echo "deps: apt-get update failed" >&2; rc=1; }
	if [ "$rc" = 0 ]; then
		# shellcheck disable=SC2086
		apt-get install -y -q --no-install-recommends $todo >/dev/null ||
			{ echo "deps: '$line' failed" >&2; rc=1; }
	fi
	[ "$own_policy" = 1 ] && rm -f "$policy"
	if [ "$new_sshd" = 1 ] && [ -x /usr/sbin/sshd ] && command -v systemctl >/dev/null 2>&1; then
		systemctl disable --quiet ssh.service ssh.socket >/dev/null 2>&1 || true
		echo "deps: openssh-server was installed for its sshd binary only; the system's ssh" \
			"service is not running and stays disabled ('systemctl enable --now ssh' starts it)"
	fi
	[ "$rc" = 0 ] || exit 1
	miss=$(missing)
	todo=$(missing_debs)
	[ -z "$miss" ] && [ -z "$todo" ] && exit 0
	echo "deps: still missing after install:$miss$todo" >&2
	exit 1
fi
echo "missing dependencies:$miss" >&2
echo "install them as root with:" >&2
echo "  $line" >&2
exit 1
