/* rolling_plan.c - the pure rules of `pvagent rolling` (rolling_plan.h). */
#include "rolling_plan.h"

#include "json.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

char *rolling_quorum_why(size_t nodes, size_t online, bool quorate)
{
	if (!quorate)
		return strprintf("the cluster is not quorate (%zu of %zu nodes online)", online,
				 nodes);
	if (online < nodes)
		return strprintf("%zu of %zu nodes are offline: bring %s back first", nodes - online,
				 nodes, nodes - online == 1 ? "it" : "them");
	if (nodes < 2 || (online - 1) * 2 <= nodes)
		return strprintf("%zu node%s: with one down the cluster loses quorum (%zu of %zu "
				 "votes; a QDevice gives a two-node cluster its spare vote)",
				 nodes, nodes == 1 ? "" : "s", online ? online - 1 : 0, nodes);
	return NULL;
}

void rolling_order(const struct rp_node *nodes, size_t n, size_t *order)
{
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	/* insertion sort: a handful of nodes */
	for (size_t i = 1; i < n; i++) {
		size_t x = order[i], k = i;
		for (; k > 0; k--) {
			const struct rp_node *a = &nodes[order[k - 1]], *b = &nodes[x];
			bool after = a->self != b->self ? a->self
				   : a->move_memory != b->move_memory
					   ? a->move_memory > b->move_memory
					   : strcmp(a->name, b->name) > 0;
			if (!after)
				break;
			order[k] = order[k - 1];
		}
		order[k] = x;
	}
}

char *rolling_todo(json_object *m, const char *node, bool *oom)
{
	const char *st = json_str(m, "status"), *method = json_str(m, "method");
	char *r = NULL;
	*oom = false;
	if (!st)
		return NULL;
	if (strcmp(st, "fits nowhere") == 0)
		r = strprintf("cannot leave %s (%s): free a target, or shut it down for the "
			      "node's update", node, json_str(m, "why") ? json_str(m, "why") : "?");
	else if (strcmp(st, "pinned") == 0)
		r = strprintf("pinned to %s (pvagent-pin): it goes down with the node's reboot; "
			      "shut it down first or remove the tag", node);
	else if (method && strcmp(method, "restart") == 0)
		r = strprintf("a running container: moves by restart (down for its shutdown "
			      "and start)");
	else
		return NULL;
	*oom = r == NULL;
	return r;
}

char *rolling_ceph_why(json_object *status)
{
	json_object *health = NULL, *checks = NULL;
	json_object_object_get_ex(status, "health", &health);
	const char *h = json_str(health, "status");
	if (!h)
		return strprintf("Ceph's status has no health");
	if (strcmp(h, "HEALTH_OK") == 0)
		return NULL;
	struct sbuf b = {0};
	bool only_flags = strcmp(h, "HEALTH_WARN") == 0;
	if (json_object_object_get_ex(health, "checks", &checks) &&
	    json_object_is_type(checks, json_type_object)) {
		json_object_object_foreach(checks, k, v)
		{
			json_object *sum = NULL;
			json_object_object_get_ex(v, "summary", &sum);
			const char *msg = json_str(sum, "message");
			bool noout = strcmp(k, "OSDMAP_FLAGS") == 0 && msg && strstr(msg, "noout") &&
				     !strchr(msg, ',');
			only_flags &= noout;
			if (!noout)
				sbuf_addf(&b, "%s%s%s%s", b.len ? "; " : "", k, msg ? ": " : "",
					  msg ? msg : "");
		}
	}
	if (only_flags) {
		sbuf_free(&b);
		return NULL;
	}
	char *r = strprintf("Ceph is %s%s%s", h, b.len ? ": " : "", b.len ? sbuf_str(&b) : "");
	sbuf_free(&b);
	return r;
}

bool rolling_version_valid(const char *want)
{
	if (!want || !isdigit((unsigned char)*want))
		return false;
	int parts = 0;
	for (const char *p = want; *p;) {
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		parts++;
		if (*p == '.' && isdigit((unsigned char)p[1]))
			p++;
		else if (*p)
			return false;
	}
	return parts <= 3;
}

bool rolling_version_is(const char *version, const char *want)
{
	if (!want || !*want)
		return true;
	if (!version)
		return false;
	size_t n = strlen(want);
	return strncmp(version, want, n) == 0 && (version[n] == '\0' || version[n] == '.' ||
						  version[n] == '-' || version[n] == '~');
}
