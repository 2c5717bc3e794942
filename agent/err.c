/* err.c - struct pve_error (see err.h): setting, moving, naming kinds,
 * their outcomes, the message for users, and the JSON form jobs store. */
#include "err.h"

#include "log.h"
#include "pveprivs.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors --------------------------------------------------------------- */

void pve_error_clear(struct pve_error *e)
{
	if (!e)
		return;
	free(e->what);
	free(e->message);
	free(e->upid);
	free(e->detail);
	if (e->param_errors)
		json_object_put(e->param_errors);
	memset(e, 0, sizeof *e);
}

static void error_vset(struct pve_error *e, enum pve_err_kind kind, const char *fmt,
		       va_list ap) __attribute__((format(printf, 3, 0)));
static void error_vset(struct pve_error *e, enum pve_err_kind kind, const char *fmt,
		       va_list ap)
{
	struct sbuf b = {0};
	free(e->message);
	e->message = NULL;
	e->kind = kind;
	if (sbuf_vaddf(&b, fmt, ap) == 0)
		e->message = log_redact(sbuf_str(&b));
	sbuf_free(&b);
}

void pve_error_set(struct pve_error *e, enum pve_err_kind kind, const char *fmt, ...)
{
	if (!e)
		return;
	pve_error_clear(e);
	va_list ap;
	va_start(ap, fmt);
	error_vset(e, kind, fmt, ap);
	va_end(ap);
}

int pve_error_oom(struct pve_error *e)
{
	pve_error_set(e, PVE_ERR_INTERNAL, "out of memory");
	return -1;
}

void pve_error_move(struct pve_error *dst, struct pve_error *src)
{
	if (!dst) {
		pve_error_clear(src);
		return;
	}
	pve_error_clear(dst);
	*dst = *src;
	memset(src, 0, sizeof *src);
}

const char *pve_err_kind_name(enum pve_err_kind k)
{
	switch (k) {
	case PVE_OK: return "ok";
	case PVE_ERR_CONFIG: return "config";
	case PVE_ERR_AUTH: return "auth";
	case PVE_ERR_PERM: return "permission";
	case PVE_ERR_TLS: return "tls";
	case PVE_ERR_PIN: return "pin";
	case PVE_ERR_CONNECT: return "connect";
	case PVE_ERR_TIMEOUT: return "timeout";
	case PVE_ERR_TRANSIENT: return "transient";
	case PVE_ERR_PARAM: return "param";
	case PVE_ERR_BAD_REQUEST: return "bad-request";
	case PVE_ERR_NOT_FOUND: return "not-found";
	case PVE_ERR_LOCKED: return "locked";
	case PVE_ERR_CONFLICT: return "conflict";
	case PVE_ERR_EXISTS: return "exists";
	case PVE_ERR_NOT_IMPLEMENTED: return "not-implemented";
	case PVE_ERR_API: return "api";
	case PVE_ERR_PROTOCOL: return "protocol";
	case PVE_ERR_TASK: return "task";
	case PVE_ERR_TASK_TIMEOUT: return "task-timeout";
	case PVE_ERR_INTERNAL: return "internal";
	}
	return "unknown";
}

bool pve_err_retryable(enum pve_err_kind k)
{
	return k == PVE_ERR_CONNECT || k == PVE_ERR_TRANSIENT;
}

enum job_outcome pve_error_outcome(const struct pve_error *e)
{
	if (!e || e->kind == PVE_OK)
		return JOB_OUT_DONE;
	if (e->kind == PVE_ERR_CONFIG)
		return JOB_OUT_USAGE;
	if (e->kind == PVE_ERR_TASK_TIMEOUT || e->ambiguous)
		return JOB_OUT_NEEDS_ATTENTION;
	/* what the user named does not exist: exit 2 in every command */
	if (e->kind == PVE_ERR_NOT_FOUND)
		return JOB_OUT_USAGE;
	switch (e->kind) {
	case PVE_ERR_AUTH:
	case PVE_ERR_TLS:
	case PVE_ERR_PIN:
	case PVE_ERR_CONNECT:
	case PVE_ERR_TIMEOUT:
		return JOB_OUT_UNREACHABLE;
	default:
		return JOB_OUT_FAILED;
	}
}

/* PVE's "Permission check failed (PATH, PRIV)" (RPCEnvironment::check; a
 * check_any names "A|B") in s: the hint that says what is missing and what
 * to grant, appended to b. 0 when there is none or it was added. */
