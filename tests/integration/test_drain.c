/* test_drain.c - drain and undrain (agent/wf_drain.c) against the PVE
 * simulator (tests/pvesim/scenarios/drain.json: 12 mixed guests on pve1,
 * two targets, a pinned guest, a template and one that fits nowhere): the
 * dry run sends nothing, a drain that cannot place every guest moves
 * nothing, --partial moves the rest with home tags and never overcommits,
 * a failure in the middle does not stop the others, undrain brings them
 * home and is idempotent, a deadline leaves what would not finish, and a
 * rerun tags what its faulted earlier run moved. */
#include <criterion/criterion.h>

#include "job.h"
#include "json.h"
#include "migfx.h"
#include "store.h"
#include "util.h"
#include "wf_drain.h"
#include "wf_migrate.h"
#include "window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SCEN "tests/pvesim/scenarios/drain.json"

static void fx_start(struct migfx *f)
{
	cr_assert_eq(migfx_start(f, SCEN, NULL, true), 0, "simulator did not start");
}

static void fx_stop(struct migfx *f)
{
	cr_assert_eq(migfx_stop(f), 0, "simulator did not exit cleanly");
}

static struct job *run(struct migfx *f, const struct job_workflow *wf, json_object *params,
		       enum job_outcome *out)
{
	struct job *j = NULL;
	struct pve_error e = {0};
	cr_assert_eq(job_new(&f->env, wf, "pve1", params, &j, &e), 0, "job_new: %s",
		     e.message ? e.message : "?");
	json_object_put(params);
	wf_drain_attach(j, &f->opts);
	*out = job_run(j, f->c);
	return j;
}

static json_object *move_of(struct job *j, const char *name)
{
	json_object *moves = NULL;
	cr_assert(json_object_object_get_ex(job_vars(j), "moves", &moves));
	for (size_t i = 0; i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i);
		if (strcmp(json_str(m, "name"), name) == 0)
			return m;
	}
	cr_assert_fail("%s is not in the plan", name);
	return NULL;
}

/* The guest in the simulator: its node and tags. */
static void sim_guest(struct migfx *f, int vmid, char *node, size_t nn, char *tags, size_t nt)
{
	json_object *st = simproc_state(&f->sp), *cl = NULL, *guests = NULL;
	json_object_object_get_ex(st, "cluster", &cl);
	json_object_object_get_ex(cl, "guests", &guests);
	node[0] = tags[0] = '\0';
	for (size_t i = 0; guests && i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i), *cfg = NULL;
		long long id = 0;
		if (!json_int(g, "vmid", &id) || id != vmid)
			continue;
		snprintf(node, nn, "%s", json_str(g, "node"));
		json_object_object_get_ex(g, "config", &cfg);
		snprintf(tags, nt, "%s", json_str(cfg, "tags") ? json_str(cfg, "tags") : "");
	}
	json_object_put(st);
}

static const int MOVERS[] = {303, 304, 305, 306, 307, 308, 309, 310, 311};

/* undrain pve1: every guest the drain moved is home, its tag gone. */
static void undrain_all_home(struct migfx *f)
{
	enum job_outcome o;
	struct job *j = run(f, &wf_undrain, wf_drain_params(NULL, 0, 4, 0, false, false, 0), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	char node[32], tags[128];
	for (size_t i = 0; i < sizeof MOVERS / sizeof *MOVERS; i++) {
		sim_guest(f, MOVERS[i], node, sizeof node, tags, sizeof tags);
		cr_expect_str_eq(node, "pve1", "%d not home", MOVERS[i]);
		cr_expect_null(strstr(tags, "pvagent-home"), "%d tags '%s'", MOVERS[i], tags);
	}
	job_free(j);
}

Test(drain, dry_run_plans_and_sends_nothing)
{
	struct migfx f;
	fx_start(&f);
	enum job_outcome o;
	struct job *j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 4, 0, true, true, 0), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_str_eq(json_str(move_of(j, "base"), "status"), "template");
	cr_expect_str_eq(json_str(move_of(j, "pinned"), "status"), "pinned");
	json_object *huge = move_of(j, "huge");
	cr_expect_str_eq(json_str(huge, "status"), "fits nowhere");
	cr_expect(strstr(json_str(huge, "why"), "pve2: 10240 MiB free after the reserve, needs "
						"20480 MiB"), "%s", json_str(huge, "why"));
	cr_expect_str_eq(json_str(move_of(j, "ct1"), "method"), "restart");
	cr_expect_str_eq(json_str(move_of(j, "cold1"), "method"), "offline");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 0);
	json_object_put(log);
	job_free(j);
	fx_stop(&f);
}

