/* convworld.h - test support for the suites that convert a guest to
 * virtio (test_virtio, test_virtio_faults): one fixture guest behind a
 * real sshd (guestenv.h) that is VM 190 "g190" of a one-node simulator
 * (PVE 8.4, local-lvm) on IDE/e1000, the simulator's boot model driving
 * the sshd (the watcher), a simulated clock for the PVE waits (simclock.h)
 * while SSH waits run in real time, a PVE client, the guest's SSH options
 * and a state.db; running `pvagent virtio` in-process as a job (job_submit
 * of wf_virtio, then job_run, as the CLI runs it) with its events
 * recorded; the guest's config and boot state as the simulator
 * has them. conv_world_reset() puts the guest back as it started (its
 * files, a fresh simulator, no state.db) without a new sshd, so that a
 * suite runs many conversions on one guest.
 *
 * Needs root (guestenv.h). Functions print why they failed on stderr and
 * return -1. */
#ifndef TESTS_CONVWORLD_H
#define TESTS_CONVWORLD_H

#include "wf_virtio.h"
#include "guestenv.h"
#include "simclock.h"
#include "simproc.h"
#include "util.h"

#include <json-c/json.h>
#include <stdbool.h>

/* The API token of the admin (the test acting by hand), beside the
 * agent's (the simulator's first token, sp.token_id). */
#define ADMIN_TOKEN "root@pam!admin"

struct conv_world_opts {
	const char *fixture;      /* "freebsd-9.0", ... */
	const char *addr;         /* the guest's loopback address */
	const char *ide0;         /* boot disk value; NULL: "local-lvm:vm-190-disk-0,size=16G" */
	const char *disk_key;     /* the boot disk's key; NULL: "ide0" ("sata0": on SATA) */
	const char *nic_model;    /* net0's model; NULL: "e1000" */
	const char *extra;        /* more config members (",\"ide1\": \"...\""), or NULL */
	const char *ha;           /* the scenario's "ha" array, or NULL */
	const char *status;       /* the guest's status; NULL: "running" */
	const char *const *sim_args; /* more pvesim arguments, or NULL */
	long timeout_ms;          /* PVE request timeout; 0: pve.h's default */
	bool keep_pristine;       /* keep a copy of the guest's files for
				     conv_world_reset() */
};

struct conv_world;
/* Called for each event of a run (after it is recorded). */
typedef void (*conv_world_hook)(struct conv_world *w, const struct job_event *ev);

struct conv_world {
	struct conv_world_opts o;
	struct guestenv ge;
	struct simproc sp;
	struct simclock sc;
	bool sim_up, clock_up;
	struct pve_clock clk;
	struct pve_opts po;
	struct pve *c;
	struct ssh_opts so;
	char *scenario;           /* its path */
	char *state;              /* the state directory (state.db) */
	char *pristine;           /* the copy of the guest's files, or NULL */
	struct sbuf events;       /* "KIND STEP[ PATH]: TEXT" lines of every run */
	conv_world_hook hook;
	bool keep_snapshot;       /* the runs' --keep-snapshot */
	int hook_fired;
	void *hook_ctx;
	char *root_fstab;         /* /etc/fstab before conv_world_break_root() */
	char *broken_fstab;       /* and after */
};

int conv_world_start(struct conv_world *w, const struct conv_world_opts *o);
/* The guest as it started: watcher and simulator stopped (-1 when the
 * simulator did not exit cleanly), its files put back, state.db removed,
 * a fresh simulator (no faults, empty request log) and watcher. Needs
 * keep_pristine. The events and the hook are cleared. */
int conv_world_reset(struct conv_world *w);
/* Stop everything; 0 when the simulator exited cleanly and the watcher
 * had no failure. */
int conv_world_stop(struct conv_world *w);
/* Stop whatever still runs (a suite's .fini after a failed assertion). */
void conv_world_cleanup(struct conv_world *w);

/* A virtio job of guest 190 ("g190") at its address, by the params table
 * (bus, dry_run, keep_snapshot, verify_timeout_s: verify_s, 0: 20 s),
 * submitted and run in an env with the configuration a pvagent.conf
 * gives (the guest's SSH key, port and known_hosts; the state directory),
 * the world's client, state.db (none for a dry run) and event recorder.
 * *res: its result (wf_virtio_result_json: status, outcome, error, ...).
 * 0 when the job is done, -1 when not; -2 when it did not begin (*res
 * NULL, said on stderr). */
int conv_world_run(struct conv_world *w, enum convert_bus bus, bool dry_run, double verify_s,
		   json_object **res);

/* Is an unfinished virtio job in state.db? 1 yes, 0 no, -1 error. */
int conv_world_open_job(struct conv_world *w);
/* Guest 190 of the simulator's state (new reference), or NULL. */
json_object *conv_world_guest(struct conv_world *w);
/* Its config member key, copied (NULL when absent). */
char *conv_world_config(struct conv_world *w, const char *key);
/* Its boot model's state ("up", "stopped", "mountroot", ...), copied. */
char *conv_world_boot(struct conv_world *w);
/* A FreeBSD guest's fstab with its root back on the IDE name
 * (/dev/ad0s1a), as if the edit had been lost: on virtio it stops at
 * mountroot> and never answers. The text before is kept for
 * conv_world_fix_root(). */
int conv_world_break_root(struct conv_world *w);
/* The hook doing that at the first PVE config change of a run. */
void conv_world_break_root_hook(struct conv_world *w, const struct job_event *ev);
/* The admin's repair: an fstab still broken so gets its text from before
 * back, and a guest hanging at mountroot is stopped. 1 repaired, 0
 * nothing to repair, -1 error. */
int conv_world_fix_root(struct conv_world *w);

/* Is it a PVE config change line of a run ("ide0 -> virtio0: ...")? */
bool conv_world_is_config_change(const struct job_event *ev);

#endif
