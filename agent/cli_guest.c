/* cli_guest.c - the guest-side commands of pvagent: inject, virtio and
 * bench, and what they share: guest_target_open() finds the guest, loads
 * and expands its template, finds its address and builds the SSH options.
 * Printing follows pvagent.c (text lines, or JSON lines with --json). */
#include "bench.h"
#include "cli.h"
#include "conf.h"
#include "convert.h"
#include "guest.h"
#include "inject.h"
#include "wf_bench.h"
#include "wf_inject.h"
#include "log.h"
#include "output.h"
#include "pvecfg.h"
#include "target.h"
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

/* The guest a command works on (target.h), or an exit code after saying
 * why. */
static int open_target(struct cli *cli, const char *cmd, const struct target_req *req,
		       struct guest_target *gt)
{
	memset(gt, 0, sizeof *gt);
	int rc = cli_connect_pve(cli);
	if (rc)
		return rc;
	struct pve_error e = {0};
	if (guest_target_open(cli->pve, &cli->conf, req, gt, &e) < 0)
		return cli_fail_pve(cli, cmd, &e);
	return 0;
}

/* --var K=V into vars; 0 or EXIT_USAGE (said). */
static int parse_var(const char *cmd, const char *arg, struct tmpl_kvlist *vars)
{
	char *err = NULL;
	if (tmpl_var_arg(vars, arg, &err) == 0)
		return 0;
	fprintf(stderr, "pvagent %s: --var %s: %s\n", cmd, arg, err ? err : "expected K=V");
	free(err);
	return EXIT_USAGE;
}

/* ---- inject ----------------------------------------------------------------- */

static const struct option inject_opts[] = {
	{"dry-run", no_argument, NULL, 'd'},
	{"template", required_argument, NULL, 't'},
	{"var", required_argument, NULL, 'V'},
	{"address", required_argument, NULL, 'a'},
	{0},
};

static int cmd_inject(struct cli *cli, const struct cmd_args *a)
{
	bool dry_run = false;
	const char *tname_opt = NULL, *address = NULL;
	struct tmpl_kvlist vars = {0};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < a->n; i++) {
		const char *arg = a->v[i].val;
		switch (a->v[i].opt) {
		case 'd': dry_run = true; break;
		case 't': tname_opt = arg; break;
		case 'a': address = arg; break;
		case 'V': rc = parse_var(a->cmd, arg, &vars); break;
		default: rc = EXIT_USAGE; break;
		}
	}
	if (rc) {
		tmpl_kvlist_free(&vars);
		return rc;
	}
	const char *name = a->argv[0];
	struct target_req treq = {
		.name = name,
		.tmpl_name = tname_opt,
		.address = address,
		.vars = &vars,
	};
	struct guest_target gt;
	struct inject_result res = {0};
	rc = open_target(cli, a->cmd, &treq, &gt);
	if (rc)
		goto out;
	struct inject_request req = {
		.name = name,
		.inst = &gt.inst,
		.expect_os = gt.tmpl->os,
		.ssh = &gt.ssh,
		.dry_run = dry_run,
	};
	struct event_print ep = {.cli = cli, .tty = !cli->json && cli_stdout_tty(),
				 .file_diffs = true, .dry_run = dry_run};
	enum job_outcome out = inject_job_run(cli_store(cli), &cli_stop, &req,
					      (const char *const *)a->cmdline, on_job_event, &ep,
					      &res);
	end_progress_line(&ep);
	rc = cli_exit_code(out);
	if (cli->json) {
		json_object *o = inject_result_json(&res);
		json_object_object_add(o, "result", json_object_new_string(rc ? "error" : "ok"));
		json_object_object_add(o, "exit", json_object_new_int(rc));
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

static int parse_size_mib(const char *cmd, const char *arg, unsigned *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || v == 0 || v > BENCH_MAX_SIZE_MIB)
		return cli_usage_error(cmd, "--size: expected MiB from 1 to 1048576", arg);
	*out = (unsigned)v;
	return 0;
}

static const struct option bench_opts[] = {
	{"size", required_argument, NULL, 's'},
	{"address", required_argument, NULL, 'a'},
	{"template", required_argument, NULL, 't'},
	{"var", required_argument, NULL, 'V'},
	{0},
};

