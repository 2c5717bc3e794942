/* test_virtio.c - `pvagent virtio` (agent/wf_virtio.*, agent/convert_plan.*): the PVE config
 * change computed from a saved config (disks, cdrom left alone, MAC kept,
 * boot order, scsihw, legacy bootdisk), the restore plan of the rollback
 * (never an unusedN delete); and whole conversions against the simulator,
 * whose boot model decides whether each fixture guest's real sshd
 * (tests/support/guestenv) answers after the switch: every fixture
 * converted and compared file by file with its expected-final tree, a
 * second run changing nothing, and each failure mode forced and rolled
 * back to a guest that answers on IDE/e1000 with its original files.
 * Run from the repository root, as root. */
#include "convworld.h"
#include "json.h"
#include "store.h"
#include "wf_params.h"
#include "workflows.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static json_object *cfg(const char *text)
{
	json_object *o = json_tokener_parse(text);
	cr_assert(o, "bad JSON in the test: %s", text);
	return o;
}

static const char *param(const struct convert_target *t, const char *key)
{
	return pve_params_get(&t->set, key);
}

static const char fbsd9[] =
	"{\"name\":\"fbsd9\",\"boot\":\"order=ide0;ide2;net0\","
	"\"ide0\":\"local-lvm:vm-190-disk-0,size=16G\","
	"\"ide2\":\"local:iso/FreeBSD-9.0-RELEASE-amd64-disc1.iso,media=cdrom\","
	"\"ide1\":\"local-lvm:vm-190-disk-1,cache=writeback,model=QEMU_DATA,size=8G\","
	"\"net0\":\"e1000=BC:24:11:00:01:90,bridge=vmbr0,firewall=1\","
	"\"net1\":\"rtl8139=BC:24:11:00:02:90,bridge=vmbr1\"}";

/* qemu-server 9 dropped the drive geometry options (cyls, heads, secs,
 * trans): on 9.x the new disk goes without them, with a line saying so;
 * 8.x's virtio and scsi drives still have them. */
Test(convert_target, drive_geometry_on_each_version)
{
	json_object *c = cfg("{\"boot\":\"order=ide0\",\"ide0\":\"local-lvm:vm-190-disk-0,"
			     "cyls=1024,heads=16,secs=63,trans=lba,size=16G\"}");
	struct convert_target t;
	char *err = NULL;
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_BLK, 9, &t, &err), 0, "%s", err);
	cr_assert_str_eq(param(&t, "virtio0"), "local-lvm:vm-190-disk-0,size=16G");
	bool noted = false;
	for (size_t i = 0; i < t.n_lines; i++)
		noted = noted || strcmp(t.lines[i], "ide0: cyls=1024,heads=16,secs=63,trans=lba "
						     "dropped (PVE 9 has no such drive option)") == 0;
	cr_assert(noted, "the plan says what was dropped");
	convert_target_free(&t);
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_SCSI, 8, &t, &err), 0, "%s", err);
	cr_assert_str_eq(param(&t, "scsi0"),
			 "local-lvm:vm-190-disk-0,cyls=1024,heads=16,secs=63,trans=lba,size=16G");
	for (size_t i = 0; i < t.n_lines; i++)
		cr_assert_null(strstr(t.lines[i], "dropped"), "%s", t.lines[i]);
	convert_target_free(&t);
	json_object_put(c);
}

Test(convert_target, ide_disks_and_e1000_to_virtio_blk)
{
	json_object *c = cfg(fbsd9);
	struct convert_target t;
	char *err = NULL;
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_BLK, 9, &t, &err), 0, "%s", err);
	cr_assert_eq(t.ndisks, 2);
	cr_assert_eq(t.nnics, 1, "rtl8139 is left alone");
	cr_assert_str_eq(t.delete_keys, "ide0,ide1", "the cdrom ide2 stays");
	cr_assert_str_eq(param(&t, "virtio0"), "local-lvm:vm-190-disk-0,size=16G");
	cr_assert_str_eq(param(&t, "virtio1"), "local-lvm:vm-190-disk-1,cache=writeback,size=8G",
			 "model= is an IDE option and goes; cache is kept");
	cr_assert_str_eq(param(&t, "net0"), "virtio=BC:24:11:00:01:90,bridge=vmbr0,firewall=1",
			 "same MAC, same options");
	cr_assert_null(param(&t, "net1"));
	cr_assert_str_eq(param(&t, "boot"), "order=virtio0;ide2;net0");
	cr_assert_null(param(&t, "scsihw"));
	cr_assert_str_eq(t.boot_key, "virtio0");
	cr_assert_eq(t.boot_index, 0);
	cr_assert_eq(t.n_lines, 4);
	cr_assert_str_eq(t.lines[0], "ide0 -> virtio0: local-lvm:vm-190-disk-0,size=16G");
	cr_assert_str_eq(t.lines[2], "net0: e1000=BC:24:11:00:01:90,bridge=vmbr0,firewall=1 -> "
				     "virtio=BC:24:11:00:01:90,bridge=vmbr0,firewall=1");
	cr_assert_str_eq(t.lines[3], "boot: order=ide0;ide2;net0 -> order=virtio0;ide2;net0");
	convert_target_free(&t);
	json_object_put(c);
}

Test(convert_target, virtio_scsi_sets_the_controller)
{
	json_object *c = cfg("{\"ide0\":\"local-lvm:vm-1-disk-0,size=32G,wwn=0x5000c50015ea71ac\","
			     "\"net0\":\"model=e1000,macaddr=BC:24:11:00:00:01,bridge=vmbr0\","
			     "\"boot\":\"order=ide0\"}");
	struct convert_target t;
	char *err = NULL;
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_SCSI, 9, &t, &err), 0, "%s", err);
	cr_assert_str_eq(param(&t, "scsi0"), "local-lvm:vm-1-disk-0,size=32G,wwn=0x5000c50015ea71ac",
			 "SCSI takes wwn");
	cr_assert_str_eq(param(&t, "scsihw"), "virtio-scsi-single");
	cr_assert_str_eq(param(&t, "net0"), "model=virtio,macaddr=BC:24:11:00:00:01,bridge=vmbr0");
	cr_assert_str_eq(param(&t, "boot"), "order=scsi0");
	convert_target_free(&t);
	json_object_put(c);
}

Test(convert_target, legacy_bootdisk)
{
	json_object *c = cfg("{\"ide0\":\"local:100/vm-100-disk-1.qcow2,size=8G\","
			     "\"bootdisk\":\"ide0\",\"boot\":\"cdn\"}");
	struct convert_target t;
	char *err = NULL;
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_BLK, 9, &t, &err), 0, "%s", err);
	cr_assert_str_eq(param(&t, "bootdisk"), "virtio0");
	cr_assert_null(param(&t, "boot"), "a legacy boot string is left alone");
	convert_target_free(&t);
	json_object_put(c);
}

Test(convert_target, already_virtio_has_nothing_to_move)
{
	json_object *c = cfg("{\"virtio0\":\"local-lvm:vm-1-disk-0,size=32G\","
			     "\"ide2\":\"none,media=cdrom\","
			     "\"net0\":\"virtio=BC:24:11:00:00:01,bridge=vmbr0\"}");
	struct convert_target t;
	char *err = NULL;
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_BLK, 9, &t, &err), 0, "%s", err);
	cr_assert_eq(t.ndisks, 0);
	cr_assert_eq(t.nnics, 0);
	cr_assert_null(t.delete_keys);
	cr_assert_eq(t.set.n, 0);
	convert_target_free(&t);
	json_object_put(c);
}

Test(convert_target, mixed_buses_refused)
{
	json_object *c = cfg("{\"ide0\":\"local-lvm:vm-1-disk-0,size=32G\","
			     "\"virtio0\":\"local-lvm:vm-1-disk-1,size=8G\"}");
	struct convert_target t;
	char *err = NULL;
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_BLK, 9, &t, &err), -1);
	cr_assert(err && strstr(err, "disks on more than one bus"), "%s", err ? err : "(null)");
	free(err);
	json_object_put(c);
	/* IDE and SATA: one bus at a time */
	c = cfg("{\"ide0\":\"local-lvm:vm-1-disk-0,size=32G\",\"sata0\":\"local-lvm:vm-1-disk-1,size=8G\"}");
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_BLK, 9, &t, &err), -1);
	free(err);
	json_object_put(c);
}

