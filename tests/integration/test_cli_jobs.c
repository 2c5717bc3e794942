/* test_cli_jobs.c - jobs through the real command-line tool ($PVAGENT_BIN,
 * default build/san/pvagent) against the simulator in real time: Ctrl-C
 * (SIGINT) during a clone keeps the job interrupted with its UPID and
 * exits 130, and `pvagent resume` finishes it without cloning again;
 * SIGKILL right after each task-starting request of `up` and `down` was
 * sent, then the same command again: one guest (none after down), each
 * request effective once; `down` of a guest ends its unfinished jobs (an up
 * killed after its clone), a mistyped one is not found (exit 2) while a
 * rerun of a killed down whose guest is gone completes it; `jobs`
 * and `job` show what happened; migrate, drain and undrain killed at each
 * step boundary and finished by `pvagent resume ID` (below), a drain
 * killed between a guest's move and its home tag finished by resume or by
 * a rerun with other parameters; resume and
 * cancel of what is finished, unknown, running elsewhere, or stored with
 * the pid of an unrelated process or a zombie (resumed, never signalled);
 * cancel of a running migrate: its PVE task followed to its end (the guest
 * on the target, said), or stopped with --stop-task (the guest on its
 * source); a drain's migration cancelled in flight, then the drain again,
 * and a resumed drain waiting for a cancelled job's task.
 * The tool is started as a child and the tests wait for states in its
 * state.db (never for time). */
#include "clirun.h"
#include "simproc.h"
#include "sshd.h"
#include "store.h"
#include "util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct simproc sim;
static pid_t child = -1;

static void cleanup(void)
{
	test_kill(&child);
	simproc_stop(&sim);
}

TestSuite(cli_jobs, .fini = cleanup, .timeout = 180);

struct world {
	char *dir;       /* state and config */
	char *conf;
	char *db;
	const char *bin;
};

static void write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "cannot write %s", path);
	cr_assert_eq(fputs(text, f) < 0, 0);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(path, mode), 0);
}

/* The world on scenario (NULL: the demo's) with extra lines of
 * configuration (may be NULL). */
static void world_start_on(struct world *w, const char *scenario, double time_scale,
			   const char *extra)
{
	const char *bin = getenv("PVAGENT_BIN");
	w->bin = bin ? bin : "build/san/pvagent";
	if (access(w->bin, X_OK) < 0)
		cr_skip_test("no pvagent binary (make build/san/pvagent)");
	char tmpl[] = "/tmp/pvagent-test-clijobs.XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	w->dir = strdup(tmpl);
	char scale[32];
	snprintf(scale, sizeof scale, "%g", time_scale);
	const char *args[] = {"--time-scale", scale, NULL};
	cr_assert_eq(simproc_start(&sim, scenario ? scenario : "tests/pvesim/scenarios/demo.json",
				   args),
		     0);
	char *tdir = strprintf("%s/templates", w->dir);
	cr_assert_eq(mkdir(tdir, 0755), 0);
	char *t = strprintf("%s/jobvm.tmpl", tdir);
	char *text = NULL;
	cr_assert_eq(read_file("tests/unit/data/job-vm.tmpl", &text, NULL), 0);
	write_text(t, text, 0644);
	free(text);
	free(t);
	char *secret = strprintf("%s/token.secret", w->dir);
	char *body = strprintf("%s\n", sim.token_secret);
	write_text(secret, body, 0600);
	free(body);
	w->conf = strprintf("%s/pvagent.conf", w->dir);
	char *conf = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			       "fingerprint = %s\nnode = pve1\ntimeout = 3\n"
			       "[paths]\ntemplates = %s\nstate = %s\n%s",
			       sim.url, sim.token_id, secret, sim.fingerprint, tdir, w->dir,
			       extra ? extra : "");
	write_text(w->conf, conf, 0600);
	free(conf);
	free(secret);
	free(tdir);
	w->db = store_path(w->dir);
}

static void world_start(struct world *w, double time_scale)
{
	world_start_on(w, NULL, time_scale, NULL);
}

