/* test_osprof.c - osprof.c, osprof_detect.c and virtio_plan.c: facts
 * transcripts, OS detection over the fixtures' captured command output,
 * per-version profiles (kmod, loader lines, initramfs modules, virtio-scsi),
 * device and NIC names, label/MAC parsers and the virtio plan. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osprof.h"
#include "util.h"

static void facts_of(const char *fx, struct os_facts *f)
{
	char *path = strprintf("tests/guests/%s/facts", fx), *txt = NULL, *err = NULL;
	cr_assert_not_null(path);
	cr_assert_eq(read_file(path, &txt, NULL), 0, "%s", path);
	memset(f, 0, sizeof *f);
	cr_assert_eq(os_facts_parse(path, txt, f, &err), 0, "%s", err);
	free(txt);
	free(path);
}

static void detect_fx(const char *fx, struct os_info *oi)
{
	struct os_facts f;
	char *err = NULL;
	facts_of(fx, &f);
	cr_assert_eq(osprof_detect(&f, oi, &err), 0, "%s: %s", fx, err);
	os_facts_free(&f);
}

/* detect_fx, asserting the release, and the fixture's profile. */
static void detect_release(const char *fx, struct os_info *oi, struct os_profile *p,
			   const char *version, int major, int minor)
{
	detect_fx(fx, oi);
	cr_assert_str_eq(oi->version, version, "%s", fx);
	cr_assert(oi->major == major && oi->minor == minor, "%s: %d.%d", fx, oi->major, oi->minor);
	char *err = NULL;
	cr_assert_eq(osprof_for(oi, p, &err), 0, "%s: %s", fx, err);
}

Test(facts, transcript_parse)
{
	struct os_facts f = {0};
	char *err = NULL;
	cr_assert_eq(os_facts_parse("facts", "\n$ uname -sr\nFreeBSD 9.0-RELEASE\n$ true\n$ echo a\na\n\nb", &f, &err), 0);
	cr_assert_eq(f.n, 3);
	cr_assert_str_eq(os_facts_get(&f, "uname -sr"), "FreeBSD 9.0-RELEASE\n");
	cr_assert_str_eq(os_facts_get(&f, "true"), "");
	cr_assert_str_eq(os_facts_get(&f, "echo a"), "a\n\nb\n");
	cr_assert_null(os_facts_get(&f, "lsb_release -a"));
	os_facts_free(&f);
	cr_assert_eq(os_facts_parse("x/facts", "\nstray output\n$ uname\n", &f, &err), -1);
	cr_assert_str_eq(err, "x/facts:2: output before the first \"$ command\" line");
	free(err);
	os_facts_free(&f);
	cr_assert_str_eq(osprof_detect_cmds[0], "uname -sr");
}

Test(detect, freebsd_fixtures)
{
	struct os_info oi;
	detect_fx("freebsd-9.0", &oi);
	cr_assert_eq(oi.family, OS_FREEBSD);
	cr_assert_str_eq(oi.id, "freebsd");
	cr_assert_str_eq(oi.version, "9.0-RELEASE", "no freebsd-version before 10: uname");
	cr_assert_eq(oi.major, 9);
	cr_assert_eq(oi.minor, 0);
	os_info_free(&oi);
	detect_fx("freebsd-14", &oi);
	cr_assert_str_eq(oi.version, "14.1-RELEASE-p5");
	cr_assert_str_eq(oi.kernel, "14.1-RELEASE-p5");
	cr_assert_eq(oi.major, 14);
	cr_assert_eq(oi.minor, 1);
	os_info_free(&oi);
	/* 15.0's VM image (pkgbase): virtio in GENERIC, no kmod, no loader lines */
	struct os_profile p;
	detect_release("freebsd-15", &oi, &p, "15.0-RELEASE", 15, 0);
	cr_assert(p.virtio_builtin && !p.kmod_pkg && p.scsi == VS_YES);
	const struct rw_kv *kv = NULL;
	size_t n = 9;
	osprof_loader_lines(&p, VBUS_VIRTIO_BLK, &kv, &n);
	cr_assert_eq(n, 0);
	char *nic = osprof_nic_name(&p, "virtio", 0), *disk = osprof_disk_name(&p, DBUS_IDE, 0);
	cr_assert_str_eq(nic, "vtnet0");
	cr_assert_str_eq(disk, "ada0");
	free(nic);
	free(disk);
	os_info_free(&oi);
}

