/* provision.c - `up` and `down` requests (see provision.h): checked, then
 * run as one job per guest (wf_up.c, wf_down.c), an interrupted job of
 * the same request resumed; and the pure rules those workflows use: the
 * config difference (key by key, property strings normalised) and the
 * LXC <-> OpenVZ translation. */
#include "provision.h"

#include "wf_up.h"

#include "json.h"
#include "log.h"
#include "pvecfg.h"
#include "pvecheck.h"
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
	case UP_PLANNED: return "planned";
	}
	return "?";
}

json_object *up_result_json(const struct up_result *r)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "name", json_object_new_string(r->name ? r->name : ""));
	json_object_object_add(o, "status", json_object_new_string(up_status_name(r->status)));
	json_object_object_add(o, "vmid", r->vmid ? json_object_new_int(r->vmid) : NULL);
	json_object_object_add(o, "node", r->node ? json_object_new_string(r->node) : NULL);
	json_object_object_add(o, "type", json_object_new_string(guest_type_name(r->type)));
	json_object_object_add(o, "address", r->address ? json_object_new_string(r->address) : NULL);
	json_object *steps = json_object_new_object();
	for (size_t i = 0; i < r->n_steps; i++)
		json_object_object_add(steps, r->steps[i].step,
				       json_object_new_double(r->steps[i].elapsed_s));
	json_object_object_add(o, "steps", steps);
	json_object *diff = json_object_new_array();
	for (size_t i = 0; i < r->n_diff; i++)
		json_object_array_add(diff, json_object_new_string(r->diff[i]));
	json_object_object_add(o, "changes", diff);
	if (r->status == UP_PLANNED) {
		json_object *plan = json_object_new_array();
		for (size_t i = 0; i < r->n_plan; i++)
			json_object_array_add(plan, json_object_new_string(r->plan[i]));
		json_object_object_add(o, "plan", plan);
	}
	json_object_object_add(o, "pending", r->pending ? json_object_new_string(r->pending) : NULL);
	json_object *inj = NULL;
	if (r->inject.ran) {
		inj = json_object_new_object();
		json_object_object_add(inj, "status",
				       json_object_new_string(inject_status_name(r->inject.status)));
		json_object_object_add(inj, "outcome",
				       json_object_new_string(job_outcome_name(r->inject.outcome)));
		json_object_object_add(inj, "summary", r->inject.summary
				       ? json_object_new_string(r->inject.summary) : NULL);
		if (r->inject.failed_step)
			json_object_object_add(inj, "failed_step",
					       json_object_new_string(r->inject.failed_step));
	}
	json_object_object_add(o, "inject", inj);
	if (r->job)
		json_object_object_add(o, "job", json_object_new_int64(r->job));
	json_object_object_add(o, "outcome", json_object_new_string(job_outcome_name(r->outcome)));
	if (r->left)
		json_object_object_add(o, "left", json_object_new_string(r->left));
	return o;
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
	free(r->left);
	free(r->failed_step);
	for (size_t i = 0; i < r->n_steps; i++)
		free(r->steps[i].step);
	free(r->steps);
	for (size_t i = 0; i < r->n_diff; i++)
		free(r->diff[i]);
	free(r->diff);
	for (size_t i = 0; i < r->n_plan; i++)
		free(r->plan[i]);
	free(r->plan);
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

enum job_outcome provision_outcome(const struct up_result *r, size_t n)
{
	enum job_outcome worst = JOB_OUT_DONE;
	for (size_t i = 0; i < n; i++)
		worst = job_outcome_worse(worst, r[i].outcome);
	return worst;
}

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
		char *a = strcmp(key, "sshkeys") == 0 ? str_pct_decode_trim(want) : trim_dup(want);
		char *b = strcmp(key, "sshkeys") == 0 ? str_pct_decode_trim(cur) : trim_dup(cur);
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
		if (type != GUEST_OPENVZ && key_indexed(key, "net") && cur)
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

/* ---- up and down as jobs ---------------------------------------------------------- */

static int env_of(struct job_env *env, struct store *store, const struct guest_wait *w,
		  job_event_fn on_event, void *event_ctx, volatile sig_atomic_t *stop,
		  const struct conf *conf)
{
	memset(env, 0, sizeof *env);
	env->store = store;
	env->clock = w->clock;
	env->on_event = on_event;
	env->event_ctx = event_ctx;
	env->stop = stop;
	env->conf = conf;
	env->wait = *w;
	return job_env_init(env);
}

