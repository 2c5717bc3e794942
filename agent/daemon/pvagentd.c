/* pvagentd.c - the daemon: startup (configuration, the store and its
 * lock, resuming unfinished jobs, the control socket), the one event loop
 * (signals through a signalfd, the socket, the jobs' pipes; poll with no
 * timeout but the next maintenance window or the daily pruning of
 * finished jobs, so an idle daemon does not wake), the connection limit, the
 * requests of the control protocol (ctl.h), and stopping. Jobs are
 * queued with their limits (jobq.h) and each runs as a pvagent child
 * (jobproc.h) whose output and events are passed to the clients that
 * watch it. See pvagentd(8).
 *
 *   pvagentd [-c CONF] [-f] [--check] [-v]
 *
 * Exit: 0 after SIGTERM/SIGINT or a good --check; 1 cannot start (the
 * store is locked by another daemon, the socket); 2 configuration. */
#include "clock.h"
#include "conf.h"
#include "ctl.h"
#include "ctl_server.h"
#include "jobproc.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "jobq.h"
#include "store.h"
#include "submit_check.h"
#include "wf_params.h"
#include "tmpl.h"
#include "util.h"
#include "window.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

/* How long running steps may take to end after SIGTERM before their
 * processes are killed (their jobs are then recorded interrupted). */
#define STOP_GRACE_S 30.0
/* How often finished jobs beyond [daemon] keep_jobs/keep_jobs_max are
 * pruned (and at start). */
#define PRUNE_EVERY_S 86400.0

struct dconn {
	struct ctl_conn c;
	bool counted;                /* against [daemon] max_clients */
	struct dconn *next;
};

/* A message that may come in a flood (a peer's connections, the fd
 * limit): said at once, then at most once per LOG_EVERY_S with how many
 * times it came meanwhile. */
#define LOG_EVERY_S 60.0
struct lograte {
	double next;                 /* monotonic: when it may be said again */
	unsigned long held;          /* times it came since it was said */
};

struct watcher {
	struct dconn *conn;
	json_object *id;     /* the request's id */
};

/* One job the daemon runs (a queue item's data): its child runs
 * `pvagent resume ID`, never a command line a peer gave. A submitted job
 * is stored when it starts, so that each submission is a request of its
 * own, taken in order: its child, `pvagent submitted WF SUBJECT` with
 * the params on its stdin, stores it (job_submit), says so first of all
 * (a "stored" event with its ID), then runs it as resume does. */
struct djob {
	struct jobq_item *it;
	char *what;                  /* "up web1" for messages */
	char *subject;
	json_object *params;         /* submitted: for its child to store */
	bool json, tty;
	int columns;           /* the client terminal's width (tty), or 0 */
	int verbosity;
	long long resume_id;         /* the job (0: not stored yet) */
	struct jobproc proc;
	bool started, exited, cancel, killed;
	bool refused;                /* its child stored a job another item has:
					killed, its output and events dropped */
	int code;                    /* exit code once exited */
	struct ctl_lines evin;
	long long *jobs;             /* store jobs its events named */
	size_t n_jobs;
	char *workflow;              /* from its events */
	struct watcher *w;
	size_t n_w;
	double queued_at, started_at;
};

struct daemon {
	const char *conf_path;
	struct conf conf;
	struct store *store;
	int lock_fd;
	struct ctl_listener lis;
	struct jobq q;
	struct dconn *conns;
	unsigned n_clients;          /* connections counted against max_clients */
	bool accept_paused;          /* at the fd limit: until an fd closes */
	struct lograte log_refused, log_busy, log_accept;
	int sig_fd;
	double started_at;           /* unix */
	bool stopping;
	double stop_deadline;        /* monotonic */
	double next_prune;           /* monotonic */
	char *bin;
	struct metrics m;
	bool foreground;
	/* per [window] of conf: the occurrence drained (its start) and, until
	 * its undrain is queued, its end */
	struct dwin {
		char *name;
		time_t drained, end;
	} *win;
	size_t n_win;
};

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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

/* May a message of r be said now? Then *held: the times it came unsaid
 * since it was last said. */
static bool say_now(struct lograte *r, unsigned long *held)
{
	double now = mono_now();
	if (now < r->next) {
		r->held++;
		return false;
	}
	*held = r->held;
	r->held = 0;
	r->next = now + LOG_EVERY_S;
	return true;
}

/* ---- jobs -------------------------------------------------------------- */

static void djob_free(struct djob *j)
{
	free(j->what);
	free(j->subject);
	json_object_put(j->params);
	jobproc_close(&j->proc);
	ctl_lines_free(&j->evin);
	free(j->jobs);
	free(j->workflow);
	for (size_t i = 0; i < j->n_w; i++)
		json_object_put(j->w[i].id);
	free(j->w);
	free(j);
}

static bool djob_has(const struct djob *j, long long id)
{
	if (j->resume_id == id)
		return true;
	for (size_t i = 0; i < j->n_jobs; i++)
		if (j->jobs[i] == id)
			return true;
	return false;
}

/* Remember a store job of j. 0 or -1 (OOM, said). */
static int djob_add_job(struct djob *j, long long id)
{
	for (size_t i = 0; i < j->n_jobs; i++)
		if (j->jobs[i] == id)
			return 0;
	long long *nv = realloc(j->jobs, (j->n_jobs + 1) * sizeof *nv);
	if (!nv) {
		log_warn("ticket %llu: out of memory", j->it->ticket);
		return -1;
	}
	j->jobs = nv;
	nv[j->n_jobs++] = id;
	return 0;
}

static struct djob *find_by_job(struct daemon *d, long long id)
{
	for (struct jobq_item *it = d->q.head; it; it = it->next)
		if (djob_has(it->data, id))
			return it->data;
	return NULL;
}

/* Send o (an object; "id" set per watcher) to everyone watching j. */
static void broadcast(struct djob *j, json_object *o)
{
	for (size_t i = 0; i < j->n_w; i++) {
		if (j->w[i].id)
			json_object_object_add(o, "id", json_object_get(j->w[i].id));
		else
			json_object_object_del(o, "id");
		ctl_conn_send(&j->w[i].conn->c, o);
	}
}

static json_object *daemon_event(const struct djob *j, const char *kind)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "event", json_object_new_string(kind));
	json_object_object_add(o, "ticket", json_object_new_int64((int64_t)j->it->ticket));
	return o;
}

static int add_watcher(struct djob *j, struct dconn *c, json_object *id)
{
	struct watcher *nw = realloc(j->w, (j->n_w + 1) * sizeof *nw);
	if (!nw)
		return -1;
	j->w = nw;
	nw[j->n_w++] = (struct watcher){c, id ? json_object_get(id) : NULL};
	return 0;
}