Test(detect, ubuntu_fixtures)
{
	struct os_info oi;
	detect_fx("ubuntu-9.04", &oi);
	cr_assert_eq(oi.family, OS_LINUX);
	cr_assert_str_eq(oi.id, "ubuntu", "from lsb_release (no os-release on 9.04)");
	cr_assert_str_eq(oi.version, "9.04");
	cr_assert_str_eq(oi.codename, "jaunty");
	cr_assert_eq(oi.kmajor, 2);
	cr_assert_eq(oi.kminor, 6);
	cr_assert_eq(oi.kpatch, 28);
	os_info_free(&oi);
	detect_fx("ubuntu-12.04", &oi);
	cr_assert_str_eq(oi.version, "12.04");
	cr_assert_str_eq(oi.pretty, "Ubuntu precise (12.04 LTS)");
	cr_assert_null(oi.codename);
	os_info_free(&oi);
	detect_fx("ubuntu-24.04", &oi);
	cr_assert_str_eq(oi.version, "24.04");
	cr_assert_eq(oi.major, 24);
	cr_assert_eq(oi.minor, 4);
	cr_assert_str_eq(oi.codename, "noble");
	cr_assert_eq(oi.kmajor, 6);
	os_info_free(&oi);
	/* a 7.x kernel: virtio-scsi as on 6.x */
	struct os_profile p;
	detect_release("ubuntu-26.04", &oi, &p, "26.04", 26, 4);
	cr_assert_str_eq(oi.codename, "resolute");
	cr_assert_eq(oi.kmajor, 7);
	cr_assert_eq(p.scsi, VS_YES);
	os_info_free(&oi);
	/* Debian 13 from os-release alone (no lsb_release on a minimal install) */
	detect_release("debian-13", &oi, &p, "13", 13, 0);
	cr_assert_str_eq(oi.id, "debian");
	cr_assert_str_eq(oi.codename, "trixie");
	cr_assert(oi.kmajor == 6 && oi.kminor == 12);
	cr_assert_str_eq(p.distro, "debian");
	char *d = osprof_describe(&p);
	cr_assert_str_eq(d, "debian 13.0 (Linux 6.12)");
	free(d);
	os_info_free(&oi);
}

Test(detect, garbage_is_not_trusted)
{
	struct os_facts f = {0};
	struct os_info oi;
	char *err = NULL;
	cr_assert_eq(os_facts_add(&f, "uname -sr", "sh: uname: not found\n"), 0);
	cr_assert_eq(os_facts_add(&f, "cat /etc/os-release", "cat: /etc/os-release: No such file or directory\n"), 0);
	cr_assert_eq(osprof_detect(&f, &oi, &err), -1);
	cr_assert_not_null(err);
	free(err);
	/* FreeBSD with a useless freebsd-version falls back to uname */
	os_facts_free(&f);
	cr_assert_eq(os_facts_add(&f, "uname -sr", "FreeBSD 8.4-RELEASE\n"), 0);
	cr_assert_eq(os_facts_add(&f, "freebsd-version -k", "freebsd-version: Command not found.\n"), 0);
	cr_assert_eq(osprof_detect(&f, &oi, &err), 0);
	cr_assert_str_eq(oi.version, "8.4-RELEASE");
	os_info_free(&oi);
	os_facts_free(&f);
}

static void prof_for(enum os_family fam, const char *id, int M, int m, const char *kernel,
		     struct os_profile *p, int want_rc)
{
	struct os_info oi = {0};
	oi.family = fam;
	oi.id = (char *)id;
	oi.major = M;
	oi.minor = m;
	if (kernel)
		sscanf(kernel, "%d.%d.%d", &oi.kmajor, &oi.kminor, &oi.kpatch);
	char *err = NULL;
	int rc = osprof_for(&oi, p, &err);
	cr_assert_eq(rc, want_rc, "%s %d.%d: %s", id, M, m, err ? err : "");
	if (rc < 0) {
		cr_assert_not_null(err);
		free(err);
	}
}

