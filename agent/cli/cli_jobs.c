/* cli_jobs.c - the job commands of the command-line tool: jobs (recent
 * jobs), job ID (its steps and events), resume ID (continue an
 * interrupted job in this process), cancel ID (end an unfinished one; a
 * PVE task its step had started is followed to its end, or stopped with
 * --stop-task, and where the guest is then is said),
 * and pvagentd's hidden `submitted WF SUBJECT` (store a submitted job,
 * then run it as resume does). */
#include "cli.h"
#include "clock.h"
#include "guest.h"
#include "task.h"

#include "json.h"
#include "log.h"
#include "output.h"
#include "store.h"
#include "util.h"
#include "workflows.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int open_store(struct cli *cli, const char *cmd, struct store **out)
{
	if (cli_load_conf(cli))
		return EXIT_USAGE;
	*out = cli_store(cli);
	if (!*out) {
		cli_error("job", cmd, "no job store (see the warning above)");
		return 1;
	}
	return 0;
}

static int parse_id(const struct cmd_args *a, long long *id)
{
	const char *arg = a->argv[0];
	char *end;
	errno = 0;
	*id = strtoll(arg, &end, 10);
	if (errno || !*arg || *end || *id <= 0)
		return cli_usage_error(a->cmd, "not a job ID", arg);
	return 0;
}

static const char *when(double t, char *buf, size_t n)
{
	if (t <= 0)
		return NULL;
	time_t s = (time_t)t;
	struct tm tm;
	if (!localtime_r(&s, &tm) || strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		return NULL;
	return buf;
}

static const char *duration(const struct store_job *j, char *buf, size_t n)
{
	if (j->started <= 0)
		return NULL;
	double end = j->ended > 0 ? j->ended : (j->state == JOB_RUNNING ? clock_unix_now() : 0);
	if (end <= 0)
		return NULL;
	snprintf(buf, n, "%.1fs", end - j->started);
	return buf;
}

/* The message of a stored error object, or NULL. */
static char *error_text(const char *json)
{
	if (!json)
		return NULL;
	json_object *o = json_tokener_parse(json);
	struct pve_error e = {0};
	char *m = NULL;
	if (o && pve_error_from_json(o, &e) == 0 && e.kind != PVE_OK)
		m = pve_error_format(&e);
	pve_error_clear(&e);
	json_object_put(o);
	return m;
}

static json_object *job_json(const struct store_job *j)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_int64(j->id));
	json_object_object_add(o, "workflow", json_object_new_string(j->workflow));
	json_object_object_add(o, "subject", json_object_new_string(j->subject));
	json_object_object_add(o, "state", json_object_new_string(job_state_name(j->state)));
	json_object_object_add(o, "created", json_object_new_double(j->created));
	if (j->started > 0)
		json_object_object_add(o, "started", json_object_new_double(j->started));
	if (j->ended > 0)
		json_object_object_add(o, "ended", json_object_new_double(j->ended));
	if (j->error)
		json_object_object_add(o, "error", json_tokener_parse(j->error));
	return o;
}

/* jobs --prune [--older-than AGE]: the finished jobs beyond [daemon]
 * keep_jobs (or AGE) and keep_jobs_max, deleted. */
static int prune(struct cli *cli, struct store *st, const char *older_than)
{
	unsigned age = cli->conf.daemon.keep_jobs;
	if (older_than && conf_parse_duration(older_than, &age) < 0)
		return cli_usage_error("jobs", "--older-than: expected a duration (30d, 12h, ...), "
				       "not", older_than);
	size_t n = 0;
	char *err = NULL;
	if (store_jobs_prune(st, clock_unix_now() - (double)age, cli->conf.daemon.keep_jobs_max,
			     &n, &err) < 0) {
		cli_error("job", "jobs", "%s", err ? err : "cannot prune the jobs");
		free(err);
		return 1;
	}
	if (cli->json) {
		out_json_ok("jobs", "pruned", json_object_new_int64((int64_t)n));
	} else {
		printf("pruned %zu finished jobs (ended more than %u s ago, or beyond the newest %u); "
		       "unfinished ones are kept\n", n, age, cli->conf.daemon.keep_jobs_max);
	}
	return 0;
}

