/* pvagent.c - the command-line tool: global options, configuration,
 * the command table, and how each command's result is printed (text
 * tables, or JSON lines with --json). The work itself lives in the
 * library modules; the guest-side commands (inject, virtio, bench) are
 * in cli_guest.c.
 *
 *   pvagent [-c CONF] [--json] [-v|-q] COMMAND ...
 *
 * Exit codes (pvagent(1) EXIT STATUS): 0 done; 1 failed, nothing left half-done;
 * 2 usage or configuration error; 3 failed and needs attention; 4 cannot
 * reach or authenticate to PVE or a guest. */
#include "cli.h"
#include "json.h"
#include "conf.h"
#include "guest.h"
#include "inventory.h"
#include "log.h"
#include "output.h"
#include "provision.h"
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

/* The first usage or configuration error, for --json's final object. */
static struct {
	const char *kind, *cmd;
	char *message;
} cli_err;

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
	if (cmd)
		fprintf(stderr, "pvagent %s: %s\n", cmd, msg ? msg : fmt);
	else
		fprintf(stderr, "pvagent: %s\n", msg ? msg : fmt);
	if (!cli_err.kind) {
		cli_err.kind = kind;
		cli_err.cmd = cmd;
		cli_err.message = msg;
	} else {
		free(msg);
	}
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

void cli_job_result_members(json_object *o, struct job *j, int code)
{
	const struct pve_error *e = job_error(j);
	char *m = e->kind != PVE_OK ? pve_error_format(e) : NULL;
	out_result_members(o, job_subject(j), job_vmid(j), job_node(j), code,
			   e->kind != PVE_OK ? pve_err_kind_name(e->kind) : NULL, m,
			   job_failed_step(j));
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
	int rc = cli_load_conf(cli);
	if (rc)
		return rc;
	struct pve_opts o = job_conf_pve_opts(&cli->conf);
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
 * one quits at once. */
volatile sig_atomic_t cli_stop;

static void on_stop_signal(int sig)
{
	if (cli_stop) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	cli_stop = 1;
	static const char msg[] = "\npvagent: stopping after the current step (again to quit "
				  "at once)\n";
	ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
	(void)w;
}

static void catch_stop_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* ---- printing helpers ---------------------------------------------------- */

static void print_result(struct cli *cli, const char *cmd, const char *key, json_object *v)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "result", json_object_new_string("ok"));
	json_object_object_add(o, "command", json_object_new_string(cmd));
	json_object_object_add(o, key, json_object_get(v));
	json_object_object_add(o, "exit", json_object_new_int(0));
	out_json_line(stdout, o);
	json_object_put(o);
}

static double num(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_double(v) : 0;
}

