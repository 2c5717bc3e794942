/* cli_migrate.c - the migration commands of pvagent: migrate (one guest
 * as a wf_migrate job, its figures printed), with drain, undrain and
 * windows beside it. Printing follows pvagent.c (text lines, or JSON
 * lines with --json). */
#include "cli.h"
#include "json.h"
#include "log.h"
#include "migrate_facts.h"
#include "migrate_plan.h"
#include "output.h"
#include "util.h"
#include "wf_drain.h"
#include "wf_migrate.h"
#include "wf_params.h"
#include "window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double var_num(json_object *v, const char *key)
{
	long long x = -1;
	return json_int(v, key, &x) ? (double)x : -1;
}

/* One migration's line and JSON object from its vars. */
static json_object *migration_json(struct job *j)
{
	json_object *v = job_vars(j), *o = json_object_new_object();
	if (!o)
		return NULL;
	enum job_outcome out = job_outcome(j);
	json_object_object_add(o, "name", json_object_new_string(job_subject(j)));
	json_object_object_add(o, "vmid", job_vmid(j) ? json_object_new_int(job_vmid(j)) : NULL);
	json_object_object_add(o, "node", job_node(j) ? json_object_new_string(job_node(j)) : NULL);
	json_object_object_add(o, "outcome", json_object_new_string(job_outcome_name(out)));
	static const char *const keys[] = {"method", "type", "targetstorage"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		if (json_str(v, keys[i]))
			json_object_object_add(o, keys[i], json_object_new_string(json_str(v, keys[i])));
	static const char *const nums[] = {"duration_s", "elapsed_s", "downtime_ms", "probe_gap_ms",
					   "speed", "transferred", "estimate_s", "memory",
					   "disk_bytes"};
	for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
		double x = var_num(v, nums[i]);
		if (x >= 0)
			json_object_object_add(o, nums[i], json_object_new_int64((long long)x));
	}
	long long via = 0;
	json_object_object_add(o, "via_ha", json_object_new_boolean(json_int(v, "via_ha", &via) && via));
	if (job_id(j))
		json_object_object_add(o, "job", json_object_new_int64(job_id(j)));
	if (job_left(j))
		json_object_object_add(o, "left", json_object_new_string(job_left(j)));
	return o;
}

static void print_migration(struct cli *cli, struct job *j, const char *target, bool dry_run,
			    int code)
{
	json_object *o = migration_json(j);
	json_object *v = job_vars(j);
	if (cli->json) {
		json_object *r = json_object_new_object();
		json_object_object_add(r, "command", json_object_new_string("migrate"));
		cli_job_result_members(r, j, code);
		json_object_object_add(r, "dry_run", json_object_new_boolean(dry_run));
		json_object_object_add(r, "migration", o);
		out_json_line(stdout, r);
		json_object_put(r);
		return;
	}
	json_object_put(o);
	const char *name = job_subject(j), *method = json_str(v, "method");
	const struct pve_error *e = job_error(j);
	if (job_outcome(j) == JOB_OUT_INTERRUPTED) {
		/* a stop, said as what it was: a cancel is not resumed */
		if (cli_cancelled)
			log_error("%s: cancelled by 'pvagent cancel'", name);
		else
			log_error("%s: interrupted; the job is kept: 'pvagent resume %lld' (or the "
				  "same command again) finishes it", name, job_id(j));
		return;
	}
	if (e->kind != PVE_OK) {
		char *m = pve_error_format(e);
		log_error("%s: %s", name, m ? m : "failed");
		free(m);
		if (job_left(j))
			log_error("%s: needs attention: %s; run the same command again, or 'pvagent "
				  "resume %lld'", name, job_left(j), job_id(j));
		return;
	}
	if (method && strcmp(method, "none") == 0) {
		printf("%s: already on %s\n", name, target);
		return;
	}
	char tb[32];
	if (dry_run) {
		printf("%s: would migrate to %s (%s%s), about %s\n", name, target,
		       method ? method : "?", var_num(v, "via_ha") > 0 ? ", through HA" : "",
		       str_duration(tb, sizeof tb, var_num(v, "estimate_s")));
		return;
	}
	double speed = var_num(v, "speed"), bytes = var_num(v, "transferred");
	double dt = var_num(v, "downtime_ms"), gap = var_num(v, "probe_gap_ms");
	double dur = var_num(v, "duration_s");
	printf("%s: migrated to %s (%s) in %s", name, target, method ? method : "?",
	       str_duration(tb, sizeof tb, dur >= 0 ? dur : var_num(v, "elapsed_s")));
	if (bytes >= 0)
		printf(", %.1f MiB", bytes / 1048576.0);
	if (speed >= 0)
		printf(" at %.1f MiB/s", speed / 1048576.0);
	char db[32];
	if (dt >= 0)
		printf(", downtime %s (PVE)", str_duration(db, sizeof db, dt / 1000));
	long long probed = 0;
	if (gap >= 0)
		printf(", clients saw %s", str_duration(db, sizeof db, gap / 1000));
	else if (json_int(v, "probed", &probed) && probed)
		printf(", clients saw no gap");
	printf("\n");
}

