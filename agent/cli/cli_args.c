/* cli_args.c - a command's command line parsed by its table entry
 * (struct cmd_entry, cli.h: its options, repeatable ones, its number of
 * arguments) and dispatched. A job command's options are its workflow's
 * params' (their rows in wf_params.c: cmd_opts_build) and its own; the
 * params' are filled into cmd_args.params by type (fill_params), checked
 * as the table says. A job command's handler appends its jobs, which go
 * to pvagentd when one answers (cli_daemon_submit), else run here
 * (cli_run_here); resume's job goes to pvagentd too; any other handler
 * does its work here. */
#include "cli.h"
#include "util.h"
#include "wf_params.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cmd_args_free(struct cmd_args *a)
{
	free(a->v);
	json_object_put(a->params);
	memset(a, 0, sizeof *a);
}

/* ---- a command's options: its workflow's params', then its own ---------------- */

/* The getopt value of a param's option without a short form: past every
 * character an own option may use. */
#define PARAM_OPT_VAL 256

void cmd_opts_free(struct cmd_opts *o)
{
	free(o->longopts);
	free(o->shortopts);
	free(o->param);
	free(o->popt);
	memset(o, 0, sizeof *o);
}

int cmd_opts_build(const struct cmd_entry *e, struct cmd_opts *o)
{
	memset(o, 0, sizeof *o);
	const struct job_param *rows = e->wf && e->wf->params ? e->wf->params->params : NULL;
	size_t n = 0;
	for (const struct job_param *p = rows; p && p->key; p++)
		for (const struct job_param_opt *po = p->opts; po && po->name; po++)
			n++;
	for (const struct option *x = e->longopts; x && x->name; x++)
		n++;
	struct sbuf sh = {0};
	o->longopts = calloc(n + 1, sizeof *o->longopts);
	o->param = calloc(n + 1, sizeof *o->param);
	o->popt = calloc(n + 1, sizeof *o->popt);
	if (!o->longopts || !o->param || !o->popt || sbuf_add(&sh, e->shortopts ? e->shortopts : ""))
		goto oom;
	for (const struct job_param *p = rows; p && p->key; p++)
		for (const struct job_param_opt *po = p->opts; po && po->name; po++) {
			bool arg = po->arg != NULL;
			int val = po->short_name ? po->short_name : PARAM_OPT_VAL + (int)o->n;
			o->param[o->n] = p;
			o->popt[o->n] = po;
			o->longopts[o->n++] = (struct option){po->name,
							      arg ? required_argument : no_argument,
							      NULL, val};
			if (po->short_name && (sbuf_addc(&sh, po->short_name) ||
					       (arg && sbuf_addc(&sh, ':'))))
				goto oom;
		}
	for (const struct option *x = e->longopts; x && x->name; x++)
		o->longopts[o->n++] = *x;
	o->shortopts = strdup(sbuf_str(&sh));
	sbuf_free(&sh);
	if (!o->shortopts)
		goto oom_freed;
	return 0;
oom:
	sbuf_free(&sh);
oom_freed:
	cmd_opts_free(o);
	return -1;
}

/* The index in o of getopt's value opt, or -1. */
static int opt_index(const struct cmd_opts *o, int opt)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->longopts[i].val == opt)
			return (int)i;
	return -1;
}

static bool is_list(enum job_param_type t)
{
	return t == JOB_PARAM_STR_LIST || t == JOB_PARAM_KV_LIST || t == JOB_PARAM_KV_MAP;
}

static const char *opt_name(const struct cmd_opts *o, int opt, char *buf, size_t n)
{
	int i = opt_index(o, opt);
	if (i >= 0)
		snprintf(buf, n, "--%s", o->longopts[i].name);
	else
		snprintf(buf, n, "-%c", opt);
	return buf;
}

/* The long option of o nearest to a mistyped one ("nodee"), or NULL;
 * "--name=value" is compared by its name. */
static const char *closest_option(const struct cmd_opts *o, const char *typed)
{
	const char **names = malloc((o->n + 1) * sizeof *names);
	char *name = strndup(typed, strcspn(typed, "="));
	const char *near = NULL;
	if (names && name) {
		size_t n = 0;
		for (size_t i = 0; i < o->n; i++)
			names[n++] = o->longopts[i].name;
		names[n++] = "help";
		near = str_closest(name, names, n);
	}
	free(names);
	free(name);
	return near;
}

