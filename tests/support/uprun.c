/* uprun.c - up and down run as the CLI runs them, for tests (uprun.h). */
#include "uprun.h"

#include "guestname.h"
#include "jobpool.h"
#include "up_check.h"

#include <stdlib.h>
#include <string.h>

/* n jobs of wf (params[i] for subjects[i]) submitted in an env made from
 * te, run, and their results taken into res. 0 when all ended done, -1
 * when any did not, or when one could not be made (err; then none ran
 * and res is left empty). */
static int run(const struct test_up_env *te, bool dry_run, const struct job_workflow *wf,
	       const char *const *subjects, json_object **params, size_t n,
	       struct up_result *res, struct pve_error *err)
{
	struct job_env env = {
		.store = dry_run ? NULL : te->store,
		.clock = te->wait.clock,
		.on_event = te->on_event,
		.event_ctx = te->event_ctx,
		.stop = te->stop,
		.conf = te->conf,
		.wait = te->wait,
	};
	struct job **jobs = calloc(n ? n : 1, sizeof *jobs);
	if (!jobs || job_env_init(&env) < 0) {
		free(jobs);
		return pve_error_oom(err);
	}
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		if (!params[i])
			rc = pve_error_oom(err);
		else if (job_submit(&env, wf, subjects[i], params[i], &jobs[i], err) < 0)
			rc = -1;
	if (rc == 0)
		jobpool_run_jobs(jobs, n, te->parallel, te->pve_opts, te->client);
	bool failed = false;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (wf_result_take(jobs[i], &res[i]) < 0)
			rc = pve_error_oom(err);
		failed |= res[i].outcome != JOB_OUT_DONE;
	}
	rc = rc < 0 || failed ? -1 : 0;
	for (size_t i = 0; i < n; i++)
		job_free(jobs[i]);
	free(jobs);
	job_env_fini(&env);
	return rc;
}

int test_up_run(const struct up_request *req, const struct test_up_env *env,
		struct up_result **results, struct pve_error *err)
{
	*results = NULL;
	if (up_request_check(req, env->conf, err) < 0)
		return -1;
	struct up_result *res = calloc(req->n_names, sizeof *res);
	json_object **params = calloc(req->n_names, sizeof *params);
	int rc = res && params ? 0 : pve_error_oom(err);
	for (size_t i = 0; rc == 0 && i < req->n_names; i++)
		params[i] = wf_up_params(req, req->names[i]);
	if (rc == 0)
		rc = run(env, req->dry_run, &wf_up, req->names, params, req->n_names, res, err);
	for (size_t i = 0; params && i < req->n_names; i++)
		json_object_put(params[i]);
	free(params);
	/* made jobs give results, failed or not */
	if (res && res[0].name)
		*results = res;
	else
		up_results_free(res, req->n_names);
	return rc;
}

int test_down_run(const char *name, bool purge, bool dry_run, const struct test_up_env *env,
		  struct up_result *res)
{
	memset(res, 0, sizeof *res);
	const char *why;
	if (!guest_arg_is_vmid(name, NULL) && !guest_name_valid(name, &why)) {
		res->name = strdup(name);
		pve_error_set(&res->error, PVE_ERR_CONFIG, "guest name '%s': %s", name, why);
		res->outcome = JOB_OUT_USAGE;
		return -1;
	}
	json_object *params = wf_down_params(purge, dry_run);
	struct pve_error err = {0};
	int rc = run(env, dry_run, &wf_down, &name, &params, 1, res, &err);
	json_object_put(params);
	if (!res->name) { /* no job: the error it could not be made with */
		res->name = strdup(name);
		res->error = err;
		res->outcome = pve_error_outcome(&err);
	} else {
		pve_error_clear(&err);
	}
	return rc;
}
