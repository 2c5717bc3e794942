/* pvecheck.h - PVE guest parameter values checked against the compiled-in
 * PVE schema (pvekeys.h) before anything is sent: the type, integer and
 * number ranges, enums, string lengths, patterns, the named formats pvagent
 * knows (below), and property strings key by key (each key's own schema;
 * unknown and repeated keys refused; keys the schema requires; aliases such
 * as net[n]'s "virtio=MAC"). Pure: no I/O, no state.
 *
 * Named formats checked: pve-configid, pve-configid-list, pve-storage-id,
 * pve-bridge-id, pve-poolid, pve-node, dns-name, dns-name-list, pve-vmid,
 * mac-addr, pve-volume-id, pve-volume-id-or-qm-path,
 * pve-volume-id-or-absolute-path, disk-size, ipv4, ipv6, ip, address-list,
 * pve-ipv4-config, pve-ipv6-config, urlencoded, pve-tag-list,
 * pve-qm-bootdisk. Others (pve-qm-boot, pve-vm-cpu-conf, ...) are left to
 * PVE; their type, length and pattern are still checked. */
#ifndef PVAGENT_PVECHECK_H
#define PVAGENT_PVECHECK_H

#include "pvekeys.h"

/* Check value against the schema of parameter param ("net0", "memory") of
 * a guest kind on PVE major (0: not known yet; the value suits when it
 * suits some version's schema). Returns 0 when it suits; 1 with *why a malloc'd "what is
 * wrong" without the parameter's name ("-5 is below the minimum 16",
 * "evil: unknown key (a net0 value has: bridge, firewall, ...)"); 1 also
 * for a parameter the schema does not have; -1 when memory ran out (*why
 * NULL). */
int pvecheck_param(int major, enum pvekey_kind kind, const char *param, const char *value,
		   char **why);

/* The same for a value schema (a parameter's, or one property key's). */
int pvecheck_value(const struct pvekey_val *v, const char *value, char **why);

/* The dns-name format: labels of 1-63 letters, digits and '-' (not first
 * or last) joined by '.', at most 253 characters. */
bool pvecheck_dns_name(const char *s);

/* A guest config key PVE lets root@pam alone set (its API tokens are other
 * users to that check): qemu-server's "only root can set 'KEY' config"
 * (args, hookscript, affinity, hugepages, vmgenid, ...; check_vm_modify_
 * config_perm), pve-container's devN. 1 with *why PVE's reason
 * (malloc'd), 0 when others may set it, -1 when memory ran out. */
int pvecheck_root_only(enum pvekey_kind kind, const char *key, char **why);

#endif