static int cmd_bench(struct cli *cli, const struct cmd_args *a)
{
	const char *address = NULL, *tname = NULL;
	struct tmpl_kvlist vars = {0};
	unsigned size = 0;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < a->n; i++) {
		const char *arg = a->v[i].val;
		switch (a->v[i].opt) {
		case 's': rc = parse_size_mib("bench", arg, &size); break;
		case 'a': address = arg; break;
		case 't': tname = arg; break;
		case 'V': rc = parse_var(a->cmd, arg, &vars); break;
		default: rc = EXIT_USAGE; break;
		}
	}
	if (rc) {
		tmpl_kvlist_free(&vars);
		return rc;
	}
	const char *name = a->argv[0];
	struct target_req treq = {.name = name, .tmpl_name = tname, .address = address,
				  .vars = &vars, .tmpl_optional = true};
	struct guest_target gt;
	struct bench_result last = {0};
	struct bench_job_result res = {0};
	char *db = NULL;
	rc = open_target(cli, a->cmd, &treq, &gt);
	if (rc)
		goto out;
	db = bench_db_path(cli->conf.paths.state);
	char *lerr = NULL;
	int have_last = db ? bench_last(db, name, gt.ref.vmid, &last, &lerr) : 0;
	if (have_last < 0) {
		log_warn("%s: cannot read earlier results: %s", name, lerr ? lerr : "error");
		have_last = 0;
	}
	free(lerr);
	struct event_print ep = {.cli = cli, .tty = !cli->json && cli_stdout_tty()};
	struct bench_job_request q = {
		.name = name,
		.vmid = gt.ref.vmid,
		.ssh = &gt.ssh,
		.config = gt.config,
		.size_mib = size,
		.db = db,
		.on_event = on_job_event,
		.event_ctx = &ep,
	};
	int brc = bench_job_run(cli_store(cli), &cli_stop, &q, (const char *const *)a->cmdline,
				&res);
	end_progress_line(&ep);
	if (brc < 0) {
		fprintf(stderr, "pvagent bench: %s: %s\n", name, res.error ? res.error : "failed");
		rc = cli_exit_code(res.outcome);
		goto out;
	}
	if (cli->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "command", json_object_new_string("bench"));
		json_object_object_add(o, "result", json_object_new_string("ok"));
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "bench", bench_result_json(&res.now));
		if (have_last)
			json_object_object_add(o, "compare", bench_compare_json(&last, &res.now));
		out_json_line(stdout, o);
		json_object_put(o);
	} else {
		bench_print(&res.now, stdout);
		if (have_last) {
			printf("\ncompared with the last run:\n");
			bench_compare_table(&last, &res.now, stdout);
		}
	}
out:
	bench_result_free(&last);
	bench_job_result_free(&res);
	free(db);
	guest_target_free(&gt);
	tmpl_kvlist_free(&vars);
	return rc;
}

static const struct option virtio_opts[] = {
	{"bench", no_argument, NULL, 'b'},
	{"dry-run", no_argument, NULL, 'd'},
	{"disk-bus", required_argument, NULL, 'B'},
	{"size", required_argument, NULL, 's'},
	{"address", required_argument, NULL, 'a'},
	{"template", required_argument, NULL, 't'},
	{"timeout", required_argument, NULL, 'T'},
	{"var", required_argument, NULL, 'V'},
	{0},
};

