/* inject.h - guest-side setup over SSH: the guest's files and host name
 * as its template asks (inject.c), through the transactional editor
 * (gfedit.h) after the OS detection (osdetect.h).
 *
 * Phases, each a step of the inject workflow (wf_inject.c; up's inject
 * step runs an inject job), each an engine event (event.h: JOB_EV_STEP
 * with the phase as step):
 *   connect   open an SSH session
 *   detect    guest_os_detect(); a template's [template] os that is not
 *             the guest's is refused; no virtio profile is a note
 *   read      every file the template and the hostname touch (the file
 *             sections: [loader.conf], [rc.conf], [sysctl.conf], [file
 *             "/path"]; the hostname: FreeBSD /etc/rc.conf, Linux
 *             /etc/hostname and /etc/hosts), gfedit_read
 *   plan      each file's new text: the template's sections (rw_kv_ensure,
 *             NAME=VALUE lines, whole lines) in template order, the
 *             hostname last; a unified diff per changed file
 *   write     (not with dry_run) gfedit_write: atomic, with backups
 *   verify    every written file read back
 *   rollback  after a failed write or verify, gfedit_restore: every file
 *             as it was (in the workflow: the undo of write)
 *
 * Safety: values never reach a shell. Files travel over SFTP; the
 * detection commands are fixed strings; the one other command (after a
 * connection lost mid-write, the rollback removes FILE.pvagent.tmp.*)
 * passes the path through ssh_quote(). The guest name must be a host
 * name (letters, digits, '-', '.'); template values were checked by tmpl
 * (no control characters; none of " \ ` $ in [rc.conf]/[loader.conf]).
 * Running inject twice changes nothing the second time (status
 * INJ_UNCHANGED). */
#ifndef PVAGENT_INJECT_H
#define PVAGENT_INJECT_H

#include <stdbool.h>
#include <stddef.h>

#include "conf.h"
#include "event.h"
#include "gfedit.h"
#include "osdetect.h"
#include "outcome.h"
#include "ssh.h"
#include "tmpl.h"

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
/* The status a name says: 0, or -1 for no such name. */
int inject_status_parse(const char *s, enum inject_status *out);

struct inject_result {
	enum inject_status status;
	struct guest_os guest;    /* what detect found */
	struct gfedit ed;         /* the files, and the failure: its step,
				     path, error, SSH error and outcome
				     (done when it worked) */
};
void inject_result_free(struct inject_result *res);

struct inject_request {
	const char *name;            /* guest name for the hostname; NULL:
					leave the hostname alone */
	const struct tmpl_inst *inst; /* expanded template (files); may be NULL */
	const char *expect_os;       /* the template's [template] os; when set,
					a different detected OS id is refused
					at detect */
	bool dry_run;
	job_event_fn on_event;       /* the phases' events; may be NULL */
	void *event_ctx;
};

/* The phases one at a time (the workflow's steps): each 0, or -1 with the
 * failure in res->ed. detect on session s; collect adds to res->ed the
 * files the template and the hostname touch (after detect: the OS decides
 * the hostname's files), to be read with gfedit_read; plan gives each
 * file of the read its wanted text. */
int inject_detect(const struct inject_request *q, struct ssh_session *s,
		  struct inject_result *res);
int inject_collect(const struct inject_request *q, struct inject_result *res);
int inject_plan(const struct inject_request *q, struct inject_result *res);
/* The summary of a phase that ended, for its step event ("FreeBSD
 * 9.0-RELEASE", "4 files", "2 of 4 files to change", "2 files written",
 * "2 files read back"); malloc'd. */
char *inject_phase_summary(const char *phase, const struct inject_result *res);
/* status and outcome once the phases ran (or one failed). */
void inject_result_finish(struct inject_result *res, const struct inject_request *q, int rc);

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
