/* test_virtio_faults.c - issue 9's fault matrix for `pvagent virtio`
 * (agent/wf_virtio.c): a FreeBSD 9.0 guest behind a real sshd (convworld.h)
 * whose every state-changing request of the conversion gets every fault
 * kind (faultkinds.h), once: the preflight start of a stopped guest, the
 * snapshot, the shutdown, the two config changes (the IDE devices out, the
 * virtio ones in; synchronous PUTs, no task), the start on virtio, and,
 * for a guest that does not boot on virtio (its fstab broken at the
 * switch), the rollback's stop, its two config changes and its start.
 * Each case asserts: the outcome as pvagent(1) EXIT STATUS documents it (0
 * converted and up; 1 back on its original config and files, up; 3 with
 * what is left said and the job kept), the guest never left with both or
 * neither bus, no request effective (status 200) twice in a row (the same
 * method, path and parameters with no other change between), and a rerun
 * that converges (converted, exit 0). The fault must have fired, or the
 * case tested nothing.
 *
 * cli_kill: the real pvagent (PVAGENT_BIN) killed with SIGKILL while the
 * simulator holds back the answer to each of those requests, then the
 * same command again: resumed, converted, no request effective twice.
 *
 * Guests on 127.0.6.0/24. PVE waits of the in-process runs take
 * simulated time (simclock.h); SSH waits real time. */
#include "clirun.h"
#include "convworld.h"
#include "faultkinds.h"
#include "json.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FIXTURE "freebsd-9.0"
#define DISK "local-lvm:vm-190-disk-0,size=16G"
/* The verify (and rollback) SSH wait of a run whose guest does not boot
 * on virtio: long enough for a guest that boots to answer, as the rerun
 * that resumes its job needs (a resumed job keeps its params). */
#define ROLLBACK_VERIFY_S 5
#define MAC "BC:24:11:00:01:90"

static struct conv_world live;
static pid_t child = -1;

static void cleanup(void)
{
	test_kill(&child);
	conv_world_cleanup(&live);
}

TestSuite(virtio_faults, .fini = cleanup, .timeout = 300);
TestSuite(cli_kill, .fini = cleanup, .timeout = 300);

/* A state-changing request of the conversion: the nth request of method
 * on a path matching rx. */
struct vreq {
	const char *what;
	const char *method, *rx;
	int nth;
	bool rollback; /* the guest does not boot on virtio: a request of the rollback */
	bool stopped;  /* the guest is stopped before the conversion */
};

static const struct vreq vreqs[] = {
	{"preflight start", "POST", "/qemu/190/status/start$", 1, false, true},
	{"snapshot", "POST", "/qemu/190/snapshot$", 1, false, false},
	{"shutdown", "POST", "/qemu/190/status/shutdown$", 1, false, false},
	{"config delete", "PUT", "/qemu/190/config$", 1, false, false},
	{"config set", "PUT", "/qemu/190/config$", 2, false, false},
	{"start", "POST", "/qemu/190/status/start$", 1, false, false},
	{"rollback stop", "POST", "/qemu/190/status/stop$", 1, true, false},
	{"rollback config delete", "PUT", "/qemu/190/config$", 3, true, false},
	{"rollback config set", "PUT", "/qemu/190/config$", 4, true, false},
	{"rollback start", "POST", "/qemu/190/status/start$", 2, true, false},
};

static void world(const char *addr, bool stopped, const char *const *sim_args)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (sshd with ChrootDirectory)");
	const char *sim = getenv("PVESIM_BIN");
	if (access(sim ? sim : "build/san/pvesim", X_OK) < 0)
		cr_skip_test("no simulator binary (make build/san/pvesim)");
	struct conv_world_opts o = {
		.fixture = FIXTURE,
		.addr = addr,
		.status = stopped ? "stopped" : NULL,
		.sim_args = sim_args,
		.timeout_ms = FAULT_KINDS_CLIENT_TIMEOUT_MS,
		.keep_pristine = true,
	};
	cr_assert_eq(conv_world_start(&live, &o), 0, "the world did not start on %s", addr);
}

/* ---- what a case asserts -------------------------------------------------------------- */

static bool eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

enum gstate { G_CONVERTED, G_ORIGINAL, G_MIXED };

/* A string member of a run's result (wf_virtio_result_json), "-" when
 * absent or null. */
static const char *member(json_object *r, const char *key)
{
	const char *v = json_str(r, key);
	return v ? v : "-";
}

