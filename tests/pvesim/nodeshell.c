/* nodeshell.c - the commands a node's SSH stand-ins forward to the
 * simulator (tests/pvesim/nodeshell/, nodelife.h), answered from the
 * model and recorded: apt-get update / dist-upgrade (the node's upgrade),
 * reboot, ha-manager crm-command node-maintenance enable|disable NODE,
 * ceph osd set|unset FLAG, ceph health / ceph -s, pve8to9 [--full],
 * pveversion [-v]. Output and exit codes are the real tools' where the
 * rolling update reads them. */
#include "ha_crm.h"
#include "nodelife.h"

#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *arg(json_object *argv, size_t i)
{
	json_object *a = json_object_array_get_idx(argv, i);
	return a ? json_object_get_string(a) : NULL;
}

static bool has_arg(json_object *argv, const char *a)
{
	for (size_t i = 1; i < json_object_array_length(argv); i++)
		if (strcmp(arg(argv, i), a) == 0)
			return true;
	return false;
}

/* The first argument that is not an option (-y, -o X, --foo=bar). */
static const char *apt_operation(json_object *argv)
{
	for (size_t i = 1; i < json_object_array_length(argv); i++) {
		const char *a = arg(argv, i);
		if (strcmp(a, "-o") == 0 || strcmp(a, "-c") == 0 || strcmp(a, "-t") == 0) {
			i++;
			continue;
		}
		if (a[0] != '-')
			return a;
	}
	return NULL;
}

static int apt_get(struct cluster *c, struct sim_node *n, json_object *argv, double now,
		   struct sbuf *o)
{
	const char *op = apt_operation(argv);
	if (!op) {
		sbuf_add(o, "E: No operation given (apt-get update, dist-upgrade, ...)\n");
		return 100;
	}
	if (strcmp(op, "update") == 0) {
		const char *suite = node_pve_version(c, n)[0] == '9' ? "trixie" : "bookworm";
		sbuf_addf(o, "Hit:1 http://deb.debian.org/debian %s InRelease\n"
			     "Hit:2 http://download.proxmox.com/debian/pve %s InRelease\n"
			     "Reading package lists...\n", suite, suite);
		return 0;
	}
	if (strcmp(op, "dist-upgrade") != 0 && strcmp(op, "full-upgrade") != 0 &&
	    strcmp(op, "upgrade") != 0) {
		sbuf_addf(o, "E: Invalid operation %s\n", op);
		return 100;
	}
	bool pending = n->upgrade && !(n->version && strcmp(n->version, n->upgrade->version) == 0);
	sbuf_add(o, "Reading package lists...\nBuilding dependency tree...\n"
		    "Reading state information...\nCalculating upgrade...\n");
	if (!pending) {
		sbuf_add(o, "0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n");
		return 0;
	}
	sbuf_add(o, "The following packages will be upgraded:\n"
		    "  proxmox-kernel pve-manager pve-qemu-kvm qemu-server\n"
		    "4 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n");
	bool yes = has_arg(argv, "-y") || has_arg(argv, "--yes") ||
		   has_arg(argv, "--assume-yes") || has_arg(argv, "-qy") || has_arg(argv, "-yq");
	if (!yes) {
		/* no terminal to answer the prompt */
		sbuf_add(o, "Do you want to continue? [Y/n] Abort.\n");
		return 1;
	}
	if (node_upgrade_apply(c, n, now) < 0) {
		sbuf_add(o, "E: Sub-process /usr/bin/dpkg returned an error code (1)\n");
		return 100;
	}
	sbuf_addf(o, "Setting up pve-manager (%s) ...\n", n->version);
	return 0;
}

static int ha_manager(struct cluster *c, json_object *argv, struct sbuf *o)
{
	size_t na = json_object_array_length(argv);
	if (na == 5 && strcmp(arg(argv, 1), "crm-command") == 0 &&
	    strcmp(arg(argv, 2), "node-maintenance") == 0 &&
	    (strcmp(arg(argv, 3), "enable") == 0 || strcmp(arg(argv, 3), "disable") == 0)) {
		struct sim_node *t = cluster_node(c, arg(argv, 4));
		if (!t) {
			sbuf_addf(o, "400 Parameter verification failed.\n"
				     "node: no such cluster node '%s'\n", arg(argv, 4));
			return 255;
		}
		/* the CRM's maintenance mode (the HA model: no guest is placed
		 * there while it holds) */
		t->ha_maintenance = strcmp(arg(argv, 3), "enable") == 0;
		return 0;
	}
	if (na == 2 && strcmp(arg(argv, 1), "status") == 0) {
		sbuf_addf(o, "quorum %s\n", cluster_quorate(c) ? "OK" : "No quorum");
		for (size_t i = 0; i < c->nodes.n; i++) {
			const struct sim_node *n = c->nodes.v[i];
			sbuf_addf(o, "lrm %s (%s)\n", n->name,
				  !n->online ? "old timestamp - dead?"
				  : n->ha_maintenance ? "maintenance mode" : "active");
		}
		return 0;
	}
	sbuf_add(o, "ERROR: unknown command 'ha-manager");
	for (size_t i = 1; i < na; i++)
		sbuf_addf(o, " %s", arg(argv, i));
	sbuf_add(o, "'\n");
	return 255;
}

