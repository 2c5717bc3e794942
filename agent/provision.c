/* provision.c - the `up` and `down` workflows (see provision.h): per-name
 * find/clone/create/converge/resize/start/address/inject with step
 * timings (inject after a bounded wait for the guest's SSH), the worker
 * pool for parallel rollout, the config difference (key by key, property
 * strings normalised) and the LXC <-> OpenVZ translation. */
#include "provision.h"

#include "log.h"
#include "pvecfg.h"
#include "pvekeys.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEF_PARALLEL 4
#define DEF_SSH_WAIT_S 300.0

/* ---- results ------------------------------------------------------------------ */

const char *up_status_name(enum up_status s)
{
	switch (s) {
	case UP_FAILED: return "failed";
	case UP_CREATED: return "created";
	case UP_CONVERGED: return "converged";
	case UP_UNCHANGED: return "unchanged";
	case UP_DELETED: return "deleted";
	case UP_ABSENT: return "absent";
	}
	return "?";
}

void up_result_free(struct up_result *r)
{
	if (!r)
		return;
	free(r->name);
	free(r->node);
	free(r->address);
	free(r->pending);
	free(r->inject.summary);
	for (size_t i = 0; i < r->n_steps; i++)
		free(r->steps[i].step);
	free(r->steps);
	for (size_t i = 0; i < r->n_diff; i++)
		free(r->diff[i]);
	free(r->diff);
	pve_error_clear(&r->error);
	memset(r, 0, sizeof *r);
}

void up_results_free(struct up_result *r, size_t n)
{
	if (!r)
		return;
	for (size_t i = 0; i < n; i++)
		up_result_free(&r[i]);
	free(r);
}

int provision_exit_code(const struct up_result *r, size_t n)
{
	int code = 0;
	for (size_t i = 0; i < n; i++) {
		if (r[i].status != UP_FAILED)
			continue;
		int c = pve_error_exit_code(&r[i].error);
		if (c == 0)
			c = 1;
		/* the most serious: 3 (needs attention) > 4 > 2 > 1 */
		int rank_c = c == 3 ? 4 : c == 4 ? 3 : c == 2 ? 2 : 1;
		int rank_old = code == 3 ? 4 : code == 4 ? 3 : code == 2 ? 2 : code ? 1 : 0;
		if (rank_c > rank_old)
			code = c;
	}
	return code;
}

/* ---- small helpers ------------------------------------------------------------ */

static int oom(struct pve_error *err)
{
	pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
	return -1;
}

static char *jscalar_dup(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v) || !v)
		return NULL;
	if (json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_array))
		return NULL;
	return strdup(json_object_get_string(v));
}

static enum pvekey_kind pvekind(enum guest_type t)
{
	return t == GUEST_QEMU ? PVEKEY_QEMU : t == GUEST_LXC ? PVEKEY_LXC : PVEKEY_OPENVZ;
}

static int parse_bool(const char *s)
{
	if (!s)
		return -1;
	if (strcasecmp(s, "1") == 0 || strcasecmp(s, "yes") == 0 || strcasecmp(s, "on") == 0 ||
	    strcasecmp(s, "true") == 0)
		return 1;
	if (strcasecmp(s, "0") == 0 || strcasecmp(s, "no") == 0 || strcasecmp(s, "off") == 0 ||
	    strcasecmp(s, "false") == 0)
		return 0;
	return -1;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Percent-decoded copy with trailing whitespace removed. */
static char *pct_decode_trim(const char *s)
{
	size_t n = strlen(s);
	char *o = malloc(n + 1), *p = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int hi = i + 2 < n ? hexval((unsigned char)s[i + 1]) : -1;
		int lo = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
		if (s[i] == '%' && hi >= 0 && lo >= 0) {
			*p++ = (char)(hi * 16 + lo);
			i += 2;
		} else {
			*p++ = s[i];
		}
	}
	*p = 0;
	while (p > o && isspace((unsigned char)p[-1]))
		*--p = 0;
	return o;
}

static char *trim_dup(const char *s)
{
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	char *o = malloc(n + 1);
	if (!o)
		return NULL;
	memcpy(o, s, n);
	o[n] = 0;
	return o;
}

/* ---- config difference ---------------------------------------------------------- */

static const char *const nic_models[] = {
	"e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551",
	"i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3",
};

static bool is_nic_model(const char *s)
{
	for (size_t i = 0; i < sizeof nic_models / sizeof nic_models[0]; i++)
		if (s && strcmp(s, nic_models[i]) == 0)
			return true;
	return false;
}

static bool indexed(const char *key, const char *base)
{
	size_t n = strlen(base);
	if (strncmp(key, base, n) != 0 || !key[n])
		return false;
	for (const char *p = key + n; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}

static bool is_drive_key(enum guest_type t, const char *key)
{
	int idx;
	if (t == GUEST_QEMU)
		return pvecfg_disk_key(key, &idx) != BUS_NONE || strcmp(key, "efidisk0") == 0 ||
		       strcmp(key, "tpmstate0") == 0 || indexed(key, "unused");
	if (t == GUEST_LXC)
		return strcmp(key, "rootfs") == 0 || indexed(key, "mp") || indexed(key, "unused");
	return false;
}

/* Name of the leading (key-less) element of a property string. */
static const char *default_key(enum guest_type t, const char *key)
{
	if (t == GUEST_QEMU && indexed(key, "net"))
		return "model";
	if (is_drive_key(t, key))
		return "file";
	if (t == GUEST_QEMU) {
		if (strcmp(key, "agent") == 0)
			return "enabled";
		if (strcmp(key, "memory") == 0)
			return "current";
		if (strcmp(key, "vga") == 0 || strcmp(key, "machine") == 0)
			return "type";
		if (strcmp(key, "cpu") == 0)
			return "cputype";
	}
	return "";
}

/* Normalised key -> value pairs of a property string. */
struct nkv {
	char *k, *v;
};
struct nmap {
	struct nkv *v;
	size_t n;
};

static void nmap_free(struct nmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].k);
		free(m->v[i].v);
	}
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

static const char *nmap_get(const struct nmap *m, const char *k)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i].k, k) == 0)
			return m->v[i].v;
	return NULL;
}

static int nmap_add(struct nmap *m, const char *k, const char *v)
{
	struct nkv *nv = realloc(m->v, (m->n + 1) * sizeof *nv);
	if (!nv)
		return -1;
	m->v = nv;
	m->v[m->n].k = strdup(k);
	m->v[m->n].v = strdup(v ? v : "");
	if (!m->v[m->n].k || !m->v[m->n].v) {
		free(m->v[m->n].k);
		free(m->v[m->n].v);
		return -1;
	}
	m->n++;
	return 0;
}

static int normalise(enum guest_type t, const char *key, const char *value, struct nmap *out)
{
	out->v = NULL;
	out->n = 0;
	struct propstr ps;
	if (propstr_parse(value, &ps) < 0)
		return -1;
	bool net = t == GUEST_QEMU && indexed(key, "net");
	int rc = 0;
	for (size_t i = 0; i < ps.n && rc == 0; i++) {
		const char *k = ps.v[i].key, *v = ps.v[i].value;
		if (!k) {
			rc = nmap_add(out, default_key(t, key), v);
		} else if (net && is_nic_model(k)) {
			rc = nmap_add(out, "model", k);
			if (rc == 0)
				rc = nmap_add(out, "macaddr", v);
		} else {
			rc = nmap_add(out, k, v);
		}
	}
	propstr_free(&ps);
	if (rc < 0)
		nmap_free(out);
	return rc;
}

/* "local-lvm:32", "local-lvm:0.5", "local-lvm:cloudinit": allocations. */
static bool is_alloc(const char *file)
{
	const char *c = file ? strchr(file, ':') : NULL;
	if (!c || c == file || !c[1])
		return false;
	if (strcmp(c + 1, "cloudinit") == 0)
		return true;
	for (const char *p = c + 1; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != '.')
			return false;
	return true;
}

