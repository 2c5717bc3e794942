/* migrate_plan.c - the migration planner (migrate_plan.h): refusals with
 * PVE's reasons and how to fix them, the method by guest kind and state,
 * the request's parameters, and a duration estimate. Pure. */
#include "migrate_plan.h"

#include "json.h"
#include "pvecfg.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1024.0 * 1024.0)

const char *mig_method_name(enum mig_method m)
{
	switch (m) {
	case MIG_NONE: return "none";
	case MIG_ONLINE: return "online";
	case MIG_OFFLINE: return "offline";
	case MIG_RESTART: return "restart";
	}
	return "?";
}

void mig_plan_free(struct mig_plan *p)
{
	free(p->targetstorage);
	free(p->refusal);
	free(p->note);
	memset(p, 0, sizeof *p);
}

char *migrate_map_storage(const char *map, const char *src)
{
	if (!map)
		return strdup(src);
	if (!strchr(map, ':'))
		return strdup(map);
	size_t sl = strlen(src);
	for (const char *p = map;;) {
		const char *e = strchrnul(p, ',');
		const char *colon = memchr(p, ':', (size_t)(e - p));
		if (colon && (size_t)(colon - p) == sl && strncmp(p, src, sl) == 0)
			return strndup(colon + 1, (size_t)(e - colon - 1));
		if (!*e)
			return strdup(src);
		p = e + 1;
	}
}

/* The target's entry for storage id in GET /nodes/T/storage, or NULL. */
static json_object *target_storage(const struct mig_facts *f, const char *id)
{
	size_t n = json_object_is_type(f->target_storages, json_type_array)
			   ? json_object_array_length(f->target_storages) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(f->target_storages, i);
		const char *s = json_str(e, "storage");
		long long enabled = 1, active = 1;
		json_int(e, "enabled", &enabled);
		json_int(e, "active", &active);
		if (s && strcmp(s, id) == 0 && enabled && active)
			return e;
	}
	return NULL;
}

static bool storage_shared(const struct mig_facts *f, const char *id)
{
	long long shared = 0;
	json_object *e = target_storage(f, id);
	return e && json_int(e, "shared", &shared) && shared;
}

static int refuse(struct mig_plan *p, struct sbuf *b)
{
	if (!b->len)
		return -1;
	p->refusal = sbuf_steal(b);
	return p->refusal ? 0 : -1;
}

/* The storage id of a volume id ("local-lvm:vm-100-disk-0" -> "local-lvm"),
 * malloc'd; NULL for a path or "none". */
static char *volid_storage(const char *volid)
{
	const char *c = volid ? strchr(volid, ':') : NULL;
	if (!c || volid[0] == '/')
		return NULL;
	return strndup(volid, (size_t)(c - volid));
}

/* Every mapped storage named by the request exists on the target. */
static int check_map_targets(const struct mig_facts *f, struct mig_plan *p)
{
	if (!f->storage_map || !f->target_storages)
		return 0;
	const char *m = f->storage_map;
	for (const char *q = m;;) {
		const char *e = strchrnul(q, ',');
		const char *colon = memchr(q, ':', (size_t)(e - q));
		const char *d = colon ? colon + 1 : q;
		char *id = strndup(d, (size_t)(e - d));
		if (!id)
			return -1;
		if (!target_storage(f, id)) {
			struct sbuf b = {0};
			sbuf_addf(&b, "storage '%s' is not available on node '%s': name a storage "
				      "that node has (pvagent nodes; pvesm status on %s)",
				  id, f->target, f->target);
			free(id);
			return refuse(p, &b);
		}
		free(id);
		if (!*e)
			return 0;
		q = e + 1;
	}
}

static int check_memory(const struct mig_facts *f, struct mig_plan *p)
{
	if (!f->running || f->target_mem_free >= f->memory + f->memory_reserve)
		return 0;
	struct sbuf b = {0};
	sbuf_addf(&b, "not enough free memory on node '%s': %.0f MiB free, the guest needs %.0f MiB "
		      "plus the reserve of %.0f MiB ([migrate] memory_reserve); free memory "
		      "there or choose another node",
		  f->target, (double)f->target_mem_free / MiB, (double)f->memory / MiB,
		  (double)f->memory_reserve / MiB);
	return refuse(p, &b);
}

/* The first object of array arr whose key is value, or NULL. */
static json_object *entry_where(json_object *arr, const char *key, const char *value)
{
	size_t n = json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		const char *v = json_str(e, key);
		if (v && strcmp(v, value) == 0)
			return e;
	}
	return NULL;
}

/* Does storage sid keep qcow2 snapshots as a volume chain (PVE 9
 * snapshot-as-volume-chain, from GET /storage)? */
