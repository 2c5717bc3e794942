/* wf_drain.c - the `drain` and `undrain` workflows (wf_drain.h): a plan
 * step each (drain: facts from PVE into drain_plan(); undrain: the guests
 * whose home tag names the node), and one shared move step that runs the
 * planned migrations as wf_migrate jobs in a sliding window. */
#include "wf_drain.h"
#include "wf_params.h"

#include "clock.h"
#include "drain_plan.h"
#include "jobpool.h"
#include "json.h"
#include "log.h"
#include "migrate_facts.h"
#include "migrate_store.h"
#include "pvecfg.h"
#include "util.h"
#include "wf_migrate.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct drain_ctx {
	const struct pve_opts *po;
	struct pve_opts conf_po;     /* the env's conf's, when nothing is attached */
	const char *node;
	unsigned max_workers, per_target;
	bool partial, dry_run;
	double deadline;
	struct mig_cluster *mc;      /* read once, shared by every guest and move */
	bool mc_borrowed;            /* wf_drain_share's: not freed at close */
};

void wf_drain_attach(struct job *j, const struct pve_opts *po)
{
	struct drain_ctx *d = job_ctx(j);
	d->po = po;
}

void wf_drain_share(struct job *j, struct mig_cluster *mc)
{
	struct drain_ctx *d = job_ctx(j);
	d->mc = mc;
	d->mc_borrowed = mc != NULL;
}

static int drain_open(struct job *j, void *ctx)
{
	struct drain_ctx *d = ctx;
	const struct conf *cf = job_env(j)->conf;
	d->node = job_subject(j);
	/* the workers' clients as the configuration makes them (none: every
	 * move on the job's own client, one at a time) */
	if (!d->po && cf && cf->pve.url) {
		d->conf_po = job_conf_pve_opts(cf);
		d->conf_po.clock = job_env(j)->clock;
		d->po = &d->conf_po;
	}
	long long k = job_param_int(j, "max_workers"), t = job_param_int(j, "per_target");
	d->max_workers = k > 0 ? (unsigned)k
		       : cf && cf->migrate.max_workers ? cf->migrate.max_workers : 2;
	d->per_target = t > 0 ? (unsigned)t
		      : cf && cf->migrate.per_target ? cf->migrate.per_target : 2;
	d->partial = job_param_bool(j, "partial");
	d->dry_run = job_param_bool(j, "dry_run");
	d->deadline = job_param_num(j, "deadline");
	if (!d->mc && !(d->mc = mig_cluster_new()))
		return pve_error_oom(job_err(j));
	return 0;
}

static void drain_close(struct job *j, void *ctx)
{
	(void)j;
	struct drain_ctx *d = ctx;
	if (!d->mc_borrowed)
		mig_cluster_free(d->mc);
	d->mc = NULL;
}

/* Does the tag list (';', ',' or ' ' separated) hold tag? */
static bool has_tag(const char *tags, const char *tag)
{
	size_t n = strlen(tag);
	for (const char *p = tags; p && *p;) {
		size_t l = strcspn(p, ";, ");
		if (l == n && strncmp(p, tag, n) == 0)
			return true;
		p += l;
		p += strspn(p, ";, ");
	}
	return false;
}

/* ---- facts for the planner ------------------------------------------------------ */

/* What PVE said about one guest of the node, and about one node. */
struct gfacts {
	struct mig_read rd;             /* status, config, precondition, ... */
	struct mig_facts mf;            /* for migrate_plan(), target unset */
	const char **storages, **allowed;
	char **refusals;                /* per /nodes entry: migrate_plan()'s */
	bool gone;                      /* not on the node after all */
};
struct nfacts {
	json_object *storages;          /* GET /nodes/N/storage */
	const char **ids;
	const struct pve_version *version; /* borrowed from the run's facts */
	json_object *machines;          /* its QEMU machine types (idem), or NULL */
};

struct facts {
	struct guest_list guests;       /* on the node */
	json_object *nodes;             /* GET /nodes */
	struct gfacts *g;               /* per guest */
	struct nfacts *n;               /* per /nodes entry */
	struct dp_node *dn;
	struct dp_guest *dg;
	size_t n_nodes;
	struct mig_cluster *mc;         /* the drain's */
};

static void facts_free(struct facts *f)
{
	for (size_t i = 0; f->g && i < f->guests.n; i++) {
		mig_read_free(&f->g[i].rd);
		free(f->g[i].storages);
		free(f->g[i].allowed);
		for (size_t k = 0; f->g[i].refusals && k < f->n_nodes; k++)
			free(f->g[i].refusals[k]);
		free(f->g[i].refusals);
	}
	for (size_t i = 0; f->n && i < f->n_nodes; i++) {
		json_object_put(f->n[i].storages);
		free(f->n[i].ids);
	}
	free(f->g);
	free(f->n);
	free(f->dn);
	free(f->dg);
	json_object_put(f->nodes);
	guest_list_free(&f->guests);
	memset(f, 0, sizeof *f);
}

/* Is storage id shared (from the source node's storage list)? */
static bool shared_on(json_object *storages, const char *id)
{
	for (size_t i = 0; storages && i < json_object_array_length(storages); i++) {
		json_object *e = json_object_array_get_idx(storages, i);
		long long sh = 0;
		const char *s = json_str(e, "storage");
		if (s && strcmp(s, id) == 0)
			return json_int(e, "shared", &sh) && sh;
	}
	return false;
}

