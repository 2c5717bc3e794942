#!/bin/sh
# tests/lab/run.sh - make lab's runner: the lab image (built, or found in its cache), the lab
# suites given, the figures they printed (boot and conversion times: printed, not asserted),
# then run-tests.sh's closing "N passed, N failed" line.
set -u
logdir=${TEST_LOGDIR:-build/san/lab-logs}
export TEST_LOGDIR="$logdir"
dir=$(bash tests/lab/image.sh | tail -n 1) && [ -f "$dir/build.txt" ] || {
	echo "lab image: not built"
	echo "0 passed, $# failed"
	exit 1
}
echo "lab image: $dir: $(cat "$dir/build.txt")"
export LAB_IMAGE_DIR="$dir"
out=$(sh tests/run-tests.sh "$@")
rc=$?
printf '%s\n' "$out" | sed '$d'
for t in "$@"; do
	grep -h '^lab: ' "$logdir/$(basename "$t").log" 2>/dev/null
done
printf '%s\n' "$out" | tail -n 1
exit $rc
