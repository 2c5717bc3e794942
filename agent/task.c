/* task.c - PVE tasks (see task.h): UPID parse/format, log line parsing for
 * progress and migration downtime, the poll schedule, waiting on a task
 * and reporting its failure with the tail of its log. */
#include "task.h"

#include "json.h"
#include "log.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_PAGE 500
#define MAX_WARN_LINES 100

/* ---- UPID ------------------------------------------------------------------ */

static bool all_hex(const char *s, size_t min, size_t max)
{
	size_t n = strlen(s);
	if (n < min || n > max)
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return false;
	return true;
}

static bool no_space(const char *s)
{
	for (; *s; s++)
		if (isspace((unsigned char)*s))
			return false;
	return true;
}

static bool node_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-')
			return false;
	return true;
}

int task_upid_parse(const char *s, struct task_upid *u)
{
	char *copy = s ? strdup(s) : NULL;
	char *f[9];
	size_t n = 0;
	if (!copy) {
		errno = s ? ENOMEM : EINVAL;
		return -1;
	}
	/* Exactly nine ':'-separated fields, the last one empty. */
	char *p = copy;
	for (;;) {
		char *q = strchr(p, ':');
		if (n == 9)
			goto bad;
		f[n++] = p;
		if (!q)
			break;
		*q = '\0';
		p = q + 1;
	}
	if (n != 9 || strcmp(f[0], "UPID") != 0 || *f[8] || !node_name_ok(f[1]) ||
	    !all_hex(f[2], 8, 8) || !all_hex(f[3], 8, 9) || !all_hex(f[4], 8, 8) ||
	    !*f[5] || !no_space(f[5]) || !no_space(f[6]) || !*f[7] || !no_space(f[7]))
		goto bad;
	struct task_upid r = {0};
	r.node = strdup(f[1]);
	r.type = strdup(f[5]);
	r.id = strdup(f[6]);
	r.user = strdup(f[7]);
	if (!r.node || !r.type || !r.id || !r.user) {
		task_upid_free(&r);
		free(copy);
		errno = ENOMEM;
		return -1;
	}
	r.pid = strtoul(f[2], NULL, 16);
	r.pstart = strtoul(f[3], NULL, 16);
	r.starttime = strtoll(f[4], NULL, 16);
	free(copy);
	*u = r;
	return 0;
bad:
	free(copy);
	errno = EINVAL;
	return -1;
}

char *task_upid_format(const struct task_upid *u)
{
	return strprintf("UPID:%s:%08lX:%08lX:%08llX:%s:%s:%s:", u->node, u->pid, u->pstart,
			 (unsigned long long)u->starttime, u->type, u->id, u->user);
}

void task_upid_free(struct task_upid *u)
{
	if (!u)
		return;
	free(u->node);
	free(u->type);
	free(u->id);
	free(u->user);
	memset(u, 0, sizeof *u);
}

/* ---- log lines --------------------------------------------------------------- */

int task_parse_size(const char *s, double *bytes, const char **end)
{
	char *e = NULL;
	while (*s == ' ')
		s++;
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	double v = strtod(s, &e);
	if (e == s || errno)
		return -1;
	while (*e == ' ')
		e++;
	static const struct {
		const char *u;
		double mul;
	} units[] = {
		{"KiB", 1024.0},
		{"MiB", 1048576.0},
		{"GiB", 1073741824.0},
		{"TiB", 1099511627776.0},
		{"PiB", 1125899906842624.0},
		{"bytes", 1},
		{"KB", 1e3},
		{"kB", 1e3},
		{"MB", 1e6},
		{"GB", 1e9},
		{"TB", 1e12},
		{"B", 1},
	};
	for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
		size_t n = strlen(units[i].u);
		if (strncmp(e, units[i].u, n) == 0 && !isalpha((unsigned char)e[n])) {
			*bytes = v * units[i].mul;
			if (end)
				*end = e + n;
			return 0;
		}
	}
	return -1;
}

