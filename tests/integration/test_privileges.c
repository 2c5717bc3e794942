/* test_privileges.c - the README's least-privilege token, tested on PVE
 * 9.1 and 8.4: the `pveum` lines of README.md ("Connect a real host", one
 * block per major version, marked "# PVE 9.x" / "# PVE 8.x") are read out of
 * the README itself and turned into the simulator's roles, user, token and
 * ACLs (tests/pvesim/acl.h, PVE's permission model of that version); with
 * that token the
 * real pvagent ($PVAGENT_BIN) runs `up`, `virtio` (a rollback forced by a
 * fault, then the conversion) and `down` against a FreeBSD 9.0 IDE/e1000
 * guest behind a real sshd; and with one privilege taken from the role
 * (SDN.Use, VM.Config.Disk, ...) it gets PVE's 403, says which privilege on
 * which path is missing and what to grant, exits 1, and leaves nothing
 * behind. Guests on 127.0.5.N; needs root (sshd with ChrootDirectory). */
#include "clirun.h"
#include "err.h"
#include "cliworld.h"
#include "guestenv.h"
#include "pveprivs.h"
#include "pvevers.h"
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

/* ---- the README's pveum lines ------------------------------------------------ */

struct pveum {
	char *role, *privs;      /* pveum role add ROLE --privs "..." */
	char *user;              /* pveum user add USER */
	char *token;             /* pveum user token add USER NAME: "USER!NAME" */
	bool privsep;            /*   --privsep 1 */
	struct sbuf user_acl;    /* pveum acl modify PATH --users USER --roles R */
	struct sbuf token_acl;   /*   ... --tokens 'USER!NAME' ..., as scenario JSON */
	int lines;
};

static void pveum_free(struct pveum *p)
{
	free(p->role);
	free(p->privs);
	free(p->user);
	free(p->token);
	sbuf_free(&p->user_acl);
	sbuf_free(&p->token_acl);
}

/* Split a shell line into words ('...' and "..." quoting, # comments). */
static size_t words(const char *line, char **w, size_t max)
{
	size_t n = 0;
	const char *p = line;
	while (*p && n < max) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '#')
			break;
		struct sbuf b = {0};
		while (*p && *p != ' ' && *p != '\t') {
			if (*p == '\'' || *p == '"') {
				char q = *p++;
				while (*p && *p != q)
					cr_assert_eq(sbuf_addc(&b, *p++), 0);
				cr_assert_eq(*p, q, "unterminated quote in: %s", line);
				p++;
			} else {
				cr_assert_eq(sbuf_addc(&b, *p++), 0);
			}
		}
		w[n++] = b.len ? sbuf_steal(&b) : strdup("");
		sbuf_free(&b);
	}
	return n;
}

static const char *opt(char **w, size_t n, const char *name)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (strcmp(w[i], name) == 0)
			return w[i + 1];
	return NULL;
}

/* One pveum command line. */
static void pveum_line(struct pveum *p, const char *line)
{
	char *w[32];
	size_t n = words(line, w, 32);
	cr_assert_geq(n, 3, "short pveum line: %s", line);
	if (strcmp(w[1], "role") == 0 && strcmp(w[2], "add") == 0) {
		cr_assert(n >= 4 && opt(w, n, "--privs"), "%s", line);
		p->role = strdup(w[3]);
		p->privs = strdup(opt(w, n, "--privs"));
	} else if (strcmp(w[1], "user") == 0 && strcmp(w[2], "add") == 0) {
		p->user = strdup(w[3]);
	} else if (strcmp(w[1], "user") == 0 && strcmp(w[2], "token") == 0 &&
		   strcmp(w[3], "add") == 0) {
		cr_assert_geq(n, 6, "%s", line);
		p->token = strprintf("%s!%s", w[4], w[5]);
		const char *ps = opt(w, n, "--privsep");
		p->privsep = ps && strcmp(ps, "1") == 0;
	} else if (strcmp(w[1], "acl") == 0 && strcmp(w[2], "modify") == 0) {
		const char *tok = opt(w, n, "--tokens"), *usr = opt(w, n, "--users");
		const char *roles = opt(w, n, "--roles"), *prop = opt(w, n, "--propagate");
		cr_assert(roles && (tok || usr), "%s", line);
		struct sbuf *b = tok ? &p->token_acl : &p->user_acl;
		cr_assert_eq(sbuf_addf(b, "%s{\"path\": \"%s\", \"role\": \"%s\", \"propagate\": %s}",
				       b->len ? ", " : "", w[3], roles,
				       prop && strcmp(prop, "0") == 0 ? "false" : "true"),
			     0);
	} else {
		cr_assert_fail("a pveum line this test does not know: %s", line);
	}
	for (size_t i = 0; i < n; i++)
		free(w[i]);
	p->lines++;
}