static bool values_equal(enum guest_type t, const char *key, const char *want, const char *cur)
{
	if (!cur)
		return false;
	if (strcmp(want, cur) == 0)
		return true;
	const struct pvekey *pk = pvekey_lookup(pvekind(t), key);
	if (pk && pk->type == PVEKEY_T_BOOLEAN) {
		int a = parse_bool(want), b = parse_bool(cur);
		return a >= 0 && a == b;
	}
	if (pk && (pk->type == PVEKEY_T_NUMBER || pk->type == PVEKEY_T_INTEGER)) {
		char *e1, *e2;
		double a = strtod(want, &e1), b = strtod(cur, &e2);
		if (!*e1 && !*e2 && e1 != want && e2 != cur)
			return a == b;
		return false;
	}
	if (strcmp(key, "sshkeys") == 0 || strcmp(key, "description") == 0) {
		char *a = strcmp(key, "sshkeys") == 0 ? pct_decode_trim(want) : trim_dup(want);
		char *b = strcmp(key, "sshkeys") == 0 ? pct_decode_trim(cur) : trim_dup(cur);
		bool eq = a && b && strcmp(a, b) == 0;
		free(a);
		free(b);
		return eq;
	}
	if (!strchr(want, '=') && !strchr(want, ',') && !strchr(cur, '=') && !strchr(cur, ','))
		return false;
	struct nmap w, c;
	if (normalise(t, key, want, &w) < 0)
		return false;
	if (normalise(t, key, cur, &c) < 0) {
		nmap_free(&w);
		return false;
	}
	bool eq = true;
	bool drive = is_drive_key(t, key);
	for (size_t i = 0; i < w.n && eq; i++) {
		const char *k = w.v[i].k, *v = w.v[i].v;
		const char *cv = nmap_get(&c, k);
		if (drive && strcmp(k, "file") == 0 && is_alloc(v)) {
			/* an allocation: equal if a disk is there */
			eq = nmap_get(&c, "file") != NULL;
			continue;
		}
		if (!cv) {
			eq = false;
		} else if (strcmp(k, "macaddr") == 0 || strcmp(k, "hwaddr") == 0 || strcmp(k, "mac") == 0) {
			eq = strcasecmp(v, cv) == 0;
		} else if (strcmp(v, cv) != 0) {
			int a = parse_bool(v), b = parse_bool(cv);
			eq = a >= 0 && a == b;
		}
	}
	nmap_free(&w);
	nmap_free(&c);
	return eq;
}

char *provision_keep_mac(const char *desired, const char *current)
{
	if (!current)
		return strdup(desired);
	struct propstr d, c;
	if (propstr_parse(desired, &d) < 0)
		return NULL;
	if (propstr_parse(current, &c) < 0) {
		propstr_free(&d);
		return strdup(desired);
	}
	char *out = NULL;
	bool lxc = propstr_get(&d, "name") != NULL;
	if (lxc) {
		const char *mac = propstr_get(&c, "hwaddr");
		if (!propstr_get(&d, "hwaddr") && mac) {
			if (propstr_set(&d, "hwaddr", mac) == 0)
				out = propstr_format(&d);
		} else {
			out = strdup(desired);
		}
		goto done;
	}
	/* qemu: does desired name a MAC already? */
	const char *model = NULL;
	for (size_t i = 0; i < d.n; i++) {
		const char *k = d.v[i].key;
		if (k && (strcmp(k, "macaddr") == 0 || is_nic_model(k))) {
			out = strdup(desired);
			goto done;
		}
		if (!k || strcmp(k, "model") == 0)
			model = d.v[i].value;
	}
	const char *mac = propstr_get(&c, "macaddr");
	for (size_t i = 0; !mac && i < c.n; i++)
		if (c.v[i].key && is_nic_model(c.v[i].key))
			mac = c.v[i].value;
	if (!mac || !model) {
		out = strdup(desired);
		goto done;
	}
	struct sbuf b = {0};
	int rc = sbuf_addf(&b, "%s=%s", model, mac);
	for (size_t i = 0; i < d.n && rc == 0; i++) {
		if (!d.v[i].key || strcmp(d.v[i].key, "model") == 0)
			continue;
		rc = sbuf_addf(&b, ",%s=%s", d.v[i].key, d.v[i].value);
	}
	if (rc == 0)
		out = sbuf_steal(&b);
	sbuf_free(&b);
done:
	propstr_free(&d);
	propstr_free(&c);
	return out;
}

void cfg_changes_free(struct cfg_change *c, size_t n)
{
	if (!c)
		return;
	for (size_t i = 0; i < n; i++) {
		free(c[i].key);
		free(c[i].old_value);
		free(c[i].new_value);
	}
	free(c);
}

int provision_config_diff(enum guest_type type, json_object *current,
			  const struct tmpl_kvlist *desired, struct cfg_change **changes,
			  size_t *n, char **err)
{
	*changes = NULL;
	*n = 0;
	if (err)
		*err = NULL;
	struct cfg_change *v = NULL;
	size_t nv = 0;
	for (size_t i = 0; desired && i < desired->n; i++) {
		const char *key = desired->items[i].key;
		/* the last occurrence of a key wins */
		bool later = false;
		for (size_t j = i + 1; j < desired->n && !later; j++)
			later = strcmp(desired->items[j].key, key) == 0;
		if (later)
			continue;
		const char *want = desired->items[i].value ? desired->items[i].value : "";
		const struct pvekey *pk = pvekey_lookup(pvekind(type), key);
		if (pk && !(pk->where & PVEKEY_CONFIG))
			continue; /* create-only (ostemplate, ssh-public-keys, ...) */
		json_object *cv = NULL;
		char *cur = NULL;
		if (current && json_object_object_get_ex(current, key, &cv) && cv &&
		    !json_object_is_type(cv, json_type_object) &&
		    !json_object_is_type(cv, json_type_array)) {
			cur = strdup(json_object_get_string(cv));
			if (!cur)
				goto nomem;
		}
		char *newv = NULL;
		if (type != GUEST_OPENVZ && indexed(key, "net") && cur)
			newv = provision_keep_mac(want, cur); /* qemu MAC, lxc hwaddr */
		else
			newv = strdup(want);
		if (!newv) {
			free(cur);
			goto nomem;
		}
		if (values_equal(type, key, newv, cur)) {
			free(cur);
			free(newv);
			continue;
		}
		struct cfg_change *nvp = realloc(v, (nv + 1) * sizeof *nvp);
		char *k = strdup(key);
		if (!nvp || !k) {
			if (nvp)
				v = nvp;
			free(k);
			free(cur);
			free(newv);
			goto nomem;
		}
		v = nvp;
		v[nv++] = (struct cfg_change){k, cur, newv};
	}
	*changes = v;
	*n = nv;
	return 0;
nomem:
	cfg_changes_free(v, nv);
	if (err)
		*err = strdup("out of memory");
	return -1;
}

/* ---- LXC <-> OpenVZ ------------------------------------------------------------- */

static const char *const ct_same[] = {"hostname", "description", "memory", "swap", "onboot",
				      "nameserver", "searchdomain", "cpuunits", "storage"};
static const char *const lxc_only_harmless[] = {"ssh-public-keys", "unprivileged", "features",
						"ostype", "arch", "tty", "cmode", "console",
						"timezone", "tags", "protection", "startup"};
static const char *const ovz_only_harmless[] = {"quotatime", "quotaugidlimit", "diskinodes",
						"pool"};

static bool in_list(const char *k, const char *const *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(k, l[i]) == 0)
			return true;
	return false;
}
#define IN(k, arr) in_list((k), (arr), sizeof(arr) / sizeof((arr)[0]))

