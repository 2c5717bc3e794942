/* guest.h - guest lifecycle on Proxmox VE behind one interface for qemu VMs,
 * LXC containers (PVE >= 4) and OpenVZ containers (PVE 2.x/3.x): finding
 * guests by name (names are unique cluster-wide), listing, VMID claim by
 * creating (PVE has no reservation), clone/create, config read and change
 * (with digest and lock waits), start/shutdown/stop/delete (task + wait),
 * disk resize, the guest's address, and the PVE version switch.
 *
 * Rules kept here (agent/README.md, "Architecture"):
 *  - A VMID is claimed by creating the guest: take /cluster/nextid (or the
 *    lowest free id of a configured range), create, and on any of PVE's
 *    three "already exists" messages take the next id (bounded). A VMID the
 *    user chose is never replaced.
 *  - A request that started a task is never sent again once a UPID came
 *    back (task.h). A create whose answer was lost and whose retry says
 *    "already exists" counts as done only if the existing guest carries our
 *    name (pve_call_opts.exists_is_ours).
 *  - Lost answers: a task-starting request whose answer never came (reset,
 *    timeout, 5xx or "got no worker upid" after sending) is not sent again
 *    blindly. First PVE is asked whether it took effect: a running task of
 *    that type for the guest (then that task is waited for), or the state
 *    the request leads to (running, stopped, gone, the disk's size, the
 *    snapshot). Only when neither shows is it sent again (bounded).
 *  - "VM is locked": wait until status/current has no lock (bounded, with
 *    progress), then send again. Locks are not checked before sending:
 *    PVE's answer is the check. (Only a guest that an unanswered request
 *    of ours may have created is waited for first: no task tells when it
 *    is done.)
 *
 * Every function taking a struct pve_error returns 0 on success and -1 on
 * failure (err filled) unless documented otherwise. A struct pve is used by
 * one thread at a time; these functions add no shared state except the
 * per-client PVE version cache, which is locked. */
#ifndef PVAGENT_GUEST_H
#define PVAGENT_GUEST_H

#include "guestname.h" /* guest names and VMID arguments */
#include "pve.h"
#include "task.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

enum guest_type { GUEST_QEMU = 0, GUEST_LXC, GUEST_OPENVZ };

/* "qemu", "lxc", "openvz" (the PVE path segment and resource type). */
const char *guest_type_name(enum guest_type t);
/* Inverse of guest_type_name(). Returns 0, or -1 for anything else. */
int guest_type_parse(const char *s, enum guest_type *out);

struct guest_ref {
	int vmid;
	char *node;      /* malloc'd */
	enum guest_type type;
	char *name;      /* malloc'd; NULL when the guest has none (yet) */
	char *status;    /* "running", "stopped", ... (malloc'd) or NULL */
	char *lock;      /* "clone", "create", "migrate", ... or NULL */
	bool template;   /* a template VM */
	char *tags;      /* PVE's tag list as /cluster/resources gives it
			    (';'-separated, read from the configs), or NULL */
};
/* Free the members and zero g. */
void guest_ref_clear(struct guest_ref *g);
/* Deep copy (dst is overwritten, not freed). */
int guest_ref_copy(struct guest_ref *dst, const struct guest_ref *src);

struct guest_list {
	struct guest_ref *v;
	size_t n;
};
void guest_list_free(struct guest_list *l);

/* ---- PVE version -------------------------------------------------------- */

/* PVE major version of the cluster (pve_version(): GET /version, once
 * per client). */
int guest_pve_major(struct pve *c, int *major, struct pve_error *err);
/* Container type for a major version: LXC from 4, OpenVZ before. */
enum guest_type guest_container_type(int major);

/* ---- finding ---------------------------------------------------------------- */

/* Every guest of the cluster (GET /cluster/resources?type=vm), sorted by
 * vmid; node NULL for all nodes. Templates included. That list takes names
 * and status from PVE's status daemon, about every 10 s: an entry made
 * since (no name, status "unknown") gets them from its node's own list
 * (GET /nodes/N/qemu or /lxc, read from the configs), one per node and
 * type, unless this client made it (its name is known; status stays
 * "unknown"); other entries' status and name can be that old. */
int guest_list(struct pve *c, const char *node, struct guest_list *out,
	       struct pve_error *err);

