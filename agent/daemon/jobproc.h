/* jobproc.h - how pvagentd runs a job: the pvagent tool itself runs it,
 * `pvagent --local -c CONF resume ID` for a stored job, or `pvagent
 * --local -c CONF submitted WF SUBJECT` with the params on its stdin for
 * a submitted one (the child stores it and runs it as resume does; the
 * daemon's own arguments, never a peer's), as a child process, so that a
 * job's output, progress and exit code are the tool's own, and its engine
 * events reach the daemon on a pipe (fd 3, PVAGENT_EVENT_FD, in the
 * engine's JSON form, job_event_tap). The child dies with the daemon
 * (PR_SET_PDEATHSIG), leaving its jobs resumable. */
#ifndef PVAGENT_JOBPROC_H
#define PVAGENT_JOBPROC_H

#include <stdbool.h>
#include <sys/types.h>

struct jobproc {
	pid_t pid;
	int out_fd, err_fd, ev_fd;   /* read ends (non-blocking), -1 when closed */
};

struct jobproc_opts {
	const char *bin;        /* the pvagent binary (jobproc_cli_path) */
	const char *conf;       /* the configuration file */
	bool json;              /* --json */
	bool tty;               /* render as on a terminal (PVAGENT_TTY=1);
				   its stderr then goes to its stdout's pipe,
				   in order with the live lines */
	int columns;            /* > 0: that terminal's width ($COLUMNS) */
	int verbosity;          /* -v (> 0) or -q (< 0) times */
	const char *input;      /* its stdin (a submitted job's params); NULL:
				   /dev/null */
};

/* Start the child for argv (the daemon's: "resume", ID, NULL, or
 * "submitted", WF, SUBJECT, NULL).
 * 0, or -1 with *err. */
int jobproc_start(const struct jobproc_opts *o, const char *const *argv, struct jobproc *out,
		  char **err);
/* The pvagent binary: $PVAGENT_BIN, else `pvagent` beside this program,
 * else PVAGENT_CLI (the install path). malloc'd; NULL on OOM. */
char *jobproc_cli_path(void);
/* Close the read ends still open. */
void jobproc_close(struct jobproc *p);

#endif
