/* test_realcfg.c - every config of tests/realcfg (Proxmox's own test
 * suites' guest configs, loaded by the simulator from realcfg.json)
 * through the real pvagent ($PVAGENT_BIN): show and list --long (the
 * name PVE shows, the boot disk's bus), virtio --dry-run, migrate
 * --dry-run and drain --dry-run, each answer as tests/realcfg/expected.tsv says with the
 * PVE function that decides it; no dry run sends a change; a real drain
 * moves what its dry run plans to move and nothing else (nothing at all
 * without --partial), on PVE 9.1 and 8.4; guests by VMID where names
 * repeat; and the simulator's own migration refusals of what PVE refuses. */
#include "clirun.h"
#include "pvevers.h"
#include "simproc.h"
#include "util.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SCENARIO "tests/realcfg/realcfg.json"
#define EXPECTED "tests/realcfg/expected.tsv"

#define NF 10
enum { F_VMID, F_FILE, F_STATUS, F_NAME, F_DISK, F_VIRTIO, F_MIGRATE, F_DRAIN, F_PLANNER, F_WHY };
struct row {
	unsigned line;
	char *f[NF];
};

static struct simproc sp;
static char *conf, *secret, *scenario_copy;
static struct row *rows;
static size_t nrows;

static void load_rows(void)
{
	char *text = NULL;
	cr_assert_eq(read_file(EXPECTED, &text, NULL), 0, "run from the tree: %s", EXPECTED);
	unsigned line = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		line++;
		if (l[0] == '#')
			continue;
		rows = realloc(rows, (nrows + 1) * sizeof *rows);
		cr_assert_not_null(rows);
		struct row *r = &rows[nrows++];
		r->line = line;
		size_t i = 0;
		for (char *s2 = NULL, *c = strtok_r(l, "\t", &s2); c && i < NF; c = strtok_r(NULL, "\t", &s2))
			cr_assert_not_null(r->f[i++] = strdup(c));
		cr_assert_eq(i, NF, "%s:%u: %d tab-separated fields, not %zu", EXPECTED, line, NF, i);
	}
	free(text);
	cr_assert_geq(nrows, 60, "the corpus has at least 60 configs");
}

/* The scenario on PVE version ver: a copy in /tmp with that pve_version
 * and the config files by absolute path (they are relative to the
 * scenario); its path (malloc'd). */
static char *scenario_on(const char *ver)
{
	json_object *sc = json_object_from_file(SCENARIO), *gs = NULL;
	cr_assert_not_null(sc, "%s does not parse", SCENARIO);
	char *dir = realpath("tests/realcfg", NULL);
	cr_assert_not_null(dir);
	json_object_object_add(sc, "pve_version", json_object_new_string(ver));
	cr_assert(json_object_object_get_ex(sc, "guests", &gs));
	for (size_t i = 0; i < json_object_array_length(gs); i++) {
		json_object *g = json_object_array_get_idx(gs, i), *cf = NULL;
		if (!json_object_object_get_ex(g, "config_file", &cf))
			continue;
		char *abs = strprintf("%s/%s", dir, json_object_get_string(cf));
		cr_assert_not_null(abs);
		json_object_object_add(g, "config_file", json_object_new_string(abs));
		free(abs);
	}
	char path[] = "/tmp/pvagent-realcfg-XXXXXX.json";
	int fd = mkstemps(path, 5);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(json_object_to_file(path, sc), 0);
	json_object_put(sc);
	free(dir);
	char *out = strdup(path);
	cr_assert_not_null(out);
	return out;
}

/* The simulator on the corpus (PVE ver; NULL: the scenario's 9.1) and a
 * conf whose drains run 16 migrations at once into pve2. */
static void start_on(const char *ver)
{
	if (access(getenv("PVAGENT_BIN") ? getenv("PVAGENT_BIN") : "build/san/pvagent", X_OK) < 0)
		cr_skip_test("no pvagent binary (make build/san/pvagent)");
	load_rows();
	static const char *const fast[] = {"--time-scale", "1000", NULL};
	if (ver)
		scenario_copy = scenario_on(ver);
	cr_assert_eq(simproc_start(&sp, ver ? scenario_copy : SCENARIO, fast), 0,
		     "the simulator did not start");
	secret = strprintf("%s/token.secret", sp.dir);
	conf = strprintf("%s/pvagent.conf", sp.dir);
	cr_assert(secret && conf);
	cr_assert_eq(test_write_file(secret, sp.token_secret, 0600), 0);
	char *c = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			    "fingerprint = %s\nnode = pve1\n[paths]\nstate = %s\n"
			    "[migrate]\nmax_workers = 16\nper_target = 16\n",
			    sp.url, sp.token_id, secret, sp.fingerprint, sp.dir);
	cr_assert_eq(test_write_file(conf, c, 0600), 0);
	free(c);
}