Test(profile, freebsd_versions)
{
	struct os_profile p;
	const struct rw_kv *kv;
	size_t n;
	char *err = NULL;
	int kmod[][2] = {{8, 2}, {8, 3}, {9, 0}, {9, 1}};
	for (int i = 0; i < 4; i++) {
		prof_for(OS_FREEBSD, "freebsd", kmod[i][0], kmod[i][1], NULL, &p, 0);
		cr_assert_eq(p.virtio_builtin, 0);
		cr_assert_not_null(p.kmod_pkg);
		cr_assert_eq(p.scsi, VS_NO);
		osprof_loader_lines(&p, VBUS_VIRTIO_BLK, &kv, &n);
		cr_assert_eq(n, 5);
		cr_assert_str_eq(kv[0].key, "virtio_load");
		cr_assert_str_eq(kv[4].key, "virtio_balloon_load");
		cr_assert_eq(osprof_check_bus(&p, VBUS_VIRTIO_SCSI, &err), -1);
		free(err);
	}
	prof_for(OS_FREEBSD, "freebsd", 9, 0, NULL, &p, 0);
	cr_assert_str_eq(p.kmod_pkg, "virtio-kmod-9.0");
	cr_assert_str_eq(p.kmod_install, "pkg_add -r virtio-kmod-9.0");
	int builtin[][2] = {{8, 4}, {9, 2}, {9, 3}, {10, 0}, {14, 1}};
	for (int i = 0; i < 5; i++) {
		prof_for(OS_FREEBSD, "freebsd", builtin[i][0], builtin[i][1], NULL, &p, 0);
		cr_assert_eq(p.virtio_builtin, 1);
		cr_assert_null(p.kmod_pkg);
		cr_assert_eq(p.scsi, VS_YES);
		osprof_loader_lines(&p, VBUS_VIRTIO_BLK, &kv, &n);
		cr_assert_eq(n, 0);
		cr_assert_eq(osprof_check_bus(&p, VBUS_VIRTIO_SCSI, &err), 0);
	}
	prof_for(OS_FREEBSD, "freebsd", 8, 1, NULL, &p, -1);
	prof_for(OS_FREEBSD, "freebsd", 7, 4, NULL, &p, -1);
}

Test(profile, linux_versions)
{
	struct os_profile p;
	const char *const *mods;
	size_t n;
	prof_for(OS_LINUX, "ubuntu", 9, 4, "2.6.28", &p, 0);
	cr_assert_eq(p.scsi, VS_NO);
	osprof_initramfs_modules(&p, VBUS_VIRTIO_BLK, &mods, &n);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(mods[0], "virtio_pci");
	cr_assert_str_eq(mods[1], "virtio_blk");
	cr_assert_str_eq(mods[2], "virtio_net");
	osprof_initramfs_modules(&p, VBUS_VIRTIO_SCSI, &mods, &n);
	cr_assert_eq(n, 4);
	cr_assert_str_eq(mods[3], "virtio_scsi");
	prof_for(OS_LINUX, "ubuntu", 12, 4, "3.2.0", &p, 0);
	cr_assert_eq(p.scsi, VS_CHECK);
	prof_for(OS_LINUX, "ubuntu", 24, 4, "6.8.0", &p, 0);
	cr_assert_eq(p.scsi, VS_YES);
	prof_for(OS_LINUX, "debian", 12, 0, "6.1.0", &p, 0);
	prof_for(OS_LINUX, "ubuntu", 8, 4, "2.6.24", &p, -1);
	prof_for(OS_LINUX, "centos", 7, 0, "3.10.0", &p, -1);
}

