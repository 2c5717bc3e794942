/* scenario.h - loading and strict validation of a simulator scenario file
 * (JSON): nodes, storages and their volumes, credentials, guests, HA
 * resources, faults. Errors name the file and the JSON path at fault. */
#ifndef PVESIM_SCENARIO_H
#define PVESIM_SCENARIO_H

#include "cluster.h"

/* Fill c from the scenario file. Returns 0, or -1 with *err set (malloc'd,
 * "FILE: $.guests[2].node: unknown node 'pve9'"). */
int scenario_load(struct cluster *c, const char *path, char **err);

/* A deterministic MAC for a guest's NIC n ("BC:24:11:..."); malloc'd. */
char *scenario_mac(int vmid, int n);

#endif
