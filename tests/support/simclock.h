/* simclock.h - test support: a pve_clock (pve.h) for tests against the
 * simulator whose sleep moves the simulator's clock forward (POST
 * /_sim/advance) instead of waiting, so task and lock waits take no real
 * time and no test sleeps to synchronise. Its now() is the real monotonic
 * clock plus everything advanced so far. Thread-safe. */
#ifndef TESTS_SIMCLOCK_H
#define TESTS_SIMCLOCK_H

#include "pve.h"
#include "simproc.h"

#include <pthread.h>

struct simclock {
	struct simproc *sp;
	pthread_mutex_t mu;
	double offset;          /* seconds advanced so far */
	struct pve_clock clock; /* pass &clock to pve_opts, task waits, ... */
};

void simclock_init(struct simclock *sc, struct simproc *sp);
void simclock_destroy(struct simclock *sc);

#endif
