/* cluster.h - the simulator's cluster model (internal to tests/pvesim):
 * nodes, storages, volumes, guests, credentials, HA resources and tasks,
 * plus the helpers that scenario.c, tasks.c and the routes_*.c files share
 * (responses, privilege checks, drive strings, volumes, sizes). */
#ifndef PVESIM_CLUSTER_H
#define PVESIM_CLUSTER_H

#include "simapi.h"
#include "bootmodel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GiB (1024ULL * 1024 * 1024)
#define MiB (1024ULL * 1024)

/* A growable array of pointers. */
struct ptrvec {
	void **v;
	size_t n, cap;
};
int ptrvec_push(struct ptrvec *pv, void *p);
void ptrvec_remove(struct ptrvec *pv, size_t i);
void ptrvec_free(struct ptrvec *pv);

struct sim_node {
	char *name;
	char *ip;
	int cpus;
	uint64_t memory; /* bytes */
	bool online;
	char *version;   /* its PVE version ("8.4"); NULL: the cluster's */
	bool ha_maintenance; /* in HA maintenance mode (node-maintenance enable) */
	/* its life over time (nodelife.h) */
	int votes;           /* corosync quorum_votes (1) */
	char *qemu;          /* installed QEMU when an upgrade named it; NULL: by version */
	char *kernel;        /* running kernel; NULL: its version's */
	char *kernel_next;   /* installed kernel the next boot runs, or NULL */
	double boot_time;    /* when it last came up; 0: with the cluster */
	double reboot_s;     /* seconds a reboot takes */
	double down_at, up_at; /* rebooting: offline since down_at until up_at (0: not) */
	double fence_at;     /* when the CRM fences it if it is still down (quorate) */
	bool ha_recovered;   /* its HA services recovered elsewhere in this outage */
	struct node_upgrade *upgrade; /* what dist-upgrade makes it, or NULL */
	json_object *pve8to9; /* {"exit", "lines"}: pve8to9's verdict; NULL: passes */
};
/* The PVE version node n runs ("8.4", "9.1.2"). */
const char *node_pve_version(const struct cluster *c, const struct sim_node *n);

struct sim_storage {
	char *id;
	char *type;    /* dir, lvmthin, lvm, nfs, cifs, rbd, zfspool, cephfs */
	char *content; /* "images,rootdir" */
	bool shared;
	json_object *nodes; /* array of node names */
	uint64_t size;      /* bytes, per node for local storages */
	bool volume_chain;  /* PVE 9 snapshot-as-volume-chain (dir, lvm): qcow2
			       snapshots as separate volumes */
};

struct sim_volume {
	char *volid;   /* "local-lvm:vm-100-disk-0" */
	char *storage; /* storage id */
	char *node;    /* node holding it; NULL on shared storage */
	char *content; /* images, rootdir, iso, vztmpl, backup */
	char *format;  /* raw, qcow2, subvol, iso, tgz */
	int vmid;      /* owner, 0 for none */
	uint64_t size; /* bytes */
	char *sums;    /* a downloaded file's digests, "md5=HEX;sha1=HEX;...",
			  or NULL (routes_storage.c) */
	char *path;    /* its real file (the scenario's "files"), removed with
			  it; NULL: none */
};

struct sim_guest {
	int vmid;
	char *type; /* qemu, lxc, openvz */
	char *node;
	bool running;
	json_object *config;    /* PVE config: key -> value (string or int) */
	json_object *pending;   /* key -> new value, for a running guest */
	json_object *pending_delete; /* array of keys */
	json_object *snapshots; /* name -> {config, snaptime, description} */
	json_object *cloudinit; /* [special:cloudinit] of a config file, or NULL */
	char *fixture, *address, *root;
	unsigned listen_port; /* with address: a TCP listener there (guestnet.h) */
	bool listen_any;      /* listen_port 0 in the scenario: a free port */
	double started_at;
	unsigned boots;  /* starts so far (the boot file's boot-id) */
	/* What /cluster/resources shows: the last status update (every
	 * STATUS_PERIOD s); until the first, no name and status "unknown". */
	double res_at;   /* time of that update; < 0: not in the list yet */
	bool res_seen;
	char *res_name;
	bool res_running;
	struct boot_result boot;
	bool booted; /* boot model evaluated for the current run */
	struct qemu_guest *qemu; /* a real QEMU process (qemu_guest.h), or NULL */
	char *machine;   /* the machine type it runs, set when it starts (NULL:
			    running since the scenario began: its node's) */
};