/* The local storages a guest's config uses (borrowed from config; volume
 * ids "STORAGE:..." of disks, rootfs and mount points), deduplicated. */
static int local_storages(json_object *config, json_object *src_storages, const char ***out,
			  size_t *n, uint64_t *bytes)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	json_object_object_foreach(config, k, v)
	{
		int idx;
		bool disk = pvecfg_disk_key(k, &idx) != BUS_NONE || strcmp(k, "rootfs") == 0 ||
			    (strncmp(k, "mp", 2) == 0 && k[2] >= '0' && k[2] <= '9') ||
			    strncmp(k, "efidisk", 7) == 0 || strncmp(k, "tpmstate", 8) == 0;
		const char *val = json_object_get_string(v);
		if (!disk || !val || strstr(val, "media=cdrom"))
			continue;
		const char *colon = strchr(val, ':');
		if (!colon || val[0] == '/')
			continue;
		size_t l = (size_t)(colon - val);
		char id[128];
		if (l >= sizeof id)
			continue;
		memcpy(id, val, l);
		id[l] = '\0';
		if (shared_on(src_storages, id))
			continue;
		struct propstr ps;
		double sz = 0;
		if (propstr_parse(val, &ps) == 0) {
			const char *size = propstr_get(&ps, "size");
			if (size && pvecfg_parse_size(size, &sz) == 0)
				*bytes += (uint64_t)sz;
			propstr_free(&ps);
		}
		bool seen = false;
		for (size_t i = 0; i < *n; i++)
			seen |= strlen((*out)[i]) == l && strncmp((*out)[i], val, l) == 0;
		if (seen)
			continue;
		/* the id as a string owned by the config: the volume id's prefix
		 * is not NUL-terminated, so keep it in the storage list of the
		 * source instead */
		const char *owned = NULL;
		for (size_t i = 0; src_storages && i < json_object_array_length(src_storages); i++) {
			const char *s = json_str(json_object_array_get_idx(src_storages, i), "storage");
			if (s && strcmp(s, id) == 0)
				owned = s;
		}
		if (!owned)
			continue; /* not on the source: PVE will say */
		if (*n == cap) {
			cap = cap ? cap * 2 : 4;
			const char **nv = realloc(*out, cap * sizeof *nv);
			if (!nv)
				return -1;
			*out = nv;
		}
		(*out)[(*n)++] = owned;
	}
	return 0;
}

/* migrate_plan() of guest i to every other online node: the refusals
 * (as `migrate` would give them) into the guest's refusals. The memory is
 * drain_plan()'s to count, so the planner's memory check is off. */
static int plan_targets(struct facts *f, size_t i, const char *source)
{
	struct gfacts *gf = &f->g[i];
	if (!(gf->refusals = calloc(f->n_nodes + 1, sizeof *gf->refusals)))
		return -1;
	for (size_t k = 0; k < f->n_nodes; k++) {
		const struct dp_node *n = &f->dn[k];
		if (!n->name || !n->online || strcmp(n->name, source) == 0)
			continue;
		struct mig_facts t = gf->mf;
		struct mig_plan p;
		t.target = n->name;
		t.target_known = t.target_online = true;
		t.target_mem_free = UINT64_MAX;
		t.memory_reserve = 0;
		t.no_storage_map = true;
		t.source_leaving = true;
		t.target_storages = f->n[k].storages;
		t.target_version = f->n[k].version;
		t.target_machines = f->n[k].machines;
		if (migrate_plan(&t, &p) < 0)
			return -1;
		gf->refusals[k] = p.refusal;
		p.refusal = NULL;
		mig_plan_free(&p);
	}
	f->dg[i].refusals = (const char *const *)gf->refusals;
	return 0;
}

/* PVE 9: the guests HA migrates along with another (its precondition's
 * dependent-ha-resources, positive resource affinity) that are on this
 * node too: each becomes part of the first one's unit (drain_plan.h), so
 * the drain asks for that one migration only and HA takes the rest. */
static void ha_units(struct facts *f)
{
	for (size_t i = 0; i < f->guests.n; i++) {
		json_object *dep = NULL;
		if (f->dg[i].with ||
		    !json_object_object_get_ex(f->g[i].rd.pre, "dependent-ha-resources", &dep) ||
		    !json_object_is_type(dep, json_type_array))
			continue;
		for (size_t k = 0; k < json_object_array_length(dep); k++) {
			const char *sid = json_object_get_string(json_object_array_get_idx(dep, k));
			const char *num = sid ? strchr(sid, ':') : NULL;
			for (size_t j = 0; num && j < f->guests.n; j++) {
				const struct guest_ref *p = &f->guests.v[j];
				bool kind = (strncmp(sid, "vm:", 3) == 0) == (p->type == GUEST_QEMU);
				if (j != i && kind && p->vmid == atoi(num + 1) && !f->dg[j].with &&
				    !p->template)
					f->dg[j].with = i + 1;
			}
		}
	}
}

/* Guest i's facts (a template: its config, pinned or not, is all there is
 * to know), on a pool worker's client. */
static int read_guest(void *ctx, size_t i, struct pve *c, struct pve_error *err)
{
	struct facts *f = ctx;
	const struct guest_ref *g = &f->guests.v[i];
	struct gfacts *gf = &f->g[i];
	int r = g->template ? guest_get_config(c, g, &gf->rd.config, err)
			    : mig_read_guest(c, f->mc, g, NULL, &gf->rd, &gf->mf, err);
	if (r < 0 && err->kind == PVE_ERR_NOT_FOUND) {
		/* the listing lags behind a move (or a delete): not on the node */
		pve_error_clear(err);
		gf->gone = true;
		return 0;
	}
	return r;
}

