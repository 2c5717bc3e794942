/* util.c - growable string buffer and whole-file reading (see util.h). */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int sbuf_grow(struct sbuf *b, size_t extra)
{
	if (extra > (size_t)-1 - b->len - 1) {
		errno = ENOMEM;
		return -1;
	}
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > (size_t)-1 / 2 ? need : cap * 2;
	char *s = realloc(b->s, cap);
	if (!s)
		return -1;
	b->s = s;
	b->cap = cap;
	return 0;
}

int sbuf_addn(struct sbuf *b, const char *s, size_t n)
{
	if (sbuf_grow(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

int sbuf_add(struct sbuf *b, const char *s)
{
	return sbuf_addn(b, s, strlen(s));
}

int sbuf_addc(struct sbuf *b, char c)
{
	return sbuf_addn(b, &c, 1);
}

int sbuf_vaddf(struct sbuf *b, const char *fmt, va_list ap)
{
	va_list measure, print;
	va_copy(measure, ap);
	va_copy(print, ap);
	int n = vsnprintf(NULL, 0, fmt, measure);
	va_end(measure);
	int rc = n < 0 || sbuf_grow(b, (size_t)n) < 0 ? -1 : 0;
	if (rc == 0) {
		vsnprintf(b->s + b->len, (size_t)n + 1, fmt, print);
		b->len += (size_t)n;
	}
	va_end(print);
	return rc;
}

int sbuf_addf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(b, fmt, ap);
	va_end(ap);
	return rc;
}

const char *sbuf_str(const struct sbuf *b)
{
	return b->s ? b->s : "";
}

char *sbuf_steal(struct sbuf *b)
{
	char *s = b->s ? b->s : strdup("");
	b->s = NULL;
	b->len = b->cap = 0;
	return s;
}

void sbuf_reset(struct sbuf *b)
{
	b->len = 0;
	if (b->s)
		b->s[0] = '\0';
}

void sbuf_free(struct sbuf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

int read_file(const char *path, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct sbuf b = {0};
	char chunk[65536];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n > 0 && sbuf_addn(&b, chunk, (size_t)n) < 0)) {
			int e = errno;
			close(fd);
			sbuf_free(&b);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
	}
	close(fd);
	if (len)
		*len = b.len;
	*out = sbuf_steal(&b);
	return *out ? 0 : -1;
}

static const char *file_kind(mode_t m)
{
	return S_ISDIR(m)    ? "a directory"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISSOCK(m) ? "a socket"
			     : "not a plain file";
}

int read_small_file(const char *path, size_t max, unsigned flags, char **out, size_t *len,
		    char **why)
{
	*out = NULL;
	*why = NULL;
	if (!path || !*path) {
		*why = strprintf("empty file name");
		return -1;
	}
	int of = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	if (flags & RF_NOFOLLOW)
		of |= O_NOFOLLOW;
	int fd = open(path, of);
	if (fd < 0) {
		if (errno == ELOOP && (flags & RF_NOFOLLOW))
			*why = strprintf("is a symbolic link; name the file itself, not a link "
					 "to it");
		else
			*why = strprintf("%s", strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		*why = strprintf("%s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		*why = strprintf("not a regular file (%s)", file_kind(st.st_mode));
		goto fail;
	}
	if ((flags & (RF_TRUSTED | RF_PRIVATE)) && st.st_uid != geteuid() && st.st_uid != 0) {
		*why = strprintf("owned by uid %u, not by you (uid %u) or root",
				 (unsigned)st.st_uid, (unsigned)geteuid());
		goto fail;
	}
	if ((flags & RF_PRIVATE) && (st.st_mode & 077)) {
		*why = strprintf("permissions %04o are too open (group or others have access); "
				 "run: chmod 600 %s",
				 (unsigned)(st.st_mode & 07777), path);
		goto fail;
	}
	if ((flags & RF_TRUSTED) && (st.st_mode & 022)) {
		*why = strprintf("writable by group or others (mode %04o); run: chmod go-w %s",
				 (unsigned)(st.st_mode & 07777), path);
		goto fail;
	}
	if (st.st_size < 0 || (unsigned long long)st.st_size > max) {
		*why = strprintf("too large (%lld bytes; at most %zu)", (long long)st.st_size, max);
		goto fail;
	}
	struct sbuf b = {0};
	char chunk[16384];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n > 0 && sbuf_addn(&b, chunk, (size_t)n) < 0)) {
			*why = strprintf("%s", strerror(errno));
			explicit_bzero(chunk, sizeof chunk);
			if (b.s)
				explicit_bzero(b.s, b.len);
			sbuf_free(&b);
			goto fail;
		}
		if (n == 0)
			break;
		if (b.len > max) { /* grew while being read */
			*why = strprintf("too large (more than %zu bytes)", max);
			explicit_bzero(chunk, sizeof chunk);
			explicit_bzero(b.s, b.len);
			sbuf_free(&b);
			goto fail;
		}
	}
	explicit_bzero(chunk, sizeof chunk);
	close(fd);
	if (len)
		*len = b.len;
	*out = sbuf_steal(&b);
	if (!*out) {
		*why = strprintf("out of memory");
		return -1;
	}
	return 0;
fail:
	close(fd);
	return -1;
}

