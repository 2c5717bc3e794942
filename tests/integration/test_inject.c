/* test_inject.c - `pvagent inject` (agent/inject.*) against real sshd
 * chroots of the fixture guests (tests/support/guestenv.*): OS detection of
 * every fixture, --dry-run diffs with the tree untouched, apply keeping
 * owner, mode and one backup, a second run unchanged, hostile template
 * values written literally and never executed, a guest whose sshd dies
 * between two files, a read-only directory, the stand-in commands; plus
 * the pure text transforms. Each test has its own 127.0.1.N address.
 * Run from the repository root, as root. */
#include "inject.h"
#include "guestenv.h"
#include "simproc.h"
#include "sshd.h"
#include "tmpl.h"
#include "util.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

/* The test's guest; the suite's fini stops it even when an assertion ends
 * the test early (each test runs in its own process). */
static struct guestenv ge;
static char *immutable; /* host path made immutable by a test */

static void set_immutable(const char *path, bool on)
{
	const char *argv[] = {"chattr", on ? "+i" : "-i", path, NULL};
	char *out = NULL;
	int rc = test_run(argv, NULL, &out);
	if (rc != 0)
		fprintf(stderr, "chattr %s %s: %s\n", on ? "+i" : "-i", path, out ? out : "");
	free(out);
	if (on)
		cr_assert_eq(rc, 0, "chattr +i needs a file system with attributes");
}

static void cleanup(void)
{
	if (immutable) {
		set_immutable(immutable, false);
		free(immutable);
		immutable = NULL;
	}
	guestenv_stop(&ge);
}

TestSuite(inject, .fini = cleanup, .timeout = 120);
TestSuite(inject_text);

/* ---- helpers ------------------------------------------------------------------ */

static void start(const char *fixture, const char *addr)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (sshd with ChrootDirectory)");
	struct guestenv_opts o = {.fixture = fixture, .addr = addr};
	cr_assert_eq(guestenv_start(&ge, &o), 0, "cannot start guest %s (see stderr)", fixture);
}

/* Load a template from text and expand it for guest name (plus K=V vars). */
static void make_inst(const char *text, const char *name, const char *const *vars,
		      struct tmpl_inst *inst)
{
	char *path = strprintf("%s/test.tmpl", ge.sd.etc);
	cr_assert_not_null(path);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fputs(text, f) < 0, 0);
	cr_assert_eq(fclose(f), 0);
	struct tmpl *t = NULL;
	char *err = NULL;
	cr_assert_eq(tmpl_load_file(path, &t, &err), 0, "%s", err);
	struct tmpl_kvlist v = {0};
	cr_assert_eq(tmpl_kvlist_set(&v, "name", name), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "vmid", "120"), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "node", "pve1"), 0);
	for (size_t i = 0; vars && vars[i]; i++)
		cr_assert_eq(tmpl_var_arg(&v, vars[i], &err), 0, "%s", err);
	cr_assert_eq(tmpl_expand(t, &v, inst, &err), 0, "%s", err);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
	free(path);
}

/* What the events said. */
struct cap {
	struct sbuf diffs;    /* every JOB_EV_DIFF text */
	struct sbuf steps;    /* "step;" per JOB_EV_STEP */
	size_t written;       /* JOB_EV_PROGRESS "written" of write */
	size_t kill_after;    /* > 0: kill the sshd sessions after this many writes */
	bool pause;           /* ... and stop the listener too */
	size_t tamper_after;  /* > 0: after this many writes, change tamper_path */
	const char *tamper_path;
};

static void on_event(void *ctx, const struct job_event *ev)
{
	struct cap *c = ctx;
	switch (ev->kind) {
	case JOB_EV_DIFF:
		cr_assert_eq(sbuf_add(&c->diffs, ev->text), 0);
		break;
	case JOB_EV_STEP:
		cr_assert_eq(sbuf_addf(&c->steps, "%s;", ev->step), 0);
		break;
	case JOB_EV_PROGRESS:
		if (strcmp(ev->step, "write") == 0 && ev->text &&
		    strcmp(ev->text, "written") == 0) {
			c->written++;
			if (c->kill_after && c->written == c->kill_after) {
				if (c->pause)
					cr_assert_eq(guestenv_pause(&ge), 0);
				else
					cr_assert_gt(sshd_kill_sessions(&ge.sd), 0);
			}
			if (c->tamper_after && c->written == c->tamper_after)
				cr_assert_eq(guestenv_write(&ge, c->tamper_path, "tampered\n", 0644), 0);
		}
		break;
	default:
		break;
	}
}

static void cap_free(struct cap *c)
{
	sbuf_free(&c->diffs);
	sbuf_free(&c->steps);
}

/* An event of a phase that ended, as the inject workflow's step event. */
static void phase_done(const struct inject_request *q, const struct inject_result *res,
		       const char *phase, const char *text)
{
	char *own = text ? NULL : inject_phase_summary(phase, res);
	struct job_event ev = {.kind = JOB_EV_STEP, .step = phase, .text = text ? text : own,
			       .percent = -1};
	if (q->on_event)
		q->on_event(q->event_ctx, &ev);
	free(own);
}

/* inject's phases (inject.c) as the inject workflow's steps run them
 * (wf_inject.c): the host name checked, connect with so, detect, read, plan, then, unless a dry
 * run or nothing changes, write and verify, and the rollback after a
 * failed write or verify. These tests are of the phases and the editor
 * (gfedit.c); the workflow's own running of them is tested through up
 * (test_up: up's inject job, its rollback and its resume) and pvagent
 * inject (test_cli_inject). 0 done, -1 failed (res->ed says how); *res
 * filled either way. */
static int phases(const struct inject_request *q, const struct ssh_opts *so,
		  struct inject_result *res)
{
	memset(res, 0, sizeof *res);
	res->ed.on_event = q->on_event;
	res->ed.event_ctx = q->event_ctx;
	struct ssh_session *s = NULL;
	struct ssh_error se = {0};
	bool own = false;
	int rc = -1;
	char *herr = NULL;
	if (q->name && inject_check_hostname(q->name, &herr) < 0) {
		gfedit_fail(&res->ed, "plan", NULL, NULL, "%s", herr ? herr : "bad host name");
		res->ed.outcome = JOB_OUT_USAGE;
		free(herr);
		goto out;
	}
	if (ssh_connect(so, &s, &se) < 0) {
		gfedit_fail(&res->ed, "connect", NULL, &se, "%s", "");
		ssh_error_clear(&se);
		goto out;
	}
	own = true;
	phase_done(q, res, "connect", ssh_session_target(s));
	if (inject_detect(q, s, res) < 0)
		goto out;
	phase_done(q, res, "detect", NULL);
	if (inject_collect(q, res) < 0 || gfedit_read(&res->ed, s) < 0)
		goto out;
	phase_done(q, res, "read", NULL);
	if (inject_plan(q, res) < 0)
		goto out;
	phase_done(q, res, "plan", NULL);
	rc = 0;
	if (q->dry_run || res->ed.n_changed == 0)
		goto out;
	if (gfedit_write(&res->ed, s) == 0) {
		phase_done(q, res, "write", NULL);
		if (gfedit_verify(&res->ed, s) == 0) {
			phase_done(q, res, "verify", NULL);
			goto out;
		}
	}
	rc = -1;
	gfedit_restore(&res->ed, &s, &own, so);
out:
	inject_result_finish(res, q, rc);
	if (own)
		ssh_close(s);
	return rc;
}