/* qemu-server's bootorder.conf: scsi4 on the default lsi controller
 * beside virtio0/virtio1 and an empty IDE CD-ROM. The real disk converts:
 * scsihw becomes virtio-scsi-single, every key, the CD-ROM and the boot
 * order stay. */
Test(convert_target, lsi_beside_virtio_blk_with_an_empty_cdrom)
{
	json_object *c = cfg("{\"boot\":\"order=virtio1;net0;scsi4;ide2\","
			     "\"ide2\":\"none,media=cdrom\","
			     "\"net0\":\"virtio=A2:C0:43:77:08:A0,bridge=vmbr0\","
			     "\"scsi4\":\"local:8006/vm-8006-disk-0.qcow2,discard=on,size=104858K\","
			     "\"virtio0\":\"local:8006/vm-8006-disk-0.qcow2,iothread=1,size=104858K\","
			     "\"virtio1\":\"local:8006/vm-8006-disk-0.qcow2,iothread=1,size=104858K\"}");
	char *why = NULL;
	cr_expect_eq(convert_config_check(c, 8006, NULL, &why), 0, "%s", why ? why : "");
	free(why);
	struct convert_target t;
	char *err = NULL;
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_SCSI, 9, &t, &err), 0, "%s", err);
	cr_expect(t.scsi_ctl);
	cr_expect_eq(t.ndisks, 1);
	cr_expect_eq(t.nnics, 0);
	cr_expect_null(t.delete_keys, "no key moves: %s", t.delete_keys);
	cr_expect_eq(t.set.n, 1);
	cr_expect_str_eq(param(&t, "scsihw"), "virtio-scsi-single");
	cr_expect_null(param(&t, "boot"));
	cr_expect_null(param(&t, "ide2"));
	convert_target_free(&t);
	json_object_put(c);
}

/* SATA disks move like IDE ones: sata0 -> virtio0, the boot order follows */
Test(convert_target, sata_disks_to_virtio)
{
	json_object *c = cfg("{\"sata0\":\"local-lvm:vm-1-disk-0,size=32G,ssd=1\","
			     "\"sata1\":\"local-lvm:vm-1-disk-1,size=8G\",\"boot\":\"order=sata0;net0\","
			     "\"net0\":\"e1000=BC:24:11:00:00:01,bridge=vmbr0\"}");
	struct convert_target t;
	char *err = NULL;
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_BLK, 9, &t, &err), 0, "%s", err ? err : "");
	cr_expect(t.sata);
	cr_expect_eq(t.ndisks, 2);
	cr_expect_str_eq(t.boot_key, "virtio0");
	cr_expect_str_eq(t.delete_keys, "sata0,sata1");
	convert_target_free(&t);
	json_object_put(c);
}

Test(convert_target, applied_after_the_change)
{
	json_object *saved = cfg(fbsd9);
	struct convert_target t;
	char *err = NULL;
	cr_assert_eq(convert_target_make(saved, VBUS_VIRTIO_BLK, 9, &t, &err), 0);
	json_object *cur = cfg(fbsd9);
	cr_assert_not(convert_target_applied(&t, cur));
	/* PVE after delete=ide0,ide1 and the set: unusedN gone, keys reordered */
	json_object *after = cfg("{\"name\":\"fbsd9\",\"boot\":\"order=virtio0;ide2;net0\","
				 "\"virtio0\":\"local-lvm:vm-190-disk-0,size=16G\","
				 "\"virtio1\":\"local-lvm:vm-190-disk-1,size=8G,cache=writeback\","
				 "\"ide2\":\"local:iso/FreeBSD-9.0-RELEASE-amd64-disc1.iso,media=cdrom\","
				 "\"net0\":\"virtio=BC:24:11:00:01:90,firewall=1,bridge=vmbr0\","
				 "\"net1\":\"rtl8139=BC:24:11:00:02:90,bridge=vmbr1\"}");
	cr_assert(convert_target_applied(&t, after));
	/* half way: ide1 still there */
	json_object_object_add(after, "ide1", json_object_new_string("local-lvm:vm-190-disk-1"));
	cr_assert_not(convert_target_applied(&t, after));
	json_object_put(after);
	json_object_put(cur);
	json_object_put(saved);
	convert_target_free(&t);
}

Test(convert_restore, puts_the_saved_config_back_without_touching_unused)
{
	json_object *saved = cfg(fbsd9);
	json_object *cur = cfg("{\"name\":\"fbsd9\",\"boot\":\"order=virtio0;ide2;net0\","
			       "\"digest\":\"0123\","
			       "\"virtio0\":\"local-lvm:vm-190-disk-0,size=16G\","
			       "\"unused0\":\"local-lvm:vm-190-disk-1\","
			       "\"ide2\":\"local:iso/FreeBSD-9.0-RELEASE-amd64-disc1.iso,media=cdrom\","
			       "\"net0\":\"virtio=BC:24:11:00:01:90,bridge=vmbr0,firewall=1\","
			       "\"net1\":\"rtl8139=BC:24:11:00:02:90,bridge=vmbr1\"}");
	char *del = NULL;
	struct pve_params set = {0};
	cr_assert_eq(convert_restore_plan(saved, cur, &del, &set), 0);
	cr_assert_str_eq(del, "virtio0", "unused0 is never deleted: that destroys the volume");
	cr_assert_str_eq(pve_params_get(&set, "ide0"), "local-lvm:vm-190-disk-0,size=16G");
	cr_assert_str_eq(pve_params_get(&set, "ide1"),
			 "local-lvm:vm-190-disk-1,cache=writeback,model=QEMU_DATA,size=8G");
	cr_assert_str_eq(pve_params_get(&set, "net0"),
			 "e1000=BC:24:11:00:01:90,bridge=vmbr0,firewall=1");
	cr_assert_str_eq(pve_params_get(&set, "boot"), "order=ide0;ide2;net0");
	cr_assert_null(pve_params_get(&set, "net1"), "unchanged keys are not sent");
	cr_assert_null(pve_params_get(&set, "digest"));
	cr_assert_eq(set.n, 4);
	free(del);
	pve_params_free(&set);
	/* once restored: nothing left to do */
	struct pve_params s2 = {0};
	char *d2 = NULL;
	cr_assert_eq(convert_restore_plan(saved, saved, &d2, &s2), 0);
	cr_assert_null(d2);
	cr_assert_eq(s2.n, 0);
	json_object_put(cur);
	json_object_put(saved);
}

Test(convert_target, keeps_only_the_options_of_the_target_bus)
{
	json_object *c = cfg("{\"ide0\":\"local-lvm:vm-1-disk-0,discard=on,model=QEMU_HD,"
			     "ssd=1,wwn=0x5000c50015ea71ac,cache=none,size=32G\","
			     "\"boot\":\"order=ide0\"}");
	struct convert_target t;
	char *err = NULL;
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_BLK, 9, &t, &err), 0, "%s", err);
	cr_assert_str_eq(param(&t, "virtio0"), "local-lvm:vm-1-disk-0,discard=on,cache=none,size=32G",
			 "virtio-blk has no model, ssd or wwn");
	convert_target_free(&t);
	cr_assert_eq(convert_target_make(c, VBUS_VIRTIO_SCSI, 9, &t, &err), 0, "%s", err);
	cr_assert_str_eq(param(&t, "scsi0"),
			 "local-lvm:vm-1-disk-0,discard=on,ssd=1,wwn=0x5000c50015ea71ac,cache=none,"
			 "size=32G",
			 "SCSI has ssd and wwn, not model");
	convert_target_free(&t);
	json_object_put(c);
}

Test(convert_restore, never_touches_what_pve_keeps_for_itself)
{
	/* saved after an earlier snapshot; now pvagent's own is the parent */
	json_object *saved = cfg("{\"name\":\"g\",\"boot\":\"order=ide0\",\"parent\":\"before\","
				 "\"ide0\":\"local-lvm:vm-1-disk-0,ssd=1,size=16G\","
				 "\"meta\":\"creation-qemu=8.1.5,ctime=1700000000\","
				 "\"vmgenid\":\"1b2a3c4d-0000-4000-8000-000000000001\","
				 "\"digest\":\"aaaa\",\"lock\":\"backup\"}");
	json_object *cur = cfg("{\"name\":\"g\",\"boot\":\"order=virtio0\","
			       "\"parent\":\"pvagent_virtio\",\"snaptime\":\"1700000100\","
			       "\"runningmachine\":\"pc-i440fx-8.1+pve0\",\"runningcpu\":\"kvm64\","
			       "\"vmstate\":\"local-lvm:vm-1-state-x\","
			       "\"virtio0\":\"local-lvm:vm-1-disk-0,size=16G\","
			       "\"vmgenid\":\"1b2a3c4d-0000-4000-8000-000000000002\","
			       "\"digest\":\"bbbb\"}");
	char *del = NULL;
	struct pve_params set = {0};
	cr_assert_eq(convert_restore_plan(saved, cur, &del, &set), 0);
	cr_assert_str_eq(del, "virtio0", "no parent, snaptime, vmstate, running* in the delete");
	cr_assert_str_eq(pve_params_get(&set, "ide0"), "local-lvm:vm-1-disk-0,ssd=1,size=16G");
	cr_assert_str_eq(pve_params_get(&set, "boot"), "order=ide0");
	cr_assert_eq(set.n, 2, "parent, meta, vmgenid, digest, lock are never sent");
	free(del);
	pve_params_free(&set);
	json_object_put(cur);
	json_object_put(saved);
}