/* ---- command arguments ----------------------------------------------------- */

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
	int opt;
	while ((opt = getopt_long(argc, argv, e->shortopts ? e->shortopts : "", e->longopts,
				  NULL)) != -1) {
		if (opt == '?' || opt == ':') {
			/* getopt said which on stderr; the same for --json, with the
			 * nearest option of the command for a mistyped one */
			const char *bad = optind > 0 && optind <= argc ? argv[optind - 1] : "";
			const char *near = !optopt && strncmp(bad, "--", 2) == 0
				? closest_option(e, bad + 2) : NULL;
			if (near)
				fprintf(stderr, "pvagent %s: did you mean '--%s'?\n", e->name, near);
			if (!cli_err.kind) {
				cli_err.kind = "usage";
				cli_err.cmd = e->name;
				cli_err.message = optopt ? strprintf("option -%c: unknown or needs an "
								     "argument", optopt)
					: near ? strprintf("unknown option '%s' (did you mean '--%s'?)", bad,
							   near)
					: strprintf("unknown option '%s'", bad);
			}
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
				  e->min_args == 1 ? "one" : "more", what);
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

int cmd_dispatch(struct cli *cli, const struct cmd_entry *e, int argc, char **argv)
{
	struct cmd_args a;
	int rc = cmd_args_parse(e, argc, argv, &a);
	if (rc)
		return rc;
	bool handled = false;
	rc = cli_daemon_submit(cli, e, &a, &handled);
	if (!handled)
		rc = e->run(cli, &a);
	cmd_args_free(&a);
	return rc;
}

/* ---- nodes ---------------------------------------------------------------- */

static int cmd_nodes(struct cli *cli, const struct cmd_args *a)
{
	(void)a;
	int rc = cli_connect_pve(cli);
	if (rc)
		return rc;
	json_object *nodes = NULL;
	struct pve_error e = {0};
	if (inventory_nodes(cli->pve, &nodes, &e) < 0)
		return cli_fail_pve(cli, "nodes", &e);
	if (cli->json) {
		print_result(cli, "nodes", "nodes", nodes);
	} else {
		const char *hdr[] = {"NODE", "STATUS", "CPU", "MEMORY", "UPTIME"};
		struct table *t = table_new(5, hdr);
		for (size_t i = 0; t && i < json_object_array_length(nodes); i++) {
			json_object *n = json_object_array_get_idx(nodes, i);
			char cpu[64] = "-", mem[96] = "-", used[24], total[24], up[32] = "-";
			/* PVE leaves the figures out without Sys.Audit on /nodes/NODE */
			if (json_object_object_get(n, "maxcpu"))
				snprintf(cpu, sizeof cpu, "%.0f%% of %.0f", num(n, "cpu") * 100,
					 num(n, "maxcpu"));
			if (json_object_object_get(n, "maxmem"))
				snprintf(mem, sizeof mem, "%s / %s",
					 out_bytes(used, sizeof used, num(n, "mem")),
					 out_bytes(total, sizeof total, num(n, "maxmem")));
			long secs = (long)num(n, "uptime");
			if (json_object_object_get(n, "uptime"))
				snprintf(up, sizeof up, "%ldd %02ldh", secs / 86400,
					 secs % 86400 / 3600);
			const char *row[] = {json_text(n, "node"), json_text(n, "status"), cpu, mem, up};
			table_add(t, row);
		}
		if (t)
			table_print(t, stdout);
		table_free(t);
	}
	json_object_put(nodes);
	return 0;
}

/* ---- list ----------------------------------------------------------------- */

/* A --node given: is it one of the cluster's? 0, or an exit code (said:
 * EXIT_USAGE with the nodes there are). */
static int check_node(struct cli *cli, const char *cmd, const char *node)
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
			json_object_put(nodes);
			return 0;
		}
		if (name)
			sbuf_addf(&list, "%s%s", list.len ? ", " : "", name);
		if (names)
			names[i] = name;
	}
	const char *near = names ? str_closest(node, names, n) : NULL;
	pve_error_set(&e, PVE_ERR_CONFIG, "no node '%s' in the cluster%s%s%s; nodes: %s", node,
		      near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "",
		      list.len ? sbuf_str(&list) : "none");
	free(names);
	sbuf_free(&list);
	json_object_put(nodes);
	return cli_fail_pve(cli, cmd, &e);
}

/* list --long: the configs read this many at once */
#define LIST_CONFIG_READS 8

