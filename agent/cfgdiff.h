/* cfgdiff.h - the pure planner of `up`: what to change in a guest's
 * config to make it the template's, and container parameters translated
 * between LXC and OpenVZ. Used by the up workflow (wf_up.c); no PVE
 * calls, no jobs. */
#ifndef PVAGENT_CFGDIFF_H
#define PVAGENT_CFGDIFF_H

#include "guest.h"
#include "tmpl.h"

#include <json-c/json.h>
#include <stddef.h>

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
int cfgdiff(enum guest_type type, json_object *current,
			  const struct tmpl_kvlist *desired,
			  struct cfg_change **changes, size_t *n, char **err);
void cfgdiff_free(struct cfg_change *c, size_t n);

/* A qemu netN value with the MAC of current kept when desired names none
 * ("virtio,bridge=vmbr0" + "e1000=AA:..,bridge=vmbr0" ->
 * "virtio=AA:..,bridge=vmbr0"). malloc'd; NULL on out of memory. */
char *cfgdiff_keep_mac(const char *desired, const char *current);

/* Translate container parameters between LXC and OpenVZ (to is
 * GUEST_LXC or GUEST_OPENVZ): rootfs <-> disk, net0 <-> netif/ip_address,
 * cores <-> cpus; keys without an equivalent are dropped with a warning
 * when harmless (ssh-public-keys, unprivileged, features, ostype) and are
 * an error otherwise. */
int cfgdiff_ct_translate(enum guest_type to, const struct tmpl_kvlist *in,
			   struct tmpl_kvlist *out, char **err);

#endif
