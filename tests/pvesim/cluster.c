/* cluster.c - the cluster model's core: simapi.h entry points (load, free,
 * credentials, cluster_handle dispatch, cluster_state) and the helpers the
 * route files share: lookups, memory/storage accounting, drive and property
 * strings, volumes, sizes, config digests, responses, privileges, params. */
#include "cluster.h"

#include "acl.h"
#include "bootfacts.h"
#include "cluster_config.h"
#include "guestnet.h"
#include "ha_crm.h"
#include "nodelife.h"
#include "qemu_guest.h"
#include "scenario.h"
#include "tasks.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- ptrvec ------------------------------------------------------------- */
int ptrvec_push(struct ptrvec *pv, void *p)
{
	if (pv->n == pv->cap) {
		size_t cap = pv->cap ? pv->cap * 2 : 8;
		void **v = realloc(pv->v, cap * sizeof(*v));
		if (!v)
			return -1;
		pv->v = v;
		pv->cap = cap;
	}
	pv->v[pv->n++] = p;
	return 0;
}

void ptrvec_remove(struct ptrvec *pv, size_t i)
{
	if (i >= pv->n)
		return;
	memmove(pv->v + i, pv->v + i + 1, (pv->n - i - 1) * sizeof(*pv->v));
	pv->n--;
}

void ptrvec_free(struct ptrvec *pv)
{
	free(pv->v);
	pv->v = NULL;
	pv->n = pv->cap = 0;
}

/* ---- lookups and accounting --------------------------------------------- */
struct sim_node *cluster_node(const struct cluster *c, const char *name)
{
	for (size_t i = 0; name && i < c->nodes.n; i++) {
		struct sim_node *n = c->nodes.v[i];
		if (strcmp(n->name, name) == 0)
			return n;
	}
	return NULL;
}

struct sim_storage *cluster_storage(const struct cluster *c, const char *id)
{
	for (size_t i = 0; id && i < c->storages.n; i++) {
		struct sim_storage *s = c->storages.v[i];
		if (strcmp(s->id, id) == 0)
			return s;
	}
	return NULL;
}

struct sim_guest *cluster_guest(const struct cluster *c, int vmid)
{
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		if (g->vmid == vmid)
			return g;
	}
	return NULL;
}

struct sim_volume *cluster_volume(const struct cluster *c, const char *volid,
				  const char *node)
{
	for (size_t i = 0; volid && i < c->volumes.n; i++) {
		struct sim_volume *v = c->volumes.v[i];
		if (strcmp(v->volid, volid) != 0)
			continue;
		if (!v->node || !node || strcmp(v->node, node) == 0)
			return v;
	}
	return NULL;
}

bool storage_on_node(const struct sim_storage *s, const char *node)
{
	size_t n = json_object_array_length(s->nodes);
	for (size_t i = 0; i < n; i++) {
		const char *x =
			json_object_get_string(json_object_array_get_idx(s->nodes, i));
		if (x && node && strcmp(x, node) == 0)
			return true;
	}
	return false;
}

bool storage_has_content(const struct sim_storage *s, const char *content)
{
	size_t l = strlen(content);
	const char *p = s->content;
	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == l && strncmp(p, content, l) == 0)
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

uint64_t storage_used(const struct cluster *c, const struct sim_storage *s,
		      const char *node)
{
	uint64_t used = 0;
	for (size_t i = 0; i < c->volumes.n; i++) {
		const struct sim_volume *v = c->volumes.v[i];
		if (strcmp(v->storage, s->id) != 0)
			continue;
		if (!s->shared && node && v->node && strcmp(v->node, node) != 0)
			continue;
		used += v->size;
	}
	return used;
}

uint64_t guest_memory(const struct sim_guest *g)
{
	const char *m = cfg_str(g->config, "memory");
	long long mib = 512;
	if (m) {
		/* PVE 8 memory may be a property string "current=2048" */
		const char *eq = strchr(m, '=');
		mib = strtoll(eq ? eq + 1 : m, NULL, 10);
	}
	if (mib <= 0)
		mib = 512;
	return (uint64_t)mib * MiB;
}

uint64_t node_mem_used(const struct cluster *c, const char *node)
{
	uint64_t used = 0;
	for (size_t i = 0; i < c->guests.n; i++) {
		const struct sim_guest *g = c->guests.v[i];
		if (g->running && strcmp(g->node, node) == 0)
			used += guest_memory(g);
	}
	/* a running guest migrating here holds its memory on both nodes until
	 * the migration ends (the target's QEMU or container is up) */
	for (size_t i = 0; i < c->tasks.n; i++) {
		const struct sim_task *t = c->tasks.v[i];
		const struct sim_guest *g = t->vmid ? cluster_guest(c, t->vmid) : NULL;
		if (!t->finished && t->target && strcmp(t->target, node) == 0 && g && g->running &&
		    strcmp(g->node, node) != 0 &&
		    (strcmp(t->type, "qmigrate") == 0 || strcmp(t->type, "vzmigrate") == 0))
			used += guest_memory(g);
	}
	return used;
}

const char *cfg_str(json_object *conf, const char *key)
{
	json_object *v;
	if (!conf || !json_object_object_get_ex(conf, key, &v) || !v)
		return NULL;
	return json_object_get_string(v);
}

bool guest_is_template(const struct sim_guest *g)
{
	const char *t = cfg_str(g->config, "template");
	return t && strcmp(t, "1") == 0;
}

const char *guest_name(const struct sim_guest *g)
{
	const char *n = cfg_str(g->config, "name");
	if (!n)
		n = cfg_str(g->config, "hostname");
	return n;
}

const char *guest_status_name(const struct sim_guest *g, char *buf, size_t n)
{
	const char *nm = guest_name(g);
	if (nm)
		return nm;
	snprintf(buf, n, strcmp(g->type, "qemu") == 0 ? "VM %d" : "CT%d", g->vmid);
	return buf;
}

const char *guest_lock(const struct sim_guest *g)
{
	return cfg_str(g->config, "lock");
}

