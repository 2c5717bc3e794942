/* test_migrate.c - the migrate workflow (agent/wf_migrate.c) against the
 * PVE simulator (tests/pvesim/scenarios/migrate.json, and the PVE 3
 * scenario for OpenVZ): every refusal with nothing sent (the request log
 * proves it), qemu online with shared disks and with local disks and a
 * storage map, offline, lxc restart, OpenVZ online, HA-managed guests
 * (the child task followed), already on the target, the downtime limit
 * set and put back, and the probe's gap against the simulated downtime
 * (real time, guest listeners on 127.0.1.210-229). */
#include <criterion/criterion.h>

#include "job.h"
#include "store.h"
#include "task.h"
#include "json.h"
#include "migfx.h"
#include "simcli.h"
#include "wf_migrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#define SCEN "tests/pvesim/scenarios/migrate.json"
#define PVE3 "tests/pvesim/scenarios/pve3.json"

static void fx_start(struct migfx *f, const char *scenario, bool simtime)
{
	cr_assert_eq(migfx_start(f, scenario, NULL, simtime), 0, "simulator did not start");
}

static void fx_stop(struct migfx *f)
{
	cr_assert_eq(migfx_stop(f), 0, "simulator did not exit cleanly");
}

/* The migrate scenario with changes merged in (migfx_start_with). */
static void fx_start_changed(struct migfx *f, const char *changes)
{
	cr_assert_eq(migfx_start_with(f, SCEN, changes, true), 0, "simulator did not start");
}

/* The migrate scenario on PVE ver ("8.4", "9.1"). */
static void fx_start_on(struct migfx *f, const char *ver)
{
	char changes[64];
	snprintf(changes, sizeof changes, "{\"pve_version\": \"%s\"}", ver);
	cr_assert_eq(migfx_start_with(f, SCEN, changes, true), 0, "simulator did not start");
}

/* Run one migration; the job is returned for its vars (job_free it). */
static struct job *migrate(struct migfx *f, const char *name, json_object *params,
			   enum job_outcome *out)
{
	struct job *j = NULL;
	struct pve_error e = {0};
	cr_assert_eq(job_new(&f->env, &wf_migrate, name, params, &j, &e), 0, "job_new: %s",
		     e.message ? e.message : "?");
	json_object_put(params);
	*out = job_run(j, f->c);
	return j;
}

static long long var(struct job *j, const char *key)
{
	long long v = -12345;
	json_int(job_vars(j), key, &v);
	return v;
}

static json_object *sim_guest(json_object *state, int vmid)
{
	json_object *cl = NULL, *guests = NULL;
	json_object_object_get_ex(state, "cluster", &cl);
	json_object_object_get_ex(cl, "guests", &guests);
	for (size_t i = 0; guests && i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		long long id = 0;
		if (json_int(g, "vmid", &id) && id == vmid)
			return g;
	}
	return NULL;
}

/* The port the simulator listens on for the guest. */
static long long sim_port(struct migfx *f, int vmid)
{
	json_object *st = simproc_state(&f->sp);
	long long port = 0;
	cr_assert(json_int(sim_guest(st, vmid), "listen_port", &port) && port > 0);
	json_object_put(st);
	return port;
}

/* The guest's node in the simulator's state. */
static const char *sim_node_of(json_object *state, int vmid)
{
	json_object *cl = NULL, *guests = NULL;
	json_object_object_get_ex(state, "cluster", &cl);
	json_object_object_get_ex(cl, "guests", &guests);
	for (size_t i = 0; guests && i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		long long id = 0;
		if (json_int(g, "vmid", &id) && id == vmid)
			return json_str(g, "node");
	}
	return NULL;
}

static json_object *find_request(json_object *log, const char *method, const char *path,
				 int nth)
{
	for (size_t i = 0; i < json_object_array_length(log); i++) {
		json_object *r = json_object_array_get_idx(log, i);
		if (strcmp(json_str(r, "method"), method) == 0 &&
		    strcmp(json_str(r, "path"), path) == 0 && nth-- == 0)
			return r;
	}
	return NULL;
}

static const char *param(json_object *req, const char *key)
{
	json_object *p = NULL;
	json_object_object_get_ex(req, "params", &p);
	return json_str(p, key);
}

/* ---- refusals: exit 2, nothing sent ------------------------------------------- */

static void refused(struct migfx *f, const char *name, const char *target, const char *map,
		    const char *needle)
{
	enum job_outcome o;
	struct job *j = migrate(f, name, wf_migrate_params(target, map, 0, 0, false), &o);
	cr_expect_eq(o, JOB_OUT_USAGE, "%s -> %s: outcome %s", name, target, job_outcome_name(o));
	const char *msg = job_error(j)->message;
	cr_expect(msg && strstr(msg, needle), "%s -> %s: '%s' lacks '%s'", name, target,
		  msg ? msg : "(none)", needle);
	job_free(j);
}

/* Every refusal, the same on PVE 8.4 and 9.1. */
static void refusals_send_nothing(const char *ver)
{
	struct migfx f;
	fx_start_on(&f, ver);
	refused(&f, "web1", "pve4", NULL, "node 'pve4' is offline");
	refused(&f, "web1", "pve9", NULL, "there is no node 'pve9'");
	refused(&f, "big1", "pve3", NULL, "not enough free memory on node 'pve3'");
	refused(&f, "fast1", "pve2", NULL, "storage 'fast' is not available on node 'pve2'");
	refused(&f, "fast1", "pve2", "fast:nvme", "nor the mapped one");
	refused(&f, "gpu1", "pve2", NULL, "hostpci0 (PCI passthrough");
	refused(&f, "gpu1", "pve2", NULL, "usb0 (USB passthrough");
	refused(&f, "mapped1", "pve2", NULL, "hostpci0 mapped 'gpu' without live migration");
	refused(&f, "iso1", "pve2", NULL, "qm set 104 --ide2 none,media=cdrom");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 0,
		     "a refused migration sent a request");
	cr_expect_eq(simproc_count_requests(log, "PUT", "*/config", -1), 0);
	json_object_put(log);
	fx_stop(&f);
}

Test(migrate, refusals_send_nothing_on_8_4)
{
	refusals_send_nothing("8.4");
}

Test(migrate, refusals_send_nothing_on_9_1)
{
	refusals_send_nothing("9.1");
}

