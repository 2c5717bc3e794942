/* test_pvagent.c - the command-line tool (agent/pvagent.c) run as a user
 * runs it ($PVAGENT_BIN, default build/san/pvagent) against the PVE
 * simulator and a real sshd guest (tests/support/guestenv, as root):
 * `inject --address` for a guest whose address PVE cannot tell (no guest
 * agent), its refusals, and `up` running inject (text and --json output,
 * exit codes, --no-inject). Each test has its own simulator, guest and
 * 127.0.1.N address; the tool's own sanitizer reports fail the test. */
#include "guestenv.h"
#include "simproc.h"
#include "sshd.h"
#include "util.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct guestenv ge;
static struct simproc sim;

static void cleanup(void)
{
	simproc_stop(&sim);
	guestenv_stop(&ge);
}

TestSuite(pvagent_cli, .fini = cleanup, .timeout = 120);

/* The per-test world: a guest, a simulator whose cluster holds a FreeBSD
 * template VM and a running guest "cli1" without a guest agent (its
 * description names template clitest), two templates and a pvagent.conf. */
struct world {
	char *conf;       /* pvagent.conf path */
	const char *bin;  /* the pvagent under test */
};

static void write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "cannot write %s", path);
	cr_assert_eq(fputs(text, f) < 0, 0);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(path, mode), 0);
}

