/* faults.h - fault injection for the simulator: rules from the scenario's
 * "faults" array or POST /_sim/fault, matched against each request.
 *
 * A rule (JSON object):
 *   "method":  "POST"              optional; any method when absent
 *   "path":    "^/nodes/[^/]+/qemu$" regex (PCRE2) on the API path; required
 *   "nth":     2                   fire on the 2nd matching request only
 *   "probability": 0.3, "seed": 7  fire at random, reproducibly
 *                                   (neither: fire on every match)
 *   "times":   1                   fire at most this often (default:
 *                                   1 with nth, unlimited otherwise)
 *   "after":   true                status/reset only: run the request,
 *                                   then lose its answer
 *   "action":  "status"            answer "status" (default 500) with
 *                                   "message"
 *            | "no_worker_upid"    500 "got no worker upid - start worker failed"
 *            | "timeout"           596 "got timeout" (PVE's proxy timeout)
 *            | "reset"             close the connection without answering
 *            | "delay"             wait "ms" milliseconds, then serve
 *            | "task_fail"         the task the request starts fails
 *                                   with "message"
 */
#ifndef PVESIM_FAULTS_H
#define PVESIM_FAULTS_H

#include <json-c/json.h>
#include <stdbool.h>

enum fault_action {
	FAULT_NONE,
	FAULT_STATUS,
	FAULT_NO_WORKER_UPID,
	FAULT_TIMEOUT,
	FAULT_RESET,
	FAULT_DELAY,
	FAULT_TASK_FAIL,
};

struct fault_hit {
	enum fault_action action;
	int status;
	char *message; /* owned copy */
	long delay_ms;
	bool after;
};

struct faults;

struct faults *faults_new(void);
void faults_free(struct faults *f);
/* Add one rule. where names it in errors ("demo.json: $.faults[0]").
 * Returns 0, or -1 with a malloc'd *err naming the field at fault. */
int faults_add(struct faults *f, json_object *rule, const char *where, char **err);
void faults_clear(struct faults *f);
/* Match a request; on a hit fills *hit (free with fault_hit_clear) and
 * returns true. Not thread-safe: the caller serialises. */
bool faults_match(struct faults *f, const char *method, const char *path,
		  struct fault_hit *hit);
void fault_hit_clear(struct fault_hit *hit);
/* Rules with their match and fire counts (new reference). */
json_object *faults_state(const struct faults *f);

#endif