/* ---- methods ------------------------------------------------------------------------ */

Test(migrate, qemu_online_shared)
{
	struct migfx f;
	fx_start(&f, SCEN, true);
	enum job_outcome o;
	struct job *j = migrate(&f, "web1", wf_migrate_params("pve2", NULL, 40, 0, false), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "/nodes/pve1/qemu/100/migrate",
					    -1), 1);
	json_object *r = find_request(log, "POST", "/nodes/pve1/qemu/100/migrate", 0);
	cr_assert_not_null(r);
	cr_expect_str_eq(param(r, "online"), "1");
	cr_expect_str_eq(param(r, "bwlimit"), "40960");
	cr_expect_null(param(r, "with-local-disks"));
	json_object *st = simproc_state(&f.sp);
	cr_expect_str_eq(sim_node_of(st, 100), "pve2");
	json_object_put(st);
	cr_expect_str_eq(json_str(job_vars(j), "method"), "online");
	cr_expect_eq(var(j, "downtime_ms"), 30 + (100 * 7) % 60); /* the simulator's */
	/* the simulator's memory transfer at the 40 MiB/s bwlimit, as QemuMigrate
	 * caps it; its average said 2 % below */
	cr_expect(var(j, "speed") > (38ll << 20) && var(j, "speed") <= (40ll << 20), "%lld",
		  var(j, "speed"));
	cr_expect_eq(var(j, "transferred"), 2048ll << 20);
	cr_expect_geq(var(j, "duration_s"), 20);
	cr_expect_str_eq(job_node(j), "pve2");
	json_object_put(log);
	job_free(j);
	/* again: already there, nothing sent */
	j = migrate(&f, "web1", wf_migrate_params("pve2", NULL, 0, 0, false), &o);
	cr_expect_eq(o, JOB_OUT_DONE);
	cr_expect_str_eq(json_str(job_vars(j), "method"), "none");
	log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 1);
	json_object_put(log);
	job_free(j);
	fx_stop(&f);
}

Test(migrate, qemu_local_disks_and_storage_map)
{
	struct migfx f;
	fx_start(&f, SCEN, true);
	enum job_outcome o;
	/* [migrate] with_local_disks = no: refused before anything is sent */
	f.conf.migrate.with_local_disks = 0;
	struct job *refused = migrate(&f, "db1", wf_migrate_params("pve2", NULL, 0, 0, false), &o);
	cr_assert_eq(o, JOB_OUT_USAGE);
	cr_expect(strstr(job_error(refused)->message, "[migrate] with_local_disks = no"), "%s",
		  job_error(refused)->message);
	json_object *rlog = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(rlog, "POST", "*/migrate", -1), 0);
	json_object_put(rlog);
	job_free(refused);
	f.conf.migrate.with_local_disks = 1;
	/* local-lvm exists on pve2: the disk is copied to the same storage id */
	struct job *j = migrate(&f, "db1", wf_migrate_params("pve2", NULL, 0, 0, false), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	job_free(j);
	/* fast exists on pve1 only: mapped */
	j = migrate(&f, "fast1", wf_migrate_params("pve2", "fast:local-lvm", 0, 0, false), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_eq(var(j, "disk_bytes"), 1ll << 30);
	job_free(j);
	json_object *log = simproc_requests(&f.sp);
	json_object *r = find_request(log, "POST", "/nodes/pve1/qemu/101/migrate", 0);
	cr_assert_not_null(r);
	cr_expect_str_eq(param(r, "with-local-disks"), "1");
	cr_expect_null(param(r, "targetstorage"));
	r = find_request(log, "POST", "/nodes/pve1/qemu/102/migrate", 0);
	cr_assert_not_null(r);
	cr_expect_str_eq(param(r, "with-local-disks"), "1");
	cr_expect_str_eq(param(r, "targetstorage"), "fast:local-lvm");
	json_object_put(log);
	long status = 0;
	json_object *cfg = NULL;
	cr_assert_eq(sim_api(&f.sp, "GET", "/nodes/pve2/qemu/102/config", NULL, &status,
			     &cfg), 0);
	json_object *d = NULL;
	cr_assert_eq(status, 200);
	cr_assert(json_object_object_get_ex(cfg, "data", &d));
	cr_assert_not_null(json_str(d, "scsi0"));
	cr_expect(strncmp(json_str(d, "scsi0"), "local-lvm:", 10) == 0, "scsi0 %s",
		  json_str(d, "scsi0"));
	json_object_put(cfg);
	fx_stop(&f);
}

/* A snapshot holds db1's local LVM-thin disk: PVE 8 refuses to move it
 * (the simulator's task fails as QemuMigrate does); pvagent says so in
 * its plan with the qm line, sends no migration, and once the snapshot
 * is deleted the same migration runs. */
Test(migrate, local_disk_held_by_a_snapshot)
{
	struct migfx f;
	fx_start(&f, SCEN, true);
	struct guest_ref g = {0};
	struct pve_error e = {0};
	cr_assert_eq(guest_find_by_vmid(f.c, 101, &g, &e), 1, "%s", e.message ? e.message : "?");
	bool existed = false;
	cr_assert_eq(guest_snapshot(f.c, &g, "pvagent_virtio", NULL, &f.env.wait, &existed, &e), 0,
		     "%s", e.message ? e.message : "?");
	/* the simulator refuses as PVE does when asked anyway */
	long status = 0;
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&f.sp, "POST", "/nodes/pve1/qemu/101/migrate",
			     "target=pve2&online=1&with-local-disks=1", &status, &ans), 0);
	cr_assert_eq(status, 200);
	json_object *upid = NULL;
	cr_assert(json_object_object_get_ex(ans, "data", &upid));
	struct task_result tr;
	struct task_wait_opts w = {.clock = f.env.clock};
	cr_expect_eq(task_wait(f.c, json_object_get_string(upid), &w, &tr, &e), -1);
	task_result_free(&tr);
	cr_expect(e.detail && strstr(e.detail, "can't migrate local disk 'local-lvm:vm-101-disk-0': "
					       "online storage migration not possible if "
					       "non-replicated snapshot exists"),
		  "%s", e.detail ? e.detail : "(no log)");
	pve_error_clear(&e);
	json_object_put(ans);
	refused(&f, "db1", "pve2", NULL,
		"VM 101's local disk local-lvm:vm-101-disk-0 is held by its snapshot "
		"pvagent_virtio: PVE cannot move snapshots on lvmthin storage 'local-lvm' (and "
		"not at all while the VM runs); delete the snapshot (qm delsnapshot 101 "
		"pvagent_virtio)");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 1,
		     "only the test's own request");
	json_object_put(log);
	/* deleted: it goes */
	cr_assert_eq(guest_delete_snapshot(f.c, &g, "pvagent_virtio", &f.env.wait, NULL, &e), 0,
		     "%s", e.message ? e.message : "?");
	enum job_outcome o;
	struct job *j = migrate(&f, "db1", wf_migrate_params("pve2", NULL, 0, 0, false), &o);
	cr_expect_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	job_free(j);
	guest_ref_clear(&g);
	fx_stop(&f);
}

