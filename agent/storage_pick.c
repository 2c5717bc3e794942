/* storage_pick.c - a node's storages and the choice among them by content
 * type (see storage_pick.h). */
#include "storage_pick.h"

#include "json.h"

#include <stdlib.h>
#include <string.h>

int storage_node_list(struct pve *c, const char *node, json_object **out,
		      struct pve_error *err)
{
	*out = NULL;
	char *esc = pve_path_escape(node);
	if (!esc)
		return pve_error_oom(err);
	int rc = pve_getf(c, out, NULL, err, "/nodes/%s/storage", esc);
	free(esc);
	return rc < 0 ? -1 : 0;
}

json_object *storage_find(json_object *list, const char *id)
{
	for (size_t i = 0; id && i < json_object_array_length(list); i++) {
		json_object *s = json_object_array_get_idx(list, i);
		const char *sid = json_str(s, "storage");
		if (sid && strcmp(sid, id) == 0)
			return s;
	}
	return NULL;
}

bool storage_enabled(json_object *s)
{
	long long on = 1;
	json_int(s, "enabled", &on);
	return on != 0;
}

bool storage_has_content(json_object *s, const char *content)
{
	size_t n = strlen(content);
	for (const char *p = json_text(s, "content"); p && *p;) {
		size_t len = strcspn(p, ",");
		if (len == n && strncmp(p, content, n) == 0)
			return true;
		p += len + (p[len] == ',');
	}
	return false;
}

/* Is id in list, enabled, with content? */
static bool usable(json_object *list, const char *id, const char *content)
{
	json_object *s = storage_find(list, id);
	return s && storage_enabled(s) && storage_has_content(s, content);
}

void storage_ids_with(json_object *list, const char *content, struct sbuf *b)
{
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *s = json_object_array_get_idx(list, i);
		const char *sid = json_str(s, "storage");
		if (sid && storage_enabled(s) && storage_has_content(s, content))
			sbuf_addf(b, "%s%s", b->len ? ", " : "", sid);
	}
}

const char *storage_pick(json_object *list, const char *configured, const char *content)
{
	static const char *const known[] = {"local-lvm", "local-zfs", "local-btrfs", "local"};
	if (usable(list, configured, content))
		return configured;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (usable(list, known[i], content))
			return known[i];
	const char *first = NULL;
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *s = json_object_array_get_idx(list, i);
		const char *id = json_str(s, "storage");
		if (id && storage_enabled(s) && storage_has_content(s, content) &&
		    (!first || strcmp(id, first) < 0))
			first = id;
	}
	return first;
}
