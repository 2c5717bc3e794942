#!/bin/bash
# demo.sh - `make demo`: the whole pvagent flow against the bundled PVE
# simulator, as a new user would see it. Also run by `make test` (with the
# sanitizer builds), so the demo keeps working.
source "$(dirname "$0")/lib/sim.sh"

if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B= N=; fi
say() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
run() {
	printf '%s$ pvagent %s%s\n' "$B" "$*" "$N"
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

say "Provision a FreeBSD 14 and an Ubuntu 24.04 VM and an LXC container, two at a time"
run up web1 db1 -t freebsd-14 --parallel 2 --set cores=2
run up app1 -t ubuntu-24.04
run up ct1 -t ubuntu-24.04-ct
run list

say "Run up again: it converges (applies the difference) instead of making a second guest"
run up web1 -t freebsd-14 --set cores=4

say "Clean up"
run down db1
run down app1
run down ct1 --purge
run down web1
run down web1
run list

bad=$(requests_failing_schema)
[ -z "$bad" ] || fail "requests refused by the simulator's schema check: $bad"
say "Done: every request pvagent sent passed the PVE API schema check ($(wc -l <"$E2E_DIR/requests.jsonl") requests)"
