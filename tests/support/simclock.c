/* simclock.c - a pve_clock that advances the simulator (simclock.h). */
#include "simclock.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double sc_now(void *ctx)
{
	struct simclock *sc = ctx;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	pthread_mutex_lock(&sc->mu);
	double off = sc->offset;
	pthread_mutex_unlock(&sc->mu);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9 + off;
}

static void sc_sleep(void *ctx, double s)
{
	struct simclock *sc = ctx;
	if (s <= 0)
		return;
	pthread_mutex_lock(&sc->mu);
	if (simproc_advance(sc->sp, s) < 0) {
		/* A test cannot go on with a clock that did not move. */
		fprintf(stderr, "simclock: the simulator did not advance its clock\n");
		abort();
	}
	sc->offset += s;
	pthread_mutex_unlock(&sc->mu);
}

void simclock_init(struct simclock *sc, struct simproc *sp)
{
	sc->sp = sp;
	sc->offset = 0;
	pthread_mutex_init(&sc->mu, NULL);
	sc->clock = (struct pve_clock){sc_now, sc_sleep, sc};
}

void simclock_destroy(struct simclock *sc)
{
	pthread_mutex_destroy(&sc->mu);
}
