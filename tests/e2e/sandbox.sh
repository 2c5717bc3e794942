#!/bin/bash
# sandbox.sh (test) - `make sandbox` as a new user meets it: the export line,
# then nodes, up with guest files written over SSH, migrate, drain
# --dry-run; sandbox-stop leaves no process and no directory behind, and no
# sanitizer report (make test runs it with the sanitizer builds).
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
export SANDBOX_DIR
SANDBOX_DIR=$(mktemp -d /tmp/pvagent-sandbox-XXXXXX)/sb
PVAGENT_BIN=${PVAGENT_BIN:-$REPO/pvagent}
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
cleanup() {
	bash tests/sandbox/sandbox.sh stop >/dev/null 2>&1 || true
	rm -rf "$(dirname "$SANDBOX_DIR")"
}
trap cleanup EXIT

out=$(bash tests/sandbox/sandbox.sh start)
echo "$out"
line=$(head -n 1 <<<"$out")
[[ "$line" == "export PVAGENT_CONF=$SANDBOX_DIR/pvagent.conf" ]] || fail "first line: $line"
eval "$line"
"$PVAGENT_BIN" nodes | tee "$SANDBOX_DIR.nodes"
grep -q '^pve2 ' "$SANDBOX_DIR.nodes" || fail "nodes does not list pve2"
if [ "$(id -u)" = 0 ]; then
	"$PVAGENT_BIN" up web1 -t freebsd-14 | tee "$SANDBOX_DIR.up"
	grep -qE 'web1: inject .* changed: FreeBSD 14.*/etc/rc.conf' "$SANDBOX_DIR.up" ||
		fail "up did not write web1's files over SSH"
	grep -qE '^web1 +100 +pve1 +127\.0\.2\.[0-9]+ +created ' "$SANDBOX_DIR.up" ||
		fail "up did not create web1 at a spare guest's address"
	"$PVAGENT_BIN" inject web1 -t freebsd-14 | tee "$SANDBOX_DIR.inject"
	grep -q 'nothing to change' "$SANDBOX_DIR.inject" || fail "a second inject changed web1"
else
	"$PVAGENT_BIN" up web1 -t freebsd-14 --no-inject
fi
"$PVAGENT_BIN" migrate web1 pve2 | tee "$SANDBOX_DIR.migrate"
grep -q '^web1: migrated to pve2 (online)' "$SANDBOX_DIR.migrate" || fail "migrate did not move web1"
"$PVAGENT_BIN" drain pve2 --dry-run | tee "$SANDBOX_DIR.drain"
grep -qE '^web1 .* pve1 ' "$SANDBOX_DIR.drain" || fail "drain --dry-run does not plan web1 to pve1"
bash tests/sandbox/sandbox.sh stop
[ ! -e "$SANDBOX_DIR" ] || fail "sandbox-stop left $SANDBOX_DIR"
left=$(pgrep -f "$SANDBOX_DIR" || true)
[ -z "$left" ] || fail "sandbox-stop left processes: $left"
echo "sandbox: ok"
