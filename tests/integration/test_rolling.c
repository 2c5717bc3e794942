/* test_rolling.c - `pvagent rolling` (agent/wf_rolling.c, agent/rolling_plan.c):
 * the pure rules (quorum with a vote to spare, the order, Ceph's health,
 * versions); the plan against the simulator's drain, migrate and rolling
 * scenarios (it names what blocks a run and the guests that need a
 * decision, orders the node pvagent runs on last, and writes nothing); a
 * run with --wait whose node never reboots stops in its update step,
 * needs attention and names the guests away from home; a --wait run
 * whose admin (a thread) upgrades and reboots each node once drained;
 * rolling.json's
 * 8.4 cluster rolled to 9.1 with --run over each node's test sshd, in
 * this process and through pvagentd SIGKILLed at every step boundary. */
#include <criterion/criterion.h>

#include "job.h"
#include "json.h"
#include "migfx.h"
#include "nodesshd.h"
#include "clirun.h"
#include "procstat.h"
#include "rolling_plan.h"
#include "rollfx.h"
#include "store.h"
#include "util.h"
#include "wf_rolling.h"
#include "window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <curl/curl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define DRAIN "tests/pvesim/scenarios/drain.json"
#define MIGRATE "tests/pvesim/scenarios/migrate.json"
/* drain.json with its huge guest (302) small enough to fit elsewhere */
#define FITS "{\"guests\":{\"302\":{\"config\":{\"memory\":\"1024\"}}}}"

/* ---- the pure rules ---------------------------------------------------------------- */

Test(rolling_plan, quorum_needs_a_vote_to_spare)
{
	char *w = rolling_quorum_why(3, 3, true);
	cr_expect_null(w, "%s", w);
	free(w);
	w = rolling_quorum_why(2, 2, true);
	cr_assert_not_null(w);
	cr_expect(strstr(w, "QDevice"), "%s", w);
	free(w);
	w = rolling_quorum_why(3, 2, true);
	cr_assert_not_null(w);
	cr_expect(strstr(w, "1 of 3 nodes are offline"), "%s", w);
	free(w);
	w = rolling_quorum_why(5, 5, false);
	cr_assert_not_null(w);
	cr_expect(strstr(w, "not quorate"), "%s", w);
	free(w);
	w = rolling_quorum_why(5, 5, true);
	cr_expect_null(w);
	free(w);
}

Test(rolling_plan, order_smallest_drain_first_self_last)
{
	const struct rp_node n[] = {
		{"pve1", true, 1},  {"pve2", false, 8}, {"pve3", false, 2}, {"pve4", false, 2},
	};
	size_t o[4];
	rolling_order(n, 4, o);
	cr_expect_str_eq(n[o[0]].name, "pve3");
	cr_expect_str_eq(n[o[1]].name, "pve4");
	cr_expect_str_eq(n[o[2]].name, "pve2");
	cr_expect_str_eq(n[o[3]].name, "pve1");
}

static char *ceph_why(const char *text)
{
	json_object *o = json_tokener_parse(text);
	cr_assert_not_null(o, "%s", text);
	char *w = rolling_ceph_why(o);
	json_object_put(o);
	return w;
}

Test(rolling_plan, ceph_health)
{
	char *w = ceph_why("{\"health\":{\"status\":\"HEALTH_OK\"}}");
	cr_expect_null(w);
	free(w);
	w = ceph_why("{\"health\":{\"status\":\"HEALTH_WARN\",\"checks\":{\"OSDMAP_FLAGS\":"
		     "{\"summary\":{\"message\":\"noout flag(s) set\"}}}}}");
	cr_expect_null(w, "noout alone is this run's own: %s", w);
	free(w);
	w = ceph_why("{\"health\":{\"status\":\"HEALTH_WARN\",\"checks\":{\"PG_DEGRADED\":"
		     "{\"summary\":{\"message\":\"Degraded data redundancy\"}}}}}");
	cr_assert_not_null(w);
	cr_expect(strstr(w, "PG_DEGRADED: Degraded data redundancy"), "%s", w);
	free(w);
	w = ceph_why("{\"health\":{\"status\":\"HEALTH_ERR\"}}");
	cr_assert_not_null(w);
	free(w);
}

Test(rolling_plan, versions)
{
	cr_expect(rolling_version_is("9.1.2", "9"));
	cr_expect(rolling_version_is("9.1.2", "9.1"));
	cr_expect(rolling_version_is("9.1.2", "9.1.2"));
	cr_expect_not(rolling_version_is("9.10.1", "9.1"));
	cr_expect_not(rolling_version_is("8.4.1", "9"));
	cr_expect(rolling_version_is("8.4.1", NULL));
	cr_expect(rolling_version_valid("9.1"));
	cr_expect_not(rolling_version_valid("9."));
	cr_expect_not(rolling_version_valid("9.1.2.3"));
	cr_expect_not(rolling_version_valid("v9"));
	cr_expect_not(rolling_version_valid(""));
}

/* ---- against the simulator ----------------------------------------------------------- */

static struct job *run_rolling(struct migfx *f, json_object *params, enum job_outcome *out)
{
	struct job *j = NULL;
	struct pve_error e = {0};
	cr_assert_eq(job_new(&f->env, &wf_rolling, "cluster", params, &j, &e), 0, "job_new: %s",
		     e.message ? e.message : "?");
	json_object_put(params);
	wf_rolling_attach(j, &f->opts);
	*out = job_run(j, f->c);
	return j;
}