Test(profile, device_and_nic_names)
{
	struct os_profile p;
	char *s;
	prof_for(OS_FREEBSD, "freebsd", 8, 3, NULL, &p, 0);
	cr_assert_str_eq((s = osprof_disk_name(&p, DBUS_IDE, 0)), "ad0");
	free(s);
	cr_assert_str_eq((s = osprof_disk_name(&p, DBUS_IDE, 2)), "ad3", "old ata: ide3 is ad3");
	free(s);
	prof_for(OS_FREEBSD, "freebsd", 10, 0, NULL, &p, 0);
	cr_assert_str_eq((s = osprof_disk_name(&p, DBUS_IDE, 2)), "ada2");
	free(s);
	cr_assert_str_eq((s = osprof_disk_name(&p, DBUS_VIRTIO_BLK, 1)), "vtbd1");
	free(s);
	cr_assert_str_eq((s = osprof_disk_name(&p, DBUS_VIRTIO_SCSI, 0)), "da0");
	free(s);
	cr_assert_str_eq((s = osprof_nic_name(&p, "e1000", 0)), "em0");
	free(s);
	cr_assert_str_eq((s = osprof_nic_name(&p, "virtio", 1)), "vtnet1");
	free(s);
	prof_for(OS_LINUX, "ubuntu", 12, 4, "3.2.0", &p, 0);
	cr_assert_str_eq((s = osprof_disk_name(&p, DBUS_IDE, 0)), "sda");
	free(s);
	cr_assert_str_eq((s = osprof_disk_name(&p, DBUS_VIRTIO_BLK, 1)), "vdb");
	free(s);
	cr_assert_str_eq((s = osprof_disk_name(&p, DBUS_VIRTIO_SCSI, 26)), "sdaa");
	free(s);
	errno = 1;
	cr_assert_null(osprof_nic_name(&p, "e1000", 0), "Linux names do not follow the model");
	cr_assert_eq(errno, 0);
}

Test(parsers, gpart_dumpfs_blkid_iplink)
{
	struct name_map m = {0};
	cr_assert_eq(osprof_parse_gpart_labels("=>      40  67108784  ada0  GPT  (32G)\n"
					       "        40    532480     1  efiboot0  (260M)\n"
					       "    533544       984        - free -  (492K)\n"
					       "    534528   4194304     3  swap0  (2.0G)\n"
					       "   4728832  62377984     4  (null)  (30G)\n"
					       "\n"
					       "=>      63  41942977  ada1  MBR  (20G)\n"
					       "        63  41942977     1  (null)  (20G)\n",
					       &m), 0);
	cr_assert_eq(m.n, 2);
	cr_assert_str_eq(name_map_get(&m, "ada0p1"), "/dev/gpt/efiboot0");
	cr_assert_str_eq(name_map_get(&m, "ada0p3"), "/dev/gpt/swap0");
	cr_assert_eq(osprof_parse_dumpfs("ad0s1a", "magic\t19540119 (UFS2)\ttime\tMon Jan 16\n"
					 "superblock location\t65536\tid\t[ 4f13ff5d 2bf8a1c6 ]\n", &m), 0);
	cr_assert_str_eq(name_map_get(&m, "ad0s1a"), "/dev/ufsid/4f13ff5d2bf8a1c6");
	cr_assert_eq(osprof_parse_dumpfs("ad0s1d", "dumpfs: /dev/ad0s1d: could not find superblock\n", &m), 0);
	cr_assert_null(name_map_get(&m, "ad0s1d"));
	cr_assert_eq(osprof_parse_blkid("/dev/sda1: UUID=\"abc-1\" TYPE=\"ext4\" PARTUUID=\"zz\"\n"
					"/dev/sda2: PARTUUID=\"only\"\n"
					"/dev/mapper/vg-root: UUID=\"lvm\" TYPE=\"ext4\"\n"
					"/dev/sda5: TYPE=\"swap\" UUID=\"sw-1\"", &m), 0);
	cr_assert_str_eq(name_map_get(&m, "sda1"), "UUID=abc-1");
	cr_assert_str_eq(name_map_get(&m, "sda5"), "UUID=sw-1");
	cr_assert_null(name_map_get(&m, "sda2"));
	name_map_free(&m);
	cr_assert_eq(osprof_parse_ip_link("1: lo: <LOOPBACK> mtu 65536\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
					  "2: ens18: <BROADCAST> mtu 1500\\    link/ether bc:24:11:5e:2a:7c brd ff:ff:ff:ff:ff:ff\n"
					  "3: eth1@if4: <BROADCAST> mtu 1500\\    link/ether 52:54:00:00:00:01 brd ff:ff:ff:ff:ff:ff\n",
					  &m), 0);
	cr_assert_eq(m.n, 2);
	cr_assert_str_eq(name_map_get(&m, "ens18"), "bc:24:11:5e:2a:7c");
	cr_assert_str_eq(name_map_get(&m, "eth1"), "52:54:00:00:00:01");
	name_map_free(&m);
}

