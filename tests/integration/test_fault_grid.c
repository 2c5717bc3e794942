/* test_fault_grid.c - issue 36's fault grid through the real tool: each
 * request of `setup` (password file; the demo cluster with local lacking
 * import, so the storage step runs too), `image build` (an image a
 * loopback HTTP server of the test serves) and `up --pool` (a pool on
 * 127.0.7.0/24, addresses never contacted), crossed with the shared fault
 * kinds (faultkinds.h). The request points come from the simulator's log of
 * a clean run: each request once, by method, path and its rank among the
 * requests of that method and path (a UPID in a path matched by its task
 * type; a task's status and log polls only at their first, as their number
 * follows the clock). For each point and kind: a fresh simulator, the
 * fault on that request, the command, then the same command again. Asserted:
 * the first run's exit status matches what it says and what the simulator
 * holds (0: done; 1 or 4: nothing of it left beyond what a next run
 * completes, for setup no file unless a token was made and its secret kept
 * beside the configuration; 3: something is left and every VM and the
 * downloaded file its needs-attention text names exists); the second run
 * converges (exit 0, one token, one template, one guest with one pool
 * address and nothing else made); no output of either run, at -vv, holds
 * the token's secret or the root password.
 *
 * Sampled to keep CI time reasonable (the full cross product of the three
 * commands takes some 15 minutes under the sanitizers, the tool's retry
 * backoff being real time; sampled, some 4 minutes): requests that change
 * something (POST, PUT, DELETE) get every other kind, the even ones on
 * even writes, the odd ones on odd writes; reads one kind each, in turn
 * 500, reset, 596. FAULT_GRID_ALL=1 runs every kind on writes and all
 * three on reads; FAULT_GRID_MATCH=TEXT only the points whose path regex
 * holds TEXT (to replay a case). The delay kind runs against a 2 s client
 * timeout ([pve] timeout) in image build and up; setup's client timeout is
 * not configurable, so there it is left out (a slow success). */
#include "clirun.h"
#include "faultkinds.h"
#include "httpserve.h"
#include "pveprivs.h"
#include "simcli.h"
#include "simproc.h"
#include "util.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOT_PASSWORD "demo-root-password"
#define GUEST "g1"
#define IMAGE "debian-12"
#define TEMPLATE_VM "debian-12-image"

enum cmd { SETUP, IMAGE_BUILD, UP_POOL };
static const char *const cmd_names[] = {"setup", "image build", "up --pool"};

/* One world: the simulator and what the command needs. */
struct world {
	enum cmd cmd;
	struct simproc sim;
	struct simcli cli;
	struct httpserve hs;
	bool hs_up;
	char *setup_conf, *setup_secret, *pw; /* setup */
	char *url, *sum;                      /* image build */
	int baseline;                         /* guests before the command */
};

static struct world world; /* the one live world (grid_fini stops it) */
static bool live;
static char *setup_scenario;

static void grid_fini(void)
{
	if (live) {
		if (world.hs_up)
			httpserve_stop(&world.hs);
		simproc_stop(&world.sim);
		live = false;
	}
	if (setup_scenario) {
		unlink(setup_scenario);
		free(setup_scenario);
		setup_scenario = NULL;
	}
}

/* cppcheck-suppress unknownMacro */
TestSuite(fault_grid, .fini = grid_fini, .timeout = 900);

static const char pool_tmpl[] = "[template]\nkind = qemu\nos = ubuntu\nos_version = 24.04\n"
				"[source]\nclone = ubuntu-24.04-base\nfull = no\n"
				"[pve]\nmemory = 512\n"
				"[guest]\naddress = agent\n";

/* The demo cluster with local's content without import (a cluster
 * installed before PVE 9.0): setup's storage step adds it. */
