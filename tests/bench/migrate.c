/* migrate.c - make bench: migration figures against the simulator.
 *  1. HTTP requests per migration of one running VM (task log and status
 *     reads excluded; target at most MIGRATE_MAX_REQUESTS), simulated time;
 *     alone with --counts (make bench-counts);
 *  2. drain plan time for 1,000 guests on 16 nodes (target < 50 ms);
 *  3. a drain of 50 guests (drain.json's 10 that move, 40 more, the
 *     targets large enough) on the one scheduler with K = 4: its makespan
 *     over the ideal sliding-window makespan of the same migration
 *     durations (target <= 1.02), real time at a time scale of 10;
 *  4. the probe's gap against the simulated downtime (real time, three
 *     migrations; target within 20 ms). */
#include "drain_plan.h"
#include "job.h"
#include "json.h"
#include "util.h"
#include "migfx.h"
#include "wf_drain.h"
#include "wf_migrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MSCEN "tests/pvesim/scenarios/migrate.json"
#define DSCEN "tests/pvesim/scenarios/drain.json"
#define GiB (1024ull * 1024ull * 1024ull)
/* find, status, config, precondition, target node list, storages and
 * machine types, the migration, the check on the target */
#define MIGRATE_MAX_REQUESTS 9

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int sim_start(struct migfx *s, const char *scen, const char *scale, bool simtime)
{
	const char *args[] = {"--time-scale", scale, NULL};
	if (migfx_start(s, scen, scale ? args : NULL, simtime) < 0)
		return -1;
	s->conf.migrate.per_target = 4; /* only K limits the window */
	return 0;
}

/* drain.json with both targets at 128 GiB and 16 CPUs and 40 more running
 * VMs on pve1 (256 MiB to 2 GiB, shared disks): 50 to move; time scale 10. */
static int sim_start_50(struct migfx *s, const char *path)
{
	json_object *scen = json_object_from_file(DSCEN), *nodes = NULL, *guests = NULL;
	if (!scen || !json_object_object_get_ex(scen, "nodes", &nodes) ||
	    !json_object_object_get_ex(scen, "guests", &guests)) {
		json_object_put(scen);
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(nodes); i++) {
		json_object *n = json_object_array_get_idx(nodes, i);
		if (strcmp(json_str(n, "name"), "pve1") == 0)
			continue;
		json_object_object_add(n, "memory_mib", json_object_new_int(131072));
		json_object_object_add(n, "cpus", json_object_new_int(16));
	}
	for (int i = 0; i < 40; i++) {
		char *g = strprintf("{\"vmid\": %d, \"node\": \"pve1\", \"type\": \"qemu\", "
				    "\"status\": \"running\", \"config\": {\"name\": \"b%02d\", "
				    "\"memory\": \"%d\", \"cores\": 1, \"ostype\": \"l26\", "
				    "\"scsi0\": \"shared:vm-%d-disk-0,size=4G\", \"net0\": "
				    "\"virtio=BC:24:11:02:%02X:00,bridge=vmbr0\"}}",
				    400 + i, i, 256 * (1 + i % 8), 400 + i, i);
		json_object *o = g ? json_tokener_parse(g) : NULL;
		free(g);
		if (!o) {
			json_object_put(scen);
			return -1;
		}
		json_object_array_add(guests, o);
	}
	int r = json_object_to_file_ext(path, scen, JSON_C_TO_STRING_PLAIN);
	json_object_put(scen);
	return r < 0 ? -1 : sim_start(s, path, "10", false);
}

static void sim_stop(struct migfx *s)
{
	migfx_stop(s);
}

static struct job *run(struct migfx *s, const struct job_workflow *wf, const char *subject,
		       json_object *params, enum job_outcome *o)
{
	struct job *j = NULL;
	struct pve_error e = {0};
	if (job_new(&s->env, wf, subject, params, &j, &e) < 0) {
		fprintf(stderr, "migrate bench: %s\n", e.message ? e.message : "job_new");
		json_object_put(params);
		return NULL;
	}
	json_object_put(params);
	if (wf == &wf_drain)
		wf_drain_attach(j, &s->opts);
	*o = job_run(j, s->c);
	return j;
}

static int requests_per_migration(void)
{
	struct migfx s;
	if (sim_start(&s, MSCEN, NULL, true) < 0)
		return -1;
	enum job_outcome o = JOB_OUT_FAILED;
	struct job *j = run(&s, &wf_migrate, "web1", wf_migrate_params("pve2", NULL, 0, 0, false), &o);
	json_object *log = simproc_requests(&s.sp);
	int all = 0, task = 0;
	for (size_t i = 0; log && i < json_object_array_length(log); i++) {
		const char *p = json_str(json_object_array_get_idx(log, i), "path");
		if (!p || strncmp(p, "/_sim", 5) == 0)
			continue;
		all++;
		task += strstr(p, "/tasks/") != NULL;
	}
	bool ok = all - task <= MIGRATE_MAX_REQUESTS;
	printf("requests per migration of a running VM (task log/status reads excluded): %d "
	       "(target <= %d) %s (%d task reads besides, %s)\n", all - task, MIGRATE_MAX_REQUESTS,
	       ok ? "ok" : "ABOVE TARGET", task, job_outcome_name(o));
	json_object_put(log);
	job_free(j);
	sim_stop(&s);
	return o == JOB_OUT_DONE && ok ? 0 : -1;
}

