/* job.h - the job engine under every workflow (agent/README.md: "Jobs", "Steps").
 *
 * A workflow is a table of steps (struct job_workflow). A job is one run
 * of a workflow on one subject (a guest name) with its parameters (JSON).
 * The engine runs the steps in order and keeps, in the store (store.h),
 * the job's state, what its steps learned (vars, JSON), and per step its
 * state, the UPID of the PVE task it started (written the moment PVE
 * returns it, before any wait), how often its task-starting request was
 * sent, its summary and its error. Between steps it checks the stop flag.
 *
 * Resume (job_load + job_run) starts at the first step not done. Steps are
 * idempotent: run again, a step converges without repeating what took
 * effect. The engine helps them with the PVE side: a step's guest calls
 * take job_wait() as their struct guest_wait, whose hooks record every
 * task-starting request and its UPID, make the first such request of a
 * resumed step wait for the recorded task instead of sending it again,
 * and, when an earlier request's answer was lost (sent, no UPID), look at
 * PVE first (guest.h, "lost answers").
 *
 * On failure a workflow with undo_on_failure runs the undo of its done
 * steps in reverse. The outcome says what the caller has to know; only the
 * mains turn outcomes into exit codes and words.
 *
 * Thread safety: one job runs on one thread; several jobs of one struct
 * job_env may run on several threads (events are serialised). */
#ifndef PVAGENT_JOB_H
#define PVAGENT_JOB_H

#include "conf.h"
#include "event.h"
#include "guest.h"
#include "job_params.h"
#include "json.h"
#include "outcome.h"
#include "pve.h"
#include "store.h"

#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

struct job;

/* What a step's run returns. */
enum step_rc {
	STEP_RC_OK = 0,     /* done */
	STEP_RC_SKIP,       /* not needed for this job (no event) */
	STEP_RC_END,        /* done, and the job is complete: later steps skipped */
	STEP_RC_FAIL = -1,  /* failed: job_err() says why */
};

#define JOB_STEP_TASK 0x1u     /* starts PVE tasks through job_wait() */
#define JOB_STEP_NO_UNDO 0x2u  /* its failure leaves the done steps as they are */

struct job_step_def {
	const char *name;
	enum step_rc (*run)(struct job *j);
	/* 0 undone; 1 kept on purpose (the step stays done, and a resume
	 * does not run it again); -1 failed. NULL: nothing to undo. */
	int (*undo)(struct job *j);
	unsigned flags;
};

struct job_workflow {
	const char *name;                /* "up", "down", ... */
	const struct job_step_def *steps;
	size_t n_steps;
	size_t ctx_size;                 /* the workflow's context, zeroed */
	/* Build the context from job_params() and job_vars() (a resumed job
	 * has the vars its done steps stored). 0, or -1 with job_err() set. */
	int (*open)(struct job *j, void *ctx);
	void (*close)(struct job *j, void *ctx);
	/* Undo the done steps in reverse when a step fails. */
	bool undo_on_failure;
	/* Its params (wf_params.c): job_submit and job_run check a job's by
	 * them (job_params_check); open reads them with job_param_*; its
	 * .resume says what job_submit does with an unfinished job of the
	 * same subject. NULL: any params, JOB_RESUME_SAME (the tests' toy
	 * workflows). */
	const struct job_params_decl *params;
};

/* ---- environment ------------------------------------------------------------- */

struct job_env {
	struct store *store;             /* NULL: jobs are not persisted */
	const struct pve_clock *clock;   /* NULL: real time */
	job_event_fn on_event;           /* may be NULL */
	void *event_ctx;
	/* Set (by a signal handler) to stop: the running steps end their
	 * waits at once, and jobs end as interrupted. May be NULL. */
	volatile sig_atomic_t *stop;
	/* The configuration ([ssh] settings for workflows that use SSH, the
	 * template directories); may be NULL for workflows that need none. */
	const struct conf *conf;
	/* Base timeouts of guest waits (job_wait() adds hooks and progress). */
	struct guest_wait wait;
	/* internal */
	pthread_mutex_t mu;
	struct pve_clock stop_clock;
};