Test(convert_names, bus_and_status)
{
	enum convert_bus b;
	cr_assert_eq(convert_bus_parse("virtio-scsi", &b), 0);
	cr_assert_eq(b, CONVERT_BUS_SCSI);
	cr_assert_eq(convert_bus_parse("virtio-blk", &b), 0);
	cr_assert_eq(b, CONVERT_BUS_BLK);
	cr_assert_eq(convert_bus_parse("ide", &b), -1);
}

/* ---- whole conversions ---------------------------------------------------------- */

/* One guest on a simulator (convworld.h). Tests keep their world in a
 * static: the suite's fini runs after a failed assertion has unwound the
 * test's stack. */
static struct conv_world *live;

static void fx_cleanup(void)
{
	if (!live)
		return;
	conv_world_cleanup(live);
	live = NULL;
}

TestSuite(convert_run, .fini = fx_cleanup);

/* ide0: the boot disk's value (NULL: "local-lvm:vm-190-disk-0,size=16G");
 * extra: more config members, e.g. ",\"ide1\": \"...\"" */
static void fx_start_ha(struct conv_world *f, const char *fixture, const char *addr,
			const char *ide0, const char *extra, const char *ha)
{
	const char *sim_bin = getenv("PVESIM_BIN");
	if (access(sim_bin ? sim_bin : "build/san/pvesim", X_OK) < 0)
		cr_skip_test("no simulator binary (make build/san/pvesim)");
	struct conv_world_opts o = {
		.fixture = fixture, .addr = addr, .ide0 = ide0, .extra = extra, .ha = ha};
	live = f;
	cr_assert_eq(conv_world_start(f, &o), 0, "guest %s did not start on %s", fixture, addr);
}

static void fx_start_ide(struct conv_world *f, const char *fixture, const char *addr,
			 const char *ide0, const char *extra)
{
	fx_start_ha(f, fixture, addr, ide0, extra, NULL);
}

static void fx_start(struct conv_world *f, const char *fixture, const char *addr,
		     const char *extra)
{
	fx_start_ide(f, fixture, addr, NULL, extra);
}

static void fx_stop(struct conv_world *f)
{
	live = NULL;
	cr_assert_eq(conv_world_stop(f), 0, "the simulator or the boot watcher failed");
}

/* A virtio job of the world's guest: 0 done, -1 not; *res its result
 * (wf_virtio_result_json), put by the caller. */
static int run(struct conv_world *f, enum convert_bus bus, bool dry_run, double verify_s,
	       json_object **res)
{
	int rc = conv_world_run(f, bus, dry_run, verify_s, res);
	cr_assert_neq(rc, -2, "the conversion did not start");
	return rc;
}

/* A string member of a result, NULL when absent or null. */
static const char *rs(json_object *r, const char *key)
{
	return json_str(r, key);
}

/* The result's string member key is want. */
static void expect_member(json_object *r, const char *key, const char *want)
{
	const char *have = rs(r, key);
	cr_expect(have && strcmp(have, want) == 0, "%s: '%s', want '%s' (error: %s; recovery: %s)",
		  key, have ? have : "(null)", want, rs(r, "error") ? rs(r, "error") : "-",
		  rs(r, "recovery") ? rs(r, "recovery") : "-");
}

static void expect_outcome(json_object *r, enum job_outcome o)
{
	expect_member(r, "outcome", job_outcome_name(o));
}

/* Is there an unfinished virtio job of the guest in the store? */
static bool open_job(struct conv_world *f)
{
	int r = conv_world_open_job(f);
	cr_assert_geq(r, 0);
	return r == 1;
}

static void expect_config(struct conv_world *f, const char *key, const char *want)
{
	char *v = conv_world_config(f, key);
	if (want)
		cr_expect(v && strcmp(v, want) == 0, "config %s: '%s', want '%s'", key,
			  v ? v : "(absent)", want);
	else
		cr_expect_null(v, "config %s should be absent, is '%s'", key, v);
	free(v);
}

/* Every file of tests/guests/<fixture>/<tree> equals the guest's. */
static void expect_tree(struct conv_world *f, const char *tree)
{
	char *cmd = strprintf("cd tests/guests/%s/%s && find . -type f | sort", f->o.fixture, tree);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	char line[512];
	int n = 0;
	while (fgets(line, sizeof line, p)) {
		line[strcspn(line, "\n")] = '\0';
		char *want = NULL, *have = NULL;
		char *wp = strprintf("tests/guests/%s/%s/%s", f->o.fixture, tree, line + 2);
		cr_assert_eq(read_file(wp, &want, NULL), 0, "%s", wp);
		cr_expect_eq(guestenv_read(&f->ge, line + 1, &have), 0, "%s missing", line + 1);
		cr_expect(have && strcmp(want, have) == 0, "%s differs from %s:\n%s", line + 1, wp,
			  have ? have : "");
		free(want);
		free(have);
		free(wp);
		n++;
	}
	pclose(p);
	free(cmd);
	cr_assert_gt(n, 0, "no files in %s", tree);
}

static void expect_original(struct conv_world *f)
{
	/* every file of the fixture's root as installed */
	expect_tree(f, "root");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the guest's snapshots, sorted, ' ' separated ("" none). */
static char *snapshot_names(struct conv_world *f)
{
	json_object *g = conv_world_guest(f), *snaps = NULL;
	struct sbuf b = {0};
	const char *names[16];
	size_t n = 0;
	if (json_object_object_get_ex(g, "snapshots", &snaps)) {
		json_object_object_foreach(snaps, k, v) {
			(void)v;
			if (n < 16)
				names[n++] = k;
		}
	}
	qsort(names, n, sizeof names[0], cmp_str);
	for (size_t i = 0; i < n; i++)
		sbuf_addf(&b, "%s%s", i ? " " : "", names[i]);
	char *s = sbuf_steal(&b);
	json_object_put(g);
	return s ? s : strdup("");
}

static void expect_snapshots(struct conv_world *f, const char *want, const char *why)
{
	char *have = snapshot_names(f);
	cr_expect_str_eq(have, want, "snapshots '%s', want '%s': %s", have, want, why);
	free(have);
}

static void convert_ok(const char *fixture, const char *addr, enum convert_bus bus,
		       const char *disk_key, const char *nic_value)
{
	static struct conv_world f;
	fx_start(&f, fixture, addr, NULL);
	json_object *r = NULL;
	int rc = run(&f, bus, false, 0, &r);
	cr_assert_eq(rc, 0, "%s at %s: %s\nevents:\n%s", rs(r, "status"),
		     rs(r, "failed_step"), rs(r, "error"), sbuf_str(&f.events));
	expect_member(r, "status", "converted");
	expect_outcome(r, JOB_OUT_DONE);
	cr_expect_null(rs(r, "snapshot"), "deleted once the guest works on virtio");
	json_object_put(r);
	expect_snapshots(&f, "", "the snapshot is deleted after the conversion");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/snapshot", -1), 1);
	cr_expect_eq(simproc_count_requests(log, "DELETE", "*/snapshot/pvagent_virtio", -1), 1);
	json_object_put(log);
	expect_config(&f, disk_key, "local-lvm:vm-190-disk-0,size=16G");
	expect_config(&f, "ide0", NULL);
	expect_config(&f, "unused0", NULL);
	expect_config(&f, "net0", nic_value);
	char *st = conv_world_boot(&f);
	cr_expect_str_eq(st, "up");
	free(st);
	if (bus == CONVERT_BUS_BLK)
		expect_tree(&f, "expected-final");
	cr_expect_not(open_job(&f), "the job (the journal) ends when done");
	/* a second run: already virtio, no config change */
	json_object *before = simproc_requests(&f.sp);
	int puts_before = simproc_count_requests(before, "PUT", "*/config", -1);
	cr_assert_eq(run(&f, bus, false, 0, &r), 0, "%s", rs(r, "error"));
	expect_member(r, "status", "already-virtio");
	json_object_put(r);
	json_object *after = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(after, "PUT", "*/config", -1), puts_before);
	json_object_put(before);
	json_object_put(after);
	fx_stop(&f);
}