static int run(const char *name, const struct tmpl_inst *inst, bool dry, struct cap *c,
	       struct inject_result *res)
{
	struct ssh_opts so = guestenv_ssh_opts(&ge);
	struct inject_request req = {
		.name = name,
		.inst = inst,
		.dry_run = dry,
		.on_event = c ? on_event : NULL,
		.event_ctx = c,
	};
	return phases(&req, &so, res);
}

static char *guest_text(const char *path)
{
	char *t = NULL;
	cr_assert_eq(guestenv_read(&ge, path, &t), 0, "cannot read %s in the guest", path);
	return t;
}

static void expect_text(const char *path, const char *want)
{
	char *t = guest_text(path);
	cr_expect_str_eq(t, want, "%s", path);
	free(t);
}

static void expect_contains(const char *path, const char *needle)
{
	char *t = guest_text(path);
	cr_expect(strstr(t, needle) != NULL, "%s lacks '%s':\n%s", path, needle, t);
	free(t);
}

static const struct gfile *file_of(const struct inject_result *r, const char *path)
{
	for (size_t i = 0; i < r->ed.n_files; i++)
		if (strcmp(r->ed.files[i].path, path) == 0)
			return &r->ed.files[i];
	return NULL;
}

/* ---- detection ------------------------------------------------------------------ */

static void detect(const char *fixture, const char *addr, enum os_family fam, const char *id,
		   int major, int minor, const char *version)
{
	start(fixture, addr);
	struct inject_result r;
	int rc = run(NULL, NULL, true, NULL, &r);
	cr_assert_eq(rc, 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_DRY_RUN);
	cr_expect_eq(r.guest.os.family, fam);
	cr_expect_str_eq(r.guest.os.id, id);
	cr_expect_eq(r.guest.os.major, major);
	cr_expect_eq(r.guest.os.minor, minor);
	cr_expect_str_eq(r.guest.os.version, version);
	cr_expect(r.guest.have_profile, "no profile for %s", fixture);
	cr_expect_eq(r.ed.n_files, 0);
	cr_expect_not_null(os_facts_get(&r.guest.facts, "uname -sr"));
	if (fam == OS_FREEBSD)
		cr_expect_null(os_facts_get(&r.guest.facts, "lsb_release -a"),
			       "a missing command gives no fact");
	else
		cr_expect_null(os_facts_get(&r.guest.facts, "freebsd-version -k"));
	inject_result_free(&r);
}

Test(inject, detect_freebsd_90)
{
	detect("freebsd-9.0", "127.0.1.30", OS_FREEBSD, "freebsd", 9, 0, "9.0-RELEASE");
}
Test(inject, detect_freebsd_10)
{
	detect("freebsd-10", "127.0.1.31", OS_FREEBSD, "freebsd", 10, 0, "10.0-RELEASE");
}
Test(inject, detect_freebsd_14)
{
	detect("freebsd-14", "127.0.1.32", OS_FREEBSD, "freebsd", 14, 1, "14.1-RELEASE-p5");
}
Test(inject, detect_freebsd_14_zfs)
{
	detect("freebsd-14-zfs", "127.0.1.33", OS_FREEBSD, "freebsd", 14, 1, "14.1-RELEASE");
}
Test(inject, detect_ubuntu_904_from_lsb_release)
{
	detect("ubuntu-9.04", "127.0.1.34", OS_LINUX, "ubuntu", 9, 4, "9.04");
}
Test(inject, detect_ubuntu_1204)
{
	detect("ubuntu-12.04", "127.0.1.35", OS_LINUX, "ubuntu", 12, 4, "12.04");
}
Test(inject, detect_ubuntu_2404)
{
	detect("ubuntu-24.04", "127.0.1.36", OS_LINUX, "ubuntu", 24, 4, "24.04");
}
/* the current releases, each behind its own sshd */
Test(inject, detect_current_releases)
{
	static const struct {
		const char *fx, *addr, *id, *version;
		enum os_family family;
		int major, minor;
	} t[] = {
		{"ubuntu-26.04", "127.0.1.37", "ubuntu", "26.04", OS_LINUX, 26, 4},
		{"debian-13", "127.0.1.38", "debian", "13", OS_LINUX, 13, 0},
		{"freebsd-15", "127.0.1.39", "freebsd", "15.0-RELEASE", OS_FREEBSD, 15, 0},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		detect(t[i].fx, t[i].addr, t[i].family, t[i].id, t[i].major, t[i].minor,
		       t[i].version);
		guestenv_stop(&ge);
	}
}

/* ---- dry run, apply, idempotence -------------------------------------------------- */

static const char bsd_tmpl[] =
	"[template]\nkind = qemu\nos = freebsd\nos_version = 9.0\n"
	"[source]\nclone = base\n[guest]\nuser = root\naddress = agent\n"
	"[rc.conf]\nhostname = \"${name}\"\nsshd_enable = \"YES\"\nifconfig_em0 = \"SYNCDHCP\"\n"
	"[loader.conf]\nautoboot_delay = \"3\"\nvirtio_load = \"YES\"\n"
	"[sysctl.conf]\nkern.ipc.somaxconn = 1024\n"
	"[file \"/etc/motd\"]\nline = Managed by pvagent\n";

