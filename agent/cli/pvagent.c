/* pvagent.c - the command-line tool's main: global options (also after
 * the command), completion, and the command found in the command table
 * (cli_table.c) and dispatched (cli_args.c: in this process, or its jobs
 * submitted to pvagentd). What every command shares is in cli_env.c; up
 * and down in cli_up.c, the guest-side commands in cli_guest.c, and so on
 * (cli.h).
 *
 *   pvagent [-c CONF] [--json] [-v|-q] COMMAND ...
 *   (the global options may also follow the command: late_globals)
 *
 * Exit codes (pvagent(1) EXIT STATUS): 0 done; 1 failed, nothing left
 * half-done; 2 usage or configuration error, or what was named does not
 * exist; 3 failed and needs attention; 4 cannot reach or authenticate to
 * PVE or a guest; 130 interrupted or cancelled. */
#include "cli.h"
#include "json.h"
#include "conf.h"
#include "guest.h"
#include "inventory.h"
#include "jobpool.h"
#include "log.h"
#include "output.h"
#include "store.h"
#include "pve.h"
#include "tmpl.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>



/* The global options (main's), as they may also follow the command. */
static const struct {
	const char *name;
	char c; /* its short form, or 0 */
} globals[] = {{"config", 'c'}, {"json", 0}, {"local", 0}, {"verbose", 'v'}, {"quiet", 'q'}};

/* Has command e (its params' options and its own) a long option of that
 * name (n bytes), taking an argument (*needs_arg)? */
static bool cmd_has_long(const struct cmd_entry *e, const char *name, size_t n, bool *needs_arg)
{
	struct cmd_opts o = {0};
	bool has = false;
	if (e && cmd_opts_build(e, &o) == 0)
		for (size_t i = 0; i < o.n && !has; i++)
			if (strlen(o.longopts[i].name) == n && strncmp(o.longopts[i].name, name, n) == 0) {
				*needs_arg = o.longopts[i].has_arg == required_argument;
				has = true;
			}
	cmd_opts_free(&o);
	return has;
}

static bool cmd_has_short(const struct cmd_entry *e, char c, bool *needs_arg)
{
	struct cmd_opts o = {0};
	const char *p = e && c != ':' && cmd_opts_build(e, &o) == 0 ? strchr(o.shortopts, c) : NULL;
	*needs_arg = p && p[1] == ':';
	cmd_opts_free(&o);
	return p != NULL;
}

/* pvagent __complete commands|options CMD|templates|guests|nodes|jobs|
 * open-jobs: one candidate a line, for conf/pvagent.bash-completion;
 * quietly nothing on failure. */
