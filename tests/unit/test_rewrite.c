/* test_rewrite.c - rewrite.c transforms: every guest fixture in
 * tests/guests/ (root -> expected-virtio -> expected-final, file by file,
 * second passes change nothing) and targeted cases (comments kept, rc.conf
 * aliases and ipv6, fstab whitespace, swap by device name, unknown
 * devices, malformed lines reported as file:line). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diff.h"
#include "osprof.h"
#include "rewrite.h"
#include "util.h"

/* ---- helpers --------------------------------------------------------------- */

static char *slurp(const char *path)
{
	char *s = NULL;
	if (read_file(path, &s, NULL) < 0) {
		cr_assert(errno == ENOENT, "reading %s: %s", path, strerror(errno));
		return NULL;
	}
	return s;
}

struct strlist {
	char **v;
	size_t n;
};

static void sl_add(struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return;
	l->v = realloc(l->v, (l->n + 1) * sizeof *l->v);
	cr_assert_not_null(l->v);
	l->v[l->n] = strdup(s);
	cr_assert_not_null(l->v[l->n]);
	l->n++;
}

static void sl_free(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* Files under base/rel, as paths relative to base. */
static void walk(const char *base, const char *rel, struct strlist *out)
{
	char *dir = strprintf("%s%s%s", base, *rel ? "/" : "", rel);
	cr_assert_not_null(dir);
	DIR *d = opendir(dir);
	if (!d) {
		free(dir);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *r = strprintf("%s%s%s", rel, *rel ? "/" : "", e->d_name);
		char *full = strprintf("%s/%s", dir, e->d_name);
		cr_assert(r && full);
		struct stat st;
		cr_assert_eq(stat(full, &st), 0, "stat %s", full);
		if (S_ISDIR(st.st_mode))
			walk(base, r, out);
		else
			sl_add(out, r);
		free(r);
		free(full);
	}
	closedir(d);
	free(dir);
}

/* Compare with a readable diff on failure. NULL = absent. */
static void expect_text(const char *what, const char *got, const char *want)
{
	if (!want) {
		cr_expect(got == NULL, "%s: expected no file, got:\n%s", what, got);
		return;
	}
	if (!got) {
		cr_expect(0, "%s: expected a file, got none", what);
		return;
	}
	if (strcmp(got, want) != 0) {
		char *d = diff_unified(want, got, what);
		cr_expect(0, "%s differs (- expected, + got):\n%s", what, d ? d : "?");
		free(d);
	}
}

/* One phase on one file: absent stays absent when nothing is added. */
static char *run(const struct virtio_plan *vp, enum rw_phase ph, const char *rel,
		 const char *in, struct sbuf *notes)
{
	char *out = NULL, *err = NULL;
	int rc = virtio_transform(vp, ph, rel, in, &out, notes, &err);
	cr_assert_eq(rc, 0, "%s (%s): %s", rel, rw_phase_name(ph), err ? err : "?");
	if (!in && out[0] == '\0') {
		free(out);
		return NULL;
	}
	return out;
}

static void load_plan(const char *fx, struct virtio_plan *vp, struct os_profile *prof)
{
	char *path = strprintf("tests/guests/%s/facts", fx);
	char *facts_txt = slurp(path);
	cr_assert_not_null(facts_txt, "%s missing", path);
	struct os_facts facts = {0};
	struct os_info oi;
	char *err = NULL;
	cr_assert_eq(os_facts_parse(path, facts_txt, &facts, &err), 0, "%s", err);
	cr_assert_eq(osprof_detect(&facts, &oi, &err), 0, "%s: %s", fx, err);
	cr_assert_eq(osprof_for(&oi, prof, &err), 0, "%s: %s", fx, err);
	cr_assert_eq(virtio_plan_init(vp, prof, VBUS_VIRTIO_BLK, 1, 1, &facts, &err), 0, "%s", err);
	os_info_free(&oi);
	os_facts_free(&facts);
	free(facts_txt);
	free(path);
}

static void check_fixture(const char *fx)
{
	struct virtio_plan vp;
	struct os_profile prof;
	load_plan(fx, &vp, &prof);
	char *root = strprintf("tests/guests/%s/root", fx);
	char *ev = strprintf("tests/guests/%s/expected-virtio", fx);
	char *ef = strprintf("tests/guests/%s/expected-final", fx);
	char *es = strprintf("tests/guests/%s/expected-switch", fx);
	struct strlist files = {0};
	walk(root, "", &files);
	walk(ev, "", &files);
	walk(ef, "", &files);
	cr_assert(files.n > 0, "%s: no files", fx);
	size_t touched = 0;
	for (size_t i = 0; i < files.n; i++) {
		const char *rel = files.v[i];
		char *p0 = strprintf("%s/%s", root, rel), *p1 = strprintf("%s/%s", ev, rel),
		     *p2 = strprintf("%s/%s", ef, rel);
		char *in = slurp(p0), *want_v = slurp(p1), *want_f = slurp(p2);
		touched += virtio_plan_touches(&vp, rel);
		struct sbuf notes = {0};
		char *v1 = run(&vp, RW_PREPARE, rel, in, &notes);
		expect_text(p1, v1, want_v);
		char *v2 = run(&vp, RW_PREPARE, rel, v1, &notes);
		expect_text("second prepare pass", v2, v1);
		/* SWITCH changes only what expected-switch/ holds (entries that
		 * have no bus-independent name, reported in PREPARE's notes) */
		char *p3 = strprintf("%s/%s", es, rel);
		char *want_s = slurp(p3);
		char *sw = run(&vp, RW_SWITCH, rel, v1, NULL);
		expect_text(want_s ? p3 : "switch after prepare", sw, want_s ? want_s : v1);
		if (!want_s)
			cr_expect_eq(notes.len, 0, "%s: entries left for switch time:\n%s", p0, sbuf_str(&notes));
		else
			cr_expect(notes.len > 0, "%s: switch changes it but prepare noted nothing", p0);
		char *sw2 = run(&vp, RW_SWITCH, rel, sw, NULL);
		expect_text("second switch pass", sw2, sw);
		free(p3), free(want_s), free(sw2);
		char *f1 = run(&vp, RW_FINAL, rel, v1, NULL);
		expect_text(p2, f1, want_f);
		char *f2 = run(&vp, RW_FINAL, rel, f1, NULL);
		expect_text("second final pass", f2, f1);
		sbuf_free(&notes);
		free(v1), free(v2), free(sw), free(f1), free(f2);
		free(in), free(want_v), free(want_f);
		free(p0), free(p1), free(p2);
	}
	cr_expect(touched > 0, "%s: no file the plan touches", fx);
	sl_free(&files);
	free(root), free(ev), free(ef), free(es);
	virtio_plan_free(&vp);
}

Test(fixtures, freebsd_9_0) { check_fixture("freebsd-9.0"); }
Test(fixtures, freebsd_10) { check_fixture("freebsd-10"); }
Test(fixtures, freebsd_14) { check_fixture("freebsd-14"); }
Test(fixtures, freebsd_14_zfs) { check_fixture("freebsd-14-zfs"); }
Test(fixtures, ubuntu_9_04) { check_fixture("ubuntu-9.04"); }
Test(fixtures, ubuntu_12_04) { check_fixture("ubuntu-12.04"); }
Test(fixtures, ubuntu_24_04) { check_fixture("ubuntu-24.04"); }
Test(fixtures, ubuntu_26_04) { check_fixture("ubuntu-26.04"); }
Test(fixtures, debian_13) { check_fixture("debian-13"); }
Test(fixtures, freebsd_15) { check_fixture("freebsd-15"); }

/* Without label facts (no gpart/dumpfs output), freebsd-9.0 shows the
 * PREPARE/SWITCH/FINAL split: swap gets both names, the UFS entries are
 * reported in PREPARE and renamed at SWITCH. */
Test(fixtures, freebsd_9_0_without_labels)
{
	struct os_facts facts = {0};
	struct os_info oi;
	struct os_profile prof;
	struct virtio_plan vp;
	char *err = NULL;
	cr_assert_eq(os_facts_add(&facts, "uname -sr", "FreeBSD 9.0-RELEASE\n"), 0);
	cr_assert_eq(osprof_detect(&facts, &oi, &err), 0);
	cr_assert_eq(osprof_for(&oi, &prof, &err), 0);
	cr_assert_eq(virtio_plan_init(&vp, &prof, VBUS_VIRTIO_BLK, 1, 1, &facts, &err), 0);
	char *in = slurp("tests/guests/freebsd-9.0/root/etc/fstab");
	cr_assert_not_null(in);
	struct sbuf notes = {0};
	char *prep = run(&vp, RW_PREPARE, "etc/fstab", in, &notes);
	const char *hdr = "# Device\t\tMountpoint\tFStype\tOptions\t\tDump\tPass#\n";
	char *want = strprintf("%s%s", hdr,
			       "/dev/ad0s1b\t\tnone\t\tswap\tsw\t\t0\t0\n"
			       "/dev/vtbd0s1b\t\tnone\t\tswap\tsw\t\t0\t0\n"
			       "/dev/ad0s1a\t\t/\t\tufs\trw\t\t1\t1\n"
			       "/dev/ad0s1e\t\t/tmp\t\tufs\trw\t\t2\t2\n"
			       "/dev/ad0s1f\t\t/usr\t\tufs\trw\t\t2\t2\n"
			       "/dev/ad0s1d\t\t/var\t\tufs\trw\t\t2\t2\n"
			       "/dev/cd0\t\t/cdrom\t\tcd9660\tro,noauto\t0\t0\n");
	expect_text("prepare without labels", prep, want);
	cr_assert_str_eq(sbuf_str(&notes),
			 "etc/fstab:3: /dev/ad0s1a has no bus-independent name; renamed to /dev/vtbd0s1a at switch time\n"
			 "etc/fstab:4: /dev/ad0s1e has no bus-independent name; renamed to /dev/vtbd0s1e at switch time\n"
			 "etc/fstab:5: /dev/ad0s1f has no bus-independent name; renamed to /dev/vtbd0s1f at switch time\n"
			 "etc/fstab:6: /dev/ad0s1d has no bus-independent name; renamed to /dev/vtbd0s1d at switch time\n");
	char *sw = run(&vp, RW_SWITCH, "etc/fstab", prep, NULL);
	char *sw2 = run(&vp, RW_SWITCH, "etc/fstab", sw, NULL);
	free(want);
	want = strprintf("%s%s", hdr,
			 "/dev/ad0s1b\t\tnone\t\tswap\tsw\t\t0\t0\n"
			 "/dev/vtbd0s1b\t\tnone\t\tswap\tsw\t\t0\t0\n"
			 "/dev/vtbd0s1a\t\t/\t\tufs\trw\t\t1\t1\n"
			 "/dev/vtbd0s1e\t\t/tmp\t\tufs\trw\t\t2\t2\n"
			 "/dev/vtbd0s1f\t\t/usr\t\tufs\trw\t\t2\t2\n"
			 "/dev/vtbd0s1d\t\t/var\t\tufs\trw\t\t2\t2\n"
			 "/dev/cd0\t\t/cdrom\t\tcd9660\tro,noauto\t0\t0\n");
	expect_text("switch without labels", sw, want);
	expect_text("second switch pass", sw2, sw);
	char *fin = run(&vp, RW_FINAL, "etc/fstab", sw, NULL);
	char *fin_direct = run(&vp, RW_FINAL, "etc/fstab", in, NULL);
	free(want);
	want = strprintf("%s%s", hdr,
			 "/dev/vtbd0s1b\t\tnone\t\tswap\tsw\t\t0\t0\n"
			 "/dev/vtbd0s1a\t\t/\t\tufs\trw\t\t1\t1\n"
			 "/dev/vtbd0s1e\t\t/tmp\t\tufs\trw\t\t2\t2\n"
			 "/dev/vtbd0s1f\t\t/usr\t\tufs\trw\t\t2\t2\n"
			 "/dev/vtbd0s1d\t\t/var\t\tufs\trw\t\t2\t2\n"
			 "/dev/cd0\t\t/cdrom\t\tcd9660\tro,noauto\t0\t0\n");
	expect_text("final without labels", fin, want);
	expect_text("final straight from the installed fstab", fin_direct, want);
	free(want), free(prep), free(sw), free(sw2), free(fin), free(fin_direct), free(in);
	sbuf_free(&notes);
	virtio_plan_free(&vp);
	os_info_free(&oi);
	os_facts_free(&facts);
}

/* The --dry-run view of a fixture: the diff of rc.conf for freebsd-10. */
Test(fixtures, dry_run_diff_of_prepare)
{
	struct virtio_plan vp;
	struct os_profile prof;
	load_plan("freebsd-10", &vp, &prof);
	char *in = slurp("tests/guests/freebsd-10/root/etc/rc.conf");
	char *out = run(&vp, RW_PREPARE, "etc/rc.conf", in, NULL);
	char *d = diff_unified(in, out, "/etc/rc.conf");
	cr_assert_str_eq(d, "--- a/etc/rc.conf\n+++ b/etc/rc.conf\n"
			    "@@ -1,8 +1,10 @@\n"
			    " hostname=\"fbsd10.example.org\"\n"
			    " keymap=\"us.iso\"\n"
			    " ifconfig_em0=\"inet 192.0.2.10 netmask 255.255.255.0\"\n"
			    "+ifconfig_vtnet0=\"inet 192.0.2.10 netmask 255.255.255.0\"\n"
			    " defaultrouter=\"192.0.2.1\"\n"
			    " ifconfig_em0_ipv6=\"inet6 accept_rtadv\"\n"
			    "+ifconfig_vtnet0_ipv6=\"inet6 accept_rtadv\"\n"
			    " sshd_enable=\"YES\"\n"
			    " ntpd_enable=\"YES\"\n"
			    " powerd_enable=\"YES\"\n");
	free(d), free(in), free(out);
	virtio_plan_free(&vp);
}

/* ---- targeted cases -------------------------------------------------------- */

static const struct rw_kv kmod_lines[] = {
	{"virtio_load", "YES"},         {"virtio_pci_load", "YES"},
	{"virtio_blk_load", "YES"},     {"if_vtnet_load", "YES"},
	{"virtio_balloon_load", "YES"},
};

static char *kv(const char *in, const struct rw_kv *k, size_t n, int strict)
{
	char *out = NULL, *err = NULL;
	cr_assert_eq(rw_kv_ensure("boot/loader.conf", in, k, n, strict, &out, &err), 0, "%s", err);
	char *again = NULL;
	cr_assert_eq(rw_kv_ensure("boot/loader.conf", out, k, n, strict, &again, &err), 0, "%s", err);
	cr_assert_str_eq(again, out, "not idempotent");
	free(again);
	return out;
}

Test(loader_conf, appends_missing_keeps_comments_and_order)
{
	const char *in = "# loader.conf by hand\n"
			 "autoboot_delay=\"3\"\t# seconds\n"
			 "virtio_pci_load=\"YES\"\n"
			 "\n"
			 "beastie_disable=\"YES\"";
	char *out = kv(in, kmod_lines, 5, 1);
	cr_assert_str_eq(out, "# loader.conf by hand\n"
			      "autoboot_delay=\"3\"\t# seconds\n"
			      "virtio_pci_load=\"YES\"\n"
			      "\n"
			      "beastie_disable=\"YES\"\n"
			      "virtio_load=\"YES\"\n"
			      "virtio_blk_load=\"YES\"\n"
			      "if_vtnet_load=\"YES\"\n"
			      "virtio_balloon_load=\"YES\"\n");
	free(out);
}

Test(loader_conf, replaces_last_value_in_place_keeping_comment)
{
	const char *in = "virtio_load=\"YES\"\nvirtio_load='NO'   # off for now\nzfs_load=YES\n";
	struct rw_kv k[] = {{"virtio_load", "YES"}, {"zfs_load", "YES"}};
	char *out = kv(in, k, 2, 1);
	cr_assert_str_eq(out, "virtio_load=\"YES\"\nvirtio_load=\"YES\"   # off for now\nzfs_load=YES\n");
	free(out);
}

Test(loader_conf, empty_file_gets_five_lines)
{
	char *out = kv("", kmod_lines, 5, 1);
	cr_assert_str_eq(out, "virtio_load=\"YES\"\nvirtio_pci_load=\"YES\"\nvirtio_blk_load=\"YES\"\n"
			      "if_vtnet_load=\"YES\"\nvirtio_balloon_load=\"YES\"\n");
	free(out);
	out = kv(NULL, NULL, 0, 1);
	cr_assert_str_eq(out, "");
	free(out);
}

Test(loader_conf, malformed_line_reported_with_file_and_line)
{
	char *out = (char *)1, *err = NULL;
	cr_assert_eq(rw_kv_ensure("boot/loader.conf", "a=\"1\"\n# ok\nthis is not\n", kmod_lines, 5, 1, &out, &err), -1);
	cr_assert_null(out);
	cr_assert_not_null(err);
	cr_assert_str_eq(err, "boot/loader.conf:3: expected name=\"value\"");
	free(err);
	cr_assert_eq(rw_kv_ensure("boot/loader.conf", "\n\nx=\"unterminated\n", kmod_lines, 5, 1, &out, &err), -1);
	cr_assert_str_eq(err, "boot/loader.conf:3: unterminated quote");
	free(err);
	/* rc.conf is a shell script: odd lines are kept in lenient mode */
	struct rw_kv k[] = {{"sshd_enable", "YES"}};
	cr_assert_eq(rw_kv_ensure("etc/rc.conf", "if true; then :; fi\n", k, 1, 0, &out, &err), 0);
	cr_assert_str_eq(out, "if true; then :; fi\nsshd_enable=\"YES\"\n");
	free(out);
}

Test(loader_conf, kv_get)
{
	char *v = NULL, *err = NULL;
	cr_assert_eq(rw_kv_get("rc.conf", "a=1\nb=\"x y\" # c\nb='z'\n", "b", 0, &v, &err), 0);
	cr_assert_str_eq(v, "z");
	free(v);
	cr_assert_eq(rw_kv_get("rc.conf", "a=1\n", "b", 0, &v, &err), 0);
	cr_assert_null(v);
}

static char *rcnic(const char *in, enum rw_phase ph)
{
	char *out = NULL, *err = NULL, *again = NULL;
	cr_assert_eq(rw_rcconf_nic("etc/rc.conf", in, "em0", "vtnet0", ph, &out, &err), 0, "%s", err);
	cr_assert_eq(rw_rcconf_nic("etc/rc.conf", out, "em0", "vtnet0", ph, &again, &err), 0, "%s", err);
	cr_assert_str_eq(again, out, "not idempotent");
	free(again);
	return out;
}

Test(rc_conf, aliases_ipv6_and_lists)
{
	const char *in =
		"# network\n"
		"hostname=\"gw\"\n"
		"network_interfaces=\"lo0 em0\"\n"
		"ifconfig_em0=\"inet 192.0.2.10/24\"  # primary\n"
		"ifconfig_em0_alias0=\"inet 192.0.2.11/32\"\n"
		"ifconfig_em0_alias1=\"inet 192.0.2.12/32\"\n"
		"ifconfig_em0_ipv6=\"inet6 2001:db8::10/64\"\n"
		"ipv6_default_interface=\"em0\"\n"
		"ifconfig_em01=\"DHCP\"\n"
		"# ifconfig_em0=\"DHCP\" old\n";
	char *prep = rcnic(in, RW_PREPARE);
	cr_assert_str_eq(prep,
			 "# network\n"
			 "hostname=\"gw\"\n"
			 "network_interfaces=\"lo0 em0 vtnet0\"\n"
			 "ifconfig_em0=\"inet 192.0.2.10/24\"  # primary\n"
			 "ifconfig_vtnet0=\"inet 192.0.2.10/24\"  # primary\n"
			 "ifconfig_em0_alias0=\"inet 192.0.2.11/32\"\n"
			 "ifconfig_vtnet0_alias0=\"inet 192.0.2.11/32\"\n"
			 "ifconfig_em0_alias1=\"inet 192.0.2.12/32\"\n"
			 "ifconfig_vtnet0_alias1=\"inet 192.0.2.12/32\"\n"
			 "ifconfig_em0_ipv6=\"inet6 2001:db8::10/64\"\n"
			 "ifconfig_vtnet0_ipv6=\"inet6 2001:db8::10/64\"\n"
			 "ipv6_default_interface=\"em0\"\n"
			 "ifconfig_em01=\"DHCP\"\n"
			 "# ifconfig_em0=\"DHCP\" old\n");
	char *fin = rcnic(prep, RW_FINAL);
	cr_assert_str_eq(fin,
			 "# network\n"
			 "hostname=\"gw\"\n"
			 "network_interfaces=\"lo0 vtnet0\"\n"
			 "ifconfig_vtnet0=\"inet 192.0.2.10/24\"  # primary\n"
			 "ifconfig_vtnet0_alias0=\"inet 192.0.2.11/32\"\n"
			 "ifconfig_vtnet0_alias1=\"inet 192.0.2.12/32\"\n"
			 "ifconfig_vtnet0_ipv6=\"inet6 2001:db8::10/64\"\n"
			 "ipv6_default_interface=\"vtnet0\"\n"
			 "ifconfig_em01=\"DHCP\"\n"
			 "# ifconfig_em0=\"DHCP\" old\n");
	/* final straight from the original renames in place */
	char *fin2 = rcnic(in, RW_FINAL);
	cr_assert_str_eq(fin2, fin);
	free(prep);
	free(fin);
	free(fin2);
}

Test(rc_conf, existing_new_variable_wins_and_last_assignment_copied)
{
	const char *in = "ifconfig_em0=\"DHCP\"\nifconfig_em0=\"inet 10.0.0.2/8\"\nifconfig_vtnet0_ipv6=\"inet6 accept_rtadv\"\nifconfig_em0_ipv6=\"inet6 -accept_rtadv\"\n";
	char *prep = rcnic(in, RW_PREPARE);
	cr_assert_str_eq(prep, "ifconfig_em0=\"DHCP\"\nifconfig_em0=\"inet 10.0.0.2/8\"\nifconfig_vtnet0=\"inet 10.0.0.2/8\"\n"
			       "ifconfig_vtnet0_ipv6=\"inet6 accept_rtadv\"\nifconfig_em0_ipv6=\"inet6 -accept_rtadv\"\n");
	free(prep);
}

Test(rc_conf, no_final_newline_kept)
{
	char *prep = rcnic("ifconfig_em0=DHCP", RW_PREPARE);
	cr_assert_str_eq(prep, "ifconfig_em0=DHCP\nifconfig_vtnet0=DHCP\n");
	free(prep);
	prep = rcnic("sshd_enable=YES", RW_PREPARE);
	cr_assert_str_eq(prep, "sshd_enable=YES");
	free(prep);
}

Test(rc_conf, unterminated_quote_is_error)
{
	char *out, *err;
	cr_assert_eq(rw_rcconf_nic("etc/rc.conf", "a=1\nifconfig_em0=\"DHCP\n", "em0", "vtnet0", RW_PREPARE, &out, &err), -1);
	cr_assert_str_eq(err, "etc/rc.conf:2: unterminated quote");
	free(err);
}

/* Found by fuzzing (tests/fuzz/regress/rw_rcconf/): a copy still naming
 * em0 was copied again on every pass. */
Test(rc_conf, every_old_component_renamed)
{
	char *prep = rcnic("ifconfig_em0_em0=\"x\"\n", RW_PREPARE);
	cr_assert_str_eq(prep, "ifconfig_em0_em0=\"x\"\nifconfig_vtnet0_vtnet0=\"x\"\n");
	char *fin = rcnic(prep, RW_FINAL), *fin2 = rcnic("ifconfig_em0_em0=\"x\"\n", RW_FINAL);
	cr_assert_str_eq(fin, "ifconfig_vtnet0_vtnet0=\"x\"\n");
	cr_assert_str_eq(fin2, fin);
	free(prep);
	free(fin);
	free(fin2);
}

/* Found by fuzzing: FINAL straight from the original renamed every
 * assignment, FINAL after PREPARE (which copies only the last) kept one. */
Test(rc_conf, final_keeps_the_last_assignment_only)
{
	const char *in = "ifconfig_em0_ipv6=\"inet6 -accept_rtadv\"\nsshd_enable=\"YES\"\n"
			 "ifconfig_em0_ipv6=\"inet6 accept_rtadv\"\n";
	char *fin = rcnic(in, RW_FINAL), *prep = rcnic(in, RW_PREPARE), *staged = rcnic(prep, RW_FINAL);
	cr_assert_str_eq(fin, "sshd_enable=\"YES\"\nifconfig_vtnet0_ipv6=\"inet6 accept_rtadv\"\n");
	cr_assert_str_eq(staged, fin);
	free(fin);
	free(prep);
	free(staged);
}

/* Found by fuzzing: FINAL dropped only the first of a repeated em0. */
Test(rc_conf, final_drops_every_listed_old_name)
{
	char *fin = rcnic("network_interfaces=\"lo0 em0 em0\"\n", RW_FINAL);
	cr_assert_str_eq(fin, "network_interfaces=\"lo0 vtnet0\"\n");
	free(fin);
	fin = rcnic("network_interfaces=\"em0 vtnet0 em0\"\n", RW_FINAL);
	cr_assert_str_eq(fin, "network_interfaces=\"vtnet0\"\n");
	free(fin);
}

/* Found by fuzzing: a list named after the NIC was copied as an em0
 * variable, and the copy, a list naming em0, was edited by the next pass. */
Test(rc_conf, lists_are_edited_in_their_value_only)
{
	const char *in = "cloned_em0_interfaces=\"em0 em1\"\n";
	char *prep = rcnic(in, RW_PREPARE), *fin = rcnic(prep, RW_FINAL), *fin2 = rcnic(in, RW_FINAL);
	cr_assert_str_eq(prep, "cloned_em0_interfaces=\"em0 vtnet0 em1\"\n");
	cr_assert_str_eq(fin, "cloned_em0_interfaces=\"vtnet0 em1\"\n");
	cr_assert_str_eq(fin2, fin);
	free(prep);
	free(fin);
	free(fin2);
}

/* fstab */
static char *fst(const char *in, const struct name_map *disks, const struct name_map *labels,
		 enum rw_phase ph, struct sbuf *notes)
{
	struct rw_devmaps dm = {disks, labels};
	char *out = NULL, *err = NULL, *again = NULL;
	cr_assert_eq(rw_fstab("etc/fstab", in, &dm, ph, &out, notes, &err), 0, "%s", err);
	cr_assert_eq(rw_fstab("etc/fstab", out, &dm, ph, &again, NULL, &err), 0, "%s", err);
	cr_assert_str_eq(again, out, "not idempotent");
	free(again);
	return out;
}

Test(fstab, explicit_map_tabs_spaces_and_unknown_devices)
{
	struct name_map disks = {0}, labels = {0};
	cr_assert_eq(name_map_add(&disks, "ad0s1a", "vtbd0s1a"), 0);
	cr_assert_eq(name_map_add(&disks, "ada0p2", "vtbd0p2"), 0);
	cr_assert_eq(name_map_add(&disks, "sda1", "vda1"), 0);
	const char *in = "# comment /dev/ad0s1a\n"
			 "/dev/ad0s1a  \t /   ufs rw 1 1   # root\n"
			 "/dev/ada0p2\t/usr\tufs\trw\t2\t2\n"
			 "   /dev/sda1    /boot  ext2 defaults 0 2\n"
			 "/dev/ad0s1b none swap sw 0 0\n"
			 "/dev/cd0 /cdrom cd9660 ro,noauto 0 0\n"
			 "proc /proc procfs rw 0 0\n"
			 "UUID=1234 /data ext4 defaults 0 2";
	struct sbuf notes = {0};
	char *prep = fst(in, &disks, &labels, RW_PREPARE, &notes);
	cr_assert_str_eq(prep, in, "nothing labelled: prepare leaves non-swap entries");
	cr_assert_str_eq(sbuf_str(&notes),
			 "etc/fstab:2: /dev/ad0s1a has no bus-independent name; renamed to /dev/vtbd0s1a at switch time\n"
			 "etc/fstab:3: /dev/ada0p2 has no bus-independent name; renamed to /dev/vtbd0p2 at switch time\n"
			 "etc/fstab:4: /dev/sda1 has no bus-independent name; renamed to /dev/vda1 at switch time\n");
	char *sw = fst(in, &disks, &labels, RW_SWITCH, NULL);
	cr_assert_str_eq(sw, "# comment /dev/ad0s1a\n"
			     "/dev/vtbd0s1a  \t /   ufs rw 1 1   # root\n"
			     "/dev/vtbd0p2\t/usr\tufs\trw\t2\t2\n"
			     "   /dev/vda1    /boot  ext2 defaults 0 2\n"
			     "/dev/ad0s1b none swap sw 0 0\n"
			     "/dev/cd0 /cdrom cd9660 ro,noauto 0 0\n"
			     "proc /proc procfs rw 0 0\n"
			     "UUID=1234 /data ext4 defaults 0 2");
	sbuf_free(&notes);
	free(prep);
	free(sw);
	name_map_free(&disks);
	name_map_free(&labels);
}

Test(fstab, whole_disk_map_and_swap_both_names)
{
	struct name_map disks = {0};
	cr_assert_eq(name_map_add(&disks, "ada0", "vtbd0"), 0);
	const char *in = "/dev/ada0p3.eli\tnone\tswap\tsw\t0\t0\n"
			 "/dev/ada0p4 none swap sw,late 0 0\n"
			 "/dev/ada01p1 /x ufs rw 2 2\n";
	char *prep = fst(in, &disks, NULL, RW_PREPARE, NULL);
	cr_assert_str_eq(prep, "/dev/ada0p3.eli\tnone\tswap\tsw\t0\t0\n"
			       "/dev/vtbd0p3.eli\tnone\tswap\tsw\t0\t0\n"
			       "/dev/ada0p4 none swap sw,late 0 0\n"
			       "/dev/vtbd0p4 none swap sw,late 0 0\n"
			       "/dev/ada01p1 /x ufs rw 2 2\n");
	char *fin = fst(prep, &disks, NULL, RW_FINAL, NULL);
	cr_assert_str_eq(fin, "/dev/vtbd0p3.eli\tnone\tswap\tsw\t0\t0\n"
			      "/dev/vtbd0p4 none swap sw,late 0 0\n"
			      "/dev/ada01p1 /x ufs rw 2 2\n");
	free(prep);
	free(fin);
	name_map_free(&disks);
}

/* Found by fuzzing (tests/fuzz/regress/rw_fstab/): FINAL renamed both
 * copies of a repeated swap line, FINAL after PREPARE kept one. */
Test(fstab, repeated_swap_line_renamed_once)
{
	struct name_map disks = {0};
	cr_assert_eq(name_map_add(&disks, "ada0", "vtbd0"), 0);
	const char *in = "/dev/ada0p3\tnone\tswap\tsw\t0\t0\n/dev/ada0p3\tnone\tswap\tsw\t0\t0\n";
	char *fin = fst(in, &disks, NULL, RW_FINAL, NULL);
	char *prep = fst(in, &disks, NULL, RW_PREPARE, NULL);
	char *staged = fst(prep, &disks, NULL, RW_FINAL, NULL);
	cr_assert_str_eq(fin, "/dev/vtbd0p3\tnone\tswap\tsw\t0\t0\n");
	cr_assert_str_eq(staged, fin);
	free(fin);
	free(prep);
	free(staged);
	name_map_free(&disks);
}

Test(fstab, zfs_root_swap_by_device_name)
{
	/* bsdinstall ZFS: no / line, swap by device name; no GPT label known */
	struct name_map disks = {0};
	cr_assert_eq(name_map_add(&disks, "ada0", "da0"), 0); /* virtio-scsi */
	const char *in = "# Device\t\tMountpoint\tFStype\tOptions\t\tDump\tPass#\n"
			 "/dev/ada0p3\t\tnone\tswap\tsw\t\t0\t0\n";
	char *prep = fst(in, &disks, NULL, RW_PREPARE, NULL);
	cr_assert_str_eq(prep, "# Device\t\tMountpoint\tFStype\tOptions\t\tDump\tPass#\n"
			       "/dev/ada0p3\t\tnone\tswap\tsw\t\t0\t0\n"
			       "/dev/da0p3\t\tnone\tswap\tsw\t\t0\t0\n");
	/* with the GPT label known, the label is used */
	struct name_map labels = {0};
	cr_assert_eq(name_map_add(&labels, "ada0p3", "/dev/gpt/swap0"), 0);
	char *lab = fst(in, &disks, &labels, RW_PREPARE, NULL);
	cr_assert_str_eq(lab, "# Device\t\tMountpoint\tFStype\tOptions\t\tDump\tPass#\n"
			      "/dev/gpt/swap0\t\tnone\tswap\tsw\t\t0\t0\n");
	free(prep);
	free(lab);
	name_map_free(&disks);
	name_map_free(&labels);
}

Test(fstab, parse_entries)
{
	struct rw_fstab_ent *e = NULL;
	size_t n = 0;
	char *err = NULL;
	cr_assert_eq(rw_fstab_parse("etc/fstab", "# c\n\n/dev/ad0s1a\t/\tufs\trw\t1 1 # x\nproc /proc proc\n", &e, &n, &err), 0);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(e[0].spec, "/dev/ad0s1a");
	cr_assert_str_eq(e[0].file, "/");
	cr_assert_str_eq(e[0].type, "ufs");
	cr_assert_str_eq(e[0].opts, "rw");
	cr_assert_eq(e[0].line, 3);
	cr_assert_null(e[1].opts);
	cr_assert_eq(e[1].line, 4);
	rw_fstab_ents_free(e, n);
	cr_assert_eq(rw_fstab_parse("etc/fstab", "a b c\nx\n", &e, &n, &err), -1);
	cr_assert_str_eq(err, "etc/fstab:2: expected at least 3 fields (device, mount point, type), found 1");
	free(err);
}

Test(fstab, malformed_line_reported)
{
	struct rw_devmaps dm = {NULL, NULL};
	char *out = (char *)1, *err = NULL;
	cr_assert_eq(rw_fstab("etc/fstab", "# x\n/dev/ad0s1a /\n", &dm, RW_PREPARE, &out, NULL, &err), -1);
	cr_assert_null(out);
	cr_assert_str_eq(err, "etc/fstab:2: expected at least 3 fields (device, mount point, type), found 2");
	free(err);
}

Test(fstab, linux_uuid_labels)
{
	struct name_map disks = {0}, labels = {0};
	cr_assert_eq(name_map_add(&disks, "sda", "vda"), 0);
	cr_assert_eq(name_map_add(&labels, "sda1", "UUID=aaaa-bbbb"), 0);
	const char *in = "/dev/sda1 / ext4 errors=remount-ro 0 1\n/dev/sda5 none swap sw 0 0\n/dev/sdb1 /srv xfs defaults 0 2\n"
			 "/dev/disk/by-uuid/1111 /boot ext4 defaults 0 2\n";
	struct sbuf notes = {0};
	char *prep = fst(in, &disks, &labels, RW_PREPARE, &notes);
	cr_assert_str_eq(prep, "UUID=aaaa-bbbb / ext4 errors=remount-ro 0 1\n/dev/sda5 none swap sw 0 0\n/dev/vda5 none swap sw 0 0\n"
			       "/dev/sdb1 /srv xfs defaults 0 2\n/dev/disk/by-uuid/1111 /boot ext4 defaults 0 2\n");
	cr_assert_eq(notes.len, 0, "sdb is not in the map: left alone");
	sbuf_free(&notes);
	free(prep);
	name_map_free(&disks);
	name_map_free(&labels);
}

Test(map, device_prefix_rules)
{
	struct name_map m = {0};
	cr_assert_eq(name_map_add(&m, "ad0", "vtbd0"), 0);
	cr_assert_eq(name_map_add(&m, "sda", "vda"), 0);
	cr_assert_eq(name_map_add(&m, "ad0s1a", "special"), 0);
	cr_assert_eq(name_map_add(&m, "sda", "vdb"), 0); /* replaces */
	char *r;
	cr_assert_str_eq((r = rw_map_device(&m, "ad0s1b")), "vtbd0s1b");
	free(r);
	cr_assert_str_eq((r = rw_map_device(&m, "ad0s1a")), "special");
	free(r);
	cr_assert_str_eq((r = rw_map_device(&m, "ad0")), "vtbd0");
	free(r);
	cr_assert_null(rw_map_device(&m, "ad01"));
	cr_assert_null(rw_map_device(&m, "ad1s1a"));
	cr_assert_str_eq((r = rw_map_device(&m, "sda5")), "vdb5");
	free(r);
	cr_assert_null(rw_map_device(&m, "sdaa1"));
	cr_assert_eq(m.n, 3);
	cr_assert_eq(name_map_add(&m, "/dev/sdb1", "/dev/vdc1"), 0); /* /dev/ optional */
	cr_assert_str_eq((r = rw_map_device(&m, "/dev/sdb1")), "vdc1");
	free(r);
	name_map_free(&m);
}

/* GRUB */
Test(grub, menu_lst_kernel_and_kopt)
{
	struct name_map disks = {0}, labels = {0};
	cr_assert_eq(name_map_add(&disks, "sda", "vda"), 0);
	const char *in = "## e.g. kopt=root=/dev/hda1 ro\n"
			 "# kopt=root=/dev/sda1 ro resume=/dev/sda5\n"
			 "title Ubuntu\n"
			 "root (hd0,0)\n"
			 "kernel\t/boot/vmlinuz root=/dev/sda1 ro quiet\n";
	struct rw_devmaps dm = {&disks, &labels};
	char *out, *err;
	struct sbuf notes = {0};
	cr_assert_eq(rw_grub("boot/grub/menu.lst", in, &dm, RW_PREPARE, &out, &notes, &err), 0);
	cr_assert_str_eq(out, in);
	cr_assert_str_eq(sbuf_str(&notes),
			 "boot/grub/menu.lst:2: /dev/sda1 has no bus-independent name; renamed to /dev/vda1 at switch time\n"
			 "boot/grub/menu.lst:2: /dev/sda5 has no bus-independent name; renamed to /dev/vda5 at switch time\n"
			 "boot/grub/menu.lst:5: /dev/sda1 has no bus-independent name; renamed to /dev/vda1 at switch time\n");
	free(out);
	cr_assert_eq(rw_grub("boot/grub/menu.lst", in, &dm, RW_SWITCH, &out, NULL, &err), 0);
	cr_assert_str_eq(out, "## e.g. kopt=root=/dev/hda1 ro\n"
			      "# kopt=root=/dev/vda1 ro resume=/dev/vda5\n"
			      "title Ubuntu\n"
			      "root (hd0,0)\n"
			      "kernel\t/boot/vmlinuz root=/dev/vda1 ro quiet\n");
	free(out);
	cr_assert_eq(name_map_add(&labels, "sda1", "UUID=feed"), 0);
	cr_assert_eq(rw_grub("etc/default/grub", "GRUB_CMDLINE_LINUX=\"root=/dev/sda1 console=ttyS0\"\nX=\"root=/dev/sda1\"\n",
			     &dm, RW_PREPARE, &out, NULL, &err), 0);
	cr_assert_str_eq(out, "GRUB_CMDLINE_LINUX=\"root=UUID=feed console=ttyS0\"\nX=\"root=/dev/sda1\"\n");
	free(out);
	sbuf_free(&notes);
	name_map_free(&disks);
	name_map_free(&labels);
}

Test(grub, device_map)
{
	struct name_map disks = {0}, labels = {0};
	cr_assert_eq(name_map_add(&disks, "sda", "vda"), 0);
	cr_assert_eq(name_map_add(&labels, "sda", "UUID=never-for-device-map"), 0);
	struct rw_devmaps dm = {&disks, &labels};
	char *out, *err;
	struct sbuf notes = {0};
	const char *in = "(fd0)\t/dev/fd0\n(hd0)\t/dev/sda\n";
	cr_assert_eq(rw_grub("boot/grub/device.map", in, &dm, RW_PREPARE, &out, &notes, &err), 0);
	cr_assert_str_eq(out, in);
	cr_assert_str_eq(sbuf_str(&notes), "boot/grub/device.map:2: /dev/sda has no bus-independent name; renamed to /dev/vda at switch time\n");
	free(out);
	cr_assert_eq(rw_grub("boot/grub/device.map", in, &dm, RW_SWITCH, &out, NULL, &err), 0);
	cr_assert_str_eq(out, "(fd0)\t/dev/fd0\n(hd0)\t/dev/vda\n");
	free(out);
	sbuf_free(&notes);
	name_map_free(&disks);
	name_map_free(&labels);
}

Test(grub, initramfs_resume_file)
{
	struct name_map disks = {0}, labels = {0};
	cr_assert_eq(name_map_add(&disks, "sda", "vda"), 0);
	cr_assert_eq(name_map_add(&labels, "sda5", "UUID=5555"), 0);
	struct rw_devmaps dm = {&disks, &labels};
	char *out, *err;
	cr_assert_eq(rw_grub("etc/initramfs-tools/conf.d/resume", "RESUME=/dev/sda5\n", &dm, RW_PREPARE, &out, NULL, &err), 0);
	cr_assert_str_eq(out, "RESUME=UUID=5555\n");
	free(out);
	name_map_free(&disks);
	name_map_free(&labels);
}

Test(mentions, other_files_naming_the_old_nic)
{
	struct sbuf notes = {0};
	cr_assert_eq(rw_note_mentions("etc/pf.conf", "# em0 outside\next_if = \"em0\"\nint_if=\"em01\"\npass on em0 all\n", "em0", &notes), 0);
	cr_assert_str_eq(sbuf_str(&notes), "etc/pf.conf:2: names em0\netc/pf.conf:4: names em0\n");
	sbuf_free(&notes);
}

/* initramfs modules */
Test(initramfs, ensure_modules)
{
	const char *mods[] = {"virtio_pci", "virtio_blk", "virtio_net", "virtio_scsi"};
	char *out, *err, *again;
	const char *in = "# List of modules\n#virtio_blk\nvirtio-pci\nraid1 opt=1";
	cr_assert_eq(rw_modules_ensure("etc/initramfs-tools/modules", in, mods, 4, &out, &err), 0);
	cr_assert_str_eq(out, "# List of modules\n#virtio_blk\nvirtio-pci\nraid1 opt=1\nvirtio_blk\nvirtio_net\nvirtio_scsi\n");
	cr_assert_eq(rw_modules_ensure("etc/initramfs-tools/modules", out, mods, 4, &again, &err), 0);
	cr_assert_str_eq(again, out);
	free(out);
	free(again);
}

/* ifupdown */
static char *ifc(const char *in, const char *o, const char *n, enum rw_phase ph)
{
	char *out = NULL, *err = NULL, *again = NULL;
	cr_assert_eq(rw_interfaces_nic("etc/network/interfaces", in, o, n, ph, &out, &err), 0, "%s", err);
	cr_assert_eq(rw_interfaces_nic("etc/network/interfaces", out, o, n, ph, &again, &err), 0, "%s", err);
	cr_assert_str_eq(again, out, "not idempotent");
	free(again);
	return out;
}

Test(interfaces, rename_keeps_both_then_drops_old)
{
	const char *in = "# The loopback network interface\n"
			 "auto lo\n"
			 "iface lo inet loopback\n"
			 "\n"
			 "# The primary network interface\n"
			 "auto eth0\n"
			 "iface eth0 inet static\n"
			 "\taddress 192.0.2.20\n"
			 "\tnetmask 255.255.255.0\n"
			 "\tup ip route add 198.51.100.0/24 via 192.0.2.254 dev eth0\n"
			 "iface eth0 inet6 auto\n"
			 "\n"
			 "allow-hotplug eth1\n"
			 "iface eth1 inet dhcp\n";
	char *prep = ifc(in, "eth0", "ens18", RW_PREPARE);
	cr_assert_str_eq(prep,
			 "# The loopback network interface\n"
			 "auto lo\n"
			 "iface lo inet loopback\n"
			 "\n"
			 "# The primary network interface\n"
			 "auto eth0 ens18\n"
			 "iface eth0 inet static\n"
			 "\taddress 192.0.2.20\n"
			 "\tnetmask 255.255.255.0\n"
			 "\tup ip route add 198.51.100.0/24 via 192.0.2.254 dev eth0\n"
			 "iface ens18 inet static\n"
			 "\taddress 192.0.2.20\n"
			 "\tnetmask 255.255.255.0\n"
			 "\tup ip route add 198.51.100.0/24 via 192.0.2.254 dev ens18\n"
			 "iface eth0 inet6 auto\n"
			 "iface ens18 inet6 auto\n"
			 "\n"
			 "allow-hotplug eth1\n"
			 "iface eth1 inet dhcp\n");
	char *fin = ifc(prep, "eth0", "ens18", RW_FINAL);
	cr_assert_str_eq(fin,
			 "# The loopback network interface\n"
			 "auto lo\n"
			 "iface lo inet loopback\n"
			 "\n"
			 "# The primary network interface\n"
			 "auto ens18\n"
			 "iface ens18 inet static\n"
			 "\taddress 192.0.2.20\n"
			 "\tnetmask 255.255.255.0\n"
			 "\tup ip route add 198.51.100.0/24 via 192.0.2.254 dev ens18\n"
			 "iface ens18 inet6 auto\n"
			 "\n"
			 "allow-hotplug eth1\n"
			 "iface eth1 inet dhcp\n");
	char *fin2 = ifc(in, "eth0", "ens18", RW_FINAL);
	cr_assert_str_eq(fin2, fin, "final from the original renames in place");
	free(prep);
	free(fin);
	free(fin2);
}

Test(interfaces, aliases_and_vlans)
{
	const char *in = "auto eth0 eth0:1\t# both\n"
			 "iface eth0 inet dhcp\n"
			 "iface eth0:1 inet static\n"
			 "    address 192.0.2.30/24\n"
			 "auto eth0.100\n"
			 "iface eth0.100 inet manual\n"
			 "    vlan-raw-device eth0\n"
			 "auto eth00\n"
			 "iface eth00 inet dhcp";
	char *prep = ifc(in, "eth0", "ens18", RW_PREPARE);
	cr_assert_str_eq(prep, "auto eth0 ens18 eth0:1 ens18:1\t# both\n"
			       "iface eth0 inet dhcp\n"
			       "iface ens18 inet dhcp\n"
			       "iface eth0:1 inet static\n"
			       "    address 192.0.2.30/24\n"
			       "iface ens18:1 inet static\n"
			       "    address 192.0.2.30/24\n"
			       "auto eth0.100 ens18.100\n"
			       "iface eth0.100 inet manual\n"
			       "    vlan-raw-device eth0\n"
			       "iface ens18.100 inet manual\n"
			       "    vlan-raw-device ens18\n"
			       "auto eth00\n"
			       "iface eth00 inet dhcp");
	char *fin = ifc(prep, "eth0", "ens18", RW_FINAL);
	cr_assert_str_eq(fin, "auto ens18 ens18:1\t# both\n"
			      "iface ens18 inet dhcp\n"
			      "iface ens18:1 inet static\n"
			      "    address 192.0.2.30/24\n"
			      "auto ens18.100\n"
			      "iface ens18.100 inet manual\n"
			      "    vlan-raw-device ens18\n"
			      "auto eth00\n"
			      "iface eth00 inet dhcp");
	free(prep);
	free(fin);
}

/* Found by fuzzing (tests/fuzz/regress/rw_interfaces/): the copy renamed
 * an eth0 in the family word too, so the next pass, looking for "ens3 eth0",
 * added another stanza. */
Test(interfaces, copy_renames_the_interface_only)
{
	const char *in = "auto eth0\niface eth0 eth0 manual\n\tup ip link set eth0 up\n";
	char *prep = ifc(in, "eth0", "ens3", RW_PREPARE);
	cr_assert_str_eq(prep, "auto eth0 ens3\niface eth0 eth0 manual\n\tup ip link set eth0 up\n"
			       "iface ens3 eth0 manual\n\tup ip link set ens3 up\n");
	char *fin = ifc(prep, "eth0", "ens3", RW_FINAL), *fin2 = ifc(in, "eth0", "ens3", RW_FINAL);
	cr_assert_str_eq(fin, "auto ens3\niface ens3 eth0 manual\n\tup ip link set ens3 up\n");
	cr_assert_str_eq(fin2, fin);
	free(prep);
	free(fin);
	free(fin2);
}

/* Found by fuzzing: FINAL dropped eth0 with the blanks before it, so after
 * PREPARE the line's spacing differed from a direct rename. */
Test(interfaces, final_keeps_the_spacing_of_a_rename)
{
	const char *in = "auto lo  eth0\niface eth0 inet dhcp\n";
	char *prep = ifc(in, "eth0", "ens3", RW_PREPARE);
	char *fin = ifc(prep, "eth0", "ens3", RW_FINAL), *fin2 = ifc(in, "eth0", "ens3", RW_FINAL);
	cr_assert_str_eq(prep, "auto lo  eth0 ens3\niface eth0 inet dhcp\niface ens3 inet dhcp\n");
	cr_assert_str_eq(fin, "auto lo  ens3\niface ens3 inet dhcp\n");
	cr_assert_str_eq(fin2, fin);
	free(prep);
	free(fin);
	free(fin2);
}

/* Found by fuzzing: an auto/allow-* line naming no interface was dropped. */
Test(interfaces, auto_line_without_names_kept)
{
	const char *in = "allow-hotplug\nauto\niface eth0 inet dhcp\n";
	char *prep = ifc(in, "eth0", "ens3", RW_PREPARE), *fin = ifc(in, "eth0", "ens3", RW_FINAL);
	cr_assert_str_eq(prep, "allow-hotplug\nauto\niface eth0 inet dhcp\niface ens3 inet dhcp\n");
	cr_assert_str_eq(fin, "allow-hotplug\nauto\niface ens3 inet dhcp\n");
	free(prep);
	free(fin);
}

/* netplan */
Test(netplan, pin_mac_block_style)
{
	const char *in = "network:\n  version: 2\n  ethernets:\n    ens18:\n      dhcp4: true\n    ens19:\n      dhcp4: false\n";
	char *out, *err, *again;
	cr_assert_eq(rw_netplan_pin_mac("etc/netplan/00.yaml", in, "ens18", "bc:24:11:00:00:01", &out, &err), 0, "%s", err);
	cr_assert_str_eq(out, "network:\n  version: 2\n  ethernets:\n    ens18:\n      dhcp4: true\n"
			      "      match:\n        macaddress: bc:24:11:00:00:01\n      set-name: ens18\n"
			      "    ens19:\n      dhcp4: false\n");
	cr_assert_eq(rw_netplan_pin_mac("etc/netplan/00.yaml", out, "ens18", "bc:24:11:00:00:01", &again, &err), 0);
	cr_assert_str_eq(again, out);
	free(again);
	free(out);
	/* already matched by MAC, or interface missing: unchanged */
	const char *m = "network:\n  ethernets:\n    eth0:\n      match:\n        macaddress: aa:bb:cc:dd:ee:ff\n      set-name: eth0\n";
	cr_assert_eq(rw_netplan_pin_mac("x.yaml", m, "eth0", "11:22:33:44:55:66", &out, &err), 0);
	cr_assert_str_eq(out, m);
	free(out);
	cr_assert_eq(rw_netplan_pin_mac("x.yaml", m, "ens3", "11:22:33:44:55:66", &out, &err), 0);
	cr_assert_str_eq(out, m);
	free(out);
}

Test(netplan, flow_style_reported)
{
	char *out, *err;
	cr_assert_eq(rw_netplan_pin_mac("etc/netplan/01.yaml", "network:\n  ethernets:\n    ens18: {dhcp4: true}\n",
					"ens18", "bc:24:11:00:00:01", &out, &err), -1);
	cr_assert_str_eq(err, "etc/netplan/01.yaml:3: flow-style mapping for ens18 is not supported");
	free(err);
}

/* udev */
Test(udev, driver_specific_rule_and_rename)
{
	const char *in = "# PCI device 0x8086:0x100e (e1000)\n"
			 "SUBSYSTEM==\"net\", ACTION==\"add\", DRIVERS==\"e1000\", ATTR{address}==\"52:54:00:12:34:56\", KERNEL==\"eth*\", NAME=\"eth0\"\n"
			 "SUBSYSTEM==\"net\", ACTION==\"add\", DRIVERS==\"?*\", ATTR{address}==\"52:54:00:12:34:57\", KERNEL==\"eth*\", NAME=\"eth1\"\n";
	struct name_map nics = {0};
	char *out, *err, *again;
	cr_assert_eq(rw_udev_net("70-persistent-net.rules", in, &nics, &out, &err), 0);
	cr_assert_str_eq(out, "# PCI device 0x8086:0x100e (e1000)\n"
			      "SUBSYSTEM==\"net\", ACTION==\"add\", DRIVERS==\"?*\", ATTR{address}==\"52:54:00:12:34:56\", KERNEL==\"eth*\", NAME=\"eth0\"\n"
			      "SUBSYSTEM==\"net\", ACTION==\"add\", DRIVERS==\"?*\", ATTR{address}==\"52:54:00:12:34:57\", KERNEL==\"eth*\", NAME=\"eth1\"\n");
	cr_assert_eq(name_map_add(&nics, "eth1", "lan1"), 0);
	cr_assert_eq(rw_udev_net("70-persistent-net.rules", out, &nics, &again, &err), 0);
	cr_assert_not_null(strstr(again, "NAME=\"lan1\"\n"));
	cr_assert_not_null(strstr(again, "NAME=\"eth0\"\n"));
	free(out);
	free(again);
	name_map_free(&nics);
	cr_assert_eq(rw_udev_net("r", "SUBSYSTEM==\"net\", NAME=\"eth0\n", NULL, &out, &err), -1);
	cr_assert_str_eq(err, "r:1: unterminated NAME=\"...\"");
	free(err);
}

/* Found by fuzzing (tests/fuzz/regress/rw_udev/): a NAME=" inside the
 * DRIVERS value was taken for the rule's NAME; once the value became "?*"
 * the second pass found the real one and renamed it. */
Test(udev, keys_inside_quotes_are_values)
{
	const char *in = "SUBSYSTEM==\"net\", DRIVERS==\", NAME=\" x\", ATTR{address}==\"52:54:00:12:34:56\", "
			 "NAME=\"eth0\"\n";
	struct name_map nics = {0};
	cr_assert_eq(name_map_add(&nics, "eth0", "ens3"), 0);
	char *out, *err;
	cr_assert_eq(rw_udev_net("70-persistent-net.rules", in, &nics, &out, &err), 0, "%s", err);
	/* the quotes pair up as DRIVERS==", NAME=" and " x", ...: no NAME= key */
	cr_assert_str_eq(out, in);
	free(out);
	/* a value holding ", NAME" is still a value; the real keys are renamed */
	const char *rule = "DRIVERS==\"e1000\", ATTR{x}==\"a, NAME=\", NAME=\"eth0\"\n";
	cr_assert_eq(rw_udev_net("r", rule, &nics, &out, &err), 0, "%s", err);
	cr_assert_str_eq(out, "DRIVERS==\"?*\", ATTR{x}==\"a, NAME=\", NAME=\"ens3\"\n");
	free(out);
	name_map_free(&nics);
}
