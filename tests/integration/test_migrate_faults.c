/* test_migrate_faults.c - faults after a migration started: every read a
 * migrate job (a drain's child, with its home tag to set) sends after its
 * POST .../migrate has its UPID - the task's status and log, the guest on
 * the target, its config there - with each fault kind a GET can meet
 * (500, 502, 503, 504, 596, reset, a delay past the client's timeout),
 * once and then for good. The job ends done (the read retried), or needs
 * attention with the job resumable, and a resume then finishes it: the
 * guest on its target with its home tag, the migration sent once. It
 * never fails cleanly with the guest moved. The same for a rerun of the
 * request after a resume was not used: the guest found on its target gets
 * its home tag. */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "job.h"
#include "json.h"
#include "migfx.h"
#include "store.h"
#include "util.h"
#include "wf_migrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <regex.h>
#include <unistd.h>

#define SCEN "tests/pvesim/scenarios/migrate.json"
#define VMID 100
#define CLIENT_TIMEOUT_MS 1500

struct get_fault {
	const char *name;
	const char *action; /* the rule's action members */
	bool for_good;      /* also tried on every read from the task's start */
};

static const struct get_fault kinds[] = {
	{"500", "\"action\":\"status\",\"status\":500,\"message\":\"internal error\"", true},
	{"502", "\"action\":\"status\",\"status\":502,\"message\":\"bad gateway\"", true},
	{"503", "\"action\":\"status\",\"status\":503,\"message\":\"unavailable\"", true},
	{"504", "\"action\":\"status\",\"status\":504,\"message\":\"gateway timeout\"", true},
	{"596", "\"action\":\"timeout\"", true},
	{"reset", "\"action\":\"reset\"", true},
	{"delay", "\"action\":\"delay\",\"ms\":2500", false},
};

struct fx {
	struct migfx f;
	char dir[64];
	struct store *st;
	const char *arm;   /* a rule armed when the plan step ends (for good) */
};

static struct fx *armed;

/* The plan step's end: the next request of the job is the migration's
 * (the downtime step has nothing to do), so a rule armed now meets only
 * reads that come with or after it. */
static void arm_on_plan(void *ctx, const struct job_event *ev)
{
	(void)ctx;
	if (armed && armed->arm && ev->kind == JOB_EV_STEP && ev->step &&
	    strcmp(ev->step, "plan") == 0) {
		cr_assert_eq(simproc_fault(&armed->f.sp, armed->arm), 0, "%s", armed->arm);
		armed->arm = NULL;
	}
}

static void fx_start(struct fx *x)
{
	memset(x, 0, sizeof *x);
	cr_assert_eq(migfx_start(&x->f, SCEN, NULL, true), 0, "simulator did not start");
	/* a delay past this is a timeout */
	pve_free(x->f.c);
	x->f.opts.timeout_ms = CLIENT_TIMEOUT_MS;
	struct pve_error e = {0};
	cr_assert_not_null(x->f.c = pve_new(&x->f.opts, &e));
	snprintf(x->dir, sizeof x->dir, "/tmp/test_migfault.XXXXXX");
	cr_assert_not_null(mkdtemp(x->dir));
	char *path = strprintf("%s/state.db", x->dir), *err = NULL;
	cr_assert_eq(store_open(path, &x->st, &err), 0, "%s", err ? err : "?");
	free(path);
	job_env_fini(&x->f.env);
	x->f.env.store = x->st;
	x->f.env.on_event = arm_on_plan;
	cr_assert_eq(job_env_init(&x->f.env), 0);
	armed = x;
}

static void fx_stop(struct fx *x)
{
	armed = NULL;
	job_env_fini(&x->f.env);
	x->f.env.store = NULL;
	store_close(x->st);
	char *cmd = strprintf("rm -rf '%s'", x->dir);
	cr_expect_eq(system(cmd), 0);
	free(cmd);
	cr_assert_eq(migfx_stop(&x->f), 0, "simulator did not exit cleanly");
}