static int complete(struct cli *cli, int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	if (strcmp(what, "jobs") == 0 || strcmp(what, "open-jobs") == 0) {
		/* job IDs from the store: the newest 50, or the unfinished ones
		 * (what resume and cancel take) */
		struct store *st = cli_store(cli);
		struct store_job *v = NULL;
		size_t n = 0;
		char *err = NULL;
		if (st && (what[0] == 'j' ? store_jobs_list(st, 50, &v, &n, &err)
					  : store_jobs_unfinished(st, &v, &n, &err)) == 0)
			for (size_t i = 0; i < n; i++)
				printf("%lld\n", v[i].id);
		store_jobs_free(v, n);
		free(err);
	} else if (strcmp(what, "commands") == 0) {
		for (const struct cmd_entry *const *c = cli_commands(); *c; c++)
			printf("%s\n", (*c)->name);
	} else if (strcmp(what, "options") == 0) {
		const struct cmd_entry *e = argc > 2 ? cli_find_command(argv[2]) : NULL;
		struct cmd_opts opts = {0};
		if (e && cmd_opts_build(e, &opts) == 0)
			for (size_t i = 0; i < opts.n; i++)
				printf("--%s\n", opts.longopts[i].name);
		cmd_opts_free(&opts);
		/* the global options, which may follow the command too */
		for (size_t g = 0; e && g < sizeof globals / sizeof *globals; g++) {
			bool arg;
			if (!cmd_has_long(e, globals[g].name, strlen(globals[g].name), &arg))
				printf("--%s\n", globals[g].name);
		}
		if (e)
			printf("--help\n");
		else
			printf("--config\n--json\n--local\n--verbose\n--quiet\n--help\n--version\n");
	} else if (strcmp(what, "templates") == 0 || strcmp(what, "guests") == 0 ||
		   strcmp(what, "nodes") == 0) {
		char *err = NULL;
		if (conf_load(cli->conf_path, &cli->conf, &err) < 0) {
			free(err);
			return 0;
		}
		cli->conf_loaded = true;
		if (what[0] == 't') {
			struct tmpl_info *list = NULL;
			size_t n = 0;
			if (tmpl_list((const char *const *)cli->conf.paths.templates, &list, &n, &err) < 0) {
				free(err);
				return 0;
			}
			for (size_t i = 0; i < n; i++)
				printf("%s\n", list[i].name);
			tmpl_list_free(list, n);
			return 0;
		}
		/* a shell waits for this: two seconds at most */
		cli->conf.pve.timeout = 2;
		struct pve_opts o = job_conf_pve_opts(&cli->conf);
		struct pve_error e = {0};
		json_object *guests = NULL;
		cli->pve = pve_new(&o, &e);
		bool nodes = what[0] == 'n';
		if (cli->pve && (nodes ? inventory_nodes(cli->pve, &guests, &e)
				       : inventory_guests(cli->pve, NULL, &guests, &e)) == 0) {
			for (size_t i = 0; i < json_object_array_length(guests); i++) {
				json_object *g = json_object_array_get_idx(guests, i), *tv = NULL;
				const char *n = json_text(g, nodes ? "node" : "name");
				/* a template VM is never a command's guest */
				if (json_object_object_get_ex(g, "template", &tv) &&
				    json_object_get_boolean(tv))
					continue;
				if (n && *n)
					printf("%s\n", n);
			}
		}
		json_object_put(guests);
		pve_error_clear(&e);
	}
	return 0;
}

/* The global options given after the command (`pvagent list --json`), as
 * git and docker users expect: applied and taken out of argv (argv[0] the
 * command; *argc updated), but where the command has an option of that
 * name, which stays the command's. The arguments of the command's options
 * and everything after "--" are left alone. 0, or EXIT_USAGE (said). */
static int late_globals(struct cli *cli, const struct cmd_entry *e, int *argc, char **argv)
{
	int out = 1, i = 1;
	for (; i < *argc; i++) {
		char *t = argv[i];
		bool needs_arg = false;
		if (strcmp(t, "--") == 0)
			break;
		if (strncmp(t, "--", 2) == 0) {
			const char *name = t + 2;
			size_t n = strcspn(name, "=");
			size_t g = 0;
			while (g < sizeof globals / sizeof *globals &&
			       !(strlen(globals[g].name) == n && strncmp(globals[g].name, name, n) == 0))
				g++;
			if (cmd_has_long(e, name, n, &needs_arg) || g == sizeof globals / sizeof *globals) {
				argv[out++] = t;
				if (needs_arg && !name[n] && i + 1 < *argc)
					argv[out++] = argv[++i];
				continue;
			}
			const char *val = name[n] == '=' ? name + n + 1 : NULL;
			if (g == 0 && !val && i + 1 >= *argc)
				return cli_error("usage", e->name, "option '--config' needs an argument");
			if (g == 0)
				cli->conf_path = val ? val : argv[++i];
			else if (val)
				return cli_error("usage", e->name, "option '--%s' takes no value",
						 globals[g].name);
			cli->json |= g == 1;
			cli->local |= g == 2;
			cli->verbosity += (g == 3) - (g == 4);
			continue;
		}
		if (t[0] != '-' || !t[1] || cmd_has_short(e, t[1], &needs_arg)) {
			argv[out++] = t;
			if (needs_arg && !t[2] && i + 1 < *argc)
				argv[out++] = argv[++i];
			continue;
		}
		if (t[1] == 'c') {
			if (!t[2] && i + 1 >= *argc)
				return cli_error("usage", e->name, "option '-c' needs an argument");
			cli->conf_path = t[2] ? t + 2 : argv[++i];
			continue;
		}
		/* -v, -vv, -q: only when every letter is a global one */
		bool all = strspn(t + 1, "vq") == strlen(t + 1);
		for (const char *p = t + 1; all && *p; p++)
			all = !cmd_has_short(e, *p, &needs_arg);
		if (!all) {
			argv[out++] = t;
			continue;
		}
		for (const char *p = t + 1; *p; p++)
			cli->verbosity += *p == 'v' ? 1 : -1;
	}
	while (i < *argc)
		argv[out++] = argv[i++];
	argv[out] = NULL;
	*argc = out;
	return 0;
}

