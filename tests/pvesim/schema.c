/* schema.c - the simulator's schema checker: loads the official PVE API
 * schema (apidata JSON, or apidata.js with its JavaScript wrapper), indexes
 * its paths as a tree of segments with placeholder children, and validates
 * request parameters the way pve-common's PVE::JSONSchema does (check_prop,
 * check_object, check_type, check_format, parse_property_string), with the
 * same error texts. Named formats registered in Perl (pve-node, pve-vmid,
 * mac-addr, ...) are re-implemented here for the ones the simulator's
 * endpoints use; an unknown named format is accepted.
 *
 * Thread safety: a loaded schema is read-only except for the lazily
 * compiled regexes, which are published with an atomic compare-and-swap, so
 * schema_find/schema_check may run concurrently on several threads. */
#include "schema.h"

#include "acl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "util.h"

/* ------------------------------------------------------------------ */
/* regexes                                                             */

/* A Perl regex, anchored and translated for PCRE2 at load, compiled on
 * first use. */
struct rx {
	char *src;                    /* translated and anchored */
	_Atomic(pcre2_code *) code;
	atomic_int bad;               /* did not compile: treated as match */
	struct rx *next;              /* schema's list, for dedupe/free */
};

/* Translate Perl-only syntax to PCRE2:
 *  (?^flags:  -> (?flags-rest:  (Perl's caret = reset imsx to defaults)
 *  {,n}       -> {0,n}          (Perl >= 5.34 quantifier)
 * Character classes and escapes are copied verbatim. anchor: wrap as
 * ^...$ literally (no group, like PVE's m/^$pattern$/). */
