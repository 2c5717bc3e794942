#!/bin/bash
# pool.sh - benchmark of a pool address in `pvagent up` on a cluster of
# 1,000 guests (the bench scenario with 1,000 more VMs, 100 of them holding
# an address of the pool): the HTTP requests of `up --no-start` with and
# without `--pool`, task requests excluded, and what the pool adds (target
# at most 2: the address is read from the listing's tags, not from each
# guest's config).
source "$(dirname "$0")/../e2e/lib/sim.sh"
scen=$E2E_DIR/pool1000.json
jq '.guests += [range(1000) | {vmid: (1000 + .), node: "pve1", type: "qemu",
	config: ({name: "g\(.)", memory: "512", cores: 1} +
		 (if . < 100 then {tags: "ip-10.8.\((. / 250) | floor).\(. % 250 + 1)",
				    ipconfig0: "ip=10.8.\((. / 250) | floor).\(. % 250 + 1)/16"}
		  else {} end))}]' tests/bench/bench.json >"$scen"
sim_start "$scen" --time-scale 1000
printf '[pool "lan"]\ncidr = 10.8.0.0/16\ngateway = 10.8.255.254\nrange = 10.8.0.1-10.8.3.250\n' \
	>>"$E2E_DIR/pvagent.conf"
log=$E2E_DIR/requests.jsonl
T=tests/bench/bench.tmpl
count() {
	jq -s '[.[] | select((.path | test("/tasks/.*/(status|log)$")) | not)] | length' "$log"
}
: >"$log"
pvagent -q up plain1 -t $T --no-start >/dev/null || fail "up without a pool failed"
plain=$(count)
: >"$log"
pvagent -q --json up pooled1 -t $T --no-start --pool lan >"$E2E_DIR/pooled.json" ||
	fail "up --pool failed"
pooled=$(count)
addr=$(jq -r 'select(.command == "up") | .guests[0].address' "$E2E_DIR/pooled.json")
[ "$addr" = 10.8.0.101 ] || fail "up --pool gave '$addr', not the lowest free 10.8.0.101"
added=$((pooled - plain))
printf 'up --no-start on 1,000 guests: %d HTTP requests without a pool, %d with --pool (%s)\n' \
	"$plain" "$pooled" "$addr"
printf 'requests a pool address adds to up: %d (target <= 2) %s\n' "$added" \
	"$([ "$added" -le 2 ] && echo ok || echo ABOVE TARGET)"
[ "$added" -le 2 ]
