/* pvagent.c - the command-line tool's main: global options, the command
 * table and its dispatch (in this process, or submitted to pvagentd for
 * the commands it takes), and the commands nodes, list, templates, help
 * and version. What every command shares is in cli_env.c; up and down in
 * cli_up.c, the guest-side commands in cli_guest.c, and so on (cli.h).
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



/* ---- printing helpers ---------------------------------------------------- */

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

/* The commands a running pvagentd takes (cli_daemon_submit); of image's
 * subcommands only build is a job. */
static enum cli_submit submit_how(const struct cmd_entry *e, const struct cmd_args *a)
{
	if (e == &cmd_image_entry)
		return a->argc >= 1 && strcmp(a->argv[0], "build") == 0 ? CLI_SUBMIT_JOBS
									 : CLI_SUBMIT_NO;
	static const struct {
		const struct cmd_entry *e;
		enum cli_submit how;
	} submittable[] = {
		{&cmd_up_entry, CLI_SUBMIT_JOBS},      {&cmd_down_entry, CLI_SUBMIT_JOBS},
		{&cmd_inject_entry, CLI_SUBMIT_JOBS},  {&cmd_virtio_entry, CLI_SUBMIT_JOBS},
		{&cmd_bench_entry, CLI_SUBMIT_JOBS},   {&cmd_migrate_entry, CLI_SUBMIT_JOBS},
		{&cmd_drain_entry, CLI_SUBMIT_JOBS},   {&cmd_undrain_entry, CLI_SUBMIT_JOBS},
		{&cmd_rolling_entry, CLI_SUBMIT_JOBS},
		{&cmd_resume_entry, CLI_SUBMIT_RESUME},
	};
	for (size_t i = 0; i < sizeof submittable / sizeof *submittable; i++)
		if (submittable[i].e == e)
			return submittable[i].how;
	return CLI_SUBMIT_NO;
}