/* The pveum lines of README.md's block for PVE major (a ```sh block whose
 * "# PVE 9.x" line names the version; backslash continuations joined). */
static void readme_pveum(struct pveum *p, int major)
{
	memset(p, 0, sizeof *p);
	const char *readme = getenv("PVAGENT_README");
	char *text = NULL;
	size_t len = 0;
	cr_assert_eq(read_file(readme ? readme : "README.md", &text, &len), 0,
		     "cannot read README.md (run from the tree)");
	struct sbuf cmd = {0};
	int block = 0; /* the version of the block we are in, 0 outside one */
	for (char *l = text; l && *l;) {
		char *nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);
		bool cont = ll && l[ll - 1] == '\\';
		if (strncmp(l, "# PVE ", 6) == 0)
			block = atoi(l + 6);
		else if (strncmp(l, "```", 3) == 0)
			block = 0;
		else if (cmd.len || strncmp(l, "pveum ", 6) == 0)
			cr_assert(block, "a pveum line outside a '# PVE N.x' block: %.*s", (int)ll, l);
		if (block == major && (cmd.len || strncmp(l, "pveum ", 6) == 0)) {
			cr_assert_eq(sbuf_addn(&cmd, l, cont ? ll - 1 : ll), 0);
			if (!cont) {
				pveum_line(p, sbuf_str(&cmd));
				sbuf_reset(&cmd);
			}
		}
		l = nl ? nl + 1 : NULL;
	}
	sbuf_free(&cmd);
	free(text);
	cr_assert(p->role && p->user && p->token && p->user_acl.len && p->token_acl.len,
		  "README.md's PVE %d.x block lacks a pveum role, user, token or acl line "
		  "(%d lines)", major, p->lines);
}

/* The role's privileges without `drop` (NULL: all of them), comma separated. */
static char *privs_without(const char *privs, const char *drop)
{
	char *w[64];
	size_t n = words(privs, w, 64);
	struct sbuf b = {0};
	bool dropped = !drop;
	for (size_t i = 0; i < n; i++) {
		if (drop && strcmp(w[i], drop) == 0)
			dropped = true;
		else
			cr_assert_eq(sbuf_addf(&b, "%s%s", b.len ? "," : "", w[i]), 0);
		free(w[i]);
	}
	cr_assert(dropped, "the README's role has no %s", drop);
	char *out = sbuf_steal(&b);
	sbuf_free(&b);
	return out;
}

/* ---- the world ----------------------------------------------------------------- */

static struct guestenv ge;
static struct simproc sp;
static char *conf, *bin;

static void cleanup(void)
{
	(void)guestenv_watch_stop(&ge);
	(void)simproc_stop(&sp);
	guestenv_stop(&ge);
}

TestSuite(privileges, .fini = cleanup, .timeout = 600);

/* The version of the world, and of the README block whose role it uses:
 * the same unless a test says otherwise. */
static const struct test_pve *cur;
static int role_major;

/* A test run on each version (pvevers.h) as cur. */
#define ON_EACH_VERSION(name)                                                   \
	static void name##_on(void);                                            \
	ON_EACH_PVE_VERSION(privileges, name)                                   \
	{                                                                       \
		cur = pv;                                                       \
		role_major = pv->major;                                         \
		name##_on();                                                    \
	}                                                                       \
	static void name##_on(void)

#define SECRET "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

/* Start guest 190 (fixture, IDE, e1000, running) on addr, the
 * template VM 9014 and the simulator with the README's role, minus drop,
 * for its user and token; pvagent.conf with that token; the shipped
 * template freebsd-14 (up runs with --no-inject: no SSH to the clone). */
