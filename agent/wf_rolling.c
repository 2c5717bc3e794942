/* wf_rolling.c - the `rolling` and `rolling-node` workflows (wf_rolling.h):
 * the cluster's preflight and each node's maintenance, drain, update,
 * post-checks and undrain, the drains as wf_drain jobs. The pure rules
 * (quorum, order, what to do about a guest, Ceph's health, versions) are
 * rolling_plan.c's. */
#include "wf_rolling.h"

#include "clock.h"
#include "guest.h"
#include "inject.h"
#include "json.h"
#include "log.h"
#include "migrate_facts.h"
#include "rolling_plan.h"
#include "task.h"
#include "ssh.h"
#include "util.h"
#include "wf_drain.h"
#include "wf_params.h"
#include "window.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct roll_ctx {
	const struct pve_opts *po;     /* the drains' workers' (attached), or NULL */
	const char *mode, *version, *script, *window, *self;
	unsigned max_workers;
	double wait_s, poll_s, deadline;
	long long parent;
};

void wf_rolling_attach(struct job *j, const struct pve_opts *po)
{
	struct roll_ctx *r = job_ctx(j);
	r->po = po;
}

json_object *wf_rolling_params(const struct rolling_request *q)
{
	const struct job_params_decl *d = &wf_rolling_params_decl;
	json_object *p = json_object_new_object();
	if (!p || job_param_set_strv(d, p, "nodes", q->nodes, q->n_nodes) < 0 ||
	    job_param_set_str(d, p, "mode", q->mode ? q->mode : "plan") < 0 ||
	    job_param_set_str(d, p, "version", q->version) < 0 ||
	    job_param_set_str(d, p, "script", q->script) < 0 ||
	    job_param_set_str(d, p, "window", q->window) < 0 ||
	    job_param_set_str(d, p, "self", q->self) < 0 ||
	    (q->max_workers && job_param_set_int(d, p, "max_workers", q->max_workers) < 0) ||
	    (q->wait_s && job_param_set_int(d, p, "wait_s", q->wait_s) < 0) ||
	    (q->node_ssh && job_param_put(d, p, "node_ssh", json_object_get(q->node_ssh)) < 0)) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

static int roll_open(struct job *j, void *ctx)
{
	struct roll_ctx *r = ctx;
	json_object *p = job_params(j), *v = NULL;
	const struct conf *cf = job_env(j)->conf;
	long long x = 0;
	r->mode = json_str(p, "mode");
	r->version = json_str(p, "version");
	r->script = json_str(p, "script");
	r->window = json_str(p, "window");
	r->self = json_str(p, "self");
	r->max_workers = json_int(p, "max_workers", &x) && x > 0 ? (unsigned)x
		       : cf && cf->migrate.max_workers ? cf->migrate.max_workers : 2;
	r->wait_s = json_int(p, "wait_s", &x) && x > 0 ? (double)x : 86400;
	/* seconds between reads of a node's state (a fraction: the bench's
	 * simulator runs faster than real time) */
	r->poll_s = json_object_object_get_ex(p, "poll_s", &v) && json_object_get_double(v) > 0
			    ? json_object_get_double(v)
			    : 5;
	r->parent = json_int(p, "parent", &x) ? x : 0;
	if (json_object_object_get_ex(p, "deadline", &v))
		r->deadline = json_object_get_double(v);
	if (!r->mode || (strcmp(r->mode, "plan") != 0 && strcmp(r->mode, "wait") != 0 &&
			 strcmp(r->mode, "run") != 0)) {
		pve_error_set(job_err(j), PVE_ERR_CONFIG, "mode: 'plan', 'wait' or 'run', not '%s'",
			      r->mode ? r->mode : "");
		return -1;
	}
	if (r->version && !rolling_version_valid(r->version)) {
		pve_error_set(job_err(j), PVE_ERR_CONFIG, "version: '%s' is not a version (9, 9.1, "
			      "9.1.2)", r->version);
		return -1;
	}
	return 0;
}

/* ---- what the cluster says ------------------------------------------------------ */

struct cstatus {
	json_object *arr;       /* GET /cluster/status */
	const char *name;       /* the cluster's, or NULL (a single node) */
	bool quorate;
	size_t nodes, online;
};

static int read_cstatus(struct pve *c, struct cstatus *cs, struct pve_error *err)
{
	memset(cs, 0, sizeof *cs);
	if (pve_getf(c, &cs->arr, NULL, err, "/cluster/status") < 0)
		return -1;
	bool cluster = false;
	for (size_t i = 0; i < json_object_array_length(cs->arr); i++) {
		json_object *e = json_object_array_get_idx(cs->arr, i);
		const char *t = json_str(e, "type");
		if (t && strcmp(t, "cluster") == 0) {
			cluster = true;
			cs->name = json_str(e, "name");
			cs->quorate = json_int0(e, "quorate") != 0;
		} else if (t && strcmp(t, "node") == 0) {
			cs->nodes++;
			cs->online += json_int0(e, "online") != 0;
		}
	}
	if (!cluster) /* a node of its own is quorate with itself */
		cs->quorate = cs->online > 0;
	return 0;
}

static json_object *cs_node(const struct cstatus *cs, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(cs->arr); i++) {
		json_object *e = json_object_array_get_idx(cs->arr, i);
		const char *t = json_str(e, "type"), *n = json_str(e, "name");
		if (t && n && strcmp(t, "node") == 0 && strcmp(n, name) == 0)
			return e;
	}
	return NULL;
}

/* Ceph: 1 the cluster has Ceph (*status its GET /cluster/ceph/status), 0
 * none (PVE: not installed, not initialised), -1 error. Where there is
 * none PVE's check_ceph_inited dies with a 500 ("binary not installed:
 * ...", "pveceph configuration not initialized - ...": pve-manager
 * PVE/Ceph/Tools.pm 189-229): a definite answer, asked once, not retried
 * as another GET's 500 is. */
static int read_ceph(struct pve *c, json_object **status, struct pve_error *err)
{
	static const struct pve_call_opts once = {.no_retry = true};
	*status = NULL;
	if (pve_request(c, "GET", "/cluster/ceph/status", NULL, &once, status, err) >= 0)
		return 1;
	const char *m = err->message ? err->message : "";
	bool none = strstr(m, "binary not installed") || strstr(m, "configuration not initialized");
	/* what a GET retries (another 500, a timeout, no connection): again so */
	if (pve_err_retryable(err->kind) || err->kind == PVE_ERR_TIMEOUT ||
	    (err->kind == PVE_ERR_API && !none)) {
		pve_error_clear(err);
		if (pve_getf(c, status, NULL, err, "/cluster/ceph/status") == 0)
			return 1;
	}
	if (err->kind == PVE_ERR_NOT_FOUND || err->kind == PVE_ERR_NOT_IMPLEMENTED ||
	    err->kind == PVE_ERR_API || err->kind == PVE_ERR_BAD_REQUEST) {
		pve_error_clear(err);
		return 0;
	}
	return -1;
}

/* Are there HA resources (GET /cluster/ha/resources)? 1, 0, -1. */
static int has_ha(struct pve *c, struct pve_error *err)
{
	json_object *res = NULL;
	if (pve_getf(c, &res, NULL, err, "/cluster/ha/resources") < 0) {
		if (err->kind != PVE_ERR_NOT_FOUND && err->kind != PVE_ERR_NOT_IMPLEMENTED)
			return -1;
		pve_error_clear(err);
		return 0;
	}
	int n = json_object_is_type(res, json_type_array) && json_object_array_length(res) > 0;
	json_object_put(res);
	return n;
}

/* The HA status's line of node's LRM ("pve1 (maintenance mode, ...)"),
 * or NULL (malloc'd copy; *err on failure). */
static int lrm_status(struct pve *c, const char *node, char **out, struct pve_error *err)
{
	json_object *st = NULL;
	*out = NULL;
	if (pve_getf(c, &st, NULL, err, "/cluster/ha/status/current") < 0)
		return -1;
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *e = json_object_array_get_idx(st, i);
		const char *t = json_str(e, "type"), *n = json_str(e, "node");
		if (t && n && strcmp(t, "lrm") == 0 && strcmp(n, node) == 0 && json_str(e, "status"))
			*out = strdup(json_str(e, "status"));
	}
	json_object_put(st);
	return 0;
}

