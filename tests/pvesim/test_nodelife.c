/* test_nodelife.c - nodes that upgrade and reboot over simulated time
 * (versions, machine types, kernel, uptime, quorum, guests stopped, HA
 * restart or recovery), Ceph status and flags, the node commands without
 * SSH (/_sim/node/shell), and the scenario fields' refusals; through
 * cluster_handle() and cluster_sim_control() with a controlled clock. */
#include <criterion/criterion.h>

#include "cluster.h"
#include "simapi.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T0 1700000000.0

static struct cluster *load(const char *name)
{
	char *path = strprintf("tests/pvesim/scenarios/%s", name), *err = NULL;
	struct cluster *c = path ? cluster_load(path, T0, &err) : NULL;
	cr_assert_not_null(c, "%s: %s (run from the repository root)", name, err ? err : "?");
	free(path);
	return c;
}

/* Load scenario text; NULL with *err on refusal. */
static struct cluster *load_text(const char *text, char **err)
{
	char tmpl[] = "/tmp/pvesim-nodelife-XXXXXX";
	int fd = mkstemp(tmpl);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	*err = NULL;
	struct cluster *c = cluster_load(tmpl, T0, err);
	unlink(tmpl);
	return c;
}

/* GET path as root@pam at now: the answer's data (new reference), status
 * into *status. */
static json_object *get(struct cluster *c, const char *path, double now, int *status)
{
	json_object *p = json_object_new_object();
	struct sim_req req = {.method = "GET", .path = path, .params = p, .userid = "root@pam",
			      .privs = "all", .now = now};
	struct sim_resp r = {0};
	cluster_handle(c, &req, &r);
	json_object_put(p);
	*status = r.status;
	json_object *d = json_object_get(r.data);
	if (r.status != 200)
		fprintf(stderr, "GET %s: %d %s\n", path, r.status, r.message ? r.message : "");
	sim_resp_clear(&r);
	return d;
}

static json_object *get_ok(struct cluster *c, const char *path, double now)
{
	int st;
	json_object *d = get(c, path, now, &st);
	cr_assert_eq(st, 200, "GET %s: %d", path, st);
	return d;
}

static int call(struct cluster *c, const char *method, const char *path, const char *params,
		double now, char **msg)
{
	json_object *p = json_tokener_parse(params);
	struct sim_req req = {.method = method, .path = path, .params = p,
			      .userid = "root@pam", .privs = "all", .now = now};
	struct sim_resp r = {0};
	cluster_handle(c, &req, &r);
	json_object_put(p);
	int st = r.status;
	if (msg)
		*msg = r.message ? strdup(r.message) : NULL;
	sim_resp_clear(&r);
	return st;
}

/* A /_sim/ control route; its data (new reference) or NULL, *status. */
static json_object *control(struct cluster *c, const char *method, const char *path,
			    const char *body, double now, int *status)
{
	json_object *b = body ? json_tokener_parse(body) : NULL, *data = NULL;
	char *msg = NULL;
	*status = 200;
	cr_assert(cluster_sim_control(c, method, path, b, now, &data, status, &msg), "%s", path);
	json_object_put(b);
	free(msg);
	return data;
}

static const char *jstr(json_object *o, const char *k)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

static long long jint(json_object *o, const char *k)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : -1;
}

/* /cluster/status's entry for node (or the cluster's with "cluster"). */
static json_object *status_entry(json_object *arr, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		if (strcmp(name, "cluster") == 0 ? strcmp(jstr(e, "type"), "cluster") == 0
						 : jstr(e, "name") && strcmp(jstr(e, "name"), name) == 0)
			return e;
	}
	return NULL;
}

static bool has_machine(json_object *machines, const char *id)
{
	for (size_t i = 0; i < json_object_array_length(machines); i++)
		if (strcmp(jstr(json_object_array_get_idx(machines, i), "id"), id) == 0)
			return true;
	return false;
}

static struct sim_guest *guest(struct cluster *c, int vmid)
{
	struct sim_guest *g = cluster_guest(c, vmid);
	cr_assert_not_null(g, "guest %d", vmid);
	return g;
}

