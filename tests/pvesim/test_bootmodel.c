/* test_bootmodel.c - the boot model as a pure function over a PVE config
 * and a guest root written here under a temp dir. */
#include <criterion/criterion.h>

#include "bootmodel.h"
#include "util.h"

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
