/* pvecheck.c - PVE parameter values against the compiled-in schema (see
 * pvecheck.h). */
#include "pvecheck.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* At most this much of a value is quoted in a message. */
#define SHOW 60

/* Set *why (NULL before) to the message: 1, or -1 if memory ran out. */
#define fail(why, ...) (err_setf((why), __VA_ARGS__), *(why) ? 1 : -1)

/* "%.*s%s" arguments quoting at most SHOW characters of v. */
#define Q(v) (strlen(v) > SHOW ? SHOW : (int)strlen(v)), (v), (strlen(v) > SHOW ? "..." : "")

/* ---- named formats ------------------------------------------------------ */

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool only(const char *s, size_t n, const char *extra)
{
	for (size_t i = 0; i < n; i++)
		if (!alnum(s[i]) && !strchr(extra, s[i]))
			return false;
	return true;
}

/* [a-z][a-z0-9_-]+, any case */
static bool configid(const char *s, size_t n)
{
	return n >= 2 && alpha(s[0]) && only(s, n, "_-");
}

/* [a-z][a-z0-9\-_.]*[a-z0-9], any case */
static bool storage_id(const char *s, size_t n)
{
	return n >= 2 && alpha(s[0]) && alnum(s[n - 1]) && only(s, n, "-_.");
}

/* one DNS label: [a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])? */
static bool dns_label(const char *s, size_t n)
{
	return n >= 1 && n <= 63 && alnum(s[0]) && alnum(s[n - 1]) && only(s, n, "-");
}

bool pvecheck_dns_name(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 253)
		return false;
	for (const char *p = s;;) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);
		if (!dns_label(p, l))
			return false;
		if (!dot)
			return true;
		p = dot + 1;
	}
}

static bool vmid(const char *s)
{
	size_t n = strlen(s);
	return n >= 3 && n <= 9 && s[0] >= '1' && s[0] <= '9' && strspn(s, "0123456789") == n;
}

/* unicast: the first byte even */
static bool mac(const char *s)
{
	if (strlen(s) != 17)
		return false;
	for (size_t i = 0; i < 17; i++)
		if (i % 3 == 2 ? s[i] != ':' : !strchr("0123456789abcdefABCDEF", s[i]))
			return false;
	return strchr("02468aceACE", s[1]) != NULL;
}

/* STORAGE:NAME; the storage part may hold no ':' (PVE backtracks over
 * every ':', but a storage ID has none, so the first one decides) */
static bool volume_id(const char *s)
{
	const char *c = strchr(s, ':');
	return c && c[1] && storage_id(s, (size_t)(c - s));
}

/* N, N.N, with an optional K, M, G or T */
static bool disk_size(const char *s)
{
	size_t i = strspn(s, "0123456789");
	if (!i)
		return false;
	if (s[i] == '.') {
		size_t f = strspn(s + i + 1, "0123456789");
		if (!f)
			return false;
		i += 1 + f;
	}
	return s[i] == '\0' || (strchr("KMGT", s[i]) && s[i + 1] == '\0');
}

static bool ipv4(const char *s)
{
	struct in_addr a;
	return inet_pton(AF_INET, s, &a) == 1;
}

static bool ipv6(const char *s)
{
	struct in6_addr a;
	return inet_pton(AF_INET6, s, &a) == 1;
}

/* ADDR/PREFIX */
static bool cidr(const char *s, bool v6)
{
	const char *sl = strrchr(s, '/');
	if (!sl || !sl[1] || strspn(sl + 1, "0123456789") != strlen(sl + 1) || strlen(sl + 1) > 3)
		return false;
	long p = strtol(sl + 1, NULL, 10);
	char *a = strndup(s, (size_t)(sl - s));
	if (!a)
		return false;
	bool ok = v6 ? (ipv6(a) && p <= 128) : (ipv4(a) && p <= 32);
	free(a);
	return ok;
}

/* PVE's urlencoded: [-%a-zA-Z0-9_.!~*'()] */
static bool urlencoded(const char *s)
{
	return only(s, strlen(s), "-%_.!~*'()");
}

/* [a-z0-9_][a-z0-9_\-+.]*, any case */
static bool tag(const char *s, size_t n)
{
	return n >= 1 && (alnum(s[0]) || s[0] == '_') && only(s, n, "_-+.");
}

