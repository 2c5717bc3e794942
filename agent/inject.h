/* inject.h - `pvagent inject NAME [--dry-run]`: guest-side setup over SSH.
 *
 * Steps (each reported by an event, each named in a failure):
 *   connect   open an SSH session (or use the caller's)
 *   detect    run osprof_detect_cmds (uname -sr, freebsd-version -k,
 *             cat /etc/os-release, lsb_release -a; a command missing on the
 *             other OS is normal), osprof_detect(), osprof_for()
 *   read      read every file the template and the hostname touch (SFTP),
 *             and note which FILE.pvagent.bak already exist
 *   plan      compute each file's new text: the template's file sections
 *             ([loader.conf], [rc.conf] via rw_kv_ensure; [sysctl.conf]
 *             NAME=VALUE lines; [file "/path"] whole lines) and the hostname
 *             (FreeBSD: rc.conf hostname="NAME"; Linux: /etc/hostname and
 *             the 127.0.1.1 line of /etc/hosts); edits of one path are
 *             merged in template order, the hostname last; a unified diff
 *             per changed file
 *   write     (not with dry_run) each changed file with
 *             ssh_write_file_atomic(SSH_WRITE_BACKUP): temp file, fsync,
 *             rename, original owner and mode, FILE.pvagent.bak kept once
 *   verify    read every written file back and compare
 *   rollback  only after a failed write or verify: every file written in
 *             this run gets its content from the read step back (a file
 *             that did not exist is removed) and backups this run created
 *             are removed, so every file is as it was. If the connection
 *             was lost, rollback reconnects with req->ssh first.
 *
 * Safety: values never reach a shell. Files travel over SFTP; the
 * detection commands are fixed strings; the one other command (after a
 * connection lost mid-write, the rollback removes FILE.pvagent.tmp.*)
 * passes the path through ssh_quote(). The guest name must be a host
 * name (letters, digits, '-', '.'); template values were checked by tmpl
 * (no control characters; none of " \ ` $ in [rc.conf]/[loader.conf]).
 * Running inject twice changes nothing the second time (status
 * INJ_UNCHANGED).
 *
 * With neither name nor inst, inject_run only connects and detects: the
 * OS, its profile and the raw facts land in the result, for other
 * guest-side workflows (virtio, bench) to reuse.
 *
 * Callers:
 *   CLI (`pvagent inject NAME [--dry-run]`): find the guest and its
 *   address (guest.h), load and expand its template (the description
 *   carries "pvagent template NAME": inject_template_from_description),
 *   fill ssh options with inject_ssh_opts(), call inject_run(), print the
 *   INJ_EV_DIFF texts (dry run) and the result, exit with the exit code
 *   of res.outcome.
 *   provision (`up`, template with a [guest] section): after the guest
 *   answers SSH, same call with the expanded tmpl_inst and the guest's
 *   name; pass an open session if it has one (req.session) and the ssh
 *   options anyway (rollback reconnects with them). */
#ifndef PVAGENT_INJECT_H
#define PVAGENT_INJECT_H

#include <stdbool.h>
#include <stddef.h>

#include "conf.h"
#include "osprof.h"
#include "outcome.h"
#include "ssh.h"
#include "tmpl.h"

enum inject_step {
	INJ_STEP_CONNECT = 0,
	INJ_STEP_DETECT,
	INJ_STEP_READ,
	INJ_STEP_PLAN,
	INJ_STEP_WRITE,
	INJ_STEP_VERIFY,
	INJ_STEP_ROLLBACK,
};
/* "connect", "detect", "read", "plan", "write", "verify", "rollback". */
const char *inject_step_name(enum inject_step s);

