/* test_task.c - Criterion tests for agent/task.*: UPID parse/format, task
 * log line parsing (clone/mirror percentages, migration progress, downtime,
 * duration, warnings), sizes, the request schedule (backing off without
 * progress, placed by the estimated end with it, never more requests than
 * polling each second; driven by made-up times: nothing sleeps) and exit
 * statuses. The task_wait() tests against the simulator are in test_pve.c. */
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
	cr_expect_float_eq(p.speed, 256e6, 1);
	cr_assert_eq(task_parse_line("2024-05-01 10:00:09 average migration speed: 457.0 MiB/s - "
				     "downtime 73 ms", &p),
		     TASK_LINE_DOWNTIME);
	cr_expect_float_eq(p.speed, 457.0 * 1048576, 1);
	cr_assert_eq(task_parse_line("2024-05-01 10:00:09 migration completed, transferred 2.0 GiB "
				     "VM-state", &p),
		     TASK_LINE_COMPLETED);
	cr_expect_float_eq(p.transferred, 2.0 * 1073741824, 1);
	/* OpenVZ on PVE 2.x/3.x */
	cr_assert_eq(task_parse_line("Nov 30 10:00:12 migration finished successfuly (duration "
				     "00:00:12)", &p),
		     TASK_LINE_FINISHED);
	cr_expect_eq(p.duration_s, 12);
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

/* A task seen through task_sched with the defaults (first 1 s, max 2 s):
 * its log gets a line at `lead`, then a progress line every copy / steps
 * seconds from lead to lead + copy (percent 100 i / steps), none after
 * `stall` (< 0: no stall); it ends tail seconds after the copy, or at
 * `end` when that is > 0. Each log read gets the lines written since the
 * previous one; a status poll gets nothing. Every delay must be at least
 * 0.15 s and request n must not come before n s. Records the request
 * times in at[] (may be NULL) and the status polls in *status; returns
 * the number of requests (the last one saw the end, unless max ran out). */
struct fake_task {
	double lead, copy, tail, stall, end;
	int steps;
};

static unsigned follow(const struct fake_task *ft, double *at, unsigned max, unsigned *status)
{
	struct task_sched s;
	task_sched_init(&s, 0, 0);
	double t = 0, last = 0;
	double end = ft->end > 0 ? ft->end : ft->lead + ft->copy + ft->tail;
	unsigned n = 0;
	if (status)
		*status = 0;
	while (n < max) {
		bool st = false;
		double d = task_sched_next(&s, t, &st);
		cr_assert(d >= 0.15 - 1e-9, "delay %f at %f", d, t);
		t += d;
		cr_assert(t >= n + 1 - 1e-9, "request %u at %f", n + 1, t);
		if (at)
			at[n] = t;
		n++;
		if (st && status)
			(*status)++;
		if (t >= end)
			break;
		if (st)
			continue;
		unsigned k = 0, prog = 0;
		double pct = -1;
		if (ft->lead > last && ft->lead <= t)
			k++;
		for (int i = 0; i <= ft->steps; i++) {
			double lt = ft->lead + ft->copy * i / ft->steps;
			if (lt > last && lt <= t && (ft->stall < 0 || lt <= ft->stall)) {
				k++;
				prog++;
				pct = 100.0 * i / ft->steps;
			}
		}
		task_sched_log(&s, t, k, prog, pct);
		last = t;
	}
	return n;
}

Test(task, sched_without_progress_backs_off_to_max)
{
	const double want[] = {1, 1, 2, 2, 2, 2};
	struct task_sched s;
	task_sched_init(&s, 0, 0); /* defaults: 1 and 2 */
	double t = 0;
	for (unsigned i = 0; i < sizeof want / sizeof *want; i++) {
		bool st = true;
		double d = task_sched_next(&s, t, &st);
		cr_expect_float_eq(d, want[i], 1e-9, "delay %u = %f", i, d);
		cr_expect_not(st, "a log that brings lines is read");
		t += d;
		/* lines, but none or only 0%: nothing to estimate from */
		task_sched_log(&s, t, 1, i % 2 ? 0 : 1, i % 2 ? 50.0 : 0.0);
	}
	/* scaled: first 0.5, max 3 */
	const double want2[] = {0.5, 0.5, 1.0, 2.0, 3.0, 3.0};
	task_sched_init(&s, 0.5, 3);
	t = 0;
	for (unsigned i = 0; i < sizeof want2 / sizeof *want2; i++) {
		bool st;
		double d = task_sched_next(&s, t, &st);
		cr_expect_float_eq(d, want2[i], 1e-9, "delay %u = %f", i, d);
		t += d;
		task_sched_log(&s, t, 1, 0, -1);
	}
}

