/* cluster_config.c - guest config changes as PVE makes them (see
 * cluster_config.h): allocation, unusedN, pending, digest, privileges. */
#include "cluster_config.h"

#include "scenario.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double alloc_seconds(const struct sim_storage *s, uint64_t size)
{
	double gib = (double)size / (double)GiB;
	if (strcmp(s->type, "lvmthin") == 0 || strcmp(s->type, "zfspool") == 0 ||
	    strcmp(s->type, "rbd") == 0)
		return 0.2;
	if (strcmp(s->type, "lvm") == 0)
		return 0.2 + gib / 5.0;
	return 0.2 + gib / 2.0; /* file storages: preallocation */
}

static bool is_alloc_spec(const char *volid, const char *sid, double *gib)
{
	size_t l = strlen(sid);
	const char *p = volid + l + 1;
	if (!*p)
		return false;
	for (const char *q = p; *q; q++)
		if (!isdigit((unsigned char)*q) && *q != '.')
			return false;
	*gib = strtod(p, NULL);
	return true;
}

/* "local-lvm:32,discard=on" -> opts part ",discard=on" (may be ""). */
static const char *drive_opts(const char *value)
{
	const char *c = strchr(value, ',');
	return c ? c : "";
}

int config_alloc_drive(struct cluster *c, const struct sim_req *req,
		       struct sim_guest *g, const char *key, const char *value,
		       char **out, double *cost, struct sbuf *log,
		       struct sim_resp *r)
{
	*out = NULL;
	char *vol = drive_volid(value);
	if (!vol) {
		resp_error(r, 500, "out of memory");
		return -1;
	}
	bool qemu = strcmp(g->type, "qemu") == 0;
	if (strcmp(vol, "none") == 0 || strcmp(vol, "cdrom") == 0) {
		free(vol);
		*out = strdup(value);
		return *out ? 0 : -1;
	}
	char *sid = volid_storage(vol);
	if (!sid) {
		/* a bare path or device: PVE would accept it for root only */
		resp_param_error(r, key, "invalid format - unable to parse volume ID '%s'",
				 vol);
		free(vol);
		return -1;
	}
	struct sim_storage *s = cluster_storage(c, sid);
	int rc = 0;
	double gib = 0;
	char *path = strprintf("/storage/%s", sid);
	if (!s) {
		resp_error(r, 500, "storage '%s' does not exist", sid);
		rc = -1;
	} else if (!storage_on_node(s, g->node)) {
		resp_error(r, 500, "storage '%s' is not available on node '%s'", sid,
			   g->node);
		rc = -1;
	} else if (drive_is_cloudinit(value) && strstr(vol, ":cloudinit")) {
		if (!priv_check(req, r, path ? path : "/storage",
				"Datastore.AllocateSpace")) {
			rc = -1;
		} else {
			char *volid = strprintf("%s:vm-%d-cloudinit", sid, g->vmid);
			if (!volid ||
			    (!cluster_volume(c, volid, g->node) &&
			     !volume_add(c, volid, g->node, g->vmid, 4 * MiB, "images")))
				rc = -1;
			else
				*out = strprintf("%s,media=cdrom", volid);
			free(volid);
		}
	} else if (qemu && strstr(value, "import-from=")) {
		rc = storage_import_disk(c, req, g, key, value, out, cost, log, r);
	} else if (is_alloc_spec(vol, sid, &gib)) {
		const char *content = qemu ? "images" : "rootdir";
		uint64_t size = (uint64_t)(gib * (double)GiB);
		if (!storage_has_content(s, content)) {
			resp_error(r, 500, "storage '%s' does not support %s", sid,
				   qemu ? "vm images" : "container directories");
			rc = -1;
		} else if (!priv_check(req, r, path ? path : "/storage",
				       "Datastore.AllocateSpace")) {
			rc = -1;
		} else if (size == 0) {
			resp_param_error(r, key, "size must be greater than zero");
			rc = -1;
		} else {
			const char *base = !qemu && (strcmp(s->type, "dir") == 0 ||
						     strcmp(s->type, "zfspool") == 0)
						   ? "subvol"
						   : "vm";
			const char *volid =
				volume_alloc(c, s, g->node, g->vmid, size, base, content);
			char *sz = format_size(size);
			if (!volid || !sz) {
				rc = -1;
			} else {
				char *noopts = strdup(drive_opts(value));
				char *withsize = noopts ? prop_set(noopts[0] ? noopts + 1 : "",
								   "size", sz)
							: NULL;
				*out = withsize ? strprintf("%s,%s", volid, withsize) : NULL;
				free(noopts);
				free(withsize);
				if (cost)
					*cost += alloc_seconds(s, size);
				if (log) {
					const char *slash = strchr(volid, ':');
					if (strcmp(s->type, "lvmthin") == 0 ||
					    strcmp(s->type, "lvm") == 0)
						sbuf_addf(log, "  Logical volume \"%s\" created.\n",
							  slash + 1);
					else
						sbuf_addf(log, "Formatting '%s', fmt=%s size=%" PRIu64 "\n",
							  volid, strstr(volid, ".qcow2") ? "qcow2" : "raw",
							  size);
				}
			}
			free(sz);
		}
	} else {
		struct sim_volume *v = cluster_volume(c, vol, g->node);
		if (!v) {
			resp_error(r, 500, "volume '%s' does not exist", vol);
			rc = -1;
		} else if (v->vmid && v->vmid != g->vmid && strcmp(v->content, "iso") != 0 &&
			   !strstr(vol, "base-")) {
			resp_error(r, 500, "volume '%s' belongs to VM %d", vol, v->vmid);
			rc = -1;
		} else {
			char *sz = prop_get(value, "size");
			if (!sz && strcmp(v->content, "iso") != 0) {
				char *f = format_size(v->size);
				*out = f ? prop_set(value, "size", f) : NULL;
				free(f);
			} else {
				*out = strdup(value);
			}
			free(sz);
		}
	}
	if (rc == 0 && !*out) {
		resp_error(r, 500, "out of memory");
		rc = -1;
	}
	free(path);
	free(sid);
	free(vol);
	return rc;
}

