/* report.c - the report model (report.h): a job tree read from the store
 * into lanes (the jobs that work on a node, with their steps), moves (a
 * drain's or undrain's planned moves completed from their migration jobs)
 * and guests (where each ended up against its home); its JSON form both
 * ways. */
#include "report.h"

#include "json.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How deep a tree is followed: rolling run, node job, drain, migration. */
#define REPORT_DEPTH 4

const char *report_kind_name(enum report_kind k)
{
	switch (k) {
	case REPORT_MOVED: return "moved";
	case REPORT_FAILED: return "failed";
	case REPORT_REFUSED: return "refused";
	case REPORT_STAYED: return "stayed";
	case REPORT_PENDING: return "pending";
	}
	return "?";
}

static int kind_parse(const char *s, enum report_kind *out)
{
	for (int k = REPORT_MOVED; s && k <= REPORT_PENDING; k++)
		if (strcmp(s, report_kind_name((enum report_kind)k)) == 0) {
			*out = (enum report_kind)k;
			return 0;
		}
	return -1;
}

/* A drain's move status as the report's kind. */
static enum report_kind kind_of_status(const char *st)
{
	static const struct {
		const char *status;
		enum report_kind kind;
	} map[] = {
		{"moved", REPORT_MOVED},	  {"tagged", REPORT_MOVED},
		{"moved by HA", REPORT_MOVED},
		{"failed", REPORT_FAILED},	  {"needs-attention", REPORT_FAILED},
		{"interrupted", REPORT_FAILED}, {"fits nowhere", REPORT_REFUSED},
		{"skipped", REPORT_REFUSED},	  {"template", REPORT_STAYED},
		{"pinned", REPORT_STAYED},
	};
	for (size_t i = 0; st && i < sizeof map / sizeof *map; i++)
		if (strcmp(st, map[i].status) == 0)
			return map[i].kind;
	return REPORT_PENDING; /* "move", "tag", "with": not run */
}

const char *report_clock(char *buf, size_t n, double t, bool with_date)
{
	time_t s = (time_t)t;
	struct tm tm;
	if (t <= 0 || !localtime_r(&s, &tm) ||
	    strftime(buf, n, with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm) == 0)
		snprintf(buf, n, "-");
	return buf;
}

const char *report_ms(char *buf, size_t n, long long ms)
{
	if (ms < 0)
		snprintf(buf, n, "-");
	else
		str_duration(buf, n, (double)ms / 1000);
	return buf;
}

/* ---- freeing -------------------------------------------------------------------- */

static void lane_free(struct report_lane *l)
{
	for (size_t i = 0; i < l->n_steps; i++) {
		free(l->steps[i].name);
		free(l->steps[i].state);
		free(l->steps[i].result);
		free(l->steps[i].error);
	}
	free(l->steps);
	free(l->workflow);
	free(l->node);
	free(l->state);
}

static void move_free(struct report_move *m)
{
	free(m->name);
	free(m->type);
	free(m->from);
	free(m->to);
	free(m->method);
	free(m->status);
	free(m->why);
	free(m->home);
}

static void guests_free(struct report *r)
{
	for (size_t i = 0; i < r->n_guests; i++) {
		free(r->guests[i].name);
		free(r->guests[i].type);
		free(r->guests[i].home);
		free(r->guests[i].at);
	}
	free(r->guests);
	r->guests = NULL;
	r->n_guests = 0;
}

void report_free(struct report *r)
{
	for (size_t i = 0; i < r->n_lanes; i++)
		lane_free(&r->lanes[i]);
	for (size_t i = 0; i < r->n_moves; i++)
		move_free(&r->moves[i]);
	guests_free(r);
	free(r->lanes);
	free(r->moves);
	free(r->workflow);
	free(r->subject);
	free(r->state);
	free(r->kind);
	free(r->error);
	free(r->left);
	memset(r, 0, sizeof *r);
}

/* ---- growing arrays -------------------------------------------------------------- */

static void *grow(void *v, size_t n, size_t size)
{
	/* one more element, zeroed: at n */
	char *nv = realloc(v, (n + 1) * size);
	if (nv)
		memset(nv + n * size, 0, size);
	return nv;
}

static struct report_lane *new_lane(struct report *r)
{
	struct report_lane *nv = grow(r->lanes, r->n_lanes, sizeof *nv);
	if (!nv)
		return NULL;
	r->lanes = nv;
	return &r->lanes[r->n_lanes++];
}

