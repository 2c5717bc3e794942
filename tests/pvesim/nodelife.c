/* nodelife.c - a node's upgrade and reboot over simulated time, the HA
 * recovery of a node lost past the fencing delay, and the /_sim/ control
 * routes that drive them (nodelife.h). */
#include "nodelife.h"

#include "ha_crm.h"
#include "tasks.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *node_kernel(const struct cluster *c, const struct sim_node *n)
{
	if (n->kernel)
		return n->kernel;
	const char *v = node_pve_version(c, n);
	int major = atoi(v);
	const char *dot = strchr(v, '.');
	int minor = dot ? atoi(dot + 1) : 0;
	if (major < 4)
		return "2.6.32-37-pve";
	if (major >= 9)
		return minor >= 1 ? "6.17.2-1-pve" : "6.14.8-2-pve";
	return "6.8.12-9-pve";
}

long long node_uptime_at(const struct cluster *c, const struct sim_node *n, double now)
{
	if (!n->online)
		return 0;
	double since = n->boot_time > 0 ? n->boot_time : c->boot_time;
	return now > since ? (long long)(now - since) : 0;
}

char *pve_full_version(const char *v)
{
	size_t dots = 0;
	for (const char *p = v; *p; p++)
		dots += *p == '.';
	return dots >= 2 || atoi(v) < 4 ? strdup(v) : strprintf("%s.1", v);
}

char *node_pveversion_line(const struct cluster *c, const struct sim_node *n)
{
	char *v = pve_full_version(node_pve_version(c, n));
	char *line = v ? strprintf("pve-manager/%s/%s (running kernel: %s)", v,
				   atoi(v) < 4 ? "40ccc11c" : "2a5fa54a8503f96d",
				   node_kernel(c, n))
		       : NULL;
	free(v);
	return line;
}

int node_upgrade_apply(struct cluster *c, struct sim_node *n, double now)
{
	(void)now;
	struct node_upgrade *u = n->upgrade;
	if (!u || (n->version && strcmp(n->version, u->version) == 0))
		return 0;
	char *v = strdup(u->version), *q = u->qemu ? strdup(u->qemu) : NULL;
	char *k = u->kernel ? strdup(u->kernel) : NULL;
	if (!v || (u->qemu && !q) || (u->kernel && !k)) {
		free(v);
		free(q);
		free(k);
		return -1;
	}
	/* the running kernel stays until the reboot: the one the new version
	 * ships is installed beside it */
	if (!k) {
		struct sim_node probe = {.version = v};
		k = strdup(node_kernel(c, &probe));
	}
	if (!n->kernel)
		n->kernel = strdup(node_kernel(c, n));
	/* a VM running there keeps the machine type it started with */
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		char mb[64];
		if (g->running && !g->machine && strcmp(g->type, "qemu") == 0 &&
		    strcmp(g->node, n->name) == 0)
			g->machine = strdup(guest_running_machine(c, g, mb, sizeof mb));
	}
	free(n->version);
	n->version = v;
	free(n->qemu);
	n->qemu = q;
	free(n->kernel_next);
	n->kernel_next = k;
	return 1;
}

int node_reboot(struct cluster *c, struct sim_node *n, double now, char **err)
{
	if (n->up_at > 0) {
		*err = strprintf("node '%s' is rebooting", n->name);
		return -1;
	}
	if (!n->online) {
		*err = strprintf("node '%s' is offline", n->name);
		return -1;
	}
	/* its tasks end with it, and so do migrations to it */
	for (size_t i = 0; i < c->tasks.n; i++) {
		struct sim_task *t = c->tasks.v[i];
		if (t->started && !t->finished &&
		    (strcmp(t->node, n->name) == 0 || (t->target && strcmp(t->target, n->name) == 0)))
			task_stop(c, t, now);
	}
	n->online = false;
	n->down_at = now;
	n->up_at = now + n->reboot_s;
	n->fence_at = now + HA_FENCE_AFTER;
	/* a clean reboot with the conditional or freeze policy: its LRM
	 * freezes its services and hands its lock back, nothing is fenced */
	n->ha_recovered = c->ha_freeze_on_reboot;
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		if (strcmp(g->node, n->name) == 0 && g->running)
			guest_stopped(c, g);
	}
	return 0;
}

/* The LRM starting g at `at` as the HA stack does (hastart's real task). */
static void ha_start(struct cluster *c, struct sim_guest *g, double at)
{
	struct sim_req req = {.method = "POST", .path = "", .userid = "root@pam",
			      .privs = "all", .now = at};
	if (strcmp(g->type, "qemu") == 0)
		qemu_ha_carry_out(c, &req, g, "start");
	else
		ct_ha_carry_out(c, &req, g, "start");
}