char *config_net_with_mac(const struct sim_guest *g, const char *key,
			  const char *value)
{
	int idx = atoi(key + 3);
	if (strcmp(g->type, "qemu") == 0) {
		const char *e = strchr(value, ',');
		size_t n = e ? (size_t)(e - value) : strlen(value);
		if (memchr(value, '=', n)) {
			if (strncmp(value, "model=", 6) != 0)
				return strdup(value);
			/* model=virtio[,macaddr=..] -> virtio=MAC */
			char *mac = prop_get(value, "macaddr");
			char *m = mac ? mac : scenario_mac(g->vmid, idx + 10);
			char *model = strndup(value + 6, n - 6);
			char *out = m && model ? strprintf("%s=%s%s", model, m, e ? e : "")
					       : NULL;
			free(model);
			free(m);
			return out;
		}
		/* keep the MAC of an existing NIC of the same slot, as the GUI */
		const char *old = cfg_str(g->config, key);
		char *mac = NULL;
		if (old) {
			const char *eq = strchr(old, '=');
			const char *oc = strchr(old, ',');
			if (eq && (!oc || eq < oc))
				mac = strndup(eq + 1, (size_t)((oc ? oc : old + strlen(old)) -
							       eq - 1));
		}
		if (!mac)
			mac = scenario_mac(g->vmid, idx + 20);
		char *model = strndup(value, n);
		char *out = mac && model ? strprintf("%s=%s%s", model, mac, e ? e : "")
					 : NULL;
		free(model);
		free(mac);
		return out;
	}
	if (strcmp(g->type, "lxc") == 0) {
		char *hw = prop_get(value, "hwaddr");
		if (hw) {
			free(hw);
			return strdup(value);
		}
		char *mac = scenario_mac(g->vmid, idx + 20);
		char *out = mac ? prop_set(value, "hwaddr", mac) : NULL;
		free(mac);
		return out;
	}
	return strdup(value);
}

/* ---- committing --------------------------------------------------------- */
static int add_unused(struct sim_guest *g, const char *volid)
{
	for (int i = 0; i < 256; i++) {
		char key[24];
		snprintf(key, sizeof(key), "unused%d", i);
		if (cfg_str(g->config, key))
			continue;
		return json_object_object_add(g->config, key,
					      json_object_new_string(volid));
	}
	return -1;
}

static void drop_unused_of(struct sim_guest *g, const char *volid)
{
	struct ptrvec del = {0};
	json_object_object_foreach(g->config, k, v)
	{
		if (is_unused_key(k) && strcmp(json_object_get_string(v), volid) == 0)
			ptrvec_push(&del, k);
	}
	for (size_t i = 0; i < del.n; i++)
		json_object_object_del(g->config, del.v[i]);
	ptrvec_free(&del);
}

static bool volid_referenced(const struct sim_guest *g, const char *volid,
			     const char *except)
{
	json_object_object_foreach(g->config, k, v)
	{
		if (except && strcmp(k, except) == 0)
			continue;
		if (!is_drive_key(k) && !is_unused_key(k))
			continue;
		char *vol = drive_volid(json_object_get_string(v));
		bool same = vol && strcmp(vol, volid) == 0;
		free(vol);
		if (same)
			return true;
	}
	return false;
}

/* Remove key from "boot: order=a;b;c". */
static void boot_order_drop(struct sim_guest *g, const char *key)
{
	const char *boot = cfg_str(g->config, "boot");
	if (!boot || strncmp(boot, "order=", 6) != 0)
		return;
	struct sbuf b = {0};
	const char *p = boot + 6;
	int rc = sbuf_add(&b, "order=");
	bool first = true;
	while (rc == 0 && *p) {
		const char *e = p;
		while (*e && *e != ';' && *e != ',')
			e++;
		if (!(strlen(key) == (size_t)(e - p) && strncmp(p, key, (size_t)(e - p)) == 0)) {
			if (!first)
				rc = sbuf_addc(&b, ';');
			if (rc == 0)
				rc = sbuf_addn(&b, p, (size_t)(e - p));
			first = false;
		}
		if (*e != ';')
			break;
		p = e + 1;
	}
	if (rc == 0) {
		if (first)
			json_object_object_del(g->config, "boot");
		else
			json_object_object_add(g->config, "boot",
					       json_object_new_string(sbuf_str(&b)));
	}
	sbuf_free(&b);
}

