/* guest.c - guest lifecycle on PVE (see guest.h): listing and finding by
 * name, VMID claim by creating, clone/create, config, power, delete,
 * resize, lock waits, addresses, and the PVE version switch for
 * containers (LXC from PVE 4, OpenVZ before). */
#include "guest.h"

#include "json.h"
#include "log.h"
#include "pvecfg.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define DEF_TASK_TIMEOUT 1800.0
#define DEF_LOCK_TIMEOUT 300.0
#define DEF_SHUTDOWN_TIMEOUT 120.0
#define DEF_ADDRESS_TIMEOUT 300.0
#define DEF_POLL 1.0
#define DEF_MAX_CLAIMS 32
#define LOCK_RETRIES 4
#define AMBIGUOUS_RESENDS 2

/* ---- small helpers ---------------------------------------------------------- */

static double w_task_timeout(const struct guest_wait *w)
{
	return w && w->task_timeout_s > 0 ? w->task_timeout_s : DEF_TASK_TIMEOUT;
}
static double w_lock_timeout(const struct guest_wait *w)
{
	return w && w->lock_timeout_s > 0 ? w->lock_timeout_s : DEF_LOCK_TIMEOUT;
}
static double w_shutdown_timeout(const struct guest_wait *w)
{
	return w && w->shutdown_timeout_s > 0 ? w->shutdown_timeout_s : DEF_SHUTDOWN_TIMEOUT;
}
static double w_address_timeout(const struct guest_wait *w)
{
	return w && w->address_timeout_s > 0 ? w->address_timeout_s : DEF_ADDRESS_TIMEOUT;
}
static double w_poll(const struct guest_wait *w)
{
	return w && w->poll_s > 0 ? w->poll_s : DEF_POLL;
}
static const struct pve_clock *w_clock(const struct guest_wait *w)
{
	return w ? w->clock : NULL;
}

static void progress(const struct guest_wait *w, const char *step, double pct, const char *fmt,
		     ...) __attribute__((format(printf, 4, 5)));
static void progress(const struct guest_wait *w, const char *step, double pct, const char *fmt,
		     ...)
{
	if (!w || !w->progress)
		return;
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	w->progress(w->progress_ctx, step, pct, rc == 0 ? sbuf_str(&b) : NULL);
	sbuf_free(&b);
}

static int dupstr(char **dst, const char *src)
{
	*dst = NULL;
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -1;
}

/* "/nodes/NODE/TYPE/VMID" + suffix, node escaped. */
static char *gpath(const struct guest_ref *g, const char *suffix)
{
	char *node = pve_path_escape(g->node ? g->node : "");
	if (!node)
		return NULL;
	char *p = strprintf("/nodes/%s/%s/%d%s", node, guest_type_name(g->type), g->vmid,
			    suffix ? suffix : "");
	free(node);
	return p;
}

/* GET the guest's path suffix ("/config", "/status/current"). */
static int gget(struct pve *c, const struct guest_ref *g, const char *suffix, json_object **d,
		struct pve_error *err)
{
	*d = NULL;
	char *path = gpath(g, suffix);
	if (!path)
		return pve_error_oom(err);
	int rc = pve_get(c, path, NULL, d, err);
	free(path);
	return rc < 0 ? -1 : 0;
}

static bool msg_has(const struct pve_error *e, const char *needle)
{
	return e->message && strcasestr(e->message, needle) != NULL;
}

/* ---- types and refs --------------------------------------------------------- */

const char *guest_type_name(enum guest_type t)
{
	switch (t) {
	case GUEST_QEMU: return "qemu";
	case GUEST_LXC: return "lxc";
	case GUEST_OPENVZ: return "openvz";
	}
	return "?";
}

int guest_type_parse(const char *s, enum guest_type *out)
{
	if (!s)
		return -1;
	if (strcmp(s, "qemu") == 0)
		*out = GUEST_QEMU;
	else if (strcmp(s, "lxc") == 0)
		*out = GUEST_LXC;
	else if (strcmp(s, "openvz") == 0)
		*out = GUEST_OPENVZ;
	else
		return -1;
	return 0;
}

void guest_ref_clear(struct guest_ref *g)
{
	if (!g)
		return;
	free(g->node);
	free(g->name);
	free(g->status);
	free(g->lock);
	free(g->tags);
	memset(g, 0, sizeof *g);
}

int guest_ref_copy(struct guest_ref *dst, const struct guest_ref *src)
{
	struct guest_ref t = *src;
	t.node = t.name = t.status = t.lock = t.tags = NULL;
	if (dupstr(&t.node, src->node) < 0 || dupstr(&t.name, src->name) < 0 ||
	    dupstr(&t.status, src->status) < 0 || dupstr(&t.lock, src->lock) < 0 ||
	    dupstr(&t.tags, src->tags) < 0) {
		guest_ref_clear(&t);
		return -1;
	}
	*dst = t;
	return 0;
}

void guest_list_free(struct guest_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		guest_ref_clear(&l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* ---- guests made by this client ----------------------------------------------- */

/* The guests this client created, with the names it gave them (pve.h
 * pve_made_*: kept per client, as the versions are): while
 * /cluster/resources shows one without a name (status lag, below), its
 * name is known without reading the node's list. A guest deleted by us
 * leaves it. */
static void made_forget(struct pve *c, const struct guest_ref *g)
{
	pve_made_forget(c, g->node, guest_type_name(g->type), g->vmid);
}

static void made_remember(struct pve *c, const struct guest_ref *g)
{
	pve_made_remember(c, g->node, guest_type_name(g->type), g->vmid, g->name);
}

/* Fill g's name when this client made it. true: filled (or OOM: false). */
static bool made_fill(const struct pve *c, struct guest_ref *g)
{
	const char *name = pve_made_name(c, g->node, guest_type_name(g->type), g->vmid);
	return name && dupstr(&g->name, name) == 0;
}

int guest_pve_major(struct pve *c, int *major, struct pve_error *err)
{
	const struct pve_version *v = NULL;
	if (pve_version(c, &v, err) < 0)
		return -1;
	*major = v->major;
	return 0;
}

enum guest_type guest_container_type(int major)
{
	return major >= 4 ? GUEST_LXC : GUEST_OPENVZ;
}

/* ---- listing and finding ------------------------------------------------------- */

static int ref_from_resource(json_object *it, struct guest_ref *g)
{
	memset(g, 0, sizeof *g);
	const char *type = json_str(it, "type");
	long long vmid;
	if (guest_type_parse(type, &g->type) < 0 || !json_int(it, "vmid", &vmid))
		return 1; /* not a guest: skip */
	g->vmid = (int)vmid;
	long long tpl = 0;
	if (json_int(it, "template", &tpl))
		g->template = tpl != 0;
	const char *lock = json_str(it, "lock");
	if (dupstr(&g->node, json_str(it, "node")) < 0 || dupstr(&g->name, json_str(it, "name")) < 0 ||
	    dupstr(&g->status, json_str(it, "status")) < 0 ||
	    dupstr(&g->lock, lock && *lock ? lock : NULL) < 0 ||
	    dupstr(&g->tags, json_str(it, "tags")) < 0) {
		guest_ref_clear(g);
		return -1;
	}
	return 0;
}

static int cmp_vmid(const void *a, const void *b)
{
	const struct guest_ref *x = a, *y = b;
	return (x->vmid > y->vmid) - (x->vmid < y->vmid);
}

/* /cluster/resources lags: PVE's status daemon updates names and status
 * about every 10 s, so a guest made since shows there without a name and
 * with status "unknown" (a rename or a start shows late too). A node's own
 * list (GET /nodes/N/qemu, /lxc, /openvz) reads the configs and is
 * current: take name, status, lock and template from it for every entry of
 * a node and type that has an entry without a name. */
static int fill_from_node_lists(struct pve *c, struct guest_list *l, struct pve_error *err)
{
	struct sbuf done = {0}; /* "\nnode/type\n" of the lists read */
	int rc = 0;
	for (size_t i = 0; i < l->n && rc == 0; i++) {
		const struct guest_ref *g = &l->v[i];
		/* only nameless entries matter to a search by name (a status is
		 * read again where it matters), and only those this process
		 * did not make */
		if (g->name || !g->node || made_fill(c, &l->v[i]))
			continue;
		char *key = strprintf("\n%s/%s\n", g->node, guest_type_name(g->type));
		if (!key) {
			rc = pve_error_oom(err);
			break;
		}
		bool seen = done.len && strstr(sbuf_str(&done), key);
		if (!seen && sbuf_add(&done, done.len ? key + 1 : key) < 0)
			rc = pve_error_oom(err);
		char *nodep = seen || rc ? NULL : pve_path_escape(g->node);
		char *path = nodep ? strprintf("/nodes/%s/%s", nodep, guest_type_name(g->type)) : NULL;
		free(key);
		free(nodep);
		if (seen || rc)
			continue;
		if (!path) {
			rc = pve_error_oom(err);
			break;
		}
		json_object *d = NULL;
		struct pve_error lerr = {0};
		if (pve_get(c, path, NULL, &d, &lerr) < 0) {
			/* an offline node: its guests stay as the cluster shows them */
			log_debug("%s: %s", path, lerr.message ? lerr.message : "failed");
			pve_error_clear(&lerr);
		}
		free(path);
		size_t n = json_object_is_type(d, json_type_array) ? json_object_array_length(d) : 0;
		for (size_t k = 0; k < n && rc == 0; k++) {
			json_object *it = json_object_array_get_idx(d, k);
			long long vmid;
			if (!json_int(it, "vmid", &vmid))
				continue;
			for (size_t m = 0; m < l->n && rc == 0; m++) {
				struct guest_ref *t = &l->v[m];
				if (t->vmid != vmid || t->type != l->v[i].type || !t->node ||
				    strcmp(t->node, l->v[i].node) != 0)
					continue;
				const char *lock = json_str(it, "lock");
				char *nm = NULL, *st = NULL, *lk = NULL;
				if (dupstr(&nm, json_str(it, "name")) < 0 ||
				    dupstr(&st, json_str(it, "status")) < 0 ||
				    dupstr(&lk, lock && *lock ? lock : NULL) < 0) {
					free(nm);
					free(st);
					rc = pve_error_oom(err);
					break;
				}
				free(t->name);
				t->name = nm;
				free(t->status);
				t->status = st;
				free(t->lock);
				t->lock = lk;
				long long tpl = 0;
				t->template = json_int(it, "template", &tpl) && tpl != 0;
			}
		}
		json_object_put(d);
	}
	sbuf_free(&done);
	return rc;
}

int guest_list(struct pve *c, const char *node, struct guest_list *out, struct pve_error *err)
{
	out->v = NULL;
	out->n = 0;
	struct pve_params p = {0};
	pve_params_add(&p, "type", "vm");
	json_object *d = NULL;
	int rc = pve_get(c, "/cluster/resources", &p, &d, err);
	pve_params_free(&p);
	if (rc < 0)
		return -1;
	if (!json_object_is_type(d, json_type_array)) {
		json_object_put(d);
		pve_error_set(err, PVE_ERR_PROTOCOL, "GET /cluster/resources: not an array");
		return -1;
	}
	size_t n = json_object_array_length(d);
	out->v = calloc(n ? n : 1, sizeof *out->v);
	if (!out->v) {
		json_object_put(d);
		return pve_error_oom(err);
	}
	for (size_t i = 0; i < n; i++) {
		json_object *it = json_object_array_get_idx(d, i);
		struct guest_ref g;
		int r = ref_from_resource(it, &g);
		if (r < 0) {
			json_object_put(d);
			guest_list_free(out);
			return pve_error_oom(err);
		}
		if (r > 0)
			continue;
		if (node && (!g.node || strcmp(g.node, node) != 0)) {
			guest_ref_clear(&g);
			continue;
		}
		out->v[out->n++] = g;
	}
	json_object_put(d);
	if (fill_from_node_lists(c, out, err) < 0) {
		guest_list_free(out);
		return -1;
	}
	qsort(out->v, out->n, sizeof *out->v, cmp_vmid);
	return 0;
}

int guest_list_find_name(const struct guest_list *l, const char *name, struct guest_ref *out,
			 struct pve_error *err)
{
	memset(out, 0, sizeof *out);
	size_t hits = 0, first = 0;
	struct sbuf ids = {0};
	for (size_t i = 0; i < l->n; i++) {
		if (!l->v[i].name || strcasecmp(l->v[i].name, name) != 0)
			continue;
		if (hits++ == 0)
			first = i;
		if (sbuf_addf(&ids, "%s%d (%s)", hits > 1 ? ", " : "", l->v[i].vmid,
			      l->v[i].node ? l->v[i].node : "?") < 0) {
			sbuf_free(&ids);
			return pve_error_oom(err);
		}
	}
	int rc = 0;
	if (hits > 1) {
		pve_error_set(err, PVE_ERR_API,
			      "guest name '%s' is not unique in the cluster: VMIDs %s; rename or "
			      "delete all but one",
			      name, sbuf_str(&ids));
		rc = -1;
	} else if (hits == 1) {
		rc = guest_ref_copy(out, &l->v[first]) < 0 ? pve_error_oom(err) : 1;
	}
	sbuf_free(&ids);
	return rc;
}

int guest_list_find_vmid(const struct guest_list *l, int vmid, struct guest_ref *out,
			 struct pve_error *err)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].vmid == vmid)
			return guest_ref_copy(out, &l->v[i]) < 0 ? pve_error_oom(err) : 1;
	return 0;
}

