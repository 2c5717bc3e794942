/* test_scenario.c - scenario loading: the shipped scenarios load, and bad
 * scenarios are refused with a message naming the JSON path at fault. */
#include <criterion/criterion.h>

#include "acl.h"
#include "cluster.h"
#include "simapi.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *scenario_path(const char *name)
{
	const char *slash = strrchr(__FILE__, '/');
	int dir = slash ? (int)(slash - __FILE__) : 0;
	return strprintf("%.*s%sscenarios/%s", dir, __FILE__, slash ? "/" : "", name);
}

/* Write text to a temp scenario file; returns its path (malloc'd). */
static char *write_tmp(const char *text)
{
	char tmpl[] = "/tmp/pvesim-scenario-XXXXXX";
	int fd = mkstemp(tmpl);
	cr_assert(fd >= 0);
	size_t n = strlen(text);
	cr_assert_eq(write(fd, text, n), (ssize_t)n);
	close(fd);
	return strdup(tmpl);
}

/* Load text, expect failure, return the error (malloc'd). */
static char *load_err(const char *text)
{
	char *path = write_tmp(text);
	char *err = NULL;
	struct cluster *c = cluster_load(path, 1.7e9, &err);
	cr_assert_null(c, "scenario unexpectedly loaded: %s", text);
	cr_assert_not_null(err);
	cr_assert(strncmp(err, path, strlen(path)) == 0, "error lacks file: %s", err);
	unlink(path);
	free(path);
	return err;
}