static void destroy_volume(struct cluster *c, const struct sim_guest *g,
			   const char *volid)
{
	struct sim_volume *v = cluster_volume(c, volid, g->node);
	if (v && strcmp(v->content, "iso") != 0 && !strstr(volid, ":base-"))
		volume_remove(c, v);
}

int config_commit_set(struct cluster *c, struct sim_guest *g, const char *key,
		      const char *value)
{
	if (is_drive_key(key)) {
		const char *old = cfg_str(g->config, key);
		char *newvol = drive_volid(value);
		if (!newvol)
			return -1;
		if (old && !drive_is_cdrom(old)) {
			char *oldvol = drive_volid(old);
			if (oldvol && strcmp(oldvol, newvol) != 0 &&
			    !volid_referenced(g, oldvol, key)) {
				if (drive_is_cloudinit(old))
					destroy_volume(c, g, oldvol);
				else
					add_unused(g, oldvol);
			}
			free(oldvol);
		}
		drop_unused_of(g, newvol);
		free(newvol);
	}
	return json_object_object_add(g->config, key, json_object_new_string(value));
}

int config_commit_delete(struct cluster *c, struct sim_guest *g,
			 const char *key, bool force)
{
	const char *old = cfg_str(g->config, key);
	if (!old)
		return 0;
	char *vol = (is_drive_key(key) || is_unused_key(key)) ? drive_volid(old)
							      : NULL;
	if (is_unused_key(key)) {
		if (vol)
			destroy_volume(c, g, vol);
	} else if (is_drive_key(key) && vol) {
		if (drive_is_cloudinit(old))
			destroy_volume(c, g, vol);
		else if (!drive_is_cdrom(old) && !volid_referenced(g, vol, key)) {
			if (force)
				destroy_volume(c, g, vol);
			else
				add_unused(g, vol);
		}
		boot_order_drop(g, key);
	}
	free(vol);
	/* bootdisk stays, naming the disk that is gone (as in PVE) */
	json_object_object_del(g->config, key);
	return 0;
}

void config_apply_pending(struct cluster *c, struct sim_guest *g)
{
	size_t n = json_object_array_length(g->pending_delete);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(g->pending_delete, i);
		const char *k = json_object_get_string(e);
		if (k)
			config_commit_delete(c, g, k[0] == '!' ? k + 1 : k, k[0] == '!');
	}
	json_object_put(g->pending_delete);
	g->pending_delete = json_object_new_array();
	struct ptrvec keys = {0};
	json_object_object_foreach(g->pending, k, v)
	{
		(void)v;
		ptrvec_push(&keys, k);
	}
	for (size_t i = 0; i < keys.n; i++)
		config_commit_set(c, g, keys.v[i], cfg_str(g->pending, keys.v[i]));
	ptrvec_free(&keys);
	json_object_put(g->pending);
	g->pending = json_object_new_object();
}

/* ---- update ------------------------------------------------------------- */
/* Config keys PVE keeps for itself: qemu-server's json_config_properties()
 * leaves them out of the create and config methods' schema, so no one can
 * set them (deleting vmstate and friends is allowed). */
static bool internal_key(const char *k)
{
	static const char *const keys[] = {"parent", "snaptime", "vmstate", "runningmachine",
					   "runningcpu", "meta", NULL};
	for (size_t i = 0; keys[i]; i++)
		if (strcmp(k, keys[i]) == 0)
			return true;
	return false;
}

static bool in_list(const char *k, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(k, list[i]) == 0)
			return true;
	return false;
}

/* ---- privileges ---------------------------------------------------------- */
/* The key groups of qemu-server 8.4's check_vm_modify_config_perm. */
enum kgroup {
	KG_VALUE,     /* drives, cdrom, unusedN, serialN, usbN, hostpciN, virtiofsN,
			 tags: judged by their values (config_value_perm) */
	KG_CPU,
	KG_MEMORY,
	KG_HWTYPE,
	KG_OPTIONS,
	KG_POWER,
	KG_DISK,
	KG_NETWORK,
	KG_CLOUDINIT, /* VM.Config.Cloudinit or VM.Config.Network */
	KG_VMSTATE,   /* VM.Config.Disk and VM.PowerMgmt */
	KG_ROOT,      /* in no list: root@pam only ("catches args, lock, etc.") */
};

