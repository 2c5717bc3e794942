/* osprof.c - OS detection from captured command output, per-OS virtio
 * profiles, label/MAC fact parsers and the virtio plan that maps each guest
 * file to its transform (see osprof.h). No I/O. */
#include "osprof.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const osprof_detect_cmds[] = {
	"uname -sr", "freebsd-version -k", "cat /etc/os-release", "lsb_release -a", NULL,
};

static void set_err(char **err, const char *msg)
{
	if (err)
		*err = strdup(msg);
}

/* ---- facts -------------------------------------------------------------------- */

int os_facts_add(struct os_facts *f, const char *cmd, const char *out)
{
	char *c = strdup(cmd), *o = strdup(out ? out : "");
	struct os_fact *v = (c && o) ? realloc(f->v, (f->n + 1) * sizeof *v) : NULL;
	if (!v) {
		free(c);
		free(o);
		return -1;
	}
	f->v = v;
	f->v[f->n].cmd = c;
	f->v[f->n].out = o;
	f->n++;
	return 0;
}

const char *os_facts_get(const struct os_facts *f, const char *cmd)
{
	if (!f)
		return NULL;
	for (size_t i = f->n; i > 0; i--)
		if (strcmp(f->v[i - 1].cmd, cmd) == 0)
			return f->v[i - 1].out;
	return NULL;
}

void os_facts_free(struct os_facts *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].cmd);
		free(f->v[i].out);
	}
	free(f->v);
	f->v = NULL;
	f->n = 0;
}

int os_facts_parse(const char *path, const char *transcript,
		   struct os_facts *f, char **err)
{
	if (err)
		*err = NULL;
	const char *p = transcript ? transcript : "";
	char *cmd = NULL;
	struct sbuf out = {0};
	size_t lineno = 0;
	int rc = 0;
	while (*p && rc == 0) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		lineno++;
		if (len >= 2 && p[0] == '$' && p[1] == ' ') {
			if (cmd) {
				rc = os_facts_add(f, cmd, sbuf_str(&out));
				free(cmd);
				cmd = NULL;
				sbuf_reset(&out);
			}
			if (rc == 0 && !(cmd = strndup(p + 2, len - 2)))
				rc = -1;
		} else if (!cmd) {
			if (len) {
				if (err)
					*err = strprintf("%s:%zu: output before the first \"$ command\" line", path, lineno);
				sbuf_free(&out);
				return -1;
			}
		} else {
			rc = sbuf_addn(&out, p, len);
			if (rc == 0)
				rc = sbuf_addc(&out, '\n');
		}
		p = e ? e + 1 : p + len;
	}
	if (rc == 0 && cmd)
		rc = os_facts_add(f, cmd, sbuf_str(&out));
	free(cmd);
	sbuf_free(&out);
	if (rc < 0)
		set_err(err, "out of memory");
	return rc;
}

/* ---- detection ------------------------------------------------------------------ */

void os_info_free(struct os_info *oi)
{
	free(oi->id);
	free(oi->name);
	free(oi->version);
	free(oi->codename);
	free(oi->pretty);
	free(oi->kernel);
	memset(oi, 0, sizeof *oi);
}

/* "9.0-RELEASE", "2.6.28-11-server", "24.04": up to three numbers */
static int parse_version(const char *s, int *a, int *b, int *c)
{
	*a = *b = 0;
	if (c)
		*c = 0;
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	char *e;
	*a = (int)strtol(s, &e, 10);
	if (*e == '.' && isdigit((unsigned char)e[1])) {
		*b = (int)strtol(e + 1, &e, 10);
		if (c && *e == '.' && isdigit((unsigned char)e[1]))
			*c = (int)strtol(e + 1, &e, 10);
	}
	return 0;
}

/* First line of s, trimmed, malloc'd ("" if empty). */
static char *first_line(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	size_t n = strcspn(s, "\r\n");
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return strndup(s, n);
}