/* The guest with this VMID: 1 found, 0 none, -1 error. */
int guest_find_by_vmid(struct pve *c, int vmid, struct guest_ref *out,
		       struct pve_error *err);
/* The guest a command's argument or a job's subject names: a VMID when
 * all digits (guest_arg_is_vmid; its status read now), else a name,
 * compared case-insensitively as DNS names are, cluster-wide (its
 * status/current read now; renamed meanwhile: not found). 1 found, 0
 * none, -1 error; two or more guests with the name are an error
 * (PVE_ERR_API) naming every VMID and node. This is the one lookup:
 * unnamed guests (PVE shows "VM 100") and guests sharing a name are
 * reached by VMID wherever a guest is named. */
int guest_find(struct pve *c, const char *arg, struct guest_ref *out, struct pve_error *err);
/* The same from one listing alone (GET /cluster/resources), no
 * status/current: status, lock and name are the listing's (up to about
 * 10 s old; a guest renamed since is still found under its old name).
 * For a check that the guest exists, or where its status is read later
 * anyway (a migration's facts). 1 found, 0 none, -1 error, as guest_find. */
int guest_find_listed(struct pve *c, const char *arg, struct guest_ref *out,
		      struct pve_error *err);
/* What every command says when guest_find found nothing: err set to
 * PVE_ERR_NOT_FOUND "no guest named 'NAME'" or "no guest with VMID N".
 * Returns -1. */
int guest_not_found(const char *arg, struct pve_error *err);
/* The same look-ups in a listing already made with guest_list(), so that
 * one listing serves several (no request; out is a copy; -1 is a duplicate
 * name or out of memory). The listing is as old as it is: use a fresh one
 * where a change since matters. */
int guest_list_find_name(const struct guest_list *l, const char *name,
			 struct guest_ref *out, struct pve_error *err);
int guest_list_find_vmid(const struct guest_list *l, int vmid, struct guest_ref *out,
			 struct pve_error *err);
/* Re-read status, lock and name from .../status/current. PVE_ERR_NOT_FOUND
 * when the guest is gone. */
int guest_refresh(struct pve *c, struct guest_ref *g, struct pve_error *err);

/* ---- waiting ------------------------------------------------------------------ */

/* Progress of long steps: step names the step ("clone", "lock", "start",
 * "address", ...); percent is 0..100 or -1 when unknown; text is a short
 * human line (may be NULL). */
typedef void (*guest_progress_fn)(void *ctx, const char *step, double percent,
				  const char *text);

/* Hooks of the job engine (job.h) around task-starting requests. Every
 * task-starting call here (create, clone, start, shutdown, stop, resize,
 * snapshot, delete, async config) calls them when set. */
struct guest_task_hooks {
	/* Just before a task-starting request is sent (vmid: the guest's, or
	 * the candidate VMID of a create or clone). */
	void (*sending)(void *ctx, int vmid);
	/* PVE returned the task's UPID: called before any wait. */
	void (*started)(void *ctx, const char *upid);
	/* PVE answered without a task (a synchronous change): nothing of
	 * that request is still on its way. May be NULL. */
	void (*answered)(void *ctx);
	/* Resumed step: the UPID its earlier run recorded, handed over once
	 * (malloc'd), or NULL. The first task-starting call of the step waits
	 * for that task instead of sending its request again. */
	char *(*resume_upid)(void *ctx);
	/* Resumed step whose earlier request was sent but never answered:
	 * true once; the first task-starting call then looks at PVE before
	 * sending (see guest_task's lost answers). */
	bool (*resume_unknown)(void *ctx);
	/* When (unix seconds) the earlier run sent that request. */
	double (*resume_sent_at)(void *ctx);
	void *ctx;
};

struct guest_wait {
	double task_timeout_s;   /* per task; 0: 1800 */
	double lock_timeout_s;   /* waiting for a lock to clear; 0: 300 */
	double shutdown_timeout_s; /* clean shutdown before stop; 0: 120 */
	double address_timeout_s;  /* guest reports an address; 0: 300 */
	double poll_s;           /* lock/address poll interval; 0: 1 */
	const struct pve_clock *clock; /* NULL: real time */
	guest_progress_fn progress;    /* may be NULL */
	void *progress_ctx;
	const struct guest_task_hooks *hooks; /* may be NULL */
	bool attach;             /* waits are on tasks that may have run for a
				    while (re-attaching to a recorded UPID) */
};

