/* workflows.h - every workflow the engine can run or resume, by name:
 * the registry (workflows.c) sits above the workflows it lists, so that
 * the engine (job.h) knows none of them. */
#ifndef PVAGENT_WORKFLOWS_H
#define PVAGENT_WORKFLOWS_H

#include "job.h"

/* The workflow called name, or NULL. */
const struct job_workflow *job_workflow_find(const char *name);

#endif