static bool volume_chain(const struct mig_facts *f, const char *sid)
{
	long long chain = 0;
	return json_int(entry_where(f->storage_config, "storage", sid), "snapshot-as-volume-chain",
			&chain) && chain;
}

/* PVE (QemuMigrate::scan_local_volumes) cannot move a local volume a
 * snapshot holds while the VM runs, nor offline unless the storage keeps
 * snapshots in the volume (zfspool, btrfs raw, qcow2 files; on 9 not on a
 * snapshot-as-volume-chain storage): the refusal in b, or 0 when volid
 * can go. */
static int snapshot_refusal(const struct mig_facts *f, const char *volid, struct sbuf *b)
{
	json_object *names = NULL;
	if (!volid || !json_object_object_get_ex(f->snapshot_refs, volid, &names) ||
	    !json_object_is_type(names, json_type_array) || !json_object_array_length(names))
		return 0;
	const char *first = json_object_get_string(json_object_array_get_idx(names, 0));
	char *sid = volid_storage(volid);
	json_object *st = sid ? target_storage(f, sid) : NULL;
	const char *type = json_str(st, "type");
	size_t len = strlen(volid);
	bool qcow2 = len > 6 && strcmp(volid + len - 6, ".qcow2") == 0;
	bool chain = qcow2 && sid && volume_chain(f, sid);
	bool travels = (qcow2 && !chain) ||
		       (type && (strcmp(type, "zfspool") == 0 || strcmp(type, "btrfs") == 0));
	int rc = 0;
	/* PVE refuses a running VM's first ("online storage migration not
	 * possible"), whatever the storage */
	if (chain && !f->running) {
		sbuf_addf(b, "VM %d's qcow2 disk %s has snapshots, which storage '%s' keeps as a "
			     "volume chain (snapshot-as-volume-chain): PVE cannot migrate those; "
			     "delete the snapshot (qm delsnapshot %d %s), or keep the disk on shared "
			     "storage",
			  f->vmid, volid, sid, f->vmid, first ? first : "NAME");
		free(sid);
		return 1;
	}
	if (f->running || (type && !travels)) {
		size_t nn = json_object_array_length(names);
		sbuf_addf(b, "VM %d's local disk %s is held by its snapshot%s ", f->vmid, volid,
			  nn > 1 ? "s" : "");
		for (size_t i = 0; i < nn; i++)
			sbuf_addf(b, "%s%s", i ? ", " : "",
				  json_object_get_string(json_object_array_get_idx(names, i)));
		if (f->running && travels)
			sbuf_addf(b, ": PVE cannot move it while the VM runs; shut the VM down to "
				     "migrate it offline, or delete the snapshot (qm delsnapshot %d %s)",
				  f->vmid, first ? first : "NAME");
		else
			sbuf_addf(b, ": PVE cannot move snapshots on %s storage '%s'%s; delete the "
				     "snapshot (qm delsnapshot %d %s), or keep the disk on shared "
				     "storage",
				  type ? type : "this", sid ? sid : "?",
				  f->running ? " (and not at all while the VM runs)" : "", f->vmid,
				  first ? first : "NAME");
		rc = 1;
	}
	free(sid);
	return rc;
}

/* How to get rid of a local resource that blocks migration. */
static const char *resource_fix(const char *key)
{
	if (strncmp(key, "hostpci", 7) == 0)
		return "PCI passthrough: remove it, or map the device on every node and mark "
		       "the mapping live-migration capable";
	if (strncmp(key, "usb", 3) == 0 || strcmp(key, "hostusb") == 0)
		return "USB passthrough: remove it, or use a USB mapping present on the target";
	if (strncmp(key, "serial", 6) == 0 || strncmp(key, "parallel", 8) == 0)
		return "a host device: remove it or use 'socket'";
	if (strncmp(key, "virtiofs", 8) == 0)
		return "a directory mapping: map it on the target too";
	/* qemu-server's check_non_migratable_resources: only while it runs */
	if (strcmp(key, "amd-sev") == 0 || strcmp(key, "intel-tdx") == 0)
		return "its memory is encrypted, so it cannot move while it runs: shut it down and "
		       "migrate it offline";
	return "remove it from the guest's config";
}