static void write_fmt(const char *path, mode_t mode, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void write_fmt(const char *path, mode_t mode, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct sbuf b = {0};
	cr_assert_eq(sbuf_vaddf(&b, fmt, ap), 0);
	va_end(ap);
	write_text(path, sbuf_str(&b), mode);
	sbuf_free(&b);
}

static void world_start(struct world *w, const char *addr)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (sshd with ChrootDirectory)");
	const char *bin = getenv("PVAGENT_BIN");
	w->bin = bin ? bin : "build/san/pvagent";
	if (access(w->bin, X_OK) < 0)
		cr_skip_test("no pvagent binary (make build/san/pvagent)");
	const char *sim_bin = getenv("PVESIM_BIN");
	if (access(sim_bin ? sim_bin : "build/san/pvesim", X_OK) < 0)
		cr_skip_test("no simulator binary (make build/san/pvesim)");
	struct guestenv_opts o = {.fixture = "freebsd-14", .addr = addr};
	cr_assert_eq(guestenv_start(&ge, &o), 0, "cannot start the guest (see stderr)");
	const char *etc = ge.sd.etc;

	char *scen = strprintf("%s/scenario.json", etc);
	cr_assert_not_null(scen);
	write_fmt(scen, 0644,
		  "{\"pve_version\": \"8.4\", \"cluster_name\": \"t\",\n"
		  " \"nodes\": [{\"name\": \"pve1\", \"cpus\": 8, \"memory_mib\": 32768,"
		  " \"online\": true, \"ip\": \"10.10.0.11\"}],\n"
		  " \"storages\": [{\"id\": \"local-lvm\", \"type\": \"lvmthin\", \"shared\": false,"
		  " \"nodes\": [\"pve1\"], \"content\": \"images,rootdir\", \"size_gib\": 500}],\n"
		  " \"tokens\": [{\"id\": \"root@pam!pvagent\","
		  " \"secret\": \"6b1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\", \"privs\": \"all\"}],\n"
		  " \"users\": [], \"ha\": [], \"faults\": [],\n"
		  " \"guests\": [\n"
		  "  {\"vmid\": 9014, \"node\": \"pve1\", \"type\": \"qemu\",\n"
		  "   \"config\": {\"name\": \"fbsd-base\", \"template\": 1, \"memory\": \"1024\","
		  " \"cores\": 1, \"ostype\": \"other\", \"boot\": \"order=virtio0\","
		  " \"virtio0\": \"local-lvm:base-9014-disk-0,size=16G\","
		  " \"net0\": \"virtio=BC:24:11:00:90:14,bridge=vmbr0\"}},\n"
		  "  {\"vmid\": 150, \"node\": \"pve1\", \"type\": \"qemu\", \"status\": \"running\",\n"
		  "   \"config\": {\"name\": \"cli1\", \"memory\": \"1024\", \"cores\": 1,"
		  " \"ostype\": \"other\", \"boot\": \"order=virtio0\","
		  " \"description\": \"cli1: FreeBSD 14.1 (pvagent template clitest)\","
		  " \"virtio0\": \"local-lvm:vm-150-disk-0,size=16G\","
		  " \"net0\": \"virtio=BC:24:11:00:01:50,bridge=vmbr0\"}}]}\n");
	/* the tool waits for tasks in real time: run the simulator fast */
	static const char *const fast[] = {"--time-scale", "100", NULL};
	cr_assert_eq(simproc_start(&sim, scen, fast), 0, "simulator did not start");
	free(scen);

	/* templates: clitest finds the address with the guest agent (which
	 * cli1 lacks); clistatic names the guest's address */
	char *tdir = strprintf("%s/templates", etc);
	cr_assert_not_null(tdir);
	cr_assert_eq(mkdir(tdir, 0755), 0);
	static const char common[] =
		"[template]\nkind = qemu\nos = freebsd\nos_version = 14.1\n"
		"[source]\nclone = fbsd-base\nfull = yes\nstorage = local-lvm\n"
		"[pve]\ndescription = ${name}: FreeBSD 14.1 (pvagent template %s)\ncores = 1\n"
		"[rc.conf]\npvagent_cli_test = \"YES\"\n"
		"[guest]\nuser = root\nport = %d\n";
	char *p = strprintf("%s/clitest.tmpl", tdir);
	struct sbuf t = {0};
	cr_assert_eq(sbuf_addf(&t, common, "clitest", ge.sd.port), 0);
	cr_assert_eq(sbuf_add(&t, "address = agent\n"), 0);
	write_text(p, sbuf_str(&t), 0644);
	sbuf_reset(&t);
	free(p);
	p = strprintf("%s/clistatic.tmpl", tdir);
	cr_assert_eq(sbuf_addf(&t, common, "clistatic", ge.sd.port), 0);
	cr_assert_eq(sbuf_addf(&t, "address = static\nip = %s\n", ge.sd.addr), 0);
	write_text(p, sbuf_str(&t), 0644);
	sbuf_reset(&t);
	free(p);
	/* cliip: the address is a variable, as in the shipped freebsd-9.0 */
	p = strprintf("%s/cliip.tmpl", tdir);
	cr_assert_eq(sbuf_addf(&t, common, "cliip", ge.sd.port), 0);
	cr_assert_eq(sbuf_add(&t, "address = static\nip = ${ip}\n[vars]\nip =\n"), 0);
	write_text(p, sbuf_str(&t), 0644);
	sbuf_free(&t);
	free(p);

	char *secret = strprintf("%s/token.secret", etc);
	write_fmt(secret, 0600, "%s\n", sim.token_secret);
	w->conf = strprintf("%s/pvagent.conf", etc);
	write_fmt(w->conf, 0600,
		  "[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\nfingerprint = %s\n"
		  "node = pve1\n"
		  "[ssh]\nuser = root\nidentity = %s\nknown_hosts = %s\nhost_key_policy = strict\n"
		  "timeout = 10s\n"
		  "[paths]\ntemplates = %s\nstate = %s\n",
		  sim.url, sim.token_id, secret, sim.fingerprint, ge.sd.identity, ge.known_hosts,
		  tdir, etc);
	free(secret);
	free(tdir);
}

static void world_free(struct world *w)
{
	free(w->conf);
	cr_assert_eq(simproc_stop(&sim), 0, "simulator did not exit cleanly");
}

/* Run pvagent -c CONF ARGS... (NULL-terminated); *out gets stdout and
 * stderr. Returns the exit status. */