/* After a find (rc): the listing's status and name can be 10 s old: read
 * them. 0 when it was deleted meanwhile. */
static int refresh_found(struct pve *c, int rc, struct guest_ref *out, struct pve_error *err)
{
	if (rc != 1 || guest_refresh(c, out, err) == 0)
		return rc;
	guest_ref_clear(out);
	if (err->kind != PVE_ERR_NOT_FOUND)
		return -1;
	pve_error_clear(err); /* deleted meanwhile */
	return 0;
}

int guest_find_by_vmid(struct pve *c, int vmid, struct guest_ref *out, struct pve_error *err)
{
	memset(out, 0, sizeof *out);
	struct guest_list l;
	if (guest_list(c, NULL, &l, err) < 0)
		return -1;
	int rc = guest_list_find_vmid(&l, vmid, out, err);
	guest_list_free(&l);
	return rc;
}

int guest_find_listed(struct pve *c, const char *arg, struct guest_ref *out,
		      struct pve_error *err)
{
	memset(out, 0, sizeof *out);
	int vmid = 0;
	if (guest_arg_is_vmid(arg, &vmid))
		return guest_find_by_vmid(c, vmid, out, err);
	struct guest_list l;
	if (guest_list(c, NULL, &l, err) < 0)
		return -1;
	int rc = guest_list_find_name(&l, arg, out, err);
	guest_list_free(&l);
	return rc;
}

int guest_find(struct pve *c, const char *arg, struct guest_ref *out, struct pve_error *err)
{
	int rc = refresh_found(c, guest_find_listed(c, arg, out, err), out, err);
	if (rc == 1 && !guest_arg_is_vmid(arg, NULL) &&
	    (!out->name || strcasecmp(out->name, arg) != 0)) {
		guest_ref_clear(out); /* renamed meanwhile */
		rc = 0;
	}
	return rc;
}

int guest_not_found(const char *arg, struct pve_error *err)
{
	pve_error_set(err, PVE_ERR_NOT_FOUND, guest_arg_is_vmid(arg, NULL)
		      ? "no guest with VMID %s" : "no guest named '%s'", arg);
	return -1;
}

int guest_refresh(struct pve *c, struct guest_ref *g, struct pve_error *err)
{
	json_object *d = NULL;
	if (gget(c, g, "/status/current", &d, err) < 0)
		return -1;
	const char *lock = json_str(d, "lock");
	char *status = NULL, *lk = NULL, *name = NULL;
	if (dupstr(&status, json_str(d, "status")) < 0 || dupstr(&lk, lock && *lock ? lock : NULL) < 0 ||
	    dupstr(&name, json_str(d, "name")) < 0) {
		free(status);
		free(lk);
		free(name);
		json_object_put(d);
		return pve_error_oom(err);
	}
	free(g->status);
	g->status = status;
	free(g->lock);
	g->lock = lk;
	if (name) {
		free(g->name);
		g->name = name;
	}
	long long tpl;
	if (json_int(d, "template", &tpl))
		g->template = tpl != 0;
	json_object_put(d);
	return 0;
}

/* ---- waiting ------------------------------------------------------------------- */

int guest_wait_unlocked(struct pve *c, struct guest_ref *g, const struct guest_wait *w,
			struct pve_error *err)
{
	const struct pve_clock *clk = w_clock(w);
	double t0 = pve_clock_now(clk), limit = w_lock_timeout(w);
	for (unsigned n = 0;; n++) {
		if (guest_refresh(c, g, err) < 0)
			return -1;
		if (!g->lock) {
			if (n > 0)
				progress(w, "lock", 100, "VM %d is unlocked after %.0f s", g->vmid,
					 pve_clock_now(clk) - t0);
			return 0;
		}
		double waited = pve_clock_now(clk) - t0;
		if (waited >= limit) {
			pve_error_set(err, PVE_ERR_LOCKED,
				      "VM %d on %s is still locked (%s) after %.0f s; if no task "
				      "holds it any more, clear it with '%s unlock %d' on the node",
				      g->vmid, g->node, g->lock, waited,
				      g->type == GUEST_LXC ? "pct" : "qm", g->vmid);
			return -1;
		}
		progress(w, "lock", -1, "waiting for lock '%s' on VM %d (%.0f s of %.0f s)", g->lock,
			 g->vmid, waited, limit);
		pve_clock_sleep(clk, w_poll(w));
	}
}

struct task_prog_ctx {
	const struct guest_wait *w;
	const char *step;
};

static void task_prog(void *ctx, const struct task_progress *p)
{
	struct task_prog_ctx *t = ctx;
	if (t->w && t->w->progress)
		t->w->progress(t->w->progress_ctx, t->step, p->percent >= 0 ? p->percent : -1,
			       p->line);
}

int guest_wait_task(struct pve *c, const char *upid, const char *step, const struct guest_wait *w,
		    struct task_result *res, struct pve_error *err)
{
	struct task_prog_ctx pc = {w, step};
	struct task_wait_opts o = {
		.timeout_s = w_task_timeout(w),
		.clock = w_clock(w),
		.attach = w && w->attach,
		.progress = task_prog,
		.progress_ctx = &pc,
	};
	return task_wait(c, upid, &o, res, err);
}

/* What a task-starting request on an existing guest leads to, for
 * deciding whether a request whose answer was lost took effect. */
struct effect {
	const char *qm_task, *ct_task; /* PVE task types ("qmstart", "vzstart") */
	/* 1: PVE shows the effect; 0: it does not; -1: error. NULL: no state
	 * shows it (only a running task can). */
	int (*shows)(struct pve *c, struct guest_ref *g, const void *arg, struct pve_error *err);
	const void *arg;
};