#define BASE_HEAD                                                              \
	"{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"},{\"name\":"  \
	"\"pve2\"}],\"storages\":[{\"id\":\"local-lvm\",\"type\":\"lvmthin\"," \
	"\"nodes\":[\"pve1\"],\"content\":\"images,rootdir\",\"size_gib\":100}],"

static void expect_err(const char *text, const char *want)
{
	char *err = load_err(text);
	cr_assert(strstr(err, want) != NULL, "got '%s', want '%s'", err, want);
	free(err);
}

Test(scenario, demo_loads)
{
	char *path = scenario_path("demo.json");
	char *err = NULL;
	struct cluster *c = cluster_load(path, 1.7e9, &err);
	cr_assert_not_null(c, "demo.json: %s", err ? err : "?");
	cr_assert_str_eq(cluster_pve_version(c), "9.1");
	cr_assert_eq(cluster_pve_major(c), 9);
	cr_assert_str_eq(cluster_first_token_id(c), "root@pam!pvagent");
	cr_assert(cluster_check_token(c, "audit@pve!ro", "0f9e8d7c-6b5a-4f3e-9d2c-1b0a9f8e7d6c"));
	/* "privs": the shorthand for those privileges on / */
	cr_assert(acl_check(c->acl, "audit@pve!ro", "/vms/190", "VM.Audit"));
	cr_assert(acl_check(c->acl, "audit@pve!ro", "/nodes/pve1", "Sys.Audit"));
	cr_assert_not(acl_check(c->acl, "audit@pve!ro", "/vms/190", "VM.PowerMgmt"));
	cr_assert_not(cluster_check_token(c, "audit@pve!ro", "wrong"));
	cr_assert(cluster_check_password(c, "root@pam", "demo-root-password"));
	cr_assert(acl_check(c->acl, "root@pam", "/", "Permissions.Modify"));
	/* templates and the running legacy guest */
	struct sim_guest *g = cluster_guest(c, 190);
	cr_assert_not_null(g);
	cr_assert(g->running);
	cr_assert_str_eq(g->node, "pve1");
	cr_assert_eq(g->boot.state, BOOT_UP);
	cr_assert_str_eq(g->boot.nic, "em0");
	cr_assert(guest_is_template(cluster_guest(c, 9014)));
	/* cloud-init drive was turned into its volume */
	const char *ide2 = cfg_str(cluster_guest(c, 9024)->config, "ide2");
	cr_assert_str_eq(ide2, "local-lvm:vm-9024-cloudinit,media=cdrom");
	/* the LXC template volume exists on both nodes */
	cr_assert_not_null(cluster_volume(
		c, "local:vztmpl/ubuntu-24.04-standard_24.04-2_amd64.tar.zst", "pve2"));
	cluster_free(c);
	free(path);
}

Test(scenario, pve3_loads)
{
	char *path = scenario_path("pve3.json");
	char *err = NULL;
	struct cluster *c = cluster_load(path, 1.7e9, &err);
	cr_assert_not_null(c, "pve3.json: %s", err ? err : "?");
	cr_assert_eq(cluster_pve_major(c), 3);
	struct sim_guest *g = cluster_guest(c, 101);
	cr_assert_not_null(g);
	cr_assert_str_eq(g->type, "openvz");
	cr_assert_not_null(cluster_volume(
		c, "local:vztmpl/debian-7.0-standard_7.0-2_amd64.tar.gz", "pve1"));
	cluster_free(c);
	free(path);
}

/* pvesim --guest-root: set or replace a guest's root; the boot file is
 * written there at load. */
Test(scenario, guest_root_option)
{
	char dir[] = "/tmp/pvesim-groot-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *rel = scenario_path("demo.json");
	char *path = realpath(rel, NULL);
	free(rel);
	cr_assert_not_null(path);
	char *err = NULL;
	struct sim_guest_root roots[] = {{190, dir}};
	struct cluster *c = cluster_load_with(path, 1.7e9, roots, 1, &err);
	cr_assert_not_null(c, "%s", err ? err : "?");
	struct sim_guest *g = cluster_guest(c, 190);
	cr_assert_str_eq(g->root, dir);
	char *bootf = strprintf("%s/.pvagent-facts/boot", dir);
	char *text = NULL;
	cr_assert_eq(read_file(bootf, &text, NULL), 0, "%s", bootf);
	/* no fstab in this root: it does not boot, but the devices are known */
	cr_expect(strstr(text, "state mountroot\nreachable no\nboot-id 1\ndisk-bus ide\n") == text,
		  "%s", text);
	cr_expect(strstr(text, "\ndisk ad0\n") && strstr(text, "\nnic em0\n") &&
			  strstr(text, "\nmac bc:24:11:00:01:90\n") &&
			  strstr(text, "\nreason mountroot: no etc/fstab"),
		  "%s", text);
	free(text);
	cluster_free(c);
	/* a relative DIR is made absolute */
	char *cwd = getcwd(NULL, 0);
	cr_assert_eq(chdir("/tmp"), 0);
	roots[0].dir = dir + 5;
	c = cluster_load_with(path, 1.7e9, roots, 1, &err);
	cr_assert_eq(chdir(cwd), 0);
	free(cwd);
	cr_assert_not_null(c, "%s", err ? err : "?");
	cr_expect_str_eq(cluster_guest(c, 190)->root, dir);
	cluster_free(c);
	/* refused: a guest the scenario lacks, a DIR that is not a directory */
	roots[0].vmid = 999;
	roots[0].dir = dir;
	cr_assert_null(cluster_load_with(path, 1.7e9, roots, 1, &err));
	char *want = strprintf("--guest-root 999=%s: the scenario has no guest 999", dir);
	cr_expect_str_eq(err, want);
	free(want);
	free(err);
	roots[0].vmid = 190;
	roots[0].dir = bootf;
	cr_assert_null(cluster_load_with(path, 1.7e9, roots, 1, &err));
	want = strprintf("--guest-root 190=%s: not a directory", bootf);
	cr_expect_str_eq(err, want);
	free(want);
	free(err);
	roots[0].dir = "/nonexistent/guest";
	cr_assert_null(cluster_load_with(path, 1.7e9, roots, 1, &err));
	cr_expect_str_eq(err, "--guest-root 190=/nonexistent/guest: No such file or directory");
	free(err);
	free(bootf);
	free(path);
	char *rm = strprintf("rm -rf '%s'", dir);
	cr_assert_eq(system(rm), 0);
	free(rm);
}

Test(scenario, missing_file)
{
	char *err = NULL;
	struct cluster *c = cluster_load("/nonexistent/x.json", 0, &err);
	cr_assert_null(c);
	cr_assert(strstr(err, "/nonexistent/x.json: cannot read") != NULL, "%s", err);
	free(err);
}

Test(scenario, invalid_json)
{
	expect_err("{\"pve_version\": ", "$: invalid JSON");
}

/* A key starting with '_' is a note for the reader ("_source" of the
 * journey models), at any level; the rest stays strict. */
Test(scenario, underscore_keys_are_notes)
{
	char *path = write_tmp(BASE_HEAD "\"_source\":\"pve-installer\",\"guests\":[{\"vmid\":100,"
			       "\"node\":\"pve1\",\"type\":\"qemu\",\"_comment\":\"x\","
			       "\"config\":{\"name\":\"a\"}}]}");
	char *err = NULL;
	struct cluster *c = cluster_load(path, 1.7e9, &err);
	cr_assert_not_null(c, "%s", err ? err : "?");
	cr_assert_not_null(cluster_guest(c, 100));
	cluster_free(c);
	unlink(path);
	free(path);
	expect_err(BASE_HEAD "\"source\":1}", "$: unknown key 'source'");
}

/* The journeys' cluster models (tests/journey) load, each as its source
 * says: import content, the disk storage, per-node versions, HA rules. */
Test(scenario, journey_models_load)
{
	const char *names[] = {"journey-lvmthin.json", "journey-zfs.json",
			       "journey-upgraded.json", "journey-mixed.json"};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		char *path = scenario_path(names[i]);
		char *err = NULL;
		struct cluster *c = cluster_load(path, 1.7e9, &err);
		cr_assert_not_null(c, "%s: %s", names[i], err ? err : "?");
		cr_assert_str_eq(cluster_pve_version(c), "9.1");
		cr_assert(cluster_check_password(c, "root@pam", "journey-root-pw"));
		cr_assert_not_null(cluster_guest(c, 190), "%s: no legacy guest", names[i]);
		cluster_free(c);
		free(err);
		free(path);
	}
}

