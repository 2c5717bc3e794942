/* bootread.c - the boot model's strict reading of a fixture's facts
 * transcript and of its label facts (see bootread.h). */
#include "bootread.h"

#include "util.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void br_labels_free(struct br_labels *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].dev);
		free(l->v[i].spec);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* dev -> spec; a dev added again takes the new spec. */
static int label_add(struct br_labels *l, const char *dev, const char *spec)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].dev, dev) == 0) {
			char *s = strdup(spec);
			if (!s)
				return -1;
			free(l->v[i].spec);
			l->v[i].spec = s;
			return 0;
		}
	struct br_label *nv = realloc(l->v, (l->n + 1) * sizeof *nv);
	if (!nv)
		return -1;
	l->v = nv;
	char *d = strdup(dev), *s = strdup(spec);
	if (!d || !s) {
		free(d);
		free(s);
		return -1;
	}
	l->v[l->n++] = (struct br_label){d, s};
	return 0;
}

void br_facts_free(struct br_facts *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].cmd);
		free(f->v[i].out);
	}
	free(f->v);
	f->v = NULL;
	f->n = 0;
}

/* Takes cmd only when it returns 0. */
static int fact_add(struct br_facts *f, char *cmd, struct sbuf *out, size_t line)
{
	struct br_fact *nv = realloc(f->v, (f->n + 1) * sizeof *nv);
	char *o = nv ? strdup(sbuf_str(out)) : NULL;
	if (!o) {
		if (nv)
			f->v = nv;
		return -1;
	}
	f->v = nv;
	f->v[f->n++] = (struct br_fact){cmd, o, line};
	sbuf_reset(out);
	return 0;
}

static int oom(char **err)
{
	*err = strdup("out of memory");
	return -1;
}

int br_facts_parse(const char *path, const char *text, struct br_facts *f, char **err)
{
	*err = NULL;
	f->v = NULL;
	f->n = 0;
	struct sbuf out = {0};
	char *cmd = NULL;
	size_t cmd_line = 0, lineno = 0;
	const char *p = text ? text : "";
	while (*p) {
		size_t len = strcspn(p, "\n");
		lineno++;
		if (len >= 2 && p[0] == '$' && p[1] == ' ') {
			if (cmd && fact_add(f, cmd, &out, cmd_line) < 0)
				goto nomem;
			cmd = NULL;
			if (len == 2) {
				*err = strprintf("%s:%zu: command: empty after \"$ \"", path, lineno);
				goto fail;
			}
			if (!(cmd = strndup(p + 2, len - 2)))
				goto nomem;
			cmd_line = lineno;
		} else if (!cmd) {
			if (len) {
				*err = strprintf("%s:%zu: output: before the first \"$ command\" line",
						 path, lineno);
				goto fail;
			}
		} else if (sbuf_addn(&out, p, len) < 0 || sbuf_addc(&out, '\n') < 0) {
			goto nomem;
		}
		p += len + (p[len] ? 1 : 0);
	}
	if (cmd && fact_add(f, cmd, &out, cmd_line) < 0)
		goto nomem;
	sbuf_free(&out);
	return 0;
nomem:
	oom(err);
fail:
	free(cmd);
	sbuf_free(&out);
	br_facts_free(f);
	if (!*err)
		*err = strdup("out of memory");
	return -1;
}

/* Up to max whitespace-separated words of line (len bytes) into w (copies
 * in buf, which must hold len + 1 bytes). */
