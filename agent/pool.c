/* pool.c - static address pools: definition, validation, address
 * arithmetic, address tags and the lowest free address (see pool.h). */
#include "pool.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int pool_ip_parse(const char *s, struct pool_ip *out)
{
	memset(out, 0, sizeof *out);
	if (!s || !*s)
		return -1;
	if (strchr(s, ':')) {
		if (inet_pton(AF_INET6, s, out->b) != 1)
			return -1;
		out->family = 6;
		return 0;
	}
	if (inet_pton(AF_INET, s, out->b) != 1)
		return -1;
	out->family = 4;
	return 0;
}

char *pool_ip_str(const struct pool_ip *a)
{
	char buf[INET6_ADDRSTRLEN];
	if (!inet_ntop(a->family == 6 ? AF_INET6 : AF_INET, a->b, buf, sizeof buf))
		return NULL;
	return strdup(buf);
}

static size_t ip_len(const struct pool_ip *a)
{
	return a->family == 6 ? 16 : 4;
}

int pool_ip_cmp(const struct pool_ip *a, const struct pool_ip *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->b, b->b, ip_len(a));
}

/* a + 1; returns -1 when it wraps past the family's last address. */
static int ip_next(struct pool_ip *a)
{
	for (size_t i = ip_len(a); i-- > 0;) {
		if (++a->b[i] != 0)
			return 0;
	}
	return -1;
}

static bool in_net(const struct pool_ip *net, unsigned prefix, const struct pool_ip *a)
{
	if (a->family != net->family)
		return false;
	for (unsigned bit = 0; bit < prefix; bit++) {
		unsigned char m = (unsigned char)(0x80u >> (bit % 8));
		if ((a->b[bit / 8] & m) != (net->b[bit / 8] & m))
			return false;
	}
	return true;
}

bool pool_in_range(const struct ip_pool *p, const struct pool_ip *a)
{
	return a->family == p->start.family && pool_ip_cmp(a, &p->start) >= 0 &&
	       pool_ip_cmp(a, &p->end) <= 0;
}

uint64_t pool_size(const struct ip_pool *p)
{
	size_t n = ip_len(&p->start);
	/* end - start + 1, saturating */
	unsigned char d[16] = {0};
	int borrow = 0;
	for (size_t i = n; i-- > 0;) {
		int v = (int)p->end.b[i] - (int)p->start.b[i] - borrow;
		borrow = v < 0;
		d[i] = (unsigned char)(v + (borrow ? 256 : 0));
	}
	for (size_t i = 0; i + 8 < n; i++)
		if (d[i])
			return UINT64_MAX;
	uint64_t v = 0;
	for (size_t i = n > 8 ? n - 8 : 0; i < n; i++)
		v = (v << 8) | d[i];
	return v == UINT64_MAX ? v : v + 1;
}

/* ---- loading ------------------------------------------------------------ */

struct lctx {
	const char *path;
	const struct ini_section *s;
	struct sbuf *errs;
	int n;
	int oom;
};

static void perr(struct lctx *x, int line, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void perr(struct lctx *x, int line, const char *key, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct sbuf m = {0};
	int rc = sbuf_vaddf(&m, fmt, ap);
	va_end(ap);
	char *msg = sbuf_steal(&m);
	if (rc < 0 || !msg || ini_errf(x->errs, x->path, line, x->s, key, "%s", msg) < 0)
		x->oom = 1;
	free(msg);
	sbuf_free(&m);
	x->n++;
}

static bool name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("._-", *s)))
			return false;
	return true;
}

