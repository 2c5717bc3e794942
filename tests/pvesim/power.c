/* power.c - POST .../status/{start,stop,shutdown,reboot} as qemu-server
 * and pve-container both answer it: the privilege, the unknown action,
 * the template refusal, and the HA detour (the hastart/hastop request,
 * the resource's state, the LRM carrying it out later). What a direct
 * action does is the guest type's (struct power_kind, routes_qemu.c and
 * routes_ct.c). */
#include "power.h"

#include "tasks.h"

#include <stdio.h>
#include <string.h>

/* An HA power request for g: its hastart/hastop task, which ends at once,
 * and the resource's state set. NULL: out of memory. */
static struct sim_task *ha_power_request(struct cluster *c, const struct sim_req *req,
					 struct sim_guest *g, bool start)
{
	bool vm = strcmp(g->type, "qemu") == 0;
	char id[16], sid[32];
	snprintf(id, sizeof id, "%d", g->vmid);
	snprintf(sid, sizeof sid, "%s:%d", vm ? "vm" : "ct", g->vmid);
	struct sim_task *t = task_new(c, g->node, start ? "hastart" : "hastop", id, req->userid,
				      req->now, 0.5);
	if (!t)
		return NULL;
	t->vmid = 0; /* holds no guest */
	task_log(t, 0.1, "Requesting HA %s for %s %d", start ? "start" : "stop", vm ? "VM" : "CT",
		 g->vmid);
	json_object *e = cluster_ha_entry(c, sid);
	if (e)
		json_object_object_add(e, "state",
				       json_object_new_string(start ? "started" : "stopped"));
	return t;
}

void power_ha_carry_out(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
			const char *action, const struct power_kind *k)
{
	bool start = strcmp(action, "start") == 0;
	if (start ? g->running || guest_is_template(g) : !g->running)
		return;
	struct sim_req hreq = *req;
	hreq.userid = "root@pam";
	hreq.privs = "all";
	hreq.task_fail = NULL;
	hreq.now = req->now + HA_DELAY;
	struct sim_resp tmp = {0};
	k->direct(c, &hreq, g, action, &tmp);
	sim_resp_clear(&tmp);
}

/* An HA-managed guest is not started or stopped by the API call: the
 * request goes to the HA stack ("ha-manager set vm:ID --state started",
 * or a crm-command stop) in a hastart/hastop task that ends as soon as it
 * is queued; the CRM and the node's LRM carry it out HA_DELAY later. */
static void ha_power(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
		     const char *action, const struct power_kind *k, struct sim_resp *r)
{
	struct sim_task *t = ha_power_request(c, req, g, strcmp(action, "start") == 0);
	if (!t) {
		resp_error(r, 500, "out of memory");
		return;
	}
	power_ha_carry_out(c, req, g, action, k);
	task_apply_fault(t, req->task_fail);
	resp_task(r, t);
}

void power_route(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
		 const char *action, const struct power_kind *k, struct sim_resp *r)
{
	if (!vm_priv_check(req, r, g->vmid, "VM.PowerMgmt"))
		return;
	bool start = strcmp(action, "start") == 0;
	bool reboot = strcmp(action, "reboot") == 0;
	if (!start && !reboot && strcmp(action, "stop") != 0 && strcmp(action, "shutdown") != 0) {
		resp_error(r, 501, "Method 'POST %s' not implemented", req->path);
		return;
	}
	if (start && guest_is_template(g)) {
		resp_error(r, 500, "%s", k->template_msg);
		return;
	}
	if (!reboot && cluster_ha_managed(c, g))
		ha_power(c, req, g, action, k, r);
	else
		k->direct(c, req, g, action, r);
}
