/* rewrite.h - pure text transforms of guest files for the IDE/e1000 ->
 * virtio switch: loader.conf and rc.conf variables, fstab, rc.conf NIC
 * variables, initramfs-tools modules, ifupdown interfaces, netplan, udev
 * persistent-net rules, GRUB kernel command lines.
 *
 * Contract of every rw_* transform:
 *   - no I/O; the input is never modified;
 *   - on success returns 0 and *out is a new malloc'd string (caller frees);
 *   - on failure returns -1, *out is NULL and, if err is not NULL, *err is a
 *     malloc'd message "PATH:LINE: what" (parse errors) or "PATH: what";
 *     PATH is the name the caller passed (used only in messages);
 *   - idempotent: f(f(x)) == f(x);
 *   - comments, blank lines, order and unrelated lines are kept byte for
 *     byte; a changed line keeps its own whitespace and trailing comment;
 *   - a missing final newline is kept unless a line has to be appended.
 *   An absent file is passed as "" (or NULL, same thing).
 *
 * Phases of a conversion (enum rw_phase):
 *   PREPARE  guest still on IDE/e1000: make the files work on BOTH buses.
 *            Old and new names live side by side so a rollback of the PVE
 *            config boots as before.
 *   SWITCH   last edit right before the guest is shut down for the PVE
 *            config change: whatever could not be made bus-independent is
 *            moved to the new name (rollback then needs FILE.pvagent.bak).
 *   FINAL    after the guest was verified on virtio: old names dropped.
 *
 * fstab policy, the choice made:
 *   1. Entries that already use a bus-independent name are left alone:
 *      UUID=, LABEL=, PARTUUID=, /dev/disk/by-*, /dev/gpt/, /dev/gptid/,
 *      /dev/ufs/, /dev/ufsid/, /dev/label/, /dev/mapper/, ZFS datasets,
 *      pseudo file systems, swap files.
 *   2. Entries naming a device whose bus-independent alias the caller knows
 *      (labels map: FreeBSD GPT labels from `gpart show -l`, UFS ids from
 *      `dumpfs`, Linux UUIDs from `blkid`) are moved to that alias already
 *      in PREPARE: it works before and after the switch, and for rollback.
 *      FreeBSD: GPT label, else the UFS id (/dev/ufsid/ID exists for every
 *      UFS file system newfs gave an id, with nothing written to disk; the
 *      /dev/gptid/ form is avoided: bsdinstall turns it off); Linux: UUID=.
 *   3. Swap entries by device name without an alias get BOTH names in
 *      PREPARE: the old line stays, a copy with the new name follows it (a
 *      missing swap device only warns at boot). FINAL drops the old line.
 *   4. Other entries by device name without an alias cannot hold both
 *      names: PREPARE leaves them and reports them in *notes; SWITCH and
 *      FINAL rename them (ad0s1a -> vtbd0s1a, /dev/sda1 -> /dev/vda1).
 *   5. Devices not in the disk map (CD-ROM, floppy, md) are left alone.
 * The GRUB transform follows the same rules for root= and resume=.
 *
 * Disk maps hold whole disks or exact devices ("/dev/" optional): "ad0" ->
 * "vtbd0" also renames ad0s1a, ad0s1 and ad0p2 ("ad0" does not match
 * "ad01"; "sda" does not match "sdaa"). Label maps hold exact devices
 * without "/dev/": "ada0p2" -> "/dev/gpt/rootfs", "sda5" -> "UUID=...".
 *
 * NIC names: FreeBSD names follow the driver (em0 -> vtnet0), so rc.conf
 * holds both until FINAL. Linux names follow the MAC (udev rules) or the
 * PCI slot (ens18), both kept by PVE when only the model changes, so the
 * Linux side pins instead of renaming: udev rules are made driver-agnostic
 * and netplan interfaces get a MAC match; rw_interfaces_nic renames only
 * when the caller plans a rename. */
#ifndef PVAGENT_REWRITE_H
#define PVAGENT_REWRITE_H

#include <stddef.h>

#include "util.h"

/* ---- name maps ----------------------------------------------------------- */

struct name_pair {
	char *from;
	char *to;
};

/* An ordered list of renames. Zero-initialise: struct name_map m = {0}; */
struct name_map {
	struct name_pair *v;
	size_t n;
};

/* Add from -> to (copied). Re-adding a "from" replaces its "to". */
int name_map_add(struct name_map *m, const char *from, const char *to);
/* The "to" of an exact "from", or NULL. */
const char *name_map_get(const struct name_map *m, const char *from);
void name_map_free(struct name_map *m);

/* Rename a device name (no /dev/) by a disk map: exact entry, or a whole
 * disk followed by a partition suffix. malloc'd result, or NULL if no entry
 * applies (errno 0) or out of memory (errno ENOMEM). */
char *rw_map_device(const struct name_map *disks, const char *dev);

enum rw_phase { RW_PREPARE, RW_SWITCH, RW_FINAL };

const char *rw_phase_name(enum rw_phase p);

/* ---- sh-style variable files (loader.conf, rc.conf) ----------------------- */

struct rw_kv {
	const char *key;
	const char *value;
};

/* Ensure each key is set to value, written key="value". An existing last
 * assignment with another value gets the new value in place (its trailing
 * comment kept); a missing key is appended in the given order. strict: a
 * line that is not a comment, blank or name=value is an error (loader.conf);
 * otherwise it is kept as it is (rc.conf is a shell script). Unterminated
 * quotes are always an error. */
