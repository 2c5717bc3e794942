/* provision.h - the `up` and `down` workflows.
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
 * by ssh_wait_s) until the guest answers SSH at its address, and run
 * inject (inject.h) with the expanded template and the guest's name on that
 * session; a failed inject leaves every file as it was (or says which are
 * not) and fails the name with inject's outcome. A template without file
 * sections never touches SSH. Progress events of the inject step carry
 * the SSH wait ("waiting for SSH ...") and inject's own steps ("detect:
 * FreeBSD 14.1-RELEASE"). Every step's duration is reported.
 *
 * down NAME [--purge]: clean shutdown (stop after the timeout), delete;
 * a guest that does not exist counts as done. */
#ifndef PVAGENT_PROVISION_H
#define PVAGENT_PROVISION_H

#include "conf.h"
#include "event.h"
#include "job.h"
#include "guest.h"
#include "inject.h"
#include "pve.h"
#include "tmpl.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* ---- results --------------------------------------------------------------- */

enum up_status {
	UP_FAILED = 0,
	UP_CREATED,     /* a new guest */
	UP_CONVERGED,   /* existed; config changed and/or started */
	UP_UNCHANGED,   /* existed and matched */
	UP_DELETED,     /* down: deleted */
	UP_ABSENT,      /* down: did not exist */
	UP_PLANNED,     /* --dry-run: plan[] and diff[] say what would be done */
};
const char *up_status_name(enum up_status s); /* "created", ... */

struct up_step {
	char *step;       /* "clone" */
	double elapsed_s;
};

/* The inject step of one guest. */
struct up_inject {
	bool ran;                 /* the step ran (the template has guest
				     files; not no_inject, not no_start) */
	enum inject_status status; /* INJ_CHANGED, INJ_UNCHANGED, INJ_FAILED or
				      INJ_FAILED_PARTIAL */
	enum job_outcome outcome; /* inject's */
	const char *failed_step;  /* "connect", "detect", "write", ... (static
				     string) when failed, else NULL */
	char *summary;            /* inject_result_summary(), or the SSH wait's
				     failure */
};

struct up_result {
	char *name;
	int vmid;               /* 0 if none */
	char *node;             /* or NULL */
	enum guest_type type;
	char *address;          /* or NULL (--no-start, down) */
	enum up_status status;
	struct up_step *steps;
	size_t n_steps;
	char **diff;            /* "key: old -> new" lines applied */
	char *pending;          /* keys PVE applies at the next restart
				   (changed while running), comma separated,
				   or NULL */
	size_t n_diff;
	char **plan;            /* --dry-run: what would be done, step by step
				   ("clone VM 9014 (fbsd-base) on pve1 as VMID
				   101, full, onto local-lvm") */
	size_t n_plan;
	int claims;             /* create/clone requests issued */
	struct up_inject inject;
	long long job;          /* its job in the store, 0 when not stored */
	enum job_outcome outcome;
	char *left;             /* what a failure left behind, or NULL */
	char *failed_step;      /* the step it failed (or was interrupted) in */
	struct pve_error error; /* kind PVE_OK unless failed; a failed inject:
				   what "inject", the message starting with
				   the inject step that failed, and a kind
				   whose outcome is inject's */
};
void up_result_free(struct up_result *r);
/* {"name", "status", "vmid", "node", "type", "address", "steps" {step:
 * seconds}, "changes", "pending", "inject" {"status", "outcome",
 * "summary", "failed_step"} or null, "job", "outcome", "left"}; the CLI
 * adds the members every result has (output.h out_result_members). New
 * reference, NULL when out of memory. */
json_object *up_result_json(const struct up_result *r);
void up_results_free(struct up_result *r, size_t n);