/* Take the guests read_guest found gone out of the facts. */
static void drop_gone(struct facts *f)
{
	size_t k = 0;
	for (size_t i = 0; i < f->guests.n; i++) {
		if (f->g[i].gone) {
			mig_read_free(&f->g[i].rd);
			guest_ref_clear(&f->guests.v[i]);
			continue;
		}
		f->guests.v[k] = f->guests.v[i];
		f->g[k++] = f->g[i];
	}
	f->guests.n = k;
}

static int gather(struct job *j, struct facts *f, json_object *src_storages)
{
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	const char *node = job_subject(j);
	const struct pve_version *src_version = NULL;
	const struct drain_ctx *dc = job_ctx(j);
	f->mc = dc->mc;
	if (guest_list(c, node, &f->guests, err) < 0 || pve_getf(c, &f->nodes, NULL, err, "/nodes") < 0 ||
	    mig_cluster_version(f->mc, c, node, false, &src_version, err) < 0)
		return -1;
	size_t ng = f->guests.n, nn = json_object_array_length(f->nodes);
	f->n_nodes = nn;
	f->g = calloc(ng + 1, sizeof *f->g);
	f->dg = calloc(ng + 1, sizeof *f->dg);
	f->n = calloc(nn + 1, sizeof *f->n);
	f->dn = calloc(nn + 1, sizeof *f->dn);
	if (!f->g || !f->dg || !f->n || !f->dn)
		return pve_error_oom(err);
	for (size_t i = 0; i < nn; i++) {
		json_object *e = json_object_array_get_idx(f->nodes, i);
		struct dp_node *d = &f->dn[i];
		long long v = 0;
		d->name = json_str(e, "node");
		const char *st = json_str(e, "status");
		d->online = st && strcmp(st, "online") == 0;
		if (json_int(e, "maxmem", &v))
			d->mem_total = (uint64_t)v;
		if (json_int(e, "mem", &v))
			d->mem_used = (uint64_t)v;
		if (json_int(e, "maxcpu", &v))
			d->cpus = (unsigned)v;
		if (!d->name || !d->online)
			continue;
		char *pn = pve_path_escape(d->name);
		int r = pn ? pve_getf(c, &f->n[i].storages, NULL, err, "/nodes/%s/storage", pn)
			   : pve_error_oom(err);
		free(pn);
		if (r < 0 || mig_cluster_version(f->mc, c, d->name, false, &f->n[i].version, err) < 0)
			return -1;
		d->older = migrate_version_older(f->n[i].version, src_version);
		size_t ns = json_object_array_length(f->n[i].storages);
		f->n[i].ids = calloc(ns + 1, sizeof *f->n[i].ids);
		if (!f->n[i].ids)
			return pve_error_oom(err);
		for (size_t k = 0; k < ns; k++) {
			json_object *se = json_object_array_get_idx(f->n[i].storages, k);
			long long act = 1;
			json_int(se, "active", &act);
			if (json_str(se, "storage") && act)
				f->n[i].ids[d->n_storages++] = json_str(se, "storage");
		}
		d->storages = f->n[i].ids;
	}
	/* each guest's facts, read concurrently (as list --long reads configs) */
	if (jobpool_map(dc->po, c, JOBPOOL_READS, ng, read_guest, f, err) < 0)
		return -1;
	drop_gone(f);
	ng = f->guests.n;
	/* a running VM moves live: the machine types of the nodes it may go
	 * to decide (read once per node) */
	bool live = false;
	for (size_t i = 0; i < ng; i++)
		live |= f->g[i].mf.running_machine != NULL;
	for (size_t i = 0; live && i < nn; i++)
		if (f->dn[i].name && f->dn[i].online && strcmp(f->dn[i].name, node) != 0 &&
		    mig_cluster_machines(f->mc, c, f->dn[i].name, &f->n[i].machines, err) < 0)
			return -1;
	for (size_t i = 0; i < ng; i++) {
		struct guest_ref *g = &f->guests.v[i];
		struct dp_guest *d = &f->dg[i];
		struct gfacts *gf = &f->g[i];
		d->name = g->name ? g->name : "";
		d->vmid = g->vmid;
		d->type = g->type;
		d->template = g->template;
		/* the node's (for the versions' rule when machine types are not known) */
		gf->mf.source_version = src_version;
		json_object *cfg = gf->rd.config;
		d->running = gf->mf.running;
		d->memory = gf->mf.memory;
		long long cores = 1, sockets = 1;
		json_int(cfg, "cores", &cores);
		if (g->type == GUEST_OPENVZ)
			json_int(cfg, "cpus", &cores);
		json_int(cfg, "sockets", &sockets);
		d->cpus = (unsigned)(cores * (sockets > 0 ? sockets : 1));
		d->pinned = has_tag(json_str(cfg, "tags"), DRAIN_PIN_TAG);
		if (local_storages(cfg, src_storages, &gf->storages, &d->n_storages,
				   &d->disk_bytes) < 0)
			return pve_error_oom(err);
		d->storages = gf->storages;
		json_object *al = NULL;
		if (!g->template && g->type == GUEST_QEMU &&
		    json_object_object_get_ex(gf->rd.pre, "allowed_nodes", &al) &&
		    json_object_is_type(al, json_type_array)) {
			size_t na = json_object_array_length(al);
			if (!(gf->allowed = calloc(na + 1, sizeof *gf->allowed)))
				return pve_error_oom(err);
			for (size_t k = 0; k < na; k++)
				gf->allowed[k] = json_object_get_string(json_object_array_get_idx(al, k));
			d->allowed = gf->allowed;
			d->n_allowed = na;
		}
		if (!g->template && !d->pinned && plan_targets(f, i, node) < 0)
			return pve_error_oom(err);
	}
	ha_units(f);
	return 0;
}