static int cmd_list(struct cli *cli, const struct cmd_args *a)
{
	const char *node = NULL;
	bool longer = false;
	for (size_t i = 0; i < a->n; i++) {
		if (a->v[i].opt == 'n')
			node = a->v[i].val;
		longer |= a->v[i].opt == 'l';
	}
	int rc = check_node(cli, "list", node);
	if (rc)
		return rc;
	json_object *guests = NULL;
	struct pve_error e = {0};
	if (inventory_guests(cli->pve, node, &guests, &e) < 0)
		return cli_fail_pve(cli, "list", &e);
	struct pve_opts po = job_conf_pve_opts(&cli->conf);
	if (longer && inventory_guests_hw(cli->pve, &po, LIST_CONFIG_READS, guests, &e) < 0) {
		json_object_put(guests);
		return cli_fail_pve(cli, "list", &e);
	}
	if (cli->json) {
		print_result(cli, "list", "guests", guests);
	} else {
		const char *hdr[] = {"VMID", "NAME", "NODE", "TYPE", "STATUS", "MEMORY", "TAGS", "DISK",
				     "NIC"};
		struct table *t = table_new(longer ? 9 : 7, hdr);
		for (size_t i = 0; t && i < json_object_array_length(guests); i++) {
			json_object *g = json_object_array_get_idx(guests, i);
			json_object *tv = NULL;
			json_object_object_get_ex(g, "template", &tv);
			const char *lock = json_text(g, "lock");
			char status[64];
			snprintf(status, sizeof status, "%s%s%s%s",
				 json_object_get_boolean(tv) ? "template" : json_text(g, "status"),
				 lock ? " (lock: " : "", lock ? lock : "", lock ? ")" : "");
			char mem[24] = "-";
			if (json_object_object_get(g, "maxmem"))
				out_bytes(mem, sizeof mem, num(g, "maxmem"));
			const char *tags = json_text(g, "tags");
			const char *row[] = {json_text(g, "vmid"), json_text(g, "name"), json_text(g, "node"),
					     json_text(g, "type"), status, mem, tags && *tags ? tags : "-",
					     json_text(g, "disk_bus"), json_text(g, "nic_model")};
			table_add(t, row);
		}
		if (t)
			table_print(t, stdout);
		table_free(t);
	}
	json_object_put(guests);
	return 0;
}

/* ---- templates -------------------------------------------------------------- */

static int cmd_templates(struct cli *cli, const struct cmd_args *args)
{
	(void)args;
	int rc = cli_load_conf(cli);
	if (rc)
		return rc;
	struct tmpl_info *list = NULL;
	size_t n = 0;
	char *err = NULL;
	if (tmpl_list((const char *const *)cli->conf.paths.templates, &list, &n, &err) < 0) {
		cli_error("template", "templates", "%s", err ? err : "cannot list templates");
		free(err);
		return 1;
	}
	if (n == 0) {
		/* say where it looked, so the fix is obvious */
		struct sbuf b = {0};
		for (char **d = cli->conf.paths.templates; d && *d; d++)
			sbuf_addf(&b, "%s%s", d == cli->conf.paths.templates ? "" : ", ", *d);
		log_warn("no templates found; searched: %s (set [paths] templates in %s)",
			 b.len ? sbuf_str(&b) : "(no directories)",
			 cli->conf.path ? cli->conf.path : "pvagent.conf");
		sbuf_free(&b);
	}
	int bad = 0;
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		const struct tmpl *t = list[i].tmpl;
		json_object *o = json_object_new_object();
		json_object_object_add(o, "name", json_object_new_string(list[i].name));
		json_object_object_add(o, "path", json_object_new_string(list[i].path));
		if (t) {
			const char *src = t->source.clone.value ? t->source.clone.value
					: t->source.ostemplate.value ? t->source.ostemplate.value
					: t->source.iso.value;
			json_object_object_add(o, "kind", json_object_new_string(tmpl_kind_name(t->kind)));
			json_object_object_add(o, "os", json_object_new_string(t->os ? t->os : ""));
			json_object_object_add(o, "os_version",
					       json_object_new_string(t->os_version ? t->os_version : ""));
			json_object_object_add(o, "source", src ? json_object_new_string(src) : NULL);
			json_object_object_add(o, "description", t->description
					       ? json_object_new_string(t->description) : NULL);
		} else {
			bad++;
			json_object_object_add(o, "error", json_object_new_string(list[i].error));
		}
		json_object_array_add(a, o);
	}
	if (cli->json) {
		print_result(cli, "templates", "templates", a);
	} else {
		const char *hdr[] = {"TEMPLATE", "KIND", "OS", "SOURCE", "DESCRIPTION"};
		struct table *t = table_new(5, hdr);
		for (size_t i = 0; t && i < json_object_array_length(a); i++) {
			json_object *o = json_object_array_get_idx(a, i);
			char os[128];
			snprintf(os, sizeof os, "%s %s", json_text(o, "os") ? json_text(o, "os") : "",
				 json_text(o, "os_version") ? json_text(o, "os_version") : "");
			const char *row[] = {json_text(o, "name"), json_text(o, "kind") ? json_text(o, "kind") : "invalid",
					     json_text(o, "kind") ? os : "-", json_text(o, "source"),
					     json_text(o, "error") ? json_text(o, "error") : json_text(o, "description")};
			table_add(t, row);
		}
		if (t)
			table_print(t, stdout);
		table_free(t);
	}
	json_object_put(a);
	tmpl_list_free(list, n);
	return bad ? 1 : 0;
}