static char *perl_to_pcre(const char *p, int anchor)
{
	struct sbuf b = {0};
	int in_class = 0;
	int ok = anchor ? sbuf_addc(&b, '^') : 0;

	for (size_t i = 0; ok == 0 && p[i]; i++) {
		char c = p[i];
		if (c == '\\' && p[i + 1]) {
			ok = sbuf_addn(&b, p + i, 2);
			i++;
			continue;
		}
		if (in_class) {
			if (c == ']')
				in_class = 0;
			ok = sbuf_addc(&b, c);
			continue;
		}
		if (c == '[') {
			in_class = 1;
			ok = sbuf_addc(&b, c);
			/* a ']' right after '[' or '[^' is literal */
			if (p[i + 1] == '^') {
				ok = ok ? ok : sbuf_addc(&b, '^');
				i++;
			}
			if (p[i + 1] == ']') {
				ok = ok ? ok : sbuf_addc(&b, ']');
				i++;
			}
			continue;
		}
		if (c == '(' && p[i + 1] == '?' && p[i + 2] == '^') {
			size_t j = i + 3;
			char on[8] = "";
			size_t non = 0;
			while (p[j] && strchr("imsxn", p[j]) && non < sizeof(on) - 1)
				on[non++] = p[j++];
			on[non] = '\0';
			if (p[j] == ':' || p[j] == ')') {
				char off[8];
				size_t noff = 0;
				for (const char *f = "imsx"; *f; f++)
					if (!strchr(on, *f))
						off[noff++] = *f;
				off[noff] = '\0';
				ok = sbuf_addf(&b, "(?%s%s%s%c", on, noff ? "-" : "",
					       off, p[j]);
				i = j;
				continue;
			}
		}
		if (c == '{' && p[i + 1] == ',' && isdigit((unsigned char)p[i + 2])) {
			size_t j = i + 2;
			while (isdigit((unsigned char)p[j]))
				j++;
			if (p[j] == '}') {
				ok = sbuf_add(&b, "{0");
				continue; /* the ",n}" follows verbatim */
			}
		}
		ok = sbuf_addc(&b, c);
	}
	if (ok == 0 && anchor)
		ok = sbuf_addc(&b, '$');
	if (ok != 0) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

static pcre2_code *rx_code(struct rx *r)
{
	pcre2_code *c = atomic_load_explicit(&r->code, memory_order_acquire);
	if (c || atomic_load(&r->bad))
		return c;
	int errcode;
	PCRE2_SIZE erroff;
	pcre2_code *n = pcre2_compile((PCRE2_SPTR)r->src, PCRE2_ZERO_TERMINATED,
				      0, &errcode, &erroff, NULL);
	if (!n) {
		atomic_store(&r->bad, 1);
		return NULL;
	}
	/* JIT is optional: if it fails the interpreter is used */
	(void)pcre2_jit_compile(n, PCRE2_JIT_COMPLETE);
	pcre2_code *expected = NULL;
	if (!atomic_compare_exchange_strong(&r->code, &expected, n)) {
		pcre2_code_free(n);
		return expected;
	}
	return n;
}

/* 1 match, 0 no match, -1 internal error (out of memory). A pattern PCRE2
 * cannot compile matches everything (the schema is trusted). */
static int rx_match(struct rx *r, const char *s, size_t len)
{
	pcre2_code *c = rx_code(r);
	if (!c)
		return atomic_load(&r->bad) ? 1 : -1;
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(c, NULL);
	if (!md)
		return -1;
	int rc = pcre2_match(c, (PCRE2_SPTR)s, len, 0, 0, md, NULL);
	pcre2_match_data_free(md);
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	return -1;
}

/* ------------------------------------------------------------------ */
/* schema data structures                                              */

enum ptype { T_NONE, T_STRING, T_INTEGER, T_NUMBER, T_BOOLEAN, T_OBJECT,
	     T_ARRAY, T_NULL, T_ANY, T_OTHER };

struct pset;
struct fmtdef;

/* One parameter, or one key of a property string. Strings point into the
 * schema's JSON tree, which lives as long as the schema. */
struct prop {
	const char *name;       /* as in the schema: "net[n]" */
	size_t base_len;        /* indexed key: length of "net"; else 0 */
	long idx_max;           /* indexed key: highest index, -1 = unknown */
	enum ptype type;
	const char *type_name;
	int optional, default_key;
	int has_min, has_max, has_minlen, has_maxlen;
	double min, max;
	const char *min_txt, *max_txt;
	long long minlen, maxlen;
	const char **enumv;
	size_t nenum;
	char *enum_joined;
	struct rx *pattern;
	const char *format_name;          /* named format */
	const struct fmtdef *named;       /* resolved code format, or NULL */
	const struct pset *pfmt;          /* property-string schema, or NULL */
	struct pset *own_pfmt;            /* inline format object (owned) */
	const char *requires, *alias, *key_alias;
	struct prop *items;               /* array items (owned) */
};

/* An object schema: a method's parameters or a property-string format.
 * props sorted by name. */
struct pset {
	struct prop *v;
	size_t n;
	int addl;         /* additionalProperties allowed */
	int addl_given;   /* additionalProperties present in the schema */
};

struct schema_method {
	const char *name;
	const char *http;
	const char *path;
	struct pset params;
	int has_params;
	const struct schema *s;
};

struct pnode {
	char *seg;                  /* literal segment, or NULL */
	char *var;                  /* placeholder name, or NULL */
	struct pnode **kids;
	size_t nkids;
	struct schema_method *m[4]; /* GET POST PUT DELETE */
};

/* Builtin regexes used by the named formats. */
enum brx { RX_IPV4, RX_IPV6, RX_IP, RX_CIDRV4, RX_CIDRV6, RX_EMAIL,
	   RX_EMAIL_USER, RX_DNS, RX_N };

struct schema {
	json_object *root;
	struct pnode *tree;
	struct schema_method **methods;
	size_t nmethods;
	struct rx *rxs;             /* every regex, deduplicated */
	struct rx *brx[RX_N];
	struct pset *ipconfig_fmt;  /* pve-qm-ipconfig */
	struct pset *boot_fmt;      /* pve-qm-boot */
	json_object *extra_json;    /* JSON of the hardcoded formats */
	int legacy;                 /* PVE 2.x/3.x rules (pve-vmid min 1) */
	int major;                  /* PVE major version (detect_major) */
};

/* ------------------------------------------------------------------ */
/* error collection (PVE add_error)                                    */

struct errs {
	struct { char *path; char *msg; } *e;
	size_t n, cap;
	int oom;
};

static void errs_free(struct errs *er)
{
	for (size_t i = 0; i < er->n; i++) {
		free(er->e[i].path);
		free(er->e[i].msg);
	}
	free(er->e);
	er->e = NULL;
	er->n = er->cap = 0;
}

/* add_error: a second message for the same path is joined with the two
 * characters backslash-n (Perl's single-quoted '\n' in add_error). */
static void add_error(struct errs *er, const char *path, const char *msg)
{
	if (er->oom)
		return;
	if (!msg) {
		er->oom = 1;
		return;
	}
	if (!path || !*path)
		path = "_root";
	for (size_t i = 0; i < er->n; i++) {
		if (strcmp(er->e[i].path, path) == 0) {
			char *j = strprintf("%s\\n%s", er->e[i].msg, msg);
			if (!j) {
				er->oom = 1;
				return;
			}
			free(er->e[i].msg);
			er->e[i].msg = j;
			return;
		}
	}
	if (er->n == er->cap) {
		size_t nc = er->cap ? er->cap * 2 : 8;
		void *ne = realloc(er->e, nc * sizeof(*er->e));
		if (!ne) {
			er->oom = 1;
			return;
		}
		er->e = ne;
		er->cap = nc;
	}
	char *p = strdup(path), *m = strdup(msg);
	if (!p || !m) {
		free(p);
		free(m);
		er->oom = 1;
		return;
	}
	er->e[er->n].path = p;
	er->e[er->n].msg = m;
	er->n++;
}

static void add_errorf(struct errs *er, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_errorf(struct errs *er, const char *path, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (rc != 0) {
		sbuf_free(&b);
		er->oom = 1;
		return;
	}
	add_error(er, path, sbuf_str(&b));
	sbuf_free(&b);
}

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

/* Perl's "$": end of string, or just before a final newline. */
static int perl_end(const char *s, size_t i)
{
	return s[i] == '\0' || (s[i] == '\n' && s[i + 1] == '\0');
}

/* is_integer: m/^[+-]?\d+$/ */
static int is_integer(const char *v)
{
	size_t i = 0;
	if (v[i] == '+' || v[i] == '-')
		i++;
	if (!isdigit((unsigned char)v[i]))
		return 0;
	while (isdigit((unsigned char)v[i]))
		i++;
	return perl_end(v, i);
}

/* is_number: /^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$/ */
static int is_number(const char *v)
{
	size_t i = 0, d1 = 0, d2 = 0;
	if (v[i] == '+' || v[i] == '-')
		i++;
	while (isdigit((unsigned char)v[i])) {
		i++;
		d1++;
	}
	if (v[i] == '.') {
		i++;
		while (isdigit((unsigned char)v[i])) {
			i++;
			d2++;
		}
	}
	if (d1 == 0 && d2 == 0)
		return 0;
	if (v[i] == 'e' || v[i] == 'E') {
		size_t j = i + 1;
		if (v[j] == '+' || v[j] == '-')
			j++;
		if (!isdigit((unsigned char)v[j]))
			return perl_end(v, i);
		while (isdigit((unsigned char)v[j]))
			j++;
		i = j;
	}
	return perl_end(v, i);
}

/* Perl truthiness of a JSON flag ("optional": 1). */
static int jtrue(json_object *o)
{
	if (!o)
		return 0;
	switch (json_object_get_type(o)) {
	case json_type_boolean: return json_object_get_boolean(o);
	case json_type_int: return json_object_get_int64(o) != 0;
	case json_type_double: return json_object_get_double(o) != 0;
	case json_type_string: {
		const char *s = json_object_get_string(o);
		return s[0] && strcmp(s, "0") != 0;
	}
	case json_type_null: return 0;
	default: return 1;
	}
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Perl length(): characters, counting UTF-8 sequences as one. */
static size_t perl_length(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

/* ------------------------------------------------------------------ */
/* named formats (Perl register_format code refs)                      */

struct ctx {
	const struct schema *s;
	struct errs *er;
};

/* A code format returns NULL if the value is valid, else the message the
 * Perl validator dies with (malloc'd, usually ending in "\n"). On out of
 * memory it sets c->er->oom and returns NULL. */
typedef char *(*fmt_fn)(struct ctx *c, const char *v);

struct fmtdef {
	const char *name;
	fmt_fn fn;
};

static int split_list(const char *v, char ***out, size_t *n);

static char *die(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *die(struct ctx *c, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (rc != 0) {
		sbuf_free(&b);
		c->er->oom = 1;
		return NULL;
	}
	return sbuf_steal(&b);
}

/* match a builtin regex; -1 (oom) is reported as no match + oom */
static int bmatch(struct ctx *c, enum brx which, const char *v)
{
	int r = rx_match(c->s->brx[which], v, strlen(v));
	if (r < 0) {
		c->er->oom = 1;
		return 0;
	}
	return r;
}

static int all_chars(const char *v, size_t from, const char *extra, int alnum)
{
	size_t i = from;
	for (; v[i] && !perl_end(v, i); i++) {
		unsigned char ch = (unsigned char)v[i];
		if (alnum && isalnum(ch))
			continue;
		if (extra && ch && strchr(extra, ch))
			continue;
		return 0;
	}
	return 1;
}

static char *f_urlencoded(struct ctx *c, const char *v)
{
	if (all_chars(v, 0, "-%_.!~*'()", 1))
		return NULL;
	return die(c, "invalid urlencoded string: %s\n", v);
}

static int configid_ok(const char *v, int legacy)
{
	/* modern: [a-z][a-z0-9_-]+ /i; PVE 3.x: [a-z][a-z0-9_]+ /i */
	if (!isalpha((unsigned char)v[0]) || perl_end(v, 1))
		return 0;
	return all_chars(v, 1, legacy ? "_" : "_-", 1);
}

static char *f_configid(struct ctx *c, const char *v)
{
	if (configid_ok(v, c->s->legacy))
		return NULL;
	if (c->s->legacy)
		return die(c, "invalid cofiguration ID '%s'\n", v);
	return die(c, "invalid configuration ID '%s'\n", v);
}

/* parse_id: m/^[a-z][a-z0-9\-\_\.]*[a-z0-9]$/i */
static int id_ok(const char *v)
{
	size_t n = strlen(v);
	if (n && v[n - 1] == '\n')
		n--;
	if (n < 2 || !isalpha((unsigned char)v[0]) || !isalnum((unsigned char)v[n - 1]))
		return 0;
	for (size_t i = 1; i + 1 < n; i++)
		if (!isalnum((unsigned char)v[i]) && !strchr("-_.", v[i]))
			return 0;
	return 1;
}

static char *f_storage_id(struct ctx *c, const char *v)
{
	if (id_ok(v))
		return NULL;
	return die(c, "storage ID '%s' contains illegal characters\n", v);
}

static char *f_bridge_id(struct ctx *c, const char *v)
{
	/* m/^[-_.\w\d]+$/ */
	if (v[0] && !perl_end(v, 0) && all_chars(v, 0, "-_.", 1))
		return NULL;
	return die(c, "invalid bridge ID '%s'\n", v);
}

static char *f_vmid(struct ctx *c, const char *v)
{
	/* modern: m/^[1-9][0-9]{2,8}$/; PVE 3.x: m/^[1-9][0-9]+$/ */
	size_t i = 1;
	if (v[0] >= '1' && v[0] <= '9') {
		while (isdigit((unsigned char)v[i]))
			i++;
		size_t nd = i - 1;
		int ok = c->s->legacy ? nd >= 1 : (nd >= 2 && nd <= 8);
		if (ok && perl_end(v, i))
			return NULL;
	}
	return die(c, "value does not look like a valid VM ID\n");
}

/* m/^([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)$/ (a DNS label) */
static int label_ok(const char *v, size_t n)
{
	if (n == 0 || !isalnum((unsigned char)v[0]) || !isalnum((unsigned char)v[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && v[i] != '-')
			return 0;
	return 1;
}

static size_t perl_len(const char *v)
{
	size_t n = strlen(v);
	return (n && v[n - 1] == '\n') ? n - 1 : n;
}

static char *f_node(struct ctx *c, const char *v)
{
	if (label_ok(v, perl_len(v)))
		return NULL;
	return die(c, "value does not look like a valid node name\n");
}

static char *f_mac(struct ctx *c, const char *v)
{
	/* m/^[a-f0-9][02468ace](?::[a-f0-9]{2}){5}$/i */
	size_t n = perl_len(v);
	int ok = n == 17;
	for (size_t i = 0; ok && i < 17; i++) {
		if (i % 3 == 2)
			ok = v[i] == ':';
		else
			ok = isxdigit((unsigned char)v[i]) != 0;
	}
	if (ok && !strchr("02468aceACE", v[1]))
		ok = 0;
	if (ok)
		return NULL;
	return die(c, "value does not look like a valid unicast MAC address\n");
}

static int ipv4_ok(struct ctx *c, const char *v) { return bmatch(c, RX_IPV4, v); }
static int ipv6_ok(struct ctx *c, const char *v) { return bmatch(c, RX_IPV6, v); }

static char *f_ipv4(struct ctx *c, const char *v)
{
	return ipv4_ok(c, v) ? NULL : die(c, "value does not look like a valid IPv4 address\n");
}

static char *f_ipv6(struct ctx *c, const char *v)
{
	return ipv6_ok(c, v) ? NULL : die(c, "value does not look like a valid IPv6 address\n");
}

static char *f_ip(struct ctx *c, const char *v)
{
	return bmatch(c, RX_IP, v) ? NULL : die(c, "value does not look like a valid IP address\n");
}

/* CIDR with prefix length (lo, hi] */
static int cidr_ok(struct ctx *c, enum brx which, const char *v, long hi)
{
	if (!bmatch(c, which, v))
		return 0;
	const char *slash = strrchr(v, '/');
	long bits = slash ? strtol(slash + 1, NULL, 10) : -1;
	return bits > 7 && bits <= hi;
}

static char *f_cidrv4(struct ctx *c, const char *v)
{
	return cidr_ok(c, RX_CIDRV4, v, 32) ? NULL :
		die(c, "value does not look like a valid IPv4 CIDR network\n");
}

static char *f_cidrv6(struct ctx *c, const char *v)
{
	return cidr_ok(c, RX_CIDRV6, v, 128) ? NULL :
		die(c, "value does not look like a valid IPv6 CIDR network\n");
}

static char *f_cidr(struct ctx *c, const char *v)
{
	if (cidr_ok(c, RX_CIDRV4, v, 32) || cidr_ok(c, RX_CIDRV6, v, 128))
		return NULL;
	return die(c, "value does not look like a valid CIDR network\n");
}

static int word_is(const char *v, const char *const *words)
{
	size_t n = perl_len(v);
	for (; *words; words++)
		if (strlen(*words) == n && strncmp(v, *words, n) == 0)
			return 1;
	return 0;
}

static char *f_ipv4_config(struct ctx *c, const char *v)
{
	static const char *const w[] = {"dhcp", "manual", NULL};
	if (word_is(v, w) || cidr_ok(c, RX_CIDRV4, v, 32))
		return NULL;
	return die(c, "value does not look like a valid ipv4 network configuration\n");
}

static char *f_ipv6_config(struct ctx *c, const char *v)
{
	static const char *const w[] = {"auto", "dhcp", "manual", NULL};
	if (word_is(v, w) || cidr_ok(c, RX_CIDRV6, v, 128))
		return NULL;
	return die(c, "value does not look like a valid ipv6 network configuration\n");
}

static char *f_ipv4mask(struct ctx *c, const char *v)
{
	unsigned a[4];
	char tail;
	if (sscanf(v, "%3u.%3u.%3u.%3u%c", &a[0], &a[1], &a[2], &a[3], &tail) == 4 &&
	    a[0] <= 255 && a[1] <= 255 && a[2] <= 255 && a[3] <= 255) {
		uint32_t m = (uint32_t)a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3];
		uint32_t inv = ~m;
		char canon[16];
		int n = snprintf(canon, sizeof(canon), "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
		/* contiguous ones, written without leading zeros */
		if (n > 0 && strcmp(canon, v) == 0 && (inv & (inv + 1)) == 0)
			return NULL;
	}
	return die(c, "value does not look like a valid IP netmask\n");
}

static char *f_email(struct ctx *c, const char *v)
{
	return bmatch(c, RX_EMAIL, v) ? NULL :
		die(c, "value does not look like a valid email address\n");
}

static char *f_email_or_username(struct ctx *c, const char *v)
{
	return (bmatch(c, RX_EMAIL, v) || bmatch(c, RX_EMAIL_USER, v)) ? NULL :
		die(c, "value does not look like a valid email address or user name\n");
}

static char *f_dns_name(struct ctx *c, const char *v)
{
	return bmatch(c, RX_DNS, v) ? NULL :
		die(c, "value does not look like a valid DNS name\n");
}

static char *f_address(struct ctx *c, const char *v)
{
	return (bmatch(c, RX_IP, v) || bmatch(c, RX_DNS, v)) ? NULL :
		die(c, "value does not look like a valid address: %s\n", v);
}

/* parse_size: m/^(\d+(\.\d+)?)([KMGT])?$/ */
static int size_ok(const char *v)
{
	size_t i = 0;
	if (!isdigit((unsigned char)v[i]))
		return 0;
	while (isdigit((unsigned char)v[i]))
		i++;
	if (v[i] == '.') {
		i++;
		if (!isdigit((unsigned char)v[i]))
			return 0;
		while (isdigit((unsigned char)v[i]))
			i++;
	}
	if (v[i] && strchr("KMGT", v[i]))
		i++;
	return perl_end(v, i);
}

static char *f_disk_size(struct ctx *c, const char *v)
{
	return size_ok(v) ? NULL : die(c, "value does not look like a valid disk size: %s\n", v);
}

static int digits_only(const char *v, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)v[i]))
			return 0;
	return 1;
}

static char *f_startup_order(struct ctx *c, const char *v)
{
	/* pve_parse_startup_order: comma list of [order=]N, up=N, down=N;
	 * an empty (false) value is rejected */
	int ok = v[0] && strcmp(v, "0") != 0;
	for (const char *p = v; ok && *p;) {
		size_t n = strcspn(p, ",");
		size_t k = 0;
		while (k < n && isspace((unsigned char)p[k]))
			k++;
		if (k < n) {
			size_t pl = n;
			if (pl && p[pl - 1] == '\n' && p[pl] == '\0')
				pl--;
			const char *x = p;
			if (pl > 6 && strncmp(x, "order=", 6) == 0) {
				x += 6;
				pl -= 6;
			} else if (pl > 3 && strncmp(x, "up=", 3) == 0) {
				x += 3;
				pl -= 3;
			} else if (pl > 5 && strncmp(x, "down=", 5) == 0) {
				x += 5;
				pl -= 5;
			}
			ok = digits_only(x, pl);
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return ok ? NULL : die(c, "unable to parse startup options\n");
}

static char *f_tag(struct ctx *c, const char *v)
{
	/* m/^[a-z0-9_][a-z0-9_\-\+\.]*$/i */
	if ((isalnum((unsigned char)v[0]) || v[0] == '_') && all_chars(v, 1, "_-+.", 1))
		return NULL;
	return die(c, "invalid characters in tag\n");
}

static char *f_iface(struct ctx *c, const char *v)
{
	/* m/^[a-z][a-z0-9_]{1,20}([:\.]\d+)?$/i */
	size_t i = 1, n = perl_len(v);
	int ok = isalpha((unsigned char)v[0]);
	while (ok && i < n && (isalnum((unsigned char)v[i]) || v[i] == '_'))
		i++;
	ok = ok && i >= 2 && i <= 21;
	if (ok && i < n) {
		ok = (v[i] == ':' || v[i] == '.') && digits_only(v + i + 1, n - i - 1);
	}
	return ok ? NULL : die(c, "invalid network interface name '%s'\n", v);
}

static char *f_volume_id(struct ctx *c, const char *v)
{
	/* m/^([a-z][a-z0-9\-\_\.]*[a-z0-9]):(.+)$/i ; ".+" excludes newlines */
	const char *colon = strchr(v, ':');
	int ok = 0;
	/* the storage part is greedy-backtracked: try every colon */
	for (; colon && !ok; colon = strchr(colon + 1, ':')) {
		size_t sl = (size_t)(colon - v);
		char *sid = strndup(v, sl);
		if (!sid) {
			c->er->oom = 1;
			return NULL;
		}
		const char *rest = colon + 1;
		size_t rl = perl_len(rest);
		ok = id_ok(sid) && rl > 0 && memchr(rest, '\n', rl) == NULL;
		free(sid);
	}
	return ok ? NULL : die(c, "unable to parse volume ID '%s'\n", v);
}

static char *f_volume_id_or_abs(struct ctx *c, const char *v)
{
	if (v[0] == '/')
		return NULL;
	return f_volume_id(c, v);
}

static char *f_volume_id_or_qm_path(struct ctx *c, const char *v)
{
	if (strcmp(v, "none") == 0 || strcmp(v, "cdrom") == 0)
		return NULL;
	return f_volume_id_or_abs(c, v);
}

static char *f_storage_content(struct ctx *c, const char *v)
{
	static const char *const w[] = {"images", "rootdir", "vztmpl", "iso", "backup",
					"snippets", "import", NULL};
	for (const char *const *p = w; *p; p++)
		if (strcmp(*p, v) == 0)
			return NULL;
	return die(c, "invalid content type '%s'\n", v);
}

static char *f_lxc_mp_string(struct ctx *c, const char *v)
{
	/* reject /./ or /../ anywhere, /. or /.. at the end, ../ at the start */
	int bad = strncmp(v, "../", 3) == 0;
	for (const char *p = strstr(v, "/."); !bad && p; p = strstr(p + 1, "/.")) {
		const char *q = p + 2;
		if (*q == '.')
			q++;
		if (*q == '/' || perl_end(q, 0))
			bad = 1;
	}
	return bad ? die(c, "%s contains illegal character sequences\n", v) : NULL;
}

static char *f_vlan_id_or_range(struct ctx *c, const char *v)
{
	char *end;
	long a = strtol(v, &end, 10);
	long b = 0;
	if (!isdigit((unsigned char)v[0]))
		return die(c, "invalid VLAN configuration '%s'\n", v);
	if (*end == '-') {
		const char *bs = end + 1;
		if (!isdigit((unsigned char)*bs))
			return die(c, "invalid VLAN configuration '%s'\n", v);
		b = strtol(bs, &end, 10);
	}
	if (!perl_end(end, 0))
		return die(c, "invalid VLAN configuration '%s'\n", v);
	if (a < 2 || a > 4094)
		return die(c, "invalid VLAN tag '%ld'\n", a);
	if (b) {
		if (b < 2 || b > 4094)
			return die(c, "invalid VLAN tag '%ld'\n", b);
		if (a >= b)
			return die(c, "VLAN range must go from lower to higher tag '%s'\n", v);
	}
	return NULL;
}

static char *f_realm(struct ctx *c, const char *v)
{
	/* PVE::Auth::Plugin: m/^[A-Za-z][A-Za-z0-9\.\-_]+$/ */
	if (isalpha((unsigned char)v[0]) && !perl_end(v, 1) && all_chars(v, 1, ".-_", 1))
		return NULL;
	return die(c, "value does not look like a valid realm\n");
}

static char *f_poolid(struct ctx *c, const char *v)
{
	/* PVE::AccessControl::verify_poolname: m/^[A-Za-z0-9\.\-_]+$/, with
	 * up to three '/'-separated levels since nested pools (PVE 8.1) */
	size_t n = perl_len(v), levels = 1, seglen = 0;
	int ok = n > 0;
	for (size_t i = 0; ok && i < n; i++) {
		if (v[i] == '/') {
			ok = seglen > 0;
			seglen = 0;
			levels++;
		} else {
			ok = isalnum((unsigned char)v[i]) || strchr(".-_", v[i]) != NULL;
			seglen++;
		}
	}
	ok = ok && seglen > 0;
	if (c->s->legacy) {
		/* 3.x registered verify_groupname for pve-poolid */
		if (ok && levels == 1)
			return NULL;
		return die(c, "group name '%s' contains invalid characters\n", v);
	}
	if (ok && levels > 3)
		return die(c, "pool name '%s' nested too deeply (max levels = 3)\n", v);
	return ok ? NULL : die(c, "pool name '%s' contains invalid characters\n", v);
}

static char *f_hotplug(struct ctx *c, const char *v)
{
	/* qemu-server parse_hotplug_features: '0', '1' (the default list) or
	 * a list of network, disk, cpu, memory, usb, cloudinit */
	static const char *const w[] = {"network", "disk", "cpu", "memory", "usb",
					"cloudinit", NULL};
	if (strcmp(v, "0") == 0 || strcmp(v, "1") == 0)
		return NULL;
	char **items;
	size_t n;
	if (split_list(v, &items, &n) != 0) {
		c->er->oom = 1;
		return NULL;
	}
	char *msg = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!msg && !word_is(items[i], w))
			msg = die(c, "invalid hotplug feature '%s'\n", items[i]);
		free(items[i]);
	}
	free(items);
	return msg;
}

static char *f_priv(struct ctx *c, const char *v)
{
	/* the schema's PVE version's privileges (PVE::AccessControl, acl.h) */
	return acl_priv_valid(c->s->major, v) ? NULL : die(c, "invalid privilege '%s'\n", v);
}

/* pve-qm-bootdev (qemu-server verify_bootdev) */
static int drivename_ok(const char *v)
{
	static const struct { const char *bus; long max; } b[] = {
		{"ide", 3}, {"sata", 5}, {"scsi", 30}, {"virtio", 15}, {"net", 31},
		{"usb", 13}, {"hostpci", 15}};
	for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
		size_t l = strlen(b[i].bus);
		if (strncmp(v, b[i].bus, l) != 0 || !isdigit((unsigned char)v[l]))
			continue;
		const char *d = v + l;
		if (d[0] == '0' && d[1] != '\0')
			return 0;
		if (!digits_only(d, strlen(d)) || strlen(d) > 3)
			return 0;
		return strtol(d, NULL, 10) <= b[i].max;
	}
	return 0;
}

static char *f_bootdev(struct ctx *c, const char *v)
{
	return drivename_ok(v) ? NULL : die(c, "invalid boot device '%s'\n", v);
}

static char *f_storagepair(struct ctx *c, const char *v);
static char *f_bridgepair(struct ctx *c, const char *v);

static char *f_openvz_netif(struct ctx *c, const char *v)
{
	/* PVE::OpenVZ::parse_netif (3.4): every ';'-separated interface needs
	 * an ifname=; other keys are ignored. The Perl die has no trailing
	 * newline, so Perl appends " at .../OpenVZ.pm line N."; the location
	 * is left out here. */
	if (!v[0] || strcmp(v, "0") == 0)
		return NULL;
	const char *p = v;
	for (;;) {
		size_t n = strcspn(p, ";");
		int has_ifname = 0;
		for (size_t i = 0; i < n;) {
			size_t m = strcspn(p + i, ",;");
			if (m > 7 && strncmp(p + i, "ifname=", 7) == 0)
				has_ifname = 1;
			i += m + 1;
		}
		/* Perl's split keeps empty fields except trailing ones */
		int trailing = n == 0 && p[strspn(p, ";")] == '\0';
		if (!has_ifname && !trailing)
			return die(c, "unable to parse --netif value\n");
		p += n;
		if (!*p)
			break;
		p++;
	}
	return NULL;
}

static const struct fmtdef fmtdefs[] = {
	{"CIDR", f_cidr},
	{"CIDRv4", f_cidrv4},
	{"CIDRv6", f_cidrv6},
	{"address", f_address},
	{"bridge-pair", f_bridgepair},
	{"disk-size", f_disk_size},
	{"dns-name", f_dns_name},
	{"email", f_email},
	{"email-or-username", f_email_or_username},
	{"ip", f_ip},
	{"ipv4", f_ipv4},
	{"ipv4mask", f_ipv4mask},
	{"ipv6", f_ipv6},
	{"mac-addr", f_mac},
	{"pve-bridge-id", f_bridge_id},
	{"pve-hotplug-features", f_hotplug},
	{"pve-configid", f_configid},
	{"pve-iface", f_iface},
	{"pve-ipv4-config", f_ipv4_config},
	{"pve-ipv6-config", f_ipv6_config},
	{"pve-lxc-mp-string", f_lxc_mp_string},
	{"pve-node", f_node},
	{"pve-openvz-netif", f_openvz_netif},
	{"pve-poolid", f_poolid},
	{"pve-priv", f_priv},
	{"pve-qm-bootdev", f_bootdev},
	{"pve-realm", f_realm},
	{"pve-startup-order", f_startup_order},
	{"pve-storage-content", f_storage_content},
	{"pve-storage-id", f_storage_id},
	{"pve-tag", f_tag},
	{"pve-vlan-id-or-range", f_vlan_id_or_range},
	{"pve-vmid", f_vmid},
	{"pve-volume-id", f_volume_id},
	{"pve-volume-id-or-absolute-path", f_volume_id_or_abs},
	{"pve-volume-id-or-qm-path", f_volume_id_or_qm_path},
	{"storage-pair", f_storagepair},
	{"urlencoded", f_urlencoded},
};

static const struct fmtdef *find_fmtdef(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(fmtdefs) / sizeof(fmtdefs[0]); i++)
		if (strlen(fmtdefs[i].name) == len && strncmp(fmtdefs[i].name, name, len) == 0)
			return &fmtdefs[i];
	return NULL;
}

/* parse_idmap + verify_idpair: entry '1', 'src:dst' or a default id. */
static char *idpair(struct ctx *c, const char *v, fmt_fn idfmt)
{
	if (strcmp(v, "1") == 0)
		return NULL;
	const char *colon = strchr(v, ':');
	char *inner = NULL;
	if (colon && colon != v && colon[1] && !strchr(colon + 1, ':')) {
		char *src = strndup(v, (size_t)(colon - v));
		if (!src) {
			c->er->oom = 1;
			return NULL;
		}
		inner = idfmt(c, src);
		if (!inner)
			inner = idfmt(c, colon + 1);
		free(src);
	} else {
		inner = idfmt(c, v);
	}
	if (!inner)
		return NULL;
	char *m = die(c, "entry '%s' contains invalid ID - %s\n\n", v, inner);
	free(inner);
	return m;
}

static char *f_storagepair(struct ctx *c, const char *v) { return idpair(c, v, f_storage_id); }
static char *f_bridgepair(struct ctx *c, const char *v) { return idpair(c, v, f_bridge_id); }

/* PVE::Tools::split_list */
static int split_list(const char *v, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	char *copy = strdup(v);
	if (!copy)
		return -1;
	for (char *p = copy; *p; p++)
		if (*p == ',' || *p == ';')
			*p = ' ';
	size_t cap = 0;
	char *save = NULL;
	for (char *tok = strtok_r(copy, " \t\n\r\f\v", &save); tok;
	     tok = strtok_r(NULL, " \t\n\r\f\v", &save)) {
		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 8;
			char **nv = realloc(*out, nc * sizeof(char *));
			if (!nv)
				goto oom;
			*out = nv;
			cap = nc;
		}
		(*out)[*n] = strdup(tok);
		if (!(*out)[*n])
			goto oom;
		(*n)++;
	}
	free(copy);
	return 0;
oom:
	for (size_t i = 0; i < *n; i++)
		free((*out)[i]);
	free(*out);
	*out = NULL;
	*n = 0;
	free(copy);
	return -1;
}

/* ------------------------------------------------------------------ */
/* loading                                                             */

static const char *const typenames[] = {
	[T_NONE] = "", [T_STRING] = "string", [T_INTEGER] = "integer",
	[T_NUMBER] = "number", [T_BOOLEAN] = "boolean", [T_OBJECT] = "object",
	[T_ARRAY] = "array", [T_NULL] = "null", [T_ANY] = "any", [T_OTHER] = ""};

static struct rx *get_rx(struct schema *s, const char *perl, int anchor)
{
	char *src = perl_to_pcre(perl, anchor);
	if (!src)
		return NULL;
	for (struct rx *r = s->rxs; r; r = r->next) {
		if (strcmp(r->src, src) == 0) {
			free(src);
			return r;
		}
	}
	struct rx *r = calloc(1, sizeof(*r));
	if (!r) {
		free(src);
		return NULL;
	}
	r->src = src;
	atomic_init(&r->code, NULL);
	atomic_init(&r->bad, 0);
	r->next = s->rxs;
	s->rxs = r;
	return r;
}

/* Highest index of an indexed key. The schema states it only in some
 * descriptions ("(n is 0 to 30)"); the others come from the MAX_* constants
 * of qemu-server / pve-container / pve-cluster (PVE 8.4). usb: the
 * description says 0 to 4 but the config schema has usb0..usb13. */
static long index_max(const char *base, size_t blen, const char *desc)
{
	static const struct { const char *b; long max; } known[] = {
		{"hostpci", 15}, {"ipconfig", 31}, {"net", 31}, {"numa", 7},
		{"unused", 255}, {"usb", 13}, {"virtiofs", 9}, {"dev", 255},
		{"mp", 255}, {"link", 7}, {"acmedomain", 4}};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i].b) == blen && strncmp(known[i].b, base, blen) == 0)
			return known[i].max;
	const char *p = desc ? strstr(desc, "(n is 0 to ") : NULL;
	if (p && isdigit((unsigned char)p[11]))
		return strtol(p + 11, NULL, 10);
	return -1; /* unknown: any index accepted */
}

