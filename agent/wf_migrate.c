/* wf_migrate.c - the `migrate` workflow on the job engine (wf_migrate.h):
 * plan from what PVE says (migrate_plan.h), refuse before sending
 * anything, set the downtime limit for this migration, migrate (the task
 * through job_wait(), the TCP probe beside it, an HA request's child task
 * followed), verify the guest on the target, put the downtime limit back
 * and keep the home tag. */
#include "wf_migrate.h"
#include "wf_params.h"

#include "clock.h"
#include "guestname.h"
#include "json.h"
#include "log.h"
#include "migrate_facts.h"
#include "migrate_plan.h"
#include "migrate_store.h"
#include "probe.h"
#include "pvecfg.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct mig_ctx {
	struct guest_ref g;
	const char *target;        /* from params */
	const char *storage_map;
	long long bwlimit, max_downtime, probe_port; /* bwlimit in KiB/s */
	char *address;             /* params, else vars (a copy) */
	bool dry_run;
	bool force_ha;             /* params: migrate an HA guest without them */
	bool map_given, bw_given;  /* params (not [migrate]'s defaults) */
	/* the plan, made by the plan step or read back from its vars */
	struct mig_plan plan;
	bool running;
	unsigned restart_timeout;
	/* the run's cluster facts: attached (a command line's, a drain's),
	 * else this job's own */
	struct mig_cluster *mc, *own_mc;
	struct guest_ref found;    /* attached: the guest the command found */
};

void wf_migrate_attach(struct job *j, struct mig_cluster *mc, const struct guest_ref *g)
{
	struct mig_ctx *m = job_ctx(j);
	m->mc = mc;
	guest_ref_clear(&m->found);
	if (g && guest_ref_copy(&m->found, g) < 0)
		guest_ref_clear(&m->found);
}

