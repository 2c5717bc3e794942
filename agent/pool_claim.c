/* pool_claim.c - pool addresses on PVE: holders from a listing, the claim
 * by write-then-look, and this process's addresses in flight (see
 * pool_claim.h). */
#include "pool_claim.h"

#include "log.h"
#include "util.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ATTEMPTS 40
/* the wait per rank before colliders that lost an address look again */
#define RETRY_GAP_S 0.3

/* ---- this process's claims ------------------------------------------------ */

static pthread_mutex_t mine_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pool_ip *mine;
static size_t n_mine, cap_mine;

/* Hold ip for this process: 0, 1 when it is held already, -1 no memory. */
static int mine_take(const struct pool_ip *ip)
{
	int rc = 0;
	pthread_mutex_lock(&mine_mu);
	for (size_t i = 0; i < n_mine; i++)
		if (pool_ip_cmp(&mine[i], ip) == 0)
			rc = 1;
	if (rc == 0 && n_mine == cap_mine) {
		size_t nc = cap_mine ? cap_mine * 2 : 16;
		struct pool_ip *nv = realloc(mine, nc * sizeof *nv);
		if (!nv)
			rc = -1;
		else
			mine = nv, cap_mine = nc;
	}
	if (rc == 0)
		mine[n_mine++] = *ip;
	pthread_mutex_unlock(&mine_mu);
	return rc;
}

void pool_claim_release(const struct pool_ip *ip)
{
	pthread_mutex_lock(&mine_mu);
	for (size_t i = 0; i < n_mine; i++)
		if (pool_ip_cmp(&mine[i], ip) == 0) {
			mine[i] = mine[--n_mine];
			break;
		}
	pthread_mutex_unlock(&mine_mu);
}

/* used[] + this process's claims (a copy): -1 no memory. */
static int with_mine(struct pool_ip **used, size_t *n)
{
	pthread_mutex_lock(&mine_mu);
	struct pool_ip *nv = realloc(*used, (*n + n_mine + 1) * sizeof *nv);
	if (nv) {
		if (n_mine)
			memcpy(nv + *n, mine, n_mine * sizeof *nv);
		*n += n_mine;
		*used = nv;
	}
	pthread_mutex_unlock(&mine_mu);
	return nv ? 0 : -1;
}

/* ---- holders ------------------------------------------------------------- */

static int cmp_holder(const void *a, const void *b)
{
	const struct pool_holder *x = a, *y = b;
	int c = pool_ip_cmp(&x->ip, &y->ip);
	return c ? c : (x->vmid > y->vmid) - (x->vmid < y->vmid);
}

/* A holder of g's address ip (its name and node copied): 0, -1 no memory. */
static int holder_set(struct pool_holder *h, const struct guest_ref *g, const struct pool_ip *ip)
{
	*h = (struct pool_holder){.ip = *ip, .vmid = g->vmid};
	h->name = g->name ? strdup(g->name) : NULL;
	h->node = g->node ? strdup(g->node) : NULL;
	return (g->name && !h->name) || (g->node && !h->node) ? -1 : 0;
}

static void holder_clear(struct pool_holder *h)
{
	free(h->name);
	free(h->node);
}

void pool_usage_free(struct pool_usage *u)
{
	for (size_t i = 0; u && i < u->n; i++)
		holder_clear(&u->v[i]);
	if (u) {
		free(u->v);
		memset(u, 0, sizeof *u);
	}
}

int pool_usage_from_list(const struct ip_pool *p, const struct guest_list *l,
			 struct pool_usage *out)
{
	memset(out, 0, sizeof *out);
	out->v = calloc(l->n ? l->n : 1, sizeof *out->v);
	if (!out->v)
		return -1;
	for (size_t i = 0; i < l->n; i++) {
		struct pool_ip ip = {0};
		if (!pool_tags_find(p, l->v[i].tags, &ip))
			continue;
		if (holder_set(&out->v[out->n++], &l->v[i], &ip) < 0) {
			pool_usage_free(out);
			return -1;
		}
	}
	qsort(out->v, out->n, sizeof *out->v, cmp_holder);
	return 0;
}

