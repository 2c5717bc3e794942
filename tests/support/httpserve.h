/* httpserve.h - test support: a small HTTP/1.0 file server on 127.0.0.1
 * (a random port) serving the files of one directory, as the images a test
 * makes are served to the simulator's download-url; 404 for anything
 * else. It runs as a child process and counts nothing: the files are the
 * state. */
#ifndef TESTS_HTTPSERVE_H
#define TESTS_HTTPSERVE_H

#include <sys/types.h>

struct httpserve {
	pid_t pid;
	unsigned port;
	char *dir;  /* the served directory (made by httpserve_start) */
	char *base; /* "http://127.0.0.1:PORT" */
};

/* Make a temporary directory and serve it. 0, or -1 (said on stderr). */
int httpserve_start(struct httpserve *h);
/* Write a file of len bytes under the served directory. 0 or -1. */
int httpserve_put(struct httpserve *h, const char *name, const void *data, size_t len);
/* httpserve_put, and the file's SHA-256 (bits 256) or SHA-512 (512) as
 * lower-case hex (malloc'd); NULL when either fails. */
char *httpserve_put_sum(struct httpserve *h, const char *name, const void *data, size_t len,
			int bits);
/* A qcow2 header of a vsize-byte image (what PVE's untrusted-image
 * check reads; name's length in it, so that distinct names give distinct
 * files), served as name; "sha256:HEX" of it (malloc'd), NULL on failure. */
char *httpserve_put_qcow2(struct httpserve *h, const char *name, unsigned long long vsize);
/* Stop the server and remove the directory. */
void httpserve_stop(struct httpserve *h);

#endif
