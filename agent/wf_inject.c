/* wf_inject.c - `pvagent inject` as a job: connect, then inject (the
 * guest's files and hostname, written atomically with backups, every file
 * put back on a failure: inject.h). Kept in the store like every job, so
 * `pvagent jobs` shows it; a rerun is the resume (inject changes nothing
 * on a guest that matches). */
#include "wf_inject.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

struct inject_ctx {
	const struct inject_request *req;
	struct inject_result *res;
	struct ssh_session *s;
};

void inject_job_event(void *job, const struct inject_event *ev)
{
	struct job *j = job;
	const char *text = ev->text ? ev->text : "";
	switch (ev->kind) {
	case INJ_EV_DIFF:
		job_file_diff(j, ev->path, text);
		break;
	case INJ_EV_NOTE:
		if (ev->path)
			job_note(j, "%s: %s", ev->path, text);
		else
			job_note(j, "%s", text);
		break;
	case INJ_EV_STEP:
		job_progress(j, -1, "%s: %s", inject_step_name(ev->step), text);
		break;
	case INJ_EV_FILE:
		if (ev->step == INJ_STEP_ROLLBACK)
			job_progress(j, -1, "rollback: %s %s", ev->path ? ev->path : "", text);
		break;
	}
}

static enum step_rc st_connect(struct job *j)
{
	struct inject_ctx *x = job_ctx(j);
	if (x->req->session)
		return STEP_RC_SKIP;
	struct ssh_error e = {0};
	if (ssh_connect(x->req->ssh, &x->s, &e) < 0) {
		x->res->outcome = ssh_error_outcome(&e);
		x->res->failed_step = INJ_STEP_CONNECT;
		x->res->error = strprintf("connect: %s", ssh_error_str(&e));
		ssh_error_clear(&e);
		return job_fail_outcome(j, x->res->outcome, x->res->error);
	}
	job_summary(j, "%s", x->req->ssh->host);
	return STEP_RC_OK;
}

static enum step_rc st_inject(struct job *j)
{
	struct inject_ctx *x = job_ctx(j);
	struct inject_request q = *x->req;
	if (!q.session)
		q.session = x->s;
	q.on_event = inject_job_event;
	q.event_ctx = j;
	inject_result_free(x->res);
	if (inject_run(&q, x->res) < 0)
		return job_fail_outcome(j, x->res->outcome, x->res->error);
	char *sum = inject_result_summary(x->res);
	job_summary(j, "%s", sum ? sum : "done");
	free(sum);
	return STEP_RC_OK;
}

static void inject_close(struct job *j, void *ctx)
{
	(void)j;
	struct inject_ctx *x = ctx;
	ssh_close(x->s);
	x->s = NULL;
}

static const struct job_step_def inject_steps[] = {
	{"connect", st_connect, NULL, 0},
	{"inject", st_inject, NULL, 0},
};

const struct job_workflow wf_inject = {
	.name = "inject",
	.steps = inject_steps,
	.n_steps = sizeof inject_steps / sizeof *inject_steps,
	.ctx_size = sizeof(struct inject_ctx),
	.close = inject_close,
};

enum job_outcome inject_job_run(struct store *store, volatile sig_atomic_t *stop,
		   const struct inject_request *req, const char *const *cli_args,
		   job_event_fn on_event, void *event_ctx, struct inject_result *res)
{
	memset(res, 0, sizeof *res);
	struct job_env env = {
		.store = req->dry_run ? NULL : store,
		.stop = stop,
		.on_event = on_event,
		.event_ctx = event_ctx,
	};
	struct job *j = NULL;
	struct pve_error e = {0};
	json_object *params = job_cli_params(cli_args);
	int made = job_env_init(&env) == 0 ? job_new(&env, &wf_inject, req->name ? req->name : "",
						     params, &j, &e)
					   : -1;
	json_object_put(params);
	if (made < 0) {
		res->outcome = JOB_OUT_FAILED;
		res->error = strdup(e.message ? e.message : "cannot make the job");
		pve_error_clear(&e);
		job_env_fini(&env);
		return JOB_OUT_FAILED;
	}
	struct inject_ctx *x = job_ctx(j);
	x->req = req;
	x->res = res;
	enum job_outcome o = job_run(j, NULL);
	if (o == JOB_OUT_INTERRUPTED && !res->error)
		res->error = strdup("interrupted");
	job_free(j);
	job_env_fini(&env);
	return o;
}