/* A running task of this type for the guest (GET /nodes/N/tasks,
 * source=active): 1 with *upid, 0 none, -1 error. */
static int active_task(struct pve *c, const struct guest_ref *g, const char *type, char **upid,
		       struct pve_error *err)
{
	*upid = NULL;
	char *node = pve_path_escape(g->node ? g->node : "");
	char *path = node ? strprintf("/nodes/%s/tasks", node) : NULL;
	free(node);
	if (!path)
		return pve_error_oom(err);
	struct pve_params p = {0};
	pve_params_add(&p, "source", "active");
	pve_params_add_int(&p, "vmid", g->vmid);
	pve_params_add(&p, "typefilter", type);
	json_object *d = NULL;
	int rc = pve_get(c, path, &p, &d, err);
	pve_params_free(&p);
	free(path);
	if (rc < 0)
		return -1;
	size_t n = json_object_is_type(d, json_type_array) ? json_object_array_length(d) : 0;
	for (size_t i = 0; i < n && !*upid; i++) {
		const char *u = json_str(json_object_array_get_idx(d, i), "upid");
		if (u && dupstr(upid, u) < 0) {
			json_object_put(d);
			return pve_error_oom(err);
		}
	}
	json_object_put(d);
	return *upid ? 1 : 0;
}

/* Did a request whose answer was lost take effect? 2: its task still runs
 * (*upid set), 1: PVE shows the effect, 0: nothing shows it, -1 error. */
static int look(struct pve *c, struct guest_ref *g, const struct effect *eff, char **upid,
		struct pve_error *err)
{
	*upid = NULL;
	const char *type = g->type == GUEST_QEMU ? eff->qm_task : eff->ct_task;
	if (type) {
		int r = active_task(c, g, type, upid, err);
		if (r != 0)
			return r < 0 ? -1 : 2;
	}
	return eff->shows ? eff->shows(c, g, eff->arg, err) : 0;
}

static char *hook_resume_upid(const struct guest_wait *w)
{
	return w && w->hooks && w->hooks->resume_upid ? w->hooks->resume_upid(w->hooks->ctx)
						       : NULL;
}

static bool hook_resume_unknown(const struct guest_wait *w)
{
	return w && w->hooks && w->hooks->resume_unknown &&
	       w->hooks->resume_unknown(w->hooks->ctx);
}

static void hook_sending(const struct guest_wait *w, int vmid)
{
	if (w && w->hooks && w->hooks->sending)
		w->hooks->sending(w->hooks->ctx, vmid);
}

static void hook_started(const struct guest_wait *w, const char *upid)
{
	if (w && w->hooks && w->hooks->started)
		w->hooks->started(w->hooks->ctx, upid);
}

static void hook_answered(const struct guest_wait *w)
{
	if (w && w->hooks && w->hooks->answered)
		w->hooks->answered(w->hooks->ctx);
}

static int wait_task_timeout(struct pve *c, const char *upid, const char *step,
			     double task_timeout, const struct guest_wait *w,
			     struct task_result *res, struct pve_error *err)
{
	struct guest_wait w2 = w ? *w : (struct guest_wait){0};
	if (task_timeout > 0)
		w2.task_timeout_s = task_timeout;
	return guest_wait_task(c, upid, step, &w2, res, err);
}

/* A wait's clock that moved this much further than real time was stopped
 * (job.c's stop clock jumps a day ahead). */
#define CLOCK_JUMP_S 3600.0

/* guest.h: real time in slices, ended when the wait's clock jumps. */
void guest_settle(struct pve *c, const struct guest_wait *w, double sent_at)
{
	double end = sent_at + pve_request_timeout_s(c), left = end - clock_unix_now();
	if (left <= 0)
		return;
	log_info("waiting %.1f s for an unanswered request to land before looking", left);
	const struct pve_clock *clk = w_clock(w);
	double c0 = pve_clock_now(clk), r0 = clock_unix_now();
	while ((left = end - clock_unix_now()) > 0 &&
	       pve_clock_now(clk) - c0 < clock_unix_now() - r0 + CLOCK_JUMP_S)
		pve_clock_sleep(NULL, left < 0.05 ? left : 0.05);
}

/* A task-starting request on an existing guest (guest_task). */
struct guest_task_req {
	const char *method, *suffix;     /* "POST", "/status/start" (after the guest's path) */
	const struct pve_params *params; /* or NULL */
	const char *step;                /* the task's name in messages ("start") */
	const char *ok_msg;              /* an error meaning "nothing to do"
					    ("already running"), or NULL */
	double task_timeout;             /* 0: the wait's */
	const struct effect *eff;        /* how to look whether a request whose
					    answer was lost took effect; NULL: it
					    is not sent again */
	bool *noop;                      /* out, or NULL: ok_msg came back */
	struct task_result *res;         /* out, or NULL: the task's figures */
	char **type;                     /* out, or NULL: the type of the task
					    waited for ("qmstart", "hastart";
					    malloc'd), NULL when none was */
};

/* rq->type from the UPID of the task guest_task waits for. */
static void task_type_of(const struct guest_task_req *rq, const char *upid)
{
	struct task_upid u;
	if (!rq->type || task_upid_parse(upid, &u) < 0)
		return;
	free(*rq->type);
	*rq->type = u.type;
	u.type = NULL;
	task_upid_free(&u);
}

/* Run a task-starting request on an existing guest: a locked guest is
 * waited for and the request sent again; a UPID is handed to the hooks
 * and waited on, and never sent again; a lost answer is resolved by
 * looking (eff, see guest.h) before sending again. ok_msg: a message
 * meaning "nothing to do" (e.g. "already running"); *noop is set when
 * that came back. A resumed step (hooks) first waits for the task its
 * earlier run recorded. */
static int guest_task(struct pve *c, struct guest_ref *g, const struct guest_task_req *rq,
		      const struct guest_wait *w, struct pve_error *err)
{
	if (rq->noop)
		*rq->noop = false;
	if (rq->type)
		*rq->type = NULL;
	char *upid = hook_resume_upid(w);
	if (upid) {
		task_type_of(rq, upid);
		log_debug("VM %d: waiting for the %s task an earlier run started", g->vmid, rq->step);
		struct guest_wait wa = w ? *w : (struct guest_wait){0};
		wa.attach = true;
		int rc = wait_task_timeout(c, upid, rq->step, rq->task_timeout, &wa, rq->res, err);
		free(upid);
		return rc;
	}
	char *path = gpath(g, rq->suffix);
	if (!path)
		return pve_error_oom(err);
	struct pve_call_opts co = {.stop_if_maybe_applied = rq->eff != NULL};
	bool look_first = hook_resume_unknown(w) && rq->eff;
	if (look_first && w->hooks->resume_sent_at)
		guest_settle(c, w, w->hooks->resume_sent_at(w->hooks->ctx));
	int rc = -1, resends = 0;
	for (int attempt = 0;; attempt++) {
		if (look_first) {
			struct pve_error lerr = {0};
			int lr = look(c, g, rq->eff, &upid, &lerr);
			if (lr < 0) {
				if (err->kind == PVE_OK)
					pve_error_move(err, &lerr);
				pve_error_clear(&lerr);
				break;
			}
			if (lr == 1) {
				log_info("%s %s: the request whose answer was lost took effect", rq->method,
					 path);
				pve_error_clear(err);
				rc = 0;
				break;
			}
			if (lr == 2) {
				log_info("%s %s: the request whose answer was lost started %s", rq->method,
					 path, upid);
				pve_error_clear(err);
				hook_started(w, upid);
				task_type_of(rq, upid);
				struct guest_wait wa = w ? *w : (struct guest_wait){0};
				wa.attach = true;
				rc = wait_task_timeout(c, upid, rq->step, rq->task_timeout, &wa, rq->res, err);
				free(upid);
				break;
			}
			log_debug("%s %s: the lost request took no effect; sending it again", rq->method,
				  path);
			pve_error_clear(err);
			look_first = false;
		}
		hook_sending(w, g->vmid);
		int r = task_start(c, rq->method, path, rq->params, &co, &upid, err);
		if (r < 0) {
			if (rq->ok_msg && msg_has(err, rq->ok_msg)) {
				pve_error_clear(err);
				if (rq->noop)
					*rq->noop = true;
				rc = 0;
				break;
			}
			if (err->kind == PVE_ERR_LOCKED && attempt < LOCK_RETRIES) {
				log_debug("%s %s: %s; waiting for the lock", rq->method, path,
					  err->message ? err->message : "locked");
				pve_error_clear(err);
				if (guest_wait_unlocked(c, g, w, err) < 0)
					break;
				continue;
			}
			if (err->ambiguous && rq->eff && resends < AMBIGUOUS_RESENDS) {
				log_info("%s %s: %s; looking whether it took effect", rq->method, path,
					 err->message ? err->message : "no answer");
				/* given up on by us, the request may still be on its
				 * way: as long again as we waited for it */
				if (err->kind == PVE_ERR_TIMEOUT)
					guest_settle(c, w, clock_unix_now());
				resends++;
				look_first = true;
				continue;
			}
			break;
		}
		if (!upid) {
			hook_answered(w);
			rc = 0;
			break;
		}
		hook_started(w, upid);
		task_type_of(rq, upid);
		rc = wait_task_timeout(c, upid, rq->step, rq->task_timeout, w, rq->res, err);
		free(upid);
		break;
	}
	free(path);
	return rc;
}