static struct report_move *new_move(struct report *r)
{
	struct report_move *nv = grow(r->moves, r->n_moves, sizeof *nv);
	if (!nv)
		return NULL;
	r->moves = nv;
	struct report_move *m = &r->moves[r->n_moves++];
	m->downtime_ms = m->gap_ms = -1;
	return m;
}

/* A copy of s, NULL staying NULL; *oom set when the copy fails. */
static char *dup_or_null(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		*oom = true;
	return d;
}

/* ---- the tree --------------------------------------------------------------------- */

/* What the builder holds while it walks: every job of the tree, so that
 * moves find their migrations. */
struct tree {
	struct store_job *jobs;     /* owned rows */
	size_t n;
	long long *parent;          /* per job: its parent's ID (0: the root) */
	struct store_step **steps;  /* per job: its steps */
	size_t *n_steps;
	json_object **vars;         /* per job: its parsed vars (never NULL) */
	bool *used;                 /* a migration job a move took */
};

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		store_steps_free(t->steps[i], t->n_steps[i]);
		json_object_put(t->vars[i]);
	}
	store_jobs_free(t->jobs, t->n);
	free(t->parent);
	free(t->steps);
	free(t->n_steps);
	free(t->vars);
	free(t->used);
}

/* Append job j (taken) with its parent; 0 or -1 (*err). */
static int tree_add(struct store *s, struct tree *t, struct store_job *j, long long parent,
		    char **err)
{
	size_t n = t->n;
	struct store_job *jv = grow(t->jobs, n, sizeof *jv);
	if (jv)
		t->jobs = jv;
	long long *pv = jv ? grow(t->parent, n, sizeof *pv) : NULL;
	if (pv)
		t->parent = pv;
	struct store_step **sv = pv ? grow(t->steps, n, sizeof *sv) : NULL;
	if (sv)
		t->steps = sv;
	size_t *nsv = sv ? grow(t->n_steps, n, sizeof *nsv) : NULL;
	if (nsv)
		t->n_steps = nsv;
	json_object **vv = nsv ? grow(t->vars, n, sizeof *vv) : NULL;
	if (vv)
		t->vars = vv;
	bool *uv = vv ? grow(t->used, n, sizeof *uv) : NULL;
	if (uv)
		t->used = uv;
	if (!uv) {
		store_job_free(j);
		err_setf(err, "out of memory");
		return -1;
	}
	t->jobs[n] = *j;
	t->parent[n] = parent;
	t->n++;
	json_object *v = j->vars ? json_tokener_parse(j->vars) : NULL;
	if (!v || !json_object_is_type(v, json_type_object)) {
		json_object_put(v);
		v = json_object_new_object();
	}
	t->vars[n] = v;
	if (!v) {
		err_setf(err, "out of memory");
		return -1;
	}
	return store_steps_get(s, j->id, &t->steps[n], &t->n_steps[n], err);
}

/* The children of the tree's job at index i, and theirs, to depth. */
static int tree_walk(struct store *s, struct tree *t, size_t i, int depth, char **err)
{
	if (depth >= REPORT_DEPTH)
		return 0;
	struct store_job *kids = NULL;
	size_t nk = 0;
	long long id = t->jobs[i].id;
	if (store_jobs_children(s, id, &kids, &nk, err) < 0)
		return -1;
	size_t first = t->n;
	int rc = 0;
	for (size_t k = 0; k < nk; k++) {
		if (kids[k].id <= id) { /* a child is made after its parent: no loop */
			store_job_free(&kids[k]);
			continue;
		}
		if (rc == 0)
			rc = tree_add(s, t, &kids[k], id, err);
		else
			store_job_free(&kids[k]);
	}
	free(kids);
	size_t last = t->n;
	for (size_t k = first; rc == 0 && k < last; k++)
		rc = tree_walk(s, t, k, depth + 1, err);
	return rc;
}

/* ---- from the tree to the model ----------------------------------------------------- */

/* The message of a stored error (JSON), or NULL; its "left" into *left. */
static char *error_message(const char *ejson, char **left, bool *oom)
{
	if (left)
		*left = NULL;
	if (!ejson)
		return NULL;
	json_object *e = json_tokener_parse(ejson);
	char *msg = dup_or_null(json_str(e, "message"), oom);
	if (left)
		*left = dup_or_null(json_str(e, "left"), oom);
	json_object_put(e);
	return msg;
}