static void world_free(struct world *w)
{
	cr_assert_eq(simproc_stop(&sim), 0, "simulator did not exit cleanly");
	char *cmd = strprintf("rm -rf '%s'", w->dir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	free(w->dir);
	free(w->conf);
	free(w->db);
}

/* Run pvagent to the end; *out: stdout and stderr. */
static int pv(const struct world *w, char **out, ...)
{
	const char *argv[24] = {w->bin, "-c", w->conf};
	size_t n = 3;
	va_list ap;
	va_start(ap, out);
	for (const char *a; (a = va_arg(ap, const char *)) && n + 1 < 24;)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	int rc = test_run(argv, NULL, out);
	cr_assert_geq(rc, 0);
	cr_assert_null(strstr(*out, "Sanitizer"), "sanitizer report:\n%s", *out);
	cr_assert_null(strstr(*out, "runtime error"), "UBSan:\n%s", *out);
	return rc;
}

/* Start `pvagent -c CONF up NAME -t jobvm --set size=40G` (or, down,
 * `pvagent -c CONF down NAME`) in the background, its output into a file. */
static pid_t cmd_bg(const struct world *w, const char *name, const char *out_path, bool down)
{
	const char *up[] = {w->bin, "-c", w->conf, "up", name, "-t", "jobvm", "--set", "size=40G",
			    NULL};
	const char *dn[] = {w->bin, "-c", w->conf, "down", name, "--yes", NULL};
	pid_t pid = test_spawn(down ? dn : up, out_path);
	cr_assert_geq(pid, 0);
	return pid;
}

/* Wait (bounded, 60 s) until the step of the job of name has been sent
 * (attempts > 0) and, when want_upid, has its UPID recorded. */
static void wait_sent(const struct world *w, const char *name, const char *step, bool want_upid)
{
	cr_assert_eq(test_wait_step_sent(w->db, name, step, want_upid, child), 0,
		     "step %s of %s was never sent (or pvagent ended first)", step, name);
}

static int requests(const char *method, const char *suffix, int status)
{
	json_object *log = simproc_requests(&sim);
	char *pat = strprintf("*%s", suffix);
	int n = simproc_count_requests(log, method, pat, status);
	free(pat);
	json_object_put(log);
	return n;
}

static int guests_named(const char *name)
{
	json_object *st = simproc_state(&sim);
	int n = simproc_count_named(st, name);
	json_object_put(st);
	return n;
}

static json_object *last_json(const char *out)
{
	const char *line = NULL;
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (*p == '{')
			line = p;
	cr_assert_not_null(line, "no JSON in:\n%s", out);
	char *one = strndup(line, strcspn(line, "\n"));
	json_object *o = json_tokener_parse(one);
	cr_assert_not_null(o, "bad JSON: %s", one);
	free(one);
	return o;
}

Test(cli_jobs, ctrl_c_during_a_clone_keeps_the_job_and_resume_finishes_it)
{
	static struct world w;
	world_start(&w, 1); /* real time: the clone takes seconds */
	char *outp = strprintf("%s/up.out", w.dir);
	child = cmd_bg(&w, "int1", outp, false);
	wait_sent(&w, "int1", "clone", true);
	cr_assert_eq(kill(child, SIGINT), 0);
	int status = 0;
	cr_assert_eq(waitpid(child, &status, 0), child);
	child = -1;
	char *out = NULL;
	cr_assert_eq(read_file(outp, &out, NULL), 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d:\n%s", status, out);
	cr_assert(strstr(out, "pvagent resume 1"), "no resume hint:\n%s", out);
	cr_expect(strstr(out, "stopped in step clone; its PVE task UPID:") &&
			  strstr(out, ":qmclone:") && strstr(out, "goes on without pvagent"),
		  "what goes on in PVE is said:\n%s", out);
	free(out);

	/* the store says interrupted, with the clone's UPID */
	char *js = NULL;
	cr_assert_eq(pv(&w, &js, "--json", "job", "1", NULL), 0, "%s", js);
	json_object *o = last_json(js), *job, *v, *steps;
	cr_assert(json_object_object_get_ex(o, "job", &job));
	cr_assert(json_object_object_get_ex(job, "state", &v));
	cr_assert_str_eq(json_object_get_string(v), "interrupted");
	cr_assert(json_object_object_get_ex(job, "steps", &steps));
	json_object *clone = json_object_array_get_idx(steps, 1), *u;
	cr_assert(json_object_object_get_ex(clone, "upid", &u), "%s", js);
	cr_assert(strstr(json_object_get_string(u), ":qmclone:"));
	json_object_put(o);
	free(js);

	/* resume: waits for that clone, never clones again */
	cr_assert_eq(pv(&w, &out, "resume", "1", NULL), 0, "%s", out);
	cr_assert(strstr(out, "created"), "%s", out);
	free(out);
	cr_assert_eq(requests("POST", "/qemu/9024/clone", -1), 1);
	cr_assert_eq(guests_named("int1"), 1);
	cr_assert_eq(pv(&w, &out, "jobs", NULL), 0);
	cr_assert(strstr(out, "done") && strstr(out, "int1"), "%s", out);
	free(out);
	cr_assert_neq(pv(&w, &out, "resume", "1", NULL), 0, "a finished job is not resumed");
	cr_assert(strstr(out, "done already"), "%s", out);
	free(out);
	free(outp);
	world_free(&w);
}

/* SIGKILL while a task-starting request is in flight (the simulator holds
 * its answer back), then the same command again. down: the guest is made
 * first and `down` is the command killed. */
static void killed_after(const char *method, const char *rx, const char *suffix,
			 const char *step, bool down)
{
	static struct world w;
	world_start(&w, 100);
	char *out = NULL;
	if (down) {
		cr_assert_eq(pv(&w, &out, "up", "kill1", "-t", "jobvm", NULL), 0, "%s", out);
		free(out);
	}
	char *rule = strprintf("{\"method\":\"%s\",\"path\":\"%s\",\"nth\":1,\"action\":\"delay\","
			       "\"ms\":1500}",
			       method, rx);
	cr_assert_eq(simproc_fault(&sim, rule), 0);
	free(rule);
	char *outp = strprintf("%s/up.out", w.dir);
	child = cmd_bg(&w, "kill1", outp, down);
	wait_sent(&w, "kill1", step, false);
	test_kill(&child);
	int rc = down ? pv(&w, &out, "down", "kill1", "--yes", NULL)
		      : pv(&w, &out, "up", "kill1", "-t", "jobvm", "--set", "size=40G", NULL);
	cr_assert_eq(rc, 0, "rerun after SIGKILL at %s:\n%s", step, out);
	cr_assert(strstr(out, "resumed"), "the rerun resumed the killed job:\n%s", out);
	free(out);
	cr_assert_eq(guests_named("kill1"), down ? 0 : 1);
	cr_assert_leq(requests(method, suffix, 200), 1, "%s took effect twice", step);
	free(outp);
	world_free(&w);
}

Test(cli_jobs, sigkill_after_the_clone_was_sent)
{
	killed_after("POST", "/qemu/9024/clone$", "/qemu/9024/clone", "clone", false);
}

Test(cli_jobs, sigkill_after_the_resize_was_sent)
{
	killed_after("PUT", "/resize$", "/resize", "resize", false);
}

Test(cli_jobs, sigkill_after_the_start_was_sent)
{
	killed_after("POST", "/status/start$", "/status/start", "start", false);
}

Test(cli_jobs, sigkill_after_the_shutdown_was_sent)
{
	killed_after("POST", "/status/shutdown$", "/status/shutdown", "shutdown", true);
}

Test(cli_jobs, sigkill_after_the_delete_was_sent)
{
	killed_after("DELETE", "/qemu/[0-9]+$", "/qemu/100", "delete", true);
}

/* The first column of the first row of a query on the store (-1: none). */
static long long db_int(const struct world *w, const char *sql)
{
	return test_db_int(w->db, sql, NULL);
}

static void db_exec(const struct world *w, const char *sql)
{
	sqlite3 *db = NULL;
	cr_assert_eq(sqlite3_open(w->db, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 2000);
	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	sqlite3_close(db);
}

/* Bounded wait (60 s) until the query gives at least want, while the
 * background pvagent (child) runs. */
static void wait_db(const struct world *w, const char *sql, long long want, const char *what)
{
	for (int i = 0; i < 3000; i++) {
		if (db_int(w, sql) >= want)
			return;
		int status;
		cr_assert_eq(waitpid(child, &status, WNOHANG), 0, "pvagent ended before: %s", what);
		struct timespec ts = {0, 20L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling a state (the store), bounded */
	}
	cr_assert_fail("never: %s", what);
}

/* cmd_bg of name (up, or down) stopped by PVAGENT_STOP_AFTER right after
 * stop (WORKFLOW:STEP) committed, then SIGKILLed there. */
static void killed_at_boundary(const struct world *w, const char *stop, const char *name,
			       const char *out_path, bool down)
{
	cr_assert_eq(setenv("PVAGENT_STOP_AFTER", stop, 1), 0);
	child = cmd_bg(w, name, out_path, down);
	cr_assert_eq(unsetenv("PVAGENT_STOP_AFTER"), 0);
	int st = 0;
	cr_assert_eq(waitpid(child, &st, WUNTRACED), child);
	cr_assert(WIFSTOPPED(st), "%s ended (status %d) instead of stopping", stop, st);
	test_kill(&child);
}

/* An up killed at a step boundary (PVAGENT_STOP_AFTER stops it right
 * after its clone committed), then `down` of that guest: the up job ends
 * as cancelled, saying so, and is not resumed any more. */
Test(cli_jobs, down_ends_the_guests_unfinished_jobs)
{
	static struct world w;
	world_start(&w, 100);
	char *outp = strprintf("%s/up.out", w.dir);
	killed_at_boundary(&w, "up:clone", "gone1", outp, false);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'running'"), 1);
	cr_assert_eq(guests_named("gone1"), 1);

	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "down", "gone1", "--yes", NULL), 0, "%s", out);
	cr_expect(strstr(out, "up job 1 on gone1 ended"), "the down says so:\n%s", out);
	free(out);
	cr_assert_eq(guests_named("gone1"), 0);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'cancelled'"),
		     1);
	cr_assert_eq(pv(&w, &out, "jobs", NULL), 0, "%s", out);
	bool closed = false;
	for (const char *l = out; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char *row = strndup(l, strcspn(l, "\n"));
		closed = closed || (strncmp(row, "1 ", 2) == 0 && strstr(row, " up ") &&
				    strstr(row, " cancelled "));
		free(row);
	}
	cr_expect(closed, "jobs shows the up job closed:\n%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "job", "1", NULL), 0, "%s", out);
	cr_expect(strstr(out, "guest removed by down job 2"), "job 1 says why:\n%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "resume", "1", NULL), 2, "%s", out);
	cr_expect(strstr(out, "cancelled already"), "%s", out);
	free(out);
	/* nothing cloned again, nothing left */
	cr_assert_eq(requests("POST", "/qemu/9024/clone", -1), 1);
	cr_assert_eq(guests_named("gone1"), 0);
	free(outp);
	world_free(&w);
}

/* An up whose start fails after its task was sent needs attention (exit
 * 3): its row in the result table says so, not "failed", with the time
 * the steps took, the failed one's included (its task's status read held
 * back 3 s). */
Test(cli_jobs, result_table_says_needs_attention_with_the_real_time)
{
	static struct world w;
	world_start(&w, 100);
	cr_assert_eq(simproc_fault(&sim, "{\"method\":\"POST\",\"path\":\"/status/start$\","
					 "\"nth\":1,\"action\":\"task_fail\","
					 "\"message\":\"injected task failure\"}"),
		     0);
	cr_assert_eq(simproc_fault(&sim, "{\"method\":\"GET\",\"path\":\"qmstart.*/status$\","
					 "\"nth\":1,\"action\":\"delay\",\"ms\":3000}"),
		     0);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "up", "att1", "-t", "jobvm", NULL), 3, "%s", out);
	const char *row = strstr(out, "\natt1 ");
	cr_assert_not_null(row, "%s", out);
	char *line = strndup(row + 1, strcspn(row + 1, "\n"));
	cr_expect(strstr(line, " needs attention "), "the row says the outcome of exit 3: '%s'",
		  line);
	cr_expect_null(strstr(line, "failed"), "'%s'", line);
	const char *t = strrchr(line, ' ');
	double secs = t ? strtod(t + 1, NULL) : 0;
	cr_expect_geq(secs, 3.0, "the time leaves out the failed step: '%s'", line);
	free(line);
	free(out);
	world_free(&w);
}

/* Store a finished job as a command would have left it. */
static long long stored_job(const struct world *w, const char *wf, const char *subject,
			    const char *params, const char *vars)
{
	struct store *st = NULL;
	char *err = NULL;
	long long id = 0;
	cr_assert_eq(store_open(w->db, &st, &err), 0, "%s", err);
	cr_assert_eq(store_job_insert(st, wf, subject, params, 1, &id, &err), 0, "%s", err);
	struct store_job sj;
	cr_assert_eq(store_job_get(st, id, &sj, &err), 1, "%s", err);
	free(sj.vars);
	sj.vars = strdup(vars);
	sj.state = JOB_DONE;
	sj.ended = 2;
	cr_assert_eq(store_job_update(st, &sj, &err), 0, "%s", err);
	store_job_free(&sj);
	store_close(st);
	return id;
}

/* A legacy guest has no guest agent: PVE cannot tell its address. The
 * address an earlier job reached it at (inject's --address, up's --var
 * ip) is what show uses then, saying where it came from; not one from
 * before a down of that VMID (another guest had it). */
Test(cli_jobs, show_remembers_the_address_a_job_was_given)
{
	static struct world w;
	world_start(&w, 100);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "show", "fbsd9-legacy", NULL), 0, "%s", out);
	cr_expect(strstr(out, "\naddress: unknown\n"), "%s", out);
	free(out);
	stored_job(&w, "up", "fbsd9-legacy", "{\"vars\":{\"ip\":\"127.0.9.8\"}}",
		   "{\"vmid\":190}");
	long long id = stored_job(&w, "inject", "fbsd9-legacy", "{\"address\":\"127.0.9.9\"}",
				  "{\"vmid\":190}");
	stored_job(&w, "inject", "other", "{\"address\":\"127.0.9.7\"}", "{\"vmid\":191}");
	cr_assert_eq(pv(&w, &out, "show", "190", NULL), 0, "%s", out);
	char *want = strprintf("\naddress: 127.0.9.9 (as inject job %lld's --address gave it)\n",
			       id);
	cr_expect(strstr(out, want), "%s", out);
	free(want);
	free(out);
	cr_assert_eq(pv(&w, &out, "--json", "show", "fbsd9-legacy", NULL), 0, "%s", out);
	json_object *o = last_json(out), *a = NULL;
	cr_assert(json_object_object_get_ex(o, "address", &a), "%s", out);
	cr_expect_str_eq(json_object_get_string(a), "127.0.9.9");
	json_object_put(o);
	free(out);
	/* a down of VMID 190 after them: they were about a guest now gone */
	stored_job(&w, "down", "fbsd9-legacy", "{}", "{\"vmid\":190}");
	cr_assert_eq(pv(&w, &out, "show", "fbsd9-legacy", NULL), 0, "%s", out);
	cr_expect(strstr(out, "\naddress: unknown\n"), "%s", out);
	free(out);
	world_free(&w);
}