Test(inject, dry_run_shows_diffs_and_changes_nothing)
{
	start("freebsd-9.0", "127.0.1.40");
	struct tmpl_inst inst;
	make_inst(bsd_tmpl, "web1", NULL, &inst);
	char *before = guestenv_snapshot(&ge);
	cr_assert_not_null(before);
	struct cap c = {0};
	struct inject_result r;
	cr_assert_eq(run("web1", &inst, true, &c, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_DRY_RUN);
	cr_expect_eq(r.ed.outcome, JOB_OUT_DONE);
	cr_expect_eq(r.ed.n_files, 4);
	cr_expect_eq(r.ed.n_changed, 4);
	cr_expect_eq(c.written, 0);
	const char *d = sbuf_str(&c.diffs);
	cr_expect(strstr(d, "--- a/etc/rc.conf\n+++ b/etc/rc.conf\n"), "%s", d);
	cr_expect(strstr(d, "-hostname=\"fbsd90.example.org\"\n-ifconfig_em0=\"DHCP\"\n"
			    "+hostname=\"web1\"\n+ifconfig_em0=\"SYNCDHCP\"\n"), "%s", d);
	cr_expect(strstr(d, "--- /dev/null\n+++ b/boot/loader.conf\n"), "%s", d);
	cr_expect(strstr(d, "+autoboot_delay=\"3\"\n+virtio_load=\"YES\"\n"), "%s", d);
	cr_expect(strstr(d, "+kern.ipc.somaxconn=1024\n"), "%s", d);
	cr_expect(strstr(d, "+Managed by pvagent\n"), "%s", d);
	cr_expect_str_eq(sbuf_str(&c.steps), "connect;detect;read;plan;");
	char *after = guestenv_snapshot(&ge);
	cr_expect_str_eq(after, before, "the dry run changed the guest");
	free(before);
	free(after);
	const struct gfile *rc = file_of(&r, "/etc/rc.conf");
	cr_assert_not_null(rc);
	cr_expect_str_eq(rc->why, "[rc.conf], hostname");
	cr_expect_eq(rc->state, GF_PENDING);
	char *sum = inject_result_summary(&r);
	cr_expect_str_eq(sum, "dry-run: FreeBSD 9.0-RELEASE: 4 of 4 files would change: "
			      "/etc/rc.conf, /boot/loader.conf, /etc/sysctl.conf, /etc/motd");
	free(sum);
	inject_result_free(&r);
	cap_free(&c);
	tmpl_inst_free(&inst);
}

Test(inject, apply_keeps_owner_mode_backup_once_then_unchanged)
{
	start("freebsd-9.0", "127.0.1.41");
	char *rcpath = guestenv_path(&ge, "/etc/rc.conf");
	cr_assert_not_null(rcpath);
	cr_assert_eq(chown(rcpath, 123, 45), 0);
	cr_assert_eq(chmod(rcpath, 0640), 0);
	char *orig = guest_text("/etc/rc.conf");
	struct tmpl_inst inst;
	make_inst(bsd_tmpl, "web1", NULL, &inst);
	struct cap c = {0};
	struct inject_result r;
	cr_assert_eq(run("web1", &inst, false, &c, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_CHANGED);
	cr_expect_eq(c.written, 4);
	cr_expect_str_eq(sbuf_str(&c.steps), "connect;detect;read;plan;write;verify;");
	inject_result_free(&r);
	cap_free(&c);

	expect_contains("/etc/rc.conf", "\nhostname=\"web1\"\n");
	expect_contains("/etc/rc.conf", "\nifconfig_em0=\"SYNCDHCP\"\n");
	expect_contains("/etc/rc.conf", "\nsshd_enable=\"YES\"\n");
	expect_contains("/etc/rc.conf", "# -- sysinstall generated deltas -- # Mon Jan 16 11:09:12 2012\n");
	expect_text("/boot/loader.conf", "autoboot_delay=\"3\"\nvirtio_load=\"YES\"\n");
	expect_text("/etc/sysctl.conf", "kern.ipc.somaxconn=1024\n");
	expect_text("/etc/motd", "Managed by pvagent\n");
	expect_text("/etc/rc.conf.pvagent.bak", orig);
	struct stat st;
	cr_assert_eq(stat(rcpath, &st), 0);
	cr_expect_eq(st.st_uid, 123);
	cr_expect_eq(st.st_gid, 45);
	cr_expect_eq(st.st_mode & 07777, 0640);
	char *bakpath = guestenv_path(&ge, "/etc/rc.conf.pvagent.bak");
	cr_assert_eq(stat(bakpath, &st), 0);
	cr_expect_eq(st.st_uid, 123);
	cr_expect_eq(st.st_mode & 07777, 0640);
	cr_expect(!guestenv_exists(&ge, "/boot/loader.conf.pvagent.bak"),
		  "a new file has no backup");

	/* second run: nothing to do, nothing written */
	char *snap1 = guestenv_snapshot(&ge);
	struct cap c2 = {0};
	cr_assert_eq(run("web1", &inst, false, &c2, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_UNCHANGED);
	cr_expect_eq(r.ed.n_changed, 0);
	cr_expect_eq(c2.written, 0);
	cr_expect_str_eq(sbuf_str(&c2.diffs), "");
	for (size_t i = 0; i < r.ed.n_files; i++)
		cr_expect_eq(r.ed.files[i].state, GF_UNCHANGED, "%s", r.ed.files[i].path);
	inject_result_free(&r);
	cap_free(&c2);
	char *snap2 = guestenv_snapshot(&ge);
	cr_expect_str_eq(snap2, snap1);

	/* another name: rc.conf changes again, the backup keeps the original */
	cr_assert_eq(run("web2", &inst, false, NULL, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_CHANGED);
	inject_result_free(&r);
	expect_contains("/etc/rc.conf", "\nhostname=\"web2\"\n");
	expect_text("/etc/rc.conf.pvagent.bak", orig);

	free(snap1);
	free(snap2);
	free(bakpath);
	free(rcpath);
	free(orig);
	tmpl_inst_free(&inst);
}

Test(inject, shipped_template_freebsd_90)
{
	start("freebsd-9.0", "127.0.1.42");
	struct tmpl *t = NULL;
	char *err = NULL;
	cr_assert_eq(tmpl_load_file("templates/freebsd-9.0.tmpl", &t, &err), 0, "%s", err);
	struct tmpl_kvlist v = {0};
	cr_assert_eq(tmpl_kvlist_set(&v, "name", "bsd9"), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "vmid", "120"), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "node", "pve1"), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "ip", ge.sd.addr), 0);
	struct tmpl_inst inst;
	cr_assert_eq(tmpl_expand(t, &v, &inst, &err), 0, "%s", err);
	struct ssh_opts so = guestenv_ssh_opts(&ge);
	struct inject_request req = {.name = "bsd9", .inst = &inst, .expect_os = t->os};
	struct inject_result r;
	cr_assert_eq(phases(&req, &so, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_CHANGED);
	cr_expect_eq(r.ed.n_files, 1);
	inject_result_free(&r);
	expect_contains("/etc/rc.conf", "\nhostname=\"bsd9\"\n");
	/* sshd_enable="YES" was already there: a single line */
	char *text = guest_text("/etc/rc.conf");
	char *first = strstr(text, "sshd_enable=");
	cr_expect(first && !strstr(first + 1, "sshd_enable="), "%s", text);
	free(text);
	tmpl_inst_free(&inst);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

Test(inject, shipped_template_ubuntu_904_dry_run_then_apply)
{
	start("ubuntu-9.04", "127.0.1.58");
	cr_assert_eq(guestenv_write(&ge, "/etc/sysctl.conf",
				    "# /etc/sysctl.conf\n#vm.swappiness = 60\nkernel.printk = 4 4 1 7\n",
				    0644), 0);
	struct tmpl *t = NULL;
	char *err = NULL;
	cr_assert_eq(tmpl_load_file("templates/ubuntu-9.04.tmpl", &t, &err), 0, "%s", err);
	struct tmpl_kvlist v = {0};
	cr_assert_eq(tmpl_kvlist_set(&v, "name", "jaunty1"), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "vmid", "121"), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "node", "pve1"), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "ip", ge.sd.addr), 0);
	struct tmpl_inst inst;
	cr_assert_eq(tmpl_expand(t, &v, &inst, &err), 0, "%s", err);
	/* what a user does: the options from pvagent.conf and the template */
	struct conf c = {0};
	c.ssh.user = "admin";
	c.ssh.identity = ge.sd.identity;
	c.ssh.known_hosts = ge.known_hosts;
	c.ssh.timeout = 10;
	struct ssh_opts so;
	cr_assert_eq(inject_ssh_opts(&c, &inst, inst.guest.ip.value, &so), 0);
	so.port = ge.sd.port; /* the test sshd is not on 22 */
	cr_expect_str_eq(so.user, "root", "[guest] user wins over [ssh] user");
	struct cap cp = {0};
	struct inject_request req = {.name = "jaunty1", .inst = &inst,
				     .expect_os = t->os, .dry_run = true,
				     .on_event = on_event, .event_ctx = &cp};
	char *before = guestenv_snapshot(&ge);
	struct inject_result r;
	cr_assert_eq(phases(&req, &so, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_DRY_RUN);
	cr_expect_eq(r.ed.n_changed, 3);
	inject_result_free(&r);
	cr_expect(strstr(sbuf_str(&cp.diffs), " #vm.swappiness = 60\n kernel.printk = 4 4 1 7\n"
					       "+vm.swappiness=10\n"), "%s", sbuf_str(&cp.diffs));
	char *after = guestenv_snapshot(&ge);
	cr_expect_str_eq(after, before);
	req.dry_run = false;
	cr_assert_eq(phases(&req, &so, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_CHANGED);
	inject_result_free(&r);
	expect_text("/etc/sysctl.conf",
		    "# /etc/sysctl.conf\n#vm.swappiness = 60\nkernel.printk = 4 4 1 7\nvm.swappiness=10\n");
	expect_text("/etc/hostname", "jaunty1\n");
	cr_assert_eq(phases(&req, &so, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_UNCHANGED);
	inject_result_free(&r);
	free(before);
	free(after);
	cap_free(&cp);
	tmpl_inst_free(&inst);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

Test(inject, linux_hostname_and_hosts)
{
	start("ubuntu-24.04", "127.0.1.43");
	struct cap c = {0};
	struct inject_result r;
	cr_assert_eq(run("db1", NULL, false, &c, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_CHANGED);
	cr_expect_eq(r.ed.n_files, 2);
	inject_result_free(&r);
	const char *d = sbuf_str(&c.diffs);
	cr_expect(strstr(d, "-ubuntu2404\n+db1\n"), "%s", d);
	cr_expect(strstr(d, "-127.0.1.1\tubuntu2404\n+127.0.1.1\tdb1\n"), "%s", d);
	cap_free(&c);
	expect_text("/etc/hostname", "db1\n");
	expect_contains("/etc/hosts", "127.0.0.1\tlocalhost\n127.0.1.1\tdb1\n\n# The following");
	expect_text("/etc/hostname.pvagent.bak", "ubuntu2404\n");
	cr_assert_eq(run("db1", NULL, false, NULL, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_UNCHANGED);
	char *sum = inject_result_summary(&r);
	cr_expect_str_eq(sum, "unchanged: Ubuntu 24.04.1 LTS: 2 files checked, nothing to change");
	free(sum);
	inject_result_free(&r);
}

Test(inject, template_for_other_os_refused_at_detect)
{
	start("freebsd-14", "127.0.1.44");
	char *before = guestenv_snapshot(&ge);
	struct ssh_opts so = guestenv_ssh_opts(&ge);
	struct inject_request req = {.name = "x1", .expect_os = "ubuntu"};
	struct inject_result r;
	cr_assert_eq(phases(&req, &so, &r), -1);
	cr_expect_eq(r.status, INJ_FAILED);
	cr_expect_str_eq(r.ed.failed_step, "detect");
	cr_expect_eq(r.ed.outcome, JOB_OUT_FAILED);
	cr_expect(strstr(r.ed.error, "detect: the template is for ubuntu but the guest runs FreeBSD 14.1"),
		  "%s", r.ed.error);
	inject_result_free(&r);
	char *after = guestenv_snapshot(&ge);
	cr_expect_str_eq(after, before);
	free(before);
	free(after);
}

/* ---- hostile values ------------------------------------------------------------------ */

Test(inject, hostile_values_written_literally_never_run)
{
	start("ubuntu-12.04", "127.0.1.45");
	static const char text[] =
		"[template]\nkind = qemu\nos = ubuntu\nos_version = 12.04\n"
		"[source]\nclone = base\n[guest]\nuser = root\naddress = agent\n"
		"[vars]\nmotd =\n"
		"[sysctl.conf]\nkernel.pvagent = $(touch /pwned-sysctl)\n"
		"[file \"/etc/pvagent/hostile.conf\"]\n"
		"line = $(touch /pwned)\n"
		"line = `touch /pwned-backtick`\n"
		"line = it's \"double\" and 'single'; touch /pwned-semicolon\n"
		"line = ${motd}\n"
		"line = $${literal} \\ backslash | pipe > /pwned-redirect\n";
	static const char *const vars[] = {"motd=x'$(touch /pwned-var)'\"`id`\"", NULL};
	struct tmpl_inst inst;
	make_inst(text, "h1", vars, &inst);
	/* the directory of the new file exists on the guest */
	char *dir = guestenv_path(&ge, "/etc/pvagent");
	cr_assert_eq(mkdir(dir, 0755), 0);
	struct inject_result r;
	cr_assert_eq(run("h1", &inst, false, NULL, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_CHANGED);
	inject_result_free(&r);
	expect_text("/etc/pvagent/hostile.conf",
		    "$(touch /pwned)\n"
		    "`touch /pwned-backtick`\n"
		    "it's \"double\" and 'single'; touch /pwned-semicolon\n"
		    "x'$(touch /pwned-var)'\"`id`\"\n"
		    "${literal} \\ backslash | pipe > /pwned-redirect\n");
	expect_text("/etc/sysctl.conf", "kernel.pvagent=$(touch /pwned-sysctl)\n");
	static const char *const pwned[] = {"/pwned", "/pwned-backtick", "/pwned-semicolon",
					    "/pwned-var", "/pwned-redirect", "/pwned-sysctl", NULL};
	for (size_t i = 0; pwned[i]; i++)
		cr_expect(!guestenv_exists(&ge, pwned[i]), "%s was created", pwned[i]);
	/* idempotent with hostile text too */
	cr_assert_eq(run("h1", &inst, false, NULL, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_UNCHANGED);
	inject_result_free(&r);
	free(dir);
	tmpl_inst_free(&inst);
}

Test(inject, newline_values_refused_before_inject)
{
	start("ubuntu-12.04", "127.0.1.46");
	char *path = strprintf("%s/nl.tmpl", ge.sd.etc);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_geq(fputs("[template]\nkind = qemu\nos = ubuntu\nos_version = 12.04\n"
			    "[source]\nclone = base\n[guest]\nuser = root\naddress = agent\n"
			    "[vars]\nx =\n[file \"/etc/x\"]\nline = ${x}\n", f), 0);
	cr_assert_eq(fclose(f), 0);
	struct tmpl *t = NULL;
	char *err = NULL;
	cr_assert_eq(tmpl_load_file(path, &t, &err), 0, "%s", err);
	struct tmpl_kvlist v = {0};
	cr_assert_eq(tmpl_kvlist_set(&v, "name", "n1"), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "vmid", "1"), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "node", "pve1"), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "x", "a\ntouch /pwned"), 0);
	struct tmpl_inst inst;
	cr_expect_eq(tmpl_expand(t, &v, &inst, &err), -1);
	cr_expect(err && strstr(err, "control character"), "%s", err ? err : "");
	free(err);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
	free(path);
	/* and a hostile guest name never gets near a file */
	struct inject_result r;
	cr_assert_eq(run("a\"$(touch /pwned)", NULL, false, NULL, &r), -1);
	cr_expect_eq(r.ed.outcome, JOB_OUT_USAGE);
	cr_expect(strstr(r.ed.error, "host name"), "%s", r.ed.error);
	inject_result_free(&r);
	cr_expect(!guestenv_exists(&ge, "/pwned"));
}

/* ---- failures and rollback -------------------------------------------------------------- */

static const char three_files[] =
	"[template]\nkind = qemu\nos = freebsd\nos_version = 9.0\n"
	"[source]\nclone = base\n[guest]\nuser = root\naddress = agent\n"
	"[rc.conf]\nsshd_enable = \"YES\"\nifconfig_vtnet0 = \"DHCP\"\n"
	"[loader.conf]\nvirtio_load = \"YES\"\n"
	"[file \"/etc/motd\"]\nline = hello\n";

Test(inject, sshd_dies_between_files_every_file_restored)
{
	start("freebsd-10", "127.0.1.47");
	struct tmpl_inst inst;
	make_inst(three_files, "k1", NULL, &inst);
	char *before = guestenv_snapshot(&ge);
	struct cap c = {.kill_after = 1};
	struct inject_result r;
	cr_assert_eq(run("k1", &inst, false, &c, &r), -1);
	cr_expect_eq(r.status, INJ_FAILED);
	cr_expect_eq(r.ed.outcome, JOB_OUT_FAILED);
	cr_expect_str_eq(r.ed.failed_step, "write");
	cr_expect_str_eq(r.ed.failed_path, "/boot/loader.conf");
	cr_expect(strstr(r.ed.error, "write /boot/loader.conf: file 2 of 3"), "%s", r.ed.error);
	cr_expect(strstr(r.ed.error, "every file written was restored"), "%s", r.ed.error);
	const struct gfile *f = file_of(&r, "/etc/rc.conf");
	cr_assert_not_null(f);
	cr_expect_eq(f->state, GF_RESTORED);
	cr_expect_eq(file_of(&r, "/boot/loader.conf")->state, GF_FAILED);
	cr_expect_eq(file_of(&r, "/etc/motd")->state, GF_PENDING);
	cr_expect(strstr(sbuf_str(&c.steps), "rollback;"), "%s", sbuf_str(&c.steps));
	json_object *j = inject_result_json(&r);
	cr_assert_not_null(j);
	json_object *v = NULL, *files = NULL;
	cr_expect(json_object_object_get_ex(j, "failed_step", &v) &&
		  strcmp(json_object_get_string(v), "write") == 0);
	cr_expect(json_object_object_get_ex(j, "outcome", &v) &&
		  strcmp(json_object_get_string(v), "failed") == 0);
	cr_assert(json_object_object_get_ex(j, "files", &files));
	cr_assert_eq(json_object_array_length(files), 3);
	cr_expect(json_object_object_get_ex(json_object_array_get_idx(files, 0), "state", &v) &&
		  strcmp(json_object_get_string(v), "restored") == 0);
	json_object_put(j);
	char *sum = inject_result_summary(&r);
	cr_expect(sum && strncmp(sum, "failed: write /boot/loader.conf", 31) == 0, "%s", sum);
	free(sum);
	inject_result_free(&r);
	char *after = guestenv_snapshot(&ge);
	cr_expect_str_eq(after, before, "the guest tree differs after the rollback");
	/* the guest is fine again: a new run applies everything */
	cr_assert_eq(run("k1", &inst, false, NULL, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_CHANGED);
	inject_result_free(&r);
	expect_text("/boot/loader.conf", "virtio_load=\"YES\"\n");
	free(before);
	free(after);
	cap_free(&c);
	tmpl_inst_free(&inst);
}

/* Kill the sshd sessions the moment a temp file of dir/base appears
 * (inotify: no polling). */
struct killer {
	int fd;
	int stop[2];    /* a byte on stop[1] ends the thread */
	const char *prefix;
	int killed;
};

static void *killer_main(void *arg)
{
	struct killer *k = arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		struct pollfd pf[2] = {{.fd = k->fd, .events = POLLIN},
				       {.fd = k->stop[0], .events = POLLIN}};
		if (poll(pf, 2, -1) < 0 || (pf[1].revents & POLLIN))
			return NULL;
		ssize_t n = read(k->fd, buf, sizeof buf);
		if (n <= 0)
			return NULL;
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			if (ev->len && strncmp(ev->name, k->prefix, strlen(k->prefix)) == 0) {
				k->killed = sshd_kill_sessions(&ge.sd);
				return NULL;
			}
			p += sizeof *ev + ev->len;
		}
	}
}

Test(inject, connection_lost_mid_write_no_temp_file_left)
{
	start("freebsd-14", "127.0.1.55");
	/* a big file, so that its write is under way when the guest dies */
	struct sbuf big = {0};
	for (int i = 0; i < 40000; i++)
		cr_assert_eq(sbuf_addf(&big, "# line %d of a big configuration file\n", i), 0);
	cr_assert_eq(guestenv_write(&ge, "/etc/big.conf", sbuf_str(&big), 0644), 0);
	sbuf_free(&big);
	static const char text[] =
		"[template]\nkind = qemu\nos = freebsd\nos_version = 14.1\n"
		"[source]\nclone = base\n[guest]\nuser = root\naddress = agent\n"
		"[rc.conf]\nsshd_enable = \"YES\"\nifconfig_vtnet0 = \"DHCP\"\n"
		"[file \"/etc/big.conf\"]\nline = added\n";
	struct tmpl_inst inst;
	make_inst(text, "m1", NULL, &inst);
	char *before = guestenv_snapshot(&ge);
	char *etc = guestenv_path(&ge, "/etc");
	struct killer k = {.fd = inotify_init1(IN_CLOEXEC), .prefix = "big.conf.pvagent."};
	cr_assert_geq(k.fd, 0);
	cr_assert_eq(pipe2(k.stop, O_CLOEXEC), 0);
	cr_assert_geq(inotify_add_watch(k.fd, etc, IN_CREATE), 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, killer_main, &k), 0);
	struct inject_result r;
	int rc = run("m1", &inst, false, NULL, &r);
	cr_assert_eq(write(k.stop[1], "x", 1), 1); /* ends the thread if it saw nothing */
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(close(k.fd), 0);
	cr_assert_eq(close(k.stop[0]), 0);
	cr_assert_eq(close(k.stop[1]), 0);
	cr_assert_gt(k.killed, 0, "the guest was not killed during the write");
	cr_assert_eq(rc, -1);
	cr_expect_eq(r.status, INJ_FAILED, "%s", r.ed.error);
	cr_expect_str_eq(r.ed.failed_step, "write");
	cr_expect_str_eq(r.ed.failed_path, "/etc/big.conf");
	cr_expect_eq(file_of(&r, "/etc/rc.conf")->state, GF_RESTORED);
	inject_result_free(&r);
	char *after = guestenv_snapshot(&ge);
	cr_expect_str_eq(after, before, "temp files or backups were left behind");
	free(before);
	free(after);
	free(etc);
	tmpl_inst_free(&inst);
}

Test(inject, disk_full_mid_write_files_restored)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (sshd with ChrootDirectory)");
	/* writes beyond 64 KiB fail on the guest (EFBIG, as a full disk) */
	struct sshd_opts so = {.fsize_limit = 65536};
	struct guestenv_opts o = {.fixture = "ubuntu-24.04", .addr = "127.0.1.56", .sshd = &so};
	cr_assert_eq(guestenv_start(&ge, &o), 0);
	struct sbuf big = {0};
	for (int i = 0; i < 4000; i++)
		cr_assert_eq(sbuf_addf(&big, "# line %d of a big configuration file\n", i), 0);
	cr_assert_eq(guestenv_write(&ge, "/etc/big.conf", sbuf_str(&big), 0644), 0);
	sbuf_free(&big);
	static const char text[] =
		"[template]\nkind = qemu\nos = ubuntu\nos_version = 24.04\n"
		"[source]\nclone = base\n[guest]\nuser = root\naddress = agent\n"
		"[sysctl.conf]\nvm.swappiness = 10\n"
		"[file \"/etc/big.conf\"]\nline = added\n";
	struct tmpl_inst inst;
	make_inst(text, "full1", NULL, &inst);
	char *before = guestenv_snapshot(&ge);
	struct inject_result r;
	cr_assert_eq(run("full1", &inst, false, NULL, &r), -1);
	cr_expect_eq(r.status, INJ_FAILED);
	cr_expect_eq(r.ed.outcome, JOB_OUT_FAILED);
	cr_expect_str_eq(r.ed.failed_step, "write");
	cr_expect_str_eq(r.ed.failed_path, "/etc/big.conf");
	/* EFBIG (session intact) or the SFTP server killed (reconnect) */
	cr_expect(r.ed.ssh_kind == SSH_ERR_REMOTE || r.ed.ssh_kind == SSH_ERR_CONNECT, "%s", r.ed.error);
	cr_expect_eq(file_of(&r, "/etc/sysctl.conf")->state, GF_RESTORED);
	inject_result_free(&r);
	char *after = guestenv_snapshot(&ge);
	cr_expect_str_eq(after, before);
	free(before);
	free(after);
	tmpl_inst_free(&inst);
}

Test(inject, verify_mismatch_rolls_back)
{
	start("freebsd-10", "127.0.1.57");
	struct tmpl_inst inst;
	make_inst(three_files, "v1", NULL, &inst);
	char *before = guestenv_snapshot(&ge);
	/* someone changes /etc/motd between its write and the read-back */
	struct cap c = {.tamper_after = 3, .tamper_path = "/etc/motd"};
	struct inject_result r;
	cr_assert_eq(run("v1", &inst, false, &c, &r), -1);
	cr_expect_eq(r.status, INJ_FAILED);
	cr_expect_str_eq(r.ed.failed_step, "verify");
	cr_expect_str_eq(r.ed.failed_path, "/etc/motd");
	cr_expect(strstr(r.ed.error, "verify /etc/motd: reads back different"), "%s", r.ed.error);
	for (size_t i = 0; i < r.ed.n_files; i++)
		cr_expect_eq(r.ed.files[i].state, GF_RESTORED, "%s", r.ed.files[i].path);
	inject_result_free(&r);
	char *after = guestenv_snapshot(&ge);
	cr_expect_str_eq(after, before);
	free(before);
	free(after);
	cap_free(&c);
	tmpl_inst_free(&inst);
}

Test(inject, guest_gone_for_good_reports_what_is_left)
{
	start("freebsd-10", "127.0.1.48");
	struct tmpl_inst inst;
	make_inst(three_files, "k2", NULL, &inst);
	char *orig = guest_text("/etc/rc.conf");
	struct cap c = {.kill_after = 1, .pause = true};
	struct inject_result r;
	cr_assert_eq(run("k2", &inst, false, &c, &r), -1);
	cr_expect_eq(r.status, INJ_FAILED_PARTIAL);
	cr_expect_eq(r.ed.outcome, JOB_OUT_NEEDS_ATTENTION);
	cr_expect_str_eq(r.ed.failed_step, "write");
	cr_expect(strstr(r.ed.error, "/etc/rc.conf is changed and could not be restored"), "%s",
		  r.ed.error);
	cr_expect(strstr(r.ed.error, "/etc/rc.conf.pvagent.bak"), "%s", r.ed.error);
	cr_expect_eq(file_of(&r, "/etc/rc.conf")->state, GF_DIRTY);
	inject_result_free(&r);
	/* what the message says is true */
	expect_text("/etc/rc.conf.pvagent.bak", orig);
	cr_expect(!guestenv_exists(&ge, "/boot/loader.conf"));
	/* back up: the next run converges */
	cr_assert_eq(guestenv_resume(&ge), 0);
	cr_assert_eq(run("k2", &inst, false, NULL, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_CHANGED);
	inject_result_free(&r);
	expect_text("/etc/rc.conf.pvagent.bak", orig);
	free(orig);
	cap_free(&c);
	tmpl_inst_free(&inst);
}

Test(inject, read_only_directory_fails_with_files_restored)
{
	start("freebsd-9.0", "127.0.1.49");
	struct tmpl_inst inst;
	make_inst(three_files, "ro1", NULL, &inst);
	/* root ignores chmod 0444/0555, so make /boot immutable instead */
	immutable = guestenv_path(&ge, "/boot");
	set_immutable(immutable, true);
	char *before = guestenv_snapshot(&ge);
	struct inject_result r;
	cr_assert_eq(run("ro1", &inst, false, NULL, &r), -1);
	cr_expect_eq(r.status, INJ_FAILED);
	cr_expect_eq(r.ed.outcome, JOB_OUT_FAILED);
	cr_expect_str_eq(r.ed.failed_step, "write");
	cr_expect_str_eq(r.ed.failed_path, "/boot/loader.conf");
	cr_expect(strstr(r.ed.error, "write /boot/loader.conf"), "%s", r.ed.error);
	cr_expect(strstr(r.ed.error, "restored"), "%s", r.ed.error);
	cr_expect_eq(file_of(&r, "/etc/rc.conf")->state, GF_RESTORED);
	inject_result_free(&r);
	char *after = guestenv_snapshot(&ge);
	cr_expect_str_eq(after, before);
	free(before);
	free(after);
	tmpl_inst_free(&inst);
}

Test(inject, immutable_existing_file_fails_with_files_restored)
{
	start("freebsd-14", "127.0.1.50");
	cr_assert_eq(guestenv_write(&ge, "/etc/motd", "welcome\n", 0444), 0);
	struct tmpl_inst inst;
	make_inst(three_files, "ro2", NULL, &inst);
	immutable = guestenv_path(&ge, "/etc/motd");
	set_immutable(immutable, true);
	char *before = guestenv_snapshot(&ge);
	struct inject_result r;
	cr_assert_eq(run("ro2", &inst, false, NULL, &r), -1);
	cr_expect_eq(r.status, INJ_FAILED);
	cr_expect_str_eq(r.ed.failed_step, "write");
	cr_expect_str_eq(r.ed.failed_path, "/etc/motd");
	cr_expect(strstr(r.ed.error, "write /etc/motd: file 3 of 3"), "%s", r.ed.error);
	cr_expect_eq(file_of(&r, "/etc/rc.conf")->state, GF_RESTORED);
	cr_expect_eq(file_of(&r, "/boot/loader.conf")->state, GF_RESTORED);
	inject_result_free(&r);
	char *after = guestenv_snapshot(&ge);
	cr_expect_str_eq(after, before);
	free(before);
	free(after);
	tmpl_inst_free(&inst);
}

Test(inject, unreachable_guest_exit_4_at_connect)
{
	start("freebsd-14", "127.0.1.51");
	cr_assert_eq(guestenv_pause(&ge), 0);
	struct inject_result r;
	cr_assert_eq(run("u1", NULL, false, NULL, &r), -1);
	cr_expect_eq(r.status, INJ_FAILED);
	cr_expect_str_eq(r.ed.failed_step, "connect");
	cr_expect_eq(r.ed.outcome, JOB_OUT_UNREACHABLE);
	cr_expect(strncmp(r.ed.error, "connect: ", 9) == 0, "%s", r.ed.error);
	inject_result_free(&r);
}

/* ---- the stand-in commands ------------------------------------------------------------------ */

static char *exec_out(struct ssh_session *s, const char *cmdline, int *status)
{
	struct ssh_result out;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_exec_cmdline(s, cmdline, NULL, &out, &e), 0, "%s", ssh_error_str(&e));
	*status = out.exit_status;
	char *t = strdup(sbuf_str(&out.out));
	ssh_result_free(&out);
	return t;
}

Test(inject, standins_freebsd_90_kmod)
{
	start("freebsd-9.0", "127.0.1.53");
	struct ssh_opts so = guestenv_ssh_opts(&ge);
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_connect(&so, &s, &e), 0, "%s", ssh_error_str(&e));
	int st;
	char *o = exec_out(s, "uname -sr; uname -m", &st);
	cr_expect_str_eq(o, "FreeBSD 9.0-RELEASE\namd64\n");
	free(o);
	o = exec_out(s, "freebsd-version -k", &st);
	cr_expect_eq(st, 127);
	free(o);
	o = exec_out(s, "kldstat -q -m virtio_blk", &st);
	cr_expect_eq(st, 1, "virtio is not in the 9.0 kernel");
	free(o);
	o = exec_out(s, "pkg_add -r virtio-kmod-9.0", &st);
	cr_expect_eq(st, 0, "%s", o);
	free(o);
	cr_expect(guestenv_exists(&ge, "/boot/modules/virtio_blk.ko"));
	cr_expect(guestenv_exists(&ge, "/boot/modules/if_vtnet.ko"));
	cr_expect(!guestenv_exists(&ge, "/boot/modules/virtio_scsi.ko"));
	cr_assert_eq(guestenv_write(&ge, "/boot/loader.conf",
				    "virtio_load=\"YES\"\nvirtio_blk_load=\"YES\"\n", 0644), 0);
	o = exec_out(s, "kldstat -q -m virtio_blk", &st);
	cr_expect_eq(st, 0);
	free(o);
	o = exec_out(s, "dumpfs /dev/ad0s1a | head -n 2", &st);
	cr_expect(strstr(o, "id\t[ 4f13ff5d 2bf8a1c6 ]"), "%s", o);
	free(o);
	o = exec_out(s, "diskinfo ada0", &st);
	cr_expect_str_eq(o, "ada0\t512\t34359738368\t67108864\t0\t0\t66576\t16\t63\n");
	free(o);
	cr_assert_eq(guestenv_write(&ge, "/.pvagent-facts/fail-pkg", "", 0644), 0);
	o = exec_out(s, "pkg_add -r virtio-kmod-9.0", &st);
	cr_expect_eq(st, 1);
	free(o);
	ssh_close(s);
}

Test(inject, standins_ubuntu_initramfs)
{
	start("ubuntu-12.04", "127.0.1.54");
	struct ssh_opts so = guestenv_ssh_opts(&ge);
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_connect(&so, &s, &e), 0, "%s", ssh_error_str(&e));
	int st;
	char *o = exec_out(s, "lsb_release -sr; uname -r; cat /etc/os-release | grep VERSION_ID", &st);
	cr_expect_str_eq(o, "12.04\n3.2.0-23-generic\nVERSION_ID=\"12.04\"\n");
	free(o);
	cr_assert_eq(guestenv_write(&ge, "/etc/initramfs-tools/modules",
				    "# modules\nvirtio_pci\nvirtio_blk\n", 0644), 0);
	o = exec_out(s, "update-initramfs -u -k all", &st);
	cr_expect_eq(st, 0, "%s", o);
	free(o);
	o = exec_out(s, "lsinitramfs /boot/initrd.img-$(uname -r) | grep virtio", &st);
	cr_expect_str_eq(o, "usr/lib/modules/3.2.0-23-generic/kernel/drivers/virtio_pci.ko\n"
			    "usr/lib/modules/3.2.0-23-generic/kernel/drivers/virtio_blk.ko\n");
	free(o);
	o = exec_out(s, "blkid | head -n 1; ip -o link | grep -c eth0", &st);
	cr_expect(strstr(o, "/dev/sda1: UUID=\"f7a0c2eb"), "%s", o);
	cr_expect(strstr(o, "\n1\n"), "%s", o);
	free(o);
	o = exec_out(s, "kldstat", &st);
	cr_expect_eq(st, 127);
	free(o);
	ssh_close(s);
}