char *strprintf(const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

const char *url_userinfo(const char *url, size_t *len)
{
	const char *sep = url ? strstr(url, "://") : NULL;
	const char *host = sep ? sep + 3 : url;
	size_t alen = host ? strcspn(host, "/?#") : 0;
	const char *at = NULL;
	for (size_t i = 0; i < alen; i++)
		if (host[i] == '@')
			at = host + i;
	*len = at ? (size_t)(at - host) : 0;
	return at ? host : NULL;
}

char *url_shown(const char *url)
{
	size_t n;
	const char *ui = url_userinfo(url, &n);
	if (!url || !ui)
		return url ? strdup(url) : NULL;
	return strprintf("%.*s***%s", (int)(ui - url), url, ui + n);
}

void err_setf(char **err, const char *fmt, ...)
{
	if (!err)
		return;
	free(*err);
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	*err = rc == 0 ? sbuf_steal(&b) : NULL;
	if (rc != 0)
		sbuf_free(&b);
}

bool key_indexed(const char *key, const char *base)
{
	size_t n = strlen(base);
	if (strncmp(key, base, n) != 0 || !key[n])
		return false;
	for (const char *p = key + n; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}

/* Edit distance of a and b (insertions, deletions, substitutions and
 * swaps of two neighbours: "lsit" is one from "list"), given up past max
 * (returns max + 1). */
static size_t edit_distance(const char *a, const char *b, size_t max)
{
	size_t la = strlen(a), lb = strlen(b);
	if ((la > lb ? la - lb : lb - la) > max)
		return max + 1;
	size_t *rows = malloc(3 * (lb + 1) * sizeof *rows);
	if (!rows)
		return max + 1;
	size_t *pp = rows, *prev = rows + lb + 1, *cur = rows + 2 * (lb + 1);
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    pp[j - 2] + 1 < best)
				best = pp[j - 2] + 1;
			cur[j] = best;
		}
		size_t *t = pp;
		pp = prev;
		prev = cur;
		cur = t;
	}
	size_t d = prev[lb];
	free(rows);
	return d;
}

const char *str_closest(const char *word, const char *const *candidates, size_t n)
{
	size_t len = strlen(word), max = len / 3 < 1 ? 1 : len / 3 > 3 ? 3 : len / 3;
	const char *best = NULL;
	size_t best_d = max + 1;
	for (size_t i = 0; i < n; i++) {
		if (!candidates[i])
			continue;
		size_t d = edit_distance(word, candidates[i], max);
		if (d < best_d) {
			best_d = d;
			best = candidates[i];
		}
	}
	return best;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Percent-decoded copy with trailing whitespace removed. */
char *str_pct_decode_trim(const char *s)
{
	size_t n = strlen(s);
	char *o = malloc(n + 1), *p = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int hi = i + 2 < n ? hexval((unsigned char)s[i + 1]) : -1;
		int lo = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
		if (s[i] == '%' && hi >= 0 && lo >= 0) {
			*p++ = (char)(hi * 16 + lo);
			i += 2;
		} else {
			*p++ = s[i];
		}
	}
	*p = 0;
	while (p > o && isspace((unsigned char)p[-1]))
		*--p = 0;
	return o;
}

const char *str_duration(char *buf, size_t len, double seconds)
{
	/* as the configuration writes durations: one number, one unit, the
	 * largest that says it exactly (7200 -> 2h, 5400 -> 90m, 44 -> 44s) */
	if (seconds < 0)
		seconds = 0;
	if (seconds < 1) {
		snprintf(buf, len, "%.0fms", seconds * 1000);
		return buf;
	}
	if (seconds < 10 && seconds != (double)(long)seconds) {
		snprintf(buf, len, "%.1fs", seconds);
		return buf;
	}
	long s = (long)(seconds + 0.5);
	if (s % 86400 == 0)
		snprintf(buf, len, "%ldd", s / 86400);
	else if (s % 3600 == 0)
		snprintf(buf, len, "%ldh", s / 3600);
	else if (s % 60 == 0)
		snprintf(buf, len, "%ldm", s / 60);
	else
		snprintf(buf, len, "%lds", s);
	return buf;
}

void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int strv_add(char ***v, size_t *n, char *s)
{
	if (!s)
		return -1;
	char **nv = realloc(*v, (*n + 1) * sizeof *nv);
	if (!nv) {
		free(s);
		return -1;
	}
	nv[(*n)++] = s;
	*v = nv;
	return 0;
}

long node_item_priority(char *item)
{
	char *colon = strchr(item, ':');
	if (!colon)
		return 0;
	*colon = '\0';
	return strtol(colon + 1, NULL, 10);
}