struct sim_cred {
	char *id;
	char *secret; /* the token's secret or the user's password */
	bool tfa;     /* a user with two-factor authentication */
};

struct guestnet;
struct node_upgrade;
struct sim_ceph;
struct qemu_guest;

struct cluster {
	char *scenario_path;
	char *version;  /* "8.4" */
	int major;
	char *cluster_name;
	struct ptrvec nodes;    /* struct sim_node * */
	struct ptrvec storages; /* struct sim_storage * */
	struct ptrvec volumes;  /* struct sim_volume * */
	struct ptrvec guests;   /* struct sim_guest * */
	struct ptrvec tokens;   /* struct sim_cred * */
	struct ptrvec users;    /* struct sim_cred * */
	struct acl *acl;        /* roles and ACL entries of tokens and users */
	struct ptrvec tasks;    /* struct sim_task * */
	json_object *ha;        /* array of {sid, state, group, ...} */
	json_object *ha_rules;  /* PVE 9 /etc/pve/ha/rules.cfg: array of {rule,
				   type, resources, nodes, affinity, strict,
				   disable} */
	char *ha_disarm;        /* PVE 9: the HA stack disarmed, resource mode
				   "freeze" or "ignore"; NULL: armed */
	json_object *ha_ss;     /* the CRM's service status (ha_crm.c):
				   {sid: {state, target, maintenance_node}} */
	double ha_next_round;   /* the CRM's next round (sim time; 0: none yet) */
	json_object *faults;    /* scenario faults (array) or NULL */
	json_object *appliances; /* aplinfo's catalogue (array) or NULL */
	json_object *sdn_vnets;  /* the scenario's SDN VNet names (array) or NULL */
	json_object *datacenter; /* datacenter.cfg's user-tag-access and
				    registered-tags as written there
				    (cluster_options.c), or NULL */
	char *files_dir;        /* the scenario's "files": where download-url
				   keeps what it downloads as real files (a
				   disk imported from one runs as QEMU, the
				   lab); NULL: downloads are kept in memory
				   only as sizes and digests */
	unsigned next_pid;
	double boot_time;       /* simulated time the cluster came up */
	struct guestnet *net;   /* the guests' listeners, or NULL */
	struct ptrvec spares;   /* struct sim_spare * (--spare-guest) */
	struct sim_ceph *ceph;  /* the scenario's Ceph (nodelife.h), or NULL */
	bool ha_freeze_on_reboot; /* ha_shutdown_policy conditional or freeze: a
				     reboot freezes HA guests (never recovered) */
	json_object *node_commands; /* the nodes' shell commands so far (array) */
};

/* A spare guest root (simapi.h): taken by the VM whose vmid it holds. */
struct sim_spare {
	char *fixture, *addr, *root;
	int vmid; /* 0: free */
};

/* ---- lookups ------------------------------------------------------------ */
struct sim_node *cluster_node(const struct cluster *c, const char *name);
struct sim_storage *cluster_storage(const struct cluster *c, const char *id);
struct sim_guest *cluster_guest(const struct cluster *c, int vmid);
struct sim_volume *cluster_volume(const struct cluster *c, const char *volid,
				  const char *node);
bool storage_on_node(const struct sim_storage *s, const char *node);
bool storage_has_content(const struct sim_storage *s, const char *content);
/* Bytes used on a storage (on one node for local storages). */
uint64_t storage_used(const struct cluster *c, const struct sim_storage *s,
		      const char *node);
/* Bytes of memory the running guests of a node use. */
uint64_t node_mem_used(const struct cluster *c, const char *node);
uint64_t guest_memory(const struct sim_guest *g); /* bytes */
bool guest_is_template(const struct sim_guest *g);
const char *guest_name(const struct sim_guest *g);
/* The name PVE's status shows (node lists, status/current, cluster
 * resources): the config's, else "VM 100" / "CT100" (QemuServer::vmstatus,
 * LXC::vmstatus); written into buf when made up. */
const char *guest_status_name(const struct sim_guest *g, char *buf, size_t n);
const char *guest_lock(const struct sim_guest *g);
int guest_set_lock(struct sim_guest *g, const char *lock); /* NULL clears */
void guest_free(struct sim_guest *g);
int cluster_remove_guest(struct cluster *c, int vmid);
/* The first NET24.N (N from `from` to 254) no guest has; malloc'd, NULL
 * when all are taken or out of memory. */
