/* bootmodel.c - the guest boot model (see bootmodel.h): device names from
 * the configured bus and NIC model, root device and driver checks against
 * the guest's files (FreeBSD fstab/loader.conf/rc.conf; Linux fstab, grub,
 * initramfs-tools modules, interfaces/netplan), fstab mounts and swap with
 * labels resolved through the fixture's recorded facts, and the Linux
 * block devices of /proc/partitions. */
#include "bootmodel.h"

#include "bootread.h"
#include "cluster.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum fam { FAM_FREEBSD, FAM_UBUNTU, FAM_LINUX };

struct os {
	enum fam fam;
	int ver; /* major * 100 + minor: 9.0 -> 900, 9.04 -> 904, 14 -> 1400 */
};

static struct os parse_fixture(const char *fixture)
{
	struct os os = {FAM_LINUX, 0};
	const char *dash = strchr(fixture, '-');
	size_t fl = dash ? (size_t)(dash - fixture) : strlen(fixture);
	if (fl == 7 && strncmp(fixture, "freebsd", 7) == 0)
		os.fam = FAM_FREEBSD;
	else if (fl == 6 && strncmp(fixture, "ubuntu", 6) == 0)
		os.fam = FAM_UBUNTU;
	if (dash) {
		char *end;
		long maj = strtol(dash + 1, &end, 10);
		long min = *end == '.' ? strtol(end + 1, NULL, 10) : 0;
		os.ver = (int)(maj * 100 + min);
	}
	return os;
}

/* ---- guest files -------------------------------------------------------- */
static char *guest_file(const char *root, const char *rel)
{
	char *path = strprintf("%s/%s", root, rel);
	char *text = NULL;
	if (path && read_file(path, &text, NULL) < 0)
		text = NULL;
	free(path);
	return text;
}

static bool guest_exists(const char *root, const char *rel)
{
	char *path = strprintf("%s/%s", root, rel);
	struct stat st;
	bool ok = path && stat(path, &st) == 0;
	free(path);
	return ok;
}

/* Next line of text (not modified); returns NULL at the end. */
static const char *next_line(const char *p, size_t *len)
{
	if (!p || !*p)
		return NULL;
	const char *e = strchr(p, '\n');
	*len = e ? (size_t)(e - p) : strlen(p);
	return p;
}

/* Does any uncommented line start (after blanks) with prefix? */
static bool has_line_prefix(const char *text, const char *prefix)
{
	size_t len, pl = strlen(prefix);
	for (const char *p = text; (p = next_line(p, &len)) != NULL;
	     p += len + (p[len] ? 1 : 0)) {
		const char *q = p;
		while (q < p + len && (*q == ' ' || *q == '\t'))
			q++;
		if ((size_t)(p + len - q) >= pl && strncmp(q, prefix, pl) == 0)
			return true;
	}
	return false;
}

/* loader.conf: is name set to YES (name="YES" / name=YES, any case)? A
 * file that does not read says no (check_files reports it). */
static bool loader_yes(const char *text, const char *name)
{
	char *v = NULL, *err = NULL;
	bool yes = text && br_var_get("boot/loader.conf", text, name, &v, &err) == 1 && v &&
		   strcasecmp(v, "YES") == 0;
	free(v);
	free(err);
	return yes;
}

/* The guest's files the boot reads, checked line by line before anything
 * is judged from them: a line that does not read stops the boot where that
 * file is read (loader.conf: the loader, fstab: the mounts, rc.conf: the
 * network). 0, or the set_fail() result. */
static int set_fail(struct boot_result *r, enum boot_state st, char *reason);
static int check_files(const char *root, bool fbsd, struct boot_result *r)
{
	static const struct {
		const char *path;
		bool fbsd_only, fstab;
		enum boot_state st;
		const char *stage;
	} files[] = {
		{"boot/loader.conf", true, false, BOOT_MOUNTROOT, "loader"},
		{"etc/fstab", false, true, BOOT_SINGLE_USER, NULL},
		{"etc/rc.conf", true, false, BOOT_NO_NETWORK, "no network"},
	};
	for (size_t i = 0; root && i < sizeof files / sizeof files[0]; i++) {
		if (files[i].fbsd_only && !fbsd)
			continue;
		char *text = guest_file(root, files[i].path), *err = NULL;
		int bad = text && (files[i].fstab ? br_fstab_check(files[i].path, text, &err)
						  : br_var_get(files[i].path, text, NULL, NULL, &err)) < 0;
		free(text);
		if (bad) {
			const char *stage = files[i].stage ? files[i].stage
							   : fbsd ? "single-user mode" : "emergency mode";
			char *why = strprintf("%s: %s", stage, err ? err : "out of memory");
			free(err);
			return set_fail(r, files[i].st, why);
		}
		free(err);
	}
	return 0;
}

/* Field `n` (0-based, whitespace separated) of a line into a new string. */
static char *field(const char *line, size_t len, int n)
{
	const char *p = line, *end = line + len;
	for (int i = 0;; i++) {
		while (p < end && isspace((unsigned char)*p))
			p++;
		if (p >= end)
			return NULL;
		const char *s = p;
		while (p < end && !isspace((unsigned char)*p))
			p++;
		if (i == n)
			return strndup(s, (size_t)(p - s));
	}
}

/* Root device from fstab ("/dev/ada0p2", "UUID=..."), malloc'd or NULL. */
static char *fstab_root(const char *fstab)
{
	size_t len;
	for (const char *p = fstab; (p = next_line(p, &len)) != NULL;
	     p += len + (p[len] ? 1 : 0)) {
		const char *q = p;
		while (q < p + len && isspace((unsigned char)*q))
			q++;
		if (q >= p + len || *q == '#')
			continue;
		char *mp = field(p, len, 1);
		bool root = mp && strcmp(mp, "/") == 0;
		free(mp);
		if (root)
			return field(p, len, 0);
	}
	return NULL;
}

/* ---- disks -------------------------------------------------------------- */
struct disk {
	int bus; /* 0 ide, 1 sata, 2 scsi, 3 virtio */
	int index;
	const char *key;
};

static int bus_of(const char *key, int *index)
{
	static const char *const buses[] = {"ide", "sata", "scsi", "virtio"};
	for (int b = 0; b < 4; b++) {
		size_t l = strlen(buses[b]);
		if (strncmp(key, buses[b], l) == 0 && isdigit((unsigned char)key[l])) {
			*index = atoi(key + l);
			return b;
		}
	}
	return -1;
}

