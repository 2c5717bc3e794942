/* bench_result.c - a benchmark result and its forms (see bench.h): the
 * figures and notes, the text and the compare table, the result and the
 * comparison as JSON, and a result read back from JSON (bench_store.c
 * shares the figures and notes arrays through bench_int.h). */
#include "bench_int.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- figures ------------------------------------------------------------------ */

struct fig_def {
	const char *key, *label, *unit;
	bool hib;
};

static const struct fig_def fig_defs[] = {
	{"seq_write_mbps", "sequential write", "MB/s", true},
	{"seq_read_mbps", "sequential read", "MB/s", true},
	{"rand_read_iops", "random 4 KiB reads", "IOPS", true},
	{"diskinfo_overhead_ms", "diskinfo: command overhead", "ms", false},
	{"diskinfo_seek_full_ms", "diskinfo: full stroke seek", "ms", false},
	{"diskinfo_seek_half_ms", "diskinfo: half stroke seek", "ms", false},
	{"diskinfo_seek_quarter_ms", "diskinfo: quarter stroke seek", "ms", false},
	{"diskinfo_seek_short_fwd_ms", "diskinfo: short forward seek", "ms", false},
	{"diskinfo_seek_short_back_ms", "diskinfo: short backward seek", "ms", false},
	{"diskinfo_seq_outer_ms", "diskinfo: sequential sector, outer", "ms", false},
	{"diskinfo_seq_inner_ms", "diskinfo: sequential sector, inner", "ms", false},
	{"diskinfo_transfer_outside_mbps", "diskinfo: transfer, outside", "MB/s", true},
	{"diskinfo_transfer_middle_mbps", "diskinfo: transfer, middle", "MB/s", true},
	{"diskinfo_transfer_inside_mbps", "diskinfo: transfer, inside", "MB/s", true},
};

static void fig_free(struct bench_figure *f)
{
	free(f->key);
	free(f->label);
	free(f->unit);
}

void bench_result_free(struct bench_result *r)
{
	if (!r)
		return;
	free(r->bus);
	free(r->nic);
	for (size_t i = 0; i < r->n_figs; i++)
		fig_free(&r->figs[i]);
	free(r->figs);
	for (size_t i = 0; i < r->n_notes; i++)
		free(r->notes[i]);
	free(r->notes);
	memset(r, 0, sizeof *r);
}

const struct bench_figure *bench_get(const struct bench_result *r, const char *key)
{
	for (size_t i = 0; i < r->n_figs; i++)
		if (strcmp(r->figs[i].key, key) == 0)
			return &r->figs[i];
	return NULL;
}

int bench_add_figure_full(struct bench_result *r, const char *key, const char *label,
			  const char *unit, double value, bool higher_is_better)
{
	struct bench_figure f = {
		.key = strdup(key),
		.label = strdup(label),
		.unit = strdup(unit),
		.value = value,
		.higher_is_better = higher_is_better,
	};
	if (!f.key || !f.label || !f.unit) {
		fig_free(&f);
		return -1;
	}
	for (size_t i = 0; i < r->n_figs; i++) {
		if (strcmp(r->figs[i].key, key) == 0) {
			fig_free(&r->figs[i]);
			r->figs[i] = f;
			return 0;
		}
	}
	struct bench_figure *v = realloc(r->figs, (r->n_figs + 1) * sizeof *v);
	if (!v) {
		fig_free(&f);
		return -1;
	}
	r->figs = v;
	r->figs[r->n_figs++] = f;
	return 0;
}

int bench_add_figure(struct bench_result *r, const char *key, double value)
{
	for (size_t i = 0; i < sizeof fig_defs / sizeof fig_defs[0]; i++)
		if (strcmp(fig_defs[i].key, key) == 0)
			return bench_add_figure_full(r, key, fig_defs[i].label, fig_defs[i].unit,
						     value, fig_defs[i].hib);
	errno = EINVAL;
	return -1;
}

int benchi_add_note_str(struct bench_result *r, const char *s)
{
	char *d = strdup(s);
	char **v = d ? realloc(r->notes, (r->n_notes + 1) * sizeof *v) : NULL;
	if (!v) {
		free(d);
		return -1;
	}
	r->notes = v;
	r->notes[r->n_notes++] = d;
	return 0;
}

int bench_add_note(struct bench_result *r, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0)
		rc = benchi_add_note_str(r, sbuf_str(&b));
	sbuf_free(&b);
	return rc;
}