/* The guest's PVE config: converted, original, or anything else (which
 * *desc, malloc'd, describes). */
static enum gstate guest_config(char **desc)
{
	char *ide0 = conv_world_config(&live, "ide0"), *v0 = conv_world_config(&live, "virtio0");
	char *net0 = conv_world_config(&live, "net0"), *boot = conv_world_config(&live, "boot");
	char *unused = conv_world_config(&live, "unused0");
	enum gstate s = G_MIXED;
	if (!ide0 && eq(v0, DISK) && eq(net0, "virtio=" MAC ",bridge=vmbr0") &&
	    eq(boot, "order=virtio0;net0") && !unused)
		s = G_CONVERTED;
	else if (eq(ide0, DISK) && !v0 && eq(net0, "e1000=" MAC ",bridge=vmbr0") &&
		 eq(boot, "order=ide0;net0") && !unused)
		s = G_ORIGINAL;
	*desc = strprintf("ide0=%s virtio0=%s net0=%s boot=%s unused0=%s", ide0 ? ide0 : "-",
			  v0 ? v0 : "-", net0 ? net0 : "-", boot ? boot : "-",
			  unused ? unused : "-");
	free(ide0);
	free(v0);
	free(net0);
	free(boot);
	free(unused);
	return s;
}

static bool guest_up(void)
{
	char *st = conv_world_boot(&live);
	bool up = eq(st, "up");
	free(st);
	return up;
}

static bool guest_stopped(void)
{
	char *st = conv_world_boot(&live);
	bool stopped = eq(st, "stopped");
	free(st);
	return stopped;
}

/* The guest's files the conversion changes are the fixture's own. */
static void expect_original_files(const char *ctx)
{
	static const char *const files[] = {"/etc/fstab", "/etc/rc.conf", "/boot/loader.conf"};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		char *want = NULL, *have = NULL;
		char *p = strprintf("tests/guests/" FIXTURE "/root%s", files[i]);
		int wr = read_file(p, &want, NULL);
		int hr = guestenv_read(&live.ge, files[i], &have);
		cr_expect(wr == hr && (wr < 0 || strcmp(want, have) == 0),
			  "%s: %s is not the original:\n%s", ctx, files[i], have ? have : "(absent)");
		free(want);
		free(have);
		free(p);
	}
}

/* The UPIDs of guest 190's tasks that failed. */
static json_object *failed_tasks(void)
{
	long st = 0;
	json_object *b = NULL, *d = NULL;
	cr_assert_eq(sim_api(&live.sp, "GET",
			     "/nodes/pve1/tasks?vmid=190&errors=1&limit=100000", NULL,
			     &st, &b),
		     0);
	cr_assert_eq(st, 200);
	cr_assert(json_object_object_get_ex(b, "data", &d));
	json_object *upids = json_object_new_object();
	for (size_t i = 0; i < json_object_array_length(d); i++) {
		json_object *u = NULL;
		if (json_object_object_get_ex(json_object_array_get_idx(d, i), "upid", &u))
			json_object_object_add(upids, json_object_get_string(u), NULL);
	}
	json_object_put(b);
	return upids;
}

/* No state-changing request of the agent effective twice in a row: the
 * same method, path and parameters as the effective one before, with no
 * change by the admin (ADMIN_TOKEN, the test by hand) between. Effective:
 * status 200 (what the request did, whatever answer got through) and not
 * a task that failed. */
static void expect_none_twice(const char *ctx)
{
	json_object *log = simproc_requests(&live.sp), *failed = failed_tasks();
	cr_assert_not_null(log);
	char *last = NULL;
	for (size_t i = 0; i < json_object_array_length(log); i++) {
		json_object *r = json_object_array_get_idx(log, i), *v;
		const char *m = json_object_object_get_ex(r, "method", &v) ? json_object_get_string(v)
									    : "";
		int st = json_object_object_get_ex(r, "status", &v) ? json_object_get_int(v) : 0;
		const char *upid = json_object_object_get_ex(r, "upid", &v) && v
					   ? json_object_get_string(v)
					   : NULL;
		const char *who = json_object_object_get_ex(r, "userid", &v) && v
					  ? json_object_get_string(v)
					  : "";
		if (strcmp(m, "GET") == 0 || st != 200 ||
		    (upid && json_object_object_get_ex(failed, upid, NULL)))
			continue;
		if (strcmp(who, live.sp.token_id) != 0) {
			/* the admin changed something between */
			free(last);
			last = NULL;
			continue;
		}
		json_object *path = NULL, *params = NULL;
		json_object_object_get_ex(r, "path", &path);
		json_object_object_get_ex(r, "params", &params);
		char *key = strprintf("%s %s %s", m, json_object_get_string(path),
				      json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN));
		cr_expect(!last || strcmp(last, key) != 0, "%s: effective twice: %s", ctx, key);
		free(last);
		last = key;
	}
	free(last);
	json_object_put(log);
	json_object_put(failed);
}

