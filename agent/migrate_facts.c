/* migrate_facts.c - the facts of a guest's migration, read from PVE
 * (migrate_facts.h). */
#include "migrate_facts.h"

#include "guestname.h"
#include "json.h"
#include "pvecfg.h"
#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- what a run reads of the cluster once ------------------------------------------ */

struct mc_node {
	struct mc_node *next;            /* each apart: what they hand out stays put */
	char *name;
	bool have_version, have_machines;
	struct pve_version version;      /* a copy: the client's dies with a worker */
	bool has_version;                /* false: a PVE before 4 */
	json_object *machines;           /* NULL: not readable */
};

struct mig_cluster {
	pthread_mutex_t mu;
	json_object *nodes;              /* GET /nodes, once read */
	bool have_ha, have_rules, have_res;
	json_object *ha_status, *ha_rules, *ha_res;
	struct mc_node *n;               /* a list */
};

struct mig_cluster *mig_cluster_new(void)
{
	struct mig_cluster *mc = calloc(1, sizeof *mc);
	if (mc && pthread_mutex_init(&mc->mu, NULL) != 0) {
		free(mc);
		return NULL;
	}
	return mc;
}

void mig_cluster_free(struct mig_cluster *mc)
{
	if (!mc)
		return;
	for (struct mc_node *e = mc->n, *next; e; e = next) {
		next = e->next;
		free(e->name);
		free(e->version.version);
		free(e->version.release);
		json_object_put(e->machines);
		free(e);
	}
	json_object_put(mc->nodes);
	json_object_put(mc->ha_status);
	json_object_put(mc->ha_rules);
	json_object_put(mc->ha_res);
	pthread_mutex_destroy(&mc->mu);
	free(mc);
}

/* node's entry (made when new), under mc->mu; NULL out of memory. */
static struct mc_node *mc_node(struct mig_cluster *mc, const char *node)
{
	for (struct mc_node *e = mc->n; e; e = e->next)
		if (strcmp(e->name, node) == 0)
			return e;
	struct mc_node *e = calloc(1, sizeof *e);
	if (!e || !(e->name = strdup(node))) {
		free(e);
		return NULL;
	}
	e->next = mc->n;
	mc->n = e;
	return e;
}

void mig_cluster_keep_nodes(struct mig_cluster *mc, json_object *nodes)
{
	pthread_mutex_lock(&mc->mu);
	json_object_put(mc->nodes);
	mc->nodes = nodes;
	pthread_mutex_unlock(&mc->mu);
}

json_object *mig_cluster_nodes_known(struct mig_cluster *mc)
{
	pthread_mutex_lock(&mc->mu);
	json_object *n = mc->nodes;
	pthread_mutex_unlock(&mc->mu);
	return n;
}

/* The PVE version of node (pve_node_version()), or NULL without error on
 * a PVE before 4, which has no per-node version. */
static int mig_node_version(struct pve *c, const char *node, const struct pve_version **out,
		     struct pve_error *err)
{
	const struct pve_version *cv = NULL;
	*out = NULL;
	if (pve_version(c, &cv, err) < 0)
		return -1;
	if (cv->major < 4)
		return 0;
	return pve_node_version(c, node, out, err);
}

int mig_cluster_version(struct mig_cluster *mc, struct pve *c, const char *node, bool pve4,
			const struct pve_version **out, struct pve_error *err)
{
	*out = NULL;
	pthread_mutex_lock(&mc->mu);
	struct mc_node *n = mc_node(mc, node);
	if (!n) {
		pthread_mutex_unlock(&mc->mu);
		return pve_error_oom(err);
	}
	int rc = 0;
	if (!n->have_version) {
		const struct pve_version *v = NULL;
		rc = pve4 ? pve_node_version(c, node, &v, err) : mig_node_version(c, node, &v, err);
		if (rc == 0 && v) {
			n->version = *v;
			n->version.version = v->version ? strdup(v->version) : NULL;
			n->version.release = v->release ? strdup(v->release) : NULL;
			if ((v->version && !n->version.version) || (v->release && !n->version.release))
				rc = pve_error_oom(err);
			n->has_version = true;
		}
		n->have_version = rc == 0;
	}
	if (rc == 0 && n->has_version)
		*out = &n->version;
	pthread_mutex_unlock(&mc->mu);
	return rc;
}