Test(nodelife, upgrade_changes_version_and_qemu_at_once_and_the_kernel_at_the_reboot)
{
	struct cluster *c = load("rolling.json");
	json_object *v = get_ok(c, "/nodes/pve1/version", T0);
	cr_assert_str_eq(jstr(v, "version"), "8.4.1");
	json_object_put(v);
	json_object *m = get_ok(c, "/nodes/pve1/capabilities/qemu/machines", T0);
	cr_assert(has_machine(m, "pc-i440fx-9.2+pve1"));
	cr_assert_not(has_machine(m, "pc-i440fx-10.1"));
	json_object_put(m);

	int st;
	json_object *u = control(c, "POST", "/_sim/node/upgrade", "{\"node\":\"pve1\"}", T0 + 1, &st);
	cr_assert_eq(st, 200);
	cr_assert(json_object_get_boolean(json_object_object_get(u, "upgraded")));
	cr_assert_str_eq(jstr(u, "qemu"), "10.1.2");
	json_object_put(u);
	v = get_ok(c, "/nodes/pve1/version", T0 + 2);
	cr_assert_str_eq(jstr(v, "version"), "9.1.1");
	cr_assert_str_eq(jstr(v, "release"), "9.1");
	json_object_put(v);
	m = get_ok(c, "/nodes/pve1/capabilities/qemu/machines", T0 + 2);
	cr_assert(has_machine(m, "pc-i440fx-10.1"));
	cr_assert(has_machine(m, "pc-q35-10.0+pve1"));
	json_object_put(m);
	/* the other nodes keep theirs */
	v = get_ok(c, "/nodes/pve2/version", T0 + 2);
	cr_assert_str_eq(jstr(v, "version"), "8.4.1");
	json_object_put(v);
	json_object *s = get_ok(c, "/nodes/pve1/status", T0 + 2);
	cr_assert_str_eq(jstr(s, "pveversion"), "pve-manager/9.1.1/2a5fa54a8503f96d");
	cr_assert(strstr(jstr(s, "kversion"), "6.8.12-9-pve"), "%s", jstr(s, "kversion"));
	json_object_put(s);
	/* a VM running through the upgrade keeps its machine type */
	char mb[64];
	cr_assert_str_eq(guest_running_machine(c, guest(c, 102), mb, sizeof mb),
			 "pc-i440fx-9.2+pve1");
	/* a second upgrade has nothing to do */
	u = control(c, "POST", "/_sim/node/upgrade", "{\"node\":\"pve1\"}", T0 + 3, &st);
	cr_assert_not(json_object_get_boolean(json_object_object_get(u, "upgraded")));
	json_object_put(u);

	u = control(c, "POST", "/_sim/node/reboot", "{\"node\":\"pve1\"}", T0 + 10, &st);
	cr_assert_eq(st, 200);
	json_object_put(u);
	cluster_advance(c, T0 + 10 + 90 + 30);
	s = get_ok(c, "/nodes/pve1/status", T0 + 130);
	cr_assert(strstr(jstr(s, "kversion"), "6.17.2-1-pve"), "%s", jstr(s, "kversion"));
	cr_assert_str_eq(jstr(json_object_object_get(s, "current-kernel"), "release"),
			 "6.17.2-1-pve");
	cr_assert_eq(jint(s, "uptime"), 30);
	json_object_put(s);
	cluster_free(c);
}