static void jobs_free(struct job **jobs, size_t n)
{
	for (size_t i = 0; jobs && i < n; i++)
		job_free(jobs[i]);
	free(jobs);
}

/* Every value as it will be sent, checked against the PVE schema before
 * any request: --set KEY=VAL, the size to grow to, and the template
 * expanded for each name (the VMID and node are not known yet: a VMID and
 * node of the right form stand in for them). */
static int check_values(const struct up_request *req, enum pvekey_kind kk, struct pve_error *err)
{
	static const struct pvekey_val size_val = {.type = PVEKEY_T_STRING, .format = "disk-size"};
	for (size_t i = 0; req->sets && i < req->sets->n; i++) {
		const struct tmpl_kv *kv = &req->sets->items[i];
		char *why = NULL;
		int r = strcmp(kv->key, "size") == 0 ? pvecheck_value(&size_val, kv->value, &why)
						     : pvecheck_param(0, kk, kv->key, kv->value, &why);
		if (r < 0)
			return pve_error_oom(err);
		if (r > 0) {
			pve_error_set(err, PVE_ERR_CONFIG, "--set %s=%s: %s", kv->key, kv->value, why);
			free(why);
			return -1;
		}
	}
	char id[24];
	snprintf(id, sizeof id, "%d", req->vmid > 0 ? req->vmid : req->vmid_min > 0 ? req->vmid_min : 100);
	for (size_t i = 0; i < req->n_names; i++) {
		struct tmpl_kvlist vars = {0};
		struct tmpl_inst inst;
		char *msg = NULL;
		int r = 0;
		for (size_t j = 0; req->vars && j < req->vars->n && r == 0; j++)
			r = tmpl_kvlist_set(&vars, req->vars->items[j].key, req->vars->items[j].value);
		if (r == 0)
			r = tmpl_kvlist_set(&vars, "name", req->names[i]);
		if (r == 0)
			r = tmpl_kvlist_set(&vars, "vmid", id);
		if (r == 0)
			r = tmpl_kvlist_set(&vars, "node", req->node ? req->node : "node");
		if (r == 0 && req->storage)
			r = tmpl_kvlist_set(&vars, "storage", req->storage);
		if (r == 0 && req->pubkey)
			r = tmpl_kvlist_set(&vars, "pubkey", req->pubkey);
		if (r < 0) {
			tmpl_kvlist_free(&vars);
			return pve_error_oom(err);
		}
		r = tmpl_expand(req->tmpl, &vars, &inst, &msg);
		tmpl_kvlist_free(&vars);
		if (r < 0) {
			pve_error_set(err, PVE_ERR_CONFIG, "%s", msg ? msg : "out of memory");
			free(msg);
			return -1;
		}
		tmpl_inst_free(&inst);
	}
	return 0;
}

/* The pool up gives addresses from (--pool, else the template's [guest]
 * pool): it must exist, the guests be VMs, and ipconfig0 not be set by
 * --set as well. 0, or -1 with err (PVE_ERR_CONFIG). */