static int pset_build(struct schema *s, struct pset *ps, json_object *props, int depth);

static int prop_build(struct schema *s, struct prop *p, const char *name,
		      json_object *def, int depth)
{
	json_object *v;

	memset(p, 0, sizeof(*p));
	p->name = name;
	p->idx_max = -1;
	size_t nl = strlen(name);
	if (nl > 3 && strcmp(name + nl - 3, "[n]") == 0) {
		p->base_len = nl - 3;
		p->idx_max = index_max(name, p->base_len, jstr(def, "description"));
	}
	if (!json_object_is_type(def, json_type_object))
		return 0; /* "Invalid schema definition." never happens in apidata */

	const char *t = jstr(def, "type");
	p->type = T_NONE;
	if (t) {
		p->type = T_OTHER;
		for (int i = T_STRING; i <= T_ANY; i++)
			if (strcmp(t, typenames[i]) == 0)
				p->type = (enum ptype)i;
	}
	p->type_name = t ? t : "";
	p->optional = json_object_object_get_ex(def, "optional", &v) && jtrue(v);
	p->default_key = json_object_object_get_ex(def, "default_key", &v) && jtrue(v);
	if (json_object_object_get_ex(def, "minimum", &v) && !json_object_is_type(v, json_type_null)) {
		p->has_min = 1;
		p->min = json_object_get_double(v);
		p->min_txt = json_object_get_string(v);
	}
	if (json_object_object_get_ex(def, "maximum", &v) && !json_object_is_type(v, json_type_null)) {
		p->has_max = 1;
		p->max = json_object_get_double(v);
		p->max_txt = json_object_get_string(v);
	}
	if (json_object_object_get_ex(def, "minLength", &v) && !json_object_is_type(v, json_type_null)) {
		p->has_minlen = 1;
		p->minlen = json_object_get_int64(v);
	}
	if (json_object_object_get_ex(def, "maxLength", &v) && !json_object_is_type(v, json_type_null)) {
		p->has_maxlen = 1;
		p->maxlen = json_object_get_int64(v);
	}
	if (json_object_object_get_ex(def, "enum", &v) && json_object_is_type(v, json_type_array)) {
		size_t n = json_object_array_length(v);
		struct sbuf b = {0};
		p->enumv = calloc(n ? n : 1, sizeof(char *));
		if (!p->enumv)
			return -1;
		for (size_t i = 0; i < n; i++) {
			const char *e = json_object_get_string(json_object_array_get_idx(v, i));
			p->enumv[i] = e ? e : "";
			if ((i && sbuf_add(&b, ", ") != 0) || sbuf_add(&b, p->enumv[i]) != 0) {
				sbuf_free(&b);
				return -1;
			}
		}
		p->nenum = n;
		p->enum_joined = sbuf_steal(&b);
		if (!p->enum_joined)
			return -1;
	}
	const char *pat = jstr(def, "pattern");
	if (pat && *pat) {
		p->pattern = get_rx(s, pat, 1);
		if (!p->pattern)
			return -1;
	}
	if (json_object_object_get_ex(def, "format", &v)) {
		if (json_object_is_type(v, json_type_string)) {
			p->format_name = json_object_get_string(v);
		} else if (json_object_is_type(v, json_type_object) && depth < 4) {
			p->own_pfmt = calloc(1, sizeof(*p->own_pfmt));
			if (!p->own_pfmt || pset_build(s, p->own_pfmt, v, depth + 1) != 0)
				return -1;
			p->pfmt = p->own_pfmt;
		}
	}
	p->requires = jstr(def, "requires");
	p->alias = jstr(def, "alias");
	p->key_alias = jstr(def, "keyAlias");
	if (json_object_object_get_ex(def, "items", &v) && json_object_is_type(v, json_type_object) &&
	    depth < 4) {
		p->items = calloc(1, sizeof(*p->items));
		if (!p->items || prop_build(s, p->items, name, v, depth + 1) != 0)
			return -1;
	}
	return 0;
}

