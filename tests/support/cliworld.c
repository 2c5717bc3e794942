/* cliworld.c - the world of the CLI suites (cliworld.h). */
#include "cliworld.h"

#include "clirun.h"
#include "util.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Why the world cannot run here (not root, no binaries), or NULL. */
static const char *unavailable(void)
{
	if (geteuid() != 0)
		return "needs root (sshd with ChrootDirectory)";
	const char *bin = getenv("PVAGENT_BIN"), *sim = getenv("PVESIM_BIN");
	if (access(bin ? bin : "build/san/pvagent", X_OK) < 0)
		return "no pvagent binary (make build/san/pvagent)";
	if (access(sim ? sim : "build/san/pvesim", X_OK) < 0)
		return "no simulator binary (make build/san/pvesim)";
	return NULL;
}

static const char scenario[] =
	"{\"pve_version\": \"9.1\", \"cluster_name\": \"t\",\n"
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
	" \"net0\": \"virtio=BC:24:11:00:01:50,bridge=vmbr0\"}}%s]}\n";

static const char template_common[] =
	"[template]\nkind = qemu\nos = freebsd\nos_version = 14.1\n"
	"[source]\nclone = fbsd-base\nfull = yes\nstorage = local-lvm\n"
	"[pve]\ndescription = ${name}: FreeBSD 14.1 (pvagent template %s)\ncores = 1\n"
	"[rc.conf]\npvagent_cli_test = \"YES\"\n"
	"[guest]\nuser = root\nport = %d\n%s";

/* Write text (malloc'd; freed here, NULL: out of memory) to path. 0 or -1. */
static int put(const char *path, mode_t mode, char *text)
{
	int rc = path && text ? test_write_file(path, text, mode) : -1;
	if (rc < 0)
		fprintf(stderr, "cliworld: cannot write %s\n", path ? path : "(out of memory)");
	free(text);
	return rc;
}

/* The world on addr: 0, or -1 after saying why on stderr. */
static int start(struct cli_world *w, const char *addr, const char *more_guests)
{
	memset(w, 0, sizeof *w);
	const char *bin = getenv("PVAGENT_BIN");
	w->bin = bin ? bin : "build/san/pvagent";
	struct guestenv_opts o = {.fixture = "freebsd-14", .addr = addr};
	if (guestenv_start(&w->ge, &o) < 0) {
		fprintf(stderr, "cliworld: cannot start the guest on %s\n", addr);
		return -1;
	}
	const char *etc = w->ge.sd.etc;
	char *scen = strprintf("%s/scenario.json", etc);
	char *tdir = strprintf("%s/templates", etc), *secret = strprintf("%s/token.secret", etc);
	char *p1 = strprintf("%s/clitest.tmpl", tdir), *p2 = strprintf("%s/clistatic.tmpl", tdir);
	char *p3 = strprintf("%s/cliip.tmpl", tdir), *ip = strprintf("address = static\nip = %s\n",
								      w->ge.sd.addr);
	w->conf = strprintf("%s/pvagent.conf", etc);
	/* the tool waits for tasks in real time: run the simulator fast */
	static const char *const fast[] = {"--time-scale", "100", NULL};
	int rc = put(scen, 0644, strprintf(scenario, more_guests ? more_guests : ""));
	if (rc == 0 && simproc_start(&w->sim, scen, fast) < 0) {
		fprintf(stderr, "cliworld: the simulator did not start\n");
		rc = -1;
	}
	if (rc == 0 && (!tdir || mkdir(tdir, 0755) < 0))
		rc = -1;
	int port = w->ge.sd.port;
	if (rc == 0)
		rc = put(p1, 0644, strprintf(template_common, "clitest", port, "address = agent\n"));
	if (rc == 0)
		rc = put(p2, 0644, strprintf(template_common, "clistatic", port, ip ? ip : ""));
	if (rc == 0) /* the address is a variable, as in the shipped freebsd-9.0 */
		rc = put(p3, 0644, strprintf(template_common, "cliip", port,
					     "address = static\nip = ${ip}\n[vars]\nip =\n"));
	if (rc == 0)
		rc = put(secret, 0600, strprintf("%s\n", w->sim.token_secret));
	if (rc == 0)
		rc = put(w->conf, 0600,
			 strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
				   "fingerprint = %s\nnode = pve1\n"
				   "[ssh]\nuser = root\nidentity = %s\nknown_hosts = %s\n"
				   "host_key_policy = strict\ntimeout = 10s\n"
				   "[paths]\ntemplates = %s\nstate = %s\n",
				   w->sim.url, w->sim.token_id, secret, w->sim.fingerprint,
				   w->ge.sd.identity, w->ge.known_hosts, tdir, etc));
	free(scen);
	free(tdir);
	free(secret);
	free(p1);
	free(p2);
	free(p3);
	free(ip);
	return rc;
}

void cli_world_start(struct cli_world *w, const char *addr, const char *more_guests)
{
	const char *why = unavailable();
	if (why)
		cr_skip_test("%s", why);
	cr_assert_eq(start(w, addr, more_guests), 0, "the world did not start (see stderr)");
}

void cli_world_stop(struct cli_world *w)
{
	free(w->conf);
	w->conf = NULL;
	cr_assert_eq(simproc_stop(&w->sim), 0, "simulator did not exit cleanly");
}

void cli_world_cleanup(struct cli_world *w)
{
	simproc_stop(&w->sim);
	guestenv_stop(&w->ge);
}

int cli_pv(struct cli_world *w, char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = test_pvagentv(w->bin, w->conf, out, ap);
	va_end(ap);
	cr_assert_neq(rc, -2, "pvagent: sanitizer report:\n%s", *out ? *out : "");
	cr_assert_geq(rc, 0, "cannot run %s", w->bin);
	return rc;
}

json_object *cli_final_json(const char *out)
{
	const char *line = NULL;
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (*p == '{' && strstr(p, "\"command\"") &&
		    (!strchr(p, '\n') || strstr(p, "\"command\"") < strchr(p, '\n')))
			line = p;
	char *one = line ? strndup(line, strcspn(line, "\n")) : NULL;
	json_object *o = one ? json_tokener_parse(one) : NULL;
	free(one);
	cr_assert_not_null(o, "no final JSON object in:\n%s", out);
	return o;
}

const char *cli_jpath(json_object *o, const char *const *keys)
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
