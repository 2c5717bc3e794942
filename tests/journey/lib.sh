# lib.sh - sourced by journey.sh: one step of a journey as a person types
# it (with a timeout, on a pseudo-terminal or not), its verdict line, and
# the checks every step shares (exit code, outcome line, no sanitizer
# report). Set before sourcing: MODEL, MODE (daemon|local), TTY (pty|plain),
# OUT (this journey's log directory), PVAGENT (the installed binary).
STEP_N=0
STEP_SECS=
PASSED=0
FAILED=0
STEP_TIMEOUT=${STEP_TIMEOUT:-120}
mkdir -p "$OUT/steps"

# verdict STEP OK|FAIL [WHY]: one line on stdout, counted
verdict() {
	if [ "$2" = OK ]; then
		PASSED=$((PASSED + 1))
		echo "PASS $MODEL $MODE/$TTY $1${STEP_SECS:+ (${STEP_SECS}s)}"
	else
		FAILED=$((FAILED + 1))
		echo "FAIL $MODEL $MODE/$TTY $1${STEP_SECS:+ (${STEP_SECS}s)}: $3"
	fi
	STEP_SECS=
}

# excerpt FILE: its last lines on one line, for a FAIL verdict
excerpt() {
	tail -n 4 "$1" | tr '\n' '|' | cut -c1-400
}

# run_cmd FILE CMD...: CMD as a person runs it, its output (both streams) in
# FILE; on a pty through script(1), control sequences and CRs stripped into
# FILE and the raw text kept in FILE.tty. Always under a timeout: a hung
# command fails its step (exit 124) instead of the journey. Exit: CMD's.
run_cmd() {
	local out=$1 rc=0
	shift
	if [ "$TTY" = pty ]; then
		local cmd
		cmd=$(printf '%q ' "$@")
		timeout -k 5 "$STEP_TIMEOUT" script -qec "$cmd" /dev/null </dev/null >"$out.tty" 2>&1 ||
			rc=$?
		sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\r$//' -e 's/.*\r//' "$out.tty" >"$out"
	else
		timeout -k 5 "$STEP_TIMEOUT" "$@" </dev/null >"$out" 2>&1 || rc=$?
	fi
	return $rc
}

# pv [-v] ARGS...: pvagent as the journey's mode runs it (--local, or
# through pvagentd); -v on a pty only (the steps a person watches closely)
PV_ARGS=()
pv_args() {
	PV_ARGS=("$PVAGENT")
	[ "$MODE" = local ] && PV_ARGS+=(--local)
	if [ "${1:-}" = -v ]; then
		[ "$TTY" = pty ] && PV_ARGS+=(-v)
	fi
	return 0
}

# step NAME WANT REGEX [-v] -- ARGS...: run pvagent ARGS; PASS when it
# exits WANT (a number, "nz" for any failure, "any": judged after) and a line of its output
# matches the extended regex REGEX (empty: none needed), no sanitizer
# report. The output stays in $OUT/steps/NN-NAME.out (LAST_OUT).
LAST_OUT=
LAST_RC=0
step() {
	local name=$1 want=$2 re=$3 v=
	shift 3
	[ "$1" = -v ] && { v=-v; shift; }
	[ "$1" = -- ] && shift
	pv_args $v
	run_raw "$name" "$want" "$re" "${PV_ARGS[@]}" "$@"
}

# run_raw NAME WANT REGEX CMD...: as step, for any command
run_raw() {
	local name=$1 want=$2 re=$3
	shift 3
	STEP_N=$((STEP_N + 1))
	LAST_OUT=$(printf '%s/steps/%02d-%s.out' "$OUT" "$STEP_N" "$name")
	printf '$ %s\n' "$*" >"$LAST_OUT.cmd"
	LAST_RC=0
	local t0=$SECONDS reqlog=${E2E_DIR:-}/requests.jsonl r0=0
	[ -f "$reqlog" ] && r0=$(wc -l <"$reqlog")
	run_cmd "$LAST_OUT" "$@" || LAST_RC=$?
	STEP_SECS=$((SECONDS - t0))
	# the bench's baseline (make bench: tests/bench/journey.sh): each
	# step's seconds and the requests PVE got meanwhile
	[ -f "$reqlog" ] && printf '%s\t%s\t%s\n' "$name" "$STEP_SECS" \
		"$(($(wc -l <"$reqlog") - r0))" >>"$OUT/steps.tsv"
	local why=
	if [ "$LAST_RC" = 124 ] || [ "$LAST_RC" = 137 ]; then
		why="hung: no exit within ${STEP_TIMEOUT}s (timeout killed it)"
	elif [ "$want" = any ]; then
		:
	elif [ "$want" = nz ] && [ "$LAST_RC" = 0 ]; then
		why="exit 0, a failure expected"
	elif [ "$want" != nz ] && [ "$LAST_RC" != "$want" ]; then
		why="exit $LAST_RC, expected $want"
	fi
	if [ -n "$why" ]; then
		:
	elif [ -n "$re" ] && ! grep -qE -- "$re" "$LAST_OUT"; then
		why="no line matches /$re/"
	elif grep -qE 'Sanitizer|runtime error:' "$LAST_OUT"; then
		why="sanitizer report"
	fi
	if [ -z "$why" ]; then
		verdict "$name" OK
		return 0
	fi
	verdict "$name" FAIL "$why; output: $(excerpt "$LAST_OUT")"
	return 1
}

# check NAME WHY-IF-FALSE CONDITION...: a verdict on a shell condition
check() {
	local name=$1 why=$2
	shift 2
	if "$@"; then
		verdict "$name" OK
	else
		verdict "$name" FAIL "$why"
	fi
}

# poll_until DEADLINE-SECONDS CMD...: true once CMD is, false at the
# deadline (each try 0.1 s apart)
poll_until() {
	local end=$((SECONDS + $1))
	shift
	while [ $SECONDS -lt $end ]; do
		"$@" && return 0
		read -r -t 0.1 <> <(:) || true
	done
	"$@"
}
