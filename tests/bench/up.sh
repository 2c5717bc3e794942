#!/bin/bash
# up.sh - benchmark of `pvagent up` against the simulator in real time
# (--time-scale 1), printing:
#   - HTTP requests per `up` of one guest, task status polls excluded
#     (target at most 10);
#   - task status polls per second of task time;
#   - the wall time of `up` of 50 guests with --parallel 4 when each clone
#     takes 2 s, as a ratio to the ideal 25 s (target at most 1.10).
source "$(dirname "$0")/../e2e/lib/sim.sh"
sim_start tests/bench/bench.json --time-scale 1
log=$E2E_DIR/requests.jsonl
T=tests/bench/bench.tmpl
rc=0

# 1. One guest, whole flow (clone, config, start, address).
pvagent -q up one -t $T >/dev/null || fail "up one failed"
reqs=$(jq -s '[.[] | select((.path | test("/tasks/.*/(status|log)$")) | not)] | length' "$log")
polls1=$(jq -s '[.[] | select(.path | test("/tasks/.*/status$"))] | length' "$log")
printf 'HTTP requests per up of one guest (task polls excluded): %d (target <= 10) %s\n' \
	"$reqs" "$([ "$reqs" -le 10 ] && echo ok || echo ABOVE TARGET)"
[ "$reqs" -le 10 ] || rc=1
: >"$log"

# 2 and 3. Fifty guests, four at a time, clone only (no start).
names=$(printf 'g%02d ' $(seq 1 50))
t0=$(date +%s.%N)
pvagent -q up $names -t $T --parallel 4 --no-start >/dev/null || fail "up of 50 guests failed"
t1=$(date +%s.%N)
polls=$(jq -s '[.[] | select(.path | test("/tasks/.*/status$"))] | length' "$log")
# Each clone task takes 2.0 s (see bench.tmpl).
awk -v t0="$t0" -v t1="$t1" -v polls="$polls" 'BEGIN {
	wall = t1 - t0; ratio = wall / 25; tasksecs = 50 * 2
	printf "task status polls per task second: %.2f (%d polls over %d s of clone tasks)\n", polls / tasksecs, polls, tasksecs
	printf "up of 50 guests, --parallel 4, 2 s clones: %.1f s wall, %.3f x the ideal 25 s (target <= 1.10) %s\n", wall, ratio, ratio <= 1.10 ? "ok" : "ABOVE TARGET"
	exit ratio <= 1.10 ? 0 : 1
}' || rc=1
exit $rc