static int add_move(json_object *moves, const struct dp_input *in, const struct dp_move *m,
		    const char *target)
{
	const struct dp_guest *g = &in->guests[m->guest];
	json_object *o = json_object_new_object();
	if (!o)
		return -1;
	json_object_object_add(o, "name", json_object_new_string(g->name));
	json_object_object_add(o, "vmid", json_object_new_int(g->vmid));
	json_object_object_add(o, "type", json_object_new_string(guest_type_name(g->type)));
	json_object_object_add(o, "memory", json_object_new_int64((long long)g->memory));
	json_object_object_add(o, "status", json_object_new_string(dp_status_name(m->status)));
	if (m->status == DP_MOVE || m->status == DP_NOWHERE) {
		json_object_object_add(o, "method", json_object_new_string(mig_method_name(m->method)));
		json_object_object_add(o, "estimate_s", json_object_new_double(m->estimate_s));
	}
	if (m->status == DP_WITH) {
		/* HA moves it along: no migration of its own */
		const struct dp_guest *lead = &in->guests[g->with - 1];
		json_object_object_add(o, "method", json_object_new_string(mig_method_name(m->method)));
		json_object_object_add(o, "with", json_object_new_string(lead->name));
		json_object_object_add(o, "with_vmid", json_object_new_int(lead->vmid));
	}
	if (target)
		json_object_object_add(o, "target", json_object_new_string(target));
	if (m->why)
		json_object_object_add(o, "why", json_object_new_string(m->why));
	return json_object_array_add(moves, o);
}

/* The guests an earlier run of this drain moved whose home tag it never
 * gave (its migration's outcome unknown or failed after the move, or the
 * process killed in between): a move each with status "tag", its target
 * where it is now; the move step's migration finds it there and tags it.
 * Their number, or -1. */
static long earlier_moves(struct job *j, json_object *moves)
{
	struct drain_ctx *d = job_ctx(j);
	struct store *st = job_env(j)->store;
	struct migstore_moved *mv = NULL;
	size_t n = 0;
	char *serr = NULL;
	if (!st)
		return 0;
	if (migstore_drain_unfinished(st, d->node, &mv, &n, &serr) < 0) {
		pve_error_set(job_err(j), PVE_ERR_INTERNAL, "%s", serr ? serr : "state.db");
		free(serr);
		return -1;
	}
	struct guest_list all = {0};
	char *tag = strprintf(WF_HOME_TAG "%s", d->node);
	long found = 0;
	if (n && (!tag || guest_list(job_pve(j), NULL, &all, job_err(j)) < 0))
		found = tag ? -1 : pve_error_oom(job_err(j));
	for (size_t i = 0; found >= 0 && i < n; i++) {
		const struct guest_ref *g = NULL;
		/* its migration's subject: the VMID (a drain's own), or a name */
		int vmid = 0;
		bool by_id = guest_arg_is_vmid(mv[i].name, &vmid);
		for (size_t k = 0; !g && k < all.n; k++)
			if (!all.v[k].template &&
			    (by_id ? all.v[k].vmid == vmid
				   : all.v[k].name && strcmp(all.v[k].name, mv[i].name) == 0))
				g = &all.v[k];
		if (!g || !g->node || has_tag(g->tags, tag))
			continue; /* gone, or tagged */
		const char *where = g->node;
		if (strcmp(where, d->node) == 0) {
			/* still here (planned above), unless the listing lags behind
			 * its move: asked of its migration's target */
			int on = mv[i].target ? guest_on_node(job_pve(j), g, mv[i].target, NULL,
							      job_err(j))
					      : 0;
			if (on < 0) {
				found = -1;
				break;
			}
			if (!on)
				continue;
			where = mv[i].target;
		}
		char *why = strprintf("moved by migration job %lld of an earlier drain; gets its home "
				      "tag", mv[i].job);
		json_object *o = json_object_new_object();
		if (!why || !o || json_object_array_add(moves, o) < 0) {
			free(why);
			json_object_put(o);
			found = pve_error_oom(job_err(j));
			break;
		}
		json_object_object_add(o, "name", json_object_new_string(g->name ? g->name
										 : mv[i].name));
		json_object_object_add(o, "vmid", json_object_new_int(g->vmid));
		json_object_object_add(o, "type", json_object_new_string(guest_type_name(g->type)));
		json_object_object_add(o, "status", json_object_new_string("tag"));
		json_object_object_add(o, "method", json_object_new_string("none"));
		json_object_object_add(o, "target", json_object_new_string(where));
		json_object_object_add(o, "why", json_object_new_string(why));
		free(why);
		found++;
	}
	free(tag);
	guest_list_free(&all);
	migstore_moved_free(mv, n);
	return found;
}