static void start(void)
{
	start_on(NULL);
}

static void stop(void)
{
	for (size_t i = 0; i < nrows; i++)
		for (size_t j = 0; j < NF; j++)
			free(rows[i].f[j]);
	free(rows);
	rows = NULL;
	nrows = 0;
	if (sp.pid > 0)
		cr_expect_eq(simproc_stop(&sp), 0, "the simulator did not exit cleanly");
	free(conf);
	free(secret);
	conf = secret = NULL;
	if (scenario_copy)
		unlink(scenario_copy);
	free(scenario_copy);
	scenario_copy = NULL;
}

TestSuite(realcfg, .init = start, .fini = stop, .timeout = 600);
/* the same corpus on each PVE version (started in the test) */
TestSuite(realcfg_ver, .fini = stop, .timeout = 600);

static const char *bin(void)
{
	return getenv("PVAGENT_BIN") ? getenv("PVAGENT_BIN") : "build/san/pvagent";
}

/* pvagent -c CONF ARGS... for every row, its VMID where ARGS say "%v",
 * RUN_AT_ONCE at a time (each config's own process and output, so a
 * failure names its row): outs[i] its output (malloc'd), rcs[i] its exit
 * status (-2: a sanitizer report in its output). args NULL-terminated;
 * only the rows sel[i] says when sel is not NULL (the others: no output,
 * exit -1). */
#define RUN_AT_ONCE 6
static void run_rows(const char *const *args, const bool *sel, char **outs, int *rcs)
{
	pid_t *pids = calloc(nrows + 1, sizeof *pids);
	cr_assert_not_null(pids);
	size_t waited = 0;
	for (size_t i = 0; i <= nrows; i++) {
		/* the oldest first: never a wait that could reap the simulator */
		while (waited < i && (i - waited >= RUN_AT_ONCE || i == nrows)) {
			int st = 0;
			if (!pids[waited]) {
				cr_assert_not_null(outs[waited] = strdup(""));
				rcs[waited] = -1;
				waited++;
				continue;
			}
			cr_assert_eq(waitpid(pids[waited], &st, 0), pids[waited]);
			char *path = strprintf("%s/row-%zu.out", sp.dir, waited);
			cr_assert_not_null(path);
			cr_assert_eq(read_file(path, &outs[waited], NULL), 0, "%s", path);
			unlink(path);
			free(path);
			const char *o = outs[waited];
			rcs[waited] = !WIFEXITED(st) ? -1
				    : strstr(o, "Sanitizer") || strstr(o, "runtime error") ? -2
				    : WEXITSTATUS(st);
			waited++;
		}
		if (i == nrows)
			break;
		if (sel && !sel[i])
			continue;
		const char *argv[16] = {bin(), "-c", conf};
		size_t n = 3;
		for (size_t k = 0; args[k] && n < 15; k++)
			argv[n++] = strcmp(args[k], "%v") == 0 ? rows[i].f[F_VMID] : args[k];
		argv[n] = NULL;
		char *path = strprintf("%s/row-%zu.out", sp.dir, i);
		cr_assert_not_null(path);
		pids[i] = test_spawn(argv, path);
		cr_assert_gt(pids[i], 0);
		free(path);
	}
	free(pids);
}

static void free_outs(char **outs)
{
	for (size_t i = 0; i < nrows; i++)
		free(outs[i]);
	free(outs);
}

/* "EXIT|text": the exit status and a text the output holds. */
static void expect_answer(const struct row *r, const char *what, const char *want, int rc,
			  const char *out)
{
	int code = atoi(want);
	const char *text = strchr(want, '|');
	cr_expect_eq(rc, code, "%s:%u (%s, VMID %s): %s exit %d, want %d: %s", EXPECTED, r->line,
		     r->f[1], r->f[0], what, rc, code, out);
	cr_expect(text && strstr(out, text + 1), "%s:%u (%s, VMID %s): %s should say '%s': %s",
		  EXPECTED, r->line, r->f[1], r->f[0], what, text ? text + 1 : "?", out);
}