/* ---- the simulator's boot model decides whether the guest's sshd answers ---------------- */

static struct simproc sim;

static void sim_cleanup(void)
{
	simproc_stop(&sim);
	cleanup();
}

TestSuite(inject_sim, .fini = sim_cleanup, .timeout = 120);

static void sim_call(const char *method, const char *path, const char *form)
{
	long status = 0;
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&sim, method, path, form, &status, &ans), 0, "%s %s", method, path);
	cr_assert_eq(status, 200, "%s %s -> %ld %s", method, path, status,
		     ans ? json_object_to_json_string(ans) : "");
	json_object_put(ans);
	cr_assert_eq(simproc_advance(&sim, 60), 0);
}

static const char *boot_state(int vmid)
{
	static char state[32];
	json_object *st = simproc_state(&sim), *cl = NULL, *guests = NULL;
	cr_assert_not_null(st);
	state[0] = '\0';
	if (json_object_object_get_ex(st, "cluster", &cl) &&
	    json_object_object_get_ex(cl, "guests", &guests)) {
		for (size_t i = 0; i < json_object_array_length(guests); i++) {
			json_object *g = json_object_array_get_idx(guests, i), *v, *b, *s;
			if (json_object_object_get_ex(g, "vmid", &v) && json_object_get_int(v) == vmid &&
			    json_object_object_get_ex(g, "boot", &b) &&
			    json_object_object_get_ex(b, "state", &s))
				snprintf(state, sizeof state, "%s", json_object_get_string(s));
		}
	}
	json_object_put(st);
	return state;
}