static int add_lane(struct report *r, struct tree *t, size_t i)
{
	struct report_lane *l = new_lane(r);
	bool oom = !l;
	if (oom)
		return -1;
	const struct store_job *j = &t->jobs[i];
	l->job = j->id;
	l->workflow = dup_or_null(j->workflow, &oom);
	l->node = dup_or_null(j->subject, &oom);
	l->state = dup_or_null(job_state_name(j->state), &oom);
	l->started = j->started;
	l->ended = j->ended;
	if (t->n_steps[i] && !(l->steps = calloc(t->n_steps[i], sizeof *l->steps)))
		return -1;
	for (size_t k = 0; k < t->n_steps[i]; k++) {
		const struct store_step *s = &t->steps[i][k];
		struct report_step *rs = &l->steps[l->n_steps++];
		rs->name = dup_or_null(s->name, &oom);
		rs->state = dup_or_null(step_state_name(s->state), &oom);
		rs->started = s->started;
		rs->ended = s->ended;
		rs->result = dup_or_null(s->result, &oom);
		rs->error = error_message(s->error, NULL, &oom);
	}
	return oom ? -1 : 0;
}

/* The migration job (a child of job index by) that moved guest vmid: the
 * one the move names, else the newest of that subject not taken. */
static long find_migration(struct tree *t, long long by_id, long long job, int vmid)
{
	char subject[24];
	snprintf(subject, sizeof subject, "%d", vmid);
	long found = -1;
	for (size_t i = 0; i < t->n; i++) {
		const struct store_job *j = &t->jobs[i];
		if (t->parent[i] != by_id || strcmp(j->workflow, "migrate") != 0)
			continue;
		if (job ? j->id == job : !t->used[i] && strcmp(j->subject, subject) == 0)
			found = (long)i;
	}
	return found;
}

/* The migration job's figures and times into m. */
static void from_migration(struct report_move *m, struct tree *t, size_t i, bool *oom)
{
	const struct store_job *j = &t->jobs[i];
	json_object *v = t->vars[i];
	long long x;
	t->used[i] = true;
	m->job = j->id;
	m->started = j->started;
	m->ended = j->ended;
	for (size_t k = 0; k < t->n_steps[i]; k++) {
		const struct store_step *s = &t->steps[i][k];
		if (strcmp(s->name, "migrate") == 0 && s->started > 0) {
			m->started = s->started;
			m->ended = s->ended;
		}
	}
	if (m->downtime_ms < 0 && json_int(v, "downtime_ms", &x) && x >= 0)
		m->downtime_ms = x;
	if (m->gap_ms < 0 && json_int(v, "probe_gap_ms", &x) && x >= 0)
		m->gap_ms = x;
	if (!m->method)
		m->method = dup_or_null(json_str(v, "method"), oom);
	if (!m->type)
		m->type = dup_or_null(json_str(v, "type"), oom);
	/* a move whose outcome its job never recorded (killed in the middle) */
	if (m->kind == REPORT_PENDING && m->status && strcmp(m->status, "with") != 0) {
		if (j->state == JOB_DONE)
			m->kind = REPORT_MOVED;
		else if (j->state == JOB_FAILED || j->state == JOB_NEEDS_ATTENTION ||
			 j->state == JOB_CANCELLED)
			m->kind = REPORT_FAILED;
	}
	if (!m->why && m->kind == REPORT_FAILED)
		m->why = error_message(j->error, NULL, oom);
}

/* A move's members as a drain's or a rolling node's vars record them
 * ("vmid", "name", "type", "target", "status", "downtime_ms"), planned by
 * job j; NULL when out of memory. */
static struct report_move *move_of(struct report *r, const struct store_job *j, json_object *o,
				   bool *oom)
{
	long long x;
	struct report_move *m = new_move(r);
	if (!m)
		return NULL;
	m->vmid = json_int(o, "vmid", &x) ? (int)x : 0;
	m->name = dup_or_null(json_str(o, "name"), oom);
	m->type = dup_or_null(json_str(o, "type"), oom);
	m->to = dup_or_null(json_str(o, "target"), oom);
	m->status = dup_or_null(json_str(o, "status"), oom);
	m->kind = kind_of_status(m->status);
	if (json_int(o, "downtime_ms", &x) && x >= 0)
		m->downtime_ms = x;
	m->by = j->id;
	return m;
}