static void world_fx(const char *addr, const char *fixture, const char *drop)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (sshd with ChrootDirectory)");
	const char *b = getenv("PVAGENT_BIN"), *s = getenv("PVESIM_BIN");
	bin = strdup(b ? b : "build/san/pvagent");
	if (access(bin, X_OK) < 0 || access(s ? s : "build/san/pvesim", X_OK) < 0)
		cr_skip_test("no pvagent or simulator binary (make build/san/pvagent build/san/pvesim)");
	struct pveum p;
	readme_pveum(&p, role_major);
	cr_assert(p.privsep, "the README's token is privilege-separated (--privsep 1)");
	struct guestenv_opts go = {.fixture = fixture, .addr = addr};
	cr_assert_eq(guestenv_start(&ge, &go), 0, "guest did not start");
	char *privs = privs_without(p.privs, drop);
	char *scen = strprintf(
		"{\"pve_version\": \"%s\", \"cluster_name\": \"t\",\n"
		" \"nodes\": [{\"name\": \"pve1\", \"cpus\": 8, \"memory_mib\": 32768, \"online\": true,"
		" \"ip\": \"10.10.0.11\"}],\n"
		" \"storages\": [{\"id\": \"local-lvm\", \"type\": \"lvmthin\", \"shared\": false,"
		" \"nodes\": [\"pve1\"], \"content\": \"images,rootdir\", \"size_gib\": 500}],\n"
		" \"roles\": {\"%s\": \"%s\"},\n"
		" \"tokens\": [{\"id\": \"%s\", \"secret\": \"" SECRET "\", \"privsep\": %s,"
		" \"acl\": [%s]}],\n"
		" \"users\": [{\"id\": \"%s\", \"password\": \"unused-password\", \"acl\": [%s]},\n"
		"  {\"id\": \"root@pam\", \"password\": \"root-password\"}],\n"
		" \"guests\": [\n"
		"  {\"vmid\": 9014, \"node\": \"pve1\", \"type\": \"qemu\", \"fixture\": \"freebsd-14\",\n"
		"   \"config\": {\"name\": \"freebsd-14-base\", \"template\": 1, \"memory\": \"1024\","
		" \"cores\": 1, \"ostype\": \"other\", \"agent\": \"1\", \"boot\": \"order=virtio0\","
		" \"virtio0\": \"local-lvm:base-9014-disk-0,size=16G\","
		" \"net0\": \"virtio=BC:24:11:00:90:14,bridge=vmbr0\"}},\n"
		"  {\"vmid\": 190, \"node\": \"pve1\", \"type\": \"qemu\", \"status\": \"running\",\n"
		"   \"fixture\": \"%s\", \"address\": \"%s\", \"root\": \"%s\",\n"
		"   \"config\": {\"name\": \"legacy\", \"memory\": \"1024\", \"cores\": 1,"
		" \"ostype\": \"other\", \"boot\": \"order=ide0;net0\","
		" \"ide0\": \"local-lvm:vm-190-disk-0,size=16G\","
		" \"net0\": \"e1000=BC:24:11:00:01:90,bridge=vmbr0\"}}]}\n",
		cur->ver, p.role, privs, p.token, p.privsep ? "true" : "false", sbuf_str(&p.token_acl), p.user,
		sbuf_str(&p.user_acl), fixture, ge.sd.addr, ge.sd.root);
	free(privs);
	const char *etc = ge.sd.etc;
	char *spath = strprintf("%s/scenario.json", etc), *tdir = strprintf("%s/templates", etc);
	char *secret = strprintf("%s/token.secret", etc), *tmpl = strprintf("%s/freebsd-14.tmpl", tdir);
	conf = strprintf("%s/pvagent.conf", etc);
	cr_assert(scen && spath && tdir && secret && tmpl && conf);
	cr_assert_eq(test_write_file(spath, scen, 0644), 0);
	static const char *const fast[] = {"--time-scale", "100", NULL};
	cr_assert_eq(simproc_start(&sp, spath, fast), 0, "the simulator did not start");
	cr_assert_str_eq(sp.token_id, p.token);
	cr_assert_eq(guestenv_watch_start(&ge), 0, "boot watcher did not start");
	cr_assert_eq(mkdir(tdir, 0755), 0);
	/* the shipped template: cloud-init drive, NIC, boot order, CPU type, ... */
	char *t = NULL;
	size_t tlen = 0;
	cr_assert_eq(read_file("templates/freebsd-14.tmpl", &t, &tlen), 0, "run from the tree");
	cr_assert_eq(test_write_file(tmpl, t, 0644), 0);
	free(t);
	cr_assert_eq(test_write_file(secret, SECRET "\n", 0600), 0);
	char *c = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			    "fingerprint = %s\nnode = pve1\n"
			    "[ssh]\nuser = root\nport = %d\nidentity = %s\nknown_hosts = %s\n"
			    "host_key_policy = strict\ntimeout = 10s\n"
			    "[paths]\ntemplates = %s\nstate = %s\n",
			    sp.url, p.token, secret, sp.fingerprint, ge.sd.port, ge.sd.identity,
			    ge.known_hosts, tdir, etc);
	cr_assert_eq(test_write_file(conf, c, 0600), 0);
	free(c);
	free(scen);
	free(spath);
	free(tdir);
	free(secret);
	free(tmpl);
	pveum_free(&p);
}

