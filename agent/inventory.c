/* inventory.c - nodes and guests of the cluster (see inventory.h); the
 * configs of list --long read on the thread pool (jobpool_map). */
#include "inventory.h"

#include "jobpool.h"
#include "json.h"

#include "pvecfg.h"
#include "util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int64_t int_field(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_int64(v) : 0;
}

static void copy_field(json_object *dst, json_object *src, const char *k)
{
	json_object *v = NULL;
	json_object_object_get_ex(src, k, &v);
	json_object_object_add(dst, k, v ? json_object_get(v) : NULL);
}

static int cmp_node(const void *a, const void *b)
{
	const char *x = json_text(*(json_object *const *)a, "node");
	const char *y = json_text(*(json_object *const *)b, "node");
	return strcmp(x ? x : "", y ? y : "");
}

static int cmp_vmid(const void *a, const void *b)
{
	int64_t x = int_field(*(json_object *const *)a, "vmid");
	int64_t y = int_field(*(json_object *const *)b, "vmid");
	return (x > y) - (x < y);
}

int inventory_nodes(struct pve *c, json_object **out, struct pve_error *err)
{
	json_object *data = NULL;
	*out = NULL;
	if (pve_get(c, "/nodes", NULL, &data, err) < 0)
		return -1;
	if (!json_object_is_type(data, json_type_array)) {
		json_object_put(data);
		pve_error_set(err, PVE_ERR_PROTOCOL, "GET /nodes: expected a list");
		return -1;
	}
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < json_object_array_length(data); i++) {
		json_object *n = json_object_array_get_idx(data, i), *o = json_object_new_object();
		if (!o)
			break;
		static const char *keys[] = {"node", "status", "cpu", "maxcpu", "mem", "maxmem",
					     "uptime"};
		for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
			copy_field(o, n, keys[k]);
		json_object_array_add(a, o);
	}
	json_object_put(data);
	if (!a) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	json_object_array_sort(a, cmp_node);
	*out = a;
	return 0;
}

/* Disk bus and NIC model of one guest o (an inventory_guests item), from
 * its config. */
static int guest_hw(struct pve *c, json_object *o, struct pve_error *err)
{
	const char *type = json_text(o, "type"), *node = json_text(o, "node");
	int64_t vmid = int_field(o, "vmid");
	if (!type || !node) {
		pve_error_set(err, PVE_ERR_PROTOCOL, "guest %lld without type or node",
			      (long long)vmid);
		return -1;
	}
	char *enode = pve_path_escape(node);
	char *path = enode ? strprintf("/nodes/%s/%s/%lld/config", enode, type, (long long)vmid)
			   : NULL;
	free(enode);
	if (!path) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	json_object *cfg = NULL;
	int rc = pve_get(c, path, NULL, &cfg, err);
	free(path);
	if (rc < 0) {
		/* A guest deleted between the listing and now is simply gone. */
		if (err->kind != PVE_ERR_NOT_FOUND)
			return -1;
		pve_error_clear(err);
		json_object_object_add(o, "disk_bus", NULL);
		json_object_object_add(o, "nic_model", NULL);
		return 0;
	}
	char *disk = NULL, *nic = NULL;
	if (strcmp(type, "qemu") == 0) {
		struct pvecfg_hw hw;
		if (pvecfg_hw_read(cfg, &hw) == 0) {
			disk = pvecfg_hw_disk_summary(&hw, json_text(cfg, "boot"));
			nic = pvecfg_hw_nic_summary(&hw);
			pvecfg_hw_free(&hw);
		}
	} else if (strcmp(type, "lxc") == 0) {
		disk = strdup("rootfs");
		nic = strdup("veth");
	} else {
		disk = strdup("simfs");
		nic = strdup(json_text(cfg, "netif") ? "veth" : "venet");
	}
	json_object_put(cfg);
	if (!disk || !nic) {
		free(disk);
		free(nic);
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	json_object_object_add(o, "disk_bus", json_object_new_string(disk));
	json_object_object_add(o, "nic_model", json_object_new_string(nic));
	free(disk);
	free(nic);
	return 0;
}

int inventory_guests(struct pve *c, const char *node, json_object **out, struct pve_error *err)
{
	struct pve_params p = {0};
	json_object *data = NULL;
	*out = NULL;
	pve_params_add(&p, "type", "vm");
	int rc = pve_get(c, "/cluster/resources", &p, &data, err);
	pve_params_free(&p);
	if (rc < 0)
		return -1;
	if (!json_object_is_type(data, json_type_array)) {
		json_object_put(data);
		pve_error_set(err, PVE_ERR_PROTOCOL, "GET /cluster/resources: expected a list");
		return -1;
	}
	if (node) {
		json_object *nodes = NULL;
		bool known = false;
		if (pve_get(c, "/nodes", NULL, &nodes, err) < 0) {
			json_object_put(data);
			return -1;
		}
		for (size_t i = 0; i < json_object_array_length(nodes); i++) {
			const char *n = json_text(json_object_array_get_idx(nodes, i), "node");
			known |= n && strcmp(n, node) == 0;
		}
		json_object_put(nodes);
		if (!known) {
			json_object_put(data);
			pve_error_set(err, PVE_ERR_NOT_FOUND, "no node '%s' in the cluster", node);
			return -1;
		}
	}
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < json_object_array_length(data); i++) {
		json_object *r = json_object_array_get_idx(data, i);
		const char *n = json_text(r, "node");
		if (node && (!n || strcmp(n, node) != 0))
			continue;
		json_object *o = json_object_new_object();
		static const char *keys[] = {"vmid", "name", "node", "type", "status"};
		for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
			copy_field(o, r, keys[k]);
		json_object_object_add(o, "template",
				       json_object_new_boolean(int_field(r, "template") != 0));
		copy_field(o, r, "lock");
		copy_field(o, r, "tags");
		copy_field(o, r, "maxmem");
		json_object_array_add(a, o);
	}
	json_object_put(data);
	if (!a) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	json_object_array_sort(a, cmp_vmid);
	*out = a;
	return 0;
}

/* ---- the configs, read concurrently (jobpool_map) ------------------------------ */

static int hw_one(void *ctx, size_t i, struct pve *c, struct pve_error *err)
{
	return guest_hw(c, json_object_array_get_idx(ctx, i), err);
}

int inventory_guests_hw(struct pve *c, const struct pve_opts *po, unsigned parallel,
			json_object *guests, struct pve_error *err)
{
	return jobpool_map(po, c, parallel, json_object_array_length(guests), hw_one, guests, err);
}