/* The moves job index i recorded in its vars: a drain's or an undrain's
 * "moves", and the "ha_moves" of a rolling node, the moves PVE's CRM made
 * of its HA guests (off the node in maintenance and back after it), with
 * their tasks' start and end and a VM's downtime, no migration job of
 * ours. */
static int add_moves(struct report *r, struct tree *t, size_t i)
{
	const struct store_job *j = &t->jobs[i];
	bool undrain = strcmp(j->workflow, "undrain") == 0, oom = false;
	for (int ha = 0; ha <= 1; ha++) {
		json_object *moves = NULL;
		if (!json_object_object_get_ex(t->vars[i], ha ? "ha_moves" : "moves", &moves) ||
		    !json_object_is_type(moves, json_type_array))
			continue;
		for (size_t k = 0; k < json_object_array_length(moves); k++) {
			json_object *o = json_object_array_get_idx(moves, k);
			long long x;
			struct report_move *m = move_of(r, j, o, &oom);
			if (!m)
				return -1;
			const char *meth = json_str(o, "method");
			m->method = dup_or_null(meth && strcmp(meth, "-") != 0 ? meth : NULL, &oom);
			if (ha) {
				m->from = dup_or_null(json_str(o, "from"), &oom);
				m->home = dup_or_null(j->subject, &oom);
				if (json_int(o, "started", &x))
					m->started = (double)x;
				if (json_int(o, "ended", &x))
					m->ended = (double)x;
				continue;
			}
			m->from = dup_or_null(undrain ? json_str(o, "from") : j->subject, &oom);
			if (json_int(o, "probe_gap_ms", &x) && x >= 0)
				m->gap_ms = x;
			/* an undrain's target is the home; a drain's node is */
			m->home = dup_or_null(undrain ? m->to : j->subject, &oom);
			const char *with = json_str(o, "with");
			char *why = with && m->kind == REPORT_PENDING
					    ? strprintf("moves along with %s (HA)", with)
					    : NULL;
			m->why = why ? why : dup_or_null(json_str(o, "why"), &oom);
			oom |= with && m->kind == REPORT_PENDING && !why;
			if (m->kind != REPORT_STAYED && m->kind != REPORT_REFUSED) {
				long mi = find_migration(t, j->id, json_int(o, "job", &x) ? x : 0,
							 m->vmid);
				if (mi >= 0)
					from_migration(m, t, (size_t)mi, &oom);
			}
		}
	}
	return oom ? -1 : 0;
}

/* A migration job no planned move took (a rolling run's own, or the
 * report of one `pvagent migrate`). */
static int add_loose_migration(struct report *r, struct tree *t, size_t i)
{
	const struct store_job *j = &t->jobs[i];
	json_object *v = t->vars[i], *p = j->params ? json_tokener_parse(j->params) : NULL;
	struct report_move *m = new_move(r);
	bool oom = !m;
	long long x;
	if (m) {
		m->vmid = json_int(v, "vmid", &x) ? (int)x : atoi(j->subject);
		m->name = dup_or_null(j->subject, &oom);
		m->to = dup_or_null(json_str(p, "target"), &oom);
		/* "node" is the source until the move is verified, then the target */
		const char *node = json_str(v, "node");
		if (node && (!m->to || strcmp(node, m->to) != 0))
			m->from = dup_or_null(node, &oom);
		m->home = dup_or_null(json_str(p, "home"), &oom);
		m->status = dup_or_null(job_state_name(j->state), &oom);
		m->kind = j->state == JOB_DONE		 ? REPORT_MOVED
			  : job_state_open(j->state) && j->state != JOB_NEEDS_ATTENTION
				  ? REPORT_PENDING
				  : REPORT_FAILED;
		m->by = t->parent[i];
		from_migration(m, t, i, &oom);
	}
	json_object_put(p);
	return oom ? -1 : 0;
}

static void span(struct report *r, double t)
{
	if (t <= 0)
		return;
	if (r->t0 <= 0 || t < r->t0)
		r->t0 = t;
	if (t > r->t1)
		r->t1 = t;
}