static int ceph_cmd(struct cluster *c, json_object *argv, struct sbuf *o, double now)
{
	size_t na = json_object_array_length(argv);
	if (!c->ceph) {
		sbuf_add(o, "Error initializing cluster client: ObjectNotFound('RADOS object not "
			    "found (error calling conf_read_file)')\n");
		return 1;
	}
	if (na == 4 && strcmp(arg(argv, 1), "osd") == 0 &&
	    (strcmp(arg(argv, 2), "set") == 0 || strcmp(arg(argv, 2), "unset") == 0)) {
		bool on = strcmp(arg(argv, 2), "set") == 0;
		if (ceph_set_flag(c->ceph, arg(argv, 3), on) < 0) {
			sbuf_addf(o, "Invalid command: %s not in full|pause|noup|nodown|noout|noin|"
				     "nobackfill|norebalance|norecover|noscrub|nodeep-scrub|"
				     "notieragent|nosnaptrim|pglog_hardlimit\n", arg(argv, 3));
			return 22;
		}
		sbuf_addf(o, "%s is %s\n", arg(argv, 3), on ? "set" : "unset");
		return 0;
	}
	if ((na == 2 && strcmp(arg(argv, 1), "health") == 0) ||
	    (na == 2 && (strcmp(arg(argv, 1), "-s") == 0 || strcmp(arg(argv, 1), "status") == 0))) {
		struct sim_req req = {.method = "GET", .path = "/cluster/ceph/status",
				      .userid = "root@pam", .privs = "all", .now = now};
		json_object *params = json_object_new_object();
		req.params = params;
		struct sim_resp r = {0};
		struct path_parts pp;
		if (!params || path_split("/cluster/ceph/status", &pp) < 0) {
			json_object_put(params);
			return 1;
		}
		routes_ceph(c, &req, &pp, &r);
		path_parts_free(&pp);
		json_object_put(params);
		json_object *h = NULL, *checks = NULL;
		json_object_object_get_ex(r.data, "health", &h);
		/* ceph health: "HEALTH_WARN noout flag(s) set; 2 osds down" */
		sbuf_addf(o, "%s", cfg_str(h, "status") ? cfg_str(h, "status") : "HEALTH_ERR");
		const char *sep = " ";
		if (json_object_object_get_ex(h, "checks", &checks)) {
			json_object_object_foreach(checks, k, v) {
				json_object *s = NULL;
				(void)k;
				json_object_object_get_ex(v, "summary", &s);
				sbuf_addf(o, "%s%s", sep, cfg_str(s, "message") ? cfg_str(s, "message") : "");
				sep = "; ";
			}
		}
		sbuf_add(o, "\n");
		sim_resp_clear(&r);
		return 0;
	}
	sbuf_add(o, "Invalid command\n");
	return 22;
}

