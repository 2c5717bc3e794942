/* gfedit.c - the transactional editor of a guest's files (gfedit.h):
 * read, plan, atomic write with backups, verify, and the rollback that
 * puts every written file back. */
#include "gfedit.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "json.h"
#include "log.h"
#include "util.h"

const char *gfile_state_name(enum gfile_state s)
{
	switch (s) {
	case GF_UNCHANGED: return "unchanged";
	case GF_PENDING: return "pending";
	case GF_WRITTEN: return "written";
	case GF_RESTORED: return "restored";
	case GF_FAILED: return "failed";
	case GF_DIRTY: return "dirty";
	}
	return "?";
}

static void emit(const struct gfedit *e, enum job_ev_kind kind, const char *step,
		 const char *path, const char *text)
{
	if (!e->on_event)
		return;
	struct job_event ev = {.kind = kind, .step = step, .path = path, .text = text,
			       .percent = -1};
	e->on_event(e->event_ctx, &ev);
}

struct gfile *gfedit_find(const struct gfedit *e, const char *path)
{
	for (size_t i = 0; i < e->n_files; i++)
		if (strcmp(e->files[i].path, path) == 0)
			return &e->files[i];
	return NULL;
}

struct gfile *gfedit_add(struct gfedit *e, const char *path, const char *why)
{
	struct gfile *f = gfedit_find(e, path);
	if (!f) {
		struct gfile *v = realloc(e->files, (e->n_files + 1) * sizeof *v);
		if (!v)
			return NULL;
		e->files = v;
		f = &v[e->n_files];
		memset(f, 0, sizeof *f);
		if (!(f->path = strdup(path)) || !(f->why = strdup(why))) {
			free(f->path);
			free(f->why);
			return NULL;
		}
		e->n_files++;
		return f;
	}
	if (!strstr(f->why, why)) {
		char *w = strprintf("%s, %s", f->why, why);
		if (!w)
			return NULL;
		free(f->why);
		f->why = w;
	}
	return f;
}

int gfedit_fail(struct gfedit *e, const char *step, const char *path,
		const struct ssh_error *se, const char *fmt, ...)
{
	if (e->error)
		return -1;
	e->failed_step = step;
	if (path)
		e->failed_path = strdup(path);
	struct sbuf b = {0};
	int bad = sbuf_add(&b, step) < 0;
	if (path)
		bad |= sbuf_addf(&b, " %s", path) < 0;
	bad |= sbuf_add(&b, ": ") < 0;
	va_list ap;
	va_start(ap, fmt);
	bad |= sbuf_vaddf(&b, fmt, ap) < 0;
	va_end(ap);
	if (se && se->kind != SSH_OK) {
		bad |= sbuf_addf(&b, "%s%s", b.len && b.s[b.len - 1] != ' ' ? ": " : "",
				 ssh_error_str(se)) < 0;
		e->ssh_kind = se->kind;
	}
	e->error = bad ? strdup("out of memory") : sbuf_steal(&b);
	sbuf_free(&b);
	/* connect/auth/config problems before anything changed keep the SSH
	 * layer's outcome; everything else is a plain failure. */
	bool before = strcmp(step, "connect") == 0 || strcmp(step, "detect") == 0 ||
		      strcmp(step, "read") == 0;
	e->outcome = se && se->kind != SSH_OK && before ? ssh_error_outcome(se) : JOB_OUT_FAILED;
	return -1;
}

