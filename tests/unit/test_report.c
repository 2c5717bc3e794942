/* test_report.c - `pvagent report` (agent/report.c, report_html.c,
 * agent/cli/cli_report.c) of a drain run by the tool against the PVE
 * simulator (drain.json, real time scaled: one guest's migration fails,
 * one fits nowhere, two stay, and web2 is named "<script>...</script>"):
 * the JSON model, the text and the HTML page agree with the job, the page
 * rendered by headless Chromium (Debian's chromium, which `make deps-test`
 * installs; missing, the suite fails) has a row per guest, the move bars,
 * the downtime figures and the hostile name as text, and a screenshot is
 * kept under the build directory; through pvagentd (a socket peer) the
 * report comes from the daemon's store. And the model alone, on a store
 * written here: a rolling run's tree (per-node job, its drain and undrain,
 * their migrations), a window's drain, the JSON both ways, the page's
 * escaping. */
#include <criterion/criterion.h>

#include "clirun.h"
#include "json.h"
#include "report.h"
#include "report_html.h"
#include "simproc.h"
#include "sshd.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCEN "tests/pvesim/scenarios/drain.json"
#define HOSTILE "<script>alert(1)</script>"
#define HOSTILE_ESC "&lt;script&gt;alert(1)&lt;/script&gt;"

static struct simproc sim;
static pid_t daemon_pid = -1;

static void cleanup(void)
{
	test_kill(&daemon_pid);
	simproc_stop(&sim);
}

TestSuite(report, .fini = cleanup, .timeout = 240);

struct world {
	char *dir, *conf, *sock, *secret;
	const char *bin, *dbin;
};

/* A pvagent.conf at path for the simulator, its [paths] state the
 * directory state, pvagentd's socket the world's. */
static void write_conf(const struct world *w, const char *path, const char *state)
{
	char *conf = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			       "fingerprint = %s\nnode = pve1\ntimeout = 3\n"
			       "[paths]\ntemplates = %s\nstate = %s\nsocket = %s\n"
			       "[migrate]\nprobe_port = 1\nmax_workers = 2\n",
			       sim.url, sim.token_id, w->secret, sim.fingerprint, w->dir, state,
			       w->sock);
	cr_assert_eq(test_write_file(path, conf, 0600), 0);
	free(conf);
}

/* drain.json with web2 (304) named HOSTILE, into dir. */
static char *hostile_scenario(const char *dir)
{
	json_object *s = json_object_from_file(SCEN), *guests = NULL;
	cr_assert_not_null(s, "cannot read %s", SCEN);
	cr_assert(json_object_object_get_ex(s, "guests", &guests));
	bool renamed = false;
	for (size_t i = 0; i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i), *cfg = NULL;
		long long id = 0;
		if (json_int(g, "vmid", &id) && id == 304 &&
		    json_object_object_get_ex(g, "config", &cfg)) {
			json_object_object_add(cfg, "name", json_object_new_string(HOSTILE));
			renamed = true;
		}
	}
	cr_assert(renamed, "no guest 304 in %s", SCEN);
	char *path = strprintf("%s/scenario.json", dir);
	cr_assert_eq(json_object_to_file(path, s), 0);
	json_object_put(s);
	return path;
}

static void world_start(struct world *w)
{
	memset(w, 0, sizeof *w);
	const char *bin = getenv("PVAGENT_BIN"), *dbin = getenv("PVAGENTD_BIN");
	w->bin = bin ? bin : "build/san/pvagent";
	w->dbin = dbin ? dbin : "build/san/pvagentd";
	if (access(w->bin, X_OK) < 0 || access(w->dbin, X_OK) < 0)
		cr_skip_test("no pvagent/pvagentd (make build/san/pvagent build/san/pvagentd)");
	char tmpl[] = "/tmp/pvagent-test-report.XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	w->dir = strdup(tmpl);
	char *scen = hostile_scenario(w->dir);
	const char *args[] = {"--time-scale", "20", NULL};
	cr_assert_eq(simproc_start(&sim, scen, args), 0, "the simulator did not start");
	free(scen);
	char *secret = strprintf("%s/token.secret", w->dir), *body = strprintf("%s\n",
										  sim.token_secret);
	cr_assert_eq(test_write_file(secret, body, 0600), 0);
	w->conf = strprintf("%s/pvagent.conf", w->dir);
	w->sock = strprintf("%s/pvagentd.sock", w->dir);
	w->secret = secret;
	write_conf(w, w->conf, w->dir);
	free(body);
}

