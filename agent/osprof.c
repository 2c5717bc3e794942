/* osprof.c - per-OS virtio profiles and naming (see osprof.h): the profile
 * of an OS and version, the buses it supports, loader.conf lines, initramfs
 * modules, disk and NIC names per bus, the label and MAC fact parsers and
 * the commands that gather those facts. Facts and detection are in
 * osprof_detect.c, the virtio plan in virtio_plan.c. No I/O. */
#include "osprof_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void osprofi_set_err(char **err, const char *msg)
{
	if (err)
		*err = strdup(msg);
}

/* ---- profiles ---------------------------------------------------------------------- */

static const struct rw_kv freebsd_kmod_lines[] = {
	{"virtio_load", "YES"},
	{"virtio_pci_load", "YES"},
	{"virtio_blk_load", "YES"},
	{"if_vtnet_load", "YES"},
	{"virtio_balloon_load", "YES"},
};

static const char *const linux_mods_blk[] = {"virtio_pci", "virtio_blk", "virtio_net"};
static const char *const linux_mods_scsi[] = {"virtio_pci", "virtio_blk", "virtio_net", "virtio_scsi"};

static int vless(int a, int b, int c, int d)
{
	return a < c || (a == c && b < d);
}

int osprof_for(const struct os_info *oi, struct os_profile *p, char **err)
{
	memset(p, 0, sizeof *p);
	if (err)
		*err = NULL;
	p->family = oi->family;
	p->major = oi->major;
	p->minor = oi->minor;
	if (oi->family == OS_FREEBSD) {
		int M = oi->major, m = oi->minor;
		if (vless(M, m, 8, 2)) {
			if (err)
				*err = strprintf("FreeBSD %d.%d has no virtio drivers (virtio-kmod supports 8.2, 8.3, 9.0, 9.1; GENERIC from 8.4/9.2)", M, m);
			return -1;
		}
		int kmod = (M == 8 && (m == 2 || m == 3)) || (M == 9 && m <= 1);
		p->virtio_builtin = !kmod;
		if (kmod) {
			static const char *const pkgs[] = {"virtio-kmod-8.2", "virtio-kmod-8.3",
							   "virtio-kmod-9.0", "virtio-kmod-9.1"};
			static const char *const cmds[] = {"pkg_add -r virtio-kmod-8.2", "pkg_add -r virtio-kmod-8.3",
							   "pkg_add -r virtio-kmod-9.0", "pkg_add -r virtio-kmod-9.1"};
			int k = M == 8 ? m - 2 : 2 + m;
			p->kmod_pkg = pkgs[k];
			p->kmod_install = cmds[k];
			p->kmod_check = "/boot/modules/virtio_blk.ko";
			p->scsi = VS_NO;
		} else {
			p->scsi = VS_YES;
		}
		p->ide_disk = M < 9 ? "ad" : "ada";
		p->ide_legacy = M == 9 ? "ad" : NULL;
		p->ide_by_slot = M < 9;
		p->blk_disk = "vtbd";
		p->scsi_disk = "da";
		p->nic_e1000 = "em";
		p->nic_virtio = "vtnet";
		p->distro = "freebsd";
		return 0;
	}
	if (oi->family == OS_LINUX) {
		const char *id = oi->id ? oi->id : "";
		if (strcmp(id, "ubuntu") != 0 && strcmp(id, "debian") != 0) {
			if (err)
				*err = strprintf("no virtio profile for Linux distribution \"%s\" (initramfs-tools distributions only)", id);
			return -1;
		}
		if (vless(oi->kmajor, oi->kminor, 2, 6) ||
		    (oi->kmajor == 2 && oi->kminor == 6 && oi->kpatch < 25)) {
			if (err)
				*err = strprintf("Linux %d.%d.%d has no usable virtio-blk/virtio-net (needs 2.6.25)",
						 oi->kmajor, oi->kminor, oi->kpatch);
			return -1;
		}
		p->virtio_builtin = 0;
		p->scsi = vless(oi->kmajor, oi->kminor, 3, 0) ? VS_NO
			  : vless(oi->kmajor, oi->kminor, 3, 4) ? VS_CHECK : VS_YES;
		p->ide_disk = "sd";
		p->blk_disk = "vd";
		p->scsi_disk = "sd";
		p->scsi_disk_letters = 1;
		p->initramfs_update = "update-initramfs -u -k all";
		p->grub_update = "update-grub";
		p->distro = strcmp(id, "ubuntu") == 0 ? "ubuntu" : "debian";
		p->kmajor = oi->kmajor;
		p->kminor = oi->kminor;
		return 0;
	}
	osprofi_set_err(err, "unknown OS family");
	return -1;
}

char *osprof_describe(const struct os_profile *p)
{
	if (p->family == OS_FREEBSD)
		return strprintf("FreeBSD %d.%d (%s)", p->major, p->minor,
				 p->virtio_builtin ? "virtio in GENERIC" : "virtio-kmod");
	if (p->family == OS_LINUX)
		return strprintf(p->distro && strcmp(p->distro, "ubuntu") == 0
					 ? "%s %d.%02d (Linux %d.%d)" : "%s %d.%d (Linux %d.%d)",
				 p->distro ? p->distro : "linux", p->major, p->minor,
				 p->kmajor, p->kminor);
	return strdup("unknown OS");
}