int rw_kv_ensure(const char *path, const char *text, const struct rw_kv *kv,
		 size_t n, int strict, char **out, char **err);

/* Value of the last assignment of key (unquoted, malloc'd) in *value, or
 * NULL if unset. */
int rw_kv_get(const char *path, const char *text, const char *key,
	      int strict, char **value, char **err);

/* rc.conf NIC rename oldif -> newif (em0 -> vtnet0).
 * PREPARE/SWITCH: every variable naming oldif as a '_' component
 * (ifconfig_em0, ifconfig_em0_alias0, ifconfig_em0_ipv6, ipv6_ifconfig_em0,
 * vlans_em0, ...) gets a copy for newif on the next line, same value and
 * comment, unless newif's variable is already set; list variables
 * (*_interfaces) get newif beside oldif.
 * FINAL: oldif variables are dropped where the newif one exists (where not,
 * the last assignment is renamed and earlier ones dropped, as PREPARE
 * followed by FINAL does), every oldif leaves lists, single-interface
 * variables (*_interface="em0") are set to newif. Every oldif component of
 * a name is renamed (ifconfig_em0_em0 -> ifconfig_vtnet0_vtnet0). */
int rw_rcconf_nic(const char *path, const char *text, const char *oldif,
		  const char *newif, enum rw_phase phase, char **out,
		  char **err);

/* ---- fstab ------------------------------------------------------------------ */

struct rw_devmaps {
	const struct name_map *disks;  /* old disk/device -> new, no /dev/ */
	const struct name_map *labels; /* old device -> bus-independent spec */
};

/* fstab per the policy at the top. notes (may be NULL) receives one line
 * "PATH:LINE: ..." per entry left for SWITCH. A non-comment line with fewer
 * than 3 fields is an error. */
int rw_fstab(const char *path, const char *text, const struct rw_devmaps *dm,
	     enum rw_phase phase, char **out, struct sbuf *notes, char **err);

/* Parsed fstab entries (for callers that need to inspect, not rewrite). */
struct rw_fstab_ent {
	char *spec, *file, *type, *opts; /* opts NULL when the field is missing */
	size_t line;                     /* 1-based */
};

int rw_fstab_parse(const char *path, const char *text,
		   struct rw_fstab_ent **ents, size_t *n, char **err);
void rw_fstab_ents_free(struct rw_fstab_ent *ents, size_t n);

/* Kernel command lines: root=/dev/X and resume=/dev/X in GRUB legacy
 * menu.lst ("kernel" lines and the "# kopt=" / "# altoptions=" update-grub
 * lines), in /etc/default/grub (GRUB_CMDLINE_LINUX*) and RESUME=/dev/X in
 * /etc/initramfs-tools/conf.d/resume. Same rules as fstab (no swap special
 * case): label/UUID in PREPARE, else reported and renamed at SWITCH.
 * GRUB device.map lines "(hd0) /dev/sda" need a real disk: reported in
 * PREPARE, renamed at SWITCH (grub-install reads it, booting does not). */
int rw_grub(const char *path, const char *text, const struct rw_devmaps *dm,
	    enum rw_phase phase, char **out, struct sbuf *notes, char **err);

/* ---- Linux ------------------------------------------------------------------ */

/* /etc/initramfs-tools/modules: append each module not yet listed (a
 * listed line is one whose first word equals it, '-' and '_' alike). */
int rw_modules_ensure(const char *path, const char *text,
		      const char *const *mods, size_t n, char **out,
		      char **err);

/* /etc/network/interfaces NIC rename oldif -> newif.
 * PREPARE/SWITCH: each "iface oldif ..." stanza gets a copy for newif right
 * after it (unless newif already has one for that address family; the
 * copy's header renames the interface only, its option lines every oldif
 * word), and auto/allow-* lines naming oldif name newif too.
 * FINAL: oldif stanzas whose newif copy exists are dropped (with the blank
 * line before them) and oldif leaves auto/allow-* lines. */
int rw_interfaces_nic(const char *path, const char *text, const char *oldif,
		      const char *newif, enum rw_phase phase, char **out,
		      char **err);

/* netplan: pin ifname to its MAC so the name survives a driver change:
 * under network.ethernets.IFNAME add "match: {macaddress: MAC}" and
 * "set-name: IFNAME" (block style, the file's indentation) unless a match
 * is already there. IFNAME missing: unchanged. Flow-style mappings for the
 * interface are reported as unsupported. */
int rw_netplan_pin_mac(const char *path, const char *text, const char *ifname,
		       const char *mac, char **out, char **err);

/* udev persistent-net rules: in rules that set NAME=, a driver-specific
 * DRIVERS=="e1000" becomes DRIVERS=="?*" so the MAC rule still names the
 * NIC after the model change; names in the nics map (old -> new) are
 * renamed in NAME="old". Keys are only looked for outside quoted values. */
int rw_udev_net(const char *path, const char *text,
		const struct name_map *nics, char **out, char **err);

/* ---- other files ----------------------------------------------------------- */

/* For files pvagent does not rewrite (pf.conf, ipfw rules, crypttab, ...):
 * append "PATH:LINE: names WORD" to notes for each non-comment line naming
 * word as a whole word (em0 but not em01). -1 only when out of memory. */
int rw_note_mentions(const char *path, const char *text, const char *word,
		     struct sbuf *notes);

#endif