static int cmd_jobs(struct cli *cli, const struct cmd_args *args)
{
	long limit = 20;
	long long before = 0;
	bool pruning = false;
	const char *older_than = NULL;
	for (size_t i = 0; i < args->n; i++) {
		const char *val = args->v[i].val;
		char *end;
		switch (args->v[i].opt) {
		case 'n':
			limit = strtol(val, &end, 10);
			if (*end || limit < 1 || limit > 10000)
				return cli_usage_error("jobs", "--limit: expected 1 to 10000, not", val);
			break;
		case 'b':
			errno = 0;
			before = strtoll(val, &end, 10);
			if (errno || *end || before < 1)
				return cli_usage_error("jobs", "--before: expected a job ID, not", val);
			break;
		case 'P': pruning = true; break;
		case 'o': older_than = val; break;
		default: break;
		}
	}
	if (older_than && !pruning)
		return cli_usage_error("jobs", "--older-than goes with", "--prune");
	struct store *st;
	int rc = open_store(cli, "jobs", &st);
	if (rc)
		return rc;
	if (pruning)
		return prune(cli, st, older_than);
	struct store_job *v = NULL;
	size_t n = 0;
	char *err = NULL;
	if (store_jobs_page(st, before, (size_t)limit, &v, &n, &err) < 0) {
		cli_error("job", "jobs", "%s", err ? err : "cannot read the jobs");
		free(err);
		return 1;
	}
	/* a full page: the next one starts before its last job */
	long long next = n == (size_t)limit ? v[n - 1].id : 0;
	json_object *queued = NULL;
	cli_daemon_queued(cli, &queued);
	if (cli->json) {
		json_object *o = json_object_new_object(), *a = json_object_new_array();
		for (size_t i = 0; i < n; i++)
			json_object_array_add(a, job_json(&v[i]));
		json_object_object_add(o, "result", json_object_new_string("ok"));
		json_object_object_add(o, "command", json_object_new_string("jobs"));
		json_object_object_add(o, "jobs", a);
		if (next)
			json_object_object_add(o, "next_before", json_object_new_int64(next));
		json_object_object_add(o, "exit", json_object_new_int(0));
		if (queued)
			json_object_object_add(o, "daemon_queued", json_object_get(queued));
		out_json_line(stdout, o);
		json_object_put(o);
	} else {
		const char *hdr[] = {"ID", "WORKFLOW", "GUEST", "STATE", "CREATED", "TIME"};
		struct table *t = table_new(6, hdr);
		for (size_t i = 0; t && i < n; i++) {
			char id[24], cr[32], du[32];
			snprintf(id, sizeof id, "%lld", v[i].id);
			const char *row[] = {id,
					     v[i].workflow,
					     v[i].subject,
					     job_state_name(v[i].state),
					     when(v[i].created, cr, sizeof cr),
					     duration(&v[i], du, sizeof du)};
			table_add(t, row);
		}
		if (t)
			table_print(t, stdout);
		table_free(t);
		if (next && limit != 20)
			fprintf(stderr, "more: pvagent jobs --before %lld --limit %ld\n", next, limit);
		else if (next)
			fprintf(stderr, "more: pvagent jobs --before %lld\n", next);
		if (queued && json_object_array_length(queued))
			cli_daemon_print_queued(queued);
	}
	json_object_put(queued);
	store_jobs_free(v, n);
	return 0;
}

