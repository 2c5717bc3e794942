/* gfedit.h - the transactional editor of a guest's files over SSH
 * (gfedit.c), the one inject's steps, up's inject step and virtio use:
 *
 *   read     every file of the set (SFTP), and whether FILE.pvagent.bak
 *            exists already
 *   plan     each file's wanted text from the caller's transform, and a
 *            unified diff of each that changes (a JOB_EV_DIFF event)
 *   write    each changed file with ssh_write_file_atomic(SSH_WRITE_BACKUP):
 *            temp file, fsync, rename, original owner and mode,
 *            FILE.pvagent.bak kept once; a JOB_EV_PROGRESS per file
 *   verify   every written file read back and compared
 *   restore  (the rollback) every file written gets its text from the
 *            read back (one that did not exist is removed) and the backups
 *            this edit made are removed; reconnects when the connection
 *            was lost; what cannot be put back is named with its backup
 *
 * Events are the engine's (event.h) to the set's sink, each naming its
 * phase in step and the file in path. Paths reach a shell only quoted
 * (the stale temp files a lost connection left, ssh_exec_script). The set
 * round-trips through JSON, so that a job's steps in another process
 * go on from the journal in its vars. */
#ifndef PVAGENT_GFEDIT_H
#define PVAGENT_GFEDIT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "event.h"
#include "outcome.h"
#include "ssh.h"

enum gfile_state {
	GF_UNCHANGED = 0, /* already as wanted */
	GF_PENDING,       /* would change (dry run, or not reached) */
	GF_WRITTEN,       /* written and verified */
	GF_RESTORED,      /* written, then put back by the rollback */
	GF_FAILED,        /* its write or verify failed (left as it was) */
	GF_DIRTY,         /* written and could not be put back */
};
/* "unchanged", "pending", "written", "restored", "failed", "dirty". */
const char *gfile_state_name(enum gfile_state s);

struct gfile {
	char *path;        /* "/etc/rc.conf" */
	char *why;         /* what asks for it: "[rc.conf], hostname" */
	bool existed;      /* at the read */
	bool had_backup;   /* FILE.pvagent.bak existed at the read */
	bool written;      /* written by this edit */
	char *old_text;    /* content at the read (NULL: absent) */
	char *new_text;    /* wanted content */
	char *diff;        /* unified diff old -> new ("" when unchanged) */
	enum gfile_state state;
};

struct gfedit {
	struct gfile *files;
	size_t n_files;
	size_t n_changed;         /* files whose text differs */
	/* the first failure */
	const char *failed_step;  /* "read", "plan", "write", "verify", ... */
	char *failed_path;        /* the file it failed on, or NULL */
	char *error;              /* one or more lines, or NULL */
	enum ssh_err_kind ssh_kind; /* SSH error behind the failure, or SSH_OK */
	enum job_outcome outcome;
	bool partial;             /* the rollback left files changed */
	job_event_fn on_event;    /* may be NULL */
	void *event_ctx;
};

/* The file path of the set (added with why, or why added to its list).
 * NULL when out of memory. */
struct gfile *gfedit_add(struct gfedit *e, const char *path, const char *why);
struct gfile *gfedit_find(const struct gfedit *e, const char *path);

/* Record a failure of step (the first one wins; se may be NULL) and
 * return -1. Its message: "STEP[ PATH]: TEXT[: SSH error]". Before the
 * write, an SSH error keeps its outcome (unreachable, ...), else failed. */
int gfedit_fail(struct gfedit *e, const char *step, const char *path,
		const struct ssh_error *se, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

int gfedit_read(struct gfedit *e, struct ssh_session *s);

/* Each file's wanted text: *text starts as its old text ("" when absent)
 * and the transform replaces it (malloc'd); -1 after gfedit_fail. */
typedef int (*gfedit_plan_fn)(void *ctx, struct gfedit *e, const struct gfile *f,
			      char **text);
int gfedit_plan(struct gfedit *e, gfedit_plan_fn fn, void *ctx);

/* Write the pending files (those written already, by an earlier run of
 * the same edit, are written again: the same text changes nothing). */
int gfedit_write(struct gfedit *e, struct ssh_session *s);
int gfedit_verify(struct gfedit *e, struct ssh_session *s);

/* The rollback on *s (own: *s is this caller's to close and replace when
 * it reconnects with ssh; NULL ssh: no reconnect). 0 when every file
 * written is back; -1 when some are not (partial, outcome needs
 * attention). The error gets what happened appended. */
int gfedit_restore(struct gfedit *e, struct ssh_session **s, bool *own,
		   const struct ssh_opts *ssh);

/* The set as JSON (every file with its texts and state) and back. */
json_object *gfedit_json(const struct gfedit *e);
int gfedit_from_json(struct gfedit *e, json_object *o);
void gfedit_free(struct gfedit *e);

#endif