static json_object *node_of(struct job *j, const char *name)
{
	json_object *nodes = NULL;
	cr_assert(json_object_object_get_ex(job_vars(j), "nodes", &nodes));
	for (size_t i = 0; i < json_object_array_length(nodes); i++) {
		json_object *n = json_object_array_get_idx(nodes, i);
		if (strcmp(json_str(n, "name"), name) == 0)
			return n;
	}
	cr_assert_fail("%s is not in the plan", name);
	return NULL;
}

static json_object *check_of(struct job *j, const char *name)
{
	json_object *checks = NULL;
	cr_assert(json_object_object_get_ex(job_vars(j), "checks", &checks));
	for (size_t i = 0; i < json_object_array_length(checks); i++) {
		json_object *c = json_object_array_get_idx(checks, i);
		if (strcmp(json_str(c, "check"), name) == 0)
			return c;
	}
	cr_assert_fail("no check %s", name);
	return NULL;
}

/* The todo of node n for guest name, or NULL. */
static const char *todo_of(json_object *n, const char *name)
{
	json_object *todo = NULL;
	json_object_object_get_ex(n, "todo", &todo);
	for (size_t i = 0; todo && i < json_object_array_length(todo); i++) {
		json_object *t = json_object_array_get_idx(todo, i);
		if (strcmp(json_str(t, "guest"), name) == 0)
			return json_str(t, "what");
	}
	return NULL;
}

static size_t writes(struct migfx *f)
{
	json_object *log = simproc_requests(&f->sp);
	size_t n = (size_t)simproc_count_requests(log, "POST", "*", -1) +
		   (size_t)simproc_count_requests(log, "PUT", "*", -1) +
		   (size_t)simproc_count_requests(log, "DELETE", "*", -1);
	json_object_put(log);
	return n;
}

static json_object *plan_params(const char *self)
{
	struct rolling_request q = {.mode = "plan", .self = self, .max_workers = 2};
	return wf_rolling_params(&q);
}

/* A plan that must end done. */
static struct job *plan_done(struct migfx *f, const char *self)
{
	enum job_outcome o;
	struct job *j = run_rolling(f, plan_params(self), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	return j;
}

/* drain.json: huge fits on no other node; pinned stays; the containers
 * move by restart when they run. The plan refuses, names each, and writes
 * nothing to PVE. */
Test(rolling, plan_names_what_blocks_and_changes_nothing, .timeout = 600)
{
	struct migfx f;
	cr_assert_eq(migfx_start(&f, DRAIN, NULL, true), 0);
	enum job_outcome o;
	struct job *j = run_rolling(&f, plan_params(NULL), &o);
	cr_expect_eq(o, JOB_OUT_FAILED);
	const char *msg = job_error(j)->message;
	cr_assert_not_null(msg);
	cr_expect(strstr(msg, "capacity: 1 guest of pve1 fits on no other node"), "%s", msg);
	cr_expect(json_flag(check_of(j, "quorum"), "ok"));
	cr_expect_not(json_flag(check_of(j, "capacity"), "ok"));
	json_object *p1 = node_of(j, "pve1");
	cr_expect_str_eq(json_str(p1, "version"), "9.1.1");
	const char *huge = todo_of(p1, "huge"), *pinned = todo_of(p1, "pinned");
	cr_assert_not_null(huge);
	cr_expect(strstr(huge, "cannot leave pve1"), "%s", huge);
	cr_assert_not_null(pinned);
	cr_expect(strstr(pinned, "pvagent-pin"), "%s", pinned);
	cr_expect_null(todo_of(p1, "web1"), "web1 moves live");
	cr_expect_eq(writes(&f), 0, "a plan changed something");
	job_free(j);
	cr_assert_eq(migfx_stop(&f), 0);
}

/* With every guest placeable: the plan is done, every check ok, the node
 * pvagent runs on last, the empty nodes first, each running VM planned as
 * a live move. */
Test(rolling, plan_orders_the_nodes, .timeout = 600)
{
	struct migfx f;
	cr_assert_eq(migfx_start_with(&f, DRAIN, FITS, true), 0);
	struct job *j = plan_done(&f, "pve2");
	json_object *order = NULL;
	cr_assert(json_object_object_get_ex(job_vars(j), "order", &order));
	cr_assert_eq(json_object_array_length(order), 3);
	cr_expect_str_eq(json_object_get_string(json_object_array_get_idx(order, 0)), "pve3");
	cr_expect_str_eq(json_object_get_string(json_object_array_get_idx(order, 1)), "pve1");
	cr_expect_str_eq(json_object_get_string(json_object_array_get_idx(order, 2)), "pve2");
	cr_expect(json_flag(node_of(j, "pve2"), "self"));
	json_object *moves = NULL;
	cr_assert(json_object_object_get_ex(node_of(j, "pve1"), "moves", &moves));
	size_t live = 0;
	for (size_t i = 0; i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i);
		live += json_str(m, "method") && strcmp(json_str(m, "method"), "online") == 0;
		cr_expect_str_neq(json_str(m, "status"), "fits nowhere", "%s", json_str(m, "name"));
	}
	cr_expect_gt(live, 0);
	cr_expect_eq(writes(&f), 0, "a plan changed something");
	/* no Ceph: PVE's 500 "binary not installed" is its answer, asked once */
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "GET", "/cluster/ceph/status", -1), 1);
	json_object_put(log);
	job_free(j);
	cr_assert_eq(migfx_stop(&f), 0);
}

/* migrate.json: four nodes, one offline: no vote to spare is checked as
 * the offline node, and the plan refuses. */