/* Wait (bounded by lock_timeout_s) until the guest has no lock; progress
 * reports the lock and the time waited. PVE_ERR_LOCKED on timeout. */
int guest_wait_unlocked(struct pve *c, struct guest_ref *g,
			const struct guest_wait *w, struct pve_error *err);

/* An unanswered request sent at sent_at (unix time) may still take
 * effect until a request timeout after it: wait until then before looking
 * whether it did, or the look misses a request still on its way and a
 * second one is sent. The request travels in real time whatever clock the
 * waits run on (a test's simulated one), so the wait is in real time; it
 * ends at once when w's clock jumps ahead (a stop, job.h). */
void guest_settle(struct pve *c, const struct guest_wait *w, double sent_at);

/* Wait for a task (task.h) with the guest_wait timeouts; step names it in
 * progress. res may be NULL. */
int guest_wait_task(struct pve *c, const char *upid, const char *step,
		    const struct guest_wait *w, struct task_result *res,
		    struct pve_error *err);

/* ---- VMID claim, create, clone ------------------------------------------ */

/* Where new VMIDs come from. */
struct guest_vmid_policy {
	int vmid;          /* > 0: exactly this one (never replaced) */
	int range_min;     /* > 0 with range_max: lowest free id in range */
	int range_max;
	int max_claims;    /* attempts with distinct ids; 0: 32 */
};

/* The VMID a create would try first under pol (PVE's nextid, the lowest
 * free one of the range, or pol->vmid), claiming nothing: for plans. */
int guest_next_free_vmid(struct pve *c, const struct guest_vmid_policy *pol, int *vmid,
			 struct pve_error *err);

/* Builds the create parameters for one candidate VMID (the template may
 * use ${vmid}); vmid and node are added by guest_create. Return 0 or -1
 * with err filled. */
typedef int (*guest_params_fn)(void *ctx, int vmid, struct pve_params *out,
			       struct pve_error *err);

struct guest_create_req {
	enum guest_type type;
	const char *node;          /* where to create */
	const char *name;          /* guest name (qemu name, ct hostname) */
	struct guest_vmid_policy vmid;
	guest_params_fn params;    /* create parameters; NULL: name only */
	void *params_ctx;
};

/* Create a guest (POST /nodes/{node}/{type}), claiming a VMID, and wait
 * for the create task. On success out describes the new guest (unlocked).
 * When the task was waited on and ended OK, out is built from what is known
 * without another request: vmid, node, type, name, status "stopped" (NULL,
 * i.e. unknown, when the parameters asked for start), no lock. A guest
 * created by a request whose answer was lost is looked up instead, and
 * waited for until its create/clone lock clears.
 * *claims (may be NULL) receives the number of create requests issued.
 * Claim loop: candidate = nextid (never one that just answered "already
 * exists": then the one after it) or the lowest free id of the range; on
 * "already exists" the next candidate, after a small random pause to break
 * lockstep with concurrent claimers; an unanswered request is resolved by
 * looking: our name on that VMID = done, someone else's guest = next
 * candidate, nothing = send again (at most twice). A failed task is
 * reported, never re-issued. */
int guest_create(struct pve *c, const struct guest_create_req *req,
		 const struct guest_wait *w, struct guest_ref *out, int *claims,
		 struct pve_error *err);

struct guest_clone_req {
	const struct guest_ref *source; /* template VM (qemu) */
	const char *name;               /* new guest's name */
	const char *target;             /* node; NULL: the source's node */
	const char *storage;            /* full clone target storage or NULL */
	bool full;
	struct guest_vmid_policy vmid;
};

/* Clone a template VM (POST .../qemu/{vmid}/clone), claiming a VMID, and
 * wait for the clone task (progress with the clone percentage). out as for
 * guest_create (a clone is always stopped). source is used as given (its
 * vmid and node); its lock is waited for only when PVE answers that it is
 * locked. */
int guest_clone(struct pve *c, const struct guest_clone_req *req,
		const struct guest_wait *w, struct guest_ref *out, int *claims,
		struct pve_error *err);

/* Does the guest with this VMID exist and carry this name? Waits for a
 * "clone"/"create" lock without a name to clear first (the name appears
 * when the task finishes). Used for ambiguous creates. */