static int qemu_plan(const struct mig_facts *f, struct mig_plan *p)
{
	json_object *pre = f->precondition, *lr = NULL, *na = NULL, *entry = NULL, *ld = NULL;
	struct sbuf b = {0};
	/* local resources (passthrough, host devices) */
	size_t n = json_object_object_get_ex(pre, "local_resources", &lr) &&
			   json_object_is_type(lr, json_type_array)
			   ? json_object_array_length(lr) : 0;
	if (n) {
		json_object *mri = NULL;
		json_object_object_get_ex(pre, "mapped-resource-info", &mri);
		sbuf_addf(&b, "VM %d uses local resources that PVE cannot migrate%s:", f->vmid,
			  f->running ? " while it runs" : "");
		for (size_t i = 0; i < n; i++) {
			const char *k = json_object_get_string(json_object_array_get_idx(lr, i));
			json_object *mi = NULL;
			const char *mname = k && json_object_object_get_ex(mri, k, &mi)
						    ? json_str(mi, "name") : NULL;
			sbuf_addf(&b, "%s %s%s%s%s (%s)", i ? ";" : "", k ? k : "?",
				  mname ? " mapped '" : "",
				  mname ? mname : "", mname ? "' without live migration" : "",
				  mname && f->running ? "stop the VM to migrate it offline"
						      : resource_fix(k ? k : ""));
		}
		return refuse(p, &b);
	}
	/* the target as PVE sees it */
	if (json_object_object_get_ex(pre, "not_allowed_nodes", &na) &&
	    json_object_object_get_ex(na, f->target, &entry)) {
		json_object *us = NULL, *ur = NULL;
		size_t nu = json_object_object_get_ex(entry, "unavailable_storages", &us) &&
				    json_object_is_type(us, json_type_array)
				    ? json_object_array_length(us) : 0;
		for (size_t i = 0; i < nu; i++) {
			const char *sid = json_object_get_string(json_object_array_get_idx(us, i));
			char *dst = sid ? migrate_map_storage(f->storage_map, sid) : NULL;
			if (!dst)
				return -1;
			bool ok = strcmp(dst, sid) != 0 && target_storage(f, dst);
			if (!ok)
				sbuf_addf(&b, "%sstorage '%s' is not available on node '%s'%s",
					  b.len ? "; " : "", sid, f->target,
					  strcmp(dst, sid) ? " (nor the mapped one)" : "");
			free(dst);
		}
		if (b.len && !f->no_storage_map)
			sbuf_addf(&b, ": map it to a storage of '%s' with --storage-map %s:DST "
				      "(or --storage DST)",
				  f->target,
				  json_object_get_string(json_object_array_get_idx(us, 0)));
		if (json_object_object_get_ex(entry, "unavailable-resources", &ur) &&
		    json_object_array_length(ur) > 0)
			sbuf_addf(&b, "%smapped resources %s have no mapping on node '%s': add the "
				      "node to the resource mapping",
				  b.len ? "; " : "", json_object_to_json_string(ur), f->target);
		if (b.len)
			return refuse(p, &b);
		sbuf_free(&b);
	}
	/* local disks: CD drives with local ISOs stop PVE; others are copied */
	size_t nd = json_object_object_get_ex(pre, "local_disks", &ld) &&
			    json_object_is_type(ld, json_type_array)
			    ? json_object_array_length(ld) : 0;
	bool copies = false;
	const char *path = NULL, *path_drive = NULL;
	for (size_t i = 0; i < nd; i++) {
		json_object *d = json_object_array_get_idx(ld, i);
		long long cd = 0, unused = 0, size = 0;
		json_int(d, "cdrom", &cd);
		json_int(d, "is_unused", &unused);
		const char *volid = json_str(d, "volid"), *drive = json_str(d, "drivename");
		long long ci = 0;
		json_int(d, "is_cloudinit", &ci);
		/* QemuMigrate::scan_local_volumes: a cloud-init drive is generated
		 * again on the target; the host's drive cannot move */
		if (cd && ci)
			continue;
		if (cd && volid && strcmp(volid, "cdrom") == 0) {
			sbuf_addf(&b, "VM %d uses the host's CD drive%s%s, and PVE can't migrate a local "
				      "cdrom drive: set it to none (qm set %d --%s none,media=cdrom)",
				  f->vmid, drive ? " as " : "", drive ? drive : "", f->vmid,
				  drive ? drive : "ide2");
			return refuse(p, &b);
		}
		if (cd) {
			sbuf_addf(&b, "VM %d has a local ISO '%s' in its CD drive%s%s: eject it "
				      "(qm set %d --%s none,media=cdrom) or keep the ISO on shared "
				      "storage",
				  f->vmid, volid ? volid : "?", drive ? " " : "", drive ? drive : "",
				  f->vmid, drive ? drive : "ide2");
			return refuse(p, &b);
		}
		/* QemuMigrate::scan_local_volumes: a disk by absolute path that
		 * is not marked shared=1 (the precondition leaves those out) is
		 * "local file/device"; said after the CD drives, as PVE logs all */
		if (volid && volid[0] == '/') {
			if (!path) {
				path = volid;
				path_drive = drive;
			}
			continue;
		}
		if (snapshot_refusal(f, volid, &b))
			return refuse(p, &b);
		copies = true;
		if (json_int(d, "size", &size) && size > 0)
			p->disk_bytes += (uint64_t)size;
	}
	if (path) {
		sbuf_addf(&b, "VM %d's disk %s%sis the host's %s (a local file/device), which PVE "
			      "cannot migrate: detach it (qm set %d --delete %s), or, when the same "
			      "device is at that path on every node, mark it shared (shared=1)",
			  f->vmid, path_drive ? path_drive : "", path_drive ? " " : "", path, f->vmid,
			  path_drive ? path_drive : "DISK");
		return refuse(p, &b);
	}
	if (check_map_targets(f, p) < 0 || p->refusal)
		return p->refusal ? 0 : -1;
	if (check_memory(f, p) < 0 || p->refusal)
		return p->refusal ? 0 : -1;
	if (copies && f->running && f->no_live_local_disks) {
		sbuf_addf(&b, "VM %d is running with local disks, and [migrate] with_local_disks = "
			      "no: shut it down first (an offline migration copies them), or set "
			      "with_local_disks = yes", f->vmid);
		return refuse(p, &b);
	}
	p->method = f->running ? MIG_ONLINE : MIG_OFFLINE;
	p->with_local_disks = copies && f->running;
	if (copies && f->storage_map && !(p->targetstorage = strdup(f->storage_map)))
		return -1;
	return 0;
}

