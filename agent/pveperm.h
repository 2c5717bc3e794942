/* pveperm.h - what PVE 8 will ask of the token before a config change, and
 * asking PVE (GET /access/permissions) whether the token has it, so that a
 * workflow can stop before it changes anything instead of meeting PVE's
 * 403 halfway. The privileges per key are qemu-server 8.4's (drives and
 * boot: VM.Config.Disk; netN: VM.Config.Network and SDN.Use on the NIC's
 * bridge; scsihw: VM.Config.HWType); README "On a real PVE host" lists
 * them per command. */
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

#endif
