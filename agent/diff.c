/* diff.c - line-based unified diff (Myers O(ND) with a per-step trace for
 * the backtrack); see diff.h. */
#include "diff.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

struct dline {
	const char *s;
	size_t len;
	int nl;
};

static int split(const char *t, struct dline **out, size_t *n)
{
	const char *text = t ? t : "";
	size_t count = 0;
	for (const char *p = text; *p; count++) {
		const char *e = strchr(p, '\n');
		p = e ? e + 1 : p + strlen(p);
	}
	*n = 0;
	*out = calloc(count ? count : 1, sizeof **out);
	if (!*out)
		return -1;
	for (const char *p = text; *p && *n < count; (*n)++) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		(*out)[*n].s = p;
		(*out)[*n].len = len;
		(*out)[*n].nl = e != NULL;
		p = e ? e + 1 : p + len;
	}
	return 0;
}

static int eq(const struct dline *a, const struct dline *b)
{
	return a->len == b->len && a->nl == b->nl && memcmp(a->s, b->s, a->len) == 0;
}

struct op {
	char type;             /* ' ', '-', '+' */
	size_t ai, bi;         /* positions in a and b before this op */
	const struct dline *l; /* the line (from a for ' ' and '-', b for '+') */
};

/* Longest edit distance searched for; beyond it (huge, unrelated texts)
 * the middle part is shown as deleted then inserted. Bounds the trace to
 * about DIFF_MAX_D^2 longs. */
#define DIFF_MAX_D 2000L

/* Myers: edit script from a to b into ops (in order); 1 if the distance
 * exceeds dlimit (nothing returned). */
static int myers_core(const struct dline *a, size_t n, const struct dline *b, size_t m,
		      long dlimit, struct op **ops, size_t *nops)
{
	*ops = NULL;
	*nops = 0;
	long max = (long)(n + m), off = max + 1;
	long *v = calloc((size_t)(2 * max + 3), sizeof *v);
	long **trace = calloc((size_t)max + 1, sizeof *trace);
	struct op *res = malloc((n + m + 1) * sizeof *res);
	long dfinal = -1;
	int rc = -1;
	if (!v || !trace || !res)
		goto out;
	for (long d = 0; d <= max && d <= dlimit && dfinal < 0; d++) {
		/* save v[-(d+1) .. d+1] as it is before step d */
		trace[d] = malloc((size_t)(2 * d + 3) * sizeof **trace);
		if (!trace[d])
			goto out;
		memcpy(trace[d], v + off - (d + 1), (size_t)(2 * d + 3) * sizeof *v);
		for (long k = -d; k <= d; k += 2) {
			long x;
			if (k == -d || (k != d && v[off + k - 1] < v[off + k + 1]))
				x = v[off + k + 1];
			else
				x = v[off + k - 1] + 1;
			long y = x - k;
			while (x < (long)n && y < (long)m && eq(&a[x], &b[y])) {
				x++;
				y++;
			}
			v[off + k] = x;
			if (x >= (long)n && y >= (long)m) {
				dfinal = d;
				break;
			}
		}
	}
	if (dfinal < 0) {
		rc = 1;
		goto out;
	}
	size_t cnt = 0;
	long x = (long)n, y = (long)m;
	for (long d = dfinal; d >= 0; d--) {
		const long *tv = trace[d] + (d + 1); /* tv[k] for k in [-(d+1), d+1] */
		long k = x - y, pk;
		if (k == -d || (k != d && tv[k - 1] < tv[k + 1]))
			pk = k + 1;
		else
			pk = k - 1;
		long px = tv[pk], py = px - pk;
		if (d == 0)
			px = py = 0;
		while (x > px && y > py) {
			x--;
			y--;
			res[cnt++] = (struct op){' ', (size_t)x, (size_t)y, &a[x]};
		}
		if (d > 0) {
			if (x == px)
				res[cnt++] = (struct op){'+', (size_t)px, (size_t)py, &b[py]};
			else
				res[cnt++] = (struct op){'-', (size_t)px, (size_t)py, &a[px]};
		}
		x = px;
		y = py;
	}
	for (size_t i = 0; i < cnt / 2; i++) {
		struct op t = res[i];
		res[i] = res[cnt - 1 - i];
		res[cnt - 1 - i] = t;
	}
	*ops = res;
	*nops = cnt;
	res = NULL;
	rc = 0;
out:
	if (trace)
		for (long d = 0; d <= max; d++)
			free(trace[d]);
	free(trace);
	free(v);
	free(res);
	return rc;
}

