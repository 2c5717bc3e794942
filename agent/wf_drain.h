/* wf_drain.h - `drain NODE` and `undrain NODE` as jobs of the engine
 * (wf_drain.c). A drain plans (drain_plan.h) from what PVE says about the
 * node's guests and the targets, refuses before moving anything when a
 * guest fits nowhere (unless partial), then moves the guests as wf_migrate
 * jobs in a sliding window (max_workers in flight, at most per_target
 * into one node), tagging each moved guest pvagent-home-NODE. An undrain
 * moves every guest whose home tag names NODE back and removes the tag.
 * With a deadline (maintenance windows), a migration whose estimate would
 * end after it is not started.
 *
 * Params (subject = NODE): to (array of node names), max_workers,
 * per_target, partial, dry_run, deadline (unix seconds; 0 none).
 * Vars: "moves": [{name, vmid, type, memory, method, target, status
 * ("move", "template", "pinned", "fits nowhere", "skipped", or after the
 * run "moved", "failed", "needs-attention"), why, estimate_s, job,
 * downtime_ms, probe_gap_ms, seconds}], "free_after": {node: bytes}. */
#ifndef PVAGENT_WF_DRAIN_H
#define PVAGENT_WF_DRAIN_H

#include "job.h"
#include "window.h"

extern const struct job_workflow wf_drain, wf_undrain;

/* Client options for the workers' PVE clients other than the env's conf's
 * [pve] (tests and the bench point them at a simulator). Without a conf
 * and without these, one worker uses the job's client. Call before
 * job_run. */
void wf_drain_attach(struct job *j, const struct pve_opts *po);

/* Plan with the cluster facts mc (borrowed; NULL: its own, read once by
 * the drain) of a run that plans several nodes' drains (rolling plan):
 * each node's version and machine types read once for them all. Call
 * before job_run. */
struct mig_cluster;
void wf_drain_share(struct job *j, struct mig_cluster *mc);

/* Their params: wf_drain_params, window_drain_params,
 * window_undrain_params (window.h). */

#endif