/* The output's last line that is a JSON object (new reference) or NULL. */
static json_object *last_json(const char *out)
{
	json_object *found = NULL;
	for (const char *l = out; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		if (n && l[0] == '{') {
			char *line = strndup(l, n);
			json_object *o = line ? json_tokener_parse(line) : NULL;
			free(line);
			if (o) {
				json_object_put(found);
				found = o;
			}
		}
		l += n + (e ? 1 : 0);
	}
	return found;
}

/* No dry run or read changed anything: every request was a GET. */
static void expect_only_reads(void)
{
	json_object *log = simproc_requests(&sp);
	size_t n = json_object_array_length(log);
	for (size_t i = 0; i < n; i++) {
		const char *m = json_object_get_string(
			json_object_object_get(json_object_array_get_idx(log, i), "method"));
		const char *p = json_object_get_string(
			json_object_object_get(json_object_array_get_idx(log, i), "path"));
		cr_expect_str_eq(m, "GET", "a dry run sent %s %s", m, p);
	}
	json_object_put(log);
}

Test(realcfg, show_names_and_boot_disk)
{
	char **outs = calloc(nrows + 1, sizeof *outs);
	int *rcs = calloc(nrows + 1, sizeof *rcs);
	cr_assert(outs && rcs);
	static const char *const args[] = {"--json", "show", "%v", NULL};
	run_rows(args, NULL, outs, rcs);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		const char *out = outs[i];
		cr_expect_eq(rcs[i], 0, "%s:%u: show %s: %s", EXPECTED, r->line, r->f[0], out);
		json_object *o = last_json(out);
		cr_expect_not_null(o, "%s:%u: show %s: no JSON: %s", EXPECTED, r->line, r->f[0], out);
		if (o) {
			const char *nm = json_object_get_string(json_object_object_get(o, "name"));
			const char *db = json_object_get_string(json_object_object_get(o, "disk_bus"));
			cr_expect_str_eq(nm ? nm : "(null)", r->f[3], "%s:%u (%s): name", EXPECTED, r->line,
					 r->f[1]);
			cr_expect_str_eq(db ? db : "(null)", r->f[4], "%s:%u (%s): disk bus", EXPECTED,
					 r->line, r->f[1]);
		}
		json_object_put(o);
	}
	free_outs(outs);
	free(rcs);
	/* list --long: the same names and boot disk buses, one line per
	 * guest, unnamed ones as PVE names them */
	char *out = NULL;
	cr_assert_eq(test_pvagent(bin(), conf, &out, "--json", "list", "--long", NULL), 0, "%s", out);
	json_object *o = last_json(out), *gs = NULL;
	cr_assert(json_object_object_get_ex(o, "guests", &gs), "%s", out);
	cr_expect_eq(json_object_array_length(gs), nrows);
	for (size_t i = 0; i < json_object_array_length(gs); i++) {
		json_object *g = json_object_array_get_idx(gs, i);
		const char *id = json_object_get_string(json_object_object_get(g, "vmid"));
		for (size_t j = 0; j < nrows; j++) {
			if (strcmp(rows[j].f[F_VMID], id) != 0)
				continue;
			cr_expect_str_eq(json_object_get_string(json_object_object_get(g, "name")),
					 rows[j].f[F_NAME], "list --long: VMID %s", id);
			const char *db = json_object_get_string(json_object_object_get(g, "disk_bus"));
			cr_expect_str_eq(db ? db : "(null)", rows[j].f[F_DISK],
					 "list --long: VMID %s's disk bus", id);
		}
	}
	json_object_put(o);
	free(out);
	expect_only_reads();
}

Test(realcfg, virtio_dry_run)
{
	char **outs = calloc(nrows + 1, sizeof *outs);
	int *rcs = calloc(nrows + 1, sizeof *rcs);
	cr_assert(outs && rcs);
	static const char *const args[] = {"virtio", "%v", "--dry-run", NULL};
	run_rows(args, NULL, outs, rcs);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		const char *out = outs[i];
		expect_answer(r, "virtio --dry-run", r->f[5], rcs[i], out);
		/* decided from the config: no address was asked for, but where
		 * there is something to convert (exit 4: the PVE side shown,
		 * the guest side not reached, the address asked) */
		if (!strstr(r->f[5], "--address") && r->f[5][0] != '4')
			cr_expect_null(strstr(out, "--address"), "%s:%u: %s", EXPECTED, r->line, out);
	}
	free_outs(outs);
	free(rcs);
	json_object *log = simproc_requests(&sp);
	for (size_t i = 0; i < nrows; i++) {
		if (strstr(rows[i].f[5], "--address") || rows[i].f[5][0] == '4')
			continue; /* something to convert: its address is needed */
		char *suffix = strprintf("*/%s/agent/network-get-interfaces", rows[i].f[0]);
		cr_expect_eq(simproc_count_requests(log, "GET", suffix, -1), 0,
			     "%s:%u: virtio asked VMID %s's guest agent for an address", EXPECTED,
			     rows[i].line, rows[i].f[0]);
		free(suffix);
	}
	json_object_put(log);
	expect_only_reads();
}

