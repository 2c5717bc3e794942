/* metrics.h - what pvagentd counts for [daemon] metrics_file, written in
 * the Prometheus text format (node_exporter's textfile collector reads
 * it) atomically: a temporary file beside it, fsync, rename.
 *
 *   pvagent_jobs_total{workflow,result}              counter
 *   pvagent_step_seconds_sum / _count{workflow,step} summary parts
 *   pvagent_daemon_jobs_total{exit}                  daemon jobs by exit code
 *   pvagent_pve_requests_total{method}               requests the jobs sent
 *   pvagent_pve_retries_total{kind}                  their retries, by error kind
 *   pvagent_daemon_start_time_seconds                gauge */
#ifndef PVAGENT_METRICS_H
#define PVAGENT_METRICS_H

#include <stddef.h>

struct metrics_row {
	char *a, *b;        /* label values */
	double count, sum;
};

struct metrics {
	struct metrics_row *jobs, *steps, *exits, *requests, *retries;
	size_t n_jobs, n_steps, n_exits, n_requests, n_retries;
	double start_time;
};

/* 0, or -1 when out of memory. */
int metrics_job(struct metrics *m, const char *workflow, const char *result);
int metrics_step(struct metrics *m, const char *workflow, const char *step, double seconds);
int metrics_exit(struct metrics *m, int code);
/* n more requests of method, retries after an error of kind. */
int metrics_requests(struct metrics *m, const char *method, double n);
int metrics_retries(struct metrics *m, const char *kind, double n);
/* The text format (malloc'd; NULL on OOM). */
char *metrics_text(const struct metrics *m);
/* Write it to path atomically. 0, or -1 with *err. */
int metrics_write(const struct metrics *m, const char *path, char **err);
void metrics_free(struct metrics *m);

#endif
