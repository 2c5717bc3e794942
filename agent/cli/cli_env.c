/* cli_env.c - what every command of the pvagent command line shares
 * (cli.h): its configuration, PVE client and job store, opened on first
 * use; usage and configuration errors said once and kept for --json's
 * final object; exit codes; the stop flag Ctrl-C and SIGTERM set. */
#include "cli.h"

#include "guest.h"
#include "inventory.h"
#include "json.h"
#include "log.h"
#include "output.h"
#include "store.h"
#include "util.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first usage or configuration error, for --json's final object. */
static struct {
	const char *kind, *cmd;
	char *message;
} cli_err;
/* The command being run ("up"), for the one error prefix "pvagent up: ". */
static const char *cli_cmd;

void cli_set_command(const char *name)
{
	cli_cmd = name;
}

void cli_error_note(const char *kind, const char *cmd, char *msg)
{
	if (!cli_err.kind) {
		cli_err.kind = kind;
		cli_err.cmd = cmd;
		cli_err.message = msg;
	} else {
		free(msg);
	}
}

int cli_error(const char *kind, const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *msg = len >= 0 ? malloc((size_t)len + 1) : NULL;
	if (msg) {
		va_start(ap, fmt);
		vsnprintf(msg, (size_t)len + 1, fmt, ap);
		va_end(ap);
	}
	if (!cmd)
		cmd = cli_cmd;
	if (cmd)
		fprintf(stderr, "pvagent %s: %s\n", cmd, msg ? msg : fmt);
	else
		fprintf(stderr, "pvagent: %s\n", msg ? msg : fmt);
	cli_error_note(kind, cmd, msg);
	return EXIT_USAGE;
}

int cli_usage_error(const char *cmd, const char *what, const char *arg)
{
	cli_error("usage", cmd, "%s '%s'", what, arg);
	fprintf(stderr, "(see pvagent %s --help)\n", cmd);
	return EXIT_USAGE;
}

/* The error object, with --json, of an error said by cli_error or
 * cli_fail_pve. */
static void print_error_json(const struct cli *cli, const char *cmd, int code, const char *kind,
			     const char *msg)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "command", cmd ? json_object_new_string(cmd) : NULL);
	out_result_members(o, cli->subject, 0, NULL, code ? code : 1, kind, msg ? msg : "error",
			   NULL);
	out_json_line(stdout, o);
	json_object_put(o);
}

int cli_finish_error(struct cli *cli, const char *cmd, int rc)
{
	/* every outcome ends with one final object; a message said only on
	 * stderr (none kept) is pointed at */
	if (cli->json && rc != 0 && !out_json_result_printed() && !cli->outcome_said)
		print_error_json(cli, cli_err.cmd ? cli_err.cmd : cmd, rc,
				 cli_err.kind ? cli_err.kind : "failed",
				 cli_err.message ? cli_err.message : "failed (see standard error)");
	free(cli_err.message);
	cli_err.message = NULL;
	return rc;
}

/* ---- configuration and client ------------------------------------------ */

int cli_load_conf(struct cli *cli)
{
	if (cli->conf_loaded)
		return 0;
	char *err = NULL;
	int rc = conf_load(cli->conf_path, &cli->conf, &err);
	if (rc < 0) {
		cli_error("config", NULL, "%s", err ? err : "cannot load the configuration");
		free(err);
		return EXIT_USAGE;
	}
	cli->conf_loaded = true;
	return 0;
}

const char *cli_stop_word(void)
{
	return cli_cancelled ? "cancelled" : "interrupted";
}

void cli_job_result_members(json_object *o, struct job *j, int code)
{
	const struct pve_error *e = job_error(j);
	bool stopped = job_outcome(j) == JOB_OUT_INTERRUPTED;
	char *m = e->kind != PVE_OK && !stopped ? pve_error_format(e) : NULL;
	/* a stop is said as one, never as the error the stop caused */
	out_result_members(o, job_subject(j), job_vmid(j), job_node(j), code,
			   stopped ? cli_stop_word()
			   : e->kind != PVE_OK ? pve_err_kind_name(e->kind) : NULL,
			   stopped ? job_left(j) : m, job_failed_step(j));
	free(m);
}

/* Report a PVE error and return its exit code. */
int cli_fail_pve(struct cli *cli, const char *cmd, struct pve_error *e)
{
	int code = cli_exit_code(pve_error_outcome(e));
	char *msg = pve_error_format(e);
	if (cli->json) {
		print_error_json(cli, cmd, code, pve_err_kind_name(e->kind), msg);
	}
	log_error("%s", msg ? msg : "error");
	free(msg);
	pve_error_clear(e);
	return code;
}

/* The job environment of a command run in this process: state.db, its
 * events to pp, the stop flag and the configuration. 0, or -1. */
int cli_job_env(struct cli *cli, struct event_print *pp, struct job_env *env)
{
	*env = (struct job_env){
		.store = cli_store(cli),
		.on_event = on_job_event,
		.event_ctx = pp,
		.stop = &cli_stop,
		.conf = &cli->conf,
	};
	return job_env_init(env);
}

int cli_connect_pve(struct cli *cli)
{
	if (cli->pve)
		return 0;
	int rc = cli_load_conf(cli);
	if (rc)
		return rc;
	struct pve_opts o = job_conf_pve_opts(&cli->conf);
	o.unreachable_once = true; /* a wrong url: said at once, not after retries */
	struct pve_error e = {0};
	cli->pve = pve_new(&o, &e);
	if (!cli->pve)
		return cli_fail_pve(cli, "connect", &e);
	return 0;
}