/* "X of Y" with sizes; returns pointer after Y or NULL. */
static const char *parse_x_of_y(const char *s, double *x, double *y)
{
	const char *e = NULL;
	if (task_parse_size(s, x, &e) < 0 || strncmp(e, " of ", 4) != 0)
		return NULL;
	if (task_parse_size(e + 4, y, &e) < 0)
		return NULL;
	return e;
}

static long parse_hms(const char *s)
{
	unsigned h = 0, m = 0, sec = 0;
	int used = 0;
	if (sscanf(s, "%u:%2u:%2u%n", &h, &m, &sec, &used) != 3 || used == 0)
		return -1;
	return (long)h * 3600 + (long)m * 60 + (long)sec;
}

enum task_line_kind task_parse_line(const char *line, struct task_progress *p)
{
	*p = (struct task_progress){-1, -1, -1, -1, -1, line, -1};
	const char *s;
	if (!line)
		return TASK_LINE_OTHER;
	if ((s = strstr(line, "migration active, transferred "))) {
		double x, y;
		if (parse_x_of_y(s + strlen("migration active, transferred "), &x, &y) && y > 0) {
			p->transferred = x;
			p->total = y;
			p->percent = x / y * 100.0;
			if (p->percent > 100)
				p->percent = 100;
			if (!(p->percent >= 0)) /* NaN from sizes beyond a double */
				p->percent = -1;
			return TASK_LINE_MIGRATION;
		}
	}
	if ((s = strstr(line, "transferred "))) {
		double x, y;
		const char *e = parse_x_of_y(s + strlen("transferred "), &x, &y);
		if (e && strncmp(e, " (", 2) == 0) {
			char *pe = NULL;
			double pc = strtod(e + 2, &pe);
			if (pe != e + 2 && *pe == '%' && !isnan(pc)) {
				p->transferred = x;
				p->total = y;
				p->percent = pc < 0 ? 0 : pc > 100 ? 100 : pc;
				return TASK_LINE_TRANSFER;
			}
		}
	}
	const char *sp = strstr(line, "migration speed: ");
	if (sp && (s = strstr(line, " - downtime "))) {
		char *e = NULL;
		long ms = strtol(s + strlen(" - downtime "), &e, 10);
		if (e != s + strlen(" - downtime ") && strncmp(e, " ms", 3) == 0 && ms >= 0) {
			/* PVE 8 "457.0 MiB/s", PVE 3/4 "256.00 MB/s" */
			double bps;
			const char *ue = NULL;
			p->downtime_ms = ms;
			if (task_parse_size(sp + strlen("migration speed: "), &bps, &ue) == 0 &&
			    strncmp(ue, "/s", 2) == 0 && bps >= 0 && !isinf(bps))
				p->speed = bps;
			return TASK_LINE_DOWNTIME;
		}
	}
	if ((s = strstr(line, "migration completed, transferred "))) {
		double x;
		const char *e = NULL;
		if (task_parse_size(s + strlen("migration completed, transferred "), &x, &e) == 0 &&
		    x >= 0 && !isinf(x)) {
			p->transferred = x;
			return TASK_LINE_COMPLETED;
		}
	}
	/* OpenVZ (PVE 2.x/3.x) wrote "successfuly" */
	if ((s = strstr(line, "migration finished successfully (duration ")) ||
	    (s = strstr(line, "migration finished successfuly (duration "))) {
		s = strchr(s, '(') + strlen("(duration ");
		long d = parse_hms(s);
		if (d >= 0) {
			p->duration_s = d;
			p->percent = 100;
			return TASK_LINE_FINISHED;
		}
	}
	if (strstr(line, "WARN:") || strstr(line, "WARNING:"))
		return TASK_LINE_WARNING;
	return TASK_LINE_OTHER;
}

