/* pvecfg.h - PVE guest configuration values: property strings
 * ("virtio=BC:24:11:00:00:01,bridge=vmbr0", "local-lvm:vm-100-disk-0,size=32G")
 * parsed into ordered key/value lists and printed back, and what a config
 * says about its disks and NICs (bus, model, MAC, cdrom). Pure functions. */
#ifndef PVAGENT_PVECFG_H
#define PVAGENT_PVECFG_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct propkv {
	char *key;   /* NULL for the leading value without "key=" */
	char *value;
};

struct propstr {
	struct propkv *v;
	size_t n;
};

/* Split a property string at commas into key=value pairs (a first element
 * without '=' gets key NULL). Returns 0, or -1 on out of memory or an
 * empty element ("a,,b"). */
int propstr_parse(const char *s, struct propstr *out);
void propstr_free(struct propstr *p);
/* Value of key, or NULL. key NULL finds the leading value. */
const char *propstr_get(const struct propstr *p, const char *key);
/* Set (replace or append) key; key NULL sets the leading value. */
int propstr_set(struct propstr *p, const char *key, const char *value);
/* Print back in the same order ("a,k=v"); malloc'd. */
char *propstr_format(const struct propstr *p);
/* Same key/value sets, in any order? (PVE reorders keys when it writes a
 * config back, so converge compares this way.) */
bool propstr_equal(const char *a, const char *b);
/* A config size ("32G", "512M", "1T", "100K", "8GiB", plain bytes) in
 * bytes. Returns 0, or -1 when s is not such a size. */
int pvecfg_parse_size(const char *s, double *out);

enum disk_bus { BUS_NONE = 0, BUS_IDE, BUS_SATA, BUS_SCSI, BUS_VIRTIO };

/* "ide0" -> BUS_IDE with *index 0; BUS_NONE for a non-disk key. */
enum disk_bus pvecfg_disk_key(const char *key, int *index);
const char *pvecfg_bus_name(enum disk_bus b);

/* One disk of a qemu config (cdroms included, flagged). */
struct pvecfg_disk {
	char *key;      /* "virtio0" */
	enum disk_bus bus;
	int index;
	char *volume;   /* "local-lvm:vm-100-disk-0", "none" */
	bool cdrom;
};

/* One NIC of a qemu config. */
struct pvecfg_nic {
	char *key;      /* "net0" */
	char *model;    /* "virtio", "e1000", ... */
	char *mac;      /* or NULL */
	char *bridge;   /* or NULL */
};

struct pvecfg_hw {
	struct pvecfg_disk *disks;
	size_t n_disks;
	struct pvecfg_nic *nics;
	size_t n_nics;
	char *scsihw;   /* or NULL */
	char *bootdisk; /* the legacy bootdisk key, or NULL */
};

/* Read disks and NICs from a qemu config object (GET .../config data),
 * sorted by key; keys whose value is JSON null are skipped. Returns 0, or
 * -1: out of memory, or errno EINVAL when config is not an object. */
int pvecfg_hw_read(json_object *config, struct pvecfg_hw *out);
void pvecfg_hw_free(struct pvecfg_hw *hw);
/* The disk the guest boots from, as qemu-server's device_bootorder gives
 * disks their bootindex: with "order=a;b" in boot, the first disk of the
 * order; else (legacy letters, "cdn" when boot is unset) the bootdisk key
 * when the letters hold 'c'. Where that names no disk, the first disk
 * that is not a cdrom (the firmware's pick); NULL when there is none. */
const struct pvecfg_disk *pvecfg_boot_disk(const struct pvecfg_hw *hw, const char *boot,
					   const char *bootdisk);
/* Summary for listings: the bus of the boot disk (pvecfg_boot_disk with
 * the config's bootdisk) such as "virtio", "scsi (virtio-scsi-single)", "ide";
 * "-" when there is none. malloc'd. */
char *pvecfg_hw_disk_summary(const struct pvecfg_hw *hw, const char *boot);
/* NIC models, comma-separated ("virtio", "e1000,virtio"); "-" for none. */
char *pvecfg_hw_nic_summary(const struct pvecfg_hw *hw);

#endif
