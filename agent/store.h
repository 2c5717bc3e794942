/* store.h - state.db, the one SQLite database under [paths] state: jobs,
 * their steps and events (job.h), bench results (bench.h), and the schema
 * version with its migrations. WAL mode and a busy timeout. Every commit
 * survives a crash of pvagent (the WAL is written before it returns);
 * synchronous=NORMAL leaves the fsync to the checkpoints, except for a
 * durable transaction (store_tx_begin), which is on disk before its commit
 * returns: the engine marks a step "sent" so, before the request goes out,
 * so that even a power loss cannot make it send that request twice.
 *
 * Tables (readable with sqlite3; agent/README.md "The store" documents them):
 *   meta(key PRIMARY KEY, value)          key 'schema_version'
 *   jobs(id, workflow, subject, params, vars, state, created, started,
 *        ended, error, pid)
 *   steps(job, idx, name, state, upid, attempts, result, error, started,
 *         ended)                          PRIMARY KEY (job, idx)
 *   events(id, job, time, step, kind, percent, message)
 *   bench(id, guest, vmid, ts, bus, nic, size_mib, figures, notes)
 * and, beside the database, one lock file per running job (below).
 *
 * One struct store may be used by several threads (the connection is
 * opened in serialized mode). Functions return 0 on success and -1 on
 * failure with *err (malloc'd, naming the file) set, unless documented
 * otherwise. Times are unix seconds (double). */
#ifndef PVAGENT_STORE_H
#define PVAGENT_STORE_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

#define STORE_SCHEMA_VERSION 5

struct store;

/* "<state_dir>/state.db" (malloc'd; NULL when out of memory). */
char *store_path(const char *state_dir);
/* Open (creating the file and state_dir when missing) and migrate to
 * STORE_SCHEMA_VERSION. A database newer than this program is refused. */
int store_open(const char *path, struct store **out, char **err);
void store_close(struct store *s);
/* The connection, for modules with tables of their own (bench). */
sqlite3 *store_db(struct store *s);
const char *store_file(const struct store *s);
int store_schema_version(struct store *s, int *version, char **err);

/* Group writes into one commit: the writes between begin and commit land
 * together or not at all, and no other thread's write comes between them.
 * durable: synced to disk (fsync) before store_tx_commit returns. */
int store_tx_begin(struct store *s, bool durable, char **err);
int store_tx_commit(struct store *s, char **err);

/* ---- jobs ---------------------------------------------------------------- */

enum job_state {
	JOB_QUEUED = 0,
	JOB_RUNNING,
	JOB_INTERRUPTED,   /* stopped between steps (signal, crash): resumable */
	JOB_DONE,
	JOB_FAILED,        /* failed, nothing left half-done */
	JOB_NEEDS_ATTENTION, /* failed and left something: see the error */
	JOB_CANCELLED,
};
const char *job_state_name(enum job_state s);     /* "queued", ... */
int job_state_parse(const char *s, enum job_state *out);
/* Not finished: queued, running, interrupted, or needing attention (a
 * rerun or `pvagent resume` continues it). */
bool job_state_open(enum job_state s);

struct store_job {
	long long id;
	char *workflow;    /* "up", "down", "virtio", ... */
	char *subject;     /* what it works on: the guest name */
	char *params;      /* JSON object: the request */
	char *vars;        /* JSON object: what the steps learned */
	enum job_state state;
	double created, started, ended; /* 0: not yet */
	char *error;       /* JSON object (err_to_json) or NULL */
	long pid;          /* process running it, 0 when none */
	long long owner;   /* the uid of pvagentd's peer that submitted or last
			      resumed it (pvagentd(8)'s peer policy), or -1:
			      none recorded (run by pvagent itself: the
			      daemon's user's) */
};
void store_job_free(struct store_job *j);
void store_jobs_free(struct store_job *v, size_t n);

/* ---- the job lock ----------------------------------------------------------
 *
 * A process running a job holds its lock: an open file description lock
 * (fcntl F_OFD_SETLK, as flock it belongs to the open file, not to the
 * process) on "<state dir>/job-ID.lock" (opened close-on-exec), with the
 * holder's pid in the file. The kernel drops it when the process dies, so
 * a killed process, its zombie, a pid used again by another process or a
 * reboot never make a job look alive. "Is it running?" is asked of the
 * lock (F_OFD_GETLK: asked without taking it, so that asking never makes
 * a job starting then fail), never of the pid stored in the jobs row
 * (which only says who ran it last). The holder removes the file when it
 * lets go. */
struct store_job_lock;

/* Take job id's lock: 1 taken (*out), 0 another holder has it (*holder
 * its pid, 0 when unknown), -1 error (*err). */
