/* job.c - the job engine (see job.h): running a workflow's step table with
 * every step's state persisted before and after it runs, UPIDs recorded
 * through the guest task hooks, resume at the first unfinished step,
 * stop between steps (and a stop clock that ends waits at once), undo on
 * failure, events, and the in-process runner of several jobs. */
#include "job.h"

#include "log.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


struct job {
	const struct job_workflow *wf;
	struct job_env *env;
	long long id;
	char *subject;
	json_object *params;
	json_object *vars;
	enum job_state state;
	double created, started, ended;
	struct store_step *steps;     /* wf->n_steps */
	double *elapsed;              /* per step, seconds */
	bool *dirty;                  /* per step: changed since it was stored */
	size_t cur;
	void *ctx;
	bool ctx_open;
	struct pve *pve;
	struct pve_error err;
	enum job_outcome outcome;
	char *left;
	size_t left_step;             /* the step (or undo) that set left */
	char *summary;
	bool resumed;
	int vmid;
	char *node;
	double step_t0;               /* monotonic start of the current step */
	/* the last task percentage passed on in this step (< 0: none yet)
	   and when (the job's clock): what on_wait_progress thins out */
	double prog_pct, prog_at;
	/* guest waits of the current step */
	struct guest_wait wait;
	struct guest_task_hooks hooks;
	bool resume_upid_taken, resume_unknown_taken;
	struct store_job_lock *lock;  /* held while this process runs it */
};

/* ---- environment and the stop clock ------------------------------------------------ */

static bool env_stopping(const struct job_env *env)
{
	return env->stop && *env->stop;
}

/* Once a stop is asked for, time jumps a day ahead and sleeps return at
 * once, so that every bounded wait (tasks, locks, addresses, SSH) ends
 * now and its step fails as interrupted, with its UPID recorded. */
#define STOP_JUMP_S 86400.0

static double stop_now(void *ctx)
{
	struct job_env *env = ctx;
	double t = pve_clock_now(env->clock);
	return env_stopping(env) ? t + STOP_JUMP_S : t;
}

static void stop_sleep(void *ctx, double s)
{
	struct job_env *env = ctx;
	/* sleep in slices so that a stop is seen within 50 ms; on the real
	 * clock up to a deadline, so that late wakeups (a busy machine) do not
	 * add up over the slices of a long wait */
	double end = env->clock ? 0 : pve_clock_now(NULL) + s;
	while (s > 0 && !env_stopping(env)) {
		double d = s < 0.05 ? s : 0.05;
		pve_clock_sleep(env->clock, d);
		s = env->clock ? s - d : end - pve_clock_now(NULL);
	}
}

struct pve_opts job_conf_pve_opts(const struct conf *c)
{
	struct pve_opts o = {
		.url = c->pve.url,
		.token_id = c->pve.token_id,
		.token_secret = c->pve.token_secret,
		.user = c->pve.user,
		.password = c->pve.password,
		.fingerprint = c->pve.fingerprint,
		.ca_file = c->pve.ca_file,
		.insecure = c->pve.insecure != 0,
		.timeout_ms = (long)c->pve.timeout * 1000,
	};
	return o;
}

int job_env_init(struct job_env *env)
{
	if (pthread_mutex_init(&env->mu, NULL) != 0)
		return -1;
	env->stop_clock.now = stop_now;
	env->stop_clock.sleep = stop_sleep;
	env->stop_clock.ctx = env;
	return 0;
}

void job_env_fini(struct job_env *env)
{
	pthread_mutex_destroy(&env->mu);
}

/* ---- persistence --------------------------------------------------------------------- */

static char *err_json_text(const struct pve_error *e)
{
	if (!e || e->kind == PVE_OK)
		return NULL;
	json_object *o = pve_error_to_json(e);
	char *s = o ? strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) : NULL;
	json_object_put(o);
	return s;
}

/* Store failures are logged, not fatal to the job in hand: the work on
 * PVE matters more than its record. */
static void store_warn(struct job *j, const char *what, char *serr)
{
	log_warn("job %lld: cannot record %s: %s", j->id, what, serr ? serr : "?");
	free(serr);
}

static int save_job(struct job *j)
{
	if (!j->env->store || !j->id)
		return 0;
	char *error = err_json_text(&j->err);
	if (j->left) {
		/* what is left goes into the error's detail for `pvagent job` */
		json_object *o = error ? json_tokener_parse(error) : json_object_new_object();
		if (o) {
			json_object_object_add(o, "left", json_object_new_string(j->left));
			free(error);
			error = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
			json_object_put(o);
		}
	}
	struct store_job sj = {
		.id = j->id,
		.state = j->state,
		.vars = (char *)json_object_to_json_string_ext(j->vars, JSON_C_TO_STRING_PLAIN),
		.error = error,
		.started = j->started,
		.ended = j->ended,
		.pid = j->state == JOB_RUNNING ? (long)getpid() : 0,
	};
	char *serr = NULL;
	int rc = store_job_update(j->env->store, &sj, &serr);
	free(error);
	if (rc < 0)
		store_warn(j, "the job", serr);
	return rc;
}

static int save_step(struct job *j, size_t i)
{
	j->dirty[i] = false;
	if (!j->env->store || !j->id)
		return 0;
	char *serr = NULL;
	int rc = store_step_put(j->env->store, j->id, &j->steps[i], &serr);
	if (rc < 0)
		store_warn(j, "a step", serr);
	return rc;
}

static bool tx_begin_as(struct job *j, bool durable)
{
	if (!j->env->store || !j->id)
		return false;
	char *serr = NULL;
	if (store_tx_begin(j->env->store, durable, &serr) < 0) {
		store_warn(j, "a transaction", serr);
		return false;
	}
	return true;
}

