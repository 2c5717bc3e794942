/* test_daemon.c - pvagentd ($PVAGENTD_BIN, default build/san/pvagentd)
 * with the real pvagent ($PVAGENT_BIN) against the simulator: `up`
 * through the daemon prints, exits and emits as in-process; 20 clients at
 * once (each job runs once, one job at a time per guest); SIGKILL during
 * a clone and a restart (the job resumes, one clone, one guest); SIGTERM
 * (exit 0, the job interrupted, resumed at the next start); `job ID
 * --follow`; a peer outside the socket group refused (SO_PEERCRED, a
 * forked child under another uid); malformed, 10 MiB and unknown
 * requests answered with errors while the daemon keeps serving; SIGHUP
 * with a broken file keeping the old configuration; a second daemon on
 * the same store refused; idle without wakeups (/proc/PID/status); `image
 * build` submitted as a job (other image params refused). Tests
 * wait for states (the socket, the store, the daemon's log, waitpid),
 * never for time, except the idle window, which is the measurement. */
#include "clirun.h"
#include "cliworld.h"
#include "ctl_client.h"
#include "simproc.h"
#include "guestenv.h"
#include "httpserve.h"
#include "procstat.h"
#include "ssh.h"
#include "sshd.h"
#include "store.h"
#include "util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct simproc sim;
static pid_t daemon_pid = -1, client_pid = -1;
static struct guestenv ge; /* the virtio test's guest behind sshd */
static struct httpserve hs; /* the image test's file server */

static void cleanup(void)
{
	pid_t *p[] = {&client_pid, &daemon_pid};
	for (int i = 0; i < 2; i++)
		if (*p[i] > 0) {
			kill(*p[i], SIGKILL);
			waitpid(*p[i], NULL, 0);
			*p[i] = -1;
		}
	simproc_stop(&sim);
	httpserve_stop(&hs);
	guestenv_watch_stop(&ge);
	guestenv_stop(&ge);
}

TestSuite(daemon, .fini = cleanup, .timeout = 240);

struct world {
	char *dir, *conf, *db, *sock, *log, *secret, *tdir;
	const char *bin, *dbin;
	unsigned workers;
};

static void write_text(const char *path, const char *text, mode_t mode)
{
	cr_assert_eq(test_write_file(path, text, mode), 0, "cannot write %s", path);
}

static void write_conf(const struct world *w, unsigned workers, const char *extra)
{
	char *conf = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			       "fingerprint = %s\nnode = pve1\ntimeout = 3\n"
			       "[paths]\ntemplates = %s\nstate = %s\nsocket = %s\n"
			       "[daemon]\nworkers = %u\n%s",
			       sim.url, sim.token_id, w->secret, sim.fingerprint, w->tdir, w->dir,
			       w->sock, workers, extra ? extra : "");
	write_text(w->conf, conf, 0600);
	free(conf);
}

/* The simulator's --latency for the next world (ms; 0: none). */
static int sim_latency_ms;

/* The world on a scenario file (NULL: the demo's). */
static void world_start_on(struct world *w, const char *scenario, double time_scale,
			   unsigned workers, const char *extra)
{
	memset(w, 0, sizeof *w);
	const char *bin = getenv("PVAGENT_BIN"), *dbin = getenv("PVAGENTD_BIN");
	w->bin = bin ? bin : "build/san/pvagent";
	w->dbin = dbin ? dbin : "build/san/pvagentd";
	if (access(w->bin, X_OK) < 0 || access(w->dbin, X_OK) < 0)
		cr_skip_test("no pvagent/pvagentd (make build/san/pvagent build/san/pvagentd)");
	char tmpl[] = "/tmp/pvagent-test-daemon.XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	w->dir = strdup(tmpl);
	char scale[32];
	snprintf(scale, sizeof scale, "%g", time_scale);
	char latency[32];
	snprintf(latency, sizeof latency, "%d", sim_latency_ms);
	const char *args[] = {"--time-scale", scale, "--latency", latency, NULL};
	cr_assert_eq(simproc_start(&sim, scenario ? scenario : "tests/pvesim/scenarios/demo.json",
				   args),
		     0);
	w->tdir = strprintf("%s/templates", w->dir);
	cr_assert_eq(mkdir(w->tdir, 0755), 0);
	char *t = strprintf("%s/jobvm.tmpl", w->tdir), *text = NULL;
	cr_assert_eq(read_file("tests/unit/data/job-vm.tmpl", &text, NULL), 0);
	write_text(t, text, 0644);
	free(text);
	free(t);
	w->secret = strprintf("%s/token.secret", w->dir);
	char *body = strprintf("%s\n", sim.token_secret);
	write_text(w->secret, body, 0600);
	free(body);
	w->conf = strprintf("%s/pvagent.conf", w->dir);
	w->sock = strprintf("%s/pvagentd.sock", w->dir);
	w->log = strprintf("%s/pvagentd.log", w->dir);
	w->workers = workers;
	write_conf(w, workers, extra);
	w->db = store_path(w->dir);
}

static void world_start(struct world *w, double time_scale, unsigned workers, const char *extra)
{
	world_start_on(w, NULL, time_scale, workers, extra);
}

static char *daemon_log(const struct world *w)
{
	char *text = NULL;
	if (read_file(w->log, &text, NULL) < 0)
		return strdup("");
	return text;
}

static void assert_clean_log(const struct world *w)
{
	char *log = daemon_log(w);
	cr_assert_null(strstr(log, "Sanitizer"), "daemon sanitizer report:\n%s", log);
	cr_assert_null(strstr(log, "runtime error"), "daemon UBSan:\n%s", log);
	free(log);
}

