# sim.sh - sourced by the end-to-end scripts, the demo and the sandbox:
# start the PVE simulator on a random loopback port, write a pvagent
# configuration that points at it (URL, pinned fingerprint, token in a 0600
# file), optionally start fixture guests behind real sshds first
# (guestd_start, spare_guests_start; they need root), and stop everything on
# exit, failing on a sanitizer report or a bad exit of any of them. Binaries
# come from $PVESIM_BIN, $PVAGENT_BIN and $GUESTD_BIN (make test sets the
# sanitizer builds; the demo uses the release ones). Everything lives in
# $E2E_DIR (default: a new temporary directory), removed on exit.
set -eu
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$REPO"
PVESIM_BIN=${PVESIM_BIN:-$REPO/tests/pvesim/pvesim}
PVAGENT_BIN=${PVAGENT_BIN:-$REPO/pvagent}
GUESTD_BIN=${GUESTD_BIN:-$REPO/tests/guests/guestd}
E2E_DIR=${E2E_DIR:-$(mktemp -d /tmp/pvagent-e2e-XXXXXX)}
mkdir -p "$E2E_DIR"
SIM_PID=
GUESTD_PIDS=()
GUEST_PORT=
SIM_SPARE_ARGS=()

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

# guestd_stop: SIGTERM to every guest, and fail on a bad exit or a
# sanitizer report of any.
guestd_stop() {
	local p rc=0 f
	for p in "${GUESTD_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${GUESTD_PIDS[@]}"; do
		wait "$p" || { echo "guestd $p exited with status $?" >&2; rc=1; }
	done
	for f in "$E2E_DIR"/guestd-*.err; do
		[ -e "$f" ] || continue
		if [ "$rc" != 0 ] || grep -qE 'Sanitizer|runtime error:' "$f"; then
			cat "$f" >&2
			rc=1
		fi
	done
	GUESTD_PIDS=()
	return $rc
}

sim_cleanup() {
	local rc=$?
	sim_stop || rc=1
	guestd_stop || rc=1
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

# guestd_start FIXTURE ADDR: a fixture guest behind a real sshd that
# authorizes the agent's key and follows the simulator's boot file; start
# it before the simulator and pass it --guest-root VMID=$GUEST_ROOT. The
# first one takes a free port (GUEST_PORT), the others share it. Sets
# GUEST_ROOT and GUEST_PORT; the agent's known_hosts gets its host key.
guestd_start() {
	local fixture=$1 addr=$2 line
	state_init
	mkfifo "$E2E_DIR/guestd-$addr.ready"
	"$GUESTD_BIN" --fixture "$fixture" --addr "$addr" --port "${GUEST_PORT:-0}" \
		--authorize "$E2E_DIR/state/id_ed25519.pub" \
		>"$E2E_DIR/guestd-$addr.ready" 2>"$E2E_DIR/guestd-$addr.err" &
	GUESTD_PIDS+=($!)
	# the read end stays open (as the simulator's below) until the end
	local fd
	exec {fd}<"$E2E_DIR/guestd-$addr.ready"
	if ! read -r -t 30 line <&"$fd"; then
		echo "guestd did not start:" >&2
		cat "$E2E_DIR/guestd-$addr.err" >&2
		return 1
	fi
	GUEST_ROOT=$(printf '%s' "$line" | jq -r .root)
	GUEST_PORT=$(printf '%s' "$line" | jq -r .port)
	cat "$(printf '%s' "$line" | jq -r .known_hosts)" >>"$E2E_DIR/state/known_hosts"
}

# spare_guests_start N FIXTURE...: N spare guests of each fixture on
# 127.0.2.10 onwards (guestd_start), which the simulator hands to the first
# VMs of that fixture that start (pass it "${SIM_SPARE_ARGS[@]}"): a clone
# of a template VM then answers SSH, and `up` writes its files.
spare_guests_start() {
	local n=$1 f i a=10
	shift
	for f in "$@"; do
		for ((i = 0; i < n; i++)); do
			guestd_start "$f" "127.0.2.$a"
			# the freebsd-14 template VM has a virtio NIC, so its image
			# was made for one (pvagent-template(5), EXAMPLE): vtnet0
			[ "$f" != freebsd-14 ] ||
				sed -i 's/^ifconfig_em0/ifconfig_vtnet0/' "$GUEST_ROOT/etc/rc.conf"
			SIM_SPARE_ARGS+=(--spare-guest "$f@127.0.2.$a=$GUEST_ROOT")
			a=$((a + 1))
		done
	done
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