static void prop_free(struct prop *p);

static void pset_free(struct pset *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		prop_free(&ps->v[i]);
	free(ps->v);
	ps->v = NULL;
	ps->n = 0;
}

static void prop_free(struct prop *p)
{
	free(p->enumv);
	free(p->enum_joined);
	if (p->own_pfmt) {
		pset_free(p->own_pfmt);
		free(p->own_pfmt);
	}
	if (p->items) {
		prop_free(p->items);
		free(p->items);
	}
}

static int prop_cmp(const void *a, const void *b)
{
	return strcmp(((const struct prop *)a)->name, ((const struct prop *)b)->name);
}

/* props: the JSON object {name: schema} */
static int pset_build(struct schema *s, struct pset *ps, json_object *props, int depth)
{
	size_t n = (size_t)json_object_object_length(props), i = 0;
	ps->v = calloc(n ? n : 1, sizeof(*ps->v));
	if (!ps->v)
		return -1;
	json_object_object_foreach(props, k, v) {
		if (prop_build(s, &ps->v[i], k, v, depth) != 0) {
			ps->n = i + 1;
			return -1;
		}
		i++;
	}
	ps->n = i;
	qsort(ps->v, ps->n, sizeof(*ps->v), prop_cmp);
	return 0;
}

static const struct prop *pset_get(const struct pset *ps, const char *name)
{
	struct prop key = {.name = name};
	if (!ps->n)
		return NULL; /* ps->v is NULL then, which bsearch must not get */
	return bsearch(&key, ps->v, ps->n, sizeof(*ps->v), prop_cmp);
}

