/* ssh_sftp.c - SFTP on an SSH session (see ssh.h): stat, whole-file read,
 * remove, and the atomic write with its one-time backup, posix-rename and
 * the cleanup of stale temporary files. A lost SFTP channel is restarted
 * on the next call; the session itself is ssh.c's (ssh_int.h).
 *
 * libssh2 1.10 has no posix-rename API and sends its rename flags only to
 * SFTP v5+ servers, so against OpenSSH (SFTP v3) a plain rename cannot
 * replace an existing file. The atomic replace therefore sends the
 * posix-rename@openssh.com extended request itself on the SFTP channel
 * (sftp_posix_rename below), between two synchronous SFTP calls. */
#include "ssh_int.h"

#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#define SFTP_WRITE_CHUNK 30000

/* ---- SFTP ------------------------------------------------------------------------------- */

static void put_u32(struct sbuf *b, uint32_t v, int *bad)
{
	char c[4] = {(char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v};
	if (sbuf_addn(b, c, 4) < 0)
		*bad = 1;
}

static void put_str(struct sbuf *b, const char *s, size_t n, int *bad)
{
	put_u32(b, (uint32_t)n, bad);
	if (sbuf_addn(b, s, n) < 0)
		*bad = 1;
}


static const char *fx_name(unsigned long st)
{
	switch (st) {
	case LIBSSH2_FX_EOF: return "end of file";
	case LIBSSH2_FX_NO_SUCH_FILE: return "no such file";
	case LIBSSH2_FX_PERMISSION_DENIED: return "permission denied";
	case LIBSSH2_FX_FAILURE: return "failure";
	case LIBSSH2_FX_BAD_MESSAGE: return "bad message";
	case LIBSSH2_FX_OP_UNSUPPORTED: return "operation not supported";
	case LIBSSH2_FX_NO_SUCH_PATH: return "no such path";
	case LIBSSH2_FX_FILE_ALREADY_EXISTS: return "file exists";
	case LIBSSH2_FX_WRITE_PROTECT: return "write protected";
	case LIBSSH2_FX_NO_SPACE_ON_FILESYSTEM: return "no space left";
	case LIBSSH2_FX_QUOTA_EXCEEDED: return "quota exceeded";
	case LIBSSH2_FX_NOT_A_DIRECTORY: return "not a directory";
	}
	return "error";
}

static int sftp_status_fail(struct ssh_session *s, unsigned long st, const char *what,
			    const char *path, struct ssh_error *err)
{
	enum ssh_err_kind kind = st == LIBSSH2_FX_NO_SUCH_FILE || st == LIBSSH2_FX_NO_SUCH_PATH
					 ? SSH_ERR_NOENT : SSH_ERR_REMOTE;
	sshi_fail(err, kind, "%s %s on %s: %s", what, path, s->target, fx_name(st));
	if (err)
		err->sftp_status = st;
	return -1;
}

/* Drop the SFTP subsystem after its channel failed (once the handles of
 * the current operation are closed); the next call starts a new one if the
 * connection still works. libssh2 frees no open handle at shutdown. */
static void drop_sftp(struct ssh_session *s)
{
	s->sftp_dead = 0;
	if (!s->sftp)
		return;
	libssh2_session_set_blocking(s->sess, 1);
	libssh2_session_set_timeout(s->sess, 2000);
	libssh2_sftp_shutdown(s->sftp);
	s->sftp = NULL;
	sshi_nonblocking_mode(s);
}

static int is_transport_error(int e)
{
	switch (e) {
	case LIBSSH2_ERROR_SOCKET_NONE:
	case LIBSSH2_ERROR_SOCKET_SEND:
	case LIBSSH2_ERROR_SOCKET_RECV:
	case LIBSSH2_ERROR_SOCKET_DISCONNECT:
	case LIBSSH2_ERROR_SOCKET_TIMEOUT:
	case LIBSSH2_ERROR_BAD_SOCKET:
	case LIBSSH2_ERROR_TIMEOUT:
	case LIBSSH2_ERROR_DECRYPT:
	case LIBSSH2_ERROR_INVALID_MAC:
	case LIBSSH2_ERROR_KEX_FAILURE:
	case LIBSSH2_ERROR_PROTO:
		return 1;
	}
	return 0;
}

/* A failed libssh2 SFTP call: an SFTP status; a transport failure (the
 * session is broken); or a failed SFTP channel (dropped). */
static int sftp_fail(struct ssh_session *s, const char *what, const char *path,
		     struct ssh_error *err)
{
	int e = libssh2_session_last_errno(s->sess);
	if (e == LIBSSH2_ERROR_SFTP_PROTOCOL && s->sftp)
		return sftp_status_fail(s, libssh2_sftp_last_error(s->sftp), what, path, err);
	char *w = strprintf("%s %s", what, path);
	if (is_transport_error(e)) {
		sshi_break_session(s, err, e == LIBSSH2_ERROR_TIMEOUT ? SSH_ERR_TIMEOUT : SSH_ERR_CONNECT,
				   w ? w : what);
	} else {
		sshi_fail(err, SSH_ERR_CONNECT, "%s on %s failed, SFTP channel lost: %s",
			  w ? w : what, s->target, sshi_lib_errmsg(s->sess));
		s->sftp_dead = 1;
	}
	free(w);
	return -1;
}

/* A libssh2 SFTP call said EAGAIN: wait for the socket until the call's
 * deadline. libssh2 1.10 does not notice that the SFTP channel was closed
 * (the guest's SFTP server died) and would wait forever: check here. */
static int sftp_again(struct ssh_session *s, int64_t deadline, const char *what,
		      const char *path, struct ssh_error *err)
{
	LIBSSH2_CHANNEL *ch = s->sftp ? libssh2_sftp_get_channel(s->sftp) : NULL;
	if (s->sftp_dead)
		return sshi_fail(err, SSH_ERR_CONNECT, "%s %s on %s failed: SFTP channel lost",
				 what, path, s->target);
	if (ch && libssh2_channel_eof(ch)) {
		s->sftp_dead = 1;
		return sshi_fail(err, SSH_ERR_CONNECT,
				 "%s %s on %s failed: the SFTP server closed the channel", what, path,
				 s->target);
	}
	char *w = strprintf("%s %s", what, path);
	int rc = sshi_wait_socket(s, deadline, w ? w : what, err);
	free(w);
	return rc;
}

static int64_t op_deadline(const struct ssh_session *s)
{
	return s->op_timeout_ms > 0 ? sshi_now_ms() + s->op_timeout_ms : 0;
}

/* Run an SFTP call returning a number until it is not EAGAIN; rc is the
 * result, or SFTP_GAVE_UP after a timeout or a closed channel (err set). */
#define SFTP_GAVE_UP (-10000)
#define SFTP_CALL(s, rc, call, what, path, err)                                     \
	do {                                                                        \
		int64_t dl_ = op_deadline(s);                                       \
		while (((rc) = (call)) == LIBSSH2_ERROR_EAGAIN) {                   \
			if (sftp_again((s), dl_, (what), (path), (err)) < 0) {      \
				(rc) = SFTP_GAVE_UP;                                \
				break;                                              \
			}                                                           \
		}                                                                   \
	} while (0)
/* The same for calls returning a pointer (NULL with EAGAIN: retry). */
#define SFTP_CALL_PTR(s, ptr, call, what, path, err, gave_up)                        \
	do {                                                                        \
		int64_t dl_ = op_deadline(s);                                       \
		(gave_up) = 0;                                                      \
		while (!((ptr) = (call)) &&                                         \
		       libssh2_session_last_errno((s)->sess) == LIBSSH2_ERROR_EAGAIN) { \
			if (sftp_again((s), dl_, (what), (path), (err)) < 0) {      \
				(gave_up) = 1;                                      \
				break;                                              \
			}                                                           \
		}                                                                   \
	} while (0)
/* Finish a numeric call: 0 on success, -1 with err filled. */
#define SFTP_CHECK(s, rc, what, path, err) \
	((rc) == SFTP_GAVE_UP ? -1 : (rc) < 0 ? sftp_fail((s), (what), (path), (err)) : 0)

static int sftp_ready(struct ssh_session *s, struct ssh_error *err)
{
	if (sshi_check_usable(s, err) < 0)
		return -1;
	if (s->sftp_dead)
		drop_sftp(s);
	if (s->sftp)
		return 0;
	int gave_up;
	SFTP_CALL_PTR(s, s->sftp, libssh2_sftp_init(s->sess), "SFTP start", "", err, gave_up);
	if (gave_up)
		return -1;
	if (!s->sftp) {
		int e = libssh2_session_last_errno(s->sess);
		if (is_transport_error(e))
			return sshi_break_session(s, err, SSH_ERR_CONNECT, "SFTP start");
		return sshi_fail(err, SSH_ERR_REMOTE, "cannot start SFTP on %s: %s", s->target,
				 sshi_lib_errmsg(s->sess));
	}
	return 0;
}

/* Close a handle (errors reported only when report is set). */
static int close_handle(struct ssh_session *s, LIBSSH2_SFTP_HANDLE *h, const char *path,
			int report, struct ssh_error *err)
{
	if (!s->sftp)
		return report ? sshi_fail(err, SSH_ERR_CONNECT, "close %s on %s: SFTP channel lost",
					  path, s->target) : -1;
	struct ssh_error tmp = {0};
	int rc;
	SFTP_CALL(s, rc, libssh2_sftp_close_handle(h), "close", path, report ? err : &tmp);
	if (!report) {
		if (rc < 0 && rc != SFTP_GAVE_UP)
			sftp_fail(s, "close", path, &tmp);
		ssh_error_clear(&tmp);
		return rc < 0 ? -1 : 0;
	}
	return SFTP_CHECK(s, rc, "close", path, err);
}

static void attrs_to_stat(const LIBSSH2_SFTP_ATTRIBUTES *a, struct ssh_stat *st)
{
	memset(st, 0, sizeof *st);
	st->mode = (unsigned)a->permissions;
	st->uid = (unsigned)a->uid;
	st->gid = (unsigned)a->gid;
	st->size = a->filesize;
}

static int do_stat(struct ssh_session *s, const char *path, int type, struct ssh_stat *st,
		   struct ssh_error *err)
{
	LIBSSH2_SFTP_ATTRIBUTES a;
	memset(&a, 0, sizeof a);
	int rc;
	SFTP_CALL(s, rc, libssh2_sftp_stat_ex(s->sftp, path, (unsigned)strlen(path), type, &a),
		  "stat", path, err);
	if (SFTP_CHECK(s, rc, "stat", path, err) < 0)
		return -1;
	if (!(a.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) || !(a.flags & LIBSSH2_SFTP_ATTR_UIDGID))
		return sshi_fail(err, SSH_ERR_REMOTE, "stat %s on %s: no mode or owner", path, s->target);
	attrs_to_stat(&a, st);
	return 0;
}

int ssh_stat(struct ssh_session *s, const char *path, struct ssh_stat *st,
	     struct ssh_error *err)
{
	if (sftp_ready(s, err) < 0)
		return -1;
	return do_stat(s, path, LIBSSH2_SFTP_STAT, st, err);
}

static int read_handle(struct ssh_session *s, LIBSSH2_SFTP_HANDLE *h, const char *path,
		       struct sbuf *b, struct ssh_error *err)
{
	char *chunk = malloc(SSHI_IO_CHUNK);
	if (!chunk)
		return sshi_fail_oom(err);
	for (;;) {
		ssize_t n;
		SFTP_CALL(s, n, libssh2_sftp_read(h, chunk, SSHI_IO_CHUNK), "read", path, err);
		if (n == 0)
			break;
		if (n < 0) {
			free(chunk);
			return SFTP_CHECK(s, n, "read", path, err);
		}
		if (sbuf_addn(b, chunk, (size_t)n) < 0) {
			free(chunk);
			return sshi_fail_oom(err);
		}
	}
	free(chunk);
	return 0;
}

int ssh_read_file(struct ssh_session *s, const char *path, char **data, size_t *len,
		  struct ssh_stat *st, struct ssh_error *err)
{
	*data = NULL;
	if (len)
		*len = 0;
	if (sftp_ready(s, err) < 0)
		return -1;
	LIBSSH2_SFTP_HANDLE *h;
	int gave_up;
	SFTP_CALL_PTR(s, h, libssh2_sftp_open_ex(s->sftp, path, (unsigned)strlen(path),
						 LIBSSH2_FXF_READ, 0, LIBSSH2_SFTP_OPENFILE),
		      "open", path, err, gave_up);
	if (gave_up)
		return -1;
	if (!h)
		return sftp_fail(s, "open", path, err);
	LIBSSH2_SFTP_ATTRIBUTES a;
	memset(&a, 0, sizeof a);
	struct sbuf b = {0};
	int rc;
	SFTP_CALL(s, rc, libssh2_sftp_fstat_ex(h, &a, 0), "stat", path, err);
	rc = SFTP_CHECK(s, rc, "stat", path, err);
	if (rc == 0 && !LIBSSH2_SFTP_S_ISREG(a.permissions))
		rc = sshi_fail(err, SSH_ERR_REMOTE, "read %s on %s: not a regular file", path, s->target);
	if (rc == 0)
		rc = read_handle(s, h, path, &b, err);
	if (close_handle(s, h, path, rc == 0, err) < 0)
		rc = -1;
	if (rc < 0) {
		sbuf_free(&b);
		return -1;
	}
	if (st)
		attrs_to_stat(&a, st);
	if (len)
		*len = b.len;
	*data = sbuf_steal(&b);
	return *data ? 0 : sshi_fail_oom(err);
}

static int do_remove(struct ssh_session *s, const char *path, struct ssh_error *err)
{
	int rc;
	SFTP_CALL(s, rc, libssh2_sftp_unlink_ex(s->sftp, path, (unsigned)strlen(path)), "remove",
		  path, err);
	if (rc == SFTP_GAVE_UP)
		return -1;
	if (rc < 0) {
		struct ssh_error e2 = {0};
		sftp_fail(s, "remove", path, &e2);
		if (e2.kind == SSH_ERR_NOENT) {
			ssh_error_clear(&e2);
			return 0;
		}
		if (err) {
			ssh_error_clear(err);
			*err = e2;
		} else {
			ssh_error_clear(&e2);
		}
		return -1;
	}
	return 0;
}

int ssh_remove(struct ssh_session *s, const char *path, struct ssh_error *err)
{
	if (sftp_ready(s, err) < 0)
		return -1;
	return do_remove(s, path, err);
}

/* Write all of buf on the SFTP channel. */
static int chan_write_all(struct ssh_session *s, LIBSSH2_CHANNEL *ch, const char *p, size_t n,
			  int64_t deadline, const char *path, struct ssh_error *err)
{
	while (n) {
		ssize_t w = libssh2_channel_write(ch, p, n);
		if (w == LIBSSH2_ERROR_EAGAIN) {
			if (sftp_again(s, deadline, "rename", path, err) < 0)
				return -1;
			continue;
		}
		if (w < 0)
			return sftp_fail(s, "rename", path, err);
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read exactly n bytes from the SFTP channel. */
static int chan_read_exact(struct ssh_session *s, LIBSSH2_CHANNEL *ch, unsigned char *p,
			   size_t n, int64_t deadline, const char *path, struct ssh_error *err)
{
	while (n) {
		ssize_t r = libssh2_channel_read(ch, (char *)p, n);
		if (r == LIBSSH2_ERROR_EAGAIN || (r == 0 && !libssh2_channel_eof(ch))) {
			if (sftp_again(s, deadline, "rename", path, err) < 0)
				return -1;
			continue;
		}
		if (r < 0)
			return sftp_fail(s, "rename", path, err);
		if (r == 0) {
			s->sftp_dead = 1;
			return sshi_fail(err, SSH_ERR_CONNECT,
					 "rename %s on %s failed: the SFTP server closed the channel",
					 path, s->target);
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* posix-rename@openssh.com: rename(2) on the server, replacing the target
 * atomically. Sent directly on the SFTP channel (libssh2 1.10 has no API
 * for it); at this point no libssh2 SFTP request is outstanding. */
static int sftp_posix_rename(struct ssh_session *s, const char *from, const char *to,
			     struct ssh_error *err)
{
	LIBSSH2_CHANNEL *ch = libssh2_sftp_get_channel(s->sftp);
	static const char ext[] = "posix-rename@openssh.com";
	uint32_t id = 0x7a000000u | (s->ext_id++ & 0xffffffu);
	struct sbuf body = {0}, pkt = {0};
	int bad = 0;
	if (sbuf_addc(&body, (char)200) < 0) /* SSH_FXP_EXTENDED */
		bad = 1;
	put_u32(&body, id, &bad);
	put_str(&body, ext, sizeof ext - 1, &bad);
	put_str(&body, from, strlen(from), &bad);
	put_str(&body, to, strlen(to), &bad);
	put_u32(&pkt, (uint32_t)body.len, &bad);
	if (sbuf_addn(&pkt, sbuf_str(&body), body.len) < 0)
		bad = 1;
	sbuf_free(&body);
	if (bad) {
		sbuf_free(&pkt);
		return sshi_fail_oom(err);
	}
	int64_t deadline = op_deadline(s);
	int rc = chan_write_all(s, ch, pkt.s, pkt.len, deadline, from, err);
	sbuf_free(&pkt);
	if (rc < 0)
		return -1;
	/* Skip any reply that is not ours (there should be none). */
	for (int skipped = 0; skipped < 64; skipped++) {
		unsigned char hdr[4];
		if (chan_read_exact(s, ch, hdr, 4, deadline, from, err) < 0)
			return -1;
		uint32_t plen = sshi_get_u32(hdr);
		if (plen < 5 || plen > (1u << 20))
			return sshi_break_session(s, err, SSH_ERR_CONNECT,
						  "rename (bad SFTP reply)");
		unsigned char *rest = malloc(plen);
		if (!rest)
			return sshi_fail_oom(err);
		if (chan_read_exact(s, ch, rest, plen, deadline, from, err) < 0) {
			free(rest);
			return -1;
		}
		uint32_t rid = sshi_get_u32(rest + 1);
		if (rest[0] != 101 /* SSH_FXP_STATUS */ || rid != id || plen < 9) {
			free(rest);
			continue;
		}
		uint32_t code = sshi_get_u32(rest + 5);
		free(rest);
		if (code == 0)
			return 0;
		char *what = strprintf("rename to %s:", to);
		sftp_status_fail(s, code, what ? what : "rename", from, err);
		free(what);
		return -1;
	}
	return sshi_break_session(s, err, SSH_ERR_CONNECT, "rename (no SFTP reply)");
}

static int random_hex(char *out, size_t nbytes)
{
	unsigned char r[16];
	if (nbytes > sizeof r)
		return -1;
	size_t got = 0;
	while (got < nbytes) {
		ssize_t n = getrandom(r + got, nbytes - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t)n;
	}
	for (size_t i = 0; i < nbytes; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	return 0;
}

struct owner {
	int have;       /* 0: new file, keep the SSH user's owner */
	unsigned uid, gid;
	unsigned perms; /* permission bits (07777) */
};

/* Write data to target through a temp file + fsync + posix-rename. */
static int put_atomic(struct ssh_session *s, const char *target, const void *data, size_t len,
		      const struct owner *own, struct ssh_error *err)
{
	char rnd[33];
	if (random_hex(rnd, 8) < 0)
		return sshi_fail(err, SSH_ERR_IO, "getrandom: %s", strerror(errno));
	char *tmp = strprintf("%s%s%s", target, SSH_TEMP_INFIX, rnd);
	if (!tmp)
		return sshi_fail_oom(err);
	int rc = -1, crc;
	int gave_up;
	LIBSSH2_SFTP_HANDLE *h;
	SFTP_CALL_PTR(s, h, libssh2_sftp_open_ex(s->sftp, tmp, (unsigned)strlen(tmp),
						 LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT |
						 LIBSSH2_FXF_EXCL | LIBSSH2_FXF_TRUNC,
						 0600, LIBSSH2_SFTP_OPENFILE),
		      "create", tmp, err, gave_up);
	if (!h) {
		if (!gave_up)
			sftp_fail(s, "create", tmp, err);
		free(tmp);
		return -1;
	}
	/* One request at a time: when libssh2 1.10 pipelines several write
	 * requests and one fails, it drops the others even if one was only
	 * partly sent, which desynchronises the SFTP stream (every later
	 * request then times out). A call of at most one chunk (its
	 * MAX_SFTP_OUTGOING_SIZE, 30000) is acknowledged before it returns. */
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t n;
		SFTP_CALL(s, n, libssh2_sftp_write(h, p, left < SFTP_WRITE_CHUNK ? left
									: SFTP_WRITE_CHUNK),
			  "write", tmp, err);
		if (n < 0) {
			SFTP_CHECK(s, n, "write", tmp, err);
			goto out;
		}
		p += n;
		left -= (size_t)n;
	}
	LIBSSH2_SFTP_ATTRIBUTES a;
	if (own->have) {
		memset(&a, 0, sizeof a);
		SFTP_CALL(s, crc, libssh2_sftp_fstat_ex(h, &a, 0), "stat", tmp, err);
		if (SFTP_CHECK(s, crc, "stat", tmp, err) < 0)
			goto out;
		if (a.uid != own->uid || a.gid != own->gid) {
			memset(&a, 0, sizeof a);
			a.flags = LIBSSH2_SFTP_ATTR_UIDGID;
			a.uid = own->uid;
			a.gid = own->gid;
			SFTP_CALL(s, crc, libssh2_sftp_fstat_ex(h, &a, 1), "chown", tmp, err);
			if (SFTP_CHECK(s, crc, "chown", tmp, err) < 0)
				goto out;
		}
	}
	memset(&a, 0, sizeof a);
	a.flags = LIBSSH2_SFTP_ATTR_PERMISSIONS;
	a.permissions = own->perms & 07777;
	SFTP_CALL(s, crc, libssh2_sftp_fstat_ex(h, &a, 1), "chmod", tmp, err);
	if (SFTP_CHECK(s, crc, "chmod", tmp, err) < 0)
		goto out;
	SFTP_CALL(s, crc, libssh2_sftp_fsync(h), "fsync", tmp, err);
	if (crc == SFTP_GAVE_UP)
		goto out;
	if (crc < 0) {
		int e = libssh2_session_last_errno(s->sess);
		if (e == LIBSSH2_ERROR_SFTP_PROTOCOL &&
		    libssh2_sftp_last_error(s->sftp) == LIBSSH2_FX_OP_UNSUPPORTED) {
			log_warn("%s does not support fsync@openssh.com; %s written without fsync",
				 s->target, target);
		} else {
			sftp_fail(s, "fsync", tmp, err);
			goto out;
		}
	}
	crc = close_handle(s, h, tmp, 1, err);
	h = NULL;
	if (crc < 0)
		goto out;
	if (sftp_posix_rename(s, tmp, target, err) < 0)
		goto out;
	rc = 0;
out:
	if (h && s->sftp)
		close_handle(s, h, tmp, 0, NULL);
	if (rc < 0 && s->sftp && !s->sftp_dead && s->broken == SSH_OK) {
		struct ssh_error e2 = {0};
		if (do_remove(s, tmp, &e2) < 0)
			log_warn("could not remove %s on %s (%s); the next write removes it", tmp,
				 s->target, ssh_error_str(&e2));
		ssh_error_clear(&e2);
	} else if (rc < 0) {
		log_warn("%s may be left on %s; the next write removes it", tmp, s->target);
	}
	free(tmp);
	return rc;
}

/* Remove TARGET.pvagent.tmp.* and TARGET.pvagent.bak.pvagent.tmp.* left by
 * an interrupted write. */
static int clean_stale(struct ssh_session *s, const char *target, struct ssh_error *err)
{
	const char *slash = strrchr(target, '/');
	char *dir = slash ? (slash == target ? strdup("/") : strndup(target, (size_t)(slash - target)))
			  : strdup(".");
	const char *base = slash ? slash + 1 : target;
	char *pfx1 = strprintf("%s%s", base, SSH_TEMP_INFIX);
	char *pfx2 = strprintf("%s%s%s", base, SSH_BACKUP_SUFFIX, SSH_TEMP_INFIX);
	char *name = malloc(4096);
	struct sbuf stale = {0};
	int rc = 0;
	if (!dir || !pfx1 || !pfx2 || !name) {
		rc = sshi_fail_oom(err);
		goto done;
	}
	LIBSSH2_SFTP_HANDLE *d;
	int gave_up;
	SFTP_CALL_PTR(s, d, libssh2_sftp_open_ex(s->sftp, dir, (unsigned)strlen(dir), 0, 0,
						 LIBSSH2_SFTP_OPENDIR),
		      "list", dir, err, gave_up);
	if (!d) {
		rc = gave_up ? -1 : sftp_fail(s, "list", dir, err);
		goto done;
	}
	for (;;) {
		LIBSSH2_SFTP_ATTRIBUTES a;
		int n;
		SFTP_CALL(s, n, libssh2_sftp_readdir_ex(d, name, 4096, NULL, 0, &a), "list", dir,
			  err);
		if (n == 0)
			break;
		if (n < 0) {
			rc = SFTP_CHECK(s, n, "list", dir, err);
			break;
		}
		if ((strncmp(name, pfx1, strlen(pfx1)) == 0 || strncmp(name, pfx2, strlen(pfx2)) == 0) &&
		    (sbuf_add(&stale, name) < 0 || sbuf_addc(&stale, '\0') < 0)) {
			rc = sshi_fail_oom(err);
			break;
		}
	}
	if (close_handle(s, d, dir, rc == 0, err) < 0)
		rc = -1;
	for (size_t off = 0; rc == 0 && off < stale.len; off += strlen(stale.s + off) + 1) {
		char *path = strprintf("%s%s%s", dir, strcmp(dir, "/") ? "/" : "", stale.s + off);
		if (!path) {
			rc = sshi_fail_oom(err);
			break;
		}
		log_info("removing %s on %s, left by an interrupted write", path, s->target);
		rc = do_remove(s, path, err);
		free(path);
	}
done:
	sbuf_free(&stale);
	free(dir);
	free(pfx1);
	free(pfx2);
	free(name);
	return rc;
}

int ssh_write_file_atomic(struct ssh_session *s, const char *path, const void *data,
			  size_t len, unsigned flags, unsigned create_mode, bool *changed,
			  struct ssh_error *err)
{
	if (changed)
		*changed = false;
	if (sftp_ready(s, err) < 0)
		return -1;
	char *target = strdup(path);
	char *orig = NULL;
	size_t olen = 0;
	char *bak = NULL;
	int rc = -1;
	struct ssh_stat st = {0};
	struct ssh_error e2 = {0};
	if (!target)
		return sshi_fail_oom(err);
	/* Follow a symlink: replace the file it names, keep the link. */
	if (do_stat(s, target, LIBSSH2_SFTP_LSTAT, &st, &e2) == 0 &&
	    LIBSSH2_SFTP_S_ISLNK(st.mode)) {
		char *real = malloc(4096);
		if (!real) {
			sshi_fail_oom(err);
			goto out;
		}
		int n;
		SFTP_CALL(s, n, libssh2_sftp_symlink_ex(s->sftp, target, (unsigned)strlen(target),
							real, 4096, LIBSSH2_SFTP_REALPATH),
			  "resolve", target, err);
		if (n < 0 || n >= 4096) {
			free(real);
			if (n < 0)
				SFTP_CHECK(s, n, "resolve", target, err);
			else
				sshi_fail(err, SSH_ERR_REMOTE, "resolve %s on %s: path too long",
					  target, s->target);
			goto out;
		}
		real[n] = '\0';
		free(target);
		target = real;
	} else if (e2.kind != SSH_OK && e2.kind != SSH_ERR_NOENT) {
		goto pass_e2;
	}
	ssh_error_clear(&e2);
	struct owner own = {0};
	int exists = 0;
	if (ssh_read_file(s, target, &orig, &olen, &st, &e2) == 0) {
		exists = 1;
		own.have = 1;
		own.uid = st.uid;
		own.gid = st.gid;
		own.perms = st.mode & 07777;
	} else if (e2.kind == SSH_ERR_NOENT && !(flags & SSH_WRITE_MUST_EXIST)) {
		own.perms = create_mode ? create_mode & 07777 : 0644;
	} else {
		goto pass_e2;
	}
	ssh_error_clear(&e2);
	if (exists && olen == len && (len == 0 || memcmp(orig, data, len) == 0)) {
		log_debug("%s on %s already has the wanted content", target, s->target);
		rc = 0;
		goto out;
	}
	if (clean_stale(s, target, err) < 0)
		goto out;
	if ((flags & SSH_WRITE_BACKUP) && exists) {
		bak = strprintf("%s%s", target, SSH_BACKUP_SUFFIX);
		if (!bak) {
			sshi_fail_oom(err);
			goto out;
		}
		struct ssh_stat bst;
		if (do_stat(s, bak, LIBSSH2_SFTP_LSTAT, &bst, &e2) == 0) {
			log_debug("keeping the existing backup %s on %s", bak, s->target);
		} else if (e2.kind == SSH_ERR_NOENT) {
			ssh_error_clear(&e2);
			if (put_atomic(s, bak, orig, olen, &own, err) < 0)
				goto out;
			log_debug("backup %s written on %s", bak, s->target);
		} else {
			goto pass_e2;
		}
	}
	if (put_atomic(s, target, data, len, &own, err) < 0)
		goto out;
	if (changed)
		*changed = true;
	log_debug("wrote %s on %s (%zu bytes)", target, s->target, len);
	rc = 0;
	goto out;
pass_e2:
	if (err) {
		ssh_error_clear(err);
		*err = e2;
		e2 = (struct ssh_error){0};
	}
out:
	ssh_error_clear(&e2);
	free(target);
	free(orig);
	free(bak);
	return rc;
}
