/* drain_plan.c - drain placement and the sliding-window schedule
 * (drain_plan.h), the latter jobq's bookkeeping replayed in simulated
 * time. Pure. */
#include "drain_plan.h"

#include "jobq.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define MiB (1024.0 * 1024.0)

const char *dp_status_name(enum dp_status s)
{
	switch (s) {
	case DP_MOVE: return "move";
	case DP_STAY_TEMPLATE: return "template";
	case DP_STAY_PINNED: return "pinned";
	case DP_NOWHERE: return "fits nowhere";
	case DP_WITH: return "with";
	}
	return "?";
}

void drain_plan_free(struct dp_plan *p)
{
	for (size_t i = 0; p->moves && i < p->n_moves; i++)
		free(p->moves[i].why);
	free(p->moves);
	free(p->free_after);
	memset(p, 0, sizeof *p);
}

static bool in_list(const char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] && strcmp(v[i], s) == 0)
			return true;
	return false;
}

static bool is_target(const struct dp_input *in, const struct dp_node *n)
{
	if (strcmp(n->name, in->source) == 0)
		return false;
	return in->to ? in_list(in->to, in->n_to, n->name) : true;
}

/* Guests to move: the largest memory first (then by VMID). */
static int by_memory(const void *a, const void *b, void *ctx)
{
	const struct dp_input *in = ctx;
	const struct dp_guest *x = &in->guests[*(const size_t *)a];
	const struct dp_guest *y = &in->guests[*(const size_t *)b];
	if (x->memory != y->memory)
		return x->memory > y->memory ? -1 : 1;
	return (x->vmid > y->vmid) - (x->vmid < y->vmid);
}

/* Why node ni cannot take guest g (one member of a unit), or NULL when it
 * can (static text, g's refusal or sb). */
static const char *member_refusal(const struct dp_input *in, size_t ni, const struct dp_guest *g,
				  struct sbuf *sb)
{
	const struct dp_node *n = &in->nodes[ni];
	const char *who = g->with ? g->name : "";
	if (g->refusals && g->refusals[ni])
		return g->refusals[ni];
	if (g->allowed && !in_list(g->allowed, g->n_allowed, n->name)) {
		sbuf_reset(sb);
		sbuf_addf(sb, "%s%snot among PVE's allowed nodes", who, *who ? ": " : "");
		return sbuf_str(sb);
	}
	for (size_t i = 0; i < g->n_storages; i++)
		if (!in_list(n->storages, n->n_storages, g->storages[i])) {
			sbuf_reset(sb);
			sbuf_addf(sb, "%s%sno storage '%s'", who, *who ? ": " : "", g->storages[i]);
			return sbuf_str(sb);
		}
	if (g->cpus && n->cpus && g->cpus > n->cpus) {
		sbuf_reset(sb);
		sbuf_addf(sb, "%s%s%u CPUs, the guest has %u vCPUs", who, *who ? ": " : "", n->cpus,
			  g->cpus);
		return sbuf_str(sb);
	}
	return NULL;
}

static enum mig_method method_of(const struct dp_guest *g)
{
	return g->running ? (g->type == GUEST_LXC ? MIG_RESTART : MIG_ONLINE) : MIG_OFFLINE;
}

/* The units: per guest the next member of its unit (a leader first, then
 * the guests HA takes along with it; SIZE_MAX ends it) and per leader
 * the bytes its running members need on a target. */
struct units {
	size_t *next;
	double *memory;
};

static int units_make(const struct dp_input *in, struct units *u)
{
	size_t n = in->n_guests ? in->n_guests : 1;
	u->next = malloc(n * sizeof *u->next);
	u->memory = calloc(n, sizeof *u->memory);
	if (!u->next || !u->memory)
		return -1;
	for (size_t k = 0; k < n; k++)
		u->next[k] = SIZE_MAX;
	for (size_t k = in->n_guests; k-- > 0;) {
		const struct dp_guest *g = &in->guests[k];
		size_t lead = g->with && g->with <= in->n_guests ? g->with - 1 : k;
		if (lead != k) {
			u->next[k] = u->next[lead];
			u->next[lead] = k;
		}
		if (g->running)
			u->memory[lead] += (double)g->memory;
	}
	return 0;
}

