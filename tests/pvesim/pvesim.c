/* pvesim.c - main of the PVE simulator: options, schema discovery, start,
 * the one ready line on stdout, and a clean stop on SIGTERM/SIGINT.
 *
 *   pvesim --scenario FILE.json [--listen 127.0.0.1:0] [--schema PATH]
 *          [--log FILE.jsonl] [--time-scale X] [--cert-out FILE.pem]
 *          [--guest-root VMID=DIR]... [--spare-guest FIXTURE@ADDR=DIR]...
 *          [--latency MS] [--node-shell-listen IP:PORT]
 */
#include "schema.h"
#include "server.h"
#include "simapi.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: pvesim --scenario FILE.json [--listen 127.0.0.1:0] [--schema PATH]\n"
		   "              [--log FILE.jsonl] [--time-scale X] [--cert-out FILE.pem]\n"
		   "              [--guest-root VMID=DIR]... [--spare-guest FIXTURE@ADDR=DIR]...\n"
		   "              [--latency MS] [--node-shell-listen IP:PORT]\n"
		   "  --node-shell-listen IP:PORT  a plain-HTTP loopback listener for the nodes'\n"
		   "                         SSH stand-ins (tests/pvesim/nodeshell/); its URL is\n"
		   "                         the ready line's \"node_shell\"\n"
		   "  --latency MS           wait MS milliseconds before each API answer (a real\n"
		   "                         cluster's round trip; concurrent requests overlap)\n"
		   "  --guest-root VMID=DIR  the scenario guest VMID's root directory (sets or\n"
		   "                         replaces its \"root\"; repeatable): the boot model\n"
		   "                         reads its files and writes DIR/.pvagent-facts/boot\n"
		   "  --spare-guest FIXTURE@ADDR=DIR  a fixture guest already answering SSH at\n"
		   "                         ADDR (tests/guests/guestd): the first VM of that\n"
		   "                         fixture to start without a root takes ADDR and DIR\n"
		   "                         (repeatable; make sandbox)\n");
}

/* The default schema for a PVE major version (9.x: the 9.1 schema; 4 to
 * 8: the 8.4 one; 2 and 3: the OpenVZ one): $PVE_API_DIR, then
 * ../shared/pve-api beside the checkout, found from the current directory
 * or from the executable's directory upwards. NULL if none exists. */
