/* loop.c - pvagentd's one event loop: poll on the signalfd, the
 * connections, the jobs' pipes and the listener, with no timeout but
 * the next maintenance window, the daily pruning of finished jobs or
 * the end of the stop's grace period, so an idle daemon does not wake;
 * each ready fd handed to its owner (config.c, control.c, djob.c). */
#include "pvagentd_int.h"

#include "clock.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

enum src { SRC_SIG, SRC_LISTEN, SRC_CONN, SRC_OUT, SRC_ERR, SRC_EV };

struct pollmap {
	struct pollfd *p;
	enum src *src;
	void **ptr;
	size_t n, cap;
};

static int pm_add(struct pollmap *m, int fd, short events, enum src s, void *ptr)
{
	if (m->n == m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 32;
		struct pollfd *np = realloc(m->p, nc * sizeof *np);
		if (np)
			m->p = np;
		enum src *ns = realloc(m->src, nc * sizeof *ns);
		if (ns)
			m->src = ns;
		void **nptr = realloc(m->ptr, nc * sizeof *nptr);
		if (nptr)
			m->ptr = nptr;
		if (!np || !ns || !nptr)
			return -1;
		m->cap = nc;
	}
	m->p[m->n] = (struct pollfd){.fd = fd, .events = events};
	m->src[m->n] = s;
	m->ptr[m->n] = ptr;
	m->n++;
	return 0;
}

static bool conn_alive(struct daemon *d, struct dconn *c)
{
	for (struct dconn *x = d->conns; x; x = x->next)
		if (x == c)
			return true;
	return false;
}

static bool djob_alive(struct daemon *d, struct djob *j)
{
	for (struct jobq_item *it = d->q.head; it; it = it->next)
		if (it->data == j)
			return true;
	return false;
}

int daemon_loop(struct daemon *d)
{
	struct pollmap m = {0};
	int rc = 0;
	for (;;) {
		if (d->stopping && !d->q.head)
			break;
		/* the windows' drains and undrains, queued before the jobs'
		 * pipes are polled */
		double due = d->stopping ? -1 : windows_tick(d);
		if (!d->stopping) {
			double now = pve_clock_now(NULL);
			if (now >= d->next_prune)
				prune_jobs(d);
			double p = d->next_prune - now;
			if (due < 0 || p < due)
				due = p > 0 ? p : 0;
		}
		schedule(d);
		m.n = 0;
		bool oom = pm_add(&m, d->sig_fd, POLLIN, SRC_SIG, NULL) < 0;
		sweep_conns(d);
		for (struct dconn *c = d->conns; c; c = c->next)
			oom |= pm_add(&m, c->c.fd,
				      (short)((c->c.rd_eof ? 0 : POLLIN) |
					      (ctl_conn_pending(&c->c) ? POLLOUT : 0)),
				      SRC_CONN, c) < 0;
		for (struct jobq_item *it = d->q.head; it; it = it->next) {
			struct djob *j = it->data;
			if (j->proc.out_fd >= 0)
				oom |= pm_add(&m, j->proc.out_fd, POLLIN, SRC_OUT, j) < 0;
			if (j->proc.err_fd >= 0)
				oom |= pm_add(&m, j->proc.err_fd, POLLIN, SRC_ERR, j) < 0;
			if (j->proc.ev_fd >= 0)
				oom |= pm_add(&m, j->proc.ev_fd, POLLIN, SRC_EV, j) < 0;
		}
		/* the listener last: the connections that closed in the same
		 * wakeup are dropped before a new one is counted against
		 * [daemon] max_clients */
		if (!d->stopping && d->lis.fd >= 0 && !d->accept_paused)
			oom |= pm_add(&m, d->lis.fd, POLLIN, SRC_LISTEN, NULL) < 0;
		if (oom) {
			log_error("out of memory in the event loop");
			rc = 1;
			break;
		}
		/* nothing is due while idle: wait for an fd, or until a
		 * maintenance window opens or closes; stopping: until the
		 * grace period ends */
		int timeout = -1;
		if (d->stopping) {
			double left = d->stop_deadline - pve_clock_now(NULL);
			timeout = left > 0 ? (int)(left * 1000) + 1 : 0;
		} else if (due >= 0) {
			timeout = due > 86400 ? 86400 * 1000 : (int)(due * 1000) + 1;
		}
		int pr = poll(m.p, m.n, timeout);
		if (pr < 0 && errno != EINTR) {
			log_error("poll: %s", strerror(errno));
			rc = 1;
			break;
		}
		if (d->stopping && pve_clock_now(NULL) >= d->stop_deadline)
			kill_overdue(d);
		for (size_t i = 0; pr > 0 && i < m.n; i++) {
			if (!m.p[i].revents)
				continue;
			switch (m.src[i]) {
			case SRC_SIG: on_signal(d); break;
			case SRC_LISTEN:
				if (d->lis.fd >= 0)
					on_accept(d);
				break;
			case SRC_CONN: {
				struct dconn *c = m.ptr[i];
				if (!conn_alive(d, c))
					break;
				if (m.p[i].revents & POLLOUT)
					ctl_conn_flush(&c->c);
				if (m.p[i].revents & (POLLIN | POLLHUP | POLLERR))
					on_conn_readable(d, c);
				if ((m.p[i].revents & (POLLHUP | POLLERR)) && c->c.rd_eof)
					c->c.eof = true; /* both ends closed */
				if (c->c.eof)
					conn_drop(d, c);
				break;
			}
			case SRC_OUT:
			case SRC_ERR:
			case SRC_EV: {
				struct djob *j = m.ptr[i];
				if (!djob_alive(d, j))
					break;
				int *fd = m.src[i] == SRC_OUT ? &j->proc.out_fd
					: m.src[i] == SRC_ERR ? &j->proc.err_fd : &j->proc.ev_fd;
				if (*fd == m.p[i].fd)
					on_child_fd(d, j, fd);
				break;
			}
			}
		}
		schedule(d);
	}
	free(m.p);
	free(m.src);
	free(m.ptr);
	return rc;
}