/* PVE 9 node affinity in a drain of pve1 (dry run): web1 (vm:303) under a
 * rule preferring pve1 with failback would be brought back by the CRM
 * while pve1 is emptied: it fits nowhere, the plan says why and how
 * (HA maintenance); app1 (vm:305) under a strict rule naming pve1 and pve3
 * goes to pve3 only. The rules, resources and HA status are read once for
 * the run. */
#define HA_RULES_303_305 \
	"\"ha\": [{\"sid\": \"vm:303\"}, {\"sid\": \"vm:305\"}], " \
	"\"ha_rules\": [{\"rule\": \"home\", \"type\": \"node-affinity\", " \
	"\"resources\": \"vm:303\", \"nodes\": \"pve1:2,pve2:1,pve3:1\"}, " \
	"{\"rule\": \"keep\", \"type\": \"node-affinity\", \"resources\": " \
	"\"vm:305\", \"nodes\": \"pve1,pve3\", \"strict\": 1}]"

Test(drain, ha_node_affinity_plans_and_refuses_failback)
{
	struct migfx f;
	cr_assert_eq(migfx_start_with(&f, SCEN, "{" HA_RULES_303_305 "}", true), 0,
		     "simulator did not start");
	enum job_outcome o;
	struct job *j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 4, 0, true, true, 0), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	json_object *web1 = move_of(j, "web1");
	cr_expect_str_eq(json_str(web1, "status"), "fits nowhere");
	cr_expect(json_str(web1, "why") &&
		  strstr(json_str(web1, "why"),
			 "the CRM would migrate it back while 'pve1' is drained; put "
			 "the node in HA maintenance first (ha-manager crm-command "
			 "node-maintenance enable pve1)"),
		  "%s", json_str(web1, "why"));
	cr_expect_str_eq(json_str(move_of(j, "app1"), "target"), "pve3");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 0);
	cr_expect_eq(simproc_count_requests(log, "GET", "/cluster/ha/rules", -1), 1);
	cr_expect_eq(simproc_count_requests(log, "GET", "/cluster/ha/resources", -1), 1);
	cr_expect_eq(simproc_count_requests(log, "GET", "/cluster/ha/status/current", -1), 1);
	json_object_put(log);
	job_free(j);
	fx_stop(&f);
}

/* Let the simulated clock run (the CRM's rounds with it), 5 s at a time
 * for at most limit s, until vmid is on node (on) or off it (!on). */
static bool wait_node(struct migfx *f, int vmid, const char *node, bool on, double limit)
{
	char where[32], tags[128];
	for (double t = 0; t <= limit; t += 5) {
		sim_guest(f, vmid, where, sizeof where, tags, sizeof tags);
		if ((strcmp(where, node) == 0) == on)
			return true;
		pve_clock_sleep(f->env.clock, 5);
	}
	return false;
}

/* The same rules with pve1 in HA maintenance (ha-manager crm-command
 * node-maintenance enable pve1): the CRM moves web1 and app1 away itself
 * (app1 to pve3, its strict rule's other node), the drain moves the rest,
 * and in minutes of rounds neither comes back while the maintenance lasts,
 * failback or not; once it ends, both return to pve1. */