static enum kgroup qemu_key_group(const char *k)
{
	static const char *const cpu[] = {"cores", "cpu", "runningcpu", "cpulimit", "cpuunits",
					  "numa", "smp", "sockets", "vcpus", NULL};
	static const char *const memory[] = {"memory", "balloon", "shares", NULL};
	static const char *const hwtype[] = {"acpi", "hotplug", "kvm", "machine",
					     "runningmachine", "scsihw", "smbios1", "tablet",
					     "vga", "watchdog", "audio0", "rng0", NULL};
	static const char *const general[] = {
		"agent", "autostart", "bios", "description", "keyboard", "localtime",
		"migrate_downtime", "migrate_speed", "name", "onboot", "ostype", "protection",
		"reboot", "startdate", "startup", "tdf", "template", NULL};
	static const char *const disk[] = {"boot", "bootdisk", "vmstatestorage", NULL};
	static const char *const ci[] = {"cicustom", "cipassword", "citype", "ciuser",
					 "ciupgrade", "nameserver", "searchdomain", "sshkeys",
					 NULL};
	static const char *const valued[] = {"unused", "serial", "usb", "hostpci", "virtiofs",
					     NULL};
	if (is_drive_key(k) || strcmp(k, "cdrom") == 0 || strcmp(k, "tags") == 0)
		return KG_VALUE;
	for (size_t i = 0; valued[i]; i++)
		if (key_indexed(k, valued[i]))
			return KG_VALUE;
	if (in_list(k, cpu) || key_indexed(k, "numa"))
		return KG_CPU;
	if (in_list(k, memory))
		return KG_MEMORY;
	if (in_list(k, hwtype))
		return KG_HWTYPE;
	if (in_list(k, general))
		return KG_OPTIONS;
	if (strcmp(k, "freeze") == 0)
		return KG_POWER;
	if (in_list(k, disk))
		return KG_DISK;
	if (key_indexed(k, "net"))
		return KG_NETWORK;
	if (in_list(k, ci) || key_indexed(k, "ipconfig"))
		return KG_CLOUDINIT;
	if (strcmp(k, "vmstate") == 0)
		return KG_VMSTATE;
	return KG_ROOT;
}

static bool root_only_key(const char *k)
{
	return qemu_key_group(k) == KG_ROOT;
}

static bool is_root(const struct sim_req *req)
{
	return strcmp(req->userid, "root@pam") == 0;
}

/* check_vm_perm with all of privs (NULL-terminated) on /vms/VMID. */
static int vm_need(const struct sim_req *req, struct sim_resp *r, int vmid,
		   const char *const *privs)
{
	for (size_t i = 0; privs[i]; i++)
		if (!vm_priv_check(req, r, vmid, privs[i]))
			return -1;
	return 0;
}
#define NEED(req, r, vmid, ...) vm_need(req, r, vmid, (const char *const[]){__VA_ARGS__, NULL})

int config_key_perm(const struct sim_req *req, const char *type, int vmid, const char *key,
		    struct sim_resp *r)
{
	if (is_root(req))
		return 0;
	if (strcmp(type, "qemu") != 0) {
		/* pve-container's check_ct_modify_config_perm */
		if (strcmp(key, "cores") == 0 || strcmp(key, "cpuunits") == 0 ||
		    strcmp(key, "cpulimit") == 0)
			return NEED(req, r, vmid, "VM.Config.CPU");
		if (strcmp(key, "rootfs") == 0 || key_indexed(key, "mp"))
			return NEED(req, r, vmid, "VM.Config.Disk");
		if (strcmp(key, "memory") == 0 || strcmp(key, "swap") == 0)
			return NEED(req, r, vmid, "VM.Config.Memory");
		if (key_indexed(key, "net") || strcmp(key, "nameserver") == 0 ||
		    strcmp(key, "searchdomain") == 0 || strcmp(key, "hostname") == 0)
			return NEED(req, r, vmid, "VM.Config.Network");
		if (key_indexed(key, "dev")) {
			resp_error(r, 403, "Permission check failed (configuring device "
					   "passthrough is only allowed for root@pam)");
			return -1;
		}
		if (strcmp(key, "tags") == 0 || strcmp(key, "features") == 0 ||
		    strcmp(key, "hookscript") == 0)
			return 0; /* not modelled */
		return NEED(req, r, vmid, "VM.Config.Options");
	}
	switch (qemu_key_group(key)) {
	case KG_CPU: return NEED(req, r, vmid, "VM.Config.CPU");
	case KG_MEMORY: return NEED(req, r, vmid, "VM.Config.Memory");
	case KG_HWTYPE: return NEED(req, r, vmid, "VM.Config.HWType");
	case KG_OPTIONS:
		if (NEED(req, r, vmid, "VM.Config.Options") < 0)
			return -1;
		/* startup changes the host's behaviour */
		return strcmp(key, "startup") == 0 && !priv_check(req, r, "/", "Sys.Modify") ? -1
											   : 0;
	case KG_POWER: return NEED(req, r, vmid, "VM.PowerMgmt");
	case KG_DISK: return NEED(req, r, vmid, "VM.Config.Disk");
	case KG_NETWORK: return NEED(req, r, vmid, "VM.Config.Network");
	case KG_CLOUDINIT: {
		char p[32];
		snprintf(p, sizeof p, "/vms/%d", vmid);
		static const char *const any[] = {"VM.Config.Cloudinit", "VM.Config.Network", NULL};
		return priv_check_any(req, r, p, any) ? 0 : -1;
	}
	case KG_VMSTATE: return NEED(req, r, vmid, "VM.Config.Disk", "VM.PowerMgmt");
	case KG_VALUE:
	case KG_ROOT: break; /* KG_ROOT: config_key_check refuses it */
	}
	return 0;
}