static char *demo_without_import(void)
{
	json_object *sc = json_object_from_file("tests/pvesim/scenarios/demo.json"), *st = NULL;
	cr_assert(sc && json_object_object_get_ex(sc, "storages", &st));
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *s = json_object_array_get_idx(st, i);
		const char *id = json_object_get_string(json_object_object_get(s, "id"));
		if (strcmp(id, "local") == 0)
			json_object_object_add(s, "content", json_object_new_string("iso,vztmpl,backup"));
	}
	char *path = strprintf("/tmp/pvagent-grid-demo-%d.json", (int)getpid());
	cr_assert_eq(json_object_to_file(path, sc), 0);
	json_object_put(sc);
	return path;
}

/* [pve] timeout = 2 added to the simcli configuration (the delay kind is
 * past it). */
static void short_timeout(struct simcli *c)
{
	char *text = NULL;
	cr_assert_eq(read_file(c->conf, &text, NULL), 0);
	char *at = strstr(text, "[pve]\n");
	cr_assert_not_null(at);
	at += 6;
	char *t = strprintf("%.*stimeout = 2\n%s", (int)(at - text), text, at);
	cr_assert_eq(test_write_file(c->conf, t, 0600), 0);
	free(t);
	free(text);
}

static json_object *guests_of(struct simproc *sp)
{
	json_object *st = simproc_state(sp), *cl = NULL, *gs = NULL;
	cr_assert(st && json_object_object_get_ex(st, "cluster", &cl) &&
		  json_object_object_get_ex(cl, "guests", &gs));
	json_object_get(gs);
	json_object_put(st);
	return gs;
}

static int n_guests(struct simproc *sp)
{
	json_object *gs = guests_of(sp);
	int n = (int)json_object_array_length(gs);
	json_object_put(gs);
	return n;
}

static bool vmid_exists(struct simproc *sp, int vmid)
{
	json_object *gs = guests_of(sp);
	bool found = false;
	for (size_t i = 0; !found && i < json_object_array_length(gs); i++)
		found = json_object_get_int(json_object_object_get(json_object_array_get_idx(gs, i),
								   "vmid")) == vmid;
	json_object_put(gs);
	return found;
}

/* Guests named name; *cfg the config of the last one (new reference, or
 * NULL). */
static int named(struct simproc *sp, const char *name, json_object **cfg)
{
	json_object *gs = guests_of(sp);
	int n = 0;
	if (cfg)
		*cfg = NULL;
	for (size_t i = 0; i < json_object_array_length(gs); i++) {
		json_object *c = NULL;
		if (!json_object_object_get_ex(json_object_array_get_idx(gs, i), "config", &c))
			continue;
		const char *nm = json_object_get_string(json_object_object_get(c, "name"));
		if (nm && strcmp(nm, name) == 0) {
			n++;
			if (cfg) {
				json_object_put(*cfg);
				*cfg = json_object_get(c);
			}
		}
	}
	json_object_put(gs);
	return n;
}

static const char *key_of(json_object *c, const char *k)
{
	const char *v = json_object_get_string(json_object_object_get(c, k));
	return v ? v : "";
}

/* The API's data array at path (scenario token), its length. */
static int listed(struct simproc *sp, const char *path)
{
	long st = 0;
	json_object *a = NULL, *d = NULL;
	cr_assert_eq(sim_api(sp, "GET", path, NULL, &st, &a), 0, "GET %s", path);
	cr_assert_eq(st, 200, "GET %s: %ld", path, st);
	cr_assert(json_object_object_get_ex(a, "data", &d));
	int n = (int)json_object_array_length(d);
	json_object_put(a);
	return n;
}

static int import_files(struct simproc *sp)
{
	return listed(sp, "/nodes/pve1/storage/local/content?content=import");
}

static int tokens(struct simproc *sp)
{
	long st = 0;
	json_object *a = NULL;
	cr_assert_eq(sim_api(sp, "GET", "/access/users/" PVEPRIVS_USER "/token", NULL, &st, &a), 0);
	json_object_put(a);
	return st == 200 ? listed(sp, "/access/users/" PVEPRIVS_USER "/token") : 0;
}

