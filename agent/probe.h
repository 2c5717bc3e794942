/* probe.h - the downtime clients see during a migration: a thread that
 * connects to the guest's TCP port every interval (10 ms) while the task
 * runs and keeps the longest time between two successful connects with
 * failures between them. Bounded: it stops by itself after max_s. Real
 * (monotonic) time. */
#ifndef PVAGENT_PROBE_H
#define PVAGENT_PROBE_H

#include <stdbool.h>

struct probe;

struct probe_result {
	double longest_gap_ms;   /* -1 when no gap was seen */
	unsigned attempts, ok;   /* connects tried and succeeded */
	bool ever_ok;            /* the address answered at least once */
};

/* Start probing addr:port (IPv4 or IPv6 literal) every interval_ms
 * (0: 10), each connect bounded by the interval. Returns NULL when the
 * address is not a literal or the thread cannot start (errno set). */
struct probe *probe_start(const char *addr, unsigned port, unsigned interval_ms, double max_s);
/* Stop, join and free; *out filled (may be NULL). */
void probe_stop(struct probe *p, struct probe_result *out);

/* One connect to addr:port within timeout_ms: 1 accepted, 0 not, -1 addr
 * is not a literal. */
int probe_once(const char *addr, unsigned port, unsigned timeout_ms);

#endif