/* Resolve named formats to code or to a property-string schema. */
static void resolve_prop(struct schema *s, const struct pset *ps, struct prop *p);

static void resolve_formats(struct schema *s, struct pset *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		resolve_prop(s, ps, &ps->v[i]);
}

static void resolve_prop(struct schema *s, const struct pset *ps, struct prop *p)
{
	if (p->own_pfmt)
		resolve_formats(s, p->own_pfmt);
	if (p->items)
		resolve_prop(s, ps, p->items);
	if (!p->format_name)
		return;
	const char *f = p->format_name;
	size_t fl = strlen(f);
	if (fl > 5 && strcmp(f + fl - 5, "-list") == 0)
		fl -= 5;
	else if (fl > 4 && strcmp(f + fl - 4, "-opt") == 0)
		fl -= 4;
	p->named = find_fmtdef(f, fl);
	if (strcmp(f, "pve-qm-ipconfig") == 0) {
		p->pfmt = s->ipconfig_fmt;
	} else if (strcmp(f, "pve-qm-boot") == 0) {
		p->pfmt = s->boot_fmt;
	} else if (strcmp(f, "pve-qm-ide") == 0) {
		/* the drive format of ide[n] in the same method */
		const struct prop *ide = pset_get(ps, "ide[n]");
		if (ide)
			p->pfmt = ide->pfmt;
	}
	/* any other hash-based named format (pve-qm-hostpci, pve-vm-cpu-conf,
	 * pve-qm-rng, ...) and any code format not in fmtdefs is not exported
	 * by apidata: such values are accepted */
}

/* Hardcoded hash formats that apidata names but does not inline. */
static const char extra_formats_json[] =
	"{\"pve-qm-ipconfig\":{"
	"\"ip\":{\"type\":\"string\",\"format\":\"pve-ipv4-config\",\"optional\":1},"
	"\"gw\":{\"type\":\"string\",\"format\":\"ipv4\",\"optional\":1,\"requires\":\"ip\"},"
	"\"ip6\":{\"type\":\"string\",\"format\":\"pve-ipv6-config\",\"optional\":1},"
	"\"gw6\":{\"type\":\"string\",\"format\":\"ipv6\",\"optional\":1,\"requires\":\"ip6\"}},"
	"\"pve-qm-boot\":{"
	"\"legacy\":{\"type\":\"string\",\"optional\":1,\"default_key\":1,\"pattern\":\"[acdn]{1,4}\"},"
	"\"order\":{\"type\":\"string\",\"optional\":1,\"format\":\"pve-qm-bootdev-list\"}}}";

/* PVE::Tools $IPV4RE / $IPV6RE */
#define IPV4OCTET "(?:25[0-5]|(?:2[0-4]|1[0-9]|[1-9])?[0-9])"
#define IPV4RE "(?:(?:" IPV4OCTET "\\.){3}" IPV4OCTET ")"
#define H16 "(?:[0-9a-fA-F]{1,4})"
#define LS32 "(?:(?:" IPV4RE "|" H16 ":" H16 "))"
#define IPV6RE "(?:" \
	"(?:(?:(?:" H16 ":){6})" LS32 ")|" \
	"(?:(?:::(?:" H16 ":){5})" LS32 ")|" \
	"(?:(?:(?:" H16 ")?::(?:" H16 ":){4})" LS32 ")|" \
	"(?:(?:(?:(?:" H16 ":){0,1}" H16 ")?::(?:" H16 ":){3})" LS32 ")|" \
	"(?:(?:(?:(?:" H16 ":){0,2}" H16 ")?::(?:" H16 ":){2})" LS32 ")|" \
	"(?:(?:(?:(?:" H16 ":){0,3}" H16 ")?::(?:" H16 ":){1})" LS32 ")|" \
	"(?:(?:(?:(?:" H16 ":){0,4}" H16 ")?::)" LS32 ")|" \
	"(?:(?:(?:(?:" H16 ":){0,5}" H16 ")?::)" H16 ")|" \
	"(?:(?:(?:(?:" H16 ":){0,6}" H16 ")?::)))"
#define EMAIL_USER_RE "[\\w\\+\\-\\~]+(\\.[\\w\\+\\-\\~]+)*"
#define EMAIL_RE EMAIL_USER_RE "@[a-zA-Z0-9\\-]+(\\.[a-zA-Z0-9\\-]+)*"
#define DNS_LABEL "([a-zA-Z0-9]([a-zA-Z0-9\\-]*[a-zA-Z0-9])?)"

static int builtin_rx(struct schema *s)
{
	static const char *const src[RX_N] = {
		[RX_IPV4] = "^(?:" IPV4RE ")$",
		[RX_IPV6] = "^(?:" IPV6RE ")$",
		[RX_IP] = "^(?:(?:" IPV4RE ")|(?:" IPV6RE "))$",
		[RX_CIDRV4] = "^(?:" IPV4RE ")(?:/(\\d+))$",
		[RX_CIDRV6] = "^(?:" IPV6RE ")(?:/(\\d+))$",
		[RX_EMAIL] = "^" EMAIL_RE "$",
		[RX_EMAIL_USER] = "^" EMAIL_USER_RE "$",
		[RX_DNS] = "^(" DNS_LABEL "\\.)*" DNS_LABEL "$",
	};
	for (int i = 0; i < RX_N; i++) {
		s->brx[i] = get_rx(s, src[i], 0);
		if (!s->brx[i])
			return -1;
	}
	return 0;
}

static void pnode_free(struct pnode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nkids; i++)
		pnode_free(n->kids[i]);
	free(n->kids);
	free(n->seg);
	free(n->var);
	free(n);
}

static struct pnode *pnode_child(struct pnode *n, const char *seg, size_t len)
{
	int is_var = len >= 2 && seg[0] == '{' && seg[len - 1] == '}';
	for (size_t i = 0; i < n->nkids; i++) {
		struct pnode *k = n->kids[i];
		if (is_var && k->var && strlen(k->var) == len - 2 &&
		    strncmp(k->var, seg + 1, len - 2) == 0)
			return k;
		if (!is_var && k->seg && strlen(k->seg) == len && strncmp(k->seg, seg, len) == 0)
			return k;
	}
	struct pnode *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	if (is_var)
		k->var = strndup(seg + 1, len - 2);
	else
		k->seg = strndup(seg, len);
	struct pnode **nk = realloc(n->kids, (n->nkids + 1) * sizeof(struct pnode *));
	if ((is_var ? !k->var : !k->seg) || !nk) {
		if (nk)
			n->kids = nk;
		pnode_free(k);
		return NULL;
	}
	n->kids = nk;
	/* literal children first, so lookups try them before placeholders */
	if (is_var) {
		n->kids[n->nkids++] = k;
	} else {
		size_t pos = 0;
		while (pos < n->nkids && n->kids[pos]->seg)
			pos++;
		memmove(&n->kids[pos + 1], &n->kids[pos], (n->nkids - pos) * sizeof(struct pnode *));
		n->kids[pos] = k;
		n->nkids++;
	}
	return k;
}

static int method_index(const char *m)
{
	if (strcmp(m, "GET") == 0)
		return 0;
	if (strcmp(m, "POST") == 0)
		return 1;
	if (strcmp(m, "PUT") == 0)
		return 2;
	if (strcmp(m, "DELETE") == 0)
		return 3;
	return -1;
}

