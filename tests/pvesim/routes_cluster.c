/* routes_cluster.c - cluster-wide and node routes: /version, /nodes,
 * /nodes/{node}/status, /cluster/status, /cluster/resources,
 * /cluster/nextid, node storage status and content, HA resources and
 * status, POST /nodes/{node}/migrateall and GET /access/permissions. */
#include "acl.h"
#include "cluster.h"
#include "nodelife.h"
#include "tasks.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- /version ----------------------------------------------------------- */
/* {version, release, repoid} of PVE version ver ("8.4", "9.1.2", "3.4"),
 * as GET /version and GET /nodes/{node}/version answer. */
static void route_version(const char *ver, struct sim_resp *r)
{
	json_object *o = json_object_new_object();
	if (!o) {
		resp_error(r, 500, "out of memory");
		return;
	}
	char *version, *release;
	size_t dots = 0;
	int major = atoi(ver);
	for (const char *p = ver; *p; p++)
		dots += *p == '.';
	if (major < 4) {
		/* PVE 3.x: "3.4-16" */
		version = strchr(ver, '-') ? strdup(ver) : strprintf("%s-16", ver);
		const char *dash = strchr(version ? version : "", '-');
		release = strdup(dash ? dash + 1 : "16");
	} else {
		version = dots >= 2 ? strdup(ver) : strprintf("%s.1", ver);
		const char *d2 = strchr(ver, '.');
		d2 = d2 ? strchr(d2 + 1, '.') : NULL;
		release = d2 ? strndup(ver, (size_t)(d2 - ver)) : strdup(ver);
	}
	jadd_str(o, "version", version);
	jadd_str(o, "release", release);
	jadd_str(o, "repoid", major < 4 ? "40ccc11c" : "2a5fa54a8503f96d");
	free(version);
	free(release);
	resp_data(r, o);
}

/* ---- nodes -------------------------------------------------------------- */

/* A node's entry; its figures only with stats (PVE: Sys.Audit on
 * /nodes/NODE, extract_node_stats). */
static json_object *node_entry(struct cluster *c, struct sim_node *n,
			       double now, bool resource, bool stats)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	char *id = strprintf("node/%s", n->name);
	jadd_str(o, "id", id);
	free(id);
	jadd_str(o, "type", "node");
	jadd_str(o, "node", n->name);
	jadd_str(o, "status", n->online ? "online" : "offline");
	if (!n->online || !stats)
		return o;
	uint64_t used = node_mem_used(c, n->name);
	json_object_object_add(o, "cpu", json_object_new_double(0.02));
	jadd_int(o, "maxcpu", n->cpus);
	json_object_object_add(o, "mem", json_object_new_uint64(used + 1 * GiB));
	json_object_object_add(o, "maxmem", json_object_new_uint64(n->memory));
	jadd_int(o, "uptime", node_uptime_at(c, n, now));
	json_object_object_add(o, "disk", json_object_new_uint64(8 * GiB));
	json_object_object_add(o, "maxdisk", json_object_new_uint64(100 * GiB));
	jadd_str(o, "level", "");
	if (!resource)
		jadd_str(o, "ssl_fingerprint",
			"AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:"
			"AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99");
	return o;
}

static void route_nodes(struct cluster *c, const struct sim_req *req,
			struct sim_resp *r)
{
	json_object *arr = json_object_new_array();
	for (size_t i = 0; arr && i < c->nodes.n; i++) {
		struct sim_node *n = c->nodes.v[i];
		char *np = strprintf("/nodes/%s", n->name);
		json_object *o = node_entry(c, n, req->now, false, np && priv_has(req, np, "Sys.Audit"));
		free(np);
		if (o)
			json_object_array_add(arr, o);
	}
	resp_data(r, arr);
}

/* GET /nodes/{node}/status: Sys.Audit on /nodes/{node} (pve-manager
 * PVE/API2/Nodes.pm 356-358; its /version, 283: any user) */
