#!/bin/sh
# run-tests.sh - run every Criterion suite and end-to-end script given on
# the command line. A suite fails on any failing test, and also on any
# sanitizer report in its output (LeakSanitizer runs after Criterion has
# recorded the result, so a leak alone would not fail it). Each line names
# the suite's kind, from its directory: unit (no service), integration
# (starts the simulator or an sshd, on loopback), simulator (the
# simulator's own suites), e2e (scripts). Prints one closing line: "N
# passed, N failed" with the count of each kind.
set -u
passed=0 failed=0 failures="" kinds=""
logdir=${TEST_LOGDIR:-build/san/test-logs}
mkdir -p "$logdir"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
for t in "$@"; do
	name=$(basename "$t")
	case "$t" in
	*/unit/*) kind=unit ;;
	*/integration/*) kind=integration ;;
	*/pvesim/*) kind=simulator ;;
	*) kind=e2e ;;
	esac
	kinds="$kinds $kind"
	log="$logdir/$name.log"
	case "$t" in
	*.sh) bash "$t" >"$log" 2>&1 ;;
	*) "$t" -j2 >"$log" 2>&1 ;;
	esac
	rc=$?
	if [ $rc -eq 0 ] && grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$log"; then
		echo "sanitizer report in $name" >>"$log"
		rc=1
	fi
	summary=$(grep -E '^\[====\] Synthesis' "$log" | tail -n 1)
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		echo "PASS $kind $name ${summary#\[====\] }"
	else
		failed=$((failed + 1))
		failures="$failures $name"
		echo "FAIL $kind $name ${summary#\[====\] }"
		# the failing tests and their assertions first: a sanitizer
		# report after them would push them out of the tail
		grep -E '^\[(FAIL|----)\]' "$log" | head -n 30 | sed 's/^/    /'
		tail -n 30 "$log" | sed 's/^/    /'
	fi
done
[ -n "$failures" ] && echo "failed suites:$failures"
count() { echo "$kinds" | tr ' ' '\n' | grep -cx "$1"; }
echo "$passed passed, $failed failed ($(count unit) unit, $(count integration) integration, $(count simulator) simulator, $(count e2e) e2e suites)"
[ "$failed" -eq 0 ]
