/* wf_down.c - the `down` workflow on the job engine: find the guest,
 * shut it down (stop after the timeout), delete it, and end the guest's
 * other unfinished jobs. A guest that does not exist is not found (exit 2),
 * except to a resumed job, for which it is done: an earlier run may have
 * deleted it. */
#include "wf_up.h"
#include "wf_params.h"

#include "json.h"
#include "log.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct down_ctx {
	struct up_result own_res;  /* wf_result_take takes it */
	struct up_result *res;     /* &own_res, once opened */
	struct guest_ref g;
	bool purge, dry_run;
};

json_object *wf_down_params(bool purge, bool dry_run)
{
	const struct job_params_decl *d = &wf_down_params_decl;
	json_object *o = json_object_new_object();
	if (o && (job_param_set_bool(d, o, "purge", purge) < 0 ||
		  job_param_set_bool(d, o, "dry_run", dry_run) < 0)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

struct up_result *wf_down_own_result(struct job *j)
{
	struct down_ctx *d = job_ctx(j);
	return &d->own_res;
}

static int down_open(struct job *j, void *ctx)
{
	struct down_ctx *d = ctx;
	d->purge = job_param_bool(j, "purge");
	d->dry_run = job_param_bool(j, "dry_run");
	d->res = &d->own_res;
	if (!(d->res->name = strdup(job_subject(j))))
		return pve_error_oom(job_err(j));
	json_object *vars = job_vars(j);
	long long v = 0;
	if (json_int(vars, "vmid", &v)) {
		/* resumed: the guest the find step found */
		const char *node = json_str(vars, "node"), *type = json_str(vars, "type");
		d->g.vmid = (int)v;
		if (type)
			guest_type_parse(type, &d->g.type);
		if ((node && !(d->g.node = strdup(node))) || !(d->g.name = strdup(job_subject(j))))
			return pve_error_oom(job_err(j));
		d->res->vmid = d->g.vmid;
		d->res->type = d->g.type;
		free(d->res->node);
		d->res->node = node ? strdup(node) : NULL;
	}
	return 0;
}

static void down_close(struct job *j, void *ctx)
{
	struct down_ctx *d = ctx;
	up_result_free(&d->own_res);
	guest_ref_clear(&d->g);
}

/* --dry-run: what the shutdown and delete steps would do. */
static enum step_rc down_plan(struct job *j, struct down_ctx *d)
{
	struct up_result *r = d->res;
	const char *kind = d->g.type == GUEST_QEMU ? "VM" : "container";
	bool running = d->g.status && strcmp(d->g.status, "running") == 0;
	char *lines[2] = {
		running ? strprintf("shut down %s %d on %s (stopped when the shutdown times out)",
				    kind, d->g.vmid, d->g.node ? d->g.node : "?")
			: strprintf("leave %s %d %s (no shutdown needed)", kind, d->g.vmid,
				    d->g.status ? d->g.status : "as it is"),
		strprintf("delete %s %d and its disks%s", kind, d->g.vmid,
			  d->purge ? ", and remove it from backup jobs, replication and HA" : ""),
	};
	free(r->plan);
	r->plan = calloc(2, sizeof *r->plan);
	r->n_plan = 0;
	for (size_t i = 0; i < 2; i++) {
		if (!lines[i] || !r->plan) {
			free(lines[i]);
			continue;
		}
		job_note(j, "would %s", lines[i]);
		r->plan[r->n_plan++] = lines[i];
	}
	if (r->n_plan < 2 || job_set_bool(j, "planned", true) < 0) {
		pve_error_oom(job_err(j));
		return STEP_RC_FAIL;
	}
	return STEP_RC_END;
}

/* The workflows whose subject is a guest (its name or VMID), but down:
 * another unfinished down of the guest is left to complete (its rerun
 * finds the guest gone and ends done). */
static bool guest_workflow(const char *wf)
{
	static const char *const names[] = {"up", "inject", "virtio", "bench", "migrate"};
	for (size_t i = 0; wf && i < sizeof names / sizeof *names; i++)
		if (strcmp(wf, names[i]) == 0)
			return true;
	return false;
}

/* Is sj a job on the guest this down removed (or found absent): its
 * subject the name, or the VMID either way (subject or vars)? */
static bool same_guest(const struct store_job *sj, const char *name, int vmid)
{
	int v = 0;
	if (name && strcasecmp(sj->subject, name) == 0)
		return true;
	if (vmid && guest_arg_is_vmid(sj->subject, &v) && v == vmid)
		return true;
	json_object *vars = vmid && sj->vars ? json_tokener_parse(sj->vars) : NULL;
	long long vv = 0;
	bool hit = vars && json_int(vars, "vmid", &vv) && vv == vmid;
	json_object_put(vars);
	return hit;
}

/* The guest is gone: its other unfinished jobs (an interrupted up, a
 * needs-attention virtio, ...) end as cancelled, so that nothing resumes
 * them against a guest that no longer exists. One another process runs is
 * left to it. A failure here is said and does not fail the down. */
static void end_guest_jobs(struct job *j, const char *why)
{
	struct down_ctx *d = job_ctx(j);
	struct store *st = job_env(j)->store;
	struct store_job *v = NULL;
	size_t n = 0;
	char *err = NULL;
	if (!st)
		return;
	if (store_jobs_unfinished(st, &v, &n, &err) < 0) {
		log_warn("%s: cannot read the unfinished jobs: %s", job_subject(j),
			 err ? err : "store");
		free(err);
		return;
	}
	char *msg = strprintf("guest %s by down job %lld", why, job_id(j));
	for (size_t i = 0; msg && i < n; i++) {
		if (v[i].id == job_id(j) || !guest_workflow(v[i].workflow) ||
		    !(same_guest(&v[i], job_subject(j), d->g.vmid) ||
		      (d->g.name && same_guest(&v[i], d->g.name, 0))))
			continue;
		int r = job_cancel_stored(st, &v[i], msg, &err);
		if (r == 1)
			job_note(j, "%s job %lld on %s ended: its %s", v[i].workflow, v[i].id,
				 v[i].subject, msg);
		else if (r == 0)
			log_warn("%s: %s job %lld runs in another process; left to it",
				 job_subject(j), v[i].workflow, v[i].id);
		else
			log_warn("%s: %s job %lld: %s", job_subject(j), v[i].workflow, v[i].id,
				 err ? err : "store");
		free(err);
		err = NULL;
	}
	free(msg);
	store_jobs_free(v, n);
}

static enum step_rc down_find(struct job *j)
{
	struct down_ctx *d = job_ctx(j);
	struct pve_error *err = job_err(j);
	int found = guest_find(job_pve(j), job_subject(j), &d->g, err);
	if (found < 0)
		return STEP_RC_FAIL;
	if (!found) {
		if (job_set_bool(j, "deleted", false) < 0)
			return pve_error_oom(err);
		if (!d->dry_run)
			end_guest_jobs(j, "absent when checked");
		/* resumed: an earlier run of this job may have removed it */
		if (!job_resumed(j)) {
			guest_not_found(job_subject(j), err);
			return STEP_RC_FAIL;
		}
		job_summary(j, "does not exist");
		return STEP_RC_END;
	}
	d->res->vmid = d->g.vmid;
	d->res->type = d->g.type;
	if (d->g.name && guest_arg_is_vmid(job_subject(j), NULL)) {
		char *nm = strdup(d->g.name); /* given by VMID: its name */
		if (!nm)
			return pve_error_oom(err);
		free(d->res->name);
		d->res->name = nm;
	}
	free(d->res->node);
	d->res->node = d->g.node ? strdup(d->g.node) : NULL;
	if (job_set_guest(j, d->g.vmid, d->g.node) < 0 ||
	    job_set_str(j, "type", guest_type_name(d->g.type)) < 0)
		return pve_error_oom(err);
	if (d->g.template)
		return job_fail(j, PVE_ERR_CONFIG,
				"'%s' (VMID %d) is a template VM; pvagent does not delete templates",
				job_subject(j), d->g.vmid);
	job_summary(j, "exists");
	return d->dry_run ? down_plan(j, d) : STEP_RC_OK;
}

static enum step_rc down_shutdown(struct job *j)
{
	struct down_ctx *d = job_ctx(j);
	struct pve_error *err = job_err(j);
	bool forced = false;
	if (guest_shutdown(job_pve(j), &d->g, job_wait(j), &forced, err) < 0) {
		if (err->kind != PVE_ERR_NOT_FOUND)
			return STEP_RC_FAIL;
		pve_error_clear(err); /* someone else removed it */
	}
	job_summary(j, "%s", forced ? "stopped (shutdown timed out)" : "stopped");
	return STEP_RC_OK;
}

static enum step_rc down_delete(struct job *j)
{
	struct down_ctx *d = job_ctx(j);
	bool deleted = false;
	if (guest_delete(job_pve(j), &d->g, d->purge, job_wait(j), &deleted, job_err(j)) < 0)
		return STEP_RC_FAIL;
	if (job_set_bool(j, "deleted", deleted) < 0)
		return pve_error_oom(job_err(j));
	job_summary(j, "%s", deleted ? "deleted" : "already gone");
	end_guest_jobs(j, "removed");
	return STEP_RC_OK;
}

static const struct job_step_def down_steps[] = {
	{"find", down_find, NULL, 0},
	{"shutdown", down_shutdown, NULL, JOB_STEP_TASK},
	{"delete", down_delete, NULL, JOB_STEP_TASK},
};

const struct job_workflow wf_down = {
	.name = "down",
	.params = &wf_down_params_decl,
	.steps = down_steps,
	.n_steps = sizeof down_steps / sizeof *down_steps,
	.ctx_size = sizeof(struct down_ctx),
	.open = down_open,
	.close = down_close,
};