/* ---- phases: each step's start and end in the vars (a report's) -------------------- */

static void phase_mark(struct job *j, const char *step, const char *edge)
{
	json_object *ph = NULL, *s = NULL;
	if (!json_object_object_get_ex(job_vars(j), "phases", &ph)) {
		if (!(ph = json_object_new_object()))
			return;
		json_object_object_add(job_vars(j), "phases", ph);
	}
	if (!json_object_object_get_ex(ph, step, &s)) {
		if (!(s = json_object_new_object()))
			return;
		json_object_object_add(ph, step, s);
	}
	if (strcmp(edge, "start") == 0 && json_object_object_get_ex(s, "start", NULL))
		return; /* a resumed step keeps its first start */
	json_object_object_add(s, edge, json_object_new_double(clock_unix_now()));
}

/* ---- the per-node drains of a plan ------------------------------------------------ */

/* Node's drain planned (a dry run, not stored) with the run's cluster
 * facts mc: its moves, free_after and estimate into o. 0, or -1 with the
 * job's error. */
static int plan_node(struct job *j, struct mig_cluster *mc, const char *node, json_object *o)
{
	struct roll_ctx *r = job_ctx(j);
	struct job_env *env = job_env(j);
	struct job_env sub = {.clock = env->clock, .stop = env->stop, .conf = env->conf,
			      .wait = env->wait};
	json_object *params = wf_drain_params(NULL, 0, r->max_workers, 0, true, true, 0);
	struct job *dj = NULL;
	int rc = -1;
	if (!params || job_env_init(&sub) < 0) {
		json_object_put(params);
		return pve_error_oom(job_err(j));
	}
	if (job_new(&sub, &wf_drain, node, params, &dj, job_err(j)) == 0) {
		wf_drain_attach(dj, r->po);
		wf_drain_share(dj, mc);
		if (job_run(dj, job_pve(j)) == JOB_OUT_DONE) {
			static const char *const keys[] = {"moves", "free_after", "estimate_s"};
			for (size_t k = 0; k < 3; k++) {
				json_object *v = NULL;
				if (json_object_object_get_ex(job_vars(dj), keys[k], &v))
					json_object_object_add(o, keys[k], json_object_get(v));
			}
			rc = 0;
		} else {
			const struct pve_error *e = job_error(dj);
			pve_error_set(job_err(j), e->kind, "planning the drain of %s: %s", node,
				      e->message ? e->message : "failed");
		}
	}
	job_free(dj);
	json_object_put(params);
	job_env_fini(&sub);
	return rc;
}

static void add_check(json_object *checks, const char *check, const char *why)
{
	json_object *o = json_object_new_object();
	if (!o)
		return;
	json_object_object_add(o, "check", json_object_new_string(check));
	json_object_object_add(o, "ok", json_object_new_boolean(why == NULL));
	if (why)
		json_object_object_add(o, "detail", json_object_new_string(why));
	json_object_array_add(checks, o);
}

static bool requested(json_object *want, const char *node)
{
	size_t n = want ? json_object_array_length(want) : 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(want, i)), node) == 0)
			return true;
	return n == 0;
}

/* The plan's guests that need the admin: "todo" of node object o. The
 * number of them, or -1 out of memory. */
static long node_todo(json_object *o, const char *node)
{
	json_object *moves = NULL, *todo = json_object_new_array();
	long n = 0;
	if (!todo)
		return -1;
	json_object_object_get_ex(o, "moves", &moves);
	for (size_t i = 0; moves && i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i);
		bool oom = false;
		char *what = rolling_todo(m, node, &oom);
		if (oom) {
			json_object_put(todo);
			return -1;
		}
		if (!what)
			continue;
		json_object *t = json_object_new_object();
		json_object_object_add(t, "guest", json_object_new_string(json_str(m, "name")));
		json_object_object_add(t, "vmid", json_object_new_int(json_int0(m, "vmid")));
		json_object_object_add(t, "status", json_object_new_string(json_str(m, "status")));
		json_object_object_add(t, "what", json_object_new_string(what));
		json_object_array_add(todo, t);
		free(what);
		n++;
	}
	json_object_object_add(o, "todo", todo);
	return n;
}

static enum step_rc preflight_step(struct job *j)
{
	struct roll_ctx *r = job_ctx(j);
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	struct cstatus cs = {0};
	struct mig_cluster *mc = NULL;
	json_object *want = NULL, *ceph = NULL, *checks = json_object_new_array(),
		    *nodes = json_object_new_array(), *order = json_object_new_array(),
		    *cl = json_object_new_object();
	struct rp_node *rn = NULL;
	size_t *ord = NULL, nn = 0, failed = 0;
	enum step_rc rc = STEP_RC_FAIL;
	if (!checks || !nodes || !order || !cl || !(mc = mig_cluster_new())) {
		pve_error_oom(err);
		goto out;
	}
	if (read_cstatus(c, &cs, err) < 0)
		goto out;
	json_object_object_get_ex(job_params(j), "nodes", &want);
	/* the quorum, with a vote to spare */
	char *why = rolling_quorum_why(cs.nodes, cs.online, cs.quorate);
	add_check(checks, "quorum", why);
	failed += why != NULL;
	free(why);
	/* every node asked for is one of the cluster's */
	for (size_t i = 0; want && i < json_object_array_length(want); i++) {
		const char *n = json_object_get_string(json_object_array_get_idx(want, i));
		if (!cs_node(&cs, n)) {
			rc = job_fail(j, PVE_ERR_CONFIG, "there is no node '%s' in the cluster", n);
			goto out;
		}
	}
	/* HA: its quorum and the nodes already in maintenance */
	int ha = has_ha(c, err);
	if (ha < 0)
		goto out;
	json_object *hs = NULL;
	if (ha && mig_cluster_ha_status(mc, c, &hs, err) < 0)
		goto out;
	struct sbuf hb = {0};
	for (size_t i = 0; hs && i < json_object_array_length(hs); i++) {
		json_object *e = json_object_array_get_idx(hs, i);
		const char *t = json_str(e, "type"), *st = json_str(e, "status");
		if (!t || !st)
			continue;
		if (strcmp(t, "quorum") == 0 && strcmp(st, "OK") != 0)
			sbuf_addf(&hb, "%sHA quorum: %s", hb.len ? "; " : "", st);
		if (strcmp(t, "lrm") == 0 && strstr(st, "maintenance mode"))
			sbuf_addf(&hb, "%s%s is in HA maintenance already", hb.len ? "; " : "",
				  json_str(e, "node") ? json_str(e, "node") : "?");
		if (strcmp(t, "lrm") == 0 && strstr(st, "dead?"))
			sbuf_addf(&hb, "%sthe LRM of %s is not running", hb.len ? "; " : "",
				  json_str(e, "node") ? json_str(e, "node") : "?");
	}
	add_check(checks, "ha", hb.len ? sbuf_str(&hb) : NULL);
	failed += hb.len > 0;
	sbuf_free(&hb);
	/* Ceph, where there is Ceph */
	int has_ceph = read_ceph(c, &ceph, err);
	if (has_ceph < 0)
		goto out;
	if (has_ceph) {
		why = rolling_ceph_why(ceph);
		add_check(checks, "ceph", why);
		failed += why != NULL;
		free(why);
	}
	json_object_object_add(cl, "name", cs.name ? json_object_new_string(cs.name) : NULL);
	json_object_object_add(cl, "quorate", json_object_new_boolean(cs.quorate));
	json_object_object_add(cl, "nodes", json_object_new_int((int)cs.nodes));
	json_object_object_add(cl, "online", json_object_new_int((int)cs.online));
	json_object_object_add(cl, "ha", json_object_new_boolean(ha));
	json_object_object_add(cl, "ceph", json_object_new_boolean(has_ceph));
	/* per node: its version and its drain's plan */
	rn = calloc(cs.nodes + 1, sizeof *rn);
	ord = calloc(cs.nodes + 1, sizeof *ord);
	if (!rn || !ord) {
		pve_error_oom(err);
		goto out;
	}
	struct sbuf cap = {0}, off = {0};
	long todo = 0;
	for (size_t i = 0; i < json_object_array_length(cs.arr); i++) {
		json_object *e = json_object_array_get_idx(cs.arr, i);
		const char *t = json_str(e, "type"), *name = json_str(e, "name");
		if (!t || strcmp(t, "node") != 0 || !name || !requested(want, name))
			continue;
		json_object *o = json_object_new_object();
		if (!o || json_object_array_add(nodes, o) < 0) {
			json_object_put(o);
			pve_error_oom(err);
			goto out_bufs;
		}
		bool online = json_int0(e, "online") != 0;
		bool self = r->self && strcmp(r->self, name) == 0;
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "online", json_object_new_boolean(online));
		json_object_object_add(o, "self", json_object_new_boolean(self));
		rn[nn] = (struct rp_node){.name = name, .self = self};
		nn++;
		if (!online) {
			sbuf_addf(&off, "%s%s", off.len ? ", " : "", name);
			continue;
		}
		const struct pve_version *v = NULL;
		if (mig_cluster_version(mc, c, name, false, &v, err) < 0)
			goto out_bufs;
		if (v && v->version)
			json_object_object_add(o, "version", json_object_new_string(v->version));
		job_progress(j, -1, "planning the drain of %s", name);
		if (plan_node(j, mc, name, o) < 0)
			goto out_bufs;
		json_object *moves = NULL;
		json_object_object_get_ex(o, "moves", &moves);
		size_t nowhere = 0;
		for (size_t k = 0; moves && k < json_object_array_length(moves); k++) {
			json_object *m = json_object_array_get_idx(moves, k);
			const char *st = json_str(m, "status");
			if (st && strcmp(st, "move") == 0)
				rn[nn - 1].move_memory += (uint64_t)json_int0(m, "memory");
			nowhere += st && strcmp(st, "fits nowhere") == 0;
		}
		if (nowhere)
			sbuf_addf(&cap, "%s%zu guest%s of %s fit%s on no other node", cap.len ? "; " : "",
				  nowhere, nowhere == 1 ? "" : "s", name, nowhere == 1 ? "s" : "");
		long nt = node_todo(o, name);
		if (nt < 0) {
			pve_error_oom(err);
			goto out_bufs;
		}
		todo += nt;
	}
	add_check(checks, "online", off.len ? sbuf_str(&off) : NULL);
	add_check(checks, "capacity", cap.len ? sbuf_str(&cap) : NULL);
	failed += (off.len > 0) + (cap.len > 0);
	rolling_order(rn, nn, ord);
	for (size_t i = 0; i < nn; i++)
		json_object_array_add(order, json_object_new_string(rn[ord[i]].name));
	json_object_object_add(job_vars(j), "cluster", json_object_get(cl));
	json_object_object_add(job_vars(j), "checks", json_object_get(checks));
	json_object_object_add(job_vars(j), "nodes", json_object_get(nodes));
	json_object_object_add(job_vars(j), "order", json_object_get(order));
	if (failed) {
		struct sbuf b = {0};
		for (size_t i = 0; i < json_object_array_length(checks); i++) {
			json_object *k = json_object_array_get_idx(checks, i);
			if (!json_flag(k, "ok"))
				sbuf_addf(&b, "%s%s: %s", b.len ? "; " : "", json_str(k, "check"),
					  json_str(k, "detail"));
		}
		rc = job_fail(j, PVE_ERR_API, "the cluster is not ready for a rolling run, nothing "
			      "changed: %s", sbuf_str(&b));
		sbuf_free(&b);
	} else {
		job_summary(j, "%zu node%s in order; %ld guest%s need%s a decision", nn,
			    nn == 1 ? "" : "s", todo, todo == 1 ? "" : "s", todo == 1 ? "s" : "");
		rc = strcmp(r->mode, "plan") == 0 ? STEP_RC_END : STEP_RC_OK;
	}
