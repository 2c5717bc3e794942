/* cli_report.c - `pvagent report JOB [--html FILE]`: what a drain, an
 * undrain, a window's drain or a rolling run did (report.h), as text
 * (default), as the model's JSON (--json) or as a self-contained HTML page
 * (--html FILE; "-": stdout). Read-only: with pvagentd answering (and no
 * --local) the daemon reads its store and answers with the model (its
 * "report" request); else this process reads state.db itself. */
#include "cli.h"
#include "output.h"
#include "report.h"
#include "report_html.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A copy of s for a terminal: control characters (a name from PVE, a
 * message) shown as '?'. NULL stays "-". */
static char *plain(const char *s)
{
	char *d = strdup(s ? s : "-");
	for (char *p = d; p && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return d;
}

/* One table row of n cells, each made plain (taken). */
static void row(struct table *t, char **cells, size_t n)
{
	bool ok = true;
	for (size_t i = 0; i < n; i++) {
		char *p = plain(cells[i]);
		free(cells[i]);
		cells[i] = p;
		ok &= p != NULL;
	}
	if (ok && t)
		table_add(t, (const char *const *)cells);
	for (size_t i = 0; i < n; i++)
		free(cells[i]);
}

static char *sdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The time of day of t as a cell (NULL: none recorded). */
static char *clock_cell(double t)
{
	char buf[32];
	return t > 0 ? strdup(report_clock(buf, sizeof buf, t, false)) : NULL;
}

static void print_text(const struct report *r)
{
	char a[32], b[32], c[32];
	char *subject = plain(r->subject), *err = r->error ? plain(r->error) : NULL;
	char *left = r->left ? plain(r->left) : NULL;
	printf("%s of %s, job %lld: %s%s%s%s\n", r->kind, subject ? subject : "?", r->id,
	       r->state, err ? " (" : "", err ? err : "", err ? ")" : "");
	if (left)
		printf("  left: %s\n", left);
	free(subject);
	free(err);
	free(left);
	printf("  started %s, ended %s", report_clock(a, sizeof a, r->started, true),
	       report_clock(b, sizeof b, r->ended, true));
	if (r->started > 0 && r->ended >= r->started)
		printf(" (%s)", str_duration(c, sizeof c, r->ended - r->started));
	printf("\n  %zu moved, %zu failed, %zu refused, %zu stayed", r->n_moved, r->n_failed,
	       r->n_refused, r->n_stayed);
	if (r->n_pending)
		printf(", %zu not run", r->n_pending);
	printf("; %zu away from home at the end\n", r->n_away);
	printf("  downtime %s in all (PVE), longest gap clients saw %s\n",
	       report_ms(a, sizeof a, r->downtime_ms), report_ms(b, sizeof b, r->max_gap_ms));
	if (r->deadline > 0)
		printf("  the window closes %s\n", report_clock(a, sizeof a, r->deadline, true));

	if (r->n_lanes) {
		printf("\nphases:\n");
		const char *hdr[] = {"NODE", "JOB", "STEP", "STATE", "START", "END", "SAID"};
		struct table *t = table_new(7, hdr);
		for (size_t i = 0; i < r->n_lanes; i++)
			for (size_t k = 0; k < r->lanes[i].n_steps; k++) {
				const struct report_lane *l = &r->lanes[i];
				const struct report_step *s = &l->steps[k];
				char *cells[] = {
					sdup(l->node), strprintf("%s #%lld", l->workflow, l->job),
					sdup(s->name), sdup(s->state),
					clock_cell(s->started), clock_cell(s->ended),
					sdup(s->error ? s->error : s->result)};
				row(t, cells, 7);
			}
		table_print_fit(t, stdout, cli_term_columns());
		table_free(t);
	}
	if (r->n_moves) {
		printf("\nmoves:\n");
		const char *hdr[] = {"GUEST", "VMID", "FROM", "TO", "METHOD", "START",
				     "END", "DOWNTIME", "GAP", "RESULT"};
		struct table *t = table_new(10, hdr);
		for (size_t i = 0; i < r->n_moves; i++) {
			const struct report_move *m = &r->moves[i];
			char *cells[] = {
				sdup(m->name), strprintf("%d", m->vmid), sdup(m->from), sdup(m->to),
				sdup(m->method),
				clock_cell(m->started), clock_cell(m->ended),
				strdup(report_ms(c, sizeof c, m->downtime_ms)),
				strdup(report_ms(a, sizeof a, m->gap_ms)),
				strdup(report_kind_name(m->kind))};
			row(t, cells, 10);
		}
		table_print_fit(t, stdout, cli_term_columns());
		table_free(t);
	}
	if (r->n_failed || r->n_refused) {
		printf("\nfailures and refusals:\n");
		for (size_t i = 0; i < r->n_moves; i++) {
			const struct report_move *m = &r->moves[i];
			if (m->kind != REPORT_FAILED && m->kind != REPORT_REFUSED)
				continue;
			/* the first line of a reason (a task's log follows: `pvagent
			 * job` shows it) */
			const char *w = m->why ? m->why : m->status;
			size_t first = w ? strcspn(w, "\n") : 0;
			char *cut = w ? strndup(w, first) : NULL;
			char *name = plain(m->name), *why = plain(cut);
			free(cut);
			printf("  %s (%d) %s: %s", name ? name : "?", m->vmid,
			       report_kind_name(m->kind), why ? why : "?");
			if (w && w[first] && m->job)
				printf(" (more: pvagent job %lld)", m->job);
			printf("\n");
			free(name);
			free(why);
		}
	}
	if (r->n_away) {
		printf("\naway from home at the end:\n");
		const char *hdr[] = {"GUEST", "VMID", "HOME", "NOW ON"};
		struct table *t = table_new(4, hdr);
		for (size_t i = 0; i < r->n_guests; i++) {
			const struct report_guest *g = &r->guests[i];
			if (!g->away)
				continue;
			char *cells[] = {sdup(g->name), strprintf("%d", g->vmid), sdup(g->home),
					 sdup(g->at)};
			row(t, cells, 4);
		}
		table_print_fit(t, stdout, cli_term_columns());
		table_free(t);
	}
}

/* The model from pvagentd: 1 (*r), 0 when no daemon answers (or an older
 * one without the request: read here), or minus an exit code (said). */
static int from_daemon(struct cli *cli, long long id, struct report *r)
{
	struct ctl_client c;
	char *err = NULL;
	if (ctl_client_connect(cli->conf.paths.socket, &c, &err) != 0) {
		free(err); /* none, or none this user may reach: read state.db here */
		return 0;
	}
	json_object *req = cli_daemon_request(CTL_OP_REPORT), *ans = NULL;
	int rc = 1;
	if (!req || json_add(req, "job", json_object_new_int64(id)) < 0 ||
	    cli_daemon_call(cli, &c, req, &ans, &err) != 1) {
		cli_error("daemon", "report", "pvagentd: %s", err ? err : "no answer");
		rc = -1;
	} else if (!json_object_get_boolean(json_object_object_get(ans, "ok"))) {
		const char *code = json_str(ans, "error"), *msg = json_str(ans, "message");
		if (code && strcmp(code, "unknown_op") == 0) {
			rc = 0; /* an older daemon */
		} else if (code && strcmp(code, "not_found") == 0) {
			rc = -cli_error("not-found", "report", "%s", msg ? msg : "no such job");
		} else {
			cli_error("daemon", "report", "pvagentd: %s", msg ? msg : "refused");
			rc = -1;
		}
	} else if (report_from_json(json_object_object_get(ans, "report"), r, &err) < 0) {
		cli_error("daemon", "report", "pvagentd's answer: %s", err ? err : "bad");
		rc = -1;
	}
	free(err);
	json_object_put(req);
	json_object_put(ans);
	ctl_client_close(&c);
	return rc;
}

static int from_store(struct cli *cli, long long id, struct report *r)
{
	struct store *st = cli_store(cli);
	if (!st) {
		cli_error("job", "report", "no job store (see the warning above)");
		return 1;
	}
	char *err = NULL;
	int found = report_build(st, id, r, &err);
	if (found == 0) {
		if (store_job_pruned(st, id, NULL) == 1)
			cli_error("not-found", "report", "job %lld was pruned from %s", id,
				  store_file(st));
		else
			cli_error("not-found", "report", "no job %lld in %s", id, store_file(st));
		return EXIT_USAGE;
	}
	if (found < 0) {
		cli_error("job", "report", "%s", err ? err : "cannot read the job");
		free(err);
		return 1;
	}
	return 0;
}

static int write_html(const struct report *r, const char *path)
{
	char *page = report_html(r);
	if (!page) {
		cli_error("internal", "report", "out of memory");
		return 1;
	}
	bool out = strcmp(path, "-") == 0;
	FILE *f = out ? stdout : fopen(path, "w");
	size_t n = strlen(page);
	int rc = 0;
	if (!f || fwrite(page, 1, n, f) != n || (out ? fflush(f) : fclose(f)) != 0) {
		int e = errno;
		if (f && !out)
			fclose(f);
		rc = 1;
		cli_error("io", "report", "cannot write %s: %s", out ? "stdout" : path,
			  strerror(e));
	}
	free(page);
	return rc;
}

static int cmd_report(struct cli *cli, const struct cmd_args *a)
{
	const char *html = NULL;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].opt == 'H')
			html = a->v[i].val;
	char *end;
	errno = 0;
	long long id = strtoll(a->argv[0], &end, 10);
	if (errno || !*a->argv[0] || *end || id <= 0)
		return cli_usage_error("report", "not a job ID", a->argv[0]);
	if (html && !*html)
		return cli_usage_error("report", "--html needs a file name", html);
	if (html && cli->json && strcmp(html, "-") == 0)
		return cli_usage_error("report", "--json prints on stdout: give --html a file, not",
				       html);
	if (cli_load_conf(cli))
		return EXIT_USAGE;
	struct report r;
	int rc = cli->local ? 0 : from_daemon(cli, id, &r);
	if (rc < 0)
		return -rc;
	if (rc == 0 && (rc = from_store(cli, id, &r)) != 0)
		return rc;
	rc = 0;
	rc = html ? write_html(&r, html) : 0;
	if (rc == 0 && cli->json) {
		json_object *o = report_json(&r);
		if (o && html)
			json_add_str(o, "html", html);
		if (o) {
			out_json_ok("report", "report", o);
		} else {
			cli_error("internal", "report", "out of memory");
			rc = 1;
		}
	} else if (rc == 0 && (!html || strcmp(html, "-") != 0)) {
		if (html)
			printf("wrote %s: %s of job %lld, %zu moved, %zu failed, %zu refused, %zu "
			       "away from home\n", html, r.kind, r.id, r.n_moved, r.n_failed,
			       r.n_refused, r.n_away);
		else
			print_text(&r);
	}
	report_free(&r);
	return rc;
}

static const struct option report_opts[] = {{"html", required_argument, NULL, 'H'}, {0}};

const struct cmd_entry cmd_report_entry = {
	"report", "JOB [--html FILE]",
	"what a drain, an undrain, a window's drain or a rolling run did: each node's phases, "
	"each guest's moves with their downtime, failures and refusals, who is away from home "
	"(text, --json, or a self-contained HTML page)",
	"H:", report_opts, NULL, 1, 1, "job ID", cmd_report,
	"pvagent report 12\npvagent report 12 --html drain-12.html\npvagent --json report 12",
	.wf = NULL,
	.flags = CMD_READONLY,
};
