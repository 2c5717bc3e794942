/* ctl_server.c - the control socket's daemon end (ctl_server.h). */
#include "ctl_server.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int sun_of(const char *path, struct sockaddr_un *sa, char **err)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa->sun_path) {
		err_setf(err, "%s: socket path longer than %zu bytes", path,
			 sizeof sa->sun_path - 1);
		return -1;
	}
	memcpy(sa->sun_path, path, strlen(path) + 1);
	return 0;
}

static int group_id(const char *name, gid_t *out, char **err)
{
	struct group gr, *res = NULL;
	long sz = sysconf(_SC_GETGR_R_SIZE_MAX);
	size_t n = sz > 0 ? (size_t)sz : 16384;
	for (;;) {
		char *buf = malloc(n);
		if (!buf) {
			err_setf(err, "out of memory");
			return -1;
		}
		int r = getgrnam_r(name, &gr, buf, n, &res);
		if (r == ERANGE && n < (1u << 24)) {
			free(buf);
			n *= 2;
			continue;
		}
		if (r == 0 && res)
			*out = gr.gr_gid;
		free(buf);
		if (r || !res) {
			err_setf(err, "[daemon] socket_group: no group '%s'%s%s", name,
				 r ? ": " : "", r ? strerror(r) : "");
			return -1;
		}
		return 0;
	}
}

int ctl_listen(const char *path, const char *group, struct ctl_listener *out, char **err)
{
	memset(out, 0, sizeof *out);
	out->fd = -1;
	struct sockaddr_un sa;
	if (sun_of(path, &sa, err) < 0)
		return -1;
	out->gid = getegid();
	if (group && group_id(group, &out->gid, err) < 0)
		return -1;
	out->have_group = true;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err_setf(err, "socket: %s", strerror(errno));
		return -1;
	}
	/* a socket file left by a daemon that died: nobody answers on it */
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
		close(probe);
		close(fd);
		err_setf(err, "%s: another daemon answers on this socket", path);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && unlink(path) < 0) {
		err_setf(err, "%s: cannot remove the stale socket: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	/* created with no access for others, then opened to the group */
	mode_t old = umask(0117);
	int b = bind(fd, (struct sockaddr *)&sa, sizeof sa);
	int berr = errno;
	umask(old);
	if (b < 0) {
		err_setf(err, "%s: bind: %s", path, strerror(berr));
		close(fd);
		return -1;
	}
	if ((group && chown(path, (uid_t)-1, out->gid) < 0) || chmod(path, 0660) < 0 ||
	    listen(fd, 64) < 0) {
		err_setf(err, "%s: %s", path, strerror(errno));
		unlink(path);
		close(fd);
		return -1;
	}
	out->path = strdup(path);
	if (!out->path) {
		err_setf(err, "out of memory");
		unlink(path);
		close(fd);
		return -1;
	}
	out->fd = fd;
	return 0;
}

void ctl_listener_close(struct ctl_listener *l)
{
	if (l->fd >= 0)
		close(l->fd);
	if (l->path)
		unlink(l->path);
	free(l->path);
	memset(l, 0, sizeof *l);
	l->fd = -1;
}

bool ctl_uid_in_group(uid_t uid, gid_t peer_gid, gid_t gid)
{
	if (peer_gid == gid)
		return true;
	struct passwd pw, *res = NULL;
	char *buf = NULL;
	for (size_t n = 4096; n <= (1u << 24); n *= 2) {
		free(buf);
		buf = malloc(n);
		if (!buf)
			return false;
		int r = getpwuid_r(uid, &pw, buf, n, &res);
		if (r != ERANGE)
			break;
		res = NULL;
	}
	bool found = false;
	int n = 64;
	for (int round = 0; res && round < 8; round++) {
		gid_t *g = malloc((size_t)n * sizeof *g);
		if (!g)
			break;
		int want = n;
		int r = getgrouplist(pw.pw_name, pw.pw_gid, g, &want);
		for (int i = 0; r >= 0 && i < want && !found; i++)
			found = g[i] == gid;
		free(g);
		if (r >= 0)
			break;
		n = want > n ? want : n * 2;
	}
	free(buf);
	return found;
}

/* Write the answer e (consumed) without waiting, then close fd. */
static void say_and_close(int fd, json_object *e)
{
	struct sbuf b = {0};
	if (e && ctl_line_add(&b, e) == 0) {
		ssize_t w = send(fd, b.s, b.len, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w; /* best effort: the peer is turned away either way */
	}
	sbuf_free(&b);
	json_object_put(e);
	close(fd);
}

int ctl_accept(struct ctl_listener *l, struct ctl_conn *c, char **who)
{
	*who = NULL;
	memset(c, 0, sizeof *c);
	c->fd = -1;
	int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
				       errno == ECONNABORTED
			       ? 0
			       : -1;
	struct ucred cr;
	socklen_t len = sizeof cr;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof cr) {
		*who = strprintf("a peer whose credentials cannot be read (%s)", strerror(errno));
		close(fd);
		return -1;
	}
	if (cr.uid != 0 && cr.uid != geteuid() && !(l->have_group && ctl_uid_in_group(cr.uid, cr.gid, l->gid))) {
		*who = strprintf("pid %ld uid %u gid %u (not root, the daemon's user or in group %u)",
				 (long)cr.pid, (unsigned)cr.uid, (unsigned)cr.gid, (unsigned)l->gid);
		say_and_close(fd, ctl_error(NULL, "refused", "permission denied: uid %u may not use "
					    "this socket", (unsigned)cr.uid));
		return -1;
	}
	c->fd = fd;
	c->uid = cr.uid;
	c->gid = cr.gid;
	c->pid = cr.pid;
	return 1;
}

int ctl_conn_read(struct ctl_conn *c)
{
	char buf[65536];
	for (int rounds = 0; rounds < 16; rounds++) {
		ssize_t n = read(c->fd, buf, sizeof buf);
		if (n > 0) {
			if (ctl_lines_feed(&c->in, buf, (size_t)n) < 0) {
				c->eof = true;
				return -1;
			}
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			c->rd_eof = true;
			return 0;
		}
		c->eof = true;
		return -1;
	}
	return 0;
}

int ctl_conn_flush(struct ctl_conn *c)
{
	while (c->out_pos < c->out.len) {
		ssize_t n = send(c->fd, c->out.s + c->out_pos, c->out.len - c->out_pos,
				 MSG_NOSIGNAL);
		if (n > 0) {
			c->out_pos += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		c->eof = true;
		return -1;
	}
	sbuf_reset(&c->out);
	c->out_pos = 0;
	return 0;
}

int ctl_conn_send(struct ctl_conn *c, json_object *o)
{
	if (c->eof)
		return -1;
	if (c->out.len - c->out_pos > CTL_MAX_QUEUED || ctl_line_add(&c->out, o) < 0) {
		c->eof = true;
		return -1;
	}
	return ctl_conn_flush(c);
}

bool ctl_conn_pending(const struct ctl_conn *c)
{
	return c->out_pos < c->out.len;
}

void ctl_conn_turn_away(struct ctl_conn *c, json_object *answer)
{
	say_and_close(c->fd, answer);
	c->fd = -1;
	ctl_conn_close(c);
}

void ctl_conn_close(struct ctl_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	ctl_lines_free(&c->in);
	sbuf_free(&c->out);
	memset(c, 0, sizeof *c);
	c->fd = -1;
}
