#!/bin/bash
# sandbox.sh - `make sandbox`: a PVE simulator (the demo cluster, 2 nodes,
# time 50x) with real SSH guests behind the VMs you create, to try every
# pvagent command yourself; `make sandbox-stop` ends it.
#
#   sandbox.sh start   start it in the background and print the export line
#   sandbox.sh run     the same in the foreground, until Ctrl-C
#   sandbox.sh stop    stop it: every process it started, and its directory
#
# As root, each template VM with a fixture (freebsd-14, ubuntu-24.04,
# freebsd-9.0) gets SPARES spare guests: a fixture tree behind a private
# sshd chrooted into it (tests/guests/guestd), on 127.0.2.N, all on one
# port; the simulator gives the first VMs of that OS that start one each
# (pvesim --spare-guest), so `up` reaches them over SSH and writes their
# files. The legacy guest fbsd9-legacy (VMID 190) is one too. Not as root:
# no SSH guests (guestd chroots), and `up` needs --no-inject.
# Everything lives in $SANDBOX_DIR (default build/sandbox); binaries from
# $PVESIM_BIN, $PVAGENT_BIN, $GUESTD_BIN (default: the release builds).
set -eu
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
DIR=${SANDBOX_DIR:-$REPO/build/sandbox}
PVESIM_BIN=${PVESIM_BIN:-$REPO/tests/pvesim/pvesim}
PVAGENT_BIN=${PVAGENT_BIN:-$REPO/pvagent}
GUESTD_BIN=${GUESTD_BIN:-$REPO/tests/guests/guestd}
SPARES=${SPARES:-3}
FIXTURES="freebsd-14 ubuntu-24.04 freebsd-9.0"

die() {
	echo "sandbox: $*" >&2
	exit 1
}

# The pids of what it started, one a line, so that stop finds them all.
pids=()
# Each one's stderr goes to the log before the directory goes, and so does
# an exit status other than 0 (stop then fails, as on a sanitizer report).
stop_all() {
	local p rc f
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do
		rc=0
		wait "$p" 2>/dev/null || rc=$?
		[ "$rc" = 0 ] || echo "sandbox: process $p exited with status $rc"
	done
	pids=()
	for f in "$DIR"/*.err; do
		[ -s "$f" ] || continue
		echo "== ${f##*/}"
		cat "$f"
	done
	rm -rf "$DIR"
	# a starter still waiting hears that it is over
	[ ! -p "$DIR.ready" ] || { exec 6<>"$DIR.ready" && echo stopped >&6; }
}

# read_ready FIFO WHAT: READY gets the one JSON line the program just
# started prints on FIFO; its stderr is in $DIR/WHAT.err.
read_ready() {
	exec 5<"$1"
	if ! read -r -t 30 READY <&5; then
		exec 5<&-
		cat "$DIR/$2.err" >&2
		die "$2 did not start"
	fi
	exec 5<&-
	rm -f "$1"
}

# guestd FIXTURE ADDR PORT: a fixture guest; GUEST_ROOT gets its root and,
# with PORT 0, GUEST_PORT the port it took. Its host key goes into the
# agent's known_hosts.
guestd() {
	mkfifo "$DIR/ready.$2"
	"$GUESTD_BIN" --fixture "$1" --addr "$2" --port "$3" --authorize "$DIR/state/id_ed25519.pub" \
		>"$DIR/ready.$2" 2>"$DIR/guestd-$2.err" &
	pids+=($!)
	read_ready "$DIR/ready.$2" "guestd-$2"
	cat "$(jq -r .known_hosts <<<"$READY")" >>"$DIR/state/known_hosts"
	GUEST_ROOT=$(jq -r .root <<<"$READY")
	[ "$3" != 0 ] || GUEST_PORT=$(jq -r .port <<<"$READY")
	# the freebsd-14 template VM has a virtio NIC, so its image was made
	# for one (as README's template section does): vtnet0, not em0
	[ "$1" != freebsd-14 ] || sed -i 's/^ifconfig_em0/ifconfig_vtnet0/' "$GUEST_ROOT/etc/rc.conf"
}