Test(drain, ha_failback_waits_for_the_end_of_maintenance, .timeout = 240)
{
	struct migfx f;
	cr_assert_eq(migfx_start_with(&f, SCEN,
				      "{\"nodes\": {\"pve1\": {\"ha_maintenance\": true}}, "
				      HA_RULES_303_305 "}", true), 0, "simulator did not start");
	cr_assert(wait_node(&f, 303, "pve1", false, 120), "the CRM did not move web1 away");
	cr_assert(wait_node(&f, 305, "pve1", false, 120), "the CRM did not move app1 away");
	cr_assert(wait_node(&f, 305, "pve3", true, 120), "app1 left its strict rule's nodes");
	enum job_outcome o;
	struct job *j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 4, 0, true, false, 0), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_str_eq(json_str(move_of(j, "app2"), "status"), "moved");
	job_free(j);
	char node[32], tags[128];
	for (int k = 0; k < 24; k++) { /* two minutes of rounds */
		sim_guest(&f, 303, node, sizeof node, tags, sizeof tags);
		cr_expect_str_neq(node, "pve1", "web1 came back during maintenance");
		sim_guest(&f, 305, node, sizeof node, tags, sizeof tags);
		cr_expect_str_neq(node, "pve1", "app1 came back during maintenance");
		pve_clock_sleep(f.env.clock, 5);
	}
	/* ha-manager crm-command node-maintenance disable pve1 */
	long status = 0;
	cr_assert_eq(sim_http(&f.sp, "POST", "/_sim/node/shell", "application/json",
			      "{\"node\": \"pve1\", \"argv\": [\"ha-manager\", \"crm-command\", "
			      "\"node-maintenance\", \"disable\", \"pve1\"]}",
			      NULL, &status, NULL), 0);
	cr_assert_eq(status, 200);
	cr_expect(wait_node(&f, 303, "pve1", true, 120), "web1 is not back on pve1");
	cr_expect(wait_node(&f, 305, "pve1", true, 120), "app1 is not back on pve1");
	fx_stop(&f);
}

Test(drain, fits_nowhere_moves_nothing)
{
	struct migfx f;
	fx_start(&f);
	enum job_outcome o;
	struct job *j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 4, 0, false, false, 0), &o);
	cr_expect_eq(o, JOB_OUT_FAILED);
	cr_expect(strstr(job_error(j)->message, "huge ("), "%s", job_error(j)->message);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 0);
	json_object_put(log);
	job_free(j);
	fx_stop(&f);
}

Test(drain, partial_then_undrain, .timeout = 240)
{
	struct migfx f;
	fx_start(&f);
	enum job_outcome o;
	struct job *j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 4, 0, true, false, 0), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	char node[32], tags[128];
	long long took[4] = {0};
	for (size_t i = 0; i < sizeof MOVERS / sizeof *MOVERS; i++) {
		sim_guest(&f, MOVERS[i], node, sizeof node, tags, sizeof tags);
		cr_expect(strcmp(node, "pve2") == 0 || strcmp(node, "pve3") == 0, "%d on %s",
			  MOVERS[i], node);
		cr_expect(strstr(tags, "pvagent-home-pve1"), "%d tags '%s'", MOVERS[i], tags);
	}
	json_object *moves = NULL;
	json_object_object_get_ex(job_vars(j), "moves", &moves);
	for (size_t i = 0; i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i);
		const char *t = json_str(m, "target");
		long long mem = 0;
		json_int(m, "memory", &mem);
		if (t && strcmp(json_str(m, "method"), "offline") != 0)
			took[t[3] - '0'] += mem;
		if (strcmp(json_str(m, "status"), "moved") == 0)
			cr_expect_not_null(json_object_object_get(m, "seconds"));
	}
	/* never overcommitted: free minus the 1 GiB reserve */
	cr_expect_leq(took[2], 10ll << 30);
	cr_expect_leq(took[3], 6ll << 30);
	cr_expect_gt(took[2], 0);
	cr_expect_gt(took[3], 0);
	/* the cluster's facts once per run, shared by the plan and every move */
	json_object *rl = simproc_requests(&f.sp);
	for (int n = 1; n <= 3; n++) {
		char path[64];
		snprintf(path, sizeof path, "/nodes/pve%d/version", n);
		cr_expect_eq(simproc_count_requests(rl, "GET", path, -1), 1, "%s", path);
		snprintf(path, sizeof path, "/nodes/pve%d/capabilities/qemu/machines", n);
		cr_expect_eq(simproc_count_requests(rl, "GET", path, -1), n == 1 ? 0 : 1, "%s",
			     path);
	}
	json_object_put(rl);
	sim_guest(&f, 301, node, sizeof node, tags, sizeof tags);
	cr_expect_str_eq(node, "pve1");
	sim_guest(&f, 300, node, sizeof node, tags, sizeof tags);
	cr_expect_str_eq(node, "pve1");
	sim_guest(&f, 302, node, sizeof node, tags, sizeof tags);
	cr_expect_str_eq(node, "pve1");
	job_free(j);

	undrain_all_home(&f);
	/* again: nothing to bring home, nothing sent */
	json_object *log = simproc_requests(&f.sp);
	int before = simproc_count_requests(log, "POST", "*/migrate", -1);
	json_object_put(log);
	cr_expect_eq(before, 18);
	j = run(&f, &wf_undrain, wf_drain_params(NULL, 0, 4, 0, false, false, 0), &o);
	cr_expect_eq(o, JOB_OUT_DONE);
	log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), before);
	json_object_put(log);
	job_free(j);
	fx_stop(&f);
}

