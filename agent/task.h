/* task.h - PVE tasks: UPID parsing and formatting, starting a task-creating
 * call, waiting on a task (poll schedule 100 ms doubling to 1 s, plus a
 * poll just after the end estimated from the progress in its log), reading
 * its log for progress (clone and migration percentages), migration
 * downtime and duration, warnings, and the log tail of a failed task. */
#ifndef PVAGENT_TASK_H
#define PVAGENT_TASK_H

#include "pve.h"

#include <stdbool.h>
#include <stddef.h>

/* UPID:node:pid(hex8):pstart(hex8/9):starttime(hex8):type:id:user: */
struct task_upid {
	char *node;
	unsigned long pid;
	unsigned long pstart;
	long long starttime;   /* unix seconds */
	char *type;            /* "qmclone", "qmigrate", "vzcreate", ... */
	char *id;              /* usually the VMID; may be "" */
	char *user;            /* "root@pam" or "root@pam!pvagent" */
};

/* Parse a UPID. Returns 0, or -1 (errno EINVAL) when s is not a UPID;
 * u is untouched on failure. Free with task_upid_free(). */
int task_upid_parse(const char *s, struct task_upid *u);
/* The UPID string as PVE writes it (malloc'd; NULL when out of memory). */
char *task_upid_format(const struct task_upid *u);
void task_upid_free(struct task_upid *u);

/* What one task log line says. -1 (or < 0) means "not in this line". */
struct task_progress {
	double percent;          /* 0..100 */
	double transferred;      /* bytes */
	double total;            /* bytes */
	long downtime_ms;        /* migration: "downtime N ms" */
	long duration_s;         /* migration: "(duration HH:MM:SS)" */
	const char *line;        /* the log line (borrowed) */
};

enum task_line_kind {
	TASK_LINE_OTHER = 0,
	TASK_LINE_TRANSFER,      /* "transferred X of Y (Z%)" (clone, mirror) */
	TASK_LINE_MIGRATION,     /* "migration active, transferred X of Y VM-state" */
	TASK_LINE_DOWNTIME,      /* "average migration speed: ... - downtime N ms" */
	TASK_LINE_FINISHED,      /* "migration finished successfully (duration ..)" */
	TASK_LINE_WARNING,       /* "WARN: ..." or "WARNING: ..." */
};

/* Classify one log line and fill p (all fields reset first). Pure. */
enum task_line_kind task_parse_line(const char *line, struct task_progress *p);

/* Parse "1.5 GiB", "512 B", "12.0 MiB" (binary and decimal units) into
 * bytes. Returns 0 and sets *bytes and *end (after the unit), or -1. */
int task_parse_size(const char *s, double *bytes, const char **end);

/* Delay before status poll number n (0 = the first poll): 0.1 s doubling
 * up to 1 s. Pure. */
double task_poll_delay(unsigned n);

/* The status poll schedule of task_wait(). Times are seconds since the
 * wait began. The plain schedule is task_poll_delay() scaled to first_s and
 * capped at max_s: first_s, 2 first_s, 4 first_s, ... max_s after each poll
 * of it. Without progress that is all.
 *
 * Progress lines (a percentage) from the log reads add polls to it: the
 * time the last new line of a read was written is estimated (within the
 * gap since the previous read; the more lines came in, the nearer the read:
 * now - gap / (2 lines)), the transfer's rate follows from its start (0;
 * the time of a "0%" line, estimated the same way; or, when the percentage
 * goes backwards, e.g. for the next disk, the previous read) and its end is
 * that time plus the rest at that rate. When the estimated end plus a
 * quarter of first_s comes before the next plain poll, one extra poll is
 * made then. If that poll finds the task still running past the estimate
 * or with the copy at 90% or more (PVE writes the config and drops the
 * lock after the copy), the plain schedule starts again from first_s, once
 * per estimate, to follow that tail; otherwise it
 * goes on underneath, unchanged (a stalled task is polled as without
 * progress, at most max_s apart). At most one
 * extra poll per plain delay, none sooner than first_s after the previous
 * poll. Percentages of 0 give no estimate and ones not above the best seen
 * of the transfer change nothing; > 100 counts as 100, NaN and < 0 as no
 * line. Pure: the caller passes the times (task_wait() its clock's). */