Test(migrate, qemu_offline)
{
	struct migfx f;
	fx_start(&f, SCEN, true);
	enum job_outcome o;
	struct job *j = migrate(&f, "cold1", wf_migrate_params("pve3", NULL, 0, 0, false), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_str_eq(json_str(job_vars(j), "method"), "offline");
	json_object *log = simproc_requests(&f.sp);
	json_object *r = find_request(log, "POST", "/nodes/pve1/qemu/107/migrate", 0);
	cr_assert_not_null(r);
	cr_expect_null(param(r, "online"));
	json_object_put(log);
	job_free(j);
	fx_stop(&f);
}

/* A container's restart migration; on 9.1 its own precondition is read
 * first (pve-container 6), on 8.4 there is none to read. */
static void lxc_restart(const char *ver)
{
	struct migfx f;
	fx_start_on(&f, ver);
	enum job_outcome o;
	struct job *j = migrate(&f, "ct1", wf_migrate_params("pve2", NULL, 0, 0, false), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_str_eq(json_str(job_vars(j), "method"), "restart");
	/* stop to running: the restart migration's length */
	cr_expect_geq(var(j, "downtime_ms"), 3000);
	json_object *log = simproc_requests(&f.sp);
	json_object *r = find_request(log, "POST", "/nodes/pve1/lxc/200/migrate", 0);
	cr_assert_not_null(r);
	cr_expect_str_eq(param(r, "restart"), "1");
	cr_expect_str_eq(param(r, "timeout"), "180");
	cr_expect_eq(simproc_count_requests(log, "GET", "/nodes/pve1/lxc/200/migrate", -1),
		     strcmp(ver, "9.1") == 0 ? 1 : 0);
	json_object_put(log);
	json_object *st = simproc_state(&f.sp);
	cr_expect_str_eq(sim_node_of(st, 200), "pve2");
	json_object_put(st);
	job_free(j);
	fx_stop(&f);
}

Test(migrate, lxc_restart_on_8_4)
{
	lxc_restart("8.4");
}

Test(migrate, lxc_restart_on_9_1)
{
	lxc_restart("9.1");
}

/* Through HA on PVE ver: the HA request's task, then the CRM's child. */
static void ha_managed_follows_the_child_task(const char *ver)
{
	struct migfx f;
	fx_start_on(&f, ver);
	enum job_outcome o;
	struct job *j = migrate(&f, "ha1", wf_migrate_params("pve2", NULL, 0, 0, false), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	long long via = 0;
	cr_expect(json_int(job_vars(j), "via_ha", &via) && via);
	cr_expect_not_null(json_str(job_vars(j), "child_upid"));
	cr_expect(strstr(json_str(job_vars(j), "child_upid"), ":qmigrate:106:root@pam:"));
	/* the child's figures, not the HA request's */
	cr_expect_eq(var(j, "downtime_ms"), 30 + (106 * 7) % 60);
	job_free(j);
	/* a container through HA too */
	j = migrate(&f, "hact1", wf_migrate_params("pve2", NULL, 0, 0, false), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect(strstr(json_str(job_vars(j), "child_upid"), ":vzmigrate:201:root@pam:"));
	job_free(j);
	json_object *st = simproc_state(&f.sp);
	cr_expect_str_eq(sim_node_of(st, 106), "pve2");
	cr_expect_str_eq(sim_node_of(st, 201), "pve2");
	json_object_put(st);
	fx_stop(&f);
}

Test(migrate, ha_managed_follows_the_child_task_on_8_4)
{
	ha_managed_follows_the_child_task("8.4");
}

Test(migrate, ha_managed_follows_the_child_task_on_9_1)
{
	ha_managed_follows_the_child_task("9.1");
}

/* The CRM migrates an HA VM with force, with-local-disks and online only
 * (pve-ha-manager Resources/PVEVM.pm): a storage map or a bandwidth limit
 * for ha1 is refused before anything is sent, unless force_ha, which
 * migrates it through HA without them (the request carries neither). */
Test(migrate, ha_storage_map_and_bwlimit_refused_unless_forced)
{
	struct migfx f;
	fx_start_on(&f, "9.1");
	refused(&f, "ha1", "pve2", "local-lvm", "it is HA-managed");
	enum job_outcome o;
	struct job *j = migrate(&f, "ha1", wf_migrate_params("pve2", NULL, 40, 0, false), &o);
	cr_expect_eq(o, JOB_OUT_USAGE, "outcome %s", job_outcome_name(o));
	cr_expect(job_error(j)->message &&
		  strstr(job_error(j)->message, "a bandwidth limit would not apply") &&
		  strstr(job_error(j)->message, "--force-ha"),
		  "%s", job_error(j)->message ? job_error(j)->message : "(none)");
	job_free(j);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 0, "nothing sent");
	json_object_put(log);
	json_object *params = wf_migrate_params("pve2", "local-lvm", 40, 0, false);
	cr_assert_not_null(params);
	json_object_object_add(params, "force_ha", json_object_new_boolean(1));
	j = migrate(&f, "ha1", params, &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_eq(var(j, "via_ha"), 1);
	job_free(j);
	log = simproc_requests(&f.sp);
	json_object *req = find_request(log, "POST", "/nodes/pve1/qemu/106/migrate", 0);
	cr_assert_not_null(req, "the HA request");
	cr_expect_null(param(req, "bwlimit"));
	cr_expect_null(param(req, "targetstorage"));
	json_object_put(log);
	json_object *st = simproc_state(&f.sp);
	cr_expect_str_eq(sim_node_of(st, 106), "pve2");
	json_object_put(st);
	fx_stop(&f);
}

/* The same through the command line: `--bwlimit` for ha1 exits 2 naming
 * --force-ha and sends no migration; with --force-ha it migrates through
 * HA and says what HA leaves out. */
Test(migrate, cli_force_ha)
{
	struct simproc sim;
	struct simcli w;
	simcli_start(&w, &sim, SCEN, "[migrate]\nprobe_port = 1\n");
	char *out = NULL;
	cr_expect_eq(simcli_pv(&w, &out, "migrate", "ha1", "pve2", "--bwlimit", "40", NULL), 2,
		     "%s", out);
	cr_expect(strstr(out, "it is HA-managed") && strstr(out, "--force-ha"), "%s", out);
	free(out);
	json_object *log = simproc_requests(&sim);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 0, "nothing sent");
	json_object_put(log);
	cr_expect_eq(simcli_pv(&w, &out, "migrate", "ha1", "pve2", "--bwlimit", "40", "--force-ha",
			       NULL), 0, "%s", out);
	cr_expect(strstr(out, "HA migrates it without a bandwidth limit (--force-ha)"), "%s", out);
	free(out);
	json_object *st = simproc_state(&sim);
	cr_expect_str_eq(sim_node_of(st, 106), "pve2");
	json_object_put(st);
	simcli_free(&w);
}

/* PVE 9 HA rules: tiny1 (vm:109, on pve2) and ha1 (vm:106) kept apart; a
 * disarmed HA stack. */
#define HA9_APART "{\"pve_version\": \"9.1\", \"guests\": {\"109\": {\"node\": \"pve2\"}}, " \
	"\"ha\": [{\"sid\": \"vm:109\"}], \"ha_rules\": [{\"rule\": \"apart\", \"type\": " \
	"\"resource-affinity\", \"resources\": \"vm:106,vm:109\", \"affinity\": \"negative\"}]%s}"

/* Start on HA9_APART with extra top-level keys. */
static void start_ha9(struct migfx *f, const char *extra)
{
	char changes[512];
	snprintf(changes, sizeof changes, HA9_APART, extra);
	cr_assert_eq(migfx_start_with(f, SCEN, changes, true), 0, "simulator did not start");
}

/* No migration was asked of PVE; then guest name goes to target. */
static void nothing_sent_then(struct migfx *f, const char *name, const char *target)
{
	json_object *log = simproc_requests(&f->sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 0);
	json_object_put(log);
	enum job_outcome o;
	struct job *j = migrate(f, name, wf_migrate_params(target, NULL, 0, 0, false), &o);
	cr_expect_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	job_free(j);
}

/* Negative affinity on the target is refused in the plan with the rule
 * named, nothing sent; another node is fine. */
Test(migrate, ha9_negative_affinity_refused_in_plan)
{
	struct migfx f;
	start_ha9(&f, "");
	refused(&f, "ha1", "pve2", NULL,
		"HA resource vm:109 on node 'pve2' is in negative affinity with VM 106 (a "
		"resource-affinity HA rule): choose another node, or change the rule (ha-manager "
		"rules config)");
	nothing_sent_then(&f, "ha1", "pve3");
	fx_stop(&f);
}

/* A disarmed HA stack takes the request and never runs it: pvagent reads
 * the armed state first and fails at once with the reason, sending no
 * migration (not after the 300 s wait for a child task). */
Test(migrate, ha9_disarmed_fails_fast)
{
	struct migfx f;
	start_ha9(&f, ", \"ha_disarm\": \"freeze\"");
	double t0 = pve_clock_now(f.env.clock);
	refused(&f, "ha1", "pve3", NULL,
		"the HA stack is disarmed (resource mode freeze): PVE takes the migration request "
		"of HA guest VM 106 and never carries it out; re-arm HA first (ha-manager "
		"crm-command arm-ha)");
	cr_expect_lt(pve_clock_now(f.env.clock) - t0, 5.0, "within seconds");
	/* a guest HA does not manage migrates as ever */
	nothing_sent_then(&f, "web1", "pve3");
	fx_stop(&f);
}

/* PVE counts an HA resource in state "ignored", and every one while HA is
 * disarmed in "ignore" mode, as unmanaged (pve-ha-manager Config.pm
 * $service_check_ha_state): status/current says managed 0 and the
 * migration is a plain qmigrate, no hamigrate. */
static void ha9_unmanaged_migrates_directly(const char *changes, const char *name, int vmid)
{
	struct migfx f;
	fx_start_changed(&f, changes);
	enum job_outcome o;
	struct job *j = migrate(&f, name, wf_migrate_params("pve3", NULL, 0, 0, false), &o);
	cr_expect_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_eq(var(j, "via_ha"), 0);
	job_free(j);
	json_object *st = simproc_state(&f.sp);
	cr_expect_str_eq(sim_node_of(st, vmid), "pve3");
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "GET", "/cluster/ha/rules", -1), 0,
		     "not HA-managed: no HA reads");
	json_object_put(log);
	fx_stop(&f);
}

Test(migrate, ha9_ignored_migrates_directly)
{
	ha9_unmanaged_migrates_directly("{\"pve_version\": \"9.1\", \"ha\": [{\"sid\": "
					"\"vm:107\", \"state\": \"ignored\"}]}", "cold1", 107);
}

Test(migrate, ha9_disarmed_in_ignore_mode_migrates_directly)
{
	ha9_unmanaged_migrates_directly("{\"pve_version\": \"9.1\", \"ha_disarm\": \"ignore\"}",
					"ha1", 106);
}

/* A strict node-affinity rule (GET /cluster/ha/rules, read once with the
 * HA status and resources) keeps ha1 on pve1 and pve2: pve3 is refused in
 * the plan, nothing sent; pve2 goes through HA. */
Test(migrate, ha9_strict_node_affinity_refused_in_plan)
{
	struct migfx f;
	fx_start_changed(&f, "{\"pve_version\": \"9.1\", \"ha_rules\": [{\"rule\": "
				      "\"keep\", \"type\": \"node-affinity\", \"resources\": "
				      "\"vm:106\", \"nodes\": \"pve1,pve2\", \"strict\": 1}]}");
	refused(&f, "ha1", "pve3", NULL,
		"the strict node-affinity HA rule 'keep' keeps VM 106 on pve1,pve2: the CRM would "
		"move it off 'pve3' again at once");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "GET", "/cluster/ha/rules", -1), 1);
	cr_expect_eq(simproc_count_requests(log, "GET", "/cluster/ha/resources", -1), 1);
	cr_expect_eq(simproc_count_requests(log, "GET", "/cluster/ha/status/current", -1), 1);
	json_object_put(log);
	nothing_sent_then(&f, "ha1", "pve2");
	fx_stop(&f);
}