static void world_free(struct world *w)
{
	cr_assert_eq(simproc_stop(&sim), 0, "simulator did not exit cleanly");
	char *cmd = strprintf("rm -rf '%s'", w->dir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	free(w->dir);
	free(w->conf);
	free(w->db);
	free(w->sock);
	free(w->log);
	free(w->secret);
	free(w->tdir);
}

/* The daemon's RLIMIT_NOFILE when not 0. */
static rlim_t daemon_nofile;

/* Start `pvagentd -c CONF -f`, its stderr appended to the log. */
static pid_t daemon_spawn(const struct world *w)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rlimit rl = {daemon_nofile, daemon_nofile};
		if (daemon_nofile && setrlimit(RLIMIT_NOFILE, &rl) < 0)
			_exit(126);
		int fd = open(w->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		setenv("PVAGENT_BIN", w->bin, 1);
		execl(w->dbin, w->dbin, "-c", w->conf, "-f", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Connect to the daemon's socket; bounded wait for it to answer. */
static void connect_daemon(const struct world *w, struct ctl_client *c)
{
	for (int i = 0; i < 2000; i++) {
		char *err = NULL;
		int r = ctl_client_connect(w->sock, c, &err);
		free(err);
		if (r == 0)
			return;
		if (daemon_pid > 0) {
			int st;
			pid_t got = waitpid(daemon_pid, &st, WNOHANG);
			if (got == daemon_pid) {
				daemon_pid = -1;
				char *log = daemon_log(w);
				cr_assert_fail("pvagentd ended (status %d):\n%s", st, log);
			}
		}
		struct timespec ts = {0, 10L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling a state (the socket), bounded */
	}
	cr_assert_fail("pvagentd never answered on %s", w->sock);
}

/* One request, its answer (the first line with "ok"). */
static json_object *call(const struct world *w, const char *req)
{
	struct ctl_client c;
	connect_daemon(w, &c);
	json_object *r = json_tokener_parse(req), *ans = NULL;
	cr_assert_not_null(r);
	char *err = NULL;
	cr_assert_eq(ctl_client_call(&c, r, &ans, &err), 1, "%s", err ? err : "");
	json_object_put(r);
	ctl_client_close(&c);
	return ans;
}

static void daemon_start(struct world *w)
{
	daemon_pid = daemon_spawn(w);
	json_object *st = call(w, "{\"id\":1,\"op\":\"status\"}");
	json_object_put(st);
}

static void daemon_stop(struct world *w)
{
	cr_assert_eq(kill(daemon_pid, SIGTERM), 0);
	int st = 0;
	cr_assert_eq(waitpid(daemon_pid, &st, 0), daemon_pid);
	daemon_pid = -1;
	char *log = daemon_log(w);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pvagentd status %d:\n%s", st, log);
	free(log);
	assert_clean_log(w);
	cr_assert_neq(access(w->sock, F_OK), 0, "the socket is removed");
}

/* Run pvagent to the end; *out: stdout and stderr. */
static int pv(const struct world *w, char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = test_pvagentv(w->bin, w->conf, out, ap);
	va_end(ap);
	cr_assert_neq(rc, -1, "cannot run %s", w->bin);
	cr_assert_neq(rc, -2, "sanitizer report:\n%s", *out);
	return rc;
}

#define requests(m, suffix, status) simproc_count(&sim, (m), (suffix), (status))
#define guests_named(name) simproc_named(&sim, (name))

/* A query on the store: the first column of the first row as an integer
 * (-1 when there is none). */
static long long db_int(const struct world *w, const char *sql, const char *arg)
{
	return test_db_int(w->db, sql, arg);
}

/* Bounded wait until the query gives want. */
static void wait_db(const struct world *w, const char *sql, const char *arg, long long want,
		    const char *what)
{
	for (int i = 0; i < 6000; i++) {
		if (db_int(w, sql, arg) == want)
			return;
		struct timespec ts = {0, 20L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling a state (the store), bounded */
	}
	char *log = daemon_log(w);
	cr_assert_fail("never: %s\n%s", what, log);
}

/* Bounded wait for a line in the daemon's log. */
static void wait_log(const struct world *w, const char *needle)
{
	for (int i = 0; i < 3000; i++) {
		char *log = daemon_log(w);
		bool found = strstr(log, needle) != NULL;
		free(log);
		if (found)
			return;
		struct timespec ts = {0, 10L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling a state (the log), bounded */
	}
	char *log = daemon_log(w);
	cr_assert_fail("'%s' never in the daemon's log:\n%s", needle, log);
}

static pid_t bg(const struct world *w, const char *out_path, const char *const *args)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		const char *argv[24] = {w->bin, "-c", w->conf};
		size_t n = 3;
		for (size_t i = 0; args[i] && n + 1 < 24; i++)
			argv[n++] = args[i];
		argv[n] = NULL;
		execv(w->bin, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* The same command through the daemon (d_rc, its ticket's line wait in
 * the log) and in-process with --local (l_rc): both exit 0, and the
 * daemon's log never names the local one's word. */
static void daemon_and_local(const struct world *w, int d_rc, const char *d_out, int l_rc,
			     const char *l_out, const char *wait, const char *local_word)
{
	cr_assert_eq(d_rc, 0, "%s", d_out);
	cr_assert_eq(l_rc, 0, "%s", l_out);
	wait_log(w, wait);
	char *log = daemon_log(w);
	cr_assert_null(strstr(log, local_word), "--local went through the daemon:\n%s", log);
	free(log);
}

/* The (event, step) sequence of the JSON lines in out, and the last line.
 * A run of progress events of one step is one entry: how many there are
 * depends on the clock (at most one per 5 points or per second), which
 * json_up_progress_is_thinned_out tests. */
static char *event_shape(const char *out, json_object **last)
{
	struct sbuf b = {0};
	char *prev = NULL;
	*last = NULL;
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (*p != '{')
			continue;
		char *one = strndup(p, strcspn(p, "\n"));
		json_object *o = json_tokener_parse(one), *v;
		free(one);
		cr_assert_not_null(o);
		if (json_object_object_get_ex(o, "event", &v)) {
			json_object *s = NULL;
			json_object_object_get_ex(o, "step", &s);
			char *one_shape = strprintf("%s:%s ", json_object_get_string(v),
						    s ? json_object_get_string(s) : "");
			cr_assert_not_null(one_shape);
			if (!prev || strcmp(one_shape, prev) != 0 ||
			    strncmp(one_shape, "progress:", 9) != 0)
				sbuf_add(&b, one_shape);
			free(prev);
			prev = one_shape;
		}
		json_object_put(*last);
		*last = o;
	}
	free(prev);
	return sbuf_steal(&b);
}

/* Text output with the numbers of seconds and guest names made equal. */
static char *normalised(const char *out, const char *name)
{
	struct sbuf b = {0};
	size_t nl = strlen(name);
	for (const char *p = out; *p;) {
		if (strncmp(p, name, nl) == 0) {
			sbuf_add(&b, "NAME");
			p += nl;
		} else if (*p >= '0' && *p <= '9') {
			while ((*p >= '0' && *p <= '9') || *p == '.')
				p++;
			sbuf_addc(&b, '#');
		} else if (*p == ' ') {
			while (*p == ' ')
				p++;
			sbuf_addc(&b, ' ');
		} else {
			sbuf_addc(&b, *p++);
		}
	}
	return sbuf_steal(&b);
}

Test(daemon, up_through_the_daemon_is_the_same_as_in_process)
{
	static struct world w;
	world_start(&w, 100, 2, "metrics_file = metrics.prom\n");
	daemon_start(&w);
	char *d_out = NULL, *l_out = NULL;
	int d_rc = pv(&w, &d_out, "--json", "up", "same1", "-t", "jobvm", NULL);
	int l_rc = pv(&w, &l_out, "--local", "--json", "up", "same2", "-t", "jobvm", NULL);
	daemon_and_local(&w, d_rc, d_out, l_rc, l_out, "ticket 1 (up", "same2");
	json_object *dl, *ll;
	char *ds = event_shape(d_out, &dl), *ls = event_shape(l_out, &ll);
	cr_assert_str_eq(ds, ls, "daemon:\n%s\nin-process:\n%s", d_out, l_out);
	cr_assert(strstr(ds, "begin:") && strstr(ds, "step:clone"), "%s", ds);
	json_object *g, *st;
	cr_assert(json_object_object_get_ex(dl, "guests", &g));
	cr_assert(json_object_object_get_ex(json_object_array_get_idx(g, 0), "status", &st));
	cr_assert_str_eq(json_object_get_string(st), "created");
	cr_assert_str_eq(json_object_get_string(json_object_object_get(dl, "result")), "ok");
	json_object_put(dl);
	json_object_put(ll);
	free(ds);
	free(ls);
	free(d_out);
	free(l_out);
	/* text: the same lines but for the times (a converging rerun; every
	 * option the daemon takes: --no-wait-ssh too) */
	cr_assert_eq(pv(&w, &d_out, "up", "same1", "-t", "jobvm", "--no-wait-ssh", NULL), 0, "%s",
		     d_out);
	cr_assert_eq(pv(&w, &l_out, "--local", "up", "same2", "-t", "jobvm", "--no-wait-ssh", NULL),
		     0, "%s", l_out);
	char *dn = normalised(d_out, "same1"), *ln = normalised(l_out, "same2");
	cr_assert_str_eq(dn, ln, "daemon:\n%s\nin-process:\n%s", d_out, l_out);
	cr_assert(strstr(d_out, "unchanged"), "%s", d_out);
	free(dn);
	free(ln);
	free(d_out);
	free(l_out);
	/* a usage error: the same words and exit code */
	d_rc = pv(&w, &d_out, "up", "same3", "-t", "nosuch", NULL);
	l_rc = pv(&w, &l_out, "--local", "up", "same3", "-t", "nosuch", NULL);
	cr_assert_eq(d_rc, 2, "%s", d_out);
	cr_assert_eq(l_rc, 2, "%s", l_out);
	cr_assert_str_eq(d_out, l_out);
	free(d_out);
	free(l_out);
	cr_assert_eq(guests_named("same1"), 1);
	cr_assert_eq(requests("POST", "/qemu/9024/clone", -1), 2);
	/* the metrics of the two daemon jobs (the usage error is the
	 * client's: nothing reached the daemon) */
	char *mp = strprintf("%s/metrics.prom", w.dir), *m = NULL;
	cr_assert_eq(read_file(mp, &m, NULL), 0);
	cr_assert(strstr(m, "pvagent_jobs_total{workflow=\"up\",result=\"done\"} 2\n"), "%s", m);
	cr_assert(strstr(m, "pvagent_step_seconds_count{workflow=\"up\",step=\"clone\"} 1\n"), "%s",
		  m);
	cr_assert_null(strstr(m, "pvagent_daemon_jobs_total{exit=\"2\"}"), "%s", m);
	cr_assert(strstr(m, "pvagent_pve_requests_total{method=\"POST\"} "), "%s", m);
	free(m);
	free(mp);
	daemon_stop(&w);
	world_free(&w);
}

/* virtio --dry-run submitted to pvagentd on configs of the corpus
 * (tests/realcfg) answers as in this process: the PVE side of the plan
 * before any guest connection (an LSI controller, a vmxnet3 NIC; their
 * guests' addresses are unknown, so the dry run ends incomplete, exit 4,
 * after the plan), and what the config alone decides (a Windows guest
 * refused, one with nothing to convert, a template) with the same exit
 * code and words. */
Test(daemon, virtio_dry_run_through_the_daemon_shows_the_pve_side_first)
{
	static struct world w;
	world_start_on(&w, "tests/realcfg/realcfg.json", 100, 2, NULL);
	daemon_start(&w);
	static const struct {
		const char *vmid, *says, *then;
		int rc;
	} cases[] = {
		{"139", "would change scsihw: lsi -> virtio-scsi-single", "dry run incomplete", 4},
		{"167", "would change net0: vmxnet3=BC:24:11:2C:69:EC", "dry run incomplete", 4},
		{"171", "viostor (disk) and NetKVM", NULL, 2},
		{"135", "nothing to do", NULL, 0},
		{"156", "a template (template: 1)", NULL, 2},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *d_out = NULL, *l_out = NULL;
		int d_rc = pv(&w, &d_out, "virtio", cases[i].vmid, "--dry-run", NULL);
		int l_rc = pv(&w, &l_out, "--local", "virtio", cases[i].vmid, "--dry-run", NULL);
		cr_expect_eq(d_rc, cases[i].rc, "VMID %s through pvagentd: %s", cases[i].vmid, d_out);
		cr_expect_eq(l_rc, cases[i].rc, "VMID %s in-process: %s", cases[i].vmid, l_out);
		const char *d_at = strstr(d_out, cases[i].says), *l_at = strstr(l_out, cases[i].says);
		cr_expect_not_null(d_at, "VMID %s through pvagentd should say '%s':\n%s",
				   cases[i].vmid, cases[i].says, d_out);
		cr_expect_not_null(l_at, "VMID %s in-process should say '%s':\n%s", cases[i].vmid,
				   cases[i].says, l_out);
		if (cases[i].then && d_at) {
			/* the plan first, then why the guest side is missing */
			const char *then = strstr(d_out, cases[i].then);
			cr_expect(then && then > d_at, "VMID %s: the plan before '%s':\n%s",
				  cases[i].vmid, cases[i].then, d_out);
		}
		free(d_out);
		free(l_out);
	}
	/* the daemon ran them (the refusals too: nothing refuses them before) */
	wait_log(&w, "ticket 5 (virtio");
	/* a dry run changed nothing, and asked no guest agent where the
	 * config decided */
	cr_expect_eq(requests("POST", "*", -1), 0);
	cr_expect_eq(requests("PUT", "*", -1), 0);
	cr_expect_eq(requests("GET", "*/171/agent/network-get-interfaces", -1), 0);
	cr_expect_eq(requests("GET", "*/135/agent/network-get-interfaces", -1), 0);
	daemon_stop(&w);
	world_free(&w);
}

/* Each line of this process's out starting "pvagent" (its error lines)
 * is in the daemon's d_out too: said to the client. */
static void expect_lines_said(const char *what, const char *d_out, const char *l_out)
{
	size_t said = 0;
	for (const char *p = l_out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, "pvagent", 7) != 0)
			continue;
		char *line = strndup(p, strcspn(p, "\n"));
		cr_expect_not_null(strstr(d_out, line), "%s: '%s' not said through pvagentd:\n%s",
				   what, line, d_out);
		free(line);
		said++;
	}
	cr_expect_gt(said, 0, "%s: no error line:\n%s", what, l_out);
}

/* Every error a job meets before its first step (a guest, a node, a
 * template or a key that do not exist; a guest it refuses; a bad option)
 * reaches the client through pvagentd as in this process: the same exit
 * code (2), the same error lines on stderr, and with --json one final
 * object, the same, with the error's own kind and message, never "failed
 * (see standard error)". */
Test(daemon, errors_before_a_jobs_first_step_are_said_as_in_process)
{
	static struct world w;
	world_start(&w, 10, 2, NULL);
	daemon_start(&w);
	static const char *const cases[][7] = {
		{"inject", "nosuch", NULL, NULL, NULL, NULL, "not-found"},
		{"virtio", "nosuch", NULL, NULL, NULL, NULL, "not-found"},
		{"virtio", "fbsd9-legacy", NULL, NULL, NULL, NULL, NULL},
		{"bench", "nosuch", NULL, NULL, NULL, NULL, "not-found"},
		{"migrate", "nosuch", "pve2", NULL, NULL, NULL, "not-found"},
		{"drain", "pve9", NULL, NULL, NULL, NULL, "not-found"},
		{"down", "nosuch", NULL, NULL, NULL, NULL, NULL},
		{"up", "x1", "-t", "nosuch", NULL, NULL, "template"},
		{"up", "x1", "-t", "jobvm", "--set", "nosuchkey=1", "config"},
		{"up", "x1", "-t", "jobvm", "-n", "pve9", NULL},
		{"up", "x1", "--paralel", "2", NULL, NULL, "usage"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *const *c = cases[i];
		char *what = strprintf("%s %s %s", c[0], c[1], c[2] ? c[2] : ""), *d_out = NULL,
		     *l_out = NULL;
		int d_rc = pv(&w, &d_out, c[0], c[1], c[2], c[3], c[4], c[5], NULL);
		int l_rc = pv(&w, &l_out, "--local", c[0], c[1], c[2], c[3], c[4], c[5], NULL);
		cr_expect_eq(d_rc, 2, "%s: %s", what, d_out);
		cr_expect_eq(l_rc, 2, "%s: %s", what, l_out);
		expect_lines_said(what, d_out, l_out);
		free(d_out);
		free(l_out);
		d_rc = pv(&w, &d_out, "--json", c[0], c[1], c[2], c[3], c[4], c[5], NULL);
		l_rc = pv(&w, &l_out, "--json", "--local", c[0], c[1], c[2], c[3], c[4], c[5],
			  NULL);
		cr_expect_eq(d_rc, 2, "%s: %s", what, d_out);
		cr_expect_eq(l_rc, 2, "%s: %s", what, l_out);
		json_object *dl = NULL, *ll = NULL;
		free(event_shape(d_out, &dl));
		free(event_shape(l_out, &ll));
		size_t finals = 0;
		for (const char *p = d_out; (p = strstr(p, "{\"result\":")); p++)
			finals += p == d_out || p[-1] == '\n';
		for (const char *p = d_out; (p = strstr(p, "{\"command\":")); p++)
			finals += p == d_out || p[-1] == '\n';
		cr_expect_eq(finals, 1, "%s: one final object:\n%s", what, d_out);
		cr_assert_not_null(dl, "%s", d_out);
		cr_assert_not_null(ll, "%s", l_out);
		cr_expect_eq(json_object_get_int(json_object_object_get(dl, "exit")), 2);
		cr_expect_null(strstr(d_out, "see standard error"), "%s: %s", what, d_out);
		/* a guest command's error, or its guest's (up, down: their jobs'
		 * IDs differ) */
		json_object *g = NULL, *de = dl, *le = ll;
		if (json_object_object_get_ex(dl, "guests", &g)) {
			de = json_object_array_get_idx(g, 0);
			le = json_object_array_get_idx(json_object_object_get(ll, "guests"), 0);
		}
		de = json_object_object_get(de, "error");
		le = json_object_object_get(le, "error");
		if (c[6])
			cr_expect_str_eq(json_object_get_string(json_object_object_get(de, "kind")),
					 c[6], "%s: %s", what, d_out);
		cr_expect_str_eq(json_object_to_json_string(de), json_object_to_json_string(le),
				 "%s: daemon:\n%s\nin-process:\n%s", what, d_out, l_out);
		if (!g)
			cr_expect_str_eq(json_object_to_json_string(dl),
					 json_object_to_json_string(ll),
					 "%s: daemon:\n%s\nin-process:\n%s", what, d_out, l_out);
		json_object_put(dl);
		json_object_put(ll);
		free(d_out);
		free(l_out);
		free(what);
	}
	/* a virtio or migrate of a guest that does not exist: nothing stored,
	 * through the daemon as in this process */
	cr_expect_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE subject = ?1 AND workflow IN "
			    "('virtio', 'migrate')", "nosuch"), 0);
	daemon_stop(&w);
	world_free(&w);
}

/* The final object of out (its one line with "result"; fails on a
 * second), its guests' "vmid" left out and their "steps" reduced to the
 * steps' names, as text with the two names and the numbers made equal
 * (normalised). */
static char *final_shape(const char *out, const char *bad, const char *good)
{
	size_t finals = 0;
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		char *one = strndup(p, strcspn(p, "\n"));
		json_object *o = *one == '{' ? json_tokener_parse(one) : NULL;
		finals += o && json_object_object_get_ex(o, "result", NULL);
		json_object_put(o);
		free(one);
	}
	cr_expect_eq(finals, 1, "one final object:\n%s", out);
	json_object *last = NULL;
	free(event_shape(out, &last));
	json_object *g = NULL;
	cr_assert(json_object_object_get_ex(last, "guests", &g), "%s", out);
	for (size_t i = 0; i < json_object_array_length(g); i++) {
		json_object *x = json_object_array_get_idx(g, i), *steps = NULL,
			    *names = json_object_new_array();
		json_object_object_del(x, "vmid");
		if (json_object_object_get_ex(x, "steps", &steps)) {
			json_object_object_foreach(steps, k, v) {
				(void)v;
				json_object_array_add(names, json_object_new_string(k));
			}
		}
		json_object_object_add(x, "steps", names);
	}
	char *a = normalised(json_object_to_json_string(last), bad), *b = normalised(a, good);
	free(a);
	json_object_put(last);
	return b;
}

/* `--json up BAD GOOD` through the daemon (two tickets, two children)
 * and in this process: one final object each, the same, BAD's error its
 * own (it was made from another template: kind config, exit 2) and GOOD
 * created. */
Test(daemon, json_up_of_two_guests_is_one_final_object_the_same_as_in_process)
{
	static struct world w;
	world_start(&w, 100, 2, NULL);
	/* othervm: jobvm whose guests' descriptions name it */
	char *t = strprintf("%s/othervm.tmpl", w.tdir), *text = NULL;
	cr_assert_eq(read_file("tests/unit/data/job-vm.tmpl", &text, NULL), 0);
	char *pve = strstr(text, "[pve]\n");
	cr_assert_not_null(pve);
	char *other = strprintf("%.*s[pve]\ndescription = ${name} (pvagent template othervm)\n%s",
				(int)(pve - text), text, pve + 6);
	write_text(t, other, 0644);
	free(other);
	free(text);
	free(t);
	daemon_start(&w);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "--local", "up", "dbad", "lbad", "-t", "othervm", NULL), 0,
		     "%s", out);
	free(out);
	char *d_out = NULL, *l_out = NULL;
	int d_rc = pv(&w, &d_out, "--json", "up", "dbad", "dgood", "-t", "jobvm", NULL);
	int l_rc = pv(&w, &l_out, "--json", "--local", "up", "lbad", "lgood", "-t", "jobvm", NULL);
	wait_log(&w, "ticket 2 (up");
	cr_expect_eq(d_rc, 2, "%s", d_out);
	cr_expect_eq(l_rc, 2, "%s", l_out);
	char *ds = final_shape(d_out, "dbad", "dgood"), *ls = final_shape(l_out, "lbad", "lgood");
	cr_expect_str_eq(ds, ls, "daemon:\n%s\nin-process:\n%s", d_out, l_out);
	json_object *last = NULL, *g = NULL;
	free(event_shape(d_out, &last));
	cr_assert(json_object_object_get_ex(last, "guests", &g) && json_object_array_length(g) == 2,
		  "%s", d_out);
	json_object *bad = json_object_array_get_idx(g, 0), *good = json_object_array_get_idx(g, 1);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(bad, "name")), "dbad");
	cr_expect_str_eq(json_object_get_string(
				 json_object_object_get(json_object_object_get(bad, "error"), "kind")),
			 "config", "%s", d_out);
	cr_expect_eq(json_object_get_int(json_object_object_get(bad, "exit")), 2);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(good, "name")), "dgood");
	cr_expect_str_eq(json_object_get_string(json_object_object_get(good, "status")), "created");
	cr_expect_str_eq(json_object_get_string(json_object_object_get(last, "result")), "error");
	cr_expect_eq(json_object_get_int(json_object_object_get(last, "exit")), 2);
	json_object_put(last);
	free(ds);
	free(ls);
	free(d_out);
	free(l_out);
	daemon_stop(&w);
	world_free(&w);
}

/* The clone's progress events with a percentage in --json output: how
 * many, and the last one's percentage. */
static size_t clone_percents(const char *out, double *last)
{
	size_t n = 0;
	*last = -1;
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (*p != '{')
			continue;
		char *one = strndup(p, strcspn(p, "\n"));
		json_object *o = json_tokener_parse(one), *v = NULL;
		free(one);
		const char *ev = json_object_get_string(json_object_object_get(o, "event"));
		const char *step = json_object_get_string(json_object_object_get(o, "step"));
		if (ev && step && strcmp(ev, "progress") == 0 && strcmp(step, "clone") == 0 &&
		    json_object_object_get_ex(o, "percent", &v)) {
			n++;
			*last = json_object_get_double(v);
		}
		json_object_put(o);
	}
	return n;
}

/* --json up: a clone's log says a percentage per 1%; its progress events
 * come at most per 5 points (or per second), the first and the 100%
 * always; the same through the daemon and in this process. */
Test(daemon, json_up_progress_is_thinned_out)
{
	static struct world w;
	world_start(&w, 100, 2, NULL);
	daemon_start(&w);
	char *outs[2] = {NULL, NULL};
	cr_assert_eq(pv(&w, &outs[0], "--json", "up", "thin1", "-t", "jobvm", NULL), 0, "%s",
		     outs[0]);
	cr_assert_eq(pv(&w, &outs[1], "--json", "--local", "up", "thin2", "-t", "jobvm", NULL), 0,
		     "%s", outs[1]);
	for (int i = 0; i < 2; i++) {
		double last = -1;
		size_t n = clone_percents(outs[i], &last);
		cr_expect_geq(n, 2, "%s", outs[i]);
		cr_expect_leq(n, 25, "%zu progress events of one clone:\n%s", n, outs[i]);
		cr_expect_eq(last, 100, "the last progress event says %g%%:\n%s", last, outs[i]);
		free(outs[i]);
	}
	daemon_stop(&w);
	world_free(&w);
}

/* On a terminal the job's process (the daemon's child) draws the live
 * lines, cut to the width of the client's terminal. */
Test(daemon, live_lines_through_the_daemon_fit_the_clients_terminal)
{
	static struct world w;
	world_start(&w, 100, 2, NULL);
	daemon_start(&w);
	char *out = NULL;
	int rc = test_pvagent_pty(w.bin, w.conf, 60, &out, "up", "tty1", "-t", "jobvm", NULL);
	cr_assert_neq(rc, -2, "sanitizer report:\n%s", out);
	cr_expect_eq(rc, 0, "%s", out);
	wait_log(&w, "ticket 1 (up");
	size_t live = 0;
	for (const char *p = strstr(out, "\033[2K"); p; p = strstr(p + 1, "\033[2K")) {
		const char *line = p + 4;
		size_t n = strcspn(line, "\r\n\033");
		cr_expect_leq(n, 59, "a live line wider than the terminal: '%.*s'", (int)n, line);
		live += n > 0;
	}
	cr_expect_gt(live, 0, "no live line was drawn:\n%s", out);
	free(out);
	daemon_stop(&w);
	world_free(&w);
}

/* ---- logging while live lines are drawn (a terminal) -------------------------- */

/* Run pvagent ARGS... on a pseudo-terminal (bounded: a hang is killed and
 * fails the test), expecting exit code want and needle in what it wrote
 * (above: on the line right after the live lines were erased). */
static char *pty_run(const struct world *w, int want, const char *needle, bool above,
		     const char *what, ...)
{
	const char *argv[16];
	size_t n = 0;
	va_list ap;
	va_start(ap, what);
	for (const char *a; (a = va_arg(ap, const char *)) && n + 1 < 16;)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	char *out = NULL;
	int rc = test_pvagent_pty(w->bin, w->conf, 100, &out, argv[0], argv[1], argv[2], argv[3],
				  argv[4], argv[5], argv[6], argv[7], argv[8], argv[9], argv[10],
				  (char *)NULL);
	cr_assert_neq(rc, -3, "%s: still running after %d s on a terminal (a deadlock):\n%s",
		      what, TEST_PTY_DEADLINE_S, out);
	cr_assert_neq(rc, -2, "%s: sanitizer report:\n%s", what, out);
	cr_assert_eq(rc, want, "%s: exit %d:\n%s", what, rc, out);
	const char *at = strstr(out, needle);
	cr_assert_not_null(at, "%s: no '%s' in:\n%s", what, needle, out);
	/* a line said while live lines are drawn (one in a step: the lost
	 * answer's) is said above them: right after erasing them */
	while (at > out && at[-1] != '\n' && at[-1] != 'J')
		at--;
	cr_assert(!above || (at - out >= 3 && strncmp(at - 3, "\033[J", 3) == 0),
		  "%s: '%s' not said right after the live lines were erased:\n%s", what, needle,
		  out);
	return out;
}