static void world(const char *addr, const char *drop)
{
	world_fx(addr, "freebsd-9.0", drop);
}

static void world_stop(void)
{
	cr_assert_eq(guestenv_watch_stop(&ge), 0);
	cr_assert_eq(simproc_stop(&sp), 0, "simulator did not exit cleanly");
	guestenv_stop(&ge);
	free(conf);
	free(bin);
	conf = bin = NULL;
}

static int pv(char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = test_pvagentv(bin, conf, out, ap);
	va_end(ap);
	cr_assert_neq(rc, -2, "pvagent: sanitizer report:\n%s", *out ? *out : "");
	cr_assert_geq(rc, 0, "cannot run %s", bin);
	return rc;
}

/* virtio stopped at its preflight: no snapshot, no shutdown, no config
 * change was sent. */
static void expect_untouched(void)
{
	json_object *log = simproc_requests(&sp);
	cr_assert_not_null(log);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/snapshot", -1), 0);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/status/shutdown", -1), 0);
	cr_expect_eq(simproc_count_requests(log, "PUT", "*/config", -1), 0);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/config", -1), 0);
	cr_expect_gt(simproc_count_requests(log, "GET", "/access/permissions", -1), 0,
		     "asked PVE what the token has");
	json_object_put(log);
}

static void expect_key(int vmid, const char *key, const char *want)
{
	char *got = simproc_config_key(&sp, vmid, key);
	if (want)
		cr_expect(got && strcmp(got, want) == 0, "%d %s: %s, want %s", vmid, key,
			  got ? got : "(none)", want);
	else
		cr_expect_null(got, "%d %s: %s, want none", vmid, key, got);
	free(got);
}

/* ---- tests ---------------------------------------------------------------------- */

ON_EACH_VERSION(readme_role_runs_up_virtio_and_down)
{
	world("127.0.5.10", NULL);
	char *out = NULL;
	int rc = pv(&out, "up", "web1", "-t", "freebsd-14", "--no-inject", NULL);
	cr_assert_eq(rc, 0, "up with the README's token: exit %d\n%s", rc, out);
	free(out);
	cr_expect_eq(simproc_named(&sp, "web1"), 1);

	/* the second config change (the virtio devices) is refused (a 400: a
	 * definite no, where a 500 is looked into and sent again): the
	 * rollback puts the saved config back, with this token */
	cr_assert_eq(simproc_fault(&sp, "{\"method\": \"PUT\", \"path\": \"/qemu/190/config$\","
					" \"nth\": 2, \"times\": 1, \"action\": \"status\","
					" \"status\": 400, \"message\": \"unable to parse drive options\"}"),
		     0);
	rc = pv(&out, "virtio", "legacy", "--address", ge.sd.addr, "--disk-bus", "virtio-blk", NULL);
	cr_assert_eq(rc, 1, "a failed conversion rolled back: exit %d\n%s", rc, out);
	cr_expect(strstr(out, "rolling back") || strstr(out, "rolled back"), "%s", out);
	free(out);
	expect_key(190, "ide0", "local-lvm:vm-190-disk-0,size=16G");
	expect_key(190, "net0", "e1000=BC:24:11:00:01:90,bridge=vmbr0");
	expect_key(190, "virtio0", NULL);

	rc = pv(&out, "virtio", "legacy", "--address", ge.sd.addr, "--disk-bus", "virtio-blk", NULL);
	cr_assert_eq(rc, 0, "virtio with the README's token: exit %d\n%s", rc, out);
	free(out);
	expect_key(190, "virtio0", "local-lvm:vm-190-disk-0,size=16G");
	expect_key(190, "net0", "virtio=BC:24:11:00:01:90,bridge=vmbr0");

	rc = pv(&out, "down", "web1", "--yes", NULL);
	cr_assert_eq(rc, 0, "down with the README's token: exit %d\n%s", rc, out);
	free(out);
	cr_expect_eq(simproc_named(&sp, "web1"), 0);
	world_stop();
}

