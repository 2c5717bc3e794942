/* test_bootmodel.c - the boot model as a pure function over a PVE config
 * and a guest root written here under a temp dir (or copied from a fixture
 * with its facts), the files bootfacts.c writes from its result, and its
 * own strict readers of facts, fstab, loader.conf and rc.conf (bootread.h). */
#include <criterion/criterion.h>

#include "bootfacts.h"
#include "bootmodel.h"
#include "bootread.h"
#include "util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

static void mkroot(void)
{
	strcpy(root, "/tmp/pvesim-boot-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
}

static void rmtree(const char *dir)
{
	char *cmd = strprintf("rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

/* Write root/rel (creating directories). */
static void put(const char *rel, const char *text)
{
	char *path = strprintf("%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	}
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
	free(path);
}

static json_object *conf(const char *text)
{
	json_object *o = json_tokener_parse(text);
	cr_assert_not_null(o, "%s", text);
	return o;
}

static void eval(const char *fixture, const char *r, const char *cfg,
		 struct boot_result *out)
{
	json_object *c = conf(cfg);
	memset(out, 0, sizeof(*out));
	cr_assert_eq(bootmodel_eval(fixture, r, c, out), 0);
	json_object_put(c);
}

static bool has_disk(const struct boot_result *b, const char *name)
{
	for (size_t i = 0; i < b->ndisks; i++)
		if (strcmp(b->disks[i], name) == 0)
			return true;
	return false;
}

#define FB_IDE "{\"ide0\":\"l:vm-1-disk-0,size=8G\",\"net0\":\"e1000=BC:24:11:00:00:01\",\"boot\":\"order=ide0\"}"
#define FB_VIRTIO "{\"virtio0\":\"l:vm-1-disk-0,size=8G\",\"net0\":\"virtio=BC:24:11:00:00:01\",\"boot\":\"order=virtio0\"}"

static void freebsd90_installed(void)
{
	put("etc/fstab", "# Device Mountpoint FStype Options Dump Pass#\n"
			 "/dev/ad0s1b none swap sw 0 0\n"
			 "/dev/ad0s1a / ufs rw 1 1\n"
			 "/dev/ad0s1f /usr ufs rw 2 2\n");
	put("etc/rc.conf", "hostname=\"fbsd90\"\nifconfig_em0=\"DHCP\"\nsshd_enable=\"YES\"\n");
}

Test(bootread, facts_and_labels)
{
	struct br_facts f;
	char *err = NULL;
	cr_assert_eq(br_facts_parse("facts", "$ uname -sr\nFreeBSD 9.0-RELEASE\n\n$ gpart show -l\n"
						"=>  40  67108784  ada0  GPT  (32G)\n"
						"    40    532480     1  efiboot0  (260M)\n"
						"  533544   984        - free -  (492K)\n"
						"  534528  4194304    3  (null)  (2.0G)\n",
				     &f, &err),
		     0, "%s", err);
	cr_assert_eq(f.n, 2);
	cr_assert_str_eq(f.v[1].cmd, "gpart show -l");
	cr_assert_eq(f.v[1].line, 4);
	struct br_labels l = {0};
	cr_assert_eq(br_gpart_labels("facts", 4, f.v[1].out, &l, &err), 0, "%s", err);
	cr_assert_eq(l.n, 1, "(null) labels and free space are none");
	cr_assert_str_eq(l.v[0].dev, "ada0p1");
	cr_assert_str_eq(l.v[0].spec, "/dev/gpt/efiboot0");
	cr_assert_eq(br_blkid("facts", 9, "/dev/sda1: UUID=\"f7a0\" TYPE=\"ext4\"\n"
					  "/dev/sda2: PARTUUID=\"0c7e\"\n", &l, &err), 0, "%s", err);
	cr_assert_str_eq(l.v[1].spec, "UUID=f7a0");
	cr_assert_eq(br_dumpfs("facts", 12, "ad0s1a", "magic\t19540119 (UFS2)\n"
				"superblock location\t65536\tid\t[ 4f13ff5d 2bf8a1c6 ]\n", &l, &err), 0);
	cr_assert_str_eq(l.v[2].spec, "/dev/ufsid/4f13ff5d2bf8a1c6");
	br_labels_free(&l);
	br_facts_free(&f);
	/* bad input: file, line and field named */
	cr_assert_eq(br_facts_parse("facts", "stray output\n$ uname\n", &f, &err), -1);
	cr_assert_str_eq(err, "facts:1: output: before the first \"$ command\" line");
	free(err);
	cr_assert_eq(br_gpart_labels("facts", 4, "=> 40 100 ada0 GPT\n  40 x 1 a (1M)\n", &l, &err),
		     -1);
	cr_assert_str_eq(err, "facts:4: gpart show -l, output line 2: field 2 (size): 'x' is not a "
			      "number");
	free(err);
	cr_assert_eq(br_gpart_labels("facts", 4, "  40 100 1 a (1M)\n", &l, &err), -1);
	cr_assert_str_eq(err, "facts:4: gpart show -l, output line 1: field 1: want \"START SIZE "
			      "INDEX LABEL\" after a \"=>\" line");
	free(err);
	cr_assert_eq(br_blkid("facts", 9, "sda1 UUID=\"x\"\n", &l, &err), -1);
	cr_assert(strstr(err, "facts:9: blkid, output line 1: field 1 (device)"), "%s", err);
	free(err);
	cr_assert_eq(br_dumpfs("facts", 12, "ad0s1a", "dumpfs: /dev/ad0s1a: No such file\n", &l, &err),
		     -1);
	cr_assert(strstr(err, "facts:12: dumpfs ad0s1a: field id"), "%s", err);
	free(err);
	br_labels_free(&l);
}

Test(bootread, loader_rc_conf_and_fstab)
{
	char *v = NULL, *err = NULL;
	const char *loader = "# comment\n\nvirtio_load=\"YES\"  # the module\n"
			     "security.bsd.allow_destructive_dtrace=0\nvirtio_load=\"NO\"\n";
	cr_assert_eq(br_var_get("boot/loader.conf", loader, "virtio_load", &v, &err), 1, "%s", err);
	cr_assert_str_eq(v, "NO", "the last assignment counts");
	free(v);
	cr_assert_eq(br_var_get("boot/loader.conf", loader, "zfs_load", &v, &err), 0);
	cr_assert_null(v);
	cr_assert_eq(br_var_get("etc/rc.conf", "hostname=\"x\"\nifconfig_em0=\"DHCP\n", "hostname",
				&v, &err), -1);
	cr_assert_str_eq(err, "etc/rc.conf:2: field value of ifconfig_em0: no closing quote");
	free(err);
	cr_assert_eq(br_var_get("etc/rc.conf", "sshd_enable YES\n", NULL, NULL, &err), -1);
	cr_assert_str_eq(err, "etc/rc.conf:1: field name: want NAME=VALUE");
	free(err);
	cr_assert_eq(br_var_get("etc/rc.conf", "a=\"b\" c\n", NULL, NULL, &err), -1);
	cr_assert_str_eq(err, "etc/rc.conf:1: field value of a: text after the value");
	free(err);
	cr_assert_eq(br_fstab_check("etc/fstab", "# dev mp type opts\n/dev/ad0s1a / ufs rw 1 1\n"
						 "proc /proc procfs rw\n", &err), 0, "%s", err);
	cr_assert_eq(br_fstab_check("etc/fstab", "/dev/ad0s1a / ufs rw 1 1\n/dev/ad0s1f /usr\n",
				    &err), -1);
	cr_assert_str_eq(err, "etc/fstab:2: field 3 (type): missing");
	free(err);
	cr_assert_eq(br_fstab_check("etc/fstab", "/dev/ad0s1a / ufs rw one 1\n", &err), -1);
	cr_assert_str_eq(err, "etc/fstab:1: field 5 (dump): 'one' is not a number");
	free(err);
}

/* A guest file the boot cannot read stops the boot where it is read. */
Test(bootmodel, unreadable_files_stop_the_boot)
{
	mkroot();
	freebsd90_installed();
	put("etc/fstab", "/dev/ad0s1a / ufs rw 1 1\n/dev/ad0s1f /usr\n");
	struct boot_result b;
	eval("freebsd-9.0", root, FB_IDE, &b);
	cr_assert_eq(b.state, BOOT_SINGLE_USER);
	cr_assert_str_eq(b.reason, "single-user mode: etc/fstab:2: field 3 (type): missing");
	boot_result_clear(&b);
	freebsd90_installed();
	put("etc/rc.conf", "hostname=\"fbsd90\"\nifconfig_em0=\"DHCP\n");
	eval("freebsd-9.0", root, FB_IDE, &b);
	cr_assert_eq(b.state, BOOT_NO_NETWORK);
	cr_assert_str_eq(b.reason,
			 "no network: etc/rc.conf:2: field value of ifconfig_em0: no closing quote");
	boot_result_clear(&b);
	freebsd90_installed();
	put("boot/loader.conf", "virtio_load=YES\nif_vtnet_load \"YES\"\n");
	eval("freebsd-9.0", root, FB_IDE, &b);
	cr_assert_eq(b.state, BOOT_MOUNTROOT);
	cr_assert_str_eq(b.reason, "loader: boot/loader.conf:2: field name: want NAME=VALUE");
	boot_result_clear(&b);
	rmtree(root);
}

Test(bootmodel, freebsd90_on_ide_boots)
{
	mkroot();
	freebsd90_installed();
	struct boot_result b;
	eval("freebsd-9.0", root, FB_IDE, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert(b.reachable);
	cr_assert(has_disk(&b, "ad0"));
	cr_assert(has_disk(&b, "ada0")); /* legacy alias on 9.x */
	cr_assert_str_eq(b.nic, "em0");
	cr_assert_null(b.reason);
	boot_result_clear(&b);
	rmtree(root);
}

Test(bootmodel, freebsd90_virtio_without_kmod_hangs_at_mountroot)
{
	mkroot();
	freebsd90_installed();
	struct boot_result b;
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_MOUNTROOT);
	cr_assert_not(b.reachable);
	cr_assert(strstr(b.reason, "virtio_blk"), "%s", b.reason);
	cr_assert_str_eq(b.disks[0], "vtbd0");
	cr_assert_str_eq(b.nic, "vtnet0");
	boot_result_clear(&b);
	/* loader.conf lines without the module file are not enough */
	put("boot/loader.conf", "virtio_load=\"YES\"\nvirtio_pci_load=\"YES\"\n"
				"virtio_blk_load=\"YES\"\nif_vtnet_load=\"YES\"\n");
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_MOUNTROOT);
	boot_result_clear(&b);
	rmtree(root);
}

Test(bootmodel, freebsd90_virtio_stale_fstab_hangs)
{
	mkroot();
	freebsd90_installed();
	put("boot/loader.conf", "virtio_load=\"YES\"\nvirtio_pci_load=\"YES\"\n"
				"virtio_blk_load=\"YES\"\nif_vtnet_load=\"YES\"\n");
	put("boot/modules/virtio_blk.ko", "");
	put("boot/modules/if_vtnet.ko", "");
	struct boot_result b;
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_MOUNTROOT);
	cr_assert(strstr(b.reason, "/dev/ad0s1a"), "%s", b.reason);
	boot_result_clear(&b);
	rmtree(root);
}

Test(bootmodel, freebsd90_prepared_boots_on_virtio)
{
	mkroot();
	put("etc/fstab", "/dev/ufsid/4f13ff5d2bf8a1c6 / ufs rw 1 1\n");
	put("etc/rc.conf", "ifconfig_em0=\"DHCP\"\nifconfig_vtnet0=\"DHCP\"\n");
	put("boot/loader.conf", "virtio_load=\"YES\"\nvirtio_pci_load=\"YES\"\n"
				"virtio_blk_load=\"YES\"\nif_vtnet_load=\"YES\"\n");
	put("boot/modules/virtio_blk.ko", "");
	put("boot/modules/if_vtnet.ko", "");
	struct boot_result b;
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert(b.reachable);
	cr_assert_str_eq(b.nic, "vtnet0");
	boot_result_clear(&b);
	/* the same guest without the rc.conf line for vtnet0 has no network */
	put("etc/rc.conf", "ifconfig_em0=\"DHCP\"\n");
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_NO_NETWORK);
	cr_assert_not(b.reachable);
	cr_assert(strstr(b.reason, "ifconfig_vtnet0"), "%s", b.reason);
	boot_result_clear(&b);
	rmtree(root);
}

Test(bootmodel, freebsd90_has_no_virtio_scsi)
{
	mkroot();
	put("etc/fstab", "/dev/ufs/rootfs / ufs rw 1 1\n");
	put("etc/rc.conf", "ifconfig_em0=\"DHCP\"\n");
	struct boot_result b;
	eval("freebsd-9.0", root,
	     "{\"scsi0\":\"l:vm-1-disk-0,size=8G\",\"scsihw\":\"virtio-scsi-single\","
	     "\"net0\":\"e1000=BC:24:11:00:00:01\"}",
	     &b);
	cr_assert_eq(b.state, BOOT_MOUNTROOT);
	cr_assert(strstr(b.reason, "virtio-scsi"), "%s", b.reason);
	boot_result_clear(&b);
	rmtree(root);
}

Test(bootmodel, freebsd14_names_follow_the_bus)
{
	mkroot();
	put("etc/fstab", "/dev/ada0p2 / ufs rw 1 1\n");
	put("etc/rc.conf", "ifconfig_vtnet0=\"DHCP\"\n");
	struct boot_result b;
	eval("freebsd-14", root,
	     "{\"ide0\":\"l:vm-1-disk-0,size=8G\",\"net0\":\"virtio=BC:24:11:00:00:01\"}", &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert_str_eq(b.disks[0], "ada0");
	cr_assert_not(has_disk(&b, "ad0"));
	boot_result_clear(&b);
	/* virtio is in GENERIC, but the fstab names ada0 */
	eval("freebsd-14", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_MOUNTROOT);
	boot_result_clear(&b);
	/* GPT label: bus independent; virtio-scsi gives da0 */
	put("etc/fstab", "/dev/gpt/rootfs / ufs rw 1 1\n");
	eval("freebsd-14", root,
	     "{\"scsi0\":\"l:vm-1-disk-0,size=8G\",\"scsihw\":\"virtio-scsi-single\","
	     "\"net0\":\"virtio=BC:24:11:00:00:01\"}",
	     &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert_str_eq(b.disks[0], "da0");
	boot_result_clear(&b);
	rmtree(root);
}

Test(bootmodel, zfs_root_from_loader_conf)
{
	mkroot();
	put("boot/loader.conf", "vfs.root.mountfrom=\"zfs:zroot/ROOT/default\"\n");
	put("etc/fstab", "/dev/ada0p3 none swap sw 0 0\n");
	put("etc/rc.conf", "ifconfig_vtnet0=\"DHCP\"\n");
	struct boot_result b;
	eval("freebsd-14", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	boot_result_clear(&b);
	rmtree(root);
}

static void ubuntu904_installed(void)
{
	put("etc/fstab", "proc /proc proc defaults 0 0\n"
			 "UUID=2b629f5a-1fca-44f5-b316-7b510e9936bc / ext3 relatime 0 1\n");
	put("etc/network/interfaces", "auto lo\niface lo inet loopback\nauto eth0\n"
				      "iface eth0 inet dhcp\n");
	put("etc/initramfs-tools/modules", "# List of modules\n");
	put("boot/grub/menu.lst", "## kopt=root=/dev/hda1 ro\n"
				  "kernel /boot/vmlinuz root=UUID=2b629f5a-1fca-44f5-b316-7b510e9936bc ro\n");
}

#define UB_IDE "{\"ide0\":\"l:vm-1-disk-0,size=8G\",\"net0\":\"e1000=BC:24:11:00:00:01\"}"
#define UB_VIRTIO "{\"virtio0\":\"l:vm-1-disk-0,size=8G\",\"net0\":\"virtio=BC:24:11:00:00:01\"}"

Test(bootmodel, ubuntu904_initramfs_needs_virtio_modules)
{
	mkroot();
	ubuntu904_installed();
	struct boot_result b;
	eval("ubuntu-9.04", root, UB_IDE, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert_str_eq(b.disks[0], "sda");
	cr_assert_str_eq(b.nic, "eth0");
	boot_result_clear(&b);
	eval("ubuntu-9.04", root, UB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_INITRAMFS);
	cr_assert(strstr(b.reason, "virtio_blk"), "%s", b.reason);
	boot_result_clear(&b);
	put("etc/initramfs-tools/modules", "virtio_pci\nvirtio_blk\nvirtio_net\n");
	eval("ubuntu-9.04", root, UB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert_str_eq(b.disks[0], "vda");
	cr_assert_str_eq(b.nic, "eth0");
	boot_result_clear(&b);
	rmtree(root);
}

Test(bootmodel, ubuntu_dev_sdx_root_breaks_on_virtio_blk)
{
	mkroot();
	ubuntu904_installed();
	put("etc/initramfs-tools/modules", "virtio_pci\nvirtio_blk\n");
	put("etc/fstab", "/dev/sda1 / ext3 relatime 0 1\n");
	struct boot_result b;
	eval("ubuntu-9.04", root, UB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_INITRAMFS);
	cr_assert(strstr(b.reason, "/dev/sda1"), "%s", b.reason);
	boot_result_clear(&b);
	/* the kernel command line counts too */
	put("etc/fstab", "UUID=x / ext3 relatime 0 1\n");
	put("boot/grub/menu.lst", "kernel /boot/vmlinuz root=/dev/sda1 ro\n");
	eval("ubuntu-9.04", root, UB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_INITRAMFS);
	cr_assert(strstr(b.reason, "kernel command line"), "%s", b.reason);
	boot_result_clear(&b);
	rmtree(root);
}

Test(bootmodel, ubuntu2404_predictable_nic_and_netplan)
{
	mkroot();
	put("etc/fstab", "/dev/disk/by-uuid/108af9a2 / ext4 defaults 0 1\n");
	put("etc/netplan/50-cloud-init.yaml",
	    "network:\n    ethernets:\n        ens18:\n            dhcp4: true\n");
	struct boot_result b;
	eval("ubuntu-24.04", root,
	     "{\"scsi0\":\"l:vm-1-disk-0,size=8G\",\"scsihw\":\"virtio-scsi-single\","
	     "\"ide2\":\"l:vm-1-cloudinit,media=cdrom\",\"net0\":\"e1000=BC:24:11:00:00:01\"}",
	     &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert_str_eq(b.nic, "ens18");
	cr_assert_eq(b.ndisks, 1); /* the cloud-init cdrom is no disk */
	cr_assert_str_eq(b.disks[0], "sda");
	boot_result_clear(&b);
	eval("ubuntu-24.04", root, UB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert_str_eq(b.nic, "ens18");
	boot_result_clear(&b);
	rmtree(root);
	mkroot();
	put("etc/fstab", "/dev/disk/by-uuid/108af9a2 / ext4 defaults 0 1\n");
	eval("ubuntu-24.04", root, UB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_NO_NETWORK);
	cr_assert(strstr(b.reason, "ens18"), "%s", b.reason);
	boot_result_clear(&b);
	rmtree(root);
}

Test(bootmodel, null_root_means_prepared)
{
	struct boot_result b;
	eval("freebsd-14", NULL, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_UP);
	cr_assert(b.reachable);
	boot_result_clear(&b);
	/* the drivers still have to exist in the kernel */
	eval("ubuntu-9.04", NULL,
	     "{\"scsi0\":\"l:vm-1-disk-0,size=8G\",\"scsihw\":\"virtio-scsi-pci\","
	     "\"net0\":\"virtio=BC:24:11:00:00:01\"}",
	     &b);
	cr_assert_eq(b.state, BOOT_INITRAMFS);
	boot_result_clear(&b);
}

Test(bootmodel, boot_order_and_link_down)
{
	struct boot_result b;
	eval("freebsd-14", NULL,
	     "{\"ide0\":\"l:vm-1-disk-0,size=8G\",\"virtio0\":\"l:vm-1-disk-1,size=8G\","
	     "\"boot\":\"order=virtio0;ide0\",\"net0\":\"virtio=BC:24:11:00:00:01,link_down=1\"}",
	     &b);
	cr_assert_eq(b.state, BOOT_NO_NETWORK);
	cr_assert(has_disk(&b, "vtbd0") && has_disk(&b, "ada0"));
	json_object *j = boot_result_json(&b);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(j, "state")), "no-network");
	cr_assert_not(json_object_get_boolean(json_object_object_get(j, "reachable")));
	cr_assert_eq(json_object_array_length(json_object_object_get(j, "disk_devices")), 2);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(j, "nic")), "vtnet0");
	json_object_put(j);
	boot_result_clear(&b);
	eval("freebsd-14", NULL, "{\"net0\":\"virtio=BC:24:11:00:00:01\"}", &b);
	cr_assert_eq(b.state, BOOT_MOUNTROOT);
	cr_assert_str_eq(b.reason, "no bootable disk");
	boot_result_clear(&b);
}

Test(bootmodel, ubuntu904_udev_pins_eth0_to_the_mac)
{
	mkroot();
	ubuntu904_installed();
	put("etc/udev/rules.d/70-persistent-net.rules",
	    "# This file was automatically generated\n"
	    "SUBSYSTEM==\"net\", ACTION==\"add\", DRIVERS==\"?*\", "
	    "ATTR{address}==\"52:54:00:3a:9c:1e\", ATTR{type}==\"1\", KERNEL==\"eth*\", "
	    "NAME=\"eth0\"\n");
	struct boot_result b;
	/* same MAC (any case), any model: still eth0 */
	eval("ubuntu-9.04", root,
	     "{\"ide0\":\"l:vm-1-disk-0,size=8G\",\"net0\":\"rtl8139=52:54:00:3A:9C:1E\"}", &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert_str_eq(b.nic, "eth0");
	boot_result_clear(&b);
	/* a clone's new MAC becomes eth1, which interfaces does not configure */
	eval("ubuntu-9.04", root, UB_IDE, &b);
	cr_assert_eq(b.state, BOOT_NO_NETWORK);
	cr_assert_str_eq(b.nic, "eth1");
	cr_assert(strstr(b.reason, "eth1"), "%s", b.reason);
	boot_result_clear(&b);
	rmtree(root);
}

/* ---- mounts, swap and labels from real fixtures ------------------------- */

/* root <- tests/guests/FIXTURE/root plus its facts where guestenv puts them
 * (.pvagent-facts/facts); optionally a tree over it (expected-virtio). */
static void fixture_root(const char *fixture, const char *overlay)
{
	mkroot();
	char *cmd = strprintf("cp -a tests/guests/%s/root/. '%s' && mkdir '%s/.pvagent-facts' && "
			      "cp tests/guests/%s/facts '%s/.pvagent-facts/facts'",
			      fixture, root, root, fixture, root);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	free(cmd);
	if (overlay) {
		cmd = strprintf("cp -a tests/guests/%s/%s/. '%s'", fixture, overlay, root);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
		free(cmd);
	}
}

static void expect_mount(const struct boot_result *b, size_t i, const char *dev,
			 const char *dir, const char *fstype)
{
	cr_assert_lt(i, b->nmounts, "mount %zu of %zu (%s on %s)", i, b->nmounts, dev, dir);
	cr_expect_str_eq(b->mounts[i].dev, dev);
	cr_expect_str_eq(b->mounts[i].dir, dir);
	cr_expect_str_eq(b->mounts[i].fstype, fstype);
}

#define FB90_VIRTIO_KMOD()                                                                    \
	do {                                                                                  \
		put("boot/modules/virtio.ko", "");                                            \
		put("boot/modules/virtio_pci.ko", "");                                        \
		put("boot/modules/virtio_blk.ko", "");                                        \
		put("boot/modules/if_vtnet.ko", "");                                          \
	} while (0)

Test(mounts, freebsd90_installed_on_ide)
{
	fixture_root("freebsd-9.0", NULL);
	struct boot_result b;
	eval("freebsd-9.0", root,
	     "{\"ide0\":\"l:vm-1-disk-0,size=16G\",\"ide2\":\"none,media=cdrom\","
	     "\"net0\":\"e1000=BC:24:11:00:01:90,bridge=vmbr0\",\"boot\":\"order=ide0\"}", &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_expect_str_eq(b.disk_bus, "ide");
	cr_expect_str_eq(b.nic_model, "e1000");
	cr_expect_str_eq(b.mac, "bc:24:11:00:01:90");
	cr_expect_not(b.linux_guest);
	/* the root first, then fstab order; the noauto cdrom left out */
	cr_assert_eq(b.nmounts, 4);
	expect_mount(&b, 0, "/dev/ad0s1a", "/", "ufs");
	expect_mount(&b, 1, "/dev/ad0s1e", "/tmp", "ufs");
	expect_mount(&b, 2, "/dev/ad0s1f", "/usr", "ufs");
	expect_mount(&b, 3, "/dev/ad0s1d", "/var", "ufs");
	cr_assert_eq(b.nswaps, 1);
	cr_expect_str_eq(b.swaps[0].dev, "/dev/ad0s1b");
	cr_expect_eq(b.nblockdevs, 0, "no /proc/partitions on FreeBSD");
	boot_result_clear(&b);
	rmtree(root);
}

Test(mounts, freebsd90_prepared_boots_on_virtio_by_ufsid)
{
	fixture_root("freebsd-9.0", "expected-virtio");
	FB90_VIRTIO_KMOD();
	struct boot_result b;
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_expect_str_eq(b.disk_bus, "virtio-blk");
	cr_expect_str_eq(b.nic_model, "virtio");
	/* FreeBSD's mount -p shows the fstab spec */
	cr_assert_eq(b.nmounts, 4);
	expect_mount(&b, 0, "/dev/ufsid/4f13ff5d2bf8a1c6", "/", "ufs");
	expect_mount(&b, 1, "/dev/ufsid/4f13ff5e1c5a0f42", "/tmp", "ufs");
	expect_mount(&b, 3, "/dev/ufsid/4f13ff5e6e0b97d3", "/var", "ufs");
	/* swap on ad0s1b is gone with the IDE disk; vtbd0s1b is used */
	cr_assert_eq(b.nswaps, 1);
	cr_expect_str_eq(b.swaps[0].dev, "/dev/vtbd0s1b");
	boot_result_clear(&b);
	/* the same tree on IDE: both swap lines name ad0s1b's partition once */
	eval("freebsd-9.0", root, FB_IDE, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert_eq(b.nswaps, 1);
	cr_expect_str_eq(b.swaps[0].dev, "/dev/ad0s1b");
	expect_mount(&b, 0, "/dev/ufsid/4f13ff5d2bf8a1c6", "/", "ufs");
	boot_result_clear(&b);
	rmtree(root);
}

Test(mounts, freebsd90_unknown_ufsid)
{
	fixture_root("freebsd-9.0", "expected-virtio");
	FB90_VIRTIO_KMOD();
	struct boot_result b;
	/* a UFS id the facts do not know for / : mountroot */
	put("etc/fstab", "/dev/ufsid/0123456789abcdef / ufs rw 1 1\n");
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_MOUNTROOT);
	cr_expect(strstr(b.reason, "/dev/ufsid/0123456789abcdef"), "%s", b.reason);
	cr_expect_eq(b.nmounts, 0);
	boot_result_clear(&b);
	/* for /usr: single-user mode, not reachable, the reason names it */
	put("etc/fstab", "/dev/ufsid/4f13ff5d2bf8a1c6 / ufs rw 1 1\n"
			 "/dev/vtbd0s1b none swap sw 0 0\n"
			 "/dev/ufsid/0123456789abcdef /usr ufs rw 2 2\n");
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_SINGLE_USER);
	cr_expect_not(b.reachable);
	cr_expect(strstr(b.reason, "single-user") && strstr(b.reason, "/usr") &&
			  strstr(b.reason, "/dev/ufsid/0123456789abcdef"),
		  "%s", b.reason);
	cr_expect_str_eq(boot_state_name(b.state), "single-user");
	cr_expect_str_eq(b.nic, "vtnet0");
	cr_expect_eq(b.nmounts, 0);
	boot_result_clear(&b);
	/* a stale raw device for /tmp does the same; a stale swap does not */
	put("etc/fstab", "/dev/ufsid/4f13ff5d2bf8a1c6 / ufs rw 1 1\n"
			 "/dev/ad0s1b none swap sw 0 0\n"
			 "/dev/ad0s1e /tmp ufs rw 2 2\n");
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_SINGLE_USER);
	cr_expect(strstr(b.reason, "/dev/ad0s1e"), "%s", b.reason);
	boot_result_clear(&b);
	put("etc/fstab", "/dev/ufsid/4f13ff5d2bf8a1c6 / ufs rw 1 1\n"
			 "/dev/ad0s1b none swap sw 0 0\n");
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_expect_eq(b.nswaps, 0, "a swap device that does not exist is not used");
	cr_assert_eq(b.nmounts, 1);
	boot_result_clear(&b);
	rmtree(root);
}

Test(mounts, freebsd14_gpt_labels)
{
	fixture_root("freebsd-14", NULL);
	put("etc/rc.conf", "ifconfig_vtnet0=\"DHCP\"\n");
	struct boot_result b;
	eval("freebsd-14", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert_eq(b.nmounts, 2);
	expect_mount(&b, 0, "/dev/gpt/rootfs", "/", "ufs");
	expect_mount(&b, 1, "/dev/gpt/efiesp", "/boot/efi", "msdosfs");
	cr_assert_eq(b.nswaps, 1);
	cr_expect_str_eq(b.swaps[0].dev, "/dev/vtbd0p3", "gpt/swapfs is partition 3");
	boot_result_clear(&b);
	/* a label gpart does not show */
	put("etc/fstab", "/dev/gpt/nosuch / ufs rw 1 1\n");
	eval("freebsd-14", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_MOUNTROOT);
	cr_expect(strstr(b.reason, "/dev/gpt/nosuch"), "%s", b.reason);
	boot_result_clear(&b);
	rmtree(root);
}

Test(mounts, freebsd14_zfs_root)
{
	fixture_root("freebsd-14-zfs", "expected-virtio");
	put("etc/rc.conf", "ifconfig_vtnet0=\"DHCP\"\n");
	struct boot_result b;
	eval("freebsd-14", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert_eq(b.nmounts, 2);
	expect_mount(&b, 0, "zroot/ROOT/default", "/", "zfs");
	expect_mount(&b, 1, "/dev/gpt/efiboot0", "/boot/efi", "msdosfs");
	cr_assert_eq(b.nswaps, 1);
	cr_expect_str_eq(b.swaps[0].dev, "/dev/vtbd0p3");
	boot_result_clear(&b);
	rmtree(root);
}

Test(mounts, ubuntu904_uuid_root_and_swap)
{
	fixture_root("ubuntu-9.04", NULL);
	struct boot_result b;
	eval("ubuntu-9.04", root,
	     "{\"ide0\":\"l:vm-1-disk-0,size=16G\",\"net0\":\"e1000=52:54:00:3A:9C:1E\"}", &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_expect(b.linux_guest);
	/* Linux reports the device UUID= resolved to */
	cr_assert_eq(b.nmounts, 2);
	expect_mount(&b, 0, "/dev/sda1", "/", "ext3");
	expect_mount(&b, 1, "proc", "/proc", "proc");
	cr_assert_eq(b.nswaps, 1);
	cr_expect_str_eq(b.swaps[0].dev, "/dev/sda5");
	cr_expect_not(b.swaps[0].file);
	cr_assert_eq(b.nblockdevs, 3);
	cr_expect_str_eq(b.blockdevs[0].name, "sda");
	cr_expect_eq(b.blockdevs[0].major, 8);
	cr_expect_eq(b.blockdevs[0].minor, 0);
	cr_expect_eq(b.blockdevs[0].kib, 16ULL * 1024 * 1024);
	cr_expect_str_eq(b.blockdevs[1].name, "sda1");
	cr_expect_eq(b.blockdevs[1].minor, 1);
	cr_expect_str_eq(b.blockdevs[2].name, "sda5");
	cr_expect_eq(b.blockdevs[2].minor, 5);
	cr_expect_eq(b.swaps[0].kib, b.blockdevs[2].kib);
	boot_result_clear(&b);
	/* on virtio with the modules: vda; the /dev/sda5 swap line is stale */
	put("etc/initramfs-tools/modules", "virtio_pci\nvirtio_blk\nvirtio_net\n");
	eval("ubuntu-9.04", root,
	     "{\"virtio0\":\"l:vm-1-disk-0,size=16G\",\"net0\":\"virtio=52:54:00:3A:9C:1E\"}", &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_expect_str_eq(b.disk_bus, "virtio-blk");
	expect_mount(&b, 0, "/dev/vda1", "/", "ext3");
	cr_expect_eq(b.nswaps, 0);
	cr_assert_eq(b.nblockdevs, 3);
	cr_expect_str_eq(b.blockdevs[0].name, "vda");
	cr_expect_eq(b.blockdevs[0].major, 252);
	cr_expect_str_eq(b.blockdevs[2].name, "vda5", "partitions known from blkid");
	boot_result_clear(&b);
	/* after the rewrite to UUID= the swap follows */
	put("etc/fstab", "proc /proc proc defaults 0 0\n"
			 "UUID=2b629f5a-1fca-44f5-b316-7b510e9936bc / ext3 relatime 0 1\n"
			 "UUID=71c1bbe8-3877-42d8-975a-5fc7af1d203a none swap sw 0 0\n");
	eval("ubuntu-9.04", root,
	     "{\"virtio0\":\"l:vm-1-disk-0,size=16G\",\"net0\":\"virtio=52:54:00:3A:9C:1E\"}", &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_assert_eq(b.nswaps, 1);
	cr_expect_str_eq(b.swaps[0].dev, "/dev/vda5");
	boot_result_clear(&b);
	/* a UUID blkid does not know: no root device */
	put("etc/fstab", "UUID=00000000-1fca-44f5-b316-7b510e9936bc / ext3 relatime 0 1\n");
	eval("ubuntu-9.04", root, UB_IDE, &b);
	cr_assert_eq(b.state, BOOT_INITRAMFS);
	cr_expect(strstr(b.reason, "UUID=00000000"), "%s", b.reason);
	boot_result_clear(&b);
	/* ... and for another file system: emergency mode */
	put("etc/fstab", "UUID=2b629f5a-1fca-44f5-b316-7b510e9936bc / ext3 relatime 0 1\n"
			 "/dev/sdb1 /srv ext3 defaults 0 2\n");
	eval("ubuntu-9.04", root,
	     "{\"ide0\":\"l:vm-1-disk-0,size=16G\",\"net0\":\"e1000=52:54:00:3A:9C:1E\"}", &b);
	cr_assert_eq(b.state, BOOT_SINGLE_USER);
	cr_expect(strstr(b.reason, "/dev/sdb1") && strstr(b.reason, "/srv"), "%s", b.reason);
	boot_result_clear(&b);
	rmtree(root);
}

Test(mounts, ubuntu2404_by_uuid_and_swap_file)
{
	fixture_root("ubuntu-24.04", NULL);
	struct boot_result b;
	const char *cfg = "{\"scsi0\":\"l:vm-1-disk-0,size=32G\",\"scsihw\":\"virtio-scsi-single\","
			  "\"net0\":\"virtio=BC:24:11:5E:2A:7C\"}";
	eval("ubuntu-24.04", root, cfg, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	cr_expect_str_eq(b.disk_bus, "virtio-scsi");
	cr_assert_eq(b.nmounts, 1);
	expect_mount(&b, 0, "/dev/sda2", "/", "ext4");
	cr_expect_eq(b.nswaps, 0, "no /swap.img in the tree: swapon fails");
	cr_assert_eq(b.nblockdevs, 2, "the disk and its partition with a file system");
	cr_expect_str_eq(b.blockdevs[0].name, "sda");
	cr_expect_str_eq(b.blockdevs[1].name, "sda2");
	cr_expect_eq(b.blockdevs[1].minor, 2);
	boot_result_clear(&b);
	put("swap.img", "0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123"
			"0123456789012345678901234567890123456789012345678901234567890123");
	eval("ubuntu-24.04", root, UB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	expect_mount(&b, 0, "/dev/vda2", "/", "ext4");
	cr_assert_eq(b.nswaps, 1);
	cr_expect_str_eq(b.swaps[0].dev, "/swap.img");
	cr_expect(b.swaps[0].file);
	cr_expect_eq(b.swaps[0].kib, 1);
	boot_result_clear(&b);
	rmtree(root);
}

Test(mounts, not_booted_mounts_nothing)
{
	fixture_root("freebsd-9.0", NULL);
	struct boot_result b;
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_MOUNTROOT);
	cr_expect_eq(b.nmounts, 0);
	cr_expect_eq(b.nswaps, 0);
	cr_expect_str_eq(b.disk_bus, "virtio-blk");
	cr_expect_str_eq(b.mac, "bc:24:11:00:00:01");
	boot_result_clear(&b);
	rmtree(root);
}

/* ---- the boot file and /proc (bootfacts.c) ----------------------------- */

static char *slurp(const char *rel)
{
	char *path = strprintf("%s/%s", root, rel);
	char *text = NULL;
	if (read_file(path, &text, NULL) < 0)
		text = NULL;
	free(path);
	return text;
}

Test(bootfacts, freebsd_boot_file)
{
	fixture_root("freebsd-9.0", NULL);
	struct boot_result b;
	eval("freebsd-9.0", root,
	     "{\"ide0\":\"l:vm-1-disk-0,size=16G\",\"net0\":\"e1000=BC:24:11:00:01:90,bridge=vmbr0\","
	     "\"boot\":\"order=ide0\"}", &b);
	char *t = bootfacts_text(&b, "127.0.1.90", 3);
	cr_expect_str_eq(t, "state up\n"
			    "reachable yes\n"
			    "boot-id 3\n"
			    "disk-bus ide\n"
			    "nic-model e1000\n"
			    "disk ad0\n"
			    "disk ada0\n"
			    "nic em0\n"
			    "mac bc:24:11:00:01:90\n"
			    "address 127.0.1.90\n"
			    "mount /dev/ad0s1a / ufs\n"
			    "mount /dev/ad0s1e /tmp ufs\n"
			    "mount /dev/ad0s1f /usr ufs\n"
			    "mount /dev/ad0s1d /var ufs\n"
			    "swap /dev/ad0s1b\n");
	free(t);
	char *err = NULL;
	cr_assert_eq(bootfacts_write(root, &b, "127.0.1.90", 3, &err), 0, "%s", err);
	t = slurp(".pvagent-facts/boot");
	cr_assert_not_null(t);
	cr_expect(strstr(t, "state up\nreachable yes\n") == t, "%s", t);
	free(t);
	cr_expect_null(slurp("proc/mounts"), "no /proc files on FreeBSD");
	boot_result_clear(&b);
	/* hung at mountroot: the reason, no address and no mounts */
	eval("freebsd-9.0", root, FB_VIRTIO, &b);
	t = bootfacts_text(&b, "127.0.1.90", 4);
	cr_expect_str_eq(t, "state mountroot\n"
			    "reachable no\n"
			    "boot-id 4\n"
			    "disk-bus virtio-blk\n"
			    "nic-model virtio\n"
			    "disk vtbd0\n"
			    "nic vtnet0\n"
			    "mac bc:24:11:00:00:01\n"
			    "reason mountroot: no driver for virtio-blk disk vtbd0 (virtio_blk not "
			    "loaded from boot/loader.conf)\n");
	free(t);
	boot_result_clear(&b);
	/* stopped: exactly two lines */
	struct boot_result stopped = {.state = BOOT_STOPPED};
	t = bootfacts_text(&stopped, "127.0.1.90", 4);
	cr_expect_str_eq(t, "state stopped\nreachable no\n");
	free(t);
	cr_assert_eq(bootfacts_write(root, &stopped, "127.0.1.90", 4, &err), 0, "%s", err);
	t = slurp(".pvagent-facts/boot");
	cr_expect_str_eq(t, "state stopped\nreachable no\n");
	free(t);
	/* replaced by rename: no temp file stays behind */
	char *dir = strprintf("%s/.pvagent-facts", root);
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	struct dirent *e;
	while ((e = readdir(d)))
		cr_expect(e->d_name[0] == '.' ? strcmp(e->d_name, ".") == 0 ||
							strcmp(e->d_name, "..") == 0
					      : strcmp(e->d_name, "boot") == 0 ||
							strcmp(e->d_name, "facts") == 0,
			  "left behind: %s", e->d_name);
	closedir(d);
	free(dir);
	rmtree(root);
}

Test(bootfacts, linux_proc_files)
{
	fixture_root("ubuntu-9.04", NULL);
	struct boot_result b;
	const char *ide = "{\"ide0\":\"l:vm-1-disk-0,size=16G\",\"net0\":\"e1000=52:54:00:3A:9C:1E\"}";
	eval("ubuntu-9.04", root, ide, &b);
	cr_assert_eq(b.state, BOOT_UP, "%s", b.reason ? b.reason : "");
	char *t = bootfacts_proc_mounts(&b);
	cr_expect_str_eq(t, "/dev/sda1 / ext3 rw,relatime 0 0\n"
			    "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
			    "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n");
	free(t);
	t = bootfacts_proc_swaps(&b);
	cr_expect_str_eq(t, "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
			    "/dev/sda5                               partition\t8388096\t\t0\t\t-2\n");
	free(t);
	t = bootfacts_proc_partitions(&b);
	cr_expect_str_eq(t, "major minor  #blocks  name\n"
			    "\n"
			    "   8        0   16777216 sda\n"
			    "   8        1    8388096 sda1\n"
			    "   8        5    8388096 sda5\n");
	free(t);
	char *err = NULL;
	cr_assert_eq(bootfacts_write(root, &b, "127.0.1.94", 1, &err), 0, "%s", err);
	char *mounts = slurp("proc/mounts");
	cr_assert_not_null(mounts);
	cr_expect(strstr(mounts, "/dev/sda1 / ext3 "), "%s", mounts);
	char *parts = slurp("proc/partitions");
	cr_expect(parts && strstr(parts, " sda5\n"), "%s", parts ? parts : "(none)");
	t = slurp(".pvagent-facts/boot");
	cr_expect(t && strstr(t, "\nmount /dev/sda1 / ext3\nmount proc /proc proc\nswap /dev/sda5\n"),
		  "%s", t ? t : "(none)");
	free(t);
	boot_result_clear(&b);
	/* not up: the boot file changes, /proc keeps what the running guest had */
	eval("ubuntu-9.04", root, UB_VIRTIO, &b);
	cr_assert_eq(b.state, BOOT_INITRAMFS);
	cr_assert_eq(bootfacts_write(root, &b, "127.0.1.94", 2, &err), 0, "%s", err);
	t = slurp(".pvagent-facts/boot");
	cr_expect(t && strstr(t, "state initramfs\n") == t, "%s", t ? t : "(none)");
	free(t);
	t = slurp("proc/mounts");
	cr_expect_str_eq(t, mounts);
	free(t);
	free(mounts);
	free(parts);
	boot_result_clear(&b);
	rmtree(root);
}

Test(bootfacts, write_errors_name_the_file)
{
	struct boot_result b = {.state = BOOT_STOPPED};
	char *err = NULL;
	cr_assert_eq(bootfacts_write("/nonexistent/guest", &b, NULL, 0, &err), -1);
	cr_expect(err && strstr(err, "/nonexistent/guest/.pvagent-facts"), "%s", err ? err : "");
	free(err);
}