Test(scenario, unknown_top_key)
{
	expect_err("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"}],\"bogus\":1}",
		   "$: unknown key 'bogus'");
}

Test(scenario, wrong_type)
{
	expect_err("{\"pve_version\":8.4,\"nodes\":[]}",
		   "$: 'pve_version' must be a string, not number");
	expect_err("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\",\"cpus\":\"8\"}]}",
		   "$.nodes[0]: 'cpus' must be an integer, not string");
}

Test(scenario, duplicate_node)
{
	expect_err("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"},{\"name\":\"pve1\"}]}",
		   "$.nodes[1]: duplicate node name 'pve1'");
}

Test(scenario, guest_on_unknown_node)
{
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\",\"config\":{}},"
			     "{\"vmid\":101,\"node\":\"pve1\",\"config\":{}},"
			     "{\"vmid\":102,\"node\":\"pve9\",\"config\":{}}]}",
		   "$.guests[2].node: unknown node 'pve9'");
}

Test(scenario, duplicate_vmid)
{
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\",\"config\":{}},"
			     "{\"vmid\":100,\"node\":\"pve2\",\"config\":{}}]}",
		   "$.guests[1]: duplicate vmid 100");
}

Test(scenario, storage_unknown_node)
{
	expect_err("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"}],"
		   "\"storages\":[{\"id\":\"s\",\"type\":\"dir\",\"nodes\":[\"pve1\",\"pveX\"],"
		   "\"content\":\"images\"}]}",
		   "$.storages[0].nodes[1]: unknown node 'pveX'");
}

