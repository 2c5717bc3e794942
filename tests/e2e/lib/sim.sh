# sim.sh - sourced by the end-to-end scripts and the demo: start the PVE
# simulator on a random loopback port, write a pvagent configuration that
# points at it (URL, pinned fingerprint, token in a 0600 file), optionally
# start a fixture guest behind a real sshd first (guestd_start, needs
# root), and stop everything on exit, failing on a sanitizer report of any
# of them. Binaries come from $PVESIM_BIN, $PVAGENT_BIN and $GUESTD_BIN
# (make test sets the sanitizer builds; the demo uses the release ones).
set -eu
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$REPO"
PVESIM_BIN=${PVESIM_BIN:-$REPO/tests/pvesim/pvesim}
PVAGENT_BIN=${PVAGENT_BIN:-$REPO/pvagent}
GUESTD_BIN=${GUESTD_BIN:-$REPO/tests/guests/guestd}
E2E_DIR=$(mktemp -d /tmp/pvagent-e2e-XXXXXX)
SIM_PID=
GUESTD_PID=
GUEST_PORT=

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

# guestd_stop: SIGTERM, and fail on a bad exit or a sanitizer report.
guestd_stop() {
	if [ -n "$GUESTD_PID" ]; then
		kill -TERM "$GUESTD_PID" 2>/dev/null || true
		wait "$GUESTD_PID" || { echo "guestd exited with status $?" >&2; cat "$E2E_DIR/guestd.err" >&2; return 1; }
		GUESTD_PID=
		if grep -qE 'Sanitizer|runtime error:' "$E2E_DIR/guestd.err"; then
			cat "$E2E_DIR/guestd.err" >&2
			return 1
		fi
	fi
	return 0
}

sim_cleanup() {
	local rc=$?
	sim_stop || rc=1
	guestd_stop || rc=1
	exec 3<&- 4<&- 2>/dev/null || true
	rm -rf "$E2E_DIR"
	exit $rc
}
trap sim_cleanup EXIT

# The agent's state directory and SSH key (made once).
state_init() {
	[ -e "$E2E_DIR/state/id_ed25519" ] && return 0
	mkdir -p "$E2E_DIR/state"
	ssh-keygen -q -t ed25519 -N '' -C pvagent-demo -f "$E2E_DIR/state/id_ed25519"
}

# guestd_start FIXTURE ADDR [guestd options...]: a fixture guest behind a
# real sshd that authorizes the agent's key and follows the simulator's
# boot file; start it before the simulator and pass it
# --guest-root VMID=$GUEST_ROOT. Sets GUEST_ROOT, GUEST_PORT and
# GUEST_KNOWN_HOSTS; the agent's known_hosts gets the guest's host key.
guestd_start() {
	local fixture=$1 addr=$2
	shift 2
	state_init
	mkfifo "$E2E_DIR/guestd.ready"
	"$GUESTD_BIN" --fixture "$fixture" --addr "$addr" \
		--authorize "$E2E_DIR/state/id_ed25519.pub" "$@" \
		>"$E2E_DIR/guestd.ready" 2>"$E2E_DIR/guestd.err" &
	GUESTD_PID=$!
	exec 4<"$E2E_DIR/guestd.ready"
	local line
	if ! read -r -t 30 line <&4; then
		echo "guestd did not start:" >&2
		cat "$E2E_DIR/guestd.err" >&2
		return 1
	fi
	GUEST_ROOT=$(printf '%s' "$line" | jq -r .root)
	GUEST_PORT=$(printf '%s' "$line" | jq -r .port)
	GUEST_KNOWN_HOSTS=$(printf '%s' "$line" | jq -r .known_hosts)
	cat "$GUEST_KNOWN_HOSTS" >>"$E2E_DIR/state/known_hosts"
}

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
	state_init
	mv "$E2E_DIR/token.secret" "$E2E_DIR/state/token.secret"
	sed -e "s|@URL@|$SIM_URL|" -e "s|@TOKEN_ID@|$SIM_TOKEN_ID|" \
		-e "s|@FINGERPRINT@|$SIM_FINGERPRINT|" -e "s|@STATE@|$E2E_DIR/state|g" \
		-e "s|@REPO@|$REPO|g" -e "s|@SSH_PORT@|${GUEST_PORT:-22}|" \
		conf/demo.conf >"$E2E_DIR/pvagent.conf"
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
