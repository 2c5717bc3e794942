/* test_migrate_plan.c - the pure migration planner: every refusal (not
 * allowed, offline, memory with reserve, storage missing, local resources
 * and mapped ones, local ISO, bind mounts), the method by kind and state,
 * storage maps, the request parameters, and the estimate. */
#include <criterion/criterion.h>
#include <string.h>

#include "migrate_plan.h"
#include "util.h"

#define MiB (1024ull * 1024ull)

static json_object *J(const char *s)
{
	json_object *o = json_tokener_parse(s);
	cr_assert_not_null(o, "bad test JSON: %s", s);
	return o;
}

static const char *STORAGES =
	"[{\"storage\":\"local\",\"enabled\":1,\"active\":1,\"shared\":0},"
	" {\"storage\":\"local-lvm\",\"enabled\":1,\"active\":1,\"shared\":0},"
	" {\"storage\":\"ceph\",\"enabled\":1,\"active\":1,\"shared\":1}]";

static struct mig_facts qemu_facts(json_object *pre, json_object *st)
{
	return (struct mig_facts){
		.type = GUEST_QEMU, .vmid = 100, .source = "pve1", .target = "pve2",
		.running = true, .memory = 2048 * MiB, .precondition = pre,
		.target_known = true, .target_online = true, .target_mem_free = 8192 * MiB,
		.target_storages = st, .memory_reserve = 1024 * MiB,
	};
}

Test(migrate_plan, already_there)
{
	struct mig_facts f = qemu_facts(NULL, NULL);
	f.target = "pve1";
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_eq(p.method, MIG_NONE);
	cr_expect_null(p.refusal);
	mig_plan_free(&p);
}

Test(migrate_plan, shared_online)
{
	json_object *pre = J("{\"running\":1,\"allowed_nodes\":[\"pve2\"],\"not_allowed_nodes\":{},"
			     "\"local_disks\":[],\"local_resources\":[],\"mapped-resource-info\":{}}");
	json_object *st = J(STORAGES);
	struct mig_facts f = qemu_facts(pre, st);
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	cr_expect_eq(p.method, MIG_ONLINE);
	cr_expect_not(p.with_local_disks);
	struct pve_params pp = {0};
	cr_assert_eq(migrate_plan_params(&p, &f, 51200, &pp), 0);
	cr_expect_str_eq(pve_params_get(&pp, "target"), "pve2");
	cr_expect_str_eq(pve_params_get(&pp, "online"), "1");
	cr_expect_str_eq(pve_params_get(&pp, "bwlimit"), "51200");
	cr_expect_null(pve_params_get(&pp, "with-local-disks"));
	pve_params_free(&pp);
	mig_plan_free(&p);
	json_object_put(pre);
	json_object_put(st);
}

