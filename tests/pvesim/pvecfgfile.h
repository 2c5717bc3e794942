/* pvecfgfile.h - a guest config file as PVE writes it
 * (/etc/pve/qemu-server/VMID.conf, /etc/pve/lxc/VMID.conf), read the way
 * qemu-server's parse_vm_config and pve-container's parse_pct_config read
 * it: `#` lines are the description, then `key: value` lines; sections
 * `[PENDING]` (with `delete: k1,!k2`), `[special:cloudinit]` and one
 * `[NAME]` per snapshot (with `parent`, `snaptime`, `vmstate`). Where PVE
 * only warns (an unknown section, a line it cannot parse, a parent that
 * names no snapshot), this reader refuses, naming file, line and field. */
#ifndef PVESIM_PVECFGFILE_H
#define PVESIM_PVECFGFILE_H

#include <json-c/json.h>
#include <stdbool.h>

struct pvecfg_file {
	json_object *config;         /* main section: key -> string */
	json_object *pending;        /* [PENDING]: key -> string */
	json_object *pending_delete; /* [PENDING] delete: array of keys, "!key" forced */
	json_object *snapshots;      /* name -> {config, snaptime, description, parent} */
	json_object *cloudinit;      /* [special:cloudinit]: key -> string */
};

/* Parse text (the file `name`, for messages). qemu: a VM's file (`cdrom`
 * reads as ide2, as qemu-server does); else a container's (`lxc.*` raw
 * keys). 0, or -1 with *err "NAME:LINE: FIELD: why" (malloc'd; NULL when
 * out of memory). */
int pvecfg_file_parse(const char *name, const char *text, bool qemu,
		      struct pvecfg_file *out, char **err);
/* The same for a file on disk. */
int pvecfg_file_read(const char *path, bool qemu, struct pvecfg_file *out, char **err);
void pvecfg_file_free(struct pvecfg_file *f);

#endif
