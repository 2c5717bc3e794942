/* migfx.h - test support for the migration suites and bench: the PVE
 * simulator started on a scenario, a PVE client to it, a [migrate]
 * configuration and a job environment, in simulated time (simclock.h) or
 * real time. */
#ifndef TESTS_MIGFX_H
#define TESTS_MIGFX_H

#include "conf.h"
#include "job.h"
#include "simclock.h"
#include "simproc.h"

#include <stdbool.h>

struct migfx {
	struct simproc sp;
	struct simclock sc;
	bool simtime;
	struct pve_opts opts;
	struct pve *c;
	struct conf conf;       /* [migrate]: reserve 1 GiB, probe_port 1 (tests
				   that probe name the port), timeout 600 s,
				   per_target 2 */
	struct job_env env;
	char *scenario_copy;    /* migfx_start_with's file, removed at stop */
};

/* Start the simulator on scenario with extra_args (NULL-terminated, may
 * be NULL). 0, or -1 after saying why on stderr. */
int migfx_start(struct migfx *f, const char *scenario, const char *const *extra_args,
		bool simtime);
/* Start on a copy of scenario with changes (a JSON object's text) merged
 * in: an object into an object member by member, an object into an
 * array of objects by their "name", "id" or "vmid" ({"nodes": {"pve2":
 * {"version": "8.4"}}}), an array onto an array appended, anything else
 * replaced ({"pve_version": "9.1"}). The suites run one scenario on
 * several PVE versions this way. 0, or -1 after saying why on stderr. */
int migfx_start_with(struct migfx *f, const char *scenario, const char *changes,
		     bool simtime);
/* Stop everything; 0, or -1 when the simulator did not exit cleanly. */
int migfx_stop(struct migfx *f);

#endif