/* An HA container's downtime is its whole absence: the CRM's LRM shuts it
 * down (vzshutdown), migrates it offline and the target's LRM starts it
 * (vzstart) later; pvagent waits for that start and measures from the
 * shutdown's start to the start's end, as PVE's task list gives them,
 * which is longer than the vzmigrate task it follows. */
Test(migrate, ha_ct_downtime_spans_shutdown_to_start)
{
	struct migfx f;
	fx_start_on(&f, "9.1");
	enum job_outcome o;
	struct job *j = migrate(&f, "hact1", wf_migrate_params("pve2", NULL, 0, 0, false), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_str_eq(json_str(job_vars(j), "method"), "restart");
	cr_expect(strstr(json_str(job_vars(j), "child_upid"), ":vzmigrate:201:root@pam:"));
	long long sd_start = -1, up_end = -1;
	static const char *const where[][2] = {{"pve1", "vzshutdown"}, {"pve2", "vzstart"}};
	for (int k = 0; k < 2; k++) {
		struct pve_params q = {0};
		struct pve_error e = {0};
		json_object *d = NULL;
		pve_params_add_int(&q, "vmid", 201);
		pve_params_add(&q, "typefilter", where[k][1]);
		pve_params_add(&q, "source", "all");
		cr_assert_eq(pve_getf(f.c, &d, &q, &e, "/nodes/%s/tasks", where[k][0]), 0, "%s",
			     e.message ? e.message : "");
		pve_params_free(&q);
		cr_assert_eq(json_object_array_length(d), 1, "one %s", where[k][1]);
		json_object *t = json_object_array_get_idx(d, 0);
		cr_expect_str_eq(json_str(t, "user"), "root@pam", "HA's LRM");
		json_int(t, k ? "endtime" : "starttime", k ? &up_end : &sd_start);
		json_object_put(d);
	}
	cr_assert_gt(up_end, sd_start);
	cr_expect_eq(var(j, "downtime_ms"), (up_end - sd_start) * 1000,
		     "from the shutdown to the start");
	cr_expect_gt(var(j, "downtime_ms"), var(j, "duration_s") * 1000 + 3000,
		     "more than the migration task");
	json_object *st = simproc_state(&f.sp);
	cr_expect_str_eq(sim_node_of(st, 201), "pve2");
	cr_expect_str_eq(json_str(sim_guest(st, 201), "status"), "running");
	json_object_put(st);
	job_free(j);
	fx_stop(&f);
}

/* pvagent's power calls on an HA-managed container: PVE answers with a
 * hastop/hastart task that ends before the LRM acts; the calls return
 * once the container shows the state asked for. */
Test(migrate, ha_managed_ct_shutdown_and_start_wait_for_the_lrm)
{
	struct migfx f;
	fx_start(&f, SCEN, true);
	struct pve_error e = {0};
	struct guest_ref g = {0};
	cr_assert_eq(guest_find(f.c, "hact1", &g, &e), 1, "%s", e.message ? e.message : "");
	cr_assert_str_eq(g.status, "running");
	bool forced = true;
	cr_assert_eq(guest_shutdown(f.c, &g, &f.env.wait, &forced, &e), 0, "%s",
		     e.message ? e.message : "");
	cr_expect_str_eq(g.status, "stopped", "returned once the LRM stopped it");
	cr_expect_not(forced);
	cr_assert_eq(guest_start(f.c, &g, &f.env.wait, &e), 0, "%s", e.message ? e.message : "");
	cr_expect_str_eq(g.status, "running", "returned once the LRM started it");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/lxc/201/status/shutdown", -1), 1,
		     "one request each: the HA task's quick end is not a failure to retry");
	cr_expect_eq(simproc_count_requests(log, "POST", "*/lxc/201/status/start", -1), 1);
	json_object_put(log);
	json_object *st = simproc_state(&f.sp), *cl = NULL, *tasks = NULL;
	cr_expect_str_eq(json_str(sim_guest(st, 201), "status"), "running");
	/* through HA: the requests' tasks, then the LRM's own as root@pam */
	json_object_object_get_ex(st, "cluster", &cl);
	json_object_object_get_ex(cl, "tasks", &tasks);
	int ha = 0, lrm = 0;
	for (size_t i = 0; tasks && i < json_object_array_length(tasks); i++) {
		const char *type = json_str(json_object_array_get_idx(tasks, i), "type");
		const char *user = json_str(json_object_array_get_idx(tasks, i), "user");
		ha += type && (!strcmp(type, "hastop") || !strcmp(type, "hastart"));
		lrm += type && user && !strcmp(user, "root@pam") &&
		       (!strcmp(type, "vzshutdown") || !strcmp(type, "vzstart"));
	}
	cr_expect_eq(ha, 2, "hastop and hastart");
	cr_expect_eq(lrm, 2, "the LRM's vzshutdown and vzstart");
	json_object_put(st);
	guest_ref_clear(&g);
	fx_stop(&f);
}