/* down deletes only when told to: without a terminal and without --yes
 * it is refused before any request that changes anything (naming --yes);
 * on a terminal it lists the guest with its disks and asks, and "n"
 * deletes nothing, "y" deletes; --dry-run asks nothing. */
Test(cli_jobs, down_asks_before_deleting)
{
	static struct world w;
	world_start(&w, 100);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "up", "ask1", "-t", "jobvm", NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "down", "ask1", NULL), 2, "%s", out);
	cr_expect(strstr(out, "--yes"), "the refusal names --yes:\n%s", out);
	cr_expect(strstr(out, "nothing deleted"), "%s", out);
	free(out);
	cr_assert_eq(guests_named("ask1"), 1, "refused, yet deleted");
	cr_expect_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE workflow = 'down'"), 0);
	cr_assert_eq(pv(&w, &out, "down", "ask1", "--dry-run", NULL), 0, "%s", out);
	cr_expect_null(strstr(out, "[y/N]"), "%s", out);
	free(out);

	int rc = test_pvagent_pty_answer(w.bin, w.conf, "n", &out, "down", "ask1", NULL);
	cr_assert_neq(rc, -2, "sanitizer report:\n%s", out);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "[y/N]"), "no question asked:\n%s", out);
	cr_expect(strstr(out, "ask1 (VM "), "the question names the guest:\n%s", out);
	cr_expect(strstr(out, ":vm-") && strstr(out, "-disk-"), "and its disks:\n%s", out);
	free(out);
	cr_assert_eq(guests_named("ask1"), 1, "answered n, yet deleted");
	cr_expect_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE workflow = 'down'"), 0);

	rc = test_pvagent_pty_answer(w.bin, w.conf, "y", &out, "down", "ask1", NULL);
	cr_assert_neq(rc, -2, "sanitizer report:\n%s", out);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "deleted"), "%s", out);
	free(out);
	cr_assert_eq(guests_named("ask1"), 0, "answered y, not deleted");
	world_free(&w);
}

