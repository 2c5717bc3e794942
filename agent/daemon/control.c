/* control.c - pvagentd's end of the control socket: the connections
 * (accepted with their peer's credentials, [daemon] max_clients, the fd
 * limit; dropped when gone) and the requests of the control protocol
 * (ctl.h), dispatched by one table (as vmd's control.c dispatches):
 * each request's handler, run after the peer policy its flags declare
 * (ctl.c: read, submit, owner; refused while stopping) is checked in one
 * place. A submit's params are checked for the peer (submit_check.h)
 * before they are queued in the job table (djob.c). */
#include "pvagentd_int.h"

#include "clock.h"
#include "json.h"
#include "log.h"
#include "report.h"
#include "submit_check.h"
#include "util.h"
#include "wf_params.h"
#include "window.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How often a message that may come in a flood is said at most
 * (struct lograte). */
#define LOG_EVERY_S 60.0

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
	j->owner = c->c.uid;
	if (jid)
		djob_own(d, j, jid); /* a resume makes it the resumer's */
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
static void req_resume(struct daemon *d, struct dconn *c, json_object *req, json_object *id,
		       enum ctl_op op)
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
/* Would a peer's job of wfname on subject take another's over? Its
 * job_submit resumes or supersedes the open job of the same workflow and
 * subject (but a workflow that never resumes: JOB_RESUME_NONE), which is
 * an owner's act as resume and cancel are: -1 and *why when that job is
 * not the peer's, else 0. */
static int takes_over(struct daemon *d, const char *wfname, const char *subject, uid_t peer,
		      char **why)
{
	const struct job_params_decl *decl = wf_params_find(wfname);
	if (peer == 0 || peer == geteuid() || !decl || decl->resume == JOB_RESUME_NONE || !subject)
		return 0;
	struct store_job sj;
	char *err = NULL;
	int got = store_job_find_open(d->store, wfname, subject, &sj, &err);
	if (got < 0) {
		err_setf(why, "%s", err ? err : "the store cannot be read");
		free(err);
		return -1;
	}
	if (got == 0)
		return 0;
	uid_t owner = sj.owner >= 0 ? (uid_t)sj.owner : geteuid();
	int rc = owner == peer ? 0 : -1;
	if (rc < 0)
		err_setf(why, "job %lld (%s %s, %s) is uid %u's: a %s of %s would resume or replace "
			 "it, and only its owner, root or the daemon's user may", sj.id, wfname,
			 subject, job_state_name(sj.state), (unsigned)owner, wfname, subject);
	store_job_free(&sj);
	return rc;
}