out_bufs:
	sbuf_free(&cap);
	sbuf_free(&off);
out:
	free(rn);
	free(ord);
	json_object_put(ceph);
	json_object_put(cl);
	json_object_put(checks);
	json_object_put(nodes);
	json_object_put(order);
	if (rc == STEP_RC_FAIL && err->kind == PVE_OK)
		pve_error_oom(err);
	json_object_put(cs.arr);
	mig_cluster_free(mc);
	return rc;
}

/* ---- the nodes, one child job each ---------------------------------------------------- */

static json_object *node_var(struct job *j, const char *name)
{
	json_object *nodes = NULL;
	json_object_object_get_ex(job_vars(j), "nodes", &nodes);
	for (size_t i = 0; nodes && i < json_object_array_length(nodes); i++) {
		json_object *o = json_object_array_get_idx(nodes, i);
		if (json_str(o, "name") && strcmp(json_str(o, "name"), name) == 0)
			return o;
	}
	return NULL;
}

/* --window: wait until it is open; its end into *end. 0, or -1 (the job's
 * error; a stop: interrupted). */
static int window_wait(struct job *j, double *end)
{
	struct roll_ctx *r = job_ctx(j);
	const struct conf *cf = job_env(j)->conf;
	const struct conf_window *w = NULL;
	*end = 0;
	if (!r->window)
		return 0;
	for (size_t i = 0; cf && i < cf->n_windows && !w; i++)
		if (strcmp(cf->windows[i].name, r->window) == 0)
			w = &cf->windows[i];
	if (!w) {
		pve_error_set(job_err(j), PVE_ERR_CONFIG, "--window: no [window \"%s\"]", r->window);
		return -1;
	}
	/* unix time on the job's clock (a test's simulated one advances it) */
	const struct pve_clock *clk = job_wait(j)->clock;
	double mono0 = pve_clock_now(clk);
	time_t wall0 = time(NULL);
	for (;;) {
		time_t now = wall0 + (time_t)(pve_clock_now(clk) - mono0), start = 0, stop = 0;
		if (window_next(w, now, &start, &stop) < 0) {
			pve_error_set(job_err(j), PVE_ERR_CONFIG, "window %s never opens again",
				      r->window);
			return -1;
		}
		if (start <= now) {
			*end = (double)stop;
			return 0;
		}
		job_progress(j, -1, "waiting for window %s to open (in %lld s)", r->window,
			     (long long)(start - now));
		pve_clock_sleep(clk, start - now > 60 ? 60 : (double)(start - now));
		if (job_stopping(j)) {
			pve_error_set(job_err(j), PVE_ERR_API, "interrupted");
			return -1;
		}
	}
}

/* The guests away from home after node's child nj: moved off by its
 * drain and not back by its undrain. */
static void away_from_home(json_object *nv, struct sbuf *b)
{
	json_object *done = NULL;
	json_object_object_get_ex(nv, "moves_done", &done);
	size_t n = done ? json_object_array_length(done) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *m = json_object_array_get_idx(done, i);
		const char *leg = json_str(m, "leg"), *st = json_str(m, "status");
		if (!leg || strcmp(leg, "drain") != 0 || !st ||
		    (strcmp(st, "moved") != 0 && strcmp(st, "tagged") != 0))
			continue;
		bool back = false;
		for (size_t k = 0; k < n; k++) {
			json_object *u = json_object_array_get_idx(done, k);
			back |= json_str(u, "leg") && strcmp(json_str(u, "leg"), "undrain") == 0 &&
				json_int0(u, "vmid") == json_int0(m, "vmid") && json_str(u, "status") &&
				strcmp(json_str(u, "status"), "moved") == 0;
		}
		if (!back)
			sbuf_addf(b, "%s%s (%d) on %s", b->len ? ", " : "", json_str(m, "name"),
				  json_int0(m, "vmid"), json_str(m, "to") ? json_str(m, "to") : "?");
	}
	/* the HA guests the CRM moved off for the node's maintenance */
	json_object *ha = NULL;
	json_object_object_get_ex(nv, "ha_guests", &ha);
	for (size_t i = 0; !json_flag(nv, "ha_back") && ha && i < json_object_array_length(ha); i++) {
		json_object *g = json_object_array_get_idx(ha, i);
		sbuf_addf(b, "%s%s (%d) moved by HA", b->len ? ", " : "", json_str(g, "name"),
			  json_int0(g, "vmid"));
	}
}

