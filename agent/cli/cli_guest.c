/* cli_guest.c - the guest-side commands of pvagent: inject, virtio,
 * bench and ssh, and what they share: guest_target_open() finds the guest, loads
 * and expands its template, finds its address and builds the SSH options.
 * Printing follows pvagent.c (text lines, or JSON lines with --json). */
#include "bench.h"
#include "cli.h"
#include "conf.h"
#include "wf_virtio.h"
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
/* The job store, for the address an earlier job reached a guest at
 * (target_req.memory): only when it exists, so that show and ssh neither
 * make one nor warn about one they could not. */
static struct store *address_memory(struct cli *cli)
{
	char *path = store_path(cli->conf.paths.state);
	bool there = path && access(path, F_OK) == 0;
	free(path);
	return there ? cli_store(cli) : NULL;
}

static int open_target(struct cli *cli, const char *cmd, const struct target_req *req,
		       struct guest_target *gt)
{
	memset(gt, 0, sizeof *gt);
	cli->subject = req->name;
	int rc = cli_connect_pve(cli);
	if (rc)
		return rc;
	struct pve_error e = {0};
	if (guest_target_open(cli->pve, &cli->conf, req, gt, &e) < 0)
		return cli_fail_pve(cli, cmd, &e);
	return 0;
}

/* The guest a guest command's job worked on: its name (the job's vars;
 * the subject may be its VMID). */
static const char *cli_job_guest_name(struct job *j)
{
	const char *name = json_str(job_vars(j), "name");
	return name ? name : job_subject(j);
}

/* --var K=V into vars; 0 or EXIT_USAGE (said). */
static int parse_var(const char *cmd, const char *arg, struct tmpl_kvlist *vars)
{
	char *err = NULL;
	if (tmpl_var_arg(vars, arg, &err) == 0)
		return 0;
	cli_error("usage", cmd, "--var %s: %s", arg, err ? err : "expected K=V");
	free(err);
	return EXIT_USAGE;
}

/* ---- inject ----------------------------------------------------------------- */

static int cmd_inject(struct cli *cli, const struct cmd_args *a)
{
	return cli_job_add(cli, a->argv[0], cmd_args_params(a));
}

/* A guest job that failed before its result was made (finding the
 * guest, its template, its address): said as any command's failure, on
 * stderr and as the --json error object. Its exit code. */
static int fail_before_result(struct cli *cli, const char *cmd, struct job *j)
{
	struct pve_error e = {0};
	json_object *eo = pve_error_to_json(job_error(j));
	if (!eo || pve_error_from_json(eo, &e) < 0)
		pve_error_oom(&e);
	json_object_put(eo);
	cli->subject = cli_job_guest_name(j);
	return cli_fail_pve(cli, cmd, &e);
}

int cli_inject_result(struct cli *cli, struct job *const *jobs, size_t n, int code)
{
	struct job *j = jobs[0];
	json_object *v = job_vars(j), *res = NULL;
	const char *name = cli_job_guest_name(j), *summary = json_str(v, "summary");
	if (!json_object_object_get_ex(v, "result", &res) || !res)
		return fail_before_result(cli, "inject", j);
	const char *failed = json_str(res, "failed_step"), *error = json_str(res, "error");
	if (cli->json) {
		json_object *o = NULL;
		json_object_deep_copy(res, &o, NULL);
		if (!o)
			return 1;
		json_object_object_add(o, "command", json_object_new_string("inject"));
		out_result_members(o, name, job_vmid(j), job_node(j), code,
				   code ? job_outcome_name(job_outcome(j)) : NULL, error,
				   code ? failed : NULL);
		out_json_line(stdout, o);
		json_object_put(o);
	} else if (!code) {
		printf("%s: %s\n", name, summary ? summary : "done");
	} else {
		/* once, with where to look next */
		bool at_connect = failed && strcmp(failed, "connect") == 0;
		log_error("%s: inject failed at %s: %s%s%s", name, failed ? failed : "?",
			  error ? error : "error",
			  at_connect ? " (does the guest run sshd? its address: --address; the "
				       "port: [ssh] port)" : "",
			  cli->verbosity > 0 ? "" : "; rerun with -v for the details");
	}
	return code;
}

