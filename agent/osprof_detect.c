/* osprof_detect.c - the facts (captured command output keyed by command
 * line, and their transcript file) and OS detection from them: uname,
 * freebsd-version, os-release and lsb_release parsing (see osprof.h).
 * No I/O. */
#include "osprof_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

const char *const osprof_detect_cmds[] = {
	"uname -sr", "freebsd-version -k", "cat /etc/os-release", "lsb_release -a", NULL,
};

/* ---- facts -------------------------------------------------------------------- */

int os_facts_add(struct os_facts *f, const char *cmd, const char *out)
{
	char *c = strdup(cmd), *o = strdup(out ? out : "");
	struct os_fact *v = (c && o) ? realloc(f->v, (f->n + 1) * sizeof *v) : NULL;
	if (!v) {
		free(c);
		free(o);
		return -1;
	}
	f->v = v;
	f->v[f->n].cmd = c;
	f->v[f->n].out = o;
	f->n++;
	return 0;
}

const char *os_facts_get(const struct os_facts *f, const char *cmd)
{
	if (!f)
		return NULL;
	for (size_t i = f->n; i > 0; i--)
		if (strcmp(f->v[i - 1].cmd, cmd) == 0)
			return f->v[i - 1].out;
	return NULL;
}

void os_facts_free(struct os_facts *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].cmd);
		free(f->v[i].out);
	}
	free(f->v);
	f->v = NULL;
	f->n = 0;
}

int os_facts_parse(const char *path, const char *transcript,
		   struct os_facts *f, char **err)
{
	if (err)
		*err = NULL;
	const char *p = transcript ? transcript : "";
	char *cmd = NULL;
	struct sbuf out = {0};
	size_t lineno = 0;
	int rc = 0;
	while (*p && rc == 0) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		lineno++;
		if (len >= 2 && p[0] == '$' && p[1] == ' ') {
			if (cmd) {
				rc = os_facts_add(f, cmd, sbuf_str(&out));
				free(cmd);
				cmd = NULL;
				sbuf_reset(&out);
			}
			if (rc == 0 && !(cmd = strndup(p + 2, len - 2)))
				rc = -1;
		} else if (!cmd) {
			if (len) {
				if (err)
					*err = strprintf("%s:%zu: output before the first \"$ command\" line", path, lineno);
				sbuf_free(&out);
				return -1;
			}
		} else {
			rc = sbuf_addn(&out, p, len);
			if (rc == 0)
				rc = sbuf_addc(&out, '\n');
		}
		p = e ? e + 1 : p + len;
	}
	if (rc == 0 && cmd)
		rc = os_facts_add(f, cmd, sbuf_str(&out));
	free(cmd);
	sbuf_free(&out);
	if (rc < 0)
		osprofi_set_err(err, "out of memory");
	return rc;
}

/* ---- detection ------------------------------------------------------------------ */

void os_info_free(struct os_info *oi)
{
	free(oi->id);
	free(oi->name);
	free(oi->version);
	free(oi->codename);
	free(oi->pretty);
	free(oi->kernel);
	memset(oi, 0, sizeof *oi);
}

/* "9.0-RELEASE", "2.6.28-11-server", "24.04": up to three numbers */
static int parse_version(const char *s, int *a, int *b, int *c)
{
	*a = *b = 0;
	if (c)
		*c = 0;
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	char *e;
	*a = (int)strtol(s, &e, 10);
	if (*e == '.' && isdigit((unsigned char)e[1])) {
		*b = (int)strtol(e + 1, &e, 10);
		if (c && *e == '.' && isdigit((unsigned char)e[1]))
			*c = (int)strtol(e + 1, &e, 10);
	}
	return 0;
}

/* First line of s, trimmed, malloc'd ("" if empty). */
static char *first_line(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	size_t n = strcspn(s, "\r\n");
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return strndup(s, n);
}

/* Value of KEY= in os-release text (quotes removed), malloc'd or NULL. */
static char *osr_get(const char *text, const char *key)
{
	size_t kl = strlen(key);
	const char *p = text;
	char *val = NULL;
	while (p && *p) {
		size_t len = strcspn(p, "\n");
		if (len > kl && memcmp(p, key, kl) == 0 && p[kl] == '=') {
			const char *v = p + kl + 1;
			size_t vl = len - kl - 1;
			if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
				v++;
				vl -= 2;
			}
			free(val);
			val = strndup(v, vl);
			if (!val)
				return NULL;
		}
		p += len;
		if (*p)
			p++;
	}
	return val;
}