Test(nodelife, reboot_takes_the_node_offline_stops_its_guests_and_brings_it_back)
{
	struct cluster *c = load("rolling.json");
	struct sim_guest *plain = guest(c, 102), *ha = guest(c, 100), *stopped = guest(c, 108);
	struct sim_guest *other = guest(c, 202);
	cr_assert(plain->running && ha->running && !stopped->running);
	json_object *s = get_ok(c, "/nodes/pve1/status", T0);
	long long up0 = jint(s, "uptime");
	json_object_put(s);
	cr_assert_gt(up0, 3600, "the nodes came up long before");

	int st;
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"pve1\"}", T0 + 5, &st));
	cr_assert_eq(st, 200);
	cr_assert_not(plain->running);
	cr_assert_not(ha->running);
	cr_assert(other->running, "a guest elsewhere keeps running");
	json_object *cs = get_ok(c, "/cluster/status", T0 + 6);
	cr_assert_eq(jint(status_entry(cs, "pve1"), "online"), 0);
	cr_assert_eq(jint(status_entry(cs, "pve2"), "online"), 1);
	cr_assert_eq(jint(status_entry(cs, "cluster"), "quorate"), 1, "two of three votes");
	json_object_put(cs);
	char *msg = NULL;
	cr_assert_eq(call(c, "GET", "/nodes/pve1/status", "{}", T0 + 6, &msg), 595);
	free(msg);
	/* rebooting twice is refused */
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"pve1\"}", T0 + 7, &st));
	cr_assert_eq(st, 409);

	/* a second node down: no quorum */
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"pve2\"}", T0 + 8, &st));
	cs = get_ok(c, "/cluster/status", T0 + 9);
	cr_assert_eq(jint(status_entry(cs, "cluster"), "quorate"), 0);
	json_object_put(cs);

	/* not yet: 90 s */
	cluster_advance(c, T0 + 5 + 89);
	cr_assert_eq(call(c, "GET", "/nodes/pve1/status", "{}", T0 + 94, NULL), 595);
	cluster_advance(c, T0 + 5 + 90 + 10);
	s = get_ok(c, "/nodes/pve1/status", T0 + 105);
	cr_assert_eq(jint(s, "uptime"), 10, "a new boot time");
	json_object_put(s);
	cs = get_ok(c, "/cluster/status", T0 + 105);
	cr_assert_eq(jint(status_entry(cs, "pve1"), "online"), 1);
	cr_assert_eq(jint(status_entry(cs, "cluster"), "quorate"), 1);
	json_object_put(cs);
	/* back before the fencing delay: onboot guests start, its LRM starts
	 * its HA guest again, on this node; a stopped guest stays stopped */
	cr_assert(plain->running);
	cr_assert_str_eq(ha->node, "pve1");
	cr_assert(ha->running, "HA guest started by the LRM (5 s after the boot)");
	cr_assert_not(stopped->running);
	cluster_free(c);
}

Test(nodelife, a_node_away_past_the_fencing_delay_has_its_ha_guests_recovered_elsewhere)
{
	struct cluster *c = load("rolling.json");
	/* pve1 in maintenance: recovery must not pick it */
	guest(c, 100);
	struct sim_node *n1 = cluster_node(c, "pve1"), *n3 = cluster_node(c, "pve3");
	n1->ha_maintenance = true;
	n3->reboot_s = 600;
	struct sim_guest *ha1 = guest(c, 300), *ha2 = guest(c, 301), *plain = guest(c, 302);
	int st;
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"pve3\"}", T0, &st));
	cr_assert_eq(st, 200);
	cluster_advance(c, T0 + 119);
	cr_assert_str_eq(ha1->node, "pve3", "not fenced yet");
	cluster_advance(c, T0 + 120);
	cr_assert_str_eq(ha1->node, "pve2", "recovered to the node not in maintenance");
	cr_assert_str_eq(ha2->node, "pve2");
	cr_assert_not(ha1->running, "the LRM starts it 5 s later");
	cluster_advance(c, T0 + 130);
	cr_assert(ha1->running);
	cr_assert(ha2->running);
	cr_assert_str_eq(plain->node, "pve3", "a guest HA does not manage stays");
	cr_assert_not(plain->running);
	cluster_advance(c, T0 + 700);
	cr_assert(n3->online);
	cr_assert(plain->running, "onboot");
	cr_assert_str_eq(ha1->node, "pve2", "no failback without a rule");
	cluster_free(c);
}

static bool check_named(json_object *checks, const char *name, const char *msg)
{
	json_object *ck = NULL, *sum = NULL;
	if (!json_object_object_get_ex(checks, name, &ck) ||
	    !json_object_object_get_ex(ck, "summary", &sum))
		return false;
	return !msg || strcmp(jstr(sum, "message"), msg) == 0;
}