/* The guests, counts and span from the lanes and moves. */
static int derive(struct report *r)
{
	guests_free(r);
	r->n_moved = r->n_failed = r->n_refused = r->n_stayed = r->n_pending = r->n_away = 0;
	r->downtime_ms = r->max_gap_ms = -1;
	r->t0 = r->t1 = 0;
	span(r, r->started > 0 ? r->started : r->created);
	span(r, r->ended);
	for (size_t i = 0; i < r->n_lanes; i++)
		for (size_t k = 0; k < r->lanes[i].n_steps; k++) {
			span(r, r->lanes[i].steps[k].started);
			span(r, r->lanes[i].steps[k].ended);
		}
	bool oom = false;
	/* in time order of their migrations (stable: the plan's order) */
	size_t *order = calloc(r->n_moves + 1, sizeof *order);
	if (!order)
		return -1;
	for (size_t i = 0; i < r->n_moves; i++)
		order[i] = i;
	for (size_t i = 1; i < r->n_moves; i++)
		for (size_t k = i; k > 0; k--) {
			const struct report_move *a = &r->moves[order[k - 1]];
			const struct report_move *b = &r->moves[order[k]];
			if (!(a->started > 0 && b->started > 0 && b->started < a->started))
				break;
			size_t x = order[k];
			order[k] = order[k - 1];
			order[k - 1] = x;
		}
	for (size_t oi = 0; oi < r->n_moves && !oom; oi++) {
		struct report_move *m = &r->moves[order[oi]];
		span(r, m->started);
		span(r, m->ended);
		r->n_moved += m->kind == REPORT_MOVED;
		r->n_failed += m->kind == REPORT_FAILED;
		r->n_refused += m->kind == REPORT_REFUSED;
		r->n_stayed += m->kind == REPORT_STAYED;
		r->n_pending += m->kind == REPORT_PENDING;
		if (m->downtime_ms >= 0)
			r->downtime_ms = (r->downtime_ms < 0 ? 0 : r->downtime_ms) + m->downtime_ms;
		if (m->gap_ms > r->max_gap_ms)
			r->max_gap_ms = m->gap_ms;
		struct report_guest *g = NULL;
		for (size_t k = 0; k < r->n_guests && !g; k++)
			if (r->guests[k].vmid == m->vmid)
				g = &r->guests[k];
		if (!g) {
			struct report_guest *nv = grow(r->guests, r->n_guests, sizeof *nv);
			if (!nv) {
				oom = true;
				break;
			}
			r->guests = nv;
			g = &r->guests[r->n_guests++];
			g->vmid = m->vmid;
			g->downtime_ms = -1;
			g->name = dup_or_null(m->name, &oom);
			g->type = dup_or_null(m->type, &oom);
			g->at = dup_or_null(m->from, &oom);
		}
		if (!g->home && m->home)
			g->home = dup_or_null(m->home, &oom);
		if (!g->at && m->from)
			g->at = dup_or_null(m->from, &oom);
		g->n_moves += m->kind == REPORT_MOVED || m->kind == REPORT_FAILED;
		g->n_failed += m->kind == REPORT_FAILED;
		if (m->downtime_ms >= 0)
			g->downtime_ms = (g->downtime_ms < 0 ? 0 : g->downtime_ms) + m->downtime_ms;
		if (m->kind == REPORT_MOVED && m->to) {
			free(g->at);
			g->at = dup_or_null(m->to, &oom);
		}
	}
	free(order);
	for (size_t k = 0; k < r->n_guests; k++) {
		struct report_guest *g = &r->guests[k];
		g->away = g->home && g->at && strcmp(g->home, g->at) != 0;
		r->n_away += g->away;
	}
	if (r->t1 < r->t0)
		r->t1 = r->t0;
	return oom ? -1 : 0;
}