/* Value of KEY= in os-release text (quotes removed), malloc'd or NULL. */
static char *osr_get(const char *text, const char *key)
{
	size_t kl = strlen(key);
	const char *p = text;
	char *val = NULL;
	while (p && *p) {
		size_t len = strcspn(p, "\n");
		if (len > kl && memcmp(p, key, kl) == 0 && p[kl] == '=') {
			const char *v = p + kl + 1;
			size_t vl = len - kl - 1;
			if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
				v++;
				vl -= 2;
			}
			free(val);
			val = strndup(v, vl);
			if (!val)
				return NULL;
		}
		p += len;
		if (*p)
			p++;
	}
	return val;
}

/* "Release:\t9.04" from lsb_release -a */
static char *lsb_get(const char *text, const char *key)
{
	size_t kl = strlen(key);
	const char *p = text;
	while (p && *p) {
		size_t len = strcspn(p, "\n");
		if (len > kl && memcmp(p, key, kl) == 0 && p[kl] == ':') {
			const char *v = p + kl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			size_t vl = len - (size_t)(v - p);
			while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r'))
				vl--;
			return strndup(v, vl);
		}
		p += len;
		if (*p)
			p++;
	}
	return NULL;
}

static char *lower_dup(const char *s)
{
	char *r = strdup(s);
	for (char *q = r; q && *q; q++)
		*q = (char)tolower((unsigned char)*q);
	return r;
}

int osprof_detect(const struct os_facts *f, struct os_info *oi, char **err)
{
	memset(oi, 0, sizeof *oi);
	if (err)
		*err = NULL;
	const char *un = os_facts_get(f, "uname -sr");
	char *line = un ? first_line(un) : NULL;
	if (un && !line)
		goto nomem;
	if (line && strncmp(line, "FreeBSD ", 8) == 0) {
		oi->family = OS_FREEBSD;
		if (!(oi->kernel = strdup(line + 8)))
			goto nomem;
	} else if (line && strncmp(line, "Linux ", 6) == 0) {
		oi->family = OS_LINUX;
		if (!(oi->kernel = strdup(line + 6)))
			goto nomem;
	}
	free(line);
	line = NULL;
	if (oi->kernel)
		parse_version(oi->kernel, &oi->kmajor, &oi->kminor, &oi->kpatch);

	if (oi->family == OS_FREEBSD) {
		const char *fv = os_facts_get(f, "freebsd-version -k");
		char *v = fv ? first_line(fv) : NULL;
		int a, b;
		if (v && parse_version(v, &a, &b, NULL) == 0 && strchr(v, '-')) {
			oi->version = v;
		} else {
			free(v);
			if (!oi->kernel || !(oi->version = strdup(oi->kernel)))
				goto nomem;
		}
		parse_version(oi->version, &oi->major, &oi->minor, NULL);
		if (!(oi->id = strdup("freebsd")) || !(oi->name = strdup("FreeBSD")))
			goto nomem;
		if (oi->major == 0)
			goto unknown;
		return 0;
	}

	const char *osr = os_facts_get(f, "cat /etc/os-release");
	char *id = osr ? osr_get(osr, "ID") : NULL;
	if (id && *id) {
		if (oi->family == OS_UNKNOWN)
			oi->family = OS_LINUX;
		oi->id = id;
		oi->name = osr_get(osr, "NAME");
		oi->version = osr_get(osr, "VERSION_ID");
		oi->pretty = osr_get(osr, "PRETTY_NAME");
		oi->codename = osr_get(osr, "VERSION_CODENAME");
		if (!oi->codename)
			oi->codename = osr_get(osr, "UBUNTU_CODENAME");
	} else {
		free(id);
		const char *lsb = os_facts_get(f, "lsb_release -a");
		char *dist = lsb ? lsb_get(lsb, "Distributor ID") : NULL;
		if (dist && *dist) {
			if (oi->family == OS_UNKNOWN)
				oi->family = OS_LINUX;
			oi->name = dist;
			if (!(oi->id = lower_dup(dist)))
				goto nomem;
			oi->version = lsb_get(lsb, "Release");
			oi->pretty = lsb_get(lsb, "Description");
			oi->codename = lsb_get(lsb, "Codename");
		} else {
			free(dist);
		}
	}
	if (oi->family != OS_LINUX || !oi->id)
		goto unknown;
	if (oi->version)
		parse_version(oi->version, &oi->major, &oi->minor, NULL);
	return 0;
nomem:
	free(line);
	os_info_free(oi);
	set_err(err, "out of memory");
	return -1;
unknown:
	os_info_free(oi);
	set_err(err, "cannot tell the guest OS: no usable uname -sr, /etc/os-release or lsb_release output");
	return -1;
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
	set_err(err, "unknown OS family");
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
	}
	return NULL;
}

