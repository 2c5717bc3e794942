/* bench.c - the in-guest disk benchmark (bench.h): the commands run over
 * SSH and their timing, the parsers of dd, diskinfo and fio output, the
 * result's text, table and JSON forms, and the bench table of state.db. */
#include "bench.h"

#include "store.h"
#include "pve.h"

#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB ((uint64_t)1048576)
#define DISKINFO_MIN_TIMEOUT_MS 300000L
#define FIO_EXTRA_TIMEOUT_MS 120000L
#define FIO_MAX_RUNTIME_S 3600u
#define MSG_MAX 300

/* ---- small helpers ---------------------------------------------------------- */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static const char *skip_space(const char *p, const char *end)
{
	while (p < end && is_space(*p))
		p++;
	return p;
}

/* The next line of [*p, end) without its newline; false at the end. */
static bool next_line(const char **p, const char *end, const char **line, size_t *len)
{
	if (*p >= end)
		return false;
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	const char *e = nl ? nl : end;
	*line = *p;
	*len = (size_t)(e - *p);
	*p = nl ? nl + 1 : end;
	return true;
}

/* Digits only (no sign), no overflow. */
static bool parse_u64(const char **p, const char *end, uint64_t *v)
{
	const char *q = *p;
	uint64_t n = 0;
	if (q >= end || !is_digit(*q))
		return false;
	for (; q < end && is_digit(*q); q++) {
		unsigned d = (unsigned)(*q - '0');
		if (n > (UINT64_MAX - d) / 10)
			return false;
		n = n * 10 + d;
	}
	*v = n;
	*p = q;
	return true;
}

/* A plain decimal number: digits, an optional fraction and exponent
 * ("1.2e-05", as GNU dd prints tiny times); no sign, no inf/nan, no hex. */
static bool parse_num(const char **p, const char *end, double *v)
{
	const char *q = *p;
	if (q >= end || !is_digit(*q))
		return false;
	while (q < end && is_digit(*q))
		q++;
	if (q < end && *q == '.')
		for (q++; q < end && is_digit(*q); q++)
			;
	if (q < end && (*q == 'e' || *q == 'E')) {
		const char *x = q + 1;
		if (x < end && (*x == '-' || *x == '+'))
			x++;
		if (x < end && is_digit(*x)) {
			while (x < end && is_digit(*x))
				x++;
			q = x;
		}
	}
	char buf[64];
	size_t n = (size_t)(q - *p);
	if (n >= sizeof buf)
		return false;
	memcpy(buf, *p, n);
	buf[n] = '\0';
	char *e = NULL;
	errno = 0;
	double d = strtod(buf, &e);
	if (errno != 0 || e != buf + n || !isfinite(d))
		return false;
	*v = d;
	*p = q;
	return true;
}

static bool starts_with(const char *p, const char *end, const char *word)
{
	size_t n = strlen(word);
	return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

/* Find word in [p, end); NULL if absent. */
static const char *find_word(const char *p, const char *end, const char *word)
{
	size_t n = strlen(word);
	for (; p + n <= end; p++)
		if (memcmp(p, word, n) == 0)
			return p;
	return NULL;
}

/* A line of remote output for a message: trimmed, at most MSG_MAX bytes,
 * control characters as '?'. malloc'd. */
static char *quote_line(const char *line, size_t len)
{
	const char *end = line + len;
	line = skip_space(line, end);
	while (end > line && is_space(end[-1]))
		end--;
	size_t n = (size_t)(end - line);
	bool cut = n > MSG_MAX;
	if (cut)
		n = MSG_MAX;
	char *s = malloc(n + 4);
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)line[i];
		s[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	if (cut)
		memcpy(s + n, "...", 4);
	else
		s[n] = '\0';
	return s;
}

/* The first non-empty line of text, for "not understood" messages. */
static char *first_line(const char *text)
{
	const char *p = text, *end = text + strlen(text), *line;
	size_t len;
	while (next_line(&p, end, &line, &len)) {
		const char *q = skip_space(line, line + len);
		if (q < line + len)
			return quote_line(line, len);
	}
	return strdup("(empty)");
}

/* The last non-empty line of a command's stderr, else of its stdout. */
static char *last_line_of(const char *text)
{
	const char *p = text, *end = text + strlen(text), *line, *best = NULL;
	size_t len, best_len = 0;
	while (next_line(&p, end, &line, &len)) {
		if (skip_space(line, line + len) < line + len) {
			best = line;
			best_len = len;
		}
	}
	return best ? quote_line(best, best_len) : NULL;
}

static char *remote_msg(const struct ssh_result *o)
{
	char *m = last_line_of(sbuf_str(&o->err));
	if (!m)
		m = last_line_of(sbuf_str(&o->out));
	return m ? m : strdup("no output");
}


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

static int add_note_str(struct bench_result *r, const char *s)
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
		rc = add_note_str(r, sbuf_str(&b));
	sbuf_free(&b);
	return rc;
}

/* ---- parsers ------------------------------------------------------------------ */

/* "N+M records in|out" */
static bool dd_records(const char *p, const char *end, uint64_t *full, uint64_t *part,
		       bool *out)
{
	if (!parse_u64(&p, end, full) || p >= end || *p != '+')
		return false;
	p++;
	if (!parse_u64(&p, end, part) || !starts_with(p, end, " records "))
		return false;
	p += strlen(" records ");
	const char *w = p;
	while (p < end && !is_space(*p))
		p++;
	if (skip_space(p, end) != end)
		return false;
	if ((size_t)(p - w) == 2 && memcmp(w, "in", 2) == 0)
		*out = false;
	else if ((size_t)(p - w) == 3 && memcmp(w, "out", 3) == 0)
		*out = true;
	else
		return false;
	return true;
}