static void load_cidr(struct lctx *x, const struct ini_entry *e, struct ip_pool *p)
{
	const char *slash = strchr(e->value, '/');
	char *addr = slash ? strndup(e->value, (size_t)(slash - e->value)) : NULL;
	char *end = NULL;
	long pre = slash ? strtol(slash + 1, &end, 10) : -1;
	if (slash && !addr) {
		x->oom = 1;
		return;
	}
	if (!slash || !slash[1] || *end || pool_ip_parse(addr, &p->net) < 0 || pre < 0 ||
	    pre > (p->net.family == 6 ? 128 : 32)) {
		perr(x, e->line, e->key,
		     "'%s': expected NETWORK/PREFIX (192.0.2.0/24, 2001:db8::/64)", e->value);
		free(addr);
		memset(&p->net, 0, sizeof p->net);
		return;
	}
	free(addr);
	p->prefix = (unsigned)pre;
	struct pool_ip masked = p->net;
	for (unsigned bit = p->prefix; bit < ip_len(&masked) * 8; bit++)
		masked.b[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
	if (pool_ip_cmp(&masked, &p->net) != 0) {
		char *m = pool_ip_str(&masked);
		perr(x, e->line, e->key, "'%s': host bits are set; the network is %s/%u", e->value,
		     m ? m : "?", p->prefix);
		free(m);
		memset(&p->net, 0, sizeof p->net);
	}
}

/* An address of the pool's family inside its cidr. 0, or -1 (reported). */
static int load_addr(struct lctx *x, const struct ini_entry *e, const char *text,
		     const struct ip_pool *p, struct pool_ip *out)
{
	if (pool_ip_parse(text, out) < 0) {
		perr(x, e->line, e->key, "'%s' is not an IPv4 or IPv6 address", text);
		return -1;
	}
	if (p->net.family && !in_net(&p->net, p->prefix, out)) {
		char *n = pool_ip_str(&p->net);
		perr(x, e->line, e->key, "%s lies outside the cidr %s/%u", text, n ? n : "?",
		     p->prefix);
		free(n);
		return -1;
	}
	return 0;
}

static void load_range(struct lctx *x, const struct ini_entry *e, struct ip_pool *p)
{
	const char *dash = strchr(e->value, '-');
	if (!dash) {
		perr(x, e->line, e->key, "'%s': expected START-END (192.0.2.100-192.0.2.199)",
		     e->value);
		return;
	}
	char *a = strndup(e->value, (size_t)(dash - e->value));
	if (!a) {
		x->oom = 1;
		return;
	}
	int ok = load_addr(x, e, a, p, &p->start) == 0 &&
		 load_addr(x, e, dash + 1, p, &p->end) == 0;
	free(a);
	if (ok && pool_ip_cmp(&p->start, &p->end) > 0) {
		perr(x, e->line, e->key, "'%s': the start comes after the end", e->value);
		ok = 0;
	}
	if (ok && p->net.family == 4 && p->prefix <= 30) {
		struct pool_ip bc = p->net;
		for (unsigned bit = p->prefix; bit < 32; bit++)
			bc.b[bit / 8] |= (unsigned char)(0x80u >> (bit % 8));
		if (pool_in_range(p, &p->net) || pool_in_range(p, &bc)) {
			perr(x, e->line, e->key,
			     "'%s' includes the network or the broadcast address of the cidr",
			     e->value);
			ok = 0;
		}
	}
	if (!ok) {
		memset(&p->start, 0, sizeof p->start);
		memset(&p->end, 0, sizeof p->end);
	}
}

int pool_load(const char *path, const struct ini_section *s, struct ip_pool *out,
	      struct sbuf *errs)
{
	struct lctx x = {path, s, errs, 0, 0};
	memset(out, 0, sizeof *out);
	out->line = s->line;
	out->name = strdup(s->label ? s->label : "");
	if (!out->name)
		return -1;
	if (!name_ok(out->name))
		perr(&x, s->line, NULL, "pool names use letters, digits, '.', '_' and '-'");
	const struct ini_entry *e = ini_get(s, "cidr");
	if (e)
		load_cidr(&x, e, out);
	if (out->net.family && (e = ini_get(s, "gateway"))) {
		if (load_addr(&x, e, e->value, out, &out->gateway) < 0)
			memset(&out->gateway, 0, sizeof out->gateway);
	}
	if (out->net.family && (e = ini_get(s, "range")))
		load_range(&x, e, out);
	if (out->gateway.family && out->start.family && pool_in_range(out, &out->gateway)) {
		e = ini_get(s, "gateway");
		perr(&x, e->line, e->key, "%s lies inside the range: it would be handed out",
		     e->value);
	}
	if ((e = ini_get(s, "dns"))) {
		struct sbuf d = {0};
		char *copy = strdup(e->value);
		if (!copy)
			x.oom = 1;
		for (char *save = NULL, *t = copy ? strtok_r(copy, " ,", &save) : NULL; t;
		     t = strtok_r(NULL, " ,", &save)) {
			struct pool_ip ip = {0};
			if (pool_ip_parse(t, &ip) < 0)
				perr(&x, e->line, e->key, "'%s' is not an IPv4 or IPv6 address", t);
			else if ((d.len && sbuf_add(&d, " ") < 0) || sbuf_add(&d, t) < 0)
				x.oom = 1;
		}
		free(copy);
		if (!d.len)
			perr(&x, e->line, e->key, "expected one or more addresses");
		out->dns = sbuf_steal(&d);
		sbuf_free(&d);
	}
	if ((e = ini_get(s, "searchdomain"))) {
		bool ok = *e->value != 0;
		for (const char *c = e->value; *c; c++)
			ok = ok && ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
				    (*c >= '0' && *c <= '9') || *c == '.' || *c == '-');
		if (!ok)
			perr(&x, e->line, e->key, "'%s' is not a DNS domain", e->value);
		else if (!(out->searchdomain = strdup(e->value)))
			x.oom = 1;
	}
	return x.oom ? -1 : x.n;
}

