/* cluster_config.h - guest config changes as PVE makes them: drive
 * allocation ("STORAGE:SIZE"), detaching disks to unusedN, pending changes
 * on running guests, digests, per-key privileges, GET config output. */
#ifndef PVESIM_CLUSTER_CONFIG_H
#define PVESIM_CLUSTER_CONFIG_H

#include "cluster.h"
#include "util.h"

/* Seconds a storage needs to allocate `size` bytes. */
double alloc_seconds(const struct sim_storage *s, uint64_t size);

/* Turn a drive value from a request into its stored form: "STORAGE:SIZE"
 * allocates a volume for g ("local-lvm:vm-100-disk-0,size=32G"),
 * "STORAGE:cloudinit" the cloud-init volume, an existing volid is checked.
 * Returns 0 with *out (malloc'd), or -1 with r filled. */
int config_alloc_drive(struct cluster *c, const struct sim_req *req,
		       struct sim_guest *g, const char *key, const char *value,
		       char **out, double *cost, struct sbuf *log,
		       struct sim_resp *r);

/* The privileges of a config key, set or deleted, on /vms/VMID, as
 * qemu-server 8.4's check_vm_modify_config_perm (type "qemu": VM.Config.CPU,
 * .Memory, .HWType, .Options (+ Sys.Modify on / for startup), .Disk (boot,
 * bootdisk, vmstatestorage), .Network, .Cloudinit or .Network for the
 * cloud-init keys, VM.PowerMgmt for freeze; drives and devices are judged
 * by value, below) and pve-container's check_ct_modify_config_perm. root@pam
 * passes. 0, or -1 with PVE's 403 in r. */
int config_key_perm(const struct sim_req *req, const char *type, int vmid, const char *key,
		    struct sim_resp *r);
/* SDN.Use for a NIC value: /sdn/zones/localnetwork/BRIDGE, or
 * .../BRIDGE/TAG for its tag and each VLAN of its trunks (PVE 8
 * check_vnet_access). 0, or -1 with the 403. */
int config_bridge_check(const struct sim_req *req, struct sim_resp *r, const char *net);
/* A drive value's privilege (the update worker's check_drive_perms):
 * cloud-init VM.Config.Cloudinit and VM.Config.CDROM, a CD-ROM
 * VM.Config.CDROM, a disk VM.Config.Disk. */
int config_drive_perm(const struct sim_req *req, struct sim_resp *r, int vmid,
		      const char *value);
/* The checks of a key's new value before the worker: the NIC's bridge
 * (SDN.Use), a host CD-ROM (Sys.Console on /), and at create the serial,
 * usb, hostpci and virtiofs devices. 0, or -1 with r filled. */
int config_value_perm(const struct sim_req *req, struct sim_resp *r, const char *type,
		      int vmid, const char *key, const char *value, bool create);

/* The per-key refusals of a qemu config write or create before any
 * privilege: the keys PVE keeps for itself (parent, snaptime, vmstate,
 * runningmachine, runningcpu, meta) answer the schema's 400 when set,
 * parent and snaptime "unknown option" when deleted; a key outside
 * qemu-server's permission lists (args, hookscript, vmgenid, affinity, ...)
 * is refused for all but root@pam itself (its API tokens too): 500 "only
 * root can set 'KEY' config". type: "qemu" (others pass). 0, or -1 with
 * r filled. */
int config_key_check(const struct sim_req *req, const char *type, const char *key,
		     bool deleting, struct sim_resp *r);

/* PUT/POST config: validate and apply params to g (pending when running).
 * Returns 0, or -1 with r filled, or -2 with r filled when the refusal is
 * the worker's in PVE (a qmconfig task failing with r->message for POST):
 * a boot order naming a device that does not exist. Setting "boot:
 * order=..." deletes bootdisk; deleting a disk keeps it. Privileges as
 * qemu-server: config_key_perm and config_value_perm first, then the
 * worker's per-drive (old and new value) and old-NIC bridge checks, whose
 * 403 is -2 as well. *cost: seconds of storage work. */
int config_update(struct cluster *c, const struct sim_req *req,
		  struct sim_guest *g, struct sim_resp *r, double *cost,
		  struct sbuf *log);

/* Set/delete one key on the current config with PVE's side effects on
 * volumes (old disk -> unusedN, re-added disk drops its unusedN, deleting
 * unusedN destroys the volume). */
int config_commit_set(struct cluster *c, struct sim_guest *g, const char *key,
		      const char *value);
int config_commit_delete(struct cluster *c, struct sim_guest *g,
			 const char *key, bool force);
/* Apply pending changes (at start or stop). */
void config_apply_pending(struct cluster *c, struct sim_guest *g);

/* GET config answer: config (+ pending unless current), digest, typed
 * integers. New reference. */
json_object *config_output(const struct sim_guest *g, bool current);

/* Network value with a MAC (adds one if the request gave none). */
char *config_net_with_mac(const struct sim_guest *g, const char *key,
			  const char *value);

#endif
