/* pvagentd_int.h - what pvagentd's own files share (internal to the
 * daemon, as vmd.h is to vmd): the daemon's state, its job table's items
 * and connections, and the functions one file of it calls in another.
 *
 *   pvagentd.c     main: options, startup, the store's lock, logging
 *   djob.c         the job table: queued and running items, their
 *                  children's events, the store's jobs resumed and pruned
 *   control.c      the control socket: connections, the requests (ctl.h)
 *   maintenance.c  the maintenance windows: their drains and undrains
 *   config.c       the configuration (load, --check, reload), the
 *                  signals, stopping
 *   loop.c         the one event loop (poll) */
#ifndef PVAGENT_PVAGENTD_INT_H
#define PVAGENT_PVAGENTD_INT_H

#include "conf.h"
#include "ctl.h"
#include "ctl_server.h"
#include "jobproc.h"
#include "jobq.h"
#include "metrics.h"
#include "store.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <time.h>

struct dconn {
	struct ctl_conn c;
	bool counted;                /* against [daemon] max_clients */
	struct dconn *next;
};

/* A message that may come in a flood (a peer's connections, the fd
 * limit): said at once, then at most once per LOG_EVERY_S (control.c)
 * with how many times it came meanwhile. */
struct lograte {
	double next;                 /* monotonic: when it may be said again */
	unsigned long held;          /* times it came since it was said */
};

struct watcher {
	struct dconn *conn;
	json_object *id;     /* the request's id */
};

/* One job the daemon runs (a queue item's data): its child runs
 * `pvagent resume ID`, never a command line a peer gave. A submitted job
 * is stored when it starts, so that each submission is a request of its
 * own, taken in order: its child, `pvagent submitted WF SUBJECT` with
 * the params on its stdin, stores it (job_submit), says so first of all
 * (a "stored" event with its ID), then runs it as resume does. */
struct djob {
	struct jobq_item *it;
	char *what;                  /* "up web1" for messages */
	char *subject;
	json_object *params;         /* submitted: for its child to store */
	bool json, tty;
	int columns;           /* the client terminal's width (tty), or 0 */
	int verbosity;
	long long resume_id;         /* the job (0: not stored yet) */
	uid_t owner;                 /* the peer that submitted or resumed it; the
					daemon's user for its own (windows, start-up) */
	struct jobproc proc;
	bool started, exited, cancel, killed;
	bool refused;                /* its child stored a job another item has:
					killed, its output and events dropped */
	int code;                    /* exit code once exited */
	struct ctl_lines evin;
	long long *jobs;             /* store jobs its events named */
	size_t n_jobs;
	char *workflow;              /* from its events */
	struct watcher *w;
	size_t n_w;
	double queued_at, started_at;
};

struct daemon {
	const char *conf_path;
	struct conf conf;
	struct store *store;
	int lock_fd;
	struct ctl_listener lis;
	struct jobq q;
	struct dconn *conns;
	unsigned n_clients;          /* connections counted against max_clients */
	bool accept_paused;          /* at the fd limit: until an fd closes */
	struct lograte log_refused, log_busy, log_accept;
	int sig_fd;
	double started_at;           /* unix */
	bool stopping;
	double stop_deadline;        /* monotonic */
	double next_prune;           /* monotonic */
	char *bin;
	struct metrics m;
	bool foreground;
	/* per [window] of conf: the occurrence drained (its start) and, until
	 * its undrain is queued, its end */
	struct dwin {
		char *name;
		time_t drained, end;
	} *win;
	size_t n_win;
};

/* djob.c: the job table */
struct djob *djob_queue(struct daemon *d, long long id, const char *wf, const char *subject,
			const char *node, json_object *params, char **err);
void djob_free(struct djob *j);
struct djob *find_by_job(struct daemon *d, long long id);
int add_watcher(struct djob *j, struct dconn *c, json_object *id);
json_object *djob_json(const struct djob *j);
void schedule(struct daemon *d);
void tell(struct djob *j, const char *text);
void tell_waiting(struct daemon *d, struct djob *j);
void end_djob(struct daemon *d, struct djob *j);
void on_child_fd(struct daemon *d, struct djob *j, int *fd);
void reap(struct daemon *d);
void resume_all(struct daemon *d);
/* Store job id is j's: its owner (the peer policy's, kept in the store
 * across restarts) is j's. */
void djob_own(struct daemon *d, const struct djob *j, long long id);
void prune_jobs(struct daemon *d);

/* control.c: the control socket's connections and requests */
void on_accept(struct daemon *d);
void on_conn_readable(struct daemon *d, struct dconn *c);
void sweep_conns(struct daemon *d);
void conn_drop(struct daemon *d, struct dconn *c);

/* maintenance.c: the maintenance windows */
int windows_sync(struct daemon *d);
double windows_tick(struct daemon *d);

/* config.c: configuration, signals, stopping */
int config_load(struct daemon *d);
int config_check(struct daemon *d);
void on_signal(struct daemon *d);
void kill_overdue(struct daemon *d);

/* loop.c: the event loop, until stopped: 0, or 1 (said) */
int daemon_loop(struct daemon *d);

#endif
