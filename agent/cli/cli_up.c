/* cli_up.c - `pvagent up` and `pvagent down`: the request checked (names,
 * --set keys and values against the PVE schema, the address pool, the
 * node; down asks first) and one job per guest appended (cmd_dispatch
 * sends them to pvagentd or runs them, at most --parallel at once:
 * cli_run.c; wf_up.c, wf_down.c do the work), and their results as one
 * table (the renderers, for resume too). */
#include "up_check.h"
#include "wf_params.h"
#include "wf_up.h"

#include "cli.h"
#include "cli_confirm.h"
#include "guest.h"
#include "json.h"
#include "log.h"
#include "output.h"
#include "pvecheck.h"
#include "pvekeys.h"
#include "util.h"

#include <stdbool.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ${pubkey} in a submitted up's own check: a key of the right form (the
 * job gets pvagentd's, which pvagentd checks). */
#define UP_PUBKEY_STANDIN \
	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA pvagentd"

/* ---- the commands ---------------------------------------------------------- */

void print_results(struct cli *cli, const char *cmd, const struct up_result *r, size_t n,
			  int code)
{
	if (cli->json) {
		json_object *o = json_object_new_object(), *a = json_object_new_array();
		for (size_t i = 0; i < n; i++) {
			json_object *g = up_result_json(&r[i]);
			bool stopped = r[i].outcome == JOB_OUT_INTERRUPTED;
			bool failed = r[i].error.kind != PVE_OK || stopped;
			char *m = stopped ? NULL : failed ? pve_error_format(&r[i].error) : NULL;
			const char *kind = !failed ? NULL
					   : stopped ? cli_stop_word()
						     : pve_err_kind_name(r[i].error.kind);
			if (g)
				out_result_members(g, r[i].name, r[i].vmid, r[i].node,
						   cli_exit_code(r[i].outcome), kind,
						   stopped ? r[i].left : m, r[i].failed_step);
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
		snprintf(vmid, sizeof vmid, "%d", r[i].vmid);
		snprintf(secs, sizeof secs, "%.1fs", r[i].elapsed_s);
		/* the word of the exit code: 3 needs attention, 130 is
		 * interrupted (or cancelled) */
		const char *res = r[i].outcome != JOB_OUT_INTERRUPTED ? up_result_word(&r[i])
				  : cli_cancelled ? "cancelled" : "interrupted";
		const char *row[] = {r[i].name, r[i].vmid ? vmid : NULL, r[i].node, r[i].address,
				     res, secs};
		table_add(t, row);
	}
	if (t)
		table_print(t, stdout);
	table_free(t);
	for (size_t i = 0; i < n; i++) {
		if (r[i].pending)
			printf("%s: applied at the next restart: %s\n", r[i].name, r[i].pending);
		if (r[i].outcome == JOB_OUT_INTERRUPTED && cli_cancelled) {
			log_error("%s: cancelled by 'pvagent cancel'%s%s", r[i].name,
				  r[i].left ? ": " : "", r[i].left ? r[i].left : "");
			continue;
		}
		if (r[i].outcome == JOB_OUT_INTERRUPTED) {
			log_error("%s: interrupted%s%s; the job is kept: 'pvagent resume %lld' (or the "
				  "same command again) waits for what PVE still does and finishes",
				  r[i].name, r[i].left ? ": " : "", r[i].left ? r[i].left : "",
				  r[i].job);
			continue;
		}
		if (r[i].error.kind != PVE_OK) {
			/* absent: "no guest named ...", as every command says it */
			char *m = pve_error_format(&r[i].error);
			bool named = r[i].status == UP_ABSENT;
			log_error("%s%s%s", named ? "" : r[i].name, named ? "" : ": ",
				  m ? m : "failed");
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

/* Up's and down's jobs' results as one table of their guests (a job that
 * never opened, for want of a PVE client, by its outcome and error);
 * returns code. */
static int print_jobs(struct cli *cli, const char *cmd, struct job *const *jobs, size_t n,
		      int code)
{
	struct up_result *r = calloc(n ? n : 1, sizeof *r);
	int bad = !r;
	for (size_t i = 0; r && i < n; i++)
		bad |= wf_result_take(jobs[i], &r[i]) < 0;
	if (bad)
		fprintf(stderr, "pvagent %s: out of memory\n", cmd);
	else
		print_results(cli, cmd, r, n, code);
	up_results_free(r, n);
	return bad && !code ? 1 : code;
}

int cli_up_result(struct cli *cli, struct job *const *jobs, size_t n, int code)
{
	return print_jobs(cli, "up", jobs, n, code);
}

int cli_down_result(struct cli *cli, struct job *const *jobs, size_t n, int code)
{
	return print_jobs(cli, "down", jobs, n, code);
}

/* What up checks of the cluster once its input is good: the node (given,
 * or the configuration's default), and for an OpenVZ template the PVE
 * version (tmpl_check_version, as the job's find step does: here before a
 * job, as a template error). 0 or an exit code (said). */
static int up_check_cluster(struct cli *cli, const char *node, const struct tmpl *t,
			    const struct tmpl_kvlist *sets)
{
	int rc = 0;
	if (node)
		rc = cli_check_node(cli, "up", node, NULL);
	else if (cli->conf.pve.node) /* the default must exist too */
		rc = cli_check_node(cli, "up", cli->conf.pve.node, "[pve] node");
	if (rc == 0 && t->kind == TMPL_OPENVZ && (rc = cli_connect_pve(cli)) == 0) {
		const struct pve_version *v = NULL;
		struct pve_error ve = {0};
		char *why = NULL;
		if (pve_version(cli->pve, &v, &ve) < 0)
			rc = cli_fail_pve(cli, "up", &ve);
		else if (tmpl_check_version(t, sets, v->major, v->minor, &why) < 0)
			rc = cli_error("template", "up", "%s", why ? why : "out of memory");
		free(why);
	}
	return rc;
}

/* One up job's params: the options' (a), the guest's name, and what the
 * request found (its template's name and file, the node and pool it
 * defaults to). NULL: out of memory. */
static json_object *up_job_params(const struct cmd_args *a, const struct up_request *req,
				  const char *name)
{
	const struct job_params_decl *d = &wf_up_params_decl;
	json_object *p = cmd_args_params(a);
	if (p && (job_param_set_str(d, p, "name", name) < 0 ||
		  job_param_set_str(d, p, "template", req->tmpl->name) < 0 ||
		  job_param_set_str(d, p, "template_path", req->tmpl->path) < 0 ||
		  job_param_set_str(d, p, "node", req->node) < 0 ||
		  job_param_set_str(d, p, "pool", req->pool ? req->pool : req->tmpl->guest.pool) < 0)) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

static int cmd_up(struct cli *cli, const struct cmd_args *a)
{
	json_object *p = a->params;
	const char *tname = json_str(p, "template"), *node = json_str(p, "node");
	long parallel = 4;
	struct tmpl_kvlist sets = {0}, vars = {0};
	char *err = NULL;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < a->n; i++)
		if (a->v[i].opt == 'p')
			rc = cli_parse_count("up", "--parallel", a->v[i].val, 1, 64, &parallel);
	if (rc == 0 && !tname)
		rc = cli_usage_error("up", "needs a template", "-t TEMPLATE");
	if (rc == 0 && (job_params_kv(p, "sets", &sets) < 0 || job_params_kv(p, "vars", &vars) < 0))
		rc = 1;
	if (rc == 0)
		rc = cli_load_conf(cli);
	/* what needs no request first: the template, then the node */
	struct tmpl *t = NULL;
	if (rc == 0 && tmpl_load((const char *const *)cli->conf.paths.templates, tname, &t, &err) < 0) {
		cli_error("template", "up", "%s", err ? err : "cannot load the template");
		free(err);
		rc = EXIT_USAGE;
	}
	if (rc) {
		tmpl_free(t);
		tmpl_kvlist_free(&sets);
		tmpl_kvlist_free(&vars);
		return rc;
	}
	/* the request the options make, checked as a whole; ${pubkey}: the
	 * key of whoever runs the job (pvagentd's, or ours: cli_run_here),
	 * which checks it; a stand-in checks the rest of the template here */
	struct up_request req = {
		.names = (const char *const *)a->argv,
		.n_names = (size_t)a->argc,
		.tmpl = t,
		.node = node ? node : cli->conf.pve.node,
		.storage = json_str(p, "storage"),
		.vmid = json_int0(p, "vmid"),
		.sets = &sets,
		.vars = &vars,
		.no_start = json_flag(p, "no_start"),
		.full = json_flag(p, "full"),
		.retemplate = json_flag(p, "retemplate"),
		.pool = json_str(p, "pool"),
		.dry_run = json_flag(p, "dry_run"),
		.no_inject = json_flag(p, "no_inject"),
		.no_wait_ssh = json_flag(p, "no_wait_ssh"),
		.pubkey = UP_PUBKEY_STANDIN,
	};
	struct pve_error e = {0};
	/* the input first, then what needs a request: an unknown node is
	 * said before a job is stored */
	if (up_request_check(&req, &cli->conf, &e) < 0)
		rc = cli_fail_pve(cli, "up", &e);
	else
		rc = up_check_cluster(cli, node, t, &sets);
	for (size_t i = 0; rc == 0 && i < req.n_names; i++)
		rc = cli_job_add(cli, req.names[i], up_job_params(a, &req, req.names[i]));
	cli->jobs->parallel = (unsigned)parallel;
	pve_error_clear(&e);
	tmpl_free(t);
	tmpl_kvlist_free(&sets);
	tmpl_kvlist_free(&vars);
	return rc;
}

/* Has guest arg an unfinished down job (its rerun completes it, the
 * guest gone or not)? */
static bool down_open(struct store *st, const char *arg)
{
	struct store_job sj;
	char *err = NULL;
	int r = st ? store_job_find_open(st, "down", arg, &sj, &err) : 0;
	if (r == 1)
		store_job_free(&sj);
	free(err);
	return r == 1;
}

/* What down finds before any job: each guest looked up, absent[i] set for
 * one that does not exist and has no unfinished down job (it gets no job:
 * not found, nothing stored). With ask, on a terminal each guest with its
 * disks and the question (without one: refused, --yes not given; no
 * question when none of them exists). 0 to go on, or an exit code
 * (said). */
static int down_look(struct cli *cli, char **names, size_t n, bool purge, bool ask,
		     bool *absent)
{
	int rc = 0;
	if (ask) {
		char *what = strprintf("%s and %s disks", n == 1 ? names[0] : "these guests",
				       n == 1 ? "its" : "their");
		rc = what ? cli_confirm_needed("down", what) : 1;
		free(what);
	}
	if (rc || (rc = cli_connect_pve(cli)))
		return rc;
	struct store *st = cli_store(cli);
	if (ask)
		fprintf(stderr, "pvagent down shuts down and deletes%s:\n",
			purge ? ", and removes from backup jobs, replication and HA" : "");
	size_t exist = 0;
	for (size_t i = 0; i < n; i++) {
		char *line = NULL;
		int r;
		if (ask) {
			r = cli_guest_deletion(cli, names[i], &line);
			fprintf(stderr, "  %s\n", line ? line : names[i]);
			free(line);
		} else {
			struct guest_ref g = {0};
			struct pve_error e = {0};
			r = guest_find(cli->pve, names[i], &g, &e);
			guest_ref_clear(&g);
			pve_error_clear(&e); /* said by its job */
		}
		absent[i] = r == 0 && !down_open(st, names[i]);
		exist += r != 0;
	}
	if (!ask || !exist)
		return 0;
	return cli_confirm("down", exist == 1 ? "Delete it and its disks?"
					      : "Delete them and their disks?");
}

/* Guests none of which exists, as down says them: each "absent", not
 * found (exit 2). */
static int not_found(struct cli *cli, char **names, size_t n)
{
	struct up_result *res = calloc(n, sizeof *res);
	if (!res) {
		fprintf(stderr, "pvagent down: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		res[i].name = strdup(names[i]);
		res[i].status = UP_ABSENT;
		guest_not_found(names[i], &res[i].error);
		res[i].outcome = pve_error_outcome(&res[i].error);
	}
	int rc = cli_exit_code(up_results_outcome(res, n));
	print_results(cli, "down", res, n, rc);
	up_results_free(res, n);
	return rc;
}

/* down NAME|VMID...: each its own job, one after the other; the exit code
 * the worst outcome. */
static int cmd_down(struct cli *cli, const struct cmd_args *a)
{
	bool purge = json_flag(a->params, "purge"), dry = json_flag(a->params, "dry_run");
	bool yes = false;
	for (size_t i = 0; i < a->n; i++)
		yes = yes || a->v[i].opt == 'y';
	int rc = cli_load_conf(cli);
	if (rc)
		return rc;
	size_t n = (size_t)a->argc;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (strcasecmp(a->argv[i], a->argv[j]) == 0)
				return cli_usage_error("down", "guest given twice", a->argv[i]);
	const char *why;
	for (size_t i = 0; i < n; i++)
		if (!guest_arg_is_vmid(a->argv[i], NULL) && !guest_name_valid(a->argv[i], &why))
			return cli_error("usage", "down", "guest name '%s': %s", a->argv[i], why);
	bool *absent = calloc(n, sizeof *absent);
	if (!absent) {
		fprintf(stderr, "pvagent down: out of memory\n");
		return 1;
	}
	/* asked here, in the client, before anything goes to pvagentd */
	if (!dry && (rc = down_look(cli, a->argv, n, purge, !yes, absent))) {
		free(absent);
		return rc;
	}
	size_t n_absent = 0;
	for (size_t i = 0; i < n; i++)
		n_absent += absent[i];
	free(absent);
	if (n_absent == n) /* said here: no job */
		return not_found(cli, a->argv, n);
	/* one job per guest, one after the other */
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = cli_job_add(cli, a->argv[i], cmd_args_params(a));
	return rc;
}

/* the options of up and down that set no param */
static const struct option up_opts[] = {{"parallel", required_argument, NULL, 'p'}, {0}};
static const struct option down_opts[] = {{"yes", no_argument, NULL, 'y'}, {0}};

const struct cmd_entry cmd_up_entry = {
	"up",
	"NAME... -t TEMPLATE [--node N] [--vmid ID] [--storage S] [--set K=V]... [--var K=V]... "
	"[--parallel K] [--no-start] [--full] [--no-inject] [--no-wait-ssh] [--retemplate] "
	"[--pool NAME] [--dry-run]",
	"provision guests, or converge existing ones; then inject the template's guest files",
	"", up_opts, NULL, 1, -1, "guest name", cmd_up,
	"pvagent up web1 -t ubuntu-24.04\npvagent up w1 w2 w3 -t freebsd-14 --set cores=4 --parallel 2\n"
	"pvagent up web1 -t ubuntu-24.04 --set size=64G --dry-run\n"
	"pvagent up db1 db2 -t debian-13 --pool lan",
	.wf = &wf_up,
	.render = cli_up_result,
	.flags = CMD_JOBS | CMD_GUESTS | CMD_OWN_CLIENT,
};
const struct cmd_entry cmd_down_entry = {
	"down", "NAME|VMID... [--purge] [--dry-run] [--yes]",
	"shut down and delete guests (on a terminal it asks first; --yes for scripts)", "y",
	down_opts, NULL, 1, -1, "guest name or VMID", cmd_down,
	"pvagent down web1\npvagent down web1 --purge --yes\npvagent down 190 web2.example.org\n"
	"pvagent down web1 --dry-run",
	.wf = &wf_down,
	.render = cli_down_result,
	.flags = CMD_JOBS | CMD_GUESTS | CMD_OWN_CLIENT,
};
