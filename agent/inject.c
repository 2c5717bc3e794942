/* inject.c - guest-side setup over SSH (inject.h): detect the OS, compute
 * each file's new text from the template's file sections and the hostname,
 * show diffs or write all files atomically, verify by reading back, and
 * roll every file back when any step fails. */
#include "inject.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "json.h"
#include "log.h"
#include "rewrite.h"
#include "util.h"

/* ---- names -------------------------------------------------------------------- */

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

int inject_status_parse(const char *s, enum inject_status *out)
{
	for (int i = INJ_FAILED; i <= INJ_FAILED_PARTIAL; i++)
		if (strcmp(s, inject_status_name((enum inject_status)i)) == 0) {
			*out = (enum inject_status)i;
			return 0;
		}
	return -1;
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

/* ---- the phases ------------------------------------------------------------------- */

int inject_detect(const struct inject_request *q, struct ssh_session *s,
		  struct inject_result *res)
{
	struct ssh_error se = {0};
	char *err = NULL;
	guest_os_free(&res->guest);
	if (guest_os_detect(s, &res->guest, &se, &err) < 0) {
		gfedit_fail(&res->ed, "detect", NULL, &se, "%s", err ? err : "out of memory");
		ssh_error_clear(&se);
		free(err);
		return -1;
	}
	const char *want = q->expect_os, *desc = res->guest.desc;
	if (want && *want && !(res->guest.os.id && strcasecmp(want, res->guest.os.id) == 0))
		return gfedit_fail(&res->ed, "detect", NULL, NULL,
				   "the template is for %s but the guest runs %s", want, desc);
	if (res->guest.no_profile && q->on_event) {
		/* inject itself needs no virtio profile: say so and go on */
		struct job_event ev = {.kind = JOB_EV_NOTE, .step = "detect",
				       .text = res->guest.no_profile, .percent = -1};
		q->on_event(q->event_ctx, &ev);
	}
	return 0;
}

int inject_collect(const struct inject_request *q, struct inject_result *res)
{
	struct gfedit *e = &res->ed;
	const struct tmpl_inst *inst = q->inst;
	for (size_t i = 0; inst && i < inst->n_files; i++) {
		const struct tmpl_file *tf = &inst->files[i];
		if (tf->path[0] != '/')
			return gfedit_fail(e, "plan", tf->path, NULL, "%s: not an absolute path",
					   tf->section);
		if (tf->style == TMPL_FILE_SHVAR && res->guest.os.family != OS_FREEBSD)
			return gfedit_fail(e, "plan", tf->path, NULL,
					   "%s is for FreeBSD; the guest runs %s", tf->section,
					   res->guest.desc);
		if (!gfedit_add(e, tf->path, tf->section))
			return gfedit_fail(e, "plan", NULL, NULL, "out of memory");
	}
	if (q->name) {
		static const char *const bsd[] = {"/etc/rc.conf", NULL};
		static const char *const lnx[] = {"/etc/hostname", "/etc/hosts", NULL};
		const char *const *paths = res->guest.os.family == OS_FREEBSD ? bsd : lnx;
		for (size_t i = 0; paths[i]; i++)
			if (!gfedit_add(e, paths[i], "hostname"))
				return gfedit_fail(e, "plan", NULL, NULL, "out of memory");
	}
	return 0;
}

/* Apply one template file section to text (replacing *text). */
static int apply_section(struct gfedit *e, const struct tmpl_file *tf, char **text)
{
	char *out = NULL, *err = NULL;
	int rc;
	if (tf->style == TMPL_FILE_SHVAR) {
		size_t n = tf->entries.n;
		struct rw_kv *kv = calloc(n ? n : 1, sizeof *kv);
		if (!kv)
			return gfedit_fail(e, "plan", tf->path, NULL, "out of memory");
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
		gfedit_fail(e, "plan", tf->path, NULL, "%s: %s", tf->section,
			    err ? err : "out of memory");
		free(err);
		return -1;
	}
	free(*text);
	*text = out;
	return 0;
}

static int apply_hostname(struct gfedit *e, const char *name, const char *path, char **text)
{
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
		gfedit_fail(e, "plan", path, NULL, "hostname: %s", err ? err : "out of memory");
		free(err);
		return -1;
	}
	free(*text);
	*text = out;
	return 0;
}

/* gfedit_plan_fn: the template's sections of the file, then the hostname. */
static int plan_file(void *ctx, struct gfedit *e, const struct gfile *f, char **text)
{
	const struct inject_request *q = ctx;
	const struct tmpl_inst *inst = q->inst;
	for (size_t j = 0; inst && j < inst->n_files; j++)
		if (strcmp(inst->files[j].path, f->path) == 0 &&
		    apply_section(e, &inst->files[j], text) < 0)
			return -1;
	if (q->name && strstr(f->why, "hostname") && apply_hostname(e, q->name, f->path, text) < 0)
		return -1;
	return 0;
}

int inject_plan(const struct inject_request *q, struct inject_result *res)
{
	return gfedit_plan(&res->ed, plan_file, (void *)q);
}