static int cmd_job(struct cli *cli, const struct cmd_args *args)
{
	long long id;
	int rc = parse_id(args, &id);
	if (rc)
		return rc;
	bool follow = false;
	for (size_t i = 0; i < args->n; i++)
		follow = follow || args->v[i].opt == 'f';
	struct store *st;
	if ((rc = open_store(cli, "job", &st)))
		return rc;
	/* --follow: watch first, then print what is stored, then what comes */
	struct ctl_client wc;
	bool watching = follow && cli_daemon_watch(cli, id, &wc) == 0;
	struct store_job j;
	struct store_step *steps = NULL;
	struct store_event *evs = NULL;
	size_t ns = 0, ne = 0;
	char *err = NULL;
	int r = store_job_get(st, id, &j, &err);
	if (r == 0) {
		if (store_job_pruned(st, id, NULL) == 1)
			cli_error("not-found", "job", "job %lld was pruned from %s", id,
				  store_file(st));
		else
			cli_error("not-found", "job", "no job %lld in %s", id, store_file(st));
		if (watching)
			ctl_client_close(&wc);
		return EXIT_USAGE; /* not found: 2, as in every command */
	}
	if (r < 0 || store_steps_get(st, id, &steps, &ns, &err) < 0 ||
	    store_events_get(st, id, &evs, &ne, &err) < 0) {
		cli_error("job", "job", "%s", err ? err : "cannot read the job");
		free(err);
		if (r > 0)
			store_job_free(&j);
		store_steps_free(steps, ns);
		if (watching)
			ctl_client_close(&wc);
		return 1;
	}
	double since = ne ? evs[ne - 1].time : 0;
	if (cli->json) {
		json_object *o = job_json(&j), *a = json_object_new_array(), *e = json_object_new_array();
		json_object_object_add(o, "params", json_tokener_parse(j.params ? j.params : "{}"));
		json_object_object_add(o, "vars", json_tokener_parse(j.vars ? j.vars : "{}"));
		for (size_t i = 0; i < ns; i++) {
			json_object *s = json_object_new_object();
			json_object_object_add(s, "name", json_object_new_string(steps[i].name));
			json_object_object_add(s, "state",
					       json_object_new_string(step_state_name(steps[i].state)));
			json_object_object_add(s, "attempts", json_object_new_int(steps[i].attempts));
			if (steps[i].upid)
				json_object_object_add(s, "upid", json_object_new_string(steps[i].upid));
			if (steps[i].result)
				json_object_object_add(s, "result",
						       json_object_new_string(steps[i].result));
			if (steps[i].error)
				json_object_object_add(s, "error", json_tokener_parse(steps[i].error));
			json_object_array_add(a, s);
		}
		for (size_t i = 0; i < ne; i++) {
			json_object *x = json_object_new_object();
			json_object_object_add(x, "time", json_object_new_double(evs[i].time));
			json_object_object_add(x, "event", json_object_new_string(evs[i].kind));
			if (evs[i].step)
				json_object_object_add(x, "step", json_object_new_string(evs[i].step));
			if (evs[i].percent >= 0)
				json_object_object_add(x, "percent",
						       json_object_new_double(evs[i].percent));
			if (evs[i].message)
				json_object_object_add(x, "text", json_object_new_string(evs[i].message));
			json_object_array_add(e, x);
		}
		json_object_object_add(o, "steps", a);
		json_object_object_add(o, "events", e);
		out_json_ok("job", "job", o);
	} else {
		char cr[32], du[32];
		const char *c = when(j.created, cr, sizeof cr), *d = duration(&j, du, sizeof du);
		printf("job %lld: %s %s, %s (created %s%s%s)\n", j.id, j.workflow, j.subject,
		       job_state_name(j.state), c ? c : "?", d ? ", took " : "", d ? d : "");
		const char *hdr[] = {"STEP", "STATE", "SENT", "TIME", "RESULT", "UPID"};
		struct table *t = table_new(6, hdr);
		for (size_t i = 0; t && i < ns; i++) {
			char sent[16], secs[32];
			snprintf(sent, sizeof sent, "%d", steps[i].attempts);
			bool timed = steps[i].ended > steps[i].started && steps[i].started > 0;
			snprintf(secs, sizeof secs, "%.1fs", steps[i].ended - steps[i].started);
			char *e = error_text(steps[i].error);
			const char *row[] = {steps[i].name,
					     step_state_name(steps[i].state),
					     steps[i].attempts ? sent : NULL,
					     timed ? secs : NULL,
					     e ? e : steps[i].result,
					     steps[i].upid};
			table_add(t, row);
			free(e);
		}
		if (t)
			table_print(t, stdout);
		table_free(t);
		for (size_t i = 0; i < ne; i++) {
			if (strcmp(evs[i].kind, "progress") == 0 && evs[i].percent >= 0)
				continue; /* percentages: the step lines say enough */
			/* a run of progress lines of one step: its last one, and
			 * how many it stands for */
			size_t run = 1;
			while (strcmp(evs[i].kind, "progress") == 0 && i + run < ne &&
			       strcmp(evs[i + run].kind, "progress") == 0 && evs[i + run].percent < 0 &&
			       !(evs[i + run].step && evs[i].step ? strcmp(evs[i + run].step,
									   evs[i].step)
								  : evs[i + run].step != evs[i].step))
				run++;
			i += run - 1;
			char tb[32];
			const char *tm = when(evs[i].time, tb, sizeof tb);
			printf("  %s %-8s %-8s %s", tm ? tm : "?", evs[i].kind,
			       evs[i].step ? evs[i].step : "", evs[i].message ? evs[i].message : "");
			if (run > 1)
				printf(" (the last of %zu)", run);
			printf("\n");
		}
		char *e = error_text(j.error);
		if (e)
			printf("error: %s\n", e);
		free(e);
		json_object *eo = j.error ? json_tokener_parse(j.error) : NULL;
		const char *left = json_str(eo, "left");
		if (left)
			printf("left: %s\n", left);
		json_object_put(eo);
		long holder = 0;
		int running = job_state_open(j.state) ? store_job_running(st, j.id, &holder, NULL)
						      : 0;
		if (running == 1)
			printf("running in process %ld\n", holder);
		else if (!watching && running == 0 && job_state_open(j.state))
			printf("resume it with: pvagent resume %lld\n", j.id);
	}
	if (follow && !watching && job_state_open(j.state))
		log_info("job %lld does not run in pvagentd (%s)", id,
			 j.state == JOB_RUNNING ? "another process runs it" : job_state_name(j.state));
	store_job_free(&j);
	store_steps_free(steps, ns);
	store_events_free(evs, ne);
	if (watching)
		return cli_daemon_follow(cli, &wc, since);
	return 0;
}