char *osprof_nic_name(const struct os_profile *p, const char *model, unsigned idx)
{
	errno = 0;
	if (p->family != OS_FREEBSD)
		return NULL;
	if (strcmp(model, "e1000") == 0)
		return strprintf("%s%u", p->nic_e1000, idx);
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
		set_err(err, "out of memory");
	}
	return rc;
}

/* ---- virtio plan ------------------------------------------------------------------------ */

void virtio_plan_free(struct virtio_plan *vp)
{
	name_map_free(&vp->disks);
	name_map_free(&vp->nics);
	name_map_free(&vp->labels);
	name_map_free(&vp->macs);
}

static int add_owned(struct name_map *m, char *from, char *to)
{
	int rc = (from && to) ? name_map_add(m, from, to) : -1;
	free(from);
	free(to);
	return rc;
}

int virtio_plan_init(struct virtio_plan *vp, const struct os_profile *p,
		     enum vbus bus, unsigned ndisks, unsigned nnics,
		     const struct os_facts *facts, char **err)
{
	memset(vp, 0, sizeof *vp);
	if (err)
		*err = NULL;
	if (osprof_check_bus(p, bus, err) < 0)
		return -1;
	vp->prof = *p;
	vp->bus = bus;
	enum dbus nb = bus == VBUS_VIRTIO_SCSI ? DBUS_VIRTIO_SCSI : DBUS_VIRTIO_BLK;
	int rc = 0;
	for (unsigned i = 0; i < ndisks && rc == 0; i++) {
		char *from = osprof_disk_name(p, DBUS_IDE, i);
		char *to = osprof_disk_name(p, nb, i);
		if (from && to && strcmp(from, to) == 0) { /* Linux IDE -> virtio-scsi: sda stays sda */
			free(from);
			free(to);
			continue;
		}
		rc = add_owned(&vp->disks, from, to);
		if (rc == 0 && p->ide_legacy) {
			unsigned slot = i < 2 ? i : i + 1;
			rc = add_owned(&vp->disks, strprintf("%s%u", p->ide_legacy, slot),
				       osprof_disk_name(p, nb, i));
		}
	}
	for (unsigned i = 0; i < nnics && rc == 0; i++) {
		char *from = osprof_nic_name(p, "e1000", i);
		char *to = osprof_nic_name(p, "virtio", i);
		if (!from && !to)
			continue;
		rc = add_owned(&vp->nics, from, to);
	}
	for (size_t i = 0; facts && i < facts->n && rc == 0; i++) {
		const char *cmd = facts->v[i].cmd, *out = facts->v[i].out;
		if (strncmp(cmd, "gpart show", 10) == 0 && strstr(cmd, "-l"))
			rc = osprof_parse_gpart_labels(out, &vp->labels);
		else if (strcmp(cmd, "blkid") == 0 || strncmp(cmd, "blkid ", 6) == 0)
			rc = osprof_parse_blkid(out, &vp->labels);
		else if (strncmp(cmd, "ip -o link", 10) == 0)
			rc = osprof_parse_ip_link(out, &vp->macs);
		else if (strncmp(cmd, "dumpfs ", 7) == 0) {
			const char *d = strstr(cmd, "/dev/");
			if (d) {
				char *dev = strndup(d + 5, strcspn(d + 5, " |"));
				rc = dev ? osprof_parse_dumpfs(dev, out, &vp->labels) : -1;
				free(dev);
			}
		}
	}
	if (rc < 0) {
		virtio_plan_free(vp);
		set_err(err, "out of memory");
	}
	return rc;
}

static const char *const freebsd_files[] = {"boot/loader.conf", "etc/fstab", "etc/rc.conf", NULL};
static const char *const linux_files[] = {
	"etc/fstab", "boot/grub/menu.lst", "etc/default/grub", "etc/initramfs-tools/modules",
	"etc/initramfs-tools/conf.d/resume", "boot/grub/device.map",
	"etc/network/interfaces", "etc/udev/rules.d/70-persistent-net.rules", "etc/netplan/*.yaml", NULL,
};

