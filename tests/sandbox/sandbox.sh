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
# freebsd-9.0) gets SPARES spare guests (tests/e2e/lib/sim.sh
# spare_guests_start: a fixture tree behind a private sshd chrooted into
# it, on 127.0.2.N), which the simulator gives to the first VMs of that OS
# that start, so `up` reaches them over SSH and writes their files; the
# legacy guest fbsd9-legacy (VMID 190, 127.0.1.90) is one too. Not as root:
# no SSH guests (guestd chroots), and `up` needs --no-inject.
# Its pvagent.conf has a pool, [pool "lan"] (POOL_* below: loopback
# addresses no sandbox guest uses), for `up --pool lan` and the image
# templates, and an image catalogue mirror, [image] mirror: busybox httpd
# on a free 127.0.0.1 port serves, for each uncompressed VM image of
# templates/images, a small qcow2 file and its checksum file (what its
# publisher's checksums names, in `sha512sum` form) under NAME/, so
# `pvagent image build debian-13` works offline (the demo cluster's
# `local` has import content, as a fresh PVE 9 has).
# Everything lives in $SANDBOX_DIR (default build/sandbox), its log beside
# it; binaries from $PVESIM_BIN, $PVAGENT_BIN, $GUESTD_BIN (default: the
# release builds).
set -eu
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DIR=${SANDBOX_DIR:-$REPO/build/sandbox}
SPARES=${SPARES:-3}
POOL_CIDR=127.0.3.0/24 POOL_GATEWAY=127.0.3.1 POOL_RANGE=127.0.3.10-127.0.3.99

die() {
	echo "sandbox: $*" >&2
	exit 1
}

