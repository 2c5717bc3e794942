/* drain_plan.h - the drain planner (pvagent(1) drain):
 * where each guest of a node goes. Largest memory first onto the target
 * with the most memory headroom after the reserve, never overcommitting a
 * target; a target must be online, have the guest's local storages, enough
 * CPUs for its vCPUs, be among PVE's allowed nodes for it and not be
 * refused by the migration planner (migrate_plan.h: the same refusal as
 * `migrate`); a node on an older PVE than the source is chosen only when
 * no upgraded one fits. Templates
 * and guests tagged pvagent-pin stay; a guest that fits nowhere is listed
 * with the reason. Guests HA moves together (PVE 9 positive resource
 * affinity) are one unit: every member must fit the one target, their
 * memory counted together. Also the sliding-window schedule of the moves (K in
 * flight, at most per_target into one node), for estimates and the bench.
 * Pure: no I/O. */
#ifndef PVAGENT_DRAIN_PLAN_H
#define PVAGENT_DRAIN_PLAN_H

#include "migrate_plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DRAIN_PIN_TAG "pvagent-pin"

struct dp_node {
	const char *name;
	bool online;
	uint64_t mem_total, mem_used;  /* bytes (GET /nodes maxmem, mem) */
	unsigned cpus;                 /* maxcpu */
	const char *const *storages;   /* storage ids active on the node */
	size_t n_storages;
	bool older;                    /* runs an older PVE than the source */
};

struct dp_guest {
	const char *name;
	int vmid;
	enum guest_type type;
	bool running, template, pinned;
	uint64_t memory;               /* bytes */
	unsigned cpus;                 /* vCPUs */
	uint64_t disk_bytes;           /* local disk bytes to copy */
	const char *const *storages;   /* local (not shared) storages it uses */
	size_t n_storages;
	const char *const *allowed;    /* PVE's allowed_nodes; NULL: any */
	size_t n_allowed;
	const char *const *refusals;   /* per input node: why migrate_plan()
					  refuses that target, or NULL; the
					  array NULL: none known */
	size_t with;                   /* 1 + the index of the guest whose HA
					  migration takes this one along
					  (positive resource affinity, PVE 9):
					  one unit, one target; 0: none */
};

struct dp_input {
	const char *source;
	const struct dp_node *nodes;
	size_t n_nodes;
	const struct dp_guest *guests;
	size_t n_guests;
	const char *const *to;         /* targets; NULL: every other online node */
	size_t n_to;
	uint64_t reserve;              /* bytes kept free on a target */
	double mem_bps, disk_bps;      /* measured speeds (<= 0: defaults) */
};

enum dp_status {
	DP_MOVE = 0,
	DP_STAY_TEMPLATE,
	DP_STAY_PINNED,
	DP_NOWHERE,
	DP_WITH,                       /* HA takes it along with its unit's first */
};
/* "move", "template", "pinned", "fits nowhere", "with" */
const char *dp_status_name(enum dp_status s);

struct dp_move {
	size_t guest;                  /* index into input guests */
	enum dp_status status;
	size_t target;                 /* node index when DP_MOVE or DP_WITH */
	enum mig_method method;
	double estimate_s;
	char *why;                     /* DP_NOWHERE: per node why not (malloc'd) */
};

struct dp_plan {
	struct dp_move *moves;         /* in the order to start them (largest first),
					  then the guests that stay */
	size_t n_moves;
	uint64_t *free_after;          /* per node: free memory after the drain
					  minus nothing (bytes; the reserve not
					  subtracted) */
	size_t n_nowhere;
};

/* Plan. 0, or -1 out of memory (*out zeroed). */
int drain_plan(const struct dp_input *in, struct dp_plan *out);
void drain_plan_free(struct dp_plan *p);

/* The sliding-window schedule: jobs with these durations started in
 * order, k at a time (the next when any one ends), at most per_target (0:
 * no limit) into targets[i] at once; a job that cannot start because its
 * target is full waits while later ones may start. Returns the makespan;
 * starts (may be NULL) gets each job's start time. */
double drain_schedule(const double *durations, const size_t *targets, size_t n, unsigned k,
		      unsigned per_target, double *starts);

#endif