void task_sched_init(struct task_sched *s, double first_s, double max_s)
{
	memset(s, 0, sizeof *s);
	s->first = first_s > 0 ? first_s : 1.0;
	s->max = max_s > 0 ? max_s : 2.0;
	if (s->max < s->first)
		s->max = s->first;
	s->step = s->first < 0.15 ? s->first : 0.15;
	s->margin = s->first < 0.1 ? s->first : 0.1;
	s->gap = s->first;
	s->base = -1;
	s->best = -1;
	s->end = -1;
}

void task_sched_log(struct task_sched *s, double now, unsigned lines, unsigned progress,
		    double percent)
{
	double gap = now - s->last_read;
	s->last_read = now;
	if (lines)
		s->last_line = now;
	if (!progress || !(percent >= 0)) /* no line, or NaN */
		return;
	if (percent > 100)
		percent = 100;
	/* When the last new line was written: somewhere in the gap since the
	 * previous read; with k lines in it, about gap / (2k) before now. */
	double at = gap > 0 ? now - gap / (2.0 * progress) : now;
	if (s->best >= 0 && percent < s->best) {
		/* Going backwards: the next transfer (disk) began somewhere in
		 * the gap. Timed from the gap's start, a short transfer's rate
		 * would come out far too slow and its end far too late (a wait
		 * sleeping through it); its rate comes from its own first two
		 * percentages instead. */
		task_sched_restart(s);
	}
	if (percent <= 0) {
		/* The transfer is starting: its rate counts from here. */
		if (s->best < 0)
			s->seg = at;
		return;
	}
	if (percent <= s->best)
		return; /* no news */
	s->best = percent;
	double rate = -1;
	if (s->base >= 0 && at > s->base_at)
		rate = (percent - s->base) / (at - s->base_at);
	else if (s->base < 0 && s->seg >= 0 && at > s->seg)
		rate = percent / (at - s->seg);
	if (s->base < 0) {
		s->base = percent;
		s->base_at = at;
	}
	if (!(rate > 0))
		return; /* no rate from a zero span (or an unknown start) */
	double end = at + (100.0 - percent) / rate;
	if (end >= 0) /* false for NaN */
		s->end = end;
}

void task_sched_restart(struct task_sched *s)
{
	s->seg = -1;
	s->base = -1;
	s->best = -1;
	s->end = -1;
}

double task_sched_next(struct task_sched *s, double now, bool *status)
{
	double d;
	*status = false;
	if (s->n++ == 0) {
		d = s->first;
	} else if (s->end < 0) {
		/* Nothing to estimate from: first, then doubling up to max. */
		d = s->gap;
		s->gap = s->gap * 2 > s->max ? s->max : s->gap * 2;
	} else if (s->end > now) {
		double left = s->end - now;
		s->tails = 0;
		if (left > TASK_SCHED_NEAR_S) {
			/* Far: halve the time left, so the estimate is refined
			 * as it gets nearer; never longer than twice the time
			 * waited so far. */
			double cap = 2 * now > s->max ? 2 * now : s->max;
			d = left / 2 > cap ? cap : left / 2;
		} else {
			d = left + s->margin; /* just after the estimated end */
		}
	} else {
		/* Past the estimate and still running: follow the tail,
		 * step, step, 2 step, 4 step, ... up to max. */
		d = s->step;
		for (unsigned i = 1; i < s->tails && d < s->max; i++)
			d *= 2;
		if (d > s->max)
			d = s->max;
		s->tails++;
	}
	if (d < s->step)
		d = s->step;
	/* Request n never before n first_s: no more requests than polling
	 * every first_s would have made by the time it sees the end. */
	if (now + d < s->n * s->first)
		d = s->n * s->first - now;
	if (now - s->last_line >= TASK_SCHED_SILENT_S) {
		/* A silent log: every other request asks the status. */
		s->status_next = !s->status_next;
		*status = s->status_next;
	} else {
		s->status_next = false;
	}
	return d;
}