/* ---- the world of each command ------------------------------------------------ */

static void world_start(struct world *w, enum cmd cmd)
{
	memset(w, 0, sizeof *w);
	w->cmd = cmd;
	live = true;
	if (cmd == SETUP) {
		simcli_start(&w->cli, &w->sim, setup_scenario, NULL);
		w->setup_conf = strprintf("%s/etc/pvagent.conf", w->cli.dir);
		w->setup_secret = strprintf("%s/etc/token.secret", w->cli.dir);
		w->pw = strprintf("%s/pw", w->cli.dir);
		cr_assert_eq(test_write_file(w->pw, ROOT_PASSWORD "\n", 0600), 0);
	} else if (cmd == IMAGE_BUILD) {
		cr_assert_eq(httpserve_start(&w->hs), 0);
		w->hs_up = true;
		simcli_start(&w->cli, &w->sim, "tests/pvesim/scenarios/images.json", NULL);
		short_timeout(&w->cli);
		char *cp = strprintf("cp -r templates/. '%s' && chmod -R go-w '%s'", w->cli.tdir,
				     w->cli.tdir);
		cr_assert_eq(system(cp), 0);
		free(cp);
		w->sum = httpserve_put_qcow2(&w->hs, "g.qcow2", 1ULL << 30);
		cr_assert_not_null(w->sum);
		w->url = strprintf("%s/g.qcow2", w->hs.base);
	} else {
		simcli_start(&w->cli, &w->sim, "tests/pvesim/scenarios/demo.json",
			     "[pool \"lan\"]\ncidr = 127.0.7.0/24\ngateway = 127.0.7.1\n"
			     "range = 127.0.7.10-127.0.7.12\n");
		short_timeout(&w->cli);
		char *tp = strprintf("%s/poolvm.tmpl", w->cli.tdir);
		cr_assert_eq(test_write_file(tp, pool_tmpl, 0644), 0);
		free(tp);
	}
	w->baseline = n_guests(&w->sim);
}

static void world_free(struct world *w)
{
	live = false;
	if (w->hs_up)
		httpserve_stop(&w->hs);
	simcli_free(&w->cli);
	free(w->setup_conf);
	free(w->setup_secret);
	free(w->pw);
	free(w->url);
	free(w->sum);
}

/* The command at -vv: its exit status, *out its output. */
static int run(struct world *w, char **out)
{
	int rc;
	if (w->cmd == SETUP)
		rc = test_pvagent(w->cli.bin, w->setup_conf, out, "-vv", "setup", w->sim.url,
				  "--password-file", w->pw, "--fingerprint", w->sim.fingerprint,
				  NULL);
	else if (w->cmd == IMAGE_BUILD)
		rc = test_pvagent(w->cli.bin, w->cli.conf, out, "-vv", "--local", "image", "build",
				  IMAGE, "--url", w->url, "--checksum", w->sum, NULL);
	else
		rc = test_pvagent(w->cli.bin, w->cli.conf, out, "-vv", "--local", "up", GUEST, "-t",
				  "poolvm", "--pool", "lan", NULL);
	cr_assert_neq(rc, -2, "sanitizer report:\n%s", *out);
	cr_assert_neq(rc, -1, "pvagent did not run");
	return rc;
}

/* ---- the assertions ---------------------------------------------------------------- */

/* No secret in out: the scenario's token secret, the root password, and
 * the secret setup wrote (when it did). */
static void no_secret_in(const struct world *w, const char *what, const char *out)
{
	cr_expect_null(strstr(out, ROOT_PASSWORD), "%s: the root password in the output:\n%s",
		       what, out);
	cr_expect_null(strstr(out, w->sim.token_secret), "%s: the token secret in the output:\n%s",
		       what, out);
	char *sec = NULL;
	if (w->setup_secret && read_file(w->setup_secret, &sec, NULL) == 0) {
		sec[strcspn(sec, "\n")] = '\0';
		cr_expect(*sec && !strstr(out, sec), "%s: setup's secret in the output:\n%s", what,
			  out);
	}
	free(sec);
}