static int cmp_disk(const void *a, const void *b)
{
	const struct disk *x = a, *y = b;
	if (x->bus != y->bus)
		return x->bus - y->bus;
	return x->index - y->index;
}

static int add_str(struct boot_result *r, char *s)
{
	if (!s)
		return -1;
	char **v = realloc(r->disks, (r->ndisks + 1) * sizeof(*v));
	if (!v) {
		free(s);
		return -1;
	}
	r->disks = v;
	r->disks[r->ndisks++] = s;
	return 0;
}

static bool has_disk(const struct boot_result *r, const char *name)
{
	for (size_t i = 0; i < r->ndisks; i++)
		if (strcmp(r->disks[i], name) == 0)
			return true;
	return false;
}

static bool virtio_scsi(json_object *conf)
{
	const char *hw = cfg_str(conf, "scsihw");
	return hw && strncmp(hw, "virtio-scsi", 11) == 0;
}

/* ---- evaluation --------------------------------------------------------- */
/* A disk the guest sees under its own name (not an alias). */
struct pdisk {
	const char *name; /* borrowed from the result's disks */
	uint64_t bytes;   /* size= of the drive, 0 if not given */
};

/* What the fixture recorded about its file system labels. */
struct labels {
	struct br_labels map; /* device it was installed on (no /dev/) -> spec */
	bool gpt, ufsid, uuid; /* the facts hold "gpart show -l", "dumpfs",
				* "blkid": labels of that kind are checked */
};

struct eval {
	struct os os;
	const char *root;
	json_object *conf;
	struct boot_result *r;
	const char *boot_key; /* boot disk config key */
	char *boot_dev;       /* its device name */
	struct pdisk *prim;   /* disks in bus order, the boot disk first */
	size_t nprim;
	struct labels lab;
};

static int set_fail(struct boot_result *r, enum boot_state st, char *reason)
{
	if (!reason)
		return -1;
	if (r->state == BOOT_UP) {
		r->state = st;
		free(r->reason);
		r->reason = reason;
	} else {
		free(reason);
	}
	return 0;
}

/* FreeBSD driver available: in GENERIC from 8.4 and 9.2; else loader.conf
 * must load it and the module file must exist. */
static bool fbsd_driver(const struct eval *e, const char *mod, bool kmod_port)
{
	int v = e->os.ver;
	if (v >= 902 || (v >= 804 && v < 900))
		return true;
	if (!e->root)
		return true;
	if (!kmod_port)
		return false; /* the virtio-kmod port has no such module */
	char *loader = guest_file(e->root, "boot/loader.conf");
	char *var = strprintf("%s_load", mod);
	char *m1 = strprintf("boot/modules/%s.ko", mod);
	char *m2 = strprintf("boot/kernel/%s.ko", mod);
	bool ok = loader && var && m1 && m2 && loader_yes(loader, "virtio_load") &&
		  loader_yes(loader, "virtio_pci_load") && loader_yes(loader, var) &&
		  (guest_exists(e->root, m1) || guest_exists(e->root, m2));
	free(loader);
	free(var);
	free(m1);
	free(m2);
	return ok;
}

static uint64_t drive_bytes(json_object *conf, const char *key)
{
	const char *v = cfg_str(conf, key);
	char *size = v ? prop_get(v, "size") : NULL;
	uint64_t b = 0;
	if (!size || parse_size(size, &b) < 0)
		b = 0;
	free(size);
	return b;
}

static int name_disks(struct eval *e, struct disk *d, size_t n)
{
	int seq_ada = 0, seq_da = 0, seq_vtbd = 0, seq_sd = 0, seq_vd = 0;
	bool fbsd = e->os.fam == FAM_FREEBSD;
	e->prim = calloc(n ? n : 1, sizeof *e->prim);
	if (!e->prim)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char *name = NULL, *alias = NULL;
		switch (d[i].bus) {
		case 0: /* ide */
			if (fbsd) {
				if (e->os.ver < 900) {
					name = strprintf("ad%d", d[i].index);
				} else if (e->os.ver < 1000) {
					name = strprintf("ad%d", d[i].index);
					alias = strprintf("ada%d", seq_ada++);
				} else {
					name = strprintf("ada%d", seq_ada++);
				}
			} else if (e->os.fam == FAM_UBUNTU && e->os.ver < 800) {
				name = strprintf("hd%c", 'a' + d[i].index);
			} else {
				name = strprintf("sd%c", 'a' + seq_sd++);
			}
			break;
		case 1: /* sata */
			name = fbsd ? strprintf("ada%d", seq_ada++)
				    : strprintf("sd%c", 'a' + seq_sd++);
			break;
		case 2: /* scsi */
			name = fbsd ? strprintf("da%d", seq_da++)
				    : strprintf("sd%c", 'a' + seq_sd++);
			break;
		default: /* virtio */
			name = fbsd ? strprintf("vtbd%d", seq_vtbd++)
				    : strprintf("vd%c", 'a' + seq_vd++);
			break;
		}
		if (!name || add_str(e->r, name) < 0) {
			free(alias);
			return -1;
		}
		/* name now belongs to the result */
		const char *primary = e->r->disks[e->r->ndisks - 1];
		struct pdisk pd = {primary, drive_bytes(e->conf, d[i].key)};
		bool is_boot = e->boot_key && strcmp(d[i].key, e->boot_key) == 0;
		if (is_boot) { /* boot disk first: the disk the fixture was installed on */
			memmove(e->prim + 1, e->prim, e->nprim * sizeof *e->prim);
			e->prim[0] = pd;
		} else {
			e->prim[e->nprim] = pd;
		}
		e->nprim++;
		if (alias && add_str(e->r, alias) < 0)
			return -1;
		if (!e->boot_dev && is_boot && !(e->boot_dev = strdup(primary)))
			return -1;
	}
	return 0;
}

