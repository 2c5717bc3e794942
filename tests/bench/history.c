/* history.c - make bench: pvagentd ($PVAGENTD_BIN, default ./pvagentd)
 * started on a store holding 100,000 finished jobs (about 3 KB of
 * params each, a step and two events), printing its resident memory once
 * it answers and sleeps, and its peak (VmHWM), for two configurations:
 *   - every job kept ([daemon] keep_jobs_max above 100,000): start-up
 *     reads only the unfinished jobs (targets: at most 8 MiB resident,
 *     16 MiB peak);
 *   - the defaults (keep_jobs_max 10,000): the start prunes 90,000 jobs
 *     (the same targets). */
#include "benchend.h"
#include "ctl_client.h"
#include "procstat.h"
#include "simproc.h"
#include "store.h"
#include "util.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JOBS 100000

static int fail(const char *what)
{
	fprintf(stderr, "history bench: %s\n", what);
	return 1;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0 || chmod(path, 0600) < 0)
		return -1;
	return 0;
}

/* A fresh store in dir with JOBS finished jobs of a day ago. */
static int fill_store(const char *dir)
{
	char *path = store_path(dir), *err = NULL;
	struct store *st = NULL;
	if (!path || store_open(path, &st, &err) < 0) {
		fprintf(stderr, "history bench: %s\n", err ? err : "store");
		free(err);
		free(path);
		return -1;
	}
	double ago = (double)time(NULL) - 86400;
	char *sql = strprintf(
		"BEGIN;"
		"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
		"INSERT INTO jobs(id, workflow, subject, params, vars, state, created, ended) "
		"SELECT i, 'up', 'guest' || i, json_object('template_path', printf('%%.3000c', 'x')), "
		"'{\"vmid\":100}', 'done', %f + i * 0.1, %f + i * 0.1 + 30 FROM n;"
		"INSERT INTO steps(job, idx, name, state, result) SELECT id, 0, 'clone', 'done', "
		"'cloned' FROM jobs;"
		"INSERT INTO events(job, time, kind, message) SELECT id, created, 'begin', 'up' FROM jobs;"
		"INSERT INTO events(job, time, kind, message) SELECT id, ended, 'done', 'done' FROM jobs;"
		"COMMIT;", JOBS, ago, ago);
	char *msg = NULL;
	int rc = sql ? sqlite3_exec(store_db(st), sql, NULL, NULL, &msg) : SQLITE_NOMEM;
	if (rc != SQLITE_OK)
		fprintf(stderr, "history bench: %s\n", msg ? msg : "out of memory");
	sqlite3_free(msg);
	free(sql);
	store_close(st);
	free(path);
	return rc == SQLITE_OK ? 0 : -1;
}

/* Start the daemon on conf, ask its status, measure; *rss and *peak in
 * KiB. 0 or -1. */
static int measure(const char *dbin, const char *bin, const char *conf, const char *sock,
		   const char *log, long *rss, long *peak)
{
	struct ctl_client c;
	char *err = NULL;
	pid_t pid = procstat_daemon(dbin, bin, conf, log, sock, &c);
	if (pid < 0)
		return -1;
	json_object *req = json_tokener_parse("{\"id\":1,\"op\":\"status\"}"), *ans = NULL;
	bool ok = req && ctl_client_call(&c, req, &ans, &err) == 1;
	json_object_put(req);
	json_object_put(ans);
	free(err);
	ctl_client_close(&c);
	if (ok && procstat_wait_sleeping(pid) == 0) {
		*rss = procstat_field(pid, "VmRSS");
		*peak = procstat_field(pid, "VmHWM");
	}
	kill(pid, SIGTERM);
	int st = 0;
	waitpid(pid, &st, 0);
	return ok && WIFEXITED(st) && WEXITSTATUS(st) == 0 && *rss > 0 ? 0 : -1;
}

int main(void)
{
	const char *de = getenv("PVAGENTD_BIN"), *be = getenv("PVAGENT_BIN");
	const char *dbin = de ? de : "./pvagentd", *bin = be ? be : "./pvagent";
	char dir[] = "/tmp/pvagent-bench-history.XXXXXX";
	if (!mkdtemp(dir))
		return fail("mkdtemp");
	struct simproc sim;
	if (simproc_start(&sim, "tests/bench/bench.json", NULL) < 0)
		return fail("cannot start the simulator");
	char *secret = strprintf("%s/token.secret", dir), *conf = strprintf("%s/pvagent.conf", dir),
	     *sock = strprintf("%s/pvagentd.sock", dir), *log = strprintf("%s/pvagentd.log", dir),
	     *body = strprintf("%s\n", sim.token_secret);
	if (!secret || !conf || !sock || !log || !body || write_file(secret, body) < 0)
		return fail("cannot write the token file");
	if (fill_store(dir) < 0)
		return fail("cannot fill the store");
	int rc = 0;
	const char *modes[] = {"keep_jobs_max = 100000000\n", ""};
	const char *names[] = {"100,000 finished jobs kept", "the start pruning 90,000 of them"};
	for (int m = 0; m < 2; m++) {
		char *text = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
				       "fingerprint = %s\nnode = pve1\n[paths]\nstate = %s\n"
				       "socket = %s\n[daemon]\n%s",
				       sim.url, sim.token_id, secret, sim.fingerprint, dir, sock,
				       modes[m]);
		long rss = -1, peak = -1;
		if (!text || write_file(conf, text) < 0 ||
		    measure(dbin, bin, conf, sock, log, &rss, &peak) < 0) {
			free(text);
			rc = fail("pvagentd did not start, answer and stop");
			break;
		}
		free(text);
		bool good = rss <= 8L * 1024 && peak <= 16L * 1024;
		printf("pvagentd with %s: %.1f MiB resident, %.1f MiB peak (targets <= 8, <= 16) %s\n",
		       names[m], (double)rss / 1024.0, (double)peak / 1024.0,
		       good ? "ok" : "ABOVE TARGET");
		if (!good)
			rc = 1;
	}
	/* the defaults' start did prune */
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;
	char *path = store_path(dir);
	long long left = -1;
	if (path && sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs", -1, &q, NULL) == SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW)
		left = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	free(path);
	if (rc == 0 && left != 10000)
		rc = fail("the start with the defaults did not keep 10,000 jobs");
	if (bench_end(&sim, dir) < 0)
		rc = 1;
	free(secret);
	free(conf);
	free(sock);
	free(log);
	free(body);
	return rc;
}
