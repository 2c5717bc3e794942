/* cli_args.c - a command's command line parsed by its table entry
 * (struct cmd_entry, cli.h: its options, repeatable ones, its number of
 * arguments) and dispatched: a job command's handler appends its jobs,
 * which go to pvagentd when one answers (cli_daemon_submit), else run
 * here (cli_run_here); resume's job goes to pvagentd too; any other
 * handler does its work here. */
#include "cli.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cmd_args_free(struct cmd_args *a)
{
	free(a->v);
	memset(a, 0, sizeof *a);
}

static const char *opt_name(const struct cmd_entry *e, int opt, char *buf, size_t n)
{
	for (const struct option *o = e->longopts; o && o->name; o++)
		if (o->val == opt) {
			snprintf(buf, n, "--%s", o->name);
			return buf;
		}
	snprintf(buf, n, "-%c", opt);
	return buf;
}

/* The long option of e nearest to a mistyped one ("nodee"), or NULL;
 * "--name=value" is compared by its name. */
static const char *closest_option(const struct cmd_entry *e, const char *typed)
{
	size_t n = 1;
	for (const struct option *o = e->longopts; o && o->name; o++)
		n++;
	const char **names = malloc(n * sizeof *names);
	char *name = strndup(typed, strcspn(typed, "="));
	const char *near = NULL;
	if (names && name) {
		n = 0;
		for (const struct option *o = e->longopts; o && o->name; o++)
			names[n++] = o->name;
		names[n++] = "help";
		near = str_closest(name, names, n);
	}
	free(names);
	free(name);
	return near;
}

int cmd_args_parse(const struct cmd_entry *e, int argc, char **argv, struct cmd_args *a)
{
	memset(a, 0, sizeof *a);
	a->cmd = e->name;
	a->cmdline = argv;
	/* optind 0: GNU getopt starts afresh, permuting options and arguments */
	optind = 0;
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, e->shortopts ? e->shortopts : "", e->longopts,
				  NULL)) != -1) {
		if (opt == '?' || opt == ':') {
			/* said here (opterr 0), in the one prefix, with the
			 * nearest option of the command for a mistyped one */
			const char *bad = optind > 0 && optind <= argc ? argv[optind - 1] : "";
			bool is_long = strncmp(bad, "--", 2) == 0;
			bool needs_arg = false;
			if (optopt && !is_long) {
				const char *p = e->shortopts ? strchr(e->shortopts, optopt) : NULL;
				needs_arg = p && p[1] == ':';
			} else if (is_long) {
				for (const struct option *o = e->longopts; o && o->name; o++)
					if (strcmp(o->name, bad + 2) == 0)
						needs_arg = o->has_arg == required_argument;
			}
			const char *near = !needs_arg && is_long ? closest_option(e, bad + 2) : NULL;
			if (needs_arg)
				cli_error("usage", e->name, "option '%s' needs an argument",
					  is_long ? bad : (char[]){'-', (char)optopt, 0});
			else if (near)
				cli_error("usage", e->name, "unknown option '%s' (did you mean '--%s'?)",
					  bad, near);
			else if (optopt && !is_long)
				cli_error("usage", e->name, "unknown option '-%c'", optopt);
			else
				cli_error("usage", e->name, "unknown option '%s'", bad);
			cmd_args_free(a);
			fprintf(stderr, "(see pvagent %s --help)\n", e->name);
			return EXIT_USAGE;
		}
		const char *val = optarg;
		bool again = false;
		for (size_t i = 0; i < a->n; i++) {
			if (a->v[i].opt != opt || (e->repeatable && strchr(e->repeatable, opt)))
				continue;
			if ((val && a->v[i].val && strcmp(val, a->v[i].val) != 0) ||
			    (!val != !a->v[i].val)) {
				char nb[64];
				cli_error("usage", e->name, "%s given twice with different values "
					  "('%s' and '%s')", opt_name(e, opt, nb, sizeof nb),
					  a->v[i].val ? a->v[i].val : "", val ? val : "");
				cmd_args_free(a);
				return EXIT_USAGE;
			}
			again = true;
		}
		if (again)
			continue;
		struct cmd_opt *nv = realloc(a->v, (a->n + 1) * sizeof *nv);
		if (!nv) {
			cmd_args_free(a);
			fprintf(stderr, "pvagent: out of memory\n");
			return 1;
		}
		a->v = nv;
		a->v[a->n++] = (struct cmd_opt){opt, val};
	}
	a->argc = argc - optind;
	a->argv = argv + optind;
	const char *what = e->arg_name ? e->arg_name : "argument";
	if (a->argc < e->min_args || (e->max_args >= 0 && a->argc > e->max_args)) {
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
		cmd_args_free(a);
		return EXIT_USAGE;
	}
	return 0;
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
