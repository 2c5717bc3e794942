/* routes_ct.c - container routes: /nodes/{node}/lxc (PVE >= 4: list,
 * create, config, status, start/shutdown/stop/reboot, migrate, interfaces,
 * template, destroy) and /nodes/{node}/openvz (PVE 2.x/3.x: list, create,
 * config, status, start/shutdown/stop, migrate, destroy). What containers
 * and VMs share of the power routes is power.c's. */
#include "cluster.h"
#include "cluster_config.h"
#include "power.h"
#include "tasks.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sim_task *ct_task(struct cluster *c, const struct sim_req *req,
				const char *node, int vmid, const char *type,
				double duration)
{
	char *id = strprintf("%d", vmid);
	struct sim_task *t =
		id ? task_new(c, node, type, id, req->userid, req->now, duration) : NULL;
	free(id);
	if (t)
		t->vmid = vmid;
	return t;
}

/* The IPv4 address of a container: scenario address, else net0 ip= /
 * ip_address (without the prefix). malloc'd or NULL. */
static char *ct_address(const struct sim_guest *g, int *prefix)
{
	*prefix = 24;
	if (g->address)
		return strdup(g->address);
	const char *ipa = cfg_str(g->config, "ip_address");
	if (ipa) {
		*prefix = 32;
		return strndup(ipa, strcspn(ipa, " ,;"));
	}
	const char *net = cfg_str(g->config, "net0");
	char *ip = net ? prop_get(net, "ip") : NULL;
	if (!ip || strcmp(ip, "dhcp") == 0 || strcmp(ip, "manual") == 0) {
		free(ip);
		return NULL;
	}
	char *slash = strchr(ip, '/');
	if (slash) {
		*prefix = atoi(slash + 1);
		*slash = '\0';
	}
	return ip;
}

static uint64_t ct_disk(const struct sim_guest *g)
{
	const char *rootfs = cfg_str(g->config, "rootfs");
	if (rootfs) {
		char *sz = prop_get(rootfs, "size");
		uint64_t b = 0;
		if (sz && parse_size(sz, &b) < 0)
			b = 0;
		free(sz);
		return b;
	}
	const char *disk = cfg_str(g->config, "disk");
	return disk ? (uint64_t)(atof(disk) * (double)GiB) : 0;
}

/* ---- list and status ---------------------------------------------------- */
static json_object *ct_entry(const struct sim_guest *g, double now,
			     bool current)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	if (current || strcmp(g->type, "lxc") == 0) {
		jadd_int(o, "vmid", g->vmid);
	} else {
		char buf[16];
		snprintf(buf, sizeof(buf), "%d", g->vmid);
		jadd_str(o, "vmid", buf); /* PVE 3 lists vmids as strings */
	}
	char nbuf[32];
	jadd_str(o, "name", guest_status_name(g, nbuf, sizeof nbuf));
	jadd_str(o, "status", g->running ? "running" : "stopped");
	jadd_str(o, "type", g->type);
	uint64_t mem = guest_memory(g);
	json_object_object_add(o, "maxmem", json_object_new_uint64(mem));
	json_object_object_add(o, "mem", json_object_new_uint64(g->running ? mem / 4 : 0));
	const char *swap = cfg_str(g->config, "swap");
	json_object_object_add(
		o, "maxswap",
		json_object_new_uint64((uint64_t)(swap ? atoll(swap) : 512) * MiB));
	jadd_int(o, "swap", 0);
	json_object_object_add(o, "maxdisk", json_object_new_uint64(ct_disk(g)));
	jadd_int(o, "disk", g->running ? (long long)(ct_disk(g) / 10) : 0);
	const char *cores = cfg_str(g->config, "cores");
	if (!cores)
		cores = cfg_str(g->config, "cpus");
	jadd_int(o, "cpus", cores ? atoi(cores) : 1);
	json_object_object_add(o, "cpu", json_object_new_double(g->running ? 0.01 : 0));
	jadd_int(o, "uptime", g->running ? (long long)(now - g->started_at) : 0);
	if (guest_is_template(g))
		jadd_int(o, "template", 1);
	if (guest_lock(g))
		jadd_str(o, "lock", guest_lock(g));
	if (current && g->running)
		jadd_int(o, "pid", 20000 + g->vmid % 40000);
	if (current) {
		json_object *ha = json_object_new_object();
		if (ha)
			jadd_int(ha, "managed", 0);
		json_object_object_add(o, "ha", ha);
	}
	return o;
}