int osprof_check_bus(const struct os_profile *p, enum vbus bus, char **err)
{
	if (err)
		*err = NULL;
	if (bus == VBUS_VIRTIO_SCSI && p->scsi == VS_NO) {
		if (err) {
			char *d = osprof_describe(p);
			*err = strprintf("%s: virtio-scsi is not available; use virtio-blk",
					 d ? d : "this OS");
			free(d);
		}
		return -1;
	}
	return 0;
}

void osprof_loader_lines(const struct os_profile *p, enum vbus bus,
			 const struct rw_kv **kv, size_t *n)
{
	*kv = NULL;
	*n = 0;
	if (p->family == OS_FREEBSD && !p->virtio_builtin && bus == VBUS_VIRTIO_BLK) {
		*kv = freebsd_kmod_lines;
		*n = sizeof freebsd_kmod_lines / sizeof freebsd_kmod_lines[0];
	}
}

void osprof_initramfs_modules(const struct os_profile *p, enum vbus bus,
			      const char *const **mods, size_t *n)
{
	*mods = NULL;
	*n = 0;
	if (p->family != OS_LINUX)
		return;
	if (bus == VBUS_VIRTIO_SCSI) {
		*mods = linux_mods_scsi;
		*n = sizeof linux_mods_scsi / sizeof linux_mods_scsi[0];
	} else {
		*mods = linux_mods_blk;
		*n = sizeof linux_mods_blk / sizeof linux_mods_blk[0];
	}
}

static char *letters_name(const char *prefix, unsigned idx)
{
	/* sda..sdz, sdaa.. */
	char suf[8];
	size_t k = sizeof suf - 1;
	suf[k] = '\0';
	unsigned v = idx;
	do {
		suf[--k] = (char)('a' + v % 26);
		v /= 26;
	} while (v-- > 0 && k > 0);
	return strprintf("%s%s", prefix, suf + k);
}

char *osprof_disk_name(const struct os_profile *p, enum dbus bus, unsigned idx)
{
	errno = 0;
	switch (bus) {
	case DBUS_IDE:
		if (p->family == OS_LINUX)
			return letters_name(p->ide_disk, idx);
		return strprintf("%s%u", p->ide_disk, p->ide_by_slot ? (idx < 2 ? idx : idx + 1) : idx);
	case DBUS_VIRTIO_BLK:
		if (p->family == OS_LINUX)
			return letters_name(p->blk_disk, idx);
		return strprintf("%s%u", p->blk_disk, idx);
	case DBUS_VIRTIO_SCSI:
		if (p->scsi_disk_letters)
			return letters_name(p->scsi_disk, idx);
		return strprintf("%s%u", p->scsi_disk, idx);
	case DBUS_SATA:
		if (p->family == OS_LINUX)
			return letters_name("sd", idx);
		return strprintf("ada%u", idx);
	}
	return NULL;
}

char *osprof_nic_name(const struct os_profile *p, const char *model, unsigned idx)
{
	errno = 0;
	if (p->family != OS_FREEBSD)
		return NULL;
	if (strcmp(model, "e1000") == 0 || strcmp(model, "e1000e") == 0)
		return strprintf("%s%u", p->nic_e1000, idx);
	if (strcmp(model, "vmxnet3") == 0)
		return strprintf("vmx%u", idx);
	if (strcmp(model, "virtio") == 0)
		return strprintf("%s%u", p->nic_virtio, idx);
	if (strcmp(model, "rtl8139") == 0)
		return strprintf("re%u", idx);
	return NULL;
}

/* ---- label and MAC facts -------------------------------------------------------------- */

/* Split a line into up to max whitespace-separated words (pointers into a
 * modifiable copy). */
static size_t words(char *s, char **w, size_t max)
{
	size_t n = 0;
	char *save = NULL;
	for (char *t = strtok_r(s, " \t\r", &save); t && n < max; t = strtok_r(NULL, " \t\r", &save))
		w[n++] = t;
	return n;
}

int osprof_parse_gpart_labels(const char *out, struct name_map *labels)
{
	char *copy = strdup(out ? out : "");
	if (!copy)
		return -1;
	char *provider = NULL; /* current GPT provider, NULL outside one */
	int rc = 0;
	char *save = NULL;
	for (char *ln = strtok_r(copy, "\n", &save); ln && rc == 0; ln = strtok_r(NULL, "\n", &save)) {
		char *w[8];
		size_t n = words(ln, w, 8);
		if (n >= 5 && strcmp(w[0], "=>") == 0) {
			free(provider);
			provider = NULL;
			if (strcmp(w[4], "GPT") == 0 && !(provider = strdup(w[3])))
				rc = -1;
			continue;
		}
		if (!provider || n < 4 || !isdigit((unsigned char)w[2][0]) || w[3][0] == '(')
			continue; /* not GPT, "- free -", or "(null)" */
		char *dev = strprintf("%sp%s", provider, w[2]);
		char *lab = strprintf("/dev/gpt/%s", w[3]);
		if (!dev || !lab || name_map_add(labels, dev, lab) < 0)
			rc = -1;
		free(dev);
		free(lab);
	}
	free(provider);
	free(copy);
	return rc;
}