/* On a terminal, a log line while live lines are drawn goes above them
 * and never blocks: -v (debug lines at once), a default-level warning (a
 * lost answer of a task-starting request), in this process and in the
 * daemon's child for a client on a terminal. */
Test(daemon, logging_while_live_lines_are_drawn_never_blocks)
{
	static struct world w;
	world_start(&w, 100, 2, NULL);
	/* the next clone is made and its answer lost: pvagent says so */
	const char *lost = "{\"method\":\"POST\",\"path\":\"/clone$\",\"nth\":1,"
			   "\"action\":\"reset\",\"after\":true}";
	free(pty_run(&w, 0, "debug: ", false, "-v --local up --dry-run", "-v", "--local", "up",
		     "ttyv1", "-t", "jobvm", "--dry-run", NULL));
	cr_assert_eq(guests_named("ttyv1"), 0);
	free(pty_run(&w, 0, "debug: ", false, "-v --local up", "-v", "--local", "up", "ttyv2", "-t",
		     "jobvm", NULL));
	cr_assert_eq(guests_named("ttyv2"), 1);
	cr_assert_eq(simproc_fault(&sim, lost), 0);
	char *out = pty_run(&w, 0, "answer was lost", true, "--local up, a clone's answer lost",
			    "--local", "up", "ttyf1", "-t", "jobvm", NULL);
	cr_expect_not_null(strstr(out, "clone"), "%s", out);
	free(out);
	cr_assert_eq(guests_named("ttyf1"), 1);
	daemon_start(&w);
	free(pty_run(&w, 0, "debug: ", false, "-v up through pvagentd", "-v", "up", "ttyd1", "-t",
		     "jobvm", NULL));
	cr_assert_eq(guests_named("ttyd1"), 1);
	cr_assert_eq(simproc_fault(&sim, lost), 0);
	free(pty_run(&w, 0, "answer was lost", true, "up through pvagentd, a clone's answer lost",
		     "up", "ttyd2", "-t", "jobvm", NULL));
	cr_assert_eq(guests_named("ttyd2"), 1);
	daemon_stop(&w);
	world_free(&w);
}

/* ---- up with the shipped templates through the daemon --------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The shipped templates (templates/ *.tmpl), sorted: their names. */
static size_t shipped_templates(char ***names)
{
	DIR *d = opendir("templates");
	cr_assert_not_null(d, "templates/: %s", strerror(errno));
	size_t n = 0;
	*names = NULL;
	for (struct dirent *e; (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (len <= 5 || strcmp(e->d_name + len - 5, ".tmpl") != 0)
			continue;
		*names = realloc(*names, (n + 1) * sizeof **names);
		cr_assert_not_null(*names);
		(*names)[n++] = strndup(e->d_name, len - 5);
	}
	closedir(d);
	qsort(*names, n, sizeof **names, cmp_str);
	return n;
}

/* A key pair's public half DIR/NAME.pub (the private half a stand-in:
 * no SSH is made); the [ssh] lines naming it. */
static char *ssh_section(const struct world *w, const char *name, const char *mark)
{
	char *pub = strprintf("%s/%s.pub", w->dir, name), *key = strprintf("%s/%s", w->dir, name);
	char *text = strprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%sAAAAAAAAAAAAAAAAAAAAAAAA"
			       "AAAA %s@test\n", mark, name);
	write_text(pub, text, 0644);
	write_text(key, "not used\n", 0600);
	char *kh = strprintf("%s/known_hosts", w->dir);
	write_text(kh, "", 0644);
	char *s = strprintf("[ssh]\nidentity = %s\nknown_hosts = %s\n", key, kh);
	free(pub);
	free(key);
	free(text);
	free(kh);
	return s;
}

#define LAN_POOL "[pool \"lan\"]\ncidr = 192.0.2.0/24\ngateway = 192.0.2.1\n" \
		 "range = 192.0.2.100-192.0.2.199\n"

/* Submitted `up` expands the template with pvagentd's key, whatever the
 * client's: every shipped template (as a package installs them, its
 * directory named by [paths] templates) is refused, dry-run or made
 * through the daemon exactly as in this process; those whose source the
 * demo cluster has are made, the guest given the daemon's key; the
 * OpenVZ one is refused on PVE 9. A daemon without [ssh] identity
 * refuses a ${pubkey} template before anything is stored or sent,
 * naming its configuration. */
Test(daemon, up_of_every_shipped_template_through_the_daemon)
{
	static struct world w;
	world_start(&w, 100, 2, NULL);
	char *shipped = realpath("templates", NULL);
	cr_assert_not_null(shipped);
	free(w.tdir);
	w.tdir = shipped;
	char *dkey = ssh_section(&w, "daemonkey", "daemonkey"),
	     *ckey = ssh_section(&w, "clientkey", "clientkey");
	/* the client's own configuration: the same daemon, another key */
	char *cconf = strprintf("%s/client.conf", w.dir);
	char *dconf = w.conf;
	w.conf = cconf;
	char *cextra = strprintf("%s%s", ckey, LAN_POOL);
	write_conf(&w, 2, cextra);
	w.conf = dconf;
	write_conf(&w, 2, LAN_POOL); /* the daemon's: no [ssh] identity yet */
	daemon_start(&w);
	char *out = NULL;
	int rc = test_pvagent(w.bin, cconf, &out, "up", "nokey1", "-t", "freebsd-14", NULL);
	cr_assert_eq(rc, 2, "%s", out);
	cr_assert(strstr(out, "${pubkey} has no value") &&
		  strstr(out, "pvagentd's configuration") && strstr(out, w.conf), "%s", out);
	free(out);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs", NULL), 0, "nothing stored");
	cr_assert_eq(requests("POST", "/clone", -1), 0, "nothing sent");
	daemon_stop(&w);
	char *dextra = strprintf("%s%s", dkey, LAN_POOL);
	write_conf(&w, 2, dextra);
	daemon_start(&w);
	char **names = NULL;
	size_t n = shipped_templates(&names), made = 0;
	cr_assert_geq(n, 10, "the shipped templates");
	for (size_t i = 0; i < n; i++) {
		char dn[32], ln[32], rn[32], *d_out = NULL, *l_out = NULL;
		snprintf(dn, sizeof dn, "dry%zu", i);
		snprintf(ln, sizeof ln, "local%zu", i);
		snprintf(rn, sizeof rn, "made%zu", i);
		char *path = strprintf("templates/%s.tmpl", names[i]), *text = NULL;
		cr_assert_eq(read_file(path, &text, NULL), 0);
		/* a legacy guest's static address: its ${ip} */
		const char *var = strstr(text, "${ip}") ? "--var" : "--no-inject",
			   *ip = strstr(text, "${ip}") ? "ip=192.0.2.50" : "--no-inject";
		int d_rc = test_pvagent(w.bin, cconf, &d_out, "up", dn, "-t", names[i], "--dry-run",
					"--no-inject", "--no-wait-ssh", var, ip, NULL);
		int l_rc = pv(&w, &l_out, "--local", "up", ln, "-t", names[i], "--dry-run",
			      "--no-inject", "--no-wait-ssh", var, ip, NULL);
		cr_expect_eq(d_rc, l_rc, "%s: through pvagentd %d:\n%s\nin this process %d:\n%s",
			     names[i], d_rc, d_out, l_rc, l_out);
		cr_expect_null(strstr(d_out, "${pubkey} has no value"), "%s: %s", names[i], d_out);
		if (strstr(text, "\nimage = ")) /* an image's template VM: not built here */
			cr_expect_not_null(strstr(d_out, "pvagent image build"), "%s: %s", names[i],
					   d_out);
		if (strstr(names[i], "openvz")) {
			cr_expect_eq(d_rc, 2, "%s: %s", names[i], d_out);
			cr_expect_not_null(strstr(d_out, "OpenVZ"), "%s: %s", names[i], d_out);
		}
		free(l_out);
		if (d_rc != 0) {
			cr_log_info("%s: refused as in this process: %s", names[i], d_out);
			free(d_out);
			free(text);
			free(path);
			continue;
		}
		free(d_out);
		cr_assert_eq(test_pvagent(w.bin, cconf, &d_out, "--json", "up", rn, "-t", names[i],
					  "--no-inject", "--no-wait-ssh", var, ip, NULL),
			     0, "%s: %s", names[i], d_out);
		cr_expect_eq(guests_named(rn), 1, "%s", names[i]);
		made++;
		json_object *last = NULL, *g;
		free(event_shape(d_out, &last));
		cr_assert(json_object_object_get_ex(last, "guests", &g), "%s", d_out);
		int vmid = json_object_get_int(
			json_object_object_get(json_object_array_get_idx(g, 0), "vmid"));
		char node[32], keys[1024];
		simproc_guest(&sim, vmid, node, sizeof node, "sshkeys", keys, sizeof keys);
		if (strstr(text, "sshkeys = ${pubkey}")) {
			cr_expect_not_null(strstr(keys, "daemonkey"), "%s: sshkeys %s", names[i],
					   keys);
			cr_expect_null(strstr(keys, "clientkey"), "%s: sshkeys %s", names[i], keys);
		}
		free(text);
		free(path);
		json_object_put(last);
		free(d_out);
	}
	cr_expect_geq(made, 5, "the templates whose source the demo cluster has");
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	daemon_stop(&w);
	free(cconf);
	free(cextra);
	free(dextra);
	free(dkey);
	free(ckey);
	world_free(&w);
}

Test(daemon, twenty_clients_each_job_once_one_at_a_time_per_guest)
{
	static struct world w;
	world_start(&w, 100, 4, NULL);
	daemon_start(&w);
	enum { N = 20, GUESTS = 5 };
	pid_t pids[N];
	char *outs[N], names[N][16];
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof names[i], "many%d", i % GUESTS);
		outs[i] = strprintf("%s/c%d.out", w.dir, i);
		const char *args[] = {"up", names[i], "-t", "jobvm", NULL};
		pids[i] = bg(&w, outs[i], args);
	}
	for (int i = 0; i < N; i++) {
		int st = 0;
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		char *out = NULL;
		cr_assert_eq(read_file(outs[i], &out, NULL), 0);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %d: %d\n%s", i, st, out);
		cr_assert(strstr(out, "created") || strstr(out, "unchanged"), "%s", out);
		cr_assert_null(strstr(out, "Sanitizer"), "%s", out);
		free(out);
		free(outs[i]);
	}
	/* every submission ran once: 20 jobs, all done; one guest each */
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs", NULL), N);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE state = 'done'", NULL), N);
	for (int g = 0; g < GUESTS; g++) {
		cr_assert_eq(guests_named(names[g]), 1, "%s", names[g]);
		cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE subject = ?", names[g]),
			     N / GUESTS);
	}
	cr_assert_eq(requests("POST", "/qemu/9024/clone", 200), GUESTS);
	/* no two jobs of one guest overlapped in time */
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs a JOIN jobs b ON a.subject = b.subject "
				"AND a.id < b.id WHERE a.started < b.ended AND b.started < a.ended",
			    NULL),
		     0, "jobs of one guest ran at the same time");
	char *log = daemon_log(&w);
	cr_assert(strstr(log, "waiting: guest many"), "nobody waited for a guest:\n%s", log);
	free(log);
	json_object *st = call(&w, "{\"id\":2,\"op\":\"status\"}"), *wk;
	cr_assert(json_object_object_get_ex(st, "workers", &wk));
	cr_assert_eq(json_object_get_int(json_object_object_get(wk, "total")), 4);
	cr_assert_eq(json_object_get_int(json_object_object_get(wk, "busy")), 0);
	json_object_put(st);
	daemon_stop(&w);
	world_free(&w);
}

static void wait_gone(pid_t pid)
{
	for (int i = 0; i < 3000; i++) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return;
		struct timespec ts = {0, 10L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling a state (the process), bounded */
	}
	cr_assert_fail("process %d outlived its daemon", (int)pid);
}

#define CLONE_SENT                                                                           \
	"SELECT count(*) FROM steps s JOIN jobs j ON s.job = j.id WHERE j.id = 1 AND "       \
	"s.name = 'clone' AND s.attempts > 0 AND s.upid IS NOT NULL"

/* `pvagent up NAME -t jobvm` in the background (client_pid), through the
 * daemon, until its clone was sent with the UPID recorded; its output
 * file (malloc'd). */
static char *up_until_clone(const struct world *w, const char *name)
{
	char *outp = strprintf("%s/up.out", w->dir);
	const char *args[] = {"up", name, "-t", "jobvm", NULL};
	client_pid = bg(w, outp, args);
	wait_db(w, CLONE_SENT, NULL, 1, "the clone was sent with its UPID recorded");
	return outp;
}

/* The background client's end: its wait status. */
static int client_end(void)
{
	int st = 0;
	cr_assert_eq(waitpid(client_pid, &st, 0), client_pid);
	client_pid = -1;
	return st;
}

/* SIGKILL the daemon while job id runs (its child dies with it; the
 * client attached sees it go). */
static void kill_daemon_with(const struct world *w, const char *id)
{
	pid_t child = (pid_t)db_int(w, "SELECT pid FROM jobs WHERE id = ?", id);
	cr_assert_gt(child, 0);
	cr_assert_eq(kill(daemon_pid, SIGKILL), 0);
	cr_assert_eq(waitpid(daemon_pid, NULL, 0), daemon_pid);
	daemon_pid = -1;
	int st = client_end();
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "the client saw the daemon go");
	wait_gone(child);
}

Test(daemon, sigkill_during_a_clone_then_restart_resumes_without_cloning_again)
{
	static struct world w;
	world_start(&w, 10, 2, NULL); /* the clone takes seconds */
	daemon_start(&w);
	char *outp = up_until_clone(&w, "kill1");
	kill_daemon_with(&w, "1");
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'running'",
			    NULL),
		     1);
	daemon_start(&w);
	wait_db(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'done'", NULL, 1,
		"the resumed job ended done");
	cr_assert_eq(requests("POST", "/qemu/9024/clone", -1), 1, "the clone was sent again");
	cr_assert_eq(guests_named("kill1"), 1);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs", NULL), 1);
	wait_log(&w, "job 1 (up kill1, running): resuming");
	daemon_stop(&w);
	free(outp);
	world_free(&w);
}

/* ---- up and down: the daemon killed at every step boundary ------------------------ */

/* `pvagent up kill1 -t jobvm --set size=40G` (job 1), or with down `pvagent down kill1`
 * (job 2, after an up), through the daemon, the daemon and its job
 * killed once the job's step idx is done or skipped (the simulator holds
 * each answer, so the next step is still on its way), the daemon started
 * again: its start-up finishes the job, and each task-starting request was
 * sent once at most. */
static void killed_at_boundary(bool down, int idx)
{
	static struct world w;
	sim_latency_ms = 150;
	world_start(&w, 100, 2, NULL);
	sim_latency_ms = 0;
	daemon_start(&w);
	char *out = NULL;
	if (down) {
		cr_assert_eq(pv(&w, &out, "up", "kill1", "-t", "jobvm", NULL), 0, "%s", out);
		free(out);
	}
	const char *id = down ? "2" : "1";
	char *outp = strprintf("%s/cmd.out", w.dir);
	const char *up_args[] = {"up", "kill1", "-t", "jobvm", "--set", "size=40G", NULL};
	const char *down_args[] = {"down", "kill1", "--yes", NULL};
	client_pid = bg(&w, outp, down ? down_args : up_args);
	char *sql = strprintf("SELECT count(*) FROM steps WHERE job = %s AND idx = %d AND state IN "
			      "('done', 'skipped')", id, idx);
	char *what = strprintf("%s: step %d ended", down ? "down" : "up", idx);
	wait_db(&w, sql, NULL, 1, what);
	kill_daemon_with(&w, id);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = ? AND state = 'done'", id), 0,
		     "%s: the job ended before the kill", what);
	daemon_start(&w);
	wait_db(&w, "SELECT count(*) FROM jobs WHERE id = ? AND state = 'done'", id, 1, what);
	char *line = strprintf("job %s (%s kill1, running): resuming", id, down ? "down" : "up");
	wait_log(&w, line);
	free(line);
	cr_assert_eq(guests_named("kill1"), down ? 0 : 1, "%s", what);
	cr_assert_eq(requests("POST", "/qemu/9024/clone", -1), 1, "%s: clone", what);
	const char *const once[][2] = {{"POST", "/config"},	{"PUT", "/resize"},
				       {"POST", "/status/start"}, {"POST", "/status/shutdown"},
				       {"DELETE", ""}};
	for (size_t i = 0; i < sizeof once / sizeof *once; i++)
		cr_assert_leq(requests(once[i][0], once[i][1], -1), 1, "%s: %s *%s sent twice",
			      what, once[i][0], once[i][1]);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs", NULL), down ? 2 : 1,
		     "%s: a job was made again", what);
	daemon_stop(&w);
	free(sql);
	free(what);
	free(outp);
	world_free(&w);
}