Test(nodelife, ceph_health_follows_the_flags_and_the_nodes)
{
	struct cluster *c = load("rolling.json");
	json_object *s = get_ok(c, "/cluster/ceph/status", T0), *h = NULL, *checks = NULL;
	json_object_object_get_ex(s, "health", &h);
	cr_assert_str_eq(jstr(h, "status"), "HEALTH_OK");
	json_object_put(s);

	char *msg = NULL;
	cr_assert_eq(call(c, "PUT", "/cluster/ceph/flags", "{\"noout\":\"1\"}", T0 + 1, &msg), 200);
	free(msg);
	cluster_advance(c, T0 + 3);
	s = get_ok(c, "/cluster/ceph/status", T0 + 3);
	json_object_object_get_ex(s, "health", &h);
	json_object_object_get_ex(h, "checks", &checks);
	cr_assert_str_eq(jstr(h, "status"), "HEALTH_WARN");
	cr_assert(check_named(checks, "OSDMAP_FLAGS", "noout flag(s) set"));
	json_object_put(s);
	json_object *f = get_ok(c, "/cluster/ceph/flags/noout", T0 + 3);
	cr_assert(json_object_get_boolean(f));
	json_object_put(f);
	f = get_ok(c, "/cluster/ceph/flags", T0 + 3);
	cr_assert_eq(json_object_array_length(f), 11);
	json_object_put(f);

	/* a node down: its OSDs down, kept in by noout past 600 s */
	int st;
	struct sim_node *n = cluster_node(c, "pve2");
	n->reboot_s = 2000;
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"pve2\"}", T0 + 10, &st));
	s = get_ok(c, "/cluster/ceph/status", T0 + 700);
	json_object_object_get_ex(s, "health", &h);
	json_object_object_get_ex(h, "checks", &checks);
	cr_assert(check_named(checks, "OSD_DOWN", "2 osds down"));
	cr_assert(check_named(checks, "OSD_HOST_DOWN", "1 host (2 osds) down"));
	cr_assert(check_named(checks, "MON_DOWN", "1/3 mons down, quorum pve1,pve3"));
	json_object *om = json_object_object_get(s, "osdmap");
	cr_assert_eq(jint(om, "num_up_osds"), 4);
	cr_assert_eq(jint(om, "num_in_osds"), 6, "noout keeps them in");
	json_object_put(s);
	cr_assert_eq(call(c, "PUT", "/cluster/ceph/flags/noout", "{\"value\":\"0\"}", T0 + 701, NULL),
		     200);
	s = get_ok(c, "/cluster/ceph/status", T0 + 702);
	json_object_object_get_ex(s, "health", &h);
	json_object_object_get_ex(h, "checks", &checks);
	cr_assert_not(check_named(checks, "OSDMAP_FLAGS", NULL));
	cr_assert_eq(jint(json_object_object_get(s, "osdmap"), "num_in_osds"), 4,
		     "marked out without noout");
	json_object_put(s);
	cluster_advance(c, T0 + 2100);
	s = get_ok(c, "/cluster/ceph/status", T0 + 2100);
	json_object_object_get_ex(s, "health", &h);
	cr_assert_str_eq(jstr(h, "status"), "HEALTH_OK");
	json_object_put(s);
	cluster_free(c);
}

Test(nodelife, without_ceph_the_routes_answer_as_pve_without_ceph_installed)
{
	struct cluster *c = load("demo.json");
	char *msg = NULL;
	cr_assert_eq(call(c, "GET", "/cluster/ceph/status", "{}", T0, &msg), 500);
	cr_assert_str_eq(msg, "binary not installed: /usr/bin/ceph-mon");
	free(msg);
	cr_assert_eq(call(c, "GET", "/cluster/ceph/flags", "{}", T0, &msg), 500);
	free(msg);
	cluster_free(c);
}