/* COMMAND --help or -h anywhere before "--" */
static bool asks_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}


int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"config", required_argument, NULL, 'c'},
		{"json", no_argument, NULL, 'j'},
		{"local", no_argument, NULL, 'L'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'R'},
		{NULL, 0, NULL, 0},
	};
	struct cli cli = {0};
	int opt;
	while ((opt = getopt_long(argc, argv, "+c:vqh", lo, NULL)) != -1) {
		switch (opt) {
		case 'c': cli.conf_path = optarg; break;
		case 'j': cli.json = true; break;
		case 'L': cli.local = true; break;
		case 'v': cli.verbosity++; break;
		case 'q': cli.verbosity--; break;
		case 'h': cli_usage(stdout); return 0;
		case 'R': printf("pvagent %s\n", PVAGENT_VERSION); return 0;
		default:
			cli_error_note("usage", NULL,
				       strprintf("unknown option '%s'", argv[optind - 1]));
			cli_usage(stderr);
			return cli_finish_error(&cli, NULL, EXIT_USAGE);
		}
	}
	if (optind >= argc) {
		cli_error("usage", NULL, "needs a command");
		cli_usage(stderr);
		return cli_finish_error(&cli, NULL, EXIT_USAGE);
	}
	log_set_level(log_level_from_verbosity(cli.verbosity));
	const char *name = argv[optind];
	bool completing = strcmp(name, "__complete") == 0;
	const struct cmd_entry *cmd = completing ? NULL : cli_find_command(name);
	if (!cmd && strcmp(name, cmd_submitted_entry.name) == 0)
		cmd = &cmd_submitted_entry; /* pvagentd's own: not in the table */
	if (!cmd && !completing) {
		size_t n = 0;
		while (cli_commands()[n])
			n++;
		const char **names = malloc(n * sizeof *names);
		for (size_t i = 0; names && i < n; i++)
			names[i] = cli_commands()[i]->name;
		const char *near = names ? str_closest(name, names, n) : NULL;
		free(names);
		if (near) {
			cli_error("unknown-command", NULL, "unknown command '%s' (did you mean '%s'?)",
				  name, near);
			fprintf(stderr, "(see pvagent help %s)\n", near);
		} else {
			cli_error("unknown-command", NULL, "unknown command '%s'", name);
			cli_usage(stderr);
		}
		return cli_finish_error(&cli, name, EXIT_USAGE);
	}
	/* one error prefix: "pvagent COMMAND: " */
	char *ident = cmd ? strprintf("pvagent %s", cmd->name) : NULL;
	if (ident) {
		cli_set_command(cmd->name);
		log_set_ident(ident);
	}
	int cmd_argc = argc - optind;
	if (cmd && cmd != &cmd_submitted_entry) {
		int lr = late_globals(&cli, cmd, &cmd_argc, argv + optind);
		if (lr) {
			free(ident);
			log_set_ident(NULL);
			return cli_finish_error(&cli, name, lr);
		}
		log_set_level(log_level_from_verbosity(cli.verbosity));
	}
	if (cmd && asks_help(cmd_argc, argv + optind)) {
		free(ident);
		cli_command_help(stdout, cmd);
		return 0;
	}
	/* The command's options and arguments are parsed from its name on, by
	 * its entry (GNU getopt permuting again, unlike the "+" mode of the
	 * global options above). */
	int rc;
	if (completing) {
		rc = complete(&cli, argc - optind, argv + optind);
	} else {
		cli_catch_stop_signals();
		atexit(cli_progress_at_exit);
		if (cli.local)
			cli_daemon_child_init();
		rc = cmd_dispatch(&cli, cmd, cmd_argc, argv + optind);
		if (cli.local)
			cli_daemon_child_end();
		rc = cli_finish_error(&cli, name, rc);
	}
	pve_free(cli.pve);
	store_close(cli.store);
	if (cli.conf_loaded)
		conf_free(&cli.conf);
	pve_global_cleanup();
	log_secret_clear();
	log_set_ident(NULL);
	free(ident);
	return rc;
}