/* Does the row's config file hold a snapshot ("parent:")? */
static bool has_snapshot(const struct row *r)
{
	char *path = strprintf("tests/realcfg/%s", r->f[F_FILE]), *text = NULL;
	cr_assert_not_null(path);
	cr_assert_eq(read_file(path, &text, NULL), 0, "%s", path);
	bool snap = strncmp(text, "parent:", 7) == 0 || strstr(text, "\nparent:");
	free(text);
	free(path);
	return snap;
}

/* migrate VMID pve2 --dry-run of each row (only those pvagent reads other
 * facts for before PVE 9 when before9: containers, which have no
 * precondition, and guests with snapshots, which have no volume chains). */
static void migrate_rows(bool before9)
{
	char **outs = calloc(nrows + 1, sizeof *outs);
	int *rcs = calloc(nrows + 1, sizeof *rcs);
	cr_assert(outs && rcs);
	static const char *const args[] = {"migrate", "%v", "pve2", "--dry-run", NULL};
	bool *sel = calloc(nrows + 1, sizeof *sel);
	cr_assert_not_null(sel);
	for (size_t i = 0; i < nrows; i++)
		sel[i] = !before9 || strncmp(rows[i].f[F_FILE], "pc-", 3) == 0 ||
			 has_snapshot(&rows[i]);
	run_rows(args, sel, outs, rcs);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		if (!sel[i])
			continue;
		const char *out = outs[i];
		int rc = rcs[i];
		const char *pl = r->f[F_PLANNER];
		const char *today = strncmp(pl, "item4:", 6) == 0 ? pl + 6 : NULL;
		if (!today) {
			expect_answer(r, "migrate --dry-run", r->f[F_MIGRATE], rc, out);
		} else {
			/* the planner does not agree with PVE yet */
			const char *pve = strchr(r->f[F_MIGRATE], '|');
			cr_expect(!(rc == atoi(r->f[F_MIGRATE]) && pve && strstr(out, pve + 1)),
				  "%s:%u (%s): the planner now answers as PVE does: set its planner "
				  "column to ok", EXPECTED, r->line, r->f[F_FILE]);
			expect_answer(r, "migrate --dry-run (planner today)", today, rc, out);
		}
	}
	free_outs(outs);
	free(rcs);
	free(sel);
	expect_only_reads();
}

Test(realcfg, migrate_dry_run)
{
	migrate_rows(false);
}

/* The drain column says what migrate's does, one planner for both: a
 * move where migrate would migrate, "fits nowhere" with migrate's text
 * where it refuses, and templates stay. */
Test(realcfg, drain_column_is_migrates)
{
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		const char *d = r->f[F_DRAIN], *m = r->f[F_MIGRATE];
		const char *dt = strchr(d, '|'), *mt = strchr(m, '|');
		if (strncmp(d, "move|", 5) == 0)
			cr_expect_eq(atoi(m), 0, "%s:%u: drain moves what migrate refuses", EXPECTED,
				     r->line);
		else if (strncmp(d, "fits nowhere|", 13) == 0)
			cr_expect(atoi(m) != 0 && mt && strcmp(dt + 1, mt + 1) == 0,
				  "%s:%u: drain's refusal is not migrate's", EXPECTED, r->line);
		else
			cr_expect(strcmp(d, "template") == 0 && strstr(m, "is a template"),
				  "%s:%u: drain column '%s'", EXPECTED, r->line, d);
	}
}

/* pvagent --json drain pve1 [arg]: the result line; *rc the exit status. */
static json_object *drain_run(const char *arg, int *rc)
{
	char *out = NULL;
	*rc = arg ? test_pvagent(bin(), conf, &out, "--json", "drain", "pve1", arg, NULL)
		  : test_pvagent(bin(), conf, &out, "--json", "drain", "pve1", NULL);
	json_object *o = last_json(out);
	cr_assert(o && json_object_object_get_ex(o, "moves", NULL), "drain pve1 %s: %s",
		  arg ? arg : "", out);
	free(out);
	return o;
}