int guest_set_lock(struct sim_guest *g, const char *lock)
{
	if (!lock) {
		json_object_object_del(g->config, "lock");
		return 0;
	}
	json_object *s = json_object_new_string(lock);
	if (!s)
		return -1;
	return json_object_object_add(g->config, "lock", s);
}

void guest_free(struct sim_guest *g)
{
	if (!g)
		return;
	free(g->type);
	free(g->node);
	json_object_put(g->config);
	json_object_put(g->pending);
	json_object_put(g->pending_delete);
	json_object_put(g->snapshots);
	json_object_put(g->cloudinit);
	free(g->fixture);
	free(g->machine);
	free(g->address);
	free(g->root);
	free(g->res_name);
	boot_result_clear(&g->boot);
	qemu_guest_free(g->qemu);
	free(g);
}

int cluster_remove_guest(struct cluster *c, int vmid)
{
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		if (g->vmid != vmid)
			continue;
		ptrvec_remove(&c->guests, i);
		guest_free(g);
		return 0;
	}
	return -1;
}

static void eval_boot(struct sim_guest *g)
{
	boot_result_clear(&g->boot);
	if (!g->running) {
		g->boot.state = BOOT_STOPPED;
		return;
	}
	if (strcmp(g->type, "qemu") != 0 || !g->fixture) {
		/* containers and fixture-less guests: up when running */
		g->boot.state = BOOT_UP;
		g->boot.reachable = g->address != NULL;
		return;
	}
	if (bootmodel_eval(g->fixture, g->root, g->config, &g->boot) < 0) {
		boot_result_clear(&g->boot);
		g->boot.state = BOOT_NO_NETWORK;
		g->boot.reason = strdup("boot model failed (out of memory)");
	}
	if (!g->address)
		g->boot.reachable = false;
}

void guest_eval_boot(struct sim_guest *g)
{
	eval_boot(g);
	char *err = NULL;
	if (g->root && bootfacts_write(g->root, &g->boot, g->address, g->boots, &err) < 0)
		fprintf(stderr, "pvesim: guest %d: %s\n", g->vmid, err ? err : "out of memory");
	free(err);
}

/* ---- digest ------------------------------------------------------------- */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *config_digest(json_object *conf)
{
	size_t n = 0;
	json_object_object_foreach(conf, k0, v0)
	{
		(void)k0;
		(void)v0;
		n++;
	}
	const char **keys = calloc(n ? n : 1, sizeof(*keys));
	if (!keys)
		return NULL;
	size_t i = 0;
	json_object_object_foreach(conf, k1, v1)
	{
		(void)v1;
		keys[i++] = k1;
	}
	qsort(keys, n, sizeof(*keys), cmp_str);
	struct sbuf b = {0};
	int rc = 0;
	for (i = 0; i < n && rc == 0; i++)
		rc = sbuf_addf(&b, "%s: %s\n", keys[i], cfg_str(conf, keys[i]));
	free(keys);
	unsigned char md[20];
	if (rc < 0 || gnutls_hash_fast(GNUTLS_DIG_SHA1, sbuf_str(&b), b.len,
				       md) < 0) {
		sbuf_free(&b);
		return NULL;
	}
	sbuf_free(&b);
	char *hex = malloc(41);
	if (!hex)
		return NULL;
	for (i = 0; i < 20; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return hex;
}

/* ---- drive and property strings ----------------------------------------- */
static bool key_with_index(const char *key, const char *prefix, int max)
{
	size_t l = strlen(prefix);
	if (strncmp(key, prefix, l) != 0 || !isdigit((unsigned char)key[l]))
		return false;
	char *end;
	long n = strtol(key + l, &end, 10);
	if (*end || n < 0 || n > max)
		return false;
	return !(key[l] == '0' && key[l + 1]);
}

bool is_unused_key(const char *key)
{
	return key_with_index(key, "unused", 255);
}

bool is_drive_key(const char *key)
{
	return key_with_index(key, "ide", 3) || key_with_index(key, "sata", 5) ||
	       key_with_index(key, "scsi", 30) ||
	       key_with_index(key, "virtio", 15) ||
	       strcmp(key, "efidisk0") == 0 || strcmp(key, "tpmstate0") == 0 ||
	       strcmp(key, "rootfs") == 0 || key_with_index(key, "mp", 255);
}

char *drive_volid(const char *value)
{
	const char *e = strchr(value, ',');
	size_t n = e ? (size_t)(e - value) : strlen(value);
	const char *p = value;
	if (n > 5 && strncmp(p, "file=", 5) == 0) {
		p += 5;
		n -= 5;
	} else if (n > 7 && strncmp(p, "volume=", 7) == 0) {
		p += 7;
		n -= 7;
	}
	return strndup(p, n);
}

char *prop_get(const char *value, const char *key)
{
	size_t kl = strlen(key);
	const char *p = value;
	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n > kl && strncmp(p, key, kl) == 0 && p[kl] == '=')
			return strndup(p + kl + 1, n - kl - 1);
		p = e ? e + 1 : NULL;
	}
	return NULL;
}

char *prop_set(const char *value, const char *key, const char *newval)
{
	struct sbuf b = {0};
	size_t kl = strlen(key);
	bool done = false;
	int rc = 0;
	const char *p = value;
	while (p && *p && rc == 0) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (b.len)
			rc = sbuf_addc(&b, ',');
		if (rc == 0 && n > kl && strncmp(p, key, kl) == 0 &&
		    p[kl] == '=') {
			rc = sbuf_addf(&b, "%s=%s", key, newval);
			done = true;
		} else if (rc == 0) {
			rc = sbuf_addn(&b, p, n);
		}
		p = e ? e + 1 : NULL;
	}
	if (rc == 0 && !done)
		rc = sbuf_addf(&b, "%s%s=%s", b.len ? "," : "", key, newval);
	if (rc < 0) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

