/* test_migrate_store.c - migrations and homes in state.db
 * (agent/migrate_store.c): the schema 3 tables, the speeds measured
 * between two nodes (memory of online migrations, disks), which feed the
 * drain estimates, and homes set and forgotten. */
#include <criterion/criterion.h>

#include "migrate_plan.h"
#include "migrate_store.h"
#include "util.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1024.0 * 1024.0)

static char dir[64];
static struct store *st;

static void setup(void)
{
	strcpy(dir, "/tmp/test_migstore.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	char *path = strprintf("%s/state.db", dir), *err = NULL;
	cr_assert_not_null(path);
	cr_assert_eq(store_open(path, &st, &err), 0, "%s", err ? err : "?");
	free(path);
}

static void teardown(void)
{
	store_close(st);
	char *cmd = strprintf("rm -rf '%s'", dir);
	cr_assert_not_null(cmd);
	cr_expect_eq(system(cmd), 0);
	free(cmd);
}

Test(migstore, speeds_between_two_nodes, .init = setup, .fini = teardown)
{
	char *err = NULL;
	double mb = -1, db = -1;
	cr_assert_eq(migstore_speeds(st, "pve1", "pve2", &mb, &db, &err), 0);
	cr_expect_eq(mb, 0, "nothing measured yet");
	cr_expect_eq(db, 0);
	/* 2 GiB of memory in 3 + 10.24 s: 200 MiB/s (twice the default) */
	struct mig_record r = {100, "web1", "pve1", "pve2", "online", 1000, 3 + 10.24,
			       2048ull << 20, 0, 40, 45};
	cr_assert_eq(migstore_add(st, &r, &err), 0, "%s", err ? err : "");
	/* an offline one with 1 GiB of disk in 3 + 2.56 s: 400 MiB/s */
	struct mig_record d = {107, "cold1", "pve1", "pve2", "offline", 1001, 3 + 2.56, 1024ull << 20,
			       1024ull << 20, -1, -1};
	cr_assert_eq(migstore_add(st, &d, &err), 0, "%s", err ? err : "");
	/* another pair does not count */
	struct mig_record o = {101, "db1", "pve2", "pve1", "online", 1002, 100, 1024ull << 20, 0, 1, 1};
	cr_assert_eq(migstore_add(st, &o, &err), 0, "%s", err ? err : "");
	cr_assert_eq(migstore_speeds(st, "pve1", "pve2", &mb, &db, &err), 0);
	cr_expect_float_eq(mb, 200 * MiB, 1e-3 * MiB);
	cr_expect_float_eq(db, 400 * MiB, 1e-3 * MiB);
	/* and the estimate of the next one uses them */
	cr_expect_float_eq(migrate_estimate_s(MIG_ONLINE, 4096ull << 20, 0, mb, db), 3 + 20.48, 1e-6);
}

Test(migstore, homes, .init = setup, .fini = teardown)
{
	char *err = NULL;
	cr_assert_eq(migstore_set_home(st, 100, "web1", "pve1", 1000, &err), 0);
	cr_assert_eq(migstore_set_home(st, 100, "web1", "pve3", 1001, &err), 0);
	sqlite3_stmt *q = NULL;
	cr_assert_eq(sqlite3_prepare_v2(store_db(st), "SELECT home FROM homes WHERE vmid = 100", -1,
					&q, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
	cr_expect_str_eq((const char *)sqlite3_column_text(q, 0), "pve3");
	sqlite3_finalize(q);
	cr_assert_eq(migstore_set_home(st, 100, "web1", NULL, 1002, &err), 0);
	cr_assert_eq(sqlite3_prepare_v2(store_db(st), "SELECT count(*) FROM homes", -1, &q, NULL),
		     SQLITE_OK);
	cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
	cr_expect_eq(sqlite3_column_int(q, 0), 0);
	sqlite3_finalize(q);
}