/* The addresses held in u, other than by vmid (all when vmid is 0). */
static struct pool_ip *held(const struct pool_usage *u, int vmid, size_t *n)
{
	struct pool_ip *v = malloc((u->n + 1) * sizeof *v);
	*n = 0;
	for (size_t i = 0; v && i < u->n; i++)
		if (u->v[i].vmid != vmid)
			v[(*n)++] = u->v[i].ip;
	return v;
}

static int exhausted(const struct ip_pool *p, struct pve_error *err)
{
	uint64_t size = pool_size(p);
	char *a = pool_ip_str(&p->start), *b = pool_ip_str(&p->end);
	pve_error_set(err, PVE_ERR_API,
		      "pool %s is exhausted: its %" PRIu64 " address%s (%s-%s) are held; "
		      "'pvagent pool list' shows by whom",
		      p->name, size, size == 1 ? "" : "es", a ? a : "?", b ? b : "?");
	free(a);
	free(b);
	return -1;
}

int pool_check_free(const struct ip_pool *p, const struct guest_list *l, struct pool_ip *first,
		    struct pve_error *err)
{
	struct pool_usage u;
	if (pool_usage_from_list(p, l, &u) < 0)
		return pve_error_oom(err);
	size_t n = 0;
	struct pool_ip *used = held(&u, 0, &n), any;
	pool_usage_free(&u);
	if (!used || with_mine(&used, &n) < 0) {
		free(used);
		return pve_error_oom(err);
	}
	int r = pool_pick(p, used, n, 0, first ? first : &any);
	free(used);
	if (r < 0)
		return pve_error_oom(err);
	return r == 1 ? exhausted(p, err) : 0;
}

/* ---- the claim -------------------------------------------------------------- */

/* The guest's tags: as the listing l shows them, or req->tags when l does
 * not show the guest (made since). */
static const char *tags_now(const struct pool_claim_req *req, const struct guest_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].vmid == req->g->vmid)
			return l->v[i].tags;
	return req->tags;
}

/* Write ip (or, ip NULL, no address of the pool) into g's config, keeping
 * its other tags (cur). */
static int write_claim(struct pve *c, const struct pool_claim_req *req, const char *cur,
		       const struct pool_ip *ip, struct pve_error *err)
{
	const struct ip_pool *p = req->pool;
	char *tags = pool_tags_with(p, cur, ip);
	char *ipc = ip ? pool_ipconfig(p, ip) : NULL;
	if (!tags || (ip && !ipc)) {
		free(tags);
		free(ipc);
		return pve_error_oom(err);
	}
	struct pve_params prm = {0};
	if (*tags)
		pve_params_add(&prm, "tags", tags);
	if (ipc)
		pve_params_add(&prm, "ipconfig0", ipc);
	if (ip && p->dns)
		pve_params_add(&prm, "nameserver", p->dns);
	if (ip && p->searchdomain)
		pve_params_add(&prm, "searchdomain", p->searchdomain);
	const char *del = ip ? NULL : *tags ? "ipconfig0" : "ipconfig0,tags";
	int rc = prm.failed ? pve_error_oom(err)
			    : guest_set_config(c, req->g, &prm, del, NULL, false, req->w, err);
	pve_params_free(&prm);
	free(tags);
	free(ipc);
	return rc;
}

/* Among the holders of ip in u: how many, and the rank of vmid's VMID. */
static size_t holders_of(const struct pool_usage *u, const struct pool_ip *ip, int vmid,
			 size_t *rank)
{
	size_t n = 0;
	*rank = 0;
	for (size_t i = 0; i < u->n; i++) {
		if (pool_ip_cmp(&u->v[i].ip, ip) != 0)
			continue;
		n++;
		if (u->v[i].vmid < vmid)
			(*rank)++;
	}
	return n;
}

static bool among(const struct pool_ip *v, size_t n, const struct pool_ip *ip)
{
	for (size_t i = 0; i < n; i++)
		if (pool_ip_cmp(&v[i], ip) == 0)
			return true;
	return false;
}

/* The address to try: one the guest holds already in u (a rerun, not lost
 * since), else the free one of rank skip. 0, 1 exhausted, -1 no memory. */
