/* util.h - small helpers shared by every module: a growable string buffer
 * and whole-file reading. Functions return 0 on success and -1 on failure
 * (errno set); nothing here truncates silently. */
#ifndef PVAGENT_UTIL_H
#define PVAGENT_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* A growable, always NUL-terminated string. Zero-initialise to use:
 * struct sbuf b = {0}; */
struct sbuf {
	char *s;
	size_t len;
	size_t cap;
};

int sbuf_addn(struct sbuf *b, const char *s, size_t n);
int sbuf_add(struct sbuf *b, const char *s);
int sbuf_addc(struct sbuf *b, char c);
int sbuf_addf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int sbuf_vaddf(struct sbuf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Text so far ("" for an empty buffer); valid until the next change. */
const char *sbuf_str(const struct sbuf *b);
/* Hand the string to the caller (never NULL on success) and reset. */
char *sbuf_steal(struct sbuf *b);
void sbuf_reset(struct sbuf *b);
void sbuf_free(struct sbuf *b);

/* Read a whole file. *out is NUL-terminated and malloc'd; *len (if not
 * NULL) excludes the NUL. */
int read_file(const char *path, char **out, size_t *len);

/* What read_small_file demands of a file besides being a regular file of
 * at most max bytes. */
#define RF_TRUSTED 0x1u  /* owned by the user (euid) or root, and not
			    writable by group or others (as ssh demands of
			    its config files) */
#define RF_PRIVATE 0x2u  /* no permission bits for group or others at all
			    (secrets; implies RF_TRUSTED) */
#define RF_NOFOLLOW 0x4u /* path itself must not be a symbolic link */

/* Read a small file that decides what pvagent does (a configuration, a
 * template, a secret): opened without blocking (a FIFO or device never
 * hangs), refused unless a regular file of at most max bytes meeting flags.
 * Returns 0 with *out as read_file does; -1 with *why a malloc'd reason
 * without the path ("not a regular file (a character device)", "owned by
 * uid 65534, not by you or root", "writable by group or others (mode 0664):
 * run chmod go-w", ...; NULL if memory ran out). */
int read_small_file(const char *path, size_t max, unsigned flags, char **out, size_t *len,
		    char **why);

/* malloc'd printf; NULL on failure. */
char *strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The userinfo of url ("user:password" before the host's '@'), *len
 * bytes, or NULL when it has none. */
const char *url_userinfo(const char *url, size_t *len);
/* url as an error may show it: its userinfo (user:password@) replaced by
 * "***@" (malloc'd; NULL when url is NULL or memory ran out). */
char *url_shown(const char *url);
/* A config key of an indexed family: "net3" with base "net" (digits, at
 * least one, follow). */
bool key_indexed(const char *key, const char *base);
/* Replace *err (freed; err may be NULL) with a malloc'd printf message:
 * the one way a "char **err" out-parameter is filled. */
void err_setf(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The candidate nearest to a mistyped word (Levenshtein distance of at
 * most a third of its length, one to three edits), for "did you mean";
 * NULL when none is that near. */
const char *str_closest(const char *word, const char *const *candidates, size_t n);
/* seconds as the configuration writes a duration (2h, 90m, 44s; 1.5s
 * below 10 s, 77ms below 1 s) into buf (at least 24 bytes); buf. */
const char *str_duration(char *buf, size_t len, double seconds);
/* A copy of s with %XX decoded and trailing whitespace removed (PVE's
 * sshkeys); NULL when out of memory. */
char *str_pct_decode_trim(const char *s);
/* A vector of n malloc'd strings: append s (taken; freed on failure, and
 * NULL fails), and free the vector with its strings. */
int strv_add(char ***v, size_t *n, char *s);
void strv_free(char **v, size_t n);

/* One "NODE[:PRIORITY]" item of a PVE node list (HA node-affinity rules,
 * HA groups): cut at its ':' in place, its priority returned (0 when it
 * has none). */
long node_item_priority(char *item);

#endif
