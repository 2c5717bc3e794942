#!/bin/bash
# corpus.sh - benchmark of the real-config corpus (tests/realcfg, scenario
# realcfg.json: Proxmox's own test suites' configs): every config through
# show, virtio --dry-run and migrate --dry-run, the cluster through
# list --long and drain --dry-run; the number of configs and commands, the
# wall time, and the HTTP requests per command per config (task polling
# excluded). A dry run should stay within a few requests of show (target:
# at most SLACK more per config, besides the reads of a container's
# snapshots: no precondition says which volumes they hold, so migrate reads
# the list and each one's config as LXC/Migrate.pm phase1 does); more fails
# the bench, naming the config.
source "$(dirname "$0")/../e2e/lib/sim.sh"
SLACK=${CORPUS_SLACK:-6}
sim_start tests/realcfg/realcfg.json --time-scale 1000
log=$E2E_DIR/requests.jsonl
count() {
	jq -s '[.[] | select((.path | test("/tasks/.*/(status|log)$")) | not)] | length' "$log"
}
snapreads() {
	jq -s '[.[] | select(.path | test("/lxc/[0-9]+/snapshot"))] | length' "$log"
}
vmids=$(jq -r '.guests[].vmid' tests/realcfg/realcfg.json)
n=$(echo "$vmids" | wc -w)
per=$E2E_DIR/per-config.tsv
: >"$per"
start=$(date +%s.%N)
cmds=0
own=0 # the pvagent processes' own wall time (the counting apart)
timed() {
	local t0=$(date +%s%N) rc=0
	"$@" >/dev/null 2>&1 || rc=$?
	own=$((own + $(date +%s%N) - t0))
	return $rc
}
for v in $vmids; do
	row=$v
	for c in show virtio migrate; do
		: >"$log"
		case $c in
		show) timed pvagent -q show "$v" || fail "show $v failed" ;;
		virtio) timed pvagent -q virtio "$v" --dry-run || true ;;
		migrate) timed pvagent -q migrate "$v" pve2 --dry-run || true ;;
		esac
		row="$row	$(count)"
		cmds=$((cmds + 1))
	done
	row="$row	$(snapreads)"
	printf '%s\n' "$row" >>"$per"
done
: >"$log"
timed pvagent -q list --long || fail "list --long failed"
list=$(count)
: >"$log"
timed pvagent -q drain pve1 --dry-run || true # some fit nowhere: exit 1
drain=$(count)
cmds=$((cmds + 2))
wall=$(echo "$(date +%s.%N) - $start" | bc)
# mean and max per column, and the worst dry run above show
stats() { # column
	awk -F'\t' -v c="$1" '{s += $c; if ($c > m) {m = $c; at = $1}} END {printf "%.1f mean, %d max (VMID %s)", s / NR, m, at}' "$per"
}
printf 'corpus: %d configs, %d commands in %.1f s (the commands themselves: %.1f s)\n' "$n" "$cmds" \
	"$wall" "$(echo "$own / 1000000000" | bc -l)"
printf 'requests per config: show %s; virtio --dry-run %s; migrate --dry-run %s\n' \
	"$(stats 2)" "$(stats 3)" "$(stats 4)"
printf 'requests for the cluster: list --long %d (%.1f per config); drain --dry-run %d (%.1f per config)\n' \
	"$list" "$(echo "$list / $n" | bc -l)" "$drain" "$(echo "$drain / $n" | bc -l)"
printf 'container snapshot reads (migrate): %d requests for %d configs\n' \
	"$(awk -F'\t' '{s += $5} END {print s}' "$per")" "$(awk -F'\t' '$5 > 0' "$per" | wc -l)"
over=$(awk -F'\t' -v s="$SLACK" '$3 - $2 > s || $4 - $5 - $2 > s {printf "%s%s (show %d, virtio %d, migrate %d)", sep, $1, $2, $3, $4; sep = "; "}' "$per")
drain_over=$(echo "$drain / $n > $SLACK + $(awk -F'\t' '{s += $2} END {print s / NR}' "$per")" | bc -l)
printf 'dry runs within %d requests of show: %s\n' "$SLACK" \
	"$([ -z "$over" ] && [ "$drain_over" = 0 ] && echo ok || echo "ABOVE TARGET ${over:-drain}")"
[ -z "$over" ] && [ "$drain_over" = 0 ]
