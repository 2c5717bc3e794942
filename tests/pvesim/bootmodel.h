/* bootmodel.h - the guest boot model: from a qemu guest's PVE config (boot
 * disk bus, scsihw, NIC model), its fixture name ("freebsd-9.0",
 * "ubuntu-24.04") and optionally its root directory, decide whether the
 * guest boots, which device names it sees, and whether it comes up with
 * network (so its SSH would be reachable). Pure: reads files, no state. */
#ifndef PVESIM_BOOTMODEL_H
#define PVESIM_BOOTMODEL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

enum boot_state {
	BOOT_STOPPED = 0,
	BOOT_UP,
	BOOT_MOUNTROOT,  /* FreeBSD stuck at mountroot> */
	BOOT_INITRAMFS,  /* Linux dropped to the initramfs shell */
	BOOT_NO_NETWORK, /* booted, NIC not configured */
};

struct boot_result {
	enum boot_state state;
	bool reachable;
	char **disks; /* device names the guest sees: "vtbd0", "sda" */
	size_t ndisks;
	char *nic;    /* "vtnet0", "em0", "eth0", "ens18"; NULL if none */
	char *reason; /* why not up; NULL when up */
};

/* Evaluate a boot. fixture: "freebsd-9.0", "freebsd-14", "ubuntu-9.04",
 * "ubuntu-24.04" (family-version); root: guest root directory or NULL
 * ("prepared for anything"); config: the PVE config object. Fills *out
 * (caller zeroes it first; clear with boot_result_clear). Returns 0, or -1
 * on allocation failure. */
int bootmodel_eval(const char *fixture, const char *root, json_object *config,
		   struct boot_result *out);
void boot_result_clear(struct boot_result *r);
const char *boot_state_name(enum boot_state s);
/* {"state","reachable","disk_devices","nic","reason"}; new reference. */
json_object *boot_result_json(const struct boot_result *r);

#endif