static void world_free(struct world *w)
{
	cr_assert_eq(simproc_stop(&sim), 0, "simulator did not exit cleanly");
	cr_assert_eq(test_remove_tree(w->dir), 0);
	free(w->dir);
	free(w->conf);
	free(w->sock);
	free(w->secret);
}

/* pvagent -c conf ARGS... to its end; *out: stdout and stderr. */
static int pv(const struct world *w, const char *conf, char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = test_pvagentv(w->bin, conf ? conf : w->conf, out, ap);
	va_end(ap);
	cr_assert_geq(rc, 0, "pvagent did not run, or a sanitizer report:\n%s", *out ? *out : "");
	return rc;
}

/* The final --json object of out (the line with "command"). */
static json_object *final_json(const char *out)
{
	json_object *found = NULL;
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (*p != '{')
			continue;
		char *line = strndup(p, strcspn(p, "\n"));
		json_object *o = json_tokener_parse(line);
		free(line);
		if (o && json_object_object_get_ex(o, "command", NULL)) {
			json_object_put(found);
			found = o;
		} else {
			json_object_put(o);
		}
	}
	cr_assert_not_null(found, "no final JSON object in:\n%s", out);
	return found;
}

static long long total(json_object *rep, const char *key)
{
	json_object *t = NULL;
	long long v = -1;
	cr_assert(json_object_object_get_ex(rep, "totals", &t));
	json_int(t, key, &v);
	return v;
}

static json_object *move_of(json_object *rep, int vmid)
{
	json_object *moves = NULL;
	cr_assert(json_object_object_get_ex(rep, "moves", &moves));
	for (size_t i = 0; i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i);
		long long id = 0;
		if (json_int(m, "vmid", &id) && id == vmid)
			return m;
	}
	cr_assert_fail("no move of %d in the report", vmid);
	return NULL;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The drain every test reports on: job 1, `drain pve1 --partial` with
 * app1's (305) migration task failing. Its exit: 1 (a migration failed). */
static void drain(struct world *w)
{
	cr_assert_eq(simproc_fault(&sim, "{\"method\":\"POST\",\"path\":\"^/nodes/pve1/qemu/305/"
					 "migrate$\",\"action\":\"task_fail\",\"message\":"
					 "\"migration aborted\"}"),
		     0);
	char *out = NULL;
	int rc = pv(w, NULL, &out, "--local", "drain", "pve1", "--partial", NULL);
	cr_assert_eq(rc, 1, "drain: exit %d:\n%s", rc, out);
	free(out);
}

/* The report's model as `pvagent --json report 1` prints it. */
static json_object *cli_report_json(struct world *w, const char *conf, const char *local)
{
	char *out = NULL;
	int rc = local ? pv(w, conf, &out, local, "--json", "report", "1", NULL)
		       : pv(w, conf, &out, "--json", "report", "1", NULL);
	cr_assert_eq(rc, 0, "report: exit %d:\n%s", rc, out);
	json_object *fin = final_json(out), *rep = NULL;
	free(out);
	cr_assert(json_object_object_get_ex(fin, "report", &rep), "no report member");
	json_object_get(rep);
	json_object_put(fin);
	return rep;
}

