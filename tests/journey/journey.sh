#!/bin/bash
# journey.sh MODEL MODE TTY NET OUT - one user's first day on one cluster
# model (tests/pvesim/scenarios/journey-MODEL.json), with the installed
# pvagent ($JOURNEY_ROOT/usr/bin/pvagent, its templates in
# $JOURNEY_ROOT/usr/share/pvagent/templates): setup with a password file,
# an SSH key, setup again, doctor, image build, up from the image with a
# pool and from every shipped template, list, show, inject, virtio --bench
# of the legacy guest, migrate, drain, undrain, cancel of a running
# migrate, rolling plan (and on a cluster of 3+ nodes rolling run --wait,
# the journey as the admin who updates each drained node, and its report
# as JSON and HTML), down, image rm; then the journey's own checks (no 403
# to the token, no command to type on the host, nothing left behind).
#   MODE  daemon (pvagentd started as its unit starts it) | local (--local)
#   TTY   pty (each command on a pseudo-terminal, -v on some, a fault on
#         one task-starting request) | plain
#   NET   this journey's 127.0.N (guests .10-.14, legacy guest .90, image
#         server .1, pool .100-.109): journeys run in parallel
# One line per step (PASS|FAIL MODEL MODE/TTY STEP), then "N passed, N
# failed"; exit 1 on any failure. Needs root (the guests' sshds chroot).
set -u
MODEL=$1 MODE=$2 TTY=$3 NET=$4 OUT=$5
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=${JOURNEY_REPO:-$(cd "$HERE/../.." && pwd)}
JOURNEY_ROOT=${JOURNEY_ROOT:-$REPO/build/journey/root}
PVAGENT=$JOURNEY_ROOT/usr/bin/pvagent
PVAGENTD=$JOURNEY_ROOT/usr/sbin/pvagentd
UNIT=$JOURNEY_ROOT/etc/systemd/system/pvagentd.service
SOCKET_GROUP=${JOURNEY_GROUP:-pvagent-journey}
SCENARIO=$REPO/tests/pvesim/scenarios/journey-$MODEL.json
rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# the simulator and guests (tests/e2e/lib/sim.sh) live in $OUT/sim, which
# its exit trap removes: the request log is copied out first
export E2E_DIR=$OUT/sim
export PVESIM_BIN=${PVESIM_BIN:-$REPO/build/san/pvesim}
export GUESTD_BIN=${GUESTD_BIN:-$REPO/build/san/guestd}
export PVAGENT_GUESTS=$REPO/tests/guests
# shellcheck source=../e2e/lib/sim.sh
source "$REPO/tests/e2e/lib/sim.sh"
set +e
# shellcheck source=lib.sh
source "$HERE/lib.sh"

HOME_DIR=$OUT/home         # the user's working directory (no ./templates, no ./conf)
ETC=$OUT/etc/pvagent       # what /etc/pvagent is on a host
CONF=$ETC/pvagent.conf
STATE=$OUT/var/lib/pvagent # the unit's StateDirectory
RUNDIR=$OUT/run/pvagent    # the unit's RuntimeDirectory
mkdir -p "$HOME_DIR" "$OUT/etc" "$OUT/var/lib" "$OUT/run"
export PVAGENT_CONF=$CONF
DAEMON_PID=
HTTP_PID=
finish() {
	local rc=$?
	[ -n "$DAEMON_PID" ] && kill -KILL "$DAEMON_PID" 2>/dev/null
	[ -n "$HTTP_PID" ] && kill -TERM "$HTTP_PID" 2>/dev/null
	cp "$E2E_DIR/requests.jsonl" "$E2E_DIR/sim.err" "$OUT/" 2>/dev/null
	local r
	for r in "${GUEST_ROOTS[@]}"; do # the guests' sshd logs (guestd removes them)
		cp "$(dirname "$r")/etc/sshd.log" "$OUT/sshd-$(basename "$(dirname "$r")").log" 2>/dev/null
	done
	(exit $rc)
	sim_cleanup
}
trap finish EXIT

sim() { curl -sfk "$SIM_URL$1" "${@:2}"; }
sim_state() { sim /_sim/state; }