static int to_openvz(const struct tmpl_kvlist *in, struct tmpl_kvlist *out, struct sbuf *errs)
{
	int rc = 0;
	for (size_t i = 0; i < in->n && rc == 0; i++) {
		const char *k = in->items[i].key, *v = in->items[i].value ? in->items[i].value : "";
		int line = in->items[i].line;
		if (IN(k, ct_same)) {
			rc = tmpl_kvlist_set(out, k, v);
		} else if (strcmp(k, "cores") == 0) {
			rc = tmpl_kvlist_set(out, "cpus", v);
		} else if (strcmp(k, "rootfs") == 0) {
			/* "STORAGE:SIZE[,opts]" */
			struct propstr ps;
			if (propstr_parse(v, &ps) < 0)
				return -1;
			const char *vol = propstr_get(&ps, NULL);
			if (!vol)
				vol = propstr_get(&ps, "volume");
			const char *colon = vol ? strchr(vol, ':') : NULL;
			if (colon && is_alloc(vol)) {
				char *st = strndup(vol, (size_t)(colon - vol));
				rc = st ? tmpl_kvlist_set(out, "disk", colon + 1) : -1;
				if (rc == 0 && !tmpl_kvlist_get(in, "storage"))
					rc = tmpl_kvlist_set(out, "storage", st);
				free(st);
			} else {
				rc = sbuf_addf(errs, "%srootfs '%s': only STORAGE:SIZE translates to "
						     "OpenVZ",
					       errs->len ? "\n" : "", v);
			}
			propstr_free(&ps);
		} else if (strcmp(k, "net0") == 0) {
			struct propstr ps;
			if (propstr_parse(v, &ps) < 0)
				return -1;
			struct sbuf nb = {0};
			const char *name = propstr_get(&ps, "name");
			const char *br = propstr_get(&ps, "bridge");
			const char *mac = propstr_get(&ps, "hwaddr");
			const char *ip = propstr_get(&ps, "ip");
			rc = sbuf_addf(&nb, "ifname=%s", name ? name : "eth0");
			if (rc == 0 && br)
				rc = sbuf_addf(&nb, ",bridge=%s", br);
			if (rc == 0 && mac)
				rc = sbuf_addf(&nb, ",mac=%s", mac);
			if (rc == 0)
				rc = tmpl_kvlist_set(out, "netif", sbuf_str(&nb));
			if (rc == 0 && ip && strcmp(ip, "dhcp") != 0 && strcmp(ip, "manual") != 0) {
				char *a = strndup(ip, strcspn(ip, "/"));
				rc = a ? tmpl_kvlist_set(out, "ip_address", a) : -1;
				free(a);
			}
			sbuf_free(&nb);
			propstr_free(&ps);
		} else if (IN(k, lxc_only_harmless)) {
			log_warn("OpenVZ has no '%s'; left out", k);
		} else {
			rc = sbuf_addf(errs, "%sline %d: '%s' has no OpenVZ equivalent",
				       errs->len ? "\n" : "", line, k);
		}
	}
	return rc;
}

static int to_lxc(const struct tmpl_kvlist *in, struct tmpl_kvlist *out, struct sbuf *errs)
{
	int rc = 0;
	const char *storage = tmpl_kvlist_get(in, "storage");
	const char *ipaddr = tmpl_kvlist_get(in, "ip_address");
	bool have_net = false;
	for (size_t i = 0; i < in->n && rc == 0; i++) {
		const char *k = in->items[i].key, *v = in->items[i].value ? in->items[i].value : "";
		int line = in->items[i].line;
		if (strcmp(k, "storage") == 0 || strcmp(k, "ip_address") == 0) {
			continue;
		} else if (IN(k, ct_same)) {
			rc = tmpl_kvlist_set(out, k, v);
		} else if (strcmp(k, "cpus") == 0) {
			rc = tmpl_kvlist_set(out, "cores", v);
		} else if (strcmp(k, "disk") == 0) {
			char *r = strprintf("%s:%s", storage ? storage : "local", v);
			rc = r ? tmpl_kvlist_set(out, "rootfs", r) : -1;
			free(r);
		} else if (strcmp(k, "netif") == 0) {
			/* first interface only */
			char *first = strndup(v, strcspn(v, ";"));
			struct propstr ps;
			if (!first || propstr_parse(first, &ps) < 0) {
				free(first);
				return -1;
			}
			free(first);
			struct sbuf nb = {0};
			const char *name = propstr_get(&ps, "ifname");
			const char *br = propstr_get(&ps, "bridge");
			const char *mac = propstr_get(&ps, "mac");
			rc = sbuf_addf(&nb, "name=%s", name ? name : "eth0");
			if (rc == 0 && br)
				rc = sbuf_addf(&nb, ",bridge=%s", br);
			if (rc == 0 && mac)
				rc = sbuf_addf(&nb, ",hwaddr=%s", mac);
			if (rc == 0 && ipaddr)
				rc = sbuf_addf(&nb, ",ip=%s/32", ipaddr);
			if (rc == 0)
				rc = tmpl_kvlist_set(out, "net0", sbuf_str(&nb));
			have_net = true;
			sbuf_free(&nb);
			propstr_free(&ps);
		} else if (IN(k, ovz_only_harmless)) {
			log_warn("LXC has no '%s'; left out", k);
		} else {
			rc = sbuf_addf(errs, "%sline %d: '%s' has no LXC equivalent",
				       errs->len ? "\n" : "", line, k);
		}
	}
	if (rc == 0 && !have_net && ipaddr) {
		char *n = strprintf("name=eth0,bridge=vmbr0,ip=%s/32", ipaddr);
		rc = n ? tmpl_kvlist_set(out, "net0", n) : -1;
		free(n);
	}
	return rc;
}

int provision_ct_translate(enum guest_type to, const struct tmpl_kvlist *in,
			   struct tmpl_kvlist *out, char **err)
{
	memset(out, 0, sizeof *out);
	if (err)
		*err = NULL;
	struct sbuf errs = {0};
	int rc = to == GUEST_OPENVZ ? to_openvz(in, out, &errs) : to_lxc(in, out, &errs);
	if (rc == 0 && errs.len == 0) {
		sbuf_free(&errs);
		return 0;
	}
	tmpl_kvlist_free(out);
	if (err)
		*err = rc < 0 ? strdup("out of memory") : sbuf_steal(&errs);
	sbuf_free(&errs);
	return -1;
}

/* ---- the run ------------------------------------------------------------------- */

struct up_run {
	const struct up_request *req;
	struct up_result *results;
	pthread_mutex_t mu; /* next, and event delivery */
	size_t next;
};

/* Per-name context. */
struct one {
	struct up_run *run;
	struct up_result *res;
	struct pve *c;
	struct guest_wait w;
	const char *step;
	double t0;
};

static void emit(struct one *o, enum up_event_kind kind, const char *step, double elapsed,
		 double pct, const char *text)
{
	const struct up_request *req = o->run->req;
	if (!req->on_event)
		return;
	struct up_event ev = {
		.kind = kind,
		.name = o->res->name,
		.vmid = o->res->vmid,
		.node = o->res->node,
		.step = step,
		.elapsed_s = elapsed,
		.percent = pct,
		.text = text,
		.result = kind == UP_EV_DONE ? o->res : NULL,
	};
	pthread_mutex_lock(&o->run->mu);
	req->on_event(req->event_ctx, &ev);
	pthread_mutex_unlock(&o->run->mu);
}

static void on_progress(void *ctx, const char *step, double pct, const char *text)
{
	struct one *o = ctx;
	emit(o, UP_EV_PROGRESS, step ? step : o->step, 0, pct, text);
}

static void step_begin(struct one *o, const char *step)
{
	o->step = step;
	o->t0 = pve_clock_now(o->w.clock);
}

