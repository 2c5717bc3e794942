/* ctl_client.c - the control socket's client end (ctl_client.h). */
#include "ctl_client.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int ctl_client_connect(const char *path, struct ctl_client *c, char **err)
{
	memset(c, 0, sizeof *c);
	c->fd = -1;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (!path || strlen(path) >= sizeof sa.sun_path) {
		err_setf(err, "%s: not a usable socket path", path ? path : "(none)");
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err_setf(err, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;
		close(fd);
		if (e == ENOENT || e == ECONNREFUSED || e == ENOTDIR)
			return 1;
		err_setf(err, "%s: %s", path, strerror(e));
		return -1;
	}
	c->fd = fd;
	return 0;
}

int ctl_client_send(struct ctl_client *c, json_object *req, char **err)
{
	struct sbuf b = {0};
	if (ctl_line_add(&b, req) < 0) {
		sbuf_free(&b);
		err_setf(err, "out of memory");
		return -1;
	}
	size_t off = 0;
	while (off < b.len) {
		ssize_t n = send(c->fd, b.s + off, b.len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err_setf(err, "the daemon closed the connection: %s", strerror(errno));
			sbuf_free(&b);
			return -1;
		}
		off += (size_t)n;
	}
	sbuf_free(&b);
	return 0;
}

int ctl_client_recv(struct ctl_client *c, json_object **msg, int timeout_ms, char **err)
{
	*msg = NULL;
	for (;;) {
		char *line;
		size_t len;
		int r = ctl_lines_next(&c->in, &line, &len);
		if (r < 0) {
			err_setf(err, "the daemon sent a line longer than %zu bytes", CTL_MAX_LINE);
			return -1;
		}
		if (r > 0) {
			*msg = json_tokener_parse(line);
			if (!*msg || !json_object_is_type(*msg, json_type_object)) {
				json_object_put(*msg);
				*msg = NULL;
				err_setf(err, "the daemon sent something that is not a JSON object");
				return -1;
			}
			return 1;
		}
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		int pr = poll(&p, 1, timeout_ms);
		if (pr == 0 || (pr < 0 && errno == EINTR))
			return 0;
		if (pr < 0) {
			err_setf(err, "poll: %s", strerror(errno));
			return -1;
		}
		char buf[65536];
		ssize_t n = read(c->fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			return 0;
		if (n <= 0) {
			err_setf(err, "the daemon closed the connection%s%s", n < 0 ? ": " : "",
				 n < 0 ? strerror(errno) : "");
			return -1;
		}
		if (ctl_lines_feed(&c->in, buf, (size_t)n) < 0) {
			err_setf(err, "out of memory");
			return -1;
		}
	}
}

int ctl_client_call(struct ctl_client *c, json_object *req, json_object **answer, char **err)
{
	*answer = NULL;
	if (ctl_client_send(c, req, err) < 0) {
		/* refused before a request is read: the daemon said why and
		 * closed; that answer is still to be read */
		json_object *m = NULL;
		char *e2 = NULL;
		if (ctl_client_recv(c, &m, 1000, &e2) == 1 && json_object_object_get_ex(m, "ok", NULL)) {
			free(e2);
			*answer = m;
			return 1;
		}
		json_object_put(m);
		free(e2);
		return -1;
	}
	for (;;) {
		json_object *m = NULL;
		int r = ctl_client_recv(c, &m, 30000, err);
		if (r < 0)
			return -1;
		if (r == 0) {
			err_setf(err, "no answer from the daemon within 30 s");
			return -1;
		}
		json_object *ok;
		if (json_object_object_get_ex(m, "ok", &ok)) {
			*answer = m;
			return 1;
		}
		json_object_put(m);
	}
}

void ctl_client_close(struct ctl_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	ctl_lines_free(&c->in);
	memset(c, 0, sizeof *c);
	c->fd = -1;
}
