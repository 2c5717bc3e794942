/* routes_qemu.c - /nodes/{node}/qemu routes: list, create, clone, config
 * (GET/PUT/POST), pending, status (current/start/shutdown/stop/reboot; what
 * VMs and containers share of the power routes is power.c's), resize,
 * template, snapshots, guest agent, destroy. Migration lives in
 * cluster_migrate.c. */
#include "cluster.h"
#include "cluster_config.h"
#include "power.h"
#include "qemu_guest.h"
#include "scenario.h"
#include "tasks.h"
#include "util.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYNC_LIMIT 30.0       /* seconds before pveproxy gives up: 596 */
#define FULL_CLONE_RATE (200.0 * MiB)
#define START_SECS 1.0
#define SHUTDOWN_SECS 2.0
#define STOP_SECS 0.5

static char *vmid_str(int vmid)
{
	return strprintf("%d", vmid);
}

/* New task for a guest; id is the vmid. */
static struct sim_task *guest_task(struct cluster *c, const struct sim_req *req,
				   const struct sim_guest *g, const char *type,
				   double duration)
{
	char *id = vmid_str(g->vmid);
	struct sim_task *t =
		id ? task_new(c, g->node, type, id, req->userid, req->now, duration)
		   : NULL;
	free(id);
	if (t)
		t->vmid = g->vmid;
	return t;
}

static uint64_t disk_size(const char *value)
{
	char *sz = prop_get(value, "size");
	uint64_t b = 0;
	if (sz && parse_size(sz, &b) < 0)
		b = 0;
	free(sz);
	return b;
}

/* ---- list --------------------------------------------------------------- */
static json_object *qemu_list_entry(const struct sim_guest *g, double now)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	jadd_int(o, "vmid", g->vmid);
	char nbuf[32];
	jadd_str(o, "name", guest_status_name(g, nbuf, sizeof nbuf));
	jadd_str(o, "status", g->running ? "running" : "stopped");
	uint64_t mem = guest_memory(g);
	json_object_object_add(o, "maxmem", json_object_new_uint64(mem));
	json_object_object_add(o, "mem", json_object_new_uint64(g->running ? mem / 2 : 0));
	uint64_t disk = 0;
	json_object_object_foreach(g->config, k, v)
	{
		const char *val = json_object_get_string(v);
		if (is_drive_key(k) && val && !drive_is_cdrom(val) &&
		    !drive_is_cloudinit(val))
			disk += disk_size(val);
	}
	json_object_object_add(o, "maxdisk", json_object_new_uint64(disk));
	jadd_int(o, "disk", 0);
	const char *cores = cfg_str(g->config, "cores");
	jadd_int(o, "cpus", cores ? atoi(cores) : 1);
	json_object_object_add(o, "cpu", json_object_new_double(g->running ? 0.01 : 0));
	jadd_int(o, "uptime", g->running ? (long long)(now - g->started_at) : 0);
	if (guest_is_template(g))
		jadd_int(o, "template", 1);
	if (guest_lock(g))
		jadd_str(o, "lock", guest_lock(g));
	if (g->running)
		jadd_int(o, "pid", g->qemu ? qemu_guest_pid(g->qemu) : 10000 + g->vmid % 50000);
	jadd_int(o, "netin", 0);
	jadd_int(o, "netout", 0);
	jadd_int(o, "diskread", 0);
	jadd_int(o, "diskwrite", 0);
	return o;
}

static void route_list(struct cluster *c, const struct sim_req *req,
		       const char *node, struct sim_resp *r)
{
	json_object *arr = json_object_new_array();
	for (size_t i = 0; arr && i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		if (strcmp(g->type, "qemu") != 0 || strcmp(g->node, node) != 0 ||
		    !vm_priv_has(req, g->vmid, "VM.Audit"))
			continue;
		json_object *o = qemu_list_entry(g, req->now);
		if (o)
			json_object_array_add(arr, o);
	}
	resp_data(r, arr);
}

/* ---- create ------------------------------------------------------------- */
static bool create_meta(const char *k)
{
	static const char *const meta[] = {
		"node",	   "vmid",  "start", "pool", "storage", "archive", "force",
		"unique", "bwlimit", "live-restore", "import-working-storage", NULL};
	for (size_t i = 0; meta[i]; i++)
		if (strcmp(k, meta[i]) == 0)
			return true;
	return false;
}

static void create_end(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (!g)
		return;
	if (!ok) {
		/* remove the half-made guest and its volumes */
		cluster_destroy_guest(c, g->vmid);
		return;
	}
	guest_set_lock(g, NULL);
	json_object *start = NULL;
	if (t->args && json_object_object_get_ex(t->args, "start", &start) &&
	    json_object_get_boolean(start)) {
		struct sim_node *n = cluster_node(c, g->node);
		if (n && node_mem_free(c, n) >= guest_memory(g))
			guest_started(c, g, t->end);
	}
}

/* Make a guest record (not yet in the cluster). */
static void route_create(struct cluster *c, const struct sim_req *req,
			 const char *node, struct sim_resp *r)
{
	long long vmid = param_int(req, "vmid", 0);
	if (vmid < 100) {
		resp_param_error(r, "vmid", "property is missing and it is not optional");
		return;
	}
	if (!vm_priv_check(req, r, (int)vmid, "VM.Allocate"))
		return;
	json_object_object_foreach(req->params, ck, cv)
	{
		(void)cv;
		if (!create_meta(ck) && (config_key_check(req, "qemu", ck, false, r) < 0 ||
					 config_key_perm(req, "qemu", (int)vmid, ck, r) < 0))
			return;
	}
	json_object_object_foreach(req->params, pk, pv)
	{
		if (!create_meta(pk) && config_value_perm(req, r, "qemu", (int)vmid, pk,
							  json_object_get_string(pv), true) < 0)
			return;
	}
	/* qemu-server create_vm: assert_tag_permissions */
	if (param_str(req, "tags") &&
	    cluster_tag_check(c, req, r, (int)vmid, NULL, param_str(req, "tags")) < 0)
		return;
	struct sim_guest *old = cluster_guest(c, (int)vmid);
	if (old) {
		resp_error(r, 500, "unable to create VM %lld - %s %lld already exists on node '%s'",
			   vmid, strcmp(old->type, "qemu") == 0 ? "VM" : "CT", vmid,
			   old->node);
		return;
	}
	struct sim_guest *g = guest_new((int)vmid, "qemu", node);
	if (!g || ptrvec_push(&c->guests, g) < 0) {
		guest_free(g);
		resp_error(r, 500, "out of memory");
		return;
	}
	double cost = 0;
	struct sbuf log = {0};
	int rc = 0;
	json_object_object_foreach(req->params, k, v)
	{
		if (rc < 0 || create_meta(k))
			continue;
		const char *val = json_object_get_string(v);
		char *out = NULL;
		if (is_drive_key(k))
			rc = config_alloc_drive(c, req, g, k, val ? val : "", &out, &cost,
						&log, r);
		else if (strncmp(k, "net", 3) == 0 && isdigit((unsigned char)k[3]))
			out = config_net_with_mac(g, k, val ? val : "");
		else
			out = strdup(val ? val : "");
		if (rc == 0 && !out) {
			resp_error(r, 500, "out of memory");
			rc = -1;
		}
		if (rc == 0)
			json_object_object_add(g->config, k, json_object_new_string(out));
		free(out);
	}
	if (rc == 0 && !cfg_str(g->config, "smbios1")) {
		char *uuid = strprintf("uuid=5b0c6ae4-%04x-4d3c-9d0e-%012x",
				       (unsigned)(vmid & 0xffff), (unsigned)vmid);
		if (uuid)
			json_object_object_add(g->config, "smbios1",
					       json_object_new_string(uuid));
		free(uuid);
	}
	struct sim_task *t = NULL;
	if (rc == 0) {
		guest_set_lock(g, "create");
		t = guest_task(c, req, g, "qmcreate", 0.5 + cost);
		if (!t) {
			resp_error(r, 500, "out of memory");
			rc = -1;
		}
	}
	if (rc < 0 || !t) {
		cluster_destroy_guest(c, (int)vmid);
		sbuf_free(&log);
		return;
	}
	const char *p = sbuf_str(&log);
	double at = 0.1;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		task_log(t, at, "%.*s", (int)n, p);
		at += 0.1;
		p += n + (e ? 1 : 0);
	}
	sbuf_free(&log);
	t->on_end = create_end;
	t->args = json_object_new_object();
	if (t->args)
		json_object_object_add(t->args, "start",
				       json_object_new_boolean(param_bool(req, "start", false)));
	task_apply_fault(t, req->task_fail);
	resp_task(r, t);
}