/* up's steps: find, clone, move, create, pool, config, resize, start,
 * address, inject (with --set size=40G every one up to start sends
 * something, so each boundary up to start's is one the job waits at);
 * after start, address (the template's static one) and inject (no guest
 * files) send nothing, so that boundary is the job's end. down's: find,
 * shutdown, delete. */
#define UP_BOUNDARY(i)                                                                       \
	Test(daemon, sigkill_after_up_step_##i##_then_restart_finishes_it)                  \
	{                                                                                    \
		killed_at_boundary(false, i);                                                \
	}
UP_BOUNDARY(0)
UP_BOUNDARY(1)
UP_BOUNDARY(2)
UP_BOUNDARY(3)
UP_BOUNDARY(4)
UP_BOUNDARY(5)
UP_BOUNDARY(6)

Test(daemon, sigkill_after_down_step_0_then_restart_finishes_it)
{
	killed_at_boundary(true, 0);
}

Test(daemon, sigkill_after_down_step_1_then_restart_finishes_it)
{
	killed_at_boundary(true, 1);
}

/* ---- a drain through the daemon, the daemon killed and started again ------------- */

/* The guests drain.json's drain of pve1 moves. */
static const int MOVERS[] = {303, 304, 305, 306, 307, 308, 309, 310, 311};

/* `pvagent drain pve1 --partial` submitted to the daemon (job 1), the
 * daemon killed with its job once the store shows what sql asks, started
 * again: its start-up resumes the drain (which resumes its migrations)
 * to the end, every moved guest with its home tag, each migrated once. */
static void drain_daemon_killed(const char *sql, const char *what)
{
	static struct world w;
	world_start_on(&w, "tests/pvesim/scenarios/drain.json", 20, 2,
		       "[migrate]\nprobe_port = 1\nmax_workers = 2\n");
	daemon_start(&w);
	char *outp = strprintf("%s/drain.out", w.dir);
	const char *args[] = {"drain", "pve1", "--partial", NULL};
	client_pid = bg(&w, outp, args);
	wait_db(&w, sql, NULL, 1, what);
	kill_daemon_with(&w, "1");
	daemon_start(&w);
	wait_db(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'done'", NULL, 1,
		"the resumed drain ended done");
	wait_log(&w, "job 1 (drain pve1, running): resuming");
	char *why = simproc_not_drained(&sim, MOVERS, sizeof MOVERS / sizeof *MOVERS, "pve1");
	cr_assert_null(why, "%s: %s", what, why);
	char *left = test_db_text(w.db, "SELECT group_concat(id || ' ' || subject || ' ' || "
				  "state || ' ' || coalesce(error, ''), '; ') FROM jobs WHERE "
				  "workflow = 'migrate' AND state != 'done'", NULL);
	cr_assert_null(left, "every migration of the drain ended done, not: %s\n%s", left,
		       daemon_log(&w));
	daemon_stop(&w);
	free(outp);
	world_free(&w);
}

Test(daemon, sigkill_after_a_drain_planned_then_restart_finishes_it)
{
	drain_daemon_killed("SELECT count(*) FROM steps WHERE job = 1 AND idx = 0 AND "
			    "state = 'done'",
			    "the drain planned");
}

Test(daemon, sigkill_while_a_drains_migration_runs_then_restart_finishes_it)
{
	drain_daemon_killed("SELECT count(*) > 0 FROM steps s JOIN jobs j ON s.job = j.id WHERE "
			    "j.workflow = 'migrate' AND s.name = 'migrate' AND s.upid IS NOT NULL",
			    "a migration's task started");
}

Test(daemon, sigkill_after_some_of_a_drains_migrations_then_restart_finishes_it)
{
	drain_daemon_killed("SELECT count(*) >= 3 FROM jobs WHERE workflow = 'migrate' AND "
			    "state = 'done'",
			    "three migrations done");
}

/* ---- migrate and undrain: the daemon killed at their step boundaries ------------- *
 *
 * The job's process stopped right after the step's end was committed
 * (PVAGENT_STOP_AFTER, inherited from the daemon), then the daemon
 * SIGKILLed with it and started again: its start-up finishes the job. */

/* The daemon started with its jobs stopping after wf's step. */
static void daemon_start_stopping(struct world *w, const char *wf, const char *step)
{
	char *stop = strprintf("%s:%s", wf, step);
	cr_assert_eq(setenv("PVAGENT_STOP_AFTER", stop, 1), 0);
	daemon_start(w);
	cr_assert_eq(unsetenv("PVAGENT_STOP_AFTER"), 0);
	free(stop);
}

/* Job id's process stopped once the store shows what sql asks (?1: step):
 * the daemon killed with it, started again, and the job resumed to its
 * end (done). */
static void kill_stopped_then_restart(struct world *w, const char *id, const char *sql,
				      const char *step, const char *what)
{
	wait_db(w, sql, step, 1, what);
	pid_t child = (pid_t)db_int(w, "SELECT pid FROM jobs WHERE id = ?", id);
	cr_assert_gt(child, 0);
	cr_assert_eq(procstat_wait_state(child, 'T', 60000), 0, "%s: never stopped", what);
	kill_daemon_with(w, id);
	daemon_start(w);
	char *done = strprintf("SELECT count(*) FROM jobs WHERE id = %s AND state = 'done'", id);
	wait_db(w, done, NULL, 1, what);
	free(done);
}

/* `pvagent migrate web1 pve2` (job 1) killed after step: resumed to web1
 * on pve2, migrated once. */
static void migrate_daemon_killed_after(const char *step)
{
	static struct world w;
	world_start_on(&w, "tests/pvesim/scenarios/drain.json", 20, 2,
		       "[migrate]\nprobe_port = 1\n");
	daemon_start_stopping(&w, "migrate", step);
	char *outp = strprintf("%s/migrate.out", w.dir), *what = strprintf("migrate: %s", step);
	const char *args[] = {"migrate", "web1", "pve2", NULL};
	client_pid = bg(&w, outp, args);
	kill_stopped_then_restart(&w, "1", "SELECT count(*) FROM steps WHERE job = 1 AND name = ?1 "
				  "AND state = 'done'", step, what);
	char node[32], tags[128];
	simproc_guest(&sim, 303, node, sizeof node, "tags", tags, sizeof tags);
	cr_assert_str_eq(node, "pve2", "%s", what);
	cr_assert_eq(simproc_migrations(&sim, 303), 1, "%s: migrated once", what);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs", NULL), 1, "%s: one job", what);
	daemon_stop(&w);
	free(what);
	free(outp);
	world_free(&w);
}

Test(daemon, migrate_killed_after_plan_then_restart_finishes_it)
{
	migrate_daemon_killed_after("plan");
}

Test(daemon, migrate_killed_after_its_task_then_restart_finishes_it)
{
	migrate_daemon_killed_after("migrate");
}

Test(daemon, migrate_killed_after_verify_then_restart_finishes_it)
{
	migrate_daemon_killed_after("verify");
}

/* `pvagent undrain pve1` after a drain, killed after its plan, or with
 * its first guest home (its first migration's finish): resumed to every
 * guest home, without its home tag, each moved out and back once. */
static void undrain_daemon_killed_after(const char *wf, const char *step)
{
	static struct world w;
	world_start_on(&w, "tests/pvesim/scenarios/drain.json", 20, 2,
		       "[migrate]\nprobe_port = 1\nmax_workers = 2\n");
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "--local", "drain", "pve1", "--partial", NULL), 0, "%s", out);
	free(out);
	char *why = simproc_not_drained(&sim, MOVERS, sizeof MOVERS / sizeof *MOVERS, "pve1");
	cr_assert_null(why, "%s", why);
	long long first = db_int(&w, "SELECT max(id) FROM jobs", NULL) + 1;
	char id[24];
	snprintf(id, sizeof id, "%lld", first);
	daemon_start_stopping(&w, wf, step);
	char *outp = strprintf("%s/undrain.out", w.dir), *what = strprintf("undrain: %s", step);
	const char *args[] = {"undrain", "pve1", NULL};
	client_pid = bg(&w, outp, args);
	/* its own step, or (a migration's) the first of its migrations' */
	char *sql = strcmp(wf, "undrain") == 0
			    ? strprintf("SELECT count(*) FROM steps WHERE job = %lld AND name = ?1 "
					"AND state = 'done'", first)
			    : strprintf("SELECT count(*) FROM steps s JOIN jobs j ON s.job = j.id "
					"WHERE j.id > %lld AND j.workflow = 'migrate' AND s.name = ?1 "
					"AND s.state = 'done'", first);
	kill_stopped_then_restart(&w, id, sql, step, what);
	free(sql);
	char node[32], tags[128];
	for (size_t i = 0; i < sizeof MOVERS / sizeof *MOVERS; i++) {
		simproc_guest(&sim, MOVERS[i], node, sizeof node, "tags", tags, sizeof tags);
		cr_assert_str_eq(node, "pve1", "%s: %d is not home", what, MOVERS[i]);
		cr_assert_null(strstr(tags, "pvagent-home"), "%s: %d keeps '%s'", what, MOVERS[i],
			       tags);
		cr_assert_eq(simproc_migrations(&sim, MOVERS[i]), 2, "%s: %d moved out and back once",
			     what, MOVERS[i]);
	}
	daemon_stop(&w);
	free(what);
	free(outp);
	world_free(&w);
}

Test(daemon, undrain_killed_after_its_plan_then_restart_finishes_it)
{
	undrain_daemon_killed_after("undrain", "plan");
}

Test(daemon, undrain_killed_with_a_guest_home_then_restart_finishes_it)
{
	undrain_daemon_killed_after("migrate", "finish");
}

Test(daemon, sigterm_records_the_job_interrupted_and_the_next_start_resumes_it)
{
	static struct world w;
	world_start(&w, 10, 2, NULL);
	daemon_start(&w);
	char *outp = up_until_clone(&w, "term1");
	daemon_stop(&w); /* exit 0 */
	int st = client_end();
	char *out = NULL;
	cr_assert_eq(read_file(outp, &out, NULL), 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "client status %d:\n%s", st, out);
	cr_assert(strstr(out, "interrupted"), "%s", out);
	free(out);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = "
				"'interrupted'", NULL),
		     1);
	daemon_start(&w);
	wait_db(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'done'", NULL, 1,
		"the resumed job ended done");
	cr_assert_eq(requests("POST", "/qemu/9024/clone", -1), 1);
	cr_assert_eq(guests_named("term1"), 1);
	/* the log says each end as the store does */
	wait_log(&w, "job 1 (up term1): done");
	char *log = daemon_log(&w);
	cr_assert(strstr(log, "job 1 (up term1): interrupted"), "%s", log);
	free(log);
	daemon_stop(&w);
	free(outp);
	world_free(&w);
}

/* A job that ends needing attention (its guest made, its start failed):
 * the client exits 3, and the daemon's log says needs-attention, as the
 * store does, not failed. */
Test(daemon, a_job_that_needs_attention_is_logged_as_the_store_has_it)
{
	static struct world w;
	world_start(&w, 100, 2, NULL);
	daemon_start(&w);
	cr_assert_eq(simproc_fault(&sim, "{\"method\":\"POST\",\"path\":\"/status/start$\","
					 "\"nth\":1,\"action\":\"task_fail\","
					 "\"message\":\"injected task failure\"}"),
		     0);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "up", "att1", "-t", "jobvm", NULL), 3, "%s", out);
	free(out);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = "
				"'needs-attention'", NULL),
		     1);
	wait_log(&w, "job 1 (up att1): needs-attention");
	char *log = daemon_log(&w);
	cr_assert_null(strstr(log, "job 1 (up att1): failed"), "%s", log);
	free(log);
	daemon_stop(&w);
	world_free(&w);
}

/* The client asks before it submits a down (the daemon never prompts):
 * without a terminal and without --yes nothing reaches the daemon; with
 * --yes the guest is deleted; a guest that does not exist is not found
 * and no failed job is stored. */
Test(daemon, down_is_confirmed_by_the_client_before_it_is_submitted)
{
	static struct world w;
	world_start(&w, 100, 2, NULL);
	daemon_start(&w);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "up", "conf1", "-t", "jobvm", NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "down", "conf1", NULL), 2, "%s", out);
	cr_expect(strstr(out, "--yes"), "%s", out);
	free(out);
	cr_assert_eq(guests_named("conf1"), 1);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE workflow = 'down'", NULL), 0);
	cr_assert_eq(pv(&w, &out, "down", "nosuch", "--yes", NULL), 2, "%s", out);
	cr_expect(strstr(out, "no guest named 'nosuch'"), "%s", out);
	free(out);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE workflow = 'down'", NULL), 0);
	cr_assert_eq(pv(&w, &out, "down", "conf1", "--yes", NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(guests_named("conf1"), 0);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE workflow = 'down' AND state = "
				"'done'", NULL),
		     1);
	daemon_stop(&w);
	world_free(&w);
}

Test(daemon, job_follow_streams_until_the_job_ends)
{
	static struct world w;
	world_start(&w, 10, 2, NULL);
	daemon_start(&w);
	char *outp = up_until_clone(&w, "fol1");
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "job", "1", "--follow", NULL), 0, "%s", out);
	cr_assert(strstr(out, "step     start"), "the start step came while following:\n%s", out);
	cr_assert(strstr(out, "done"), "%s", out);
	free(out);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'done'", NULL),
		     1);
	int st = client_end();
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* a job the daemon does not run: printed as stored, exit 0 */
	cr_assert_eq(pv(&w, &out, "job", "1", "--follow", NULL), 0, "%s", out);
	cr_assert(strstr(out, "job 1: up fol1, done"), "%s", out);
	free(out);
	daemon_stop(&w);
	free(outp);
	world_free(&w);
}

/* In a child under uid 12345 and gid: connect and send request (NULL:
 * the status); exit 0 answered ok, 3 refused, 4 forbidden, other:
 * something else. */
static int request_as_other_user(const struct world *w, gid_t gid, const char *request)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(12345) < 0)
			_exit(10);
		struct ctl_client c;
		char *err = NULL;
		if (ctl_client_connect(w->sock, &c, &err) != 0)
			_exit(11);
		json_object *req = json_tokener_parse(request ? request
							      : "{\"id\":7,\"op\":\"status\"}"),
			    *ans = NULL;
		/* a refused peer's connection may be closed before it sends: the
		 * refusal is still there to read */
		(void)ctl_client_send(&c, req, &err);
		int r = ctl_client_recv(&c, &ans, 30000, &err);
		int code = 12;
		if (r == 1) {
			const char *e = json_object_get_string(json_object_object_get(ans, "error"));
			code = json_object_get_boolean(json_object_object_get(ans, "ok")) ? 0
			     : e && strcmp(e, "refused") == 0	  ? 3
			     : e && strcmp(e, "forbidden") == 0 ? 4
								  : 13;
		}
		_exit(code);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int as_other_user(const struct world *w, gid_t gid)
{
	return request_as_other_user(w, gid, NULL);
}

/* The socket group of the tests with another peer (nogroup); skips the
 * test when not root (the peer is a child under setuid). */
static gid_t socket_group_gid(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (setuid in a child)");
	struct group *g = getgrnam("nogroup");
	if (!g)
		cr_skip_test("no group 'nogroup'");
	return g->gr_gid;
}

/* The peer policy: a member of the socket's group may read every job but
 * cancel only its own; root may cancel any. */
Test(daemon, a_peer_may_not_cancel_another_users_job)
{
	gid_t gid = socket_group_gid();
	static struct world w;
	world_start(&w, 10, 2, "socket_group = nogroup\n");
	daemon_start(&w);
	cr_assert_eq(chmod(w.dir, 0711), 0);
	char *outp = up_until_clone(&w, "own1");
	cr_assert_eq(request_as_other_user(&w, gid, "{\"id\":7,\"op\":\"jobs\"}"), 0,
		     "a member of the group may list the jobs");
	cr_assert_eq(request_as_other_user(&w, gid, "{\"id\":8,\"op\":\"cancel\",\"job\":1}"), 4,
		     "a member of the group cancelled root's job");
	wait_log(&w, "cancel of ticket 1 (up own1) refused: it is uid 0's");
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'running'",
			    NULL), 1, "the job runs on");
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "cancel", "1", NULL), 0, "root cancels it: %s", out);
	free(out);
	int st = client_end();
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "client status %d", st);
	wait_db(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'cancelled'", NULL, 1,
		"job 1 recorded cancelled");
	daemon_stop(&w);
	free(outp);
	world_free(&w);
}

