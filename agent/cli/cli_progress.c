/* cli_progress.c - the CLI's rendering of job events (event.h): one line
 * per finished step, config change and note; with --json, one JSON line
 * per event. On a terminal, every guest in flight also has a live line
 * ("  web1: clone  45%  drive-scsi0: transferred ...") kept at the bottom
 * and redrawn in place: the block is erased (cursor up, clear to the end
 * of the screen), permanent lines are printed above it, and it is drawn
 * again, each line cut to the terminal's width so that none wraps. With
 * several guests at once (--parallel) each keeps its own line, as apt and
 * docker show their downloads. Not a terminal: plain lines only. */
#include "cli.h"
#include "log.h"
#include "output.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

struct live_line {
	char *name;
	char *text;
};

/* Events come from the engine (serialised) and log lines from any thread:
 * both go through this lock while live lines are on the screen. */
static pthread_mutex_t print_mu = PTHREAD_MUTEX_INITIALIZER;
static struct event_print *drawing; /* whose live lines the log sink keeps */

static void live_erase(struct event_print *pp);
static void live_draw(struct event_print *pp);

/* A log line while live lines are drawn: above them, as stderr would
 * show it. The log calls this with its lock held (so log_sink_stderr, never
 * log_msg); print_mu comes after the log's lock, everywhere. */
static void log_above(void *ctx, enum log_level lvl, const char *line)
{
	(void)ctx;
	pthread_mutex_lock(&print_mu);
	struct event_print *pp = drawing;
	if (pp)
		live_erase(pp);
	fflush(stdout);
	log_sink_stderr(lvl, line);
	if (pp)
		live_draw(pp);
	fflush(stdout);
	pthread_mutex_unlock(&print_mu);
}

static void live_erase(struct event_print *pp)
{
	if (pp->drawn) {
		printf("\033[%zuA\r\033[J", pp->drawn);
		pp->drawn = 0;
	}
}

bool cli_stdout_tty(void)
{
	const char *v = getenv("PVAGENT_TTY");
	if (v && (strcmp(v, "0") == 0 || strcmp(v, "1") == 0))
		return *v == '1';
	return isatty(STDOUT_FILENO) != 0;
}

unsigned cli_term_columns(void)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10)
		return ws.ws_col;
	const char *c = getenv("COLUMNS");
	long n = c ? strtol(c, NULL, 10) : 0;
	return n >= 20 && n <= 1000 ? (unsigned)n : 80;
}

/* At most max bytes of s, not cutting a UTF-8 sequence. */
static int cut_len(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max)
		return (int)n;
	while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	return (int)max;
}

static void live_draw(struct event_print *pp)
{
	size_t cols = cli_term_columns() - 1;
	for (size_t i = 0; i < pp->n_live; i++) {
		char *line = strprintf("  %s: %s", pp->live[i].name,
				       pp->live[i].text ? pp->live[i].text : "");
		if (line)
			printf("\033[2K%.*s\n", cut_len(line, cols), line);
		else
			printf("\033[2K\n");
		free(line);
	}
	pp->drawn = pp->n_live;
}

static struct live_line *live_find(struct event_print *pp, const char *name, bool add)
{
	for (size_t i = 0; i < pp->n_live; i++)
		if (strcmp(pp->live[i].name, name) == 0)
			return &pp->live[i];
	if (!add)
		return NULL;
	struct live_line *nl = realloc(pp->live, (pp->n_live + 1) * sizeof *nl);
	if (!nl)
		return NULL;
	pp->live = nl;
	struct live_line *l = &nl[pp->n_live];
	if (!(l->name = strdup(name)))
		return NULL;
	l->text = NULL;
	pp->n_live++;
	return l;
}

static void live_set(struct event_print *pp, const char *name, char *text)
{
	struct live_line *l = live_find(pp, name, true);
	if (!l) {
		free(text);
		return;
	}
	free(l->text);
	l->text = text;
}

static void live_remove(struct event_print *pp, const char *name)
{
	struct live_line *l = live_find(pp, name, false);
	if (!l)
		return;
	free(l->name);
	free(l->text);
	size_t i = (size_t)(l - pp->live);
	memmove(l, l + 1, (pp->n_live - i - 1) * sizeof *l);
	pp->n_live--;
}