/* A command through /_sim/node/shell: exit code, output into *out. */
static int shell(struct cluster *c, const char *node, const char *argv_json, double now,
		 char **out)
{
	char *body = strprintf("{\"node\":\"%s\",\"argv\":%s}", node, argv_json);
	int st;
	json_object *d = control(c, "POST", "/_sim/node/shell", body, now, &st);
	free(body);
	cr_assert_eq(st, 200);
	int code = (int)jint(d, "exit");
	*out = strdup(jstr(d, "output"));
	json_object_put(d);
	return code;
}

Test(nodelife, node_commands_answer_from_the_model_and_are_recorded)
{
	struct cluster *c = load("rolling.json");
	char *out = NULL;
	cr_assert_eq(shell(c, "pve2", "[\"pveversion\"]", T0, &out), 0);
	cr_assert_str_eq(out, "pve-manager/8.4.1/2a5fa54a8503f96d (running kernel: 6.8.12-9-pve)\n");
	free(out);
	cr_assert_eq(shell(c, "pve2", "[\"apt-get\",\"dist-upgrade\"]", T0, &out), 1);
	cr_assert(strstr(out, "Abort."), "%s", out);
	free(out);
	cr_assert_eq(shell(c, "pve2", "[\"apt-get\",\"-y\",\"dist-upgrade\"]", T0, &out), 0);
	free(out);
	cr_assert_str_eq(cluster_node(c, "pve2")->version, "9.1.1");
	cr_assert_eq(shell(c, "pve2", "[\"apt-get\",\"-y\",\"dist-upgrade\"]", T0, &out), 0);
	cr_assert(strstr(out, "0 upgraded"), "%s", out);
	free(out);
	cr_assert_eq(shell(c, "pve2", "[\"ha-manager\",\"crm-command\",\"node-maintenance\","
				      "\"enable\",\"pve2\"]", T0, &out), 0);
	free(out);
	cr_assert(cluster_node(c, "pve2")->ha_maintenance);
	cr_assert_eq(shell(c, "pve2", "[\"ceph\",\"osd\",\"set\",\"noout\"]", T0, &out), 0);
	cr_assert_str_eq(out, "noout is set\n");
	free(out);
	cr_assert_eq(shell(c, "pve2", "[\"ceph\",\"health\"]", T0, &out), 0);
	cr_assert_str_eq(out, "HEALTH_WARN noout flag(s) set\n");
	free(out);
	cr_assert_eq(shell(c, "pve2", "[\"reboot\"]", T0 + 1, &out), 0);
	free(out);
	cr_assert_eq(shell(c, "pve2", "[\"pveversion\"]", T0 + 2, &out), 255, "down: %s", out);
	free(out);
	cluster_advance(c, T0 + 100);
	cr_assert_eq(shell(c, "pve2", "[\"pveversion\"]", T0 + 100, &out), 0);
	cr_assert_str_eq(out, "pve-manager/9.1.1/2a5fa54a8503f96d (running kernel: 6.17.2-1-pve)\n");
	free(out);
	cr_assert_eq(shell(c, "pve2", "[\"pve8to9\",\"--full\"]", T0 + 100, &out), 0);
	cr_assert(strstr(out, "FAILURES: 0"), "%s", out);
	free(out);
	cr_assert_eq(shell(c, "pve2", "[\"nosuch\"]", T0 + 100, &out), 127);
	free(out);

	int st;
	json_object *log = control(c, "GET", "/_sim/node-commands", NULL, T0 + 100, &st);
	cr_assert_eq(json_object_array_length(log), 12);
	json_object *e = json_object_array_get_idx(log, 7);
	cr_assert_str_eq(jstr(e, "node"), "pve2");
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(
				 json_object_object_get(e, "argv"), 0)), "reboot");
	cr_assert_eq(jint(e, "exit"), 0);
	json_object_put(log);
	cluster_free(c);
}

