/* metrics.c - the daemon's counters and their Prometheus text form
 * (metrics.h). */
#include "metrics.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int add(struct metrics_row **v, size_t *n, const char *a, const char *b, double sum)
{
	a = a ? a : "";
	b = b ? b : "";
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].a, a) == 0 && strcmp((*v)[i].b, b) == 0) {
			(*v)[i].count++;
			(*v)[i].sum += sum;
			return 0;
		}
	struct metrics_row *nv = realloc(*v, (*n + 1) * sizeof *nv);
	if (!nv)
		return -1;
	*v = nv;
	struct metrics_row r = {strdup(a), strdup(b), 1, sum};
	if (!r.a || !r.b) {
		free(r.a);
		free(r.b);
		return -1;
	}
	nv[(*n)++] = r;
	return 0;
}

int metrics_job(struct metrics *m, const char *workflow, const char *result)
{
	return add(&m->jobs, &m->n_jobs, workflow, result, 0);
}

int metrics_step(struct metrics *m, const char *workflow, const char *step, double seconds)
{
	return add(&m->steps, &m->n_steps, workflow, step, seconds);
}

int metrics_exit(struct metrics *m, int code)
{
	char c[16];
	snprintf(c, sizeof c, "%d", code);
	return add(&m->exits, &m->n_exits, c, "", 0);
}

int metrics_requests(struct metrics *m, const char *method, double n)
{
	return add(&m->requests, &m->n_requests, method, "", n);
}

int metrics_retries(struct metrics *m, const char *kind, double n)
{
	return add(&m->retries, &m->n_retries, kind, "", n);
}

/* A label value: backslash, double quote and newline escaped. */
static int label(struct sbuf *b, const char *s)
{
	for (; *s; s++) {
		int r = *s == '\\' ? sbuf_add(b, "\\\\")
		      : *s == '"' ? sbuf_add(b, "\\\"")
		      : *s == '\n' ? sbuf_add(b, "\\n")
		      : sbuf_addc(b, *s);
		if (r < 0)
			return -1;
	}
	return 0;
}

static int row(struct sbuf *b, const char *name, const char *la, const char *va, const char *lb,
	       const char *vb, double value)
{
	int r = sbuf_addf(b, "%s{%s=\"", name, la);
	r = r ? r : label(b, va);
	if (lb && vb) {
		r = r ? r : sbuf_addf(b, "\",%s=\"", lb);
		r = r ? r : label(b, vb);
	}
	return r ? r : sbuf_addf(b, "\"} %.17g\n", value);
}

char *metrics_text(const struct metrics *m)
{
	struct sbuf b = {0};
	int r = sbuf_add(&b, "# HELP pvagent_jobs_total Jobs ended, by workflow and result.\n"
			     "# TYPE pvagent_jobs_total counter\n");
	for (size_t i = 0; !r && i < m->n_jobs; i++)
		r = row(&b, "pvagent_jobs_total", "workflow", m->jobs[i].a, "result", m->jobs[i].b,
			m->jobs[i].count);
	r = r ? r : sbuf_add(&b, "# HELP pvagent_step_seconds Step durations.\n"
				 "# TYPE pvagent_step_seconds summary\n");
	for (size_t i = 0; !r && i < m->n_steps; i++) {
		r = row(&b, "pvagent_step_seconds_sum", "workflow", m->steps[i].a, "step",
			m->steps[i].b, m->steps[i].sum);
		r = r ? r : row(&b, "pvagent_step_seconds_count", "workflow", m->steps[i].a, "step",
				m->steps[i].b, m->steps[i].count);
	}
	r = r ? r : sbuf_add(&b, "# HELP pvagent_daemon_jobs_total Commands the daemon ran, by "
				 "exit code.\n# TYPE pvagent_daemon_jobs_total counter\n");
	for (size_t i = 0; !r && i < m->n_exits; i++)
		r = row(&b, "pvagent_daemon_jobs_total", "exit", m->exits[i].a, NULL, NULL,
			m->exits[i].count);
	r = r ? r : sbuf_add(&b, "# HELP pvagent_pve_requests_total PVE API requests the jobs "
				 "sent, by method.\n# TYPE pvagent_pve_requests_total counter\n");
	for (size_t i = 0; !r && i < m->n_requests; i++)
		r = row(&b, "pvagent_pve_requests_total", "method", m->requests[i].a, NULL, NULL,
			m->requests[i].sum);
	r = r ? r : sbuf_add(&b, "# HELP pvagent_pve_retries_total Retried PVE API requests, by "
				 "the kind of error.\n# TYPE pvagent_pve_retries_total counter\n");
	for (size_t i = 0; !r && i < m->n_retries; i++)
		r = row(&b, "pvagent_pve_retries_total", "kind", m->retries[i].a, NULL, NULL,
			m->retries[i].sum);
	r = r ? r : sbuf_addf(&b, "# HELP pvagent_daemon_start_time_seconds When the daemon "
				  "started (unix time).\n# TYPE pvagent_daemon_start_time_seconds "
				  "gauge\npvagent_daemon_start_time_seconds %.3f\n", m->start_time);
	if (r) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

int metrics_write(const struct metrics *m, const char *path, char **err)
{
	char *text = metrics_text(m), *tmp = strprintf("%s.tmp", path);
	int rc = -1, fd = -1;
	if (!text || !tmp) {
		err_setf(err, "out of memory");
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err_setf(err, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err_setf(err, "%s: %s", tmp, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		fd = -1;
		err_setf(err, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		err_setf(err, "%s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0 && tmp)
		unlink(tmp);
	free(text);
	free(tmp);
	return rc;
}

static void rows_free(struct metrics_row *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].a);
		free(v[i].b);
	}
	free(v);
}

void metrics_free(struct metrics *m)
{
	rows_free(m->jobs, m->n_jobs);
	rows_free(m->steps, m->n_steps);
	rows_free(m->exits, m->n_exits);
	rows_free(m->requests, m->n_requests);
	rows_free(m->retries, m->n_retries);
	memset(m, 0, sizeof *m);
}