Test(task, sched_never_more_requests_than_polling_each_second)
{
	/* Copies of 0.5 s to 2 minutes with the simulator's timing (0.2 s
	 * before, 0.3 s after, a line per 5% down to 1%): never more requests
	 * than a 1 s poller needs, and from 7 s on the end is seen within
	 * 0.15 s with far fewer (about 2 log2 of its length). */
	for (double copy = 0.5; copy <= 120; copy *= 1.07) {
		int steps = copy * 20 < 20 ? 20 : copy * 20 > 100 ? 100 : (int)(copy * 20);
		struct fake_task ft = {0.2, copy, 0.3, -1, 0, steps};
		double at[256];
		unsigned n = follow(&ft, at, 256, NULL);
		double end = copy + 0.5, seen = at[n - 1];
		cr_assert_geq(seen, end);
		cr_expect_leq(n, (unsigned)ceil(end), "%u requests for a %.2f s task", n, end);
		if (end >= 7) {
			cr_expect_leq(seen - end, 0.15, "%.2f s task seen %.3f s late", end,
				      seen - end);
			cr_expect_leq(n, 3 + 2 * log2(end), "%u requests for %.2f s", n, end);
		}
	}
}

Test(task, sched_the_bench_clones)
{
	/* The bench's 2.5 s clone (400 MiB at 200 MiB/s): one read for the
	 * rate at 1 s, one just after the end. */
	struct fake_task ft = {0.2, 2.0, 0.3, -1, 0, 40};
	double at[64];
	unsigned n = follow(&ft, at, 64, NULL);
	cr_expect_eq(n, 2, "%u requests", n);
	cr_expect_float_eq(at[0], 1.0, 1e-9, "the first read at 1 s");
	cr_expect(at[n - 1] >= 2.5 && at[n - 1] <= 2.6, "end seen at %f", at[n - 1]);

	/* Its 60 s clone: at most 0.25 requests per task second. */
	struct fake_task big = {0.2, 59.5, 0.3, -1, 0, 100};
	double at2[64];
	n = follow(&big, at2, 64, NULL);
	cr_expect_leq(n, 15, "%u requests", n);
	cr_expect(at2[n - 1] >= 60 && at2[n - 1] <= 60.15, "end seen at %f", at2[n - 1]);
}

Test(task, sched_stalled_task_backs_off_to_max)
{
	/* The copy stops at 50% after 2 s and the task runs on for a minute:
	 * past the estimated end the tail is followed, the gap growing to
	 * 2 s, no more. */
	struct fake_task ft = {0.2, 4.0, 0, 2.2, 60, 100};
	double at[256];
	unsigned n = follow(&ft, at, 256, NULL);
	cr_assert_lt(n, 256);
	cr_expect_geq(at[n - 1], 60.0);
	unsigned twos = 0;
	for (unsigned i = 1; i < n; i++) {
		double d = at[i] - at[i - 1];
		cr_expect_leq(d, 2.0 + 1e-9, "delay %f at %f", d, at[i - 1]);
		if (at[i - 1] >= 10.0 && d >= 2.0 - 1e-9)
			twos++;
	}
	cr_expect_geq(twos, 20);
	cr_expect_leq(n, 36, "%u requests", n);
}

Test(task, sched_silent_log_asks_the_status_every_other_time)
{
	/* No line at all for a minute (a worker killed before its last
	 * line): after 10 s every other request is a status poll. */
	struct fake_task ft = {100, 1, 0, -1, 60, 20};
	double at[64];
	unsigned st = 0;
	unsigned n = follow(&ft, at, 64, &st);
	cr_expect_geq(at[n - 1], 60.0);
	cr_expect(st >= n / 2 - 4 && st <= n / 2, "%u status polls of %u", st, n);
	/* A log that brings lines: never a status poll. */
	struct fake_task busy = {0.2, 30, 0.3, -1, 0, 100};
	follow(&busy, NULL, 64, &st);
	cr_expect_eq(st, 0);
}

