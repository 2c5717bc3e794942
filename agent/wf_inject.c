/* wf_inject.c - `pvagent inject` as a job: open finds the guest from the
 * job's params (target.h); then inject's phases (inject.h) are its steps:
 * connect, detect, read, plan, write (undone by the rollback: every file
 * put back) and verify, each emitting the engine's events. The files read
 * and planned are the job's journal (vars "edit", gfedit_json), so a job
 * resumed in another process writes, verifies or puts back exactly what
 * the read found; its result is in the vars too ("result", "summary").
 * A rerun injects again (inject changes nothing on a guest that matches). */
#include "wf_inject.h"
#include "wf_params.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

struct inject_ctx {
	struct guest_target gt;
	struct tmpl_kvlist tvars;
	struct inject_request q;
	struct inject_result res;
	struct ssh_session *s;
	bool own;          /* s is ours to close (always, but for a reconnect) */
	bool detected;     /* res.guest is this process's detection */
};

json_object *wf_inject_params(const struct target_req *req, bool dry_run)
{
	json_object *p = json_object_new_object();
	const struct job_params_decl *d = &wf_inject_params_decl;
	if (!p || target_params_add(d, p, req) < 0 ||
	    (dry_run && job_param_set_bool(d, p, "dry_run", true) < 0)) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

void inject_job_event(void *job, const struct job_event *ev)
{
	struct job *j = job;
	const char *text = ev->text ? ev->text : "";
	switch (ev->kind) {
	case JOB_EV_DIFF:
		job_file_diff(j, ev->path, text);
		break;
	case JOB_EV_NOTE:
		if (ev->path)
			job_note(j, "%s: %s", ev->path, text);
		else
			job_note(j, "%s", text);
		break;
	case JOB_EV_STEP:
		job_progress(j, -1, "%s: %s", ev->step ? ev->step : "", text);
		break;
	case JOB_EV_PROGRESS:
		if (ev->step && strcmp(ev->step, "rollback") == 0)
			job_progress(j, -1, "rollback: %s %s", ev->path ? ev->path : "", text);
		break;
	case JOB_EV_BEGIN:
	case JOB_EV_DONE:
		break;
	}
}

static int inject_open(struct job *j, void *ctx)
{
	struct inject_ctx *x = ctx;
	if (guest_target_open_job(j, false, false, &x->gt, &x->tvars) < 0)
		return -1;
	x->q = (struct inject_request){
		.name = x->gt.ref.name ? x->gt.ref.name : job_subject(j),
		.inst = &x->gt.inst,
		.expect_os = x->gt.tmpl ? x->gt.tmpl->os : NULL,
		.dry_run = job_param_bool(j, "dry_run"),
		.on_event = inject_job_event,
		.event_ctx = j,
	};
	x->res.ed.on_event = inject_job_event;
	x->res.ed.event_ctx = j;
	json_object *edit = NULL;
	if (json_object_object_get_ex(job_vars(j), "edit", &edit) &&
	    gfedit_from_json(&x->res.ed, edit) < 0)
		return pve_error_set(job_err(j), PVE_ERR_INTERNAL,
				     "job %lld: its journal of the guest's files is unreadable",
				     job_id(j)), -1;
	return 0;
}

/* The journal and the result into the job's vars: "edit" (gfedit_json),
 * "result" (inject_result_json), "summary" (inject_result_summary). 0, or
 * -1 on OOM. */
static int keep(struct job *j, struct inject_ctx *x)
{
	json_object *ed = gfedit_json(&x->res.ed), *o = inject_result_json(&x->res);
	char *sum = inject_result_summary(&x->res);
	int rc = -1;
	if (ed && o && sum && json_object_object_add(job_vars(j), "edit", ed) == 0) {
		ed = NULL;
		if (json_object_object_add(job_vars(j), "result", o) == 0) {
			o = NULL;
			rc = job_set_str(j, "summary", sum);
		}
	}
	json_object_put(ed);
	json_object_put(o);
	free(sum);
	return rc;
}

/* The failure recorded in res.ed: kept, and the step failed with its
 * outcome. */
static enum step_rc failed(struct job *j, struct inject_ctx *x)
{
	inject_result_finish(&x->res, &x->q, -1);
	if (keep(j, x) < 0)
		return pve_error_oom(job_err(j));
	return job_fail_outcome(j, x->res.ed.outcome,
				x->res.ed.error ? x->res.ed.error : "inject failed");
}

/* A step that ended the phases: the result kept, the step's summary. */
static enum step_rc ended(struct job *j, struct inject_ctx *x, enum step_rc rc)
{
	inject_result_finish(&x->res, &x->q, 0);
	if (keep(j, x) < 0)
		return pve_error_oom(job_err(j));
	job_summary(j, "%s", json_str(job_vars(j), "summary"));
	return rc;
}

static enum step_rc phase_ok(struct job *j, struct inject_ctx *x, const char *phase)
{
	if (keep(j, x) < 0)
		return pve_error_oom(job_err(j));
	char *sum = inject_phase_summary(phase, &x->res);
	job_summary(j, "%s", sum ? sum : "");
	free(sum);
	return STEP_RC_OK;
}

/* A session (this step may be the first of a resumed job). */
static int ensure_session(struct inject_ctx *x)
{
	if (x->s)
		return 0;
	struct ssh_error se = {0};
	if (ssh_connect(&x->gt.ssh, &x->s, &se) < 0) {
		x->s = NULL;
		gfedit_fail(&x->res.ed, "connect", NULL, &se, "%s", "");
		ssh_error_clear(&se);
		return -1;
	}
	x->own = true;
	return 0;
}

/* The guest's OS, detected in this process (a resumed job's later steps
 * need it: the hostname's files, the result's description). */
static int ensure_detected(struct inject_ctx *x)
{
	if (x->detected)
		return 0;
	if (ensure_session(x) < 0 || inject_detect(&x->q, x->s, &x->res) < 0)
		return -1;
	x->detected = true;
	return 0;
}

static enum step_rc st_connect(struct job *j)
{
	struct inject_ctx *x = job_ctx(j);
	char *herr = NULL;
	if (inject_check_hostname(x->q.name, &herr) < 0) {
		gfedit_fail(&x->res.ed, "plan", NULL, NULL, "%s", herr ? herr : "bad host name");
		x->res.ed.outcome = JOB_OUT_USAGE;
		free(herr);
		return failed(j, x);
	}
	if (ensure_session(x) < 0)
		return failed(j, x);
	job_summary(j, "%s", ssh_session_target(x->s));
	return STEP_RC_OK;
}

static enum step_rc st_detect(struct job *j)
{
	struct inject_ctx *x = job_ctx(j);
	x->detected = false;
	if (ensure_detected(x) < 0)
		return failed(j, x);
	return phase_ok(j, x, "detect");
}

static enum step_rc st_read(struct job *j)
{
	struct inject_ctx *x = job_ctx(j);
	if (ensure_detected(x) < 0)
		return failed(j, x);
	gfedit_free(&x->res.ed); /* nothing is written before the read ends */
	if (inject_collect(&x->q, &x->res) < 0 || gfedit_read(&x->res.ed, x->s) < 0)
		return failed(j, x);
	return phase_ok(j, x, "read");
}

static enum step_rc st_plan(struct job *j)
{
	struct inject_ctx *x = job_ctx(j);
	if (ensure_detected(x) < 0 || inject_plan(&x->q, &x->res) < 0)
		return failed(j, x);
	if (x->q.dry_run || x->res.ed.n_changed == 0)
		return ended(j, x, STEP_RC_END); /* nothing to write: done */
	return phase_ok(j, x, "plan");
}

/* The rollback: every file this job wrote put back (0), or some are not
 * (-1: the job needs attention; the result names them). */
static int restore(struct job *j, struct inject_ctx *x)
{
	int rc = gfedit_restore(&x->res.ed, &x->s, &x->own, &x->gt.ssh);
	inject_result_finish(&x->res, &x->q, -1);
	if (keep(j, x) < 0) {
		pve_error_oom(job_err(j));
		return -1;
	}
	return rc;
}

static enum step_rc st_write(struct job *j)
{
	struct inject_ctx *x = job_ctx(j);
	if (job_resumed(j)) {
		/* an earlier run may have written some of them: a failure now
		 * puts back every file this edit changes (the same text
		 * written again changes nothing) */
		for (size_t i = 0; i < x->res.ed.n_files; i++)
			x->res.ed.files[i].written |= x->res.ed.files[i].state == GF_PENDING;
	}
	if (ensure_detected(x) < 0)
		return failed(j, x);
	if (gfedit_write(&x->res.ed, x->s) < 0) {
		/* a failed step is not undone by the engine: put back here */
		enum step_rc rc = failed(j, x);
		if (restore(j, x) < 0)
			job_set_left(j, "%s", x->res.ed.error ? x->res.ed.error : "files changed");
		return rc;
	}
	return phase_ok(j, x, "write");
}

/* write's undo: the rollback. */
static int un_write(struct job *j)
{
	struct inject_ctx *x = job_ctx(j);
	return restore(j, x) < 0 ? -1 : 0;
}

static enum step_rc st_verify(struct job *j)
{
	struct inject_ctx *x = job_ctx(j);
	if (ensure_session(x) < 0 || gfedit_verify(&x->res.ed, x->s) < 0)
		return failed(j, x);
	if (ensure_detected(x) < 0)
		return failed(j, x);
	return ended(j, x, STEP_RC_OK);
}

static void inject_close(struct job *j, void *ctx)
{
	(void)j;
	struct inject_ctx *x = ctx;
	if (x->own)
		ssh_close(x->s);
	x->s = NULL;
	inject_result_free(&x->res);
	guest_target_free(&x->gt);
	tmpl_kvlist_free(&x->tvars);
}

static const struct job_step_def inject_steps[] = {
	{"connect", st_connect, NULL, 0},
	{"detect", st_detect, NULL, 0},
	{"read", st_read, NULL, 0},
	{"plan", st_plan, NULL, 0},
	{"write", st_write, un_write, 0},
	{"verify", st_verify, NULL, 0},
};

const struct job_workflow wf_inject = {
	.name = "inject",
	.params = &wf_inject_params_decl,
	.steps = inject_steps,
	.n_steps = sizeof inject_steps / sizeof *inject_steps,
	.ctx_size = sizeof(struct inject_ctx),
	.open = inject_open,
	.close = inject_close,
	.undo_on_failure = true,
};
