/* bootfacts.h - the boot model's verdict written into a guest's root
 * directory, which is what the test guests (tests/support/guestenv, the
 * stand-ins of tests/guests/bin, tests/guests/guestd) read to behave like
 * the booted guest.
 *
 * ROOT/.pvagent-facts/boot, replaced atomically (temp file and rename in
 * that directory) whenever the guest starts, stops or its config changes
 * live; lines "KEY VALUE...", in this order:
 *   state up|stopped|mountroot|initramfs|no-network|single-user
 *   reachable yes|no
 *   boot-id N            changes on every start (a stop and start the
 *                        reader did not see still shows as a new N)
 *   disk-bus ide|sata|scsi|virtio-blk|virtio-scsi   bus of the boot disk
 *   nic-model MODEL      model of the first NIC ("e1000", "virtio")
 *   disk NAME            one per disk device the kernel sees ("vtbd0",
 *                        "ada0", "ad0", "sda", "vda"); no CD-ROMs
 *   nic NAME             the NIC name the guest sees ("em0", "ens18")
 *   mac MAC              its MAC address, lower case
 *   address A            the guest's address, when it is up with network
 *   mount DEV DIR FSTYPE one per mounted file system, DEV as the guest
 *                        reports it (FreeBSD: the fstab spec; Linux: the
 *                        kernel device a UUID= resolves to)
 *   swap DEV             one per active swap: the kernel device (or file)
 *   reason TEXT          why it is not up (only then)
 * A stopped guest's file is exactly "state stopped" and "reachable no".
 * A key may be absent when it does not apply (no NIC, no disk).
 *
 * For a Linux guest that is up, also ROOT/proc/mounts, ROOT/proc/swaps
 * and ROOT/proc/partitions in the kernel's formats; they are left as they
 * were while the guest is not up. */
#ifndef PVESIM_BOOTFACTS_H
#define PVESIM_BOOTFACTS_H

#include "bootmodel.h"

/* The texts (malloc'd, NULL when out of memory). address may be NULL. */
char *bootfacts_text(const struct boot_result *r, const char *address, unsigned boot_id);
char *bootfacts_proc_mounts(const struct boot_result *r);
char *bootfacts_proc_swaps(const struct boot_result *r);
char *bootfacts_proc_partitions(const struct boot_result *r);

/* Write the boot file (and the /proc files of a Linux guest that is up)
 * under root, creating the directories. Returns 0, or -1 with *err
 * (malloc'd) naming the file and the error. */
int bootfacts_write(const char *root, const struct boot_result *r, const char *address,
		    unsigned boot_id, char **err);

#endif
