#!/bin/bash
# run.sh - `make journey`: every cluster model's journey (journey.sh) with
# the installed programs, in parallel. Builds the sanitizer tree with
# PREFIX=build/journey/root/usr (the paths pvagent and pvagentd carry: the
# CLI pvagentd runs, the shipped templates' directory) and installs it
# there with the Makefile's own install rule (make -C a staging directory
# whose pvagent and pvagentd are the sanitizer builds), then runs each
# model's journeys on their own 127.0.N. Logs in
# build/journey/MODEL-MODE-TTY/ (steps/NN-STEP.out: each command's output).
# Each model runs through pvagentd and with --local, on a pseudo-terminal
# and without, in two journeys: daemon-pty with local-plain, or
# daemon-plain with local-pty, the models taking the two pairs in turn, so
# that every model covers each axis and the models together every
# combination (the four on every model: JOURNEY_RUNS=all).
#   JOURNEY_MODELS  the models (default: every scenarios/journey-*.json)
#   JOURNEY_RUNS    which MODE-TTY for every model (default: the pairs
#                   above; all: daemon-pty daemon-plain local-pty
#                   local-plain)
#   JOURNEY_JOBS    journeys at once (default 10: all of the pairs)
# Prints each step's PASS/FAIL line, then "N passed, N failed" and the wall
# time; exit 1 on any failure.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
[ "$(id -u)" = 0 ] || { echo "journey: needs root (the guests' sshds chroot)" >&2; exit 1; }
# besides make deps-test's: the simulator's control routes (curl), the
# image file (python3), the pseudo-terminal (script) and the step timeout
for c in curl python3 script timeout; do
	command -v "$c" >/dev/null || { echo "journey: needs $c (apt-get install curl python3 bsdutils coreutils)" >&2; exit 1; }
done
B=$REPO/build/journey
ROOT=$B/root
t0=$SECONDS
mkdir -p "$REPO/build" || exit 1
make --no-print-directory -j2 PREFIX="$ROOT/usr" build/san/pvagent build/san/pvagentd \
	build/san/pvesim build/san/guestd >"$B.build.log" 2>&1 ||
	{ tail -20 "$B.build.log"; echo "journey: build failed"; exit 1; }
rm -rf "$B" && mkdir -p "$B/stage" "$B/bin"
# the journeys run from a copy (bash reads a script as it goes: an edit
# during a run must not change it)
cp tests/journey/journey.sh tests/journey/lib.sh "$B/bin/"
export JOURNEY_REPO=$REPO
for f in pvagent pvagentd; do ln -s "$REPO/build/san/$f" "$B/stage/$f"; done
ln -s "$REPO/conf" "$B/stage/conf"
ln -s "$REPO/templates" "$B/stage/templates"
make --no-print-directory -C "$B/stage" -f "$REPO/Makefile" install INSTALL_DEPS= \
	PREFIX="$ROOT/usr" SYSCONFDIR="$ROOT/etc" >"$B/install.log" 2>&1 ||
	{ cat "$B/install.log"; echo "journey: make install failed"; exit 1; }
# the daemon's socket group (the unit's [daemon] socket_group)
export JOURNEY_GROUP=pvagent-journey
made_group=
if ! getent group "$JOURNEY_GROUP" >/dev/null; then
	groupadd --system "$JOURNEY_GROUP" || exit 1
	made_group=yes
fi
trap '[ -z "$made_group" ] || groupdel "$JOURNEY_GROUP"' EXIT

models=${JOURNEY_MODELS:-$(ls tests/pvesim/scenarios/journey-*.json | sed 's|.*/journey-\(.*\)\.json|\1|')}
runs=${JOURNEY_RUNS:-}
[ "$runs" = all ] && runs="daemon-pty daemon-plain local-pty local-plain"
pairs=("daemon-pty local-plain" "daemon-plain local-pty")
n=44 # 127.0.44.0 onwards: no other suite uses these
i=0
for m in $models; do
	for r in ${runs:-${pairs[$((i % 2))]}}; do
		while [ "$(jobs -rp | wc -l)" -ge "${JOURNEY_JOBS:-10}" ]; do wait -n; done
		(
			s=$SECONDS
			bash "$B/bin/journey.sh" "$m" "${r%-*}" "${r#*-}" "127.0.$n" "$B/$m-$r"
			echo "$m $r: $((SECONDS - s)) s"
		) >"$B/$m-$r.log" 2>&1 &
		n=$((n + 1))
	done
	i=$((i + 1))
done
wait
cat "$B"/*-*.log | grep -E '^(PASS|FAIL) ' | sort -k2,3 -s
p=$(cat "$B"/*-*.log | grep -c '^PASS ')
f=$(cat "$B"/*-*.log | grep -c '^FAIL ')
# a journey that ended without its summary line died: count it
for l in "$B"/*-*.log; do
	grep -qE '^[^ ]+ [^ ]+: [0-9]+ passed, [0-9]+ failed$' "$l" ||
		{ echo "FAIL $(basename "$l" .log) ended early: $(tail -3 "$l" | tr '\n' '|')"; f=$((f + 1)); }
done
grep -h -E '^[^ ]+ [^ ]+: [0-9]+ s$' "$B"/*-*.log | sed 's/^/wall time: /'
echo "$p passed, $f failed ($((SECONDS - t0)) s wall time; logs in $B)"
[ "$f" = 0 ]
