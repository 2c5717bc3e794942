/* test_task.c - Criterion tests for agent/task.*: UPID parse/format, task
 * log line parsing (clone/mirror percentages, migration progress, downtime,
 * duration, warnings), sizes, the poll schedule and exit statuses. The
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