/* ---- bench and virtio ------------------------------------------------------------ */

static int cmd_bench(struct cli *cli, const struct cmd_args *a)
{
	return cli_job_add(cli, a->argv[0], cmd_args_params(a));
}

int cli_bench_result(struct cli *cli, struct job *const *jobs, size_t n, int code)
{
	struct job *j = jobs[0];
	struct bench_result now = {0}, last = {0};
	bool have_last = false;
	char *err = NULL;
	const char *name = cli_job_guest_name(j);
	int r = code == 0 ? wf_bench_result(j, &now, &last, &have_last, &err) : 0;
	if (r < 0) {
		cli_error("bench", "bench", "%s: %s", name, err ? err : "no figures");
		free(err);
		return 1;
	}
	char *msg = code ? pve_error_format(job_error(j)) : NULL;
	if (code)
		fprintf(stderr, "pvagent bench: %s: %s\n", name, msg ? msg : "failed");
	if (cli->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "command", json_object_new_string("bench"));
		/* the error's real kind and step, as every command's */
		cli_job_result_members(o, j, code);
		json_object_object_add(o, "name", json_object_new_string(name));
		if (r > 0)
			json_object_object_add(o, "bench", bench_result_json(&now));
		if (r > 0 && have_last)
			json_object_object_add(o, "compare", bench_compare_json(&last, &now));
		out_json_line(stdout, o);
		json_object_put(o);
	} else if (r > 0) {
		bench_print(&now, stdout);
		if (have_last) {
			printf("\ncompared with the last run:\n");
			bench_compare_table(&last, &now, stdout);
		}
	}
	free(msg);
	bench_result_free(&now);
	bench_result_free(&last);
	return code;
}

/* A conversion's result (o: wf_virtio_result_json, from the job's vars,
 * params and error) as `virtio` prints it; its exit code. */
static int print_virtio(struct cli *cli, struct job *j, json_object *o)
{
	const char *name = cli_job_guest_name(j);
	enum job_outcome out = job_outcome(j);
	int rc = cli_exit_code(out);
	const char *status = json_str(o, "status"), *error = json_str(o, "error");
	if (cli->json) {
		json_object_object_add(o, "command", json_object_new_string("virtio"));
		out_result_members(o, name, job_vmid(j), job_node(j), rc,
				   rc ? job_outcome_name(out) : NULL, error,
				   rc ? json_str(o, "failed_step") : NULL);
		out_json_line(stdout, o);
		return rc;
	}
	struct bench_result before, after;
	if (wf_virtio_bench(j, &before, &after) == 1) {
		printf("\n");
		bench_compare_table(&before, &after, stdout);
		bench_result_free(&before);
		bench_result_free(&after);
	}
	const char *bus = json_str(o, "bus"), *recovery = json_str(o, "recovery");
	if (strcmp(status, "converted") == 0)
		printf("%s: converted to %s%s\n", name, bus ? bus : "virtio",
		       json_flag(o, "resumed") ? " (resumed an interrupted run)" : "");
	else if (strcmp(status, "already-virtio") == 0)
		printf("%s: nothing to do: already virtio (no IDE, SATA or emulated SCSI disk, no "
		       "emulated NIC); nothing changed\n", name);
	else if (strcmp(status, "dry-run") == 0)
		printf("%s: dry run: nothing changed\n", name);
	else
		fprintf(stderr, "pvagent virtio: %s: %s%s%s\n", name, error ? error : "failed",
			recovery ? "\n" : "", recovery ? recovery : "");
	return rc;
}

static int cmd_virtio(struct cli *cli, const struct cmd_args *a)
{
	/* no bench in a dry run; a guest that does not exist is said before a
	 * job is stored */
	json_object *params = cmd_args_params(a);
	if (params && json_flag(params, "dry_run"))
		json_object_object_del(params, "bench");
	int rc = cli_check_guest(cli, a->cmd, a->argv[0]);
	if (rc) {
		json_object_put(params);
		return rc;
	}
	return cli_job_add(cli, a->argv[0], params);
}

