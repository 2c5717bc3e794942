/* cli_help.c - what each command's options do, in one line each, for
 * `pvagent help COMMAND`, `COMMAND -h` and `COMMAND --help`. A job
 * command's options that set a param are described in its workflow's
 * table (wf_params.c: each option's argument and help line); this table
 * describes the others, each command's own (cmd_entry.longopts).
 * test_cli_help checks that every option of every command has a line and
 * appears in pvagent(1). */
#include "cli.h"
#include "util.h"
#include "wf_params.h"

#include <stdlib.h>
#include <string.h>

struct opt_doc {
	const char *cmd;  /* a command's name */
	const char *opt;  /* its long option */
	const char *arg;  /* what the argument is, or NULL */
	const char *text; /* what it does, with its default */
};

static const struct opt_doc docs[] = {
	{"list", "node", "N", "only the guests of node N"},
	{"list", "long", NULL, "also each guest's disk bus and NICs (its config, 8 read at once)"},
	{"templates", "long", NULL,
	 "also each template's source (cut to the terminal's width as the rest; --json: whole)"},
	{"up", "parallel", "K", "work on at most K guests at once (default 4)"},
	{"down", "yes", NULL, "delete without asking (needed without a terminal)"},
	/* ssh's options are the guest commands' (inject's table, wf_params.c) */
	{"ssh", "template", NULL, NULL},
	{"ssh", "var", NULL, NULL},
	{"ssh", "address", NULL, NULL},
	{"drain", "window", "W", "run maintenance window W's drain (its targets and limits)"},
	{"undrain", "window", "W", "bring home what window W drained, with its limits"},
	{"setup", "user", "U", "the administrator to log in as once (default root@pam)"},
	{"setup", "password-file", "F", "read the password from F, mode 0600 (default: ask)"},
	{"setup", "fingerprint", "FP", "the certificate's SHA-256 fingerprint to pin (default: ask)"},
	{"setup", "minimal", NULL, "grant the guest commands' privileges only, not those of "
				   "migrate, drain and image build"},
	{"setup", "migrate", NULL, "with --minimal: also grant what migrate and drain need"},
	{"setup", "force", NULL, "replace a token whose secret is lost"},
	{"setup", "no-storage-change", NULL, "print the pvesm line that adds import to local's "
					     "content instead of adding it"},
	{"setup", "dry-run", NULL, "print the pveum lines for this PVE version; change nothing"},
	{"setup", "pve-version", "N", "with --dry-run: the lines for PVE N (8, 9), without a login"},
	{"doctor", "migrate", NULL, "also check what migrate and drain need"},
	{"jobs", "limit", "N", "show the N most recent jobs (default 20)"},
	{"jobs", "before", "ID", "the page of jobs older than job ID (--json: next_before)"},
	{"jobs", "prune", NULL, "delete finished jobs past [daemon] keep_jobs, keep_jobs_max"},
	{"jobs", "older-than", "AGE", "with --prune: ended more than AGE ago (default keep_jobs)"},
	{"image", "yes", NULL, "rm: delete without asking (needed without a terminal)"},
	{"job", "follow", NULL, "follow a running job's events until it ends"},
	{"report", "html", "FILE", "write the report as a self-contained HTML page to FILE "
				   "(\"-\": stdout)"},
	{"cancel", "stop-task", NULL,
	 "stop the PVE task its step started (the tasks API); say what that left"},
};

static const struct opt_doc *find_doc(const char *cmd, const char *opt)
{
	for (size_t i = 0; i < sizeof docs / sizeof *docs; i++)
		if (strcmp(docs[i].cmd, cmd) == 0 && strcmp(docs[i].opt, opt) == 0)
			return &docs[i];
	return NULL;
}

void cli_print_options(FILE *f, const struct cmd_entry *e)
{
	struct cmd_opts opts;
	if (cmd_opts_build(e, &opts) < 0 || !opts.n) {
		cmd_opts_free(&opts);
		return;
	}
	fprintf(f, "\noptions:\n");
	for (size_t i = 0; i < opts.n; i++) {
		const struct option *o = &opts.longopts[i];
		/* a param's option: its table's; the command's own: docs[] */
		const struct job_param_opt *po = opts.popt[i];
		const struct opt_doc *d = po ? NULL : find_doc(e->name, o->name);
		if (d && !d->text)
			po = job_param_opt_find(&wf_inject_params_decl, o->name, NULL);
		const char *arg = po ? po->arg : d ? d->arg : NULL;
		const char *text = po ? po->help : d ? d->text : "";
		int c = o->val > ' ' && o->val < 127 && strchr(opts.shortopts, o->val) ? o->val : 0;
		char *head = c ? strprintf("-%c, --%s%s%s", c, o->name, arg ? " " : "", arg ? arg : "")
			       : strprintf("    --%s%s%s", o->name, arg ? " " : "", arg ? arg : "");
		/* a head longer than its column goes on a line of its own */
		if (head && strlen(head) > 24)
			fprintf(f, "  %s\n  %-24s  %s\n", head, "", text);
		else
			fprintf(f, "  %-24s  %s\n", head ? head : o->name, text);
		free(head);
	}
	fprintf(f, "  %-24s  %s\n", "-h, --help", "this text");
	cmd_opts_free(&opts);
}
