/* rewrite.c - pure text transforms of guest files (see rewrite.h): name
 * maps, sh variables (loader.conf, rc.conf), rc.conf NIC variables, fstab,
 * GRUB command lines, initramfs modules, ifupdown, netplan, udev rules. */
#include "rewrite.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---------------------------------------------------------- */

struct line {
	const char *s; /* start of the line */
	size_t len;    /* without the newline */
	int nl;        /* ends with '\n' */
};

struct lines {
	struct line *v;
	size_t n;
};

static int split_lines(const char *text, struct lines *ls)
{
	ls->v = NULL;
	ls->n = 0;
	if (!text)
		return 0;
	size_t cap = 0;
	const char *p = text;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (ls->n == cap) {
			size_t nc = cap ? cap * 2 : 32;
			struct line *v = realloc(ls->v, nc * sizeof *v);
			if (!v) {
				free(ls->v);
				ls->v = NULL;
				return -1;
			}
			ls->v = v;
			cap = nc;
		}
		ls->v[ls->n].s = p;
		ls->v[ls->n].len = len;
		ls->v[ls->n].nl = e != NULL;
		ls->n++;
		p = e ? e + 1 : p + len;
	}
	return 0;
}

static void vset_err(char **err, const char *path, size_t line,
		     const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));
static void vset_err(char **err, const char *path, size_t line,
		     const char *fmt, va_list ap)
{
	if (!err)
		return;
	struct sbuf b = {0};
	int rc = line ? sbuf_addf(&b, "%s:%zu: ", path ? path : "-", line)
		      : sbuf_addf(&b, "%s: ", path ? path : "-");
	if (rc == 0)
		rc = sbuf_vaddf(&b, fmt, ap);
	if (rc < 0) {
		sbuf_free(&b);
		*err = NULL;
		return;
	}
	*err = sbuf_steal(&b);
}

static int fail(char **err, const char *path, size_t line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char **err, const char *path, size_t line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset_err(err, path, line, fmt, ap);
	va_end(ap);
	return -1;
}

static int oom(char **err, const char *path)
{
	return fail(err, path, 0, "out of memory");
}

static void init_out(char **out, char **err)
{
	*out = NULL;
	if (err)
		*err = NULL;
}

/* Finish: hand over the buffer or report out of memory. */
static int finish(struct sbuf *b, int rc, const char *path, char **out,
		  char **err)
{
	if (rc == 0) {
		*out = sbuf_steal(b);
		if (*out)
			return 0;
		return oom(err, path);
	}
	sbuf_free(b);
	if (err && !*err)
		oom(err, path);
	return -1;
}

static int add_line(struct sbuf *b, const struct line *l)
{
	if (sbuf_addn(b, l->s, l->len) < 0)
		return -1;
	return l->nl ? sbuf_addc(b, '\n') : 0;
}

/* Before appending a new line: make sure the text so far ends with '\n'. */
static int ensure_nl(struct sbuf *b)
{
	if (b->len && b->s[b->len - 1] != '\n')
		return sbuf_addc(b, '\n');
	return 0;
}

static int is_blank_or_comment(const struct line *l)
{
	size_t i = 0;
	while (i < l->len && (l->s[i] == ' ' || l->s[i] == '\t'))
		i++;
	return i == l->len || l->s[i] == '#';
}

static size_t skip_ws(const char *s, size_t i, size_t len)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i;
}

static size_t skip_word(const char *s, size_t i, size_t len)
{
	while (i < len && s[i] != ' ' && s[i] != '\t')
		i++;
	return i;
}

static int span_eq(const char *s, size_t len, const char *z)
{
	return strlen(z) == len && memcmp(s, z, len) == 0;
}

/* ---- name maps ---------------------------------------------------------------- */

int name_map_add(struct name_map *m, const char *from, const char *to)
{
	char *t = strdup(to);
	if (!t)
		return -1;
	for (size_t i = 0; i < m->n; i++) {
		if (strcmp(m->v[i].from, from) == 0) {
			free(m->v[i].to);
			m->v[i].to = t;
			return 0;
		}
	}
	char *f = strdup(from);
	struct name_pair *v = f ? realloc(m->v, (m->n + 1) * sizeof *v) : NULL;
	if (!v) {
		free(f);
		free(t);
		return -1;
	}
	m->v = v;
	m->v[m->n].from = f;
	m->v[m->n].to = t;
	m->n++;
	return 0;
}

const char *name_map_get(const struct name_map *m, const char *from)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i].from, from) == 0)
			return m->v[i].to;
	return NULL;
}

void name_map_free(struct name_map *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].from);
		free(m->v[i].to);
	}
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* "ad0" + "s1a": the rest after a whole-disk match must not continue the
 * disk name (digit after digit, letter after letter). */
static int disk_prefix_ok(const char *key, size_t klen, const char *rest)
{
	if (!*rest)
		return 1;
	char last = key[klen - 1];
	if (isdigit((unsigned char)last))
		return !isdigit((unsigned char)*rest);
	if (isalpha((unsigned char)last))
		return !isalpha((unsigned char)*rest);
	return 0;
}

static const char *nodev(const char *s)
{
	return strncmp(s, "/dev/", 5) == 0 ? s + 5 : s;
}

char *rw_map_device(const struct name_map *disks, const char *dev)
{
	errno = 0;
	if (!disks || !dev)
		return NULL;
	dev = nodev(dev);
	/* an exact entry wins, then the longest whole-disk prefix */
	const struct name_pair *best = NULL;
	size_t bestlen = 0;
	for (size_t i = 0; i < disks->n; i++) {
		const char *from = nodev(disks->v[i].from);
		size_t kl = strlen(from);
		if (strcmp(dev, from) == 0) {
			best = &disks->v[i];
			bestlen = kl;
			break;
		}
		if (kl == 0 || kl <= bestlen || strncmp(dev, from, kl) != 0)
			continue;
		if (disk_prefix_ok(from, kl, dev + kl)) {
			best = &disks->v[i];
			bestlen = kl;
		}
	}
	if (!best)
		return NULL;
	char *r = strprintf("%s%s", nodev(best->to), dev + bestlen);
	if (!r)
		errno = ENOMEM;
	return r;
}

const char *rw_phase_name(enum rw_phase p)
{
	switch (p) {
	case RW_PREPARE: return "prepare";
	case RW_SWITCH: return "switch";
	case RW_FINAL: return "final";
	}
	return "?";
}

/* ---- sh variables -------------------------------------------------------------- */

struct kvline {
	size_t name_off, name_len;
	size_t val_off, val_len; /* raw value, quotes included */
	size_t in_off, in_len;   /* value inside quotes */
	char quote;              /* '"', '\'' or 0 */
};

enum { KV_NONE = 0, KV_ASSIGN = 1, KV_OTHER = 2, KV_UNTERMINATED = 3, KV_GARBAGE = 4 };

