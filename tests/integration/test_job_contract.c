/* test_job_contract.c - the contract between a command and its job, as a
 * property over the tables themselves: every job command of the command
 * table (cli_commands, CMD_JOBS) and every param of its workflow's table
 * (wf_params.c). For each:
 *
 * - every option getopt takes for the command (cmd_opts_build) sets a
 *   param of its workflow (its row names it, with its help line) or is
 *   the command's own (its cmd_entry.longopts), never both;
 * - each such option, given to the command's handler as cmd_dispatch does
 *   (cli->jobs: the jobs' {subject, params} it appends), makes a job
 *   whose params hold that param and which pvagentd accepts (submit_check,
 *   as root: the engine's job_params_check and the workflow's own check,
 *   with the daemon's public key), and which, stored by job_submit as the
 *   daemon's child stores it, is loaded back (what resume runs) with the
 *   same params;
 * - an unknown member, one of another type, or one out of its range is
 *   refused by job_submit (in this process) and by pvagentd with the same
 *   message; what only the engine sets is refused to a peer.
 *
 * The two past regressions are cases of it: pvagentd refusing `up
 * --no-wait-ssh` (an option whose param the daemon did not know), and a
 * submitted `up` of a ${pubkey} template failing (the template here uses
 * ${pubkey}: the client checks it with a stand-in, the daemon with its own
 * key). A new option or param is covered without a change here; only a
 * value for a string option that must name something real (a node, a
 * storage) is this suite's (sample_value). Runs the commands' handlers in
 * this process against the simulator (migrate.json). */
#include "cli.h"
#include "clirun.h"
#include "simcli.h"
#include "simproc.h"
#include "store.h"
#include "submit_check.h"
#include "util.h"
#include "wf_params.h"
#include "workflows.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct simproc sim;

static void cleanup(void)
{
	simproc_stop(&sim);
}

TestSuite(job_contract, .fini = cleanup, .timeout = 240);

/* ---- the tables ----------------------------------------------------------- */

static const struct job_param *param_of_option(const struct job_params_decl *d, const char *opt)
{
	const struct job_param *p = NULL;
	return job_param_opt_find(d, opt, &p) ? p : NULL;
}

static bool has_long(const struct option *v, const char *name)
{
	for (const struct option *o = v; o && o->name; o++)
		if (strcmp(o->name, name) == 0)
			return true;
	return false;
}

Test(job_contract, every_workflow_declares_its_params_once)
{
	size_t n = 0;
	for (const struct job_params_decl *const *d = wf_params_all(); *d; d++, n++) {
		const struct job_workflow *wf = job_workflow_find((*d)->workflow);
		cr_assert_not_null(wf, "%s: no such workflow", (*d)->workflow);
		cr_expect_eq(wf->params, *d, "%s: its .params is not its table", wf->name);
		for (const struct job_param *p = (*d)->params; p->key; p++)
			for (const struct job_param *q = p + 1; q->key; q++)
				cr_expect_str_neq(p->key, q->key, "%s: \"%s\" declared twice", wf->name,
						  p->key);
	}
	cr_assert_eq(n, 10);
}

/* What getopt takes for a job command (cmd_opts_build: cmd_args_parse's
 * list, help's and completion's) is each option of its workflow's params
 * once, then its own (cmd_entry.longopts), none of them also a param's;
 * and each param option has its help line. */
