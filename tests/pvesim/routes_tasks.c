/* routes_tasks.c - task routes: GET /nodes/{node}/tasks, .../tasks/{upid},
 * .../status, .../log, DELETE .../tasks/{upid}, GET /cluster/tasks. */
#include "cluster.h"
#include "tasks.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* The user part of a token id ("root@pam!x" -> owner "root@pam"). */
static bool task_owned(const struct sim_req *req, const struct sim_task *t)
{
	const char *u = req->userid ? req->userid : "";
	if (strcmp(t->user, u) == 0)
		return true;
	const char *bang = strchr(u, '!');
	return bang && strlen(t->user) == (size_t)(bang - u) &&
	       strncmp(t->user, u, (size_t)(bang - u)) == 0;
}

/* The task's owner, or priv (Sys.Audit to read, Sys.Modify to stop) on
 * /nodes/NODE of the task's node. r: answer the 403, or NULL to ask. */
static bool task_allowed(const struct sim_req *req, const struct sim_task *t,
			 const char *priv, struct sim_resp *r)
{
	if (task_owned(req, t))
		return true;
	char *path = strprintf("/nodes/%s", t->node);
	bool ok = path && (r ? priv_check(req, r, path, priv) : priv_has(req, path, priv));
	if (!path && r)
		resp_error(r, 500, "out of memory");
	free(path);
	return ok;
}

static json_object *task_list_entry(const struct sim_task *t)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "upid", json_object_new_string(t->upid));
	json_object_object_add(o, "node", json_object_new_string(t->node));
	json_object_object_add(o, "pid", json_object_new_int64(t->pid));
	json_object_object_add(o, "pstart", json_object_new_int64(t->pstart));
	json_object_object_add(o, "starttime",
			       json_object_new_int64((long long)t->start));
	json_object_object_add(o, "type", json_object_new_string(t->type));
	json_object_object_add(o, "id", json_object_new_string(t->id));
	json_object_object_add(o, "user", json_object_new_string(t->user));
	if (t->finished) {
		json_object_object_add(o, "status",
				       json_object_new_string(t->exitstatus));
		json_object_object_add(o, "endtime",
				       json_object_new_int64((long long)t->end));
	}
	return o;
}

static int cmp_task_desc(const void *a, const void *b)
{
	const struct sim_task *x = *(const struct sim_task *const *)a;
	const struct sim_task *y = *(const struct sim_task *const *)b;
	if (x->start != y->start)
		return x->start < y->start ? 1 : -1;
	return x->pid < y->pid ? 1 : (x->pid > y->pid ? -1 : 0);
}

static void list_tasks(struct cluster *c, const struct sim_req *req,
		       const char *node, struct sim_resp *r)
{
	const char *source = param_str(req, "source");
	const char *typefilter = param_str(req, "typefilter");
	const char *userfilter = param_str(req, "userfilter");
	const char *statusfilter = param_str(req, "statusfilter");
	long long vmid = param_int(req, "vmid", 0);
	long long start = param_int(req, "start", 0);
	long long limit = param_int(req, "limit", 50);
	bool errors = param_bool(req, "errors", false);
	if (!source)
		source = "archive";
	struct ptrvec sel = {0};
	json_object *arr = json_object_new_array();
	if (!arr) {
		resp_error(r, 500, "out of memory");
		return;
	}
	for (size_t i = 0; i < c->tasks.n; i++) {
		struct sim_task *t = c->tasks.v[i];
		if (!t->started || (node && strcmp(t->node, node) != 0))
			continue;
		if (strcmp(source, "archive") == 0 && !t->finished)
			continue;
		if (strcmp(source, "active") == 0 && t->finished)
			continue;
		if (typefilter && strcmp(t->type, typefilter) != 0)
			continue;
		if (userfilter && !strstr(t->user, userfilter))
			continue;
		if (vmid && atoll(t->id) != vmid)
			continue;
		if (errors && (!t->finished || strcmp(t->exitstatus, "OK") == 0))
			continue;
		if (statusfilter && t->finished) {
			const char *cls = strcmp(t->exitstatus, "OK") == 0 ? "ok"
					  : strncmp(t->exitstatus, "WARNINGS", 8) == 0
						  ? "warning"
						  : "error";
			if (!strstr(statusfilter, cls))
				continue;
		}
		if (!task_allowed(req, t, "Sys.Audit", NULL))
			continue;
		if (ptrvec_push(&sel, t) < 0) {
			ptrvec_free(&sel);
			json_object_put(arr);
			resp_error(r, 500, "out of memory");
			return;
		}
	}
	if (sel.n)
		qsort(sel.v, sel.n, sizeof(void *), cmp_task_desc);
	for (size_t i = (size_t)(start < 0 ? 0 : start);
	     i < sel.n && (long long)json_object_array_length(arr) < limit; i++) {
		json_object *e = task_list_entry(sel.v[i]);
		if (e)
			json_object_array_add(arr, e);
	}
	resp_data(r, arr);
	r->has_total = true;
	r->total = (long long)sel.n;
	ptrvec_free(&sel);
}