Test(rolling, plan_refuses_an_offline_node, .timeout = 600)
{
	struct migfx f;
	cr_assert_eq(migfx_start(&f, MIGRATE, NULL, true), 0);
	enum job_outcome o;
	struct job *j = run_rolling(&f, plan_params(NULL), &o);
	cr_expect_eq(o, JOB_OUT_FAILED);
	cr_expect_not(json_flag(check_of(j, "quorum"), "ok"));
	cr_expect_not(json_flag(check_of(j, "online"), "ok"));
	cr_expect(strstr(job_error(j)->message, "nothing changed"), "%s", job_error(j)->message);
	cr_expect_eq(writes(&f), 0);
	job_free(j);
	cr_assert_eq(migfx_stop(&f), 0);
}

/* A run with --wait whose node never reboots (the simulator's nodes do
 * not, here): pve1 is drained, its update waits and gives up; the run
 * needs attention, says where pve1 is and which guests are away, and the
 * migrations ran once each. */
Test(rolling, a_wait_that_sees_no_reboot_stops_and_says_where, .timeout = 600)
{
	struct migfx f;
	cr_assert_eq(migfx_start_with(&f, DRAIN, FITS, true), 0);
	char dir[] = "/tmp/pvagent-test-rolling.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *db = strprintf("%s/state.db", dir), *serr = NULL;
	cr_assert_eq(store_open(db, &f.env.store, &serr), 0, "%s", serr ? serr : "");
	const char *nodes[] = {"pve1"};
	struct rolling_request q = {.nodes = nodes, .n_nodes = 1, .mode = "wait", .max_workers = 4,
				    .wait_s = 30};
	enum job_outcome o;
	struct job *j = run_rolling(&f, wf_rolling_params(&q), &o);
	cr_expect_eq(o, JOB_OUT_NEEDS_ATTENTION, "%s",
		     job_error(j)->message ? job_error(j)->message : "");
	const char *left = job_left(j);
	cr_assert_not_null(left);
	cr_expect(strstr(left, "pve1 stopped in its update step"), "%s", left);
	cr_expect(strstr(left, "guests away from home: "), "%s", left);
	cr_expect(strstr(left, "web1 (303) on pve"), "%s", left);
	cr_expect(strstr(job_error(j)->message, "no reboot seen"), "%s", job_error(j)->message);
	json_object *p1 = node_of(j, "pve1"), *phases = NULL;
	cr_expect_str_eq(json_str(p1, "phase"), "update");
	cr_assert(json_object_object_get_ex(p1, "phases", &phases));
	cr_expect(json_object_object_get_ex(json_object_object_get(phases, "drain"), "end", NULL));
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "/nodes/pve1/qemu/303/migrate", -1), 1);
	json_object_put(log);
	job_free(j);
	store_close(f.env.store);
	f.env.store = NULL;
	char *cmd = strprintf("rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
	free(cmd);
	free(db);
	cr_assert_eq(migfx_stop(&f), 0);
}

/* ---- issue 37's cluster rolled from 8.4 to 9.1 over SSH ------------------------------ *
 *
 * rolling.json with a test sshd per node (tests/support/rollfx.h). */

#define ROLLING ROLLFX_SCENARIO

static void rworld_start(struct rollfx *w, bool daemon)
{
	int rc = rollfx_start(w, daemon ? "100" : NULL, !daemon);
	if (rc == 1)
		cr_skip_test("needs root (the nodes' test sshd chroots)");
	cr_assert_eq(rc, 0, "rolling.json with its nodes' sshd did not start");
}

static void rworld_stop(struct rollfx *w)
{
	cr_assert_eq(rollfx_stop(w), 0);
}

static json_object *run_params(struct rollfx *w)
{
	struct rolling_request q = {.mode = "run", .version = "9.1", .max_workers = 4,
				    .node_ssh = w->node_ssh, .wait_s = 1800};
	return wf_rolling_params(&q);
}

/* The guest's node and status in the simulator now. */
static void guest_now(json_object *state, long long vmid, const char **node, const char **status)
{
	json_object *cl = NULL, *guests = NULL;
	json_object_object_get_ex(state, "cluster", &cl);
	json_object_object_get_ex(cl, "guests", &guests);
	*node = *status = NULL;
	for (size_t i = 0; guests && i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		long long id = 0;
		if (json_int(g, "vmid", &id) && id == vmid) {
			*node = json_str(g, "node");
			*status = json_str(g, "status");
		}
	}
}

static bool ha_guest(struct rollfx *w, long long vmid)
{
	json_object *ha = NULL;
	json_object_object_get_ex(w->scen, "ha", &ha);
	for (size_t i = 0; ha && i < json_object_array_length(ha); i++) {
		const char *sid = json_str(json_object_array_get_idx(ha, i), "sid");
		if (sid && atoll(sid + 3) == vmid)
			return true;
	}
	return false;
}

/* The simulator's own migrations (pvagent's and the HA CRM's, from its
 * tasks): each one ended OK (none refused, e.g. for a machine type the
 * target's QEMU lacks), no guest moved more than twice (off its node and
 * back: an HA failback would be a third), and none of an HA guest onto a
 * node between its `ha-manager crm-command node-maintenance enable` and
 * `disable` (task start times are whole seconds). */
