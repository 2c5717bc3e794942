/* jobpool.c - the one thread pool (jobpool.h): jobq's bookkeeping under a
 * mutex, worker threads that take what jobq_next() gives and wait on a
 * condition while nothing may start; and its two users in the library,
 * several jobs and concurrent reads. */
#include "jobpool.h"

#include "jobq.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct pitem {
	void (*run)(void *arg, struct pve *c, const struct pve_error *no_client);
	void (*late)(void *arg, double now);
	void *arg;
};

struct jobpool {
	struct jobpool_opts o;
	struct jobq q;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

struct jobpool *jobpool_new(const struct jobpool_opts *o)
{
	struct jobpool *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->o = *o;
	if (!p->o.workers || !p->o.po)
		p->o.workers = 1; /* without po, the caller's client is the only one */
	if (pthread_mutex_init(&p->mu, NULL) != 0) {
		free(p);
		return NULL;
	}
	if (pthread_cond_init(&p->cv, NULL) != 0) {
		pthread_mutex_destroy(&p->mu);
		free(p);
		return NULL;
	}
	jobq_init(&p->q, p->o.workers, p->o.node_jobs);
	return p;
}

int jobpool_add(struct jobpool *p, const struct jobpool_item *it)
{
	struct pitem *d = malloc(sizeof *d);
	if (!d)
		return -1;
	*d = (struct pitem){it->run, it->late, it->arg};
	const char *g[1] = {it->guest};
	struct jobq_item *qi = jobq_add(&p->q, g, it->guest ? 1 : 0, it->node, d);
	if (!qi) {
		free(d);
		return -1;
	}
	if (it->timed)
		qi->start_by = it->start_by;
	return 0;
}

static bool stopping(const struct jobpool *p)
{
	return p->o.stop && *p->o.stop;
}

/* Take items until none is left to start; called and returns unlocked. */
static void work(struct jobpool *p)
{
	struct pve *own = NULL, *c = p->o.po ? NULL : p->o.c;
	struct pve_error no_client = {0};
	bool tried = !p->o.po;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (stopping(p))
			break;
		struct jobq_item *it = jobq_late(&p->q, pve_clock_now(p->o.clock));
		if (it) {
			struct pitem d = *(struct pitem *)it->data;
			free(it->data);
			jobq_remove(&p->q, it);
			pthread_mutex_unlock(&p->mu);
			if (d.late)
				d.late(d.arg, pve_clock_now(p->o.clock));
			pthread_mutex_lock(&p->mu);
			pthread_cond_broadcast(&p->cv);
			continue;
		}
		if (p->q.n_queued == 0)
			break;
		if (!(it = jobq_next(&p->q))) {
			pthread_cond_wait(&p->cv, &p->mu);
			continue;
		}
		struct pitem *d = it->data;
		pthread_mutex_unlock(&p->mu);
		if (!tried) {
			tried = true;
			c = own = pve_new(p->o.po, &no_client);
			if (!c && no_client.kind == PVE_OK)
				pve_error_set(&no_client, PVE_ERR_INTERNAL, "cannot make a PVE client");
		}
		d->run(d->arg, c, c ? NULL : &no_client);
		pthread_mutex_lock(&p->mu);
		free(d);
		jobq_remove(&p->q, it);
		pthread_cond_broadcast(&p->cv);
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pve_free(own);
	pve_error_clear(&no_client);
}

static void *work_thread(void *arg)
{
	work(arg);
	return NULL;
}

void jobpool_run(struct jobpool *p)
{
	size_t k = p->o.workers;
	if (k > p->q.n_queued)
		k = p->q.n_queued;
	pthread_t *th = k > 1 ? calloc(k, sizeof *th) : NULL;
	size_t started = 0;
	for (; th && started < k; started++)
		if (pthread_create(&th[started], NULL, work_thread, p) != 0)
			break;
	if (started == 0)
		work(p); /* one worker: this thread */
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
}

void jobpool_free(struct jobpool *p)
{
	if (!p)
		return;
	for (struct jobq_item *it = p->q.head; it; it = it->next)
		free(it->data);
	jobq_free(&p->q);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* ---- several jobs ------------------------------------------------------------------------ */

static void run_job(void *arg, struct pve *c, const struct pve_error *no_client)
{
	if (c)
		job_run(arg, c);
	else
		job_fail_unrun(arg, no_client);
}

enum job_outcome jobpool_run_jobs(struct job **jobs, size_t n, unsigned parallel,
				  const struct pve_opts *po, struct pve *c)
{
	/* one worker with a client of the caller's: that one */
	if (po && c && (parallel == 1 || n <= 1))
		po = NULL;
	struct jobpool_opts o = {.workers = parallel ? parallel : 4, .po = po, .c = c};
	struct jobpool *p = jobpool_new(&o);
	enum job_outcome worst = JOB_OUT_DONE;
	for (size_t i = 0; i < n; i++) {
		struct jobpool_item it = {.guest = job_subject(jobs[i]), .run = run_job,
					  .arg = jobs[i]};
		if (!p || jobpool_add(p, &it) < 0) {
			struct pve_error e = {0};
			pve_error_oom(&e);
			job_fail_unrun(jobs[i], &e);
			pve_error_clear(&e);
		}
	}
	if (p)
		jobpool_run(p);
	jobpool_free(p);
	for (size_t i = 0; i < n; i++)
		worst = job_outcome_worse(worst, job_outcome(jobs[i]));
	return worst;
}

/* ---- concurrent reads ------------------------------------------------------------------- */

struct map {
	int (*fn)(void *ctx, size_t i, struct pve *c, struct pve_error *err);
	void *ctx;
	pthread_mutex_t mu;
	bool failed;
	struct pve_error err;        /* the first failure */
};

struct map_call {
	struct map *m;
	size_t i;
};

static void map_fail(struct map *m, struct pve_error *e)
{
	pthread_mutex_lock(&m->mu);
	if (!m->failed) {
		m->failed = true;
		pve_error_move(&m->err, e);
	}
	pthread_mutex_unlock(&m->mu);
	pve_error_clear(e);
}

static void map_run(void *arg, struct pve *c, const struct pve_error *no_client)
{
	struct map_call *x = arg;
	struct map *m = x->m;
	struct pve_error e = {0};
	pthread_mutex_lock(&m->mu);
	bool skip = m->failed;
	pthread_mutex_unlock(&m->mu);
	if (skip)
		return;
	if (!c) {
		pve_error_set(&e, no_client->kind, "%s",
			      no_client->message ? no_client->message : "no PVE client");
		map_fail(m, &e);
	} else if (m->fn(m->ctx, x->i, c, &e) < 0) {
		if (e.kind == PVE_OK)
			pve_error_set(&e, PVE_ERR_INTERNAL, "failed");
		map_fail(m, &e);
	}
}

int jobpool_map(const struct pve_opts *po, struct pve *c, unsigned parallel, size_t n,
		int (*fn)(void *ctx, size_t i, struct pve *c, struct pve_error *err), void *ctx,
		struct pve_error *err)
{
	struct map m = {.fn = fn, .ctx = ctx};
	struct map_call *calls = calloc(n + 1, sizeof *calls);
	struct jobpool_opts o = {.workers = po ? parallel : 1, .po = po, .c = c};
	struct jobpool *p = calls ? jobpool_new(&o) : NULL;
	if (!p || pthread_mutex_init(&m.mu, NULL) != 0) {
		jobpool_free(p);
		free(calls);
		return pve_error_oom(err);
	}
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		calls[i] = (struct map_call){&m, i};
		struct jobpool_item it = {.run = map_run, .arg = &calls[i]};
		if (jobpool_add(p, &it) < 0)
			rc = pve_error_oom(err);
	}
	if (rc == 0) {
		jobpool_run(p);
		if (m.failed) {
			pve_error_move(err, &m.err);
			rc = -1;
		}
	}
	jobpool_free(p);
	pthread_mutex_destroy(&m.mu);
	pve_error_clear(&m.err);
	free(calls);
	return rc;
}
