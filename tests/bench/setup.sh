#!/bin/bash
# setup.sh - the HTTP requests `pvagent setup` and `pvagent doctor` send
# on the demo cluster (the simulator's request log counts them): a first
# setup, a second one that changes nothing, and doctor with the token
# setup made. Target: a few dozen at most each.
source "$(dirname "$0")/../e2e/lib/sim.sh"
sim_start tests/pvesim/scenarios/demo.json
log=$E2E_DIR/requests.jsonl
umask 077
printf 'demo-root-password\n' >"$E2E_DIR/pw"
mkdir -p "$E2E_DIR/setup"
cp "$E2E_DIR/state/id_ed25519" "$E2E_DIR/setup/id_ed25519"
conf=$E2E_DIR/setup/pvagent.conf
rc=0
count() { # count WHAT TARGET: the requests logged since the last count
	local n
	n=$(jq -s length "$log")
	printf 'HTTP requests of %s: %d (target <= %d) %s\n' "$1" "$n" "$2" \
		"$([ "$n" -le "$2" ] && echo ok || echo ABOVE TARGET)"
	[ "$n" -le "$2" ] || rc=1
	: >"$log"
}
: >"$log"
pvagent -c "$conf" setup "$SIM_URL" --password-file "$E2E_DIR/pw" \
	--fingerprint "$SIM_FINGERPRINT" >/dev/null || fail "setup failed"
count "pvagent setup (first run)" 30
pvagent -c "$conf" setup "$SIM_URL" --password-file "$E2E_DIR/pw" \
	--fingerprint "$SIM_FINGERPRINT" >/dev/null || fail "second setup failed"
count "pvagent setup (again, no change)" 30
pvagent -c "$conf" doctor >/dev/null || fail "doctor found something to fix"
count "pvagent doctor" 30
exit $rc
