/* test_jobpool.c - the one thread pool (agent/jobpool.c) on jobq's rule:
 * K in flight and at most N per node at once (items wait for each other
 * to prove the pool reaches that and never more), one at a time per guest
 * in the order added, an item whose latest start has passed is handed to
 * late instead of run, a stop starts nothing more, and jobpool_map stops
 * at the first failure. No PVE is contacted: the workers' clients are
 * made but never used. */
#include <criterion/criterion.h>

#include "jobpool.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

static const struct pve_opts OPTS = {.url = "https://127.0.0.1:9", .token_id = "t@pam!x",
				     .token_secret = "3f2e1d0c-b9a8-4765-8432-10fedcba9876"};

struct world {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned in_flight, max_in_flight, on[2], max_on[2], left, peak;
	char order[32];
	size_t n_order;
	bool bad_client;
};

struct item {
	struct world *w;
	int node;       /* 0 or 1 */
	char tag;
};

/* Wait (bounded) until the pool has `peak` in flight, or fewer remain. */
static void run(void *arg, struct pve *c, const struct pve_error *no_client)
{
	struct item *it = arg;
	struct world *w = it->w;
	pthread_mutex_lock(&w->mu);
	w->bad_client |= !c || no_client;
	w->in_flight++;
	w->on[it->node]++;
	if (w->in_flight > w->max_in_flight)
		w->max_in_flight = w->in_flight;
	if (w->on[it->node] > w->max_on[it->node])
		w->max_on[it->node] = w->on[it->node];
	w->order[w->n_order++] = it->tag;
	pthread_cond_broadcast(&w->cv);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10; /* a bound, should the pool never get there */
	while (w->in_flight < w->peak && w->in_flight < w->left)
		if (pthread_cond_timedwait(&w->cv, &w->mu, &until) != 0)
			break;
	w->in_flight--;
	w->on[it->node]--;
	w->left--;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void world_init(struct world *w, unsigned items, unsigned peak)
{
	memset(w, 0, sizeof *w);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->left = items;
	w->peak = peak;
}

static void world_fini(struct world *w)
{
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
}

Test(jobpool, k_in_flight_at_most_n_per_node)
{
	struct world w;
	world_init(&w, 12, 4);
	struct jobpool_opts o = {.workers = 4, .node_jobs = 2, .po = &OPTS};
	struct jobpool *p = jobpool_new(&o);
	cr_assert_not_null(p);
	struct item items[12];
	const char *nodes[] = {"pve1", "pve2"};
	for (int i = 0; i < 12; i++) {
		/* pve1 gets 8, pve2 4: pve1 never has more than 2 at once */
		items[i] = (struct item){&w, i % 3 == 2, (char)('a' + i)};
		struct jobpool_item it = {.node = nodes[items[i].node], .run = run, .arg = &items[i]};
		cr_assert_eq(jobpool_add(p, &it), 0);
	}
	jobpool_run(p);
	jobpool_free(p);
	cr_expect_eq(w.n_order, 12);
	cr_expect_eq(w.max_in_flight, 4);
	cr_expect_eq(w.max_on[0], 2);
	cr_expect_eq(w.max_on[1], 2);
	cr_expect_not(w.bad_client, "each worker has a client of its own");
	world_fini(&w);
}

Test(jobpool, one_at_a_time_per_guest_in_order)
{
	struct world w;
	world_init(&w, 6, 1); /* nothing waits for company */
	struct jobpool_opts o = {.workers = 4, .po = &OPTS};
	struct jobpool *p = jobpool_new(&o);
	struct item items[6];
	for (int i = 0; i < 6; i++) {
		items[i] = (struct item){&w, 0, (char)('a' + i)};
		struct jobpool_item it = {.guest = "web1", .run = run, .arg = &items[i]};
		cr_assert_eq(jobpool_add(p, &it), 0);
	}
	jobpool_run(p);
	jobpool_free(p);
	cr_expect_eq(w.max_in_flight, 1);
	w.order[w.n_order] = '\0';
	cr_expect_str_eq(w.order, "abcdef");
	world_fini(&w);
}

/* ---- latest starts and stops ----------------------------------------------------- */

static double fake_now(void *ctx)
{
	return *(double *)ctx;
}

struct timed {
	double *now;
	double advance;     /* what its run takes, on the fake clock */
	char tag;
	char *log;
	size_t *n;
	volatile sig_atomic_t *stop;
	bool stop_after;
};

static void timed_run(void *arg, struct pve *c, const struct pve_error *no_client)
{
	struct timed *t = arg;
	*t->now += t->advance; /* one worker: no other thread reads it now */
	t->log[(*t->n)++] = t->tag;
	if (t->stop_after)
		*t->stop = 1;
}

static void timed_late(void *arg, double now)
{
	struct timed *t = arg;
	t->log[(*t->n)++] = (char)(t->tag - 'a' + 'A'); /* late: upper case */
	cr_expect_geq(now, 10.0);
}

Test(jobpool, a_latest_start_passed_is_late_not_run_and_a_stop_starts_nothing)
{
	double now = 0;
	struct pve_clock clk = {.now = fake_now, .ctx = &now};
	char log[16] = {0};
	size_t n = 0;
	volatile sig_atomic_t stop = 0;
	struct jobpool_opts o = {.workers = 1, .clock = &clk, .stop = &stop};
	struct jobpool *p = jobpool_new(&o);
	/* a takes 8 s, b 4 s (ends at 12), c must start by 10: late */
	struct timed t[5] = {
		{&now, 8, 'a', log, &n, &stop, false}, {&now, 4, 'b', log, &n, &stop, false},
		{&now, 1, 'c', log, &n, &stop, false}, {&now, 1, 'd', log, &n, &stop, true},
		{&now, 1, 'e', log, &n, &stop, false},
	};
	double start_by[5] = {0, 9, 10, 0, 0};
	for (int i = 0; i < 5; i++) {
		struct jobpool_item it = {.run = timed_run, .late = timed_late, .arg = &t[i],
					  .timed = start_by[i] > 0, .start_by = start_by[i]};
		cr_assert_eq(jobpool_add(p, &it), 0);
	}
	jobpool_run(p);
	jobpool_free(p);
	/* d asks for the stop: e never starts */
	cr_expect_str_eq(log, "abCd");
}

/* ---- jobpool_map ---------------------------------------------------------------- */

struct mapped {
	pthread_mutex_t mu;
	unsigned calls;
	bool seen[64];
};

static int square(void *ctx, size_t i, struct pve *c, struct pve_error *err)
{
	struct mapped *m = ctx;
	pthread_mutex_lock(&m->mu);
	m->calls++;
	m->seen[i] = c != NULL;
	pthread_mutex_unlock(&m->mu);
	if (i == 40) {
		pve_error_set(err, PVE_ERR_NOT_FOUND, "item %zu is gone", i);
		return -1;
	}
	return 0;
}

Test(jobpool, map_reads_all_with_a_bound_and_stops_at_the_first_failure)
{
	struct mapped m = {.calls = 0};
	pthread_mutex_init(&m.mu, NULL);
	struct pve_error e = {0};
	cr_expect_eq(jobpool_map(&OPTS, NULL, JOBPOOL_READS, 40, square, &m, &e), 0);
	cr_expect_eq(m.calls, 40);
	for (int i = 0; i < 40; i++)
		cr_expect(m.seen[i], "item %d ran with a client", i);
	m.calls = 0;
	cr_expect_eq(jobpool_map(&OPTS, NULL, 1, 64, square, &m, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_NOT_FOUND);
	cr_expect_str_eq(e.message, "item 40 is gone");
	cr_expect_eq(m.calls, 41, "one worker: nothing after the failure");
	pve_error_clear(&e);
	pthread_mutex_destroy(&m.mu);
}