static void route_list(struct cluster *c, const struct sim_req *req,
		       const char *node, const char *type, struct sim_resp *r)
{
	json_object *arr = json_object_new_array();
	for (size_t i = 0; arr && i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		if (strcmp(g->type, type) != 0 || strcmp(g->node, node) != 0 ||
		    !vm_priv_has(req, g->vmid, "VM.Audit"))
			continue;
		json_object *o = ct_entry(g, req->now, false);
		if (o)
			json_object_array_add(arr, o);
	}
	resp_data(r, arr);
}

/* ---- create ------------------------------------------------------------- */
static void create_end(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (!g)
		return;
	if (!ok) {
		cluster_destroy_guest(c, g->vmid);
		return;
	}
	guest_set_lock(g, NULL);
	json_object *start;
	if (t->args && json_object_object_get_ex(t->args, "start", &start) &&
	    json_object_get_boolean(start)) {
		struct sim_node *n = cluster_node(c, g->node);
		if (n && node_mem_free(c, n) >= guest_memory(g))
			guest_started(c, g, t->end);
	}
}

static bool ct_create_meta(const char *k)
{
	static const char *const meta[] = {
		"node",	 "vmid",      "ostemplate",	   "password", "ssh-public-keys",
		"start", "storage",   "pool",		   "force",    "restore",
		"unique", "ignore-unpack-errors", "bwlimit", NULL};
	for (size_t i = 0; meta[i]; i++)
		if (strcmp(k, meta[i]) == 0)
			return true;
	return false;
}