int report_build(struct store *s, long long id, struct report *out, char **err)
{
	memset(out, 0, sizeof *out);
	struct store_job root;
	int found = store_job_get(s, id, &root, err);
	if (found <= 0)
		return found;
	struct tree t = {0};
	struct report *r = out;
	bool oom = false;
	r->id = root.id;
	r->workflow = dup_or_null(root.workflow, &oom);
	r->subject = dup_or_null(root.subject, &oom);
	r->state = dup_or_null(job_state_name(root.state), &oom);
	r->created = root.created;
	r->started = root.started;
	r->ended = root.ended;
	r->error = error_message(root.error, &r->left, &oom);
	json_object *p = root.params ? json_tokener_parse(root.params) : NULL, *dl = NULL;
	if (json_object_object_get_ex(p, "deadline", &dl))
		r->deadline = json_object_get_double(dl);
	json_object_put(p);
	bool window = strcmp(root.workflow, "drain") == 0 && r->deadline > 0;
	r->kind = dup_or_null(window ? "window" : root.workflow, &oom);
	int rc = tree_add(s, &t, &root, 0, err);
	if (rc == 0)
		rc = tree_walk(s, &t, 0, 1, err);
	/* lanes and planned moves first, then the migrations no move took */
	for (size_t i = 0; rc == 0 && i < t.n; i++)
		if (strcmp(t.jobs[i].workflow, "migrate") != 0 &&
		    (add_lane(r, &t, i) < 0 || add_moves(r, &t, i) < 0))
			rc = -1;
	for (size_t i = 0; rc == 0 && i < t.n; i++)
		if (strcmp(t.jobs[i].workflow, "migrate") == 0 && !t.used[i] &&
		    add_loose_migration(r, &t, i) < 0)
			rc = -1;
	if (rc == 0 && (oom || derive(r) < 0))
		rc = -1;
	if (rc < 0 && err && !*err)
		err_setf(err, "out of memory");
	tree_free(&t);
	if (rc < 0) {
		report_free(r);
		return -1;
	}
	return 1;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static json_object *jtime(double t)
{
	return t > 0 ? json_object_new_double(t) : NULL;
}

static json_object *jms(long long ms)
{
	return ms >= 0 ? json_object_new_int64(ms) : NULL;
}

static json_object *jid(long long id)
{
	return id > 0 ? json_object_new_int64(id) : NULL;
}

json_object *report_json(const struct report *r)
{
	json_object *o = json_object_new_object(), *lanes = json_object_new_array(),
		    *moves = json_object_new_array(), *guests = json_object_new_array(),
		    *tot = json_object_new_object();
	int rc = o && lanes && moves && guests && tot ? 0 : -1;
	if (rc < 0) {
		json_object_put(lanes);
		json_object_put(moves);
		json_object_put(guests);
		json_object_put(tot);
		json_object_put(o);
		return NULL;
	}
	rc |= json_add(o, "job", json_object_new_int64(r->id));
	rc |= json_add_str(o, "workflow", r->workflow);
	rc |= json_add_str(o, "subject", r->subject);
	rc |= json_add_str(o, "state", r->state);
	rc |= json_add_str(o, "kind", r->kind);
	rc |= json_add(o, "created", jtime(r->created));
	rc |= json_add(o, "started", jtime(r->started));
	rc |= json_add(o, "ended", jtime(r->ended));
	rc |= json_add(o, "deadline", jtime(r->deadline));
	rc |= json_add_str(o, "error", r->error);
	rc |= json_add_str(o, "left", r->left);
	rc |= json_add(o, "t0", jtime(r->t0));
	rc |= json_add(o, "t1", jtime(r->t1));
	for (size_t i = 0; i < r->n_lanes; i++) {
		const struct report_lane *l = &r->lanes[i];
		json_object *lo = json_object_new_object(), *steps = json_object_new_array();
		if (!lo || !steps || json_object_array_add(lanes, lo) < 0) {
			json_object_put(lo);
			json_object_put(steps);
			rc = -1;
			break;
		}
		rc |= json_add(lo, "job", json_object_new_int64(l->job));
		rc |= json_add_str(lo, "workflow", l->workflow);
		rc |= json_add_str(lo, "node", l->node);
		rc |= json_add_str(lo, "state", l->state);
		rc |= json_add(lo, "started", jtime(l->started));
		rc |= json_add(lo, "ended", jtime(l->ended));
		for (size_t k = 0; k < l->n_steps; k++) {
			const struct report_step *s = &l->steps[k];
			json_object *so = json_object_new_object();
			if (!so || json_object_array_add(steps, so) < 0) {
				json_object_put(so);
				rc = -1;
				break;
			}
			rc |= json_add_str(so, "name", s->name);
			rc |= json_add_str(so, "state", s->state);
			rc |= json_add(so, "started", jtime(s->started));
			rc |= json_add(so, "ended", jtime(s->ended));
			rc |= json_add_str(so, "result", s->result);
			rc |= json_add_str(so, "error", s->error);
		}
		rc |= json_add(lo, "steps", steps);
	}
	for (size_t i = 0; i < r->n_moves; i++) {
		const struct report_move *m = &r->moves[i];
		json_object *mo = json_object_new_object();
		if (!mo || json_object_array_add(moves, mo) < 0) {
			json_object_put(mo);
			rc = -1;
			break;
		}
		rc |= json_add(mo, "vmid", json_object_new_int(m->vmid));
		rc |= json_add_str(mo, "name", m->name);
		rc |= json_add_str(mo, "type", m->type);
		rc |= json_add_str(mo, "from", m->from);
		rc |= json_add_str(mo, "to", m->to);
		rc |= json_add_str(mo, "method", m->method);
		rc |= json_add_str(mo, "status", m->status);
		rc |= json_add_str(mo, "kind", report_kind_name(m->kind));
		rc |= json_add(mo, "started", jtime(m->started));
		rc |= json_add(mo, "ended", jtime(m->ended));
		rc |= json_add(mo, "downtime_ms", jms(m->downtime_ms));
		rc |= json_add(mo, "gap_ms", jms(m->gap_ms));
		rc |= json_add_str(mo, "why", m->why);
		rc |= json_add(mo, "job", jid(m->job));
		rc |= json_add(mo, "by", jid(m->by));
		rc |= json_add_str(mo, "home", m->home);
	}
	for (size_t i = 0; i < r->n_guests; i++) {
		const struct report_guest *g = &r->guests[i];
		json_object *go = json_object_new_object();
		if (!go || json_object_array_add(guests, go) < 0) {
			json_object_put(go);
			rc = -1;
			break;
		}
		rc |= json_add(go, "vmid", json_object_new_int(g->vmid));
		rc |= json_add_str(go, "name", g->name);
		rc |= json_add_str(go, "type", g->type);
		rc |= json_add_str(go, "home", g->home);
		rc |= json_add_str(go, "at", g->at);
		rc |= json_add(go, "away", json_object_new_boolean(g->away));
		rc |= json_add(go, "moves", json_object_new_int64((long long)g->n_moves));
		rc |= json_add(go, "failed", json_object_new_int64((long long)g->n_failed));
		rc |= json_add(go, "downtime_ms", jms(g->downtime_ms));
	}
	const struct {
		const char *key;
		size_t n;
	} counts[] = {{"moved", r->n_moved},	 {"failed", r->n_failed},
		      {"refused", r->n_refused}, {"stayed", r->n_stayed},
		      {"pending", r->n_pending}, {"away", r->n_away}};
	for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
		rc |= json_add(tot, counts[i].key, json_object_new_int64((long long)counts[i].n));
	rc |= json_add(tot, "downtime_ms", jms(r->downtime_ms));
	rc |= json_add(tot, "max_gap_ms", jms(r->max_gap_ms));
	rc |= json_add(o, "lanes", lanes);
	rc |= json_add(o, "moves", moves);
	rc |= json_add(o, "guests", guests);
	rc |= json_add(o, "totals", tot);
	if (rc) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* ---- JSON back into the model (pvagentd's answer) -------------------------------------- */

struct jread {
	char **err;
	const char *where; /* "lanes[2]" ... */
	bool failed;
};

static void bad(struct jread *jr, const char *key, const char *want)
{
	if (!jr->failed)
		err_setf(jr->err, "report: %s%s%s is not %s", jr->where ? jr->where : "",
			 jr->where ? "." : "", key, want);
	jr->failed = true;
}

/* An optional string member (absent or null: NULL). */
static char *rstr(struct jread *jr, json_object *o, const char *key)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v) || !v)
		return NULL;
	if (!json_object_is_type(v, json_type_string)) {
		bad(jr, key, "a string");
		return NULL;
	}
	char *s = strdup(json_object_get_string(v));
	if (!s)
		bad(jr, key, "readable (out of memory)");
	return s;
}