# ---- the cluster: guests behind real sshds, then the simulator -------------
GUEST_ROOTS=()
start_guest() { # FIXTURE ADDR
	guestd_start "$1" "$2" || return 1
	[ "$1" != freebsd-14 ] || sed -i 's/^ifconfig_em0/ifconfig_vtnet0/' "$GUEST_ROOT/etc/rc.conf"
	GUEST_ROOTS+=("$GUEST_ROOT")
}
spare_args=()
start_guest freebsd-9.0 "$NET.90" || exit 1
legacy_root=$GUEST_ROOT
i=10
for f in freebsd-14 ubuntu-24.04 freebsd-9.0 ubuntu-9.04; do
	start_guest "$f" "$NET.$i" || exit 1
	# a clone gets a new MAC, and udev's rule pinning eth0 to the
	# installed machine's would make its NIC eth1, which nothing
	# configures (the simulator's boot model: no network): the template
	# VM is prepared as one is made from an installed jaunty, without
	# that rule (templates/ubuntu-9.04.tmpl, Needs)
	[ "$f" != ubuntu-9.04 ] || rm -f "$GUEST_ROOT/etc/udev/rules.d/70-persistent-net.rules"
	spare_args+=(--spare-guest "$f@$NET.$i=$GUEST_ROOT")
	eval "SPARE_${f//[.-]/_}=$NET.$i"
	i=$((i + 1))
done
# the VM up makes from the image takes the pool's first address: a debian-13
# tree answers SSH there
start_guest debian-13 "$NET.100" || exit 1
jq --arg a "$NET.90" '.guests |= map(if .vmid == 190 then .address = $a else . end)' \
	"$SCENARIO" >"$OUT/scenario.json"
if ! sim_start "$OUT/scenario.json" --time-scale "${TIME_SCALE:-100}" \
	--guest-root "190=$legacy_root" "${spare_args[@]}"; then
	verdict simulator FAIL "it refused the scenario: $(tail -2 "$E2E_DIR/sim.err" | tr '\n' '|')"
	echo "$MODEL $MODE/$TTY: $PASSED passed, $FAILED failed"
	exit 1
fi
export PVAGENT_CONF=$CONF # sim_start pointed it at its demo configuration
vols() { sim_state | jq -r '.data.cluster.storages[] | .volumes[] | "\(.node) \(.volid)"' | sort; }
vmids() { sim_state | jq -r '.data.cluster.guests[].vmid' | sort -n; }
VOLS0=$(vols)
VMIDS0=$(vmids)

# the image, served on loopback with its checksum file, as a mirror would
WWW=$OUT/www
mkdir -p "$WWW"
python3 -c 'import struct,sys; h=bytearray(512); h[0:4]=b"QFI\xfb"; h[7]=3; h[24:32]=struct.pack(">Q",2<<30); sys.stdout.buffer.write(h)' \
	>"$WWW/debian-13-genericcloud-amd64.qcow2"