bool task_exit_ok(const char *st, int *warnings)
{
	if (warnings)
		*warnings = 0;
	if (!st)
		return false;
	if (strcmp(st, "OK") == 0)
		return true;
	if (strncmp(st, "WARNINGS: ", 10) == 0 && isdigit((unsigned char)st[10])) {
		char *e = NULL;
		long n = strtol(st + 10, &e, 10);
		if (*e == '\0') {
			if (warnings)
				*warnings = n > 1000000 ? 1000000 : (int)n;
			return true;
		}
	}
	return false;
}

void task_result_free(struct task_result *r)
{
	if (!r)
		return;
	free(r->exitstatus);
	for (size_t i = 0; i < r->n_warning_lines; i++)
		free(r->warning_lines[i]);
	free(r->warning_lines);
	memset(r, 0, sizeof *r);
}

/* ---- reading the log ---------------------------------------------------------- */

struct logstate {
	unsigned long next;      /* lines read so far (the "start" of the next read) */
	char **ring;             /* last `cap` lines */
	unsigned cap, count, head;
	struct task_result *res;
	task_progress_fn progress;
	void *ctx;
	unsigned read_new;       /* lines in the current read_log() */
	unsigned read_lines;     /* progress lines in it */
	double read_percent;     /* the percentage of the last of them */
	bool read_drop;          /* one of them below the one before it */
	double last_percent;     /* the last percentage read, < 0: none */
	char *final;             /* the exit status in PVE's last line of a
				    finished task, when it is the last line read */
};

static int ring_push(struct logstate *ls, const char *line)
{
	char *d = strdup(line);
	if (!d)
		return -1;
	if (ls->count < ls->cap) {
		ls->ring[(ls->head + ls->count++) % ls->cap] = d;
	} else {
		free(ls->ring[ls->head]);
		ls->ring[ls->head] = d;
		ls->head = (ls->head + 1) % ls->cap;
	}
	return 0;
}

static char *ring_join(const struct logstate *ls)
{
	struct sbuf b = {0};
	for (unsigned i = 0; i < ls->count; i++) {
		if ((i && sbuf_addc(&b, '\n')) ||
		    sbuf_add(&b, ls->ring[(ls->head + i) % ls->cap])) {
			sbuf_free(&b);
			return NULL;
		}
	}
	return sbuf_steal(&b);
}

static void logstate_free(struct logstate *ls)
{
	for (unsigned i = 0; i < ls->count; i++)
		free(ls->ring[(ls->head + i) % ls->cap]);
	free(ls->ring);
	ls->ring = NULL;
	ls->count = 0;
	free(ls->final);
	ls->final = NULL;
}

/* The exit status in the last line PVE's worker writes before it exits
 * ("TASK OK", "TASK ERROR: msg", "TASK WARNINGS: n"), parsed as PVE's
 * upid_read_status does; NULL for any other line. */
static const char *final_status(const char *line)
{
	if (strcmp(line, "TASK OK") == 0)
		return "OK";
	if (strncmp(line, "TASK ERROR: ", 12) == 0 && line[12])
		return line + 12;
	if (strncmp(line, "TASK WARNINGS: ", 15) == 0 && line[15]) {
		const char *d = line + 15;
		while (isdigit((unsigned char)*d))
			d++;
		if (!*d)
			return line + 5;
	}
	return NULL;
}