/* Wait until the migration tasks an earlier run of this drain started and
 * never saw end (killed, cancelled, or superseded by this rerun) have
 * ended: planned before, a guest such a task is moving reads as still
 * here, and its move would be planned twice; moved before, a cancelled
 * migration's new job would start from a listing that still shows the
 * guest on its source. 0, or -1 with the job's error. */
static int wait_earlier_tasks(struct job *j)
{
	struct drain_ctx *d = job_ctx(j);
	struct store *st = job_env(j)->store;
	char **upids = NULL, *serr = NULL;
	size_t n = 0;
	if (!st)
		return 0;
	if (migstore_drain_tasks(st, d->node, &upids, &n, &serr) < 0) {
		pve_error_set(job_err(j), PVE_ERR_INTERNAL, "%s", serr ? serr : "state.db");
		free(serr);
		return -1;
	}
	struct guest_wait w = *job_wait(j);
	w.hooks = NULL;
	w.attach = true;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		job_progress(j, -1, "waiting for an earlier run's migration task %s", upids[i]);
		rc = guest_wait_task(job_pve(j), upids[i], "migrate", &w, NULL, job_err(j));
		if (rc < 0 && job_err(j)->kind == PVE_ERR_TASK) {
			/* it ended, failed: the guest is where that left it */
			pve_error_clear(job_err(j));
			rc = 0;
		}
	}
	strv_free(upids, n);
	return rc < 0 ? -1 : 0;
}

static enum step_rc drain_plan_step(struct job *j)
{
	struct drain_ctx *d = job_ctx(j);
	struct pve_error *err = job_err(j);
	struct facts f = {0};
	json_object *src_st = NULL, *to = NULL;
	struct dp_plan plan = {0};
	enum step_rc rc = STEP_RC_FAIL;
	const char **tov = NULL;
	double *dur = NULL;
	size_t *tgt = NULL;
	char *pn = pve_path_escape(d->node);
	if (!pn || wait_earlier_tasks(j) < 0 ||
	    pve_getf(job_pve(j), &src_st, NULL, err, "/nodes/%s/storage", pn) < 0 ||
	    gather(j, &f, src_st) < 0)
		goto out;
	to = job_param_list(j, "to");
	size_t n_to = to ? json_object_array_length(to) : 0;
	if (n_to && !(tov = calloc(n_to, sizeof *tov))) {
		pve_error_oom(err);
		goto out;
	}
	for (size_t i = 0; i < n_to; i++) {
		tov[i] = json_object_get_string(json_object_array_get_idx(to, i));
		bool known = false;
		for (size_t k = 0; k < f.n_nodes; k++)
			known |= f.dn[k].name && strcmp(f.dn[k].name, tov[i]) == 0;
		if (!known) {
			rc = job_fail(j, PVE_ERR_CONFIG, "--to: there is no node '%s'", tov[i]);
			goto out;
		}
	}
	const struct conf *cf = job_env(j)->conf;
	struct dp_input in = {
		.source = d->node, .nodes = f.dn, .n_nodes = f.n_nodes, .guests = f.dg,
		.n_guests = f.guests.n, .to = n_to ? tov : NULL, .n_to = n_to,
		.reserve = (uint64_t)(cf ? cf->migrate.memory_reserve : 1024) << 20,
	};
	if (drain_plan(&in, &plan) < 0) {
		pve_error_oom(err);
		goto out;
	}
	/* measured speeds per target make the estimates (and the deadline) */
	struct store *st = job_env(j)->store;
	json_object *moves = json_object_new_array(), *free_after = json_object_new_object();
	if (!moves || !free_after) {
		json_object_put(moves);
		json_object_put(free_after);
		pve_error_oom(err);
		goto out;
	}
	double total = 0;
	size_t n_move = 0, n_with = 0;
	dur = calloc(plan.n_moves + 1, sizeof *dur);
	tgt = calloc(plan.n_moves + 1, sizeof *tgt);
	if (!dur || !tgt) {
		json_object_put(moves);
		json_object_put(free_after);
		pve_error_oom(err);
		goto out;
	}
	for (size_t i = 0; i < plan.n_moves; i++) {
		struct dp_move *m = &plan.moves[i];
		const char *target = m->status == DP_MOVE || m->status == DP_WITH
					     ? f.dn[m->target].name : NULL;
		double mb = 0, db = 0;
		char *serr = NULL;
		if (st && target && migstore_speeds(st, d->node, target, &mb, &db, &serr) == 0 &&
		    (mb > 0 || db > 0)) {
			const struct dp_guest *g = &f.dg[m->guest];
			m->estimate_s = migrate_estimate_s(m->method, g->memory, g->disk_bytes, mb, db);
		}
		free(serr);
		if (m->status == DP_MOVE) {
			total += m->estimate_s;
			dur[n_move] = m->estimate_s;
			tgt[n_move++] = m->target;
		}
		n_with += m->status == DP_WITH;
		if (add_move(moves, &in, m, target) < 0) {
			json_object_put(moves);
			json_object_put(free_after);
			pve_error_oom(err);
			goto out;
		}
	}
	long n_tag = earlier_moves(j, moves);
	if (n_tag < 0) {
		json_object_put(moves);
		json_object_put(free_after);
		goto out;
	}
	for (size_t i = 0; i < f.n_nodes; i++)
		if (f.dn[i].name && f.dn[i].online && strcmp(f.dn[i].name, d->node) != 0)
			json_object_object_add(free_after, f.dn[i].name,
					       json_object_new_int64((long long)plan.free_after[i]));
	json_object_object_add(job_vars(j), "moves", moves);
	json_object_object_add(job_vars(j), "free_after", free_after);
	if (plan.n_nowhere && !d->partial) {
		struct sbuf b = {0};
		for (size_t i = 0; i < plan.n_moves; i++)
			if (plan.moves[i].status == DP_NOWHERE)
				sbuf_addf(&b, "%s%s (%s)", b.len ? "; " : "",
					  f.dg[plan.moves[i].guest].name, plan.moves[i].why);
		rc = job_fail(j, PVE_ERR_API, "%zu guest%s of %s fit%s nowhere, nothing %s "
				 "(--partial moves the others): %s",
			      plan.n_nowhere, plan.n_nowhere == 1 ? "" : "s", d->node,
			      plan.n_nowhere == 1 ? "s" : "", d->dry_run ? "would move" : "moved",
			      sbuf_str(&b));
		sbuf_free(&b);
		goto out;
	}
	/* the wall time: the moves on the scheduler they will run on, replayed */
	double wall = drain_schedule(dur, tgt, n_move, d->max_workers, d->per_target, 0, NULL);
	if (wall >= 0)
		json_object_object_add(job_vars(j), "estimate_s", json_object_new_double(wall));
	char *tags = n_tag ? strprintf("; %ld moved earlier get%s the home tag", n_tag,
				       n_tag == 1 ? "s" : "")
			   : NULL;
	job_summary(j, "%zu to move (about %.0f s of migrations, %.0f s with %u at once)%s, "
		    "%zu stay%s%s", n_move + n_with, total, wall > 0 ? wall : 0, d->max_workers,
		    n_with ? ", some along with their HA partners" : "",
		    plan.n_moves - n_move - n_with - plan.n_nowhere,
		    plan.n_nowhere ? ", some fit nowhere" : "", tags ? tags : "");
	free(tags);
	rc = d->dry_run ? STEP_RC_END : STEP_RC_OK;
out:
	free(pn);
	free(tov);
	free(dur);
	free(tgt);
	drain_plan_free(&plan);
	json_object_put(src_st);
	facts_free(&f);
	return rc;
}