/* How often the first fault rule fired. */
static int fired(void)
{
	json_object *st = simproc_state(&live.sp), *f = NULL, *v = NULL;
	int n = -1;
	if (st && json_object_object_get_ex(st, "faults", &f) && json_object_array_length(f) &&
	    json_object_object_get_ex(json_object_array_get_idx(f, 0), "fired", &v))
		n = json_object_get_int(v);
	json_object_put(st);
	return n;
}

static void clear_faults(void)
{
	long st = 0;
	cr_assert_eq(sim_http(&live.sp, "DELETE", "/_sim/fault", NULL, NULL, NULL, &st, NULL), 0);
	cr_assert_eq(st, 200);
}

/* The rerun converges: converted, the guest up. */
static void expect_rerun_converges(const char *ctx)
{
	clear_faults();
	live.hook = NULL;
	cr_assert_geq(conv_world_fix_root(&live), 0);
	json_object *r = NULL;
	int rc = conv_world_run(&live, CONVERT_BUS_BLK, false, 0, &r);
	cr_assert_neq(rc, -2, "%s: the rerun did not start", ctx);
	const char *status = member(r, "status");
	cr_expect_eq(rc, 0, "%s: the rerun: %s at %s: %s\n%s\nevents:\n%s", ctx, status,
		     member(r, "failed_step"), member(r, "error"), member(r, "recovery"),
		     sbuf_str(&live.events));
	cr_expect(strcmp(status, "converted") == 0 || strcmp(status, "already-virtio") == 0,
		  "%s: rerun %s", ctx, status);
	json_object_put(r);
	char *desc = NULL;
	cr_expect_eq(guest_config(&desc), G_CONVERTED, "%s: after the rerun: %s", ctx, desc);
	free(desc);
	cr_expect(guest_up(), "%s: the guest is up after the rerun", ctx);
	cr_expect_eq(conv_world_open_job(&live), 0, "%s: no job left open", ctx);
}

static void one_case(const struct vreq *q, const struct fault_kind *k, bool first)
{
	if (!first)
		cr_assert_eq(conv_world_reset(&live), 0, "reset before %s %s", q->what, k->name);
	char *ctx = strprintf("%s / %s", q->what, k->name);
	char *rule = fault_rule(q->method, q->rx, q->nth, k);
	cr_assert_eq(simproc_fault(&live.sp, rule), 0, "%s", rule);
	free(rule);
	if (q->rollback)
		live.hook = conv_world_break_root_hook;
	json_object *r = NULL;
	/* a guest that does not boot on virtio: verify waits ROLLBACK_VERIFY_S
	 * for it; the rerun that resumes the job keeps that (its params) */
	int rc = conv_world_run(&live, CONVERT_BUS_BLK, false, q->rollback ? ROLLBACK_VERIFY_S : 0,
				&r);
	cr_assert_neq(rc, -2, "%s: the run did not start", ctx);
	enum job_outcome out;
	cr_assert_eq(job_outcome_parse(member(r, "outcome"), &out), 0, "%s: outcome %s", ctx,
		     member(r, "outcome"));
	cr_assert_eq(rc, out == JOB_OUT_DONE ? 0 : -1, "%s: exit as the outcome says", ctx);
	cr_assert_geq(fired(), 1, "%s: the fault never fired:\n%s", ctx, sbuf_str(&live.events));
	char *desc = NULL;
	enum gstate gs = guest_config(&desc);
	const char *why = json_str(r, "error") ? json_str(r, "error") : "";
	switch (out) {
	case JOB_OUT_DONE: /* exit 0 */
		cr_expect_str_eq(member(r, "status"), "converted", "%s", ctx);
		cr_expect_eq(gs, G_CONVERTED, "%s: done (exit 0) but %s", ctx, desc);
		cr_expect(guest_up(), "%s: done (exit 0) but the guest is not up", ctx);
		break;
	case JOB_OUT_FAILED: /* exit 1: nothing left half-done */
		cr_expect_eq(gs, G_ORIGINAL, "%s: failed (exit 1: %s) but %s\nevents:\n%s", ctx, why,
			     desc, sbuf_str(&live.events));
		/* up, or, untouched, stopped as it was */
		cr_expect(guest_up() || (q->stopped && guest_stopped()),
			  "%s: failed (exit 1: %s) and the guest is not up", ctx, why);
		expect_original_files(ctx);
		cr_expect_eq(conv_world_open_job(&live), 0, "%s: exit 1 keeps no job", ctx);
		break;
	case JOB_OUT_NEEDS_ATTENTION: /* exit 3: says what is left, the job stays */
		cr_expect(json_str(r, "recovery") || strstr(why, "left"), "%s: exit 3 without saying what is "
							     "left: %s", ctx, why);
		cr_expect_neq(gs, G_MIXED, "%s: exit 3 with %s", ctx, desc);
		cr_expect_eq(conv_world_open_job(&live), 1, "%s: exit 3 keeps the job", ctx);
		break;
	default:
		cr_expect_fail("%s: outcome %s (%s): not one pvagent(1) EXIT STATUS documents for this", ctx,
			       job_outcome_name(out), why);
	}
	cr_log_info("%s: %s (%s)", ctx, job_outcome_name(out), why);
	free(desc);
	json_object_put(r);
	expect_none_twice(ctx);
	expect_rerun_converges(ctx);
	expect_none_twice(ctx);
	free(ctx);
}

