/* wf_up.h - the `up` and `down` workflows as job engine step tables
 * (wf_up.c, wf_down.c). provision.h turns requests into their jobs and
 * documents what they do. */
#ifndef PVAGENT_WF_UP_H
#define PVAGENT_WF_UP_H

#include "job.h"
#include "provision.h"

extern const struct job_workflow wf_up;
extern const struct job_workflow wf_down;

/* The parameters of one `up` job (name is the guest). NULL on OOM. */
json_object *wf_up_params(const struct up_request *req, const char *name);
/* Before job_run: the loaded template (borrowed; otherwise the job loads
 * the file its params name) and the result to fill (borrowed; otherwise
 * the job has its own). */
void wf_up_attach(struct job *j, const struct tmpl *t, struct up_result *res);
/* After job_run: the result, completed from the job (status, steps and
 * their durations, error, what is left). Valid until job_free. */
const struct up_result *wf_up_result(struct job *j);
/* The parameters of one `down` job. NULL on OOM. */
json_object *wf_down_params(bool purge, bool dry_run);
/* The same for down. */
void wf_down_attach(struct job *j, struct up_result *res);
const struct up_result *wf_down_result(struct job *j);
/* Complete r from a finished job (both workflows). */
void wf_result_finish(struct job *j, struct up_result *r);
/* Does up run inject (templates with guest file sections, started)? */
bool wf_up_wants_inject(size_t n_files, bool no_inject, bool no_start);

#endif
