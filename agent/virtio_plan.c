/* virtio_plan.c - the virtio plan (see osprof.h): from a profile and the
 * facts, the new disk and NIC names and the label and MAC maps, the guest
 * files the plan touches, and the transform of each file for a phase
 * (rewrite.h). No I/O. */
#include "osprof_int.h"

#include <stdlib.h>
#include <string.h>

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
	return virtio_plan_init_from(vp, p, DBUS_IDE, "e1000", bus, ndisks, nnics, facts, err);
}

int virtio_plan_init_from(struct virtio_plan *vp, const struct os_profile *p, enum dbus src,
			  const char *nic_model, enum vbus bus, unsigned ndisks, unsigned nnics,
			  const struct os_facts *facts, char **err)
{
	memset(vp, 0, sizeof *vp);
	if (err)
		*err = NULL;
	if (osprof_check_bus(p, bus, err) < 0)
		return -1;
	if (src == DBUS_SATA && p->family == OS_FREEBSD && p->major < 9) {
		osprofi_set_err(err, "FreeBSD before 9 numbers SATA disks by ata(4) channel: "
				"pvagent converts SATA disks on FreeBSD 9 and later");
		return -1;
	}
	vp->prof = *p;
	vp->bus = bus;
	enum dbus nb = bus == VBUS_VIRTIO_SCSI ? DBUS_VIRTIO_SCSI : DBUS_VIRTIO_BLK;
	int rc = 0;
	for (unsigned i = 0; i < ndisks && rc == 0; i++) {
		char *from = osprof_disk_name(p, src, i);
		char *to = osprof_disk_name(p, nb, i);
		if (from && to && strcmp(from, to) == 0) { /* Linux IDE -> virtio-scsi: sda stays sda */
			free(from);
			free(to);
			continue;
		}
		rc = add_owned(&vp->disks, from, to);
		if (rc == 0 && p->ide_legacy && src == DBUS_IDE) {
			unsigned slot = i < 2 ? i : i + 1;
			rc = add_owned(&vp->disks, strprintf("%s%u", p->ide_legacy, slot),
				       osprof_disk_name(p, nb, i));
		}
	}
	for (unsigned i = 0; i < nnics && rc == 0; i++) {
		char *from = osprof_nic_name(p, nic_model, i);
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
		osprofi_set_err(err, "out of memory");
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
		osprofi_set_err(err, "out of memory");
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
				osprofi_set_err(err, "out of memory");
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
		osprofi_set_err(err, "out of memory");
		return -1;
	}
	return 0;
}