/* ---- up / down -------------------------------------------------------------- */

void print_results(struct cli *cli, const char *cmd, const struct up_result *r, size_t n,
			  int code)
{
	if (cli->json) {
		json_object *o = json_object_new_object(), *a = json_object_new_array();
		for (size_t i = 0; i < n; i++) {
			json_object *g = up_result_json(&r[i]);
			bool failed = r[i].error.kind != PVE_OK;
			char *m = failed ? pve_error_format(&r[i].error) : NULL;
			if (g)
				out_result_members(g, r[i].name, r[i].vmid, r[i].node,
						   cli_exit_code(r[i].outcome),
						   failed ? pve_err_kind_name(r[i].error.kind) : NULL,
						   m, r[i].failed_step);
			free(m);
			json_object_array_add(a, g);
		}
		json_object_object_add(o, "result", json_object_new_string(code ? "error" : "ok"));
		json_object_object_add(o, "command", json_object_new_string(cmd));
		json_object_object_add(o, "guests", a);
		json_object_object_add(o, "exit", json_object_new_int(code));
		out_json_line(stdout, o);
		json_object_put(o);
		return;
	}
	const char *hdr[] = {"NAME", "VMID", "NODE", "ADDRESS", "RESULT", "TIME"};
	struct table *t = table_new(6, hdr);
	for (size_t i = 0; t && i < n; i++) {
		char vmid[16], secs[32];
		double total = 0;
		for (size_t k = 0; k < r[i].n_steps; k++)
			total += r[i].steps[k].elapsed_s;
		snprintf(vmid, sizeof vmid, "%d", r[i].vmid);
		snprintf(secs, sizeof secs, "%.1fs", total);
		const char *row[] = {r[i].name, r[i].vmid ? vmid : NULL, r[i].node, r[i].address,
				     up_status_name(r[i].status), secs};
		table_add(t, row);
	}
	if (t)
		table_print(t, stdout);
	table_free(t);
	for (size_t i = 0; i < n; i++) {
		if (r[i].pending)
			printf("%s: applied at the next restart: %s\n", r[i].name, r[i].pending);
		if (r[i].outcome == JOB_OUT_INTERRUPTED) {
			log_error("%s: interrupted%s%s; the job is kept: 'pvagent resume %lld' (or the "
				  "same command again) waits for what PVE still does and finishes",
				  r[i].name, r[i].left ? ": " : "", r[i].left ? r[i].left : "",
				  r[i].job);
			continue;
		}
		if (r[i].error.kind != PVE_OK) {
			char *m = pve_error_format(&r[i].error);
			log_error("%s: %s", r[i].name, m ? m : "failed");
			free(m);
		}
		if (r[i].left && r[i].job)
			log_error("%s: needs attention: %s; run the same command again, or 'pvagent "
				  "resume %lld', to finish it",
				  r[i].name, r[i].left, r[i].job);
		else if (r[i].left)
			log_error("%s: needs attention: %s", r[i].name, r[i].left);
	}
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

static int cmd_up(struct cli *cli, const struct cmd_args *a)
{
	const char *tname = NULL, *node = NULL, *storage = NULL, *pool = NULL;
	long vmid = 0, parallel = 4;
	bool no_start = false, full = false, no_inject = false, retemplate = false, dry = false;
	struct tmpl_kvlist sets = {0}, vars = {0};
	char *err = NULL;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < a->n; i++) {
		const char *arg = a->v[i].val;
		switch (a->v[i].opt) {
		case 't': tname = arg; break;
		case 'n': node = arg; break;
		case 's': storage = arg; break;
		case 'i': rc = cli_parse_count("up", "--vmid", arg, 100, 999999999, &vmid); break;
		case 'p': rc = cli_parse_count("up", "--parallel", arg, 1, 64, &parallel); break;
		case 'N': no_start = true; break;
		case 'f': full = true; break;
		case 'I': no_inject = true; break;
		case 'R': retemplate = true; break;
		case 'd': dry = true; break;
		case 'o': pool = arg; break;
		case 'S':
		case 'V':
			if (tmpl_var_arg(a->v[i].opt == 'S' ? &sets : &vars, arg, &err) < 0) {
				cli_error("usage", "up", "%s %s: %s",
					  a->v[i].opt == 'S' ? "--set" : "--var", arg,
					  err ? err : "expected KEY=VALUE");
				free(err);
				rc = EXIT_USAGE;
			}
			break;
		default: rc = EXIT_USAGE; break;
		}
	}
	if (rc == 0 && !tname)
		rc = cli_usage_error("up", "needs a template", "-t TEMPLATE");
	if (rc == 0)
		rc = cli_load_conf(cli);
	if (rc == 0 && node)
		rc = check_node(cli, "up", node);
	struct tmpl *t = NULL;
	if (rc == 0 && tmpl_load((const char *const *)cli->conf.paths.templates, tname, &t, &err) < 0) {
		cli_error("template", "up", "%s", err ? err : "cannot load the template");
		free(err);
		rc = EXIT_USAGE;
	}
	if (rc) {
		tmpl_kvlist_free(&sets);
		tmpl_kvlist_free(&vars);
		return rc;
	}
	char *pubkey = inject_read_pubkey(&cli->conf);
	struct pve_opts po = job_conf_pve_opts(&cli->conf);
	struct event_print pp = {.cli = cli, .tty = !cli->json && cli_stdout_tty(), .dry_run = dry};
	struct up_request req = {
		.names = (const char *const *)a->argv,
		.n_names = (size_t)a->argc,
		.tmpl = t,
		.node = node ? node : cli->conf.pve.node,
		.storage = storage,
		.vmid = (int)vmid,
		.sets = &sets,
		.vars = &vars,
		.pubkey = pubkey,
		.parallel = (unsigned)parallel,
		.no_start = no_start,
		.full = full,
		.retemplate = retemplate,
		.pool = pool,
		.dry_run = dry,
		.conf = &cli->conf,
		.no_inject = no_inject,
		.pve_opts = &po,
		.on_event = on_job_event,
		.event_ctx = &pp,
		.store = cli_store(cli),
		.stop = &cli_stop,
	};
	struct up_result *results = NULL;
	struct pve_error e = {0};
	if (provision_up(&req, &results, &e) < 0 && !results) {
		rc = cli_fail_pve(cli, "up", &e);
	} else {
		end_progress_line(&pp);
		rc = cli_exit_code(provision_outcome(results, req.n_names));
		print_results(cli, "up", results, req.n_names, rc);
		up_results_free(results, req.n_names);
	}
	pve_error_clear(&e);
	free(pubkey);
	tmpl_free(t);
	tmpl_kvlist_free(&sets);
	tmpl_kvlist_free(&vars);
	return rc;
}