const char *const *virtio_plan_files(const struct virtio_plan *vp)
{
	return vp->prof.family == OS_FREEBSD ? freebsd_files : linux_files;
}

static int is_netplan(const char *path)
{
	size_t n = strlen(path);
	return strncmp(path, "etc/netplan/", 12) == 0 && !strchr(path + 12, '/') &&
	       n > 17 && strcmp(path + n - 5, ".yaml") == 0;
}

int virtio_plan_touches(const struct virtio_plan *vp, const char *path)
{
	while (*path == '/')
		path++;
	for (const char *const *f = virtio_plan_files(vp); *f; f++)
		if (strcmp(*f, path) == 0)
			return 1;
	return vp->prof.family == OS_LINUX && is_netplan(path);
}

/* Apply a NIC-map-driven transform for each pair, chaining results. */
typedef int (*nic_fn)(const char *path, const char *text, const char *oldif,
		      const char *newif, enum rw_phase phase, char **out, char **err);

static int chain_nics(const struct name_map *nics, nic_fn fn, const char *path,
		      const char *text, enum rw_phase phase, char **out, char **err)
{
	char *cur = strdup(text);
	if (!cur) {
		set_err(err, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < nics->n; i++) {
		char *next;
		if (fn(path, cur, nics->v[i].from, nics->v[i].to, phase, &next, err) < 0) {
			free(cur);
			return -1;
		}
		free(cur);
		cur = next;
	}
	*out = cur;
	return 0;
}

int virtio_transform(const struct virtio_plan *vp, enum rw_phase phase,
		     const char *path, const char *text, char **out,
		     struct sbuf *notes, char **err)
{
	*out = NULL;
	if (err)
		*err = NULL;
	while (*path == '/')
		path++;
	if (!text)
		text = "";
	struct rw_devmaps dm = {&vp->disks, &vp->labels};
	if (strcmp(path, "etc/fstab") == 0)
		return rw_fstab(path, text, &dm, phase, out, notes, err);
	if (vp->prof.family == OS_FREEBSD) {
		if (strcmp(path, "boot/loader.conf") == 0) {
			const struct rw_kv *kv;
			size_t n;
			osprof_loader_lines(&vp->prof, vp->bus, &kv, &n);
			return rw_kv_ensure(path, text, kv, n, 1, out, err);
		}
		if (strcmp(path, "etc/rc.conf") == 0)
			return chain_nics(&vp->nics, rw_rcconf_nic, path, text, phase, out, err);
	} else {
		if (strcmp(path, "boot/grub/menu.lst") == 0 || strcmp(path, "etc/default/grub") == 0 ||
		    strcmp(path, "boot/grub/device.map") == 0 ||
		    strcmp(path, "etc/initramfs-tools/conf.d/resume") == 0)
			return rw_grub(path, text, &dm, phase, out, notes, err);
		if (strcmp(path, "etc/initramfs-tools/modules") == 0) {
			const char *const *mods;
			size_t n;
			osprof_initramfs_modules(&vp->prof, vp->bus, &mods, &n);
			return rw_modules_ensure(path, text, mods, n, out, err);
		}
		if (strcmp(path, "etc/network/interfaces") == 0)
			return chain_nics(&vp->nics, rw_interfaces_nic, path, text, phase, out, err);
		if (strcmp(path, "etc/udev/rules.d/70-persistent-net.rules") == 0)
			return rw_udev_net(path, text, &vp->nics, out, err);
		if (is_netplan(path)) {
			char *cur = strdup(text);
			if (!cur) {
				set_err(err, "out of memory");
				return -1;
			}
			for (size_t i = 0; i < vp->macs.n; i++) {
				char *next;
				if (rw_netplan_pin_mac(path, cur, vp->macs.v[i].from, vp->macs.v[i].to,
						       &next, err) < 0) {
					free(cur);
					return -1;
				}
				free(cur);
				cur = next;
			}
			*out = cur;
			return 0;
		}
	}
	*out = strdup(text);
	if (!*out) {
		set_err(err, "out of memory");
		return -1;
	}
	return 0;
}