bool guest_vmid_is_named(struct pve *c, int vmid, const char *name,
			 const struct guest_wait *w);

/* ---- config -------------------------------------------------------------------- */

/* GET .../config (pending values applied, as PVE answers). *config is a
 * new reference; its "digest" member (if any) is the config digest. */
int guest_get_config(struct pve *c, const struct guest_ref *g,
		     json_object **config, struct pve_error *err);

/* Change the config: set (may be empty) and the keys of delete (comma
 * separated, may be NULL; qemu and lxc only). digest (may be NULL) makes
 * PVE refuse if the config changed meanwhile (also while we waited for a
 * lock: the caller then reads the config again). A locked guest is waited
 * for and the change sent again. PUT (sync); for qemu with async true POST,
 * waiting for the task when one came back. A PUT whose answer was lost (a
 * reset, a timeout, a 5xx that may come after the change) is not sent
 * again before the config was read and does not show it. */
int guest_set_config(struct pve *c, struct guest_ref *g,
		     const struct pve_params *set, const char *delete_keys,
		     const char *digest, bool async, const struct guest_wait *w,
		     struct pve_error *err);

/* Does config show the change: every key of set with its value (property
 * strings compared option by option, in any order; "digest" ignored) and
 * every key of delete_keys (comma separated, may be NULL) gone? */
bool guest_config_shows(json_object *config, const struct pve_params *set,
			const char *delete_keys);

/* Config keys changed on a running guest that PVE applies only at the
 * next restart (GET .../pending: entries with a pending value or delete),
 * comma separated in *keys (malloc'd), or NULL when there are none. qemu
 * and lxc; OpenVZ has none. */
int guest_pending(struct pve *c, const struct guest_ref *g, char **keys,
		  struct pve_error *err);

/* The disk of conf (disk is ignored for OpenVZ: "disk" in GB) against
 * size ("32G"): *cmp < 0 when it is smaller (a resize would grow it), 0
 * the same, > 0 larger. 0, or -1 (bad size, no such disk). */
int guest_disk_compare(json_object *conf, enum guest_type type, const char *disk,
		       const char *size, int *cmp, struct pve_error *err);

/* Grow disk (qemu "virtio0", lxc "rootfs") to size ("32G"); a disk
 * already that large or larger is left alone (returns 0, *changed false;
 * *larger true when it is larger than size: disks never shrink). OpenVZ:
 * sets "disk" in GB. changed and larger may be NULL. */
int guest_resize(struct pve *c, struct guest_ref *g, const char *disk,
		 const char *size, const struct guest_wait *w, bool *changed,
		 bool *larger, struct pve_error *err);

/* Take a snapshot named name (qemu: without RAM state; lxc) with a
 * description (may be NULL), waiting for the task. A snapshot of that name
 * that already exists counts as taken (*existed true; may be NULL). A
 * storage without snapshots makes the task fail with PVE's "snapshot
 * feature is not available" (PVE_ERR_TASK): callers say so and go on. */
int guest_snapshot(struct pve *c, struct guest_ref *g, const char *name,
		   const char *description, const struct guest_wait *w, bool *existed,
		   struct pve_error *err);

/* Delete the snapshot named name, waiting for the task; one that does not
 * exist counts as deleted (*absent true; may be NULL). */
int guest_delete_snapshot(struct pve *c, struct guest_ref *g, const char *name,
			  const struct guest_wait *w, bool *absent, struct pve_error *err);

/* ---- power and delete ---------------------------------------------------- */

/* Start; already running is success. Waits for the task; when it was the
 * guest's own start task (qmstart, vzstart) that ended well, g->status is
 * "running" without a read, else (HA's hastart ends when the request is
 * queued; an "already running" answer) status/current is read into g,
 * for HA until it shows running. A guest whose g->status is "stopped" is started
 * without reading its status first (the caller knows it: just created, or
 * just read); with any other g->status, or none, status/current is read
 * first and a running guest is left alone without a request. PVE's
 * "already running" (a synchronous answer, or a qemu start task failing
 * with it, confirmed by the status) counts as success, so a stale
 * "stopped" costs at most a refused or failed start request, never a wrong
 * result. */
