/* test_cli_names.c - guests named by VMID or by a dotted DNS name, down
 * of several guests, an unknown --node, virtio on a container, show and
 * ssh, inject by VMID: the real
 * pvagent ($PVAGENT_BIN) against the simulator (tests/support/simproc),
 * with an sshd guest for the [ssh] settings (127.0.1.240-249). */
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

TestSuite(cli_names, .fini = cleanup, .timeout = 120);

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
		  " \"net0\": \"virtio=BC:24:11:00:01:50,bridge=vmbr0\"}},\n"
		  "  {\"vmid\": 190, \"node\": \"pve1\", \"type\": \"qemu\", \"status\": \"stopped\",\n"
		  "   \"config\": {\"name\": \"old1\", \"memory\": \"512\", \"cores\": 1,"
		  " \"scsi0\": \"local-lvm:vm-190-disk-0,size=8G\"}},\n"
		  "  {\"vmid\": 191, \"node\": \"pve1\", \"type\": \"qemu\", \"status\": \"running\",\n"
		  "   \"config\": {\"name\": \"old2\", \"memory\": \"512\", \"cores\": 1,"
		  " \"scsi0\": \"local-lvm:vm-191-disk-0,size=8G\"}},\n"
		  "  {\"vmid\": 195, \"node\": \"pve1\", \"type\": \"lxc\", \"status\": \"running\",\n"
		  "   \"config\": {\"hostname\": \"ct1\", \"memory\": \"512\", \"cores\": 1,"
		  " \"rootfs\": \"local-lvm:vm-195-disk-0,size=8G\","
		  " \"net0\": \"name=eth0,bridge=vmbr0,ip=10.10.0.95/24\"}}]}\n");
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

static int named(const char *name)
{
	json_object *st = simproc_state(&sim);
	cr_assert_not_null(st, "no simulator state");
	int n = simproc_count_named(st, name);
	json_object_put(st);
	return n;
}

Test(cli_names, down_by_vmid_and_several)
{
	struct world w;
	world_start(&w, "127.0.1.240");
	char *out = NULL;

	/* an all-digits argument is a VMID */
	cr_assert_eq(named("old1"), 1);
	int rc = pv(&w, &out, "down", "190", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "old1"), "the result names the guest: %s", out);
	cr_expect_null(strstr(out, "does not exist"), "%s", out);
	free(out);
	cr_expect_eq(named("old1"), 0, "VMID 190 was not deleted");

	/* several: each its own job, results per guest; the worst exit */
	rc = pv(&w, &out, "--json", "down", "old2", "cli1", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	json_object *o = final_json(out);
	cr_expect_str_eq(jpath(o, (const char *const[]){"guests", "0", "name", NULL}), "old2");
	cr_expect_str_eq(jpath(o, (const char *const[]){"guests", "1", "name", NULL}), "cli1");
	json_object_put(o);
	free(out);
	cr_expect_eq(named("old2"), 0);
	cr_expect_eq(named("cli1"), 0);

	/* a name given twice is a usage error */
	rc = pv(&w, &out, "down", "a1", "A1", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	free(out);
	world_free(&w);
}

Test(cli_names, dotted_names_up_and_down)
{
	struct world w;
	world_start(&w, "127.0.1.241");
	char *out = NULL;
	int rc = pv(&w, &out, "up", "web.example.org", "-t", "clistatic", "--no-inject", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	free(out);
	cr_expect_eq(named("web.example.org"), 1);
	rc = pv(&w, &out, "down", "web.example.org", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	free(out);
	cr_expect_eq(named("web.example.org"), 0);

	/* up takes names only: digits would read as a VMID */
	rc = pv(&w, &out, "up", "1234", "-t", "clistatic", "--no-inject", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "VMID"), "%s", out);
	free(out);
	/* not DNS names */
	rc = pv(&w, &out, "up", "a..b", "-t", "clistatic", "--no-inject", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	free(out);
	rc = pv(&w, &out, "down", "-a.b", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	free(out);
	world_free(&w);
}

Test(cli_names, unknown_node_and_virtio_on_a_container)
{
	struct world w;
	world_start(&w, "127.0.1.242");
	char *out = NULL;
	int rc = pv(&w, &out, "list", "--node", "nosuch", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "no node 'nosuch' in the cluster; nodes: pve1"), "%s", out);
	free(out);
	rc = pv(&w, &out, "up", "n1", "-t", "clistatic", "--node", "nosuch", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "no node 'nosuch' in the cluster; nodes: pve1"), "%s", out);
	free(out);
	cr_expect_eq(named("n1"), 0);
	rc = pv(&w, &out, "list", "--node", "pve1", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	free(out);

	rc = pv(&w, &out, "virtio", "ct1", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "containers have no emulated disks"), "%s", out);
	cr_expect_null(strstr(out, "converting to virtio"), "%s", out);
	free(out);
	/* by VMID too */
	rc = pv(&w, &out, "virtio", "195", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "containers have no emulated disks"), "%s", out);
	free(out);
	world_free(&w);
}

Test(cli_names, ssh_runs_a_command)
{
	if (access("/usr/bin/ssh", X_OK) < 0 && access("/bin/ssh", X_OK) < 0)
		cr_skip_test("no ssh client");
	struct world w;
	world_start(&w, "127.0.1.243");
	char *out = NULL;
	/* the template names the address; the words are quoted one by one */
	int rc = pv(&w, &out, "ssh", "cli1", "-t", "clistatic", "--", "echo", "hello", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "hello\n"), "%s", out);
	free(out);
	rc = pv(&w, &out, "ssh", "150", "-t", "clistatic", "--", "echo", "a  b;", "$HOME", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "a  b; $HOME\n"), "%s", out);
	free(out);
	rc = pv(&w, &out, "ssh", "nosuch", "--", "true", NULL);
	cr_expect_eq(rc, 1, "%s", out);
	free(out);
	world_free(&w);
}