/* What the drain did, as the model must say it. */
static void assert_model(json_object *rep)
{
	cr_expect_str_eq(json_str(rep, "workflow"), "drain");
	cr_expect_str_eq(json_str(rep, "kind"), "drain");
	cr_expect_str_eq(json_str(rep, "state"), "failed");
	cr_expect_eq(total(rep, "moved"), 8);
	cr_expect_eq(total(rep, "failed"), 1);
	cr_expect_eq(total(rep, "refused"), 1);
	cr_expect_eq(total(rep, "stayed"), 2);
	cr_expect_eq(total(rep, "away"), 8);
	json_object *guests = NULL;
	cr_assert(json_object_object_get_ex(rep, "guests", &guests));
	cr_expect_eq(json_object_array_length(guests), 12);
	json_object *app1 = move_of(rep, 305), *web2 = move_of(rep, 304), *huge = move_of(rep, 302);
	cr_expect_str_eq(json_str(app1, "kind"), "failed");
	cr_expect(json_str(app1, "why") && strstr(json_str(app1, "why"), "migration aborted"),
		  "%s", json_str(app1, "why"));
	cr_expect_str_eq(json_str(huge, "kind"), "refused");
	cr_expect_str_eq(json_str(huge, "status"), "fits nowhere");
	cr_expect_str_eq(json_str(web2, "name"), HOSTILE);
	cr_expect_str_eq(json_str(web2, "kind"), "moved");
	cr_expect_str_eq(json_str(web2, "from"), "pve1");
	cr_expect_str_eq(json_str(web2, "home"), "pve1");
	/* each move that ran has its migration's start and end and its job */
	json_object *moves = NULL;
	json_object_object_get_ex(rep, "moves", &moves);
	size_t with_downtime = 0;
	for (size_t i = 0; i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i), *s = NULL, *e = NULL;
		const char *kind = json_str(m, "kind");
		if (strcmp(kind, "moved") != 0 && strcmp(kind, "failed") != 0)
			continue;
		cr_expect(json_object_object_get_ex(m, "started", &s) && s &&
				  json_object_object_get_ex(m, "ended", &e) && e &&
				  json_object_get_double(e) >= json_object_get_double(s),
			  "move of %s has no start and end", json_str(m, "name"));
		cr_expect(json_object_object_get_ex(m, "job", NULL), "%s: no job",
			  json_str(m, "name"));
		long long dt = -1;
		with_downtime += json_int(m, "downtime_ms", &dt) && dt >= 0;
	}
	/* PVE's measured downtime of the live migrations (the running VMs) */
	cr_expect_geq(with_downtime, 4, "only %zu moves with a downtime", with_downtime);
}

