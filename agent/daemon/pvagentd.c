/* pvagentd.c - the daemon's main: its options, startup (the
 * configuration, the store and its lock, resuming unfinished jobs, the
 * maintenance windows, the control socket), its logging, and the
 * teardown after the event loop. Jobs are queued with their limits
 * (jobq.h) and each runs as a pvagent child (jobproc.h) whose output and
 * events are passed to the clients that watch it; what each of its
 * files owns is listed in pvagentd_int.h. See pvagentd(8).
 *
 *   pvagentd [-c CONF] [-f] [--check] [-v]
 *
 * Exit: 0 after SIGTERM/SIGINT or a good --check; 1 cannot start (the
 * store is locked by another daemon, the socket); 2 configuration. */
#include "pvagentd_int.h"

#include "clock.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

/* ---- logging: one line per event, journald/syslog priority prefix ------ */

static bool use_syslog;

static void log_line(void *ctx, enum log_level lvl, const char *line)
{
	(void)ctx;
	int pri = lvl == LOGL_ERROR ? LOG_ERR : lvl == LOGL_WARN ? LOG_WARNING
		: lvl == LOGL_INFO ? LOG_INFO : LOG_DEBUG;
	if (use_syslog) {
		syslog(pri, "%s", line);
		return;
	}
	struct sbuf b = {0};
	if (sbuf_addf(&b, "<%d>%s\n", pri, line) == 0) {
		ssize_t w = write(STDERR_FILENO, b.s, b.len);
		(void)w; /* nowhere to report a failing stderr */
	}
	sbuf_free(&b);
}

/* The exclusive lock on the store: <state>/pvagentd.pid, flock'ed, with
 * the holder's pid in it. 0, or -1 after saying who holds it. */
static int lock_store(struct daemon *d)
{
	char *path = strprintf("%s/pvagentd.pid", d->conf.paths.state);
	if (!path) {
		log_error("out of memory");
		return -1;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		log_error("%s: %s", path, strerror(errno));
		free(path);
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		char buf[32] = "";
		ssize_t n = read(fd, buf, sizeof buf - 1);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (e == EWOULDBLOCK)
			log_error("another pvagentd (pid %s) holds the store %s/state.db (lock %s)",
				  *buf ? buf : "?", d->conf.paths.state, path);
		else
			log_error("%s: flock: %s", path, strerror(e));
		close(fd);
		free(path);
		return -1;
	}
	char pid[32];
	int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
		log_error("%s: %s", path, strerror(errno));
		close(fd);
		free(path);
		return -1;
	}
	free(path);
	d->lock_fd = fd;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: pvagentd [-c CONF] [-f] [--check] [-v]\n"
		   "  -c CONF   configuration (else $PVAGENT_CONF, ./conf/pvagent.conf,\n"
		   "            /etc/pvagent/pvagent.conf)\n"
		   "  -f        stay in the foreground, log to stderr (systemd)\n"
		   "  --check   validate the configuration and the templates, then exit\n"
		   "  -v        debug logging\n");
}

static int daemonize(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0)
		_exit(0);
	if (setsid() < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0)
		_exit(0);
	int null = open("/dev/null", O_RDWR);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		return -1;
	if (null > 2)
		close(null);
	return chdir("/");
}

/* The options into d: -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, struct daemon *d, bool *check_only, int *verbosity)
{
	static const struct option lo[] = {
		{"config", required_argument, NULL, 'c'}, {"foreground", no_argument, NULL, 'f'},
		{"check", no_argument, NULL, 'C'},       {"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},        {"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int opt;
	while ((opt = getopt_long(argc, argv, "c:fvh", lo, NULL)) != -1) {
		switch (opt) {
		case 'c': d->conf_path = optarg; break;
		case 'f': d->foreground = true; break;
		case 'C': *check_only = true; break;
		case 'v': (*verbosity)++; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("pvagentd %s\n", PVAGENT_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pvagentd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return -1;
}

/* fds 0-2 open, so no pipe or socket of ours can become one */
static void std_fds_open(void)
{
	for (;;) {
		int fd = open("/dev/null", O_RDWR);
		if (fd < 0 || fd > 2) {
			if (fd > 2)
				close(fd);
			break;
		}
	}
}

