/* bootmodel.h - the guest boot model: from a qemu guest's PVE config (boot
 * disk bus, scsihw, NIC model), its fixture name ("freebsd-9.0",
 * "ubuntu-24.04") and optionally its root directory, decide whether the
 * guest boots, which device names it sees, which file systems and swap it
 * mounts (its fstab, labels resolved through the facts the fixture
 * recorded in ROOT/.pvagent-facts/facts: "gpart show -l", "dumpfs",
 * "blkid"), and whether it comes up with network (so its SSH would be
 * reachable). Pure: reads files, no state. bootfacts.h writes the result
 * into the guest root. */
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
	BOOT_SINGLE_USER, /* root mounted, another fstab file system not found:
			   * FreeBSD single-user mode, Linux emergency mode */
};

struct boot_mount {
	char *dev;    /* as the guest reports it: FreeBSD the fstab spec
		       * ("/dev/ufsid/4f13ff5d2bf8a1c6"), Linux the resolved
		       * kernel device ("/dev/vda1" for UUID=...) */
	char *dir;    /* mount point */
	char *fstype; /* "ufs", "ext4", "zfs", "proc" */
};

struct boot_swap {
	char *dev;    /* resolved kernel device ("/dev/vtbd0p3"), or the path
		       * of a swap file */
	bool file;
	unsigned long long kib;
};

/* A Linux block device as /proc/partitions lists it. */
struct boot_blockdev {
	char *name;   /* "vda", "vda1" */
	unsigned major, minor;
	unsigned long long kib;
};

struct boot_result {
	enum boot_state state;
	bool reachable;
	char **disks; /* device names the guest sees: "vtbd0", "sda" */
	size_t ndisks;
	char *nic;    /* "vtnet0", "em0", "eth0", "ens18"; NULL if none */
	char *reason; /* why not up; NULL when up */
	bool linux_guest;       /* a Linux fixture (has /proc) */
	const char *disk_bus;   /* bus of the boot disk: "ide", "sata", "scsi",
				 * "virtio-blk", "virtio-scsi"; NULL if none
				 * (static string) */
	char *nic_model;        /* model of the first NIC: "e1000", "virtio" */
	char *mac;              /* its MAC address, lower case */
	/* What the booted guest mounted (states up and no-network; empty
	 * otherwise): the root first, then fstab order; noauto entries and
	 * swap entries that do not resolve are left out. */
	struct boot_mount *mounts;
	size_t nmounts;
	struct boot_swap *swaps;
	size_t nswaps;
	struct boot_blockdev *blockdevs; /* Linux: disks and partitions */
	size_t nblockdevs;
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
/* {"state","reachable","disk_devices","nic","reason","disk_bus","nic_model",
 * "mac","mounts":[{"dev","dir","fstype"}],"swaps":[DEV]}; new reference. */
json_object *boot_result_json(const struct boot_result *r);

#endif