/* pve-container (LXC/Migrate.pm phase1): a volume a snapshot references
 * moves only on zfspool and btrfs storage, or stays where it is on shared
 * storage; on any other ("non-migratable snapshot exists") the migration
 * stops, running or not. 1 with the refusal in b, or 0. */
static int ct_snapshot_refusal(const struct mig_facts *f, struct sbuf *b)
{
	if (!json_object_is_type(f->snapshot_refs, json_type_object))
		return 0;
	json_object_object_foreach(f->snapshot_refs, volid, names)
	{
		char *sid = volid_storage(volid);
		json_object *st = sid ? target_storage(f, sid) : NULL;
		const char *type = json_str(st, "type");
		long long shared = 0;
		if (!type || (json_int(st, "shared", &shared) && shared) ||
		    strcmp(type, "zfspool") == 0 || strcmp(type, "btrfs") == 0) {
			free(sid);
			continue;
		}
		size_t nn = json_object_is_type(names, json_type_array)
				    ? json_object_array_length(names) : 0;
		const char *first = nn ? json_object_get_string(json_object_array_get_idx(names, 0))
				       : "NAME";
		sbuf_addf(b, "CT %d's volume %s is held by its snapshot%s ", f->vmid, volid,
			  nn > 1 ? "s" : "");
		for (size_t i = 0; i < nn; i++)
			sbuf_addf(b, "%s%s", i ? ", " : "",
				  json_object_get_string(json_object_array_get_idx(names, i)));
		sbuf_addf(b, " on %s storage '%s', and PVE moves a container's snapshots only on "
			     "zfspool and btrfs (non-migratable snapshot exists): delete the "
			     "snapshot (pct delsnapshot %d %s), or keep the volume on shared storage",
			  type, sid, f->vmid, first);
		free(sid);
		return 1;
	}
	return 0;
}

/* lxc and OpenVZ: the volumes of the config must land on storages the
 * target has; bind mounts and devices are host-local. */