/* getopt's complaint, said in the one prefix with the nearest option of
 * the command for a mistyped one. */
static void say_bad_option(const struct cmd_entry *e, const struct cmd_opts *o, int argc,
			   char **argv)
{
	const char *bad = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	bool is_long = strncmp(bad, "--", 2) == 0;
	bool needs_arg = false;
	if (optopt && !is_long) {
		const char *p = strchr(o->shortopts, optopt);
		needs_arg = p && p[1] == ':';
	} else if (is_long) {
		for (size_t i = 0; i < o->n; i++)
			if (strcmp(o->longopts[i].name, bad + 2) == 0)
				needs_arg = o->longopts[i].has_arg == required_argument;
	}
	const char *near = !needs_arg && is_long ? closest_option(o, bad + 2) : NULL;
	if (needs_arg)
		cli_error("usage", e->name, "option '%s' needs an argument",
			  is_long ? bad : (char[]){'-', (char)optopt, 0});
	else if (near)
		cli_error("usage", e->name, "unknown option '%s' (did you mean '--%s'?)", bad, near);
	else if (optopt && !is_long)
		cli_error("usage", e->name, "unknown option '-%c'", optopt);
	else
		cli_error("usage", e->name, "unknown option '%s'", bad);
	fprintf(stderr, "(see pvagent %s --help)\n", e->name);
}

/* ---- the params the options give ------------------------------------------------- */

/* arg of option po (of param p) as p's value (*v, a new reference), by its
 * value function or by p's type; KV types into *kv instead. 0, or an
 * exit code (said). */
static int param_value(const char *cmd, const struct job_param *p,
		       const struct job_param_opt *po, const char *arg, struct tmpl_kvlist *kv,
		       json_object **v)
{
	char flag[64];
	snprintf(flag, sizeof flag, "--%s", po->name);
	*v = NULL;
	if (po->value) {
		const char *why = NULL;
		if (po->value(po, arg, v, &why) < 0) {
			if (!why)
				return 1; /* out of memory (said by fill_params) */
			char *what = strprintf("%s: %s", flag, why);
			int rc = what ? cli_usage_error(cmd, what, arg) : 1;
			free(what);
			return rc;
		}
		if (p->type != JOB_PARAM_KV_LIST && p->type != JOB_PARAM_KV_MAP)
			return 0;
		/* a [key, value] of its own syntax */
		int r = tmpl_kvlist_set(kv, json_object_get_string(json_object_array_get_idx(*v, 0)),
					json_object_get_string(json_object_array_get_idx(*v, 1)));
		json_object_put(*v);
		*v = NULL;
		return r < 0 ? 1 : 0;
	}
	switch (p->type) {
	case JOB_PARAM_BOOL:
		*v = json_object_new_boolean(1);
		break;
	case JOB_PARAM_INT: {
		long x = 0;
		int rc = cli_parse_count(cmd, flag, arg, (long)p->min, (long)p->max, &x);
		if (rc)
			return rc;
		*v = json_object_new_int64(x);
		break;
	}
	case JOB_PARAM_NUM: {
		char *end = NULL;
		double x = strtod(arg, &end);
		if (!*arg || *end || x < p->min || x > p->max) {
			fprintf(stderr, "pvagent %s: %s %s: expected a number from %g to %g\n", cmd,
				flag, arg, p->min, p->max);
			return EXIT_USAGE;
		}
		*v = json_object_new_double(x);
		break;
	}
	case JOB_PARAM_STR:
		*v = json_object_new_string(arg);
		break;
	case JOB_PARAM_STR_LIST: /* "N1,N2,...", appended */
		*v = json_object_new_array();
		for (const char *s = arg; *v && *s; s += strcspn(s, ",")) {
			s += strspn(s, ",");
			size_t l = strcspn(s, ",");
			if (l && json_object_array_add(*v, json_object_new_string_len(s, (int)l)) < 0)
				return 1; /* (*v: the caller's to put) */
		}
		break;
	case JOB_PARAM_KV_LIST:
	case JOB_PARAM_KV_MAP: {
		char *err = NULL;
		if (tmpl_var_arg(kv, arg, &err) == 0)
			return 0;
		cli_error("usage", cmd, "%s %s: %s", flag, arg, err ? err : "expected K=V");
		free(err);
		return EXIT_USAGE;
	}
	}
	return *v ? 0 : 1;
}