Test(nodelife, pve8to9_fails_as_the_scenario_says)
{
	char *err = NULL;
	struct cluster *c = load_text(
		"{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\",\"pve8to9\":{\"exit\":1,"
		"\"lines\":[\"FAIL: systemd-boot meta-package installed\"]}}]}", &err);
	cr_assert_not_null(c, "%s", err ? err : "?");
	char *out = NULL;
	cr_assert_eq(shell(c, "pve1", "[\"pve8to9\",\"--full\"]", T0, &out), 1);
	cr_assert(strstr(out, "FAIL: systemd-boot meta-package installed\n"), "%s", out);
	cr_assert(strstr(out, "FAILURES: 1\n"), "%s", out);
	free(out);
	/* no Ceph: the client cannot find its configuration */
	cr_assert_eq(shell(c, "pve1", "[\"ceph\",\"osd\",\"set\",\"noout\"]", T0, &out), 1);
	free(out);
	cluster_free(c);
}

static void expect_refusal(const char *text, const char *want)
{
	char *err = NULL;
	struct cluster *c = load_text(text, &err);
	cr_assert_null(c, "accepted: %s", text);
	cr_assert(err && strstr(err, want), "got '%s', want '%s'", err ? err : "", want);
	cr_assert(strstr(err, "/tmp/pvesim-nodelife-"), "names the file: %s", err);
	free(err);
}

Test(nodelife, bad_fields_are_refused_with_file_and_path)
{
	expect_refusal("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\",\"upgrade\":"
		       "{\"version\":\"8.3\"}}]}",
		       "$.nodes[0].upgrade: version '8.3' is not newer than the node's '8.4'");
	expect_refusal("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\",\"upgrade\":"
		       "{\"version\":\"9.1.1\",\"qemu\":\"10.1\"}}]}",
		       "$.nodes[0].upgrade: invalid qemu '10.1'");
	expect_refusal("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\",\"upgrade\":"
		       "{\"version\":\"9.1.1\",\"kernel\":\"linux\"}}]}",
		       "$.nodes[0].upgrade: invalid kernel 'linux'");
	expect_refusal("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\",\"upgrade\":"
		       "{\"version\":\"9.1.1\",\"reboot_s\":0}}]}",
		       "$.nodes[0].upgrade: reboot_s must be more than 0");
	expect_refusal("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\",\"upgrade\":"
		       "{\"version\":\"9.1.1\",\"when\":1}}]}",
		       "$.nodes[0].upgrade: unknown key 'when'");
	expect_refusal("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\",\"votes\":-1}]}",
		       "$.nodes[0]: votes must be from 0 to 255");
	expect_refusal("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\",\"pve8to9\":"
		       "{\"lines\":[1]}}]}",
		       "$.nodes[0].pve8to9: lines[0] must be a string");
	expect_refusal("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"}],\"ceph\":"
		       "{\"flags\":[\"nofly\"]}}",
		       "$.ceph.flags[0]: not a Ceph OSD flag");
	expect_refusal("{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"}],\"ceph\":"
		       "{\"mons\":1}}",
		       "$.ceph: unknown key 'mons'");
}

Test(nodelife, votes_decide_quorum)
{
	char *err = NULL;
	struct cluster *c = load_text(
		"{\"pve_version\":\"9.1\",\"nodes\":[{\"name\":\"a\",\"votes\":3},{\"name\":\"b\"},"
		"{\"name\":\"c\"}]}", &err);
	cr_assert_not_null(c, "%s", err ? err : "?");
	int st;
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"b\"}", T0, &st));
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"c\"}", T0, &st));
	json_object *cs = get_ok(c, "/cluster/status", T0 + 1);
	cr_assert_eq(jint(status_entry(cs, "cluster"), "quorate"), 1, "3 of 5 votes");
	json_object_put(cs);
	cluster_advance(c, T0 + 61);
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"a\"}", T0 + 61, &st));
	cs = get_ok(c, "/cluster/status", T0 + 62);
	cr_assert_eq(jint(status_entry(cs, "cluster"), "quorate"), 0, "2 of 5 votes");
	json_object_put(cs);
	/* corosync's nodelist says where the votes are */
	json_object *cn = get_ok(c, "/cluster/config/nodes", T0 + 62);
	cr_assert_eq(json_object_array_length(cn), 3);
	cr_assert_str_eq(jstr(json_object_array_get_idx(cn, 0), "node"), "a");
	cr_assert_str_eq(jstr(json_object_array_get_idx(cn, 0), "quorum_votes"), "3");
	cr_assert_str_eq(jstr(json_object_array_get_idx(cn, 1), "quorum_votes"), "1");
	json_object_put(cn);
	cluster_free(c);
}