static int add_node(struct schema *s, json_object *node, char **err, int depth)
{
	if (!json_object_is_type(node, json_type_object) || depth > 64)
		return 0;
	const char *path = jstr(node, "path");
	json_object *info, *kids;
	if (path && json_object_object_get_ex(node, "info", &info) &&
	    json_object_is_type(info, json_type_object)) {
		struct pnode *pn = s->tree;
		for (const char *p = path; *p;) {
			while (*p == '/')
				p++;
			size_t len = strcspn(p, "/");
			if (len == 0)
				break;
			pn = pnode_child(pn, p, len);
			if (!pn)
				goto oom;
			p += len;
		}
		json_object_object_foreach(info, mname, mdef) {
			int mi = method_index(mname);
			if (mi < 0 || !json_object_is_type(mdef, json_type_object) || pn->m[mi])
				continue;
			struct schema_method *m = calloc(1, sizeof(*m));
			struct schema_method **nm = realloc(s->methods, (s->nmethods + 1) * sizeof(struct schema_method *));
			if (nm)
				s->methods = nm;
			if (!m || !nm) {
				free(m);
				goto oom;
			}
			s->methods[s->nmethods++] = m;
			m->s = s;
			m->http = mname;
			m->path = path;
			m->name = jstr(mdef, "name");
			if (!m->name)
				m->name = "";
			json_object *params, *props, *addl;
			if (json_object_object_get_ex(mdef, "parameters", &params) &&
			    json_object_is_type(params, json_type_object)) {
				m->has_params = 1;
				if (json_object_object_get_ex(params, "additionalProperties", &addl)) {
					m->params.addl_given = 1;
					m->params.addl = jtrue(addl);
				}
				if (json_object_object_get_ex(params, "properties", &props) &&
				    json_object_is_type(props, json_type_object)) {
					if (pset_build(s, &m->params, props, 0) != 0)
						goto oom;
				}
			}
			pn->m[mi] = m;
		}
	}
	if (json_object_object_get_ex(node, "children", &kids) &&
	    json_object_is_type(kids, json_type_array)) {
		size_t n = json_object_array_length(kids);
		for (size_t i = 0; i < n; i++)
			if (add_node(s, json_object_array_get_idx(kids, i), err, depth + 1) != 0)
				return -1;
	}
	return 0;
oom:
	if (!*err)
		*err = strdup("out of memory");
	return -1;
}

void schema_free(struct schema *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmethods; i++) {
		pset_free(&s->methods[i]->params);
		free(s->methods[i]);
	}
	free(s->methods);
	pnode_free(s->tree);
	if (s->ipconfig_fmt) {
		pset_free(s->ipconfig_fmt);
		free(s->ipconfig_fmt);
	}
	if (s->boot_fmt) {
		pset_free(s->boot_fmt);
		free(s->boot_fmt);
	}
	for (struct rx *r = s->rxs; r;) {
		struct rx *next = r->next;
		pcre2_code_free(atomic_load(&r->code));
		free(r->src);
		free(r);
		r = next;
	}
	json_object_put(s->extra_json);
	json_object_put(s->root);
	free(s);
}

/* Find the JSON array in the file text: the plain array, or the text
 * between "... = " and the final "];" of apidata.js. */
static int locate_array(const char *text, size_t len, size_t *start, size_t *end)
{
	size_t i = 0;
	while (i < len && isspace((unsigned char)text[i]))
		i++;
	if (i < len && text[i] != '[') {
		const char *eq = memchr(text + i, '=', len - i);
		if (!eq)
			return -1;
		i = (size_t)(eq - text) + 1;
		while (i < len && text[i] != '[')
			i++;
	}
	if (i >= len)
		return -1;
	size_t j = len;
	while (j > i && text[j - 1] != ']')
		j--;
	if (j <= i)
		return -1;
	*start = i;
	*end = j;
	return 0;
}

static int detect_legacy(const struct schema *s)
{
	/* PVE 2.x/3.x registered pve-vmid with minimum 1 (4.x+: 100) */
	for (size_t i = 0; i < s->nmethods; i++) {
		const struct pset *ps = &s->methods[i]->params;
		for (size_t j = 0; j < ps->n; j++) {
			const struct prop *p = &ps->v[j];
			if (p->format_name && strcmp(p->format_name, "pve-vmid") == 0 && p->has_min)
				return p->min < 100;
		}
	}
	return 0;
}

/* The PVE major version the file describes, for what the schema does not
 * spell out (the privilege names of pve-priv): 3 for the 2.x/3.x rules, 9
 * where HA rules exist (/cluster/ha/rules, new in 9.0), else 8. */
static int detect_major(const struct schema *s)
{
	if (s->legacy)
		return 3;
	return schema_has_path(s, "/cluster/ha/rules") ? 9 : 8;
}

int schema_pve_major(const struct schema *s)
{
	return s->major;
}

struct schema *schema_load(const char *path, char **err)
{
	char *text = NULL;
	size_t len = 0;
	struct schema *s = NULL;
	json_tokener *tok = NULL;

	*err = NULL;
	if (read_file(path, &text, &len) != 0) {
		*err = strprintf("%s: %s", path, strerror(errno));
		return NULL;
	}
	size_t a, b;
	if (locate_array(text, len, &a, &b) != 0) {
		*err = strprintf("%s: no JSON array found", path);
		goto fail;
	}
	s = calloc(1, sizeof(*s));
	tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	if (!s || !tok)
		goto oom;
	s->root = json_tokener_parse_ex(tok, text + a, (int)(b - a));
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	if (!s->root || jerr != json_tokener_success) {
		*err = strprintf("%s: invalid JSON at offset %zu: %s", path,
				 a + json_tokener_get_parse_end(tok),
				 json_tokener_error_desc(jerr));
		goto fail;
	}
	if (!json_object_is_type(s->root, json_type_array)) {
		*err = strprintf("%s: not a JSON array", path);
		goto fail;
	}
	json_tokener_free(tok);
	tok = NULL;
	free(text);
	text = NULL;

	s->tree = calloc(1, sizeof(*s->tree));
	if (!s->tree || builtin_rx(s) != 0)
		goto oom;
	s->extra_json = json_tokener_parse(extra_formats_json);
	json_object *fj;
	if (!s->extra_json)
		goto oom;
	s->ipconfig_fmt = calloc(1, sizeof(*s->ipconfig_fmt));
	s->boot_fmt = calloc(1, sizeof(*s->boot_fmt));
	if (!s->ipconfig_fmt || !s->boot_fmt)
		goto oom;
	if (!json_object_object_get_ex(s->extra_json, "pve-qm-ipconfig", &fj) ||
	    pset_build(s, s->ipconfig_fmt, fj, 1) != 0)
		goto oom;
	if (!json_object_object_get_ex(s->extra_json, "pve-qm-boot", &fj) ||
	    pset_build(s, s->boot_fmt, fj, 1) != 0)
		goto oom;
	resolve_formats(s, s->ipconfig_fmt);
	resolve_formats(s, s->boot_fmt);