/* The drain result's line of the row's guest, or NULL. */
static json_object *move_of(json_object *res, const struct row *r)
{
	json_object *mv = json_object_object_get(res, "moves");
	for (size_t i = 0; i < json_object_array_length(mv); i++) {
		json_object *m = json_object_array_get_idx(mv, i);
		if (json_object_get_int(json_object_object_get(m, "vmid")) == atoi(r->f[F_VMID]))
			return m;
	}
	return NULL;
}

static const char *mstr(json_object *m, const char *key)
{
	const char *v = json_object_get_string(json_object_object_get(m, key));
	return v ? v : "(none)";
}

/* A drain (or its dry run) that fails on what fits nowhere: exit 1, the
 * count said. */
static void expect_refused(const char *what, int rc, json_object *res)
{
	size_t nowhere = 0;
	for (size_t i = 0; i < nrows; i++)
		nowhere += strncmp(rows[i].f[F_DRAIN], "fits nowhere|", 13) == 0;
	char *want = strprintf("%zu guests of pve1 fit nowhere, nothing %s", nowhere,
			       strstr(what, "--dry-run") ? "would move" : "moved");
	const char *msg = json_object_get_string(
		json_object_object_get(json_object_object_get(res, "error"), "message"));
	cr_expect_eq(rc, 1, "%s: exit %d", what, rc);
	cr_expect(msg && want && strstr(msg, want), "%s: should say '%s': %s", what, want,
		  msg ? msg : "(no error)");
	free(want);
}

/* drain pve1 --dry-run: every row's guest planned as the drain column
 * says; the drain refuses (nothing moved) because some fit nowhere. On
 * 8.4 also the migrate dry runs whose facts differ there. */
ON_EACH_PVE_VERSION(realcfg_ver, drain_dry_run)
{
	start_on(pv->ver);
	int rc = 0;
	json_object *res = drain_run("--dry-run", &rc);
	expect_refused("drain --dry-run", rc, res);
	cr_expect_eq(json_object_array_length(json_object_object_get(res, "moves")), nrows);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		json_object *m = move_of(res, r);
		const char *bar = strchr(r->f[F_DRAIN], '|');
		size_t cl = bar ? (size_t)(bar - r->f[F_DRAIN]) : strlen(r->f[F_DRAIN]);
		cr_expect_not_null(m, "%s:%u (%s): not in the drain's plan", EXPECTED, r->line,
				   r->f[F_FILE]);
		if (!m)
			continue;
		cr_expect(strlen(mstr(m, "status")) == cl &&
			  strncmp(mstr(m, "status"), r->f[F_DRAIN], cl) == 0,
			  "PVE %s, %s:%u (%s, VMID %s): drain plans '%s', want '%s' (%s)", pv->ver,
			  EXPECTED, r->line, r->f[F_FILE], r->f[F_VMID], mstr(m, "status"),
			  r->f[F_DRAIN], mstr(m, "why"));
		if (strncmp(r->f[F_DRAIN], "move|", 5) == 0) {
			cr_expect_str_eq(mstr(m, "method"), bar + 1, "PVE %s, %s:%u (%s): method",
					 pv->ver, EXPECTED, r->line, r->f[F_FILE]);
			cr_expect_str_eq(mstr(m, "target"), "pve2", "PVE %s, %s:%u (%s): target",
					 pv->ver, EXPECTED, r->line, r->f[F_FILE]);
		} else if (bar) {
			cr_expect(strstr(mstr(m, "why"), bar + 1),
				  "PVE %s, %s:%u (%s, VMID %s): why should say '%s': %s", pv->ver,
				  EXPECTED, r->line, r->f[F_FILE], r->f[F_VMID], bar + 1, mstr(m, "why"));
		}
	}
	json_object_put(res);
	expect_only_reads();
	if (pv->major < 9)
		migrate_rows(true);
}

/* A real drain: without --partial it moves nothing (some fit nowhere);
 * with it, every "move" row's guest ends on pve2 tagged with its home,
 * migrated once, and every other stays on pve1, never sent to migrate. */
