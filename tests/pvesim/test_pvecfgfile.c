/* test_pvecfgfile.c - config files as PVE writes them: the reader
 * (pvecfgfile.h) on real files of tests/realcfg and on bad lines, and a
 * scenario guest loaded from one ("config_file"). */
#include <criterion/criterion.h>

#include "cluster.h"
#include "pvecfgfile.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *realcfg(const char *name)
{
	const char *slash = strrchr(__FILE__, '/');
	int dir = slash ? (int)(slash - __FILE__) : 0;
	return strprintf("%.*s%s../realcfg/%s", dir, __FILE__, slash ? "/" : "", name);
}

static const char *str(json_object *o, const char *key)
{
	return json_object_get_string(json_object_object_get(o, key));
}

Test(pvecfgfile, sections_pending_cloudinit_snapshot)
{
	char *p = realcfg("qs-parse-sections.conf"), *err = NULL;
	struct pvecfg_file f;
	cr_assert_eq(pvecfg_file_read(p, true, &f, &err), 0, "%s", err ? err : "");
	cr_expect_str_eq(str(f.config, "name"), "deb1223");
	cr_expect_str_eq(str(f.config, "parent"), "foo");
	cr_expect_str_eq(str(f.pending, "bios"), "ovmf");
	cr_expect_null(json_object_object_get(f.config, "bios"), "a pending key stays pending");
	cr_expect_str_eq(str(f.cloudinit, "ipconfig0"), "ip=dhcp,ip6=dhcp");
	json_object *snap = json_object_object_get(f.snapshots, "foo");
	cr_assert_not_null(snap);
	cr_expect_eq(json_object_get_int64(json_object_object_get(snap, "snaptime")), 1737548747);
	cr_expect_str_eq(str(json_object_object_get(snap, "config"), "ipconfig0"), "ip=dhcp,ip6=dhcp");
	cr_expect_null(json_object_object_get(json_object_object_get(snap, "config"), "snaptime"),
		       "snaptime stands beside the snapshot's config");
	pvecfg_file_free(&f);
	free(p);
}

Test(pvecfgfile, description_lines_and_snapshot_tree)
{
	char *p = realcfg("qs-parse-snapshots.conf"), *err = NULL;
	struct pvecfg_file f;
	cr_assert_eq(pvecfg_file_read(p, true, &f, &err), 0, "%s", err ? err : "");
	cr_expect_eq(json_object_object_length(f.snapshots), 7);
	json_object *s = json_object_object_get(f.snapshots, "win19_5_2");
	cr_expect_str_eq(str(s, "parent"), "machine_version_5_1_with_virtio");
	pvecfg_file_free(&f);
	free(p);
	p = realcfg("qs-cfg2cmd-sev-std.conf");
	cr_assert_eq(pvecfg_file_read(p, true, &f, &err), 0, "%s", err ? err : "");
	cr_expect_str_eq(str(f.config, "description"),
			 " TEST: Test raw efidisk size parameter\n HW_CAPABILITIES: amd-turin-9005");
	cr_expect_null(json_object_object_get(f.config, "name"), "unnamed: no name key");
	pvecfg_file_free(&f);
	free(p);
}

static void expect_refused(const char *text, bool qemu, const char *want)
{
	struct pvecfg_file f;
	char *err = NULL;
	cr_assert_eq(pvecfg_file_parse("t.conf", text, qemu, &f, &err), -1, "accepted: %s", text);
	cr_assert_not_null(err);
	cr_expect(strstr(err, want) != NULL, "got '%s', want '%s'", err, want);
	free(err);
}

Test(pvecfgfile, bad_lines_name_file_line_and_field)
{
	expect_refused("memory: 512\nboot: \n", true, "t.conf:2: boot: missing value");
	expect_refused("memory: 512\nthis is no line\n", true,
		       "t.conf:2: unable to parse config: this is no line");
	expect_refused("memory: 512\n[PENDING]\nmemory: 1\n[PENDING]\ncores: 2\n", true,
		       "t.conf:4: duplicate section: [PENDING]");
	expect_refused("memory: 512\ndelete: net0\n", true, "t.conf:2: delete: only allowed in [PENDING]");
	expect_refused("parent: gone\nmemory: 512\n", true, "parent: names no snapshot of the file: 'gone'");
	expect_refused("memory: 1\n[s1]\nsnaptime: yesterday\n", true,
		       "t.conf:3: snaptime: not a time in seconds: 'yesterday'");
	expect_refused("memory: 1\n[special:fleecing2]\n", true, "t.conf:2: unknown special section");
	expect_refused("memory: 1\n[a b]\n", true, "t.conf:2: unknown section: [a b]");
	expect_refused("hostname: a\n[pve:other]\n", false, "t.conf:2: unknown section: [pve:other]");
}