static int take_line(struct logstate *ls, const char *line)
{
	struct task_progress p;
	enum task_line_kind k = task_parse_line(line, &p);
	struct task_result *r = ls->res;
	const char *fin = final_status(line);
	free(ls->final);
	ls->final = NULL;
	if (fin && !(ls->final = strdup(fin)))
		return -1;
	ls->read_new++;
	switch (k) {
	case TASK_LINE_DOWNTIME:
		r->downtime_ms = p.downtime_ms;
		if (p.speed >= 0)
			r->speed = p.speed;
		break;
	case TASK_LINE_COMPLETED:
		r->transferred = p.transferred;
		break;
	case TASK_LINE_FINISHED:
		r->duration_s = p.duration_s;
		break;
	case TASK_LINE_WARNING:
		if (r->n_warning_lines < MAX_WARN_LINES) {
			char **v = realloc(r->warning_lines,
					   (r->n_warning_lines + 1) * sizeof *v);
			if (!v)
				return -1;
			r->warning_lines = v;
			if (!(v[r->n_warning_lines] = strdup(line)))
				return -1;
			r->n_warning_lines++;
		}
		break;
	default:
		break;
	}
	if (p.percent >= 0) {
		ls->read_lines++;
		ls->read_percent = p.percent;
		/* the next transfer (disk, memory) began: maybe within this
		 * read, which its last percentage alone would not show */
		if (ls->last_percent >= 0 && p.percent < ls->last_percent)
			ls->read_drop = true;
		ls->last_percent = p.percent;
		if (ls->progress)
			ls->progress(ls->ctx, &p);
	}
	return ring_push(ls, line);
}

static char *task_path(const char *node, const char *upid, const char *what)
{
	char *n = pve_path_escape(node), *u = pve_path_escape(upid), *r = NULL;
	if (n && u)
		r = strprintf("/nodes/%s/tasks/%s/%s", n, u, what);
	free(n);
	free(u);
	return r;
}

/* What PVE answers for a log it cannot open (a task not visible yet). */
#define LOG_UNOPENED "unable to open file - "

/* Read log lines from ls->next on, until a short page. Returns 0, 1 when
 * PVE could not open the log (nothing read), -1 on error. */
static int read_log(struct pve *c, const char *node, const char *upid, struct logstate *ls,
		    struct pve_error *err)
{
	char *path = task_path(node, upid, "log");
	if (!path) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	int ret = -1;
	ls->read_new = 0;
	ls->read_lines = 0;
	ls->read_percent = -1;
	ls->read_drop = false;
	for (;;) {
		struct pve_params p = {0};
		pve_params_add_int(&p, "start", (long long)ls->next);
		pve_params_add_int(&p, "limit", LOG_PAGE);
		json_object *d = NULL;
		ls->res->log_reads++;
		int rc = pve_get(c, path, &p, &d, err);
		pve_params_free(&p);
		if (rc < 0)
			break;
		if (!d || !json_object_is_type(d, json_type_array)) {
			if (d)
				json_object_put(d);
			pve_error_set(err, PVE_ERR_PROTOCOL, "task log of %s is not a list", upid);
			break;
		}
		size_t n = json_object_array_length(d);
		int bad = 0;
		for (size_t i = 0; i < n && !bad; i++) {
			json_object *e = json_object_array_get_idx(d, i), *t = NULL, *nn = NULL;
			const char *txt = "";
			if (json_object_object_get_ex(e, "t", &t) &&
			    json_object_is_type(t, json_type_string))
				txt = json_object_get_string(t);
			/* PVE pads an empty answer with one {"n":1,"t":"no content"}
			 * line (ExtJS needs a row); it is not part of the log. */
			if (n == 1 && strcmp(txt, "no content") == 0) {
				n = 0;
				break;
			}
			/* A missing log file is answered as its only line. */
			if (n == 1 && ls->next == 0 &&
			    strncmp(txt, LOG_UNOPENED, strlen(LOG_UNOPENED)) == 0) {
				n = 0;
				ret = 1;
				break;
			}
			if (take_line(ls, txt) < 0)
				bad = 1;
			/* "n" is the 1-based line number: the next read starts there. */
			long long ln = json_object_object_get_ex(e, "n", &nn) ? json_object_get_int64(nn) : 0;
			ls->next = ln > (long long)ls->next ? (unsigned long)ln : ls->next + 1;
		}
		json_object_put(d);
		if (bad) {
			pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
			break;
		}
		if (ret == 1)
			break;
		if (n < LOG_PAGE) {
			ret = 0;
			break;
		}
	}
	free(path);
	return ret;
}

