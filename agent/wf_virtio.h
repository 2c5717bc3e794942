/* wf_virtio.h - `pvagent virtio NAME`: move a running qemu guest from
 * emulated IDE disks and e1000 NICs to virtio without ever leaving it
 * unbootable (pvagent(1) virtio).
 *
 * Steps (each one an event, each named in a failure):
 *   preflight  read the PVE config (kept verbatim as the rollback target);
 *              pick the IDE disks (cdroms left alone) and e1000/e1000e
 *              NICs; nothing to move: "already virtio", done. Connect over
 *              SSH (a stopped guest is started first), detect the OS and
 *              its profile, choose the bus (virtio-blk, or virtio-scsi
 *              where the profile supports it and it was asked for or is
 *              the better default), read fstab and the label facts, plan
 *              every file (osprof.h virtio plan).
 *   snapshot   POST .../snapshot "pvagent-virtio" where the storage can;
 *              a storage without snapshots is said, not fatal.
 *   prepare    (guest still on IDE/e1000) install the virtio kmod where the
 *              profile needs one and check its module file; then the
 *              PREPARE edits through inject's atomic, backed-up writes;
 *              Linux: rebuild the initramfs and check it holds the modules.
 *   switch     the SWITCH edits (names with no bus-independent form), then
 *              shutdown (stop after the timeout), PUT delete=ide0,... (no
 *              force: the volumes become unusedN), PUT virtio0=<same volume
 *              and options> ..., net0 with model virtio and the same MAC,
 *              the boot order, scsihw for virtio-scsi; start.
 *   verify     SSH answers within verify_timeout_s; every fstab file system
 *              is mounted, the kernel sees the new disks and NICs and no
 *              emulated one; PVE's config has no IDE disk or e1000 NIC left.
 *   finish     the FINAL edits drop the old em0/ad0 names kept for
 *              rollback.
 *   rollback   after any failure past the start of the switch: stop, put
 *              the saved config back key by key (never deleting an unusedN
 *              entry: that would destroy its volume), start, wait for SSH
 *              on IDE/e1000, put every file this conversion changed back
 *              to its original text: failed. If the rollback fails too:
 *              needs-attention, with the state left and how to recover
 *              by hand.
 *
 * Journal: before anything changes, the job's vars (job.h, kept in
 * state.db) hold the saved config and the original text of every file
 * changed; how far it got is the engine's step states. A run that finds
 * the open job resumes it: prepared guests are prepared again
 * (idempotent), a guest whose switch had sent its first request is
 * brought to the converted config and verified (or rolled back).
 *
 * SSH: after a start the guest is waited for as up's inject waits
 * (ssh_wait_connect, target.h: up to verify_timeout_s, refused and timed-
 * out connections tried again); a dry run tries once.
 *
 * Bench: with bench set, the in-guest benchmark (bench.h) runs before the
 * prepare step and after the finish step on the guest's session; its
 * phases are notes, its figures the result's and, with
 * bench_db, stored. A failed benchmark is a note, never a conversion
 * failure. The PVE config change itself is planned by convert_plan.h. */
#ifndef PVAGENT_WF_VIRTIO_H
#define PVAGENT_WF_VIRTIO_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "bench.h"
#include "convert_plan.h"
#include "event.h"
#include "guest.h"
#include "job.h"
#include "osprof.h"
#include "pve.h"
#include "ssh.h"
#include "store.h"
#include "target.h"

#include <signal.h>

enum convert_bus { CONVERT_BUS_AUTO = 0, CONVERT_BUS_BLK, CONVERT_BUS_SCSI };
/* "virtio-blk" / "virtio-scsi" -> bus; -1 for anything else. */
int convert_bus_parse(const char *s, enum convert_bus *out);

enum convert_status {
	CONV_FAILED = 0,  /* failed; guest as it was (rolled back or untouched) */
	CONV_DONE,        /* converted and verified */
	CONV_ALREADY,     /* no IDE disk or e1000 NIC: nothing to do */
	CONV_DRY_RUN,     /* plan shown, nothing changed */
	CONV_STUCK,       /* failed and the rollback failed: needs attention */
	CONV_PLAN_ONLY,   /* dry run: the PVE side shown, the guest side could
			     not be checked (error says why; outcome
			     unreachable: exit 4) */
};
/* "failed", "converted", "already-virtio", "dry-run", "needs-attention",
 * "dry-run-incomplete". */
const char *convert_status_name(enum convert_status s);