static void plan_fx(const char *fx, enum vbus bus, struct virtio_plan *vp, int want_rc)
{
	struct os_facts f;
	struct os_info oi;
	struct os_profile p;
	char *err = NULL;
	facts_of(fx, &f);
	cr_assert_eq(osprof_detect(&f, &oi, &err), 0, "%s", err);
	cr_assert_eq(osprof_for(&oi, &p, &err), 0, "%s", err);
	int rc = virtio_plan_init(vp, &p, bus, 1, 1, &f, &err);
	cr_assert_eq(rc, want_rc, "%s: %s", fx, err ? err : "");
	if (rc < 0)
		free(err);
	os_info_free(&oi);
	os_facts_free(&f);
}

Test(plan, freebsd_9_0)
{
	struct virtio_plan vp;
	plan_fx("freebsd-9.0", VBUS_VIRTIO_BLK, &vp, 0);
	cr_assert_str_eq(name_map_get(&vp.disks, "ada0"), "vtbd0");
	cr_assert_str_eq(name_map_get(&vp.disks, "ad0"), "vtbd0", "9.x legacy ad aliases");
	cr_assert_str_eq(name_map_get(&vp.nics, "em0"), "vtnet0");
	cr_assert_eq(vp.labels.n, 4, "four UFS ids from dumpfs");
	cr_assert(virtio_plan_touches(&vp, "/boot/loader.conf"));
	cr_assert(virtio_plan_touches(&vp, "etc/rc.conf"));
	cr_assert_not(virtio_plan_touches(&vp, "etc/netplan/a.yaml"));
	char *out = NULL, *err = NULL;
	cr_assert_eq(virtio_transform(&vp, RW_PREPARE, "etc/motd", "hello", &out, NULL, &err), 0);
	cr_assert_str_eq(out, "hello");
	free(out);
	virtio_plan_free(&vp);
	/* the 9.x kmod port has no virtio_scsi */
	plan_fx("freebsd-9.0", VBUS_VIRTIO_SCSI, &vp, -1);
}

Test(plan, freebsd_14_scsi_and_linux)
{
	struct virtio_plan vp;
	plan_fx("freebsd-14-zfs", VBUS_VIRTIO_SCSI, &vp, 0);
	cr_assert_str_eq(name_map_get(&vp.disks, "ada0"), "da0");
	cr_assert_str_eq(name_map_get(&vp.labels, "ada0p3"), "/dev/gpt/swap0");
	char *out = NULL, *err = NULL;
	cr_assert_eq(virtio_transform(&vp, RW_PREPARE, "etc/fstab", "/dev/ada1p1 /data ufs rw 2 2\n", &out, NULL, &err), 0);
	cr_assert_str_eq(out, "/dev/ada1p1 /data ufs rw 2 2\n", "only one disk planned: ada1 left alone");
	free(out);
	virtio_plan_free(&vp);

	plan_fx("ubuntu-24.04", VBUS_VIRTIO_SCSI, &vp, 0);
	cr_assert_eq(vp.disks.n, 0, "IDE sda stays sda on virtio-scsi");
	cr_assert_eq(vp.nics.n, 0, "Linux NIC names follow MAC/slot, not the model");
	cr_assert_str_eq(name_map_get(&vp.macs, "ens18"), "bc:24:11:5e:2a:7c");
	cr_assert(virtio_plan_touches(&vp, "etc/netplan/50-cloud-init.yaml"));
	cr_assert_not(virtio_plan_touches(&vp, "etc/netplan/sub/x.yaml"));
	cr_assert_eq(virtio_transform(&vp, RW_PREPARE, "/etc/initramfs-tools/modules", NULL, &out, NULL, &err), 0);
	cr_assert_str_eq(out, "virtio_pci\nvirtio_blk\nvirtio_net\nvirtio_scsi\n");
	free(out);
	virtio_plan_free(&vp);

	plan_fx("ubuntu-9.04", VBUS_VIRTIO_BLK, &vp, 0);
	cr_assert_str_eq(name_map_get(&vp.disks, "sda"), "vda");
	cr_assert_str_eq(name_map_get(&vp.labels, "sda5"), "UUID=71c1bbe8-3877-42d8-975a-5fc7af1d203a");
	virtio_plan_free(&vp);
}