static json_object *djob_json(const struct djob *j)
{
	json_object *o = json_object_new_object(), *g = json_object_new_array(),
		    *ids = json_object_new_array();
	for (size_t i = 0; i < j->it->n_guests; i++)
		json_object_array_add(g, json_object_new_string(j->it->guests[i]));
	for (size_t i = 0; i < j->n_jobs; i++)
		json_object_array_add(ids, json_object_new_int64(j->jobs[i]));
	json_object_object_add(o, "ticket", json_object_new_int64((int64_t)j->it->ticket));
	json_object_object_add(o, "workflow", json_object_new_string(j->workflow ? j->workflow
										    : "?"));
	json_object_object_add(o, "subject", json_object_new_string(j->subject));
	json_object_object_add(o, "guests", g);
	if (j->it->node)
		json_object_object_add(o, "node", json_object_new_string(j->it->node));
	json_object_object_add(o, "state", json_object_new_string(j->started ? "running"
									      : "queued"));
	json_object_object_add(o, "jobs", ids);
	if (j->started)
		json_object_object_add(o, "pid", json_object_new_int(j->proc.pid));
	double now = mono_now();
	json_object_object_add(o, "seconds", json_object_new_double(
						     now - (j->started ? j->started_at : j->queued_at)));
	return o;
}

/* Queue stored job id, or (id 0) a submitted one with params (taken), of
 * workflow wf on subject (its exclusion key); node (its limit) may be
 * NULL. */
static struct djob *djob_queue(struct daemon *d, long long id, const char *wf,
			       const char *subject, const char *node, json_object *params,
			       char **err)
{
	struct djob *j = calloc(1, sizeof *j);
	if (!j) {
		json_object_put(params);
		err_setf(err, "out of memory");
		return NULL;
	}
	j->proc.pid = -1;
	j->proc.out_fd = j->proc.err_fd = j->proc.ev_fd = -1;
	j->params = params;
	j->resume_id = id;
	j->what = id ? strprintf("%s %s (job %lld)", wf, subject, id)
		     : strprintf("%s %s", wf, subject);
	j->subject = strdup(subject);
	j->workflow = strdup(wf);
	const char *guests[] = {subject};
	if (id && (j->jobs = malloc(sizeof *j->jobs)))
		j->jobs[j->n_jobs++] = id;
	if (!j->what || !j->subject || !j->workflow || (id && !j->jobs) ||
	    !(j->it = jobq_add(&d->q, guests, 1, node, j))) {
		djob_free(j);
		err_setf(err, "out of memory");
		return NULL;
	}
	j->queued_at = mono_now();
	return j;
}

static void end_djob(struct daemon *d, struct djob *j);

/* Say text to j's watchers as an error of the daemon's (the client
 * prints it as it is: "pvagent: error: pvagentd: TEXT"), and log it. */
static void say_error(struct djob *j, const char *text)
{
	log_error("ticket %llu (%s): %s", j->it->ticket, j->what, text);
	json_object *ev = daemon_event(j, "output");
	char *line = strprintf("pvagent: error: pvagentd: %s\n", text);
	if (ev && line) {
		json_object_object_add(ev, "fd", json_object_new_int(2));
		json_object_object_add(ev, "data", json_object_new_string(line));
		broadcast(j, ev);
	}
	json_object_put(ev);
	free(line);
}

static void start_djob(struct daemon *d, struct djob *j)
{
	struct jobproc_opts o = {
		.bin = d->bin,
		.conf = d->conf.path,
		.json = j->json,
		.tty = j->tty,
		.columns = j->columns,
		.verbosity = j->verbosity,
	};
	char *err = NULL, id[32];
	j->started = true;
	j->started_at = mono_now();
	snprintf(id, sizeof id, "%lld", j->resume_id);
	const char *const resume[] = {"resume", id, NULL};
	const char *const submitted[] = {"submitted", j->workflow, j->subject, NULL};
	if (j->resume_id) {
		log_info("ticket %llu (%s) runs job %lld", j->it->ticket, j->what, j->resume_id);
	} else if (!(o.input = json_object_to_json_string_ext(j->params, JSON_C_TO_STRING_PLAIN))) {
		say_error(j, "out of memory");
		j->exited = true;
		j->code = 1;
		end_djob(d, j);
		return;
	}
	if (jobproc_start(&o, j->resume_id ? resume : submitted, &j->proc, &err) < 0) {
		log_error("ticket %llu (%s): %s", j->it->ticket, j->what, err ? err : "cannot start");
		free(err);
		j->exited = true;
		j->code = 1;
		end_djob(d, j);
		return;
	}
	log_info("ticket %llu (%s) started: pid %ld", j->it->ticket, j->what, (long)j->proc.pid);
	json_object *ev = daemon_event(j, "start");
	if (ev) {
		json_object_object_add(ev, "pid", json_object_new_int(j->proc.pid));
		broadcast(j, ev);
	}
	json_object_put(ev);
}

/* Start what may start now; tell the ones waiting for a guest why. */
static void schedule(struct daemon *d)
{
	if (d->stopping)
		return;
	struct jobq_item *it;
	while ((it = jobq_next(&d->q)))
		start_djob(d, it->data);
}

/* Tell j's watchers something as a "queued" event (the CLI shows it). */
static void tell(struct djob *j, const char *text)
{
	json_object *ev = daemon_event(j, "queued");
	if (ev) {
		json_object_object_add(ev, "text", json_object_new_string(text));
		broadcast(j, ev);
	}
	json_object_put(ev);
}

/* Say why a new item waits (a guest in use by an earlier one, or the
 * workers or its node are busy). */
static void tell_waiting(struct daemon *d, struct djob *j)
{
	if (j->started)
		return;
	const char *guest = NULL;
	const struct jobq_item *b = jobq_blocker(&d->q, j->it, &guest);
	char *text;
	if (b)
		text = strprintf("waiting: guest %s is in use by ticket %llu (%s)", guest, b->ticket,
				 ((const struct djob *)b->data)->what);
	else if (d->q.workers && d->q.n_running >= d->q.workers)
		text = strprintf("waiting: all %u workers are busy", d->q.workers);
	else
		text = strprintf("waiting: node %s runs %u jobs already", j->it->node ? j->it->node : "?",
				 d->q.node_jobs);
	if (!text)
		return;
	log_info("ticket %llu (%s) %s", j->it->ticket, j->what, text);
	tell(j, text);
	free(text);
}

/* Record the rest of a killed job's store jobs as interrupted. */
static void mark_interrupted(struct daemon *d, const struct djob *j, enum job_state to)
{
	for (size_t i = 0; i < j->n_jobs; i++) {
		struct store_job sj;
		struct store_job_lock *lk = NULL;
		long holder = 0;
		char *err = NULL;
		/* its lock first: a process that runs it now writes it itself */
		if (store_job_lock(d->store, j->jobs[i], &lk, &holder, &err) != 1) {
			if (err)
				log_warn("job %lld: %s", j->jobs[i], err);
			free(err);
			continue;
		}
		if (store_job_get(d->store, j->jobs[i], &sj, &err) != 1) {
			free(err);
			store_job_unlock(lk);
			continue;
		}
		bool change = to == JOB_CANCELLED ? job_state_open(sj.state)
						  : sj.state == JOB_RUNNING;
		if (change) {
			sj.state = to;
			sj.pid = 0;
			if (to == JOB_CANCELLED)
				sj.ended = clock_unix_now();
			if (store_job_update(d->store, &sj, &err) < 0) {
				log_warn("job %lld: %s", sj.id, err ? err : "store");
				free(err);
			} else {
				log_info("job %lld recorded %s", sj.id, job_state_name(to));
			}
		}
		store_job_unlock(lk);
		store_job_free(&sj);
	}
}