/* Each VLAN of a "trunks" list ("10;20-22"), as get_tags_from_trunk. */
static int trunk_check(const struct sim_req *req, struct sim_resp *r, const char *base,
		       const char *trunks)
{
	const char *p = trunks;
	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p)
			return 0; /* the schema refuses a bad list */
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long t = a; t <= b && t - a < 4096; t++) {
			char *path = strprintf("%s/%ld", base, t);
			bool ok = path && priv_check(req, r, path, "SDN.Use");
			free(path);
			if (!ok)
				return -1;
		}
		p = end;
		while (*p == ';')
			p++;
	}
	return 0;
}

int config_bridge_check(const struct sim_req *req, struct sim_resp *r, const char *net)
{
	if (is_root(req) || !net)
		return 0;
	char *bridge = prop_get(net, "bridge"), *tag = prop_get(net, "tag");
	char *trunks = prop_get(net, "trunks");
	/* PVE::GuestHelpers::check_vnet_access, zone localnetwork (no SDN) */
	char *base = strprintf("/sdn/zones/localnetwork/%s", bridge ? bridge : "");
	int rc = base ? 0 : -1;
	if (rc == 0 && tag) {
		char *path = strprintf("%s/%s", base, tag);
		rc = path && priv_check(req, r, path, "SDN.Use") ? 0 : -1;
		free(path);
	}
	if (rc == 0 && trunks)
		rc = trunk_check(req, r, base, trunks);
	if (rc == 0 && !tag && !trunks && !priv_check(req, r, base, "SDN.Use"))
		rc = -1;
	free(base);
	free(bridge);
	free(tag);
	free(trunks);
	return rc;
}

int config_drive_perm(const struct sim_req *req, struct sim_resp *r, int vmid,
		      const char *value)
{
	if (is_root(req) || !value)
		return 0;
	/* API2/Qemu.pm $check_storage_access: the host's CD drive needs
	 * Sys.Console on /; a path is pve-storage check_volume_access's
	 * "Only root can pass arbitrary filesystem paths." */
	char *vol = drive_volid(value);
	bool path = vol && vol[0] == '/', hostcd = vol && strcmp(vol, "cdrom") == 0;
	free(vol);
	if (path) {
		resp_error(r, 500, "Only root can pass arbitrary filesystem paths.");
		return -1;
	}
	if (hostcd && !priv_check_any(req, r, "/", (const char *const[]){"Sys.Console", NULL}))
		return -1;
	if (drive_is_cloudinit(value))
		return NEED(req, r, vmid, "VM.Config.Cloudinit", "VM.Config.CDROM");
	if (drive_is_cdrom(value))
		return NEED(req, r, vmid, "VM.Config.CDROM");
	return NEED(req, r, vmid, "VM.Config.Disk");
}

/* serialN, usbN, hostpciN: the check_*_perm of qemu-server for a value. */
static int device_perm(const struct sim_req *req, struct sim_resp *r, int vmid, const char *k,
		       const char *value, bool deleting)
{
	if (is_root(req) || !value)
		return 0;
	const char *verb = deleting ? "delete" : "set";
	if (key_indexed(k, "serial")) {
		if (strcmp(value, "socket") == 0)
			return NEED(req, r, vmid, "VM.Config.HWType");
		resp_error(r, 500, "only root can %s '%s' config for real devices", verb, k);
		return -1;
	}
	char *host = prop_get(value, "host"), *mapping = prop_get(value, "mapping");
	if (!host && !mapping && !strchr(value, '=')) /* "host" is the default key */
		host = strdup(value);
	int rc = 0;
	if (key_indexed(k, "usb")) {
		rc = NEED(req, r, vmid, "VM.Config.HWType");
		if (rc == 0 && host && strcasecmp(host, "spice") != 0) {
			resp_error(r, 500, "only root can set '%s' config for real devices", k);
			rc = -1;
		}
	} else if (key_indexed(k, "hostpci") && host) {
		resp_error(r, 500, "only root can set '%s' config for non-mapped devices", k);
		rc = -1;
	} else if (key_indexed(k, "hostpci") || key_indexed(k, "virtiofs")) {
		rc = NEED(req, r, vmid, key_indexed(k, "virtiofs") ? "VM.Config.Disk"
							    : "VM.Config.HWType");
	}
	if (rc == 0 && mapping) {
		char *path = strprintf("/mapping/%s/%s", key_indexed(k, "usb") ? "usb" : "pci", mapping);
		rc = path && priv_check(req, r, path, "Mapping.Use") ? 0 : -1;
		free(path);
	}
	free(host);
	free(mapping);
	return rc;
}