Test(job_contract, every_option_of_a_job_command_is_a_param_or_the_commands_own)
{
	size_t commands = 0;
	for (const struct cmd_entry *const *c = cli_commands(); *c; c++) {
		const struct cmd_entry *e = *c;
		if (!(e->flags & CMD_JOBS))
			continue;
		commands++;
		cr_assert_not_null(e->wf, "%s: a job command without its workflow", e->name);
		cr_assert_not_null(e->wf->params, "%s: its workflow declares no params", e->name);
		struct cmd_opts o;
		cr_assert_eq(cmd_opts_build(e, &o), 0);
		size_t n_param = 0;
		for (const struct job_param *p = e->wf->params->params; p->key; p++)
			for (const struct job_param_opt *po = p->opts; po && po->name; po++) {
				cr_expect(po->help && *po->help, "%s --%s: no help line", e->name,
					  po->name);
				n_param++;
			}
		for (size_t i = 0; i < o.n; i++) {
			const char *name = o.longopts[i].name;
			const struct job_param *p = param_of_option(e->wf->params, name);
			bool own = has_long(e->longopts, name);
			cr_expect(!p == !o.param[i] && (!p || p == o.param[i]),
				  "%s --%s: getopt's option is not its param's", e->name, name);
			cr_expect((p != NULL) != own, "%s --%s: %s", e->name, name,
				  p ? "a param's option and the command's own too"
				    : "neither a param's option (wf_params.c) nor the command's own");
			for (size_t k = 0; k < i; k++)
				cr_expect_str_neq(o.longopts[k].name, name, "%s --%s: twice", e->name,
						  name);
			if (o.longopts[i].val < 256 && o.longopts[i].val > ' ')
				for (size_t k = 0; k < i; k++)
					cr_expect_neq(o.longopts[k].val, o.longopts[i].val,
						      "%s --%s and --%s: one short form", e->name,
						      o.longopts[k].name, name);
		}
		size_t n_own = 0;
		for (const struct option *x = e->longopts; x && x->name; x++)
			n_own++;
		cr_expect_eq(o.n, n_param + n_own, "%s: %zu options, not %zu params' and %zu own",
			     e->name, o.n, n_param, n_own);
		cmd_opts_free(&o);
	}
	cr_assert_eq(commands, 10);
}

/* Parse a command line (words after the command's name) as
 * cmd_dispatch does: its exit code, the params (as JSON text) in *params
 * and the number of the command's own options left in *own. */
static int parse(const char *cmd, char **params, size_t *own, const char *const *words)
{
	const struct cmd_entry *e = cli_find_command(cmd);
	cr_assert_not_null(e, "%s", cmd);
	char *argv[16] = {(char *)cmd};
	int argc = 1;
	for (; words[argc - 1]; argc++)
		argv[argc] = (char *)words[argc - 1];
	struct cmd_args a;
	int rc = cmd_args_parse(e, argc, argv, &a);
	*params = rc ? NULL : strdup(json_object_to_json_string_ext(a.params, JSON_C_TO_STRING_PLAIN));
	cr_assert(rc || *params);
	*own = rc ? 0 : a.n;
	if (!rc)
		cmd_args_free(&a);
	return rc;
}
#define PARSE(cmd, params, own, ...) parse(cmd, params, own, (const char *const[]){__VA_ARGS__, NULL})

/* Are the params (JSON text) want's (members in any order)? */
static void same_params(const char *got, const char *want)
{
	json_object *g = json_tokener_parse(got), *w = json_tokener_parse(want);
	cr_assert_not_null(w, "%s", want);
	cr_expect(json_object_equal(g, w), "params %s, not %s", got, want);
	json_object_put(g);
	json_object_put(w);
}

/* The options fill the params by their rows' types: a list appended, a
 * KV from K=V (or its option's own syntax), a number in its range, a
 * value function's value; two options of one param, or a number out of
 * range, refused; the command's own options left to it. */