/* "B bytes ... copied, S s[econds], ..." or "B bytes transferred in S secs
 * (...)": 1 parsed, 0 not a summary line, -1 a summary without a time. */
static int dd_summary(const char *p, const char *end, uint64_t *bytes, double *secs)
{
	uint64_t b;
	if (!parse_u64(&p, end, &b) || !starts_with(p, end, " byte")) /* GNU: "1 byte copied" */
		return 0;
	const char *k = find_word(p, end, "copied");
	size_t klen = strlen("copied");
	if (!k) {
		k = find_word(p, end, "transferred");
		klen = strlen("transferred");
	}
	if (!k)
		return 0;
	p = k + klen;
	while (p < end && (*p == ',' || is_space(*p)))
		p++;
	if (starts_with(p, end, "in "))
		p = skip_space(p + 3, end);
	double s;
	if (!parse_num(&p, end, &s))
		return -1;
	p = skip_space(p, end);
	if (p >= end || *p != 's')
		return -1;
	*bytes = b;
	*secs = s;
	return 1;
}

int bench_parse_dd(const char *out, uint64_t bs, struct bench_dd *dd, char **err)
{
	memset(dd, 0, sizeof *dd);
	dd->seconds = -1;
	const char *p = out, *end = out + strlen(out), *line;
	size_t len;
	bool have_in = false, have_out = false;
	while (next_line(&p, end, &line, &len)) {
		const char *l = skip_space(line, line + len);
		const char *le = line + len;
		uint64_t full, part;
		bool is_out;
		if (dd_records(l, le, &full, &part, &is_out)) {
			if (is_out) {
				dd->full_out = full;
				dd->part_out = part;
				have_out = true;
			} else {
				dd->full_in = full;
				dd->part_in = part;
				have_in = true;
			}
			continue;
		}
		uint64_t b;
		double s;
		int rc = dd_summary(l, le, &b, &s);
		if (rc < 0) {
			char *q = quote_line(line, len);
			err_setf(err, "dd summary not understood: '%s'", q ? q : "");
			free(q);
			return -1;
		}
		if (rc > 0) {
			dd->bytes = b;
			dd->seconds = s;
			dd->have_summary = true;
		}
	}
	dd->have_records = have_in && have_out;
	if (!dd->have_summary && !have_out) {
		char *q = first_line(out);
		err_setf(err, "dd printed no records or byte count: '%s'", q ? q : "");
		free(q);
		return -1;
	}
	if (!dd->have_summary) {
		if (bs && dd->full_out > UINT64_MAX / bs) {
			err_setf(err, "dd record count %" PRIu64 " out of range", dd->full_out);
			return -1;
		}
		dd->bytes = dd->full_out * bs;
	}
	return 0;
}

struct di_line {
	const char *name;   /* text before the ':' */
	const char *key;
	bool transfer;      /* "K kbytes in S sec = R kbytes/sec" */
};

static const struct di_line di_lines[] = {
	{"Full stroke", "diskinfo_seek_full_ms", false},
	{"Half stroke", "diskinfo_seek_half_ms", false},
	{"Quarter stroke", "diskinfo_seek_quarter_ms", false},
	{"Short forward", "diskinfo_seek_short_fwd_ms", false},
	{"Short backward", "diskinfo_seek_short_back_ms", false},
	{"Seq outer", "diskinfo_seq_outer_ms", false},
	{"Seq inner", "diskinfo_seq_inner_ms", false},
	{"outside", "diskinfo_transfer_outside_mbps", true},
	{"middle", "diskinfo_transfer_middle_mbps", true},
	{"inside", "diskinfo_transfer_inside_mbps", true},
};

/* The number after the last '=' followed by unit; false if absent. */
static bool di_value(const char *p, const char *end, const char *unit, double *v)
{
	const char *eq = NULL;
	for (const char *q = p; q < end; q++)
		if (*q == '=')
			eq = q;
	if (!eq)
		return false;
	const char *q = skip_space(eq + 1, end);
	if (!parse_num(&q, end, v))
		return false;
	q = skip_space(q, end);
	if (!starts_with(q, end, unit))
		return false;
	return skip_space(q + strlen(unit), end) == end;
}

int bench_parse_diskinfo(const char *out, struct bench_result *r, char **err)
{
	enum { NONE, SEEK, TRANSFER } sect = NONE;
	const char *p = out, *end = out + strlen(out), *line;
	size_t len, found = 0;
	while (next_line(&p, end, &line, &len)) {
		const char *l = skip_space(line, line + len);
		const char *le = line + len;
		while (le > l && is_space(le[-1]))
			le--;
		if (l == le)
			continue;
		if (starts_with(l, le, "Seek times:")) {
			sect = SEEK;
			continue;
		}
		if (starts_with(l, le, "Transfer rates:")) {
			sect = TRANSFER;
			continue;
		}
		const char *key = NULL, *what = NULL;
		bool transfer = false;
		double v;
		if (starts_with(l, le, "calculated command overhead")) {
			key = "diskinfo_overhead_ms";
			what = "calculated command overhead";
		} else if (sect != NONE) {
			const char *colon = memchr(l, ':', (size_t)(le - l));
			if (!colon)
				continue;
			for (size_t i = 0; i < sizeof di_lines / sizeof di_lines[0]; i++) {
				if ((sect == TRANSFER) == di_lines[i].transfer &&
				    (size_t)(colon - l) == strlen(di_lines[i].name) &&
				    memcmp(l, di_lines[i].name, (size_t)(colon - l)) == 0) {
					key = di_lines[i].key;
					what = di_lines[i].name;
					transfer = di_lines[i].transfer;
				}
			}
		}
		if (!key)
			continue;
		const char *unit = transfer ? "kbytes/sec"
				   : strcmp(key, "diskinfo_overhead_ms") == 0 ? "msec/sector" : "msec";
		if (!di_value(l, le, unit, &v)) {
			char *q = quote_line(line, len);
			err_setf(err, "diskinfo '%s' line not understood: '%s'", what, q ? q : "");
			free(q);
			return -1;
		}
		if (transfer)
			v = v * 1024.0 / 1e6;
		if (bench_add_figure(r, key, v) < 0) {
			err_setf(err, "out of memory");
			return -1;
		}
		found++;
	}
	if (!found) {
		char *q = first_line(out);
		err_setf(err, "no diskinfo -c/-t figures in the output: '%s'", q ? q : "");
		free(q);
		return -1;
	}
	return 0;
}