/* down NAME|VMID...: each its own job, one after the other; the exit code
 * the worst outcome. */
static int cmd_down(struct cli *cli, const struct cmd_args *a)
{
	bool purge = false, dry = false;
	for (size_t i = 0; i < a->n; i++) {
		purge = purge || a->v[i].opt == 'P';
		dry = dry || a->v[i].opt == 'd';
	}
	int rc = cli_load_conf(cli);
	if (rc)
		return rc;
	size_t n = (size_t)a->argc;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (strcasecmp(a->argv[i], a->argv[j]) == 0)
				return cli_usage_error("down", "guest given twice", a->argv[i]);
	struct up_result *res = calloc(n, sizeof *res);
	if (!res) {
		fprintf(stderr, "pvagent down: out of memory\n");
		return 1;
	}
	struct pve_opts po = job_conf_pve_opts(&cli->conf);
	struct event_print pp = {.cli = cli, .tty = !cli->json && cli_stdout_tty(), .dry_run = dry};
	size_t done = 0;
	for (; done < n && !cli_stop; done++) {
		struct down_request req = {
			.name = a->argv[done],
			.purge = purge,
			.dry_run = dry,
			.pve_opts = &po,
			.on_event = on_job_event,
			.event_ctx = &pp,
			.store = cli_store(cli),
			.stop = &cli_stop,
		};
		provision_down(&req, &res[done]);
		end_progress_line(&pp);
	}
	rc = cli_exit_code(provision_outcome(res, done));
	if (done < n && rc == 0)
		rc = EXIT_INTERRUPTED;
	print_results(cli, "down", res, done, rc);
	up_results_free(res, done);
	return rc;
}