ON_EACH_PVE_VERSION(realcfg_ver, real_drain)
{
	start_on(pv->ver);
	int rc = 0;
	json_object *res = drain_run(NULL, &rc);
	expect_refused("drain", rc, res);
	json_object_put(res);
	expect_only_reads();
	res = drain_run("--partial", &rc);
	cr_expect_eq(rc, 0, "PVE %s: drain --partial: %s", pv->ver,
		     json_object_to_json_string(json_object_object_get(res, "error")));
	/* the simulator's state and request log, read once for every row */
	json_object *st = simproc_state(&sp), *log = simproc_requests(&sp), *gs = NULL;
	cr_assert(st && log && json_object_object_get_ex(json_object_object_get(st, "cluster"),
							 "guests", &gs));
	size_t moved = 0;
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		json_object *m = move_of(res, r), *g = NULL;
		int vmid = atoi(r->f[F_VMID]);
		for (size_t k = 0; k < json_object_array_length(gs); k++)
			if (json_object_get_int(json_object_object_get(
				    json_object_array_get_idx(gs, k), "vmid")) == vmid)
				g = json_object_array_get_idx(gs, k);
		const char *node = mstr(g, "node");
		const char *tags = mstr(json_object_object_get(g, "config"), "tags");
		char *qp = strprintf("*/qemu/%d/migrate", vmid), *lp = strprintf("*/lxc/%d/migrate", vmid);
		cr_assert(qp && lp);
		int sent = simproc_count_requests(log, "POST", qp, 200) +
			   simproc_count_requests(log, "POST", lp, 200);
		free(qp);
		free(lp);
		if (strncmp(r->f[F_DRAIN], "move|", 5) == 0) {
			bool ok = strcmp(node, "pve2") == 0 && strstr(tags, "pvagent-home-pve1") && sent == 1;
			cr_expect(ok && strcmp(mstr(m, "status"), "moved") == 0,
				  "PVE %s, %s:%u (%s, VMID %d): on %s, tags '%s', %d migrations sent, "
				  "drain says %s (%s)", pv->ver, EXPECTED, r->line, r->f[F_FILE], vmid, node,
				  tags, sent, mstr(m, "status"), mstr(m, "why"));
			moved += ok;
		} else {
			cr_expect(strcmp(node, "pve1") == 0 && sent == 0,
				  "PVE %s, %s:%u (%s, VMID %d): on %s, %d migrations sent", pv->ver,
				  EXPECTED, r->line, r->f[F_FILE], vmid, node, sent);
		}
	}
	json_object_put(st);
	json_object_put(log);
	cr_log_info("PVE %s: a real drain moved %zu of %zu corpus guests", pv->ver, moved, nrows);
	json_object_put(res);
}

/* Names repeat in PVE ("simple" 20 times here, "deb1223" twice): a name
 * that is not unique is refused with its VMIDs, the VMID always works,
 * and an unnamed guest is reached by VMID or by PVE's "VM N". */
Test(realcfg, guests_by_vmid)
{
	char *out = NULL;
	int rc = test_pvagent(bin(), conf, &out, "migrate", "deb1223", "pve2", "--dry-run", NULL);
	cr_expect_neq(rc, 0, "%s", out);
	cr_expect(strstr(out, "VMIDs 167 (pve1), 170 (pve1)"), "%s", out);
	free(out);
	rc = test_pvagent(bin(), conf, &out, "show", "deb1223", NULL);
	cr_expect_neq(rc, 0, "%s", out);
	cr_expect(strstr(out, "167") && strstr(out, "170"), "%s", out);
	free(out);
	rc = test_pvagent(bin(), conf, &out, "migrate", "VM 106", "pve2", "--dry-run", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "would migrate to pve2"), "%s", out);
	free(out);
	rc = test_pvagent(bin(), conf, &out, "virtio", "175", "--dry-run", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "win is a Windows guest (ostype win7)"), "%s", out);
	free(out);
	expect_only_reads();
}

/* Where (needle) is in out, or the end when absent. */
static size_t at(const char *out, const char *needle)
{
	const char *p = strstr(out, needle);
	cr_expect_not_null(p, "'%s' missing: %s", needle, out);
	return p ? (size_t)(p - out) : strlen(out);
}

/* virtio says what matters first: the PVE side of the plan before any
 * guest connection, dry run included, and the deciding reason of a
 * refusal. */