/* Load a stored job that may be resumed or cancelled now. */
static int load_open_job(struct cli *cli, const char *cmd, long long id, struct store_job *out)
{
	struct store *st;
	int rc = open_store(cli, cmd, &st);
	if (rc)
		return rc;
	char *err = NULL;
	int r = store_job_get(st, id, out, &err);
	if (r <= 0) {
		if (r < 0)
			cli_error("job", cmd, "%s", err ? err : "store");
		else if (store_job_pruned(st, id, NULL) == 1)
			cli_error("not-found", cmd, "job %lld was pruned from %s; nothing to %s",
				  id, store_file(st), cmd);
		else
			cli_error("not-found", cmd, "no job %lld in %s; nothing to %s", id,
				  store_file(st), cmd);
		free(err);
		return r < 0 ? 1 : EXIT_USAGE;
	}
	if (!job_state_open(out->state)) {
		cli_error("usage", cmd, "job %lld (%s %s) is %s already; nothing to %s", id,
			  out->workflow, out->subject, job_state_name(out->state), cmd);
		store_job_free(out);
		return EXIT_USAGE;
	}
	return 0;
}

/* Who holds job id's lock (store.h): 1 running (*holder), 0 not, or an
 * exit code (said) as a negative number. */
static int job_running(struct cli *cli, const char *cmd, long long id, long *holder)
{
	char *err = NULL;
	int r = store_job_running(cli_store(cli), id, holder, &err);
	if (r < 0) {
		cli_error("job", cmd, "%s", err ? err : "cannot look at the job's lock");
		free(err);
		return -1;
	}
	return r;
}

/* Resume stored job id in this process (resume ID, and a submitted job's
 * child once it stored it). Its exit code. */
static int resume_job(struct cli *cli, long long id)
{
	struct store_job sj;
	int rc;
	if ((rc = load_open_job(cli, "resume", id, &sj)))
		return rc;
	const struct job_workflow *wf = job_workflow_find(sj.workflow);
	if (!wf) {
		cli_error("usage", "resume", "job %lld: workflow '%s' is not one this pvagent knows",
			  id, sj.workflow);
		store_job_free(&sj);
		return EXIT_USAGE;
	}
	long holder = 0;
	int running = job_running(cli, "resume", id, &holder);
	if (running != 0) {
		if (running > 0)
			cli_error("locked", "resume", "job %lld (%s %s) is running in process %ld; "
				  "follow it with 'pvagent job %lld'", id, sj.workflow, sj.subject,
				  holder, id);
		store_job_free(&sj);
		return 1;
	}
	store_job_free(&sj);
	cli->subject = NULL;
	if ((rc = cli_connect_pve(cli)))
		return rc;
	struct event_print pp;
	struct job_env env;
	if (cli_jobs_env(cli, wf, false, &pp, &env) < 0)
		return 1;
	struct job *j = NULL;
	struct pve_error e = {0};
	if (job_load(&env, id, wf, &j, &e) != 1) {
		rc = cli_fail_pve(cli, "resume", &e);
		job_env_fini(&env);
		return rc ? rc : 1;
	}
	/* a dry run's lines as its command says them ("would change", the
	 * guest files' diffs) */
	if (json_flag(job_params(j), "dry_run"))
		pp.dry_run = pp.file_diffs = true;
	/* the job speaks as its command ("pvagent virtio: ..."), also when
	 * pvagentd's child runs it: its submitter never typed "resume" */
	char *ident = strprintf("pvagent %s", wf->name);
	if (ident) {
		cli_set_command(wf->name);
		log_set_ident(ident);
	}
	rc = cli_run_jobs(cli, wf, &j, 1, 1);
	job_free(j);
	job_env_fini(&env);
	if (ident) {
		log_set_ident("pvagent resume");
		cli_set_command("resume");
		free(ident);
	}
	return rc;
}

static int cmd_resume(struct cli *cli, const struct cmd_args *a)
{
	long long id;
	int rc = parse_id(a, &id);
	return rc ? rc : resume_job(cli, id);
}

/* The params (a JSON object) on stdin, stored as a job of wf on subject
 * (job_submit: an unfinished one of the same request is resumed). Its ID,
 * or 0 with *msg (malloc'd; NULL: out of memory). */
static long long store_submitted(struct cli *cli, const char *wfname, const char *subject,
				 char **msg)
{
	const struct job_workflow *wf = job_workflow_find(wfname);
	struct job_env env = {.store = cli_store(cli), .conf = &cli->conf};
	struct job *j = NULL;
	struct pve_error e = {0};
	json_object *params = NULL;
	char *text = NULL;
	long long id = 0;
	if (!wf)
		pve_error_set(&e, PVE_ERR_CONFIG, "no workflow '%s'", wfname);
	else if (read_file("/dev/stdin", &text, NULL) < 0 || !(params = json_tokener_parse(text)) ||
		 !json_object_is_type(params, json_type_object))
		pve_error_set(&e, PVE_ERR_CONFIG, "the job's params (stdin) are not a JSON object");
	else if (!env.store)
		pve_error_set(&e, PVE_ERR_INTERNAL, "the job store cannot be opened");
	else if (job_env_init(&env) < 0)
		pve_error_set(&e, PVE_ERR_INTERNAL, "out of memory");
	else {
		if (job_submit(&env, wf, subject, params, &j, &e) == 0)
			id = job_id(j);
		job_free(j); /* (its lock: taken again by the resume) */
		job_env_fini(&env);
	}
	*msg = id ? NULL : pve_error_format(&e);
	pve_error_clear(&e);
	json_object_put(params);
	free(text);
	return id;
}