/* ---- text output -------------------------------------------------------------- */

static void fmt_value(double v, char *buf, size_t n)
{
	int prec = v >= 100 ? 0 : v >= 10 ? 1 : v >= 1 ? 2 : 3;
	snprintf(buf, n, "%.*f", prec, v);
}

enum time_fmt { TF_TEXT, TF_MINUTE, TF_SECOND, TF_ISO };

/* UTC: "2026-11-30 12:00:00 UTC", "2026-11-30 12:00", "2026-11-30T12:00:00Z". */
static void fmt_time(long long ts, enum time_fmt tf, char *buf, size_t n)
{
	time_t t = (time_t)ts;
	struct tm tm;
	size_t w = 0;
	if (gmtime_r(&t, &tm)) {
		if (tf == TF_TEXT)
			w = strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm);
		else if (tf == TF_MINUTE)
			w = strftime(buf, n, "%Y-%m-%d %H:%M", &tm);
		else if (tf == TF_SECOND)
			w = strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
		else
			w = strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	if (w == 0)
		snprintf(buf, n, "%lld", ts);
}

static const char *or_q(const char *s)
{
	return s && *s ? s : "?";
}

int bench_print(const struct bench_result *r, FILE *f)
{
	char when[40] = "";
	if (r->ts > 0)
		fmt_time(r->ts, TF_TEXT, when, sizeof when);
	int bad = fprintf(f, "%s/%s, %u MiB%s%s\n", or_q(r->bus), or_q(r->nic), r->size_mib,
			  *when ? ", " : "", when) < 0;
	int lw = 0, vw = 0;
	for (size_t i = 0; i < r->n_figs; i++) {
		char v[64];
		fmt_value(r->figs[i].value, v, sizeof v);
		int l = (int)strlen(r->figs[i].label), w = (int)strlen(v);
		lw = l > lw ? l : lw;
		vw = w > vw ? w : vw;
	}
	for (size_t i = 0; i < r->n_figs; i++) {
		char v[64];
		fmt_value(r->figs[i].value, v, sizeof v);
		bad |= fprintf(f, "%-*s  %*s %s\n", lw, r->figs[i].label, vw, v, r->figs[i].unit) < 0;
	}
	for (size_t i = 0; i < r->n_notes; i++)
		bad |= fprintf(f, "note: %s\n", r->notes[i]) < 0;
	return bad ? -1 : 0;
}

struct cmp_row {
	const char *key, *label, *unit;
	bool hib;
	const struct bench_figure *b, *a;
};

/* One row per figure: before's order, then after's new ones. *rows
 * malloc'd. */
static int cmp_rows(const struct bench_result *before, const struct bench_result *after,
		    struct cmp_row **rows, size_t *n)
{
	*rows = NULL;
	*n = 0;
	size_t cap = before->n_figs + after->n_figs;
	struct cmp_row *v = calloc(cap ? cap : 1, sizeof *v);
	if (!v)
		return -1;
	for (size_t i = 0; i < before->n_figs; i++) {
		const struct bench_figure *b = &before->figs[i];
		v[(*n)++] = (struct cmp_row){b->key, b->label, b->unit, b->higher_is_better, b,
					     bench_get(after, b->key)};
	}
	for (size_t i = 0; i < after->n_figs; i++) {
		const struct bench_figure *a = &after->figs[i];
		if (!bench_get(before, a->key))
			v[(*n)++] = (struct cmp_row){a->key, a->label, a->unit, a->higher_is_better,
						     NULL, a};
	}
	*rows = v;
	return 0;
}

/* The gain of a row, or a negative number when there is none. */
static double row_gain(const struct cmp_row *r)
{
	if (!r->a || !r->b || !(r->a->value > 0) || !(r->b->value > 0))
		return -1;
	return r->hib ? r->a->value / r->b->value : r->b->value / r->a->value;
}

/* "bus/nic", with its time (tf) when with_time */
static char *default_title(const struct bench_result *r, bool with_time, enum time_fmt tf)
{
	if (!with_time || r->ts <= 0)
		return strprintf("%s/%s", or_q(r->bus), or_q(r->nic));
	char when[32];
	fmt_time(r->ts, tf, when, sizeof when);
	return strprintf("%s/%s %s", or_q(r->bus), or_q(r->nic), when);
}

/* The width the comparison keeps to (a terminal's). */
#define BENCH_TABLE_COLUMNS 80