struct task_sched {
	double first, max;     /* bounds of a delay (seconds) */
	unsigned n;            /* plain delays given so far */
	double grid;           /* time of the next plain poll */
	bool was_extra;        /* the last delay given was an extra poll's */
	bool extra_done;       /* an extra poll was given in this plain delay */
	double seg;            /* start of the current transfer */
	double best;           /* highest percentage of it, < 0: none yet */
	double end;            /* its estimated end, < 0: none */
	double last_read;      /* time of the previous log read */
};

void task_sched_init(struct task_sched *s, double first_s, double max_s);
/* A log read at time now brought `lines` new progress lines, the last of
 * them at percent (ignored when lines is 0). */
void task_sched_progress(struct task_sched *s, double now, unsigned lines, double percent);
/* The delay before the next status poll, the previous one at time now. */
double task_sched_next(struct task_sched *s, double now);

typedef void (*task_progress_fn)(void *ctx, const struct task_progress *p);

struct task_wait_opts {
	double timeout_s;        /* give up waiting after this; 0: 1800; < 0: never */
	double first_poll_s;     /* 0: 0.1 */
	double max_poll_s;       /* 0: 1.0 */
	double grace_s;          /* a status 400/404 this soon after the wait
				    began means "not visible yet"; 0: 10 */
	unsigned tail_lines;     /* log lines kept for a failure; 0: 12 */
	const struct pve_clock *clock;  /* NULL: real time */
	task_progress_fn progress;      /* called for progress lines, may be NULL;
					   with it the log is also read while
					   the task runs (see task_sched) */
	void *progress_ctx;
};

struct task_result {
	char *exitstatus;        /* "OK", "WARNINGS: 2", or the error text */
	int warnings;            /* n of "WARNINGS: n" */
	char **warning_lines;    /* the "WARN:"/"WARNING:" lines (at most 100) */
	size_t n_warning_lines;
	long downtime_ms;        /* -1 if the log had none */
	long duration_s;         /* migration duration, -1 if none */
	double elapsed_s;        /* time spent waiting */
	unsigned polls;          /* status requests made */
};
void task_result_free(struct task_result *r);

/* Is exitstatus a success ("OK" or "WARNINGS: n")? Sets *warnings. */
bool task_exit_ok(const char *exitstatus, int *warnings);

/* Wait until the task stops, polling its status on the task_sched
 * schedule (first_poll_s, max_poll_s). With opts->progress the log is read
 * after each status poll that finds the task running, except while the
 * current transfer is at 100% (then at most once per max_poll_s); without
 * it the log is read once, at the end. Returns 0 when it ended with OK or
 * WARNINGS (the warning lines are logged as warnings and returned in res).
 * On an error exit status returns -1 with err->kind PVE_ERR_TASK, err->message
 * "TYPE ID on NODE failed: EXITSTATUS", err->upid and err->detail (the last
 * log lines). After opts->timeout_s: PVE_ERR_TASK_TIMEOUT (task untouched,
 * still running). API errors while polling are those of pve_request(), and
 * the task is never started again. res may be NULL. */
int task_wait(struct pve *c, const char *upid, const struct task_wait_opts *opts,
	      struct task_result *res, struct pve_error *err);

/* Send a request that starts a task (method usually "POST"). On success
 * *upid is the UPID (malloc'd), or NULL when PVE answered null (nothing to
 * do, e.g. a config change applied synchronously). Returns pve_request()'s
 * value (0, 1 for "an earlier attempt did it", -1). An answer that is
 * neither null nor a UPID is PVE_ERR_PROTOCOL. */
int task_start(struct pve *c, const char *method, const char *path,
	       const struct pve_params *params, const struct pve_call_opts *copts,
	       char **upid, struct pve_error *err);

/* task_start() then task_wait() when a UPID came back. */
int task_run(struct pve *c, const char *method, const char *path,
	     const struct pve_params *params, const struct pve_call_opts *copts,
	     const struct task_wait_opts *wopts, struct task_result *res,
	     struct pve_error *err);

/* The last n lines of the task log (malloc'd, '\n' separated, no trailing
 * newline; "" for an empty log). */
int task_log_tail(struct pve *c, const char *upid, unsigned n, char **out,
		  struct pve_error *err);

#endif