/* The message names the privilege, the path and what to grant. */
static void expect_named(const char *out, const char *path, const char *priv)
{
	char *pve = strprintf("Permission check failed (%s, %s)", path, priv);
	char *grant = strprintf("pveum acl modify %s", path);
	cr_expect(strstr(out, pve), "PVE's words missing:\n%s", out);
	cr_expect(strstr(out, "lacks the privilege"), "no explanation:\n%s", out);
	cr_expect(strstr(out, grant) && strstr(out, priv), "no grant hint:\n%s", out);
	free(pve);
	free(grant);
}

ON_EACH_VERSION(without_sdn_use_up_is_refused_and_names_the_bridge)
{
	world("127.0.5.11", "SDN.Use");
	char *out = NULL;
	int rc = pv(&out, "up", "web1", "-t", "freebsd-14", "--no-inject", NULL);
	cr_expect_eq(rc, 1, "exit %d\n%s", rc, out);
	expect_named(out, "/sdn/zones/localnetwork/vmbr0", "SDN.Use");
	free(out);
	cr_expect_eq(simproc_named(&sp, "web1"), 0, "no guest left");
	rc = pv(&out, "--json", "up", "web1", "-t", "freebsd-14", "--no-inject", NULL);
	cr_expect_eq(rc, 1);
	json_object *o = cli_final_json(out);
	const char *kind = cli_jpath(o, (const char *const[]){"guests", "0", "error", "kind", NULL});
	const char *msg = cli_jpath(o, (const char *const[]){"guests", "0", "error", "message", NULL});
	const char *step = cli_jpath(o, (const char *const[]){"guests", "0", "error", "step", NULL});
	cr_expect(kind && strcmp(kind, "permission") == 0, "%s", out);
	cr_expect(step && strcmp(step, "clone") == 0, "%s", out);
	cr_expect(msg && strstr(msg, "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use) "
				     "(HTTP 403)\n  the API token lacks the privilege SDN.Use"),
		  "%s", out);
	json_object_put(o);
	free(out);
	world_stop();
}

ON_EACH_VERSION(without_vm_config_disk_virtio_stops_before_changing_anything)
{
	world("127.0.5.12", "VM.Config.Disk");
	char *out = NULL;
	int rc = pv(&out, "virtio", "legacy", "--address", ge.sd.addr, "--disk-bus", "virtio-blk", NULL);
	cr_expect_eq(rc, 1, "exit %d\n%s", rc, out);
	expect_named(out, "/vms/190", "VM.Config.Disk");
	cr_expect(strstr(out, "preflight: Permission check failed (/vms/190, VM.Config.Disk)"),
		  "refused before anything changed:\n%s", out);
	free(out);
	expect_untouched();
	expect_key(190, "ide0", "local-lvm:vm-190-disk-0,size=16G");
	expect_key(190, "net0", "e1000=BC:24:11:00:01:90,bridge=vmbr0");
	world_stop();
}

/* The role is minimal: without any one of the guest commands' privileges
 * up, virtio or down fails naming it, but for two that are documented as
 * such: VM.Snapshot (virtio goes on without its snapshot, saying so) and
 * VM.Config.HWType (only --disk-bus virtio-scsi sets scsihw). Those the
 * role holds for migrate, drain and image build only (pveprivs.h; not in
 * setup --minimal's role) are those commands' to prove (test_setup,
 * test_migrate). */