int bench_compare_table_titled(const struct bench_result *before, const char *title_before,
			       const struct bench_result *after, const char *title_after,
			       FILE *f)
{
	char *tb = title_before ? strdup(title_before) : default_title(before, false, TF_MINUTE);
	char *ta = title_after ? strdup(title_after) : default_title(after, false, TF_MINUTE);
	/* two columns never have the same title: the time, to the minute,
	 * then (two runs in one minute) to the second */
	for (int k = 0; k < 2 && tb && ta && !title_before && !title_after && strcmp(tb, ta) == 0;
	     k++) {
		free(tb);
		free(ta);
		tb = default_title(before, true, k ? TF_SECOND : TF_MINUTE);
		ta = default_title(after, true, k ? TF_SECOND : TF_MINUTE);
	}
	struct cmp_row *rows = NULL;
	size_t n = 0;
	char **cells = NULL; /* 4 per row: label (unit), before, after, gain */
	int rc = -1;
	if (!tb || !ta || cmp_rows(before, after, &rows, &n) < 0)
		goto out;
	cells = calloc(4 * (n ? n : 1), sizeof *cells);
	if (!cells)
		goto out;
	int w[4] = {(int)strlen("figure"), (int)strlen(tb), (int)strlen(ta), (int)strlen("gain")};
	for (size_t i = 0; i < n; i++) {
		char vb[64] = "-", va[64] = "-", g[64] = "-";
		if (rows[i].b)
			fmt_value(rows[i].b->value, vb, sizeof vb);
		if (rows[i].a)
			fmt_value(rows[i].a->value, va, sizeof va);
		double gain = row_gain(&rows[i]);
		if (gain >= 0)
			snprintf(g, sizeof g, "%.2fx", gain);
		cells[4 * i] = strprintf("%s (%s)", rows[i].label, rows[i].unit);
		cells[4 * i + 1] = strdup(vb);
		cells[4 * i + 2] = strdup(va);
		cells[4 * i + 3] = strdup(g);
		for (int c = 0; c < 4; c++) {
			if (!cells[4 * i + (size_t)c])
				goto out;
			int l = (int)strlen(cells[4 * i + (size_t)c]);
			w[c] = l > w[c] ? l : w[c];
		}
	}
	/* wider than a terminal (the titles carry their times): the columns
	 * are "before" and "after", their titles on a line each above */
	const char *hb = tb, *ha = ta;
	int bad = 0;
	if (w[0] + w[1] + w[2] + w[3] + 6 > BENCH_TABLE_COLUMNS) {
		bad |= fprintf(f, "before: %s\nafter:  %s\n", tb, ta) < 0;
		hb = "before";
		ha = "after";
		w[1] = (int)strlen(hb);
		w[2] = (int)strlen(ha);
		for (size_t i = 0; i < n; i++) {
			int lb = (int)strlen(cells[4 * i + 1]), la = (int)strlen(cells[4 * i + 2]);
			w[1] = lb > w[1] ? lb : w[1];
			w[2] = la > w[2] ? la : w[2];
		}
	}
	bad |= fprintf(f, "%-*s  %*s  %*s  %*s\n", w[0], "figure", w[1], hb, w[2], ha, w[3],
		       "gain") < 0;
	for (size_t i = 0; i < n; i++)
		bad |= fprintf(f, "%-*s  %*s  %*s  %*s\n", w[0], cells[4 * i], w[1],
			       cells[4 * i + 1], w[2], cells[4 * i + 2], w[3], cells[4 * i + 3]) < 0;
	for (size_t i = 0; i < before->n_notes; i++)
		bad |= fprintf(f, "note (%s): %s\n", tb, before->notes[i]) < 0;
	for (size_t i = 0; i < after->n_notes; i++)
		bad |= fprintf(f, "note (%s): %s\n", ta, after->notes[i]) < 0;
	rc = bad ? -1 : 0;
out:
	if (cells)
		for (size_t i = 0; i < 4 * n; i++)
			free(cells[i]);
	free(cells);
	free(rows);
	free(tb);
	free(ta);
	return rc;
}

int bench_compare_table(const struct bench_result *before, const struct bench_result *after,
			FILE *f)
{
	return bench_compare_table_titled(before, NULL, after, NULL, f);
}

/* ---- JSON -------------------------------------------------------------------- */

/* Add v (NULL: out of memory) to o; v is consumed. */
static int jadd(json_object *o, const char *k, json_object *v)
{
	if (!v)
		return -1;
	if (json_object_object_add(o, k, v) < 0) {
		json_object_put(v);
		return -1;
	}
	return 0;
}

