/* cluster_migrate.c - guest migration in simulated time: the qemu
 * precondition answer, qemu live/offline migration (with local disks and
 * targetstorage), LXC restart migration and OpenVZ online migration, with
 * PVE's refusals and task logs (reference E3). Shared by the migrate
 * routes, migrateall and HA. */
#include "cluster.h"
#include "guestnet.h"
#include "ha_crm.h"
#include "tasks.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DISK_RATE (200.0 * MiB) /* storage migration bytes/s */
#define RAM_RATE (100.0 * MiB)  /* live migration bytes/s */

struct local_disk {
	char *key;
	char *volid;
	char *storage;
	uint64_t size;
	bool cdrom, cloudinit, unused;
};

static void free_disks(struct local_disk *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(d[i].key);
		free(d[i].volid);
		free(d[i].storage);
	}
	free(d);
}

/* Volumes of g on storages that are not shared. */
static int local_disks(const struct cluster *c, const struct sim_guest *g,
		       struct local_disk **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	json_object_object_foreach(g->config, k, v)
	{
		const char *val = json_object_get_string(v);
		if ((!is_drive_key(k) && !is_unused_key(k)) || !val)
			continue;
		char *vol = drive_volid(val);
		char *sid = vol ? volid_storage(vol) : NULL;
		struct sim_storage *s = sid ? cluster_storage(c, sid) : NULL;
		if (!s || s->shared) {
			free(vol);
			free(sid);
			continue;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 4;
			struct local_disk *nd = realloc(*out, cap * sizeof(*nd));
			if (!nd) {
				free(vol);
				free(sid);
				return -1;
			}
			*out = nd;
		}
		struct local_disk *d = &(*out)[(*n)++];
		memset(d, 0, sizeof(*d));
		d->key = strdup(k);
		d->volid = vol;
		d->storage = sid;
		struct sim_volume *vv = cluster_volume(c, vol, g->node);
		d->size = vv ? vv->size : 0;
		d->cdrom = drive_is_cdrom(val) && !drive_is_cloudinit(val);
		d->cloudinit = drive_is_cloudinit(val);
		d->unused = is_unused_key(k);
		if (!d->key)
			return -1;
	}
	return 0;
}

/* Target storage id for a source storage under a targetstorage map
 * ("dst", "src:dst,src2:dst2" or "1" = same); malloc'd. */
static char *map_storage(const char *map, const char *src)
{
	if (!map || strcmp(map, "1") == 0)
		return strdup(src);
	if (!strchr(map, ':'))
		return strdup(map);
	const char *p = map;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		const char *colon = memchr(p, ':', n);
		if (colon && (size_t)(colon - p) == strlen(src) &&
		    strncmp(p, src, strlen(src)) == 0)
			return strndup(colon + 1, n - (size_t)(colon - p) - 1);
		if (!e)
			break;
		p = e + 1;
	}
	return strdup(src);
}

/* The usb value's host (its default key): "spice" in "spice,usb3=1". */
static bool usb_is_spice(const char *val)
{
	char *host = prop_get(val, "host");
	bool spice = false;
	if (host) {
		spice = strcasecmp(host, "spice") == 0;
	} else {
		size_t n = strcspn(val, ",");
		spice = !memchr(val, '=', n) && n == 5 && strncasecmp(val, "spice", 5) == 0;
	}
	free(host);
	return spice;
}

/* What keeps a VM where it is, as qemu-server (master and stable-bookworm
 * alike) computes it for the precondition:
 * QemuMigrate::Helpers::check_non_migratable_resources (amd-sev,
 * intel-tdx and virtiofs, only while running) then check_local_resources:
 * the old hostusb/hostpci keys, ivshmem, and every usbN, hostpciN,
 * serialN, parallelN, virtiofsN except a USB port whose host is spice
 * (the format's default key: "usb1: spice,usb3=1"), a serial "socket",
 * and a hostpci mapping (mapping=NAME) while stopped. Mapped devices go
 * into mapped (key -> {name}); the simulator has no live-migration
 * capable mappings. Returns a new array. */
static json_object *local_resources(const struct sim_guest *g, json_object *mapped)
{
	json_object *a = json_object_new_array();
	if (!a)
		return NULL;
	if (g->running) {
		static const char *const nm[] = {"amd-sev", "intel-tdx"};
		for (size_t i = 0; i < 2; i++)
			if (cfg_str(g->config, nm[i]))
				json_object_array_add(a, json_object_new_string(nm[i]));
		bool vfs = false;
		json_object_object_foreach(g->config, vk, vv)
		{
			(void)vv;
			vfs |= key_indexed(vk, "virtiofs");
		}
		if (vfs)
			json_object_array_add(a, json_object_new_string("virtiofs"));
	}
	static const char *const old[] = {"hostusb", "hostpci", "ivshmem"};
	for (size_t i = 0; i < 3; i++)
		if (cfg_str(g->config, old[i]))
			json_object_array_add(a, json_object_new_string(old[i]));
	json_object_object_foreach(g->config, k, v)
	{
		const char *val = json_object_get_string(v);
		static const char *const kinds[] = {"hostpci", "usb", "serial", "parallel",
						    "virtiofs"};
		bool dev = false;
		for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
			dev |= key_indexed(k, kinds[i]);
		if (!dev || !val)
			continue;
		if (key_indexed(k, "usb") && usb_is_spice(val))
			continue;
		if (key_indexed(k, "serial") && strcmp(val, "socket") == 0)
			continue;
		char *map = key_indexed(k, "virtiofs") ? prop_get(val, "dirid")
			  : prop_get(val, "mapping");
		if (map && mapped) {
			json_object *e = json_object_new_object();
			if (e) {
				json_object_object_add(e, "name", json_object_new_string(map));
				json_object_object_add(mapped, k, e);
			}
		}
		bool skip = map && key_indexed(k, "hostpci") && !g->running;
		if (!skip)
			json_object_array_add(a, json_object_new_string(k));
		free(map);
	}
	return a;
}

/* ---- HA on PVE 9: resource affinity (pve-ha-manager) ------------------- */

/* Is sid an HA resource whose state is not "ignored" (the CRM's service
 * status holds it)? */
static bool ha_active(const struct cluster *c, const char *sid)
{
	const char *st = cfg_str(cluster_ha_entry(c, sid), "state");
	return st && strcmp(st, "ignored") != 0;
}

bool ha_list_has(const char *list, const char *sid)
{
	size_t n = strlen(sid);
	for (const char *p = list; p && *p;) {
		size_t l = strcspn(p, ",");
		if (l == n && strncmp(p, sid, n) == 0)
			return true;
		p += l + (p[l] == ',');
	}
	return false;
}

/* Add every member of the enabled resource-affinity rules of `affinity`
 * that hold sid, but sid, to set (an object used as a set). */
