/* bootmodel.c - the guest boot model (see bootmodel.h): device names from
 * the configured bus and NIC model, root device and driver checks against
 * the guest's files (FreeBSD fstab/loader.conf/rc.conf; Linux fstab, grub,
 * initramfs-tools modules, interfaces/netplan). */
#include "bootmodel.h"

#include "cluster.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum os_family { OS_FREEBSD, OS_UBUNTU, OS_LINUX };

struct os {
	enum os_family fam;
	int ver; /* major * 100 + minor: 9.0 -> 900, 9.04 -> 904, 14 -> 1400 */
};

static struct os parse_fixture(const char *fixture)
{
	struct os os = {OS_LINUX, 0};
	const char *dash = strchr(fixture, '-');
	size_t fl = dash ? (size_t)(dash - fixture) : strlen(fixture);
	if (fl == 7 && strncmp(fixture, "freebsd", 7) == 0)
		os.fam = OS_FREEBSD;
	else if (fl == 6 && strncmp(fixture, "ubuntu", 6) == 0)
		os.fam = OS_UBUNTU;
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

/* loader.conf: is name set to YES (name="YES" / name=YES)? */
static bool loader_yes(const char *text, const char *name)
{
	if (!text)
		return false;
	char *a = strprintf("%s=\"YES\"", name);
	char *b = strprintf("%s=YES", name);
	char *c = strprintf("%s=\"yes\"", name);
	bool ok = a && b && c &&
		  (has_line_prefix(text, a) || has_line_prefix(text, b) ||
		   has_line_prefix(text, c));
	free(a);
	free(b);
	free(c);
	return ok;
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
struct eval {
	struct os os;
	const char *root;
	json_object *conf;
	struct boot_result *r;
	const char *boot_key; /* boot disk config key */
	char *boot_dev;       /* its device name */
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

static int name_disks(struct eval *e, struct disk *d, size_t n)
{
	int seq_ada = 0, seq_da = 0, seq_vtbd = 0, seq_sd = 0, seq_vd = 0;
	bool fbsd = e->os.fam == OS_FREEBSD;
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
			} else if (e->os.fam == OS_UBUNTU && e->os.ver < 800) {
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
		if (alias && add_str(e->r, alias) < 0)
			return -1;
		if (!e->boot_dev && e->boot_key && strcmp(d[i].key, e->boot_key) == 0 &&
		    !(e->boot_dev = strdup(primary)))
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
	char *loader = guest_file(e->root, "boot/loader.conf");
	char *dev = NULL;
	if (loader) {
		size_t len;
		for (const char *p = loader; (p = next_line(p, &len)) != NULL;
		     p += len + (p[len] ? 1 : 0)) {
			const char *k = "vfs.root.mountfrom=";
			if (len > strlen(k) && strncmp(p, k, strlen(k)) == 0) {
				const char *v = p + strlen(k);
				if (*v == '"')
					v++;
				const char *colon = memchr(v, ':', len - (size_t)(v - p));
				const char *end = v;
				while (end < p + len && *end != '"')
					end++;
				if (colon && colon < end)
					dev = strndup(colon + 1, (size_t)(end - colon - 1));
				if (strncmp(v, "zfs:", 4) == 0) {
					free(dev);
					free(loader);
					return 0;
				}
			}
		}
	}
	free(loader);
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
	int rc = 0;
	const char *d = strncmp(dev, "/dev/", 5) == 0 ? dev + 5 : dev;
	static const char *const labels[] = {"gpt/", "gptid/", "ufs/", "ufsid/",
					     "label/", "diskid/", NULL};
	bool label = false;
	for (size_t i = 0; labels[i]; i++)
		label |= strncmp(d, labels[i], strlen(labels[i])) == 0;
	if (!label) {
		size_t l = 0;
		while (isalpha((unsigned char)d[l]))
			l++;
		while (isdigit((unsigned char)d[l]))
			l++;
		char *disk = strndup(d, l);
		if (!disk)
			rc = -1;
		else if (!has_disk(r, disk))
			rc = set_fail(r, BOOT_MOUNTROOT,
				      strprintf("mountroot: root device %s from etc/fstab "
						"does not exist (boot disk is %s)",
						dev, e->boot_dev ? e->boot_dev : "none"));
		free(disk);
	}
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
	if (strncmp(dev, "/dev/", 5) != 0 || strncmp(dev, "/dev/disk/", 10) == 0 ||
	    strncmp(dev, "/dev/mapper/", 12) == 0)
		return 0;
	const char *d = dev + 5;
	size_t l = 0;
	while (isalpha((unsigned char)d[l]))
		l++;
	char *disk = strndup(d, l);
	if (!disk)
		return -1;
	int rc = 0;
	if (!has_disk(e->r, disk))
		rc = set_fail(e->r, BOOT_INITRAMFS,
			      strprintf("initramfs: root device %s from %s does not "
					"exist (boot disk is %s)",
					dev, where, e->boot_dev ? e->boot_dev : "none"));
	free(disk);
	return rc;
}

static int check_root_linux(struct eval *e)
{
	struct boot_result *r = e->r;
	int bus = -1, idx;
	if (e->boot_key)
		bus = bus_of(e->boot_key, &idx);
	bool builtin = e->os.fam == OS_UBUNTU ? e->os.ver >= 1204 : true;
	if (bus == 2 && virtio_scsi(e->conf) && e->os.fam == OS_UBUNTU &&
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

/* NIC name for net0 and whether the guest configures it. */
static int check_net(struct eval *e)
{
	struct boot_result *r = e->r;
	const char *net = NULL;
	int netidx = -1;
	for (int i = 0; i < 32 && !net; i++) {
		char key[16];
		snprintf(key, sizeof(key), "net%d", i);
		net = cfg_str(e->conf, key);
		netidx = i;
	}
	if (!net)
		return set_fail(r, BOOT_NO_NETWORK, strdup("no network: no NIC configured"));
	const char *comma = strchr(net, ',');
	size_t ml = comma ? (size_t)(comma - net) : strlen(net);
	char *model = strndup(net, ml);
	if (!model)
		return -1;
	char *eq = strchr(model, '=');
	if (eq)
		*eq = '\0';
	if (strcmp(model, "model") == 0 && eq)
		memmove(model, eq + 1, strlen(eq + 1) + 1);
	char *link = prop_get(net, "link_down");
	bool down = link && strcmp(link, "1") == 0;
	free(link);
	bool virtio = strcmp(model, "virtio") == 0;
	if (e->os.fam == OS_FREEBSD) {
		const char *drv = virtio				  ? "vtnet"
				  : strcmp(model, "rtl8139") == 0 ? "re"
				  : strcmp(model, "vmxnet3") == 0 ? "vmx"
								  : "em";
		r->nic = strprintf("%s0", drv);
	} else if (e->os.fam == OS_UBUNTU && e->os.ver < 1510) {
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
	if (e->os.fam == OS_FREEBSD && virtio && !fbsd_driver(e, "if_vtnet", true))
		return set_fail(r, BOOT_NO_NETWORK,
				strdup("no network: no driver for the virtio NIC "
				       "(if_vtnet not loaded from boot/loader.conf)"));
	if (!e->root)
		return 0;
	if (e->os.fam == OS_FREEBSD) {
		char *rc_conf = guest_file(e->root, "etc/rc.conf");
		char *want = strprintf("ifconfig_%s=", r->nic);
		bool ok = rc_conf && want &&
			  (has_line_prefix(rc_conf, want) ||
			   has_line_prefix(rc_conf, "ifconfig_DEFAULT="));
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
	rc = name_disks(&e, d, n);
	free(d);
	if (rc == 0 && !e.boot_key)
		rc = set_fail(out, e.os.fam == OS_FREEBSD ? BOOT_MOUNTROOT
							  : BOOT_INITRAMFS,
			      strdup("no bootable disk"));
	if (rc == 0 && out->state == BOOT_UP)
		rc = e.os.fam == OS_FREEBSD ? check_root_freebsd(&e)
					    : check_root_linux(&e);
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
	free(e.boot_dev);
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
	memset(r, 0, sizeof(*r));
}

const char *boot_state_name(enum boot_state s)
{
	switch (s) {
	case BOOT_UP: return "up";
	case BOOT_MOUNTROOT: return "mountroot";
	case BOOT_INITRAMFS: return "initramfs";
	case BOOT_NO_NETWORK: return "no-network";
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
	return o;
}