Test(realcfg, virtio_says_what_matters_first)
{
	/* an LSI guest (running, no guest agent): the PVE side, then why the
	 * guest side could not be checked, exit 4 */
	char *out = NULL;
	int rc = test_pvagent(bin(), conf, &out, "virtio", "139", "--dry-run", NULL);
	cr_expect_eq(rc, 4, "%s", out);
	size_t plan = at(out, "would change scsihw: lsi -> virtio-scsi-single");
	size_t why = at(out, "the guest side (its OS, drivers and files) could not be checked");
	cr_expect_lt(plan, why, "the PVE side comes first: %s", out);
	cr_expect(strstr(out, "give the address with --address A"), "%s", out);
	free(out);
	/* its address given, nothing answers there: the same plan, then the
	 * connection's failure (no sshd on a fresh loopback address) */
	rc = test_pvagent(bin(), conf, &out, "virtio", "139", "--dry-run", "--address",
			  "127.0.83.211", NULL);
	cr_expect_eq(rc, 4, "%s", out);
	plan = at(out, "would change scsihw: lsi -> virtio-scsi-single");
	why = at(out, "could not be checked: connecting to the guest");
	cr_expect_lt(plan, why, "the PVE side comes first: %s", out);
	free(out);
	/* several buses and an empty IDE CD-ROM (bootorder.conf): scsi4 on
	 * the default lsi converts, the CD-ROM and virtio0/1 stay */
	rc = test_pvagent(bin(), conf, &out, "--json", "virtio", "108", "--dry-run", NULL);
	cr_expect_eq(rc, 4, "%s", out);
	cr_expect_null(strstr(out, "more than one bus"), "%s", out);
	json_object *o = last_json(out);
	cr_assert_not_null(o, "%s", out);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(o, "status")),
			 "dry-run-incomplete", "%s", out);
	cr_expect_eq(json_object_get_int(json_object_object_get(o, "exit")), 4, "%s", out);
	json_object_put(o);
	free(out);
	rc = test_pvagent(bin(), conf, &out, "virtio", "108", "--dry-run", NULL);
	cr_expect(strstr(out, "would change scsihw: (default lsi) -> virtio-scsi-single"), "%s", out);
	cr_expect(strstr(out, "1 SCSI disk keeps its key"), "%s", out);
	cr_expect_null(strstr(out, "would change ide2"), "%s", out);
	cr_expect_null(strstr(out, "would change virtio"), "%s", out);
	free(out);
	/* a template: refused as one, not for its buses */
	rc = test_pvagent(bin(), conf, &out, "virtio", "156", "--dry-run", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "simple is not converted: a template (template: 1)"), "%s", out);
	cr_expect_null(strstr(out, "more than one bus"), "%s", out);
	free(out);
	/* Windows with nothing to convert: nothing to do */
	rc = test_pvagent(bin(), conf, &out, "virtio", "110", "--dry-run", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "VM 110: nothing to do"), "%s", out);
	cr_expect_null(strstr(out, "Windows"), "%s", out);
	free(out);
	expect_only_reads();
}

/* The real migration (no dry run) of what PVE refuses: the simulator's
 * task fails as PVE's would. */
static json_object *migrate_task_log(int vmid, const char *type, const char *extra)
{
	char *path = strprintf("/nodes/pve1/%s/%d/migrate", type, vmid);
	char *body = strprintf("target=pve2%s", extra);
	long status = 0;
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&sp, "POST", path, body, &status, &ans), 0);
	cr_assert_eq(status, 200, "POST %s: %s", path, json_object_to_json_string(ans));
	const char *upid = json_object_get_string(json_object_object_get(ans, "data"));
	cr_assert_not_null(upid);
	cr_assert_eq(simproc_advance(&sp, 120), 0);
	char *lp = strprintf("/nodes/pve1/tasks/%s/log?limit=0", upid);
	json_object *log = NULL;
	cr_assert_eq(sim_api(&sp, "GET", lp, NULL, &status, &log), 0);
	free(lp);
	free(path);
	free(body);
	json_object_put(ans);
	return log;
}

static bool log_has(json_object *log, const char *text)
{
	json_object *d = json_object_object_get(log, "data");
	for (size_t i = 0; i < json_object_array_length(d); i++) {
		const char *t = json_object_get_string(
			json_object_object_get(json_object_array_get_idx(d, i), "t"));
		if (t && strstr(t, text))
			return true;
	}
	return false;
}