/* The boot disk key from boot: order=..., bootdisk, or the first disk. */
static const char *boot_disk(json_object *conf, struct disk *d, size_t n)
{
	const char *boot = cfg_str(conf, "boot");
	if (boot && strncmp(boot, "order=", 6) == 0) {
		const char *p = boot + 6;
		while (*p) {
			const char *e = p;
			while (*e && *e != ';' && *e != ',')
				e++;
			for (size_t i = 0; i < n; i++)
				if (strlen(d[i].key) == (size_t)(e - p) &&
				    strncmp(d[i].key, p, (size_t)(e - p)) == 0)
					return d[i].key;
			if (*e != ';')
				break;
			p = e + 1;
		}
	}
	const char *bd = cfg_str(conf, "bootdisk");
	for (size_t i = 0; bd && i < n; i++)
		if (strcmp(d[i].key, bd) == 0)
			return d[i].key;
	return n ? d[0].key : NULL;
}

/* ---- labels and device resolution ---------------------------------------- */
/* The facts the fixture recorded (ROOT/.pvagent-facts/facts): GPT labels,
 * UFS ids and UUIDs of the devices it was installed on. No facts file: no
 * label can be checked (every label resolves). */
static int load_labels(const char *root, struct labels *l)
{
	static const char path[] = ".pvagent-facts/facts";
	char *text = root ? guest_file(root, path) : NULL;
	if (!text)
		return 0;
	struct br_facts f = {0};
	char *err = NULL;
	int rc = br_facts_parse(path, text, &f, &err);
	for (size_t i = 0; rc == 0 && i < f.n; i++) {
		const char *cmd = f.v[i].cmd, *out = f.v[i].out;
		size_t line = f.v[i].line;
		if (strcmp(cmd, "gpart show -l") == 0) {
			l->gpt = true;
			rc = br_gpart_labels(path, line, out, &l->map, &err);
		} else if (strcmp(cmd, "blkid") == 0) {
			l->uuid = true;
			rc = br_blkid(path, line, out, &l->map, &err);
		} else if (strncmp(cmd, "dumpfs /dev/", 12) == 0) {
			l->ufsid = true;
			char *dev = strndup(cmd + 12, strcspn(cmd + 12, " |"));
			rc = dev ? br_dumpfs(path, line, dev, out, &l->map, &err) : -1;
			free(dev);
		}
	}
	if (rc < 0) {
		/* facts that do not read are no facts: labels unchecked */
		fprintf(stderr, "pvesim: %s: %s\n", root, err ? err : "out of memory");
		br_labels_free(&l->map);
		l->gpt = l->uuid = l->ufsid = false;
	}
	free(err);
	br_facts_free(&f);
	free(text);
	return 0;
}

/* Length of the disk part of a device name (no /dev/): FreeBSD letters and
 * unit ("ad0" of "ad0s1a"), Linux letters ("sda" of "sda1"). */
static size_t disk_len(const char *dev, bool fbsd)
{
	size_t l = 0;
	while (isalpha((unsigned char)dev[l]))
		l++;
	if (fbsd)
		while (isdigit((unsigned char)dev[l]))
			l++;
	return l;
}

/* The device the guest has now for one the fixture was installed on
 * ("ad0s1a" -> "vtbd0s1a"): the same name while the guest still has that
 * disk, else the same partition on the disk at the same position (boot disk
 * first). malloc'd; NULL with errno 0 if the guest has no such disk. */
static char *current_dev(const struct eval *e, const char *installed)
{
	bool fbsd = e->os.fam == FAM_FREEBSD;
	size_t dl = disk_len(installed, fbsd);
	errno = 0;
	if (!dl || (fbsd && !isdigit((unsigned char)installed[dl - 1])))
		return NULL;
	char *disk = strndup(installed, dl);
	if (!disk)
		return NULL;
	bool same = has_disk(e->r, disk);
	free(disk);
	if (same)
		return strdup(installed);
	size_t letters = disk_len(installed, false);
	size_t ord = fbsd ? (size_t)strtoul(installed + letters, NULL, 10)
			  : (size_t)(installed[dl - 1] - 'a');
	if (ord >= e->nprim)
		return NULL;
	return strprintf("%s%s", e->prim[ord].name, installed + dl);
}

/* Label spec of an fstab device in the form the label map uses ("UUID=X"
 * for /dev/disk/by-uuid/X, malloc'd into *norm), and whether the facts can
 * check it: 1 a label the facts cover, 0 a label they do not (trusted), -1
 * not a label, -2 out of memory. */
static int label_kind(const struct eval *e, const char *spec, char **norm)
{
	*norm = NULL;
	static const char *const fbsd_labels[] = {"/dev/gptid/", "/dev/ufs/", "/dev/label/",
						  "/dev/diskid/", NULL};
	if (strncmp(spec, "/dev/gpt/", 9) == 0)
		return (*norm = strdup(spec)) ? e->lab.gpt : -2;
	if (strncmp(spec, "/dev/ufsid/", 11) == 0)
		return (*norm = strdup(spec)) ? e->lab.ufsid : -2;
	for (size_t i = 0; fbsd_labels[i]; i++)
		if (strncmp(spec, fbsd_labels[i], strlen(fbsd_labels[i])) == 0)
			return (*norm = strdup(spec)) ? 0 : -2;
	if (strncmp(spec, "UUID=", 5) == 0)
		return (*norm = strdup(spec)) ? e->lab.uuid : -2;
	if (strncmp(spec, "/dev/disk/by-uuid/", 18) == 0)
		return (*norm = strprintf("UUID=%s", spec + 18)) ? e->lab.uuid : -2;
	if (strncmp(spec, "LABEL=", 6) == 0 || strncmp(spec, "PARTUUID=", 9) == 0 ||
	    strncmp(spec, "PARTLABEL=", 10) == 0 || strncmp(spec, "/dev/disk/", 10) == 0 ||
	    strncmp(spec, "/dev/mapper/", 12) == 0)
		return (*norm = strdup(spec)) ? 0 : -2;
	return -1;
}

/* Would the guest find fstab device spec (file system type fstype, may be
 * NULL)? 1 yes, with *dev the kernel's device ("/dev/vtbd0s1a"; the spec
 * itself where the facts cannot tell, and for file systems without a device
 * such as proc, ZFS datasets or NFS); 0 no; -1 out of memory. A swap file
 * resolves when it exists in the guest root. */