Test(daemon, a_peer_outside_the_group_is_refused)
{
	gid_t gid = socket_group_gid();
	static struct world w;
	world_start(&w, 100, 2, "socket_group = nogroup\n");
	daemon_start(&w);
	struct stat st;
	cr_assert_eq(stat(w.sock, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0660, "mode %o", st.st_mode & 0777);
	cr_assert_eq(st.st_gid, gid);
	/* past the file's permission, so that the peer check is what refuses */
	cr_assert_eq(chmod(w.dir, 0711), 0);
	cr_assert_eq(chmod(w.sock, 0666), 0);
	int code = as_other_user(&w, 12345);
	cr_assert_eq(code, 3, "uid 12345 outside the group was not refused (%d)", code);
	cr_assert_eq(as_other_user(&w, gid), 0, "a member of the group was refused");
	wait_log(&w, "refused pid");
	json_object *ans = call(&w, "{\"id\":8,\"op\":\"status\"}");
	cr_assert(json_object_get_boolean(json_object_object_get(ans, "ok")));
	json_object_put(ans);
	daemon_stop(&w);
	world_free(&w);
}

/* In a child under uid (0: root, as the test runs) and gid: submit body
 * (the members of a submit request after "op": "workflow", "jobs") and
 * read every line until the answer refuses or the job's exit event; the
 * lines, as received, one a line (malloc'd). */
static char *submit_as(const struct world *w, uid_t uid, gid_t gid, const char *body)
{
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(pfd[0]);
		if (uid && (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0))
			_exit(10);
		struct ctl_client c;
		char *err = NULL;
		if (ctl_client_connect(w->sock, &c, &err) != 0)
			_exit(11);
		char *text = strprintf("{\"id\":1,\"op\":\"submit\",%s}", body);
		json_object *req = text ? json_tokener_parse(text) : NULL, *m = NULL;
		free(text);
		if (!req || ctl_client_send(&c, req, &err) < 0)
			_exit(12);
		while (ctl_client_recv(&c, &m, 60000, &err) == 1) {
			const char *s = json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN);
			if (write(pfd[1], s, strlen(s)) < 0 || write(pfd[1], "\n", 1) < 0)
				_exit(13);
			json_object *ok = json_object_object_get(m, "ok");
			const char *ev = json_object_get_string(json_object_object_get(m, "event"));
			bool end = (ok && !json_object_get_boolean(ok)) || (ev && strcmp(ev, "exit") == 0);
			json_object_put(m);
			if (end)
				_exit(0);
		}
		_exit(14);
	}
	close(pfd[1]);
	struct sbuf b = {0};
	char buf[4096];
	ssize_t n;
	while ((n = read(pfd[0], buf, sizeof buf)) > 0)
		cr_assert_eq(sbuf_addn(&b, buf, (size_t)n), 0);
	close(pfd[0]);
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "submit as uid %u: status %d:\n%s",
		  (unsigned)uid, st, b.s ? b.s : "");
	return b.s ? sbuf_steal(&b) : strdup("");
}

/* No 8 bytes in a row of secret are in text (but digits only, which a
 * number in a reply may hold by chance). */
static void assert_none_of(const char *text, const char *secret, const char *what)
{
	size_t n = strlen(secret);
	cr_assert_geq(n, 8);
	for (size_t i = 0; i + 8 <= n; i++) {
		char part[9];
		memcpy(part, secret + i, 8);
		part[8] = '\0';
		if (strspn(part, "0123456789") == 8)
			continue;
		cr_assert_null(strstr(text, part), "%s: bytes %zu.. of %s in a reply:\n%s", what, i,
			       what, text);
	}
}

/* A submit body of one job of wf on x9 with params (a JSON object). */
static char *one_job(const char *wf, const char *params)
{
	char *b = strprintf("\"workflow\":\"%s\",\"jobs\":[{\"subject\":\"x9\",\"params\":%s}]",
			    wf, params);
	cr_assert_not_null(b);
	return b;
}

/* A world whose socket admits the group nogroup (its directory
 * searchable by all) with the daemon started: the group's gid. */
static gid_t group_world(struct world *w, int speed)
{
	gid_t gid = socket_group_gid();
	world_start(w, speed, 2, "socket_group = nogroup\n");
	cr_assert_eq(chmod(w->dir, 0711), 0);
	daemon_start(w);
	return gid;
}

/* A member (uid 12345) submits a dry run of up x9 of the directory's
 * template jobvm, its file's path given, and it runs as ticket. */
static void member_dry_run(const struct world *w, gid_t gid, int ticket)
{
	char *tp = strprintf("%s/jobvm.tmpl", w->tdir);
	char *params = strprintf("{\"name\":\"x9\",\"dry_run\":true,\"template\":\"jobvm\","
				 "\"template_path\":\"%s\"}", tp);
	char *req = one_job("up", params);
	char *out = submit_as(w, 12345, gid, req);
	char *end = strprintf("\"event\":\"exit\",\"ticket\":%d,\"code\":0", ticket);
	cr_assert(strstr(out, end), "%s", out);
	free(end);
	free(out);
	free(req);
	free(params);
	free(tp);
}

/* The peer policy is the request table's (ctl.c): a member of the
 * socket's group sends every request of it naming root's running job;
 * each CTL_READ one is answered, each CTL_OWNER one (cancel, resume) is
 * forbidden, and root's job runs on. Once ended, root's job stays root's
 * for a resume, and one the daemon never ran is its user's; the member's
 * own job is its own (resume is let through: it was done). */
Test(daemon, a_peer_reads_another_users_job_but_may_not_cancel_or_resume_it)
{
	static struct world w;
	gid_t gid = group_world(&w, 10);
	/* job 1: root's, running */
	char *outp = up_until_clone(&w, "own1");
	/* job 2: the member's own (a dry run, done) */
	member_dry_run(&w, gid, 2);
	wait_log(&w, "ticket 2 (up x9) runs job 2");
	wait_log(&w, "ticket 2 (up x9) ended");
	size_t n_read = 0, n_owner = 0;
	for (int op = 0; op < CTL_OP__COUNT; op++) {
		const struct ctl_op_def *def = ctl_op_def((enum ctl_op)op);
		cr_assert_not_null(def, "op %d is not in the request table", op);
		if (def->flags & CTL_SUBMIT)
			continue; /* it makes the member's own job (above) */
		char *req = strprintf("{\"id\":%d,\"op\":\"%s\",\"job\":1}", op, def->name);
		int code = request_as_other_user(&w, gid, req);
		if (def->flags & CTL_READ) {
			cr_assert_eq(code, 0, "%s: a member may read root's job (%d)", req, code);
			n_read++;
		} else {
			cr_assert(def->flags & CTL_OWNER, "%s: no policy in the request table", req);
			cr_assert_eq(code, 4, "%s: a member acted on root's job (%d)", req, code);
			char *said = strprintf("%s of ticket 1 (up own1) refused: it is uid 0's",
					       def->name);
			wait_log(&w, said);
			free(said);
			n_owner++;
		}
		free(req);
	}
	cr_assert_geq(n_read, 5, "jobs, job, watch, status, report");
	cr_assert_geq(n_owner, 2, "cancel, resume");
	/* a submit of the same workflow and subject would resume or replace
	 * root's job: an owner's act too */
	char *tp = strprintf("%s/jobvm.tmpl", w.tdir);
	char *params = strprintf("{\"name\":\"own1\",\"dry_run\":true,\"template\":\"jobvm\","
				 "\"template_path\":\"%s\"}", tp);
	char *body = strprintf("\"workflow\":\"up\",\"jobs\":[{\"subject\":\"own1\","
			       "\"params\":%s}]", params);
	char *got = submit_as(&w, 12345, gid, body);
	cr_assert(strstr(got, "\"error\":\"forbidden\"") &&
		  strstr(got, "job 1 (up own1, running) is uid 0's"), "%s", got);
	free(got);
	free(body);
	free(params);
	free(tp);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'running'",
			    NULL), 1, "root's job runs on");
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "cancel", "1", NULL), 0, "root cancels it: %s", out);
	free(out);
	int st = client_end();
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "client status %d", st);
	wait_log(&w, "ticket 1 (up own1) ended");
	/* out of the daemon, a stored job keeps its owner for a resume */
	cr_assert_eq(request_as_other_user(&w, gid, "{\"id\":1,\"op\":\"resume\",\"job\":1}"), 4);
	wait_log(&w, "resume of job 1 refused: it is uid 0's");
	cr_assert_eq(request_as_other_user(&w, gid, "{\"id\":1,\"op\":\"resume\",\"job\":99}"), 4,
		     "a job the daemon never ran is its user's");
	/* the member's own: let through to its handler (done: nothing to resume) */
	cr_assert_eq(request_as_other_user(&w, gid, "{\"id\":1,\"op\":\"resume\",\"job\":2}"), 13);
	char *log = daemon_log(&w);
	cr_assert_null(strstr(log, "resume of job 2 refused"), "%s", log);
	free(log);
	/* the owners are the store's: a restarted daemon knows them */
	cr_assert_eq(db_int(&w, "SELECT owner FROM jobs WHERE id = 2", NULL), 12345);
	cr_assert_eq(db_int(&w, "SELECT owner FROM jobs WHERE id = 1", NULL), 0);
	daemon_stop(&w);
	daemon_start(&w);
	cr_assert_eq(request_as_other_user(&w, gid, "{\"id\":1,\"op\":\"resume\",\"job\":2}"), 13,
		     "the member's own job is still its own after a restart");
	cr_assert_eq(request_as_other_user(&w, gid, "{\"id\":1,\"op\":\"resume\",\"job\":1}"), 4,
		     "root's is still root's");
	daemon_stop(&w);
	free(outp);
	world_free(&w);
}

/* What a member submits is params, never a command line: every member
 * naming a file (a template in up, inject, bench and virtio; up's
 * template_path), given a path, '..', an absolute path, a symlink out of
 * the template directory or a template only root may read, is refused;
 * so is a member the workflow's launcher never writes; no reply holds a
 * byte of the token secret or of a root-only file. */
Test(daemon, a_member_cannot_make_it_read_a_file_it_could_not)
{
	gid_t gid = socket_group_gid();
	static struct world w;
	world_start(&w, 100, 2, "socket_group = nogroup\n");
	cr_assert_eq(chmod(w.dir, 0711), 0);
	const char *rootonly_text = "rootonly-Zq7Xw9Kp2Vb4";
	char *rootonly = strprintf("%s/rootonly", w.dir), *body = strprintf("%s\n", rootonly_text);
	write_text(rootonly, body, 0600);
	free(body);
	/* in the template directory: a symlink out of it, a template only
	 * root may read */
	char *leak = strprintf("%s/leak.tmpl", w.tdir), *priv = strprintf("%s/private.tmpl", w.tdir);
	cr_assert_eq(symlink(w.secret, leak), 0);
	body = strprintf("[template]\n%s\n", rootonly_text);
	write_text(priv, body, 0600);
	free(body);
	daemon_start(&w);
	/* each workflow's params around the value: before, after */
	const char *fmt[][3] = {
		{"up", "{\"name\":\"x9\",\"dry_run\":true,\"template\":\"", "\"}"},
		{"up", "{\"name\":\"x9\",\"dry_run\":true,\"template\":\"jobvm\",\"template_path\":\"",
		 "\"}"},
		{"inject", "{\"template\":\"", "\"}"},
		{"bench", "{\"template\":\"", "\",\"size_mib\":1}"},
		{"virtio", "{\"dry_run\":true,\"template\":\"", "\"}"},
		{"up", "{\"template\":\"jobvm\",\"template_file\":\"", "\"}"},
		{"migrate", "{\"target\":\"pve2\",\"parent\":1,\"storage_map\":\"", "\"}"},
	};
	char *vals[] = {w.secret, "../token.secret", "..", rootonly, "../rootonly", "leak",
			"private", "/etc/shadow", "../../../etc/shadow"};
	size_t runs = 0;
	for (size_t f = 0; f < sizeof fmt / sizeof *fmt; f++)
		for (size_t v = 0; v < sizeof vals / sizeof *vals; v++) {
			char *params = strprintf("%s%s%s", fmt[f][1], vals[v], fmt[f][2]);
			char *req = one_job(fmt[f][0], params);
			char *out = submit_as(&w, 12345, gid, req);
			json_object *first = json_tokener_parse(out);
			cr_assert_not_null(first, "%s: %s", req, out);
			cr_assert(!json_object_get_boolean(json_object_object_get(first, "ok")),
				  "%s: not refused:\n%s", req, out);
			cr_assert_str_eq(json_object_get_string(json_object_object_get(first, "error")),
					 "refused", "%s:\n%s", req, out);
			assert_none_of(out, sim.token_secret, "the token secret");
			assert_none_of(out, rootonly_text, "the root-only file");
			json_object_put(first);
			free(out);
			free(req);
			free(params);
			runs++;
		}
	cr_assert_eq(runs, 63);
	wait_log(&w, "uid 12345: up refused: \"template\": a template is a name");
	wait_log(&w, "template 'leak' leads out of its directory");
	wait_log(&w, "template 'private' is not a file uid 12345 may read");
	wait_log(&w, "\"template_path\" is not the file of template 'jobvm'");
	wait_log(&w, "\"template_file\" is not one of its params");
	wait_log(&w, "\"parent\" is not one of its params");
	/* a template of the directory runs, the path of its file given or not;
	 * it is job 1: the refusals stored nothing */
	member_dry_run(&w, gid, 1);
	wait_log(&w, "uid 12345: up x9 queued as ticket 1");
	wait_log(&w, "ticket 1 (up x9) runs job 1");
	/* root may name a file, and a parse error quotes nothing of it */
	char *params = strprintf("{\"name\":\"x9\",\"dry_run\":true,\"template\":\"%s\","
				 "\"template_path\":\"%s\"}", w.secret, w.secret);
	char *req = one_job("up", params);
	char *out = submit_as(&w, 0, 0, req);
	cr_assert(strstr(out, "expected '=' after the key"), "%s", out);
	assert_none_of(out, sim.token_secret, "the token secret (root's parse error)");
	free(out);
	free(req);
	free(params);
	daemon_stop(&w);
	free(rootonly);
	free(leak);
	free(priv);
	world_free(&w);
}

/* A member's raw up params get the CLI's own value checks before a job
 * is stored: a control character in a --set or --var value, a key that is
 * no config key, a value PVE's schema refuses, a pool the configuration
 * does not have; each named in the refusal. The valid job after them is
 * job 1: the refusals stored nothing. */
Test(daemon, a_members_raw_values_are_checked_as_the_clis)
{
	static struct world w;
	gid_t gid = group_world(&w, 100);
	const struct {
		const char *extra, *says;
	} bad[] = {
		{"\"sets\":[[\"ciuser\",\"bob\\nroot\"]]", "\"sets\": a value holds a control character (0x0a)"},
		{"\"sets\":[[\"description\",\"a\\rb\"]]", "control character (0x0d)"},
		{"\"vars\":[[\"who\",\"x\\u0001\"]]", "\"vars\": a value holds a control character (0x01)"},
		{"\"sets\":[[\"vmid\",\"555\"]]", "--set vmid: not a qemu config key"},
		{"\"sets\":[[\"cores\",\"many\"]]", "--set cores=many"},
		{"\"pool\":\"nosuch\"", "no [pool \"nosuch\"] in the configuration"},
		{"\"sets\":[[\"cores\"]]", "arrays of [key, value] strings"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char *params = strprintf("{\"name\":\"x9\",\"dry_run\":true,\"template\":\"jobvm\",%s}",
					 bad[i].extra);
		char *req = one_job("up", params);
		char *out = submit_as(&w, 12345, gid, req);
		json_object *first = json_tokener_parse(out);
		cr_assert_not_null(first, "%s: %s", req, out);
		cr_assert(!json_object_get_boolean(json_object_object_get(first, "ok")),
			  "%s: not refused:\n%s", req, out);
		const char *msg = json_object_get_string(json_object_object_get(first, "message"));
		cr_assert(msg && strstr(msg, bad[i].says), "%s: the refusal does not say '%s':\n%s",
			  req, bad[i].says, out);
		json_object_put(first);
		free(out);
		free(req);
		free(params);
	}
	/* root's raw values are checked the same way */
	char *req = one_job("up", "{\"name\":\"x9\",\"dry_run\":true,\"template\":\"jobvm\","
			    "\"sets\":[[\"searchdomain\",\"a\\nb\"]]}");
	char *tp = strprintf("%s/jobvm.tmpl", w.tdir);
	char *out = submit_as(&w, 0, 0, req);
	cr_assert(strstr(out, "control character (0x0a)"), "root: %s", out);
	free(out);
	free(req);
	char *params = strprintf("{\"name\":\"x9\",\"dry_run\":true,\"template\":\"jobvm\","
				 "\"template_path\":\"%s\",\"sets\":[[\"cores\",\"2\"]]}", tp);
	req = one_job("up", params);
	out = submit_as(&w, 12345, gid, req);
	cr_assert(strstr(out, "\"event\":\"exit\",\"ticket\":1,\"code\":0"), "%s", out);
	free(out);
	free(req);
	free(params);
	free(tp);
	wait_log(&w, "ticket 1 (up x9) runs job 1");
	daemon_stop(&w);
	world_free(&w);
}

/* A submitted job its child cannot store (job_submit refuses: an
 * unfinished up job of the guest is held by another process, here this
 * one) reaches the client as the daemon's error, as it did when the
 * daemon stored it: "pvagent: error: pvagentd: ...", exit 1, and with
 * --json only the client's own final object; nothing else is stored. */
Test(daemon, a_submitted_job_that_cannot_be_stored_says_why)
{
	static struct world w;
	world_start(&w, 100, 2, NULL);
	daemon_start(&w);
	struct store *st = NULL;
	struct store_job_lock *lk = NULL;
	char *err = NULL;
	long long id = 0;
	long holder = 0;
	cr_assert_eq(store_open(w.db, &st, &err), 0, "%s", err ? err : "");
	cr_assert_eq(store_job_insert(st, "up", "x9", "{}", 1.0, &id, &err), 0, "%s",
		     err ? err : "");
	cr_assert_eq(store_job_lock(st, id, &lk, &holder, &err), 1, "%s", err ? err : "");
	char *out = NULL;
	int rc = pv(&w, &out, "up", "x9", "-t", "jobvm", "--dry-run", NULL);
	char *says = strprintf("pvagent: error: pvagentd: x9: up job %lld (process %ld) is "
			       "working on it\n", id, (long)getpid());
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, says), "not said: %s\n%s", says, out);
	free(out);
	rc = pv(&w, &out, "--json", "up", "x9", "-t", "jobvm", "--dry-run", NULL);
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, says), "not said (--json): %s\n%s", says, out);
	/* one JSON line, the client's (the child printed none) */
	int objects = 0;
	for (char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1
									 : NULL)
		objects += *line == '{';
	cr_assert_eq(objects, 1, "%s", out);
	/* its message the reason said on stderr, never "see standard error" */
	json_object *fin = cli_final_json(out);
	const char *const msg[] = {"error", "message", NULL};
	const char *m = cli_jpath(fin, msg);
	cr_assert(m && strstr(m, "is working on it") && !strstr(m, "see standard error"), "%s",
		  out);
	json_object_put(fin);
	free(out);
	wait_log(&w, "ticket 2 (up x9): x9: up job 1 (process");
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs", NULL), 1, "nothing else stored");
	free(says);
	store_job_unlock(lk);
	store_close(st);
	daemon_stop(&w);
	world_free(&w);
}