static bool bootdisk(const char *s)
{
	static const char *const bus[] = {"ide", "sata", "scsi", "virtio"};
	for (size_t i = 0; i < sizeof bus / sizeof bus[0]; i++) {
		size_t l = strlen(bus[i]);
		if (strncmp(s, bus[i], l) == 0 && s[l] && strspn(s + l, "0123456789") == strlen(s + l))
			return true;
	}
	return false;
}

/* A list of items separated by any of seps, each passing one(). */
static bool list_of(const char *s, const char *seps, bool (*one)(const char *, size_t))
{
	size_t n = 0;
	for (const char *p = s; *p;) {
		size_t l = strcspn(p, seps);
		if (l && !one(p, l))
			return false;
		n += l > 0;
		p += l;
		p += *p != '\0';
	}
	return n > 0;
}

static bool dns_name_n(const char *s, size_t n)
{
	char *d = strndup(s, n);
	bool ok = d && pvecheck_dns_name(d);
	free(d);
	return ok;
}

static bool address_n(const char *s, size_t n)
{
	char *d = strndup(s, n);
	bool ok = d && (ipv4(d) || ipv6(d));
	free(d);
	return ok;
}

/* 1 when s suits format fmt, 0 when not, -1 when pvagent does not check
 * that format. *what: how to describe a suitable value. */
static int format_ok(const char *fmt, const char *s, const char **what)
{
	static const struct {
		const char *name, *what;
	} names[] = {
		{"pve-configid", "configuration key (a letter, then letters, digits, '_', '-')"},
		{"pve-configid-list", "list of configuration keys"},
		{"pve-storage-id", "storage ID (a letter, then letters, digits, '-', '_', '.')"},
		{"pve-bridge-id", "bridge name (letters, digits, '-', '_', '.')"},
		{"pve-poolid", "pool name (letters, digits, '-', '_')"},
		{"pve-node", "node name (a DNS label)"},
		{"dns-name", "DNS name"},
		{"dns-name-list", "list of DNS names"},
		{"pve-vmid", "VMID (100 to 999999999)"},
		{"mac-addr", "unicast MAC address (XX:XX:XX:XX:XX:XX, first byte even)"},
		{"pve-volume-id", "volume ID (STORAGE:VOLUME)"},
		{"pve-volume-id-or-qm-path", "volume (STORAGE:VOLUME, STORAGE:SIZE_GB, an absolute path, none or cdrom)"},
		{"pve-volume-id-or-absolute-path", "volume (STORAGE:VOLUME or an absolute path)"},
		{"disk-size", "size (a number with an optional K, M, G or T)"},
		{"ipv4", "IPv4 address"},
		{"ipv6", "IPv6 address"},
		{"ip", "IP address"},
		{"address-list", "list of IP addresses"},
		{"pve-ipv4-config", "IPv4 setting (dhcp, manual or ADDRESS/PREFIX)"},
		{"pve-ipv6-config", "IPv6 setting (dhcp, auto, manual or ADDRESS/PREFIX)"},
		{"urlencoded", "percent-encoded text (letters, digits, -%_.!~*'())"},
		{"pve-tag-list", "list of tags (letters, digits, '_', '-', '+', '.')"},
		{"pve-qm-bootdisk", "disk name (ide0, sata0, scsi0, virtio0, ...)"},
	};
	size_t i = 0;
	while (i < sizeof names / sizeof names[0] && strcmp(names[i].name, fmt) != 0)
		i++;
	if (i == sizeof names / sizeof names[0])
		return -1;
	*what = names[i].what;
	size_t n = strlen(s);
	bool ok;
	switch (i) {
	case 0: ok = configid(s, n); break;
	case 1: ok = list_of(s, ",; ", configid); break;
	case 2: ok = storage_id(s, n); break;
	case 3: ok = n > 0 && only(s, n, "-_."); break;
	case 4: ok = n > 0 && only(s, n, "-_"); break;
	case 5: ok = dns_label(s, n); break;
	case 6: ok = pvecheck_dns_name(s); break;
	case 7: ok = list_of(s, ",; ", dns_name_n); break;
	case 8: ok = vmid(s); break;
	case 9: ok = mac(s); break;
	case 10: ok = volume_id(s); break;
	case 11: ok = volume_id(s) || s[0] == '/' || !strcmp(s, "none") || !strcmp(s, "cdrom"); break;
	case 12: ok = volume_id(s) || s[0] == '/'; break;
	case 13: ok = disk_size(s); break;
	case 14: ok = ipv4(s); break;
	case 15: ok = ipv6(s); break;
	case 16: ok = ipv4(s) || ipv6(s); break;
	case 17: ok = list_of(s, ",; ", address_n); break;
	case 18: ok = !strcmp(s, "dhcp") || !strcmp(s, "manual") || cidr(s, false); break;
	case 19: ok = !strcmp(s, "dhcp") || !strcmp(s, "auto") || !strcmp(s, "manual") ||
		      cidr(s, true); break;
	case 20: ok = urlencoded(s); break;
	case 21: ok = list_of(s, ",; ", tag); break;
	default: ok = bootdisk(s); break;
	}
	return ok;
}