Test(drain, a_failure_does_not_stop_the_others, .timeout = 240)
{
	struct migfx f;
	fx_start(&f);
	cr_assert_eq(simproc_fault(&f.sp, "{\"method\":\"POST\",\"path\":\"^/nodes/pve1/qemu/304/"
					  "migrate$\",\"action\":\"task_fail\",\"message\":"
					  "\"migration aborted\"}"), 0);
	enum job_outcome o;
	struct job *j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 2, 0, true, false, 0), &o);
	cr_expect_eq(o, JOB_OUT_FAILED);
	cr_expect(strstr(job_error(j)->message, "1 of 9 migrations failed: web2"), "%s",
		  job_error(j)->message);
	cr_expect_str_eq(json_str(move_of(j, "web2"), "status"), "failed");
	char node[32], tags[128];
	sim_guest(&f, 304, node, sizeof node, tags, sizeof tags);
	cr_expect_str_eq(node, "pve1");
	cr_expect_null(strstr(tags, "pvagent-home"));
	for (size_t i = 0; i < sizeof MOVERS / sizeof *MOVERS; i++) {
		if (MOVERS[i] == 304)
			continue;
		sim_guest(&f, MOVERS[i], node, sizeof node, tags, sizeof tags);
		cr_expect_str_neq(node, "pve1", "%d was not moved", MOVERS[i]);
	}
	job_free(j);
	fx_stop(&f);
}

/* A window due now (its schedule is this second) whose drain runs in
 * simulated time: what would end after the window closes is not started,
 * and says so. */
Test(drain, window_deadline_skips_what_would_not_finish, .timeout = 240)
{
	setenv("TZ", "UTC", 1);
	tzset();
	struct migfx f;
	fx_start(&f);
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	char sched[16];
	strftime(sched, sizeof sched, "%H:%M:%S", &tm);
	struct conf_window w = {.name = "maint", .node = "pve1", .duration = 60, .max_workers = 1};
	const char *why = NULL;
	cr_assert_eq(cal_parse(sched, &w.cal, &why), 0, "%s", why ? why : "");
	f.conf.windows = &w;
	f.conf.n_windows = 1;
	f.conf.migrate.max_workers = 4;
	size_t idx = 9;
	time_t start, end;
	cr_assert_eq(window_next_due(&f.conf, now, &idx, &start, &end), 0);
	cr_expect_eq(idx, 0);
	cr_expect_leq(start, now, "the window is due");
	cr_expect_eq(end, start + 60);
	enum job_outcome o;
	struct job *j = run(&f, &wf_drain, window_drain_params(&f.conf, &w, end), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	json_object *moves = NULL;
	json_object_object_get_ex(job_vars(j), "moves", &moves);
	int moved = 0, skipped = 0;
	char node[32], tags[128];
	for (size_t i = 0; i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i);
		const char *st = json_str(m, "status");
		long long vmid = 0;
		json_int(m, "vmid", &vmid);
		if (strcmp(st, "moved") == 0)
			moved++;
		if (strcmp(st, "skipped") != 0)
			continue;
		skipped++;
		cr_expect(strstr(json_str(m, "why"), "after the window closes"), "%s",
			  json_str(m, "why"));
		sim_guest(&f, (int)vmid, node, sizeof node, tags, sizeof tags);
		cr_expect_str_eq(node, "pve1", "skipped %lld moved anyway", vmid);
	}
	cr_expect_geq(moved, 2);
	cr_expect_geq(skipped, 1);
	/* the moves that ran ended inside the window (simulated time) */
	cr_expect_leq(f.sc.offset, 60 + 10, "the drain ran %.0f s of simulated time", f.sc.offset);
	job_free(j);
	f.conf.windows = NULL;
	f.conf.n_windows = 0;
	fx_stop(&f);
}