static int candidate(const struct ip_pool *p, const struct pool_usage *u, int vmid,
		     const struct pool_ip *lost, size_t n_lost, size_t skip, struct pool_ip *out,
		     bool *have)
{
	*have = false;
	for (size_t i = 0; i < u->n; i++)
		if (u->v[i].vmid == vmid && !among(lost, n_lost, &u->v[i].ip)) {
			*out = u->v[i].ip;
			*have = true;
			return 0;
		}
	size_t n = 0;
	struct pool_ip *used = held(u, vmid, &n);
	struct pool_ip *nv = used ? realloc(used, (n + n_lost + 1) * sizeof *nv) : NULL;
	if (!nv) {
		free(used);
		return -1;
	}
	if (n_lost)
		memcpy(nv + n, lost, n_lost * sizeof *nv);
	n += n_lost;
	if (with_mine(&nv, &n) < 0) {
		free(nv);
		return -1;
	}
	int r = pool_pick(p, nv, n, skip, out);
	if (r == 1 && skip)
		r = pool_pick(p, nv, n, 0, out);
	free(nv);
	return r;
}

int pool_claim(struct pve *c, const struct pool_claim_req *req, struct pool_ip *out,
	       struct pve_error *err)
{
	const struct ip_pool *p = req->pool;
	const int vmid = req->g->vmid;
	struct guest_list fresh = {0};
	const struct guest_list *l = req->listing;
	struct pool_ip *lost = NULL; /* addresses lost to collisions in this claim */
	size_t n_lost = 0, skip = 0;
	bool wrote = false;
	int rc = -1;
	if (!l) {
		if (guest_list(c, NULL, &fresh, err) < 0)
			return -1;
		l = &fresh;
	}
	for (int attempt = 0;; attempt++) {
		if (attempt == MAX_ATTEMPTS) {
			pve_error_set(err, PVE_ERR_API,
				      "pool %s: no address won after %d collisions with other "
				      "claims; try again",
				      p->name, MAX_ATTEMPTS);
			break;
		}
		struct pool_usage u;
		if (pool_usage_from_list(p, l, &u) < 0) {
			pve_error_oom(err);
			break;
		}
		struct pool_ip cand;
		bool have;
		int r = candidate(p, &u, vmid, lost, n_lost, skip, &cand, &have);
		size_t rank = 0;
		if (r == 0 && have && holders_of(&u, &cand, vmid, &rank) == 1) {
			/* held from an earlier run, and alone: kept as it is */
			pool_usage_free(&u);
			if (mine_take(&cand) < 0) {
				pve_error_oom(err);
				break;
			}
			*out = cand;
			rc = 0;
			break;
		}
		pool_usage_free(&u);
		if (r == 1 && n_lost) {
			/* every address is held or was lost to a collision: a lost
			 * one whose colliders all backed off is free again. Ours
			 * taken back, after a wait by rank among the colliders (the
			 * lowest first), a fresh listing tells */
			if (wrote && write_claim(c, req, tags_now(req, l), NULL, err) < 0)
				break;
			wrote = false;
			pve_clock_sleep(req->w ? req->w->clock : NULL,
					RETRY_GAP_S * (double)skip + RETRY_GAP_S / 4);
			guest_list_free(&fresh);
			if (guest_list(c, NULL, &fresh, err) < 0)
				break;
			l = &fresh;
			n_lost = 0;
			skip = 0;
			continue;
		}
		if (r != 0) {
			if (r < 0)
				pve_error_oom(err);
			else {
				exhausted(p, err);
				rc = 1;
			}
			break;
		}
		if (!have) {
			int t = mine_take(&cand);
			if (t < 0) {
				pve_error_oom(err);
				break;
			}
			if (t == 1)
				continue; /* another worker of this process took it meanwhile */
			wrote = true;
			if (write_claim(c, req, tags_now(req, l), &cand, err) < 0) {
				pool_claim_release(&cand);
				break;
			}
			/* look: who holds it now that ours is written? */
			guest_list_free(&fresh);
			if (guest_list(c, NULL, &fresh, err) < 0) {
				pool_claim_release(&cand);
				break;
			}
			l = &fresh;
			if (pool_usage_from_list(p, l, &u) < 0) {
				pool_claim_release(&cand);
				pve_error_oom(err);
				break;
			}
			size_t n = holders_of(&u, &cand, vmid, &rank);
			pool_usage_free(&u);
			if (n <= 1) {
				*out = cand;
				rc = 0;
				break;
			}
		} else {
			wrote = true; /* held from an earlier run, shared since: give it up */
		}
		/* a collision: every holder backs off and takes the free address
		 * of its rank next, so that the colliders part */
		char *a = pool_ip_str(&cand);
		log_info("VM %d: address %s of pool %s is claimed by another guest too; taking "
			 "another", vmid, a ? a : "?", p->name);
		free(a);
		if (!have)
			pool_claim_release(&cand);
		struct pool_ip *nl = realloc(lost, (n_lost + 1) * sizeof *nl);
		if (!nl) {
			pve_error_oom(err);
			break;
		}
		lost = nl;
		lost[n_lost++] = cand;
		skip = rank;
	}
	if (rc != 0 && wrote) {
		/* hold nothing of the pool: a later claim starts clean */
		struct pve_error e2 = {0};
		if (write_claim(c, req, tags_now(req, l), NULL, &e2) < 0)
			log_warn("VM %d: could not remove its claim on pool %s: %s", vmid, p->name,
				 e2.message ? e2.message : "?");
		pve_error_clear(&e2);
	}
	guest_list_free(&fresh);
	free(lost);
	return rc;
}

