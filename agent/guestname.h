/* guestname.h - what a guest argument is: a DNS name a guest may have, or
 * a VMID (guestname.c). Pure (no PVE client), so that pvagentd's checks
 * of what a peer submits link nothing else. */
#ifndef PVAGENT_GUESTNAME_H
#define PVAGENT_GUESTNAME_H

#include <stdbool.h>

/* Is name a DNS name as PVE's dns-name format has it (labels of 1-63
 * letters, digits and '-', not starting or ending with '-', joined by '.';
 * at most 253 characters)? On false, *why (if not NULL) points to a static
 * explanation. */
bool guest_name_valid(const char *name, const char **why);
/* Does a command's guest argument name a VMID (all digits)? Then *vmid
 * (if not NULL) is it. */
bool guest_arg_is_vmid(const char *arg, int *vmid);

#endif