Test(job_contract, options_fill_params_by_their_rows)
{
	char *p = NULL;
	size_t own = 0;
	cr_assert_eq(PARSE("drain", &p, &own, "pve1", "--to", "pve2,pve3", "--to", "pve4",
			   "--max-workers", "3", "--partial"), 0);
	same_params(p, "{\"to\":[\"pve2\",\"pve3\",\"pve4\"],\"max_workers\":3,\"partial\":true}");
	cr_expect_eq(own, 0);
	free(p);
	cr_assert_eq(PARSE("drain", &p, &own, "pve1", "--window", "w1"), 0);
	same_params(p, "{}");
	cr_expect_eq(own, 1);
	free(p);
	cr_assert_eq(PARSE("up", &p, &own, "x1", "-t", "c1", "--var", "a=1", "--set", "cores=2",
			   "--var", "b=2", "--parallel", "2", "--no-wait-ssh"), 0);
	same_params(p, "{\"template\":\"c1\",\"vars\":[[\"a\",\"1\"],[\"b\",\"2\"]],"
			 "\"no_wait_ssh\":true,\"sets\":[[\"cores\",\"2\"]]}");
	cr_expect_eq(own, 1);
	free(p);
	cr_assert_eq(PARSE("virtio", &p, &own, "web1", "--disk-bus", "virtio-scsi", "--timeout",
			   "30", "--var", "k=v"), 0);
	same_params(p, "{\"bus\":2,\"verify_timeout_s\":30.0,\"vars\":{\"k\":\"v\"}}");
	free(p);
	cr_assert_eq(PARSE("rolling", &p, &own, "run", "--run", "--node-ssh", "pve-1=10.0.0.1:2222"),
		     0);
	same_params(p, "{\"mode\":\"run\",\"node_ssh\":{\"pve-1\":\"10.0.0.1:2222\"}}");
	free(p);
	cr_assert_eq(PARSE("migrate", &p, &own, "web1", "pve2", "--storage", "local-lvm"), 0);
	same_params(p, "{\"storage_map\":\"local-lvm\"}");
	free(p);
	cr_expect_eq(PARSE("migrate", &p, &own, "web1", "pve2", "--storage", "a", "--storage-map",
			   "b:c"), EXIT_USAGE);
	cr_expect_eq(PARSE("migrate", &p, &own, "web1", "pve2", "--storage", "a:b"), EXIT_USAGE);
	cr_expect_eq(PARSE("up", &p, &own, "x1", "-t", "c1", "--vmid", "99"), EXIT_USAGE);
	cr_expect_eq(PARSE("up", &p, &own, "x1", "-t", "c1", "--var", "a=1", "--var", "a=2"),
		     EXIT_USAGE);
	cr_expect_eq(PARSE("inject", &p, &own, "web1", "-t", "a", "-t", "b"), EXIT_USAGE);
	cr_expect_eq(PARSE("rolling", &p, &own, "run", "--node-ssh", "pve1"), EXIT_USAGE);
}

/* ---- each option through the client, pvagentd and resume ------------------- */

#define PUBKEY "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA d"

struct world {
	char *keys;        /* the daemon's [ssh] identity's directory */
	char *script;      /* a rolling run's --run-script */
	struct simcli w;
	struct cli cli;
	struct store *st;
	struct job_env env;
};

/* A VM template that uses ${pubkey}, the debian-13 image in the
 * catalogue, a pool and the daemon's [ssh] identity. */
static void world_start(struct world *x)
{
	char t[] = "/tmp/pvagent-test-contract.XXXXXX";
	cr_assert_not_null(mkdtemp(t));
	x->keys = strdup(t);
	char *id = strprintf("%s/id", t), *pub = strprintf("%s/id.pub", t);
	x->script = strprintf("%s/upgrade.sh", t);
	cr_assert_eq(test_write_file(x->script, "apt-get -y dist-upgrade\n", 0644), 0);
	cr_assert_eq(test_write_file(id, "not a key\n", 0600), 0);
	cr_assert_eq(test_write_file(pub, PUBKEY "\n", 0644), 0);
	char *extra = strprintf("[ssh]\nidentity = %s\nknown_hosts = %s/known_hosts\n"
				"[pool \"lan\"]\ncidr = 192.0.2.0/24\ngateway = 192.0.2.1\n"
				"range = 192.0.2.100-192.0.2.199\n"
				"[window \"w1\"]\nnode = pve1\nschedule = sun 02:00\nduration = 1h\n",
				id, t);
	simcli_start(&x->w, &sim, "tests/pvesim/scenarios/migrate.json", extra);
	free(extra);
	char *tmpl = strprintf("%s/c1.tmpl", x->w.tdir);
	cr_assert_eq(test_write_file(tmpl, "[template]\nkind = qemu\nos = debian\nos_version = 13\n"
				     "description = contract\n[source]\nclone = web1\n"
				     "storage = local-lvm\n[vars]\nwho = you\n[pve]\nmemory = 1024\n"
				     "[cloud-init]\nciuser = root\nsshkeys = ${pubkey}\n[guest]\nuser = root\naddress = static\n"
				     "ip = 192.0.2.9\n", 0644), 0);
	char *images = strprintf("%s/images", x->w.tdir), *img = strprintf("%s/debian-13.image", images);
	char *text = NULL;
	cr_assert_eq(mkdir(images, 0755), 0);
	cr_assert_eq(read_file("templates/images/debian-13.image", &text, NULL), 0);
	cr_assert_eq(test_write_file(img, text, 0644), 0);
	free(text);
	free(img);
	free(images);
	free(tmpl);
	free(id);
	free(pub);
	x->cli = (struct cli){.conf_path = x->w.conf};
	cr_assert_eq(cli_load_conf(&x->cli), 0);
	char *db = strprintf("%s/contract.db", x->w.dir), *err = NULL;
	cr_assert_eq(store_open(db, &x->st, &err), 0, "%s", err ? err : "");
	free(db);
	x->env = (struct job_env){.store = x->st, .conf = &x->cli.conf};
	cr_assert_eq(job_env_init(&x->env), 0);
}