static int logstate_init(struct logstate *ls, unsigned cap, struct task_result *res,
			 task_progress_fn fn, void *ctx)
{
	memset(ls, 0, sizeof *ls);
	ls->cap = cap ? cap : 1;
	ls->ring = calloc(ls->cap, sizeof *ls->ring);
	ls->res = res;
	ls->progress = fn;
	ls->ctx = ctx;
	ls->last_percent = -1;
	return ls->ring ? 0 : -1;
}

int task_log_tail(struct pve *c, const char *upid, unsigned n, char **out,
		  struct pve_error *err)
{
	struct task_upid u;
	struct task_result res = {0};
	struct logstate ls;
	*out = NULL;
	if (task_upid_parse(upid, &u) < 0) {
		pve_error_set(err, PVE_ERR_CONFIG, "'%s' is not a PVE task id (UPID)", upid);
		return -1;
	}
	if (logstate_init(&ls, n, &res, NULL, NULL) < 0) {
		task_upid_free(&u);
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	int rc = read_log(c, u.node, upid, &ls, err);
	if (rc == 1)
		rc = 0; /* no log file: an empty log */
	if (rc == 0 && !(*out = ring_join(&ls))) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		rc = -1;
	}
	logstate_free(&ls);
	task_result_free(&res);
	task_upid_free(&u);
	return rc;
}

/* ---- waiting ------------------------------------------------------------------- */

static bool not_visible_yet(const struct pve_error *e)
{
	return e->kind == PVE_ERR_PARAM || e->kind == PVE_ERR_BAD_REQUEST ||
	       e->kind == PVE_ERR_NOT_FOUND;
}

/* One status request: 1 stopped (*exitstatus set), 0 running, -1 error. */
static int poll_status(struct pve *c, const char *spath, const char *upid, char **exitstatus,
		       struct pve_error *err)
{
	json_object *st = NULL, *s = NULL, *x = NULL;
	if (pve_get(c, spath, NULL, &st, err) < 0)
		return -1;
	const char *status = NULL;
	if (st && json_object_object_get_ex(st, "status", &s))
		status = json_object_get_string(s);
	if (!status) {
		if (st)
			json_object_put(st);
		pve_error_set(err, PVE_ERR_PROTOCOL, "task %s: status without \"status\"", upid);
		return -1;
	}
	int r = 0;
	if (strcmp(status, "stopped") == 0) {
		const char *es = "unknown";
		if (json_object_object_get_ex(st, "exitstatus", &x) && x)
			es = json_object_get_string(x);
		r = 1;
		if (!(*exitstatus = strdup(es))) {
			pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
			r = -1;
		}
	}
	json_object_put(st);
	return r;
}

/* What one request of the wait found. */
enum probe { PROBE_RUNNING, PROBE_STOPPED, PROBE_UNSEEN };