static void rule_partners(const struct cluster *c, const char *sid, const char *affinity,
			  json_object *set)
{
	size_t n = c->ha_rules ? json_object_array_length(c->ha_rules) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(c->ha_rules, i), *d = NULL;
		const char *res = cfg_str(r, "resources"), *t = cfg_str(r, "type");
		if ((json_object_object_get_ex(r, "disable", &d) && json_object_get_int(d)) ||
		    !t || strcmp(t, "resource-affinity") != 0 ||
		    strcmp(cfg_str(r, "affinity") ? cfg_str(r, "affinity") : "", affinity) != 0 ||
		    !ha_list_has(res, sid))
			continue;
		char *copy = strdup(res), *save = NULL;
		for (char *x = copy ? strtok_r(copy, ",", &save) : NULL; x;
		     x = strtok_r(NULL, ",", &save))
			if (strcmp(x, sid) != 0)
				json_object_object_add(set, x, NULL);
		free(copy);
	}
}

/* The resources sid is in positive affinity with (connected positive rules
 * merged, as Rules/ResourceAffinity.pm does) into together, and in
 * negative affinity with (its own and its positive partners', as
 * get_affinitive_resources says) into separate. */
static void ha_affinity(const struct cluster *c, const char *sid, json_object *together,
			json_object *separate)
{
	rule_partners(c, sid, "positive", together);
	for (size_t grew = 1; grew;) {
		grew = 0;
		json_object_object_foreach(together, k, v)
		{
			(void)v;
			int before = json_object_object_length(together);
			rule_partners(c, k, "positive", together);
			grew |= json_object_object_length(together) != before;
			if (grew)
				break; /* the object changed: walk it again */
		}
	}
	json_object_object_del(together, sid);
	rule_partners(c, sid, "negative", separate);
	json_object_object_foreach(together, k, v)
	{
		(void)v;
		rule_partners(c, k, "negative", separate);
	}
	json_object_object_del(separate, sid);
}

/* The guest an HA sid names ("vm:100"), or NULL. */
static struct sim_guest *sid_guest(const struct cluster *c, const char *sid)
{
	return strlen(sid) > 3 ? cluster_guest(c, atoi(sid + 3)) : NULL;
}

void ha_motion_info(const struct cluster *c, const char *sid, json_object **dependent,
		    json_object **blocking)
{
	*dependent = *blocking = NULL;
	if (c->major < 9 || !ha_active(c, sid))
		return;
	json_object *together = json_object_new_object(), *separate = json_object_new_object();
	*dependent = json_object_new_array();
	*blocking = json_object_new_object();
	if (!together || !separate || !*dependent || !*blocking) {
		json_object_put(*dependent);
		json_object_put(*blocking);
		*dependent = *blocking = NULL;
	} else {
		ha_affinity(c, sid, together, separate);
		json_object_object_foreach(together, k, v)
		{
			(void)v;
			if (ha_active(c, k))
				json_object_array_add(*dependent, json_object_new_string(k));
		}
		for (size_t i = 0; i < c->nodes.n; i++) {
			const struct sim_node *nd = c->nodes.v[i];
			if (!nd->online)
				continue;
			json_object *list = NULL;
			json_object_object_foreach(separate, k2, v2)
			{
				(void)v2;
				const struct sim_guest *pg = sid_guest(c, k2);
				if (!ha_active(c, k2) || !pg || strcmp(pg->node, nd->name) != 0)
					continue;
				json_object *e = json_object_new_object();
				if (!list && (list = json_object_new_array()))
					json_object_object_add(*blocking, nd->name, list);
				if (e && list) {
					jadd_str(e, "sid", k2);
					jadd_str(e, "cause", "resource-affinity");
					json_object_array_add(list, e);
				} else {
					json_object_put(e);
				}
			}
		}
	}
	json_object_put(together);
	json_object_put(separate);
}

/* The HA part of a migrate precondition (qemu-server's and pve-container's
 * migrate_vm_precondition on PVE 9): dependent-ha-resources, and the nodes
 * negative partners block moved from allowed to not-allowed with their
 * blocking-ha-resources. */
static void ha_precondition(struct cluster *c, const struct sim_guest *g, json_object *o,
			    json_object *allowed, json_object *notallowed)
{
	char sid[32];
	snprintf(sid, sizeof sid, "%s:%d", strcmp(g->type, "qemu") == 0 ? "vm" : "ct", g->vmid);
	json_object *dep = NULL, *block = NULL;
	ha_motion_info(c, sid, &dep, &block);
	if (!dep)
		return;
	json_object_object_add(o, "dependent-ha-resources", dep);
	json_object_object_foreach(block, node, list)
	{
		json_object *e = NULL;
		if (!json_object_object_get_ex(notallowed, node, &e)) {
			e = json_object_new_object();
			json_object_object_add(notallowed, node, e);
		}
		json_object_object_add(e, "blocking-ha-resources", json_object_get(list));
		for (size_t i = json_object_array_length(allowed); i-- > 0;)
			if (strcmp(json_object_get_string(json_object_array_get_idx(allowed, i)),
				   node) == 0)
				json_object_array_del_idx(allowed, i, 1);
	}
	json_object_put(block);
}

json_object *ct_migrate_precondition(struct cluster *c, const struct sim_guest *g)
{
	json_object *o = json_object_new_object(), *allowed = json_object_new_array();
	json_object *notallowed = json_object_new_object();
	if (!o || !allowed || !notallowed) {
		json_object_put(o);
		json_object_put(allowed);
		json_object_put(notallowed);
		return NULL;
	}
	jadd_int(o, "running", g->running ? 1 : 0);
	for (size_t i = 0; i < c->nodes.n; i++) {
		const struct sim_node *nd = c->nodes.v[i];
		if (strcmp(nd->name, g->node) != 0)
			json_object_array_add(allowed, json_object_new_string(nd->name));
	}
	ha_precondition(c, g, o, allowed, notallowed);
	json_object_object_add(o, "allowed-nodes", allowed);
	json_object_object_add(o, "not-allowed-nodes", notallowed);
	return o;
}

/* One volume of the precondition's local_disks, as
 * QemuServer::foreach_volid collects it over the config, its pending part
 * and its snapshots. */
struct pc_vol {
	char *volid;
	const char *drivename; /* borrowed key of the last valid drive */
	bool cdrom_set, cdrom, cloudinit, replicate, unused, attached, pending, vmstate,
		tpmstate;
	uint64_t size;
	json_object *snaps; /* referenced_in_snapshot: name -> 1 */
};

static struct pc_vol *pc_find(struct pc_vol *v, size_t n, const char *volid)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].volid, volid) == 0)
			return &v[i];
	return NULL;
}