static void world_stop(struct world *x)
{
	job_env_fini(&x->env);
	store_close(x->st);
	pve_free(x->cli.pve);
	store_close(x->cli.store);
	conf_free(&x->cli.conf);
	simcli_free(&x->w);
	char *id = strprintf("%s/id", x->keys), *pub = strprintf("%s/id.pub", x->keys);
	unlink(id);
	unlink(pub);
	unlink(x->script);
	free(x->script);
	rmdir(x->keys);
	free(id);
	free(pub);
	free(x->keys);
}

/* How each job command is called before the option under test: its
 * positional arguments (and what it must be told to ask nothing). A
 * command may have several: an option is tried with each in turn until
 * one takes it (rolling's --run-script is run --run's). */
static const struct {
	const char *cmd;
	const char *args[5];
} base[] = {
	{"up", {"ct1", "-t", "c1"}},
	{"down", {"web1", "--yes"}},
	{"inject", {"web1"}},
	{"bench", {"web1"}},
	{"virtio", {"web1"}},
	{"migrate", {"web1", "pve2"}},
	{"drain", {"pve1"}},
	{"undrain", {"pve1"}},
	{"image", {"build", "debian-13"}},
	{"rolling", {"plan"}},
	{"rolling", {"run", "--wait"}},
	{"rolling", {"run", "--run", "--version", "9.1"}},
};

/* A value of the option o that sets p: by its type, or what it must name
 * here. */
static const char *sample_value(const struct world *x, const char *o, const struct job_param *p,
				char *buf, size_t n)
{
	if (strcmp(o, "run-script") == 0) /* a file it reads */
		return x->script;
	static const struct {
		const char *opt, *value;
	} named[] = {
		{"template", "c1"},         {"node", "pve2"},
		{"storage", "local-lvm"},   {"storage-map", "local-lvm:shared"},
		{"pool", "lan"},            {"to", "pve2"},
		{"import-storage", "local"}, {"disk-bus", "virtio-scsi"},
		{"address", "192.0.2.7"},   {"url", "https://mirror.example/debian-13.qcow2"},
		{"checksum", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"set", "cores=2"},         {"var", "who=me"},
		{"version", "9.1"},         {"window", "w1"},
		{"node-ssh", "pve1=127.0.0.1:22"},
	};
	for (size_t i = 0; i < sizeof named / sizeof *named; i++)
		if (strcmp(named[i].opt, o) == 0)
			return named[i].value;
	switch (p->type) {
	case JOB_PARAM_INT:
	case JOB_PARAM_NUM:
		snprintf(buf, n, "%.0f", p->min > 0 ? p->min : 1);
		return buf;
	default:
		return "x1";
	}
}

/* Run e's handler on argv as cmd_dispatch does: the jobs it appends
 * [{subject, params}] (new reference), which go to pvagentd or run here;
 * rc its exit code. */