/* The CRM fences lost node n and recovers its HA services elsewhere. */
static void node_fence(struct cluster *c, struct sim_node *n, double at)
{
	n->ha_recovered = true;
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		const char *st = cluster_ha_managed(c, g);
		if (!st || strcmp(g->node, n->name) != 0)
			continue;
		const char *to = ha_recovery_node(c, g);
		char *name = to ? strdup(to) : NULL;
		if (!name)
			continue;
		fprintf(stderr, "pvesim: HA: node '%s' fenced, recovering %s %d to '%s'\n",
			n->name, g->type, g->vmid, name);
		free(g->node);
		g->node = name;
		/* its volumes on local storage stay where they are (a start
		 * there fails, as PVE's does) */
		if (strcmp(st, "started") == 0)
			ha_start(c, g, at);
	}
}

/* Node n is up again: its kernel the installed one, its HA services still
 * there started by its LRM, guests with onboot started. */
static void node_up(struct cluster *c, struct sim_node *n)
{
	double at = n->up_at;
	n->online = true;
	n->boot_time = at;
	n->up_at = 0;
	n->down_at = 0;
	if (n->kernel_next) {
		free(n->kernel);
		n->kernel = n->kernel_next;
		n->kernel_next = NULL;
	}
	/* a node whose fencing waited for quorum is fenced from now on */
	for (size_t i = 0; i < c->nodes.n; i++) {
		struct sim_node *o = c->nodes.v[i];
		if (o->up_at > 0 && !o->ha_recovered && o->fence_at < at)
			o->fence_at = at;
	}
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		if (strcmp(g->node, n->name) != 0 || g->running || guest_is_template(g))
			continue;
		const char *st = cluster_ha_managed(c, g);
		const char *onboot = cfg_str(g->config, "onboot");
		if (st && strcmp(st, "started") == 0)
			ha_start(c, g, at);
		else if (!st && onboot && strcmp(onboot, "1") == 0)
			guest_started(c, g, at);
	}
}

/* More than half of all votes online (corosync votequorum). */
bool cluster_quorate(const struct cluster *c)
{
	long long votes = 0, online = 0;
	for (size_t i = 0; i < c->nodes.n; i++) {
		const struct sim_node *n = c->nodes.v[i];
		votes += n->votes;
		online += n->online ? n->votes : 0;
	}
	return online * 2 > votes;
}

void nodes_advance(struct cluster *c, double now)
{
	for (;;) {
		/* the CRM fences only in a quorate partition */
		bool q = cluster_quorate(c);
		struct sim_node *due = NULL;
		double when = INFINITY;
		bool fence = false;
		for (size_t i = 0; i < c->nodes.n; i++) {
			struct sim_node *n = c->nodes.v[i];
			if (n->up_at <= 0)
				continue;
			double f = n->fence_at;
			if (q && !n->ha_recovered && f < n->up_at && f <= now && f < when) {
				due = n;
				when = f;
				fence = true;
			}
			if (n->up_at <= now && n->up_at < when) {
				due = n;
				when = n->up_at;
				fence = false;
			}
		}
		if (!due)
			break;
		tasks_advance(c, when);
		if (fence)
			node_fence(c, due, when);
		else
			node_up(c, due);
	}
	tasks_advance(c, now);
}

void node_life_state(const struct cluster *c, const struct sim_node *n, double now,
		     json_object *o)
{
	jadd_str(o, "kernel", node_kernel(c, n));
	jadd_str(o, "kernel_installed", n->kernel_next ? n->kernel_next : node_kernel(c, n));
	jadd_str(o, "qemu", node_qemu_version(c, n));
	jadd_int(o, "votes", n->votes);
	jadd_int(o, "uptime", node_uptime_at(c, n, now));
	json_object_object_add(o, "boot_time",
			       json_object_new_double(n->boot_time > 0 ? n->boot_time
								       : c->boot_time));
	json_object_object_add(o, "ha_maintenance", json_object_new_boolean(n->ha_maintenance));
	if (n->up_at > 0)
		json_object_object_add(o, "back_at", json_object_new_double(n->up_at));
	json_object_object_add(o, "upgrade_pending",
			       json_object_new_boolean(n->upgrade &&
						       !(n->version &&
							 strcmp(n->version, n->upgrade->version) == 0)));
}

void node_life_free(struct sim_node *n)
{
	free(n->qemu);
	free(n->kernel);
	free(n->kernel_next);
	if (n->upgrade) {
		free(n->upgrade->version);
		free(n->upgrade->qemu);
		free(n->upgrade->kernel);
		free(n->upgrade);
	}
	json_object_put(n->pve8to9);
}