static void assert_no_failback(struct rollfx *w, const char *what, json_object *cmds)
{
	json_object *migs = NULL;
	cr_assert_eq(rollfx_migrations(w, &migs), 0);
	cr_expect_gt(json_object_array_length(migs), 0, "%s: no migration task", what);
	for (size_t i = 0; i < json_object_array_length(migs); i++) {
		json_object *m = json_object_array_get_idx(migs, i);
		long long vmid = json_int0(m, "vmid");
		const char *to = json_str(m, "to");
		double start = json_object_get_double(json_object_object_get(m, "start"));
		cr_expect(json_flag(m, "ok"), "%s: migration %s did not end OK", what, json_str(m, "upid"));
		cr_assert_not_null(to, "%s: %s names no target", what, json_str(m, "upid"));
		size_t moves = 0;
		for (size_t k = 0; k < json_object_array_length(migs); k++)
			moves += json_int0(json_object_array_get_idx(migs, k), "vmid") == vmid;
		cr_expect_leq(moves, 2, "%s: %lld migrated %zu times", what, vmid, moves);
		if (!ha_guest(w, vmid))
			continue;
		double on = -1;
		for (size_t k = 0; cmds && k < json_object_array_length(cmds); k++) {
			json_object *c = json_object_array_get_idx(cmds, k), *argv = NULL;
			json_object_object_get_ex(c, "argv", &argv);
			if (!argv || json_object_array_length(argv) < 5 ||
			    strcmp(json_object_get_string(json_object_array_get_idx(argv, 0)), "ha-manager") ||
			    strcmp(json_object_get_string(json_object_array_get_idx(argv, 4)), to))
				continue;
			double at = json_object_get_double(json_object_object_get(c, "at"));
			const char *verb = json_object_get_string(json_object_array_get_idx(argv, 3));
			if (strcmp(verb, "enable") == 0 && on < 0) {
				on = at;
			} else if (strcmp(verb, "disable") == 0 && on >= 0) {
				cr_expect(!(start >= on && start + 1 <= at),
					  "%s: HA guest %lld moved onto %s at %.0f, in its maintenance "
					  "(%.1f to %.1f)", what, vmid, to, start, on, at);
				on = -1;
			}
		}
	}
	json_object_put(migs);
}

/* What the issue asks of the finished run: every guest home and in the
 * state it had, every node on 9.1, each running VM moved by live
 * migration only (never stopped or started), every migration done (none
 * refused for its machine type), no HA guest moved onto a node while it
 * was in HA maintenance, and no guest migrated twice in one leg. */
static void assert_rolled(struct rollfx *w, const char *what, bool ssh_reboots)
{
	json_object *state = simproc_state(&w->f.sp), *log = simproc_requests(&w->f.sp);
	json_object *guests = NULL, *cmds = NULL;
	json_object_object_get_ex(w->scen, "guests", &guests);
	for (size_t i = 0; i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		long long vmid = json_int0(g, "vmid");
		const char *node = NULL, *status = NULL;
		guest_now(state, vmid, &node, &status);
		cr_expect_str_eq(node ? node : "?", json_str(g, "node"), "%s: %lld not home", what,
				 vmid);
		const char *was = json_str(g, "status") ? json_str(g, "status") : "stopped";
		cr_expect_str_eq(status ? status : "?", was, "%s: %lld's state", what, vmid);
	}
	/* the requests: migrations live for running VMs, no power change */
	long status = 0;
	json_object *body = NULL;
	cr_assert_eq(sim_http(&w->f.sp, "GET", "/_sim/node-commands", NULL, NULL, NULL, &status,
			      &body), 0);
	cr_assert(json_object_object_get_ex(body, "data", &cmds));
	json_object_get(cmds);
	json_object_put(body);
	for (size_t i = 0; i < json_object_array_length(log); i++) {
		json_object *r = json_object_array_get_idx(log, i), *p = NULL;
		const char *path = json_str(r, "path"), *method = json_str(r, "method");
		json_object_object_get_ex(r, "params", &p);
		if (!path || strcmp(method, "POST") != 0)
			continue;
		cr_expect_null(strstr(path, "/qemu/") && strstr(path, "/status/") ? path : NULL,
			       "%s: a VM's power changed: POST %s", what, path);
		const char *m = strstr(path, "/qemu/");
		if (!m || !strstr(path, "/migrate"))
			continue;
		long long vmid = atoll(m + 6);
		const char *st = NULL, *node = NULL;
		for (size_t k = 0; k < json_object_array_length(guests); k++)
			if (json_int0(json_object_array_get_idx(guests, k), "vmid") == vmid)
				st = json_str(json_object_array_get_idx(guests, k), "status");
		if (st && strcmp(st, "running") == 0)
			cr_expect_str_eq(json_text(p, "online"), "1", "%s: %lld migrated offline", what,
					 vmid);
		/* onto a node in HA maintenance: never for an HA guest */
		const char *target = json_str(p, "target");
		double at = 0;
		json_object *t = NULL;
		if (json_object_object_get_ex(r, "time", &t))
			at = json_object_get_double(t);
		double on = -1, off = -1;
		for (size_t k = 0; cmds && k < json_object_array_length(cmds); k++) {
			json_object *c = json_object_array_get_idx(cmds, k), *argv = NULL;
			json_object_object_get_ex(c, "argv", &argv);
			if (!argv || json_object_array_length(argv) < 5 ||
			    strcmp(json_object_get_string(json_object_array_get_idx(argv, 0)),
				   "ha-manager") != 0 ||
			    !target ||
			    strcmp(json_object_get_string(json_object_array_get_idx(argv, 4)), target))
				continue;
			json_object *ca = NULL;
			json_object_object_get_ex(c, "at", &ca);
			if (strcmp(json_object_get_string(json_object_array_get_idx(argv, 3)), "enable") ==
			    0)
				on = json_object_get_double(ca);
			else if (on >= 0 && off < 0)
				off = json_object_get_double(ca);
		}
		(void)node;
		if (ha_guest(w, vmid) && on >= 0)
			cr_expect(at < on || (off >= 0 && at > off),
				  "%s: HA guest %lld moved onto %s during its maintenance", what, vmid,
				  target);
	}
	/* every node upgraded, and each rebooted once */
	json_object *cl = NULL, *nodes = NULL;
	json_object_object_get_ex(state, "cluster", &cl);
	json_object_object_get_ex(cl, "nodes", &nodes);
	for (size_t i = 0; nodes && i < json_object_array_length(nodes); i++) {
		json_object *n = json_object_array_get_idx(nodes, i);
		cr_expect(rolling_version_is(json_str(n, "version"), "9.1"), "%s: %s runs %s", what,
			  json_str(n, "name"), json_str(n, "version"));
		size_t reboots = 0;
		for (size_t k = 0; cmds && k < json_object_array_length(cmds); k++) {
			json_object *c = json_object_array_get_idx(cmds, k), *argv = NULL;
			json_object_object_get_ex(c, "argv", &argv);
			reboots += json_str(c, "node") && strcmp(json_str(c, "node"), json_str(n, "name")) == 0 &&
				   argv && strcmp(json_object_get_string(json_object_array_get_idx(argv, 0)),
						  "reboot") == 0;
		}
		cr_expect_eq(reboots, ssh_reboots ? 1 : 0, "%s: %s rebooted %zu times over SSH", what,
			     json_str(n, "name"), reboots);
	}
	assert_no_failback(w, what, cmds);
	json_object_put(cmds);
	json_object_put(log);
	json_object_put(state);
}