/* web1 to pve2 as a drain's child: its home tag to set. */
static json_object *params(void)
{
	json_object *p = wf_migrate_params("pve2", NULL, 0, 0, false);
	cr_assert_not_null(p);
	json_object_object_add(p, "home", json_object_new_string("pve1"));
	return p;
}

/* Submit the request (an unfinished job of it is resumed) and run it. */
static enum job_outcome run(struct fx *x, long long *id, char **msg)
{
	json_object *p = params();
	struct job *j = NULL;
	struct pve_error e = {0};
	cr_assert_eq(job_submit(&x->f.env, &wf_migrate, "web1", p, &j, &e), 0, "%s",
		     e.message ? e.message : "?");
	json_object_put(p);
	enum job_outcome o = job_run(j, x->f.c);
	*id = job_id(j);
	free(*msg);
	*msg = pve_error_format(job_error(j));
	if (job_left(j)) {
		char *both = strprintf("%s [left: %s]", *msg ? *msg : "", job_left(j));
		free(*msg);
		*msg = both;
	}
	job_free(j);
	return o;
}

static const char *node_of(struct fx *x)
{
	static char node[32];
	json_object *st = simproc_state(&x->f.sp), *cl = NULL, *guests = NULL;
	json_object_object_get_ex(st, "cluster", &cl);
	json_object_object_get_ex(cl, "guests", &guests);
	node[0] = '\0';
	for (size_t i = 0; guests && i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		long long v = 0;
		if (json_int(g, "vmid", &v) && v == VMID && json_str(g, "node"))
			snprintf(node, sizeof node, "%s", json_str(g, "node"));
	}
	json_object_put(st);
	return node;
}

static int migrations_sent(struct fx *x)
{
	json_object *log = simproc_requests(&x->f.sp);
	int n = simproc_count_requests(log, "POST", "*/migrate", -1);
	json_object_put(log);
	return n;
}

/* The guest on pve2 with its home tag, moved by one request. */
static void assert_finished(struct fx *x, const char *what)
{
	cr_assert_str_eq(node_of(x), "pve2", "%s: not on pve2", what);
	char *tags = simproc_config_key(&x->f.sp, VMID, "tags");
	cr_assert(tags && strstr(tags, WF_HOME_TAG "pve1"), "%s: tags '%s'", what,
		  tags ? tags : "(none)");
	free(tags);
	cr_assert_eq(migrations_sent(x), 1, "%s: the migration was sent again", what);
}

/* The path as a regex that matches it alone, but for a task's UPID (each
 * run's task has its own): any UPID. */
static char *path_rx(const char *path)
{
	struct sbuf b = {0};
	cr_assert_eq(sbuf_addf(&b, "^"), 0);
	const char *upid = strstr(path, "/tasks/UPID:");
	for (const char *c = path; *c; c++) {
		if (c == upid) {
			cr_assert_eq(sbuf_addf(&b, "/tasks/[^/]+"), 0);
			c = strchr(upid + 7, '/');
			if (!c)
				break;
		}
		cr_assert_eq(strchr(".[]()*+?{}|^$\\", *c) ? sbuf_addf(&b, "\\\\%c", *c)
							    : sbuf_addf(&b, "%c", *c), 0);
	}
	cr_assert_eq(sbuf_addf(&b, "$"), 0);
	return sbuf_steal(&b);
}

/* The GETs the job sends after its POST .../migrate, each path once (a
 * regex: path_rx), with the number of earlier GETs it matches (the
 * "nth" of its first read after the POST is that plus one); the task's
 * status is among them whether the log told the end first or not. */
struct read_after {
	char *rx;    /* JSON-escaped for the rule */
	int before;
};