static int resolve(const struct eval *e, const char *spec, const char *fstype, char **dev)
{
	*dev = NULL;
	char *norm = NULL;
	int kind = label_kind(e, spec, &norm);
	if (kind == -2)
		return -1;
	if (kind == 0) { /* a label the facts do not cover: trusted */
		free(norm);
		return (*dev = strdup(spec)) ? 1 : -1;
	}
	if (kind == 1) {
		const char *installed = NULL;
		for (size_t i = 0; i < e->lab.map.n && !installed; i++)
			if (strcmp(e->lab.map.v[i].spec, norm) == 0)
				installed = e->lab.map.v[i].dev;
		free(norm);
		if (!installed)
			return 0;
		char *cur = current_dev(e, installed);
		if (!cur)
			return errno ? -1 : 0;
		*dev = strprintf("/dev/%s", cur);
		free(cur);
		return *dev ? 1 : -1;
	}
	if (strncmp(spec, "/dev/", 5) != 0) {
		if (fstype && strcmp(fstype, "swap") == 0 && spec[0] == '/' && e->root &&
		    !guest_exists(e->root, spec + 1))
			return 0; /* swapon: cannot open the swap file */
		return (*dev = strdup(spec)) ? 1 : -1;
	}
	const char *d = spec + 5;
	if (strchr(d, '/')) /* another /dev/ subdirectory: not modelled */
		return (*dev = strdup(spec)) ? 1 : -1;
	size_t dl = disk_len(d, e->os.fam == FAM_FREEBSD);
	char *disk = strndup(d, dl);
	if (!disk)
		return -1;
	bool ok = dl && has_disk(e->r, disk);
	free(disk);
	if (!ok)
		return 0;
	return (*dev = strdup(spec)) ? 1 : -1;
}

/* The root FreeBSD's loader hands the kernel: vfs.root.mountfrom="TYPE:DEV"
 * of boot/loader.conf, or with zfs_load and no fstab entry for / the
 * pool's bootfs (bsdinstall's zroot/ROOT/default). 1 with *type and *dev
 * (malloc'd), 0 if neither (the kernel takes / from etc/fstab), -1 out of
 * memory. */
static int loader_mountfrom(const char *root, char **type, char **dev)
{
	*type = *dev = NULL;
	char *loader = guest_file(root, "boot/loader.conf");
	int rc = 0;
	char *mf = NULL, *err = NULL;
	if (loader && br_var_get("boot/loader.conf", loader, "vfs.root.mountfrom", &mf, &err) == 1 &&
	    mf) {
		const char *colon = strchr(mf, ':');
		if (colon) {
			*type = strndup(mf, (size_t)(colon - mf));
			*dev = strdup(colon + 1);
			rc = *type && *dev ? 1 : -1;
		}
	}
	free(mf);
	free(err);
	if (rc == 0 && loader && loader_yes(loader, "zfs_load")) {
		char *fstab = guest_file(root, "etc/fstab");
		char *fsroot = fstab ? fstab_root(fstab) : NULL;
		if (!fsroot) {
			*type = strdup("zfs");
			*dev = strdup("zroot/ROOT/default");
			rc = *type && *dev ? 1 : -1;
		}
		free(fsroot);
		free(fstab);
	}
	free(loader);
	if (rc <= 0) {
		free(*type);
		free(*dev);
		*type = *dev = NULL;
	}
	return rc;
}

static int check_root_freebsd(struct eval *e)
{
	struct boot_result *r = e->r;
	int bus = -1, idx;
	if (e->boot_key)
		bus = bus_of(e->boot_key, &idx);
	/* driver for the boot disk */
	if (bus == 3 && !fbsd_driver(e, "virtio_blk", true))
		return set_fail(r, BOOT_MOUNTROOT,
				strprintf("mountroot: no driver for virtio-blk disk %s "
					  "(virtio_blk not loaded from boot/loader.conf)",
					  e->boot_dev));
	if (bus == 2 && virtio_scsi(e->conf) && !fbsd_driver(e, "virtio_scsi", false))
		return set_fail(r, BOOT_MOUNTROOT,
				strprintf("mountroot: no driver for virtio-scsi disk %s",
					  e->boot_dev));
	if (!e->root)
		return 0;
	char *type = NULL, *dev = NULL;
	int mf = loader_mountfrom(e->root, &type, &dev);
	if (mf < 0)
		return -1;
	bool zfs = mf == 1 && strcmp(type, "zfs") == 0;
	free(type);
	if (zfs) { /* pools are found by their GUIDs on any bus */
		free(dev);
		return 0;
	}
	if (!dev) {
		char *fstab = guest_file(e->root, "etc/fstab");
		if (!fstab)
			return set_fail(r, BOOT_MOUNTROOT,
					strdup("mountroot: no etc/fstab to find the root "
					       "file system"));
		dev = fstab_root(fstab);
		free(fstab);
		if (!dev)
			return set_fail(r, BOOT_MOUNTROOT,
					strdup("mountroot: etc/fstab has no entry for /"));
	}
	char *kdev = NULL, *norm = NULL;
	int ok = resolve(e, dev, NULL, &kdev);
	int kind = label_kind(e, dev, &norm);
	free(norm);
	int rc = ok < 0 || kind == -2 ? -1 : 0;
	if (ok == 0 && kind >= 0)
		rc = set_fail(r, BOOT_MOUNTROOT,
			      strprintf("mountroot: root device %s from etc/fstab not found: "
					"no partition with that label on the disks (boot disk "
					"is %s)",
					dev, e->boot_dev ? e->boot_dev : "none"));
	else if (ok == 0)
		rc = set_fail(r, BOOT_MOUNTROOT,
			      strprintf("mountroot: root device %s from etc/fstab "
					"does not exist (boot disk is %s)",
					dev, e->boot_dev ? e->boot_dev : "none"));
	free(kdev);
	free(dev);
	return rc;
}

static bool initramfs_has(const char *root, const char *mod)
{
	char *mods = guest_file(root, "etc/initramfs-tools/modules");
	bool ok = mods && has_line_prefix(mods, mod);
	free(mods);
	return ok;
}