Test(convert_run, freebsd_9_0_end_to_end)
{
	convert_ok("freebsd-9.0", "127.0.1.140", CONVERT_BUS_AUTO, "virtio0",
		   "virtio=BC:24:11:00:01:90,bridge=vmbr0");
}

Test(convert_run, freebsd_10)
{
	convert_ok("freebsd-10", "127.0.1.141", CONVERT_BUS_BLK, "virtio0",
		   "virtio=BC:24:11:00:01:90,bridge=vmbr0");
}

Test(convert_run, freebsd_14)
{
	convert_ok("freebsd-14", "127.0.1.142", CONVERT_BUS_BLK, "virtio0",
		   "virtio=BC:24:11:00:01:90,bridge=vmbr0");
}

Test(convert_run, ubuntu_9_04)
{
	convert_ok("ubuntu-9.04", "127.0.1.143", CONVERT_BUS_BLK, "virtio0",
		   "virtio=52:54:00:3A:9C:1E,bridge=vmbr0");
}

Test(convert_run, ubuntu_24_04_blk)
{
	convert_ok("ubuntu-24.04", "127.0.1.144", CONVERT_BUS_BLK, "virtio0",
		   "virtio=BC:24:11:5E:2A:7C,bridge=vmbr0");
}

/* The current releases: Debian 13 (ifupdown, slot-named ens18: the
 * interfaces file stays), Ubuntu 26.04 (netplan pinned to the MAC),
 * FreeBSD 15 (the VM image's ifconfig_DEFAULT: no NIC to rename). */
Test(convert_run, current_releases)
{
	static const struct {
		const char *fixture, *addr, *nic;
	} t[] = {
		{"debian-13", "127.0.1.146", "virtio=BC:24:11:13:0D:13,bridge=vmbr0"},
		{"ubuntu-26.04", "127.0.1.147", "virtio=BC:24:11:26:04:7C,bridge=vmbr0"},
		{"freebsd-15", "127.0.1.148", "virtio=BC:24:11:00:01:90,bridge=vmbr0"},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		convert_ok(t[i].fixture, t[i].addr, CONVERT_BUS_BLK, "virtio0", t[i].nic);
}

Test(convert_run, ubuntu_24_04_auto_is_virtio_scsi)
{
	convert_ok("ubuntu-24.04", "127.0.1.145", CONVERT_BUS_AUTO, "scsi0",
		   "virtio=BC:24:11:5E:2A:7C,bridge=vmbr0");
}

/* A boot disk on SATA (AHCI) converts the same safe way: the boot model
 * names it sda (Linux libata) / ada0 (FreeBSD CAM), as the plan does. */
static void fx_start_emulated(struct conv_world *f, const char *fixture, const char *addr,
			      const char *disk_key, const char *nic_model)
{
	const char *sim_bin = getenv("PVESIM_BIN");
	if (access(sim_bin ? sim_bin : "build/san/pvesim", X_OK) < 0)
		cr_skip_test("no simulator binary (make build/san/pvesim)");
	struct conv_world_opts o = {.fixture = fixture, .addr = addr, .disk_key = disk_key,
				    .nic_model = nic_model};
	live = f;
	cr_assert_eq(conv_world_start(f, &o), 0, "guest %s did not start on %s", fixture, addr);
}

/* A boot disk on SATA (AHCI) or a NIC of another model converts the same
 * safe way: the boot model names the disk sda (Linux libata) / ada0
 * (FreeBSD CAM) and keeps Linux's slot-named NIC, as the plan does. */
static void convert_emulated(const char *fixture, const char *addr, const char *disk_key,
			     const char *nic_model, const char *summary, const char *net0,
			     const char *new_key, enum convert_bus bus)
{
	static struct conv_world f;
	fx_start_emulated(&f, fixture, addr, disk_key, nic_model);
	json_object *r = NULL;
	int rc = run(&f, bus, false, 0, &r);
	cr_assert_eq(rc, 0, "%s at %s: %s\nevents:\n%s", rs(r, "status"),
		     rs(r, "failed_step"), rs(r, "error"), sbuf_str(&f.events));
	expect_member(r, "status", "converted");
	cr_expect(strstr(sbuf_str(&f.events), summary), "%s", sbuf_str(&f.events));
	json_object_put(r);
	expect_config(&f, new_key, "local-lvm:vm-190-disk-0,size=16G");
	if (strcmp(new_key, disk_key ? disk_key : "ide0") != 0)
		expect_config(&f, disk_key ? disk_key : "ide0", NULL);
	else /* the same key on the controller it changed to */
		expect_config(&f, "scsihw", "virtio-scsi-single");
	if (net0)
		expect_config(&f, "net0", net0);
	char *st = conv_world_boot(&f);
	cr_expect_str_eq(st, "up");
	free(st);
	fx_stop(&f);
}

Test(convert_run, ubuntu_24_04_sata)
{
	convert_emulated("ubuntu-24.04", "127.0.1.157", "sata0", NULL, "1 SATA disk", NULL, "virtio0",
			 CONVERT_BUS_BLK);
}

Test(convert_run, freebsd_14_sata)
{
	convert_emulated("freebsd-14", "127.0.1.158", "sata0", NULL, "1 SATA disk", NULL, "virtio0",
			 CONVERT_BUS_BLK);
}

/* rtl8139 moves like e1000: same MAC and slot, Linux keeps ens18 */
Test(convert_run, ubuntu_24_04_rtl8139)
{
	convert_emulated("ubuntu-24.04", "127.0.1.160", NULL, "rtl8139", "1 rtl8139 NIC",
			 "virtio=BC:24:11:5E:2A:7C,bridge=vmbr0", "virtio0", CONVERT_BUS_BLK);
}

/* A disk on PVE's default SCSI controller (LSI 53C895A) stays scsi0 and
 * the controller becomes virtio-scsi: the initramfs (Linux) must hold
 * virtio_scsi, which the boot model checks */
Test(convert_run, ubuntu_24_04_lsi_to_virtio_scsi)
{
	convert_emulated("ubuntu-24.04", "127.0.1.161", "scsi0", NULL, "1 SCSI disk", NULL, "scsi0",
			 CONVERT_BUS_AUTO);
}

Test(convert_run, freebsd_14_lsi_to_virtio_scsi)
{
	convert_emulated("freebsd-14", "127.0.1.162", "scsi0", NULL, "1 SCSI disk", NULL, "scsi0",
			 CONVERT_BUS_AUTO);
}

Test(convert_run, two_disks_and_a_cdrom)
{
	static struct conv_world f;
	fx_start(&f, "freebsd-9.0", "127.0.1.146",
		 ", \"ide1\": \"local-lvm:vm-190-disk-1,size=8G\","
		 " \"ide2\": \"none,media=cdrom\"");
	json_object *r = NULL;
	cr_assert_eq(run(&f, CONVERT_BUS_AUTO, false, 0, &r), 0, "%s\n%s", rs(r, "error"),
		     sbuf_str(&f.events));
	json_object_put(r);
	expect_config(&f, "virtio0", "local-lvm:vm-190-disk-0,size=16G");
	expect_config(&f, "virtio1", "local-lvm:vm-190-disk-1,size=8G");
	expect_config(&f, "ide2", "none,media=cdrom");
	expect_config(&f, "ide0", NULL);
	expect_config(&f, "ide1", NULL);
	fx_stop(&f);
}

Test(convert_run, dry_run_changes_nothing)
{
	static struct conv_world f;
	fx_start(&f, "freebsd-9.0", "127.0.1.147", NULL);
	char *before = guestenv_snapshot(&f.ge);
	json_object *r = NULL;
	cr_assert_eq(run(&f, CONVERT_BUS_AUTO, true, 0, &r), 0, "%s", rs(r, "error"));
	expect_member(r, "status", "dry-run");
	json_object_put(r);
	char *after = guestenv_snapshot(&f.ge);
	cr_expect_str_eq(after, before, "a dry run writes nothing in the guest");
	const char *ev = sbuf_str(&f.events);
	cr_expect(strstr(ev, "diff preflight /boot/loader.conf"), "%s", ev);
	cr_expect(strstr(ev, "+virtio_blk_load=\"YES\""), "%s", ev);
	cr_expect(strstr(ev, "diff preflight: ide0 -> virtio0"), "%s", ev);
	cr_expect(strstr(ev, "pkg_add"), "the kmod install is shown: %s", ev);
	expect_config(&f, "ide0", "local-lvm:vm-190-disk-0,size=16G");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "PUT", "*/config", -1), 0);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/snapshot", -1), 0);
	json_object_put(log);
	free(before);
	free(after);
	fx_stop(&f);
}