static int ct_plan(const struct mig_facts *f, struct mig_plan *p)
{
	struct sbuf b = {0};
	json_object_object_foreach(f->config, k, v)
	{
		bool rootfs = strcmp(k, "rootfs") == 0;
		bool mp = strncmp(k, "mp", 2) == 0 && isdigit((unsigned char)k[2]);
		if (strncmp(k, "dev", 3) == 0 && isdigit((unsigned char)k[3])) {
			sbuf_addf(&b, "CT %d passes host device %s (%s) through: remove it to "
				      "migrate",
				  f->vmid, k, json_object_get_string(v));
			return refuse(p, &b);
		}
		if (!rootfs && !mp)
			continue;
		struct propstr ps;
		if (propstr_parse(json_object_get_string(v), &ps) < 0)
			return -1;
		const char *vol = propstr_get(&ps, NULL);
		if (vol && vol[0] == '/') {
			sbuf_addf(&b, "CT %d has %s, a bind mount of the host path %s: remove it "
				      "(pct set %d --delete %s) or make it shared (shared=1) when "
				      "the path exists on every node",
				  f->vmid, k, vol, f->vmid, k);
			propstr_free(&ps);
			return refuse(p, &b);
		}
		char *sid = volid_storage(vol);
		char *dst = sid ? migrate_map_storage(f->storage_map, sid) : NULL;
		if (sid && !dst) {
			free(sid);
			propstr_free(&ps);
			return -1;
		}
		if (dst && f->target_storages && !target_storage(f, dst)) {
			sbuf_addf(&b, "storage '%s' of %s is not available on node '%s'", dst, k,
				  f->target);
			if (!f->no_storage_map)
				sbuf_addf(&b, ": map it with --storage-map %s:DST (or --storage DST)",
					  sid);
			free(sid);
			free(dst);
			propstr_free(&ps);
			return refuse(p, &b);
		}
		double sz = 0;
		const char *size = propstr_get(&ps, "size");
		if (dst && !storage_shared(f, dst) && size && pvecfg_parse_size(size, &sz) == 0)
			p->disk_bytes += (uint64_t)sz;
		free(sid);
		free(dst);
		propstr_free(&ps);
	}
	if (ct_snapshot_refusal(f, &b))
		return refuse(p, &b);
	if (f->type == GUEST_OPENVZ && f->storage_map) {
		sbuf_addf(&b, "OpenVZ containers migrate to the same storage: drop --storage");
		return refuse(p, &b);
	}
	if (check_map_targets(f, p) < 0 || p->refusal)
		return p->refusal ? 0 : -1;
	if (check_memory(f, p) < 0 || p->refusal)
		return p->refusal ? 0 : -1;
	p->method = !f->running ? MIG_OFFLINE : f->type == GUEST_OPENVZ ? MIG_ONLINE : MIG_RESTART;
	if (f->storage_map && !(p->targetstorage = strdup(f->storage_map)))
		return -1;
	return 0;
}

bool migrate_version_older(const struct pve_version *target,
			   const struct pve_version *source)
{
	if (!target || !source)
		return false;
	return target->major != source->major ? target->major < source->major
					      : target->minor < source->minor;
}

/* A machine type's parts: "pc-i440fx-10.1+pve0" -> "i440fx", 10, 1, 0
 * (QemuServer::Machine extract_version_parts; "pc-" alone is i440fx). 0,
 * or -1 for one without a version. */
static int machine_parts(const char *id, char *type, size_t tn, int *major, int *minor,
			 int *pve)
{
	static const struct {
		const char *prefix, *type;
	} kinds[] = {{"pc-i440fx-", "i440fx"}, {"pc-q35-", "q35"}, {"pc-", "i440fx"},
		     {"virt-", "virt"}};
	for (size_t k = 0; id && k < sizeof kinds / sizeof *kinds; k++) {
		size_t l = strlen(kinds[k].prefix);
		if (strncmp(id, kinds[k].prefix, l) != 0 || !isdigit((unsigned char)id[l]))
			continue;
		char *end = NULL;
		long ma = strtol(id + l, &end, 10), mi = 0, pv = 0;
		if (*end != '.' || !isdigit((unsigned char)end[1]))
			return -1;
		mi = strtol(end + 1, &end, 10);
		if (*end == '.' && isdigit((unsigned char)end[1]))
			strtol(end + 1, &end, 10); /* a patch part: ignored, as PVE does */
		if (strncmp(end, "+pve", 4) == 0)
			pv = strtol(end + 4, NULL, 10);
		snprintf(type, tn, "%s", kinds[k].type);
		*major = (int)ma;
		*minor = (int)mi;
		*pve = (int)pv;
		return 0;
	}
	return -1;
}

/* qemu-server starts the incoming VM on the target with the machine type
 * it runs (QemuServer.pm config_to_command): the target's QEMU must be at
 * least that version ("Installed QEMU version '...' is too old to run
 * machine type '...', please upgrade node '...'") and its qemu-server
 * know the +pveN revision. Judged from the target's machine types. */