/* ---- clone -------------------------------------------------------------- */
static void clone_end(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->newid);
	if (!g)
		return;
	if (ok) {
		guest_set_lock(g, NULL);
		return;
	}
	cluster_destroy_guest(c, g->vmid);
}

static bool linked_clone_ok(const struct sim_storage *s, const char *volid)
{
	if (strcmp(s->type, "lvm") == 0 || strcmp(s->type, "cifs") == 0)
		return false;
	if (strcmp(s->type, "dir") == 0 || strcmp(s->type, "nfs") == 0)
		return strstr(volid, ".qcow2") != NULL;
	return true;
}

/* Linked clone volid of base volid for newid on storage s. */
static char *linked_volid(struct cluster *c, const struct sim_storage *s,
			  const char *base, int newid)
{
	const char *name = strchr(base, ':') + 1;
	const char *slash = strrchr(name, '/');
	for (int n = 0; n < 1000; n++) {
		char *v;
		if (strcmp(s->type, "dir") == 0 || strcmp(s->type, "nfs") == 0)
			v = strprintf("%s:%.*s/%d/vm-%d-disk-%d.qcow2", s->id,
				      (int)strlen(name), name, newid, newid, n);
		else if (strcmp(s->type, "rbd") == 0)
			v = strprintf("%s:%s/vm-%d-disk-%d", s->id,
				      slash ? slash + 1 : name, newid, n);
		else
			v = strprintf("%s:vm-%d-disk-%d", s->id, newid, n);
		if (!v)
			return NULL;
		bool taken = false;
		char *tail = strprintf("vm-%d-disk-%d", newid, n);
		for (size_t i = 0; tail && i < c->volumes.n && !taken; i++) {
			struct sim_volume *vol = c->volumes.v[i];
			taken = strcmp(vol->storage, s->id) == 0 && strstr(vol->volid, tail);
		}
		free(tail);
		if (!taken)
			return v;
		free(v);
	}
	return NULL;
}

/* A clone of a QEMU-backed VM runs too: its disk an overlay of the
 * source's, on the drive key that holds the source's disk, its SSH forward
 * on an address of its own. */
static int clone_qemu(struct cluster *c, struct sim_guest *src, struct sim_guest *g)
{
	char *err = NULL, *vol = NULL;
	json_object_object_foreach(src->config, k, v)
	{
		const char *sv = json_object_get_string(v);
		char *svol = is_drive_key(k) && !is_unused_key(k) && sv ? drive_volid(sv) : NULL;
		const char *gv = svol ? cfg_str(g->config, k) : NULL;
		if (!vol && gv && !drive_is_cdrom(sv) && !drive_is_cloudinit(sv))
			vol = drive_volid(gv);
		free(svol);
	}
	g->qemu = vol ? qemu_guest_clone(src->qemu, src->vmid, vol, &err) : NULL;
	if (g->qemu && !g->address)
		g->address = cluster_unused_address(c, "127.0.4", 10);
	if (!g->qemu || !g->address)
		fprintf(stderr, "pvesim: clone of VM %d: %s\n", src->vmid, err ? err : "no disk");
	free(err);
	free(vol);
	return g->qemu && g->address ? 0 : -1;
}

/* qemu-server's check_storage_access_clone and check_bridge_access for the
 * source's config: Datastore.AllocateSpace on the storage of every disk
 * (the target storage, when given), Sys.Console for a host CD-ROM, SDN.Use
 * on the bridge of every NIC. 0, or -1 with the 403. */
static int clone_perm(const struct sim_req *req, const struct sim_guest *src,
		      const char *storage, struct sim_resp *r)
{
	if (strcmp(req->userid, "root@pam") == 0)
		return 0;
	json_object_object_foreach(src->config, k, v)
	{
		const char *val = json_object_get_string(v);
		if (!val || !is_drive_key(k) || is_unused_key(k))
			continue;
		char *vol = drive_volid(val);
		char *sid = vol && !drive_is_cdrom(val) ? volid_storage(vol) : NULL;
		char *path = sid ? strprintf("/storage/%s", storage ? storage : sid) : NULL;
		bool ok = true;
		if (vol && drive_is_cdrom(val) && strcmp(vol, "cdrom") == 0)
			ok = priv_check(req, r, "/", "Sys.Console");
		else if (path)
			ok = priv_check(req, r, path, "Datastore.AllocateSpace");
		free(path);
		free(sid);
		free(vol);
		if (!ok)
			return -1;
	}
	const char *vs = cfg_str(src->config, "vmstatestorage");
	char *vp = vs ? strprintf("/storage/%s", vs) : NULL;
	bool ok = !vp || priv_check(req, r, vp, "Datastore.AllocateSpace");
	free(vp);
	json_object_object_foreach(src->config, nk, nv)
	{
		if (ok && strncmp(nk, "net", 3) == 0 && isdigit((unsigned char)nk[3]) &&
		    config_bridge_check(req, r, json_object_get_string(nv)) < 0)
			ok = false;
	}
	return ok ? 0 : -1;
}

