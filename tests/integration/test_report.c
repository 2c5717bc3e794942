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
 * escaping; and the report of a real rolling run (agent/wf_rolling.c) that
 * stops in pve1's update step. */
#include <criterion/criterion.h>

#include "clirun.h"
#include "json.h"
#include "migfx.h"
#include "report.h"
#include "report_html.h"
#include "rollfx.h"
#include "simproc.h"
#include "sshd.h"
#include "store.h"
#include "util.h"
#include "wf_rolling.h"

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

TestSuite(report, .fini = cleanup, .timeout = 600);

struct world {
	char *dir, *conf, *sock, *secret;
	const char *bin, *dbin;
};

/* A pvagent.conf at path for the simulator sp (its token's secret in the
 * file secret), its [paths] state the directory state, templates dir,
 * pvagentd's socket sock. */
static void write_sim_conf(const struct simproc *sp, const char *secret, const char *dir,
			   const char *sock, const char *path, const char *state)
{
	char *conf = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			       "fingerprint = %s\nnode = pve1\ntimeout = 3\n"
			       "[paths]\ntemplates = %s\nstate = %s\nsocket = %s\n"
			       "[migrate]\nprobe_port = 1\nmax_workers = 2\n",
			       sp->url, sp->token_id, secret, sp->fingerprint, dir, state, sock);
	cr_assert_eq(test_write_file(path, conf, 0600), 0);
	free(conf);
}

