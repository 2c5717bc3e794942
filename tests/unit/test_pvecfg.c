/* test_pvecfg.c - property strings and disk/NIC detection (pvecfg.h). */
#include "pvecfg.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

Test(propstr, parse_format_roundtrip_keeps_order)
{
	struct propstr p;
	cr_assert_eq(propstr_parse("local-lvm:vm-100-disk-0,iothread=1,size=32G", &p), 0);
	cr_assert_eq(p.n, 3);
	cr_expect_null(p.v[0].key);
	cr_expect_str_eq(propstr_get(&p, NULL), "local-lvm:vm-100-disk-0");
	cr_expect_str_eq(propstr_get(&p, "size"), "32G");
	cr_expect_null(propstr_get(&p, "cache"));
	cr_assert_eq(propstr_set(&p, "size", "40G"), 0);
	cr_assert_eq(propstr_set(&p, "cache", "none"), 0);
	char *s = propstr_format(&p);
	cr_expect_str_eq(s, "local-lvm:vm-100-disk-0,iothread=1,size=40G,cache=none");
	free(s);
	propstr_free(&p);
}

Test(propstr, rejects_empty_elements)
{
	struct propstr p;
	cr_expect_eq(propstr_parse("a,,b", &p), -1);
	cr_expect_eq(propstr_parse("a,", &p), -1);
	cr_expect_eq(propstr_parse(",a", &p), -1);
	cr_assert_eq(propstr_parse("", &p), 0);
	cr_expect_eq(p.n, 0);
	propstr_free(&p);
}

Test(propstr, equal_ignores_order_only)
{
	cr_expect(propstr_equal("virtio=BC:24:11:00:00:01,bridge=vmbr0",
				"bridge=vmbr0,virtio=BC:24:11:00:00:01"));
	cr_expect_not(propstr_equal("virtio=BC:24:11:00:00:01,bridge=vmbr0",
				    "virtio=BC:24:11:00:00:01,bridge=vmbr1"));
	cr_expect_not(propstr_equal("a=1", "a=1,b=2"));
}

Test(pvecfg, disk_keys)
{
	int i = -1;
	cr_expect_eq(pvecfg_disk_key("ide2", &i), BUS_IDE);
	cr_expect_eq(i, 2);
	cr_expect_eq(pvecfg_disk_key("virtio15", &i), BUS_VIRTIO);
	cr_expect_eq(pvecfg_disk_key("virtio16", &i), BUS_NONE);
	cr_expect_eq(pvecfg_disk_key("scsi30", &i), BUS_SCSI);
	cr_expect_eq(pvecfg_disk_key("scsihw", &i), BUS_NONE);
	cr_expect_eq(pvecfg_disk_key("sata05", &i), BUS_NONE);
	cr_expect_eq(pvecfg_disk_key("ide", &i), BUS_NONE);
}

static json_object *cfg(const char *json)
{
	json_object *o = json_tokener_parse(json);
	cr_assert_not_null(o);
	return o;
}

Test(pvecfg, legacy_ide_e1000_guest)
{
	json_object *c = cfg("{\"name\":\"fbsd9\",\"ide0\":\"local-lvm:vm-120-disk-0,size=20G\","
			     "\"ide2\":\"local:iso/FreeBSD-9.0-RELEASE-amd64-disc1.iso,media=cdrom\","
			     "\"net0\":\"e1000=BC:24:11:00:09:00,bridge=vmbr0\",\"boot\":\"cdn\","
			     "\"bootdisk\":\"ide0\"}");
	struct pvecfg_hw hw;
	cr_assert_eq(pvecfg_hw_read(c, &hw), 0);
	cr_assert_eq(hw.n_disks, 2);
	cr_expect_str_eq(hw.disks[0].key, "ide0");
	cr_expect_not(hw.disks[0].cdrom);
	cr_expect_str_eq(hw.disks[0].volume, "local-lvm:vm-120-disk-0");
	cr_expect(hw.disks[1].cdrom);
	cr_assert_eq(hw.n_nics, 1);
	cr_expect_str_eq(hw.nics[0].model, "e1000");
	cr_expect_str_eq(hw.nics[0].mac, "BC:24:11:00:09:00");
	cr_expect_str_eq(hw.nics[0].bridge, "vmbr0");
	char *d = pvecfg_hw_disk_summary(&hw, "cdn"), *n = pvecfg_hw_nic_summary(&hw);
	cr_expect_str_eq(d, "ide");
	cr_expect_str_eq(n, "e1000");
	free(d);
	free(n);
	pvecfg_hw_free(&hw);
	json_object_put(c);
}

Test(pvecfg, virtio_scsi_guest_boot_order_and_model_key)
{
	json_object *c = cfg("{\"scsihw\":\"virtio-scsi-single\",\"ide2\":\"local-lvm:cloudinit,media=cdrom\","
			     "\"scsi0\":\"local-lvm:vm-101-disk-0,iothread=1\",\"virtio1\":\"local-lvm:vm-101-disk-1\","
			     "\"net1\":\"model=e1000,macaddr=BC:24:11:00:00:02\","
			     "\"net0\":\"virtio=BC:24:11:00:00:01,bridge=vmbr0\","
			     "\"boot\":\"order=scsi0;net0\"}");
	struct pvecfg_hw hw;
	cr_assert_eq(pvecfg_hw_read(c, &hw), 0);
	cr_assert_eq(hw.n_nics, 2);
	cr_expect_str_eq(hw.nics[0].key, "net0");
	cr_expect_str_eq(hw.nics[1].model, "e1000");
	cr_expect_str_eq(hw.nics[1].mac, "BC:24:11:00:00:02");
	char *d = pvecfg_hw_disk_summary(&hw, "order=scsi0;net0"), *n = pvecfg_hw_nic_summary(&hw);
	cr_expect_str_eq(d, "scsi (virtio-scsi-single)");
	cr_expect_str_eq(n, "virtio,e1000");
	free(d);
	free(n);
	d = pvecfg_hw_disk_summary(&hw, "order=virtio1");
	cr_expect_str_eq(d, "virtio");
	free(d);
	pvecfg_hw_free(&hw);
	json_object_put(c);
}