/* The migrations the store holds, each done; no guest moved twice in one
 * leg of one node (a migration job per guest per drain or undrain). */
static void assert_moves_once(struct rollfx *w, const char *what)
{
	sqlite3 *db = store_db(w->f.env.store);
	sqlite3_stmt *st = NULL;
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs WHERE workflow = 'migrate' "
					    "AND state != 'done'", -1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	cr_expect_eq(sqlite3_column_int(st, 0), 0, "%s: a migration did not end done", what);
	sqlite3_finalize(st);
	json_object *log = simproc_requests(&w->f.sp);
	json_object *guests = NULL;
	json_object_object_get_ex(w->scen, "guests", &guests);
	for (size_t i = 0; i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		char *path = strprintf("*/%s/%lld/migrate", json_str(g, "type") ? json_str(g, "type")
										 : "qemu",
				       (long long)json_int0(g, "vmid"));
		int n = simproc_count_requests(log, "POST", path, 200);
		/* off its node and back: 2; HA partners and the stopped ones too */
		cr_expect_leq(n, 2, "%s: %s migrated %d times", what, path, n);
		free(path);
	}
	json_object_put(log);
}

Test(rolling, an_8_4_cluster_rolled_to_9_1, .timeout = 600)
{
	struct rollfx w;
	rworld_start(&w, false);
	enum job_outcome o;
	struct job *j = run_rolling(&w.f, run_params(&w), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s; left: %s",
		     job_error(j)->message ? job_error(j)->message : "", job_left(j) ? job_left(j) : "");
	assert_rolled(&w, "run", true);
	assert_moves_once(&w, "run");
	json_object *p = node_of(j, "pve1"), *done = NULL, *phases = NULL;
	cr_assert(json_object_object_get_ex(p, "moves_done", &done));
	cr_expect_gt(json_object_array_length(done), 0);
	json_object *m = json_object_array_get_idx(done, 0);
	cr_expect(json_object_object_get_ex(m, "start", NULL) && json_object_object_get_ex(m, "end", NULL));
	cr_assert(json_object_object_get_ex(p, "phases", &phases));
	static const char *const steps[] = {"precheck", "maintenance", "drain", "update", "check",
					    "leave", "undrain"};
	for (size_t i = 0; i < 7; i++)
		cr_expect(json_object_object_get_ex(json_object_object_get(phases, steps[i]), "end", NULL),
			  "pve1's %s has no end", steps[i]);
	job_free(j);
	rworld_stop(&w);
}

/* The index in the node commands cmds of node's first command whose argv
 * starts with a0 and holds a1 (NULL: any), or -1. */
static long command_at(json_object *cmds, const char *node, const char *a0, const char *a1)
{
	for (size_t k = 0; k < json_object_array_length(cmds); k++) {
		json_object *c = json_object_array_get_idx(cmds, k), *argv = NULL;
		json_object_object_get_ex(c, "argv", &argv);
		size_t n = argv ? json_object_array_length(argv) : 0;
		if (!n || strcmp(json_str(c, "node") ? json_str(c, "node") : "", node) != 0 ||
		    strcmp(json_object_get_string(json_object_array_get_idx(argv, 0)), a0) != 0)
			continue;
		for (size_t i = 1; i < n && a1; i++)
			if (strcmp(json_object_get_string(json_object_array_get_idx(argv, i)), a1) == 0)
				return (long)k;
		if (!a1)
			return (long)k;
	}
	return -1;
}

/* --run-script, the major upgrade: on each node its checker (pve8to9
 * --full) first, then the admin's script through the node's own sh, whose
 * commands reach the node (the simulator's, through the test sshd); the
 * run ends as --run's. */
