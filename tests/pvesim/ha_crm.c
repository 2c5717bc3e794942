/* ha_crm.c - the simulator's HA manager (ha_crm.h): the CRM's rounds on
 * the simulated clock, select_service_node, the CRM's migrations with a
 * container's shutdown and start, and HA maintenance of a node. Follows
 * pve-ha-manager 5.2 (src/PVE/HA/Manager.pm next_state_started,
 * select_service_node; Rules/NodeAffinity.pm get_node_affinity;
 * Resources/PVEVM.pm and PVECT.pm migrate). */
#include "ha_crm.h"

#include "guestnet.h"
#include "nodelife.h"
#include "power.h"
#include "tasks.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the CRM's service status --------------------------------------------- */

/* The CRM's own record of sid ({state, target, maintenance_node}), made
 * when missing; NULL out of memory. */
static json_object *service(struct cluster *c, const char *sid)
{
	json_object *sd = NULL;
	if (!c->ha_ss && !(c->ha_ss = json_object_new_object()))
		return NULL;
	if (json_object_object_get_ex(c->ha_ss, sid, &sd))
		return sd;
	if (!(sd = json_object_new_object()))
		return NULL;
	jadd_str(sd, "state", "started");
	json_object_object_add(c->ha_ss, sid, sd);
	return sd;
}

static const char *service_str(const struct cluster *c, const char *sid, const char *key)
{
	json_object *sd = NULL;
	return c->ha_ss && json_object_object_get_ex(c->ha_ss, sid, &sd) ? cfg_str(sd, key) : NULL;
}

static void guest_sid(const struct sim_guest *g, char *sid, size_t n)
{
	snprintf(sid, n, "%s:%d", strcmp(g->type, "qemu") == 0 ? "vm" : "ct", g->vmid);
}

/* The service is placed: state started, no target. */
static void service_settled(struct cluster *c, const struct sim_guest *g)
{
	char sid[32];
	guest_sid(g, sid, sizeof sid);
	json_object *sd = service(c, sid);
	if (sd) {
		jadd_str(sd, "state", "started");
		json_object_object_del(sd, "target");
	}
}

/* ---- select_service_node ---------------------------------------------------- */

/* Can the CRM place a guest on node n (online, its LRM not in maintenance)? */
static bool usable(const struct sim_node *n)
{
	return n && n->online && !n->ha_maintenance;
}

/* The enabled node-affinity rule naming sid (PVE allows one), or NULL. */
static json_object *node_rule(const struct cluster *c, const char *sid)
{
	size_t n = c->major >= 9 && c->ha_rules ? json_object_array_length(c->ha_rules) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(c->ha_rules, i), *v = NULL;
		const char *type = cfg_str(r, "type");
		if (type && strcmp(type, "node-affinity") == 0 && cfg_str(r, "nodes") &&
		    !(json_object_object_get_ex(r, "disable", &v) && json_object_get_int(v)) &&
		    ha_list_has(cfg_str(r, "resources"), sid))
			return r;
	}
	return NULL;
}

#define NOT_ALLOWED (-2L)

/* Node n's priority under rule r (get_node_affinity: the rule's nodes with
 * theirs, default 0; a non-strict rule adds every other node at -1), or
 * NOT_ALLOWED when a strict rule does not name it. No rule: 0 for every
 * node. */
static long priority(json_object *r, const char *node)
{
	if (!r)
		return 0;
	json_object *v = NULL;
	bool strict = json_object_object_get_ex(r, "strict", &v) && json_object_get_int(v);
	char *copy = strdup(cfg_str(r, "nodes")), *save = NULL;
	long pr = strict ? NOT_ALLOWED : -1;
	for (char *x = copy ? strtok_r(copy, ",", &save) : NULL; x; x = strtok_r(NULL, ",", &save)) {
		long p = node_item_priority(x); /* cuts x at its ':' */
		if (strcmp(x, node) == 0)
			pr = p;
	}
	free(copy);
	return pr;
}

/* The HA guests the CRM counts on node (the basic scheduler's usage). */
static size_t node_services(const struct cluster *c, const char *node)
{
	size_t n = 0, k = c->ha ? json_object_array_length(c->ha) : 0;
	for (size_t i = 0; i < k; i++) {
		const char *sid = cfg_str(json_object_array_get_idx(c->ha, i), "sid");
		const struct sim_guest *g = sid && strlen(sid) > 3 ? cluster_guest(c, atoi(sid + 3))
								   : NULL;
		n += g && strcmp(g->node, node) == 0 && cluster_ha_managed(c, g);
	}
	return n;
}

