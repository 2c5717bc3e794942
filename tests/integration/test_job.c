/* test_job.c - the job engine (job.h) and its store (store.h): schema
 * migration, rows, resume at every step boundary, undo on failure, stop
 * between steps; against the simulator: re-attaching to a recorded UPID
 * without sending again, a lost answer resolved by looking, and the fault
 * matrix of `up` and `down` (every task-starting request, every fault
 * kind, before and after the request took effect): the exit outcome, 0
 * or 1 guest, each request effective at most once, and a rerun that
 * converges. */
#include <criterion/criterion.h>

#include "clirun.h"
#include "faultkinds.h"
#include "job.h"
#include "cfgdiff.h"
#include "uprun.h"
#include "simclock.h"
#include "simproc.h"
#include "store.h"
#include "task.h"
#include "util.h"
#include "up_check.h"
#include "wf_up.h"
#include "workflows.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEMO "tests/pvesim/scenarios/demo.json"
#define JOB_TMPL "tests/unit/data/job-vm.tmpl"

static char *temp_dir(void)
{
	char tmpl[] = "/tmp/pvagent-test-job.XXXXXX";
	char *d = mkdtemp(tmpl);
	cr_assert_not_null(d);
	return strdup(d);
}

static void rm_rf(const char *dir)
{
	char *cmd = strprintf("rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

static struct store *open_in(const char *dir)
{
	char *path = store_path(dir), *err = NULL;
	struct store *s = NULL;
	cr_assert_eq(store_open(path, &s, &err), 0, "%s", err ? err : "?");
	free(path);
	return s;
}

/* ---- the store ------------------------------------------------------------------ */

/* The store in dir opened after sql made its file as an earlier release
 * did: migrated to this release's schema version. */
static struct store *open_old(const char *dir, const char *sql)
{
	char *path = store_path(dir);
	sqlite3 *db;
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	sqlite3_close(db);
	free(path);
	struct store *s = open_in(dir);
	int v = 0;
	char *err = NULL;
	cr_assert_eq(store_schema_version(s, &v, &err), 0);
	cr_assert_eq(v, STORE_SCHEMA_VERSION);
	return s;
}

Test(store, migrates_the_bench_only_database_of_earlier_releases)
{
	char *dir = temp_dir();
	struct store *s = open_old(dir,
				  "CREATE TABLE bench(id INTEGER PRIMARY KEY, guest TEXT NOT NULL, "
				  "vmid INTEGER NOT NULL, ts INTEGER NOT NULL, bus TEXT, nic TEXT, "
				  "size_mib INTEGER NOT NULL, figures TEXT NOT NULL, notes TEXT NOT "
				  "NULL DEFAULT '[]');"
				  "INSERT INTO bench(guest, vmid, ts, size_mib, figures) "
				  "VALUES('old1', 101, 5, 8, '[]');");
	char *err = NULL;
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_prepare_v2(store_db(s), "SELECT guest FROM bench", -1, &st, NULL),
		     SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "old1", "the old row is kept");
	sqlite3_finalize(st);
	long long id;
	cr_assert_eq(store_job_insert(s, "up", "web1", "{}", 1.0, &id, &err), 0, "%s", err);
	store_close(s);
	/* opening again migrates nothing and keeps the job */
	s = open_in(dir);
	struct store_job j;
	cr_assert_eq(store_job_get(s, id, &j, &err), 1);
	cr_assert_str_eq(j.subject, "web1");
	cr_assert_eq(j.state, JOB_QUEUED);
	store_job_free(&j);
	store_close(s);
	rm_rf(dir);
	free(dir);
}

/* Issue 36: a schema 3 store (jobs without AUTOINCREMENT) is migrated with
 * its jobs, steps and events; a pruned job's ID is never given again, and
 * is known as pruned (not as never made). */
Test(store, job_ids_are_never_given_again_after_a_prune_and_old_stores_migrate)
{
	char *dir = temp_dir();
	struct store *s = open_old(dir,
				  "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
				  "INSERT INTO meta VALUES('schema_version', 3);"
				  "CREATE TABLE jobs(id INTEGER PRIMARY KEY, workflow TEXT NOT NULL, "
				  "subject TEXT NOT NULL, params TEXT NOT NULL, vars TEXT NOT NULL "
				  "DEFAULT '{}', state TEXT NOT NULL, created REAL NOT NULL, started "
				  "REAL, ended REAL, error TEXT, pid INTEGER);"
				  "CREATE INDEX jobs_open ON jobs(workflow, subject, state);"
				  "CREATE TABLE steps(job INTEGER NOT NULL REFERENCES jobs(id) ON "
				  "DELETE CASCADE, idx INTEGER NOT NULL, name TEXT NOT NULL, state "
				  "TEXT NOT NULL, upid TEXT, attempts INTEGER NOT NULL DEFAULT 0, "
				  "result TEXT, error TEXT, started REAL, ended REAL, PRIMARY KEY(job, "
				  "idx));"
				  "CREATE TABLE events(id INTEGER PRIMARY KEY, job INTEGER NOT NULL "
				  "REFERENCES jobs(id) ON DELETE CASCADE, time REAL NOT NULL, step "
				  "TEXT, kind TEXT NOT NULL, percent REAL, message TEXT);"
				  "INSERT INTO jobs(id, workflow, subject, params, state, created, "
				  "ended) VALUES(3, 'up', 'old3', '{}', 'done', 1, 2), (7, 'up', "
				  "'old7', '{}', 'done', 1, 2);"
				  "INSERT INTO steps(job, idx, name, state) VALUES(3, 0, 'clone', "
				  "'done'), (7, 0, 'clone', 'done');"
				  "INSERT INTO events(job, time, kind, message) VALUES(7, 1, 'note', "
				  "'x');");
	char *err = NULL;
	struct store_job j;
	cr_assert_eq(store_job_get(s, 7, &j, &err), 1, "the old job is kept");
	cr_assert_str_eq(j.subject, "old7");
	store_job_free(&j);
	struct store_step *steps = NULL;
	size_t ns = 0;
	cr_assert_eq(store_steps_get(s, 7, &steps, &ns, &err), 0, "%s", err);
	cr_assert_eq(ns, 1, "its steps are kept");
	store_steps_free(steps, ns);
	struct store_event *evs = NULL;
	size_t ne = 0;
	cr_assert_eq(store_events_get(s, 7, &evs, &ne, &err), 0, "%s", err);
	cr_assert_eq(ne, 1, "its events are kept");
	store_events_free(evs, ne);
	cr_assert_eq(store_job_pruned(s, 5, &err), 1, "5 was given before 7 and is gone");
	cr_assert_eq(store_job_pruned(s, 7, &err), 0, "7 is there");
	cr_assert_eq(store_job_pruned(s, 8, &err), 0, "8 was never given");
	/* prune both: the next job is 8, not 1 or 3 */
	size_t pruned = 0;
	cr_assert_eq(store_jobs_prune(s, 10, 0, &pruned, &err), 0, "%s", err);
	cr_assert_eq(pruned, 2);
	cr_assert_eq(store_job_pruned(s, 7, &err), 1);
	long long id;
	cr_assert_eq(store_job_insert(s, "up", "new", "{}", 20, &id, &err), 0, "%s", err);
	cr_assert_eq(id, 8, "a pruned ID is not given again");
	cr_assert_eq(store_steps_get(s, 7, &steps, &ns, &err), 0, "%s", err);
	cr_assert_eq(ns, 0, "a pruned job's steps went with it");
	store_close(s);
	/* a new store: the same after a prune of its newest job */
	rm_rf(dir);
	free(dir);
	dir = temp_dir();
	s = open_in(dir);
	long long a;
	cr_assert_eq(store_job_insert(s, "up", "a", "{}", 1, &a, &err), 0, "%s", err);
	struct store_job done = {.id = a, .state = JOB_DONE, .vars = "{}", .started = 1, .ended = 2};
	cr_assert_eq(store_job_update(s, &done, &err), 0, "%s", err);
	cr_assert_eq(store_jobs_prune(s, 10, 0, &pruned, &err), 0, "%s", err);
	cr_assert_eq(pruned, 1);
	cr_assert_eq(store_job_insert(s, "up", "b", "{}", 20, &id, &err), 0, "%s", err);
	cr_assert_eq(id, a + 1);
	cr_assert_eq(store_job_pruned(s, a, &err), 1);
	store_close(s);
	rm_rf(dir);
	free(dir);
}

Test(store, refuses_a_database_newer_than_itself)
{
	char *dir = temp_dir();
	struct store *s = open_in(dir);
	cr_assert_eq(sqlite3_exec(store_db(s),
				  "UPDATE meta SET value = 99 WHERE key = 'schema_version'", NULL,
				  NULL, NULL),
		     SQLITE_OK);
	store_close(s);
	char *path = store_path(dir), *err = NULL;
	char *before = NULL, *after = NULL;
	size_t nb = 0, na = 0;
	cr_assert_eq(read_file(path, &before, &nb), 0);
	cr_assert_eq(store_open(path, &s, &err), -1);
	cr_assert(err && strstr(err, "newer") && strstr(err, path), "%s", err ? err : "");
	free(err);
	/* never rewritten: the file as it was, its version still the newer one */
	cr_assert_eq(read_file(path, &after, &na), 0);
	cr_assert(na == nb && memcmp(before, after, nb) == 0, "the refused file was changed");
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'",
					-1, &st, NULL),
		     SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	cr_assert_eq(sqlite3_column_int(st, 0), 99);
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(before);
	free(after);
	free(path);
	rm_rf(dir);
	free(dir);
}