/* The PVE client options of a configuration's [pve] section (pointing
 * into c). Workflows that make clients of their own (a drain's workers)
 * make them from the env's conf with these. */
struct pve_opts job_conf_pve_opts(const struct conf *c);

/* Initialise (env is caller-owned; fill the public members first, or
 * after). */
int job_env_init(struct job_env *env);
void job_env_fini(struct job_env *env);

/* A process-wide tap: every event of every env also goes to fn (after the
 * env's own sink; calls are serialised). pvagent run by pvagentd passes
 * them to the daemon this way (cli_daemon.c). NULL: none. */
void job_event_tap(job_event_fn fn, void *ctx);

/* ---- making and loading jobs ---------------------------------------------------- */

/* A new job of wf on subject with params (a JSON object, copied), stored
 * as queued when env has a store. */
int job_new(struct job_env *env, const struct job_workflow *wf, const char *subject,
	    json_object *params, struct job **out, struct pve_error *err);
/* A stored job, to resume or show. wf must be its workflow
 * (job_workflow_find, workflows.h). 1 loaded, 0 no such job, -1 error. */
int job_load(struct job_env *env, long long id, const struct job_workflow *wf,
	     struct job **out, struct pve_error *err);
void job_free(struct job *j);
/* The child job a step of parent runs, by the ID parent's vars keep (an
 * earlier run's; 0: none): loaded into *out unless it ended failed or
 * cancelled (nothing of it is left: the step makes a new one). 1 loaded,
 * 0 none to resume (*out NULL; also without a store), -1 error (parent's
 * job_err). */
int job_load_child(struct job *parent, long long id, const struct job_workflow *wf,
		   struct job **out);
/* The job for one subject: an interrupted one of the same workflow and
 * subject with the same params is resumed (re-attaching to its task);
 * one with other params is superseded (cancelled); one still running in
 * another process is PVE_ERR_LOCKED; otherwise a new one is made. */
int job_for_subject(struct job_env *env, const struct job_workflow *wf, const char *subject,
		    json_object *params, struct job **out, struct pve_error *err);

/* End the stored unfinished job sj as cancelled, under its lock: why (a
 * not-found error's message, NULL: its error as it is) says why; sj is
 * updated as written. 1 ended, 0 another process holds it (left as it
 * is), -1 error (*err malloc'd). */
int job_cancel_stored(struct store *s, struct store_job *sj, const char *why, char **err);

/* The one launcher: the job a request of wf on subject with params
 * (borrowed) makes, by wf's resume policy (an unfinished job resumed, or a
 * new one); one whose lock another process holds is PVE_ERR_LOCKED; params
 * its table refuses (job_params_check) are PVE_ERR_CONFIG, in the words
 * pvagentd refuses them with. Run it
 * with job_run, in this process (the CLI, a pvagentd child) or load it
 * elsewhere by ID. */
int job_submit(struct job_env *env, const struct job_workflow *wf, const char *subject,
	       json_object *params, struct job **out, struct pve_error *err);

/* Run the job from its first unfinished step with this PVE client. */
enum job_outcome job_run(struct job *j, struct pve *c);

/* End the job as failed with why without running it (its runner has no
 * PVE client: jobpool.h runs several jobs). Returns its outcome. */
enum job_outcome job_fail_unrun(struct job *j, const struct pve_error *why);

/* ---- what a job is ---------------------------------------------------------------- */