serve() {
	[ ! -e "$DIR/pid" ] || die "a sandbox runs already ($DIR); make sandbox-stop ends it"
	for b in "$PVESIM_BIN" "$PVAGENT_BIN" "$GUESTD_BIN"; do
		[ -x "$b" ] || die "$b is missing: run make first"
	done
	rm -rf "$DIR"
	mkdir -p "$DIR/state"
	echo $$ >"$DIR/pid"
	trap 'stop_all; exit 0' TERM INT
	trap 'stop_all' EXIT
	ssh-keygen -q -t ed25519 -N '' -C pvagent-sandbox -f "$DIR/state/id_ed25519"
	: >"$DIR/state/known_hosts"
	local sim_args=() port=0 n=10 f i line
	if [ "$(id -u)" = 0 ]; then
		guestd freebsd-9.0 127.0.1.90 0
		port=$GUEST_PORT
		sim_args+=(--guest-root "190=$GUEST_ROOT")
		for f in $FIXTURES; do
			for ((i = 0; i < SPARES; i++)); do
				guestd "$f" "127.0.2.$n" "$port"
				sim_args+=(--spare-guest "$f@127.0.2.$n=$GUEST_ROOT")
				n=$((n + 1))
			done
		done
	fi
	mkfifo "$DIR/ready.sim"
	"$PVESIM_BIN" --scenario tests/pvesim/scenarios/demo.json --time-scale 50 \
		--log "$DIR/requests.jsonl" "${sim_args[@]}" >"$DIR/ready.sim" 2>"$DIR/pvesim.err" &
	pids+=($!)
	read_ready "$DIR/ready.sim" pvesim
	line=$READY
	(umask 077 && jq -r .token_secret <<<"$line" >"$DIR/state/token.secret")
	sed -e "s|@URL@|$(jq -r .url <<<"$line")|" -e "s|@TOKEN_ID@|$(jq -r .token_id <<<"$line")|" \
		-e "s|@FINGERPRINT@|$(jq -r .fingerprint <<<"$line")|" -e "s|@STATE@|$DIR/state|g" \
		-e "s|@REPO@|$REPO|g" -e "s|@SSH_PORT@|$([ "$port" != 0 ] && echo "$port" || echo 22)|" \
		-e "s|^state = .*|&\nsocket = $DIR/pvagentd.sock|" \
		conf/demo.conf >"$DIR/pvagent.conf"
	{
		echo "export PVAGENT_CONF=$DIR/pvagent.conf"
		echo
		echo "A simulated PVE 9 cluster (pve1, pve2; simulated time runs 50x) is up."
		if [ "$port" != 0 ]; then
			echo "VMs you create from freebsd-14, ubuntu-24.04 or freebsd-9.0 answer SSH"
			echo "(the first $SPARES of each), and fbsd9-legacy (VMID 190) is an old IDE/e1000 guest."
		else
			echo "Not root: no guest answers SSH here; give up and inject --no-inject."
		fi
		echo "Try:"
		if [ "$port" != 0 ]; then
			echo "  ./pvagent up web1 -t freebsd-14        # clone, start, write its files over SSH"
			echo "  ./pvagent virtio fbsd9-legacy --address 127.0.1.90 --bench  # IDE -> virtio, measured"
		else
			echo "  ./pvagent up web1 -t freebsd-14 --no-inject"
		fi
		echo "  ./pvagent drain pve1 --dry-run"
		echo "The daemon: ./pvagentd -f (its socket is in $DIR). Stop it all: make sandbox-stop"
	} >"$DIR/banner"
	# tell the starter (its fifo, opened read-write so this never blocks)
	[ ! -p "$DIR.ready" ] || { exec 6<>"$DIR.ready" && echo ready >&6; }
	# until stopped: a signal ends the wait and the trap stops everything;
	# a process that ends on its own ends the sandbox
	wait -n "${pids[@]}" || true
	die "a sandbox process ended on its own (see $DIR.log)"
}

case "${1:-}" in
start)
	[ ! -e "$DIR/pid" ] || die "a sandbox runs already ($DIR); make sandbox-stop ends it"
	mkdir -p "$(dirname "$DIR")"
	rm -f "$DIR.ready"
	mkfifo "$DIR.ready"
	exec 6<>"$DIR.ready"
	setsid bash "${BASH_SOURCE[0]}" serve >"$DIR.log" 2>&1 </dev/null &
	# the supervisor says "ready" on the fifo once everything answers, or
	# the wait times out (it then stops what it started)
	if ! read -r -t 120 word <&6 || [ "$word" != ready ]; then
		rm -f "$DIR.ready"
		cat "$DIR.log" >&2
		[ ! -e "$DIR/pid" ] || bash "${BASH_SOURCE[0]}" stop >/dev/null
		die "it did not start"
	fi
	rm -f "$DIR.ready"
	cat "$DIR/banner"
	;;
run)
	rm -f "$DIR.ready"
	mkdir -p "$(dirname "$DIR")"
	mkfifo "$DIR.ready"
	exec 6<>"$DIR.ready"
	serve &
	sup=$!
	trap 'kill -TERM $sup 2>/dev/null; wait $sup; rm -f "$DIR.ready"; exit 0' INT TERM
	read -r word <&6
	rm -f "$DIR.ready"
	[ "$word" = ready ] || exit 1
	cat "$DIR/banner"
	echo "(Ctrl-C stops it)"
	wait "$sup"
	;;
serve) serve ;;
stop)
	[ -e "$DIR/pid" ] || { echo "sandbox: none runs"; exit 0; }
	pid=$(cat "$DIR/pid")
	kill -TERM "$pid" 2>/dev/null || true
	timeout 60 tail --pid="$pid" -f /dev/null || die "process $pid did not stop"
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|exited with status' "$DIR.log"; then
		cat "$DIR.log" >&2
		die "stopped, but a process did not end cleanly (above)"
	fi
	rm -rf "$DIR" "$DIR.log"
	echo "sandbox: stopped"
	;;
*)
	echo "usage: sandbox.sh start|run|stop" >&2
	exit 2
	;;
esac
