/* djob.c - pvagentd's job table: the items it queues (a submitted
 * job, a stored one to resume, a window's drain), each started as a
 * pvagent child (jobproc.h) when jobq.h lets it, its pipes' output and
 * events passed to the connections that watch it, and its end recorded;
 * and the store's jobs: resumed at start, pruned daily. */
#include "pvagentd_int.h"

#include "clock.h"
#include "json.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* How often finished jobs beyond [daemon] keep_jobs/keep_jobs_max are
 * pruned (and at start). */
#define PRUNE_EVERY_S 86400.0

void djob_free(struct djob *j)
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

void djob_own(struct daemon *d, const struct djob *j, long long id)
{
	char *err = NULL;
	if (store_job_set_owner(d->store, id, (long long)j->owner, &err) < 0)
		log_warn("job %lld: its owner (uid %u) not recorded: %s", id, (unsigned)j->owner,
			 err ? err : "store");
	free(err);
}

/* Remember a store job of j (its owner recorded). 0 or -1 (OOM, said). */
static int djob_add_job(struct daemon *d, struct djob *j, long long id)
{
	for (size_t i = 0; i < j->n_jobs; i++)
		if (j->jobs[i] == id)
			return 0;
	djob_own(d, j, id);
	long long *nv = realloc(j->jobs, (j->n_jobs + 1) * sizeof *nv);
	if (!nv) {
		log_warn("ticket %llu: out of memory", j->it->ticket);
		return -1;
	}
	j->jobs = nv;
	nv[j->n_jobs++] = id;
	return 0;
}

struct djob *find_by_job(struct daemon *d, long long id)
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

int add_watcher(struct djob *j, struct dconn *c, json_object *id)
{
	struct watcher *nw = realloc(j->w, (j->n_w + 1) * sizeof *nw);
	if (!nw)
		return -1;
	j->w = nw;
	nw[j->n_w++] = (struct watcher){c, id ? json_object_get(id) : NULL};
	return 0;
}

json_object *djob_json(const struct djob *j)
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
	double now = pve_clock_now(NULL);
	json_object_object_add(o, "seconds", json_object_new_double(
						     now - (j->started ? j->started_at : j->queued_at)));
	return o;
}

/* Queue stored job id, or (id 0) a submitted one with params (taken), of
 * workflow wf on subject (its exclusion key); node (its limit) may be
 * NULL. */
struct djob *djob_queue(struct daemon *d, long long id, const char *wf, const char *subject,
			const char *node, json_object *params, char **err)
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
	j->owner = geteuid(); /* a peer's request sets its own */
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
	j->queued_at = pve_clock_now(NULL);
	return j;
}

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
	j->started_at = pve_clock_now(NULL);
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
void schedule(struct daemon *d)
{
	if (d->stopping)
		return;
	struct jobq_item *it;
	while ((it = jobq_next(&d->q)))
		start_djob(d, it->data);
}

/* Tell j's watchers something as a "queued" event (the CLI shows it). */
void tell(struct djob *j, const char *text)
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
void tell_waiting(struct daemon *d, struct djob *j)
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
void end_djob(struct daemon *d, struct djob *j)
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
	(void)djob_add_job(d, j, id); /* (out of memory: said; djob_has knows it still) */
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
		djob_add_job(d, j, id);
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
void on_child_fd(struct daemon *d, struct djob *j, int *fd)
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

void reap(struct daemon *d)
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

/* ---- the store's jobs: resumed at start, pruned daily ------------------ */

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
void prune_jobs(struct daemon *d)
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
	d->next_prune = pve_clock_now(NULL) + PRUNE_EVERY_S;
}

/* Queue every unfinished job of the store again (its resume re-attaches
 * to the PVE tasks it recorded). */
void resume_all(struct daemon *d)
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
		struct djob *j = djob_queue(d, sj->id, sj->workflow, sj->subject, NULL, NULL, &err);
		if (j && sj->owner >= 0)
			j->owner = (uid_t)sj->owner; /* still its peer's */
		if (!j) {
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
