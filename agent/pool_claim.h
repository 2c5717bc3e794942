/* pool_claim.h - handing out a pool's addresses on PVE, which is the source
 * of truth: who holds what (read from one cluster listing: the address tag
 * a claim sets with ipconfig0, which /cluster/resources returns from the
 * guests' configs at once), and the claim of an address for one guest.
 *
 * PVE has no reservation, so a claim is made like a VMID claim: write, then
 * look. The guest's config gets ipconfig0 and the address tag in one PUT;
 * then a fresh listing shows every guest holding that address. A guest that
 * finds itself the only holder keeps it; one that finds others holding it
 * backs off (and so do they), taking for its next attempt the free address
 * whose rank among the free ones is its VMID's rank among the colliders, so
 * colliders part. Any later writer sees the keeper and backs off: no two
 * guests keep one address, whichever processes or machines claim them.
 * When the colliders over the last free address all backed off, each takes
 * its write back and looks again after a wait by its rank (the lowest
 * first): the address is free again, and one of them wins it, so that
 * N claims on M < N addresses make M holders, not fewer.
 * Within one process the addresses being claimed are also held in memory,
 * so parallel claims of one process never pick the same address.
 *
 * Requests: a claim picks from a listing the caller already has (up's own),
 * then one PUT and one listing (2 requests); each collision costs a PUT and
 * a listing more. */
#ifndef PVAGENT_POOL_CLAIM_H
#define PVAGENT_POOL_CLAIM_H

#include "guest.h"
#include "pool.h"

struct pool_holder {
	struct pool_ip ip;
	int vmid;
	char *name;    /* or NULL */
	char *node;
};

struct pool_usage {
	struct pool_holder *v; /* sorted by address, then VMID */
	size_t n;
};

/* The guests of l holding an address of p (by their address tag). -1 when
 * memory ran out. */
int pool_usage_from_list(const struct ip_pool *p, const struct guest_list *l,
			 struct pool_usage *out);
void pool_usage_free(struct pool_usage *u);

struct pool_claim_req {
	const struct ip_pool *pool;
	struct guest_ref *g;              /* the guest (a VM) */
	const char *tags;                 /* its tags now (kept), or NULL */
	const struct guest_list *listing; /* a listing to pick from, or NULL
					     (then one is read) */
	const struct guest_wait *w;
};

/* Claim an address of req->pool for req->g: 0 and *out (held in PVE, the
 * guest's ipconfig0 and tag set); 1 when the pool is exhausted (err:
 * PVE_ERR_API, "pool NAME is exhausted: its N addresses are held": other
 * claims took the last ones since the check before the guest was made);
 * or -1: a request error, or no address won after repeated collisions.
 * A guest that already holds an
 * address of the pool (and alone) keeps it without a write. On failure
 * the guest holds no address of the pool. */
int pool_claim(struct pve *c, const struct pool_claim_req *req, struct pool_ip *out,
	       struct pve_error *err);

/* The free addresses of p as a listing l shows them, minus what this
 * process is claiming: -1 (err) when there are none (the exhausted error),
 * 0 otherwise, with *first (may be NULL) the lowest of them. Checks before
 * anything is created; the dry run's plan. */
int pool_check_free(const struct ip_pool *p, const struct guest_list *l, struct pool_ip *first,
		    struct pve_error *err);

/* A guest with an address of a pool's range set in its config by hand
 * (ipconfigN, or a container's netN ip=) without the pool's tag for it:
 * the pool does not know it, and could hand the address out again. */
struct pool_stray {
	const struct ip_pool *pool;
	struct pool_holder h; /* the guest and the address */
	char *key;            /* "ipconfig0", "net1" */
};

/* The strays of the pools p[0..n): the allocator's listing (guest_list:
 * GET /cluster/resources, whose tags say what the pools know) and each
 * guest's config (one GET each, templates too). 0 and *out (sorted by
 * pool, address, VMID), or -1 with err. */
int pool_strays(struct pve *c, const struct ip_pool *p, size_t n, struct pool_stray **out,
		size_t *n_out, struct pve_error *err);
void pool_strays_free(struct pool_stray *v, size_t n);

/* Forget an address this process claimed (its guest is deleted). */
void pool_claim_release(const struct pool_ip *ip);

#endif
