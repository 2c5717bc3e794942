/* ssh_exec.c - command execution on an SSH session (see ssh.h): one
 * channel a command, its input written, stdout and stderr drained up to the
 * session's cap, exit status or signal, all within one deadline. The
 * session itself is ssh.c's (ssh_int.h). */
#include "ssh_int.h"

#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- exec ---------------------------------------------------------------------------- */

void ssh_result_free(struct ssh_result *r)
{
	if (!r)
		return;
	sbuf_free(&r->out);
	sbuf_free(&r->err);
	free(r->exit_signal);
	memset(r, 0, sizeof *r);
}

/* Drain one stream into b (up to cap). Returns bytes read (>0), 0 at EOF,
 * LIBSSH2_ERROR_EAGAIN, or another negative error. */
static ssize_t drain(LIBSSH2_CHANNEL *ch, int stream, struct sbuf *b, size_t cap,
		     bool *truncated, char *buf)
{
	ssize_t n = libssh2_channel_read_ex(ch, stream, buf, SSHI_IO_CHUNK);
	if (n > 0) {
		size_t room = b->len < cap ? cap - b->len : 0;
		size_t take = (size_t)n < room ? (size_t)n : room;
		if (take < (size_t)n)
			*truncated = true;
		if (take && sbuf_addn(b, buf, take) < 0)
			return LIBSSH2_ERROR_ALLOC;
	}
	return n;
}

