/* inject.c - guest-side setup over SSH (inject.h): detect the OS, compute
 * each file's new text from the template's file sections and the hostname,
 * show diffs or write all files atomically, verify by reading back, and
 * roll every file back when any step fails. */
#include "inject.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>

#include "diff.h"
#include "log.h"
#include "pve.h"
#include "rewrite.h"
#include "util.h"

/* ---- names -------------------------------------------------------------------- */

const char *inject_step_name(enum inject_step s)
{
	switch (s) {
	case INJ_STEP_CONNECT: return "connect";
	case INJ_STEP_DETECT: return "detect";
	case INJ_STEP_READ: return "read";
	case INJ_STEP_PLAN: return "plan";
	case INJ_STEP_WRITE: return "write";
	case INJ_STEP_VERIFY: return "verify";
	case INJ_STEP_ROLLBACK: return "rollback";
	}
	return "?";
}

const char *inject_status_name(enum inject_status s)
{
	switch (s) {
	case INJ_FAILED: return "failed";
	case INJ_CHANGED: return "changed";
	case INJ_UNCHANGED: return "unchanged";
	case INJ_DRY_RUN: return "dry-run";
	case INJ_FAILED_PARTIAL: return "failed-partial";
	}
	return "?";
}

const char *inject_file_state_name(enum inject_file_state s)
{
	switch (s) {
	case INJ_FILE_UNCHANGED: return "unchanged";
	case INJ_FILE_PENDING: return "pending";
	case INJ_FILE_WRITTEN: return "written";
	case INJ_FILE_RESTORED: return "restored";
	case INJ_FILE_FAILED: return "failed";
	case INJ_FILE_DIRTY: return "dirty";
	}
	return "?";
}

/* ---- pure helpers ----------------------------------------------------------------- */

static void set_err(char **err, char *msg)
{
	if (err)
		*err = msg;
	else
		free(msg);
}

int inject_check_hostname(const char *name, char **err)
{
	if (err)
		*err = NULL;
	size_t n = name ? strlen(name) : 0;
	const char *why = NULL;
	if (n == 0 || n > 253)
		why = "must be 1 to 253 characters";
	size_t label = 0;
	for (size_t i = 0; !why && i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c == '.') {
			if (label == 0)
				why = "has an empty label";
			else if (name[i - 1] == '-')
				why = "has a label ending with '-'";
			label = 0;
		} else if (isalnum(c) || c == '-') {
			if (c == '-' && label == 0)
				why = "has a label starting with '-'";
			if (++label > 63)
				why = "has a label longer than 63 characters";
		} else {
			why = "may hold only letters, digits, '-' and '.'";
		}
	}
	if (!why && (name[n - 1] == '.' || name[n - 1] == '-'))
		why = "may not end with '.' or '-'";
	if (!why)
		return 0;
	set_err(err, strprintf("host name '%s' %s", name ? name : "", why));
	return -1;
}

char *inject_read_pubkey(const struct conf *c)
{
	if (!c->ssh.identity)
		return NULL;
	char *path = strprintf("%s.pub", c->ssh.identity), *text = NULL;
	if (path && read_file(path, &text, NULL) < 0)
		text = NULL;
	free(path);
	if (text)
		text[strcspn(text, "\n")] = '\0';
	return text;
}

char *inject_template_from_description(const char *description)
{
	static const char marker[] = "(pvagent template ";
	errno = 0;
	const char *p = description ? strstr(description, marker) : NULL;
	if (!p)
		return NULL;
	p += sizeof marker - 1;
	size_t n = 0;
	while (p[n] && (isalnum((unsigned char)p[n]) || strchr("._-", p[n])))
		n++;
	if (n == 0 || p[n] != ')')
		return NULL;
	char *r = strndup(p, n);
	if (!r)
		errno = ENOMEM;
	return r;
}

/* Line i of text as [*b, *e) (no newline); returns the start of the next
 * line or NULL at the end. */
static const char *next_line(const char *p, const char **b, const char **e)
{
	if (!*p)
		return NULL;
	const char *nl = strchr(p, '\n');
	*b = p;
	*e = nl ? nl : p + strlen(p);
	return nl ? nl + 1 : *e;
}

static const char *skip_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

static const char *rtrim(const char *b, const char *e)
{
	while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	return e;
}

