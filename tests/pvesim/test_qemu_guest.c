/* test_qemu_guest.c - the QEMU command line the simulator makes from a PVE
 * config (qemu_guest_argv, tests/pvesim/qemu_guest.c): drives per bus with
 * scsihw, the NIC model and MAC with the SSH forward, the boot order,
 * memory, cores and the guest agent's channel. Runs no QEMU (make lab
 * does). */
#include "qemu_guest.h"
#include "util.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static char *joined(const char *json)
{
	json_object *c = json_tokener_parse(json);
	cr_assert(c, "bad test config %s", json);
	char *err = NULL;
	char **v = qemu_guest_argv(c, 101, "/run/q", "/run/q/disk.qcow2", "local-lvm:vm-101-disk-0",
				   "127.0.4.9", 22, &err);
	json_object_put(c);
	struct sbuf b = {0};
	if (!v)
		sbuf_addf(&b, "ERROR: %s", err ? err : "?");
	for (size_t i = 0; v && v[i]; i++)
		sbuf_addf(&b, "%s%s", i ? " " : "", v[i]);
	free(err);
	qemu_argv_free(v);
	char *s = sbuf_steal(&b);
	cr_assert(s, "out of memory");
	return s;
}

#define HAS(s, part) cr_expect(strstr((s), (part)), "missing \"%s\" in: %s", (part), (s))
#define HASNT(s, part) cr_expect(!strstr((s), (part)), "unexpected \"%s\" in: %s", (part), (s))

Test(qemu_argv, ide_e1000_agent_boot_order)
{
	char *s = joined("{\"name\":\"lab\",\"memory\":\"512\",\"cores\":2,\"agent\":\"1\","
			 "\"boot\":\"order=ide0;net0\",\"ide0\":\"local-lvm:vm-101-disk-0,size=2G\","
			 "\"ide2\":\"none,media=cdrom\","
			 "\"net0\":\"e1000=BC:24:11:00:04:09,bridge=vmbr0\"}");
	HAS(s, "qemu-system-x86_64 ");
	HAS(s, "-machine pc -accel tcg,tb-size=128");
	HAS(s, "-m 512 ");
	HAS(s, "-smp 2,sockets=1,cores=2,maxcpus=2");
	HAS(s, "-drive file=/run/q/disk.qcow2,if=none,id=drive-ide0,format=qcow2");
	HAS(s, "-device ide-hd,bus=ide.0,unit=0,drive=drive-ide0,id=ide0,bootindex=100");
	HAS(s, "-netdev user,id=net0,hostfwd=tcp:127.0.4.9:22-:22");
	HAS(s, "-device e1000,mac=BC:24:11:00:04:09,netdev=net0,bus=pci.0,addr=0x12,id=net0,romfile=,bootindex=101");
	HAS(s, "-chardev socket,path=/run/q/qga.sock,server=on,wait=off,id=qga0");
	HAS(s, "virtserialport,chardev=qga0,name=org.qemu.guest_agent.0");
	HAS(s, "-qmp unix:/run/q/qmp.sock,server=on,wait=off");
	HASNT(s, "ide2"); /* an empty CD-ROM is no disk of the image */
	free(s);
}

Test(qemu_argv, virtio_after_the_switch)
{
	char *s = joined("{\"boot\":\"order=virtio0\",\"unused0\":\"local-lvm:vm-101-disk-1\","
			 "\"virtio0\":\"local-lvm:vm-101-disk-0,size=2G\","
			 "\"net0\":\"virtio=BC:24:11:00:04:09,bridge=vmbr0\"}");
	HAS(s, "-device virtio-blk-pci,drive=drive-virtio0,id=virtio0,bus=pci.0,addr=0xa,bootindex=100");
	HAS(s, "-device virtio-net-pci,mac=BC:24:11:00:04:09");
	HAS(s, "-m 2048 "); /* PVE's default memory */
	HASNT(s, "-chardev socket"); /* no agent */
	HASNT(s, "bootindex=101");
	free(s);
}

Test(qemu_argv, scsi_controllers_and_sata)
{
	char *s = joined("{\"scsihw\":\"virtio-scsi-pci\",\"scsi0\":\"local-lvm:vm-101-disk-0\","
			 "\"bootdisk\":\"scsi0\",\"net0\":\"vmxnet3=BC:24:11:00:04:09\"}");
	HAS(s, "-device virtio-scsi-pci,id=scsihw0");
	HAS(s, "scsi-hd,bus=scsihw0.0,channel=0,scsi-id=0,lun=0,drive=drive-scsi0,id=scsi0,bootindex=100");
	HAS(s, "-device vmxnet3,mac=BC:24:11:00:04:09");
	free(s);
	s = joined("{\"scsi1\":\"local-lvm:vm-101-disk-0\"}");
	HAS(s, "-device lsi,id=scsihw0"); /* PVE's default controller */
	HAS(s, "scsi-hd,bus=scsihw0.0,scsi-id=1,drive=drive-scsi1");
	free(s);
	s = joined("{\"sata0\":\"local-lvm:vm-101-disk-0\"}");
	HAS(s, "-device ahci,id=ahci0");
	HAS(s, "ide-hd,bus=ahci0.0,drive=drive-sata0,id=sata0");
	free(s);
}

Test(qemu_argv, refusals)
{
	char *s = joined("{\"ide0\":\"local-lvm:vm-101-disk-7\"}");
	HAS(s, "ERROR: no drive of the config holds the image's volume 'local-lvm:vm-101-disk-0'");
	free(s);
	s = joined("{\"ide0\":\"local-lvm:vm-101-disk-0\",\"net0\":\"ne2k_isa=BC:24:11:00:04:09\"}");
	HAS(s, "ERROR: net0 'ne2k_isa=BC:24:11:00:04:09': model not supported");
	free(s);
	s = joined("{\"ide0\":\"local-lvm:vm-101-disk-0\",\"cores\":0}");
	HAS(s, "ERROR: cores/sockets must be positive");
	free(s);
}