/* /proc/PID/FILE (malloc'd). */
static char *proc_text(pid_t pid, const char *file)
{
	char *path = strprintf("/proc/%d/%s", (int)pid, file), *text = NULL;
	cr_assert_eq(read_file(path, &text, NULL), 0, "%s", path);
	free(path);
	return text;
}

/* The daemon's CPU time so far in clock ticks (utime + stime of
 * /proc/PID/stat). */
static long cpu_ticks(pid_t pid)
{
	char *text = proc_text(pid, "stat");
	const char *p = strrchr(text, ')');
	cr_assert_not_null(p);
	long ut = 0, st = 0;
	/* after ") ": the state, then fields 4 to 13; utime is 14, stime 15 */
	int n = sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &ut, &st);
	free(text);
	cr_assert_eq(n, 2);
	return ut + st;
}

static size_t log_lines_with(const struct world *w, const char *needle)
{
	char *log = daemon_log(w);
	size_t n = 0;
	for (const char *p = log; (p = strstr(p, needle)); p++)
		n++;
	free(log);
	return n;
}

/* In a child under uid 12345 and gid: n connections, a status request on
 * each and its answer read; "OK BUSY\n" written to the pipe out[1], then
 * they are held until hold[0] reads end of file. */
static pid_t member_holds(const struct world *w, gid_t gid, int n, const int out[2],
			  const int hold[2])
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid != 0) {
		close(out[1]);
		close(hold[0]);
		return pid;
	}
	close(out[0]);
	close(hold[1]);
	if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(12345) < 0)
		_exit(10);
	struct ctl_client *c = calloc((size_t)n, sizeof *c);
	json_object *req = json_tokener_parse("{\"id\":1,\"op\":\"status\"}");
	char *err = NULL;
	if (!c || !req)
		_exit(11);
	for (int i = 0; i < n; i++)
		if (ctl_client_connect(w->sock, &c[i], &err) != 0)
			_exit(12);
	int ok = 0, busy = 0;
	for (int i = 0; i < n; i++) {
		json_object *m = NULL;
		(void)ctl_client_send(&c[i], req, &err); /* a turned-away one may be closed */
		free(err);
		err = NULL;
		if (ctl_client_recv(&c[i], &m, 60000, &err) != 1)
			_exit(13);
		const char *e = json_object_get_string(json_object_object_get(m, "error"));
		if (json_object_get_boolean(json_object_object_get(m, "ok")))
			ok++;
		else if (e && strcmp(e, "busy") == 0)
			busy++;
		json_object_put(m);
	}
	char line[64];
	int len = snprintf(line, sizeof line, "%d %d\n", ok, busy);
	if (write(out[1], line, (size_t)len) != len)
		_exit(14);
	char b;
	while (read(hold[0], &b, 1) > 0)
		continue;
	_exit(0);
}

Test(daemon, twice_the_client_limit_is_turned_away_and_status_still_answers)
{
	gid_t gid = socket_group_gid();
	static struct world w;
	world_start(&w, 100, 2, "socket_group = nogroup\nmax_clients = 8\n");
	cr_assert_eq(chmod(w.dir, 0711), 0);
	daemon_start(&w);
	int res[2], hold[2];
	cr_assert_eq(pipe(res), 0);
	cr_assert_eq(pipe(hold), 0);
	client_pid = member_holds(&w, gid, 16, res, hold);
	char line[64] = "";
	struct pollfd pf = {.fd = res[0], .events = POLLIN};
	if (poll(&pf, 1, 120000) != 1) {
		char *log = daemon_log(&w);
		cr_assert_fail("the member's 16 connections were not all answered:\n%s", log);
	}
	ssize_t n = read(res[0], line, sizeof line - 1);
	close(res[0]);
	cr_assert_gt(n, 0, "the member's connections got no answers");
	line[n] = '\0';
	int ok = -1, busy = -1;
	cr_assert_eq(sscanf(line, "%d %d", &ok, &busy), 2, "%s", line);
	cr_assert_eq(ok, 8, "served: %d", ok);
	cr_assert_eq(busy, 8, "turned away: %d", busy);
	/* held: root's status answers at once, the daemon stays idle */
	long before = cpu_ticks(daemon_pid);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	json_object *ans = call(&w, "{\"id\":2,\"op\":\"status\"}");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert(json_object_get_boolean(json_object_object_get(ans, "ok")));
	json_object_put(ans);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	cr_assert_lt(s, 1.0, "status took %.2f s", s);
	struct timespec win = {1, 0};
	nanosleep(&win, NULL); /* the hold window: the measurement itself */
	long after = cpu_ticks(daemon_pid);
	cr_assert_leq(after - before, 5, "%ld ticks of CPU over the hold", after - before);
	size_t lines = log_lines_with(&w, "turned away");
	cr_assert_eq(lines, 1, "%zu log lines for 8 connections turned away", lines);
	/* let go: a member is served again */
	close(hold[1]);
	int st = 0;
	cr_assert_eq(waitpid(client_pid, &st, 0), client_pid);
	client_pid = -1;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "member status %d", st);
	cr_assert_eq(as_other_user(&w, gid), 0, "a member is not served after the others left");
	daemon_stop(&w);
	world_free(&w);
}

/* Does a line come on c within ms? 1 and *m, 0 not yet. */
static int answer_within(struct ctl_client *c, int ms, json_object **m)
{
	char *err = NULL;
	int r = ctl_client_recv(c, m, ms, &err);
	cr_assert_geq(r, 0, "%s", err ? err : "closed");
	free(err);
	return r;
}

Test(daemon, at_the_fd_limit_it_stops_accepting_until_a_connection_closes)
{
	static struct world w;
	world_start(&w, 100, 2, "max_clients = 1000\n");
	daemon_nofile = 32;
	daemon_start(&w);
	daemon_nofile = 0;
	json_object *req = json_tokener_parse("{\"id\":1,\"op\":\"status\"}");
	struct ctl_client c[48];
	int served = 0, pending = -1;
	/* connect one at a time until one is not served: the daemon said it
	 * stopped accepting (each waits for its answer or that line) */
	for (int i = 0; i < 48 && pending < 0; i++) {
		connect_daemon(&w, &c[i]);
		char *err = NULL;
		cr_assert_eq(ctl_client_send(&c[i], req, &err), 0, "%s", err ? err : "");
		for (;;) {
			json_object *m = NULL;
			if (answer_within(&c[i], 10, &m)) {
				cr_assert(json_object_get_boolean(json_object_object_get(m, "ok")));
				json_object_put(m);
				served++;
				break;
			}
			if (log_lines_with(&w, "not accepting until a connection closes")) {
				pending = i;
				break;
			}
		}
	}
	cr_assert_geq(pending, 0, "48 connections and the fd limit was never reached");
	cr_assert_gt(served, 0);
	long before = cpu_ticks(daemon_pid);
	struct timespec win = {1, 0};
	nanosleep(&win, NULL); /* the window at the limit: the measurement itself */
	long after = cpu_ticks(daemon_pid);
	cr_assert_leq(after - before, 5, "%ld ticks of CPU at the fd limit", after - before);
	cr_assert_eq(log_lines_with(&w, "accept:"), 1);
	/* one closes: the waiting one is served */
	ctl_client_close(&c[0]);
	json_object *m = NULL;
	cr_assert_eq(answer_within(&c[pending], 60000, &m), 1);
	cr_assert(json_object_get_boolean(json_object_object_get(m, "ok")));
	json_object_put(m);
	for (int i = 1; i <= pending; i++)
		ctl_client_close(&c[i]);
	json_object_put(req);
	json_object *ans = call(&w, "{\"id\":2,\"op\":\"status\"}");
	cr_assert(json_object_get_boolean(json_object_object_get(ans, "ok")));
	json_object_put(ans);
	daemon_stop(&w);
	world_free(&w);
}

/* Run sql on the store (a test's own writes). */
static void db_exec(const struct world *w, const char *sql)
{
	sqlite3 *db = NULL;
	cr_assert_eq(sqlite3_open(w->db, &db), SQLITE_OK);
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "");
	sqlite3_close(db);
}

/* The query plan of sql on the store, its details one a line. */
static char *query_plan(const struct world *w, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	cr_assert_eq(sqlite3_open_v2(w->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	char *q = strprintf("EXPLAIN QUERY PLAN %s", sql);
	cr_assert_eq(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	free(q);
	struct sbuf b = {0};
	while (sqlite3_step(st) == SQLITE_ROW)
		sbuf_addf(&b, "%s\n", (const char *)sqlite3_column_text(st, 3));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return b.s ? sbuf_steal(&b) : strdup("");
}

static void assert_plan(const struct world *w, const char *sql, const char *want)
{
	char *plan = query_plan(w, sql);
	cr_assert(strstr(plan, want), "%s: not %s:\n%s", sql, want, plan);
	cr_assert_null(strstr(plan, "SCAN jobs\n"), "%s scans every job:\n%s", sql, plan);
	free(plan);
}

#define FINISHED "state IN ('done', 'failed', 'cancelled')"

Test(daemon, finished_jobs_beyond_the_age_and_count_limits_are_pruned)
{
	static struct world w;
	world_start(&w, 100, 2, "keep_jobs = 30d\nkeep_jobs_max = 25000\n");
	/* the store's schema, then 100,000 finished jobs (60,000 of 100 days
	 * ago, 40,000 of a day ago) and 10 unfinished ones of 200 days ago,
	 * each with a step and an event, in one transaction */
	daemon_start(&w);
	daemon_stop(&w);
	double now = (double)time(NULL);
	char *sql = strprintf(
		"BEGIN;"
		"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100010) "
		"INSERT INTO jobs(id, workflow, subject, params, state, created, ended) "
		"SELECT i, 'up', 'g' || i, '{}', "
		"CASE WHEN i <= 10 THEN 'needs-attention' WHEN i %% 3 = 0 THEN 'failed' ELSE 'done' END, "
		"CASE WHEN i <= 10 THEN %f WHEN i <= 60010 THEN %f ELSE %f END, "
		"CASE WHEN i <= 10 THEN NULL WHEN i <= 60010 THEN %f ELSE %f END FROM n;"
		"INSERT INTO steps(job, idx, name, state) SELECT id, 0, 'clone', 'done' FROM jobs;"
		"INSERT INTO events(job, time, kind, message) SELECT id, created, 'note', 'x' FROM jobs;"
		"COMMIT;",
		now - 200 * 86400.0, now - 100 * 86400.0, now - 86400.0, now - 100 * 86400.0,
		now - 86400.0);
	db_exec(&w, sql);
	free(sql);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs", NULL), 100010);
	/* at start: by age (60,000), then by count (the newest 25,000 of the
	 * other 40,000 kept); the unfinished ones stay */
	daemon_start(&w);
	wait_log(&w, "pruned 75000 finished jobs");
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE " FINISHED, NULL), 25000);
	cr_assert_eq(db_int(&w, "SELECT min(id) FROM jobs WHERE " FINISHED, NULL), 75011);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE state = 'needs-attention'",
			    NULL), 10);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM steps", NULL), 25010, "steps go with them");
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM events", NULL), 25010, "events too");
	daemon_stop(&w);
	/* what the store is asked stays an index lookup whatever it holds */
	assert_plan(&w, "SELECT id FROM jobs WHERE id < 5 ORDER BY id DESC LIMIT 20",
		    "USING INTEGER PRIMARY KEY");
	assert_plan(&w, "SELECT id FROM jobs WHERE id = 5", "USING INTEGER PRIMARY KEY");
	assert_plan(&w, "SELECT idx FROM steps WHERE job = 5 ORDER BY idx",
		    "sqlite_autoindex_steps_1 (job=?)");
	assert_plan(&w, "SELECT time FROM events WHERE job = 5 ORDER BY id", "events_job (job=?)");
	assert_plan(&w, "SELECT id FROM jobs WHERE state IN ('queued', 'running', "
		    "'interrupted', 'needs-attention') ORDER BY id", "jobs_state_ended");
	/* the command: --older-than instead of keep_jobs; pages */
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "jobs", "--prune", "--older-than", "12h", NULL), 0, "%s", out);
	cr_assert(strstr(out, "pruned 25000 finished jobs"), "%s", out);
	free(out);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs", NULL), 10);
	cr_assert_eq(pv(&w, &out, "--json", "jobs", "--limit", "4", NULL), 0, "%s", out);
	json_object *o = json_tokener_parse(out);
	cr_assert_not_null(o, "%s", out);
	cr_assert_eq(json_object_array_length(json_object_object_get(o, "jobs")), 4);
	cr_assert_eq(json_object_get_int(json_object_object_get(o, "next_before")), 7, "%s", out);
	json_object_put(o);
	free(out);
	cr_assert_eq(pv(&w, &out, "jobs", "--limit", "4", "--before", "3", NULL), 0, "%s", out);
	cr_assert(strstr(out, "\n2 ") && strstr(out, "\n1 ") && !strstr(out, "\n3 "), "%s", out);
	cr_assert_null(strstr(out, "more:"), "the last page has no next:\n%s", out);
	free(out);
	cr_assert_eq(pv(&w, &out, "jobs", "--older-than", "1d", NULL), 2, "%s", out);
	free(out);
	world_free(&w);
}

/* Raw lines to the socket; the answers (lines) read until n came. */
static json_object *raw_lines(const struct world *w, const char *data, size_t len, int n)
{
	struct ctl_client c;
	connect_daemon(w, &c);
	size_t off = 0;
	while (off < len) {
		ssize_t k = send(c.fd, data + off, len - off, MSG_NOSIGNAL);
		cr_assert_gt(k, 0, "send: %s", strerror(errno));
		off += (size_t)k;
	}
	json_object *a = json_object_new_array();
	for (int i = 0; i < n; i++) {
		json_object *m = NULL;
		char *err = NULL;
		cr_assert_eq(ctl_client_recv(&c, &m, 60000, &err), 1, "answer %d: %s", i,
			     err ? err : "timeout");
		json_object_array_add(a, m);
	}
	ctl_client_close(&c);
	return a;
}

static const char *ans_error(json_object *a, size_t i)
{
	json_object *o = json_object_array_get_idx(a, i);
	cr_assert_not_null(o);
	cr_assert(!json_object_get_boolean(json_object_object_get(o, "ok")), "%s",
		  json_object_to_json_string(o));
	return json_object_get_string(json_object_object_get(o, "error"));
}

