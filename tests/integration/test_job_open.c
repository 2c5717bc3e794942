/* test_job_open.c - jobs that describe themselves: a job made by one
 * process and never run there is run by another from the store alone
 * (job_load + job_run, a fresh env with the configuration and a PVE
 * client, no launcher state): migrate, drain and undrain against the
 * simulator (drain.json, simulated time), and bench and inject against a
 * real sshd guest (cliworld.h), whose results come back from the job's
 * vars (bench's with the figures of the run before). up and down: in
 * test_job.c; virtio: pvagentd's start-up resume in test_daemon.c. */
#include <criterion/criterion.h>

#include "clirun.h"
#include "cliworld.h"
#include "conf.h"
#include "job.h"
#include "json.h"
#include "migfx.h"
#include "workflows.h"
#include "store.h"
#include "util.h"
#include "wf_bench.h"
#include "wf_drain.h"
#include "wf_inject.h"
#include "wf_migrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct cli_world cw;

static void cleanup(void)
{
	cli_world_cleanup(&cw);
}

TestSuite(job_open, .fini = cleanup, .timeout = 240);

static char *temp_dir(void)
{
	char tmpl[] = "/tmp/pvagent-test-jobopen.XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	return strdup(tmpl);
}

/* Make a job of wf on subject with params in its own env (as a launcher
 * in another process would) and leave it queued: its ID. */
static long long made_elsewhere(struct store *st, const struct conf *c,
				const struct job_workflow *wf, const char *subject,
				json_object *params)
{
	struct job_env env = {.store = st, .conf = c};
	cr_assert_eq(job_env_init(&env), 0);
	struct job *j = NULL;
	struct pve_error e = {0};
	cr_assert_not_null(params);
	cr_assert_eq(job_new(&env, wf, subject, params, &j, &e), 0, "%s",
		     e.message ? e.message : "");
	json_object_put(params);
	long long id = job_id(j);
	job_free(j);
	job_env_fini(&env);
	return id;
}

/* Load job id by its stored workflow's name and run it in env with c. */
static struct job *load_and_run(struct job_env *env, long long id, const char *workflow,
				struct pve *c, enum job_outcome *out)
{
	const struct job_workflow *wf = job_workflow_find(workflow);
	cr_assert_not_null(wf, "%s", workflow);
	struct job *j = NULL;
	struct pve_error e = {0};
	cr_assert_eq(job_load(env, id, wf, &j, &e), 1, "%s", e.message ? e.message : "");
	*out = job_run(j, c);
	return j;
}