/* qemu-server's cfg2cmd/bootorder-legacy.conf: legacy letters with 'c'
 * boot the bootdisk (bootorder_from_legacy), not the first disk by key;
 * without 'c' no disk has a bootindex and the firmware takes the first */
Test(pvecfg, legacy_boot_letters_and_bootdisk)
{
	json_object *c = cfg("{\"boot\":\"ndca\",\"bootdisk\":\"virtio1\","
			     "\"ide2\":\"none,media=cdrom\","
			     "\"scsi4\":\"local:8006/vm-8006-disk-0.qcow2,discard=on,size=104858K\","
			     "\"virtio0\":\"local:8006/vm-8006-disk-0.qcow2,iothread=1,size=104858K\","
			     "\"virtio1\":\"local:8006/vm-8006-disk-0.qcow2,iothread=1,size=104858K\"}");
	struct pvecfg_hw hw;
	cr_assert_eq(pvecfg_hw_read(c, &hw), 0);
	cr_expect_str_eq(pvecfg_boot_disk(&hw, "ndca", hw.bootdisk)->key, "virtio1");
	char *d = pvecfg_hw_disk_summary(&hw, "ndca");
	cr_expect_str_eq(d, "virtio", "the bootdisk's bus, not scsi4's");
	free(d);
	cr_expect_str_eq(pvecfg_boot_disk(&hw, "legacy=nd", hw.bootdisk)->key, "scsi4");
	cr_expect_str_eq(pvecfg_boot_disk(&hw, NULL, hw.bootdisk)->key, "virtio1", "unset is cdn");
	cr_expect_str_eq(pvecfg_boot_disk(&hw, "order=net0;virtio0", hw.bootdisk)->key, "virtio0",
			 "an order ignores bootdisk");
	pvecfg_hw_free(&hw);
	json_object_put(c);
}

Test(pvecfg, no_disks_no_nics)
{
	json_object *c = cfg("{\"name\":\"empty\",\"memory\":\"512\"}");
	struct pvecfg_hw hw;
	cr_assert_eq(pvecfg_hw_read(c, &hw), 0);
	char *d = pvecfg_hw_disk_summary(&hw, NULL), *n = pvecfg_hw_nic_summary(&hw);
	cr_expect_str_eq(d, "-");
	cr_expect_str_eq(n, "-");
	free(d);
	free(n);
	pvecfg_hw_free(&hw);
	json_object_put(c);
}

/* Found by fuzzing (tests/fuzz/regress/pvecfg_hw/): the config "data" is
 * PVE's answer and need not be an object; a JSON null value is "not set". */
Test(pvecfg, data_that_is_not_an_object)
{
	const char *const bad[] = {"null", "[{\"ide0\":\"local-lvm:vm-100-disk-0\"}]", "\"ide0\"", "1"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		json_object *c = json_tokener_parse(bad[i]); /* NULL for "null" */
		struct pvecfg_hw hw;
		errno = 0;
		cr_expect_eq(pvecfg_hw_read(c, &hw), -1, "%s", bad[i]);
		cr_expect_eq(errno, EINVAL, "%s", bad[i]);
		cr_expect_eq(hw.n_disks + hw.n_nics, 0);
		json_object_put(c);
	}
	json_object *c = cfg("{\"ide0\":null,\"net0\":null,\"scsihw\":null,"
			     "\"virtio0\":\"local-lvm:vm-100-disk-0,size=8G\"}");
	struct pvecfg_hw hw;
	cr_assert_eq(pvecfg_hw_read(c, &hw), 0);
	cr_expect_eq(hw.n_disks, 1);
	cr_expect_str_eq(hw.disks[0].key, "virtio0");
	cr_expect_eq(hw.n_nics, 0);
	cr_expect_null(hw.scsihw);
	pvecfg_hw_free(&hw);
	json_object_put(c);
}

/* Found by fuzzing (tests/fuzz/regress/propstr/): with a key twice, or two
 * values without a key, a string was not equal to itself. */
Test(propstr, equal_with_repeated_entries)
{
	cr_expect(propstr_equal("local-lvm:vm-100-disk-0,size0", "local-lvm:vm-100-disk-0,size0"));
	cr_expect(propstr_equal("size0,local-lvm:vm-100-disk-0", "local-lvm:vm-100-disk-0,size0"));
	cr_expect(propstr_equal("bridge=vmbr0,bridge=vmbr1", "bridge=vmbr1,bridge=vmbr0"));
	cr_expect_not(propstr_equal("bridge=vmbr0,bridge=vmbr0", "bridge=vmbr0,bridge=vmbr1"));
	cr_expect_not(propstr_equal("a,b", "a,a"));
}