static const char *chromium(void)
{
	static const char *const names[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser"};
	const char *env = getenv("CHROMIUM");
	if (env && access(env, X_OK) == 0)
		return env;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (access(names[i], X_OK) == 0)
			return names[i];
	cr_assert_fail("chromium is not installed: the report's page is checked in a real "
		       "browser; 'make deps-test' (as root on Debian) installs Debian's chromium "
		       "(or set CHROMIUM=/path/to/chromium)");
	return NULL;
}

/* Headless Chromium on file://page with one more argument (--dump-dom,
 * --screenshot=...), a private profile in dir, no network: its stdout. */
static char *browse(const char *dir, const char *page, const char *what)
{
	char *profile = strprintf("%s/chromium-profile", dir);
	char *udd = strprintf("--user-data-dir=%s", profile);
	char *url = strprintf("file://%s", page);
	const char *argv[] = {"sh", "-c", "exec \"$0\" \"$@\" 2>/dev/null", chromium(),
			      "--headless", "--no-sandbox", "--disable-gpu", udd,
			      "--no-first-run", "--no-default-browser-check",
			      "--disable-background-networking", "--disable-component-update",
			      "--disable-sync", "--disable-extensions", "--hide-scrollbars",
			      "--window-size=1280,1800", what, url, NULL};
	char *out = NULL;
	int rc = test_run(argv, NULL, &out);
	cr_assert_eq(rc, 0, "chromium %s: exit %d:\n%s", what, rc, out ? out : "");
	cr_assert_eq(test_remove_tree(profile), 0, "cannot remove %s", profile);
	free(profile);
	free(udd);
	free(url);
	return out;
}

/* Where a suite keeps what it made: beside the binaries under test. */
static char *artifact_dir(const char *bin)
{
	char *d = strdup(bin);
	char *slash = strrchr(d, '/');
	char *dir = strprintf("%s/test-artifacts", slash ? (*slash = '\0', d) : ".");
	free(d);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		cr_assert_fail("cannot make %s: %s", dir, strerror(errno));
	return dir;
}

Test(report, drain_as_json_text_and_html_in_a_browser)
{
	struct world w;
	world_start(&w);
	drain(&w);

	json_object *rep = cli_report_json(&w, NULL, "--local");
	assert_model(rep);

	/* text: the same figures */
	char *out = NULL;
	cr_assert_eq(pv(&w, NULL, &out, "--local", "report", "1", NULL), 0, "%s", out);
	cr_expect(strstr(out, "drain of pve1, job 1: failed"), "%s", out);
	cr_expect(strstr(out, "8 moved, 1 failed, 1 refused, 2 stayed; 8 away from home"), "%s",
		  out);
	cr_expect(strstr(out, "app1 (305) failed: ") && strstr(out, "migration aborted"), "%s",
		  out);
	cr_expect(strstr(out, "huge (302) refused: "), "%s", out);
	cr_expect(strstr(out, "away from home at the end:"), "%s", out);
	free(out);

	/* the page */
	char *page = strprintf("%s/report.html", w.dir);
	cr_assert_eq(pv(&w, NULL, &out, "--local", "report", "1", "--html", page, NULL), 0, "%s",
		     out);
	cr_expect(strstr(out, "wrote "), "%s", out);
	free(out);
	char *html = NULL;
	cr_assert_eq(read_file(page, &html, NULL), 0);
	cr_expect(strstr(html, HOSTILE_ESC), "the hostile name is not escaped in the page");
	cr_expect_null(strcasestr(html, "<script"), "the page has a script element");
	cr_expect_eq(count(html, "http://"), count(html, "http://www.w3.org/2000/svg"),
		     "the page refers to something on the network");
	cr_expect_null(strstr(html, "https://"), "the page refers to something on the network");
	cr_expect_null(strstr(html, "url(http"), "the page loads something");
	free(html);

	/* rendered: its DOM */
	char *dom = browse(w.dir, page, "--dump-dom");
	cr_assert(strstr(dom, "<svg"), "no SVG in the DOM:\n%.2000s", dom);
	cr_expect_null(strcasestr(dom, "<script"), "a script element in the DOM");
	cr_expect_geq(count(dom, HOSTILE_ESC), 3, "the hostile name is not rendered as text");
	cr_expect_eq(count(dom, "class=\"guest-row"), 12, "one timeline row per guest");
	cr_expect_eq(count(dom, "class=\"move-bar kind-moved\""), 8, "a bar per move");
	cr_expect_eq(count(dom, "class=\"move-bar kind-failed\""), 1, "the failed move's bar");
	cr_expect_eq(count(dom, "<tr class=\"move "), 12, "a table row per guest");
	cr_expect_geq(count(dom, "<title>"), 1 + 12 + 9 + 2, "text alternatives in titles");
	cr_expect(strstr(dom, "migration aborted"), "the failure's reason");
	cr_expect(strstr(dom, "Away from home at the end"), "the away section");
	/* each downtime figure, in its guest's row */
	json_object *moves = NULL;
	json_object_object_get_ex(rep, "moves", &moves);
	for (size_t i = 0; i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i);
		long long dt = -1, vmid = 0;
		json_int(m, "vmid", &vmid);
		if (!json_int(m, "downtime_ms", &dt) || dt < 0)
			continue;
		char fig[32], tr[48];
		str_duration(fig, sizeof fig, (double)dt / 1000);
		snprintf(tr, sizeof tr, "<tr class=\"move kind-moved\" data-vmid=\"%lld\">", vmid);
		const char *row = strstr(dom, tr);
		cr_assert_not_null(row, "no row of %lld", vmid);
		char *cell = strprintf("<td class=\"num downtime\">%s</td>", fig);
		const char *end = strstr(row, "</tr>");
		const char *at = strstr(row, cell);
		cr_expect(at && end && at < end, "%lld: downtime %s not in its row", vmid, fig);
		free(cell);
	}
	free(dom);

	/* rendered: a screenshot, kept */
	char *art = artifact_dir(w.bin);
	char *png = strprintf("%s/report.png", art);
	unlink(png);
	char *shot = strprintf("--screenshot=%s", png);
	free(browse(w.dir, page, shot));
	char *img = NULL;
	size_t len = 0;
	cr_assert_eq(read_file(png, &img, &len), 0, "no screenshot at %s", png);
	cr_expect(len > 1000 && memcmp(img, "\x89PNG", 4) == 0, "%s is not a PNG", png);
	free(img);
	free(shot);
	free(png);
	free(art);
	free(page);
	json_object_put(rep);
	world_free(&w);
}

