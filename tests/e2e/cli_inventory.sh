#!/bin/bash
# cli_inventory.sh - pvagent nodes, list and templates run as a user would
# against the simulator's demo cluster; every request they send must pass
# the simulator's schema check; a wrong pin refuses before any credential
# is sent; exit codes as pvagent(1) EXIT STATUS lists them.
source "$(dirname "$0")/lib/sim.sh"
sim_start tests/pvesim/scenarios/demo.json

out=$(pvagent nodes)
echo "$out"
grep -qE '^pve1 +online' <<<"$out" || fail "nodes: pve1 online missing"
grep -qE '^pve2 +online' <<<"$out" || fail "nodes: pve2 online missing"

# list: from /cluster/resources alone; --long: each config too
out=$(pvagent list)
echo "$out"
grep -qE 'fbsd9-legacy +pve1 +qemu +running +[0-9.]+ [KMGT]?i?B +[^ ]+$' <<<"$out" ||
	fail "list: the legacy FreeBSD 9.0 guest with its memory and tags is missing"
out=$(pvagent list --long)
echo "$out"
grep -qE 'fbsd9-legacy +pve1 +qemu +running +[^ ]+ [^ ]+ +[^ ]+ +ide +e1000' <<<"$out" ||
	fail "list --long: the legacy FreeBSD 9.0 guest on IDE/e1000 is missing"
grep -qE 'freebsd-14-base +pve1 +qemu +template +[^ ]+ [^ ]+ +[^ ]+ +virtio +virtio' <<<"$out" ||
	fail "list --long: the FreeBSD 14 template on virtio is missing"

json=$(pvagent --json list --node pve1)
[ "$(jq -r .result <<<"$json")" = ok ] || fail "list --json: no ok result"
[ "$(jq '[.guests[] | select(.node != "pve1")] | length' <<<"$json")" = 0 ] ||
	fail "list --node pve1 shows other nodes"
[ "$(jq '.guests | length' <<<"$json")" -gt 0 ] || fail "list --json: no guests"

rc=0
pvagent list --node pve9 || rc=$?
[ $rc = 2 ] || fail "list --node pve9: exit $rc, want 2 (an unknown node is a usage error)"

out=$(pvagent templates)
echo "$out"
for t in freebsd-9.0 freebsd-14 ubuntu-9.04 ubuntu-24.04 ubuntu-24.04-ct debian-7-openvz; do
	grep -qE "^$t " <<<"$out" || fail "templates: $t missing"
done

# No template anywhere: the listing is empty and says where it looked.
mkdir "$E2E_DIR/no-templates"
sed "s|^templates = .*|templates = $E2E_DIR/no-templates|" "$E2E_DIR/pvagent.conf" >"$E2E_DIR/empty.conf"
chmod 600 "$E2E_DIR/empty.conf"
err=$(pvagent -c "$E2E_DIR/empty.conf" templates 2>&1 >/dev/null) || fail "templates with none: exit $?"
grep -qF "no templates found; searched: $E2E_DIR/no-templates (set [paths] templates in $E2E_DIR/empty.conf)" <<<"$err" ||
	fail "empty templates listing does not say where it looked: $err"

rc=0
pvagent frobnicate 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "unknown command: exit $rc, want 2"

# Every request so far passed the schema check.
bad=$(requests_failing_schema)
[ -z "$bad" ] || fail "requests refused by the schema check: $bad"

# A wrong pin: exit 4, and no request reached the API at all.
before=$(wc -l <"$E2E_DIR/requests.jsonl")
zero=$(printf '00:%.0s' $(seq 31))00
sed -i "s/^fingerprint = .*/fingerprint = $zero/" "$E2E_DIR/pvagent.conf"
rc=0
err=$(pvagent nodes 2>&1) || rc=$?
echo "$err"
[ $rc = 4 ] || fail "wrong fingerprint: exit $rc, want 4"
grep -qi 'fingerprint' <<<"$err" || fail "wrong fingerprint: message does not say so"
grep -q "$(cat "$E2E_DIR/state/token.secret")" <<<"$err" && fail "the token secret was printed"
after=$(wc -l <"$E2E_DIR/requests.jsonl")
[ "$before" = "$after" ] || fail "a request was sent despite the pin mismatch"
echo "cli_inventory: ok"