static int step_end(struct one *o, const char *summary, struct pve_error *err)
{
	double el = pve_clock_now(o->w.clock) - o->t0;
	struct up_result *r = o->res;
	struct up_step *ns = realloc(r->steps, (r->n_steps + 1) * sizeof *ns);
	if (!ns)
		return oom(err);
	r->steps = ns;
	r->steps[r->n_steps].step = strdup(o->step);
	if (!r->steps[r->n_steps].step)
		return oom(err);
	r->steps[r->n_steps].elapsed_s = el;
	r->n_steps++;
	emit(o, UP_EV_STEP, o->step, el, -1, summary);
	return 0;
}

static int set_ref_info(struct one *o, const struct guest_ref *g, struct pve_error *err)
{
	o->res->vmid = g->vmid;
	o->res->type = g->type;
	free(o->res->node);
	o->res->node = g->node ? strdup(g->node) : NULL;
	if (g->node && !o->res->node)
		return oom(err);
	return 0;
}

/* Variables for expansion: --var values plus the built-ins. */
static int build_vars(const struct up_request *req, const char *name, int vmid, const char *node,
		      struct tmpl_kvlist *vars)
{
	memset(vars, 0, sizeof *vars);
	for (size_t i = 0; req->vars && i < req->vars->n; i++)
		if (tmpl_kvlist_set(vars, req->vars->items[i].key, req->vars->items[i].value) < 0)
			return -1;
	char id[24];
	snprintf(id, sizeof id, "%d", vmid);
	if (tmpl_kvlist_set(vars, "name", name) < 0 || tmpl_kvlist_set(vars, "vmid", id) < 0)
		return -1;
	if (node && tmpl_kvlist_set(vars, "node", node) < 0)
		return -1;
	if (req->storage && tmpl_kvlist_set(vars, "storage", req->storage) < 0)
		return -1;
	if (req->pubkey && tmpl_kvlist_set(vars, "pubkey", req->pubkey) < 0)
		return -1;
	return 0;
}

static int expand(const struct up_request *req, const char *name, int vmid, const char *node,
		  struct tmpl_inst *inst, struct pve_error *err)
{
	struct tmpl_kvlist vars;
	memset(inst, 0, sizeof *inst);
	if (build_vars(req, name, vmid, node, &vars) < 0) {
		tmpl_kvlist_free(&vars);
		return oom(err);
	}
	char *msg = NULL;
	int rc = tmpl_expand(req->tmpl, &vars, inst, &msg);
	tmpl_kvlist_free(&vars);
	if (rc < 0) {
		pve_error_set(err, PVE_ERR_CONFIG, "template %s: %s",
			      req->tmpl->name ? req->tmpl->name : "?", msg ? msg : "expansion failed");
		free(msg);
		tmpl_inst_free(inst);
		memset(inst, 0, sizeof *inst);
		return -1;
	}
	free(msg);
	return 0;
}

static enum guest_type tmpl_guest_type(enum tmpl_kind k, int major)
{
	if (k == TMPL_QEMU)
		return GUEST_QEMU;
	return guest_container_type(major);
}

/* Desired PVE parameters for a guest of type t: the template's expanded
 * [pve] (+ cloud-init), then --set, translated between LXC and OpenVZ when
 * the template was written for the other one. */
static int desired_params(const struct up_request *req, const struct tmpl_inst *inst,
			  enum guest_type t, struct tmpl_kvlist *out, struct pve_error *err)
{
	struct tmpl_kvlist d = {0};
	for (size_t i = 0; i < inst->pve.n; i++)
		if (tmpl_kvlist_set(&d, inst->pve.items[i].key, inst->pve.items[i].value) < 0)
			goto nomem;
	for (size_t i = 0; req->sets && i < req->sets->n; i++) {
		if (strcmp(req->sets->items[i].key, "size") == 0)
			continue;
		if (tmpl_kvlist_set(&d, req->sets->items[i].key, req->sets->items[i].value) < 0)
			goto nomem;
	}
	enum tmpl_kind k = req->tmpl->kind;
	if ((t == GUEST_OPENVZ && k == TMPL_LXC) || (t == GUEST_LXC && k == TMPL_OPENVZ)) {
		char *msg = NULL;
		if (provision_ct_translate(t, &d, out, &msg) < 0) {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "template %s is for %s but this PVE runs %s containers: %s",
				      req->tmpl->name ? req->tmpl->name : "?", tmpl_kind_name(k),
				      guest_type_name(t), msg ? msg : "out of memory");
			free(msg);
			tmpl_kvlist_free(&d);
			return -1;
		}
		tmpl_kvlist_free(&d);
		return 0;
	}
	*out = d;
	return 0;
nomem:
	tmpl_kvlist_free(&d);
	return oom(err);
}

/* The node to create on when none was given: the first online node. */
static int pick_node(struct pve *c, char **node, struct pve_error *err)
{
	json_object *d = NULL;
	if (pve_get(c, "/nodes", NULL, &d, err) < 0)
		return -1;
	const char *best = NULL;
	size_t n = json_object_is_type(d, json_type_array) ? json_object_array_length(d) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *it = json_object_array_get_idx(d, i), *v;
		const char *nm = NULL, *st = NULL;
		if (json_object_object_get_ex(it, "node", &v))
			nm = json_object_get_string(v);
		if (json_object_object_get_ex(it, "status", &v))
			st = json_object_get_string(v);
		if (nm && (!st || strcmp(st, "online") == 0) && (!best || strcmp(nm, best) < 0))
			best = nm;
	}
	if (!best) {
		json_object_put(d);
		pve_error_set(err, PVE_ERR_CONFIG, "no online node to create on; give --node");
		return -1;
	}
	*node = strdup(best);
	json_object_put(d);
	return *node ? 0 : oom(err);
}

/* The template VM named by [source] clone (a VMID or a name), looked up
 * in the listing of the find step (l): the same moment's view of the
 * cluster, and no second listing. */
static int find_source(const struct guest_list *l, const char *clone, struct guest_ref *src,
		       struct pve_error *err)
{
	bool digits = *clone != 0;
	for (const char *p = clone; *p; p++)
		digits = digits && isdigit((unsigned char)*p);
	int r = digits ? guest_list_find_vmid(l, atoi(clone), src, err)
		       : guest_list_find_name(l, clone, src, err);
	if (r < 0)
		return -1;
	if (r == 0) {
		pve_error_set(err, PVE_ERR_NOT_FOUND, "template VM '%s' not found in the cluster",
			      clone);
		return -1;
	}
	if (src->type != GUEST_QEMU) {
		pve_error_set(err, PVE_ERR_CONFIG, "'%s' (VMID %d) is a %s container, not a VM",
			      clone, src->vmid, guest_type_name(src->type));
		guest_ref_clear(src);
		return -1;
	}
	return 0;
}

struct create_ctx {
	struct one *o;
	enum guest_type t;
	const char *node;
};

static int create_params(void *ctx, int vmid, struct pve_params *p, struct pve_error *err)
{
	struct create_ctx *cc = ctx;
	const struct up_request *req = cc->o->run->req;
	struct tmpl_inst inst;
	if (expand(req, cc->o->res->name, vmid, cc->node, &inst, err) < 0)
		return -1;
	struct tmpl_kvlist d;
	if (desired_params(req, &inst, cc->t, &d, err) < 0) {
		tmpl_inst_free(&inst);
		return -1;
	}
	for (size_t i = 0; i < d.n; i++)
		pve_params_add(p, d.items[i].key, d.items[i].value);
	if (cc->t == GUEST_QEMU) {
		if (inst.source.iso.value && !tmpl_kvlist_get(&d, "ide2") &&
		    !tmpl_kvlist_get(&d, "cdrom"))
			pve_params_addf(p, "ide2", "%s,media=cdrom", inst.source.iso.value);
	} else {
		if (inst.source.ostemplate.value)
			pve_params_add(p, "ostemplate", inst.source.ostemplate.value);
		if (cc->t == GUEST_OPENVZ && inst.source.storage.value &&
		    !tmpl_kvlist_get(&d, "storage"))
			pve_params_add(p, "storage", inst.source.storage.value);
	}
	tmpl_kvlist_free(&d);
	tmpl_inst_free(&inst);
	if (p->failed)
		return oom(err);
	return 0;
}