Test(cli_names, show_text_and_json)
{
	struct world w;
	world_start(&w, "127.0.1.244");
	char *out = NULL;
	int rc = pv(&w, &out, "show", "cli1", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "vmid: 150\n"), "%s", out);
	cr_expect(strstr(out, "status: running\n"), "%s", out);
	cr_expect(strstr(out, "template: clitest\n"), "%s", out);
	cr_expect(strstr(out, "disk bus: virtio"), "%s", out);
	cr_expect(strstr(out, "address: unknown\n"), "no guest agent: %s", out);
	cr_expect(strstr(out, "  cores = 1\n"), "%s", out);
	free(out);

	rc = pv(&w, &out, "--json", "show", "195", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	json_object *o = final_json(out);
	cr_expect_str_eq(jpath(o, (const char *const[]){"name", NULL}), "ct1");
	cr_expect_str_eq(jpath(o, (const char *const[]){"type", NULL}), "lxc");
	cr_expect_str_eq(jpath(o, (const char *const[]){"config", "hostname", NULL}), "ct1");
	json_object_put(o);
	free(out);

	rc = pv(&w, &out, "show", "nosuch", NULL);
	cr_expect_eq(rc, 1, "%s", out);
	free(out);
	world_free(&w);
}

Test(cli_names, inject_by_vmid_uses_the_guests_name)
{
	struct world w;
	world_start(&w, "127.0.1.245");
	char *out = NULL;
	int rc = pv(&w, &out, "inject", "150", "--address", ge.sd.addr, NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "cli1: changed"), "%s", out);
	free(out);
	char *rcconf = NULL;
	cr_assert_eq(guestenv_read(&ge, "/etc/rc.conf", &rcconf), 0);
	cr_expect(strstr(rcconf, "hostname=\"cli1\"\n"), "%s", rcconf);
	free(rcconf);
	rc = pv(&w, &out, "inject", "999", "--address", ge.sd.addr, NULL);
	cr_expect_eq(rc, 1, "%s", out);
	cr_expect(strstr(out, "no guest with VMID 999"), "%s", out);
	free(out);
	world_free(&w);
}
