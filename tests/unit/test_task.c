/* test_task.c - Criterion tests for agent/task.*: UPID parse/format, task
 * log line parsing (clone/mirror percentages, migration progress, downtime,
 * duration, warnings), sizes, the poll schedule (plain and brought forward
 * by progress, driven by made-up times: nothing sleeps) and exit statuses. The
 * task_wait() tests against the simulator are in test_pve.c. */
#include "task.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

Test(upid, parse_and_format_roundtrip)
{
	const char *s = "UPID:pve1:000A1B2C:0123ABCD:65F0A1B2:qmclone:9000:root@pam!pvagent:";
	struct task_upid u;
	cr_assert_eq(task_upid_parse(s, &u), 0);
	cr_expect_str_eq(u.node, "pve1");
	cr_expect_eq(u.pid, 0xA1B2CUL);
	cr_expect_eq(u.pstart, 0x0123ABCDUL);
	cr_expect_eq(u.starttime, 0x65F0A1B2LL);
	cr_expect_str_eq(u.type, "qmclone");
	cr_expect_str_eq(u.id, "9000");
	cr_expect_str_eq(u.user, "root@pam!pvagent");
	char *f = task_upid_format(&u);
	cr_assert_not_null(f);
	cr_expect_str_eq(f, s);
	free(f);
	task_upid_free(&u);
}

Test(upid, nine_digit_pstart_and_empty_id)
{
	struct task_upid u;
	const char *s = "UPID:node-2:00001234:1ABCDEF01:65F0A1B2:vzdump::root@pam:";
	cr_assert_eq(task_upid_parse(s, &u), 0);
	cr_expect_eq(u.pstart, 0x1ABCDEF01UL);
	cr_expect_str_eq(u.id, "");
	cr_expect_str_eq(u.node, "node-2");
	char *f = task_upid_format(&u);
	cr_expect_str_eq(f, s);
	free(f);
	task_upid_free(&u);
}

Test(upid, rejects_malformed)
{
	static const char *bad[] = {
		"",
		"UPID",
		"upid:pve1:000A1B2C:0123ABCD:65F0A1B2:qmclone:9000:root@pam:",
		"UPID:pve1:000A1B2C:0123ABCD:65F0A1B2:qmclone:9000:root@pam",   /* no final ':' */
		"UPID:pve1:A1B2C:0123ABCD:65F0A1B2:qmclone:9000:root@pam:",     /* pid 5 digits */
		"UPID:pve1:000A1B2C:0123ABCDEF:65F0A1B2:qmclone:9000:root@pam:", /* pstart 10 */
		"UPID:pve1:000A1B2G:0123ABCD:65F0A1B2:qmclone:9000:root@pam:",  /* not hex */
		"UPID:-pve1:000A1B2C:0123ABCD:65F0A1B2:qmclone:9000:root@pam:", /* node */
		"UPID:pve1:000A1B2C:0123ABCD:65F0A1B2::9000:root@pam:",         /* no type */
		"UPID:pve1:000A1B2C:0123ABCD:65F0A1B2:qmclone:9000::",          /* no user */
		"UPID:pve1:000A1B2C:0123ABCD:65F0A1B2:qm clone:9000:root@pam:", /* space */
		"UPID:pve1:000A1B2C:0123ABCD:65F0A1B2:qmclone:9000:root@pam:x:",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct task_upid u = {0};
		cr_expect_eq(task_upid_parse(bad[i], &u), -1, "accepted %s", bad[i]);
		cr_expect_null(u.node);
	}
	struct task_upid u = {0};
	cr_expect_eq(task_upid_parse(NULL, &u), -1);
}