static int parse_kv(const struct line *l, int strict, struct kvline *kl)
{
	const char *s = l->s;
	size_t len = l->len, i = skip_ws(s, 0, len);
	if (i == len || s[i] == '#')
		return KV_NONE;
	if (!(isalpha((unsigned char)s[i]) || s[i] == '_'))
		return KV_OTHER;
	kl->name_off = i;
	while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.'))
		i++;
	kl->name_len = i - kl->name_off;
	if (strict)
		i = skip_ws(s, i, len);
	if (i == len || s[i] != '=')
		return KV_OTHER;
	i++;
	if (strict)
		i = skip_ws(s, i, len);
	kl->val_off = i;
	kl->quote = 0;
	if (i < len && (s[i] == '"' || s[i] == '\'')) {
		char q = s[i++];
		kl->quote = q;
		kl->in_off = i;
		while (i < len && s[i] != q) {
			if (q == '"' && s[i] == '\\' && i + 1 < len)
				i++;
			i++;
		}
		if (i == len)
			return KV_UNTERMINATED;
		kl->in_len = i - kl->in_off;
		i++;
	} else {
		kl->in_off = i;
		while (i < len && s[i] != ' ' && s[i] != '\t' && s[i] != '#' &&
		       s[i] != ';' && s[i] != '"' && s[i] != '\'')
			i++;
		kl->in_len = i - kl->in_off;
	}
	kl->val_len = i - kl->val_off;
	i = skip_ws(s, i, len);
	if (i < len && s[i] != '#')
		return strict ? KV_GARBAGE : KV_OTHER;
	return KV_ASSIGN;
}

struct kvent {
	struct kvline kl;
	int kind; /* KV_* */
};

/* Parse every line (one entry per line); errors reported for strict files
 * and for unterminated quotes. NULL on error. */
static struct kvent *parse_kv_all(const char *path, const struct lines *ls,
				  int strict, char **err)
{
	struct kvent *ents = calloc(ls->n ? ls->n : 1, sizeof *ents);
	if (!ents) {
		oom(err, path);
		return NULL;
	}
	for (size_t i = 0; i < ls->n; i++) {
		int k = parse_kv(&ls->v[i], strict, &ents[i].kl);
		const char *why = NULL;
		if (k == KV_UNTERMINATED)
			why = "unterminated quote";
		else if (k == KV_GARBAGE)
			why = "unexpected text after the value";
		else if (k == KV_OTHER && strict)
			why = "expected name=\"value\"";
		if (why) {
			free(ents);
			fail(err, path, i + 1, "%s", why);
			return NULL;
		}
		ents[i].kind = k;
	}
	return ents;
}

static int kv_name_is(const struct line *l, const struct kvline *kl, const char *name)
{
	return span_eq(l->s + kl->name_off, kl->name_len, name);
}

int rw_kv_ensure(const char *path, const char *text, const struct rw_kv *kv,
		 size_t n, int strict, char **out, char **err)
{
	init_out(out, err);
	struct lines ls;
	if (split_lines(text, &ls) < 0)
		return oom(err, path);
	size_t *last = calloc(n ? n : 1, sizeof *last); /* line index + 1 */
	if (!last) {
		free(ls.v);
		return oom(err, path);
	}
	struct kvent *ke = parse_kv_all(path, &ls, strict, err);
	if (!ke) {
		free(ls.v);
		free(last);
		return -1;
	}
	for (size_t i = 0; i < ls.n; i++)
		if (ke[i].kind == KV_ASSIGN)
			for (size_t k = 0; k < n; k++)
				if (kv_name_is(&ls.v[i], &ke[i].kl, kv[k].key))
					last[k] = i + 1;
	struct sbuf b = {0};
	int rc = 0;
	for (size_t i = 0; i < ls.n && rc == 0; i++) {
		const struct line *l = &ls.v[i];
		size_t k;
		for (k = 0; k < n; k++)
			if (last[k] == i + 1)
				break;
		if (k == n || span_eq(l->s + ke[i].kl.in_off, ke[i].kl.in_len, kv[k].value)) {
			rc = add_line(&b, l);
			continue;
		}
		size_t after = ke[i].kl.val_off + ke[i].kl.val_len;
		if (sbuf_addn(&b, l->s, ke[i].kl.val_off) < 0 ||
		    sbuf_addf(&b, "\"%s\"", kv[k].value) < 0 ||
		    sbuf_addn(&b, l->s + after, l->len - after) < 0 ||
		    (l->nl && sbuf_addc(&b, '\n') < 0))
			rc = -1;
	}
	for (size_t k = 0; k < n && rc == 0; k++) {
		if (last[k])
			continue;
		/* the same key twice in kv: only once */
		size_t j;
		for (j = 0; j < k; j++)
			if (strcmp(kv[j].key, kv[k].key) == 0)
				break;
		if (j < k)
			continue;
		if (ensure_nl(&b) < 0 || sbuf_addf(&b, "%s=\"%s\"\n", kv[k].key, kv[k].value) < 0)
			rc = -1;
	}
	free(ls.v);
	free(ke);
	free(last);
	return finish(&b, rc, path, out, err);
}

int rw_kv_get(const char *path, const char *text, const char *key,
	      int strict, char **value, char **err)
{
	*value = NULL;
	if (err)
		*err = NULL;
	struct lines ls;
	if (split_lines(text, &ls) < 0)
		return oom(err, path);
	struct kvent *ke = parse_kv_all(path, &ls, strict, err);
	if (!ke) {
		free(ls.v);
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < ls.n; i++) {
		if (ke[i].kind != KV_ASSIGN || !kv_name_is(&ls.v[i], &ke[i].kl, key))
			continue;
		free(*value);
		*value = strndup(ls.v[i].s + ke[i].kl.in_off, ke[i].kl.in_len);
		if (!*value) {
			rc = oom(err, path);
			break;
		}
	}
	free(ls.v);
	free(ke);
	return rc;
}

/* ---- rc.conf NIC --------------------------------------------------------------- */

/* Offset of ifname as a '_'-separated component of the variable name, or
 * (size_t)-1. */
static size_t name_component(const char *name, size_t nlen, const char *ifname)
{
	size_t il = strlen(ifname);
	for (size_t i = 0; i + il <= nlen; i++) {
		if ((i == 0 || name[i - 1] == '_') &&
		    (i + il == nlen || name[i + il] == '_') &&
		    memcmp(name + i, ifname, il) == 0)
			return i;
	}
	return (size_t)-1;
}

/* name with every '_'-separated component equal to oldif replaced by newif
 * (ifconfig_em0_alias0 -> ifconfig_vtnet0_alias0). All of them, not just
 * the first: a copy still naming oldif (ifconfig_em0_em0 ->
 * ifconfig_vtnet0_em0) would be copied again by the next pass. */
