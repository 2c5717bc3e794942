/* config.c - pvagentd's configuration (loaded strictly at start, the
 * templates checked by --check, reloaded on SIGHUP), its signals (a
 * signalfd: SIGCHLD reaps, SIGHUP reloads, SIGTERM/SIGINT stop) and
 * stopping (queued items dropped, running ones signalled, killed after
 * STOP_GRACE_S). */
#include "pvagentd_int.h"

#include "clock.h"
#include "log.h"
#include "tmpl.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* How long running steps may take to end after SIGTERM before their
 * processes are killed (their jobs are then recorded interrupted). */
#define STOP_GRACE_S 30.0

/* The configuration at start (-c, else conf_load's search): 0, or -1
 * after saying why on stderr (exit 2). */
int config_load(struct daemon *d)
{
	char *err = NULL;
	int lr = conf_load(d->conf_path, &d->conf, &err);
	if (lr < 0 || d->conf.windows_error) { /* the daemon runs the windows: strict */
		fprintf(stderr, "pvagentd: %s\n", lr < 0 ? (err ? err : "cannot load the configuration")
							   : d->conf.windows_error);
		free(err);
		if (lr == 0)
			conf_free(&d->conf);
		return -1;
	}
	return 0;
}

/* --check: the configuration and every template. */
int config_check(struct daemon *d)
{
	struct tmpl_info *list = NULL;
	size_t n = 0;
	char *err = NULL;
	if (tmpl_list((const char *const *)d->conf.paths.templates, &list, &n, &err) < 0) {
		fprintf(stderr, "pvagentd: %s\n", err ? err : "cannot list the templates");
		free(err);
		return 2;
	}
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		if (!list[i].tmpl) {
			fprintf(stderr, "pvagentd: %s\n", list[i].error ? list[i].error : list[i].path);
			bad++;
		}
	printf("%s: configuration ok; %zu templates, %zu invalid\n", d->conf.path, n, bad);
	tmpl_list_free(list, n);
	return bad ? 2 : 0;
}

static void reload(struct daemon *d)
{
	struct conf nc;
	char *err = NULL;
	if (conf_load(d->conf_path ? d->conf_path : d->conf.path, &nc, &err) < 0) {
		log_error("reload: %s; keeping the configuration loaded before",
			  err ? err : "cannot load the configuration");
		free(err);
		return;
	}
	if (nc.windows_error) { /* the daemon runs the windows: strict */
		log_error("reload: %s; keeping the configuration loaded before", nc.windows_error);
		conf_free(&nc);
		return;
	}
	if (strcmp(nc.paths.socket, d->conf.paths.socket) != 0 ||
	    strcmp(nc.paths.state, d->conf.paths.state) != 0)
		log_warn("reload: [paths] socket and state take effect at the next start");
	d->q.workers = nc.daemon.workers;
	d->q.node_jobs = nc.daemon.node_jobs;
	conf_free(&d->conf);
	d->conf = nc;
	if (windows_sync(d) < 0)
		log_error("reload: out of memory for the maintenance windows");
	log_info("reloaded %s: %u workers, %u per node", d->conf.path, d->q.workers,
		 d->q.node_jobs);
	schedule(d);
}

static void begin_stop(struct daemon *d, int sig)
{
	if (d->stopping)
		return;
	d->stopping = true;
	d->stop_deadline = pve_clock_now(NULL) + STOP_GRACE_S;
	log_info("%s: stopping (running steps end within %.0f s)", strsignal(sig), STOP_GRACE_S);
	ctl_listener_close(&d->lis);
	/* queued items never started: nothing of them is done */
	for (struct jobq_item *it = d->q.head, *next; it; it = next) {
		next = it->next;
		struct djob *j = it->data;
		if (j->started)
			continue;
		tell(j, "pvagentd is stopping: this command did not run; nothing of it was done");
		j->exited = true;
		j->code = 130;
		end_djob(d, j);
	}
	for (struct jobq_item *it = d->q.head; it; it = it->next) {
		struct djob *j = it->data;
		if (!j->exited && kill(j->proc.pid, SIGTERM) < 0)
			log_warn("ticket %llu: kill: %s", j->it->ticket, strerror(errno));
	}
}

void on_signal(struct daemon *d)
{
	struct signalfd_siginfo si;
	while (read(d->sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
		switch (si.ssi_signo) {
		case SIGCHLD: reap(d); break;
		case SIGHUP: reload(d); break;
		case SIGTERM:
		case SIGINT: begin_stop(d, (int)si.ssi_signo); break;
		default: break;
		}
	}
	reap(d);
	schedule(d);
}

void kill_overdue(struct daemon *d)
{
	for (struct jobq_item *it = d->q.head; it; it = it->next) {
		struct djob *j = it->data;
		if (j->started && !j->exited && !j->killed) {
			log_warn("ticket %llu (%s): still running after %.0f s: killed; its jobs "
				 "are recorded interrupted", j->it->ticket, j->what, STOP_GRACE_S);
			j->killed = true;
			kill(j->proc.pid, SIGKILL);
		}
	}
}
