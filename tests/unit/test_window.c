/* test_window.c - PVE calendar events (agent/calendar.c: the grammar of
 * PVE::CalendarEvent, next occurrences, bad input) and maintenance windows
 * (agent/window.c and [window] in conf.c: open now or next, the window
 * due next, errors naming file, line and key). Times in UTC. */
#include <criterion/criterion.h>

#include "calendar.h"
#include "conf.h"
#include "json.h"
#include "util.h"
#include "wf_drain.h"
#include "window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void utc(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
}

/* 2026-12-01 (a Tuesday) HH:MM:SS UTC */
static time_t at(int day, int h, int m, int s)
{
	struct tm t = {.tm_year = 126, .tm_mon = 11, .tm_mday = day, .tm_hour = h, .tm_min = m,
		       .tm_sec = s, .tm_isdst = 0};
	return timegm(&t);
}

static time_t next(const char *spec, time_t after)
{
	struct cal_event e;
	const char *why = NULL;
	cr_assert_eq(cal_parse(spec, &e, &why), 0, "'%s': %s", spec, why ? why : "?");
	time_t n = 0;
	cr_assert_eq(cal_next(&e, after, &n), 0, "'%s' never", spec);
	return n;
}

static void expect_next(const char *spec, time_t after, time_t want)
{
	time_t got = next(spec, after);
	char a[32], b[32];
	struct tm tg, tw;
	gmtime_r(&got, &tg);
	gmtime_r(&want, &tw);
	strftime(a, sizeof a, "%F %T %a", &tg);
	strftime(b, sizeof b, "%F %T %a", &tw);
	cr_expect_eq(got, want, "'%s': got %s, want %s", spec, a, b);
}

Test(calendar, pve_examples, .init = utc)
{
	time_t now = at(1, 10, 0, 0); /* Tue 2026-12-01 10:00 */
	expect_next("sun 02:00", now, at(6, 2, 0, 0));
	expect_next("mon..fri 22:30", now, at(1, 22, 30, 0));
	expect_next("mon..fri 09:30", now, at(2, 9, 30, 0));
	expect_next("*-*-01 03:00", now, at(1, 3, 0, 0) + (time_t)31 * 86400); /* 2027-01-01 */
	expect_next("sat,sun 12:00", now, at(5, 12, 0, 0));
	expect_next("daily", now, at(2, 0, 0, 0));
	expect_next("hourly", now, at(1, 11, 0, 0));
	expect_next("weekly", now, at(7, 0, 0, 0));
	expect_next("monthly", now, at(1, 0, 0, 0) + (time_t)31 * 86400);
	expect_next("*/15", now, at(1, 10, 15, 0));
	expect_next("30", now, at(1, 10, 30, 0));
	expect_next("8..18/4:00", now, at(1, 12, 0, 0));
	expect_next("sat *-1..7 15:00", now, at(5, 15, 0, 0)); /* the first Saturday */
	expect_next("2027-01-15 08:00", now, at(1, 8, 0, 0) + (time_t)45 * 86400);
	expect_next("10:00:30", now, at(1, 10, 0, 30));
	expect_next("tue", now, at(8, 0, 0, 0));
	expect_next("12,14:05", now, at(1, 12, 5, 0));
	/* strictly after */
	expect_next("10:00", now, at(2, 10, 0, 0));
}

Test(calendar, bad_input_says_why)
{
	const char *bad[] = {"",         "funday 02:00", "25:00",     "02:60",  "*-13-01",
			     "*-*-32",   "02:00 sun",    "mon..xyz",  "1:2:3:4", "*/0",
			     "5..3",     "02:00 03:00",  "1-2-3-4",   "abc-1"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct cal_event e;
		const char *why = NULL;
		cr_expect_eq(cal_parse(bad[i], &e, &why), -1, "'%s' was accepted", bad[i]);
		cr_expect_not_null(why, "'%s': no reason", bad[i]);
	}
	struct cal_event e;
	const char *why = NULL;
	cal_parse("sun 25:00", &e, &why);
	cr_expect_str_eq(why, "hours are 0-23 ('*', lists, ranges N..M, /STEP)");
	/* a date that never comes */
	cr_assert_eq(cal_parse("*-02-30", &e, &why), 0);
	time_t n;
	cr_expect_eq(cal_next(&e, at(1, 0, 0, 0), &n), -1);
}