Test(daemon, bad_requests_get_errors_and_the_daemon_keeps_serving)
{
	static struct world w;
	world_start(&w, 100, 2, NULL);
	daemon_start(&w);
	/* a client that stays connected and idle meanwhile */
	struct ctl_client idle;
	connect_daemon(&w, &idle);
	const char lines[] = "this is not json\n"
			     "{\"id\":2,\"op\":\"frobnicate\"}\n"
			     "[1,2]\n"
			     "{\"id\":4}\n"
			     "{\"id\":5,\"op\":\"submit\",\"argv\":[\"nodes\"]}\n"
			     "{\"id\":6,\"op\":\"submit\",\"argv\":[\"up\",\"x\"],\"guests\":[\"y\"]}\n"
			     "{\"id\":7,\"op\":\"watch\",\"job\":99}\n"
			     "{\"id\":8,\"op\":\"status\"}\n";
	char *err = NULL;
	json_object *a = raw_lines(&w, lines, sizeof lines - 1, 8);
	cr_assert_str_eq(ans_error(a, 0), "bad_request");
	cr_assert_str_eq(ans_error(a, 1), "unknown_op");
	cr_assert_eq(json_object_get_int(json_object_object_get(json_object_array_get_idx(a, 1),
								"id")), 2);
	cr_assert_str_eq(ans_error(a, 2), "bad_request");
	cr_assert_str_eq(ans_error(a, 3), "bad_request");
	cr_assert_str_eq(ans_error(a, 4), "bad_request");
	cr_assert_str_eq(ans_error(a, 5), "bad_request");
	cr_assert_str_eq(ans_error(a, 6), "not_found");
	cr_assert(json_object_get_boolean(
		json_object_object_get(json_object_array_get_idx(a, 7), "ok")));
	json_object_put(a);
	/* a 10 MiB line, then a good request on the same connection */
	size_t big = (size_t)10 * 1024 * 1024;
	char *buf = malloc(big + 64);
	cr_assert_not_null(buf);
	memcpy(buf, "{\"id\":1,\"op\":\"status\",\"pad\":\"", 30);
	memset(buf + 30, 'x', big - 30);
	size_t len = big;
	len += (size_t)sprintf(buf + len, "\"}\n{\"id\":9,\"op\":\"status\"}\n");
	a = raw_lines(&w, buf, len, 2);
	free(buf);
	cr_assert_str_eq(ans_error(a, 0), "too_long");
	json_object *ok = json_object_array_get_idx(a, 1);
	cr_assert(json_object_get_boolean(json_object_object_get(ok, "ok")));
	cr_assert_eq(json_object_get_int(json_object_object_get(ok, "id")), 9);
	json_object_put(a);
	/* a client that sends its request and closes its sending end still
	 * gets the answer, then the daemon closes */
	struct ctl_client hc;
	connect_daemon(&w, &hc);
	const char one[] = "{\"id\":11,\"op\":\"status\"}\n";
	cr_assert_eq(send(hc.fd, one, sizeof one - 1, MSG_NOSIGNAL), (ssize_t)(sizeof one - 1));
	cr_assert_eq(shutdown(hc.fd, SHUT_WR), 0);
	json_object *hm = NULL;
	cr_assert_eq(ctl_client_recv(&hc, &hm, 60000, &err), 1, "%s", err ? err : "");
	cr_assert_eq(json_object_get_int(json_object_object_get(hm, "id")), 11);
	json_object_put(hm);
	cr_assert_eq(ctl_client_recv(&hc, &hm, 60000, &err), -1, "closed after the answer");
	free(err);
	err = NULL;
	ctl_client_close(&hc);
	/* the idle client is still served, and so is a job */
	json_object *req = json_tokener_parse("{\"id\":10,\"op\":\"jobs\"}"), *ans = NULL;
	cr_assert_eq(ctl_client_call(&idle, req, &ans, &err), 1, "%s", err ? err : "");
	cr_assert(json_object_get_boolean(json_object_object_get(ans, "ok")));
	json_object_put(ans);
	json_object_put(req);
	ctl_client_close(&idle);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "up", "after1", "-t", "jobvm", NULL), 0, "%s", out);
	free(out);
	daemon_stop(&w);
	world_free(&w);
}

static int status_workers(const struct world *w)
{
	json_object *st = call(w, "{\"id\":3,\"op\":\"status\"}"), *wk;
	cr_assert(json_object_object_get_ex(st, "workers", &wk));
	int n = json_object_get_int(json_object_object_get(wk, "total"));
	json_object_put(st);
	return n;
}

Test(daemon, sighup_with_a_broken_file_keeps_the_old_configuration)
{
	static struct world w;
	world_start(&w, 100, 3, NULL);
	daemon_start(&w);
	cr_assert_eq(status_workers(&w), 3);
	write_text(w.conf, "[pve]\nurl = https://127.0.0.1:1\n[daemon]\nworkers = lots\n", 0600);
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	wait_log(&w, "keeping the configuration loaded before");
	char *log = daemon_log(&w);
	cr_assert(strstr(log, "pvagent.conf:4: [daemon] workers"), "%s", log);
	free(log);
	cr_assert_eq(status_workers(&w), 3);
	write_conf(&w, 5, NULL);
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	wait_log(&w, "5 workers, 2 per node");
	cr_assert_eq(status_workers(&w), 5);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "up", "hup1", "-t", "jobvm", NULL), 0, "%s", out);
	free(out);
	daemon_stop(&w);
	world_free(&w);
}

Test(daemon, a_second_daemon_on_the_same_store_refuses_to_start)
{
	static struct world w;
	world_start(&w, 100, 2, NULL);
	daemon_start(&w);
	const char *argv[] = {w.dbin, "-c", w.conf, "-f", NULL};
	char *out = NULL;
	int rc = test_run(argv, NULL, &out);
	cr_assert_eq(rc, 1, "%s", out);
	char *want = strprintf("another pvagentd (pid %d) holds the store", (int)daemon_pid);
	cr_assert(strstr(out, want), "%s", out);
	free(want);
	free(out);
	json_object *st = call(&w, "{\"id\":1,\"op\":\"status\"}");
	cr_assert_eq(json_object_get_int(json_object_object_get(st, "pid")), daemon_pid);
	json_object_put(st);
	daemon_stop(&w);
	world_free(&w);
}

static long ctxt_switches(pid_t pid)
{
	char *text = proc_text(pid, "status");
	const char *p = strstr(text, "\nvoluntary_ctxt_switches:");
	cr_assert_not_null(p);
	long v = strtol(p + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
	free(text);
	return v;
}

Test(daemon, idle_means_no_wakeups)
{
	static struct world w;
	world_start(&w, 100, 2, NULL);
	daemon_start(&w);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "up", "idle1", "-t", "jobvm", NULL), 0, "%s", out);
	free(out);
	/* a connection held open over the window, so that nothing is left
	 * to handle in it */
	struct ctl_client c;
	connect_daemon(&w, &c);
	json_object *req = json_tokener_parse("{\"id\":1,\"op\":\"status\"}"), *ans = NULL;
	char *err = NULL;
	cr_assert_eq(ctl_client_call(&c, req, &ans, &err), 1);
	cr_assert_eq(json_object_get_int(json_object_object_get(
			     json_object_object_get(ans, "workers"), "busy")), 0);
	json_object_put(ans);
	/* from the moment it sleeps again (the answer is out before it is
	 * back in poll) */
	bool asleep = false;
	for (int i = 0; i < 1000 && !asleep; i++) {
		char *path = strprintf("/proc/%d/status", (int)daemon_pid), *text = NULL;
		cr_assert_eq(read_file(path, &text, NULL), 0);
		asleep = strstr(text, "\nState:\tS") != NULL;
		free(text);
		free(path);
		struct timespec ts = {0, 1000L * 1000};
		if (!asleep)
			nanosleep(&ts, NULL); /* polling a state, bounded */
	}
	cr_assert(asleep, "pvagentd never went back to sleep");
	long before = ctxt_switches(daemon_pid);
	struct timespec ts = {2, 500L * 1000 * 1000};
	nanosleep(&ts, NULL); /* the idle window: the measurement itself */
	long after = ctxt_switches(daemon_pid);
	cr_assert_eq(after, before, "the idle daemon woke %ld times in 2.5 s", after - before);
	cr_assert_eq(ctl_client_call(&c, req, &ans, &err), 1, "still answers");
	json_object_put(ans);
	json_object_put(req);
	ctl_client_close(&c);
	daemon_stop(&w);
	world_free(&w);
}

Test(daemon, cancel_stops_a_running_job_and_records_it_cancelled)
{
	static struct world w;
	world_start(&w, 10, 2, NULL);
	daemon_start(&w);
	char *outp = up_until_clone(&w, "can1");
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "cancel", "1", NULL), 0, "%s", out);
	cr_assert(strstr(out, "pvagentd stops it after its current step"), "%s", out);
	/* its clone task, which PVE goes on with, followed to its end */
	cr_assert(strstr(out, "job 1 (up can1) cancelled; its clone task ended OK: "), "%s", out);
	free(out);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM steps WHERE job = 1 AND name = 'clone' AND "
				"state = 'done'", NULL), 1);
	int st = client_end();
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "client status %d", st);
	wait_db(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'cancelled'", NULL, 1,
		"job 1 recorded cancelled");
	/* the submitter is told it was cancelled, as everyone is: no
	 * "interrupted", no resume hint */
	char *seen = NULL;
	cr_assert_eq(read_file(outp, &seen, NULL), 0);
	cr_assert(strstr(seen, "can1: cancelled by 'pvagent cancel'"), "%s", seen);
	cr_assert(strstr(seen, " cancelled "), "the table says cancelled:\n%s", seen);
	cr_assert_null(strstr(seen, "interrupted"), "%s", seen);
	cr_assert_null(strstr(seen, "resume"), "%s", seen);
	free(seen);
	/* a cancelled job is not resumed at the next start */
	daemon_stop(&w);
	daemon_start(&w);
	json_object *ans = call(&w, "{\"id\":2,\"op\":\"jobs\"}");
	cr_assert_eq(json_object_array_length(json_object_object_get(ans, "running")), 0);
	cr_assert_eq(json_object_array_length(json_object_object_get(ans, "queued")), 0);
	json_object_put(ans);
	daemon_stop(&w);
	free(outp);
	world_free(&w);
}

Test(daemon, ctrl_c_detaches_and_the_job_goes_on)
{
	static struct world w;
	world_start(&w, 10, 2, NULL);
	daemon_start(&w);
	char *outp = up_until_clone(&w, "det1");
	cr_assert_eq(kill(client_pid, SIGINT), 0);
	int st = client_end();
	char *out = NULL;
	cr_assert_eq(read_file(outp, &out, NULL), 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "client status %d:\n%s", st, out);
	cr_assert(strstr(out, "detached; job 1 goes on in pvagentd: follow it with 'pvagent job 1 "
			      "--follow'"), "%s", out);
	free(out);
	wait_db(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'done'", NULL, 1,
		"the detached job ended done");
	cr_assert_eq(requests("POST", "/qemu/9024/clone", -1), 1);
	cr_assert_eq(guests_named("det1"), 1);
	daemon_stop(&w);
	free(outp);
	world_free(&w);
}

Test(daemon, check_validates_and_status_tells_the_daemon)
{
	static struct world w;
	world_start(&w, 100, 3, NULL);
	char *out = NULL;
	const char *check[] = {w.dbin, "-c", w.conf, "--check", NULL};
	cr_assert_eq(test_run(check, NULL, &out), 0, "%s", out);
	cr_assert(strstr(out, "configuration ok; 1 templates, 0 invalid"), "%s", out);
	free(out);
	char *bad = strprintf("%s/broken.tmpl", w.tdir);
	write_text(bad, "[template]\nkind = nonsense\n", 0644);
	cr_assert_eq(test_run(check, NULL, &out), 2, "%s", out);
	cr_assert(strstr(out, "broken.tmpl"), "the invalid template is named:\n%s", out);
	free(out);
	cr_assert_eq(unlink(bad), 0);
	free(bad);
	/* no daemon: status says so (exit 1); jobs run in the process */
	cr_assert_eq(pv(&w, &out, "status", NULL), 1, "%s", out);
	cr_assert(strstr(out, "pvagentd is not running"), "%s", out);
	free(out);
	daemon_start(&w);
	cr_assert_eq(pv(&w, &out, "status", NULL), 0, "%s", out);
	char *want = strprintf("pvagentd %s, pid %d, up ", "0.9.0", (int)daemon_pid);
	cr_assert(strstr(out, want), "%s", out);
	cr_assert(strstr(out, "workers: 0 of 3 busy (at most 2 per node); queue: 0"), "%s", out);
	free(want);
	free(out);
	cr_assert_eq(pv(&w, &out, "--json", "status", NULL), 0, "%s", out);
	json_object *o = json_tokener_parse(out), *dm;
	cr_assert_not_null(o, "%s", out);
	cr_assert(json_object_object_get_ex(o, "daemon", &dm));
	cr_assert_eq(json_object_get_int(json_object_object_get(dm, "pid")), daemon_pid);
	json_object_put(o);
	free(out);
	daemon_stop(&w);
	world_free(&w);
}

Test(daemon, with_one_worker_the_second_command_waits_and_jobs_shows_it)
{
	static struct world w;
	world_start(&w, 10, 1, NULL);
	daemon_start(&w);
	char *outp = up_until_clone(&w, "one1");
	char *outq = strprintf("%s/q.out", w.dir);
	const char *args[] = {"up", "one2", "-t", "jobvm", NULL};
	pid_t second = bg(&w, outq, args);
	wait_log(&w, "ticket 2 (up one2) waiting: all 1 workers are busy");
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "jobs", NULL), 0, "%s", out);
	cr_assert(strstr(out, "queued in pvagentd (not started yet)") &&
		  strstr(out, "up one2"), "%s", out);
	free(out);
	int st = client_end();
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "first client %d", st);
	cr_assert_eq(waitpid(second, &st, 0), second);
	cr_assert_eq(read_file(outq, &out, NULL), 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "second client %d:\n%s", st, out);
	cr_assert(strstr(out, "waiting: all 1 workers are busy") && strstr(out, "created"), "%s",
		  out);
	free(out);
	/* one after the other */
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs a JOIN jobs b ON a.id < b.id WHERE "
				"a.started < b.ended AND b.started < a.ended", NULL),
		     0);
	daemon_stop(&w);
	free(outp);
	free(outq);
	world_free(&w);
}

/* A window open now (since the start of this minute, closing seconds from
 * now): the daemon queues its drain at once and, when it closes, the
 * undrain; one drain per occurrence. */
Test(daemon, a_window_drains_when_it_opens_and_undrains_when_it_closes)
{
	static struct world w;
	time_t now = time(NULL);
	struct tm tm;
	cr_assert_not_null(localtime_r(&now, &tm));
	char *extra = strprintf("[window \"now\"]\nnode = pve1\nschedule = %02d:%02d\n"
				"duration = %ds\n",
				tm.tm_hour, tm.tm_min, tm.tm_sec + 6);
	world_start(&w, 10, 2, extra);
	free(extra);
	daemon_start(&w);
	wait_db(&w, "SELECT count(*) FROM jobs WHERE workflow = 'drain' AND subject = ?", "pve1", 1,
		"the window's drain ran when it opened");
	wait_db(&w, "SELECT count(*) FROM jobs WHERE workflow = 'undrain' AND subject = ? AND "
		    "state = 'done'",
		"pve1", 1, "the undrain ran when the window closed");
	cr_expect_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE workflow = 'drain'", NULL), 1,
		     "one drain per occurrence");
	char *log = daemon_log(&w);
	cr_expect(strstr(log, "window now: drain pve1 queued"), "%s", log);
	cr_expect(strstr(log, "window now: undrain pve1 queued"), "%s", log);
	free(log);
	daemon_stop(&w);
	assert_clean_log(&w);
	world_free(&w);
}

/* ---- virtio through the daemon ------------------------------------------------- */

/* A FreeBSD 9.0 guest (VMID 190, IDE + e1000) behind a real sshd on
 * 127.0.1.230, in a one-node scenario whose boot model reads its files;
 * [ssh] settings for it in the configuration. */
static void world_start_virtio_at(struct world *w, const char *addr)
{
	struct guestenv_opts go = {.fixture = "freebsd-9.0", .addr = addr};
	cr_assert_eq(guestenv_start(&ge, &go), 0, "the guest did not start");
	char *scen = guestenv_scenario(&ge, 190,
				       "\"name\": \"g190\", \"memory\": \"1024\", \"cores\": 1,"
				       " \"ostype\": \"other\", \"boot\": \"order=ide0;net0\","
				       " \"ide0\": \"local-lvm:vm-190-disk-0,size=16G\","
				       " \"net0\": \"e1000=BC:24:11:00:01:90,bridge=vmbr0\"");
	char *path = strprintf("%s/scenario.json", ge.sd.etc);
	write_text(path, scen, 0644);
	struct ssh_opts so = guestenv_ssh_opts(&ge);
	char *ssh = strprintf("[ssh]\nuser = root\nport = %d\nidentity = %s\nknown_hosts = %s\n"
			      "host_key_policy = strict\ntimeout = 10s\n",
			      ge.sd.port, so.identity, ge.known_hosts);
	world_start_on(w, path, 10, 2, ssh);
	cr_assert_eq(guestenv_watch_start(&ge), 0, "boot watcher did not start");
	free(scen);
	free(path);
	free(ssh);
}

