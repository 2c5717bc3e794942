/* diff.h - line-based unified diff of two texts (Myers O(ND)) for
 * --dry-run output. No I/O. */
#ifndef PVAGENT_DIFF_H
#define PVAGENT_DIFF_H

/* Unified diff of old -> new, labelled with path ("etc/fstab" or
 * "/etc/fstab" print as "a/etc/fstab" and "b/etc/fstab"), 3 lines of
 * context, GNU diff conventions ("\ No newline at end of file", ",1"
 * counts omitted). old or new NULL means the file is absent (/dev/null).
 * Returns a malloc'd string, "" when the texts are equal, NULL when out of
 * memory. */
char *diff_unified(const char *old, const char *new, const char *path);

/* Same with a context line count. */
char *diff_unified_ctx(const char *old, const char *new, const char *path,
		       unsigned context);

#endif