static json_object *jstr_or_null(const char *s, int *bad)
{
	if (!s)
		return NULL;
	json_object *o = json_object_new_string(s);
	*bad |= !o;
	return o;
}

static int jadd_nullable(json_object *o, const char *k, json_object *v, int bad)
{
	if (bad)
		return -1;
	if (!v)
		return json_object_object_add(o, k, NULL) < 0 ? -1 : 0;
	return jadd(o, k, v);
}

json_object *benchi_figures_json(const struct bench_result *r)
{
	json_object *a = json_object_new_array();
	int bad = !a;
	for (size_t i = 0; !bad && i < r->n_figs; i++) {
		const struct bench_figure *f = &r->figs[i];
		json_object *o = json_object_new_object();
		bad |= !o;
		if (!o)
			break;
		bad |= jadd(o, "key", json_object_new_string(f->key)) < 0;
		bad |= jadd(o, "label", json_object_new_string(f->label)) < 0;
		bad |= jadd(o, "unit", json_object_new_string(f->unit)) < 0;
		bad |= jadd(o, "value", json_object_new_double(f->value)) < 0;
		bad |= jadd(o, "higher_is_better", json_object_new_boolean(f->higher_is_better)) < 0;
		if (json_object_array_add(a, o) < 0) {
			json_object_put(o);
			bad = 1;
		}
	}
	if (bad) {
		json_object_put(a);
		return NULL;
	}
	return a;
}

json_object *benchi_notes_json(const struct bench_result *r)
{
	json_object *a = json_object_new_array();
	int bad = !a;
	for (size_t i = 0; !bad && i < r->n_notes; i++) {
		json_object *s = json_object_new_string(r->notes[i]);
		if (!s || json_object_array_add(a, s) < 0) {
			json_object_put(s);
			bad = 1;
		}
	}
	if (bad) {
		json_object_put(a);
		return NULL;
	}
	return a;
}

json_object *bench_result_json(const struct bench_result *r)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	char when[32];
	fmt_time(r->ts, TF_ISO, when, sizeof when);
	int bad = 0;
	bad |= jadd(o, "ts", json_object_new_int64(r->ts)) < 0;
	bad |= jadd(o, "time", json_object_new_string(when)) < 0;
	json_object *bus = jstr_or_null(r->bus, &bad);
	bad |= jadd_nullable(o, "bus", bus, bad) < 0;
	json_object *nic = jstr_or_null(r->nic, &bad);
	bad |= jadd_nullable(o, "nic", nic, bad) < 0;
	bad |= jadd(o, "size_mib", json_object_new_int64(r->size_mib)) < 0;
	bad |= jadd(o, "figures", benchi_figures_json(r)) < 0;
	bad |= jadd(o, "notes", benchi_notes_json(r)) < 0;
	if (bad) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