/* A mistyped name is not found (exit 2, as `show` says it), while a rerun
 * of a down whose guest an earlier, killed run deleted completes it. */
Test(cli_jobs, down_of_a_guest_that_does_not_exist)
{
	static struct world w;
	world_start(&w, 100);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "down", "nosuch", "--yes", NULL), 2, "%s", out);
	cr_expect(strstr(out, "pvagent down: no guest named 'nosuch'"), "%s", out);
	cr_expect(strstr(out, "absent"), "%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "--json", "down", "nosuch", "--yes", NULL), 2, "%s", out);
	json_object *o = last_json(out), *g, *e, *k;
	cr_assert(json_object_object_get_ex(o, "guests", &g), "%s", out);
	g = json_object_array_get_idx(g, 0);
	cr_assert(json_object_object_get_ex(g, "error", &e) && json_object_object_get_ex(e, "kind", &k),
		  "%s", out);
	cr_expect_str_eq(json_object_get_string(k), "not-found");
	json_object_put(o);
	free(out);
	/* not found is said, not stored: no failed job left in `jobs` */
	cr_expect_eq(db_int(&w, "SELECT count(*) FROM jobs"), 0);

	/* killed right after its find, then the guest deleted by another
	 * down (by VMID): the rerun resumes that job and ends it done */
	cr_assert_eq(pv(&w, &out, "up", "kill2", "-t", "jobvm", NULL), 0, "%s", out);
	free(out);
	char *outp = strprintf("%s/down.out", w.dir);
	killed_at_boundary(&w, "down:find", "kill2", outp, true);
	long long id = db_int(&w, "SELECT id FROM jobs WHERE workflow = 'down' AND subject = 'kill2'");
	char vmid[16];
	snprintf(vmid, sizeof vmid, "%lld",
		 db_int(&w, "SELECT json_extract(vars, '$.vmid') FROM jobs WHERE workflow = 'down' "
			"AND subject = 'kill2'"));
	cr_assert_eq(pv(&w, &out, "down", vmid, "--yes", NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(guests_named("kill2"), 0);
	cr_assert_eq(pv(&w, &out, "down", "kill2", "--yes", NULL), 0, "%s", out);
	cr_expect(strstr(out, "resumed"), "%s", out);
	free(out);
	char *q = strprintf("SELECT count(*) FROM jobs WHERE id = %lld AND state = 'done'", id);
	cr_assert_eq(db_int(&w, q), 1);
	free(q);
	free(outp);
	world_free(&w);
}

/* The shipped OpenVZ template on a PVE 9 cluster: refused before any
 * change or job, naming the version; `templates` marks it, in 80
 * columns. */
Test(cli_jobs, an_openvz_template_is_refused_on_pve_4_and_later)
{
	static struct world w;
	world_start(&w, 100);
	char *text = NULL, *t = strprintf("%s/templates/debian-7-openvz.tmpl", w.dir);
	cr_assert_eq(read_file("templates/debian-7-openvz.tmpl", &text, NULL), 0);
	write_text(t, text, 0644);
	free(text);
	free(t);
	char *out = NULL;
	const char *want = "pvagent up: template debian-7-openvz makes OpenVZ containers, which "
			   "need PVE 2.x/3.x (this cluster runs PVE 9.";
	for (int dry = 0; dry < 2; dry++) {
		int rc = pv(&w, &out, "up", "ovz1", "-t", "debian-7-openvz", "--var", "ip=10.0.0.5",
			    dry ? "--dry-run" : NULL, NULL);
		cr_assert_eq(rc, 2, "%s", out);
		cr_expect(strstr(out, want), "%s", out);
		free(out);
	}
	cr_expect_eq(requests("POST", "/lxc", -1) + requests("POST", "/openvz", -1), 0);
	/* no job stored (refused before the store is even opened: -1) */
	cr_expect_leq(db_int(&w, "SELECT count(*) FROM jobs"), 0, "no job was stored");
	/* not a terminal: 80 columns, long cells cut; --long adds the
	 * source, --json has every cell whole */
	cr_assert_eq(setenv("COLUMNS", "80", 1), 0);
	const char *src = "local:vztmpl/debian-7.0-standard_7.0-2_amd64.tar.gz";
	for (int lng = 0; lng < 2; lng++) {
		cr_assert_eq(pv(&w, &out, "templates", lng ? "--long" : NULL, NULL), 0, "%s", out);
		cr_expect(strstr(out, "PVE 2.x/3.x only"), "templates marks it:\n%s", out);
		cr_expect(strstr(out, "...\n"), "a long description is cut:\n%s", out);
		cr_expect(lng ? strstr(out, "SOURCE") != NULL : strstr(out, "SOURCE") == NULL, "%s",
			  out);
		for (const char *l = out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
			cr_expect_leq(strcspn(l, "\n"), 80, "wider than 80:\n%s", out);
		free(out);
	}
	cr_assert_eq(unsetenv("COLUMNS"), 0);
	cr_assert_eq(pv(&w, &out, "--json", "templates", NULL), 0, "%s", out);
	cr_expect(strstr(out, src) && strstr(out, "Debian 7 (wheezy) OpenVZ container\""), "%s",
		  out);
	free(out);
	world_free(&w);
}

/* More memory than the node has in all: up --dry-run says so in its plan
 * and as a --json note; a value that fits says nothing. */
Test(cli_jobs, dry_run_notes_memory_beyond_the_nodes)
{
	static struct world w;
	world_start(&w, 100);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "up", "mem1", "-t", "jobvm", "--set", "memory=999999999",
			"--dry-run", NULL),
		     0, "%s", out);
	cr_expect(strstr(out, "note: memory 999999999 MiB is more than node pve1 has in all ("),
		  "%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "--json", "up", "mem1", "-t", "jobvm", "--set",
			"memory=999999999", "--dry-run", NULL),
		     0, "%s", out);
	cr_expect(strstr(out, "\"event\":\"note\"") &&
			  strstr(out, "memory 999999999 MiB is more than node pve1"),
		  "%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "up", "mem1", "-t", "jobvm", "--set", "memory=1024",
			"--dry-run", NULL),
		     0, "%s", out);
	cr_expect_null(strstr(out, "is more than node"), "%s", out);
	free(out);
	cr_assert_eq(guests_named("mem1"), 0);
	world_free(&w);
}

