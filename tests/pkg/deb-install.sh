#!/bin/bash
# deb-install.sh - the Debian package as a user meets it (CI, as root, on
# a throwaway Debian 12): build it (make deb: dpkg-buildpackage and
# lintian), install it with dpkg -i, check that every file is where the
# unit and the man pages say, configure it against the PVE simulator on
# loopback, start pvagentd as the unit starts it (--check, then -f) and
# ask it with the installed pvagent and, under the unit's directory modes,
# as a member of the socket group, stop it with SIGTERM, purge the
# package and check that nothing is left. Refuses to run where pvagent is
# installed or configured already. Prints "deb-install: ok" at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "deb-install: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (dpkg -i)"
! dpkg -s pvagent >/dev/null 2>&1 || fail "pvagent is installed already; not touching it"
[ ! -e /etc/pvagent/pvagent.conf ] || fail "/etc/pvagent/pvagent.conf exists; not touching it"

tools="debhelper lintian dpkg-dev fakeroot"
missing=$(for p in $tools; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
	apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends $missing
fi
t0=$(date +%s)
make deb
deb=$(ls build/deb/pvagent_*_*.deb)
echo "built $deb ($(du -k "$deb" | cut -f1) KiB) in $(( $(date +%s) - t0 )) s"

work=$(mktemp -d /tmp/pvagent-deb-XXXXXX)
sim_pid= daemon_pid= member=pvagent-deb-member
cleanup() {
	local rc=$?
	userdel "$member" 2>/dev/null
	groupdel "$member" 2>/dev/null
	[ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null
	[ -n "$sim_pid" ] && kill -TERM "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
	rm -f /etc/pvagent/pvagent.conf /etc/pvagent/token.secret
	dpkg --purge pvagent >/dev/null 2>&1 || true
	rm -rf "$work"
	exit $rc
}
trap cleanup EXIT

dpkg -i "$deb" || fail "dpkg -i exited $?"
for f in /usr/bin/pvagent /usr/sbin/pvagentd /lib/systemd/system/pvagentd.service \
	/usr/share/man/man1/pvagent.1.gz /usr/share/man/man5/pvagent.conf.5.gz \
	/usr/share/man/man8/pvagentd.8.gz /usr/share/pvagent/templates/ubuntu-24.04.tmpl \
	/usr/share/bash-completion/completions/pvagent /etc/pvagent/pvagent.conf.example; do
	[ -e "$f" ] || fail "not installed: $f"
done
grep -q '^ExecStart=/usr/sbin/pvagentd -f' /lib/systemd/system/pvagentd.service ||
	fail "the unit does not start /usr/sbin/pvagentd"
/usr/bin/pvagent --version | grep -q "$(sed -n '1s/.*(\(.*\)-.*).*/\1/p' conf/debian/changelog)" ||
	fail "pvagent --version does not say the package's version"

# a PVE to talk to: the simulator from the tree (release build)
make tests/pvesim/pvesim >/dev/null
mkfifo "$work/ready"
tests/pvesim/pvesim --scenario tests/pvesim/scenarios/demo.json --listen 127.0.0.1:0 \
	>"$work/ready" 2>"$work/sim.err" &
sim_pid=$!
exec 3<"$work/ready"
read -r -t 30 line <&3 || { cat "$work/sim.err" >&2; fail "the simulator did not start"; }
url=$(jq -r .url <<<"$line")
fp=$(jq -r .fingerprint <<<"$line")
install -d -m 0755 /etc/pvagent
install -m 0600 /dev/null /etc/pvagent/token.secret
jq -r .token_secret <<<"$line" >/etc/pvagent/token.secret
cat >/etc/pvagent/pvagent.conf <<CONF
[pve]
url = $url
token_id = $(jq -r .token_id <<<"$line")
token_secret_file = /etc/pvagent/token.secret
fingerprint = $fp
[daemon]
socket_group = $member
CONF
chmod 0600 /etc/pvagent/pvagent.conf

# as the unit runs it: --check, then the daemon with its runtime and
# state directories
/usr/sbin/pvagentd --check -c /etc/pvagent/pvagent.conf || fail "pvagentd --check exited $?"
unit=/lib/systemd/system/pvagentd.service
grep -q '^LimitNOFILE=' $unit || fail "the unit sets no LimitNOFILE"
run_mode=$(sed -n 's/^RuntimeDirectoryMode=//p' $unit)
state_mode=$(sed -n 's/^StateDirectoryMode=//p' $unit)
[ -n "$run_mode" ] && [ -n "$state_mode" ] || fail "the unit names no directory modes"
install -d -m "$run_mode" /run/pvagent
install -d -m "$state_mode" /var/lib/pvagent
# a member of the socket group (not root, not the daemon's user)
groupadd --system "$member" || fail "groupadd exited $?"
useradd --system --no-create-home --shell /usr/sbin/nologin -g nogroup -G "$member" "$member" ||
	fail "useradd exited $?"
/usr/sbin/pvagentd -f -c /etc/pvagent/pvagent.conf 2>"$work/daemon.err" &
daemon_pid=$!
for _ in $(seq 100); do
	[ -S /run/pvagent/pvagentd.sock ] && break
	kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/daemon.err" >&2; fail "pvagentd exited"; }
	read -r -t 0.1 <&3 || true # 0.1 s for the socket to appear, never for a result
done
[ -S /run/pvagent/pvagentd.sock ] || fail "no control socket at /run/pvagent/pvagentd.sock"
st=$(/usr/bin/pvagent -c /etc/pvagent/pvagent.conf --json status) || fail "pvagent status: exit $?"
[ "$(jq -r .daemon.pid <<<"$st")" = "$daemon_pid" ] || fail "status names another pid: $st"
/usr/bin/pvagent -c /etc/pvagent/pvagent.conf nodes | grep -q '^pve1 ' || fail "pvagent nodes"
# the member connects through the shipped modes (/run/pvagent, the socket)
# and is answered; nobody else is
member_status() {
	setpriv --reuid="$1" --regid=nogroup --init-groups /usr/bin/python3 -c '
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("/run/pvagent/pvagentd.sock")
except OSError as e:
    print("connect:", e.strerror); sys.exit(0)
s.sendall(b"{\"id\":1,\"op\":\"status\"}\n")
print(json.loads(s.makefile().readline()).get("ok"))'
}
[ "$(member_status "$member")" = True ] || fail "a member of the socket group is not answered"
[ "$(member_status nobody)" != True ] || fail "nobody (not in the group) is answered"
/usr/bin/pvagent -c /etc/pvagent/pvagent.conf templates | grep -q '^ubuntu-24.04 ' ||
	fail "the installed templates (/usr/share/pvagent/templates) are not found"
kill -TERM "$daemon_pid"
rc=0
wait "$daemon_pid" || rc=$?
daemon_pid=
[ $rc = 0 ] || { cat "$work/daemon.err" >&2; fail "pvagentd exited $rc on SIGTERM"; }

rm -f /etc/pvagent/pvagent.conf /etc/pvagent/token.secret
dpkg --purge pvagent || fail "dpkg --purge exited $?"
for f in /usr/bin/pvagent /usr/sbin/pvagentd /lib/systemd/system/pvagentd.service \
	/usr/share/pvagent /etc/pvagent; do
	[ ! -e "$f" ] || fail "left after purge: $f"
done
echo "deb-install: ok"
