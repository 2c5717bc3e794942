/* routes_nodeinfo.c - what a node says about itself beyond its status:
 * GET /nodes/{node}/network (the bridges: vmbr0 and every bridge a guest's
 * NIC names, since a scenario lists no host interfaces; PVE answers every
 * user), GET /nodes/{node}/time (Sys.Audit on /nodes/{node}; time zone
 * UTC) and GET /nodes/{node}/capabilities/qemu/machines (every user: the
 * machine types of the node's QEMU, by its PVE version). A node's clock is
 * this host's: the time scale and /_sim/advance move tasks, never the clock
 * a client compares its own with (pvagent doctor's skew check). */
#include "cluster.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool has_name(json_object *arr, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++)
		if (strcmp(json_object_get_string(json_object_object_get(
				   json_object_array_get_idx(arr, i), "iface")),
			   name) == 0)
			return true;
	return false;
}

static int add_bridge(json_object *arr, const char *name)
{
	if (has_name(arr, name))
		return 0;
	json_object *o = json_object_new_object();
	if (!o)
		return -1;
	jadd_str(o, "iface", name);
	jadd_str(o, "type", "bridge");
	jadd_int(o, "active", 1);
	jadd_int(o, "autostart", 1);
	jadd_str(o, "bridge_ports", "eno1");
	jadd_str(o, "method", "manual");
	return json_object_array_add(arr, o);
}

static void route_network(struct cluster *c, const struct sim_req *req, struct sim_resp *r)
{
	const char *type = param_str(req, "type");
	json_object *out = json_object_new_array();
	bool bridges = !type || strcmp(type, "bridge") == 0 || strcmp(type, "any_bridge") == 0 ||
		       strcmp(type, "any_local_bridge") == 0 || strcmp(type, "include_sdn") == 0;
	int rc = out ? 0 : -1;
	if (rc == 0 && bridges)
		rc = add_bridge(out, "vmbr0");
	for (size_t i = 0; rc == 0 && bridges && i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		json_object_object_foreach(g->config, k, v) {
			if (rc < 0 || !key_indexed(k, "net"))
				continue;
			char *br = prop_get(json_object_get_string(v), "bridge");
			if (br)
				rc = add_bridge(out, br);
			free(br);
		}
	}
	/* pve-manager Network.pm: any_bridge, include_sdn and vnet add the
	 * node's SDN VNets (get_local_vnets), type "vnet" */
	bool vnets = type && (strcmp(type, "any_bridge") == 0 || strcmp(type, "include_sdn") == 0 ||
			      strcmp(type, "vnet") == 0);
	for (size_t i = 0; rc == 0 && vnets && c->sdn_vnets &&
			   i < json_object_array_length(c->sdn_vnets);
	     i++) {
		json_object *o = json_object_new_object();
		rc = o ? 0 : -1;
		if (o) {
			jadd_str(o, "iface",
				 json_object_get_string(json_object_array_get_idx(c->sdn_vnets, i)));
			jadd_str(o, "type", "vnet");
			jadd_int(o, "active", 1);
			rc = json_object_array_add(out, o);
		}
	}
	if (rc < 0) {
		json_object_put(out);
		resp_error(r, 500, "out of memory");
	} else {
		resp_data(r, out);
	}
}

bool routes_nodeinfo(struct cluster *c, const struct sim_req *req, struct path_parts *pp,
		     struct sim_resp *r)
{
	char **s = pp->seg;
	if (pp->n == 5 && strcmp(s[0], "nodes") == 0 && strcmp(req->method, "GET") == 0 &&
	    strcmp(s[2], "capabilities") == 0 && strcmp(s[3], "qemu") == 0 &&
	    strcmp(s[4], "machines") == 0) {
		struct sim_node *nd = route_node(c, s[1], r);
		if (nd)
			resp_data(r, node_machine_types(c, nd));
		return true;
	}
	if (pp->n != 3 || strcmp(s[0], "nodes") != 0 || strcmp(req->method, "GET") != 0)
		return false;
	bool net = strcmp(s[2], "network") == 0, is_time = strcmp(s[2], "time") == 0;
	if (!net && !is_time)
		return false;
	struct sim_node *nd = route_node(c, s[1], r);
	if (!nd)
		return true;
	if (net) {
		route_network(c, req, r);
		return true;
	}
	char *path = strprintf("/nodes/%s", nd->name);
	bool ok = path && priv_check(req, r, path, "Sys.Audit");
	free(path);
	if (!ok)
		return true;
	json_object *o = json_object_new_object();
	long long host = (long long)time(NULL);
	jadd_int(o, "time", host);
	jadd_int(o, "localtime", host);
	jadd_str(o, "timezone", "UTC");
	resp_data(r, o);
	return true;
}
