/* clock.h - the one time source of the agent: a monotonic clock and a
 * sleep, injectable so that tests run in the simulator's time instead of
 * waiting. Wall-clock (unix) time for records is clock_unix_now(). */
#ifndef PVAGENT_CLOCK_H
#define PVAGENT_CLOCK_H

/* Time source and sleep, injectable so tests run without real waiting.
 * A NULL struct or NULL members mean the real monotonic clock and
 * nanosleep. */
struct pve_clock {
	double (*now)(void *ctx);                /* seconds, monotonic */
	void (*sleep)(void *ctx, double seconds);
	void *ctx;
};
double pve_clock_now(const struct pve_clock *clk);
void pve_clock_sleep(const struct pve_clock *clk, double seconds);

/* Seconds since the epoch (CLOCK_REALTIME), for timestamps in the store. */
double clock_unix_now(void);

#endif