bool drive_is_cdrom(const char *value)
{
	char *m = prop_get(value, "media");
	bool cd = m && strcmp(m, "cdrom") == 0;
	free(m);
	if (!cd) {
		char *vol = drive_volid(value);
		cd = vol && (strcmp(vol, "none") == 0 || strcmp(vol, "cdrom") == 0 ||
			     strstr(vol, ":iso/") != NULL);
		free(vol);
	}
	return cd;
}

bool drive_is_cloudinit(const char *value)
{
	char *vol = drive_volid(value);
	bool ci = vol && (strstr(vol, ":cloudinit") != NULL ||
			  strstr(vol, "-cloudinit") != NULL);
	free(vol);
	return ci;
}

int parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return -1;
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	uint64_t mult = 1;
	switch (*end) {
	case '\0': mult = 1; break;
	case 'K': case 'k': mult = 1024; end++; break;
	case 'M': case 'm': mult = MiB; end++; break;
	case 'G': case 'g': mult = GiB; end++; break;
	case 'T': case 't': mult = 1024 * GiB; end++; break;
	default: return -1;
	}
	if (*end)
		return -1;
	return bytes_of(v, mult, out); /* strtod takes "inf" and "nan" */
}

int bytes_of(double n, uint64_t unit, uint64_t *out)
{
	double b = n * (double)unit;
	if (!(b >= 0 && b < 18446744073709551616.0))
		return -1;
	*out = (uint64_t)b;
	return 0;
}

char *format_size(uint64_t bytes)
{
	if (bytes >= 1024 * GiB && bytes % (1024 * GiB) == 0)
		return strprintf("%" PRIu64 "T", (uint64_t)(bytes / (1024 * GiB)));
	if (bytes % GiB == 0)
		return strprintf("%" PRIu64 "G", (uint64_t)(bytes / GiB));
	if (bytes % MiB == 0)
		return strprintf("%" PRIu64 "M", (uint64_t)(bytes / MiB));
	return strprintf("%" PRIu64, bytes);
}

char *human_bytes(uint64_t bytes)
{
	const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		return strprintf("%" PRIu64 " B", bytes);
	return strprintf("%.1f %s", v, unit[u]);
}

char *volid_storage(const char *volid)
{
	const char *colon = strchr(volid, ':');
	if (!colon)
		return NULL;
	return strndup(volid, (size_t)(colon - volid));
}

static bool storage_is_file(const struct sim_storage *s)
{
	return strcmp(s->type, "dir") == 0 || strcmp(s->type, "nfs") == 0 ||
	       strcmp(s->type, "cifs") == 0 || strcmp(s->type, "cephfs") == 0;
}

bool storage_can_snapshot(const struct sim_storage *s, const char *format)
{
	if (storage_is_file(s))
		return format && strcmp(format, "qcow2") == 0;
	/* btrfs: subvolume snapshots of raw files too; zfs: ZFS over iSCSI */
	return strcmp(s->type, "lvmthin") == 0 || strcmp(s->type, "rbd") == 0 ||
	       strcmp(s->type, "zfspool") == 0 || strcmp(s->type, "btrfs") == 0 ||
	       strcmp(s->type, "zfs") == 0;
}

void volume_free(struct sim_volume *v)
{
	if (!v)
		return;
	free(v->volid);
	free(v->storage);
	free(v->node);
	free(v->content);
	free(v->format);
	free(v->sums);
	if (v->path && unlink(v->path) < 0 && errno != ENOENT)
		fprintf(stderr, "pvesim: cannot remove %s: %s\n", v->path, strerror(errno));
	free(v->path);
	free(v);
}

struct sim_volume *volume_add(struct cluster *c, const char *volid,
			      const char *node, int vmid, uint64_t size,
			      const char *content)
{
	char *sid = volid_storage(volid);
	struct sim_storage *s = sid ? cluster_storage(c, sid) : NULL;
	if (!s) {
		free(sid);
		return NULL;
	}
	struct sim_volume *v = calloc(1, sizeof(*v));
	if (!v) {
		free(sid);
		return NULL;
	}
	v->volid = strdup(volid);
	v->storage = sid;
	v->node = (!s->shared && node) ? strdup(node) : NULL;
	v->content = strdup(content ? content : "images");
	const char *fmt = "raw";
	if (strstr(volid, ".qcow2"))
		fmt = "qcow2";
	else if (strstr(volid, ".vmdk"))
		fmt = "vmdk";
	else if (strstr(volid, ":iso/"))
		fmt = "iso";
	else if (strstr(volid, ":vztmpl/"))
		fmt = strstr(volid, ".tar.zst") ? "tzst" : "tgz";
	else if (strstr(volid, "subvol-"))
		fmt = "subvol";
	v->format = strdup(fmt);
	v->vmid = vmid;
	v->size = size;
	if (!v->volid || !v->content || !v->format ||
	    (!s->shared && node && !v->node) || ptrvec_push(&c->volumes, v) < 0) {
		volume_free(v);
		return NULL;
	}
	return v;
}

void volume_remove(struct cluster *c, struct sim_volume *v)
{
	for (size_t i = 0; i < c->volumes.n; i++) {
		if (c->volumes.v[i] == v) {
			ptrvec_remove(&c->volumes, i);
			volume_free(v);
			return;
		}
	}
}

const char *volume_alloc(struct cluster *c, struct sim_storage *s,
			 const char *node, int vmid, uint64_t size,
			 const char *base, const char *content)
{
	bool file = storage_is_file(s);
	for (int n = 0; n < 10000; n++) {
		char *name;
		if (file)
			name = strprintf("%s:%d/%s-%d-disk-%d.%s", s->id, vmid, base,
					 vmid, n,
					 strcmp(base, "subvol") == 0 ? "raw" : "qcow2");
		else
			name = strprintf("%s:%s-%d-disk-%d", s->id, base, vmid, n);
		if (!name)
			return NULL;
		/* a disk number is taken if any volume of that vmid uses it */
		bool taken = false;
		for (size_t i = 0; i < c->volumes.n && !taken; i++) {
			struct sim_volume *v = c->volumes.v[i];
			if (strcmp(v->storage, s->id) != 0)
				continue;
			char *tail = strprintf("-%d-disk-%d", vmid, n);
			if (tail && strstr(v->volid, tail))
				taken = true;
			free(tail);
		}
		if (taken) {
			free(name);
			continue;
		}
		struct sim_volume *v = volume_add(c, name, node, vmid, size, content);
		free(name);
		return v ? v->volid : NULL;
	}
	return NULL;
}