/* pvagentd's child for a submitted job (jobproc.h): `pvagent --local
 * submitted WF SUBJECT`, the params on stdin. It stores the job, tells
 * the daemon its ID before anything else (or why it could not: the
 * daemon says that to the client), then runs it as `pvagent resume ID`
 * would, saying what it says. Neither help nor completion names it. */
static int cmd_submitted(struct cli *cli, const struct cmd_args *a)
{
	if (!cli->local)
		return cli_error("usage", "submitted", "pvagentd's own command: it runs with "
				 "--local only");
	char *msg = NULL;
	long long id = store_submitted(cli, a->argv[0], a->argv[1], &msg);
	if (!id) {
		const char *why = msg ? msg : "out of memory";
		if (cli_daemon_stored(0, why))
			cli->outcome_said = true;
		else
			cli_error("job", "submitted", "%s", why);
		free(msg);
		return 1;
	}
	cli_daemon_stored(id, NULL);
	cli_set_command("resume");
	log_set_ident("pvagent resume");
	return resume_job(cli, id);
}

/* ---- cancel ---------------------------------------------------------------------- */

/* Why a job cancel found without a process: its stored state named. */
static const char *not_running_why(enum job_state s)
{
	switch (s) {
	case JOB_QUEUED: return "it was queued and never started";
	case JOB_INTERRUPTED: return "it was interrupted";
	case JOB_NEEDS_ATTENTION: return "it stopped and needs attention";
	case JOB_RUNNING: return "stored running, its process ended without closing it";
	default: return job_state_name(s);
	}
}

/* The step whose PVE task was running when the job's process stopped:
 * running, with its UPID recorded (the last such), or NULL. */
static struct store_step *running_task(struct store_step *steps, size_t n)
{
	struct store_step *found = NULL;
	for (size_t i = 0; i < n; i++)
		if (steps[i].state == STEP_RUNNING && steps[i].upid)
			found = &steps[i];
	return found;
}

/* What became of a cancelled job's running task, and of its guest. */
struct task_end {
	bool was_running;  /* it still ran when cancel looked */
	bool stopped;      /* --stop-task: DELETE sent */
	bool ended;        /* seen to end */
	bool ok;           /* ... with OK or WARNINGS */
	char *exitstatus;  /* PVE's, or why it could not be followed */
	int vmid;          /* the guest's, 0 unknown */
	struct guest_ref where; /* where it is now (node 0: not found) */
};

static void task_end_free(struct task_end *t)
{
	free(t->exitstatus);
	guest_ref_clear(&t->where);
}

/* Follow step st's task (its UPID) of job sj to its end, after stopping
 * it (DELETE /nodes/NODE/tasks/UPID, the tasks API) when stop; then find
 * the guest. 0, or an exit code with the error said. */
static int follow_task(struct cli *cli, const struct store_job *sj, const struct store_step *st,
		       bool stop, struct task_end *te)
{
	struct task_upid u = {0};
	if (task_upid_parse(st->upid, &u) < 0)
		return cli_error("job", "cancel", "job %lld: step %s's UPID '%s' is not one", sj->id,
				 st->name, st->upid);
	int rc = cli_connect_pve(cli);
	char *node = rc ? NULL : pve_path_escape(u.node), *up = rc ? NULL : pve_path_escape(st->upid);
	struct pve_error e = {0};
	json_object *status = NULL;
	if (!rc && (!node || !up ||
		    pve_getf(cli->pve, &status, NULL, &e, "/nodes/%s/tasks/%s/status", node,
			     up) < 0))
		rc = cli_fail_pve(cli, "cancel", &e);
	const char *sv = rc ? NULL : json_str(status, "status");
	te->was_running = sv && strcmp(sv, "running") == 0;
	if (!rc && te->was_running && stop) {
		char *path = strprintf("/nodes/%s/tasks/%s", node, up);
		if (!path || pve_delete(cli->pve, path, NULL, NULL, &e) < 0)
			rc = cli_fail_pve(cli, "cancel", &e);
		te->stopped = !rc;
		free(path);
	}
	json_object_put(status);
	free(node);
	free(up);
	if (rc) {
		task_upid_free(&u);
		return rc;
	}
	if (!cli->json && te->was_running) {
		if (stop)
			printf("job %lld: its %s task %s is being stopped (--stop-task); waiting for "
			       "its end\n", sj->id, st->name, st->upid);
		else
			printf("job %lld: its %s task %s goes on in PVE (cancel does not stop it; "
			       "--stop-task does): following it to its end\n", sj->id, st->name,
			       st->upid);
		fflush(stdout);
	}
	struct guest_wait w = {.attach = true};
	if (strcmp(sj->workflow, "migrate") == 0)
		w.task_timeout_s = cli->conf.migrate.timeout;
	struct task_result res = {0};
	int wr = guest_wait_task(cli->pve, st->upid, st->name, &w, &res, &e);
	te->ended = wr == 0 || e.kind == PVE_ERR_TASK;
	te->ok = wr == 0;
	te->exitstatus = res.exitstatus ? strdup(res.exitstatus)
			 : e.message ? strdup(e.message) : strdup(wr ? "failed" : "OK");
	task_result_free(&res);
	pve_error_clear(&e);
	/* the guest: the job's, else the task's ID */
	json_object *vars = sj->vars ? json_tokener_parse(sj->vars) : NULL;
	long long v = 0;
	char *end = NULL;
	if (!json_int(vars, "vmid", &v) && u.id)
		v = strtoll(u.id, &end, 10);
	json_object_put(vars);
	te->vmid = (end && *end) ? 0 : (int)v;
	if (te->vmid > 0 && guest_find_by_vmid(cli->pve, te->vmid, &te->where, &e) < 0)
		pve_error_clear(&e); /* said as unknown below */
	task_upid_free(&u);
	return 0;
}