/* select_service_node for g: with recovering (node preference
 * "best-score", recover_fenced_service) its current node is not kept; else
 * ("none", the rounds) it stays where it may unless failback or its
 * maintenance fallback says otherwise. The node (the current one possible),
 * or NULL when no node qualifies. */
static const char *select_node(const struct cluster *c, const struct sim_guest *g,
			       bool recovering)
{
	char sid[32];
	guest_sid(g, sid, sizeof sid);
	json_object *e = cluster_ha_entry(c, sid), *fbv = NULL, *r = node_rule(c, sid);
	if (!e || !cluster_ha_managed(c, g))
		return NULL;
	bool failback = !json_object_object_get_ex(e, "failback", &fbv) || json_object_get_int(fbv);
	/* positive resource affinity: it stays with its partners (the CRM
	 * moves them together; not modelled beyond that), and negative
	 * partners' nodes are out */
	json_object *dep = NULL, *block = NULL;
	ha_motion_info(c, sid, &dep, &block);
	if (dep && json_object_array_length(dep) > 0)
		failback = false;
	/* the allowed nodes and among them the preferred (highest priority) */
	long top = NOT_ALLOWED;
	for (size_t i = 0; i < c->nodes.n; i++) {
		const struct sim_node *n = c->nodes.v[i];
		long p = priority(r, n->name);
		if (usable(n) && p > top)
			top = p;
	}
	const char *cur = g->node, *fallback = service_str(c, sid, "maintenance_node");
	const struct sim_node *cn = cluster_node(c, cur);
	bool cur_allowed = usable(cn) && priority(r, cur) != NOT_ALLOWED;
	const char *pick = NULL;
	if (top == NOT_ALLOWED) {
		pick = NULL; /* nowhere to go */
	} else if (!recovering && !failback && cur_allowed) {
		pick = cur;
	} else {
		/* preferred: the top priority, no negative partner there */
		size_t best_load = 0;
		bool fb_ok = false, cur_ok = false;
		for (size_t i = 0; i < c->nodes.n; i++) {
			const struct sim_node *n = c->nodes.v[i];
			json_object *neg = NULL;
			if (!usable(n) || priority(r, n->name) != top ||
			    (block && json_object_object_get_ex(block, n->name, &neg)))
				continue;
			fb_ok |= fallback && strcmp(n->name, fallback) == 0;
			cur_ok |= !recovering && strcmp(n->name, cur) == 0;
			size_t load = node_services(c, n->name);
			if (!pick || load < best_load ||
			    (load == best_load && strcmp(n->name, pick) < 0)) {
				pick = n->name;
				best_load = load;
			}
		}
		if (fb_ok)
			pick = fallback;
		else if (cur_ok)
			pick = cur;
	}
	json_object_put(dep);
	json_object_put(block);
	return pick;
}

const char *ha_select_node(const struct cluster *c, const struct sim_guest *g)
{
	const char *pick = c->ha_disarm ? NULL : select_node(c, g, false);
	return pick && strcmp(pick, g->node) != 0 ? pick : NULL;
}

const char *ha_recovery_node(const struct cluster *c, const struct sim_guest *g)
{
	const char *pick = select_node(c, g, true);
	return pick && strcmp(pick, g->node) != 0 ? pick : NULL;
}

/* ---- the CRM's migrations ----------------------------------------------------- */

static const struct sim_req crm_req = {
	.method = "POST", .path = "", .userid = "root@pam", .privs = "all",
};

/* The guest's own address is unreachable from `from` to `to`. */
static void down(struct cluster *c, const struct sim_guest *g, double from, double to)
{
	if (g->listen_port && g->address)
		guestnet_down(c->net, g->address, g->listen_port, from, to);
}

/* The LRM on the container's node starts it at `at` (vzstart, root@pam);
 * the service is settled once it runs. */
static void lrm_started(struct cluster *c, struct sim_task *t, bool ok)
{
	task_end_start(c, t, ok);
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (g)
		service_settled(c, g);
}

static void lrm_start(struct cluster *c, struct sim_guest *g, double at)
{
	char id[16];
	snprintf(id, sizeof id, "%d", g->vmid);
	struct sim_task *t = task_new(c, g->node, "vzstart", id, "root@pam", at, 1.0);
	if (!t) {
		service_settled(c, g);
		return;
	}
	t->vmid = g->vmid;
	t->on_end = lrm_started;
}