int guest_node_task(struct pve *c, const char *method, const char *path,
		    const struct pve_params *params, const char *step, const struct guest_wait *w,
		    struct task_result *res, struct pve_error *err)
{
	char *upid = hook_resume_upid(w);
	if (upid) {
		log_debug("%s %s: waiting for the %s task an earlier run started", method, path,
			  step);
		struct guest_wait wa = w ? *w : (struct guest_wait){0};
		wa.attach = true;
		int rc = guest_wait_task(c, upid, step, &wa, res, err);
		free(upid);
		return rc;
	}
	struct pve_call_opts co = {.stop_if_maybe_applied = true};
	hook_sending(w, 0);
	if (task_start(c, method, path, params, &co, &upid, err) < 0)
		return -1;
	if (!upid) {
		hook_answered(w);
		return 0;
	}
	hook_started(w, upid);
	int rc = guest_wait_task(c, upid, step, w, res, err);
	free(upid);
	return rc;
}

static int shows_template(struct pve *c, struct guest_ref *g, const void *arg,
			  struct pve_error *err)
{
	(void)arg;
	json_object *conf = NULL;
	if (guest_get_config(c, g, &conf, err) < 0)
		return -1;
	long long t = 0;
	int is = json_int(conf, "template", &t) && t;
	json_object_put(conf);
	return is;
}

int guest_make_template(struct pve *c, struct guest_ref *g, const struct guest_wait *w,
			struct pve_error *err)
{
	static const struct effect eff = {.qm_task = "qmtemplate", .shows = shows_template};
	const struct guest_task_req rq = {"POST", "/template", .step = "template", .eff = &eff};
	int rc = guest_task(c, g, &rq, w, err);
	if (rc == 0)
		g->template = true;
	return rc;
}

static int shows_status(struct pve *c, struct guest_ref *g, const void *arg,
			struct pve_error *err)
{
	if (guest_refresh(c, g, err) < 0)
		return -1;
	return g->status && strcmp(g->status, (const char *)arg) == 0;
}

static int shows_gone(struct pve *c, struct guest_ref *g, const void *arg, struct pve_error *err)
{
	if (guest_refresh(c, g, err) == 0)
		return 0;
	if (err->kind != PVE_ERR_NOT_FOUND)
		return -1;
	pve_error_clear(err);
	return 1;
}

static int shows_snapshot(struct pve *c, struct guest_ref *g, const void *arg,
			  struct pve_error *err)
{
	json_object *d = NULL;
	if (gget(c, g, "/snapshot", &d, err) < 0)
		return -1;
	int found = 0;
	size_t n = json_object_is_type(d, json_type_array) ? json_object_array_length(d) : 0;
	for (size_t i = 0; i < n && !found; i++) {
		const char *nm = json_str(json_object_array_get_idx(d, i), "name");
		found = nm && strcmp(nm, (const char *)arg) == 0;
	}
	json_object_put(d);
	return found;
}

int guest_on_node(struct pve *c, const struct guest_ref *g, const char *node, char **status,
		  struct pve_error *err)
{
	struct guest_ref there = *g;
	there.node = (char *)node;
	char *path = gpath(&there, "/status/current");
	if (status)
		*status = NULL;
	if (!path)
		return pve_error_oom(err);
	json_object *d = NULL;
	int rc = pve_get(c, path, NULL, &d, err);
	free(path);
	if (rc < 0) {
		/* PVE: "Configuration file 'nodes/N/qemu-server/V.conf' does not exist" */
		if (err->kind == PVE_ERR_NOT_FOUND ||
		    (err->message && strstr(err->message, "does not exist"))) {
			pve_error_clear(err);
			return 0;
		}
		return -1;
	}
	const char *st = json_str(d, "status");
	if (status && st && dupstr(status, st) < 0) {
		json_object_put(d);
		return pve_error_oom(err);
	}
	json_object_put(d);
	return 1;
}

/* The guest is on the node (arg) now. */
static int shows_on_node(struct pve *c, struct guest_ref *g, const void *arg,
			 struct pve_error *err)
{
	return guest_on_node(c, g, (const char *)arg, NULL, err);
}

int guest_migrate(struct pve *c, struct guest_ref *g, const struct pve_params *params,
		  const struct guest_wait *w, struct task_result *res, struct pve_error *err)
{
	const char *target = pve_params_get(params, "target");
	if (!target)
		return pve_error_set(err, PVE_ERR_INTERNAL, "migrate without a target"), -1;
	memset(res, 0, sizeof *res);
	res->downtime_ms = res->duration_s = -1;
	res->speed = res->transferred = -1;
	const struct effect eff = {"qmigrate", "vzmigrate", shows_on_node, target};
	const struct guest_task_req rq = {"POST", "/migrate", .params = params, .step = "migrate",
					  .eff = &eff, .res = res};
	return guest_task(c, g, &rq, w, err);
}

int guest_snapshot(struct pve *c, struct guest_ref *g, const char *name,
		   const char *description, const struct guest_wait *w, bool *existed,
		   struct pve_error *err)
{
	if (g->type == GUEST_OPENVZ) {
		pve_error_set(err, PVE_ERR_CONFIG, "OpenVZ containers have no snapshots");
		return -1;
	}
	struct pve_params p = {0};
	pve_params_add(&p, "snapname", name);
	if (description)
		pve_params_add(&p, "description", description);
	static const struct effect eff_snap = {"qmsnapshot", "vzsnapshot", shows_snapshot, NULL};
	struct effect eff = eff_snap;
	eff.arg = name;
	const struct guest_task_req rq = {"POST", "/snapshot", .params = &p, .step = "snapshot",
					  .ok_msg = "already used", .eff = &eff, .noop = existed};
	int rc = guest_task(c, g, &rq, w, err);
	pve_params_free(&p);
	return rc;
}

static int shows_no_snapshot(struct pve *c, struct guest_ref *g, const void *arg,
			     struct pve_error *err)
{
	int rc = shows_snapshot(c, g, arg, err);
	return rc < 0 ? -1 : !rc;
}

int guest_delete_snapshot(struct pve *c, struct guest_ref *g, const char *name,
			  const struct guest_wait *w, bool *absent, struct pve_error *err)
{
	if (g->type == GUEST_OPENVZ) {
		pve_error_set(err, PVE_ERR_CONFIG, "OpenVZ containers have no snapshots");
		return -1;
	}
	/* PVE: "snapshot 'NAME' does not exist" (not the guest's "Configuration
	 * file ... does not exist") */
	char *suffix = strprintf("/snapshot/%s", name);
	char *gone = strprintf("snapshot '%s' does not exist", name);
	if (!suffix || !gone) {
		free(suffix);
		free(gone);
		return pve_error_oom(err);
	}
	static const struct effect eff_del = {"qmdelsnapshot", "vzdelsnapshot", shows_no_snapshot,
					      NULL};
	struct effect eff = eff_del;
	eff.arg = name;
	const struct guest_task_req rq = {"DELETE", suffix, .step = "delete snapshot",
					  .ok_msg = gone, .eff = &eff, .noop = absent};
	int rc = guest_task(c, g, &rq, w, err);
	free(suffix);
	free(gone);
	return rc;
}

/* ---- VMID claim --------------------------------------------------------------- */

static unsigned claim_seed(void)
{
	static _Atomic unsigned ctr;
	ctr += 0x9e3779b9u;
	return (unsigned)(uintptr_t)pthread_self() ^ (unsigned)getpid() * 2654435761u ^ ctr;
}

static int next_vmid(struct pve *c, const struct guest_vmid_policy *pol, int last,
		     struct pve_error *err, int *out);

int guest_next_free_vmid(struct pve *c, const struct guest_vmid_policy *pol, int *vmid,
			 struct pve_error *err)
{
	if (pol->vmid > 0) {
		*vmid = pol->vmid;
		return 0;
	}
	return next_vmid(c, pol, 0, err, vmid);
}

static int next_vmid(struct pve *c, const struct guest_vmid_policy *pol, int last,
		     struct pve_error *err, int *out)
{
	if (pol->range_min > 0 && pol->range_max >= pol->range_min) {
		struct guest_list l;
		if (guest_list(c, NULL, &l, err) < 0)
			return -1;
		int start = last >= pol->range_min ? last + 1 : pol->range_min;
		int found = 0;
		for (int id = start; id <= pol->range_max && !found; id++) {
			bool used = false;
			for (size_t i = 0; i < l.n && !used; i++)
				used = l.v[i].vmid == id;
			if (!used)
				found = id;
		}
		guest_list_free(&l);
		if (!found) {
			pve_error_set(err, PVE_ERR_EXISTS, "no free VMID in the range %d-%d",
				      pol->range_min, pol->range_max);
			return -1;
		}
		*out = found;
		return 0;
	}
	json_object *d = NULL;
	if (pve_get(c, "/cluster/nextid", NULL, &d, err) < 0)
		return -1;
	long long id = 0;
	bool ok = false;
	if (json_object_is_type(d, json_type_int)) {
		id = json_object_get_int64(d);
		ok = true;
	} else if (json_object_is_type(d, json_type_string)) {
		char *end;
		const char *s = json_object_get_string(d);
		errno = 0;
		id = strtoll(s, &end, 10);
		ok = !errno && end != s && !*end;
	}
	json_object_put(d);
	if (!ok || id <= 0 || id > 999999999) {
		pve_error_set(err, PVE_ERR_PROTOCOL, "GET /cluster/nextid: not a VMID");
		return -1;
	}
	/* Never go back to an id that just answered "already exists". */
	if (id <= last)
		id = last + 1;
	*out = (int)id;
	return 0;
}