static char *rename_components(const char *name, size_t nlen, const char *oldif,
			       const char *newif)
{
	struct sbuf b = {0};
	int rc = 0;
	for (size_t i = 0; i < nlen && rc == 0;) {
		size_t e = i;
		while (e < nlen && name[e] != '_')
			e++;
		rc = span_eq(name + i, e - i, oldif) ? sbuf_add(&b, newif)
						      : sbuf_addn(&b, name + i, e - i);
		if (rc == 0 && e < nlen)
			rc = sbuf_addc(&b, '_');
		i = e + 1;
	}
	if (rc < 0) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

static char *replace_span(const char *s, size_t len, size_t off, size_t olen,
			  const char *with)
{
	struct sbuf b = {0};
	if (sbuf_addn(&b, s, off) < 0 || sbuf_add(&b, with) < 0 ||
	    sbuf_addn(&b, s + off + olen, len - off - olen) < 0) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

static int ends_with(const char *s, size_t len, const char *suf)
{
	size_t sl = strlen(suf);
	return len >= sl && memcmp(s + len - sl, suf, sl) == 0;
}

/* Word positions inside a value: find whole word w (space separated). */
static size_t find_word(const char *s, size_t len, const char *w)
{
	size_t wl = strlen(w);
	for (size_t i = 0; i + wl <= len; i++) {
		if ((i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t') &&
		    (i + wl == len || s[i + wl] == ' ' || s[i + wl] == '\t') &&
		    memcmp(s + i, w, wl) == 0)
			return i;
	}
	return (size_t)-1;
}

struct nameset {
	char **v;
	size_t n;
};

static int nameset_has(const struct nameset *ns, const char *s, size_t len)
{
	for (size_t i = 0; i < ns->n; i++)
		if (span_eq(s, len, ns->v[i]))
			return 1;
	return 0;
}

static int nameset_add(struct nameset *ns, const char *s, size_t len)
{
	if (nameset_has(ns, s, len))
		return 0;
	char **v = realloc(ns->v, (ns->n + 1) * sizeof *v);
	if (!v)
		return -1;
	ns->v = v;
	ns->v[ns->n] = strndup(s, len);
	if (!ns->v[ns->n])
		return -1;
	ns->n++;
	return 0;
}

static void nameset_free(struct nameset *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	ns->v = NULL;
	ns->n = 0;
}

/* FINAL for a list value: every oldif word leaves it with one separating
 * blank, except that the first becomes newif when newif is not listed.
 * Every one, not just the first: "em0 em0" gave "vtnet0 em0" and a
 * second pass then "vtnet0". malloc'd. */
static char *list_final(const char *val, size_t len, const char *oldif, const char *newif,
			int has_new)
{
	size_t ol = strlen(oldif), w;
	char *cur = strndup(val, len);
	while (cur && (w = find_word(cur, strlen(cur), oldif)) != (size_t)-1) {
		size_t n = strlen(cur), s0 = w, e0 = w + ol;
		char *next;
		if (!has_new) {
			next = replace_span(cur, n, w, ol, newif);
			has_new = 1;
		} else {
			if (e0 < n)
				e0++;
			else if (s0 > 0)
				s0--;
			next = replace_span(cur, n, s0, e0 - s0, "");
		}
		free(cur);
		cur = next;
	}
	return cur;
}

/* Emit line l with its value replaced by "newval" (double quoted). */
static int emit_with_value(struct sbuf *b, const struct line *l,
			   const struct kvline *kl, const char *newval)
{
	size_t after = kl->val_off + kl->val_len;
	if (sbuf_addn(b, l->s, kl->val_off) < 0 ||
	    sbuf_addf(b, "\"%s\"", newval) < 0 ||
	    sbuf_addn(b, l->s + after, l->len - after) < 0)
		return -1;
	return l->nl ? sbuf_addc(b, '\n') : 0;
}

int rw_rcconf_nic(const char *path, const char *text, const char *oldif,
		  const char *newif, enum rw_phase phase, char **out,
		  char **err)
{
	init_out(out, err);
	if (!oldif || !newif || !*oldif || !*newif || strcmp(oldif, newif) == 0) {
		char *c = strdup(text ? text : "");
		if (!c)
			return oom(err, path);
		*out = c;
		return 0;
	}
	struct lines ls;
	if (split_lines(text, &ls) < 0)
		return oom(err, path);
	struct kvent *ke = parse_kv_all(path, &ls, 0, err);
	if (!ke) {
		free(ls.v);
		return -1;
	}
	struct nameset assigned = {0};
	int rc = 0;
	for (size_t i = 0; i < ls.n && rc == 0; i++)
		if (ke[i].kind == KV_ASSIGN)
			rc = nameset_add(&assigned, ls.v[i].s + ke[i].kl.name_off, ke[i].kl.name_len);
	struct sbuf b = {0};
	size_t olen = strlen(oldif);
	for (size_t i = 0; i < ls.n && rc == 0; i++) {
		const struct line *l = &ls.v[i];
		const struct kvline *kl = &ke[i].kl;
		if (ke[i].kind != KV_ASSIGN) {
			rc = add_line(&b, l);
			continue;
		}
		const char *name = l->s + kl->name_off;
		const char *val = l->s + kl->in_off;
		/* A list (*_interfaces) or single-interface (*_interface)
		 * variable is edited in its value only, even when its name has
		 * an oldif component: a renamed copy would be a list naming
		 * oldif, which the next pass would edit again. */
		int is_list = ends_with(name, kl->name_len, "_interfaces");
		int is_single = ends_with(name, kl->name_len, "_interface");
		if (!is_list && !is_single && name_component(name, kl->name_len, oldif) != (size_t)-1) {
			char *newname = rename_components(name, kl->name_len, oldif, newif);
			if (!newname) {
				rc = -1;
				break;
			}
			int have_new = nameset_has(&assigned, newname, strlen(newname));
			/* last assignment of this old variable? */
			int is_last = 1;
			for (size_t j = i + 1; j < ls.n; j++)
				if (ke[j].kind == KV_ASSIGN && ke[j].kl.name_len == kl->name_len &&
				    memcmp(ls.v[j].s + ke[j].kl.name_off, name, kl->name_len) == 0)
					is_last = 0;
			struct line copy = *l;
			size_t after = kl->name_off + kl->name_len;
			char *renamed = strprintf("%.*s%s%.*s", (int)kl->name_off, l->s, newname,
						  (int)(l->len - after), l->s + after);
			if (!renamed) {
				free(newname);
				rc = -1;
				break;
			}
			copy.s = renamed;
			copy.len = strlen(renamed);
			copy.nl = 1;
			if (phase == RW_FINAL) {
				/* Only the last assignment is renamed; earlier ones
				 * are dropped, as on the staged path, where PREPARE
				 * copied only the last and FINAL drops every oldif
				 * line once newif is set. */
				if (!have_new && is_last) {
					copy.nl = l->nl;
					rc = add_line(&b, &copy);
					if (rc == 0)
						rc = nameset_add(&assigned, newname, strlen(newname));
				}
			} else {
				rc = add_line(&b, l);
				if (rc == 0 && is_last && !have_new) {
					rc = ensure_nl(&b);
					if (rc == 0)
						rc = add_line(&b, &copy);
					if (rc == 0)
						rc = nameset_add(&assigned, newname, strlen(newname));
				}
			}
			free(renamed);
			free(newname);
			continue;
		}
		if (is_list) {
			size_t w = find_word(val, kl->in_len, oldif);
			int has_new = find_word(val, kl->in_len, newif) != (size_t)-1;
			char *nv = NULL;
			if (w != (size_t)-1 && phase != RW_FINAL && !has_new) {
				struct sbuf v = {0};
				if (sbuf_addn(&v, val, w + olen) < 0 || sbuf_addc(&v, ' ') < 0 ||
				    sbuf_add(&v, newif) < 0 ||
				    sbuf_addn(&v, val + w + olen, kl->in_len - w - olen) < 0) {
					sbuf_free(&v);
					rc = -1;
					break;
				}
				nv = sbuf_steal(&v);
			} else if (w != (size_t)-1 && phase == RW_FINAL) {
				nv = list_final(val, kl->in_len, oldif, newif, has_new);
			} else {
				rc = add_line(&b, l);
				continue;
			}
			if (!nv) {
				rc = -1;
				break;
			}
			rc = emit_with_value(&b, l, kl, nv);
			free(nv);
			continue;
		}
		if (phase == RW_FINAL && is_single &&
		    span_eq(val, kl->in_len, oldif)) {
			rc = emit_with_value(&b, l, kl, newif);
			continue;
		}
		rc = add_line(&b, l);
	}
	nameset_free(&assigned);
	free(ls.v);
	free(ke);
	return finish(&b, rc, path, out, err);
}

/* ---- fstab and GRUB --------------------------------------------------------------- */

/* A /dev/ spec naming a raw device: fills base (no /dev/, no .eli-like
 * suffix) and returns the suffix offset inside spec; 0 if not a raw
 * device. */
static int raw_device(const char *spec, size_t len, char **base, size_t *suffix_off)
{
	*base = NULL;
	if (len <= 5 || memcmp(spec, "/dev/", 5) != 0)
		return 0;
	size_t i = 5;
	while (i < len && spec[i] != '/' && spec[i] != '.')
		i++;
	if (i < len && spec[i] == '/')
		return 0; /* /dev/gpt/..., /dev/disk/by-uuid/..., /dev/mapper/... */
	*base = strndup(spec + 5, i - 5);
	if (!*base)
		return -1;
	*suffix_off = i;
	return 1;
}

enum devkind { DEV_KEEP, DEV_LABEL, DEV_RENAME };

struct devdecision {
	enum devkind kind;
	char *label;  /* DEV_LABEL: bus-independent spec to use now */
	char *target; /* DEV_RENAME: spec after the bus switch */
};

/* Decide for one device spec: keep (not a raw device, or not in the disk
 * map), label (a bus-independent alias is known) or rename. */
static int decide(const struct rw_devmaps *dm, const char *spec, size_t len,
		  struct devdecision *d)
{
	memset(d, 0, sizeof *d);
	char *base;
	size_t suf;
	int r = raw_device(spec, len, &base, &suf);
	if (r <= 0)
		return r;
	char *mapped = rw_map_device(dm->disks, base);
	if (!mapped && errno == ENOMEM) {
		free(base);
		return -1;
	}
	const char *label = dm->labels ? name_map_get(dm->labels, base) : NULL;
	if (!label && mapped && dm->labels)
		label = name_map_get(dm->labels, mapped); /* known under the new name */
	int rc = 0;
	if (label) {
		d->kind = DEV_LABEL;
		d->label = strprintf("%s%.*s", label, (int)(len - suf), spec + suf);
		rc = d->label ? 0 : -1;
	} else if (mapped) {
		d->kind = DEV_RENAME;
		d->target = strprintf("/dev/%s%.*s", mapped, (int)(len - suf), spec + suf);
		rc = d->target ? 0 : -1;
	}
	free(mapped);
	free(base);
	return rc;
}

static void decision_free(struct devdecision *d)
{
	free(d->label);
	free(d->target);
	memset(d, 0, sizeof *d);
}

static int emit_replaced(struct sbuf *b, const struct line *l, size_t off,
			 size_t len, const char *with)
{
	if (sbuf_addn(b, l->s, off) < 0 || sbuf_add(b, with) < 0 ||
	    sbuf_addn(b, l->s + off + len, l->len - off - len) < 0)
		return -1;
	return l->nl ? sbuf_addc(b, '\n') : 0;
}

static int note(struct sbuf *notes, const char *path, size_t line,
		const char *spec, size_t len, const char *target)
{
	if (!notes)
		return 0;
	return sbuf_addf(notes, "%s:%zu: %.*s has no bus-independent name; renamed to %s at switch time\n",
			 path, line, (int)len, spec, target);
}

int rw_fstab(const char *path, const char *text, const struct rw_devmaps *dm,
	     enum rw_phase phase, char **out, struct sbuf *notes, char **err)
{
	init_out(out, err);
	struct lines ls;
	if (split_lines(text, &ls) < 0)
		return oom(err, path);
	struct nameset specs = {0};
	int rc = 0;
	/* first pass: validate and collect specs */
	for (size_t i = 0; i < ls.n && rc == 0; i++) {
		const struct line *l = &ls.v[i];
		if (is_blank_or_comment(l))
			continue;
		size_t nf = 0, p = 0, s0 = 0, s1 = 0;
		for (;;) {
			p = skip_ws(l->s, p, l->len);
			if (p == l->len || l->s[p] == '#')
				break;
			size_t e = skip_word(l->s, p, l->len);
			if (nf == 0) {
				s0 = p;
				s1 = e;
			}
			nf++;
			p = e;
		}
		if (nf < 3) {
			free(ls.v);
			nameset_free(&specs);
			return fail(err, path, i + 1, "expected at least 3 fields (device, mount point, type), found %zu", nf);
		}
		rc = nameset_add(&specs, l->s + s0, s1 - s0);
	}
	struct sbuf b = {0};
	for (size_t i = 0; i < ls.n && rc == 0; i++) {
		const struct line *l = &ls.v[i];
		if (is_blank_or_comment(l)) {
			rc = add_line(&b, l);
			continue;
		}
		size_t s0 = skip_ws(l->s, 0, l->len), s1 = skip_word(l->s, s0, l->len);
		size_t t0 = skip_word(l->s, skip_ws(l->s, s1, l->len), l->len); /* end of mount point */
		t0 = skip_ws(l->s, t0, l->len);
		size_t t1 = skip_word(l->s, t0, l->len);
		int is_swap = span_eq(l->s + t0, t1 - t0, "swap");
		struct devdecision d;
		if (decide(dm, l->s + s0, s1 - s0, &d) < 0) {
			rc = -1;
			break;
		}
		if (d.kind == DEV_KEEP) {
			rc = add_line(&b, l);
		} else if (d.kind == DEV_LABEL) {
			rc = emit_replaced(&b, l, s0, s1 - s0, d.label);
		} else if (is_swap) {
			int have_target = nameset_has(&specs, d.target, strlen(d.target));
			if (phase == RW_FINAL) {
				/* renamed once: a repeated old line is dropped, as
				 * after PREPARE, which copied only the first */
				if (!have_target)
					rc = emit_replaced(&b, l, s0, s1 - s0, d.target);
				if (rc == 0 && !have_target)
					rc = nameset_add(&specs, d.target, strlen(d.target));
			} else {
				rc = add_line(&b, l);
				if (rc == 0 && !have_target) {
					struct line copy = *l;
					copy.nl = 1;
					rc = ensure_nl(&b);
					if (rc == 0)
						rc = emit_replaced(&b, &copy, s0, s1 - s0, d.target);
					if (rc == 0)
						rc = nameset_add(&specs, d.target, strlen(d.target));
				}
			}
		} else if (phase == RW_PREPARE) {
			rc = add_line(&b, l);
			if (rc == 0)
				rc = note(notes, path, i + 1, l->s + s0, s1 - s0, d.target);
		} else {
			rc = emit_replaced(&b, l, s0, s1 - s0, d.target);
		}
		decision_free(&d);
	}
	nameset_free(&specs);
	free(ls.v);
	return finish(&b, rc, path, out, err);
}

void rw_fstab_ents_free(struct rw_fstab_ent *ents, size_t n)
{
	for (size_t i = 0; ents && i < n; i++) {
		free(ents[i].spec);
		free(ents[i].file);
		free(ents[i].type);
		free(ents[i].opts);
	}
	free(ents);
}

int rw_fstab_parse(const char *path, const char *text,
		   struct rw_fstab_ent **ents, size_t *n, char **err)
{
	*ents = NULL;
	*n = 0;
	if (err)
		*err = NULL;
	struct lines ls;
	if (split_lines(text, &ls) < 0)
		return oom(err, path);
	struct rw_fstab_ent *v = calloc(ls.n ? ls.n : 1, sizeof *v);
	if (!v) {
		free(ls.v);
		return oom(err, path);
	}
	size_t cnt = 0;
	int rc = 0;
	for (size_t i = 0; i < ls.n && rc == 0; i++) {
		const struct line *l = &ls.v[i];
		if (is_blank_or_comment(l))
			continue;
		char *f[4] = {NULL, NULL, NULL, NULL};
		size_t nf = 0, p = 0;
		for (;;) {
			p = skip_ws(l->s, p, l->len);
			if (p == l->len || l->s[p] == '#')
				break;
			size_t e = skip_word(l->s, p, l->len);
			if (nf < 4 && !(f[nf] = strndup(l->s + p, e - p)))
				rc = -1;
			nf++;
			p = e;
		}
		if (rc == 0 && nf < 3)
			rc = fail(err, path, i + 1, "expected at least 3 fields (device, mount point, type), found %zu", nf);
		if (rc < 0) {
			for (int k = 0; k < 4; k++)
				free(f[k]);
			break;
		}
		v[cnt] = (struct rw_fstab_ent){f[0], f[1], f[2], f[3], i + 1};
		cnt++;
	}
	free(ls.v);
	if (rc < 0) {
		rw_fstab_ents_free(v, cnt);
		if (err && !*err)
			oom(err, path);
		return -1;
	}
	*ents = v;
	*n = cnt;
	return 0;
}

/* Is this line a kernel command line holder? */
static int grub_cmdline_line(const struct line *l)
{
	size_t i = skip_ws(l->s, 0, l->len);
	const char *s = l->s + i;
	size_t n = l->len - i;
	if (n > 7 && memcmp(s, "kernel", 6) == 0 && (s[6] == ' ' || s[6] == '\t'))
		return 1;
	if (n > 18 && memcmp(s, "GRUB_CMDLINE_LINUX", 18) == 0)
		return 1;
	if (n > 7 && memcmp(s, "RESUME=", 7) == 0) /* initramfs-tools conf.d/resume */
		return 1;
	if (n && s[0] == '#') {
		size_t j = skip_ws(s, 1, n);
		if (n - j >= 5 && (memcmp(s + j, "kopt=", 5) == 0))
			return 1;
		if (n - j >= 11 && memcmp(s + j, "altoptions=", 11) == 0)
			return 1;
	}
	return 0;
}

/* GRUB device.map line "(hd0)   /dev/sda": span of the device. */
static int devmap_line(const struct line *l, size_t *d0, size_t *d1)
{
	size_t i = skip_ws(l->s, 0, l->len);
	if (l->len - i < 5 || l->s[i] != '(' || l->s[i + 1] != 'h' || l->s[i + 2] != 'd')
		return 0;
	size_t e = skip_word(l->s, i, l->len);
	if (l->s[e - 1] != ')')
		return 0;
	*d0 = skip_ws(l->s, e, l->len);
	*d1 = skip_word(l->s, *d0, l->len);
	return *d1 > *d0 + 5 && memcmp(l->s + *d0, "/dev/", 5) == 0;
}

int rw_grub(const char *path, const char *text, const struct rw_devmaps *dm,
	    enum rw_phase phase, char **out, struct sbuf *notes, char **err)
{
	init_out(out, err);
	struct lines ls;
	if (split_lines(text, &ls) < 0)
		return oom(err, path);
	struct sbuf b = {0};
	int rc = 0;
	struct rw_devmaps nolabels = {dm->disks, NULL};
	for (size_t i = 0; i < ls.n && rc == 0; i++) {
		const struct line *l = &ls.v[i];
		size_t d0 = 0, d1 = 0;
		if (devmap_line(l, &d0, &d1)) {
			/* device.map needs a real disk: no labels, rename at switch */
			struct devdecision d;
			if (decide(&nolabels, l->s + d0, d1 - d0, &d) < 0) {
				rc = -1;
				break;
			}
			if (d.kind == DEV_RENAME && phase != RW_PREPARE)
				rc = emit_replaced(&b, l, d0, d1 - d0, d.target);
			else
				rc = add_line(&b, l);
			if (rc == 0 && d.kind == DEV_RENAME && phase == RW_PREPARE)
				rc = note(notes, path, i + 1, l->s + d0, d1 - d0, d.target);
			decision_free(&d);
			continue;
		}
		if (!grub_cmdline_line(l)) {
			rc = add_line(&b, l);
			continue;
		}
		struct sbuf nl = {0};
		size_t p = 0;
		while (p < l->len && rc == 0) {
			const char *keys[] = {"root=", "resume=", "RESUME="};
			size_t klen = 0;
			int at_tok = p == 0 || l->s[p - 1] == ' ' || l->s[p - 1] == '\t' ||
				     l->s[p - 1] == '"' || l->s[p - 1] == '\'' || l->s[p - 1] == '=';
			for (size_t k = 0; at_tok && k < 3; k++)
				if (l->len - p >= strlen(keys[k]) &&
				    memcmp(l->s + p, keys[k], strlen(keys[k])) == 0)
					klen = strlen(keys[k]);
			if (!klen) {
				rc = sbuf_addc(&nl, l->s[p++]);
				continue;
			}
			size_t v0 = p + klen, v1 = v0;
			while (v1 < l->len && l->s[v1] != ' ' && l->s[v1] != '\t' &&
			       l->s[v1] != '"' && l->s[v1] != '\'')
				v1++;
			struct devdecision d;
			if (decide(dm, l->s + v0, v1 - v0, &d) < 0) {
				rc = -1;
				break;
			}
			const char *with = d.kind == DEV_LABEL ? d.label
					   : d.kind == DEV_RENAME && phase != RW_PREPARE ? d.target : NULL;
			rc = sbuf_addn(&nl, l->s + p, klen);
			if (rc == 0 && with)
				rc = sbuf_add(&nl, with);
			else if (rc == 0)
				rc = sbuf_addn(&nl, l->s + v0, v1 - v0);
			if (rc == 0 && d.kind == DEV_RENAME && phase == RW_PREPARE)
				rc = note(notes, path, i + 1, l->s + v0, v1 - v0, d.target);
			decision_free(&d);
			p = v1;
		}
		if (rc == 0 && l->nl)
			rc = sbuf_addc(&nl, '\n');
		if (rc == 0)
			rc = sbuf_addn(&b, sbuf_str(&nl), nl.len);
		sbuf_free(&nl);
	}
	free(ls.v);
	return finish(&b, rc, path, out, err);
}

/* ---- initramfs modules ------------------------------------------------------------- */

static int modname_eq(const char *a, size_t alen, const char *b)
{
	if (strlen(b) != alen)
		return 0;
	for (size_t i = 0; i < alen; i++) {
		char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];
		if (x != y)
			return 0;
	}
	return 1;
}

int rw_modules_ensure(const char *path, const char *text,
		      const char *const *mods, size_t n, char **out,
		      char **err)
{
	init_out(out, err);
	struct lines ls;
	if (split_lines(text, &ls) < 0)
		return oom(err, path);
	struct sbuf b = {0};
	int rc = sbuf_add(&b, text ? text : "");
	for (size_t k = 0; k < n && rc == 0; k++) {
		int found = 0;
		for (size_t i = 0; i < ls.n && !found; i++) {
			const struct line *l = &ls.v[i];
			if (is_blank_or_comment(l))
				continue;
			size_t w0 = skip_ws(l->s, 0, l->len), w1 = skip_word(l->s, w0, l->len);
			found = modname_eq(l->s + w0, w1 - w0, mods[k]);
		}
		for (size_t j = 0; j < k && !found; j++)
			found = modname_eq(mods[j], strlen(mods[j]), mods[k]);
		if (!found) {
			rc = ensure_nl(&b);
			if (rc == 0)
				rc = sbuf_addf(&b, "%s\n", mods[k]);
		}
	}
	free(ls.v);
	return finish(&b, rc, path, out, err);
}

/* ---- ifupdown ----------------------------------------------------------------------- */

static int first_word_is(const struct line *l, const char *w)
{
	size_t w0 = skip_ws(l->s, 0, l->len), w1 = skip_word(l->s, w0, l->len);
	return span_eq(l->s + w0, w1 - w0, w);
}

static int is_stanza_start(const struct line *l)
{
	size_t w0 = skip_ws(l->s, 0, l->len), w1 = skip_word(l->s, w0, l->len);
	const char *w = l->s + w0;
	size_t n = w1 - w0;
	return span_eq(w, n, "iface") || span_eq(w, n, "mapping") ||
	       span_eq(w, n, "auto") || span_eq(w, n, "source") ||
	       span_eq(w, n, "source-directory") || span_eq(w, n, "rename") ||
	       (n > 6 && memcmp(w, "allow-", 6) == 0);
}

static int is_auto_line(const struct line *l)
{
	size_t w0 = skip_ws(l->s, 0, l->len), w1 = skip_word(l->s, w0, l->len);
	return span_eq(l->s + w0, w1 - w0, "auto") ||
	       (w1 - w0 > 6 && memcmp(l->s + w0, "allow-", 6) == 0);
}

/* "iface NAME FAMILY METHOD": word spans of NAME and FAMILY */
static int iface_words(const struct line *l, size_t *n0, size_t *n1, size_t *f0, size_t *f1)
{
	if (!first_word_is(l, "iface"))
		return 0;
	size_t p = skip_word(l->s, skip_ws(l->s, 0, l->len), l->len);
	*n0 = skip_ws(l->s, p, l->len);
	*n1 = skip_word(l->s, *n0, l->len);
	*f0 = skip_ws(l->s, *n1, l->len);
	*f1 = skip_word(l->s, *f0, l->len);
	return *n1 > *n0;
}

/* Copy of a line with every whole word oldw replaced by neww. */
static char *subst_word(const char *s, size_t len, const char *oldw, const char *neww)
{
	struct sbuf b = {0};
	size_t ol = strlen(oldw), p = 0;
	while (p < len) {
		int wordstart = p == 0 || !(isalnum((unsigned char)s[p - 1]) || s[p - 1] == '_');
		if (wordstart && len - p >= ol && memcmp(s + p, oldw, ol) == 0 &&
		    (p + ol == len || !(isalnum((unsigned char)s[p + ol]) || s[p + ol] == '_'))) {
			if (sbuf_add(&b, neww) < 0)
				goto bad;
			p += ol;
			continue;
		}
		if (sbuf_addc(&b, s[p++]) < 0)
			goto bad;
	}
	if (sbuf_addn(&b, "", 0) < 0)
		goto bad;
	return sbuf_steal(&b);
bad:
	sbuf_free(&b);
	return NULL;
}

static int emit_subst(struct sbuf *b, const struct line *l, const char *oldw,
		      const char *neww, int force_nl)
{
	char *s = subst_word(l->s, l->len, oldw, neww);
	if (!s)
		return -1;
	int rc = sbuf_add(b, s);
	free(s);
	if (rc == 0 && (l->nl || force_nl))
		rc = sbuf_addc(b, '\n');
	return rc;
}

/* Does an "iface NAME FAM" stanza exist? */
static int have_iface(const struct lines *ls, const char *name, const char *fam, size_t flen)
{
	for (size_t i = 0; i < ls->n; i++) {
		size_t n0, n1, f0, f1;
		if (iface_words(&ls->v[i], &n0, &n1, &f0, &f1) &&
		    span_eq(ls->v[i].s + n0, n1 - n0, name) &&
		    f1 - f0 == flen && memcmp(ls->v[i].s + f0, fam, flen) == 0)
			return 1;
	}
	return 0;
}

/* Interface name w (len n) is oldif, or an alias/VLAN of it ("eth0:1",
 * "eth0.100"); *renamed gets the newif form (NULL if out of memory). */
static int if_matches(const char *w, size_t n, const char *oldif, const char *newif,
		      char **renamed)
{
	size_t ol = strlen(oldif);
	*renamed = NULL;
	if (n < ol || memcmp(w, oldif, ol) != 0 || (n > ol && w[ol] != ':' && w[ol] != '.'))
		return 0;
	*renamed = strprintf("%s%.*s", newif, (int)(n - ol), w + ol);
	return 1;
}

/* Is word z among the words of l after the keyword? */
static int line_has_word(const struct line *l, const char *z)
{
	size_t p = skip_word(l->s, skip_ws(l->s, 0, l->len), l->len);
	for (;;) {
		p = skip_ws(l->s, p, l->len);
		if (p == l->len || l->s[p] == '#')
			return 0;
		size_t e = skip_word(l->s, p, l->len);
		if (span_eq(l->s + p, e - p, z))
			return 1;
		p = e;
	}
}

/* auto / allow-* line. PREPARE/SWITCH: each oldif word (or alias of it)
 * gets its newif form after it unless present. FINAL: oldif words are
 * dropped where the newif form is present, renamed where not; a line left
 * with no interface is dropped (one that named none is kept). Separators
 * are kept. */
static int auto_line(struct sbuf *b, const struct line *l, const char *oldif,
		     const char *newif, enum rw_phase phase)
{
	struct sbuf o = {0};
	size_t kw = skip_word(l->s, skip_ws(l->s, 0, l->len), l->len);
	int rc = sbuf_addn(&o, l->s, kw), words = 0, dropped = 0;
	size_t p = kw;
	while (rc == 0) {
		size_t w0 = skip_ws(l->s, p, l->len);
		if (w0 == l->len || l->s[w0] == '#') {
			rc = sbuf_addn(&o, l->s + p, l->len - p);
			break;
		}
		size_t w1 = skip_word(l->s, w0, l->len);
		char *nw = NULL;
		if (!if_matches(l->s + w0, w1 - w0, oldif, newif, &nw)) {
			rc = sbuf_addn(&o, l->s + p, w1 - p);
			words++;
		} else if (!nw) {
			rc = -1;
		} else if (phase != RW_FINAL) {
			rc = sbuf_addn(&o, l->s + p, w1 - p);
			if (rc == 0 && !line_has_word(l, nw))
				rc = sbuf_addf(&o, " %s", nw);
			words++;
		} else if (!line_has_word(l, nw)) {
			rc = sbuf_addn(&o, l->s + p, w0 - p);
			if (rc == 0)
				rc = sbuf_add(&o, nw);
			words++;
		} else {
			/* dropped with the blanks after it, so the next word
			 * (the newif PREPARE added) takes its place and its
			 * spacing, as in a rename; the last word goes with the
			 * blanks before it */
			size_t nx = skip_ws(l->s, w1, l->len);
			if (nx < l->len && l->s[nx] != '#') {
				rc = sbuf_addn(&o, l->s + p, w0 - p);
				w1 = nx;
			}
			dropped = 1;
		}
		free(nw);
		p = w1;
	}
	/* only a line this emptied goes: "auto" alone was not ours */
	if (rc == 0 && (words > 0 || !dropped)) {
		rc = sbuf_addn(b, sbuf_str(&o), o.len);
		if (rc == 0 && l->nl)
			rc = sbuf_addc(b, '\n');
	}
	sbuf_free(&o);
	return rc;
}

int rw_interfaces_nic(const char *path, const char *text, const char *oldif,
		      const char *newif, enum rw_phase phase, char **out,
		      char **err)
{
	init_out(out, err);
	struct lines ls;
	if (split_lines(text, &ls) < 0)
		return oom(err, path);
	struct sbuf b = {0};
	int rc = 0;
	int same = !oldif || !newif || strcmp(oldif, newif) == 0;
	for (size_t i = 0; i < ls.n && rc == 0; i++) {
		const struct line *l = &ls.v[i];
		size_t n0, n1, f0, f1;
		if (same || is_blank_or_comment(l)) {
			rc = add_line(&b, l);
			continue;
		}
		if (is_auto_line(l)) {
			rc = auto_line(&b, l, oldif, newif, phase);
			continue;
		}
		char *newname = NULL;
		if (!iface_words(l, &n0, &n1, &f0, &f1) ||
		    !if_matches(l->s + n0, n1 - n0, oldif, newif, &newname)) {
			rc = add_line(&b, l);
			continue;
		}
		if (!newname) {
			rc = -1;
			break;
		}
		/* stanza: this line and its option lines */
		size_t end = i + 1;
		while (end < ls.n && !is_blank_or_comment(&ls.v[end]) && !is_stanza_start(&ls.v[end]))
			end++;
		int have_new = have_iface(&ls, newname, l->s + f0, f1 - f0);
		int fin = phase == RW_FINAL;
		for (size_t j = i; j < end && rc == 0 && !fin; j++)
			rc = add_line(&b, &ls.v[j]);
		if (rc == 0 && !have_new) {
			/* FINAL renames the stanza, PREPARE and SWITCH add a
			 * renamed copy. The header renames the interface only: an
			 * oldif word among the family and method words is not the
			 * interface, and renaming it made the copy's family differ
			 * from the one have_iface() looks for on the next pass. */
			struct line head = *l;
			head.nl = fin ? l->nl : 1;
			rc = fin ? 0 : ensure_nl(&b);
			if (rc == 0)
				rc = emit_replaced(&b, &head, n0, n1 - n0, newname);
			for (size_t j = i + 1; j < end && rc == 0; j++)
				rc = emit_subst(&b, &ls.v[j], oldif, newif, !fin);
		}
		free(newname);
		i = end - 1;
	}
	free(ls.v);
	return finish(&b, rc, path, out, err);
}

/* ---- netplan ---------------------------------------------------------------------- */

static size_t indent_of(const struct line *l)
{
	size_t i = 0;
	while (i < l->len && l->s[i] == ' ')
		i++;
	return i;
}

/* "KEY:" at its indentation; returns 1 and the offset after ':' */
static int yaml_key(const struct line *l, const char *key, size_t *after)
{
	size_t i = indent_of(l), kl = strlen(key);
	if (l->len - i < kl + 1 || memcmp(l->s + i, key, kl) != 0 || l->s[i + kl] != ':')
		return 0;
	if (i + kl + 1 < l->len && l->s[i + kl + 1] != ' ' && l->s[i + kl + 1] != '\t')
		return 0;
	*after = i + kl + 1;
	return 1;
}

/* Nothing but blanks or a comment after offset p? */
static int rest_empty(const struct line *l, size_t p)
{
	p = skip_ws(l->s, p, l->len);
	return p == l->len || l->s[p] == '#';
}

int rw_netplan_pin_mac(const char *path, const char *text, const char *ifname,
		       const char *mac, char **out, char **err)
{
	init_out(out, err);
	struct lines ls;
	if (split_lines(text, &ls) < 0)
		return oom(err, path);
	/* locate "ethernets:" then "IFNAME:" as its child */
	size_t eth = (size_t)-1, ifl = (size_t)-1, after = 0, eth_after = 0;
	for (size_t i = 0; i < ls.n; i++) {
		if (is_blank_or_comment(&ls.v[i]))
			continue;
		if (eth == (size_t)-1) {
			if (yaml_key(&ls.v[i], "ethernets", &eth_after))
				eth = i;
			continue;
		}
		if (indent_of(&ls.v[i]) <= indent_of(&ls.v[eth]))
			break;
		if (yaml_key(&ls.v[i], ifname, &after)) {
			ifl = i;
			break;
		}
	}
	struct sbuf b = {0};
	int rc = 0;
	if (eth != (size_t)-1 && !rest_empty(&ls.v[eth], eth_after)) {
		free(ls.v);
		return fail(err, path, eth + 1, "flow-style \"ethernets\" mapping is not supported");
	}
	if (ifl == (size_t)-1 || !mac || !*mac) {
		free(ls.v);
		rc = sbuf_add(&b, text ? text : "");
		return finish(&b, rc, path, out, err);
	}
	if (!rest_empty(&ls.v[ifl], after)) {
		free(ls.v);
		return fail(err, path, ifl + 1, "flow-style mapping for %s is not supported", ifname);
	}
	size_t ci = indent_of(&ls.v[ifl]);
	size_t step = ci - indent_of(&ls.v[eth]);
	size_t ki = 0, last = ifl;
	int has_match = 0, has_setname = 0;
	for (size_t j = ifl + 1; j < ls.n; j++) {
		if (is_blank_or_comment(&ls.v[j]))
			continue;
		size_t ind = indent_of(&ls.v[j]);
		if (ind <= ci)
			break;
		if (!ki)
			ki = ind;
		size_t a;
		if (ind == ki && yaml_key(&ls.v[j], "match", &a))
			has_match = 1;
		if (ind == ki && yaml_key(&ls.v[j], "set-name", &a))
			has_setname = 1;
		last = j;
	}
	if (!ki)
		ki = ci + step;
	size_t sub = ki + (ki - ci);
	for (size_t i = 0; i < ls.n && rc == 0; i++) {
		rc = add_line(&b, &ls.v[i]);
		if (i != last || has_match || rc)
			continue;
		rc = ensure_nl(&b);
		if (rc == 0)
			rc = sbuf_addf(&b, "%*smatch:\n%*smacaddress: %s\n", (int)ki, "", (int)sub, "", mac);
		if (rc == 0 && !has_setname)
			rc = sbuf_addf(&b, "%*sset-name: %s\n", (int)ki, "", ifname);
	}
	free(ls.v);
	return finish(&b, rc, path, out, err);
}

/* ---- udev ---------------------------------------------------------------------------- */

/* Offset of `key` at a token start (after start, ',' or blank) outside a
 * quoted value, or -1. Text inside quotes is never a key: in
 * DRIVERS==", NAME=" ..." the NAME=" is part of the DRIVERS value, and
 * taking it for a key made the second pass, after that value became "?*",
 * find another NAME=. */
static size_t find_key(const char *s, size_t len, const char *key)
{
	size_t kl = strlen(key);
	int quoted = 0;
	for (size_t i = 0; i + kl <= len; i++) {
		if (!quoted && (i == 0 || s[i - 1] == ',' || s[i - 1] == ' ' || s[i - 1] == '\t') &&
		    memcmp(s + i, key, kl) == 0)
			return i;
		if (s[i] == '"')
			quoted = !quoted;
	}
	return (size_t)-1;
}

int rw_udev_net(const char *path, const char *text,
		const struct name_map *nics, char **out, char **err)
{
	init_out(out, err);
	struct lines ls;
	if (split_lines(text, &ls) < 0)
		return oom(err, path);
	struct sbuf b = {0};
	int rc = 0;
	for (size_t i = 0; i < ls.n && rc == 0; i++) {
		const struct line *l = &ls.v[i];
		size_t np = is_blank_or_comment(l) ? (size_t)-1 : find_key(l->s, l->len, "NAME=\"");
		if (np == (size_t)-1) {
			rc = add_line(&b, l);
			continue;
		}
		size_t n0 = np + 6, n1 = n0;
		while (n1 < l->len && l->s[n1] != '"')
			n1++;
		if (n1 == l->len) {
			free(ls.v);
			sbuf_free(&b);
			return fail(err, path, i + 1, "unterminated NAME=\"...\"");
		}
		size_t dp = find_key(l->s, l->len, "DRIVERS==\"");
		size_t d0 = 0, d1 = 0;
		if (dp != (size_t)-1) {
			d0 = dp + 10;
			d1 = d0;
			while (d1 < l->len && l->s[d1] != '"')
				d1++;
			if (d1 == l->len) {
				free(ls.v);
				sbuf_free(&b);
				return fail(err, path, i + 1, "unterminated DRIVERS==\"...\"");
			}
			if (span_eq(l->s + d0, d1 - d0, "?*"))
				dp = (size_t)-1;
		}
		char *nm = strndup(l->s + n0, n1 - n0);
		if (!nm) {
			rc = -1;
			break;
		}
		const char *to = name_map_get(nics, nm);
		free(nm);
		/* emit with up to two span replacements, in offset order */
		struct {
			size_t a, z;
			const char *with;
		} rep[2];
		int nr = 0;
		if (dp != (size_t)-1)
			rep[nr].a = d0, rep[nr].z = d1, rep[nr++].with = "?*";
		if (to)
			rep[nr].a = n0, rep[nr].z = n1, rep[nr++].with = to;
		if (nr == 2 && rep[0].a > rep[1].a) {
			size_t ta = rep[0].a, tz = rep[0].z;
			const char *tw = rep[0].with;
			rep[0] = rep[1];
			rep[1].a = ta, rep[1].z = tz, rep[1].with = tw;
		}
		size_t p = 0;
		for (int k = 0; k < nr && rc == 0; k++) {
			rc = sbuf_addn(&b, l->s + p, rep[k].a - p);
			if (rc == 0)
				rc = sbuf_add(&b, rep[k].with);
			p = rep[k].z;
		}
		if (rc == 0)
			rc = sbuf_addn(&b, l->s + p, l->len - p);
		if (rc == 0 && l->nl)
			rc = sbuf_addc(&b, '\n');
	}
	free(ls.v);
	return finish(&b, rc, path, out, err);
}

/* ---- mentions ------------------------------------------------------------------------ */

int rw_note_mentions(const char *path, const char *text, const char *word,
		     struct sbuf *notes)
{
	struct lines ls;
	if (split_lines(text, &ls) < 0)
		return -1;
	int rc = 0;
	size_t wl = strlen(word);
	for (size_t i = 0; i < ls.n && rc == 0 && wl; i++) {
		const struct line *l = &ls.v[i];
		if (is_blank_or_comment(l))
			continue;
		for (size_t p = 0; p + wl <= l->len; p++) {
			int start = p == 0 || !(isalnum((unsigned char)l->s[p - 1]) || l->s[p - 1] == '_');
			int end = p + wl == l->len ||
				  !(isalnum((unsigned char)l->s[p + wl]) || l->s[p + wl] == '_');
			if (start && end && memcmp(l->s + p, word, wl) == 0) {
				rc = sbuf_addf(notes, "%s:%zu: names %s\n", path, i + 1, word);
				break;
			}
		}
	}
	free(ls.v);
	return rc;
}
