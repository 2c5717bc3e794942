/* task.h - PVE tasks: UPID parsing and formatting, starting a task-creating
 * call, waiting on a task (log reads from the last line seen, placed by the
 * end estimated from its progress, which also show the end; status polls
 * only for a silent log), reading its log for progress (clone and
 * migration percentages), migration downtime and duration, warnings, and
 * the log tail of a failed task. */
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
	double speed;            /* migration: average bytes/s ("migration speed: X MiB/s") */
};

enum task_line_kind {
	TASK_LINE_OTHER = 0,
	TASK_LINE_TRANSFER,      /* "transferred X of Y (Z%)" (clone, mirror) */
	TASK_LINE_MIGRATION,     /* "migration active, transferred X of Y VM-state" */
	TASK_LINE_DOWNTIME,      /* "average migration speed: ... - downtime N ms" */
	TASK_LINE_FINISHED,      /* "migration finished successfully (duration ..)",
				    OpenVZ's "successfuly" */
	TASK_LINE_COMPLETED,     /* "migration completed, transferred X VM-state"
				    (PVE 8; transferred set) */
	TASK_LINE_WARNING,       /* "WARN: ..." or "WARNING: ..." */
};

/* Classify one log line and fill p (all fields reset first). Pure. */
enum task_line_kind task_parse_line(const char *line, struct task_progress *p);

/* Parse "1.5 GiB", "512 B", "12.0 MiB" (binary and decimal units) into
 * bytes. Returns 0 and sets *bytes and *end (after the unit), or -1. */
int task_parse_size(const char *s, double *bytes, const char **end);

/* The request schedule of task_wait(). Times are seconds since the wait
 * began; pure: the caller passes them (task_wait() its clock's).
 *
 * Every request is a log read from the last line seen (`start=`): it brings
 * the progress and also shows the end, since PVE's worker writes "TASK OK",
 * "TASK ERROR: ..." or "TASK WARNINGS: n" as the last line of its log
 * before it exits (the status call reads exactly that line).
 *
 * Without an estimate the first read comes after first_s, the next ones
 * first_s apart, the gap doubling up to max_s (with the defaults 1 and 2:
 * at 1, 2, 4, 6, 8 s). Whatever the estimate, request n never comes before
 * n first_s, and no gap is shorter than min(0.15, first_s): by the time
 * it sees the end, the wait has made no more requests than polling every
 * first_s would have.
 *
 * Progress lines (a percentage) give an estimate of the end: the time the
 * last new line of a read was written is estimated within the gap since
 * the previous read (now - gap / (2 lines)); the rate counts from the first
 * percentage above 0 of the transfer, or for that first one from the
 * transfer's start (the wait's start, unless seg was set < 0 for a task
 * that ran before the wait; or the time of a "0%" line). A percentage
 * going backwards (the next disk) starts a transfer whose start is not
 * known (it lies somewhere in the gap since the previous read): its rate
 * comes from its first two percentages.
 * While the estimated end is more than TASK_SCHED_NEAR_S ahead the next
 * read halves the time left, at most max(max_s, 2 x time waited) later;
 * nearer, it comes just after the estimate (+ min(0.1, first_s)). Once the end
 * estimate has passed (or the copy is at 100%) with the task still running,
 * its tail is followed: gaps of min(0.15, first_s), the same again, then
 * doubling up to max_s. Percentages of 0 give no estimate, ones not above the best seen
 * of the transfer change nothing; > 100 counts as 100, NaN and < 0 as no
 * line.
 *
 * A log that brought no new line for TASK_SCHED_SILENT_S makes every other
 * request a status poll (a worker killed before its last line). */
#define TASK_SCHED_NEAR_S 2.0
#define TASK_SCHED_SILENT_S 10.0