/* ---- command table and main ---------------------------------------------- */

static const struct option list_opts[] = {{"node", required_argument, NULL, 'n'},
					  {"long", no_argument, NULL, 'l'}, {0}};
static const struct option up_opts[] = {
	{"template", required_argument, NULL, 't'}, {"node", required_argument, NULL, 'n'},
	{"vmid", required_argument, NULL, 'i'},     {"storage", required_argument, NULL, 's'},
	{"set", required_argument, NULL, 'S'},      {"var", required_argument, NULL, 'V'},
	{"parallel", required_argument, NULL, 'p'}, {"no-start", no_argument, NULL, 'N'},
	{"full", no_argument, NULL, 'f'},           {"no-inject", no_argument, NULL, 'I'},
	{"retemplate", no_argument, NULL, 'R'},     {"dry-run", no_argument, NULL, 'd'},
	{"pool", required_argument, NULL, 'o'},
	{0},
};
static const struct option down_opts[] = {
	{"purge", no_argument, NULL, 'P'}, {"dry-run", no_argument, NULL, 'd'}, {0}};

static const struct cmd_entry cmd_nodes_entry = {
	"nodes", "", "nodes with CPU, memory and status", NULL, NULL, NULL, 0, 0, NULL, cmd_nodes,
	"pvagent nodes\npvagent --json nodes",
};
static const struct cmd_entry cmd_list_entry = {
	"list", "[--node N] [--long]",
	"guests: vmid, name, node, type, status, memory, tags (one request); --long: also the "
	"disk bus and NIC of each guest's config, read 8 at once",
	"n:l", list_opts, NULL, 0, 0, NULL, cmd_list,
	"pvagent list\npvagent list --long\npvagent --json list --node pve1",
};
static const struct cmd_entry cmd_templates_entry = {
	"templates", "", "the templates pvagent can provision from", NULL, NULL, NULL, 0, 0, NULL,
	cmd_templates, "pvagent templates",
};
const struct cmd_entry cmd_up_entry = {
	"up",
	"NAME... -t TEMPLATE [--node N] [--vmid ID] [--storage S] [--set K=V]... [--var K=V]... "
	"[--parallel K] [--no-start] [--full] [--no-inject] [--retemplate] [--pool NAME] [--dry-run]",
	"provision guests, or converge existing ones; then inject the template's guest files",
	"t:n:", up_opts, "SV", 1, -1, "guest name", cmd_up,
	"pvagent up web1 -t ubuntu-24.04\npvagent up w1 w2 w3 -t freebsd-14 --set cores=4 --parallel 2\n"
	"pvagent up web1 -t ubuntu-24.04 --set size=64G --dry-run\n"
	"pvagent up db1 db2 -t debian-13 --pool lan",
};
const struct cmd_entry cmd_down_entry = {
	"down", "NAME|VMID... [--purge] [--dry-run]", "shut down and delete guests", "", down_opts,
	NULL, 1, -1, "guest name or VMID", cmd_down,
	"pvagent down web1\npvagent down web1 --purge\npvagent down 190 web2.example.org\n"
	"pvagent down web1 --dry-run",
};

