/* cli_table.c - the command table (every command's entry, in help's
 * order: cli_commands), help and version, and the cluster-wide commands
 * nodes, list and templates. main (pvagent.c) finds a command here and
 * cmd_dispatch (cli_args.c) runs it. */
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



/* ---- the command table ---------------------------------------------- */

static const struct option list_opts[] = {{"node", required_argument, NULL, 'n'},
					  {"long", no_argument, NULL, 'l'}, {0}};

static const struct cmd_entry cmd_nodes_entry = {
	"nodes", "", "nodes with CPU, memory and status", NULL, NULL, NULL, 0, 0, NULL, cmd_nodes,
	"pvagent nodes\npvagent --json nodes",
	.wf = NULL,
	.flags = CMD_READONLY,
};
static const struct cmd_entry cmd_list_entry = {
	"list", "[--node N] [--long]",
	"guests: vmid, name, node, type, status, memory, tags (one request); --long: also the "
	"disk bus and NIC of each guest's config, read 8 at once",
	"n:l", list_opts, NULL, 0, 0, NULL, cmd_list,
	"pvagent list\npvagent list --long\npvagent --json list --node pve1",
	.wf = NULL,
	.flags = CMD_READONLY,
};
static const struct option templates_opts[] = {{"long", no_argument, NULL, 'l'}, {0}};
static const struct cmd_entry cmd_templates_entry = {
	"templates", "[--long]",
	"the templates pvagent can provision from, in the terminal's width, and which the "
	"configured cluster has what they need for (HERE: ready, or what is missing; one request); "
	"--long: also their source",
	"l", templates_opts, NULL, 0, 0, NULL, cmd_templates,
	"pvagent templates\npvagent templates --long\npvagent --json templates",
	.wf = NULL,
	.flags = CMD_READONLY,
};

static int cmd_help(struct cli *cli, const struct cmd_args *a);
static int cmd_version(struct cli *cli, const struct cmd_args *a);
static const struct cmd_entry cmd_help_entry = {
	"help", "[COMMAND]", "this list, or a command's usage, options and examples", NULL, NULL,
	NULL, 0, 1, "command", cmd_help, "pvagent help\npvagent help up",
	.wf = NULL,
	.flags = CMD_READONLY,
};
static const struct cmd_entry cmd_version_entry = {
	"version", "", "the version of pvagent (also --version)", NULL, NULL, NULL, 0, 0, NULL,
	cmd_version, "pvagent version",
	.wf = NULL,
	.flags = CMD_READONLY,
};

static const struct cmd_entry *const commands[] = {
	/* as help lists them: what a user does first, help and version last */
	&cmd_nodes_entry,   &cmd_list_entry,    &cmd_show_entry,    &cmd_templates_entry,
	&cmd_up_entry,      &cmd_down_entry,    &cmd_ssh_entry,     &cmd_inject_entry,
	&cmd_virtio_entry,  &cmd_bench_entry,   &cmd_migrate_entry, &cmd_drain_entry,
	&cmd_undrain_entry, &cmd_rolling_entry, &cmd_windows_entry, &cmd_jobs_entry,
	&cmd_job_entry,
	&cmd_report_entry,  /* read-only: pvagentd answers it when it runs (cli_report.c) */
	&cmd_resume_entry,  &cmd_cancel_entry,  &cmd_status_entry,  &cmd_setup_entry,
	&cmd_doctor_entry,  &cmd_pool_entry,    &cmd_image_entry,   &cmd_help_entry,
	&cmd_version_entry, NULL,
};

const struct cmd_entry *cli_find_command(const char *name)
{
	for (const struct cmd_entry *const *c = commands; *c; c++)
		if (strcmp((*c)->name, name) == 0)
			return *c;
	return NULL;
}

void cli_usage(FILE *f)
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
void cli_command_help(FILE *f, const struct cmd_entry *e)
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
		cli_usage(stdout);
		return 0;
	}
	const struct cmd_entry *e = cli_find_command(a->argv[0]);
	if (!e) {
		cli_error("usage", "help", "unknown command '%s'", a->argv[0]);
		cli_usage(stderr);
		return EXIT_USAGE;
	}
	cli_command_help(stdout, e);
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

const struct cmd_entry *cli_command_of(const struct job_workflow *wf)
{
	for (const struct cmd_entry *const *c = commands; wf && *c; c++)
		if ((*c)->wf == wf)
			return *c;
	return NULL;
}

const struct cmd_entry *const *cli_commands(void)
{
	return commands;
}