static json_object *child_params(struct job *j, double deadline)
{
	json_object *p = NULL;
	if (json_object_deep_copy(job_params(j), &p, NULL) < 0 || !p)
		return NULL;
	json_object_object_del(p, "nodes");
	json_object_object_add(p, "parent", json_object_new_int64(job_id(j)));
	if (deadline > 0)
		json_object_object_add(p, "deadline", json_object_new_double(deadline));
	return p;
}

/* The child job of node nv: the one its ID names (unless it ended failed
 * or cancelled: nothing it did is left), else a new one. */
static int node_job(struct job *j, json_object *nv, double deadline, struct job **out)
{
	struct pve_error *err = job_err(j);
	long long id = 0;
	json_int(nv, "job", &id);
	int lr = job_load_child(j, id, &wf_rolling_node, out);
	if (lr != 0)
		return lr < 0 ? -1 : 0;
	json_object *p = child_params(j, deadline);
	if (!p)
		return pve_error_oom(err);
	int r = job_new(job_env(j), &wf_rolling_node, json_str(nv, "name"), p, out, err);
	json_object_put(p);
	if (r < 0)
		return -1;
	/* its ID before it runs: a rerun finds it again */
	json_object_object_add(nv, "job", json_object_new_int64(job_id(*out)));
	return job_save(j) < 0 ? pve_error_oom(err) : 0;
}

static enum step_rc nodes_step(struct job *j)
{
	struct roll_ctx *r = job_ctx(j);
	json_object *order = NULL;
	json_object_object_get_ex(job_vars(j), "order", &order);
	size_t n = order ? json_object_array_length(order) : 0, done = 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = json_object_get_string(json_object_array_get_idx(order, i));
		json_object *nv = node_var(j, name);
		if (!nv)
			return job_fail(j, PVE_ERR_INTERNAL, "node %s is not in the plan", name);
		if (json_str(nv, "phase") && strcmp(json_str(nv, "phase"), "done") == 0) {
			done++;
			continue;
		}
		double end = 0;
		if (window_wait(j, &end) < 0)
			return STEP_RC_FAIL;
		struct job *nj = NULL;
		if (node_job(j, nv, end, &nj) < 0)
			return STEP_RC_FAIL;
		wf_rolling_attach(nj, r->po);
		job_progress(j, -1, "node %s (%zu of %zu)", name, i + 1, n);
		enum job_outcome o = job_run(nj, job_pve(j));
		/* what its vars say into the node's */
		static const char *const keys[] = {"phases", "moves_done", "version_after"};
		for (size_t k = 0; k < 3; k++) {
			json_object *v = NULL;
			if (json_object_object_get_ex(job_vars(nj), keys[k], &v))
				json_object_object_add(nv, keys[k], json_object_get(v));
		}
		const char *where = o == JOB_OUT_DONE ? "done" : job_failed_step(nj);
		json_object_object_add(nv, "phase", json_object_new_string(where ? where : "?"));
		if (o == JOB_OUT_DONE) {
			done++;
			if (job_save(j) < 0) {
				job_free(nj);
				return pve_error_oom(job_err(j));
			}
			job_free(nj);
			continue;
		}
		const struct pve_error *e = job_error(nj);
		char *msg = pve_error_format(e);
		struct sbuf away = {0};
		away_from_home(nv, &away);
		if (o == JOB_OUT_INTERRUPTED || job_stopping(j)) {
			free(msg);
			sbuf_free(&away);
			job_free(nj);
			return job_fail(j, PVE_ERR_API, "interrupted"); /* resumable */
		}
		const char *nl = job_left(nj);
		job_set_left(j, "%s stopped in its %s step%s%s%s%s%s", name, where ? where : "?",
			     nl ? " (" : "", nl ? nl : "", nl ? ")" : "",
			     away.len ? "; guests away from home: " : "", away.len ? sbuf_str(&away) : "");
		/* the run stopped with nodes half-done: never just "failed" */
		enum step_rc rc = job_fail(j, PVE_ERR_API, "node %s (%zu of %zu, %zu done): %s", name, i + 1, n, done,
					   msg ? msg : "failed");
		free(msg);
		sbuf_free(&away);
		job_free(nj);
		return rc;
	}
	job_summary(j, "%zu node%s done", done, done == 1 ? "" : "s");
	return STEP_RC_OK;
}

/* ---- one node: SSH --------------------------------------------------------------------- */

/* Run argv on node over SSH (its address from the cluster's status, the
 * [ssh] settings); with input on stdin. The result's exit status is the
 * caller's to judge. 0, or -1 with the job's error. */
static int node_ssh(struct job *j, const char *const *argv, const char *input,
		    struct ssh_result *res)
{
	const char *node = job_subject(j);
	const struct conf *cf = job_env(j)->conf;
	struct cstatus cs;
	struct ssh_opts so;
	struct ssh_session *s = NULL;
	struct ssh_error se = {0};
	memset(res, 0, sizeof *res);
	if (read_cstatus(job_pve(j), &cs, job_err(j)) < 0)
		return -1;
	/* the node's address: the params' node_ssh ("HOST" or "HOST:PORT"),
	 * else the cluster's (its corosync ring address), port 22 */
	json_object *ns = NULL;
	json_object_object_get_ex(job_params(j), "node_ssh", &ns);
	const char *at = json_str(ns, node);
	char *host = at ? strdup(at) : NULL, *colon = host ? strrchr(host, ':') : NULL;
	int port = 22;
	if (colon) {
		*colon = '\0';
		port = atoi(colon + 1);
	}
	const char *ip = host ? host : json_str(cs_node(&cs, node), "ip");
	int rc = -1;
	if (!ip) {
		pve_error_set(job_err(j), PVE_ERR_PROTOCOL, "the cluster's status gives no address "
			      "for node %s", node);
	} else if (port < 1 || port > 65535) {
		pve_error_set(job_err(j), PVE_ERR_CONFIG, "node_ssh %s: '%s' has no valid port", node,
			      at);
	} else if (inject_ssh_opts(cf, NULL, ip, &so) < 0) {
		pve_error_set(job_err(j), PVE_ERR_CONFIG, "node %s: [ssh] has no known_hosts", node);
	} else if ((so.port = port, so.user = "root", ssh_connect(&so, &s, &se) == 0)) {
		char *cmd = ssh_build_argv(argv);
		struct ssh_exec_opts xo = {.input = input, .input_len = input ? strlen(input) : 0,
					   .timeout_ms = -1};
		if (!cmd)
			pve_error_oom(job_err(j));
		else if (ssh_exec_cmdline(s, cmd, &xo, res, &se) == 0)
			rc = 0;
		free(cmd);
	}
	if (se.kind != SSH_OK) {
		enum job_outcome o = ssh_error_outcome(&se);
		pve_error_set(job_err(j), o == JOB_OUT_UNREACHABLE ? PVE_ERR_CONNECT : PVE_ERR_API,
			      "ssh %s (%s): %s", node, ip ? ip : "?", ssh_error_str(&se));
	}
	ssh_error_clear(&se);
	ssh_close(s);
	free(host);
	json_object_put(cs.arr);
	return rc;
}

/* node_ssh, and a non-zero exit fails the step naming the command and its
 * last output line. */
static int node_run(struct job *j, const char *const *argv, const char *input,
		    struct ssh_result *keep)
{
	struct ssh_result res;
	if (node_ssh(j, argv, input, &res) < 0)
		return -1;
	if (res.exit_status != 0) {
		const char *out = res.err.len ? sbuf_str(&res.err) : sbuf_str(&res.out);
		const char *last = out ? out : "";
		size_t l = strlen(last);
		while (l && last[l - 1] == '\n')
			l--;
		const char *nl = l ? memrchr(last, '\n', l) : NULL;
		const char *from = nl ? nl + 1 : last;
		pve_error_set(job_err(j), PVE_ERR_API, "%s: '%s' exited %d%s%.*s", job_subject(j),
			      argv[0], res.exit_status, l ? ": " : "", (int)(last + l - from), from);
		ssh_result_free(&res);
		return -1;
	}
	if (keep)
		*keep = res;
	else
		ssh_result_free(&res);
	return 0;
}