Test(plan, fact_cmds_from_fstab)
{
	struct os_profile p;
	char **cmds = NULL, *err = NULL;
	prof_for(OS_FREEBSD, "freebsd", 9, 0, NULL, &p, 0);
	cr_assert_eq(osprof_fact_cmds(&p, "# Device\tMountpoint\n/dev/ad0s1b none swap sw 0 0\n/dev/ad0s1a / ufs rw 1 1\n"
				      "/dev/gpt/data /data ufs rw 2 2\n/dev/cd0 /cdrom cd9660 ro,noauto 0 0\n/dev/ad0s1d\t/var\tufs\trw\t2\t2\n",
				      &cmds, &err), 0, "%s", err);
	cr_assert_str_eq(cmds[0], "gpart show -l");
	cr_assert_str_eq(cmds[1], "dumpfs /dev/ad0s1a | head -n 2");
	cr_assert_str_eq(cmds[2], "dumpfs /dev/ad0s1d | head -n 2");
	cr_assert_null(cmds[3]);
	osprof_cmds_free(cmds);
	cr_assert_eq(osprof_fact_cmds(&p, "/dev/ad0s1a /\n", &cmds, &err), -1);
	cr_assert_str_eq(err, "etc/fstab:1: expected at least 3 fields (device, mount point, type), found 2");
	free(err);
	prof_for(OS_LINUX, "ubuntu", 12, 4, "3.2.0", &p, 0);
	cr_assert_eq(osprof_fact_cmds(&p, NULL, &cmds, &err), 0);
	cr_assert_str_eq(cmds[0], "blkid");
	cr_assert_str_eq(cmds[1], "ip -o link");
	cr_assert_null(cmds[2]);
	osprof_cmds_free(cmds);
}

Test(plan, fixture_commands_match_facts)
{
	/* every command the plan asks for on freebsd-9.0 is in its facts file */
	struct os_facts f;
	struct os_info oi;
	struct os_profile p;
	char **cmds = NULL, *err = NULL, *fstab = NULL;
	facts_of("freebsd-9.0", &f);
	cr_assert_eq(osprof_detect(&f, &oi, &err), 0);
	cr_assert_eq(osprof_for(&oi, &p, &err), 0);
	cr_assert_eq(read_file("tests/guests/freebsd-9.0/root/etc/fstab", &fstab, NULL), 0);
	cr_assert_eq(osprof_fact_cmds(&p, fstab, &cmds, &err), 0);
	size_t n = 0;
	for (; cmds[n]; n++)
		if (strcmp(cmds[n], "gpart show -l") != 0)
			cr_expect_not_null(os_facts_get(&f, cmds[n]), "%s not in facts", cmds[n]);
	cr_assert_eq(n, 5);
	osprof_cmds_free(cmds);
	free(fstab);
	os_info_free(&oi);
	os_facts_free(&f);
}

Test(profile, describe)
{
	struct os_profile p;
	char *d;
	prof_for(OS_FREEBSD, "freebsd", 9, 0, NULL, &p, 0);
	cr_assert_str_eq((d = osprof_describe(&p)), "FreeBSD 9.0 (virtio-kmod)");
	free(d);
	prof_for(OS_FREEBSD, "freebsd", 14, 1, NULL, &p, 0);
	cr_assert_str_eq((d = osprof_describe(&p)), "FreeBSD 14.1 (virtio in GENERIC)");
	free(d);
	prof_for(OS_LINUX, "ubuntu", 9, 4, "2.6.28", &p, 0);
	cr_assert_str_eq((d = osprof_describe(&p)), "ubuntu 9.04 (Linux 2.6)");
	free(d);
	char *err = NULL;
	cr_assert_eq(osprof_check_bus(&p, VBUS_VIRTIO_SCSI, &err), -1);
	cr_assert_str_eq(err, "ubuntu 9.04 (Linux 2.6): virtio-scsi is not available; use virtio-blk");
	free(err);
}