/* What migrate read before its job (the node list, the guest found),
 * which its job takes (wf_migrate_attach) when it runs here. */
struct migrate_read {
	struct mig_cluster *mc;
	struct guest_ref g;
};

static void attach_migration(struct job *j, void *ctx)
{
	struct migrate_read *mr = ctx;
	wf_migrate_attach(j, mr->mc, &mr->g);
}

static void migrate_read_free(void *ctx)
{
	struct migrate_read *mr = ctx;
	guest_ref_clear(&mr->g);
	mig_cluster_free(mr->mc);
	free(mr);
}

static int cmd_migrate(struct cli *cli, const struct cmd_args *a)
{
	int rc = 0;
	/* submitted or not: an unknown node or guest is said before a job is
	 * stored (the node check connects first); what is read here is the
	 * job's too */
	struct migrate_read *mr = calloc(1, sizeof *mr);
	json_object *nodes = NULL;
	if (!mr || !(mr->mc = mig_cluster_new())) {
		fprintf(stderr, "pvagent migrate: out of memory\n");
		rc = 1;
	}
	if (rc == 0 && (rc = cli_check_node_keep(cli, "migrate", a->argv[1], NULL, &nodes)) == 0)
		mig_cluster_keep_nodes(mr->mc, nodes);
	if (rc == 0) {
		/* a guest that does not exist: said before any job is stored */
		struct pve_error e = {0};
		int f = guest_find_listed(cli->pve, a->argv[0], &mr->g, &e);
		cli->subject = a->argv[0];
		if (f == 0)
			guest_not_found(a->argv[0], &e);
		if (f <= 0)
			rc = cli_fail_pve(cli, "migrate", &e);
	}
	json_object *params = rc == 0 ? cmd_args_params(a) : NULL;
	if (params && job_param_set_str(&wf_migrate_params_decl, params, "target", a->argv[1]) < 0) {
		json_object_put(params);
		params = NULL;
	}
	if (rc == 0)
		rc = cli_job_add(cli, a->argv[0], params);
	if (rc == 0)
		cli_jobs_attach(cli, attach_migration, migrate_read_free, mr);
	else if (mr)
		migrate_read_free(mr);
	return rc;
}

const struct cmd_entry cmd_migrate_entry = {
	"migrate",
	"NAME NODE [--storage S | --storage-map SRC:DST,...] [--bwlimit MiB/s] "
	"[--max-downtime MS] [--dry-run] [--force-ha]",
	"move a guest to NODE: live (qemu), restart (lxc) or online (OpenVZ); prints the "
	"downtime PVE measured and the one clients saw",
	"", NULL, NULL, 2, 2, "guest name and a node", cmd_migrate,
	"pvagent migrate web1 pve2\npvagent migrate web1 pve2 --storage-map local-lvm:fast --dry-run",
	.wf = &wf_migrate,
	.render = cli_migration_result,
	.flags = CMD_JOBS | CMD_MIGRATES,
};

/* ---- drain and undrain ------------------------------------------------------------- */