int mig_cluster_machines(struct mig_cluster *mc, struct pve *c, const char *node,
			 json_object **out, struct pve_error *err)
{
	*out = NULL;
	pthread_mutex_lock(&mc->mu);
	struct mc_node *n = mc_node(mc, node);
	if (!n) {
		pthread_mutex_unlock(&mc->mu);
		return pve_error_oom(err);
	}
	char *pn = !n->have_machines ? pve_path_escape(node) : NULL;
	int rc = 0;
	if (!n->have_machines) {
		rc = pn ? pve_getf(c, &n->machines, NULL, err, "/nodes/%s/capabilities/qemu/machines",
				   pn)
			: pve_error_oom(err);
		/* not readable: no permission, or a PVE without the endpoint */
		if (rc < 0 && (err->kind == PVE_ERR_PERM || err->kind == PVE_ERR_NOT_FOUND ||
			       err->kind == PVE_ERR_NOT_IMPLEMENTED)) {
			pve_error_clear(err);
			rc = 0;
		}
		if (rc == 0 && !json_object_is_type(n->machines, json_type_array)) {
			json_object_put(n->machines);
			n->machines = NULL;
		}
		n->have_machines = rc == 0;
	}
	if (rc == 0)
		*out = n->machines;
	free(pn);
	pthread_mutex_unlock(&mc->mu);
	return rc;
}

/* GET path once into *slot (have: read), NULL without error when not
 * readable: no permission, or a PVE without it. */
static int mc_read_once(struct mig_cluster *mc, struct pve *c, const char *path, bool *have,
			json_object **slot, json_object **out, struct pve_error *err)
{
	int rc = 0;
	pthread_mutex_lock(&mc->mu);
	if (!*have) {
		rc = pve_get(c, path, NULL, slot, err);
		if (rc < 0 && (err->kind == PVE_ERR_PERM || err->kind == PVE_ERR_NOT_FOUND ||
			       err->kind == PVE_ERR_NOT_IMPLEMENTED)) {
			pve_error_clear(err);
			rc = 0;
		}
		*have = rc == 0;
	}
	*out = *slot;
	pthread_mutex_unlock(&mc->mu);
	return rc;
}

int mig_cluster_ha_status(struct mig_cluster *mc, struct pve *c, json_object **out,
			  struct pve_error *err)
{
	return mc_read_once(mc, c, "/cluster/ha/status/current", &mc->have_ha, &mc->ha_status,
			    out, err);
}

int mig_cluster_ha_rules(struct mig_cluster *mc, struct pve *c, json_object **out,
			 struct pve_error *err)
{
	return mc_read_once(mc, c, "/cluster/ha/rules", &mc->have_rules, &mc->ha_rules, out, err);
}

int mig_cluster_ha_resources(struct mig_cluster *mc, struct pve *c, json_object **out,
			     struct pve_error *err)
{
	return mc_read_once(mc, c, "/cluster/ha/resources", &mc->have_res, &mc->ha_res, out, err);
}

/* ---- a guest's facts ------------------------------------------------------------- */

void mig_read_free(struct mig_read *r)
{
	json_object_put(r->status);
	json_object_put(r->config);
	json_object_put(r->pre);
	json_object_put(r->snaps);
	json_object_put(r->storages);
	memset(r, 0, sizeof *r);
}

/* The volumes of one snapshot's config (volume ids; qemu: its disks but
 * CD drives; lxc: rootfs and mount points, bind mounts and devices not)
 * added to refs as {"VOLID": [..., "SNAP"]}. 0, or -1 out of memory. */
