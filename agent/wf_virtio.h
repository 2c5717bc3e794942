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
 *              Its failure runs the rollback (switch's undo), so that the
 *              job's error says how it ended.
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
 * out connections tried again, on the real clock: the guest boots on its
 * own time, which no PVE clock moves); a dry run tries once.
 *
 * Bench: with bench set, the in-guest benchmark (bench.h) runs before the
 * prepare step and after the finish step on the guest's session; its
 * phases are notes, its figures the job's vars and, with a store, kept in
 * state.db's bench figures. A failed benchmark is a note, never a conversion
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

enum convert_bus { CONVERT_BUS_AUTO = 0, CONVERT_BUS_BLK, CONVERT_BUS_SCSI };
/* "virtio-blk" / "virtio-scsi" -> bus; -1 for anything else. */
int convert_bus_parse(const char *s, enum convert_bus *out);


/* The workflow (job.h): submitted as every job is (job_submit, then
 * job_run); it opens from its params with the env's conf, store, stop
 * flag and waits and the job's PVE client, finds the guest by the
 * subject (its name), its template and address as asked (a dry run goes
 * on without an address, to show the PVE side). Its events: each step's
 * end with its summary; a file's change as a JOB_EV_DIFF with its path
 * (unified diff); each PVE config change as a JOB_EV_DIFF line "ide0 ->
 * virtio0: ..." (in step "switch", or "preflight" for a dry run); notes.
 * The PVE side of the plan is reported before any guest connection. */
struct job_workflow;
extern const struct job_workflow wf_virtio;


/* What a virtio job learned, in its vars beside the journal: "os" (the
 * guest's OS, "FreeBSD 9.0-RELEASE"), "bus" ("virtio-blk" or
 * "virtio-scsi"), "snapshot" (its name while there is one), "changes"
 * (the config change lines), "resumed" (a journal from an interrupted run
 * was found), "rolled_back" (the rollback ran and worked),
 * "already_virtio" (nothing to move), "plan_only" (a dry run whose guest
 * side could not be checked), "bench_before" and "bench_after" (the
 * benchmark's figures on the old and the new bus, bench_result_json).
 * Its failure is the job's error (job_error; a rollback's words in it)
 * and what it left, the job's (job_left). */

/* What the guest's config alone decides before its address is looked up
 * (convert_config_check on the config and its pending changes, read):
 * 1 nothing to convert, 0 go on, -1 refused (PVE_ERR_CONFIG naming the
 * deciding reason) or a read failed. A new job of the workflow checks
 * it when it opens; the CLI before it runs one (target.h config_check). */
int wf_virtio_config_check(struct pve *c, const struct guest_target *gt, struct pve_error *err);

/* The conversion's result from the job's vars, params and error, after
 * job_run or loaded from the store: {"status" ("converted",
 * "already-virtio", "dry-run", "failed", "needs-attention",
 * "dry-run-incomplete": a dry run that showed the PVE side but could not
 * check the guest's, exit 4), "outcome", "os", "bus", "snapshot",
 * "changes", "resumed", "rolled_back", "failed_step" and "error" (not
 * done), "recovery" (what it left), "bench" (the before/after comparison,
 * bench.h)}; new reference. NULL when the job never began its first step
 * (its error says why: the guest not found, refused by its config, run
 * by another process) or out of memory. */
json_object *wf_virtio_result_json(struct job *j);
/* The benchmark's figures on the old and the new bus (its vars): 1 both
 * (free them with bench_result_free), 0 not both, -1 unreadable (logged). */
int wf_virtio_bench(struct job *j, struct bench_result *before, struct bench_result *after);

#endif