static json_object *collect(struct cli *cli, const struct cmd_entry *e, int argc, char **argv,
			    int *rc)
{
	struct cmd_args a;
	*rc = cmd_args_parse(e, argc, argv, &a);
	if (*rc)
		return NULL;
	struct cli_jobs jobs = {.wf = e->wf, .jobs = json_object_new_array()};
	cli->jobs = &jobs;
	*rc = e->run(cli, &a);
	cli->jobs = NULL;
	if (jobs.done)
		jobs.done(jobs.ctx);
	cmd_args_free(&a);
	return jobs.jobs;
}

/* One job of e as pvagentd takes it: checked for a root peer, stored by
 * job_submit as its child does, loaded back as resume does; the params
 * stay the same. */
static void through_the_daemon(struct world *x, const struct cmd_entry *e, const char *what,
			       json_object *job)
{
	const char *subject = json_object_get_string(json_object_object_get(job, "subject"));
	json_object *params = NULL;
	cr_assert_eq(json_object_deep_copy(json_object_object_get(job, "params"), &params, NULL), 0);
	const struct submit_peer root = {0, 0};
	char *why = NULL;
	cr_assert_eq(submit_check(e->wf->name, subject, params, &root, &x->cli.conf, &why), 0,
		     "%s: pvagentd refuses it: %s", what, why ? why : "");
	if (job_param_find(e->wf->params, "pubkey"))
		cr_assert_str_eq(json_object_get_string(json_object_object_get(params, "pubkey")),
				 PUBKEY, "%s: the job's key is not the daemon's", what);
	struct job *j = NULL;
	struct pve_error err = {0};
	cr_assert_eq(job_submit(&x->env, e->wf, subject, params, &j, &err), 0, "%s: not stored: %s",
		     what, err.message ? err.message : "");
	long long id = job_id(j);
	job_free(j);
	j = NULL;
	cr_assert_eq(job_load(&x->env, id, e->wf, &j, &err), 1, "%s: job %lld not loaded", what, id);
	cr_expect(json_object_equal(job_params(j), params), "%s: resumed with other params:\n%s\n%s",
		  what, json_object_to_json_string(job_params(j)), json_object_to_json_string(params));
	/* nothing left unfinished for the next one to resume or supersede */
	struct store_job sj;
	char *serr = NULL;
	cr_assert_eq(store_job_get(x->st, id, &sj, &serr), 1);
	job_free(j);
	cr_assert_eq(job_cancel_stored(x->st, &sj, NULL, &serr), 1, "%s", serr ? serr : "");
	store_job_free(&sj);
	json_object_put(params);
}

Test(job_contract, every_option_reaches_pvagentd_and_survives_resume)
{
	static struct world x;
	world_start(&x);
	size_t runs = 0, nb = sizeof base / sizeof *base;
	for (size_t b0 = 0; b0 < nb; b0++) {
		if (b0 && strcmp(base[b0].cmd, base[b0 - 1].cmd) == 0)
			continue; /* the command's: with its first base */
		const struct cmd_entry *e = cli_find_command(base[b0].cmd);
		cr_assert(e && (e->flags & CMD_JOBS), "%s", base[b0].cmd);
		/* the command alone, then with each option of a param */
		struct cmd_opts opts;
		cr_assert_eq(cmd_opts_build(e, &opts), 0);
		for (size_t k = 0; k <= opts.n; k++) {
			const struct option *o = k ? &opts.longopts[k - 1] : NULL;
			const struct job_param *p = o ? param_of_option(e->wf->params, o->name) : NULL;
			if (o && !p)
				continue; /* the command's own */
			char flag[64], buf[32];
			if (o)
				snprintf(flag, sizeof flag, "--%s", o->name);
			char *what = strprintf("%s %s", e->name, o ? flag : "(no option)");
			int rc = -1;
			json_object *jobs = NULL;
			for (size_t b = b0; rc && b < nb && strcmp(base[b].cmd, e->name) == 0; b++) {
				char *argv[12] = {(char *)e->name};
				int argc = 1;
				for (size_t i = 0; i < 5 && base[b].args[i]; i++)
					argv[argc++] = (char *)base[b].args[i];
				if (o) {
					argv[argc++] = flag;
					if (o->has_arg == required_argument)
						argv[argc++] = (char *)sample_value(&x, o->name, p, buf,
										    sizeof buf);
				}
				json_object_put(jobs);
				jobs = collect(&x.cli, e, argc, argv, &rc);
			}
			cr_assert_eq(rc, 0, "%s: the client refuses it (%d)", what, rc);
			cr_assert_eq(json_object_array_length(jobs), 1, "%s: %zu jobs", what,
				     json_object_array_length(jobs));
			json_object *job = json_object_array_get_idx(jobs, 0);
			if (p)
				cr_assert(json_object_object_get_ex(json_object_object_get(job, "params"),
								    p->key, NULL),
					  "%s: its job has no \"%s\": %s", what, p->key,
					  json_object_to_json_string(job));
			through_the_daemon(&x, e, what, job);
			json_object_put(jobs);
			free(what);
			runs++;
		}
		cmd_opts_free(&opts);
	}
	cr_assert_geq(runs, 50);
	world_stop(&x);
}

