/* rollfx.h - test support for `pvagent rolling` (test_rolling, the rolling
 * bench): tests/pvesim/scenarios/rolling.json (three 8.4 nodes with an
 * upgrade to 9.1.1 each, Ceph, 30 guests: HA and not, Ceph and local
 * disks, a q35 VM, one pinned to pc-i440fx-8.1, a stopped VM and a
 * container per node) with a test sshd per node whose commands the
 * simulator answers (nodesshd.h), a state directory and the migrations the
 * simulator ran, as its tasks show them. Needs root (the sshd chroots). */
#ifndef TESTS_ROLLFX_H
#define TESTS_ROLLFX_H

#include "migfx.h"
#include "nodesshd.h"

#include <json-c/json.h>
#include <stdbool.h>

#define ROLLFX_SCENARIO "tests/pvesim/scenarios/rolling.json"

struct rollfx {
	struct migfx f;
	struct nodesshd ns;
	char dir[40];           /* a temporary directory: known_hosts, state.db */
	char *db;               /* dir/state.db (opened as f.env.store unless daemon) */
	json_object *node_ssh;  /* {NODE: "127.0.38.N:PORT"} */
	json_object *scen;      /* the scenario: the guests' homes and states */
	unsigned probe_port;    /* rollfx_start_probed's: every guest listens on it */
};

/* scale NULL: in simulated time (simclock.h: each sleep advances the
 * simulator, and concurrent sleeps add up, so durations in it mean
 * little); else the simulator at that time scale (--time-scale) in real
 * time. store: state.db opened as f.env.store for a run in this process
 * (else pvagentd's). 0; 1 when not root (nothing started); -1 after
 * saying why on stderr. */
int rollfx_start(struct rollfx *w, const char *scale, bool store);
/* As rollfx_start, but every guest with an address listens on one port
 * (on its own address), the [migrate] probe_port, so each migration's
 * probe measures the gap clients see (the simulator closes the port for
 * the downtime; in real time only: scale not NULL, 20 for a container's
 * restart to last 150 ms). */
int rollfx_start_probed(struct rollfx *w, const char *scale, bool store);
/* Stop and remove everything; 0, or -1 when something did not end cleanly. */
int rollfx_stop(struct rollfx *w);

/* The migrations the simulator ran (qmigrate and vzmigrate tasks, done or
 * not, by any user: pvagent's and HA's), oldest first, each {"upid",
 * "vmid", "type" (qmigrate|vzmigrate), "from", "to", "start", "end" (-1
 * while running), "user", "ok", "downtime_ms" (the log's, -1 for none)},
 * times in the simulator's seconds (whole ones, as PVE lists tasks). 0, or
 * -1 after saying why on stderr. */
int rollfx_migrations(struct rollfx *w, json_object **out);

#endif