static size_t words(const char *line, size_t len, char *buf, char **w, size_t max)
{
	memcpy(buf, line, len);
	buf[len] = '\0';
	size_t n = 0;
	char *save = NULL;
	for (char *t = strtok_r(buf, " \t\r", &save); t && n < max; t = strtok_r(NULL, " \t\r", &save))
		w[n++] = t;
	return n;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* "=>  34  41942973  ada0  GPT  (20G)" opens a provider; then
 * "START SIZE INDEX LABEL (SIZE)" or "START SIZE - free - (SIZE)". */
int br_gpart_labels(const char *path, size_t line, const char *out, struct br_labels *l,
		    char **err)
{
	*err = NULL;
	char *provider = NULL;
	bool gpt = false;
	int rc = 0;
	size_t k = 0;
	for (const char *p = out ? out : ""; *p && rc == 0;) {
		size_t len = strcspn(p, "\n");
		k++;
		char *buf = malloc(len + 1), *w[8];
		size_t n = buf ? words(p, len, buf, w, 8) : 0;
		bool is_free = n >= 3 && strcmp(w[2], "-") == 0; /* "- free -" */
		if (!buf) {
			rc = oom(err);
		} else if (n > 0 && strcmp(w[0], "=>") == 0) {
			if (n < 5 || !all_digits(w[1]) || !all_digits(w[2])) {
				*err = strprintf("%s:%zu: gpart show -l, output line %zu: field 4 "
						 "(scheme): want \"=> START SIZE PROVIDER SCHEME\"",
						 path, line, k);
				rc = -1;
			} else {
				free(provider);
				provider = strdup(w[3]);
				gpt = strcmp(w[4], "GPT") == 0;
				if (!provider)
					rc = oom(err);
			}
		} else if (n > 0 && (!provider || n < 4)) {
			*err = strprintf("%s:%zu: gpart show -l, output line %zu: field %zu: want "
					 "\"START SIZE INDEX LABEL\" after a \"=>\" line",
					 path, line, k, provider ? n + 1 : (size_t)1);
			rc = -1;
		} else if (n > 0 && (!all_digits(w[0]) || !all_digits(w[1]) ||
				     (!is_free && !all_digits(w[2])))) {
			size_t bad = !all_digits(w[0]) ? 0 : !all_digits(w[1]) ? 1 : 2;
			static const char *const names[] = {"start", "size", "index"};
			*err = strprintf("%s:%zu: gpart show -l, output line %zu: field %zu (%s): "
					 "'%s' is not a number", path, line, k, bad + 1, names[bad],
					 w[bad]);
			rc = -1;
		} else if (n > 0 && !is_free && gpt && w[3][0] != '(') {
			/* a labelled partition; blank lines, free space and
			 * "(null)" labels name nothing */
			char *dev = strprintf("%sp%s", provider, w[2]);
			char *spec = strprintf("/dev/gpt/%s", w[3]);
			if (!dev || !spec || label_add(l, dev, spec) < 0)
				rc = oom(err);
			free(dev);
			free(spec);
		}
		free(buf);
		p += len + (p[len] ? 1 : 0);
	}
	free(provider);
	return rc;
}

/* "superblock location	65536	id	[ 4f13ff5d 2bf8a1c6 ]" */
int br_dumpfs(const char *path, size_t line, const char *dev, const char *out,
	      struct br_labels *l, char **err)
{
	*err = NULL;
	const char *p = out ? strstr(out, "superblock location") : NULL;
	const char *id = p ? strchr(p, '[') : NULL;
	unsigned long a, b;
	if (!id || sscanf(id, "[ %lx %lx ]", &a, &b) != 2) {
		*err = strprintf("%s:%zu: dumpfs %s: field id: no \"superblock location ... id "
				 "[ HEX HEX ]\" line", path, line, dev);
		return -1;
	}
	if (a == 0 && b == 0)
		return 0; /* no id: no /dev/ufsid/ name */
	char *spec = strprintf("/dev/ufsid/%08lx%08lx", a, b);
	int rc = spec && label_add(l, dev, spec) == 0 ? 0 : oom(err);
	free(spec);
	return rc;
}

/* "/dev/sda1: UUID="..." TYPE="ext4"" (lines without a UUID: no label). */
int br_blkid(const char *path, size_t line, const char *out, struct br_labels *l, char **err)
{
	*err = NULL;
	size_t k = 0;
	for (const char *p = out ? out : ""; *p;) {
		size_t len = strcspn(p, "\n");
		k++;
		const char *colon = memchr(p, ':', len);
		if (len && (len < 6 || memcmp(p, "/dev/", 5) != 0 || !colon || colon == p + 5 ||
			    memchr(p + 5, '/', (size_t)(colon - p - 5)))) {
			*err = strprintf("%s:%zu: blkid, output line %zu: field 1 (device): want "
					 "\"/dev/NAME: KEY=\\\"VALUE\\\" ...\"", path, line, k);
			return -1;
		}
		const char *u = NULL;
		for (const char *q = colon; len && q + 7 <= p + len && !u; q++)
			if (memcmp(q, " UUID=\"", 7) == 0)
				u = q + 7;
		const char *ue = u ? memchr(u, '"', (size_t)(p + len - u)) : NULL;
		if (u && !ue) {
			*err = strprintf("%s:%zu: blkid, output line %zu: field UUID: no closing "
					 "quote", path, line, k);
			return -1;
		}
		if (u) {
			char *dev = strndup(p + 5, (size_t)(colon - p - 5));
			char *spec = strprintf("UUID=%.*s", (int)(ue - u), u);
			int rc = dev && spec ? label_add(l, dev, spec) : -1;
			free(dev);
			free(spec);
			if (rc < 0)
				return oom(err);
		}
		p += len + (p[len] ? 1 : 0);
	}
	return 0;
}

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.';
}