/* ---- undrain: the guests whose home is the node -------------------------------- */

static enum step_rc undrain_plan_step(struct job *j)
{
	struct drain_ctx *d = job_ctx(j);
	struct pve_error *err = job_err(j);
	struct guest_list all = {0};
	char *tag = strprintf(WF_HOME_TAG "%s", d->node);
	json_object *moves = json_object_new_array();
	enum step_rc rc = STEP_RC_FAIL;
	if (!tag || !moves) {
		pve_error_oom(err);
		goto out;
	}
	if (guest_list(job_pve(j), NULL, &all, err) < 0)
		goto out;
	size_t n = 0;
	for (size_t i = 0; i < all.n; i++) {
		struct guest_ref *g = &all.v[i];
		json_object *cfg = NULL;
		if (g->template)
			continue;
		if (guest_get_config(job_pve(j), g, &cfg, err) < 0) {
			if (err->kind == PVE_ERR_NOT_FOUND) { /* gone meanwhile */
				pve_error_clear(err);
				continue;
			}
			goto out;
		}
		bool home = has_tag(json_str(cfg, "tags"), tag);
		/* the columns a drain's moves have: memory (MiB in the config,
		 * 512 unset) and the method its state asks for */
		long long mib = 512;
		json_object *mv = NULL;
		if (json_object_object_get_ex(cfg, "memory", &mv) && json_object_get_int64(mv) > 0)
			mib = json_object_get_int64(mv);
		json_object_put(cfg);
		if (!home)
			continue;
		bool running = g->status && strcmp(g->status, "running") == 0;
		enum mig_method method = !running		 ? MIG_OFFLINE
					 : g->type == GUEST_LXC ? MIG_RESTART
								: MIG_ONLINE;
		json_object *o = json_object_new_object();
		if (!o || json_object_array_add(moves, o) < 0) {
			json_object_put(o);
			pve_error_oom(err);
			goto out;
		}
		json_object_object_add(o, "name", json_object_new_string(g->name ? g->name : ""));
		json_object_object_add(o, "vmid", json_object_new_int(g->vmid));
		json_object_object_add(o, "type", json_object_new_string(guest_type_name(g->type)));
		json_object_object_add(o, "memory", json_object_new_int64(mib * 1048576));
		json_object_object_add(o, "status", json_object_new_string("move"));
		json_object_object_add(o, "method", json_object_new_string(mig_method_name(method)));
		json_object_object_add(o, "target", json_object_new_string(d->node));
		json_object_object_add(o, "from", json_object_new_string(g->node ? g->node : ""));
		n++;
	}
	json_object_object_add(job_vars(j), "moves", moves);
	moves = NULL;
	job_summary(j, "%zu guest%s to bring home to %s", n, n == 1 ? "" : "s", d->node);
	rc = d->dry_run || n == 0 ? STEP_RC_END : STEP_RC_OK;
out:
	json_object_put(moves);
	free(tag);
	guest_list_free(&all);
	return rc;
}

/* ---- the moves: migration jobs on the one scheduler ---------------------------------- */

/* The moves of one move step; mu guards the moves' JSON (each runs on a
 * pool worker). */