int store_job_lock(struct store *s, long long id, struct store_job_lock **out, long *holder,
		   char **err);
/* Let go of it (and remove its file); NULL is fine. */
void store_job_unlock(struct store_job_lock *l);
/* Is job id's lock held: 1 yes (*holder its pid, 0 unknown), 0 no, -1
 * error. Held by this process counts as held. */
int store_job_running(struct store *s, long long id, long *holder, char **err);
/* Send sig to the process that holds job id's lock, checked at the moment
 * of sending: the signal goes through a pidfd opened on the pid the lock
 * file names, and only while that file, still locked, names the same
 * pid, so a process that took the pid of a dead holder is never signalled.
 * 1 sent (*holder), 0 not running (nothing sent), -1 error. */
int store_job_signal(struct store *s, long long id, int sig, long *holder, char **err);
/* Can this job be resumed now: interrupted, queued, needing attention or
 * "running" (stored) while no process holds its lock? -1 on error. */
int store_job_resumable(struct store *s, const struct store_job *j, long *holder, char **err);

int store_job_insert(struct store *s, const char *workflow, const char *subject,
		     const char *params, double now, long long *id, char **err);
/* Write state, vars, error (NULL: none), times and pid of j->id. */
int store_job_update(struct store *s, const struct store_job *j, char **err);
/* 1 found, 0 no such job, -1 error. */
int store_job_get(struct store *s, long long id, struct store_job *out, char **err);
/* Record uid as the owner of job id (pvagentd: the peer whose request
 * runs it). 0, or -1 with *err; no such job is not an error. */
int store_job_set_owner(struct store *s, long long id, long long uid, char **err);
/* 1 when job id was given once and pruned since (IDs are never given
 * again), 0 when not, -1 on error. */
int store_job_pruned(struct store *s, long long id, char **err);
/* The newest unfinished job (job_state_open) of this workflow and
 * subject: 1, 0, -1. */
int store_job_find_open(struct store *s, const char *workflow, const char *subject,
			struct store_job *out, char **err);
/* The newest jobs first, at most limit (0: 50). */
int store_jobs_list(struct store *s, size_t limit, struct store_job **out, size_t *n,
		    char **err);
/* The same from the jobs older than job before (0: from the newest): the
 * next page starts before the last ID of this one. */
int store_jobs_page(struct store *s, long long before, size_t limit, struct store_job **out,
		    size_t *n, char **err);
/* Every unfinished job (job_state_open), oldest first. */
int store_jobs_unfinished(struct store *s, struct store_job **out, size_t *n, char **err);
/* The jobs whose params name job parent as theirs ("parent": a drain's
 * migrations, a rolling run's per-node jobs), oldest first. */
int store_jobs_children(struct store *s, long long parent, struct store_job **out, size_t *n,
			char **err);
/* Delete the finished jobs (done, failed, cancelled) that ended before
 * older_than (unix seconds) or are not among the newest keep_max finished
 * ones (0: no count limit), with their steps and events, in one commit;
 * *pruned: how many. Unfinished jobs are never deleted. */
int store_jobs_prune(struct store *s, double older_than, size_t keep_max, size_t *pruned,
		     char **err);

/* ---- steps ---------------------------------------------------------------- */

enum step_state {
	STEP_PENDING = 0,
	STEP_RUNNING,      /* begun (and, for a task step, maybe sent) */
	STEP_DONE,
	STEP_SKIPPED,      /* not needed for this job */
	STEP_UNDONE,       /* done, then undone */
	STEP_FAILED,
};
const char *step_state_name(enum step_state s);
int step_state_parse(const char *s, enum step_state *out);

struct store_step {
	int idx;
	char *name;
	enum step_state state;
	char *upid;        /* the task it started, recorded before any wait */
	int attempts;      /* times its task-starting request was sent */
	char *result;      /* summary text */
	char *error;       /* JSON object or NULL */
	double started, ended;
};
void store_steps_free(struct store_step *v, size_t n);

int store_step_put(struct store *s, long long job, const struct store_step *st, char **err);
/* Every step of a job, in index order. */
int store_steps_get(struct store *s, long long job, struct store_step **out, size_t *n,
		    char **err);

/* ---- events ---------------------------------------------------------------- */

struct store_event {
	double time;
	char *step;        /* or NULL */
	char *kind;        /* "begin", "step", "progress", "diff", "note", "done" */
	double percent;    /* < 0: none */
	char *message;     /* or NULL */
};
void store_events_free(struct store_event *v, size_t n);

int store_event_add(struct store *s, long long job, const struct store_event *ev, char **err);
int store_events_get(struct store *s, long long job, struct store_event **out, size_t *n,
		     char **err);

#endif