static int pc_scan(json_object *conf, const char *snapname, bool pending, struct pc_vol **v,
		   size_t *n)
{
	json_object_object_foreach(conf, k, val)
	{
		const char *s = json_object_get_string(val);
		bool vmstate = strcmp(k, "vmstate") == 0;
		if (!s || (!is_drive_key(k) && !is_unused_key(k) && !vmstate))
			continue;
		char *volid = drive_volid(s);
		if (!volid)
			return -1;
		struct pc_vol *e = pc_find(*v, *n, volid);
		if (e) {
			free(volid);
		} else {
			struct pc_vol *nv = realloc(*v, (*n + 1) * sizeof **v);
			if (!nv) {
				free(volid);
				return -1;
			}
			*v = nv;
			e = &nv[(*n)++];
			memset(e, 0, sizeof *e);
			e->volid = volid;
		}
		bool cd = !vmstate && drive_is_cdrom(s);
		if (!e->cdrom_set) {
			e->cdrom = true;
			e->cdrom_set = true;
		}
		if (!cd)
			e->cdrom = false;
		e->cloudinit |= !vmstate && drive_is_cloudinit(s);
		char *rep = prop_get(s, "replicate");
		e->replicate |= !rep || strcmp(rep, "0") != 0;
		free(rep);
		e->unused |= is_unused_key(k);
		e->attached |= !e->unused && !snapname && !pending;
		e->pending |= pending;
		e->vmstate |= vmstate;
		e->tpmstate |= strcmp(k, "tpmstate0") == 0;
		char *sz = prop_get(s, "size");
		uint64_t b = 0;
		if (!e->size && sz && parse_size(sz, &b) == 0)
			e->size = b;
		free(sz);
		if (is_drive_key(k))
			e->drivename = k;
		if (snapname) {
			if (!e->snaps && !(e->snaps = json_object_new_object()))
				return -1;
			json_object_object_add(e->snaps, snapname, json_object_new_int(1));
		}
	}
	return 0;
}

/* The precondition's local_disks (API2/Qemu.pm $check_vm_disks_local):
 * every volume foreach_volid finds, but those on shared storages and an
 * empty CD drive ("none"); so a local ISO, the host's CD drive ("cdrom",
 * cdrom 1) and a passthrough disk by path are listed. size only where
 * the drive says size=. */
static json_object *precondition_local_disks(const struct cluster *c, const struct sim_guest *g)
{
	struct pc_vol *v = NULL;
	size_t n = 0;
	json_object *arr = json_object_new_array();
	int rc = arr ? pc_scan(g->config, NULL, false, &v, &n) : -1;
	if (rc == 0)
		rc = pc_scan(g->pending, NULL, true, &v, &n);
	json_object_object_foreach(g->snapshots, sn, snap)
	{
		json_object *sc = NULL;
		if (rc == 0 && json_object_object_get_ex(snap, "config", &sc))
			rc = pc_scan(sc, sn, false, &v, &n);
	}
	for (size_t i = 0; i < n; i++) {
		struct pc_vol *e = &v[i];
		char *sid = rc == 0 && strchr(e->volid, ':') ? volid_storage(e->volid) : NULL;
		const struct sim_storage *st = sid ? cluster_storage(c, sid) : NULL;
		free(sid);
		json_object *o = NULL;
		if (rc < 0 || (st && st->shared) || (e->cdrom && strcmp(e->volid, "none") == 0) ||
		    !(o = json_object_new_object())) {
			json_object_put(e->snaps);
			free(e->volid);
			continue;
		}
		json_object_object_add(o, "volid", json_object_new_string(e->volid));
		jadd_int(o, "cdrom", e->cdrom);
		jadd_int(o, "is_cloudinit", e->cloudinit);
		jadd_int(o, "replicate", e->replicate);
		jadd_int(o, "shared", 0);
		jadd_int(o, "is_unused", e->unused);
		jadd_int(o, "is_attached", e->attached);
		if (e->pending)
			jadd_int(o, "referenced_in_pending", 1);
		if (e->snaps)
			json_object_object_add(o, "referenced_in_snapshot", e->snaps);
		if (e->size)
			json_object_object_add(o, "size", json_object_new_uint64(e->size));
		jadd_int(o, "is_vmstate", e->vmstate);
		jadd_int(o, "is_tpmstate", e->tpmstate);
		if (e->drivename)
			json_object_object_add(o, "drivename", json_object_new_string(e->drivename));
		json_object_array_add(arr, o);
		free(e->volid);
	}
	free(v);
	if (rc < 0) {
		json_object_put(arr);
		return NULL;
	}
	return arr;
}

json_object *qemu_migrate_precondition(struct cluster *c,
				       const struct sim_guest *g,
				       const char *target)
{
	(void)target;
	json_object *o = json_object_new_object();
	json_object *allowed = json_object_new_array();
	json_object *notallowed = json_object_new_object();
	json_object *ld = precondition_local_disks(c, g);
	struct local_disk *d = NULL;
	size_t n = 0;
	if (!o || !allowed || !notallowed || !ld || local_disks(c, g, &d, &n) < 0) {
		json_object_put(o);
		json_object_put(allowed);
		json_object_put(notallowed);
		json_object_put(ld);
		free_disks(d, n);
		return NULL;
	}
	jadd_int(o, "running", g->running ? 1 : 0);
	for (size_t i = 0; i < c->nodes.n; i++) {
		struct sim_node *nd = c->nodes.v[i];
		if (strcmp(nd->name, g->node) == 0)
			continue;
		json_object *missing = json_object_new_array();
		for (size_t j = 0; missing && j < n; j++) {
			struct sim_storage *s = cluster_storage(c, d[j].storage);
			if (s && !storage_on_node(s, nd->name))
				json_object_array_add(missing,
						      json_object_new_string(d[j].storage));
		}
		if (missing && json_object_array_length(missing) == 0 && nd->online) {
			json_object_array_add(allowed, json_object_new_string(nd->name));
			json_object_put(missing);
		} else {
			json_object *e = json_object_new_object();
			if (e) {
				json_object_object_add(e, "unavailable_storages", missing);
				json_object_object_add(notallowed, nd->name, e);
			} else {
				json_object_put(missing);
			}
		}
	}
	free_disks(d, n);
	ha_precondition(c, g, o, allowed, notallowed);
	json_object_object_add(o, "allowed_nodes", allowed);
	json_object_object_add(o, "not_allowed_nodes", notallowed);
	json_object_object_add(o, "local_disks", ld);
	json_object *mapped = json_object_new_object();
	json_object *names = json_object_new_array();
	json_object_object_add(o, "local_resources", local_resources(g, mapped));
	json_object_object_foreach(mapped, mk, mv)
	{
		(void)mv;
		json_object_array_add(names, json_object_new_string(mk));
	}
	json_object_object_add(o, "mapped-resources", names);
	json_object_object_add(o, "mapped-resource-info", mapped);
	json_object_object_add(o, "has-dbus-vmstate", json_object_new_int(1));
	return o;
}

/* Log line with PVE's timestamp prefix. */
/* Is volid a drive of one of g's snapshots (QemuServer::foreach_volid's
 * snapshot references)? */
static bool held_by_snapshot(const struct sim_guest *g, const char *volid)
{
	json_object_object_foreach(g->snapshots, name, snap) {
		(void)name;
		json_object *sc = NULL;
		if (!json_object_object_get_ex(snap, "config", &sc))
			continue;
		json_object_object_foreach(sc, k, v) {
			const char *val = json_object_get_string(v);
			if (!is_drive_key(k) || !val)
				continue;
			char *vol = drive_volid(val);
			bool same = vol && strcmp(vol, volid) == 0;
			free(vol);
			if (same)
				return true;
		}
	}
	return false;
}

/* Why PVE cannot migrate local disk d held by a snapshot
 * (QemuMigrate::scan_local_volumes): live, or a storage whose snapshots
 * do not travel (only zfspool, btrfs raw and qcow2 files do, on 9 not on
 * a snapshot-as-volume-chain storage); NULL when it can. */
