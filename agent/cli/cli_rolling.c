/* cli_rolling.c - `pvagent rolling plan|run [NODE...]`: the command line
 * of the rolling workflow (wf_rolling.h), checked into its one job (which
 * cmd_dispatch hands to pvagentd or runs here), and its result as text or
 * JSON (also for `resume`). */
#include "cli.h"
#include "json.h"
#include "log.h"
#include "output.h"
#include "rolling_plan.h"
#include "util.h"
#include "wf_params.h"
#include "wf_rolling.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the result ------------------------------------------------------------------- */

static void print_checks(json_object *checks)
{
	for (size_t i = 0; checks && i < json_object_array_length(checks); i++) {
		json_object *k = json_object_array_get_idx(checks, i);
		printf("  %-9s %s%s%s\n", json_str(k, "check"), json_flag(k, "ok") ? "ok" : "NOT OK",
		       json_str(k, "detail") ? ": " : "",
		       json_str(k, "detail") ? json_str(k, "detail") : "");
	}
}

static void print_node(json_object *nv, bool plan)
{
	json_object *moves = NULL, *todo = NULL, *done = NULL;
	json_object_object_get_ex(nv, "moves", &moves);
	json_object_object_get_ex(nv, "todo", &todo);
	json_object_object_get_ex(nv, "moves_done", &done);
	const char *name = json_str(nv, "name");
	printf("\n%s%s: PVE %s%s%s\n", name, json_flag(nv, "self") ? " (pvagent runs here)" : "",
	       json_str(nv, "version") ? json_str(nv, "version") : "?",
	       !plan && json_str(nv, "phase") ? ", " : "",
	       !plan && json_str(nv, "phase") ? json_str(nv, "phase") : "");
	json_object *list = plan ? moves : done;
	const char *hdr[] = {"GUEST", "VMID", "METHOD", plan ? "TO" : "FROM-TO", "STATUS", "WHY"};
	struct table *t = list && json_object_array_length(list) ? table_new(6, hdr) : NULL;
	for (size_t i = 0; t && i < json_object_array_length(list); i++) {
		json_object *m = json_object_array_get_idx(list, i);
		char vmid[16], way[160];
		const char *leg = json_text(m, "leg"), *from = json_text(m, "from"),
			   *to = json_text(m, plan ? "target" : "to");
		snprintf(vmid, sizeof vmid, "%d", json_int0(m, "vmid"));
		/* a guest that stays (a template) has no target: "-" */
		if (plan)
			snprintf(way, sizeof way, "%s", to ? to : "-");
		else
			snprintf(way, sizeof way, "%s %s>%s", leg ? leg : "?", from ? from : "?",
				 to ? to : "?");
		const char *row[] = {json_str(m, "name"), vmid, json_text(m, "method"), way,
				     json_text(m, "status"), json_str(m, "why")};
		table_add(t, row);
	}
	if (t)
		table_print(t, stdout);
	else
		printf("  nothing to move\n");
	table_free(t);
	for (size_t i = 0; plan && todo && i < json_object_array_length(todo); i++) {
		json_object *x = json_object_array_get_idx(todo, i);
		printf("  decide: %s (%d): %s\n", json_str(x, "guest"), json_int0(x, "vmid"),
		       json_str(x, "what"));
	}
}

static void print_rolling(struct cli *cli, struct job *j, int code)
{
	json_object *v = job_vars(j), *checks = NULL, *order = NULL, *nodes = NULL, *cl = NULL;
	json_object_object_get_ex(v, "checks", &checks);
	json_object_object_get_ex(v, "order", &order);
	json_object_object_get_ex(v, "nodes", &nodes);
	json_object_object_get_ex(v, "cluster", &cl);
	bool plan = json_str(job_params(j), "mode") &&
		    strcmp(json_str(job_params(j), "mode"), "plan") == 0;
	if (cli->json) {
		json_object *r = json_object_new_object();
		json_object_object_add(r, "command", json_object_new_string("rolling"));
		cli_job_result_members(r, j, code);
		json_object_object_add(r, "mode", json_object_new_string(json_text(job_params(j),
										   "mode")));
		static const char *const keys[] = {"cluster", "checks", "order", "nodes"};
		for (size_t i = 0; i < 4; i++) {
			json_object *x = NULL, *cp = NULL;
			if (json_object_object_get_ex(v, keys[i], &x))
				json_object_deep_copy(x, &cp, NULL);
			json_object_object_add(r, keys[i], cp);
		}
		if (job_id(j))
			json_object_object_add(r, "job", json_object_new_int64(job_id(j)));
		if (job_left(j))
			json_object_object_add(r, "left", json_object_new_string(job_left(j)));
		out_json_line(stdout, r);
		json_object_put(r);
		return;
	}
	if (cl)
		printf("cluster %s: %d nodes, %d online, %s, %s\n", json_text(cl, "name"),
		       json_int0(cl, "nodes"), json_int0(cl, "online"),
		       json_flag(cl, "ha") ? "HA resources" : "no HA resources",
		       json_flag(cl, "ceph") ? "Ceph" : "no Ceph");
	if (checks) {
		printf("checks:\n");
		print_checks(checks);
	}
	if (order && json_object_array_length(order)) {
		printf("order:");
		for (size_t i = 0; i < json_object_array_length(order); i++)
			printf("%s %s", i ? "," : "",
			       json_object_get_string(json_object_array_get_idx(order, i)));
		printf("\n");
	}
	for (size_t i = 0; nodes && i < json_object_array_length(nodes); i++)
		print_node(json_object_array_get_idx(nodes, i), plan);
	const struct pve_error *e = job_error(j);
	if (e->kind != PVE_OK) {
		char *m = pve_error_format(e);
		log_error("rolling: %s", m ? m : "failed");
		free(m);
	}
	if (job_left(j))
		log_error("rolling: needs attention: %s; 'pvagent resume %lld' continues", job_left(j),
			  job_id(j));
}