/* ---- one node: the steps ----------------------------------------------------------------- */

/* The post- and pre-checks: node online, the cluster quorate (with a vote
 * to spare when spare), Ceph's health where there is Ceph. NULL, or why
 * not (malloc'd; *err set on a failed read: -1 in *failed). */
static char *node_checks(struct job *j, bool spare, int *failed)
{
	struct cstatus cs;
	json_object *ceph = NULL;
	char *why = NULL;
	*failed = 0;
	if (read_cstatus(job_pve(j), &cs, job_err(j)) < 0) {
		*failed = -1;
		return NULL;
	}
	json_object *n = cs_node(&cs, job_subject(j));
	if (!n || !json_int0(n, "online"))
		why = strprintf("%s is not online in the cluster", job_subject(j));
	else if (spare)
		why = rolling_quorum_why(cs.nodes, cs.online, cs.quorate);
	else if (!cs.quorate)
		why = strprintf("the cluster is not quorate");
	json_object_put(cs.arr);
	int hc = why ? 0 : read_ceph(job_pve(j), &ceph, job_err(j));
	if (hc < 0)
		*failed = -1;
	else if (hc)
		why = rolling_ceph_why(ceph);
	json_object_put(ceph);
	return why;
}

static enum step_rc precheck_step(struct job *j)
{
	int failed = 0;
	char *why = node_checks(j, true, &failed);
	if (failed < 0)
		return STEP_RC_FAIL;
	if (why) {
		enum step_rc rc = job_fail(j, PVE_ERR_API, "before %s: %s", job_subject(j), why);
		free(why);
		return rc;
	}
	job_summary(j, "%s online, the cluster quorate with a vote to spare", job_subject(j));
	return STEP_RC_OK;
}

/* Poll until the LRM of the node says maintenance (on) or not (off). */
static int lrm_wait(struct job *j, bool on)
{
	struct roll_ctx *r = job_ctx(j);
	const struct pve_clock *clk = job_wait(j)->clock;
	double until = pve_clock_now(clk) + 300;
	for (;;) {
		char *st = NULL;
		if (lrm_status(job_pve(j), job_subject(j), &st, job_err(j)) < 0)
			return -1;
		bool in = st && strstr(st, "maintenance mode");
		free(st);
		if (on == in)
			return 0;
		if (pve_clock_now(clk) > until || job_stopping(j)) {
			pve_error_set(job_err(j), PVE_ERR_API, "%s: the HA status does not show the node "
				      "%s maintenance after 300 s", job_subject(j),
				      on ? "in" : "out of");
			return -1;
		}
		pve_clock_sleep(clk, r->poll_s);
	}
}

/* The HA-managed guests running on node (HA state "started"): the ones
 * PVE's CRM moves off a node in maintenance and brings back after it, as
 * [{vmid, name}]; NULL with err. */
static json_object *ha_started_on(struct pve *c, const char *node, struct pve_error *err)
{
	json_object *res = NULL;
	if (pve_getf(c, &res, NULL, err, "/cluster/resources?type=vm") < 0)
		return NULL;
	json_object *out = json_object_new_array();
	for (size_t i = 0; out && i < json_object_array_length(res); i++) {
		json_object *e = json_object_array_get_idx(res, i), *g;
		const char *n = json_str(e, "node"), *hs = json_str(e, "hastate");
		if (!n || strcmp(n, node) != 0 || !hs || strcmp(hs, "started") != 0)
			continue;
		if (!(g = json_object_new_object()) || json_object_array_add(out, g) < 0) {
			json_object_put(g);
			json_object_put(out);
			out = NULL;
			break;
		}
		json_object_object_add(g, "vmid", json_object_new_int(json_int0(e, "vmid")));
		json_add_str(g, "name", json_str(e, "name") ? json_str(e, "name") : "");
		json_add_str(g, "type", json_str(e, "type") ? json_str(e, "type") : "qemu");
	}
	json_object_put(res);
	if (!out)
		pve_error_oom(err);
	return out;
}

/* The newest ended task of type for vmid in node's task list ({upid,
 * starttime, endtime}; a copy), polled until it shows ended (up to 120 s:
 * HA's LRM starts a moved container a round after its migration). 0 with
 * *out (NULL when none showed), or -1 with e. */
static int ha_task_ended(struct job *j, const char *node_name, const char *type, int vmid,
			 json_object **out, struct pve_error *e)
{
	struct roll_ctx *r = job_ctx(j);
	const struct pve_clock *clk = job_wait(j)->clock;
	double until = pve_clock_now(clk) + 120;
	int rc;
	while ((rc = task_find_newest(job_pve(j), node_name, type, vmid, 0, true, out, e)) != 1 &&
	       rc >= 0 && pve_clock_now(clk) <= until && !job_stopping(j))
		pve_clock_sleep(clk, r->poll_s);
	return rc < 0 ? -1 : 0;
}

/* The CRM's move of an HA guest, found in the task lists of the nodes (a
 * VM: its qmigrate on the node it left, a live migration whose log gives
 * the downtime; a container: HA's vzshutdown there and its LRM's vzstart
 * on the target, down from the one's start to the other's end), appended
 * to the vars' ha_moves as a drain records its moves, status "moved by
 * HA". A task that cannot be read leaves the move without figures, said
 * in the log. 0, or -1 out of memory. */
static int ha_move_record(struct job *j, json_object *g, const char *from, const char *to,
			  const char *leg)
{
	const char *type = json_str(g, "type");
	bool vm = !type || strcmp(type, "qemu") == 0;
	int vmid = json_int0(g, "vmid");
	json_object *moves = NULL, *mv = json_object_new_object();
	if (!json_object_object_get_ex(job_vars(j), "ha_moves", &moves)) {
		moves = json_object_new_array();
		if (!moves || json_object_object_add(job_vars(j), "ha_moves", moves) < 0) {
			json_object_put(moves);
			json_object_put(mv);
			return pve_error_oom(job_err(j));
		}
	}
	if (!mv || json_object_array_add(moves, mv) < 0) {
		json_object_put(mv);
		return pve_error_oom(job_err(j));
	}
	int rc = 0;
	rc |= json_object_object_add(mv, "vmid", json_object_new_int(vmid));
	rc |= json_add_str(mv, "name", json_str(g, "name"));
	rc |= json_add_str(mv, "type", vm ? "qemu" : "lxc");
	rc |= json_add_str(mv, "leg", leg);
	rc |= json_add_str(mv, "from", from);
	rc |= json_add_str(mv, "target", to);
	rc |= json_add_str(mv, "method", vm ? "online" : "restart");
	rc |= json_add_str(mv, "status", "moved by HA");
	if (rc < 0)
		return pve_error_oom(job_err(j));
	struct pve_error e = {0};
	json_object *first = NULL, *last = NULL;
	long long t0 = 0, t1 = 0, down = -1;
	if (ha_task_ended(j, from, vm ? "qmigrate" : "vzshutdown", vmid, &first, &e) == 0 && first &&
	    (vm || ha_task_ended(j, to, "vzstart", vmid, &last, &e) == 0) && (vm || last)) {
		json_int(first, "starttime", &t0);
		json_int(last ? last : first, "endtime", &t1);
		if (vm) {
			struct task_result res = {0};
			struct guest_wait w = *job_wait(j);
			w.attach = true;
			if (guest_wait_task(job_pve(j), json_str(first, "upid"), "migrate", &w, &res,
					    &e) == 0)
				down = res.downtime_ms;
			task_result_free(&res);
		} else {
			down = (t1 - t0) * 1000;
		}
		rc |= json_object_object_add(mv, "started", json_object_new_int64(t0));
		rc |= json_object_object_add(mv, "ended", json_object_new_int64(t1));
		if (down >= 0)
			rc |= json_object_object_add(mv, "downtime_ms", json_object_new_int64(down));
	}
	if (e.kind != PVE_OK || !first || (!vm && !last))
		log_warn("%s: HA's move of %d from %s to %s: %s", job_subject(j), vmid, from, to,
			 e.kind != PVE_OK && e.message ? e.message : "its tasks did not show ended");
	pve_error_clear(&e);
	json_object_put(first);
	json_object_put(last);
	return rc < 0 ? pve_error_oom(job_err(j)) : 0;
}