/* VMIDs this process is claiming right now: PVE's nextid answers the
 * same free VMID to every worker that asks before the first one's guest
 * exists, so each worker takes the next one no other worker of ours holds
 * (a VMID someone else takes still answers "already exists"). */
struct vmid_hold {
	char *url;
	int vmid;
};
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static struct vmid_hold *holds;
static size_t n_holds;

static bool vmid_held(const char *url, int vmid)
{
	for (size_t i = 0; i < n_holds; i++)
		if (holds[i].vmid == vmid && strcmp(holds[i].url, url) == 0)
			return true;
	return false;
}

/* Release *held (0: none). */
static void vmid_release(const struct pve *c, int *held)
{
	const char *url = pve_url(c);
	if (*held <= 0 || !url)
		return;
	pthread_mutex_lock(&hold_mu);
	for (size_t i = 0; i < n_holds; i++) {
		if (holds[i].vmid == *held && strcmp(holds[i].url, url) == 0) {
			free(holds[i].url);
			holds[i] = holds[--n_holds];
			break;
		}
	}
	if (!n_holds) {
		free(holds);
		holds = NULL;
	}
	pthread_mutex_unlock(&hold_mu);
	*held = 0;
}

/* The first VMID from vmid up that no other claim of ours holds (within
 * the policy's range), held in *held from now on (the previous one
 * released). Without memory for the hold, vmid itself. */
static int vmid_reserve(const struct pve *c, const struct guest_vmid_policy *pol, int vmid,
			int *held)
{
	vmid_release(c, held);
	const char *url = pve_url(c);
	char *u = url ? strdup(url) : NULL;
	if (!u)
		return vmid;
	int max = pol->range_min > 0 && pol->range_max >= pol->range_min ? pol->range_max
									  : 999999999;
	pthread_mutex_lock(&hold_mu);
	int id = vmid;
	while (id < max && vmid_held(u, id))
		id++;
	if (vmid_held(u, id))
		id = vmid; /* the range is held by us: PVE decides */
	struct vmid_hold *nh = realloc(holds, (n_holds + 1) * sizeof *nh);
	if (nh) {
		holds = nh;
		holds[n_holds++] = (struct vmid_hold){u, id};
		*held = id;
		u = NULL;
	}
	pthread_mutex_unlock(&hold_mu);
	free(u);
	return id;
}

struct ours_ctx {
	int vmid;
	const char *name;
	const struct guest_wait *w;
};

static bool ours_cb(struct pve *c, void *ctx)
{
	struct ours_ctx *o = ctx;
	return guest_vmid_is_named(c, o->vmid, o->name, o->w);
}

bool guest_vmid_is_named(struct pve *c, int vmid, const char *name, const struct guest_wait *w)
{
	struct pve_error err = {0};
	struct guest_ref g;
	bool ours = false;
	int r = guest_find_by_vmid(c, vmid, &g, &err);
	if (r == 1) {
		if (guest_refresh(c, &g, &err) == 0 && !g.name && g.lock &&
		    (strcmp(g.lock, "clone") == 0 || strcmp(g.lock, "create") == 0)) {
			/* The name is written when the task ends. */
			if (guest_wait_unlocked(c, &g, w, &err) < 0)
				log_debug("VM %d: %s", vmid, err.message ? err.message : "lock wait");
		}
		ours = g.name && name && strcasecmp(g.name, name) == 0;
	}
	log_debug("VM %d exists: %s", vmid, ours ? "ours (same name)" : "not ours");
	guest_ref_clear(&g);
	pve_error_clear(&err);
	return ours;
}

/* One create/clone request for a candidate VMID. */
typedef int (*claim_send_fn)(struct pve *c, void *ctx, int vmid, const struct pve_call_opts *co,
			     char **upid, struct pve_error *err);

struct claim {
	claim_send_fn send;
	void *ctx;
	enum guest_type type;
	const char *node; /* where the new guest lives */
	const char *name;
	const char *step;
	const struct guest_vmid_policy *pol;
	/* source to wait for when the send answers "locked" (clone) */
	struct guest_ref *lock_src;
	/* set by send when the request asked PVE to start the new guest
	   (create with start=1); NULL: never */
	const bool *starts;
};

/* The guest whose create/clone task we waited on and saw end OK: it
 * exists on cl->node with our name, unlocked (PVE drops the "create" /
 * "clone" lock before the task ends) and stopped unless the request asked
 * PVE to start it (then its status is left unknown). Nothing to look up;
 * a later change that still meets a lock waits on PVE's "locked" answer. */
static int made(struct pve *c, const struct claim *cl, int vmid, struct guest_ref *out,
		struct pve_error *err)
{
	memset(out, 0, sizeof *out);
	out->vmid = vmid;
	out->type = cl->type;
	bool started = cl->starts && *cl->starts;
	if (dupstr(&out->node, cl->node) < 0 || dupstr(&out->name, cl->name) < 0 ||
	    dupstr(&out->status, started ? NULL : "stopped") < 0) {
		guest_ref_clear(out);
		return pve_error_oom(err);
	}
	made_remember(c, out);
	return 0;
}

/* A guest an unanswered (or lost-answer) request of ours created: we have
 * no task to wait on, so look it up and wait until its create/clone lock
 * has cleared. */
static int adopt(struct pve *c, const struct claim *cl, int vmid, const struct guest_wait *w,
		 struct guest_ref *out, struct pve_error *err)
{
	int r = guest_find_by_vmid(c, vmid, out, err);
	if (r < 0)
		return -1;
	if (r == 0) {
		/* Not in the resource list yet: build the ref ourselves. */
		out->vmid = vmid;
		out->type = cl->type;
		if (dupstr(&out->node, cl->node) < 0 || dupstr(&out->name, cl->name) < 0)
			return pve_error_oom(err);
	}
	if (guest_wait_unlocked(c, out, w, err) < 0)
		return -1;
	if (out->name && cl->name && strcasecmp(out->name, cl->name) == 0)
		made_remember(c, out);
	return 0;
}

static int claim_attempts(struct pve *c, const struct claim *cl, const struct guest_wait *w,
			  int *held, struct guest_ref *out, int *claims_out, struct pve_error *err)
{
	const struct guest_vmid_policy *pol = cl->pol;
	int max = pol->max_claims > 0 ? pol->max_claims : DEF_MAX_CLAIMS;
	int claims = 0, last = 0, lock_waits = 0, resends = 0;
	unsigned seed = claim_seed();
	memset(out, 0, sizeof *out);
	if (claims_out)
		*claims_out = 0;
	int vmid = 0;
	bool same_again = false;
	for (int attempt = 0; attempt < max; attempt++) {
		if (!same_again) {
			if (pol->vmid > 0) {
				if (attempt > 0)
					break;
				vmid = pol->vmid;
			} else if (next_vmid(c, pol, last, err, &vmid) < 0) {
				return -1;
			} else {
				vmid = vmid_reserve(c, pol, vmid, held);
			}
		}
		same_again = false;
		struct ours_ctx oc = {vmid, cl->name, w};
		struct pve_call_opts co = {
			.exists_is_ours = ours_cb,
			.exists_ctx = &oc,
			.stop_if_maybe_applied = true,
		};
		char *upid = NULL;
		claims++;
		if (claims_out)
			*claims_out = claims;
		hook_sending(w, vmid);
		int r = cl->send(c, cl->ctx, vmid, &co, &upid, err);
		if (r == 1) {
			log_info("VM %d (%s): an earlier attempt whose answer was lost created it",
				 vmid, cl->name);
			return adopt(c, cl, vmid, w, out, err);
		}
		if (r == 0) {
			if (!upid) /* no task to wait on: look */
				return adopt(c, cl, vmid, w, out, err);
			hook_started(w, upid);
			/* the guest exists from now on, with our name once the
			 * task ends: a listing meanwhile knows whose it is */
			struct guest_ref mine = {.vmid = vmid, .type = cl->type,
						 .node = (char *)cl->node, .name = (char *)cl->name};
			made_remember(c, &mine);
			int wr = guest_wait_task(c, upid, cl->step, w, NULL, err);
			free(upid);
			if (wr < 0) {
				made_forget(c, &mine);
				return -1; /* never sent again */
			}
			return made(c, cl, vmid, out, err);
		}
		/* failed: decide whether the next VMID may be tried */
		if (err->kind == PVE_ERR_EXISTS && !err->ambiguous) {
			if (pol->vmid > 0) {
				char *m = strprintf("VMID %d is taken (%s); choose another or leave "
						    "--vmid out",
						    vmid, err->message ? err->message : "exists");
				pve_error_set(err, PVE_ERR_EXISTS, "%s", m ? m : "VMID taken");
				free(m);
				return -1;
			}
			log_debug("VMID %d was taken by someone else; trying the next one", vmid);
			last = vmid;
			pve_error_clear(err);
			/* Break lockstep with concurrent claimers. */
			double jitter = (double)(rand_r(&seed) % 50) / 1000.0 * (attempt + 1);
			pve_clock_sleep(w_clock(w), jitter);
			continue;
		}
		if (err->kind == PVE_ERR_LOCKED && cl->lock_src && lock_waits < LOCK_RETRIES) {
			lock_waits++;
			pve_error_clear(err);
			if (guest_wait_unlocked(c, cl->lock_src, w, err) < 0)
				return -1;
			same_again = true;
			attempt--;
			continue;
		}
		if (err->ambiguous) {
			/* The request may have taken effect without our knowing. */
			struct pve_error saved = {0};
			pve_error_move(&saved, err);
			if (guest_vmid_is_named(c, vmid, cl->name, w)) {
				pve_error_clear(&saved);
				log_info("VM %d (%s): created by an attempt whose answer was lost", vmid,
					 cl->name);
				return adopt(c, cl, vmid, w, out, err);
			}
			struct guest_ref g;
			int fr = guest_find_by_vmid(c, vmid, &g, err);
			guest_ref_clear(&g);
			if (fr < 0) {
				pve_error_clear(&saved);
				return -1;
			}
			if (fr == 1) {
				/* Someone else's guest holds this VMID. */
				if (pol->vmid > 0) {
					pve_error_move(err, &saved);
					return -1;
				}
				pve_error_clear(&saved);
				last = vmid;
				continue;
			}
			/* Nothing was created: sending again cannot duplicate. */
			if (++resends > AMBIGUOUS_RESENDS) {
				pve_error_move(err, &saved);
				return -1;
			}
			log_debug("VM %d: the unanswered request created nothing; sending again",
				  vmid);
			pve_error_clear(&saved);
			same_again = true;
			continue;
		}
		return -1;
	}
	pve_error_set(err, PVE_ERR_EXISTS,
		      "could not claim a VMID for '%s' after %d attempts (others keep taking "
		      "them)",
		      cl->name, claims);
	return -1;
}