static bool ssh_answers(void)
{
	struct ssh_opts so = guestenv_ssh_opts(&ge);
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	int rc = ssh_connect(&so, &s, &e);
	ssh_error_clear(&e);
	ssh_close(s);
	return rc == 0;
}

Test(inject_sim, guest_sshd_follows_the_boot_model)
{
	const char *sim_bin = getenv("PVESIM_BIN");
	if (access(sim_bin ? sim_bin : "build/san/pvesim", X_OK) < 0)
		cr_skip_test("no simulator binary (make build/san/pvesim)");
	start("freebsd-9.0", "127.0.1.60");
	char *scen = guestenv_scenario(&ge, 190,
				       "\"name\": \"fbsd9\", \"memory\": \"1024\", \"cores\": 1,"
				       " \"ostype\": \"other\", \"boot\": \"order=ide0\","
				       " \"ide0\": \"local-lvm:vm-190-disk-0,size=16G\","
				       " \"net0\": \"e1000=BC:24:11:00:01:90,bridge=vmbr0\"");
	char *path = strprintf("%s/scenario.json", ge.sd.etc);
	cr_assert(scen && path);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fputs(scen, f) < 0, 0);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(simproc_start(&sim, path, NULL), 0, "simulator did not start");

	/* up on IDE/e1000 */
	cr_expect_str_eq(boot_state(190), "up");
	cr_assert_eq(guestenv_follow(&ge, &sim, 190), 1);
	cr_expect(ssh_answers());

	/* stopped: no sshd */
	sim_call("POST", "/nodes/pve1/qemu/190/status/stop", "");
	cr_assert_eq(guestenv_follow(&ge, &sim, 190), 0);
	cr_expect(!ssh_answers());

	/* disk moved to virtio-blk without the kmod: mountroot, still no sshd */
	sim_call("PUT", "/nodes/pve1/qemu/190/config",
		 "virtio0=local-lvm%3Avm-190-disk-0%2Csize%3D16G&delete=ide0&boot=order%3Dvirtio0");
	sim_call("POST", "/nodes/pve1/qemu/190/status/start", "");
	cr_expect_str_eq(boot_state(190), "mountroot");
	cr_assert_eq(guestenv_follow(&ge, &sim, 190), 0);
	cr_expect(!ssh_answers());

	/* back on IDE: up again, same files, same address and port */
	sim_call("POST", "/nodes/pve1/qemu/190/status/stop", "");
	sim_call("PUT", "/nodes/pve1/qemu/190/config",
		 "ide0=local-lvm%3Avm-190-disk-0%2Csize%3D16G&delete=virtio0&boot=order%3Dide0");
	sim_call("POST", "/nodes/pve1/qemu/190/status/start", "");
	cr_expect_str_eq(boot_state(190), "up");
	cr_assert_eq(guestenv_follow(&ge, &sim, 190), 1);
	cr_expect(ssh_answers());
	struct inject_result r;
	cr_assert_eq(run("fbsd9", NULL, false, NULL, &r), 0, "%s", r.ed.error);
	cr_expect_eq(r.status, INJ_CHANGED);
	inject_result_free(&r);
	free(scen);
	free(path);
}