static void fmt_num(char *buf, size_t n, json_object *m, const char *key, const char *unit,
		    double div)
{
	json_object *v = NULL;
	buf[0] = '\0';
	if (json_object_object_get_ex(m, key, &v) && v && json_object_get_double(v) >= 0)
		snprintf(buf, n, "%.0f%s", json_object_get_double(v) / div, unit);
}

static void print_drain(struct cli *cli, const char *cmd, struct job *j, bool dry_run, int code)
{
	json_object *v = job_vars(j), *moves = NULL, *free_after = NULL;
	json_object_object_get_ex(v, "moves", &moves);
	json_object_object_get_ex(v, "free_after", &free_after);
	if (cli->json) {
		json_object *r = json_object_new_object(), *mv = NULL, *fa = NULL;
		json_object_deep_copy(moves, &mv, NULL);
		json_object_deep_copy(free_after, &fa, NULL);
		json_object_object_add(r, "command", json_object_new_string(cmd));
		cli_job_result_members(r, j, code); /* name: the node drained */
		json_object_object_add(r, "node", json_object_new_string(job_subject(j)));
		json_object_object_add(r, "dry_run", json_object_new_boolean(dry_run));
		json_object_object_add(r, "moves", mv);
		json_object_object_add(r, "free_after", fa);
		if (job_id(j))
			json_object_object_add(r, "job", json_object_new_int64(job_id(j)));
		out_json_line(stdout, r);
		json_object_put(r);
		return;
	}
	const char *hdr[] = {"GUEST", "VMID", "MEMORY", "METHOD", "TARGET",
			     dry_run ? "ESTIMATE" : "TIME", dry_run ? "PLAN" : "RESULT",
			     "DOWNTIME", "WHY"};
	bool none = !moves || json_object_array_length(moves) == 0;
	if (none && code == 0)
		printf("%s %s: nothing to move\n", cmd, job_subject(j));
	struct table *t = none ? NULL : table_new(9, hdr);
	for (size_t i = 0; t && moves && i < json_object_array_length(moves); i++) {
		json_object *m = json_object_array_get_idx(moves, i);
		char vmid[16], mem[32], est[32], dt[48];
		long long id = 0;
		json_int(m, "vmid", &id);
		snprintf(vmid, sizeof vmid, "%lld", id);
		fmt_num(mem, sizeof mem, m, "memory", " MiB", 1048576.0);
		fmt_num(est, sizeof est, m, dry_run ? "estimate_s" : "seconds", " s", 1);
		json_object *dto = NULL;
		dt[0] = 0;
		if (json_object_object_get_ex(m, "downtime_ms", &dto) && dto)
			str_duration(dt, sizeof dt, json_object_get_double(dto) / 1000);
		long long gap = -1;
		if (json_int(m, "probe_gap_ms", &gap) && gap >= 0) {
			size_t l = strlen(dt);
			char gb[32];
			snprintf(dt + l, sizeof dt - l, "%s(seen %s)", l ? " " : "",
				 str_duration(gb, sizeof gb, (double)gap / 1000));
		}
		/* a partner HA moves along with another guest (PVE 9) says with which */
		char *with = !json_str(m, "why") && json_str(m, "with")
				     ? strprintf("HA moves it with %s", json_str(m, "with")) : NULL;
		const char *row[] = {json_str(m, "name"), vmid, mem, json_str(m, "method"),
				     json_str(m, "target"), est, json_str(m, "status"), dt,
				     with ? with : json_str(m, "why")};
		table_add(t, row);
		free(with);
	}
	if (t)
		table_print(t, stdout);
	table_free(t);
	if (free_after && json_object_object_length(free_after)) {
		printf("free memory after the drain:");
		json_object_object_foreach(free_after, node, bytes)
			printf(" %s %.1f GiB", node, json_object_get_double(bytes) / 1073741824.0);
		printf("\n");
	}
	const struct pve_error *e = job_error(j);
	if (e->kind != PVE_OK) {
		char *m = pve_error_format(e);
		log_error("%s %s: %s", cmd, job_subject(j), m ? m : "failed");
		free(m);
	}
	if (job_left(j))
		log_error("%s %s: needs attention: %s", cmd, job_subject(j), job_left(j));
}