/* Why node ni cannot take guest gi's unit with `avail` bytes free after
 * the reserve, or NULL when it can (static text or sb). */
static const char *refusal(const struct dp_input *in, const struct units *u, size_t ni,
			   size_t gi, double avail, struct sbuf *sb)
{
	if (gi >= in->n_guests)
		return "no such guest"; /* not called so; says so to the analyzer */
	if (!in->nodes[ni].online)
		return "offline";
	for (size_t k = gi; k < in->n_guests; k = u->next[k]) {
		const char *r = member_refusal(in, ni, &in->guests[k], sb);
		if (r)
			return r;
	}
	double need = u->memory[gi];
	if (need > 0 && avail < need) {
		sbuf_reset(sb);
		sbuf_addf(sb, "%.0f MiB free after the reserve, needs %.0f MiB%s",
			  avail > 0 ? avail / MiB : 0, need / MiB,
			  u->next[gi] != SIZE_MAX ? " with its HA partners" : "");
		return sbuf_str(sb);
	}
	return NULL;
}

int drain_plan(const struct dp_input *in, struct dp_plan *out)
{
	memset(out, 0, sizeof *out);
	size_t *order = calloc(in->n_guests ? in->n_guests : 1, sizeof *order);
	double *avail = calloc(in->n_nodes ? in->n_nodes : 1, sizeof *avail);
	struct units un = {0};
	struct sbuf sb = {0}, why = {0}, first = {0};
	size_t nm = 0;
	int rc = -1;
	out->moves = calloc(in->n_guests ? in->n_guests : 1, sizeof *out->moves);
	out->free_after = calloc(in->n_nodes ? in->n_nodes : 1, sizeof *out->free_after);
	if (!order || !avail || !out->moves || !out->free_after || units_make(in, &un) < 0)
		goto out;
	for (size_t i = 0; i < in->n_nodes; i++) {
		const struct dp_node *n = &in->nodes[i];
		double free_b = n->mem_total > n->mem_used ? (double)(n->mem_total - n->mem_used) : 0;
		avail[i] = free_b - (double)in->reserve;
	}
	for (size_t i = 0; i < in->n_guests; i++)
		order[i] = i;
	qsort_r(order, in->n_guests, sizeof *order, by_memory, (void *)in);
	/* the moves first, largest first; then what stays */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t k = 0; k < in->n_guests; k++) {
			const struct dp_guest *g = &in->guests[order[k]];
			bool stays = g->template || g->pinned;
			if ((pass == 0) == stays || g->with)
				continue; /* HA's partners: with their unit's first, below */
			struct dp_move *m = &out->moves[nm++];
			m->guest = order[k];
			if (stays) {
				m->status = g->template ? DP_STAY_TEMPLATE : DP_STAY_PINNED;
				continue;
			}
			m->method = method_of(g);
			m->estimate_s = migrate_estimate_s(m->method, g->memory, g->disk_bytes,
							   in->mem_bps, in->disk_bps);
			size_t best = in->n_nodes, n_refused = 0;
			bool same = true; /* every node refused for the same reason */
			sbuf_reset(&why);
			sbuf_reset(&first);
			for (size_t i = 0; i < in->n_nodes; i++) {
				const struct dp_node *n = &in->nodes[i];
				if (!is_target(in, n))
					continue;
				const char *r = refusal(in, &un, i, order[k], avail[i], &sb);
				if (r) {
					if (!n_refused++)
						sbuf_add(&first, r);
					else
						same &= strcmp(sbuf_str(&first), r) == 0;
					sbuf_addf(&why, "%s%s: %s", why.len ? "; " : "", n->name, r);
					continue;
				}
				/* upgraded nodes first, then the most headroom */
				const struct dp_node *b = best < in->n_nodes ? &in->nodes[best] : NULL;
				if (!b || (b->older && !n->older) ||
				    (b->older == n->older && avail[i] > avail[best]))
					best = i;
			}
			if (best == in->n_nodes) {
				m->status = DP_NOWHERE;
				out->n_nowhere++;
				if (!why.len)
					sbuf_add(&why, "no target nodes");
				else if (same && n_refused > 1) {
					sbuf_reset(&why);
					sbuf_add(&why, sbuf_str(&first));
				}
				if (!(m->why = sbuf_steal(&why)))
					goto out;
				continue;
			}
			m->status = DP_MOVE;
			m->target = best;
			avail[best] -= un.memory[order[k]];
		}
	}
	/* the partners HA takes along: where their unit goes */
	for (size_t k = 0; k < in->n_guests; k++) {
		const struct dp_guest *g = &in->guests[order[k]];
		if (!g->with)
			continue;
		struct dp_move *m = &out->moves[nm++], *lead = NULL;
		m->guest = order[k];
		for (size_t i = 0; i + 1 < nm; i++)
			if (out->moves[i].guest == g->with - 1)
				lead = &out->moves[i];
		m->method = method_of(g);
		m->status = lead && lead->status == DP_MOVE ? DP_WITH : DP_NOWHERE;
		m->target = lead ? lead->target : 0;
		if (m->status == DP_NOWHERE) {
			out->n_nowhere++;
			sbuf_reset(&why);
			sbuf_addf(&why, "HA moves it with %s, which %s%s",
				  in->guests[g->with - 1].name,
				  lead && lead->status != DP_NOWHERE ? "stays: " : "",
				  lead ? dp_status_name(lead->status) : "is not drained");
			if (!(m->why = sbuf_steal(&why)))
				goto out;
		}
	}
	for (size_t i = 0; i < in->n_nodes; i++) {
		double f = avail[i] + (double)in->reserve;
		out->free_after[i] = f > 0 ? (uint64_t)f : 0;
	}
	rc = 0;
