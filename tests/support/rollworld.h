/* rollworld.h - test support: issue 37's cluster for a rolling run
 * (tests/pvesim/scenarios/rolling.json: three 8.4 nodes with an upgrade to
 * 9.1.1 each, Ceph, 30 guests: HA and not, Ceph and local disks, a q35 VM,
 * one pinned to pc-i440fx-8.1, a stopped VM and a container per node): the
 * simulator with a test sshd per node (nodesshd.h), one identity authorized
 * on every node, a TOFU known_hosts and a state.db in a temporary
 * directory; a rolling job run in this process; a pvagent.conf for
 * pvagent and pvagentd on the same world. Needs root (the sshd chroots).
 * Every function prints why it failed on stderr and returns -1 (NULL). */
#ifndef TESTS_ROLLWORLD_H
#define TESTS_ROLLWORLD_H

#include "job.h"
#include "migfx.h"
#include "nodesshd.h"

#include <json-c/json.h>
#include <stdbool.h>

#define ROLLWORLD_SCENARIO "tests/pvesim/scenarios/rolling.json"

struct rollworld {
	struct migfx f;
	struct nodesshd ns;
	char dir[40];
	char *db;              /* dir/state.db */
	json_object *node_ssh; /* {NODE: "127.0.38.N:PORT"} */
	json_object *scen;     /* the scenario: the guests' homes and states */
	unsigned probe_port;   /* with probe: the port every guest listens on */
};

/* In simulated time for a run in this process (daemon false: the store
 * open in f.env.store), else the simulator at 100 times real time for
 * pvagentd's jobs (state.db theirs, not opened here). With probe every
 * guest with an address listens on one port (its own address), the
 * [migrate] probe_port, so each migration measures the gap clients see
 * (the simulator closes the port for the downtime); else probe_port 1. */
int rollworld_start(struct rollworld *w, bool daemon, bool probe);
/* Stop and remove everything; safe after a failed start. */
int rollworld_stop(struct rollworld *w);
/* `rolling run --run --version 9.1` over each node's sshd: its params. */
json_object *rollworld_run_params(const struct rollworld *w);
/* Write dir/pvagent.conf (and the token's secret file) for pvagent and
 * pvagentd on this world: [paths] state and socket in dir. Its path. */
char *rollworld_write_conf(const struct rollworld *w);
/* A rolling job on params (taken) run to its end in this process, on f's
 * store and client: the job (*out its outcome), or NULL. */
struct job *rollworld_run_job(struct migfx *f, json_object *params, enum job_outcome *out);

#endif
