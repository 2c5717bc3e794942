#!/bin/bash
# image.sh - benchmark of `pvagent image build` against the simulator: the
# HTTP requests of one build (checksum given, image served on loopback),
# task status and log reads apart.
source "$(dirname "$0")/../e2e/lib/sim.sh"
sim_start tests/pvesim/scenarios/images.json --time-scale 100
img=$E2E_DIR/www
mkdir -p "$img"
python3 -c 'import struct,sys; h=bytearray(512); h[0:4]=b"QFI\xfb"; h[7]=3; h[24:32]=struct.pack(">Q",2<<30); sys.stdout.buffer.write(h)' >"$img/d.qcow2"
sum=$(sha256sum "$img/d.qcow2" | cut -d' ' -f1)
python3 -m http.server 0 --bind 127.0.0.1 --directory "$img" >"$E2E_DIR/http.out" 2>&1 &
http=$!
trap 'kill $http 2>/dev/null; sim_cleanup' EXIT
for _ in $(seq 50); do
	port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$E2E_DIR/http.out" | head -1)
	[ -n "$port" ] && break
	read -r -t 0.1 <> <(:) || true
done
[ -n "$port" ] || fail "the file server did not start"
log=$E2E_DIR/requests.jsonl
: >"$log"
pvagent -q image build debian-13 --url "http://127.0.0.1:$port/d.qcow2" --checksum "sha256:$sum" \
	>/dev/null || fail "image build failed"
all=$(jq -s '[.[] | select((.path | test("/tasks/.*/(status|log)$")) | not)] | length' "$log")
tasks=$(jq -s '[.[] | select(.path | test("/tasks/.*/(status|log)$"))] | length' "$log")
printf 'HTTP requests per image build: %d (and %d task status/log reads for its 5 tasks)\n' \
	"$all" "$tasks"
jq -r 'select((.path | test("/tasks/")) | not) | "  \(.method) \(.path)"' "$log"