Test(migrate, max_downtime_set_and_put_back)
{
	struct migfx f;
	fx_start(&f, SCEN, true);
	enum job_outcome o;
	struct job *j = migrate(&f, "web1", wf_migrate_params("pve2", NULL, 0, 50, false), &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	json_object *log = simproc_requests(&f.sp);
	json_object *set = find_request(log, "PUT", "/nodes/pve1/qemu/100/config", 0);
	cr_assert_not_null(set);
	cr_expect_str_eq(param(set, "migrate_downtime"), "0.050");
	json_object *back = find_request(log, "PUT", "/nodes/pve2/qemu/100/config", 0);
	cr_assert_not_null(back, "the limit was not put back on the target");
	cr_expect_str_eq(param(back, "delete"), "migrate_downtime");
	json_object_put(log);
	long status = 0;
	json_object *cfg = NULL, *d = NULL;
	cr_assert_eq(sim_api(&f.sp, "GET", "/nodes/pve2/qemu/100/config", NULL, &status,
			     &cfg), 0);
	cr_assert_eq(status, 200);
	cr_assert(json_object_object_get_ex(cfg, "data", &d));
	cr_assert_not_null(json_str(d, "name"));
	cr_expect_null(json_str(d, "migrate_downtime"));
	json_object_put(cfg);
	job_free(j);
	fx_stop(&f);
}

Test(migrate, dry_run_sends_nothing)
{
	struct migfx f;
	fx_start(&f, SCEN, true);
	enum job_outcome o;
	struct job *j = migrate(&f, "db1", wf_migrate_params("pve2", NULL, 0, 0, true), &o);
	cr_assert_eq(o, JOB_OUT_DONE);
	cr_expect_str_eq(json_str(job_vars(j), "method"), "online");
	long long wl = 0;
	cr_expect(json_int(job_vars(j), "with_local_disks", &wl) && wl);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 0);
	json_object_put(log);
	job_free(j);
	fx_stop(&f);
}

