/* osprof.h - OS detection and per-OS virtio rules, all pure: detection
 * parses the captured output of commands (the SSH layer runs them); the
 * profile says what virtio needs on that OS and version (kernel module
 * package, loader.conf lines, initramfs modules, device and NIC names per
 * bus); a virtio plan turns a profile plus facts into the transform of
 * each guest file for a phase (see rewrite.h for phases and the fstab
 * policy).
 *
 * Facts: what the commands printed, keyed by the command line, e.g.
 *   "uname -sr"            -> "FreeBSD 9.0-RELEASE\n"
 *   "freebsd-version -k"   -> "14.1-RELEASE-p5\n" (absent before 10.0)
 *   "cat /etc/os-release"  -> os-release(5) text (Linux)
 *   "lsb_release -a"       -> lsb_release output (old Ubuntu)
 *   "gpart show -l"        -> GPT labels (FreeBSD)       -> label map
 *   "dumpfs /dev/ad0s1a | head -n 2" -> UFS id of ad0s1a -> /dev/ufsid/ID
 *   "blkid"                -> UUIDs (Linux)              -> label map
 *   "ip -o link"           -> MAC of each NIC (Linux)    -> netplan pinning
 * Garbage or "not found" output of a command is ignored, never trusted. */
#ifndef PVAGENT_OSPROF_H
#define PVAGENT_OSPROF_H

#include <stddef.h>

#include "rewrite.h"
#include "util.h"

/* ---- facts ----------------------------------------------------------------- */

struct os_fact {
	char *cmd;
	char *out;
};

struct os_facts {
	struct os_fact *v;
	size_t n;
};

/* Commands the SSH layer runs for detection (NULL-terminated). */
extern const char *const osprof_detect_cmds[];

int os_facts_add(struct os_facts *f, const char *cmd, const char *out);
/* Output of cmd, or NULL if it was not run. */
const char *os_facts_get(const struct os_facts *f, const char *cmd);
/* A transcript: lines "$ COMMAND" each followed by its output. Text before
 * the first "$ " line is an error (reported as PATH:LINE). */
int os_facts_parse(const char *path, const char *transcript,
		   struct os_facts *f, char **err);
void os_facts_free(struct os_facts *f);

/* ---- detection ---------------------------------------------------------------- */

enum os_family { OS_UNKNOWN = 0, OS_FREEBSD, OS_LINUX };

struct os_info {
	enum os_family family;
	char *id;       /* "freebsd", "ubuntu", "debian", ... */
	char *name;     /* "FreeBSD", "Ubuntu" */
	char *version;  /* "9.0-RELEASE", "14.1-RELEASE-p5", "9.04", "24.04" */
	int major, minor;
	char *codename; /* "jaunty" (Linux, may be NULL) */
	char *pretty;   /* "Ubuntu 24.04.1 LTS" (may be NULL) */
	char *kernel;   /* uname -r: "9.0-RELEASE", "2.6.28-11-server" */
	int kmajor, kminor, kpatch;
};

/* Fill oi from the facts; -1 with *err when the OS cannot be told. */
int osprof_detect(const struct os_facts *f, struct os_info *oi, char **err);
void os_info_free(struct os_info *oi);

/* ---- profiles ------------------------------------------------------------------ */

enum vbus { VBUS_VIRTIO_BLK, VBUS_VIRTIO_SCSI };
enum vsupport { VS_NO, VS_YES, VS_CHECK /* probe the guest first */ };

struct os_profile {
	enum os_family family;
	const char *distro;         /* "freebsd", "ubuntu", "debian" */
	int major, minor;           /* OS release */
	int kmajor, kminor;         /* kernel (Linux) */
	int virtio_builtin;         /* FreeBSD: virtio in GENERIC */
	const char *kmod_pkg;       /* "virtio-kmod-9.0" or NULL */
	const char *kmod_install;   /* "pkg_add -r virtio-kmod-9.0" or NULL */
	const char *kmod_check;     /* file proving the kmod is installed */
	enum vsupport scsi;         /* virtio-scsi usable */
	const char *ide_disk;       /* "ad", "ada", "sd", "hd" */
	const char *ide_legacy;     /* FreeBSD 9.x: "ad" aliases of "ada" */
	int ide_by_slot;            /* disk number = IDE slot (old ata(4)) */
	const char *blk_disk;       /* "vtbd", "vd" */
	const char *scsi_disk;      /* "da", "sd" */
	int scsi_disk_letters;      /* Linux sda, sdb (not da0) */
	const char *nic_e1000;      /* "em" (FreeBSD), NULL: name kept */
	const char *nic_virtio;     /* "vtnet" */
	const char *initramfs_update; /* "update-initramfs -u -k all" */
	const char *grub_update;      /* "update-grub" (regenerates grub.cfg
				       * or menu.lst from the edited files) */
};

/* The profile for a detected OS; -1 with *err for an OS or version with no
 * usable virtio (FreeBSD < 8.2, 8.0/8.1, Linux < 2.6.25, non-Debian Linux). */
int osprof_for(const struct os_info *oi, struct os_profile *p, char **err);

