/* migrate_facts.h - what `migrate` and `drain` read from PVE to plan a
 * guest's migration (migrate_plan.h), the same way for both: the guest's
 * status and config, its migrate precondition (qemu; LXC on PVE 9), the
 * local volumes its snapshots hold, and the target's storages and machine
 * types; and what a run reads of the cluster once (struct mig_cluster:
 * node versions, machine types, HA status), shared by every guest of a
 * drain. */
#ifndef PVAGENT_MIGRATE_FACTS_H
#define PVAGENT_MIGRATE_FACTS_H

#include "guest.h"
#include "migrate_plan.h"
#include "pve.h"

/* ---- what a run reads of the cluster once ------------------------------------------ */

/* One run's (a migrate command's, a drain's with all its migrations)
 * cluster facts, each read on first use with the client given and kept
 * for the run: a node's PVE version, a node's QEMU machine types, the HA
 * status, and the node list (GET /nodes) when a command keeps the one it
 * read (a drain's migrations read it fresh: memory changes as they go). Safe to share between threads (a drain's workers);
 * what it hands out is borrowed until mig_cluster_free(). */
struct mig_cluster;
struct mig_cluster *mig_cluster_new(void);
void mig_cluster_free(struct mig_cluster *mc);

/* Keep the node list a command read (GET /nodes; the reference is
 * taken), for its migration's target; and the one kept, or NULL. */
void mig_cluster_keep_nodes(struct mig_cluster *mc, json_object *nodes);
json_object *mig_cluster_nodes_known(struct mig_cluster *mc);
/* The PVE version of node (GET /nodes/N/version), or NULL without error
 * on a PVE before 4, which has no per-node version (GET /version tells;
 * pve4: the caller knows it is 4 or later, e.g. for a container, and
 * that read is left out). */
int mig_cluster_version(struct mig_cluster *mc, struct pve *c, const char *node, bool pve4,
			const struct pve_version **out, struct pve_error *err);
/* The QEMU machine types node can run (GET
 * /nodes/N/capabilities/qemu/machines: its entries' "id"), or NULL
 * without error when they cannot be read (no permission, a PVE without
 * the endpoint): the caller falls back to the versions. */
int mig_cluster_machines(struct mig_cluster *mc, struct pve *c, const char *node,
			 json_object **out, struct pve_error *err);
/* PVE 9: GET /cluster/ha/status/current, /cluster/ha/rules and
 * /cluster/ha/resources, each NULL without error when not readable
 * (Sys.Audit on /). */
int mig_cluster_ha_status(struct mig_cluster *mc, struct pve *c, json_object **out,
			  struct pve_error *err);
int mig_cluster_ha_rules(struct mig_cluster *mc, struct pve *c, json_object **out,
			 struct pve_error *err);
int mig_cluster_ha_resources(struct mig_cluster *mc, struct pve *c, json_object **out,
			     struct pve_error *err);

/* ---- a guest's facts ------------------------------------------------------------- */

/* What the facts borrow. */
struct mig_read {
	json_object *status, *config, *pre, *snaps, *storages;
};
void mig_read_free(struct mig_read *r);

/* Read guest g's facts (the precondition for target, or for every node
 * when target is NULL) into f (type, vmid, source, running, memory,
 * ha_managed, config, precondition, snapshot_refs, running_machine, and
 * where they matter source_version and for an HA guest on PVE 9 the HA
 * stack's state, its rules and resources), keeping what f borrows in r; the cluster's facts
 * from mc. The target's facts are mig_read_target's. */
int mig_read_guest(struct pve *c, struct mig_cluster *mc, const struct guest_ref *g,
		   const char *target, struct mig_read *r, struct mig_facts *f,
		   struct pve_error *err);

/* The facts of f->target, for a guest whose facts f holds: known, online
 * and free memory (mc's node list, else GET /nodes), its storages into
 * *storages (the caller's to put), and for a live migration of a VM the
 * machine types it runs (else, when those cannot be read, its version). */
int mig_read_target(struct pve *c, struct mig_cluster *mc, struct mig_facts *f,
		    json_object **storages, struct pve_error *err);


#endif