int cmd_dispatch(struct cli *cli, const struct cmd_entry *e, int argc, char **argv)
{
	struct cmd_args a;
	int rc = cmd_args_parse(e, argc, argv, &a);
	if (rc)
		return rc;
	bool handled = false;
	rc = cli_daemon_submit(cli, submit_how(e, &a), e, &a, &handled);
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
		out_json_ok("nodes", "nodes", json_object_get(nodes));
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


static int cmd_list(struct cli *cli, const struct cmd_args *a)
{
	const char *node = NULL;
	bool longer = false;
	for (size_t i = 0; i < a->n; i++) {
		if (a->v[i].opt == 'n')
			node = a->v[i].val;
		longer |= a->v[i].opt == 'l';
	}
	int rc = cli_check_node(cli, "list", node, NULL);
	if (rc)
		return rc;
	json_object *guests = NULL;
	struct pve_error e = {0};
	if (inventory_guests(cli->pve, node, &guests, &e) < 0)
		return cli_fail_pve(cli, "list", &e);
	struct pve_opts po = job_conf_pve_opts(&cli->conf);
	if (longer && inventory_guests_hw(cli->pve, &po, JOBPOOL_READS, guests, &e) < 0) {
		json_object_put(guests);
		return cli_fail_pve(cli, "list", &e);
	}
	if (cli->json) {
		out_json_ok("list", "guests", json_object_get(guests));
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

/* What a template needs before `up` can use it on the configured cluster,
 * from one listing of the cluster's resources (guests and storages): its
 * mark in the table and its word in --json. */
enum tmpl_here { HERE_READY, HERE_BUILD, HERE_NO_VM, HERE_NO_STORAGE, HERE_PVE3, HERE_UNKNOWN };
static const struct {
	const char *mark, *json, *legend;
} here_words[] = {
	[HERE_READY] = {"ready", "ready", NULL},
	[HERE_BUILD] = {"build", "image-build",
			"build: IMAGE-image, the VM it clones, is made by 'pvagent image build IMAGE'"},
	[HERE_NO_VM] = {"no VM", "no-template-vm",
			"no VM: the template VM it clones is not on this cluster"},
	[HERE_NO_STORAGE] = {"no stor", "no-storage",
			     "no stor: the storage its source names is not on this cluster"},
	[HERE_PVE3] = {"no", "pve-2-3-only",
		       "no: OpenVZ, PVE 2.x/3.x only (it left PVE with 4.0; this cluster has none)"},
	[HERE_UNKNOWN] = {"?", "unknown", "?: its source is set at up time (${...})"},
};

/* Does resources list a guest named want (or of VMID want) / a storage
 * sid with content on node (any node when NULL)? */
static bool res_guest(json_object *res, const char *want)
{
	for (size_t i = 0; i < json_object_array_length(res); i++) {
		json_object *g = json_object_array_get_idx(res, i);
		const char *type = json_text(g, "type"), *name = json_text(g, "name"),
			   *vmid = json_text(g, "vmid");
		if (type && (strcmp(type, "qemu") == 0 || strcmp(type, "lxc") == 0) &&
		    ((name && strcmp(name, want) == 0) || (vmid && strcmp(vmid, want) == 0)))
			return true;
	}
	return false;
}

static bool res_storage(json_object *res, const char *sid, size_t sidlen, const char *content,
			const char *node)
{
	for (size_t i = 0; i < json_object_array_length(res); i++) {
		json_object *st = json_object_array_get_idx(res, i);
		const char *type = json_text(st, "type"), *id = json_text(st, "storage"),
			   *on = json_text(st, "node"), *has = json_text(st, "content");
		if (!type || strcmp(type, "storage") != 0 || !id || strlen(id) != sidlen ||
		    strncmp(id, sid, sidlen) != 0 || (node && on && strcmp(on, node) != 0))
			continue;
		for (const char *c = has; c && *c; c += strcspn(c, ",") + (c[strcspn(c, ",")] != 0))
			if (strncmp(c, content, strlen(content)) == 0 &&
			    (c[strlen(content)] == ',' || !c[strlen(content)]))
				return true;
	}
	return false;
}

static enum tmpl_here template_here(const struct tmpl *t, json_object *res, const char *node)
{
	bool openvz_here = false;
	for (size_t i = 0; i < json_object_array_length(res) && !openvz_here; i++) {
		const char *type = json_text(json_object_array_get_idx(res, i), "type");
		openvz_here = type && strcmp(type, "openvz") == 0;
	}
	if (t->kind == TMPL_OPENVZ && !openvz_here)
		return HERE_PVE3;
	const char *clone = t->source.clone.value;
	const char *vol = t->source.ostemplate.value ? t->source.ostemplate.value
							     : t->source.iso.value;
	const char *src = clone ? clone : vol;
	if (!src || strstr(src, "${"))
		return HERE_UNKNOWN;
	if (clone)
		return res_guest(res, clone) ? HERE_READY : t->source.image ? HERE_BUILD : HERE_NO_VM;
	size_t sidlen = strcspn(vol, ":");
	return res_storage(res, vol, sidlen, t->source.ostemplate.value ? "vztmpl" : "iso", node)
		       ? HERE_READY : HERE_NO_STORAGE;
}

/* The cluster's resources (one request), or NULL with a warning: the list
 * is shown without marks when the cluster cannot say. */
static json_object *templates_cluster(struct cli *cli)
{
	struct pve_opts o = job_conf_pve_opts(&cli->conf);
	o.unreachable_once = true;
	struct pve_error e = {0};
	json_object *res = NULL;
	cli->pve = cli->pve ? cli->pve : pve_new(&o, &e);
	if (!cli->pve || pve_get(cli->pve, "/cluster/resources", NULL, &res, &e) < 0 ||
	    !json_object_is_type(res, json_type_array)) {
		log_warn("cannot tell which templates the cluster can provision: %s",
			 e.message ? e.message : "no resource list");
		json_object_put(res);
		res = NULL;
	}
	pve_error_clear(&e);
	return res;
}

static int cmd_templates(struct cli *cli, const struct cmd_args *args)
{
	bool longer = false;
	for (size_t i = 0; i < args->n; i++)
		longer |= args->v[i].opt == 'l';
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
	json_object *res = n ? templates_cluster(cli) : NULL;
	json_object *a = json_object_new_array();
	bool shown[sizeof here_words / sizeof here_words[0]] = {0};
	enum tmpl_here *here = res ? calloc(n, sizeof *here) : NULL;
	size_t ready = 0;
	for (size_t i = 0; i < n; i++) {
		const struct tmpl *t = list[i].tmpl;
		json_object *o = json_object_new_object();
		if (t && here) {
			enum tmpl_here h = here[i] = template_here(t, res, cli->conf.pve.node);
			shown[h] = true;
			ready += h == HERE_READY;
			json_object_object_add(o, "here", json_object_new_string(here_words[h].json));
		}
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
		out_json_ok("templates", "templates", json_object_get(a));
	} else {
		/* HERE when the cluster said (what up can use now), SOURCE with
		 * --long; in the terminal's width (or 80) */
		const char *hdr[] = {"TEMPLATE", "KIND", "OS", "HERE", "DESCRIPTION", "SOURCE"};
		const char *hdr_off[] = {"TEMPLATE", "KIND", "OS", "DESCRIPTION", "SOURCE"};
		size_t cols = (here ? 5 : 4) + longer;
		struct table *t = table_new(cols, here ? hdr : hdr_off);
		for (size_t i = 0; t && i < json_object_array_length(a); i++) {
			json_object *o = json_object_array_get_idx(a, i);
			char os[128];
			snprintf(os, sizeof os, "%s %s", json_text(o, "os") ? json_text(o, "os") : "",
				 json_text(o, "os_version") ? json_text(o, "os_version") : "");
			/* OpenVZ left PVE with 4.0: said first, where no cut reaches */
			const char *kind = json_text(o, "kind"), *desc = json_text(o, "description");
			char *ovz = kind && strcmp(kind, "openvz") == 0
					    ? strprintf("PVE 2.x/3.x only: %s", desc ? desc : "") : NULL;
			const char *mark = here && json_text(o, "here") ? here_words[here[i]].mark
									  : "-";
			const char *cell_desc = json_text(o, "error") ? json_text(o, "error")
						: ovz ? ovz : desc;
			const char *row[] = {json_text(o, "name"), kind ? kind : "invalid",
					     kind ? os : "-", mark, cell_desc,
					     json_text(o, "source")};
			const char *row_off[] = {row[0], row[1], row[2], row[4], row[5]};
			table_add(t, here ? row : row_off);
			free(ovz);
		}
		if (t)
			table_print_fit(t, stdout, cli_term_columns());
		table_free(t);
		if (here) {
			printf("%zu of %zu can be provisioned on this cluster now (HERE: ready)\n", ready,
			       n);
			for (size_t h = 0; h < sizeof here_words / sizeof here_words[0]; h++)
				if (shown[h] && here_words[h].legend)
					printf("  %s\n", here_words[h].legend);
		}
	}
	free(here);
	json_object_put(res);
	json_object_put(a);
	tmpl_list_free(list, n);
	return bad ? 1 : 0;
}



/* ---- command table and main ---------------------------------------------- */

static const struct option list_opts[] = {{"node", required_argument, NULL, 'n'},
					  {"long", no_argument, NULL, 'l'}, {0}};

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
static const struct option templates_opts[] = {{"long", no_argument, NULL, 'l'}, {0}};
static const struct cmd_entry cmd_templates_entry = {
	"templates", "[--long]",
	"the templates pvagent can provision from, in the terminal's width, and which the "
	"configured cluster has what they need for (HERE: ready, or what is missing; one request); "
	"--long: also their source",
	"l", templates_opts, NULL, 0, 0, NULL, cmd_templates,
	"pvagent templates\npvagent templates --long\npvagent --json templates",
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
	/* as help lists them: what a user does first, help and version last */
	&cmd_nodes_entry,   &cmd_list_entry,    &cmd_show_entry,   &cmd_templates_entry,
	&cmd_up_entry,      &cmd_down_entry,    &cmd_ssh_entry,    &cmd_inject_entry,
	&cmd_virtio_entry,  &cmd_bench_entry,   &cmd_migrate_entry, &cmd_drain_entry,
	&cmd_undrain_entry, &cmd_rolling_entry, &cmd_windows_entry, &cmd_jobs_entry,
	&cmd_job_entry,
	&cmd_report_entry,  /* read-only: pvagentd answers it when it runs (cli_report.c) */
	&cmd_resume_entry,  &cmd_cancel_entry,  &cmd_status_entry, &cmd_setup_entry,
	&cmd_doctor_entry,  &cmd_pool_entry,    &cmd_image_entry,  &cmd_help_entry,
	&cmd_version_entry, NULL,
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
		   "       pvagent --version | help [COMMAND] | COMMAND --help\n"
		   "The global options may also follow the command (pvagent list --json).\n\n"
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
	fprintf(f, "\nglobal options (before or after the command):\n"
		   "  -c, --config CONF         the configuration file\n"
		   "      --json                JSON lines on standard output\n"
		   "      --local               run here, not through pvagentd\n"
		   "  -v, --verbose             more detail on standard error\n"
		   "  -q, --quiet               warnings and errors only\n");
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
		out_json_ok("version", "version", json_object_get(v));
		json_object_put(v);
	} else {
		printf("pvagent %s\n", PVAGENT_VERSION);
	}
	return 0;
}

/* The global options (main's), as they may also follow the command. */
static const struct {
	const char *name;
	char c; /* its short form, or 0 */
} globals[] = {{"config", 'c'}, {"json", 0}, {"local", 0}, {"verbose", 'v'}, {"quiet", 'q'}};

/* Has command e a long option of that name (n bytes), taking an argument
 * (*needs_arg)? */
static bool cmd_has_long(const struct cmd_entry *e, const char *name, size_t n, bool *needs_arg)
{
	for (const struct option *o = e ? e->longopts : NULL; o && o->name; o++)
		if (strlen(o->name) == n && strncmp(o->name, name, n) == 0) {
			*needs_arg = o->has_arg == required_argument;
			return true;
		}
	return false;
}

static bool cmd_has_short(const struct cmd_entry *e, char c, bool *needs_arg)
{
	const char *p = e && e->shortopts && c != ':' ? strchr(e->shortopts, c) : NULL;
	*needs_arg = p && p[1] == ':';
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
		for (const struct cmd_entry *const *c = commands; *c; c++)
			printf("%s\n", (*c)->name);
	} else if (strcmp(what, "options") == 0) {
		const struct cmd_entry *e = argc > 2 ? find_command(argv[2]) : NULL;
		for (const struct option *o = e && e->longopts ? e->longopts : NULL; o && o->name; o++)
			printf("--%s\n", o->name);
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
		case 'h': usage(stdout); return 0;
		case 'R': printf("pvagent %s\n", PVAGENT_VERSION); return 0;
		default:
			cli_error_note("usage", NULL,
				       strprintf("unknown option '%s'", argv[optind - 1]));
			usage(stderr);
			return cli_finish_error(&cli, NULL, EXIT_USAGE);
		}
	}
	if (optind >= argc) {
		cli_error("usage", NULL, "needs a command");
		usage(stderr);
		return cli_finish_error(&cli, NULL, EXIT_USAGE);
	}
	log_set_level(log_level_from_verbosity(cli.verbosity));
	const char *name = argv[optind];
	bool completing = strcmp(name, "__complete") == 0;
	const struct cmd_entry *cmd = completing ? NULL : find_command(name);
	if (!cmd && strcmp(name, cmd_submitted_entry.name) == 0)
		cmd = &cmd_submitted_entry; /* pvagentd's own: not in the table */
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
