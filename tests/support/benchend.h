/* benchend.h - the end of a bench run: its simulator stopped and its
 * scratch directory removed. */
#ifndef PVAGENT_TEST_BENCHEND_H
#define PVAGENT_TEST_BENCHEND_H

#include "simproc.h"

/* Stop sim and remove dir (rm -rf). 0, or -1 after saying what failed. */
int bench_end(struct simproc *sim, const char *dir);

#endif