/* ---- pure transforms ------------------------------------------------------------------------- */

static struct tmpl_kvlist kvl(const char *const *kv)
{
	struct tmpl_kvlist l = {0};
	for (size_t i = 0; kv[i]; i += 2)
		cr_assert_eq(tmpl_kvlist_add(&l, kv[i], kv[i + 1], 0), 0);
	return l;
}

Test(inject_text, kv_ensure)
{
	static const char *const kv[] = {"kern.a", "1", "net.b", "x y", NULL};
	struct tmpl_kvlist l = kvl(kv);
	char *out = NULL, *err = NULL;
	cr_assert_eq(inject_kv_ensure("/etc/sysctl.conf",
				      "# c\nkern.a = 0\n#net.b=1\nother=2", &l, &out, &err), 0);
	cr_expect_str_eq(out, "# c\nkern.a = 1\n#net.b=1\nother=2\nnet.b=x y\n");
	char *again = NULL;
	cr_assert_eq(inject_kv_ensure("/etc/sysctl.conf", out, &l, &again, &err), 0);
	cr_expect_str_eq(again, out);
	free(again);
	free(out);
	cr_assert_eq(inject_kv_ensure("/etc/sysctl.conf", NULL, &l, &out, &err), 0);
	cr_expect_str_eq(out, "kern.a=1\nnet.b=x y\n");
	free(out);
	tmpl_kvlist_free(&l);
}

