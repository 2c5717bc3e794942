/* inventory.h - what is on the cluster, for `pvagent nodes` and
 * `pvagent list`: nodes with CPU, memory and status; guests with VMID,
 * name, node, type, status, memory and tags from one listing, and for
 * `list --long` the disk bus and NIC model read from each guest's config,
 * concurrently. Results are JSON arrays of flat objects, the same for
 * the text tables and for --json. */
#ifndef PVAGENT_INVENTORY_H
#define PVAGENT_INVENTORY_H

#include "pve.h"

#include <json-c/json.h>

/* [{"node","status","cpu" (0..1),"maxcpu","mem","maxmem","uptime"}],
 * sorted by node name. */
int inventory_nodes(struct pve *c, json_object **out, struct pve_error *err);

/* [{"vmid","name","node","type","status","template","lock","tags",
 * "maxmem"}] from GET /cluster/resources alone (two requests with node),
 * sorted by VMID; only guests on node when node is not NULL (an unknown
 * node is PVE_ERR_NOT_FOUND). */
int inventory_guests(struct pve *c, const char *node, json_object **out,
		     struct pve_error *err);

/* Add "disk_bus" and "nic_model" to each guest of guests (as
 * inventory_guests makes them) from its config, up to parallel reads at
 * once, each thread with a client of its own made from po (NULL: one at a
 * time on c). A guest gone meanwhile gets nulls. */
int inventory_guests_hw(struct pve *c, const struct pve_opts *po, unsigned parallel,
			json_object *guests, struct pve_error *err);

#endif
