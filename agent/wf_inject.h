/* wf_inject.h - `inject` as a job of the engine (wf_inject.c). */
#ifndef PVAGENT_WF_INJECT_H
#define PVAGENT_WF_INJECT_H

#include "inject.h"
#include "job.h"
#include "target.h"

#include <json-c/json.h>
#include <stdbool.h>

extern const struct job_workflow wf_inject;

/* Params (subject = the guest's name or VMID): "template", "address",
 * "vars" (target.h, target_params_add), "dry_run"; "parent": the up job
 * whose inject step made it (which resumes it). The job opens with the
 * env's conf and the job's PVE client (the guest found, its template
 * expanded, its address and SSH options: target.h). Vars left: vmid,
 * node, "result" (inject_result_json) and "summary"
 * (inject_result_summary), also when it fails. A dry run is not kept:
 * run it in an env without a store. */
json_object *wf_inject_params(const struct target_req *req, bool dry_run);

/* A job_event_fn for gfedit inside a job (ctx: the struct job): a file's
 * diff becomes a job diff with its path, a note a note, the rollback's
 * end and its files progress lines of the current step. Every workflow
 * that edits a guest's files uses it. */
void inject_job_event(void *job, const struct job_event *ev);


#endif