long long job_id(const struct job *j);
const char *job_subject(const struct job *j);
const struct job_workflow *job_wf(const struct job *j);
enum job_state job_state(const struct job *j);
enum job_outcome job_outcome(const struct job *j);
/* The failure (kind PVE_OK when none). */
const struct pve_error *job_error(const struct job *j);
/* What a failed job left behind (NULL: nothing). */
const char *job_left(const struct job *j);
bool job_resumed(const struct job *j);
/* The steps (n = the workflow's), states as stored. */
const struct store_step *job_steps(const struct job *j, size_t *n);
/* The step it failed in (or, interrupted, the one it stopped in), NULL
 * when none. */
const char *job_failed_step(const struct job *j);
/* How long step i took (its run in this process, or as stored; a failed
 * step's too). */
double job_step_elapsed(const struct job *j, size_t i);
/* The guest's VMID and node once known (events and results). */
int job_vmid(const struct job *j);
const char *job_node(const struct job *j);

/* ---- for steps -------------------------------------------------------------------- */

void *job_ctx(struct job *j);
struct pve *job_pve(struct job *j);
struct job_env *job_env(struct job *j);
json_object *job_params(struct job *j);  /* borrowed */
/* Its params by the workflow's table (checked before open: a member is
 * of its type or absent): a string or NULL, an integer or 0, a number or
 * 0, a flag; a KV list or map into *l (job_params_kv: 0 or -1). Reading a
 * member the table does not declare is a programming error (logged). */
const char *job_param_str(struct job *j, const char *key);
long long job_param_int(struct job *j, const char *key);
double job_param_num(struct job *j, const char *key);
bool job_param_bool(struct job *j, const char *key);
int job_param_kv(struct job *j, const char *key, struct tmpl_kvlist *l);
/* A STR_LIST member (borrowed), or NULL. */
json_object *job_param_list(struct job *j, const char *key);
json_object *job_vars(struct job *j);    /* borrowed; steps add members */
/* Store the vars now (the engine does after every step). */
int job_save(struct job *j);

/* Members are read with json.h (json_str, json_int); set here: */
int job_set_str(struct job *j, const char *key, const char *v); /* in vars; NULL removes */
int job_set_int(struct job *j, const char *key, long long v);
int job_set_bool(struct job *j, const char *key, bool v);

/* The guest the job works on, for events and results (node copied). */
int job_set_guest(struct job *j, int vmid, const char *node);
/* The current step's summary (shown with its end event). */
void job_summary(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void job_progress(struct job *j, double percent, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void job_diff(struct job *j, const char *text);
/* A file's change (a unified diff) in the guest. */
void job_file_diff(struct job *j, const char *path, const char *diff);
void job_note(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Say what a failure would leave behind from now on (NULL: nothing). */
void job_set_left(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The error to fill when a step fails. */
struct pve_error *job_err(struct job *j);
/* Fill the error and return STEP_RC_FAIL. */
enum step_rc job_fail(struct job *j, enum pve_err_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Fail with msg as a lower module classified the failure (an SSH error's,
 * inject's, bench's or the conversion's outcome): the job's error gets
 * the kind that has that outcome (pve_error_outcome); a failure that says
 * "done" fails as failed. */
enum step_rc job_fail_outcome(struct job *j, enum job_outcome o, const char *msg);

/* The current step as stored: its UPID and send count from an earlier run
 * (the step was interrupted after sending). */
const char *job_step_upid(const struct job *j);
int job_step_attempts(const struct job *j);
/* The step itself waited for the task its earlier run recorded: its
 * requests from now on are new ones (job_wait's hooks re-attach none of
 * them to that task). For a step that makes several task requests. */
void job_step_resumed_task_done(struct job *j);
/* The guest waits for the current step: the env's timeouts and its stop
 * clock, progress as job events of this step, and the task hooks. */
const struct guest_wait *job_wait(struct job *j);
/* The current step's request was sent by an earlier run and never
 * answered: wait until it can no longer be on its way (its send time plus
 * the client's request timeout) before looking whether it took effect. */
void job_settle(struct job *j);
/* Has a stop been asked for? */
bool job_stopping(const struct job *j);

#endif