/* ---- responses, privileges, parameters ---------------------------------- */
void resp_error(struct sim_resp *r, int status, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	json_object_put(r->data);
	r->data = NULL;
	free(r->message);
	r->status = status;
	r->message = rc < 0 ? NULL : sbuf_steal(&b);
	sbuf_free(&b);
}

void resp_param_error(struct sim_resp *r, const char *param, const char *fmt,
		      ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	resp_error(r, 400, "Parameter verification failed.");
	json_object_put(r->errors);
	r->errors = json_object_new_object();
	if (r->errors && rc == 0)
		json_object_object_add(r->errors, param,
				       json_object_new_string(sbuf_str(&b)));
	sbuf_free(&b);
}

void resp_data(struct sim_resp *r, json_object *data)
{
	json_object_put(r->data);
	r->data = data;
	r->status = 200;
}

bool priv_has(const struct sim_req *req, const char *path, const char *priv)
{
	const char *p = req->privs;
	if (!p)
		return req->acl && acl_check(req->acl, req->userid, path, priv);
	if (strcmp(p, "all") == 0)
		return true;
	size_t l = strlen(priv);
	while (*p) {
		while (*p == ',' || *p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ',' && *e != ' ')
			e++;
		if ((size_t)(e - p) == l && strncmp(p, priv, l) == 0)
			return true;
		p = e;
	}
	return false;
}

bool priv_check(const struct sim_req *req, struct sim_resp *r,
		const char *path, const char *priv)
{
	if (priv_has(req, path, priv))
		return true;
	resp_error(r, 403, "Permission check failed (%s, %s)", path, priv);
	return false;
}

bool priv_check_any(const struct sim_req *req, struct sim_resp *r, const char *path,
		    const char *const *privs)
{
	struct sbuf b = {0};
	for (size_t i = 0; privs[i]; i++) {
		if (priv_has(req, path, privs[i])) {
			sbuf_free(&b);
			return true;
		}
		if ((i && sbuf_addc(&b, '|') < 0) || sbuf_add(&b, privs[i]) < 0) {
			sbuf_free(&b);
			resp_error(r, 500, "out of memory");
			return false;
		}
	}
	resp_error(r, 403, "Permission check failed (%s, %s)", path, sbuf_str(&b));
	sbuf_free(&b);
	return false;
}

const char *param_str(const struct sim_req *req, const char *name)
{
	json_object *v;
	if (!req->params || !json_object_object_get_ex(req->params, name, &v) ||
	    !v)
		return NULL;
	return json_object_get_string(v);
}

bool param_bool(const struct sim_req *req, const char *name, bool def)
{
	json_object *v;
	if (!req->params || !json_object_object_get_ex(req->params, name, &v) ||
	    !v)
		return def;
	if (json_object_is_type(v, json_type_boolean))
		return json_object_get_boolean(v);
	const char *s = json_object_get_string(v);
	if (!s)
		return def;
	return strcmp(s, "1") == 0 || strcmp(s, "true") == 0 ||
	       strcmp(s, "yes") == 0 || strcmp(s, "on") == 0;
}

long long param_int(const struct sim_req *req, const char *name, long long def)
{
	const char *s = param_str(req, name);
	if (!s || !*s)
		return def;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return def;
	return v;
}

int path_split(const char *path, struct path_parts *pp)
{
	pp->seg = NULL;
	pp->n = 0;
	struct ptrvec v = {0};
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char *s = strndup(p, n);
		if (!s || ptrvec_push(&v, s) < 0) {
			free(s);
			for (size_t i = 0; i < v.n; i++)
				free(v.v[i]);
			ptrvec_free(&v);
			return -1;
		}
		p += n;
	}
	pp->seg = (char **)v.v;
	pp->n = v.n;
	return 0;
}

void path_parts_free(struct path_parts *pp)
{
	for (size_t i = 0; i < pp->n; i++)
		free(pp->seg[i]);
	free(pp->seg);
	pp->seg = NULL;
	pp->n = 0;
}

struct sim_node *route_node(struct cluster *c, const char *name,
			    struct sim_resp *r)
{
	struct sim_node *n = cluster_node(c, name);
	if (!n) {
		resp_error(r, 500,
			   "hostname lookup '%s' failed - failed to get address "
			   "info for: %s: Name or service not known",
			   name, name);
		return NULL;
	}
	if (!n->online) {
		resp_error(r, 595, "Connection refused");
		return NULL;
	}
	return n;
}

struct sim_guest *route_guest(struct cluster *c, const char *node,
			      const char *vmid, const char *type,
			      struct sim_resp *r)
{
	char *end;
	long id = strtol(vmid, &end, 10);
	struct sim_guest *g = NULL;
	if (!*end && id > 0)
		g = cluster_guest(c, (int)id);
	if (g && strcmp(g->node, node) == 0 && strcmp(g->type, type) == 0)
		return g;
	const char *dir = strcmp(type, "qemu") == 0 ? "qemu-server" : type;
	resp_error(r, 500, "Configuration file 'nodes/%s/%s/%s.conf' does not exist",
		   node, dir, vmid);
	return NULL;
}

bool guest_check_lock(const struct sim_req *req, const struct sim_guest *g,
		      struct sim_resp *r)
{
	const char *lock = guest_lock(g);
	if (!lock || param_bool(req, "skiplock", false))
		return true;
	resp_error(r, 500, "%s is locked (%s)",
		   strcmp(g->type, "qemu") == 0 ? "VM" : "CT", lock);
	return false;
}

