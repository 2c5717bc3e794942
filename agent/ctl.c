/* ctl.c - the control protocol's framing and message shapes (ctl.h). */
#include "ctl.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The requests: their names and who may send them (ctl.h). */
static const struct ctl_op_def ops[CTL_OP__COUNT] = {
	[CTL_OP_SUBMIT] = {"submit", CTL_SUBMIT | CTL_NOT_STOPPING},
	[CTL_OP_JOBS] = {"jobs", CTL_READ},
	[CTL_OP_JOB] = {"job", CTL_READ},
	[CTL_OP_CANCEL] = {"cancel", CTL_OWNER},
	[CTL_OP_RESUME] = {"resume", CTL_OWNER | CTL_NOT_STOPPING},
	[CTL_OP_STATUS] = {"status", CTL_READ},
	[CTL_OP_WATCH] = {"watch", CTL_READ},
	[CTL_OP_REPORT] = {"report", CTL_READ},
};

const struct ctl_op_def *ctl_op_def(enum ctl_op op)
{
	return (size_t)op < CTL_OP__COUNT && ops[op].name ? &ops[op] : NULL;
}

int ctl_op_parse(const char *name, enum ctl_op *out)
{
	for (size_t i = 0; name && i < CTL_OP__COUNT; i++)
		if (ops[i].name && strcmp(ops[i].name, name) == 0) {
			*out = (enum ctl_op)i;
			return 0;
		}
	return -1;
}

/* ---- framing -------------------------------------------------------------- */

static size_t cap(const struct ctl_lines *l)
{
	return l->max ? l->max : CTL_MAX_LINE;
}

int ctl_lines_feed(struct ctl_lines *l, const char *data, size_t n)
{
	while (n) {
		if (l->discarding) {
			const char *nl = memchr(data, '\n', n);
			if (!nl)
				return 0;
			l->discarding = false;
			n -= (size_t)(nl + 1 - data);
			data = nl + 1;
			continue;
		}
		/* forget the lines already handed out */
		if (l->buf.s && l->pos && (l->pos == l->buf.len || l->pos > 65536)) {
			memmove(l->buf.s, l->buf.s + l->pos, l->buf.len - l->pos + 1);
			l->buf.len -= l->pos;
			l->pos = 0;
		}
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl + 1 - data) : n;
		if (l->open + (nl ? take - 1 : take) > cap(l)) {
			/* too long: drop what came of it, and the rest up to its '\n' */
			l->buf.len -= l->open;
			if (l->buf.s)
				l->buf.s[l->buf.len] = '\0';
			l->open = 0;
			l->too_long = true;
			l->discarding = !nl;
		} else {
			if (sbuf_addn(&l->buf, data, take) < 0)
				return -1;
			l->open = nl ? 0 : l->open + take;
		}
		n -= take;
		data += take;
	}
	return 0;
}

int ctl_lines_next(struct ctl_lines *l, char **line, size_t *len)
{
	if (l->buf.len > l->pos) {
		char *start = l->buf.s + l->pos;
		char *nl = memchr(start, '\n', l->buf.len - l->pos);
		if (nl) {
			*nl = '\0';
			*line = start;
			*len = (size_t)(nl - start);
			l->pos += *len + 1;
			return 1;
		}
	}
	if (l->too_long) {
		l->too_long = false;
		return -1;
	}
	return 0;
}

void ctl_lines_free(struct ctl_lines *l)
{
	sbuf_free(&l->buf);
	memset(l, 0, sizeof *l);
}

/* ---- messages ---------------------------------------------------------------- */

int ctl_request_parse(const char *line, size_t len, json_object **req, enum ctl_op *op,
		      const char **code, char **msg)
{
	*req = NULL;
	*msg = NULL;
	json_tokener *tok = json_tokener_new();
	if (!tok) {
		*code = "internal";
		*msg = strdup("out of memory");
		return -1;
	}
	json_object *o = json_tokener_parse_ex(tok, line, (int)len);
	enum json_tokener_error te = json_tokener_get_error(tok);
	size_t used = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	*code = "bad_request";
	if (!o || te != json_tokener_success) {
		json_object_put(o);
		*msg = strprintf("not JSON: %s", json_tokener_error_desc(te));
		return -1;
	}
	for (; used < len; used++)
		if (line[used] != ' ' && line[used] != '\t' && line[used] != '\r')
			break;
	if (used < len || !json_object_is_type(o, json_type_object)) {
		*msg = strdup(used < len ? "more than one JSON value on the line"
					 : "a request is a JSON object");
		*req = json_object_is_type(o, json_type_object) ? o : NULL;
		if (!*req)
			json_object_put(o);
		return -1;
	}
	*req = o;
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, "op", &v) || !json_object_is_type(v, json_type_string)) {
		*msg = strdup("\"op\" (a string) is missing");
		return -1;
	}
	if (ctl_op_parse(json_object_get_string(v), op) < 0) {
		*code = "unknown_op";
		const char *name = json_object_get_string(v);
		struct sbuf b = {0};
		int r = sbuf_addf(&b, "unknown op '%.64s%s' (", name, strlen(name) > 64 ? "..." : "");
		for (size_t i = 0; r == 0 && i < CTL_OP__COUNT; i++)
			r = sbuf_addf(&b, "%s%s", i ? ", " : "", ops[i].name);
		*msg = r == 0 && sbuf_addc(&b, ')') == 0 ? sbuf_steal(&b) : NULL;
		if (!*msg)
			sbuf_free(&b);
		return -1;
	}
	return 0;
}

json_object *ctl_ok(json_object *id)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	if (id)
		json_object_object_add(o, "id", json_object_get(id));
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	return o;
}

json_object *ctl_error(json_object *id, const char *code, const char *fmt, ...)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int r = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (id)
		json_object_object_add(o, "id", json_object_get(id));
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "error", json_object_new_string(code));
	json_object_object_add(o, "message", json_object_new_string(r == 0 ? sbuf_str(&b)
									   : code));
	sbuf_free(&b);
	return o;
}

int ctl_line_add(struct sbuf *b, json_object *o)
{
	size_t n = 0;
	const char *s = o ? json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &n) : NULL;
	if (!s || sbuf_addn(b, s, n) < 0 || sbuf_addc(b, '\n') < 0)
		return -1;
	return 0;
}