Test(report, through_pvagentd_from_its_store)
{
	struct world w;
	world_start(&w);
	drain(&w);
	json_object *local = cli_report_json(&w, NULL, "--local");

	/* the daemon on the store; a client whose own state dir is empty */
	char *log = strprintf("%s/pvagentd.log", w.dir);
	const char *dargv[] = {w.dbin, "-c", w.conf, "-f", NULL};
	daemon_pid = test_spawn(dargv, log);
	cr_assert_gt(daemon_pid, 0);
	char *empty = strprintf("%s/empty", w.dir), *conf2 = strprintf("%s/client.conf", w.dir);
	cr_assert_eq(mkdir(empty, 0700), 0);
	write_conf(&w, conf2, empty);
	/* bounded wait for the socket to answer */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct stat st;
		if (stat(w.sock, &st) == 0 && S_ISSOCK(st.st_mode))
			break;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		cr_assert(now.tv_sec - t0.tv_sec < 60, "pvagentd never made %s", w.sock);
		cr_assert(test_alive_unreaped(daemon_pid), "pvagentd ended");
		struct timespec ts = {0, 20L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling a state (the socket), bounded */
	}
	json_object *via = cli_report_json(&w, conf2, NULL);
	assert_model(via);
	cr_expect_str_eq(json_object_to_json_string_ext(via, JSON_C_TO_STRING_PLAIN),
			 json_object_to_json_string_ext(local, JSON_C_TO_STRING_PLAIN),
			 "the daemon's report differs from this process's");
	/* --local: the client's own (empty) store has no job 1 */
	char *out = NULL;
	cr_expect_eq(pv(&w, conf2, &out, "--local", "report", "1", NULL), 2, "%s", out);
	cr_expect(strstr(out, "no job 1"), "%s", out);
	free(out);
	/* through the daemon: a job it does not have */
	cr_expect_eq(pv(&w, conf2, &out, "report", "99", NULL), 2, "%s", out);
	cr_expect(strstr(out, "no job 99"), "%s", out);
	free(out);
	cr_assert_eq(kill(daemon_pid, SIGTERM), 0);
	int st = 0;
	cr_assert_eq(waitpid(daemon_pid, &st, 0), daemon_pid);
	daemon_pid = -1;
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pvagentd status %d", st);
	json_object_put(via);
	json_object_put(local);
	free(log);
	free(empty);
	free(conf2);
	world_free(&w);
}

/* ---- the model on a store written here ------------------------------------------------ */

#define T0 1790000000.0

/* A job: its row (params and vars JSON text), state and times, and its
 * steps ("name:state:start:end", times as offsets from T0). Its ID. */
