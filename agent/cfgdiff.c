/* cfgdiff.c - the pure planner of `up` (cfgdiff.h): a guest's config
 * against the template's parameters, key by key (property strings
 * normalised, a NIC keeping its MAC), and the LXC <-> OpenVZ translation
 * of container parameters. No PVE calls, no jobs. */
#include "cfgdiff.h"

#include "json.h"
#include "log.h"
#include "pvecfg.h"
#include "pvekeys.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- small helpers ------------------------------------------------------------ */

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

static bool is_drive_key(enum guest_type t, const char *key)
{
	int idx;
	if (t == GUEST_QEMU)
		return pvecfg_disk_key(key, &idx) != BUS_NONE || strcmp(key, "efidisk0") == 0 ||
		       strcmp(key, "tpmstate0") == 0 || key_indexed(key, "unused");
	if (t == GUEST_LXC)
		return strcmp(key, "rootfs") == 0 || key_indexed(key, "mp") ||
		       key_indexed(key, "unused");
	return false;
}

/* Name of the leading (key-less) element of a property string. */
static const char *default_key(enum guest_type t, const char *key)
{
	if (t == GUEST_QEMU && key_indexed(key, "net"))
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
	bool net = t == GUEST_QEMU && key_indexed(key, "net");
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

char *cfgdiff_keep_mac(const char *desired, const char *current)
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

void cfgdiff_free(struct cfg_change *c, size_t n)
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

int cfgdiff(enum guest_type type, json_object *current,
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
		if (type != GUEST_OPENVZ && key_indexed(key, "net") && cur)
			newv = cfgdiff_keep_mac(want, cur); /* qemu MAC, lxc hwaddr */
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
	cfgdiff_free(v, nv);
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

int cfgdiff_ct_translate(enum guest_type to, const struct tmpl_kvlist *in,
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
