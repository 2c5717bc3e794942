/* ceph.c - a scenario's Ceph cluster as PVE shows it (nodelife.h): one
 * monitor and osds_per_node OSDs on each node, the OSD flags, and
 * GET /cluster/ceph/status (`ceph status -f json`: health from the flags
 * and the nodes that are down), GET/PUT /cluster/ceph/flags[/FLAG] as
 * pve-manager's API2/Cluster/Ceph.pm serves them. Without Ceph, every
 * /cluster/ceph route answers what PVE answers where it is not installed
 * (PVE::Ceph::Tools::check_ceph_inited: "binary not installed:
 * /usr/bin/ceph-mon"). */
#include "nodelife.h"

#include "tasks.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Ceph's mon_osd_down_out_interval: a down OSD is marked out after it
 * (unless noout is set). */
#define DOWN_OUT_INTERVAL 600.0

static const struct {
	const char *name, *desc;
} flags[] = {
	{"nobackfill", "Backfilling of PGs is suspended."},
	{"nodeep-scrub", "Deep Scrubbing is disabled."},
	{"nodown", "OSD failure reports are being ignored, such that the monitors will not "
		   "mark OSDs down."},
	{"noin", "OSDs that were previously marked out will not be marked back in when they "
		 "start."},
	{"noout", "OSDs will not automatically be marked out after the configured interval."},
	{"norebalance", "Rebalancing of PGs is suspended."},
	{"norecover", "Recovery of PGs is suspended."},
	{"noscrub", "Scrubbing is disabled."},
	{"notieragent", "Cache tiering activity is suspended."},
	{"noup", "OSDs are not allowed to start."},
	{"pause", "Pauses read and writes."},
};
#define NFLAGS (sizeof flags / sizeof *flags)

struct sim_ceph {
	char *fsid;
	bool set[NFLAGS];
	int osds_per_node;
	unsigned osdmap_epoch;
};

static int flag_index(const char *name)
{
	for (size_t i = 0; name && i < NFLAGS; i++)
		if (strcmp(flags[i].name, name) == 0)
			return (int)i;
	return -1;
}

void ceph_free(struct sim_ceph *ceph)
{
	if (!ceph)
		return;
	free(ceph->fsid);
	free(ceph);
}

struct sim_ceph *ceph_new(json_object *spec, const char *jpath, char **err)
{
	struct sim_ceph *ceph = calloc(1, sizeof *ceph);
	if (!ceph || !(ceph->fsid = strdup("5b8a3c3e-1d2f-4a6b-9c1e-7f0d2e4a8b61"))) {
		ceph_free(ceph);
		*err = strdup("out of memory");
		return NULL;
	}
	ceph->osds_per_node = 2;
	ceph->osdmap_epoch = 120;
	json_object_object_foreach(spec, k, v) {
		if (k[0] == '_')
			continue;
		if (strcmp(k, "fsid") == 0 && json_object_is_type(v, json_type_string)) {
			char *f = strdup(json_object_get_string(v));
			if (!f) {
				*err = strdup("out of memory");
				break;
			}
			free(ceph->fsid);
			ceph->fsid = f;
		} else if (strcmp(k, "osds_per_node") == 0 && json_object_is_type(v, json_type_int) &&
			   json_object_get_int64(v) >= 1 && json_object_get_int64(v) <= 64) {
			ceph->osds_per_node = (int)json_object_get_int64(v);
		} else if (strcmp(k, "flags") == 0 && json_object_is_type(v, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(v) && !*err; i++) {
				json_object *f = json_object_array_get_idx(v, i);
				int fi = json_object_is_type(f, json_type_string)
						 ? flag_index(json_object_get_string(f)) : -1;
				if (fi < 0)
					*err = strprintf("%s.flags[%zu]: not a Ceph OSD flag (%s)", jpath,
							 i, "nobackfill, nodeep-scrub, nodown, noin, noout, "
							    "norebalance, norecover, noscrub, notieragent, "
							    "noup, pause");
				else
					ceph->set[fi] = true;
			}
		} else {
			*err = strcmp(k, "fsid") == 0 ? strprintf("%s.fsid: must be a string", jpath)
			       : strcmp(k, "osds_per_node") == 0
				       ? strprintf("%s.osds_per_node: must be an integer from 1 to 64",
						   jpath)
			       : strcmp(k, "flags") == 0
				       ? strprintf("%s.flags: must be an array of flag names", jpath)
				       : strprintf("%s: unknown key '%s'", jpath, k);
		}
		if (*err)
			break;
	}
	if (*err) {
		ceph_free(ceph);
		return NULL;
	}
	return ceph;
}

int ceph_set_flag(struct sim_ceph *ceph, const char *flag, bool on)
{
	int i = flag_index(flag);
	if (i < 0)
		return -1;
	if (ceph->set[i] != on)
		ceph->osdmap_epoch++;
	ceph->set[i] = on;
	return 0;
}

bool ceph_flag(const struct sim_ceph *ceph, const char *flag)
{
	int i = flag_index(flag);
	return i >= 0 && ceph->set[i];
}

