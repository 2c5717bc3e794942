/* test_doctor.c - `pvagent doctor` against cluster models taken from how
 * PVE installs and upgrades (tests/pvesim/scenarios/doctor-*.json), each
 * compared with what the commands then do: a fresh 9.1 install (import
 * content on local, local-lvm): no FIX line, and image build works; one
 * installed with 8.4 and upgraded (local without import): exactly the
 * `pvesm set local --content ...,import` line, image build dies with PVE's
 * content-type refusal, and on the cluster so fixed doctor is clean and
 * the build works; a ZFS install (local-zfs, no local-lvm): exactly the
 * line naming local-lvm as missing and local-zfs instead, and the build
 * works on local-zfs; a datacenter whose user-tag-access is a list:
 * exactly the tags line, image build refused its pvagent-image tag, and
 * after the printed pvesh line doctor is clean and the build works; a
 * check the token may not make names the privilege it needs; mid-upgrade,
 * both guest-agent privileges with the node to add each through. The
 * simulator runs in real time here (its node clock is the host's). */
#include "clirun.h"
#include "httpserve.h"
#include "simcli.h"
#include "simproc.h"
#include "util.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct simproc sim;
static struct httpserve hs;

static void fini(void)
{
	httpserve_stop(&hs);
	simproc_stop(&sim);
}

TestSuite(doctor, .fini = fini, .timeout = 240);

struct world {
	char *dir, *conf, *tdir;
	const char *bin;
	char *url, *sum; /* the image served on loopback and its checksum */
};

/* The simulator on scenario, a conf with its token number tok (0: the
 * first), the template debian-13 and its image in the templates
 * directory, and the image served. */
static void world_start(struct world *w, const char *scenario, int tok)
{
	const char *bin = getenv("PVAGENT_BIN");
	w->bin = bin ? bin : "build/san/pvagent";
	if (access(w->bin, X_OK) < 0)
		cr_skip_test("no pvagent binary (make build/san/pvagent)");
	char t[] = "/tmp/pvagent-test-doctor.XXXXXX";
	cr_assert_not_null(mkdtemp(t));
	w->dir = strdup(t);
	const char *args[] = {"--time-scale", "1", NULL};
	cr_assert_eq(simproc_start(&sim, scenario, args), 0);
	cr_assert_eq(httpserve_start(&hs), 0);
	w->sum = httpserve_put_qcow2(&hs, "d13.qcow2", 1ULL << 30);
	cr_assert_not_null(w->sum);
	w->url = strprintf("%s/d13.qcow2", hs.base);
	w->tdir = strprintf("%s/templates", w->dir);
	char *cmd = strprintf("mkdir -p '%s/images' && cp templates/debian-13.tmpl '%s' && "
			      "cp templates/images/debian-13.image '%s/images' && "
			      "ssh-keygen -q -t ed25519 -N '' -f '%s/id'",
			      w->tdir, w->tdir, w->tdir, w->dir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	/* the scenario's token number tok */
	json_object *sc = json_object_from_file(scenario), *toks = NULL;
	cr_assert(sc && json_object_object_get_ex(sc, "tokens", &toks));
	json_object *tk = json_object_array_get_idx(toks, (size_t)tok);
	const char *id = json_object_get_string(json_object_object_get(tk, "id"));
	const char *sec = json_object_get_string(json_object_object_get(tk, "secret"));
	char *secret = strprintf("%s/token.secret", w->dir), *body = strprintf("%s\n", sec);
	cr_assert_eq(test_write_file(secret, body, 0600), 0);
	w->conf = strprintf("%s/pvagent.conf", w->dir);
	char *conf = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			       "fingerprint = %s\nnode = pve1\n[ssh]\nidentity = %s/id\n"
			       "[paths]\ntemplates = %s\nstate = %s\nsocket = %s/none.sock\n",
			       sim.url, id, secret, sim.fingerprint, w->dir, w->tdir, w->dir,
			       w->dir);
	cr_assert_eq(test_write_file(w->conf, conf, 0600), 0);
	json_object_put(sc);
	free(conf);
	free(body);
	free(secret);
}

static void world_stop(struct world *w)
{
	httpserve_stop(&hs);
	cr_assert_eq(simproc_stop(&sim), 0, "simulator did not exit cleanly");
	cr_assert_eq(test_remove_tree(w->dir), 0);
	free(w->dir);
	free(w->conf);
	free(w->tdir);
	free(w->url);
	free(w->sum);
	*w = (struct world){0};
}