int cli_virtio_result(struct cli *cli, struct job *const *jobs, size_t n, int code)
{
	struct job *j = jobs[0];
	json_object *o = wf_virtio_result_json(j);
	if (!o)
		return code ? fail_before_result(cli, "virtio", j) : code;
	int rc = print_virtio(cli, j, o);
	json_object_put(o);
	return rc;
}

/* ---- show ----------------------------------------------------------------------- */

/* The boot disk's bus and the NIC models (malloc'd, NULL when unknown). */
static void show_hw(const struct guest_target *gt, char **disk, char **nic)
{
	*disk = *nic = NULL;
	if (gt->ref.type != GUEST_QEMU) {
		*disk = strdup(gt->ref.type == GUEST_LXC ? "rootfs" : "simfs");
		*nic = strdup("veth");
		return;
	}
	struct pvecfg_hw hw;
	if (pvecfg_hw_read(gt->config, &hw) == 0) {
		*disk = pvecfg_hw_disk_summary(&hw, json_text(gt->config, "boot"));
		*nic = pvecfg_hw_nic_summary(&hw);
		pvecfg_hw_free(&hw);
	}
}

static json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

/* show NAME|VMID: config, status, disk bus and NIC, address (asked once),
 * template, the last bench run. */
static int cmd_show(struct cli *cli, const struct cmd_args *a)
{
	struct guest_target gt;
	memset(&gt, 0, sizeof gt);
	struct target_req treq = {.name = a->argv[0], .tmpl_optional = true,
				  .address_timeout_s = 0.5};
	cli->subject = treq.name;
	int rc = cli_connect_pve(cli);
	if (rc)
		return rc;
	treq.memory = address_memory(cli); /* the address an earlier job reached it at */
	struct pve_error e = {0};
	if (guest_target_open(cli->pve, &cli->conf, &treq, &gt, &e) < 0) {
		if (!gt.config) {
			guest_target_free(&gt);
			return cli_fail_pve(cli, a->cmd, &e);
		}
		pve_error_clear(&e); /* the address, or SSH settings: shown without */
	}
	char *disk, *nic, *berr = NULL;
	show_hw(&gt, &disk, &nic);
	char *db = bench_db_path(cli->conf.paths.state);
	struct bench_result br = {0};
	int have_bench = db ? bench_last(db, gt.ref.name ? gt.ref.name : a->argv[0], gt.ref.vmid,
					 &br, &berr) : 0;
	if (have_bench < 0)
		log_warn("%s: bench history: %s", a->argv[0], berr ? berr : "cannot read it");
	free(berr);
	if (cli->json) {
		json_object *o = json_object_new_object(), *b = NULL;
		json_object_object_add(o, "command", json_object_new_string("show"));
		out_result_members(o, gt.ref.name, gt.ref.vmid, gt.ref.node, 0, NULL, NULL, NULL);
		json_object_object_add(o, "type", jstr(guest_type_name(gt.ref.type)));
		json_object_object_add(o, "status", jstr(gt.ref.status));
		json_object_object_add(o, "disk_bus", jstr(disk));
		json_object_object_add(o, "nic_model", jstr(nic));
		json_object_object_add(o, "address", jstr(gt.address));
		json_object_object_add(o, "address_from", jstr(gt.address_from));
		json_object_object_add(o, "template", jstr(gt.tmpl_name));
		json_object_object_add(o, "config", json_object_get(gt.config));
		if (have_bench == 1) {
			b = json_object_new_object();
			json_object *f = json_object_new_object();
			json_object_object_add(b, "ts", json_object_new_int64(br.ts));
			json_object_object_add(b, "bus", jstr(br.bus));
			json_object_object_add(b, "nic", jstr(br.nic));
			for (size_t i = 0; i < br.n_figs; i++)
				json_object_object_add(f, br.figs[i].key,
						       json_object_new_double(br.figs[i].value));
			json_object_object_add(b, "figures", f);
		}
		json_object_object_add(o, "bench", b);
		out_json_line(stdout, o);
		json_object_put(o);
	} else {
		printf("name: %s\nvmid: %d\nnode: %s\ntype: %s\nstatus: %s\n",
		       gt.ref.name ? gt.ref.name : "-", gt.ref.vmid, gt.ref.node ? gt.ref.node : "-",
		       guest_type_name(gt.ref.type), gt.ref.status ? gt.ref.status : "-");
		printf("disk bus: %s\nNIC: %s\naddress: %s%s%s%s\ntemplate: %s\n", disk ? disk : "-",
		       nic ? nic : "-", gt.address ? gt.address : "unknown",
		       gt.address_from ? " (as " : "", gt.address_from ? gt.address_from : "",
		       gt.address_from ? " gave it)" : "", gt.tmpl_name ? gt.tmpl_name : "-");
		if (have_bench == 1) {
			/* as bench prints it: its time, and every figure with its unit */
			printf("last bench: ");
			bench_print(&br, stdout);
		} else {
			printf("last bench: none\n");
		}
		printf("config:\n");
		json_object_object_foreach(gt.config, k, v) printf("  %s = %s\n", k,
								    json_object_get_string(v));
	}
	bench_result_free(&br);
	free(db);
	free(disk);
	free(nic);
	guest_target_free(&gt);
	return 0;
}