static void route_node_status(struct cluster *c, const struct sim_req *req,
			      struct sim_node *n, struct sim_resp *r)
{
	char *path = strprintf("/nodes/%s", n->name);
	bool ok = path && priv_check(req, r, path, "Sys.Audit");
	free(path);
	if (!ok)
		return;
	json_object *o = json_object_new_object();
	if (!o) {
		resp_error(r, 500, "out of memory");
		return;
	}
	uint64_t used = node_mem_used(c, n->name) + 1 * GiB;
	json_object *mem = json_object_new_object();
	if (mem) {
		json_object_object_add(mem, "total", json_object_new_uint64(n->memory));
		json_object_object_add(mem, "used", json_object_new_uint64(used));
		json_object_object_add(
			mem, "free",
			json_object_new_uint64(n->memory > used ? n->memory - used : 0));
	}
	json_object_object_add(o, "memory", mem);
	json_object_object_add(o, "cpu", json_object_new_double(0.02));
	jadd_int(o, "uptime", node_uptime_at(c, n, req->now));
	json_object *ci = json_object_new_object();
	if (ci) {
		jadd_int(ci, "cpus", n->cpus);
		jadd_int(ci, "cores", n->cpus);
		jadd_int(ci, "sockets", 1);
		jadd_str(ci, "model", "QEMU Virtual CPU (pvesim)");
	}
	json_object_object_add(o, "cpuinfo", ci);
	const char *nv = node_pve_version(c, n);
	char *pv = atoi(nv) < 4 ? strprintf("pve-manager/%s/40ccc11c", nv)
				: strprintf("pve-manager/%s/2a5fa54a8503f96d", nv);
	jadd_str(o, "pveversion", pv);
	free(pv);
	char *kv = c->major < 4 ? strprintf("Linux %s", node_kernel(c, n))
				: strprintf("Linux %s #1 SMP PREEMPT_DYNAMIC", node_kernel(c, n));
	jadd_str(o, "kversion", kv);
	free(kv);
	if (atoi(nv) >= 8) {
		/* pve-manager 8+: the booted kernel (uname), changed by a reboot */
		json_object *ck = json_object_new_object();
		const char *k = node_kernel(c, n);
		size_t kl = strlen(k);
		char *kver = strprintf("#1 SMP PREEMPT_DYNAMIC PMX %.*s", (int)(kl > 4 ? kl - 4 : kl), k);
		if (ck) {
			jadd_str(ck, "sysname", "Linux");
			jadd_str(ck, "release", k);
			jadd_str(ck, "version", kver);
			jadd_str(ck, "machine", "x86_64");
		}
		free(kver);
		json_object_object_add(o, "current-kernel", ck);
	}
	json_object *la = json_object_new_array();
	for (int i = 0; la && i < 3; i++)
		json_object_array_add(la, json_object_new_string("0.10"));
	json_object_object_add(o, "loadavg", la);
	resp_data(r, o);
}

/* GET /cluster/status: Sys.Audit on / (pve-manager PVE/API2/Cluster.pm
 * 868-874, get_status: check => ['perm', '/', ['Sys.Audit']]; 14a22df) */
static void route_cluster_status(struct cluster *c, const struct sim_req *req,
				 struct sim_resp *r)
{
	if (!priv_check(req, r, "/", "Sys.Audit"))
		return;
	json_object *arr = json_object_new_array();
	json_object *cl = json_object_new_object();
	if (!arr || !cl) {
		json_object_put(arr);
		json_object_put(cl);
		resp_error(r, 500, "out of memory");
		return;
	}

	jadd_str(cl, "type", "cluster");
	jadd_str(cl, "id", "cluster");
	jadd_str(cl, "name", c->cluster_name);
	jadd_int(cl, "nodes", (long long)c->nodes.n);
	jadd_int(cl, "quorate", cluster_quorate(c));
	jadd_int(cl, "version", (long long)c->nodes.n + 1);
	json_object_array_add(arr, cl);
	for (size_t i = 0; i < c->nodes.n; i++) {
		struct sim_node *n = c->nodes.v[i];
		json_object *o = json_object_new_object();
		if (!o)
			continue;
		char *id = strprintf("node/%s", n->name);
		jadd_str(o, "type", "node");
		jadd_str(o, "id", id);
		free(id);
		jadd_str(o, "name", n->name);
		jadd_int(o, "nodeid", (long long)i + 1);
		jadd_int(o, "online", n->online);
		jadd_int(o, "local", i == 0);
		jadd_str(o, "ip", n->ip);
		jadd_str(o, "level", "");
		json_object_array_add(arr, o);
	}
	resp_data(r, arr);
}

static uint64_t guest_disk_size(const struct cluster *c,
				const struct sim_guest *g)
{
	uint64_t total = 0;
	json_object_object_foreach(g->config, k, v)
	{
		const char *val = json_object_get_string(v);
		if (!is_drive_key(k) || !val || drive_is_cdrom(val) ||
		    drive_is_cloudinit(val))
			continue;
		char *sz = prop_get(val, "size");
		uint64_t b = 0;
		if (sz && parse_size(sz, &b) == 0)
			total += b;
		free(sz);
	}
	(void)c;
	return total;
}