static void route_clone(struct cluster *c, const struct sim_req *req,
			struct sim_guest *src, struct sim_resp *r)
{
	long long newid = param_int(req, "newid", 0);
	const char *name = param_str(req, "name");
	const char *target = param_str(req, "target");
	const char *storage = param_str(req, "storage");
	const char *desc = param_str(req, "description");
	bool is_tmpl = guest_is_template(src);
	bool full = param_bool(req, "full", !is_tmpl);
	if (newid < 100) {
		resp_param_error(r, "newid", "property is missing and it is not optional");
		return;
	}
	if (!vm_priv_check(req, r, src->vmid, "VM.Clone"))
		return;
	/* ['or', VM.Allocate on /vms/NEWID, VM.Allocate on /pool/POOL (with
	 * pool)]: exec_api2_perm_check's `or` raises raise_perm_exc() without
	 * arguments, so PVE names neither alternative */
	const char *pool = param_str(req, "pool");
	char *pp = pool ? strprintf("/pool/%s", pool) : NULL;
	bool in_pool = pp && priv_has(req, pp, "VM.Allocate");
	free(pp);
	if (!vm_priv_has(req, (int)newid, "VM.Allocate") && !in_pool) {
		resp_error(r, 403, "Permission check failed");
		return;
	}
	if (target && strcmp(target, src->node) == 0)
		target = NULL;
	if (target && !cluster_node(c, target)) {
		resp_error(r, 500, "no such cluster node '%s'", target);
		return;
	}
	if (storage && !full) {
		resp_param_error(r, "storage", "parameter 'storage' not allowed for linked clones");
		return;
	}
	if (!full && !is_tmpl) {
		resp_error(r, 500, "parameter 'full' must be set to 1 (linked clones need a template)");
		return;
	}
	if (!guest_check_lock(req, src, r))
		return;
	const char *dst_node = target ? target : src->node;
	struct sim_storage *ts = NULL;
	if (storage) {
		ts = cluster_storage(c, storage);
		if (!ts) {
			resp_error(r, 500, "storage '%s' does not exist", storage);
			return;
		}
		if (!storage_on_node(ts, dst_node)) {
			resp_error(r, 500, "storage '%s' is not available on node '%s'",
				   storage, dst_node);
			return;
		}
	}
	if (clone_perm(req, src, storage, r) < 0)
		return;
	/* every disk must be reachable from the target node */
	json_object_object_foreach(src->config, k0, v0)
	{
		const char *val = json_object_get_string(v0);
		if (!is_drive_key(k0) || !val || drive_is_cdrom(val))
			continue;
		char *vol = drive_volid(val);
		char *sid = vol ? volid_storage(vol) : NULL;
		struct sim_storage *s = sid ? cluster_storage(c, sid) : NULL;
		bool bad = false;
		if (s && !drive_is_cloudinit(val)) {
			if (!full && !linked_clone_ok(s, vol)) {
				resp_error(r, 500,
					   "Linked clone feature is not supported for drive '%s'",
					   k0);
				bad = true;
			} else if (target && !s->shared && (!ts || !ts->shared) &&
				   !(ts && storage_on_node(ts, target))) {
				resp_error(r, 500,
					   "can't clone VM to node '%s' (VM uses local storage)",
					   target);
				bad = true;
			}
		}
		free(sid);
		free(vol);
		if (bad)
			return;
	}
	struct sim_guest *exists = cluster_guest(c, (int)newid);
	if (exists && strcmp(exists->node, src->node) == 0) {
		resp_error(r, 500, "unable to create VM %lld: config file already exists",
			   newid);
		return;
	}
	if (exists) {
		resp_error(r, 500, "%s %lld already exists on node '%s'",
			   strcmp(exists->type, "qemu") == 0 ? "VM" : "CT", newid,
			   exists->node);
		return;
	}
	struct sim_guest *g = guest_new((int)newid, "qemu", dst_node);
	if (!g || ptrvec_push(&c->guests, g) < 0) {
		guest_free(g);
		resp_error(r, 500, "out of memory");
		return;
	}
	/* new config: copy, new MACs, new disks */
	struct sim_task *t = guest_task(c, req, src, "qmclone", 1.0);
	if (!t) {
		cluster_destroy_guest(c, (int)newid);
		resp_error(r, 500, "out of memory");
		return;
	}
	t->newid = (int)newid;
	t->vmid = (int)newid; /* the task belongs to the new guest's lock */
	guest_set_lock(g, "clone");
	/* the copy runs the same OS (its address comes at first boot) */
	if (src->fixture && !(g->fixture = strdup(src->fixture))) {
		task_discard(c, t);
		cluster_destroy_guest(c, (int)newid);
		resp_error(r, 500, "out of memory");
		return;
	}
	double at = 0.2;
	int rc = 0;
	json_object_object_foreach(src->config, k, v)
	{
		const char *val = json_object_get_string(v);
		if (rc < 0 || !val || strcmp(k, "lock") == 0 ||
		    strcmp(k, "template") == 0 || is_unused_key(k) ||
		    strcmp(k, "name") == 0 || strcmp(k, "parent") == 0 ||
		    strcmp(k, "vmgenid") == 0)
			continue;
		char *out = NULL;
		if (strncmp(k, "net", 3) == 0 && isdigit((unsigned char)k[3])) {
			const char *e = strchr(val, ',');
			size_t n = e ? (size_t)(e - val) : strlen(val);
			char *first = strndup(val, n);
			char *eq = first ? strchr(first, '=') : NULL;
			if (eq)
				*eq = '\0';
			char *mac = scenario_mac((int)newid, atoi(k + 3));
			out = first && mac ? strprintf("%s=%s%s", first, mac, e ? e : "")
					   : NULL;
			free(first);
			free(mac);
		} else if (is_drive_key(k) && drive_is_cloudinit(val)) {
			char *vol = drive_volid(val);
			char *sid = vol ? volid_storage(vol) : NULL;
			struct sim_storage *s = sid ? cluster_storage(c, sid) : NULL;
			if (ts && storage_on_node(ts, dst_node))
				s = ts;
			char *nv = s ? strprintf("%s:vm-%lld-cloudinit", s->id, newid) : NULL;
			if (nv && volume_add(c, nv, dst_node, (int)newid, 4 * MiB, "images"))
				out = strprintf("%s,media=cdrom", nv);
			free(nv);
			free(sid);
			free(vol);
		} else if (is_drive_key(k) && !drive_is_cdrom(val)) {
			char *vol = drive_volid(val);
			char *sid = vol ? volid_storage(vol) : NULL;
			struct sim_storage *s = sid ? cluster_storage(c, sid) : NULL;
			uint64_t size = disk_size(val);
			const char *opts = strchr(val, ',');
			if (!s) {
				resp_error(r, 500, "storage '%s' does not exist", sid ? sid : "?");
				rc = -1;
			} else if (full) {
				struct sim_storage *ds = ts ? ts : s;
				const char *nv = volume_alloc(c, ds, dst_node, (int)newid,
							      size, "vm", "images");
				if (nv) {
					out = strprintf("%s%s", nv, opts ? opts : "");
					double secs = (double)size / FULL_CLONE_RATE;
					if (src->running && !is_tmpl) {
						char *drv = strprintf("drive-%s", k);
						task_log(t, at, "create full clone of drive %s (%s)",
							 k, vol);
						task_log(t, at, "drive mirror is starting for %s",
							 drv ? drv : k);
						task_log_transfer(t, at, secs, size, drv ? drv : k);
						task_log(t, at + secs, "all 'mirror' jobs are ready");
						free(drv);
					} else {
						task_log(t, at, "create full clone of drive %s (%s)",
							 k, vol);
						task_log_transfer(t, at, secs, size, NULL);
					}
					at += secs + 0.1;
				}
			} else {
				char *nv = linked_volid(c, s, vol, (int)newid);
				if (nv && volume_add(c, nv, dst_node, (int)newid, size,
						     "images")) {
					out = strprintf("%s%s", nv, opts ? opts : "");
					task_log(t, at, "create linked clone of drive %s (%s)", k,
						 vol);
					if (strcmp(s->type, "lvmthin") == 0)
						task_log(t, at, "  Logical volume \"%s\" created.",
							 strchr(nv, ':') + 1);
					at += 0.3;
				}
				free(nv);
			}
			free(sid);
			free(vol);
		} else {
			out = strdup(val);
		}
		if (rc == 0 && !out) {
			if (!r->message)
				resp_error(r, 500, "out of memory");
			rc = -1;
		}
		if (rc == 0)
			json_object_object_add(g->config, k, json_object_new_string(out));
		free(out);
	}
	if (rc < 0) {
		/* a refusal: no task, no new guest */
		task_discard(c, t);
		cluster_destroy_guest(c, (int)newid);
		return;
	}
	char *nm = name ? strdup(name)
			: strprintf("Copy-of-VM-%s", guest_name(src) ? guest_name(src) : "");
	if (nm)
		json_object_object_add(g->config, "name", json_object_new_string(nm));
	free(nm);
	if (desc)
		json_object_object_add(g->config, "description", json_object_new_string(desc));
	if (src->qemu && clone_qemu(c, src, g) < 0) {
		task_discard(c, t);
		cluster_destroy_guest(c, (int)newid);
		resp_error(r, 500, "clone of the QEMU-backed VM %d failed", src->vmid);
		return;
	}
	t->duration = at + 0.2;
	t->end = t->start + t->duration;
	t->on_end = clone_end;
	task_apply_fault(t, req->task_fail);
	resp_task(r, t);
}