static const char *snapshot_blocks(const struct cluster *c, const struct sim_guest *g,
				   const struct local_disk *d, bool live)
{
	if (!held_by_snapshot(g, d->volid))
		return NULL;
	if (live)
		return "online storage migration not possible if non-replicated snapshot exists";
	const struct sim_storage *s = cluster_storage(c, d->storage);
	const struct sim_volume *v = cluster_volume(c, d->volid, g->node);
	const char *fmt = v && v->format ? v->format : "raw";
	/* qemu-server 9: qcow2 only with in-qcow2 snapshots, not a volume chain */
	bool travels = s && (strcmp(s->type, "zfspool") == 0 ||
			     (strcmp(s->type, "btrfs") == 0 && strcmp(fmt, "raw") == 0) ||
			     (strcmp(fmt, "qcow2") == 0 && !s->volume_chain));
	return travels ? NULL : "non-migratable snapshot exists";
}

/* ---- QEMU machine types ------------------------------------------------------------ */

/* The QEMU machine versions (i440fx and q35 alike), oldest first. */
static const char *const qemu_machine_versions[] = {
	"4.0", "4.1", "4.2", "5.0", "5.1", "5.2", "6.0", "6.1", "6.2", "7.0",
	"7.1", "7.2", "8.0", "8.1", "8.2", "9.0", "9.1", "9.2", "10.0", "10.1",
};

static void node_version_parts(const struct cluster *c, const struct sim_node *n, int *major,
			       int *minor)
{
	const char *v = node_pve_version(c, n);
	const char *dot = strchr(v, '.');
	*major = atoi(v);
	*minor = dot ? atoi(dot + 1) : 0;
}

const char *node_qemu_version(const struct cluster *c, const struct sim_node *n)
{
	int ma, mi;
	if (n && n->qemu)
		return n->qemu; /* an upgrade that named it */
	node_version_parts(c, n, &ma, &mi);
	if (ma >= 9)
		return mi >= 1 ? "10.1.2" : "10.0.2";
	if (ma == 8)
		return mi >= 4 ? "9.2.0" : mi >= 2 ? "9.0.2" : "8.1.5";
	return ma == 7 ? "7.2.0" : ma == 6 ? "6.2.0" : "5.2.0";
}

/* The highest +pveN revision of machine version ver that the node's
 * qemu-server knows (QemuServer::Machine $PVE_MACHINE_VERSION: 4.1 pve2,
 * 9.2 pve1 from 8.4, 10.0 pve1 from 9.0), 0 for none. */
static int pve_revision(const struct cluster *c, const struct sim_node *n, const char *ver)
{
	int ma, mi;
	node_version_parts(c, n, &ma, &mi);
	if (strcmp(ver, "4.1") == 0)
		return 2;
	if (strcmp(ver, "9.2") == 0 && (ma > 8 || (ma == 8 && mi >= 4)))
		return 1;
	if (strcmp(ver, "10.0") == 0 && ma >= 9)
		return 1;
	return 0;
}

/* The machine versions node's QEMU runs: how many of qemu_machine_versions. */
static size_t node_machine_count(const struct cluster *c, const struct sim_node *n)
{
	const char *q = node_qemu_version(c, n);
	size_t k = 0;
	for (size_t i = 0; i < sizeof qemu_machine_versions / sizeof *qemu_machine_versions; i++) {
		size_t l = strlen(qemu_machine_versions[i]);
		if (strncmp(q, qemu_machine_versions[i], l) == 0 && q[l] == '.')
			k = i + 1;
	}
	return k;
}

json_object *node_machine_types(const struct cluster *c, const struct sim_node *n)
{
	json_object *arr = json_object_new_array();
	static const char *const types[] = {"q35", "i440fx"};
	for (size_t i = node_machine_count(c, n); arr && i-- > 0;) {
		const char *ver = qemu_machine_versions[i];
		for (int rev = pve_revision(c, n, ver); rev >= 0; rev--) {
			for (size_t t = 0; t < 2; t++) {
				json_object *o = json_object_new_object();
				char *id = strprintf("pc-%s-%s%s%.0d", types[t], ver, rev ? "+pve" : "",
						     rev);
				char *v = strprintf("%s%s%.0d", ver, rev ? "+pve" : "", rev);
				if (o && id && v) {
					jadd_str(o, "id", id);
					jadd_str(o, "type", types[t]);
					jadd_str(o, "version", v);
					if (rev)
						jadd_str(o, "changes", "PVE machine revision");
					json_object_array_add(arr, o);
				} else {
					json_object_put(o);
				}
				free(id);
				free(v);
			}
		}
	}
	return arr;
}

const char *guest_running_machine(const struct cluster *c, const struct sim_guest *g,
				  char *buf, size_t n)
{
	if (g->machine) {
		snprintf(buf, n, "%s", g->machine);
		return buf;
	}
	const char *pinned = cfg_str(g->config, "machine");
	size_t pl = pinned ? strcspn(pinned, ",") : 0;
	/* "type=" is the property string's default key */
	if (pinned && strncmp(pinned, "type=", 5) == 0) {
		pinned += 5;
		pl -= 5;
	}
	bool q35 = pinned && pl >= 3 && (strncmp(pinned, "q35", 3) == 0 ||
					  strncmp(pinned, "pc-q35", 6) == 0);
	if (pinned && pl > 0 && memchr(pinned, '-', pl) && memchr(pinned, '.', pl)) {
		/* a pinned version: "pc-i440fx-8.1" runs as pc-i440fx-8.1+pve0 */
		bool rev = memmem(pinned, pl, "+pve", 4) != NULL;
		snprintf(buf, n, "%.*s%s", (int)pl, pinned, rev ? "" : "+pve0");
		return buf;
	}
	const struct sim_node *nd = cluster_node(c, g->node);
	size_t k = node_machine_count(c, nd);
	const char *ver = k ? qemu_machine_versions[k - 1] : "4.0";
	snprintf(buf, n, "pc-%s-%s+pve%d", q35 ? "q35" : "i440fx", ver, pve_revision(c, nd, ver));
	return buf;
}

/* Can node n run machine type m (qemu-server config_to_command on the
 * target of a migration)? NULL, or its refusal (malloc'd), as
 * qemu-server words it. */
static char *machine_refusal(const struct cluster *c, const struct sim_node *n, const char *m)
{
	const char *p = strncmp(m, "pc-i440fx-", 10) == 0 ? m + 10
		      : strncmp(m, "pc-q35-", 7) == 0   ? m + 7
		      : strncmp(m, "pc-", 3) == 0       ? m + 3 : NULL;
	if (!p)
		return NULL;
	int ma = atoi(p), mi = strchr(p, '.') ? atoi(strchr(p, '.') + 1) : 0;
	const char *pv = strstr(p, "+pve");
	int rev = pv ? atoi(pv + 4) : 0;
	const char *q = node_qemu_version(c, n);
	int qa = atoi(q), qi = atoi(strchr(q, '.') + 1);
	if (qa < ma || (qa == ma && qi < mi))
		return strprintf("Installed QEMU version '%s' is too old to run machine type '%s', "
				 "please upgrade node '%s'", q, m, n->name);
	char ver[16];
	snprintf(ver, sizeof ver, "%d.%d", ma, mi);
	int max = pve_revision(c, n, ver);
	if (rev > max)
		return strprintf("Installed qemu-server (max feature level for %s is pve%d) is too "
				 "old to run machine type '%s', please upgrade node '%s'", ver, max,
				 m, n->name);
	return NULL;
}