Test(tasklog, sizes)
{
	double b = 0;
	const char *e = NULL;
	cr_assert_eq(task_parse_size("1.5 GiB rest", &b, &e), 0);
	cr_expect_float_eq(b, 1.5 * 1073741824.0, 1);
	cr_expect_str_eq(e, " rest");
	cr_assert_eq(task_parse_size("512 B", &b, NULL), 0);
	cr_expect_float_eq(b, 512, 0.001);
	cr_assert_eq(task_parse_size("245.4 MiB", &b, NULL), 0);
	cr_expect_float_eq(b, 245.4 * 1048576, 1);
	cr_assert_eq(task_parse_size("2 TiB", &b, NULL), 0);
	cr_assert_eq(task_parse_size("3 MB", &b, NULL), 0);
	cr_expect_float_eq(b, 3e6, 0.001);
	cr_expect_eq(task_parse_size("GiB", &b, NULL), -1);
	cr_expect_eq(task_parse_size("12 parsecs", &b, NULL), -1);
	cr_expect_eq(task_parse_size("12 Bogus", &b, NULL), -1);
}

Test(tasklog, clone_and_mirror_percentages)
{
	struct task_progress p;
	cr_assert_eq(task_parse_line("transferred 1.0 GiB of 32.0 GiB (3.12%)", &p),
		     TASK_LINE_TRANSFER);
	cr_expect_float_eq(p.percent, 3.12, 1e-9);
	cr_expect_float_eq(p.transferred, 1073741824.0, 1);
	cr_expect_float_eq(p.total, 32.0 * 1073741824.0, 1);
	cr_assert_eq(task_parse_line("drive-scsi0: transferred 8.0 GiB of 8.0 GiB (100.00%) in 41s, ready",
				     &p),
		     TASK_LINE_TRANSFER);
	cr_expect_float_eq(p.percent, 100.0, 1e-9);
	cr_assert_eq(task_parse_line("transferred 0.0 B of 2.2 GiB (0.00%)", &p), TASK_LINE_TRANSFER);
	cr_expect_float_eq(p.percent, 0.0, 1e-9);
	cr_expect_eq(task_parse_line("transferred something else", &p), TASK_LINE_OTHER);
	cr_expect_float_eq(p.percent, -1, 1e-9);
}

Test(tasklog, migration_lines)
{
	struct task_progress p;
	cr_assert_eq(task_parse_line("2024-05-01 10:00:03 migration active, transferred 512.0 MiB of "
				     "2.0 GiB VM-state, 112.0 MiB/s",
				     &p),
		     TASK_LINE_MIGRATION);
	cr_expect_float_eq(p.percent, 25.0, 1e-6);
	cr_assert_eq(task_parse_line("2024-05-01 10:00:09 average migration speed: 457.0 MiB/s - "
				     "downtime 73 ms",
				     &p),
		     TASK_LINE_DOWNTIME);
	cr_expect_eq(p.downtime_ms, 73);
	/* Older PVE wording. */
	cr_assert_eq(task_parse_line("Jan 01 10:00:00 migration speed: 256.00 MB/s - downtime 57 ms",
				     &p),
		     TASK_LINE_DOWNTIME);
	cr_expect_eq(p.downtime_ms, 57);
	/* The configured limit is not the measured downtime. */
	cr_expect_eq(task_parse_line("2024-05-01 10:00:00 migration downtime limit: 100 ms", &p),
		     TASK_LINE_OTHER);
	cr_expect_eq(p.downtime_ms, -1);
	cr_assert_eq(task_parse_line("2024-05-01 10:00:10 migration finished successfully "
				     "(duration 01:02:03)",
				     &p),
		     TASK_LINE_FINISHED);
	cr_expect_eq(p.duration_s, 3723);
	cr_expect_float_eq(p.percent, 100, 1e-9);
	/* Dirty pages resent: never above 100 %. */
	cr_assert_eq(task_parse_line("migration active, transferred 3.0 GiB of 2.0 GiB VM-state, 1 MiB/s",
				     &p),
		     TASK_LINE_MIGRATION);
	cr_expect_float_eq(p.percent, 100, 1e-9);
}

