/* guestnet.c - listeners on the guests' addresses, closed during their
 * migration downtime (guestnet.h). */
#include "guestnet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_WINDOWS 16

struct endpoint {
	struct sockaddr_in sa;
	int fd;                      /* listening, or -1 while down */
	double from[MAX_WINDOWS], to[MAX_WINDOWS];
	unsigned n_windows;          /* a ring: the oldest is replaced */
};

struct guestnet {
	pthread_t th;
	pthread_mutex_t mu;
	bool stop;
	guestnet_clock_fn now;
	void *ctx;
	struct endpoint *ep;
	size_t n;
};

static int open_listener(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (const struct sockaddr *)sa, sizeof *sa) < 0 || listen(fd, 64) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool is_down(const struct endpoint *e, double t)
{
	for (unsigned i = 0; i < e->n_windows && i < MAX_WINDOWS; i++)
		if (t >= e->from[i] && t < e->to[i])
			return true;
	return false;
}

static void *net_main(void *arg)
{
	struct guestnet *n = arg;
	for (;;) {
		struct pollfd pfd[64];
		size_t np = 0;
		pthread_mutex_lock(&n->mu);
		if (n->stop) {
			pthread_mutex_unlock(&n->mu);
			break;
		}
		double t = n->now(n->ctx);
		for (size_t i = 0; i < n->n; i++) {
			struct endpoint *e = &n->ep[i];
			bool down = is_down(e, t);
			if (down && e->fd >= 0) {
				close(e->fd);
				e->fd = -1;
			} else if (!down && e->fd < 0) {
				e->fd = open_listener(&e->sa);
			}
			if (e->fd >= 0 && np < sizeof pfd / sizeof *pfd)
				pfd[np++] = (struct pollfd){.fd = e->fd, .events = POLLIN};
		}
		pthread_mutex_unlock(&n->mu);
		/* 1 ms: the listener follows the downtime to the millisecond */
		if (poll(pfd, np, 1) > 0) {
			pthread_mutex_lock(&n->mu);
			for (size_t i = 0; i < np; i++) {
				if (!(pfd[i].revents & POLLIN))
					continue;
				for (size_t k = 0; k < n->n; k++) {
					if (n->ep[k].fd != pfd[i].fd)
						continue;
					int c;
					while ((c = accept4(pfd[i].fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
						close(c);
				}
			}
			pthread_mutex_unlock(&n->mu);
		}
	}
	return NULL;
}

struct guestnet *guestnet_start(guestnet_clock_fn now, void *ctx)
{
	struct guestnet *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->now = now;
	n->ctx = ctx;
	pthread_mutex_init(&n->mu, NULL);
	if (pthread_create(&n->th, NULL, net_main, n) != 0) {
		pthread_mutex_destroy(&n->mu);
		free(n);
		return NULL;
	}
	return n;
}

static struct endpoint *find(struct guestnet *n, const struct sockaddr_in *sa)
{
	for (size_t i = 0; i < n->n; i++)
		if (n->ep[i].sa.sin_addr.s_addr == sa->sin_addr.s_addr &&
		    n->ep[i].sa.sin_port == sa->sin_port)
			return &n->ep[i];
	return NULL;
}

static int to_sa(const char *addr, unsigned port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return addr && port && port < 65536 && inet_pton(AF_INET, addr, &sa->sin_addr) == 1 ? 0
											   : -1;
}

int guestnet_listen(struct guestnet *n, const char *addr, unsigned port, unsigned *bound)
{
	struct sockaddr_in sa;
	if (!n || to_sa(addr, port ? port : 1, &sa) < 0)
		return -1;
	sa.sin_port = htons((uint16_t)port);
	*bound = port;
	pthread_mutex_lock(&n->mu);
	int rc = 0;
	if (!find(n, &sa)) {
		struct endpoint *v = realloc(n->ep, (n->n + 1) * sizeof *v);
		int fd = v ? open_listener(&sa) : -1;
		if (v)
			n->ep = v;
		if (fd < 0) {
			rc = -1;
		} else {
			socklen_t sl = sizeof sa;
			if (!port && getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
				close(fd);
				pthread_mutex_unlock(&n->mu);
				return -1;
			}
			*bound = ntohs(sa.sin_port);
			memset(&v[n->n], 0, sizeof v[n->n]);
			v[n->n].sa = sa;
			v[n->n].fd = fd;
			n->n++;
		}
	}
	pthread_mutex_unlock(&n->mu);
	return rc;
}

void guestnet_down(struct guestnet *n, const char *addr, unsigned port, double from, double to)
{
	struct sockaddr_in sa;
	if (!n || to_sa(addr, port, &sa) < 0)
		return;
	pthread_mutex_lock(&n->mu);
	struct endpoint *e = find(n, &sa);
	if (e) {
		unsigned i = e->n_windows % MAX_WINDOWS;
		e->from[i] = from;
		e->to[i] = to;
		e->n_windows++;
	}
	pthread_mutex_unlock(&n->mu);
}

void guestnet_stop(struct guestnet *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->mu);
	n->stop = true;
	pthread_mutex_unlock(&n->mu);
	pthread_join(n->th, NULL);
	for (size_t i = 0; i < n->n; i++)
		if (n->ep[i].fd >= 0)
			close(n->ep[i].fd);
	free(n->ep);
	pthread_mutex_destroy(&n->mu);
	free(n);
}