static void mlog(struct cluster *c, struct sim_task *t, double at,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void migration_abort(struct cluster *c, struct sim_task *t, double at,
			    const char *err);

/* QemuMigrate::scan_local_volumes on what no storage holds: a disk by
 * absolute path ("local file/device") and the host's CD drive ("can't
 * migrate local cdrom drive") stop the migration; true when they did. */
static bool host_devices_block(struct cluster *c, struct sim_task *t, const struct sim_guest *g,
			       double at)
{
	bool abort = false;
	json_object_object_foreach(g->config, k, v)
	{
		const char *val = json_object_get_string(v);
		if (!is_drive_key(k) || !val)
			continue;
		char *vol = drive_volid(val);
		if (vol && vol[0] == '/') {
			mlog(c, t, at, "WARN: can't migrate local disk '%s': local file/device", vol);
			abort = true;
		} else if (vol && strcmp(vol, "cdrom") == 0) {
			mlog(c, t, at, "WARN: can't migrate local cdrom drive");
			abort = true;
		}
		free(vol);
	}
	if (abort)
		migration_abort(c, t, at + 0.1, "Problem found while scanning volumes - "
						"can't migrate VM - check log");
	return abort;
}

/* pve-container LXC/Migrate.pm phase1: a volume a snapshot references
 * on local storage moves only on zfspool and btrfs ("non-migratable
 * snapshot exists"); true when one stops the migration (logged). */
static bool ct_snapshots_block(struct cluster *c, struct sim_task *t, const struct sim_guest *g,
			       double at)
{
	bool abort = false;
	json_object *seen = json_object_new_object();
	json_object_object_foreach(g->snapshots, sn, snap)
	{
		(void)sn;
		json_object *sc = json_object_object_get(snap, "config");
		json_object_object_foreach(sc, k, v)
		{
			const char *val = json_object_get_string(v);
			if (!is_drive_key(k) || !val)
				continue;
			char *vol = drive_volid(val);
			char *sid = vol ? volid_storage(vol) : NULL;
			const struct sim_storage *s = sid ? cluster_storage(c, sid) : NULL;
			if (s && !s->shared && strcmp(s->type, "zfspool") != 0 &&
			    strcmp(s->type, "btrfs") != 0 &&
			    !json_object_object_get_ex(seen, vol, NULL)) {
				json_object_object_add(seen, vol, NULL);
				mlog(c, t, at, "WARN: can't migrate local volume '%s': non-migratable "
					       "snapshot exists", vol);
				abort = true;
			}
			free(sid);
			free(vol);
		}
	}
	json_object_put(seen);
	return abort;
}

static void mlog(struct cluster *c, struct sim_task *t, double at,
		 const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	char *stamp = NULL;
	if (c->major < 4) {
		/* PVE 2.x/3.x: "Nov 30 10:00:00" */
		char *full = task_stamp(t, at);
		static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr",
						  "May", "Jun", "Jul", "Aug",
						  "Sep", "Oct", "Nov", "Dec"};
		if (full && strlen(full) >= 19) {
			int m = atoi(full + 5);
			stamp = strprintf("%s %.2s %s", mon[(m >= 1 && m <= 12) ? m - 1 : 0],
					  full + 8, full + 11);
		}
		free(full);
	} else {
		stamp = task_stamp(t, at);
	}
	if (rc == 0 && stamp)
		task_log(t, at, "%s %s", stamp, sbuf_str(&b));
	free(stamp);
	sbuf_free(&b);
}

/* The guest's own address is unreachable from `from` to `to` (sim time). */
static void guest_down(struct cluster *c, const struct sim_guest *g, double from, double to)
{
	if (g->listen_port && g->address)
		guestnet_down(c->net, g->address, g->listen_port, from, to);
}

static void migration_abort(struct cluster *c, struct sim_task *t, double at,
			    const char *err)
{
	char *d = task_hms(at);
	mlog(c, t, at, "ERROR: %s", err);
	mlog(c, t, at, "ERROR: migration aborted (duration %s): %s", d ? d : "00:00:00",
	     err);
	free(d);
	task_fail_at(t, at, "migration aborted");
}

static void mig_start(struct cluster *c, struct sim_task *t)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (!g)
		return;
	const char *lock = guest_lock(g);
	if (lock) {
		char *msg = strprintf("%s is locked (%s)",
				      strcmp(g->type, "qemu") == 0 ? "VM" : "CT", lock);
		task_log(t, 0, "ERROR: %s", msg ? msg : "locked");
		task_fail_at(t, 0, "migration aborted");
		free(msg);
		return;
	}
	guest_set_lock(g, "migrate");
}

static void mig_end(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (!g)
		return;
	const char *lock = guest_lock(g);
	if (lock && strcmp(lock, "migrate") == 0)
		guest_set_lock(g, NULL);
	json_object *crm = NULL;
	bool by_crm = t->args && json_object_object_get_ex(t->args, "ha_crm", &crm) &&
		      json_object_get_boolean(crm);
	if (!ok) {
		if (by_crm)
			ha_crm_migration_end(c, t, g, false);
		return;
	}
	const char *map = t->args ? cfg_str(t->args, "targetstorage") : NULL;
	struct local_disk *d = NULL;
	size_t n = 0;
	if (local_disks(c, g, &d, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			struct sim_volume *v = cluster_volume(c, d[i].volid, g->node);
			char *dst = map_storage(map, d[i].storage);
			struct sim_storage *ds = dst ? cluster_storage(c, dst) : NULL;
			if (!v || !ds) {
				free(dst);
				continue;
			}
			if (strcmp(dst, d[i].storage) == 0 || d[i].cdrom) {
				free(v->node);
				v->node = ds->shared ? NULL : strdup(t->target);
			} else {
				const char *nv = volume_alloc(c, ds, t->target, g->vmid, v->size,
							      "vm", v->content);
				const char *val = cfg_str(g->config, d[i].key);
				const char *opts = val ? strchr(val, ',') : NULL;
				char *nval = nv ? strprintf("%s%s", nv, opts ? opts : "") : NULL;
				if (nval) {
					json_object_object_add(g->config, d[i].key,
							       json_object_new_string(nval));
					volume_remove(c, v);
				}
				free(nval);
			}
			free(dst);
		}
	}
	free_disks(d, n);
	free(g->node);
	g->node = strdup(t->target);
	if (!g->node)
		g->node = strdup("?");
	json_object *restart;
	if (t->args && json_object_object_get_ex(t->args, "restarted", &restart) &&
	    json_object_get_boolean(restart))
		g->started_at = t->end;
	/* the CRM's own: a container's start, the service free again (its
	 * next round may move it again: ha_crm.h) */
	if (by_crm)
		ha_crm_migration_end(c, t, g, true);
}