Test(tasklog, warnings_and_other)
{
	struct task_progress p;
	cr_expect_eq(task_parse_line("WARN: no efidisk configured! Using temporary efivars disk.", &p),
		     TASK_LINE_WARNING);
	cr_expect_eq(task_parse_line("2024-05-01 10:00:00 WARNING: conntrack state migration not "
				     "supported or disabled",
				     &p),
		     TASK_LINE_WARNING);
	cr_expect_eq(task_parse_line("TASK OK", &p), TASK_LINE_OTHER);
	cr_expect_eq(task_parse_line("", &p), TASK_LINE_OTHER);
	cr_expect_eq(task_parse_line(NULL, &p), TASK_LINE_OTHER);
}

Test(task, poll_schedule)
{
	const double want[] = {0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0};
	for (unsigned i = 0; i < sizeof want / sizeof *want; i++)
		cr_expect_float_eq(task_poll_delay(i), want[i], 1e-9, "delay %u", i);
	cr_expect_float_eq(task_poll_delay(1000000), 1.0, 1e-9);
}

/* A task seen through task_sched with first 0.1 s and max 1 s: it ends at
 * `end`; its log gets a progress line every `step` seconds from 0 to `xfer`
 * (percent 100 t / xfer), none after `stall` (< 0: no stall). Each status
 * poll that finds it running reads the new lines. Every delay must lie in
 * [0.1, 1]. Records the poll times in at[] and returns their number (the
 * last one saw the end, unless max_polls ran out). */
static unsigned follow(double end, double step, double xfer, double stall, double *at,
		       unsigned max_polls)
{
	struct task_sched s;
	task_sched_init(&s, 0.1, 1.0);
	double t = 0, last = 0;
	unsigned n = 0;
	long nlines = (long)(xfer / step + 0.5);
	while (n < max_polls) {
		double d = task_sched_next(&s, t);
		cr_assert(d >= 0.1 - 1e-9 && d <= 1.0 + 1e-9, "delay %f at %f", d, t);
		t += d;
		at[n++] = t;
		if (t >= end)
			break;
		unsigned k = 0;
		double pct = -1;
		for (long i = 0; i <= nlines; i++) {
			double lt = (double)i * step;
			if (lt > last && lt <= t && (stall < 0 || lt <= stall)) {
				k++;
				pct = 100.0 * lt / xfer;
			}
		}
		/* the line at 0 counts as written just after the wait began */
		if (last == 0 && k == 0 && t > 0) {
			k = 1;
			pct = 0;
		}
		task_sched_progress(&s, t, k, pct);
		last = t;
	}
	return n;
}

Test(task, sched_without_progress_doubles)
{
	const double want[] = {0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0};
	struct task_sched s;
	task_sched_init(&s, 0, 0); /* defaults: 0.1 and 1 */
	double t = 0;
	for (unsigned i = 0; i < sizeof want / sizeof *want; i++) {
		double d = task_sched_next(&s, t);
		cr_expect_float_eq(d, want[i], 1e-9, "delay %u = %f", i, d);
		t += d;
		/* no lines, or only 0%: nothing to estimate from */
		task_sched_progress(&s, t, i % 2 ? 0 : 1, i % 2 ? 50.0 : 0.0);
	}
	/* scaled: first 0.5, max 3 */
	const double want2[] = {0.5, 1.0, 2.0, 3.0, 3.0};
	task_sched_init(&s, 0.5, 3);
	for (unsigned i = 0; i < sizeof want2 / sizeof *want2; i++) {
		double d = task_sched_next(&s, 0);
		cr_expect_float_eq(d, want2[i], 1e-9, "delay %u = %f", i, d);
	}
}