/* ---- config ------------------------------------------------------------- */
static void route_config_write(struct cluster *c, const struct sim_req *req,
			       struct sim_guest *g, bool async,
			       struct sim_resp *r)
{
	double cost = 0;
	struct sbuf log = {0};
	int rc = config_update(c, req, g, r, &cost, &log);
	if (rc == -2 && async) {
		/* refused by the worker: the task fails */
		char *msg = r->message ? strdup(r->message) : NULL;
		sim_resp_clear(r);
		struct sim_task *t = guest_task(c, req, g, "qmconfig", 0.2);
		if (t)
			task_fail_at(t, 0.1, msg ? msg : "error");
		free(msg);
		sbuf_free(&log);
		resp_task(r, t);
		return;
	}
	if (rc < 0) {
		sbuf_free(&log);
		return;
	}
	if (!async) {
		sbuf_free(&log);
		if (cost > SYNC_LIMIT) {
			/* the work goes on on the node; the proxy gives up */
			resp_error(r, 596, "Connection timed out");
			return;
		}
		resp_data(r, NULL);
		return;
	}
	struct sim_task *t = guest_task(c, req, g, "qmconfig", 0.3 + cost);
	if (t) {
		const char *p = sbuf_str(&log);
		while (*p) {
			const char *e = strchr(p, '\n');
			size_t n = e ? (size_t)(e - p) : strlen(p);
			task_log(t, 0.1, "%.*s", (int)n, p);
			p += n + (e ? 1 : 0);
		}
		task_apply_fault(t, req->task_fail);
	}
	sbuf_free(&log);
	resp_task(r, t);
}

static void route_pending(const struct sim_guest *g, struct sim_resp *r)
{
	json_object *arr = json_object_new_array();
	if (!arr) {
		resp_error(r, 500, "out of memory");
		return;
	}
	json_object_object_foreach(g->config, k, v)
	{
		json_object *o = json_object_new_object();
		if (!o)
			continue;
		jadd_str(o, "key", k);
		jadd_str(o, "value", json_object_get_string(v));
		const char *p = cfg_str(g->pending, k);
		if (p)
			jadd_str(o, "pending", p);
		size_t n = json_object_array_length(g->pending_delete);
		for (size_t i = 0; i < n; i++) {
			const char *pk = json_object_get_string(
				json_object_array_get_idx(g->pending_delete, i));
			if (pk && strcmp(pk[0] == '!' ? pk + 1 : pk, k) == 0)
				jadd_int(o, "delete", pk[0] == '!' ? 2 : 1);
		}
		json_object_array_add(arr, o);
	}
	json_object_object_foreach(g->pending, pk, pv)
	{
		if (cfg_str(g->config, pk))
			continue;
		json_object *o = json_object_new_object();
		if (!o)
			continue;
		jadd_str(o, "key", pk);
		jadd_str(o, "pending", json_object_get_string(pv));
		json_object_array_add(arr, o);
	}
	resp_data(r, arr);
}

/* ---- status ------------------------------------------------------------- */
static bool agent_enabled(const struct sim_guest *g)
{
	const char *a = cfg_str(g->config, "agent");
	if (!a)
		return false;
	if (strncmp(a, "enabled=", 8) == 0)
		a += 8;
	return a[0] == '1';
}

static void route_status_current(const struct cluster *c,
				 const struct sim_guest *g, double now,
				 struct sim_resp *r)
{
	json_object *o = json_object_new_object();
	if (!o) {
		resp_error(r, 500, "out of memory");
		return;
	}
	jadd_int(o, "vmid", g->vmid);
	char nbuf[32];
	jadd_str(o, "name", guest_status_name(g, nbuf, sizeof nbuf));
	jadd_str(o, "status", g->running ? "running" : "stopped");
	if (g->running)
		jadd_str(o, "qmpstatus", "running");
	else
		jadd_str(o, "qmpstatus", "stopped");
	jadd_int(o, "uptime", g->running ? (long long)(now - g->started_at) : 0);
	const char *cores = cfg_str(g->config, "cores");
	jadd_int(o, "cpus", cores ? atoi(cores) : 1);
	uint64_t mem = guest_memory(g);
	json_object_object_add(o, "maxmem", json_object_new_uint64(mem));
	json_object_object_add(o, "mem", json_object_new_uint64(g->running ? mem / 2 : 0));
	json_object_object_add(o, "cpu", json_object_new_double(g->running ? 0.01 : 0));
	if (guest_lock(g))
		jadd_str(o, "lock", guest_lock(g));
	if (agent_enabled(g))
		jadd_int(o, "agent", 1);
	if (guest_is_template(g))
		jadd_int(o, "template", 1);
	if (g->running) {
		jadd_int(o, "pid", 10000 + g->vmid % 50000);
		char mb[64];
		jadd_str(o, "running-machine", guest_running_machine(c, g, mb, sizeof mb));
		jadd_str(o, "running-qemu", node_qemu_version(c, cluster_node(c, g->node)));
	}
	json_object *ha = json_object_new_object();
	const char *hs = cluster_ha_managed(c, g);
	if (ha) {
		jadd_int(ha, "managed", hs ? 1 : 0);
		if (hs)
			jadd_str(ha, "state", hs);
	}
	json_object_object_add(o, "ha", ha);
	resp_data(r, o);
}

/* qemu-server's own start, stop, shutdown and reboot (the rest is
 * power_route's): a start of a running VM fails in its qmstart task. */
