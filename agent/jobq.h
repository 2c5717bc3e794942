/* jobq.h - the daemon's job queue and its limits (named jobq, not sched:
 * <sched.h> is a system header): first come, first
 * served, with at most `workers` items running, at most `node_jobs` of
 * them on one node, and one item at a time per guest. An item that waits
 * for a guest also holds back the later items on that guest, so the
 * jobs of one guest run in the order they came. Pure bookkeeping: the
 * daemon (pvagentd's djob.c) starts what jobq_next() gives it. */
#ifndef PVAGENT_JOBQ_H
#define PVAGENT_JOBQ_H

#include <stdbool.h>
#include <stddef.h>

struct jobq_item {
	unsigned long long ticket;    /* 1, 2, ... in the order of jobq_add */
	char **guests;                /* the guests it works on */
	size_t n_guests;
	char *node;                   /* or NULL: unknown (only workers count) */
	bool running;
	double start_by;              /* latest start (the caller's clock); HUGE_VAL (as
					 added): any time */
	void *data;                   /* the caller's */
	struct jobq_item *prev, *next;
};

struct jobq {
	struct jobq_item *head, *tail;
	unsigned workers, node_jobs;  /* 0: no limit */
	size_t n_running, n_queued;
	unsigned long long last_ticket;
};

void jobq_init(struct jobq *s, unsigned workers, unsigned node_jobs);
/* Queue an item (strings copied). NULL on OOM. */
struct jobq_item *jobq_add(struct jobq *s, const char *const *guests, size_t n_guests,
			     const char *node, void *data);
/* The first queued item that may start now, marked running; or NULL. */
struct jobq_item *jobq_next(struct jobq *s);
/* Why a queued item waits: the running (or earlier queued) item holding
 * one of its guests (*guest: which), or NULL when it waits for a worker
 * or its node only. */
const struct jobq_item *jobq_blocker(const struct jobq *s, const struct jobq_item *it,
				       const char **guest);
/* The first queued item whose latest start is before now (not to be
 * started any more: the caller takes it out), or NULL. */
struct jobq_item *jobq_late(const struct jobq *s, double now);
/* Take an item out (running or queued) and free it. */
void jobq_remove(struct jobq *s, struct jobq_item *it);
/* The item with this ticket, or NULL. */
struct jobq_item *jobq_find(const struct jobq *s, unsigned long long ticket);
void jobq_free(struct jobq *s);

#endif