static void add_check(json_object *checks, const char *name, const char *msg, long long count)
{
	json_object *o = json_object_new_object(), *s = json_object_new_object();
	if (!o || !s) {
		json_object_put(o);
		json_object_put(s);
		return;
	}
	jadd_str(o, "severity", "HEALTH_WARN");
	jadd_str(s, "message", msg);
	jadd_int(s, "count", count);
	json_object_object_add(o, "summary", s);
	json_object_object_add(o, "muted", json_object_new_boolean(false));
	json_object_object_add(checks, name, o);
}

/* `ceph status -f json` at now (new reference). */
static json_object *ceph_status(const struct cluster *c, double now)
{
	const struct sim_ceph *ceph = c->ceph;
	json_object *o = json_object_new_object(), *checks = json_object_new_object();
	json_object *qn = json_object_new_array(), *q = json_object_new_array();
	if (!o || !checks || !qn || !q) {
		json_object_put(o);
		json_object_put(checks);
		json_object_put(qn);
		json_object_put(q);
		return NULL;
	}
	struct sbuf set = {0}, quorum_list = {0};
	size_t hosts_down = 0, mons = c->nodes.n;
	long long osds = 0, up = 0, in = 0;
	for (size_t i = 0; i < c->nodes.n; i++) {
		const struct sim_node *n = c->nodes.v[i];
		osds += ceph->osds_per_node;
		if (n->online) {
			up += ceph->osds_per_node;
			in += ceph->osds_per_node;
			json_object_array_add(q, json_object_new_int((int)i));
			json_object_array_add(qn, json_object_new_string(n->name));
			sbuf_addf(&quorum_list, "%s%s", quorum_list.len ? "," : "", n->name);
			continue;
		}
		hosts_down++;
		/* out after the interval unless noout holds it in */
		if (ceph_flag(ceph, "noout") || !n->down_at || now - n->down_at < DOWN_OUT_INTERVAL)
			in += ceph->osds_per_node;
	}
	for (size_t i = 0; i < NFLAGS; i++)
		if (ceph->set[i])
			sbuf_addf(&set, "%s%s", set.len ? "," : "", flags[i].name);
	if (set.len) {
		char *m = strprintf("%s flag(s) set", set.s);
		add_check(checks, "OSDMAP_FLAGS", m, 1);
		free(m);
	}
	if (hosts_down) {
		long long down = osds - up;
		char *m1 = strprintf("%lld osds down", down);
		char *m2 = strprintf("%zu host%s (%lld osds) down", hosts_down,
				     hosts_down == 1 ? "" : "s", down);
		char *m3 = strprintf("%zu/%zu mons down, quorum %s", hosts_down, mons,
				     quorum_list.s ? quorum_list.s : "");
		char *m4 = strprintf("Degraded data redundancy: %zu pgs degraded, %zu pgs undersized",
				     (size_t)128, (size_t)128);
		add_check(checks, "OSD_DOWN", m1, down);
		add_check(checks, "OSD_HOST_DOWN", m2, (long long)hosts_down);
		add_check(checks, "MON_DOWN", m3, (long long)hosts_down);
		add_check(checks, "PG_DEGRADED", m4, 256);
		free(m1);
		free(m2);
		free(m3);
		free(m4);
	}
	sbuf_free(&set);
	sbuf_free(&quorum_list);
	json_object *h = json_object_new_object();
	if (h) {
		jadd_str(h, "status",
			 json_object_object_length(checks) ? "HEALTH_WARN" : "HEALTH_OK");
		json_object_object_add(h, "checks", checks);
		json_object_object_add(h, "mutes", json_object_new_array());
	} else {
		json_object_put(checks);
	}
	jadd_str(o, "fsid", ceph->fsid);
	json_object_object_add(o, "health", h);
	jadd_int(o, "election_epoch", 40 + 2 * (long long)hosts_down);
	json_object_object_add(o, "quorum", q);
	json_object_object_add(o, "quorum_names", qn);
	json_object *mm = json_object_new_object(), *om = json_object_new_object();
	json_object *pm = json_object_new_object(), *pgs = json_object_new_array();
	json_object *st = json_object_new_object();
	if (mm) {
		jadd_int(mm, "epoch", 3);
		jadd_str(mm, "min_mon_release_name", c->major >= 9 ? "squid" : "reef");
		jadd_int(mm, "num_mons", (long long)mons);
	}
	json_object_object_add(o, "monmap", mm);
	if (om) {
		jadd_int(om, "epoch", ceph->osdmap_epoch);
		jadd_int(om, "num_osds", osds);
		jadd_int(om, "num_up_osds", up);
		jadd_int(om, "num_in_osds", in);
		jadd_int(om, "num_remapped_pgs", 0);
	}
	json_object_object_add(o, "osdmap", om);
	if (st) {
		jadd_str(st, "state_name", hosts_down ? "active+undersized+degraded" : "active+clean");
		jadd_int(st, "count", 129);
		json_object_array_add(pgs, st);
	}
	if (pm) {
		json_object_object_add(pm, "pgs_by_state", pgs);
		jadd_int(pm, "num_pgs", 129);
		jadd_int(pm, "num_pools", 2);
	} else {
		json_object_put(pgs);
	}
	json_object_object_add(o, "pgmap", pm);
	return o;
}

