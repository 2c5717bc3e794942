/* wf_rolling.h - `pvagent rolling plan|run` as jobs of the engine
 * (wf_rolling.c): rolling maintenance of a cluster, one node at a time.
 *
 * "rolling" (subject "cluster") has two steps: preflight (the cluster's
 * quorum with a vote to spare, HA, Ceph's health where there is Ceph,
 * every node's version, each node's drain planned by the drain planner
 * with the run's cluster facts read once: capacity, and the guests that
 * cannot move live with what to do; then the order, rolling_plan.h) and
 * nodes (a "rolling-node" child job per node, in order, each run to its
 * end before the next starts). A plan (mode "plan") ends after preflight
 * and changes nothing.
 *
 * "rolling-node" (subject NODE; params "parent" = the rolling job's ID, so
 * that pvagentd's start-up leaves it to its parent) has the steps
 * precheck, maintenance (HA node-maintenance over SSH where HA resources
 * exist, checked in the HA status; Ceph noout where there is Ceph),
 * drain (a drain job, params "parent" = this job's ID), update (mode
 * "wait": until the node has rebooted, runs the expected version, is
 * online and the cluster quorate; mode "run": over SSH apt-get update and
 * dist-upgrade, or for a major upgrade pveXtoY --full then the user's
 * script, and a reboot when the kernel or QEMU changed, then the same
 * wait), check (the post-checks), leave (maintenance and noout off) and
 * undrain (an undrain job). Each step converges when run again, the
 * child jobs are found again by the IDs the vars keep.
 *
 * Params (rolling): nodes (array; none: every node), mode ("plan",
 * "wait", "run"), version (expected after the update: "9", "9.1"; none:
 * any), script (the major upgrade's script text, mode run), window (a
 * [window] name: each node starts while it is open, its drain's deadline
 * its end), self (the node pvagent runs on: it goes last), max_workers,
 * wait_s (how long a node's update may take; default a day), poll_s (seconds,
 * a fraction too; default 5), node_ssh ({NODE: "HOST[:PORT]"}: where a node's SSH is
 * when not at its /cluster/status address, port 22). A rolling-node's are the same without nodes, with parent
 * and deadline.
 *
 * Vars (rolling): "cluster" {name, quorate, nodes, online, ha, ceph},
 * "checks" [{check, ok, detail}], "order" [NODE...], "nodes" [{name,
 * version, online, self, moves (the drain plan: wf_drain.h's moves),
 * free_after, estimate_s, todo [{guest, vmid, what}], and once run: job,
 * phase ("done", or where it stopped), phases, moves_done}].
 * Vars (rolling-node): "phases" {STEP: {start, end}} (unix seconds),
 * "drain_job", "undrain_job", "moves_done" [{name, vmid, from, to,
 * method, status, job, start, end, seconds, downtime_ms, probe_gap_ms,
 * leg ("drain"/"undrain")}], ha_maintenance, noout, uptime_before,
 * upgraded, reboot, reboot_sent, version_after. */
#ifndef PVAGENT_WF_ROLLING_H
#define PVAGENT_WF_ROLLING_H

#include "job.h"

extern const struct job_workflow wf_rolling, wf_rolling_node;

/* A rolling request, as the CLI gives it. */
struct rolling_request {
	const char *const *nodes;  /* NULL: every node */
	size_t n_nodes;
	const char *mode;          /* "plan", "wait", "run" */
	const char *version;       /* or NULL */
	const char *script;        /* the script's text (mode run), or NULL */
	const char *window;        /* or NULL */
	const char *self;          /* or NULL */
	unsigned max_workers;      /* 0: [migrate]'s */
	unsigned wait_s;           /* 0: a day */
	json_object *node_ssh;     /* {NODE: "HOST[:PORT]"} (borrowed), or NULL */
};
/* Its params (NULL on OOM). */
json_object *wf_rolling_params(const struct rolling_request *q);

/* Client options for the drains' workers (wf_drain_attach), passed to
 * the child jobs it runs. Call before job_run. */
void wf_rolling_attach(struct job *j, const struct pve_opts *po);

#endif