int pool_check_overlaps(const char *path, const struct ini *ini, const struct ip_pool *p,
			size_t n, struct sbuf *errs)
{
	int found = 0;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < i; k++) {
			if (!p[i].start.family || p[i].start.family != p[k].start.family ||
			    pool_ip_cmp(&p[i].start, &p[k].end) > 0 ||
			    pool_ip_cmp(&p[k].start, &p[i].end) > 0)
				continue;
			const struct ini_section *s = ini_find(ini, "pool", p[i].name);
			const struct ini_entry *e = s ? ini_get(s, "range") : NULL;
			if (ini_errf(errs, path, e ? e->line : p[i].line, s, "range",
				     "overlaps the range of [pool \"%s\"] (line %d)", p[k].name,
				     p[k].line) < 0)
				return -1;
			found++;
		}
	}
	return found;
}

void pool_free(struct ip_pool *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->dns);
	free(p->searchdomain);
	memset(p, 0, sizeof *p);
}

/* ---- tags ---------------------------------------------------------------- */

#define TAG_PREFIX "ip-"

char *pool_tag(const struct pool_ip *a)
{
	char *s = pool_ip_str(a);
	if (!s)
		return NULL;
	for (char *c = s; *c; c++)
		if (*c == ':')
			*c = '-';
	char *t = strprintf(TAG_PREFIX "%s", s);
	free(s);
	return t;
}

int pool_tag_parse(const char *tag, struct pool_ip *out)
{
	if (strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) != 0)
		return -1;
	const char *v = tag + strlen(TAG_PREFIX);
	char buf[64];
	size_t n = strlen(v);
	if (n == 0 || n >= sizeof buf)
		return -1;
	memcpy(buf, v, n + 1);
	if (pool_ip_parse(buf, out) == 0 && out->family == 4)
		return 0;
	for (char *c = buf; *c; c++)
		if (*c == '-')
			*c = ':';
	return pool_ip_parse(buf, out) == 0 && out->family == 6 ? 0 : -1;
}