static int matches(const char *rx_json, const char *path)
{
	/* the rule's text has its backslashes doubled for JSON */
	struct sbuf b = {0};
	for (const char *c = rx_json; *c; c++)
		cr_assert_eq(sbuf_addf(&b, "%c", *c == '\\' && c[1] == '\\' ? *c++ : *c), 0);
	regex_t re;
	cr_assert_eq(regcomp(&re, sbuf_str(&b), REG_EXTENDED | REG_NOSUB), 0, "%s", sbuf_str(&b));
	int m = regexec(&re, path, 0, NULL, 0) == 0;
	regfree(&re);
	sbuf_free(&b);
	return m;
}

static size_t reads_after_the_migration(struct read_after **out)
{
	struct fx x;
	fx_start(&x);
	long long id = 0;
	char *msg = NULL;
	cr_assert_eq(run(&x, &id, &msg), JOB_OUT_DONE, "%s", msg ? msg : "");
	free(msg);
	assert_finished(&x, "no fault");
	json_object *log = simproc_requests(&x.f.sp);
	size_t n = json_object_array_length(log), post = n, k = 0;
	struct read_after *v = calloc(n + 1, sizeof *v);
	cr_assert_not_null(v);
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(log, i);
		const char *m = json_str(r, "method"), *p = json_str(r, "path");
		if (post == n && strcmp(m, "POST") == 0 && strlen(p) > 8 &&
		    strcmp(p + strlen(p) - 8, "/migrate") == 0)
			post = i;
		if (i <= post || strcmp(m, "GET") != 0)
			continue;
		bool seen = false;
		for (size_t q = 0; q < k && !seen; q++)
			seen = matches(v[q].rx, p);
		if (seen)
			continue;
		v[k].rx = path_rx(p);
		for (size_t q = 0; q < i; q++) {
			json_object *e = json_object_array_get_idx(log, q);
			v[k].before += strcmp(json_str(e, "method"), "GET") == 0 &&
				       matches(v[k].rx, json_str(e, "path"));
		}
		k++;
	}
	cr_assert_lt(post, n, "no POST .../migrate in the log");
	const char *status = "^/nodes/pve1/tasks/[^/]+/status$";
	bool have = false;
	for (size_t q = 0; q < k && !have; q++)
		have = strcmp(v[q].rx, status) == 0;
	if (!have)
		cr_assert_not_null(v[k++].rx = strdup(status));
	json_object_put(log);
	fx_stop(&x);
	*out = v;
	return k;
}

/* Outcomes of the cases, for the summary. */
static int n_cases, n_done, n_attention, n_clean_unmoved;

/* One case: the rule (with its fault) on the path; the job's end judged;
 * a job that needs attention resumed with the fault gone. */
static void one_case(const char *rule, bool for_good, const char *what)
{
	struct fx x;
	fx_start(&x);
	if (for_good)
		x.arm = rule;
	else
		cr_assert_eq(simproc_fault(&x.f.sp, rule), 0, "%s", rule);
	long long id = 0;
	char *msg = NULL;
	enum job_outcome o = run(&x, &id, &msg);
	n_cases++;
	cr_log_info("%s: %s", what, job_outcome_name(o));
	if (o == JOB_OUT_DONE) {
		n_done++;
		assert_finished(&x, what);
	} else if (o == JOB_OUT_NEEDS_ATTENTION) {
		n_attention++;
		cr_assert(msg && strstr(msg, "unknown"), "%s: needs attention without saying "
			  "what is unknown: %s", what, msg ? msg : "");
		struct store_job sj;
		char *err = NULL;
		long holder = 0;
		cr_assert_eq(store_job_get(x.st, id, &sj, &err), 1);
		cr_assert_eq(store_job_resumable(x.st, &sj, &holder, &err), 1,
			     "%s: job %lld (%s) is not resumable", what, id, job_state_name(sj.state));
		store_job_free(&sj);
		long st = 0;
		cr_assert_eq(sim_http(&x.f.sp, "DELETE", "/_sim/fault", NULL, NULL, NULL, &st, NULL),
			     0);
		/* the same request again resumes that job */
		long long id2 = 0;
		enum job_outcome o2 = run(&x, &id2, &msg);
		cr_assert_eq(id2, id, "%s: the rerun made a new job", what);
		cr_assert_eq(o2, JOB_OUT_DONE, "%s: resumed: %s: %s", what, job_outcome_name(o2),
			     msg ? msg : "");
		assert_finished(&x, what);
	} else {
		/* only before the migration went out: nothing moved */
		n_clean_unmoved++;
		cr_assert_str_eq(node_of(&x), "pve1", "%s: %s (exit %s) with the guest moved: %s",
				 what, job_outcome_name(o), job_outcome_name(o), msg ? msg : "");
		cr_assert_eq(migrations_sent(&x), 0, "%s: %s after the migration was sent: %s",
			     what, job_outcome_name(o), msg ? msg : "");
	}
	free(msg);
	fx_stop(&x);
}