Test(nodelife, without_quorum_nothing_is_fenced)
{
	struct cluster *c = load("rolling.json");
	cluster_node(c, "pve2")->reboot_s = 600;
	cluster_node(c, "pve3")->reboot_s = 600;
	struct sim_guest *ha = guest(c, 300);
	int st;
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"pve2\"}", T0, &st));
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"pve3\"}", T0, &st));
	cluster_advance(c, T0 + 300);
	cr_assert_str_eq(ha->node, "pve3", "one node of three has no quorum: no fencing");
	cr_assert_not(ha->running);
	cluster_advance(c, T0 + 700);
	cr_assert_str_eq(ha->node, "pve3");
	cr_assert(ha->running, "started by its own LRM once back");
	cluster_free(c);
}

Test(nodelife, a_reboot_ends_the_migrations_to_and_from_the_node)
{
	struct cluster *c = load("rolling.json");
	struct sim_guest *g = guest(c, 102);
	long long boots0 = g->boots;
	char *msg = NULL;
	json_object *p = json_tokener_parse("{\"target\":\"pve2\",\"online\":\"1\"}");
	struct sim_req req = {.method = "POST", .path = "/nodes/pve1/qemu/102/migrate", .params = p,
			      .userid = "root@pam", .privs = "all", .now = T0};
	struct sim_resp r = {0};
	cluster_handle(c, &req, &r);
	json_object_put(p);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	char *upid = strdup(r.upid);
	sim_resp_clear(&r);
	int st;
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"pve2\"}", T0 + 1, &st));
	char *path = strprintf("/nodes/pve1/tasks/%s/status", upid);
	json_object *ts = get_ok(c, path, T0 + 2);
	cr_assert_str_eq(jstr(ts, "status"), "stopped");
	cr_assert_str_eq(jstr(ts, "exitstatus"), "interrupted by signal");
	json_object_put(ts);
	cr_assert_str_eq(g->node, "pve1");
	cr_assert(g->running, "stays on its source");
	json_object *state = cluster_state(c, T0 + 2), *gs = json_object_object_get(state, "guests");
	json_object *e = NULL;
	for (size_t i = 0; i < json_object_array_length(gs); i++)
		if (jint(json_object_array_get_idx(gs, i), "vmid") == 102)
			e = json_object_array_get_idx(gs, i);
	cr_assert_not_null(e);
	cr_assert_eq(jint(e, "boots"), boots0, "never restarted");
	cr_assert_str_eq(jstr(e, "running_machine"), "pc-i440fx-9.2+pve1");
	json_object_put(state);
	cr_assert_null(guest_lock(g));
	free(path);
	free(upid);
	free(msg);
	cluster_free(c);
}