/* ---- failure modes ------------------------------------------------------------------ */

static void expect_rolled_back(struct conv_world *f, json_object *r, const char *why)
{
	expect_member(r, "status", "failed");
	expect_outcome(r, JOB_OUT_FAILED);
	cr_expect(rs(r, "error") && strstr(rs(r, "error"), why), "error: %s (want '%s')\n%s",
		  rs(r, "error") ? rs(r, "error") : "(null)", why, sbuf_str(&f->events));
	expect_config(f, "ide0", "local-lvm:vm-190-disk-0,size=16G");
	expect_config(f, "net0", "e1000=BC:24:11:00:01:90,bridge=vmbr0");
	expect_config(f, "boot", "order=ide0;net0");
	expect_config(f, "virtio0", NULL);
	expect_config(f, "unused0", NULL);
	/* the guest is as it was: the snapshot taken before it is gone */
	expect_snapshots(f, "", "the rollback deletes the snapshot it no longer needs");
	expect_config(f, "parent", NULL);
	cr_expect_null(rs(r, "snapshot"));
	json_object *log = simproc_requests(&f->sp);
	cr_expect_eq(simproc_count_requests(log, "DELETE", "*/snapshot/pvagent_virtio", -1), 1);
	json_object_put(log);
	char *st = conv_world_boot(f);
	cr_expect_str_eq(st, "up", "the guest runs again on IDE/e1000");
	free(st);
	expect_original(f);
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	cr_expect_eq(ssh_connect(&f->so, &s, &e), 0, "the guest answers SSH: %s", ssh_error_str(&e));
	ssh_close(s);
	ssh_error_clear(&e);
}

Test(convert_run, kmod_not_installable_stops_before_pve)
{
	static struct conv_world f;
	fx_start(&f, "freebsd-9.0", "127.0.1.150", NULL);
	cr_assert_eq(guestenv_write(&f.ge, "/.pvagent-facts/fail-pkg", "", 0644), 0);
	char *before = guestenv_snapshot(&f.ge);
	json_object *r = NULL;
	cr_assert_eq(run(&f, CONVERT_BUS_AUTO, false, 0, &r), -1);
	expect_outcome(r, JOB_OUT_FAILED);
	cr_expect(rs(r, "error") && strstr(rs(r, "error"), "cannot install virtio-kmod"), "%s", rs(r, "error"));
	cr_expect(rs(r, "error") && strstr(rs(r, "error"), "nothing on PVE was changed"), "%s", rs(r, "error"));
	expect_member(r, "failed_step", "kmod");
	json_object_put(r);
	char *after = guestenv_snapshot(&f.ge);
	cr_expect_str_eq(after, before);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "PUT", "*/config", -1), 0);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/snapshot", -1), 0);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/status/shutdown", -1), 0);
	json_object_put(log);
	free(before);
	free(after);
	fx_stop(&f);
}

/* Rewrite a guest file line by line: each line (without its newline) goes
 * through edit, which appends what should stand instead (or nothing). */
static void edit_guest_lines(struct conv_world *f, const char *path,
			     void (*edit)(struct sbuf *out, const char *line, size_t n))
{
	char *text = NULL;
	cr_assert_eq(guestenv_read(&f->ge, path, &text), 0);
	struct sbuf b = {0};
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		edit(&b, p, n);
		p += n + (p[n] ? 1 : 0);
	}
	cr_assert_eq(guestenv_write(&f->ge, path, sbuf_str(&b), 0644), 0);
	sbuf_free(&b);
	free(text);
}

/* Between the config change and the start the root goes back on the IDE
 * name, as if the edit had been lost: virtio boots to mountroot>
 * (conv_world_break_root_hook). */
Test(convert_run, root_on_a_missing_device_rolls_back)
{
	static struct conv_world f;
	fx_start(&f, "freebsd-9.0", "127.0.1.151", NULL);
	f.hook = conv_world_break_root_hook;
	json_object *r = NULL;
	cr_assert_eq(run(&f, CONVERT_BUS_AUTO, false, 3, &r), -1);
	cr_expect(strstr(sbuf_str(&f.events), "rolling back"), "%s", sbuf_str(&f.events));
	expect_rolled_back(&f, r, "does not answer over SSH");
	cr_expect(json_flag(r, "rolled_back"));
	json_object_put(r);
	fx_stop(&f);
}

/* rc.conf: without the vtnet0 line */
static void no_vtnet(struct sbuf *out, const char *line, size_t n)
{
	if (strncmp(line, "ifconfig_vtnet0", 15) != 0)
		sbuf_addf(out, "%.*s\n", (int)n, line);
}

/* The NIC's rc.conf line lost before the boot: virtio boots without network. */
static void drop_vtnet(struct conv_world *f, const struct job_event *ev)
{
	if (!conv_world_is_config_change(ev) || f->hook_fired++)
		return;
	edit_guest_lines(f, "/etc/rc.conf", no_vtnet);
}

Test(convert_run, nic_config_missing_rolls_back)
{
	static struct conv_world f;
	fx_start(&f, "freebsd-9.0", "127.0.1.152", NULL);
	f.hook = drop_vtnet;
	json_object *r = NULL;
	cr_assert_eq(run(&f, CONVERT_BUS_AUTO, false, 3, &r), -1);
	expect_rolled_back(&f, r, "does not answer over SSH");
	json_object_put(r);
	fx_stop(&f);
}

/* The guest boots but its sshd never answers: the watcher is stopped and
 * the sshd paused at the switch, and the watcher comes back when the
 * rollback begins. */
static void silence_guest(struct conv_world *f, const struct job_event *ev)
{
	if (conv_world_is_config_change(ev) && f->hook_fired == 0) {
		f->hook_fired = 1;
		cr_assert_eq(guestenv_watch_stop(&f->ge), 0);
		cr_assert_eq(guestenv_pause(&f->ge), 0);
	} else if (ev->kind == JOB_EV_NOTE && ev->text && strstr(ev->text, "rolling back") &&
		   f->hook_fired == 1) {
		f->hook_fired++;
		cr_assert_eq(guestenv_resume(&f->ge), 0);
		cr_assert_eq(guestenv_watch_start(&f->ge), 0);
	}
}

Test(convert_run, guest_never_answers_rolls_back)
{
	static struct conv_world f;
	fx_start(&f, "freebsd-9.0", "127.0.1.153", NULL);
	f.hook = silence_guest;
	json_object *r = NULL;
	cr_assert_eq(run(&f, CONVERT_BUS_AUTO, false, 3, &r), -1);
	expect_rolled_back(&f, r, "does not answer over SSH");
	json_object_put(r);
	fx_stop(&f);
}

Test(convert_run, pve_error_during_the_config_change_rolls_back)
{
	static struct conv_world f;
	fx_start(&f, "freebsd-9.0", "127.0.1.154", NULL);
	/* PVE refuses the second config PUT (the virtio devices), as its
	 * schema check does (a 500 without a reason may come after the change
	 * was made: that one is looked at and sent again, test_virtio_faults) */
	cr_assert_eq(simproc_fault(&f.sp, "{\"method\": \"PUT\", \"path\": \"/qemu/190/config$\","
					  " \"nth\": 2, \"action\": \"status\", \"status\": 400,"
					  " \"message\": \"Parameter verification failed.\"}"), 0);
	json_object *r = NULL;
	cr_assert_eq(run(&f, CONVERT_BUS_AUTO, false, 3, &r), -1);
	expect_rolled_back(&f, r, "adding the virtio devices");
	json_object_put(r);
	fx_stop(&f);
}

/* Neither virtio nor the rollback brings SSH back: the sshd is paused for
 * good at the switch. */
