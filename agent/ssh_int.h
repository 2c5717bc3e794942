/* ssh_int.h - private to the SSH layer: the session that ssh.c (sessions),
 * ssh_exec.c (commands) and ssh_sftp.c (SFTP) share, and the error and
 * waiting helpers all three use (defined in ssh.c). Callers of the layer
 * include ssh.h. */
#ifndef PVAGENT_SSH_INT_H
#define PVAGENT_SSH_INT_H

#include "ssh.h"

#include <libssh2.h>
#include <libssh2_sftp.h>
#include <stdint.h>

/* Read buffer of a command's output and of an SFTP read. */
#define SSHI_IO_CHUNK 32768

/* Every libssh2 allocation of a session is linked into the session's
 * arena, so that what libssh2 1.10 never frees (an SFTP handle whose channel
 * died cannot be closed, and sftp_shutdown frees no handle) is released by
 * ssh_close() after libssh2_session_free(). */
struct blk {
	struct blk *prev, *next;
};

struct ssh_session {
	struct blk arena;        /* circular list of libssh2 allocations */
	LIBSSH2_SESSION *sess;
	LIBSSH2_SFTP *sftp;
	int fd;
	char *host;
	int port;
	char *user;
	char *target;            /* "host" or "[host]:port" */
	char *host_fp;
	long op_timeout_ms;
	int keepalive_s;
	size_t max_output;
	enum ssh_err_kind broken; /* SSH_OK while usable */
	char *broken_msg;
	uint32_t ext_id;         /* request ids of our own SFTP extended requests */
	int sftp_dead;           /* the SFTP channel failed: close handles, then
				  * drop it (sftp_ready starts a new one) */
};

/* Fill e (may be NULL) with kind and a redacted message; returns -1. */
int sshi_fail(struct ssh_error *e, enum ssh_err_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sshi_fail_oom(struct ssh_error *e);
/* Monotonic clock in milliseconds. */
int64_t sshi_now_ms(void);
/* libssh2's last error message of sess; never NULL. */
const char *sshi_lib_errmsg(LIBSSH2_SESSION *sess);
/* A big-endian uint32 (SSH wire format). */
uint32_t sshi_get_u32(const unsigned char *p);
/* 0 while the session is usable, else -1 with the error that broke it. */
int sshi_check_usable(struct ssh_session *s, struct ssh_error *err);
/* Mark the session broken by a timeout or transport failure; returns -1. */
int sshi_break_session(struct ssh_session *s, struct ssh_error *err,
		       enum ssh_err_kind kind, const char *what);
/* Wait a slice for the socket (see ssh.c); -1 once deadline (0: none) passed. */
int sshi_wait_socket(struct ssh_session *s, int64_t deadline, const char *what,
		     struct ssh_error *err);
/* Put the session back into non-blocking mode after a blocking cleanup. */
void sshi_nonblocking_mode(struct ssh_session *s);

#endif