static bool tx_begin(struct job *j)
{
	return tx_begin_as(j, false);
}

static void tx_commit(struct job *j)
{
	char *serr = NULL;
	if (store_tx_commit(j->env->store, &serr) < 0)
		store_warn(j, "a step", serr);
}

int job_save(struct job *j)
{
	return save_job(j);
}

/* ---- events ------------------------------------------------------------------------------- */

static pthread_mutex_t tap_mu = PTHREAD_MUTEX_INITIALIZER;
static job_event_fn tap_fn;
static void *tap_ctx;

void job_event_tap(job_event_fn fn, void *ctx)
{
	pthread_mutex_lock(&tap_mu);
	tap_fn = fn;
	tap_ctx = ctx;
	pthread_mutex_unlock(&tap_mu);
}

static void emit_ev(struct job *j, enum job_ev_kind kind, const char *step, double elapsed,
		    double pct, const char *text, const char *path, const void *result)
{
	struct job_event ev = {
		.kind = kind,
		.job = j->id,
		.workflow = j->wf->name,
		.name = j->subject,
		.vmid = j->vmid,
		.node = j->node,
		.step = step,
		.elapsed_s = elapsed,
		.percent = pct,
		.text = text,
		.path = path,
		.time = clock_unix_now(),
		.result = result,
	};
	struct job_env *env = j->env;
	pthread_mutex_lock(&env->mu);
	if (env->on_event)
		env->on_event(env->event_ctx, &ev);
	pthread_mutex_unlock(&env->mu);
	pthread_mutex_lock(&tap_mu);
	if (tap_fn)
		tap_fn(tap_ctx, &ev);
	pthread_mutex_unlock(&tap_mu);
	/* percentages come and go; the store keeps what was said */
	if (env->store && j->id && (kind != JOB_EV_PROGRESS || (text && pct < 0))) {
		struct store_event se = {
			.time = ev.time,
			.step = (char *)step,
			.kind = (char *)job_ev_kind_name(kind),
			.percent = kind == JOB_EV_PROGRESS ? pct : -1,
			.message = (char *)text,
		};
		char *serr = NULL;
		if (store_event_add(env->store, j->id, &se, &serr) < 0)
			store_warn(j, "an event", serr);
	}
}

static void emit(struct job *j, enum job_ev_kind kind, const char *step, double elapsed,
		 double pct, const char *text, const void *result)
{
	emit_ev(j, kind, step, elapsed, pct, text, NULL, result);
}