void cli_progress_waiting(struct event_print *pp, const char *const *names, size_t n,
			  unsigned parallel)
{
	if (!pp->tty || n <= parallel)
		return;
	pthread_mutex_lock(&print_mu);
	for (size_t i = 0; i < n; i++)
		live_set(pp, names[i], strprintf("waiting for a free slot (parallel %u)", parallel));
	pthread_mutex_unlock(&print_mu);
}

void cli_progress_at_exit(void)
{
	/* no live line outlives the program (an exit on an error path) */
	pthread_mutex_lock(&print_mu);
	if (drawing)
		live_erase(drawing);
	drawing = NULL;
	fflush(stdout);
	pthread_mutex_unlock(&print_mu);
}

void end_progress_line(struct event_print *pp)
{
	pthread_mutex_lock(&print_mu);
	bool uninstall = drawing == pp;
	if (uninstall)
		drawing = NULL;
	live_erase(pp);
	for (size_t i = 0; i < pp->n_live; i++) {
		free(pp->live[i].name);
		free(pp->live[i].text);
	}
	free(pp->live);
	pp->live = NULL;
	pp->n_live = 0;
	fflush(stdout);
	pthread_mutex_unlock(&print_mu);
	/* outside print_mu: the log takes its own lock, then (log_above) ours */
	if (uninstall)
		log_set_sink(NULL, NULL);
}

/* The permanent line of an event, or nothing. */
static void print_line(struct event_print *pp, const struct job_event *ev)
{
	const char *text = ev->text ? ev->text : "";
	switch (ev->kind) {
	case JOB_EV_STEP:
		printf("  %s: %-12s %6.1fs%s%s\n", ev->name, ev->step ? ev->step : "",
		       ev->elapsed_s, ev->text ? "  " : "", text);
		break;
	case JOB_EV_DIFF:
		if (ev->path) {
			if (pp->file_diffs || pp->cli->verbosity > 0)
				fputs(text, stdout);
		} else {
			printf("  %s: %s %s\n", ev->name, pp->dry_run ? "would change" : "change",
			       text);
		}
		break;
	case JOB_EV_NOTE:
		printf("  %s: note: %s\n", ev->name, text);
		break;
	case JOB_EV_BEGIN:
		printf("  %s: begin%s%s\n", ev->name, ev->text ? " " : "", text);
		break;
	default:
		break;
	}
}

/* What the guest's live line says after ev. */
static void update_live(struct event_print *pp, const struct job_event *ev)
{
	const char *step = ev->step ? ev->step : "";
	switch (ev->kind) {
	case JOB_EV_BEGIN:
		live_set(pp, ev->name, strdup("starting"));
		break;
	case JOB_EV_STEP:
		live_set(pp, ev->name, strprintf("%s done", step));
		break;
	case JOB_EV_PROGRESS:
		if (job_event_is_start(ev))
			live_set(pp, ev->name, strprintf("%s", step));
		else if (ev->percent >= 0)
			live_set(pp, ev->name, strprintf("%-12s %3.0f%%%s%s", step, ev->percent,
							 ev->text ? "  " : "",
							 ev->text ? ev->text : ""));
		else if (ev->text)
			live_set(pp, ev->name, strprintf("%-12s %s", step, ev->text));
		break;
	case JOB_EV_DONE:
		live_remove(pp, ev->name);
		break;
	default:
		break;
	}
}

void on_job_event(void *ctx, const struct job_event *ev)
{
	struct event_print *pp = ctx;
	if (pp->cli->json) {
		if (ev->kind == JOB_EV_DONE || job_event_is_start(ev))
			return; /* the final result object carries it; a start is the live line's */
		json_object *o = job_event_json(ev);
		if (o)
			out_json_line(stdout, o);
		json_object_put(o);
		return;
	}
	if (pp->cli->verbosity < 0)
		return; /* -q: warnings and errors only (the log's) */
	if (!pp->tty) {
		print_line(pp, ev);
		fflush(stdout);
		return;
	}
	pthread_mutex_lock(&print_mu);
	bool install = !drawing;
	if (install)
		drawing = pp;
	live_erase(pp);
	print_line(pp, ev);
	update_live(pp, ev);
	live_draw(pp);
	fflush(stdout);
	pthread_mutex_unlock(&print_mu);
	if (install) /* outside print_mu, as in end_progress_line */
		log_set_sink(log_above, NULL);
}
