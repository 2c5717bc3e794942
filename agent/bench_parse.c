/* bench_parse.c - the parsers of what the benchmark's commands print (see
 * bench.h): dd's records and summary, FreeBSD diskinfo -c -t, fio's JSON,
 * and the scanning of remote output they share with bench.c (numbers,
 * lines, the message line of a failed command; bench_int.h). Pure. */
#include "bench_int.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MSG_MAX 300

/* ---- scanning remote output ------------------------------------------------ */

bool benchi_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

bool benchi_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

const char *benchi_skip_space(const char *p, const char *end)
{
	while (p < end && benchi_is_space(*p))
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
bool benchi_parse_u64(const char **p, const char *end, uint64_t *v)
{
	const char *q = *p;
	uint64_t n = 0;
	if (q >= end || !benchi_is_digit(*q))
		return false;
	for (; q < end && benchi_is_digit(*q); q++) {
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
	if (q >= end || !benchi_is_digit(*q))
		return false;
	while (q < end && benchi_is_digit(*q))
		q++;
	if (q < end && *q == '.')
		for (q++; q < end && benchi_is_digit(*q); q++)
			;
	if (q < end && (*q == 'e' || *q == 'E')) {
		const char *x = q + 1;
		if (x < end && (*x == '-' || *x == '+'))
			x++;
		if (x < end && benchi_is_digit(*x)) {
			while (x < end && benchi_is_digit(*x))
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
	line = benchi_skip_space(line, end);
	while (end > line && benchi_is_space(end[-1]))
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
char *benchi_first_line(const char *text)
{
	const char *p = text, *end = text + strlen(text), *line;
	size_t len;
	while (next_line(&p, end, &line, &len)) {
		const char *q = benchi_skip_space(line, line + len);
		if (q < line + len)
			return quote_line(line, len);
	}
	return strdup("(empty)");
}

/* The last non-empty line of text, for messages. */
char *benchi_last_line_of(const char *text)
{
	const char *p = text, *end = text + strlen(text), *line, *best = NULL;
	size_t len, best_len = 0;
	while (next_line(&p, end, &line, &len)) {
		if (benchi_skip_space(line, line + len) < line + len) {
			best = line;
			best_len = len;
		}
	}
	return best ? quote_line(best, best_len) : NULL;
}

/* The last non-empty line of a command's stderr, else of its stdout. */
char *benchi_remote_msg(const struct ssh_result *o)
{
	char *m = benchi_last_line_of(sbuf_str(&o->err));
	if (!m)
		m = benchi_last_line_of(sbuf_str(&o->out));
	return m ? m : strdup("no output");
}

/* ---- parsers ------------------------------------------------------------------ */

/* "N+M records in|out" */
static bool dd_records(const char *p, const char *end, uint64_t *full, uint64_t *part,
		       bool *out)
{
	if (!benchi_parse_u64(&p, end, full) || p >= end || *p != '+')
		return false;
	p++;
	if (!benchi_parse_u64(&p, end, part) || !starts_with(p, end, " records "))
		return false;
	p += strlen(" records ");
	const char *w = p;
	while (p < end && !benchi_is_space(*p))
		p++;
	if (benchi_skip_space(p, end) != end)
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
	/* GNU: "1 byte copied" */
	if (!benchi_parse_u64(&p, end, &b) || !starts_with(p, end, " byte"))
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
	while (p < end && (*p == ',' || benchi_is_space(*p)))
		p++;
	if (starts_with(p, end, "in "))
		p = benchi_skip_space(p + 3, end);
	double s;
	if (!parse_num(&p, end, &s))
		return -1;
	p = benchi_skip_space(p, end);
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
		const char *l = benchi_skip_space(line, line + len);
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
		char *q = benchi_first_line(out);
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
	const char *q = benchi_skip_space(eq + 1, end);
	if (!parse_num(&q, end, v))
		return false;
	q = benchi_skip_space(q, end);
	if (!starts_with(q, end, unit))
		return false;
	return benchi_skip_space(q + strlen(unit), end) == end;
}

int bench_parse_diskinfo(const char *out, struct bench_result *r, char **err)
{
	enum { NONE, SEEK, TRANSFER } sect = NONE;
	const char *p = out, *end = out + strlen(out), *line;
	size_t len, found = 0;
	while (next_line(&p, end, &line, &len)) {
		const char *l = benchi_skip_space(line, line + len);
		const char *le = line + len;
		while (le > l && benchi_is_space(le[-1]))
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
		char *q = benchi_first_line(out);
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
		char *q = benchi_first_line(out);
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
