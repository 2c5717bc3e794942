/* cluster_options.c - the datacenter options (datacenter.cfg) pvesim
 * models: user-tag-access and registered-tags, as a scenario's
 * "datacenter" object gives them in datacenter.cfg's own syntax
 * ("user-allow=list,user-allow-list=a;b", "x;y"), PUT /cluster/options
 * (Sys.Modify on /) sets them; GET /cluster/options (Sys.Audit on /)
 * answers them parsed as pve-cluster's
 * parse_datacenter_config does (user-tag-access an object whose
 * user-allow-list is an array, registered-tags an array); and the tag
 * check of a guest's create and config update, as pve-guest-common's
 * GuestHelpers.pm assert_tag_permissions makes it. */
#include "cluster.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* "a;b" -> ["a","b"] (PVE's split(';')). */
static json_object *split_tags(const char *s)
{
	json_object *a = json_object_new_array();
	for (const char *p = s; a && p && *p;) {
		size_t n = strcspn(p, ";");
		if (n)
			json_object_array_add(a, json_object_new_string_len(p, (int)n));
		p += n + (p[n] == ';');
	}
	return a;
}

/* user-tag-access "user-allow=list,user-allow-list=a;b" parsed. */
static json_object *parse_tag_access(const char *s)
{
	json_object *o = json_object_new_object();
	for (const char *p = s; o && p && *p;) {
		size_t n = strcspn(p, ",");
		const char *eq = memchr(p, '=', n);
		if (eq) {
			char *k = strndup(p, (size_t)(eq - p)), *v = strndup(eq + 1, n - (size_t)(eq - p) - 1);
			if (k && v)
				json_object_object_add(o, k, strcmp(k, "user-allow-list") == 0
								     ? split_tags(v)
								     : json_object_new_string(v));
			free(k);
			free(v);
		}
		p += n + (p[n] == ',');
	}
	return o;
}

json_object *cluster_options_json(const struct cluster *c)
{
	json_object *o = json_object_new_object();
	const char *uta = c->datacenter ? cfg_str(c->datacenter, "user-tag-access") : NULL;
	const char *reg = c->datacenter ? cfg_str(c->datacenter, "registered-tags") : NULL;
	if (o && uta)
		json_object_object_add(o, "user-tag-access", parse_tag_access(uta));
	if (o && reg)
		json_object_object_add(o, "registered-tags", split_tags(reg));
	return o;
}

static bool listed(json_object *a, const char *tag)
{
	for (size_t i = 0; a && i < json_object_array_length(a); i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(a, i)), tag) == 0)
			return true;
	return false;
}

/* Is tag on a guest the user may audit ('existing')? */
static bool tag_exists(const struct cluster *c, const struct sim_req *req, const char *tag)
{
	for (size_t i = 0; i < c->guests.n; i++) {
		const struct sim_guest *g = c->guests.v[i];
		const char *tags = cfg_str(g->config, "tags");
		if (!tags || !vm_priv_has(req, g->vmid, "VM.Audit"))
			continue;
		json_object *a = split_tags(tags);
		bool found = listed(a, tag);
		json_object_put(a);
		if (found)
			return true;
	}
	return false;
}

/* The tags of a tag option (PVE's split_list: ';', ',' or spaces), each
 * counted. */
static void count_tags(json_object *counts, const char *s, int add)
{
	for (const char *p = s; p && *p;) {
		size_t n = strcspn(p, ";, ");
		if (n) {
			char *t = strndup(p, n);
			json_object *v = NULL;
			if (t) {
				json_object_object_get_ex(counts, t, &v);
				json_object_object_add(counts, t, json_object_new_int(
					(v ? json_object_get_int(v) : 0) + add));
			}
			free(t);
		}
		p += n + (p[n] != '\0');
	}
}

int cluster_tag_check(const struct cluster *c, const struct sim_req *req, struct sim_resp *r,
		      int vmid, const char *old, const char *new)
{
	if (!vm_priv_check(req, r, vmid, "VM.Config.Options"))
		return -1;
	if (priv_has(req, "/", "Sys.Modify"))
		return 0;
	json_object *opt = cluster_options_json(c), *uta = NULL, *reg = NULL, *list = NULL;
	json_object_object_get_ex(opt, "user-tag-access", &uta);
	json_object_object_get_ex(opt, "registered-tags", &reg);
	json_object_object_get_ex(uta, "user-allow-list", &list);
	const char *allow = uta ? cfg_str(uta, "user-allow") : NULL;
	if (!allow)
		allow = "free";
	bool free_form = strcmp(allow, "free") == 0;
	/* +1 per new occurrence, -1 per old: the changed tags are not 0 */
	json_object *counts = json_object_new_object();
	count_tags(counts, new, 1);
	count_tags(counts, old, -1);
	int rc = 0;
	json_object_object_foreach(counts, tag, n)
	{
		if (rc || json_object_get_int(n) == 0)
			continue;
		bool allowed = (strcmp(allow, "none") != 0 && listed(list, tag)) ||
			       ((free_form || strcmp(allow, "existing") == 0) &&
				tag_exists(c, req, tag));
		if ((!allowed && !free_form) || listed(reg, tag)) {
			resp_error(r, 403, "Permission check failed (/, Sys.Modify for modifying "
					   "tag '%s')", tag);
			rc = -1;
		}
	}
	json_object_put(counts);
	json_object_put(opt);
	return rc;
}

/* PUT /cluster/options (Sys.Modify on /): user-tag-access and
 * registered-tags set, or named in delete; the other options are not
 * modelled (501). */
static void put_options(struct cluster *c, const struct sim_req *req, struct sim_resp *r)
{
	static const char *const keys[] = {"user-tag-access", "registered-tags", NULL};
	json_object_object_foreach(req->params, k, v)
	{
		(void)v;
		bool known = strcmp(k, "delete") == 0;
		for (size_t i = 0; keys[i]; i++)
			known = known || strcmp(k, keys[i]) == 0;
		if (!known) {
			resp_error(r, 501, "pvesim: datacenter option '%s' is not modelled", k);
			return;
		}
	}
	if (!priv_check(req, r, "/", "Sys.Modify"))
		return;
	if (!c->datacenter && !(c->datacenter = json_object_new_object())) {
		resp_error(r, 500, "out of memory");
		return;
	}
	const char *del = param_str(req, "delete");
	for (size_t i = 0; keys[i]; i++) {
		const char *val = param_str(req, keys[i]);
		if (val)
			json_object_object_add(c->datacenter, keys[i], json_object_new_string(val));
		else if (del && strstr(del, keys[i]))
			json_object_object_del(c->datacenter, keys[i]);
	}
	resp_data(r, NULL);
}

bool routes_options(struct cluster *c, const struct sim_req *req, struct path_parts *pp,
		    struct sim_resp *r)
{
	if (pp->n != 2 || strcmp(pp->seg[0], "cluster") != 0 || strcmp(pp->seg[1], "options") != 0)
		return false;
	if (strcmp(req->method, "PUT") == 0)
		put_options(c, req, r);
	else if (strcmp(req->method, "GET") != 0)
		return false;
	else if (priv_check(req, r, "/", "Sys.Audit"))
		resp_data(r, cluster_options_json(c));
	return true;
}