/* Without -f: in the background, logging to syslog. 0, or -1 (said). */
static int go_background(void)
{
	if (daemonize() < 0) {
		fprintf(stderr, "pvagentd: cannot go to the background: %s\n", strerror(errno));
		return -1;
	}
	openlog("pvagentd", LOG_PID, LOG_DAEMON);
	use_syslog = true;
	return 0;
}

/* The state directory, its lock and state.db. 0, or -1 (said). */
static int open_store(struct daemon *d)
{
	char *db = store_path(d->conf.paths.state), *err = NULL;
	int rc = -1;
	if (!db)
		log_error("out of memory");
	else if (mkdir(d->conf.paths.state, 0750) < 0 && errno != EEXIST)
		log_error("%s: %s", d->conf.paths.state, strerror(errno));
	else if (lock_store(d) == 0 && (rc = store_open(db, &d->store, &err)) < 0)
		log_error("%s", err ? err : "cannot open the store");
	free(err);
	free(db);
	if (rc < 0)
		return -1;
	/* a small page cache: the daemon reads a job at a time (and prunes) */
	if (sqlite3_exec(store_db(d->store), "PRAGMA cache_size=-256", NULL, NULL, NULL) != SQLITE_OK)
		log_warn("%s: cannot set the page cache size", store_file(d->store));
	return 0;
}

/* Everything the loop needs, in order: the signals, the store, the
 * unfinished jobs queued again, the windows, the socket. 0, or -1
 * (said); daemon_free frees what was made either way. */
static int daemon_start(struct daemon *d)
{
	char *err = NULL;
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGCHLD);
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &sigs, NULL) < 0 ||
	    (d->sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		log_error("signalfd: %s", strerror(errno));
		return -1;
	}
	if (!(d->bin = jobproc_cli_path())) {
		log_error("out of memory");
		return -1;
	}
	if (open_store(d) < 0)
		return -1;
	jobq_init(&d->q, d->conf.daemon.workers, d->conf.daemon.node_jobs);
	d->started_at = clock_unix_now();
	d->m.start_time = d->started_at;
	prune_jobs(d);
	resume_all(d);
	if (windows_sync(d) < 0) {
		log_error("out of memory for the maintenance windows");
		return -1;
	}
	if (ctl_listen(d->conf.paths.socket, d->conf.daemon.socket_group, &d->lis, &err) < 0) {
		log_error("control socket: %s", err ? err : "cannot listen");
		free(err);
		return -1;
	}
	log_info("pvagentd %s ready: pid %ld, socket %s, store %s, %u workers (%u per node), "
		 "jobs run by %s", PVAGENT_VERSION, (long)getpid(), d->lis.path, store_file(d->store),
		 d->q.workers, d->q.node_jobs, d->bin);
	return 0;
}

static void daemon_free(struct daemon *d)
{
	while (d->conns)
		conn_drop(d, d->conns);
	for (struct jobq_item *it = d->q.head; it; it = it->next)
		djob_free(it->data);
	jobq_free(&d->q);
	ctl_listener_close(&d->lis);
	store_close(d->store);
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	if (d->sig_fd >= 0)
		close(d->sig_fd);
	free(d->bin);
	metrics_free(&d->m);
	for (size_t i = 0; i < d->n_win; i++)
		free(d->win[i].name);
	free(d->win);
	conf_free(&d->conf);
	log_set_sink(NULL, NULL);
	log_secret_clear();
}

int main(int argc, char **argv)
{
	struct daemon d = {.lock_fd = -1, .sig_fd = -1, .lis.fd = -1};
	bool check_only = false;
	int verbosity = 0;
	int rc = parse_args(argc, argv, &d, &check_only, &verbosity);
	if (rc >= 0)
		return rc;
	std_fds_open();
	log_set_ident("pvagentd");
	log_set_level(log_level_from_verbosity(verbosity));
	if (config_load(&d) < 0)
		return 2;
	if (check_only) {
		rc = config_check(&d);
	} else if (!d.foreground && go_background() < 0) {
		rc = 1;
	} else {
		log_set_sink(log_line, NULL);
		rc = daemon_start(&d) < 0 ? 1 : daemon_loop(&d);
		if (rc == 0)
			log_info("stopped");
	}
	daemon_free(&d);
	return rc;
}