/* root=/dev/... on the kernel command line of grub (grub.cfg, menu.lst). */
static char *grub_root(const char *root)
{
	static const char *const files[] = {"boot/grub/grub.cfg",
					    "boot/grub/menu.lst", NULL};
	for (size_t i = 0; files[i]; i++) {
		char *text = guest_file(root, files[i]);
		if (!text)
			continue;
		size_t len;
		char *found = NULL;
		for (const char *p = text; !found && (p = next_line(p, &len)) != NULL;
		     p += len + (p[len] ? 1 : 0)) {
			const char *q = p;
			while (q < p + len && isspace((unsigned char)*q))
				q++;
			if (*q == '#')
				continue;
			const char *m = strstr(q, "root=/dev/");
			if (m && m < p + len) {
				const char *s = m + 5, *end = s;
				while (end < p + len && !isspace((unsigned char)*end))
					end++;
				found = strndup(s, (size_t)(end - s));
			}
		}
		free(text);
		if (found)
			return found;
	}
	return NULL;
}

static int check_linux_dev(struct eval *e, const char *dev, const char *where)
{
	char *kdev = NULL, *norm = NULL;
	int ok = resolve(e, dev, NULL, &kdev);
	int kind = label_kind(e, dev, &norm);
	free(kdev);
	free(norm);
	if (ok < 0 || kind == -2)
		return -1;
	if (ok == 1)
		return 0;
	if (kind >= 0)
		return set_fail(e->r, BOOT_INITRAMFS,
				strprintf("initramfs: root device %s from %s not found: no "
					  "partition with that UUID on the disks (boot disk is %s)",
					  dev, where, e->boot_dev ? e->boot_dev : "none"));
	return set_fail(e->r, BOOT_INITRAMFS,
			strprintf("initramfs: root device %s from %s does not "
				  "exist (boot disk is %s)",
				  dev, where, e->boot_dev ? e->boot_dev : "none"));
}

static int check_root_linux(struct eval *e)
{
	struct boot_result *r = e->r;
	int bus = -1, idx;
	if (e->boot_key)
		bus = bus_of(e->boot_key, &idx);
	bool builtin = e->os.fam == FAM_UBUNTU ? e->os.ver >= 1204 : true;
	if (bus == 2 && virtio_scsi(e->conf) && e->os.fam == FAM_UBUNTU &&
	    e->os.ver < 1204)
		return set_fail(r, BOOT_INITRAMFS,
				strprintf("initramfs: kernel has no virtio_scsi driver "
					  "for %s",
					  e->boot_dev));
	if (!e->root)
		return 0;
	if (!builtin && (bus == 3 || (bus == 2 && virtio_scsi(e->conf)))) {
		const char *mod = bus == 3 ? "virtio_blk" : "virtio_scsi";
		if (!initramfs_has(e->root, mod) || !initramfs_has(e->root, "virtio_pci"))
			return set_fail(r, BOOT_INITRAMFS,
					strprintf("initramfs: %s/virtio_pci missing from "
						  "etc/initramfs-tools/modules, no root "
						  "device",
						  mod));
	}
	char *g = grub_root(e->root);
	int rc = 0;
	if (g)
		rc = check_linux_dev(e, g, "the kernel command line");
	free(g);
	if (rc < 0 || r->state != BOOT_UP)
		return rc;
	char *fstab = guest_file(e->root, "etc/fstab");
	if (!fstab)
		return set_fail(r, BOOT_INITRAMFS, strdup("initramfs: no etc/fstab"));
	char *dev = fstab_root(fstab);
	free(fstab);
	if (!dev)
		return set_fail(r, BOOT_INITRAMFS,
				strdup("initramfs: etc/fstab has no entry for /"));
	rc = check_linux_dev(e, dev, "etc/fstab");
	free(dev);
	return rc;
}

/* MAC of a qemu net value ("e1000=BC:24:...,bridge=.."), malloc'd or NULL. */
static char *net_mac(const char *net)
{
	const char *eq = strchr(net, '=');
	const char *comma = strchr(net, ',');
	if (!eq || (comma && comma < eq))
		return NULL;
	size_t n = comma ? (size_t)(comma - eq - 1) : strlen(eq + 1);
	return strndup(eq + 1, n);
}

/* Pre-systemd Linux: udev's 70-persistent-net.rules pins ethN to a MAC; a
 * NIC with an unknown MAC gets the next free ethN. */
static char *udev_name(const char *root, const char *net, int netidx)
{
	char *rules = root ? guest_file(root, "etc/udev/rules.d/70-persistent-net.rules")
			   : NULL;
	char *mac = net_mac(net);
	char *found = NULL;
	int known = 0;
	size_t len;
	for (const char *p = rules; rules && mac && !found && (p = next_line(p, &len)) != NULL;
	     p += len + (p[len] ? 1 : 0)) {
		if (*p == '#')
			continue;
		char *line = strndup(p, len);
		const char *a = line ? strstr(line, "ATTR{address}==\"") : NULL;
		const char *nm = line ? strstr(line, "NAME=\"") : NULL;
		if (a && nm) {
			known++;
			if (strncasecmp(a + 16, mac, strlen(mac)) == 0 && a[16 + strlen(mac)] == '"')
				found = strndup(nm + 6, strcspn(nm + 6, "\""));
		}
		free(line);
	}
	free(rules);
	free(mac);
	if (found)
		return found;
	return strprintf("eth%d", known ? known : netidx);
}

/* The first NIC of the config (net0, else the lowest netN) and its index. */
static const char *first_net(json_object *conf, int *netidx)
{
	for (int i = 0; i < 32; i++) {
		char key[16];
		snprintf(key, sizeof(key), "net%d", i);
		const char *net = cfg_str(conf, key);
		*netidx = i;
		if (net)
			return net;
	}
	return NULL;
}

/* Model of a qemu net value: "e1000=MAC,..." or "model=virtio,...";
 * malloc'd. */
static char *net_model(const char *net)
{
	const char *comma = strchr(net, ',');
	size_t ml = comma ? (size_t)(comma - net) : strlen(net);
	char *model = strndup(net, ml);
	if (!model)
		return NULL;
	char *eq = strchr(model, '=');
	if (eq)
		*eq = '\0';
	if (strcmp(model, "model") == 0 && eq)
		memmove(model, eq + 1, strlen(eq + 1) + 1);
	return model;
}