/* ---- ssh ------------------------------------------------------------------------ */

static const struct option ssh_opts[] = {
	{"address", required_argument, NULL, 'a'},
	{"template", required_argument, NULL, 't'},
	{"var", required_argument, NULL, 'V'},
	{0},
};

/* The system ssh with pvagent's identity, known_hosts and host key policy,
 * the template's user and port and the address found; each word of the
 * command quoted (ssh joins them for the remote shell). Replaces this
 * process: returns only on failure. */
static int cmd_ssh(struct cli *cli, const struct cmd_args *a)
{
	const char *address = NULL, *tname = NULL;
	struct tmpl_kvlist vars = {0};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < a->n; i++) {
		const char *arg = a->v[i].val;
		switch (a->v[i].opt) {
		case 'a': address = arg; break;
		case 't': tname = arg; break;
		case 'V': rc = parse_var(a->cmd, arg, &vars); break;
		default: rc = EXIT_USAGE; break;
		}
	}
	struct guest_target gt;
	memset(&gt, 0, sizeof gt);
	struct target_req treq = {.name = a->argv[0], .tmpl_name = tname, .address = address,
				  .vars = &vars, .tmpl_optional = true, .address_timeout_s = 10};
	if (rc == 0 && !address && (rc = cli_load_conf(cli)) == 0)
		treq.memory = address_memory(cli); /* the address an earlier job reached it at */
	if (rc == 0)
		rc = open_target(cli, a->cmd, &treq, &gt);
	size_t nw = (size_t)a->argc - 1, n = 0;
	char **quoted = calloc(nw + 1, sizeof *quoted);
	const char **argv = calloc(16 + nw, sizeof *argv);
	char *kh = NULL, *port = NULL;
	if (rc == 0 && (!quoted || !argv)) {
		fprintf(stderr, "pvagent ssh: out of memory\n");
		rc = 1;
	}
	if (rc == 0) {
		const struct ssh_opts *o = &gt.ssh;
		kh = strprintf("UserKnownHostsFile=%s", o->known_hosts);
		port = strprintf("%d", o->port > 0 ? o->port : 22);
		argv[n++] = "ssh";
		if (o->identity) {
			argv[n++] = "-i";
			argv[n++] = o->identity;
			argv[n++] = "-o";
			argv[n++] = "IdentitiesOnly=yes";
		}
		argv[n++] = "-o";
		argv[n++] = kh;
		argv[n++] = "-o";
		argv[n++] = o->policy == SSH_HKP_TOFU ? "StrictHostKeyChecking=accept-new"
						       : "StrictHostKeyChecking=yes";
		argv[n++] = "-p";
		argv[n++] = port;
		argv[n++] = "-l";
		argv[n++] = o->user ? o->user : "root";
		argv[n++] = "--";
		argv[n++] = o->host;
		bool oom = !kh || !port;
		for (size_t i = 0; i < nw && !oom; i++)
			oom = !(argv[n++] = quoted[i] = ssh_quote(a->argv[i + 1]));
		if (oom) {
			fprintf(stderr, "pvagent ssh: out of memory\n");
			rc = 1;
		}
	}
	if (rc == 0) {
		log_debug("ssh: %s@%s port %s", gt.ssh.user ? gt.ssh.user : "root", gt.ssh.host,
			  port);
		fflush(NULL);
		execvp("ssh", (char *const *)argv);
		fprintf(stderr, "pvagent ssh: cannot run ssh: %s\n", strerror(errno));
		rc = errno == ENOENT ? 127 : 126;
	}
	for (size_t i = 0; quoted && i < nw; i++)
		free(quoted[i]);
	free(quoted);
	free(argv);
	free(kh);
	free(port);
	guest_target_free(&gt);
	tmpl_kvlist_free(&vars);
	return rc;
}