static int pv(const struct world *w, char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = test_pvagentv(w->bin, w->conf, out, ap);
	va_end(ap);
	cr_assert_neq(rc, -2, "sanitizer report:\n%s", *out);
	cr_assert_neq(rc, -1, "pvagent did not run");
	return rc;
}

/* doctor's FIX lines, each without its "FIX" word and padding, joined by
 * '\n' (malloc'd; "" when none). */
static char *fix_lines(const char *out)
{
	struct sbuf b = {0};
	for (const char *p = out; p && *p;) {
		size_t n = strcspn(p, "\n");
		if (strncmp(p, "FIX ", 4) == 0) {
			const char *q = p + 4;
			while (*q == ' ')
				q++;
			sbuf_addf(&b, "%.*s\n", (int)(n - (size_t)(q - p)), q);
		}
		p += n + (p[n] == '\n');
	}
	char *s = b.len ? sbuf_steal(&b) : strdup("");
	sbuf_free(&b);
	return s;
}

/* doctor: its exit and exactly the FIX lines want ("" none; each line
 * "CHECK DETAIL\n", padding squeezed). */
static void doctor_says(const struct world *w, int want_rc, const char *want)
{
	char *out = NULL;
	int rc = pv(w, &out, "doctor", NULL);
	char *got = fix_lines(out);
	/* squeeze the check column's padding */
	for (char *p = got; (p = strstr(p, "  "));)
		memmove(p, p + 1, strlen(p));
	cr_assert_str_eq(got, want, "doctor's FIX lines:\n%s\nwanted:\n%s\nall:\n%s", got, want,
			 out);
	cr_assert_eq(rc, want_rc, "%s", out);
	free(got);
	free(out);
}

static int build(const struct world *w, char **out, const char *storage)
{
	return storage ? pv(w, out, "--local", "image", "build", "debian-13", "--url", w->url,
			    "--checksum", w->sum, "--storage", storage, NULL)
		       : pv(w, out, "--local", "image", "build", "debian-13", "--url", w->url,
			    "--checksum", w->sum, NULL);
}

static void builds(const struct world *w, const char *storage)
{
	char *out = NULL;
	cr_assert_eq(build(w, &out, storage), 0, "%s", out);
	free(out);
}

/* image build fails saying why (any failure: a downloaded file's undo
 * may be reported apart) */
static void build_fails(const struct world *w, const char *why)
{
	char *out = NULL;
	cr_assert_neq(build(w, &out, NULL), 0, "%s", out);
	cr_assert(strstr(out, why), "%s", out);
	free(out);
}

Test(doctor, fresh_9_1_install_is_clean_and_image_build_works)
{
	static struct world w;
	world_start(&w, "tests/pvesim/scenarios/doctor-fresh.json", 0);
	doctor_says(&w, 0, "");
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "doctor", NULL), 0);
	cr_assert(strstr(out, "local (import): image build --import-storage"), "%s", out);
	cr_assert(strstr(out, "fencing standby: no HA resources, the CRM is idle") &&
		  !strstr(out, "note     ha"), "standby is PVE's idle state:\n%s", out);
	free(out);
	builds(&w, NULL);
	world_stop(&w);
}

Test(doctor, upgraded_from_8_4_needs_import_on_local)
{
	static struct world w;
	world_start(&w, "tests/pvesim/scenarios/doctor-upgraded.json", 0);
	doctor_says(&w, 1, "storage local has no 'import' content (image build --import-storage): "
			   "pvesm set local --content iso,vztmpl,backup,import\n");
	build_fails(&w, "storage 'local' is not configured for content-type 'import'");
	world_stop(&w);
	/* the same cluster after that pvesm set line: the fresh model */
	world_start(&w, "tests/pvesim/scenarios/doctor-fresh.json", 0);
	doctor_says(&w, 0, "");
	builds(&w, NULL);
	world_stop(&w);
}

Test(doctor, zfs_install_has_no_local_lvm)
{
	static struct world w;
	world_start(&w, "tests/pvesim/scenarios/doctor-zfs.json", 0);
	doctor_says(&w, 1, "storage local-lvm (images; image build --storage, template debian-13) "
			   "is not on pve1, or root@pam!pvagent may not see it (Datastore.Audit "
			   "or Datastore.AllocateSpace on /storage/local-lvm): name one it has "
			   "instead: local-zfs\n");
	build_fails(&w, "storage 'local-lvm' does not exist");
	builds(&w, "local-zfs");
	world_stop(&w);
}