/* The task of a .../tasks/{upid}[/what] route, or NULL with r answered:
 * for a UPID the node has no log file of, PVE's read_task_log answers the
 * open error as the log's one line, the other routes "no such task". */
static struct sim_task *lookup(struct cluster *c, const struct sim_req *req,
			       const char *node, const char *upid, const char *what,
			       struct sim_resp *r)
{
	struct sim_task *t = task_find(c, upid);
	if (!t || strcmp(t->node, node) != 0 || !t->started) {
		if (strncmp(upid, "UPID:", 5) != 0) {
			resp_param_error(r, "upid", "unable to parse worker upid '%s'",
					 upid);
		} else if (what && strcmp(what, "log") == 0) {
			json_object *arr = json_object_new_array(), *o = json_object_new_object();
			if (!arr || !o) {
				json_object_put(arr);
				json_object_put(o);
				resp_error(r, 500, "out of memory");
				return NULL;
			}
			json_object_object_add(o, "n", json_object_new_int64(1));
			json_object_object_add(
				o, "t",
				json_object_new_string("unable to open file - No such file or directory"));
			json_object_array_add(arr, o);
			resp_data(r, arr);
			r->has_total = true;
			r->total = 1;
		} else {
			resp_param_error(r, "upid", "no such task");
		}
		return NULL;
	}
	if (!task_allowed(req, t, "Sys.Audit", r))
		return NULL;
	return t;
}

static void task_log_route(const struct sim_req *req, struct sim_task *t,
			   struct sim_resp *r)
{
	long long start = param_int(req, "start", 0);
	long long limit = param_int(req, "limit", 50);
	size_t vis = task_visible_lines(t, req->now);
	if (limit == 0) /* PVE: read to the end */
		limit = (long long)vis;
	json_object *arr = json_object_new_array();
	if (!arr) {
		resp_error(r, 500, "out of memory");
		return;
	}
	if (start < 0)
		start = 0;
	for (size_t i = (size_t)start;
	     i < vis && (long long)json_object_array_length(arr) < limit; i++) {
		json_object *o = json_object_new_object();
		if (!o)
			break;
		json_object_object_add(o, "n", json_object_new_int64((long long)i + 1));
		json_object_object_add(o, "t", json_object_new_string(t->lines[i].text));
		json_object_array_add(arr, o);
	}
	/* PVE pads only an empty log (ExtJS wants a row); past the end of a
	 * log with lines the answer is []. */
	if (vis == 0) {
		json_object *o = json_object_new_object();
		if (o) {
			json_object_object_add(o, "n", json_object_new_int64(1));
			json_object_object_add(o, "t", json_object_new_string("no content"));
			json_object_array_add(arr, o);
		}
	}
	resp_data(r, arr);
	r->has_total = true;
	r->total = vis ? (long long)vis : 1;
}

bool routes_tasks(struct cluster *c, const struct sim_req *req,
		  struct path_parts *pp, struct sim_resp *r)
{
	char **s = pp->seg;
	bool get = strcmp(req->method, "GET") == 0;
	if (pp->n == 2 && strcmp(s[0], "cluster") == 0 &&
	    strcmp(s[1], "tasks") == 0) {
		if (!get)
			return false;
		list_tasks(c, req, NULL, r);
		/* /cluster/tasks shows running tasks too */
		json_object_put(r->data);
		r->data = json_object_new_array();
		struct ptrvec sel = {0};
		for (size_t i = 0; i < c->tasks.n; i++) {
			struct sim_task *t = c->tasks.v[i];
			if (t->started &&
			    task_allowed(req, t, "Sys.Audit", NULL) &&
			    ptrvec_push(&sel, t) < 0)
				break;
		}
		if (sel.n)
			qsort(sel.v, sel.n, sizeof(void *), cmp_task_desc);
		for (size_t i = 0; r->data && i < sel.n; i++) {
			json_object *e = task_list_entry(sel.v[i]);
			if (e)
				json_object_array_add(r->data, e);
		}
		ptrvec_free(&sel);
		r->has_total = false;
		return true;
	}
	if (pp->n < 3 || strcmp(s[0], "nodes") != 0 || strcmp(s[2], "tasks") != 0)
		return false;
	if (!route_node(c, s[1], r))
		return true;
	if (pp->n == 3) {
		if (!get)
			return false;
		list_tasks(c, req, s[1], r);
		return true;
	}
	struct sim_task *t = lookup(c, req, s[1], s[3], pp->n == 5 ? s[4] : NULL, r);
	if (!t)
		return true;
	if (pp->n == 4 && get) {
		const char *const names[] = {"log", "status"};
		resp_data(r, subdir_index("name", names, 2));
		return true;
	}
	if (pp->n == 4 && strcmp(req->method, "DELETE") == 0) {
		if (!task_allowed(req, t, "Sys.Modify", r))
			return true;
		task_stop(c, t, req->now);
		resp_data(r, NULL);
		return true;
	}
	if (pp->n == 5 && get && strcmp(s[4], "status") == 0) {
		resp_data(r, task_status_json(t, req->now));
		return true;
	}
	if (pp->n == 5 && get && strcmp(s[4], "log") == 0) {
		task_log_route(req, t, r);
		return true;
	}
	return false;
}
