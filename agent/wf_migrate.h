/* wf_migrate.h - `migrate` as a job of the engine (wf_migrate.c): plan
 * (precondition, refusals), downtime limit, migrate (task, probe, HA
 * child task), verify, restore. Its params and the vars it leaves are
 * documented here, for the CLI, the drain and the daemon. */
#ifndef PVAGENT_WF_MIGRATE_H
#define PVAGENT_WF_MIGRATE_H

#include "job.h"

extern const struct job_workflow wf_migrate;

/* Params (JSON object; subject = the guest's name):
 *   target         node (required)
 *   storage_map    "S" or "SRC:DST,..." (optional)
 *   bwlimit        MiB/s (optional)
 *   max_downtime   ms (optional; qemu online only)
 *   dry_run        bool
 *   force_ha       bool: an HA-managed guest with a storage_map or bwlimit
 *                  migrates through HA without them (else refused: the
 *                  CRM takes neither)
 *   probe_port     TCP port to probe (optional; default [migrate]
 *                  probe_port, then [ssh] port, then 22)
 *   address        the guest's address to probe (optional; default its
 *                  config's or its guest agent's)
 *   home           node: tag the guest pvagent-home-NODE once moved
 *   unhome         bool: remove its pvagent-home-* tag once moved
 * Vars left (json.h to read): vmid, node (source), type, method
 *   ("none" when already on the target), via_ha, memory, disk_bytes,
 *   estimate_s, and after the migration: duration_s, downtime_ms (from
 *   the log, -1 none), speed (bytes/s), transferred (bytes), probe_gap_ms
 *   (-1: no gap seen or not probed), probed (bool), elapsed_s. */

/* Make the params of a migration (a new object; NULL on OOM). */
json_object *wf_migrate_params(const char *target, const char *storage_map,
			       unsigned bwlimit_mib, unsigned max_downtime_ms, bool dry_run);

struct mig_cluster;
struct guest_ref;
/* Before job_run: share a run's cluster facts (migrate_facts.h; a
 * command line's, a drain's: borrowed, it outlives the job) and, for a
 * new job, the guest the command found (copied: not looked up again).
 * Without, the job reads its own. */
void wf_migrate_attach(struct job *j, struct mig_cluster *mc, const struct guest_ref *g);

/* The tag that says where a drained guest lives ("pvagent-home-NODE"). */
#define WF_HOME_TAG "pvagent-home-"

#endif