static json_object *vm_resource(const struct cluster *c,
				const struct sim_guest *g, double now)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	char *id = strprintf("%s/%d", g->type, g->vmid);
	jadd_str(o, "id", id);
	free(id);
	jadd_str(o, "type", g->type);
	jadd_int(o, "vmid", g->vmid);
	/* name and status as the last status update saw them */
	if (g->res_seen && g->res_name)
		jadd_str(o, "name", g->res_name);
	jadd_str(o, "node", g->node);
	jadd_str(o, "status", !g->res_seen ? "unknown" : g->res_running ? "running" : "stopped");
	jadd_int(o, "template", guest_is_template(g) ? 1 : 0);
	uint64_t mem = guest_memory(g);
	json_object_object_add(o, "maxmem", json_object_new_uint64(mem));
	json_object_object_add(o, "mem", json_object_new_uint64(g->running ? mem / 2 : 0));
	json_object_object_add(o, "maxdisk",
			       json_object_new_uint64(guest_disk_size(c, g)));
	jadd_int(o, "disk", 0);
	const char *cores = cfg_str(g->config, "cores");
	jadd_int(o, "maxcpu", cores ? atoi(cores) : 1);
	json_object_object_add(o, "cpu", json_object_new_double(g->running ? 0.01 : 0));
	jadd_int(o, "uptime", g->running ? (long long)(now - g->started_at) : 0);
	jadd_int(o, "netin", 0);
	jadd_int(o, "netout", 0);
	jadd_int(o, "diskread", 0);
	jadd_int(o, "diskwrite", 0);
	const char *lock = guest_lock(g);
	if (lock)
		jadd_str(o, "lock", lock);
	/* read from the configs at once (get_guest_config_properties), not
	 * from the status daemon's lagging view */
	const char *tags = cfg_str(g->config, "tags");
	if (tags && *tags)
		jadd_str(o, "tags", tags);
	const char *hs = cluster_ha_state(c, g);
	if (hs)
		jadd_str(o, "hastate", hs);
	return o;
}

static json_object *storage_resource(const struct cluster *c,
				     const struct sim_storage *s,
				     const char *node)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	char *id = strprintf("storage/%s/%s", node, s->id);
	jadd_str(o, "id", id);
	free(id);
	jadd_str(o, "type", "storage");
	jadd_str(o, "storage", s->id);
	jadd_str(o, "node", node);
	jadd_str(o, "status", "available");
	jadd_str(o, "content", s->content);
	jadd_str(o, "plugintype", s->type);
	jadd_int(o, "shared", s->shared);
	json_object_object_add(o, "disk",
			       json_object_new_uint64(storage_used(c, s, node)));
	json_object_object_add(o, "maxdisk", json_object_new_uint64(s->size));
	return o;
}

/* Datastore.Audit or Datastore.AllocateSpace on /storage/SID, as PVE's
 * storage lists and reads ask. */
static bool storage_visible(const struct sim_req *req, const char *sid)
{
	char *path = strprintf("/storage/%s", sid);
	bool ok = path && (priv_has(req, path, "Datastore.Audit") ||
			   priv_has(req, path, "Datastore.AllocateSpace"));
	free(path);
	return ok;
}

static void route_resources(struct cluster *c, const struct sim_req *req,
			    struct sim_resp *r)
{
	const char *type = param_str(req, "type");
	json_object *arr = json_object_new_array();
	if (!arr) {
		resp_error(r, 500, "out of memory");
		return;
	}
	if (!type || strcmp(type, "vm") == 0) {
		for (size_t i = 0; i < c->guests.n; i++) {
			if (!vm_priv_has(req, ((struct sim_guest *)c->guests.v[i])->vmid,
					 "VM.Audit"))
				continue;
			json_object *o = vm_resource(c, c->guests.v[i], req->now);
			if (o)
				json_object_array_add(arr, o);
		}
	}
	if (!type || strcmp(type, "node") == 0) {
		for (size_t i = 0; i < c->nodes.n; i++) {
			struct sim_node *n = c->nodes.v[i];
			char *np = strprintf("/nodes/%s", n->name);
			json_object *o = node_entry(c, n, req->now, true,
						    np && priv_has(req, np, "Sys.Audit"));
			free(np);
			if (o)
				json_object_array_add(arr, o);
		}
	}
	if (!type || strcmp(type, "storage") == 0) {
		for (size_t i = 0; i < c->nodes.n; i++) {
			struct sim_node *n = c->nodes.v[i];
			for (size_t j = 0; n->online && j < c->storages.n; j++) {
				struct sim_storage *s = c->storages.v[j];
				char *sp = strprintf("/storage/%s", s->id);
				bool audit = sp && priv_has(req, sp, "Datastore.Audit");
				free(sp);
				if (!storage_on_node(s, n->name) || !audit)
					continue;
				json_object *o = storage_resource(c, s, n->name);
				if (o)
					json_object_array_add(arr, o);
			}
		}
	}
	resp_data(r, arr);
}

static void route_nextid(struct cluster *c, const struct sim_req *req,
			 struct sim_resp *r)
{
	const char *want = param_str(req, "vmid");
	if (want) {
		long long id = atoll(want);
		if (cluster_guest(c, (int)id)) {
			resp_param_error(r, "vmid", "VM %lld already exists", id);
			return;
		}
		/* PVE echoes the parameter (a string) */
		resp_data(r, json_object_new_string(want));
		return;
	}
	for (int id = 100; id < 1000000; id++) {
		if (!cluster_guest(c, id)) {
			char buf[16];
			snprintf(buf, sizeof(buf), "%d", id);
			resp_data(r, json_object_new_string(buf));
			return;
		}
	}
	resp_error(r, 500, "unable to get any free VMID in range [100, 1000000]");
}

/* ---- storage ------------------------------------------------------------ */

