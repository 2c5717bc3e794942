/* tasks.c - PVE worker tasks in simulated time (see tasks.h): UPIDs, lazily
 * revealed logs, exit status, effects at the end, fault injection, stop. */
#include "tasks.h"

#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sim_task *task_new(struct cluster *c, const char *node,
			  const char *type, const char *id, const char *user,
			  double start, double duration)
{
	struct sim_task *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = c->next_pid++;
	double since_boot = start - c->boot_time;
	if (since_boot < 0)
		since_boot = 0;
	t->pstart = (unsigned)(since_boot * 100.0) + 1000;
	t->start = start;
	t->duration = duration < 0 ? 0 : duration;
	t->end = start + t->duration;
	t->node = strdup(node);
	t->type = strdup(type);
	t->id = strdup(id ? id : "");
	t->user = strdup(user ? user : "root@pam");
	t->upid = strprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, t->pid,
			    t->pstart, (unsigned)start, type, id ? id : "",
			    user ? user : "root@pam");
	if (!t->node || !t->type || !t->id || !t->user || !t->upid ||
	    ptrvec_push(&c->tasks, t) < 0) {
		task_free(t);
		return NULL;
	}
	return t;
}

void task_free(struct sim_task *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nlines; i++)
		free(t->lines[i].text);
	free(t->lines);
	free(t->upid);
	free(t->node);
	free(t->type);
	free(t->id);
	free(t->user);
	free(t->error);
	free(t->exitstatus);
	free(t->target);
	json_object_put(t->args);
	free(t);
}

static int task_add_line(struct sim_task *t, double at, char *text)
{
	if (!text)
		return -1;
	if (t->nlines == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct task_line *l = realloc(t->lines, cap * sizeof(*l));
		if (!l) {
			free(text);
			return -1;
		}
		t->lines = l;
		t->cap = cap;
	}
	/* keep lines ordered by time (stable for equal times) */
	size_t i = t->nlines;
	while (i > 0 && t->lines[i - 1].at > at) {
		t->lines[i] = t->lines[i - 1];
		i--;
	}
	t->lines[i].at = at;
	t->lines[i].text = text;
	t->nlines++;
	return 0;
}

int task_log(struct sim_task *t, double at, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		sbuf_free(&b);
		return -1;
	}
	return task_add_line(t, at, sbuf_steal(&b));
}

int task_fail_at(struct sim_task *t, double at, const char *msg)
{
	char *m = strdup(msg);
	if (!m)
		return -1;
	free(t->error);
	t->error = m;
	if (at < 0)
		at = 0;
	if (at < t->duration)
		t->end = t->start + at;
	return 0;
}

int task_apply_fault(struct sim_task *t, const char *task_fail)
{
	if (!task_fail)
		return 0;
	return task_fail_at(t, t->duration * 0.5, task_fail);
}

struct sim_task *task_find(const struct cluster *c, const char *upid)
{
	for (size_t i = 0; i < c->tasks.n; i++) {
		struct sim_task *t = c->tasks.v[i];
		if (strcmp(t->upid, upid) == 0)
			return t;
	}
	return NULL;
}

/* Drop the lines logged after the end, add the closing line. */
static void task_finish(struct cluster *c, struct sim_task *t)
{
	double len = t->end - t->start;
	size_t keep = 0;
	for (size_t i = 0; i < t->nlines; i++) {
		if (t->lines[i].at <= len + 1e-3)
			t->lines[keep++] = t->lines[i];
		else
			free(t->lines[i].text);
	}
	t->nlines = keep;
	/* the closing line is the last one (PVE's worker writes it before it
	 * exits), also when a line's time and the end differ by rounding */
	if (keep && t->lines[keep - 1].at > len)
		len = t->lines[keep - 1].at;
	bool ok = t->error == NULL;
	if (ok && t->warnings > 0)
		t->exitstatus = strprintf("WARNINGS: %d", t->warnings);
	else if (ok)
		t->exitstatus = strdup("OK");
	else
		t->exitstatus = strdup(t->error);
	if (t->exitstatus) {
		if (ok && t->warnings > 0)
			task_log(t, len, "TASK WARNINGS: %d", t->warnings);
		else if (ok)
			task_log(t, len, "TASK OK");
		else
			task_log(t, len, "TASK ERROR: %s", t->error);
	}
	t->finished = true;
	if (t->on_end)
		t->on_end(c, t, ok);
	if (t->parent && t->parent->children_running > 0)
		t->parent->children_running--;
}

