/* clock.c - the monotonic clock and sleep behind struct pve_clock, and
 * unix time for records (see clock.h). */
#include "clock.h"

#include <errno.h>
#include <time.h>

double pve_clock_now(const struct pve_clock *clk)
{
	if (clk && clk->now)
		return clk->now(clk->ctx);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void pve_clock_sleep(const struct pve_clock *clk, double seconds)
{
	if (clk && clk->sleep) {
		clk->sleep(clk->ctx, seconds);
		return;
	}
	if (seconds <= 0)
		return;
	struct timespec ts = {(time_t)seconds,
			      (long)((seconds - (double)(time_t)seconds) * 1e9)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

double clock_unix_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