static json_object *storage_status(struct cluster *c, struct sim_storage *s,
				   const char *node, bool with_id)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	uint64_t used = storage_used(c, s, node);
	if (with_id)
		jadd_str(o, "storage", s->id);
	jadd_str(o, "type", s->type);
	jadd_str(o, "content", s->content);
	jadd_int(o, "shared", s->shared);
	jadd_int(o, "active", 1);
	jadd_int(o, "enabled", 1);
	json_object_object_add(o, "total", json_object_new_uint64(s->size));
	json_object_object_add(o, "used", json_object_new_uint64(used));
	json_object_object_add(
		o, "avail", json_object_new_uint64(s->size > used ? s->size - used : 0));
	json_object_object_add(
		o, "used_fraction",
		json_object_new_double(s->size ? (double)used / (double)s->size : 0));
	return o;
}

static void route_storage_index(struct cluster *c, const struct sim_req *req,
				const char *node, struct sim_resp *r)
{
	const char *content = param_str(req, "content");
	const char *only = param_str(req, "storage");
	const char *target = param_str(req, "target");
	json_object *arr = json_object_new_array();
	for (size_t i = 0; arr && i < c->storages.n; i++) {
		struct sim_storage *s = c->storages.v[i];
		if (!storage_on_node(s, node) || !storage_visible(req, s->id))
			continue;
		if (only && strcmp(only, s->id) != 0)
			continue;
		if (target && strcmp(target, node) != 0 &&
		    (!s->shared || !storage_on_node(s, target)))
			continue;
		if (content) {
			bool any = false;
			char *dup = strdup(content), *save = NULL;
			for (char *t = dup ? strtok_r(dup, ",", &save) : NULL; t && !any;
			     t = strtok_r(NULL, ",", &save))
				any = storage_has_content(s, t);
			free(dup);
			if (!any)
				continue;
		}
		json_object *o = storage_status(c, s, node, true);
		if (o)
			json_object_array_add(arr, o);
	}
	resp_data(r, arr);
}

static struct sim_storage *route_storage(struct cluster *c, const char *sid,
					 const char *node, struct sim_resp *r)
{
	struct sim_storage *s = cluster_storage(c, sid);
	if (!s) {
		resp_error(r, 500, "storage '%s' does not exist", sid);
		return NULL;
	}
	if (!storage_on_node(s, node)) {
		resp_error(r, 500, "storage '%s' is not available on node '%s'", sid,
			   node);
		return NULL;
	}
	return s;
}

static void route_storage_content(struct cluster *c, const struct sim_req *req,
				  struct sim_storage *s, const char *node,
				  struct sim_resp *r)
{
	const char *content = param_str(req, "content");
	long long vmid = param_int(req, "vmid", 0);
	json_object *arr = json_object_new_array();
	for (size_t i = 0; arr && i < c->volumes.n; i++) {
		struct sim_volume *v = c->volumes.v[i];
		if (strcmp(v->storage, s->id) != 0)
			continue;
		if (v->node && strcmp(v->node, node) != 0)
			continue;
		if (content && strcmp(content, v->content) != 0)
			continue;
		if (vmid && v->vmid != vmid)
			continue;
		json_object *o = json_object_new_object();
		if (!o)
			continue;
		jadd_str(o, "volid", v->volid);
		jadd_str(o, "content", v->content);
		jadd_str(o, "format", v->format);
		json_object_object_add(o, "size", json_object_new_uint64(v->size));
		if (v->vmid)
			jadd_int(o, "vmid", v->vmid);
		jadd_int(o, "ctime", (long long)c->boot_time);
		json_object_array_add(arr, o);
	}
	resp_data(r, arr);
}

/* GET /storage (pve-storage API2/Storage/Config.pm index): storage.cfg's
 * entries the identity may see (Datastore.Audit or .AllocateSpace on
 * /storage/ID), each with its configuration. */
static void route_storage_config(struct cluster *c, const struct sim_req *req,
				 struct sim_resp *r)
{
	json_object *arr = json_object_new_array();
	for (size_t i = 0; arr && i < c->storages.n; i++) {
		const struct sim_storage *st = c->storages.v[i];
		char *path = strprintf("/storage/%s", st->id);
		bool may = path && (priv_has(req, path, "Datastore.Audit") ||
				    priv_has(req, path, "Datastore.AllocateSpace"));
		free(path);
		json_object *o = may ? json_object_new_object() : NULL;
		if (!o)
			continue;
		jadd_str(o, "storage", st->id);
		jadd_str(o, "type", st->type);
		jadd_str(o, "content", st->content);
		jadd_int(o, "shared", st->shared);
		jadd_str(o, "digest", "0c4ddb1b2a4d5e1e7c07e1d4c2f0d3b8a6c5e4f3");
		if (st->volume_chain)
			jadd_int(o, "snapshot-as-volume-chain", 1);
		json_object_array_add(arr, o);
	}
	resp_data(r, arr);
}

