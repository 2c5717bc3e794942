/* conf_edit.h - an INI file edited in place, as `git config` does: a key
 * of a section set (the section or key added when missing), every other
 * line (sections, keys, comments, blank lines, line ends) kept byte for
 * byte; and the atomic write of such a file (a temporary file in the same
 * directory renamed over it, its mode kept). `pvagent setup` uses it on
 * pvagent.conf. */
#ifndef PVAGENT_CONF_EDIT_H
#define PVAGENT_CONF_EDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct conf_edit {
	char *path;    /* as given, for messages */
	char **lines;  /* each with its line end ("\n", "\r\n", or none at the end) */
	size_t n;
	bool changed;  /* a set changed a line */
};

/* Take text (len bytes) as the file's content. It must parse as ini.h
 * says; otherwise -1 with *err "PATH:LINE: what" (malloc'd). */
int conf_edit_load(struct conf_edit *e, const char *path, const char *text, size_t len,
		   char **err);
/* Set key = value in [section] or [section "label"] (label NULL: the
 * unlabelled one): the key's first line rewritten (its indentation and
 * line end kept; untouched when the value is the same), else a line added
 * after the section's last key, else the section added at the end.
 * value: one line, no control character. 0, or -1 (out of memory, or a
 * value or name that cannot be written: *err says which). */
int conf_edit_set(struct conf_edit *e, const char *section, const char *label,
		  const char *key, const char *value, char **err);
/* The value of key in [section] / [section "label"] now (malloc'd), or
 * NULL when it is not set (or memory ran out). */
char *conf_edit_get(const struct conf_edit *e, const char *section, const char *label,
		    const char *key);
/* The text as it is now (malloc'd). */
char *conf_edit_text(const struct conf_edit *e);
void conf_edit_free(struct conf_edit *e);

/* Write text to path through PATH.tmp.PID in the same directory (O_EXCL,
 * O_NOFOLLOW, fsync) renamed over path, with mode; mode 0: the file's mode
 * when it exists, else 0600. -1 with *why "PATH: reason" (malloc'd). */
int conf_write_atomic(const char *path, const char *text, mode_t mode, char **why);

#endif