/* The words for where the guest is after te, a migration's source and
 * target named (malloc'd). */
static char *where_words(const struct store_job *sj, const struct task_end *te)
{
	json_object *params = sj->params ? json_tokener_parse(sj->params) : NULL;
	const char *target = json_str(params, "target"), *node = te->where.node;
	struct sbuf b = {0};
	if (te->vmid <= 0)
		sbuf_addf(&b, "its guest is not known");
	else if (!node)
		sbuf_addf(&b, "VMID %d is not found", te->vmid);
	else {
		bool there = target && strcmp(node, target) == 0;
		sbuf_addf(&b, "%s (VMID %d) is on %s", te->where.name ? te->where.name : sj->subject,
			  te->vmid, node);
		if (target)
			sbuf_addf(&b, there ? ", the target" : ", not the target %s", target);
		if (te->where.lock)
			sbuf_addf(&b, "; left: its lock '%s'", te->where.lock);
	}
	/* a migration's downtime limit, set for it and not yet put back */
	json_object *vars = sj->vars ? json_tokener_parse(sj->vars) : NULL;
	const char *prev = json_str(vars, "prev_downtime");
	if (prev && te->vmid > 0 && strcmp(sj->workflow, "migrate") == 0)
		sbuf_addf(&b, "; left: the downtime limit set for this migration (put it back: qm "
			  "set %d %s%s)", te->vmid, *prev ? "--migrate_downtime " : "--delete "
			  "migrate_downtime", prev);
	json_object_put(vars);
	json_object_put(params);
	char *s = sbuf_steal(&b);
	sbuf_free(&b);
	return s;
}

/* A cancelled job's task followed to its end: the step closed as the task
 * ended (done, or failed with PVE's status), an event saying so, and the
 * result said. */
static void record_task_end(struct cli *cli, struct store_job *sj, struct store_step *st,
			    const struct task_end *te, bool say_json)
{
	struct store *store = cli_store(cli);
	char *where = where_words(sj, te), *err = NULL;
	char *msg = strprintf("cancelled; its %s task %s %s: %s", st->name,
			      te->stopped ? "was stopped, ended" : "ended", te->exitstatus,
			      where ? where : "");
	if (te->ended) {
		st->state = te->ok ? STEP_DONE : STEP_FAILED;
		st->ended = clock_unix_now();
		free(st->result);
		st->result = strprintf("ended after the cancel: %s", te->exitstatus);
		if (store_step_put(store, sj->id, st, &err) < 0) {
			log_warn("job %lld: %s", sj->id, err ? err : "store");
			free(err);
			err = NULL;
		}
	}
	struct store_event ev = {.time = clock_unix_now(), .step = st->name, .kind = "note",
				 .percent = -1, .message = msg};
	if (msg && store_event_add(store, sj->id, &ev, &err) < 0) {
		log_warn("job %lld: %s", sj->id, err ? err : "store");
		free(err);
	}
	if (cli->json && !say_json) {
		/* said already (pvagentd's answer): the store has it */
	} else if (cli->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "result", json_object_new_string("ok"));
		json_object_object_add(o, "command", json_object_new_string("cancel"));
		json_object_object_add(o, "job", json_object_new_int64(sj->id));
		json_object_object_add(o, "upid", json_object_new_string(st->upid));
		json_object_object_add(o, "task_stopped", json_object_new_boolean(te->stopped));
		json_object_object_add(o, "task_status",
				       json_object_new_string(te->ended ? te->exitstatus : "running"));
		if (te->vmid > 0)
			json_object_object_add(o, "vmid", json_object_new_int(te->vmid));
		if (te->where.node)
			json_object_object_add(o, "node", json_object_new_string(te->where.node));
		if (te->where.lock)
			json_object_object_add(o, "lock", json_object_new_string(te->where.lock));
		json_object_object_add(o, "exit", json_object_new_int(0));
		out_json_line(stdout, o);
		json_object_put(o);
	} else if (te->ended) {
		printf("job %lld (%s %s) cancelled; its %s task %s %s: %s; the steps after %s did "
		       "not run: see 'pvagent job %lld'\n", sj->id, sj->workflow, sj->subject,
		       st->name, te->stopped ? "was stopped and ended" : "ended", te->exitstatus,
		       where ? where : "", st->name, sj->id);
	} else {
		printf("job %lld (%s %s) cancelled; its %s task %s could not be followed (%s): it "
		       "may still run in PVE\n", sj->id, sj->workflow, sj->subject, st->name,
		       st->upid, te->exitstatus);
	}
	free(where);
	free(msg);
}

