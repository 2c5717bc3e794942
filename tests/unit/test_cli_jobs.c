/* test_cli_jobs.c - jobs through the real command-line tool ($PVAGENT_BIN,
 * default build/san/pvagent) against the simulator in real time: Ctrl-C
 * (SIGINT) during a clone keeps the job interrupted with its UPID and
 * exits 130, and `pvagent resume` finishes it without cloning again;
 * SIGKILL right after each task-starting request of `up` and `down` was
 * sent, then the same command again: one guest (none after down), each
 * request effective once; `jobs`
 * and `job` show what happened. The tool is started as a child and the
 * tests wait for states in its state.db (never for time). */
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

static void world_start(struct world *w, double time_scale)
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
	cr_assert_eq(simproc_start(&sim, "tests/pvesim/scenarios/demo.json", args), 0);
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
			       "[paths]\ntemplates = %s\nstate = %s\n",
			       sim.url, sim.token_id, secret, sim.fingerprint, tdir, w->dir);
	write_text(w->conf, conf, 0600);
	free(conf);
	free(secret);
	free(tdir);
	w->db = store_path(w->dir);
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
	const char *dn[] = {w->bin, "-c", w->conf, "down", name, NULL};
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
	int rc = down ? pv(&w, &out, "down", "kill1", NULL)
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