/* A guest comes up with an address: a qemu guest with a fixture takes
 * cloud-init's static ipconfig0 if it has one; a container whose net0 asks
 * for DHCP (ip=dhcp) and a qemu guest without a static address keep the
 * one they had, else take a spare guest of their fixture (--spare-guest:
 * its address and root), else get the next free loopback address from
 * 127.0.1.100 (as DHCP would hand out). A container with a static ip= is answered
 * from its config (routes_ct.c) and gets nothing here. */
static void guest_assign_address(struct cluster *c, struct sim_guest *g)
{
	bool qemu = strcmp(g->type, "qemu") == 0;
	if (qemu && !g->fixture && !g->qemu)
		return;
	if (!qemu) {
		const char *net = cfg_str(g->config, "net0");
		char *cip = net ? prop_get(net, "ip") : NULL;
		bool dhcp = cip && strcmp(cip, "dhcp") == 0;
		free(cip);
		if (!dhcp)
			return;
	}
	const char *ipc = qemu ? cfg_str(g->config, "ipconfig0") : NULL;
	char *ip = ipc ? prop_get(ipc, "ip") : NULL;
	if (ip && strcmp(ip, "dhcp") != 0) {
		ip[strcspn(ip, "/")] = '\0';
		free(g->address);
		g->address = ip;
		return;
	}
	free(ip);
	if (g->qemu)
		return; /* a QEMU process keeps the address its forward had */
	if (qemu && !g->root && !g->address) { /* a spare guest (--spare-guest) */
		for (size_t i = 0; i < c->spares.n; i++) {
			struct sim_spare *sp = c->spares.v[i];
			if (sp->vmid || strcmp(sp->fixture, g->fixture) != 0)
				continue;
			char *addr = strdup(sp->addr), *root = strdup(sp->root);
			if (!addr || !root) {
				free(addr);
				free(root);
				break; /* out of memory: no spare, an address as below */
			}
			g->address = addr;
			g->root = root;
			sp->vmid = g->vmid;
			return;
		}
	}
	if (!g->address)
		g->address = cluster_unused_address(c, "127.0.1", 100);
}

char *cluster_unused_address(const struct cluster *c, const char *net24, int from)
{
	for (int n = from; n < 255; n++) {
		char *cand = strprintf("%s.%d", net24, n);
		bool used = false;
		for (size_t i = 0; cand && i < c->guests.n && !used; i++) {
			const struct sim_guest *o = c->guests.v[i];
			used = o->address && strcmp(o->address, cand) == 0;
		}
		if (!cand || !used)
			return cand;
		free(cand);
	}
	return NULL;
}

void guest_started(struct cluster *c, struct sim_guest *g, double now)
{
	config_apply_pending(c, g);
	guest_assign_address(c, g);
	g->running = true;
	g->started_at = now;
	g->boots++;
	free(g->machine);
	g->machine = NULL;
	char mb[64];
	if (strcmp(g->type, "qemu") == 0)
		g->machine = strdup(guest_running_machine(c, g, mb, sizeof mb));
	guest_eval_boot(g);
	char *qerr = NULL;
	if (g->qemu && qemu_guest_start(g, &qerr) < 0) {
		fprintf(stderr, "pvesim: VM %d: QEMU not started: %s\n", g->vmid, qerr ? qerr : "?");
		g->running = false;
	}
	free(qerr);
}

void guest_stopped(struct cluster *c, struct sim_guest *g)
{
	g->running = false;
	qemu_guest_kill(g->qemu);
	config_apply_pending(c, g);
	guest_eval_boot(g);
}

uint64_t node_mem_free(const struct cluster *c, const struct sim_node *n)
{
	uint64_t used = node_mem_used(c, n->name) + 1 * GiB;
	return n->memory > used ? n->memory - used : 0;
}

char *vm_path(int vmid)
{
	return strprintf("/vms/%d", vmid);
}

void jadd_str(json_object *o, const char *key, const char *val)
{
	json_object_object_add(o, key, val ? json_object_new_string(val) : NULL);
}

void jadd_int(json_object *o, const char *key, long long val)
{
	json_object_object_add(o, key, json_object_new_int64(val));
}

json_object *subdir_index(const char *key, const char *const *names, size_t n)
{
	json_object *arr = json_object_new_array();
	for (size_t i = 0; arr && i < n; i++) {
		json_object *o = json_object_new_object();
		if (!o)
			continue;
		jadd_str(o, key, names[i]);
		json_object_array_add(arr, o);
	}
	return arr;
}

bool vm_priv_check(const struct sim_req *req, struct sim_resp *r, int vmid,
		   const char *priv)
{
	char *p = vm_path(vmid);
	bool ok = p && priv_check(req, r, p, priv);
	if (!p)
		resp_error(r, 500, "out of memory");
	free(p);
	return ok;
}

bool vm_priv_has(const struct sim_req *req, int vmid, const char *priv)
{
	char p[32];
	snprintf(p, sizeof p, "/vms/%d", vmid);
	return priv_has(req, p, priv);
}

struct sim_guest *guest_new(int vmid, const char *type, const char *node)
{
	struct sim_guest *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->vmid = vmid;
	g->type = strdup(type);
	g->node = strdup(node);
	g->config = json_object_new_object();
	g->pending = json_object_new_object();
	g->pending_delete = json_object_new_array();
	g->snapshots = json_object_new_object();
	g->res_at = -1;
	if (!g->type || !g->node || !g->config || !g->pending ||
	    !g->pending_delete || !g->snapshots) {
		guest_free(g);
		return NULL;
	}
	return g;
}

void cluster_destroy_guest(struct cluster *c, int vmid)
{
	for (size_t i = c->volumes.n; i-- > 0;) {
		struct sim_volume *v = c->volumes.v[i];
		if (v->vmid == vmid && strcmp(v->content, "vztmpl") != 0 &&
		    strcmp(v->content, "iso") != 0)
			volume_remove(c, v);
	}
	cluster_remove_guest(c, vmid);
}