/* GET /cluster/config/nodes (pve-manager API2/ClusterConfig.pm: corosync's
 * nodelist, values as corosync.conf holds them, with "node" added). */
bool routes_nodelife(struct cluster *c, const struct sim_req *req, struct path_parts *pp,
		     struct sim_resp *r)
{
	char **s = pp->seg;
	if (pp->n != 3 || strcmp(req->method, "GET") != 0 || strcmp(s[0], "cluster") != 0 ||
	    strcmp(s[1], "config") != 0 || strcmp(s[2], "nodes") != 0)
		return false;
	if (!priv_check(req, r, "/", "Sys.Audit"))
		return true;
	json_object *arr = json_object_new_array();
	for (size_t i = 0; arr && i < c->nodes.n; i++) {
		const struct sim_node *n = c->nodes.v[i];
		json_object *o = json_object_new_object();
		char id[24], votes[24];
		if (!o)
			continue;
		snprintf(id, sizeof id, "%zu", i + 1);
		snprintf(votes, sizeof votes, "%d", n->votes);
		jadd_str(o, "node", n->name);
		jadd_str(o, "name", n->name);
		jadd_str(o, "nodeid", id);
		jadd_str(o, "quorum_votes", votes);
		jadd_str(o, "ring0_addr", n->ip);
		json_object_array_add(arr, o);
	}
	if (arr)
		resp_data(r, arr);
	else
		resp_error(r, 500, "out of memory");
	return true;
}

/* ---- /_sim/ control routes --------------------------------------------------- */

static struct sim_node *body_node(struct cluster *c, json_object *body, int *status, char **msg)
{
	json_object *v = NULL;
	const char *name = body && json_object_object_get_ex(body, "node", &v) &&
				   json_object_is_type(v, json_type_string)
			       ? json_object_get_string(v)
			       : NULL;
	struct sim_node *n = name ? cluster_node(c, name) : NULL;
	if (!n) {
		*status = 400;
		*msg = name ? strprintf("unknown node '%s'", name)
			    : strdup("expected {\"node\": NAME, ...}");
	}
	return n;
}

bool cluster_sim_control(struct cluster *c, const char *method, const char *path,
			 json_object *body, double now, json_object **data, int *status,
			 char **msg)
{
	bool post = strcmp(method, "POST") == 0;
	ha_crm_advance(c, now);
	if (strcmp(path, "/_sim/node-commands") == 0 && strcmp(method, "GET") == 0) {
		*data = nodeshell_log(c);
		return true;
	}
	bool upgrade = strcmp(path, "/_sim/node/upgrade") == 0;
	bool reboot = strcmp(path, "/_sim/node/reboot") == 0;
	bool shell = strcmp(path, "/_sim/node/shell") == 0;
	if (!post || (!upgrade && !reboot && !shell))
		return false;
	struct sim_node *n = body_node(c, body, status, msg);
	if (!n)
		return true;
	if (upgrade) {
		int rc = node_upgrade_apply(c, n, now);
		if (rc < 0) {
			*status = 500;
			*msg = strdup("out of memory");
			return true;
		}
		*data = json_object_new_object();
		json_object_object_add(*data, "upgraded", json_object_new_boolean(rc > 0));
		jadd_str(*data, "version", node_pve_version(c, n));
		jadd_str(*data, "qemu", node_qemu_version(c, n));
	} else if (reboot) {
		if (node_reboot(c, n, now, msg) < 0) {
			*status = 409;
			return true;
		}
		*data = json_object_new_object();
		json_object_object_add(*data, "back_at", json_object_new_double(n->up_at));
	} else {
		json_object *argv = NULL;
		if (!json_object_object_get_ex(body, "argv", &argv) ||
		    !json_object_is_type(argv, json_type_array) ||
		    json_object_array_length(argv) == 0) {
			*status = 400;
			*msg = strdup("expected {\"node\": NAME, \"argv\": [COMMAND, ARG...]}");
			return true;
		}
		char *out = NULL;
		int code = nodeshell_run(c, n, argv, now, &out);
		*data = json_object_new_object();
		jadd_int(*data, "exit", code);
		jadd_str(*data, "output", out ? out : "");
		free(out);
	}
	return true;
}

int cluster_node_shell(struct cluster *c, const char *node, json_object *argv, double now,
		       char **out)
{
	struct sim_node *n = node ? cluster_node(c, node) : NULL;
	*out = NULL;
	if (!n || !json_object_is_type(argv, json_type_array) || !json_object_array_length(argv))
		return -1;
	return nodeshell_run(c, n, argv, now, out);
}
