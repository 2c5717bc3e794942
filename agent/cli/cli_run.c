/* cli_run.c - the one runner of a job command's jobs in this process: the
 * jobs its handler appended (cli_job_add) made in one env (cli_run_here),
 * or the job `resume` loaded, run at most parallel at once and printed by
 * the command's renderer (cli_run_jobs); pvagentd's children run theirs
 * through `resume` too. */
#include "cli.h"

#include "jobpool.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>

int cli_job_add(struct cli *cli, const char *subject, json_object *params)
{
	struct cli_jobs *s = cli->jobs;
	json_object *o = params ? json_object_new_object() : NULL;
	if (o && json_object_object_add(o, "params", params) == 0)
		params = NULL; /* o's */
	if (!o || params ||
	    json_object_object_add(o, "subject", json_object_new_string(subject)) < 0 ||
	    json_object_array_add(s->jobs, o) < 0) {
		json_object_put(params);
		json_object_put(o);
		fprintf(stderr, "pvagent %s: out of memory\n", s->wf ? s->wf->name : "");
		return 1;
	}
	return 0;
}

void cli_jobs_attach(struct cli *cli, void (*attach)(struct job *j, void *ctx),
		     void (*done)(void *ctx), void *ctx)
{
	cli->jobs->attach = attach;
	cli->jobs->done = done;
	cli->jobs->ctx = ctx;
}

int cli_jobs_env(struct cli *cli, const struct job_workflow *wf, bool dry_run,
		 struct event_print *pp, struct job_env *env)
{
	const struct cmd_entry *e = cli_command_of(wf);
	*pp = (struct event_print){.cli = cli, .tty = !cli->json && cli_stdout_tty(),
				   .dry_run = dry_run,
				   .file_diffs = dry_run || (e && (e->flags & CMD_DIFFS))};
	if (cli_job_env(cli, pp, env) < 0)
		return -1;
	if (dry_run)
		env->store = NULL; /* a dry run is not kept */
	if (e && (e->flags & CMD_MIGRATES))
		env->wait.task_timeout_s = cli->conf.migrate.timeout;
	return 0;
}

/* What the one who runs a job adds before it is stored, as pvagentd does
 * for what it is sent (submit_check.c): its own public key for a workflow
 * that takes one (up's ${pubkey}), then the workflow's own check of what
 * the params say together. 0, or -1 with err. */
static int complete_params(struct cli *cli, const struct job_workflow *wf, const char *subject,
			   json_object *params, struct pve_error *err)
{
	const struct job_params_decl *d = wf->params;
	if (d && job_param_find(d, "pubkey")) {
		char *key = conf_read_pubkey(&cli->conf);
		int r = key ? job_param_set_str(d, params, "pubkey", key) : 0;
		free(key);
		if (r < 0)
			return pve_error_oom(err);
	}
	return d && d->check ? d->check(subject, params, &cli->conf, err) : 0;
}

int cli_run_jobs(struct cli *cli, const struct job_workflow *wf, struct job **jobs, size_t n,
		 unsigned parallel)
{
	const struct cmd_entry *e = cli_command_of(wf);
	struct event_print *pp = job_env(jobs[0])->event_ctx;
	parallel = parallel ? parallel : 1;
	const char **names = calloc(n, sizeof *names);
	for (size_t i = 0; names && i < n; i++)
		names[i] = job_subject(jobs[i]);
	if (names)
		cli_progress_waiting(pp, names, n, parallel);
	free(names);
	struct pve_opts po = job_conf_pve_opts(&cli->conf);
	bool own = (e && (e->flags & CMD_OWN_CLIENT)) || (parallel > 1 && n > 1);
	enum job_outcome o = jobpool_run_jobs(jobs, n, parallel, &po, own ? NULL : cli->pve);
	end_progress_line(pp);
	int code = cli_exit_code(o);
	/* a guest command's job that ended before it found its guest: its
	 * error, said as any command says it (up and down always give their
	 * guests' results) */
	long long gv = 0;
	if (cli->json && code && n == 1 && !(e && (e->flags & CMD_GUESTS)) &&
	    job_error(jobs[0])->kind == PVE_ERR_NOT_FOUND && !json_int(job_vars(jobs[0]), "vmid", &gv)) {
		struct pve_error e2 = {0};
		const struct pve_error *je = job_error(jobs[0]);
		pve_error_set(&e2, je->kind, "%s", je->message ? je->message : "not found");
		cli->subject = job_subject(jobs[0]);
		return cli_fail_pve(cli, wf->name, &e2);
	}
	return e && e->render ? e->render(cli, jobs, n, code) : code;
}

static const char *subject_of(const struct cli_jobs *jobs, size_t i)
{
	return json_str(json_object_array_get_idx(jobs->jobs, i), "subject");
}

static json_object *params_of(const struct cli_jobs *jobs, size_t i)
{
	return json_object_object_get(json_object_array_get_idx(jobs->jobs, i), "params");
}

int cli_run_here(struct cli *cli, const struct cmd_entry *e, struct cli_jobs *jobs)
{
	size_t n = json_object_array_length(jobs->jobs);
	int rc = e->flags & CMD_OWN_CLIENT ? cli_load_conf(cli) : cli_connect_pve(cli);
	if (rc)
		return rc;
	bool dry = false;
	for (size_t i = 0; i < n; i++)
		dry = dry || json_flag(params_of(jobs, i), "dry_run");
	struct event_print pp;
	struct job_env env;
	struct job **made = calloc(n, sizeof *made);
	if (!made || cli_jobs_env(cli, e->wf, dry, &pp, &env) < 0) {
		free(made);
		fprintf(stderr, "pvagent %s: out of memory\n", e->name);
		return 1;
	}
	if (jobs->not_kept)
		env.store = NULL;
	/* every job's params completed and checked before any is stored */
	struct pve_error err = {0};
	size_t k = 0;
	while (k < n && complete_params(cli, e->wf, subject_of(jobs, k), params_of(jobs, k),
					&err) == 0)
		k++;
	if (k == n)
		for (k = 0; k < n; k++) {
			if (job_submit(&env, e->wf, subject_of(jobs, k), params_of(jobs, k), &made[k],
				       &err) < 0)
				break;
			if (jobs->attach)
				jobs->attach(made[k], jobs->ctx);
		}
	if (k < n) {
		cli->subject = subject_of(jobs, k);
		rc = cli_fail_pve(cli, e->name, &err);
	} else {
		rc = cli_run_jobs(cli, e->wf, made, n, jobs->parallel);
	}
	for (size_t i = 0; i < n; i++)
		job_free(made[i]);
	free(made);
	pve_error_clear(&err);
	job_env_fini(&env);
	return rc;
}
