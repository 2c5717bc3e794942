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
#include "util.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GUESTS 1000
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

/* The scenario: 4 nodes, a shared storage, GUESTS VMs. */
static char *scenario(void)
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
	for (int i = 0; i < GUESTS; i++)
		sbuf_addf(&b, "%s{\"vmid\":%d,\"node\":\"pve%d\",\"type\":\"qemu\",\"config\":{"
			  "\"name\":\"g%04d\",\"memory\":\"2048\",\"cores\":2,\"ostype\":\"l26\","
			  "\"boot\":\"order=scsi0\",\"scsihw\":\"virtio-scsi-single\","
			  "\"scsi0\":\"ceph:vm-%d-disk-0,size=32G\","
			  "\"net0\":\"virtio=BC:24:11:%02X:%02X:00,bridge=vmbr0\"}}",
			  i ? "," : "", 1000 + i, 1 + i % 4, i, 1000 + i, (i >> 8) & 0xff, i & 0xff);
	sbuf_add(&b, "],\"ha\":[],\"faults\":[]}\n");
	return sbuf_steal(&b);
}

/* Run pvagent with one more argument (or none); requests and seconds. */
static int measure(struct simproc *sim, const char *bin, const char *conf, const char *arg,
		   int *requests, double *secs)
{
	json_object *log = simproc_requests(sim);
	size_t before = log ? json_object_array_length(log) : 0;
	json_object_put(log);
	char *out = NULL;
	double t0 = now();
	int rc = arg ? test_pvagent(bin, conf, &out, "list", arg, NULL)
		     : test_pvagent(bin, conf, &out, "list", NULL);
	*secs = now() - t0;
	bool good = rc == 0 && out && strstr(out, "g0999");
	if (!good)
		fprintf(stderr, "%s\n", out ? out : "");
	free(out);
	log = simproc_requests(sim);
	*requests = log ? (int)(json_object_array_length(log) - before) : -1;
	json_object_put(log);
	return good ? 0 : -1;
}

int main(void)
{
	const char *be = getenv("PVAGENT_BIN");
	const char *bin = be ? be : "./pvagent";
	char dir[] = "/tmp/pvagent-bench-inventory.XXXXXX";
	if (!mkdtemp(dir))
		return fail("mkdtemp");
	char *scen = strprintf("%s/scenario.json", dir), *text = scenario();
	if (!scen || !text || test_write_file(scen, text, 0600) < 0)
		return fail("cannot write the scenario");
	free(text);
	struct simproc sim;
	const char *args[] = {"--latency", LATENCY, NULL};
	if (simproc_start(&sim, scen, args) < 0)
		return fail("cannot start the simulator");
	char *secret = strprintf("%s/token.secret", dir), *conf = strprintf("%s/pvagent.conf", dir),
	     *body = strprintf("%s\n", sim.token_secret);
	text = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\nfingerprint = %s\n"
			 "node = pve1\n[paths]\nstate = %s\n",
			 sim.url, sim.token_id, secret, sim.fingerprint, dir);
	if (!secret || !conf || !body || !text || test_write_file(secret, body, 0600) < 0 ||
	    test_write_file(conf, text, 0600) < 0)
		return fail("cannot write the configuration");
	int rc = 0, req = 0, req_long = 0;
	double secs = 0, secs_long = 0;
	if (measure(&sim, bin, conf, NULL, &req, &secs) < 0 ||
	    measure(&sim, bin, conf, "--long", &req_long, &secs_long) < 0) {
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
	if (bench_end(&sim, dir) < 0)
		rc = 1;
	free(scen);
	free(secret);
	free(conf);
	free(body);
	free(text);
	return rc;
}