/* pvagent ARGS... in the background (child), its output into a file. */
static void start_bg(const struct world *w, const char *const *args)
{
	const char *argv[24] = {w->bin, "-c", w->conf};
	size_t n = 3;
	for (size_t i = 0; args[i] && n + 1 < 24; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	char *outp = strprintf("%s/bg.out", w->dir);
	child = test_spawn(argv, outp);
	cr_assert_geq(child, 0);
	free(outp);
}

static void sim_guest_key(int vmid, char *node, size_t nn, const char *key, char *val,
			  size_t nv)
{
	simproc_guest(&sim, vmid, node, nn, key, val, nv);
}

/* Its node and tags. */
static void sim_guest(int vmid, char *node, size_t nn, char *tags, size_t nt)
{
	simproc_guest(&sim, vmid, node, nn, "tags", tags, nt);
}

static int migrations_of(int vmid)
{
	return simproc_migrations(&sim, vmid);
}

/* The guests drain.json's drain of pve1 moves (the others are a template,
 * pinned, or fit nowhere). */
static const int MOVERS[] = {303, 304, 305, 306, 307, 308, 309, 310, 311};
#define N_MOVERS (sizeof MOVERS / sizeof *MOVERS)

/* ---- jobs that own themselves: migrate, drain and undrain killed, then resumed -------- *
 *
 * drain.json, real time scaled: each workflow killed with SIGKILL at each
 * of its step boundaries (a drain also in the middle of its moves), then
 * `pvagent resume ID` alone finishes it: each guest's migration started
 * at most once, every guest a drain moved carries its home tag, an
 * undrain brings them all home. */

#define SCEN "tests/pvesim/scenarios/drain.json"
#define MIGRATE_CONF "[migrate]\nprobe_port = 1\nmax_workers = 2\n"

/* pvagent ARGS... (job 1) killed once the store shows what sql asks; then
 * `pvagent resume 1` must finish it. */
static void kill_when_then_resume(const struct world *w, const char *const *args,
				  const char *sql, const char *what)
{
	start_bg(w, args);
	wait_db(w, sql, 1, what);
	test_kill(&child);
	char *out = NULL;
	int rc = pv(w, &out, "resume", "1", NULL);
	cr_assert_eq(rc, 0, "resume after SIGKILL (%s):\n%s", what, out);
	free(out);
}

/* The world on drain.json with MIGRATE_CONF, the first PUT of web1's
 * (303) config on a node matching node_rx held ms by the simulator. */
static void world_holding_put(struct world *w, const char *node_rx, int ms)
{
	world_start_on(w, SCEN, 20, MIGRATE_CONF);
	char *rule = strprintf("{\"method\":\"PUT\",\"path\":\"^/nodes/%s/qemu/303/config$\","
			       "\"nth\":1,\"action\":\"delay\",\"ms\":%d}",
			       node_rx, ms);
	cr_assert_eq(simproc_fault(&sim, rule), 0);
	free(rule);
}

/* ---- migrate: killed after each step ---------------------------------------------- */

#define STEP_DONE_SQL(job, idx)                                                                 \
	"SELECT count(*) FROM steps WHERE job = " #job " AND idx = " #idx " AND state = 'done'"

/* `migrate web1 pve2 --max-downtime 100` (so that every step has work:
 * the limit is set, the guest moved, looked at, and the limit put back on
 * pve2), killed once the store shows what step_done_sql asks; the put back
 * is held 1.5 s by the simulator, so that the job cannot end first. */
static void migrate_killed_after(const char *step_done_sql, const char *what)
{
	static struct world w;
	world_holding_put(&w, "pve2", 1500);
	const char *args[] = {"migrate", "web1", "pve2", "--max-downtime", "100", NULL};
	kill_when_then_resume(&w, args, step_done_sql, what);
	char *out = NULL;
	char node[32], tags[128];
	sim_guest(303, node, sizeof node, tags, sizeof tags);
	cr_assert_str_eq(node, "pve2");
	cr_assert_leq(migrations_of(303), 1, "the migration was started twice (%s)", what);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'done'"), 1);
	char limit[32];
	sim_guest_key(303, node, sizeof node, "migrate_downtime", limit, sizeof limit);
	cr_assert_str_eq(limit, "", "the limit was not put back (%s)", what);
	/* done: resume again says so, exit 2, sends nothing */
	int before = simproc_count(&sim, "POST", "", -1);
	cr_assert_eq(pv(&w, &out, "resume", "1", NULL), 2, "%s", out);
	cr_assert(strstr(out, "done already"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sim, "POST", "", -1), before);
	world_free(&w);
}

Test(cli_jobs, migrate_killed_after_plan)
{
	migrate_killed_after(STEP_DONE_SQL(1, 0), "plan done");
}

Test(cli_jobs, migrate_killed_after_downtime)
{
	migrate_killed_after(STEP_DONE_SQL(1, 1), "downtime done");
}

Test(cli_jobs, migrate_killed_after_its_task_was_started)
{
	migrate_killed_after("SELECT count(*) FROM steps WHERE job = 1 AND idx = 2 AND "
			     "upid IS NOT NULL",
			     "the migration task started");
}

Test(cli_jobs, migrate_killed_after_migrate)
{
	migrate_killed_after(STEP_DONE_SQL(1, 2), "migrate done");
}

Test(cli_jobs, migrate_killed_after_verify)
{
	migrate_killed_after(STEP_DONE_SQL(1, 3), "verify done");
}

/* ---- drain and undrain: killed after plan, and in the middle of the moves ------------- */

static void assert_drained(const char *what)
{
	char *why = simproc_not_drained(&sim, MOVERS, N_MOVERS, "pve1");
	cr_assert_null(why, "%s: %s", what, why);
}

static void drain_killed(const char *sql, const char *what)
{
	static struct world w;
	world_start_on(&w, SCEN, 20, MIGRATE_CONF);
	const char *args[] = {"drain", "pve1", "--partial", NULL};
	kill_when_then_resume(&w, args, sql, what);
	assert_drained(what);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'done'"), 1);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE workflow = 'migrate' AND "
				"state != 'done'"),
		     0, "every migration of the drain ended done");
	world_free(&w);
}