static void silence_for_good(struct conv_world *f, const struct job_event *ev)
{
	if (conv_world_is_config_change(ev) && f->hook_fired == 0) {
		f->hook_fired = 1;
		cr_assert_eq(guestenv_watch_stop(&f->ge), 0);
		cr_assert_eq(guestenv_pause(&f->ge), 0);
	}
}

Test(convert_run, failed_rollback_needs_attention)
{
	static struct conv_world f;
	fx_start(&f, "freebsd-9.0", "127.0.1.156", NULL);
	f.hook = silence_for_good;
	json_object *r = NULL;
	cr_assert_eq(run(&f, CONVERT_BUS_AUTO, false, 2, &r), -1);
	expect_member(r, "status", "needs-attention");
	expect_outcome(r, JOB_OUT_NEEDS_ATTENTION);
	cr_expect_not(json_flag(r, "rolled_back"));
	cr_expect(rs(r, "error") && strstr(rs(r, "error"), "then the rollback failed reaching the guest over SSH"),
		  "%s", rs(r, "error"));
	const char *rec = rs(r, "recovery") ? rs(r, "recovery") : "";
	/* the config was put back before SSH was tried: the manual steps say
	 * so, the loader line names the root on virtio */
	cr_expect(strstr(rec, "ide0: local-lvm:vm-190-disk-0,size=16G"), "%s", rec);
	cr_expect(strstr(rec, "qm stop 190"), "%s", rec);
	cr_expect(strstr(rec, "set vfs.root.mountfrom=ufs:/dev/vtbd0s1a"), "%s", rec);
	cr_expect(strstr(rec, "/etc/fstab"), "the changed files are listed: %s", rec);
	cr_expect(open_job(&f), "the job (the journal) stays for a rerun");
	expect_snapshots(&f, "pvagent_virtio", "the way back is kept while something is left");
	json_object_put(r);
	/* the guest comes back (the admin fixed it); a rerun resumes from the
	 * journal and ends on a working guest */
	cr_assert_eq(guestenv_resume(&f.ge), 0);
	cr_assert_eq(guestenv_watch_start(&f.ge), 0);
	f.hook = NULL;
	cr_assert_eq(run(&f, CONVERT_BUS_AUTO, false, 0, &r), 0, "%s\n%s", rs(r, "error"),
		     sbuf_str(&f.events));
	cr_expect(json_flag(r, "resumed"));
	json_object_put(r);
	fx_stop(&f);
}

/* The agent killed (SIGKILL) between the switch and the verify; the rerun
 * finds the journal and finishes. */
static void die(struct conv_world *f, const struct job_event *ev)
{
	(void)f;
	if (conv_world_is_config_change(ev))
		raise(SIGKILL);
}

Test(convert_run, killed_between_switch_and_verify_rerun_recovers)
{
	static struct conv_world f;
	fx_start(&f, "freebsd-9.0", "127.0.1.155", NULL);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		f.hook = die;
		json_object *r = NULL;
		run(&f, CONVERT_BUS_AUTO, false, 0, &r);
		_exit(0);
	}
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the agent was not killed");
	expect_config(&f, "virtio0", "local-lvm:vm-190-disk-0,size=16G");
	char *st = conv_world_boot(&f);
	cr_expect_str_eq(st, "stopped", "killed before the start");
	free(st);
	json_object *r = NULL;
	cr_assert_eq(run(&f, CONVERT_BUS_AUTO, false, 0, &r), 0, "%s\n%s", rs(r, "error"),
		     sbuf_str(&f.events));
	cr_expect(json_flag(r, "resumed"));
	expect_member(r, "status", "converted");
	json_object_put(r);
	expect_tree(&f, "expected-final");
	st = conv_world_boot(&f);
	cr_expect_str_eq(st, "up");
	free(st);
	fx_stop(&f);
}

/* ---- a disk with options virtio-blk lacks, snapshots before pvagent's ------------- */

#define SSD_DISK "local-lvm:vm-190-disk-0,ssd=1,discard=on,size=16G"
/* What a PVE 8 guest's config holds beside the devices (the token may set
 * none of them). */
#define PVE_KEYS ",\"meta\": \"creation-qemu=8.1.5,ctime=1700000000\"," \
		 " \"vmgenid\": \"3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b\"," \
		 " \"smbios1\": \"uuid=5b0c6ae4-00be-4d3c-9d0e-0000000000be\""

/* An earlier snapshot of the user's: "parent" in the config from now on. */
static void user_snapshot(struct conv_world *f)
{
	struct guest_ref g = {0};
	struct pve_error e = {0};
	cr_assert_eq(guest_find_by_vmid(f->c, 190, &g, &e), 1, "%s", e.message ? e.message : "?");
	struct guest_wait w = {.clock = &f->clk};
	bool existed = false;
	cr_assert_eq(guest_snapshot(f->c, &g, "before", "the user's", &w, &existed, &e), 0, "%s",
		     e.message ? e.message : "?");
	guest_ref_clear(&g);
	char *parent = conv_world_config(f, "parent");
	cr_assert_str_eq(parent, "before");
	free(parent);
}

/* The guest's config without the digest, as sorted "key=value\n" lines. */
static char *config_text(struct conv_world *f)
{
	json_object *g = conv_world_guest(f), *cfgo = NULL;
	cr_assert(json_object_object_get_ex(g, "config", &cfgo));
	char *lines[128];
	size_t n = 0;
	json_object_object_foreach(cfgo, k, v) {
		if (strcmp(k, "digest") != 0 && n < 128)
			lines[n++] = strprintf("%s=%s\n", k, json_object_get_string(v));
	}
	qsort(lines, n, sizeof lines[0], cmp_str);
	struct sbuf b = {0};
	for (size_t i = 0; i < n; i++) {
		sbuf_add(&b, lines[i]);
		free(lines[i]);
	}
	json_object_put(g);
	return sbuf_steal(&b);
}

Test(convert_run, ssd_ide_disk_with_a_snapshot_converts_through_a_token)
{
	static struct conv_world f;
	fx_start_ide(&f, "freebsd-9.0", "127.0.1.200", SSD_DISK, PVE_KEYS);
	cr_assert(strchr(f.sp.token_id, '!'), "the agent talks through an API token");
	user_snapshot(&f);
	f.keep_snapshot = true;
	json_object *r = NULL;
	int rc = run(&f, CONVERT_BUS_BLK, false, 0, &r);
	cr_assert_eq(rc, 0, "%s at %s: %s\nevents:\n%s", rs(r, "status"),
		     rs(r, "failed_step"), rs(r, "error"), sbuf_str(&f.events));
	expect_member(r, "status", "converted");
	expect_member(r, "snapshot", "pvagent_virtio"); /* kept: the result names it */
	json_object_put(r);
	expect_config(&f, "virtio0", "local-lvm:vm-190-disk-0,discard=on,size=16G");
	expect_config(&f, "ide0", NULL);
	expect_config(&f, "parent", "pvagent_virtio");
	expect_snapshots(&f, "before pvagent_virtio", "--keep-snapshot keeps it");
	expect_config(&f, "meta", "creation-qemu=8.1.5,ctime=1700000000");
	char *st = conv_world_boot(&f);
	cr_expect_str_eq(st, "up");
	free(st);
	fx_stop(&f);
}

Test(convert_run, ssd_ide_disk_with_a_snapshot_rolls_back_exactly)
{
	static struct conv_world f;
	fx_start_ide(&f, "freebsd-9.0", "127.0.1.201", SSD_DISK, PVE_KEYS);
	user_snapshot(&f);
	char *before = config_text(&f);
	f.hook = conv_world_break_root_hook;
	json_object *r = NULL;
	cr_assert_eq(run(&f, CONVERT_BUS_BLK, false, 3, &r), -1);
	expect_member(r, "status", "failed");
	cr_expect(json_flag(r, "rolled_back"));
	json_object_put(r);
	char *after = config_text(&f);
	cr_expect_str_eq(after, before, "the rollback restores the config exactly:\n%s---\n%s", before,
			 after);
	expect_config(&f, "parent", "before");
	expect_snapshots(&f, "before", "the user's snapshot stays, pvagent's own is deleted");
	char *st = conv_world_boot(&f);
	cr_expect_str_eq(st, "up", "the guest runs again on IDE/e1000");
	free(st);
	expect_original(&f);
	free(before);
	free(after);
	fx_stop(&f);
}

/* HA manages the guest: its shutdown and start are hastop/hastart tasks
 * that end before the guest changes state; virtio waits for the state. */