/* nic_model and mac of the result from the first NIC. */
static int nic_facts(struct eval *e)
{
	int idx;
	const char *net = first_net(e->conf, &idx);
	if (!net)
		return 0;
	struct boot_result *r = e->r;
	if (!(r->nic_model = net_model(net)))
		return -1;
	char *mac = strstr(net, "model=") == net ? prop_get(net, "macaddr") : net_mac(net);
	if (!mac)
		return 0;
	for (char *p = mac; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	r->mac = mac;
	return 0;
}

/* NIC name for net0 and whether the guest configures it. */
static int check_net(struct eval *e)
{
	struct boot_result *r = e->r;
	int netidx = -1;
	const char *net = first_net(e->conf, &netidx);
	if (!net)
		return set_fail(r, BOOT_NO_NETWORK, strdup("no network: no NIC configured"));
	char *model = net_model(net);
	if (!model)
		return -1;
	char *link = prop_get(net, "link_down");
	bool down = link && strcmp(link, "1") == 0;
	free(link);
	bool virtio = strcmp(model, "virtio") == 0;
	if (e->os.fam == FAM_FREEBSD) {
		const char *drv = virtio				  ? "vtnet"
				  : strcmp(model, "rtl8139") == 0 ? "re"
				  : strcmp(model, "vmxnet3") == 0 ? "vmx"
								  : "em";
		r->nic = strprintf("%s0", drv);
	} else if (e->os.fam == FAM_UBUNTU && e->os.ver < 1510) {
		r->nic = udev_name(e->root, net, netidx);
	} else {
		r->nic = strprintf("ens%d", 18 + netidx);
	}
	free(model);
	if (!r->nic)
		return -1;
	if (down)
		return set_fail(r, BOOT_NO_NETWORK,
				strprintf("no network: %s link is down", r->nic));
	if (e->os.fam == FAM_FREEBSD && virtio && !fbsd_driver(e, "if_vtnet", true))
		return set_fail(r, BOOT_NO_NETWORK,
				strdup("no network: no driver for the virtio NIC "
				       "(if_vtnet not loaded from boot/loader.conf)"));
	if (!e->root)
		return 0;
	if (e->os.fam == FAM_FREEBSD) {
		char *rc_conf = guest_file(e->root, "etc/rc.conf");
		char *want = strprintf("ifconfig_%s", r->nic), *err = NULL;
		bool ok = rc_conf && want &&
			  (br_var_get("etc/rc.conf", rc_conf, want, NULL, &err) == 1 ||
			   br_var_get("etc/rc.conf", rc_conf, "ifconfig_DEFAULT", NULL, &err) == 1);
		free(err);
		free(rc_conf);
		free(want);
		if (!ok)
			return set_fail(r, BOOT_NO_NETWORK,
					strprintf("no network: etc/rc.conf has no "
						  "ifconfig_%s",
						  r->nic));
		return 0;
	}
	bool ok = false;
	char *ifaces = guest_file(e->root, "etc/network/interfaces");
	if (ifaces) {
		char *a = strprintf("iface %s ", r->nic);
		char *b = strprintf("auto %s", r->nic);
		ok = a && b && (has_line_prefix(ifaces, a) || has_line_prefix(ifaces, b));
		free(a);
		free(b);
		free(ifaces);
	}
	char *npdir = strprintf("%s/etc/netplan", e->root);
	DIR *dir = npdir ? opendir(npdir) : NULL;
	struct dirent *de;
	while (!ok && dir && (de = readdir(dir)) != NULL) {
		size_t l = strlen(de->d_name);
		if (l < 6 || strcmp(de->d_name + l - 5, ".yaml") != 0)
			continue;
		char *rel = strprintf("etc/netplan/%s", de->d_name);
		char *text = rel ? guest_file(e->root, rel) : NULL;
		char *want = strprintf("%s:", r->nic);
		ok = text && want && (strstr(text, want) || strstr(text, "macaddress:"));
		free(rel);
		free(text);
		free(want);
	}
	if (dir)
		closedir(dir);
	free(npdir);
	if (!ok)
		return set_fail(r, BOOT_NO_NETWORK,
				strprintf("no network: no configuration for interface %s "
					  "(etc/network/interfaces, etc/netplan)",
					  r->nic));
	return 0;
}

/* ---- mounts, swap, block devices ------------------------------------------ */
static int add_mount(struct boot_result *r, const char *dev, const char *dir, const char *fstype)
{
	struct boot_mount *v = realloc(r->mounts, (r->nmounts + 1) * sizeof *v);
	if (!v)
		return -1;
	r->mounts = v;
	struct boot_mount m = {strdup(dev), strdup(dir), strdup(fstype)};
	if (!m.dev || !m.dir || !m.fstype) {
		free(m.dev);
		free(m.dir);
		free(m.fstype);
		return -1;
	}
	r->mounts[r->nmounts++] = m;
	return 0;
}

static int add_swap(const struct eval *e, char *dev)
{
	struct boot_result *r = e->r;
	struct boot_swap *v = realloc(r->swaps, (r->nswaps + 1) * sizeof *v);
	if (!v) {
		free(dev);
		return -1;
	}
	r->swaps = v;
	struct boot_swap sw = {dev, strncmp(dev, "/dev/", 5) != 0, 0};
	struct stat st;
	char *path = sw.file ? strprintf("%s%s", e->root, dev) : NULL;
	if (path && stat(path, &st) == 0)
		sw.kib = (unsigned long long)st.st_size / 1024;
	free(path);
	r->swaps[r->nswaps++] = sw;
	return 0;
}

static void clear_mounts(struct boot_result *r)
{
	for (size_t i = 0; i < r->nmounts; i++) {
		free(r->mounts[i].dev);
		free(r->mounts[i].dir);
		free(r->mounts[i].fstype);
	}
	free(r->mounts);
	for (size_t i = 0; i < r->nswaps; i++)
		free(r->swaps[i].dev);
	free(r->swaps);
	r->mounts = NULL;
	r->swaps = NULL;
	r->nmounts = r->nswaps = 0;
}

/* Is opt one of the comma-separated options? */
static bool has_opt(const char *opts, const char *opt)
{
	size_t n = strlen(opt);
	for (const char *p = opts; p && *p;) {
		size_t l = strcspn(p, ",");
		if (l == n && strncmp(p, opt, n) == 0)
			return true;
		p += l + (p[l] ? 1 : 0);
	}
	return false;
}

/* Mount the fstab as the booted guest would: the root first, then the other
 * entries in file order (noauto left out); swap that does not resolve is
 * not used, any other entry that does not resolve stops the boot in
 * single-user (FreeBSD) or emergency (Linux) mode. */
static int compute_mounts(struct eval *e)
{
	struct boot_result *r = e->r;
	bool fbsd = e->os.fam == FAM_FREEBSD;
	char *fstab = guest_file(e->root, "etc/fstab");
	char *mtype = NULL, *mdev = NULL;
	int rc = fbsd && loader_mountfrom(e->root, &mtype, &mdev) < 0 ? -1 : 0;
	bool root_done = false;
	if (rc == 0 && mtype && strcmp(mtype, "zfs") == 0) {
		rc = add_mount(r, mdev, "/", "zfs");
		root_done = true;
	}
	for (int pass = 0; rc == 0 && pass < 2 && r->state == BOOT_UP; pass++) {
		size_t len;
		for (const char *p = fstab; rc == 0 && r->state == BOOT_UP && p &&
					    (p = next_line(p, &len)) != NULL;
		     p += len + (p[len] ? 1 : 0)) {
			const char *q = p;
			while (q < p + len && isspace((unsigned char)*q))
				q++;
			if (q >= p + len || *q == '#')
				continue;
			char *f[4];
			for (int i = 0; i < 4; i++)
				f[i] = field(p, len, i);
			bool root = f[1] && strcmp(f[1], "/") == 0;
			bool skip = !f[0] || !f[1] || !f[2] || has_opt(f[3], "noauto") ||
				    (pass == 0) != root || (root && root_done);
			char *kdev = NULL;
			int ok = skip ? 0 : resolve(e, f[0], f[2], &kdev);
			if (skip) {
				/* not this pass */
			} else if (ok < 0) {
				rc = -1;
			} else if (strcmp(f[2], "swap") == 0) {
				if (ok)
					rc = add_swap(e, kdev);
				kdev = NULL;
			} else if (!ok && fbsd) {
				rc = set_fail(r, BOOT_SINGLE_USER,
					      strprintf("single-user mode: cannot mount %s on %s "
							"(etc/fstab): no such device",
							f[0], f[1]));
			} else if (!ok) {
				rc = set_fail(r, BOOT_SINGLE_USER,
					      strprintf("emergency mode: %s for %s (etc/fstab) "
							"not found",
							f[0], f[1]));
			} else {
				/* FreeBSD reports the fstab spec, Linux the device */
				bool spec = fbsd && strcmp(f[2], "zfs") != 0;
				rc = add_mount(r, spec ? f[0] : kdev, f[1], f[2]);
				root_done |= root;
			}
			free(kdev);
			for (int i = 0; i < 4; i++)
				free(f[i]);
		}
		if (rc == 0 && pass == 0 && !root_done && mdev) {
			rc = add_mount(r, mdev, "/", mtype);
			root_done = true;
		}
	}
	free(mtype);
	free(mdev);
	free(fstab);
	return rc;
}

/* Linux block device numbers: sd 8 (16 minors a disk), IDE hda/hdb 3 and
 * hdc/hdd 22 (64 minors), virtio-blk 252 (16). */
static void linux_devno(const char *disk, unsigned *major, unsigned *minor, unsigned *per)
{
	unsigned k = (unsigned)(disk[strlen(disk) - 1] - 'a');
	if (strncmp(disk, "hd", 2) == 0) {
		*major = k < 2 ? 3 : 22;
		*minor = (k % 2) * 64;
		*per = 64;
	} else {
		*major = strncmp(disk, "vd", 2) == 0 ? 252 : 8;
		*minor = k * 16;
		*per = 16;
	}
}

static int add_blockdev(struct boot_result *r, char *name, unsigned major, unsigned minor,
			unsigned long long kib)
{
	if (!name)
		return -1;
	struct boot_blockdev *v = realloc(r->blockdevs, (r->nblockdevs + 1) * sizeof *v);
	if (!v) {
		free(name);
		return -1;
	}
	r->blockdevs = v;
	r->blockdevs[r->nblockdevs++] = (struct boot_blockdev){name, major, minor, kib};
	return 0;
}

/* Partition number of dev ("/dev/vda2" or "vda2") on disk ("vda"), or 0. */
static unsigned part_of(const char *dev, const char *disk)
{
	if (strncmp(dev, "/dev/", 5) == 0)
		dev += 5;
	size_t l = strlen(disk);
	if (strncmp(dev, disk, l) != 0 || !isdigit((unsigned char)dev[l]))
		return 0;
	char *end;
	unsigned long n = strtoul(dev + l, &end, 10);
	return *end || n > 63 ? 0 : (unsigned)n;
}

/* /proc/partitions of a Linux guest: each disk, then its partitions known
 * from the fixture's facts (blkid) and from what it mounted. */
static int linux_blockdevs(struct eval *e)
{
	struct boot_result *r = e->r;
	for (size_t i = 0; i < r->ndisks; i++) {
		const char *disk = r->disks[i];
		uint64_t bytes = 0;
		for (size_t k = 0; k < e->nprim; k++)
			if (strcmp(e->prim[k].name, disk) == 0)
				bytes = e->prim[k].bytes;
		unsigned major, minor, per;
		linux_devno(disk, &major, &minor, &per);
		uint64_t parts = 0; /* bit n: partition n */
		for (size_t k = 0; k < e->lab.map.n; k++) {
			char *cur = current_dev(e, e->lab.map.v[k].dev);
			if (!cur && errno)
				return -1;
			unsigned pn = cur ? part_of(cur, disk) : 0;
			free(cur);
			parts |= pn && pn < per ? 1ULL << pn : 0;
		}
		for (size_t k = 0; k < r->nmounts; k++) {
			unsigned pn = part_of(r->mounts[k].dev, disk);
			parts |= pn && pn < per ? 1ULL << pn : 0;
		}
		for (size_t k = 0; k < r->nswaps; k++) {
			unsigned pn = part_of(r->swaps[k].dev, disk);
			parts |= pn && pn < per ? 1ULL << pn : 0;
		}
		unsigned long long kib = bytes / 1024, nparts = 0;
		for (unsigned pn = 1; pn < 64; pn++)
			nparts += (parts >> pn) & 1;
		if (add_blockdev(r, strdup(disk), major, minor, kib) < 0)
			return -1;
		for (unsigned pn = 1; pn < 64; pn++)
			if ((parts >> pn) & 1 &&
			    add_blockdev(r, strprintf("%s%u", disk, pn), major, minor + pn,
					 kib > 1024 ? (kib - 1024) / nparts : 0) < 0)
				return -1;
	}
	for (size_t k = 0; k < r->nswaps; k++)
		for (size_t i = 0; i < r->nblockdevs; i++)
			if (!r->swaps[k].file && strcmp(r->swaps[k].dev + 5, r->blockdevs[i].name) == 0)
				r->swaps[k].kib = r->blockdevs[i].kib;
	return 0;
}

static const char *bus_name(const struct eval *e)
{
	int idx;
	switch (e->boot_key ? bus_of(e->boot_key, &idx) : -1) {
	case 0: return "ide";
	case 1: return "sata";
	case 2: return virtio_scsi(e->conf) ? "virtio-scsi" : "scsi";
	case 3: return "virtio-blk";
	default: return NULL;
	}
}

int bootmodel_eval(const char *fixture, const char *root, json_object *config,
		   struct boot_result *out)
{
	struct eval e = {.os = parse_fixture(fixture ? fixture : ""),
			 .root = root,
			 .conf = config,
			 .r = out};
	out->state = BOOT_UP;
	size_t n = 0, cap = 0;
	struct disk *d = NULL;
	int rc = 0;
	json_object_object_foreach(config, key, val)
	{
		int idx, bus = bus_of(key, &idx);
		const char *v = json_object_get_string(val);
		if (bus < 0 || !v || drive_is_cdrom(v) || drive_is_cloudinit(v))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			struct disk *nd = realloc(d, cap * sizeof(*nd));
			if (!nd) {
				free(d);
				return -1;
			}
			d = nd;
		}
		d[n].bus = bus;
		d[n].index = idx;
		d[n].key = key;
		n++;
	}
	if (n)
		qsort(d, n, sizeof(*d), cmp_disk);
	e.boot_key = boot_disk(config, d, n);
	out->linux_guest = e.os.fam != FAM_FREEBSD;
	out->disk_bus = bus_name(&e);
	rc = name_disks(&e, d, n);
	free(d);
	if (rc == 0)
		rc = nic_facts(&e);
	if (rc == 0)
		rc = load_labels(root, &e.lab);
	if (rc == 0 && root)
		rc = check_files(root, e.os.fam == FAM_FREEBSD, out);
	if (rc == 0 && !e.boot_key)
		rc = set_fail(out, e.os.fam == FAM_FREEBSD ? BOOT_MOUNTROOT
							  : BOOT_INITRAMFS,
			      strdup("no bootable disk"));
	if (rc == 0 && out->state == BOOT_UP)
		rc = e.os.fam == FAM_FREEBSD ? check_root_freebsd(&e)
					    : check_root_linux(&e);
	if (rc == 0 && out->state == BOOT_UP && root)
		rc = compute_mounts(&e);
	if (rc == 0 && out->state == BOOT_UP)
		rc = check_net(&e);
	else if (rc == 0 && !out->nic) {
		/* still name the NIC for the state */
		struct boot_result tmp = {.state = BOOT_UP};
		struct eval e2 = e;
		e2.r = &tmp;
		e2.root = NULL;
		if (check_net(&e2) == 0 && tmp.nic) {
			out->nic = tmp.nic;
			tmp.nic = NULL;
		}
		boot_result_clear(&tmp);
	}
	if (out->state != BOOT_UP && out->state != BOOT_NO_NETWORK)
		clear_mounts(out); /* it never got to mount the rest */
	if (rc == 0 && out->linux_guest && root)
		rc = linux_blockdevs(&e);
	free(e.boot_dev);
	free(e.prim);
	br_labels_free(&e.lab.map);
	out->reachable = rc == 0 && out->state == BOOT_UP;
	return rc;
}