Test(cli_jobs, drain_killed_after_plan)
{
	drain_killed(STEP_DONE_SQL(1, 0), "drain planned");
}

Test(cli_jobs, drain_killed_while_a_migration_runs)
{
	drain_killed("SELECT count(*) FROM steps s JOIN jobs j ON s.job = j.id WHERE "
		     "j.workflow = 'migrate' AND s.name = 'migrate' AND s.upid IS NOT NULL",
		     "a migration's task started");
}

Test(cli_jobs, drain_killed_after_some_migrations_ended)
{
	drain_killed("SELECT count(*) >= 3 FROM jobs WHERE workflow = 'migrate' AND "
		     "state = 'done'",
		     "three migrations done");
}

/* Killed after web1 (303) moved and before its home tag: the tag's PUT on
 * its target is held 3 s by the simulator, and pvagent is killed once the
 * migration's verify step is done. Then `pvagent resume 1`, or a rerun of
 * the drain with other parameters (a new drain job: the first one is
 * superseded; started while the killed run's migration tasks still run
 * in PVE, it waits for them before it plans), leaves every guest moved and
 * tagged, web1 migrated once; undrain brings them all home. */
static void drain_killed_before_a_tag(bool resume)
{
	static struct world w;
	world_holding_put(&w, "pve[23]", 3000);
	const char *args[] = {"drain", "pve1", "--partial", NULL};
	start_bg(&w, args);
	wait_db(&w, "SELECT count(*) FROM steps s JOIN jobs j ON s.job = j.id WHERE "
		    "j.workflow = 'migrate' AND j.subject = '303' AND s.name = 'verify' AND "
		    "s.state = 'done'", 1, "web1 moved");
	test_kill(&child);
	char node[32], tags[128];
	sim_guest(303, node, sizeof node, tags, sizeof tags);
	cr_assert_str_neq(node, "pve1", "web1 moved before the kill");
	cr_assert_null(strstr(tags, "pvagent-home"), "killed before its tag: '%s'", tags);
	char *out = NULL;
	int rc = resume ? pv(&w, &out, "resume", "1", NULL)
			: pv(&w, &out, "drain", "pve1", "--partial", "--max-workers", "1", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	free(out);
	assert_drained(resume ? "resumed" : "rerun");
	cr_assert_eq(migrations_of(303), 1, "web1 was migrated once");
	cr_assert_eq(pv(&w, &out, "undrain", "pve1", NULL), 0, "%s", out);
	free(out);
	for (size_t i = 0; i < N_MOVERS; i++) {
		sim_guest(MOVERS[i], node, sizeof node, tags, sizeof tags);
		cr_assert_str_eq(node, "pve1", "%d is not home", MOVERS[i]);
	}
	world_free(&w);
}

Test(cli_jobs, drain_killed_before_a_tag_then_resumed)
{
	drain_killed_before_a_tag(true);
}

Test(cli_jobs, drain_killed_before_a_tag_then_run_again_otherwise)
{
	drain_killed_before_a_tag(false);
}

/* Killed while a migration task it started runs in PVE, then run again at
 * once with other parameters (a new drain job): the rerun waits for the
 * killed run's task before it plans (migstore_drain_tasks), so no guest is
 * planned, locked out or moved twice; every guest ends moved and tagged. */
Test(cli_jobs, drain_killed_while_its_task_runs_then_run_again_at_once)
{
	static struct world w;
	world_start_on(&w, SCEN, 20, MIGRATE_CONF);
	const char *args[] = {"drain", "pve1", "--partial", NULL};
	start_bg(&w, args);
	wait_db(&w, "SELECT count(*) FROM steps s JOIN jobs j ON s.job = j.id WHERE "
		    "j.workflow = 'migrate' AND s.name = 'migrate' AND s.state = 'running' AND "
		    "s.upid IS NOT NULL", 1, "a migration task started");
	test_kill(&child);
	char *out = NULL;
	int rc = pv(&w, &out, "drain", "pve1", "--partial", "--max-workers", "1", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "waiting for an earlier run's migration task") ||
			  db_int(&w, "SELECT count(*) FROM steps s JOIN jobs j ON s.job = j.id "
				     "WHERE j.workflow = 'migrate' AND s.name = 'migrate' AND "
				     "s.state = 'running'") >= 1,
		  "%s", out);
	free(out);
	assert_drained("rerun at once");
	for (size_t i = 0; i < N_MOVERS; i++)
		cr_assert_eq(migrations_of(MOVERS[i]), 1, "%d was migrated %d times", MOVERS[i],
			     migrations_of(MOVERS[i]));
	world_free(&w);
}

Test(cli_jobs, undrain_killed_in_the_middle_brings_every_guest_home)
{
	static struct world w;
	world_start_on(&w, SCEN, 20, MIGRATE_CONF);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "drain", "pve1", "--partial", NULL), 0, "%s", out);
	free(out);
	assert_drained("before the undrain");
	long long first = db_int(&w, "SELECT max(id) FROM jobs") + 1;
	const char *args[] = {"undrain", "pve1", NULL};
	start_bg(&w, args);
	char *sql = strprintf("SELECT count(*) FROM jobs WHERE workflow = 'migrate' AND id > %lld "
			      "AND state = 'done'",
			      first);
	wait_db(&w, sql, 2, "two guests home");
	free(sql);
	test_kill(&child);
	char id[32];
	snprintf(id, sizeof id, "%lld", first);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE workflow = 'undrain'"), 1);
	cr_assert_eq(pv(&w, &out, "resume", id, NULL), 0, "%s", out);
	free(out);
	char node[32], tags[128];
	for (size_t i = 0; i < N_MOVERS; i++) {
		sim_guest(MOVERS[i], node, sizeof node, tags, sizeof tags);
		cr_assert_str_eq(node, "pve1", "%d is not home", MOVERS[i]);
		cr_assert_null(strstr(tags, "pvagent-home"), "%d keeps '%s'", MOVERS[i], tags);
		cr_assert_leq(migrations_of(MOVERS[i]), 2, "%d moved more than out and back",
			      MOVERS[i]);
	}
	world_free(&w);
}