int cli_rolling_result(struct cli *cli, struct job *const *jobs, size_t n, int code)
{
	print_rolling(cli, jobs[0], code);
	return code;
}

/* ---- the command ------------------------------------------------------------------- */

/* The node this runs on: the host's short name (PVE names nodes so). */
static char *self_node(void)
{
	char host[256];
	if (gethostname(host, sizeof host) < 0)
		return NULL;
	host[sizeof host - 1] = '\0';
	host[strcspn(host, ".")] = '\0';
	return strdup(host);
}

/* rolling plan|run: its params the options' (--wait and --run the mode,
 * --run-script's FILE read into the script's text), with the nodes
 * named, the mode "plan" and the node pvagent runs on */
static int cmd_rolling(struct cli *cli, const struct cmd_args *a)
{
	const struct job_params_decl *d = &wf_rolling_params_decl;
	json_object *p = a->params;
	const char *what = a->argv[0], *mode = json_str(p, "mode"), *version = json_str(p, "version"),
		   *script_file = json_str(p, "script"), *window = json_str(p, "window");
	int rc = 0;
	if (strcmp(what, "plan") != 0 && strcmp(what, "run") != 0)
		return cli_usage_error("rolling", "plan or run, not", what);
	bool plan = strcmp(what, "plan") == 0, run = mode && strcmp(mode, "run") == 0;
	if (!plan && !mode)
		return cli_error("usage", "rolling", "run takes --wait (the admin updates each node) "
				 "or --run (pvagent does, over SSH)");
	if (plan && (mode || script_file))
		return cli_error("usage", "rolling", "plan changes nothing: --wait, --run and "
				 "--run-script are run's");
	if (script_file && !run)
		return cli_error("usage", "rolling", "--run-script goes with --run");
	if (script_file && !version)
		return cli_error("usage", "rolling", "--run-script (a major upgrade) needs --version, "
				 "the version it upgrades to");
	if (version && !rolling_version_valid(version))
		return cli_usage_error("rolling", "--version: not a version (9, 9.1, 9.1.2)",
				       version);
	if (window) {
		bool found = false;
		if ((rc = cli_load_conf(cli)))
			return rc;
		for (size_t i = 0; i < cli->conf.n_windows; i++)
			found |= strcmp(cli->conf.windows[i].name, window) == 0;
		if (cli->conf.windows_error)
			return cli_error("config", "rolling", "%s", cli->conf.windows_error);
		if (!found)
			return cli_usage_error("rolling", "--window: no [window] section of that name",
					       window);
	}
	for (int i = 1; i < a->argc; i++)
		if ((rc = cli_check_node(cli, "rolling", a->argv[i], NULL)))
			return rc;
	if (a->argc == 1 && (rc = cli_connect_pve(cli)))
		return rc;
	char *script = NULL, *why = NULL;
	size_t len = 0;
	if (script_file && read_small_file(script_file, 1 << 20, 0, &script, &len, &why) < 0) {
		rc = cli_error("usage", "rolling", "--run-script %s: %s", script_file,
			       why ? why : "cannot read it");
		free(why);
		return rc;
	}
	char *self = self_node();
	json_object *params = cmd_args_params(a);
	if (params && (job_param_set_strv(d, params, "nodes", (const char *const *)a->argv + 1,
					  (size_t)a->argc - 1) < 0 ||
		       job_param_set_str(d, params, "mode", plan ? "plan" : mode) < 0 ||
		       job_param_set_str(d, params, "script", script) < 0 ||
		       job_param_set_str(d, params, "self", self) < 0)) {
		json_object_put(params);
		params = NULL;
	}
	rc = cli_job_add(cli, "cluster", params);
	cli->jobs->not_kept = plan; /* a plan changes nothing, state.db neither */
	free(self);
	free(script);
	return rc;
}

const struct cmd_entry cmd_rolling_entry = {
	"rolling",
	"plan|run [NODE...] [--wait | --run [--run-script FILE]] [--version V] [--window W] "
	"[--max-workers K] [--node-ssh NODE=HOST[:PORT]]...",
	"update the cluster's nodes one at a time: each drained, updated, checked and undrained "
	"(plan: the checks, order and moves; changes nothing)",
	"", NULL, NULL, 1, -1, "node", cmd_rolling,
	"pvagent rolling plan\npvagent rolling run --wait --version 8.4\n"
	"pvagent rolling run --run --version 9.1 --run-script ./upgrade-8-to-9.sh",
	.wf = &wf_rolling,
	.render = cli_rolling_result,
	.flags = CMD_JOBS | CMD_MIGRATES,
};