Test(rolling, run_script_after_the_checker_passes, .timeout = 600)
{
	struct rollfx w;
	rworld_start(&w, false);
	static const char script[] = "set -e\n"
				     "echo \"upgrading $1 to $2\"\n"
				     "apt-get update\n"
				     "DEBIAN_FRONTEND=noninteractive apt-get -y dist-upgrade\n";
	struct rolling_request q = {.mode = "run", .version = "9.1", .max_workers = 4,
				    .node_ssh = w.node_ssh, .wait_s = 1800, .script = script};
	enum job_outcome o;
	struct job *j = run_rolling(&w.f, wf_rolling_params(&q), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s; left: %s",
		     job_error(j)->message ? job_error(j)->message : "", job_left(j) ? job_left(j) : "");
	assert_rolled(&w, "--run-script", true);
	long status = 0;
	json_object *body = NULL, *cmds = NULL;
	cr_assert_eq(sim_http(&w.f.sp, "GET", "/_sim/node-commands", NULL, NULL, NULL, &status,
			      &body), 0);
	cr_assert(json_object_object_get_ex(body, "data", &cmds));
	static const char *const nodes[] = {"pve1", "pve2", "pve3"};
	for (size_t i = 0; i < 3; i++) {
		long check = command_at(cmds, nodes[i], "pve8to9", "--full");
		long upgrade = command_at(cmds, nodes[i], "apt-get", "dist-upgrade");
		cr_expect_geq(check, 0, "%s: no pve8to9 --full", nodes[i]);
		cr_expect_gt(upgrade, check, "%s: the script's dist-upgrade not after the checker",
			     nodes[i]);
	}
	json_object_put(body);
	job_free(j);
	rworld_stop(&w);
}

/* --window: the run waits, in simulated time, until the window opens
 * (20 minutes ahead), then rolls every node inside it: no migration starts
 * before it. */
Test(rolling, window_waits_until_it_opens, .timeout = 600)
{
	setenv("TZ", "UTC", 1);
	tzset();
	struct rollfx w;
	rworld_start(&w, false);
	time_t now = time(NULL), at = now + 20 * 60, start = 0, end = 0;
	struct tm tm;
	gmtime_r(&at, &tm);
	char sched[16];
	strftime(sched, sizeof sched, "%H:%M", &tm);
	struct conf_window cw = {.name = "upgrades", .node = "pve1", .duration = 12 * 3600};
	const char *why = NULL;
	cr_assert_eq(cal_parse(sched, &cw.cal, &why), 0, "%s", why ? why : "");
	cr_assert_eq(window_next(&cw, now, &start, &end), 0);
	cr_assert_gt(start, now + 600, "the window opens later");
	w.f.conf.windows = &cw;
	w.f.conf.n_windows = 1;
	struct rolling_request q = {.mode = "run", .version = "9.1", .max_workers = 4,
				    .node_ssh = w.node_ssh, .wait_s = 1800, .window = "upgrades"};
	enum job_outcome o;
	struct job *j = run_rolling(&w.f, wf_rolling_params(&q), &o);
	w.f.conf.windows = NULL;
	w.f.conf.n_windows = 0;
	cr_assert_eq(o, JOB_OUT_DONE, "%s; left: %s",
		     job_error(j)->message ? job_error(j)->message : "", job_left(j) ? job_left(j) : "");
	json_object *migs = NULL;
	cr_assert_eq(rollfx_migrations(&w, &migs), 0);
	cr_assert_gt(json_object_array_length(migs), 0);
	for (size_t i = 0; i < json_object_array_length(migs); i++) {
		json_object *m = json_object_array_get_idx(migs, i);
		double t = json_object_get_double(json_object_object_get(m, "start"));
		cr_expect_geq(t, (double)start - 1, "a migration of %d started %.0f s before the window",
			      json_int0(m, "vmid"), (double)start - t);
		cr_expect_leq(t, (double)end, "a migration of %d started after the window",
			      json_int0(m, "vmid"));
	}
	json_object_put(migs);
	assert_rolled(&w, "--window", true);
	job_free(j);
	rworld_stop(&w);
}

/* ---- the same through pvagentd, SIGKILLed at every step boundary --------------------- *
 *
 * The rolling job's process stops itself right after a step's end was
 * committed (PVAGENT_STOP_AFTER, inherited from the daemon): the
 * preflight, then each of the seven steps of each node's rolling-node job
 * in turn. Each time the daemon is SIGKILLed with it and started again
 * with the next boundary; its start-up resumes the job. At the end: the
 * run as the in-process one ends, and no migration was sent twice. */

struct daemon_world {
	struct rollfx r;
	char *conf, *log;
	const char *bin, *dbin;
	pid_t daemon, client;
};