static int check_machine(const struct mig_facts *f, struct mig_plan *p)
{
	char type[16], et[16];
	int ma, mi, pv;
	if (machine_parts(f->running_machine, type, sizeof type, &ma, &mi, &pv) < 0)
		return 0; /* not a versioned type: nothing to judge by */
	int top_ma = -1, top_mi = -1, max_pv = -1;
	size_t n = json_object_array_length(f->target_machines);
	for (size_t i = 0; i < n; i++) {
		int a, b, c;
		if (machine_parts(json_str(json_object_array_get_idx(f->target_machines, i), "id"), et,
				  sizeof et, &a, &b, &c) < 0 ||
		    strcmp(et, type) != 0)
			continue;
		if (a > top_ma || (a == top_ma && b > top_mi)) {
			top_ma = a;
			top_mi = b;
		}
		if (a == ma && b == mi && c > max_pv)
			max_pv = c;
	}
	if (max_pv >= pv)
		return 0;
	struct sbuf b = {0};
	const char *how = "shut it down to migrate it offline (it then starts with a machine type "
			  "the target runs), choose a node with a newer QEMU, or upgrade";
	if (top_ma > ma || (top_ma == ma && top_mi >= mi)) {
		if (max_pv >= 0)
			sbuf_addf(&b, "VM %d runs machine type '%s', newer than node '%s' knows: PVE "
				      "would stop the migration with \"Installed qemu-server (max "
				      "feature level for %d.%d is pve%d) is too old to run machine "
				      "type '%s', please upgrade node '%s'\"; %s '%s'",
				  f->vmid, f->running_machine, f->target, ma, mi, max_pv,
				  f->running_machine, f->target, how, f->target);
		else
			sbuf_addf(&b, "VM %d runs machine type '%s', which node '%s' does not offer "
				      "(its QEMU's machine types); shut it down to migrate it offline, "
				      "or choose another node",
				  f->vmid, f->running_machine, f->target);
	} else if (top_ma < 0) {
		sbuf_addf(&b, "VM %d runs machine type '%s', and node '%s' offers no %s machine "
			      "type; shut it down to migrate it offline, or choose another node",
			  f->vmid, f->running_machine, f->target, type);
	} else {
		sbuf_addf(&b, "VM %d runs machine type '%s', and QEMU on node '%s' runs machine "
			      "types up to %d.%d: PVE would stop the migration with \"Installed QEMU "
			      "version '%d.%d' is too old to run machine type '%s', please upgrade "
			      "node '%s'\"; %s '%s'",
			  f->vmid, f->running_machine, f->target, top_ma, top_mi, top_ma, top_mi,
			  f->running_machine, f->target, how, f->target);
	}
	return refuse(p, &b);
}

/* Without the target's machine types (not readable): Proxmox guarantees
 * live migration only to a node whose PVE is at least as new as the
 * source's (a rolling upgrade: move guests onto upgraded nodes, never
 * back). Offline and restart migrations are not live. */
static int check_versions(const struct mig_facts *f, struct mig_plan *p)
{
	if (p->method == MIG_ONLINE && f->type == GUEST_QEMU && f->running_machine &&
	    json_object_is_type(f->target_machines, json_type_array))
		return check_machine(f, p);
	const struct pve_version *s = f->source_version, *t = f->target_version;
	if (p->method != MIG_ONLINE || !migrate_version_older(t, s))
		return 0;
	struct sbuf b = {0};
	sbuf_addf(&b, "node '%s' runs PVE %s, older than %s on '%s': Proxmox only guarantees "
		      "live migration to a node at least as new as the source; shut %s %d down "
		      "to migrate it offline, choose an upgraded node, or wait until '%s' is "
		      "upgraded",
		  f->target, t->version, s->version, f->source ? f->source : "?",
		  f->type == GUEST_QEMU ? "VM" : "CT", f->vmid, f->target);
	return refuse(p, &b);
}

/* ---- HA node affinity (PVE 9) ---------------------------------------------------- */

/* Does the comma list hold item? */
static bool list_has(const char *list, const char *item)
{
	size_t n = strlen(item);
	for (const char *p = list; p && *p;) {
		size_t l = strcspn(p, ",");
		if (l == n && strncmp(p, item, n) == 0)
			return true;
		p += l + (p[l] == ',');
	}
	return false;
}

/* node's priority in a rule's "pve1:2,pve2" list (0 when not given), or
 * -1 when the list does not name it. */
static long node_priority(const char *nodes, const char *node)
{
	size_t n = strlen(node);
	for (const char *p = nodes; p && *p;) {
		size_t l = strcspn(p, ",");
		const char *colon = memchr(p, ':', l);
		size_t nl = colon ? (size_t)(colon - p) : l;
		if (nl == n && strncmp(p, node, n) == 0)
			return colon ? strtol(colon + 1, NULL, 10) : 0;
		p += l + (p[l] == ',');
	}
	return -1;
}

/* Can the CRM place a guest on node (its lrm entry in the HA status: not
 * in maintenance, not dead)? Unknown: yes. */
static bool ha_node_usable(const struct mig_facts *f, const char *node)
{
	char *id = strprintf("lrm:%s", node);
	const char *st = id ? json_str(entry_where(f->ha_status, "id", id), "status") : NULL;
	free(id);
	return !st || (!strstr(st, "maintenance") && !strstr(st, "dead"));
}

