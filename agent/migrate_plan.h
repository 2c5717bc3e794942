/* migrate_plan.h - the migration planner (pvagent(1)
 * migrate and drain): from what PVE said about a guest and its target (the
 * qemu precondition of GET .../migrate, the target node's status and
 * storages, the guest's config) decide whether the migration can run, how
 * (online, offline, restart; through HA), with which PVE parameters, and
 * otherwise why not, in words that say how to fix it. Pure: no I/O. */
#ifndef PVAGENT_MIGRATE_PLAN_H
#define PVAGENT_MIGRATE_PLAN_H

#include "guest.h"
#include "pve.h"
#include "wf_params.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

enum mig_method {
	MIG_NONE = 0,   /* already on the target: nothing to do */
	MIG_ONLINE,     /* qemu live migration; OpenVZ online migration */
	MIG_OFFLINE,    /* stopped guest */
	MIG_RESTART,    /* running LXC container: stop, move, start */
};
const char *mig_method_name(enum mig_method m);

/* What is known; every member borrowed. */
struct mig_facts {
	enum guest_type type;
	int vmid;
	const char *source;        /* the node the guest is on */
	const char *target;
	bool running;
	bool ha_managed;
	uint64_t memory;           /* bytes the guest uses when running */
	json_object *config;       /* the guest's config (GET .../config) */
	json_object *precondition; /* GET .../migrate: qemu's, LXC's on PVE 9;
				      NULL otherwise */
	/* PVE 9, an HA guest: the HA stack's armed-state and resource mode
	 * (GET /cluster/ha/status/current, its fencing entry); NULL: not
	 * known, or before 9 */
	const char *ha_armed_state, *ha_resource_mode;
	/* PVE 9, an HA guest: GET /cluster/ha/status/current (its lrm entries
	 * say a node in maintenance), /cluster/ha/rules (node affinity) and
	 * /cluster/ha/resources (failback, default 1); NULL: not known */
	json_object *ha_status, *ha_rules, *ha_resources;
	/* drain: the source is being emptied (a rule's failback that pulls
	 * the guest back to it refuses, where migrate only notes it) */
	bool source_leaving;
	/* the volumes snapshots hold, {"VOLID": ["SNAP", ...]} (each
	 * snapshot's GET .../snapshot/NAME/config; qemu and lxc); NULL when
	 * none */
	json_object *snapshot_refs;
	/* with snapshot_refs: the storages' configuration (GET /storage), for
	 * PVE 9's snapshot-as-volume-chain; NULL when not read */
	json_object *storage_config;
	/* PVE versions of the guest's node and of the target (GET
	 * /nodes/N/version); NULL: not known */
	const struct pve_version *source_version, *target_version;
	/* a running VM's machine type (status/current "running-machine",
	 * "pc-i440fx-10.1+pve0"), and the machine types the target runs (GET
	 * /nodes/T/capabilities/qemu/machines, an array of {id, type,
	 * version}); NULL: not known (then a live migration goes by the
	 * versions) */
	const char *running_machine;
	json_object *target_machines;
	/* the target node */
	bool target_known;         /* a member of the cluster */
	bool target_online;
	uint64_t target_mem_free;  /* maxmem - mem, bytes */
	json_object *target_storages; /* GET /nodes/T/storage (array), or NULL */
	/* the request */
	const char *storage_map;   /* --storage S or --storage-map S:D,...; NULL */
	bool no_storage_map;       /* the request cannot take one (drain): no
				      advice to give one */
	uint64_t memory_reserve;   /* [migrate] memory_reserve, bytes */
	unsigned restart_timeout;  /* lxc restart: shutdown timeout, s (0: 180) */
	bool no_live_local_disks;  /* [migrate] with_local_disks = no */
};

struct mig_plan {
	enum mig_method method;
	bool via_ha;               /* through the HA stack: follow its child task */
	bool with_local_disks;     /* qemu: local disks are copied */
	char *targetstorage;       /* PVE's targetstorage/target-storage, or NULL */
	uint64_t disk_bytes;       /* local disk bytes to copy */
	uint64_t memory;           /* bytes of memory to move (live) */
	char *refusal;             /* why it cannot run (malloc'd), or NULL */
	char *note;                /* what to know, it runs (malloc'd), or NULL */
};
void mig_plan_free(struct mig_plan *p);

/* Decide. Returns 0 with out filled (out->refusal set when PVE would
 * refuse, or the target cannot take the guest), -1 out of memory. */
int migrate_plan(const struct mig_facts *f, struct mig_plan *out);

/* Does target run an older PVE release (major.minor; a point release
 * does not count) than source? False when either is unknown. A live
 * migration to such a node is refused when the target's machine types
 * cannot be read (with them, qemu-server's own check decides: the
 * target's QEMU must run the VM's machine type); drain chooses it last. */
bool migrate_version_older(const struct pve_version *target,
			   const struct pve_version *source);

/* The POST parameters of the migration request (qemu: target, online,
 * with-local-disks, targetstorage, bwlimit; lxc: target, restart,
 * timeout, target-storage, bwlimit; OpenVZ: target, online). bwlimit_kib
 * in KiB/s as PVE takes it (0: none). */
int migrate_plan_params(const struct mig_plan *p, const struct mig_facts *f,
			unsigned bwlimit_kib, struct pve_params *out);

/* The storage a source storage maps to under map ("DST", or
 * "SRC:DST,SRC2:DST2"; a source not named keeps its storage); malloc'd. */
char *migrate_map_storage(const char *map, const char *src);
/* (Is map a valid storage map: migrate_map_valid, wf_params.h, the
 * param's syntax, which pvagentd links.) */

/* Estimated seconds for a migration: memory at mem_bps (live), disks at
 * disk_bps, plus fixed overhead. Speeds <= 0 use defaults (100 MiB/s
 * memory, 200 MiB/s disks). */
double migrate_estimate_s(enum mig_method m, uint64_t memory, uint64_t disk_bytes,
			  double mem_bps, double disk_bps);

#endif