static void write_metrics(struct daemon *d)
{
	if (!d->conf.daemon.metrics_file)
		return;
	char *err = NULL;
	if (metrics_write(&d->m, d->conf.daemon.metrics_file, &err) < 0) {
		log_warn("metrics: %s", err ? err : "cannot write");
		free(err);
	}
}

/* How each of j's store jobs ended, as the store says it (done, failed,
 * needs-attention, interrupted, cancelled): read once the process ended,
 * so that every commit of it is in. */
static void log_job_ends(struct daemon *d, const struct djob *j)
{
	for (size_t i = 0; i < j->n_jobs; i++) {
		struct store_job sj;
		char *err = NULL;
		if (store_job_get(d->store, j->jobs[i], &sj, &err) != 1) {
			log_warn("job %lld: %s", j->jobs[i], err ? err : "not in the store");
			free(err);
			continue;
		}
		log_info("job %lld (%s %s): %s", sj.id, sj.workflow, sj.subject,
			 job_state_name(sj.state));
		store_job_free(&sj);
	}
}

/* The job's process ended and its pipes are drained (or it never ran). */
static void end_djob(struct daemon *d, struct djob *j)
{
	if (j->killed)
		mark_interrupted(d, j, JOB_INTERRUPTED);
	if (j->cancel)
		mark_interrupted(d, j, JOB_CANCELLED);
	log_job_ends(d, j);
	log_info("ticket %llu (%s) ended: exit %d", j->it->ticket, j->what, j->code);
	json_object *ev = daemon_event(j, "exit");
	if (ev) {
		json_object *ids = json_object_new_array();
		for (size_t i = 0; i < j->n_jobs; i++)
			json_object_array_add(ids, json_object_new_int64(j->jobs[i]));
		json_object_object_add(ev, "code", json_object_new_int(j->code));
		json_object_object_add(ev, "jobs", ids);
		broadcast(j, ev);
	}
	json_object_put(ev);
	if (j->started && metrics_exit(&d->m, j->code) < 0)
		log_warn("metrics: out of memory");
	write_metrics(d);
	jobq_remove(&d->q, j->it);
	djob_free(j);
}

static void maybe_end(struct daemon *d, struct djob *j)
{
	if (j->exited && j->proc.out_fd < 0 && j->proc.err_fd < 0 && j->proc.ev_fd < 0)
		end_djob(d, j);
}

/* A submitted job's child stored it (job_submit: an unfinished one of
 * the same request is resumed) as job id, or (id 0) could not: error. */
static void on_stored(struct daemon *d, struct djob *j, long long id, const char *error)
{
	if (j->resume_id) {
		log_warn("ticket %llu: pid %ld says it stored a job twice", j->it->ticket,
			 (long)j->proc.pid);
		return;
	}
	if (id <= 0) {
		say_error(j, error ? error : "cannot store it");
		return;
	}
	if (find_by_job(d, id)) {
		char *text = strprintf("job %lld (%s) is in the daemon already: pvagent job %lld --follow",
				 id, j->what, id);
		say_error(j, text ? text : "out of memory");
		free(text);
		j->refused = true;
		if (kill(j->proc.pid, SIGKILL) < 0)
			log_warn("ticket %llu: kill %ld: %s", j->it->ticket, (long)j->proc.pid,
				 strerror(errno));
		return;
	}
	j->resume_id = id;
	log_info("ticket %llu (%s) runs job %lld", j->it->ticket, j->what, id);
	(void)djob_add_job(j, id); /* (out of memory: said; djob_has knows it still) */
}

/* One engine event line from the child (event.h JSON). */
static void on_child_event(struct daemon *d, struct djob *j, const char *line, size_t len)
{
	if (j->refused)
		return;
	json_object *o = json_tokener_parse(line);
	(void)len;
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		log_warn("ticket %llu: an event that is not JSON from pid %ld", j->it->ticket,
			 (long)j->proc.pid);
		return;
	}
	const char *kind = json_str(o, "event"), *wf = json_str(o, "workflow");
	if (kind && strcmp(kind, "stats") == 0) {
		/* the child's PVE request counts, for the metrics only */
		const char *keys[] = {"requests", "retries"};
		for (int k = 0; k < 2; k++) {
			json_object *m = json_object_object_get(o, keys[k]);
			if (!m || !json_object_is_type(m, json_type_object))
				continue;
			json_object_object_foreach(m, name, val) {
				double n = json_object_get_double(val);
				if ((k ? metrics_retries(&d->m, name, n) : metrics_requests(&d->m, name, n)) < 0)
					log_warn("metrics: out of memory");
			}
		}
		json_object_put(o);
		return;
	}
	long long id = 0;
	if (kind && strcmp(kind, "stored") == 0) {
		on_stored(d, j, json_int(o, "job", &id) ? id : 0, json_str(o, "error"));
		json_object_put(o);
		return;
	}
	if (json_int(o, "job", &id) && id > 0)
		djob_add_job(j, id);
	wf = wf ? wf : j->workflow;
	if (kind && strcmp(kind, "step") == 0) {
		json_object *s;
		double secs = json_object_object_get_ex(o, "seconds", &s) ? json_object_get_double(s)
									   : 0;
		if (metrics_step(&d->m, wf, json_str(o, "step"), secs) < 0)
			log_warn("metrics: out of memory");
	} else if (kind && strcmp(kind, "done") == 0) {
		if (metrics_job(&d->m, wf, json_str(o, "text")) < 0)
			log_warn("metrics: out of memory");
	}
	json_object_object_add(o, "ticket", json_object_new_int64((int64_t)j->it->ticket));
	broadcast(j, o);
	json_object_put(o);
}

/* Data on one of the child's pipes. */
static void on_child_fd(struct daemon *d, struct djob *j, int *fd)
{
	char buf[65536];
	ssize_t n = read(*fd, buf, sizeof buf);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close(*fd);
		*fd = -1;
		d->accept_paused = false;
		maybe_end(d, j);
		return;
	}
	if (fd == &j->proc.ev_fd) {
		if (ctl_lines_feed(&j->evin, buf, (size_t)n) < 0) {
			log_warn("ticket %llu: out of memory reading events", j->it->ticket);
			return;
		}
		char *line;
		size_t len;
		int r;
		while ((r = ctl_lines_next(&j->evin, &line, &len)) != 0)
			if (r > 0)
				on_child_event(d, j, line, len);
		return;
	}
	json_object *o = j->refused ? NULL : daemon_event(j, "output");
	if (!o)
		return;
	json_object_object_add(o, "fd", json_object_new_int(fd == &j->proc.out_fd ? 1 : 2));
	json_object_object_add(o, "data", json_object_new_string_len(buf, (int)n));
	broadcast(j, o);
	json_object_put(o);
}

