/* daemon.c - make bench: pvagentd (./pvagentd running ./pvagent) against
 * the release simulator with tests/bench/bench.json, printing
 *   - the idle daemon's resident memory (VmRSS after it ran jobs; target
 *     at most 8 MiB);
 *   - its wakeups per idle second (context switches over a 2 s window
 *     without jobs; target 0);
 *   - submit-to-first-event latency through the socket, median and max of
 *     20 submits (the first streamed event, the daemon's "start", target
 *     at most 10 ms; and the job's first engine event, "begin");
 *   - 200 queued `up --no-start` of bench.tmpl (a 2.5 s clone, in real
 *     time as in up.sh) through the daemon with 4 workers: wall
 *     time over the ideal 200 x clone / 4 (target at most 1.05), and over
 *     the sum of the jobs' own times / 4 (the queue's own gaps); where a
 *     job's time beyond its clone goes: its process outside the engine
 *     (exec, configuration, template, store, exit) and the engine beyond
 *     the clone (requests, state.db commits, seeing the task's end). */
#include "benchend.h"
#include "ctl_client.h"
#include "procstat.h"
#include "simproc.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* defaults; `daemon JOBS SCALE` for a shorter run by hand */
static double SCALE = 1.0;
#define CLONE_S (2.5 / SCALE)
static int JOBS = 200;
#define MAX_JOBS 1000
#define WORKERS 4
#define LAT_RUNS 20

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int fail(const char *what)
{
	fprintf(stderr, "daemon bench: %s\n", what);
	return 1;
}

/* The template's file, as the CLI resolves it for the daemon. */
static char *template_path;

/* Send a submit of `up NAME -t bench --no-start` with this id (the params
 * the CLI sends). */
static int submit(struct ctl_client *c, int id, const char *name)
{
	char *req = strprintf("{\"id\":%d,\"op\":\"submit\",\"workflow\":\"up\",\"json\":true,"
			      "\"jobs\":[{\"subject\":\"%s\",\"params\":{\"name\":\"%s\","
			      "\"template\":\"bench\",\"template_path\":\"%s\",\"no_start\":true}}]}",
			      id, name, name, template_path);
	json_object *o = req ? json_tokener_parse(req) : NULL;
	char *err = NULL;
	int r = o ? ctl_client_send(c, o, &err) : -1;
	if (r < 0)
		fprintf(stderr, "daemon bench: %s\n", err ? err : "out of memory");
	free(err);
	json_object_put(o);
	free(req);
	return r;
}