int config_value_perm(const struct sim_req *req, struct sim_resp *r, const char *type,
		      int vmid, const char *key, const char *value, bool create)
{
	if (key_indexed(key, "net"))
		return config_bridge_check(req, r, value);
	if (strcmp(type, "qemu") != 0)
		return 0;
	if (is_drive_key(key) && drive_is_cdrom(value) && !drive_is_cloudinit(value)) {
		char *vol = drive_volid(value);
		bool host_cdrom = vol && strcmp(vol, "cdrom") == 0;
		free(vol);
		if (host_cdrom && !priv_check(req, r, "/", "Sys.Console"))
			return -1;
	}
	if (create && (key_indexed(key, "serial") || key_indexed(key, "usb") || key_indexed(key, "hostpci") ||
		       key_indexed(key, "virtiofs")))
		return device_perm(req, r, vmid, key, value, false);
	return 0;
}

/* The update worker's checks of qemu-server 8.4, per deleted and set key:
 * drives (old and new value), unusedN, the old NIC's bridge, devices. */
static int worker_perm(const struct sim_req *req, struct sim_resp *r, const struct sim_guest *g,
		       const char *key, const char *newval)
{
	const char *old = cfg_str(g->config, key);
	if (!old)
		old = cfg_str(g->pending, key);
	if (strcmp(g->type, "qemu") != 0) {
		/* pve-container: the old NIC's bridge (check_ct_modify_config_perm) */
		return key_indexed(key, "net") && old ? config_bridge_check(req, r, old) : 0;
	}
	if (is_unused_key(key))
		return NEED(req, r, g->vmid, "VM.Config.Disk");
	if (is_drive_key(key))
		return (old && config_drive_perm(req, r, g->vmid, old) < 0) ||
				       (newval && config_drive_perm(req, r, g->vmid, newval) < 0)
			       ? -1
			       : 0;
	if (key_indexed(key, "net"))
		return old ? config_bridge_check(req, r, old) : 0;
	if (key_indexed(key, "serial") || key_indexed(key, "usb") || key_indexed(key, "hostpci") ||
	    key_indexed(key, "virtiofs")) {
		if (old && device_perm(req, r, g->vmid, key, old, !newval) < 0)
			return -1;
		return newval ? device_perm(req, r, g->vmid, key, newval, false) : 0;
	}
	return 0;
}

int config_key_check(const struct sim_req *req, const char *type, const char *key,
		     bool deleting, struct sim_resp *r)
{
	if (strcmp(type, "qemu") != 0)
		return 0;
	if (!deleting && internal_key(key)) {
		resp_param_error(r, key, "property is not defined in schema and the schema "
					 "does not allow additional properties");
		return -1;
	}
	if (deleting && (strcmp(key, "parent") == 0 || strcmp(key, "snaptime") == 0)) {
		resp_param_error(r, "delete", "unknown option '%s'", key);
		return -1;
	}
	/* root@pam itself: its API tokens are other users to this check */
	if (strcmp(req->userid, "root@pam") != 0 && root_only_key(key)) {
		resp_error(r, 500, "only root can set '%s' config", key);
		return -1;
	}
	return 0;
}

static bool is_meta_param(const char *k)
{
	static const char *const meta[] = {
		"node",	 "vmid",     "delete",		  "digest", "skiplock",
		"revert", "force",   "background_delay", NULL};
	for (size_t i = 0; meta[i]; i++)
		if (strcmp(k, meta[i]) == 0)
			return true;
	return false;
}

/* Keys a running qemu guest takes at once (hotplug); the rest is pending. */
static bool hot_key(const struct sim_guest *g, const char *key)
{
	if (!g->running)
		return true;
	if (strcmp(g->type, "lxc") == 0)
		return strcmp(key, "rootfs") != 0 && strncmp(key, "mp", 2) != 0;
	if (strcmp(g->type, "openvz") == 0)
		return true;
	static const char *const hot[] = {"name", "description", "onboot", "tags",
					  "protection", "startup", NULL};
	for (size_t i = 0; hot[i]; i++)
		if (strcmp(key, hot[i]) == 0)
			return true;
	return strncmp(key, "net", 3) == 0 && isdigit((unsigned char)key[3]);
}

static int split_list(const char *s, struct ptrvec *out)
{
	const char *p = s;
	while (p && *p) {
		while (*p == ',' || *p == ';' || *p == ' ' || *p == '\0') {
			if (!*p)
				return 0;
			p++;
		}
		const char *e = p;
		while (*e && *e != ',' && *e != ';' && *e != ' ')
			e++;
		char *k = strndup(p, (size_t)(e - p));
		if (!k || ptrvec_push(out, k) < 0) {
			free(k);
			return -1;
		}
		p = e;
	}
	return 0;
}

static bool listed(const struct ptrvec *v, const char *k)
{
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i], k) == 0)
			return true;
	return false;
}

/* qemu-server's worker check of a new "boot: order=a;b": every device is
 * in the config, its pending part or this request, and not deleted by it.
 * NULL or the error (malloc'd). */