/* "Release:\t9.04" from lsb_release -a */
static char *lsb_get(const char *text, const char *key)
{
	size_t kl = strlen(key);
	const char *p = text;
	while (p && *p) {
		size_t len = strcspn(p, "\n");
		if (len > kl && memcmp(p, key, kl) == 0 && p[kl] == ':') {
			const char *v = p + kl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			size_t vl = len - (size_t)(v - p);
			while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r'))
				vl--;
			return strndup(v, vl);
		}
		p += len;
		if (*p)
			p++;
	}
	return NULL;
}

static char *lower_dup(const char *s)
{
	char *r = strdup(s);
	for (char *q = r; q && *q; q++)
		*q = (char)tolower((unsigned char)*q);
	return r;
}

int osprof_detect(const struct os_facts *f, struct os_info *oi, char **err)
{
	memset(oi, 0, sizeof *oi);
	if (err)
		*err = NULL;
	const char *un = os_facts_get(f, "uname -sr");
	char *line = un ? first_line(un) : NULL;
	if (un && !line)
		goto nomem;
	if (line && strncmp(line, "FreeBSD ", 8) == 0) {
		oi->family = OS_FREEBSD;
		if (!(oi->kernel = strdup(line + 8)))
			goto nomem;
	} else if (line && strncmp(line, "Linux ", 6) == 0) {
		oi->family = OS_LINUX;
		if (!(oi->kernel = strdup(line + 6)))
			goto nomem;
	}
	free(line);
	line = NULL;
	if (oi->kernel)
		parse_version(oi->kernel, &oi->kmajor, &oi->kminor, &oi->kpatch);

	if (oi->family == OS_FREEBSD) {
		const char *fv = os_facts_get(f, "freebsd-version -k");
		char *v = fv ? first_line(fv) : NULL;
		int a, b;
		if (v && parse_version(v, &a, &b, NULL) == 0 && strchr(v, '-')) {
			oi->version = v;
		} else {
			free(v);
			if (!oi->kernel || !(oi->version = strdup(oi->kernel)))
				goto nomem;
		}
		parse_version(oi->version, &oi->major, &oi->minor, NULL);
		if (!(oi->id = strdup("freebsd")) || !(oi->name = strdup("FreeBSD")))
			goto nomem;
		if (oi->major == 0)
			goto unknown;
		return 0;
	}

	const char *osr = os_facts_get(f, "cat /etc/os-release");
	char *id = osr ? osr_get(osr, "ID") : NULL;
	if (id && *id) {
		if (oi->family == OS_UNKNOWN)
			oi->family = OS_LINUX;
		oi->id = id;
		oi->name = osr_get(osr, "NAME");
		oi->version = osr_get(osr, "VERSION_ID");
		oi->pretty = osr_get(osr, "PRETTY_NAME");
		oi->codename = osr_get(osr, "VERSION_CODENAME");
		if (!oi->codename)
			oi->codename = osr_get(osr, "UBUNTU_CODENAME");
	} else {
		free(id);
		const char *lsb = os_facts_get(f, "lsb_release -a");
		char *dist = lsb ? lsb_get(lsb, "Distributor ID") : NULL;
		if (dist && *dist) {
			if (oi->family == OS_UNKNOWN)
				oi->family = OS_LINUX;
			oi->name = dist;
			if (!(oi->id = lower_dup(dist)))
				goto nomem;
			oi->version = lsb_get(lsb, "Release");
			oi->pretty = lsb_get(lsb, "Description");
			oi->codename = lsb_get(lsb, "Codename");
		} else {
			free(dist);
		}
	}
	if (oi->family != OS_LINUX || !oi->id)
		goto unknown;
	if (oi->version)
		parse_version(oi->version, &oi->major, &oi->minor, NULL);
	return 0;
nomem:
	free(line);
	os_info_free(oi);
	osprofi_set_err(err, "out of memory");
	return -1;
unknown:
	os_info_free(oi);
	osprofi_set_err(err, "cannot tell the guest OS: no usable uname -sr, /etc/os-release or lsb_release output");
	return -1;
}