static int pv(const struct world *w, char **out, ...)
{
	const char *argv[24] = {w->bin, "-c", w->conf};
	size_t n = 3;
	va_list ap;
	va_start(ap, out);
	for (const char *a; (a = va_arg(ap, const char *)) && n + 1 < 24;)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	int rc = test_run(argv, NULL, out);
	cr_assert_geq(rc, 0, "cannot run %s", w->bin);
	cr_assert_null(strstr(*out, "Sanitizer"), "pvagent: sanitizer report:\n%s", *out);
	cr_assert_null(strstr(*out, "runtime error"), "pvagent: UBSan:\n%s", *out);
	return rc;
}

/* The final --json object (the line holding "command"). */
static json_object *final_json(const char *out)
{
	const char *line = NULL;
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (*p == '{' && strstr(p, "\"command\"") &&
		    (!strchr(p, '\n') || strstr(p, "\"command\"") < strchr(p, '\n')))
			line = p;
	cr_assert_not_null(line, "no final JSON object in:\n%s", out);
	char *one = strndup(line, strcspn(line, "\n"));
	json_object *o = json_tokener_parse(one);
	cr_assert_not_null(o, "bad JSON: %s", one);
	free(one);
	return o;
}

static const char *jpath(json_object *o, const char *const *keys)
{
	for (size_t i = 0; keys[i] && o; i++) {
		json_object *v = NULL;
		if (json_object_is_type(o, json_type_array))
			v = json_object_array_get_idx(o, (size_t)atoi(keys[i]));
		else if (!json_object_object_get_ex(o, keys[i], &v))
			v = NULL;
		o = v;
	}
	return o ? json_object_get_string(o) : NULL;
}

Test(pvagent_cli, inject_address_for_a_guest_pve_cannot_locate)
{
	struct world w;
	world_start(&w, "127.0.1.150");
	char *out = NULL;

	/* no guest agent: the address is unknown, and the tool says what to do */
	int rc = pv(&w, &out, "inject", "cli1", NULL);
	cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
	cr_expect(strstr(out, "--address"), "%s", out);
	free(out);

	/* refusals before anything is looked up */
	rc = pv(&w, &out, "inject", "cli1", "--address", "-oProxyCommand=x", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "bad --address"), "%s", out);
	free(out);
	rc = pv(&w, &out, "inject", "nosuch", "--address", ge.sd.addr, NULL);
	cr_expect_eq(rc, 1, "%s", out);
	cr_expect(strstr(out, "no guest named 'nosuch'"), "%s", out);
	free(out);

	/* dry run: diffs, nothing written */
	char *before = guestenv_snapshot(&ge);
	rc = pv(&w, &out, "inject", "cli1", "--address", ge.sd.addr, "--dry-run", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "+pvagent_cli_test=\"YES\""), "%s", out);
	cr_expect(strstr(out, "cli1: dry-run: FreeBSD 14.1-RELEASE-p5: 1 of 1 file would change: "
			      "/etc/rc.conf"), "%s", out);
	free(out);
	char *after = guestenv_snapshot(&ge);
	cr_expect_str_eq(after, before, "the dry run changed the guest");
	free(before);
	free(after);

	/* the template comes from the description; files changed */
	rc = pv(&w, &out, "inject", "cli1", "--address", ge.sd.addr, NULL);
	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "cli1: changed: FreeBSD 14.1-RELEASE-p5: /etc/rc.conf"), "%s", out);
	free(out);
	char *rcconf = NULL;
	cr_assert_eq(guestenv_read(&ge, "/etc/rc.conf", &rcconf), 0);
	cr_expect(strstr(rcconf, "pvagent_cli_test=\"YES\"\n"), "%s", rcconf);
	cr_expect(strstr(rcconf, "hostname=\"cli1\"\n"), "%s", rcconf);
	free(rcconf);

	/* again, as JSON: unchanged */
	rc = pv(&w, &out, "--json", "inject", "cli1", "--address", ge.sd.addr, NULL);
	cr_assert_eq(rc, 0, "%s", out);
	json_object *o = final_json(out);
	cr_expect_str_eq(jpath(o, (const char *const[]){"result", NULL}), "ok");
	cr_expect_str_eq(jpath(o, (const char *const[]){"status", NULL}), "unchanged");
	json_object_put(o);
	free(out);

	/* a template whose address is ${ip}: --address stands for it */
	rc = pv(&w, &out, "inject", "cli1", "-t", "cliip", "--address", ge.sd.addr, NULL);
	cr_expect_eq(rc, 0, "--address satisfies ${ip}: %s", out);
	free(out);
	world_free(&w);
}