static bool json_number(json_object *o, const char *key, double *v)
{
	json_object *m = NULL;
	if (!json_object_object_get_ex(o, key, &m) ||
	    !(json_object_is_type(m, json_type_double) || json_object_is_type(m, json_type_int)))
		return false;
	*v = json_object_get_double(m);
	return isfinite(*v) && *v >= 0;
}

int bench_parse_fio(const char *out, double *iops, double *bw_kib, char **err)
{
	*iops = 0;
	*bw_kib = 0;
	const char *start = NULL;
	for (const char *p = out; *p; p++) {
		if (*p == '{' && (p == out || p[-1] == '\n')) {
			start = p;
			break;
		}
	}
	if (!start) {
		char *q = first_line(out);
		err_setf(err, "fio printed no JSON: '%s'", q ? q : "");
		free(q);
		return -1;
	}
	json_tokener *tok = json_tokener_new();
	if (!tok) {
		err_setf(err, "out of memory");
		return -1;
	}
	size_t n = strlen(start);
	json_object *o = n <= INT32_MAX ? json_tokener_parse_ex(tok, start, (int)n) : NULL;
	enum json_tokener_error je = json_tokener_get_error(tok);
	json_tokener_free(tok);
	int rc = -1;
	json_object *jobs = NULL;
	if (!o) {
		err_setf(err, "fio JSON not understood: %s",
			je == json_tokener_continue ? "it ends early" : json_tokener_error_desc(je));
		return -1;
	}
	if (!json_object_object_get_ex(o, "jobs", &jobs) ||
	    !json_object_is_type(jobs, json_type_array) || json_object_array_length(jobs) == 0) {
		err_setf(err, "fio JSON has no \"jobs\"");
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(jobs); i++) {
		json_object *j = json_object_array_get_idx(jobs, i), *rd = NULL, *e = NULL;
		if (!json_object_is_type(j, json_type_object)) {
			err_setf(err, "fio JSON: jobs[%zu] is not an object", i);
			goto out;
		}
		if (json_object_object_get_ex(j, "error", &e) && json_object_get_int(e) != 0) {
			err_setf(err, "fio JSON: jobs[%zu] ended with error %d", i, json_object_get_int(e));
			goto out;
		}
		double v, bw;
		if (!json_object_object_get_ex(j, "read", &rd) ||
		    !json_object_is_type(rd, json_type_object) || !json_number(rd, "iops", &v) ||
		    !json_number(rd, "bw", &bw)) {
			err_setf(err, "fio JSON: jobs[%zu].read has no \"iops\" and \"bw\" numbers", i);
			goto out;
		}
		*iops += v;
		*bw_kib += bw;
	}
	rc = 0;
out:
	json_object_put(o);
	return rc;
}

/* ---- text output -------------------------------------------------------------- */

static void fmt_value(double v, char *buf, size_t n)
{
	int prec = v >= 100 ? 0 : v >= 10 ? 1 : v >= 1 ? 2 : 3;
	snprintf(buf, n, "%.*f", prec, v);
}

enum time_fmt { TF_TEXT, TF_MINUTE, TF_ISO };

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

static char *default_title(const struct bench_result *r, bool with_time)
{
	if (!with_time || r->ts <= 0)
		return strprintf("%s/%s", or_q(r->bus), or_q(r->nic));
	char when[32];
	fmt_time(r->ts, TF_MINUTE, when, sizeof when);
	return strprintf("%s/%s %s", or_q(r->bus), or_q(r->nic), when);
}