Test(store, rows_of_jobs_steps_and_events)
{
	char *dir = temp_dir();
	struct store *s = open_in(dir);
	char *err = NULL;
	long long a, b;
	cr_assert_eq(store_job_insert(s, "up", "web1", "{\"x\":1}", 10, &a, &err), 0);
	cr_assert_eq(store_job_insert(s, "up", "web2", "{}", 11, &b, &err), 0);
	struct store_job j = {.id = a, .state = JOB_INTERRUPTED, .vars = "{\"vmid\":7}",
			      .started = 12};
	cr_assert_eq(store_job_update(s, &j, &err), 0);
	struct store_job got;
	cr_assert_eq(store_job_find_open(s, "up", "web1", &got, &err), 1);
	cr_assert_eq(got.id, a);
	cr_assert_str_eq(got.vars, "{\"vmid\":7}");
	long holder = -1;
	cr_assert_eq(store_job_resumable(s, &got, &holder, &err), 1);
	cr_assert_eq(holder, 0);
	store_job_free(&got);
	cr_assert_eq(store_job_find_open(s, "down", "web1", &got, &err), 0);
	struct store_job *v;
	size_t n;
	cr_assert_eq(store_jobs_list(s, 10, &v, &n, &err), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(v[0].id, b, "newest first");
	store_jobs_free(v, n);
	struct store_step st = {.idx = 1, .name = "clone", .state = STEP_RUNNING,
				.upid = "UPID:pve1:1:2:3:qmclone:100:root@pam:", .attempts = 1};
	cr_assert_eq(store_step_put(s, a, &st, &err), 0);
	st.state = STEP_DONE;
	cr_assert_eq(store_step_put(s, a, &st, &err), 0, "the same step again replaces it");
	struct store_step *sv;
	cr_assert_eq(store_steps_get(s, a, &sv, &n, &err), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(sv[0].state, STEP_DONE);
	cr_assert_str_eq(sv[0].upid, st.upid);
	store_steps_free(sv, n);
	struct store_event ev = {.time = 13, .step = "clone", .kind = "progress", .percent = 50,
				 .message = "half"};
	cr_assert_eq(store_event_add(s, a, &ev, &err), 0);
	struct store_event *ee;
	cr_assert_eq(store_events_get(s, a, &ee, &n, &err), 0);
	cr_assert_eq(n, 1);
	cr_assert_float_eq(ee[0].percent, 50, 1e-9);
	store_events_free(ee, n);
	store_close(s);
	rm_rf(dir);
	free(dir);
}

/* ---- the job lock: liveness is its lock, never its stored pid -------------------------- */

/* A job row "running" under pid (what a killed process leaves). */
static long long running_row(struct store *s, long pid)
{
	char *err = NULL;
	long long id;
	cr_assert_eq(store_job_insert(s, "up", "web1", "{}", 1, &id, &err), 0);
	struct store_job j = {.id = id, .state = JOB_RUNNING, .started = 2, .pid = pid};
	cr_assert_eq(store_job_update(s, &j, &err), 0);
	return id;
}

Test(store, a_stored_pid_of_an_unrelated_live_process_neither_blocks_nor_is_signalled)
{
	char *dir = temp_dir();
	struct store *s = open_in(dir);
	pid_t other = test_bystander();
	cr_assert_geq(other, 0);
	long long id = running_row(s, other);
	struct store_job sj;
	char *err = NULL;
	long holder = -1;
	cr_assert_eq(store_job_get(s, id, &sj, &err), 1);
	cr_assert_eq(store_job_running(s, id, &holder, &err), 0, "its lock is free");
	cr_assert_eq(store_job_resumable(s, &sj, &holder, &err), 1);
	cr_assert_eq(store_job_signal(s, id, SIGTERM, &holder, &err), 0, "nothing to signal");
	store_job_free(&sj);
	cr_assert(test_alive_unreaped(other), "the process that has that pid was not signalled");
	/* and the lock is free to take */
	struct store_job_lock *lk = NULL;
	cr_assert_eq(store_job_lock(s, id, &lk, &holder, &err), 1, "%s", err ? err : "");
	cr_assert_eq(store_job_running(s, id, &holder, &err), 1, "held here now");
	cr_assert_eq(holder, getpid());
	store_job_unlock(lk);
	cr_assert_eq(store_job_running(s, id, &holder, &err), 0);
	kill(other, SIGKILL);
	cr_assert_eq(waitpid(other, NULL, 0), other);
	store_close(s);
	rm_rf(dir);
	free(dir);
}

/* Asks, until told to stop, whether job id runs (as `pvagent jobs`, a
 * cancel or pvagentd's start-up do while jobs start). */
struct asker {
	struct store *s;
	long long id;
	atomic_bool stop;
	atomic_long asked;
};

static void *ask_running(void *arg)
{
	struct asker *a = arg;
	while (!atomic_load(&a->stop)) {
		long holder = 0;
		char *err = NULL;
		if (store_job_running(a->s, a->id, &holder, &err) < 0)
			free(err);
		atomic_fetch_add(&a->asked, 1);
	}
	return NULL;
}

/* Asking whether a job runs never takes its lock, not even for a moment:
 * with flock's shared lock as the question, a job starting at that moment
 * failed as "running in process N" (a drain's migration did, under load). */
Test(store, asking_whether_a_job_runs_never_keeps_it_from_starting)
{
	char *dir = temp_dir();
	struct store *s = open_in(dir);
	char *err = NULL;
	long long id;
	cr_assert_eq(store_job_insert(s, "migrate", "303", "{}", 1, &id, &err), 0);
	struct asker a = {.s = s, .id = id};
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, ask_running, &a), 0);
	int taken = 0, refused = 0;
	/* the file a killed holder leaves, there again before each take:
	 * what is asked about while the job is resumed */
	char *path = store_path(dir), *slash = strrchr(path, '/');
	cr_assert_not_null(slash);
	*slash = '\0';
	char *lockf = strprintf("%s/job-%lld.lock", path, id);
	/* until the asker has asked many times over the takes */
	for (int i = 0; i < 2000 || atomic_load(&a.asked) < 2000; i++) {
		cr_assert_eq(test_write_file(lockf, "99999999\n", 0600), 0);
		struct store_job_lock *lk = NULL;
		long holder = 0;
		int r = store_job_lock(s, id, &lk, &holder, &err);
		cr_assert_geq(r, 0, "%s", err ? err : "");
		taken += r == 1;
		refused += r == 0;
		store_job_unlock(lk);
	}
	atomic_store(&a.stop, true);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_expect_eq(refused, 0, "%d of %d takes refused while another asked", refused,
		     taken + refused);
	free(lockf);
	free(path);
	store_close(s);
	rm_rf(dir);
	free(dir);
}

