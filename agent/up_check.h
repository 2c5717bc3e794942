/* up_check.h - an up job's params, and the checks an up request passes
 * before any request to PVE (up_check.c; no PVE client: pvagentd checks
 * what a peer submits with it). */
#ifndef PVAGENT_UP_CHECK_H
#define PVAGENT_UP_CHECK_H

#include "wf_up.h"

/* The request's checks, made before any work: names (DNS names, not all
 * digits, distinct), --vmid with one name, the VMID range, SSH settings
 * for a template that injects files, --set keys (the kind's config keys,
 * not vmid/node/delete/digest/force/skiplock/revert) and values (PVE's
 * schema, no control characters), the template expanded for each name,
 * and the pool (configured, VMs only, not with --set ipconfig0), with
 * conf's [ssh] settings, pools, disk storage and login (may be NULL: none
 * configured). 0, or -1 with err (PVE_ERR_CONFIG, naming the key or name
 * and the reason). */
int up_request_check(const struct up_request *req, const struct conf *conf,
		     struct pve_error *err);

/* The parameters of one `up` job (name is the guest). NULL on OOM. */
json_object *wf_up_params(const struct up_request *req, const char *name);
/* What a peer submitted for the up job of guest `name` (params as
 * wf_up_params writes them, the template at template_path), checked as
 * the CLI checks its request (up_request_check) with conf's pools and SSH
 * settings. 0, or -1 with err. */
int up_check_params(const char *name, json_object *params, const struct conf *conf,
		    struct pve_error *err);
/* Does up run inject (templates with guest file sections, started)?
 * Everything else never touches SSH. */
bool wf_up_wants_inject(size_t n_files, bool no_inject, bool no_start);

#endif
