#!/bin/bash
# up.sh - benchmark of `pvagent up` against the simulator in real time
# (--time-scale 1), printing:
#   - HTTP requests per `up` of one guest, task requests excluded (target
#     at most 9); alone with --counts (make bench-counts);
#   - side by side in one run, a rollout of 20 guests, 4 at a time, each
#     clone task 2.5 s (ideal 12.5 s), by `pvagent up --parallel 4` and by
#     tests/bench/poller.py (the same API calls, the task status polled
#     every 1 s): wall time, x the ideal (pvagent's target at most 1.10),
#     HTTP requests (task requests apart), and the ratios pvagent/poller
#     (targets: wall at most 0.90, requests at most 1.0);
#   - requests per task second of a 60 s clone task (target at most 0.25).
source "$(dirname "$0")/../e2e/lib/sim.sh"
sim_start tests/bench/bench.json --time-scale 1 --cert-out "$E2E_DIR/cert.pem"
log=$E2E_DIR/requests.jsonl
T=tests/bench/bench.tmpl
rc=0
# task_reqs: the task status and log requests in the request log
task_reqs() {
	jq -s '[.[] | select(.path | test("/tasks/.*/(status|log)$"))] | length' "$log"
}

# 1. One guest, whole flow (clone, config, start, address).
pvagent -q up one -t $T >/dev/null || fail "up one failed"
reqs=$(jq -s '[.[] | select((.path | test("/tasks/.*/(status|log)$")) | not)] | length' "$log")
printf 'HTTP requests per up of one guest (task requests excluded): %d (target <= 9) %s\n' \
	"$reqs" "$([ "$reqs" -le 9 ] && echo ok || echo ABOVE TARGET)"
[ "$reqs" -le 9 ] || rc=1
[ "${1:-}" = --counts ] && exit $rc

# 2. The rollout, clone only (no start): pvagent, then the 1 s poller.
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
: >"$log"
t0=$(now)
pvagent -q up $(printf 'a%02d ' $(seq 1 20)) -t $T --parallel 4 --no-start >/dev/null ||
	fail "pvagent up of 20 guests failed"
t1=$(now)
a_all=$(jq -s length "$log") a_task=$(task_reqs)
: >"$log"
t2=$(now)
/usr/bin/python3 tests/bench/poller.py "$SIM_URL" "$SIM_TOKEN_ID" "$E2E_DIR/state/token.secret" \
	"$E2E_DIR/cert.pem" bench-base 4 $(printf 'p%02d ' $(seq 1 20)) || fail "poller failed"
t3=$(now)
p_all=$(jq -s length "$log") p_task=$(task_reqs)
awk -v a="$(secs "$t0" "$t1")" -v p="$(secs "$t2" "$t3")" \
	-v aa="$a_all" -v at="$a_task" -v pa="$p_all" -v pt="$p_task" 'BEGIN {
	ideal = 12.5; wr = a / p; rr = aa / pa
	printf "rollout of 20 guests, 4 at a time, 2.5 s clones (ideal %.1f s):\n", ideal
	printf "  %-22s %6.1f s wall, %.2f x ideal, %4d HTTP requests (%3d waiting on tasks, %.1f per task)\n", "pvagent up:", a, a / ideal, aa, at, at / 20
	printf "  %-22s %6.1f s wall, %.2f x ideal, %4d HTTP requests (%3d waiting on tasks, %.1f per task)\n", "1 s poller (proxmoxer):", p, p / ideal, pa, pt, pt / 20
	printf "  pvagent x ideal: %.3f (target <= 1.10) %s\n", a / ideal, a / ideal <= 1.10 ? "ok" : "ABOVE TARGET"
	printf "  wall pvagent/poller: %.3f (target <= 0.90) %s\n", wr, wr <= 0.90 ? "ok" : "ABOVE TARGET"
	printf "  requests pvagent/poller: %.3f (target <= 1.0) %s\n", rr, rr <= 1.0 ? "ok" : "ABOVE TARGET"
	exit (a / ideal <= 1.10 && wr <= 0.90 && rr <= 1.0) ? 0 : 1
}' || rc=1

# 3. One 60 s clone task: requests while waiting on it per task second.
: >"$log"
pvagent -q up big -t tests/bench/bench60.tmpl --no-start >/dev/null || fail "up of the 60 s clone failed"
n=$(task_reqs)
awk -v n="$n" 'BEGIN {
	r = n / 60
	printf "requests per task second of a 60 s clone: %.3f (%d requests; target <= 0.25) %s\n", r, n, r <= 0.25 ? "ok" : "ABOVE TARGET"
	exit r <= 0.25 ? 0 : 1
}' || rc=1
exit $rc
