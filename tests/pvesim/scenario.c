/* scenario.c - scenario file loading and strict validation (see
 * scenario.h). Every refusal names the file and the JSON path at fault. */
#include "scenario.h"

#include "acl.h"
#include "nodelife.h"
#include "pvecfgfile.h"
#include "qemu_guest.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sctx {
	const char *file;
	char **err;
	struct cluster *c;
	char *dir; /* directory of the scenario file */
	/* Reading a guest's config_file: volumes the file names on a storage
	 * of the scenario exist (with its size=, else FILE_DISK_SIZE), as
	 * they do on the PVE host the file came from. */
	bool from_file;
};

#define FILE_DISK_SIZE (8ULL << 30)

static int sfail(struct sctx *x, const char *jpath, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int sfail(struct sctx *x, const char *jpath, const char *fmt, ...)
{
	if (*x->err)
		return -1;
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_addf(&b, "%s: %s: ", x->file, jpath);
	if (rc == 0)
		rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	*x->err = rc < 0 ? NULL : sbuf_steal(&b);
	sbuf_free(&b);
	return -1;
}

static const char *type_name(json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null: return "null";
	case json_type_boolean: return "boolean";
	case json_type_double: return "number";
	case json_type_int: return "integer";
	case json_type_object: return "object";
	case json_type_array: return "array";
	case json_type_string: return "string";
	}
	return "unknown";
}

static int check_keys(struct sctx *x, json_object *o, const char *jpath,
		      const char *const *allowed)
{
	json_object_object_foreach(o, k, v)
	{
		(void)v;
		bool ok = k[0] == '_'; /* "_source", "_comment": notes for the reader */
		for (size_t i = 0; allowed[i] && !ok; i++)
			ok = strcmp(allowed[i], k) == 0;
		if (!ok)
			return sfail(x, jpath, "unknown key '%s'", k);
	}
	return 0;
}

/* Fetch a member with a type check. Returns 1 found, 0 absent, -1 error. */
static int member(struct sctx *x, json_object *o, const char *jpath,
		  const char *key, json_type want, bool required,
		  json_object **out)
{
	json_object *v = NULL;
	*out = NULL;
	if (!json_object_object_get_ex(o, key, &v)) {
		if (required)
			return sfail(x, jpath, "missing required key '%s'", key);
		return 0;
	}
	bool ok = json_object_is_type(v, want) ||
		  (want == json_type_double && json_object_is_type(v, json_type_int));
	if (!ok) {
		const char *w = want == json_type_string	  ? "string"
				: want == json_type_int	  ? "integer"
				: want == json_type_double  ? "number"
				: want == json_type_boolean ? "boolean"
				: want == json_type_array   ? "array"
							    : "object";
		return sfail(x, jpath, "'%s' must be %s %s, not %s", key,
			     want == json_type_array || want == json_type_object ||
					     want == json_type_int
				     ? "an"
				     : "a",
			     w, type_name(v));
	}
	*out = v;
	return 1;
}