static struct sim_task *mig_task(struct cluster *c, const struct sim_req *req,
				 struct sim_guest *g, const char *type,
				 const char *target, double start)
{
	char *id = strprintf("%d", g->vmid);
	struct sim_task *t =
		id ? task_new(c, g->node, type, id, req->userid, start, 1.0) : NULL;
	free(id);
	if (!t)
		return NULL;
	t->vmid = g->vmid;
	t->target = strdup(target);
	t->args = json_object_new_object();
	t->on_start = mig_start;
	t->on_end = mig_end;
	return t;
}

static struct sim_node *check_target(struct cluster *c, struct sim_guest *g,
				     const char *target, struct sim_resp *r)
{
	if (strcmp(target, g->node) == 0) {
		resp_param_error(r, "target", "target is local node.");
		return NULL;
	}
	struct sim_node *tn = cluster_node(c, target);
	if (!tn)
		resp_error(r, 500, "no such cluster node '%s'", target);
	return tn;
}

static void finish_ok(struct cluster *c, struct sim_task *t, double at)
{
	char *d = task_hms(at);
	mlog(c, t, at, "migration finished successfully (duration %s)",
	     d ? d : "00:00:00");
	free(d);
	t->duration = at;
	t->end = t->start + at;
}

struct sim_task *qemu_start_migration(struct cluster *c,
				      const struct sim_req *req,
				      struct sim_guest *g, const char *target,
				      bool online, bool with_local,
				      const char *targetstorage, double start,
				      struct sim_resp *r)
{
	struct sim_node *tn = check_target(c, g, target, r);
	if (!tn || !guest_check_lock(req, g, r))
		return NULL;
	if (g->running && !online) {
		resp_error(r, 500, "can't migrate running VM without --online");
		return NULL;
	}
	if (targetstorage && strcmp(targetstorage, "1") != 0) {
		char *dst = map_storage(targetstorage, targetstorage);
		struct sim_storage *ds = NULL;
		/* every mapped target storage must exist on the target */
		const char *p = targetstorage;
		while (dst && *p) {
			const char *e = strchr(p, ',');
			size_t n = e ? (size_t)(e - p) : strlen(p);
			const char *colon = memchr(p, ':', n);
			char *id = colon ? strndup(colon + 1, n - (size_t)(colon - p) - 1)
					 : strndup(p, n);
			ds = id ? cluster_storage(c, id) : NULL;
			if (id && (!ds || !storage_on_node(ds, target))) {
				resp_error(r, 500, "storage '%s' is not available on node '%s'",
					   id, target);
				free(id);
				free(dst);
				return NULL;
			}
			free(id);
			if (!e)
				break;
			p = e + 1;
		}
		free(dst);
	}
	bool live = g->running;
	struct sim_task *t = mig_task(c, req, g, "qmigrate", target, start);
	if (!t) {
		resp_error(r, 500, "out of memory");
		return NULL;
	}
	if (targetstorage && t->args)
		json_object_object_add(t->args, "targetstorage",
				       json_object_new_string(targetstorage));
	double at = 0.1;
	mlog(c, t, at, "starting migration of VM %d to node '%s' (%s)", g->vmid,
	     target, tn->ip);
	if (!tn->online) {
		migration_abort(c, t, 1.0,
				"Can't connect to destination address using public key");
		task_apply_fault(t, req->task_fail);
		return t;
	}
	struct local_disk *d = NULL;
	size_t n = 0;
	if (local_disks(c, g, &d, &n) < 0) {
		free_disks(d, n);
		task_fail_at(t, 0.1, "out of memory");
		return t;
	}
	/* bwlimit (KiB/s) caps the disks' mirror and the memory transfer
	 * (QemuMigrate.pm: drive-mirror's speed, migrate-set-parameters
	 * max-bandwidth) */
	long long bw = param_int(req, "bwlimit", 0);
	double disk_rate = bw > 0 && bw * 1024.0 < DISK_RATE ? bw * 1024.0 : DISK_RATE;
	double ram_rate = bw > 0 && bw * 1024.0 < RAM_RATE ? bw * 1024.0 : RAM_RATE;
	json_object *lres = local_resources(g, NULL);
	size_t nres = lres ? json_object_array_length(lres) : 0;
	if (nres) {
		struct sbuf keys = {0};
		for (size_t i = 0; i < nres; i++)
			sbuf_addf(&keys, "%s%s", i ? ", " : "",
				  json_object_get_string(json_object_array_get_idx(lres, i)));
		char *msg = strprintf("can't migrate VM which uses local devices: %s",
				      sbuf_str(&keys));
		migration_abort(c, t, 0.2, msg ? msg : "local devices");
		free(msg);
		sbuf_free(&keys);
		json_object_put(lres);
		free_disks(d, n);
		task_apply_fault(t, req->task_fail);
		return t;
	}
	json_object_put(lres);
	if (host_devices_block(c, t, g, at)) {
		free_disks(d, n);
		task_apply_fault(t, req->task_fail);
		return t;
	}
	uint64_t disk_total = 0;
	bool attached = false;
	for (size_t i = 0; i < n; i++) {
		if (d[i].cdrom) {
			/* QemuMigrate: a local ISO in a CD drive stops the migration */
			char *msg = strprintf("can't migrate local cdrom drive (%s)", d[i].volid);
			mlog(c, t, at, "ERROR: %s", msg ? msg : "local cdrom");
			migration_abort(c, t, 0.3, "Problem found while scanning volumes - "
						   "can't migrate local cdrom drive");
			free(msg);
			free_disks(d, n);
			task_apply_fault(t, req->task_fail);
			return t;
		}
		/* QemuMigrate::scan_local_volumes: a cloud-init drive is
		 * "generated" and returns before the snapshot checks, so a
		 * snapshot that references it holds nothing back */
		if (d[i].cloudinit)
			mlog(c, t, at, "found generated disk '%s' (in current VM config)", d[i].volid);
		else
			mlog(c, t, at, "found local disk '%s' (%s)", d[i].volid,
			     d[i].unused ? "referenced by unused" : "attached");
		const char *held = d[i].cloudinit ? NULL : snapshot_blocks(c, g, &d[i], live);
		if (held) {
			mlog(c, t, at, "WARN: can't migrate local disk '%s': %s", d[i].volid, held);
			migration_abort(c, t, 0.3, "Problem found while scanning volumes - "
						   "can't migrate VM - check log");
			free_disks(d, n);
			task_apply_fault(t, req->task_fail);
			return t;
		}
		disk_total += d[i].size;
		attached |= !d[i].unused && !d[i].cloudinit;
		char *dst = map_storage(targetstorage, d[i].storage);
		struct sim_storage *ds = dst ? cluster_storage(c, dst) : NULL;
		if (ds && !storage_on_node(ds, target)) {
			char *msg = strprintf("storage '%s' is not available on node '%s'",
					      dst, target);
			migration_abort(c, t, 0.3, msg ? msg : "storage not available");
			free(msg);
			free(dst);
			free_disks(d, n);
			task_apply_fault(t, req->task_fail);
			return t;
		}
		free(dst);
	}
	if (live && attached && !with_local) {
		migration_abort(c, t, 0.3,
				"can't live migrate attached local disks without "
				"with-local-disks option");
		free_disks(d, n);
		task_apply_fault(t, req->task_fail);
		return t;
	}
	if (param_bool(req, "with-conntrack-state", false)) {
		mlog(c, t, at,
		     "WARNING: conntrack state migration not supported or disabled, "
		     "active connections might get dropped");
		t->warnings++;
	}
	if (!live) {
		if (n)
			mlog(c, t, at + 0.1, "copying local disk images");
		at += 0.2;
		for (size_t i = 0; i < n; i++) {
			if (d[i].cdrom)
				continue;
			double secs = (double)d[i].size / disk_rate;
			task_log_transfer(t, at, secs, d[i].size, NULL);
			at += secs + 0.1;
		}
		free_disks(d, n);
		finish_ok(c, t, at + 0.3);
		task_apply_fault(t, req->task_fail);
		return t;
	}
	/* live */
	at += 0.5;
	mlog(c, t, at, "starting VM %d on remote node '%s'", g->vmid, target);
	struct sim_node *tnode = tn;
	/* the target starts it with the machine type it runs (--machine) */
	char mb[64];
	const char *machine = guest_running_machine(c, g, mb, sizeof mb);
	char *too_old = machine_refusal(c, tnode, machine);
	if (too_old) {
		char *d2 = task_hms(at + 0.1);
		mlog(c, t, at, "[%s] %s", target, too_old);
		mlog(c, t, at, "ERROR: online migrate failure - remote command failed with exit "
			       "code 255");
		mlog(c, t, at, "aborting phase 2 - cleanup resources");
		mlog(c, t, at, "migrate_cancel");
		mlog(c, t, at + 0.1, "ERROR: migration finished with problems (duration %s)",
		     d2 ? d2 : "00:00:00");
		free(d2);
		free(too_old);
		free_disks(d, n);
		task_fail_at(t, at + 0.1, "migration problems");
		task_apply_fault(t, req->task_fail);
		return t;
	}
	/* it keeps that type on the target */
	if (!g->machine)
		g->machine = strdup(machine);
	/* its own task already counts its memory on the target (node_mem_used) */
	if (node_mem_used(c, tnode->name) + 1 * GiB > tnode->memory) {
		mlog(c, t, at + 0.5,
		     "kvm: cannot set up guest memory 'pc.ram': Cannot allocate memory");
		free_disks(d, n);
		migration_abort(c, t, at + 0.6,
				"error - tunnel command '{\"cmd\":\"start\"}' failed - "
				"start failed: QEMU exited with code 1");
		task_apply_fault(t, req->task_fail);
		return t;
	}
	at += 1.0;
	mlog(c, t, at, "start remote tunnel");
	mlog(c, t, at, "ssh tunnel ver 1");
	if (disk_total) {
		mlog(c, t, at, "starting storage migration");
		for (size_t i = 0; i < n; i++) {
			if (d[i].cdrom || d[i].unused)
				continue;
			char *drv = strprintf("drive-%s", d[i].key);
			mlog(c, t, at, "%s: start migration to nbd:unix:/run/qemu-server/"
				       "%d_nbd.migrate:exportname=%s",
			     d[i].key, g->vmid, drv ? drv : d[i].key);
			task_log(t, at, "drive mirror is starting for %s", drv ? drv : d[i].key);
			double secs = (double)d[i].size / disk_rate;
			task_log_transfer(t, at, secs, d[i].size, drv ? drv : d[i].key);
			at += secs;
			free(drv);
		}
		task_log(t, at, "all 'mirror' jobs are ready");
	}
	free_disks(d, n);
	mlog(c, t, at, "starting online/live migration on unix:/run/qemu-server/%d.migrate",
	     g->vmid);
	mlog(c, t, at, "set migration capabilities");
	mlog(c, t, at, "migration downtime limit: 100 ms");
	mlog(c, t, at, "migration cachesize: 256.0 MiB");
	mlog(c, t, at, "set migration parameters");
	mlog(c, t, at, "start migrate command to unix:/run/qemu-server/%d.migrate",
	     g->vmid);
	uint64_t mem = guest_memory(g);
	double secs = (double)mem / ram_rate;
	int steps = secs < 1 ? 1 : (secs > 60 ? 60 : (int)secs);
	for (int i = 1; i <= steps; i++) {
		uint64_t done = (uint64_t)((double)mem * i / (steps + 1));
		char *x = human_bytes(done), *y = human_bytes(mem), *rate =
			human_bytes((uint64_t)(ram_rate * (1.0 + (i % 3) * 0.05)));
		if (x && y && rate)
			mlog(c, t, at + secs * i / steps,
			     "migration active, transferred %s of %s VM-state, %s/s", x, y,
			     rate);
		free(x);
		free(y);
		free(rate);
	}
	at += secs;
	int downtime = 30 + (g->vmid * 7) % 60;
	char *avg = human_bytes((uint64_t)(ram_rate * 0.98));
	char *tot = human_bytes(mem);
	mlog(c, t, at + 0.1, "average migration speed: %s/s - downtime %d ms",
	     avg ? avg : "?", downtime);
	mlog(c, t, at + 0.1, "migration completed, transferred %s VM-state",
	     tot ? tot : "?");
	mlog(c, t, at + 0.1, "migration status: completed");
	/* the guest is paused for the downtime just before the end */
	guest_down(c, g, t->start + at + 0.1 - downtime / 1000.0, t->start + at + 0.1);
	free(avg);
	free(tot);
	if (disk_total) {
		task_log(t, at + 0.2, "all 'mirror' jobs are ready");
		mlog(c, t, at + 0.3, "stopping NBD storage migration server on target.");
	}
	finish_ok(c, t, at + 0.5);
	task_apply_fault(t, req->task_fail);
	return t;
}