struct moves {
	pthread_mutex_t mu;
	struct job *drain;
	json_object *moves;
	size_t n;
	bool undrain;
	double unix0, mono0;     /* unix time = unix0 + (the env's clock - mono0) */
};

struct move_call {
	struct moves *ms;
	size_t i;
	const char *target;
	double estimate_s;
	bool tag;                /* moved by an earlier run: only its home tag */
};

static void set_why(json_object *m, const struct pve_error *e)
{
	char *msg = pve_error_format(e);
	json_object_object_add(m, "why", json_object_new_string(msg ? msg : "failed"));
	free(msg);
}

static void run_one(void *arg, struct pve *c, const struct pve_error *no_client)
{
	struct move_call *x = arg;
	struct moves *ms = x->ms;
	struct job *dj = ms->drain;
	struct drain_ctx *d = job_ctx(dj);
	pthread_mutex_lock(&ms->mu);
	json_object *m = json_object_array_get_idx(ms->moves, x->i);
	/* keyed on the VMID: names repeat, and an unnamed guest has none */
	long long id = 0;
	char subject[24];
	json_int(m, "vmid", &id);
	snprintf(subject, sizeof subject, "%lld", id);
	pthread_mutex_unlock(&ms->mu);
	json_object *params = wf_migrate_params(x->target, NULL, 0, 0, false);
	struct job *mj = NULL;
	struct pve_error e = {0};
	enum job_outcome o = JOB_OUT_FAILED;
	double t0 = clock_unix_now();
	const struct job_params_decl *md = &wf_migrate_params_decl;
	/* its drain resumes it (pvagentd's start-up leaves it to the drain) */
	if (params && ((ms->undrain ? job_param_set_bool(md, params, "unhome", true)
				    : job_param_set_str(md, params, "home", d->node)) < 0 ||
		       job_param_set_int(md, params, "parent", job_id(dj)) < 0)) {
		json_object_put(params);
		params = NULL;
	}
	if (!c) {
		pve_error_set(&e, no_client->kind, "%s",
			      no_client->message ? no_client->message : "no PVE client");
	} else if (!params || job_submit(job_env(dj), &wf_migrate, subject, params, &mj, &e) < 0) {
		if (e.kind == PVE_OK)
			pve_error_oom(&e);
	} else {
		wf_migrate_attach(mj, d->mc, NULL);
		o = job_run(mj, c);
	}
	pthread_mutex_lock(&ms->mu);
	json_object_object_add(m, "status",
			       json_object_new_string(o == JOB_OUT_DONE ? (x->tag ? "tagged" : "moved")
						      : o == JOB_OUT_NEEDS_ATTENTION ? "needs-attention"
						      : o == JOB_OUT_INTERRUPTED ? "interrupted"
						      : "failed"));
	json_object_object_add(m, "seconds", json_object_new_double(clock_unix_now() - t0));
	if (mj) {
		json_object *v = job_vars(mj);
		long long n;
		if (json_int(v, "downtime_ms", &n))
			json_object_object_add(m, "downtime_ms", json_object_new_int64(n));
		if (json_int(v, "probe_gap_ms", &n))
			json_object_object_add(m, "probe_gap_ms", json_object_new_int64(n));
		if (job_id(mj))
			json_object_object_add(m, "job", json_object_new_int64(job_id(mj)));
		if (job_error(mj)->kind != PVE_OK)
			set_why(m, job_error(mj));
	} else if (e.kind != PVE_OK) {
		set_why(m, &e);
	}
	/* those HA took along share the outcome */
	long long vmid = 0, wv = 0;
	json_int(m, "vmid", &vmid);
	for (size_t k = 0; k < ms->n; k++) {
		json_object *w = json_object_array_get_idx(ms->moves, k);
		if (k != x->i && json_int(w, "with_vmid", &wv) && wv == vmid)
			json_object_object_add(w, "status",
					       json_object_get(json_object_object_get(m, "status")));
	}
	pthread_mutex_unlock(&ms->mu);
	pve_error_clear(&e);
	job_free(mj);
	json_object_put(params);
}

/* Not admitted: it would end after the window closes. */
static void not_started(void *arg, double now)
{
	struct move_call *x = arg;
	struct moves *ms = x->ms;
	struct drain_ctx *d = job_ctx(ms->drain);
	double at = ms->unix0 + (now - ms->mono0);
	char *why = strprintf("not started: about %.0f s from now it would end %.0f s after the "
			      "window closes",
			      x->estimate_s, at + x->estimate_s - d->deadline);
	pthread_mutex_lock(&ms->mu);
	json_object *m = json_object_array_get_idx(ms->moves, x->i);
	json_object_object_add(m, "status", json_object_new_string("skipped"));
	json_object_object_add(m, "why", json_object_new_string(why ? why : "deadline"));
	pthread_mutex_unlock(&ms->mu);
	free(why);
}

/* Should move m run (again)? What is planned; on a resumed run, what has
 * not moved; what HA takes along goes with its partner's migration. */
static bool to_run(json_object *m)
{
	const char *st = json_str(m, "status");
	return st && json_str(m, "target") && !json_object_object_get_ex(m, "with_vmid", NULL) &&
	       (strcmp(st, "move") == 0 || strcmp(st, "tag") == 0 || strcmp(st, "failed") == 0 ||
		strcmp(st, "interrupted") == 0 || strcmp(st, "needs-attention") == 0);
}

