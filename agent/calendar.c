/* calendar.c - PVE calendar events: parser and next occurrence
 * (calendar.h). */
#include "calendar.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const WD[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

static int weekday(const char *s, size_t n)
{
	for (int d = 0; d < 7; d++)
		if (n == 3 && strncasecmp(s, WD[d], 3) == 0)
			return d;
	return -1;
}

/* "mon..fri,sun" */
static int parse_weekdays(const char *s, size_t n, uint8_t *out, const char **why)
{
	*out = 0;
	const char *end = s + n;
	while (s < end) {
		const char *c = memchr(s, ',', (size_t)(end - s));
		const char *ie = c ? c : end;
		const char *dots = NULL;
		for (const char *p = s; p + 1 < ie; p++)
			if (p[0] == '.' && p[1] == '.') {
				dots = p;
				break;
			}
		int a = weekday(s, (size_t)((dots ? dots : ie) - s));
		int b = dots ? weekday(dots + 2, (size_t)(ie - dots - 2)) : a;
		if (a < 0 || b < 0) {
			*why = "weekdays are sun, mon, tue, wed, thu, fri, sat, in lists "
			       "(mon,wed) and ranges (mon..fri)";
			return -1;
		}
		for (int d = a;; d = (d + 1) % 7) {
			*out |= (uint8_t)(1u << d);
			if (d == b)
				break;
		}
		s = c ? c + 1 : end;
	}
	return 0;
}

static int number(const char *s, const char *end, int *v)
{
	if (s >= end || !isdigit((unsigned char)*s))
		return -1;
	long x = 0;
	for (; s < end; s++) {
		if (!isdigit((unsigned char)*s) || x > 100000)
			return -1;
		x = x * 10 + (*s - '0');
	}
	*v = (int)x;
	return 0;
}

/* One field: items separated by ','; an item is '*', N, N..M, each
 * optionally /STEP. Bits min..max into *bits. */
static int parse_field(const char *s, size_t n, int min, int max, uint64_t *bits,
		       const char **why, const char *what)
{
	*bits = 0;
	const char *end = s + n;
	if (s == end) {
		*why = what;
		return -1;
	}
	while (s < end) {
		const char *c = memchr(s, ',', (size_t)(end - s));
		const char *ie = c ? c : end;
		const char *slash = memchr(s, '/', (size_t)(ie - s));
		const char *be = slash ? slash : ie;
		int a = min, b = max, step = 1;
		const char *dots = NULL;
		for (const char *p = s; p + 1 < be; p++)
			if (p[0] == '.' && p[1] == '.') {
				dots = p;
				break;
			}
		if (be - s == 1 && *s == '*') {
			a = min;
			b = max;
		} else if (dots) {
			if (number(s, dots, &a) < 0 || number(dots + 2, be, &b) < 0 || a > b) {
				*why = what;
				return -1;
			}
		} else {
			if (number(s, be, &a) < 0) {
				*why = what;
				return -1;
			}
			b = slash ? max : a;
		}
		if (slash && (number(slash + 1, ie, &step) < 0 || step < 1)) {
			*why = what;
			return -1;
		}
		if (a < min || b > max) {
			*why = what;
			return -1;
		}
		for (int v = a; v <= b; v += step)
			*bits |= 1ull << v;
		s = c ? c + 1 : end;
	}
	return 0;
}

static int parse_year(const char *s, size_t n, struct cal_event *e, const char **why)
{
	static const char *bad = "years are '*', YYYY, YYYY..YYYY or YYYY/STEP";
	const char *end = s + n;
	if (n == 1 && *s == '*')
		return 0;
	const char *slash = memchr(s, '/', n), *be = slash ? slash : end;
	const char *dots = NULL;
	for (const char *p = s; p + 1 < be; p++)
		if (p[0] == '.' && p[1] == '.')
			dots = p;
	int a, b, step = 1;
	if (dots ? number(s, dots, &a) < 0 || number(dots + 2, be, &b) < 0
		 : number(s, be, &a) < 0) {
		*why = bad;
		return -1;
	}
	if (!dots)
		b = slash ? 9999 : a;
	if ((slash && (number(slash + 1, end, &step) < 0 || step < 1)) || a < 1970 || b > 9999 ||
	    a > b) {
		*why = bad;
		return -1;
	}
	e->year_from = a;
	e->year_to = b;
	e->year_step = step;
	return 0;
}

/* Split s[0..n) at sep into at most 3 parts; the number of parts (4:
 * more than 3). */
static size_t split3(const char *s, size_t n, char sep, const char *parts[3], size_t len[3])
{
	const char *end = s + n;
	size_t k = 0;
	for (const char *p = s;; k++) {
		const char *c = memchr(p, sep, (size_t)(end - p));
		if (k == 3)
			return 4;
		parts[k] = p;
		len[k] = (size_t)((c ? c : end) - p);
		if (!c)
			return k + 1;
		p = c + 1;
	}
}

static int parse_date(const char *s, size_t n, struct cal_event *e, const char **why)
{
	const char *parts[3];
	size_t len[3], k = split3(s, n, '-', parts, len);
	if (k < 2 || k > 3) {
		*why = "a date is [YEARS-]MONTHS-DAYS";
		return -1;
	}
	size_t m = k - 2;
	uint64_t bits;
	if (k == 3 && parse_year(parts[0], len[0], e, why) < 0)
		return -1;
	if (parse_field(parts[m], len[m], 1, 12, &bits, why, "months are 1-12 ('*', lists, "
							     "ranges N..M, /STEP)") < 0)
		return -1;
	e->months = (uint16_t)bits;
	if (parse_field(parts[m + 1], len[m + 1], 1, 31, &bits, why,
			"days are 1-31 ('*', lists, ranges N..M, /STEP)") < 0)
		return -1;
	e->days = (uint32_t)bits;
	return 0;
}