/* Claim a VMID by creating the guest (cl->send), trying the next VMID
 * when one is taken. */
static int claim_run(struct pve *c, const struct claim *cl, const struct guest_wait *w,
		     struct guest_ref *out, int *claims_out, struct pve_error *err)
{
	int held = 0;
	int rc = claim_attempts(c, cl, w, &held, out, claims_out, err);
	vmid_release(c, &held);
	return rc;
}

/* ---- create -------------------------------------------------------------------- */

struct create_send_ctx {
	const struct guest_create_req *req;
	bool start; /* the last request sent asked for start */
};

static int create_send(struct pve *c, void *ctx, int vmid, const struct pve_call_opts *co,
		       char **upid, struct pve_error *err)
{
	struct create_send_ctx *cs = ctx;
	const struct guest_create_req *req = cs->req;
	struct pve_params p = {0};
	pve_params_add_int(&p, "vmid", vmid);
	if (req->params && req->params(req->params_ctx, vmid, &p, err) < 0) {
		pve_params_free(&p);
		return -1;
	}
	const char *namekey = req->type == GUEST_QEMU ? "name" : "hostname";
	if (req->name && !pve_params_get(&p, namekey))
		pve_params_add(&p, namekey, req->name);
	const char *start = pve_params_get(&p, "start");
	cs->start = start && strcmp(start, "0") != 0 && strcasecmp(start, "false") != 0 &&
		    strcasecmp(start, "no") != 0 && strcasecmp(start, "off") != 0;
	char *node = pve_path_escape(req->node);
	char *path = node ? strprintf("/nodes/%s/%s", node, guest_type_name(req->type)) : NULL;
	free(node);
	int r;
	if (!path) {
		r = pve_error_oom(err);
	} else {
		r = task_start(c, "POST", path, &p, co, upid, err);
	}
	free(path);
	pve_params_free(&p);
	return r;
}

int guest_create(struct pve *c, const struct guest_create_req *req, const struct guest_wait *w,
		 struct guest_ref *out, int *claims, struct pve_error *err)
{
	struct create_send_ctx cs = {req, false};
	struct claim cl = {
		.send = create_send,
		.ctx = &cs,
		.type = req->type,
		.node = req->node,
		.name = req->name,
		.step = "create",
		.pol = &req->vmid,
		.starts = &cs.start,
	};
	return claim_run(c, &cl, w, out, claims, err);
}

struct clone_send_ctx {
	const struct guest_clone_req *req;
};

static int clone_send(struct pve *c, void *ctx, int vmid, const struct pve_call_opts *co,
		      char **upid, struct pve_error *err)
{
	struct clone_send_ctx *cs = ctx;
	const struct guest_clone_req *req = cs->req;
	struct pve_params p = {0};
	pve_params_add_int(&p, "newid", vmid);
	if (req->name)
		pve_params_add(&p, "name", req->name);
	if (req->target && strcmp(req->target, req->source->node) != 0)
		pve_params_add(&p, "target", req->target);
	pve_params_add_bool(&p, "full", req->full);
	if (req->full && req->storage)
		pve_params_add(&p, "storage", req->storage);
	char *path = gpath(req->source, "/clone");
	int r;
	if (!path)
		r = pve_error_oom(err);
	else
		r = task_start(c, "POST", path, &p, co, upid, err);
	free(path);
	pve_params_free(&p);
	return r;
}

int guest_clone(struct pve *c, const struct guest_clone_req *req, const struct guest_wait *w,
		struct guest_ref *out, int *claims, struct pve_error *err)
{
	struct guest_ref src;
	if (guest_ref_copy(&src, req->source) < 0)
		return pve_error_oom(err);
	struct clone_send_ctx cs = {req};
	struct claim cl = {
		.send = clone_send,
		.ctx = &cs,
		.type = GUEST_QEMU,
		.node = req->target ? req->target : req->source->node,
		.name = req->name,
		.step = "clone",
		.pol = &req->vmid,
		.lock_src = &src,
	};
	int rc = claim_run(c, &cl, w, out, claims, err);
	guest_ref_clear(&src);
	return rc;
}

/* ---- config ---------------------------------------------------------------------- */

int guest_get_config(struct pve *c, const struct guest_ref *g, json_object **config,
		     struct pve_error *err)
{
	if (gget(c, g, "/config", config, err) < 0)
		return -1;
	if (!json_object_is_type(*config, json_type_object)) {
		json_object_put(*config);
		*config = NULL;
		pve_error_set(err, PVE_ERR_PROTOCOL, "GET config of VM %d: not an object", g->vmid);
		return -1;
	}
	return 0;
}

bool guest_config_shows(json_object *config, const struct pve_params *set,
			const char *delete_keys)
{
	for (size_t i = 0; set && i < set->n; i++) {
		const char *k = set->v[i].key, *want = set->v[i].value;
		const char *have = json_text(config, k);
		if (strcmp(k, "digest") == 0)
			continue;
		if (!have || !want || (strcmp(have, want) != 0 && !propstr_equal(have, want)))
			return false;
	}
	for (const char *p = delete_keys; p && *p;) {
		size_t n = strcspn(p, ",");
		char *k = strndup(p, n);
		bool present = !k || json_text(config, k) != NULL;
		free(k);
		if (present)
			return false;
		p += n + (p[n] ? 1 : 0);
	}
	return true;
}

/* The config shows the change (arg: the request's parameters). */
static int shows_config(struct pve *c, struct guest_ref *g, const void *arg,
			struct pve_error *err)
{
	const struct pve_params *p = arg;
	struct pve_params set = {0};
	const char *del = NULL;
	for (size_t i = 0; i < p->n; i++) {
		if (strcmp(p->v[i].key, "delete") == 0)
			del = p->v[i].value;
		else
			pve_params_add(&set, p->v[i].key, p->v[i].value);
	}
	json_object *cfg = NULL;
	int rc = set.failed ? pve_error_oom(err)
	       : guest_get_config(c, g, &cfg, err) < 0 ? -1
						       : guest_config_shows(cfg, &set, del);
	json_object_put(cfg);
	pve_params_free(&set);
	return rc;
}

/* An async config change shows only as its running task (the caller
 * compares the config again). */
static const struct effect eff_config = {"qmconfig", NULL, NULL, NULL};

int guest_set_config(struct pve *c, struct guest_ref *g, const struct pve_params *set,
		     const char *delete_keys, const char *digest, bool async,
		     const struct guest_wait *w, struct pve_error *err)
{
	struct pve_params p = {0};
	for (size_t i = 0; set && i < set->n; i++)
		pve_params_add(&p, set->v[i].key, set->v[i].value);
	if (set && set->failed)
		p.failed = true;
	if (delete_keys && *delete_keys)
		pve_params_add(&p, "delete", delete_keys);
	if (digest && *digest)
		pve_params_add(&p, "digest", digest);
	/* synchronous (PUT): no task, but an answer lost after the change
	 * was made is resolved by reading the config, never by sending the
	 * change again blindly */
	const struct effect eff = {NULL, NULL, shows_config, &p};
	bool post = async && g->type == GUEST_QEMU;
	const struct guest_task_req rq = {post ? "POST" : "PUT", "/config", .params = &p,
					  .step = "config", .eff = post ? &eff_config : &eff};
	int rc = guest_task(c, g, &rq, w, err);
	pve_params_free(&p);
	return rc;
}

int guest_pending(struct pve *c, const struct guest_ref *g, char **keys, struct pve_error *err)
{
	*keys = NULL;
	if (g->type == GUEST_OPENVZ)
		return 0;
	json_object *d = NULL;
	if (gget(c, g, "/pending", &d, err) < 0)
		return -1;
	int rc = 0;
	struct sbuf b = {0};
	size_t n = json_object_is_type(d, json_type_array) ? json_object_array_length(d) : 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		json_object *it = json_object_array_get_idx(d, i);
		const char *key = json_str(it, "key");
		long long del = 0;
		bool pend = json_object_object_get_ex(it, "pending", NULL);
		if (!key || (!pend && !(json_int(it, "delete", &del) && del)))
			continue;
		rc = sbuf_addf(&b, "%s%s", b.len ? "," : "", key);
	}
	json_object_put(d);
	if (rc < 0) {
		sbuf_free(&b);
		return pve_error_oom(err);
	}
	if (b.len)
		*keys = sbuf_steal(&b);
	sbuf_free(&b);
	return 0;
}