/* ---- HA ----------------------------------------------------------------- */
static void route_ha_resources(struct cluster *c, struct sim_resp *r)
{
	json_object *arr = json_object_new_array();
	size_t n = json_object_array_length(c->ha);
	for (size_t i = 0; arr && i < n; i++) {
		json_object *e = json_object_array_get_idx(c->ha, i), *copy = NULL;
		if (json_object_deep_copy(e, &copy, NULL) < 0)
			continue;
		const char *sid = cfg_str(copy, "sid");
		jadd_str(copy, "type", sid && sid[0] == 'v' ? "vm" : "ct");
		json_object_array_add(arr, copy);
	}
	resp_data(r, arr);
}

static void route_ha_status(struct cluster *c, const struct sim_req *req,
			    struct sim_resp *r)
{
	json_object *arr = json_object_new_array();
	if (!arr) {
		resp_error(r, 500, "out of memory");
		return;
	}
	const char *master = c->nodes.n ? ((struct sim_node *)c->nodes.v[0])->name
					: "";
	json_object *q = json_object_new_object();
	if (q) {
		jadd_str(q, "id", "quorum");
		jadd_str(q, "type", "quorum");
		jadd_str(q, "node", master);
		jadd_str(q, "status", "OK");
		jadd_int(q, "quorate", 1);
		json_object_array_add(arr, q);
	}
	bool active = json_object_array_length(c->ha) > 0;
	if (active) {
		json_object *m = json_object_new_object();
		if (m) {
			char *st = strprintf("%s (active, %lld)%s%s", master, (long long)req->now,
					     c->ha_disarm ? " - disarmed, resource mode: " : "",
					     c->ha_disarm ? c->ha_disarm : "");
			jadd_str(m, "id", "master");
			jadd_str(m, "type", "master");
			jadd_str(m, "node", master);
			jadd_str(m, "status", st);
			free(st);
			json_object_array_add(arr, m);
		}
		for (size_t i = 0; i < c->nodes.n; i++) {
			struct sim_node *n = c->nodes.v[i];
			json_object *l = json_object_new_object();
			if (!l)
				continue;
			char *id = strprintf("lrm:%s", n->name);
			char *st = strprintf("%s (%s, %lld)", n->name,
					     !n->online ? "old timestamp - dead?"
					     : n->ha_maintenance ? "maintenance mode" : "active",
					     (long long)req->now);
			jadd_str(l, "id", id);
			jadd_str(l, "type", "lrm");
			jadd_str(l, "node", n->name);
			jadd_str(l, "status", st);
			free(id);
			free(st);
			json_object_array_add(arr, l);
		}
	}
	/* PVE 9 (pve-ha-manager API2/HA/Status.pm): the fencing entry, armed
	 * while the CRM is active, disarmed on request */
	json_object *fe = c->major >= 9 ? json_object_new_object() : NULL;
	if (fe) {
		const char *armed = c->ha_disarm ? "disarmed" : active ? "armed" : "standby";
		char *st = c->ha_disarm ? strprintf("disarmed, resource mode: %s (CRM watchdog "
						    "released)", c->ha_disarm)
				       : strprintf("%s (CRM watchdog %s)", armed,
						   active ? "active" : "standby");
		jadd_str(fe, "id", "fencing");
		jadd_str(fe, "type", "fencing");
		jadd_str(fe, "node", master);
		jadd_str(fe, "status", st);
		jadd_str(fe, "armed-state", armed);
		if (c->ha_disarm)
			jadd_str(fe, "resource_mode", c->ha_disarm);
		free(st);
		json_object_array_add(arr, fe);
	}
	size_t n = json_object_array_length(c->ha);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(c->ha, i);
		const char *sid = cfg_str(e, "sid");
		const char *state = cfg_str(e, "state");
		struct sim_guest *g = sid ? cluster_guest(c, atoi(sid + 3)) : NULL;
		json_object *o = json_object_new_object();
		if (!o || !g) {
			json_object_put(o);
			continue;
		}
		const char *lock = guest_lock(g);
		const char *crm = lock && strcmp(lock, "migrate") == 0 ? "migrate"
				  : g->running				 ? "started"
									 : "stopped";
		char *id = strprintf("service:%s", sid);
		char *st = strprintf("%s (%s, %s)", sid, g->node, crm);
		jadd_str(o, "id", id);
		jadd_str(o, "type", "service");
		jadd_str(o, "sid", sid);
		jadd_str(o, "node", g->node);
		jadd_str(o, "state", state);
		jadd_str(o, "request_state", state);
		jadd_str(o, "crm_state", crm);
		jadd_str(o, "status", st);
		free(id);
		free(st);
		json_object_array_add(arr, o);
	}
	resp_data(r, arr);
}


/* POST /cluster/ha/resources (pve-ha-manager): put a guest under HA; a
 * VM asked "started" that is not running is started by the LRM later. */