static int snapshot_volumes(enum guest_type type, json_object *sc, const char *snap,
			    json_object *refs)
{
	struct pvecfg_hw hw = {0};
	if (type == GUEST_QEMU && pvecfg_hw_read(sc, &hw) < 0)
		return -1;
	int rc = 0;
	size_t n = type == GUEST_QEMU ? hw.n_disks : 0;
	json_object_object_foreach(sc, k, v)
	{
		bool vol = strcmp(k, "rootfs") == 0 ||
			   (strncmp(k, "mp", 2) == 0 && k[2] >= '0' && k[2] <= '9');
		if (type != GUEST_QEMU && vol) {
			struct propstr ps;
			if (propstr_parse(json_object_get_string(v), &ps) < 0)
				return -1;
			const char *id = propstr_get(&ps, NULL);
			json_object *names = NULL;
			if (id && id[0] != '/' && strchr(id, ':') &&
			    !json_object_object_get_ex(refs, id, &names)) {
				names = json_object_new_array();
				if (!names || json_object_object_add(refs, id, names) < 0)
					rc = -1;
			}
			if (names && rc == 0 &&
			    json_object_array_add(names, json_object_new_string(snap)) < 0)
				rc = -1;
			propstr_free(&ps);
		}
	}
	for (size_t d = 0; d < n && rc == 0; d++) {
		const char *vol = hw.disks[d].volume;
		if (!vol || hw.disks[d].cdrom || strcmp(vol, "none") == 0)
			continue;
		json_object *names = json_object_object_get(refs, vol);
		if (!names) {
			names = json_object_new_array();
			if (!names || json_object_object_add(refs, vol, names) < 0) {
				rc = -1;
				break;
			}
		}
		if (json_object_array_add(names, json_object_new_string(snap)) < 0)
			rc = -1;
	}
	pvecfg_hw_free(&hw);
	return rc;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* qemu: the volumes snapshots hold, from the precondition's local_disks,
 * which carry referenced_in_snapshot as QemuServer::foreach_volid gives
 * it (API2/Qemu.pm $check_vm_disks_local: no request more), the names
 * sorted. 0, or -1 out of memory. */
static int precondition_refs(json_object *ld, json_object *refs)
{
	for (size_t i = 0; i < json_object_array_length(ld); i++) {
		json_object *d = json_object_array_get_idx(ld, i), *rs = NULL;
		const char *vol = json_str(d, "volid");
		long long cd = 0;
		/* QemuMigrate::scan_local_volumes settles a CD drive's volume
		 * (cloud-init, ISO, the host's drive) before its snapshot rules */
		if (json_int(d, "cdrom", &cd) && cd)
			continue;
		size_t n = json_object_object_get_ex(d, "referenced_in_snapshot", &rs) &&
				   json_object_is_type(rs, json_type_object)
				   ? (size_t)json_object_object_length(rs) : 0;
		if (!vol || !n)
			continue;
		const char **v = calloc(n, sizeof *v);
		json_object *names = json_object_new_array();
		if (!v || !names || json_object_object_add(refs, vol, names) < 0) {
			free(v);
			json_object_put(names);
			return -1;
		}
		size_t k = 0;
		json_object_object_foreach(rs, sn, one)
		{
			(void)one;
			v[k++] = sn;
		}
		qsort(v, k, sizeof *v, name_cmp);
		for (size_t x = 0; x < k; x++)
			if (json_object_array_add(names, json_object_new_string(v[x])) < 0) {
				free(v);
				return -1;
			}
		free(v);
	}
	return 0;
}

/* The volumes g's snapshots hold, as the planner wants them
 * (mig_facts.snapshot_refs), read only when the guest has a snapshot
 * (config "parent"): qemu's from the precondition; a container's, which
 * no precondition says (LXC/Migrate.pm phase1 finds them), from the
 * snapshot list and each snapshot's config. *out NULL when there are
 * none. */
static int snapshot_refs(struct pve *c, const struct guest_ref *g, json_object *config,
			 json_object *pre, json_object **out, struct pve_error *err)
{
	*out = NULL;
	json_object *ld = NULL;
	if (!json_str(config, "parent") ||
	    (g->type == GUEST_QEMU && (!json_object_object_get_ex(pre, "local_disks", &ld) ||
				       !json_object_is_type(ld, json_type_array) ||
				       !json_object_array_length(ld))))
		return 0;
	if (g->type == GUEST_QEMU) {
		json_object *refs = json_object_new_object();
		if (!refs || precondition_refs(ld, refs) < 0) {
			json_object_put(refs);
			return pve_error_oom(err);
		}
		if (json_object_object_length(refs) > 0)
			*out = refs;
		else
			json_object_put(refs);
		return 0;
	}
	char *node = pve_path_escape(g->node);
	json_object *list = NULL, *refs = json_object_new_object();
	int rc = -1;
	if (!node || !refs) {
		pve_error_oom(err);
		goto out;
	}
	const char *type = guest_type_name(g->type);
	if (pve_getf(c, &list, NULL, err, "/nodes/%s/%s/%d/snapshot", node, type, g->vmid) < 0)
		goto out;
	size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = json_str(json_object_array_get_idx(list, i), "name");
		if (!name || strcmp(name, "current") == 0)
			continue;
		char *sn = pve_path_escape(name);
		json_object *sc = NULL;
		int r = sn ? pve_getf(c, &sc, NULL, err, "/nodes/%s/%s/%d/snapshot/%s/config", node,
				      type, g->vmid, sn)
			   : pve_error_oom(err);
		free(sn);
		if (r < 0 || snapshot_volumes(g->type, sc, name, refs) < 0) {
			json_object_put(sc);
			if (r == 0)
				pve_error_oom(err);
			goto out;
		}
		json_object_put(sc);
	}
	if (json_object_object_length(refs) > 0) {
		*out = refs;
		refs = NULL;
	}
	rc = 0;
out:
	free(node);
	json_object_put(list);
	json_object_put(refs);
	return rc;
}