Test(migrate_plan, local_disks_with_map)
{
	json_object *pre = J("{\"running\":1,\"allowed_nodes\":[],\"not_allowed_nodes\":"
			     "{\"pve2\":{\"unavailable_storages\":[\"fast\"]}},"
			     "\"local_disks\":[{\"volid\":\"fast:vm-100-disk-0\",\"size\":10737418240,"
			     "\"cdrom\":0,\"is_unused\":0,\"drivename\":\"scsi0\"}],"
			     "\"local_resources\":[]}");
	json_object *st = J(STORAGES);
	struct mig_facts f = qemu_facts(pre, st);
	struct mig_plan p;
	/* without a map: refused, naming the storage and the fix */
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_assert_not_null(p.refusal);
	cr_expect(strstr(p.refusal, "storage 'fast' is not available on node 'pve2'"), "%s",
		  p.refusal);
	cr_expect(strstr(p.refusal, "--storage-map fast:DST"), "%s", p.refusal);
	mig_plan_free(&p);
	/* drain's plan: no map to offer */
	f.no_storage_map = true;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_str_eq(p.refusal, "storage 'fast' is not available on node 'pve2'");
	mig_plan_free(&p);
	f.no_storage_map = false;
	/* mapped to a storage the target has */
	f.storage_map = "fast:local-lvm";
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	cr_expect_eq(p.method, MIG_ONLINE);
	cr_expect(p.with_local_disks);
	cr_expect_eq(p.disk_bytes, 10737418240ull);
	struct pve_params pp = {0};
	cr_assert_eq(migrate_plan_params(&p, &f, 0, &pp), 0);
	cr_expect_str_eq(pve_params_get(&pp, "with-local-disks"), "1");
	cr_expect_str_eq(pve_params_get(&pp, "targetstorage"), "fast:local-lvm");
	cr_expect_null(pve_params_get(&pp, "bwlimit"));
	pve_params_free(&pp);
	mig_plan_free(&p);
	/* [migrate] with_local_disks = no: not live; stopped, it is offline */
	f.storage_map = "fast:local-lvm";
	f.no_live_local_disks = true;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_assert_not_null(p.refusal);
	cr_expect(strstr(p.refusal, "VM 100 is running with local disks, and [migrate] "
			 "with_local_disks = no"), "%s", p.refusal);
	mig_plan_free(&p);
	f.running = false;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	cr_expect_eq(p.method, MIG_OFFLINE);
	mig_plan_free(&p);
	f.running = true;
	f.no_live_local_disks = false;
	/* mapped to one it does not have */
	f.storage_map = "fast:nvme";
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_assert_not_null(p.refusal);
	cr_expect(strstr(p.refusal, "nor the mapped one"), "%s", p.refusal);
	mig_plan_free(&p);
	json_object_put(pre);
	json_object_put(st);
}

Test(migrate_plan, local_resources_say_which_and_how)
{
	json_object *pre = J("{\"running\":1,\"local_disks\":[],"
			     "\"local_resources\":[\"hostpci0\",\"usb1\"],"
			     "\"mapped-resource-info\":{\"hostpci0\":{\"name\":\"gpu\"}}}");
	struct mig_facts f = qemu_facts(pre, NULL);
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_assert_not_null(p.refusal);
	cr_expect(strstr(p.refusal, "hostpci0 mapped 'gpu' without live migration (stop the VM"),
		  "%s", p.refusal);
	cr_expect(strstr(p.refusal, "usb1 (USB passthrough"), "%s", p.refusal);
	mig_plan_free(&p);
	json_object_put(pre);
}

Test(migrate_plan, local_iso)
{
	json_object *pre = J("{\"running\":0,\"local_resources\":[],\"local_disks\":"
			     "[{\"volid\":\"local:iso/ubuntu.iso\",\"cdrom\":1,\"is_unused\":0,"
			     "\"size\":1000,\"drivename\":\"ide2\"}]}");
	struct mig_facts f = qemu_facts(pre, NULL);
	f.running = false;
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_assert_not_null(p.refusal);
	cr_expect(strstr(p.refusal, "local ISO 'local:iso/ubuntu.iso' in its CD drive ide2"), "%s",
		  p.refusal);
	cr_expect(strstr(p.refusal, "qm set 100 --ide2 none,media=cdrom"), "%s", p.refusal);
	mig_plan_free(&p);
	json_object_put(pre);
}

Test(migrate_plan, offline_and_unknown_target)
{
	struct mig_facts f = qemu_facts(NULL, NULL);
	struct mig_plan p;
	f.target_online = false;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_str_eq(p.refusal, "node 'pve2' is offline");
	mig_plan_free(&p);
	f.target_known = false;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect(strstr(p.refusal, "there is no node 'pve2'"));
	mig_plan_free(&p);
}