static int perm_hint(struct sbuf *b, const char *s)
{
	static const char tag[] = "Permission check failed (";
	const char *p = s ? strstr(s, tag) : NULL;
	if (!p)
		return 0;
	p += sizeof tag - 1;
	const char *comma = strstr(p, ", "), *end = comma ? strchr(comma, ')') : NULL;
	if (!comma || !end || memchr(p, ')', (size_t)(comma - p)) || *p != '/')
		return 0;
	int path = (int)(comma - p), priv = (int)(end - comma - 2);
	bool any = memchr(comma, '|', (size_t)(end - comma)) != NULL;
	return sbuf_addf(b,
			 "\n  the API token lacks the privilege%s %.*s on %.*s; grant it there (or on a"
			 " parent path, propagating) to the token and to its user (a token with"
			 " privilege separation has at most its user's rights): a role with %.*s, e.g."
			 " pveum role modify PVAgent --append 1 --privs %.*s, and"
			 " pveum acl modify %.*s --tokens 'USER@REALM!TOKEN' --roles PVAgent plus"
			 " pveum acl modify %.*s --users USER@REALM --roles PVAgent"
			 " (pvagent(1): PRIVILEGES)",
			 any ? " (one of)" : "", priv, comma + 2, path, p, priv, comma + 2,
			 any ? (int)strcspn(comma + 2, "|") : priv, comma + 2, path, p, path, p);
}

/* A 403 whose text names no "(PATH, PRIV)" (PVE's `or` checks raise the
 * bare "Permission check failed"): what the request in e->what ("POST
 * /nodes/...") needs, from pvagent's own table (pveprivs.h), appended to
 * b. 0 when there is none or it was added. */
static int request_hint(struct sbuf *b, const struct pve_error *e)
{
	const char *sp = e->what ? strchr(e->what, ' ') : NULL;
	if (!sp || sp[1] != '/')
		return 0;
	char *method = strndup(e->what, (size_t)(sp - e->what));
	char *needs = method ? pveprivs_request_needs(method, sp + 1, 0) : NULL;
	int rc = needs ? sbuf_addf(b,
				   "\n  PVE refused %s (%d): the token needs %s (grant the role on"
				   " those paths to the token and to its user; pvagent(1): PRIVILEGES)",
				   e->what, e->http_status ? e->http_status : 403, needs)
		       : method ? 0 : -1;
	free(method);
	free(needs);
	return rc;
}

/* The hint for a refusal: PVE's "(PATH, PRIV)", else the request's table
 * entry. */
static int refusal_hint(struct sbuf *b, const struct pve_error *e)
{
	size_t before = b->len;
	int rc = perm_hint(b, e->message);
	if (rc == 0 && b->len == before && (e->kind == PVE_ERR_PERM || e->http_status == 403))
		rc = request_hint(b, e);
	return rc;
}

char *pve_error_hint(const struct pve_error *e)
{
	struct sbuf b = {0};
	char *out = e && (e->kind == PVE_ERR_PERM || e->http_status == 403) &&
				refusal_hint(&b, e) == 0 && b.len
			    ? sbuf_steal(&b)
			    : NULL;
	sbuf_free(&b);
	return out;
}

char *pve_perm_hint(const char *text)
{
	struct sbuf b = {0};
	char *out = perm_hint(&b, text) == 0 && b.len ? sbuf_steal(&b) : NULL;
	sbuf_free(&b);
	return out;
}

