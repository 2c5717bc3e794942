#!/bin/bash
# demo.sh - `make demo`: the whole pvagent flow against the bundled PVE
# simulator, as a new user would see it. Also run by `make test` (with the
# sanitizer builds), so the demo keeps working.
source "$(dirname "$0")/lib/sim.sh"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() {
	printf '\033[1m$ pvagent %s\033[0m\n' "$*"
	pvagent "$@"
}

say "Starting the PVE simulator (demo scenario: 2 nodes, template VMs, one legacy IDE guest)"
sim_start tests/pvesim/scenarios/demo.json --time-scale 50
echo "simulator at $SIM_URL, certificate SHA-256 $SIM_FINGERPRINT"
echo "configuration: $PVAGENT_CONF (from conf/demo.conf)"

say "What is there"
run nodes
run list
run templates

@UP_DOWN@

bad=$(requests_failing_schema)
[ -z "$bad" ] || fail "requests refused by the simulator's schema check: $bad"
say "Done: every request pvagent sent passed the PVE API schema check ($(wc -l <"$E2E_DIR/requests.jsonl") requests)"