/* Is the command's one result there, and nothing else it makes? NULL when
 * so, else what is wrong (static text). */
static const char *converged(struct world *w)
{
	if (w->cmd == SETUP) {
		if (tokens(&w->sim) != 1)
			return "not exactly one token";
		if (access(w->setup_secret, R_OK) < 0)
			return "no secret file";
		char *out = NULL;
		int rc = test_pvagent(w->cli.bin, w->setup_conf, &out, "nodes", NULL);
		free(out);
		return rc == 0 ? NULL : "the written configuration does not run `nodes`";
	}
	if (w->cmd == IMAGE_BUILD) {
		json_object *c = NULL;
		int n = named(&w->sim, TEMPLATE_VM, &c);
		bool tmpl = c && strcmp(key_of(c, "template"), "1") == 0;
		json_object_put(c);
		if (n != 1 || !tmpl)
			return "not exactly one template VM";
		if (n_guests(&w->sim) != w->baseline + 1)
			return "another VM was made";
		return import_files(&w->sim) ? "the downloaded file is left" : NULL;
	}
	json_object *c = NULL;
	int n = named(&w->sim, GUEST, &c);
	const char *why = NULL;
	unsigned d = 0;
	char *tag = NULL;
	if (n != 1)
		why = "not exactly one guest";
	else if (sscanf(key_of(c, "ipconfig0"), "ip=127.0.7.%u/24", &d) != 1 || d < 10 || d > 12)
		why = "no pool address";
	else if (!strstr(key_of(c, "tags"), (tag = strprintf("ip-127.0.7.%u", d))))
		why = "no address tag";
	else if (n_guests(&w->sim) != w->baseline + 1)
		why = "another VM was made";
	free(tag);
	json_object_put(c);
	return why;
}

/* Anything the command makes, beyond the scenario's? */
static bool made_something(struct world *w)
{
	if (w->cmd == SETUP)
		return tokens(&w->sim) > 0;
	return n_guests(&w->sim) > w->baseline ||
	       (w->cmd == IMAGE_BUILD && import_files(&w->sim) > 0);
}

/* Every "VM N" the needs-attention text of out names exists, and so does
 * the downloaded file when it names one. */
static void attention_names_what_exists(struct world *w, const char *what, const char *out)
{
	const char *at = strstr(out, "needs attention");
	const char *left = strstr(out, "left:");
	if (!at || (left && left < at))
		at = left;
	if (!at) {
		cr_expect_fail("%s: exit 3 without needs-attention or left:\n%s", what, out);
		return;
	}
	for (const char *p = at; (p = strstr(p, "VM ")); p += 3) {
		int vmid = 0;
		if (sscanf(p, "VM %d", &vmid) == 1)
			cr_expect(vmid_exists(&w->sim, vmid), "%s: names VM %d, which is gone:\n%s",
				  what, vmid, out);
	}
	if (strstr(at, "downloaded file"))
		cr_expect_gt(import_files(&w->sim), 0, "%s: names the downloaded file, gone:\n%s",
			     what, out);
}