char *pve_error_format(const struct pve_error *e)
{
	struct sbuf b = {0};
	int rc = 0;
	if (!e)
		return strdup("");
	if (e->what)
		rc |= sbuf_addf(&b, "%s: ", e->what);
	rc |= sbuf_add(&b, e->message ? e->message : pve_err_kind_name(e->kind));
	if (e->http_status && e->message && !strstr(e->message, "HTTP "))
		rc |= sbuf_addf(&b, " (HTTP %d)", e->http_status);
	if (e->param_errors && json_object_is_type(e->param_errors, json_type_object)) {
		json_object_object_foreach(e->param_errors, key, val) {
			const char *m = json_object_is_type(val, json_type_string)
						? json_object_get_string(val)
						: json_object_to_json_string(val);
			struct sbuf line = {0};
			rc |= sbuf_addf(&line, "\n  %s: %s", key, m ? m : "");
			/* PVE messages end with a newline; drop it. */
			while (line.len && (line.s[line.len - 1] == '\n' || line.s[line.len - 1] == ' '))
				line.s[--line.len] = '\0';
			rc |= sbuf_add(&b, sbuf_str(&line));
			sbuf_free(&line);
		}
	}
	if (e->kind == PVE_ERR_PERM || (e->message && strstr(e->message, "Permission check")))
		rc |= refusal_hint(&b, e);
	else if (e->detail)
		rc |= perm_hint(&b, e->detail);
	if (e->detail && *e->detail) {
		rc |= sbuf_add(&b, "\n  task log (last lines):");
		const char *p = e->detail;
		while (*p) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			rc |= sbuf_add(&b, "\n    ");
			rc |= sbuf_addn(&b, p, n);
			p += n + (nl ? 1 : 0);
		}
	}
	if (rc) {
		sbuf_free(&b);
		return NULL;
	}
	char *raw = sbuf_steal(&b);
	if (!raw)
		return NULL;
	char *red = log_redact(raw);
	free(raw);
	return red;
}

static const enum pve_err_kind all_kinds[] = {
	PVE_OK, PVE_ERR_CONFIG, PVE_ERR_AUTH, PVE_ERR_PERM, PVE_ERR_TLS, PVE_ERR_PIN,
	PVE_ERR_CONNECT, PVE_ERR_TIMEOUT, PVE_ERR_TRANSIENT, PVE_ERR_PARAM, PVE_ERR_BAD_REQUEST,
	PVE_ERR_NOT_FOUND, PVE_ERR_LOCKED, PVE_ERR_CONFLICT, PVE_ERR_EXISTS, PVE_ERR_NOT_IMPLEMENTED, PVE_ERR_API,
	PVE_ERR_PROTOCOL, PVE_ERR_TASK, PVE_ERR_TASK_TIMEOUT, PVE_ERR_INTERNAL,
};

int pve_err_kind_parse(const char *s, enum pve_err_kind *out)
{
	for (size_t i = 0; s && i < sizeof all_kinds / sizeof *all_kinds; i++) {
		if (strcmp(pve_err_kind_name(all_kinds[i]), s) == 0) {
			*out = all_kinds[i];
			return 0;
		}
	}
	return -1;
}

static void add_str(json_object *o, const char *key, const char *v)
{
	if (v)
		json_object_object_add(o, key, json_object_new_string(v));
}

json_object *pve_error_to_json(const struct pve_error *e)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	add_str(o, "kind", pve_err_kind_name(e->kind));
	if (e->http_status)
		json_object_object_add(o, "http_status", json_object_new_int(e->http_status));
	add_str(o, "what", e->what);
	add_str(o, "message", e->message);
	if (e->param_errors)
		json_object_object_add(o, "param_errors", json_object_get(e->param_errors));
	if (e->ambiguous)
		json_object_object_add(o, "ambiguous", json_object_new_boolean(true));
	add_str(o, "upid", e->upid);
	add_str(o, "detail", e->detail);
	return o;
}

static int dup_member(json_object *o, const char *key, char **out)
{
	json_object *v;
	*out = NULL;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return 0;
	*out = strdup(json_object_get_string(v));
	return *out ? 0 : -1;
}

int pve_error_from_json(json_object *o, struct pve_error *e)
{
	pve_error_clear(e);
	if (!json_object_is_type(o, json_type_object))
		return -1;
	json_object *v;
	e->kind = PVE_ERR_API;
	if (json_object_object_get_ex(o, "kind", &v) &&
	    pve_err_kind_parse(json_object_get_string(v), &e->kind) < 0)
		e->kind = PVE_ERR_API;
	if (json_object_object_get_ex(o, "http_status", &v))
		e->http_status = json_object_get_int(v);
	if (json_object_object_get_ex(o, "ambiguous", &v))
		e->ambiguous = json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "param_errors", &v) &&
	    json_object_is_type(v, json_type_object))
		e->param_errors = json_object_get(v);
	if (dup_member(o, "what", &e->what) < 0 || dup_member(o, "message", &e->message) < 0 ||
	    dup_member(o, "upid", &e->upid) < 0 || dup_member(o, "detail", &e->detail) < 0) {
		pve_error_clear(e);
		e->kind = PVE_ERR_INTERNAL;
	}
	return 0;
}
