/* pveperm.h - what PVE will ask of the token before a config change or a
 * guest-agent call, and asking PVE (GET /access/permissions) whether the
 * token has it, so that a workflow can stop before it changes anything
 * instead of meeting PVE's 403 halfway. The privileges per key are
 * qemu-server's (drives and boot: VM.Config.Disk; netN: VM.Config.Network
 * and SDN.Use on the NIC's bridge; scsihw: VM.Config.HWType; the same on 8
 * and 9); the guest agent's address needs VM.Monitor on PVE 8 and
 * VM.GuestAgent.Audit on PVE 9. pvagent(1) PRIVILEGES lists them per
 * command and version. */
#ifndef PVAGENT_PVEPERM_H
#define PVAGENT_PVEPERM_H

#include "err.h"
#include "pve.h"

/* Check that the token may set `set`, delete `delete_keys` (comma list,
 * may be NULL) and power the guest (VM.PowerMgmt) on /vms/VMID. 0 when it
 * may, or when PVE cannot say (no /access/permissions: PVE before 6);
 * -1 with err PVE_ERR_PERM "Permission check failed (PATH, PRIV)" for the
 * first privilege missing, or another error when asking failed. */
int pveperm_check_config(struct pve *c, int vmid, const struct pve_params *set,
			 const char *delete_keys, struct pve_error *err);


/* Check that the token may read the guest agent's address on path
 * ("/vms/VMID", or "/vms" for a guest not made yet, whose ACL can only come
 * from a propagating entry above it) on PVE major. 0 when it may, or when
 * PVE cannot say; -1 with err PVE_ERR_PERM "Permission check failed (PATH,
 * PRIV)" naming pveprivs_agent_priv(major) (pveprivs.h: "VM.GuestAgent.Audit" from 9, qemu-server b92a40ce; PVE also takes VM.GuestAgent.Unrestricted), or another error when asking
 * failed. */
int pveperm_check_agent(struct pve *c, int major, const char *path, struct pve_error *err);

#endif