static void route_create(struct cluster *c, const struct sim_req *req,
			 const char *node, const char *type, struct sim_resp *r)
{
	bool openvz = strcmp(type, "openvz") == 0;
	long long vmid = param_int(req, "vmid", 0);
	const char *ostemplate = param_str(req, "ostemplate");
	if (vmid < (openvz ? 1 : 100)) {
		resp_param_error(r, "vmid", "property is missing and it is not optional");
		return;
	}
	if (!ostemplate) {
		resp_param_error(r, "ostemplate", "property is missing and it is not optional");
		return;
	}
	if (!vm_priv_check(req, r, (int)vmid, "VM.Allocate"))
		return;
	/* PVE 9 (pve-container 6.0.6, API2/LXC.pm): unprivileged unless asked
	 * otherwise, and a privileged container needs Sys.Modify on / */
	bool unpriv_default = !openvz && c->major >= 9 && !param_str(req, "unprivileged");
	if (!openvz && c->major >= 9 && !param_bool(req, "unprivileged", true) &&
	    !priv_check(req, r, "/", "Sys.Modify"))
		return;
	json_object_object_foreach(req->params, pk, pv)
	{
		if (!openvz && !ct_create_meta(pk) &&
		    (config_key_perm(req, type, (int)vmid, pk, r) < 0 ||
		     config_value_perm(req, r, type, (int)vmid, pk, json_object_get_string(pv),
				       true) < 0))
			return;
	}
	/* pve-container create_vm: assert_tag_permissions */
	if (!openvz && param_str(req, "tags") &&
	    cluster_tag_check(c, req, r, (int)vmid, NULL, param_str(req, "tags")) < 0)
		return;
	struct sim_guest *old = cluster_guest(c, (int)vmid);
	if (old) {
		resp_error(r, 500, "%s %lld already exists on node '%s'",
			   strcmp(old->type, "qemu") == 0 ? "VM" : "CT", vmid, old->node);
		return;
	}
	struct sim_volume *tmpl = cluster_volume(c, ostemplate, node);
	if (!tmpl || strcmp(tmpl->content, "vztmpl") != 0) {
		resp_error(r, 500, "volume '%s' does not exist", ostemplate);
		return;
	}
	struct sim_guest *g = guest_new((int)vmid, type, node);
	if (!g || ptrvec_push(&c->guests, g) < 0) {
		guest_free(g);
		resp_error(r, 500, "out of memory");
		return;
	}
	double cost = 0;
	int rc = 0;
	const char *tname = strrchr(ostemplate, '/');
	tname = tname ? tname + 1 : ostemplate;
	if (openvz) {
		/* PVE 3 keeps the template name without suffix */
		size_t l = strcspn(tname, ".");
		const char *dot = strstr(tname, ".tar");
		if (dot)
			l = (size_t)(dot - tname);
		char *base = strndup(tname, l);
		if (base)
			json_object_object_add(g->config, "ostemplate", json_object_new_string(base));
		free(base);
		const char *defs[][2] = {{"memory", "512"}, {"swap", "512"},
					 {"disk", "2"},	    {"cpus", "1"}};
		for (size_t i = 0; i < 4; i++)
			json_object_object_add(g->config, defs[i][0],
					       json_object_new_string(defs[i][1]));
	} else {
		json_object_object_add(g->config, "arch", json_object_new_string("amd64"));
		size_t l = strcspn(tname, "-_");
		char *os = strndup(tname, l);
		if (os)
			json_object_object_add(g->config, "ostype", json_object_new_string(os));
		free(os);
		const char *defs[][2] = {{"memory", "512"}, {"swap", "512"}, {"cores", "1"}};
		for (size_t i = 0; i < 3; i++)
			json_object_object_add(g->config, defs[i][0],
					       json_object_new_string(defs[i][1]));
		if (unpriv_default)
			json_object_object_add(g->config, "unprivileged",
					       json_object_new_string("1"));
	}
	json_object_object_foreach(req->params, k, v)
	{
		if (rc < 0 || ct_create_meta(k))
			continue;
		const char *val = json_object_get_string(v);
		char *out = NULL;
		if (!openvz && is_drive_key(k))
			rc = config_alloc_drive(c, req, g, k, val ? val : "", &out, &cost,
						NULL, r);
		else if (!openvz && strncmp(k, "net", 3) == 0 &&
			 isdigit((unsigned char)k[3]))
			out = config_net_with_mac(g, k, val ? val : "");
		else
			out = strdup(val ? val : "");
		if (rc == 0 && !out) {
			resp_error(r, 500, "out of memory");
			rc = -1;
		}
		if (rc == 0)
			json_object_object_add(g->config, k, json_object_new_string(out));
		free(out);
	}
	if (rc == 0 && !openvz && !cfg_str(g->config, "rootfs")) {
		const char *st = param_str(req, "storage");
		char *spec = strprintf("%s:4", st ? st : "local");
		char *out = NULL;
		rc = spec ? config_alloc_drive(c, req, g, "rootfs", spec, &out, &cost,
					       NULL, r)
			  : -1;
		if (rc == 0 && out)
			json_object_object_add(g->config, "rootfs", json_object_new_string(out));
		free(spec);
		free(out);
	}
	if (rc == 0 && openvz) {
		const char *st = param_str(req, "storage");
		const char *disk = cfg_str(g->config, "disk");
		char *volid = strprintf("%s:private/%lld", st ? st : "local", vmid);
		if (!volid || !volume_add(c, volid, node, (int)vmid,
					  (uint64_t)(atof(disk ? disk : "2") * (double)GiB),
					  "rootdir")) {
			resp_error(r, 500, "storage '%s' does not exist", st ? st : "local");
			rc = -1;
		}
		free(volid);
	}
	struct sim_task *t = NULL;
	if (rc == 0) {
		guest_set_lock(g, "create");
		double extract = (double)tmpl->size / (50.0 * MiB);
		t = ct_task(c, req, node, (int)vmid, "vzcreate", 1.0 + extract + cost);
	}
	if (!t) {
		if (rc == 0)
			resp_error(r, 500, "out of memory");
		cluster_destroy_guest(c, (int)vmid);
		return;
	}
	double extract = (double)tmpl->size / (50.0 * MiB);
	if (openvz) {
		task_log(t, 0.1, "creating container %lld", vmid);
		task_log(t, 0.2, "extracting archive '/var/lib/vz/template/cache/%s'", tname);
		task_log(t, 0.2 + extract, "Total bytes read: %llu (%lluMiB)",
			 (unsigned long long)tmpl->size,
			 (unsigned long long)(tmpl->size / MiB));
		task_log(t, 0.5 + extract, "Creating SSH host key 'ssh_host_rsa_key' - "
					   "this may take some time ...");
	} else {
		task_log(t, 0.1, "extracting archive '/var/lib/vz/template/cache/%s'", tname);
		task_log(t, 0.2 + extract, "Total bytes read: %llu (%lluMiB, 50MiB/s)",
			 (unsigned long long)tmpl->size,
			 (unsigned long long)(tmpl->size / MiB));
		task_log(t, 0.3 + extract, "Detected container architecture: amd64");
		task_log(t, 0.5 + extract, "Creating SSH host key 'ssh_host_ed25519_key' - "
					   "this may take some time ...");
	}
	t->on_end = create_end;
	t->args = json_object_new_object();
	if (t->args)
		json_object_object_add(t->args, "start",
				       json_object_new_boolean(param_bool(req, "start", false)));
	task_apply_fault(t, req->task_fail);
	resp_task(r, t);
}

