/* test_rolling.c - `pvagent rolling` (agent/wf_rolling.c, agent/rolling_plan.c):
 * the pure rules (quorum with a vote to spare, the order, Ceph's health,
 * versions); the plan against the simulator's drain and migrate scenarios
 * (it names what blocks a run and the guests that need a decision, orders
 * the node pvagent runs on last, and sends nothing but reads); a run with
 * --wait whose node never reboots stops in its update step, needs
 * attention and names the guests away from home. */
#include <criterion/criterion.h>

#include "job.h"
#include "json.h"
#include "migfx.h"
#include "rolling_plan.h"
#include "store.h"
#include "util.h"
#include "wf_rolling.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* drain.json: huge fits on no other node; pinned stays; the containers
 * move by restart when they run. The plan refuses, names each, and writes
 * nothing to PVE. */
Test(rolling, plan_names_what_blocks_and_changes_nothing, .timeout = 240)
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
Test(rolling, plan_orders_the_nodes, .timeout = 240)
{
	struct migfx f;
	cr_assert_eq(migfx_start_with(&f, DRAIN, FITS, true), 0);
	enum job_outcome o;
	struct job *j = run_rolling(&f, plan_params("pve2"), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
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
	job_free(j);
	cr_assert_eq(migfx_stop(&f), 0);
}

/* migrate.json: four nodes, one offline: no vote to spare is checked as
 * the offline node, and the plan refuses. */
Test(rolling, plan_refuses_an_offline_node, .timeout = 240)
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
Test(rolling, a_wait_that_sees_no_reboot_stops_and_says_where, .timeout = 240)
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