/* After creating: if a concurrent run created a guest of the same name,
 * keep the lowest VMID and delete ours when it is not that one. g is
 * replaced by the survivor. This needs a listing made after our guest
 * exists: the find step's listing predates both guests of such a race. */
static int resolve_duplicates(struct one *o, struct guest_ref *g, bool *replaced,
			      struct pve_error *err)
{
	*replaced = false;
	struct guest_list l;
	if (guest_list(o->c, NULL, &l, err) < 0)
		return -1;
	size_t keep = (size_t)-1;
	int same = 0;
	for (size_t i = 0; i < l.n; i++) {
		if (!l.v[i].name || strcasecmp(l.v[i].name, o->res->name) != 0 || l.v[i].template)
			continue;
		same++;
		if (keep == (size_t)-1 || l.v[i].vmid < l.v[keep].vmid)
			keep = i;
	}
	int rc = 0;
	if (same > 1 && keep != (size_t)-1 && l.v[keep].vmid != g->vmid) {
		log_warn("%s: another run created VM %d with the same name; removing ours (%d)",
			 o->res->name, l.v[keep].vmid, g->vmid);
		rc = guest_delete(o->c, g, true, &o->w, NULL, err);
		if (rc == 0) {
			guest_ref_clear(g);
			*g = l.v[keep];
			memset(&l.v[keep], 0, sizeof l.v[keep]);
			*replaced = true;
		}
	}
	guest_list_free(&l);
	return rc;
}

/* The disk to grow: lxc rootfs, openvz disk, qemu the first boot disk. */
static char *boot_disk(json_object *conf, enum guest_type t)
{
	if (t == GUEST_LXC)
		return strdup("rootfs");
	if (t == GUEST_OPENVZ)
		return strdup("disk");
	char *boot = jscalar_dup(conf, "boot");
	char *res = NULL;
	if (boot) {
		const char *ord = strstr(boot, "order=");
		if (ord) {
			ord += 6;
			size_t n = strcspn(ord, ";,");
			char *k = strndup(ord, n);
			int idx;
			if (k && pvecfg_disk_key(k, &idx) != BUS_NONE) {
				char *v = jscalar_dup(conf, k);
				if (v && !strstr(v, "media=cdrom"))
					res = k, k = NULL;
				free(v);
			}
			free(k);
		}
		free(boot);
	}
	if (res)
		return res;
	static const char *const prefer[] = {"virtio0", "scsi0", "sata0", "ide0"};
	for (size_t i = 0; i < 4; i++) {
		char *v = jscalar_dup(conf, prefer[i]);
		bool ok = v && !strstr(v, "media=cdrom");
		free(v);
		if (ok)
			return strdup(prefer[i]);
	}
	return NULL;
}

static int add_diff_line(struct up_result *r, const struct cfg_change *ch)
{
	char **nd = realloc(r->diff, (r->n_diff + 1) * sizeof *nd);
	if (!nd)
		return -1;
	r->diff = nd;
	const char *old = ch->old_value ? ch->old_value : "(unset)";
	/* never show secrets */
	bool secret = strcmp(ch->key, "cipassword") == 0 || strcmp(ch->key, "password") == 0;
	r->diff[r->n_diff] = strprintf("%s: %s -> %s", ch->key, secret ? "***" : old,
				       secret ? "***" : ch->new_value);
	if (!r->diff[r->n_diff])
		return -1;
	r->n_diff++;
	return 0;
}

/* ---- inject ----------------------------------------------------------------------- */

/* Does up run inject for this guest? Only templates with guest file
 * sections; everything else never touches SSH. */
static bool wants_inject(const struct up_request *req, size_t n_files)
{
	return n_files > 0 && !req->no_inject && !req->no_start;
}

/* Fill err for a failed inject so that pve_error_exit_code() gives
 * inject's exit code: 2 config, 4 cannot reach or authenticate, 3 needs
 * attention (files left changed), 1 otherwise. */
static void inject_error(struct pve_error *err, int exit_code, const char *msg)
{
	enum pve_err_kind k = exit_code == 2 ? PVE_ERR_CONFIG
			    : exit_code == 4 ? PVE_ERR_CONNECT
					     : PVE_ERR_API;
	pve_error_set(err, k, "%s", msg ? msg : "failed");
	err->ambiguous = exit_code == 3;
	err->what = strdup("inject");
}

/* Record a failure of the inject step in the result and err. */
static int inject_failed(struct one *o, enum inject_status st, int exit_code, const char *step,
			 const char *msg, struct pve_error *err)
{
	struct up_inject *ui = &o->res->inject;
	ui->ran = true;
	ui->status = st;
	ui->exit_code = exit_code;
	ui->failed_step = step;
	free(ui->summary);
	ui->summary = strprintf("failed: %s", msg ? msg : "?");
	inject_error(err, exit_code, msg);
	return -1;
}

static bool ssh_retryable(enum ssh_err_kind k)
{
	return k == SSH_ERR_CONNECT || k == SSH_ERR_TIMEOUT;
}

/* Connect once the guest answers: refused and timed-out connections are
 * tried again every poll_s until ssh_wait_s has passed since the first
 * attempt (each attempt's connect timeout is cut to the time left); a
 * host key or authentication failure ends the wait at once. */
static int wait_ssh(struct one *o, const struct ssh_opts *so, struct ssh_session **out,
		    struct pve_error *err)
{
	const struct up_request *req = o->run->req;
	const struct pve_clock *clk = o->w.clock;
	double limit = req->ssh_wait_s > 0 ? req->ssh_wait_s : DEF_SSH_WAIT_S;
	double poll = o->w.poll_s > 0 ? o->w.poll_s : 1;
	long base_ms = so->connect_timeout_ms > 0 ? so->connect_timeout_ms : 30000;
	double t0 = pve_clock_now(clk);
	struct ssh_error e = {0};
	unsigned attempts = 0;
	*out = NULL;
	for (;;) {
		struct ssh_opts a = *so;
		double left = limit - (pve_clock_now(clk) - t0);
		long ms = left > 1 ? (long)(left * 1000) : 1000;
		a.connect_timeout_ms = ms < base_ms ? ms : base_ms;
		ssh_error_clear(&e);
		attempts++;
		if (ssh_connect(&a, out, &e) == 0)
			return 0;
		*out = NULL;
		if (!ssh_retryable(e.kind) || pve_clock_now(clk) - t0 + poll > limit)
			break;
		if (attempts == 1)
			log_info("%s: no SSH answer from %s yet (%s); waiting up to %.0f s",
				 o->res->name, so->host, ssh_error_str(&e), limit);
		char *txt = strprintf("waiting for SSH on %s: %s (attempt %u)", so->host,
				      ssh_error_str(&e), attempts);
		emit(o, UP_EV_PROGRESS, "inject", 0, -1, txt ? txt : "waiting for SSH");
		free(txt);
		pve_clock_sleep(clk, poll);
	}
	char *msg;
	if (ssh_retryable(e.kind))
		msg = strprintf("connect: %s@%s port %d did not answer SSH within %.0f s "
				"(%u attempt%s): %s",
				so->user ? so->user : "root", so->host, so->port ? so->port : 22,
				limit, attempts, attempts == 1 ? "" : "s", ssh_error_str(&e));
	else
		msg = strprintf("connect: %s@%s port %d: %s", so->user ? so->user : "root",
				so->host, so->port ? so->port : 22, ssh_error_str(&e));
	int code = ssh_error_exit_code(&e);
	inject_failed(o, INJ_FAILED, code ? code : 1, inject_step_name(INJ_STEP_CONNECT),
		      msg ? msg : ssh_error_str(&e), err);
	free(msg);
	ssh_error_clear(&e);
	return -1;
}