/* ---- power -------------------------------------------------------------- */
/* pve-container's own start, stop, shutdown and reboot (the rest is
 * power_route's): a start of a running CT or a stop of a stopped one is
 * refused before any task. */
static void power_direct(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
			 const char *action, struct sim_resp *r)
{
	struct sim_task *t = NULL;
	if (strcmp(action, "start") == 0) {
		if (g->running) {
			resp_error(r, 500, "CT %d already running", g->vmid);
			return;
		}
		if (!guest_check_lock(req, g, r))
			return;
		t = ct_task(c, req, g->node, g->vmid, "vzstart", 1.0);
		struct sim_node *n = cluster_node(c, g->node);
		if (t && n && node_mem_free(c, n) < guest_memory(g)) {
			task_log(t, 0.5, "lxc-start: %d: lxccontainer.c: wait_on_daemonized_start: "
					 "Received container state \"ABORTING\" instead of \"RUNNING\"",
				 g->vmid);
			char *msg = strprintf("startup for container '%d' failed", g->vmid);
			task_fail_at(t, 0.5, msg ? msg : "startup failed");
			free(msg);
		} else if (t) {
			t->on_end = task_end_start;
		}
	} else { /* stop, shutdown, reboot */
		if (!g->running) {
			resp_error(r, 500, "CT %d not running", g->vmid);
			return;
		}
		if (!guest_check_lock(req, g, r))
			return;
		bool reboot = strcmp(action, "reboot") == 0;
		bool stop = strcmp(action, "stop") == 0;
		t = ct_task(c, req, g->node, g->vmid,
			    reboot ? "vzreboot" : stop ? "vzstop" : "vzshutdown",
			    reboot ? 3.0 : stop ? 0.5 : 2.0);
		if (t)
			t->on_end = reboot ? task_end_reboot : task_end_stop;
	}
	if (t)
		task_apply_fault(t, req->task_fail);
	resp_task(r, t);
}

static const struct power_kind ct_power = {
	.template_msg = "you can't start a CT if it's a template",
	.direct = power_direct,
};