static void power_direct(struct cluster *c, const struct sim_req *req,
			 struct sim_guest *g, const char *action,
			 struct sim_resp *r)
{
	struct sim_task *t = NULL;
	if (strcmp(action, "start") == 0) {
		if (!guest_check_lock(req, g, r))
			return;
		t = guest_task(c, req, g, "qmstart", START_SECS);
		if (!t) {
			resp_error(r, 500, "out of memory");
			return;
		}
		struct sim_node *n = cluster_node(c, g->node);
		if (g->running) {
			char *msg = strprintf("VM %d already running", g->vmid);
			task_fail_at(t, 0.1, msg ? msg : "VM already running");
			free(msg);
		} else if (n && node_mem_free(c, n) < guest_memory(g)) {
			task_log(t, 0.5,
				 "kvm: cannot set up guest memory 'pc.ram': Cannot "
				 "allocate memory");
			task_fail_at(t, 0.5, "start failed: QEMU exited with code 1");
		} else {
			/* reserve: the guest counts as running from now on */
			t->on_end = task_end_start;
		}
	} else if (strcmp(action, "stop") == 0) {
		if (!guest_check_lock(req, g, r))
			return;
		t = guest_task(c, req, g, "qmstop", STOP_SECS);
		if (t)
			t->on_end = task_end_stop;
	} else if (strcmp(action, "shutdown") == 0) {
		if (!guest_check_lock(req, g, r))
			return;
		long long timeout = param_int(req, "timeout", 180);
		bool force = param_bool(req, "forceStop", false);
		if (g->qemu && g->running) {
			/* the real guest: ACPI power button, stopped after the
			 * timeout if it has not powered off (qemu_guests_poll ends
			 * the task when the process exits) */
			char *qerr = NULL;
			t = guest_task(c, req, g, "qmshutdown", (double)timeout);
			if (t && qemu_guest_powerdown(g->qemu, &qerr) < 0)
				task_log(t, 0, "QMP: %s", qerr ? qerr : "no answer");
			if (t)
				t->on_end = task_end_stop;
			free(qerr);
			if (t)
				task_apply_fault(t, req->task_fail);
			resp_task(r, t);
			return;
		}
		bool hung = g->running && (g->boot.state == BOOT_MOUNTROOT ||
					   g->boot.state == BOOT_INITRAMFS ||
					   g->boot.state == BOOT_SINGLE_USER);
		t = guest_task(c, req, g, "qmshutdown",
			       hung ? (double)timeout + 0.5 : SHUTDOWN_SECS);
		if (t && hung && !force) {
			task_fail_at(t, (double)timeout, "VM quit/powerdown failed - got timeout");
		} else if (t && hung) {
			task_log(t, (double)timeout, "VM still running - terminating now with SIGTERM");
			t->on_end = task_end_stop;
		} else if (t) {
			t->on_end = task_end_stop;
		}
	} else { /* reboot */
		if (!g->running) {
			resp_error(r, 500, "VM %d not running", g->vmid);
			return;
		}
		if (!guest_check_lock(req, g, r))
			return;
		t = guest_task(c, req, g, "qmreboot", SHUTDOWN_SECS + START_SECS);
		if (t)
			t->on_end = task_end_reboot;
	}
	if (t)
		task_apply_fault(t, req->task_fail);
	resp_task(r, t);
}

static const struct power_kind qemu_power = {
	.template_msg = "you can't start a vm if it's a template",
	.direct = power_direct,
};

void qemu_ha_carry_out(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
		       const char *action)
{
	power_ha_carry_out(c, req, g, action, &qemu_power);
}

/* ---- resize, template --------------------------------------------------- */
static void resize_end(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	json_object *disk, *size;
	if (!g || !ok || !t->args || !json_object_object_get_ex(t->args, "disk", &disk) ||
	    !json_object_object_get_ex(t->args, "size", &size))
		return;
	const char *key = json_object_get_string(disk);
	const char *val = cfg_str(g->config, key);
	if (!val)
		return;
	uint64_t bytes = (uint64_t)json_object_get_int64(size);
	char *sz = format_size(bytes);
	char *nv = sz ? prop_set(val, "size", sz) : NULL;
	char *vol = drive_volid(val);
	struct sim_volume *v = vol ? cluster_volume(c, vol, g->node) : NULL;
	if (v)
		v->size = bytes;
	if (nv)
		json_object_object_add(g->config, key, json_object_new_string(nv));
	free(sz);
	free(nv);
	free(vol);
}

static void route_resize(struct cluster *c, const struct sim_req *req,
			 struct sim_guest *g, struct sim_resp *r)
{
	if (!vm_priv_check(req, r, g->vmid, "VM.Config.Disk"))
		return;
	const char *disk = param_str(req, "disk");
	const char *size = param_str(req, "size");
	if (!disk || !size) {
		resp_param_error(r, disk ? "size" : "disk",
				 "property is missing and it is not optional");
		return;
	}
	if (!guest_check_lock(req, g, r))
		return;
	const char *digest = param_str(req, "digest");
	if (digest) {
		char *d = config_digest(g->config);
		bool same = d && strcmp(d, digest) == 0;
		free(d);
		if (!same) {
			resp_error(r, 500, "detected modified configuration - file "
					   "changed by other user? Try again.");
			return;
		}
	}
	const char *val = cfg_str(g->config, disk);
	if (!val || !is_drive_key(disk)) {
		resp_error(r, 500, "disk '%s' does not exist", disk);
		return;
	}
	if (drive_is_cdrom(val)) {
		resp_error(r, 500, "you can't resize a cdrom");
		return;
	}
	uint64_t cur = disk_size(val), want = 0, delta = 0;
	bool plus = size[0] == '+';
	if (parse_size(plus ? size + 1 : size, plus ? &delta : &want) < 0) {
		resp_param_error(r, "size", "value does not match the regex pattern");
		return;
	}
	if (plus)
		want = cur + delta;
	if (want < cur) {
		resp_error(r, 500, "shrinking disks is not supported");
		return;
	}
	char *vol = drive_volid(val);
	char *sid = vol ? volid_storage(vol) : NULL;
	struct sim_storage *s = sid ? cluster_storage(c, sid) : NULL;
	double secs = s ? alloc_seconds(s, want - cur) : 0.2;
	char *sp = sid ? strprintf("/storage/%s", sid) : NULL;
	bool allowed = !sp || priv_check(req, r, sp, "Datastore.AllocateSpace");
	free(sp);
	free(sid);
	free(vol);
	if (!allowed)
		return;
	if (c->major >= 8) {
		struct sim_task *t = guest_task(c, req, g, "resize", secs + 0.2);
		if (t) {
			task_log(t, 0.1, "Image resized.");
			t->args = json_object_new_object();
			if (t->args) {
				json_object_object_add(t->args, "disk",
						       json_object_new_string(disk));
				json_object_object_add(t->args, "size",
						       json_object_new_int64((long long)want));
			}
			t->on_end = resize_end;
			task_apply_fault(t, req->task_fail);
		}
		resp_task(r, t);
		return;
	}
	/* PVE < 8: synchronous */
	char *sz = format_size(want);
	char *nv = sz ? prop_set(val, "size", sz) : NULL;
	char *v2 = drive_volid(val);
	struct sim_volume *v = v2 ? cluster_volume(c, v2, g->node) : NULL;
	if (v)
		v->size = want;
	if (nv)
		json_object_object_add(g->config, disk, json_object_new_string(nv));
	free(sz);
	free(nv);
	free(v2);
	if (secs > SYNC_LIMIT)
		resp_error(r, 596, "Connection timed out");
	else
		resp_data(r, NULL);
}

static void template_end(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (!g || !ok)
		return;
	struct ptrvec keys = {0};
	json_object_object_foreach(g->config, k, v)
	{
		const char *val = json_object_get_string(v);
		if (is_drive_key(k) && val && !drive_is_cdrom(val) &&
		    !drive_is_cloudinit(val))
			ptrvec_push(&keys, k);
	}
	for (size_t i = 0; i < keys.n; i++) {
		const char *dk = keys.v[i];
		const char *val = cfg_str(g->config, dk);
		char *vol = drive_volid(val);
		struct sim_volume *vl = vol ? cluster_volume(c, vol, g->node) : NULL;
		char *pos = vol ? strstr(vol, ":vm-") : NULL;
		if (!pos && vol)
			pos = strstr(vol, "/vm-");
		if (vl && pos) {
			/* vm-100-disk-0 -> base-100-disk-0 */
			char *nvol = strprintf("%.*sbase-%s", (int)(pos - vol + 1), vol,
					       pos + 4);
			const char *opts = strchr(val, ',');
			char *nval = nvol ? strprintf("%s%s", nvol, opts ? opts : "") : NULL;
			if (nvol && nval) {
				free(vl->volid);
				vl->volid = nvol;
				nvol = NULL;
				json_object_object_add(g->config, dk, json_object_new_string(nval));
			}
			free(nvol);
			free(nval);
		}
		free(vol);
	}
	ptrvec_free(&keys);
	json_object_object_add(g->config, "template", json_object_new_int(1));
}