static int pve8to9(struct cluster *c, struct sim_node *n, struct sbuf *o)
{
	json_object *lines = NULL, *code = NULL;
	int exitc = 0;
	size_t fails = 0, nl = 0;
	if (n->pve8to9) {
		json_object_object_get_ex(n->pve8to9, "lines", &lines);
		if (json_object_object_get_ex(n->pve8to9, "exit", &code))
			exitc = json_object_get_int(code);
		nl = lines ? json_object_array_length(lines) : 0;
	}
	sbuf_add(o, "= CHECKING VERSION INFORMATION FOR PVE PACKAGES =\n\n"
		    "Checking for package updates..\n");
	const char *v = node_pve_version(c, n);
	sbuf_add(o, "PASS: all packages up-to-date\n\nChecking proxmox-ve package version..\n");
	if (atoi(v) >= 9)
		sbuf_add(o, "PASS: already upgraded to Proxmox VE 9\n");
	else
		sbuf_addf(o, "PASS: proxmox-ve package has version >= %.3s-0\n", v);
	sbuf_addf(o, "\nChecking running kernel version..\nPASS: running kernel '%s' is "
		     "considered suitable for upgrade.\n", node_kernel(c, n));
	for (size_t i = 0; i < nl; i++) {
		const char *l = json_object_get_string(json_object_array_get_idx(lines, i));
		fails += strncmp(l, "FAIL:", 5) == 0;
		sbuf_addf(o, "%s\n", l);
	}
	sbuf_addf(o, "\n= SUMMARY =\n\nTOTAL:    %zu\nPASSED:   %zu\nSKIPPED:  0\n"
		     "WARNINGS: 0\nFAILURES: %zu\n", 3 + fails, (size_t)3, fails);
	if (fails)
		sbuf_add(o, "\nATTENTION: Please check the output for detailed information!\n"
			    "Try to solve the problems one at a time and then run this checklist "
			    "tool again.\n");
	return exitc;
}

static int pveversion(struct cluster *c, struct sim_node *n, json_object *argv, struct sbuf *o)
{
	char *line = node_pveversion_line(c, n);
	if (!line)
		return 1;
	if (!has_arg(argv, "-v") && !has_arg(argv, "--verbose")) {
		sbuf_addf(o, "%s\n", line);
		free(line);
		return 0;
	}
	free(line);
	char *pv = pve_full_version(node_pve_version(c, n));
	sbuf_addf(o, "proxmox-ve: %.3s.0 (running kernel: %s)\n"
		     "pve-manager: %s (running version: %s/2a5fa54a8503f96d)\n"
		     "pve-qemu-kvm: %s-1\n", pv ? pv : "?", node_kernel(c, n), pv ? pv : "?",
		  pv ? pv : "?", node_qemu_version(c, n));
	free(pv);
	return 0;
}

static void record(struct cluster *c, struct sim_node *n, json_object *argv, double now,
		   int code)
{
	if (!c->node_commands && !(c->node_commands = json_object_new_array()))
		return;
	json_object *e = json_object_new_object(), *copy = NULL;
	if (!e || json_object_deep_copy(argv, &copy, NULL) < 0) {
		json_object_put(e);
		return;
	}
	jadd_str(e, "node", n->name);
	json_object_object_add(e, "argv", copy);
	json_object_object_add(e, "at", json_object_new_double(now));
	jadd_int(e, "exit", code);
	json_object_array_add(c->node_commands, e);
}

int nodeshell_run(struct cluster *c, struct sim_node *n, json_object *argv, double now,
		  char **out)
{
	struct sbuf o = {0};
	int code;
	const char *cmd = arg(argv, 0);
	const char *base = cmd ? strrchr(cmd, '/') : NULL;
	base = base ? base + 1 : cmd ? cmd : "";
	ha_crm_advance(c, now);
	if (!n->online) {
		/* its sshd is gone while it is down: what ssh says */
		sbuf_addf(&o, "ssh: connect to host %s port 22: Connection refused\n", n->ip);
		code = 255;
	} else if (strcmp(base, "apt-get") == 0 || strcmp(base, "apt") == 0) {
		code = apt_get(c, n, argv, now, &o);
	} else if (strcmp(base, "reboot") == 0) {
		char *err = NULL;
		code = node_reboot(c, n, now, &err) < 0 ? 1 : 0;
		if (err)
			sbuf_addf(&o, "reboot: %s\n", err);
		free(err);
	} else if (strcmp(base, "ha-manager") == 0) {
		code = ha_manager(c, argv, &o);
	} else if (strcmp(base, "ceph") == 0) {
		code = ceph_cmd(c, argv, &o, now);
	} else if (strcmp(base, "pve8to9") == 0) {
		code = pve8to9(c, n, &o);
	} else if (strcmp(base, "pveversion") == 0) {
		code = pveversion(c, n, argv, &o);
	} else {
		sbuf_addf(&o, "sh: %s: not found\n", base);
		code = 127;
	}
	record(c, n, argv, now, code);
	*out = sbuf_steal(&o);
	sbuf_free(&o);
	return code;
}

json_object *nodeshell_log(const struct cluster *c)
{
	json_object *copy = NULL;
	if (!c->node_commands)
		return json_object_new_array();
	if (json_object_deep_copy(c->node_commands, &copy, NULL) < 0)
		return NULL;
	return copy;
}
