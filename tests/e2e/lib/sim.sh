# sim.sh - sourced by the end-to-end scripts and the demo: start the PVE
# simulator on a random loopback port, write a pvagent configuration that
# points at it (URL, pinned fingerprint, token in a 0600 file), and stop
# it on exit. Binaries come from $PVESIM_BIN and $PVAGENT_BIN (make test
# sets the sanitizer builds; the demo uses the release ones).
set -eu
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$REPO"
PVESIM_BIN=${PVESIM_BIN:-$REPO/tests/pvesim/pvesim}
PVAGENT_BIN=${PVAGENT_BIN:-$REPO/pvagent}
E2E_DIR=$(mktemp -d /tmp/pvagent-e2e-XXXXXX)
SIM_PID=

sim_stop() {
	if [ -n "$SIM_PID" ]; then
		kill -TERM "$SIM_PID" 2>/dev/null || true
		wait "$SIM_PID" || { echo "simulator exited with status $?" >&2; cat "$E2E_DIR/sim.err" >&2; return 1; }
		SIM_PID=
		if grep -qE 'Sanitizer|runtime error:' "$E2E_DIR/sim.err"; then
			cat "$E2E_DIR/sim.err" >&2
			return 1
		fi
	fi
	return 0
}

sim_cleanup() {
	local rc=$?
	sim_stop || rc=1
	exec 3<&- 2>/dev/null || true
	rm -rf "$E2E_DIR"
	exit $rc
}
trap sim_cleanup EXIT

# sim_start SCENARIO [pvesim options...]
sim_start() {
	local scenario=$1
	shift
	mkfifo "$E2E_DIR/ready"
	"$PVESIM_BIN" --scenario "$scenario" --log "$E2E_DIR/requests.jsonl" "$@" \
		>"$E2E_DIR/ready" 2>"$E2E_DIR/sim.err" &
	SIM_PID=$!
	exec 3<"$E2E_DIR/ready"
	local line
	if ! read -r -t 30 line <&3; then
		echo "the simulator did not start:" >&2
		cat "$E2E_DIR/sim.err" >&2
		return 1
	fi
	SIM_URL=$(printf '%s' "$line" | jq -r .url)
	SIM_FINGERPRINT=$(printf '%s' "$line" | jq -r .fingerprint)
	SIM_TOKEN_ID=$(printf '%s' "$line" | jq -r .token_id)
	umask 077
	printf '%s\n' "$(printf '%s' "$line" | jq -r .token_secret)" >"$E2E_DIR/token.secret"
	umask 022
	mkdir -p "$E2E_DIR/state"
	mv "$E2E_DIR/token.secret" "$E2E_DIR/state/token.secret"
	ssh-keygen -q -t ed25519 -N '' -C pvagent-demo -f "$E2E_DIR/state/id_ed25519"
	sed -e "s|@URL@|$SIM_URL|" -e "s|@TOKEN_ID@|$SIM_TOKEN_ID|" \
		-e "s|@FINGERPRINT@|$SIM_FINGERPRINT|" -e "s|@STATE@|$E2E_DIR/state|g" \
		-e "s|@REPO@|$REPO|g" conf/demo.conf >"$E2E_DIR/pvagent.conf"
	export PVAGENT_CONF="$E2E_DIR/pvagent.conf"
}

# pvagent ARGS...: the agent under test
pvagent() {
	"$PVAGENT_BIN" "$@"
}

# requests_failing_schema: request-log lines answered 400 (schema) or 501
requests_failing_schema() {
	jq -c 'select(.status == 400 or .status == 501)' "$E2E_DIR/requests.jsonl"
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}