int cli_exit_code(enum job_outcome o)
{
	switch (o) {
	case JOB_OUT_DONE: return 0;
	case JOB_OUT_FAILED: return 1;
	case JOB_OUT_USAGE: return EXIT_USAGE;
	case JOB_OUT_NEEDS_ATTENTION: return 3;
	case JOB_OUT_UNREACHABLE: return 4;
	case JOB_OUT_INTERRUPTED: return EXIT_INTERRUPTED;
	}
	return 1;
}

/* The outcome an exit code says (any other: failed). */
static enum job_outcome exit_outcome(int code)
{
	for (enum job_outcome o = JOB_OUT_DONE; o <= JOB_OUT_INTERRUPTED; o++)
		if (cli_exit_code(o) == code)
			return o;
	return JOB_OUT_FAILED;
}

int cli_exit_worse(int a, int b)
{
	return job_outcome_worse(exit_outcome(a), exit_outcome(b)) == exit_outcome(a) ? a : b;
}

struct store *cli_store(struct cli *cli)
{
	if (cli->store || cli->store_failed)
		return cli->store;
	if (cli_load_conf(cli))
		return NULL;
	char *path = store_path(cli->conf.paths.state), *err = NULL;
	if (!path || store_open(path, &cli->store, &err) < 0) {
		log_warn("jobs are not recorded (they cannot be resumed): %s",
			 err ? err : "out of memory");
		cli->store_failed = true;
	}
	free(path);
	free(err);
	return cli->store;
}

/* Ctrl-C or SIGTERM: the running job stops at once between steps (its
 * waits end; its UPIDs are recorded) and is kept as interrupted. A second
 * one quits at once. SIGUSR1 is `pvagent cancel` (itself, or pvagentd for
 * it): the same stop, said as a cancel. */
volatile sig_atomic_t cli_stop, cli_cancelled;

static void on_stop_signal(int sig)
{
	if (cli_stop && sig != SIGUSR1) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	if (cli_stop)
		return;
	cli_stop = 1;
	static const char msg[] = "\npvagent: stopping: the job is kept as it is now (again to "
				  "quit at once)\n";
	static const char cmsg[] = "\npvagent: cancelled by 'pvagent cancel': stopping\n";
	ssize_t w;
	if (sig == SIGUSR1) {
		cli_cancelled = 1;
		w = write(STDERR_FILENO, cmsg, sizeof cmsg - 1);
	} else {
		w = write(STDERR_FILENO, msg, sizeof msg - 1);
	}
	(void)w;
}

void cli_catch_stop_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
}

/* A --node given: is it one of the cluster's? 0, or an exit code (said:
 * EXIT_USAGE with the nodes there are). */
int cli_check_node(struct cli *cli, const char *cmd, const char *node, const char *from)
{
	return cli_check_node_keep(cli, cmd, node, from, NULL);
}

int cli_check_node_keep(struct cli *cli, const char *cmd, const char *node, const char *from,
			json_object **keep)
{
	int rc = cli_connect_pve(cli);
	if (rc || !node)
		return rc;
	json_object *nodes = NULL;
	struct pve_error e = {0};
	if (inventory_nodes(cli->pve, &nodes, &e) < 0)
		return cli_fail_pve(cli, cmd, &e);
	size_t n = json_object_array_length(nodes);
	struct sbuf list = {0};
	const char **names = n ? calloc(n, sizeof *names) : NULL;
	for (size_t i = 0; i < n; i++) {
		const char *name = json_text(json_object_array_get_idx(nodes, i), "node");
		if (name && strcmp(name, node) == 0) {
			sbuf_free(&list);
			free(names);
			if (keep)
				*keep = nodes;
			else
				json_object_put(nodes);
			return 0;
		}
		if (name)
			sbuf_addf(&list, "%s%s", list.len ? ", " : "", name);
		if (names)
			names[i] = name;
	}
	const char *near = names ? str_closest(node, names, n) : NULL;
	pve_error_set(&e, PVE_ERR_NOT_FOUND, "%s%sno node '%s' in the cluster%s%s%s; nodes: %s",
		      from ? from : "", from ? ": " : "", node, near ? " (did you mean '" : "",
		      near ? near : "", near ? "'?)" : "", list.len ? sbuf_str(&list) : "none");
	free(names);
	sbuf_free(&list);
	json_object_put(nodes);
	return cli_fail_pve(cli, cmd, &e);
}

int cli_check_guest(struct cli *cli, const char *cmd, const char *name)
{
	int rc = cli_connect_pve(cli);
	if (rc)
		return rc;
	struct guest_ref g = {0};
	struct pve_error e = {0};
	int f = guest_find_listed(cli->pve, name, &g, &e);
	guest_ref_clear(&g);
	cli->subject = name;
	if (f == 0)
		guest_not_found(name, &e);
	return f <= 0 ? cli_fail_pve(cli, cmd, &e) : 0;
}

int cli_parse_count(const char *cmd, const char *opt, const char *arg, long min, long max,
		       long *out)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (!*arg || *end || v < min || v > max) {
		fprintf(stderr, "pvagent %s: %s %s: expected a number from %ld to %ld\n", cmd, opt,
			arg, min, max);
		return EXIT_USAGE;
	}
	*out = v;
	return 0;
}