static enum step_rc move_step(struct job *j, bool undrain)
{
	struct drain_ctx *d = job_ctx(j);
	/* a resumed drain (its plan done before): the tasks of its earlier
	 * run, a cancelled migration's too, end before any guest is looked at
	 * again (the migration of a cancelled job starts afresh) */
	if (!undrain && job_resumed(j) && wait_earlier_tasks(j) < 0)
		return STEP_RC_FAIL;
	json_object *moves = NULL;
	json_object_object_get_ex(job_vars(j), "moves", &moves);
	size_t n = moves ? json_object_array_length(moves) : 0;
	const struct pve_clock *clk = job_env(j)->clock;
	struct moves ms = {.drain = j, .moves = moves, .n = n, .undrain = undrain,
			   .unix0 = clock_unix_now(), .mono0 = pve_clock_now(clk)};
	struct jobpool_opts po = {.workers = d->max_workers ? d->max_workers : 1,
				  .node_jobs = d->per_target, .po = d->po, .c = job_pve(j),
				  .clock = clk, .stop = job_env(j)->stop};
	struct move_call *calls = calloc(n + 1, sizeof *calls);
	struct jobpool *pool = calls ? jobpool_new(&po) : NULL;
	if (!pool || pthread_mutex_init(&ms.mu, NULL) != 0) {
		jobpool_free(pool);
		free(calls);
		return pve_error_oom(job_err(j));
	}
	int rc_add = 0;
	for (size_t i = 0; i < n && rc_add == 0; i++) {
		json_object *m = json_object_array_get_idx(moves, i), *e = NULL;
		if (!to_run(m))
			continue;
		calls[i] = (struct move_call){.ms = &ms, .i = i, .target = json_str(m, "target"),
					      .tag = json_str(m, "method") &&
						     strcmp(json_str(m, "method"), "none") == 0};
		if (json_object_object_get_ex(m, "estimate_s", &e))
			calls[i].estimate_s = json_object_get_double(e);
		/* a deadline: start nothing that would end after it */
		struct jobpool_item it = {.guest = json_str(m, "name"), .node = calls[i].target,
					  .run = run_one, .late = not_started, .arg = &calls[i],
					  .timed = d->deadline > 0,
					  .start_by = ms.mono0 + (d->deadline - ms.unix0) -
						      calls[i].estimate_s};
		rc_add = jobpool_add(pool, &it);
	}
	if (rc_add == 0)
		jobpool_run(pool);
	jobpool_free(pool);
	pthread_mutex_destroy(&ms.mu);
	free(calls);
	if (rc_add < 0)
		return pve_error_oom(job_err(j));
	/* the summary */
	size_t moved = 0, failed = 0, attention = 0, skipped = 0, interrupted = 0;
	struct sbuf b = {0};
	for (size_t i = 0; i < n; i++) {
		json_object *m = json_object_array_get_idx(moves, i);
		const char *st = json_str(m, "status");
		if (!st)
			continue;
		moved += strcmp(st, "moved") == 0 || strcmp(st, "tagged") == 0;
		skipped += strcmp(st, "skipped") == 0;
		interrupted += strcmp(st, "interrupted") == 0;
		if (strcmp(st, "failed") == 0 || strcmp(st, "needs-attention") == 0) {
			failed++;
			attention += strcmp(st, "needs-attention") == 0;
			sbuf_addf(&b, "%s%s", b.len ? ", " : "", json_str(m, "name"));
		}
	}
	if (job_save(j) < 0) {
		sbuf_free(&b);
		return pve_error_oom(job_err(j));
	}
	if (interrupted || job_stopping(j)) {
		sbuf_free(&b);
		return job_fail(j, PVE_ERR_API, "interrupted"); /* the engine keeps it resumable */
	}
	enum step_rc rc = STEP_RC_OK;
	if (attention)
		job_set_left(j, "%zu migration%s need attention (pvagent jobs)", attention,
			     attention == 1 ? "" : "s");
	if (failed)
		rc = job_fail(j, PVE_ERR_API, "%zu of %zu migrations failed: %s", failed,
			      moved + failed, sbuf_str(&b));
	else if (skipped)
		job_summary(j, "%zu moved, %zu not started (the window closes first)", moved,
			    skipped);
	else
		job_summary(j, "%zu moved", moved);
	sbuf_free(&b);
	return rc;
}

static enum step_rc drain_move_step(struct job *j)
{
	return move_step(j, false);
}

static enum step_rc undrain_move_step(struct job *j)
{
	return move_step(j, true);
}

static const struct job_step_def drain_steps[] = {
	{"plan", drain_plan_step, NULL, 0},
	{"move", drain_move_step, NULL, JOB_STEP_NO_UNDO},
};

static const struct job_step_def undrain_steps[] = {
	{"plan", undrain_plan_step, NULL, 0},
	{"move", undrain_move_step, NULL, JOB_STEP_NO_UNDO},
};

const struct job_workflow wf_drain = {
	.name = "drain",
	.params = &wf_drain_params_decl,
	.steps = drain_steps,
	.n_steps = sizeof drain_steps / sizeof *drain_steps,
	.ctx_size = sizeof(struct drain_ctx),
	.open = drain_open,
	.close = drain_close,
};

const struct job_workflow wf_undrain = {
	.name = "undrain",
	.params = &wf_undrain_params_decl,
	.steps = undrain_steps,
	.n_steps = sizeof undrain_steps / sizeof *undrain_steps,
	.ctx_size = sizeof(struct drain_ctx),
	.open = drain_open,
	.close = drain_close,
};