Test(convert_run, ha_managed_guest_converts)
{
	static struct conv_world f;
	fx_start_ha(&f, "freebsd-9.0", "127.0.1.202", NULL, NULL,
		    "[{\"sid\": \"vm:190\", \"state\": \"started\"}]");
	json_object *r = NULL;
	int rc = run(&f, CONVERT_BUS_BLK, false, 0, &r);
	cr_assert_eq(rc, 0, "%s at %s: %s\nevents:\n%s", rs(r, "status"),
		     rs(r, "failed_step"), rs(r, "error"), sbuf_str(&f.events));
	expect_member(r, "status", "converted");
	json_object_put(r);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_gt(simproc_count_requests(log, "POST", "*/status/shutdown", -1), 0);
	json_object_put(log);
	expect_config(&f, "virtio0", "local-lvm:vm-190-disk-0,size=16G");
	expect_config(&f, "ide0", NULL);
	expect_config(&f, "unused0", NULL);
	char *st = conv_world_boot(&f);
	cr_expect_str_eq(st, "up");
	free(st);
	expect_tree(&f, "expected-final");
	fx_stop(&f);
}

/* A guest on an emulated disk (disk_key) and NIC (nic_model) whose
 * conversion fails, its guest silent on virtio (fault NULL) or a PVE
 * fault rule (fault): rolled back (the events and error say why), its
 * config as it was (want: key, value pairs, a NULL value for a key that
 * must be absent; NULL-terminated by key) and it boots. */
static void emulated_rolls_back(const char *fixture, const char *addr, const char *disk_key,
				const char *nic_model, enum convert_bus bus, const char *fault,
				const char *event, const char *error, const char *const *want)
{
	static struct conv_world f;
	fx_start_emulated(&f, fixture, addr, disk_key, nic_model);
	if (fault)
		cr_assert_eq(simproc_fault(&f.sp, fault), 0);
	else
		f.hook = silence_guest;
	json_object *r = NULL;
	cr_assert_eq(run(&f, bus, false, 3, &r), -1);
	cr_expect(strstr(sbuf_str(&f.events), event), "%s", sbuf_str(&f.events));
	cr_expect(json_flag(r, "rolled_back"));
	cr_expect(rs(r, "error") && strstr(rs(r, "error"), error), "%s", rs(r, "error"));
	json_object_put(r);
	for (size_t i = 0; want[i]; i += 2)
		expect_config(&f, want[i], want[i + 1]);
	char *st = conv_world_boot(&f);
	cr_expect_str_eq(st, "up");
	free(st);
	fx_stop(&f);
}

/* A SATA guest that does not answer on virtio is rolled back to SATA. */
Test(convert_run, sata_guest_never_answers_rolls_back)
{
	static const char *const want[] = {"sata0", "local-lvm:vm-190-disk-0,size=16G",
					   "virtio0", NULL, NULL};
	emulated_rolls_back("freebsd-14", "127.0.1.159", "sata0", NULL, CONVERT_BUS_BLK, NULL,
			    "rolling back to SATA/e1000", "the guest runs on SATA/e1000", want);
}

/* vmxnet3 moves like e1000 and rtl8139: same MAC and PCI slot, so Linux
 * keeps ens18 and the boot model finds the network up on virtio */
Test(convert_run, ubuntu_24_04_vmxnet3)
{
	convert_emulated("ubuntu-24.04", "127.0.1.163", NULL, "vmxnet3", "1 vmxnet3 NIC",
			 "virtio=BC:24:11:5E:2A:7C,bridge=vmbr0", "virtio0", CONVERT_BUS_BLK);
}

/* A disk on the default LSI controller that does not come back on
 * virtio-scsi: the controller goes back to what it was (scsihw unset:
 * lsi), the disk keeps its key, and the guest boots as before. */
Test(convert_run, lsi_guest_never_answers_rolls_back)
{
	static const char *const want[] = {"scsi0", "local-lvm:vm-190-disk-0,size=16G", "scsihw",
					   NULL, "virtio0", NULL, NULL};
	emulated_rolls_back("ubuntu-24.04", "127.0.1.164", "scsi0", NULL, CONVERT_BUS_AUTO, NULL,
			    "rolling back", "does not answer", want);
}

/* A vmxnet3 guest whose virtio config PVE refuses (a forced 400 on the
 * second config PUT): rolled back to SATA and vmxnet3, same MAC. */
Test(convert_run, sata_vmxnet3_pve_error_rolls_back)
{
	static const char *const want[] = {"sata0", "local-lvm:vm-190-disk-0,size=16G", "virtio0",
					   NULL, "net0", "vmxnet3=BC:24:11:5E:2A:7C,bridge=vmbr0",
					   NULL};
	emulated_rolls_back("ubuntu-24.04", "127.0.1.165", "sata0", "vmxnet3", CONVERT_BUS_BLK,
			    "{\"method\": \"PUT\", \"path\": \"/qemu/190/config$\", \"nth\": 2,"
			    " \"action\": \"status\", \"status\": 400,"
			    " \"message\": \"Parameter verification failed.\"}",
			    "rolling back", "adding the virtio devices", want);
}

/* What the config alone decides (convert_config_check), before any
 * address: Windows, devices that stay emulated, pending changes, mixed
 * buses; nothing to do; something to convert. */