/* ---- the entries ---------------------------------------------------------------- */

const struct cmd_entry cmd_inject_entry = {
	"inject", "NAME [--dry-run] [-t TEMPLATE] [--var K=V]... [--address A]",
	"apply the template's guest files and hostname over SSH (--dry-run: show diffs)", "",
	NULL, NULL, 1, 1, "guest name", cmd_inject,
	"pvagent inject web1 --dry-run\npvagent inject web1 -t ubuntu-24.04 --address 10.0.0.5",
	.wf = &wf_inject,
	.render = cli_inject_result,
	.flags = CMD_JOBS | CMD_DIFFS,
};
const struct cmd_entry cmd_virtio_entry = {
	"virtio",
	"NAME [--dry-run] [--bench [--size MiB]] [--disk-bus virtio-blk|virtio-scsi] "
	"[--keep-snapshot] [--address A] [-t TEMPLATE] [--var K=V]... [--timeout S]",
	"convert IDE disks and e1000 NICs to virtio, rolling back on failure", "", NULL,
	NULL, 1, 1, "guest name", cmd_virtio,
	"pvagent virtio old1 --dry-run\npvagent virtio old1 --bench --disk-bus virtio-scsi",
	.wf = &wf_virtio,
	.render = cli_virtio_result,
	.flags = CMD_JOBS,
};
const struct cmd_entry cmd_bench_entry = {
	"bench", "NAME [--size MiB] [--address A] [-t TEMPLATE] [--var K=V]...",
	"in-guest disk benchmark: sequential write/read, diskinfo, random reads; stored and "
	"compared",
	"", NULL, NULL, 1, 1, "guest name", cmd_bench,
	"pvagent bench web1\npvagent bench web1 --size 512",
	.wf = &wf_bench,
	.render = cli_bench_result,
	.flags = CMD_JOBS,
};
const struct cmd_entry cmd_ssh_entry = {
	"ssh", "NAME|VMID [--address A] [-t TEMPLATE] [--var K=V]... [-- COMMAND...]",
	"the system ssh to the guest with pvagent's identity, known_hosts and the address it "
	"finds",
	"t:", ssh_opts, "V", 1, -1, "guest name or VMID", cmd_ssh,
	"pvagent ssh web1\npvagent ssh web1 -- uname -a\npvagent ssh 190 --address 192.0.2.10",
	.wf = NULL,
};
const struct cmd_entry cmd_show_entry = {
	"show", "NAME|VMID",
	"a guest's config, status, disk bus, NIC, address, template and last bench run", "",
	NULL, NULL, 1, 1, "guest name or VMID", cmd_show, "pvagent show web1\npvagent --json show 190",
	.wf = NULL,
	.flags = CMD_READONLY,
};