enum inject_status {
	INJ_FAILED = 0,     /* failed; every file as it was (outcome failed,
			       usage or unreachable) */
	INJ_CHANGED,        /* files written and verified */
	INJ_UNCHANGED,      /* every file already as wanted */
	INJ_DRY_RUN,        /* nothing written; see n_changed and the diffs */
	INJ_FAILED_PARTIAL, /* failed, and the rollback failed too: some files
			       are changed; the message lists them and their
			       backups (needs attention) */
};
/* "failed", "changed", "unchanged", "dry-run", "failed-partial". */
const char *inject_status_name(enum inject_status s);

enum inject_file_state {
	INJ_FILE_UNCHANGED = 0, /* already as wanted */
	INJ_FILE_PENDING,       /* would change (dry run, or not reached) */
	INJ_FILE_WRITTEN,       /* written and verified */
	INJ_FILE_RESTORED,      /* written, then put back by the rollback */
	INJ_FILE_FAILED,        /* its write or verify failed (left as it was) */
	INJ_FILE_DIRTY,         /* written and could not be put back */
};
/* "unchanged", "pending", "written", "restored", "failed", "dirty". */
const char *inject_file_state_name(enum inject_file_state s);

struct inject_file {
	char *path;        /* "/etc/rc.conf" */
	char *why;         /* what asks for it: "[rc.conf], hostname" */
	bool existed;      /* at the read step */
	bool had_backup;   /* FILE.pvagent.bak existed at the read step */
	char *old_text;    /* content at the read step (NULL: absent) */
	char *new_text;    /* wanted content */
	char *diff;        /* unified diff old -> new ("" when unchanged) */
	enum inject_file_state state;
};

struct inject_result {
	enum inject_status status;
	enum job_outcome outcome; /* done, or what the failure means (outcome.h) */
	struct os_facts facts;    /* detection commands and their output */
	struct os_info os;        /* family OS_UNKNOWN if not detected */
	bool have_profile;        /* osprof_for() gave a profile */
	struct os_profile profile;
	char *os_desc;            /* "FreeBSD 9.0-RELEASE" or NULL */
	struct inject_file *files;
	size_t n_files;
	size_t n_changed;         /* files whose text differs */
	enum inject_step failed_step; /* when status is a failure */
	char *failed_path;        /* the file it failed on, or NULL */
	char *error;              /* one or more lines, or NULL */
	enum ssh_err_kind ssh_kind; /* SSH error behind the failure, or SSH_OK */
};
void inject_result_free(struct inject_result *res);

enum inject_event_kind {
	INJ_EV_STEP, /* a step ended: step, elapsed_s, text (summary); no
			"connect" when the caller gave the session */
	INJ_EV_DIFF, /* a changed file's diff: path, text (unified diff) */
	INJ_EV_FILE, /* a file's outcome: path, text (state name), index/count;
			after each file written, before the next one */
	INJ_EV_NOTE, /* something worth saying: text */
};

struct inject_event {
	enum inject_event_kind kind;
	enum inject_step step;
	const char *path;
	const char *text;
	double elapsed_s;
	size_t index, count;  /* INJ_EV_FILE: 1-based index among changed files */
};

/* Everything in ev is borrowed for the call. */
typedef void (*inject_event_fn)(void *ctx, const struct inject_event *ev);

/* An extra edit: text is the current content (NULL: absent); *out the
 * wanted content (malloc'd; "" or NULL leaves an absent file absent).
 * res holds the detected OS. Return 0, or -1 with *err (malloc'd). */
struct inject_result;
typedef int (*inject_edit_fn)(void *ctx, const struct inject_result *res,
			      const char *path, const char *text, char **out,
			      char **err);