Test(convert_target, config_check)
{
	static const struct {
		const char *cfg, *pending, *want; /* want NULL: rc 0 or 1 below */
		int rc;
	} cases[] = {
		{"{\"ostype\":\"win7\",\"ide0\":\"local:1/vm-1-disk-0.qcow2\"}", NULL,
		 "viostor (disk) and NetKVM", -1},
		{"{\"ostype\":\"wxp\",\"ide0\":\"local:1/vm-1-disk-0.qcow2\"}", NULL, "ostype wxp", -1},
		/* Windows with nothing to convert: nothing to do, not refused */
		{"{\"ostype\":\"w2k8\"}", NULL, NULL, 1},
		{"{\"ostype\":\"win11\",\"scsihw\":\"virtio-scsi-pci\","
		 "\"net0\":\"virtio=A2:C0:43:77:08:A1\"}", NULL, NULL, 1},
		{"{\"scsi0\":\"local:1/vm-1-disk-0.qcow2\"}", NULL, NULL, 0},
		{"{\"scsihw\":\"pvscsi\",\"scsi0\":\"l:vm-1-disk-0\",\"scsi1\":\"l:vm-1-disk-1\"}", NULL,
		 NULL, 0},
		/* scsiN on the default lsi controller beside virtio-blk disks: only
		 * the controller changes, nothing is renamed */
		{"{\"scsi0\":\"l:vm-1-disk-0\",\"virtio0\":\"l:vm-1-disk-1\"}", NULL, NULL, 0},
		{"{\"ide0\":\"l:vm-1-disk-0\",\"virtio0\":\"l:vm-1-disk-1\"}", NULL, "more than one bus",
		 -1},
		{"{\"scsi0\":\"l:vm-1-disk-0\",\"sata0\":\"l:vm-1-disk-1\"}", NULL, "more than one bus",
		 -1},
		/* a template: said so before its buses (qemu-server's
		 * simple1-template.conf: sata0 beside scsi0 on virtio-scsi) */
		{"{\"template\":1,\"scsihw\":\"virtio-scsi-pci\",\"ide2\":\"none,media=cdrom\","
		 "\"sata0\":\"local:8006/base-8006-disk-0.qcow2\","
		 "\"scsi0\":\"local:8006/base-8006-disk-1.qcow2\"}", NULL, "a template", -1},
		{"{\"template\":1,\"virtio0\":\"local:8006/base-8006-disk-0.qcow2\"}", NULL, NULL, 1},
		/* a template that is Windows: the template decides */
		{"{\"template\":1,\"ostype\":\"win10\",\"ide0\":\"l:base-1-disk-0\"}", NULL,
		 "a template", -1},
		/* CD-ROMs (empty or not) and cloud-init drives are no disks */
		{"{\"ide2\":\"none,media=cdrom\",\"virtio0\":\"l:vm-1-disk-0\"}", NULL, NULL, 1},
		{"{\"ide2\":\"lvm:vm-120-cloudinit,media=cdrom\",\"scsihw\":\"virtio-scsi-single\","
		 "\"scsi0\":\"l:vm-1-disk-0\"}", NULL, NULL, 1},
		{"{\"ide0\":\"lvm:vm-120-cloudinit\",\"virtio0\":\"l:vm-1-disk-0\"}", NULL, NULL, 1},
		{"{\"virtio0\":\"l:vm-1-disk-0\",\"net0\":\"ne2k_pci=BC:24:11:00:00:01\"}", NULL,
		 "net0 (ne2k_pci) stays emulated", -1},
		{"{\"ide0\":\"l:vm-1-disk-0\",\"net0\":\"i82551=BC:24:11:00:00:01\"}", NULL,
		 "beside the disks and NICs pvagent would move", -1},
		{"{\"net0\":\"e1000=BC:24:11:00:00:01\",\"net1\":\"rtl8139=BC:24:11:00:00:02\"}", NULL,
		 NULL, 0},
		{"{\"virtio0\":\"l:vm-1-disk-0\",\"net0\":\"rtl8139=BC:24:11:00:00:01\"}", NULL, NULL, 0},
		{"{\"ide0\":\"l:vm-1-disk-0\",\"net0\":\"vmxnet3=BC:24:11:00:00:01\"}", NULL, NULL, 0},
		{"{\"ide0\":\"l:vm-1-disk-0\",\"net0\":\"e1000=BC:24:11:00:00:01\"}", "memory,ide0",
		 "ide0 has a pending change", -1},
		{"{\"ide0\":\"l:vm-1-disk-0\",\"sata1\":\"l:vm-1-disk-1\"}", NULL, "more than one bus", -1},
		{"{\"ide0\":\"l:vm-1-disk-0\",\"net0\":\"e1000=BC:24:11:00:00:01\"}", "memory", NULL, 0},
		{"{\"sata0\":\"l:vm-1-disk-0\",\"ide2\":\"none,media=cdrom\"}", NULL, NULL, 0},
		{"{\"scsihw\":\"virtio-scsi-single\",\"scsi0\":\"l:vm-1-disk-0\","
		 "\"net0\":\"virtio=BC:24:11:00:00:01\",\"usb1\":\"spice\"}", NULL, NULL, 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		json_object *c = cfg(cases[i].cfg);
		char *why = NULL;
		int rc = convert_config_check(c, 100, cases[i].pending, &why);
		cr_expect_eq(rc, cases[i].rc, "%s: %d (%s)", cases[i].cfg, rc, why ? why : "");
		if (cases[i].want)
			cr_expect(why && strstr(why, cases[i].want), "%s: '%s', want '%s'", cases[i].cfg,
				  why ? why : "(null)", cases[i].want);
		else
			cr_expect_null(why, "%s: %s", cases[i].cfg, why);
		free(why);
		json_object_put(c);
	}
}

/* FreeBSD renames the NIC with its driver: re0 and vmx0 become vtnet0. */
Test(convert_target, freebsd_nic_names_by_model)
{
	struct os_profile p = {.family = OS_FREEBSD, .major = 14, .virtio_builtin = 1,
			       .ide_disk = "ada", .blk_disk = "vtbd", .scsi_disk = "da",
			       .nic_e1000 = "em", .nic_virtio = "vtnet", .scsi = VS_YES};
	static const char *const models[][2] = {{"rtl8139", "re0"}, {"vmxnet3", "vmx0"},
						{"e1000e", "em0"}};
	for (size_t i = 0; i < 3; i++) {
		struct virtio_plan vp;
		char *err = NULL;
		cr_assert_eq(virtio_plan_init_from(&vp, &p, DBUS_SATA, models[i][0], VBUS_VIRTIO_BLK,
						   1, 1, NULL, &err), 0, "%s", err ? err : "");
		cr_expect_str_eq(name_map_get(&vp.nics, models[i][1]), "vtnet0", "%s", models[i][0]);
		cr_expect_str_eq(name_map_get(&vp.disks, "ada0"), "vtbd0");
		virtio_plan_free(&vp);
	}
	/* FreeBSD 8's ata(4) numbers SATA disks by channel: refused */
	p.major = 8;
	struct virtio_plan vp;
	char *err = NULL;
	cr_expect_eq(virtio_plan_init_from(&vp, &p, DBUS_SATA, "e1000", VBUS_VIRTIO_BLK, 1, 1, NULL,
					   &err), -1);
	cr_expect(err && strstr(err, "ata(4) channel"), "%s", err ? err : "(null)");
	free(err);
}

/* The job of the world's guest, loaded from state.db in a new env with
 * the configuration c, run, its result (wf_virtio_result_json) in *res.
 * Its outcome. */
static enum job_outcome load_and_run(struct conv_world *f, struct store *st,
				     const struct conf *c, long long id, json_object **res)
{
	struct job_env env = {.store = st, .conf = c,
			      .wait = {.clock = f->po.clock, .shutdown_timeout_s = 60}};
	cr_assert_eq(job_env_init(&env), 0);
	struct job *j = NULL;
	struct pve_error e = {0};
	cr_assert_eq(job_load(&env, id, job_workflow_find("virtio"), &j, &e), 1, "%s", e.message);
	enum job_outcome o = job_run(j, f->c);
	*res = wf_virtio_result_json(j);
	cr_assert_not_null(*res, "%s", job_error(j)->message ? job_error(j)->message : "");
	job_free(j);
	job_env_fini(&env);
	return o;
}

/* A virtio job made by one env and run by another from the store alone
 * (job_load + job_run: no launcher state), with only the configuration
 * ([ssh], [paths] state), the simulator's client and the waits: it
 * converts; and its result, read again from the store by a third env
 * once it ended (as `pvagent resume` of an ended job prints it), is the
 * same, from the job's vars, params and error alone. */
Test(convert_run, a_virtio_job_runs_from_the_store_alone, .timeout = 300)
{
	static struct conv_world f;
	fx_start(&f, "freebsd-9.0", "127.0.1.247", NULL);
	struct conf c = {0};
	c.ssh.user = (char *)"root";
	c.ssh.identity = (char *)f.so.identity;
	c.ssh.known_hosts = (char *)f.so.known_hosts;
	c.ssh.port = (unsigned)f.so.port;
	c.ssh.timeout = 10;
	c.paths.state = f.state;
	char *path = store_path(f.state), *err = NULL;
	struct store *st = NULL;
	cr_assert_eq(store_open(path, &st, &err), 0, "%s", err ? err : "");
	const struct job_params_decl *d = &wf_virtio_params_decl;
	struct target_req treq = {.name = "g190", .address = f.so.host};
	json_object *p = json_object_new_object();
	cr_assert_not_null(p);
	cr_assert_eq(target_params_add(d, p, &treq), 0);
	cr_assert_eq(job_param_set_num(d, p, "verify_timeout_s", 20), 0);
	struct job_env made = {.store = st, .conf = &c};
	cr_assert_eq(job_env_init(&made), 0);
	struct job *j = NULL;
	struct pve_error e = {0};
	cr_assert_eq(job_new(&made, &wf_virtio, "g190", p, &j, &e), 0, "%s", e.message);
	json_object_put(p);
	long long id = job_id(j);
	job_free(j);
	job_env_fini(&made);

	json_object *r = NULL, *again = NULL;
	enum job_outcome o = load_and_run(&f, st, &c, id, &r);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", rs(r, "error"));
	expect_member(r, "status", "converted");
	expect_outcome(r, JOB_OUT_DONE);
	expect_member(r, "bus", "virtio-blk");
	cr_expect(rs(r, "os") && strstr(rs(r, "os"), "FreeBSD"), "os: %s", rs(r, "os"));
	json_object *ch = json_object_object_get(r, "changes");
	cr_expect(json_object_is_type(ch, json_type_array) && json_object_array_length(ch) > 0,
		  "the config change lines: %s", json_object_to_json_string(r));
	cr_expect_null(rs(r, "snapshot"), "deleted once the guest works on virtio");
	cr_expect_not(json_object_object_get_ex(r, "error", NULL), "done: no error member");
	cr_assert_eq(load_and_run(&f, st, &c, id, &again), JOB_OUT_DONE);
	cr_expect(json_object_equal(r, again), "the ended job's result from the store:\n%s\nafter "
		  "its run:\n%s", json_object_to_json_string(again), json_object_to_json_string(r));
	json_object_put(r);
	json_object_put(again);
	store_close(st);
	free(path);
	char *v0 = conv_world_config(&f, "virtio0"), *i0 = conv_world_config(&f, "ide0");
	cr_assert_not_null(v0, "the disk is on virtio");
	cr_assert_null(i0, "no IDE disk left");
	free(v0);
	fx_stop(&f);
}