struct task_sched {
	double first, max;     /* first read; longest gap without progress */
	double step;           /* first gap past the estimated end */
	double margin;         /* a read this long after the estimated end */
	unsigned n;            /* delays given so far */
	double gap;            /* the next gap without an estimate */
	unsigned tails;        /* reads past the estimated end */
	double last_read;      /* time of the previous log read */
	double last_line;      /* time of the last read that brought a line */
	bool status_next;      /* the last silent-log request was a status poll */
	/* the current transfer */
	double seg;            /* its start, < 0: unknown */
	double base_at, base;  /* its first percentage above 0 and its time;
				  base < 0: none yet */
	double best;           /* its highest percentage, < 0: none yet */
	double end;            /* the task's estimated end, < 0: none */
};

void task_sched_init(struct task_sched *s, double first_s, double max_s);
/* A log read at time now brought `lines` new lines, `progress` of them
 * with a percentage, the last of those at percent. */
void task_sched_log(struct task_sched *s, double now, unsigned lines, unsigned progress,
		    double percent);
/* The log read before the next task_sched_log brought a percentage
 * lower than the one before it (a next transfer began within the read,
 * which its last percentage alone may not show): the transfer's start and
 * rate are unknown until its next percentage. */
void task_sched_restart(struct task_sched *s);
/* The delay before the next request, the previous one (or the start) at
 * time now. *status is set when it should be a status poll. */
double task_sched_next(struct task_sched *s, double now, bool *status);

/* The newest task of type for guest vmid in node's task list (GET
 * /nodes/NODE/tasks, every source) that started at since (unix seconds)
 * or later, and with ended only once it has ended: 1 with *entry ({upid,
 * starttime, endtime...}; a reference), 2 when it is listed but has not
 * ended, 0 when none is listed (yet), -1 with err. One request: the
 * callers poll it. */
int task_find_newest(struct pve *c, const char *node, const char *type, int vmid,
		     long long since, bool ended, json_object **entry, struct pve_error *err);

typedef void (*task_progress_fn)(void *ctx, const struct task_progress *p);

struct task_wait_opts {
	double timeout_s;        /* give up waiting after this; 0: 1800; < 0: never */
	double first_poll_s;     /* the first request; 0: 1.0 */
	double max_poll_s;       /* the longest gap while the log shows no
				    progress; 0: 2.0 */
	double grace_s;          /* a status 400/404, or a log PVE cannot open,
				    this soon after the wait began means "not
				    visible yet"; 0: 10 */
	unsigned tail_lines;     /* log lines kept for a failure; 0: 12 */
	const struct pve_clock *clock;  /* NULL: real time */
	task_progress_fn progress;      /* called for progress lines, may be NULL */
	void *progress_ctx;
	bool attach;             /* the task may have run before the wait began
				    (re-attaching to a recorded UPID): no rate
				    is counted from the wait's start */
};

struct task_result {
	char *exitstatus;        /* "OK", "WARNINGS: 2", or the error text */
	int warnings;            /* n of "WARNINGS: n" */
	char **warning_lines;    /* the "WARN:"/"WARNING:" lines (at most 100) */
	size_t n_warning_lines;
	long downtime_ms;        /* -1 if the log had none */
	long duration_s;         /* migration duration, -1 if none */
	double speed;            /* migration average bytes/s, -1 if none */
	double transferred;      /* migration VM-state bytes, -1 if none */
	double elapsed_s;        /* time spent waiting */
	unsigned polls;          /* status requests made */
	unsigned log_reads;      /* log requests made (pages included) */
};
void task_result_free(struct task_result *r);

/* Is exitstatus a success ("OK" or "WARNINGS: n")? Sets *warnings. */
bool task_exit_ok(const char *exitstatus, int *warnings);

/* Wait until the task stops, on the task_sched schedule (first_poll_s,
 * max_poll_s): log reads from the last line seen, each page passed to
 * opts->progress, ending when the log's last line is PVE's "TASK ..." line
 * (the exit status is read from it as PVE does); the status polls of a
 * silent log end it too, and then the rest of the log is read. Never more
 * than one request at a time. Returns 0 when it ended with OK or WARNINGS
 * (the warning lines are logged as warnings and returned in res).
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