/* ---- the migration planner's refusals, on PVE 8.4 and 9.1 ------------------------- */
/* A running VM whose local LVM-thin disk a snapshot holds (app2) and a VM
 * with a local ISO in its CD drive (iso1): the dry run lists both as
 * fitting nowhere with the reason `migrate` gives, said once; the real
 * drain moves nothing without --partial. */
static void refused_as_migrate_refuses(const char *ver)
{
	char changes[1024];
	snprintf(changes, sizeof changes,
		 "{\"pve_version\": \"%s\", \"storages\": {\"local\": {\"volumes\": [{\"volid\": "
		 "\"local:iso/debian-13.iso\", \"size_mib\": 700}]}}, \"guests\": [{\"vmid\": 312, "
		 "\"node\": \"pve1\", \"type\": \"qemu\", \"status\": \"stopped\", \"config\": "
		 "{\"name\": \"iso1\", \"memory\": \"512\", \"cores\": 1, \"ostype\": \"l26\", "
		 "\"scsi0\": \"shared:vm-312-disk-0,size=1G\", \"ide2\": "
		 "\"local:iso/debian-13.iso,media=cdrom\"}}]}",
		 ver);
	struct migfx f;
	cr_assert_eq(migfx_start_with(&f, SCEN, changes, true), 0, "simulator did not start");
	struct guest_ref g = {0};
	struct pve_error e = {0};
	bool existed = false;
	cr_assert_eq(guest_find_by_vmid(f.c, 306, &g, &e), 1, "%s", e.message ? e.message : "?");
	cr_assert_eq(guest_snapshot(f.c, &g, "before-upgrade", NULL, &f.env.wait, &existed, &e), 0,
		     "%s", e.message ? e.message : "?");
	guest_ref_clear(&g);
	enum job_outcome o;
	struct job *j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 4, 0, true, true, 0), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	json_object *app2 = move_of(j, "app2"), *iso1 = move_of(j, "iso1");
	cr_expect_str_eq(json_str(app2, "status"), "fits nowhere");
	cr_expect_str_eq(json_str(app2, "why"),
			 "VM 306's local disk local-lvm:vm-306-disk-0 is held by its snapshot "
			 "before-upgrade: PVE cannot move snapshots on lvmthin storage 'local-lvm' "
			 "(and not at all while the VM runs); delete the snapshot (qm delsnapshot "
			 "306 before-upgrade), or keep the disk on shared storage");
	cr_expect_str_eq(json_str(iso1, "status"), "fits nowhere");
	cr_expect_str_eq(json_str(iso1, "why"),
			 "VM 312 has a local ISO 'local:iso/debian-13.iso' in its CD drive ide2: "
			 "eject it (qm set 312 --ide2 none,media=cdrom) or keep the ISO on shared "
			 "storage");
	/* the same words as migrate's */
	char *why = strdup(json_str(app2, "why"));
	job_free(j);
	j = NULL;
	json_object *mp = wf_migrate_params("pve2", NULL, 0, 0, true);
	cr_assert_eq(job_new(&f.env, &wf_migrate, "app2", mp, &j, &e), 0);
	json_object_put(mp);
	o = job_run(j, f.c);
	cr_expect_eq(o, JOB_OUT_USAGE);
	cr_expect(job_error(j)->message && strstr(job_error(j)->message, why), "%s",
		  job_error(j)->message ? job_error(j)->message : "(none)");
	free(why);
	job_free(j);
	/* the real drain: nothing moves */
	j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 4, 0, false, false, 0), &o);
	cr_expect_eq(o, JOB_OUT_FAILED);
	const char *msg = job_error(j)->message;
	cr_expect(msg && strstr(msg, "app2 (VM 306's local disk") && strstr(msg, "iso1 (VM 312 has"),
		  "%s", msg ? msg : "(none)");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 0);
	json_object_put(log);
	job_free(j);
	fx_stop(&f);
}