static void route_template(struct cluster *c, const struct sim_req *req,
			   struct sim_guest *g, struct sim_resp *r)
{
	if (!vm_priv_check(req, r, g->vmid, "VM.Allocate"))
		return;
	if (!guest_check_lock(req, g, r))
		return;
	if (guest_is_template(g)) {
		resp_error(r, 500, "you can't convert a template to a template");
		return;
	}
	if (g->running) {
		resp_error(r, 500, "you can't convert a VM to template if VM is running");
		return;
	}
	struct sim_task *t = guest_task(c, req, g, "qmtemplate", 1.0);
	if (t) {
		t->on_end = template_end;
		task_apply_fault(t, req->task_fail);
	}
	resp_task(r, t);
}

/* ---- snapshots ---------------------------------------------------------- */

/* The config's or a snapshot's "parent" was the deleted snapshot: it is
 * now that snapshot's own parent, or none (AbstractConfig.pm
 * snapshot_delete, $unlink_parent). */
static void unlink_parent(json_object *o, const char *name, const char *new_parent)
{
	const char *p = cfg_str(o, "parent");
	if (!p || strcmp(p, name) != 0)
		return;
	if (new_parent)
		json_object_object_add(o, "parent", json_object_new_string(new_parent));
	else
		json_object_object_del(o, "parent");
}

/* Delete snapshot name of g, its children and the config pointing at its
 * parent from now on. */
static void snap_unlink(struct sim_guest *g, const char *name)
{
	json_object *snap = json_object_object_get(g->snapshots, name);
	const char *pp = snap ? cfg_str(snap, "parent") : NULL;
	char *parent = pp ? strdup(pp) : NULL;
	json_object_object_del(g->snapshots, name);
	unlink_parent(g->config, name, parent);
	json_object_object_foreach(g->snapshots, sn, so) {
		(void)sn;
		unlink_parent(so, name, parent);
	}
	free(parent);
}

static void snap_end(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (!g)
		return;
	guest_set_lock(g, NULL);
	if (!ok || !t->args)
		return;
	const char *op = cfg_str(t->args, "op");
	const char *name = cfg_str(t->args, "name");
	if (!op || !name)
		return;
	if (strcmp(op, "create") == 0) {
		json_object *snap = json_object_new_object(), *conf = NULL;
		if (!snap || json_object_deep_copy(g->config, &conf, NULL) < 0) {
			json_object_put(snap);
			return;
		}
		json_object_object_add(snap, "config", conf);
		json_object_object_add(snap, "snaptime",
				       json_object_new_int64((long long)t->end));
		const char *d = cfg_str(t->args, "description");
		json_object_object_add(snap, "description",
				       json_object_new_string(d ? d : ""));
		const char *parent = cfg_str(g->config, "parent");
		if (parent)
			json_object_object_add(snap, "parent", json_object_new_string(parent));
		json_object_object_add(g->snapshots, name, snap);
		json_object_object_add(g->config, "parent", json_object_new_string(name));
	} else if (strcmp(op, "rollback") == 0) {
		json_object *snap = json_object_object_get(g->snapshots, name), *sc;
		json_object *conf = NULL;
		if (!snap || !json_object_object_get_ex(snap, "config", &sc) ||
		    json_object_deep_copy(sc, &conf, NULL) < 0)
			return;
		if (g->running)
			guest_stopped(c, g);
		json_object_put(g->config);
		g->config = conf;
		json_object_object_add(g->config, "parent", json_object_new_string(name));
		guest_eval_boot(g);
	} else if (strcmp(op, "delete") == 0) {
		snap_unlink(g, name);
	}
}

/* GET .../snapshot/NAME/config: the config the snapshot holds, with its
 * snaptime, description and parent, as PVE's snapshot section has them. */
static void snapshot_config(const struct sim_req *req, struct sim_guest *g, const char *name,
			    struct sim_resp *r)
{
	static const char *const any[] = {"VM.Snapshot", "VM.Snapshot.Rollback", "VM.Audit", NULL};
	char vp[32];
	snprintf(vp, sizeof vp, "/vms/%d", g->vmid);
	if (!priv_check_any(req, r, vp, any))
		return;
	json_object *snap = json_object_object_get(g->snapshots, name), *sc = NULL, *out = NULL;
	if (!snap || !json_object_object_get_ex(snap, "config", &sc)) {
		resp_error(r, 500, "snapshot '%s' does not exist", name);
		return;
	}
	if (json_object_deep_copy(sc, &out, NULL) < 0) {
		resp_error(r, 500, "out of memory");
		return;
	}
	static const char *const keys[] = {"snaptime", "description", "parent"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		json_object *v = NULL;
		if (json_object_object_get_ex(snap, keys[i], &v) && v)
			json_object_object_add(out, keys[i], json_object_get(v));
		else
			json_object_object_del(out, keys[i]);
	}
	resp_data(r, out);
}

