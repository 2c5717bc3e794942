/* migrate_facts.h - what `migrate` and `drain` read from PVE to plan a
 * guest's migration (migrate_plan.h), the same way for both: the guest's
 * status and config, its migrate precondition (qemu; LXC on PVE 9), the
 * local volumes its snapshots hold, and the PVE version of its node. */
#ifndef PVAGENT_MIGRATE_FACTS_H
#define PVAGENT_MIGRATE_FACTS_H

#include "guest.h"
#include "migrate_plan.h"
#include "pve.h"

/* What the facts borrow. */
struct mig_read {
	json_object *status, *config, *pre, *snaps, *ha_status, *storages;
};
void mig_read_free(struct mig_read *r);

/* Read guest g's facts (the precondition for target, or for every node
 * when target is NULL) into f (type, vmid, source, running, memory,
 * ha_managed, config, precondition, snapshot_refs, source_version, and
 * for an HA guest on PVE 9 the HA stack's armed state),
 * keeping what f borrows in r. The target's facts are the caller's
 * (mig_read_target). */
int mig_read_guest(struct pve *c, const struct guest_ref *g, const char *target,
		   struct mig_read *r, struct mig_facts *f, struct pve_error *err);

/* The PVE version of node (pve_node_version()), or NULL without error on
 * a PVE before 4, which has no per-node version. */
int mig_node_version(struct pve *c, const char *node, const struct pve_version **out,
		     struct pve_error *err);

#endif