struct size_want {
	const char *disk;
	double bytes;
};

/* The disk's size in its config, in bytes; -1 when it has none. */
static double disk_size(json_object *conf, const char *disk)
{
	const char *val = json_str(conf, disk);
	struct propstr ps;
	double have = -1;
	if (val && propstr_parse(val, &ps) == 0) {
		const char *cur = propstr_get(&ps, "size");
		if (cur && pvecfg_parse_size(cur, &have) < 0)
			have = -1;
		propstr_free(&ps);
	}
	return have;
}

static int shows_size(struct pve *c, struct guest_ref *g, const void *arg, struct pve_error *err)
{
	const struct size_want *sw = arg;
	json_object *conf = NULL;
	if (guest_get_config(c, g, &conf, err) < 0)
		return -1;
	double have = disk_size(conf, sw->disk);
	json_object_put(conf);
	return have >= sw->bytes;
}

int guest_disk_compare(json_object *conf, enum guest_type type, const char *disk,
		       const char *size, int *cmp, struct pve_error *err)
{
	double want;
	if (pvecfg_parse_size(size, &want) < 0) {
		pve_error_set(err, PVE_ERR_CONFIG, "disk size '%s': expected a size like 32G", size);
		return -1;
	}
	double have;
	if (type == GUEST_OPENVZ) {
		/* disk is in GB (number) */
		const char *cur = json_str(conf, "disk");
		char *curdup = cur ? NULL : json_scalar_dup(conf, "disk");
		have = (cur || curdup) ? strtod(cur ? cur : curdup, NULL) : 0;
		free(curdup);
		want /= 1024.0 * 1024 * 1024;
	} else {
		if (!json_str(conf, disk)) {
			pve_error_set(err, PVE_ERR_CONFIG, "%s has no disk '%s' to resize",
				      json_str(conf, "name") ? json_str(conf, "name") : "the guest", disk);
			return -1;
		}
		have = disk_size(conf, disk);
	}
	*cmp = have < want ? -1 : have > want ? 1 : 0;
	return 0;
}

int guest_resize(struct pve *c, struct guest_ref *g, const char *disk, const char *size,
		 const struct guest_wait *w, bool *changed, bool *larger, struct pve_error *err)
{
	if (changed)
		*changed = false;
	if (larger)
		*larger = false;
	json_object *conf = NULL;
	if (guest_get_config(c, g, &conf, err) < 0)
		return -1;
	int cmp = 0;
	int rc = guest_disk_compare(conf, g->type, disk, size, &cmp, err);
	json_object_put(conf);
	if (rc < 0)
		return -1;
	if (cmp >= 0) {
		log_debug("VM %d %s is already %s or larger", g->vmid, disk, size);
		if (larger)
			*larger = cmp > 0;
		return 0;
	}
	if (g->type == GUEST_OPENVZ) {
		double want = 0;
		pvecfg_parse_size(size, &want);
		struct pve_params p = {0};
		pve_params_addf(&p, "disk", "%g", want / (1024.0 * 1024 * 1024));
		rc = guest_set_config(c, g, &p, NULL, NULL, false, w, err);
		pve_params_free(&p);
		if (rc == 0 && changed)
			*changed = true;
		return rc;
	}
	double want = 0;
	pvecfg_parse_size(size, &want);
	struct pve_params p = {0};
	pve_params_add(&p, "disk", disk);
	pve_params_add(&p, "size", size);
	struct size_want sw = {disk, want};
	struct effect eff = {"resize", "resize", shows_size, &sw};
	const struct guest_task_req rq = {"PUT", "/resize", .params = &p, .step = "resize",
					  .eff = &eff};
	rc = guest_task(c, g, &rq, w, err);
	pve_params_free(&p);
	if (rc == 0 && changed)
		*changed = true;
	return rc;
}

/* ---- power and delete ------------------------------------------------------------ */

static bool status_is(const struct guest_ref *g, const char *status)
{
	return g->status && strcmp(g->status, status) == 0;
}

/* After a power task that ended well: wait (up to limit) until PVE shows
 * the state asked for. The task of a guest the HA stack manages (hastart,
 * hastop) ends as soon as the request is queued; the CRM and the node's
 * LRM make the change some seconds later. Anything else shows it at the
 * first read. 0; -1 with PVE_ERR_TASK_TIMEOUT when it never came, or the
 * read's error. */
static int wait_status(struct pve *c, struct guest_ref *g, const char *want, const char *step,
		       double limit, const struct guest_wait *w, struct pve_error *err)
{
	const struct pve_clock *clk = w_clock(w);
	double t0 = pve_clock_now(clk);
	for (unsigned n = 0;; n++) {
		free(g->status);
		g->status = NULL; /* unknown until read */
		if (guest_refresh(c, g, err) < 0)
			return -1;
		if (status_is(g, want)) {
			if (n > 0)
				progress(w, step, 100, "VM %d is %s after %.0f s", g->vmid, want,
					 pve_clock_now(clk) - t0);
			return 0;
		}
		double waited = pve_clock_now(clk) - t0;
		if (waited >= limit) {
			pve_error_set(err, PVE_ERR_TASK_TIMEOUT,
				      "VM %d on %s is %s, not %s, %.0f s after its %s task ended "
				      "(an HA-managed guest changes state when the HA stack gets "
				      "to it: see 'ha-manager status')",
				      g->vmid, g->node, g->status ? g->status : "in an unknown state",
				      want, waited, step);
			return -1;
		}
		progress(w, step, -1, "waiting for VM %d to be %s (%.0f s)", g->vmid, want, waited);
		pve_clock_sleep(clk, w_poll(w));
	}
}

int guest_start(struct pve *c, struct guest_ref *g, const struct guest_wait *w,
		struct pve_error *err)
{
	/* Only a guest believed stopped is started without asking first: if
	 * that belief is stale, PVE's "already running" below makes it
	 * harmless. Any other belief (running, unknown) is checked, so that a
	 * stopped guest is never taken for a running one. */
	if (!status_is(g, "stopped")) {
		if (guest_refresh(c, g, err) < 0)
			return -1;
		if (status_is(g, "running"))
			return 0;
	}
	static const struct effect eff = {"qmstart", "vzstart", shows_status, "running"};
	char *type = NULL;
	const struct guest_task_req rq = {"POST", "/status/start", .step = "start",
					  .ok_msg = "already running", .eff = &eff, .type = &type};
	int rc = guest_task(c, g, &rq, w, err);
	/* the guest's own start task (not HA's hastart, which ends when the
	 * request is queued) ended well: it runs, nothing to read */
	const char *own = g->type == GUEST_QEMU ? eff.qm_task : eff.ct_task;
	bool direct = rc == 0 && type && strcmp(type, own) == 0;
	free(type);
	if (rc < 0 && !(err->kind == PVE_ERR_TASK && msg_has(err, "already running")))
		return -1;
	if (direct) {
		free(g->status);
		g->status = strdup("running");
		return g->status ? 0 : pve_error_oom(err);
	}
	/* qemu says "already running" from inside the start task: believed
	 * once the status confirms it */
	struct pve_error failed = {0};
	if (rc == 0) {
		int ws = wait_status(c, g, "running", "start", w_lock_timeout(w), w, err);
		if (ws < 0 && err->kind != PVE_ERR_TASK_TIMEOUT)
			pve_error_clear(err); /* a failed read: the step itself succeeded */
		else if (ws < 0)
			return -1;
		return 0;
	}
	pve_error_move(&failed, err);
	free(g->status);
	g->status = NULL; /* unknown until read */
	if (guest_refresh(c, g, err) < 0) {
		if (rc == 0)
			pve_error_clear(err); /* the step itself succeeded */
		else
			pve_error_move(err, &failed); /* unconfirmed: the task's error */
		return rc;
	}
	if (rc < 0) {
		if (!status_is(g, "running")) {
			pve_error_move(err, &failed);
			return -1;
		}
		log_debug("VM %d was running already", g->vmid);
		pve_error_clear(&failed);
	}
	return 0;
}

int guest_stop(struct pve *c, struct guest_ref *g, const struct guest_wait *w,
	       struct pve_error *err)
{
	if (guest_refresh(c, g, err) < 0)
		return -1;
	if (g->status && strcmp(g->status, "stopped") == 0)
		return 0;
	static const struct effect eff = {"qmstop", "vzstop", shows_status, "stopped"};
	const struct guest_task_req rq = {"POST", "/status/stop", .step = "stop",
					  .ok_msg = "not running", .eff = &eff};
	int rc = guest_task(c, g, &rq, w, err);
	if (rc == 0 && wait_status(c, g, "stopped", "stop", w_lock_timeout(w), w, err) < 0) {
		if (err->kind == PVE_ERR_TASK_TIMEOUT)
			return -1;
		pve_error_clear(err); /* a failed read: the step itself succeeded */
	}
	return rc;
}