int osprof_parse_dumpfs(const char *dev, const char *out, struct name_map *labels)
{
	const char *p = out ? strstr(out, "superblock location") : NULL;
	if (!p)
		return 0;
	p = strchr(p, '[');
	unsigned long a, b;
	if (!p || sscanf(p, "[ %lx %lx ]", &a, &b) != 2 || (a == 0 && b == 0))
		return 0;
	char *lab = strprintf("/dev/ufsid/%08lx%08lx", a, b);
	int rc = lab ? name_map_add(labels, dev, lab) : -1;
	free(lab);
	return rc;
}

int osprof_parse_blkid(const char *out, struct name_map *labels)
{
	const char *p = out ? out : "";
	int rc = 0;
	while (*p && rc == 0) {
		size_t len = strcspn(p, "\n");
		const char *colon = memchr(p, ':', len);
		const char *u = NULL;
		for (const char *q = p; q + 7 <= p + len; q++)
			if (memcmp(q, " UUID=\"", 7) == 0) {
				u = q + 7;
				break;
			}
		if (colon && u && len > 5 && memcmp(p, "/dev/", 5) == 0) {
			const char *ue = memchr(u, '"', (size_t)(p + len - u));
			char *dev = strndup(p + 5, (size_t)(colon - p - 5));
			char *val = ue ? strprintf("UUID=%.*s", (int)(ue - u), u) : NULL;
			if (dev && val && !strchr(dev, '/'))
				rc = name_map_add(labels, dev, val);
			else if (!dev || (ue && !val))
				rc = -1;
			free(dev);
			free(val);
		}
		p += len;
		if (*p)
			p++;
	}
	return rc;
}

int osprof_parse_ip_link(const char *out, struct name_map *macs)
{
	const char *p = out ? out : "";
	int rc = 0;
	while (*p && rc == 0) {
		size_t len = strcspn(p, "\n");
		char *ln = strndup(p, len);
		if (!ln)
			return -1;
		/* "2: eth0: <...> ... link/ether MAC brd ..." */
		char *c1 = strchr(ln, ':');
		char *le = strstr(ln, "link/ether ");
		if (c1 && le && isdigit((unsigned char)ln[0])) {
			char *name = c1 + 1;
			while (*name == ' ')
				name++;
			size_t nl = strcspn(name, ":@ ");
			char *mac = le + 11;
			size_t ml = strcspn(mac, " \t\\");
			if (nl && ml == 17) {
				name[nl] = '\0';
				mac[ml] = '\0';
				rc = name_map_add(macs, name, mac);
			}
		}
		free(ln);
		p += len;
		if (*p)
			p++;
	}
	return rc;
}

void osprof_cmds_free(char **cmds)
{
	for (size_t i = 0; cmds && cmds[i]; i++)
		free(cmds[i]);
	free(cmds);
}

static int cmds_add(char ***cmds, size_t *n, char *c)
{
	if (!c)
		return -1;
	char **v = realloc(*cmds, (*n + 2) * sizeof *v);
	if (!v) {
		free(c);
		return -1;
	}
	v[(*n)++] = c;
	v[*n] = NULL;
	*cmds = v;
	return 0;
}

int osprof_fact_cmds(const struct os_profile *p, const char *fstab,
		     char ***cmds, char **err)
{
	*cmds = NULL;
	if (err)
		*err = NULL;
	size_t n = 0;
	int rc = 0;
	if (p->family == OS_LINUX) {
		rc = cmds_add(cmds, &n, strdup("blkid"));
		if (rc == 0)
			rc = cmds_add(cmds, &n, strdup("ip -o link"));
	} else if (p->family == OS_FREEBSD) {
		struct rw_fstab_ent *e = NULL;
		size_t ne = 0;
		if (rw_fstab_parse("etc/fstab", fstab, &e, &ne, err) < 0)
			return -1;
		rc = cmds_add(cmds, &n, strdup("gpart show -l"));
		for (size_t i = 0; i < ne && rc == 0; i++) {
			const char *sp = e[i].spec;
			if (strcmp(e[i].type, "ufs") != 0 || strncmp(sp, "/dev/", 5) != 0 ||
			    strchr(sp + 5, '/'))
				continue;
			rc = cmds_add(cmds, &n, strprintf("dumpfs %s | head -n 2", sp));
		}
		rw_fstab_ents_free(e, ne);
	}
	if (rc == 0 && !*cmds && !(*cmds = calloc(1, sizeof **cmds)))
		rc = -1;
	if (rc < 0) {
		osprof_cmds_free(*cmds);
		*cmds = NULL;
		osprofi_set_err(err, "out of memory");
	}
	return rc;
}