Test(inject_text, lines_ensure)
{
	static const char *const kv[] = {"line", "a b", "line", "c", "line", "a b", NULL};
	struct tmpl_kvlist l = kvl(kv);
	char *out = NULL, *err = NULL;
	cr_assert_eq(inject_lines_ensure("/x", "c  \nz", &l, &out, &err), 0);
	cr_expect_str_eq(out, "c  \nz\na b\n");
	char *again = NULL;
	cr_assert_eq(inject_lines_ensure("/x", out, &l, &again, &err), 0);
	cr_expect_str_eq(again, out);
	free(again);
	free(out);
	tmpl_kvlist_free(&l);
}

Test(inject_text, hosts_set)
{
	char *out = NULL;
	cr_assert_eq(inject_hosts_set("127.0.0.1 localhost\n127.0.1.1   old.example old\n::1 x\n",
				      "new", &out), 0);
	cr_expect_str_eq(out, "127.0.0.1 localhost\n127.0.1.1   new\n::1 x\n");
	char *again = NULL;
	cr_assert_eq(inject_hosts_set(out, "new", &again), 0);
	cr_expect_str_eq(again, out);
	free(again);
	free(out);
	cr_assert_eq(inject_hosts_set("127.0.0.1 localhost\n::1 x\n", "n", &out), 0);
	cr_expect_str_eq(out, "127.0.0.1 localhost\n127.0.1.1\tn\n::1 x\n");
	free(out);
	cr_assert_eq(inject_hosts_set("::1 x", "n", &out), 0);
	cr_expect_str_eq(out, "::1 x\n127.0.1.1\tn\n");
	free(out);
	cr_assert_eq(inject_hosts_set(NULL, "n", &out), 0);
	cr_expect_str_eq(out, "127.0.1.1\tn\n");
	free(out);
}