/* Calls fn for each tag of a PVE tag list; stops when fn returns nonzero. */
static int each_tag(const char *tags, int (*fn)(void *, const char *, size_t), void *ctx)
{
	for (const char *p = tags ? tags : ""; *p;) {
		size_t len = strcspn(p, ";, ");
		if (len) {
			int r = fn(ctx, p, len);
			if (r)
				return r;
		}
		p += len;
		if (*p)
			p++;
	}
	return 0;
}

struct find_ctx {
	const struct ip_pool *p;
	struct pool_ip *out;
};

/* Is tag (len bytes) an address tag in p's range? 1 (and *out), 0. */
static int tag_in_pool(const struct ip_pool *p, const char *tag, size_t len, struct pool_ip *out)
{
	char buf[80];
	if (len >= sizeof buf)
		return 0;
	memcpy(buf, tag, len);
	buf[len] = 0;
	struct pool_ip ip;
	if (pool_tag_parse(buf, &ip) < 0 || !pool_in_range(p, &ip))
		return 0;
	if (out)
		*out = ip;
	return 1;
}

static int find_one(void *ctx, const char *tag, size_t len)
{
	struct find_ctx *f = ctx;
	return tag_in_pool(f->p, tag, len, f->out);
}

int pool_tags_find(const struct ip_pool *p, const char *tags, struct pool_ip *out)
{
	struct find_ctx f = {p, out};
	return each_tag(tags, find_one, &f);
}

struct with_ctx {
	const struct ip_pool *p;
	struct sbuf b;
	int oom;
};

static int keep_other(void *ctx, const char *tag, size_t len)
{
	struct with_ctx *w = ctx;
	if (tag_in_pool(w->p, tag, len, NULL))
		return 0;
	if ((w->b.len && sbuf_add(&w->b, ";") < 0) || sbuf_addf(&w->b, "%.*s", (int)len, tag) < 0)
		w->oom = 1;
	return 0;
}

char *pool_tags_with(const struct ip_pool *p, const char *tags, const struct pool_ip *a)
{
	struct with_ctx w = {p, {0}, 0};
	each_tag(tags, keep_other, &w);
	char *t = a ? pool_tag(a) : NULL;
	if ((a && !t) || (t && ((w.b.len && sbuf_add(&w.b, ";") < 0) || sbuf_add(&w.b, t) < 0)))
		w.oom = 1;
	free(t);
	char *out = w.oom ? NULL : sbuf_steal(&w.b);
	if (!w.oom && !out)
		out = strdup("");
	sbuf_free(&w.b);
	return out;
}

struct have_ctx {
	const char *tag;
	size_t len;
};

static int is_tag(void *ctx, const char *tag, size_t len)
{
	const struct have_ctx *h = ctx;
	return len == h->len && strncmp(tag, h->tag, len) == 0;
}

bool pool_tags_have(const char *tags, const struct pool_ip *a)
{
	char *t = pool_tag(a);
	struct have_ctx h = {t, t ? strlen(t) : 0};
	bool have = t && each_tag(tags, is_tag, &h) == 1;
	free(t);
	return have;
}

size_t pool_value_ips(const char *value, struct pool_ip out[2])
{
	size_t n = 0;
	for (const char *p = value ? value : ""; *p && n < 2;) {
		size_t len = strcspn(p, ",");
		size_t kl = strncmp(p, "ip=", 3) == 0 ? 3 : strncmp(p, "ip6=", 4) == 0 ? 4 : 0;
		if (kl) {
			char buf[64];
			size_t al = strcspn(p + kl, "/,");
			if (al < sizeof buf) {
				memcpy(buf, p + kl, al);
				buf[al] = 0;
				if (pool_ip_parse(buf, &out[n]) == 0)
					n++;
			}
		}
		p += len;
		if (*p)
			p++;
	}
	return n;
}