/* ---- refusals: the same words in both ------------------------------------- */

/* params refused by job_submit and by pvagentd (a root peer) with the
 * same message, which holds says. */
static void refused_alike(struct world *x, const struct job_params_decl *d, const char *member,
			  json_object *v, const char *says)
{
	const struct job_workflow *wf = job_workflow_find(d->workflow);
	json_object *params = json_object_new_object();
	json_object_object_add(params, member, v);
	struct job *j = NULL;
	struct pve_error err = {0};
	cr_assert_eq(job_submit(&x->env, wf, "web1", params, &j, &err), -1, "%s %s: stored",
		     d->workflow, member);
	cr_assert_eq(err.kind, PVE_ERR_CONFIG);
	const struct submit_peer root = {0, 0};
	char *why = NULL;
	cr_assert_eq(submit_check(d->workflow, "web1", params, &root, &x->cli.conf, &why), -1,
		     "%s %s: pvagentd takes it", d->workflow, member);
	cr_expect_str_eq(why, err.message, "%s %s: two messages", d->workflow, member);
	cr_expect(strstr(why, says), "%s %s: '%s' does not say '%s'", d->workflow, member, why,
		  says);
	free(why);
	pve_error_clear(&err);
	json_object_put(params);
}

/* What only the engine sets (a drain's migrations' "parent"), of its
 * type: refused to a peer. */
static void engines_own(struct world *x, const struct job_params_decl *d,
			const struct job_param *p)
{
	json_object *params = json_object_new_object(), *v = NULL;
	switch (p->type) {
	case JOB_PARAM_BOOL: v = json_object_new_boolean(1); break;
	case JOB_PARAM_INT: v = json_object_new_int64((long long)(p->min > 0 ? p->min : 1)); break;
	default: v = json_object_new_string("x1"); break;
	}
	json_object_object_add(params, p->key, v);
	const struct submit_peer root = {0, 0};
	char *why = NULL;
	cr_expect_eq(submit_check(d->workflow, "web1", params, &root, &x->cli.conf, &why), -1,
		     "%s: a peer sets \"%s\"", d->workflow, p->key);
	cr_expect(why && strstr(why, "is not one of its params"), "%s", why ? why : "");
	free(why);
	json_object_put(params);
}

Test(job_contract, an_unknown_mistyped_or_out_of_range_member_is_refused_alike)
{
	static struct world x;
	world_start(&x);
	for (const struct job_params_decl *const *d = wf_params_all(); *d; d++) {
		refused_alike(&x, *d, "nosuch", json_object_new_boolean(1),
			      "\"nosuch\" is not one of its params");
		for (const struct job_param *p = (*d)->params; p->key; p++) {
			if (p->flags & JOB_PARAM_PEER) {
				json_object *wrong = p->type == JOB_PARAM_STR
							     ? json_object_new_int(1)
							     : json_object_new_string("1");
				refused_alike(&x, *d, p->key, wrong, "expected");
				if (p->type == JOB_PARAM_INT && p->max > 0)
					refused_alike(&x, *d, p->key,
						      json_object_new_int64((long long)p->max + 1),
						      "is not");
			} else {
				engines_own(&x, *d, p);
			}
		}
	}
	world_stop(&x);
}