void cluster_status_update(struct cluster *c, double now, bool force)
{
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		if (g->res_at < 0 && !force) {
			/* in the cluster's VM list from now on, not yet sampled */
			g->res_at = now;
			continue;
		}
		double since = floor((g->res_at - c->boot_time) / STATUS_PERIOD);
		if (!force && floor((now - c->boot_time) / STATUS_PERIOD) <= since)
			continue;
		char nbuf[32];
		const char *name = guest_status_name(g, nbuf, sizeof nbuf);
		char *nm = name ? strdup(name) : NULL;
		if (name && !nm)
			continue; /* out of memory: next time */
		free(g->res_name);
		g->res_name = nm;
		g->res_running = g->running;
		g->res_seen = true;
		g->res_at = now;
	}
}

json_object *cluster_ha_entry(const struct cluster *c, const char *sid)
{
	size_t n = json_object_array_length(c->ha);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(c->ha, i);
		const char *s = cfg_str(e, "sid");
		if (s && strcmp(s, sid) == 0)
			return e;
	}
	return NULL;
}

const char *cluster_ha_state(const struct cluster *c, const struct sim_guest *g)
{
	char sid[32];
	snprintf(sid, sizeof(sid), "%s:%d",
		 strcmp(g->type, "qemu") == 0 ? "vm" : "ct", g->vmid);
	return cfg_str(cluster_ha_entry(c, sid), "state");
}

const char *cluster_ha_managed(const struct cluster *c, const struct sim_guest *g)
{
	const char *st = cluster_ha_state(c, g);
	if (!st || strcmp(st, "ignored") == 0 || (c->ha_disarm && strcmp(c->ha_disarm, "ignore") == 0))
		return NULL;
	return st;
}

/* ---- simapi.h entry points ---------------------------------------------- */
static void cred_free(struct sim_cred *cr)
{
	if (!cr)
		return;
	free(cr->id);
	free(cr->secret);
	free(cr);
}

void cluster_free(struct cluster *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nodes.n; i++) {
		struct sim_node *n = c->nodes.v[i];
		free(n->name);
		free(n->ip);
		free(n->version);
		node_life_free(n);
		free(n);
	}
	for (size_t i = 0; i < c->storages.n; i++) {
		struct sim_storage *s = c->storages.v[i];
		free(s->id);
		free(s->type);
		free(s->content);
		json_object_put(s->nodes);
		free(s);
	}
	for (size_t i = 0; i < c->volumes.n; i++)
		volume_free(c->volumes.v[i]);
	for (size_t i = 0; i < c->guests.n; i++)
		guest_free(c->guests.v[i]);
	for (size_t i = 0; i < c->tokens.n; i++)
		cred_free(c->tokens.v[i]);
	for (size_t i = 0; i < c->users.n; i++)
		cred_free(c->users.v[i]);
	for (size_t i = 0; i < c->tasks.n; i++)
		task_free(c->tasks.v[i]);
	for (size_t i = 0; i < c->spares.n; i++) {
		struct sim_spare *sp = c->spares.v[i];
		free(sp->fixture);
		free(sp->addr);
		free(sp->root);
		free(sp);
	}
	ptrvec_free(&c->spares);
	ptrvec_free(&c->nodes);
	ptrvec_free(&c->storages);
	ptrvec_free(&c->volumes);
	ptrvec_free(&c->guests);
	ptrvec_free(&c->tokens);
	ptrvec_free(&c->users);
	ptrvec_free(&c->tasks);
	acl_free(c->acl);
	json_object_put(c->ha);
	json_object_put(c->ha_rules);
	json_object_put(c->ha_ss);
	free(c->ha_disarm);
	json_object_put(c->faults);
	json_object_put(c->appliances);
	json_object_put(c->sdn_vnets);
	json_object_put(c->datacenter);
	ceph_free(c->ceph);
	json_object_put(c->node_commands);
	free(c->files_dir);
	free(c->scenario_path);
	free(c->version);
	free(c->cluster_name);
	free(c);
}

/* --guest-root: an existing directory, made absolute. */
static int set_root(struct cluster *c, const struct sim_guest_root *gr, char **err)
{
	struct sim_guest *g = cluster_guest(c, gr->vmid);
	if (!g) {
		*err = strprintf("--guest-root %d=%s: the scenario has no guest %d", gr->vmid,
				 gr->dir, gr->vmid);
		return -1;
	}
	char *real = realpath(gr->dir, NULL);
	struct stat st;
	if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		*err = strprintf("--guest-root %d=%s: %s", gr->vmid, gr->dir,
				 real ? "not a directory" : strerror(errno));
		free(real);
		return -1;
	}
	free(g->root);
	g->root = real;
	return 0;
}

int cluster_add_spares(struct cluster *c, const struct sim_spare_guest *sp, size_t n,
		       char **err)
{
	for (size_t i = 0; i < n; i++) {
		struct in_addr a;
		if (inet_pton(AF_INET, sp[i].addr, &a) != 1 || (ntohl(a.s_addr) >> 24) != 127) {
			*err = strprintf("--spare-guest %s@%s=%s: not a loopback IPv4 address",
					 sp[i].fixture, sp[i].addr, sp[i].dir);
			return -1;
		}
		char *real = realpath(sp[i].dir, NULL);
		struct stat st;
		if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
			*err = strprintf("--spare-guest %s@%s=%s: %s", sp[i].fixture, sp[i].addr,
					 sp[i].dir, real ? "not a directory" : strerror(errno));
			free(real);
			return -1;
		}
		struct sim_spare *s = calloc(1, sizeof *s);
		if (!s || !(s->fixture = strdup(sp[i].fixture)) || !(s->addr = strdup(sp[i].addr)) ||
		    ptrvec_push(&c->spares, s) < 0) {
			if (s) {
				free(s->fixture);
				free(s->addr);
			}
			free(s);
			free(real);
			*err = strdup("out of memory");
			return -1;
		}
		s->root = real;
	}
	return 0;
}