char *pool_ipconfig(const struct ip_pool *p, const struct pool_ip *a)
{
	char *ip = pool_ip_str(a), *gw = pool_ip_str(&p->gateway);
	char *s = ip && gw ? strprintf("%s=%s/%u,%s=%s", a->family == 6 ? "ip6" : "ip", ip,
				       p->prefix, a->family == 6 ? "gw6" : "gw", gw)
			   : NULL;
	free(ip);
	free(gw);
	return s;
}

static int cmp_ip(const void *a, const void *b)
{
	return pool_ip_cmp(a, b);
}

int pool_pick(const struct ip_pool *p, const struct pool_ip *used, size_t n, size_t skip,
	      struct pool_ip *out)
{
	struct pool_ip *sorted = n ? malloc(n * sizeof *sorted) : NULL;
	if (n && !sorted)
		return -1;
	if (n) {
		memcpy(sorted, used, n * sizeof *sorted);
		qsort(sorted, n, sizeof *sorted, cmp_ip);
	}
	struct pool_ip a = p->start;
	size_t i = 0;
	int rc = 1;
	for (;;) {
		while (i < n && pool_ip_cmp(&sorted[i], &a) < 0)
			i++;
		bool taken = i < n && pool_ip_cmp(&sorted[i], &a) == 0;
		if (!taken) {
			if (skip == 0) {
				*out = a;
				rc = 0;
				break;
			}
			skip--;
		}
		if (pool_ip_cmp(&a, &p->end) >= 0 || ip_next(&a) < 0)
			break;
	}
	free(sorted);
	return rc;
}

/* a - 1; -1 when it wraps below the family's first address. */
static int ip_prev(struct pool_ip *a)
{
	for (size_t i = ip_len(a); i-- > 0;) {
		if (a->b[i]-- != 0)
			return 0;
	}
	return -1;
}

/* "A-B" or "A" into the list (max reached: counted). -1: OOM. */
static int add_stretch(const struct pool_ip *a, const struct pool_ip *b, size_t max, char **v,
		       size_t *n, size_t *more)
{
	if (*n == max) {
		(*more)++;
		return 0;
	}
	char *x = pool_ip_str(a), *y = pool_ip_str(b);
	v[*n] = x && y ? (pool_ip_cmp(a, b) == 0 ? strdup(x) : strprintf("%s-%s", x, y)) : NULL;
	free(x);
	free(y);
	if (!v[*n])
		return -1;
	(*n)++;
	return 0;
}

int pool_free_ranges(const struct ip_pool *p, const struct pool_ip *used, size_t n, size_t max,
		     char ***out, size_t *n_out, size_t *more)
{
	*out = NULL;
	*n_out = *more = 0;
	struct pool_ip *sorted = malloc((n + 1) * sizeof *sorted);
	char **v = calloc(max + 1, sizeof *v);
	int rc = sorted && v ? 0 : -1;
	if (rc == 0 && n) {
		memcpy(sorted, used, n * sizeof *sorted);
		qsort(sorted, n, sizeof *sorted, cmp_ip);
	}
	struct pool_ip from = p->start;
	bool open = true; /* from is within the range */
	for (size_t i = 0; rc == 0 && i < n && open; i++) {
		if (!pool_in_range(p, &sorted[i]) || pool_ip_cmp(&sorted[i], &from) < 0)
			continue;
		if (pool_ip_cmp(&sorted[i], &from) > 0) {
			struct pool_ip to = sorted[i];
			ip_prev(&to);
			rc = add_stretch(&from, &to, max, v, n_out, more);
		}
		from = sorted[i];
		open = pool_ip_cmp(&from, &p->end) < 0 && ip_next(&from) == 0;
	}
	if (rc == 0 && open)
		rc = add_stretch(&from, &p->end, max, v, n_out, more);
	free(sorted);
	if (rc < 0) {
		for (size_t i = 0; v && i < *n_out; i++)
			free(v[i]);
		free(v);
		*n_out = 0;
		return -1;
	}
	*out = v;
	return 0;
}
