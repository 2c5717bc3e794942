/* bootfacts.c - the boot model's verdict as files in the guest root:
 * .pvagent-facts/boot and, for Linux, proc/mounts, proc/swaps and
 * proc/partitions (see bootfacts.h). */
#include "bootfacts.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The lines of a guest that is running; nonzero when out of memory. */
static int add_booted(struct sbuf *b, const struct boot_result *r, const char *address,
		      unsigned boot_id)
{
	int bad = sbuf_addf(b, "boot-id %u\n", boot_id) < 0;
	if (r->disk_bus)
		bad |= sbuf_addf(b, "disk-bus %s\n", r->disk_bus) < 0;
	if (r->nic_model)
		bad |= sbuf_addf(b, "nic-model %s\n", r->nic_model) < 0;
	for (size_t i = 0; i < r->ndisks; i++)
		bad |= sbuf_addf(b, "disk %s\n", r->disks[i]) < 0;
	if (r->nic)
		bad |= sbuf_addf(b, "nic %s\n", r->nic) < 0;
	if (r->mac)
		bad |= sbuf_addf(b, "mac %s\n", r->mac) < 0;
	if (r->state == BOOT_UP && address)
		bad |= sbuf_addf(b, "address %s\n", address) < 0;
	for (size_t i = 0; i < r->nmounts; i++)
		bad |= sbuf_addf(b, "mount %s %s %s\n", r->mounts[i].dev, r->mounts[i].dir,
				 r->mounts[i].fstype) < 0;
	for (size_t i = 0; i < r->nswaps; i++)
		bad |= sbuf_addf(b, "swap %s\n", r->swaps[i].dev) < 0;
	if (r->state != BOOT_UP && r->reason)
		bad |= sbuf_addf(b, "reason %s\n", r->reason) < 0;
	return bad;
}

char *bootfacts_text(const struct boot_result *r, const char *address, unsigned boot_id)
{
	struct sbuf b = {0};
	int bad = sbuf_addf(&b, "state %s\nreachable %s\n", boot_state_name(r->state),
			    r->reachable ? "yes" : "no") < 0;
	if (r->state != BOOT_STOPPED)
		bad |= add_booted(&b, r, address, boot_id);
	if (bad) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

static bool virtual_fs(const char *fstype)
{
	static const char *const v[] = {"proc", "sysfs", "devtmpfs", "devpts", "tmpfs", NULL};
	for (size_t i = 0; v[i]; i++)
		if (strcmp(fstype, v[i]) == 0)
			return true;
	return false;
}

/* "DEV DIR FSTYPE OPTIONS 0 0": the mounts, then sysfs and proc where the
 * fstab did not name them (the kernel has them anyway). */
char *bootfacts_proc_mounts(const struct boot_result *r)
{
	struct sbuf b = {0};
	int bad = sbuf_add(&b, "") < 0;
	bool proc = false, sys = false;
	for (size_t i = 0; i < r->nmounts; i++) {
		const struct boot_mount *m = &r->mounts[i];
		proc |= strcmp(m->dir, "/proc") == 0;
		sys |= strcmp(m->dir, "/sys") == 0;
		bad |= sbuf_addf(&b, "%s %s %s %s 0 0\n", m->dev, m->dir, m->fstype,
				 virtual_fs(m->fstype) ? "rw,nosuid,nodev,noexec,relatime"
						       : "rw,relatime") < 0;
	}
	if (!sys)
		bad |= sbuf_add(&b, "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n") < 0;
	if (!proc)
		bad |= sbuf_add(&b, "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n") < 0;
	if (bad) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

/* mm/swapfile.c swap_show(): the path padded to 40 columns, type, size and
 * used in KiB, priority (-2, -3, ... as swapon assigns them). */
char *bootfacts_proc_swaps(const struct boot_result *r)
{
	struct sbuf b = {0};
	int bad = sbuf_add(&b, "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n") < 0;
	for (size_t i = 0; i < r->nswaps; i++) {
		const struct boot_swap *s = &r->swaps[i];
		size_t len = strlen(s->dev);
		bad |= sbuf_addf(&b, "%s%*s%s\t%llu\t%s%llu\t%s%d\n", s->dev,
				 len < 40 ? (int)(40 - len) : 1, "", s->file ? "file" : "partition",
				 s->kib, s->kib < 10000000 ? "\t" : "", 0ULL, "\t",
				 -2 - (int)i) < 0;
	}
	if (bad) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

/* block/genhd.c show_partition(): "%4d  %7d %10llu %s". */
char *bootfacts_proc_partitions(const struct boot_result *r)
{
	struct sbuf b = {0};
	int bad = sbuf_add(&b, "major minor  #blocks  name\n\n") < 0;
	for (size_t i = 0; i < r->nblockdevs; i++) {
		const struct boot_blockdev *d = &r->blockdevs[i];
		bad |= sbuf_addf(&b, "%4u  %7u %10llu %s\n", d->major, d->minor, d->kib,
				 d->name) < 0;
	}
	if (bad) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

static int mkdir_in(const char *root, const char *rel, char **err)
{
	char *dir = strprintf("%s/%s", root, rel);
	if (!dir) {
		*err = strdup("out of memory");
		return -1;
	}
	int rc = 0;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		*err = strprintf("cannot create %s: %s", dir, strerror(errno));
		rc = -1;
	}
	free(dir);
	return rc;
}

/* Replace root/rel/name with text: a temp file in the same directory,
 * renamed over it, so a reader sees the old file or the new one. */
static int replace_file(const char *root, const char *rel, const char *name,
			const char *text, char **err)
{
	char *path = strprintf("%s/%s/%s", root, rel, name);
	char *tmp = strprintf("%s/%s/.%s.XXXXXX", root, rel, name);
	if (!path || !tmp || !text) {
		free(path);
		free(tmp);
		*err = strdup("out of memory");
		return -1;
	}
	int rc = -1;
	int fd = mkstemp(tmp);
	if (fd < 0) {
		*err = strprintf("cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	size_t n = strlen(text);
	bool ok = write(fd, text, n) == (ssize_t)n && fchmod(fd, 0644) == 0;
	int saved = errno;
	if (close(fd) < 0 && ok) {
		ok = false;
		saved = errno;
	}
	if (!ok || rename(tmp, path) < 0) {
		if (ok)
			saved = errno;
		*err = strprintf("cannot write %s: %s", path, strerror(saved));
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	free(path);
	free(tmp);
	return rc;
}

int bootfacts_write(const char *root, const struct boot_result *r, const char *address,
		    unsigned boot_id, char **err)
{
	*err = NULL;
	char *text = bootfacts_text(r, address, boot_id);
	int rc = mkdir_in(root, ".pvagent-facts", err);
	if (rc == 0)
		rc = replace_file(root, ".pvagent-facts", "boot", text, err);
	free(text);
	if (rc < 0 || !r->linux_guest || r->state != BOOT_UP)
		return rc;
	if (mkdir_in(root, "proc", err) < 0)
		return -1;
	static const struct {
		const char *name;
		char *(*render)(const struct boot_result *);
	} proc[] = {
		{"mounts", bootfacts_proc_mounts},
		{"swaps", bootfacts_proc_swaps},
		{"partitions", bootfacts_proc_partitions},
	};
	for (size_t i = 0; rc == 0 && i < sizeof proc / sizeof proc[0]; i++) {
		text = proc[i].render(r);
		rc = replace_file(root, "proc", proc[i].name, text, err);
		free(text);
	}
	return rc;
}