void boot_result_clear(struct boot_result *r)
{
	for (size_t i = 0; i < r->ndisks; i++)
		free(r->disks[i]);
	free(r->disks);
	free(r->nic);
	free(r->reason);
	free(r->nic_model);
	free(r->mac);
	clear_mounts(r);
	for (size_t i = 0; i < r->nblockdevs; i++)
		free(r->blockdevs[i].name);
	free(r->blockdevs);
	memset(r, 0, sizeof(*r));
}

const char *boot_state_name(enum boot_state s)
{
	switch (s) {
	case BOOT_UP: return "up";
	case BOOT_MOUNTROOT: return "mountroot";
	case BOOT_INITRAMFS: return "initramfs";
	case BOOT_NO_NETWORK: return "no-network";
	case BOOT_SINGLE_USER: return "single-user";
	case BOOT_STOPPED: break;
	}
	return "stopped";
}

json_object *boot_result_json(const struct boot_result *r)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "state",
			       json_object_new_string(boot_state_name(r->state)));
	json_object_object_add(o, "reachable", json_object_new_boolean(r->reachable));
	json_object *disks = json_object_new_array();
	for (size_t i = 0; disks && i < r->ndisks; i++)
		json_object_array_add(disks, json_object_new_string(r->disks[i]));
	json_object_object_add(o, "disk_devices", disks);
	json_object_object_add(o, "nic", r->nic ? json_object_new_string(r->nic) : NULL);
	json_object_object_add(o, "reason",
			       r->reason ? json_object_new_string(r->reason) : NULL);
	json_object_object_add(o, "disk_bus",
			       r->disk_bus ? json_object_new_string(r->disk_bus) : NULL);
	json_object_object_add(o, "nic_model",
			       r->nic_model ? json_object_new_string(r->nic_model) : NULL);
	json_object_object_add(o, "mac", r->mac ? json_object_new_string(r->mac) : NULL);
	json_object *mounts = json_object_new_array();
	for (size_t i = 0; mounts && i < r->nmounts; i++) {
		json_object *m = json_object_new_object();
		if (!m)
			continue;
		json_object_object_add(m, "dev", json_object_new_string(r->mounts[i].dev));
		json_object_object_add(m, "dir", json_object_new_string(r->mounts[i].dir));
		json_object_object_add(m, "fstype", json_object_new_string(r->mounts[i].fstype));
		json_object_array_add(mounts, m);
	}
	json_object_object_add(o, "mounts", mounts);
	json_object *swaps = json_object_new_array();
	for (size_t i = 0; swaps && i < r->nswaps; i++)
		json_object_array_add(swaps, json_object_new_string(r->swaps[i].dev));
	json_object_object_add(o, "swaps", swaps);
	return o;
}