int guest_shutdown(struct pve *c, struct guest_ref *g, const struct guest_wait *w, bool *forced,
		   struct pve_error *err)
{
	if (forced)
		*forced = false;
	if (guest_refresh(c, g, err) < 0)
		return -1;
	if (g->status && strcmp(g->status, "stopped") == 0)
		return 0;
	double tmo = w_shutdown_timeout(w);
	struct pve_params p = {0};
	pve_params_add_int(&p, "timeout", (long long)tmo);
	static const struct effect eff = {"qmshutdown", "vzshutdown", shows_status, "stopped"};
	const struct guest_task_req rq = {"POST", "/status/shutdown", .params = &p,
					  .step = "shutdown", .ok_msg = "not running",
					  .task_timeout = tmo + 60, .eff = &eff};
	int rc = guest_task(c, g, &rq, w, err);
	pve_params_free(&p);
	if (rc == 0) {
		/* HA: the hastop task ended; the shutdown itself comes later */
		rc = wait_status(c, g, "stopped", "shutdown", tmo + 60, w, err);
		if (rc < 0 && err->kind != PVE_ERR_TASK_TIMEOUT) {
			pve_error_clear(err); /* a failed read: the step itself succeeded */
			rc = 0;
		}
	}
	if (rc < 0 && (err->kind == PVE_ERR_TASK || err->kind == PVE_ERR_TASK_TIMEOUT)) {
		log_warn("VM %d did not shut down cleanly (%s); stopping it", g->vmid,
			 err->message ? err->message : "timeout");
		progress(w, "shutdown", -1, "VM %d did not shut down in %.0f s; stopping it",
			 g->vmid, tmo);
		pve_error_clear(err);
		if (forced)
			*forced = true;
		rc = guest_stop(c, g, w, err);
	}
	return rc;
}

int guest_delete(struct pve *c, struct guest_ref *g, bool purge, const struct guest_wait *w,
		 bool *deleted, struct pve_error *err)
{
	if (deleted)
		*deleted = false;
	int major = 8;
	if (guest_pve_major(c, &major, err) < 0)
		return -1;
	struct pve_params p = {0};
	if (g->type != GUEST_OPENVZ) {
		if (purge && major >= 5)
			pve_params_add_bool(&p, "purge", true);
		if (major >= 7)
			pve_params_add_bool(&p, "destroy-unreferenced-disks", true);
	}
	bool noop = false;
	static const struct effect eff = {"qmdestroy", "vzdestroy", shows_gone, NULL};
	const struct guest_task_req rq = {"DELETE", "", .params = &p, .step = "delete", .eff = &eff,
					  .noop = &noop};
	int rc = guest_task(c, g, &rq, w, err);
	pve_params_free(&p);
	if (rc < 0 && err->kind == PVE_ERR_NOT_FOUND) {
		log_debug("VM %d does not exist: nothing to delete", g->vmid);
		pve_error_clear(err);
		return 0;
	}
	if (rc == 0)
		made_forget(c, g);
	if (rc == 0 && deleted)
		*deleted = true;
	return rc;
}

/* ---- address ---------------------------------------------------------------------- */

static bool usable_ip(const char *ip, bool *v6)
{
	if (!ip || !*ip)
		return false;
	*v6 = strchr(ip, ':') != NULL;
	if (*v6)
		return strcasecmp(ip, "::1") != 0 && strncasecmp(ip, "fe80", 4) != 0;
	return strcmp(ip, "127.0.0.1") != 0 && strncmp(ip, "169.254.", 8) != 0 && strcmp(ip, "0.0.0.0") != 0;
}

/* Copy of an address without a "/prefix". */
static char *strip_prefix(const char *a)
{
	size_t n = strcspn(a, "/");
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	memcpy(s, a, n);
	s[n] = 0;
	return s;
}

char *guest_pick_address(json_object *ifaces)
{
	if (!json_object_is_type(ifaces, json_type_array))
		return NULL;
	char *v6best = NULL;
	size_t n = json_object_array_length(ifaces);
	for (size_t i = 0; i < n; i++) {
		json_object *it = json_object_array_get_idx(ifaces, i);
		const char *ifname = json_str(it, "name");
		if (ifname && strcmp(ifname, "lo") == 0)
			continue;
		json_object *addrs;
		if (json_object_object_get_ex(it, "ip-addresses", &addrs) &&
		    json_object_is_type(addrs, json_type_array)) {
			size_t m = json_object_array_length(addrs);
			for (size_t j = 0; j < m; j++) {
				json_object *a = json_object_array_get_idx(addrs, j);
				const char *ip = json_str(a, "ip-address");
				bool v6;
				if (!usable_ip(ip, &v6))
					continue;
				if (!v6) {
					free(v6best);
					return strdup(ip);
				}
				if (!v6best)
					v6best = strdup(ip);
			}
		}
		const char *inet = json_str(it, "inet");
		if (inet) {
			char *ip = strip_prefix(inet);
			bool v6;
			if (ip && usable_ip(ip, &v6) && !v6) {
				free(v6best);
				return ip;
			}
			free(ip);
		}
		const char *inet6 = json_str(it, "inet6");
		if (inet6 && !v6best) {
			char *ip = strip_prefix(inet6);
			bool v6;
			if (ip && usable_ip(ip, &v6))
				v6best = ip;
			else
				free(ip);
		}
	}
	return v6best;
}

static char *ip_from_propstr(const char *val, const char *key)
{
	if (!val)
		return NULL;
	struct propstr ps;
	if (propstr_parse(val, &ps) < 0)
		return NULL;
	const char *ip = propstr_get(&ps, key);
	char *r = NULL;
	if (ip && strcmp(ip, "dhcp") != 0 && strcmp(ip, "manual") != 0 && strcmp(ip, "auto") != 0)
		r = strip_prefix(ip);
	propstr_free(&ps);
	return r;
}

char *guest_config_address(json_object *config, enum guest_type type)
{
	switch (type) {
	case GUEST_QEMU:
		return ip_from_propstr(json_str(config, "ipconfig0"), "ip");
	case GUEST_LXC:
		return ip_from_propstr(json_str(config, "net0"), "ip");
	case GUEST_OPENVZ: {
		const char *a = json_str(config, "ip_address");
		if (!a || !*a)
			return NULL;
		size_t n = strcspn(a, " ,;/");
		char *s = malloc(n + 1);
		if (!s)
			return NULL;
		memcpy(s, a, n);
		s[n] = 0;
		return s;
	}
	}
	return NULL;
}

static int config_address(struct pve *c, struct guest_ref *g, char **addr, struct pve_error *err)
{
	json_object *conf = NULL;
	if (guest_get_config(c, g, &conf, err) < 0)
		return -1;
	*addr = guest_config_address(conf, g->type);
	json_object_put(conf);
	if (!*addr) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "VM %d: its config names no static address (ipconfig0/net0 ip=, "
			      "ip_address)",
			      g->vmid);
		return -1;
	}
	return 0;
}

int guest_address(struct pve *c, struct guest_ref *g, enum guest_addr_source src,
		  const char *static_ip, const struct guest_wait *w, char **addr,
		  struct pve_error *err)
{
	*addr = NULL;
	if (src == GUEST_ADDR_STATIC) {
		if (!static_ip || !*static_ip) {
			pve_error_set(err, PVE_ERR_CONFIG, "no static address given for VM %d",
				      g->vmid);
			return -1;
		}
		*addr = strip_prefix(static_ip);
		return *addr ? 0 : pve_error_oom(err);
	}
	if (src == GUEST_ADDR_CONFIG || g->type == GUEST_OPENVZ)
		return config_address(c, g, addr, err);
	const char *suffix =
		g->type == GUEST_QEMU ? "/agent/network-get-interfaces" : "/interfaces";
	char *path = gpath(g, suffix);
	if (!path)
		return pve_error_oom(err);
	const struct pve_clock *clk = w_clock(w);
	double t0 = pve_clock_now(clk), limit = w_address_timeout(w);
	int rc = -1;
	struct pve_call_opts co = {.no_retry = true};
	for (;;) {
		json_object *d = NULL;
		int r = pve_request(c, "GET", path, NULL, &co, &d, err);
		if (r >= 0) {
			json_object *arr = d;
			json_object *res;
			if (json_object_is_type(d, json_type_object) &&
			    json_object_object_get_ex(d, "result", &res))
				arr = res;
			*addr = guest_pick_address(arr);
			json_object_put(d);
			if (*addr) {
				rc = 0;
				break;
			}
		} else if (err->kind == PVE_ERR_NOT_IMPLEMENTED) {
			/* No such route (old PVE): fall back to the config. */
			pve_error_clear(err);
			rc = config_address(c, g, addr, err);
			break;
		} else if (msg_has(err, "guest agent configured")) {
			/* "No QEMU guest agent configured": waiting cannot help */
			char *why = err->message ? strdup(err->message) : NULL;
			pve_error_set(err, PVE_ERR_CONFIG,
				      "VM %d: %s; set agent=1 (and install the guest agent) or "
				      "use a static or cloud-init address",
				      g->vmid, why ? why : "no guest agent configured");
			free(why);
			break;
		} else if (err->kind == PVE_ERR_AUTH || err->kind == PVE_ERR_PERM ||
			   err->kind == PVE_ERR_PARAM || err->kind == PVE_ERR_NOT_FOUND ||
			   err->kind == PVE_ERR_TLS || err->kind == PVE_ERR_PIN ||
			   err->kind == PVE_ERR_INTERNAL) {
			break;
		}
		double waited = pve_clock_now(clk) - t0;
		if (waited >= limit) {
			char *why = err->message ? strdup(err->message) : NULL;
			pve_error_set(err, PVE_ERR_TIMEOUT,
				      "VM %d reported no address within %.0f s%s%s%s", g->vmid,
				      waited, why ? " (last answer: " : "", why ? why : "",
				      why ? ")" : "");
			free(why);
			break;
		}
		progress(w, "address", -1, "waiting for VM %d to report an address (%.0f s)",
			 g->vmid, waited);
		pve_error_clear(err);
		pve_clock_sleep(clk, w_poll(w));
	}
	free(path);
	return rc;
}