char *inject_phase_summary(const char *phase, const struct inject_result *res)
{
	const struct gfedit *e = &res->ed;
	size_t n = e->n_files, k = e->n_changed;
	if (strcmp(phase, "detect") == 0)
		return strdup(res->guest.desc ? res->guest.desc : "?");
	if (strcmp(phase, "read") == 0)
		return strprintf("%zu file%s", n, n == 1 ? "" : "s");
	if (strcmp(phase, "plan") == 0)
		return strprintf("%zu of %zu file%s to change", k, n, n == 1 ? "" : "s");
	if (strcmp(phase, "write") == 0)
		return strprintf("%zu file%s written", k, k == 1 ? "" : "s");
	return strprintf("%zu file%s read back", k, k == 1 ? "" : "s");
}

void inject_result_finish(struct inject_result *res, const struct inject_request *q, int rc)
{
	if (rc < 0) {
		res->status = res->ed.partial ? INJ_FAILED_PARTIAL : INJ_FAILED;
		return;
	}
	res->ed.outcome = JOB_OUT_DONE;
	res->status = q->dry_run ? INJ_DRY_RUN : res->ed.n_changed ? INJ_CHANGED : INJ_UNCHANGED;
}

/* ---- reporting ---------------------------------------------------------------------- */

char *inject_result_summary(const struct inject_result *res)
{
	const char *st = inject_status_name(res->status);
	if (res->status == INJ_FAILED || res->status == INJ_FAILED_PARTIAL)
		return strprintf("%s: %s", st, res->ed.error ? res->ed.error : "unknown error");
	struct sbuf b = {0};
	int bad = sbuf_addf(&b, "%s: %s: ", st, res->guest.desc ? res->guest.desc : "unknown OS") < 0;
	if (res->status == INJ_UNCHANGED || (res->status == INJ_DRY_RUN && res->ed.n_changed == 0)) {
		bad |= sbuf_addf(&b, "%zu file%s checked, nothing to change", res->ed.n_files,
				 res->ed.n_files == 1 ? "" : "s") < 0;
	} else {
		if (res->status == INJ_DRY_RUN)
			bad |= sbuf_addf(&b, "%zu of %zu file%s would change: ", res->ed.n_changed,
					 res->ed.n_files, res->ed.n_files == 1 ? "" : "s") < 0;
		const char *sep = "";
		for (size_t i = 0; i < res->ed.n_files; i++) {
			if (res->ed.files[i].state == GF_UNCHANGED)
				continue;
			bad |= sbuf_addf(&b, "%s%s", sep, res->ed.files[i].path) < 0;
			sep = ", ";
		}
	}
	if (bad) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

static int jadd_file(json_object *files, const struct gfile *f)
{
	json_object *fo = json_object_new_object();
	if (!fo)
		return -1;
	if (json_object_array_add(files, fo) < 0) {
		json_object_put(fo);
		return -1;
	}
	int bad = json_add_str(fo, "path", f->path) < 0;
	bad |= json_add_str(fo, "why", f->why) < 0;
	bad |= json_add_str(fo, "state", gfile_state_name(f->state)) < 0;
	bad |= json_add(fo, "existed", json_object_new_boolean(f->existed)) < 0;
	bad |= json_add_str(fo, "diff", f->diff ? f->diff : "") < 0;
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
		bad |= json_add(o, "os", os) < 0;
		bad |= json_add(o, "files", files) < 0;
	}
	if (!bad) {
		bad |= json_add_str(o, "status", inject_status_name(res->status)) < 0;
		bad |= json_add_str(o, "outcome", job_outcome_name(res->ed.outcome)) < 0;
		bad |= json_add_str(os, "family",
				fam[res->guest.os.family <= OS_LINUX ? res->guest.os.family : OS_UNKNOWN]) < 0;
		bad |= json_add_str(os, "id", res->guest.os.id) < 0;
		bad |= json_add_str(os, "version", res->guest.os.version) < 0;
		bad |= json_add_str(os, "kernel", res->guest.os.kernel) < 0;
		bad |= json_add_str(os, "description", res->guest.desc) < 0;
		char *prof = res->guest.have_profile ? osprof_describe(&res->guest.profile) : NULL;
		bad |= res->guest.have_profile && !prof;
		bad |= json_add_str(os, "profile", prof) < 0;
		free(prof);
		for (size_t i = 0; !bad && i < res->ed.n_files; i++)
			bad |= jadd_file(files, &res->ed.files[i]) < 0;
		if (res->status == INJ_FAILED || res->status == INJ_FAILED_PARTIAL) {
			bad |= json_add_str(o, "failed_step", res->ed.failed_step) < 0;
			bad |= json_add_str(o, "failed_path", res->ed.failed_path) < 0;
			bad |= json_add_str(o, "error", res->ed.error) < 0;
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
	guest_os_free(&res->guest);
	gfedit_free(&res->ed);
	memset(res, 0, sizeof *res);
}