json_object *wf_migrate_params(const char *target, const char *storage_map,
			       unsigned bwlimit_mib, unsigned max_downtime_ms, bool dry_run)
{
	const struct job_params_decl *d = &wf_migrate_params_decl;
	json_object *o = json_object_new_object();
	if (o && (job_param_set_str(d, o, "target", target) < 0 ||
		  job_param_set_str(d, o, "storage_map", storage_map) < 0 ||
		  (bwlimit_mib && job_param_set_int(d, o, "bwlimit", bwlimit_mib) < 0) ||
		  (max_downtime_ms && job_param_set_int(d, o, "max_downtime", max_downtime_ms) < 0) ||
		  (dry_run && job_param_set_bool(d, o, "dry_run", true) < 0))) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static int mig_open(struct job *j, void *ctx)
{
	struct mig_ctx *m = ctx;
	json_object *v = job_vars(j);
	long long x = 0;
	m->target = job_param_str(j, "target");
	if (!m->target || !*m->target)
		return pve_error_set(job_err(j), PVE_ERR_CONFIG, "migrate: no target node"), -1;
	m->storage_map = job_param_str(j, "storage_map");
	m->bwlimit = job_param_int(j, "bwlimit");
	m->max_downtime = job_param_int(j, "max_downtime");
	m->probe_port = job_param_int(j, "probe_port");
	m->dry_run = job_param_bool(j, "dry_run");
	m->force_ha = job_param_bool(j, "force_ha");
	m->map_given = m->storage_map != NULL;
	m->bw_given = m->bwlimit > 0;
	if (job_param_str(j, "address") && !(m->address = strdup(job_param_str(j, "address"))))
		return pve_error_oom(job_err(j));
	const struct conf *cf = job_env(j)->conf;
	/* params in MiB/s, [migrate] bwlimit in KiB/s as PVE takes it */
	m->bwlimit = m->bwlimit ? m->bwlimit * 1024 : cf ? cf->migrate.bwlimit : 0;
	if (!m->storage_map && cf)
		m->storage_map = cf->migrate.target_storage;
	if (!m->probe_port)
		m->probe_port = cf && cf->migrate.probe_port ? cf->migrate.probe_port
			      : cf && cf->ssh.port ? cf->ssh.port : 22;
	m->restart_timeout = 180;
	if (!m->mc && !(m->mc = m->own_mc = mig_cluster_new()))
		return pve_error_oom(job_err(j));
	if (json_int(v, "vmid", &x)) {
		/* resumed: what the plan step found and decided */
		const char *node = json_str(v, "node"), *type = json_str(v, "type");
		const char *ts = json_str(v, "targetstorage");
		m->g.vmid = (int)x;
		if (type)
			guest_type_parse(type, &m->g.type);
		if ((node && !(m->g.node = strdup(node))) || !(m->g.name = strdup(job_subject(j))) ||
		    (ts && !(m->plan.targetstorage = strdup(ts))))
			return pve_error_oom(job_err(j));
		const char *meth = json_str(v, "method");
		for (int k = MIG_NONE; meth && k <= MIG_RESTART; k++)
			if (strcmp(meth, mig_method_name((enum mig_method)k)) == 0)
				m->plan.method = (enum mig_method)k;
		m->plan.via_ha = json_int(v, "via_ha", &x) && x;
		m->plan.with_local_disks = json_int(v, "with_local_disks", &x) && x;
		m->running = json_int(v, "was_running", &x) && x;
		if (json_int(v, "memory", &x))
			m->plan.memory = (uint64_t)x;
		if (json_int(v, "disk_bytes", &x))
			m->plan.disk_bytes = (uint64_t)x;
		if (!m->address && json_str(v, "address") &&
		    !(m->address = strdup(json_str(v, "address"))))
			return pve_error_oom(job_err(j));
	}
	return 0;
}

static void mig_close(struct job *j, void *ctx)
{
	(void)j;
	struct mig_ctx *m = ctx;
	guest_ref_clear(&m->g);
	guest_ref_clear(&m->found);
	mig_plan_free(&m->plan);
	free(m->address);
	mig_cluster_free(m->own_mc);
}

static int save_plan(struct job *j, struct mig_ctx *m)
{
	const struct mig_plan *p = &m->plan;
	if (job_set_guest(j, m->g.vmid, m->g.node) < 0 ||
	    job_set_str(j, "type", guest_type_name(m->g.type)) < 0 ||
	    job_set_str(j, "method", mig_method_name(p->method)) < 0 ||
	    job_set_bool(j, "via_ha", p->via_ha) < 0 ||
	    job_set_bool(j, "with_local_disks", p->with_local_disks) < 0 ||
	    job_set_bool(j, "was_running", m->running) < 0 ||
	    job_set_str(j, "targetstorage", p->targetstorage) < 0 ||
	    job_set_int(j, "memory", (long long)p->memory) < 0 ||
	    job_set_int(j, "disk_bytes", (long long)p->disk_bytes) < 0 ||
	    job_set_int(j, "estimate_s",
			(long long)migrate_estimate_s(p->method, p->memory, p->disk_bytes, 0, 0)) <
		    0 ||
	    job_set_str(j, "address", m->address) < 0)
		return -1;
	return 0;
}

static int retag(struct job *j, const char *home, bool unhome);

/* The guest is on its target already (a resumed or rerun migration whose
 * move happened): an undrain's guest someone brought home loses its tag,
 * a drain's gets its home tag; nothing else is sent. */
static enum step_rc already_on_target(struct job *j, struct mig_ctx *m)
{
	if (job_set_guest(j, m->g.vmid, m->g.node) < 0 || job_set_str(j, "method", "none") < 0)
		return pve_error_oom(job_err(j));
	const char *home = job_param_str(j, "home");
	bool unhome = job_param_bool(j, "unhome");
	if (!m->dry_run && (home || unhome) && retag(j, home, unhome) < 0)
		return STEP_RC_FAIL;
	job_summary(j, "already on %s", m->target);
	return STEP_RC_END;
}

/* An HA-managed guest: PVE's CRM migrates a VM with force,
 * with-local-disks and online and nothing else (pve-ha-manager
 * src/PVE/HA/Resources/PVEVM.pm migrate), a container by shutdown, offline
 * migration and start (PVECT.pm): a storage map or a bandwidth limit never
 * reaches the migration. Given in the params: refused (-1, the job's
 * error), or with force_ha noted and dropped; [migrate]'s defaults are
 * dropped with a note. The plan is then made without them. */
static int ha_options(struct job *j, struct mig_ctx *m, struct mig_facts *f)
{
	const char *given = m->map_given && m->bw_given ? "a storage map and a bandwidth limit"
			    : m->map_given		 ? "a storage map"
			    : m->bw_given		 ? "a bandwidth limit"
							 : NULL;
	if (given && !m->force_ha) {
		job_fail(j, PVE_ERR_CONFIG,
			 "cannot migrate %s to %s: it is HA-managed, and PVE's HA stack migrates "
			 "it with options of its own (%s), so %s would not apply; migrate it "
			 "without them, or give --force-ha to have HA migrate it without them",
			 job_subject(j), m->target,
			 m->g.type == GUEST_QEMU ? "online, with local disks"
						 : "shut down, migrated offline, started",
			 given);
		return -1;
	}
	if (given)
		job_note(j, "%s: HA-managed: HA migrates it without %s (--force-ha)",
			 job_subject(j), given);
	else if (m->storage_map || m->bwlimit)
		job_note(j, "%s: HA-managed: HA migrates it without [migrate]'s %s",
			 job_subject(j), m->storage_map && m->bwlimit ? "target_storage and bwlimit"
					 : m->storage_map ? "target_storage" : "bwlimit");
	m->storage_map = f->storage_map = NULL;
	m->bwlimit = 0;
	return 0;
}

static enum step_rc mig_plan_step(struct job *j)
{
	struct mig_ctx *m = job_ctx(j);
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	guest_ref_clear(&m->g);
	/* the guest the command found (attached once), else from one listing;
	 * its status is read with its facts below */
	int found = m->found.node ? guest_ref_copy(&m->g, &m->found) < 0 ? pve_error_oom(err) : 1
				  : guest_find_listed(c, job_subject(j), &m->g, err);
	guest_ref_clear(&m->found);
	if (found < 0)
		return STEP_RC_FAIL;
	if (!found) {
		guest_not_found(job_subject(j), err);
		return STEP_RC_FAIL;
	}
	if (m->g.template)
		return job_fail(j, PVE_ERR_CONFIG, "'%s' (VMID %d) is a template; pvagent does not "
				"migrate templates", job_subject(j), m->g.vmid);
	if (m->g.node && strcmp(m->g.node, m->target) == 0)
		return already_on_target(j, m);
	json_object *storages = NULL;
	struct mig_read rd = {0};
	struct mig_facts f = {
		.target = m->target, .storage_map = m->storage_map,
		.restart_timeout = m->restart_timeout,
	};
	const struct conf *cf = job_env(j)->conf;
	f.memory_reserve = (uint64_t)(cf ? cf->migrate.memory_reserve : 1024) << 20;
	f.no_live_local_disks = cf && !cf->migrate.with_local_disks;
	enum step_rc rc = STEP_RC_FAIL;
	if (mig_read_guest(c, m->mc, &m->g, m->target, &rd, &f, err) < 0) {
		/* not on the node the listing names: the listing lags behind a
		 * move (an earlier run's task that ended after it was killed);
		 * asked of the target itself */
		struct pve_error e2 = {0};
		int on = err->kind == PVE_ERR_NOT_FOUND
				 ? guest_on_node(c, &m->g, m->target, NULL, &e2) : 0;
		pve_error_clear(&e2);
		char *tn = on > 0 ? strdup(m->target) : NULL;
		if (tn) {
			pve_error_clear(err);
			free(m->g.node);
			m->g.node = tn;
			rc = already_on_target(j, m);
		}
		goto out;
	}
	/* renamed since the listing: not the guest named */
	const char *now_named = json_str(rd.status, "name");
	if (!guest_arg_is_vmid(job_subject(j), NULL) && now_named &&
	    strcasecmp(now_named, job_subject(j)) != 0) {
		guest_not_found(job_subject(j), err);
		goto out;
	}
	m->running = f.running;
	if (f.ha_managed && ha_options(j, m, &f) < 0)
		goto out;
	if (mig_read_target(c, m->mc, &f, &storages, err) < 0)
		goto out;
	mig_plan_free(&m->plan);
	if (migrate_plan(&f, &m->plan) < 0) {
		pve_error_oom(err);
		goto out;
	}
	if (m->plan.refusal) {
		rc = job_fail(j, PVE_ERR_CONFIG, "cannot migrate %s to %s: %s", job_subject(j),
			      m->target, m->plan.refusal);
		goto out;
	}
	if (!m->address && m->running)
		m->address = guest_config_address(rd.config, m->g.type);
	if (!m->address && m->running) {
		/* a DHCP guest: its agent says its address, for the probe that
		 * measures the gap clients see (none: PVE's downtime only) */
		struct guest_wait w = *job_wait(j);
		w.address_timeout_s = 2;
		struct pve_error ae = {0};
		if (guest_address(job_pve(j), &m->g, GUEST_ADDR_AGENT, NULL, &w, &m->address,
				  &ae) < 0)
			m->address = NULL;
		pve_error_clear(&ae);
	}
	if (m->plan.note)
		job_note(j, "%s: %s", job_subject(j), m->plan.note);
	/* PVE 9: HA moves the guests in positive affinity along */
	json_object *dep = NULL;
	if (json_object_object_get_ex(rd.pre, "dependent-ha-resources", &dep) &&
	    json_object_is_type(dep, json_type_array) && json_object_array_length(dep))
		job_note(j, "%s: HA migrates %s along to %s (positive resource affinity)",
			 job_subject(j), json_object_to_json_string_ext(dep, JSON_C_TO_STRING_PLAIN),
			 m->target);
	if (save_plan(j, m) < 0) {
		pve_error_oom(err);
		goto out;
	}
	job_summary(j, "%s %s migration%s to %s%s%s, about %.0f s", guest_type_name(m->g.type),
		    mig_method_name(m->plan.method), m->plan.via_ha ? " through HA" : "",
		    m->target, m->plan.with_local_disks ? " with local disks" : "",
		    m->plan.targetstorage ? " (storage map)" : "",
		    migrate_estimate_s(m->plan.method, m->plan.memory, m->plan.disk_bytes, 0, 0));
	rc = m->dry_run ? STEP_RC_END : STEP_RC_OK;
out:
	mig_read_free(&rd);
	json_object_put(storages);
	return rc;
}

/* ---- the downtime limit for this migration ------------------------------------- */

static bool wants_downtime(const struct mig_ctx *m)
{
	return m->max_downtime > 0 && m->g.type == GUEST_QEMU && m->plan.method == MIG_ONLINE;
}

static int set_downtime(struct job *j, const char *value)
{
	struct mig_ctx *m = job_ctx(j);
	struct pve_params p = {0};
	int rc;
	if (value && *value) {
		pve_params_add(&p, "migrate_downtime", value);
		rc = guest_set_config(job_pve(j), &m->g, &p, NULL, NULL, false, job_wait(j),
				      job_err(j));
	} else {
		rc = guest_set_config(job_pve(j), &m->g, &p, "migrate_downtime", NULL, false,
				      job_wait(j), job_err(j));
	}
	pve_params_free(&p);
	return rc;
}

static enum step_rc mig_downtime(struct job *j)
{
	struct mig_ctx *m = job_ctx(j);
	if (!wants_downtime(m))
		return STEP_RC_SKIP;
	json_object *config = NULL;
	if (!json_object_object_get_ex(job_vars(j), "prev_downtime", NULL)) {
		if (guest_get_config(job_pve(j), &m->g, &config, job_err(j)) < 0)
			return STEP_RC_FAIL;
		char *prev = json_scalar_dup(config, "migrate_downtime");
		json_object_put(config);
		int r = job_set_str(j, "prev_downtime", prev ? prev : "");
		free(prev);
		if (r < 0 || job_save(j) < 0)
			return pve_error_oom(job_err(j));
	}
	char *v = strprintf("%.3f", (double)m->max_downtime / 1000.0);
	if (!v)
		return pve_error_oom(job_err(j));
	int r = set_downtime(j, v);
	if (r == 0)
		job_summary(j, "migrate_downtime %s s for this migration (was %s)", v,
			    *json_str(job_vars(j), "prev_downtime")
				    ? json_str(job_vars(j), "prev_downtime") : "PVE's default");
	free(v);
	return r < 0 ? STEP_RC_FAIL : STEP_RC_OK;
}

/* Put the limit back on the node the guest is on now. */
static int restore_downtime(struct job *j)
{
	struct mig_ctx *m = job_ctx(j);
	const char *prev = json_str(job_vars(j), "prev_downtime");
	if (!prev)
		return 0;
	/* after the migration it is on the target, after a failed one not */
	int on = guest_on_node(job_pve(j), &m->g, m->target, NULL, job_err(j));
	if (on < 0)
		return -1;
	if (on && strcmp(m->g.node, m->target) != 0) {
		char *node = strdup(m->target);
		if (!node)
			return pve_error_oom(job_err(j));
		free(m->g.node);
		m->g.node = node;
	}
	if (set_downtime(j, prev) < 0)
		return -1;
	return job_set_str(j, "prev_downtime", NULL);
}

static int mig_downtime_undo(struct job *j)
{
	return restore_downtime(j);
}

/* ---- the migration ------------------------------------------------------------- */

/* The newest task of type for the guest on node that started at since
 * (unix seconds) or later, as PVE's task list shows it ({upid, starttime,
 * endtime once ended}; a copy), polled until it shows (and with ended,
 * until it has ended), up to the lock timeout. 0, or -1 with the job's
 * error. */
static int ha_task(struct job *j, const char *node_name, const char *type, long long since,
		   bool ended, json_object **entry)
{
	struct mig_ctx *m = job_ctx(j);
	const struct guest_wait *w = job_wait(j);
	const struct pve_clock *clk = job_env(j)->clock;
	double limit = pve_clock_now(clk) + (w->lock_timeout_s > 0 ? w->lock_timeout_s : 300);
	for (;;) {
		int r = task_find_newest(job_pve(j), node_name, type, m->g.vmid, since, ended, entry,
					 job_err(j));
		if (r == 1 || r < 0)
			return r < 0 ? -1 : 0;
		if (job_stopping(j) || pve_clock_now(clk) > limit) {
			pve_error_set(job_err(j), PVE_ERR_TASK_TIMEOUT,
				      r == 2 ? "the HA stack's %s task for %s %d on %s did not end"
					     : "the HA stack started no %s task for %s %d on %s",
				      type, m->g.type == GUEST_QEMU ? "VM" : "CT", m->g.vmid,
				      node_name);
			return -1;
		}
		pve_clock_sleep(clk, w->poll_s > 0 ? w->poll_s : 1.0);
	}
}

/* The migration task the HA stack started for the guest after our
 * request at since: its UPID (malloc'd) once it shows on the source node. */
static int ha_child(struct job *j, long long since, char **upid)
{
	struct mig_ctx *m = job_ctx(j);
	json_object *e = NULL;
	*upid = NULL;
	if (ha_task(j, m->g.node, m->g.type == GUEST_QEMU ? "qmigrate" : "vzmigrate", since, false,
		    &e) < 0)
		return -1;
	*upid = strdup(json_str(e, "upid"));
	json_object_put(e);
	return *upid ? 0 : pve_error_oom(job_err(j));
}

/* A running container through HA (pve-ha-manager Resources/PVECT.pm
 * migrate): its LRM shuts it down (vzshutdown on the source), migrates it
 * offline, and the target's LRM starts it afterwards (vzstart): it is down
 * from the shutdown's start to the start's end, which the migration task
 * alone leaves out. Waits for that start. 0 with *ms, or -1. */
static int ha_ct_downtime(struct job *j, long long since, long *ms)
{
	struct mig_ctx *m = job_ctx(j);
	json_object *sd = NULL, *st = NULL;
	long long from = 0, to = 0;
	if (ha_task(j, m->g.node, "vzshutdown", since, false, &sd) < 0 ||
	    ha_task(j, m->target, "vzstart", since, true, &st) < 0) {
		json_object_put(sd);
		return -1;
	}
	json_int(sd, "starttime", &from);
	json_int(st, "endtime", &to);
	json_object_put(sd);
	json_object_put(st);
	*ms = to >= from ? (long)(to - from) * 1000 : 0;
	return 0;
}

static void keep_figures(struct job *j, const struct task_result *r)
{
	if (r->downtime_ms >= 0)
		job_set_int(j, "downtime_ms", r->downtime_ms);
	if (r->duration_s >= 0)
		job_set_int(j, "duration_s", r->duration_s);
	if (r->speed >= 0)
		job_set_int(j, "speed", (long long)r->speed);
	if (r->transferred >= 0)
		job_set_int(j, "transferred", (long long)r->transferred);
}

static enum step_rc mig_migrate(struct job *j)
{
	struct mig_ctx *m = job_ctx(j);
	struct pve_error *err = job_err(j);
	struct mig_facts f = {.type = m->g.type, .target = m->target,
			      .restart_timeout = m->restart_timeout};
	struct pve_params p = {0};
	/* through HA: no bandwidth limit (ha_options) */
	if (migrate_plan_params(&m->plan, &f, m->plan.via_ha ? 0 : (unsigned)m->bwlimit, &p) < 0) {
		pve_params_free(&p);
		return pve_error_oom(err);
	}
	struct probe *pr = NULL;
	if (m->address && m->running)
		pr = probe_start(m->address, (unsigned)m->probe_port, 10,
				 job_env(j)->conf ? job_env(j)->conf->migrate.timeout : 3600);
	double t0 = clock_unix_now();
	long long since = (long long)t0 - 2;
	struct task_result res;
	const char *child = json_str(job_vars(j), "child_upid");
	int rc = 0;
	if (child) /* resumed: the HA tasks are those after the first request */
		json_int(job_vars(j), "ha_since", &since);
	if (!child)
		rc = guest_migrate(job_pve(j), &m->g, &p, job_wait(j), &res, err);
	else
		memset(&res, 0, sizeof res);
	pve_params_free(&p);
	if (rc == 0 && m->plan.via_ha) {
		/* the HA request's task only queued it: follow the migration */
		char *upid = child ? strdup(child) : NULL;
		bool oom = child && !upid;
		if (!child && (rc = ha_child(j, since, &upid)) == 0)
			oom = job_set_str(j, "child_upid", upid) < 0 ||
			      job_set_int(j, "ha_since", since) < 0 || job_save(j) < 0;
		else if (!child) /* the request went through: HA may move it yet */
			err->ambiguous = true;
		if (oom)
			rc = pve_error_oom(err);
		if (rc == 0) {
			task_result_free(&res);
			struct guest_wait w = *job_wait(j);
			w.attach = true;
			rc = guest_wait_task(job_pve(j), upid, "migrate", &w, &res, err);
		}
		free(upid);
		long ms = -1;
		if (rc == 0 && m->g.type == GUEST_LXC && m->plan.method == MIG_RESTART) {
			if ((rc = ha_ct_downtime(j, since, &ms)) < 0)
				err->ambiguous = true; /* moved; its start not seen */
			else
				res.downtime_ms = ms;
		}
	}
	struct probe_result pres = {.longest_gap_ms = -1};
	probe_stop(pr, &pres);
	if (rc < 0) {
		task_result_free(&res);
		return STEP_RC_FAIL;
	}
	if (m->plan.method == MIG_RESTART && res.downtime_ms < 0)
		/* a restart migration is down from its shutdown to its start */
		res.downtime_ms = res.duration_s >= 0 ? res.duration_s * 1000
						      : (long)(res.elapsed_s * 1000);
	keep_figures(j, &res);
	task_result_free(&res);
	job_set_int(j, "elapsed_s", (long long)(clock_unix_now() - t0 + 0.5));
	job_set_bool(j, "probed", pr != NULL && pres.ever_ok);
	job_set_int(j, "probe_gap_ms", pres.longest_gap_ms >= 0
				       ? (long long)(pres.longest_gap_ms + 0.5) : -1);
	json_object *v = job_vars(j);
	long long dt = -1, gap = -1;
	json_int(v, "downtime_ms", &dt);
	json_int(v, "probe_gap_ms", &gap);
	struct sbuf s = {0};
	sbuf_addf(&s, "on %s", m->target);
	char db[32];
	if (dt >= 0)
		sbuf_addf(&s, ", downtime %s", str_duration(db, sizeof db, (double)dt / 1000));
	if (gap >= 0)
		sbuf_addf(&s, ", clients saw %s", str_duration(db, sizeof db, (double)gap / 1000));
	else if (pr && pres.ever_ok)
		sbuf_addf(&s, ", clients saw no gap");
	job_summary(j, "%s", sbuf_str(&s));
	sbuf_free(&s);
	return STEP_RC_OK;
}

/* ---- after --------------------------------------------------------------------- */

/* A step after the migration task ran failed (a read or a write that did
 * not go through after the client's retries): the guest has moved, or may
 * have, so this is never a clean failure. The job needs attention, naming
 * what is unknown or not done; a resume (or the same request again) does
 * the rest, and a guest found on its target completes its home tag. */
static enum step_rc after_failed(struct job *j, const char *what)
{
	struct mig_ctx *m = job_ctx(j);
	struct pve_error *e = job_err(j);
	if (e->kind == PVE_OK)
		pve_error_set(e, PVE_ERR_API, "%s failed", what);
	e->ambiguous = true;
	job_set_left(j, "VM %d was migrated to %s; %s is unknown or not done: "
		     "'pvagent resume %lld' finishes it", m->g.vmid, m->target, what, job_id(j));
	return STEP_RC_FAIL;
}

static enum step_rc mig_verify(struct job *j)
{
	struct mig_ctx *m = job_ctx(j);
	char *status = NULL;
	int on = guest_on_node(job_pve(j), &m->g, m->target, &status, job_err(j));
	if (on < 0)
		return after_failed(j, "where it is now");
	enum step_rc rc = STEP_RC_OK;
	if (!on) {
		job_set_left(j, "VM %d is not on %s after its migration task ended", m->g.vmid,
			     m->target);
		rc = job_fail(j, PVE_ERR_API, "VM %d is not on %s after the migration", m->g.vmid,
			      m->target);
	} else if (m->running && (!status || strcmp(status, "running") != 0)) {
		job_set_left(j, "VM %d is %s on %s; it ran before", m->g.vmid,
			     status ? status : "not running", m->target);
		rc = job_fail(j, PVE_ERR_API, "VM %d is %s on %s after the migration", m->g.vmid,
			      status ? status : "not running", m->target);
	} else {
		/* reachable again (the probe's port), when the guest has an address */
		int up = m->running && m->address
				 ? probe_once(m->address, (unsigned)m->probe_port, 2000) : -1;
		job_summary(j, "%s on %s%s", status ? status : "present", m->target,
			    up == 1 ? ", answers on its port" : up == 0 ? ", its port does not answer"
								    : "");
		if (up == 0)
			job_note(j, "%s: %s port %lld does not answer after the migration",
				 job_subject(j), m->address, m->probe_port);
		char *node = strdup(m->target);
		if (!node || job_set_guest(j, m->g.vmid, node) < 0) {
			free(node);
			rc = pve_error_oom(job_err(j));
		} else {
			free(m->g.node);
			m->g.node = node;
		}
	}
	free(status);
	return rc;
}

/* The home tag: "pvagent-home-NODE" added (home) or removed (unhome).
 * PVE keeps tags ';'-separated (',' and ' ' are read too). */
static int retag(struct job *j, const char *home, bool unhome)
{
	struct mig_ctx *m = job_ctx(j);
	json_object *config = NULL;
	if (guest_get_config(job_pve(j), &m->g, &config, job_err(j)) < 0)
		return -1;
	const char *tags = json_str(config, "tags");
	struct sbuf b = {0};
	bool had = false, changed = false;
	char *copy = strdup(tags ? tags : "");
	for (char *save = NULL, *t = copy ? strtok_r(copy, ";, ", &save) : NULL; t;
	     t = strtok_r(NULL, ";, ", &save)) {
		bool is_home = strncmp(t, WF_HOME_TAG, strlen(WF_HOME_TAG)) == 0;
		if (is_home && (unhome || (home && strcmp(t + strlen(WF_HOME_TAG), home) != 0))) {
			changed = true;
			continue;
		}
		had |= is_home;
		sbuf_addf(&b, "%s%s", b.len ? ";" : "", t);
	}
	if (home && !had) {
		sbuf_addf(&b, "%s%s%s", b.len ? ";" : "", WF_HOME_TAG, home);
		changed = true;
	}
	int rc = 0;
	if (!copy)
		rc = pve_error_oom(job_err(j));
	else if (changed) {
		struct pve_params p = {0};
		if (b.len)
			pve_params_add(&p, "tags", sbuf_str(&b));
		rc = guest_set_config(job_pve(j), &m->g, &p, b.len ? NULL : "tags", NULL, false,
				      job_wait(j), job_err(j));
		pve_params_free(&p);
	}
	free(copy);
	sbuf_free(&b);
	json_object_put(config);
	return rc;
}

/* Keep the migration's figures (and the guest's home) in the store. */
static void record(struct job *j, const char *home, bool unhome)
{
	struct mig_ctx *m = job_ctx(j);
	struct store *st = job_env(j)->store;
	if (!st)
		return;
	json_object *v = job_vars(j);
	long long dur = -1, el = -1, dt = -1, gap = -1;
	json_int(v, "duration_s", &dur);
	json_int(v, "elapsed_s", &el);
	json_int(v, "downtime_ms", &dt);
	json_int(v, "probe_gap_ms", &gap);
	const char *src = json_str(v, "node");
	struct mig_record r = {
		.vmid = m->g.vmid, .name = job_subject(j), .src = src ? src : "?",
		.dst = m->target, .method = mig_method_name(m->plan.method),
		.ts = clock_unix_now(), .seconds = (double)(dur >= 0 ? dur : el),
		.mem_bytes = m->plan.memory, .disk_bytes = m->plan.disk_bytes,
		.downtime_ms = (long)dt, .probe_gap_ms = (long)gap,
	};
	char *err = NULL;
	if ((r.seconds > 0 && migstore_add(st, &r, &err) < 0) ||
	    ((home || unhome) &&
	     migstore_set_home(st, m->g.vmid, job_subject(j), home, r.ts, &err) < 0))
		log_warn("%s: %s", job_subject(j), err ? err : "cannot record the migration");
	free(err);
}

static enum step_rc mig_finish(struct job *j)
{
	const char *home = job_param_str(j, "home");
	bool unhome = job_param_bool(j, "unhome");
	bool had_limit = json_object_object_get_ex(job_vars(j), "prev_downtime", NULL);
	if (restore_downtime(j) < 0)
		return after_failed(j, "its migrate_downtime put back");
	if ((home || unhome) && retag(j, home, unhome) < 0)
		return after_failed(j, home ? "its home tag" : "its home tag removed");
	record(j, home, unhome);
	if (!had_limit && !home && !unhome)
		return STEP_RC_SKIP;
	job_summary(j, "%s%s%s%s", had_limit ? "migrate_downtime put back" : "",
		    had_limit && (home || unhome) ? "; " : "",
		    home ? "home tag " WF_HOME_TAG : unhome ? "home tag removed" : "",
		    home ? home : "");
	return STEP_RC_OK;
}

static const struct job_step_def mig_steps[] = {
	{"plan", mig_plan_step, NULL, 0},
	{"downtime", mig_downtime, mig_downtime_undo, 0},
	{"migrate", mig_migrate, NULL, JOB_STEP_TASK},
	{"verify", mig_verify, NULL, JOB_STEP_NO_UNDO},
	{"finish", mig_finish, NULL, JOB_STEP_NO_UNDO},
};

const struct job_workflow wf_migrate = {
	.name = "migrate",
	.params = &wf_migrate_params_decl,
	.steps = mig_steps,
	.n_steps = sizeof mig_steps / sizeof *mig_steps,
	.ctx_size = sizeof(struct mig_ctx),
	.open = mig_open,
	.close = mig_close,
	.undo_on_failure = true,
};