int cli_migration_result(struct cli *cli, struct job *const *jobs, size_t n, int code)
{
	struct job *j = jobs[0];
	json_object *p = job_params(j);
	long long x = 0;
	bool dry = json_int(p, "dry_run", &x) && x;
	if (job_wf(j) == &wf_migrate)
		print_migration(cli, j, json_str(p, "target"), dry, code);
	else
		print_drain(cli, job_wf(j)->name, j, dry, code);
	return code;
}

/* --window NAME: the drain (or undrain) the window runs on its node:
 * its targets and workers, partial, and its end as the deadline. The
 * daemon runs these when a window opens and closes; by hand, a drain
 * needs the window open. 0, or EXIT_USAGE (said). */
static int window_params(struct cli *cli, const char *cmd, const char *name, const char *node,
			 bool undrain, json_object **params)
{
	if (cli->conf.windows_error)
		return cli_error("config", cmd, "%s", cli->conf.windows_error);
	const struct conf_window *w = NULL;
	for (size_t i = 0; i < cli->conf.n_windows && !w; i++)
		if (strcmp(cli->conf.windows[i].name, name) == 0)
			w = &cli->conf.windows[i];
	if (!w)
		return cli_usage_error(cmd, "--window: no [window] section of that name", name);
	if (strcmp(w->node, node) != 0) {
		fprintf(stderr, "pvagent %s: window %s is for node %s, not %s\n", cmd, name,
			w->node, node);
		return EXIT_USAGE;
	}
	time_t now = time(NULL), start = 0, end = 0;
	if (!undrain && (window_next(w, now, &start, &end) < 0 || start > now)) {
		fprintf(stderr, "pvagent %s: window %s is not open now\n", cmd, name);
		return EXIT_USAGE;
	}
	*params = undrain ? window_undrain_params(&cli->conf, w)
			  : window_drain_params(&cli->conf, w, end);
	return *params ? 0 : 1;
}

static int run_drain(struct cli *cli, const struct cmd_args *a, bool undrain)
{
	const char *cmd = undrain ? "undrain" : "drain";
	const char *window = NULL;
	int rc = 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].opt == 'w')
			window = a->v[i].val;
	if (window && json_object_object_length(a->params)) {
		fprintf(stderr, "pvagent %s: --window takes the window's own settings\n", cmd);
		return EXIT_USAGE;
	}
	json_object *to = NULL;
	json_object_object_get_ex(a->params, "to", &to);
	/* an unknown node is named with the nodes there are (submitted too) */
	rc = cli_check_node(cli, cmd, a->argv[0], NULL);
	for (size_t i = 0; rc == 0 && to && i < json_object_array_length(to); i++)
		rc = cli_check_node(cli, cmd, json_object_get_string(json_object_array_get_idx(to, i)),
				    "--to");
	if (rc)
		return rc;
	json_object *params = NULL;
	if (window)
		rc = window_params(cli, cmd, window, a->argv[0], undrain, &params);
	else if (!(params = cmd_args_params(a)) ||
		 job_param_set_int(&wf_drain_params_decl, params, "per_target",
				   cli->conf.migrate.per_target) < 0)
		rc = 1;
	if (rc) {
		json_object_put(params);
		return rc;
	}
	return cli_job_add(cli, a->argv[0], params);
}
static int cmd_drain(struct cli *cli, const struct cmd_args *a)
{
	return run_drain(cli, a, false);
}

static int cmd_undrain(struct cli *cli, const struct cmd_args *a)
{
	return run_drain(cli, a, true);
}

/* the options of drain and undrain that set no param */
static const struct option drain_opts[] = {
	{"window", required_argument, NULL, 'w'},
	{0},
};