static void vemit(struct job *j, enum job_ev_kind kind, double pct, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
static void vemit(struct job *j, enum job_ev_kind kind, double pct, const char *fmt, va_list ap)
{
	struct sbuf b = {0};
	if (sbuf_vaddf(&b, fmt, ap) == 0)
		emit(j, kind, j->wf->steps[j->cur].name, 0, pct, sbuf_str(&b), NULL);
	sbuf_free(&b);
}

void job_progress(struct job *j, double percent, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vemit(j, JOB_EV_PROGRESS, percent, fmt, ap);
	va_end(ap);
}

void job_note(struct job *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vemit(j, JOB_EV_NOTE, -1, fmt, ap);
	va_end(ap);
}

void job_diff(struct job *j, const char *text)
{
	emit(j, JOB_EV_DIFF, j->wf->steps[j->cur].name, 0, -1, text, NULL);
}

void job_file_diff(struct job *j, const char *path, const char *diff)
{
	emit_ev(j, JOB_EV_DIFF, j->wf->steps[j->cur].name, 0, -1, diff, path, NULL);
}

void job_summary(struct job *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct sbuf b = {0};
	free(j->summary);
	j->summary = sbuf_vaddf(&b, fmt, ap) == 0 ? sbuf_steal(&b) : NULL;
	sbuf_free(&b);
	va_end(ap);
}

void job_set_left(struct job *j, const char *fmt, ...)
{
	free(j->left);
	j->left = NULL;
	j->left_step = j->cur;
	if (!fmt)
		return;
	va_list ap;
	va_start(ap, fmt);
	struct sbuf b = {0};
	j->left = sbuf_vaddf(&b, fmt, ap) == 0 ? sbuf_steal(&b) : NULL;
	sbuf_free(&b);
	va_end(ap);
}

struct pve_error *job_err(struct job *j)
{
	return &j->err;
}

enum step_rc job_fail(struct job *j, enum pve_err_kind kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct sbuf b = {0};
	if (sbuf_vaddf(&b, fmt, ap) == 0)
		pve_error_set(&j->err, kind, "%s", sbuf_str(&b));
	else
		pve_error_oom(&j->err);
	sbuf_free(&b);
	va_end(ap);
	return STEP_RC_FAIL;
}

enum step_rc job_fail_outcome(struct job *j, enum job_outcome o, const char *msg)
{
	o = job_outcome_failure(o);
	enum pve_err_kind k = o == JOB_OUT_USAGE	     ? PVE_ERR_CONFIG
			      : o == JOB_OUT_UNREACHABLE ? PVE_ERR_CONNECT
							 : PVE_ERR_API;
	pve_error_set(&j->err, k, "%s", msg ? msg : "failed");
	j->err.ambiguous = o == JOB_OUT_NEEDS_ATTENTION;
	return STEP_RC_FAIL;
}

/* ---- accessors ------------------------------------------------------------------------------ */

long long job_id(const struct job *j) { return j->id; }
const char *job_subject(const struct job *j) { return j->subject; }
const struct job_workflow *job_wf(const struct job *j) { return j->wf; }
enum job_state job_state(const struct job *j) { return j->state; }
enum job_outcome job_outcome(const struct job *j) { return j->outcome; }
const struct pve_error *job_error(const struct job *j) { return &j->err; }
const char *job_left(const struct job *j) { return j->left; }
bool job_resumed(const struct job *j) { return j->resumed; }
int job_vmid(const struct job *j) { return j->vmid; }
const char *job_node(const struct job *j) { return j->node; }
void *job_ctx(struct job *j) { return j->ctx; }
struct pve *job_pve(struct job *j) { return j->pve; }
struct job_env *job_env(struct job *j) { return j->env; }
json_object *job_params(struct job *j) { return j->params; }
json_object *job_vars(struct job *j) { return j->vars; }

/* ---- its params, by the workflow's table ----------------------------------------------------- */

/* Member key of the params, when the table declares it (else logged: a
 * read the table does not know of is a programming error). */
static json_object *param(struct job *j, const char *key)
{
	json_object *v = NULL;
	if (j->wf->params && !job_param_find(j->wf->params, key))
		log_error("%s: param \"%s\" is not declared (wf_params.c)", j->wf->name, key);
	return json_object_object_get_ex(j->params, key, &v) ? v : NULL;
}

const char *job_param_str(struct job *j, const char *key)
{
	json_object *v = param(j, key);
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

long long job_param_int(struct job *j, const char *key)
{
	json_object *v = param(j, key);
	return json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
}

double job_param_num(struct job *j, const char *key)
{
	json_object *v = param(j, key);
	return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)
		       ? json_object_get_double(v) : 0;
}

bool job_param_bool(struct job *j, const char *key)
{
	json_object *v = param(j, key);
	return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

int job_param_kv(struct job *j, const char *key, struct tmpl_kvlist *l)
{
	(void)param(j, key);
	return job_params_kv(j->params, key, l);
}

json_object *job_param_list(struct job *j, const char *key)
{
	json_object *v = param(j, key);
	return json_object_is_type(v, json_type_array) ? v : NULL;
}

/* The params checked by the workflow's table: 0, or -1 with err
 * (PVE_ERR_CONFIG). */
static int check_params(const struct job_workflow *wf, const char *subject, json_object *params,
			struct pve_error *err)
{
	char *why = NULL;
	if (!wf->params || job_params_check(wf->params, subject, params, false, &why) == 0)
		return 0;
	pve_error_set(err, PVE_ERR_CONFIG, "%s", why ? why : "out of memory");
	free(why);
	return -1;
}
bool job_stopping(const struct job *j) { return env_stopping(j->env); }

const struct store_step *job_steps(const struct job *j, size_t *n)
{
	*n = j->wf->n_steps;
	return j->steps;
}

const char *job_failed_step(const struct job *j)
{
	bool interrupted = job_outcome(j) == JOB_OUT_INTERRUPTED;
	for (size_t i = 0; i < j->wf->n_steps; i++)
		if (j->steps[i].state == STEP_FAILED ||
		    (interrupted && j->steps[i].state == STEP_RUNNING))
			return j->steps[i].name;
	return NULL;
}

double job_step_elapsed(const struct job *j, size_t i)
{
	return i < j->wf->n_steps ? j->elapsed[i] : 0;
}

const char *job_step_upid(const struct job *j)
{
	return j->steps[j->cur].upid;
}

int job_step_attempts(const struct job *j)
{
	return j->steps[j->cur].attempts;
}

void job_step_resumed_task_done(struct job *j)
{
	j->resume_upid_taken = true;
	j->resume_unknown_taken = true;
}

int job_set_guest(struct job *j, int vmid, const char *node)
{
	j->vmid = vmid;
	if (node && (!j->node || strcmp(j->node, node) != 0)) {
		char *n = strdup(node);
		if (!n)
			return -1;
		free(j->node);
		j->node = n;
	}
	if (vmid && (job_set_int(j, "vmid", vmid) < 0))
		return -1;
	return j->node ? job_set_str(j, "node", j->node) : 0;
}

/* ---- typed members ---------------------------------------------------------------------------- */

static int set_member(struct job *j, const char *key, json_object *v)
{
	if (!v)
		return -1;
	return json_object_object_add(j->vars, key, v) == 0 ? 0 : -1;
}

int job_set_str(struct job *j, const char *key, const char *v)
{
	if (!v) {
		json_object_object_del(j->vars, key);
		return 0;
	}
	return set_member(j, key, json_object_new_string(v));
}

int job_set_int(struct job *j, const char *key, long long v)
{
	return set_member(j, key, json_object_new_int64(v));
}

int job_set_bool(struct job *j, const char *key, bool v)
{
	return set_member(j, key, json_object_new_boolean(v));
}

/* ---- guest waits and task hooks ------------------------------------------------------------ */

/* A task's percentages (a clone's log says one per 1%) are passed on at
 * most once per PROGRESS_PCT points or PROGRESS_S seconds of the job's
 * clock: the first, the 100% and one that starts again lower (the next
 * disk) always. */
#define PROGRESS_PCT 5.0
#define PROGRESS_S 1.0

static void on_wait_progress(void *ctx, const char *step, double pct, const char *text)
{
	struct job *j = ctx;
	(void)step; /* guest.c's sub-step ("lock", "clone"): the job's step is the one */
	if (pct >= 0) {
		double now = pve_clock_now(j->env->clock);
		if (j->prog_pct >= 0 && pct < 100 && pct >= j->prog_pct &&
		    pct - j->prog_pct < PROGRESS_PCT && now - j->prog_at < PROGRESS_S)
			return;
		j->prog_pct = pct;
		j->prog_at = now;
	}
	emit(j, JOB_EV_PROGRESS, j->wf->steps[j->cur].name, 0, pct, text, NULL);
}

static void hook_sending(void *ctx, int vmid)
{
	struct job *j = ctx;
	struct store_step *st = &j->steps[j->cur];
	st->attempts++;
	free(st->upid);
	st->upid = NULL;
	char at[64];
	snprintf(at, sizeof at, "%s_sent_at", j->wf->steps[j->cur].name);
	json_object_object_add(j->vars, at, json_object_new_double(clock_unix_now()));
	if (vmid > 0) {
		/* a create's candidate VMID: what a resumed step looks at */
		char key[64];
		snprintf(key, sizeof key, "%s_vmid", j->wf->steps[j->cur].name);
		if (job_set_int(j, key, vmid) < 0)
			pve_error_oom(&j->err);
	}
	/* the vars and the step in one commit, on disk before the request goes
	 * out */
	bool tx = tx_begin_as(j, true);
	save_job(j);
	save_step(j, j->cur);
	if (tx)
		tx_commit(j);
}

static void hook_started(void *ctx, const char *upid)
{
	struct job *j = ctx;
	struct store_step *st = &j->steps[j->cur];
	char *u = strdup(upid);
	if (!u)
		return;
	free(st->upid);
	st->upid = u;
	save_step(j, j->cur);
}

/* A synchronous answer: the step's last request is no longer on its way
 * (a resumed job need not wait for it). */
static void hook_answered(void *ctx)
{
	struct job *j = ctx;
	char at[64];
	snprintf(at, sizeof at, "%s_sent_at", j->wf->steps[j->cur].name);
	json_object_object_del(j->vars, at);
	save_job(j);
}

static char *hook_resume_upid(void *ctx)
{
	struct job *j = ctx;
	const char *u = j->steps[j->cur].upid;
	if (j->resume_upid_taken || !u)
		return NULL;
	j->resume_upid_taken = true;
	return strdup(u);
}

static bool hook_resume_unknown(void *ctx)
{
	struct job *j = ctx;
	if (j->resume_unknown_taken)
		return false;
	j->resume_unknown_taken = true;
	return j->steps[j->cur].attempts > 0 && !j->steps[j->cur].upid;
}

static double hook_resume_sent_at(void *ctx)
{
	struct job *j = ctx;
	char at[64];
	snprintf(at, sizeof at, "%s_sent_at", j->wf->steps[j->cur].name);
	json_object *v;
	return json_object_object_get_ex(j->vars, at, &v) ? json_object_get_double(v) : 0;
}

void job_settle(struct job *j)
{
	double sent = hook_resume_sent_at(j);
	if (sent > 0 && j->pve)
		guest_settle(j->pve, &j->wait, sent);
}

/* A resumed job: any step whose last request went out unanswered (sent,
 * no UPID) may see it land yet, whichever step runs first now (an undo
 * killed half way leaves its requests on the step it undid): wait for
 * them before any step looks at PVE. */
static void settle_unanswered(struct job *j)
{
	struct guest_wait w = j->env->wait;
	w.clock = &j->env->stop_clock;
	for (size_t i = 0; j->pve && i < j->wf->n_steps; i++) {
		if (j->steps[i].attempts <= 0 || j->steps[i].upid)
			continue;
		char at[64];
		snprintf(at, sizeof at, "%s_sent_at", j->wf->steps[i].name);
		json_object *v;
		if (json_object_object_get_ex(j->vars, at, &v))
			guest_settle(j->pve, &w, json_object_get_double(v));
	}
}

const struct guest_wait *job_wait(struct job *j)
{
	return &j->wait;
}

/* interrupted: the step was running when its process stopped; its
 * recorded UPID or unanswered request is looked at before sending again. A
 * step that failed, or runs afresh, has nothing to resume. */
static void step_wait_init(struct job *j, bool interrupted)
{
	j->wait = j->env->wait;
	j->wait.clock = &j->env->stop_clock;
	j->wait.progress = on_wait_progress;
	j->wait.progress_ctx = j;
	j->prog_pct = -1;
	j->hooks = (struct guest_task_hooks){
		.sending = hook_sending,
		.started = hook_started,
		.answered = hook_answered,
		.resume_upid = hook_resume_upid,
		.resume_unknown = hook_resume_unknown,
		.resume_sent_at = hook_resume_sent_at,
		.ctx = j,
	};
	j->wait.hooks = (j->wf->steps[j->cur].flags & JOB_STEP_TASK) ? &j->hooks : NULL;
	bool resumed = interrupted && j->steps[j->cur].attempts > 0;
	j->resume_upid_taken = !resumed;
	j->resume_unknown_taken = !resumed;
}

/* ---- the job's lock -------------------------------------------------------------------------- */

/* Hold the job's lock (store.h) from now until it ends here: 0, or -1
 * with the error set (another process runs it: PVE_ERR_LOCKED naming
 * it). A job that is not stored has none. */
static int take_lock(struct job *j, struct pve_error *err)
{
	if (j->lock || !j->env->store || !j->id)
		return 0;
	long holder = 0;
	char *serr = NULL;
	int r = store_job_lock(j->env->store, j->id, &j->lock, &holder, &serr);
	if (r == 1)
		return 0;
	if (r == 0)
		pve_error_set(err, PVE_ERR_LOCKED, "%s: %s job %lld is running in process %ld",
			      j->subject, j->wf->name, j->id, holder);
	else
		pve_error_set(err, PVE_ERR_INTERNAL, "%s", serr ? serr : "cannot lock the job");
	free(serr);
	return -1;
}

static void drop_lock(struct job *j)
{
	store_job_unlock(j->lock);
	j->lock = NULL;
}

/* ---- making and loading ------------------------------------------------------------------------ */

/* Free what a step record holds and zero it. */
static void step_rec_clear(struct store_step *st)
{
	free(st->name);
	free(st->upid);
	free(st->result);
	free(st->error);
	memset(st, 0, sizeof *st);
}

static struct job *job_alloc(struct job_env *env, const struct job_workflow *wf)
{
	struct job *j = calloc(1, sizeof *j);
	if (!j)
		return NULL;
	j->env = env;
	j->wf = wf;
	j->steps = calloc(wf->n_steps ? wf->n_steps : 1, sizeof *j->steps);
	j->elapsed = calloc(wf->n_steps ? wf->n_steps : 1, sizeof *j->elapsed);
	j->dirty = calloc(wf->n_steps ? wf->n_steps : 1, sizeof *j->dirty);
	j->ctx = calloc(1, wf->ctx_size ? wf->ctx_size : 1);
	if (!j->steps || !j->ctx || !j->elapsed || !j->dirty) {
		free(j->steps);
		free(j->elapsed);
		free(j->dirty);
		free(j->ctx);
		free(j);
		return NULL;
	}
	for (size_t i = 0; i < wf->n_steps; i++)
		j->steps[i].idx = (int)i;
	return j;
}

int job_new(struct job_env *env, const struct job_workflow *wf, const char *subject,
	    json_object *params, struct job **out, struct pve_error *err)
{
	*out = NULL;
	struct job *j = job_alloc(env, wf);
	if (!j || !(j->subject = strdup(subject ? subject : ""))) {
		job_free(j);
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	j->params = params ? json_object_get(params) : json_object_new_object();
	j->vars = json_object_new_object();
	j->created = clock_unix_now();
	for (size_t i = 0; i < wf->n_steps; i++)
		j->steps[i].name = strdup(wf->steps[i].name);
	if (env->store) {
		char *serr = NULL;
		const char *text = json_object_to_json_string_ext(j->params, JSON_C_TO_STRING_PLAIN);
		if (store_job_insert(env->store, wf->name, j->subject, text, j->created, &j->id,
				     &serr) < 0) {
			pve_error_set(err, PVE_ERR_INTERNAL, "%s", serr ? serr : "cannot store the job");
			free(serr);
			job_free(j);
			return -1;
		}
		/* a new job is this process's from the start */
		if (take_lock(j, err) < 0) {
			job_free(j);
			return -1;
		}
	}
	*out = j;
	return 0;
}

int job_load(struct job_env *env, long long id, const struct job_workflow *wf, struct job **out,
	     struct pve_error *err)
{
	*out = NULL;
	if (!env->store) {
		pve_error_set(err, PVE_ERR_CONFIG, "no state store to load job %lld from", id);
		return -1;
	}
	struct store_job sj;
	char *serr = NULL;
	int r = store_job_get(env->store, id, &sj, &serr);
	if (r <= 0) {
		if (r < 0)
			pve_error_set(err, PVE_ERR_INTERNAL, "%s", serr ? serr : "store");
		free(serr);
		return r;
	}
	if (strcmp(sj.workflow, wf->name) != 0) {
		pve_error_set(err, PVE_ERR_INTERNAL, "job %lld is a %s job, not %s", id, sj.workflow,
			      wf->name);
		store_job_free(&sj);
		return -1;
	}
	struct job *j = job_alloc(env, wf);
	struct store_step *steps = NULL;
	size_t n = 0;
	if (!j) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		store_job_free(&sj);
		return -1;
	}
	j->id = id;
	j->subject = sj.subject;
	sj.subject = NULL;
	j->params = json_tokener_parse(sj.params ? sj.params : "{}");
	j->vars = json_tokener_parse(sj.vars ? sj.vars : "{}");
	j->state = sj.state;
	j->created = sj.created;
	j->started = sj.started;
	j->ended = sj.ended;
	if (sj.error) {
		json_object *eo = json_tokener_parse(sj.error);
		pve_error_from_json(eo, &j->err);
		const char *left = json_str(eo, "left");
		if (left)
			j->left = strdup(left);
		json_object_put(eo);
	}
	store_job_free(&sj);
	if (!json_object_is_type(j->params, json_type_object) ||
	    !json_object_is_type(j->vars, json_type_object)) {
		pve_error_set(err, PVE_ERR_INTERNAL, "job %lld: params or vars are not JSON objects",
			      id);
		job_free(j);
		return -1;
	}
	if (store_steps_get(env->store, id, &steps, &n, &serr) < 0) {
		pve_error_set(err, PVE_ERR_INTERNAL, "%s", serr ? serr : "store");
		free(serr);
		job_free(j);
		return -1;
	}
	for (size_t i = 0; i < wf->n_steps; i++)
		j->steps[i].name = strdup(wf->steps[i].name);
	for (size_t i = 0; i < n; i++) {
		int k = steps[i].idx;
		if (k < 0 || (size_t)k >= wf->n_steps || strcmp(steps[i].name, wf->steps[k].name) != 0)
			continue; /* a step this version does not have */
		struct store_step *d = &j->steps[k];
		step_rec_clear(d);
		*d = steps[i];
		memset(&steps[i], 0, sizeof steps[i]);
		if (d->ended > d->started && d->started > 0)
			j->elapsed[k] = d->ended - d->started;
	}
	store_steps_free(steps, n);
	long long vmid = 0;
	if (json_int(j->vars, "vmid", &vmid))
		j->vmid = (int)vmid;
	const char *node = json_str(j->vars, "node");
	j->node = node ? strdup(node) : NULL;
	*out = j;
	return 1;
}

int job_load_child(struct job *parent, long long id, const struct job_workflow *wf,
		   struct job **out)
{
	*out = NULL;
	if (id <= 0 || !parent->env->store)
		return 0;
	int r = job_load(parent->env, id, wf, out, &parent->err);
	if (r == 1 && ((*out)->state == JOB_FAILED || (*out)->state == JOB_CANCELLED)) {
		job_free(*out);
		*out = NULL;
		r = 0;
	}
	return r;
}

void job_free(struct job *j)
{
	if (!j)
		return;
	if (j->ctx_open && j->wf->close)
		j->wf->close(j, j->ctx);
	free(j->ctx);
	if (j->steps) {
		for (size_t i = 0; i < j->wf->n_steps; i++)
			step_rec_clear(&j->steps[i]);
		free(j->steps);
	}
	free(j->elapsed);
	free(j->dirty);
	json_object_put(j->params);
	json_object_put(j->vars);
	pve_error_clear(&j->err);
	free(j->subject);
	free(j->left);
	free(j->summary);
	free(j->node);
	drop_lock(j);
	free(j);
}

/* ---- running ----------------------------------------------------------------------------------- */

static void step_set(struct job *j, size_t i, enum step_state s)
{
	struct store_step *st = &j->steps[i];
	st->state = s;
	if (s == STEP_RUNNING && st->started <= 0)
		st->started = clock_unix_now();
	if (s != STEP_RUNNING && s != STEP_PENDING)
		st->ended = clock_unix_now();
}

/* Store the steps changed since they were last stored. Step rows are
 * written with the next commit that matters (a step's end, the job's),
 * not when a step begins: a step stopped before it sent anything is run
 * afresh, and one that sent a request recorded that itself (the hooks). */
static void flush_steps(struct job *j)
{
	for (size_t i = 0; i < j->wf->n_steps; i++)
		if (j->dirty[i])
			save_step(j, i);
}

/* The job's end: its steps, its state and its last event in one commit. */
static enum job_outcome finish(struct job *j, enum job_state state, enum job_outcome outcome,
			       const char *word)
{
	j->state = state;
	j->outcome = outcome;
	if (state != JOB_INTERRUPTED)
		j->ended = clock_unix_now();
	bool tx = tx_begin(j);
	flush_steps(j);
	save_job(j);
	emit(j, JOB_EV_DONE, NULL, 0, -1, word, j->ctx);
	if (tx)
		tx_commit(j);
	drop_lock(j);
	return outcome;
}

/* The tests' step boundary: with PVAGENT_STOP_AFTER=WORKFLOW:STEP in the
 * environment, the process stops itself (SIGSTOP) right after that step's
 * end was committed, for a test to SIGKILL it at exactly that boundary
 * (tests/integration: test_cli_jobs.c, test_daemon.c, test_image.c).
 * Unset (always, outside tests): nothing. */
static void stop_after_hook(const struct job *j, const char *step)
{
	const char *v = getenv("PVAGENT_STOP_AFTER");
	size_t n = strlen(j->wf->name);
	if (v && strncmp(v, j->wf->name, n) == 0 && v[n] == ':' && strcmp(v + n + 1, step) == 0)
		raise(SIGSTOP);
}

/* Undo the done steps before index upto, last first. 0 when every undo
 * worked; *kept when one kept its step done. */
static int undo_steps(struct job *j, size_t upto, bool *kept)
{
	*kept = false;
	int rc = 0;
	for (size_t i = upto; i-- > 0;) {
		const struct job_step_def *d = &j->wf->steps[i];
		if (j->steps[i].state != STEP_DONE || !d->undo)
			continue;
		j->cur = i;
		step_wait_init(j, false);
		double t0 = pve_clock_now(j->env->clock);
		int ur = d->undo(j);
		if (ur < 0) {
			rc = -1;
			log_error("%s: undo of %s failed", j->subject, d->name);
			continue;
		}
		if (ur > 0) {
			*kept = true;
			continue; /* kept: still done */
		}
		step_set(j, i, STEP_UNDONE);
		j->dirty[i] = true;
		char *name = strprintf("undo %s", d->name);
		emit(j, JOB_EV_STEP, name ? name : d->name, pve_clock_now(j->env->clock) - t0, -1,
		     "undone", NULL);
		free(name);
	}
	return rc;
}

/* A loaded job, now that this process holds its lock: its state as stored
 * now (another process may have ended it since it was loaded). */
static int reread_state(struct job *j)
{
	struct store_job sj;
	char *serr = NULL;
	int r = store_job_get(j->env->store, j->id, &sj, &serr);
	if (r <= 0) {
		pve_error_set(&j->err, PVE_ERR_INTERNAL, "%s",
			      serr ? serr : "the job is gone from the store");
		free(serr);
		return -1;
	}
	j->state = sj.state;
	store_job_free(&sj);
	return 0;
}

enum job_outcome job_run(struct job *j, struct pve *c)
{
	const struct job_workflow *wf = j->wf;
	j->pve = c;
	j->resumed = j->state == JOB_INTERRUPTED || j->state == JOB_RUNNING ||
		     j->state == JOB_NEEDS_ATTENTION;
	bool had_lock = j->lock != NULL;
	if (job_state_open(j->state) && take_lock(j, &j->err) < 0)
		return j->outcome = pve_error_outcome(&j->err); /* another process's */
	if (!had_lock && j->lock && reread_state(j) < 0) {
		drop_lock(j);
		return j->outcome = pve_error_outcome(&j->err);
	}
	if (!job_state_open(j->state)) {
		/* finished already: report what it was */
		drop_lock(j);
		return j->outcome = j->state == JOB_DONE ? JOB_OUT_DONE
				  : j->state == JOB_NEEDS_ATTENTION ? JOB_OUT_NEEDS_ATTENTION
								    : pve_error_outcome(&j->err);
	}
	pve_error_clear(&j->err);
	free(j->left);
	j->left = NULL;
	j->state = JOB_RUNNING;
	if (j->started <= 0)
		j->started = clock_unix_now();
	if (!j->ctx_open && check_params(wf, j->subject, j->params, &j->err) < 0)
		/* a stored job's params its table refuses: a usage error */
		return finish(j, JOB_FAILED, JOB_OUT_USAGE, job_outcome_name(JOB_OUT_USAGE));
	if (!j->ctx_open && wf->open) {
		/* close frees what a failed open made, too */
		j->ctx_open = true;
		if (wf->open(j, j->ctx) < 0) {
			if (j->err.kind == PVE_OK)
				pve_error_set(&j->err, PVE_ERR_INTERNAL, "%s: cannot start", wf->name);
			return finish(j, JOB_FAILED, pve_error_outcome(&j->err),
				      job_outcome_name(pve_error_outcome(&j->err)));
		}
	}
	j->ctx_open = true;
	bool tx = tx_begin(j);
	save_job(j);
	emit(j, JOB_EV_BEGIN, NULL, 0, -1, j->resumed ? "resumed" : NULL, NULL);
	if (tx)
		tx_commit(j);
	if (j->resumed)
		settle_unanswered(j);
	size_t i = 0;
	while (i < wf->n_steps &&
	       (j->steps[i].state == STEP_DONE || j->steps[i].state == STEP_SKIPPED))
		i++;
	for (; i < wf->n_steps; i++) {
		const struct job_step_def *d = &wf->steps[i];
		j->cur = i;
		if (env_stopping(j->env))
			return finish(j, JOB_INTERRUPTED, JOB_OUT_INTERRUPTED, "interrupted");
		bool interrupted = j->steps[i].state == STEP_RUNNING;
		step_wait_init(j, interrupted);
		if (!interrupted) {
			/* a new try of a failed step: its old task is history */
			free(j->steps[i].upid);
			j->steps[i].upid = NULL;
		}
		step_set(j, i, STEP_RUNNING);
		j->dirty[i] = true;
		free(j->summary);
		j->summary = NULL;
		j->step_t0 = pve_clock_now(j->env->clock);
		emit(j, JOB_EV_PROGRESS, d->name, 0, -1, NULL, NULL); /* it starts */
		enum step_rc rc = d->run(j);
		double el = pve_clock_now(j->env->clock) - j->step_t0;
		if (rc == STEP_RC_FAIL && env_stopping(j->env)) {
			/* the stop ended its wait: run it again on resume (its UPID
			 * and send count are recorded) */
			log_debug("%s: step %s interrupted", j->subject, d->name);
			pve_error_clear(&j->err);
			j->dirty[i] = true;
			return finish(j, JOB_INTERRUPTED, JOB_OUT_INTERRUPTED, "interrupted");
		}
		if (rc == STEP_RC_FAIL) {
			j->elapsed[i] = el; /* its time counts in the result too */
			if (j->err.kind == PVE_OK)
				pve_error_set(&j->err, PVE_ERR_INTERNAL, "%s failed", d->name);
			free(j->steps[i].error);
			j->steps[i].error = err_json_text(&j->err);
			if ((d->flags & JOB_STEP_TASK) && j->steps[i].upid && j->err.ambiguous) {
				/* its task started and what became of it is unknown (a
				 * read failed after the UPID): nothing is undone, and the
				 * step stays running so that a resume waits for that
				 * task instead of sending again */
				if (!j->left)
					job_set_left(j, "task %s was started and its outcome is "
						     "unknown", j->steps[i].upid);
				j->dirty[i] = true;
				return finish(j, JOB_NEEDS_ATTENTION, JOB_OUT_NEEDS_ATTENTION,
					      "failed");
			}
			step_set(j, i, STEP_FAILED);
			j->dirty[i] = true;
			enum job_outcome out = pve_error_outcome(&j->err);
			if (wf->undo_on_failure && !(d->flags & JOB_STEP_NO_UNDO)) {
				struct pve_error saved = {0};
				bool kept;
				pve_error_move(&saved, &j->err);
				int ur = undo_steps(j, i, &kept);
				pve_error_move(&j->err, &saved);
				if (ur < 0)
					out = JOB_OUT_NEEDS_ATTENTION;
				else if (!kept && j->left && j->left_step < i) {
					/* what the done steps made, every undo removed:
					 * nothing is left */
					free(j->left);
					j->left = NULL;
				}
			}
			/* something left behind needs attention, unless the
			 * request was refused before (usage), or PVE never heard
			 * of the failing step's own request; what earlier steps
			 * made is left also when the cluster is lost (the same
			 * command resumes the job instead of starting again) */
			if (j->left && (out != JOB_OUT_UNREACHABLE || j->left_step < i) &&
			    !(out == JOB_OUT_USAGE && j->err.kind == PVE_ERR_CONFIG))
				out = JOB_OUT_NEEDS_ATTENTION;
			return finish(j, out == JOB_OUT_NEEDS_ATTENTION ? JOB_NEEDS_ATTENTION : JOB_FAILED,
				      out, "failed");
		}
		free(j->steps[i].result);
		j->steps[i].result = j->summary ? strdup(j->summary) : NULL;
		j->elapsed[i] = el;
		step_set(j, i, rc == STEP_RC_SKIP ? STEP_SKIPPED : STEP_DONE);
		j->dirty[i] = true;
		if (rc == STEP_RC_OK) {
			/* the step's end, the vars it learned and its event: one
			 * commit (a skipped step waits for the next one) */
			tx = tx_begin(j);
			flush_steps(j);
			save_job(j);
			emit(j, JOB_EV_STEP, d->name, el, -1, j->summary, NULL);
			if (tx)
				tx_commit(j);
			stop_after_hook(j, d->name);
		} else if (rc == STEP_RC_END) {
			emit(j, JOB_EV_STEP, d->name, el, -1, j->summary, NULL);
			for (size_t k = i + 1; k < wf->n_steps; k++) {
				step_set(j, k, STEP_SKIPPED);
				j->dirty[k] = true;
			}
			break;
		}
	}
	free(j->left);
	j->left = NULL;
	return finish(j, JOB_DONE, JOB_OUT_DONE, "done");
}

enum job_outcome job_fail_unrun(struct job *j, const struct pve_error *why)
{
	pve_error_set(&j->err, why && why->kind != PVE_OK ? why->kind : PVE_ERR_CONFIG, "%s",
		      why && why->message ? why->message : "no PVE connection");
	return finish(j, JOB_FAILED, pve_error_outcome(&j->err), "failed");
}

/* ---- the job for a request ---------------------------------------------------- */

int job_cancel_stored(struct store *s, struct store_job *sj, const char *why, char **err)
{
	struct store_job_lock *lk = NULL;
	long holder = 0;
	int r = store_job_lock(s, sj->id, &lk, &holder, err);
	if (r != 1)
		return r;
	if (why) {
		struct pve_error e = {0};
		pve_error_set(&e, PVE_ERR_NOT_FOUND, "%s", why);
		json_object *eo = pve_error_to_json(&e);
		char *text = eo ? strdup(json_object_to_json_string_ext(eo, JSON_C_TO_STRING_PLAIN))
				: NULL;
		json_object_put(eo);
		pve_error_clear(&e);
		if (!text) {
			store_job_unlock(lk);
			*err = strdup("out of memory");
			return -1;
		}
		free(sj->error);
		sj->error = text;
	}
	sj->state = JOB_CANCELLED;
	sj->ended = clock_unix_now();
	sj->pid = 0;
	r = store_job_update(s, sj, err) < 0 ? -1 : 1;
	store_job_unlock(lk);
	return r;
}

int job_for_subject(struct job_env *env, const struct job_workflow *wf, const char *subject,
		    json_object *params, struct job **out, struct pve_error *err)
{
	if (env->store) {
		struct store_job sj;
		char *serr = NULL;
		int r = store_job_find_open(env->store, wf->name, subject, &sj, &serr);
		if (r < 0) {
			pve_error_set(err, PVE_ERR_INTERNAL, "%s", serr ? serr : "store");
			free(serr);
			return -1;
		}
		if (r == 1) {
			const char *mine = json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN);
			long holder = 0;
			int free_now = store_job_resumable(env->store, &sj, &holder, &serr);
			bool same = sj.params && strcmp(sj.params, mine) == 0;
			long long id = sj.id;
			if (free_now <= 0) {
				if (free_now < 0)
					pve_error_set(err, PVE_ERR_INTERNAL, "%s", serr ? serr : "store");
				else
					pve_error_set(err, PVE_ERR_LOCKED,
						      "%s: %s job %lld (process %ld) is working on it",
						      subject, wf->name, id, holder);
				free(serr);
				store_job_free(&sj);
				return -1;
			}
			if (same) {
				store_job_free(&sj);
				log_info("%s: resuming interrupted %s job %lld", subject, wf->name, id);
				return job_load(env, id, wf, out, err) == 1 ? 0 : -1;
			}
			/* another request for the same guest replaces the old job */
			if (job_cancel_stored(env->store, &sj, NULL, &serr) != 1) {
				pve_error_set(err, serr ? PVE_ERR_INTERNAL : PVE_ERR_LOCKED,
					      "%s: %s job %lld: %s", subject, wf->name, id,
					      serr ? serr : "another process has just taken it");
				free(serr);
				store_job_free(&sj);
				return -1;
			}
			log_info("%s: interrupted %s job %lld is superseded by this one", subject,
				 wf->name, id);
			store_job_free(&sj);
		}
	}
	return job_new(env, wf, subject, params, out, err);
}

/* Any unfinished job of wf on subject, resumed whatever its params. */
static int job_for_any(struct job_env *env, const struct job_workflow *wf, const char *subject,
		       json_object *params, struct job **out, struct pve_error *err)
{
	if (env->store) {
		struct store_job sj;
		char *serr = NULL;
		int r = store_job_find_open(env->store, wf->name, subject, &sj, &serr);
		long holder = 0;
		long long id = r == 1 ? sj.id : 0;
		int free_now = r == 1 ? store_job_resumable(env->store, &sj, &holder, &serr) : 1;
		if (r == 1)
			store_job_free(&sj);
		if (r < 0 || free_now < 0) {
			pve_error_set(err, PVE_ERR_INTERNAL, "%s", serr ? serr : "store");
			free(serr);
			return -1;
		}
		if (!free_now)
			return pve_error_set(err, PVE_ERR_LOCKED,
					     "%s: %s job %lld (process %ld) is working on it",
					     subject, wf->name, id, holder), -1;
		if (id) {
			log_info("%s: resuming unfinished %s job %lld", subject, wf->name, id);
			return job_load(env, id, wf, out, err) == 1 ? 0 : -1;
		}
	}
	return job_new(env, wf, subject, params, out, err);
}

int job_submit(struct job_env *env, const struct job_workflow *wf, const char *subject,
	       json_object *params, struct job **out, struct pve_error *err)
{
	if (check_params(wf, subject, params, err) < 0)
		return -1;
	switch (wf->params ? wf->params->resume : JOB_RESUME_SAME) {
	case JOB_RESUME_SUBJECT:
		return job_for_any(env, wf, subject, params, out, err);
	case JOB_RESUME_NONE:
		return job_new(env, wf, subject, params, out, err);
	case JOB_RESUME_SAME:
		break;
	}
	return job_for_subject(env, wf, subject, params, out, err);
}