/* The first run's exit status against its output and what exists. */
static void outcome_matches(struct world *w, const char *what, int rc, const char *out)
{
	cr_expect(rc == 0 || rc == 1 || rc == 3 || rc == 4, "%s: exit %d:\n%s", what, rc, out);
	if (rc == 0) {
		const char *why = converged(w);
		cr_expect_null(why, "%s: exit 0 but %s:\n%s", what, why, out);
		return;
	}
	if (rc == 3) {
		cr_expect(made_something(w), "%s: exit 3 with nothing left:\n%s", what, out);
		attention_names_what_exists(w, what, out);
		return;
	}
	/* 1 and 4: nothing half-made */
	if (w->cmd == SETUP) {
		/* a made token keeps its secret, named; none: no file at all */
		if (tokens(&w->sim) > 0) {
			struct stat st;
			cr_expect_eq(stat(w->setup_secret, &st), 0, "%s: a token without its secret:\n%s",
				     what, out);
			cr_expect_eq(st.st_mode & 0777, 0600, "%s", what);
			cr_expect(strstr(out, w->setup_secret), "%s: the kept secret not named:\n%s",
				  what, out);
		} else {
			cr_expect_neq(access(w->setup_conf, F_OK), 0, "%s: a file written:\n%s", what,
				      out);
		}
		return;
	}
	cr_expect_eq(n_guests(&w->sim), w->baseline, "%s: exit %d, yet a VM is left:\n%s", what,
		     rc, out);
	if (w->cmd == IMAGE_BUILD)
		cr_expect_eq(import_files(&w->sim), 0, "%s: exit %d, yet the file is left:\n%s",
			     what, rc, out);
}

/* ---- the request points ---------------------------------------------------------- */

struct point {
	char *method;
	char *rx;   /* the path as a regex */
	int nth;
	bool read;
};

/* path as an anchored regex: metacharacters in brackets (the rule is
 * JSON: no backslashes), a UPID segment matched by its task type, a
 * volume ID (STORAGE:...; its file name follows the image server's port)
 * by any. */
static char *path_rx(const char *path, bool *task_poll)
{
	size_t cap = strlen(path) * 3 + 64, n = 0;
	char *rx = malloc(cap);
	cr_assert_not_null(rx);
	rx[n++] = '^';
	*task_poll = false;
	for (const char *p = path; *p;) {
		if (strncmp(p, "UPID:", 5) == 0) {
			/* UPID:node:pid:pstart:starttime:type:id:user: */
			const char *e = p + strcspn(p, "/");
			const char *f = p;
			for (int i = 0; i < 5 && f < e; i++)
				f = memchr(f, ':', (size_t)(e - f)) ? (char *)memchr(f, ':', (size_t)(e - f)) + 1
								    : e;
			size_t tl = strcspn(f, ":/");
			char *seg = strprintf("UPID:[^/]*:%.*s:[^/]*", (int)tl, f);
			size_t sl = strlen(seg);
			if (n + sl + 8 > cap) {
				cap = (n + sl) * 2 + 64;
				rx = realloc(rx, cap);
				cr_assert_not_null(rx);
			}
			memcpy(rx + n, seg, sl);
			n += sl;
			free(seg);
			p = e;
			*task_poll = true;
			continue;
		}
		const char *seg_end = p + strcspn(p, "/");
		if ((p == path || p[-1] == '/') && memchr(p, ':', (size_t)(seg_end - p))) {
			memcpy(rx + n, "[^/]*", 5);
			n += 5;
			p = seg_end;
			continue;
		}
		if (strchr(".{}()*+?$|", *p)) {
			rx[n++] = '[';
			rx[n++] = *p++;
			rx[n++] = ']';
		} else {
			rx[n++] = *p++;
		}
	}
	rx[n++] = '$';
	rx[n] = '\0';
	return rx;
}

/* The points of a clean run's log (requests from index from on). */
static struct point *points_of(json_object *log, size_t from, size_t *np)
{
	size_t len = json_object_array_length(log);
	struct point *pts = calloc(len ? len : 1, sizeof *pts);
	cr_assert_not_null(pts);
	size_t n = 0;
	for (size_t i = from; i < len; i++) {
		json_object *r = json_object_array_get_idx(log, i);
		const char *m = key_of(r, "method"), *path = key_of(r, "path");
		bool task_poll = false;
		char *rx = path_rx(path, &task_poll);
		int nth = 1;
		for (size_t k = 0; k < n; k++)
			if (strcmp(pts[k].method, m) == 0 && strcmp(pts[k].rx, rx) == 0)
				nth++;
		if (task_poll && nth > 1) {
			free(rx);
			continue;
		}
		pts[n++] = (struct point){strdup(m), rx, nth, strcmp(m, "GET") == 0};
	}
	*np = n;
	return pts;
}

