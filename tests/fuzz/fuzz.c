/* fuzz.c - helpers shared by the fuzz target bodies (see fuzz.h): the
 * target table, property-failure messages, and input files in a private
 * temporary directory for the entry points that read a path. */
#include "fuzz.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_ENTRY(name) {#name, fuzz_##name},
const struct fuzz_target fuzz_targets[] = {FUZZ_TARGETS(FUZZ_ENTRY){NULL, NULL}};
#undef FUZZ_ENTRY

static char failure[1024];

static void record(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void record(const char *fmt, va_list ap)
{
	vsnprintf(failure, sizeof failure, fmt, ap);
}

int fuzz_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	record(fmt, ap);
	va_end(ap);
	return -1;
}

int fuzz_unavailable(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	record(fmt, ap);
	va_end(ap);
	return 1;
}

const char *fuzz_failure(void)
{
	return failure;
}

char *fuzz_str(const uint8_t *d, size_t n)
{
	const uint8_t *nul = memchr(d, 0, n);
	return strndup((const char *)d, nul ? (size_t)(nul - d) : n);
}

/* ---- input files ----------------------------------------------------------- */

static char *tmpdir; /* this process's directory, NULL until first use */

static void tmpdir_remove(void)
{
	if (tmpdir && rmdir(tmpdir) < 0)
		fprintf(stderr, "fuzz: rmdir %s: %s\n", tmpdir, strerror(errno));
	free(tmpdir);
	tmpdir = NULL;
}

char *fuzz_file(const uint8_t *d, size_t n, const char *name)
{
	if (!tmpdir) {
		const char *base = getenv("TMPDIR");
		char *t = strprintf("%s/pvagent-fuzz-XXXXXX", base && *base ? base : "/tmp");
		if (!t)
			return NULL;
		if (!mkdtemp(t)) {
			free(t);
			return NULL;
		}
		tmpdir = t;
		atexit(tmpdir_remove);
	}
	char *path = strprintf("%s/%s", tmpdir, name);
	if (!path)
		return NULL;
	/* 0600: conf.c wants secret files private, and an input may name
	 * itself as one */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	size_t off = 0;
	while (off < n) {
		ssize_t w = write(fd, d + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;
			close(fd);
			fuzz_file_done(path);
			errno = e;
			return NULL;
		}
		off += (size_t)w;
	}
	if (close(fd) < 0) {
		int e = errno;
		fuzz_file_done(path);
		errno = e;
		return NULL;
	}
	return path;
}

void fuzz_file_done(char *path)
{
	if (path && unlink(path) < 0 && errno != ENOENT)
		fprintf(stderr, "fuzz: unlink %s: %s\n", path, strerror(errno));
	free(path);
}