struct inject_request {
	const char *name;            /* guest name for the hostname; NULL:
					leave the hostname alone */
	const struct tmpl_inst *inst; /* expanded template (files); may be NULL */
	const char *expect_os;       /* the template's [template] os; when set,
					a different detected OS id (or family
					for "freebsd") is refused at detect */
	struct ssh_session *session; /* open session to use (not closed), or
					NULL: connect with ssh */
	const struct ssh_opts *ssh;  /* connect (session NULL) and reconnect
					for a rollback; may be NULL when
					session is set (no reconnect then) */
	bool dry_run;
	/* Edits of further files (the virtio conversion): every path of
	 * edit_paths (NULL-terminated, absolute) is read with the others and
	 * edit() gives its wanted text, after the template's sections and
	 * before the hostname; why names the edits in INJ_EV_DIFF reports
	 * ("virtio prepare"). edit_paths NULL: none. */
	const char *const *edit_paths;
	const char *edit_why;
	inject_edit_fn edit;
	void *edit_ctx;
	inject_event_fn on_event;    /* may be NULL */
	void *event_ctx;
};

/* Run inject. Returns 0 when status is INJ_CHANGED, INJ_UNCHANGED or
 * INJ_DRY_RUN, -1 otherwise (res->error says which step and file failed).
 * *res is always filled; free it with inject_result_free. */
int inject_run(const struct inject_request *req, struct inject_result *res);

/* ---- helpers for the CLI and provision ------------------------------------- */

/* One line for humans: "changed: FreeBSD 9.0-RELEASE: /etc/rc.conf,
 * /boot/loader.conf", "unchanged: Ubuntu 24.04.1 LTS: 2 files checked",
 * "dry-run: ...: 1 of 2 files would change: /etc/hosts", "failed: " +
 * error. malloc'd (NULL when out of memory). */
char *inject_result_summary(const struct inject_result *res);

/* The result for --json: {"status", "outcome", "os": {"family", "id",
 * "version", "kernel", "description", "profile"}, "files": [{"path", "why",
 * "state", "existed", "diff"}], "failed_step", "failed_path", "error"}
 * (failed_* and error only on failure). New reference, NULL on ENOMEM. */
struct json_object;
struct json_object *inject_result_json(const struct inject_result *res);

/* SSH options from pvagent.conf [ssh] and the template's [guest] (user,
 * port; inst may be NULL) for a guest address. The strings are borrowed
 * from c, inst and address. -1 (errno EINVAL) without an address or
 * known_hosts. */
int inject_ssh_opts(const struct conf *c, const struct tmpl_inst *inst,
		    const char *address, struct ssh_opts *out);

/* The template name in a guest description written by a shipped
 * template ("web1: FreeBSD 14.1 (pvagent template freebsd-14)" ->
 * "freebsd-14"); malloc'd, NULL (errno 0) when there is none. */
char *inject_template_from_description(const char *description);
/* The public key of [ssh] identity (IDENTITY.pub, first line) for the
 * templates' ${pubkey}; NULL when none is configured or readable. */
char *inject_read_pubkey(const struct conf *c);

/* 0 when name is a usable host name (1..253 chars of letters, digits,
 * '-' and '.', labels 1..63, not starting or ending with '-' or '.'),
 * else -1 with *err (malloc'd). */
int inject_check_hostname(const char *name, char **err);

/* ---- pure transforms (exposed for tests); rewrite.h conventions: new
 * malloc'd *out, input untouched, idempotent, text NULL = absent ---------- */

/* NAME=VALUE lines (sysctl.conf): the last active assignment of each key
 * gets the value (text before the value kept: "key = "), a missing key is
 * appended as KEY=VALUE. */
int inject_kv_ensure(const char *path, const char *text,
		     const struct tmpl_kvlist *kv, char **out, char **err);
/* Whole lines: each value not present as a line (trailing blanks ignored)
 * is appended. */
int inject_lines_ensure(const char *path, const char *text,
			const struct tmpl_kvlist *lines, char **out, char **err);
/* /etc/hosts: the first 127.0.1.1 line becomes "127.0.1.1<ws>NAME" (its own
 * separator kept); without one, "127.0.1.1\tNAME" goes after the last
 * 127.0.0.1 line (or at the end). */
int inject_hosts_set(const char *text, const char *name, char **out);

#endif