ON_EACH_VERSION(each_privilege_of_the_readme_role_is_needed)
{
	struct pveum p;
	readme_pveum(&p, role_major);
	char *w[64];
	size_t n = words(p.privs, w, 64);
	pveum_free(&p);
	size_t tried = 0;
	for (size_t i = 0; i < n; i++) {
		if (!pveprivs_in_role(w[i], role_major, 0)) {
			cr_assert(pveprivs_in_role(w[i], role_major, PVEPRIVS_ALL), "%s", w[i]);
			free(w[i]);
			continue;
		}
		tried++;
		world("127.0.5.13", w[i]);
		char *out = NULL, *all = NULL;
		int rc = pv(&out, "up", "web1", "-t", "freebsd-14", "--no-inject", NULL);
		if (rc == 0) {
			free(out);
			rc = pv(&out, "virtio", "legacy", "--address", ge.sd.addr, "--disk-bus",
				"virtio-blk", NULL);
		}
		if (rc == 0) {
			all = out;
			rc = pv(&out, "down", "web1", "--yes", NULL);
		}
		bool optional = strcmp(w[i], "VM.Snapshot") == 0 ||
				strcmp(w[i], "VM.Config.HWType") == 0;
		if (optional) {
			cr_expect_eq(rc, 0, "without %s: exit %d\n%s", w[i], rc, out);
			if (strcmp(w[i], "VM.Snapshot") == 0)
				cr_expect(all && strstr(all, "no snapshot taken (Permission check failed "
							     "(/vms/190, VM.Snapshot)"),
					  "virtio says it took no snapshot:\n%s", all ? all : "");
		} else {
			cr_expect_neq(rc, 0, "%s is not needed:\n%s", w[i], out);
			/* PVE's "(PATH, PRIV)", or where PVE names nothing (the
			 * clone's `or`) pvagent's "PVE refused ...: PRIV on PATH" */
			char *want = strprintf(", %s)", w[i]), *ours = strprintf(" %s on /", w[i]);
			const char *refused = strstr(out, "PVE refused ");
			bool named = strstr(out, want) || (refused && strstr(refused, ours)) ||
				     (strcmp(w[i], "VM.Audit") == 0 && strstr(out, "has VM.Audit on"));
			cr_expect(named, "without %s the failure does not name it:\n%s", w[i], out);
			free(want);
			free(ours);
		}
		free(all);
		free(out);
		world_stop();
		free(w[i]);
	}
	cr_assert_geq(tried, 16, "the guest commands' privileges: %zu", tried);
}

/* --disk-bus virtio-scsi sets scsihw: VM.Config.HWType, which the README
 * keeps in the role for it. */
ON_EACH_VERSION(virtio_scsi_needs_vm_config_hwtype)
{
	world_fx("127.0.5.14", "freebsd-14", "VM.Config.HWType");
	char *out = NULL;
	int rc = pv(&out, "virtio", "legacy", "--address", ge.sd.addr, "--disk-bus", "virtio-scsi",
		    NULL);
	cr_expect_eq(rc, 1, "exit %d\n%s", rc, out);
	expect_named(out, "/vms/190", "VM.Config.HWType");
	free(out);
	expect_untouched();
	expect_key(190, "ide0", "local-lvm:vm-190-disk-0,size=16G");
	expect_key(190, "scsihw", NULL);
	world_stop();
}

/* A cluster upgraded from 8 to 9: the role the 8.x block made holds
 * VM.Monitor, which PVE 9 drops as it reads user.cfg (saying so on the
 * simulator's stderr). `up` of a template whose address comes from the
 * guest agent then stops before it creates anything, naming
 * VM.GuestAgent.Audit, the path and the grant line. */