static void matrix(size_t qi, const char *addr)
{
	const struct vreq *q = &vreqs[qi];
	world(addr, q->stopped, NULL);
	for (size_t k = 0; k < n_fault_kinds; k++)
		one_case(q, &fault_kinds[k], k == 0);
	cr_assert_eq(conv_world_stop(&live), 0, "the simulator did not exit cleanly");
}

Test(virtio_faults, preflight_start) { matrix(0, "127.0.6.10"); }
Test(virtio_faults, snapshot) { matrix(1, "127.0.6.11"); }
Test(virtio_faults, shutdown) { matrix(2, "127.0.6.12"); }
Test(virtio_faults, config_delete) { matrix(3, "127.0.6.13"); }
Test(virtio_faults, config_set) { matrix(4, "127.0.6.14"); }
Test(virtio_faults, start) { matrix(5, "127.0.6.15"); }
Test(virtio_faults, rollback_stop) { matrix(6, "127.0.6.16"); }
Test(virtio_faults, rollback_config_delete) { matrix(7, "127.0.6.17"); }
Test(virtio_faults, rollback_config_set) { matrix(8, "127.0.6.18"); }
Test(virtio_faults, rollback_start) { matrix(9, "127.0.6.19"); }

/* ---- SIGKILL of the command-line tool ------------------------------------------------- */

/* pvagent.conf for the world's simulator and guest; its path. */
static char *cli_conf(void)
{
	const char *etc = live.ge.sd.etc;
	char *tdir = strprintf("%s/templates", etc), *secret = strprintf("%s/token.secret", etc);
	char *conf = strprintf("%s/pvagent.conf", etc);
	cr_assert(tdir && secret && conf);
	cr_assert(mkdir(tdir, 0755) == 0 || errno == EEXIST);
	char *text = strprintf("%s\n", live.sp.token_secret);
	cr_assert_eq(test_write_file(secret, text, 0600), 0);
	free(text);
	text = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			 "fingerprint = %s\nnode = pve1\ntimeout = 3\n"
			 "[ssh]\nuser = root\nidentity = %s\nknown_hosts = %s\n"
			 "host_key_policy = strict\ntimeout = 10s\nport = %d\n"
			 "[paths]\ntemplates = %s\nstate = %s\n",
			 live.sp.url, live.sp.token_id, secret, live.sp.fingerprint,
			 live.ge.sd.identity, live.ge.known_hosts, live.ge.sd.port, tdir, live.state);
	cr_assert_eq(test_write_file(conf, text, 0600), 0);
	free(text);
	free(tdir);
	free(secret);
	return conf;
}

/* `pvagent -c CONF virtio g190 --address A --timeout S` in the background. */
static pid_t virtio_bg(const char *bin, const char *conf, const char *timeout, const char *out)
{
	const char *argv[] = {bin, "-c", conf, "virtio", "g190", "--address", live.ge.sd.addr,
			      "--timeout", timeout, NULL};
	pid_t pid = test_spawn(argv, out);
	cr_assert_geq(pid, 0);
	return pid;
}