void tasks_advance(struct cluster *c, double now)
{
	for (;;) {
		struct sim_task *next = NULL;
		double when = 0;
		bool is_start = false;
		for (size_t i = 0; i < c->tasks.n; i++) {
			struct sim_task *t = c->tasks.v[i];
			if (t->finished)
				continue;
			double at = t->started ? t->end : t->start;
			if (at > now)
				continue;
			/* ends before starts at the same instant */
			bool start_ev = !t->started;
			if (!next || at < when ||
			    (at == when && is_start && !start_ev)) {
				next = t;
				when = at;
				is_start = start_ev;
			}
		}
		if (!next)
			return;
		if (is_start) {
			next->started = true;
			if (next->on_start)
				next->on_start(c, next);
		} else {
			task_finish(c, next);
		}
	}
}

void task_stop(struct cluster *c, struct sim_task *t, double now)
{
	if (t->finished || !t->started)
		return;
	if (now < t->end)
		t->end = now < t->start ? t->start : now;
	task_log(t, t->end - t->start, "received interrupt");
	free(t->error);
	t->error = strdup("interrupted by signal");
	task_finish(c, t);
}

size_t task_visible_lines(const struct sim_task *t, double now)
{
	if (t->finished)
		return t->nlines;
	double len = now - t->start + 1e-3; /* absorb rounding of start + at */
	size_t n = 0;
	while (n < t->nlines && t->lines[n].at <= len)
		n++;
	return n;
}

json_object *task_status_json(const struct sim_task *t, double now)
{
	(void)now;
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "upid", json_object_new_string(t->upid));
	json_object_object_add(o, "node", json_object_new_string(t->node));
	json_object_object_add(o, "pid", json_object_new_int64(t->pid));
	json_object_object_add(o, "pstart", json_object_new_int64(t->pstart));
	json_object_object_add(o, "starttime",
			       json_object_new_int64((long long)t->start));
	json_object_object_add(o, "type", json_object_new_string(t->type));
	json_object_object_add(o, "id", json_object_new_string(t->id));
	json_object_object_add(o, "user", json_object_new_string(t->user));
	json_object_object_add(
		o, "status",
		json_object_new_string(t->finished ? "stopped" : "running"));
	if (t->finished && t->exitstatus)
		json_object_object_add(o, "exitstatus",
				       json_object_new_string(t->exitstatus));
	return o;
}

char *task_stamp(const struct sim_task *t, double at)
{
	time_t when = (time_t)(t->start + at);
	struct tm tm;
	char buf[32];
	if (!gmtime_r(&when, &tm) ||
	    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm) == 0)
		return strdup("1970-01-01 00:00:00");
	return strdup(buf);
}

char *task_hms(double secs)
{
	long s = (long)(secs + 0.5);
	return strprintf("%02ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
}

int task_log_transfer(struct sim_task *t, double at0, double secs,
		      uint64_t total, const char *prefix)
{
	/* qemu-img and drive-mirror report often: a line per 5% for short
	 * copies, per 1% (at most one every 50 ms) for long ones. */
	int steps = secs * 20.0 < 20.0 ? 20 : (secs * 20.0 > 100.0 ? 100 : (int)(secs * 20.0));
	for (int i = prefix ? 1 : 0; i <= steps; i++) {
		uint64_t done = (uint64_t)((double)total * i / steps);
		double at = at0 + secs * i / steps;
		char *d = human_bytes(done), *tot = human_bytes(total);
		int rc = -1;
		if (d && tot) {
			double pct = total ? 100.0 * (double)done / (double)total : 100.0;
			if (prefix)
				rc = task_log(t, at,
					      "%s: transferred %s of %s (%.2f%%) in %lds%s",
					      prefix, d, tot, pct, (long)(secs * i / steps + 0.5),
					      i == steps ? ", ready" : "");
			else
				rc = task_log(t, at, "transferred %s of %s (%.2f%%)", d, tot,
					      pct);
		}
		free(d);
		free(tot);
		if (rc < 0)
			return -1;
	}
	return 0;
}

void resp_task(struct sim_resp *r, struct sim_task *t)
{
	if (!t || !(r->upid = strdup(t->upid))) {
		resp_error(r, 500, "out of memory");
		return;
	}
	resp_data(r, json_object_new_string(t->upid));
}

void task_discard(struct cluster *c, struct sim_task *t)
{
	for (size_t i = 0; i < c->tasks.n; i++) {
		if (c->tasks.v[i] == t) {
			ptrvec_remove(&c->tasks, i);
			task_free(t);
			return;
		}
	}
}

void task_end_start(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (g && ok && !g->running)
		guest_started(c, g, t->end);
}

void task_end_stop(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (g && ok && g->running)
		guest_stopped(c, g);
}

void task_end_reboot(struct cluster *c, struct sim_task *t, bool ok)
{
	struct sim_guest *g = cluster_guest(c, t->vmid);
	if (!g || !ok)
		return;
	guest_stopped(c, g);
	guest_started(c, g, t->end);
}