	size_t n = json_object_array_length(s->root);
	for (size_t i = 0; i < n; i++)
		if (add_node(s, json_object_array_get_idx(s->root, i), err, 0) != 0)
			goto fail;
	for (size_t i = 0; i < s->nmethods; i++)
		resolve_formats(s, &s->methods[i]->params);
	s->legacy = detect_legacy(s);
	s->major = detect_major(s);
	return s;
oom:
	if (!*err)
		*err = strprintf("%s: out of memory", path);
fail:
	if (!*err)
		*err = strdup("schema load failed");
	json_tokener_free(tok);
	free(text);
	schema_free(s);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* route lookup                                                        */

static char *pct_decode(const char *s, size_t len)
{
	char *out = malloc(len + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '%' && i + 2 < len && isxdigit((unsigned char)s[i + 1]) && isxdigit((unsigned char)s[i + 2])) {
			char hex[3] = {s[i + 1], s[i + 2], 0};
			out[o++] = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
	return out;
}

struct seg { const char *p; size_t len; };

static const struct pnode *walk(const struct pnode *n, const struct seg *segs, size_t nseg,
				const struct pnode **trail)
{
	if (nseg == 0)
		return n;
	for (size_t i = 0; i < n->nkids; i++) {
		const struct pnode *k = n->kids[i];
		if (k->seg && (strlen(k->seg) != segs[0].len ||
			       strncmp(k->seg, segs[0].p, segs[0].len) != 0))
			continue;
		trail[0] = k;
		const struct pnode *r = walk(k, segs + 1, nseg - 1, trail + 1);
		if (r)
			return r;
	}
	return NULL;
}

/* Split a path into segments; query string cut off. NULL on oom. */
static const struct pnode *lookup(const struct schema *s, const char *path,
				  struct seg **segs_out, size_t *nseg_out,
				  const struct pnode ***trail_out)
{
	size_t cap = 8, n = 0;
	struct seg *segs = malloc(cap * sizeof(*segs));
	*segs_out = NULL;
	*trail_out = NULL;
	*nseg_out = 0;
	if (!segs)
		return NULL;
	/* tolerate the full API path as well */
	if (strncmp(path, "/api2/json/", 11) == 0)
		path += 10;
	size_t plen = strcspn(path, "?");
	for (size_t i = 0; i < plen;) {
		while (i < plen && path[i] == '/')
			i++;
		size_t l = 0;
		while (i + l < plen && path[i + l] != '/')
			l++;
		if (l == 0)
			break;
		if (n == cap) {
			cap *= 2;
			struct seg *ns = realloc(segs, cap * sizeof(*segs));
			if (!ns) {
				free(segs);
				return NULL;
			}
			segs = ns;
		}
		segs[n].p = path + i;
		segs[n].len = l;
		n++;
		i += l;
	}
	/* Content.pm is mounted with fragmentDelimiter '' (API2/Storage/Status.pm):
	 * the rest of the path, '/' and all, is the one {volume} */
	if (n > 6 && segs[0].len == 5 && strncmp(segs[0].p, "nodes", 5) == 0 &&
	    segs[2].len == 7 && strncmp(segs[2].p, "storage", 7) == 0 && segs[4].len == 7 &&
	    strncmp(segs[4].p, "content", 7) == 0) {
		segs[5].len = (size_t)(segs[n - 1].p + segs[n - 1].len - segs[5].p);
		n = 6;
	}
	const struct pnode **trail = calloc(n + 1, sizeof(struct pnode *));
	if (!trail) {
		free(segs);
		return NULL;
	}
	const struct pnode *r = walk(s->tree, segs, n, trail);
	*segs_out = segs;
	*nseg_out = n;
	*trail_out = trail;
	return r;
}

const struct schema_method *schema_find(const struct schema *s, const char *method,
					const char *path, json_object **path_params)
{
	if (path_params)
		*path_params = NULL;
	if (!s || !method || !path)
		return NULL;
	int mi = method_index(method);
	if (mi < 0)
		return NULL;
	struct seg *segs;
	size_t nseg;
	const struct pnode **trail;
	const struct pnode *n = lookup(s, path, &segs, &nseg, &trail);
	const struct schema_method *m = n ? n->m[mi] : NULL;
	if (m && path_params) {
		json_object *pp = json_object_new_object();
		for (size_t i = 0; pp && i < nseg; i++) {
			if (!trail[i]->var)
				continue;
			char *v = pct_decode(segs[i].p, segs[i].len);
			json_object *js = v ? json_object_new_string(v) : NULL;
			free(v);
			if (!js || json_object_object_add(pp, trail[i]->var, js) != 0) {
				json_object_put(js);
				json_object_put(pp);
				pp = NULL;
			}
		}
		if (!pp)
			m = NULL; /* out of memory */
		*path_params = pp;
	}
	free(segs);
	free(trail);
	return m;
}

int schema_has_path(const struct schema *s, const char *path)
{
	if (!s || !path)
		return 0;
	struct seg *segs;
	size_t nseg;
	const struct pnode **trail;
	const struct pnode *n = lookup(s, path, &segs, &nseg, &trail);
	free(segs);
	free(trail);
	return n != NULL && (n->m[0] || n->m[1] || n->m[2] || n->m[3]);
}

const char *schema_method_name(const struct schema_method *m)
{
	return m ? m->name : NULL;
}

const char *schema_method_path(const struct schema_method *m)
{
	return m ? m->path : NULL;
}

int schema_is_legacy(const struct schema *s)
{
	return s ? s->legacy : 0;
}

int schema_precompile(const struct schema *s)
{
	int bad = 0;
	if (!s)
		return -1;
	for (struct rx *r = s->rxs; r; r = r->next)
		if (!rx_code(r))
			bad++;
	return bad;
}

/* ------------------------------------------------------------------ */
/* validation                                                          */

/* A value to check: a JSON value, or a plain string (property-string
 * values, list elements). */
struct val {
	json_object *j;   /* NULL: use str */
	const char *str;  /* NULL with j NULL: undefined */
};

static void check_prop(struct ctx *c, struct val v, const struct prop *p, const char *path);

static const char *perl_scalar(json_object *j, char *buf, size_t n)
{
	switch (json_object_get_type(j)) {
	case json_type_int:
		snprintf(buf, n, "%lld", (long long)json_object_get_int64(j));
		return buf;
	case json_type_double: {
		double d = json_object_get_double(j);
		if (isinf(d))
			return d > 0 ? "Inf" : "-Inf";
		if (isnan(d))
			return "NaN";
		snprintf(buf, n, "%.15g", d);
		return buf;
	}
	default:
		return json_object_get_string(j);
	}
}

struct kv {
	const char *k;
	char *v;
};

static struct kv *kv_get(struct kv *res, size_t n, const char *k)
{
	for (size_t i = 0; i < n; i++)
		if (res[i].k && strcmp(res[i].k, k) == 0)
			return &res[i];
	return NULL;
}

/* /^([^=]+)=(.+)$/ on one part: splits it in place. */
static int kv_split(char *part, char **k, char **v)
{
	char *eq = strchr(part, '=');
	if (!eq || eq == part)
		return 0;
	char *val = eq + 1;
	size_t vl = strlen(val);
	if (vl && val[vl - 1] == '\n')
		vl--; /* Perl's $ matches before a final newline */
	if (vl == 0 || memchr(val, '\n', vl))
		return 0;
	*eq = '\0';
	val[vl] = '\0';
	*k = part;
	*v = val;
	return 1;
}

/* parse_property_string + check_object: NULL if fine, else the die text. */
static char *parse_property_string(struct ctx *c, const struct pset *fmt, const char *data,
				   const char *path)
{
	struct kv *res = NULL;
	size_t nres = 0;
	char *msg = NULL;
	const char *default_key = NULL;
	size_t cnt = 1;
	for (const char *q = data; *q; q++)
		cnt += *q == ',';
	res = calloc(cnt * 2, sizeof(*res)); /* keyAlias adds one more per part */
	if (!res) {
		c->er->oom = 1;
		return NULL;
	}
#define RES_GET(key) kv_get(res, nres, (key))

	const char *p = data;
	while (!msg && !c->er->oom) {
		size_t plen = strcspn(p, ",");
		char *part = strndup(p, plen);
		if (!part) {
			c->er->oom = 1;
			break;
		}
		int blank = 1;
		for (size_t i = 0; i < plen; i++)
			if (!isspace((unsigned char)part[i]))
				blank = 0;
		char *k = NULL, *v = NULL;
		if (blank) {
			/* next if $part =~ /^\s*$/ */
		} else if (kv_split(part, &k, &v)) {
			const struct prop *sp = pset_get(fmt, k);
			if (RES_GET(k)) {
				msg = die(c, "duplicate key in comma-separated list property: %s\n", k);
			} else {
				const char *key = k;
				if (sp && sp->alias) {
					if (sp->key_alias) {
						if (RES_GET(sp->key_alias)) {
							msg = die(c, "key alias '%s' is already defined\n",
								  sp->key_alias);
						} else {
							res[nres].k = sp->key_alias;
							res[nres].v = strdup(k);
							if (!res[nres].v)
								c->er->oom = 1;
							else
								nres++;
						}
					}
					key = sp->alias;
					sp = pset_get(fmt, key);
				}
				if (!msg && !c->er->oom) {
					if (!sp) {
						msg = die(c, "invalid key in comma-separated list property: %s\n", key);
					} else {
						const char *nv = v;
						if (sp->type == T_BOOLEAN) {
							if (!strcasecmp(v, "1") || !strcasecmp(v, "on") ||
							    !strcasecmp(v, "yes") || !strcasecmp(v, "true"))
								nv = "1";
							else if (!strcasecmp(v, "0") || !strcasecmp(v, "off") ||
								 !strcasecmp(v, "no") || !strcasecmp(v, "false"))
								nv = "0";
						}
						struct kv *ex = RES_GET(sp->name);
						char *dup = strdup(nv);
						if (!dup) {
							c->er->oom = 1;
						} else if (ex) {
							/* alias target already set: overwritten */
							free(ex->v);
							ex->v = dup;
						} else {
							res[nres].k = sp->name;
							res[nres].v = dup;
							nres++;
						}
					}
				}
			}
		} else if (!strchr(part, '=')) {
			if (default_key) {
				msg = die(c, "duplicate key in comma-separated list property: %s\n",
					  default_key);
			} else {
				for (size_t i = 0; i < fmt->n; i++) {
					if (!fmt->v[i].default_key)
						continue;
					default_key = fmt->v[i].name;
					struct kv *ex = RES_GET(default_key);
					/* if (!$res->{$default_key}): "" and "0" count as unset */
					if (!ex || !ex->v[0] || strcmp(ex->v, "0") == 0) {
						char *dup = strdup(part);
						if (!dup) {
							c->er->oom = 1;
						} else if (ex) {
							free(ex->v);
							ex->v = dup;
						} else {
							res[nres].k = default_key;
							res[nres].v = dup;
							nres++;
						}
					} else {
						msg = die(c, "duplicate key in comma-separated list property: %s\n",
							  default_key);
					}
					break;
				}
				if (!default_key && !msg)
					msg = die(c, "value without key, but schema does not define a default key\n");
			}
		} else {
			msg = die(c, "missing key in comma-separated list property\n");
		}
		free(part);
		p += plen;
		if (!*p)
			break;
		p++;
	}

	if (!msg && !c->er->oom) {
		/* check_object($path, $format, $res, 0, $errors) */
		struct errs sub = {0};
		struct ctx sc = {.s = c->s, .er = &sub};
		for (size_t i = 0; i < fmt->n && !sub.oom; i++) {
			const struct prop *sp = &fmt->v[i];
			struct kv *e = RES_GET(sp->name);
			if (!e && (sp->optional || sp->alias) && sp->type != T_NULL)
				continue; /* nothing to check (fast path) */
			char *kp = strprintf("%s.%s", path, sp->name);
			if (!kp) {
				sub.oom = 1;
				break;
			}
			check_prop(&sc, (struct val){.str = e ? e->v : NULL}, sp, kp);
			free(kp);
		}
		for (size_t i = 0; i < nres && !sub.oom; i++) {
			const struct prop *sp = pset_get(fmt, res[i].k);
			if (!sp) {
				char *kp = strprintf("%s.%s", path, res[i].k);
				add_error(&sub, kp,
					  "property is not defined in schema and the schema does not allow additional properties");
				free(kp);
				continue;
			}
			if (sp->requires && !RES_GET(sp->requires)) {
				char *kp = strprintf("%s.%s", path, sp->requires);
				char *m = strprintf("missing property - '%s.%s' %s this property", path,
						    res[i].k, c->s->legacy ? "requiers" : "requires");
				if (kp && m)
					add_error(&sub, kp, m);
				else
					sub.oom = 1;
				free(kp);
				free(m);
			}
		}
		if (sub.oom) {
			c->er->oom = 1;
		} else if (sub.n) {
			/* raise "format error\n", errors => ...; stringified */
			struct sbuf b = {0};
			int rc = sbuf_add(&b, "format error\n");
			for (size_t i = 0; i < sub.n && rc == 0; i++)
				rc = sbuf_addf(&b, "%s: %s\n", sub.e[i].path, sub.e[i].msg);
			if (rc != 0) {
				sbuf_free(&b);
				c->er->oom = 1;
			} else {
				msg = sbuf_steal(&b);
			}
		}
		errs_free(&sub);
	}
#undef RES_GET
	for (size_t i = 0; i < nres; i++)
		free(res[i].v);
	free(res);
	return msg;
}

/* check_format: NULL if valid, else the die text. */
static char *check_format(struct ctx *c, const struct prop *p, const char *value, const char *path)
{
	if (p->pfmt)
		return parse_property_string(c, p->pfmt, value, path);
	if (!p->format_name || strcmp(p->format_name, "regex") == 0 || !p->named)
		return NULL; /* unknown/unexported named format: accepted */
	const char *f = p->format_name;
	size_t fl = strlen(f);
	if (fl > 5 && strcmp(f + fl - 5, "-list") == 0) {
		char **items;
		size_t n;
		if (split_list(value, &items, &n) != 0) {
			c->er->oom = 1;
			return NULL;
		}
		char *msg = NULL;
		for (size_t i = 0; i < n; i++) {
			if (!msg)
				msg = p->named->fn(c, items[i]);
			free(items[i]);
		}
		free(items);
		return msg;
	}
	if (fl > 4 && strcmp(f + fl - 4, "-opt") == 0) {
		if (!value[0] || strcmp(value, "0") == 0)
			return NULL;
	}
	return p->named->fn(c, value);
}

static void check_scalar(struct ctx *c, const char *value, const struct prop *p, const char *path)
{
	if (p->format_name || p->pfmt) {
		char *m = check_format(c, p, value, path);
		if (m) {
			add_errorf(c->er, path, "invalid format - %s", m);
			free(m);
			return;
		}
		if (c->er->oom)
			return;
	}
	if (p->pattern) {
		int r = rx_match(p->pattern, value, strlen(value));
		if (r < 0) {
			c->er->oom = 1;
			return;
		}
		if (!r) {
			add_error(c->er, path, "value does not match the regex pattern");
			return;
		}
	}
	if (p->has_maxlen && (long long)perl_length(value) > p->maxlen) {
		add_errorf(c->er, path, "value may only be %lld characters long", p->maxlen);
		return;
	}
	if (p->has_minlen && (long long)perl_length(value) < p->minlen) {
		add_errorf(c->er, path, "value must be at least %lld characters long", p->minlen);
		return;
	}
	if ((p->has_max || p->has_min) && is_number(value)) {
		double d = strtod(value, NULL);
		if (p->has_max && d > p->max) {
			add_errorf(c->er, path, "value must have a maximum value of %s", p->max_txt);
			return;
		}
		if (p->has_min && d < p->min) {
			add_errorf(c->er, path, "value must have a minimum value of %s", p->min_txt);
			return;
		}
	}
	if (p->enumv) {
		for (size_t i = 0; i < p->nenum; i++)
			if (strcmp(p->enumv[i], value) == 0)
				return;
		add_errorf(c->er, path, "value '%s' does not have a value in the enumeration '%s'",
			   value, p->enum_joined);
	}
}

static void check_prop(struct ctx *c, struct val v, const struct prop *p, const char *path)
{
	if (c->er->oom)
		return;
	int undef = v.j ? json_object_is_type(v.j, json_type_null) : v.str == NULL;
	if (undef) {
		if (p->type == T_NULL)
			return;
		if (!p->optional && !(p->alias && !c->s->legacy))
			add_error(c->er, path, "property is missing and it is not optional");
		return;
	}

	char numbuf[64];
	const char *str = v.str;
	const char *ref = NULL; /* Perl ref() of the value */
	json_object *j = v.j;
	if (j) {
		switch (json_object_get_type(j)) {
		case json_type_boolean: ref = "JSON::PP::Boolean"; break;
		case json_type_array: ref = "ARRAY"; break;
		case json_type_object: ref = "HASH"; break;
		default: str = perl_scalar(j, numbuf, sizeof(numbuf)); break;
		}
	}
	/* the HTTP layer turns a single form value for an array parameter
	 * into a one-element list */
	if (p->type == T_ARRAY && !ref) {
		if (p->items) {
			char *ip = strprintf("%s[0]", path);
			if (!ip) {
				c->er->oom = 1;
				return;
			}
			check_prop(c, (struct val){.str = str}, p->items, ip);
			free(ip);
		}
		return;
	}

	/* check_type */
	switch (p->type) {
	case T_NONE: case T_ANY: case T_OTHER:
		break;
	case T_NULL:
		add_errorf(c->er, path, "type check ('%s') failed - value is not null", p->type_name);
		return;
	case T_ARRAY:
		if (strcmp(ref, "ARRAY") != 0) {
			add_errorf(c->er, path, "type check ('%s') failed", p->type_name);
			return;
		}
		break;
	case T_OBJECT:
		if (!ref || strcmp(ref, "HASH") != 0) {
			add_errorf(c->er, path, "type check ('%s') failed", p->type_name);
			return;
		}
		break;
	default:
		if (ref) {
			if (p->type == T_BOOLEAN && strcmp(ref, "JSON::PP::Boolean") == 0)
				break;
			add_errorf(c->er, path, "type check ('%s') failed - got %s", p->type_name, ref);
			return;
		}
		if (p->type == T_BOOLEAN) {
			if (strcmp(str, "1") == 0)
				break;
			if (strcmp(str, "0") == 0) {
				if (c->s->legacy)
					return; /* 3.x check_type returned 0: checks end */
				break;
			}
			add_errorf(c->er, path, "type check ('%s') failed - got '%s'", p->type_name, str);
			return;
		}
		if (p->type == T_INTEGER && !is_integer(str)) {
			add_errorf(c->er, path, "type check ('%s') failed - got '%s'", p->type_name, str);
			return;
		}
		if (p->type == T_NUMBER && !is_number(str)) {
			add_errorf(c->er, path, "type check ('%s') failed - got '%s'", p->type_name, str);
			return;
		}
		break;
	}

	if (ref) {
		if (strcmp(ref, "ARRAY") == 0 && p->items) {
			size_t n = json_object_array_length(j);
			for (size_t i = 0; i < n && !c->er->oom; i++) {
				char *ip = strprintf("%s[%zu]", path, i);
				if (!ip) {
					c->er->oom = 1;
					return;
				}
				check_prop(c, (struct val){.j = json_object_array_get_idx(j, i)},
					   p->items, ip);
				free(ip);
			}
		}
		/* nested objects: the request parameters in apidata carry no
		 * object schemas worth checking */
		return;
	}
	check_scalar(c, str, p, path);
}

/* The schema property for a request parameter: exact key, or an indexed
 * key "net[n]" for "net0" with the index in range. */
static const struct prop *param_prop(const struct pset *ps, const char *name)
{
	const struct prop *p = pset_get(ps, name);
	if (p)
		return p->base_len ? NULL : p; /* "net[n]" itself is no name */
	size_t nl = strlen(name), d = nl;
	while (d > 0 && isdigit((unsigned char)name[d - 1]))
		d--;
	if (d == 0 || d == nl || (name[d] == '0' && d + 1 < nl) || nl - d > 9)
		return NULL;
	char key[128];
	if (d + 4 > sizeof(key))
		return NULL; /* longer than any schema key */
	memcpy(key, name, d);
	memcpy(key + d, "[n]", 4);
	p = pset_get(ps, key);
	if (!p || !p->base_len)
		return NULL;
	long idx = strtol(name + d, NULL, 10);
	if (p->idx_max >= 0 && idx > p->idx_max)
		return NULL;
	return p;
}

static int errs_to_json(struct errs *er, json_object **errors)
{
	json_object *o = json_object_new_object();
	if (!o)
		return -1;
	for (size_t i = 0; i < er->n; i++) {
		json_object *m = json_object_new_string(er->e[i].msg);
		if (!m || json_object_object_add(o, er->e[i].path, m) != 0) {
			json_object_put(m);
			json_object_put(o);
			return -1;
		}
	}
	*errors = o;
	return 0;
}

int schema_check(const struct schema_method *m, json_object *params, json_object **errors)
{
	struct errs er = {0};
	struct ctx c = {.s = m->s, .er = &er};
	*errors = NULL;

	if (params && !json_object_is_type(params, json_type_object)) {
		add_error(&er, NULL, "an object is required");
	} else if (m->has_params) {
		const struct pset *ps = &m->params;
		/* every schema key: missing / value checks */
		for (size_t i = 0; i < ps->n && !er.oom; i++) {
			const struct prop *p = &ps->v[i];
			if (p->base_len)
				continue; /* indexed keys: checked per real name below */
			json_object *v = NULL;
			if (params)
				json_object_object_get_ex(params, p->name, &v);
			struct val val = {.j = v};
			if (!v)
				val.str = NULL;
			check_prop(&c, val, p, p->name);
		}
		/* every request key: indexed values, requires, unknown */
		if (params) {
			json_object_object_foreach(params, k, v) {
				if (er.oom)
					break;
				const struct prop *p = param_prop(ps, k);
				if (p) {
					if (p->base_len)
						check_prop(&c, (struct val){.j = v}, p, k);
					if (p->requires) {
						json_object *r = NULL;
						if (!json_object_object_get_ex(params, p->requires, &r) ||
						    json_object_is_type(r, json_type_null))
							add_errorf(&er, p->requires,
								   "missing property - '%s' %s this property", k,
								   m->s->legacy ? "requiers" : "requires");
					}
					continue;
				}
				if (ps->addl_given && !ps->addl)
					add_error(&er, k,
						  "property is not defined in schema and the schema does not allow additional properties");
			}
		}
	}
	if (er.oom) {
		errs_free(&er);
		return -1;
	}
	int n = (int)er.n;
	if (n > 0 && errs_to_json(&er, errors) != 0)
		n = -1;
	errs_free(&er);
	return n;
}

int schema_check_request(const struct schema_method *m, json_object *path_params,
			 json_object *params, json_object **errors)
{
	*errors = NULL;
	json_object *all = json_object_new_object(), *dup = NULL;
	if (!all)
		return -1;
	json_object *srcs[2] = {path_params, params};
	for (int s = 0; s < 2; s++) {
		if (!srcs[s] || !json_object_is_type(srcs[s], json_type_object))
			continue;
		json_object_object_foreach(srcs[s], k, v) {
			if (s == 1 && json_object_object_get_ex(all, k, NULL)) {
				/* PVE RESTHandler: a parameter may not repeat a URI
				 * placeholder */
				json_object *msg = json_object_new_string(
					"duplicate parameter (already defined in URI)");
				if (!dup)
					dup = json_object_new_object();
				if (!dup || !msg || json_object_object_add(dup, k, msg) != 0) {
					json_object_put(msg);
					goto oom;
				}
				continue;
			}
			if (json_object_object_add(all, k, json_object_get(v)) != 0) {
				json_object_put(v);
				goto oom;
			}
		}
	}
	if (dup) {
		json_object_put(all);
		*errors = dup;
		return json_object_object_length(dup);
	}
	int rc = schema_check(m, all, errors);
	json_object_put(all);
	return rc;
oom:
	json_object_put(dup);
	json_object_put(all);
	return -1;
}