static int check_pool(const struct up_request *req, struct pve_error *err)
{
	const char *name = req->pool ? req->pool : req->tmpl->guest.pool;
	const char *from = req->pool ? "--pool" : "the template's [guest] pool";
	if (!name)
		return 0;
	if (!req->conf || !conf_pool(req->conf, name)) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "%s %s: no [pool \"%s\"] in the configuration%s%s", from, name, name,
			      req->conf && req->conf->path ? " " : "",
			      req->conf && req->conf->path ? req->conf->path : "");
		return -1;
	}
	if (req->tmpl->kind != TMPL_QEMU) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "%s %s: only VMs take a pool address (cloud-init's ipconfig0); "
			      "template %s makes containers",
			      from, name, req->tmpl->name ? req->tmpl->name : "?");
		return -1;
	}
	if (req->sets && tmpl_kvlist_get(req->sets, "ipconfig0")) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "--set ipconfig0: the address comes from pool %s (%s); give one or "
			      "the other",
			      name, from);
		return -1;
	}
	return 0;
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
		if (guest_arg_is_vmid(req->names[i], NULL)) {
			pve_error_set(err, PVE_ERR_CONFIG, "guest name '%s': all digits would read as "
				      "a VMID; use a name with a letter (and --vmid ID to choose the VMID)",
				      req->names[i]);
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
	if (wf_up_wants_inject(req->tmpl->n_files, req->no_inject, req->no_start) &&
	    (!req->conf || !req->conf->ssh.known_hosts)) {
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
		const char *k = req->sets->items[i].key, *v = req->sets->items[i].value;
		size_t d = strspn(v, "0123456789");
		if (strcmp(k, "size") == 0) {
			/* a size without its unit would be bytes: never meant (any
			 * other bad size is the schema check's) */
			if (d > 0 && !v[d]) {
				pve_error_set(err, PVE_ERR_CONFIG, "--set size=%s: give the size with "
					      "its unit, K, M, G or T (e.g. %sG)", v, v);
				return -1;
			}
			continue;
		}
		if (strcmp(k, "memory") == 0 && d > 0 && v[d] && isalpha((unsigned char)v[d])) {
			pve_error_set(err, PVE_ERR_CONFIG, "--set memory=%s: memory is a number of "
				      "MiB, without a unit (2048 for 2 GiB)", v);
			return -1;
		}
		static const char *const refused[] = {"vmid", "node", "delete", "digest", "force",
						      "skiplock", "revert"};
		if (!pvekey_lookup(kk, k) || IN(k, refused)) {
			pve_error_set(err, PVE_ERR_CONFIG, "--set %s: not a %s config key", k,
				      tmpl_kind_name(req->tmpl->kind));
			return -1;
		}
	}
	if (check_values(req, kk, err) < 0 || check_pool(req, err) < 0)
		return -1;
	struct up_result *res = calloc(req->n_names, sizeof *res);
	struct job **jobs = calloc(req->n_names, sizeof(struct job *));
	struct job_env env;
	if (!res || !jobs) {
		free(res);
		free(jobs);
		return pve_error_oom(err);
	}
	if (env_of(&env, req->dry_run ? NULL : req->store, &req->wait, req->on_event,
		   req->event_ctx, req->stop, req->conf) < 0) {
		free(res);
		free(jobs);
		return pve_error_oom(err);
	}
	int rc = 0;
	for (size_t i = 0; i < req->n_names && rc == 0; i++) {
		res[i].name = strdup(req->names[i]);
		json_object *params = wf_up_params(req, req->names[i]);
		if (!res[i].name || !params)
			rc = pve_error_oom(err);
		else if (job_submit(&env, &wf_up, req->names[i], params, &jobs[i], err) < 0)
			rc = -1;
		else
			wf_up_attach(jobs[i], req->tmpl, &res[i]);
		json_object_put(params);
	}
	if (rc < 0) {
		jobs_free(jobs, req->n_names);
		up_results_free(res, req->n_names);
		job_env_fini(&env);
		return -1;
	}
	job_run_all(jobs, req->n_names, req->parallel, req->pve_opts, req->client);
	for (size_t i = 0; i < req->n_names; i++) {
		wf_up_result(jobs[i]);
		if (res[i].status == UP_FAILED)
			rc = -1;
	}
	jobs_free(jobs, req->n_names);
	job_env_fini(&env);
	*results = res;
	return rc;
}

int provision_down(const struct down_request *req, struct up_result *res)
{
	memset(res, 0, sizeof *res);
	struct pve_error *err = &res->error;
	res->name = strdup(req->name ? req->name : "");
	if (!res->name)
		return pve_error_oom(err);
	const char *why;
	if (!guest_arg_is_vmid(req->name, NULL) && !guest_name_valid(req->name, &why)) {
		pve_error_set(err, PVE_ERR_CONFIG, "guest name '%s': %s", req->name, why);
		res->outcome = JOB_OUT_USAGE;
		return -1;
	}
	struct job_env env;
	if (env_of(&env, req->dry_run ? NULL : req->store, &req->wait, req->on_event,
		   req->event_ctx, req->stop, NULL) < 0)
		return pve_error_oom(err);
	json_object *params = json_object_new_object();
	struct job *j = NULL;
	int rc = -1;
	if (!params) {
		pve_error_oom(err);
	} else {
		json_object_object_add(params, "purge", json_object_new_boolean(req->purge));
		json_object_object_add(params, "dry_run", json_object_new_boolean(req->dry_run));
		if (job_submit(&env, &wf_down, req->name, params, &j, err) == 0) {
			wf_down_attach(j, res);
			job_run_all(&j, 1, 1, req->client ? NULL : req->pve_opts, req->client);
			wf_down_result(j);
			rc = res->status == UP_FAILED ? -1 : 0;
		}
	}
	if (rc < 0 && !j)
		res->outcome = pve_error_outcome(err);
	json_object_put(params);
	job_free(j);
	job_env_fini(&env);
	return rc;
}