static char *boot_order_error(const struct sim_guest *g, const struct sim_req *req,
			      const struct ptrvec *dels)
{
	const char *boot = param_str(req, "boot");
	char *order = boot ? prop_get(boot, "order") : NULL;
	struct ptrvec devs = {0};
	char *err = NULL;
	if (order && split_list(order, &devs) < 0)
		err = strdup("out of memory");
	for (size_t i = 0; !err && i < devs.n; i++) {
		const char *d = devs.v[i];
		bool exists = cfg_str(g->config, d) || cfg_str(g->pending, d) ||
			      json_object_object_get_ex(req->params, d, NULL);
		if (!exists || listed(dels, d))
			err = strprintf("invalid bootorder: device '%s' does not exist'", d);
	}
	for (size_t i = 0; i < devs.n; i++)
		free(devs.v[i]);
	ptrvec_free(&devs);
	free(order);
	return err;
}

int config_update(struct cluster *c, const struct sim_req *req,
		  struct sim_guest *g, struct sim_resp *r, double *cost,
		  struct sbuf *log)
{
	const char *del = param_str(req, "delete");
	const char *revert = param_str(req, "revert");
	bool force = param_bool(req, "force", false);
	struct ptrvec dels = {0}, reverts = {0};
	int rc = 0;
	if ((del && split_list(del, &dels) < 0) ||
	    (revert && split_list(revert, &reverts) < 0)) {
		resp_error(r, 500, "out of memory");
		rc = -1;
	}
	/* keys no one sets, then privileges (PVE: deletes first) */
	if (rc == 0 && req->params) {
		json_object_object_foreach(req->params, k, v)
		{
			(void)v;
			if (rc == 0 && !is_meta_param(k) && internal_key(k))
				rc = config_key_check(req, g->type, k, false, r);
		}
	}
	for (size_t i = 0; rc == 0 && i < dels.n; i++)
		if (config_key_check(req, g->type, dels.v[i], true, r) < 0 ||
		    config_key_perm(req, g->type, g->vmid, dels.v[i], r) < 0)
			rc = -1;
	if (rc == 0 && req->params) {
		json_object_object_foreach(req->params, k, v)
		{
			(void)v;
			if (rc == 0 && !is_meta_param(k) &&
			    (config_key_check(req, g->type, k, false, r) < 0 ||
			     config_key_perm(req, g->type, g->vmid, k, r) < 0))
				rc = -1;
		}
	}
	if (rc == 0 && req->params) {
		json_object_object_foreach(req->params, k, v)
		{
			if (rc == 0 && !is_meta_param(k) &&
			    config_value_perm(req, r, g->type, g->vmid, k, json_object_get_string(v),
					      false) < 0)
				rc = -1;
		}
	}
	/* assert_tag_permissions: the tags set or deleted */
	bool tags_deleted = false;
	for (size_t i = 0; i < dels.n; i++)
		tags_deleted = tags_deleted || strcmp(dels.v[i], "tags") == 0;
	if (rc == 0 && (param_str(req, "tags") || tags_deleted) &&
	    cluster_tag_check(c, req, r, g->vmid, cfg_str(g->config, "tags"),
			      param_str(req, "tags")) < 0)
		rc = -1;
	if (rc == 0 && guest_lock(g) && !param_bool(req, "skiplock", false)) {
		resp_error(r, 500, "%s is locked (%s)",
			   strcmp(g->type, "qemu") == 0 ? "VM" : "CT", guest_lock(g));
		rc = -1;
	}
	const char *digest = param_str(req, "digest");
	if (rc == 0 && digest) {
		char *d = config_digest(g->config);
		if (d && strcmp(d, digest) != 0) {
			resp_error(r, 500, "detected modified configuration - file "
					   "changed by other user? Try again.");
			rc = -1;
		}
		free(d);
	}
	for (size_t i = 0; rc == 0 && i < dels.n; i++) {
		const char *k = dels.v[i];
		if (req->params && json_object_object_get_ex(req->params, k, NULL)) {
			resp_param_error(r, k, "option '%s' also in 'delete'", k);
			rc = -1;
		}
		if (rc == 0 && strcmp(k, "lock") == 0) {
			resp_param_error(r, "delete", "unable to delete 'lock'");
			rc = -1;
		}
	}
	/* the worker's checks: a failed task for POST, the error for PUT */
	for (size_t i = 0; rc == 0 && i < dels.n; i++)
		if (worker_perm(req, r, g, dels.v[i], NULL) < 0)
			rc = -2;
	if (rc == 0 && req->params) {
		json_object_object_foreach(req->params, k, v)
		{
			if (rc == 0 && !is_meta_param(k) &&
			    worker_perm(req, r, g, k, json_object_get_string(v)) < 0)
				rc = -2;
		}
	}
	char *werr = rc == 0 && strcmp(g->type, "qemu") == 0 ? boot_order_error(g, req, &dels)
							      : NULL;
	if (werr) {
		resp_error(r, 500, "%s", werr);
		free(werr);
		rc = -2;
	}
	/* prepare values (allocations happen here, as in PVE) */
	json_object *set = json_object_new_object();
	if (!set && rc == 0) {
		resp_error(r, 500, "out of memory");
		rc = -1;
	}
	if (rc == 0 && req->params) {
		json_object_object_foreach(req->params, k, v)
		{
			if (rc < 0 || is_meta_param(k))
				continue;
			const char *val = json_object_get_string(v);
			char *out = NULL;
			if (!val)
				val = "";
			if (is_drive_key(k)) {
				rc = config_alloc_drive(c, req, g, k, val, &out, cost, log, r);
			} else if (strncmp(k, "net", 3) == 0 && isdigit((unsigned char)k[3])) {
				out = config_net_with_mac(g, k, val);
			} else if (strcmp(k, "lock") == 0) {
				resp_param_error(r, k, "property is not defined in schema and "
						       "the schema does not allow additional "
						       "properties");
				rc = -1;
			} else {
				out = strdup(val);
			}
			if (rc == 0 && !out) {
				resp_error(r, 500, "out of memory");
				rc = -1;
			}
			if (rc == 0)
				json_object_object_add(set, k, json_object_new_string(out));
			free(out);
		}
	}
	if (rc == 0 && log) {
		sbuf_addf(log, "update VM %d:", g->vmid);
		if (del)
			sbuf_addf(log, " -delete %s", del);
		json_object_object_foreach(set, k, v)
		{
			sbuf_addf(log, " -%s %s", k, json_object_get_string(v));
		}
		sbuf_addc(log, '\n');
	}
	/* apply */
	for (size_t i = 0; rc == 0 && i < reverts.n; i++) {
		json_object_object_del(g->pending, reverts.v[i]);
		size_t n = json_object_array_length(g->pending_delete);
		for (size_t j = n; j-- > 0;) {
			const char *pk = json_object_get_string(
				json_object_array_get_idx(g->pending_delete, j));
			if (pk && strcmp(pk[0] == '!' ? pk + 1 : pk, reverts.v[i]) == 0)
				json_object_array_del_idx(g->pending_delete, j, 1);
		}
	}
	for (size_t i = 0; rc == 0 && i < dels.n; i++) {
		const char *k = dels.v[i];
		if (hot_key(g, k)) {
			config_commit_delete(c, g, k, force);
		} else {
			char *mark = strprintf("%s%s", force ? "!" : "", k);
			if (mark)
				json_object_array_add(g->pending_delete,
						      json_object_new_string(mark));
			free(mark);
			json_object_object_del(g->pending, k);
		}
	}
	if (rc == 0) {
		/* a boot order replaces the legacy bootdisk (unless this very
		 * request sets it) */
		const char *boot = cfg_str(set, "boot");
		if (boot && strstr(boot, "order=") && cfg_str(g->config, "bootdisk") &&
		    !cfg_str(set, "bootdisk")) {
			if (hot_key(g, "bootdisk"))
				config_commit_delete(c, g, "bootdisk", false);
			else
				json_object_array_add(g->pending_delete,
						      json_object_new_string("bootdisk"));
		}
		json_object_object_foreach(set, k, v)
		{
			const char *val = json_object_get_string(v);
			if (hot_key(g, k))
				config_commit_set(c, g, k, val);
			else
				json_object_object_add(g->pending, k,
						       json_object_new_string(val));
		}
		if (g->running)
			guest_eval_boot(g); /* live NIC changes */
	}
	json_object_put(set);
	for (size_t i = 0; i < dels.n; i++)
		free(dels.v[i]);
	for (size_t i = 0; i < reverts.n; i++)
		free(reverts.v[i]);
	ptrvec_free(&dels);
	ptrvec_free(&reverts);
	return rc;
}