/* The param options in a->v into a->params (by e's workflow's table:
 * cmd_args.params), leaving the command's own in a->v. 0, or an exit
 * code (said). */
static int fill_params(const struct cmd_entry *e, const struct cmd_opts *o, struct cmd_args *a)
{
	const struct job_params_decl *d = e->wf->params;
	size_t n_rows = 0;
	while (d->params[n_rows].key)
		n_rows++;
	struct tmpl_kvlist *kv = calloc(n_rows ? n_rows : 1, sizeof *kv);
	const struct job_param_opt **by = calloc(n_rows ? n_rows : 1, sizeof *by);
	int rc = kv && by && (a->params = json_object_new_object()) ? 0 : 1;
	size_t own = 0;
	for (size_t i = 0; rc == 0 && i < a->n; i++) {
		int k = opt_index(o, a->v[i].opt);
		if (k < 0 || !o->param[k]) {
			a->v[own++] = a->v[i];
			continue;
		}
		const struct job_param *p = o->param[k];
		const struct job_param_opt *po = o->popt[k];
		size_t r = (size_t)(p - d->params);
		json_object *v = NULL, *had = NULL;
		if (by[r] && by[r] != po && !is_list(p->type)) {
			/* two options of one param (--storage, --storage-map) */
			char *what = strprintf("give one of --%s and --%s", p->opts[0].name,
					       p->opts[1].name);
			rc = what ? cli_usage_error(e->name, what, a->v[i].val ? a->v[i].val
									    : po->name) : 1;
			free(what);
			break;
		}
		by[r] = po;
		rc = param_value(e->name, p, po, a->v[i].val, &kv[r], &v);
		if (rc || !v) {
			json_object_put(v);
			continue;
		}
		if (p->type == JOB_PARAM_STR_LIST &&
		    json_object_object_get_ex(a->params, p->key, &had)) {
			for (size_t x = 0; x < json_object_array_length(v); x++)
				json_object_array_add(had, json_object_get(
							      json_object_array_get_idx(v, x)));
			json_object_put(v);
		} else if (job_param_put(d, a->params, p->key, v) < 0) {
			rc = 1;
		}
	}
	for (size_t r = 0; rc == 0 && r < n_rows; r++)
		if (by[r] && (d->params[r].type == JOB_PARAM_KV_LIST ||
			      d->params[r].type == JOB_PARAM_KV_MAP) &&
		    job_param_set_kv(d, a->params, d->params[r].key, &kv[r]) < 0)
			rc = 1;
	for (size_t r = 0; kv && r < n_rows; r++)
		tmpl_kvlist_free(&kv[r]);
	free(kv);
	free(by);
	a->n = own;
	if (rc == 1)
		fprintf(stderr, "pvagent %s: out of memory\n", e->name);
	return rc;
}

json_object *cmd_args_params(const struct cmd_args *a)
{
	json_object *p = NULL;
	if (a->params)
		json_object_deep_copy(a->params, &p, NULL);
	else
		p = json_object_new_object();
	return p;
}

/* ---- the command line ------------------------------------------------------------ */

/* Is e's option at o's index k one that may be given more than once (a
 * list param's, or one of its own e->repeatable names)? */
static bool repeatable(const struct cmd_entry *e, const struct cmd_opts *o, int k)
{
	if (k >= 0 && o->param[k])
		return is_list(o->param[k]->type);
	int opt = k >= 0 ? o->longopts[k].val : 0;
	return e->repeatable && opt > 0 && opt < PARAM_OPT_VAL && strchr(e->repeatable, opt);
}