Test(privileges, upgraded_cluster_up_stops_before_creating_anything)
{
	cur = &test_pve_versions[0];
	cr_assert_eq(cur->major, 9);
	role_major = 8;
	world("127.0.5.15", NULL);
	char *warn = NULL;
	size_t wlen = 0;
	cr_assert_eq(read_file(sp.stderr_path, &warn, &wlen), 0);
	cr_expect(strstr(warn, "user config - ignore invalid privilege 'VM.Monitor'"),
		  "the simulator says it dropped VM.Monitor:\n%s", warn);
	free(warn);
	char *out = NULL;
	int rc = pv(&out, "up", "web1", "-t", "freebsd-14", "--no-inject", NULL);
	cr_expect_eq(rc, 1, "exit %d\n%s", rc, out);
	expect_named(out, "/vms", "VM.GuestAgent.Audit");
	cr_expect(strstr(out, "pveum role modify PVAgent --append 1 --privs VM.GuestAgent.Audit"),
		  "the grant line:\n%s", out);
	free(out);
	json_object *log = simproc_requests(&sp);
	cr_assert_not_null(log);
	cr_expect_eq(simproc_count_requests(log, "POST", "*", -1), 0, "nothing was created");
	cr_expect_gt(simproc_count_requests(log, "GET", "/access/permissions", -1), 0);
	json_object_put(log);
	cr_expect_eq(simproc_named(&sp, "web1"), 0);
	world_stop();
}

/* ---- a 403 explained from pvagent's own table (pveprivs.h) -------------- */

/* PVE's bare "Permission check failed" (an `or` check) on request what. */
static char *bare_403(const char *what)
{
	struct pve_error e = {0};
	pve_error_set(&e, PVE_ERR_PERM, "Permission check failed");
	e.http_status = 403;
	e.what = strdup(what);
	char *f = pve_error_format(&e);
	pve_error_clear(&e);
	return f;
}

/* download-url's `or` (pve-storage Status.pm): PVE names nothing; pvagent
 * names both clauses and both alternatives, and grants the single ones. */
Test(privileges_table, a_bare_403_on_download_url_names_what_it_needs)
{
	char *f = bare_403("POST /nodes/pve1/storage/local/download-url");
	cr_expect(strstr(f, "PVE refused POST /nodes/pve1/storage/local/download-url (403): the "
			    "token needs Datastore.AllocateTemplate on /storage/local, and "
			    "Sys.AccessNetwork on /nodes/pve1 (or Sys.Audit and Sys.Modify on /): "
			    "pveum role modify PVAgent --append 1 --privs "
			    "\"Datastore.AllocateTemplate,Sys.AccessNetwork\""),
		  "%s", f);
	free(f);
}

/* the same request path for a container and a VM; a migrate's 403, and the
 * guest agent's privilege per version when the version is not known */
Test(privileges_table, migrate_and_agent_requests_name_their_privileges)
{
	char *f = bare_403("POST /nodes/pve2/lxc/105/migrate");
	cr_expect(strstr(f, "the token needs VM.Migrate on /vms/105: pveum role modify PVAgent "
			    "--append 1 --privs \"VM.Migrate\""),
		  "%s", f);
	free(f);
	f = bare_403("GET /nodes/pve1/qemu/100/agent/network-get-interfaces");
	cr_expect(strstr(f, "on PVE 8.x: VM.Monitor on /vms/100; on PVE 9.x: VM.GuestAgent.Audit on "
			    "/vms/100 (or VM.GuestAgent.Unrestricted on /vms/100)"),
		  "%s", f);
	free(f);
	char *n = pveprivs_request_needs("GET", "/nodes/pve1/qemu/100/agent/network-get-interfaces", 8);
	cr_expect_str_eq(n, "VM.Monitor on /vms/100: pveum role modify PVAgent --append 1 --privs "
			    "\"VM.Monitor\"");
	free(n);
	/* a request not in the table, and a storage path that is no guest's */
	cr_expect_null(pveprivs_request_needs("GET", "/nodes/pve1/network", 9));
	cr_expect_null(pveprivs_request_needs("DELETE", "/nodes/pve1/storage/local", 9));
	/* PVE's own "(PATH, PRIV)" wins over the table */
	struct pve_error e = {0};
	pve_error_set(&e, PVE_ERR_PERM, "Permission check failed (/vms/105, VM.Migrate)");
	e.what = strdup("POST /nodes/pve2/lxc/105/migrate");
	f = pve_error_format(&e);
	cr_expect(strstr(f, "lacks the privilege VM.Migrate on /vms/105") && !strstr(f, "PVE refused"),
		  "%s", f);
	free(f);
	pve_error_clear(&e);
}