static const struct job_workflow stepless = {.name = "stepless"};

/* A child that runs take(arg), which returns 0 holding a job's lock, then
 * waits to be killed; returns (its pid) once the child holds it. */
static pid_t lock_holder(int (*take)(void *arg), void *arg)
{
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(ready[0]);
		char ok = 'k';
		if (take(arg) < 0 || write(ready[1], &ok, 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(ready[1]);
	char c = 0;
	cr_assert_eq(read(ready[0], &c, 1), 1, "the lock's holder did not start");
	close(ready[0]);
	return pid;
}

/* In the child: make a job of stepless in the store under dir (a new job
 * holds its lock). */
static int make_job(void *dir)
{
	struct store *cs = NULL;
	char *path = store_path(dir), *cerr = NULL;
	struct job_env env = {0};
	struct job *j = NULL;
	struct pve_error e = {0};
	if (store_open(path, &cs, &cerr) < 0 || job_env_init(&env) < 0)
		return -1;
	env.store = cs;
	return job_new(&env, &stepless, "g1", NULL, &j, &e);
}

struct lock_arg {
	struct store *s;
	long long id;
};

/* In the child: take job id's lock. */
static int take_lock(void *arg)
{
	struct lock_arg *a = arg;
	struct store_job_lock *lk = NULL;
	long h = 0;
	return store_job_lock(a->s, a->id, &lk, &h, NULL) == 1 ? 0 : -1;
}

Test(store, a_job_held_by_a_process_is_running_until_it_dies_and_its_zombie_does_not_count)
{
	char *dir = temp_dir();
	pid_t holder_pid = lock_holder(make_job, dir);
	struct store *s = open_in(dir);
	char *err = NULL;
	long holder = 0;
	cr_assert_eq(store_job_running(s, 1, &holder, &err), 1);
	cr_assert_eq(holder, holder_pid, "the lock names its holder");
	struct store_job sj;
	cr_assert_eq(store_job_get(s, 1, &sj, &err), 1);
	cr_assert_eq(store_job_resumable(s, &sj, &holder, &err), 0, "queued, but held");
	store_job_free(&sj);
	struct store_job_lock *lk = NULL;
	cr_assert_eq(store_job_lock(s, 1, &lk, &holder, &err), 0);
	cr_assert_null(lk);
	/* the engine will not run it here */
	struct job_env env = {0};
	cr_assert_eq(job_env_init(&env), 0);
	env.store = s;
	struct job *j = NULL;
	struct pve_error e = {0};
	cr_assert_eq(job_load(&env, 1, &stepless, &j, &e), 1);
	cr_assert_neq(job_run(j, NULL), JOB_OUT_DONE);
	cr_assert_eq(job_error(j)->kind, PVE_ERR_LOCKED);
	cr_assert(strstr(job_error(j)->message, "running in process"), "%s",
		  job_error(j)->message);
	job_free(j);
	/* killed, and left a zombie (not reaped) */
	cr_assert_eq(kill(holder_pid, SIGKILL), 0);
	siginfo_t si = {0};
	cr_assert_eq(waitid(P_PID, (id_t)holder_pid, &si, WEXITED | WNOWAIT), 0);
	cr_assert_eq(kill(holder_pid, 0), 0, "a zombie: kill(pid, 0) still says it is there");
	cr_assert_eq(store_job_running(s, 1, &holder, &err), 0, "but its lock is gone");
	cr_assert_eq(store_job_signal(s, 1, SIGTERM, &holder, &err), 0);
	cr_assert_eq(store_job_lock(s, 1, &lk, &holder, &err), 1, "%s", err ? err : "");
	store_job_unlock(lk);
	/* and the engine resumes it while the zombie is still there */
	cr_assert_eq(job_load(&env, 1, &stepless, &j, &e), 1);
	cr_assert_eq(job_run(j, NULL), JOB_OUT_DONE);
	job_free(j);
	job_env_fini(&env);
	cr_assert_eq(waitpid(holder_pid, NULL, 0), holder_pid);
	store_close(s);
	rm_rf(dir);
	free(dir);
}

Test(store, signal_reaches_the_process_that_holds_the_lock)
{
	char *dir = temp_dir();
	struct store *s = open_in(dir);
	long long id = running_row(s, 1);
	pid_t pid = lock_holder(take_lock, &(struct lock_arg){s, id});
	char *err = NULL;
	long holder = 0;
	cr_assert_eq(store_job_signal(s, id, SIGTERM, &holder, &err), 1, "%s", err ? err : "");
	cr_assert_eq(holder, pid);
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	cr_assert_eq(store_job_running(s, id, &holder, &err), 0);
	store_close(s);
	rm_rf(dir);
	free(dir);
}

/* ---- a toy workflow: steps that count their runs ------------------------------------ */

#define TOY_STEPS 4
static int runs[TOY_STEPS], undos[TOY_STEPS], undo_order[TOY_STEPS], n_undone;
static int stop_after = -1, fail_at = -1, undo_fails_at = -1, undo_keeps_at = -1;
static volatile sig_atomic_t toy_stop;

static enum step_rc toy_run(struct job *j, int i)
{
	runs[i]++;
	char key[16];
	snprintf(key, sizeof key, "s%d", i);
	cr_assert_eq(job_set_int(j, key, (long long)i * 10), 0);
	if (i == fail_at)
		return job_fail(j, PVE_ERR_API, "step %d failed", i);
	job_summary(j, "step %d ran", i);
	if (i == stop_after)
		toy_stop = 1; /* as a signal would: after this step */
	return STEP_RC_OK;
}

static int toy_undo(struct job *j, int i)
{
	(void)j;
	undos[i]++;
	undo_order[n_undone++] = i;
	return i == undo_fails_at ? -1 : i == undo_keeps_at ? 1 : 0;
}

#define TOY(i)                                                                       \
	static enum step_rc toy_run##i(struct job *j) { return toy_run(j, i); }     \
	static int toy_undo##i(struct job *j) { return toy_undo(j, i); }
TOY(0)
TOY(1)
TOY(2)
TOY(3)

static const struct job_step_def toy_steps[TOY_STEPS] = {
	{"a", toy_run0, toy_undo0, 0},
	{"b", toy_run1, toy_undo1, 0},
	{"c", toy_run2, toy_undo2, 0},
	{"d", toy_run3, toy_undo3, 0},
};
static const struct job_workflow toy = {"toy", toy_steps, TOY_STEPS, 8, NULL, NULL, false, NULL};
static const struct job_workflow toy_undoing = {"toy", toy_steps, TOY_STEPS, 8, NULL, NULL,
						true, NULL};

static void toy_reset(void)
{
	memset(runs, 0, sizeof runs);
	memset(undos, 0, sizeof undos);
	n_undone = 0;
	stop_after = fail_at = undo_fails_at = undo_keeps_at = -1;
	toy_stop = 0;
}

static void toy_env(struct job_env *env, struct store *s)
{
	memset(env, 0, sizeof *env);
	env->store = s;
	env->stop = &toy_stop;
	cr_assert_eq(job_env_init(env), 0);
}

Test(job_engine, resumes_at_every_step_boundary_running_each_step_once)
{
	for (int k = 0; k < TOY_STEPS; k++) {
		toy_reset();
		char *dir = temp_dir();
		struct store *s = open_in(dir);
		struct job_env env;
		toy_env(&env, s);
		struct job *j;
		struct pve_error e = {0};
		cr_assert_eq(job_new(&env, &toy, "g1", NULL, &j, &e), 0);
		long long id = job_id(j);
		stop_after = k;
		enum job_outcome o = job_run(j, NULL);
		job_free(j);
		if (k == TOY_STEPS - 1) {
			cr_assert_eq(o, JOB_OUT_DONE, "the stop came after the last step");
		} else {
			cr_assert_eq(o, JOB_OUT_INTERRUPTED, "k=%d", k);
			struct store_job sj;
			char *err = NULL;
			cr_assert_eq(store_job_get(s, id, &sj, &err), 1);
			cr_assert_eq(sj.state, JOB_INTERRUPTED);
			store_job_free(&sj);
			toy_stop = 0;
			stop_after = -1;
			cr_assert_eq(job_load(&env, id, &toy, &j, &e), 1);
			cr_assert_eq(job_run(j, NULL), JOB_OUT_DONE);
			cr_assert(job_resumed(j));
			long long v = -1;
			cr_assert(json_int(job_vars(j), "s0", &v) && v == 0, "vars of the first run kept");
			size_t n;
			const struct store_step *st = job_steps(j, &n);
			for (size_t i = 0; i < n; i++)
				cr_assert_eq(st[i].state, STEP_DONE);
			job_free(j);
		}
		for (int i = 0; i < TOY_STEPS; i++)
			cr_assert_eq(runs[i], 1, "k=%d: step %d ran %d times", k, i, runs[i]);
		job_env_fini(&env);
		store_close(s);
		rm_rf(dir);
		free(dir);
	}
}

Test(job_engine, stop_before_any_step_runs_nothing)
{
	toy_reset();
	struct job_env env;
	toy_env(&env, NULL);
	struct job *j;
	struct pve_error e = {0};
	cr_assert_eq(job_new(&env, &toy, "g1", NULL, &j, &e), 0);
	toy_stop = 1;
	cr_assert_eq(job_run(j, NULL), JOB_OUT_INTERRUPTED);
	cr_assert_eq(job_state(j), JOB_INTERRUPTED);
	for (int i = 0; i < TOY_STEPS; i++)
		cr_assert_eq(runs[i], 0);
	job_free(j);
	job_env_fini(&env);
}

Test(job_engine, undo_on_failure_runs_in_reverse_and_says_when_it_fails)
{
	toy_reset();
	char *dir = temp_dir();
	struct store *s = open_in(dir);
	struct job_env env;
	toy_env(&env, s);
	struct job *j;
	struct pve_error e = {0};
	cr_assert_eq(job_new(&env, &toy_undoing, "g1", NULL, &j, &e), 0);
	fail_at = 2;
	cr_assert_eq(job_run(j, NULL), JOB_OUT_FAILED, "undone: nothing left");
	cr_assert_eq(n_undone, 2);
	cr_assert_eq(undo_order[0], 1);
	cr_assert_eq(undo_order[1], 0);
	cr_assert_eq(undos[2], 0, "the failed step is not undone");
	size_t n;
	const struct store_step *st = job_steps(j, &n);
	cr_assert_eq(st[0].state, STEP_UNDONE);
	cr_assert_eq(st[1].state, STEP_UNDONE);
	cr_assert_eq(st[2].state, STEP_FAILED);
	cr_assert_eq(st[3].state, STEP_PENDING);
	cr_assert_str_eq(job_error(j)->message, "step 2 failed");
	cr_assert_eq(job_state(j), JOB_FAILED);
	job_free(j);

	toy_reset();
	cr_assert_eq(job_new(&env, &toy_undoing, "g2", NULL, &j, &e), 0);
	fail_at = 3;
	undo_fails_at = 1;
	cr_assert_eq(job_run(j, NULL), JOB_OUT_NEEDS_ATTENTION);
	cr_assert_eq(n_undone, 3, "the other undos still run");
	cr_assert_eq(job_state(j), JOB_NEEDS_ATTENTION);
	job_free(j);

	/* an undo that keeps its step on purpose: the step stays done, the
	 * failure is still a clean one */
	toy_reset();
	cr_assert_eq(job_new(&env, &toy_undoing, "g4", NULL, &j, &e), 0);
	fail_at = 3;
	undo_keeps_at = 1;
	cr_assert_eq(job_run(j, NULL), JOB_OUT_FAILED);
	cr_assert_eq(n_undone, 3);
	st = job_steps(j, &n);
	cr_assert_eq(st[0].state, STEP_UNDONE);
	cr_assert_eq(st[1].state, STEP_DONE, "kept");
	cr_assert_eq(st[2].state, STEP_UNDONE);
	job_free(j);

	/* without undo_on_failure nothing is undone */
	toy_reset();
	cr_assert_eq(job_new(&env, &toy, "g3", NULL, &j, &e), 0);
	fail_at = 1;
	cr_assert_eq(job_run(j, NULL), JOB_OUT_FAILED);
	cr_assert_eq(n_undone, 0);
	job_free(j);
	job_env_fini(&env);
	store_close(s);
	rm_rf(dir);
	free(dir);
}

/* A lower module (SSH, inject, bench, the conversion) says what its
 * failure means as an outcome; the job ends with that outcome. */
static enum job_outcome told;

static enum step_rc told_run(struct job *j)
{
	return job_fail_outcome(j, told, "the lower module failed");
}

static const struct job_step_def told_steps[] = {{"only", told_run, NULL, 0}};
static const struct job_workflow told_wf = {"told", told_steps, 1, 8, NULL, NULL, false, NULL};

Test(job_engine, a_lower_modules_outcome_is_the_jobs_outcome)
{
	static const struct {
		enum job_outcome said, ends;
	} cases[] = {
		{JOB_OUT_FAILED, JOB_OUT_FAILED},
		{JOB_OUT_USAGE, JOB_OUT_USAGE},
		{JOB_OUT_NEEDS_ATTENTION, JOB_OUT_NEEDS_ATTENTION},
		{JOB_OUT_UNREACHABLE, JOB_OUT_UNREACHABLE},
		{JOB_OUT_DONE, JOB_OUT_FAILED}, /* a failure that says done */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct job_env env;
		toy_reset();
		toy_env(&env, NULL);
		struct job *j;
		struct pve_error e = {0};
		cr_assert_eq(job_new(&env, &told_wf, "g1", NULL, &j, &e), 0);
		told = cases[i].said;
		enum job_outcome o = job_run(j, NULL);
		cr_expect_eq(o, cases[i].ends, "said %s, ended %s", job_outcome_name(cases[i].said),
			     job_outcome_name(o));
		cr_expect_str_eq(job_error(j)->message, "the lower module failed");
		cr_expect_eq(pve_error_outcome(job_error(j)), cases[i].ends);
		job_free(j);
		job_env_fini(&env);
	}
}

Test(job_engine, outcome_names_parse_back_and_the_worst_wins)
{
	static const enum job_outcome order[] = {
		JOB_OUT_DONE,	JOB_OUT_INTERRUPTED, JOB_OUT_USAGE,
		JOB_OUT_FAILED, JOB_OUT_UNREACHABLE, JOB_OUT_NEEDS_ATTENTION,
	};
	size_t n = sizeof order / sizeof *order;
	for (size_t i = 0; i < n; i++) {
		enum job_outcome back = JOB_OUT_DONE;
		cr_expect_eq(job_outcome_parse(job_outcome_name(order[i]), &back), 0);
		cr_expect_eq(back, order[i]);
		for (size_t k = 0; k < n; k++)
			cr_expect_eq(job_outcome_worse(order[i], order[k]), order[i > k ? i : k],
				     "%s vs %s", job_outcome_name(order[i]),
				     job_outcome_name(order[k]));
	}
	enum job_outcome o = JOB_OUT_FAILED;
	cr_expect_eq(job_outcome_parse("exploded", &o), -1);
	cr_expect_eq(job_outcome_parse(NULL, &o), -1);
	cr_expect_eq(o, JOB_OUT_FAILED, "left alone");
}

Test(job_engine, errors_round_trip_through_their_json_form)
{
	struct pve_error e = {0}, back = {0};
	pve_error_set(&e, PVE_ERR_TASK, "qmclone 100 on pve1 failed: boom");
	e.http_status = 500;
	e.ambiguous = true;
	e.what = strdup("POST /nodes/pve1/qemu/9024/clone");
	e.upid = strdup("UPID:pve1:1:2:3:qmclone:100:root@pam:");
	json_object *o = pve_error_to_json(&e);
	cr_assert_eq(pve_error_from_json(o, &back), 0);
	cr_assert_eq(back.kind, PVE_ERR_TASK);
	cr_assert_eq(back.http_status, 500);
	cr_assert(back.ambiguous);
	cr_assert_str_eq(back.what, e.what);
	cr_assert_str_eq(back.upid, e.upid);
	cr_assert_str_eq(back.message, e.message);
	json_object_put(o);
	pve_error_clear(&e);
	pve_error_clear(&back);
}

/* ---- against the simulator ----------------------------------------------------------- */

struct fx {
	struct simproc sp;
	struct simclock sc;
	struct pve_clock clk;
	struct pve_opts opts;
	struct pve *c;
	struct tmpl *t;
	char *dir;
	struct store *store;
	struct tmpl_kvlist grow; /* --set size=40G */
};
static struct fx *live_fx;

static void fx_cleanup(void)
{
	if (!live_fx)
		return;
	struct fx *f = live_fx;
	live_fx = NULL;
	pve_free(f->c);
	(void)simproc_stop(&f->sp);
}

TestSuite(job_sim, .fini = fx_cleanup);
TestSuite(job_faults, .fini = fx_cleanup);

static void fx_start(struct fx *f)
{
	memset(f, 0, sizeof *f);
	cr_assert_eq(simproc_start(&f->sp, DEMO, NULL), 0, "simulator did not start");
	live_fx = f;
	simclock_init(&f->sc, &f->sp);
	f->clk = f->sc.clock;
	f->opts = (struct pve_opts){
		.url = f->sp.url,
		.token_id = f->sp.token_id,
		.token_secret = f->sp.token_secret,
		.fingerprint = f->sp.fingerprint,
		.retry_base_ms = 20,
		.retry_max_ms = 50,
		.timeout_ms = FAULT_KINDS_CLIENT_TIMEOUT_MS,
		.clock = &f->clk,
	};
	struct pve_error e = {0};
	f->c = pve_new(&f->opts, &e);
	cr_assert_not_null(f->c, "pve_new: %s", e.message ? e.message : "?");
	char *err = NULL;
	cr_assert_eq(tmpl_load_file(JOB_TMPL, &f->t, &err), 0, "%s", err ? err : "?");
	f->dir = temp_dir();
	f->store = open_in(f->dir);
}

static void fx_stop(struct fx *f)
{
	live_fx = NULL;
	pve_free(f->c);
	tmpl_free(f->t);
	tmpl_kvlist_free(&f->grow);
	store_close(f->store);
	rm_rf(f->dir);
	free(f->dir);
	cr_assert_eq(simproc_stop(&f->sp), 0, "simulator did not exit cleanly");
	simclock_destroy(&f->sc);
}

static struct up_request up_req(struct fx *f, const char *const *names)
{
	if (!f->grow.n)
		cr_assert_eq(tmpl_kvlist_set(&f->grow, "size", "40G"), 0);
	return (struct up_request){
		.names = names,
		.n_names = 1,
		.tmpl = f->t,
		.sets = &f->grow,
	};
}

static struct test_up_env up_env_of(struct fx *f)
{
	return (struct test_up_env){
		.parallel = 1,
		.pve_opts = &f->opts,
		.client = f->c,
		.wait = {.clock = &f->clk, .poll_s = 1, .shutdown_timeout_s = 30},
		.store = f->store,
	};
}

static enum job_outcome run_up(struct fx *f, const char *name, struct up_result *out)
{
	const char *names[] = {name};
	struct up_request req = up_req(f, names);
	struct test_up_env env = up_env_of(f);
	struct up_result *res = NULL;
	struct pve_error e = {0};
	test_up_run(&req, &env, &res, &e);
	cr_assert_not_null(res, "%s", e.message ? e.message : "?");
	enum job_outcome o = res[0].outcome;
	if (out) {
		*out = res[0];
		free(res);
	} else {
		up_results_free(res, 1);
	}
	pve_error_clear(&e);
	return o;
}

static enum job_outcome run_down(struct fx *f, const char *name)
{
	struct test_up_env env = up_env_of(f);
	struct up_result res;
	test_down_run(name, false, false, &env, &res);
	enum job_outcome o = res.outcome;
	up_result_free(&res);
	return o;
}

static int guests_named(struct fx *f, const char *name)
{
	json_object *st = simproc_state(&f->sp);
	int n = simproc_count_named(st, name);
	json_object_put(st);
	return n;
}

/* Requests of this method whose path ends so (any status < 0). */
static int requests(struct fx *f, const char *method, const char *suffix, int status)
{
	json_object *log = simproc_requests(&f->sp);
	char *pat = strprintf("*%s", suffix);
	int n = simproc_count_requests(log, method, pat, status);
	free(pat);
	json_object_put(log);
	return n;
}

/* An `up` job of name made (stored, queued) and left unrun, as a launcher
 * would; *env (initialised here) is one to run it in. Its ID. */
static long long stored_up_job(struct fx *f, struct job_env *env, const char *name)
{
	const char *names[] = {name};
	struct up_request req = up_req(f, names);
	*env = (struct job_env){.store = f->store, .clock = &f->clk, .wait = up_env_of(f).wait};
	cr_assert_eq(job_env_init(env), 0);
	json_object *params = wf_up_params(&req, name);
	struct job *j;
	struct pve_error e = {0};
	cr_assert_eq(job_new(env, &wf_up, name, params, &j, &e), 0);
	long long id = job_id(j);
	job_free(j);
	json_object_put(params);
	return id;
}

Test(job_sim, a_resumed_clone_waits_for_the_recorded_task_instead_of_cloning_again)
{
	static struct fx f;
	fx_start(&f);
	/* an earlier run sent the clone and recorded its UPID, then died */
	long st = 0;
	json_object *d = NULL;
	cr_assert_eq(sim_api(&f.sp, "POST", "/nodes/pve1/qemu/9024/clone",
			     "newid=321&name=re1&full=1&storage=local-lvm", &st, &d),
		     0);
	cr_assert_eq(st, 200, "%s", d ? json_object_to_json_string(d) : "?");
	json_object *data;
	cr_assert(json_object_object_get_ex(d, "data", &data));
	char *upid = strdup(json_object_get_string(data));
	json_object_put(d);
	struct job_env env;
	long long id = stored_up_job(&f, &env, "re1");
	char *err = NULL;
	struct store_step s0 = {.idx = 0, .name = "find", .state = STEP_DONE};
	struct store_step s1 = {.idx = 1, .name = "clone", .state = STEP_RUNNING, .upid = upid,
				.attempts = 1};
	cr_assert_eq(store_step_put(f.store, id, &s0, &err), 0);
	cr_assert_eq(store_step_put(f.store, id, &s1, &err), 0);
	struct store_job sj = {.id = id, .state = JOB_RUNNING, .pid = 999999999,
			       .vars = "{\"type\":\"qemu\",\"exists\":false,\"clone_vmid\":321}"};
	cr_assert_eq(store_job_update(f.store, &sj, &err), 0);
	/* the rerun of the same command resumes that job */
	struct up_result r;
	cr_assert_eq(run_up(&f, "re1", &r), JOB_OUT_DONE, "%s", r.error.message ? r.error.message : "");
	cr_assert_eq(r.job, id, "the interrupted job was resumed");
	cr_assert_eq(r.vmid, 321);
	cr_assert_eq(r.status, UP_CREATED);
	up_result_free(&r);
	cr_assert_eq(requests(&f, "POST", "/qemu/9024/clone", -1), 1, "never cloned again");
	cr_assert_eq(guests_named(&f, "re1"), 1);
	job_env_fini(&env);
	free(upid);
	fx_stop(&f);
}

Test(job_sim, up_and_down_run_from_the_store_alone)
{
	static struct fx f;
	fx_start(&f);
	/* made by one launcher and never run there */
	struct job_env env;
	long long up_id = stored_up_job(&f, &env, "own1");
	struct job *j;
	struct pve_error e = {0};
	/* loaded by its workflow's name and run: no template attached */
	cr_assert_eq(job_load(&env, up_id, job_workflow_find("up"), &j, &e), 1);
	cr_assert_eq(job_run(j, f.c), JOB_OUT_DONE, "%s", job_error(j)->message);
	cr_assert_gt(job_vmid(j), 0);
	job_free(j);
	cr_assert_eq(guests_named(&f, "own1"), 1);
	json_object *params = json_object_new_object();
	cr_assert_eq(job_new(&env, &wf_down, "own1", params, &j, &e), 0);
	long long down_id = job_id(j);
	job_free(j);
	json_object_put(params);
	cr_assert_eq(job_load(&env, down_id, job_workflow_find("down"), &j, &e), 1);
	cr_assert_eq(job_run(j, f.c), JOB_OUT_DONE, "%s", job_error(j)->message);
	job_free(j);
	cr_assert_eq(guests_named(&f, "own1"), 0);
	job_env_fini(&env);
	fx_stop(&f);
}

/* The guest's status as PVE shows it now (no clock moved). */
static char *vm_status_now(struct fx *f, int vmid)
{
	char *path = strprintf("/nodes/pve1/qemu/%d/status/current", vmid);
	long st = 0;
	json_object *d = NULL, *data = NULL, *v = NULL;
	cr_assert_eq(sim_api(&f->sp, "GET", path, NULL, &st, &d), 0);
	cr_assert_eq(st, 200);
	cr_assert(json_object_object_get_ex(d, "data", &data) &&
		  json_object_object_get_ex(data, "status", &v));
	char *out = strdup(json_object_get_string(v));
	json_object_put(d);
	free(path);
	return out;
}

/* An HA-managed guest: PVE's start is a hastart task that ends once the
 * request is queued; up waits for the guest to run, not for the task. */
Test(job_sim, up_starts_an_ha_managed_guest_and_waits_until_it_runs)
{
	static struct fx f;
	fx_start(&f);
	struct up_result r;
	cr_assert_eq(run_up(&f, "ha1", &r), JOB_OUT_DONE, "%s", r.error.message ? r.error.message : "");
	int vmid = r.vmid;
	up_result_free(&r);
	char *path = strprintf("/nodes/pve1/qemu/%d/status/stop", vmid);
	long st = 0;
	json_object *d = NULL;
	cr_assert_eq(sim_api(&f.sp, "POST", path, NULL, &st, &d), 0);
	cr_assert_eq(st, 200);
	json_object_put(d);
	free(path);
	cr_assert_eq(simproc_advance(&f.sp, 5), 0);
	char *sid = strprintf("sid=vm:%d&state=stopped", vmid);
	cr_assert_eq(sim_api(&f.sp, "POST", "/cluster/ha/resources", sid, &st, &d), 0);
	cr_assert_eq(st, 200, "%s", d ? json_object_to_json_string(d) : "?");
	json_object_put(d);
	free(sid);
	char *s0 = vm_status_now(&f, vmid);
	cr_assert_str_eq(s0, "stopped");
	free(s0);
	cr_assert_eq(run_up(&f, "ha1", &r), JOB_OUT_DONE, "%s", r.error.message ? r.error.message : "");
	up_result_free(&r);
	cr_assert_eq(requests(&f, "POST", "/status/start", -1), 2);
	char *s1 = vm_status_now(&f, vmid);
	cr_expect_str_eq(s1, "running", "up returned before the HA stack started the guest");
	free(s1);
	fx_stop(&f);
}

/* GET data of path (new reference). */
static json_object *api_data(struct fx *f, const char *path)
{
	long st = 0;
	json_object *d = NULL, *data = NULL;
	cr_assert_eq(sim_api(&f->sp, "GET", path, NULL, &st, &d), 0);
	cr_assert_eq(st, 200, "%s: %ld", path, st);
	cr_assert(json_object_object_get_ex(d, "data", &data));
	json_object_get(data);
	json_object_put(d);
	return data;
}

/* Move the simulator's clock just past one of PVE's 10 s status updates
 * (they come every 10 s of the nodes' uptime), so that the next seconds
 * see none. */
static void just_after_status_update(struct fx *f)
{
	json_object *ns = api_data(f, "/nodes/pve1/status"), *up = NULL;
	cr_assert(json_object_object_get_ex(ns, "uptime", &up));
	long long u = json_object_get_int64(up);
	json_object_put(ns);
	cr_assert_eq(simproc_advance(&f->sp, (double)(10 - u % 10) + 0.3), 0);
}

/* Does /cluster/resources still show VMID vmid without a name, status
 * "unknown"? */
static bool lagging(struct fx *f, int vmid)
{
	json_object *res = api_data(f, "/cluster/resources?type=vm");
	bool lag = false;
	for (size_t i = 0; i < json_object_array_length(res); i++) {
		json_object *e = json_object_array_get_idx(res, i), *v = NULL;
		if (json_object_object_get_ex(e, "vmid", &v) && json_object_get_int(v) == vmid)
			lag = json_object_object_get_ex(e, "status", &v) &&
			      strcmp(json_object_get_string(v), "unknown") == 0 &&
			      !json_object_object_get_ex(e, "name", NULL);
	}
	json_object_put(res);
	return lag;
}

/* A guest just made (a linked clone named name), still without its name
 * and with status "unknown" in /cluster/resources; its VMID. */
static int fresh_guest(struct fx *f, int newid, const char *name)
{
	just_after_status_update(f);
	char *body = strprintf("newid=%d&name=%s&full=0", newid, name);
	long st = 0;
	json_object *d = NULL;
	cr_assert_eq(sim_api(&f->sp, "POST", "/nodes/pve1/qemu/9024/clone", body, &st, &d), 0);
	cr_assert_eq(st, 200, "%s", d ? json_object_to_json_string(d) : "?");
	json_object_put(d);
	free(body);
	cr_assert_eq(simproc_advance(&f->sp, 3), 0); /* the linked clone is done */
	cr_assert(lagging(f, newid), "the cluster's list should not show %s yet", name);
	return newid;
}

/* /cluster/resources shows a new guest without its name for up to 10 s:
 * a rerun of up right after the create finds it all the same. */
Test(job_sim, up_right_after_a_create_finds_the_guest_the_cluster_list_does_not_name_yet)
{
	static struct fx f;
	fx_start(&f);
	int vmid = fresh_guest(&f, 340, "fresh1");
	struct up_result r;
	cr_assert_eq(run_up(&f, "fresh1", &r), JOB_OUT_DONE, "%s",
		     r.error.message ? r.error.message : "");
	cr_expect_eq(r.vmid, vmid, "up took the existing guest");
	cr_expect_neq(r.status, UP_CREATED);
	up_result_free(&r);
	cr_expect_eq(guests_named(&f, "fresh1"), 1, "never a second guest");
	cr_expect_eq(requests(&f, "POST", "/clone", -1), 1, "cloned once (by the test)");
	fx_stop(&f);
}

/* A guest this client made is known by name while the cluster's list
 * lags: a listing (up's find step, its check for a concurrent twin after
 * the clone) does not read the node's list for it. */
Test(job_sim, a_guest_made_here_needs_no_node_list_while_the_cluster_list_lags)
{
	static struct fx f;
	fx_start(&f);
	struct pve_error e = {0};
	struct guest_ref src = {0};
	cr_assert_eq(guest_find_by_vmid(f.c, 9024, &src, &e), 1);
	just_after_status_update(&f);
	struct guest_clone_req req = {.source = &src, .name = "made1", .full = false};
	struct guest_wait w = {.clock = &f.clk, .poll_s = 1};
	struct guest_ref g = {0};
	cr_assert_eq(guest_clone(f.c, &req, &w, &g, NULL, &e), 0, "%s",
		     e.message ? e.message : "");
	struct guest_list l;
	cr_assert_eq(guest_list(f.c, NULL, &l, &e), 0);
	struct guest_ref found = {0};
	cr_expect_eq(guest_list_find_name(&l, "made1", &found, &e), 1, "found by name");
	cr_expect_eq(found.vmid, g.vmid);
	guest_list_free(&l);
	cr_assert(lagging(&f, g.vmid), "the cluster's list should not name VMID %d yet", g.vmid);
	cr_expect_eq(requests(&f, "GET", "/nodes/pve1/qemu", -1), 0,
		     "the node's list was not needed");
	/* another client (another worker, another process) does not know
	 * it: it reads the node's list */
	struct pve *other = pve_new(&f.opts, &e);
	cr_assert_not_null(other, "pve_new: %s", e.message ? e.message : "?");
	cr_assert_eq(guest_list(other, NULL, &l, &e), 0);
	guest_ref_clear(&found);
	cr_expect_eq(guest_list_find_name(&l, "made1", &found, &e), 1, "found by name");
	guest_list_free(&l);
	pve_free(other);
	cr_expect_eq(requests(&f, "GET", "/nodes/pve1/qemu", -1), 1);
	guest_ref_clear(&found);
	guest_ref_clear(&g);
	guest_ref_clear(&src);
	fx_stop(&f);
}

Test(job_sim, down_right_after_a_create_deletes_the_guest)
{
	static struct fx f;
	fx_start(&f);
	fresh_guest(&f, 341, "fresh2");
	cr_assert_eq(run_down(&f, "fresh2"), JOB_OUT_DONE);
	cr_expect_eq(guests_named(&f, "fresh2"), 0, "down found and deleted it");
	fx_stop(&f);
}

Test(job_sim, a_lost_start_answer_is_resolved_by_looking_not_by_sending_again)
{
	static struct fx f;
	fx_start(&f);
	cr_assert_eq(simproc_fault(&f.sp, "{\"method\":\"POST\",\"path\":\"/status/start$\","
					  "\"nth\":1,\"action\":\"timeout\",\"after\":true}"),
		     0);
	cr_assert_eq(run_up(&f, "look1", NULL), JOB_OUT_DONE);
	cr_assert_eq(requests(&f, "POST", "/status/start", -1), 1, "sent once");
	cr_assert_eq(guests_named(&f, "look1"), 1);
	fx_stop(&f);
}

/* ---- the fault matrix ------------------------------------------------------------------- */

struct target {
	const char *method;
	const char *rx;      /* path regex for the fault */
	const char *suffix;  /* path suffix for counting */
	bool down;           /* a request of down (the guest is made first) */
};

static const struct target targets[] = {
	{"POST", "/qemu/9024/clone$", "/qemu/9024/clone", false},
	{"PUT", "/qemu/[0-9]+/resize$", "/resize", false},
	{"POST", "/qemu/[0-9]+/status/start$", "/status/start", false},
	{"POST", "/qemu/[0-9]+/status/shutdown$", "/status/shutdown", true},
	{"DELETE", "/nodes/pve1/qemu/[0-9]+$", "", true},
};

/* Effective requests (status 200) to the target, for DELETE the guest's
 * own path. */
static int effective(struct fx *f, const struct target *t, int vmid)
{
	if (strcmp(t->method, "DELETE") == 0) {
		char *sfx = strprintf("/nodes/pve1/qemu/%d", vmid);
		int n = requests(f, "DELETE", sfx, 200);
		free(sfx);
		return n;
	}
	return requests(f, t->method, t->suffix, 200);
}

static void one_case(const struct target *t, const struct fault_kind *k)
{
	static struct fx f;
	fx_start(&f);
	const char *name = "fault1";
	int vmid = 0;
	if (t->down) {
		struct up_result r;
		cr_assert_eq(run_up(&f, name, &r), JOB_OUT_DONE);
		vmid = r.vmid;
		up_result_free(&r);
	}
	char *rule = fault_rule(t->method, t->rx, 1, k);
	cr_assert_eq(simproc_fault(&f.sp, rule), 0, "%s", rule);
	free(rule);
	struct up_result r = {0};
	enum job_outcome o = t->down ? run_down(&f, name) : run_up(&f, name, &r);
	if (!t->down)
		vmid = r.vmid ? r.vmid : vmid;
	int n = guests_named(&f, name);
	cr_assert(n == 0 || n == 1, "%s %s: %d guests", t->suffix, k->name, n);
	cr_assert_leq(effective(&f, t, vmid), 1, "%s %s %s: took effect twice", t->method,
		      t->suffix, k->name);
	/* exit 1 means nothing was left half-done by up; a guest that up
	 * made and left says so (exit 3) */
	if (!t->down && o == JOB_OUT_FAILED)
		cr_assert_eq(n, 0, "%s %s: failed (exit 1) with a guest left", t->suffix, k->name);
	if (!t->down && o == JOB_OUT_NEEDS_ATTENTION)
		cr_assert(r.left && n == 1, "%s %s: needs attention without saying what",
			  t->suffix, k->name);
	cr_assert(o == JOB_OUT_DONE || o == JOB_OUT_FAILED || o == JOB_OUT_NEEDS_ATTENTION,
		  "%s %s: outcome %s", t->suffix, k->name, job_outcome_name(o));
	if (!t->down && o == JOB_OUT_DONE)
		cr_assert_eq(r.status, UP_CREATED);
	up_result_free(&r);
	/* the rerun converges: down completes its unfinished job or deletes
	 * the guest left; after a down that ended with the guest gone, a new
	 * one finds none (not found, exit 2) */
	if (t->down) {
		enum job_outcome ro = run_down(&f, name),
				 want = o == JOB_OUT_NEEDS_ATTENTION || n == 1 ? JOB_OUT_DONE
									    : JOB_OUT_USAGE;
		cr_assert_eq(ro, want, "%s %s: rerun after %s: %s", t->suffix, k->name,
			     job_outcome_name(o), job_outcome_name(ro));
		cr_assert_eq(guests_named(&f, name), 0);
	} else {
		cr_assert_eq(run_up(&f, name, NULL), JOB_OUT_DONE, "%s %s: rerun", t->suffix,
			     k->name);
		cr_assert_eq(guests_named(&f, name), 1);
	}
	fx_stop(&f);
}

#define MATRIX(tn, ti)                                                                     \
	Test(job_faults, tn)                                                               \
	{                                                                                  \
		for (size_t k = 0; k < n_fault_kinds; k++)                                 \
			one_case(&targets[ti], &fault_kinds[k]);                           \
	}
MATRIX(up_clone, 0)
MATRIX(up_resize, 1)
MATRIX(up_start, 2)
MATRIX(down_shutdown, 3)
MATRIX(down_delete, 4)