json_object *bench_compare_json(const struct bench_result *before, const struct bench_result *after)
{
	json_object *o = json_object_new_object();
	json_object *rows_a = json_object_new_array();
	struct cmp_row *rows = NULL;
	size_t n = 0;
	int bad = !o || !rows_a || cmp_rows(before, after, &rows, &n) < 0;
	for (size_t i = 0; !bad && i < n; i++) {
		json_object *r = json_object_new_object();
		if (!r) {
			bad = 1;
			break;
		}
		bad |= jadd(r, "key", json_object_new_string(rows[i].key)) < 0;
		bad |= jadd(r, "label", json_object_new_string(rows[i].label)) < 0;
		bad |= jadd(r, "unit", json_object_new_string(rows[i].unit)) < 0;
		json_object *b = rows[i].b ? json_object_new_double(rows[i].b->value) : NULL;
		bad |= jadd_nullable(r, "before", b, rows[i].b && !b) < 0;
		json_object *a = rows[i].a ? json_object_new_double(rows[i].a->value) : NULL;
		bad |= jadd_nullable(r, "after", a, rows[i].a && !a) < 0;
		double g = row_gain(&rows[i]);
		json_object *gj = g >= 0 ? json_object_new_double(g) : NULL;
		bad |= jadd_nullable(r, "gain", gj, g >= 0 && !gj) < 0;
		if (json_object_array_add(rows_a, r) < 0) {
			json_object_put(r);
			bad = 1;
		}
	}
	free(rows);
	if (!bad) {
		bad |= jadd(o, "before", bench_result_json(before)) < 0;
		bad |= jadd(o, "after", bench_result_json(after)) < 0;
		bad |= jadd(o, "rows", rows_a) < 0;
		rows_a = NULL;
	}
	json_object_put(rows_a);
	if (bad) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* o's member k of type t. */
static bool member(json_object *o, const char *k, json_type t, json_object **v)
{
	return json_object_object_get_ex(o, k, v) && json_object_is_type(*v, t);
}

/* figures array -> r; where names the array in messages. */
int benchi_figures_from_json(json_object *a, const char *where, struct bench_result *r,
			     char **err)
{
	if (!json_object_is_type(a, json_type_array)) {
		err_setf(err, "%s: not an array", where);
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *f = json_object_array_get_idx(a, i);
		json_object *k = NULL, *l = NULL, *u = NULL, *v = NULL, *h = NULL;
		if (!json_object_is_type(f, json_type_object)) {
			err_setf(err, "%s[%zu]: not an object", where, i);
			return -1;
		}
		const char *missing = NULL;
		if (!member(f, "key", json_type_string, &k) || !json_object_get_string_len(k))
			missing = "key";
		else if (!member(f, "label", json_type_string, &l))
			missing = "label";
		else if (!member(f, "unit", json_type_string, &u))
			missing = "unit";
		else if ((!member(f, "value", json_type_double, &v) &&
			  !member(f, "value", json_type_int, &v)) ||
			 !isfinite(json_object_get_double(v)))
			missing = "value";
		else if (!member(f, "higher_is_better", json_type_boolean, &h))
			missing = "higher_is_better";
		if (missing) {
			err_setf(err, "%s[%zu].%s: missing or of the wrong type", where, i, missing);
			return -1;
		}
		if (bench_add_figure_full(r, json_object_get_string(k), json_object_get_string(l),
					  json_object_get_string(u), json_object_get_double(v),
					  json_object_get_boolean(h)) < 0) {
			err_setf(err, "out of memory");
			return -1;
		}
	}
	return 0;
}

int benchi_notes_from_json(json_object *a, const char *where, struct bench_result *r, char **err)
{
	if (!json_object_is_type(a, json_type_array)) {
		err_setf(err, "%s: not an array", where);
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *s = json_object_array_get_idx(a, i);
		if (!json_object_is_type(s, json_type_string)) {
			err_setf(err, "%s[%zu]: not a string", where, i);
			return -1;
		}
		if (benchi_add_note_str(r, json_object_get_string(s)) < 0) {
			err_setf(err, "out of memory");
			return -1;
		}
	}
	return 0;
}

static int opt_string(json_object *o, const char *k, char **dst, char **err)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, k, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_string)) {
		err_setf(err, "$.%s: not a string", k);
		return -1;
	}
	*dst = strdup(json_object_get_string(v));
	if (!*dst) {
		err_setf(err, "out of memory");
		return -1;
	}
	return 0;
}

int bench_result_from_json(const json_object *o, struct bench_result *r, char **err)
{
	memset(r, 0, sizeof *r);
	json_object *obj = (json_object *)o; /* json-c's getters take no const */
	json_object *v = NULL;
	if (!json_object_is_type(obj, json_type_object)) {
		err_setf(err, "$: not an object");
		return -1;
	}
	if (!json_object_object_get_ex(obj, "ts", &v) || !json_object_is_type(v, json_type_int)) {
		err_setf(err, "$.ts: missing or not an integer");
		goto fail;
	}
	r->ts = json_object_get_int64(v);
	if (!json_object_object_get_ex(obj, "size_mib", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0 || json_object_get_int64(v) > BENCH_MAX_SIZE_MIB) {
		err_setf(err, "$.size_mib: missing or not an integer in 0..%u", BENCH_MAX_SIZE_MIB);
		goto fail;
	}
	r->size_mib = (unsigned)json_object_get_int64(v);
	if (opt_string(obj, "bus", &r->bus, err) < 0 || opt_string(obj, "nic", &r->nic, err) < 0)
		goto fail;
	if (!json_object_object_get_ex(obj, "figures", &v)) {
		err_setf(err, "$.figures: missing");
		goto fail;
	}
	if (benchi_figures_from_json(v, "$.figures", r, err) < 0)
		goto fail;
	if (json_object_object_get_ex(obj, "notes", &v) &&
	    benchi_notes_from_json(v, "$.notes", r, err) < 0)
		goto fail;
	return 0;
fail:
	bench_result_free(r);
	return -1;
}