int gfedit_read(struct gfedit *e, struct ssh_session *s)
{
	for (size_t i = 0; i < e->n_files; i++) {
		struct gfile *f = &e->files[i];
		struct ssh_error se = {0};
		size_t len = 0;
		free(f->old_text);
		f->old_text = NULL;
		f->existed = false;
		if (ssh_read_file(s, f->path, &f->old_text, &len, NULL, &se) == 0) {
			f->existed = true;
			if (strlen(f->old_text) != len)
				return gfedit_fail(e, "read", f->path, NULL,
						   "holds a NUL byte; not a text file");
		} else if (se.kind != SSH_ERR_NOENT) {
			gfedit_fail(e, "read", f->path, &se, "cannot read");
			ssh_error_clear(&se);
			return -1;
		}
		ssh_error_clear(&se);
		char *bak = strprintf("%s%s", f->path, SSH_BACKUP_SUFFIX);
		if (!bak)
			return gfedit_fail(e, "read", f->path, NULL, "out of memory");
		struct ssh_stat st;
		f->had_backup = ssh_stat(s, bak, &st, &se) == 0;
		int rc = 0;
		if (!f->had_backup && se.kind != SSH_ERR_NOENT)
			rc = gfedit_fail(e, "read", bak, &se, "cannot stat");
		ssh_error_clear(&se);
		free(bak);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int gfedit_plan(struct gfedit *e, gfedit_plan_fn fn, void *ctx)
{
	e->n_changed = 0;
	for (size_t i = 0; i < e->n_files; i++) {
		struct gfile *f = &e->files[i];
		char *text = strdup(f->old_text ? f->old_text : "");
		if (!text)
			return gfedit_fail(e, "plan", f->path, NULL, "out of memory");
		if (fn && fn(ctx, e, f, &text) < 0) {
			free(text);
			return -1;
		}
		free(f->new_text);
		free(f->diff);
		f->new_text = text;
		bool same = f->existed ? strcmp(f->old_text, text) == 0 : *text == '\0';
		f->diff = same ? strdup("") : diff_unified(f->old_text, text, f->path);
		if (!f->diff)
			return gfedit_fail(e, "plan", f->path, NULL, "out of memory");
		f->state = same ? GF_UNCHANGED : GF_PENDING;
		if (!same) {
			e->n_changed++;
			emit(e, JOB_EV_DIFF, "plan", f->path, f->diff);
		}
	}
	return 0;
}

int gfedit_write(struct gfedit *e, struct ssh_session *s)
{
	size_t k = 0;
	for (size_t i = 0; i < e->n_files; i++) {
		struct gfile *f = &e->files[i];
		if (f->state != GF_PENDING && !(f->written && f->state == GF_WRITTEN))
			continue;
		k++;
		struct ssh_error se = {0};
		bool changed = false;
		if (ssh_write_file_atomic(s, f->path, f->new_text, strlen(f->new_text),
					  SSH_WRITE_BACKUP, 0644, &changed, &se) < 0) {
			f->state = GF_FAILED;
			gfedit_fail(e, "write", f->path, &se, "file %zu of %zu", k, e->n_changed);
			ssh_error_clear(&se);
			emit(e, JOB_EV_PROGRESS, "write", f->path, "failed");
			return -1;
		}
		f->written = true;
		f->state = GF_WRITTEN;
		emit(e, JOB_EV_PROGRESS, "write", f->path, "written");
	}
	return 0;
}

int gfedit_verify(struct gfedit *e, struct ssh_session *s)
{
	for (size_t i = 0; i < e->n_files; i++) {
		struct gfile *f = &e->files[i];
		if (!f->written)
			continue;
		char *back = NULL;
		size_t len = 0;
		struct ssh_error se = {0};
		if (ssh_read_file(s, f->path, &back, &len, NULL, &se) < 0) {
			f->state = GF_FAILED;
			gfedit_fail(e, "verify", f->path, &se, "cannot read back");
			ssh_error_clear(&se);
			return -1;
		}
		bool ok = len == strlen(f->new_text) && memcmp(back, f->new_text, len) == 0;
		free(back);
		if (!ok) {
			f->state = GF_FAILED;
			return gfedit_fail(e, "verify", f->path, NULL,
					   "reads back different from what was written");
		}
	}
	return 0;
}

/* ---- the rollback ------------------------------------------------------------------ */

static bool transport_lost(enum ssh_err_kind k)
{
	return k == SSH_ERR_CONNECT || k == SSH_ERR_TIMEOUT;
}

/* Put back one file; 0 or -1 with *se. */
static int restore_one(struct ssh_session *s, const struct gfile *f, struct ssh_error *se)
{
	if (f->written) {
		if (f->existed) {
			if (ssh_write_file_atomic(s, f->path, f->old_text, strlen(f->old_text), 0, 0,
						  NULL, se) < 0)
				return -1;
		} else if (ssh_remove(s, f->path, se) < 0) {
			return -1;
		}
	}
	if (!f->had_backup) {
		char *bak = strprintf("%s%s", f->path, SSH_BACKUP_SUFFIX);
		if (!bak) {
			se->kind = SSH_ERR_IO;
			return -1;
		}
		int rc = ssh_remove(s, bak, se);
		free(bak);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Drop a lost session and connect again. */
static int reconnect(struct ssh_session **s, bool *own, const struct ssh_opts *ssh,
		     struct ssh_error *ce)
{
	if (*own)
		ssh_close(*s); /* a broken caller session is left to the caller */
	*s = NULL;
	*own = false;
	ssh_error_clear(ce);
	if (!ssh) {
		ce->kind = SSH_ERR_CONFIG;
		ce->msg = strdup("the connection was lost and no SSH options were given to reconnect");
		return -1;
	}
	if (ssh_connect(ssh, s, ce) < 0) {
		*s = NULL;
		return -1;
	}
	*own = true;
	log_info("reconnected to %s for the rollback", ssh_session_target(*s));
	return 0;
}

/* A connection lost in the middle of a write can leave PATH.pvagent.tmp.*
 * (never used by the guest; the next write removes it): remove it now so
 * the tree is as it was. Best effort; the path reaches the shell quoted. */
static void remove_stale_temps(struct ssh_session *s, const char *path)
{
	static const char script[] =
		"sh -c 'rm -f -- \"$1\"" SSH_TEMP_INFIX "* \"$1\"" SSH_BACKUP_SUFFIX SSH_TEMP_INFIX
		"*' sh %s";
	const char *args[] = {path, NULL};
	struct ssh_result out = {0};
	struct ssh_error se = {0};
	if (ssh_exec_script(s, script, args, &out, &se) < 0 || out.exit_status != 0)
		log_debug("could not remove temp files of %s: %s", path,
			  se.kind != SSH_OK ? ssh_error_str(&se) : sbuf_str(&out.err));
	ssh_result_free(&out);
	ssh_error_clear(&se);
}

int gfedit_restore(struct gfedit *e, struct ssh_session **s, bool *own,
		   const struct ssh_opts *ssh)
{
	struct sbuf msg = {0};
	int bad = 0;
	size_t restored = 0, dirty = 0;
	struct ssh_error ce = {0};
	bool reconnected = false;
	if (!*s || transport_lost(e->ssh_kind)) {
		/* the session is gone: reconnect to put the files back */
		reconnected = true;
		reconnect(s, own, ssh, &ce);
	}
	for (size_t n = e->n_files; n > 0; n--) {
		struct gfile *f = &e->files[n - 1];
		if (!f->written && f->state != GF_FAILED)
			continue;
		struct ssh_error se = {0};
		int rc = *s ? restore_one(*s, f, &se) : -1;
		if (rc < 0 && *s && transport_lost(se.kind) && !reconnected) {
			/* the failure left the session unusable after all */
			reconnected = true;
			ssh_error_clear(&se);
			if (reconnect(s, own, ssh, &ce) == 0)
				rc = restore_one(*s, f, &se);
		}
		if (rc == 0 && reconnected && f->state == GF_FAILED)
			remove_stale_temps(*s, f->path);
		const char *why = *s ? ssh_error_str(&se) : ssh_error_str(&ce);
		if (rc == 0) {
			if (f->written) {
				f->state = GF_RESTORED;
				f->written = false;
				restored++;
				emit(e, JOB_EV_PROGRESS, "rollback", f->path, "restored");
			}
		} else if (f->written) {
			f->state = GF_DIRTY;
			dirty++;
			bad |= sbuf_addf(&msg, "\n%s is changed and could not be restored (%s); "
					 "the original is in %s%s", f->path, why, f->path,
					 SSH_BACKUP_SUFFIX) < 0;
			emit(e, JOB_EV_PROGRESS, "rollback", f->path, "dirty");
		} else {
			/* only a backup this edit may have made is left behind */
			bad |= sbuf_addf(&msg, "\nnote: could not remove %s%s (%s)", f->path,
					 SSH_BACKUP_SUFFIX, why) < 0;
		}
		ssh_error_clear(&se);
	}
	ssh_error_clear(&ce);
	char *old = e->error;
	const char *sep = old ? "; " : "";
	if (dirty) {
		e->partial = true;
		e->outcome = JOB_OUT_NEEDS_ATTENTION;
		e->error = strprintf("%s%srollback failed for %zu file%s:%s", old ? old : "", sep,
				     dirty, dirty == 1 ? "" : "s",
				     bad ? " (out of memory)" : sbuf_str(&msg));
	} else {
		e->error = strprintf("%s%s%s%s", old ? old : "", sep,
				     restored ? "every file written was restored"
					      : "no file was changed",
				     bad ? "" : sbuf_str(&msg));
	}
	if (e->error)
		free(old);
	else
		e->error = old;
	sbuf_free(&msg);
	char *sum = strprintf("%zu restored, %zu not restored", restored, dirty);
	log_debug("rollback: %s", sum ? sum : "");
	emit(e, JOB_EV_STEP, "rollback", NULL, sum);
	free(sum);
	return dirty ? -1 : 0;
}

/* ---- the journal -------------------------------------------------------------------- */

json_object *gfedit_json(const struct gfedit *e)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < e->n_files; i++) {
		const struct gfile *f = &e->files[i];
		json_object *o = json_object_new_object();
		if (!o || json_object_array_add(a, o) < 0) {
			json_object_put(o);
			json_object_put(a);
			return NULL;
		}
		int bad = json_add_str(o, "path", f->path) < 0;
		bad |= json_add_str(o, "why", f->why) < 0;
		bad |= json_add(o, "existed", json_object_new_boolean(f->existed)) < 0;
		bad |= json_add(o, "had_backup", json_object_new_boolean(f->had_backup)) < 0;
		bad |= json_add(o, "written", json_object_new_boolean(f->written)) < 0;
		bad |= json_add_str(o, "old", f->old_text) < 0;
		bad |= json_add_str(o, "new", f->new_text) < 0;
		bad |= json_add_str(o, "diff", f->diff) < 0;
		bad |= json_add(o, "state", json_object_new_int(f->state)) < 0;
		if (bad) {
			json_object_put(a);
			return NULL;
		}
	}
	return a;
}

static int dup_member(json_object *o, const char *k, char **out)
{
	const char *v = json_str(o, k);
	*out = v ? strdup(v) : NULL;
	return v && !*out ? -1 : 0;
}

int gfedit_from_json(struct gfedit *e, json_object *a)
{
	if (!json_object_is_type(a, json_type_array))
		return -1;
	e->n_changed = 0;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *o = json_object_array_get_idx(a, i);
		const char *path = json_str(o, "path"), *why = json_str(o, "why");
		struct gfile *f = path ? gfedit_add(e, path, why ? why : "") : NULL;
		if (!f)
			return -1;
		long long st = 0;
		json_object *b = NULL;
		f->existed = json_object_object_get_ex(o, "existed", &b) && json_object_get_boolean(b);
		f->had_backup = json_object_object_get_ex(o, "had_backup", &b) &&
				json_object_get_boolean(b);
		f->written = json_object_object_get_ex(o, "written", &b) && json_object_get_boolean(b);
		if (json_int(o, "state", &st) && st >= GF_UNCHANGED && st <= GF_DIRTY)
			f->state = (enum gfile_state)st;
		if (dup_member(o, "old", &f->old_text) < 0 || dup_member(o, "new", &f->new_text) < 0 ||
		    dup_member(o, "diff", &f->diff) < 0)
			return -1;
		e->n_changed += f->state != GF_UNCHANGED;
	}
	return 0;
}

void gfedit_free(struct gfedit *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n_files; i++) {
		struct gfile *f = &e->files[i];
		free(f->path);
		free(f->why);
		free(f->old_text);
		free(f->new_text);
		free(f->diff);
	}
	free(e->files);
	free(e->failed_path);
	free(e->error);
	job_event_fn fn = e->on_event;
	void *ctx = e->event_ctx;
	memset(e, 0, sizeof *e);
	e->on_event = fn;
	e->event_ctx = ctx;
}