int guest_start(struct pve *c, struct guest_ref *g, const struct guest_wait *w,
		struct pve_error *err);
/* Clean shutdown with shutdown_timeout_s; if it fails or times out, stop.
 * Already stopped is success. *forced (may be NULL) tells whether stop was
 * needed. */
int guest_shutdown(struct pve *c, struct guest_ref *g, const struct guest_wait *w,
		   bool *forced, struct pve_error *err);
/* Hard stop; already stopped is success. */
int guest_stop(struct pve *c, struct guest_ref *g, const struct guest_wait *w,
	       struct pve_error *err);
/* Delete a stopped guest (qemu/lxc: destroy-unreferenced-disks, and purge
 * from jobs/HA/ACLs when purge). A guest that does not exist counts as
 * deleted (*gone set false then, true when this call deleted it). */
int guest_delete(struct pve *c, struct guest_ref *g, bool purge,
		 const struct guest_wait *w, bool *deleted, struct pve_error *err);

/* ---- migration ------------------------------------------------------------ */

/* POST .../migrate with params (target, and what migrate_plan_params()
 * chose) and wait for the task; res (required) gets its figures (downtime,
 * duration, speed, VM-state bytes) from the log. An HA-managed guest
 * answers with the HA request's task ("hamigrate"), whose figures are
 * none: the caller follows the child task (guest_find_task). A lost answer
 * is resolved by looking: a running qmigrate/vzmigrate task for the guest,
 * or the guest on the target already. */
/* A task-starting request that is not about one guest (a node's storage:
 * download-url, deleting a volume): the hooks record it and its UPID, a
 * resumed step waits for the recorded task instead; the request is never
 * sent twice (an answer that may have been lost is an error with
 * err->ambiguous: the caller looks at PVE). A synchronous answer counts
 * as done. res may be NULL. */
int guest_node_task(struct pve *c, const char *method, const char *path,
		    const struct pve_params *params, const char *step, const struct guest_wait *w,
		    struct task_result *res, struct pve_error *err);
/* Convert a VM into a template (POST .../template; a lost answer is
 * resolved by reading its config). */
int guest_make_template(struct pve *c, struct guest_ref *g, const struct guest_wait *w,
			struct pve_error *err);
int guest_migrate(struct pve *c, struct guest_ref *g, const struct pve_params *params,
		  const struct guest_wait *w, struct task_result *res, struct pve_error *err);

/* Is the guest's config on node now (GET /nodes/NODE/TYPE/VMID/status/
 * current, not the cluster listing, which lags)? 1 yes (*status, if not
 * NULL, its status, malloc'd), 0 no, -1 error. */
int guest_on_node(struct pve *c, const struct guest_ref *g, const char *node, char **status,
		  struct pve_error *err);

/* ---- address ------------------------------------------------------------------ */

enum guest_addr_source {
	GUEST_ADDR_AGENT,     /* qemu guest agent, lxc/openvz interfaces */
	GUEST_ADDR_STATIC,    /* given by the caller (template [guest] ip) */
	GUEST_ADDR_CONFIG,    /* ip= of ipconfig0 / net0, ip_address */
};

/* The address of a running guest (IPv4 preferred; not 127.0.0.1, ::1 or
 * link-local). GUEST_ADDR_AGENT polls (until address_timeout_s) the QEMU
 * guest agent's network-get-interfaces or the container's interfaces; a VM
 * without agent configured fails at once (PVE_ERR_CONFIG); OpenVZ and PVE
 * versions without the interfaces route fall back to the config address.
 * GUEST_ADDR_STATIC returns static_ip without its /prefix. *addr is
 * malloc'd. */
int guest_address(struct pve *c, struct guest_ref *g, enum guest_addr_source src,
		  const char *static_ip, const struct guest_wait *w, char **addr,
		  struct pve_error *err);

/* The address in a config without asking the guest: ipconfig0 "ip=A/N",
 * lxc net0 "ip=A/N", openvz ip_address. NULL when there is none or it is
 * dhcp. Pure. malloc'd. */
char *guest_config_address(json_object *config, enum guest_type type);

/* First usable IPv4 address (then IPv6) in a QEMU guest agent
 * network-get-interfaces result array, or in an lxc interfaces array.
 * Pure; malloc'd or NULL. */
char *guest_pick_address(json_object *ifaces);

#endif