static int myers(const struct dline *a, size_t n, const struct dline *b, size_t m,
		 struct op **ops, size_t *nops)
{
	*ops = NULL;
	*nops = 0;
	size_t pre = 0, suf = 0;
	while (pre < n && pre < m && eq(&a[pre], &b[pre]))
		pre++;
	while (suf < n - pre && suf < m - pre && eq(&a[n - 1 - suf], &b[m - 1 - suf]))
		suf++;
	size_t an = n - pre - suf, bn = m - pre - suf;
	struct op *mid = NULL;
	size_t nmid = 0;
	int r = myers_core(a + pre, an, b + pre, bn, DIFF_MAX_D, &mid, &nmid);
	if (r < 0)
		return -1;
	struct op *res = malloc((n + m + 1) * sizeof *res);
	if (!res) {
		free(mid);
		return -1;
	}
	size_t cnt = 0;
	for (size_t i = 0; i < pre; i++)
		res[cnt++] = (struct op){' ', i, i, &a[i]};
	if (r == 0) {
		for (size_t i = 0; i < nmid; i++) {
			res[cnt] = mid[i];
			res[cnt].ai += pre;
			res[cnt].bi += pre;
			cnt++;
		}
	} else {
		for (size_t i = 0; i < an; i++)
			res[cnt++] = (struct op){'-', pre + i, pre, &a[pre + i]};
		for (size_t i = 0; i < bn; i++)
			res[cnt++] = (struct op){'+', pre + an, pre + i, &b[pre + i]};
	}
	for (size_t i = 0; i < suf; i++)
		res[cnt++] = (struct op){' ', n - suf + i, m - suf + i, &a[n - suf + i]};
	free(mid);
	*ops = res;
	*nops = cnt;
	return 0;
}

static int emit_line(struct sbuf *b, char c, const struct dline *l)
{
	if (sbuf_addc(b, c) < 0 || sbuf_addn(b, l->s, l->len) < 0 || sbuf_addc(b, '\n') < 0)
		return -1;
	return l->nl ? 0 : sbuf_add(b, "\\ No newline at end of file\n");
}

static int range(struct sbuf *b, size_t start, size_t count)
{
	if (count == 1)
		return sbuf_addf(b, "%zu", start + 1);
	return sbuf_addf(b, "%zu,%zu", count ? start + 1 : start, count);
}

char *diff_unified_ctx(const char *old, const char *new, const char *path,
		       unsigned context)
{
	struct dline *a = NULL, *bl = NULL;
	size_t n = 0, m = 0, nops = 0;
	struct op *ops = NULL;
	struct sbuf b = {0};
	int rc = -1;
	if (split(old, &a, &n) < 0 || split(new, &bl, &m) < 0 ||
	    myers(a, n, bl, m, &ops, &nops) < 0)
		goto out;
	size_t first = nops;
	for (size_t i = 0; i < nops; i++)
		if (ops[i].type != ' ') {
			first = i;
			break;
		}
	if (first == nops && (old == NULL) == (new == NULL)) {
		rc = sbuf_add(&b, "");
		goto out;
	}
	while (path && *path == '/')
		path++;
	if (!path)
		path = "file";
	if ((old ? sbuf_addf(&b, "--- a/%s\n", path) : sbuf_add(&b, "--- /dev/null\n")) < 0 ||
	    (new ? sbuf_addf(&b, "+++ b/%s\n", path) : sbuf_add(&b, "+++ /dev/null\n")) < 0)
		goto out;
	size_t i = first;
	while (i < nops) {
		/* hunk [hs, he): from context before i to the last change whose
		 * following gap of equal lines is short enough to merge */
		size_t hs = i > context ? i - context : 0;
		size_t last = i;
		for (size_t j = i + 1; j < nops; j++) {
			if (ops[j].type == ' ')
				continue;
			if (j - last - 1 > 2 * (size_t)context)
				break;
			last = j;
		}
		size_t he = last + 1 + context < nops ? last + 1 + context : nops;
		size_t ac = 0, bc = 0;
		for (size_t j = hs; j < he; j++) {
			if (ops[j].type != '+')
				ac++;
			if (ops[j].type != '-')
				bc++;
		}
		if (sbuf_add(&b, "@@ -") < 0 || range(&b, ops[hs].ai, ac) < 0 ||
		    sbuf_add(&b, " +") < 0 || range(&b, ops[hs].bi, bc) < 0 ||
		    sbuf_add(&b, " @@\n") < 0)
			goto out;
		for (size_t j = hs; j < he; j++) {
			if (emit_line(&b, ops[j].type, ops[j].l) < 0)
				goto out;
		}
		i = nops;
		for (size_t j = he; j < nops; j++)
			if (ops[j].type != ' ') {
				i = j;
				break;
			}
	}
	rc = 0;
out:
	free(a);
	free(bl);
	free(ops);
	if (rc < 0) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

char *diff_unified(const char *old, const char *new, const char *path)
{
	return diff_unified_ctx(old, new, path, 3);
}
