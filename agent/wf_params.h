/* wf_params.h - every workflow's params, declared once (wf_params.c; the
 * contract: job_params.h). Each workflow's struct job_workflow names its
 * table (.params); pvagentd, which runs no workflow itself, finds them by
 * name. Pure. */
#ifndef PVAGENT_WF_PARAMS_H
#define PVAGENT_WF_PARAMS_H

#include "job_params.h"

extern const struct job_params_decl wf_up_params_decl, wf_down_params_decl,
	wf_inject_params_decl, wf_bench_params_decl, wf_virtio_params_decl,
	wf_migrate_params_decl, wf_drain_params_decl, wf_undrain_params_decl,
	wf_image_params_decl, wf_rolling_params_decl, wf_rolling_node_params_decl;

/* The params of the workflow called workflow, of those wf_params_all
 * lists, or NULL. */
const struct job_params_decl *wf_params_find(const char *workflow);
/* Every workflow's a request may name (what pvagentd takes), NULL-ended:
 * not rolling-node's, which only a rolling run makes. */
const struct job_params_decl *const *wf_params_all(void);

/* Is map a valid --storage / --storage-map value (a storage id, or
 * SRC:DST pairs separated by ',')? *why static on false. */
bool migrate_map_valid(const char *map, const char **why);

#endif