/* Append "line\n" to b, first ending the text with a newline. */
static int append_line(struct sbuf *b, const char *line)
{
	if (b->len && b->s[b->len - 1] != '\n' && sbuf_addc(b, '\n') < 0)
		return -1;
	if (sbuf_add(b, line) < 0 || sbuf_addc(b, '\n') < 0)
		return -1;
	return 0;
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

/* One key of inject_kv_ensure. */
static char *kv_one(const char *text, const char *key, const char *value)
{
	size_t klen = strlen(key);
	const char *p = text, *b, *e, *hit_b = NULL, *hit_e = NULL, *hit_v = NULL;
	while ((p = next_line(p, &b, &e))) {
		const char *k = skip_ws(b, e);
		if (k == e || *k == '#' || *k == ';')
			continue;
		const char *eq = memchr(k, '=', (size_t)(e - k));
		if (!eq)
			continue;
		const char *ke = rtrim(k, eq);
		if ((size_t)(ke - k) != klen || memcmp(k, key, klen) != 0)
			continue;
		hit_b = b;
		hit_e = e;
		hit_v = skip_ws(eq + 1, e);
	}
	struct sbuf o = {0};
	int bad = 0;
	if (hit_b) {
		const char *ve = rtrim(hit_v, hit_e);
		if ((size_t)(ve - hit_v) == strlen(value) && memcmp(hit_v, value, strlen(value)) == 0)
			return strdup(text);
		bad |= sbuf_addn(&o, text, (size_t)(hit_v - text)) < 0;
		bad |= sbuf_add(&o, value) < 0;
		bad |= sbuf_add(&o, hit_e) < 0;
	} else {
		char *line = strprintf("%s=%s", key, value);
		bad |= !line;
		bad |= sbuf_add(&o, text) < 0;
		bad |= line && append_line(&o, line) < 0;
		free(line);
	}
	if (bad) {
		sbuf_free(&o);
		return NULL;
	}
	return sbuf_steal(&o);
}

int inject_kv_ensure(const char *path, const char *text, const struct tmpl_kvlist *kv,
		     char **out, char **err)
{
	*out = NULL;
	if (err)
		*err = NULL;
	char *cur = dup_or_empty(text);
	for (size_t i = 0; cur && kv && i < kv->n; i++) {
		const char *key = kv->items[i].key;
		if (!*key || strpbrk(key, "=\n#") || strchr(kv->items[i].value, '\n')) {
			set_err(err, strprintf("%s: bad entry '%s'", path, key));
			free(cur);
			return -1;
		}
		char *next = kv_one(cur, key, kv->items[i].value);
		free(cur);
		cur = next;
	}
	if (!cur) {
		set_err(err, strprintf("%s: out of memory", path));
		return -1;
	}
	*out = cur;
	return 0;
}

static int has_line(const char *text, const char *line)
{
	const char *le = rtrim(line, line + strlen(line));
	size_t n = (size_t)(le - line);
	const char *p = text, *b, *e;
	while ((p = next_line(p, &b, &e))) {
		const char *te = rtrim(b, e);
		if ((size_t)(te - b) == n && memcmp(b, line, n) == 0)
			return 1;
	}
	return 0;
}

int inject_lines_ensure(const char *path, const char *text, const struct tmpl_kvlist *lines,
			char **out, char **err)
{
	*out = NULL;
	if (err)
		*err = NULL;
	struct sbuf o = {0};
	int bad = sbuf_add(&o, text ? text : "") < 0;
	for (size_t i = 0; !bad && lines && i < lines->n; i++) {
		const char *v = lines->items[i].value;
		if (strchr(v, '\n')) {
			sbuf_free(&o);
			set_err(err, strprintf("%s: a line holds a newline", path));
			return -1;
		}
		if (!has_line(sbuf_str(&o), v))
			bad |= append_line(&o, v) < 0;
	}
	if (bad) {
		sbuf_free(&o);
		set_err(err, strprintf("%s: out of memory", path));
		return -1;
	}
	*out = sbuf_steal(&o);
	return 0;
}

/* First token of a line equals addr. */
static int line_is_addr(const char *b, const char *e, const char *addr, const char **tok_end)
{
	const char *t = skip_ws(b, e);
	size_t n = strlen(addr);
	if ((size_t)(e - t) < n || memcmp(t, addr, n) != 0)
		return 0;
	if (t + n < e && t[n] != ' ' && t[n] != '\t')
		return 0;
	if (tok_end)
		*tok_end = t + n;
	return 1;
}

int inject_hosts_set(const char *text, const char *name, char **out)
{
	*out = NULL;
	const char *src = text ? text : "";
	const char *p = src, *b, *e, *te = NULL;
	const char *hit_b = NULL, *hit_e = NULL, *hit_te = NULL, *after_lo = NULL;
	while ((p = next_line(p, &b, &e))) {
		if (!hit_b && line_is_addr(b, e, "127.0.1.1", &te)) {
			hit_b = b;
			hit_e = e;
			hit_te = te;
		}
		if (line_is_addr(b, e, "127.0.0.1", NULL))
			after_lo = *e ? e + 1 : e;
	}
	struct sbuf o = {0};
	int bad = 0;
	if (hit_b) {
		const char *sep_e = skip_ws(hit_te, hit_e);
		bad |= sbuf_addn(&o, src, (size_t)(hit_te - src)) < 0;
		if (sep_e == hit_te)
			bad |= sbuf_addc(&o, '\t') < 0;
		else
			bad |= sbuf_addn(&o, hit_te, (size_t)(sep_e - hit_te)) < 0;
		bad |= sbuf_add(&o, name) < 0;
		bad |= sbuf_add(&o, hit_e) < 0;
	} else {
		char *line = strprintf("127.0.1.1\t%s", name);
		bad |= !line;
		if (after_lo) {
			bad |= sbuf_addn(&o, src, (size_t)(after_lo - src)) < 0;
			bad |= line && append_line(&o, line) < 0;
			bad |= sbuf_add(&o, after_lo) < 0;
		} else {
			bad |= sbuf_add(&o, src) < 0;
			bad |= line && append_line(&o, line) < 0;
		}
		free(line);
	}
	if (bad) {
		sbuf_free(&o);
		return -1;
	}
	*out = sbuf_steal(&o);
	return *out ? 0 : -1;
}

int inject_ssh_opts(const struct conf *c, const struct tmpl_inst *inst, const char *address,
		    struct ssh_opts *out)
{
	memset(out, 0, sizeof *out);
	if (!c || !address || !*address || !c->ssh.known_hosts) {
		errno = EINVAL;
		return -1;
	}
	out->host = address;
	out->port = inst && inst->guest.port ? (int)inst->guest.port : c->ssh.port ? (int)c->ssh.port : 22;
	out->user = inst && inst->guest.user ? inst->guest.user
		    : c->ssh.user ? c->ssh.user : "root";
	out->identity = c->ssh.identity;
	out->known_hosts = c->ssh.known_hosts;
	out->policy = c->ssh.host_key_policy == CONF_HKP_TOFU ? SSH_HKP_TOFU : SSH_HKP_STRICT;
	long ms = c->ssh.timeout ? (long)c->ssh.timeout * 1000 : 30000;
	out->connect_timeout_ms = ms;
	out->op_timeout_ms = ms;
	return 0;
}

/* ---- the run ------------------------------------------------------------------------- */

struct run {
	const struct inject_request *req;
	struct inject_result *res;
	struct ssh_session *s;
	bool own;            /* s was opened here */
	double t0;           /* start of the current step */
	bool *written;       /* per file: written in this run */
};


static void emit(struct run *r, enum inject_event_kind kind, enum inject_step step,
		 const char *path, const char *text, size_t index, size_t count)
{
	if (!r->req->on_event)
		return;
	struct inject_event ev = {
		.kind = kind,
		.step = step,
		.path = path,
		.text = text,
		.elapsed_s = kind == INJ_EV_STEP ? pve_clock_now(NULL) - r->t0 : 0,
		.index = index,
		.count = count,
	};
	r->req->on_event(r->req->event_ctx, &ev);
}

static void step_done(struct run *r, enum inject_step step, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void step_done(struct run *r, enum inject_step step, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct sbuf b = {0};
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	log_debug("inject: %s: %s", inject_step_name(step), rc == 0 ? sbuf_str(&b) : "");
	emit(r, INJ_EV_STEP, step, NULL, rc == 0 ? sbuf_str(&b) : NULL, 0, 0);
	sbuf_free(&b);
	r->t0 = pve_clock_now(NULL);
}

/* Record the failure (the first one wins). */
static int fail(struct run *r, enum inject_step step, const char *path,
		const struct ssh_error *se, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int fail(struct run *r, enum inject_step step, const char *path,
		const struct ssh_error *se, const char *fmt, ...)
{
	struct inject_result *res = r->res;
	if (res->error)
		return -1;
	res->status = INJ_FAILED;
	res->failed_step = step;
	if (path)
		res->failed_path = strdup(path);
	struct sbuf b = {0};
	int bad = sbuf_addf(&b, "%s", inject_step_name(step)) < 0;
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
		res->ssh_kind = se->kind;
	}
	res->error = bad ? strdup("out of memory") : sbuf_steal(&b);
	sbuf_free(&b);
	/* connect/auth/config problems before anything changed keep the SSH
	 * layer's outcome; everything else is a plain failure. */
	res->outcome = JOB_OUT_FAILED;
	if (se && se->kind != SSH_OK && step <= INJ_STEP_READ)
		res->outcome = ssh_error_outcome(se);
	return -1;
}

static int add_fact(struct run *r, const char *cmd, struct ssh_error *e)
{
	struct ssh_result out = {0};
	if (ssh_exec_cmdline(r->s, cmd, NULL, &out, e) < 0) {
		ssh_result_free(&out);
		return -1;
	}
	int rc = 0;
	/* A command missing on this OS (or failing) gives no fact. */
	if (out.exit_status == 0)
		rc = os_facts_add(&r->res->facts, cmd, sbuf_str(&out.out));
	else
		log_debug("inject: '%s' exited %d: %s", cmd, out.exit_status, sbuf_str(&out.err));
	ssh_result_free(&out);
	if (rc < 0) {
		e->kind = SSH_ERR_IO;
		return -1;
	}
	return 0;
}

static char *describe_os(const struct os_info *oi)
{
	if (oi->pretty)
		return strdup(oi->pretty);
	return strprintf("%s %s", oi->name ? oi->name : (oi->id ? oi->id : "?"),
			 oi->version ? oi->version : "?");
}

static int do_detect(struct run *r)
{
	struct inject_result *res = r->res;
	struct ssh_error e = {0};
	for (size_t i = 0; osprof_detect_cmds[i]; i++) {
		if (add_fact(r, osprof_detect_cmds[i], &e) < 0) {
			fail(r, INJ_STEP_DETECT, NULL, &e, "running '%s'", osprof_detect_cmds[i]);
			ssh_error_clear(&e);
			return -1;
		}
	}
	char *err = NULL;
	if (osprof_detect(&res->facts, &res->os, &err) < 0) {
		fail(r, INJ_STEP_DETECT, NULL, NULL, "cannot tell the guest's OS: %s",
		     err ? err : "unknown");
		free(err);
		return -1;
	}
	res->os_desc = describe_os(&res->os);
	if (!res->os_desc)
		return fail(r, INJ_STEP_DETECT, NULL, NULL, "out of memory");
	const char *want = r->req->expect_os;
	if (want && *want && !(res->os.id && strcasecmp(want, res->os.id) == 0)) {
		return fail(r, INJ_STEP_DETECT, NULL, NULL,
			    "the template is for %s but the guest runs %s", want, res->os_desc);
	}
	if (osprof_for(&res->os, &res->profile, &err) == 0) {
		res->have_profile = true;
	} else {
		/* inject itself needs no virtio profile: say so and go on */
		char *note = strprintf("no virtio profile for %s: %s", res->os_desc,
				       err ? err : "unsupported");
		if (note)
			emit(r, INJ_EV_NOTE, INJ_STEP_DETECT, NULL, note, 0, 0);
		free(note);
	}
	free(err);
	step_done(r, INJ_STEP_DETECT, "%s", res->os_desc);
	return 0;
}

/* ---- files --------------------------------------------------------------------------- */

static struct inject_file *file_get(struct run *r, const char *path, const char *why)
{
	struct inject_result *res = r->res;
	struct inject_file *f = NULL;
	for (size_t i = 0; i < res->n_files; i++)
		if (strcmp(res->files[i].path, path) == 0)
			f = &res->files[i];
	if (!f) {
		struct inject_file *v = realloc(res->files, (res->n_files + 1) * sizeof *v);
		if (!v)
			return NULL;
		res->files = v;
		f = &v[res->n_files];
		memset(f, 0, sizeof *f);
		if (!(f->path = strdup(path)) || !(f->why = strdup(why))) {
			free(f->path);
			free(f->why);
			return NULL;
		}
		res->n_files++;
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

static int collect_files(struct run *r)
{
	const struct tmpl_inst *inst = r->req->inst;
	for (size_t i = 0; inst && i < inst->n_files; i++) {
		const struct tmpl_file *tf = &inst->files[i];
		if (tf->path[0] != '/')
			return fail(r, INJ_STEP_PLAN, tf->path, NULL, "%s: not an absolute path",
				    tf->section);
		if (tf->style == TMPL_FILE_SHVAR && r->res->os.family != OS_FREEBSD)
			return fail(r, INJ_STEP_PLAN, tf->path, NULL,
				    "%s is for FreeBSD; the guest runs %s", tf->section,
				    r->res->os_desc);
		if (!file_get(r, tf->path, tf->section))
			return fail(r, INJ_STEP_PLAN, NULL, NULL, "out of memory");
	}
	for (size_t i = 0; r->req->edit && r->req->edit_paths && r->req->edit_paths[i]; i++) {
		const char *path = r->req->edit_paths[i];
		if (path[0] != '/')
			return fail(r, INJ_STEP_PLAN, path, NULL, "not an absolute path");
		if (!file_get(r, path, r->req->edit_why ? r->req->edit_why : "edit"))
			return fail(r, INJ_STEP_PLAN, NULL, NULL, "out of memory");
	}
	if (r->req->name) {
		static const char *const bsd[] = {"/etc/rc.conf", NULL};
		static const char *const lnx[] = {"/etc/hostname", "/etc/hosts", NULL};
		const char *const *paths = r->res->os.family == OS_FREEBSD ? bsd : lnx;
		for (size_t i = 0; paths[i]; i++)
			if (!file_get(r, paths[i], "hostname"))
				return fail(r, INJ_STEP_PLAN, NULL, NULL, "out of memory");
	}
	return 0;
}

static int do_read(struct run *r)
{
	struct inject_result *res = r->res;
	for (size_t i = 0; i < res->n_files; i++) {
		struct inject_file *f = &res->files[i];
		struct ssh_error e = {0};
		size_t len = 0;
		if (ssh_read_file(r->s, f->path, &f->old_text, &len, NULL, &e) == 0) {
			f->existed = true;
			if (strlen(f->old_text) != len) {
				return fail(r, INJ_STEP_READ, f->path, NULL,
					    "holds a NUL byte; not a text file");
			}
		} else if (e.kind == SSH_ERR_NOENT) {
			f->old_text = NULL;
		} else {
			fail(r, INJ_STEP_READ, f->path, &e, "cannot read");
			ssh_error_clear(&e);
			return -1;
		}
		ssh_error_clear(&e);
		char *bak = strprintf("%s%s", f->path, SSH_BACKUP_SUFFIX);
		if (!bak)
			return fail(r, INJ_STEP_READ, f->path, NULL, "out of memory");
		struct ssh_stat st;
		if (ssh_stat(r->s, bak, &st, &e) == 0) {
			f->had_backup = true;
		} else if (e.kind != SSH_ERR_NOENT) {
			fail(r, INJ_STEP_READ, bak, &e, "cannot stat");
			ssh_error_clear(&e);
			free(bak);
			return -1;
		}
		ssh_error_clear(&e);
		free(bak);
	}
	step_done(r, INJ_STEP_READ, "%zu file%s", res->n_files, res->n_files == 1 ? "" : "s");
	return 0;
}

/* Apply one template file section to text (replacing *text). */
static int apply_section(struct run *r, const struct tmpl_file *tf, char **text)
{
	char *out = NULL, *err = NULL;
	int rc;
	if (tf->style == TMPL_FILE_SHVAR) {
		size_t n = tf->entries.n;
		struct rw_kv *kv = calloc(n ? n : 1, sizeof *kv);
		if (!kv)
			return fail(r, INJ_STEP_PLAN, tf->path, NULL, "out of memory");
		for (size_t i = 0; i < n; i++) {
			kv[i].key = tf->entries.items[i].key;
			kv[i].value = tf->entries.items[i].value;
		}
		size_t pl = strlen(tf->path);
		int strict = pl >= 11 && strcmp(tf->path + pl - 11, "loader.conf") == 0;
		rc = rw_kv_ensure(tf->path, *text, kv, n, strict, &out, &err);
		free(kv);
	} else if (tf->style == TMPL_FILE_KV) {
		rc = inject_kv_ensure(tf->path, *text, &tf->entries, &out, &err);
	} else {
		rc = inject_lines_ensure(tf->path, *text, &tf->entries, &out, &err);
	}
	if (rc < 0) {
		fail(r, INJ_STEP_PLAN, tf->path, NULL, "%s: %s", tf->section,
		     err ? err : "out of memory");
		free(err);
		return -1;
	}
	free(*text);
	*text = out;
	return 0;
}

static int apply_hostname(struct run *r, const char *path, char **text)
{
	const char *name = r->req->name;
	char *out = NULL, *err = NULL;
	int rc = 0;
	if (strcmp(path, "/etc/rc.conf") == 0) {
		struct rw_kv kv = {"hostname", name};
		rc = rw_kv_ensure(path, *text, &kv, 1, 0, &out, &err);
	} else if (strcmp(path, "/etc/hostname") == 0) {
		out = strprintf("%s\n", name);
		rc = out ? 0 : -1;
	} else if (strcmp(path, "/etc/hosts") == 0) {
		rc = inject_hosts_set(*text, name, &out);
	} else {
		return 0;
	}
	if (rc < 0) {
		fail(r, INJ_STEP_PLAN, path, NULL, "hostname: %s", err ? err : "out of memory");
		free(err);
		return -1;
	}
	free(*text);
	*text = out;
	return 0;
}

/* The caller's edit, for a path among edit_paths. */
static int apply_edit(struct run *r, const struct inject_file *f, char **text)
{
	const struct inject_request *q = r->req;
	bool mine = false;
	for (size_t i = 0; q->edit_paths && q->edit_paths[i]; i++)
		mine = mine || strcmp(q->edit_paths[i], f->path) == 0;
	if (!mine)
		return 0;
	char *out = NULL, *err = NULL;
	bool absent = !f->existed && **text == '\0';
	if (q->edit(q->edit_ctx, r->res, f->path, absent ? NULL : *text, &out, &err) < 0) {
		fail(r, INJ_STEP_PLAN, f->path, NULL, "%s", err ? err : "out of memory");
		free(err);
		free(out);
		return -1;
	}
	free(err);
	free(*text);
	*text = out ? out : strdup("");
	return *text ? 0 : fail(r, INJ_STEP_PLAN, f->path, NULL, "out of memory");
}

static int do_plan(struct run *r)
{
	struct inject_result *res = r->res;
	const struct tmpl_inst *inst = r->req->inst;
	for (size_t i = 0; i < res->n_files; i++) {
		struct inject_file *f = &res->files[i];
		char *text = dup_or_empty(f->old_text);
		if (!text)
			return fail(r, INJ_STEP_PLAN, f->path, NULL, "out of memory");
		for (size_t j = 0; inst && j < inst->n_files; j++) {
			if (strcmp(inst->files[j].path, f->path) == 0 &&
			    apply_section(r, &inst->files[j], &text) < 0) {
				free(text);
				return -1;
			}
		}
		if (r->req->edit && apply_edit(r, f, &text) < 0) {
			free(text);
			return -1;
		}
		if (r->req->name && strstr(f->why, "hostname") &&
		    apply_hostname(r, f->path, &text) < 0) {
			free(text);
			return -1;
		}
		f->new_text = text;
		bool same = f->existed ? strcmp(f->old_text, text) == 0 : *text == '\0';
		f->diff = same ? strdup("") : diff_unified(f->old_text, text, f->path);
		if (!f->diff)
			return fail(r, INJ_STEP_PLAN, f->path, NULL, "out of memory");
		f->state = same ? INJ_FILE_UNCHANGED : INJ_FILE_PENDING;
		if (!same) {
			res->n_changed++;
			emit(r, INJ_EV_DIFF, INJ_STEP_PLAN, f->path, f->diff, 0, 0);
		}
	}
	step_done(r, INJ_STEP_PLAN, "%zu of %zu file%s to change", res->n_changed, res->n_files,
		  res->n_files == 1 ? "" : "s");
	return 0;
}

static int do_write(struct run *r)
{
	struct inject_result *res = r->res;
	size_t k = 0;
	for (size_t i = 0; i < res->n_files; i++) {
		struct inject_file *f = &res->files[i];
		if (f->state != INJ_FILE_PENDING)
			continue;
		k++;
		struct ssh_error e = {0};
		bool changed = false;
		if (ssh_write_file_atomic(r->s, f->path, f->new_text, strlen(f->new_text),
					  SSH_WRITE_BACKUP, 0644, &changed, &e) < 0) {
			f->state = INJ_FILE_FAILED;
			fail(r, INJ_STEP_WRITE, f->path, &e, "file %zu of %zu", k, res->n_changed);
			ssh_error_clear(&e);
			emit(r, INJ_EV_FILE, INJ_STEP_WRITE, f->path, "failed", k, res->n_changed);
			return -1;
		}
		r->written[i] = true;
		f->state = INJ_FILE_WRITTEN;
		emit(r, INJ_EV_FILE, INJ_STEP_WRITE, f->path, "written", k, res->n_changed);
	}
	step_done(r, INJ_STEP_WRITE, "%zu file%s written", k, k == 1 ? "" : "s");
	return 0;
}

static int do_verify(struct run *r)
{
	struct inject_result *res = r->res;
	for (size_t i = 0; i < res->n_files; i++) {
		struct inject_file *f = &res->files[i];
		if (!r->written[i])
			continue;
		char *back = NULL;
		size_t len = 0;
		struct ssh_error e = {0};
		if (ssh_read_file(r->s, f->path, &back, &len, NULL, &e) < 0) {
			f->state = INJ_FILE_FAILED;
			fail(r, INJ_STEP_VERIFY, f->path, &e, "cannot read back");
			ssh_error_clear(&e);
			return -1;
		}
		bool ok = len == strlen(f->new_text) && memcmp(back, f->new_text, len) == 0;
		free(back);
		if (!ok) {
			f->state = INJ_FILE_FAILED;
			return fail(r, INJ_STEP_VERIFY, f->path, NULL,
				    "reads back different from what was written");
		}
	}
	step_done(r, INJ_STEP_VERIFY, "%zu file%s read back", res->n_changed,
		  res->n_changed == 1 ? "" : "s");
	return 0;
}

static bool transport_lost(enum ssh_err_kind k)
{
	return k == SSH_ERR_CONNECT || k == SSH_ERR_TIMEOUT;
}

/* Put back one file; 0 or -1 with *e. */
static int restore_one(struct run *r, const struct inject_file *f, bool written,
		       struct ssh_error *e)
{
	if (written) {
		if (f->existed) {
			if (ssh_write_file_atomic(r->s, f->path, f->old_text, strlen(f->old_text),
						  0, 0, NULL, e) < 0)
				return -1;
		} else if (ssh_remove(r->s, f->path, e) < 0) {
			return -1;
		}
	}
	if (!f->had_backup) {
		char *bak = strprintf("%s%s", f->path, SSH_BACKUP_SUFFIX);
		if (!bak) {
			e->kind = SSH_ERR_IO;
			return -1;
		}
		int rc = ssh_remove(r->s, bak, e);
		free(bak);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Drop a lost session and connect again with the request's options. */
static int reconnect(struct run *r, struct ssh_error *ce)
{
	if (r->own)
		ssh_close(r->s); /* a broken caller session is left to the caller */
	r->s = NULL;
	r->own = false;
	ssh_error_clear(ce);
	if (!r->req->ssh) {
		ce->kind = SSH_ERR_CONFIG;
		ce->msg = strdup("the connection was lost and no SSH options were given to reconnect");
		return -1;
	}
	if (ssh_connect(r->req->ssh, &r->s, ce) < 0) {
		r->s = NULL;
		return -1;
	}
	r->own = true;
	log_info("inject: reconnected to %s for the rollback", ssh_session_target(r->s));
	return 0;
}

/* A connection lost in the middle of a write can leave PATH.pvagent.tmp.*
 * (never used by the guest; the next write removes it): remove it now so
 * the tree is as it was. Best effort; the path reaches the shell quoted. */
static void remove_stale_temps(struct run *r, const char *path)
{
	static const char script[] =
		"sh -c 'rm -f -- \"$1\"" SSH_TEMP_INFIX "* \"$1\"" SSH_BACKUP_SUFFIX SSH_TEMP_INFIX
		"*' sh %s";
	const char *args[] = {path, NULL};
	struct ssh_result out = {0};
	struct ssh_error e = {0};
	if (ssh_exec_script(r->s, script, args, &out, &e) < 0 || out.exit_status != 0)
		log_debug("inject: could not remove temp files of %s: %s", path,
			  e.kind != SSH_OK ? ssh_error_str(&e) : sbuf_str(&out.err));
	ssh_result_free(&out);
	ssh_error_clear(&e);
}

/* After a failed write or verify: put every touched file back. */
static void do_rollback(struct run *r)
{
	struct inject_result *res = r->res;
	r->t0 = pve_clock_now(NULL);
	struct sbuf msg = {0};
	int bad = 0;
	size_t restored = 0, dirty = 0;
	struct ssh_error ce = {0};
	bool reconnected = false;
	if (transport_lost(res->ssh_kind)) {
		/* The session is gone: reconnect to put the files back. */
		reconnected = true;
		reconnect(r, &ce);
	}
	for (size_t n = res->n_files; n > 0; n--) {
		size_t i = n - 1;
		struct inject_file *f = &res->files[i];
		bool touched = r->written[i] || f->state == INJ_FILE_FAILED;
		if (!touched)
			continue;
		struct ssh_error e = {0};
		int rc = r->s ? restore_one(r, f, r->written[i], &e) : -1;
		if (rc < 0 && r->s && transport_lost(e.kind) && !reconnected) {
			/* the failure left the session unusable after all */
			reconnected = true;
			ssh_error_clear(&e);
			if (reconnect(r, &ce) == 0)
				rc = restore_one(r, f, r->written[i], &e);
		}
		if (rc == 0 && reconnected && f->state == INJ_FILE_FAILED)
			remove_stale_temps(r, f->path);
		if (rc == 0) {
			if (r->written[i]) {
				f->state = INJ_FILE_RESTORED;
				restored++;
				emit(r, INJ_EV_FILE, INJ_STEP_ROLLBACK, f->path, "restored", 0, 0);
			}
		} else if (r->written[i]) {
			f->state = INJ_FILE_DIRTY;
			dirty++;
			bad |= sbuf_addf(&msg, "\n%s is changed and could not be restored (%s); "
					 "the original is in %s%s", f->path,
					 r->s ? ssh_error_str(&e) : ssh_error_str(&ce), f->path,
					 SSH_BACKUP_SUFFIX) < 0;
			emit(r, INJ_EV_FILE, INJ_STEP_ROLLBACK, f->path, "dirty", 0, 0);
		} else {
			/* only a backup this run may have made is left behind */
			bad |= sbuf_addf(&msg, "\nnote: could not remove %s%s (%s)", f->path,
					 SSH_BACKUP_SUFFIX,
					 r->s ? ssh_error_str(&e) : ssh_error_str(&ce)) < 0;
		}
		ssh_error_clear(&e);
	}
	ssh_error_clear(&ce);
	char *old = res->error;
	if (dirty) {
		res->status = INJ_FAILED_PARTIAL;
		res->outcome = JOB_OUT_NEEDS_ATTENTION;
		res->error = strprintf("%s; rollback failed for %zu file%s:%s", old ? old : "",
				       dirty, dirty == 1 ? "" : "s", bad ? " (out of memory)" : sbuf_str(&msg));
	} else {
		res->error = strprintf("%s; %s%s", old ? old : "",
				       restored ? "every file written was restored"
						: "no file was changed",
				       bad ? "" : sbuf_str(&msg));
	}
	if (res->error)
		free(old);
	else
		res->error = old;
	sbuf_free(&msg);
	step_done(r, INJ_STEP_ROLLBACK, "%zu restored, %zu not restored", restored, dirty);
}

int inject_run(const struct inject_request *req, struct inject_result *res)
{
	memset(res, 0, sizeof *res);
	struct run r = {.req = req, .res = res, .t0 = pve_clock_now(NULL)};
	int rc = -1;
	char *herr = NULL;
	if (req->name && inject_check_hostname(req->name, &herr) < 0) {
		fail(&r, INJ_STEP_PLAN, NULL, NULL, "%s", herr ? herr : "bad host name");
		res->outcome = JOB_OUT_USAGE;
		free(herr);
		return -1;
	}
	/* connect */
	if (req->session) {
		r.s = req->session;
	} else {
		struct ssh_error e = {0};
		if (!req->ssh) {
			fail(&r, INJ_STEP_CONNECT, NULL, NULL, "no SSH session or options");
			res->outcome = JOB_OUT_USAGE;
			return -1;
		}
		if (ssh_connect(req->ssh, &r.s, &e) < 0) {
			fail(&r, INJ_STEP_CONNECT, NULL, &e, "%s", "");
			ssh_error_clear(&e);
			return -1;
		}
		r.own = true;
		step_done(&r, INJ_STEP_CONNECT, "%s", ssh_session_target(r.s));
	}
	if (do_detect(&r) < 0 || collect_files(&r) < 0 || do_read(&r) < 0 || do_plan(&r) < 0)
		goto out;
	if (req->dry_run) {
		res->status = INJ_DRY_RUN;
		rc = 0;
		goto out;
	}
	if (res->n_changed == 0) {
		res->status = INJ_UNCHANGED;
		rc = 0;
		goto out;
	}
	r.written = calloc(res->n_files, sizeof *r.written);
	if (!r.written) {
		fail(&r, INJ_STEP_WRITE, NULL, NULL, "out of memory");
		goto out;
	}
	if (do_write(&r) < 0 || do_verify(&r) < 0) {
		do_rollback(&r);
		goto out;
	}
	res->status = INJ_CHANGED;
	rc = 0;
out:
	if (rc == 0)
		res->outcome = JOB_OUT_DONE;
	free(r.written);
	if (r.own)
		ssh_close(r.s);
	return rc;
}

/* ---- reporting ---------------------------------------------------------------------- */

char *inject_result_summary(const struct inject_result *res)
{
	const char *st = inject_status_name(res->status);
	if (res->status == INJ_FAILED || res->status == INJ_FAILED_PARTIAL)
		return strprintf("%s: %s", st, res->error ? res->error : "unknown error");
	struct sbuf b = {0};
	int bad = sbuf_addf(&b, "%s: %s: ", st, res->os_desc ? res->os_desc : "unknown OS") < 0;
	if (res->status == INJ_UNCHANGED || (res->status == INJ_DRY_RUN && res->n_changed == 0)) {
		bad |= sbuf_addf(&b, "%zu file%s checked, nothing to change", res->n_files,
				 res->n_files == 1 ? "" : "s") < 0;
	} else {
		if (res->status == INJ_DRY_RUN)
			bad |= sbuf_addf(&b, "%zu of %zu file%s would change: ", res->n_changed,
					 res->n_files, res->n_files == 1 ? "" : "s") < 0;
		const char *sep = "";
		for (size_t i = 0; i < res->n_files; i++) {
			if (res->files[i].state == INJ_FILE_UNCHANGED)
				continue;
			bad |= sbuf_addf(&b, "%s%s", sep, res->files[i].path) < 0;
			sep = ", ";
		}
	}
	if (bad) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

/* Add v (taken) under k; on failure v is released. */
static int jadd(json_object *o, const char *k, json_object *v)
{
	if (json_object_object_add(o, k, v) < 0) {
		json_object_put(v);
		return -1;
	}
	return 0;
}

static int jadd_str(json_object *o, const char *k, const char *v)
{
	json_object *s = v ? json_object_new_string(v) : NULL;
	if (v && !s)
		return -1;
	return jadd(o, k, s);
}

static int jadd_file(json_object *files, const struct inject_file *f)
{
	json_object *fo = json_object_new_object();
	if (!fo)
		return -1;
	if (json_object_array_add(files, fo) < 0) {
		json_object_put(fo);
		return -1;
	}
	int bad = jadd_str(fo, "path", f->path) < 0;
	bad |= jadd_str(fo, "why", f->why) < 0;
	bad |= jadd_str(fo, "state", inject_file_state_name(f->state)) < 0;
	bad |= jadd(fo, "existed", json_object_new_boolean(f->existed)) < 0;
	bad |= jadd_str(fo, "diff", f->diff ? f->diff : "") < 0;
	return bad ? -1 : 0;
}

struct json_object *inject_result_json(const struct inject_result *res)
{
	static const char *const fam[] = {"unknown", "freebsd", "linux"};
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object *os = json_object_new_object();
	json_object *files = json_object_new_array();
	int bad = !os || !files;
	if (bad) {
		json_object_put(os);
		json_object_put(files);
	} else {
		bad |= jadd(o, "os", os) < 0;
		bad |= jadd(o, "files", files) < 0;
	}
	if (!bad) {
		bad |= jadd_str(o, "status", inject_status_name(res->status)) < 0;
		bad |= jadd_str(o, "outcome", job_outcome_name(res->outcome)) < 0;
		bad |= jadd_str(os, "family",
				fam[res->os.family <= OS_LINUX ? res->os.family : OS_UNKNOWN]) < 0;
		bad |= jadd_str(os, "id", res->os.id) < 0;
		bad |= jadd_str(os, "version", res->os.version) < 0;
		bad |= jadd_str(os, "kernel", res->os.kernel) < 0;
		bad |= jadd_str(os, "description", res->os_desc) < 0;
		char *prof = res->have_profile ? osprof_describe(&res->profile) : NULL;
		bad |= res->have_profile && !prof;
		bad |= jadd_str(os, "profile", prof) < 0;
		free(prof);
		for (size_t i = 0; !bad && i < res->n_files; i++)
			bad |= jadd_file(files, &res->files[i]) < 0;
		if (res->status == INJ_FAILED || res->status == INJ_FAILED_PARTIAL) {
			bad |= jadd_str(o, "failed_step", inject_step_name(res->failed_step)) < 0;
			bad |= jadd_str(o, "failed_path", res->failed_path) < 0;
			bad |= jadd_str(o, "error", res->error) < 0;
		}
	}
	if (bad) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

void inject_result_free(struct inject_result *res)
{
	if (!res)
		return;
	os_facts_free(&res->facts);
	os_info_free(&res->os);
	free(res->os_desc);
	for (size_t i = 0; i < res->n_files; i++) {
		struct inject_file *f = &res->files[i];
		free(f->path);
		free(f->why);
		free(f->old_text);
		free(f->new_text);
		free(f->diff);
	}
	free(res->files);
	free(res->failed_path);
	free(res->error);
	memset(res, 0, sizeof *res);
}