struct cluster *cluster_load(const char *scenario_path, double now, char **err)
{
	return cluster_load_with(scenario_path, now, NULL, 0, err);
}

struct cluster *cluster_load_with(const char *scenario_path, double now,
				  const struct sim_guest_root *roots, size_t nroots, char **err)
{
	*err = NULL;
	struct cluster *c = calloc(1, sizeof(*c));
	if (!c) {
		*err = strdup("out of memory");
		return NULL;
	}
	c->next_pid = 0x1000;
	c->boot_time = now - 86400.0; /* nodes came up a day ago */
	c->scenario_path = strdup(scenario_path);
	if (!c->scenario_path || scenario_load(c, scenario_path, err) < 0) {
		if (!*err)
			*err = strprintf("%s: out of memory", scenario_path);
		cluster_free(c);
		return NULL;
	}
	for (size_t i = 0; i < nroots; i++) {
		if (set_root(c, &roots[i], err) < 0) {
			if (!*err)
				*err = strdup("out of memory");
			cluster_free(c);
			return NULL;
		}
	}
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		if (g->running) {
			g->started_at = now - 3600.0;
			g->boots = 1;
		}
		guest_eval_boot(g);
	}
	cluster_status_update(c, now, true);
	return c;
}

const char *node_pve_version(const struct cluster *c, const struct sim_node *n)
{
	return n && n->version ? n->version : c->version;
}

const char *cluster_pve_version(const struct cluster *c)
{
	return c->version;
}

int cluster_pve_major(const struct cluster *c)
{
	return c->major;
}

static bool cred_match(const struct ptrvec *v, const char *id, const char *secret)
{
	for (size_t i = 0; id && secret && i < v->n; i++) {
		const struct sim_cred *cr = v->v[i];
		if (strcmp(cr->id, id) == 0 && strcmp(cr->secret, secret) == 0)
			return true;
	}
	return false;
}

bool cluster_check_token(const struct cluster *c, const char *token_id,
			 const char *secret)
{
	return cred_match(&c->tokens, token_id, secret);
}

bool cluster_check_password(const struct cluster *c, const char *userid,
			    const char *password)
{
	return cred_match(&c->users, userid, password);
}

bool cluster_user_tfa(const struct cluster *c, const char *userid)
{
	for (size_t i = 0; i < c->users.n; i++) {
		const struct sim_cred *cr = c->users.v[i];
		if (strcmp(cr->id, userid) == 0)
			return cr->tfa;
	}
	return false;
}

const char *cluster_first_token_id(const struct cluster *c)
{
	return c->tokens.n ? ((struct sim_cred *)c->tokens.v[0])->id : NULL;
}

const char *cluster_first_token_secret(const struct cluster *c)
{
	return c->tokens.n ? ((struct sim_cred *)c->tokens.v[0])->secret : NULL;
}

json_object *cluster_scenario_faults(const struct cluster *c)
{
	return c->faults;
}

void sim_resp_clear(struct sim_resp *resp)
{
	json_object_put(resp->data);
	json_object_put(resp->errors);
	free(resp->message);
	free(resp->upid);
	memset(resp, 0, sizeof(*resp));
}

void cluster_handle(struct cluster *c, const struct sim_req *in,
		    struct sim_resp *resp)
{
	/* the routes may rely on an object of parameters and an identity */
	struct sim_req local = *in;
	json_object *empty = NULL;
	if (!local.params || !json_object_is_type(local.params, json_type_object))
		local.params = empty = json_object_new_object();
	if (!local.userid)
		local.userid = "root@pam";
	local.acl = c->acl;
	const struct sim_req *req = &local;
	qemu_guests_poll(c, req->now);
	ha_crm_advance(c, req->now);
	cluster_status_update(c, req->now, false);
	struct path_parts pp;
	if (!req->params || !req->method ||
	    path_split(req->path ? req->path : "", &pp) < 0) {
		json_object_put(empty);
		resp_error(resp, 500, "out of memory");
		return;
	}
	bool done = routes_tasks(c, req, &pp, resp) ||
		    routes_qemu(c, req, &pp, resp) ||
		    routes_ct(c, req, &pp, resp) ||
		    routes_storage(c, req, &pp, resp) ||
		    routes_options(c, req, &pp, resp) ||
		    routes_cluster(c, req, &pp, resp) ||
		    routes_access(c, req, &pp, resp) ||
		    routes_nodeinfo(c, req, &pp, resp) ||
		    routes_ceph(c, req, &pp, resp) ||
		    routes_nodelife(c, req, &pp, resp);
	if (!done)
		resp_error(resp, 501, "Method '%s %s' not implemented",
			   req->method, req->path);
	path_parts_free(&pp);
	if (resp->status == 0)
		resp->status = 200;
	/* effects of tasks that are already over (zero-length tasks) */
	tasks_advance(c, req->now);
	cluster_status_update(c, req->now, false); /* guests made by this request */
	json_object_put(empty);
}