static void route_ha_add(struct cluster *c, const struct sim_req *req, struct sim_resp *r)
{
	if (!priv_check(req, r, "/", "Sys.Console"))
		return;
	const char *sid_in = param_str(req, "sid");
	const char *state = param_str(req, "state");
	if (!sid_in) {
		resp_param_error(r, "sid", "property is missing and it is not optional");
		return;
	}
	bool ct = strncmp(sid_in, "ct:", 3) == 0;
	const char *num = strchr(sid_in, ':') ? strchr(sid_in, ':') + 1 : sid_in;
	int vmid = atoi(num);
	char sid[32];
	snprintf(sid, sizeof sid, "%s:%d", ct ? "ct" : "vm", vmid);
	struct sim_guest *g = cluster_guest(c, vmid);
	if (!g || strcmp(g->type, ct ? "lxc" : "qemu") != 0) {
		resp_error(r, 500, "resource '%s' does not exist in cluster", sid);
		return;
	}
	if (cluster_ha_entry(c, sid)) {
		resp_error(r, 500, "resource ID '%s' already defined", sid);
		return;
	}
	json_object *e = json_object_new_object();
	if (!e) {
		resp_error(r, 500, "out of memory");
		return;
	}
	jadd_str(e, "sid", sid);
	jadd_str(e, "state", state ? state : "started");
	json_object_array_add(c->ha, e);
	if (!ct && (!state || strcmp(state, "started") == 0))
		qemu_ha_carry_out(c, req, g, "start");
	resp_data(r, NULL);
}

static void route_ha_migrate(struct cluster *c, const struct sim_req *req,
			     const char *sid, struct sim_resp *r)
{
	if (!priv_check(req, r, "/", "Sys.Console"))
		return;
	const char *target = param_str(req, "node");
	json_object *e = cluster_ha_entry(c, sid);
	if (!e) {
		resp_error(r, 500, "service '%s' is not managed by HA", sid);
		return;
	}
	if (!target) {
		resp_param_error(r, "node", "property is missing and it is not optional");
		return;
	}
	struct sim_node *tn = cluster_node(c, target);
	if (!tn) {
		resp_error(r, 500, "no such cluster node '%s'", target);
		return;
	}
	struct sim_guest *g = cluster_guest(c, atoi(sid + 3));
	if (!g) {
		resp_error(r, 500, "service '%s' is not managed by HA", sid);
		return;
	}
	if (strcmp(g->node, target) == 0) {
		resp_data(r, NULL);
		return;
	}
	/* the CRM carries the request out a moment later as root@pam */
	struct sim_req hreq = *req;
	hreq.userid = "root@pam";
	hreq.privs = "all";
	struct sim_resp tmp = {0};
	struct sim_task *t =
		strcmp(g->type, "qemu") == 0
			? qemu_start_migration(c, &hreq, g, target, g->running, true,
					       NULL, req->now + 2.0, &tmp)
			: ct_start_migration(c, &hreq, g, target, true, false,
					     req->now + 2.0, &tmp);
	sim_resp_clear(&tmp);
	(void)t;
	resp_data(r, NULL);
}

/* ---- migrateall --------------------------------------------------------- */
static bool vm_in_list(const char *list, int vmid)
{
	if (!list)
		return true;
	const char *p = list;
	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			return false;
		if (v == vmid)
			return true;
		p = end;
		while (*p == ',' || *p == ';' || *p == ' ' || *p == '\0') {
			if (!*p)
				return false;
			p++;
		}
	}
	return false;
}