Test(realcfg, simulator_refuses_as_pve)
{
	/* pve-container: a snapshot on dir storage (103 runs: restart mode) */
	json_object *log = migrate_task_log(103, "lxc", "&restart=1");
	cr_expect(log_has(log, "can't migrate local volume 'local:snapshotable-disk-1': "
			       "non-migratable snapshot exists"), "%s", json_object_to_json_string(log));
	cr_expect(log_has(log, "start container on source node"));
	json_object_put(log);
	/* QemuMigrate: a disk by absolute path */
	log = migrate_task_log(138, "qemu", "");
	cr_expect(log_has(log, "can't migrate local disk '/dev/sdg': local file/device"), "%s",
		  json_object_to_json_string(log));
	json_object_put(log);
	/* and the host's CD drive */
	log = migrate_task_log(150, "qemu", "&online=1&with-local-disks=1");
	cr_expect(log_has(log, "can't migrate local cdrom drive"), "%s", json_object_to_json_string(log));
	json_object_put(log);
	json_object *st = simproc_state(&sp);
	cr_expect_not_null(st);
	json_object *gs = json_object_object_get(json_object_object_get(st, "cluster"), "guests");
	for (size_t i = 0; i < json_object_array_length(gs); i++) {
		json_object *g = json_object_array_get_idx(gs, i);
		int id = json_object_get_int(json_object_object_get(g, "vmid"));
		if (id == 103 || id == 138 || id == 150)
			cr_expect_str_eq(json_object_get_string(json_object_object_get(g, "node")), "pve1",
					 "VMID %d moved", id);
	}
	json_object_put(st);
}

/* Container snapshots as pve-container serves them: listed with the
 * file's snapshot sections, deleted (the config's parent goes), and
 * refused on storage that has none (raw on dir). */
Test(realcfg, container_snapshots)
{
	long status = 0;
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&sp, "GET", "/nodes/pve1/lxc/104/snapshot", NULL, &status, &ans), 0);
	cr_assert_eq(status, 200, "%s", json_object_to_json_string(ans));
	json_object *d = json_object_object_get(ans, "data");
	cr_expect_eq(json_object_array_length(d), 2, "test and current: %s",
		     json_object_to_json_string(ans));
	cr_expect_str_eq(json_object_get_string(json_object_object_get(
				 json_object_array_get_idx(d, 0), "name")), "test");
	json_object_put(ans);
	cr_assert_eq(sim_api(&sp, "DELETE", "/nodes/pve1/lxc/104/snapshot/test", NULL, &status, &ans), 0);
	cr_assert_eq(status, 200, "%s", json_object_to_json_string(ans));
	json_object_put(ans);
	cr_assert_eq(simproc_advance(&sp, 10), 0);
	char *parent = simproc_config_key(&sp, 104, "parent");
	cr_expect_null(parent, "the config still names the deleted snapshot: %s", parent);
	free(parent);
	cr_assert_eq(sim_api(&sp, "POST", "/nodes/pve1/lxc/100/snapshot", "snapname=before", &status,
			     &ans), 0);
	cr_assert_eq(status, 200, "%s", json_object_to_json_string(ans));
	char *path = strprintf("/nodes/pve1/tasks/%s/status",
			       json_object_get_string(json_object_object_get(ans, "data")));
	json_object_put(ans);
	cr_assert_eq(simproc_advance(&sp, 10), 0);
	cr_assert_eq(sim_api(&sp, "GET", path, NULL, &status, &ans), 0);
	const char *es = json_object_get_string(json_object_object_get(json_object_object_get(ans, "data"),
								       "exitstatus"));
	cr_expect(es && strstr(es, "snapshot feature is not available"), "%s",
		  json_object_to_json_string(ans));
	json_object_put(ans);
	free(path);
}

/* A disk by absolute path is root@pam's alone (its API tokens included:
 * pve-storage check_volume_access); the guests holding one load and run. */
Test(realcfg, passthrough_is_root_only)
{
	long status = 0;
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&sp, "PUT", "/nodes/pve1/qemu/157/config", "scsi2=%2Fdev%2Fsdb", &status,
			     &ans), 0);
	cr_expect_eq(status, 500, "%s", json_object_to_json_string(ans));
	cr_expect(strstr(json_object_to_json_string(ans), "Only root can pass arbitrary filesystem paths"),
		  "%s", json_object_to_json_string(ans));
	json_object_put(ans);
	char *v = simproc_config_key(&sp, 157, "scsi2");
	cr_expect_null(v, "set anyway: %s", v);
	free(v);
	v = simproc_config_key(&sp, 150, "scsi0");
	cr_expect_str_eq(v ? v : "", "/dev/sda");
	free(v);
}
