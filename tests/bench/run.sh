#!/bin/sh
# run.sh - make bench: run every benchmark in build/rel/tests/bench against
# the release simulator; print their figures; fail if one misses its target.
set -u
export PVESIM_BIN=${PVESIM_BIN:-tests/pvesim/pvesim}
rc=0
for b in build/rel/tests/bench/*; do
	[ -x "$b" ] || continue
	echo "== $(basename "$b")"
	"$b" || rc=1
done
exit $rc