static void req_submit(struct daemon *d, struct dconn *c, json_object *req, json_object *id,
		       enum ctl_op op)
{
	const char *wfname = json_str(req, "workflow");
	const struct job_params_decl *decl = wf_params_find(wfname);
	json_object *jobs = json_object_object_get(req, "jobs");
	size_t n = jobs && json_object_is_type(jobs, json_type_array)
			   ? json_object_array_length(jobs) : 0;
	if (!submit_workflow_known(wfname) || n == 0 || n > SUBMIT_MAX_JOBS) {
		answer(c, ctl_error(id, "bad_request", "submit: \"workflow\" (up, down, inject, "
					"virtio, bench, migrate, drain, undrain, rolling, image) and "
					"\"jobs\" (1 to "
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
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = takes_over(d, wfname, json_str(json_object_array_get_idx(jobs, i), "subject"),
				c->c.uid, &why);
	if (rc < 0) {
		log_warn("uid %u: submit of %.64s refused: %s", (unsigned)c->c.uid, wfname,
			 why ? why : "out of memory");
		answer(c, ctl_error(id, "forbidden", "%s", why ? why : "out of memory"));
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

/* report: read-only, any peer the socket admits may ask (report.h). */
static void req_report(struct daemon *d, struct dconn *c, json_object *req, json_object *id,
		       enum ctl_op op)
{
	long long jid = 0;
	struct report r;
	char *err = NULL;
	size_t len = 0;
	int found = json_int(req, "job", &jid) && jid > 0 ? report_build(d->store, jid, &r, &err)
							    : 0;
	json_object *ok = found > 0 ? ctl_ok(id) : NULL, *o = found > 0 ? report_json(&r) : NULL;
	if (found > 0)
		report_free(&r);
	if (found == 0)
		answer(c, ctl_error(id, "not_found", "no job %lld in %s", jid, store_file(d->store)));
	else if (found < 0 || !ok || !o || json_add(ok, "report", o) < 0)
		answer(c, ctl_error(id, "internal", "%s", err ? err : "out of memory"));
	else if (!json_object_to_json_string_length(ok, JSON_C_TO_STRING_PLAIN, &len) ||
		 len + 2 > CTL_MAX_LINE)
		answer(c, ctl_error(id, "too_large", "the report of job %lld is larger than an "
				    "answer may be: run 'pvagent --local report %lld' as a user "
				    "who may read %s", jid, jid, store_file(d->store)));
	else
		answer(c, json_object_get(ok));
	if (found > 0 && !ok)
		json_object_put(o);
	json_object_put(ok);
	free(err);
}

/* cancel: the peer policy (CTL_OWNER) was checked before. */
static void req_cancel(struct daemon *d, struct dconn *c, json_object *req, json_object *id,
		       enum ctl_op op)
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

static void req_list(struct daemon *d, struct dconn *c, json_object *req, json_object *id,
		     enum ctl_op op)
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

/* ---- the requests' table and the peer policy ------------------------------- */

typedef void req_fn(struct daemon *d, struct dconn *c, json_object *req, json_object *id,
		    enum ctl_op op);

/* Each request's handler; who may send it is its flags (ctl.c). */
static req_fn *const handlers[CTL_OP__COUNT] = {
	[CTL_OP_SUBMIT] = req_submit, [CTL_OP_JOBS] = req_list,     [CTL_OP_JOB] = req_watch,
	[CTL_OP_CANCEL] = req_cancel, [CTL_OP_RESUME] = req_resume, [CTL_OP_STATUS] = req_list,
	[CTL_OP_WATCH] = req_watch,   [CTL_OP_REPORT] = req_report,
};

/* The owner of the job a request names: the item in the daemon's, else
 * the peer that last ran the stored job through the daemon (the store's
 * owner), else the daemon's user. false: it names none (its handler says
 * so). *what: for messages (malloc'd, NULL when out of memory). */
static bool owner_of(struct daemon *d, json_object *req, uid_t *owner, char **what)
{
	long long jid;
	const struct djob *j = named(d, req, &jid);
	if (j) {
		*owner = j->owner;
		*what = strprintf("ticket %llu (%s)", j->it->ticket, j->what);
		return true;
	}
	if (jid <= 0)
		return false;
	*owner = geteuid();
	struct store_job sj;
	char *err = NULL;
	int got = store_job_get(d->store, jid, &sj, &err);
	if (got < 0) /* unreadable: the daemon's user's, as one never recorded */
		log_warn("job %lld: %s", jid, err ? err : "store");
	free(err);
	if (got == 1 && sj.owner >= 0)
		*owner = (uid_t)sj.owner;
	if (got == 1)
		store_job_free(&sj);
	*what = strprintf("job %lld", jid);
	return true;
}

/* The peer policy of op's flags (ctl.h), the one place it is checked:
 * true when c may send it, else answered. */
static bool allowed(struct daemon *d, struct dconn *c, enum ctl_op op, json_object *req,
		    json_object *id)
{
	const struct ctl_op_def *def = ctl_op_def(op);
	uid_t owner;
	char *what = NULL;
	if (!def || !handlers[op] || !(def->flags & CTL_ACCESS)) {
		/* (test_ctl and test_daemon hold every op to both) */
		answer(c, ctl_error(id, "internal", "op %d has no handler or no policy", (int)op));
		return false;
	}
	if ((def->flags & CTL_NOT_STOPPING) && d->stopping) {
		answer(c, ctl_error(id, "stopping", "the daemon is stopping; run it again later"));
		return false;
	}
	if (!(def->flags & CTL_OWNER) || c->c.uid == 0 || c->c.uid == geteuid() ||
	    !owner_of(d, req, &owner, &what) || owner == c->c.uid) {
		free(what);
		return true;
	}
	const char *w = what ? what : "the job";
	log_warn("uid %u: %s of %s refused: it is uid %u's", (unsigned)c->c.uid, def->name, w,
		 (unsigned)owner);
	answer(c, ctl_error(id, "forbidden", "%s is uid %u's: uid %u may read it, and only its "
			    "owner, root or the daemon's user may %s it", w, (unsigned)owner,
			    (unsigned)c->c.uid, def->name));
	free(what);
	return false;
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
	if (allowed(d, c, op, req, id))
		handlers[op](d, c, req, id, op);
	json_object_put(req);
}

/* ---- connections -------------------------------------------------------------- */

/* May a message of r be said now? Then *held: the times it came unsaid
 * since it was last said. */
static bool say_now(struct lograte *r, unsigned long *held)
{
	double now = pve_clock_now(NULL);
	if (now < r->next) {
		r->held++;
		return false;
	}
	*held = r->held;
	r->held = 0;
	r->next = now + LOG_EVERY_S;
	return true;
}

void conn_drop(struct daemon *d, struct dconn *c)
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
void sweep_conns(struct daemon *d)
{
	for (struct dconn *c = d->conns, *next; c; c = next) {
		next = c->next;
		if (c->c.eof || (c->c.rd_eof && !ctl_conn_pending(&c->c) && !conn_watching(d, c)))
			conn_drop(d, c);
	}
}

void on_conn_readable(struct daemon *d, struct dconn *c)
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

void on_accept(struct daemon *d)
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