/* follow_task, then record_task_end. 0, or an exit code. */
static int end_task(struct cli *cli, struct store_job *sj, struct store_step *task, bool stop,
		    bool say_json)
{
	struct task_end te = {0};
	int rc = follow_task(cli, sj, task, stop, &te);
	if (!rc)
		record_task_end(cli, sj, task, &te, say_json);
	task_end_free(&te);
	return rc;
}

/* Record sj cancelled (its lock held by the caller). 0, or -1 with *err. */
static int store_cancelled(struct store *st, struct store_job *sj, char **err)
{
	sj->state = JOB_CANCELLED;
	sj->ended = clock_unix_now();
	sj->pid = 0;
	return store_job_update(st, sj, err);
}

/* A job pvagentd cancelled: once its process stopped (bounded: 60 s), it
 * is recorded cancelled here if pvagentd has not yet (whichever takes its
 * lock first writes it), and the PVE task its step had started is followed
 * (or stopped) as for a job of this process. 0, or an exit code with the
 * error said. */
static int after_daemon_cancel(struct cli *cli, long long id, bool stop)
{
	struct store *st = cli_store(cli);
	char *err = NULL;
	long holder = 0;
	struct store_job_lock *lk = NULL;
	for (int i = 0; st && i < 600; i++) {
		int r = store_job_lock(st, id, &lk, &holder, &err);
		if (r != 0)
			break;
		struct timespec ts = {0, 100L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling its lock while pvagentd stops it, bounded */
	}
	struct store_job sj = {0};
	struct store_step *steps = NULL, *task = NULL;
	size_t ns = 0;
	int rc = 0;
	if (lk && store_job_get(st, id, &sj, &err) == 1 &&
	    (!job_state_open(sj.state) || store_cancelled(st, &sj, &err) == 0) &&
	    store_steps_get(st, id, &steps, &ns, &err) == 0)
		task = running_task(steps, ns);
	if (err)
		log_warn("job %lld: %s", id, err);
	free(err);
	if (task)
		rc = end_task(cli, &sj, task, stop, false);
	store_job_unlock(lk);
	store_steps_free(steps, ns);
	store_job_free(&sj);
	return rc;
}

static int cmd_cancel(struct cli *cli, const struct cmd_args *a)
{
	long long id;
	bool stop_task = false;
	for (size_t i = 0; i < a->n; i++)
		stop_task = stop_task || a->v[i].opt == 'S';
	int rc = parse_id(a, &id);
	if (rc)
		return rc;
	/* a job pvagentd has (queued or running) is cancelled there */
	bool handled = false;
	rc = cli_daemon_cancel(cli, id, &handled);
	if (handled)
		return rc ? rc : after_daemon_cancel(cli, id, stop_task);
	struct store_job sj;
	if ((rc = load_open_job(cli, "cancel", id, &sj)))
		return rc;
	struct store *st = cli_store(cli);
	struct store_job_lock *lk = NULL;
	char *err = NULL;
	long holder = 0;
	bool signalled = false;
	/* its lock, taken to write it cancelled; while another process holds
	 * it, that process is asked to stop after its step (bounded: 60 s) */
	for (int i = 0; i < 600; i++) {
		int r = store_job_lock(st, id, &lk, &holder, &err);
		if (r != 0)
			break;
		if (!signalled) {
			/* SIGUSR1: the holder stops as for Ctrl-C, and says cancelled */
			int s = store_job_signal(st, id, SIGUSR1, &holder, &err);
			if (s < 0)
				break;
			if (s > 0) {
				signalled = true;
				if (!cli->json)
					printf("job %lld: asked process %ld to stop; it stops after "
					       "its current step\n", id, holder);
				fflush(stdout);
			}
		}
		struct timespec ts = {0, 100L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling its lock, bounded */
	}
	if (!lk) {
		if (err)
			cli_error("job", "cancel", "%s", err);
		else
			cli_error("job", "cancel", "job %lld is still running in process %ld after "
				  "60 s", id, holder);
		free(err);
		store_job_free(&sj);
		return 1;
	}
	if (!signalled && !cli->json)
		printf("job %lld (%s %s) is not running (%s): nothing signalled\n", id,
		       sj.workflow, sj.subject, not_running_why(sj.state));
	/* as stored now: the process that stopped recorded its end */
	struct store_job now;
	int r = store_job_get(st, id, &now, &err);
	if (r == 1) {
		store_job_free(&sj);
		sj = now;
	}
	if (r < 0 || !job_state_open(sj.state)) {
		if (r < 0)
			cli_error("job", "cancel", "%s", err ? err : "store");
		else
			cli_error("usage", "cancel", "job %lld ended %s before it was cancelled", id,
				  job_state_name(sj.state));
		free(err);
		store_job_unlock(lk);
		store_job_free(&sj);
		return r < 0 ? 1 : EXIT_USAGE;
	}
	rc = store_cancelled(st, &sj, &err);
	if (rc < 0) {
		store_job_unlock(lk);
		cli_error("job", "cancel", "%s", err ? err : "store");
		free(err);
		store_job_free(&sj);
		return 1;
	}
	/* a PVE task its step started goes on: followed (or stopped) under
	 * the job's lock, so that nothing resumes it meanwhile */
	struct store_step *steps = NULL, *task = NULL;
	size_t ns = 0;
	if (store_steps_get(st, id, &steps, &ns, &err) < 0) {
		log_warn("job %lld: %s", id, err ? err : "store");
		free(err);
		err = NULL;
	}
	task = running_task(steps, ns);
	if (task) {
		rc = end_task(cli, &sj, task, stop_task, true);
	} else if (cli->json) {
		out_json_ok("cancel", "job", json_object_new_int64(id));
	} else {
		printf("job %lld (%s %s) cancelled; what its done steps did stays: see 'pvagent job "
		       "%lld'\n",
		       id, sj.workflow, sj.subject, id);
	}
	store_job_unlock(lk);
	store_steps_free(steps, ns);
	store_job_free(&sj);
	return rc;
}

/* ---- the entries ---------------------------------------------------------------- */

static const struct option jobs_opts[] = {
	{"limit", required_argument, NULL, 'n'},      {"before", required_argument, NULL, 'b'},
	{"prune", no_argument, NULL, 'P'},            {"older-than", required_argument, NULL, 'o'},
	{0}};

const struct cmd_entry cmd_jobs_entry = {
	"jobs", "[--limit N] [--before ID] | --prune [--older-than AGE]",
	"recent jobs with their state and duration, a page at a time (the next: --before the last "
	"ID); --prune: delete the finished jobs beyond [daemon] keep_jobs (or AGE) and "
	"keep_jobs_max",
	"n:", jobs_opts, NULL, 0, 0, NULL, cmd_jobs,
	"pvagent jobs\npvagent jobs --limit 5\npvagent jobs --before 120\n"
	"pvagent jobs --prune --older-than 30d",
	.wf = NULL,
};
static const struct option job_opts[] = {{"follow", no_argument, NULL, 'f'}, {0}};

const struct cmd_entry cmd_job_entry = {
	"job", "ID [--follow]",
	"one job: its steps (state, UPID, time) and events; --follow: then its events as they "
	"come, while pvagentd runs it (exit: its exit code)",
	"f", job_opts, NULL, 1, 1, "job ID", cmd_job, "pvagent job 12\npvagent job 12 --follow",
	.wf = NULL,
	.flags = CMD_READONLY,
};
const struct cmd_entry cmd_resume_entry = {
	"resume", "ID", "continue an interrupted job, or one that needs attention", "", NULL, NULL,
	1, 1, "job ID", cmd_resume, "pvagent resume 12",
	.flags = CMD_RESUME,
};
const struct cmd_entry cmd_submitted_entry = {
	"submitted", "WF SUBJECT", "pvagentd's own: store and run the job of stdin's params",
	"", NULL, NULL, 2, 2, "argument", cmd_submitted, NULL,
	.wf = NULL,
};
static const struct option cancel_opts[] = {{"stop-task", no_argument, NULL, 'S'}, {0}};

const struct cmd_entry cmd_cancel_entry = {
	"cancel", "ID [--stop-task]",
	"end an unfinished job (a running one stops after its step); a PVE task its step "
	"started goes on and is followed to its end, where the guest then is said; "
	"--stop-task: stop that task (the tasks API)",
	"", cancel_opts, NULL, 1, 1, "job ID", cmd_cancel,
	"pvagent cancel 12\npvagent cancel 12 --stop-task",
	.wf = NULL,
};