int task_wait(struct pve *c, const char *upid, const struct task_wait_opts *o,
	      struct task_result *res, struct pve_error *err)
{
	static const struct task_wait_opts defaults = {0};
	struct task_result local = {0};
	struct pve_error tmp_err = {0};
	char *exitstatus = NULL; /* owned here until handed to the caller's res */
	bool keep = res != NULL;
	struct task_upid u;
	struct logstate ls;
	char *spath = NULL;
	int ret = -1;
	if (!o)
		o = &defaults;
	if (!res)
		res = &local;
	if (!err)
		err = &tmp_err;
	memset(res, 0, sizeof *res);
	res->downtime_ms = -1;
	res->duration_s = -1;
	res->speed = res->transferred = -1;
	pve_error_clear(err);
	memset(&u, 0, sizeof u);
	memset(&ls, 0, sizeof ls);
	if (!upid || task_upid_parse(upid, &u) < 0) {
		pve_error_set(err, PVE_ERR_PROTOCOL, "'%s' is not a PVE task id (UPID)",
			      upid ? upid : "(null)");
		goto out;
	}
	double timeout = o->timeout_s == 0 ? 1800.0 : o->timeout_s;
	double grace = o->grace_s > 0 ? o->grace_s : 10.0;
	if (logstate_init(&ls, o->tail_lines ? o->tail_lines : 12, res, o->progress,
			  o->progress_ctx) < 0 ||
	    !(spath = task_path(u.node, upid, "status"))) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		goto out;
	}
	struct task_sched sched;
	task_sched_init(&sched, o->first_poll_s, o->max_poll_s);
	if (o->attach)
		sched.seg = -1;
	bool log_done = false; /* the end came with the log's last line */
	double t0 = pve_clock_now(o->clock), el = 0;
	for (;;) {
		bool want_status = false;
		double d = task_sched_next(&sched, el, &want_status);
		if (timeout > 0 && el + d > timeout)
			d = timeout > el ? timeout - el : 0;
		pve_clock_sleep(o->clock, d);
		enum probe found = PROBE_RUNNING;
		int r = 0;
		if (!want_status) {
			r = read_log(c, u.node, upid, &ls, err);
			el = pve_clock_now(o->clock) - t0;
			if (r >= 0 && ls.read_drop)
				task_sched_restart(&sched);
			if (r >= 0)
				task_sched_log(&sched, el, ls.read_new, ls.read_lines,
					       ls.read_percent);
			if (r == 0 && ls.final) {
				exitstatus = ls.final;
				ls.final = NULL;
				log_done = true;
				found = PROBE_STOPPED;
			} else if (r == 1) {
				found = PROBE_UNSEEN;
				/* past the grace, the status call tells why */
				want_status = el >= grace;
			}
		}
		if (r >= 0 && want_status) {
			res->polls++;
			r = poll_status(c, spath, upid, &exitstatus, err);
			el = pve_clock_now(o->clock) - t0;
			found = r == 1 ? PROBE_STOPPED : PROBE_RUNNING;
		}
		if (r < 0) {
			if (!not_visible_yet(err) || el >= grace)
				goto out;
			pve_error_clear(err);
			found = PROBE_UNSEEN;
		}
		if (found == PROBE_STOPPED)
			break;
		if (found == PROBE_UNSEEN)
			log_debug("task %s not visible yet", upid);
		if (timeout > 0 && el >= timeout) {
			pve_error_set(err, PVE_ERR_TASK_TIMEOUT,
				      "%s %s on %s still running after %.0f s; not stopped, "
				      "check it in PVE (task %s)",
				      u.type, u.id, u.node, el, upid);
			err->upid = strdup(upid);
			goto out;
		}
	}
	res->elapsed_s = el;
	/* The rest of the log (warnings, downtime, and the tail on failure)
	 * unless the read that saw the end brought it. */
	struct pve_error lerr = {0};
	if (!log_done && read_log(c, u.node, upid, &ls, &lerr) < 0)
		log_debug("reading the log of task %s: %s", upid,
			  lerr.message ? lerr.message : "");
	if (task_exit_ok(exitstatus, &res->warnings)) {
		pve_error_clear(&lerr);
		for (size_t i = 0; i < res->n_warning_lines; i++)
			log_warn("%s %s on %s: %s", u.type, u.id, u.node, res->warning_lines[i]);
		if (res->warnings && !res->n_warning_lines)
			log_warn("%s %s on %s ended with %s", u.type, u.id, u.node, exitstatus);
		ret = 0;
		goto out;
	}
	pve_error_set(err, PVE_ERR_TASK, "%s %s on %s failed: %s", u.type, u.id, u.node,
		      exitstatus);
	err->upid = strdup(upid);
	if (lerr.kind == PVE_OK) {
		char *tail = ring_join(&ls);
		err->detail = tail ? log_redact(tail) : NULL;
		free(tail);
	}
	pve_error_clear(&lerr);