/* ---- OpenVZ on PVE 3 ------------------------------------------------------------------ */

Test(migrate, openvz_online_on_pve3)
{
	struct migfx f;
	fx_start(&f, PVE3, true);
	enum job_outcome o;
	json_object *p = wf_migrate_params("pve2", NULL, 0, 0, false);
	/* nothing listens there: the probe finds no gap and says so */
	json_object_object_add(p, "address", json_object_new_string("127.0.1.229"));
	struct job *j = migrate(&f, "ct101", p, &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_str_eq(json_str(job_vars(j), "method"), "online");
	cr_expect_geq(var(j, "duration_s"), 1);
	long long probed = 1;
	cr_expect(json_int(job_vars(j), "probed", &probed) && !probed);
	json_object *log = simproc_requests(&f.sp);
	json_object *r = find_request(log, "POST", "/nodes/pve1/openvz/101/migrate", 0);
	cr_assert_not_null(r);
	cr_expect_str_eq(param(r, "online"), "1");
	json_object_put(log);
	json_object *st = simproc_state(&f.sp);
	cr_expect_str_eq(sim_node_of(st, 101), "pve2");
	json_object_put(st);
	job_free(j);
	fx_stop(&f);
}

/* ---- the downtime clients see -------------------------------------------------------- */

Test(migrate, probe_gap_is_the_simulated_downtime, .timeout = 60)
{
	struct migfx f;
	fx_start(&f, SCEN, false); /* real time: the probe measures real gaps */
	enum job_outcome o;
	json_object *p = wf_migrate_params("pve2", NULL, 0, 0, false);
	json_object_object_add(p, "probe_port", json_object_new_int64(sim_port(&f, 109)));
	struct job *j = migrate(&f, "tiny1", p, &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	long long sim = 30 + (109 * 7) % 60;
	cr_expect_eq(var(j, "downtime_ms"), sim);
	long long gap = var(j, "probe_gap_ms");
	cr_expect(gap >= sim - 20 && gap <= sim + 20, "probe saw %lld ms, the simulator %lld ms",
		  gap, sim);
	/* and the guest answers on the target afterwards */
	size_t n = 0;
	const struct store_step *steps = job_steps(j, &n);
	cr_assert_geq(n, 4);
	cr_expect(steps[3].result && strstr(steps[3].result, "running on pve2, answers on its port"),
		  "verify: %s", steps[3].result ? steps[3].result : "(none)");
	job_free(j);
	fx_stop(&f);
}

/* ---- interrupted and resumed: the task is waited for, never sent twice ------------ */

static volatile sig_atomic_t stop_flag;

static void stop_on_progress(void *ctx, const struct job_event *ev)
{
	(void)ctx;
	if (ev->kind == JOB_EV_PROGRESS && !job_event_is_start(ev) && ev->step &&
	    strcmp(ev->step, "migrate") == 0)
		stop_flag = 1;
}

Test(migrate, interrupted_then_resumed_reattaches, .timeout = 120)
{
	struct migfx f;
	fx_start(&f, SCEN, true);
	char dir[] = "/tmp/test_migrate.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *path = NULL, *err = NULL;
	cr_assert_gt(asprintf(&path, "%s/state.db", dir), 0);
	struct store *st = NULL;
	cr_assert_eq(store_open(path, &st, &err), 0, "%s", err ? err : "?");
	job_env_fini(&f.env);
	f.env.store = st;
	f.env.stop = &stop_flag;
	f.env.on_event = stop_on_progress;
	cr_assert_eq(job_env_init(&f.env), 0);
	/* the first run stops at the first progress line of the migration */
	struct job *j = NULL;
	struct pve_error e = {0};
	json_object *p = wf_migrate_params("pve2", NULL, 0, 0, false);
	cr_assert_eq(job_for_subject(&f.env, &wf_migrate, "web1", p, &j, &e), 0);
	cr_assert_eq(job_run(j, f.c), JOB_OUT_INTERRUPTED);
	long long id = job_id(j);
	job_free(j);
	/* the second run of the same request resumes that job */
	stop_flag = 0;
	f.env.on_event = NULL;
	j = NULL;
	cr_assert_eq(job_for_subject(&f.env, &wf_migrate, "web1", p, &j, &e), 0);
	json_object_put(p);
	cr_expect_eq(job_id(j), id);
	cr_assert_eq(job_run(j, f.c), JOB_OUT_DONE,
		     "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect(job_resumed(j));
	cr_expect_eq(var(j, "downtime_ms"), 30 + (100 * 7) % 60);
	job_free(j);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 1,
		     "the migration was sent twice");
	json_object_put(log);
	json_object *state = simproc_state(&f.sp);
	cr_expect_str_eq(sim_node_of(state, 100), "pve2");
	json_object_put(state);
	job_env_fini(&f.env);
	f.env.store = NULL;
	f.env.stop = NULL;
	cr_assert_eq(job_env_init(&f.env), 0);
	store_close(st);
	char *cmd = NULL;
	cr_assert_gt(asprintf(&cmd, "rm -rf '%s'", dir), 0);
	cr_expect_eq(system(cmd), 0);
	free(cmd);
	free(path);
	fx_stop(&f);
}

/* ---- a target runs out of memory --------------------------------------------------- */

Test(migrate, memory_held_by_an_incoming_migration_counts)
{
	struct migfx f;
	fx_start(&f, SCEN, true);
	enum job_outcome o;
	/* pve3 (8 GiB) has room for mid1 (5 GiB + the 1 GiB reserve) */
	struct job *j = migrate(&f, "mid1", wf_migrate_params("pve3", NULL, 0, 0, true), &o);
	cr_expect_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	job_free(j);
	/* while web1 (2 GiB) migrates there, it has not */
	long status = 0;
	json_object *r = NULL;
	cr_assert_eq(sim_api(&f.sp, "POST", "/nodes/pve1/qemu/100/migrate", "target=pve3&online=1",
			     &status, &r), 0);
	cr_assert_eq(status, 200);
	json_object_put(r);
	j = migrate(&f, "mid1", wf_migrate_params("pve3", NULL, 0, 0, false), &o);
	cr_expect_eq(o, JOB_OUT_USAGE);
	cr_expect(job_error(j)->message &&
		  strstr(job_error(j)->message, "not enough free memory on node 'pve3': 5120 MiB free"),
		  "%s", job_error(j)->message ? job_error(j)->message : "");
	job_free(j);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "/nodes/pve1/qemu/110/migrate", -1), 0);
	json_object_put(log);
	fx_stop(&f);
}