Test(drain, refused_as_migrate_refuses_on_8_4)
{
	refused_as_migrate_refuses("8.4");
}

Test(drain, refused_as_migrate_refuses_on_9_1)
{
	refused_as_migrate_refuses("9.1");
}

/* A rolling upgrade: pve1 and pve3 on 9.1, pve2 still on 8.4. Every guest
 * goes to the upgraded pve3 (room enough), none to pve2 although it has
 * room too; drained to pve2 alone, the running VMs (on 9.1's newest
 * machine type, which 8.4's QEMU cannot run) must wait for its upgrade
 * (why says so in qemu-server's words) while stopped guests and
 * containers (not live) may go. */
Test(drain, rolling_upgrade_upgraded_node_first)
{
	struct migfx f;
	cr_assert_eq(migfx_start_with(&f, SCEN,
				      "{\"pve_version\": \"9.1\", \"nodes\": {\"pve2\": "
				      "{\"version\": \"8.4\"}, \"pve3\": {\"memory_mib\": 65536}}}",
				      true), 0, "simulator did not start");
	enum job_outcome o;
	struct job *j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 4, 0, false, true, 0), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	json_object *moves = NULL;
	size_t n = 0;
	json_object_object_get_ex(job_vars(j), "moves", &moves);
	for (size_t i = 0; i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i);
		if (strcmp(json_str(m, "status"), "move") != 0)
			continue;
		cr_expect_str_eq(json_str(m, "target"), "pve3", "%s", json_str(m, "name"));
		n++;
	}
	cr_expect_eq(n, 10, "all but the template and the pinned one: %s",
		     json_object_to_json_string(moves));
	job_free(j);
	static const char *const to2[] = {"pve2"};
	j = run(&f, &wf_drain, wf_drain_params(to2, 1, 4, 0, true, true, 0), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	json_object *web1 = move_of(j, "web1");
	cr_expect_str_eq(json_str(web1, "status"), "fits nowhere");
	cr_expect(strstr(json_str(web1, "why"), "Installed QEMU version '9.2' is too old to run "
				  "machine type 'pc-i440fx-10.1+pve0', please upgrade node 'pve2'"),
		  "%s", json_str(web1, "why"));
	cr_expect_str_eq(json_str(move_of(j, "cold1"), "target"), "pve2");
	cr_expect_str_eq(json_str(move_of(j, "ct1"), "target"), "pve2");
	job_free(j);
	fx_stop(&f);
}

/* PVE 9 positive resource affinity: HA migrates web2 along with web1. The
 * drain plans them as one unit onto one node and asks PVE for web1's
 * migration only; both end up there. */
Test(drain, ha_partners_move_as_one_unit, .timeout = 240)
{
	struct migfx f;
	cr_assert_eq(migfx_start_with(&f, SCEN,
				      "{\"pve_version\": \"9.1\", \"ha\": [{\"sid\": \"vm:303\"}, "
				      "{\"sid\": \"vm:304\"}], \"ha_rules\": [{\"rule\": \"web\", "
				      "\"type\": \"resource-affinity\", \"resources\": "
				      "\"vm:303,vm:304\", \"affinity\": \"positive\"}]}",
				      true), 0, "simulator did not start");
	enum job_outcome o;
	struct job *j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 4, 0, true, true, 0), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	json_object *web1 = move_of(j, "web1"), *web2 = move_of(j, "web2");
	cr_expect_str_eq(json_str(web1, "status"), "move");
	cr_expect_str_eq(json_str(web2, "status"), "with");
	cr_expect_str_eq(json_str(web2, "with"), "web1");
	cr_expect_str_eq(json_str(web2, "target"), json_str(web1, "target"));
	job_free(j);
	j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 4, 0, true, false, 0), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	web1 = move_of(j, "web1");
	web2 = move_of(j, "web2");
	cr_expect_str_eq(json_str(web1, "status"), "moved");
	cr_expect_str_eq(json_str(web2, "status"), "moved");
	char n1[32], n2[32], tags[128];
	sim_guest(&f, 303, n1, sizeof n1, tags, sizeof tags);
	sim_guest(&f, 304, n2, sizeof n2, tags, sizeof tags);
	cr_expect_str_eq(n1, json_str(web1, "target"));
	cr_expect_str_eq(n2, n1, "HA took web2 along");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "/nodes/pve1/qemu/303/migrate", -1), 1);
	cr_expect_eq(simproc_count_requests(log, "POST", "/nodes/pve1/qemu/304/migrate", -1), 0);
	json_object_put(log);
	job_free(j);
	fx_stop(&f);
}