/* ---- scalar values ------------------------------------------------------ */

static bool is_integer(const char *s)
{
	const char *p = s + (*s == '-' || *s == '+');
	return *p && strspn(p, "0123456789") == strlen(p);
}

static bool is_number(const char *s, double *d)
{
	if (!*s || strchr(" \t\n", *s))
		return false;
	char *end;
	errno = 0;
	*d = strtod(s, &end);
	return !*end && !errno && isfinite(*d) && !strpbrk(s, "xXnNiI");
}

/* A parameter takes 1 or 0; a property string key also yes/no, on/off,
 * true/false (PVE parses those keys with parse_boolean). */
static int is_bool(const char *s, bool words)
{
	static const char *const t[] = {"1", "true", "yes", "on"}, *const f[] = {"0", "false", "no", "off"};
	for (size_t i = 0; i < (words ? 4 : 1); i++)
		if (!strcasecmp(s, t[i]) || !strcasecmp(s, f[i]))
			return 1;
	return 0;
}

static int check_props(const struct pvekey_val *v, const char *value, char **why);

static int check_value(const struct pvekey_val *v, const char *s, bool in_props, char **why)
{
	*why = NULL;
	if (!v)
		return 0;
	double d = 0;
	switch (v->type) {
	case PVEKEY_T_BOOLEAN:
		if (!is_bool(s, in_props))
			return fail(why, "'%.*s%s': must be %s", Q(s),
				    in_props ? "1 or 0 (or yes/no, on/off, true/false)"
					     : "0 or 1 (a PVE boolean)");
		return 0;
	case PVEKEY_T_INTEGER:
		if (!is_integer(s))
			return fail(why, "'%.*s%s': must be an integer", Q(s));
		d = strtod(s, NULL);
		break;
	case PVEKEY_T_NUMBER:
		if (!is_number(s, &d))
			return fail(why, "'%.*s%s': must be a number", Q(s));
		break;
	case PVEKEY_T_STRING:
		break;
	}
	if (v->type != PVEKEY_T_STRING) {
		if (v->has_min && d < v->min)
			return fail(why, "%.*s%s is below the minimum %.15g", Q(s), v->min);
		if (v->has_max && d > v->max)
			return fail(why, "%.*s%s is above the maximum %.15g", Q(s), v->max);
	}
	if (v->enums) {
		size_t i = 0;
		while (v->enums[i] && strcmp(v->enums[i], s) != 0)
			i++;
		if (!v->enums[i]) {
			struct sbuf b = {0};
			for (size_t j = 0; v->enums[j]; j++)
				if (sbuf_addf(&b, "%s%s", j ? ", " : "", v->enums[j]) < 0) {
					sbuf_free(&b);
					return -1;
				}
			int rc = fail(why, "'%.*s%s' is not one of: %s", Q(s), sbuf_str(&b));
			sbuf_free(&b);
			return rc;
		}
	}
	size_t len = strlen(s);
	if (v->max_length && len > (size_t)v->max_length)
		return fail(why, "%zu characters long, at most %d allowed", len, v->max_length);
	if (v->min_length && len < (size_t)v->min_length)
		return fail(why, "'%.*s%s' is shorter than %d characters", Q(s), v->min_length);
	if (v->pattern) {
		regex_t re;
		int rc = regcomp(&re, v->pattern, REG_EXTENDED | REG_NOSUB);
		if (rc == REG_ESPACE)
			return -1;
		if (rc == 0) {
			rc = regexec(&re, s, 0, NULL, 0);
			regfree(&re);
			if (rc == REG_NOMATCH)
				return fail(why, "'%.*s%s' does not match %s", Q(s), v->pattern);
		}
	}
	if (v->format) {
		const char *what = NULL;
		if (format_ok(v->format, s, &what) == 0)
			return fail(why, "'%.*s%s' is not a %s", Q(s), what);
	}
	if (v->props)
		return check_props(v, s, why);
	return 0;
}

