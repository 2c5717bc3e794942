/* wf_down.c - the `down` workflow on the job engine: find the guest,
 * shut it down (stop after the timeout), delete it. A guest that does not
 * exist counts as done. */
#include "wf_up.h"

#include "json.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct down_ctx {
	struct up_result *res;     /* attached, or own_res */
	struct up_result own_res;
	struct guest_ref g;
	bool purge, dry_run;
};

json_object *wf_down_params(bool purge, bool dry_run)
{
	json_object *o = json_object_new_object();
	if (o && (json_object_object_add(o, "purge", json_object_new_boolean(purge)) < 0 ||
		  json_object_object_add(o, "dry_run", json_object_new_boolean(dry_run)) < 0)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

void wf_down_attach(struct job *j, struct up_result *res)
{
	struct down_ctx *d = job_ctx(j);
	d->res = res;
}

const struct up_result *wf_down_result(struct job *j)
{
	struct down_ctx *d = job_ctx(j);
	wf_result_finish(j, d->res);
	return d->res;
}

static int down_open(struct job *j, void *ctx)
{
	struct down_ctx *d = ctx;
	long long v = 0;
	d->purge = json_int(job_params(j), "purge", &v) && v;
	d->dry_run = json_int(job_params(j), "dry_run", &v) && v;
	if (!d->res) {
		d->res = &d->own_res;
		if (!(d->res->name = strdup(job_subject(j))))
			return pve_error_oom(job_err(j));
	}
	json_object *vars = job_vars(j);
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
	if (d->res == &d->own_res)
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
	return STEP_RC_OK;
}

static const struct job_step_def down_steps[] = {
	{"find", down_find, NULL, 0},
	{"shutdown", down_shutdown, NULL, JOB_STEP_TASK},
	{"delete", down_delete, NULL, JOB_STEP_TASK},
};

const struct job_workflow wf_down = {
	.name = "down",
	.steps = down_steps,
	.n_steps = sizeof down_steps / sizeof *down_steps,
	.ctx_size = sizeof(struct down_ctx),
	.open = down_open,
	.close = down_close,
};