/* Mid-upgrade (pve1, pve2 on 9.1, pve3 on 8.4; doctor talks to a 9.1
 * node): the guest-agent privilege of the 8.4 node cannot be checked nor
 * granted through a 9.x node: doctor says so (unknown, failing nothing),
 * naming both privileges and the node to add each through; a cluster of
 * one major has no such line. */
Test(doctor, mixed_majors_name_both_agent_privileges)
{
	static struct world w;
	world_start(&w, "tests/pvesim/scenarios/journey-mixed.json", 0);
	char *out = NULL;
	pv(&w, &out, "doctor", NULL);
	const char *line = strstr(out, "unknown  privilege");
	cr_assert_not_null(line, "%s", out);
	char *l = strndup(line, strcspn(line, "\n"));
	cr_expect(strstr(l, "VM.Monitor on /vms (guests' agent addresses on PVE 8 nodes: pve3) "
			    "cannot be checked through a PVE 9 node"), "%s", l);
	cr_expect(strstr(l, "add it to role PVAgent through pve3"), "%s", l);
	cr_expect(strstr(l, "VM.GuestAgent.Audit, for the PVE 9 nodes, through the node pvagent "
			    "talks to"), "%s", l);
	cr_expect_null(strstr(out, "FIX      privilege"), "%s", out);
	free(l);
	free(out);
	world_stop(&w);
	world_start(&w, "tests/pvesim/scenarios/doctor-fresh.json", 0);
	pv(&w, &out, "doctor", NULL);
	cr_expect_null(strstr(out, "VM.Monitor"), "%s", out);
	free(out);
	world_stop(&w);
}

/* The value of the --user-tag-access '...' that doctor's tags line gives. */
static char *printed_tag_access(const char *out)
{
	const char *at = strstr(out, "--user-tag-access '");
	cr_assert_not_null(at, "%s", out);
	at += strlen("--user-tag-access '");
	return strndup(at, strcspn(at, "'"));
}

Test(doctor, restricted_user_tag_access_refuses_pvagents_tags)
{
	static struct world w;
	world_start(&w, "tests/pvesim/scenarios/doctor-tags.json", 1);
	doctor_says(&w, 1, "tags datacenter user-tag-access: PVE refuses pvagent@pve!auto the tags "
			   "pvagent-image, pvagent-home-pve1, pvagent-home-pve2 (Sys.Modify on / "
			   "for modifying tag): pvesh set /cluster/options --user-tag-access "
			   "'user-allow=list,user-allow-list=prod;pvagent-image;pvagent-home-pve1;"
			   "pvagent-home-pve2'\n");
	build_fails(&w, "Sys.Modify for modifying tag 'pvagent-image'");
	/* the printed line, as the administrator runs it */
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "doctor", NULL), 1);
	char *v = printed_tag_access(out);
	free(out);
	char *form = strprintf("user-tag-access=%s", v);
	long st = 0;
	cr_assert_eq(sim_api(&sim, "PUT", "/cluster/options", form, &st, NULL), 0);
	cr_assert_eq(st, 200, "%s", form);
	free(form);
	free(v);
	doctor_says(&w, 0, "");
	builds(&w, NULL);
	world_stop(&w);
}

/* A token without Sys.Audit: the checks that need it say so (unknown,
 * naming the privilege), not PVE's raw 403. */
Test(doctor, a_check_it_may_not_make_names_the_privilege)
{
	static struct world w;
	world_start(&w, "tests/pvesim/scenarios/doctor-tags.json", 2);
	char *out = NULL;
	pv(&w, &out, "doctor", NULL);
	cr_assert(strstr(out, "cannot read the datacenter's user-tag-access: needs Sys.Audit on / "
			      "(pvagent@pve!noaudit has not)"), "%s", out);
	cr_assert(strstr(out, "cannot read pve1's clock: needs Sys.Audit on /nodes/pve1"), "%s",
		  out);
	cr_assert(strstr(out, "cannot read the HA stack's state: needs Sys.Audit on /"), "%s", out);
	cr_assert_null(strstr(out, "Permission check failed"), "%s", out);
	free(out);
	world_stop(&w);
}

/* rolling reads the cluster's status, HA and Ceph (Sys.Audit on /): a
 * token without it is told so by doctor --migrate (a note without
 * --migrate), and `rolling plan` is refused naming it. */