int ssh_exec_cmdline(struct ssh_session *s, const char *cmdline, const struct ssh_exec_opts *xo,
		     struct ssh_result *res, struct ssh_error *err)
{
	memset(res, 0, sizeof *res);
	res->exit_status = -1;
	if (sshi_check_usable(s, err) < 0)
		return -1;
	long tmo = xo && xo->timeout_ms ? xo->timeout_ms : s->op_timeout_ms;
	int64_t deadline = tmo > 0 ? sshi_now_ms() + tmo : 0;
	const char *what = "command";
	LIBSSH2_SESSION *sess = s->sess;
	LIBSSH2_CHANNEL *ch = NULL;
	char *buf = malloc(SSHI_IO_CHUNK);
	if (!buf)
		return sshi_fail_oom(err);
	log_trace("exec on %s: %s", s->target, cmdline);
	int rc;
	while (!(ch = libssh2_channel_open_session(sess))) {
		if (libssh2_session_last_errno(sess) != LIBSSH2_ERROR_EAGAIN)
			goto transport;
		if (sshi_wait_socket(s, deadline, what, err) < 0)
			goto out;
	}
	while ((rc = libssh2_channel_exec(ch, cmdline)) == LIBSSH2_ERROR_EAGAIN)
		if (sshi_wait_socket(s, deadline, what, err) < 0)
			goto out;
	if (rc != 0) {
		if (rc == LIBSSH2_ERROR_CHANNEL_REQUEST_DENIED) {
			sshi_fail(err, SSH_ERR_REMOTE, "%s refused to run a command", s->target);
			goto out;
		}
		goto transport;
	}
	const char *in = xo ? xo->input : NULL;
	size_t inleft = in ? xo->input_len : 0;
	bool eof_sent = false;
	bool out_eof = false, err_eof = false;
	for (;;) {
		bool progress = false;
		if (inleft) {
			ssize_t w = libssh2_channel_write(ch, in, inleft);
			if (w > 0) {
				in += w;
				inleft -= (size_t)w;
				progress = true;
			} else if (w != LIBSSH2_ERROR_EAGAIN) {
				/* The command may exit without reading its input. */
				inleft = 0;
			}
		}
		if (!inleft && !eof_sent) {
			rc = libssh2_channel_send_eof(ch);
			if (rc == 0 || rc != LIBSSH2_ERROR_EAGAIN)
				eof_sent = true;
		}
		if (!out_eof) {
			ssize_t n = drain(ch, 0, &res->out, s->max_output, &res->truncated, buf);
			if (n > 0)
				progress = true;
			else if (n == 0)
				out_eof = libssh2_channel_eof(ch) != 0;
			else if (n == LIBSSH2_ERROR_ALLOC)
				goto oom;
			else if (n != LIBSSH2_ERROR_EAGAIN)
				goto transport;
		}
		if (!err_eof) {
			ssize_t n = drain(ch, SSH_EXTENDED_DATA_STDERR, &res->err, s->max_output,
					  &res->truncated, buf);
			if (n > 0)
				progress = true;
			else if (n == 0)
				err_eof = libssh2_channel_eof(ch) != 0;
			else if (n == LIBSSH2_ERROR_ALLOC)
				goto oom;
			else if (n != LIBSSH2_ERROR_EAGAIN)
				goto transport;
		}
		if (out_eof && err_eof)
			break;
		if (deadline && sshi_now_ms() >= deadline) {
			sshi_break_session(s, err, SSH_ERR_TIMEOUT, what);
			goto out;
		}
		/* sshi_wait_socket() returns after a short slice at the latest, so
		 * data libssh2 already buffered is read on the next pass. */
		if (!progress && sshi_wait_socket(s, deadline, what, err) < 0)
			goto out;
	}
	while (libssh2_channel_close(ch) == LIBSSH2_ERROR_EAGAIN)
		if (sshi_wait_socket(s, deadline, what, err) < 0)
			goto out;
	while (libssh2_channel_wait_closed(ch) == LIBSSH2_ERROR_EAGAIN)
		if (sshi_wait_socket(s, deadline, what, err) < 0)
			goto out;
	res->exit_status = libssh2_channel_get_exit_status(ch);
	char *sig = NULL;
	size_t siglen = 0;
	if (libssh2_channel_get_exit_signal(ch, &sig, &siglen, NULL, NULL, NULL, NULL) == 0 &&
	    sig) {
		res->exit_signal = strndup(sig, siglen);
		libssh2_free(sess, sig);
		res->exit_status = -1;
		if (!res->exit_signal)
			goto oom;
	}
	while (libssh2_channel_free(ch) == LIBSSH2_ERROR_EAGAIN)
		if (sshi_wait_socket(s, deadline, what, err) < 0)
			goto out_nofree;
	ch = NULL;
	free(buf);
	sshi_nonblocking_mode(s);
	log_debug("exec on %s: exit %d%s%s, %zu+%zu bytes of output%s", s->target,
		  res->exit_status, res->exit_signal ? " signal " : "",
		  res->exit_signal ? res->exit_signal : "", res->out.len, res->err.len,
		  res->truncated ? " (truncated)" : "");
	return 0;
oom:
	sshi_fail_oom(err);
	goto out;
transport:
	sshi_break_session(s, err, libssh2_session_last_errno(sess) == LIBSSH2_ERROR_TIMEOUT
			      ? SSH_ERR_TIMEOUT : SSH_ERR_CONNECT, what);
out:
	/* A channel left mid-way is freed with the session (which is broken
	 * after a transport error or timeout); otherwise free it here. */
	if (ch && s->broken == SSH_OK) {
		libssh2_session_set_blocking(sess, 1);
		libssh2_session_set_timeout(sess, 2000);
		libssh2_channel_free(ch);
	}
out_nofree:
	free(buf);
	if (s->broken == SSH_OK)
		sshi_nonblocking_mode(s);
	ssh_result_free(res);
	res->exit_status = -1;
	return -1;
}

int ssh_exec(struct ssh_session *s, const char *const *argv, struct ssh_result *res,
	     struct ssh_error *err)
{
	memset(res, 0, sizeof *res);
	res->exit_status = -1;
	char *cmd = ssh_build_argv(argv);
	if (!cmd)
		return errno == EINVAL ? sshi_fail(err, SSH_ERR_CONFIG, "exec: empty command")
				       : sshi_fail_oom(err);
	int rc = ssh_exec_cmdline(s, cmd, NULL, res, err);
	free(cmd);
	return rc;
}

int ssh_exec_script(struct ssh_session *s, const char *script, const char *const *args,
		    struct ssh_result *res, struct ssh_error *err)
{
	memset(res, 0, sizeof *res);
	res->exit_status = -1;
	char *cmd = ssh_build_script(script, args);
	if (!cmd)
		return errno == EINVAL
			       ? sshi_fail(err, SSH_ERR_CONFIG,
					   "exec: script placeholders (%%s) do not match the arguments")
			       : sshi_fail_oom(err);
	int rc = ssh_exec_cmdline(s, cmd, NULL, res, err);
	free(cmd);
	return rc;
}