out:
	out->n_moves = nm;
	if (rc < 0)
		drain_plan_free(out);
	free(order);
	free(avail);
	free(un.next);
	free(un.memory);
	sbuf_free(&sb);
	sbuf_free(&why);
	sbuf_free(&first);
	return rc;
}

double drain_schedule(const double *durations, const size_t *targets, size_t n, unsigned k,
		      unsigned per_target, double deadline, double *starts)
{
	struct jobq q;
	double *end = calloc(n + 1, sizeof *end);
	char **node = calloc(n + 1, sizeof *node);
	bool ok = end && node;
	jobq_init(&q, k ? k : 1, per_target);
	for (size_t i = 0; ok && i < n; i++) {
		struct jobq_item *x = NULL;
		if ((targets && !(node[i] = strprintf("%zu", targets[i]))) ||
		    !(x = jobq_add(&q, NULL, 0, node[i], &end[i])))
			ok = false;
		else if (deadline > 0)
			x->start_by = deadline - durations[i];
		if (ok && starts)
			starts[i] = -1;
	}
	double t = 0, makespan = 0;
	while (ok && q.head) {
		struct jobq_item *x;
		while ((x = jobq_late(&q, t)))
			jobq_remove(&q, x);
		while ((x = jobq_next(&q))) {
			size_t i = (size_t)((double *)x->data - end);
			end[i] = t + durations[i];
			if (starts)
				starts[i] = t;
		}
		/* the next end, and what ends then */
		double next = -1;
		for (x = q.head; x; x = x->next)
			if (x->running && (next < 0 || *(double *)x->data < next))
				next = *(double *)x->data;
		if (next < 0)
			break; /* nothing runs and nothing may start: late ones only */
		t = next;
		makespan = t > makespan ? t : makespan;
		x = q.head;
		for (struct jobq_item *nx; x; x = nx) {
			nx = x->next;
			if (x->running && *(double *)x->data <= t)
				jobq_remove(&q, x);
		}
	}
	jobq_free(&q);
	for (size_t i = 0; node && i < n; i++)
		free(node[i]);
	free(node);
	free(end);
	return ok ? makespan : -1;
}