/* "FreeBSD 9.0 (virtio-kmod)", "ubuntu 12.04 (Linux 3.2)"; malloc'd. */
char *osprof_describe(const struct os_profile *p);

/* -1 with *err if the bus cannot be used on this profile (virtio-scsi on
 * FreeBSD 9.0 with the kmod port). VS_CHECK buses pass with a note. */
int osprof_check_bus(const struct os_profile *p, enum vbus bus, char **err);

/* loader.conf lines virtio needs (n = 0 where virtio is in GENERIC). */
void osprof_loader_lines(const struct os_profile *p, enum vbus bus,
			 const struct rw_kv **kv, size_t *n);
/* initramfs modules (Linux; n = 0 otherwise). */
void osprof_initramfs_modules(const struct os_profile *p, enum vbus bus,
			      const char *const **mods, size_t *n);

enum dbus { DBUS_IDE, DBUS_VIRTIO_BLK, DBUS_VIRTIO_SCSI, DBUS_SATA };
/* Name (no /dev/) of the idx-th disk on a bus; IDE disks are counted in
 * PVE order ide0, ide1, ide3 (ide2 is the CD-ROM). SATA (AHCI) disks are
 * sdX on Linux (libata) and adaN on FreeBSD 9 and later (ahci(4) and
 * CAM), counted in order. malloc'd. */
char *osprof_disk_name(const struct os_profile *p, enum dbus bus, unsigned idx);
/* NIC name for net<idx> with model "e1000", "e1000e", "rtl8139",
 * "vmxnet3" or "virtio" (FreeBSD em, re, vmx, vtnet); NULL (errno 0)
 * where the name does not follow the model (Linux: MAC/slot based). */
char *osprof_nic_name(const struct os_profile *p, const char *model, unsigned idx);

/* ---- label and MAC facts --------------------------------------------------------- */

/* "gpart show -l": GPT partitions with a label -> "/dev/gpt/LABEL". */
int osprof_parse_gpart_labels(const char *out, struct name_map *labels);
/* "dumpfs DEV | head -n 2" for dev (no /dev/) -> "/dev/ufsid/ID"; 0 and no
 * entry if the output holds no id. */
int osprof_parse_dumpfs(const char *dev, const char *out, struct name_map *labels);
/* "blkid": devices with UUID -> "UUID=...". */
int osprof_parse_blkid(const char *out, struct name_map *labels);
/* "ip -o link": NIC -> MAC (loopback skipped). */
int osprof_parse_ip_link(const char *out, struct name_map *macs);

/* Commands whose output the plan uses for labels and MACs, given the
 * guest's current fstab (may be NULL): FreeBSD "gpart show -l" and one
 * "dumpfs /dev/DEV | head -n 2" per UFS entry on a raw device; Linux
 * "blkid" and "ip -o link". NULL-terminated malloc'd array; free with
 * osprof_cmds_free. */
int osprof_fact_cmds(const struct os_profile *p, const char *fstab,
		     char ***cmds, char **err);
void osprof_cmds_free(char **cmds);

/* ---- virtio plan ------------------------------------------------------------------ */

struct virtio_plan {
	struct os_profile prof;
	enum vbus bus;
	struct name_map disks;  /* old disk -> new disk (no /dev/) */
	struct name_map nics;   /* old NIC -> new NIC (FreeBSD em0 -> vtnet0) */
	struct name_map labels; /* device -> bus-independent spec */
	struct name_map macs;   /* NIC -> MAC to pin (netplan) */
};

/* Plan for ndisks disks (ide0, ide1, ide3 ... -> bus 0, 1, 2 ...) and
 * nnics e1000 NICs (net0 ...) becoming virtio. Labels and MACs are taken
 * from the facts when given (may be NULL). */
/* The same for disks on bus from (DBUS_IDE or DBUS_SATA; -1 with *err
 * where the profile cannot name SATA disks for sure: FreeBSD before 9,
 * whose ata(4) numbers them by channel) and NICs of nic_model ("e1000",
 * "e1000e", "rtl8139" or "vmxnet3"). */
int virtio_plan_init_from(struct virtio_plan *vp, const struct os_profile *p, enum dbus from,
			  const char *nic_model, enum vbus bus, unsigned ndisks, unsigned nnics,
			  const struct os_facts *facts, char **err);
int virtio_plan_init(struct virtio_plan *vp, const struct os_profile *p,
		     enum vbus bus, unsigned ndisks, unsigned nnics,
		     const struct os_facts *facts, char **err);
void virtio_plan_free(struct virtio_plan *vp);

/* Guest files (relative to /) the plan may change, NULL-terminated; a
 * trailing "*.yaml" entry stands for every file in that directory. */
const char *const *virtio_plan_files(const struct virtio_plan *vp);
/* Does the plan have a transform for this path ("etc/fstab" or "/etc/fstab")? */
int virtio_plan_touches(const struct virtio_plan *vp, const char *path);

/* New contents of one guest file for a phase; text NULL or "" = absent.
 * A path the plan does not touch is returned unchanged. notes (may be NULL)
 * collects lines about entries left for SWITCH. */
int virtio_transform(const struct virtio_plan *vp, enum rw_phase phase,
		     const char *path, const char *text, char **out,
		     struct sbuf *notes, char **err);

#endif