static void route_migrateall(struct cluster *c, const struct sim_req *req,
			     struct sim_node *n, struct sim_resp *r)
{
	const char *target = param_str(req, "target");
	const char *vms = param_str(req, "vms");
	long long maxworkers = param_int(req, "maxworkers", 0);
	bool with_local = param_bool(req, "with-local-disks", false);
	if (!target) {
		resp_param_error(r, "target", "property is missing and it is not optional");
		return;
	}
	if (!priv_check(req, r, "/", "VM.Migrate"))
		return;
	if (maxworkers <= 0) {
		resp_error(r, 500,
			   "either 'maxworkers' parameter or max_workers in "
			   "datacenter.cfg must be set!");
		return;
	}
	struct sim_node *tn = cluster_node(c, target);
	if (!tn) {
		resp_error(r, 500, "no such cluster node '%s'", target);
		return;
	}
	if (strcmp(target, n->name) == 0) {
		resp_param_error(r, "target", "target is local node.");
		return;
	}
	/* plan: each guest takes the earliest free worker */
	double *free_at = calloc((size_t)maxworkers, sizeof(double));
	struct sim_task *parent =
		free_at ? task_new(c, n->name, "migrateall", "", req->userid,
				   req->now, 0.5)
			: NULL;
	if (!parent) {
		free(free_at);
		resp_error(r, 500, "out of memory");
		return;
	}
	for (long long w = 0; w < maxworkers; w++)
		free_at[w] = req->now + 0.5;
	double last = req->now + 0.5;
	int skipped = 0;
	struct ptrvec todo = {0};
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		if (strcmp(g->node, n->name) == 0 && vm_in_list(vms, g->vmid))
			ptrvec_push(&todo, g);
	}
	for (size_t i = 0; i < todo.n; i++) {
		struct sim_guest *g = todo.v[i];
		long long w = 0;
		for (long long k = 1; k < maxworkers; k++)
			if (free_at[k] < free_at[w])
				w = k;
		double start = free_at[w];
		struct sim_resp tmp = {0};
		struct sim_task *t = NULL;
		if (strcmp(g->type, "qemu") == 0) {
			/* Nodes.pm: running guests with local disks need
			 * with-local-disks, else they are skipped with a warning */
			json_object *pre = qemu_migrate_precondition(c, g, target);
			json_object *ld = pre ? json_object_object_get(pre, "local_disks") : NULL;
			struct sbuf vols = {0};
			for (size_t j = 0; ld && j < json_object_array_length(ld); j++) {
				json_object *e = json_object_array_get_idx(ld, j);
				if (json_object_get_boolean(json_object_object_get(e, "cdrom")))
					continue;
				sbuf_addf(&vols, "%s%s", vols.len ? ", " : "",
					  json_object_get_string(json_object_object_get(e, "volid")));
			}
			json_object_put(pre);
			if (g->running && !with_local && vols.len) {
				task_log(parent, start - req->now,
					 "skip VM %d - precondition check failed:", g->vmid);
				task_log(parent, start - req->now, "  Has local disks: %s",
					 sbuf_str(&vols));
				sbuf_free(&vols);
				skipped++;
				continue;
			}
			sbuf_free(&vols);
			task_log(parent, start - req->now, "Migrating VM %d", g->vmid);
			t = qemu_start_migration(c, req, g, target, g->running,
						 with_local, NULL, start, &tmp);
		} else {
			task_log(parent, start - req->now, "Migrating CT %d", g->vmid);
			t = ct_start_migration(c, req, g, target, g->running, false,
					       start, &tmp);
		}
		if (!t) {
			task_log(parent, start - req->now,
				 "skip %s %d - precondition check failed: %s",
				 strcmp(g->type, "qemu") == 0 ? "VM" : "CT", g->vmid,
				 tmp.message ? tmp.message : "error");
			skipped++;
		} else {
			t->parent = parent;
			parent->children_running++;
			free_at[w] = t->end;
			if (t->end > last)
				last = t->end;
		}
		sim_resp_clear(&tmp);
	}
	ptrvec_free(&todo);
	free(free_at);
	parent->duration = last - req->now + 0.5;
	parent->end = parent->start + parent->duration;
	parent->warnings = skipped;
	task_log(parent, parent->duration, "All jobs finished, used %lld workers in total.",
		 maxworkers);
	task_apply_fault(parent, req->task_fail);
	r->upid = strdup(parent->upid);
	resp_data(r, json_object_new_string(parent->upid));
}

/* GET /access/permissions (pve-access-control 8): {PATH: {PRIV: 1}} of the
 * caller, or of userid (the caller itself, or a token of the caller), on
 * path; without path on "/" and on /vms, /storage, /nodes and /sdn (the
 * model keeps no list of defined paths). The propagate flags are all 1. */
static void route_permissions(const struct sim_req *req, struct sim_resp *r)
{
	const char *uid = param_str(req, "userid"), *path = param_str(req, "path");
	const char *me = req->userid;
	size_t ul = strcspn(me, "!");
	if (uid && strcmp(uid, me) != 0 &&
	    !(strncmp(uid, me, ul) == 0 && uid[ul] == '!' && !strchr(me, '!')) &&
	    !priv_check(req, r, "/access", "Sys.Audit"))
		return;
	struct sim_req as = *req;
	as.userid = uid ? uid : me;
	json_object *out = json_object_new_object();
	static const char *const tops[] = {"/", "/vms", "/storage", "/nodes", "/sdn", NULL};
	const char *one[] = {path, NULL};
	const char *const *paths = path ? one : tops;
	for (size_t i = 0; out && paths[i]; i++) {
		json_object *privs = json_object_new_object();
		for (int k = 0; privs && acl_priv_name(k); k++)
			if (priv_has(&as, paths[i], acl_priv_name(k)))
				json_object_object_add(privs, acl_priv_name(k), json_object_new_int(1));
		if (privs && (path || json_object_object_length(privs)))
			json_object_object_add(out, paths[i], privs);
		else
			json_object_put(privs);
	}
	if (!out)
		resp_error(r, 500, "out of memory");
	else
		resp_data(r, out);
}