static long long put_job(struct store *st, const char *wf, const char *subject,
			 const char *params, const char *vars, enum job_state state, double t1,
			 double t2, const char *const *steps)
{
	long long id = 0;
	char *err = NULL;
	cr_assert_eq(store_job_insert(st, wf, subject, params, T0 + t1, &id, &err), 0, "%s", err);
	struct store_job j = {.id = id, .vars = (char *)vars, .state = state, .created = T0 + t1,
			      .started = T0 + t1, .ended = T0 + t2};
	cr_assert_eq(store_job_update(st, &j, &err), 0, "%s", err);
	for (int i = 0; steps && steps[i]; i++) {
		char name[32], state_name[32];
		double a = 0, b = 0;
		cr_assert_eq(sscanf(steps[i], "%31[^:]:%31[^:]:%lf:%lf", name, state_name, &a, &b), 4);
		struct store_step x = {.idx = i, .name = name, .started = T0 + a, .ended = T0 + b};
		cr_assert_eq(step_state_parse(state_name, &x.state), 0);
		cr_assert_eq(store_step_put(st, id, &x, &err), 0, "%s", err);
	}
	return id;
}

static struct store *temp_store(char *dir)
{
	cr_assert_not_null(mkdtemp(dir));
	char *path = store_path(dir), *err = NULL;
	struct store *st = NULL;
	cr_assert_eq(store_open(path, &st, &err), 0, "%s", err);
	free(path);
	return st;
}