/* A drain whose migration of web2 (304) cannot read the guest on its
 * target after the task (every GET of its status there answers 500): the
 * guest moved, but its migration never got to the home tag and the drain
 * ends without it. A rerun (a new drain job: the first one ended) finds
 * the guest its earlier run moved and tags it; undrain brings every guest
 * home. */
Test(drain, a_rerun_tags_what_its_faulted_run_moved, .timeout = 240)
{
	struct migfx f;
	fx_start(&f);
	char dir[] = "/tmp/pvagent-test-drain.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *db = strprintf("%s/state.db", dir), *serr = NULL;
	cr_assert_eq(store_open(db, &f.env.store, &serr), 0, "%s", serr ? serr : "");
	cr_assert_eq(simproc_fault(&f.sp, "{\"method\":\"GET\",\"path\":\"^/nodes/pve[23]/qemu/304/"
					  "status/current$\",\"action\":\"status\",\"status\":500,"
					  "\"message\":\"read failed\"}"),
		     0);
	enum job_outcome o;
	struct job *j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 2, 0, true, false, 0), &o);
	cr_expect_neq(o, JOB_OUT_DONE);
	cr_expect_str_neq(json_str(move_of(j, "web2"), "status"), "moved");
	char node[32], tags[128];
	sim_guest(&f, 304, node, sizeof node, tags, sizeof tags);
	cr_assert_str_neq(node, "pve1", "web2 moved before the reads failed");
	cr_assert_null(strstr(tags, "pvagent-home"), "tags '%s'", tags);
	job_free(j);
	long status = 0;
	cr_assert_eq(sim_http(&f.sp, "DELETE", "/_sim/fault", NULL, NULL, NULL, &status, NULL), 0);

	/* the rerun: web2 is not on pve1 any more, yet it is the drain's */
	j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 2, 0, true, false, 0), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	json_object *web2 = move_of(j, "web2");
	cr_expect_str_eq(json_str(web2, "status"), "tagged");
	cr_expect_str_eq(json_str(web2, "target"), node);
	for (size_t i = 0; i < sizeof MOVERS / sizeof *MOVERS; i++) {
		char n2[32];
		sim_guest(&f, MOVERS[i], n2, sizeof n2, tags, sizeof tags);
		cr_expect_str_neq(n2, "pve1", "%d was not moved", MOVERS[i]);
		cr_expect(strstr(tags, "pvagent-home-pve1"), "%d tags '%s'", MOVERS[i], tags);
	}
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "/nodes/pve1/qemu/304/migrate", -1), 1,
		     "web2 was migrated once");
	json_object_put(log);
	job_free(j);

	undrain_all_home(&f);
	/* a drain after the undrain: nothing of the first one is left to tag */
	j = run(&f, &wf_drain, wf_drain_params(NULL, 0, 2, 0, true, true, 0), &o);
	cr_expect_eq(o, JOB_OUT_DONE);
	json_object *moves = NULL;
	json_object_object_get_ex(job_vars(j), "moves", &moves);
	for (size_t i = 0; moves && i < json_object_array_length(moves); i++)
		cr_expect_str_neq(json_str(json_object_array_get_idx(moves, i), "status"), "tag");
	job_free(j);
	store_close(f.env.store);
	f.env.store = NULL;
	char *cmd = strprintf("rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
	free(cmd);
	free(db);
	fx_stop(&f);
}