/* ---- strays ------------------------------------------------------------------- */

void pool_strays_free(struct pool_stray *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		holder_clear(&v[i].h);
		free(v[i].key);
	}
	free(v);
}

static int cmp_stray(const void *a, const void *b)
{
	const struct pool_stray *x = a, *y = b;
	if (x->pool != y->pool)
		return (x->pool > y->pool) - (x->pool < y->pool);
	return cmp_holder(&x->h, &y->h);
}

/* The strays of guest g (its config conf, its tags from the listing). */
static int strays_of(const struct ip_pool *p, size_t n, const struct guest_ref *g,
		     json_object *conf, struct pool_stray **v, size_t *nv)
{
	json_object_object_foreach(conf, key, val)
	{
		const char *pfx = g->type == GUEST_QEMU ? "ipconfig" : "net";
		size_t pl = strlen(pfx);
		if (strncmp(key, pfx, pl) != 0 || !key[pl] ||
		    strspn(key + pl, "0123456789") != strlen(key + pl))
			continue;
		struct pool_ip ips[2];
		size_t ni = pool_value_ips(json_object_get_string(val), ips);
		for (size_t k = 0; k < ni; k++)
			for (size_t i = 0; i < n; i++) {
				if (!pool_in_range(&p[i], &ips[k]) || pool_tags_have(g->tags, &ips[k]))
					continue;
				struct pool_stray *nw = realloc(*v, (*nv + 1) * sizeof *nw);
				if (!nw)
					return -1;
				*v = nw;
				struct pool_stray *s = &nw[(*nv)++];
				*s = (struct pool_stray){.pool = &p[i]};
				s->key = strdup(key);
				if (holder_set(&s->h, g, &ips[k]) < 0 || !s->key)
					return -1;
			}
	}
	return 0;
}

int pool_strays(struct pve *c, const struct ip_pool *p, size_t n, struct pool_stray **out,
		size_t *n_out, struct pve_error *err)
{
	*out = NULL;
	*n_out = 0;
	if (n == 0)
		return 0;
	struct guest_list l;
	if (guest_list(c, NULL, &l, err) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		const struct guest_ref *g = &l.v[i];
		if (g->type == GUEST_OPENVZ)
			continue;
		json_object *conf = NULL;
		if (guest_get_config(c, g, &conf, err) < 0) {
			if (err->kind != PVE_ERR_NOT_FOUND) {
				rc = -1;
				break;
			}
			pve_error_clear(err); /* gone meanwhile */
			continue;
		}
		if (strays_of(p, n, g, conf, out, n_out) < 0)
			rc = pve_error_oom(err);
		json_object_put(conf);
	}
	guest_list_free(&l);
	if (rc < 0) {
		pool_strays_free(*out, *n_out);
		*out = NULL;
		*n_out = 0;
		return -1;
	}
	if (*n_out)
		qsort(*out, *n_out, sizeof **out, cmp_stray);
	return 0;
}
