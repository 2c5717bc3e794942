/* probe.c - TCP reachability probe of a guest during a migration
 * (probe.h): a non-blocking connect every interval, the longest gap
 * between successes measured on the monotonic clock. */
#include "probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct probe {
	struct sockaddr_storage sa;
	socklen_t salen;
	unsigned interval_ms;
	double max_s;
	pthread_t th;
	atomic_bool stop;
	struct probe_result res;
};

static double mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One connect: true when it was accepted within timeout_ms. */
static bool try_connect(const struct probe *p, int timeout_ms)
{
	int fd = socket(p->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool ok = false;
	int r = connect(fd, (const struct sockaddr *)&p->sa, p->salen);
	if (r == 0) {
		ok = true;
	} else if (errno == EINPROGRESS) {
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		if (poll(&pfd, 1, timeout_ms) == 1) {
			int e = 0;
			socklen_t el = sizeof e;
			ok = getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0;
		}
	}
	close(fd);
	return ok;
}

static void *probe_main(void *arg)
{
	struct probe *p = arg;
	double start = mono_ms(), last_ok = -1;
	bool failed_since = false;
	while (!atomic_load(&p->stop) && mono_ms() - start < p->max_s * 1e3) {
		double t0 = mono_ms();
		bool ok = try_connect(p, (int)p->interval_ms);
		double t = mono_ms();
		p->res.attempts++;
		if (ok) {
			p->res.ok++;
			p->res.ever_ok = true;
			if (failed_since && last_ok >= 0 && t - last_ok > p->res.longest_gap_ms)
				p->res.longest_gap_ms = t - last_ok;
			last_ok = t;
			failed_since = false;
		} else {
			failed_since = true;
		}
		double left = (double)p->interval_ms - (mono_ms() - t0);
		if (left > 0) {
			long ns = (long)(left * 1e6);
			struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

/* addr:port into p->sa; -1 when addr is not an IPv4 or IPv6 literal. */
static int set_addr(struct probe *p, const char *addr, unsigned port)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)&p->sa;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&p->sa;
	if (addr && inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		p->salen = sizeof *s4;
	} else if (addr && inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		p->salen = sizeof *s6;
	} else {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int probe_once(const char *addr, unsigned port, unsigned timeout_ms)
{
	struct probe p;
	memset(&p, 0, sizeof p);
	if (set_addr(&p, addr, port) < 0)
		return -1;
	return try_connect(&p, (int)timeout_ms) ? 1 : 0;
}

struct probe *probe_start(const char *addr, unsigned port, unsigned interval_ms, double max_s)
{
	struct probe *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	if (set_addr(p, addr, port) < 0) {
		free(p);
		return NULL;
	}
	p->interval_ms = interval_ms ? interval_ms : 10;
	p->max_s = max_s > 0 ? max_s : 3600;
	p->res.longest_gap_ms = -1;
	atomic_init(&p->stop, false);
	int e = pthread_create(&p->th, NULL, probe_main, p);
	if (e) {
		free(p);
		errno = e;
		return NULL;
	}
	return p;
}

void probe_stop(struct probe *p, struct probe_result *out)
{
	if (!p)
		return;
	atomic_store(&p->stop, true);
	pthread_join(p->th, NULL);
	if (out)
		*out = p->res;
	free(p);
}