int pvecheck_value(const struct pvekey_val *v, const char *s, char **why)
{
	return check_value(v, s, false, why);
}

/* ---- property strings ---------------------------------------------------- */

static const struct pvekey_prop *find_prop(const struct pvekey_val *v, const char *k, size_t n)
{
	for (size_t i = 0; i < v->n_props; i++)
		if (strlen(v->props[i].name) == n && strncmp(v->props[i].name, k, n) == 0)
			return &v->props[i];
	return NULL;
}

static int unknown_key(const struct pvekey_val *v, const char *k, size_t n, char **why)
{
	struct sbuf b = {0};
	for (size_t i = 0; i < v->n_props; i++)
		if (!v->props[i].alias &&
		    sbuf_addf(&b, "%s%s", b.len ? ", " : "", v->props[i].name) < 0) {
			sbuf_free(&b);
			return -1;
		}
	int rc = fail(why, "%.*s: unknown key (known: %s)", (int)(n > SHOW ? SHOW : n), k,
		      sbuf_str(&b));
	sbuf_free(&b);
	return rc;
}

/* Check one key's value; the message names the key unless it was bare. */
static int check_one(const struct pvekey_prop *p, const char *val, size_t n, bool bare,
		     char **why)
{
	char *d = strndup(val, n);
	if (!d)
		return -1;
	char *inner = NULL;
	int rc = check_value(&p->v, d, true, &inner);
	free(d);
	if (rc == 1 && !bare) {
		rc = fail(why, "%s: %s", p->name, inner);
		free(inner);
		return rc;
	}
	*why = inner;
	return rc;
}

static int check_props(const struct pvekey_val *v, const char *s, char **why)
{
	bool *seen = calloc(v->n_props ? v->n_props : 1, sizeof *seen);
	if (!seen)
		return -1;
	int rc = 0;
	const char *p = s;
	while (rc == 0) {
		size_t l = strcspn(p, ",");
		const char *eq = memchr(p, '=', l);
		const struct pvekey_prop *k = NULL;
		const char *val;
		size_t vn;
		bool bare = false;
		if (l == 0) {
			rc = fail(why, "empty item in '%.*s%s'", Q(s));
			break;
		}
		if (eq) {
			k = find_prop(v, p, (size_t)(eq - p));
			if (!k) {
				rc = unknown_key(v, p, (size_t)(eq - p), why);
				break;
			}
			val = eq + 1;
			vn = l - (size_t)(eq - p) - 1;
		} else {
			for (size_t i = 0; i < v->n_props && !k; i++)
				if (v->props[i].default_key && !seen[i])
					k = &v->props[i];
			if (!k) {
				rc = fail(why, "'%.*s': not KEY=VALUE", (int)(l > SHOW ? SHOW : l), p);
				break;
			}
			val = p;
			vn = l;
			bare = true;
		}
		/* an alias: "virtio=MAC" sets macaddr=MAC (and model=virtio) */
		const struct pvekey_prop *target = k;
		if (k->alias) {
			target = find_prop(v, k->alias, strlen(k->alias));
			if (!target)
				target = k;
			if (k->key_alias) {
				const struct pvekey_prop *ka = find_prop(v, k->key_alias,
									 strlen(k->key_alias));
				if (ka && seen[ka - v->props]) {
					rc = fail(why, "%s given twice", ka->name);
					break;
				}
				if (ka)
					seen[ka - v->props] = true;
			}
		}
		if (seen[target - v->props]) {
			rc = fail(why, "%s given twice", target->name);
			break;
		}
		seen[target - v->props] = true;
		rc = check_one(target, val, vn, bare, why);
		if (rc != 0 || !p[l])
			break;
		p += l + 1;
	}
	for (size_t i = 0; rc == 0 && i < v->n_props; i++)
		if (!v->props[i].optional && !v->props[i].alias && !seen[i])
			rc = fail(why, "%s missing", v->props[i].name);
	free(seen);
	return rc;
}