int bench_compare_table_titled(const struct bench_result *before, const char *title_before,
			       const struct bench_result *after, const char *title_after,
			       FILE *f)
{
	char *tb = title_before ? strdup(title_before) : default_title(before, false);
	char *ta = title_after ? strdup(title_after) : default_title(after, false);
	if (tb && ta && !title_before && !title_after && strcmp(tb, ta) == 0) {
		free(tb);
		free(ta);
		tb = default_title(before, true);
		ta = default_title(after, true);
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
	int bad = fprintf(f, "%-*s  %*s  %*s  %*s\n", w[0], "figure", w[1], tb, w[2], ta, w[3],
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

static json_object *figures_json(const struct bench_result *r)
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

static json_object *notes_json(const struct bench_result *r)
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
	bad |= jadd(o, "figures", figures_json(r)) < 0;
	bad |= jadd(o, "notes", notes_json(r)) < 0;
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
static int figures_from_json(json_object *a, const char *where, struct bench_result *r,
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

static int notes_from_json(json_object *a, const char *where, struct bench_result *r, char **err)
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
		if (add_note_str(r, json_object_get_string(s)) < 0) {
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
	if (figures_from_json(v, "$.figures", r, err) < 0)
		goto fail;
	if (json_object_object_get_ex(obj, "notes", &v) &&
	    notes_from_json(v, "$.notes", r, err) < 0)
		goto fail;
	return 0;
fail:
	bench_result_free(r);
	return -1;
}

/* ---- storage ------------------------------------------------------------------- */

char *bench_db_path(const char *state_dir)
{
	return store_path(state_dir);
}

/* The bench table lives in state.db (store.h), which creates and migrates
 * it. */
static int db_open(const char *path, struct store **st, sqlite3 **db, char **err)
{
	if (store_open(path, st, err) < 0)
		return -1;
	*db = store_db(*st);
	return 0;
}

int bench_store(const char *db_path, const char *guest, int vmid,
		const struct bench_result *res, char **err)
{
	if (!guest || !*guest) {
		err_setf(err, "bench_store: no guest name");
		return -1;
	}
	json_object *figs = figures_json(res), *notes = notes_json(res);
	struct store *store = NULL;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (!figs || !notes) {
		err_setf(err, "out of memory");
		goto out;
	}
	if (db_open(db_path, &store, &db, err) < 0)
		goto out;
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO bench(guest, vmid, ts, bus, nic, size_mib, figures, notes) "
			       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, guest, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, vmid) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 3, res->ts) != SQLITE_OK ||
	    (res->bus ? sqlite3_bind_text(st, 4, res->bus, -1, SQLITE_TRANSIENT)
		      : sqlite3_bind_null(st, 4)) != SQLITE_OK ||
	    (res->nic ? sqlite3_bind_text(st, 5, res->nic, -1, SQLITE_TRANSIENT)
		      : sqlite3_bind_null(st, 5)) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 6, res->size_mib) != SQLITE_OK ||
	    sqlite3_bind_text(st, 7, json_object_to_json_string_ext(figs, JSON_C_TO_STRING_PLAIN), -1,
			      SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_text(st, 8, json_object_to_json_string_ext(notes, JSON_C_TO_STRING_PLAIN), -1,
			      SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE) {
		err_setf(err, "%s: cannot store the result: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	store_close(store);
	json_object_put(figs);
	json_object_put(notes);
	return rc;
}

/* A JSON column of row id; NULL with *err when it does not parse. */
static json_object *column_json(sqlite3_stmt *st, int col, const char *db_path, long long id,
				const char *name, char **err)
{
	const char *text = (const char *)sqlite3_column_text(st, col);
	json_object *o = text ? json_tokener_parse(text) : NULL;
	if (!o)
		err_setf(err, "%s: bench row %lld: %s is not JSON", db_path, id, name);
	return o;
}

int bench_last(const char *db_path, const char *guest, int vmid, struct bench_result *res,
	       char **err)
{
	memset(res, 0, sizeof *res);
	if (access(db_path, F_OK) < 0) {
		if (errno == ENOENT)
			return 0;
		err_setf(err, "%s: %s", db_path, strerror(errno));
		return -1;
	}
	struct store *store = NULL;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	json_object *figs = NULL, *notes = NULL;
	int rc = -1;
	if (db_open(db_path, &store, &db, err) < 0)
		return -1;
	if (sqlite3_prepare_v2(db,
			       "SELECT id, ts, bus, nic, size_mib, figures, notes FROM bench "
			       "WHERE guest = ?1 AND vmid = ?2 ORDER BY ts DESC, id DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, guest, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, vmid) != SQLITE_OK) {
		err_setf(err, "%s: cannot query: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	int step = sqlite3_step(st);
	if (step == SQLITE_DONE) {
		rc = 0;
		goto out;
	}
	if (step != SQLITE_ROW) {
		err_setf(err, "%s: cannot query: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	long long id = sqlite3_column_int64(st, 0);
	res->ts = sqlite3_column_int64(st, 1);
	const char *bus = (const char *)sqlite3_column_text(st, 2);
	const char *nic = (const char *)sqlite3_column_text(st, 3);
	long long size = sqlite3_column_int64(st, 4);
	if (size < 0 || size > BENCH_MAX_SIZE_MIB) {
		err_setf(err, "%s: bench row %lld: size_mib %lld out of range", db_path, id, size);
		goto out;
	}
	res->size_mib = (unsigned)size;
	if ((bus && !(res->bus = strdup(bus))) || (nic && !(res->nic = strdup(nic)))) {
		err_setf(err, "out of memory");
		goto out;
	}
	char *where = strprintf("%s: bench row %lld: figures", db_path, id);
	figs = column_json(st, 5, db_path, id, "figures", err);
	int bad = !where || !figs || figures_from_json(figs, where, res, err) < 0;
	free(where);
	if (bad)
		goto out;
	where = strprintf("%s: bench row %lld: notes", db_path, id);
	notes = column_json(st, 6, db_path, id, "notes", err);
	bad = !where || !notes || notes_from_json(notes, where, res, err) < 0;
	free(where);
	if (bad)
		goto out;
	rc = 1;
out:
	sqlite3_finalize(st);
	store_close(store);
	json_object_put(figs);
	json_object_put(notes);
	if (rc < 1)
		bench_result_free(res);
	return rc;
}

/* ---- running ------------------------------------------------------------------- */

struct run {
	struct ssh_session *s;
	const struct bench_request *req;
	struct bench_result *res;
	char **err;
	enum os_family os;
	const char *dir;          /* without trailing '/' ("" for /) */
	const char *disk;         /* raw disk without /dev/, or NULL */
	long data_timeout_ms;
	unsigned fio_runtime_s;
	uint64_t bytes;           /* size in bytes */
	char count[24];           /* size in MiB as text */
	double baseline_s;        /* time of an empty command; < 0: not measured */
	bool broken;              /* the session failed: nothing more can run */
	char *tmpdir, *file;
};

static void emit(struct run *r, const char *step, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void emit(struct run *r, const char *step, const char *fmt, ...)
{
	if (!r->req->on_event)
		return;
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0)
		r->req->on_event(r->req->event_ctx, step, sbuf_str(&b));
	sbuf_free(&b);
}

/* A note in the result and as an event. */
static void note(struct run *r, const char *step, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note(struct run *r, const char *step, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0 && add_note_str(r->res, sbuf_str(&b)) == 0)
		emit(r, step, "note: %s", sbuf_str(&b));
	sbuf_free(&b);
}

static void fail(struct run *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(struct run *r, int code, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (r->err) {
		free(*r->err);
		*r->err = rc == 0 ? sbuf_steal(&b) : NULL;
	}
	sbuf_free(&b);
	r->res->exit_code = code;
}

/* Run a script (ssh_build_script: each %s an argument, quoted): 0 when
 * the command ran, whatever its exit status; -1 with *e otherwise (a
 * transport failure also marks the run broken). elapsed (may be NULL) gets
 * the wall time of the exec. */
static int exec_script(struct run *r, const char *script, const char *const *args,
		       long timeout_ms, struct ssh_result *out, double *elapsed,
		       struct ssh_error *e)
{
	memset(out, 0, sizeof *out);
	char *cmd = ssh_build_script(script, args);
	if (!cmd) {
		e->kind = SSH_ERR_IO;
		e->msg = strprintf("cannot build the command: %s", strerror(errno));
		return -1;
	}
	struct ssh_exec_opts xo = {.timeout_ms = timeout_ms};
	double t0 = pve_clock_now(NULL);
	int rc = ssh_exec_cmdline(r->s, cmd, &xo, out, e);
	double t1 = pve_clock_now(NULL);
	free(cmd);
	if (elapsed)
		*elapsed = t1 - t0;
	if (rc < 0) {
		if (e->kind != SSH_ERR_IO)
			r->broken = true;
		ssh_result_free(out);
		return -1;
	}
	return 0;
}

/* exec_script, failing the run with "STEP: SSH error". */
static int run_script(struct run *r, const char *step, const char *script,
		      const char *const *args, long timeout_ms, struct ssh_result *out,
		      double *elapsed)
{
	struct ssh_error e = {0};
	if (exec_script(r, script, args, timeout_ms, out, elapsed, &e) == 0)
		return 0;
	int code = ssh_error_exit_code(&e);
	fail(r, code ? code : 1, "%s: %s", step, ssh_error_str(&e));
	ssh_error_clear(&e);
	return -1;
}

/* A failed remote command: "STEP: WHAT failed (exit N): last line". */
static void fail_remote(struct run *r, const char *step, const char *what,
			const struct ssh_result *o)
{
	char *m = remote_msg(o);
	if (o->exit_signal)
		fail(r, 1, "%s: %s killed by signal %s: %s", step, what, o->exit_signal, m ? m : "");
	else
		fail(r, 1, "%s: %s failed (exit %d): %s", step, what, o->exit_status, m ? m : "");
	free(m);
}

/* The time of an empty command, measured twice, the shorter kept. */
static int baseline(struct run *r, const char *step, double *out)
{
	if (r->baseline_s < 0) {
		double best = -1;
		for (int i = 0; i < 2; i++) {
			struct ssh_result o;
			double t;
			if (run_script(r, step, "true", NULL, 0, &o, &t) < 0)
				return -1;
			ssh_result_free(&o);
			best = best < 0 || t < best ? t : best;
		}
		r->baseline_s = best;
	}
	*out = r->baseline_s;
	return 0;
}

/* Seconds of a copy: dd's own time if it printed one (and prefer_dd),
 * else the exec's wall time less the empty-command time. */
static int copy_seconds(struct run *r, const char *step, const struct bench_dd *dd,
			bool prefer_dd, double elapsed, double *secs)
{
	if (prefer_dd && dd->seconds > 0) {
		*secs = dd->seconds;
		return 0;
	}
	double base;
	if (baseline(r, step, &base) < 0)
		return -1;
	double s = elapsed - base;
	if (s < elapsed / 2) {
		note(r, step, "%s took %.3f s, hardly more than an empty SSH command (%.3f s): the "
			      "figure is rough; a larger --size gives a better one",
		     step, elapsed, base);
		s = s > 0 ? s : elapsed;
	}
	*secs = s > 1e-6 ? s : 1e-6;
	return 0;
}

static int prepare(struct run *r)
{
	char *tmpl = strprintf("%s/pvagent-bench.XXXXXX", r->dir);
	const char *args[] = {tmpl, NULL};
	struct ssh_result o;
	int rc = -1;
	if (!tmpl) {
		fail(r, 1, "prepare: out of memory");
		return -1;
	}
	if (run_script(r, "prepare", "mktemp -d %s", args, 0, &o, NULL) < 0)
		goto out;
	if (o.exit_status != 0) {
		char *m = remote_msg(&o);
		fail(r, 1, "prepare: cannot make a directory in %s (mktemp -d, exit %d): %s",
		     *r->dir ? r->dir : "/", o.exit_status, m ? m : "");
		free(m);
		goto free_out;
	}
	/* mktemp prints the path: the template with the X's replaced by
	 * letters and digits. */
	const char *p = sbuf_str(&o.out);
	size_t n = strlen(p);
	while (n && is_space(p[n - 1]))
		n--;
	size_t pre = strlen(tmpl) - strlen("XXXXXX");
	bool ok = n == strlen(tmpl) && memcmp(p, tmpl, pre) == 0;
	for (size_t i = pre; ok && i < n; i++)
		ok = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || is_digit(p[i]);
	if (!ok) {
		char *m = first_line(p);
		fail(r, 1, "prepare: mktemp -d printed '%s', not a directory like %s", m ? m : "",
		     tmpl);
		free(m);
		goto free_out;
	}
	r->tmpdir = strndup(p, n);
	r->file = r->tmpdir ? strprintf("%s/data", r->tmpdir) : NULL;
	if (!r->file) {
		fail(r, 1, "prepare: out of memory");
		goto free_out;
	}
	emit(r, "prepare", "test file %s (%u MiB)", r->file, r->res->size_mib);
	rc = 0;
free_out:
	ssh_result_free(&o);
out:
	free(tmpl);
	return rc;
}

/* Parse a copy's dd output and check its byte count. */
static int dd_result(struct run *r, const char *step, const struct ssh_result *o,
		     uint64_t want, bool exact, struct bench_dd *dd)
{
	char *perr = NULL;
	const char *text = o->err.len ? sbuf_str(&o->err) : sbuf_str(&o->out);
	if (bench_parse_dd(text, MIB, dd, &perr) < 0) {
		fail(r, 1, "%s: %s", step, perr ? perr : "dd output not understood");
		free(perr);
		return -1;
	}
	if ((exact && dd->bytes != want) || dd->bytes == 0) {
		fail(r, 1, "%s: dd copied %" PRIu64 " bytes, not %" PRIu64, step, dd->bytes, want);
		return -1;
	}
	return 0;
}

static int step_write(struct run *r)
{
	const char *args[] = {r->file, r->count, r->file, NULL};
	const char *script;
	if (r->os == OS_LINUX) {
		script = "LC_ALL=C dd if=/dev/zero of=%s bs=1048576 count=%s conv=fsync";
		args[2] = NULL;
	} else {
		script = "dd if=/dev/zero of=%s bs=1048576 count=%s && fsync %s";
	}
	struct ssh_result o;
	double elapsed;
	if (run_script(r, "write", script, args, r->data_timeout_ms, &o, &elapsed) < 0)
		return -1;
	int rc = -1;
	struct bench_dd dd;
	double secs;
	if (o.exit_status != 0) {
		fail_remote(r, "write", r->os == OS_LINUX ? "dd" : "dd && fsync", &o);
		goto out;
	}
	if (dd_result(r, "write", &o, r->bytes, true, &dd) < 0 ||
	    copy_seconds(r, "write", &dd, r->os == OS_LINUX, elapsed, &secs) < 0)
		goto out;
	double mbps = (double)dd.bytes / secs / 1e6;
	if (bench_add_figure(r->res, "seq_write_mbps", mbps) < 0) {
		fail(r, 1, "write: out of memory");
		goto out;
	}
	emit(r, "write", "sequential write: %.1f MB/s (%s MiB in %.2f s)", mbps, r->count, secs);
	rc = 0;
out:
	ssh_result_free(&o);
	return rc;
}

/* FreeBSD without a raw disk: may the file be read (larger than RAM)? 1
 * yes, 0 no (noted), -1 failure. */
static int file_beats_ram(struct run *r)
{
	struct ssh_result o;
	if (run_script(r, "read", "sysctl -n hw.physmem", NULL, 0, &o, NULL) < 0)
		return -1;
	const char *p = sbuf_str(&o.out), *end = p + strlen(p);
	p = skip_space(p, end);
	uint64_t mem = 0;
	bool ok = o.exit_status == 0 && parse_u64(&p, end, &mem) && skip_space(p, end) == end;
	int rc = 0;
	if (!ok) {
		char *m = remote_msg(&o);
		note(r, "read", "sequential read skipped: no raw disk device given, and the RAM size "
				"is unknown (sysctl -n hw.physmem: %s)", m ? m : "");
		free(m);
	} else if (r->bytes <= mem) {
		note(r, "read", "sequential read skipped: no raw disk device given, and the %s MiB "
				"file is not larger than RAM (%" PRIu64 " MiB), so FreeBSD would read it "
				"from its cache; name the disk, or use a --size above RAM",
		     r->count, (uint64_t)(mem / MIB));
	} else {
		rc = 1;
	}
	ssh_result_free(&o);
	return rc;
}

static int step_read(struct run *r)
{
	struct ssh_result o;
	char *dev = NULL;
	const char *src = r->file;
	if (r->os == OS_LINUX) {
		if (run_script(r, "read", "sync && echo 3 > /proc/sys/vm/drop_caches", NULL,
			       r->data_timeout_ms, &o, NULL) < 0)
			return -1;
		if (o.exit_status != 0) {
			char *m = remote_msg(&o);
			note(r, "read", "page cache not dropped (%s): the sequential read may be "
					"served from memory", m ? m : "");
			free(m);
		}
		ssh_result_free(&o);
	} else if (r->disk) {
		dev = strprintf("/dev/%s", r->disk);
		if (!dev) {
			fail(r, 1, "read: out of memory");
			return -1;
		}
		src = dev;
	} else {
		int rc = file_beats_ram(r);
		if (rc <= 0)
			return rc;
	}
	const char *args[] = {src, r->count, NULL};
	const char *script = r->os == OS_LINUX
				     ? "LC_ALL=C dd if=%s of=/dev/null bs=1048576 count=%s"
				     : "dd if=%s of=/dev/null bs=1048576 count=%s";
	double elapsed;
	int rc = -1;
	if (run_script(r, "read", script, args, r->data_timeout_ms, &o, &elapsed) < 0) {
		free(dev);
		return -1;
	}
	struct bench_dd dd;
	double secs;
	if (o.exit_status != 0) {
		fail_remote(r, "read", dev ? "dd of the raw disk" : "dd", &o);
		goto out;
	}
	if (dd_result(r, "read", &o, r->bytes, !dev, &dd) < 0 ||
	    copy_seconds(r, "read", &dd, true, elapsed, &secs) < 0)
		goto out;
	if (dev && dd.bytes < r->bytes)
		note(r, "read", "%s holds only %" PRIu64 " bytes: the read is shorter than %s MiB",
		     dev, dd.bytes, r->count);
	double mbps = (double)dd.bytes / secs / 1e6;
	if (bench_add_figure(r->res, "seq_read_mbps", mbps) < 0) {
		fail(r, 1, "read: out of memory");
		goto out;
	}
	emit(r, "read", "sequential read%s%s: %.1f MB/s (%.2f s)", dev ? " of " : "",
	     dev ? dev : "", mbps, secs);
	rc = 0;
out:
	ssh_result_free(&o);
	free(dev);
	return rc;
}

static int step_diskinfo(struct run *r)
{
	if (!r->disk) {
		note(r, "diskinfo", "diskinfo -c -t skipped: no raw disk device given");
		return 0;
	}
	char *dev = strprintf("/dev/%s", r->disk);
	if (!dev) {
		fail(r, 1, "diskinfo: out of memory");
		return -1;
	}
	const char *args[] = {dev, NULL};
	long t = r->data_timeout_ms > DISKINFO_MIN_TIMEOUT_MS ? r->data_timeout_ms
							      : DISKINFO_MIN_TIMEOUT_MS;
	struct ssh_result o;
	if (run_script(r, "diskinfo", "diskinfo -c -t %s", args, t, &o, NULL) < 0) {
		free(dev);
		return -1;
	}
	if (o.exit_status != 0) {
		char *m = remote_msg(&o);
		note(r, "diskinfo", "diskinfo -c -t %s failed (exit %d): %s", dev, o.exit_status,
		     m ? m : "");
		free(m);
	} else {
		struct bench_result tmp = {0};
		char *perr = NULL;
		if (bench_parse_diskinfo(sbuf_str(&o.out), &tmp, &perr) < 0) {
			note(r, "diskinfo", "%s", perr ? perr : "diskinfo output not understood");
		} else {
			for (size_t i = 0; i < tmp.n_figs; i++)
				if (bench_add_figure(r->res, tmp.figs[i].key, tmp.figs[i].value) < 0)
					note(r, "diskinfo", "out of memory");
			emit(r, "diskinfo", "diskinfo -c -t %s: %zu figures", dev, tmp.n_figs);
		}
		free(perr);
		bench_result_free(&tmp);
	}
	ssh_result_free(&o);
	free(dev);
	return 0;
}

/* fio splits --filename at ':'; a literal one is written "\:". */
static char *fio_filename_arg(const char *file)
{
	struct sbuf b = {0};
	int bad = sbuf_add(&b, "--filename=") < 0;
	for (const char *p = file; *p && !bad; p++)
		bad = (*p == ':' ? sbuf_add(&b, "\\:") : sbuf_addc(&b, *p)) < 0;
	if (bad) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

static bool mentions(const struct ssh_result *o, const char *what)
{
	return strstr(sbuf_str(&o->err), what) || strstr(sbuf_str(&o->out), what);
}

static int step_fio(struct run *r)
{
	struct ssh_result o;
	if (run_script(r, "fio", "fio --version", NULL, 0, &o, NULL) < 0)
		return -1;
	if (o.exit_status == 127 ||
	    (o.exit_status != 0 && (mentions(&o, "not found") || mentions(&o, "No such file")))) {
		ssh_result_free(&o);
		note(r, "fio", "fio not installed, random reads skipped");
		return 0;
	}
	if (o.exit_status != 0) {
		char *m = remote_msg(&o);
		note(r, "fio", "fio --version failed (exit %d): %s; random reads skipped",
		     o.exit_status, m ? m : "");
		free(m);
		ssh_result_free(&o);
		return 0;
	}
	char *ver = last_line_of(sbuf_str(&o.out));
	ssh_result_free(&o);
	char *fname = fio_filename_arg(r->file);
	char *size = strprintf("--size=%sM", r->count);
	char *rt = strprintf("--runtime=%u", r->fio_runtime_s);
	int rc = -1;
	if (!fname || !size || !rt) {
		fail(r, 1, "fio: out of memory");
		goto out;
	}
	const char *args[] = {fname, size, rt, NULL};
	long t = (long)r->fio_runtime_s * 1000 + FIO_EXTRA_TIMEOUT_MS;
	if (run_script(r, "fio",
		       "fio --name=rr %s --rw=randread --bs=4k %s %s --time_based --direct=1 "
		       "--output-format=json",
		       args, t, &o, NULL) < 0)
		goto out;
	rc = 0;
	if (o.exit_status != 0) {
		char *m = remote_msg(&o);
		if (mentions(&o, "output-format"))
			note(r, "fio", "%s cannot print JSON (--output-format needs fio 2.1 or "
				       "later), random reads skipped", ver ? ver : "fio");
		else
			note(r, "fio", "fio failed (exit %d): %s; random reads skipped",
			     o.exit_status, m ? m : "");
		free(m);
	} else {
		double iops, bw;
		char *perr = NULL;
		if (bench_parse_fio(sbuf_str(&o.out), &iops, &bw, &perr) < 0)
			note(r, "fio", "%s; random reads skipped", perr ? perr : "fio output not understood");
		else if (bench_add_figure(r->res, "rand_read_iops", iops) < 0) {
			fail(r, 1, "fio: out of memory");
			rc = -1;
		} else
			emit(r, "fio", "random 4 KiB reads: %.0f IOPS (%s)", iops, ver ? ver : "fio");
		free(perr);
	}
	ssh_result_free(&o);
out:
	free(ver);
	free(fname);
	free(size);
	free(rt);
	return rc;
}

/* Remove the test file and directory. 0 done; -1 not done (the message
 * of a failed run is extended, or the run fails with exit 3). */
static int cleanup(struct run *r, bool failed)
{
	if (!r->tmpdir)
		return 0;
	char *why = NULL;
	if (r->broken) {
		why = strdup("the connection failed");
	} else {
		struct ssh_result o;
		struct ssh_error e = {0};
		const char *args[] = {r->file, r->tmpdir, NULL};
		if (exec_script(r, "rm -f %s && rmdir %s", args, 0, &o, NULL, &e) < 0) {
			why = strdup(ssh_error_str(&e));
			ssh_error_clear(&e);
		} else if (o.exit_status != 0) {
			why = remote_msg(&o);
			ssh_result_free(&o);
		} else {
			ssh_result_free(&o);
			emit(r, "cleanup", "removed %s", r->tmpdir);
			return 0;
		}
	}
	if (failed) {
		char *old = r->err ? *r->err : NULL;
		if (r->err) {
			*r->err = strprintf("%s; and %s is left on the guest (%s): remove it with "
					    "rm -rf %s", old ? old : "bench failed", r->tmpdir,
					    why ? why : "", r->tmpdir);
			free(old);
		}
	} else {
		fail(r, 3, "cleanup: %s is left on the guest (%s): remove it with rm -rf %s",
		     r->tmpdir, why ? why : "", r->tmpdir);
	}
	free(why);
	return -1;
}

static bool valid_dir(const char *d)
{
	if (d[0] != '/' || strlen(d) > 3000)
		return false;
	for (const unsigned char *p = (const unsigned char *)d; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static bool valid_disk(const char *d)
{
	if (!*d || *d == '/' || strlen(d) > 64 || strstr(d, ".."))
		return false;
	for (const char *p = d; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || is_digit(*p) ||
		      *p == '.' || *p == '_' || *p == '-' || *p == '/'))
			return false;
	return true;
}

int bench_run(struct ssh_session *s, const struct bench_request *req, struct bench_result *res,
	      char **err)
{
	memset(res, 0, sizeof *res);
	struct run r = {.s = s, .req = req, .res = res, .err = err, .os = req->os,
			.baseline_s = -1};
	unsigned size = req->size_mib ? req->size_mib : BENCH_DEFAULT_SIZE_MIB;
	res->size_mib = size;
	res->bus = strdup(req->bus ? req->bus : "?");
	res->nic = strdup(req->nic ? req->nic : "?");
	char *dir = strdup(req->dir ? req->dir : BENCH_DEFAULT_DIR);
	if (!res->bus || !res->nic || !dir) {
		fail(&r, 1, "bench: out of memory");
		free(dir);
		return -1;
	}
	size_t dl = strlen(dir);
	while (dl > 0 && dir[dl - 1] == '/')
		dir[--dl] = '\0';
	r.dir = dir;
	const char *disk = req->raw_disk;
	if (disk && strncmp(disk, "/dev/", 5) == 0)
		disk += 5;
	bool ok = false;
	if (req->os != OS_FREEBSD && req->os != OS_LINUX)
		fail(&r, 2, "bench: the guest OS is not known (FreeBSD or Linux)");
	else if (size > BENCH_MAX_SIZE_MIB)
		fail(&r, 2, "bench: --size %u MiB is more than %u MiB", size, BENCH_MAX_SIZE_MIB);
	else if (!valid_dir(req->dir ? req->dir : BENCH_DEFAULT_DIR))
		fail(&r, 2, "bench: the test directory must be an absolute path without control "
			    "characters");
	else if (disk && req->os == OS_FREEBSD && !valid_disk(disk))
		fail(&r, 2, "bench: '%s' is not a disk device name (like ad0, vtbd0 or da0)",
		     req->raw_disk);
	else
		ok = true;
	if (!ok) {
		free(dir);
		return -1;
	}
	r.disk = req->os == OS_FREEBSD ? disk : NULL;
	r.bytes = (uint64_t)size * MIB;
	snprintf(r.count, sizeof r.count, "%u", size);
	r.data_timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : 60000L + (long)size * 1000L;
	r.fio_runtime_s = req->fio_runtime_s ? req->fio_runtime_s : BENCH_DEFAULT_FIO_RUNTIME_S;
	if (r.fio_runtime_s > FIO_MAX_RUNTIME_S)
		r.fio_runtime_s = FIO_MAX_RUNTIME_S;

	int rc = -1;
	if (prepare(&r) == 0 && step_write(&r) == 0 && step_read(&r) == 0 &&
	    (r.os != OS_FREEBSD || step_diskinfo(&r) == 0) && step_fio(&r) == 0)
		rc = 0;
	if (cleanup(&r, rc < 0) < 0)
		rc = -1;
	if (rc == 0) {
		res->ts = (long long)time(NULL);
		res->exit_code = 0;
	}
	free(r.tmpdir);
	free(r.file);
	free(dir);
	return rc;
}