/* PVE 9: the HA stack's armed state, from the fencing entry of GET
 * /cluster/ha/status/current (Sys.Audit on /: without it the state stays
 * unknown and PVE's own answer decides), and the HA rules and resources
 * (node affinity, failback); each read once per run. */
static int ha_armed(struct pve *c, struct mig_cluster *mc, struct mig_facts *f,
		    struct pve_error *err)
{
	json_object *st = NULL;
	if (mig_cluster_ha_status(mc, c, &st, err) < 0 ||
	    mig_cluster_ha_rules(mc, c, &f->ha_rules, err) < 0 ||
	    mig_cluster_ha_resources(mc, c, &f->ha_resources, err) < 0)
		return -1;
	f->ha_status = st;
	size_t n = json_object_is_type(st, json_type_array) ? json_object_array_length(st) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(st, i);
		const char *type = json_str(e, "type");
		if (type && strcmp(type, "fencing") == 0) {
			f->ha_armed_state = json_str(e, "armed-state");
			f->ha_resource_mode = json_str(e, "resource_mode");
		}
	}
	return 0;
}

/* The source node's major version, read when something depends on it (a
 * container's precondition, a VM's qcow2 snapshots, an HA guest): 0 when
 * unknown (before 4). */
static int source_major(struct pve *c, struct mig_cluster *mc, const struct guest_ref *g,
			struct mig_facts *f, int *major, struct pve_error *err)
{
	if (!f->source_version &&
	    mig_cluster_version(mc, c, g->node, g->type == GUEST_LXC, &f->source_version, err) < 0)
		return -1;
	*major = f->source_version ? f->source_version->major : 0;
	return 0;
}