int pvecheck_param(int major, enum pvekey_kind kind, const char *param, const char *value,
		   char **why)
{
	*why = NULL;
	static const int each[] = {9, 8}; /* one major of each table */
	const struct pvekey *tried = NULL;
	for (size_t i = 0; i < sizeof each / sizeof each[0]; i++) {
		if (major > 0 && pvekey_versions(major) != pvekey_versions(each[i]))
			continue;
		const struct pvekey *k = pvekey_lookup_for(each[i], kind, param);
		if (!k || (tried && k->val == tried->val))
			continue;
		char *w = NULL;
		int rc = pvecheck_value(k->val, value, &w);
		if (rc <= 0) {
			free(*why);
			*why = NULL;
			return rc;
		}
		if (!*why)
			*why = w; /* the first version's reason */
		else
			free(w);
		tried = k;
	}
	return tried ? 1 : fail(why, "not a PVE parameter");
}

/* ---- keys only root@pam may set ----------------------------------------------- */

static bool listed(const char *k, const char *const *v)
{
	for (size_t i = 0; v[i]; i++)
		if (strcmp(k, v[i]) == 0)
			return true;
	return false;
}

static bool root_only(enum pvekey_kind kind, const char *key)
{
	if (kind == PVEKEY_LXC)
		return key_indexed(key, "dev"); /* check_ct_modify_config_perm */
	if (kind != PVEKEY_QEMU)
		return false;
	/* qemu-server's check_vm_modify_config_perm: a key in none of its
	 * lists ($cpuoptions, $memoryoptions, $hwtypeoptions,
	 * $generaloptions, $vmpoweroptions, $diskoptions, $cloudinitoptions,
	 * the drives, nets and keys checked by value) "catches args, lock,
	 * etc." */
	static const char *const plain[] = {
		"cores", "cpu", "runningcpu", "cpulimit", "cpuunits", "numa", "smp", "sockets",
		"vcpus", "memory", "balloon", "shares", "acpi", "hotplug", "kvm", "machine",
		"runningmachine", "scsihw", "smbios1", "tablet", "vga", "watchdog", "audio0",
		"rng0", "agent", "autostart", "bios", "description", "keyboard", "localtime",
		"migrate_downtime", "migrate_speed", "name", "onboot", "ostype", "protection",
		"reboot", "startdate", "startup", "tdf", "template", "freeze", "boot", "bootdisk",
		"vmstatestorage", "cicustom", "cipassword", "citype", "ciuser", "ciupgrade",
		"nameserver", "searchdomain", "sshkeys", "cdrom", "tags", "vmstate", "efidisk0",
		"tpmstate0", NULL};
	static const char *const indexed[] = {"ide",	"sata",	   "scsi",   "virtio",
					      "unused", "serial",  "usb",    "hostpci",
					      "virtiofs", "numa",  "net",    "ipconfig",
					      NULL};
	/* create_vm extracts its own parameters (pool, storage, archive,
	 * start, unique, ...) before the check; the request's meta ones are
	 * none of the config's */
	static const char *const meta[] = {"vmid",     "node",	  "digest", "delete",
					   "revert",   "skiplock", "force",  "background_delay",
					   NULL};
	const struct pvekey *pk = pvekey_lookup(kind, key);
	if (listed(key, plain) || listed(key, meta) || (pk && !(pk->where & PVEKEY_CONFIG)))
		return false;
	for (size_t i = 0; indexed[i]; i++)
		if (key_indexed(key, indexed[i]))
			return false;
	return true;
}

int pvecheck_root_only(enum pvekey_kind kind, const char *key, char **why)
{
	*why = NULL;
	if (!root_only(kind, key))
		return 0;
	*why = kind == PVEKEY_LXC
		       ? strdup("configuring device passthrough is only allowed for root@pam")
		       : strprintf("only root can set '%s' config", key);
	return *why ? 1 : -1;
}