void ct_ha_carry_out(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
		     const char *action)
{
	power_ha_carry_out(c, req, g, action, &ct_power);
}

/* ---- interfaces, destroy, template -------------------------------------- */
static json_object *ct_iface(const char *name, const char *mac, const char *ip,
			     int prefix)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	jadd_str(o, "name", name);
	jadd_str(o, "hwaddr", mac);
	jadd_str(o, "hardware-address", mac);
	json_object *ips = json_object_new_array();
	if (ip) {
		char *inet = strprintf("%s/%d", ip, prefix);
		jadd_str(o, "inet", inet);
		free(inet);
		json_object *a = json_object_new_object();
		if (a && ips) {
			jadd_str(a, "ip-address", ip);
			jadd_str(a, "ip-address-type", "inet");
			jadd_int(a, "prefix", prefix);
			json_object_array_add(ips, a);
		} else {
			json_object_put(a);
		}
	}
	json_object_object_add(o, "ip-addresses", ips);
	return o;
}

static void route_interfaces(const struct sim_req *req, struct sim_guest *g,
			     struct sim_resp *r)
{
	if (!vm_priv_check(req, r, g->vmid, "VM.Audit"))
		return;
	if (!g->running) {
		resp_error(r, 500, "CT %d not running", g->vmid);
		return;
	}
	json_object *arr = json_object_new_array();
	if (!arr) {
		resp_error(r, 500, "out of memory");
		return;
	}
	json_object *lo = ct_iface("lo", "00:00:00:00:00:00", "127.0.0.1", 8);
	if (lo)
		json_object_array_add(arr, lo);
	const char *net = cfg_str(g->config, "net0");
	if (net) {
		char *name = prop_get(net, "name");
		char *mac = prop_get(net, "hwaddr");
		int prefix;
		char *ip = ct_address(g, &prefix);
		for (char *p = mac; p && *p; p++)
			*p = (char)tolower((unsigned char)*p);
		json_object *e = ct_iface(name ? name : "eth0",
					  mac ? mac : "00:00:00:00:00:00", ip, prefix);
		if (e)
			json_object_array_add(arr, e);
		free(name);
		free(mac);
		free(ip);
	}
	resp_data(r, arr);
}

static void destroy_end(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (!g)
		return;
	if (!ok) {
		guest_set_lock(g, NULL);
		return;
	}
	cluster_destroy_guest(c, g->vmid);
}

static void route_destroy(struct cluster *c, const struct sim_req *req,
			  struct sim_guest *g, struct sim_resp *r)
{
	if (!vm_priv_check(req, r, g->vmid, "VM.Allocate"))
		return;
	if (g->running) {
		resp_error(r, 500, "unable to destroy CT %d - container is running", g->vmid);
		return;
	}
	if (!guest_check_lock(req, g, r))
		return;
	struct sim_task *t = ct_task(c, req, g->node, g->vmid, "vzdestroy", 1.0);
	if (t) {
		guest_set_lock(g, "destroyed");
		t->on_end = destroy_end;
		task_apply_fault(t, req->task_fail);
	}
	resp_task(r, t);
}

