/* inventory.h - what is on the cluster, for `pvagent nodes` and
 * `pvagent list`: nodes with CPU, memory and status; guests with VMID,
 * name, node, type, status and the disk bus and NIC model read from each
 * guest's config. Results are JSON arrays of flat objects, the same for
 * the text tables and for --json. */
#ifndef PVAGENT_INVENTORY_H
#define PVAGENT_INVENTORY_H

#include "pve.h"

#include <json-c/json.h>

/* [{"node","status","cpu" (0..1),"maxcpu","mem","maxmem","uptime"}],
 * sorted by node name. */
int inventory_nodes(struct pve *c, json_object **out, struct pve_error *err);

/* [{"vmid","name","node","type","status","template","lock","disk_bus",
 * "nic_model"}], sorted by VMID; only guests on node when node is not
 * NULL (an unknown node is PVE_ERR_NOT_FOUND). */
int inventory_guests(struct pve *c, const char *node, json_object **out,
		     struct pve_error *err);

#endif