static int cmd_help(struct cli *cli, const struct cmd_args *a);
static int cmd_version(struct cli *cli, const struct cmd_args *a);
static const struct cmd_entry cmd_help_entry = {
	"help", "[COMMAND]", "this list, or a command's usage, options and examples", NULL, NULL,
	NULL, 0, 1, "command", cmd_help, "pvagent help\npvagent help up",
};
static const struct cmd_entry cmd_version_entry = {
	"version", "", "the version of pvagent (also --version)", NULL, NULL, NULL, 0, 0, NULL,
	cmd_version, "pvagent version",
};

static const struct cmd_entry *const commands[] = {
	&cmd_nodes_entry,  &cmd_list_entry,   &cmd_templates_entry, &cmd_up_entry,
	&cmd_down_entry,   &cmd_inject_entry, &cmd_virtio_entry,    &cmd_bench_entry,
	&cmd_migrate_entry, &cmd_drain_entry,  &cmd_undrain_entry,   &cmd_windows_entry,
	&cmd_jobs_entry,   &cmd_job_entry,    &cmd_resume_entry,    &cmd_cancel_entry,
	&cmd_status_entry, &cmd_help_entry,   &cmd_version_entry,
	&cmd_ssh_entry,
	&cmd_show_entry,
	&cmd_setup_entry,  &cmd_doctor_entry,
	&cmd_pool_entry,   &cmd_image_entry,
	NULL,
};

static const struct cmd_entry *find_command(const char *name)
{
	for (const struct cmd_entry *const *c = commands; *c; c++)
		if (strcmp((*c)->name, name) == 0)
			return *c;
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: pvagent [-c CONF] [--json] [--local] [-v|-q] COMMAND [ARGS]\n"
		   "       pvagent --version | help [COMMAND] | COMMAND --help\n\n"
		   "Job commands go to pvagentd when it runs (--local: in this process).\n\n"
		   "commands:\n");
	for (const struct cmd_entry *const *c = commands; *c; c++)
		fprintf(f, "  %-10s %s\n", (*c)->name, (*c)->help);
	fprintf(f, "\nconfiguration: -c CONF, $PVAGENT_CONF, ./conf/pvagent.conf, "
		   "/etc/pvagent/pvagent.conf\n"
		   "pvagent help COMMAND: its options and examples\n");
}

/* pvagent help COMMAND, pvagent COMMAND --help */
static void command_help(FILE *f, const struct cmd_entry *e)
{
	fprintf(f, "usage: pvagent %s%s%s\n\n%s\n", e->name, *e->usage ? " " : "", e->usage,
		e->help);
	cli_print_options(f, e);
	if (e->examples) {
		fprintf(f, "\nexamples:\n");
		for (const char *p = e->examples; *p;) {
			size_t n = strcspn(p, "\n");
			fprintf(f, "  %.*s\n", (int)n, p);
			p += n + (p[n] == '\n');
		}
	}
}

static int cmd_help(struct cli *cli, const struct cmd_args *a)
{
	(void)cli;
	if (a->argc == 0) {
		usage(stdout);
		return 0;
	}
	const struct cmd_entry *e = find_command(a->argv[0]);
	if (!e) {
		cli_error("usage", "help", "unknown command '%s'", a->argv[0]);
		usage(stderr);
		return EXIT_USAGE;
	}
	command_help(stdout, e);
	return 0;
}

static int cmd_version(struct cli *cli, const struct cmd_args *a)
{
	(void)a;
	if (cli->json) {
		json_object *v = json_object_new_string(PVAGENT_VERSION);
		print_result(cli, "version", "version", v);
		json_object_put(v);
	} else {
		printf("pvagent %s\n", PVAGENT_VERSION);
	}
	return 0;
}

/* pvagent __complete commands|options CMD|templates|guests: one candidate
 * a line, for conf/pvagent.bash-completion; quietly nothing on failure. */