int br_var_get(const char *path, const char *text, const char *name, char **value,
	       char **err)
{
	*err = NULL;
	if (value)
		*value = NULL;
	int found = 0;
	size_t lineno = 0;
	for (const char *p = text ? text : ""; *p;) {
		size_t len = strcspn(p, "\n");
		const char *end = p + len, *q = p;
		lineno++;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (q < end && *q != '#') {
			const char *n0 = q;
			while (q < end && name_char(*q))
				q++;
			if (q == n0 || q >= end || *q != '=') {
				*err = strprintf("%s:%zu: field name: want NAME=VALUE", path, lineno);
				goto fail;
			}
			size_t nlen = (size_t)(q - n0);
			const char *v = ++q, *ve;
			if (v < end && *v == '"') {
				ve = memchr(v + 1, '"', (size_t)(end - v - 1));
				if (!ve) {
					*err = strprintf("%s:%zu: field value of %.*s: no closing quote",
							 path, lineno, (int)nlen, n0);
					goto fail;
				}
				v++;
				q = ve + 1;
			} else {
				while (q < end && *q != ' ' && *q != '\t' && *q != '#' && *q != '"')
					q++;
				ve = q;
			}
			while (q < end && (*q == ' ' || *q == '\t'))
				q++;
			if (q < end && *q != '#') {
				*err = strprintf("%s:%zu: field value of %.*s: text after the value",
						 path, lineno, (int)nlen, n0);
				goto fail;
			}
			if (name && strlen(name) == nlen && strncmp(name, n0, nlen) == 0) {
				found = 1;
				if (value) {
					free(*value);
					if (!(*value = strndup(v, (size_t)(ve - v)))) {
						*err = strdup("out of memory");
						goto fail;
					}
				}
			}
		}
		p += len + (p[len] ? 1 : 0);
	}
	return found;
fail:
	if (value) {
		free(*value);
		*value = NULL;
	}
	return -1;
}

int br_fstab_check(const char *path, const char *text, char **err)
{
	static const char *const names[] = {"spec", "file", "type", "options", "dump", "pass"};
	*err = NULL;
	size_t lineno = 0;
	for (const char *p = text ? text : ""; *p;) {
		size_t len = strcspn(p, "\n");
		lineno++;
		char *buf = malloc(len + 1), *w[8];
		if (!buf) {
			*err = strdup("out of memory");
			return -1;
		}
		size_t n = words(p, len, buf, w, 8);
		int rc = 0;
		if (n > 0 && w[0][0] != '#') {
			if (n < 4) {
				*err = strprintf("%s:%zu: field %zu (%s): missing", path, lineno, n + 1,
						 names[n]);
				rc = -1;
			}
			for (size_t i = 4; rc == 0 && i < n && i < 6; i++)
				if (!all_digits(w[i])) {
					*err = strprintf("%s:%zu: field %zu (%s): '%s' is not a number",
							 path, lineno, i + 1, names[i], w[i]);
					rc = -1;
				}
			if (rc == 0 && n > 6 && w[6][0] != '#') {
				*err = strprintf("%s:%zu: field 7: more than six fields", path, lineno);
				rc = -1;
			}
		}
		free(buf);
		if (rc < 0)
			return -1;
		p += len + (p[len] ? 1 : 0);
	}
	return 0;
}