static char *default_schema(int major)
{
	const char *file = major >= 9   ? "pve9-apidata.json"
			   : major >= 4 ? "pve8-apidata.json"
					: "pve3-openvz-apidata.generated.json";
	const char *env = getenv("PVE_API_DIR");
	if (env) {
		char *p = strprintf("%s/%s", env, file);
		if (p && access(p, R_OK) == 0)
			return p;
		free(p);
		return NULL;
	}
	char *p = strprintf("../shared/pve-api/%s", file);
	if (p && access(p, R_OK) == 0)
		return p;
	free(p);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0 || (size_t)n >= sizeof exe - 1)
		return NULL;
	exe[n] = '\0';
	char *dir = dirname(exe);
	for (int up = 0; up < 5; up++) {
		p = strprintf("%s/../shared/pve-api/%s", dir, file);
		if (p && access(p, R_OK) == 0)
			return p;
		free(p);
		char *parent = strprintf("%s/..", dir);
		if (!parent)
			return NULL;
		char *real = realpath(parent, NULL);
		free(parent);
		if (!real)
			return NULL;
		snprintf(exe, sizeof exe, "%s", real);
		free(real);
		dir = exe;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"scenario", required_argument, NULL, 's'},
		{"listen", required_argument, NULL, 'l'},
		{"schema", required_argument, NULL, 'S'},
		{"log", required_argument, NULL, 'L'},
		{"time-scale", required_argument, NULL, 't'},
		{"cert-out", required_argument, NULL, 'c'},
		{"guest-root", required_argument, NULL, 'g'},
		{"spare-guest", required_argument, NULL, 'G'},
		{"latency", required_argument, NULL, 'D'},
		{"node-shell-listen", required_argument, NULL, 'N'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *scenario = NULL, *schema_path = NULL;
	struct server_opts so = {.listen = "127.0.0.1:0", .time_scale = 1.0};
	/* at most one --guest-root or --spare-guest per argument */
	struct sim_guest_root *roots = calloc((size_t)argc, sizeof *roots);
	struct sim_spare_guest *spares = calloc((size_t)argc, sizeof *spares);
	size_t nroots = 0, nspares = 0;
	if (!roots || !spares) {
		free(roots);
		free(spares);
		fprintf(stderr, "pvesim: out of memory\n");
		return 1;
	}
	int opt;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': scenario = optarg; break;
		case 'l': so.listen = optarg; break;
		case 'S': schema_path = optarg; break;
		case 'L': so.log_path = optarg; break;
		case 'c': so.cert_out = optarg; break;
		case 'N': so.node_shell_listen = optarg; break;
		case 'g': {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end != '=' || v < 1 || v > 999999999 ||
			    !end[1]) {
				fprintf(stderr, "pvesim: --guest-root %s: expected VMID=DIR\n", optarg);
				free(roots);
				free(spares);
				return 2;
			}
			roots[nroots].vmid = (int)v;
			roots[nroots++].dir = end + 1;
			break;
		}
		case 'G': {
			/* FIXTURE@ADDR=DIR */
			char *at = strchr(optarg, '@');
			char *eq = at ? strchr(at, '=') : NULL;
			if (!at || at == optarg || !eq || eq == at + 1 || !eq[1]) {
				fprintf(stderr, "pvesim: --spare-guest %s: expected FIXTURE@ADDR=DIR\n",
					optarg);
				free(roots);
				free(spares);
				return 2;
			}
			*at = *eq = '\0';
			spares[nspares++] = (struct sim_spare_guest){optarg, at + 1, eq + 1};
			break;
		}
		case 't': {
			char *end;
			errno = 0;
			so.time_scale = strtod(optarg, &end);
			if (errno || *end || !(so.time_scale > 0) || so.time_scale > 1e7) {
				fprintf(stderr, "pvesim: --time-scale %s: expected a number in (0, 1e7]\n",
					optarg);
				free(roots);
				free(spares);
				return 2;
			}
			break;
		}
		case 'D': {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 || v > 60000) {
				fprintf(stderr, "pvesim: --latency %s: expected milliseconds, 0 to 60000\n",
					optarg);
				free(roots);
				free(spares);
				return 2;
			}
			so.latency_ms = (unsigned)v;
			break;
		}
		case 'h': usage(stdout); free(roots); free(spares); return 0;
		default: usage(stderr); free(roots); free(spares); return 2;
		}
	}
	if (!scenario || optind != argc) {
		usage(stderr);
		free(roots);
		free(spares);
		return 2;
	}

	/* Block the stop signals before any thread starts, then wait for one. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	char *err = NULL;
	struct cluster *c = cluster_load_with(scenario, (double)time(NULL), roots, nroots, &err);
	free(roots);
	if (c && cluster_add_spares(c, spares, nspares, &err) < 0) {
		cluster_free(c);
		c = NULL;
	}
	free(spares);
	if (!c) {
		fprintf(stderr, "pvesim: %s\n", err ? err : "cannot load the scenario");
		free(err);
		return 2;
	}
	struct schema *s = NULL;
	char *found = schema_path ? NULL : default_schema(cluster_pve_major(c));
	const char *sp = schema_path ? schema_path : found;
	if (sp) {
		if (!(s = schema_load(sp, &err))) {
			fprintf(stderr, "pvesim: %s\n", err ? err : "cannot load the schema");
			free(err);
			free(found);
			cluster_free(c);
			return 2;
		}
	} else {
		fprintf(stderr, "pvesim: no PVE API schema file found (--schema, $PVE_API_DIR or "
				"../shared/pve-api): checking routes only, not parameters\n");
	}
	free(found);

	struct server *sv = server_start(c, s, &so, &err);
	if (!sv) {
		fprintf(stderr, "pvesim: %s\n", err ? err : "cannot start");
		free(err);
		schema_free(s);
		cluster_free(c);
		return 1;
	}
	json_object *ready = json_object_new_object();
	json_object_object_add(ready, "url", json_object_new_string(server_url(sv)));
	json_object_object_add(ready, "fingerprint", json_object_new_string(server_fingerprint(sv)));
	const char *tid = cluster_first_token_id(c), *tsec = cluster_first_token_secret(c);
	json_object_object_add(ready, "token_id", tid ? json_object_new_string(tid) : NULL);
	json_object_object_add(ready, "token_secret", tsec ? json_object_new_string(tsec) : NULL);
	if (server_node_shell_url(sv))
		json_object_object_add(ready, "node_shell",
				       json_object_new_string(server_node_shell_url(sv)));
	/* as PVE writes JSON: "/" not escaped */
	printf("%s\n", json_object_to_json_string_ext(ready, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
	json_object_put(ready);

	int sig = 0;
	while (sigwait(&stop, &sig) != 0)
		;
	server_stop(sv);
	schema_free(s);
	cluster_free(c);
	return 0;
}