static int parse_time(const char *s, size_t n, struct cal_event *e, const char **why)
{
	const char *parts[3];
	size_t len[3], k = split3(s, n, ':', parts, len);
	if (k > 3) {
		*why = "a time is [HOURS:]MINUTES[:SECONDS]";
		return -1;
	}
	uint64_t bits;
	size_t mi = k == 1 ? 0 : 1;
	if (k >= 2) {
		if (parse_field(parts[0], len[0], 0, 23, &bits, why,
				"hours are 0-23 ('*', lists, ranges N..M, /STEP)") < 0)
			return -1;
		e->hours = (uint32_t)bits;
	}
	if (parse_field(parts[mi], len[mi], 0, 59, &e->minutes, why,
			"minutes are 0-59 ('*', lists, ranges N..M, /STEP)") < 0)
		return -1;
	if (k == 3 && parse_field(parts[2], len[2], 0, 59, &e->seconds, why,
				  "seconds are 0-59 ('*', lists, ranges N..M, /STEP)") < 0)
		return -1;
	return 0;
}

int cal_parse(const char *s, struct cal_event *out, const char **why)
{
	static const struct {
		const char *name, *is;
	} named[] = {
		{"minutely", "*:*"},
		{"hourly", "*:00"},
		{"daily", "*-*-* 00:00"},
		{"weekly", "mon *-*-* 00:00"},
		{"monthly", "*-*-01 00:00"},
		{"yearly", "*-01-01 00:00"},
		{"annually", "*-01-01 00:00"},
		{"quarterly", "*-01,04,07,10-01 00:00"},
		{"semiannually", "*-01,07-01 00:00"},
	};
	memset(out, 0, sizeof *out);
	*why = NULL;
	if (!s)
		s = "";
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	for (size_t i = 0; i < sizeof named / sizeof *named; i++)
		if (strlen(named[i].name) == n && strncasecmp(s, named[i].name, n) == 0)
			return cal_parse(named[i].is, out, why);
	if (!n) {
		*why = "empty schedule";
		return -1;
	}
	out->weekdays = 0x7f;
	out->months = 0x1ffe;
	out->days = 0xfffffffe;
	out->hours = 0xffffff;
	out->seconds = 1;
	bool have_wd = false, have_date = false, have_time = false;
	const char *end = s + n;
	for (const char *p = s; p < end;) {
		const char *t = p;
		while (t < end && !isspace((unsigned char)*t))
			t++;
		size_t l = (size_t)(t - p);
		if (isalpha((unsigned char)*p)) {
			if (have_wd || have_date || have_time) {
				*why = "weekdays come first: [WEEKDAYS] [DATE] [TIME]";
				return -1;
			}
			if (parse_weekdays(p, l, &out->weekdays, why) < 0)
				return -1;
			have_wd = true;
		} else if (memchr(p, '-', l)) {
			if (have_date || have_time) {
				*why = "the date comes before the time: [WEEKDAYS] [DATE] [TIME]";
				return -1;
			}
			if (parse_date(p, l, out, why) < 0)
				return -1;
			have_date = true;
		} else {
			if (have_time) {
				*why = "more than one time";
				return -1;
			}
			if (parse_time(p, l, out, why) < 0)
				return -1;
			have_time = true;
		}
		p = t;
		while (p < end && isspace((unsigned char)*p))
			p++;
	}
	if (!have_time) {
		out->hours = 1;
		out->minutes = 1;
	}
	return 0;
}

static bool year_ok(const struct cal_event *e, int y)
{
	if (!e->year_from)
		return true;
	return y >= e->year_from && y <= e->year_to && (y - e->year_from) % e->year_step == 0;
}

int cal_next(const struct cal_event *e, time_t after, time_t *next)
{
	time_t from = after + 1;
	struct tm t0;
	if (!localtime_r(&from, &t0))
		return -1;
	for (int day = 0; day < 366 * 10 + 3; day++) {
		struct tm d = t0;
		d.tm_mday += day;
		d.tm_hour = 12; /* normalise the date away from DST edges */
		d.tm_min = d.tm_sec = 0;
		d.tm_isdst = -1;
		time_t noon = mktime(&d);
		if (noon == (time_t)-1 || !localtime_r(&noon, &d))
			return -1;
		if (!year_ok(e, d.tm_year + 1900) || !(e->months & (1u << (d.tm_mon + 1))) ||
		    !(e->days & (1u << d.tm_mday)) || !(e->weekdays & (1u << d.tm_wday)))
			continue;
		bool first = day == 0;
		for (int h = first ? t0.tm_hour : 0; h < 24; h++) {
			if (!(e->hours & (1u << h)))
				continue;
			bool same_h = first && h == t0.tm_hour;
			for (int m = same_h ? t0.tm_min : 0; m < 60; m++) {
				if (!(e->minutes & (1ull << m)))
					continue;
				bool same_m = same_h && m == t0.tm_min;
				for (int s = same_m ? t0.tm_sec : 0; s < 60; s++) {
					if (!(e->seconds & (1ull << s)))
						continue;
					struct tm r = d;
					r.tm_hour = h;
					r.tm_min = m;
					r.tm_sec = s;
					r.tm_isdst = -1;
					time_t x = mktime(&r);
					if (x == (time_t)-1 || x <= after)
						continue; /* a time DST skipped or repeated */
					*next = x;
					return 0;
				}
			}
		}
	}
	return -1;
}