/* ---- a rolling upgrade: nodes on different PVE versions -------------------------- */

/* pve1 on 9.1.2 (the node the client talks to), pve2 still on 8.4. */
#define MIXED "{\"pve_version\": \"9.1\", \"nodes\": {\"pve1\": {\"version\": \"9.1.2\"}, " \
	      "\"pve2\": {\"version\": \"8.4\"}}}"

/* The client reads the cluster's version and each node's once, from the
 * node it talks to (a token's login already did) and from GET
 * /nodes/{node}/version. */
Test(migrate, versions_read_once_per_client)
{
	struct migfx f;
	cr_assert_eq(migfx_start_with(&f, SCEN, MIXED, true), 0, "simulator did not start");
	const struct pve_version *v = NULL, *v2 = NULL, *again = NULL;
	struct pve_error e = {0};
	/* a token's login asks GET /version: its answer is kept */
	cr_assert_eq(pve_login(f.c, &e), 0, "%s", e.message ? e.message : "?");
	cr_assert_eq(pve_version(f.c, &v, &e), 0, "%s", e.message ? e.message : "?");
	cr_expect_eq(v->major, 9);
	cr_expect_eq(v->minor, 1);
	cr_expect_eq(v->patch, 2);
	cr_expect_str_eq(v->version, "9.1.2");
	cr_expect_str_eq(v->release, "9.1");
	cr_assert_eq(pve_node_version(f.c, "pve2", &v2, &e), 0, "%s", e.message ? e.message : "?");
	cr_expect_str_eq(v2->version, "8.4.1");
	cr_expect_lt(pve_version_cmp(v2, v), 0);
	cr_assert_eq(pve_node_version(f.c, "pve3", &again, &e), 0);
	cr_expect_str_eq(again->version, "9.1.1", "the scenario's pve_version");
	cr_assert_eq(pve_node_version(f.c, "pve2", &again, &e), 0);
	cr_expect_eq(again, v2, "cached, and still valid after more nodes were asked");
	cr_assert_eq(pve_version(f.c, &again, &e), 0);
	int major = 0;
	cr_assert_eq(guest_pve_major(f.c, &major, &e), 0);
	cr_expect_eq(major, 9);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "GET", "/version", -1), 1);
	cr_expect_eq(simproc_count_requests(log, "GET", "/nodes/pve2/version", -1), 1);
	json_object_put(log);
	cr_expect_eq(pve_node_version(f.c, "pve9", &again, &e), -1, "no such node");
	pve_error_clear(&e);
	fx_stop(&f);
}

/* pve1 on 9.1.2 runs QEMU 10.1 (web1: pc-i440fx-10.1+pve0), pve2 on 8.4 QEMU
 * 9.2; pinned1 is pinned to pc-i440fx-8.1 (shared disk, stopped until the
 * test starts it: a start on 9.1 keeps the pinned type). */
#define MIXED_PINNED \
	"{\"pve_version\": \"9.1\", \"nodes\": {\"pve1\": {\"version\": \"9.1.2\"}, " \
	"\"pve2\": {\"version\": \"8.4\"}}, \"guests\": [{\"vmid\": 120, \"node\": " \
	"\"pve1\", \"type\": \"qemu\", \"status\": \"running\", \"config\": {\"name\": " \
	"\"pinned1\", \"memory\": \"512\", \"machine\": \"pc-i440fx-8.1\", \"scsi0\": " \
	"\"shared:vm-120-disk-0,size=1G\"}}]}"

#define TOO_OLD "Installed QEMU version '9.2' is too old to run machine type " \
	"'pc-i440fx-10.1+pve0', please upgrade node 'pve2'"

/* PVE refuses nothing by version: the target's QEMU must run the machine
 * type the VM runs (qemu-server config_to_command on the target). Judged
 * from GET /nodes/pve2/capabilities/qemu/machines: web1, unpinned on 9.1,
 * runs pc-i440fx-10.1+pve0, which pve2's QEMU 9.2 cannot: refused with
 * qemu-server's words in the dry run and the real run, nothing sent; the
 * simulator's own migration task fails with qemu-server's message (the
 * request sent by hand); pinned1, pinned to pc-i440fx-8.1, moves live to
 * the older node; a stopped VM moves offline; the 9.1 node takes web1. */