Test(report, rolling_tree_window_and_json_both_ways)
{
	char dir[] = "/tmp/pvagent-test-report-model.XXXXXX";
	struct store *st = temp_store(dir);
	const char *node_steps[] = {"maintenance:done:0:10", "drain:done:10:100",
				    "update:done:100:200", "undrain:failed:200:300", NULL};
	const char *plan_move[] = {"plan:done:10:12", "move:done:12:100", NULL};
	long long roll = put_job(st, "rolling", "cluster", "{}", "{}", JOB_FAILED, 0, 300, NULL);
	char *p = strprintf("{\"parent\":%lld}", roll);
	long long node = put_job(st, "rolling-node", "pve1", p, "{}", JOB_FAILED, 0, 300,
				 node_steps);
	free(p);
	/* the node's drain: a<b> moved (its migration job next), a template
	 * stays, one not started (the window closes first) */
	p = strprintf("{\"parent\":%lld}", node);
	long long drain = put_job(st, "drain", "pve1", p, "{\"moves\":[]}", JOB_DONE, 10, 100,
				  plan_move);
	char *vars = strprintf(
		"{\"moves\":[{\"vmid\":101,\"name\":\"a<b>&\",\"type\":\"qemu\",\"status\":"
		"\"moved\",\"method\":\"online\",\"target\":\"pve2\",\"job\":%lld,\"downtime_ms\":40},"
		"{\"vmid\":102,\"name\":\"tpl\",\"status\":\"template\"},"
		"{\"vmid\":103,\"name\":\"big\",\"status\":\"skipped\",\"method\":\"online\","
		"\"target\":\"pve3\",\"why\":\"not started: the window closes first\"}]}",
		drain + 1);
	struct store_job dj = {.id = drain, .vars = vars, .state = JOB_DONE, .created = T0 + 10,
			       .started = T0 + 10, .ended = T0 + 100};
	char *err = NULL;
	cr_assert_eq(store_job_update(st, &dj, &err), 0, "%s", err);
	free(vars);
	free(p);
	p = strprintf("{\"parent\":%lld,\"home\":\"pve1\",\"target\":\"pve2\"}", drain);
	const char *mig_steps[] = {"plan:done:13:14", "migrate:done:20:30", NULL};
	long long mig = put_job(st, "migrate", "101", p,
				"{\"vmid\":101,\"method\":\"online\",\"downtime_ms\":40,"
				"\"probe_gap_ms\":120}",
				JOB_DONE, 13, 31, mig_steps);
	cr_assert_eq(mig, drain + 1);
	free(p);
	/* its undrain: a<b> failed to come home */
	p = strprintf("{\"parent\":%lld}", node);
	long long undrain = put_job(st, "undrain", "pve1", p,
				    "{\"moves\":[{\"vmid\":101,\"name\":\"a<b>&\",\"status\":"
				    "\"failed\",\"target\":\"pve1\",\"from\":\"pve2\",\"why\":"
				    "\"boom\"}]}",
				    JOB_FAILED, 200, 300, plan_move);
	free(p);
	(void)undrain;
	/* not part of the tree: another drain, of a window */
	long long win = put_job(st, "drain", "pve2", "{\"deadline\":1790003600}", "{}", JOB_DONE,
				400, 410, NULL);

	struct report r;
	cr_assert_eq(report_build(st, roll, &r, &err), 1, "%s", err);
	cr_expect_str_eq(r.kind, "rolling");
	cr_expect_eq(r.n_lanes, 4, "rolling, node, drain, undrain");
	cr_expect_eq(r.n_moves, 4);
	cr_expect_eq(r.n_moved, 1);
	cr_expect_eq(r.n_failed, 1);
	cr_expect_eq(r.n_refused, 1);
	cr_expect_eq(r.n_stayed, 1);
	cr_expect_eq(r.n_guests, 3);
	cr_expect_eq(r.n_away, 1);
	cr_expect_eq(r.downtime_ms, 40);
	cr_expect_eq(r.max_gap_ms, 120);
	const struct report_move *m = &r.moves[0];
	cr_expect_eq(m->job, mig);
	cr_expect_eq(m->started, T0 + 20, "the migrate step's start");
	cr_expect_eq(m->ended, T0 + 30);
	cr_expect_str_eq(r.guests[0].home, "pve1");
	cr_expect_str_eq(r.guests[0].at, "pve2", "the undrain failed: still away");
	cr_expect(r.guests[0].away);
	cr_expect_str_eq(r.lanes[1].node, "pve1");
	cr_expect_eq(r.lanes[1].n_steps, 4);

	/* JSON both ways: the same model */
	json_object *o = report_json(&r);
	cr_assert_not_null(o);
	struct report back;
	cr_assert_eq(report_from_json(o, &back, &err), 0, "%s", err);
	json_object *o2 = report_json(&back);
	cr_expect_str_eq(json_object_to_json_string_ext(o2, JSON_C_TO_STRING_PLAIN),
			 json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o2);
	report_free(&back);
	/* a member of the wrong type is named */
	json_object *lanes = json_object_object_get(o, "lanes");
	json_object_object_add(json_object_array_get_idx(lanes, 1), "node",
			       json_object_new_int(7));
	cr_expect_eq(report_from_json(o, &back, &err), -1);
	cr_expect(err && strstr(err, "lanes[1].node is not a string"), "%s", err);
	free(err);
	err = NULL;
	json_object_put(o);

	/* the page: every stored text escaped, a row per lane and guest */
	char *page = report_html(&r);
	cr_assert_not_null(page);
	cr_expect(strstr(page, "a&lt;b&gt;&amp;"));
	cr_expect_null(strstr(page, "a<b>"));
	cr_expect_eq(count(page, "class=\"lane-row\""), 4);
	cr_expect_eq(count(page, "class=\"guest-row"), 3);
	cr_expect(strstr(page, "not started: the window closes first"));
	free(page);
	report_free(&r);

	/* a window's drain; no such job */
	cr_assert_eq(report_build(st, win, &r, &err), 1, "%s", err);
	cr_expect_str_eq(r.kind, "window");
	cr_expect_eq(r.deadline, 1790003600.0);
	report_free(&r);
	cr_expect_eq(report_build(st, 999, &r, &err), 0);
	store_close(st);
	cr_assert_eq(test_remove_tree(dir), 0);
}