out:
	if (ret < 0 && err && !err->what && err->kind != PVE_ERR_TASK &&
	    err->kind != PVE_ERR_TASK_TIMEOUT)
		err->what = strprintf("waiting for task %s", upid);
	/* a read that failed (after the client's retries) once the task had
	 * its UPID: the task may have done its work, so its outcome is
	 * unknown, never a clean failure (err.h: ambiguous) */
	if (ret < 0 && u.node && err->kind != PVE_ERR_TASK && err->kind != PVE_ERR_INTERNAL) {
		err->ambiguous = true;
		if (!err->upid)
			err->upid = strdup(upid);
	}
	free(spath);
	logstate_free(&ls);
	task_upid_free(&u);
	if (keep && exitstatus)
		res->exitstatus = exitstatus;
	else
		free(exitstatus);
	task_result_free(&local);
	pve_error_clear(&tmp_err);
	return ret;
}

int task_start(struct pve *c, const char *method, const char *path,
	       const struct pve_params *params, const struct pve_call_opts *copts,
	       char **upid, struct pve_error *err)
{
	json_object *d = NULL;
	*upid = NULL;
	int rc = pve_request(c, method, path, params, copts, &d, err);
	if (rc < 0)
		return -1;
	if (!d)
		return rc;
	struct task_upid u;
	const char *s = json_object_is_type(d, json_type_string) ? json_object_get_string(d) : NULL;
	if (!s || task_upid_parse(s, &u) < 0) {
		pve_error_set(err, PVE_ERR_PROTOCOL, "expected a task id (UPID), got %s",
			      json_object_to_json_string(d));
		err->what = strprintf("%s %s", method, path);
		json_object_put(d);
		return -1;
	}
	task_upid_free(&u);
	*upid = strdup(s);
	json_object_put(d);
	if (!*upid) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	log_debug("%s %s started task %s", method, path, *upid);
	return rc;
}

int task_run(struct pve *c, const char *method, const char *path,
	     const struct pve_params *params, const struct pve_call_opts *copts,
	     const struct task_wait_opts *wopts, struct task_result *res,
	     struct pve_error *err)
{
	char *upid = NULL;
	if (res) {
		memset(res, 0, sizeof *res);
		res->downtime_ms = res->duration_s = -1;
		res->speed = res->transferred = -1;
	}
	int rc = task_start(c, method, path, params, copts, &upid, err);
	if (rc < 0 || !upid)
		return rc;
	int w = task_wait(c, upid, wopts, res, err);
	free(upid);
	return w < 0 ? -1 : rc;
}

int task_find_newest(struct pve *c, const char *node, const char *type, int vmid,
		     long long since, bool ended, json_object **entry, struct pve_error *err)
{
	*entry = NULL;
	char *pn = pve_path_escape(node);
	struct pve_params q = {0};
	json_object *tasks = NULL, *found = NULL;
	int rc;
	if (!pn || pve_params_add_int(&q, "vmid", vmid) < 0 ||
	    pve_params_add(&q, "typefilter", type) < 0 || pve_params_add(&q, "source", "all") < 0)
		rc = pve_error_oom(err);
	else
		rc = pve_getf(c, &tasks, &q, err, "/nodes/%s/tasks", pn);
	pve_params_free(&q);
	free(pn);
	long long best = -1, st = 0, end = 0;
	for (size_t i = 0; rc == 0 && json_object_is_type(tasks, json_type_array) &&
			   i < json_object_array_length(tasks); i++) {
		json_object *t = json_object_array_get_idx(tasks, i);
		if (json_str(t, "upid") && json_int(t, "starttime", &st) && st >= since && st > best) {
			found = t;
			best = st;
		}
	}
	if (found && (!ended || json_int(found, "endtime", &end)))
		*entry = json_object_get(found);
	json_object_put(tasks);
	return rc < 0 ? -1 : *entry ? 1 : found ? 2 : 0;
}
