/* rolling_plan.h - the pure rules of `pvagent rolling` (wf_rolling.c):
 * whether the cluster can spare a node's vote, the order the nodes go in,
 * what a guest that cannot move live needs from the admin (from its
 * node's drain plan, wf_drain.h's moves), whether Ceph's health lets a
 * node go down, and a node's version against the one expected. Pure: no
 * I/O. */
#ifndef PVAGENT_ROLLING_PLAN_H
#define PVAGENT_ROLLING_PLAN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Quorate now, and still with one of the online nodes down (one vote
 * each, as PVE's corosync gives by default): NULL, or why not
 * (malloc'd). */
char *rolling_quorum_why(size_t nodes, size_t online, bool quorate);

struct rp_node {
	const char *name;
	bool self;             /* pvagent runs on it: it goes last */
	uint64_t move_memory;  /* bytes its drain moves */
};
/* The order: the smallest drain first (what is at stake grows as the
 * procedure proves itself), by name on a tie, the node pvagent runs on
 * last. order gets n indexes into nodes. */
void rolling_order(const struct rp_node *nodes, size_t n, size_t *order);

/* What the admin should do about one move of node's drain plan (an
 * element of its "moves", wf_drain.h) before a rolling run, or NULL when
 * it moves live (or is stopped, or a template) and needs nothing
 * (malloc'd; NULL also out of memory: *oom set). */
char *rolling_todo(json_object *move, const char *node, bool *oom);

/* Ceph's health (GET /cluster/ceph/status) lets a node go down: HEALTH_OK,
 * or HEALTH_WARN whose only check is the noout flag (OSDMAP_FLAGS, set
 * by this run). NULL, or why not (malloc'd). */
char *rolling_ceph_why(json_object *status);

/* Does version ("9.1.2", GET /nodes/N/version's) match want ("9", "9.1",
 * "9.1.2": the parts given)? want NULL or "": any. */
bool rolling_version_is(const char *version, const char *want);
/* Is want a version ("9", "9.1", "9.1.2")? */
bool rolling_version_valid(const char *want);

#endif