static void world_start_virtio(struct world *w)
{
	world_start_virtio_at(w, "127.0.1.230");
}

static const char *config_value(const char *key)
{
	static char buf[256];
	long st = 0;
	json_object *d = NULL, *data = NULL, *v = NULL;
	buf[0] = '\0';
	if (sim_api(&sim, "GET", "/nodes/pve1/qemu/190/config", NULL, &st, &d) == 0 && st == 200 &&
	    json_object_object_get_ex(d, "data", &data) &&
	    json_object_object_get_ex(data, key, &v) && v)
		snprintf(buf, sizeof buf, "%s", json_object_get_string(v));
	json_object_put(d);
	return buf[0] ? buf : NULL;
}

/* SIGKILL of the daemon while the switch (shutdown, config, start) runs;
 * a new daemon resumes the job: the guest ends converted or rolled back,
 * answers SSH, and the snapshot was never taken twice. */
Test(daemon, sigkill_during_a_virtio_switch_resumes_to_a_reachable_guest)
{
	static struct world w;
	world_start_virtio(&w);
	daemon_start(&w);
	char *outp = strprintf("%s/virtio.out", w.dir);
	const char *args[] = {"virtio", "g190", "--address", ge.sd.addr, NULL};
	client_pid = bg(&w, outp, args);
	wait_db(&w,
		"SELECT count(*) FROM jobs j WHERE id = 1 AND (state IN ('done', 'failed') OR EXISTS (SELECT 1 "
		"FROM steps WHERE job = 1 AND name = 'switch' AND state = 'running'))",
		NULL, 1, "the switch began, or the job ended");
	char *o = NULL;
	read_file(outp, &o, NULL);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM steps WHERE job = 1 AND name = 'switch' AND "
				"state = 'running'", NULL),
		     1, "the job ended before its switch:\n%s", o ? o : "");
	free(o);
	kill_daemon_with(&w, "1");

	daemon_start(&w);
	wait_db(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state IN ('done', 'failed')", NULL,
		1, "the resumed virtio job ended");
	wait_log(&w, "job 1 (virtio g190, running): resuming");
	bool done = db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'done'", NULL) == 1;
	if (done) {
		cr_expect_not_null(config_value("virtio0"), "converted: the disk is on virtio");
		cr_expect_null(config_value("ide0"), "converted: no IDE disk left");
	} else {
		cr_expect_not_null(config_value("ide0"), "rolled back: the disk is on IDE again");
	}
	cr_expect_leq(requests("POST", "/qemu/190/snapshot", 200), 1, "the snapshot was taken twice");
	/* reachable: the guest answers SSH as pvagent connects to it */
	struct ssh_opts so = guestenv_ssh_opts(&ge);
	struct ssh_session *ss = NULL;
	struct ssh_error se = {0};
	cr_expect_eq(ssh_connect(&so, &ss, &se), 0, "the guest does not answer SSH: %s",
		     se.msg ? se.msg : "?");
	ssh_close(ss);
	ssh_error_clear(&se);
	daemon_stop(&w);
	free(outp);
	cr_assert_eq(guestenv_watch_stop(&ge), 0);
	world_free(&w);
	guestenv_stop(&ge);
}

/* `image build` is a job the daemon runs: submitted, its ticket logged,
 * the job in the store done, the template VM made, the output the
 * in-process build's; params of anything but a build are refused. */
Test(daemon, image_build_through_the_daemon)
{
	static struct world w;
	world_start_on(&w, "tests/pvesim/scenarios/images.json", 100, 2, NULL);
	cr_assert_eq(httpserve_start(&hs), 0);
	char *cmd = strprintf("cp -r templates/images '%s/' && chmod -R go-w '%s'", w.tdir, w.tdir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	daemon_start(&w);
	char *s13 = httpserve_put_qcow2(&hs, "d13.qcow2", 2ULL << 30);
	char *s12 = httpserve_put_qcow2(&hs, "d12.qcow2", 2ULL << 30);
	cr_assert(s13 && s12);
	char *u13 = strprintf("%s/d13.qcow2", hs.base), *u12 = strprintf("%s/d12.qcow2", hs.base);
	char *d_out = NULL, *l_out = NULL;
	int d_rc = pv(&w, &d_out, "image", "build", "debian-13", "--url", u13, "--checksum", s13,
		      NULL);
	int l_rc = pv(&w, &l_out, "--local", "image", "build", "debian-12", "--url", u12,
		      "--checksum", s12, NULL);
	daemon_and_local(&w, d_rc, d_out, l_rc, l_out, "job 1 (image debian-13): done",
			 "debian-12");
	char *dn = normalised(d_out, "debian-13"), *ln = normalised(l_out, "debian-12");
	cr_assert_str_eq(dn, ln, "daemon:\n%s\nin-process:\n%s", d_out, l_out);
	cr_assert(strstr(d_out, "image debian-13: template VM debian-13-image"), "%s", d_out);
	free(dn);
	free(ln);
	cr_assert_eq(guests_named("debian-13-image"), 1);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE workflow = 'image' AND "
			    "subject = ?1 AND state = 'done'", "debian-13"), 1);
	cr_assert_eq(requests("POST", "/download-url", -1), 2);
	free(d_out);
	free(l_out);
	/* a second build through the daemon finds it (a job, done, nothing sent) */
	d_rc = pv(&w, &d_out, "image", "build", "debian-13", "--url", u13, "--checksum", s13, NULL);
	cr_assert_eq(d_rc, 0, "%s", d_out);
	cr_assert(strstr(d_out, "debian-13-image exists"), "%s", d_out);
	free(d_out);
	cr_assert_eq(requests("POST", "/download-url", -1), 2);
	/* only a build is an image job: params of anything else are refused */
	json_object *a = call(&w, "{\"id\":1,\"op\":\"submit\",\"workflow\":\"image\",\"jobs\":"
				  "[{\"subject\":\"debian-13\",\"params\":{\"image\":\"debian-13\","
				  "\"command\":\"rm\"}}]}");
	cr_assert_not(json_object_get_boolean(json_object_object_get(a, "ok")), "%s",
		      json_object_to_json_string(a));
	const char *msg = json_object_get_string(json_object_object_get(a, "message"));
	cr_assert(msg && strstr(msg, "\"command\" is not one of its params"), "%s",
		  json_object_to_json_string(a));
	json_object_put(a);
	free(s13);
	free(s12);
	free(u13);
	free(u12);
	httpserve_stop(&hs);
	daemon_stop(&w);
	world_free(&w);
}

/* ---- SIGKILL at every step boundary of inject, bench and virtio ------------------ *
 *
 * g190 (FreeBSD 9.0 behind sshd, IDE/e1000): `pvagent inject`, `bench` or
 * `virtio` stopped right after a step's end was committed (the engine's
 * PVAGENT_STOP_AFTER=WORKFLOW:STEP, SIGSTOP), then SIGKILLed: the CLI
 * alone, and `pvagent resume 1` finishes the job; or the daemon with its
 * job's process, and the daemon's next start-up finishes it. Each time:
 * the job done, the guest's files fully edited (never half), each
 * task-starting request taken once at most. */

static const char kill_tmpl[] =
	"[template]\nkind = qemu\nos = freebsd\nos_version = 9.0\n"
	"[source]\nclone = base\n[guest]\nuser = root\nport = %d\naddress = agent\n"
	"[rc.conf]\nsshd_enable = \"YES\"\npvagent_kill_test = \"YES\"\n"
	"[loader.conf]\nautoboot_delay = \"3\"\n";

static char *guest_file(const char *path)
{
	char *t = NULL;
	cr_assert_eq(guestenv_read(&ge, path, &t), 0, "cannot read %s in the guest", path);
	return t;
}

/* What a finished job of wf left: inject's files all edited, bench's
 * figures stored once, virtio's guest converted with one snapshot. */
static void assert_finished(const struct world *w, const char *wf, const char *rc_orig,
			    const char *what)
{
	cr_assert_eq(db_int(w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'done'", NULL),
		     1, "%s: job 1 did not end done", what);
	cr_assert_eq(db_int(w, "SELECT count(*) FROM jobs", NULL), 1, "%s: one job", what);
	if (strcmp(wf, "inject") == 0) {
		char *rc = guest_file("/etc/rc.conf"), *bak = guest_file("/etc/rc.conf.pvagent.bak");
		char *loader = guest_file("/boot/loader.conf");
		cr_expect(strstr(rc, "\nhostname=\"g190\"\n") && strstr(rc, "\npvagent_kill_test=\"YES\"\n"),
			  "%s: rc.conf half edited:\n%s", what, rc);
		cr_expect_str_eq(bak, rc_orig, "%s: the backup is not the original", what);
		cr_expect_str_eq(loader, "autoboot_delay=\"3\"\n", "%s", what);
		free(rc);
		free(bak);
		free(loader);
	} else if (strcmp(wf, "bench") == 0) {
		cr_expect_eq(db_int(w, "SELECT count(*) FROM bench", NULL), 1,
			     "%s: the figures were stored once", what);
	} else {
		cr_expect_not_null(config_value("virtio0"), "%s: the disk is on virtio", what);
		cr_expect_null(config_value("ide0"), "%s: an IDE disk is left", what);
		cr_expect_leq(requests("POST", "/qemu/190/snapshot", 200), 1, "%s: two snapshots", what);
		cr_expect_leq(requests("POST", "/qemu/190/status/shutdown", 200), 1,
			      "%s: two shutdowns", what);
		cr_expect_leq(requests("DELETE", "/qemu/190/snapshot/pvagent_virtio", 200), 1,
			      "%s: the snapshot deleted twice", what);
	}
}

/* The command of wf on g190 stopped after step, SIGKILLed and finished by
 * `pvagent resume 1` (daemon false) or by the daemon's next start-up. */
static void killed_at(const char *addr, const char *wf, const char *step, bool daemon)
{
	static struct world w;
	world_start_virtio_at(&w, addr);
	char *t = strprintf("%s/killvm.tmpl", w.tdir), *text = strprintf(kill_tmpl, ge.sd.port);
	write_text(t, text, 0644);
	free(t);
	free(text);
	char *rc_orig = guest_file("/etc/rc.conf");
	char *what = strprintf("%s killed after %s (%s)", wf, step, daemon ? "daemon" : "CLI");
	char *stop = strprintf("%s:%s", wf, step);
	cr_assert_eq(setenv("PVAGENT_STOP_AFTER", stop, 1), 0);
	if (daemon)
		daemon_start(&w); /* its job processes inherit the stop */
	const char *inject[] = {"inject", "g190", "-t", "killvm", "--address", addr, NULL};
	const char *bench[] = {"bench", "g190", "--address", addr, "--size", "8", NULL};
	const char *virtio[] = {"virtio", "g190", "--address", addr, NULL};
	const char *const *args = strcmp(wf, "inject") == 0 ? inject
				  : strcmp(wf, "bench") == 0 ? bench : virtio;
	char *outp = strprintf("%s/%s.out", w.dir, wf);
	client_pid = bg(&w, outp, args);
	cr_assert_eq(unsetenv("PVAGENT_STOP_AFTER"), 0);
	if (daemon) {
		wait_db(&w, "SELECT count(*) FROM steps WHERE job = 1 AND name = ?1 AND state = 'done'",
			step, 1, what);
		pid_t child = (pid_t)db_int(&w, "SELECT pid FROM jobs WHERE id = 1", NULL);
		cr_assert_gt(child, 0);
		cr_assert_eq(procstat_wait_state(child, 'T', 60000), 0, "%s: never stopped", what);
		kill_daemon_with(&w, "1");
		daemon_start(&w); /* its start-up resumes job 1 */
		wait_db(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state IN ('done', 'failed', "
			    "'needs-attention')", NULL, 1, what);
	} else {
		int st = 0;
		cr_assert_eq(waitpid(client_pid, &st, WUNTRACED), client_pid);
		char *o = NULL;
		read_file(outp, &o, NULL);
		cr_assert(WIFSTOPPED(st), "%s: pvagent ended (status %d) instead:\n%s", what, st,
			  o ? o : "");
		free(o);
		cr_assert_eq(kill(client_pid, SIGKILL), 0);
		cr_assert_eq(waitpid(client_pid, &st, 0), client_pid);
		client_pid = -1;
		cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'running'",
				    NULL), 1, "%s", what);
		char *out = NULL;
		int rc = pv(&w, &out, "resume", "1", NULL);
		cr_assert_eq(rc, 0, "%s: resume:\n%s", what, out);
		free(out);
	}
	assert_finished(&w, wf, rc_orig, what);
	if (daemon)
		daemon_stop(&w);
	free(rc_orig);
	free(what);
	free(stop);
	free(outp);
	cr_assert_eq(guestenv_watch_stop(&ge), 0);
	world_free(&w);
	guestenv_stop(&ge);
}

#define KILLED_AT(n, wf, step, ident)                                                          \
	Test(daemon, cli_##wf##_killed_after_##ident)                                          \
	{                                                                                      \
		killed_at("127.0.1." #n, #wf, step, false);                                    \
	}                                                                                      \
	Test(daemon, daemon_##wf##_killed_after_##ident)                                       \
	{                                                                                      \
		killed_at("127.0.2." #n, #wf, step, true);                                     \
	}

KILLED_AT(231, inject, "connect", connect)
KILLED_AT(232, inject, "detect", detect)
KILLED_AT(233, inject, "read", read)
KILLED_AT(234, inject, "plan", plan)
KILLED_AT(235, inject, "write", write)
KILLED_AT(236, bench, "connect", connect)
KILLED_AT(237, bench, "detect", detect)
KILLED_AT(238, bench, "measure", measure)
KILLED_AT(239, virtio, "preflight", preflight)
KILLED_AT(240, virtio, "kmod", kmod)
KILLED_AT(241, virtio, "snapshot", snapshot)
KILLED_AT(242, virtio, "prepare", prepare)
KILLED_AT(243, virtio, "switch", switch)
KILLED_AT(244, virtio, "verify", verify)
KILLED_AT(245, virtio, "finish", finish)

/* inject stopped after its write, /boot/loader.conf changed behind its
 * back, SIGKILLed: `pvagent resume 1` runs verify, which fails, and the
 * engine undoes write (the rollback): every file as it was, the job
 * failed, its result saying so. */
Test(daemon, inject_resumed_after_write_whose_verify_fails_is_rolled_back)
{
	static struct world w;
	const char *addr = "127.0.1.246";
	world_start_virtio_at(&w, addr);
	char *t = strprintf("%s/killvm.tmpl", w.tdir), *text = strprintf(kill_tmpl, ge.sd.port);
	write_text(t, text, 0644);
	free(t);
	free(text);
	char *before = guestenv_snapshot(&ge);
	cr_assert_not_null(before);
	cr_assert_eq(setenv("PVAGENT_STOP_AFTER", "inject:write", 1), 0);
	const char *args[] = {"inject", "g190", "-t", "killvm", "--address", addr, NULL};
	char *outp = strprintf("%s/inject.out", w.dir);
	client_pid = bg(&w, outp, args);
	cr_assert_eq(unsetenv("PVAGENT_STOP_AFTER"), 0);
	int st = 0;
	cr_assert_eq(waitpid(client_pid, &st, WUNTRACED), client_pid);
	cr_assert(WIFSTOPPED(st), "pvagent ended (status %d) before its write ended", st);
	cr_assert_eq(kill(client_pid, SIGKILL), 0);
	cr_assert_eq(waitpid(client_pid, &st, 0), client_pid);
	client_pid = -1;
	char *rc = guest_file("/etc/rc.conf");
	cr_assert(strstr(rc, "\npvagent_kill_test=\"YES\"\n"), "the write did not happen:\n%s", rc);
	free(rc);
	cr_assert_eq(guestenv_write(&ge, "/boot/loader.conf", "tampered\n", 0644), 0);
	char *out = NULL;
	cr_assert_eq(pv(&w, &out, "--json", "resume", "1", NULL), 1, "%s", out);
	cr_assert(strstr(out, "verify /boot/loader.conf: reads back different"), "%s", out);
	cr_assert(strstr(out, "every file written was restored"), "%s", out);
	free(out);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM jobs WHERE id = 1 AND state = 'failed'",
			    NULL), 1);
	cr_assert_eq(db_int(&w, "SELECT count(*) FROM steps WHERE job = 1 AND name = 'write' AND "
				"state = 'undone'", NULL), 1, "write was undone");
	char *after = guestenv_snapshot(&ge);
	cr_assert_str_eq(after, before, "the guest's files are not as they were");
	free(before);
	free(after);
	free(outp);
	cr_assert_eq(guestenv_watch_stop(&ge), 0);
	world_free(&w);
	guestenv_stop(&ge);
}
