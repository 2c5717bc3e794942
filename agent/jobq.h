/* jobq.h - the daemon's job queue and its limits (named jobq, not sched:
 * <sched.h> is a system header): first come, first
 * served, with at most `workers` items running, at most `node_jobs` of
 * them on one node, and one item at a time per guest. An item that waits
 * for a guest also holds back the later items on that guest, so the
 * jobs of one guest run in the order they came. Pure bookkeeping: the
 * daemon (pvagentd.c) starts what sched_next() gives it. */
#ifndef PVAGENT_JOBQ_H
#define PVAGENT_JOBQ_H

#include <stdbool.h>
#include <stddef.h>

struct sched_item {
	unsigned long long ticket;    /* 1, 2, ... in the order of sched_add */
	char **guests;                /* the guests it works on */
	size_t n_guests;
	char *node;                   /* or NULL: unknown (only workers count) */
	bool running;
	void *data;                   /* the caller's */
	struct sched_item *prev, *next;
};

struct sched {
	struct sched_item *head, *tail;
	unsigned workers, node_jobs;  /* 0: no limit */
	size_t n_running, n_queued;
	unsigned long long last_ticket;
};

void sched_init(struct sched *s, unsigned workers, unsigned node_jobs);
/* Queue an item (strings copied). NULL on OOM. */
struct sched_item *sched_add(struct sched *s, const char *const *guests, size_t n_guests,
			     const char *node, void *data);
/* The first queued item that may start now, marked running; or NULL. */
struct sched_item *sched_next(struct sched *s);
/* Why a queued item waits: the running (or earlier queued) item holding
 * one of its guests (*guest: which), or NULL when it waits for a worker
 * or its node only. */
const struct sched_item *sched_blocker(const struct sched *s, const struct sched_item *it,
				       const char **guest);
/* Take an item out (running or queued) and free it. */
void sched_remove(struct sched *s, struct sched_item *it);
/* The item with this ticket, or NULL. */
struct sched_item *sched_find(const struct sched *s, unsigned long long ticket);
void sched_free(struct sched *s);

#endif