Test(task, sched_attached_wait_needs_two_reads_for_a_rate)
{
	/* A wait that began while the task ran: the first read's 50% says
	 * nothing about the rate; the second gives it. */
	struct task_sched s;
	bool st;
	task_sched_init(&s, 0, 0);
	s.seg = -1;
	double t = task_sched_next(&s, 0, &st);
	task_sched_log(&s, t, 30, 30, 50.0);
	cr_expect_float_eq(s.end, -1, 1e-9);
	double d = task_sched_next(&s, t, &st);
	cr_expect_float_eq(d, 1.0, 1e-9);
	t += d;
	task_sched_log(&s, t, 5, 5, 60.0);
	cr_expect(s.end > t + 3 && s.end < t + 5, "end %f at %f", s.end, t);
}

/* Transfers one after another (disks, then the memory), each line of
 * each at its time; a read's lines as task_wait takes them: a drop within
 * or between reads restarts the transfer (task_sched_restart). Returns
 * how late the end was seen; *n the requests. */
static double follow_transfers(const double *secs, int nd, double ram, unsigned *n)
{
	struct task_sched s;
	task_sched_init(&s, 1, 2);
	double start[8], at = 1, t = 0, last = 0, lastp = -1;
	for (int i = 0; i < nd; i++) {
		start[i] = at;
		at += secs[i];
	}
	double ram0 = at, end = at + ram + 0.1;
	int steps = ram < 1 ? 1 : (int)ram;
	*n = 0;
	while (t < end && *n < 100000) {
		bool st;
		t += task_sched_next(&s, t, &st);
		(*n)++;
		if (t >= end || st)
			continue;
		unsigned k = 0;
		double pct = -1;
		bool drop = false;
		/* disk i's line j at start + secs * j / 100: j%; the memory's i/(steps + 1) */
		for (int i = 0; i <= nd; i++)
			for (int j = 1; j <= (i < nd ? 100 : steps); j++) {
				double lt = i < nd ? start[i] + secs[i] * j / 100 : ram0 + ram * j / steps;
				if (lt <= last || lt > t)
					continue;
				k++;
				pct = i < nd ? (double)j : 100.0 * j / (steps + 1);
				drop |= lastp >= 0 && pct < lastp;
				lastp = pct;
			}
		if (drop)
			task_sched_restart(&s);
		task_sched_log(&s, t, k, k, pct);
		last = t;
	}
	return t - end;
}

Test(task, sched_sees_the_end_of_transfers_one_after_another)
{
	/* 2,000 migrations (1 to 4 disks of 0.5 to 200 s, then 1 to 60 s of
	 * memory; a fixed sequence): each end seen within max (2 s) and a
	 * margin. A short disk after a long one was seen minutes late when a
	 * new transfer was timed from the previous read, and when a drop
	 * within one read was not seen (its last percentage rose). */
	unsigned long seed = 7, reqs = 0;
	double worst = 0;
	for (int it = 0; it < 2000; it++) {
		double secs[4];
		seed = seed * 6364136223846793005UL + 1442695040888963407UL;
		int nd = 1 + (int)((seed >> 33) % 4);
		for (int i = 0; i < nd; i++) {
			seed = seed * 6364136223846793005UL + 1442695040888963407UL;
			secs[i] = 0.5 + (double)((seed >> 33) % 2000) / 10.0;
		}
		seed = seed * 6364136223846793005UL + 1442695040888963407UL;
		double ram = 1 + (double)((seed >> 33) % 60);
		unsigned n = 0;
		double late = follow_transfers(secs, nd, ram, &n);
		reqs += n;
		if (late > worst)
			worst = late;
		cr_expect_leq(late, 2.2, "case %d: %d disks, first %.1f s, memory %.0f s: end seen %.1f s "
			      "late", it, nd, secs[0], ram, late);
	}
	cr_log_info("worst %.2f s late, %.1f requests per migration", worst, (double)reqs / 2000);
}