void route_snapshots(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
		     struct path_parts *pp, struct sim_resp *r)
{
	bool ct = strcmp(g->type, "lxc") == 0;
	char **s = pp->seg;
	bool get = strcmp(req->method, "GET") == 0;
	if (pp->n == 5 && get) {
		if (!vm_priv_check(req, r, g->vmid, "VM.Audit"))
			return;
		json_object *arr = json_object_new_array();
		json_object_object_foreach(g->snapshots, name, snap)
		{
			json_object *o = json_object_new_object();
			if (!arr || !o) {
				json_object_put(o);
				continue;
			}
			jadd_str(o, "name", name);
			jadd_str(o, "description", cfg_str(snap, "description"));
			const char *st = cfg_str(snap, "snaptime");
			jadd_int(o, "snaptime", st ? atoll(st) : 0);
			if (cfg_str(snap, "parent"))
				jadd_str(o, "parent", cfg_str(snap, "parent"));
			json_object_array_add(arr, o);
		}
		json_object *cur = json_object_new_object();
		if (arr && cur) {
			jadd_str(cur, "name", "current");
			jadd_str(cur, "description", "You are here!");
			jadd_int(cur, "running", g->running);
			if (cfg_str(g->config, "parent"))
				jadd_str(cur, "parent", cfg_str(g->config, "parent"));
			json_object_array_add(arr, cur);
		} else {
			json_object_put(cur);
		}
		resp_data(r, arr);
		return;
	}
	const char *name = pp->n >= 6 ? s[5] : param_str(req, "snapname");
	bool post = strcmp(req->method, "POST") == 0;
	const char *op = NULL, *lock = NULL, *type = NULL;
	if (pp->n == 5 && post) {
		op = "create";
		lock = "snapshot";
		type = ct ? "vzsnapshot" : "qmsnapshot";
	} else if (pp->n == 7 && post && strcmp(s[6], "rollback") == 0) {
		op = "rollback";
		lock = "rollback";
		type = ct ? "vzrollback" : "qmrollback";
	} else if (pp->n == 6 && strcmp(req->method, "DELETE") == 0) {
		op = "delete";
		lock = "snapshot-delete";
		type = ct ? "vzdelsnapshot" : "qmdelsnapshot";
	} else if (pp->n == 7 && get && strcmp(s[6], "config") == 0) {
		snapshot_config(req, g, name, r);
		return;
	} else if (pp->n == 6 && get) {
		json_object *arr = json_object_new_array();
		json_object *o = json_object_new_object();
		if (arr && o) {
			jadd_str(o, "cmd", "rollback");
			json_object_array_add(arr, o);
			o = json_object_new_object();
			if (o) {
				jadd_str(o, "cmd", "config");
				json_object_array_add(arr, o);
			}
		} else {
			json_object_put(o);
		}
		resp_data(r, arr);
		return;
	} else {
		resp_error(r, 501, "Method '%s %s' not implemented", req->method, req->path);
		return;
	}
	static const char *const rollback_any[] = {"VM.Snapshot", "VM.Snapshot.Rollback", NULL};
	char vp[32];
	snprintf(vp, sizeof vp, "/vms/%d", g->vmid);
	if (strcmp(op, "rollback") == 0 ? !priv_check_any(req, r, vp, rollback_any)
					: !vm_priv_check(req, r, g->vmid, "VM.Snapshot"))
		return;
	if (!name) {
		resp_param_error(r, "snapname", "property is missing and it is not optional");
		return;
	}
	if (!guest_check_lock(req, g, r))
		return;
	bool exists = json_object_object_get_ex(g->snapshots, name, NULL);
	if (strcmp(op, "create") == 0 && (exists || strcmp(name, "current") == 0)) {
		resp_error(r, 500, "snapshot name '%s' already used", name);
		return;
	}
	if (strcmp(op, "create") != 0 && !exists) {
		resp_error(r, 500, "snapshot '%s' does not exist", name);
		return;
	}
	struct sim_task *t = guest_task(c, req, g, type, 1.0);
	if (!t) {
		resp_error(r, 500, "out of memory");
		return;
	}
	t->args = json_object_new_object();
	if (t->args) {
		json_object_object_add(t->args, "op", json_object_new_string(op));
		json_object_object_add(t->args, "name", json_object_new_string(name));
		const char *d = param_str(req, "description");
		if (d)
			json_object_object_add(t->args, "description",
					       json_object_new_string(d));
	}
	if (strcmp(op, "create") == 0) {
		/* every disk's storage must support snapshots */
		json_object_object_foreach(g->config, k, v)
		{
			const char *val = json_object_get_string(v);
			if (!is_drive_key(k) || !val || drive_is_cdrom(val) ||
			    drive_is_cloudinit(val))
				continue;
			char *vol = drive_volid(val);
			char *sid = vol ? volid_storage(vol) : NULL;
			struct sim_storage *st = sid ? cluster_storage(c, sid) : NULL;
			struct sim_volume *vv = vol ? cluster_volume(c, vol, g->node) : NULL;
			if (st && !storage_can_snapshot(st, vv ? vv->format : "raw"))
				task_fail_at(t, 0.2, "snapshot feature is not available");
			free(sid);
			free(vol);
		}
	}
	guest_set_lock(g, lock);
	t->on_end = snap_end;
	task_apply_fault(t, req->task_fail);
	resp_task(r, t);
}

/* ---- agent -------------------------------------------------------------- */
static json_object *iface(const char *name, const char *mac, const char *ip,
			  int prefix)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	jadd_str(o, "name", name);
	jadd_str(o, "hardware-address", mac);
	json_object *ips = json_object_new_array();
	if (ips && ip) {
		json_object *a = json_object_new_object();
		if (a) {
			jadd_str(a, "ip-address", ip);
			jadd_str(a, "ip-address-type", "ipv4");
			jadd_int(a, "prefix", prefix);
			json_object_array_add(ips, a);
		}
	}
	json_object_object_add(o, "ip-addresses", ips);
	return o;
}

