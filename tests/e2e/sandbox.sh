#!/bin/bash
# sandbox.sh (test) - `make sandbox` as a new user meets it: the export line
# (and, as root, the legacy guests' SSH addresses), then nodes, up with
# guest files written over SSH, migrate, drain --dry-run; doctor all well
# (exit 0: the nodes' clocks are this host's); templates marking what the
# cluster can provision (HERE), image build of debian-13 from the
# sandbox's loopback mirror with no --url or --checksum, after which its
# template is ready, up from it with an address of [pool "lan"], up --pool
# lan; sandbox-stop leaves no process and no directory behind, and no
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
if [ "$(id -u)" = 0 ]; then
	grep -qE '^  fbsd9-legacy  127\.0\.1\.90  ' <<<"$out" ||
		fail "the banner does not give fbsd9-legacy's SSH address"
fi
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
rc=0
"$PVAGENT_BIN" doctor >"$SANDBOX_DIR.doctor" || rc=$?
[ "$rc" = 0 ] || { cat "$SANDBOX_DIR.doctor"; fail "doctor exited $rc on the sandbox's cluster"; }
grep -qE '^ok +clock ' "$SANDBOX_DIR.doctor" ||
	fail "doctor does not find pve1's clock on this host's: $(grep clock "$SANDBOX_DIR.doctor")"
# templates: what the cluster can provision now (one request), in 80 columns
here() { # here TEMPLATE: its HERE word (--json)
	"$PVAGENT_BIN" --json templates | jq -r --arg t "$1" '.templates[] | select(.name == $t) | .here'
}
COLUMNS=80 "$PVAGENT_BIN" templates | tee "$SANDBOX_DIR.templates"
grep -qE '^debian-13 +qemu +debian 13 +build ' "$SANDBOX_DIR.templates" &&
	grep -qE '^freebsd-14 +qemu +freebsd 14\.1 +ready ' "$SANDBOX_DIR.templates" &&
	grep -qE '^[0-9]+ of [0-9]+ can be provisioned on this cluster now' "$SANDBOX_DIR.templates" ||
	fail "templates does not mark what the cluster can provision"
awk 'length > 80 { exit 1 }' "$SANDBOX_DIR.templates" || fail "templates is wider than 80 columns"
# the image from the sandbox's mirror: no --url, no --checksum, no internet
"$PVAGENT_BIN" image build debian-13 | tee "$SANDBOX_DIR.image"
grep -q '^image debian-13: template VM debian-13-image (VMID [0-9]*) on pve1$' "$SANDBOX_DIR.image" ||
	fail "image build debian-13 did not make its template VM"
[ "$(here debian-13)" = ready ] || fail "after its build, debian-13 is $(here debian-13), not ready"
# up from it takes the first address of [pool "lan"] ([guest] pool = lan)
"$PVAGENT_BIN" up deb1 -t debian-13 --no-inject | tee "$SANDBOX_DIR.deb1"
grep -qE '^deb1 +[0-9]+ +pve1 +127\.0\.3\.10 +created ' "$SANDBOX_DIR.deb1" ||
	fail "up -t debian-13 did not take 127.0.3.10 from pool lan"
"$PVAGENT_BIN" up app1 -t ubuntu-24.04 --pool lan --no-inject | tee "$SANDBOX_DIR.app1"
grep -qE '^app1 +[0-9]+ +pve1 +127\.0\.3\.11 +created ' "$SANDBOX_DIR.app1" ||
	fail "up --pool lan did not take 127.0.3.11"
bash tests/sandbox/sandbox.sh stop
[ ! -e "$SANDBOX_DIR" ] || fail "sandbox-stop left $SANDBOX_DIR"
left=$(pgrep -f "$SANDBOX_DIR" || true)
[ -z "$left" ] || fail "sandbox-stop left processes: $left"
echo "sandbox: ok"
