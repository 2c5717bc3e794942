/* jobpool.h - the agent's one thread pool: work items run on up to
 * `workers` threads under jobq's rule (jobq.h: in the order they were
 * added, at most node_jobs at once per node, one at a time per guest, and
 * not admitted once their latest start has passed). Each worker makes a
 * PVE client of its own (a client is one thread's). It runs the jobs of a
 * command on several guests (jobpool_run_jobs: `up a b c --parallel K`, or
 * one job on a client of its own), a drain's migrations (node = target,
 * per-target limit, the window's end as latest start), and concurrent
 * reads with a bound (jobpool_map: `list --long`, a drain's planning). */
#ifndef PVAGENT_JOBPOOL_H
#define PVAGENT_JOBPOOL_H

#include "clock.h"
#include "job.h"
#include "pve.h"

#include <signal.h>
#include <stddef.h>

/* Concurrent reads of `list --long` and of a drain's planning. */
#define JOBPOOL_READS 8

struct jobpool_opts {
	unsigned workers;               /* threads at most; 0: 1 */
	unsigned node_jobs;             /* items on one node at once; 0: no limit */
	const struct pve_opts *po;      /* each worker's client; NULL: one worker on c */
	struct pve *c;                  /* the caller's client (NULL with po: none) */
	const struct pve_clock *clock;  /* the clock of latest starts; NULL: real */
	volatile sig_atomic_t *stop;    /* set: nothing more starts (may be NULL) */
};

/* One item. run: on a worker, with the worker's client c; c is NULL when
 * the worker could not make one (*no_client says why). late: instead of
 * run when it was not admitted (its latest start passed, now on the
 * pool's clock); may be NULL. Both are called without the pool's lock. */
struct jobpool_item {
	const char *guest;              /* or NULL (copied) */
	const char *node;               /* or NULL: only workers count (copied) */
	bool timed;                     /* it has a latest start: */
	double start_by;                /* on the pool's clock */
	void (*run)(void *arg, struct pve *c, const struct pve_error *no_client);
	void (*late)(void *arg, double now);
	void *arg;
};

struct jobpool;

/* NULL out of memory. */
struct jobpool *jobpool_new(const struct jobpool_opts *o);
/* Queue an item. 0, or -1 out of memory. */
int jobpool_add(struct jobpool *p, const struct jobpool_item *it);
/* Run every queued item (each once: run or late, none after a stop) on
 * at most min(workers, items) threads, all joined before it returns. */
void jobpool_run(struct jobpool *p);
void jobpool_free(struct jobpool *p);

/* Run n jobs, at most parallel at once (0: 4), one at a time per subject,
 * each worker with a client made from po (or, po NULL, one at a time on
 * c). A job whose worker has no client fails with why. Returns the worst
 * outcome (job_outcome_worse). */
enum job_outcome jobpool_run_jobs(struct job **jobs, size_t n, unsigned parallel,
				  const struct pve_opts *po, struct pve *c);

/* fn(ctx, i, c, err) for i in 0..n-1, at most parallel at once, each
 * worker with a client from po (po NULL: one at a time on c). The first
 * failure (fn < 0) is returned in *err and the calls not started yet are
 * not made. 0, or -1. */
int jobpool_map(const struct pve_opts *po, struct pve *c, unsigned parallel, size_t n,
		int (*fn)(void *ctx, size_t i, struct pve *c, struct pve_error *err), void *ctx,
		struct pve_error *err);

#endif