static int plan_time(void)
{
	static struct dp_node nodes[16];
	static char names[16][16];
	static struct dp_guest guests[1000];
	static char gnames[1000][16];
	static const char *const st[] = {"local", "local-lvm", "shared"};
	for (int i = 0; i < 16; i++) {
		snprintf(names[i], sizeof names[i], "n%d", i);
		nodes[i] = (struct dp_node){.name = names[i], .online = true, .mem_total = 512 * GiB,
					    .mem_used = 8 * GiB, .cpus = 64, .storages = st,
					    .n_storages = 3};
	}
	for (int i = 0; i < 1000; i++) {
		snprintf(gnames[i], sizeof gnames[i], "g%d", i);
		guests[i] = (struct dp_guest){.name = gnames[i], .vmid = 100 + i,
					      .type = GUEST_QEMU, .running = true,
					      .memory = (uint64_t)(1 + i % 8) * GiB, .cpus = 2};
	}
	struct dp_input in = {.source = "n0", .nodes = nodes, .n_nodes = 16, .guests = guests,
			      .n_guests = 1000, .reserve = GiB};
	double best = 1e9;
	for (int r = 0; r < 5; r++) {
		struct dp_plan p;
		double t0 = mono();
		if (drain_plan(&in, &p) < 0)
			return -1;
		double ms = (mono() - t0) * 1e3;
		best = ms < best ? ms : best;
		drain_plan_free(&p);
	}
	printf("drain plan, 1,000 guests on 16 nodes: %.2f ms (target < 50)\n", best);
	return best < 50 ? 0 : -1;
}

static int drain_makespan(void)
{
	struct migfx s;
	char path[] = "/tmp/pvagent-bench-drain-XXXXXX.json";
	int fd = mkstemps(path, 5);
	if (fd < 0)
		return -1;
	close(fd);
	if (sim_start_50(&s, path) < 0) {
		unlink(path);
		return -1;
	}
	enum job_outcome o = JOB_OUT_FAILED;
	struct job *j = run(&s, &wf_drain, "pve1", wf_drain_params(NULL, 0, 4, 4, true, false, 0),
			    &o);
	int rc = -1;
	if (j && o == JOB_OUT_DONE) {
		json_object *moves = NULL;
		json_object_object_get_ex(job_vars(j), "moves", &moves);
		double d[128];
		size_t n = 0;
		for (size_t i = 0; moves && i < json_object_array_length(moves) && n < 128; i++) {
			json_object *m = json_object_array_get_idx(moves, i), *sec = NULL;
			if (strcmp(json_str(m, "status"), "moved") == 0 &&
			    json_object_object_get_ex(m, "seconds", &sec))
				d[n++] = json_object_get_double(sec);
		}
		double ideal = drain_schedule(d, NULL, n, 4, 0, 0, NULL);
		printf("  migration times (s):");
		for (size_t i = 0; i < n; i++)
			printf(" %.2f", d[i]);
		printf("\n");
		double real = job_step_elapsed(j, 1);
		printf("drain of %zu guests, K = 4: %.2f s; ideal sliding window of the same "
		       "durations %.2f s; ratio %.3f (target <= 1.02) %s\n",
		       n, real, ideal, real / ideal, real / ideal <= 1.02 ? "ok" : "ABOVE TARGET");
		rc = real / ideal <= 1.02 ? 0 : -1;
	} else {
		fprintf(stderr, "migrate bench: drain %s\n", job_outcome_name(o));
	}
	job_free(j);
	sim_stop(&s);
	unlink(path);
	return rc;
}

static int probe_accuracy(void)
{
	struct migfx s;
	if (sim_start(&s, MSCEN, NULL, false) < 0)
		return -1;
	json_object *st = simproc_state(&s.sp), *cl = NULL, *guests = NULL;
	long long port = 0;
	json_object_object_get_ex(st, "cluster", &cl);
	json_object_object_get_ex(cl, "guests", &guests);
	for (size_t i = 0; guests && i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		long long id = 0;
		if (json_int(g, "vmid", &id) && id == 109)
			json_int(g, "listen_port", &port);
	}
	json_object_put(st);
	const char *to[] = {"pve2", "pve1", "pve2"};
	double worst = 0, sum = 0;
	int n = 0, rc = 0;
	for (int r = 0; r < 3; r++) {
		json_object *p = wf_migrate_params(to[r], NULL, 0, 0, false);
		json_object_object_add(p, "probe_port", json_object_new_int64(port));
		enum job_outcome o = JOB_OUT_FAILED;
		struct job *j = run(&s, &wf_migrate, "tiny1", p, &o);
		long long dt = -1, gap = -1;
		if (j) {
			json_int(job_vars(j), "downtime_ms", &dt);
			json_int(job_vars(j), "probe_gap_ms", &gap);
		}
		if (o != JOB_OUT_DONE || dt < 0 || gap < 0) {
			rc = -1;
		} else {
			double err = fabs((double)(gap - dt));
			worst = err > worst ? err : worst;
			sum += err;
			n++;
			printf("  migration %d: simulated downtime %lld ms, probe saw %lld ms\n", r + 1,
			       dt, gap);
		}
		job_free(j);
	}
	sim_stop(&s);
	if (n)
		printf("probe accuracy: mean error %.1f ms, worst %.1f ms over %d migrations "
		       "(target within 20)\n", sum / n, worst, n);
	return rc == 0 && worst <= 20 ? 0 : -1;
}

int main(int argc, char **argv)
{
	int rc = 0;
	rc |= requests_per_migration();
	if (argc > 1 && strcmp(argv[1], "--counts") == 0)
		return rc ? 1 : 0; /* the request count only (make bench-counts) */
	rc |= plan_time();
	rc |= drain_makespan();
	rc |= probe_accuracy();
	return rc ? 1 : 0;
}
