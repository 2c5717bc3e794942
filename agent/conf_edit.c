/* conf_edit.c - in-place editing of INI files and their atomic write (see
 * conf_edit.h). The structure comes from ini_parse (one parser: what it
 * refuses is refused here, and its line numbers are the lines kept). */
#include "conf_edit.h"

#include "ini.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void conf_edit_free(struct conf_edit *e)
{
	strv_free(e->lines, e->n);
	free(e->path);
	memset(e, 0, sizeof *e);
}

static int split_lines(struct conf_edit *e, const char *text, size_t len)
{
	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) + 1 : len;
		char *l = strndup(text + pos, end - pos);
		if (!l || strv_add(&e->lines, &e->n, l) < 0)
			return -1;
		pos = end;
	}
	return 0;
}

int conf_edit_load(struct conf_edit *e, const char *path, const char *text, size_t len,
		   char **err)
{
	struct ini ini;
	memset(e, 0, sizeof *e);
	*err = NULL;
	if (ini_parse(path, text, len, &ini, err) < 0)
		return -1;
	ini_free(&ini);
	if (!(e->path = strdup(path)) || split_lines(e, text, len) < 0) {
		conf_edit_free(e);
		*err = strprintf("%s: out of memory", path);
		return -1;
	}
	return 0;
}

char *conf_edit_text(const struct conf_edit *e)
{
	struct sbuf b = {0};
	int rc = sbuf_add(&b, "");
	for (size_t i = 0; rc == 0 && i < e->n; i++)
		rc = sbuf_add(&b, e->lines[i]);
	char *s = rc == 0 ? sbuf_steal(&b) : NULL;
	sbuf_free(&b);
	return s;
}

char *conf_edit_get(const struct conf_edit *e, const char *section, const char *label,
		    const char *key)
{
	char *text = conf_edit_text(e), *err = NULL, *v = NULL;
	struct ini ini;
	if (text && ini_parse(e->path, text, strlen(text), &ini, &err) == 0) {
		const struct ini_section *s = ini_find(&ini, section, label);
		const struct ini_entry *en = s ? ini_get(s, key) : NULL;
		v = en ? strdup(en->value) : NULL;
		ini_free(&ini);
	}
	free(err);
	free(text);
	return v;
}

/* Insert line (taken) before index at. */
static int insert_line(struct conf_edit *e, size_t at, char *line)
{
	if (!line || strv_add(&e->lines, &e->n, line) < 0)
		return -1;
	memmove(e->lines + at + 1, e->lines + at, (e->n - 1 - at) * sizeof *e->lines);
	e->lines[at] = line;
	return 0;
}

/* The line at index i ends with a newline (one is added to the last). */
static int end_line(struct conf_edit *e, size_t i)
{
	size_t l = strlen(e->lines[i]);
	if (l && e->lines[i][l - 1] == '\n')
		return 0;
	char *t = strprintf("%s\n", e->lines[i]);
	if (!t)
		return -1;
	free(e->lines[i]);
	e->lines[i] = t;
	return 0;
}

static bool writable(const char *s, bool name)
{
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || (name && (*p == '"' || *p == ']')))
			return false;
	return true;
}

int conf_edit_set(struct conf_edit *e, const char *section, const char *label,
		  const char *key, const char *value, char **err)
{
	*err = NULL;
	if (!writable(section, true) || (label && !writable(label, true)) ||
	    !writable(key, true) || !writable(value, false)) {
		*err = strprintf("%s: [%s] %s: a value of one line is expected", e->path, section,
				 key);
		return -1;
	}
	char *text = conf_edit_text(e), *perr = NULL;
	struct ini ini;
	if (!text || ini_parse(e->path, text, strlen(text), &ini, &perr) < 0) {
		free(text);
		*err = perr ? perr : strprintf("%s: out of memory", e->path);
		return -1;
	}
	free(text);
	const struct ini_section *s = ini_find(&ini, section, label);
	const struct ini_entry *en = s ? ini_get(s, key) : NULL;
	int rc = 0;
	if (en && strcmp(en->value, value) == 0) {
		/* as it should be: the line is kept as written */
	} else if (en) {
		char *old = e->lines[en->line - 1];
		size_t ind = strspn(old, " \t"), l = strlen(old);
		const char *eol = l >= 2 && old[l - 2] == '\r' ? "\r\n"
				: l && old[l - 1] == '\n' ? "\n" : "";
		char *nl = strprintf("%.*s%s = %s%s", (int)ind, old, key, value, eol);
		if (nl) {
			free(old);
			e->lines[en->line - 1] = nl;
			e->changed = true;
		} else {
			rc = -1;
		}
	} else if (s) {
		int last = s->line;
		for (size_t i = 0; i < s->n_entries; i++)
			last = s->entries[i].line > last ? s->entries[i].line : last;
		rc = end_line(e, (size_t)last - 1);
		if (rc == 0)
			rc = insert_line(e, (size_t)last, strprintf("%s = %s\n", key, value));
		e->changed = e->changed || rc == 0;
	} else {
		/* one line per element: the indexes are the parser's line numbers */
		if (e->n && (rc = end_line(e, e->n - 1)) == 0)
			rc = insert_line(e, e->n, strdup("\n"));
		if (rc == 0)
			rc = insert_line(e, e->n, label ? strprintf("[%s \"%s\"]\n", section, label)
							: strprintf("[%s]\n", section));
		if (rc == 0)
			rc = insert_line(e, e->n, strprintf("%s = %s\n", key, value));
		e->changed = e->changed || rc == 0;
	}
	ini_free(&ini);
	if (rc < 0 && !*err)
		*err = strprintf("%s: out of memory", e->path);
	return rc;
}

int conf_write_atomic(const char *path, const char *text, mode_t mode, char **why)
{
	struct stat st;
	if (!mode)
		mode = lstat(path, &st) == 0 ? st.st_mode & 07777 : 0600;
	char *tmp = strprintf("%s.tmp.%ld", path, (long)getpid());
	int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
	size_t len = strlen(text), off = 0;
	bool ok = fd >= 0 && fchmod(fd, mode) == 0;
	while (ok && off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	ok = ok && off == len && fsync(fd) == 0;
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	if (ok && rename(tmp, path) != 0)
		ok = false;
	if (!ok) {
		int errnum = errno;
		err_setf(why, "%s: %s", path, tmp ? strerror(errnum) : "out of memory");
		if (fd >= 0)
			unlink(tmp);
	}
	free(tmp);
	return ok ? 0 : -1;
}