/* MAC of net0 in lower case ("virtio=BC:24:..." or hwaddr=...). */
static char *net0_mac(const struct sim_guest *g)
{
	const char *net = cfg_str(g->config, "net0");
	if (!net)
		return NULL;
	char *mac = prop_get(net, "hwaddr");
	if (!mac) {
		const char *eq = strchr(net, '=');
		const char *comma = strchr(net, ',');
		if (eq && (!comma || eq < comma))
			mac = strndup(eq + 1, (size_t)((comma ? comma : net + strlen(net)) -
						       eq - 1));
	}
	for (char *p = mac; p && *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return mac;
}

/* A QEMU-backed guest: the real agent answers (qemu_guest.h). */
static void route_agent_qemu(const struct sim_req *req, struct sim_guest *g, const char *cmd,
			     struct sim_resp *r)
{
	static const char *const cmds[] = {"ping", "network-get-interfaces", "get-osinfo",
					   "get-host-name", "info", NULL};
	size_t i = 0;
	while (cmds[i] && strcmp(cmds[i], cmd) != 0)
		i++;
	if (!cmds[i]) {
		resp_error(r, 501, "Method '%s %s' not implemented", req->method, req->path);
		return;
	}
	char *qcmd = strprintf("guest-%s", cmd), *err = NULL;
	json_object *ret = qcmd ? qemu_guest_agent(g, qcmd, &err) : NULL;
	json_object *res = ret ? json_object_new_object() : NULL;
	if (res) {
		json_object_object_add(res, "result", ret);
		resp_data(r, res);
	} else {
		json_object_put(ret);
		resp_error(r, 500, "%s", err ? err : "QEMU guest agent is not running");
	}
	free(qcmd);
	free(err);
}

/* The agent commands the model answers are all read-only ones: PVE 8
 * (qemu-server 8.4 Agent.pm) checks VM.Monitor; PVE 9 (qemu-server b92a40ce)
 * VM.GuestAgent.Audit or VM.GuestAgent.Unrestricted, any. */
static bool agent_perm(const struct cluster *c, const struct sim_req *req,
		       struct sim_guest *g, struct sim_resp *r)
{
	if (c->major < 9)
		return vm_priv_check(req, r, g->vmid, "VM.Monitor");
	static const char *const any[] = {"VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted",
					  NULL};
	char *p = vm_path(g->vmid);
	bool ok = p && priv_check_any(req, r, p, any);
	if (!p)
		resp_error(r, 500, "out of memory");
	free(p);
	return ok;
}

static void route_agent(const struct cluster *c, const struct sim_req *req,
			struct sim_guest *g, const char *cmd, struct sim_resp *r)
{
	if (!agent_perm(c, req, g, r))
		return;
	if (!agent_enabled(g)) {
		resp_error(r, 500, "No QEMU guest agent configured");
		return;
	}
	if (!g->running) {
		resp_error(r, 500, "VM %d is not running", g->vmid);
		return;
	}
	if (g->qemu) {
		route_agent_qemu(req, g, cmd, r);
		return;
	}
	bool booted = req->now - g->started_at >= 5.0;
	if (!booted || (g->fixture && g->boot.state != BOOT_UP)) {
		resp_error(r, 500, "QEMU guest agent is not running");
		return;
	}
	json_object *res = json_object_new_object();
	if (!res) {
		resp_error(r, 500, "out of memory");
		return;
	}
	if (strcmp(cmd, "ping") == 0) {
		json_object_object_add(res, "result", json_object_new_object());
	} else if (strcmp(cmd, "network-get-interfaces") == 0) {
		json_object *arr = json_object_new_array();
		json_object *lo = iface("lo", "00:00:00:00:00:00", "127.0.0.1", 8);
		char *mac = net0_mac(g);
		const char *nic = g->boot.nic ? g->boot.nic : "eth0";
		json_object *e = mac ? iface(nic, mac, g->address, 24) : NULL;
		free(mac);
		if (arr && lo)
			json_object_array_add(arr, lo);
		else
			json_object_put(lo);
		if (arr && e)
			json_object_array_add(arr, e);
		else
			json_object_put(e);
		json_object_object_add(res, "result", arr);
	} else if (strcmp(cmd, "get-osinfo") == 0) {
		json_object *os = json_object_new_object();
		if (os && g->fixture)
			jadd_str(os, "id", g->fixture);
		json_object_object_add(res, "result", os);
	} else {
		json_object_put(res);
		resp_error(r, 501, "Method '%s %s' not implemented", req->method, req->path);
		return;
	}
	resp_data(r, res);
}

/* ---- destroy ------------------------------------------------------------ */
static void destroy_end(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (!g)
		return;
	if (!ok) {
		guest_set_lock(g, NULL);
		return;
	}
	json_object *purge;
	if (t->args && json_object_object_get_ex(t->args, "purge", &purge) &&
	    json_object_get_boolean(purge)) {
		size_t n = json_object_array_length(c->ha);
		for (size_t i = n; i-- > 0;) {
			const char *sid = cfg_str(json_object_array_get_idx(c->ha, i), "sid");
			if (sid && atoi(sid + 3) == g->vmid)
				json_object_array_del_idx(c->ha, i, 1);
		}
	}
	/* PVE removes every volume owned by the guest */
	cluster_destroy_guest(c, g->vmid);
}

static void route_destroy(struct cluster *c, const struct sim_req *req,
			  struct sim_guest *g, struct sim_resp *r)
{
	if (!vm_priv_check(req, r, g->vmid, "VM.Allocate"))
		return;
	const char *prot = cfg_str(g->config, "protection");
	if (prot && strcmp(prot, "1") == 0) {
		resp_error(r, 500, "can't remove VM %d - protection mode enabled", g->vmid);
		return;
	}
	bool purge = param_bool(req, "purge", false);
	if (cluster_ha_state(c, g) && !purge) {
		resp_error(r, 500,
			   "unable to remove VM %d - used in HA resources and purge "
			   "parameter not set.",
			   g->vmid);
		return;
	}
	if (g->running) {
		resp_error(r, 500, "VM %d is running - destroy failed", g->vmid);
		return;
	}
	if (!guest_check_lock(req, g, r))
		return;
	struct sim_task *t = guest_task(c, req, g, "qmdestroy", 1.0);
	if (t) {
		t->args = json_object_new_object();
		if (t->args)
			json_object_object_add(t->args, "purge", json_object_new_boolean(purge));
		guest_set_lock(g, "destroyed");
		json_object_object_foreach(g->config, k, v)
		{
			const char *val = json_object_get_string(v);
			if ((is_drive_key(k) || is_unused_key(k)) && val &&
			    !drive_is_cdrom(val)) {
				char *vol = drive_volid(val);
				const char *colon = vol ? strchr(vol, ':') : NULL;
				if (colon)
					task_log(t, 0.5, "  Logical volume \"%s\" successfully removed.",
						 colon + 1);
				free(vol);
			}
		}
		t->on_end = destroy_end;
		task_apply_fault(t, req->task_fail);
	}
	resp_task(r, t);
}

/* ---- dispatch ----------------------------------------------------------- */
bool routes_qemu(struct cluster *c, const struct sim_req *req,
		 struct path_parts *pp, struct sim_resp *r)
{
	char **s = pp->seg;
	size_t n = pp->n;
	if (n < 3 || strcmp(s[0], "nodes") != 0 || strcmp(s[2], "qemu") != 0)
		return false;
	const char *m = req->method;
	bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0;
	bool put = strcmp(m, "PUT") == 0, del = strcmp(m, "DELETE") == 0;
	struct sim_node *node = route_node(c, s[1], r);
	if (!node)
		return true;
	if (n == 3 && get) {
		route_list(c, req, node->name, r);
		return true;
	}
	if (n == 3 && post) {
		route_create(c, req, node->name, r);
		return true;
	}
	if (n < 4)
		return false;
	struct sim_guest *g = route_guest(c, node->name, s[3], "qemu", r);
	if (!g)
		return true;
	if (n == 4 && get) {
		const char *const subs[] = {"config", "pending", "status", "migrate",
				      "resize", "template", "snapshot", "agent", "clone"};
		resp_data(r, subdir_index("subdir", subs, 9));
		return true;
	}
	if (n == 4 && del) {
		route_destroy(c, req, g, r);
		return true;
	}
	const char *sub = s[4];
	if (n == 5 && strcmp(sub, "config") == 0) {
		if (get) {
			if (vm_priv_check(req, r, g->vmid, "VM.Audit")) {
				const char *snap = param_str(req, "snapshot");
				if (snap) {
					json_object *sn = json_object_object_get(g->snapshots, snap);
					json_object *sc = NULL, *copy = NULL;
					if (!sn || !json_object_object_get_ex(sn, "config", &sc))
						resp_error(r, 500, "snapshot '%s' does not exist", snap);
					else if (json_object_deep_copy(sc, &copy, NULL) < 0)
						resp_error(r, 500, "out of memory");
					else
						resp_data(r, copy);
				} else {
					resp_data(r, config_output(g, param_bool(req, "current", false)));
				}
			}
			return true;
		}
		if (put || post) {
			route_config_write(c, req, g, post, r);
			return true;
		}
	}
	if (n == 5 && get && strcmp(sub, "pending") == 0) {
		if (vm_priv_check(req, r, g->vmid, "VM.Audit"))
			route_pending(g, r);
		return true;
	}
	if (n == 5 && post && strcmp(sub, "clone") == 0) {
		route_clone(c, req, g, r);
		return true;
	}
	if (n == 5 && put && strcmp(sub, "resize") == 0) {
		route_resize(c, req, g, r);
		return true;
	}
	if (n == 5 && post && strcmp(sub, "template") == 0) {
		route_template(c, req, g, r);
		return true;
	}
	if (n >= 5 && strcmp(sub, "snapshot") == 0) {
		route_snapshots(c, req, g, pp, r);
		return true;
	}
	if (n == 6 && strcmp(sub, "agent") == 0 && (get || post)) {
		route_agent(c, req, g, s[5], r);
		return true;
	}
	if (strcmp(sub, "status") == 0) {
		if (n == 5 && get) {
			const char *const subs[] = {"current", "start", "stop", "shutdown", "reboot"};
			resp_data(r, subdir_index("subdir", subs, 5));
			return true;
		}
		if (n == 6 && get && strcmp(s[5], "current") == 0) {
			if (vm_priv_check(req, r, g->vmid, "VM.Audit"))
				route_status_current(c, g, req->now, r);
			return true;
		}
		if (n == 6 && post) {
			power_route(c, req, g, s[5], &qemu_power, r);
			return true;
		}
	}
	if (n == 5 && strcmp(sub, "migrate") == 0 && (get || post)) {
		if (!vm_priv_check(req, r, g->vmid, "VM.Migrate"))
			return true;
		if (get) {
			resp_data(r, qemu_migrate_precondition(c, g, param_str(req, "target")));
			return true;
		}
		const char *target = param_str(req, "target");
		if (!target) {
			resp_param_error(r, "target", "property is missing and it is not optional");
			return true;
		}
		if (cluster_ha_managed(c, g)) {
			guest_ha_migrate_request(c, req, g, target, r);
			return true;
		}
		struct sim_task *t = qemu_start_migration(
			c, req, g, target, param_bool(req, "online", false),
			param_bool(req, "with-local-disks", false),
			param_str(req, "targetstorage"), req->now, r);
		if (t)
			resp_task(r, t);
		return true;
	}
	return false;
}
