/* up_result.c - the result of an `up` or `down` job (up_result.h): its
 * status names, JSON form and the worst outcome of a set. */
#include "up_result.h"

#include "json.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

const char *up_status_name(enum up_status s)
{
	switch (s) {
	case UP_FAILED: return "failed";
	case UP_CREATED: return "created";
	case UP_CONVERGED: return "converged";
	case UP_UNCHANGED: return "unchanged";
	case UP_DELETED: return "deleted";
	case UP_ABSENT: return "absent";
	case UP_PLANNED: return "planned";
	}
	return "?";
}

const char *up_result_word(const struct up_result *r)
{
	return r->outcome == JOB_OUT_NEEDS_ATTENTION ? "needs attention"
						     : up_status_name(r->status);
}

json_object *up_result_json(const struct up_result *r)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "name", json_object_new_string(r->name ? r->name : ""));
	json_object_object_add(o, "status", json_object_new_string(up_status_name(r->status)));
	json_object_object_add(o, "vmid", r->vmid ? json_object_new_int(r->vmid) : NULL);
	json_object_object_add(o, "node", r->node ? json_object_new_string(r->node) : NULL);
	json_object_object_add(o, "type", json_object_new_string(guest_type_name(r->type)));
	json_object_object_add(o, "address", r->address ? json_object_new_string(r->address) : NULL);
	json_object *steps = json_object_new_object();
	for (size_t i = 0; i < r->n_steps; i++)
		json_object_object_add(steps, r->steps[i].step,
				       json_object_new_double(r->steps[i].elapsed_s));
	json_object_object_add(o, "steps", steps);
	json_object *diff = json_object_new_array();
	for (size_t i = 0; i < r->n_diff; i++)
		json_object_array_add(diff, json_object_new_string(r->diff[i]));
	json_object_object_add(o, "changes", diff);
	if (r->status == UP_PLANNED) {
		json_object *plan = json_object_new_array();
		for (size_t i = 0; i < r->n_plan; i++)
			json_object_array_add(plan, json_object_new_string(r->plan[i]));
		json_object_object_add(o, "plan", plan);
	}
	json_object_object_add(o, "pending", r->pending ? json_object_new_string(r->pending) : NULL);
	json_object *inj = NULL;
	if (r->inject.ran) {
		inj = json_object_new_object();
		json_object_object_add(inj, "status",
				       json_object_new_string(inject_status_name(r->inject.status)));
		json_object_object_add(inj, "outcome",
				       json_object_new_string(job_outcome_name(r->inject.outcome)));
		json_object_object_add(inj, "summary", r->inject.summary
				       ? json_object_new_string(r->inject.summary) : NULL);
		if (r->inject.failed_step)
			json_object_object_add(inj, "failed_step",
					       json_object_new_string(r->inject.failed_step));
	}
	json_object_object_add(o, "inject", inj);
	if (r->job)
		json_object_object_add(o, "job", json_object_new_int64(r->job));
	json_object_object_add(o, "outcome", json_object_new_string(job_outcome_name(r->outcome)));
	if (r->left)
		json_object_object_add(o, "left", json_object_new_string(r->left));
	return o;
}

void up_result_free(struct up_result *r)
{
	if (!r)
		return;
	free(r->name);
	free(r->node);
	free(r->address);
	free(r->pending);
	free(r->inject.summary);
	free(r->inject.failed_step);
	free(r->left);
	free(r->failed_step);
	for (size_t i = 0; i < r->n_steps; i++)
		free(r->steps[i].step);
	free(r->steps);
	for (size_t i = 0; i < r->n_diff; i++)
		free(r->diff[i]);
	free(r->diff);
	for (size_t i = 0; i < r->n_plan; i++)
		free(r->plan[i]);
	free(r->plan);
	pve_error_clear(&r->error);
	memset(r, 0, sizeof *r);
}

void up_results_free(struct up_result *r, size_t n)
{
	if (!r)
		return;
	for (size_t i = 0; i < n; i++)
		up_result_free(&r[i]);
	free(r);
}

enum job_outcome up_results_outcome(const struct up_result *r, size_t n)
{
	enum job_outcome worst = JOB_OUT_DONE;
	for (size_t i = 0; i < n; i++)
		worst = job_outcome_worse(worst, r[i].outcome);
	return worst;
}