/* ---- up ------------------------------------------------------------------------ */

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
	unsigned parallel;              /* at most this many in flight; 0: 4 */
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

	/* Inject (templates with guest file sections, guests started):
	 * conf gives the [ssh] settings (inject_ssh_opts with the template's
	 * [guest] user and port); it may be NULL only when the template has
	 * no file sections, or with no_inject or no_start. */
	const struct conf *conf;
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

	/* PVE access: each worker makes its own client from pve_opts. With
	 * parallel 1 (or one name) and client set, client is used instead. */
	const struct pve_opts *pve_opts;
	struct pve *client;

	struct guest_wait wait;         /* timeouts, clock (progress is set by
					   provision) */
	job_event_fn on_event;
	void *event_ctx;
	/* The job store (NULL: jobs are not stored and cannot be resumed),
	 * and the stop flag a signal handler sets (may be NULL). With a
	 * store, an interrupted `up` job of the same name is resumed instead
	 * of starting a new one. */
	struct store *store;
	volatile sig_atomic_t *stop;
};

/* Run up. *results gets n_names results in the order of names. Returns 0
 * when every name succeeded, -1 when any failed (see each result's error)
 * or on a request error before any work (then *results is NULL and err
 * says why: PVE_ERR_CONFIG for bad names, duplicates, --vmid with several
 * names, bad --set keys, a template with guest files to inject and no
 * conf or no [ssh] known_hosts). */
int provision_up(const struct up_request *req, struct up_result **results,
		 struct pve_error *err);

/* ---- down ------------------------------------------------------------------------ */

struct down_request {
	const char *name;
	bool purge;
	bool dry_run;                    /* say what would be done; send nothing */
	const struct pve_opts *pve_opts; /* used when client is NULL */
	struct pve *client;
	struct guest_wait wait;
	job_event_fn on_event;
	void *event_ctx;
	struct store *store;
	volatile sig_atomic_t *stop;
};

/* Shutdown (stop after wait.shutdown_timeout_s) and delete, as a job. A
 * missing guest is success (UP_ABSENT). Returns 0 or -1 (res->error). */
int provision_down(const struct down_request *req, struct up_result *res);

/* The outcome of a set of results: the most serious one (needs attention
 * > unreachable > failed > usage > interrupted > done). */
enum job_outcome provision_outcome(const struct up_result *r, size_t n);

/* ---- pure helpers (exposed for tests) ------------------------------------------ */

struct cfg_change {
	char *key;
	char *old_value;  /* NULL: not set before */
	char *new_value;
};

/* Differences between the desired parameters and a guest's current
 * config, key by key: property strings are compared as key sets (options
 * PVE adds, such as a disk's size or a NIC's MAC, are ignored unless the
 * desired value names them); "STORAGE:SIZE" / "STORAGE:cloudinit" disk
 * allocations count as equal when the disk exists; booleans and sshkeys
 * are normalised; create-only keys are skipped. A desired NIC without a
 * MAC gets the current one, so changing the model keeps the MAC. */
int provision_config_diff(enum guest_type type, json_object *current,
			  const struct tmpl_kvlist *desired,
			  struct cfg_change **changes, size_t *n, char **err);
void cfg_changes_free(struct cfg_change *c, size_t n);

/* A qemu netN value with the MAC of current kept when desired names none
 * ("virtio,bridge=vmbr0" + "e1000=AA:..,bridge=vmbr0" ->
 * "virtio=AA:..,bridge=vmbr0"). malloc'd; NULL on out of memory. */
char *provision_keep_mac(const char *desired, const char *current);

/* Translate container parameters between LXC and OpenVZ (to is
 * GUEST_LXC or GUEST_OPENVZ): rootfs <-> disk, net0 <-> netif/ip_address,
 * cores <-> cpus; keys without an equivalent are dropped with a warning
 * when harmless (ssh-public-keys, unprivileged, features, ostype) and are
 * an error otherwise. */
int provision_ct_translate(enum guest_type to, const struct tmpl_kvlist *in,
			   struct tmpl_kvlist *out, char **err);

#endif