/* The guest's failback (its HA resource's, default 1: Config.pm). */
static bool ha_failback(const struct mig_facts *f, const char *sid)
{
	long long fb = 1;
	json_int(entry_where(f->ha_resources, "sid", sid), "failback", &fb);
	return fb != 0;
}

/* pve-ha-manager select_service_node after the CRM carried a migration
 * out (Manager.pm next_state_started; Rules/NodeAffinity.pm
 * get_node_affinity): a strict node-affinity rule moves the guest off a
 * node it does not name; with failback, the CRM moves it to the rule's
 * highest-priority usable node. A strict exclusion refuses; a failback
 * that would bring it back to the node a drain empties refuses, unless
 * that node is in HA maintenance; any other failback is noted. */
static int check_node_affinity(const struct mig_facts *f, struct mig_plan *p)
{
	const char *what = f->type == GUEST_QEMU ? "VM" : "CT";
	char sid[32];
	snprintf(sid, sizeof sid, "%s:%d", f->type == GUEST_QEMU ? "vm" : "ct", f->vmid);
	size_t n = json_object_is_type(f->ha_rules, json_type_array)
			   ? json_object_array_length(f->ha_rules) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(f->ha_rules, i);
		const char *type = json_str(r, "type"), *nodes = json_str(r, "nodes");
		const char *name = json_str(r, "rule");
		long long strict = 0, off = 0;
		json_int(r, "strict", &strict);
		if (!type || strcmp(type, "node-affinity") != 0 || !nodes ||
		    (json_int(r, "disable", &off) && off) || !list_has(json_str(r, "resources"), sid))
			continue;
		struct sbuf b = {0};
		long tp = node_priority(nodes, f->target);
		if (strict && tp < 0) {
			sbuf_addf(&b, "the strict node-affinity HA rule '%s' keeps %s %d on %s: the "
				      "CRM would move it off '%s' again at once; choose one of those "
				      "nodes, or change the rule (ha-manager rules set node-affinity "
				      "%s --nodes ...)",
				  name ? name : "?", what, f->vmid, nodes, f->target, name ? name : "RULE");
			return refuse(p, &b);
		}
		if (!ha_failback(f, sid))
			continue;
		/* the highest priority among the rule's usable nodes */
		long top = -1;
		const char *best = NULL;
		char *copy = strdup(nodes), *save = NULL;
		for (char *x = copy ? strtok_r(copy, ",", &save) : NULL; x;
		     x = strtok_r(NULL, ",", &save)) {
			long pr = node_item_priority(x);
			if (ha_node_usable(f, x) && pr > top) {
				top = pr;
				best = nodes + (x - copy);
			}
		}
		bool back_home = f->source && node_priority(nodes, f->source) == top &&
				 ha_node_usable(f, f->source);
		free(copy);
		if (top < 0 || tp >= top)
			continue; /* the target is among the preferred: it stays */
		if (f->source_leaving && back_home) {
			sbuf_addf(&b, "the node-affinity HA rule '%s' prefers '%s' for %s %d "
				      "(failback): the CRM would migrate it back while '%s' is drained; "
				      "put the node in HA maintenance first (ha-manager crm-command "
				      "node-maintenance enable %s), or set failback 0 on %s",
				  name ? name : "?", f->source, what, f->vmid, f->source, f->source,
				  sid);
			return refuse(p, &b);
		}
		size_t bl = best ? strcspn(best, ",:") : 0;
		sbuf_addf(&b, "the node-affinity HA rule '%s' prefers %.*s for %s %d (failback): the "
			      "CRM moves it there again after this migration",
			  name ? name : "?", (int)bl, best ? best : "", what, f->vmid);
		free(p->note);
		p->note = sbuf_steal(&b);
		if (!p->note)
			return -1;
	}
	return 0;
}

/* The HA stack on PVE 9: a disarmed one takes the migration request of an
 * HA guest and never carries it out (pve-ha-manager handle_disarm); HA
 * rules keep a guest off a node where a resource in negative affinity
 * runs (the precondition's blocking-ha-resources, qemu's not_allowed_nodes
 * or LXC's not-allowed-nodes). */