/* inject's steps and notes, as progress of the "inject" step. */
static void on_inject_event(void *ctx, const struct inject_event *ev)
{
	struct one *o = ctx;
	char *txt = NULL;
	if (ev->kind == INJ_EV_STEP)
		txt = strprintf("%s: %s", inject_step_name(ev->step), ev->text ? ev->text : "");
	else if (ev->kind == INJ_EV_NOTE)
		txt = strprintf("note: %s", ev->text ? ev->text : "");
	else if (ev->kind == INJ_EV_FILE && ev->step == INJ_STEP_ROLLBACK)
		txt = strprintf("rollback: %s %s", ev->path ? ev->path : "",
				ev->text ? ev->text : "");
	if (txt)
		emit(o, UP_EV_PROGRESS, "inject", 0, -1, txt);
	free(txt);
}

/* The inject step: the guest's files and hostname, over SSH. *changed is
 * set when files were written. */
static int up_inject(struct one *o, const struct tmpl_inst *inst, bool *changed,
		     struct pve_error *err)
{
	const struct up_request *req = o->run->req;
	struct up_result *res = o->res;
	step_begin(o, "inject");
	struct ssh_opts so;
	if (inject_ssh_opts(req->conf, inst, res->address, &so) < 0)
		return inject_failed(o, INJ_FAILED, 2, inject_step_name(INJ_STEP_CONNECT),
				     "connect: no SSH settings ([ssh] known_hosts) or no address",
				     err);
	struct ssh_session *s = NULL;
	if (wait_ssh(o, &so, &s, err) < 0)
		return -1;
	struct inject_request ir = {
		.name = res->name,
		.inst = inst,
		.expect_os = req->tmpl->os,
		.session = s,
		.ssh = &so,
		.on_event = on_inject_event,
		.event_ctx = o,
	};
	struct inject_result ires;
	int rc = inject_run(&ir, &ires);
	ssh_close(s);
	struct up_inject *ui = &res->inject;
	if (rc < 0) {
		inject_failed(o, ires.status == INJ_FAILED_PARTIAL ? INJ_FAILED_PARTIAL : INJ_FAILED,
			      ires.exit_code ? ires.exit_code : 1, inject_step_name(ires.failed_step),
			      ires.error, err);
		inject_result_free(&ires);
		return -1;
	}
	ui->ran = true;
	ui->status = ires.status;
	ui->exit_code = 0;
	ui->summary = inject_result_summary(&ires);
	*changed = ires.status == INJ_CHANGED;
	inject_result_free(&ires);
	if (!ui->summary)
		return oom(err);
	return step_end(o, ui->summary, err);
}