Test(migrate_plan, memory_counts_the_reserve)
{
	struct mig_facts f = qemu_facts(NULL, NULL);
	f.target_mem_free = 2560 * MiB; /* 2 GiB guest + 1 GiB reserve do not fit */
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_assert_not_null(p.refusal);
	cr_expect(strstr(p.refusal, "not enough free memory on node 'pve2': 2560 MiB free, the "
				    "guest needs 2048 MiB plus the reserve of 1024 MiB"),
		  "%s", p.refusal);
	mig_plan_free(&p);
	f.target_mem_free = 3072 * MiB;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal);
	mig_plan_free(&p);
	/* a stopped guest needs no memory there to move */
	f.target_mem_free = 0;
	f.running = false;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal);
	cr_expect_eq(p.method, MIG_OFFLINE);
	mig_plan_free(&p);
}

Test(migrate_plan, lxc_restart_and_storage)
{
	json_object *cfg = J("{\"hostname\":\"ct1\",\"memory\":512,"
			     "\"rootfs\":\"local-lvm:vm-200-disk-0,size=8G\"}");
	json_object *st = J(STORAGES);
	struct mig_facts f = {
		.type = GUEST_LXC, .vmid = 200, .source = "pve1", .target = "pve2",
		.running = true, .memory = 512 * MiB, .config = cfg, .target_known = true,
		.target_online = true, .target_mem_free = 4096 * MiB, .target_storages = st,
		.restart_timeout = 60,
	};
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	cr_expect_eq(p.method, MIG_RESTART);
	cr_expect_eq(p.disk_bytes, 8ull << 30);
	struct pve_params pp = {0};
	cr_assert_eq(migrate_plan_params(&p, &f, 0, &pp), 0);
	cr_expect_str_eq(pve_params_get(&pp, "restart"), "1");
	cr_expect_str_eq(pve_params_get(&pp, "timeout"), "60");
	cr_expect_null(pve_params_get(&pp, "online"));
	pve_params_free(&pp);
	mig_plan_free(&p);
	/* a storage the target lacks */
	f.storage_map = "nvme";
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_assert_not_null(p.refusal);
	cr_expect(strstr(p.refusal, "storage 'nvme' of rootfs is not available on node 'pve2'"),
		  "%s", p.refusal);
	mig_plan_free(&p);
	/* stopped: offline */
	f.storage_map = NULL;
	f.running = false;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_eq(p.method, MIG_OFFLINE);
	mig_plan_free(&p);
	json_object_put(cfg);
	json_object_put(st);
}

Test(migrate_plan, lxc_bind_mount_refused)
{
	json_object *cfg = J("{\"rootfs\":\"ceph:vm-200-disk-0,size=8G\","
			     "\"mp0\":\"/srv/data,mp=/data\"}");
	struct mig_facts f = {
		.type = GUEST_LXC, .vmid = 200, .source = "pve1", .target = "pve2",
		.config = cfg, .target_known = true, .target_online = true,
	};
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_assert_not_null(p.refusal);
	cr_expect(strstr(p.refusal, "mp0, a bind mount of the host path /srv/data"), "%s",
		  p.refusal);
	mig_plan_free(&p);
	json_object_put(cfg);
}

Test(migrate_plan, openvz_online)
{
	json_object *cfg = J("{\"hostname\":\"vz1\",\"memory\":512}");
	struct mig_facts f = {
		.type = GUEST_OPENVZ, .vmid = 300, .source = "pve1", .target = "pve2",
		.running = true, .memory = 512 * MiB, .config = cfg, .target_known = true,
		.target_online = true, .target_mem_free = 1024 * MiB,
	};
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal);
	cr_expect_eq(p.method, MIG_ONLINE);
	struct pve_params pp = {0};
	cr_assert_eq(migrate_plan_params(&p, &f, 10240, &pp), 0);
	cr_expect_str_eq(pve_params_get(&pp, "online"), "1");
	cr_expect_null(pve_params_get(&pp, "bwlimit")); /* PVE 3 has none */
	pve_params_free(&pp);
	mig_plan_free(&p);
	json_object_put(cfg);
}