char *cluster_unused_address(const struct cluster *c, const char *net24, int from);
/* Config key of the guest as a string (NULL if absent). */
const char *cfg_str(json_object *conf, const char *key);
/* Stable digest (hex SHA-1) of a config object; malloc'd. */
char *config_digest(json_object *conf);
/* Re-evaluate the boot model of a guest (after start or a live change);
 * a guest with a root gets the result written into it (bootfacts.h). */
void guest_eval_boot(struct sim_guest *g);

/* ---- drive strings and volumes ------------------------------------------ */
/* Drive keys: ide0-3, sata0-5, scsi0-30, virtio0-15, efidisk0, tpmstate0,
 * unusedN; lxc: rootfs, mpN. */
bool is_drive_key(const char *key);
bool is_unused_key(const char *key);
/* The volume part of a drive value ("local-lvm:vm-100-disk-0"); malloc'd. */
char *drive_volid(const char *value);
/* Value of option KEY in a property string ("size"), malloc'd or NULL. */
char *prop_get(const char *value, const char *key);
/* Copy of VALUE with option KEY set to NEWVAL (added if missing). */
char *prop_set(const char *value, const char *key, const char *newval);
bool drive_is_cdrom(const char *value);
bool drive_is_cloudinit(const char *value);
/* Parse "32G", "512M", "1T", "100K", "1024" (bytes) -> bytes; -1 on error. */
int parse_size(const char *s, uint64_t *out);
/* n units (a scenario's size_mib, ...) -> bytes; -1 when that is negative,
 * NaN, or 2^64 or more, which no uint64_t holds. */
int bytes_of(double n, uint64_t unit, uint64_t *out);
/* "32G" style (G when whole GiB, else M, else bytes); malloc'd. */
char *format_size(uint64_t bytes);
/* "1.5 GiB" style for task logs; malloc'd. */
char *human_bytes(uint64_t bytes);
/* Storage id of a volid ("local-lvm"), malloc'd. */
char *volid_storage(const char *volid);
/* Allocate a new volume on storage for vmid; returns the volid (borrowed
 * from the volume). base: "vm", "base" or "subvol". */
const char *volume_alloc(struct cluster *c, struct sim_storage *s,
			 const char *node, int vmid, uint64_t size,
			 const char *base, const char *content);
/* Add a volume record (scenario and clones). Returns it or NULL. */
struct sim_volume *volume_add(struct cluster *c, const char *volid,
			      const char *node, int vmid, uint64_t size,
			      const char *content);
void volume_remove(struct cluster *c, struct sim_volume *v);
void volume_free(struct sim_volume *v);
/* Can storage type do snapshots / linked clones for this format? */
bool storage_can_snapshot(const struct sim_storage *s, const char *format);

