#!/bin/sh
# run.sh - the make fuzz campaign: each target's libFuzzer binary in turn
# (one process at a time), SECONDS each, over its checked-in corpus and
# regression inputs; new inputs go to FUZZDIR/corpus/T, findings (crashes,
# broken properties, leaks, timeouts) to FUZZDIR/findings/T. Prints one
# line per target and exits 1 if anything was found.
#   run.sh FUZZDIR SECONDS TARGET...
set -u
export LC_ALL=C
fuzzdir=$1 secs=$2
shift 2
# input files of the targets that read a path (a crash leaves its own here)
export TMPDIR="$fuzzdir/tmp"
mkdir -p "$TMPDIR"
export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
# final_stat NAME: libFuzzer's -print_final_stats figure in $log
final_stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -n 1; }
printf '%-14s %10s %8s %6s %6s %6s %8s\n' target execs exec/s cov ft corpus findings
total=0
for t in "$@"; do
	work=$fuzzdir/corpus/$t found=$fuzzdir/findings/$t log=$fuzzdir/log/$t.log
	mkdir -p "$work" "$found" "$fuzzdir/log"
	before=$(find "$found" -type f | wc -l)
	dirs="$work tests/fuzz/corpus/$t"
	[ -d "tests/fuzz/regress/$t" ] && dirs="$dirs tests/fuzz/regress/$t"
	# shellcheck disable=SC2086
	"$fuzzdir/bin/$t" -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$found/" $dirs >"$log" 2>&1
	rc=$?
	if grep -aq '^fuzz: cannot run:' "$log"; then # e.g. no PVE schema files
		printf '%-14s skipped: %s\n' "$t" "$(sed -n 's/^fuzz: cannot run: //p' "$log" | head -n 1)"
		continue
	fi
	last=$(grep -aE '^#[0-9]+.*ft: ' "$log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
	new=$(( $(find "$found" -type f | wc -l) - before ))
	[ "$rc" -ne 0 ] && [ "$new" -eq 0 ] && new=1 # stopped without an artifact
	total=$((total + new))
	printf '%-14s %10s %8s %6s %6s %6s %8s\n' "$t" "$(final_stat number_of_executed_units)" \
		"$(final_stat average_exec_per_sec)" "${cov:--}" "${ft:--}" "${corp:--}" "$new"
	if [ "$new" -gt 0 ]; then
		grep -aE '^(fuzz: |SUMMARY: |==[0-9]+==ERROR)' "$log" | head -n 3 | sed 's/^/    /'
		# shellcheck disable=SC2012 # artifact names are hex digests
		ls -t "$found" | head -n "$new" | sed "s|^|    $found/|"
		echo "    log: $log"
	fi
done
echo "findings: $total"
[ "$total" -eq 0 ]