Test(migrate_plan, maps_and_estimate)
{
	const char *why;
	cr_expect(migrate_map_valid("local-lvm", &why));
	cr_expect(migrate_map_valid("a:b,c:d", &why));
	cr_expect_not(migrate_map_valid("a:b,c", &why));
	cr_expect_not(migrate_map_valid("a:", &why));
	cr_expect_not(migrate_map_valid("", &why));
	cr_expect_not(migrate_map_valid("a b", &why));
	char *s = migrate_map_storage("a:b,c:d", "c");
	cr_expect_str_eq(s, "d");
	free(s);
	s = migrate_map_storage("a:b", "x");
	cr_expect_str_eq(s, "x");
	free(s);
	s = migrate_map_storage("dst", "x");
	cr_expect_str_eq(s, "dst");
	free(s);
	cr_expect_float_eq(migrate_estimate_s(MIG_ONLINE, 1024 * MiB, 0, 0, 0), 3.0 + 10.24, 1e-9);
	cr_expect_float_eq(migrate_estimate_s(MIG_OFFLINE, 1024 * MiB, 200 * MiB, 0, 0), 4.0, 1e-9);
	cr_expect_float_eq(migrate_estimate_s(MIG_NONE, 1, 1, 0, 0), 0, 1e-9);
}

/* A local disk a snapshot holds (pvagent's own after a virtio switch, or
 * the user's): PVE 8 moves it neither while the VM runs nor offline on
 * storage whose snapshots do not travel (LVM-thin); offline on ZFS it
 * goes. */