Test(migrate, machine_type_decides_a_live_migration_to_an_older_node)
{
	struct migfx f;
	fx_start_changed(&f, MIXED_PINNED);
	enum job_outcome o;
	struct job *j = migrate(&f, "web1", wf_migrate_params("pve2", NULL, 0, 0, true), &o);
	cr_expect_eq(o, JOB_OUT_USAGE, "dry run: %s", job_outcome_name(o));
	cr_expect(job_error(j)->message && strstr(job_error(j)->message, TOO_OLD), "%s",
		  job_error(j)->message ? job_error(j)->message : "(none)");
	job_free(j);
	refused(&f, "web1", "pve2", NULL, TOO_OLD);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 0);
	cr_expect_eq(simproc_count_requests(log, "GET", "/nodes/pve2/capabilities/qemu/machines",
					     -1), 2, "once per run");
	json_object_put(log);
	/* PVE's own answer: the task fails with qemu-server's message */
	long status = 0;
	json_object *r = NULL;
	cr_assert_eq(sim_api(&f.sp, "POST", "/nodes/pve1/qemu/100/migrate", "target=pve2&online=1",
			     &status, &r), 0);
	cr_assert_eq(status, 200);
	json_object *upid = NULL;
	cr_assert(json_object_object_get_ex(r, "data", &upid));
	struct pve_error e = {0};
	cr_expect_eq(guest_wait_task(f.c, json_object_get_string(upid), "migrate", &f.env.wait, NULL,
				     &e), -1, "the migration task fails");
	pve_error_clear(&e);
	char *tl = NULL;
	cr_expect_eq(task_log_tail(f.c, json_object_get_string(upid), 50, &tl, &e), 0);
	cr_expect(tl && strstr(tl, "[pve2] Installed QEMU version '9.2.0' is too old to run "
				   "machine type 'pc-i440fx-10.1+pve0', please upgrade node 'pve2'"),
		  "%s", tl ? tl : "(no log)");
	free(tl);
	pve_error_clear(&e);
	json_object_put(r);
	json_object *st = simproc_state(&f.sp);
	cr_expect_str_eq(sim_node_of(st, 100), "pve1", "still on pve1");
	json_object_put(st);
	/* pinned to an old type: live to the older node */
	j = migrate(&f, "pinned1", wf_migrate_params("pve2", NULL, 0, 0, false), &o);
	cr_expect_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_str_eq(json_str(job_vars(j), "method"), "online");
	job_free(j);
	j = migrate(&f, "cold1", wf_migrate_params("pve2", NULL, 0, 0, false), &o);
	cr_expect_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_str_eq(json_str(job_vars(j), "method"), "offline");
	job_free(j);
	j = migrate(&f, "web1", wf_migrate_params("pve3", NULL, 0, 0, false), &o);
	cr_expect_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_expect_str_eq(json_str(job_vars(j), "method"), "online");
	job_free(j);
	fx_stop(&f);
}

/* The machine types cannot be read (403 on the capabilities, as a PVE
 * without the endpoint): the versions' rule decides, as before. */
Test(migrate, without_machine_types_the_versions_decide)
{
	struct migfx f;
	fx_start_changed(&f, "{\"pve_version\": \"9.1\", \"nodes\": {\"pve1\": "
				      "{\"version\": \"9.1.2\"}, \"pve2\": {\"version\": "
				      "\"8.4\"}}, \"faults\": [{\"path\": \"/capabilities/qemu/"
				      "machines$\", \"action\": \"status\", \"status\": 403, "
				      "\"message\": \"Permission check failed\"}]}");
	refused(&f, "web1", "pve2", NULL,
		"node 'pve2' runs PVE 8.4.1, older than 9.1.2 on 'pve1': Proxmox only guarantees "
		"live migration to a node at least as new as the source; shut VM 100 down to "
		"migrate it offline, choose an upgraded node, or wait until 'pve2' is upgraded");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", -1), 0);
	cr_expect_eq(simproc_count_requests(log, "GET", "/nodes/pve2/version", -1), 1);
	json_object_put(log);
	fx_stop(&f);
}

/* PVE 9: a qcow2 disk with snapshots moves offline on a plain directory
 * storage, but not on one that keeps snapshots as a volume chain
 * (qemu-server QemuMigrate scan_local_volumes): refused in the plan, as
 * the simulator's task would fail. */
Test(migrate, qcow2_snapshots_on_a_volume_chain_storage)
{
	struct migfx f;
	cr_assert_eq(migfx_start_with(
			     &f, SCEN,
			     "{\"pve_version\": \"9.1\", \"storages\": [{\"id\": \"chain\", \"type\": "
			     "\"dir\", \"content\": \"images\", \"snapshot_as_volume_chain\": true}, "
			     "{\"id\": \"qdir\", \"type\": \"dir\", \"content\": \"images\"}], "
			     "\"guests\": [{\"vmid\": 111, \"node\": \"pve1\", \"type\": \"qemu\", "
			     "\"status\": \"stopped\", \"config\": {\"name\": \"chain1\", \"memory\": "
			     "\"512\", \"scsi0\": \"chain:111/vm-111-disk-0.qcow2,size=1G\"}}, "
			     "{\"vmid\": 112, \"node\": \"pve1\", \"type\": \"qemu\", \"status\": "
			     "\"stopped\", \"config\": {\"name\": \"qcow1\", \"memory\": \"512\", "
			     "\"scsi0\": \"qdir:112/vm-112-disk-0.qcow2,size=1G\"}}]}",
			     true), 0, "simulator did not start");
	struct pve_error e = {0};
	for (int vmid = 111; vmid <= 112; vmid++) {
		struct guest_ref g = {0};
		bool existed = false;
		cr_assert_eq(guest_find_by_vmid(f.c, vmid, &g, &e), 1, "%s", e.message ? e.message : "?");
		cr_assert_eq(guest_snapshot(f.c, &g, "before", NULL, &f.env.wait, &existed, &e), 0,
			     "%s", e.message ? e.message : "?");
		guest_ref_clear(&g);
	}
	refused(&f, "chain1", "pve2", NULL,
		"VM 111's qcow2 disk chain:111/vm-111-disk-0.qcow2 has snapshots, which storage "
		"'chain' keeps as a volume chain (snapshot-as-volume-chain): PVE cannot migrate "
		"those; delete the snapshot (qm delsnapshot 111 before), or keep the disk on shared "
		"storage");
	nothing_sent_then(&f, "qcow1", "pve2");
	/* PVE itself refuses the first */
	long status = 0;
	json_object *ans = NULL, *upid = NULL;
	cr_assert_eq(sim_api(&f.sp, "POST", "/nodes/pve1/qemu/111/migrate", "target=pve2", &status,
			     &ans), 0);
	cr_assert_eq(status, 200);
	cr_assert(json_object_object_get_ex(ans, "data", &upid));
	struct task_result tr;
	struct task_wait_opts w = {.clock = f.env.clock};
	cr_expect_eq(task_wait(f.c, json_object_get_string(upid), &w, &tr, &e), -1);
	task_result_free(&tr);
	cr_expect(e.detail && strstr(e.detail, "non-migratable snapshot exists"), "%s",
		  e.detail ? e.detail : "(no log)");
	pve_error_clear(&e);
	json_object_put(ans);
	fx_stop(&f);
}
