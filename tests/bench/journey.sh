#!/bin/bash
# journey.sh - the journeys' baseline (no targets): a user's first day on
# the fresh LVM-thin model (tests/journey, make journey), once through
# pvagentd and once with --local, without a terminal; prints each
# journey's wall time and, per step, its seconds and the HTTP requests PVE
# got meanwhile (the simulator's request log: the command's own, the
# daemon's and the harness's few control reads), so later work can be
# compared with it. Needs root, as make journey does.
set -u
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
	echo "journeys: not run (they need root: the guests' sshds chroot)"
	exit 0
fi
runs="daemon-plain local-plain"
JOURNEY_MODELS=lvmthin JOURNEY_RUNS="$runs" bash tests/journey/run.sh >build/bench-journey.log 2>&1
rc=$?
tail -n 1 build/bench-journey.log
for r in $runs; do
	d=build/journey/lvmthin-$r
	printf 'journey lvmthin %s: %s\n' "$r" "$(tail -n 1 "$d.log" 2>/dev/null | sed 's/^[^:]*: //')"
done
printf '%-24s %6s %6s   %6s %6s\n' step "s:dmn" "s:loc" "rq:dmn" "rq:loc"
# the steps in the daemon journey's order, each with both journeys' figures
awk -F'\t' 'NR == FNR { s[$1] = $2; q[$1] = $3; order[++n] = $1; next }
	{ s2[$1] = $2; q2[$1] = $3 }
	END { for (i = 1; i <= n; i++) { k = order[i]
		printf "%-24s %5s %5s %5s %5s\n", k, s[k], (k in s2) ? s2[k] : "-", q[k], (k in q2) ? q2[k] : "-" } }' \
	build/journey/lvmthin-daemon-plain/steps.tsv build/journey/lvmthin-local-plain/steps.tsv 2>/dev/null |
	awk '{ printf "%-24s %6s %6s   %6s %6s\n", $1, $2, $3, $4, $5 }'
exit $rc