static int up_one(struct one *o, struct pve_error *err)
{
	const struct up_request *req = o->run->req;
	struct up_result *res = o->res;
	struct pve *c = o->c;
	struct guest_ref g = {0}, src = {0};
	struct guest_list listing = {0};
	struct tmpl_inst inst = {0};
	struct tmpl_kvlist desired = {0};
	struct cfg_change *ch = NULL;
	size_t nch = 0;
	json_object *conf = NULL;
	char *node = NULL, *disk = NULL, *addr = NULL;
	bool created = false, changed = false;
	int rc = -1;

	emit(o, UP_EV_BEGIN, NULL, 0, -1, NULL);
	step_begin(o, "find");
	int major;
	if (guest_pve_major(c, &major, err) < 0)
		goto out;
	enum guest_type t = tmpl_guest_type(req->tmpl->kind, major);
	/* One listing: the guest by name (two of that name are an error), and
	 * the clone source below. */
	if (guest_list(c, NULL, &listing, err) < 0)
		goto out;
	int found = guest_list_find_name(&listing, res->name, &g, err);
	if (found < 0)
		goto out;
	if (found) {
		if (g.template) {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "'%s' is a template VM (VMID %d on %s); choose another name",
				      res->name, g.vmid, g.node);
			goto out;
		}
		if (g.type != t) {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "'%s' exists as %s %d on %s, but template %s makes a %s guest",
				      res->name, guest_type_name(g.type), g.vmid, g.node,
				      req->tmpl->name ? req->tmpl->name : "?", guest_type_name(t));
			goto out;
		}
		if (req->vmid > 0 && g.vmid != req->vmid) {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "'%s' exists as VMID %d, not %d; leave --vmid out to converge it",
				      res->name, g.vmid, req->vmid);
			goto out;
		}
		if (req->node && g.node && strcmp(req->node, g.node) != 0)
			log_warn("%s: exists on %s, not on %s; converging it there (use migrate to "
				 "move it)",
				 res->name, g.node, req->node);
		if (set_ref_info(o, &g, err) < 0)
			goto out;
	}
	if (step_end(o, found ? "exists" : "new", err) < 0)
		goto out;

	if (!found) {
		/* Expand once before touching PVE so template errors cost nothing. */
		const char *want_node = req->node;
		if (expand(req, res->name, 0, want_node, &inst, err) < 0)
			goto out;
		struct guest_vmid_policy pol = {
			.vmid = req->vmid,
			.range_min = req->vmid_min,
			.range_max = req->vmid_max,
		};
		if (t == GUEST_QEMU && inst.source.clone.value) {
			step_begin(o, "clone");
			if (find_source(&listing, inst.source.clone.value, &src, err) < 0)
				goto out;
			node = strdup(want_node ? want_node : src.node);
			if (!node) {
				oom(err);
				goto out;
			}
			bool full = req->full || inst.source.full;
			struct guest_clone_req cr = {
				.source = &src,
				.name = res->name,
				.target = node,
				.storage = full ? inst.source.storage.value : NULL,
				.full = full,
				.vmid = pol,
			};
			if (guest_clone(c, &cr, &o->w, &g, &res->claims, err) < 0)
				goto out;
		} else {
			step_begin(o, "create");
			if (want_node)
				node = strdup(want_node);
			else if (pick_node(c, &node, err) < 0)
				goto out;
			if (!node) {
				oom(err);
				goto out;
			}
			if (t == GUEST_QEMU && !inst.source.iso.value) {
				pve_error_set(err, PVE_ERR_CONFIG,
					      "template %s: a VM needs [source] clone or iso",
					      req->tmpl->name ? req->tmpl->name : "?");
				goto out;
			}
			if (t != GUEST_QEMU && !inst.source.ostemplate.value) {
				pve_error_set(err, PVE_ERR_CONFIG,
					      "template %s: a container needs [source] ostemplate",
					      req->tmpl->name ? req->tmpl->name : "?");
				goto out;
			}
			struct create_ctx cc = {o, t, node};
			struct guest_create_req cr = {
				.type = t,
				.node = node,
				.name = res->name,
				.vmid = pol,
				.params = create_params,
				.params_ctx = &cc,
			};
			if (guest_create(c, &cr, &o->w, &g, &res->claims, err) < 0)
				goto out;
		}
		created = true;
		if (set_ref_info(o, &g, err) < 0)
			goto out;
		char *sum = strprintf("VM %d on %s", g.vmid, g.node);
		int se = step_end(o, sum, err);
		free(sum);
		if (se < 0)
			goto out;
		bool replaced;
		if (resolve_duplicates(o, &g, &replaced, err) < 0)
			goto out;
		if (replaced) {
			created = false;
			if (set_ref_info(o, &g, err) < 0)
				goto out;
		}
		tmpl_inst_free(&inst);
		memset(&inst, 0, sizeof inst);
	}
	guest_list_free(&listing);

	/* config: bring the guest to the template */
	step_begin(o, "config");
	if (expand(req, res->name, g.vmid, g.node, &inst, err) < 0)
		goto out;
	if (desired_params(req, &inst, t, &desired, err) < 0)
		goto out;
	for (int attempt = 0;; attempt++) {
		json_object_put(conf);
		conf = NULL;
		cfg_changes_free(ch, nch);
		ch = NULL;
		nch = 0;
		if (guest_get_config(c, &g, &conf, err) < 0)
			goto out;
		char *derr = NULL;
		if (provision_config_diff(t, conf, &desired, &ch, &nch, &derr) < 0) {
			pve_error_set(err, PVE_ERR_INTERNAL, "%s", derr ? derr : "config difference");
			free(derr);
			goto out;
		}
		if (!nch)
			break;
		struct pve_params p = {0};
		for (size_t i = 0; i < nch; i++)
			pve_params_add(&p, ch[i].key, ch[i].new_value);
		json_object *dg;
		const char *digest = json_object_object_get_ex(conf, "digest", &dg)
					     ? json_object_get_string(dg)
					     : NULL;
		int sr = guest_set_config(c, &g, &p, NULL, digest, false, &o->w, err);
		pve_params_free(&p);
		if (sr < 0 && attempt < 4 &&
		    (err->message && (strstr(err->message, "digest") ||
				      strstr(err->message, "modified configuration")))) {
			/* changed under us (e.g. by the lock holder we waited for):
			 * read it again and compute the difference anew */
			log_debug("%s: config changed meanwhile; comparing again", res->name);
			pve_error_clear(err);
			continue;
		}
		if (sr < 0)
			goto out;
		for (size_t i = 0; i < nch; i++) {
			if (add_diff_line(res, &ch[i]) < 0) {
				oom(err);
				goto out;
			}
			emit(o, UP_EV_DIFF, "config", 0, -1, res->diff[res->n_diff - 1]);
		}
		changed = true;
		break;
	}
	if (nch && g.status && strcmp(g.status, "running") == 0) {
		if (guest_pending(c, &g, &res->pending, err) < 0) {
			/* only a report: the change itself went through */
			log_debug("%s: pending changes unknown: %s", res->name,
				  err->message ? err->message : "?");
			pve_error_clear(err);
		} else if (res->pending) {
			char *txt = strprintf("applied at the next restart: %s", res->pending);
			emit(o, UP_EV_PROGRESS, "config", 0, -1, txt ? txt : res->pending);
			free(txt);
		}
	}
	{
		char *sum = strprintf("%zu change%s", nch, nch == 1 ? "" : "s");
		int se = step_end(o, sum, err);
		free(sum);
		if (se < 0)
			goto out;
	}

	/* disk size */
	const char *size = req->sets ? tmpl_kvlist_get(req->sets, "size") : NULL;
	if (size) {
		step_begin(o, "resize");
		json_object_put(conf);
		conf = NULL;
		if (guest_get_config(c, &g, &conf, err) < 0)
			goto out;
		disk = boot_disk(conf, t);
		if (!disk) {
			pve_error_set(err, PVE_ERR_CONFIG, "VM %d has no disk to resize", g.vmid);
			goto out;
		}
		bool grown = false;
		if (guest_resize(c, &g, disk, size, &o->w, &grown, err) < 0)
			goto out;
		changed = changed || grown;
		char *sum = strprintf("%s %s", disk, grown ? size : "unchanged");
		int se = step_end(o, sum, err);
		free(sum);
		if (se < 0)
			goto out;
	}

	if (!req->no_start) {
		/* "stopped" is believed (we just created it, or the listing says
		 * so; if it started meanwhile, guest_start takes PVE's "already
		 * running" as success). "running" or unknown is read again: a
		 * listing can lag, and a stopped guest must not be left so. */
		bool stopped = g.status && strcmp(g.status, "stopped") == 0;
		if (!stopped && guest_refresh(c, &g, err) < 0)
			goto out;
		if (!g.status || strcmp(g.status, "running") != 0) {
			step_begin(o, "start");
			if (guest_start(c, &g, &o->w, err) < 0)
				goto out;
			changed = true;
			if (step_end(o, "running", err) < 0)
				goto out;
		}
		step_begin(o, "address");
		enum guest_addr_source as = GUEST_ADDR_AGENT;
		const char *sip = NULL;
		if (inst.guest.address == TMPL_ADDR_STATIC ||
		    (inst.guest.address == TMPL_ADDR_CLOUDINIT && inst.guest.ip.value)) {
			as = GUEST_ADDR_STATIC;
			sip = inst.guest.ip.value;
		}
		if (as == GUEST_ADDR_STATIC && (!sip || !*sip))
			as = GUEST_ADDR_CONFIG;
		if (guest_address(c, &g, as, sip, &o->w, &addr, err) < 0)
			goto out;
		res->address = addr;
		addr = NULL;
		if (step_end(o, res->address, err) < 0)
			goto out;
	}
	if (wants_inject(req, inst.n_files)) {
		bool written = false;
		if (up_inject(o, &inst, &written, err) < 0)
			goto out;
		changed = changed || written;
	}
	res->status = created ? UP_CREATED : changed ? UP_CONVERGED : UP_UNCHANGED;
	rc = 0;
out:
	if (rc < 0)
		res->status = UP_FAILED;
	free(addr);
	free(disk);
	free(node);
	json_object_put(conf);
	cfg_changes_free(ch, nch);
	tmpl_kvlist_free(&desired);
	tmpl_inst_free(&inst);
	guest_ref_clear(&g);
	guest_ref_clear(&src);
	guest_list_free(&listing);
	return rc;
}

static void run_one(struct up_run *run, struct pve *c, size_t i)
{
	struct one o = {.run = run, .res = &run->results[i], .c = c};
	o.w = run->req->wait;
	o.w.progress = on_progress;
	o.w.progress_ctx = &o;
	struct pve_error err = {0};
	if (up_one(&o, &err) < 0) {
		if (err.kind == PVE_OK)
			pve_error_set(&err, PVE_ERR_INTERNAL, "failed");
		pve_error_move(&o.res->error, &err);
		o.res->status = UP_FAILED;
	}
	pve_error_clear(&err);
	emit(&o, UP_EV_DONE, NULL, 0, -1, up_status_name(o.res->status));
}

static void *worker(void *arg)
{
	struct up_run *run = arg;
	const struct up_request *req = run->req;
	struct pve *c = NULL;
	bool own = false;
	for (;;) {
		pthread_mutex_lock(&run->mu);
		size_t i = run->next++;
		pthread_mutex_unlock(&run->mu);
		if (i >= req->n_names)
			break;
		if (!c) {
			struct pve_error e = {0};
			if (req->client && (req->parallel == 1 || req->n_names == 1 ||
					    !req->pve_opts)) {
				c = req->client;
			} else if (req->pve_opts) {
				c = pve_new(req->pve_opts, &e);
				own = c != NULL;
			} else {
				pve_error_set(&e, PVE_ERR_CONFIG, "no PVE connection options");
			}
			if (!c) {
				pve_error_move(&run->results[i].error, &e);
				run->results[i].status = UP_FAILED;
				continue;
			}
		}
		run_one(run, c, i);
	}
	if (own)
		pve_free(c);
	return NULL;
}