int ha_crm_migrate(struct cluster *c, struct sim_guest *g, const char *target, double at)
{
	char sid[32];
	guest_sid(g, sid, sizeof sid);
	bool vm = strcmp(g->type, "qemu") == 0;
	struct sim_req req = crm_req;
	req.now = at;
	struct sim_resp tmp = {0};
	struct sim_task *t = NULL;
	bool was_running = g->running;
	if (vm) {
		t = qemu_start_migration(c, &req, g, target, g->running, true, NULL, at, &tmp);
	} else {
		/* PVECT::migrate: shut down (its LRM's vzshutdown, HA's 60 s
		 * timeout), then an offline migration; the CRM starts it on the
		 * target afterwards */
		struct sim_task *sd = NULL;
		double mig_at = at;
		if (was_running) {
			char id[16];
			snprintf(id, sizeof id, "%d", g->vmid);
			sd = task_new(c, g->node, "vzshutdown", id, "root@pam", at, 2.0);
			if (sd) {
				sd->vmid = g->vmid;
				sd->on_end = task_end_stop;
				mig_at = at + sd->duration;
			}
		}
		/* planned now, as stopped by then */
		g->running = false;
		t = ct_start_migration(c, &req, g, target, false, false, mig_at, &tmp);
		g->running = was_running;
		if (!t && sd)
			task_discard(c, sd);
	}
	sim_resp_clear(&tmp);
	if (!t)
		return -1;
	if (t->args) {
		json_object_object_add(t->args, "ha_crm", json_object_new_boolean(1));
		if (!vm && was_running) {
			json_object_object_add(t->args, "ha_start", json_object_new_boolean(1));
			/* down from its shutdown until the target's LRM started it */
			down(c, g, at, t->start + t->duration + HA_DELAY + 1.0);
		}
	}
	json_object *sd = service(c, sid);
	if (sd) {
		jadd_str(sd, "state", vm ? "migrate" : "relocate");
		jadd_str(sd, "target", target);
	}
	return 0;
}

void ha_crm_migration_end(struct cluster *c, struct sim_task *t, struct sim_guest *g, bool ok)
{
	(void)ok; /* where it is now: on the target, or still on the source */
	json_object *v = NULL;
	if (t->args && json_object_object_get_ex(t->args, "ha_start", &v) &&
	    json_object_get_boolean(v))
		lrm_start(c, g, t->end + HA_DELAY);
	else
		service_settled(c, g);
}

/* ---- the rounds ------------------------------------------------------------- */

/* One round at `at`: every started HA-managed guest that is not being moved
 * or locked goes where select_service_node puts it (next_state_started). */
static void crm_round(struct cluster *c, double at)
{
	size_t n = c->ha ? json_object_array_length(c->ha) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(c->ha, i);
		const char *sid = cfg_str(e, "sid"), *st = cfg_str(e, "state");
		struct sim_guest *g = sid && strlen(sid) > 3 ? cluster_guest(c, atoi(sid + 3)) : NULL;
		if (!g || !cluster_ha_managed(c, g) || (st && strcmp(st, "started") != 0) ||
		    guest_lock(g) || guest_is_template(g))
			continue;
		const char *state = service_str(c, sid, "state");
		if (state && strcmp(state, "started") != 0)
			continue; /* being moved */
		const struct sim_node *cn = cluster_node(c, g->node);
		if (!cn || !cn->online)
			continue; /* fencing and recovery: nodelife.c */
		json_object *sd = service(c, sid);
		/* leaving a node in maintenance: remember it to come back */
		if (sd && cn->ha_maintenance && !cfg_str(sd, "maintenance_node"))
			jadd_str(sd, "maintenance_node", g->node);
		const char *fallback = sd ? cfg_str(sd, "maintenance_node") : NULL;
		const char *pick = ha_select_node(c, g);
		char *to = pick ? strdup(pick) : NULL; /* pick may be the fallback */
		if (to && fallback && (strcmp(to, fallback) == 0 || strcmp(g->node, fallback) != 0))
			json_object_object_del(sd, "maintenance_node"); /* back, or dropped */
		else if (!pick && fallback && strcmp(g->node, fallback) == 0 && usable(cn))
			json_object_object_del(sd, "maintenance_node"); /* stale */
		if (to)
			ha_crm_migrate(c, g, to, at);
		free(to);
	}
}

void ha_crm_advance(struct cluster *c, double now)
{
	if (!c->ha_next_round) /* rounds on a grid from the nodes' boot */
		c->ha_next_round = c->boot_time +
				   HA_CRM_PERIOD * (double)(long long)((now - c->boot_time) /
								       HA_CRM_PERIOD + 1);
	while (c->ha_next_round <= now) {
		double at = c->ha_next_round;
		nodes_advance(c, at);
		if (!c->ha_disarm && c->ha && json_object_array_length(c->ha) > 0)
			crm_round(c, at);
		c->ha_next_round = at + HA_CRM_PERIOD;
	}
	nodes_advance(c, now);
}