Test(nodelife, recovery_follows_node_affinity_rules)
{
	char *err = NULL;
	struct cluster *c = load_text(
		"{\"pve_version\":\"9.1\",\"nodes\":[{\"name\":\"a\",\"upgrade\":{\"version\":\"9.2\","
		"\"reboot_s\":1000}},{\"name\":\"b\"},{\"name\":\"c\"},{\"name\":\"d\"}],"
		"\"guests\":[{\"vmid\":100,\"node\":\"a\",\"type\":\"qemu\",\"status\":\"running\","
		"\"config\":{\"memory\":\"512\"}},"
		"{\"vmid\":101,\"node\":\"a\",\"type\":\"qemu\",\"status\":\"running\","
		"\"config\":{\"memory\":\"512\"}},"
		"{\"vmid\":102,\"node\":\"b\",\"type\":\"qemu\",\"status\":\"running\","
		"\"config\":{\"memory\":\"512\"}},"
		"{\"vmid\":103,\"node\":\"a\",\"type\":\"qemu\",\"status\":\"running\","
		"\"config\":{\"memory\":\"512\"}}],"
		"\"ha\":[{\"sid\":\"vm:100\",\"state\":\"started\"},{\"sid\":\"vm:101\","
		"\"state\":\"started\"},{\"sid\":\"vm:102\",\"state\":\"started\"},"
		"{\"sid\":\"vm:103\",\"state\":\"stopped\"}],"
		"\"ha_rules\":[{\"rule\":\"r1\",\"type\":\"node-affinity\",\"resources\":\"vm:100\","
		"\"nodes\":\"a:3,d:2,c:1\",\"strict\":1}]}", &err);
	cr_assert_not_null(c, "%s", err ? err : "?");
	int st;
	cluster_node(c, "d")->ha_maintenance = true;
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"a\"}", T0, &st));
	cluster_advance(c, T0 + 130);
	/* the rule's best online node not in maintenance, though b and c are
	 * as loaded */
	cr_assert_str_eq(guest(c, 100)->node, "c");
	cr_assert(guest(c, 100)->running);
	/* no rule: the node with the fewest HA guests (b has one, c now one,
	 * d is in maintenance), then by name */
	cr_assert_str_eq(guest(c, 101)->node, "b");
	cr_assert(guest(c, 101)->running);
	/* an HA guest asked stopped moves and stays stopped */
	cr_assert_str_neq(guest(c, 103)->node, "a");
	cr_assert_not(guest(c, 103)->running);
	cluster_free(c);
}

Test(nodelife, ceph_status_needs_an_audit_privilege)
{
	struct cluster *c = load("rolling.json");
	json_object *p = json_object_new_object();
	struct sim_req req = {.method = "GET", .path = "/cluster/ceph/status", .params = p,
			      .userid = "root@pam!pvagent", .privs = "VM.Audit", .now = T0};
	struct sim_resp r = {0};
	cluster_handle(c, &req, &r);
	cr_assert_eq(r.status, 403);
	cr_assert_str_eq(r.message, "Permission check failed (/, Sys.Audit|Datastore.Audit)");
	sim_resp_clear(&r);
	req.privs = "Datastore.Audit";
	cluster_handle(c, &req, &r);
	cr_assert_eq(r.status, 200);
	sim_resp_clear(&r);
	req.method = "PUT";
	req.path = "/cluster/ceph/flags/noout";
	cluster_handle(c, &req, &r);
	cr_assert_eq(r.status, 403, "setting a flag needs Sys.Modify");
	sim_resp_clear(&r);
	json_object_put(p);
	cluster_free(c);
}

Test(nodelife, with_the_freeze_policy_a_long_reboot_recovers_nothing)
{
	char *err = NULL;
	struct cluster *c = load_text(
		"{\"pve_version\":\"9.1\",\"ha_shutdown_policy\":\"conditional\",\"nodes\":[{\"name\":"
		"\"a\",\"upgrade\":{\"version\":\"9.2\",\"reboot_s\":1000}},{\"name\":\"b\"},"
		"{\"name\":\"c\"}],\"guests\":[{\"vmid\":100,\"node\":\"a\",\"type\":\"qemu\","
		"\"status\":\"running\",\"config\":{\"memory\":\"512\"}}],"
		"\"ha\":[{\"sid\":\"vm:100\",\"state\":\"started\"}]}", &err);
	cr_assert_not_null(c, "%s", err ? err : "?");
	int st;
	json_object_put(control(c, "POST", "/_sim/node/reboot", "{\"node\":\"a\"}", T0, &st));
	cluster_advance(c, T0 + 900);
	cr_assert_str_eq(guest(c, 100)->node, "a", "frozen, not recovered");
	cr_assert_not(guest(c, 100)->running);
	cluster_advance(c, T0 + 1010);
	cr_assert(guest(c, 100)->running, "started again where it was");
	cluster_free(c);
	c = load_text("{\"pve_version\":\"9.1\",\"ha_shutdown_policy\":\"migrate\",\"nodes\":"
		      "[{\"name\":\"a\"}]}", &err);
	cr_assert_null(c);
	cr_assert(strstr(err, "$.ha_shutdown_policy: 'migrate' is not modelled"), "%s", err);
	free(err);
}