int mig_read_guest(struct pve *c, struct mig_cluster *mc, const struct guest_ref *g,
		   const char *target, struct mig_read *r, struct mig_facts *f,
		   struct pve_error *err)
{
	json_object *ha = NULL;
	long long mem = 0, managed = 0;
	int major = 0;
	char *node = pve_path_escape(g->node);
	int rc = -1;
	memset(r, 0, sizeof *r);
	f->type = g->type;
	f->vmid = g->vmid;
	f->source = g->node;
	if (!node) {
		pve_error_oom(err);
		goto out;
	}
	if (pve_getf(c, &r->status, NULL, err, "/nodes/%s/%s/%d/status/current", node,
		     guest_type_name(g->type), g->vmid) < 0 ||
	    guest_get_config(c, g, &r->config, err) < 0)
		goto out;
	const char *st = json_str(r->status, "status");
	f->running = st && strcmp(st, "running") == 0;
	if (json_int(r->status, "maxmem", &mem) && mem > 0)
		f->memory = (uint64_t)mem;
	f->ha_managed = json_object_object_get_ex(r->status, "ha", &ha) &&
			json_int(ha, "managed", &managed) && managed;
	f->running_machine = f->running && g->type == GUEST_QEMU
				     ? json_str(r->status, "running-machine") : NULL;
	f->config = r->config;
	/* the precondition: qemu's; LXC's own from PVE 9 */
	if (g->type == GUEST_LXC && source_major(c, mc, g, f, &major, err) < 0)
		goto out;
	if (g->type == GUEST_QEMU || (g->type == GUEST_LXC && major >= 9)) {
		struct pve_params q = {0};
		if (target)
			pve_params_add(&q, "target", target);
		int x = pve_getf(c, &r->pre, &q, err, "/nodes/%s/%s/%d/migrate", node,
				 guest_type_name(g->type), g->vmid);
		pve_params_free(&q);
		if (x < 0 && g->type == GUEST_LXC && err->kind == PVE_ERR_NOT_IMPLEMENTED) {
			/* a node whose API has no LXC precondition after all (an
			 * upgraded node answering from an 8.x API): as on PVE 8 */
			pve_error_clear(err);
			x = 0;
		}
		if (x < 0)
			goto out;
		f->precondition = r->pre;
	}
	if (g->type != GUEST_OPENVZ) {
		if (snapshot_refs(c, g, r->config, r->pre, &r->snaps, err) < 0)
			goto out;
		f->snapshot_refs = r->snaps;
		/* PVE 9: whether a stopped VM's qcow2 snapshots sit in a volume
		 * chain (a running one's cannot move whatever the storage) */
		bool qcow2 = false;
		if (r->snaps && g->type == GUEST_QEMU && !f->running) {
			json_object_object_foreach(r->snaps, vol, names)
			{
				(void)names;
				size_t l = strlen(vol);
				qcow2 |= l > 6 && strcmp(vol + l - 6, ".qcow2") == 0;
			}
		}
		if (qcow2 && source_major(c, mc, g, f, &major, err) < 0)
			goto out;
		if (qcow2 && major >= 9) {
			if (pve_get(c, "/storage", NULL, &r->storages, err) < 0)
				goto out;
			f->storage_config = r->storages;
		}
	}
	if (f->ha_managed && g->type != GUEST_OPENVZ &&
	    (source_major(c, mc, g, f, &major, err) < 0 ||
	     (major >= 9 && ha_armed(c, mc, f, err) < 0)))
		goto out;
	rc = 0;
out:
	free(node);
	return rc;
}

/* The target in the node list: known, online, free memory. */
static void target_node(json_object *nodes, struct mig_facts *f)
{
	size_t n = json_object_is_type(nodes, json_type_array) ? json_object_array_length(nodes) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(nodes, i);
		const char *name = json_str(e, "node"), *st = json_str(e, "status");
		if (!name || strcmp(name, f->target) != 0)
			continue;
		long long maxmem = 0, mem = 0;
		json_int(e, "maxmem", &maxmem);
		json_int(e, "mem", &mem);
		f->target_known = true;
		f->target_online = st && strcmp(st, "online") == 0;
		f->target_mem_free = maxmem > mem ? (uint64_t)(maxmem - mem) : 0;
	}
}

int mig_read_target(struct pve *c, struct mig_cluster *mc, struct mig_facts *f,
		    json_object **storages, struct pve_error *err)
{
	*storages = NULL;
	json_object *nodes = mig_cluster_nodes_known(mc), *own = NULL;
	if (!nodes && pve_get(c, "/nodes", NULL, &own, err) < 0)
		return -1;
	target_node(nodes ? nodes : own, f);
	json_object_put(own);
	if (!f->target_online)
		return 0;
	char *tn = pve_path_escape(f->target);
	int r = tn ? pve_getf(c, storages, NULL, err, "/nodes/%s/storage", tn) : pve_error_oom(err);
	free(tn);
	if (r < 0)
		return -1;
	f->target_storages = *storages;
	/* a live migration of a VM: the machine types the target runs decide
	 * (the versions only when those cannot be read) */
	if (!f->running || f->type == GUEST_OPENVZ)
		return 0;
	if (f->type == GUEST_QEMU && f->running_machine &&
	    mig_cluster_machines(mc, c, f->target, &f->target_machines, err) < 0)
		return -1;
	if (f->type == GUEST_LXC || f->target_machines)
		return 0;
	return mig_cluster_version(mc, c, f->source, false, &f->source_version, err) < 0 ||
			       mig_cluster_version(mc, c, f->target, false, &f->target_version, err) < 0
		       ? -1 : 0;
}