static void write_conf(const struct world *w, const char *path, const char *state)
{
	write_sim_conf(&sim, w->secret, w->dir, w->sock, path, state);
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

/* The report's model as `pvagent --json report ID` prints it. */
static json_object *cli_report_json(struct world *w, const char *conf, const char *local,
				    const char *id)
{
	char *out = NULL;
	int rc = local ? pv(w, conf, &out, local, "--json", "report", id, NULL)
		       : pv(w, conf, &out, "--json", "report", id, NULL);
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

/* html needs no script and fetches nothing: no script element, no
 * resource by URL (src, href or CSS url() but to a fragment, @import,
 * link, iframe, object), no http(s) URL but SVG's namespace. */
static void assert_self_contained(const char *html, const char *what)
{
	static const char *const never[] = {"<script", "src=", "@import", "<link",
					    "<iframe", "<object", "<embed", "https://", "srcset"};
	for (size_t i = 0; i < sizeof never / sizeof *never; i++)
		cr_expect_null(strcasestr(html, never[i]), "%s has %s", what, never[i]);
	for (const char *h = html; (h = strcasestr(h, "href=")); h += 5)
		cr_expect(h[5] == '"' && h[6] == '#', "%s refers to %.40s", what, h);
	for (const char *u = html; (u = strcasestr(u, "url(")); u += 4)
		cr_expect(u[4] == '#', "%s loads %.40s", what, u);
	cr_expect_eq(count(html, "http://"), count(html, "http://www.w3.org/2000/svg"),
		     "%s refers to something on the network", what);
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

/* Each downtime (PVE's) and gap (the probe's) figure of the report's JSON
 * in the DOM, in a table row of its guest's (one moved twice has two). */
static void assert_downtimes_in_rows(const char *dom, json_object *rep)
{
	static const char *const figs[][2] = {{"downtime_ms", "num downtime"}, {"gap_ms", "num gap"}};
	json_object *moves = NULL;
	json_object_object_get_ex(rep, "moves", &moves);
	for (size_t i = 0; moves && i < json_object_array_length(moves); i++)
		for (size_t f = 0; f < 2; f++) {
			json_object *m = json_object_array_get_idx(moves, i);
			long long ms = -1, vmid = 0;
			json_int(m, "vmid", &vmid);
			if (!json_int(m, figs[f][0], &ms) || ms < 0)
				continue;
			char fig[32], tr[64];
			str_duration(fig, sizeof fig, (double)ms / 1000);
			snprintf(tr, sizeof tr, "<tr class=\"move kind-moved\" data-vmid=\"%lld\">",
				 vmid);
			char *cell = strprintf("<td class=\"%s\">%s</td>", figs[f][1], fig);
			bool found = false;
			for (const char *row = dom; !found && (row = strstr(row, tr)); row++) {
				const char *end = strstr(row, "</tr>"), *at = strstr(row, cell);
				found = at && end && at < end;
			}
			cr_expect(found, "%lld: %s %s not in its row", vmid, figs[f][0], fig);
			free(cell);
		}
}

/* Chromium's screenshot of page kept as the artifact name (beside bin). */
static void keep_screenshot(const char *dir, const char *page, const char *bin, const char *name)
{
	char *art = artifact_dir(bin);
	char *png = strprintf("%s/%s", art, name), *shot = strprintf("--screenshot=%s", png);
	unlink(png);
	free(browse(dir, page, shot));
	char *img = NULL;
	size_t len = 0;
	cr_assert_eq(read_file(png, &img, &len), 0, "no screenshot at %s", png);
	cr_expect(len > 1000 && memcmp(img, "\x89PNG", 4) == 0, "%s is not a PNG", png);
	free(img);
	free(shot);
	free(png);
	free(art);
}

Test(report, drain_as_json_text_and_html_in_a_browser)
{
	struct world w;
	world_start(&w);
	drain(&w);

	json_object *rep = cli_report_json(&w, NULL, "--local", "1");
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
	assert_self_contained(html, "the page");
	free(html);

	/* rendered: its DOM */
	char *dom = browse(w.dir, page, "--dump-dom");
	cr_assert(strstr(dom, "<svg"), "no SVG in the DOM:\n%.2000s", dom);
	assert_self_contained(dom, "the DOM");
	cr_expect_geq(count(dom, HOSTILE_ESC), 3, "the hostile name is not rendered as text");
	cr_expect_eq(count(dom, "class=\"guest-row"), 12, "one timeline row per guest");
	cr_expect_eq(count(dom, "class=\"move-bar kind-moved\""), 8, "a bar per move");
	cr_expect_eq(count(dom, "class=\"move-bar kind-failed\""), 1, "the failed move's bar");
	cr_expect_eq(count(dom, "<tr class=\"move "), 12, "a table row per guest");
	cr_expect_geq(count(dom, "<title>"), 1 + 12 + 9 + 2, "text alternatives in titles");
	cr_expect(strstr(dom, "migration aborted"), "the failure's reason");
	cr_expect(strstr(dom, "Away from home at the end"), "the away section");
	assert_downtimes_in_rows(dom, rep);
	free(dom);

	/* rendered: a screenshot, kept */
	keep_screenshot(w.dir, page, w.bin, "report.png");
	free(page);
	json_object_put(rep);
	world_free(&w);
}

Test(report, through_pvagentd_from_its_store)
{
	struct world w;
	world_start(&w);
	drain(&w);
	json_object *local = cli_report_json(&w, NULL, "--local", "1");

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
	json_object *via = cli_report_json(&w, conf2, NULL, "1");
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

Test(report, rolling_tree_window_in_a_browser_and_json_both_ways)
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
	/* not part of the tree: another drain, of a window closing at T0 +
	 * 3600 (w1 moved, w2 not started: the window closes first) */
	const char *win_steps[] = {"plan:done:400:401", "move:done:401:3700", NULL};
	long long win = put_job(st, "drain", "pve2", "{\"deadline\":1790003600}",
				"{\"moves\":[{\"vmid\":201,\"name\":\"w1\",\"status\":\"moved\","
				"\"method\":\"online\",\"target\":\"pve3\",\"downtime_ms\":25},"
				"{\"vmid\":202,\"name\":\"w2\",\"status\":\"skipped\",\"method\":"
				"\"online\",\"target\":\"pve3\",\"why\":\"not started: the window "
				"closes first\"}]}",
				JOB_DONE, 400, 4000, win_steps);

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

	/* a window's drain, its page in Chromium: the deadline drawn and
	 * said, the move that ran and the one the window refused */
	cr_assert_eq(report_build(st, win, &r, &err), 1, "%s", err);
	cr_expect_str_eq(r.kind, "window");
	cr_expect_eq(r.deadline, 1790003600.0);
	cr_expect_eq(r.n_moved, 1);
	cr_expect_eq(r.n_refused, 1);
	page = report_html(&r);
	cr_assert_not_null(page);
	char *file = strprintf("%s/window.html", dir);
	cr_assert_eq(test_write_file(file, page, 0600), 0);
	free(page);
	char *dom = browse(dir, file, "--dump-dom");
	assert_self_contained(dom, "the window's DOM");
	cr_expect(strstr(dom, "<line class=\"deadline\""), "the window's end is not drawn");
	cr_expect(strstr(dom, "Window closes"), "the window's end is not said");
	cr_expect(strstr(dom, "<tr class=\"move kind-moved\" data-vmid=\"201\">"), "w1's row");
	cr_expect(strstr(dom, "<tr class=\"move kind-refused\" data-vmid=\"202\">"), "w2's row");
	cr_expect(strstr(dom, "not started: the window closes first"), "the refusal's reason");
	free(dom);
	const char *bin = getenv("PVAGENT_BIN");
	keep_screenshot(dir, file, bin ? bin : "build/san/pvagent", "window.png");
	free(file);
	report_free(&r);
	cr_expect_eq(report_build(st, 999, &r, &err), 0);
	store_close(st);
	cr_assert_eq(test_remove_tree(dir), 0);
}

/* A rolling job of q run to its end in this process on f's store. */
static struct job *rolling_job(struct migfx *f, const struct rolling_request *q,
			       enum job_outcome *out)
{
	struct job *j = NULL;
	struct pve_error e = {0};
	json_object *params = wf_rolling_params(q);
	cr_assert_eq(job_new(&f->env, &wf_rolling, "cluster", params, &j, &e), 0, "job_new: %s",
		     e.message ? e.message : "?");
	json_object_put(params);
	wf_rolling_attach(j, &f->opts);
	*out = job_run(j, f->c);
	return j;
}

/* ---- a rolling run's report --------------------------------------------------------------- */

/* `rolling run pve1 --wait` on drain.json (its huge guest made to fit), in
 * simulated time: pve1 is drained, never reboots, and the run stops in its
 * update step needing attention. The report has the rolling job's lane,
 * pve1's node job with its phases, its drain with every move, and the
 * guests away from home. */
Test(report, a_rolling_run_that_stops_in_its_update)
{
	struct migfx f;
	cr_assert_eq(migfx_start_with(&f, SCEN, "{\"guests\":{\"302\":{\"config\":{\"memory\":"
						 "\"1024\"}}}}", true), 0);
	char dir[] = "/tmp/pvagent-test-report-rolling.XXXXXX";
	f.env.store = temp_store(dir);
	const char *nodes[] = {"pve1"};
	struct rolling_request q = {.nodes = nodes, .n_nodes = 1, .mode = "wait", .max_workers = 4,
				    .wait_s = 30};
	enum job_outcome o;
	struct job *j = rolling_job(&f, &q, &o);
	cr_assert_eq(o, JOB_OUT_NEEDS_ATTENTION);
	long long id = job_id(j);
	job_free(j);

	struct report r;
	char *err = NULL;
	cr_assert_eq(report_build(f.env.store, id, &r, &err), 1, "%s", err);
	cr_expect_str_eq(r.kind, "rolling");
	cr_expect_str_eq(r.state, "needs-attention");
	const struct report_lane *node = NULL, *drain_lane = NULL;
	for (size_t i = 0; i < r.n_lanes; i++) {
		if (strcmp(r.lanes[i].workflow, "rolling-node") == 0)
			node = &r.lanes[i];
		if (strcmp(r.lanes[i].workflow, "drain") == 0)
			drain_lane = &r.lanes[i];
	}
	cr_assert_not_null(node, "no lane of pve1's node job");
	cr_assert_not_null(drain_lane, "no lane of pve1's drain");
	cr_expect_str_eq(node->node, "pve1");
	bool update_failed = false, drain_done = false;
	for (size_t k = 0; k < node->n_steps; k++) {
		update_failed |= strcmp(node->steps[k].name, "update") == 0 &&
				 strcmp(node->steps[k].state, "failed") == 0;
		drain_done |= strcmp(node->steps[k].name, "drain") == 0 &&
			      strcmp(node->steps[k].state, "done") == 0 &&
			      node->steps[k].ended >= node->steps[k].started;
	}
	cr_expect(update_failed, "pve1's update step is not the failed one");
	cr_expect(drain_done, "pve1's drain phase has no end");
	/* the movers of drain.json (302 fits now), each once, away from home */
	cr_expect_eq(r.n_moved, 10, "%zu moved", r.n_moved);
	cr_expect_eq(r.n_failed, 0);
	cr_expect_eq(r.n_away, 10);
	for (size_t i = 0; i < r.n_moves; i++)
		if (r.moves[i].kind == REPORT_MOVED)
			cr_expect(r.moves[i].job > 0 && r.moves[i].started > 0,
				  "%s: no migration job", r.moves[i].name);
	for (size_t i = 0; i < r.n_guests; i++) {
		size_t moves = 0;
		for (size_t k = 0; k < r.n_moves; k++)
			moves += r.moves[k].vmid == r.guests[i].vmid;
		cr_expect_eq(moves, 1, "guest %d has %zu moves", r.guests[i].vmid, moves);
	}
	char *page = report_html(&r);
	cr_assert_not_null(page);
	cr_expect(strstr(page, "Rolling maintenance of cluster"));
	/* the failed phase drawn as failed, and why it failed, in words */
	char *bar = strprintf("pve1 rolling-node #%lld, step update: failed", node->job);
	cr_expect(strstr(page, bar), "no bar: %s", bar);
	free(bar);
	cr_expect(strstr(page, "no reboot seen"), "the update's failure is not in the page");
	assert_self_contained(page, "the page");
	free(page);
	report_free(&r);
	store_close(f.env.store);
	f.env.store = NULL;
	cr_assert_eq(test_remove_tree(dir), 0);
	cr_assert_eq(migfx_stop(&f), 0);
}

/* ---- issue 37's cluster rolled from 8.4 to 9.1, reported --------------------------------- *
 *
 * rolling.json's run over each node's test sshd (tests/support/rollfx.h,
 * as test_rolling runs it, every guest probed), then `pvagent --local --json report` and
 * `--html` on its store: a lane per job of the tree (the run, each node's
 * job with its seven phases, each node's drain and undrain), each running
 * VM moved live off its node and home again (start, end, PVE's downtime,
 * its migration job), nothing failed or away; the page, in headless
 * Chromium, a lane row per job, a guest row and a bar per move, each
 * downtime in its row; a screenshot kept (rolling.png). */

/* The moves of vmid in the report's JSON, n of them; their kinds "moved". */
static size_t moves_of(json_object *rep, long long vmid, json_object **out, size_t max)
{
	json_object *moves = NULL;
	size_t n = 0;
	cr_assert(json_object_object_get_ex(rep, "moves", &moves));
	for (size_t i = 0; i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i);
		long long id = 0;
		if (json_int(m, "vmid", &id) && id == vmid && n < max)
			out[n++] = m;
	}
	return n;
}

static size_t lanes_of(json_object *rep, const char *workflow)
{
	json_object *lanes = NULL;
	size_t n = 0;
	cr_assert(json_object_object_get_ex(rep, "lanes", &lanes));
	for (size_t i = 0; i < json_object_array_length(lanes); i++) {
		json_object *l = json_object_array_get_idx(lanes, i), *steps = NULL;
		if (strcmp(json_str(l, "workflow"), workflow) != 0)
			continue;
		n++;
		if (strcmp(workflow, "rolling-node") != 0)
			continue;
		/* a node's seven phases, in order, each done with its times */
		static const char *const phases[] = {"precheck", "maintenance", "drain", "update",
						     "check", "leave", "undrain"};
		cr_assert(json_object_object_get_ex(l, "steps", &steps));
		cr_assert_eq(json_object_array_length(steps), 7, "%s's phases", json_str(l, "node"));
		for (size_t k = 0; k < 7; k++) {
			json_object *s = json_object_array_get_idx(steps, k), *a = NULL, *b = NULL;
			cr_expect_str_eq(json_str(s, "name"), phases[k]);
			cr_expect_str_eq(json_str(s, "state"), "done", "%s's %s", json_str(l, "node"),
					 phases[k]);
			cr_expect(json_object_object_get_ex(s, "started", &a) && a &&
					  json_object_object_get_ex(s, "ended", &b) && b &&
					  json_object_get_double(b) >= json_object_get_double(a),
				  "%s's %s has no start and end", json_str(l, "node"), phases[k]);
		}
	}
	return n;
}

Test(report, a_cluster_rolled_to_9_1_as_json_and_in_a_browser)
{
	const char *bin = getenv("PVAGENT_BIN");
	struct world pw = {.bin = bin ? bin : "build/san/pvagent"};
	struct rollfx w;
	int rc = rollfx_start_probed(&w, "20", true);
	if (rc == 1)
		cr_skip_test("needs root (the nodes' test sshd chroots)");
	cr_assert_eq(rc, 0, "the rolling world did not start (see above)");
	struct rolling_request q = {.mode = "run", .version = "9.1", .max_workers = 4,
				    .node_ssh = w.node_ssh, .wait_s = 1800};
	enum job_outcome o;
	struct job *j = rolling_job(&w.f, &q, &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	char id[24];
	snprintf(id, sizeof id, "%lld", job_id(j));
	job_free(j);
	char *conf = strprintf("%s/pvagent.conf", w.dir), *secret = strprintf("%s/secret", w.dir);
	char *body = strprintf("%s\n", w.f.sp.token_secret), *sock = strprintf("%s/sock", w.dir);
	cr_assert_eq(test_write_file(secret, body, 0600), 0);
	write_sim_conf(&w.f.sp, secret, w.dir, sock, conf, w.dir);
	free(body);
	free(secret);
	free(sock);

	json_object *rep = cli_report_json(&pw, conf, "--local", id);
	cr_expect_str_eq(json_str(rep, "workflow"), "rolling");
	cr_expect_str_eq(json_str(rep, "kind"), "rolling");
	cr_expect_str_eq(json_str(rep, "state"), "done");
	cr_expect_eq(lanes_of(rep, "rolling"), 1);
	cr_expect_eq(lanes_of(rep, "rolling-node"), 3, "a lane per node");
	cr_expect_eq(lanes_of(rep, "drain"), 3);
	cr_expect_eq(lanes_of(rep, "undrain"), 3);
	cr_expect_eq(total(rep, "failed"), 0);
	cr_expect_eq(total(rep, "away"), 0, "every guest home at the end");
	/* each guest off its home and back, each move once: a running VM live
	 * (PVE's downtime), a container by restart, a stopped VM offline; the
	 * gap its clients saw where the probe (every 10 ms) cannot miss it: a
	 * container's restart (3 s simulated, 150 ms at 20 times); a live
	 * migration's few ms it may */
	json_object *guests = NULL;
	json_object_object_get_ex(w.scen, "guests", &guests);
	size_t running = 0, moved = 0, moved_by_ha = 0, ct_gaps = 0;
	for (size_t i = 0; i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i), *m[4];
		const char *type = json_str(g, "type"), *st = json_str(g, "status");
		bool ct = type && strcmp(type, "lxc") == 0;
		bool up = st && strcmp(st, "running") == 0;
		running += up;
		long long vmid = json_int0(g, "vmid");
		const char *home = json_str(g, "node");
		size_t n = moves_of(rep, vmid, m, 4);
		cr_expect_eq(n, 2, "%lld: %zu moves", vmid, n);
		for (size_t k = 0; k < n && k < 2; k++) {
			json_object *a = NULL, *b = NULL;
			cr_expect_str_eq(json_str(m[k], "kind"), "moved", "%lld", vmid);
			cr_expect_str_eq(json_str(m[k], "method"),
					 ct ? "restart" : up ? "online" : "offline", "%lld", vmid);
			cr_expect(json_object_object_get_ex(m[k], "started", &a) && a &&
					  json_object_object_get_ex(m[k], "ended", &b) && b &&
					  json_object_get_double(b) > json_object_get_double(a),
				  "%lld: a move without its start and end", vmid);
			long long dt = -1, job = 0, gap = -1;
			cr_expect(!up || (json_int(m[k], "downtime_ms", &dt) && dt >= 0),
				  "%lld: no downtime PVE measured", vmid);
			/* a running HA guest is moved by PVE's CRM in maintenance,
			 * not by a migration job of ours */
			bool by_ha = strcmp(json_str(m[k], "status"), "moved by HA") == 0;
			cr_expect(by_ha || (json_int(m[k], "job", &job) && job > 0), "%lld: no job",
				  vmid);
			moved_by_ha += by_ha;
			/* the gap its clients saw: the probe (a thread of this
			 * busy test) may sleep through one restart's 150 ms (no
			 * gap seen: none reported), not through all of them */
			if (ct && up && !by_ha && json_int(m[k], "gap_ms", &gap)) {
				cr_expect_gt(gap, 0, "%lld: a gap of %lld ms", vmid, gap);
				ct_gaps++;
			}
			moved += strcmp(json_str(m[k], "kind"), "moved") == 0;
		}
		if (n == 2) {
			cr_expect_str_eq(json_str(m[0], "from"), home, "%lld's first move", vmid);
			cr_expect_str_eq(json_str(m[1], "to"), home, "%lld's way home", vmid);
		}
	}
	cr_expect_gt(running, 10);
	cr_expect_gt(ct_gaps, 0, "a container's restart its clients saw");
	cr_expect_gt(moved_by_ha, 0, "the HA guests' moves by PVE's CRM");
	cr_expect_eq(total(rep, "moved"), (long long)moved, "a move counted twice");
	cr_expect_geq(total(rep, "max_gap_ms"), 0, "the longest gap clients saw");

	/* the page, and Chromium's DOM of it */
	char *page = strprintf("%s/rolling.html", w.dir), *out = NULL;
	cr_assert_eq(pv(&pw, conf, &out, "--local", "report", id, "--html", page, NULL), 0, "%s",
		     out);
	free(out);
	char *html = NULL;
	cr_assert_eq(read_file(page, &html, NULL), 0);
	assert_self_contained(html, "the page");
	free(html);
	char *dom = browse(w.dir, page, "--dump-dom");
	assert_self_contained(dom, "the DOM");
	cr_expect(strstr(dom, "Rolling maintenance of cluster"), "the title");
	json_object *lanes = NULL, *rguests = NULL;
	json_object_object_get_ex(rep, "lanes", &lanes);
	json_object_object_get_ex(rep, "guests", &rguests);
	cr_expect_eq(count(dom, "class=\"lane-row\""), json_object_array_length(lanes),
		     "a timeline row per job of each node");
	cr_expect_eq(json_object_array_length(rguests), json_object_array_length(guests));
	cr_expect_eq(count(dom, "class=\"guest-row"), json_object_array_length(guests),
		     "a timeline row per guest");
	cr_expect_eq(count(dom, "class=\"move-bar kind-moved\""), (size_t)total(rep, "moved"),
		     "a bar per move");
	assert_downtimes_in_rows(dom, rep);
	free(dom);
	keep_screenshot(w.dir, page, pw.bin, "rolling.png");
	free(page);
	free(conf);
	json_object_put(rep);
	cr_assert_eq(rollfx_stop(&w), 0, "see above");
}
