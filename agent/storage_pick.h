/* storage_pick.h - a node's storages as PVE lists them (GET
 * /nodes/NODE/storage: storage, type, content, enabled, active, ...) and
 * the choice among them by content type ("images", "import", "rootdir",
 * "vztmpl", "iso"): setup's picks for [pve] storage and import_storage,
 * doctor's checks of the storages the commands use and the ones its FIX
 * lines name instead. One content type per call: a storage holds it when
 * its comma-separated content lists it. */
#ifndef PVAGENT_STORAGE_PICK_H
#define PVAGENT_STORAGE_PICK_H

#include "pve.h"
#include "util.h"

#include <json-c/json.h>
#include <stdbool.h>

/* GET /nodes/NODE/storage (the node's name escaped): 0 and *out (the
 * caller's to put), or -1 with err. What the caller may see: storages
 * without Datastore.Audit or Datastore.AllocateSpace are not listed. */
int storage_node_list(struct pve *c, const char *node, json_object **out,
		      struct pve_error *err);

/* The storage id of list, or NULL (borrowed). */
json_object *storage_find(json_object *list, const char *id);
/* Is storage s enabled ("enabled" absent or not 0)? */
bool storage_enabled(json_object *s);
/* Does storage s's content list content? */
bool storage_has_content(json_object *s, const char *content);

/* The enabled storages of list that hold content, in the list's order,
 * appended to b as "a, b". */
void storage_ids_with(json_object *list, const char *content, struct sbuf *b);

/* The storage of list for content: configured while it is there, enabled
 * and holds content (a choice made by hand stays), else the installer's
 * names (local-lvm on LVM-thin, local-zfs on ZFS, local-btrfs on BTRFS;
 * local for downloads), else the first such by name; NULL when none
 * (borrowed from list, or configured). */
const char *storage_pick(json_object *list, const char *configured, const char *content);

#endif
