/* faultkinds.h - test support: the simulator's fault kinds that the fault
 * matrices (test_job's job_faults, test_virtio_faults) put on every
 * task-starting request: 500, 503, no worker UPID, 596, reset, a delay
 * past a 1.5 s client timeout, a failing task, and 500/503/596/reset after
 * the request took effect (tests/pvesim/faults.h). */
#ifndef TESTS_FAULTKINDS_H
#define TESTS_FAULTKINDS_H

#include <stddef.h>

struct fault_kind {
	const char *name;
	const char *spec; /* the action part of a rule: "\"action\":...", no braces */
};

/* The client timeout (ms) the delay kind is past. */
#define FAULT_KINDS_CLIENT_TIMEOUT_MS 1500

extern const struct fault_kind fault_kinds[];
extern const size_t n_fault_kinds;

/* A rule for the nth request of method whose path matches rx, with the
 * kind's action (malloc'd JSON), or NULL on OOM. */
char *fault_rule(const char *method, const char *rx, int nth, const struct fault_kind *k);

#endif