Test(task, sched_half_after_one_second_polls_just_after_two)
{
	/* 50% after 1 s, a line per 1% (0.02 s): the plain schedule polls at
	 * 0.1, 0.3, 0.7 and 1.5 s (75%), and the next poll comes just after
	 * 2 s instead of at 2.5 s. */
	struct task_sched s;
	task_sched_init(&s, 0.1, 1.0);
	const double polls[] = {0.1, 0.3, 0.7, 1.5};
	const unsigned lines[] = {6, 10, 20, 40};
	const double pct[] = {5, 15, 35, 75};
	double t = 0;
	for (unsigned i = 0; i < 4; i++) {
		t += task_sched_next(&s, t);
		cr_expect_float_eq(t, polls[i], 1e-9, "poll %u at %f", i, t);
		task_sched_progress(&s, t, lines[i], pct[i]);
	}
	double next = t + task_sched_next(&s, t);
	cr_expect(next > 2.0 && next <= 2.05, "next poll at %f", next);

	/* A 2 s copy with a line per 1% (qemu-img): the end is seen within
	 * 0.1 s with no more polls than the plain schedule (0.1 0.3 0.7 1.5
	 * 2.5) makes. */
	double at[64];
	unsigned n = follow(2.0, 0.02, 2.0, -1, at, 64);
	cr_expect(at[n - 1] >= 2.0 && at[n - 1] <= 2.1, "end seen at %f", at[n - 1]);
	cr_expect_leq(n, 5);
	cr_expect_float_eq(at[0], 0.1, 1e-9, "the first poll stays at 0.1 s");

	/* A line per second (drive-mirror, the simulator): 50% is seen at
	 * 1.5 s having been written some time after 0.7 s; the end is still
	 * seen before the 2.5 s of the plain schedule, with as many polls. */
	n = follow(2.0, 1.0, 2.0, -1, at, 64);
	cr_expect(at[n - 1] >= 2.0 && at[n - 1] <= 2.3, "end seen at %f", at[n - 1]);
	cr_expect_leq(n, 5);

	/* A 20 s copy with a line per second: seen within 0.3 s. */
	n = follow(20.0, 1.0, 20.0, -1, at, 64);
	cr_expect(at[n - 1] >= 20.0 && at[n - 1] <= 20.3, "end seen at %f", at[n - 1]);
}

Test(task, sched_follows_the_tail_after_the_copy)
{
	/* The copy (a line every 0.1 s) is done at 1.7 s, the task ends at
	 * 2.0 s (PVE writes the config and drops the lock): the poll at the
	 * estimated end finds it running and the quick schedule restarts, so
	 * the end is seen before the plain schedule's 2.5 s poll. */
	double at[64];
	unsigned n = follow(2.0, 0.1, 1.7, -1, at, 64);
	cr_expect(at[n - 1] >= 2.0 && at[n - 1] < 2.45, "end seen at %f", at[n - 1]);
	cr_expect_leq(n, 8, "%u polls", n);
}

Test(task, sched_stalled_task_falls_back_to_max)
{
	/* The copy stops at 50% after 1 s and the task runs on for a minute:
	 * past the estimated end (about 2 s) only the plain schedule is left,
	 * a poll a second. */
	double at[256];
	unsigned n = follow(60.0, 0.02, 2.0, 1.0, at, 256);
	cr_assert_lt(n, 256);
	cr_expect_geq(at[n - 1], 60.0);
	unsigned ones = 0;
	for (unsigned i = 1; i < n; i++) {
		double d = at[i] - at[i - 1];
		if (at[i - 1] >= 5.0) {
			cr_expect_float_eq(d, 1.0, 1e-9, "delay %f at %f", d, at[i - 1]);
			ones++;
		}
	}
	cr_expect_geq(ones, 50);
	cr_expect_leq(n, 70);
}

