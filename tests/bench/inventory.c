/* inventory.c - make bench: `pvagent list` ($PVAGENT_BIN, default
 * ./pvagent) of 1,000 guests on 4 nodes against the simulator answering
 * each request after 15 ms (--latency 15, a real cluster's round trip),
 * printing
 *   - list: its requests (target at most 50) and wall time (at most 1 s);
 *   - list --long (each guest's config, 8 at once): requests and wall time
 *     (printed). */
#include "benchend.h"
#include "clirun.h"
#include "simproc.h"
#include "sshd.h"
#include "util.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GUESTS 1000
#define DRAIN_GUESTS 200 /* 50 on each node */
#define LATENCY "15"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what)
{
	fprintf(stderr, "inventory bench: %s\n", what);
	return 1;
}

/* The scenario: 4 nodes, a shared storage, so many VMs. */
static char *scenario(int guests)
{
	struct sbuf b = {0};
	sbuf_add(&b, "{\"pve_version\":\"8.4\",\"cluster_name\":\"inv\",\"nodes\":[");
	for (int n = 1; n <= 4; n++)
		sbuf_addf(&b, "%s{\"name\":\"pve%d\",\"cpus\":64,\"memory_mib\":1048576,"
			  "\"online\":true}", n > 1 ? "," : "", n);
	sbuf_add(&b, "],\"storages\":[{\"id\":\"ceph\",\"type\":\"rbd\",\"shared\":true,"
		     "\"nodes\":[\"pve1\",\"pve2\",\"pve3\",\"pve4\"],\"content\":\"images\","
		     "\"size_gib\":100000}],\"tokens\":[{\"id\":\"root@pam!inv\",\"secret\":"
		     "\"3f2e1d0c-b9a8-4765-8432-10fedcba9876\",\"privs\":\"all\"}],\"users\":[],"
		     "\"guests\":[");
	for (int i = 0; i < guests; i++)
		sbuf_addf(&b, "%s{\"vmid\":%d,\"node\":\"pve%d\",\"type\":\"qemu\",\"config\":{"
			  "\"name\":\"g%04d\",\"memory\":\"2048\",\"cores\":2,\"ostype\":\"l26\","
			  "\"boot\":\"order=scsi0\",\"scsihw\":\"virtio-scsi-single\","
			  "\"scsi0\":\"ceph:vm-%d-disk-0,size=32G\","
			  "\"net0\":\"virtio=BC:24:11:%02X:%02X:00,bridge=vmbr0\"}}",
			  i ? "," : "", 1000 + i, 1 + i % 4, i, 1000 + i, (i >> 8) & 0xff, i & 0xff);
	sbuf_add(&b, "],\"ha\":[],\"faults\":[]}\n");
	return sbuf_steal(&b);
}

/* Run pvagent with args (NULL-terminated); requests and seconds; its
 * output must hold want. */
static int measure(struct simproc *sim, const char *bin, const char *conf,
		   const char *const *args, const char *want, int *requests, double *secs)
{
	json_object *log = simproc_requests(sim);
	size_t before = log ? json_object_array_length(log) : 0;
	json_object_put(log);
	const char *argv[16] = {bin, "-c", conf};
	size_t n = 3;
	for (size_t i = 0; args[i] && n + 1 < sizeof argv / sizeof *argv; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	char *out = NULL;
	double t0 = now();
	int rc = test_run(argv, NULL, &out);
	*secs = now() - t0;
	bool good = rc == 0 && out && strstr(out, want);
	if (!good)
		fprintf(stderr, "%s\n", out ? out : "");
	free(out);
	log = simproc_requests(sim);
	*requests = log ? (int)(json_object_array_length(log) - before) : -1;
	json_object_put(log);
	return good ? 0 : -1;
}

/* The simulator on a scenario of n guests (in dir) and a configuration
 * for it (*conf). 0 or -1. */
static int start(struct simproc *sim, const char *dir, int n, char **conf)
{
	char *scen = strprintf("%s/scenario-%d.json", dir, n), *text = scenario(n);
	int rc = scen && text && test_write_file(scen, text, 0600) == 0 ? 0 : -1;
	free(text);
	const char *args[] = {"--latency", LATENCY, NULL};
	if (rc == 0 && simproc_start(sim, scen, args) < 0)
		rc = -1;
	free(scen);
	if (rc < 0)
		return -1;
	char *secret = strprintf("%s/token.secret", dir), *body = strprintf("%s\n", sim->token_secret);
	*conf = strprintf("%s/pvagent.conf", dir);
	text = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\nfingerprint = %s\n"
			 "node = pve1\n[paths]\nstate = %s\n",
			 sim->url, sim->token_id, secret, sim->fingerprint, dir);
	if (!secret || !*conf || !body || !text || test_write_file(secret, body, 0600) < 0 ||
	    test_write_file(*conf, text, 0600) < 0)
		rc = -1;
	free(secret);
	free(body);
	free(text);
	return rc;
}

int main(void)
{
	const char *be = getenv("PVAGENT_BIN");
	const char *bin = be ? be : "./pvagent";
	char dir[] = "/tmp/pvagent-bench-inventory.XXXXXX";
	if (!mkdtemp(dir))
		return fail("mkdtemp");
	struct simproc sim;
	char *conf = NULL;
	if (start(&sim, dir, GUESTS, &conf) < 0)
		return fail("cannot start the simulator");
	int rc = 0, req = 0, req_long = 0;
	double secs = 0, secs_long = 0;
	const char *list[] = {"list", NULL}, *list_long[] = {"list", "--long", NULL};
	if (measure(&sim, bin, conf, list, "g0999", &req, &secs) < 0 ||
	    measure(&sim, bin, conf, list_long, "g0999", &req_long, &secs_long) < 0) {
		rc = fail("pvagent list failed");
	} else {
		bool good = req <= 50 && secs <= 1.0;
		printf("list of %d guests, %s ms a request: %d requests (target <= 50), %.2f s "
		       "(target <= 1) %s\n", GUESTS, LATENCY, req, secs,
		       good ? "ok" : "ABOVE TARGET");
		printf("list --long (each config, 8 at once): %d requests, %.2f s\n", req_long,
		       secs_long);
		rc = good ? 0 : 1;
	}
	if (simproc_stop(&sim) != 0)
		rc = fail("the simulator did not exit cleanly");
	free(conf);
	conf = NULL;
	/* drain --dry-run of pve1: 50 of the 200 guests */
	if (start(&sim, dir, DRAIN_GUESTS, &conf) < 0)
		return fail("cannot start the simulator");
	const char *drain[] = {"drain", "pve1", "--dry-run", NULL};
	if (measure(&sim, bin, conf, drain, "g0196", &req, &secs) < 0) {
		rc = fail("pvagent drain --dry-run failed");
	} else {
		bool good = secs <= 2.0;
		printf("drain --dry-run of a node with %d guests, %s ms a request (their facts 8 at "
		       "once): %d requests, %.2f s (target <= 2) %s\n", DRAIN_GUESTS / 4, LATENCY, req,
		       secs, good ? "ok" : "ABOVE TARGET");
		rc |= good ? 0 : 1;
	}
	if (bench_end(&sim, dir) < 0)
		rc = 1;
	free(conf);
	return rc;
}
