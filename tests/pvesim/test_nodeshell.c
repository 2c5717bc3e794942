/* test_nodeshell.c - each node command through a real test sshd per node
 * (tests/support/nodesshd.h: busybox chroot, the stand-ins of
 * tests/pvesim/nodeshell/) to a running simulator: answered from the
 * scenario, recorded in /_sim/node-commands, and changing the model as the
 * API then shows (version, maintenance, Ceph flags, a reboot). */
#include <criterion/criterion.h>

#include "nodesshd.h"
#include "simproc.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct simproc sp;
static struct nodesshd ns;

static void setup(void)
{
	static const char *const args[] = {"--node-shell-listen", "127.0.0.1:0", NULL};
	cr_assert_eq(simproc_start(&sp, "tests/pvesim/scenarios/rolling.json", args), 0);
	cr_assert_eq(nodesshd_start(&ns, &sp), 0, "cannot start the nodes' sshd (see stderr)");
	cr_assert_eq(ns.n, 3);
}

static void teardown(void)
{
	nodesshd_stop(&ns);
	cr_assert_eq(simproc_stop(&sp), 0);
}

static json_object *api_data(const char *path)
{
	long status = 0;
	json_object *ans = NULL, *d = NULL;
	cr_assert_eq(sim_api(&sp, "GET", path, NULL, &status, &ans), 0);
	cr_assert_eq(status, 200, "GET %s: %ld", path, status);
	cr_assert(json_object_object_get_ex(ans, "data", &d));
	json_object_get(d);
	json_object_put(ans);
	return d;
}

static const char *jstr(json_object *o, const char *k)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

/* ssh root@NODE CMD: the exit status; output into *out (freed by caller). */
static int run(const char *node, const char *cmd, char **out)
{
	*out = NULL;
	int rc = nodesshd_run(&ns, node, cmd, out);
	cr_assert_geq(rc, 0, "ssh %s %s did not run", node, cmd);
	return rc;
}

/* The node's entry in /_sim/state. */
static json_object *state_node(json_object *st, const char *name)
{
	json_object *cl = NULL, *nodes = NULL;
	json_object_object_get_ex(st, "cluster", &cl);
	json_object_object_get_ex(cl, "nodes", &nodes);
	for (size_t i = 0; i < json_object_array_length(nodes); i++)
		if (strcmp(jstr(json_object_array_get_idx(nodes, i), "name"), name) == 0)
			return json_object_array_get_idx(nodes, i);
	return NULL;
}

TestSuite(nodeshell, .init = setup, .fini = teardown, .timeout = 120);

Test(nodeshell, upgrade_maintenance_noout_and_checks_over_ssh)
{
	char *out = NULL;
	cr_assert_eq(run("pve2", "pveversion", &out), 0, "%s", out);
	cr_assert_str_eq(out, "pve-manager/8.4.1/2a5fa54a8503f96d (running kernel: 6.8.12-9-pve)\n");
	free(out);
	cr_assert_eq(run("pve2", "pve8to9 --full", &out), 0, "%s", out);
	cr_assert(strstr(out, "= SUMMARY =") && strstr(out, "FAILURES: 0"), "%s", out);
	free(out);

	cr_assert_eq(run("pve2", "ha-manager crm-command node-maintenance enable pve2", &out), 0,
		     "%s", out);
	free(out);
	json_object *st = simproc_state(&sp);
	cr_assert(json_object_get_boolean(json_object_object_get(state_node(st, "pve2"),
								 "ha_maintenance")));
	json_object_put(st);
	json_object *ha = api_data("/cluster/ha/status/current");
	bool seen = false;
	for (size_t i = 0; i < json_object_array_length(ha); i++) {
		json_object *e = json_object_array_get_idx(ha, i);
		if (jstr(e, "id") && strcmp(jstr(e, "id"), "lrm:pve2") == 0)
			seen = strstr(jstr(e, "status"), "maintenance mode") != NULL;
	}
	cr_assert(seen, "the LRM says maintenance mode");
	json_object_put(ha);

	cr_assert_eq(run("pve2", "ceph osd set noout", &out), 0, "%s", out);
	cr_assert_str_eq(out, "noout is set\n");
	free(out);
	json_object *cs = api_data("/cluster/ceph/status");
	cr_assert_str_eq(jstr(json_object_object_get(cs, "health"), "status"), "HEALTH_WARN");
	json_object_put(cs);

	cr_assert_eq(run("pve2", "apt-get update", &out), 0, "%s", out);
	free(out);
	cr_assert_eq(run("pve2", "apt-get dist-upgrade", &out), 1, "%s", out);
	free(out);
	cr_assert_eq(run("pve2", "apt-get -y -o Dpkg::Options::=--force-confold dist-upgrade", &out),
		     0, "%s", out);
	free(out);
	json_object *v = api_data("/nodes/pve2/version");
	cr_assert_str_eq(jstr(v, "version"), "9.1.1");
	json_object_put(v);

	cr_assert_eq(run("pve2", "ha-manager crm-command node-maintenance disable pve2", &out), 0);
	free(out);
	cr_assert_eq(run("pve2", "ceph osd unset noout", &out), 0, "%s", out);
	cr_assert_str_eq(out, "noout is unset\n");
	free(out);

	json_object *log = NULL;
	long status = 0;
	cr_assert_eq(sim_http(&sp, "GET", "/_sim/node-commands", NULL, NULL, NULL, &status, &log),
		     0);
	json_object *cmds = json_object_object_get(log, "data");
	cr_assert_eq(json_object_array_length(cmds), 9);
	json_object *e = json_object_array_get_idx(cmds, 6);
	json_object *argv = json_object_object_get(e, "argv");
	cr_assert_str_eq(jstr(e, "node"), "pve2");
	cr_assert_eq(json_object_array_length(argv), 5, "argv as given");
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(argv, 3)),
			 "Dpkg::Options::=--force-confold");
	json_object_put(log);
}

Test(nodeshell, reboot_over_ssh_and_back_on_the_simulated_clock)
{
	char *out = NULL;
	cr_assert_eq(run("pve3", "apt-get -y dist-upgrade", &out), 0, "%s", out);
	free(out);
	cr_assert_eq(run("pve3", "reboot", &out), 0, "%s", out);
	free(out);
	/* while it is down its commands fail as ssh does */
	cr_assert_eq(run("pve3", "pveversion", &out), 255, "%s", out);
	free(out);
	json_object *cl = api_data("/cluster/status");
	bool off = false;
	for (size_t i = 0; i < json_object_array_length(cl); i++) {
		json_object *e = json_object_array_get_idx(cl, i);
		if (jstr(e, "name") && strcmp(jstr(e, "name"), "pve3") == 0)
			off = json_object_get_int(json_object_object_get(e, "online")) == 0;
	}
	cr_assert(off);
	json_object_put(cl);
	cr_assert_eq(simproc_advance(&sp, 95), 0);
	cr_assert_eq(run("pve3", "pveversion", &out), 0, "%s", out);
	cr_assert_str_eq(out, "pve-manager/9.1.1/2a5fa54a8503f96d (running kernel: 6.17.2-1-pve)\n");
	free(out);
	json_object *s = api_data("/nodes/pve3/status");
	long long up = json_object_get_int64(json_object_object_get(s, "uptime"));
	cr_assert(up >= 5 && up < 600, "a new boot: uptime %lld", up);
	json_object_put(s);
}