static int complete(struct cli *cli, int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	if (strcmp(what, "commands") == 0) {
		for (const struct cmd_entry *const *c = commands; *c; c++)
			printf("%s\n", (*c)->name);
	} else if (strcmp(what, "options") == 0) {
		const struct cmd_entry *e = argc > 2 ? find_command(argv[2]) : NULL;
		for (const struct option *o = e && e->longopts ? e->longopts : NULL; o && o->name; o++)
			printf("--%s\n", o->name);
		if (e)
			printf("--help\n");
		else
			printf("--config\n--json\n--local\n--verbose\n--quiet\n--help\n--version\n");
	} else if (strcmp(what, "templates") == 0 || strcmp(what, "guests") == 0) {
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
		if (cli->pve && inventory_guests(cli->pve, NULL, &guests, &e) == 0) {
			for (size_t i = 0; i < json_object_array_length(guests); i++) {
				const char *n = json_text(json_object_array_get_idx(guests, i), "name");
				if (n && *n)
					printf("%s\n", n);
			}
		}
		json_object_put(guests);
		pve_error_clear(&e);
	}
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

/* With --json, a command that failed with an error said by cli_error and
 * printed no final object prints it; the kept message is freed. Returns rc. */
static int finish_error(struct cli *cli, const char *cmd, int rc)
{
	/* every outcome ends with one final object; a message said only on
	 * stderr (none kept) is pointed at */
	if (cli->json && rc != 0 && !out_json_result_printed())
		print_error_json(cli, cli_err.cmd ? cli_err.cmd : cmd, rc,
				 cli_err.kind ? cli_err.kind : "failed",
				 cli_err.message ? cli_err.message : "failed (see standard error)");
	free(cli_err.message);
	cli_err.message = NULL;
	return rc;
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
		case 'h': usage(stdout); return 0;
		case 'R': printf("pvagent %s\n", PVAGENT_VERSION); return 0;
		default:
			if (!cli_err.kind) {
				cli_err.kind = "usage";
				cli_err.message = strprintf("unknown option '%s'", argv[optind - 1]);
			}
			usage(stderr);
			return finish_error(&cli, NULL, EXIT_USAGE);
		}
	}
	if (optind >= argc) {
		cli_error("usage", NULL, "needs a command");
		usage(stderr);
		return finish_error(&cli, NULL, EXIT_USAGE);
	}
	log_set_level(log_level_from_verbosity(cli.verbosity));
	const char *name = argv[optind];
	bool completing = strcmp(name, "__complete") == 0;
	const struct cmd_entry *cmd = completing ? NULL : find_command(name);
	if (!cmd && !completing) {
		size_t n = 0;
		while (commands[n])
			n++;
		const char **names = malloc(n * sizeof *names);
		for (size_t i = 0; names && i < n; i++)
			names[i] = commands[i]->name;
		const char *near = names ? str_closest(name, names, n) : NULL;
		free(names);
		if (near) {
			cli_error("unknown-command", NULL, "unknown command '%s' (did you mean '%s'?)",
				  name, near);
			fprintf(stderr, "(see pvagent help %s)\n", near);
		} else {
			cli_error("unknown-command", NULL, "unknown command '%s'", name);
			usage(stderr);
		}
		return finish_error(&cli, name, EXIT_USAGE);
	}
	if (cmd && asks_help(argc - optind, argv + optind)) {
		command_help(stdout, cmd);
		return 0;
	}
	/* The command's options and arguments are parsed from its name on, by
	 * its entry (GNU getopt permuting again, unlike the "+" mode of the
	 * global options above). */
	int rc;
	if (completing) {
		rc = complete(&cli, argc - optind, argv + optind);
	} else {
		catch_stop_signals();
		if (cli.local)
			cli_daemon_child_init();
		rc = cmd_dispatch(&cli, cmd, argc - optind, argv + optind);
		if (cli.local)
			cli_daemon_child_end();
		rc = finish_error(&cli, name, rc);
	}
	pve_free(cli.pve);
	store_close(cli.store);
	if (cli.conf_loaded)
		conf_free(&cli.conf);
	pve_global_cleanup();
	log_secret_clear();
	return rc;
}