/* ---- resume and cancel: what is not theirs to do ----------------------------------- */

Test(cli_jobs, resume_and_cancel_refuse_what_is_finished_or_unknown)
{
	static struct world w;
	world_start_on(&w, SCEN, 20, MIGRATE_CONF);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "resume", "7", NULL), 2, "%s", out);
	cr_assert(strstr(out, "no job 7"), "%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "cancel", "7", NULL), 2, "%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "migrate", "web1", "pve2", "--dry-run", NULL), 0, "%s", out);
	free(out);
	/* a cancelled job: interrupted, then cancelled, then resumed */
	const char *args[] = {"migrate", "web1", "pve2", NULL};
	start_bg(&w, args);
	wait_db(&w, STEP_DONE_SQL(1, 0), 1, "plan done");
	test_kill(&child);
	int posts = simproc_count(&sim, "POST", "", -1);
	pid_t other = test_bystander();
	cr_assert_geq(other, 0);
	char *sql = strprintf("UPDATE jobs SET pid = %ld WHERE id = 1", (long)other);
	db_exec(&w, sql);
	free(sql);
	cr_assert_eq(pv(&w, &out, "cancel", "1", NULL), 0, "%s", out);
	cr_assert(strstr(out, "is not running (stored running, its process ended without "
			      "closing it)"), "the state it found is named:\n%s", out);
	cr_assert(strstr(out, "nothing signalled"), "%s", out);
	free(out);
	cr_assert(test_alive_unreaped(other), "cancel signalled the process that has the stored pid");
	cr_assert_eq(pv(&w, &out, "resume", "1", NULL), 2, "%s", out);
	cr_assert(strstr(out, "cancelled already"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sim, "POST", "", -1), posts, "a refused resume sent nothing");
	kill(other, SIGKILL);
	cr_assert_eq(waitpid(other, NULL, 0), other);
	world_free(&w);
}

Test(cli_jobs, a_job_whose_stored_pid_is_another_live_process_or_a_zombie_is_resumed)
{
	static struct world w;
	world_start_on(&w, SCEN, 20, MIGRATE_CONF);
	const char *args[] = {"migrate", "web1", "pve2", NULL};
	start_bg(&w, args);
	wait_db(&w, STEP_DONE_SQL(1, 0), 1, "plan done");
	/* killed but not reaped: a zombie with the stored pid */
	pid_t zombie = child;
	child = -1;
	cr_assert_eq(kill(zombie, SIGKILL), 0);
	siginfo_t si = {0};
	cr_assert_eq(waitid(P_PID, (id_t)zombie, &si, WEXITED | WNOWAIT), 0);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'running'"),
		     1);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "jobs", NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "job", "1", NULL), 0, "%s", out);
	cr_assert(strstr(out, "resume it with: pvagent resume 1"), "%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "resume", "1", NULL), 0, "a zombie blocked the resume:\n%s",
		     out);
	free(out);
	cr_assert_eq(waitpid(zombie, NULL, 0), zombie);
	/* again, the stored pid now an unrelated live process's */
	const char *back[] = {"migrate", "web1", "pve1", NULL};
	start_bg(&w, back);
	wait_db(&w, STEP_DONE_SQL(2, 0), 1, "plan done");
	test_kill(&child);
	pid_t other = test_bystander();
	cr_assert_geq(other, 0);
	char *sql = strprintf("UPDATE jobs SET pid = %ld WHERE id = 2", (long)other);
	db_exec(&w, sql);
	free(sql);
	cr_assert_eq(pv(&w, &out, "resume", "2", NULL), 0, "a live pid blocked the resume:\n%s",
		     out);
	free(out);
	cr_assert(test_alive_unreaped(other), "the process that has the stored pid was signalled");
	char node[32], tags[128];
	sim_guest(303, node, sizeof node, tags, sizeof tags);
	cr_assert_str_eq(node, "pve1");
	kill(other, SIGKILL);
	cr_assert_eq(waitpid(other, NULL, 0), other);
	world_free(&w);
}

Test(cli_jobs, resume_of_a_running_job_names_its_process_and_cancel_stops_it)
{
	static struct world w;
	world_start_on(&w, SCEN, 2, MIGRATE_CONF); /* slow: it runs while we look */
	const char *args[] = {"migrate", "web1", "pve2", NULL};
	start_bg(&w, args);
	wait_db(&w, "SELECT count(*) FROM steps WHERE job = 1 AND idx = 2 AND upid IS NOT NULL", 1,
		"the migration task started");
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "resume", "1", NULL), 1, "%s", out);
	char *want = strprintf("running in process %ld", (long)child);
	cr_assert(strstr(out, want), "%s", out);
	free(want);
	free(out);
	cr_assert_eq(pv(&w, &out, "cancel", "1", NULL), 0, "%s", out);
	cr_assert(strstr(out, "asked process"), "%s", out);
	free(out);
	int status = 0;
	cr_assert_eq(waitpid(child, &status, 0), child);
	child = -1;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d", status);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'cancelled'"),
		     1);
	/* the process that ran it says cancelled, as cancel and the store do */
	char *bgp = strprintf("%s/bg.out", w.dir), *bg = NULL;
	cr_assert_eq(read_file(bgp, &bg, NULL), 0);
	cr_assert(strstr(bg, "web1: cancelled by 'pvagent cancel'"), "%s", bg);
	cr_assert_null(strstr(bg, "resume"), "%s", bg);
	free(bg);
	free(bgp);
	world_free(&w);
}

/* ---- cancel of a job whose PVE task runs ------------------------------------------- */

/* migrate web1 pve2 (job 1) running its migration task at time_scale,
 * then `pvagent cancel 1` with extra (NULL or --stop-task): its output. */
