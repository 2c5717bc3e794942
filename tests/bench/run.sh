#!/bin/sh
# run.sh - make bench: run every benchmark (build/rel/tests/bench/* and
# tests/bench/*.sh) against the release simulator and agent; print their
# figures; fail if one misses its target.
set -u
export PVESIM_BIN=${PVESIM_BIN:-tests/pvesim/pvesim}
rc=0
for b in build/rel/tests/bench/*; do
	[ -x "$b" ] || continue
	echo "== $(basename "$b")"
	"$b" || rc=1
done
for b in tests/bench/*.sh; do
	[ "$b" = tests/bench/run.sh ] && continue
	echo "== $(basename "$b" .sh)"
	bash "$b" || rc=1
done
exit $rc