static char *jp(const char *base, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static char *jp(const char *base, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_add(&b, base);
	if (rc == 0)
		rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

static bool valid_name(const char *s, bool allow_dot)
{
	if (!*s || !isalpha((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' &&
		    !(allow_dot && *s == '.'))
			return false;
	return true;
}

static bool valid_mac(const char *m, size_t n)
{
	if (n != 17)
		return false;
	for (size_t i = 0; i < 17; i++) {
		if (i % 3 == 2) {
			if (m[i] != ':')
				return false;
		} else if (!isxdigit((unsigned char)m[i])) {
			return false;
		}
	}
	return true;
}

char *scenario_mac(int vmid, int n)
{
	unsigned h = (unsigned)vmid * 2654435761u + (unsigned)n * 40503u;
	return strprintf("BC:24:11:%02X:%02X:%02X", (h >> 16) & 0xff,
			 (h >> 8) & 0xff, h & 0xff);
}

/* ---- nodes -------------------------------------------------------------- */
/* Is ver a version ("9.1", "8.4.1") a node of a major-`major` cluster
 * may run (a rolling upgrade spans one major)? */
static bool pve_version_valid(const char *ver, int major)
{
	char *end;
	long maj = strtol(ver, &end, 10);
	if (maj < 2 || maj > 9 || !isdigit((unsigned char)ver[0]) || *end != '.')
		return false;
	for (int parts = 0; *end == '.' && parts < 2; parts++) {
		if (!isdigit((unsigned char)end[1]))
			return false;
		strtol(end + 1, &end, 10);
	}
	return !*end && (maj == major || maj == major - 1 || maj == major + 1);
}

/* "10.1.2": the QEMU version an upgrade installs */
static bool qemu_version_valid(const char *v)
{
	int parts = 0;
	for (const char *p = v; *p; parts++) {
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		if (*p == '.' && parts < 2)
			p++;
		else if (*p)
			return false;
	}
	return parts == 3;
}

/* "6.17.2-1-pve": a Proxmox kernel's release */
static bool kernel_valid(const char *k)
{
	size_t l = strlen(k);
	if (l < 6 || l > 64 || !isdigit((unsigned char)k[0]) || strcmp(k + l - 4, "-pve") != 0)
		return false;
	for (const char *p = k; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
			return false;
	return true;
}

/* Compare two PVE versions ("8.4" < "9.1.1"). */
static int version_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);
		if (x != y)
			return x < y ? -1 : 1;
		a += *a == '.';
		b += *b == '.';
		if (!*a || !*b)
			return *a ? 1 : *b ? -1 : 0;
	}
	return 0;
}

/* A node's votes, kernel, "upgrade" (what apt-get dist-upgrade makes it,
 * and how long its reboot takes) and "pve8to9" verdict (nodelife.h). */
static int load_node_life(struct sctx *x, json_object *o, const char *p, struct sim_node *node)
{
	json_object *v = NULL;
	int rc = 0;
	if (member(x, o, p, "votes", json_type_int, false, &v) > 0) {
		if (json_object_get_int64(v) < 0 || json_object_get_int64(v) > 255)
			return sfail(x, p, "votes must be from 0 to 255");
		node->votes = (int)json_object_get_int64(v);
	}
	if (*x->err)
		return -1;
	if (member(x, o, p, "kernel", json_type_string, false, &v) > 0) {
		if (!kernel_valid(json_object_get_string(v)))
			return sfail(x, p, "invalid kernel '%s' (a release like 6.8.12-9-pve)",
				     json_object_get_string(v));
		if (!(node->kernel = strdup(json_object_get_string(v))))
			return -1;
	}
	if (*x->err)
		return -1;
	if (member(x, o, p, "pve8to9", json_type_object, false, &v) > 0) {
		static const char *const pkeys[] = {"exit", "lines", NULL};
		char *pp = jp(p, ".pve8to9");
		json_object *e = NULL, *l = NULL;
		rc = pp ? check_keys(x, v, pp, pkeys) : -1;
		if (rc == 0 && member(x, v, pp, "exit", json_type_int, false, &e) > 0 &&
		    (json_object_get_int64(e) < 0 || json_object_get_int64(e) > 255))
			rc = sfail(x, pp, "exit must be from 0 to 255");
		if (rc == 0 && member(x, v, pp, "lines", json_type_array, false, &l) > 0)
			for (size_t i = 0; rc == 0 && i < json_object_array_length(l); i++)
				if (!json_object_is_type(json_object_array_get_idx(l, i),
							 json_type_string))
					rc = sfail(x, pp, "lines[%zu] must be a string", i);
		if (rc == 0 && !*x->err)
			node->pve8to9 = json_object_get(v);
		free(pp);
		if (rc < 0 || *x->err)
			return -1;
	}
	if (member(x, o, p, "upgrade", json_type_object, false, &v) <= 0)
		return *x->err ? -1 : 0;
	static const char *const ukeys[] = {"version", "qemu", "kernel", "reboot_s", NULL};
	char *up = jp(p, ".upgrade");
	json_object *f = NULL;
	struct node_upgrade *u = calloc(1, sizeof *u);
	if (!up || !u) {
		free(up);
		free(u);
		return -1;
	}
	node->upgrade = u;
	u->reboot_s = NODE_REBOOT_S;
	rc = check_keys(x, v, up, ukeys);
	if (rc == 0 && member(x, v, up, "version", json_type_string, true, &f) > 0) {
		const char *ver = json_object_get_string(f);
		if (!pve_version_valid(ver, x->c->major))
			rc = sfail(x, up, "invalid version '%s' (MAJOR.MINOR[.PATCH], and within "
				   "one major of pve_version)", ver);
		else if (version_cmp(ver, node_pve_version(x->c, node)) <= 0)
			rc = sfail(x, up, "version '%s' is not newer than the node's '%s'", ver,
				   node_pve_version(x->c, node));
		else if (!(u->version = strdup(ver)))
			rc = -1;
	}
	if (rc == 0 && member(x, v, up, "qemu", json_type_string, false, &f) > 0) {
		if (!qemu_version_valid(json_object_get_string(f)))
			rc = sfail(x, up, "invalid qemu '%s' (MAJOR.MINOR.PATCH, like 10.1.2)",
				   json_object_get_string(f));
		else if (!(u->qemu = strdup(json_object_get_string(f))))
			rc = -1;
	}
	if (rc == 0 && member(x, v, up, "kernel", json_type_string, false, &f) > 0) {
		if (!kernel_valid(json_object_get_string(f)))
			rc = sfail(x, up, "invalid kernel '%s' (a release like 6.17.2-1-pve)",
				   json_object_get_string(f));
		else if (!(u->kernel = strdup(json_object_get_string(f))))
			rc = -1;
	}
	if (rc == 0 && member(x, v, up, "reboot_s", json_type_double, false, &f) > 0) {
		double d = json_object_get_double(f);
		if (!(d > 0 && d <= 86400))
			rc = sfail(x, up, "reboot_s must be more than 0 and at most 86400");
		else
			u->reboot_s = node->reboot_s = d;
	}
	free(up);
	return rc < 0 || *x->err ? -1 : 0;
}

static int load_nodes(struct sctx *x, json_object *arr)
{
	static const char *const keys[] = {"name",	     "cpus",	"memory_mib",
					   "online",	     "ip",	"version",
					   "ha_maintenance", "votes",	"kernel",
					   "upgrade",	     "pve8to9", NULL};
	size_t n = json_object_array_length(arr);
	if (n == 0)
		return sfail(x, "$.nodes", "at least one node is required");
	for (size_t i = 0; i < n; i++) {
		char *p = jp("$.nodes", "[%zu]", i);
		if (!p)
			return -1;
		json_object *o = json_object_array_get_idx(arr, i), *v;
		int rc = 0;
		if (!json_object_is_type(o, json_type_object))
			rc = sfail(x, p, "must be an object, not %s", type_name(o));
		if (rc == 0)
			rc = check_keys(x, o, p, keys);
		struct sim_node *node = NULL;
		if (rc == 0 && member(x, o, p, "name", json_type_string, true, &v) < 0)
			rc = -1;
		if (rc == 0) {
			const char *name = json_object_get_string(v);
			if (!valid_name(name, false))
				rc = sfail(x, p, "invalid node name '%s'", name);
			else if (cluster_node(x->c, name))
				rc = sfail(x, p, "duplicate node name '%s'", name);
		}
		if (rc == 0) {
			node = calloc(1, sizeof(*node));
			if (!node || !(node->name = strdup(json_object_get_string(v))) ||
			    ptrvec_push(&x->c->nodes, node) < 0) {
				if (node)
					free(node->name);
				free(node);
				free(p);
				return -1;
			}
			node->cpus = 8;
			node->memory = 16384 * MiB;
			node->online = true;
			node->votes = 1;
			node->reboot_s = NODE_REBOOT_S;
		}
		if (rc == 0 && member(x, o, p, "cpus", json_type_int, false, &v) > 0) {
			if (json_object_get_int64(v) < 1)
				rc = sfail(x, p, "cpus must be at least 1");
			else
				node->cpus = (int)json_object_get_int64(v);
		}
		if (rc == 0 &&
		    member(x, o, p, "memory_mib", json_type_int, false, &v) > 0) {
			if (json_object_get_int64(v) < 256)
				rc = sfail(x, p, "memory_mib must be at least 256");
			else
				node->memory = (uint64_t)json_object_get_int64(v) * MiB;
		}
		if (rc == 0 &&
		    member(x, o, p, "online", json_type_boolean, false, &v) > 0)
			node->online = json_object_get_boolean(v);
		if (rc == 0 && member(x, o, p, "ip", json_type_string, false, &v) > 0) {
			struct in_addr a;
			if (inet_pton(AF_INET, json_object_get_string(v), &a) != 1)
				rc = sfail(x, p, "ip '%s' is not an IPv4 address",
					   json_object_get_string(v));
			else if (!(node->ip = strdup(json_object_get_string(v))))
				rc = -1;
		}
		if (rc == 0 && !node->ip &&
		    !(node->ip = strprintf("10.0.0.%zu", i + 1)))
			rc = -1;
		/* ha-manager crm-command node-maintenance enable NODE (its LRM
		 * says "maintenance mode"; the CRM places no guest there) */
		if (rc == 0 &&
		    member(x, o, p, "ha_maintenance", json_type_boolean, false, &v) > 0)
			node->ha_maintenance = json_object_get_boolean(v);
		if (rc == 0 && member(x, o, p, "version", json_type_string, false, &v) > 0) {
			/* a mixed cluster (a rolling upgrade): this node's version */
			const char *ver = json_object_get_string(v);
			if (!pve_version_valid(ver, x->c->major))
				rc = sfail(x, p, "invalid version '%s' (MAJOR.MINOR[.PATCH], "
					   "and within one major of pve_version)", ver);
			else if (!(node->version = strdup(ver)))
				rc = -1;
		}
		if (rc == 0)
			rc = load_node_life(x, o, p, node);
		if (rc == 0 && *x->err)
			rc = -1; /* a member() type error */
		free(p);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* ---- storages ----------------------------------------------------------- */
static const char *const storage_types[] = {
	"dir", "lvmthin", "lvm", "nfs", "cifs", "rbd", "zfspool", "cephfs", "btrfs", "zfs", NULL};
static const char *const content_types[] = {
	"images", "rootdir", "iso", "vztmpl", "backup", "snippets", "import", NULL};

static bool in_list(const char *const *l, const char *s)
{
	if (!s)
		return false;
	for (size_t i = 0; l[i]; i++)
		if (strcmp(l[i], s) == 0)
			return true;
	return false;
}

static int load_storage_volumes(struct sctx *x, struct sim_storage *s,
				json_object *arr, const char *p)
{
	static const char *const keys[] = {"volid", "size_mib", "content",
					   "node", NULL};
	size_t n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		char *vp = jp(p, ".volumes[%zu]", i);
		if (!vp)
			return -1;
		json_object *o = json_object_array_get_idx(arr, i), *v;
		int rc = 0;
		const char *volid = NULL, *content = NULL, *node = NULL;
		uint64_t size = 100 * MiB;
		if (!json_object_is_type(o, json_type_object))
			rc = sfail(x, vp, "must be an object, not %s", type_name(o));
		if (rc == 0)
			rc = check_keys(x, o, vp, keys);
		if (rc == 0 && member(x, o, vp, "volid", json_type_string, true, &v) < 0)
			rc = -1;
		if (rc == 0) {
			volid = json_object_get_string(v);
			size_t l = strlen(s->id);
			if (strncmp(volid, s->id, l) != 0 || volid[l] != ':' || !volid[l + 1])
				rc = sfail(x, vp, "volid '%s' is not on storage '%s'",
					   volid, s->id);
			else if (strstr(volid, ":iso/"))
				content = "iso";
			else if (strstr(volid, ":vztmpl/"))
				content = "vztmpl";
			else if (strstr(volid, ":import/"))
				content = "import";
			else if (strstr(volid, ":backup/") || strstr(volid, "vzdump-"))
				content = "backup";
			else
				content = "images";
		}
		if (rc == 0 &&
		    member(x, o, vp, "size_mib", json_type_double, false, &v) > 0) {
			double d = json_object_get_double(v);
			if (d <= 0)
				rc = sfail(x, vp, "size_mib must be positive");
			else if (bytes_of(d, MiB, &size) < 0)
				rc = sfail(x, vp, "size_mib is too large");
		}
		if (rc == 0 &&
		    member(x, o, vp, "content", json_type_string, false, &v) > 0) {
			content = json_object_get_string(v);
			if (!in_list(content_types, content))
				rc = sfail(x, vp, "unknown content type '%s'", content);
		}
		if (rc == 0 && !storage_has_content(s, content))
			rc = sfail(x, vp, "storage '%s' does not allow content '%s'",
				   s->id, content);
		if (rc == 0 && member(x, o, vp, "node", json_type_string, false, &v) > 0) {
			node = json_object_get_string(v);
			if (!storage_on_node(s, node))
				rc = sfail(x, vp, "storage '%s' is not available on node '%s'",
					   s->id, node);
		}
		if (rc == 0) {
			if (s->shared || node) {
				if (cluster_volume(x->c, volid, node))
					rc = sfail(x, vp, "duplicate volume '%s'", volid);
				else if (!volume_add(x->c, volid, node, 0, size, content))
					rc = -1;
			} else {
				size_t nn = json_object_array_length(s->nodes);
				for (size_t j = 0; j < nn && rc == 0; j++) {
					const char *nd = json_object_get_string(
						json_object_array_get_idx(s->nodes, j));
					if (cluster_volume(x->c, volid, nd))
						rc = sfail(x, vp, "duplicate volume '%s'", volid);
					else if (!volume_add(x->c, volid, nd, 0, size, content))
						rc = -1;
				}
			}
		}
		if (rc == 0 && *x->err)
			rc = -1; /* a member() type error */
		free(vp);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int load_storages(struct sctx *x, json_object *arr)
{
	static const char *const keys[] = {"id",	  "type",     "shared",
					   "nodes",   "content",  "size_gib",
					   "volumes", "snapshot_as_volume_chain", NULL};
	size_t n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		char *p = jp("$.storages", "[%zu]", i);
		if (!p)
			return -1;
		json_object *o = json_object_array_get_idx(arr, i), *v;
		int rc = 0;
		struct sim_storage *s = NULL;
		if (!json_object_is_type(o, json_type_object))
			rc = sfail(x, p, "must be an object, not %s", type_name(o));
		if (rc == 0)
			rc = check_keys(x, o, p, keys);
		if (rc == 0 && member(x, o, p, "id", json_type_string, true, &v) < 0)
			rc = -1;
		if (rc == 0) {
			const char *id = json_object_get_string(v);
			if (!valid_name(id, true))
				rc = sfail(x, p, "invalid storage id '%s'", id);
			else if (cluster_storage(x->c, id))
				rc = sfail(x, p, "duplicate storage id '%s'", id);
		}
		if (rc == 0) {
			s = calloc(1, sizeof(*s));
			if (!s || !(s->id = strdup(json_object_get_string(v))) ||
			    ptrvec_push(&x->c->storages, s) < 0) {
				if (s)
					free(s->id);
				free(s);
				free(p);
				return -1;
			}
			s->size = 100 * GiB;
		}
		if (rc == 0 && member(x, o, p, "type", json_type_string, true, &v) < 0)
			rc = -1;
		if (rc == 0) {
			if (!in_list(storage_types, json_object_get_string(v)))
				rc = sfail(x, p, "unknown storage type '%s'",
					   json_object_get_string(v));
			else if (!(s->type = strdup(json_object_get_string(v))))
				rc = -1;
		}
		if (rc == 0 &&
		    member(x, o, p, "shared", json_type_boolean, false, &v) > 0)
			s->shared = json_object_get_boolean(v);
		if (rc == 0 && member(x, o, p, "snapshot_as_volume_chain", json_type_boolean, false,
				      &v) > 0) {
			/* pve-storage 9: dir and lvm only */
			s->volume_chain = json_object_get_boolean(v);
			if (s->volume_chain && (x->c->major < 9 || (strcmp(s->type, "dir") != 0 &&
								    strcmp(s->type, "lvm") != 0)))
				rc = sfail(x, p, "snapshot_as_volume_chain is for dir and lvm "
					   "storages on PVE 9");
		}
		if (rc == 0 && !s->shared &&
		    (strcmp(s->type, "rbd") == 0 || strcmp(s->type, "cephfs") == 0))
			s->shared = true; /* network storages are shared */
		if (rc == 0 && member(x, o, p, "nodes", json_type_array, false, &v) > 0) {
			size_t nn = json_object_array_length(v);
			s->nodes = json_object_new_array();
			if (!s->nodes)
				rc = -1;
			for (size_t j = 0; j < nn && rc == 0; j++) {
				json_object *e = json_object_array_get_idx(v, j);
				char *np = jp(p, ".nodes[%zu]", j);
				if (!np) {
					rc = -1;
					break;
				}
				if (!json_object_is_type(e, json_type_string))
					rc = sfail(x, np, "must be a string, not %s",
						   type_name(e));
				else if (!cluster_node(x->c, json_object_get_string(e)))
					rc = sfail(x, np, "unknown node '%s'",
						   json_object_get_string(e));
				else if (storage_on_node(s, json_object_get_string(e)))
					rc = sfail(x, np, "duplicate node '%s'",
						   json_object_get_string(e));
				else
					json_object_array_add(
						s->nodes, json_object_new_string(
								  json_object_get_string(e)));
				free(np);
			}
		} else if (rc == 0) {
			s->nodes = json_object_new_array();
			for (size_t j = 0; s->nodes && j < x->c->nodes.n; j++)
				json_object_array_add(
					s->nodes,
					json_object_new_string(
						((struct sim_node *)x->c->nodes.v[j])->name));
			if (!s->nodes)
				rc = -1;
		}
		if (rc == 0 && member(x, o, p, "content", json_type_string, true, &v) < 0)
			rc = -1;
		if (rc == 0) {
			const char *ct = json_object_get_string(v);
			char *dup = strdup(ct);
			char *save = NULL;
			if (!dup)
				rc = -1;
			for (char *t = dup ? strtok_r(dup, ",", &save) : NULL;
			     t && rc == 0; t = strtok_r(NULL, ",", &save))
				if (!in_list(content_types, t))
					rc = sfail(x, p, "unknown content type '%s'", t);
			free(dup);
			if (rc == 0 && !(s->content = strdup(ct)))
				rc = -1;
		}
		if (rc == 0 &&
		    member(x, o, p, "size_gib", json_type_double, false, &v) > 0) {
			double d = json_object_get_double(v);
			if (d <= 0)
				rc = sfail(x, p, "size_gib must be positive");
			else if (bytes_of(d, GiB, &s->size) < 0)
				rc = sfail(x, p, "size_gib is too large");
		}
		if (rc == 0 &&
		    member(x, o, p, "volumes", json_type_array, false, &v) > 0)
			rc = load_storage_volumes(x, s, v, p);
		if (rc == 0 && *x->err)
			rc = -1; /* a member() type error */
		free(p);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* ---- credentials and permissions (acl.h) ------------------------------- */
/* An acl.h refusal (err, malloc'd and freed here; NULL: out of memory)
 * at jpath: -1. */
static int acl_fail(struct sctx *x, const char *jpath, char *err)
{
	int rc = err ? sfail(x, jpath, "%s", err) : -1;
	free(err);
	return rc;
}

/* Top-level "roles": {"NAME": "Priv.One,Priv.Two"}, read as PVE reads
 * user.cfg: a privilege the version does not know (VM.Monitor on a 9.x
 * cluster upgraded from 8) is dropped with PVE's warning on stderr. */
static int load_roles(struct sctx *x, json_object *o)
{
	json_object_object_foreach(o, name, v)
	{
		char *p = jp("$.roles", ".%s", name);
		int rc = p ? 0 : -1;
		char *err = NULL;
		if (rc == 0 && !json_object_is_type(v, json_type_string))
			rc = sfail(x, p, "must be a string of privileges, not %s", type_name(v));
		else if (rc == 0 && acl_load_role(x->c->acl, name, json_object_get_string(v),
						  stderr, &err) < 0)
			rc = acl_fail(x, p, err);
		free(p);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* A credential's "acl": [{"path", "role", "propagate"}], as pveum acl
 * modify (propagate defaults to true). */
static int load_acl(struct sctx *x, json_object *arr, const char *id, const char *path)
{
	static const char *const keys[] = {"path", "role", "propagate", NULL};
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		char *p = jp(path, ".acl[%zu]", i);
		if (!p)
			return -1;
		json_object *o = json_object_array_get_idx(arr, i), *ap, *role, *prop;
		int rc = 0;
		char *err = NULL;
		if (!json_object_is_type(o, json_type_object))
			rc = sfail(x, p, "must be an object, not %s", type_name(o));
		if (rc == 0)
			rc = check_keys(x, o, p, keys);
		if (rc == 0 && (member(x, o, p, "path", json_type_string, true, &ap) < 0 ||
				member(x, o, p, "role", json_type_string, true, &role) < 0 ||
				member(x, o, p, "propagate", json_type_boolean, false, &prop) < 0))
			rc = -1;
		if (rc == 0 && acl_grant(x->c->acl, id, json_object_get_string(ap),
					 json_object_get_string(role),
					 prop ? json_object_get_boolean(prop) : true, &err) < 0)
			rc = acl_fail(x, p, err);
		free(p);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* The permissions of one credential: its "acl", and "privs", the shorthand
 * for those privileges on "/" propagating ("all" when neither is given);
 * tokens are privilege-separated unless "privsep": false. */
static int load_perms(struct sctx *x, json_object *o, const char *id, bool token,
		      const char *p)
{
	json_object *pv, *acl, *ps = NULL;
	char *err = NULL;
	if (member(x, o, p, "privs", json_type_string, false, &pv) < 0 ||
	    member(x, o, p, "acl", json_type_array, false, &acl) < 0 ||
	    (token && member(x, o, p, "privsep", json_type_boolean, false, &ps) < 0))
		return -1;
	if (acl_add_subject(x->c->acl, id, token ? !ps || json_object_get_boolean(ps) : false,
			    &err) < 0)
		return acl_fail(x, p, err);
	acl_privset set;
	int rc = 0;
	if (pv || !acl) {
		char *pp = jp(p, ".privs");
		if (!pp)
			rc = -1;
		else if (acl_parse_privs(x->c->acl, pv ? json_object_get_string(pv) : "all",
					   &set, &err) < 0 ||
			 acl_grant_privs(x->c->acl, id, "/", set, true, &err) < 0)
			rc = acl_fail(x, pp, err);
		free(pp);
	}
	if (rc == 0 && acl)
		rc = load_acl(x, acl, id, p);
	return rc;
}

static int load_creds(struct sctx *x, json_object *arr, const char *what,
		      struct ptrvec *out)
{
	bool token = strcmp(what, "tokens") == 0;
	static const char *const tkeys[] = {"id", "secret", "privs", "privsep", "acl", NULL};
	static const char *const ukeys[] = {"id", "password", "privs", "acl", "tfa", NULL};
	const char *skey = token ? "secret" : "password";
	size_t n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		char *p = jp("$.", "%s[%zu]", what, i);
		if (!p)
			return -1;
		json_object *o = json_object_array_get_idx(arr, i), *id, *sec;
		int rc = 0;
		if (!json_object_is_type(o, json_type_object))
			rc = sfail(x, p, "must be an object, not %s", type_name(o));
		if (rc == 0)
			rc = check_keys(x, o, p, token ? tkeys : ukeys);
		if (rc == 0 && (member(x, o, p, "id", json_type_string, true, &id) < 0 ||
				member(x, o, p, skey, json_type_string, true, &sec) < 0))
			rc = -1;
		if (rc == 0) {
			const char *ids = json_object_get_string(id);
			const char *at = strchr(ids, '@');
			const char *bang = strchr(ids, '!');
			if (!at || at == ids || (token && (!bang || bang < at || !bang[1])) ||
			    (!token && bang))
				rc = sfail(x, p, "invalid %s id '%s'",
					   token ? "token" : "user", ids);
			for (size_t j = 0; rc == 0 && j < out->n; j++)
				if (strcmp(((struct sim_cred *)out->v[j])->id, ids) == 0)
					rc = sfail(x, p, "duplicate id '%s'", ids);
			if (rc == 0 && !*json_object_get_string(sec))
				rc = sfail(x, p, "%s must not be empty", skey);
		}
		if (rc == 0)
			rc = load_perms(x, o, json_object_get_string(id), token, p);
		if (rc == 0) {
			struct sim_cred *cr = calloc(1, sizeof(*cr));
			if (!cr) {
				rc = -1;
			} else {
				json_object *tfa = NULL;
				cr->id = strdup(json_object_get_string(id));
				cr->secret = strdup(json_object_get_string(sec));
				if (!token && member(x, o, p, "tfa", json_type_boolean, false, &tfa) > 0)
					cr->tfa = json_object_get_boolean(tfa);
				if (!cr->id || !cr->secret || ptrvec_push(out, cr) < 0) {
					free(cr->id);
					free(cr->secret);
					free(cr);
					rc = -1;
				}
			}
		}
		if (rc == 0 && *x->err)
			rc = -1; /* a member() type error */
		free(p);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* ---- guests ------------------------------------------------------------- */
static int vmid_of_volname(const char *volid, int def)
{
	const char *p = strchr(volid, ':');
	p = p ? p + 1 : volid;
	/* the last "vm-N-" / "base-N-" / "subvol-N-" wins (linked clones) */
	int vmid = def;
	const char *prefixes[] = {"vm-", "base-", "subvol-", "basevol-"};
	for (const char *q = p; *q; q++) {
		for (size_t i = 0; i < 4; i++) {
			size_t l = strlen(prefixes[i]);
			if ((q == p || q[-1] == '/') && strncmp(q, prefixes[i], l) == 0 &&
			    isdigit((unsigned char)q[l]))
				vmid = atoi(q + l);
		}
	}
	return vmid;
}

/* A volume a config file names (config_file): its storage must be in the
 * scenario, on the guest's node, with the content; the volume is made
 * when missing, with the drive's size= or FILE_DISK_SIZE. */
static int file_volume(struct sctx *x, struct sim_guest *g, const char *vol,
		       const char *content, const char *value, const char *cp)
{
	if (vol[0] == '/' || strcmp(vol, "none") == 0 || strcmp(vol, "cdrom") == 0 ||
	    cluster_volume(x->c, vol, g->node))
		return 0;
	char *sid = volid_storage(vol);
	struct sim_storage *s = sid ? cluster_storage(x->c, sid) : NULL;
	int rc = 0;
	if (!sid || !vol[strlen(sid) + 1])
		rc = sfail(x, cp, "invalid volume '%s'", vol);
	else if (!s)
		rc = sfail(x, cp, "storage '%s' does not exist (declare it in the scenario)", sid);
	else if (!storage_on_node(s, g->node))
		rc = sfail(x, cp, "storage '%s' is not available on node '%s'", sid, g->node);
	else if (!storage_has_content(s, content))
		rc = sfail(x, cp, "storage '%s' has no content '%s'", sid, content);
	free(sid);
	if (rc < 0)
		return rc;
	char *sz = prop_get(value, "size");
	uint64_t size = FILE_DISK_SIZE;
	if (sz && parse_size(sz, &size) < 0)
		rc = sfail(x, cp, "invalid size '%s'", sz);
	free(sz);
	if (rc == 0 && !volume_add(x->c, vol, g->node, vmid_of_volname(vol, g->vmid), size,
				   content))
		rc = -1;
	return rc;
}

static int guest_drive(struct sctx *x, struct sim_guest *g, const char *key,
		       const char *value, const char *cp)
{
	char *vol = drive_volid(value);
	if (!vol)
		return -1;
	if (vol[0] == '/') {
		/* a block device or file by absolute path (passthrough): PVE
		 * takes it as it is (QemuServer::filename_to_volume_id) */
		free(vol);
		return 0;
	}
	if (drive_is_cdrom(value) && !drive_is_cloudinit(value)) {
		int rc = 0;
		if (strcmp(vol, "none") != 0 && strcmp(vol, "cdrom") != 0 &&
		    !cluster_volume(x->c, vol, g->node))
			rc = x->from_file ? file_volume(x, g, vol, "iso", value, cp)
					  : sfail(x, cp, "volume '%s' does not exist", vol);
		free(vol);
		return rc;
	}
	char *sid = volid_storage(vol);
	int rc = 0;
	struct sim_storage *s = sid ? cluster_storage(x->c, sid) : NULL;
	if (!sid || !vol[strlen(sid) + 1])
		rc = sfail(x, cp, "invalid volume '%s'", vol);
	else if (!s)
		rc = sfail(x, cp, "storage '%s' does not exist", sid);
	else if (!storage_on_node(s, g->node))
		rc = sfail(x, cp, "storage '%s' is not available on node '%s'", sid,
			   g->node);
	else if (!storage_has_content(s, strcmp(g->type, "qemu") == 0 ? "images"
								       : "rootdir"))
		rc = sfail(x, cp, "storage '%s' does not support %s", sid,
			   strcmp(g->type, "qemu") == 0 ? "vm images"
							: "container directories");
	if (rc == 0 && drive_is_cloudinit(value)) {
		/* PVE names the cloud-init volume vm-VMID-cloudinit */
		char *volid = strstr(vol, ":cloudinit")
				      ? strprintf("%s:vm-%d-cloudinit", sid, g->vmid)
				      : strdup(vol);
		char *nv = volid ? strprintf("%s,media=cdrom", volid) : NULL;
		if (!nv || (!cluster_volume(x->c, volid, g->node) &&
			    !volume_add(x->c, volid, g->node, g->vmid, 4 * MiB,
					"images")))
			rc = -1;
		else
			json_object_object_add(g->config, key, json_object_new_string(nv));
		free(volid);
		free(nv);
	} else if (rc == 0) {
		char *sz = prop_get(value, "size");
		uint64_t size = FILE_DISK_SIZE;
		if (!sz && !x->from_file)
			rc = sfail(x, cp, "drive '%s' has no size=", value);
		else if (sz && parse_size(sz, &size) < 0)
			rc = sfail(x, cp, "invalid size '%s'", sz);
		free(sz);
		if (rc == 0 && !cluster_volume(x->c, vol, g->node) &&
		    !volume_add(x->c, vol, g->node, vmid_of_volname(vol, g->vmid),
				size, strcmp(g->type, "qemu") == 0 ? "images"
								     : "rootdir"))
			rc = -1;
	}
	free(sid);
	free(vol);
	return rc;
}

static const char *const qemu_nic_models[] = {
	"e1000", "e1000e", "virtio", "rtl8139", "vmxnet3", "i82551", "ne2k_pci",
	NULL};

static int guest_net(struct sctx *x, struct sim_guest *g, const char *key,
		     const char *value, const char *cp)
{
	int idx = atoi(key + 3);
	if (strcmp(g->type, "qemu") == 0) {
		const char *e = strchr(value, ',');
		size_t n = e ? (size_t)(e - value) : strlen(value);
		char *first = strndup(value, n);
		if (!first)
			return -1;
		char *eq = strchr(first, '=');
		if (eq)
			*eq = '\0';
		const char *model = first;
		if (strcmp(first, "model") == 0)
			model = eq + 1;
		int rc = 0;
		if (!in_list(qemu_nic_models, model))
			rc = sfail(x, cp, "unknown NIC model '%s'", model);
		else if (eq && strcmp(first, "model") != 0 &&
			 !valid_mac(eq + 1, strlen(eq + 1)))
			rc = sfail(x, cp, "invalid MAC address '%s'", eq + 1);
		else if (!eq) {
			/* add a MAC as PVE does */
			char *mac = scenario_mac(g->vmid, idx);
			char *nv = mac ? strprintf("%s=%s%s", model, mac, e ? e : "")
				       : NULL;
			if (!nv)
				rc = -1;
			else
				json_object_object_add(g->config, key,
						       json_object_new_string(nv));
			free(mac);
			free(nv);
		}
		free(first);
		return rc;
	}
	if (strcmp(g->type, "lxc") == 0) {
		char *name = prop_get(value, "name");
		char *hw = prop_get(value, "hwaddr");
		int rc = 0;
		if (!name)
			rc = sfail(x, cp, "missing name= in '%s'", value);
		else if (hw && !valid_mac(hw, strlen(hw)))
			rc = sfail(x, cp, "invalid MAC address '%s'", hw);
		else if (!hw) {
			char *mac = scenario_mac(g->vmid, idx);
			char *nv = mac ? prop_set(value, "hwaddr", mac) : NULL;
			if (!nv)
				rc = -1;
			else
				json_object_object_add(g->config, key,
						       json_object_new_string(nv));
			free(mac);
			free(nv);
		}
		free(name);
		free(hw);
		return rc;
	}
	return 0;
}

static bool int_value(const char *s, long long *out)
{
	if (!s || !*s)
		return false;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (*end)
		return false;
	*out = v;
	return true;
}

static int guest_config(struct sctx *x, struct sim_guest *g, json_object *conf,
			const char *p)
{
	int rc = 0;
	bool has_rootfs = false;
	/* validate over a snapshot of the keys: guest_drive may rewrite values */
	struct ptrvec keys = {0};
	json_object_object_foreach(conf, k, v)
	{
		(void)v;
		if (ptrvec_push(&keys, k) < 0) {
			ptrvec_free(&keys);
			return -1;
		}
	}
	for (size_t i = 0; i < keys.n && rc == 0; i++) {
		const char *key = keys.v[i];
		json_object *val = json_object_object_get(conf, key);
		char *cp = jp(p, ".config.%s", key);
		if (!cp) {
			rc = -1;
			break;
		}
		bool keyok = isalpha((unsigned char)key[0]);
		for (const char *q = key; *q && keyok; q++)
			keyok = islower((unsigned char)*q) || isdigit((unsigned char)*q) ||
				*q == '_' || *q == '-';
		if (!keyok) {
			rc = sfail(x, cp, "invalid config key");
		} else if (!json_object_is_type(val, json_type_string) &&
			   !json_object_is_type(val, json_type_int) &&
			   !json_object_is_type(val, json_type_double)) {
			rc = sfail(x, cp, "must be a string or number, not %s",
				   type_name(val));
		} else {
			const char *s = json_object_get_string(val);
			long long iv;
			if (strcmp(key, "memory") == 0 || strcmp(key, "swap") == 0) {
				const char *m = strncmp(s, "current=", 8) == 0 ? s + 8 : s;
				if (!int_value(m, &iv) || iv < (key[0] == 's' ? 0 : 16))
					rc = sfail(x, cp, "invalid %s '%s'", key, s);
			} else if (strcmp(key, "cores") == 0 ||
				   strcmp(key, "sockets") == 0 ||
				   strcmp(key, "cpus") == 0) {
				if (!int_value(s, &iv) || iv < 1)
					rc = sfail(x, cp, "invalid %s '%s'", key, s);
			} else if (strcmp(key, "template") == 0 ||
				   strcmp(key, "onboot") == 0 ||
				   strcmp(key, "unprivileged") == 0) {
				if (!int_value(s, &iv) || (iv != 0 && iv != 1))
					rc = sfail(x, cp, "must be 0 or 1, not '%s'", s);
			} else if (strcmp(key, "lock") == 0) {
				rc = sfail(x, cp, "guests cannot start locked");
			} else if (strcmp(key, "scsihw") == 0) {
				static const char *const hw[] = {
					"lsi", "lsi53c810", "megasas", "pvscsi",
					"virtio-scsi-pci", "virtio-scsi-single", NULL};
				if (!in_list(hw, s))
					rc = sfail(x, cp, "unknown scsihw '%s'", s);
			} else if (strncmp(key, "net", 3) == 0 &&
				   isdigit((unsigned char)key[3]) &&
				   strcmp(g->type, "openvz") != 0) {
				rc = guest_net(x, g, key, s, cp);
			} else if (is_drive_key(key) && strcmp(g->type, "openvz") != 0) {
				bool lxc_key = strcmp(key, "rootfs") == 0 ||
					       strncmp(key, "mp", 2) == 0;
				if (lxc_key != (strcmp(g->type, "lxc") == 0))
					rc = sfail(x, cp, "not a %s option", g->type);
				else
					rc = guest_drive(x, g, key, s, cp);
				has_rootfs |= strcmp(key, "rootfs") == 0;
			} else if (is_unused_key(key)) {
				char *fake = strprintf("%s,size=0", s);
				rc = fake ? guest_drive(x, g, key, fake, cp) : -1;
				free(fake);
			}
		}
		free(cp);
	}
	ptrvec_free(&keys);
	if (rc == 0 && strcmp(g->type, "lxc") == 0 && !has_rootfs)
		rc = sfail(x, p, "container config needs 'rootfs'");
	if (rc == 0 && strcmp(g->type, "openvz") == 0 &&
	    !json_object_object_get_ex(conf, "ostemplate", NULL))
		rc = sfail(x, p, "openvz config needs 'ostemplate'");
	return rc;
}

/* "qemu": {"image": PATH, "format": "raw"|"qcow2"}: the guest runs as a real
 * QEMU process (qemu_guest.h), reached at its address port 22. */
static int load_guest_qemu(struct sctx *x, json_object *o, const char *p, struct sim_guest *g)
{
	static const char *const keys[] = {"image", "format", NULL};
	json_object *q, *v;
	int has = member(x, o, p, "qemu", json_type_object, false, &q);
	if (has <= 0)
		return has;
	char *qp = jp(p, ".qemu");
	if (!qp)
		return -1;
	int rc = -1;
	if (check_keys(x, q, qp, keys) < 0 || member(x, q, qp, "image", json_type_string, true, &v) < 0)
		goto out;
	const char *img = json_object_get_string(v);
	char *path = img[0] == '/' ? strdup(img) : strprintf("%s/%s", x->dir, img);
	const char *fmt = "raw";
	has = member(x, q, qp, "format", json_type_string, false, &v);
	if (has > 0)
		fmt = json_object_get_string(v);
	if (!path || has < 0) {
		free(path);
		goto out;
	}
	if (strcmp(g->type, "qemu") != 0 || !g->address || g->fixture || g->running)
		rc = sfail(x, qp, "a QEMU-backed guest is a stopped qemu guest with an address "
				  "and no fixture");
	else if (strcmp(fmt, "raw") != 0 && strcmp(fmt, "qcow2") != 0)
		rc = sfail(x, qp, "format must be 'raw' or 'qcow2', not '%s'", fmt);
	else if (access(path, R_OK) != 0)
		rc = sfail(x, qp, "image '%s': %s", path, strerror(errno));
	else
		rc = (g->qemu = qemu_guest_new(path, fmt)) ? 0 : -1;
	free(path);
out:
	free(qp);
	return rc;
}

/* The volumes of a config file's [PENDING] and snapshot sections
 * (QemuServer::foreach_volid counts them too). */
static int file_section_volumes(struct sctx *x, struct sim_guest *g, json_object *keys,
				const char *p)
{
	int rc = 0;
	json_object_object_foreach(keys, k, v)
	{
		const char *val = json_object_get_string(v);
		bool vmstate = strcmp(k, "vmstate") == 0;
		if (rc < 0 || !val || (!is_drive_key(k) && !is_unused_key(k) && !vmstate))
			continue;
		char *vol = drive_volid(val);
		char *cp = jp(p, ".%s", k);
		bool iso = !vmstate && drive_is_cdrom(val) && !drive_is_cloudinit(val);
		const char *content = iso ? "iso"
				     : strcmp(g->type, "qemu") == 0 ? "images" : "rootdir";
		rc = vol && cp ? file_volume(x, g, vol, content, val, cp) : -1;
		free(vol);
		free(cp);
	}
	return rc;
}

/* "config_file": a config file as PVE writes it (pvecfgfile.h), relative
 * to the scenario. Its main section is checked as an inline config is;
 * [PENDING], snapshots and [special:cloudinit] become the guest's. */
static int load_guest_file(struct sctx *x, struct sim_guest *g, const char *file,
			   const char *p)
{
	char *path = file[0] == '/' ? strdup(file) : strprintf("%s/%s", x->dir, file);
	if (!path)
		return -1;
	struct pvecfg_file f;
	char *msg = NULL;
	int rc = pvecfg_file_read(path, strcmp(g->type, "qemu") == 0, &f, &msg);
	free(path);
	if (rc < 0) {
		if (msg)
			sfail(x, p, "config_file %s", msg);
		free(msg);
		return -1;
	}
	char *fp = jp(p, ".config_file(%s)", file);
	x->from_file = true;
	if (!fp || json_object_deep_copy(f.config, &g->config, NULL) < 0)
		rc = -1;
	else
		rc = guest_config(x, g, f.config, fp);
	json_object_object_foreach(f.snapshots, sn, snap)
	{
		char *sp = rc == 0 ? jp(fp, "[%s]", sn) : NULL;
		if (rc == 0)
			rc = sp ? file_section_volumes(x, g, json_object_object_get(snap, "config"), sp)
				: -1;
		free(sp);
	}
	if (rc == 0) {
		char *pp = jp(fp, "%s", "[PENDING]");
		rc = pp ? file_section_volumes(x, g, f.pending, pp) : -1;
		free(pp);
	}
	x->from_file = false;
	free(fp);
	g->pending = json_object_get(f.pending);
	g->pending_delete = json_object_get(f.pending_delete);
	g->snapshots = json_object_get(f.snapshots);
	g->cloudinit = json_object_get(f.cloudinit);
	pvecfg_file_free(&f);
	if (rc == 0 && g->running && guest_is_template(g))
		rc = sfail(x, p, "a template cannot be running");
	return rc;
}

static int load_guest(struct sctx *x, json_object *o, const char *p)
{
	static const char *const keys[] = {"vmid",    "node",    "type",
					   "config",  "config_file", "status",  "fixture",
					   "address", "root",    "listen_port", "qemu", NULL};
	json_object *v;
	if (!json_object_is_type(o, json_type_object))
		return sfail(x, p, "must be an object, not %s", type_name(o));
	if (check_keys(x, o, p, keys) < 0 ||
	    member(x, o, p, "vmid", json_type_int, true, &v) < 0)
		return -1;
	long long vmid = json_object_get_int64(v);
	long long minid = x->c->major >= 4 ? 100 : 1;
	if (vmid < minid || vmid > 999999999)
		return sfail(x, p, "vmid %lld out of range (%lld - 999999999)", vmid,
			     minid);
	if (cluster_guest(x->c, (int)vmid))
		return sfail(x, p, "duplicate vmid %lld", vmid);
	struct sim_guest *g = calloc(1, sizeof(*g));
	if (!g)
		return -1;
	g->vmid = (int)vmid;
	if (ptrvec_push(&x->c->guests, g) < 0) {
		free(g);
		return -1;
	}
	if (member(x, o, p, "node", json_type_string, true, &v) < 0)
		return -1;
	if (!cluster_node(x->c, json_object_get_string(v))) {
		char *np = jp(p, ".node");
		int rc = np ? sfail(x, np, "unknown node '%s'", json_object_get_string(v)) : -1;
		free(np);
		return rc;
	}
	if (!(g->node = strdup(json_object_get_string(v))))
		return -1;
	int has = member(x, o, p, "type", json_type_string, false, &v);
	if (has < 0)
		return -1;
	const char *type = has ? json_object_get_string(v) : "qemu";
	if (strcmp(type, "qemu") != 0 && strcmp(type, "lxc") != 0 &&
	    strcmp(type, "openvz") != 0)
		return sfail(x, p, "unknown guest type '%s'", type);
	if (strcmp(type, "lxc") == 0 && x->c->major < 4)
		return sfail(x, p, "PVE %s has no LXC (use openvz)", x->c->version);
	if (strcmp(type, "openvz") == 0 && x->c->major >= 4)
		return sfail(x, p, "PVE %s has no OpenVZ (use lxc)", x->c->version);
	if (!(g->type = strdup(type)))
		return -1;
	has = member(x, o, p, "status", json_type_string, false, &v);
	if (has < 0)
		return -1;
	if (has) {
		const char *st = json_object_get_string(v);
		if (strcmp(st, "running") == 0)
			g->running = true;
		else if (strcmp(st, "stopped") != 0)
			return sfail(x, p, "status must be 'running' or 'stopped', not '%s'",
				     st);
	}
	has = member(x, o, p, "fixture", json_type_string, false, &v);
	if (has < 0 || (has && !(g->fixture = strdup(json_object_get_string(v)))))
		return -1;
	has = member(x, o, p, "address", json_type_string, false, &v);
	if (has < 0)
		return -1;
	if (has) {
		struct in_addr a;
		if (inet_pton(AF_INET, json_object_get_string(v), &a) != 1)
			return sfail(x, p, "address '%s' is not an IPv4 address",
				     json_object_get_string(v));
		if (!(g->address = strdup(json_object_get_string(v))))
			return -1;
	}
	has = member(x, o, p, "listen_port", json_type_int, false, &v);
	if (has < 0)
		return -1;
	if (has) {
		int port = json_object_get_int(v);
		if (port < 0 || port > 65535 || !g->address)
			return sfail(x, p, "listen_port needs an address and a port 0-65535 "
					   "(0: any free port)");
		g->listen_port = (unsigned)port;
		g->listen_any = port == 0;
	}
	has = member(x, o, p, "root", json_type_string, false, &v);
	if (has < 0)
		return -1;
	if (has) {
		const char *r = json_object_get_string(v);
		g->root = r[0] == '/' ? strdup(r) : strprintf("%s/%s", x->dir, r);
		if (!g->root)
			return -1;
	}
	if (load_guest_qemu(x, o, p, g) < 0)
		return -1;
	json_object *cf = NULL;
	if (member(x, o, p, "config", json_type_object, false, &v) < 0 ||
	    member(x, o, p, "config_file", json_type_string, false, &cf) < 0)
		return -1;
	if (!v == !cf)
		return sfail(x, p, "needs 'config' or 'config_file' (one of them)");
	if (cf)
		return load_guest_file(x, g, json_object_get_string(cf), p);
	if (json_object_deep_copy(v, &g->config, NULL) < 0)
		return -1;
	g->pending = json_object_new_object();
	g->pending_delete = json_object_new_array();
	g->snapshots = json_object_new_object();
	if (!g->pending || !g->pending_delete || !g->snapshots)
		return -1;
	if (guest_config(x, g, v, p) < 0)
		return -1;
	if (g->running && guest_is_template(g))
		return sfail(x, p, "a template cannot be running");
	return 0;
}

static int load_ha(struct sctx *x, json_object *arr)
{
	static const char *const keys[] = {"sid",	  "state",     "group",
					   "comment",	  "max_restart",
					   "max_relocate", "failback", NULL};
	static const char *const states[] = {"started", "stopped", "disabled",
					     "ignored", NULL};
	size_t n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		char *p = jp("$.ha", "[%zu]", i);
		if (!p)
			return -1;
		json_object *o = json_object_array_get_idx(arr, i), *v;
		int rc = 0;
		if (!json_object_is_type(o, json_type_object))
			rc = sfail(x, p, "must be an object, not %s", type_name(o));
		if (rc == 0)
			rc = check_keys(x, o, p, keys);
		if (rc == 0 && member(x, o, p, "sid", json_type_string, true, &v) < 0)
			rc = -1;
		if (rc == 0) {
			const char *sid = json_object_get_string(v);
			int id = 0;
			struct sim_guest *g = NULL;
			if ((strncmp(sid, "vm:", 3) == 0 || strncmp(sid, "ct:", 3) == 0) &&
			    (id = atoi(sid + 3)) > 0)
				g = cluster_guest(x->c, id);
			if (!g)
				rc = sfail(x, p, "sid '%s' names no guest", sid);
			else if ((sid[0] == 'v') != (strcmp(g->type, "qemu") == 0))
				rc = sfail(x, p, "sid '%s' has the wrong type", sid);
		}
		if (rc == 0 && member(x, o, p, "state", json_type_string, false, &v) > 0 &&
		    !in_list(states, json_object_get_string(v)))
			rc = sfail(x, p, "unknown state '%s'", json_object_get_string(v));
		if (rc == 0 && x->c->major >= 9 &&
		    member(x, o, p, "group", json_type_string, false, &v) > 0)
			rc = sfail(x, p, "PVE %s has no HA groups: they became node-affinity "
				   "rules (ha_rules)", x->c->version);
		if (rc == 0 && x->c->major < 9 &&
		    member(x, o, p, "failback", json_type_int, false, &v) > 0)
			rc = sfail(x, p, "failback is PVE 9's (before: a group's nofailback)");
		if (rc == 0 && (member(x, o, p, "group", json_type_string, false, &v) < 0 ||
				member(x, o, p, "failback", json_type_int, false, &v) < 0 ||
				member(x, o, p, "comment", json_type_string, false, &v) < 0 ||
				member(x, o, p, "max_restart", json_type_int, false, &v) < 0 ||
				member(x, o, p, "max_relocate", json_type_int, false, &v) < 0))
			rc = -1;
		if (rc == 0) {
			json_object *copy = NULL;
			if (json_object_deep_copy(o, &copy, NULL) < 0)
				rc = -1;
			else {
				if (!json_object_object_get_ex(copy, "state", NULL))
					json_object_object_add(copy, "state",
							       json_object_new_string("started"));
				json_object_array_add(x->c->ha, copy);
			}
		}
		if (rc == 0 && *x->err)
			rc = -1; /* a member() type error */
		free(p);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Is each item of the comma list s an HA resource of the scenario
 * (resources) or a node, with an optional ":PRIORITY" (nodes)? */
static bool ha_list_ok(struct sctx *x, const char *s, bool nodes, const char **bad)
{
	char *copy = strdup(s), *save = NULL;
	bool ok = copy && *s;
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; ok && t;
	     t = strtok_r(NULL, ",", &save)) {
		if (nodes) {
			char *colon = strchr(t, ':');
			if (colon)
				*colon = '\0';
			ok = cluster_node(x->c, t) &&
			     (!colon || (isdigit((unsigned char)colon[1]) &&
					 strspn(colon + 1, "0123456789") == strlen(colon + 1)));
		} else {
			ok = cluster_ha_entry(x->c, t) != NULL;
		}
		if (!ok)
			*bad = s;
	}
	free(copy);
	return ok;
}

/* PVE 9 HA rules as /etc/pve/ha/rules.cfg holds them (pve-ha-manager
 * src/PVE/HA/Rules.pm, Rules/NodeAffinity.pm, Rules/ResourceAffinity.pm):
 * {"rule": ID, "type": "node-affinity", "resources": "vm:100,ct:200",
 *  "nodes": "pve1:2,pve2", "strict": 0|1} or {"rule": ID, "type":
 * "resource-affinity", "resources": "vm:100,vm:101", "affinity":
 * "positive"|"negative"}; "disable" and "comment" on both. */
static int load_ha_rules(struct sctx *x, json_object *arr)
{
	static const char *const keys[] = {"rule",   "type",    "resources", "nodes",
					   "strict", "affinity", "disable",  "comment", NULL};
	size_t n = json_object_array_length(arr);
	if (x->c->major < 9)
		return sfail(x, "$.ha_rules", "HA rules are PVE 9 (this is %s: use ha[].group)",
			     x->c->version);
	for (size_t i = 0; i < n; i++) {
		char *p = jp("$.ha_rules", "[%zu]", i);
		if (!p)
			return -1;
		json_object *o = json_object_array_get_idx(arr, i), *v;
		const char *type = NULL, *bad = NULL;
		int rc = 0;
		if (!json_object_is_type(o, json_type_object))
			rc = sfail(x, p, "must be an object, not %s", type_name(o));
		if (rc == 0)
			rc = check_keys(x, o, p, keys);
		if (rc == 0 && (member(x, o, p, "rule", json_type_string, true, &v) < 0 ||
				!valid_name(json_object_get_string(v), false)))
			rc = *x->err ? -1 : sfail(x, p, "invalid rule id");
		if (rc == 0 && member(x, o, p, "type", json_type_string, true, &v) < 0)
			rc = -1;
		if (rc == 0) {
			type = json_object_get_string(v);
			if (strcmp(type, "node-affinity") != 0 &&
			    strcmp(type, "resource-affinity") != 0)
				rc = sfail(x, p, "unknown type '%s' (node-affinity, "
					   "resource-affinity)", type);
		}
		if (rc == 0 && member(x, o, p, "resources", json_type_string, true, &v) < 0)
			rc = -1;
		if (rc == 0 && !ha_list_ok(x, json_object_get_string(v), false, &bad))
			rc = sfail(x, p, "resources '%s': each must be an HA resource of $.ha", bad);
		bool node = type && strcmp(type, "node-affinity") == 0;
		if (rc == 0) {
			int has = member(x, o, p, "nodes", json_type_string, node, &v);
			if (has < 0)
				rc = -1;
			else if (has && !node)
				rc = sfail(x, p, "nodes is for node-affinity rules");
			else if (has && !ha_list_ok(x, json_object_get_string(v), true, &bad))
				rc = sfail(x, p, "nodes '%s': NODE[:PRIORITY],...", bad);
		}
		if (rc == 0) {
			int has = member(x, o, p, "affinity", json_type_string, !node, &v);
			const char *a = has > 0 ? json_object_get_string(v) : NULL;
			if (has < 0)
				rc = -1;
			else if (has && node)
				rc = sfail(x, p, "affinity is for resource-affinity rules");
			else if (a && strcmp(a, "positive") != 0 && strcmp(a, "negative") != 0)
				rc = sfail(x, p, "affinity must be positive or negative");
		}
		if (rc == 0 && (member(x, o, p, "strict", json_type_int, false, &v) < 0 ||
				member(x, o, p, "disable", json_type_int, false, &v) < 0 ||
				member(x, o, p, "comment", json_type_string, false, &v) < 0))
			rc = -1;
		json_object *copy = NULL;
		if (rc == 0 && json_object_deep_copy(o, &copy, NULL) < 0)
			rc = -1;
		if (rc == 0)
			json_object_array_add(x->c->ha_rules, copy);
		if (rc == 0 && *x->err)
			rc = -1; /* a member() type error */
		free(p);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int scenario_load(struct cluster *c, const char *path, char **err)
{
	struct sctx x = {.file = path, .err = err, .c = c};
	char *text = NULL;
	*err = NULL;
	if (read_file(path, &text, NULL) < 0) {
		*err = strprintf("%s: cannot read: %s", path, strerror(errno));
		return -1;
	}
	char *pathcopy = strdup(path);
	x.dir = pathcopy ? strdup(dirname(pathcopy)) : NULL;
	free(pathcopy);
	enum json_tokener_error jerr;
	json_object *root = json_tokener_parse_verbose(text, &jerr);
	free(text);
	int rc = 0;
	if (!x.dir)
		rc = -1;
	else if (!root)
		rc = sfail(&x, "$", "invalid JSON: %s", json_tokener_error_desc(jerr));
	else if (!json_object_is_type(root, json_type_object))
		rc = sfail(&x, "$", "must be an object, not %s", type_name(root));
	static const char *const keys[] = {"pve_version", "cluster_name", "nodes",
					   "storages",    "tokens",	  "users",	"roles",
					   "guests",	  "ha",		  "faults",
					   "ha_rules",	  "ha_disarm",	  "appliances",
					   "files",	  "datacenter",	  "comment",
					   "sdn_vnets",	  "ceph",	  "ha_shutdown_policy",
					   NULL};
	json_object *v;
	if (rc == 0)
		rc = check_keys(&x, root, "$", keys);
	if (rc == 0 && member(&x, root, "$", "pve_version", json_type_string, true,
			      &v) < 0)
		rc = -1;
	if (rc == 0) {
		const char *ver = json_object_get_string(v);
		char *end;
		long maj = strtol(ver, &end, 10);
		if (maj < 2 || maj > 9 || *end != '.' || !isdigit((unsigned char)end[1]))
			rc = sfail(&x, "$.pve_version", "invalid version '%s'", ver);
		else if (!(c->version = strdup(ver)))
			rc = -1;
		else
			c->major = (int)maj;
	}
	if (rc == 0) {
		int has = member(&x, root, "$", "cluster_name", json_type_string, false,
				 &v);
		if (has < 0 || !(c->cluster_name = strdup(
					has ? json_object_get_string(v) : "pvesim")))
			rc = -1;
	}
	if (rc == 0 && member(&x, root, "$", "nodes", json_type_array, true, &v) < 0)
		rc = -1;
	if (rc == 0)
		rc = load_nodes(&x, v);
	if (rc == 0) {
		int has = member(&x, root, "$", "storages", json_type_array, false, &v);
		if (has < 0 || (has && load_storages(&x, v) < 0))
			rc = -1;
	}
	if (rc == 0 && !(c->acl = acl_new(c->major)))
		rc = -1;
	if (rc == 0) {
		int has = member(&x, root, "$", "roles", json_type_object, false, &v);
		if (has < 0 || (has && load_roles(&x, v) < 0))
			rc = -1;
	}
	if (rc == 0) {
		int has = member(&x, root, "$", "tokens", json_type_array, false, &v);
		if (has < 0 || (has && load_creds(&x, v, "tokens", &c->tokens) < 0))
			rc = -1;
	}
	if (rc == 0) {
		int has = member(&x, root, "$", "users", json_type_array, false, &v);
		if (has < 0 || (has && load_creds(&x, v, "users", &c->users) < 0))
			rc = -1;
	}
	if (rc == 0) {
		int has = member(&x, root, "$", "guests", json_type_array, false, &v);
		if (has < 0)
			rc = -1;
		for (size_t i = 0; has > 0 && rc == 0 && i < json_object_array_length(v);
		     i++) {
			char *p = jp("$.guests", "[%zu]", i);
			rc = p ? load_guest(&x, json_object_array_get_idx(v, i), p) : -1;
			free(p);
		}
	}
	if (rc == 0) {
		/* a hyper-converged Ceph cluster (ceph.c) */
		int has = member(&x, root, "$", "ceph", json_type_object, false, &v);
		char *cerr = NULL;
		if (has < 0 || (has && !(c->ceph = ceph_new(v, "$.ceph", &cerr)))) {
			if (cerr)
				*x.err = strprintf("%s: %s", x.file, cerr);
			free(cerr);
			rc = -1;
		}
	}
	if (rc == 0 &&
	    member(&x, root, "$", "ha_shutdown_policy", json_type_string, false, &v) > 0) {
		/* datacenter.cfg's ha: shutdown_policy, for a node's reboot
		 * (nodelife.c); migrate (the LRM migrating away) is not modelled */
		const char *pol = json_object_get_string(v);
		if (strcmp(pol, "conditional") == 0 || strcmp(pol, "freeze") == 0)
			c->ha_freeze_on_reboot = true;
		else if (strcmp(pol, "failover") != 0)
			rc = sfail(&x, "$.ha_shutdown_policy",
				   "'%s' is not modelled (failover, conditional or freeze)", pol);
	}
	if (rc == 0 && *x.err)
		rc = -1;
	if (rc == 0 && !(c->ha = json_object_new_array()))
		rc = -1;
	if (rc == 0) {
		int has = member(&x, root, "$", "ha", json_type_array, false, &v);
		if (has < 0 || (has && load_ha(&x, v) < 0))
			rc = -1;
	}
	if (rc == 0 && !(c->ha_rules = json_object_new_array()))
		rc = -1;
	if (rc == 0) {
		int has = member(&x, root, "$", "ha_rules", json_type_array, false, &v);
		if (has < 0 || (has && load_ha_rules(&x, v) < 0))
			rc = -1;
	}
	if (rc == 0) {
		/* `ha-manager crm-command disarm-ha MODE` done (pve-ha-manager 5.1.3+) */
		int has = member(&x, root, "$", "ha_disarm", json_type_string, false, &v);
		const char *mode = has > 0 ? json_object_get_string(v) : NULL;
		if (mode && c->major < 9)
			rc = sfail(&x, "$.ha_disarm", "disarming HA is PVE 9");
		else if (mode && strcmp(mode, "freeze") != 0 && strcmp(mode, "ignore") != 0)
			rc = sfail(&x, "$.ha_disarm", "resource mode must be freeze or ignore");
		else if (has < 0 || (mode && !(c->ha_disarm = strdup(mode))))
			rc = -1;
	}
	if (rc == 0) {
		int has = member(&x, root, "$", "faults", json_type_array, false, &v);
		if (has < 0)
			rc = -1;
		for (size_t i = 0; has > 0 && rc == 0 && i < json_object_array_length(v);
		     i++) {
			json_object *f = json_object_array_get_idx(v, i);
			if (!json_object_is_type(f, json_type_object)) {
				char *p = jp("$.faults", "[%zu]", i);
				rc = p ? sfail(&x, p, "must be an object, not %s", type_name(f))
				       : -1;
				free(p);
			}
		}
		if (rc == 0 && has > 0 && json_object_deep_copy(v, &c->faults, NULL) < 0)
			rc = -1;
	}
	if (rc == 0) {
		/* the appliance catalogue aplinfo lists (routes_storage.c) */
		int has = member(&x, root, "$", "appliances", json_type_array, false, &v);
		for (size_t i = 0; has > 0 && rc == 0 && i < json_object_array_length(v); i++) {
			json_object *a = json_object_array_get_idx(v, i), *t = NULL;
			if (!json_object_object_get_ex(a, "template", &t) ||
			    !json_object_object_get_ex(a, "location", &t) ||
			    !json_object_object_get_ex(a, "sha512sum", &t)) {
				char *p = jp("$.appliances", "[%zu]", i);
				rc = p ? sfail(&x, p, "needs template, location and sha512sum") : -1;
				free(p);
			}
		}
		if (has < 0 || (rc == 0 && has > 0 && json_object_deep_copy(v, &c->appliances,
									     NULL) < 0))
			rc = -1;
	}
	if (rc == 0) {
		/* SDN VNets, names (routes_nodeinfo.c lists them with any_bridge) */
		int has = member(&x, root, "$", "sdn_vnets", json_type_array, false, &v);
		for (size_t i = 0; has > 0 && rc == 0 && i < json_object_array_length(v); i++)
			if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_string)) {
				char *p = jp("$.sdn_vnets", "[%zu]", i);
				rc = p ? sfail(&x, p, "must be a VNet's name") : -1;
				free(p);
			}
		if (has < 0 || (rc == 0 && has > 0 && json_object_deep_copy(v, &c->sdn_vnets,
									     NULL) < 0))
			rc = -1;
	}
	if (rc == 0) {
		/* downloads kept as real files (routes_storage.c, the lab) */
		int has = member(&x, root, "$", "files", json_type_string, false, &v);
		if (has > 0 && json_object_get_string(v)[0] != '/')
			rc = sfail(&x, "$.files", "must be an absolute directory");
		else if (has < 0 || (has > 0 && !(c->files_dir = strdup(json_object_get_string(v)))))
			rc = -1;
	}
	if (rc == 0) {
		/* datacenter.cfg's tag options, in its syntax (cluster_options.c) */
		static const char *const dkeys[] = {"user-tag-access", "registered-tags", NULL};
		int has = member(&x, root, "$", "datacenter", json_type_object, false, &v);
		json_object *u = NULL, *rt = NULL;
		if (has > 0 && (check_keys(&x, v, "$.datacenter", dkeys) < 0 ||
				member(&x, v, "$.datacenter", "user-tag-access", json_type_string,
				       false, &u) < 0 ||
				member(&x, v, "$.datacenter", "registered-tags", json_type_string,
				       false, &rt) < 0))
			rc = -1;
		const char *ua = u ? strstr(json_object_get_string(u), "user-allow=") : NULL;
		if (rc == 0 && ua) {
			ua += strlen("user-allow=");
			size_t n = strcspn(ua, ",");
			bool known = false;
			for (const char *const *e = (const char *const[]){"none", "list", "existing",
									    "free", NULL};
			     *e; e++)
				known = known || (strlen(*e) == n && strncmp(ua, *e, n) == 0);
			if (!known)
				rc = sfail(&x, "$.datacenter.user-tag-access",
					   "user-allow must be none, list, existing or free");
		}
		if (rc == 0 && has > 0 && json_object_deep_copy(v, &c->datacenter, NULL) < 0)
			rc = -1;
		if (has < 0)
			rc = -1;
	}
	json_object_put(root);
	free(x.dir);
	return rc;
}