static char *cancel_in_flight(struct world *w, double time_scale, const char *extra)
{
	world_start_on(w, SCEN, time_scale, MIGRATE_CONF);
	const char *args[] = {"migrate", "web1", "pve2", NULL};
	start_bg(w, args);
	wait_db(w, "SELECT count(*) FROM steps WHERE job = 1 AND name = 'migrate' AND "
		   "upid IS NOT NULL", 1, "the migration task started");
	char *out = NULL;
	cr_assert_eq(pv(w, &out, "cancel", "1", extra, NULL), 0, "%s", out);
	int status = 0;
	cr_assert_eq(waitpid(child, &status, 0), child);
	child = -1;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d", status);
	cr_assert_eq(db_int(w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'cancelled'"),
		     1, "%s", out);
	return out;
}

/* Cancel does not stop PVE's task: it follows it to its end and says where
 * the guest is (the target); the job is cancelled with its migrate step
 * closed done, as PVE's task ended. */
Test(cli_jobs, cancel_of_a_running_migrate_follows_its_task)
{
	static struct world w;
	char *out = cancel_in_flight(&w, 2, NULL);
	cr_assert(strstr(out, "job 1 (migrate web1) cancelled; its migrate task ended OK: web1 "
			      "(VMID 303) is on pve2, the target"), "%s", out);
	free(out);
	char node[32], tags[128];
	sim_guest(303, node, sizeof node, tags, sizeof tags);
	cr_assert_str_eq(node, "pve2");
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM steps WHERE job = 1 AND name = 'migrate' "
				"AND state = 'done'"), 1);
	cr_assert_eq(requests("DELETE", "", -1), 0, "nothing was stopped");
	cr_assert_eq(pv(&w, &out, "job", "1", NULL), 0, "%s", out);
	cr_assert(strstr(out, "cancelled; its migrate task"), "the job's events say it:\n%s", out);
	free(out);
	world_free(&w);
}

/* --stop-task stops it (DELETE of the task): the guest stays on its
 * source, unlocked; the step is closed failed with PVE's status. */
Test(cli_jobs, cancel_stop_task_stops_the_migration)
{
	static struct world w;
	char *out = cancel_in_flight(&w, 1, "--stop-task");
	cr_assert(strstr(out, "is being stopped (--stop-task)"), "%s", out);
	cr_assert(strstr(out, "job 1 (migrate web1) cancelled; its migrate task was stopped and "
			      "ended interrupted by signal: web1 (VMID 303) is on pve1, not the "
			      "target pve2"), "%s", out);
	cr_assert_null(strstr(out, "left:"), "%s", out);
	free(out);
	char node[32], tags[128];
	sim_guest(303, node, sizeof node, tags, sizeof tags);
	cr_assert_str_eq(node, "pve1");
	cr_assert_eq(requests("DELETE", "", 200), 1, "one DELETE: the task's");
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM steps WHERE job = 1 AND name = 'migrate' "
				"AND state = 'failed'"), 1);
	world_free(&w);
}

/* drain pve1 --partial started in the background (job 1) until one of
 * its migration tasks runs: that migration's job ID. */
static long long drain_until_a_task(struct world *w)
{
	world_start_on(w, SCEN, 20, MIGRATE_CONF);
	const char *args[] = {"drain", "pve1", "--partial", NULL};
	start_bg(w, args);
	const char *sql = "SELECT j.id FROM steps s JOIN jobs j ON s.job = j.id WHERE "
			  "j.workflow = 'migrate' AND s.name = 'migrate' AND s.state = 'running' "
			  "AND s.upid IS NOT NULL ORDER BY j.id LIMIT 1";
	wait_db(w, sql, 1, "a migration task started");
	return db_int(w, sql);
}

/* The drain again: it ends well, every guest moved once and tagged. */
static void drain_again_moves_each_once(struct world *w, const char *what)
{
	char *out = NULL;
	cr_assert_eq(pv(w, &out, "drain", "pve1", "--partial", NULL), 0, "%s", out);
	cr_assert_null(strstr(out, "does not exist"), "%s", out);
	free(out);
	assert_drained(what);
	for (size_t i = 0; i < N_MOVERS; i++)
		cr_assert_eq(migrations_of(MOVERS[i]), 1, "%s: %d was migrated %d times", what,
			     MOVERS[i], migrations_of(MOVERS[i]));
	world_free(w);
}

/* A drain's migration cancelled while its task runs (the drain stops with
 * it), then the drain again: the rerun waits for every migration task the
 * first run started, the cancelled job's included, plans from where the
 * guests are after them, and ends with every guest moved once and
 * tagged (no "Configuration file ... does not exist"). */
Test(cli_jobs, cancel_of_a_drains_migration_then_the_drain_again)
{
	static struct world w;
	char id[32];
	snprintf(id, sizeof id, "%lld", drain_until_a_task(&w));
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "cancel", id, NULL), 0, "%s", out);
	/* (its task followed, or, quick as it is at this scale, ended before) */
	cr_assert(strstr(out, ") cancelled; "), "%s", out);
	free(out);
	int status = 0;
	cr_assert_eq(waitpid(child, &status, 0), child);
	child = -1;
	drain_again_moves_each_once(&w, "the drain again after a cancel");
}

/* The same when the cancelled job's task could not be followed (its step
 * left running with its UPID, as a cancel that lost PVE leaves it): the
 * drain killed while that task runs, and at once run again (it resumes):
 * the rerun waits for the task of the cancelled job before it looks at
 * the guests again. */
Test(cli_jobs, a_resumed_drain_waits_for_a_cancelled_jobs_task)
{
	static struct world w;
	long long id = drain_until_a_task(&w);
	test_kill(&child);
	char *upd = strprintf("UPDATE jobs SET state = 'cancelled' WHERE id = %lld", id);
	db_exec(&w, upd);
	free(upd);
	drain_again_moves_each_once(&w, "the drain resumed after a cancel");
}

/* Issue 36: a pruned job's ID is never given again, and resume, cancel
 * and job of it say it was pruned (a printed hint or a script naming it
 * never reaches another job). */
Test(cli_jobs, a_pruned_jobs_id_is_not_given_again_and_is_said_pruned)
{
	static struct world w;
	world_start(&w, 100);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "up", "pr1", "-t", "jobvm", "--no-start", NULL), 0, "%s", out);
	free(out);
	long long first = db_int(&w, "SELECT max(id) FROM jobs");
	db_exec(&w, "UPDATE jobs SET ended = 1, created = 1");
	cr_assert_eq(pv(&w, &out, "jobs", "--prune", "--older-than", "1d", NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs"), 0);
	char id[24];
	snprintf(id, sizeof id, "%lld", first);
	const char *cmds[] = {"resume", "cancel", "job"};
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(pv(&w, &out, cmds[i], id, NULL), 2, "%s", out);
		char *want = strprintf("job %s was pruned", id);
		cr_assert(strstr(out, want), "%s: %s", cmds[i], out);
		free(want);
		free(out);
	}
	cr_assert_eq(pv(&w, &out, "job", "999", NULL), 2, "%s", out);
	cr_assert(strstr(out, "no job 999"), "%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "down", "pr1", "--yes", NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(db_int(&w, "SELECT min(id) FROM jobs"), first + 1, "a pruned ID given again");
	world_free(&w);
}
