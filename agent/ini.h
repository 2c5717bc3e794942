/* ini.h - the INI dialect shared by pvagent.conf and templates: parsing into
 * an ordered tree (sections, entries, line numbers) and validation against a
 * table of known sections and keys, with "FILE:LINE: [section] key: what"
 * messages.
 *
 * Syntax:
 *   [section]            section names: letters, digits, '.', '_', '-'
 *   [section "label"]    label: any printable text except '"'
 *   key = value          key: letters, digits, '.', '_', '-'; value is the
 *                        rest of the line, surrounding blanks trimmed, may
 *                        be empty; no quote processing, no escapes
 *   # comment, ; comment whole lines only ('#' inside a value is a value)
 * No line continuation. CRLF line ends and a leading UTF-8 BOM are accepted;
 * NUL bytes and control characters other than TAB are refused. The parser
 * keeps duplicates; ini_validate() decides which are errors (a key repeats
 * only where the spec says it is a list). */
#ifndef PVAGENT_INI_H
#define PVAGENT_INI_H

#include <stddef.h>

#include "util.h"

struct ini_entry {
	char *key;
	char *value;
	int line;
};

struct ini_section {
	char *name;
	char *label; /* [name "label"]; NULL when there is none */
	int line;
	struct ini_entry *entries;
	size_t n_entries;
	size_t cap;
};

struct ini {
	char *path; /* as given, used in messages */
	struct ini_section *sections;
	size_t n_sections;
	size_t cap;
	int n_lines;
};

/* Parse text (len bytes, need not be NUL-terminated). path names the file in
 * messages. On failure returns -1, *out is left empty and *err is a malloc'd
 * "PATH:LINE: what" message (or NULL if memory ran out). */
int ini_parse(const char *path, const char *text, size_t len, struct ini *out,
	      char **err);
/* Read and parse a file: a configuration or a template, so it must be
 * trusted (read_small_file RF_TRUSTED: a regular file owned by the user or
 * root, not writable by group or others) and at most INI_MAX_BYTES long;
 * *err says which file and why otherwise. */
#define INI_MAX_BYTES (1024u * 1024u)
int ini_load(const char *path, struct ini *out, char **err);
void ini_free(struct ini *ini);

/* First section with this name and label (label NULL: an unlabelled one). */
const struct ini_section *ini_find(const struct ini *ini, const char *name,
				   const char *label);
/* First entry with this key, or NULL. */
const struct ini_entry *ini_get(const struct ini_section *s, const char *key);

/* ---- validation ---------------------------------------------------------- */

#define INI_KEY_REQUIRED 0x1u /* must be present */
#define INI_KEY_LIST 0x2u     /* may repeat; every occurrence is kept */

/* key "foo[n]" matches foo0, foo1, ... (decimal, no leading zeros). */
struct ini_key_spec {
	const char *key;
	unsigned flags;
};

#define INI_SEC_REQUIRED 0x1u /* must be present */
#define INI_SEC_LABEL 0x2u    /* written [name "label"]; repeats with distinct labels */
#define INI_SEC_ANYKEY 0x4u   /* keys are not checked here (the caller does) */

struct ini_section_spec {
	const char *name;
	unsigned flags;
	const struct ini_key_spec *keys; /* ends with {NULL, 0}; NULL = none */
};

/* Check ini against specs (array ending with a spec whose name is NULL):
 * unknown sections, label present or missing, duplicate sections, unknown
 * and duplicate keys, required sections and keys. Every problem is appended
 * to errs as one line (lines separated by '\n'), section by section; a missing
 * key is reported at its section's header line, a missing section at the
 * last line of the file. Returns the number of problems, or -1 if memory
 * ran out. */
int ini_validate(const struct ini *ini, const struct ini_section_spec *specs,
		 struct sbuf *errs);

/* Does key match a spec key (plain, or "foo[n]")? */
int ini_key_matches(const char *spec, const char *key);

/* Append one message "PATH:LINE: [section "label"] key: text" to errs
 * (newline-separated from earlier ones). sec and key may be NULL; line <= 0
 * leaves out the line number. Returns 0, or -1 if memory ran out. */
int ini_errf(struct sbuf *errs, const char *path, int line,
	     const struct ini_section *sec, const char *key, const char *fmt,
	     ...) __attribute__((format(printf, 6, 7)));

/* "[name]" or "[name "label"]", malloc'd. */
char *ini_section_title(const struct ini_section *sec);

#endif