Test(pvagent_cli, up_runs_inject_and_no_inject_skips_it)
{
	struct world w;
	world_start(&w, "127.0.1.151");
	char *out = NULL;

	/* --no-inject: created, the guest's files untouched */
	char *before = guestenv_snapshot(&ge);
	int rc = pv(&w, &out, "--json", "up", "cli2", "-t", "clistatic", "--no-inject", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	json_object *o = final_json(out);
	cr_expect_str_eq(jpath(o, (const char *const[]){"guests", "0", "status", NULL}),
			 "created");
	cr_expect_null(jpath(o, (const char *const[]){"guests", "0", "inject", NULL}));
	json_object_put(o);
	free(out);
	char *after = guestenv_snapshot(&ge);
	cr_expect_str_eq(after, before, "--no-inject changed the guest");
	free(before);
	free(after);

	/* up again without it: converged by inject, the step printed */
	rc = pv(&w, &out, "up", "cli2", "-t", "clistatic", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "cli2: inject "), "%s", out);
	cr_expect(strstr(out, "changed: FreeBSD 14.1-RELEASE-p5: /etc/rc.conf"), "%s", out);
	cr_expect(strstr(out, "converged"), "%s", out);
	free(out);
	char *rcconf = NULL;
	cr_assert_eq(guestenv_read(&ge, "/etc/rc.conf", &rcconf), 0);
	cr_expect(strstr(rcconf, "hostname=\"cli2\"\n"), "%s", rcconf);
	free(rcconf);

	/* and again: unchanged, inject included */
	rc = pv(&w, &out, "--json", "up", "cli2", "-t", "clistatic", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	o = final_json(out);
	cr_expect_str_eq(jpath(o, (const char *const[]){"guests", "0", "status", NULL}),
			 "unchanged");
	cr_expect_str_eq(jpath(o, (const char *const[]){"guests", "0", "inject", "status", NULL}),
			 "unchanged");
	cr_expect_str_eq(jpath(o, (const char *const[]){"exit", NULL}), "0");
	json_object_put(o);
	free(out);

	/* a guest whose host key is not the known one: exit 4 at once, naming
	 * the inject step (the bounded wait for SSH is not for this) */
	char *other = strprintf("%s/other_key", ge.sd.etc);
	char *other_pub = strprintf("%s.pub", other);
	cr_assert_eq(test_keygen(other, "ed25519", 0), 0);
	const char *pubs[] = {other_pub, NULL};
	cr_assert_eq(sshd_write_known_hosts(&ge.sd, ge.known_hosts, pubs, false), 0);
	rc = pv(&w, &out, "--json", "up", "cli2", "-t", "clistatic", NULL);
	cr_expect_eq(rc, 4, "%s", out);
	o = final_json(out);
	cr_expect_str_eq(jpath(o, (const char *const[]){"result", NULL}), "error");
	cr_expect_str_eq(jpath(o, (const char *const[]){"guests", "0", "inject", "failed_step",
							NULL}),
			 "connect");
	const char *err = jpath(o, (const char *const[]){"guests", "0", "error", NULL});
	cr_expect(err && !strncmp(err, "inject: connect: ", 17), "%s", err ? err : out);
	json_object_put(o);
	free(out);
	free(other);
	free(other_pub);
	world_free(&w);
}