/* ---- output ------------------------------------------------------------- */
static bool int_key(const char *k)
{
	static const char *const ints[] = {
		"cores",   "sockets",  "template", "onboot",   "balloon",
		"vcpus",   "cpuunits", "protection", "numa",   "tablet",
		"acpi",    "kvm",      "autostart", "reboot",  "shares",
		"swap",    "cpus",     "disk",      "unprivileged", "console",
		"tty",     "cpulimit", NULL};
	for (size_t i = 0; ints[i]; i++)
		if (strcmp(ints[i], k) == 0)
			return true;
	return false;
}

static void add_typed(json_object *o, const char *k, json_object *v)
{
	const char *s = json_object_get_string(v);
	bool digits = s && *s;
	for (const char *p = s; digits && *p; p++)
		digits = isdigit((unsigned char)*p);
	if (int_key(k) && digits)
		json_object_object_add(o, k, json_object_new_int64(atoll(s)));
	else
		json_object_object_add(o, k, json_object_new_string(s ? s : ""));
}

json_object *config_output(const struct sim_guest *g, bool current)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_foreach(g->config, k, v)
	{
		if (!current) {
			bool deleted = false;
			size_t n = json_object_array_length(g->pending_delete);
			for (size_t i = 0; i < n && !deleted; i++) {
				const char *pk = json_object_get_string(
					json_object_array_get_idx(g->pending_delete, i));
				deleted = pk && strcmp(pk[0] == '!' ? pk + 1 : pk, k) == 0;
			}
			if (deleted)
				continue;
		}
		add_typed(o, k, v);
	}
	if (!current) {
		json_object_object_foreach(g->pending, pk, pv)
		{
			add_typed(o, pk, pv);
		}
	}
	char *d = config_digest(g->config);
	if (d)
		json_object_object_add(o, "digest", json_object_new_string(d));
	free(d);
	return o;
}