static void reap(struct daemon *d)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			return;
		for (struct jobq_item *it = d->q.head; it; it = it->next) {
			struct djob *j = it->data;
			if (!j->started || j->exited || j->proc.pid != pid)
				continue;
			j->exited = true;
			j->code = j->refused ? 1 : WIFEXITED(st) ? WEXITSTATUS(st)
							       : 128 + WTERMSIG(st);
			maybe_end(d, j);
			break;
		}
	}
}

/* ---- requests ----------------------------------------------------------------- */

static void answer(struct dconn *c, json_object *o)
{
	if (o)
		ctl_conn_send(&c->c, o);
	json_object_put(o);
}

static bool get_bool(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && json_object_get_boolean(v);
}

/* The rendering a client asked for, given to its jobs' children. */
static void djob_client_opts(struct djob *j, json_object *req)
{
	j->json = get_bool(req, "json");
	j->tty = get_bool(req, "tty");
	long long v = 0;
	if (j->tty && json_int(req, "columns", &v) && v >= 20 && v <= 1000)
		j->columns = (int)v;
	if (json_int(req, "verbosity", &v))
		j->verbosity = v < -3 ? -3 : v > 3 ? 3 : (int)v;
}

/* Queue job jid (0: params, taken) for c's request (watched by c). NULL:
 * said. */
static struct djob *queue_for(struct daemon *d, struct dconn *c, json_object *req,
			      json_object *id, long long jid, const char *wf, const char *subject,
			      const char *node, json_object *params)
{
	char *err = NULL;
	struct djob *j = djob_queue(d, jid, wf, subject, node, params, &err);
	if (!j) {
		answer(c, ctl_error(id, "internal", "%s", err ? err : "out of memory"));
		free(err);
		return NULL;
	}
	djob_client_opts(j, req);
	if (add_watcher(j, c, id) < 0)
		log_warn("ticket %llu: out of memory: nobody watches it", j->it->ticket);
	log_info("uid %u: %s queued as ticket %llu", (unsigned)c->c.uid, j->what, j->it->ticket);
	return j;
}

/* The answer to a submit or resume: its tickets and jobs. */
static void answer_queued(struct daemon *d, struct dconn *c, json_object *id,
			  struct djob *const *q, size_t n)
{
	json_object *ok = ctl_ok(id), *t = json_object_new_array();
	for (size_t i = 0; i < n && t; i++)
		json_object_array_add(t, json_object_new_int64((int64_t)q[i]->it->ticket));
	if (ok && n) /* (one ticket: "ticket", as before) */
		json_object_object_add(ok, "ticket", json_object_new_int64((int64_t)q[0]->it->ticket));
	if (ok)
		json_object_object_add(ok, "tickets", t);
	else
		json_object_put(t);
	answer(c, ok);
	schedule(d);
	for (size_t i = 0; i < n; i++)
		tell_waiting(d, q[i]);
}

/* resume: a stored job by its ID. */
static void req_resume(struct daemon *d, struct dconn *c, json_object *req, json_object *id)
{
	long long jid = 0;
	if (!json_int(req, "job", &jid) || jid <= 0) {
		answer(c, ctl_error(id, "bad_request", "resume: \"job\" (a job ID) is missing"));
		return;
	}
	struct store_job sj;
	char *err = NULL;
	if (store_job_get(d->store, jid, &sj, &err) != 1) {
		answer(c, ctl_error(id, "not_found", "no job %lld%s%s", jid, err ? ": " : "",
				    err ? err : ""));
		free(err);
		return;
	}
	if (find_by_job(d, jid))
		answer(c, ctl_error(id, "busy", "job %lld is in the daemon already: pvagent job %lld "
				    "--follow", jid, jid));
	else if (!job_state_open(sj.state))
		answer(c, ctl_error(id, "bad_request", "job %lld is %s: nothing to resume", jid,
				    job_state_name(sj.state)));
	else {
		struct djob *j = queue_for(d, c, req, id, jid, sj.workflow, sj.subject, NULL, NULL);
		if (j)
			answer_queued(d, c, id, &j, 1);
	}
	store_job_free(&sj);
}

/* The most jobs one submit makes (up NAME... of that many). */
#define SUBMIT_MAX_JOBS 256

/* submit: {"workflow": W, "jobs": [{"subject": S, "params": P}...]}.
 * Each job's params are checked for the peer (submit_check.h) and
 * queued; when it starts, its child stores and runs it. Nothing of the
 * peer's but the params reaches the child. */
static void req_submit(struct daemon *d, struct dconn *c, json_object *req, json_object *id)
{
	const char *wfname = json_str(req, "workflow");
	const struct job_params_decl *decl = wf_params_find(wfname);
	json_object *jobs = json_object_object_get(req, "jobs");
	size_t n = jobs && json_object_is_type(jobs, json_type_array)
			   ? json_object_array_length(jobs) : 0;
	if (!submit_workflow_known(wfname) || n == 0 || n > SUBMIT_MAX_JOBS) {
		answer(c, ctl_error(id, "bad_request", "submit: \"workflow\" (up, down, inject, "
					"virtio, bench, migrate, drain, undrain) and \"jobs\" (1 to "
					"%d of {\"subject\", \"params\"}) are needed", SUBMIT_MAX_JOBS));
		return;
	}
	const struct submit_peer peer = {c->c.uid, c->c.gid};
	json_object **params = calloc(n, sizeof *params);
	struct djob **q = calloc(n, sizeof *q);
	char *why = NULL;
	int rc = params && q ? 0 : -1;
	if (rc < 0)
		err_setf(&why, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		json_object *o = json_object_array_get_idx(jobs, i), *p = NULL;
		/* a copy: the check completes it (up's template_path, pubkey) */
		if (json_object_object_get_ex(o, "params", &p) &&
		    json_object_deep_copy(p, &params[i], NULL) < 0) {
			err_setf(&why, "out of memory");
			rc = -1;
		} else {
			rc = submit_check(wfname, json_str(o, "subject"), params[i], &peer, &d->conf,
					  &why);
		}
		if (rc < 0)
			log_warn("uid %u: %.64s refused: %s", (unsigned)c->c.uid, wfname,
				 why ? why : "out of memory");
	}
	if (rc < 0) {
		answer(c, ctl_error(id, "refused", "%s", why ? why : "out of memory"));
		goto out;
	}
	size_t nq = 0;
	for (; nq < n; nq++) {
		const char *subject = json_str(json_object_array_get_idx(jobs, nq), "subject");
		/* the node its job runs on, for the per-node limit: the param
		 * its workflow declares (up's "node") */
		const char *node = decl && decl->queue_node ? json_str(params[nq], decl->queue_node)
							    : NULL;
		q[nq] = queue_for(d, c, req, id, 0, wfname, subject, node, params[nq]);
		params[nq] = NULL;
		if (!q[nq])
			break;
	}
	if (nq == n)
		answer_queued(d, c, id, q, nq);
	else /* what was queued runs, unwatched */
		schedule(d);
out:
	free(why);
	for (size_t i = 0; params && i < n; i++)
		json_object_put(params[i]);
	free(params);
	free(q);
}

