/* benchend.c - the end of a bench run (benchend.h). */
#include "benchend.h"

#include "util.h"

#include <stdio.h>
#include <stdlib.h>

int bench_end(struct simproc *sim, const char *dir)
{
	int rc = 0;
	if (simproc_stop(sim) < 0) {
		fprintf(stderr, "bench: the simulator did not exit cleanly\n");
		rc = -1;
	}
	char *cmd = strprintf("rm -rf '%s'", dir);
	if (!cmd || system(cmd) != 0) {
		fprintf(stderr, "bench: cannot remove %s\n", dir);
		rc = -1;
	}
	free(cmd);
	return rc;
}