struct sim_task *ct_start_migration(struct cluster *c,
				    const struct sim_req *req,
				    struct sim_guest *g, const char *target,
				    bool restart, bool online, double start,
				    struct sim_resp *r)
{
	struct sim_node *tn = check_target(c, g, target, r);
	if (!tn || !guest_check_lock(req, g, r))
		return NULL;
	bool openvz = strcmp(g->type, "openvz") == 0;
	if (openvz) {
		online = online || restart;
		if (g->running && !online) {
			resp_error(r, 500, "can't migrate running container without --online");
			return NULL;
		}
	} else if (g->running && !online && !restart) {
		resp_error(r, 500,
			   "can't migrate running container without --online or --restart");
		return NULL;
	}
	struct sim_task *t = mig_task(c, req, g, "vzmigrate", target, start);
	if (!t) {
		resp_error(r, 500, "out of memory");
		return NULL;
	}
	double at = 0.1;
	if (!tn->online) {
		mlog(c, t, at, "starting migration of CT %d to node '%s' (%s)", g->vmid,
		     target, tn->ip);
		migration_abort(c, t, 1.0,
				"Can't connect to destination address using public key");
		task_apply_fault(t, req->task_fail);
		return t;
	}
	if (!openvz && g->running && online && !restart) {
		mlog(c, t, at, "starting migration of CT %d to node '%s' (%s)", g->vmid,
		     target, tn->ip);
		migration_abort(c, t, 0.2, "lxc live migration is currently not implemented");
		task_apply_fault(t, req->task_fail);
		return t;
	}
	struct local_disk *d = NULL;
	size_t n = 0;
	uint64_t total = 0;
	if (local_disks(c, g, &d, &n) == 0)
		for (size_t i = 0; i < n; i++)
			total += d[i].size;
	if (openvz) {
		mlog(c, t, at, "starting migration of CT %d to node '%s' (%s)", g->vmid,
		     target, tn->ip);
		if (g->running)
			mlog(c, t, at, "container is running - using online migration");
		mlog(c, t, at + 0.2, "starting rsync phase 1");
		double secs = (double)total / DISK_RATE;
		at += 0.3 + secs;
		if (g->running) {
			mlog(c, t, at, "start live migration - suspending container");
			mlog(c, t, at + 0.2, "dump container state");
			mlog(c, t, at + 0.6, "copy dump file to target node");
			mlog(c, t, at + 1.0, "starting rsync (2nd pass)");
			mlog(c, t, at + 1.2, "dump 2nd level quota");
			mlog(c, t, at + 1.3, "copy 2nd level quota to target node");
			mlog(c, t, at + 1.5, "initialize container on remote node '%s'", target);
			mlog(c, t, at + 1.6, "initializing remote quota");
			mlog(c, t, at + 1.8, "turn on remote quota");
			mlog(c, t, at + 1.9, "load 2nd level quota");
			mlog(c, t, at + 2.0, "starting container on remote node '%s'", target);
			mlog(c, t, at + 2.1, "restore container state");
			guest_down(c, g, t->start + at, t->start + at + 2.1);
			at += 2.5;
		}
		mlog(c, t, at, "removing container files on local node");
		mlog(c, t, at + 0.2, "start final cleanup");
		char *dur = task_hms(at + 0.3);
		mlog(c, t, at + 0.3, "migration finished successfuly (duration %s)",
		     dur ? dur : "00:00:00");
		free(dur);
		t->duration = at + 0.3;
		t->end = t->start + t->duration;
		free_disks(d, n);
		task_apply_fault(t, req->task_fail);
		return t;
	}
	bool restarted = g->running;
	if (restarted) {
		mlog(c, t, at, "shutdown CT %d", g->vmid);
		at += 2.0;
		if (t->args)
			json_object_object_add(t->args, "restarted", json_object_new_boolean(1));
	}
	mlog(c, t, at, "starting migration of CT %d to node '%s' (%s)", g->vmid, target,
	     tn->ip);
	if (ct_snapshots_block(c, t, g, at)) {
		mlog(c, t, at + 0.1, "aborting phase 1 - cleanup resources");
		mlog(c, t, at + 0.1, "start final cleanup");
		if (restarted) {
			/* restart mode: started again on the source (final_cleanup) */
			mlog(c, t, at + 0.2, "start container on source node");
			guest_down(c, g, t->start + 0.1, t->start + at + 1.0);
		}
		t->duration = at + 1.0;
		t->end = t->start + t->duration;
		migration_abort(c, t, at + 1.0, "can't migrate CT - check log");
		free_disks(d, n);
		task_apply_fault(t, req->task_fail);
		return t;
	}
	for (size_t i = 0; i < n; i++) {
		mlog(c, t, at, "found local volume '%s' (in current VM config)", d[i].volid);
		double secs = (double)d[i].size / DISK_RATE;
		task_log_transfer(t, at + 0.1, secs, d[i].size, NULL);
		at += secs + 0.2;
	}
	free_disks(d, n);
	mlog(c, t, at, "start final cleanup");
	if (restarted) {
		mlog(c, t, at + 0.1, "start container on target node");
		at += 1.0;
		/* down from the shutdown until it runs on the target */
		guest_down(c, g, t->start + 0.1, t->start + at);
	}
	finish_ok(c, t, at + 0.2);
	task_apply_fault(t, req->task_fail);
	return t;
}