static int cmd_virtio(struct cli *cli, const struct cmd_args *a)
{
	const char *address = NULL, *tname = NULL;
	struct tmpl_kvlist vars = {0};
	bool bench = false, dry = false;
	enum convert_bus cbus = CONVERT_BUS_AUTO;
	unsigned size = 0;
	double timeout = 0;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < a->n; i++) {
		const char *arg = a->v[i].val;
		switch (a->v[i].opt) {
		case 'b': bench = true; break;
		case 'd': dry = true; break;
		case 'B':
			if (convert_bus_parse(arg, &cbus) < 0)
				rc = cli_usage_error("virtio", "--disk-bus: virtio-blk or virtio-scsi", arg);
			break;
		case 's': rc = parse_size_mib("virtio", arg, &size); break;
		case 'a': address = arg; break;
		case 't': tname = arg; break;
		case 'T': {
			char *end = NULL;
			timeout = strtod(arg, &end);
			if (end == arg || *end || timeout < 1 || timeout > 86400)
				rc = cli_usage_error("virtio", "--timeout: seconds from 1 to 86400", arg);
			break;
		}
		case 'V': rc = parse_var(a->cmd, arg, &vars); break;
		default: rc = EXIT_USAGE; break;
		}
	}
	if (rc) {
		tmpl_kvlist_free(&vars);
		return rc;
	}
	const char *name = a->argv[0];
	struct target_req treq = {.name = name, .tmpl_name = tname, .address = address,
				  .vars = &vars, .tmpl_optional = true};
	struct guest_target gt;
	struct convert_result res = {0};
	char *db = NULL;
	rc = open_target(cli, a->cmd, &treq, &gt);
	if (rc)
		goto out;
	db = bench_db_path(cli->conf.paths.state);
	if (!db) {
		fprintf(stderr, "pvagent virtio: out of memory\n");
		rc = 1;
		goto out;
	}
	struct event_print ep = {.cli = cli, .tty = !cli->json && cli_stdout_tty(),
				 .file_diffs = dry, .dry_run = dry};
	struct guest_wait w = {0};
	struct convert_request q = {
		.pve = cli->pve,
		.guest = &gt.ref,
		.ssh = &gt.ssh,
		.bus = cbus,
		.dry_run = dry,
		.store = dry ? NULL : cli_store(cli),
		.stop = &cli_stop,
		.cli_args = (const char *const *)a->cmdline,
		.wait = &w,
		.verify_timeout_s = timeout,
		.bench = bench && !dry,
		.bench_size_mib = size,
		.bench_db = db,
		.on_event = on_job_event,
		.event_ctx = &ep,
	};
	if (!cli->json)
		printf("%s: %s\n", name, dry ? "virtio conversion plan (nothing is changed)"
					    : "converting to virtio");
	convert_run(&q, &res);
	end_progress_line(&ep);
	rc = cli_exit_code(res.outcome);
	if (cli->json) {
		json_object *o = convert_result_json(&res);
		json_object_object_add(o, "command", json_object_new_string("virtio"));
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "result", json_object_new_string(rc ? "error" : "ok"));
		json_object_object_add(o, "exit", json_object_new_int(rc));
		out_json_line(stdout, o);
		json_object_put(o);
	} else {
		if (res.have_bench_before && res.have_bench_after) {
			printf("\n");
			bench_compare_table(&res.bench_before, &res.bench_after, stdout);
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
	convert_result_free(&res);
	free(db);
	guest_target_free(&gt);
	tmpl_kvlist_free(&vars);
	return rc;
}

/* ---- the entries ---------------------------------------------------------------- */

const struct cmd_entry cmd_inject_entry = {
	"inject", "NAME [--dry-run] [-t TEMPLATE] [--var K=V]... [--address A]",
	"apply the template's guest files and hostname over SSH (--dry-run: show diffs)", "t:",
	inject_opts, "V", 1, 1, "guest name", cmd_inject,
	"pvagent inject web1 --dry-run\npvagent inject web1 -t ubuntu-24.04 --address 10.0.0.5",
};
const struct cmd_entry cmd_virtio_entry = {
	"virtio",
	"NAME [--dry-run] [--bench [--size MiB]] [--disk-bus virtio-blk|virtio-scsi] "
	"[--address A] [-t TEMPLATE] [--var K=V]... [--timeout S]",
	"convert IDE disks and e1000 NICs to virtio, rolling back on failure", "t:", virtio_opts,
	"V", 1, 1, "guest name", cmd_virtio,
	"pvagent virtio old1 --dry-run\npvagent virtio old1 --bench --disk-bus virtio-scsi",
};
const struct cmd_entry cmd_bench_entry = {
	"bench", "NAME [--size MiB] [--address A] [-t TEMPLATE] [--var K=V]...",
	"in-guest disk benchmark: sequential write/read, diskinfo, random reads; stored and "
	"compared",
	"t:", bench_opts, "V", 1, 1, "guest name", cmd_bench,
	"pvagent bench web1\npvagent bench web1 --size 512",
};