/* ---- responses ---------------------------------------------------------- */
void resp_error(struct sim_resp *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* 400 with errors {param: msg}; message "Parameter verification failed." */
void resp_param_error(struct sim_resp *r, const char *param, const char *fmt,
		      ...) __attribute__((format(printf, 3, 4)));
void resp_data(struct sim_resp *r, json_object *data);
/* False (and PVE's 403 "Permission check failed (PATH, PRIV)" set) unless
 * the identity holds priv on path ("/vms/100", "/storage/local-lvm"). */
bool priv_check(const struct sim_req *req, struct sim_resp *r,
		const char *path, const char *priv);
bool priv_has(const struct sim_req *req, const char *path, const char *priv);
/* RPCEnvironment::check_any: one of privs (NULL-terminated) on path, else
 * 403 "Permission check failed (PATH, A|B)". */
bool priv_check_any(const struct sim_req *req, struct sim_resp *r, const char *path,
		    const char *const *privs);
/* Parameter helpers: string form of a parameter, NULL if absent. */
const char *param_str(const struct sim_req *req, const char *name);
/* Boolean parameter (1/0/true/false, JSON bool); def if absent. */
bool param_bool(const struct sim_req *req, const char *name, bool def);
/* Integer parameter; def if absent or not a number. */
long long param_int(const struct sim_req *req, const char *name,
		    long long def);

/* Path matching: split "/nodes/pve1/qemu/100/status/start" into segments. */
struct path_parts {
	char **seg;
	size_t n;
};
int path_split(const char *path, struct path_parts *pp);
void path_parts_free(struct path_parts *pp);

/* Node in a request path: answers the error if the node is unknown or
 * offline and returns NULL. */
struct sim_node *route_node(struct cluster *c, const char *name,
			    struct sim_resp *r);

/* Guest of a request path: answers PVE's "Configuration file
 * 'nodes/pve1/qemu-server/999.conf' does not exist" and returns NULL when
 * vmid is no guest of that type on that node. */
struct sim_guest *route_guest(struct cluster *c, const char *node,
			      const char *vmid, const char *type,
			      struct sim_resp *r);
/* False (500 "VM is locked (clone)") when the guest holds a lock. */
bool guest_check_lock(const struct sim_req *req, const struct sim_guest *g,
		      struct sim_resp *r);
/* Start/stop effects: pending changes, running flag, boot model. */
void guest_started(struct cluster *c, struct sim_guest *g, double now);
void guest_stopped(struct cluster *c, struct sim_guest *g);
/* Free memory of a node for another guest (bytes; 1 GiB host reserve). */
uint64_t node_mem_free(const struct cluster *c, const struct sim_node *n);
/* "/vms/100" */
char *vm_path(int vmid);

/* Small JSON helpers for answers. */
void jadd_str(json_object *o, const char *key, const char *val); /* NULL: null */
void jadd_int(json_object *o, const char *key, long long val);
/* [{key: name}, ...] index answer for a directory-like route. */
json_object *subdir_index(const char *key, const char *const *names, size_t n);
/* priv_check and priv_has on "/vms/VMID". */
bool vm_priv_check(const struct sim_req *req, struct sim_resp *r, int vmid,
		   const char *priv);
bool vm_priv_has(const struct sim_req *req, int vmid, const char *priv);
/* A new, empty guest record (not yet in the cluster); NULL on failure. */
struct sim_guest *guest_new(int vmid, const char *type, const char *node);
/* Remove a guest and every volume it owns (not templates or ISOs). */
void cluster_destroy_guest(struct cluster *c, int vmid);
/* PVE's status daemon: every STATUS_PERIOD s (since the cluster came up)
 * /cluster/resources takes each guest's name and status anew. Called
 * around every request; force: take them now (scenario load). */
#define STATUS_PERIOD 10.0
void cluster_status_update(struct cluster *c, double now, bool force);

/* HA state of a guest ("started", ...) or NULL when HA does not manage it. */
const char *cluster_ha_state(const struct cluster *c, const struct sim_guest *g);
/* The same when PVE counts the guest HA-managed (pve-ha-manager
 * Config.pm $service_check_ha_state: not in state "ignored", nor while the
 * HA stack is disarmed in "ignore" mode), else NULL: its status says
 * managed 0, and start, stop and migrate go to it directly. */
const char *cluster_ha_managed(const struct cluster *c, const struct sim_guest *g);
/* The HA resource entry {sid, state, ...} of sid ("vm:100"), or NULL. */
json_object *cluster_ha_entry(const struct cluster *c, const char *sid);
/* POST .../migrate of an HA-managed guest: a "hamigrate" task running
 * `ha-manager migrate SID TARGET` (VMs and containers alike). The CRM
 * starts the migration 2 s later (ha_crm_migrate: a container by shutdown,
 * offline migration and start), with its positive resource-affinity
 * partners (PVE 9); a negative partner on the target fails the task with
 * ha-manager's text; a disarmed HA stack takes the request and never runs
 * it. */
void guest_ha_migrate_request(struct cluster *c, const struct sim_req *req,
			      struct sim_guest *g, const char *target, struct sim_resp *r);
/* power_ha_carry_out (power.h) for a VM: the real qmstart/qmstop/qmshutdown
 * task HA_DELAY after req->now. */
void qemu_ha_carry_out(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
		       const char *action);
/* The same for a container (vzstart/vzstop/vzshutdown). */
void ct_ha_carry_out(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
		     const char *action);

/* ---- route families (routes_*.c) ---------------------------------------- */
/* Each returns true when it recognised the route (and filled resp). */
bool routes_cluster(struct cluster *c, const struct sim_req *req,
		    struct path_parts *pp, struct sim_resp *r);
bool routes_qemu(struct cluster *c, const struct sim_req *req,
		 struct path_parts *pp, struct sim_resp *r);
/* .../snapshot[/NAME[/rollback|/config]] of a qemu guest or a container
 * (qemu-server and pve-container answer alike; containers' tasks are
 * vzsnapshot, vzrollback, vzdelsnapshot). */
void route_snapshots(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
		     struct path_parts *pp, struct sim_resp *r);
bool routes_ct(struct cluster *c, const struct sim_req *req,
	       struct path_parts *pp, struct sim_resp *r);
bool routes_tasks(struct cluster *c, const struct sim_req *req,
		  struct path_parts *pp, struct sim_resp *r);
bool routes_access(struct cluster *c, const struct sim_req *req,
		   struct path_parts *pp, struct sim_resp *r);
bool routes_nodeinfo(struct cluster *c, const struct sim_req *req,
		     struct path_parts *pp, struct sim_resp *r);
/* A qemu disk "STORAGE:0,import-from=SOURCE" (routes_storage.c): a new
 * disk of g on STORAGE copied from the volume SOURCE (content images or
 * import), as qemu-server's create and config do; *out the drive value to
 * store, *cost the seconds it takes, the copy's lines into log. 0, or -1
 * with r answered. */
struct sbuf;
int storage_import_disk(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
			const char *key, const char *value, char **out, double *cost,
			struct sbuf *log, struct sim_resp *r);
/* cluster_options.c: the datacenter options as GET /cluster/options
 * answers them (new object); the check of a guest's tags changing from
 * old to new (either may be NULL), as assert_tag_permissions: 0, or -1
 * with r answered (403); GET /cluster/options. */
json_object *cluster_options_json(const struct cluster *c);
int cluster_tag_check(const struct cluster *c, const struct sim_req *req, struct sim_resp *r,
		      int vmid, const char *old, const char *new);
bool routes_options(struct cluster *c, const struct sim_req *req, struct path_parts *pp,
		    struct sim_resp *r);
/* routes_storage.c: download-url, deleting a volume, aplinfo */
bool routes_storage(struct cluster *c, const struct sim_req *req,
		    struct path_parts *pp, struct sim_resp *r);

/* Start a migration task for one guest (used by migrate and migrateall);
 * returns the task or NULL with *resp filled on refusal. */
struct sim_task;
struct sim_task *qemu_start_migration(struct cluster *c,
				      const struct sim_req *req,
				      struct sim_guest *g, const char *target,
				      bool online, bool with_local,
				      const char *targetstorage, double start,
				      struct sim_resp *r);
/* Does the comma list hold item (an HA rule's resources)? */
bool ha_list_has(const char *list, const char *item);
/* PVE 9: HA's motion info for sid (pve-ha-manager's
 * get_resource_motion_info): the HA resources in positive affinity
 * (*dependent, an array of sids) and per node those in negative affinity
 * on it (*blocking, {node: [{sid, cause}]}). New references; both NULL
 * when sid is not HA-managed or the cluster is before 9. */
void ha_motion_info(const struct cluster *c, const char *sid, json_object **dependent,
		    json_object **blocking);
/* QEMU as node n has it, by its PVE version (9.1+: 10.1, 9.0: 10.0, 8.2+:
 * 9.2, 8.0/8.1: 8.1, 7.x: 7.2, ...): "10.1.2" (the version running-qemu
 * and qemu-server's messages give). */
const char *node_qemu_version(const struct cluster *c, const struct sim_node *n);
/* GET /nodes/{node}/capabilities/qemu/machines (qemu-server
 * API2/Qemu/Machine.pm): every i440fx and q35 type from 4.0 to the node's
 * QEMU, with the +pveN revisions its qemu-server knows, newest first; new
 * reference. */
json_object *node_machine_types(const struct cluster *c, const struct sim_node *n);
/* The machine type a running VM runs (status/current running-machine):
 * the one it started with, else what a start on its node gives (its
 * config's pinned "machine", else the newest of the node's QEMU:
 * "pc-i440fx-10.1+pve0", "pc-q35-9.2+pve1"). Into buf. */
const char *guest_running_machine(const struct cluster *c, const struct sim_guest *g,
				  char *buf, size_t n);
/* GET .../lxc/{vmid}/migrate answer (PVE 9); new reference. */
json_object *ct_migrate_precondition(struct cluster *c, const struct sim_guest *g);
/* GET .../qemu/{vmid}/migrate answer; new reference. */
json_object *qemu_migrate_precondition(struct cluster *c,
				       const struct sim_guest *g,
				       const char *target);
struct sim_task *ct_start_migration(struct cluster *c,
				    const struct sim_req *req,
				    struct sim_guest *g, const char *target,
				    bool restart, bool online, double start,
				    struct sim_resp *r);

#endif