static int check_ha(const struct mig_facts *f, struct mig_plan *p)
{
	const char *what = f->type == GUEST_QEMU ? "VM" : "CT";
	struct sbuf b = {0};
	const char *armed = f->ha_armed_state;
	if (f->ha_managed && armed &&
	    (strcmp(armed, "disarmed") == 0 || strcmp(armed, "disarming") == 0)) {
		sbuf_addf(&b, "the HA stack is %s (resource mode %s): PVE takes the migration "
			      "request of HA guest %s %d and never carries it out; re-arm HA first "
			      "(ha-manager crm-command arm-ha)",
			  armed, f->ha_resource_mode ? f->ha_resource_mode : "?", what, f->vmid);
		return refuse(p, &b);
	}
	if (f->ha_managed && (check_node_affinity(f, p) < 0 || p->refusal))
		return p->refusal ? 0 : -1;
	json_object *na = NULL, *entry = NULL, *bh = NULL;
	if ((!json_object_object_get_ex(f->precondition, "not_allowed_nodes", &na) &&
	     !json_object_object_get_ex(f->precondition, "not-allowed-nodes", &na)) ||
	    !json_object_object_get_ex(na, f->target, &entry) ||
	    !json_object_object_get_ex(entry, "blocking-ha-resources", &bh) ||
	    !json_object_is_type(bh, json_type_array) || !json_object_array_length(bh))
		return 0;
	for (size_t i = 0; i < json_object_array_length(bh); i++) {
		json_object *e = json_object_array_get_idx(bh, i);
		const char *sid = json_str(e, "sid"), *cause = json_str(e, "cause");
		bool node_rule = cause && strcmp(cause, "node-affinity") == 0;
		if (node_rule)
			sbuf_addf(&b, "%sa node-affinity HA rule of %s keeps %s %d off node '%s'",
				  b.len ? "; " : "", sid ? sid : "it", what, f->vmid, f->target);
		else
			sbuf_addf(&b, "%sHA resource %s on node '%s' is in negative affinity with "
				      "%s %d (a resource-affinity HA rule)",
				  b.len ? "; " : "", sid ? sid : "?", f->target, what, f->vmid);
	}
	sbuf_addf(&b, ": choose another node, or change the rule (ha-manager rules config)");
	return refuse(p, &b);
}

int migrate_plan(const struct mig_facts *f, struct mig_plan *out)
{
	memset(out, 0, sizeof *out);
	out->memory = f->memory;
	out->via_ha = f->ha_managed;
	struct sbuf b = {0};
	if (f->source && f->target && strcmp(f->source, f->target) == 0)
		return 0; /* MIG_NONE */
	if (!f->target_known) {
		sbuf_addf(&b, "there is no node '%s' in the cluster (pvagent nodes)", f->target);
		return refuse(out, &b);
	}
	if (!f->target_online) {
		sbuf_addf(&b, "node '%s' is offline", f->target);
		return refuse(out, &b);
	}
	if (check_ha(f, out) < 0 || out->refusal)
		return out->refusal ? 0 : -1;
	int rc = f->type == GUEST_QEMU ? qemu_plan(f, out) : ct_plan(f, out);
	if (rc < 0 || out->refusal)
		return rc;
	return check_versions(f, out);
}

int migrate_plan_params(const struct mig_plan *p, const struct mig_facts *f,
			unsigned bwlimit_kib, struct pve_params *out)
{
	pve_params_add(out, "target", f->target);
	switch (f->type) {
	case GUEST_QEMU:
		if (p->method == MIG_ONLINE)
			pve_params_add(out, "online", "1");
		if (p->with_local_disks)
			pve_params_add(out, "with-local-disks", "1");
		if (p->targetstorage)
			pve_params_add(out, "targetstorage", p->targetstorage);
		break;
	case GUEST_LXC:
		if (p->method == MIG_RESTART) {
			pve_params_add(out, "restart", "1");
			pve_params_add_int(out, "timeout",
					   f->restart_timeout ? (long long)f->restart_timeout : 180);
		}
		if (p->targetstorage)
			pve_params_add(out, "target-storage", p->targetstorage);
		break;
	case GUEST_OPENVZ:
		if (p->method == MIG_ONLINE)
			pve_params_add(out, "online", "1");
		break;
	}
	if (bwlimit_kib && f->type != GUEST_OPENVZ)
		pve_params_add_int(out, "bwlimit", (long long)bwlimit_kib);
	return out->failed ? -1 : 0;
}

double migrate_estimate_s(enum mig_method m, uint64_t memory, uint64_t disk_bytes,
			  double mem_bps, double disk_bps)
{
	if (m == MIG_NONE)
		return 0;
	if (!(mem_bps > 0))
		mem_bps = 100 * MiB;
	if (!(disk_bps > 0))
		disk_bps = 200 * MiB;
	double s = 3.0 + (double)disk_bytes / disk_bps;
	if (m == MIG_ONLINE)
		s += (double)memory / mem_bps;
	if (m == MIG_RESTART)
		s += 5.0; /* shutdown and start */
	return s;
}