/* Does kind k run on point p, the nread-th read or nwrite-th write? */
static bool kind_applies(enum cmd cmd, const struct point *p, size_t nread, size_t nwrite,
			 size_t k)
{
	static const char *const read_kinds[] = {"500", "reset", "timeout"};
	const char *name = fault_kinds[k].name;
	if (cmd == SETUP && strcmp(name, "delay") == 0)
		return false;
	bool all = getenv("FAULT_GRID_ALL") != NULL;
	if (p->read) {
		for (size_t i = 0; i < 3; i++)
			if (strcmp(name, read_kinds[i]) == 0)
				return all || i == nread % 3;
		return false;
	}
	return all || (k + nwrite) % 2 == 0;
}

/* One case: a fresh world, the fault, the command, the command again. */
static void one_case(enum cmd cmd, const struct point *p, const struct fault_kind *k)
{
	struct world *w = &world;
	world_start(w, cmd);
	char *rule = fault_rule(p->method, p->rx, p->nth, k);
	cr_assert_not_null(rule);
	cr_assert_eq(simproc_fault(&w->sim, rule), 0, "%s", rule);
	char *what = strprintf("%s, %s %s #%d, %s", cmd_names[cmd], p->method, p->rx, p->nth,
			       k->name);
	char *out = NULL;
	int rc = run(w, &out);
	/* the fault gone before looking (the looks are requests too) */
	long status = 0;
	cr_assert_eq(sim_http(&w->sim, "DELETE", "/_sim/fault", NULL, NULL, NULL, &status, NULL), 0);
	no_secret_in(w, what, out);
	outcome_matches(w, what, rc, out);
	free(out);
	int rc2 = run(w, &out);
	no_secret_in(w, what, out);
	cr_expect_eq(rc2, 0, "%s: the second run (after exit %d) exits %d:\n%s", what, rc, rc2,
		     out);
	const char *why = converged(w);
	cr_expect_null(why, "%s: after the second run, %s:\n%s", what, why, out);
	free(out);
	free(rule);
	free(what);
	world_free(w);
}

static void grid(enum cmd cmd)
{
	if (cmd == SETUP)
		setup_scenario = demo_without_import();
	/* the clean run: its request points */
	struct world *w = &world;
	world_start(w, cmd);
	json_object *before = simproc_requests(&w->sim);
	size_t from = json_object_array_length(before);
	json_object_put(before);
	char *out = NULL;
	cr_assert_eq(run(w, &out), 0, "the clean run:\n%s", out);
	no_secret_in(w, "the clean run", out);
	free(out);
	const char *why = converged(w);
	cr_assert_null(why, "the clean run: %s", why);
	json_object *log = simproc_requests(&w->sim);
	size_t np = 0;
	struct point *pts = points_of(log, from, &np);
	json_object_put(log);
	world_free(w);
	cr_assert_gt(np, 3);
	const char *only = getenv("FAULT_GRID_MATCH");
	size_t cases = 0, nread = 0, nwrite = 0;
	for (size_t i = 0; i < np; i++) {
		for (size_t k = 0; k < n_fault_kinds; k++)
			if ((!only || strstr(pts[i].rx, only)) &&
			    kind_applies(cmd, &pts[i], nread, nwrite, k)) {
				one_case(cmd, &pts[i], &fault_kinds[k]);
				cases++;
			}
		nread += pts[i].read;
		nwrite += !pts[i].read;
	}
	fprintf(stderr, "fault grid: %s: %zu requests, %zu cases\n", cmd_names[cmd], np, cases);
	for (size_t i = 0; i < np; i++) {
		free(pts[i].method);
		free(pts[i].rx);
	}
	free(pts);
}

Test(fault_grid, setup) { grid(SETUP); }
Test(fault_grid, image_build) { grid(IMAGE_BUILD); }
Test(fault_grid, up_pool) { grid(UP_POOL); }
