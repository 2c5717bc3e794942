/* up_check.h - the checks an up request passes before any request to PVE
 * (up_check.c). */
#ifndef PVAGENT_UP_CHECK_H
#define PVAGENT_UP_CHECK_H

#include "wf_up.h"

/* The request's checks, made before any work: names (DNS names, not all
 * digits, distinct), --vmid with one name, the VMID range, SSH settings
 * for a template that injects files, --set keys (the kind's config keys,
 * not vmid/node/delete/digest/force/skiplock/revert) and values (PVE's
 * schema, no control characters), the template expanded for each name,
 * and the pool (configured, VMs only, not with --set ipconfig0). 0, or -1
 * with err (PVE_ERR_CONFIG, naming the key or name and the reason). */
int up_request_check(const struct up_request *req, struct pve_error *err);

#endif