(cd "$WWW" && sha512sum debian-13-genericcloud-amd64.qcow2 >SHA512SUMS)
IMG_SUM=$(cut -d' ' -f1 "$WWW/SHA512SUMS")
HTTP_PORT=$((20000 + ${NET##*.} * 7))
busybox httpd -f -p "$NET.1:$HTTP_PORT" -h "$WWW" &
HTTP_PID=$!
IMG_URL=http://$NET.1:$HTTP_PORT/debian-13-genericcloud-amd64.qcow2
poll_until 10 curl -sf -o /dev/null "$IMG_URL" || { echo "the image server did not start"; exit 1; }
cd "$HOME_DIR" || exit 1

# ---- setup ----------------------------------------------------------------
install -d -m 0755 "$ETC"
PW=$HOME_DIR/pve-password
install -m 0600 /dev/null "$PW"
ADMIN=root@pam
jq -r '.users[0].password' "$SCENARIO" >"$PW"
if jq -e '.users[0].tfa == true' "$SCENARIO" >/dev/null; then
	# root@pam has TFA: setup says so plainly and names --user, then the
	# user runs it as the other administrator
	step setup-tfa nz 'two-factor|TFA' -- setup "$SIM_URL" --password-file "$PW" \
		--fingerprint "$SIM_FINGERPRINT"
	check setup-tfa-names-user "the refusal does not name --user: $(excerpt "$LAST_OUT")" \
		grep -qE -- '--user' "$LAST_OUT"
	ADMIN=$(jq -r '.users[1].id' "$SCENARIO")
	jq -r '.users[1].password' "$SCENARIO" >"$PW"
fi
# admin_get PATH: what the administrator sees in PVE's web interface
# (a ticket of the administrator setup logged in as; the harness's eyes)
# (fails when the login or the request does)
admin_get() {
	local t
	t=$(sim /api2/json/access/ticket --data-urlencode "username=$ADMIN" \
		--data-urlencode "password=$(cat "$PW")" | jq -er .data.ticket) &&
		sim "/api2/json$1" -b "PVEAuthCookie=$t"
}
has_import() {
	local s
	s=$(admin_get /storage) && jq -e '.data[] | select(.storage == "local") |
		.content | split(",") | index("import") != null' <<<"$s" >/dev/null
}
import0=$(jq -r '.storages[] | select(.id == "local") | .content' "$SCENARIO")
step setup 0 '^next: pvagent .*doctor' -- setup "$SIM_URL" --user "$ADMIN" --password-file "$PW" \
	--fingerprint "$SIM_FINGERPRINT"
if [[ ",$import0," != *,import,* ]]; then
	# an upgraded cluster: setup adds import to local with the admin's login
	# and says so
	check setup-import "setup did not say it added import to local: $(excerpt "$LAST_OUT")" \
		grep -qE 'local.*import' "$LAST_OUT"
	check setup-import-content "local has no import content after setup" has_import
fi
keygen=$(sed -n 's/^ *\(ssh-keygen .*\)$/\1/p' "$LAST_OUT" | head -1)
check setup-asks-key "setup did not print the ssh-keygen line" test -n "$keygen"
KEY=$ETC/id_ed25519
[ -n "$keygen" ] || keygen="ssh-keygen -t ed25519 -N '' -f $KEY"
run_raw ssh-keygen 0 '' bash -c "$keygen"
# the guests' images would carry the key (cloud-init): here they are
# fixture trees whose sshd reads this file
for r in "${GUEST_ROOTS[@]}"; do cat "$KEY.pub" >>"$(dirname "$r")/etc/authorized_keys"; done
# what a user adds by hand between the two runs
printf '\n# my own notes: keep them\n[migrate]\nmax_workers = 2\n' >>"$CONF"
step setup-again 0 '^next: pvagent .*doctor' -- setup "$SIM_URL" --user "$ADMIN" \
	--password-file "$PW" --fingerprint "$SIM_FINGERPRINT"
check setup-again-key "the configuration has no [ssh] identity = $KEY" \
	grep -qx "identity = $KEY" "$CONF"
check setup-again-keeps-conf "setup dropped the user's own lines from pvagent.conf" \
	grep -qx '# my own notes: keep them' "$CONF"
if jq -e '.roles.PVAgent' "$SCENARIO" >/dev/null; then
	# the role stored before (with a privilege added by hand) keeps it
	role_has() {
		local r
		r=$(admin_get /access/roles/PVAgent) && jq -e --arg p "$1" '.data |
			has($p) or ((.privs // "") | split(",") | index($p) != null)' <<<"$r" >/dev/null
	}
	check setup-keeps-privilege "setup removed Datastore.Audit from the stored role PVAgent" \
		role_has Datastore.Audit
fi

# the rest a user adds to the configuration setup wrote: where the state
# and socket live (one host runs all journeys), the guests' sshd port (a
# fixture's, not 22), the socket group, and an address pool on loopback
grep -q '^\[paths\]' "$CONF" || cat >>"$CONF" <<EOF

[paths]
state = $STATE
socket = $RUNDIR/pvagentd.sock
EOF
grep -q '^port = ' "$CONF" || sed -i "s/^\[ssh\]\$/[ssh]\nport = $GUEST_PORT/" "$CONF"
grep -q '^\[daemon\]' "$CONF" || printf '\n[daemon]\nsocket_group = %s\n' "$SOCKET_GROUP" >>"$CONF"
grep -q '^\[pool "lan"\]' "$CONF" || cat >>"$CONF" <<EOF

[pool "lan"]
cidr = $NET.0/24
gateway = $NET.1
range = $NET.100-$NET.109
EOF

# ---- pvagentd, as its unit starts it ---------------------------------------
if [ "$MODE" = daemon ]; then
	run_mode=$(sed -n 's/^RuntimeDirectoryMode=//p' "$UNIT")
	state_mode=$(sed -n 's/^StateDirectoryMode=//p' "$UNIT")
	umask_unit=$(sed -n 's/^UMask=//p' "$UNIT")
	install -d -m "$run_mode" "$RUNDIR"
	install -d -m "$state_mode" "$STATE"
	pre=$(sed -n 's/^ExecStartPre=//p' "$UNIT" | sed "s|/etc/pvagent/pvagent.conf|$CONF|g")
	start=$(sed -n 's/^ExecStart=//p' "$UNIT" | sed "s|/etc/pvagent/pvagent.conf|$CONF|g")
	run_raw pvagentd-check 0 '' bash -c "cd / && umask $umask_unit && exec $pre"
	(cd / && umask "$umask_unit" && exec $start) >"$OUT/pvagentd.out" 2>"$OUT/pvagentd.err" &
	DAEMON_PID=$!
	sock_up() { [ -S "$RUNDIR/pvagentd.sock" ]; }
	poll_until 30 sock_up
	check pvagentd-socket "no socket $RUNDIR/pvagentd.sock: $(tail -3 "$OUT/pvagentd.err")" sock_up
	check pvagentd-socket-group "the socket is not 0660 $SOCKET_GROUP: $(stat -c '%a %G' \
		"$RUNDIR/pvagentd.sock" 2>&1)" test "$(stat -c '%a %G' "$RUNDIR/pvagentd.sock" 2>/dev/null)" \
		= "660 $SOCKET_GROUP"
	step status 0 "pid $DAEMON_PID|$DAEMON_PID" -- status
fi

# ---- doctor: exit 0, or exactly the FIX lines the model warrants ----------
# what doctor must say FIX about, one regex a line: nothing on any model.
# On the mixed cluster the 8.4 node's guest-agent privilege (VM.Monitor)
# can be neither granted nor seen through a 9.x node (each node's user.cfg
# parser drops the name it does not know: pve9-truth-second-pass.md, 10):
# doctor cannot check it, so it says "unknown" (which fails nothing, as
# every check doctor cannot make), naming both privileges and pve3 as the
# node to add VM.Monitor through.
want_fix=
step doctor any '' -- doctor
got_fix=$(grep -E '^FIX' "$LAST_OUT")
if [ "$MODEL" = mixed ]; then
	check doctor-mixed-agent "doctor does not name VM.Monitor through pve3 and VM.GuestAgent.Audit: $(excerpt "$LAST_OUT")" \
		grep -qE '^unknown +privilege +VM\.Monitor .*through pve3.*VM\.GuestAgent\.Audit' "$LAST_OUT"
fi
doctor_ok() {
	local n_want n_got re
	n_want=$(printf '%s' "$want_fix" | grep -c .)
	n_got=$(printf '%s' "$got_fix" | grep -c .)
	[ "$n_want" = "$n_got" ] || return 1
	while IFS= read -r re; do
		[ -z "$re" ] || grep -qE -- "$re" <<<"$got_fix" || return 1
	done <<<"$want_fix"
	if [ -z "$want_fix" ]; then [ "$LAST_RC" = 0 ]; else [ "$LAST_RC" = 1 ]; fi
}
check doctor-verdict "exit $LAST_RC with FIX lines [${got_fix//$'\n'/ | }], want [${want_fix//$'\n'/ | }]" \
	doctor_ok

# ---- image build, then up from it with the pool -----------------------------
step image-build 0 '^image debian-13: template VM debian-13-image \(VMID [0-9]+\) on pve[0-9]' -v -- image build debian-13 --url "$IMG_URL" \
	--checksum "sha512:$IMG_SUM"
CREATED=()
step up-image-pool 0 "^img1 +[0-9]+ +pve[0-9] +$NET\\.100 +created" -- up img1 -t debian-13 \
	--pool lan && CREATED+=(img1)

# ---- up from every shipped template -----------------------------------------
# a fault on one task-starting request on the pseudo-terminal: the first
# clone's answer is lost after it took effect
if [ "$TTY" = pty ]; then
	sim /_sim/fault -X POST -H 'Content-Type: application/json' \
		-d '{"method":"POST","path":"/clone$","nth":1,"times":1,"after":true,"action":"reset"}' \
		>/dev/null || echo "could not inject the fault"
fi
for t in "$JOURNEY_ROOT"/usr/share/pvagent/templates/*.tmpl; do
	t=$(basename "$t" .tmpl)
	name=g-$t
	case $t in
	debian-13) ;; # made above from the image built in this journey
	*openvz*)
		step "up-$t" nz 'OpenVZ' -- up "$name" -t "$t" --var ip="$NET.50" ;;
	debian-12 | freebsd-15 | ubuntu-26.04)
		# no template VM in the model (its image is not built): the plan
		# stops there and names the command that builds it
		step "up-$t" 2 "template VM '$t-image' of image $t is not built: run 'pvagent image build $t' first" \
			-- up "$name" -t "$t" --pool lan --dry-run ;;
	freebsd-9.0 | ubuntu-9.04)
		v=SPARE_${t//[.-]/_}
		step "up-$t" 0 "^$name +[0-9]+ +pve[0-9] +${!v//./\\.} +created" -- up "$name" -t "$t" \
			--var ip="${!v}" && CREATED+=("$name") ;;
	*-ct)
		# the simulator's containers answer no SSH
		step "up-$t" 0 "^$name +[0-9]+ +pve[0-9] .* created" -- up "$name" -t "$t" --no-inject &&
			CREATED+=("$name") ;;
	*)
		v=SPARE_${t//[.-]/_}
		step "up-$t" 0 "^$name +[0-9]+ +pve[0-9] +${!v//./\\.} +created" -v -- up "$name" -t "$t" &&
			CREATED+=("$name") ;;
	esac
done

if [ "$TTY" = pty ]; then
	# live progress lines: up redraws its step line on a terminal
	check live-progress "no up drew live progress lines on the terminal" \
		grep -qa $'\x1b\[2K' "$OUT"/steps/*-up-*.out.tty
	fired() { sim_state | jq -e '[.data.faults[] | select(.path == "/clone$") | .fired] |
		add == 1' >/dev/null; }
	check fault-fired "the fault on the first clone did not fire" fired
fi

# ---- looking at them ----------------------------------------------------------
step list 0 '(^| )g-freebsd-14 ' -- list
for g in "${CREATED[@]}"; do
	grep -qE "(^| )$g " "$LAST_OUT" || verdict "list-$g" FAIL "list does not show $g"
done
step show 0 "$SPARE_freebsd_14" -- show g-freebsd-14
step inject 0 'nothing to change' -- inject g-freebsd-14 -t freebsd-14

# ---- the legacy guest: IDE/e1000 to virtio, measured -------------------------
step virtio-bench 0 '^fbsd9-legacy: converted to virtio-blk$' -v -- virtio fbsd9-legacy \
	--address "$NET.90" --bench --size 16
check virtio-rcconf "the guest's rc.conf was not moved to vtnet0" \
	grep -q '^ifconfig_vtnet0=' "$legacy_root/etc/rc.conf"

# ---- migrate, drain, undrain ----------------------------------------------------
step migrate 0 '^g-freebsd-14: migrated to pve2' -v -- migrate g-freebsd-14 pve2
# an HA guest whose node-affinity rule prefers pve1 with failback (the
# upgraded model: HA groups became such rules) would be moved back by the
# CRM while pve1 is drained: drain refuses, naming the rule and the ways
# out (HA node maintenance, which only ha-manager on a node sets: PVE has
# no API for it; or the resource's failback 0), and --partial moves the
# others; the HA guest stays on pve1
ha_stays=$(jq -r '[.ha_rules // [] | .[] | select(.type == "node-affinity" and
	(.nodes | test("^pve1:"))) | .resources | split(",")[] | sub("^vm:"; "")] | join(" ")' "$SCENARIO")
if [ -n "$ha_stays" ]; then
	step drain 1 "fits nowhere.*HA rule .* prefers 'pve1' .*failback 0" -- drain pve1
	step drain-partial 0 ' pve1: move +[0-9.]+s +[0-9]+ moved' -- drain pve1 --partial
else
	step drain 0 ' pve1: move +[0-9.]+s +[0-9]+ moved' -- drain pve1
fi
on_pve1() { sim_state | jq -e --arg keep "$ha_stays" '[.data.cluster.guests[] |
	select(.node == "pve1") | select(.config.template != 1 and .config.template != "1") |
	select((.vmid | tostring) as $v | $keep | split(" ") | index($v) | not)] | length == 0' \
	>/dev/null; }
check drain-empty "guests are left on pve1 after drain" on_pve1
step undrain 0 ' pve1: move +[0-9.]+s +[0-9]+ moved' -- undrain pve1
home() { sim_state | jq -e '[.data.cluster.guests[] | select((.config.tags // "") |
	test("pvagent-home"))] | length == 0' >/dev/null; }
check undrain-tags "guests still carry pvagent-home tags after undrain" home

# ---- cancel of a running migrate ------------------------------------------------
node_of() { sim_state | jq -r --arg n "$1" '.data.cluster.guests[] | select(.name == $n) | .node'; }
from=$(node_of g-freebsd-14)
to=pve1
[ "$from" = pve1 ] && to=pve2
# a bandwidth limit (PVE's bwlimit, which the simulator applies to the
# disk mirror and the memory) makes the task last about 3000 simulated
# seconds (30 s here), so that the cancel reaches it while it runs however
# busy the machine is: without it the task took 2 s and the cancel
# sometimes came after its end
pv_args
"${PV_ARGS[@]}" migrate g-freebsd-14 "$to" --bwlimit 12 >"$OUT/steps/migrate-bg.out" 2>&1 &
bg=$!
JOB=
migrate_running() {
	JOB=$("$PVAGENT" --json jobs --limit 20 2>/dev/null | jq -r '[.jobs[] |
		select(.workflow == "migrate" and .state == "running")][0].id // empty')
	[ -n "$JOB" ] && "$PVAGENT" --json job "$JOB" 2>/dev/null |
		jq -e '.job.steps[] | select(.name == "migrate" and .state == "running" and .upid)' \
			>/dev/null
}
if poll_until 60 migrate_running; then
	step cancel-migrate 0 'task' -- cancel "$JOB"
	timeout 300 tail --pid=$bg -f /dev/null
	wait $bg
	where=$(node_of g-freebsd-14)
	check cancel-says-where "cancel did not say where the guest ended ($where): $(excerpt "$LAST_OUT")" \
		grep -q "$where" "$LAST_OUT"
	job_ended() { "$PVAGENT" --json job "$JOB" | jq -e '.job.state != "running" and
		([.job.steps[] | select(.state == "running")] | length == 0)' >/dev/null; }
	poll_until 60 job_ended
	check cancel-job-ends "job $JOB keeps a running step after cancel" job_ended
else
	verdict cancel-migrate FAIL "no running migrate job with its PVE task within 60 s"
	wait $bg
fi

# ---- rolling maintenance, and what it did ---------------------------------------
# the plan on every model: its checks, the order and each node's drain,
# changing nothing (a two-node cluster has no vote to spare: the plan says
# so, exit 1, and still gives the order and the moves)
NODES=$(jq -r '.nodes[].name' "$SCENARIO")
n_nodes=$(wc -w <<<"$NODES")
if [ "$n_nodes" -ge 3 ]; then
	step rolling-plan 0 '^order: ' -- rolling plan
else
	step rolling-plan 1 'quorum +NOT OK: .*QDevice' -- rolling plan
fi
plan_out=$LAST_OUT
plan_names() { # the order, every node, every guest in its node's drain
	grep -qE '^order: ' "$plan_out" && ! grep -qF '(null)' "$plan_out" || return 1
	local n
	for n in $NODES; do grep -qE "^$n: PVE " "$plan_out" || return 1; done
	while IFS= read -r n; do
		[ -z "$n" ] || grep -qE "^$n " "$plan_out" || return 1
	done < <(sim_state | jq -r '.data.cluster.guests[] | .name // empty')
}
check rolling-plan-names "the plan does not name the order, each node and each guest (or says '(null)'): $(excerpt "$plan_out")" \
	plan_names
# the run where there is a vote to spare (mixed: pve3 still runs 8.4):
# each node drained, updated by its admin and undrained. The admin is the
# journey: once a node's drain is done (its rolling-node job's drain step)
# it upgrades that node through the simulator's controls, as apt-get
# dist-upgrade would (pve3 to 9.1; the others have nothing pending), and
# reboots it; `run --wait --version 9.1` sees the boot and the version.
# Then the run's report, as JSON and as a page.
ADMIN_DONE=" " # the nodes the admin updated
ADMIN_NODE=    # the node waiting for its update
waiting_node() { # a node whose drain is done and whose update is not
	local ids id
	ids=$("$PVAGENT" --json jobs --limit 50 2>/dev/null | jq -r '.jobs[] |
		select(.workflow == "rolling-node") | .id') || return 1
	for id in $ids; do
		# (a step's row is stored when it ends)
		ADMIN_NODE=$("$PVAGENT" --json job "$id" 2>/dev/null | jq -r '.job as $j |
			select(any($j.steps[]; .name == "drain" and .state == "done") and
			(any($j.steps[]; .name == "update" and .state == "done") | not)) |
			$j.subject')
		[ -n "$ADMIN_NODE" ] && [[ "$ADMIN_DONE" != *" $ADMIN_NODE "* ]] && return 0
	done
	return 1
}
rolling_admin() {
	local k n
	for ((k = 0; k < n_nodes; k++)); do
		poll_until 120 waiting_node || { echo "no node's drain ended (after$ADMIN_DONE)"; return 1; }
		n=$ADMIN_NODE
		sim /_sim/node/upgrade -X POST -H 'Content-Type: application/json' \
			-d "{\"node\": \"$n\"}" || { echo "upgrade $n refused"; return 1; }
		echo
		sim /_sim/node/reboot -X POST -H 'Content-Type: application/json' \
			-d "{\"node\": \"$n\"}" || { echo "reboot $n refused"; return 1; }
		echo
		ADMIN_DONE+="$n "
	done
	echo "updated:$ADMIN_DONE"
}
if [ "$n_nodes" -ge 3 ]; then
	rolling_admin >"$OUT/rolling-admin.log" 2>&1 &
	admin=$!
	step rolling-run 0 "^order: " -- rolling run --wait --version 9.1
	run_out=$LAST_OUT
	admin_rc=0
	wait $admin || admin_rc=$?
	check rolling-admin "the admin did not update every node: $(tail -2 "$OUT/rolling-admin.log" | tr '\n' '|')" \
		test "$admin_rc" = 0
	each_done() {
		local n
		for n in $NODES; do grep -qE "^$n: PVE .*, done$" "$run_out" || return 1; done
	}
	check rolling-run-nodes "the run does not say every node done: $(excerpt "$run_out")" each_done
	runs_91() {
		local n v
		for n in $NODES; do
			v=$(admin_get "/nodes/$n/version" | jq -r .data.version)
			[[ "$v" == 9.1* ]] || return 1
		done
	}
	check rolling-run-version "a node does not run 9.1 after the run" runs_91
	RID=$("$PVAGENT" --json jobs --limit 50 | jq -r '[.jobs[] | select(.workflow == "rolling")][0].id // empty')
	step rolling-report-json 0 '"command":"report"' -- --json report "$RID"
	report=$(grep -E '"command":"report"' "$LAST_OUT" | tail -1)
	MOVED=$(jq -r '[.report.moves[] | select(.status == "moved") | .name] | unique | .[]' <<<"$report")
	report_ok() {
		jq -e --arg nodes "$NODES" '.report.state == "done" and .report.totals.moved > 0 and
			.report.totals.away == 0 and (($nodes | split("\n") | map(select(length > 0))) -
			[.report.lanes[].node] == [])' <<<"$report" >/dev/null
	}
	check rolling-report-model "the report is not of a run done with every node and moves, none away: $(cut -c1-300 <<<"$report")" \
		report_ok
	PAGE=$OUT/rolling-report.html
	step rolling-report-html 0 '' -- report "$RID" --html "$PAGE"
	page_ok() {
		local x
		[ -s "$PAGE" ] && ! grep -qi '<script' "$PAGE" || return 1
		for x in $NODES $MOVED; do grep -qF -- "$x" "$PAGE" || return 1; done
	}
	check rolling-report-page "the page is missing, has a <script> or does not name every node and guest moved (${MOVED//$'\n'/ })" \
		page_ok
fi

# ---- down, image rm ------------------------------------------------------------------
yes_down=()
"$PVAGENT" down --help 2>&1 | grep -q -- '--yes' && yes_down=(--yes)
if [ ${#CREATED[@]} = 0 ]; then
	verdict down FAIL "no guest was made to take down"
else
	step down 0 '' -- down "${CREATED[@]}" "${yes_down[@]}"
	for g in "${CREATED[@]}"; do
		grep -qE "^$g +[0-9]+ +pve[0-9] .* deleted " "$LAST_OUT" ||
			verdict "down-$g" FAIL "down did not report $g deleted"
	done
fi
yes_rm=()
"$PVAGENT" image --help 2>&1 | grep -q -- '--yes' && yes_rm=(--yes)
step image-rm 0 '^image debian-13: template VM debian-13-image \(VMID [0-9]+\) removed' -- image rm debian-13 "${yes_rm[@]}"

# ---- the journey as a whole ------------------------------------------------------------
REQ=$E2E_DIR/requests.jsonl
tokid=$(sed -n 's/^token_id = //p' "$CONF")
denied=$(jq -c --arg t "$tokid" 'select(.userid == $t and (.status == 403 or .sent == 403)) |
	"\(.method) \(.path)"' "$REQ" | sort | uniq -c | tr '\n' ' ')
check no-403 "PVE answered the token 403: $denied" test -z "$denied"
root_token=$(jq -r '.tokens[0].id' "$SCENARIO")
check only-setup-token "a request used the scenario's token $root_token" \
	test -z "$(jq -c --arg t "$root_token" 'select(.userid == $t)' "$REQ")"
# (drain's refusal of an HA guest with failback names ha-manager's node
# maintenance beside failback 0, which needs no host: not counted)
host_cmds=$(grep -hE '(^|[ `'"'"'])(pveum|pvesm|pvenode|pveam|qm|pct|ha-manager) [a-z]' \
	"$OUT"/steps/*.out | grep -vE 'HA maintenance first \(ha-manager [^)]*\), or set failback 0' |
	sort -u | head -5 | tr '\n' '|')
check no-host-command "steps asked for commands on the host: $host_cmds" test -z "$host_cmds"
VMIDS1=$(vmids)
check no-guest-left "guests left: $(comm -13 <(echo "$VMIDS0") <(echo "$VMIDS1") | tr '\n' ' ')" \
	test "$VMIDS0" = "$VMIDS1"
VOLS1=$(vols)
check no-volume-left "volumes left: $(comm -13 <(echo "$VOLS0") <(echo "$VOLS1") | tr '\n' ' ')" \
	test "$VOLS0" = "$VOLS1"
claimed=$(sim_state | jq -r '.data.cluster.guests[] | (.config.tags // "") | split(";")[] |
	select(startswith("ip-"))' | tr '\n' ' ')
check no-pool-address "pool addresses still claimed: $claimed" test -z "$claimed"
open=$("$PVAGENT" --json jobs --limit 500 | jq -r '.jobs[] | select(.state == "queued" or
	.state == "running" or .state == "interrupted" or .state == "needs-attention") |
	"\(.id) \(.workflow) \(.subject) \(.state)"' | tr '\n' '|')
check no-open-job "unfinished jobs: $open" test -z "$open"
if [ -n "$DAEMON_PID" ]; then
	kill -TERM "$DAEMON_PID"
	drc=0
	wait "$DAEMON_PID" || drc=$?
	DAEMON_PID=
	check pvagentd-stop "pvagentd exited $drc on SIGTERM: $(tail -3 "$OUT/pvagentd.err")" \
		test "$drc" = 0
	check pvagentd-clean "pvagentd: sanitizer report" \
		bash -c "! grep -qE 'Sanitizer|runtime error:' '$OUT/pvagentd.err'"
fi
echo "$MODEL $MODE/$TTY: $PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
