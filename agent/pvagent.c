/* pvagent.c - the command-line tool: global options, configuration,
 * the command table, and how each command's result is printed (text
 * tables, or JSON lines with --json). The work itself lives in the
 * library modules; guest_target_open() is the part the guest-side
 * commands share (find the guest, load and expand its template, find its
 * address, build the SSH options).
 *
 *   pvagent [-c CONF] [--json] [-v|-q] COMMAND ...
 *
 * Exit codes (DESIGN.md 3): 0 done; 1 failed, nothing left half-done;
 * 2 usage or configuration error; 3 failed and needs attention; 4 cannot
 * reach or authenticate to PVE or a guest. */
#include "bench.h"
#include "conf.h"
#include "convert.h"
#include "guest.h"
#include "inject.h"
#include "inventory.h"
#include "log.h"
#include "output.h"
#include "provision.h"
#include "pvecfg.h"
#include "pve.h"
#include "tmpl.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXIT_USAGE 2

struct cli {
	const char *conf_path;
	bool json;
	int verbosity;
	struct conf conf;
	bool conf_loaded;
	struct pve *pve;
};

struct command {
	const char *name;
	const char *args;
	const char *help;
	int (*run)(struct cli *cli, int argc, char **argv);
};

static const struct command commands[];

static void usage(FILE *f)
{
	fprintf(f, "usage: pvagent [-c CONF] [--json] [-v|-q] COMMAND [ARGS]\n\ncommands:\n");
	for (const struct command *c = commands; c->name; c++)
		fprintf(f, "  %s %s\n      %s\n", c->name, c->args, c->help);
	fprintf(f, "\nconfiguration: -c CONF, $PVAGENT_CONF, ./conf/pvagent.conf, "
		   "/etc/pvagent/pvagent.conf\n");
}

static int usage_error(const char *cmd, const char *what, const char *arg)
{
	fprintf(stderr, "pvagent %s: %s '%s'\n(see pvagent --help)\n", cmd, what, arg);
	return EXIT_USAGE;
}

/* ---- configuration and client ------------------------------------------ */

static int load_conf(struct cli *cli)
{
	if (cli->conf_loaded)
		return 0;
	char *err = NULL;
	int rc = conf_load(cli->conf_path, &cli->conf, &err);
	if (rc < 0) {
		fprintf(stderr, "pvagent: %s\n", err ? err : "cannot load the configuration");
		free(err);
		return EXIT_USAGE;
	}
	cli->conf_loaded = true;
	return 0;
}

/* Report a PVE error and return its exit code. */
static int fail_pve(struct cli *cli, const char *cmd, struct pve_error *e)
{
	int code = pve_error_exit_code(e);
	char *msg = pve_error_format(e);
	if (cli->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "result", json_object_new_string("error"));
		json_object_object_add(o, "command", json_object_new_string(cmd));
		json_object_object_add(o, "kind", json_object_new_string(pve_err_kind_name(e->kind)));
		json_object_object_add(o, "message", json_object_new_string(msg ? msg : "error"));
		json_object_object_add(o, "exit", json_object_new_int(code));
		out_json_line(stdout, o);
		json_object_put(o);
	}
	log_error("%s", msg ? msg : "error");
	free(msg);
	pve_error_clear(e);
	return code;
}

/* Client options from the loaded configuration. */
static struct pve_opts pve_opts_of(const struct conf *c)
{
	struct pve_opts o = {
		.url = c->pve.url,
		.token_id = c->pve.token_id,
		.token_secret = c->pve.token_secret,
		.user = c->pve.user,
		.password = c->pve.password,
		.fingerprint = c->pve.fingerprint,
		.ca_file = c->pve.ca_file,
		.insecure = c->pve.insecure != 0,
		.timeout_ms = (long)c->pve.timeout * 1000,
	};
	return o;
}

static int connect_pve(struct cli *cli)
{
	int rc = load_conf(cli);
	if (rc)
		return rc;
	struct pve_opts o = pve_opts_of(&cli->conf);
	struct pve_error e = {0};
	cli->pve = pve_new(&o, &e);
	if (!cli->pve)
		return fail_pve(cli, "connect", &e);
	return 0;
}

/* ---- printing helpers ---------------------------------------------------- */

static void print_result(struct cli *cli, const char *cmd, const char *key, json_object *v)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "result", json_object_new_string("ok"));
	json_object_object_add(o, "command", json_object_new_string(cmd));
	json_object_object_add(o, key, json_object_get(v));
	out_json_line(stdout, o);
	json_object_put(o);
}

static const char *field(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_string(v) : NULL;
}

static double num(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_double(v) : 0;
}

/* Parse "--opt" style options of a subcommand; returns the option
 * character, -1 at the end, '?' on a usage error (already reported). */
static int sub_getopt(int argc, char **argv, const char *shortopts,
		      const struct option *longopts)
{
	return getopt_long(argc, argv, shortopts, longopts, NULL);
}

/* ---- nodes ---------------------------------------------------------------- */