int provision_up(const struct up_request *req, struct up_result **results, struct pve_error *err)
{
	*results = NULL;
	if (!req->tmpl || !req->n_names) {
		pve_error_set(err, PVE_ERR_CONFIG, "up: no template or no names");
		return -1;
	}
	for (size_t i = 0; i < req->n_names; i++) {
		const char *why;
		if (!guest_name_valid(req->names[i], &why)) {
			pve_error_set(err, PVE_ERR_CONFIG, "guest name '%s': %s", req->names[i], why);
			return -1;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcasecmp(req->names[i], req->names[j]) == 0) {
				pve_error_set(err, PVE_ERR_CONFIG, "guest name '%s' given twice",
					      req->names[i]);
				return -1;
			}
		}
	}
	if (req->vmid > 0 && req->n_names > 1) {
		pve_error_set(err, PVE_ERR_CONFIG, "--vmid works with one name only");
		return -1;
	}
	if ((req->vmid_min > 0) != (req->vmid_max > 0) || req->vmid_min > req->vmid_max) {
		pve_error_set(err, PVE_ERR_CONFIG, "bad VMID range %d-%d", req->vmid_min,
			      req->vmid_max);
		return -1;
	}
	if (wants_inject(req, req->tmpl->n_files) && (!req->conf || !req->conf->ssh.known_hosts)) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "template %s has guest files to inject over SSH: %s (or skip "
			      "inject)",
			      req->tmpl->name ? req->tmpl->name : "?",
			      req->conf ? "set [ssh] known_hosts" : "no SSH settings given");
		return -1;
	}
	enum pvekey_kind kk = req->tmpl->kind == TMPL_QEMU  ? PVEKEY_QEMU
			      : req->tmpl->kind == TMPL_LXC ? PVEKEY_LXC
							    : PVEKEY_OPENVZ;
	for (size_t i = 0; req->sets && i < req->sets->n; i++) {
		const char *k = req->sets->items[i].key;
		if (strcmp(k, "size") == 0)
			continue;
		static const char *const refused[] = {"vmid", "node", "delete", "digest", "force",
						      "skiplock", "revert"};
		if (!pvekey_lookup(kk, k) || IN(k, refused)) {
			pve_error_set(err, PVE_ERR_CONFIG, "--set %s: not a %s config key", k,
				      tmpl_kind_name(req->tmpl->kind));
			return -1;
		}
	}
	struct up_run run = {.req = req};
	run.results = calloc(req->n_names, sizeof *run.results);
	if (!run.results)
		return oom(err);
	for (size_t i = 0; i < req->n_names; i++) {
		run.results[i].name = strdup(req->names[i]);
		if (!run.results[i].name) {
			up_results_free(run.results, req->n_names);
			return oom(err);
		}
	}
	if (pthread_mutex_init(&run.mu, NULL) != 0) {
		up_results_free(run.results, req->n_names);
		return oom(err);
	}
	size_t k = req->parallel ? req->parallel : DEF_PARALLEL;
	if (k > req->n_names)
		k = req->n_names;
	if (!req->pve_opts)
		k = 1; /* only the caller's client: one at a time */
	if (k <= 1) {
		worker(&run);
	} else {
		pthread_t *th = calloc(k, sizeof *th);
		size_t started = 0;
		if (th) {
			for (; started < k; started++)
				if (pthread_create(&th[started], NULL, worker, &run) != 0)
					break;
		}
		if (started == 0)
			worker(&run); /* no threads: do it here */
		for (size_t i = 0; i < started; i++)
			pthread_join(th[i], NULL);
		free(th);
	}
	pthread_mutex_destroy(&run.mu);
	*results = run.results;
	for (size_t i = 0; i < req->n_names; i++)
		if (run.results[i].status == UP_FAILED)
			return -1;
	return 0;
}

/* ---- down ----------------------------------------------------------------------- */

static void down_emit(const struct down_request *req, struct up_result *res,
		      enum up_event_kind kind, const char *step, double el, const char *text)
{
	if (!req->on_event)
		return;
	struct up_event ev = {
		.kind = kind,
		.name = res->name,
		.vmid = res->vmid,
		.node = res->node,
		.step = step,
		.elapsed_s = el,
		.percent = -1,
		.text = text,
		.result = kind == UP_EV_DONE ? res : NULL,
	};
	req->on_event(req->event_ctx, &ev);
}

struct down_prog {
	const struct down_request *req;
	struct up_result *res;
};

static void down_progress(void *ctx, const char *step, double pct, const char *text)
{
	struct down_prog *dp = ctx;
	if (!dp->req->on_event)
		return;
	struct up_event ev = {
		.kind = UP_EV_PROGRESS,
		.name = dp->res->name,
		.vmid = dp->res->vmid,
		.node = dp->res->node,
		.step = step,
		.percent = pct,
		.text = text,
	};
	dp->req->on_event(dp->req->event_ctx, &ev);
}

static int down_step(const struct down_request *req, struct up_result *res, const char *step,
		     double t0, const char *text, struct pve_error *err)
{
	double el = pve_clock_now(req->wait.clock) - t0;
	struct up_step *ns = realloc(res->steps, (res->n_steps + 1) * sizeof *ns);
	if (!ns)
		return oom(err);
	res->steps = ns;
	res->steps[res->n_steps].step = strdup(step);
	if (!res->steps[res->n_steps].step)
		return oom(err);
	res->steps[res->n_steps++].elapsed_s = el;
	down_emit(req, res, UP_EV_STEP, step, el, text);
	return 0;
}

int provision_down(const struct down_request *req, struct up_result *res)
{
	memset(res, 0, sizeof *res);
	struct pve_error *err = &res->error;
	struct guest_ref g = {0};
	struct pve *c = req->client;
	bool own = false;
	int rc = -1;
	res->name = strdup(req->name ? req->name : "");
	if (!res->name) {
		oom(err);
		goto out;
	}
	const char *why;
	if (!guest_name_valid(req->name, &why)) {
		pve_error_set(err, PVE_ERR_CONFIG, "guest name '%s': %s", req->name, why);
		goto out;
	}
	if (!c) {
		if (!req->pve_opts) {
			pve_error_set(err, PVE_ERR_CONFIG, "no PVE connection options");
			goto out;
		}
		c = pve_new(req->pve_opts, err);
		if (!c)
			goto out;
		own = true;
	}
	struct down_prog dp = {req, res};
	struct guest_wait w = req->wait;
	w.progress = down_progress;
	w.progress_ctx = &dp;
	down_emit(req, res, UP_EV_BEGIN, NULL, 0, NULL);
	double t0 = pve_clock_now(w.clock);
	int found = guest_find_by_name(c, req->name, &g, err);
	if (found < 0)
		goto out;
	if (!found) {
		res->status = UP_ABSENT;
		if (down_step(req, res, "find", t0, "does not exist", err) < 0)
			goto out;
		rc = 0;
		goto out;
	}
	res->vmid = g.vmid;
	res->type = g.type;
	res->node = g.node ? strdup(g.node) : NULL;
	if (g.template) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "'%s' (VMID %d) is a template VM; pvagent does not delete templates",
			      req->name, g.vmid);
		goto out;
	}
	if (down_step(req, res, "find", t0, "exists", err) < 0)
		goto out;
	t0 = pve_clock_now(w.clock);
	bool forced = false;
	if (guest_shutdown(c, &g, &w, &forced, err) < 0) {
		if (err->kind != PVE_ERR_NOT_FOUND)
			goto out;
		pve_error_clear(err); /* someone else removed it */
	}
	if (down_step(req, res, "shutdown", t0, forced ? "stopped (shutdown timed out)" : "stopped",
		      err) < 0)
		goto out;
	t0 = pve_clock_now(w.clock);
	bool deleted = false;
	if (guest_delete(c, &g, req->purge, &w, &deleted, err) < 0)
		goto out;
	if (down_step(req, res, "delete", t0, deleted ? "deleted" : "already gone", err) < 0)
		goto out;
	res->status = deleted ? UP_DELETED : UP_ABSENT;
	rc = 0;
out:
	if (rc < 0) {
		res->status = UP_FAILED;
		if (err->kind == PVE_OK)
			pve_error_set(err, PVE_ERR_INTERNAL, "failed");
	}
	down_emit(req, res, UP_EV_DONE, NULL, 0, up_status_name(res->status));
	guest_ref_clear(&g);
	if (own)
		pve_free(c);
	return rc;
}
