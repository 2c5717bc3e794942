/* wf_inject.c - `pvagent inject` as a job: open finds the guest from the
 * job's params (target.h); connect, then inject (the guest's files and
 * hostname, written atomically with backups, every file put back on a
 * failure: inject.h), its result in the job's vars. Kept in the store like
 * every job, so `pvagent jobs` shows it; a resume or a rerun injects again
 * (inject changes nothing on a guest that matches). */
#include "wf_inject.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

struct inject_ctx {
	struct guest_target gt;
	struct tmpl_kvlist tvars;
	bool dry_run;
	struct ssh_session *s;
};

json_object *wf_inject_params(const struct target_req *req, bool dry_run)
{
	json_object *p = json_object_new_object();
	if (!p || target_params_add(p, req) < 0 ||
	    (dry_run && json_object_object_add(p, "dry_run", json_object_new_boolean(1)) < 0)) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

static int inject_open(struct job *j, void *ctx)
{
	struct inject_ctx *x = ctx;
	long long dry = 0;
	x->dry_run = json_int(job_params(j), "dry_run", &dry) && dry;
	return guest_target_open_job(j, false, false, &x->gt, &x->tvars);
}

/* inject's result into the job's vars: "result" (inject_result_json),
 * "summary" (inject_result_summary). 0, or -1 on OOM. */
static int keep_result(struct job *j, const struct inject_result *res)
{
	json_object *o = inject_result_json(res);
	char *sum = inject_result_summary(res);
	int rc = o && sum && json_object_object_add(job_vars(j), "result", o) == 0 ? 0 : -1;
	if (rc < 0)
		json_object_put(o);
	if (rc == 0 && job_set_str(j, "summary", sum) < 0)
		rc = -1;
	free(sum);
	return rc;
}

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
	struct ssh_error e = {0};
	if (ssh_connect(&x->gt.ssh, &x->s, &e) < 0) {
		struct inject_result res = {.outcome = ssh_error_outcome(&e),
					    .failed_step = INJ_STEP_CONNECT};
		res.error = strprintf("connect: %s", ssh_error_str(&e));
		ssh_error_clear(&e);
		enum step_rc rc = keep_result(j, &res) < 0
					  ? pve_error_oom(job_err(j))
					  : job_fail_outcome(j, res.outcome, res.error);
		inject_result_free(&res);
		return rc;
	}
	job_summary(j, "%s", x->gt.ssh.host);
	return STEP_RC_OK;
}

static enum step_rc st_inject(struct job *j)
{
	struct inject_ctx *x = job_ctx(j);
	struct inject_request q = {
		.name = x->gt.ref.name ? x->gt.ref.name : job_subject(j),
		.inst = &x->gt.inst,
		.expect_os = x->gt.tmpl ? x->gt.tmpl->os : NULL,
		.session = x->s,
		.ssh = &x->gt.ssh,
		.dry_run = x->dry_run,
		.on_event = inject_job_event,
		.event_ctx = j,
	};
	struct inject_result res = {0};
	int r = inject_run(&q, &res);
	enum step_rc rc = STEP_RC_OK;
	if (keep_result(j, &res) < 0)
		rc = pve_error_oom(job_err(j));
	else if (r < 0)
		rc = job_fail_outcome(j, res.outcome, res.error);
	else
		job_summary(j, "%s", json_str(job_vars(j), "summary"));
	inject_result_free(&res);
	return rc;
}

static void inject_close(struct job *j, void *ctx)
{
	(void)j;
	struct inject_ctx *x = ctx;
	ssh_close(x->s);
	x->s = NULL;
	guest_target_free(&x->gt);
	tmpl_kvlist_free(&x->tvars);
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
	.open = inject_open,
	.close = inject_close,
	.resume = JOB_RESUME_NONE,
};