const struct cmd_entry cmd_drain_entry = {
	"drain", "NODE [--to N1,N2,...] [--max-workers K] [--partial] [--dry-run] | NODE --window W",
	"move every guest off NODE (templates and pvagent-pin guests stay), K at a time; "
	"each moved guest is tagged pvagent-home-NODE",
	"", drain_opts, NULL, 1, 1, "node", cmd_drain,
	"pvagent drain pve1 --dry-run\npvagent drain pve1 --to pve2,pve3 --max-workers 2",
	.wf = &wf_drain,
	.render = cli_migration_result,
	.flags = CMD_JOBS | CMD_MIGRATES,
};
const struct cmd_entry cmd_undrain_entry = {
	"undrain", "NODE [--max-workers K] [--dry-run] | NODE --window W",
	"bring every guest tagged pvagent-home-NODE back to NODE and remove the tag",
	"", drain_opts, NULL, 1, 1, "node", cmd_undrain,
	"pvagent undrain pve1\npvagent undrain pve1 --window nightly",
	.wf = &wf_undrain,
	.render = cli_migration_result,
	.flags = CMD_JOBS | CMD_MIGRATES,
};

/* ---- windows ------------------------------------------------------------------------ */

static void fmt_time(char *buf, size_t n, time_t t)
{
	struct tm tm;
	if (!localtime_r(&t, &tm) || !strftime(buf, n, "%a %Y-%m-%d %H:%M", &tm))
		snprintf(buf, n, "%lld", (long long)t);
}

static int cmd_windows(struct cli *cli, const struct cmd_args *a)
{
	(void)a;
	int rc = cli_load_conf(cli);
	if (rc)
		return rc;
	const struct conf *c = &cli->conf;
	if (c->windows_error) /* only the commands that use windows stop on it */
		return cli_error("config", "windows", "%s", c->windows_error);
	time_t now = time(NULL);
	json_object *arr = cli->json ? json_object_new_array() : NULL;
	const char *hdr[] = {"WINDOW", "NODE", "SCHEDULE", "DURATION", "TO", "NEXT", "UNTIL", "STATE"};
	struct table *t = cli->json ? NULL : table_new(8, hdr);
	for (size_t i = 0; i < c->n_windows; i++) {
		const struct conf_window *w = &c->windows[i];
		time_t s = 0, e = 0;
		bool has = window_next(w, now, &s, &e) == 0;
		char sched[64], dur[32], from[48] = "", until[48] = "";
		struct sbuf to = {0};
		if (w->schedule)
			snprintf(sched, sizeof sched, "%s", w->schedule);
		else
			snprintf(sched, sizeof sched, "days %02d:%02d", w->start / 60, w->start % 60);
		str_duration(dur, sizeof dur, w->duration);
		for (size_t k = 0; k < w->n_to; k++)
			sbuf_addf(&to, "%s%s", k ? "," : "", w->to[k]);
		if (has) {
			fmt_time(from, sizeof from, s);
			fmt_time(until, sizeof until, e);
		}
		const char *state = !has ? "never" : s <= now ? "open" : "scheduled";
		if (arr) {
			json_object *o = json_object_new_object();
			json_object_object_add(o, "name", json_object_new_string(w->name));
			json_object_object_add(o, "node", json_object_new_string(w->node));
			json_object_object_add(o, "schedule", json_object_new_string(sched));
			json_object_object_add(o, "duration_s", json_object_new_int64(w->duration));
			json_object_object_add(o, "to", json_object_new_string(sbuf_str(&to)));
			json_object_object_add(o, "state", json_object_new_string(state));
			if (has) {
				json_object_object_add(o, "next", json_object_new_int64((long long)s));
				json_object_object_add(o, "until", json_object_new_int64((long long)e));
			}
			json_object_array_add(arr, o);
		} else if (t) {
			const char *row[] = {w->name, w->node, sched, dur,
					     to.len ? sbuf_str(&to) : "any", from, until, state};
			table_add(t, row);
		}
		sbuf_free(&to);
	}
	if (arr) {
		out_json_ok("windows", "windows", arr);
	} else if (t) {
		if (c->n_windows)
			table_print(t, stdout);
		else
			printf("no maintenance windows in %s\n", c->path ? c->path : "the configuration");
	}
	table_free(t);
	return 0;
}

const struct cmd_entry cmd_windows_entry = {
	"windows", "", "maintenance windows ([window] in pvagent.conf) and when they open next",
	NULL, NULL, NULL, 0, 0, NULL, cmd_windows, "pvagent windows",
	.wf = NULL,
	.flags = CMD_READONLY,
};