Test(doctor, rolling_needs_sys_audit_on_root)
{
	static struct world w;
	world_start(&w, "tests/pvesim/scenarios/doctor-tags.json", 2);
	static const char need[] = "Sys.Audit on / missing (rolling: the cluster's status, HA, "
				   "Ceph): pveum role modify PVAgent --append 1 --privs \"Sys.Audit\"";
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "doctor", "--migrate", NULL), 1, "%s", out);
	char *fix = fix_lines(out);
	cr_expect(strstr(fix, need), "%s", out);
	free(fix);
	free(out);
	pv(&w, &out, "doctor", NULL);
	fix = fix_lines(out);
	cr_expect_null(strstr(fix, "(rolling: "), "%s", out);
	cr_expect(strstr(out, need), "a note without --migrate:\n%s", out);
	free(fix);
	free(out);
	cr_assert_eq(pv(&w, &out, "rolling", "plan", NULL), 1, "%s", out);
	cr_expect(strstr(out, "Permission check failed (/, Sys.Audit)"), "%s", out);
	free(out);
	world_stop(&w);
}

/* The role on the paths pvagent(1) names instead of /, none on local (the
 * import storage): doctor asks each storage the commands use, names what
 * /storage/local lacks and that local is hidden from the token, and
 * image build is refused there. */
Test(doctor, privileges_are_asked_on_each_storage_used)
{
	static struct world w;
	world_start(&w, "tests/pvesim/scenarios/doctor-narrow.json", 1);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "doctor", NULL), 1, "%s", out);
	cr_assert(strstr(out, "pvagent@pve!narrow holds nothing on /storage/local: pveum acl "
			      "modify /storage/local --users pvagent@pve --roles PVAgent; pveum acl "
			      "modify /storage/local --tokens 'pvagent@pve!narrow' --roles PVAgent"),
		  "%s", out);
	cr_assert_null(strstr(out, "on /storage/local-lvm"), "%s", out);
	cr_assert_null(strstr(out, "nor, likely, elsewhere"), "%s", out);
	cr_assert(strstr(out, " local (import; image build --import-storage) is not on "
			      "pve1, or pvagent@pve!narrow may not see it"), "%s", out);
	cr_assert_null(strstr(out, "every privilege"), "%s", out);
	free(out);
	build_fails(&w, "Permission check failed (/storage/local, ");
	world_stop(&w);
}

/* The bridges are listed once each, vmbr0 first, then by name, without
 * the SDN VNet PVE lists with them (journey-mixed.json's cluster). */
Test(doctor, bridges_by_name_without_sdn_vnets)
{
	/* guests whose NICs are on vmbr9 and vmbr1: PVE's list is unordered */
	char dir[] = "/tmp/pvagent-test-doctor-mixed.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *scen = simcli_scenario_with(
		"tests/pvesim/scenarios/journey-mixed.json", "guests",
		"[{\"vmid\": 100, \"node\": \"pve1\", \"type\": \"qemu\", \"config\": {\"name\":"
		" \"a\", \"memory\": \"512\", \"net0\": \"virtio=BC:24:11:00:01:00,bridge=vmbr9\"}},"
		" {\"vmid\": 101, \"node\": \"pve1\", \"type\": \"qemu\", \"config\": {\"name\":"
		" \"b\", \"memory\": \"512\", \"net0\": \"virtio=BC:24:11:00:01:01,bridge=vmbr1\","
		" \"net1\": \"virtio=BC:24:11:00:01:02,bridge=vmbr0\"}}]",
		dir);
	/* and an SDN VNet, which any_bridge lists too: not a host bridge */
	char dir2[] = "/tmp/pvagent-test-doctor-vnet.XXXXXX";
	cr_assert_not_null(mkdtemp(dir2));
	char *scen2 = simcli_scenario_with(scen, "sdn_vnets", "[\"aaa\"]", dir2);
	struct world w = {0};
	world_start(&w, scen2, 0);
	char *out = NULL;
	pv(&w, &out, "doctor", NULL);
	const char *br = strstr(out, "bridges");
	cr_expect(br && strstr(br, "pve1: vmbr0, vmbr1, vmbr9\n"), "%s", out);
	free(out);
	world_stop(&w);
	free(scen);
	free(scen2);
	cr_assert_eq(test_remove_tree(dir), 0);
	cr_assert_eq(test_remove_tree(dir2), 0);
}