Test(pvecfgfile, pending_delete_and_cdrom_alias)
{
	struct pvecfg_file f;
	char *err = NULL;
	cr_assert_eq(pvecfg_file_parse("t.conf", "cdrom: none\nmemory: 512\n\n[PENDING]\n"
					"delete: net1,!scsi1\nmemory: 1024\n", true, &f, &err), 0,
		     "%s", err ? err : "");
	cr_expect_str_eq(str(f.config, "ide2"), "none", "cdrom reads as ide2");
	cr_expect_str_eq(str(f.pending, "memory"), "1024");
	cr_assert_eq(json_object_array_length(f.pending_delete), 2);
	cr_expect_str_eq(json_object_get_string(json_object_array_get_idx(f.pending_delete, 1)), "!scsi1");
	pvecfg_file_free(&f);
}

/* the corpus scenario loads every file; what the files hold is the guest's */
Test(pvecfgfile, realcfg_scenario_loads)
{
	char *p = realcfg("realcfg.json"), *err = NULL;
	struct cluster *c = cluster_load(p, 1.7e9, &err);
	cr_assert_not_null(c, "%s", err ? err : "");
	cr_expect_geq(c->guests.n, 60);
	struct sim_guest *sections = NULL, *passthrough = NULL, *sev = NULL;
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		const char *d = cfg_str(g->config, "description");
		if (cfg_str(g->config, "vmgenid") && d == NULL && cfg_str(g->config, "name") &&
		    strcmp(cfg_str(g->config, "name"), "deb1223") == 0 && !cfg_str(g->config, "bios"))
			sections = g;
		const char *s1 = cfg_str(g->config, "scsi1");
		if (s1 && strcmp(s1, "/mnt/file.raw") == 0)
			passthrough = g;
		if (cfg_str(g->config, "amd-sev") && g->running)
			sev = g;
	}
	cr_assert_not_null(sections);
	cr_expect_str_eq(cfg_str(sections->pending, "bios"), "ovmf");
	cr_expect_not_null(json_object_object_get(sections->snapshots, "foo"));
	cr_expect_str_eq(str(sections->cloudinit, "name"), "deb122");
	cr_assert_not_null(passthrough, "a disk by absolute path loads as it is");
	cr_assert_not_null(sev);
	char buf[32];
	char want[32];
	snprintf(want, sizeof want, "VM %d", sev->vmid);
	cr_expect_str_eq(guest_status_name(sev, buf, sizeof buf), want);
	cluster_free(c);
	free(p);
}

Test(pvecfgfile, scenario_refuses_a_bad_file_and_missing_storage)
{
	char dir[] = "/tmp/pvecfgfile-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *conf = strprintf("%s/100.conf", dir), *scen = strprintf("%s/s.json", dir);
	const char *head = "{\"pve_version\":\"9.1\",\"nodes\":[{\"name\":\"pve1\"}],"
			   "\"storages\":[{\"id\":\"local\",\"type\":\"dir\",\"nodes\":[\"pve1\"],"
			   "\"content\":\"images,iso\",\"size_gib\":100}],"
			   "\"guests\":[{\"vmid\":100,\"node\":\"pve1\",\"config_file\":\"100.conf\"}]}";
	FILE *fp = fopen(scen, "w");
	cr_assert_not_null(fp);
	fputs(head, fp);
	fclose(fp);
	char *bad = realcfg("qs-cfg2cmd-bootorder-empty.conf"), *text = NULL;
	cr_assert_eq(read_file(bad, &text, NULL), 0);
	fp = fopen(conf, "w");
	cr_assert_not_null(fp);
	fputs(text, fp);
	fclose(fp);
	char *err = NULL;
	cr_expect_null(cluster_load(scen, 1.7e9, &err));
	cr_expect(err && strstr(err, "$.guests[0]: config_file ") && strstr(err, "100.conf:3: boot: missing value"),
		  "%s", err ? err : "");
	free(err);
	err = NULL;
	fp = fopen(conf, "w");
	cr_assert_not_null(fp);
	fputs("memory: 512\nscsi0: nowhere:vm-100-disk-0,size=4G\n", fp);
	fclose(fp);
	cr_expect_null(cluster_load(scen, 1.7e9, &err));
	cr_expect(err && strstr(err, "scsi0: storage 'nowhere' does not exist"), "%s", err ? err : "");
	free(err);
	unlink(conf);
	unlink(scen);
	rmdir(dir);
	free(text);
	free(bad);
	free(conf);
	free(scen);
}