static int cmd_nodes(struct cli *cli, int argc, char **argv)
{
	if (argc > 1)
		return usage_error("nodes", "unexpected argument", argv[1]);
	int rc = connect_pve(cli);
	if (rc)
		return rc;
	json_object *nodes = NULL;
	struct pve_error e = {0};
	if (inventory_nodes(cli->pve, &nodes, &e) < 0)
		return fail_pve(cli, "nodes", &e);
	if (cli->json) {
		print_result(cli, "nodes", "nodes", nodes);
	} else {
		const char *hdr[] = {"NODE", "STATUS", "CPU", "MEMORY", "UPTIME"};
		struct table *t = table_new(5, hdr);
		for (size_t i = 0; t && i < json_object_array_length(nodes); i++) {
			json_object *n = json_object_array_get_idx(nodes, i);
			char cpu[64], mem[96], used[24], total[24], up[32];
			snprintf(cpu, sizeof cpu, "%.0f%% of %.0f", num(n, "cpu") * 100,
				 num(n, "maxcpu"));
			snprintf(mem, sizeof mem, "%s / %s", out_bytes(used, sizeof used, num(n, "mem")),
				 out_bytes(total, sizeof total, num(n, "maxmem")));
			double u = num(n, "uptime");
			long secs = (long)u;
			snprintf(up, sizeof up, "%ldd %02ldh", secs / 86400, secs % 86400 / 3600);
			const char *row[] = {field(n, "node"), field(n, "status"), cpu, mem, up};
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

static int cmd_list(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {{"node", required_argument, NULL, 'n'}, {0}};
	const char *node = NULL;
	int opt;
	while ((opt = sub_getopt(argc, argv, "n:", lo)) != -1) {
		if (opt == 'n')
			node = optarg;
		else
			return EXIT_USAGE;
	}
	if (optind < argc)
		return usage_error("list", "unexpected argument", argv[optind]);
	int rc = connect_pve(cli);
	if (rc)
		return rc;
	json_object *guests = NULL;
	struct pve_error e = {0};
	if (inventory_guests(cli->pve, node, &guests, &e) < 0)
		return fail_pve(cli, "list", &e);
	if (cli->json) {
		print_result(cli, "list", "guests", guests);
	} else {
		const char *hdr[] = {"VMID", "NAME", "NODE", "TYPE", "STATUS", "DISK", "NIC"};
		struct table *t = table_new(7, hdr);
		for (size_t i = 0; t && i < json_object_array_length(guests); i++) {
			json_object *g = json_object_array_get_idx(guests, i);
			json_object *tv = NULL;
			json_object_object_get_ex(g, "template", &tv);
			const char *lock = field(g, "lock");
			char status[64];
			snprintf(status, sizeof status, "%s%s%s%s",
				 json_object_get_boolean(tv) ? "template" : field(g, "status"),
				 lock ? " (lock: " : "", lock ? lock : "", lock ? ")" : "");
			const char *row[] = {field(g, "vmid"), field(g, "name"), field(g, "node"),
					     field(g, "type"), status, field(g, "disk_bus"),
					     field(g, "nic_model")};
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

static int cmd_templates(struct cli *cli, int argc, char **argv)
{
	if (argc > 1)
		return usage_error("templates", "unexpected argument", argv[1]);
	int rc = load_conf(cli);
	if (rc)
		return rc;
	struct tmpl_info *list = NULL;
	size_t n = 0;
	char *err = NULL;
	if (tmpl_list((const char *const *)cli->conf.paths.templates, &list, &n, &err) < 0) {
		fprintf(stderr, "pvagent: %s\n", err ? err : "cannot list templates");
		free(err);
		return 1;
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
			snprintf(os, sizeof os, "%s %s", field(o, "os") ? field(o, "os") : "",
				 field(o, "os_version") ? field(o, "os_version") : "");
			const char *row[] = {field(o, "name"), field(o, "kind") ? field(o, "kind") : "invalid",
					     field(o, "kind") ? os : "-", field(o, "source"),
					     field(o, "error") ? field(o, "error") : field(o, "description")};
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

struct up_print {
	struct cli *cli;
	bool tty;          /* progress lines are redrawn in place */
	bool progress_shown;
};

static void end_progress_line(struct up_print *pp)
{
	if (pp->progress_shown) {
		fputc('\n', stdout);
		pp->progress_shown = false;
	}
}

static const char *ev_kind_name(enum up_event_kind k)
{
	switch (k) {
	case UP_EV_BEGIN: return "begin";
	case UP_EV_STEP: return "step";
	case UP_EV_PROGRESS: return "progress";
	case UP_EV_DIFF: return "diff";
	default: return "done";
	}
}

static json_object *result_json(const struct up_result *r)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(r->name ? r->name : ""));
	json_object_object_add(o, "status", json_object_new_string(up_status_name(r->status)));
	json_object_object_add(o, "vmid", r->vmid ? json_object_new_int(r->vmid) : NULL);
	json_object_object_add(o, "node", r->node ? json_object_new_string(r->node) : NULL);
	json_object_object_add(o, "type", json_object_new_string(guest_type_name(r->type)));
	json_object_object_add(o, "address", r->address ? json_object_new_string(r->address) : NULL);
	json_object *steps = json_object_new_object();
	for (size_t i = 0; i < r->n_steps; i++)
		json_object_object_add(steps, r->steps[i].step,
				       json_object_new_double(r->steps[i].elapsed_s));
	json_object_object_add(o, "steps", steps);
	json_object *diff = json_object_new_array();
	for (size_t i = 0; i < r->n_diff; i++)
		json_object_array_add(diff, json_object_new_string(r->diff[i]));
	json_object_object_add(o, "changes", diff);
	json_object_object_add(o, "pending", r->pending ? json_object_new_string(r->pending) : NULL);
	json_object *inj = NULL;
	if (r->inject.ran) {
		inj = json_object_new_object();
		json_object_object_add(inj, "status",
				       json_object_new_string(inject_status_name(r->inject.status)));
		json_object_object_add(inj, "exit_code", json_object_new_int(r->inject.exit_code));
		json_object_object_add(inj, "summary", r->inject.summary
				       ? json_object_new_string(r->inject.summary) : NULL);
		if (r->inject.failed_step)
			json_object_object_add(inj, "failed_step",
					       json_object_new_string(r->inject.failed_step));
	}
	json_object_object_add(o, "inject", inj);
	if (r->error.kind != PVE_OK) {
		char *m = pve_error_format(&r->error);
		json_object_object_add(o, "error", json_object_new_string(m ? m : "error"));
		json_object_object_add(o, "exit", json_object_new_int(pve_error_exit_code(&r->error)));
		free(m);
	}
	return o;
}

static void on_up_event(void *ctx, const struct up_event *ev)
{
	struct up_print *pp = ctx;
	if (pp->cli->json) {
		if (ev->kind == UP_EV_DONE)
			return; /* the final result object carries it */
		json_object *o = json_object_new_object();
		json_object_object_add(o, "event", json_object_new_string(ev_kind_name(ev->kind)));
		json_object_object_add(o, "name", json_object_new_string(ev->name ? ev->name : ""));
		if (ev->vmid)
			json_object_object_add(o, "vmid", json_object_new_int(ev->vmid));
		if (ev->node)
			json_object_object_add(o, "node", json_object_new_string(ev->node));
		if (ev->step)
			json_object_object_add(o, "step", json_object_new_string(ev->step));
		if (ev->kind == UP_EV_STEP)
			json_object_object_add(o, "seconds", json_object_new_double(ev->elapsed_s));
		if (ev->kind == UP_EV_PROGRESS && ev->percent >= 0)
			json_object_object_add(o, "percent", json_object_new_double(ev->percent));
		if (ev->text)
			json_object_object_add(o, "text", json_object_new_string(ev->text));
		out_json_line(stdout, o);
		json_object_put(o);
		return;
	}
	switch (ev->kind) {
	case UP_EV_PROGRESS:
		if (!pp->tty || ev->percent < 0)
			return; /* one line per step otherwise */
		printf("\r  %s: %s %3.0f%%", ev->name, ev->step ? ev->step : "", ev->percent);
		fflush(stdout);
		pp->progress_shown = true;
		return;
	case UP_EV_STEP:
		end_progress_line(pp);
		printf("  %s: %-8s %6.1fs%s%s\n", ev->name, ev->step ? ev->step : "", ev->elapsed_s,
		       ev->text ? "  " : "", ev->text ? ev->text : "");
		break;
	case UP_EV_DIFF:
		end_progress_line(pp);
		printf("  %s: change %s\n", ev->name, ev->text ? ev->text : "");
		break;
	case UP_EV_BEGIN:
		end_progress_line(pp);
		printf("  %s: begin\n", ev->name);
		break;
	default:
		break;
	}
	fflush(stdout);
}

static void print_results(struct cli *cli, const char *cmd, const struct up_result *r, size_t n,
			  int code)
{
	if (cli->json) {
		json_object *o = json_object_new_object(), *a = json_object_new_array();
		for (size_t i = 0; i < n; i++)
			json_object_array_add(a, result_json(&r[i]));
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
		if (r[i].error.kind != PVE_OK) {
			char *m = pve_error_format(&r[i].error);
			log_error("%s: %s", r[i].name, m ? m : "failed");
			free(m);
		}
	}
}

/* The public half of [ssh] identity, for ${pubkey}; NULL if there is none. */
static char *read_pubkey(const struct conf *c)
{
	if (!c->ssh.identity)
		return NULL;
	char *path = strprintf("%s.pub", c->ssh.identity), *text = NULL;
	if (path && read_file(path, &text, NULL) < 0)
		text = NULL;
	free(path);
	if (text)
		text[strcspn(text, "\n")] = '\0';
	return text;
}

static int parse_count(const char *cmd, const char *opt, const char *arg, long min, long max,
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

static int cmd_up(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {
		{"template", required_argument, NULL, 't'}, {"node", required_argument, NULL, 'n'},
		{"vmid", required_argument, NULL, 'i'},     {"storage", required_argument, NULL, 's'},
		{"set", required_argument, NULL, 'S'},      {"var", required_argument, NULL, 'V'},
		{"parallel", required_argument, NULL, 'p'}, {"no-start", no_argument, NULL, 'N'},
		{"full", no_argument, NULL, 'f'},           {"no-inject", no_argument, NULL, 'I'},
		{0},
	};
	const char *tname = NULL, *node = NULL, *storage = NULL;
	long vmid = 0, parallel = 4;
	bool no_start = false, full = false, no_inject = false;
	struct tmpl_kvlist sets = {0}, vars = {0};
	char *err = NULL;
	int opt, rc = 0;
	while (rc == 0 && (opt = sub_getopt(argc, argv, "t:n:", lo)) != -1) {
		switch (opt) {
		case 't': tname = optarg; break;
		case 'n': node = optarg; break;
		case 's': storage = optarg; break;
		case 'i': rc = parse_count("up", "--vmid", optarg, 100, 999999999, &vmid); break;
		case 'p': rc = parse_count("up", "--parallel", optarg, 1, 64, &parallel); break;
		case 'N': no_start = true; break;
		case 'f': full = true; break;
		case 'I': no_inject = true; break;
		case 'S':
		case 'V':
			if (tmpl_var_arg(opt == 'S' ? &sets : &vars, optarg, &err) < 0) {
				fprintf(stderr, "pvagent up: %s %s: %s\n", opt == 'S' ? "--set" : "--var",
					optarg, err ? err : "expected KEY=VALUE");
				free(err);
				rc = EXIT_USAGE;
			}
			break;
		default: rc = EXIT_USAGE; break;
		}
	}
	if (rc == 0 && optind >= argc)
		rc = usage_error("up", "needs at least one guest name", "NAME");
	if (rc == 0 && !tname)
		rc = usage_error("up", "needs a template", "-t TEMPLATE");
	if (rc == 0)
		rc = load_conf(cli);
	struct tmpl *t = NULL;
	if (rc == 0 && tmpl_load((const char *const *)cli->conf.paths.templates, tname, &t, &err) < 0) {
		fprintf(stderr, "pvagent up: %s\n", err ? err : "cannot load the template");
		free(err);
		rc = EXIT_USAGE;
	}
	if (rc) {
		tmpl_kvlist_free(&sets);
		tmpl_kvlist_free(&vars);
		return rc;
	}
	char *pubkey = read_pubkey(&cli->conf);
	struct pve_opts po = pve_opts_of(&cli->conf);
	struct up_print pp = {cli, !cli->json && isatty(STDOUT_FILENO), false};
	struct up_request req = {
		.names = (const char *const *)(argv + optind),
		.n_names = (size_t)(argc - optind),
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
		.conf = &cli->conf,
		.no_inject = no_inject,
		.pve_opts = &po,
		.on_event = on_up_event,
		.event_ctx = &pp,
	};
	struct up_result *results = NULL;
	struct pve_error e = {0};
	if (provision_up(&req, &results, &e) < 0 && !results) {
		rc = fail_pve(cli, "up", &e);
	} else {
		end_progress_line(&pp);
		rc = provision_exit_code(results, req.n_names);
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

static int cmd_down(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {{"purge", no_argument, NULL, 'P'}, {0}};
	bool purge = false;
	int opt;
	while ((opt = sub_getopt(argc, argv, "", lo)) != -1) {
		if (opt == 'P')
			purge = true;
		else
			return EXIT_USAGE;
	}
	if (optind + 1 != argc)
		return usage_error("down", "needs exactly one guest name", optind < argc ? argv[optind] : "NAME");
	int rc = load_conf(cli);
	if (rc)
		return rc;
	struct pve_opts po = pve_opts_of(&cli->conf);
	struct up_print pp = {cli, !cli->json && isatty(STDOUT_FILENO), false};
	struct down_request req = {
		.name = argv[optind],
		.purge = purge,
		.pve_opts = &po,
		.on_event = on_up_event,
		.event_ctx = &pp,
	};
	struct up_result res = {0};
	provision_down(&req, &res);
	end_progress_line(&pp);
	rc = provision_exit_code(&res, 1);
	print_results(cli, "down", &res, 1, rc);
	up_result_free(&res);
	return rc;
}


/* ---- inject: printing ---------------------------------------------------------- */

static void on_inject_event(void *ctx, const struct inject_event *ev)
{
	struct cli *cli = ctx;
	if (cli->json) {
		json_object *o = json_object_new_object();
		static const char *kinds[] = {"step", "diff", "file", "note"};
		json_object_object_add(o, "event", json_object_new_string(kinds[ev->kind]));
		json_object_object_add(o, "step", json_object_new_string(inject_step_name(ev->step)));
		if (ev->path)
			json_object_object_add(o, "path", json_object_new_string(ev->path));
		if (ev->text)
			json_object_object_add(o, "text", json_object_new_string(ev->text));
		if (ev->kind == INJ_EV_STEP)
			json_object_object_add(o, "seconds", json_object_new_double(ev->elapsed_s));
		out_json_line(stdout, o);
		json_object_put(o);
		return;
	}
	switch (ev->kind) {
	case INJ_EV_DIFF:
		fputs(ev->text ? ev->text : "", stdout);
		break;
	case INJ_EV_STEP:
		printf("  %-8s %6.1fs%s%s\n", inject_step_name(ev->step), ev->elapsed_s,
		       ev->text ? "  " : "", ev->text ? ev->text : "");
		break;
	case INJ_EV_NOTE:
		printf("  note: %s\n", ev->text ? ev->text : "");
		break;
	default:
		break;
	}
	fflush(stdout);
}

static enum guest_addr_source addr_source(enum tmpl_addr a)
{
	return a == TMPL_ADDR_STATIC ? GUEST_ADDR_STATIC
	     : a == TMPL_ADDR_CLOUDINIT ? GUEST_ADDR_CONFIG : GUEST_ADDR_AGENT;
}

/* ---- a guest to work on over SSH (inject; virtio and bench next) ------------ */

struct target_req {
	const char *cmd;                /* "inject": the messages' prefix */
	const char *name;               /* the guest's name */
	const char *tmpl_name;          /* -t TEMPLATE, or NULL: the one the
					   description names */
	const char *address;            /* --address, or NULL: look it up */
	const struct tmpl_kvlist *vars; /* --var K=V (may be NULL) */
	bool tmpl_optional;             /* without a template, go on with the
					   [ssh] settings alone */
};

struct guest_target {
	struct guest_ref ref;
	json_object *config;            /* the guest's PVE config */
	char *tmpl_name;                /* or NULL (no template) */
	struct tmpl *tmpl;              /* or NULL (no template) */
	struct tmpl_inst inst;          /* tmpl expanded for this guest */
	char *address;
	struct ssh_opts ssh;            /* borrows from cli->conf, inst and address */
};

static void guest_target_free(struct guest_target *gt)
{
	free(gt->address);
	tmpl_inst_free(&gt->inst);
	tmpl_free(gt->tmpl);
	free(gt->tmpl_name);
	json_object_put(gt->config);
	guest_ref_clear(&gt->ref);
	memset(gt, 0, sizeof *gt);
}

/* --address: a host name or address, nothing a command line could take
 * for an option or split. */
static bool address_ok(const char *a)
{
	if (!a || !*a || *a == '-' || strlen(a) > 253)
		return false;
	for (const char *p = a; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return false;
	return true;
}

/* Load and expand the template (-t, or the one the description names) for
 * the guest. 0, or an exit code (reported). Without a template to use and
 * req->tmpl_optional, 0 with gt->tmpl NULL. */
static int target_template(struct cli *cli, const struct target_req *req,
			   struct guest_target *gt)
{
	char *err = NULL;
	if (req->tmpl_name) {
		gt->tmpl_name = strdup(req->tmpl_name);
	} else {
		json_object *d = NULL;
		json_object_object_get_ex(gt->config, "description", &d);
		gt->tmpl_name = d ? inject_template_from_description(json_object_get_string(d)) : NULL;
	}
	if (!gt->tmpl_name) {
		if (req->tmpl_optional)
			return 0;
		fprintf(stderr, "pvagent %s: %s was not made from a pvagent template: "
				"name one with -t TEMPLATE\n", req->cmd, req->name);
		return EXIT_USAGE;
	}
	if (tmpl_load((const char *const *)cli->conf.paths.templates, gt->tmpl_name, &gt->tmpl,
		      &err) < 0) {
		if (req->tmpl_optional && !req->tmpl_name) {
			log_warn("%s: template %s (from the description) not used: %s", req->name,
				 gt->tmpl_name, err ? err : "cannot load it");
			free(err);
			free(gt->tmpl_name);
			gt->tmpl_name = NULL;
			gt->tmpl = NULL;
			return 0;
		}
		fprintf(stderr, "pvagent %s: %s\n", req->cmd, err ? err : "cannot load the template");
		free(err);
		return EXIT_USAGE;
	}
	struct tmpl_kvlist vars = {0};
	char vmid[24];
	snprintf(vmid, sizeof vmid, "%d", gt->ref.vmid);
	char *pubkey = read_pubkey(&cli->conf);
	int bad = 0;
	for (size_t i = 0; req->vars && i < req->vars->n && !bad; i++)
		bad = tmpl_kvlist_set(&vars, req->vars->items[i].key, req->vars->items[i].value) < 0;
	if (bad || tmpl_kvlist_set(&vars, "name", req->name) < 0 ||
	    tmpl_kvlist_set(&vars, "vmid", vmid) < 0 ||
	    (gt->ref.node && tmpl_kvlist_set(&vars, "node", gt->ref.node) < 0) ||
	    (pubkey && tmpl_kvlist_set(&vars, "pubkey", pubkey) < 0) ||
	    tmpl_expand(gt->tmpl, &vars, &gt->inst, &err) < 0) {
		fprintf(stderr, "pvagent %s: %s\n", req->cmd, err ? err : "out of memory");
		free(err);
		free(pubkey);
		tmpl_kvlist_free(&vars);
		return EXIT_USAGE;
	}
	free(pubkey);
	tmpl_kvlist_free(&vars);
	return 0;
}

/* Find the guest by name, read its config, load and expand its template,
 * find its address (--address, else the template's [guest] address
 * method, else the guest agent) and build the SSH options ([ssh] of the
 * configuration, the template's [guest] user and port). 0, or an exit
 * code after saying why; *gt is filled either way (guest_target_free). */
static int guest_target_open(struct cli *cli, const struct target_req *req,
			     struct guest_target *gt)
{
	memset(gt, 0, sizeof *gt);
	if (req->address && !address_ok(req->address))
		return usage_error(req->cmd, "bad --address", req->address);
	int rc = connect_pve(cli);
	if (rc)
		return rc;
	struct pve_error e = {0};
	int found = guest_find_by_name(cli->pve, req->name, &gt->ref, &e);
	if (found < 0 || (found == 1 && guest_get_config(cli->pve, &gt->ref, &gt->config, &e) < 0))
		return fail_pve(cli, req->cmd, &e);
	if (found == 0) {
		fprintf(stderr, "pvagent %s: no guest named '%s'\n", req->cmd, req->name);
		return 1;
	}
	rc = target_template(cli, req, gt);
	if (rc)
		return rc;
	if (req->address) {
		gt->address = strdup(req->address);
		if (!gt->address) {
			fprintf(stderr, "pvagent %s: out of memory\n", req->cmd);
			return 1;
		}
	} else {
		struct guest_wait w = {.address_timeout_s = 60};
		enum guest_addr_source src = gt->tmpl ? addr_source(gt->tmpl->guest.address)
						      : GUEST_ADDR_AGENT;
		if (guest_address(cli->pve, &gt->ref, src, gt->tmpl ? gt->inst.guest.ip.value : NULL,
				  &w, &gt->address, &e) < 0) {
			gt->address = NULL;
			rc = fail_pve(cli, req->cmd, &e);
			log_error("%s: its address is unknown; give it with --address A", req->name);
			return rc;
		}
	}
	struct ssh_opts so;
	if (inject_ssh_opts(&cli->conf, gt->tmpl ? &gt->inst : NULL, gt->address, &so) < 0) {
		fprintf(stderr, "pvagent %s: set [ssh] known_hosts (or [paths] state) in %s\n",
			req->cmd, cli->conf.path);
		return EXIT_USAGE;
	}
	gt->ssh = so;
	return 0;
}

/* ---- inject ----------------------------------------------------------------- */

static int cmd_inject(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {
		{"dry-run", no_argument, NULL, 'd'},
		{"template", required_argument, NULL, 't'},
		{"var", required_argument, NULL, 'V'},
		{"address", required_argument, NULL, 'a'},
		{0},
	};
	bool dry_run = false;
	const char *tname_opt = NULL, *address = NULL;
	struct tmpl_kvlist vars = {0};
	char *err = NULL;
	int opt, rc = 0;
	while (rc == 0 && (opt = sub_getopt(argc, argv, "t:", lo)) != -1) {
		if (opt == 'd') {
			dry_run = true;
		} else if (opt == 't') {
			tname_opt = optarg;
		} else if (opt == 'a') {
			address = optarg;
		} else if (opt == 'V') {
			if (tmpl_var_arg(&vars, optarg, &err) < 0) {
				fprintf(stderr, "pvagent inject: --var %s: %s\n", optarg,
					err ? err : "expected K=V");
				free(err);
				err = NULL;
				rc = EXIT_USAGE;
			}
		} else {
			rc = EXIT_USAGE;
		}
	}
	if (rc == 0 && optind + 1 != argc)
		rc = usage_error("inject", "needs exactly one guest name",
				 optind < argc ? argv[optind] : "NAME");
	if (rc) {
		tmpl_kvlist_free(&vars);
		return rc;
	}
	const char *name = argv[optind];
	struct target_req treq = {
		.cmd = "inject",
		.name = name,
		.tmpl_name = tname_opt,
		.address = address,
		.vars = &vars,
	};
	struct guest_target gt;
	struct inject_result res = {0};
	rc = guest_target_open(cli, &treq, &gt);
	if (rc)
		goto out;
	struct inject_request req = {
		.name = name,
		.inst = &gt.inst,
		.expect_os = gt.tmpl->os,
		.ssh = &gt.ssh,
		.dry_run = dry_run,
		.on_event = on_inject_event,
		.event_ctx = cli,
	};
	inject_run(&req, &res);
	rc = res.exit_code;
	if (cli->json) {
		json_object *o = inject_result_json(&res);
		json_object_object_add(o, "result", json_object_new_string(rc ? "error" : "ok"));
		json_object_object_add(o, "command", json_object_new_string("inject"));
		out_json_line(stdout, o);
		json_object_put(o);
	} else {
		char *sum = inject_result_summary(&res);
		printf("%s: %s\n", name, sum ? sum : "done");
		free(sum);
	}
	if (rc && !cli->json)
		log_error("%s: inject failed at %s: %s", name, inject_step_name(res.failed_step),
			  res.error ? res.error : "error");
out:
	inject_result_free(&res);
	guest_target_free(&gt);
	tmpl_kvlist_free(&vars);
	return rc;
}

/* ---- bench and virtio ------------------------------------------------------------ */

/* The boot disk of a qemu config as the guest names it ("ad0", "vtbd0",
 * "sda") and the bus and NIC labels ("ide", "virtio-blk", "virtio-scsi",
 * "sata", "scsi"; "e1000", "virtio", "-"). name NULL when the profile
 * cannot tell; labels static. */
static void guest_disk_of(json_object *config, const struct os_profile *p, char **name,
			  const char **bus, const char **nic)
{
	struct pvecfg_hw hw = {0};
	*name = NULL;
	*bus = "-";
	*nic = "-";
	if (!config || pvecfg_hw_read(config, &hw) < 0)
		return;
	json_object *v = NULL;
	const char *boot = json_object_object_get_ex(config, "boot", &v) ? json_object_get_string(v) : "";
	const char *bootdisk = json_object_object_get_ex(config, "bootdisk", &v)
				       ? json_object_get_string(v) : "";
	const struct pvecfg_disk *d = NULL;
	for (size_t i = 0; i < hw.n_disks && !d; i++)
		if (!hw.disks[i].cdrom && (strstr(boot, hw.disks[i].key) ||
					   strcmp(bootdisk, hw.disks[i].key) == 0))
			d = &hw.disks[i];
	for (size_t i = 0; i < hw.n_disks && !d; i++)
		if (!hw.disks[i].cdrom)
			d = &hw.disks[i];
	if (d) {
		bool vscsi = hw.scsihw && strncmp(hw.scsihw, "virtio-scsi", 11) == 0;
		unsigned idx = 0; /* among the non-cdrom disks of its bus, in PVE order */
		for (const struct pvecfg_disk *x = hw.disks; x < d; x++)
			idx += !x->cdrom && x->bus == d->bus;
		enum dbus db = DBUS_IDE;
		switch (d->bus) {
		case BUS_IDE: *bus = "ide"; db = DBUS_IDE; break;
		case BUS_VIRTIO: *bus = "virtio-blk"; db = DBUS_VIRTIO_BLK; break;
		case BUS_SCSI: *bus = vscsi ? "virtio-scsi" : "scsi"; db = DBUS_VIRTIO_SCSI; break;
		case BUS_SATA: *bus = "sata"; break;
		default: break;
		}
		if (p && d->bus != BUS_SATA && (d->bus != BUS_SCSI || vscsi))
			*name = osprof_disk_name(p, db, idx);
	}
	if (hw.n_nics && hw.nics[0].model)
		*nic = strcmp(hw.nics[0].model, "virtio") == 0 ? "virtio"
		     : strcmp(hw.nics[0].model, "e1000") == 0 ? "e1000"
		     : strcmp(hw.nics[0].model, "e1000e") == 0 ? "e1000e" : "other";
	pvecfg_hw_free(&hw);
}

struct bench_ctx {
	struct cli *cli;
	const char *name;
	int vmid;
	unsigned size_mib;
	char *db;                 /* state.db, or NULL: results not stored */
	struct bench_result before, after;
	bool have_before, have_after;
};

static void on_bench_event(void *ctx, const char *step, const char *text)
{
	struct bench_ctx *bc = ctx;
	if (bc->cli->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "event", json_object_new_string("bench"));
		json_object_object_add(o, "step", json_object_new_string(step));
		json_object_object_add(o, "text", json_object_new_string(text ? text : ""));
		out_json_line(stdout, o);
		json_object_put(o);
	} else {
		printf("  bench    %-8s %s\n", step, text ? text : "");
		fflush(stdout);
	}
}

/* Run the benchmark on an open session and store the result. 0 or -1
 * (*err). */
static int bench_once(struct bench_ctx *bc, struct ssh_session *s, enum os_family os,
		      const char *disk, const char *bus, const char *nic,
		      struct bench_result *res, char **err)
{
	struct bench_request q = {
		.os = os,
		.size_mib = bc->size_mib,
		.raw_disk = disk,
		.bus = bus,
		.nic = nic,
		.on_event = on_bench_event,
		.event_ctx = bc,
	};
	if (bench_run(s, &q, res, err) < 0)
		return -1;
	char *serr = NULL;
	if (bc->db && bench_store(bc->db, bc->name, bc->vmid, res, &serr) < 0) {
		log_warn("%s: the result was not stored in %s: %s", bc->name, bc->db,
			 serr ? serr : "error");
		free(serr);
	}
	return 0;
}

static int virtio_bench_hook(void *ctx, struct ssh_session *s, const char *when,
			     const struct os_info *os, const char *disk, const char *bus,
			     const char *nic, char **err)
{
	struct bench_ctx *bc = ctx;
	bool after = strcmp(when, "after") == 0;
	struct bench_result *r = after ? &bc->after : &bc->before;
	bench_result_free(r);
	if (bench_once(bc, s, os->family, disk, bus, nic, r, err) < 0)
		return -1;
	if (after)
		bc->have_after = true;
	else
		bc->have_before = true;
	return 0;
}

static void bench_ctx_free(struct bench_ctx *bc)
{
	bench_result_free(&bc->before);
	bench_result_free(&bc->after);
	free(bc->db);
}

static int parse_size_mib(const char *cmd, const char *arg, unsigned *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || v == 0 || v > BENCH_MAX_SIZE_MIB)
		return usage_error(cmd, "--size: expected MiB from 1 to 1048576", arg);
	*out = (unsigned)v;
	return 0;
}

static int cmd_bench(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {
		{"size", required_argument, NULL, 's'},
		{"address", required_argument, NULL, 'a'},
		{"template", required_argument, NULL, 't'},
		{0},
	};
	const char *address = NULL, *tname = NULL;
	unsigned size = 0;
	int opt, rc = 0;
	while (rc == 0 && (opt = sub_getopt(argc, argv, "t:", lo)) != -1) {
		if (opt == 's')
			rc = parse_size_mib("bench", optarg, &size);
		else if (opt == 'a')
			address = optarg;
		else if (opt == 't')
			tname = optarg;
		else
			rc = EXIT_USAGE;
	}
	if (rc == 0 && optind + 1 != argc)
		rc = usage_error("bench", "needs exactly one guest name",
				 optind < argc ? argv[optind] : "NAME");
	if (rc)
		return rc;
	const char *name = argv[optind];
	struct target_req treq = {.cmd = "bench", .name = name, .tmpl_name = tname,
				  .address = address, .tmpl_optional = true};
	struct guest_target gt;
	struct bench_ctx bc = {.cli = cli, .name = name, .size_mib = size};
	struct ssh_session *s = NULL;
	struct inject_result det = {0};
	struct bench_result last = {0}, now = {0};
	char *disk = NULL, *err = NULL;
	rc = guest_target_open(cli, &treq, &gt);
	if (rc)
		goto out;
	bc.vmid = gt.ref.vmid;
	bc.db = bench_db_path(cli->conf.paths.state);
	struct ssh_error se = {0};
	if (ssh_connect(&gt.ssh, &s, &se) < 0) {
		fprintf(stderr, "pvagent bench: %s: %s\n", name, ssh_error_str(&se));
		rc = ssh_error_exit_code(&se);
		ssh_error_clear(&se);
		goto out;
	}
	struct inject_request dq = {.session = s, .ssh = &gt.ssh};
	if (inject_run(&dq, &det) < 0) {
		fprintf(stderr, "pvagent bench: %s: %s\n", name, det.error ? det.error : "no OS");
		rc = det.exit_code ? det.exit_code : 1;
		goto out;
	}
	const char *bus, *nic;
	guest_disk_of(gt.config, det.have_profile ? &det.profile : NULL, &disk, &bus, &nic);
	char *lerr = NULL;
	int have_last = bc.db ? bench_last(bc.db, name, gt.ref.vmid, &last, &lerr) : 0;
	if (have_last < 0) {
		log_warn("%s: cannot read earlier results: %s", name, lerr ? lerr : "error");
		have_last = 0;
	}
	free(lerr);
	if (!cli->json)
		printf("%s: benchmark on %s (%s/%s), %s\n", name, det.os_desc ? det.os_desc : "?",
		       bus, nic, disk ? disk : "no raw disk");
	if (bench_once(&bc, s, det.os.family, disk, bus, nic, &now, &err) < 0) {
		fprintf(stderr, "pvagent bench: %s: %s\n", name, err ? err : "failed");
		rc = now.exit_code ? now.exit_code : 1;
		goto out;
	}
	if (cli->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "command", json_object_new_string("bench"));
		json_object_object_add(o, "result", json_object_new_string("ok"));
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "bench", bench_result_json(&now));
		if (have_last)
			json_object_object_add(o, "compare", bench_compare_json(&last, &now));
		out_json_line(stdout, o);
		json_object_put(o);
	} else {
		bench_print(&now, stdout);
		if (have_last) {
			printf("\ncompared with the last run:\n");
			bench_compare_table(&last, &now, stdout);
		}
	}
out:
	free(err);
	free(disk);
	bench_result_free(&last);
	bench_result_free(&now);
	inject_result_free(&det);
	ssh_close(s);
	bench_ctx_free(&bc);
	guest_target_free(&gt);
	return rc;
}

struct virtio_print {
	struct cli *cli;
	bool dry_run;
};

static void on_convert_event(void *ctx, const struct convert_event *ev)
{
	struct virtio_print *vp = ctx;
	static const char *const kinds[] = {"step", "diff", "config", "note"};
	if (vp->cli->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "event", json_object_new_string(kinds[ev->kind]));
		json_object_object_add(o, "step", json_object_new_string(ev->step ? ev->step : ""));
		if (ev->path)
			json_object_object_add(o, "path", json_object_new_string(ev->path));
		if (ev->text)
			json_object_object_add(o, "text", json_object_new_string(ev->text));
		if (ev->kind == CONV_EV_STEP)
			json_object_object_add(o, "seconds", json_object_new_double(ev->elapsed_s));
		out_json_line(stdout, o);
		json_object_put(o);
		return;
	}
	switch (ev->kind) {
	case CONV_EV_STEP:
		printf("  %-12s %6.1fs  %s\n", ev->step ? ev->step : "", ev->elapsed_s,
		       ev->text ? ev->text : "");
		break;
	case CONV_EV_DIFF:
		if (vp->dry_run || vp->cli->verbosity > 0)
			fputs(ev->text ? ev->text : "", stdout);
		break;
	case CONV_EV_CONFIG:
		printf("  %-12s         %s%s\n", ev->step ? ev->step : "",
		       vp->dry_run ? "would set " : "", ev->text ? ev->text : "");
		break;
	case CONV_EV_NOTE:
		printf("  note: %s\n", ev->text ? ev->text : "");
		break;
	}
	fflush(stdout);
}

static int cmd_virtio(struct cli *cli, int argc, char **argv)
{
	static const struct option lo[] = {
		{"bench", no_argument, NULL, 'b'},
		{"dry-run", no_argument, NULL, 'd'},
		{"disk-bus", required_argument, NULL, 'B'},
		{"size", required_argument, NULL, 's'},
		{"address", required_argument, NULL, 'a'},
		{"template", required_argument, NULL, 't'},
		{"timeout", required_argument, NULL, 'T'},
		{0},
	};
	const char *address = NULL, *tname = NULL;
	bool bench = false, dry = false;
	enum convert_bus cbus = CONVERT_BUS_AUTO;
	unsigned size = 0;
	double timeout = 0;
	int opt, rc = 0;
	while (rc == 0 && (opt = sub_getopt(argc, argv, "t:", lo)) != -1) {
		switch (opt) {
		case 'b': bench = true; break;
		case 'd': dry = true; break;
		case 'B':
			if (convert_bus_parse(optarg, &cbus) < 0)
				rc = usage_error("virtio", "--disk-bus: virtio-blk or virtio-scsi", optarg);
			break;
		case 's': rc = parse_size_mib("virtio", optarg, &size); break;
		case 'a': address = optarg; break;
		case 't': tname = optarg; break;
		case 'T': {
			char *end = NULL;
			timeout = strtod(optarg, &end);
			if (end == optarg || *end || timeout < 1 || timeout > 86400)
				rc = usage_error("virtio", "--timeout: seconds from 1 to 86400", optarg);
			break;
		}
		default: rc = EXIT_USAGE; break;
		}
	}
	if (rc == 0 && optind + 1 != argc)
		rc = usage_error("virtio", "needs exactly one guest name",
				 optind < argc ? argv[optind] : "NAME");
	if (rc)
		return rc;
	const char *name = argv[optind];
	struct target_req treq = {.cmd = "virtio", .name = name, .tmpl_name = tname,
				  .address = address, .tmpl_optional = true};
	struct guest_target gt;
	struct bench_ctx bc = {.cli = cli, .name = name, .size_mib = size};
	struct convert_result res = {0};
	char *journal = NULL;
	rc = guest_target_open(cli, &treq, &gt);
	if (rc)
		goto out;
	bc.vmid = gt.ref.vmid;
	bc.db = bench_db_path(cli->conf.paths.state);
	journal = strprintf("%s/convert", cli->conf.paths.state);
	if (!journal || !bc.db) {
		fprintf(stderr, "pvagent virtio: out of memory\n");
		rc = 1;
		goto out;
	}
	struct virtio_print vp = {cli, dry};
	struct guest_wait w = {0};
	struct convert_request q = {
		.pve = cli->pve,
		.guest = &gt.ref,
		.ssh = &gt.ssh,
		.bus = cbus,
		.dry_run = dry,
		.journal_dir = journal,
		.wait = &w,
		.verify_timeout_s = timeout,
		.bench = bench && !dry ? virtio_bench_hook : NULL,
		.bench_ctx = &bc,
		.on_event = on_convert_event,
		.event_ctx = &vp,
	};
	if (!cli->json)
		printf("%s: %s\n", name, dry ? "virtio conversion plan (nothing is changed)"
					    : "converting to virtio");
	convert_run(&q, &res);
	rc = res.exit_code;
	bool table = bc.have_before && bc.have_after;
	if (cli->json) {
		json_object *o = convert_result_json(&res);
		json_object_object_add(o, "command", json_object_new_string("virtio"));
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "result", json_object_new_string(rc ? "error" : "ok"));
		if (table)
			json_object_object_add(o, "bench", bench_compare_json(&bc.before, &bc.after));
		out_json_line(stdout, o);
		json_object_put(o);
	} else {
		if (table) {
			printf("\n");
			bench_compare_table(&bc.before, &bc.after, stdout);
		}
		switch (res.status) {
		case CONV_DONE:
			printf("%s: converted to %s%s\n", name, res.bus ? res.bus : "virtio",
			       res.resumed ? " (resumed an interrupted run)" : "");
			break;
		case CONV_ALREADY:
			printf("%s: already virtio; nothing changed\n", name);
			break;
		case CONV_DRY_RUN:
			printf("%s: dry run: nothing changed\n", name);
			break;
		default:
			fprintf(stderr, "pvagent virtio: %s: %s%s%s\n", name,
				res.error ? res.error : "failed", res.recovery ? "\n" : "",
				res.recovery ? res.recovery : "");
			break;
		}
	}
out:
	free(journal);
	convert_result_free(&res);
	bench_ctx_free(&bc);
	guest_target_free(&gt);
	return rc;
}

/* ---- command table and main ---------------------------------------------- */

static const struct command commands[] = {
	{"nodes", "", "nodes with CPU, memory and status", cmd_nodes},
	{"list", "[--node N]", "guests: vmid, name, node, type, status, disk bus, NIC", cmd_list},
	{"templates", "", "the templates pvagent can provision from", cmd_templates},
	{"up", "NAME... -t TEMPLATE [--node N] [--vmid ID] [--storage S] [--set K=V]... "
	       "[--var K=V]... [--parallel K] [--no-start] [--full] [--no-inject]",
	 "provision guests, or converge existing ones; then inject the template's guest files",
	 cmd_up},
	{"down", "NAME [--purge]", "shut down and delete a guest", cmd_down},
	{"inject", "NAME [--dry-run] [-t TEMPLATE] [--var K=V]... [--address A]",
	 "apply the template's guest files and hostname over SSH (--dry-run: show diffs)",
	 cmd_inject},
	{"virtio", "NAME [--dry-run] [--bench [--size MiB]] [--disk-bus virtio-blk|virtio-scsi] "
		   "[--address A] [-t TEMPLATE] [--timeout S]",
	 "convert IDE disks and e1000 NICs to virtio, rolling back on failure", cmd_virtio},
	{"bench", "NAME [--size MiB] [--address A] [-t TEMPLATE]",
	 "in-guest disk benchmark: sequential write/read, diskinfo, random reads; stored and compared",
	 cmd_bench},
	{NULL, NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"config", required_argument, NULL, 'c'},
		{"json", no_argument, NULL, 'j'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli cli = {0};
	int opt;
	while ((opt = getopt_long(argc, argv, "+c:vqh", lo, NULL)) != -1) {
		switch (opt) {
		case 'c': cli.conf_path = optarg; break;
		case 'j': cli.json = true; break;
		case 'v': cli.verbosity++; break;
		case 'q': cli.verbosity--; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	log_set_level(log_level_from_verbosity(cli.verbosity));
	const char *name = argv[optind];
	const struct command *cmd = commands;
	while (cmd->name && strcmp(cmd->name, name) != 0)
		cmd++;
	if (!cmd->name) {
		fprintf(stderr, "pvagent: unknown command '%s'\n", name);
		usage(stderr);
		return EXIT_USAGE;
	}
	/* The subcommand parses its own options from its name on; optind 0
	 * makes GNU getopt start afresh (permuting again, unlike the "+"
	 * mode of the global options above). */
	int sub_argc = argc - optind;
	char **sub_argv = argv + optind;
	optind = 0;
	int rc = cmd->run(&cli, sub_argc, sub_argv);
	pve_free(cli.pve);
	if (cli.conf_loaded)
		conf_free(&cli.conf);
	pve_global_cleanup();
	log_secret_clear();
	return rc;
}