Test(task, sched_bogus_percentages)
{
	struct task_sched s;
	double d;
	/* A percentage at time 0 (no time passed): no rate, no estimate. */
	task_sched_init(&s, 0.1, 1.0);
	task_sched_progress(&s, 0, 3, 50.0);
	d = task_sched_next(&s, 0);
	cr_expect_float_eq(d, 0.1, 1e-9);

	/* Negative and NaN are ignored; the plain schedule goes on. */
	task_sched_init(&s, 0.1, 1.0);
	d = task_sched_next(&s, 0);
	cr_expect_float_eq(d, 0.1, 1e-9);
	task_sched_progress(&s, 0.1, 1, -5.0);
	d = task_sched_next(&s, 0.1);
	cr_expect_float_eq(d, 0.2, 1e-9);
	task_sched_progress(&s, 0.3, 1, NAN);
	d = task_sched_next(&s, 0.3);
	cr_expect_float_eq(d, 0.4, 1e-9);

	/* Above 100 counts as 100: the end is now, already past for the next
	 * poll, which stays on the plain schedule. */
	task_sched_init(&s, 0.1, 1.0);
	d = task_sched_next(&s, 0);
	cr_expect_float_eq(d, 0.1, 1e-9);
	task_sched_progress(&s, 0.1, 1, 250.0);
	cr_expect_float_eq(s.best, 100.0, 1e-9);
	d = task_sched_next(&s, 0.1);
	cr_expect_float_eq(d, 0.2, 1e-9, "delay %f", d);

	/* A tiny percentage far into the task: an end far ahead, the plain
	 * schedule (never more than 1 s). */
	task_sched_init(&s, 0.1, 1.0);
	task_sched_progress(&s, 0.1, 1, 0.001);
	for (int i = 0; i < 10; i++) {
		d = task_sched_next(&s, 0.1);
		cr_expect(d >= 0.1 && d <= 1.0, "delay %f", d);
	}

	/* An estimated end just ahead: never sooner than first. */
	task_sched_init(&s, 0.5, 3.0);
	task_sched_progress(&s, 1.0, 100, 99.0);
	d = task_sched_next(&s, 1.0);
	cr_expect_float_eq(d, 0.5, 1e-9, "delay %f", d);

	/* Going backwards (the next disk): a new transfer, timed from the
	 * gap it began in, not an end in the past. */
	task_sched_init(&s, 0.1, 1.0);
	double t = 0;
	t += task_sched_next(&s, t); /* 0.1 */
	task_sched_progress(&s, t, 1, 0.0);
	t += task_sched_next(&s, t); /* 0.3 */
	task_sched_progress(&s, t, 1, 60.0);
	t += task_sched_next(&s, t);
	task_sched_progress(&s, t, 1, 100.0);
	t += task_sched_next(&s, t);
	task_sched_progress(&s, t, 1, 10.0); /* disk 2 at 10% */
	cr_expect_float_eq(s.best, 10.0, 1e-9);
	cr_expect_gt(s.end, t, "end %f now %f", s.end, t);
	for (int i = 0; i < 20; i++) {
		d = task_sched_next(&s, t);
		cr_expect(d >= 0.1 - 1e-9 && d <= 1.0 + 1e-9, "delay %f", d);
		t += d;
	}
	/* The same percentage again is no news. */
	double end = s.end;
	task_sched_progress(&s, t, 2, 10.0);
	cr_expect_float_eq(s.end, end, 1e-9);
}

Test(task, exit_status)
{
	int w = -1;
	cr_expect(task_exit_ok("OK", &w));
	cr_expect_eq(w, 0);
	cr_expect(task_exit_ok("WARNINGS: 3", &w));
	cr_expect_eq(w, 3);
	cr_expect_not(task_exit_ok("WARNINGS: x", &w));
	cr_expect_not(task_exit_ok("WARNINGS: 3 extra", &w));
	cr_expect_not(task_exit_ok("unable to create VM 100 - already exists", &w));
	cr_expect_not(task_exit_ok("", &w));
	cr_expect_not(task_exit_ok(NULL, &w));
	cr_expect_not(task_exit_ok("ok", NULL));
}
