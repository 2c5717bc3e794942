/* tasks.h - PVE worker tasks in simulated time: UPIDs, task logs whose
 * lines appear as time passes, exit status, the effects applied when a task
 * ends, fault injection and stopping. No threads: everything is computed
 * lazily from the request's `now` (tasks_advance). */
#ifndef PVESIM_TASKS_H
#define PVESIM_TASKS_H

#include "cluster.h"

struct sim_task;

/* Called when a task ends: ok is true when it ended successfully (its
 * effects should apply), false when it failed or was stopped. */
typedef void (*task_end_fn)(struct cluster *c, struct sim_task *t, bool ok);
/* Called when a scheduled task actually starts (migrateall children). May
 * fail the task by calling task_fail_now(). */
typedef void (*task_start_fn)(struct cluster *c, struct sim_task *t);

struct task_line {
	double at; /* seconds after start */
	char *text;
};

struct sim_task {
	char *upid, *node, *type, *id, *user;
	unsigned pid, pstart;
	double start;    /* simulated start */
	double duration; /* planned length */
	double end;      /* actual end (start + duration, or earlier) */
	struct task_line *lines;
	size_t nlines, cap;
	int warnings;
	char *error;      /* failure message, NULL if it succeeds */
	char *exitstatus; /* set when finished */
	bool started, finished;
	task_start_fn on_start;
	task_end_fn on_end;
	/* effect parameters */
	int vmid;
	int newid;
	char *target;
	json_object *args; /* anything else (owned) */
	struct sim_task *parent; /* migrateall */
	int children_running;
};

/* New task on node, started at `start` (may lie in the future for
 * scheduled children). Returns NULL on allocation failure. */
struct sim_task *task_new(struct cluster *c, const char *node,
			  const char *type, const char *id, const char *user,
			  double start, double duration);
/* Log a line `at` seconds after the start. */
int task_log(struct sim_task *t, double at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The task will fail `at` seconds after its start with msg (lines after
 * that point are dropped). */
int task_fail_at(struct sim_task *t, double at, const char *msg);
/* Fault injection: if req->task_fail, fail partway. */
int task_apply_fault(struct sim_task *t, const char *task_fail);
/* Run every start and end due by `now`, in time order. */
void tasks_advance(struct cluster *c, double now);
struct sim_task *task_find(const struct cluster *c, const char *upid);
void task_free(struct sim_task *t);
/* Stop a running task at `now` ("interrupted by signal"). */
void task_stop(struct cluster *c, struct sim_task *t, double now);
/* "2026-11-30 10:00:00" for `at` seconds after the task start (UTC). */
char *task_stamp(const struct sim_task *t, double at);
/* Progress lines of a copy of `total` bytes over [at0, at0 + secs]:
 * qemu-img style "transferred X of Y (Z%)" or, with prefix (a drive
 * name), drive-mirror style "PREFIX: transferred X of Y (Z%) in Ns" ending
 * with ", ready". */
int task_log_transfer(struct sim_task *t, double at0, double secs,
		      uint64_t total, const char *prefix);
/* "HH:MM:SS" of a duration; malloc'd. */
char *task_hms(double secs);
/* Answer a request that started task t: data and upid are its UPID. */
void resp_task(struct sim_resp *r, struct sim_task *t);
/* Remove a task that must not be seen (a refusal after it was made). */
void task_discard(struct cluster *c, struct sim_task *t);
/* Effects for power tasks (t->vmid): guest started / stopped / rebooted. */
void task_end_start(struct cluster *c, struct sim_task *t, bool ok);
void task_end_stop(struct cluster *c, struct sim_task *t, bool ok);
void task_end_reboot(struct cluster *c, struct sim_task *t, bool ok);
/* Status object as GET .../tasks/{upid}/status answers it. */
json_object *task_status_json(const struct sim_task *t, double now);
/* Lines visible at `now`. */
size_t task_visible_lines(const struct sim_task *t, double now);

#endif