/* Poll until every HA guest of the vars' ha_guests is off the node (off)
 * or back on it: the CRM moves them, not pvagent (a drain's migration of
 * the same guest would race it). 0, or -1 with the job's error naming the
 * guests still waited for after 600 s. */
static int ha_guests_wait(struct job *j, bool off)
{
	struct roll_ctx *r = job_ctx(j);
	const struct pve_clock *clk = job_wait(j)->clock;
	const char *node = job_subject(j);
	json_object *ha = NULL;
	json_object_object_get_ex(job_vars(j), "ha_guests", &ha);
	size_t n = ha ? json_object_array_length(ha) : 0;
	double until = pve_clock_now(clk) + 600;
	for (;;) {
		json_object *res = NULL;
		if (n && pve_getf(job_pve(j), &res, NULL, job_err(j), "/cluster/resources?type=vm") < 0)
			return -1;
		struct sbuf waiting = {0};
		for (size_t i = 0; i < n; i++) {
			json_object *g = json_object_array_get_idx(ha, i);
			const char *at = NULL;
			for (size_t k = 0; k < json_object_array_length(res) && !at; k++) {
				json_object *e = json_object_array_get_idx(res, k);
				if (json_int0(e, "vmid") == json_int0(g, "vmid"))
					at = json_str(e, "node");
			}
			bool moved = at && (strcmp(at, node) == 0) != off;
			const char *seen = off ? "away_at" : "back";
			if (moved && !json_object_object_get_ex(g, seen, NULL)) {
				/* once per leg: a resumed wait does not record it again */
				const char *away = json_str(g, "away_at");
				int rec = ha_move_record(j, g, off ? node : away ? away : "?",
						       off ? at : node, off ? "off" : "back");
				if (rec == 0)
					rec = json_add_str(g, seen, off ? at : node);
				if (rec == 0 && job_save(j) < 0)
					rec = pve_error_oom(job_err(j));
				if (rec < 0) {
					json_object_put(res);
					sbuf_free(&waiting);
					return -1;
				}
			}
			if (at && !moved)
				sbuf_addf(&waiting, "%s%s (%d)", waiting.len ? ", " : "",
					  json_str(g, "name"), json_int0(g, "vmid"));
		}
		json_object_put(res);
		if (!waiting.len) {
			sbuf_free(&waiting);
			return 0;
		}
		if (pve_clock_now(clk) > until || job_stopping(j)) {
			pve_error_set(job_err(j), PVE_ERR_API, "%s: HA has not moved %s %s after 600 s",
				      node, sbuf_str(&waiting), off ? "off it" : "back");
			sbuf_free(&waiting);
			return -1;
		}
		sbuf_free(&waiting);
		pve_clock_sleep(clk, r->poll_s);
	}
}

static enum step_rc maintenance_step(struct job *j)
{
	const char *node = job_subject(j);
	int ha = has_ha(job_pve(j), job_err(j));
	json_object *ceph = NULL;
	int hc = ha < 0 ? -1 : read_ceph(job_pve(j), &ceph, job_err(j));
	json_object_put(ceph);
	if (hc < 0)
		return STEP_RC_FAIL;
	if (ha) {
		/* the HA guests the CRM will move off, read before it may start:
		 * they are left to it (PVE's maintenance mode), waited for here,
		 * and brought back by it when the node leaves maintenance */
		if (!json_object_object_get_ex(job_vars(j), "ha_guests", NULL)) {
			json_object *hg = ha_started_on(job_pve(j), node, job_err(j));
			if (!hg)
				return STEP_RC_FAIL;
			json_object_object_add(job_vars(j), "ha_guests", hg);
		}
		/* said before it is sent: leave turns it off even after a crash here */
		job_set_bool(j, "ha_maintenance", true);
		job_set_left(j, "%s is in HA maintenance", node);
		if (job_save(j) < 0)
			return pve_error_oom(job_err(j));
		const char *argv[] = {"ha-manager", "crm-command", "node-maintenance", "enable",
				      node, NULL};
		if (node_run(j, argv, NULL, NULL) < 0 || lrm_wait(j, true) < 0 ||
		    ha_guests_wait(j, true) < 0)
			return STEP_RC_FAIL;
	}
	if (hc) {
		job_set_bool(j, "noout", true);
		job_set_left(j, "%s%sCeph's noout flag is set", ha ? node : "",
			     ha ? " is in HA maintenance, " : "");
		if (job_save(j) < 0)
			return pve_error_oom(job_err(j));
		const char *argv[] = {"ceph", "osd", "set", "noout", NULL};
		if (node_run(j, argv, NULL, NULL) < 0)
			return STEP_RC_FAIL;
	}
	if (!ha && !hc)
		return STEP_RC_SKIP;
	job_summary(j, "%s%s%s", ha ? "HA maintenance on" : "", ha && hc ? ", " : "",
		    hc ? "Ceph noout set" : "");
	return STEP_RC_OK;
}

/* Copy a drain's or undrain's moves, with their migrations' start and
 * end from the store, into the vars' moves_done. */
static void moves_done(struct job *j, struct job *dj, const char *leg)
{
	json_object *moves = NULL, *done = NULL;
	struct store *st = job_env(j)->store;
	if (!json_object_object_get_ex(job_vars(j), "moves_done", &done)) {
		if (!(done = json_object_new_array()))
			return;
		json_object_object_add(job_vars(j), "moves_done", done);
	}
	/* a rerun of the step: its moves again */
	for (size_t i = json_object_array_length(done); i-- > 0;) {
		const char *l = json_str(json_object_array_get_idx(done, i), "leg");
		if (l && strcmp(l, leg) == 0)
			json_object_array_del_idx(done, i, 1);
	}
	json_object_object_get_ex(job_vars(dj), "moves", &moves);
	for (size_t i = 0; moves && i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i), *o = json_object_new_object();
		if (!o)
			return;
		static const char *const copy[] = {"name", "vmid", "type", "method", "status", "job",
						   "seconds", "downtime_ms", "probe_gap_ms", "why"};
		for (size_t k = 0; k < sizeof copy / sizeof *copy; k++) {
			json_object *v = NULL;
			if (json_object_object_get_ex(m, copy[k], &v))
				json_object_object_add(o, copy[k], json_object_get(v));
		}
		bool drain = strcmp(leg, "drain") == 0;
		const char *from = drain ? job_subject(j) : json_str(m, "from");
		const char *to = drain ? json_str(m, "target") : job_subject(j);
		json_object_object_add(o, "from", from ? json_object_new_string(from) : NULL);
		json_object_object_add(o, "to", to ? json_object_new_string(to) : NULL);
		json_object_object_add(o, "leg", json_object_new_string(leg));
		long long mj = 0;
		struct store_job sj;
		char *serr = NULL;
		if (st && json_int(m, "job", &mj) && store_job_get(st, mj, &sj, &serr) == 1) {
			json_object_object_add(o, "start", json_object_new_double(sj.started));
			json_object_object_add(o, "end", json_object_new_double(sj.ended));
			store_job_free(&sj);
		}
		free(serr);
		json_object_array_add(done, o);
	}
}

/* A drain or undrain of the node as a child job (its ID in the vars under
 * key, found again by it on a rerun). Its outcome; the job's error set
 * when not done. */