static json_object *flags_list(const struct sim_ceph *ceph)
{
	json_object *arr = json_object_new_array();
	for (size_t i = 0; arr && i < NFLAGS; i++) {
		json_object *f = json_object_new_object();
		if (!f)
			continue;
		jadd_str(f, "name", flags[i].name);
		jadd_str(f, "description", flags[i].desc);
		json_object_object_add(f, "value", json_object_new_boolean(ceph->set[i]));
		json_object_array_add(arr, f);
	}
	return arr;
}

static void set_flags_end(struct cluster *c, struct sim_task *t, bool ok)
{
	if (!ok || !c->ceph || !t->args)
		return;
	json_object_object_foreach(t->args, k, v)
		ceph_set_flag(c->ceph, k, json_object_get_boolean(v));
}

/* PUT /cluster/ceph/flags: a cephsetflags task on the node answering
 * (Ceph.pm set_flags), setting each flag given. */
static void put_flags(struct cluster *c, const struct sim_req *req, struct sim_resp *r)
{
	json_object *args = json_object_new_object();
	if (!args) {
		resp_error(r, 500, "out of memory");
		return;
	}
	for (size_t i = 0; i < NFLAGS; i++)
		if (param_str(req, flags[i].name))
			json_object_object_add(args, flags[i].name,
					       json_object_new_boolean(
						       param_bool(req, flags[i].name, false)));
	const struct sim_node *n = c->nodes.n ? c->nodes.v[0] : NULL;
	struct sim_task *t = n ? task_new(c, n->name, "cephsetflags", "", req->userid, req->now, 1.0)
			       : NULL;
	if (!t) {
		json_object_put(args);
		resp_error(r, 500, "out of memory");
		return;
	}
	t->args = args;
	t->on_end = set_flags_end;
	for (size_t i = 0; i < NFLAGS; i++) {
		json_object *v = NULL;
		if (json_object_object_get_ex(args, flags[i].name, &v))
			task_log(t, 0.5, "%s %s", json_object_get_boolean(v) ? "set" : "unset",
				 flags[i].name);
	}
	task_apply_fault(t, req->task_fail);
	resp_task(r, t);
}

bool routes_ceph(struct cluster *c, const struct sim_req *req, struct path_parts *pp,
		 struct sim_resp *r)
{
	char **s = pp->seg;
	if (pp->n < 2 || strcmp(s[0], "cluster") != 0 || strcmp(s[1], "ceph") != 0)
		return false;
	bool get = strcmp(req->method, "GET") == 0, put = strcmp(req->method, "PUT") == 0;
	bool status = pp->n == 3 && get && strcmp(s[2], "status") == 0;
	bool fl = pp->n >= 3 && pp->n <= 4 && (get || put) && strcmp(s[2], "flags") == 0;
	if (pp->n == 2 && get) {
		const char *const subs[] = {"cmd-safety", "flags", "metadata", "status"};
		resp_data(r, subdir_index("name", subs, 4));
		return true;
	}
	if (!status && !fl)
		return false;
	static const char *const audit[] = {"Sys.Audit", "Datastore.Audit", NULL};
	if (status ? !priv_check_any(req, r, "/", audit)
		   : !priv_check(req, r, "/", put ? "Sys.Modify" : "Sys.Audit"))
		return true;
	if (!c->ceph) {
		resp_error(r, 500, "binary not installed: /usr/bin/ceph-mon");
		return true;
	}
	if (status) {
		json_object *st = ceph_status(c, req->now);
		if (st)
			resp_data(r, st);
		else
			resp_error(r, 500, "out of memory");
		return true;
	}
	if (pp->n == 3) {
		if (get)
			resp_data(r, flags_list(c->ceph));
		else
			put_flags(c, req, r);
		return true;
	}
	if (flag_index(s[3]) < 0) {
		resp_param_error(r, "flag", "value '%s' does not have a value in the enumeration "
				 "'nobackfill, nodeep-scrub, nodown, noin, noout, norebalance, "
				 "norecover, noscrub, notieragent, noup, pause'", s[3]);
		return true;
	}
	if (get) {
		resp_data(r, json_object_new_boolean(ceph_flag(c->ceph, s[3])));
		return true;
	}
	if (!param_str(req, "value")) {
		resp_param_error(r, "value", "property is missing and it is not optional");
		return true;
	}
	ceph_set_flag(c->ceph, s[3], param_bool(req, "value", false));
	resp_data(r, NULL);
	return true;
}

json_object *ceph_state(const struct cluster *c)
{
	if (!c->ceph)
		return NULL;
	json_object *o = json_object_new_object(), *set = json_object_new_array();
	if (!o || !set) {
		json_object_put(o);
		json_object_put(set);
		return NULL;
	}
	for (size_t i = 0; i < NFLAGS; i++)
		if (c->ceph->set[i])
			json_object_array_add(set, json_object_new_string(flags[i].name));
	json_object_object_add(o, "flags", set);
	jadd_int(o, "osds_per_node", c->ceph->osds_per_node);
	return o;
}