/* The item a request names by "job" (a store job) or "ticket". */
static struct djob *named(struct daemon *d, json_object *req, long long *jid)
{
	long long t = 0;
	*jid = 0;
	if (json_int(req, "ticket", &t) && t > 0) {
		struct jobq_item *it = jobq_find(&d->q, (unsigned long long)t);
		return it ? it->data : NULL;
	}
	if (json_int(req, "job", jid) && *jid > 0)
		return find_by_job(d, *jid);
	return NULL;
}

static void req_watch(struct daemon *d, struct dconn *c, json_object *req, json_object *id,
		      enum ctl_op op)
{
	long long jid;
	struct djob *j = named(d, req, &jid);
	if (!j) {
		answer(c, ctl_error(id, "not_found", "%s in the daemon (it may have ended: see "
					"pvagent job ID)", jid ? "no such job" : "no such ticket"));
		return;
	}
	if (op == CTL_OP_WATCH && add_watcher(j, c, id) < 0) {
		answer(c, ctl_error(id, "internal", "out of memory"));
		return;
	}
	json_object *ok = ctl_ok(id);
	if (ok)
		json_object_object_add(ok, "job", djob_json(j));
	answer(c, ok);
}

static void req_cancel(struct daemon *d, struct dconn *c, json_object *req, json_object *id)
{
	long long jid;
	struct djob *j = named(d, req, &jid);
	if (!j) {
		answer(c, ctl_error(id, "not_found", "not in the daemon"));
		return;
	}
	json_object *ok = ctl_ok(id);
	if (ok)
		json_object_object_add(ok, "ticket", json_object_new_int64((int64_t)j->it->ticket));
	if (!j->started) {
		if (ok)
			json_object_object_add(ok, "state", json_object_new_string("removed"));
		answer(c, ok);
		log_info("ticket %llu (%s) cancelled before it started", j->it->ticket, j->what);
		j->cancel = true; /* a resume's job is recorded cancelled */
		tell(j, "cancelled before it started");
		j->exited = true;
		j->code = 1;
		end_djob(d, j);
		schedule(d);
		return;
	}
	j->cancel = true;
	/* SIGUSR1: pvagent's cancel (it stops as for SIGTERM and says so) */
	if (!j->exited && kill(j->proc.pid, SIGUSR1) < 0)
		log_warn("ticket %llu: kill %ld: %s", j->it->ticket, (long)j->proc.pid,
			 strerror(errno));
	if (ok)
		json_object_object_add(ok, "state", json_object_new_string("stopping"));
	answer(c, ok);
	log_info("ticket %llu (%s): cancel asked; it stops after its current step",
		 j->it->ticket, j->what);
}

static void req_list(struct daemon *d, struct dconn *c, json_object *id, enum ctl_op op)
{
	json_object *ok = ctl_ok(id), *run = json_object_new_array(), *qd = json_object_new_array();
	for (struct jobq_item *it = d->q.head; it; it = it->next)
		json_object_array_add(it->running ? run : qd, djob_json(it->data));
	if (!ok) {
		json_object_put(run);
		json_object_put(qd);
		return;
	}
	if (op == CTL_OP_STATUS) {
		json_object *w = json_object_new_object();
		json_object_object_add(w, "busy", json_object_new_int64((int64_t)d->q.n_running));
		json_object_object_add(w, "total", json_object_new_int((int)d->q.workers));
		json_object_object_add(ok, "pid", json_object_new_int(getpid()));
		json_object_object_add(ok, "version", json_object_new_string(PVAGENT_VERSION));
		json_object_object_add(ok, "uptime",
				       json_object_new_double(clock_unix_now() - d->started_at));
		json_object_object_add(ok, "config", json_object_new_string(d->conf.path));
		json_object_object_add(ok, "store", json_object_new_string(store_file(d->store)));
		json_object_object_add(ok, "workers", w);
		json_object_object_add(ok, "node_jobs", json_object_new_int((int)d->q.node_jobs));
		json_object_object_add(ok, "queue", json_object_new_int64((int64_t)d->q.n_queued));
		json_object *win = json_object_new_array();
		for (size_t i = 0; i < d->conf.n_windows; i++) {
			const struct conf_window *cw = &d->conf.windows[i];
			json_object *x = json_object_new_object();
			json_object_object_add(x, "name", json_object_new_string(cw->name));
			json_object_object_add(x, "node", json_object_new_string(cw->node));
			if (cw->schedule)
				json_object_object_add(x, "schedule",
						       json_object_new_string(cw->schedule));
			json_object_object_add(x, "duration", json_object_new_int((int)cw->duration));
			time_t now = time(NULL), next = 0, end = 0;
			if (window_next(cw, now, &next, &end) == 0) {
				json_object_object_add(x, "next", json_object_new_int64((int64_t)next));
				json_object_object_add(x, "open", json_object_new_boolean(next <= now));
			}
			json_object_array_add(win, x);
		}
		json_object_object_add(ok, "windows", win);
	}
	json_object_object_add(ok, "running", run);
	json_object_object_add(ok, "queued", qd);
	answer(c, ok);
}

static void on_request(struct daemon *d, struct dconn *c, const char *line, size_t len)
{
	json_object *req = NULL;
	enum ctl_op op;
	const char *code;
	char *msg = NULL;
	if (ctl_request_parse(line, len, &req, &op, &code, &msg) < 0) {
		json_object *id = NULL;
		if (req)
			json_object_object_get_ex(req, "id", &id);
		log_debug("uid %u: %s: %s", (unsigned)c->c.uid, code, msg ? msg : "");
		answer(c, ctl_error(id, code, "%s", msg ? msg : "bad request"));
		free(msg);
		json_object_put(req);
		return;
	}
	json_object *id = NULL;
	json_object_object_get_ex(req, "id", &id);
	switch (op) {
	case CTL_OP_SUBMIT:
	case CTL_OP_RESUME:
		if (d->stopping)
			answer(c, ctl_error(id, "stopping", "the daemon is stopping; run it again "
					    "later"));
		else if (op == CTL_OP_SUBMIT)
			req_submit(d, c, req, id);
		else
			req_resume(d, c, req, id);
		break;
	case CTL_OP_WATCH:
	case CTL_OP_JOB: req_watch(d, c, req, id, op); break;
	case CTL_OP_CANCEL: req_cancel(d, c, req, id); break;
	case CTL_OP_JOBS:
	case CTL_OP_STATUS: req_list(d, c, id, op); break;
	}
	json_object_put(req);
}