struct convert_request {
	struct pve *pve;
	const struct guest_ref *guest;   /* found by name (node, vmid, type) */
	const struct ssh_opts *ssh;      /* the guest's address and keys (a dry
					    run: host NULL when no address was
					    found, address_error says why) */
	const char *address_error;
	enum convert_bus bus;
	bool dry_run;
	struct store *store;             /* the job store (the journal); NULL:
					    not kept, no resume */
	volatile sig_atomic_t *stop;     /* set by a signal: stop between steps */
	const struct target_req *target; /* what the user asked for the guest
					    (template, address, vars), kept in
					    the job's params (may be NULL) */
	const struct guest_wait *wait;   /* PVE waits (their clock: wait->clock,
					    else clock); NULL: defaults */
	double verify_timeout_s;         /* SSH back after a start; 0: 300 */
	const struct pve_clock *clock;   /* for the SSH waits; NULL: real time */
	bool keep_snapshot;              /* keep the pvagent_virtio snapshot after
					    a conversion that worked (default:
					    deleted once verified: a snapshot
					    keeps PVE from migrating local
					    LVM-thin disks) */
	bool bench;                      /* benchmark before and after */
	unsigned bench_size_mib;         /* 0: bench.h's default */
	const char *bench_db;            /* state.db for the figures, or NULL */
	/* The job's events (event.h): each step's end with its summary; a
	 * file's change as a JOB_EV_DIFF with its path (unified diff); each
	 * PVE config change as a JOB_EV_DIFF line "ide0 -> virtio0: ..."
	 * (in step "switch", or "preflight" for a dry run); notes. May be
	 * NULL. */
	job_event_fn on_event;
	void *event_ctx;
};

struct convert_result {
	enum convert_status status;
	enum job_outcome outcome; /* the mains turn it into an exit code */
	char *os_desc;         /* "FreeBSD 9.0-RELEASE" or NULL */
	char *bus;             /* "virtio-blk", "virtio-scsi" or NULL */
	char *failed_step;     /* on failure */
	char *error;           /* what failed, or NULL */
	char *recovery;        /* CONV_STUCK: the state left and what to do */
	char *snapshot;        /* snapshot name, or NULL when none was taken */
	bool resumed;          /* a journal from an interrupted run was found */
	bool rolled_back;      /* the rollback ran and succeeded */
	char **changes;        /* config change lines */
	size_t n_changes;
	/* the benchmark's figures on the old and the new bus (bench set) */
	struct bench_result bench_before, bench_after;
	bool have_bench_before, have_bench_after;
};
void convert_result_free(struct convert_result *r);

/* The workflow (job.h) behind convert_run. */
struct job_workflow;
extern const struct job_workflow wf_virtio;

/* Run the conversion. Returns 0 when status is CONV_DONE, CONV_ALREADY or
 * CONV_DRY_RUN, -1 otherwise; *res is always filled. The PVE side of the
 * plan (the config lines) is reported before any guest connection. */
int convert_run(const struct convert_request *req, struct convert_result *res);

/* The params of a virtio job (subject = the guest's name): target's
 * "template", "address", "vars" (target.h), and req's "vmid", "bus",
 * "keep_snapshot", "bench", "bench_size_mib", "verify_timeout_s". A job
 * loaded alone (job_load + job_run, no convert_run) opens from them with
 * the env's conf, store, stop flag and waits and the job's PVE client.
 * NULL on OOM. */
json_object *convert_params(const struct target_req *target, const struct convert_request *req);
/* After job_run: the conversion's result (the launcher's, or the job's
 * own when it was loaded alone), completed from the job's outcome; valid
 * until job_free. NULL before the job ran. */
const struct convert_result *wf_virtio_result(struct job *j);

/* What the guest's config alone decides before its address is looked up
 * (convert_config_check on the config and its pending changes, read):
 * 1 nothing to convert, 0 go on, -1 refused (PVE_ERR_CONFIG naming the
 * deciding reason) or a read failed. A new job of the workflow checks
 * it when it opens; the CLI before it runs one (target.h config_check). */
int wf_virtio_config_check(struct pve *c, const struct guest_target *gt, struct pve_error *err);

/* {"status", "outcome", "os", "bus", "snapshot", "changes", "resumed",
 * "rolled_back", "failed_step", "error", "recovery", "bench" (the
 * before/after comparison, bench.h)}; new reference. */
json_object *convert_result_json(const struct convert_result *r);

#endif
