/* wf_inject.h - `inject` as a job of the engine (wf_inject.c). */
#ifndef PVAGENT_WF_INJECT_H
#define PVAGENT_WF_INJECT_H

#include "inject.h"
#include "job.h"
#include "store.h"

#include <signal.h>

extern const struct job_workflow wf_inject;

/* Run inject (inject.h) as a job kept in store (NULL, or a dry run: not
 * kept), stopping between its steps when *stop is set; cli_args (may be
 * NULL) is the command line kept with it. Fills *res as inject_run() does
 * and returns the job's outcome. */
enum job_outcome inject_job_run(struct store *store, volatile sig_atomic_t *stop,
		   const struct inject_request *req, const char *const *cli_args,
		   job_event_fn on_event, void *event_ctx, struct inject_result *res);

/* An inject_event_fn (inject.h) for inject_run inside a job (ctx: the
 * struct job): a file's diff becomes a job diff with its path, a note a
 * note, inject's own steps and a rollback's files progress lines of the
 * current step. Every workflow that injects uses it. */
void inject_job_event(void *job, const struct inject_event *ev);


#endif