/* ---- dispatch ----------------------------------------------------------- */
bool routes_ct(struct cluster *c, const struct sim_req *req,
	       struct path_parts *pp, struct sim_resp *r)
{
	char **s = pp->seg;
	size_t n = pp->n;
	if (n < 3 || strcmp(s[0], "nodes") != 0)
		return false;
	const char *type = s[2];
	if (strcmp(type, "lxc") == 0) {
		if (c->major < 4)
			return false; /* PVE 3 has no LXC: 501 */
	} else if (strcmp(type, "openvz") == 0) {
		if (c->major >= 4)
			return false;
	} else {
		return false;
	}
	bool openvz = strcmp(type, "openvz") == 0;
	const char *m = req->method;
	bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0;
	bool put = strcmp(m, "PUT") == 0, del = strcmp(m, "DELETE") == 0;
	struct sim_node *node = route_node(c, s[1], r);
	if (!node)
		return true;
	if (n == 3 && get) {
		route_list(c, req, node->name, type, r);
		return true;
	}
	if (n == 3 && post) {
		route_create(c, req, node->name, type, r);
		return true;
	}
	if (n < 4)
		return false;
	struct sim_guest *g = route_guest(c, node->name, s[3], type, r);
	if (!g)
		return true;
	if (n == 4 && del) {
		route_destroy(c, req, g, r);
		return true;
	}
	if (n == 4 && get) {
		const char *const subs[] = {"config", "status", "migrate", "interfaces", "snapshot"};
		resp_data(r, subdir_index("subdir", subs, openvz ? 4 : 5));
		return true;
	}
	if (n >= 5 && strcmp(s[4], "snapshot") == 0 && !openvz) {
		route_snapshots(c, req, g, pp, r);
		return true;
	}
	const char *sub = s[4];
	if (n == 5 && strcmp(sub, "config") == 0 && get) {
		if (vm_priv_check(req, r, g->vmid, "VM.Audit"))
			resp_data(r, config_output(g, param_bool(req, "current", false)));
		return true;
	}
	if (n == 5 && strcmp(sub, "config") == 0 && put) {
		double cost = 0;
		if (config_update(c, req, g, r, &cost, NULL) == 0) {
			if (cost > 30.0)
				resp_error(r, 596, "Connection timed out");
			else
				resp_data(r, NULL);
		}
		return true;
	}
	if (n == 5 && strcmp(sub, "interfaces") == 0 && get && !openvz) {
		route_interfaces(req, g, r);
		return true;
	}
	if (n == 5 && strcmp(sub, "template") == 0 && post && !openvz) {
		if (!vm_priv_check(req, r, g->vmid, "VM.Allocate") ||
		    !guest_check_lock(req, g, r))
			return true;
		if (g->running) {
			resp_error(r, 500, "unable to create template, because CT is running");
			return true;
		}
		json_object_object_add(g->config, "template", json_object_new_int(1));
		resp_data(r, NULL);
		return true;
	}
	if (n == 5 && strcmp(sub, "migrate") == 0 && get && c->major >= 9) {
		/* pve-container 6.0.8's precondition (the schema refuses it before 9) */
		if (vm_priv_check(req, r, g->vmid, "VM.Migrate"))
			resp_data(r, ct_migrate_precondition(c, g));
		return true;
	}
	if (n == 5 && strcmp(sub, "migrate") == 0 && post) {
		if (!vm_priv_check(req, r, g->vmid, "VM.Migrate"))
			return true;
		const char *target = param_str(req, "target");
		if (!target) {
			resp_param_error(r, "target", "property is missing and it is not optional");
			return true;
		}
		if (!openvz && cluster_ha_managed(c, g)) {
			guest_ha_migrate_request(c, req, g, target, r);
			return true;
		}
		struct sim_task *t = ct_start_migration(
			c, req, g, target, param_bool(req, "restart", false),
			param_bool(req, "online", false), req->now, r);
		if (t)
			resp_task(r, t);
		return true;
	}
	if (strcmp(sub, "status") == 0) {
		if (n == 6 && get && strcmp(s[5], "current") == 0) {
			if (vm_priv_check(req, r, g->vmid, "VM.Audit")) {
				json_object *o = ct_entry(g, req->now, true), *ha = NULL;
				const char *hs = cluster_ha_managed(c, g);
				/* pve-container reports HA like qemu-server */
				if (o && hs && json_object_object_get_ex(o, "ha", &ha)) {
					jadd_int(ha, "managed", 1);
					jadd_str(ha, "state", hs);
				}
				resp_data(r, o);
			}
			return true;
		}
		if (n == 6 && post && !(openvz && strcmp(s[5], "reboot") == 0)) {
			power_route(c, req, g, s[5], &ct_power, r);
			return true;
		}
	}
	return false;
}