/* ---- cluster_state ------------------------------------------------------ */
static json_object *state_guest(const struct cluster *c,
				const struct sim_guest *g)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "vmid", json_object_new_int(g->vmid));
	json_object_object_add(o, "type", json_object_new_string(g->type));
	json_object_object_add(o, "node", json_object_new_string(g->node));
	json_object_object_add(
		o, "status",
		json_object_new_string(g->running ? "running" : "stopped"));
	const char *lock = guest_lock(g);
	json_object_object_add(o, "lock",
			       lock ? json_object_new_string(lock) : NULL);
	const char *name = guest_name(g);
	if (name)
		json_object_object_add(o, "name", json_object_new_string(name));
	json_object *conf = NULL;
	json_object_deep_copy(g->config, &conf, NULL);
	json_object_object_add(o, "config", conf);
	json_object *pend = NULL;
	json_object_deep_copy(g->pending, &pend, NULL);
	json_object_object_add(o, "pending", pend);
	json_object *pdel = NULL;
	json_object_deep_copy(g->pending_delete, &pdel, NULL);
	json_object_object_add(o, "pending_delete", pdel);
	json_object *snaps = NULL;
	json_object_deep_copy(g->snapshots, &snaps, NULL);
	json_object_object_add(o, "snapshots", snaps);
	if (g->cloudinit)
		json_object_object_add(o, "cloudinit", json_object_get(g->cloudinit));
	if (g->fixture)
		json_object_object_add(o, "fixture",
				       json_object_new_string(g->fixture));
	if (g->address)
		json_object_object_add(o, "address",
				       json_object_new_string(g->address));
	if (g->listen_port)
		jadd_int(o, "listen_port", (int)g->listen_port);
	if (g->root)
		json_object_object_add(o, "root", json_object_new_string(g->root));
	json_object_object_add(o, "boot", boot_result_json(&g->boot));
	/* starts so far and the running one's start and machine type: a
	 * guest moved only live keeps all three (rolling maintenance) */
	jadd_int(o, "boots", g->boots);
	if (g->running) {
		char mb[64];
		json_object_object_add(o, "started_at", json_object_new_double(g->started_at));
		if (strcmp(g->type, "qemu") == 0)
			jadd_str(o, "running_machine", guest_running_machine(c, g, mb, sizeof mb));
	}
	if (g->qemu) {
		json_object *q = json_object_new_object();
		if (q) {
			jadd_int(q, "pid", qemu_guest_pid(g->qemu));
			jadd_str(q, "dir", qemu_guest_dir(g->qemu));
		}
		json_object_object_add(o, "qemu", q);
	}
	return o;
}

void cluster_advance(struct cluster *c, double now)
{
	ha_crm_advance(c, now);
}

json_object *cluster_state(struct cluster *c, double now)
{
	ha_crm_advance(c, now);
	json_object *st = json_object_new_object();
	if (!st)
		return NULL;
	json_object_object_add(st, "pve_version", json_object_new_string(c->version));
	json_object_object_add(st, "now", json_object_new_double(now));
	json_object *nodes = json_object_new_array();
	for (size_t i = 0; nodes && i < c->nodes.n; i++) {
		struct sim_node *n = c->nodes.v[i];
		json_object *o = json_object_new_object();
		if (!o)
			continue;
		json_object_object_add(o, "name", json_object_new_string(n->name));
		json_object_object_add(o, "online", json_object_new_boolean(n->online));
		json_object_object_add(o, "cpus", json_object_new_int(n->cpus));
		json_object_object_add(o, "version",
				       json_object_new_string(node_pve_version(c, n)));
		json_object_object_add(o, "maxmem", json_object_new_uint64(n->memory));
		json_object_object_add(o, "mem",
				       json_object_new_uint64(node_mem_used(c, n->name)));
		node_life_state(c, n, now, o);
		json_object_array_add(nodes, o);
	}
	json_object_object_add(st, "nodes", nodes);
	json_object_object_add(st, "ceph", ceph_state(c));
	json_object *stores = json_object_new_array();
	for (size_t i = 0; stores && i < c->storages.n; i++) {
		struct sim_storage *s = c->storages.v[i];
		json_object *o = json_object_new_object();
		if (!o)
			continue;
		json_object_object_add(o, "storage", json_object_new_string(s->id));
		json_object_object_add(o, "type", json_object_new_string(s->type));
		json_object_object_add(o, "shared", json_object_new_boolean(s->shared));
		json_object_object_add(o, "total", json_object_new_uint64(s->size));
		json_object *vols = json_object_new_array();
		for (size_t j = 0; vols && j < c->volumes.n; j++) {
			struct sim_volume *v = c->volumes.v[j];
			if (strcmp(v->storage, s->id) != 0)
				continue;
			json_object *vo = json_object_new_object();
			if (!vo)
				continue;
			json_object_object_add(vo, "volid", json_object_new_string(v->volid));
			if (v->node)
				json_object_object_add(vo, "node",
						       json_object_new_string(v->node));
			json_object_object_add(vo, "size", json_object_new_uint64(v->size));
			json_object_object_add(vo, "vmid", json_object_new_int(v->vmid));
			json_object_object_add(vo, "content",
					       json_object_new_string(v->content));
			json_object_array_add(vols, vo);
		}
		json_object_object_add(o, "volumes", vols);
		json_object_array_add(stores, o);
	}
	json_object_object_add(st, "storages", stores);
	json_object *guests = json_object_new_array();
	for (size_t i = 0; guests && i < c->guests.n; i++) {
		json_object *g = state_guest(c, c->guests.v[i]);
		if (g)
			json_object_array_add(guests, g);
	}
	json_object_object_add(st, "guests", guests);
	json_object *tasks = json_object_new_array();
	for (size_t i = 0; tasks && i < c->tasks.n; i++) {
		struct sim_task *t = c->tasks.v[i];
		if (!t->started)
			continue;
		json_object *o = task_status_json(t, now);
		if (!o)
			continue;
		json_object_object_add(
			o, "log_lines",
			json_object_new_int64((long long)task_visible_lines(t, now)));
		json_object_array_add(tasks, o);
	}
	json_object_object_add(st, "tasks", tasks);
	json_object *ha = NULL;
	json_object_deep_copy(c->ha, &ha, NULL);
	json_object_object_add(st, "ha", ha);
	return st;
}

int cluster_net_start(struct cluster *c, double (*now)(void *), void *ctx, char **err)
{
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		if (!g->listen_port && !g->listen_any)
			continue;
		if (!c->net && !(c->net = guestnet_start(now, ctx))) {
			*err = strdup("cannot start the guest listeners");
			return -1;
		}
		if (guestnet_listen(c->net, g->address, g->listen_port, &g->listen_port) < 0) {
			*err = strprintf("cannot listen on %s:%u for VM %d: %s", g->address,
					 g->listen_port, g->vmid, strerror(errno));
			return -1;
		}
	}
	return 0;
}

void cluster_net_stop(struct cluster *c)
{
	if (c && c->net) {
		guestnet_stop(c->net);
		c->net = NULL;
	}
}