bool routes_cluster(struct cluster *c, const struct sim_req *req,
		    struct path_parts *pp, struct sim_resp *r)
{
	char **s = pp->seg;
	size_t n = pp->n;
	bool get = strcmp(req->method, "GET") == 0;
	if (n == 1 && get && strcmp(s[0], "version") == 0) {
		/* the node the request reached: the first */
		route_version(node_pve_version(c, c->nodes.n ? c->nodes.v[0] : NULL), r);
		return true;
	}
	if (n == 1 && get && strcmp(s[0], "nodes") == 0) {
		route_nodes(c, req, r);
		return true;
	}
	if (n == 1 && get && strcmp(s[0], "storage") == 0) {
		route_storage_config(c, req, r);
		return true;
	}
	if (n == 2 && get && strcmp(s[0], "access") == 0 && strcmp(s[1], "permissions") == 0) {
		route_permissions(req, r);
		return true;
	}
	if (n >= 2 && strcmp(s[0], "cluster") == 0) {
		if (n == 2 && get && strcmp(s[1], "status") == 0) {
			route_cluster_status(c, req, r);
			return true;
		}
		if (n == 2 && get && strcmp(s[1], "resources") == 0) {
			route_resources(c, req, r);
			return true;
		}
		if (n == 2 && get && strcmp(s[1], "nextid") == 0) {
			route_nextid(c, req, r);
			return true;
		}
		if (n >= 3 && strcmp(s[1], "ha") == 0) {
			if (n == 3 && strcmp(req->method, "POST") == 0 &&
			    strcmp(s[2], "resources") == 0) {
				route_ha_add(c, req, r);
				return true;
			}
			/* pve-ha-manager src/PVE/API2/HA/Resources.pm 58-60 (index:
			 * Sys.Audit on /; b71218f) */
			if (n == 3 && get && strcmp(s[2], "resources") == 0) {
				if (priv_check(req, r, "/", "Sys.Audit"))
					route_ha_resources(c, r);
				return true;
			}
			if (n == 4 && get && strcmp(s[2], "resources") == 0) {
				json_object *e = cluster_ha_entry(c, s[3]), *copy = NULL;
				if (!priv_check(req, r, "/", "Sys.Audit"))
					return true;
				if (!e) {
					resp_error(r, 500, "no such resource '%s'", s[3]);
					return true;
				}
				if (json_object_deep_copy(e, &copy, NULL) < 0)
					resp_error(r, 500, "out of memory");
				else
					resp_data(r, copy);
				return true;
			}
			if (n == 5 && strcmp(req->method, "POST") == 0 &&
			    strcmp(s[2], "resources") == 0 &&
			    (strcmp(s[4], "migrate") == 0 ||
			     strcmp(s[4], "relocate") == 0)) {
				route_ha_migrate(c, req, s[3], r);
				return true;
			}
			/* PVE 9 (pve-ha-manager API2/HA/Rules.pm index: Sys.Audit on /) */
			if (n == 3 && get && strcmp(s[2], "rules") == 0 && c->major >= 9) {
				json_object *copy = NULL;
				if (!priv_check(req, r, "/", "Sys.Audit"))
					return true;
				if (json_object_deep_copy(c->ha_rules, &copy, NULL) < 0)
					resp_error(r, 500, "out of memory");
				else
					resp_data(r, copy);
				return true;
			}
			/* pve-ha-manager src/PVE/API2/HA/Status.pm 70-72 (status:
			 * Sys.Audit on /) */
			if (n == 4 && get && strcmp(s[2], "status") == 0 &&
			    strcmp(s[3], "current") == 0) {
				if (priv_check(req, r, "/", "Sys.Audit"))
					route_ha_status(c, req, r);
				return true;
			}
		}
		return false;
	}
	if (n < 2 || strcmp(s[0], "nodes") != 0)
		return false;
	if (n == 2 && get) {
		if (!route_node(c, s[1], r))
			return true;
		const char *const subs[] = {"qemu", c->major < 4 ? "openvz" : "lxc",
				      "storage", "tasks", "status", "migrateall", "version"};
		resp_data(r, subdir_index("name", subs, 7));
		return true;
	}
	if (n == 3 && get && strcmp(s[2], "version") == 0) {
		struct sim_node *nd = route_node(c, s[1], r);
		if (nd)
			route_version(node_pve_version(c, nd), r);
		return true;
	}
	if (n == 3 && get && strcmp(s[2], "status") == 0) {
		struct sim_node *nd = route_node(c, s[1], r);
		if (nd)
			route_node_status(c, req, nd, r);
		return true;
	}
	if (n == 3 && strcmp(req->method, "POST") == 0 &&
	    strcmp(s[2], "migrateall") == 0) {
		struct sim_node *nd = route_node(c, s[1], r);
		if (nd)
			route_migrateall(c, req, nd, r);
		return true;
	}
	if (n >= 3 && strcmp(s[2], "storage") == 0 && get) {
		struct sim_node *nd = route_node(c, s[1], r);
		if (!nd)
			return true;
		if (n == 3) {
			route_storage_index(c, req, nd->name, r);
			return true;
		}
		struct sim_storage *st = route_storage(c, s[3], nd->name, r);
		if (!st)
			return true;
		char *path = strprintf("/storage/%s", st->id);
		static const char *const any[] = {"Datastore.Audit", "Datastore.AllocateSpace",
						  NULL};
		bool ok = path && priv_check_any(req, r, path, any);
		free(path);
		if (!ok)
			return true;
		if (n == 4) {
			const char *const subs[] = {"content", "status"};
			resp_data(r, subdir_index("subdir", subs, 2));
			return true;
		}
		if (n == 5 && strcmp(s[4], "status") == 0) {
			resp_data(r, storage_status(c, st, nd->name, false));
			return true;
		}
		if (n == 5 && strcmp(s[4], "content") == 0) {
			route_storage_content(c, req, st, nd->name, r);
			return true;
		}
	}
	return false;
}