/* An optional number (absent or null: dflt). */
static double rnum(struct jread *jr, json_object *o, const char *key, double dflt)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v) || !v)
		return dflt;
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) {
		bad(jr, key, "a number");
		return dflt;
	}
	return json_object_get_double(v);
}

static json_object *rarr(struct jread *jr, json_object *o, const char *key, size_t *n)
{
	json_object *v = NULL;
	*n = 0;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array)) {
		bad(jr, key, "an array");
		return NULL;
	}
	*n = json_object_array_length(v);
	return v;
}

int report_from_json(json_object *o, struct report *out, char **err)
{
	memset(out, 0, sizeof *out);
	struct report *r = out;
	struct jread jr = {.err = err};
	char where[80];
	if (!json_object_is_type(o, json_type_object)) {
		err_setf(err, "report: not a JSON object");
		return -1;
	}
	r->id = (long long)rnum(&jr, o, "job", 0);
	r->workflow = rstr(&jr, o, "workflow");
	r->subject = rstr(&jr, o, "subject");
	r->state = rstr(&jr, o, "state");
	r->kind = rstr(&jr, o, "kind");
	r->created = rnum(&jr, o, "created", 0);
	r->started = rnum(&jr, o, "started", 0);
	r->ended = rnum(&jr, o, "ended", 0);
	r->deadline = rnum(&jr, o, "deadline", 0);
	r->error = rstr(&jr, o, "error");
	r->left = rstr(&jr, o, "left");
	if (r->id <= 0 || !r->workflow || !r->state || !r->kind)
		bad(&jr, "job, workflow, state and kind", "all there");
	size_t nl = 0, nm = 0;
	json_object *lanes = rarr(&jr, o, "lanes", &nl), *moves = rarr(&jr, o, "moves", &nm);
	if (!jr.failed && ((nl && !(r->lanes = calloc(nl, sizeof *r->lanes))) ||
			   (nm && !(r->moves = calloc(nm, sizeof *r->moves)))))
		bad(&jr, "lanes", "readable (out of memory)");
	for (size_t i = 0; !jr.failed && i < nl; i++) {
		json_object *lo = json_object_array_get_idx(lanes, i);
		struct report_lane *l = &r->lanes[r->n_lanes++];
		snprintf(where, sizeof where, "lanes[%zu]", i);
		jr.where = where;
		l->job = (long long)rnum(&jr, lo, "job", 0);
		l->workflow = rstr(&jr, lo, "workflow");
		l->node = rstr(&jr, lo, "node");
		l->state = rstr(&jr, lo, "state");
		l->started = rnum(&jr, lo, "started", 0);
		l->ended = rnum(&jr, lo, "ended", 0);
		size_t ns = 0;
		json_object *steps = rarr(&jr, lo, "steps", &ns);
		if (ns && !(l->steps = calloc(ns, sizeof *l->steps)))
			bad(&jr, "steps", "readable (out of memory)");
		for (size_t k = 0; !jr.failed && k < ns; k++) {
			json_object *so = json_object_array_get_idx(steps, k);
			struct report_step *s = &l->steps[l->n_steps++];
			snprintf(where, sizeof where, "lanes[%zu].steps[%zu]", i, k);
			s->name = rstr(&jr, so, "name");
			s->state = rstr(&jr, so, "state");
			s->started = rnum(&jr, so, "started", 0);
			s->ended = rnum(&jr, so, "ended", 0);
			s->result = rstr(&jr, so, "result");
			s->error = rstr(&jr, so, "error");
			if (!jr.failed && (!s->name || !s->state))
				bad(&jr, "name and state", "there");
		}
	}
	for (size_t i = 0; !jr.failed && i < nm; i++) {
		json_object *mo = json_object_array_get_idx(moves, i);
		struct report_move *m = &r->moves[r->n_moves++];
		snprintf(where, sizeof where, "moves[%zu]", i);
		jr.where = where;
		m->vmid = (int)rnum(&jr, mo, "vmid", 0);
		m->name = rstr(&jr, mo, "name");
		m->type = rstr(&jr, mo, "type");
		m->from = rstr(&jr, mo, "from");
		m->to = rstr(&jr, mo, "to");
		m->method = rstr(&jr, mo, "method");
		m->status = rstr(&jr, mo, "status");
		char *kind = rstr(&jr, mo, "kind");
		if (!jr.failed && kind_parse(kind, &m->kind) < 0)
			bad(&jr, "kind", "a move's kind");
		free(kind);
		m->started = rnum(&jr, mo, "started", 0);
		m->ended = rnum(&jr, mo, "ended", 0);
		m->downtime_ms = (long long)rnum(&jr, mo, "downtime_ms", -1);
		m->gap_ms = (long long)rnum(&jr, mo, "gap_ms", -1);
		m->why = rstr(&jr, mo, "why");
		m->job = (long long)rnum(&jr, mo, "job", 0);
		m->by = (long long)rnum(&jr, mo, "by", 0);
		m->home = rstr(&jr, mo, "home");
	}
	if (!jr.failed && derive(r) < 0) {
		jr.where = NULL;
		bad(&jr, "guests", "derivable (out of memory)");
	}
	if (jr.failed) {
		report_free(r);
		return -1;
	}
	return 0;
}