static const char *str(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

/* The daemon's answer m refuses a submit: say why (1), or 0. */
static int refused(json_object *m)
{
	if (!str(m, "error"))
		return 0;
	fprintf(stderr, "daemon bench: the daemon refused a submit: %s: %s\n", str(m, "error"),
		str(m, "message") ? str(m, "message") : "");
	return 1;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		JOBS = atoi(argv[1]);
	if (argc > 2)
		SCALE = atof(argv[2]);
	if (JOBS < 1 || JOBS > MAX_JOBS || SCALE <= 0)
		return fail("usage: daemon [JOBS [TIME_SCALE]]");
	const char *de = getenv("PVAGENTD_BIN"), *be = getenv("PVAGENT_BIN");
	const char *dbin = de ? de : "./pvagentd", *bin = be ? be : "./pvagent";
	char dir[] = "/tmp/pvagent-bench-daemon.XXXXXX";
	if (!mkdtemp(dir))
		return fail("mkdtemp");
	struct simproc sim;
	char scale[16];
	snprintf(scale, sizeof scale, "%g", SCALE);
	const char *args[] = {"--time-scale", scale, NULL};
	if (simproc_start(&sim, "tests/bench/bench.json", args) < 0)
		return fail("cannot start the simulator");
	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd))
		return fail("getcwd");
	if (!(template_path = strprintf("%s/tests/bench/bench.tmpl", cwd)))
		return fail("out of memory");
	char *secret = strprintf("%s/token.secret", dir), *conf = strprintf("%s/pvagent.conf", dir),
	     *sock = strprintf("%s/pvagentd.sock", dir), *log = strprintf("%s/pvagentd.log", dir);
	if (!secret || !conf || !sock || !log)
		return fail("out of memory");
	char *text = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			       "fingerprint = %s\nnode = pve1\n[paths]\ntemplates = %s/tests/bench\n"
			       "state = %s\nsocket = %s\n[daemon]\nworkers = %d\nnode_jobs = %d\n",
			       sim.url, sim.token_id, secret, sim.fingerprint, cwd, dir, sock, WORKERS,
			       WORKERS);
	char *body = strprintf("%s\n", sim.token_secret);
	FILE *f = fopen(secret, "w");
	if (!f || fputs(body, f) < 0 || fclose(f) != 0 || chmod(secret, 0600) < 0)
		return fail("cannot write the token file");
	f = fopen(conf, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0 || chmod(conf, 0600) < 0)
		return fail("cannot write the configuration");
	free(body);
	free(text);
	struct ctl_client c;
	char *err = NULL;
	pid_t pid = procstat_daemon(dbin, bin, conf, log, sock, &c);
	if (pid < 0)
		return fail("pvagentd did not start");
	int rc = 0;

	/* 1. latency: one submit at a time, the same guest (converging) */
	double lat_first[LAT_RUNS], lat_begin[LAT_RUNS];
	for (int i = 0; i < LAT_RUNS; i++) {
		double t0 = now();
		if (submit(&c, 1000 + i, "lat") < 0)
			return 1;
		lat_first[i] = lat_begin[i] = -1;
		for (;;) {
			json_object *m = NULL;
			if (ctl_client_recv(&c, &m, 60000, &err) != 1)
				return fail(err ? err : "no answer");
			if (refused(m))
				return 1;
			const char *ev = str(m, "event");
			double t = now() - t0;
			if (ev && lat_first[i] < 0)
				lat_first[i] = t;
			if (ev && strcmp(ev, "begin") == 0 && lat_begin[i] < 0)
				lat_begin[i] = t;
			bool done = ev && strcmp(ev, "exit") == 0;
			if (done && strcmp(str(m, "code") ? str(m, "code") : "1", "0") != 0)
				return fail("a latency job failed");
			json_object_put(m);
			if (done)
				break;
		}
	}
	qsort(lat_first, LAT_RUNS, sizeof lat_first[0], cmp);
	qsort(lat_begin, LAT_RUNS, sizeof lat_begin[0], cmp);

	/* 2. idle: memory and wakeups with nothing to do, from the moment it
	 * sleeps (its last answer is out before it is back in poll) */
	procstat_wait_sleeping(pid);
	long rss = procstat_field(pid, "VmRSS");
	long v0 = procstat_field(pid, "voluntary_ctxt_switches"),
	     n0 = procstat_field(pid, "nonvoluntary_ctxt_switches");
	struct timespec win = {2, 0};
	nanosleep(&win, NULL); /* the idle window is the measurement */
	long v1 = procstat_field(pid, "voluntary_ctxt_switches"),
	     n1 = procstat_field(pid, "nonvoluntary_ctxt_switches");
	double wakeups = (double)((v1 - v0) + (n1 - n0)) / 2.0;

	/* 3. 200 queued jobs, one connection, 4 workers */
	static double started[MAX_JOBS + 1], ended[MAX_JOBS + 1], begun[MAX_JOBS + 1],
		done_at[MAX_JOBS + 1];
	double t0 = now();
	for (int i = 1; i <= JOBS; i++) {
		char name[16];
		snprintf(name, sizeof name, "q%03d", i);
		if (submit(&c, i, name) < 0)
			return 1;
	}
	int left = JOBS, failed = 0;
	while (left > 0) {
		json_object *m = NULL;
		if (ctl_client_recv(&c, &m, 600000, &err) != 1)
			return fail(err ? err : "no answer");
		if (refused(m))
			return 1;
		const char *ev = str(m, "event"), *ids = str(m, "id");
		int id = ids ? atoi(ids) : 0;
		if (ev && id >= 1 && id <= JOBS) {
			if (strcmp(ev, "start") == 0)
				started[id] = now();
			json_object *tv = NULL;
			if (strcmp(ev, "begin") == 0 && json_object_object_get_ex(m, "time", &tv))
				begun[id] = json_object_get_double(tv);
			if (strcmp(ev, "done") == 0 && json_object_object_get_ex(m, "time", &tv))
				done_at[id] = json_object_get_double(tv);
			if (strcmp(ev, "exit") == 0) {
				ended[id] = now();
				failed += strcmp(str(m, "code") ? str(m, "code") : "1", "0") != 0;
				left--;
			}
		}
		json_object_put(m);
	}
	double wall = now() - t0, busy = 0, engine = 0;
	for (int i = 1; i <= JOBS; i++) {
		busy += ended[i] - started[i];
		engine += done_at[i] - begun[i];
	}
	double ideal = JOBS * CLONE_S / WORKERS, packed = busy / WORKERS;
	ctl_client_close(&c);
	kill(pid, SIGTERM);
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		rc = fail("pvagentd did not exit 0 on SIGTERM");
	if (failed)
		rc = fail("some of the 200 jobs failed");

	printf("pvagentd idle RSS: %.1f MiB (target <= 8) %s\n", (double)rss / 1024.0,
	       rss >= 0 && rss <= 8L * 1024 ? "ok" : "ABOVE TARGET");
	printf("pvagentd wakeups per idle second: %.1f (%ld voluntary, %ld not; target 0) %s\n",
	       wakeups, v1 - v0, n1 - n0,
	       wakeups == 0 ? "ok" : "ABOVE TARGET");
	printf("submit to first event (daemon 'start'), %d submits: median %.1f ms, max %.1f ms "
	       "(target <= 10) %s\n", LAT_RUNS, lat_first[LAT_RUNS / 2] * 1e3,
	       lat_first[LAT_RUNS - 1] * 1e3, lat_first[LAT_RUNS - 1] <= 0.010 ? "ok" : "ABOVE TARGET");
	printf("submit to the job's first engine event ('begin'): median %.1f ms, max %.1f ms\n",
	       lat_begin[LAT_RUNS / 2] * 1e3, lat_begin[LAT_RUNS - 1] * 1e3);
	printf("%d queued up jobs, %d workers, %.2f s clones (time scale %g): %.1f s wall, ideal "
	       "%.1f s: %.3f x ideal (target <= 1.05) %s; %.3f x the jobs' own time / %d\n",
	       JOBS, WORKERS, CLONE_S, SCALE, wall, ideal, wall / ideal,
	       wall / ideal <= 1.05 ? "ok" : "ABOVE TARGET", wall / packed, WORKERS);
	printf("  a job: %.3f s from its process's start to its exit, %.3f s of it from the "
	       "engine's begin to done; beyond the clone: %.0f ms in the process outside the "
	       "engine, %.0f ms in the engine\n", busy / JOBS, engine / JOBS,
	       (busy - engine) / JOBS * 1e3, (engine / JOBS - CLONE_S) * 1e3);
	if (!(rss <= 8L * 1024 && wakeups == 0 && lat_first[LAT_RUNS - 1] <= 0.010 &&
	      wall / ideal <= 1.05))
		rc = 1;
	if (bench_end(&sim, dir) < 0)
		rc = 1;
	free(secret);
	free(conf);
	free(sock);
	free(log);
	free(template_path);
	return rc;
}