Test(migrate_plan, local_disk_held_by_a_snapshot)
{
	json_object *pre = J("{\"running\":1,\"allowed_nodes\":[\"pve2\"],\"not_allowed_nodes\":{},"
			     "\"local_disks\":[{\"volid\":\"local-lvm:vm-100-disk-0\",\"size\":1073741824,"
			     "\"cdrom\":0,\"is_unused\":0,\"drivename\":\"virtio0\"}],"
			     "\"local_resources\":[]}");
	json_object *st = J("[{\"storage\":\"local-lvm\",\"type\":\"lvmthin\",\"enabled\":1,"
			    "\"active\":1,\"shared\":0}]");
	json_object *zst = J("[{\"storage\":\"local-lvm\",\"type\":\"zfspool\",\"enabled\":1,"
			     "\"active\":1,\"shared\":0}]");
	json_object *refs = J("{\"local-lvm:vm-100-disk-0\":[\"pvagent_virtio\"]}");
	static const struct {
		bool running, zfs;
		const char *want; /* in the refusal; NULL: it goes */
	} cases[] = {
		{true, false, "PVE cannot move snapshots on lvmthin storage 'local-lvm' (and not at "
			      "all while the VM runs); delete the snapshot (qm delsnapshot 100 "
			      "pvagent_virtio)"},
		{false, false, "PVE cannot move snapshots on lvmthin storage 'local-lvm'"},
		{true, true, "PVE cannot move it while the VM runs; shut the VM down"},
		{false, true, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct mig_facts f = qemu_facts(pre, cases[i].zfs ? zst : st);
		f.running = cases[i].running;
		f.snapshot_refs = refs;
		struct mig_plan p;
		cr_assert_eq(migrate_plan(&f, &p), 0);
		if (cases[i].want) {
			cr_expect(p.refusal && strstr(p.refusal, cases[i].want) &&
					  strstr(p.refusal, "VM 100's local disk local-lvm:vm-100-disk-0 "
							    "is held by its snapshot pvagent_virtio:"),
				  "case %zu: %s", i, p.refusal ? p.refusal : "(no refusal)");
		} else {
			cr_expect_null(p.refusal, "case %zu: %s", i, p.refusal);
			cr_expect_eq(p.method, MIG_OFFLINE);
		}
		mig_plan_free(&p);
	}
	/* no snapshot holds it: the running VM goes online with its disk */
	struct mig_facts f = qemu_facts(pre, st);
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	cr_expect_eq(p.method, MIG_ONLINE);
	mig_plan_free(&p);
	json_object_put(pre);
	json_object_put(st);
	json_object_put(zst);
	json_object_put(refs);
}

/* pve-container LXC/Migrate.pm phase1: a volume a snapshot references
 * moves only on zfspool and btrfs, or stays on shared storage; on any
 * other the container stays, running or not. */
Test(migrate_plan, lxc_snapshot_on_local_storage)
{
	json_object *cfg = J("{\"hostname\":\"ct1\",\"parent\":\"s1\","
			     "\"rootfs\":\"vol:subvol-200-disk-0,size=8G\"}");
	json_object *refs = J("{\"vol:subvol-200-disk-0\":[\"s1\",\"s2\"]}");
	static const struct {
		const char *type;
		int shared;
		bool running, refused;
	} cases[] = {
		{"dir", 0, false, true},    {"lvmthin", 0, true, true}, {"lvm", 0, false, true},
		{"zfspool", 0, true, false}, {"btrfs", 0, false, false}, {"nfs", 1, false, false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *sj = strprintf("[{\"storage\":\"vol\",\"type\":\"%s\",\"enabled\":1,"
				     "\"active\":1,\"shared\":%d}]", cases[i].type, cases[i].shared);
		json_object *st = J(sj);
		struct mig_facts f = {
			.type = GUEST_LXC, .vmid = 200, .source = "pve1", .target = "pve2",
			.running = cases[i].running, .config = cfg, .target_known = true,
			.target_online = true, .target_mem_free = 4096 * MiB, .target_storages = st,
			.snapshot_refs = refs,
		};
		struct mig_plan p;
		cr_assert_eq(migrate_plan(&f, &p), 0);
		if (cases[i].refused) {
			char *want = strprintf("CT 200's volume vol:subvol-200-disk-0 is held by its "
					       "snapshots s1, s2 on %s storage 'vol'", cases[i].type);
			cr_expect(p.refusal && strstr(p.refusal, want) &&
					  strstr(p.refusal, "non-migratable snapshot exists") &&
					  strstr(p.refusal, "pct delsnapshot 200 s1"),
				  "%s: %s", cases[i].type, p.refusal ? p.refusal : "(no refusal)");
			free(want);
		} else {
			cr_expect_null(p.refusal, "%s: %s", cases[i].type, p.refusal);
			cr_expect_eq(p.method, cases[i].running ? MIG_RESTART : MIG_OFFLINE);
		}
		mig_plan_free(&p);
		json_object_put(st);
		free(sj);
	}
	json_object_put(cfg);
	json_object_put(refs);
}

/* QemuMigrate::scan_local_volumes: a disk by absolute path in
 * local_disks (not shared=1) is "local file/device"; a CD drive's
 * refusal comes first, as the corpus's simple-disk-passthrough shows. */
Test(migrate_plan, disk_by_path_refused)
{
	static const char *const pres[] = {
		/* scsiblk.conf, stopped */
		"{\"running\":0,\"allowed_nodes\":[\"pve2\"],\"not_allowed_nodes\":{},\"local_disks\":"
		"[{\"volid\":\"/dev/sdg\",\"cdrom\":0,\"is_unused\":0,\"drivename\":\"scsi0\","
		"\"size\":34359738368}],\"local_resources\":[]}",
		/* simple-disk-passthrough.conf, running */
		"{\"running\":1,\"local_disks\":[{\"volid\":\"/dev/sda\",\"cdrom\":0,"
		"\"drivename\":\"scsi1\"},{\"volid\":\"cdrom\",\"cdrom\":1,\"drivename\":\"ide2\"}],"
		"\"local_resources\":[]}",
	};
	json_object *st = J(STORAGES), *pre = J(pres[0]);
	struct mig_facts f = qemu_facts(pre, st);
	f.running = false;
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect(p.refusal && strstr(p.refusal, "VM 100's disk scsi0 is the host's /dev/sdg (a local "
						 "file/device)") &&
			  strstr(p.refusal, "shared=1"),
		  "%s", p.refusal ? p.refusal : "(no refusal)");
	mig_plan_free(&p);
	json_object_put(pre);
	pre = J(pres[1]);
	f = qemu_facts(pre, st);
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect(p.refusal && strstr(p.refusal, "the host's CD drive as ide2"), "%s",
		  p.refusal ? p.refusal : "(no refusal)");
	mig_plan_free(&p);
	json_object_put(pre);
	json_object_put(st);
}

/* PVE 9 HA: blocking resources from either precondition's spelling (qemu's
 * not_allowed_nodes, LXC's not-allowed-nodes) and both causes; a disarmed
 * stack refuses an HA guest only. */
Test(migrate_plan, ha_rules_and_disarmed)
{
	json_object *pre = J("{\"running\":1,\"allowed-nodes\":[],\"not-allowed-nodes\":{\"pve2\":"
			     "{\"blocking-ha-resources\":[{\"sid\":\"ct:201\",\"cause\":"
			     "\"resource-affinity\"},{\"sid\":\"ct:200\",\"cause\":"
			     "\"node-affinity\"}]}},\"dependent-ha-resources\":[]}");
	json_object *st = J(STORAGES);
	struct mig_facts f = qemu_facts(pre, st);
	f.type = GUEST_LXC;
	f.vmid = 200;
	f.ha_managed = true;
	f.config = J("{\"rootfs\":\"ceph:vm-200-disk-0,size=2G\"}");
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_str_eq(p.refusal, "HA resource ct:201 on node 'pve2' is in negative affinity "
				    "with CT 200 (a resource-affinity HA rule); a node-affinity HA "
				    "rule of ct:200 keeps CT 200 off node 'pve2': choose another "
				    "node, or change the rule (ha-manager rules config)");
	mig_plan_free(&p);
	f.target = "pve3";
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	cr_expect_eq(p.method, MIG_RESTART);
	mig_plan_free(&p);
	f.ha_armed_state = "disarming";
	f.ha_resource_mode = "ignore";
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect(p.refusal && strstr(p.refusal, "the HA stack is disarming (resource mode "
						 "ignore)"), "%s", p.refusal);
	mig_plan_free(&p);
	f.ha_managed = false;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	mig_plan_free(&p);
	json_object_put(f.config);
	json_object_put(pre);
	json_object_put(st);
}

/* Versions: parsed as PVE writes them; a live migration to an older
 * release (a point release does not count) is refused, offline is not. */
Test(migrate_plan, versions)
{
	int a, b, c;
	cr_expect_eq(pve_version_parse("9.1.2", &a, &b, &c), 0);
	cr_expect(a == 9 && b == 1 && c == 2);
	cr_expect_eq(pve_version_parse("3.4-16", &a, &b, &c), 0);
	cr_expect(a == 3 && b == 4 && c == 16);
	cr_expect_eq(pve_version_parse("8.4", &a, &b, &c), 0);
	cr_expect(a == 8 && b == 4 && c == -1);
	static const char *const bad[] = {"", "9", "9.", "9.1.", "v9.1", "9.1.2.3", "9.1-2-3",
					  "9.1x", "99999999999.1", NULL};
	for (size_t i = 0; bad[i]; i++)
		cr_expect_eq(pve_version_parse(bad[i], &a, &b, &c), -1, "'%s'", bad[i]);
	struct pve_version v91 = {9, 1, 2, "9.1.2", "9.1"}, v910 = {9, 1, 0, "9.1.0", "9.1"},
			   v84 = {8, 4, 1, "8.4.1", "8.4"};
	cr_expect(migrate_version_older(&v84, &v91));
	cr_expect_not(migrate_version_older(&v910, &v91), "a point release");
	cr_expect_not(migrate_version_older(&v91, &v84));
	cr_expect_not(migrate_version_older(NULL, &v91));
	json_object *pre = J("{\"running\":1,\"allowed_nodes\":[\"pve2\"],\"not_allowed_nodes\":{},"
			     "\"local_disks\":[],\"local_resources\":[]}");
	json_object *st = J(STORAGES);
	struct mig_facts f = qemu_facts(pre, st);
	f.source_version = &v91;
	f.target_version = &v84;
	struct mig_plan p;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect(p.refusal && strstr(p.refusal, "node 'pve2' runs PVE 8.4.1, older than 9.1.2 on "
						 "'pve1'"), "%s", p.refusal);
	mig_plan_free(&p);
	f.running = false;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	cr_expect_eq(p.method, MIG_OFFLINE);
	mig_plan_free(&p);
	json_object_put(pre);
	json_object_put(st);
}

/* Machine types (qemu-server config_to_command on the target): with the
 * target's machine types known, they decide a live migration, whatever
 * the versions: a type the target's QEMU runs goes (pinned old, or with
 * a +pveN it knows), a newer one is refused in qemu-server's words (QEMU
 * too old; qemu-server too old for the +pveN); offline is not judged. */
Test(migrate_plan, machine_types)
{
	json_object *pre = J("{\"running\":1,\"allowed_nodes\":[\"pve2\"],\"not_allowed_nodes\":{},"
			     "\"local_disks\":[],\"local_resources\":[]}");
	json_object *st = J(STORAGES);
	/* an 8.4 node: QEMU 9.2, qemu-server knowing 9.2+pve1 */
	json_object *m84 = J("[{\"id\":\"pc-q35-9.2+pve1\",\"type\":\"q35\",\"version\":\"9.2+pve1\"},"
			     "{\"id\":\"pc-i440fx-9.2+pve1\",\"type\":\"i440fx\",\"version\":\"9.2+pve1\"},"
			     "{\"id\":\"pc-q35-9.2\",\"type\":\"q35\",\"version\":\"9.2\"},"
			     "{\"id\":\"pc-i440fx-9.2\",\"type\":\"i440fx\",\"version\":\"9.2\"},"
			     "{\"id\":\"pc-i440fx-8.1\",\"type\":\"i440fx\",\"version\":\"8.1\"}]");
	struct pve_version v91 = {9, 1, 2, "9.1.2", "9.1"}, v84 = {8, 4, 1, "8.4.1", "8.4"};
	struct mig_facts f = qemu_facts(pre, st);
	f.source_version = &v91;
	f.target_version = &v84;
	f.target_machines = m84;
	static const char *const go[] = {"pc-i440fx-8.1+pve0", "pc-i440fx-9.2+pve1", "pc-q35-9.2",
					 "pc-i440fx-9.2.0+pve0"};
	struct mig_plan p;
	for (size_t i = 0; i < sizeof go / sizeof *go; i++) {
		f.running_machine = go[i];
		cr_assert_eq(migrate_plan(&f, &p), 0);
		cr_expect_null(p.refusal, "%s: %s", go[i], p.refusal);
		cr_expect_eq(p.method, MIG_ONLINE);
		mig_plan_free(&p);
	}
	static const char *const refused[][2] = {
		{"pc-i440fx-10.1+pve0", "Installed QEMU version '9.2' is too old to run machine type "
					"'pc-i440fx-10.1+pve0', please upgrade node 'pve2'"},
		{"pc-q35-9.2+pve2", "Installed qemu-server (max feature level for 9.2 is pve1) is too "
				    "old to run machine type 'pc-q35-9.2+pve2'"},
	};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		f.running_machine = refused[i][0];
		cr_assert_eq(migrate_plan(&f, &p), 0);
		cr_expect(p.refusal && strstr(p.refusal, refused[i][1]), "%s", p.refusal);
		mig_plan_free(&p);
	}
	f.running_machine = "pc-i440fx-10.1+pve0";
	f.running = false; /* offline: started afresh on the target */
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	mig_plan_free(&p);
	/* a newer target with an older PVE version number still goes */
	f.running = true;
	f.source_version = &v84;
	f.target_version = &v84;
	f.running_machine = "pc-i440fx-8.1+pve0";
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	mig_plan_free(&p);
	json_object_put(m84);
	json_object_put(pre);
	json_object_put(st);
}

/* PVE 9 node affinity (pve-ha-manager select_service_node after the CRM's
 * migration): a strict rule's excluded node is refused; with failback
 * (the resource's, default 1) a target below the rule's best usable node
 * is noted (the CRM moves it there again), and in a drain that best node
 * being the drained source refuses, unless it is in HA maintenance;
 * failback 0 and a disabled rule say nothing. */
Test(migrate_plan, ha_node_affinity)
{
	json_object *pre = J("{\"running\":1,\"allowed_nodes\":[\"pve2\",\"pve3\"],"
			     "\"not_allowed_nodes\":{},\"local_disks\":[],\"local_resources\":[]}");
	json_object *st = J(STORAGES);
	json_object *strict = J("[{\"rule\":\"keep\",\"type\":\"node-affinity\",\"resources\":"
				"\"vm:100,vm:101\",\"nodes\":\"pve1,pve2\",\"strict\":1}]");
	json_object *prefer = J("[{\"rule\":\"home\",\"type\":\"node-affinity\",\"resources\":"
				"\"vm:100\",\"nodes\":\"pve1:2,pve2:1\"}]");
	json_object *res = J("[{\"sid\":\"vm:100\",\"state\":\"started\"}]");
	json_object *nofb = J("[{\"sid\":\"vm:100\",\"failback\":0}]");
	json_object *maint = J("[{\"id\":\"lrm:pve1\",\"type\":\"lrm\",\"node\":\"pve1\",\"status\":\"pve1 (maintenance "
			       "mode, 1700000000)\"}]");
	struct mig_facts f = qemu_facts(pre, st);
	f.ha_managed = true;
	f.ha_rules = strict;
	f.ha_resources = res;
	struct mig_plan p;
	f.target = "pve3";
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect(p.refusal && strstr(p.refusal, "the strict node-affinity HA rule 'keep' keeps VM "
						 "100 on pve1,pve2: the CRM would move it off "
						 "'pve3' again"), "%s", p.refusal);
	mig_plan_free(&p);
	f.target = "pve2";
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	cr_expect_null(p.note, "%s", p.note);
	mig_plan_free(&p);
	/* failback: noted by migrate, refused by the drain of pve1 */
	f.ha_rules = prefer;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	cr_expect(p.note && strstr(p.note, "the node-affinity HA rule 'home' prefers pve1 for VM "
					   "100 (failback): the CRM moves it there again"),
		  "%s", p.note);
	mig_plan_free(&p);
	f.source_leaving = true;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect(p.refusal && strstr(p.refusal, "the CRM would migrate it back while 'pve1' is "
						 "drained; put the node in HA maintenance first "
						 "(ha-manager crm-command node-maintenance enable "
						 "pve1)"), "%s", p.refusal);
	mig_plan_free(&p);
	f.ha_status = maint; /* in maintenance: the best usable is pve2 */
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	cr_expect_null(p.note, "%s", p.note);
	mig_plan_free(&p);
	f.ha_status = NULL;
	f.ha_resources = nofb;
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	cr_expect_null(p.note, "%s", p.note);
	mig_plan_free(&p);
	json_object_object_add(json_object_array_get_idx(strict, 0), "disable",
			       json_object_new_int(1));
	f.ha_rules = strict;
	f.target = "pve3";
	cr_assert_eq(migrate_plan(&f, &p), 0);
	cr_expect_null(p.refusal, "%s", p.refusal);
	mig_plan_free(&p);
	json_object_put(pre);
	json_object_put(st);
	json_object_put(strict);
	json_object_put(prefer);
	json_object_put(res);
	json_object_put(nofb);
	json_object_put(maint);
}