# mirror_fill DIR: under DIR/NAME/, for each catalogue VM image published
# uncompressed, a 512-byte qcow2 file of a 2 GiB disk (the header PVE's
# import reads, the image's name in it so each file differs) named as its
# url's last element, and its checksum file named as its checksums' last
# element, with the line `ALGOsum` prints.
mirror_fill() {
	local dir=$1 f name url sums algo comp file
	for f in "$REPO"/templates/images/*.image; do
		name=$(basename "$f" .image)
		url=$(sed -n 's/^url *= *//p' "$f")
		sums=$(sed -n 's/^checksums *= *//p' "$f")
		algo=$(sed -n 's/^checksum_algorithm *= *//p' "$f")
		comp=$(sed -n 's/^compression *= *//p' "$f")
		[ -n "$url" ] && [ -n "$sums" ] && [ "${comp:-none}" = none ] || continue
		file=${url##*/}
		mkdir -p "$dir/$name"
		{
			printf 'QFI\xfb\x00\x00\x00\x03'
			head -c 16 /dev/zero
			printf '\x00\x00\x00\x00\x80\x00\x00\x00'
			head -c 68 /dev/zero
			printf '%s' "$name"
			head -c $((412 - ${#name})) /dev/zero
		} >"$dir/$name/$file"
		(cd "$dir/$name" && "${algo}sum" "$file" >"${sums##*/}")
	done
}

# mirror_serves PORT WORD: does 127.0.0.1:PORT answer GET /sandbox-mirror.id
# with WORD (our httpd, not another program that holds the port)?
mirror_serves() {
	local line got=
	exec 5<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'GET /sandbox-mirror.id HTTP/1.0\r\n\r\n' >&5
	while IFS= read -r -t 5 line <&5; do
		[ "${line%$'\r'}" = "$2" ] && got=yes
	done
	exec 5<&-
	[ -n "$got" ]
}

# mirror_start DIR: busybox httpd serving DIR on a free 127.0.0.1 port
# (MIRROR_PORT, MIRROR_PID): a port taken by another program makes httpd
# exit (or answer nothing of ours), and the next one is tried.
MIRROR_PID=
mirror_start() {
	local dir=$1 try port i word=$RANDOM$RANDOM$RANDOM
	echo "$word" >"$dir/sandbox-mirror.id"
	for try in 1 2 3 4 5 6 7 8; do
		port=$((20000 + RANDOM % 40000))
		busybox httpd -f -p "127.0.0.1:$port" -h "$dir" 2>>"$DIR/httpd.err" &
		MIRROR_PID=$!
		for i in $(seq 50); do
			kill -0 "$MIRROR_PID" 2>/dev/null || break
			if mirror_serves "$port" "$word" 2>/dev/null; then
				MIRROR_PORT=$port
				return 0
			fi
			read -r -t 0.1 <> <(:) || true
		done
		kill "$MIRROR_PID" 2>/dev/null || true
		wait "$MIRROR_PID" 2>/dev/null || true
	done
	MIRROR_PID=
	die "the image mirror (busybox httpd) did not start: $(cat "$DIR/httpd.err")"
}

# The supervisor: starts everything (lib/sim.sh, whose exit trap stops it
# all and fails on a sanitizer report), says "ready" on $DIR.ready, and
# waits for a signal or for one of its processes to end.
serve() {
	[ ! -e "$DIR/pid" ] || die "a sandbox runs already ($DIR); make sandbox-stop ends it"
	rm -rf "$DIR"
	E2E_DIR=$DIR
	# shellcheck source=../e2e/lib/sim.sh
	source "$REPO/tests/e2e/lib/sim.sh"
	echo $$ >"$DIR/pid"
	trap 'exit 0' TERM INT
	for b in "$PVESIM_BIN" "$PVAGENT_BIN" "$GUESTD_BIN"; do
		[ -x "$b" ] || die "$b is missing: run make first"
	done
	local sim_args=()
	if [ "$(id -u)" = 0 ]; then
		guestd_start freebsd-9.0 127.0.1.90
		sim_args+=(--guest-root "190=$GUEST_ROOT")
		spare_guests_start "$SPARES" freebsd-14 ubuntu-24.04 freebsd-9.0
	fi
	mkdir -p "$DIR/mirror"
	mirror_fill "$DIR/mirror"
	mirror_start "$DIR/mirror"
	trap 'kill "$MIRROR_PID" 2>/dev/null || true; sim_cleanup' EXIT
	sim_start tests/pvesim/scenarios/demo.json --time-scale 50 "${sim_args[@]}" \
		"${SIM_SPARE_ARGS[@]}"
	sed -i "s|^state = .*|&\nsocket = $DIR/pvagentd.sock|" "$PVAGENT_CONF"
	cat >>"$PVAGENT_CONF" <<-EOF

		# the sandbox's image catalogue mirror (busybox httpd on loopback)
		[image]
		mirror = http://127.0.0.1:$MIRROR_PORT

		# addresses for up --pool lan and the image templates ([guest] pool = lan)
		[pool "lan"]
		cidr = $POOL_CIDR
		gateway = $POOL_GATEWAY
		range = $POOL_RANGE
	EOF
	local legacy
	legacy=$(jq -r '.guests[] | select(.address) |
		"  \(.config.name)  \(.address)  (\(.fixture), VMID \(.vmid))"' \
		tests/pvesim/scenarios/demo.json)
	{
		echo "export PVAGENT_CONF=$PVAGENT_CONF"
		echo
		echo "A simulated PVE cluster (pve1, pve2; its time runs 50x) is up."
		if [ -n "$GUEST_PORT" ]; then
			echo "VMs you create from freebsd-14, ubuntu-24.04 or freebsd-9.0 answer SSH"
			echo "(the first $SPARES of each). Legacy guests (IDE/e1000), SSH as root with"
			echo "pvagent's key on port $GUEST_PORT:"
			echo "$legacy"
			echo "Try:"
			echo "  ./pvagent up web1 -t freebsd-14        # clone, start, write its files over SSH"
			echo "  ./pvagent virtio fbsd9-legacy --address 127.0.1.90 --bench  # IDE -> virtio"
		else
			echo "Not root: no guest answers SSH here (its sshd runs chrooted): up needs --no-inject."
			echo "Try:"
			echo "  ./pvagent up web1 -t freebsd-14 --no-inject"
		fi
		echo "  ./pvagent templates                    # HERE: what this cluster can provision"
		echo "  ./pvagent image build debian-13        # offline, from the sandbox's mirror"
		echo "  ./pvagent up deb1 -t debian-13 --no-inject  # an address of [pool \"lan\"]"
		echo "  ./pvagent up app1 -t ubuntu-24.04 --pool lan --no-inject"
		echo "  ./pvagent doctor"
		echo "  ./pvagent drain pve1 --dry-run"
		echo "The daemon: ./pvagentd -f (its socket is in $DIR). Stop it all: make sandbox-stop"
	} >"$DIR/banner"
	# tell the starter (its fifo, opened read-write here so this never blocks)
	[ ! -p "$DIR.ready" ] || { exec 6<>"$DIR.ready" && echo ready >&6; }
	# a signal ends the wait (the trap exits, sim.sh stops everything); a
	# process that ends on its own ends the sandbox
	wait -n "$SIM_PID" "$MIRROR_PID" "${GUESTD_PIDS[@]}" || true
	die "a sandbox process ended on its own"
}

# wait_ready: the supervisor's word on the fifo (fd 6): true once it says
# "ready", false when it says something else or nothing within 120 s.
wait_ready() {
	local word=
	read -r -t 120 word <&6 || true
	rm -f "$DIR.ready"
	[ "$word" = ready ] && [ -e "$DIR/banner" ]
}

case "${1:-}" in
start | run)
	[ ! -e "$DIR/pid" ] || die "a sandbox runs already ($DIR); make sandbox-stop ends it"
	mkdir -p "$(dirname "$DIR")"
	rm -f "$DIR.ready"
	mkfifo "$DIR.ready"
	exec 6<>"$DIR.ready"
	if [ "$1" = start ]; then
		setsid bash "${BASH_SOURCE[0]}" serve >"$DIR.log" 2>&1 </dev/null &
		if ! wait_ready; then
			cat "$DIR.log" >&2
			bash "${BASH_SOURCE[0]}" stop >/dev/null 2>&1 || true
			die "it did not start"
		fi
		cat "$DIR/banner"
	else
		bash "${BASH_SOURCE[0]}" serve &
		sup=$!
		trap 'kill -TERM $sup 2>/dev/null || true' INT TERM
		wait_ready || { wait "$sup" || true; die "it did not start"; }
		cat "$DIR/banner"
		echo "(Ctrl-C stops it)"
		wait "$sup" || wait "$sup"
	fi
	;;
serve) serve ;;
stop)
	[ -e "$DIR/pid" ] || { echo "sandbox: none runs"; exit 0; }
	pid=$(cat "$DIR/pid")
	kill -TERM "$pid" 2>/dev/null || true
	timeout 60 tail --pid="$pid" -f /dev/null || die "process $pid did not stop"
	if [ -e "$DIR.log" ] && grep -qE 'Sanitizer|runtime error:|exited with status' "$DIR.log"; then
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
