/* uprun.h - test support: `up` and `down` run as the CLI runs them (one
 * job per guest, params by their one writer, job_submit, the job pool as
 * cli_run_jobs runs it), their results taken from the jobs
 * (wf_result_take). */
#ifndef TESTS_UPRUN_H
#define TESTS_UPRUN_H

#include "wf_up.h"

#include <signal.h>

/* Where a test's up or down jobs run. */
struct test_up_env {
	const struct conf *conf;        /* may be NULL: no inject, no pool */
	const struct pve_opts *pve_opts; /* each worker's client (parallel > 1) */
	struct pve *client;             /* with parallel 1 (or one name) */
	unsigned parallel;              /* 0: 4 */
	struct guest_wait wait;
	job_event_fn on_event;
	void *event_ctx;
	struct store *store;            /* NULL: nothing stored (nor with dry_run) */
	volatile sig_atomic_t *stop;
};

/* up: req checked (up_request_check), one job per name. *results gets
 * n_names results in the order of names. 0 when every name succeeded, -1
 * when any failed (each result's error), or for a request refused before
 * any job (*results NULL, *err says why). */
int test_up_run(const struct up_request *req, const struct test_up_env *env,
		struct up_result **results, struct pve_error *err);

/* down of name (a guest name or VMID; refused as the CLI refuses one that
 * is neither: PVE_ERR_CONFIG, usage), its result in *res. 0 when it ended
 * done, else -1 (res->error). */
int test_down_run(const char *name, bool purge, bool dry_run, const struct test_up_env *env,
		  struct up_result *res);

#endif