static void conn_drop(struct daemon *d, struct dconn *c)
{
	for (struct jobq_item *it = d->q.head; it; it = it->next) {
		struct djob *j = it->data;
		for (size_t i = 0; i < j->n_w;) {
			if (j->w[i].conn == c) {
				json_object_put(j->w[i].id);
				j->w[i] = j->w[--j->n_w];
			} else {
				i++;
			}
		}
	}
	for (struct dconn **p = &d->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	ctl_conn_close(&c->c);
	d->n_clients -= c->counted;
	d->accept_paused = false;
	free(c);
}

/* Does a command stream to c? */
static bool conn_watching(struct daemon *d, const struct dconn *c)
{
	for (struct jobq_item *it = d->q.head; it; it = it->next) {
		const struct djob *j = it->data;
		for (size_t i = 0; i < j->n_w; i++)
			if (j->w[i].conn == c)
				return true;
	}
	return false;
}

/* Drop the connections that are gone, or have sent their last request
 * and have nothing more to get. */
static void sweep_conns(struct daemon *d)
{
	for (struct dconn *c = d->conns, *next; c; c = next) {
		next = c->next;
		if (c->c.eof || (c->c.rd_eof && !ctl_conn_pending(&c->c) && !conn_watching(d, c)))
			conn_drop(d, c);
	}
}

static void on_conn_readable(struct daemon *d, struct dconn *c)
{
	if (!c->c.rd_eof)
		ctl_conn_read(&c->c);
	char *line;
	size_t len;
	int r;
	while (!c->c.eof && (r = ctl_lines_next(&c->c.in, &line, &len)) != 0) {
		if (r < 0) {
			log_info("uid %u: a request line longer than %zu bytes", (unsigned)c->c.uid,
				 CTL_MAX_LINE);
			answer(c, ctl_error(NULL, "too_long", "a request line is at most %zu bytes",
					    CTL_MAX_LINE));
			continue;
		}
		if (len == 0)
			continue;
		on_request(d, c, line, len);
	}
}

static void on_accept(struct daemon *d)
{
	for (int i = 0; i < 64; i++) {
		struct dconn *c = calloc(1, sizeof *c);
		if (!c) {
			log_warn("out of memory accepting a connection");
			return;
		}
		char *who = NULL;
		int r = ctl_accept(&d->lis, &c->c, &who);
		int e = errno;
		unsigned long held = 0;
		if (r <= 0) {
			if (r < 0 && who) {
				if (say_now(&d->log_refused, &held))
					log_warn("control socket: refused %s (and %lu more since this "
						 "was last said)", who, held);
			} else if (r < 0 && (e == EMFILE || e == ENFILE)) {
				/* the connection waits in the backlog; polling the
				 * listener now would only fail again */
				d->accept_paused = true;
				if (say_now(&d->log_accept, &held))
					log_error("control socket: accept: %s: not accepting until a "
						  "connection closes (and %lu more since this was last "
						  "said)", strerror(e), held);
			} else if (r < 0 && say_now(&d->log_accept, &held)) {
				log_warn("control socket: accept: %s (and %lu more since this was "
					 "last said)", strerror(e), held);
			}
			free(who);
			free(c);
			return;
		}
		c->counted = c->c.uid != 0 && c->c.uid != geteuid();
		if (c->counted && d->n_clients >= d->conf.daemon.max_clients) {
			if (say_now(&d->log_busy, &held))
				log_warn("control socket: uid %u turned away: %u clients connected "
					 "([daemon] max_clients; and %lu more since this was last said)",
					 (unsigned)c->c.uid, d->n_clients, held);
			ctl_conn_turn_away(&c->c, ctl_error(NULL, "busy", "too many clients: at most "
							    "%u at once; try again later",
							    d->conf.daemon.max_clients));
			free(c);
			continue;
		}
		d->n_clients += c->counted;
		c->next = d->conns;
		d->conns = c;
	}
}

/* ---- maintenance windows ------------------------------------------------------------ */

/* The window state for d->conf's windows, kept by name across a reload
 * (a reload during an open window does not drain it again). */
static int windows_sync(struct daemon *d)
{
	struct dwin *nw = calloc(d->conf.n_windows ? d->conf.n_windows : 1, sizeof *nw);
	if (!nw)
		return -1;
	for (size_t i = 0; i < d->conf.n_windows; i++) {
		if (!(nw[i].name = strdup(d->conf.windows[i].name))) {
			for (size_t k = 0; k < i; k++)
				free(nw[k].name);
			free(nw);
			return -1;
		}
		for (size_t k = 0; k < d->n_win; k++)
			if (strcmp(d->win[k].name, nw[i].name) == 0) {
				nw[i].drained = d->win[k].drained;
				nw[i].end = d->win[k].end;
			}
	}
	for (size_t k = 0; k < d->n_win; k++)
		free(d->win[k].name);
	free(d->win);
	d->win = nw;
	d->n_win = d->conf.n_windows;
	return 0;
}

/* Queue the window's drain of its node (its end the deadline) or its
 * undrain as a job of the daemon's own; the node's name is its exclusion
 * key, so an undrain waits for the drain of its window to end. */
static void window_queue(struct daemon *d, const struct conf_window *w, bool undrain,
			 time_t end)
{
	const char *wf = undrain ? "undrain" : "drain";
	json_object *params = undrain ? window_undrain_params(&d->conf, w)
				      : window_drain_params(&d->conf, w, end);
	char *err = NULL;
	if (!params || !djob_queue(d, 0, wf, w->node, NULL, params, &err)) {
		log_error("window %s: cannot queue its %s: %s", w->name, wf,
			  err ? err : "out of memory");
		free(err);
		return;
	}
	log_info("window %s: %s %s queued", w->name, wf, w->node);
}

/* Queue what the windows ask for now: a drain when one opens (once per
 * occurrence), the undrain when it closes. The seconds until the next
 * such moment, or -1 when none is ahead. */
static double windows_tick(struct daemon *d)
{
	time_t now = time(NULL);
	double next = -1;
	for (size_t i = 0; i < d->n_win && i < d->conf.n_windows; i++) {
		const struct conf_window *w = &d->conf.windows[i];
		struct dwin *s = &d->win[i];
		if (s->end && now >= s->end) {
			window_queue(d, w, true, 0);
			s->end = 0;
		}
		time_t start, end;
		if (window_next(w, now, &start, &end) == 0) {
			if (start <= now && now < end && s->drained != start) {
				window_queue(d, w, false, end);
				s->drained = start;
				s->end = end;
			}
			time_t at = start > now ? start : end;
			if (next < 0 || (double)(at - now) < next)
				next = (double)(at - now);
		}
		if (s->end && (next < 0 || (double)(s->end - now) < next))
			next = (double)(s->end - now);
	}
	return next;
}

/* ---- configuration, signals, stopping ------------------------------------------- */

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
	d->stop_deadline = mono_now() + STOP_GRACE_S;
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

static void on_signal(struct daemon *d)
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

static void kill_overdue(struct daemon *d)
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

/* ---- the loop ---------------------------------------------------------------------- */

enum src { SRC_SIG, SRC_LISTEN, SRC_CONN, SRC_OUT, SRC_ERR, SRC_EV };

struct pollmap {
	struct pollfd *p;
	enum src *src;
	void **ptr;
	size_t n, cap;
};

static int pm_add(struct pollmap *m, int fd, short events, enum src s, void *ptr)
{
	if (m->n == m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 32;
		struct pollfd *np = realloc(m->p, nc * sizeof *np);
		if (np)
			m->p = np;
		enum src *ns = realloc(m->src, nc * sizeof *ns);
		if (ns)
			m->src = ns;
		void **nptr = realloc(m->ptr, nc * sizeof *nptr);
		if (nptr)
			m->ptr = nptr;
		if (!np || !ns || !nptr)
			return -1;
		m->cap = nc;
	}
	m->p[m->n] = (struct pollfd){.fd = fd, .events = events};
	m->src[m->n] = s;
	m->ptr[m->n] = ptr;
	m->n++;
	return 0;
}

static bool conn_alive(struct daemon *d, struct dconn *c)
{
	for (struct dconn *x = d->conns; x; x = x->next)
		if (x == c)
			return true;
	return false;
}

static bool djob_alive(struct daemon *d, struct djob *j)
{
	for (struct jobq_item *it = d->q.head; it; it = it->next)
		if (it->data == j)
			return true;
	return false;
}

static void prune_jobs(struct daemon *d);

static int run(struct daemon *d)
{
	struct pollmap m = {0};
	int rc = 0;
	for (;;) {
		if (d->stopping && !d->q.head)
			break;
		/* the windows' drains and undrains, queued before the jobs'
		 * pipes are polled */
		double due = d->stopping ? -1 : windows_tick(d);
		if (!d->stopping) {
			double now = mono_now();
			if (now >= d->next_prune)
				prune_jobs(d);
			double p = d->next_prune - now;
			if (due < 0 || p < due)
				due = p > 0 ? p : 0;
		}
		schedule(d);
		m.n = 0;
		bool oom = pm_add(&m, d->sig_fd, POLLIN, SRC_SIG, NULL) < 0;
		sweep_conns(d);
		for (struct dconn *c = d->conns; c; c = c->next)
			oom |= pm_add(&m, c->c.fd,
				      (short)((c->c.rd_eof ? 0 : POLLIN) |
					      (ctl_conn_pending(&c->c) ? POLLOUT : 0)),
				      SRC_CONN, c) < 0;
		for (struct jobq_item *it = d->q.head; it; it = it->next) {
			struct djob *j = it->data;
			if (j->proc.out_fd >= 0)
				oom |= pm_add(&m, j->proc.out_fd, POLLIN, SRC_OUT, j) < 0;
			if (j->proc.err_fd >= 0)
				oom |= pm_add(&m, j->proc.err_fd, POLLIN, SRC_ERR, j) < 0;
			if (j->proc.ev_fd >= 0)
				oom |= pm_add(&m, j->proc.ev_fd, POLLIN, SRC_EV, j) < 0;
		}
		/* the listener last: the connections that closed in the same
		 * wakeup are dropped before a new one is counted against
		 * [daemon] max_clients */
		if (!d->stopping && d->lis.fd >= 0 && !d->accept_paused)
			oom |= pm_add(&m, d->lis.fd, POLLIN, SRC_LISTEN, NULL) < 0;
		if (oom) {
			log_error("out of memory in the event loop");
			rc = 1;
			break;
		}
		/* nothing is due while idle: wait for an fd, or until a
		 * maintenance window opens or closes; stopping: until the
		 * grace period ends */
		int timeout = -1;
		if (d->stopping) {
			double left = d->stop_deadline - mono_now();
			timeout = left > 0 ? (int)(left * 1000) + 1 : 0;
		} else if (due >= 0) {
			timeout = due > 86400 ? 86400 * 1000 : (int)(due * 1000) + 1;
		}
		int pr = poll(m.p, m.n, timeout);
		if (pr < 0 && errno != EINTR) {
			log_error("poll: %s", strerror(errno));
			rc = 1;
			break;
		}
		if (d->stopping && mono_now() >= d->stop_deadline)
			kill_overdue(d);
		for (size_t i = 0; pr > 0 && i < m.n; i++) {
			if (!m.p[i].revents)
				continue;
			switch (m.src[i]) {
			case SRC_SIG: on_signal(d); break;
			case SRC_LISTEN:
				if (d->lis.fd >= 0)
					on_accept(d);
				break;
			case SRC_CONN: {
				struct dconn *c = m.ptr[i];
				if (!conn_alive(d, c))
					break;
				if (m.p[i].revents & POLLOUT)
					ctl_conn_flush(&c->c);
				if (m.p[i].revents & (POLLIN | POLLHUP | POLLERR))
					on_conn_readable(d, c);
				if ((m.p[i].revents & (POLLHUP | POLLERR)) && c->c.rd_eof)
					c->c.eof = true; /* both ends closed */
				if (c->c.eof)
					conn_drop(d, c);
				break;
			}
			case SRC_OUT:
			case SRC_ERR:
			case SRC_EV: {
				struct djob *j = m.ptr[i];
				if (!djob_alive(d, j))
					break;
				int *fd = m.src[i] == SRC_OUT ? &j->proc.out_fd
					: m.src[i] == SRC_ERR ? &j->proc.err_fd : &j->proc.ev_fd;
				if (*fd == m.p[i].fd)
					on_child_fd(d, j, fd);
				break;
			}
			}
		}
		schedule(d);
	}
	free(m.p);
	free(m.src);
	free(m.ptr);
	return rc;
}

/* ---- startup ------------------------------------------------------------------------ */

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

/* Is sj a migration of a drain (params "parent") that is itself
 * unfinished? Then the drain's resume resumes it. */
static bool parent_open(struct daemon *d, const struct store_job *sj)
{
	json_object *p = json_tokener_parse(sj->params ? sj->params : "{}");
	long long parent = 0;
	bool has = json_int(p, "parent", &parent) && parent > 0;
	json_object_put(p);
	if (!has)
		return false;
	struct store_job pj;
	char *err = NULL;
	int r = store_job_get(d->store, parent, &pj, &err);
	free(err);
	if (r != 1)
		return false;
	bool open = job_state_open(pj.state);
	store_job_free(&pj);
	return open;
}

/* Delete the finished jobs beyond [daemon] keep_jobs and keep_jobs_max. */
static void prune_jobs(struct daemon *d)
{
	size_t n = 0;
	char *err = NULL;
	double cutoff = clock_unix_now() - (double)d->conf.daemon.keep_jobs;
	if (store_jobs_prune(d->store, cutoff, d->conf.daemon.keep_jobs_max, &n, &err) < 0) {
		log_warn("pruning jobs: %s", err ? err : "store");
		free(err);
	} else if (n) {
		log_info("pruned %zu finished jobs (ended more than %u s ago, or beyond the newest "
			 "%u)", n, d->conf.daemon.keep_jobs, d->conf.daemon.keep_jobs_max);
	}
	d->next_prune = mono_now() + PRUNE_EVERY_S;
}

/* Queue every unfinished job of the store again (its resume re-attaches
 * to the PVE tasks it recorded). */
static void resume_all(struct daemon *d)
{
	struct store_job *v = NULL;
	size_t n = 0;
	char *err = NULL;
	if (store_jobs_unfinished(d->store, &v, &n, &err) < 0) {
		log_error("cannot read the jobs to resume: %s", err ? err : "store");
		free(err);
		return;
	}
	/* oldest first */
	for (size_t i = 0; i < n; i++) {
		const struct store_job *sj = &v[i];
		/* (a workflow this pvagent does not know: its resume says so) */
		long holder = 0;
		int free_now = store_job_resumable(d->store, sj, &holder, &err);
		if (free_now < 0) {
			log_warn("job %lld: %s", sj->id, err ? err : "store");
			free(err);
			err = NULL;
		}
		if (free_now <= 0) {
			if (holder)
				log_info("job %lld (%s %s) runs in process %ld: not resumed", sj->id,
					 sj->workflow, sj->subject, holder);
			continue;
		}
		if (parent_open(d, sj)) {
			log_info("job %lld (%s %s): its drain resumes it", sj->id, sj->workflow,
				 sj->subject);
			continue;
		}
		if (sj->state == JOB_NEEDS_ATTENTION) {
			log_info("job %lld (%s %s) needs attention: not resumed; 'pvagent resume "
				 "%lld' continues it", sj->id, sj->workflow, sj->subject, sj->id);
			continue;
		}
		if (!djob_queue(d, sj->id, sj->workflow, sj->subject, NULL, NULL, &err)) {
			log_error("job %lld: %s", sj->id, err ? err : "out of memory");
			free(err);
			err = NULL;
			continue;
		}
		log_info("job %lld (%s %s, %s): resuming", sj->id, sj->workflow, sj->subject,
			 job_state_name(sj->state));
	}
	store_jobs_free(v, n);
}

/* --check: the configuration and every template. */
static int check(struct daemon *d)
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

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"config", required_argument, NULL, 'c'}, {"foreground", no_argument, NULL, 'f'},
		{"check", no_argument, NULL, 'C'},       {"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},        {"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct daemon d = {.lock_fd = -1, .sig_fd = -1};
	d.lis.fd = -1;
	bool check_only = false;
	int verbosity = 0, opt;
	while ((opt = getopt_long(argc, argv, "c:fvh", lo, NULL)) != -1) {
		switch (opt) {
		case 'c': d.conf_path = optarg; break;
		case 'f': d.foreground = true; break;
		case 'C': check_only = true; break;
		case 'v': verbosity++; break;
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
	/* fds 0-2 open, so no pipe or socket of ours can become one */
	for (;;) {
		int fd = open("/dev/null", O_RDWR);
		if (fd < 0 || fd > 2) {
			if (fd > 2)
				close(fd);
			break;
		}
	}
	log_set_ident("pvagentd");
	log_set_level(log_level_from_verbosity(verbosity));
	char *err = NULL;
	int lr = conf_load(d.conf_path, &d.conf, &err);
	if (lr < 0 || d.conf.windows_error) { /* the daemon runs the windows: strict */
		fprintf(stderr, "pvagentd: %s\n", lr < 0 ? (err ? err : "cannot load the configuration")
							   : d.conf.windows_error);
		free(err);
		if (lr == 0)
			conf_free(&d.conf);
		return 2;
	}
	if (check_only) {
		int rc = check(&d);
		conf_free(&d.conf);
		log_secret_clear();
		return rc;
	}
	if (!d.foreground) {
		if (daemonize() < 0) {
			fprintf(stderr, "pvagentd: cannot go to the background: %s\n", strerror(errno));
			conf_free(&d.conf);
			return 1;
		}
		openlog("pvagentd", LOG_PID, LOG_DAEMON);
		use_syslog = true;
	}
	log_set_sink(log_line, NULL);
	int rc = 1;
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGCHLD);
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &sigs, NULL) < 0 ||
	    (d.sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		log_error("signalfd: %s", strerror(errno));
		goto out;
	}
	d.bin = jobproc_cli_path();
	char *db = store_path(d.conf.paths.state);
	if (!d.bin || !db) {
		log_error("out of memory");
		free(db);
		goto out;
	}
	if (mkdir(d.conf.paths.state, 0750) < 0 && errno != EEXIST) {
		log_error("%s: %s", d.conf.paths.state, strerror(errno));
		free(db);
		goto out;
	}
	if (lock_store(&d) < 0) {
		free(db);
		goto out;
	}
	if (store_open(db, &d.store, &err) < 0) {
		log_error("%s", err ? err : "cannot open the store");
		free(err);
		free(db);
		goto out;
	}
	free(db);
	/* a small page cache: the daemon reads a job at a time (and prunes) */
	if (sqlite3_exec(store_db(d.store), "PRAGMA cache_size=-256", NULL, NULL, NULL) != SQLITE_OK)
		log_warn("%s: cannot set the page cache size", store_file(d.store));
	jobq_init(&d.q, d.conf.daemon.workers, d.conf.daemon.node_jobs);
	d.started_at = clock_unix_now();
	d.m.start_time = d.started_at;
	prune_jobs(&d);
	resume_all(&d);
	if (windows_sync(&d) < 0) {
		log_error("out of memory for the maintenance windows");
		goto out;
	}
	if (ctl_listen(d.conf.paths.socket, d.conf.daemon.socket_group, &d.lis, &err) < 0) {
		log_error("control socket: %s", err ? err : "cannot listen");
		free(err);
		goto out;
	}
	log_info("pvagentd %s ready: pid %ld, socket %s, store %s, %u workers (%u per node), "
		 "jobs run by %s", PVAGENT_VERSION, (long)getpid(), d.lis.path, store_file(d.store),
		 d.q.workers, d.q.node_jobs, d.bin);
	schedule(&d);
	rc = run(&d);
	if (rc == 0)
		log_info("stopped");
out:
	while (d.conns)
		conn_drop(&d, d.conns);
	for (struct jobq_item *it = d.q.head; it; it = it->next)
		djob_free(it->data);
	jobq_free(&d.q);
	ctl_listener_close(&d.lis);
	store_close(d.store);
	if (d.lock_fd >= 0)
		close(d.lock_fd);
	if (d.sig_fd >= 0)
		close(d.sig_fd);
	free(d.bin);
	metrics_free(&d.m);
	for (size_t i = 0; i < d.n_win; i++)
		free(d.win[i].name);
	free(d.win);
	conf_free(&d.conf);
	log_set_sink(NULL, NULL);
	log_secret_clear();
	return rc;
}
