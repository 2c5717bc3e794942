/* convert_plan.h - the PVE side of a virtio conversion, pure: from the
 * saved config (GET .../config) to the change that moves its emulated disks
 * and NICs to virtio, what the config alone decides before any SSH, and
 * the keys a rollback puts back. Config in, plan out; no I/O (the workflow
 * that applies it: wf_virtio.h). */
#ifndef PVAGENT_CONVERT_PLAN_H
#define PVAGENT_CONVERT_PLAN_H

#include <json-c/json.h>
#include <stdbool.h>

#include "osprof.h"
#include "pve.h"

/* The PVE side of a conversion, computed from the saved config. */
struct convert_target {
	char *delete_keys;       /* "ide0,ide1": sent first, without force */
	struct pve_params set;   /* virtio0=..., net0=..., boot/bootdisk, scsihw */
	char **lines;            /* "ide0 -> virtio0: local-lvm:vm-1-disk-0,size=16G" */
	size_t n_lines;
	unsigned ndisks, nnics;  /* IDE (or SATA) disks and e1000 NICs moved */
	bool sata;               /* the disks moved are on SATA, not IDE */
	bool scsi_ctl;           /* the disks stay on SCSI, their emulated
				    controller (scsihw) becomes virtio-scsi */
	const char *nic_model;   /* the NICs' model moved ("e1000", "rtl8139",
				    ...; static), or NULL when none moves */
	char *boot_key;          /* the boot disk's new key ("virtio0"), or NULL */
	unsigned boot_index;     /* the boot disk's index among the moved ones */
};
void convert_target_free(struct convert_target *t);

/* What the config alone decides, before any address or SSH (the config
 * as GET .../config answers it, pending_keys from guest_pending, may be
 * NULL): 1 nothing to convert (no IDE or SATA disk, none on an emulated
 * SCSI controller, no e1000, e1000e, rtl8139 or vmxnet3 NIC, nothing else
 * emulated; CD-ROMs and cloud-init drives are no disks), for a template
 * or a Windows guest too; 0 there is something to convert; -1 refused,
 * *why says the deciding reason (malloc'd), the first of: a template
 * (base volumes), a Windows ostype (win*, wxp, w2k*: its viostor and
 * NetKVM drivers are not pvagent's to install), a pending change of a
 * disk, a NIC, boot, bootdisk or scsihw (the plan would move slots PVE is
 * about to change), NICs that stay emulated (other models: named), disks
 * on buses whose conversion would rename them (two emulated buses, or
 * IDE/SATA beside virtio; an emulated SCSI controller beside virtio-blk
 * converts: only scsihw changes). */
int convert_config_check(json_object *config, int vmid, const char *pending_keys, char **why);
/* Fill t for bus (VBUS_VIRTIO_BLK or VBUS_VIRTIO_SCSI) on PVE pve_major:
 * the disks of one emulated bus, IDE or SATA (AHCI), move (a disk's cyls,
 * heads, secs and trans are dropped on 9, with a line saying so). ndisks
 * and nnics are 0 when there is nothing to move. -1 with *err (malloc'd)
 * for a config this cannot convert (disks on IDE and SATA, virtio or scsi
 * disks beside them, unparsable values). */
int convert_target_make(json_object *saved, enum vbus bus, int pve_major,
			struct convert_target *t, char **err);

/* Does config current show the change t (set values, deleted keys)? */
bool convert_target_applied(const struct convert_target *t, json_object *current);

/* The rollback: keys to delete from current (those the target added that
 * saved lacks; never unusedN) and the saved values that differ. */
int convert_restore_plan(json_object *saved, json_object *current, char **delete_keys,
			 struct pve_params *set);

#endif