Test(task, sched_bogus_percentages)
{
	struct task_sched s;
	bool st;
	double d;
	/* A percentage at time 0 (no time passed): no rate, no estimate. */
	task_sched_init(&s, 0.1, 1.0);
	task_sched_log(&s, 0, 3, 3, 50.0);
	cr_expect_float_eq(s.end, -1, 1e-9);
	d = task_sched_next(&s, 0, &st);
	cr_expect_float_eq(d, 0.1, 1e-9);

	/* Negative and NaN are ignored; the plain schedule goes on. */
	task_sched_init(&s, 0.1, 1.0);
	d = task_sched_next(&s, 0, &st);
	cr_expect_float_eq(d, 0.1, 1e-9);
	task_sched_log(&s, 0.1, 1, 1, -5.0);
	d = task_sched_next(&s, 0.1, &st);
	cr_expect_float_eq(d, 0.1, 1e-9);
	task_sched_log(&s, 0.2, 1, 1, NAN);
	d = task_sched_next(&s, 0.2, &st);
	cr_expect_float_eq(d, 0.2, 1e-9);
	cr_expect_float_eq(s.end, -1, 1e-9);

	/* Above 100 counts as 100: the end is now, already past: the tail
	 * is followed at the shortest step. */
	task_sched_init(&s, 0.1, 1.0);
	d = task_sched_next(&s, 0, &st);
	task_sched_log(&s, 0.1, 1, 1, 250.0);
	cr_expect_float_eq(s.best, 100.0, 1e-9);
	d = task_sched_next(&s, 0.1, &st);
	cr_expect_float_eq(d, 0.1, 1e-9, "delay %f", d);

	/* A tiny percentage early: an end far ahead, the next read at most
	 * max(max, 2 x waited) later. */
	task_sched_init(&s, 1.0, 2.0);
	d = task_sched_next(&s, 0, &st);
	task_sched_log(&s, 1.0, 1, 1, 0.001);
	cr_expect_gt(s.end, 1000);
	d = task_sched_next(&s, 1.0, &st);
	cr_expect_float_eq(d, 2.0, 1e-9, "delay %f", d);

	/* Going backwards (the next disk): a new transfer whose start lies
	 * somewhere in the gap, so no estimate from its first percentage
	 * (not an end in the past, nor one far ahead from the gap's start):
	 * the next read within max; the second percentage gives its rate. */
	task_sched_init(&s, 0, 0);
	double t = 0;
	t += task_sched_next(&s, t, &st); /* 1 */
	task_sched_log(&s, t, 2, 2, 40.0);
	t += task_sched_next(&s, t, &st);
	task_sched_log(&s, t, 2, 2, 100.0);
	t += task_sched_next(&s, t, &st);
	task_sched_log(&s, t, 1, 1, 10.0); /* disk 2 at 10% */
	cr_expect_float_eq(s.best, 10.0, 1e-9);
	cr_expect_float_eq(s.end, -1, 1e-9, "end %f now %f", s.end, t);
	d = task_sched_next(&s, t, &st);
	cr_expect_leq(d, 2.0 + 1e-9, "delay %f", d);
	t += d;
	task_sched_log(&s, t, 1, 1, 30.0);
	cr_expect_gt(s.end, t, "end %f now %f", s.end, t);
	for (int i = 0; i < 20; i++) {
		d = task_sched_next(&s, t, &st);
		cr_expect(d >= 0.15 - 1e-9 && d <= 2 * t + 1e-9, "delay %f", d);
		t += d;
	}
	/* The same percentage again is no news. */
	double end = s.end;
	task_sched_log(&s, t, 2, 2, 30.0);
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

Test(task_parse, a_nan_percentage_is_no_percentage)
{
	/* found by fuzzing (tests/fuzz/regress/task/percent-nan) */
	struct task_progress p;
	task_parse_line("transferred 1.0 GiB of 2.0 GiB (nan%)", &p);
	cr_assert_float_eq(p.percent, -1, 1e-9);
	task_parse_line("migration active, transferred 1e308 PiB of 1e308 PiB VM-state, 1 MiB/s", &p);
	cr_assert(p.percent == -1 || (p.percent >= 0 && p.percent <= 100), "%f", p.percent);
}