/* ---- windows in pvagent.conf ---------------------------------------------------- */

static char dir[64];

static void setup(void)
{
	utc();
	strcpy(dir, "/tmp/test_window.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char *cmd = strprintf("rm -rf '%s'", dir);
	cr_assert_not_null(cmd);
	cr_expect_eq(system(cmd), 0);
	free(cmd);
}

static char *write_conf(const char *body)
{
	char *path = strprintf("%s/pvagent.conf", dir), *secret = strprintf("%s/secret", dir);
	cr_assert(path && secret);
	FILE *f = fopen(secret, "w");
	cr_assert_not_null(f);
	fputs("s3cret\n", f);
	fclose(f);
	cr_assert_eq(chmod(secret, 0600), 0);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "[pve]\nurl = https://127.0.0.1:8006\ntoken_id = root@pam!t\n"
		   "token_secret_file = %s\ninsecure = yes\n\n%s", secret, body);
	fclose(f);
	free(secret);
	return path;
}

Test(window, schedule_and_next, .init = setup, .fini = teardown)
{
	char *path = write_conf("[migrate]\nmax_workers = 3\n\n"
				"[window \"patch\"]\nnode = pve2\nschedule = sun 02:00\n"
				"duration = 2h\naction = drain\nto = pve1,pve3\n\n"
				"[window \"nightly\"]\nnode = pve3\nschedule = mon..fri 22:30\n"
				"duration = 90m\nmax_workers = 1\n\n"
				"[window \"old\"]\nnode = pve1\ndays = sat\nstart = 04:00\n"
				"duration = 1h\n");
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(path, &c, &err), 0, "%s", err ? err : "");
	cr_assert_eq(c.n_windows, 3);
	time_t s, e;
	cr_assert_eq(window_next(&c.windows[0], at(1, 10, 0, 0), &s, &e), 0);
	cr_expect_eq(s, at(6, 2, 0, 0));
	cr_expect_eq(e, at(6, 4, 0, 0));
	/* open now: its current occurrence */
	cr_assert_eq(window_next(&c.windows[0], at(6, 3, 0, 0), &s, &e), 0);
	cr_expect_eq(s, at(6, 2, 0, 0));
	/* days + start still work */
	cr_assert_eq(window_next(&c.windows[2], at(1, 10, 0, 0), &s, &e), 0);
	cr_expect_eq(s, at(5, 4, 0, 0));
	size_t i = 99;
	cr_assert_eq(window_next_due(&c, at(1, 10, 0, 0), &i, &s, &e), 0);
	cr_expect_eq(i, 1);
	cr_expect_eq(s, at(1, 22, 30, 0));
	cr_expect_eq(e, at(1, 22, 30, 0) + 5400);
	cr_assert_eq(window_next_due(&c, at(1, 23, 0, 0), &i, &s, &e), 0);
	cr_expect_eq(i, 1, "the open window is due now");
	cr_expect_eq(s, at(1, 22, 30, 0));
	json_object *p = window_drain_params(&c, &c.windows[0], e);
	long long k = 0;
	cr_expect(json_int(p, "max_workers", &k) && k == 3);
	json_object *to = NULL;
	cr_assert(json_object_object_get_ex(p, "to", &to));
	cr_expect_eq(json_object_array_length(to), 2);
	json_object_put(p);
	conf_free(&c);
	free(path);
}

Test(window, errors_name_file_line_key, .init = setup, .fini = teardown)
{
	char *path = write_conf("[window \"w\"]\nnode = pve2\nschedule = sun 25:00\nduration = 2h\n"
				"action = reboot\n\n"
				"[window \"x\"]\nnode = pve1\nduration = 1h\n");
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(path, &c, &err), 0, "%s", err ? err : "");
	err = c.windows_error ? strdup(c.windows_error) : NULL;
	conf_free(&c);
	cr_assert_not_null(err);
	char *want = strprintf("%s:9: [window \"w\"] schedule: 'sun 25:00': hours are 0-23", path);
	cr_expect(strstr(err, want), "%s", err);
	free(want);
	want = strprintf("%s:11: [window \"w\"] action: 'reboot'", path);
	cr_expect(strstr(err, want), "%s", err);
	free(want);
	cr_expect(strstr(err, "[window \"x\"] schedule: required"), "%s", err);
	free(err);
	free(path);
}