Test(migrate_faults, every_read_after_the_task_started_with_every_fault, .timeout = 1500)
{
	struct read_after *reads = NULL;
	size_t n = reads_after_the_migration(&reads);
	cr_assert_geq(n, 3, "too few reads after the migration: %zu", n);
	for (size_t i = 0; i < n; i++) {
		cr_log_info("read after the migration: GET %s (after %d earlier)", reads[i].rx,
			    reads[i].before);
		for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
			char *once = strprintf("{\"method\":\"GET\",\"path\":\"%s\",\"nth\":%d,%s}",
					       reads[i].rx, reads[i].before + 1, kinds[k].action);
			char *what = strprintf("GET %s, %s once", reads[i].rx, kinds[k].name);
			one_case(once, false, what);
			free(once);
			free(what);
			if (!kinds[k].for_good)
				continue;
			char *always = strprintf("{\"method\":\"GET\",\"path\":\"%s\",%s}",
						 reads[i].rx, kinds[k].action);
			what = strprintf("GET %s, %s for good", reads[i].rx, kinds[k].name);
			one_case(always, true, what);
			free(always);
			free(what);
		}
		free(reads[i].rx);
	}
	free(reads);
	cr_log_info("%d cases: %d done after retries, %d needs attention then resumed to done, "
		    "%d failed before anything was sent", n_cases, n_done, n_attention,
		    n_clean_unmoved);
	fprintf(stderr, "migrate faults: %d cases: %d done, %d needs attention (resumed), %d "
		"failed before the migration was sent\n", n_cases, n_done, n_attention,
		n_clean_unmoved);
}

/* A job that needed attention and was not resumed, its request made again
 * after it was cancelled: the guest, found on its target, gets its home
 * tag without a second migration. */
Test(migrate_faults, a_rerun_finds_the_guest_on_its_target_and_tags_it, .timeout = 120)
{
	struct fx x;
	fx_start(&x);
	x.arm = "{\"method\":\"GET\",\"path\":\"^/nodes/pve2/qemu/100/config$\","
		"\"action\":\"status\",\"status\":500,\"message\":\"internal error\"}";
	long long id = 0;
	char *msg = NULL;
	cr_assert_eq(run(&x, &id, &msg), JOB_OUT_NEEDS_ATTENTION, "%s", msg ? msg : "");
	cr_assert_str_eq(node_of(&x), "pve2");
	long st = 0;
	cr_assert_eq(sim_http(&x.f.sp, "DELETE", "/_sim/fault", NULL, NULL, NULL, &st, NULL), 0);
	/* cancelled: the same request is a new job */
	struct store_job sj;
	char *err = NULL;
	cr_assert_eq(store_job_get(x.st, id, &sj, &err), 1);
	sj.state = JOB_CANCELLED;
	cr_assert_eq(store_job_update(x.st, &sj, &err), 0);
	store_job_free(&sj);
	long long id2 = 0;
	cr_assert_eq(run(&x, &id2, &msg), JOB_OUT_DONE, "%s", msg ? msg : "");
	cr_assert_neq(id2, id);
	assert_finished(&x, "rerun");
	free(msg);
	fx_stop(&x);
}