static void daemon_spawn(struct daemon_world *d, const char *stop_after)
{
	if (stop_after)
		cr_assert_eq(setenv("PVAGENT_STOP_AFTER", stop_after, 1), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		setenv("PVAGENT_BIN", d->bin, 1);
		execl(d->dbin, d->dbin, "-c", d->conf, "-f", (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(unsetenv("PVAGENT_STOP_AFTER"), 0);
	d->daemon = pid;
	char *sock = strprintf("%s/pvagentd.sock", d->r.dir);
	bool up = false;
	for (int i = 0; i < 3000 && !up; i++) {
		up = access(sock, F_OK) == 0;
		struct timespec ts = {0, 10L * 1000 * 1000};
		if (!up)
			nanosleep(&ts, NULL); /* polling a state (the socket), bounded */
	}
	free(sock);
	cr_assert(up, "pvagentd never made its socket");
}

/* Bounded wait until sql (no parameter) gives want. */
static void wait_count(struct daemon_world *d, const char *sql, long long want, const char *what)
{
	for (int i = 0; i < 12000; i++) {
		if (test_db_int(d->r.db, sql, NULL) == want)
			return;
		struct timespec ts = {0, 20L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling a state (the store), bounded */
	}
	char *log = NULL;
	read_file(d->log, &log, NULL);
	cr_assert_fail("never: %s\n%s", what, log ? log : "");
}

/* The job's process stopped at the boundary: SIGKILL the daemon with it. */
static void kill_at_boundary(struct daemon_world *d, const char *what)
{
	pid_t child = (pid_t)test_db_int(d->r.db, "SELECT pid FROM jobs WHERE id = 1", NULL);
	cr_assert_gt(child, 0, "%s", what);
	cr_assert_eq(procstat_wait_state(child, 'T', 60000), 0, "%s: never stopped", what);
	cr_assert_eq(kill(d->daemon, SIGKILL), 0);
	cr_assert_eq(waitpid(d->daemon, NULL, 0), d->daemon);
	d->daemon = -1;
	for (int i = 0; i < 3000 && kill(child, 0) == 0; i++) {
		struct timespec ts = {0, 10L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling a state (the process), bounded */
	}
	cr_assert_neq(kill(child, 0), 0, "%s: the job's process outlived its daemon", what);
	if (d->client > 0)
		test_kill(&d->client);
}

Test(rolling, pvagentd_killed_at_every_step_boundary_finishes_the_run, .timeout = 600)
{
	struct daemon_world d = {.daemon = -1, .client = -1};
	const char *bin = getenv("PVAGENT_BIN"), *dbin = getenv("PVAGENTD_BIN");
	d.bin = bin ? bin : "build/san/pvagent";
	d.dbin = dbin ? dbin : "build/san/pvagentd";
	if (access(d.bin, X_OK) < 0 || access(d.dbin, X_OK) < 0)
		cr_skip_test("no pvagent/pvagentd (make build/san/pvagent build/san/pvagentd)");
	rworld_start(&d.r, true);
	struct migfx *f = &d.r.f;
	char *secret = strprintf("%s/token.secret", d.r.dir), *body = strprintf("%s\n",
										f->sp.token_secret);
	cr_assert_eq(test_write_file(secret, body, 0600), 0);
	d.conf = strprintf("%s/pvagent.conf", d.r.dir);
	d.log = strprintf("%s/pvagentd.log", d.r.dir);
	char *conf = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			       "fingerprint = %s\ntimeout = 10\n[ssh]\nidentity = %s\n"
			       "known_hosts = %s\nhost_key_policy = tofu\n[paths]\ntemplates = %s\n"
			       "state = %s\nsocket = %s/pvagentd.sock\n[daemon]\nworkers = 2\n"
			       "[migrate]\nprobe_port = 1\nmax_workers = 4\n",
			       f->sp.url, f->sp.token_id, secret, f->sp.fingerprint,
			       f->conf.ssh.identity, f->conf.ssh.known_hosts, d.r.dir, d.r.dir,
			       d.r.dir);
	cr_assert_eq(test_write_file(d.conf, conf, 0600), 0);
	free(conf);
	free(body);
	/* the command: --node-ssh for each node's sshd */
	const char *argv[32] = {d.bin, "-c", d.conf, "rolling", "run", "--run", "--version", "9.1"};
	size_t n = 8;
	char *opts[8] = {0};
	size_t no = 0;
	json_object_object_foreach(d.r.node_ssh, node, at)
	{
		opts[no] = strprintf("%s=%s", node, json_object_get_string(at));
		argv[n++] = "--node-ssh";
		argv[n++] = opts[no++];
	}
	argv[n] = NULL;
	static const char *const steps[] = {"precheck", "maintenance", "drain", "update",
					    "check", "leave", "undrain"};
	daemon_spawn(&d, "rolling:preflight");
	char *out = strprintf("%s/client.out", d.r.dir);
	d.client = test_spawn(argv, out);
	cr_assert_gt(d.client, 0);
	wait_count(&d, "SELECT count(*) FROM steps WHERE job = 1 AND name = 'preflight' AND "
		       "state = 'done'", 1, "preflight done");
	kill_at_boundary(&d, "preflight");
	for (size_t ni = 0; ni < 3; ni++)
		for (size_t s = 0; s < 7; s++) {
			char *stop = strprintf("rolling-node:%s", steps[s]);
			char *what = strprintf("node %zu's %s", ni + 1, steps[s]);
			char *sql = strprintf("SELECT count(*) FROM steps t JOIN jobs j ON t.job = j.id "
					      "WHERE j.workflow = 'rolling-node' AND t.name = '%s' "
					      "AND t.state = 'done'", steps[s]);
			daemon_spawn(&d, stop);
			wait_count(&d, sql, (long long)ni + 1, what);
			kill_at_boundary(&d, what);
			free(stop);
			free(what);
			free(sql);
		}
	daemon_spawn(&d, NULL);
	wait_count(&d, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'done'", 1,
		   "the rolling job ended done");
	cr_assert_eq(kill(d.daemon, SIGTERM), 0);
	cr_assert_eq(waitpid(d.daemon, NULL, 0), d.daemon);
	cr_expect_eq(test_db_int(d.r.db, "SELECT count(*) FROM jobs WHERE workflow = "
					 "'rolling-node'", NULL), 3, "one child job per node");
	char *serr = NULL;
	cr_assert_eq(store_open(d.r.db, &f->env.store, &serr), 0, "%s", serr ? serr : "");
	assert_rolled(&d.r, "killed at every boundary", true);
	assert_moves_once(&d.r, "killed at every boundary");
	char *log = NULL;
	read_file(d.log, &log, NULL);
	cr_expect_null(log ? strstr(log, "Sanitizer") : NULL, "daemon sanitizer report:\n%s", log);
	free(log);
	for (size_t i = 0; i < no; i++)
		free(opts[i]);
	free(out);
	free(secret);
	free(d.conf);
	free(d.log);
	rworld_stop(&d.r);
}

/* rolling.json's plan: Ceph healthy, HA, every node 8.4, the containers
 * named (they move by restart), nothing written. */
Test(rolling, plan_of_the_8_4_cluster, .timeout = 600)
{
	struct migfx f;
	cr_assert_eq(migfx_start(&f, ROLLING, NULL, true), 0);
	struct job *j = plan_done(&f, "pve1");
	cr_expect(json_flag(check_of(j, "ceph"), "ok"));
	cr_expect(json_flag(check_of(j, "ha"), "ok"));
	json_object *cl = NULL, *order = NULL;
	cr_assert(json_object_object_get_ex(job_vars(j), "cluster", &cl));
	cr_expect(json_flag(cl, "ceph") && json_flag(cl, "ha"));
	cr_assert(json_object_object_get_ex(job_vars(j), "order", &order));
	cr_expect_str_eq(json_object_get_string(json_object_array_get_idx(order, 2)), "pve1");
	static const char *const nodes[] = {"pve1", "pve2", "pve3"};
	for (size_t i = 0; i < 3; i++) {
		json_object *n = node_of(j, nodes[i]);
		cr_expect(rolling_version_is(json_str(n, "version"), "8.4"), "%s", nodes[i]);
		char ct[16];
		snprintf(ct, sizeof ct, "ct%zu09", i + 1);
		const char *what = todo_of(n, ct);
		cr_assert_not_null(what, "%s not named", ct);
		cr_expect(strstr(what, "restart"), "%s", what);
	}
	cr_expect_eq(writes(&f), 0, "a plan changed something");
	job_free(j);
	cr_assert_eq(migfx_stop(&f), 0);
}

/* ---- --wait: the admin upgrades and reboots each node ---------------------------- */

struct admin {
	struct rollfx *w;
	struct simproc sp;     /* the simulator's, with a curl handle of its own */
	int upgraded;
	_Atomic bool over;     /* the run ended: stop waiting for drains */
	char why[160];
};

/* The node in HA maintenance now (the one drained), or NULL (malloc'd). */
static char *maintained(struct admin *a)
{
	long st = 0;
	json_object *b = NULL, *data = NULL, *cl = NULL, *nodes = NULL;
	char *name = NULL;
	if (sim_http(&a->sp, "GET", "/_sim/state", NULL, NULL, NULL, &st, &b) < 0)
		return NULL;
	json_object_object_get_ex(b, "data", &data);
	json_object_object_get_ex(data, "cluster", &cl);
	json_object_object_get_ex(cl, "nodes", &nodes);
	for (size_t i = 0; nodes && i < json_object_array_length(nodes) && !name; i++) {
		json_object *n = json_object_array_get_idx(nodes, i);
		if (json_flag(n, "ha_maintenance"))
			name = strdup(json_str(n, "name"));
	}
	json_object_put(b);
	return name;
}

/* Each time a node's drain is done, as an admin would: upgrade it and
 * reboot it (the simulator's controls). */
static void *admin_run(void *arg)
{
	struct admin *a = arg;
	for (int k = 1; k <= 3; k++) {
		char *sql = strprintf("SELECT count(*) FROM steps t JOIN jobs j ON t.job = j.id WHERE "
				      "j.workflow = 'rolling-node' AND t.name = 'drain' AND "
				      "t.state = 'done'");
		char *node = NULL;
		for (int i = 0; i < 15000 && !node && !a->over; i++) {
			if (test_db_int(a->w->db, sql, NULL) >= k)
				node = maintained(a);
			struct timespec ts = {0, 20L * 1000 * 1000};
			if (!node)
				nanosleep(&ts, NULL); /* polling a state (the store), bounded */
		}
		free(sql);
		if (!node) {
			snprintf(a->why, sizeof a->why, "node %d's drain never ended", k);
			return NULL;
		}
		char *body = strprintf("{\"node\":\"%s\"}", node);
		long st1 = 0, st2 = 0;
		int r = sim_http(&a->sp, "POST", "/_sim/node/upgrade", "application/json", body,
				 NULL, &st1, NULL);
		if (r == 0)
			r = sim_http(&a->sp, "POST", "/_sim/node/reboot", "application/json", body,
				     NULL, &st2, NULL);
		free(body);
		if (r < 0 || st1 != 200 || st2 != 200) {
			snprintf(a->why, sizeof a->why, "%s: upgrade %ld, reboot %ld", node, st1, st2);
			free(node);
			return NULL;
		}
		free(node);
		a->upgraded++;
	}
	return NULL;
}

Test(rolling, wait_for_the_admins_upgrades, .timeout = 600)
{
	struct rollfx w;
	rworld_start(&w, false);
	struct admin a = {.w = &w, .sp = w.f.sp};
	a.sp.curl = NULL;
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, admin_run, &a), 0);
	struct rolling_request q = {.mode = "wait", .version = "9.1", .max_workers = 4,
				    .node_ssh = w.node_ssh};
	enum job_outcome o;
	struct job *j = run_rolling(&w.f, wf_rolling_params(&q), &o);
	a.over = true;
	cr_assert_eq(pthread_join(t, NULL), 0);
	curl_easy_cleanup(a.sp.curl);
	cr_assert(a.upgraded == 3 && o == JOB_OUT_DONE, "upgraded %d (%s); the run: %s; left: %s",
		  a.upgraded, a.why, job_error(j)->message ? job_error(j)->message : "",
		  job_left(j) ? job_left(j) : "");
	assert_rolled(&w, "--wait", false);
	assert_moves_once(&w, "--wait");
	job_free(j);
	rworld_stop(&w);
}
