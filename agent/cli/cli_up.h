/* cli_up.h - the launchers of `pvagent up` and `pvagent down` (cli_up.c):
 * a request checked, then run as one job per guest (the up and down
 * workflows, wf_up.h). */
#ifndef PVAGENT_CLI_UP_H
#define PVAGENT_CLI_UP_H

#include "wf_up.h"

/* Run up in env as the tests do (the command appends its jobs:
 * cli_run.c), its template and results attached. *results gets n_names
 * results in the order of names. Returns 0 when every name succeeded, -1
 * when any failed (see each result's error) or on a request error before
 * any work (then *results is NULL and err says why: PVE_ERR_CONFIG for
 * bad names, duplicates, --vmid with several names, bad --set keys, a
 * template with guest files to inject and no conf or no [ssh]
 * known_hosts). */
int cli_up_launch(const struct up_request *req, const struct up_env *env,
		  struct up_result **results, struct pve_error *err);

struct down_request {
	const char *name;
	bool purge;
	bool dry_run;                    /* say what would be done; send nothing */
	const struct pve_opts *pve_opts; /* used when client is NULL */
	struct pve *client;
	struct guest_wait wait;
	job_event_fn on_event;
	void *event_ctx;
	struct store *store;
	volatile sig_atomic_t *stop;
};

/* Shutdown (stop after wait.shutdown_timeout_s) and delete, as a job. A
 * missing guest is UP_ABSENT and not found (PVE_ERR_NOT_FOUND, exit 2),
 * except to a resumed job, which it completes. Returns 0, or -1
 * (res->error). */
int cli_down_launch(const struct down_request *req, struct up_result *res);

#endif