static enum job_outcome run_leg(struct job *j, const struct job_workflow *wf, const char *key)
{
	struct roll_ctx *r = job_ctx(j);
	struct pve_error *err = job_err(j);
	struct job *dj = NULL;
	long long id = 0;
	if (json_int(job_vars(j), key, &id) && id > 0 && job_env(j)->store) {
		int lr = job_load(job_env(j), id, wf, &dj, err);
		if (lr < 0)
			return JOB_OUT_FAILED;
		if (lr == 1 && (job_state(dj) == JOB_FAILED || job_state(dj) == JOB_CANCELLED)) {
			job_free(dj);
			dj = NULL;
		}
	}
	if (!dj) {
		json_object *p = wf_drain_params(NULL, 0, r->max_workers, 0, false, false,
						 wf == &wf_drain ? r->deadline : 0);
		if (p)
			json_object_object_add(p, "parent", json_object_new_int64(job_id(j)));
		int sr = p ? job_new(job_env(j), wf, job_subject(j), p, &dj, err) : pve_error_oom(err);
		json_object_put(p);
		if (sr < 0)
			return JOB_OUT_FAILED;
		job_set_int(j, key, job_id(dj));
		if (job_save(j) < 0) {
			job_free(dj);
			pve_error_oom(err);
			return JOB_OUT_FAILED;
		}
	}
	wf_drain_attach(dj, r->po);
	enum job_outcome o = job_run(dj, job_pve(j));
	moves_done(j, dj, wf == &wf_drain ? "drain" : "undrain");
	if (o != JOB_OUT_DONE) {
		const struct pve_error *e = job_error(dj);
		pve_error_set(err, e->kind != PVE_OK ? e->kind : PVE_ERR_API, "%s %s: %s", wf->name,
			      job_subject(j), e->message ? e->message : "failed");
	} else {
		size_t n = 0, skipped = 0;
		json_object *moves = NULL;
		json_object_object_get_ex(job_vars(dj), "moves", &moves);
		for (size_t i = 0; moves && i < json_object_array_length(moves); i++) {
			const char *st = json_str(json_object_array_get_idx(moves, i), "status");
			n += st && (strcmp(st, "moved") == 0 || strcmp(st, "tagged") == 0);
			skipped += st && strcmp(st, "skipped") == 0;
		}
		if (skipped) {
			pve_error_set(err, PVE_ERR_API, "%s %s: %zu migration%s not started: the window "
				      "closes first", wf->name, job_subject(j), skipped,
				      skipped == 1 ? "" : "s");
			o = JOB_OUT_NEEDS_ATTENTION;
		} else {
			job_summary(j, "%zu moved (job %lld)", n, job_id(dj));
		}
	}
	job_free(dj);
	return o;
}

static int node_now(struct job *j, long long *uptime, char **version);

/* The node's uptime before its update, once (the boot the update waits
 * for is one after it); a node that cannot be read is rebooting already:
 * any uptime it shows next is after that boot. 0, or -1 out of memory. */
static int mark_uptime(struct job *j)
{
	long long up = 0;
	char *ver = NULL;
	if (json_object_object_get_ex(job_vars(j), "uptime_before", NULL))
		return 0;
	if (node_now(j, &up, &ver) < 0) {
		pve_error_clear(job_err(j));
		up = LLONG_MAX;
	}
	free(ver);
	job_set_int(j, "uptime_before", up);
	return job_save(j) < 0 ? pve_error_oom(job_err(j)) : 0;
}

static enum step_rc drain_step(struct job *j)
{
	enum job_outcome o = run_leg(j, &wf_drain, "drain_job");
	if (o == JOB_OUT_DONE && mark_uptime(j) < 0)
		return STEP_RC_FAIL;
	if (o == JOB_OUT_DONE) {
		job_set_left(j, "%s is drained%s", job_subject(j),
			     json_flag(job_vars(j), "ha_maintenance") ? " and in HA maintenance" : "");
		return STEP_RC_OK;
	}
	job_set_left(j, "%s%s%s is being drained", json_flag(job_vars(j), "ha_maintenance")
							   ? "HA maintenance on, " : "",
		     json_flag(job_vars(j), "noout") ? "noout set, " : "", job_subject(j));
	return STEP_RC_FAIL;
}

/* The node's uptime (GET /nodes/N/status) and version; -1 with err when
 * unreadable (offline, rebooting). */
static int node_now(struct job *j, long long *uptime, char **version)
{
	char *pn = pve_path_escape(job_subject(j));
	json_object *st = NULL, *v = NULL;
	int rc = -1;
	*version = NULL;
	if (pn && pve_getf(job_pve(j), &st, NULL, job_err(j), "/nodes/%s/status", pn) == 0 &&
	    json_int(st, "uptime", uptime) &&
	    pve_getf(job_pve(j), &v, NULL, job_err(j), "/nodes/%s/version", pn) == 0) {
		*version = json_str(v, "version") ? strdup(json_str(v, "version")) : NULL;
		rc = 0;
	}
	if (!pn)
		pve_error_oom(job_err(j));
	free(pn);
	json_object_put(st);
	json_object_put(v);
	return rc;
}

/* Wait until the node has booted since uptime_before (its uptime went
 * back: read again and again, a node's uptime only grows until it boots),
 * runs the expected version, is online and the cluster quorate. */
static int wait_booted(struct job *j)
{
	struct roll_ctx *r = job_ctx(j);
	const struct pve_clock *clk = job_wait(j)->clock;
	double until = pve_clock_now(clk) + r->wait_s;
	long long last = 0;
	json_int(job_vars(j), "uptime_before", &last);
	bool booted = false;
	for (;;) {
		long long up = 0;
		char *ver = NULL;
		if (node_now(j, &up, &ver) == 0) {
			if (up < last)
				booted = true;
			last = up;
			int failed = 0;
			char *why = booted ? node_checks(j, false, &failed) : NULL;
			if (failed < 0)
				pve_error_clear(job_err(j));
			bool ok = booted && !why && failed == 0 && rolling_version_is(ver, r->version);
			if (booted && ver)
				job_set_str(j, "version_after", ver);
			if (ok) {
				job_summary(j, "%s booted, runs %s", job_subject(j), ver ? ver : "?");
				free(why);
				free(ver);
				return 0;
			}
			if (booted)
				job_progress(j, -1, "%s is up, runs %s%s%s", job_subject(j),
					     ver ? ver : "?", why ? ": " : "", why ? why : "");
			else
				job_progress(j, -1, "waiting for %s to boot", job_subject(j));
			free(why);
		} else {
			if (job_err(j)->kind == PVE_ERR_AUTH || job_err(j)->kind == PVE_ERR_PERM)
				return -1;
			pve_error_clear(job_err(j)); /* rebooting */
		}
		free(ver);
		if (job_stopping(j)) {
			pve_error_set(job_err(j), PVE_ERR_API, "interrupted");
			return -1;
		}
		if (pve_clock_now(clk) > until) {
			pve_error_set(job_err(j), PVE_ERR_API, "%s: %s after %.0f s",
				      job_subject(j), booted ? "booted, but not as expected"
							     : "no reboot seen", r->wait_s);
			return -1;
		}
		pve_clock_sleep(clk, r->poll_s);
	}
}

/* The kernel and QEMU lines of `pveversion -v`, to tell whether an
 * upgrade changed them. */
static char *kernel_qemu(struct job *j)
{
	const char *argv[] = {"pveversion", "-v", NULL};
	struct ssh_result res;
	if (node_run(j, argv, NULL, &res) < 0)
		return NULL;
	struct sbuf b = {0};
	const char *s = sbuf_str(&res.out);
	for (const char *p = s ? s : ""; *p;) {
		size_t l = strcspn(p, "\n");
		if (strncmp(p, "proxmox-ve:", 11) == 0 || strncmp(p, "pve-kernel", 10) == 0 ||
		    strncmp(p, "proxmox-kernel", 14) == 0 || strncmp(p, "pve-qemu-kvm:", 13) == 0)
			sbuf_addf(&b, "%.*s\n", (int)l, p);
		p += l + (p[l] == '\n');
	}
	ssh_result_free(&res);
	sbuf_addc(&b, 0);
	return sbuf_steal(&b);
}

