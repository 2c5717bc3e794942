/* jobstep.c - make bench: the job engine's overhead per step. A workflow
 * of empty steps runs without a store and with state.db (WAL, one commit
 * per step); the difference is what persisting costs a step. Then the
 * durable commit (fsync) that marks a task-starting request as sent before
 * it goes out. Printed in microseconds. */
#include "job.h"
#include "store.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STEPS 200
#define RUNS 5

static enum step_rc nothing(struct job *j)
{
	(void)j;
	return STEP_RC_OK;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds per step of RUNS jobs of STEPS steps. */
static double per_step(const struct job_workflow *wf, struct store *s)
{
	struct job_env env = {.store = s};
	if (job_env_init(&env) < 0)
		return -1;
	double t0 = now();
	for (int r = 0; r < RUNS; r++) {
		struct job *j = NULL;
		struct pve_error e = {0};
		if (job_new(&env, wf, "bench", NULL, &j, &e) < 0 || job_run(j, NULL) != JOB_OUT_DONE) {
			fprintf(stderr, "jobstep: %s\n", e.message ? e.message : "job failed");
			job_free(j);
			return -1;
		}
		job_free(j);
	}
	double t = (now() - t0) / (RUNS * STEPS);
	job_env_fini(&env);
	return t;
}

int main(void)
{
	static struct job_step_def steps[STEPS];
	for (int i = 0; i < STEPS; i++)
		steps[i] = (struct job_step_def){"step", nothing, NULL, 0};
	struct job_workflow wf = {"bench", steps, STEPS, 8, NULL, NULL, false, NULL};
	char dir[] = "/var/tmp/pvagent-bench-job.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char *path = store_path(dir), *err = NULL;
	struct store *s = NULL;
	if (!path || store_open(path, &s, &err) < 0) {
		fprintf(stderr, "jobstep: %s\n", err ? err : "out of memory");
		return 1;
	}
	double bare = per_step(&wf, NULL), stored = per_step(&wf, s);
	/* the durable commit before a task-starting request */
	double t0 = now();
	for (int i = 0; i < 50; i++) {
		long long id;
		if (store_tx_begin(s, true, &err) < 0 ||
		    store_job_insert(s, "bench", "sent", "{}", 1, &id, &err) < 0 ||
		    store_tx_commit(s, &err) < 0) {
			fprintf(stderr, "jobstep: %s\n", err ? err : "store");
			return 1;
		}
	}
	double durable = (now() - t0) / 50;
	store_close(s);
	char *cmd = strprintf("rm -rf '%s'", dir);
	int rc = cmd && system(cmd) == 0 ? 0 : 1;
	free(cmd);
	free(path);
	if (bare < 0 || stored < 0)
		return 1;
	/* per step one commit: its end, the job's vars and the step's event
	 * together */
	printf("engine overhead per step: %.1f us in memory, %.1f us with state.db "
	       "(store write: %.1f us, 1 commit per step)\n",
	       bare * 1e6, stored * 1e6, (stored - bare) * 1e6);
	printf("durable commit (fsync) marking a task-starting request sent: %.1f us\n",
	       durable * 1e6);
	return rc;
}