int cmd_args_parse(const struct cmd_entry *e, int argc, char **argv, struct cmd_args *a)
{
	memset(a, 0, sizeof *a);
	a->cmd = e->name;
	a->cmdline = argv;
	struct cmd_opts o;
	if (cmd_opts_build(e, &o) < 0) {
		fprintf(stderr, "pvagent: out of memory\n");
		return 1;
	}
	/* optind 0: GNU getopt starts afresh, permuting options and arguments */
	optind = 0;
	opterr = 0;
	int opt, rc = 0;
	while (rc == 0 && (opt = getopt_long(argc, argv, o.shortopts, o.longopts, NULL)) != -1) {
		if (opt == '?' || opt == ':') {
			say_bad_option(e, &o, argc, argv);
			rc = EXIT_USAGE;
			break;
		}
		const char *val = optarg;
		bool again = false;
		int k = opt_index(&o, opt);
		for (size_t i = 0; rc == 0 && i < a->n; i++) {
			if (a->v[i].opt != opt || repeatable(e, &o, k))
				continue;
			if ((val && a->v[i].val && strcmp(val, a->v[i].val) != 0) ||
			    (!val != !a->v[i].val)) {
				char nb[64];
				cli_error("usage", e->name, "%s given twice with different values "
					  "('%s' and '%s')", opt_name(&o, opt, nb, sizeof nb),
					  a->v[i].val ? a->v[i].val : "", val ? val : "");
				rc = EXIT_USAGE;
			}
			again = true;
		}
		if (rc || again)
			continue;
		struct cmd_opt *nv = realloc(a->v, (a->n + 1) * sizeof *nv);
		if (!nv) {
			fprintf(stderr, "pvagent: out of memory\n");
			rc = 1;
			break;
		}
		a->v = nv;
		a->v[a->n++] = (struct cmd_opt){opt, val};
	}
	a->argc = argc - optind;
	a->argv = argv + optind;
	const char *what = e->arg_name ? e->arg_name : "argument";
	if (rc == 0 && (a->argc < e->min_args || (e->max_args >= 0 && a->argc > e->max_args))) {
		if (e->max_args == 0)
			cli_error("usage", e->name, "takes no arguments, not '%s'", a->argv[0]);
		else if (a->argc < e->min_args && e->min_args == e->max_args)
			cli_error("usage", e->name, "needs %s %s",
				  e->min_args == 1 ? "one" : "a", what);
		else if (a->argc < e->min_args)
			cli_error("usage", e->name, "needs at least one %s", what);
		else
			cli_error("usage", e->name, "takes one %s, not also '%s'", what,
				  a->argv[e->max_args]);
		fprintf(stderr, "usage: pvagent %s %s\n", e->name, e->usage);
		rc = EXIT_USAGE;
	}
	/* the params the options give, checked as their table says */
	if (rc == 0 && e->wf && e->wf->params)
		rc = fill_params(e, &o, a);
	cmd_opts_free(&o);
	if (rc)
		cmd_args_free(a);
	return rc;
}

/* ---- dispatch ----------------------------------------------------------------- */

/* A job command: its handler appends its jobs, which go to pvagentd when
 * one answers, else run here. */
static int dispatch_jobs(struct cli *cli, const struct cmd_entry *e, const struct cmd_args *a)
{
	struct cli_jobs jobs = {.wf = e->wf, .jobs = json_object_new_array(), .parallel = 1};
	if (!jobs.jobs) {
		fprintf(stderr, "pvagent %s: out of memory\n", e->name);
		return 1;
	}
	cli->jobs = &jobs;
	int rc = e->run(cli, a);
	cli->jobs = NULL;
	bool handled = false;
	if (rc == 0 && json_object_array_length(jobs.jobs) > 0) {
		rc = cli_daemon_submit(cli, e, a, &jobs, &handled);
		if (!handled)
			rc = cli_run_here(cli, e, &jobs);
	}
	if (jobs.done)
		jobs.done(jobs.ctx);
	json_object_put(jobs.jobs);
	return rc;
}

int cmd_dispatch(struct cli *cli, const struct cmd_entry *e, int argc, char **argv)
{
	struct cmd_args a;
	int rc = cmd_args_parse(e, argc, argv, &a);
	if (rc)
		return rc;
	bool handled = false;
	cli->cmd = e;
	if (e->flags & CMD_JOBS)
		rc = dispatch_jobs(cli, e, &a);
	else if (e->flags & CMD_RESUME)
		rc = cli_daemon_submit(cli, e, &a, NULL, &handled);
	if (!(e->flags & CMD_JOBS) && !handled)
		rc = e->run(cli, &a);
	cmd_args_free(&a);
	return rc;
}