/* --run: the update over SSH, once (the vars say how far it got). */
static int run_update(struct job *j)
{
	struct roll_ctx *r = job_ctx(j);
	if (json_flag(job_vars(j), "upgraded"))
		return 0;
	char *before = kernel_qemu(j);
	if (!before)
		return -1;
	int rc = 0;
	if (r->script) {
		/* the major upgrade: its checker passes first (pve8to9 --full) */
		char *ver = NULL;
		long long up = 0;
		if (node_now(j, &up, &ver) < 0) {
			free(before);
			return -1;
		}
		int major = ver ? atoi(ver) : 0;
		free(ver);
		char *checker = strprintf("pve%dto%d", major, major + 1);
		const char *argv[] = {checker, "--full", NULL};
		struct ssh_result res;
		if (!checker) {
			rc = pve_error_oom(job_err(j));
		} else if ((rc = node_run(j, argv, NULL, &res)) == 0) {
			const char *out = sbuf_str(&res.out);
			const char *f = out ? strstr(out, "FAILURES: ") : NULL;
			if (f && atoi(f + 10) > 0) {
				pve_error_set(job_err(j), PVE_ERR_API, "%s: %s --full reports %d "
					      "failure%s: the upgrade is not started", job_subject(j),
					      checker, atoi(f + 10), atoi(f + 10) == 1 ? "" : "s");
				rc = -1;
			}
			ssh_result_free(&res);
		}
		free(checker);
		const char *sh[] = {"sh", "-s", "--", job_subject(j), r->version ? r->version : "",
				    NULL};
		if (rc == 0)
			rc = node_run(j, sh, r->script, NULL);
	} else {
		const char *upd[] = {"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "update",
				     NULL};
		const char *dup[] = {"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-y", "-o",
				     "Dpkg::Options::=--force-confdef", "-o",
				     "Dpkg::Options::=--force-confold", "dist-upgrade", NULL};
		rc = node_run(j, upd, NULL, NULL) < 0 || node_run(j, dup, NULL, NULL) < 0 ? -1 : 0;
	}
	char *after = rc == 0 ? kernel_qemu(j) : NULL;
	if (rc == 0 && after) {
		job_set_bool(j, "upgraded", true);
		job_set_bool(j, "reboot", strcmp(before, after) != 0);
		rc = job_save(j) < 0 ? pve_error_oom(job_err(j)) : 0;
	} else if (rc == 0) {
		rc = -1;
	}
	free(before);
	free(after);
	return rc;
}

static enum step_rc update_step(struct job *j)
{
	struct roll_ctx *r = job_ctx(j);
	long long up = 0;
	char *ver = NULL;
	if (mark_uptime(j) < 0)
		return STEP_RC_FAIL;
	if (strcmp(r->mode, "run") == 0) {
		if (run_update(j) < 0)
			return STEP_RC_FAIL;
		if (!json_flag(job_vars(j), "reboot")) {
			if (node_now(j, &up, &ver) < 0)
				return STEP_RC_FAIL;
			bool ok = rolling_version_is(ver, r->version);
			if (ver)
				job_set_str(j, "version_after", ver);
			enum step_rc rc = ok ? STEP_RC_OK
					     : job_fail(j, PVE_ERR_API, "%s runs %s after the update, "
							"not %s", job_subject(j), ver ? ver : "?",
							r->version);
			if (ok)
				job_summary(j, "updated, no reboot needed; runs %s", ver ? ver : "?");
			free(ver);
			return rc;
		}
		if (!json_flag(job_vars(j), "reboot_sent")) {
			/* its uptime now: the boot is the one after it */
			if (node_now(j, &up, &ver) < 0)
				return STEP_RC_FAIL;
			free(ver);
			job_set_int(j, "uptime_before", up);
			job_set_bool(j, "reboot_sent", true);
			if (job_save(j) < 0)
				return pve_error_oom(job_err(j));
			const char *argv[] = {"reboot", NULL};
			struct ssh_result res;
			if (node_ssh(j, argv, NULL, &res) == 0)
				ssh_result_free(&res);
			pve_error_clear(job_err(j)); /* the connection may go down with it */
		}
	}
	return wait_booted(j) < 0 ? STEP_RC_FAIL : STEP_RC_OK;
}

static enum step_rc check_step(struct job *j)
{
	struct roll_ctx *r = job_ctx(j);
	int failed = 0;
	char *why = node_checks(j, false, &failed), *ver = NULL;
	long long up = 0;
	if (failed < 0)
		return STEP_RC_FAIL;
	if (!why && node_now(j, &up, &ver) < 0)
		return STEP_RC_FAIL;
	if (!why && !rolling_version_is(ver, r->version))
		why = strprintf("it runs %s, not %s", ver ? ver : "?", r->version);
	free(ver);
	if (why) {
		enum step_rc rc = job_fail(j, PVE_ERR_API, "after %s's update: %s", job_subject(j),
					   why);
		free(why);
		return rc;
	}
	job_summary(j, "online, the cluster quorate%s", r->version ? ", the version expected" : "");
	return STEP_RC_OK;
}

static enum step_rc leave_step(struct job *j)
{
	const char *node = job_subject(j);
	bool ha = json_flag(job_vars(j), "ha_maintenance"), noout = json_flag(job_vars(j), "noout");
	bool ha_away = json_object_object_get_ex(job_vars(j), "ha_guests", NULL) &&
		       !json_flag(job_vars(j), "ha_back");
	if (!ha && !noout && !ha_away)
		return STEP_RC_SKIP;
	if (ha) {
		const char *argv[] = {"ha-manager", "crm-command", "node-maintenance", "disable",
				      node, NULL};
		if (node_run(j, argv, NULL, NULL) < 0 || lrm_wait(j, false) < 0)
			return STEP_RC_FAIL;
		job_set_bool(j, "ha_maintenance", false);
		if (job_save(j) < 0)
			return pve_error_oom(job_err(j));
	}
	if (noout) {
		const char *argv[] = {"ceph", "osd", "unset", "noout", NULL};
		if (node_run(j, argv, NULL, NULL) < 0)
			return STEP_RC_FAIL;
		job_set_bool(j, "noout", false);
	}
	if (ha_away) {
		/* the CRM brings its guests back (their maintenance node) */
		if (ha_guests_wait(j, false) < 0)
			return STEP_RC_FAIL;
		job_set_bool(j, "ha_back", true);
	}
	job_set_left(j, "the guests drained off %s are away from home", node);
	job_summary(j, "%s%s%s", ha ? "HA maintenance off" : "", ha && noout ? ", " : "",
		    noout ? "Ceph noout unset" : "");
	return STEP_RC_OK;
}

static enum step_rc undrain_step(struct job *j)
{
	enum job_outcome o = run_leg(j, &wf_undrain, "undrain_job");
	if (o != JOB_OUT_DONE) {
		job_set_left(j, "some guests drained off %s are away from home", job_subject(j));
		return STEP_RC_FAIL;
	}
	job_set_left(j, NULL);
	return STEP_RC_OK;
}

/* Each node step with its phase's start and end in the vars. */
#define PHASED(step)                                                                        \
	static enum step_rc step##_phased(struct job *j)                                    \
	{                                                                                   \
		phase_mark(j, #step, "start");                                              \
		enum step_rc rc = step##_step(j);                                           \
		if (rc != STEP_RC_FAIL)                                                     \
			phase_mark(j, #step, "end");                                        \
		return rc;                                                                  \
	}
PHASED(precheck)
PHASED(maintenance)
PHASED(drain)
PHASED(update)
PHASED(check)
PHASED(leave)
PHASED(undrain)

static const struct job_step_def rolling_steps[] = {
	{"preflight", preflight_step, NULL, 0},
	{"nodes", nodes_step, NULL, JOB_STEP_NO_UNDO},
};

static const struct job_step_def node_steps[] = {
	{"precheck", precheck_phased, NULL, 0},
	{"maintenance", maintenance_phased, NULL, JOB_STEP_NO_UNDO},
	{"drain", drain_phased, NULL, JOB_STEP_NO_UNDO},
	{"update", update_phased, NULL, JOB_STEP_NO_UNDO},
	{"check", check_phased, NULL, JOB_STEP_NO_UNDO},
	{"leave", leave_phased, NULL, JOB_STEP_NO_UNDO},
	{"undrain", undrain_phased, NULL, JOB_STEP_NO_UNDO},
};

const struct job_workflow wf_rolling = {
	.name = "rolling",
	.params = &wf_rolling_params_decl,
	.steps = rolling_steps,
	.n_steps = sizeof rolling_steps / sizeof *rolling_steps,
	.ctx_size = sizeof(struct roll_ctx),
	.open = roll_open,
};

const struct job_workflow wf_rolling_node = {
	.name = "rolling-node",
	.params = &wf_rolling_node_params_decl,
	.steps = node_steps,
	.n_steps = sizeof node_steps / sizeof *node_steps,
	.ctx_size = sizeof(struct roll_ctx),
	.open = roll_open,
};