Test(scenario, bad_config_values)
{
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\","
			     "\"config\":{\"memory\":\"lots\"}}]}",
		   "$.guests[0].config.memory: invalid memory 'lots'");
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve2\","
			     "\"config\":{\"virtio0\":\"local-lvm:vm-100-disk-0,size=8G\"}}]}",
		   "$.guests[0].config.virtio0: storage 'local-lvm' is not available on node 'pve2'");
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\","
			     "\"config\":{\"virtio0\":\"nope:vm-100-disk-0,size=8G\"}}]}",
		   "$.guests[0].config.virtio0: storage 'nope' does not exist");
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\","
			     "\"config\":{\"net0\":\"e1000=zz,bridge=vmbr0\"}}]}",
		   "$.guests[0].config.net0: invalid MAC address 'zz'");
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\","
			     "\"config\":{\"net0\":\"ne3000,bridge=vmbr0\"}}]}",
		   "$.guests[0].config.net0: unknown NIC model 'ne3000'");
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\","
			     "\"config\":{\"template\":2}}]}",
		   "$.guests[0].config.template: must be 0 or 1, not '2'");
	/* found by fuzzing (tests/fuzz/regress/sim_scenario/): sizes past
	 * 2^64 bytes, or inf, converted to uint64_t */
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\","
			     "\"config\":{\"virtio0\":\"local-lvm:vm-100-disk-0,size=1e300G\"}}]}",
		   "$.guests[0].config.virtio0: invalid size '1e300G'");
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\","
			     "\"config\":{\"virtio0\":\"local-lvm:vm-100-disk-0,size=inf\"}}]}",
		   "$.guests[0].config.virtio0: invalid size 'inf'");
}

/* Found by fuzzing (tests/fuzz/regress/sim_scenario/): sizes too large for
 * uint64_t were converted anyway. */
Test(scenario, storage_sizes_too_large)
{
	expect_err("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"}],\"storages\":[{"
		   "\"id\":\"local\",\"type\":\"dir\",\"nodes\":[\"pve1\"],\"content\":\"iso\","
		   "\"size_gib\":1e300}]}",
		   "$.storages[0]: size_gib is too large");
	expect_err("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"}],\"storages\":[{"
		   "\"id\":\"local\",\"type\":\"dir\",\"nodes\":[\"pve1\"],\"content\":\"iso\","
		   "\"volumes\":[{\"volid\":\"local:iso/x.iso\",\"size_mib\":1e300}]}]}",
		   "size_mib is too large");
}

Test(scenario, status_and_address)
{
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\",\"status\":\"paused\","
			     "\"config\":{}}]}",
		   "$.guests[0]: status must be 'running' or 'stopped', not 'paused'");
	expect_err(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\",\"address\":\"x.y\","
			     "\"config\":{}}]}",
		   "$.guests[0]: address 'x.y' is not an IPv4 address");
}

Test(scenario, lxc_on_pve3_refused)
{
	expect_err("{\"pve_version\":\"3.4\",\"nodes\":[{\"name\":\"pve1\"}],"
		   "\"guests\":[{\"vmid\":100,\"node\":\"pve1\",\"type\":\"lxc\",\"config\":{}}]}",
		   "$.guests[0]: PVE 3.4 has no LXC");
}

Test(scenario, ha_unknown_guest)
{
	expect_err(BASE_HEAD "\"ha\":[{\"sid\":\"vm:555\"}]}", "$.ha[0]: sid 'vm:555' names no guest");
}

Test(scenario, token_id_checked)
{
	expect_err("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"}],"
		   "\"tokens\":[{\"id\":\"root@pam\",\"secret\":\"x\"}]}",
		   "$.tokens[0]: invalid token id 'root@pam'");
}

Test(scenario, volume_on_wrong_storage)
{
	expect_err("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"}],"
		   "\"storages\":[{\"id\":\"local\",\"type\":\"dir\",\"content\":\"iso\","
		   "\"volumes\":[{\"volid\":\"other:iso/x.iso\"}]}]}",
		   "$.storages[0].volumes[0]: volid 'other:iso/x.iso' is not on storage 'local'");
}

Test(scenario, mac_added_when_missing)
{
	char *path = write_tmp(BASE_HEAD "\"guests\":[{\"vmid\":100,\"node\":\"pve1\","
				       "\"config\":{\"net0\":\"virtio,bridge=vmbr0\"}}]}");
	char *err = NULL;
	struct cluster *c = cluster_load(path, 1.7e9, &err);
	cr_assert_not_null(c, "%s", err ? err : "");
	const char *net0 = cfg_str(cluster_guest(c, 100)->config, "net0");
	cr_assert(strncmp(net0, "virtio=BC:24:11:", 16) == 0, "%s", net0);
	cr_assert(strstr(net0, ",bridge=vmbr0") != NULL, "%s", net0);
	cluster_free(c);
	unlink(path);
	free(path);
}
