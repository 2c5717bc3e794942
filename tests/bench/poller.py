#!/usr/bin/python3
"""poller.py - make bench: the rollout of up.sh done the way the Terraform
providers, Ansible and proxmoxer's task helper wait for a task, polling its
status once a second, with Debian's python3-proxmoxer. Per guest it sends
the same API calls as `pvagent up --no-start` (the listing that finds the
template and checks the name, nextid and clone, again on "already exists",
the listing after the clone, the config read and the digest-checked
change; a refused clone is sent again after pvagent's random pause), so
that the two differ only in how they wait.

    poller.py URL TOKEN_ID SECRET_FILE CA_FILE TEMPLATE PARALLEL NAME...

Prints nothing; exits 1 on the first failure.
"""
import random
import sys
import threading
import time
import urllib.parse

from proxmoxer import ProxmoxAPI
from proxmoxer.core import ResourceException


def client(url, token_id, secret, ca_file):
    user, token = token_id.split("!", 1)
    host = urllib.parse.urlsplit(url).netloc
    api = ProxmoxAPI(host, user=user, token_name=token, token_value=secret,
                     verify_ssl=ca_file, timeout=30)
    api.version.get()  # pvagent reads the version once per client
    return api


def wait_task(api, node, upid):
    """Poll the status once a second until the task stops."""
    while True:
        time.sleep(1)
        st = api.nodes(node).tasks(upid).status.get()
        if st["status"] == "stopped":
            if st.get("exitstatus") != "OK":
                raise RuntimeError("task %s: %s" % (upid, st.get("exitstatus")))
            return


def up(api, template, name):
    vms = api.cluster.resources.get(type="vm")
    src = next(v for v in vms if v.get("name") == template)
    if any(v.get("name") == name for v in vms):
        raise RuntimeError("%s exists" % name)
    node = src["node"]
    for attempt in range(32):
        newid = int(api.cluster.nextid.get())
        try:
            upid = api.nodes(node).qemu(src["vmid"]).clone.post(
                newid=newid, name=name, full=1, storage="local-lvm")
            break
        except ResourceException as e:
            # "VM N already exists": another worker took the id (the
            # message is in the body, which proxmoxer 1.2 drops)
            if e.status_code != 500:
                raise
            # break lockstep with the other workers, as pvagent does
            time.sleep(random.randrange(50) / 1000.0 * (attempt + 1))
    else:
        raise RuntimeError("no free VMID for %s" % name)
    wait_task(api, node, upid)
    api.cluster.resources.get(type="vm")
    conf = api.nodes(node).qemu(newid).config.get()
    api.nodes(node).qemu(newid).config.put(cores=2, digest=conf["digest"])


def main():
    url, token_id, secret_file, ca_file, template, parallel = sys.argv[1:7]
    names = sys.argv[7:]
    with open(secret_file) as f:
        secret = f.read().strip()
    lock = threading.Lock()
    failed = []

    def worker():
        api = client(url, token_id, secret, ca_file)
        while True:
            with lock:
                if not names or failed:
                    return
                name = names.pop(0)
            try:
                up(api, template, name)
            except Exception as e:  # report and stop the rollout
                with lock:
                    failed.append("%s: %s" % (name, e))

    threads = [threading.Thread(target=worker) for _ in range(int(parallel))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        print("poller: " + failed[0], file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