Test(job_open, migrate_drain_and_undrain_run_from_the_store_alone)
{
	struct migfx f;
	cr_assert_eq(migfx_start(&f, "tests/pvesim/scenarios/drain.json", NULL, true), 0);
	char *dir = temp_dir(), *path = store_path(dir), *err = NULL;
	struct store *st = NULL;
	cr_assert_eq(store_open(path, &st, &err), 0, "%s", err ? err : "");
	long long mig = made_elsewhere(st, &f.conf, &wf_migrate, "web1",
				       wf_migrate_params("pve3", NULL, 0, 0, false));
	long long drain = made_elsewhere(st, &f.conf, &wf_drain, "pve1",
					 wf_drain_params(NULL, 0, 2, 0, true, false, 0));
	f.env.store = st;
	enum job_outcome o;
	struct job *j = load_and_run(&f.env, mig, "migrate", f.c, &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_assert_str_eq(json_str(job_vars(j), "method"), "online");
	job_free(j);
	j = load_and_run(&f.env, drain, "drain", f.c, &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	json_object *moves = NULL;
	cr_assert(json_object_object_get_ex(job_vars(j), "moves", &moves));
	size_t moved = 0;
	for (size_t i = 0; i < json_object_array_length(moves); i++)
		moved += strcmp(json_str(json_object_array_get_idx(moves, i), "status"), "moved") == 0;
	cr_assert_eq(moved, 8, "the drain moved what it planned (web1 was gone already)");
	job_free(j);
	long long undrain = made_elsewhere(st, &f.conf, &wf_undrain, "pve1",
					   wf_drain_params(NULL, 0, 2, 0, false, false, 0));
	j = load_and_run(&f.env, undrain, "undrain", f.c, &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	job_free(j);
	char node[32], tags[128];
	simproc_guest(&f.sp, 304, node, sizeof node, "tags", tags, sizeof tags);
	cr_assert_str_eq(node, "pve1", "the undrain brought it home");
	simproc_guest(&f.sp, 303, node, sizeof node, "tags", tags, sizeof tags);
	cr_assert_str_eq(node, "pve3", "web1 moved by hand, not by the drain, stays");
	store_close(st);
	cr_assert_eq(migfx_stop(&f), 0);
	char *cmd = strprintf("rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	free(path);
	free(dir);
}

Test(job_open, bench_runs_from_the_store_alone_and_its_result_is_in_its_vars)
{
	cli_world_start(&cw, "127.0.1.153", NULL);
	char *out = NULL;
	/* a first run by the tool: its figures are the "before" of the next */
	int rc = cli_pv(&cw, &out, "bench", "cli1", "--address", cw.ge.sd.addr, "--size", "8",
			NULL);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "MB/s") || strstr(out, "MiB/s"), "%s", out);
	free(out);
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(cw.conf, &c, &err), 0, "%s", err ? err : "");
	char *path = store_path(c.paths.state);
	struct store *st = NULL;
	cr_assert_eq(store_open(path, &st, &err), 0, "%s", err ? err : "");
	struct target_req treq = {.name = "cli1", .address = cw.ge.sd.addr};
	long long id = made_elsewhere(st, &c, &wf_bench, "cli1", wf_bench_params(&treq, 8));
	struct pve_opts po = job_conf_pve_opts(&c);
	struct pve_error e = {0};
	struct pve *pc = pve_new(&po, &e);
	cr_assert_not_null(pc, "%s", e.message ? e.message : "");
	struct job_env env = {.store = st, .conf = &c};
	cr_assert_eq(job_env_init(&env), 0);
	enum job_outcome o;
	struct job *j = load_and_run(&env, id, "bench", pc, &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	cr_assert_eq(job_vmid(j), 150);
	struct bench_result now = {0}, before = {0};
	bool have_before = false;
	cr_assert_eq(wf_bench_result(j, &now, &before, &have_before, &err), 1, "%s",
		     err ? err : "");
	cr_assert_eq(now.size_mib, 8);
	cr_assert(now.n_figs > 0);
	cr_assert(have_before, "the run before (the tool's) is in the vars");
	cr_assert_eq(before.size_mib, 8);
	bench_result_free(&now);
	bench_result_free(&before);
	job_free(j);
	/* inject the same way: its result in its vars */
	id = made_elsewhere(st, &c, &wf_inject, "cli1", wf_inject_params(&treq, false));
	j = load_and_run(&env, id, "inject", pc, &o);
	cr_assert_eq(o, JOB_OUT_DONE, "%s", job_error(j)->message ? job_error(j)->message : "");
	const char *sum = json_str(job_vars(j), "summary");
	cr_assert(sum && strstr(sum, "changed: FreeBSD 14.1") && strstr(sum, "/etc/rc.conf"), "%s",
		  sum ? sum : "(none)");
	json_object *res = NULL;
	cr_assert(json_object_object_get_ex(job_vars(j), "result", &res));
	cr_assert_str_eq(json_str(res, "status"), "changed");
	job_free(j);
	/* a bad stored size is the job's own refusal, not a crash */
	json_object *bad = wf_bench_params(&treq, 0);
	json_object_object_add(bad, "size_mib", json_object_new_string("huge"));
	id = made_elsewhere(st, &c, &wf_bench, "cli1", bad);
	j = load_and_run(&env, id, "bench", pc, &o);
	cr_assert_eq(o, JOB_OUT_USAGE);
	cr_assert(strstr(job_error(j)->message, "size_mib"), "%s", job_error(j)->message);
	job_free(j);
	job_env_fini(&env);
	pve_free(pc);
	store_close(st);
	free(path);
	conf_free(&c);
	cli_world_stop(&cw);
}