/* Wait (bounded, 60 s) until fault rule i has fired: its request is in
 * the simulator, its answer held back. */
static void wait_fired(size_t i, const char *out)
{
	for (int n = 0; n < 3000; n++) {
		json_object *st = simproc_state(&live.sp), *f = NULL, *v = NULL;
		int k = 0;
		if (st && json_object_object_get_ex(st, "faults", &f) &&
		    i < json_object_array_length(f) &&
		    json_object_object_get_ex(json_object_array_get_idx(f, i), "fired", &v))
			k = json_object_get_int(v);
		json_object_put(st);
		if (k > 0)
			return;
		int status;
		if (waitpid(child, &status, WNOHANG) == child) {
			child = -1;
			char *text = NULL;
			read_file(out, &text, NULL);
			cr_assert_fail("pvagent ended before fault %zu fired:\n%s", i, text ? text : "");
		}
		struct timespec ts = {0, 20L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling a state, bounded */
	}
	cr_assert_fail("fault %zu never fired", i);
}

#define HOLD "\"action\":\"delay\",\"ms\":1500"

static void killed_after(size_t qi, const char *addr)
{
	const struct vreq *q = &vreqs[qi];
	static const char *const fast[] = {"--time-scale", "100", NULL};
	world(addr, q->stopped, fast);
	const char *bin = getenv("PVAGENT_BIN") ? getenv("PVAGENT_BIN") : "build/san/pvagent";
	if (access(bin, X_OK) < 0)
		cr_skip_test("no pvagent binary (make build/san/pvagent)");
	char *conf = cli_conf();
	char *out_path = strprintf("%s/virtio.out", live.ge.sd.etc);
	static const struct fault_kind hold = {"hold", HOLD};
	char *rule = fault_rule(q->method, q->rx, q->nth, &hold);
	cr_assert_eq(simproc_fault(&live.sp, rule), 0, "%s", rule);
	free(rule);
	if (q->rollback) {
		/* the start on virtio held back while the test breaks the
		 * guest's fstab: it stops at mountroot, the rollback runs */
		rule = fault_rule("POST", "/qemu/190/status/start$", 1, &hold);
		cr_assert_eq(simproc_fault(&live.sp, rule), 0, "%s", rule);
		free(rule);
	}
	child = virtio_bg(bin, conf, q->rollback ? "2" : "20", out_path);
	if (q->rollback) {
		wait_fired(1, out_path);
		cr_assert_eq(conv_world_break_root(&live), 0);
	}
	wait_fired(0, out_path);
	test_kill(&child);
	clear_faults();
	cr_assert_geq(conv_world_fix_root(&live), 0);
	char *out = NULL;
	int rc = test_pvagent(bin, conf, &out, "virtio", "g190", "--address", live.ge.sd.addr,
			      "--timeout", "20", NULL);
	cr_assert_neq(rc, -2, "sanitizer report:\n%s", out);
	cr_expect_eq(rc, 0, "rerun after SIGKILL at %s:\n%s", q->what, out);
	cr_expect(strstr(out, "resumed"), "the rerun resumed the killed job:\n%s", out);
	free(out);
	char *desc = NULL;
	cr_expect_eq(guest_config(&desc), G_CONVERTED, "%s: after the rerun: %s", q->what, desc);
	free(desc);
	cr_expect(guest_up(), "%s: the guest is up after the rerun", q->what);
	expect_none_twice(q->what);
	free(conf);
	free(out_path);
	cr_assert_eq(conv_world_stop(&live), 0, "the simulator did not exit cleanly");
}

Test(cli_kill, preflight_start) { killed_after(0, "127.0.6.30"); }
Test(cli_kill, snapshot) { killed_after(1, "127.0.6.31"); }
Test(cli_kill, shutdown) { killed_after(2, "127.0.6.32"); }
Test(cli_kill, config_delete) { killed_after(3, "127.0.6.33"); }
Test(cli_kill, config_set) { killed_after(4, "127.0.6.34"); }
Test(cli_kill, start) { killed_after(5, "127.0.6.35"); }
Test(cli_kill, rollback_stop) { killed_after(6, "127.0.6.36"); }
Test(cli_kill, rollback_config_delete) { killed_after(7, "127.0.6.37"); }
Test(cli_kill, rollback_config_set) { killed_after(8, "127.0.6.38"); }
Test(cli_kill, rollback_start) { killed_after(9, "127.0.6.39"); }