Test(inject_text, hostname_rules)
{
	static const char *const good[] = {"web1", "a", "web-1.example.org", "0abc", NULL};
	static const char *const bad[] = {"", "-a", "a-", "a..b", "a b", "a\"b", "$(x)", "a.",
					  "a_b", "a\nb", NULL};
	for (size_t i = 0; good[i]; i++)
		cr_expect_eq(inject_check_hostname(good[i], NULL), 0, "%s", good[i]);
	for (size_t i = 0; bad[i]; i++) {
		char *err = NULL;
		cr_expect_eq(inject_check_hostname(bad[i], &err), -1, "%s", bad[i]);
		cr_expect_not_null(err);
		free(err);
	}
}

Test(inject_text, template_from_description)
{
	char *t = inject_template_from_description(
		"web1: FreeBSD 14.1 (pvagent template freebsd-14)");
	cr_expect_str_eq(t, "freebsd-14");
	free(t);
	cr_expect_null(inject_template_from_description("no marker"));
	cr_expect_null(inject_template_from_description("(pvagent template a b)"));
	cr_expect_null(inject_template_from_description(NULL));
}

Test(inject_text, ssh_opts_from_conf_and_template)
{
	struct conf c = {0};
	c.ssh.user = "admin";
	c.ssh.identity = "/k";
	c.ssh.known_hosts = "/kh";
	c.ssh.host_key_policy = CONF_HKP_TOFU;
	c.ssh.timeout = 7;
	struct ssh_opts o;
	cr_assert_eq(inject_ssh_opts(&c, NULL, "127.0.1.9", &o), 0);
	cr_expect_str_eq(o.host, "127.0.1.9");
	cr_expect_eq(o.port, 22);
	cr_expect_str_eq(o.user, "admin");
	cr_expect_eq(o.policy, SSH_HKP_TOFU);
	cr_expect_eq(o.connect_timeout_ms, 7000);
	struct tmpl_inst inst = {0};
	inst.guest.user = "root";
	inst.guest.port = 2222;
	cr_assert_eq(inject_ssh_opts(&c, &inst, "127.0.1.9", &o), 0);
	cr_expect_str_eq(o.user, "root");
	cr_expect_eq(o.port, 2222);
	/* no [guest] port: pvagent.conf [ssh] port */
	c.ssh.port = 2200;
	inst.guest.port = 0;
	cr_assert_eq(inject_ssh_opts(&c, &inst, "127.0.1.9", &o), 0);
	cr_expect_eq(o.port, 2200);
	inst.guest.port = 2222;
	cr_assert_eq(inject_ssh_opts(&c, &inst, "127.0.1.9", &o), 0);
	cr_expect_eq(o.port, 2222, "[guest] port wins over [ssh] port");
	cr_expect_eq(inject_ssh_opts(&c, NULL, NULL, &o), -1);
}