/* ---- through HA: hamigrate ------------------------------------------------ */

/* An HA-managed guest is not migrated by the API call: it runs
 * `ha-manager migrate SID TARGET` in a "hamigrate" task (qemu-server
 * API2/Qemu.pm and pve-container API2/LXC.pm migrate_vm alike: "Requesting
 * HA migration for VM|CT ID to node TARGET"), which queues the command for
 * the CRM and prints what the rules make of it (pve-ha-manager
 * CLI/ha_manager.pm print_resource_motion_output); the CRM then runs it
 * (Manager.pm queue_resource_motion; ha_crm_migrate) unless the HA stack
 * is disarmed (handle_disarm drops queued commands). */
void guest_ha_migrate_request(struct cluster *c, const struct sim_req *req,
			      struct sim_guest *g, const char *target, struct sim_resp *r)
{
	if (strcmp(target, g->node) == 0) {
		resp_param_error(r, "target", "target is local node.");
		return;
	}
	if (!cluster_node(c, target)) {
		resp_error(r, 500, "no such cluster node '%s'", target);
		return;
	}
	char *id = strprintf("%d", g->vmid);
	struct sim_task *t = id ? task_new(c, g->node, "hamigrate", id, req->userid, req->now, 1.0)
				: NULL;
	free(id);
	if (!t) {
		resp_error(r, 500, "out of memory");
		return;
	}
	bool qemu = strcmp(g->type, "qemu") == 0;
	const char *cmd = "migrate";
	char sid[32];
	snprintf(sid, sizeof sid, "%s:%d", qemu ? "vm" : "ct", g->vmid);
	task_log(t, 0.1, "Requesting HA migration for %s %d to node %s", qemu ? "VM" : "CT",
		 g->vmid, target);
	json_object *dep = NULL, *block = NULL, *list = NULL;
	ha_motion_info(c, sid, &dep, &block);
	if (block && json_object_object_get_ex(block, target, &list)) {
		task_log(t, 0.2, "cannot %s resource '%s' to node '%s':", cmd, sid, target);
		task_log(t, 0.2, "%s", "");
		for (size_t i = 0; i < json_object_array_length(list); i++)
			task_log(t, 0.2,
				 "- resource '%s' on target node '%s' in negative affinity with "
				 "resource '%s'",
				 cfg_str(json_object_array_get_idx(list, i), "sid"), target, sid);
		char *err = strprintf("command 'ha-manager %s %s %s' failed: exit code 255", cmd,
				      sid, target);
		task_fail_at(t, 0.3, err ? err : "ha-manager failed");
		free(err);
	} else {
		/* the partners go along, those not on the target yet */
		for (size_t i = 0; dep && i < json_object_array_length(dep); i++) {
			const char *p = json_object_get_string(json_object_array_get_idx(dep, i));
			struct sim_guest *pg = sid_guest(c, p);
			task_log(t, 0.2, "also %s resource '%s' in positive affinity with resource "
					 "'%s' to target node '%s'", cmd, p, sid, target);
			if (!c->ha_disarm && pg && strcmp(pg->node, target) != 0)
				ha_crm_migrate(c, pg, target, req->now + 2.0);
		}
		if (!c->ha_disarm)
			ha_crm_migrate(c, g, target, req->now + 2.0);
	}
	json_object_put(dep);
	json_object_put(block);
	task_apply_fault(t, req->task_fail);
	resp_task(r, t);
}
