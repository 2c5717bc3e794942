/* wf_up.h - the `up` and `down` workflows as job engine step tables
 * (wf_up.c, wf_down.c; their planner is cfgdiff.c, their result
 * up_result.h; the CLI launches them, agent/cli/cli_up.c).
 *
 * up NAME... -t TEMPLATE: for each name (at most `parallel` in flight, one
 * PVE client per worker thread) find the guest by name; if there is none,
 * clone the template VM (full or linked, onto the chosen node and storage)
 * or create it from an ISO or container template (LXC on PVE >= 4, OpenVZ
 * before, chosen from /version), claiming a VMID by creating; then bring
 * its config to the template's expanded [pve] keys (key by key, PVE's
 * property-string formatting normalised; a NIC keeps its MAC), grow the
 * disk, start it and wait for an address. A guest that already exists is
 * converged the same way (difference shown and applied, started if
 * stopped); a second guest of the same name is never created, and if a
 * concurrent run created one anyway, the one with the higher VMID is
 * removed. Then, when the template has guest file sections ([loader.conf],
 * [rc.conf], [sysctl.conf], [file "..."]), the "inject" step: wait (bounded
 * by ssh_wait_s) until the guest answers SSH at its address, then run an
 * inject job (wf_inject.h) as a child of the up job (its params: the
 * template's file, the address, the expansion's vars, "parent"), whose
 * steps, events and resume are inject's own: an up resumed during it
 * resumes that job (its ID in the vars "inject_job"). A failed inject
 * leaves every file as it was (or says which are not) and fails the name
 * with inject's outcome. A template without file sections never touches
 * SSH. Progress events of the inject step carry the SSH wait ("waiting
 * for SSH ..."). Every step's duration is reported.
 *
 * down NAME [--purge]: clean shutdown (stop after the timeout), delete;
 * a guest that does not exist counts as done. */
#ifndef PVAGENT_WF_UP_H
#define PVAGENT_WF_UP_H

#include "job.h"
#include "conf.h"
#include "guest.h"
#include "tmpl.h"
#include "up_result.h"

/* What a user asks of `up`: the guests, their template and how to make
 * them (its params: up_check.h wf_up_params). */
struct up_request {
	const char *const *names;       /* guest names (DNS names, not all digits, distinct) */
	size_t n_names;
	const struct tmpl *tmpl;        /* loaded template */
	const char *node;               /* target node; NULL: the template VM's
					   node (clone) or the first online
					   node */
	const char *storage;            /* overrides [source] storage */
	int vmid;                       /* > 0: exactly this VMID (one name only) */
	int vmid_min, vmid_max;         /* > 0: claim from this range */
	const struct tmpl_kvlist *sets; /* --set KEY=VAL: [pve] overrides; the
					   pvagent key "size" (e.g. 32G) grows
					   the boot disk */
	const struct tmpl_kvlist *vars; /* --var K=V */
	const char *pubkey;             /* ${pubkey}: public key text, or NULL */
	bool no_start;
	bool full;                      /* force a full clone (else [source] full) */
	bool dry_run;                   /* plan only: reads, nothing sent that
					   changes anything, nothing stored */
	const char *pool;               /* --pool NAME: a pvagent.conf [pool]
					   gives the guest its address (in
					   ipconfig0, pool_claim.h); NULL: the
					   template's [guest] pool, if any */
	bool retemplate;                /* converge a guest made from another
					   template (its description names it);
					   otherwise that is refused, nothing
					   changed */
	/* Inject (templates with guest file sections, guests started) */
	bool no_inject;                 /* skip the inject step */
	double ssh_wait_s;              /* how long the guest may take to answer
					   SSH once its address is known (refused
					   or timed-out connections are retried
					   every wait.poll_s; host key and
					   authentication failures are not);
					   0: 300 */
	bool no_wait_ssh;               /* one SSH attempt: a guest that does not
					   answer yet is done, its files left for
					   `pvagent inject` */
};

extern const struct job_workflow wf_up;
extern const struct job_workflow wf_down;

/* Their params and checks (wf_up_params, up_check_params): up_check.h. */

/* The parameters of one `down` job. NULL on OOM. */
json_object *wf_down_params(bool purge, bool dry_run);
/* After job_run (either workflow): the job's result moved into *r (the
 * job keeps none), completed from the job: status, steps and their
 * durations, error, what is left; for a job never opened (no PVE client)
 * its subject, outcome and error. 0, or -1 out of memory (r->name NULL).
 * Free it with up_result_free. */
int wf_result_take(struct job *j, struct up_result *r);
/* wf_down.c's: where a down job keeps its result (wf_result_take's). */
struct up_result *wf_down_own_result(struct job *j);

#endif
