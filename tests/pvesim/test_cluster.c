/* test_cluster.c - the cluster model through cluster_handle() with a
 * controlled simulated time: routes, tasks and their logs, locks, refusals
 * in PVE's words, privileges, migration, containers, PVE 3 OpenVZ. */
#include <criterion/criterion.h>

#include "cluster.h"
#include "simapi.h"
#include "util.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T0 1700000000.0

static char *scenario_path(const char *name)
{
	const char *slash = strrchr(__FILE__, '/');
	int dir = slash ? (int)(slash - __FILE__) : 0;
	return strprintf("%.*s%sscenarios/%s", dir, __FILE__, slash ? "/" : "", name);
}

static struct cluster *load(const char *name)
{
	char *path = scenario_path(name);
	char *err = NULL;
	struct cluster *c = cluster_load(path, T0, &err);
	cr_assert_not_null(c, "%s: %s", name, err ? err : "?");
	free(path);
	return c;
}

static struct cluster *load_text(const char *text)
{
	char tmpl[] = "/tmp/pvesim-test-XXXXXX";
	int fd = mkstemp(tmpl);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	char *err = NULL;
	struct cluster *c = cluster_load(tmpl, T0, &err);
	unlink(tmpl);
	cr_assert_not_null(c, "%s", err ? err : "?");
	return c;
}

/* One request as userid. params: JSON object text or NULL. */
static void call_user(struct cluster *c, const char *userid, const char *privs,
		      const char *method, const char *path, const char *params, double now,
		      const char *task_fail, struct sim_resp *r)
{
	json_object *p = params ? json_tokener_parse(params) : json_object_new_object();
	cr_assert_not_null(p, "bad params %s", params);
	struct sim_req req = {.method = method,
			      .path = path,
			      .params = p,
			      .userid = userid,
			      .privs = privs,
			      .task_fail = task_fail,
			      .now = now};
	memset(r, 0, sizeof(*r));
	cluster_handle(c, &req, r);
	json_object_put(p);
}

/* One request with the scenario's token root@pam!pvagent. */
static void call_as(struct cluster *c, const char *privs, const char *method,
		    const char *path, const char *params, double now,
		    const char *task_fail, struct sim_resp *r)
{
	call_user(c, "root@pam!pvagent", privs, method, path, params, now, task_fail, r);
}

static void call(struct cluster *c, const char *method, const char *path,
		 const char *params, double now, struct sim_resp *r)
{
	call_as(c, "all", method, path, params, now, NULL, r);
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v) || !v)
		return NULL;
	return json_object_get_string(v);
}

static void expect_error(struct sim_resp *r, int status, const char *msg)
{
	cr_assert_eq(r->status, status, "status %d (%s), want %d", r->status,
		     r->message ? r->message : "", status);
	cr_assert_not_null(r->message);
	cr_assert_str_eq(r->message, msg);
}

/* Status of a task at time t (malloc'd exitstatus or NULL while running). */
static char *task_exit(struct cluster *c, const char *upid, double t)
{
	char path[512];
	char node[64];
	cr_assert_eq(sscanf(upid, "UPID:%63[^:]:", node), 1);
	snprintf(path, sizeof(path), "/nodes/%s/tasks/%s/status", node, upid);
	struct sim_resp r;
	call(c, "GET", path, NULL, t, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	char *res = NULL;
	if (strcmp(jstr(r.data, "status"), "stopped") == 0)
		res = strdup(jstr(r.data, "exitstatus"));
	sim_resp_clear(&r);
	return res;
}

/* Advance until the task stops; returns exitstatus, *when = end time. */
static char *wait_task(struct cluster *c, const char *upid, double from,
		       double *when)
{
	for (int step = 0; step < 200000; step++) {
		double t = from + step * 0.5;
		char *st = task_exit(c, upid, t);
		if (st) {
			if (when)
				*when = t;
			return st;
		}
	}
	cr_assert_fail("task %s never ended", upid);
	return NULL;
}

/* The whole task log text at time t. */
static char *task_log_text(struct cluster *c, const char *upid, double t,
			   long long *total)
{
	char path[512], node[64];
	cr_assert_eq(sscanf(upid, "UPID:%63[^:]:", node), 1);
	snprintf(path, sizeof(path), "/nodes/%s/tasks/%s/log", node, upid);
	struct sim_resp r;
	call(c, "GET", path, "{\"limit\":\"100000\"}", t, &r);
	cr_assert_eq(r.status, 200);
	struct sbuf b = {0};
	for (size_t i = 0; i < json_object_array_length(r.data); i++) {
		sbuf_add(&b, jstr(json_object_array_get_idx(r.data, i), "t"));
		sbuf_addc(&b, '\n');
	}
	if (total) {
		cr_assert(r.has_total);
		*total = r.total;
	}
	sim_resp_clear(&r);
	return sbuf_steal(&b);
}

static json_object *get_config(struct cluster *c, const char *path, double t)
{
	struct sim_resp r;
	call(c, "GET", path, NULL, t, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	json_object *d = json_object_get(r.data);
	sim_resp_clear(&r);
	return d;
}

static char *start_task(struct cluster *c, const char *method, const char *path,
			const char *params, double now)
{
	struct sim_resp r;
	call(c, method, path, params, now, &r);
	cr_assert_eq(r.status, 200, "%s %s: %d %s", method, path, r.status,
		     r.message ? r.message : "");
	cr_assert_not_null(r.upid);
	cr_assert_str_eq(json_object_get_string(r.data), r.upid);
	char *u = strdup(r.upid);
	sim_resp_clear(&r);
	return u;
}

/* ---- basics ------------------------------------------------------------- */
Test(cluster, version)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	call(c, "GET", "/version", NULL, T0, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(jstr(r.data, "version"), "9.1.1");
	cr_assert_str_eq(jstr(r.data, "release"), "9.1");
	cr_assert_not_null(jstr(r.data, "repoid"));
	sim_resp_clear(&r);
	cluster_free(c);
	c = load("pve3.json");
	call(c, "GET", "/version", NULL, T0, &r);
	cr_assert_str_eq(jstr(r.data, "version"), "3.4-16");
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, unknown_route_is_501)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	call(c, "GET", "/nodes/pve1/bogus", NULL, T0, &r);
	expect_error(&r, 501, "Method 'GET /nodes/pve1/bogus' not implemented");
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, nodes_memory_follows_running_guests)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	call(c, "GET", "/nodes", NULL, T0, &r);
	cr_assert_eq(json_object_array_length(r.data), 2);
	json_object *n1 = json_object_array_get_idx(r.data, 0);
	cr_assert_str_eq(jstr(n1, "node"), "pve1");
	cr_assert_str_eq(jstr(n1, "status"), "online");
	/* fbsd9-legacy (1024 MiB) runs on pve1, plus 1 GiB for the host */
	cr_assert_eq(json_object_get_int64(json_object_object_get(n1, "mem")),
		     (int64_t)(2048 * MiB));
	json_object *n2 = json_object_array_get_idx(r.data, 1);
	cr_assert_eq(json_object_get_int64(json_object_object_get(n2, "mem")),
		     (int64_t)(1024 * MiB));
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, nextid)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	call(c, "GET", "/cluster/nextid", NULL, T0, &r);
	cr_assert(json_object_is_type(r.data, json_type_string));
	cr_assert_str_eq(json_object_get_string(r.data), "100");
	sim_resp_clear(&r);
	call(c, "GET", "/cluster/nextid", "{\"vmid\":\"190\"}", T0, &r);
	cr_assert_eq(r.status, 400);
	cr_assert_str_eq(jstr(r.errors, "vmid"), "VM 190 already exists");
	sim_resp_clear(&r);
	call(c, "GET", "/cluster/nextid", "{\"vmid\":\"555\"}", T0, &r);
	cr_assert_str_eq(json_object_get_string(r.data), "555");
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, resources_and_privileges)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	call(c, "GET", "/cluster/resources", "{\"type\":\"vm\"}", T0, &r);
	size_t n = json_object_array_length(r.data);
	cr_assert_eq(n, 5);
	bool seen = false;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(r.data, i);
		if (strcmp(jstr(e, "id"), "qemu/190") == 0) {
			seen = true;
			cr_assert_str_eq(jstr(e, "status"), "running");
			cr_assert_str_eq(jstr(e, "name"), "fbsd9-legacy");
			cr_assert_eq(json_object_get_int(json_object_object_get(e, "template")), 0);
		}
		if (strcmp(jstr(e, "id"), "qemu/9014") == 0)
			cr_assert_eq(json_object_get_int(json_object_object_get(e, "template")), 1);
	}
	cr_assert(seen);
	sim_resp_clear(&r);
	call_as(c, "Sys.Audit", "GET", "/cluster/resources", "{\"type\":\"vm\"}", T0,
		NULL, &r);
	cr_assert_eq(json_object_array_length(r.data), 0);
	sim_resp_clear(&r);
	call_as(c, "VM.Audit,Sys.Audit,Datastore.Audit", "POST", "/nodes/pve1/qemu",
		"{\"vmid\":\"100\"}", T0, NULL, &r);
	expect_error(&r, 403, "Permission check failed (/vms/100, VM.Allocate)");
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, storage_status_and_content)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	call(c, "GET", "/nodes/pve1/storage", NULL, T0, &r);
	cr_assert_eq(json_object_array_length(r.data), 3);
	uint64_t used_before = 0;
	for (size_t i = 0; i < 3; i++) {
		json_object *e = json_object_array_get_idx(r.data, i);
		if (strcmp(jstr(e, "storage"), "local-lvm") == 0)
			used_before = (uint64_t)json_object_get_int64(json_object_object_get(e, "used"));
	}
	/* 16+32+16+32+16 GiB of disks plus the 4 MiB cloud-init volume */
	cr_assert_eq(used_before, 112 * GiB + 4 * MiB);
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/pve2/storage/local/content", "{\"content\":\"vztmpl\"}", T0, &r);
	cr_assert_eq(json_object_array_length(r.data), 1);
	cr_assert_str_eq(jstr(json_object_array_get_idx(r.data, 0), "volid"),
			 "local:vztmpl/ubuntu-24.04-standard_24.04-2_amd64.tar.zst");
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/pve1/storage/nope/status", NULL, T0, &r);
	expect_error(&r, 500, "storage 'nope' does not exist");
	sim_resp_clear(&r);
	cluster_free(c);
}

/* ---- create, tasks, logs ------------------------------------------------ */
Test(cluster, create_vm_allocates_and_locks)
{
	struct cluster *c = load("demo.json");
	char *upid = start_task(c, "POST", "/nodes/pve1/qemu",
				"{\"vmid\":\"100\",\"name\":\"new\",\"memory\":\"2048\","
				"\"virtio0\":\"local-lvm:8,discard=on\","
				"\"net0\":\"virtio,bridge=vmbr0\"}",
				T0);
	regex_t re;
	cr_assert_eq(regcomp(&re, "^UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:"
				  "qmcreate:100:root@pam!pvagent:$",
			     REG_EXTENDED), 0);
	cr_assert_eq(regexec(&re, upid, 0, NULL, 0), 0, "bad UPID %s", upid);
	regfree(&re);
	json_object *conf = get_config(c, "/nodes/pve1/qemu/100/config", T0);
	cr_assert_str_eq(jstr(conf, "lock"), "create");
	json_object_put(conf);
	char *st = wait_task(c, upid, T0, NULL);
	cr_assert_str_eq(st, "OK");
	conf = get_config(c, "/nodes/pve1/qemu/100/config", T0 + 10);
	cr_assert_null(jstr(conf, "lock"));
	cr_assert_str_eq(jstr(conf, "virtio0"), "local-lvm:vm-100-disk-0,discard=on,size=8G");
	cr_assert(strncmp(jstr(conf, "net0"), "virtio=BC:24:11:", 16) == 0);
	cr_assert_not_null(jstr(conf, "digest"));
	json_object_put(conf);
	struct sim_resp r;
	call(c, "POST", "/nodes/pve2/qemu", "{\"vmid\":\"190\"}", T0 + 10, &r);
	expect_error(&r, 500, "unable to create VM 190 - VM 190 already exists on node 'pve1'");
	sim_resp_clear(&r);
	free(st);
	free(upid);
	cluster_free(c);
}

Test(cluster, missing_guest_message)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	call(c, "GET", "/nodes/pve1/qemu/999/config", NULL, T0, &r);
	expect_error(&r, 500, "Configuration file 'nodes/pve1/qemu-server/999.conf' does not exist");
	sim_resp_clear(&r);
	/* 190 lives on pve1, not pve2 */
	call(c, "GET", "/nodes/pve2/qemu/190/status/current", NULL, T0, &r);
	expect_error(&r, 500, "Configuration file 'nodes/pve2/qemu-server/190.conf' does not exist");
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, linked_clone_locks_new_vm)
{
	struct cluster *c = load("demo.json");
	char *upid = start_task(c, "POST", "/nodes/pve1/qemu/9014/clone",
				"{\"newid\":\"101\",\"name\":\"fbsd14\"}", T0);
	cr_assert(strstr(upid, ":qmclone:9014:") != NULL, "%s", upid);
	struct sim_resp r;
	call(c, "GET", "/nodes/pve1/qemu/101/status/current", NULL, T0, &r);
	cr_assert_str_eq(jstr(r.data, "lock"), "clone");
	sim_resp_clear(&r);
	call(c, "POST", "/nodes/pve1/qemu/101/status/start", NULL, T0, &r);
	expect_error(&r, 500, "VM is locked (clone)");
	sim_resp_clear(&r);
	json_object *src = get_config(c, "/nodes/pve1/qemu/9014/config", T0);
	cr_assert_null(jstr(src, "lock"));
	json_object_put(src);
	char *st = wait_task(c, upid, T0, NULL);
	cr_assert_str_eq(st, "OK");
	json_object *conf = get_config(c, "/nodes/pve1/qemu/101/config", T0 + 5);
	cr_assert_null(jstr(conf, "lock"));
	cr_assert_null(jstr(conf, "template"));
	cr_assert_str_eq(jstr(conf, "name"), "fbsd14");
	cr_assert_str_eq(jstr(conf, "virtio0"), "local-lvm:vm-101-disk-0,size=32G");
	cr_assert_str_neq(jstr(conf, "net0"), "virtio=BC:24:11:00:90:14,bridge=vmbr0");
	json_object_put(conf);
	char *log = task_log_text(c, upid, T0 + 5, NULL);
	cr_assert(strstr(log, "create linked clone of drive virtio0 (local-lvm:base-9014-disk-0)"),
		  "%s", log);
	cr_assert(strstr(log, "TASK OK"));
	free(log);
	/* the three "already exists" refusals */
	call(c, "POST", "/nodes/pve1/qemu/9014/clone", "{\"newid\":\"190\"}", T0 + 5, &r);
	expect_error(&r, 500, "unable to create VM 190: config file already exists");
	sim_resp_clear(&r);
	free(st);
	free(upid);
	cluster_free(c);
}

Test(cluster, clone_refusals)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	/* a guest on pve2 first */
	char *u = start_task(c, "POST", "/nodes/pve2/qemu", "{\"vmid\":\"300\"}", T0);
	free(wait_task(c, u, T0, NULL));
	free(u);
	call(c, "POST", "/nodes/pve1/qemu/9014/clone", "{\"newid\":\"300\"}", T0 + 5, &r);
	expect_error(&r, 500, "VM 300 already exists on node 'pve2'");
	sim_resp_clear(&r);
	call(c, "POST", "/nodes/pve1/qemu/9014/clone",
	     "{\"newid\":\"301\",\"target\":\"pve2\"}", T0 + 5, &r);
	expect_error(&r, 500, "can't clone VM to node 'pve2' (VM uses local storage)");
	sim_resp_clear(&r);
	call(c, "POST", "/nodes/pve1/qemu/9014/clone",
	     "{\"newid\":\"301\",\"target\":\"pve9\"}", T0 + 5, &r);
	expect_error(&r, 500, "no such cluster node 'pve9'");
	sim_resp_clear(&r);
	call(c, "POST", "/nodes/pve1/qemu/190/clone",
	     "{\"newid\":\"301\",\"full\":\"0\"}", T0 + 5, &r);
	cr_assert_eq(r.status, 500);
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, full_clone_progress_in_simulated_time)
{
	struct cluster *c = load("demo.json");
	char *upid = start_task(c, "POST", "/nodes/pve1/qemu/9014/clone",
				"{\"newid\":\"102\",\"full\":\"1\",\"target\":\"pve2\","
				"\"storage\":\"shared\"}",
				T0);
	/* 32 GiB at 200 MiB/s is about 164 s */
	long long early_total = 0, late_total = 0;
	char *early = task_log_text(c, upid, T0 + 20, &early_total);
	cr_assert_null(task_exit(c, upid, T0 + 20));
	char *late = task_log_text(c, upid, T0 + 400, &late_total);
	cr_assert_lt(early_total, late_total);
	cr_assert(strstr(late, "create full clone of drive virtio0 (local-lvm:base-9014-disk-0)"));
	cr_assert(strstr(late, "transferred 32.0 GiB of 32.0 GiB (100.00%)"), "%s", late);
	cr_assert_null(strstr(early, "(100.00%)"));
	char *st = task_exit(c, upid, T0 + 400);
	cr_assert_str_eq(st, "OK");
	json_object *conf = get_config(c, "/nodes/pve2/qemu/102/config", T0 + 400);
	cr_assert(strncmp(jstr(conf, "virtio0"), "shared:102/vm-102-disk-0.qcow2", 30) == 0,
		  "%s", jstr(conf, "virtio0"));
	json_object_put(conf);
	free(early);
	free(late);
	free(st);
	free(upid);
	cluster_free(c);
}

Test(cluster, task_log_paging_and_list)
{
	struct cluster *c = load("demo.json");
	char *upid = start_task(c, "POST", "/nodes/pve1/qemu/9014/clone",
				"{\"newid\":\"103\",\"full\":\"1\"}", T0);
	free(wait_task(c, upid, T0, NULL));
	char path[512];
	snprintf(path, sizeof(path), "/nodes/pve1/tasks/%s/log", upid);
	struct sim_resp r;
	call(c, "GET", path, "{\"start\":\"2\",\"limit\":\"3\"}", T0 + 1000, &r);
	cr_assert_eq(json_object_array_length(r.data), 3);
	cr_assert_eq(json_object_get_int(json_object_object_get(
			     json_object_array_get_idx(r.data, 0), "n")),
		     3);
	cr_assert_gt(r.total, 50);
	long long total = r.total;
	sim_resp_clear(&r);
	/* limit=0 reads to the end, as PVE's dump_logfile does */
	call(c, "GET", path, "{\"start\":\"2\",\"limit\":\"0\"}", T0 + 1000, &r);
	cr_assert_eq((long long)json_object_array_length(r.data), total - 2);
	sim_resp_clear(&r);
	/* past the end: [] (only an empty log is padded with "no content") */
	char past[32];
	snprintf(past, sizeof past, "{\"start\":\"%lld\"}", total);
	call(c, "GET", path, past, T0 + 1000, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(json_object_array_length(r.data), 0);
	cr_assert_eq(r.total, total);
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/pve1/tasks", "{\"typefilter\":\"qmclone\"}", T0 + 1000, &r);
	cr_assert_eq(json_object_array_length(r.data), 1);
	cr_assert_str_eq(jstr(json_object_array_get_idx(r.data, 0), "status"), "OK");
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/pve2/tasks", NULL, T0 + 1000, &r);
	cr_assert_eq(json_object_array_length(r.data), 0);
	sim_resp_clear(&r);
	free(upid);
	cluster_free(c);
}

Test(cluster, task_fault_and_stop)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	call_as(c, "all", "POST", "/nodes/pve1/qemu/9014/clone",
		"{\"newid\":\"104\",\"full\":\"1\"}", T0, "storage migration failed: io error", &r);
	cr_assert_eq(r.status, 200);
	char *upid = strdup(r.upid);
	sim_resp_clear(&r);
	double end;
	char *st = wait_task(c, upid, T0, &end);
	cr_assert_str_eq(st, "storage migration failed: io error");
	cr_assert_lt(end, T0 + 120); /* ended partway */
	call(c, "GET", "/nodes/pve1/qemu/104/config", NULL, end, &r);
	cr_assert_eq(r.status, 500, "failed clone left VM 104 behind");
	sim_resp_clear(&r);
	free(st);
	free(upid);
	/* stop a running task */
	upid = start_task(c, "POST", "/nodes/pve1/qemu/9014/clone",
			  "{\"newid\":\"105\",\"full\":\"1\"}", T0 + 200);
	char path[512];
	snprintf(path, sizeof(path), "/nodes/pve1/tasks/%s", upid);
	call(c, "DELETE", path, NULL, T0 + 210, &r);
	cr_assert_eq(r.status, 200);
	sim_resp_clear(&r);
	st = task_exit(c, upid, T0 + 210);
	cr_assert_str_eq(st, "interrupted by signal");
	free(st);
	free(upid);
	cluster_free(c);
}

/* ---- power -------------------------------------------------------------- */
Test(cluster, start_stop_and_refusals)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	char *u = start_task(c, "POST", "/nodes/pve1/qemu",
			     "{\"vmid\":\"110\",\"memory\":\"1024\",\"virtio0\":\"local-lvm:4\"}", T0);
	free(wait_task(c, u, T0, NULL));
	free(u);
	u = start_task(c, "POST", "/nodes/pve1/qemu/110/status/start", NULL, T0 + 10);
	cr_assert(strstr(u, ":qmstart:110:"));
	char *st = wait_task(c, u, T0 + 10, NULL);
	cr_assert_str_eq(st, "OK");
	free(st);
	free(u);
	call(c, "GET", "/nodes/pve1/qemu/110/status/current", NULL, T0 + 20, &r);
	cr_assert_str_eq(jstr(r.data, "status"), "running");
	sim_resp_clear(&r);
	call(c, "DELETE", "/nodes/pve1/qemu/110", NULL, T0 + 20, &r);
	expect_error(&r, 500, "VM 110 is running - destroy failed");
	sim_resp_clear(&r);
	u = start_task(c, "POST", "/nodes/pve1/qemu/110/status/shutdown", NULL, T0 + 20);
	st = wait_task(c, u, T0 + 20, NULL);
	cr_assert_str_eq(st, "OK");
	free(st);
	free(u);
	call(c, "GET", "/nodes/pve1/qemu/110/status/current", NULL, T0 + 30, &r);
	cr_assert_str_eq(jstr(r.data, "status"), "stopped");
	sim_resp_clear(&r);
	/* a template cannot start */
	call(c, "POST", "/nodes/pve1/qemu/9014/status/start", NULL, T0 + 30, &r);
	expect_error(&r, 500, "you can't start a vm if it's a template");
	sim_resp_clear(&r);
	u = start_task(c, "DELETE", "/nodes/pve1/qemu/110", NULL, T0 + 30);
	st = wait_task(c, u, T0 + 30, NULL);
	cr_assert_str_eq(st, "OK");
	call(c, "GET", "/nodes/pve1/qemu/110/config", NULL, T0 + 40, &r);
	cr_assert_eq(r.status, 500);
	sim_resp_clear(&r);
	free(st);
	free(u);
	cluster_free(c);
}

Test(cluster, not_enough_memory)
{
	struct cluster *c = load("demo.json");
	char *u = start_task(c, "POST", "/nodes/pve1/qemu",
			     "{\"vmid\":\"120\",\"memory\":\"40000\"}", T0);
	free(wait_task(c, u, T0, NULL));
	free(u);
	u = start_task(c, "POST", "/nodes/pve1/qemu/120/status/start", NULL, T0 + 5);
	char *st = wait_task(c, u, T0 + 5, NULL);
	cr_assert_str_eq(st, "start failed: QEMU exited with code 1");
	char *log = task_log_text(c, u, T0 + 10, NULL);
	cr_assert(strstr(log, "Cannot allocate memory"), "%s", log);
	free(log);
	free(st);
	free(u);
	cluster_free(c);
}

/* ---- config ------------------------------------------------------------- */
Test(cluster, config_disk_switch_makes_unused)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	char *u = start_task(c, "POST", "/nodes/pve1/qemu/9000/clone",
			     "{\"newid\":\"130\",\"name\":\"fb9\"}", T0);
	free(wait_task(c, u, T0, NULL));
	free(u);
	const char *p = "/nodes/pve1/qemu/130/config";
	json_object *conf = get_config(c, p, T0 + 5);
	char *ide0 = strdup(jstr(conf, "ide0"));
	char *digest = strdup(jstr(conf, "digest"));
	json_object_put(conf);
	/* stale digest */
	call(c, "PUT", p, "{\"delete\":\"ide0\",\"digest\":\"0000\"}", T0 + 5, &r);
	expect_error(&r, 500, "detected modified configuration - file changed by other user? Try again.");
	sim_resp_clear(&r);
	char params[512];
	snprintf(params, sizeof(params), "{\"delete\":\"ide0\",\"digest\":\"%s\"}", digest);
	call(c, "PUT", p, params, T0 + 5, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	cr_assert_null(r.data);
	sim_resp_clear(&r);
	conf = get_config(c, p, T0 + 6);
	cr_assert_null(jstr(conf, "ide0"));
	char *vol = strndup(ide0, strcspn(ide0, ","));
	cr_assert_str_eq(jstr(conf, "unused0"), vol);
	cr_assert_null(jstr(conf, "boot"), "ide0 should leave the boot order");
	json_object_put(conf);
	snprintf(params, sizeof(params),
		 "{\"virtio0\":\"%s\",\"boot\":\"order=virtio0\","
		 "\"net0\":\"virtio=BC:24:11:AA:BB:CC,bridge=vmbr0\"}",
		 vol);
	call(c, "PUT", p, params, T0 + 7, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	sim_resp_clear(&r);
	conf = get_config(c, p, T0 + 8);
	cr_assert_null(jstr(conf, "unused0"));
	cr_assert(strncmp(jstr(conf, "virtio0"), vol, strlen(vol)) == 0);
	cr_assert(strstr(jstr(conf, "virtio0"), "size=16G"), "%s", jstr(conf, "virtio0"));
	json_object_put(conf);
	free(vol);
	free(ide0);
	free(digest);
	cluster_free(c);
}

static void expect_param_error(struct sim_resp *r, const char *param, const char *msg)
{
	cr_assert_eq(r->status, 400, "status %d (%s), want 400", r->status,
		     r->message ? r->message : "");
	json_object *e = r->errors ? json_object_object_get(r->errors, param) : NULL;
	cr_assert_not_null(e, "no error for '%s'", param);
	cr_assert_str_eq(json_object_get_string(e), msg);
}

/* qemu-server: parent, snaptime, vmstate, runningmachine, runningcpu and
 * meta are not in the config schema; keys in none of the permission lists
 * are root@pam's alone, not its tokens'. */
Test(cluster, config_keys_pve_keeps_and_root_only_keys)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	const char *p = "/nodes/pve1/qemu/9000/config";
	const char *const internal[] = {"parent", "snaptime", "vmstate", "runningmachine",
					"runningcpu", "meta"};
	for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++) {
		char params[128];
		snprintf(params, sizeof params, "{\"%s\":\"x\"}", internal[i]);
		call_user(c, "root@pam", "all", "PUT", p, params, T0, NULL, &r);
		expect_param_error(&r, internal[i], "property is not defined in schema and the "
						    "schema does not allow additional properties");
		sim_resp_clear(&r);
		call(c, "POST", p, params, T0, &r);
		expect_param_error(&r, internal[i], "property is not defined in schema and the "
						    "schema does not allow additional properties");
		sim_resp_clear(&r);
	}
	call_user(c, "root@pam", "all", "PUT", p, "{\"delete\":\"parent\"}", T0, NULL, &r);
	expect_param_error(&r, "delete", "unknown option 'parent'");
	sim_resp_clear(&r);
	const char *const root_only[] = {"vmgenid", "hookscript", "args", "affinity"};
	const char *const values[] = {"1", "local:snippets/hook.pl", "-no-reboot", "0-1"};
	for (size_t i = 0; i < sizeof root_only / sizeof root_only[0]; i++) {
		char params[128], msg[128];
		snprintf(params, sizeof params, "{\"%s\":\"%s\"}", root_only[i], values[i]);
		snprintf(msg, sizeof msg, "only root can set '%s' config", root_only[i]);
		call(c, "PUT", p, params, T0, &r);
		expect_error(&r, 500, msg);
		sim_resp_clear(&r);
		call_user(c, "admin@pve", "all", "PUT", p, params, T0, NULL, &r);
		expect_error(&r, 500, msg);
		sim_resp_clear(&r);
		call_user(c, "root@pam", "all", "PUT", p, params, T0, NULL, &r);
		cr_assert_eq(r.status, 200, "root@pam sets %s: %s", root_only[i],
			     r.message ? r.message : "");
		sim_resp_clear(&r);
	}
	/* deleting is checked as setting */
	call(c, "PUT", p, "{\"delete\":\"meta\"}", T0, &r);
	expect_error(&r, 500, "only root can set 'meta' config");
	sim_resp_clear(&r);
	call(c, "PUT", p, "{\"delete\":\"args\"}", T0, &r);
	expect_error(&r, 500, "only root can set 'args' config");
	sim_resp_clear(&r);
	/* the listed keys stay open to tokens with the privilege */
	call(c, "PUT", p, "{\"description\":\"x\",\"cores\":\"2\",\"tags\":\"a\"}", T0, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	sim_resp_clear(&r);
	/* creating a guest takes the same rules */
	call(c, "POST", "/nodes/pve1/qemu", "{\"vmid\":\"150\",\"args\":\"-S\"}", T0, &r);
	expect_error(&r, 500, "only root can set 'args' config");
	sim_resp_clear(&r);
	cr_assert_null(cluster_guest(c, 150));
	cluster_free(c);
}

Test(cluster, running_vm_changes_are_pending)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	const char *p = "/nodes/pve1/qemu/190/config";
	call(c, "PUT", p, "{\"delete\":\"ide0\",\"agent\":\"1\"}", T0, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	sim_resp_clear(&r);
	call(c, "GET", p, "{\"current\":\"1\"}", T0 + 1, &r);
	cr_assert_not_null(jstr(r.data, "ide0"));
	cr_assert_null(jstr(r.data, "agent"));
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/pve1/qemu/190/pending", NULL, T0 + 1, &r);
	bool del = false, agent = false;
	for (size_t i = 0; i < json_object_array_length(r.data); i++) {
		json_object *e = json_object_array_get_idx(r.data, i);
		if (strcmp(jstr(e, "key"), "ide0") == 0)
			del = json_object_get_int(json_object_object_get(e, "delete")) == 1;
		if (strcmp(jstr(e, "key"), "agent") == 0)
			agent = jstr(e, "pending") && strcmp(jstr(e, "pending"), "1") == 0;
	}
	cr_assert(del && agent);
	sim_resp_clear(&r);
	/* stop applies pending: ide0 becomes unused0 */
	char *u = start_task(c, "POST", "/nodes/pve1/qemu/190/status/stop", NULL, T0 + 2);
	free(wait_task(c, u, T0 + 2, NULL));
	free(u);
	json_object *conf = get_config(c, p, T0 + 5);
	cr_assert_null(jstr(conf, "ide0"));
	cr_assert_str_eq(jstr(conf, "unused0"), "local-lvm:vm-190-disk-0");
	cr_assert_str_eq(jstr(conf, "agent"), "1");
	json_object_put(conf);
	cluster_free(c);
}

Test(cluster, sync_call_over_30s_is_596)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	/* 100 GiB preallocated on nfs at 2 GiB/s: 50 s */
	call(c, "PUT", "/nodes/pve1/qemu/9014/config", "{\"virtio1\":\"shared:100\"}", T0, &r);
	cr_assert_eq(r.status, 596);
	sim_resp_clear(&r);
	json_object *conf = get_config(c, "/nodes/pve1/qemu/9014/config", T0 + 60);
	cr_assert_str_eq(jstr(conf, "virtio1"), "shared:9014/vm-9014-disk-0.qcow2,size=100G");
	json_object_put(conf);
	/* a small one answers at once */
	call(c, "PUT", "/nodes/pve1/qemu/9014/config", "{\"virtio2\":\"shared:2\"}", T0 + 60, &r);
	cr_assert_eq(r.status, 200);
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, resize)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	char *u = start_task(c, "PUT", "/nodes/pve1/qemu/190/resize",
			     "{\"disk\":\"ide0\",\"size\":\"+4G\"}", T0);
	cr_assert(strstr(u, ":resize:190:"));
	free(wait_task(c, u, T0, NULL));
	free(u);
	json_object *conf = get_config(c, "/nodes/pve1/qemu/190/config", T0 + 5);
	cr_assert_str_eq(jstr(conf, "ide0"), "local-lvm:vm-190-disk-0,size=20G");
	json_object_put(conf);
	call(c, "PUT", "/nodes/pve1/qemu/190/resize", "{\"disk\":\"ide0\",\"size\":\"10G\"}",
	     T0 + 5, &r);
	expect_error(&r, 500, "shrinking disks is not supported");
	sim_resp_clear(&r);
	cluster_free(c);
}

/* ---- migration ---------------------------------------------------------- */
Test(cluster, migrate_refusals)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	call(c, "POST", "/nodes/pve1/qemu/190/migrate", "{\"target\":\"pve2\"}", T0, &r);
	expect_error(&r, 500, "can't migrate running VM without --online");
	sim_resp_clear(&r);
	call(c, "POST", "/nodes/pve1/qemu/190/migrate", "{\"target\":\"pve9\",\"online\":\"1\"}",
	     T0, &r);
	expect_error(&r, 500, "no such cluster node 'pve9'");
	sim_resp_clear(&r);
	call(c, "POST", "/nodes/pve1/qemu/190/migrate", "{\"target\":\"pve1\",\"online\":\"1\"}",
	     T0, &r);
	cr_assert_eq(r.status, 400);
	cr_assert_str_eq(jstr(r.errors, "target"), "target is local node.");
	sim_resp_clear(&r);
	char *u = start_task(c, "POST", "/nodes/pve1/qemu/190/migrate",
			     "{\"target\":\"pve2\",\"online\":\"1\"}", T0);
	char *st = wait_task(c, u, T0, NULL);
	cr_assert_str_eq(st, "migration aborted");
	char *log = task_log_text(c, u, T0 + 10, NULL);
	cr_assert(strstr(log, "can't live migrate attached local disks without "
			      "with-local-disks option"),
		  "%s", log);
	free(log);
	free(st);
	free(u);
	call(c, "GET", "/nodes/pve1/qemu/190/migrate", NULL, T0 + 10, &r);
	cr_assert_eq(json_object_get_int(json_object_object_get(r.data, "running")), 1);
	cr_assert_eq(json_object_array_length(json_object_object_get(r.data, "local_disks")), 1);
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(
				 json_object_object_get(r.data, "allowed_nodes"), 0)),
			 "pve2");
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, live_migration_with_local_disks)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	char *u = start_task(c, "POST", "/nodes/pve1/qemu/190/migrate",
			     "{\"target\":\"pve2\",\"online\":\"1\",\"with-local-disks\":\"1\"}",
			     T0);
	cr_assert(strstr(u, "UPID:pve1:") == u && strstr(u, ":qmigrate:190:"));
	json_object *conf = get_config(c, "/nodes/pve1/qemu/190/config", T0 + 1);
	cr_assert_str_eq(jstr(conf, "lock"), "migrate");
	json_object_put(conf);
	call(c, "PUT", "/nodes/pve1/qemu/190/config", "{\"name\":\"x\"}", T0 + 1, &r);
	expect_error(&r, 500, "VM is locked (migrate)");
	sim_resp_clear(&r);
	double end;
	char *st = wait_task(c, u, T0, &end);
	cr_assert_str_eq(st, "OK");
	/* 16 GiB of disk at 200 MiB/s + 1 GiB of RAM at 100 MiB/s */
	cr_assert_gt(end, T0 + 90);
	char *log = task_log_text(c, u, end, NULL);
	cr_assert(strstr(log, "starting migration of VM 190 to node 'pve2' (10.10.0.12)"), "%s", log);
	cr_assert(strstr(log, "drive-ide0: transferred 16.0 GiB of 16.0 GiB (100.00%)"), "%s", log);
	cr_assert(strstr(log, "migration active, transferred "), "%s", log);
	cr_assert(strstr(log, " VM-state, "));
	cr_assert(strstr(log, "average migration speed: "));
	cr_assert(strstr(log, " - downtime "));
	cr_assert(strstr(log, "migration finished successfully (duration 00:01:"), "%s", log);
	free(log);
	call(c, "GET", "/nodes/pve2/qemu/190/status/current", NULL, end, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(jstr(r.data, "status"), "running");
	cr_assert_null(jstr(r.data, "lock"));
	sim_resp_clear(&r);
	/* memory moved with it */
	call(c, "GET", "/nodes", NULL, end, &r);
	json_object *n1 = json_object_array_get_idx(r.data, 0);
	cr_assert_eq(json_object_get_int64(json_object_object_get(n1, "mem")), (int64_t)GiB);
	sim_resp_clear(&r);
	cr_assert_not_null(cluster_volume(c, "local-lvm:vm-190-disk-0", "pve2"));
	cr_assert_null(cluster_volume(c, "local-lvm:vm-190-disk-0", "pve1"));
	free(st);
	free(u);
	cluster_free(c);
}

/* bwlimit (KiB/s) caps the disk mirror and the memory transfer: 16 GiB of
 * disk and 1 GiB of RAM at 50 MiB/s take 17 GiB / 50 MiB/s = 348 s. */
Test(cluster, migration_bwlimit_caps_disk_and_memory)
{
	struct cluster *c = load("demo.json");
	char *u = start_task(c, "POST", "/nodes/pve1/qemu/190/migrate",
			     "{\"target\":\"pve2\",\"online\":\"1\",\"with-local-disks\":\"1\","
			     "\"bwlimit\":\"51200\"}", T0);
	double end;
	char *st = wait_task(c, u, T0, &end);
	cr_assert_str_eq(st, "OK");
	cr_assert_gt(end, T0 + 348, "ended %.1f s after the start", end - T0);
	cr_assert_lt(end, T0 + 360, "ended %.1f s after the start", end - T0);
	char *log = task_log_text(c, u, end, NULL);
	cr_assert(strstr(log, "average migration speed: 49.0 MiB/s"), "%s", log);
	free(log);
	free(st);
	free(u);
	cluster_free(c);
}

Test(cluster, migration_to_offline_node_fails)
{
	struct cluster *c = load_text(
		"{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"a\"},{\"name\":\"b\",\"online\":false}],"
		"\"storages\":[{\"id\":\"ceph\",\"type\":\"rbd\",\"content\":\"images\"}],"
		"\"guests\":[{\"vmid\":100,\"node\":\"a\",\"status\":\"running\",\"config\":"
		"{\"memory\":\"512\",\"virtio0\":\"ceph:vm-100-disk-0,size=4G\"}}]}");
	char *u = start_task(c, "POST", "/nodes/a/qemu/100/migrate",
			     "{\"target\":\"b\",\"online\":\"1\"}", T0);
	char *st = wait_task(c, u, T0, NULL);
	cr_assert_str_eq(st, "migration aborted");
	char *log = task_log_text(c, u, T0 + 10, NULL);
	cr_assert(strstr(log, "Can't connect to destination address using public key"), "%s", log);
	free(log);
	free(st);
	free(u);
	struct sim_resp r;
	call(c, "GET", "/nodes/b/qemu", NULL, T0, &r);
	cr_assert_eq(r.status, 595);
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, migrateall_moves_everything)
{
	struct cluster *c = load("demo.json");
	char *u = start_task(c, "POST", "/nodes/pve1/migrateall",
			     "{\"target\":\"pve2\",\"maxworkers\":\"2\","
			     "\"with-local-disks\":\"1\"}",
			     T0);
	cr_assert(strstr(u, ":migrateall::"), "%s", u);
	double end;
	char *st = wait_task(c, u, T0, &end);
	cr_assert_str_eq(st, "OK");
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		cr_assert_str_eq(g->node, "pve2", "guest %d stayed on %s", g->vmid, g->node);
		cr_assert_null(guest_lock(g));
	}
	struct sim_resp r;
	call(c, "GET", "/nodes/pve1/tasks", "{\"typefilter\":\"qmigrate\"}", end, &r);
	cr_assert_eq(json_object_array_length(r.data), 5);
	sim_resp_clear(&r);
	free(st);
	free(u);
	cluster_free(c);
}

/* ---- agent and boot ----------------------------------------------------- */
Test(cluster, agent_network_interfaces)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	const char *ag = "/nodes/pve1/qemu/190/agent/network-get-interfaces";
	call(c, "GET", ag, NULL, T0, &r);
	expect_error(&r, 500, "No QEMU guest agent configured");
	sim_resp_clear(&r);
	call(c, "PUT", "/nodes/pve1/qemu/190/config", "{\"agent\":\"1\"}", T0, &r);
	sim_resp_clear(&r);
	char *u = start_task(c, "POST", "/nodes/pve1/qemu/190/status/reboot", NULL, T0);
	double end;
	free(wait_task(c, u, T0, &end));
	free(u);
	call(c, "GET", ag, NULL, end, &r);
	expect_error(&r, 500, "QEMU guest agent is not running");
	sim_resp_clear(&r);
	call(c, "GET", ag, NULL, end + 10, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	json_object *res = json_object_object_get(r.data, "result");
	cr_assert_eq(json_object_array_length(res), 2);
	json_object *nic = json_object_array_get_idx(res, 1);
	cr_assert_str_eq(jstr(nic, "name"), "em0");
	cr_assert_str_eq(jstr(nic, "hardware-address"), "bc:24:11:00:01:90");
	json_object *ip = json_object_array_get_idx(json_object_object_get(nic, "ip-addresses"), 0);
	cr_assert_str_eq(jstr(ip, "ip-address"), "127.0.1.90");
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, state_exposes_boot_model)
{
	/* a FreeBSD 9.0 guest with a real root: switching to virtio without
	 * preparing it hangs at mountroot */
	char dir[] = "/tmp/pvesim-root-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *etc = strprintf("%s/etc", dir);
	cr_assert_eq(mkdir(etc, 0755), 0);
	char *fstab = strprintf("%s/etc/fstab", dir);
	FILE *f = fopen(fstab, "w");
	fputs("/dev/ad0s1a / ufs rw 1 1\n", f);
	fclose(f);
	char *rc = strprintf("%s/etc/rc.conf", dir);
	f = fopen(rc, "w");
	fputs("ifconfig_em0=\"DHCP\"\n", f);
	fclose(f);
	char *text = strprintf(
		"{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"}],"
		"\"storages\":[{\"id\":\"l\",\"type\":\"lvmthin\",\"content\":\"images\"}],"
		"\"guests\":[{\"vmid\":190,\"node\":\"pve1\",\"status\":\"running\","
		"\"fixture\":\"freebsd-9.0\",\"address\":\"127.0.1.90\",\"root\":\"%s\","
		"\"config\":{\"memory\":\"512\",\"ide0\":\"l:vm-190-disk-0,size=8G\","
		"\"net0\":\"e1000=BC:24:11:00:01:90,bridge=vmbr0\",\"boot\":\"order=ide0\"}}]}",
		dir);
	struct cluster *c = load_text(text);
	json_object *st = cluster_state(c, T0);
	json_object *g = json_object_array_get_idx(json_object_object_get(st, "guests"), 0);
	json_object *boot = json_object_object_get(g, "boot");
	cr_assert_str_eq(jstr(boot, "state"), "up");
	cr_assert(json_object_get_boolean(json_object_object_get(boot, "reachable")));
	cr_assert_str_eq(jstr(boot, "disk_bus"), "ide");
	cr_assert_str_eq(jstr(boot, "nic_model"), "e1000");
	json_object *m0 = json_object_array_get_idx(json_object_object_get(boot, "mounts"), 0);
	cr_assert_str_eq(jstr(m0, "dev"), "/dev/ad0s1a");
	cr_assert_str_eq(jstr(m0, "dir"), "/");
	json_object_put(st);
	/* the verdict is in the guest root from the load on */
	char *bootf = strprintf("%s/.pvagent-facts/boot", dir);
	char *bt = NULL;
	cr_assert_eq(read_file(bootf, &bt, NULL), 0, "%s", bootf);
	cr_expect_str_eq(bt, "state up\nreachable yes\nboot-id 1\ndisk-bus ide\nnic-model e1000\n"
			     "disk ad0\ndisk ada0\nnic em0\nmac bc:24:11:00:01:90\n"
			     "address 127.0.1.90\nmount /dev/ad0s1a / ufs\n");
	free(bt);
	char *u = start_task(c, "POST", "/nodes/pve1/qemu/190/status/stop", NULL, T0);
	free(wait_task(c, u, T0, NULL));
	free(u);
	cr_assert_eq(read_file(bootf, &bt, NULL), 0);
	cr_expect_str_eq(bt, "state stopped\nreachable no\n");
	free(bt);
	struct sim_resp r;
	call(c, "PUT", "/nodes/pve1/qemu/190/config",
	     "{\"delete\":\"ide0\",\"virtio0\":\"l:vm-190-disk-0\",\"boot\":\"order=virtio0\","
	     "\"net0\":\"virtio=BC:24:11:00:01:90,bridge=vmbr0\"}",
	     T0 + 5, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	sim_resp_clear(&r);
	u = start_task(c, "POST", "/nodes/pve1/qemu/190/status/start", NULL, T0 + 6);
	double end;
	char *ex = wait_task(c, u, T0 + 6, &end);
	cr_assert_str_eq(ex, "OK"); /* qemu starts; the guest hangs inside */
	free(ex);
	free(u);
	st = cluster_state(c, end);
	g = json_object_array_get_idx(json_object_object_get(st, "guests"), 0);
	boot = json_object_object_get(g, "boot");
	cr_assert_str_eq(jstr(boot, "state"), "mountroot");
	cr_assert_not(json_object_get_boolean(json_object_object_get(boot, "reachable")));
	cr_assert_str_eq(jstr(boot, "nic"), "vtnet0");
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(
				 json_object_object_get(boot, "disk_devices"), 0)),
			 "vtbd0");
	json_object_put(st);
	cr_assert_eq(read_file(bootf, &bt, NULL), 0);
	cr_expect(strstr(bt, "state mountroot\nreachable no\nboot-id 2\ndisk-bus virtio-blk\n") == bt,
		  "%s", bt);
	cr_expect(strstr(bt, "\nreason mountroot: ") && !strstr(bt, "\naddress "), "%s", bt);
	free(bt);
	free(bootf);
	cluster_free(c);
	char *rm = strprintf("rm -rf '%s'", dir);
	cr_assert_eq(system(rm), 0);
	free(rm);
	free(fstab);
	free(rc);
	free(etc);
	free(text);
}

/* ---- containers --------------------------------------------------------- */
Test(cluster, dhcp_container_gets_a_lease_at_start)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	char *u = start_task(c, "POST", "/nodes/pve1/lxc",
			     "{\"vmid\":\"201\",\"hostname\":\"ct201\","
			     "\"ostemplate\":\"local:vztmpl/ubuntu-24.04-standard_24.04-2_amd64.tar.zst\","
			     "\"rootfs\":\"local-lvm:8\",\"net0\":\"name=eth0,bridge=vmbr0,ip=dhcp\"}",
			     T0);
	free(wait_task(c, u, T0, NULL));
	free(u);
	u = start_task(c, "POST", "/nodes/pve1/lxc/201/status/start", NULL, T0 + 10);
	free(wait_task(c, u, T0 + 10, NULL));
	free(u);
	call(c, "GET", "/nodes/pve1/lxc/201/interfaces", NULL, T0 + 20, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	json_object *eth = json_object_array_get_idx(r.data, 1);
	cr_assert_str_eq(jstr(eth, "name"), "eth0");
	cr_expect_str_eq(jstr(eth, "inet"), "127.0.1.100/24", "a DHCP lease from 127.0.1.100");
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, lxc_lifecycle_and_restart_migration)
{
	struct cluster *c = load("demo.json");
	struct sim_resp r;
	char *u = start_task(c, "POST", "/nodes/pve1/lxc",
			     "{\"vmid\":\"200\",\"hostname\":\"ct200\","
			     "\"ostemplate\":\"local:vztmpl/ubuntu-24.04-standard_24.04-2_amd64.tar.zst\","
			     "\"rootfs\":\"local-lvm:8\",\"net0\":\"name=eth0,bridge=vmbr0,ip=10.0.0.200/24\","
			     "\"unprivileged\":\"1\",\"password\":\"secret\"}",
			     T0);
	cr_assert(strstr(u, ":vzcreate:200:"));
	char *st = wait_task(c, u, T0, NULL);
	cr_assert_str_eq(st, "OK");
	free(st);
	free(u);
	json_object *conf = get_config(c, "/nodes/pve1/lxc/200/config", T0 + 10);
	cr_assert_str_eq(jstr(conf, "rootfs"), "local-lvm:vm-200-disk-0,size=8G");
	cr_assert_null(jstr(conf, "password"));
	cr_assert_str_eq(jstr(conf, "ostype"), "ubuntu");
	json_object_put(conf);
	call(c, "GET", "/nodes/pve1/lxc/200/interfaces", NULL, T0 + 10, &r);
	expect_error(&r, 500, "CT 200 not running");
	sim_resp_clear(&r);
	u = start_task(c, "POST", "/nodes/pve1/lxc/200/status/start", NULL, T0 + 10);
	free(wait_task(c, u, T0 + 10, NULL));
	free(u);
	call(c, "GET", "/nodes/pve1/lxc/200/interfaces", NULL, T0 + 20, &r);
	cr_assert_eq(r.status, 200);
	json_object *eth = json_object_array_get_idx(r.data, 1);
	cr_assert_str_eq(jstr(eth, "name"), "eth0");
	cr_assert_str_eq(jstr(eth, "inet"), "10.0.0.200/24");
	sim_resp_clear(&r);
	call(c, "POST", "/nodes/pve1/lxc/200/migrate", "{\"target\":\"pve2\"}", T0 + 20, &r);
	expect_error(&r, 500, "can't migrate running container without --online or --restart");
	sim_resp_clear(&r);
	u = start_task(c, "POST", "/nodes/pve1/lxc/200/migrate",
		       "{\"target\":\"pve2\",\"online\":\"1\"}", T0 + 20);
	st = wait_task(c, u, T0 + 20, NULL);
	cr_assert_str_eq(st, "migration aborted");
	char *log = task_log_text(c, u, T0 + 30, NULL);
	cr_assert(strstr(log, "lxc live migration is currently not implemented"));
	free(log);
	free(st);
	free(u);
	u = start_task(c, "POST", "/nodes/pve1/lxc/200/migrate",
		       "{\"target\":\"pve2\",\"restart\":\"1\"}", T0 + 30);
	double end;
	st = wait_task(c, u, T0 + 30, &end);
	cr_assert_str_eq(st, "OK");
	log = task_log_text(c, u, end, NULL);
	cr_assert(strstr(log, "shutdown CT 200"));
	cr_assert(strstr(log, "start container on target node"));
	free(log);
	free(st);
	free(u);
	call(c, "GET", "/nodes/pve2/lxc/200/status/current", NULL, end, &r);
	cr_assert_str_eq(jstr(r.data, "status"), "running");
	sim_resp_clear(&r);
	call(c, "DELETE", "/nodes/pve2/lxc/200", NULL, end, &r);
	expect_error(&r, 500, "unable to destroy CT 200 - container is running");
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, pve3_openvz)
{
	struct cluster *c = load("pve3.json");
	struct sim_resp r;
	call(c, "GET", "/nodes/pve1/lxc", NULL, T0, &r);
	cr_assert_eq(r.status, 501);
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/pve1/openvz", NULL, T0, &r);
	cr_assert_eq(json_object_array_length(r.data), 1);
	sim_resp_clear(&r);
	char *u = start_task(c, "POST", "/nodes/pve1/openvz",
			     "{\"vmid\":\"102\",\"ostemplate\":"
			     "\"local:vztmpl/debian-7.0-standard_7.0-2_amd64.tar.gz\","
			     "\"hostname\":\"ct102\",\"ip_address\":\"10.0.0.102\",\"disk\":\"4\","
			     "\"memory\":\"512\",\"swap\":\"256\"}",
			     T0);
	char *st = wait_task(c, u, T0, NULL);
	cr_assert_str_eq(st, "OK");
	free(st);
	free(u);
	json_object *conf = get_config(c, "/nodes/pve1/openvz/102/config", T0 + 10);
	cr_assert_str_eq(jstr(conf, "ostemplate"), "debian-7.0-standard_7.0-2_amd64");
	cr_assert_str_eq(jstr(conf, "swap"), "256");
	json_object_put(conf);
	call(c, "POST", "/nodes/pve1/openvz/101/migrate", "{\"target\":\"pve2\"}", T0 + 10, &r);
	expect_error(&r, 500, "can't migrate running container without --online");
	sim_resp_clear(&r);
	u = start_task(c, "POST", "/nodes/pve1/openvz/101/migrate",
		       "{\"target\":\"pve2\",\"online\":\"1\"}", T0 + 10);
	double end;
	st = wait_task(c, u, T0 + 10, &end);
	cr_assert_str_eq(st, "OK");
	char *log = task_log_text(c, u, end, NULL);
	cr_assert(strstr(log, "start live migration - suspending container"), "%s", log);
	cr_assert(strstr(log, "migration finished successfuly (duration "), "%s", log);
	free(log);
	free(st);
	free(u);
	call(c, "GET", "/nodes/pve2/openvz/101/status/current", NULL, end, &r);
	cr_assert_str_eq(jstr(r.data, "status"), "running");
	sim_resp_clear(&r);
	cluster_free(c);
}

/* ---- snapshots and HA --------------------------------------------------- */
Test(cluster, snapshots)
{
	struct cluster *c = load_text(
		"{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\"}],"
		"\"storages\":[{\"id\":\"thin\",\"type\":\"lvmthin\",\"content\":\"images\"},"
		"{\"id\":\"thick\",\"type\":\"lvm\",\"content\":\"images\"}],"
		"\"guests\":[{\"vmid\":100,\"node\":\"pve1\",\"config\":"
		"{\"virtio0\":\"thin:vm-100-disk-0,size=4G\"}},"
		"{\"vmid\":101,\"node\":\"pve1\",\"config\":"
		"{\"virtio0\":\"thick:vm-101-disk-0,size=4G\"}}]}");
	char *u = start_task(c, "POST", "/nodes/pve1/qemu/100/snapshot",
			     "{\"snapname\":\"before\"}", T0);
	char *st = wait_task(c, u, T0, NULL);
	cr_assert_str_eq(st, "OK");
	free(st);
	free(u);
	struct sim_resp r;
	call(c, "GET", "/nodes/pve1/qemu/100/snapshot", NULL, T0 + 5, &r);
	cr_assert_eq(json_object_array_length(r.data), 2);
	cr_assert_str_eq(jstr(json_object_array_get_idx(r.data, 0), "name"), "before");
	sim_resp_clear(&r);
	call(c, "POST", "/nodes/pve1/qemu/100/snapshot", "{\"snapname\":\"before\"}", T0 + 5, &r);
	expect_error(&r, 500, "snapshot name 'before' already used");
	sim_resp_clear(&r);
	u = start_task(c, "POST", "/nodes/pve1/qemu/101/snapshot", "{\"snapname\":\"s\"}",
		       T0 + 5);
	st = wait_task(c, u, T0 + 5, NULL);
	cr_assert_str_eq(st, "snapshot feature is not available");
	free(st);
	free(u);
	u = start_task(c, "POST", "/nodes/pve1/qemu/100/snapshot/before/rollback", NULL, T0 + 10);
	st = wait_task(c, u, T0 + 10, NULL);
	cr_assert_str_eq(st, "OK");
	free(st);
	free(u);
	cluster_free(c);
}

Test(cluster, ha_resources_and_migrate)
{
	struct cluster *c = load_text(
		"{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
		"\"storages\":[{\"id\":\"ceph\",\"type\":\"rbd\",\"content\":\"images\"}],"
		"\"guests\":[{\"vmid\":100,\"node\":\"a\",\"status\":\"running\",\"config\":"
		"{\"memory\":\"512\",\"virtio0\":\"ceph:vm-100-disk-0,size=4G\"}}],"
		"\"ha\":[{\"sid\":\"vm:100\",\"state\":\"started\"}]}");
	struct sim_resp r;
	call(c, "GET", "/cluster/ha/resources", NULL, T0, &r);
	cr_assert_eq(json_object_array_length(r.data), 1);
	cr_assert_str_eq(jstr(json_object_array_get_idx(r.data, 0), "sid"), "vm:100");
	sim_resp_clear(&r);
	call(c, "POST", "/cluster/ha/resources/vm:100/migrate", "{\"node\":\"b\"}", T0, &r);
	cr_assert_eq(r.status, 200);
	sim_resp_clear(&r);
	call(c, "GET", "/cluster/ha/status/current", NULL, T0 + 300, &r);
	bool moved = false;
	for (size_t i = 0; i < json_object_array_length(r.data); i++) {
		json_object *e = json_object_array_get_idx(r.data, i);
		if (jstr(e, "sid") && strcmp(jstr(e, "node"), "b") == 0)
			moved = true;
	}
	cr_assert(moved);
	sim_resp_clear(&r);
	call(c, "DELETE", "/nodes/b/qemu/100", NULL, T0 + 300, &r);
	expect_error(&r, 500, "unable to remove VM 100 - used in HA resources and purge "
			      "parameter not set.");
	sim_resp_clear(&r);
	cluster_free(c);
}

Test(cluster, migrateall_skips_local_disks_with_warning)
{
	struct cluster *c = load("demo.json");
	char *u = start_task(c, "POST", "/nodes/pve1/migrateall",
			     "{\"target\":\"pve2\",\"maxworkers\":\"1\",\"vms\":\"190,9014\"}", T0);
	double end;
	char *st = wait_task(c, u, T0, &end);
	cr_assert_str_eq(st, "WARNINGS: 1");
	char *log = task_log_text(c, u, end, NULL);
	cr_assert(strstr(log, "skip VM 190 - precondition check failed:"), "%s", log);
	cr_assert(strstr(log, "  Has local disks: local-lvm:vm-190-disk-0"), "%s", log);
	cr_assert(strstr(log, "TASK WARNINGS: 1"), "%s", log);
	free(log);
	cr_assert_str_eq(cluster_guest(c, 190)->node, "pve1");
	cr_assert_str_eq(cluster_guest(c, 9014)->node, "pve2");
	cr_assert_str_eq(cluster_guest(c, 9000)->node, "pve1"); /* not in vms */
	struct sim_resp r;
	call(c, "POST", "/nodes/pve1/migrateall", "{\"target\":\"pve2\"}", end, &r);
	expect_error(&r, 500, "either 'maxworkers' parameter or max_workers in "
			      "datacenter.cfg must be set!");
	sim_resp_clear(&r);
	free(st);
	free(u);
	cluster_free(c);
}

Test(cluster, ha_managed_vm_migrates_through_ha)
{
	struct cluster *c = load_text(
		"{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
		"\"storages\":[{\"id\":\"ceph\",\"type\":\"rbd\",\"content\":\"images\"}],"
		"\"guests\":[{\"vmid\":100,\"node\":\"a\",\"status\":\"running\",\"config\":"
		"{\"memory\":\"512\",\"virtio0\":\"ceph:vm-100-disk-0,size=4G\"}}],"
		"\"ha\":[{\"sid\":\"vm:100\"}]}");
	char *u = start_task(c, "POST", "/nodes/a/qemu/100/migrate",
			     "{\"target\":\"b\",\"online\":\"1\"}", T0);
	cr_assert(strstr(u, ":hamigrate:100:"), "%s", u);
	char *st = wait_task(c, u, T0, NULL);
	cr_assert_str_eq(st, "OK");
	char *log = task_log_text(c, u, T0 + 2, NULL);
	cr_assert(strstr(log, "Requesting HA migration for VM 100 to node b"), "%s", log);
	free(log);
	struct sim_resp r;
	call(c, "GET", "/nodes/b/qemu/100/status/current", NULL, T0 + 60, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	cr_assert_str_eq(jstr(r.data, "status"), "running");
	sim_resp_clear(&r);
	free(st);
	free(u);
	cluster_free(c);
}

static const char *guest_status(struct cluster *c, const char *kind, const char *node, int vmid,
				double now)
{
	static char buf[32];
	char path[96];
	snprintf(path, sizeof path, "/nodes/%s/%s/%d/status/current", node, kind, vmid);
	struct sim_resp r;
	call(c, "GET", path, NULL, now, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	snprintf(buf, sizeof buf, "%s", jstr(r.data, "status"));
	sim_resp_clear(&r);
	return buf;
}

static const char *vm_status(struct cluster *c, const char *node, int vmid, double now)
{
	return guest_status(c, "qemu", node, vmid, now);
}

/* qemu-server: an HA-managed VM's start, stop and shutdown only queue a
 * request to the HA stack (hastart/hastop, done at once); the guest
 * changes state when the CRM and LRM get to it. */
Test(cluster, ha_managed_vm_power_goes_through_ha)
{
	struct cluster *c = load_text(
		"{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"a\"}],"
		"\"storages\":[{\"id\":\"ceph\",\"type\":\"rbd\",\"content\":\"images\"}],"
		"\"guests\":[{\"vmid\":100,\"node\":\"a\",\"config\":"
		"{\"memory\":\"512\",\"virtio0\":\"ceph:vm-100-disk-0,size=4G\"}}],"
		"\"ha\":[{\"sid\":\"vm:100\",\"state\":\"stopped\"}]}");
	char *u = start_task(c, "POST", "/nodes/a/qemu/100/status/start", NULL, T0);
	cr_assert(strstr(u, ":hastart:100:"), "%s", u);
	double end = 0;
	char *st = wait_task(c, u, T0, &end);
	cr_assert_str_eq(st, "OK");
	free(st);
	char *log = task_log_text(c, u, end, NULL);
	cr_assert(strstr(log, "Requesting HA start for VM 100"), "%s", log);
	free(log);
	free(u);
	cr_assert_str_eq(vm_status(c, "a", 100, end), "stopped", "the task ends before the start");
	cr_assert_str_eq(vm_status(c, "a", 100, T0 + 10), "running");
	struct sim_resp r;
	call(c, "GET", "/nodes/a/qemu/100/status/current", NULL, T0 + 10, &r);
	cr_assert_str_eq(jstr(json_object_object_get(r.data, "ha"), "state"), "started");
	sim_resp_clear(&r);
	const char *const downs[] = {"shutdown", "stop"};
	double t = T0 + 20;
	for (size_t i = 0; i < 2; i++) {
		char path[64];
		snprintf(path, sizeof path, "/nodes/a/qemu/100/status/%s", downs[i]);
		u = start_task(c, "POST", path, NULL, t);
		cr_assert(strstr(u, ":hastop:100:"), "%s", u);
		st = wait_task(c, u, t, &end);
		cr_assert_str_eq(st, "OK");
		free(st);
		free(u);
		cr_assert_str_eq(vm_status(c, "a", 100, end), "running", "%s: not yet", downs[i]);
		cr_assert_str_eq(vm_status(c, "a", 100, t + 15), "stopped", "%s", downs[i]);
		call(c, "GET", "/nodes/a/qemu/100/status/current", NULL, t + 15, &r);
		cr_assert_str_eq(jstr(json_object_object_get(r.data, "ha"), "state"), "stopped");
		sim_resp_clear(&r);
		/* back up for the next one */
		u = start_task(c, "POST", "/nodes/a/qemu/100/status/start", NULL, t + 20);
		free(wait_task(c, u, t + 20, NULL));
		free(u);
		cr_assert_str_eq(vm_status(c, "a", 100, t + 35), "running");
		t += 40;
	}
	cluster_free(c);
}

/* pve-container likewise: an HA-managed container's start and shutdown
 * are hastart/hastop tasks that end at once; the LRM starts and stops it
 * HA_DELAY later. */
Test(cluster, ha_managed_ct_power_goes_through_ha)
{
	struct cluster *c = load_text(
		"{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"a\"}],"
		"\"storages\":[{\"id\":\"ceph\",\"type\":\"rbd\",\"content\":\"rootdir\"}],"
		"\"guests\":[{\"vmid\":200,\"node\":\"a\",\"type\":\"lxc\",\"config\":"
		"{\"memory\":\"512\",\"rootfs\":\"ceph:vm-200-disk-0,size=4G\"}}],"
		"\"ha\":[{\"sid\":\"ct:200\",\"state\":\"stopped\"}]}");
	char *u = start_task(c, "POST", "/nodes/a/lxc/200/status/start", NULL, T0);
	cr_assert(strstr(u, ":hastart:200:"), "%s", u);
	double end = 0;
	char *st = wait_task(c, u, T0, &end);
	cr_assert_str_eq(st, "OK");
	free(st);
	char *log = task_log_text(c, u, end, NULL);
	cr_assert(strstr(log, "Requesting HA start for CT 200"), "%s", log);
	free(log);
	free(u);
	cr_assert_str_eq(guest_status(c, "lxc", "a", 200, end), "stopped",
			 "the task ends before the start");
	cr_assert_str_eq(guest_status(c, "lxc", "a", 200, T0 + 10), "running");
	u = start_task(c, "POST", "/nodes/a/lxc/200/status/shutdown", NULL, T0 + 20);
	cr_assert(strstr(u, ":hastop:200:"), "%s", u);
	st = wait_task(c, u, T0 + 20, &end);
	cr_assert_str_eq(st, "OK");
	free(st);
	free(u);
	cr_assert_str_eq(guest_status(c, "lxc", "a", 200, end), "running", "not yet");
	cr_assert_str_eq(guest_status(c, "lxc", "a", 200, T0 + 35), "stopped");
	cluster_free(c);
}

/* qemu-server: a boot order names devices that exist (in the config, its
 * pending part or the request, not deleted by it); setting one drops the
 * legacy bootdisk; deleting a disk leaves bootdisk alone. */
Test(cluster, boot_order_devices_and_bootdisk)
{
	struct cluster *c = load_text(
		"{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"a\"}],"
		"\"storages\":[{\"id\":\"thin\",\"type\":\"lvmthin\",\"content\":\"images\"}],"
		"\"guests\":[{\"vmid\":100,\"node\":\"a\",\"config\":"
		"{\"ide0\":\"thin:vm-100-disk-0,size=4G\",\"boot\":\"cdn\",\"bootdisk\":\"ide0\","
		"\"net0\":\"e1000=BC:24:11:00:00:64,bridge=vmbr0\"}}]}");
	const char *p = "/nodes/a/qemu/100/config";
	struct sim_resp r;
	call(c, "PUT", p, "{\"boot\":\"order=virtio0;net0\"}", T0, &r);
	expect_error(&r, 500, "invalid bootorder: device 'virtio0' does not exist'");
	sim_resp_clear(&r);
	call(c, "PUT", p, "{\"delete\":\"ide0\",\"boot\":\"order=ide0\"}", T0, &r);
	expect_error(&r, 500, "invalid bootorder: device 'ide0' does not exist'");
	sim_resp_clear(&r);
	/* POST: the worker's error ends the task */
	char *u = start_task(c, "POST", p, "{\"boot\":\"order=scsi3\"}", T0);
	char *st = wait_task(c, u, T0, NULL);
	cr_assert_str_eq(st, "invalid bootorder: device 'scsi3' does not exist'");
	free(st);
	free(u);
	json_object *conf = get_config(c, p, T0 + 2);
	cr_assert_str_eq(jstr(conf, "boot"), "cdn", "nothing changed");
	json_object_put(conf);
	/* deleting the disk keeps bootdisk */
	call(c, "PUT", p, "{\"delete\":\"ide0\"}", T0 + 3, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	sim_resp_clear(&r);
	conf = get_config(c, p, T0 + 3);
	cr_assert_null(jstr(conf, "ide0"));
	cr_assert_str_eq(jstr(conf, "bootdisk"), "ide0");
	json_object_put(conf);
	/* a device this request adds counts; order= removes bootdisk */
	call(c, "PUT", p,
	     "{\"virtio0\":\"thin:vm-100-disk-0\",\"boot\":\"order=virtio0;net0\"}", T0 + 4, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	sim_resp_clear(&r);
	conf = get_config(c, p, T0 + 4);
	cr_assert_str_eq(jstr(conf, "boot"), "order=virtio0;net0");
	cr_assert_null(jstr(conf, "bootdisk"), "order= replaces bootdisk");
	json_object_put(conf);
	cluster_free(c);
}

/* The guest's entry in /cluster/resources (borrowed from *list, which the
 * caller puts), or NULL. */
static json_object *resource_of(struct cluster *c, int vmid, double now, json_object **list)
{
	struct sim_resp r;
	call(c, "GET", "/cluster/resources", "{\"type\":\"vm\"}", now, &r);
	cr_assert_eq(r.status, 200);
	*list = json_object_get(r.data);
	sim_resp_clear(&r);
	for (size_t i = 0; i < json_object_array_length(*list); i++) {
		json_object *e = json_object_array_get_idx(*list, i);
		if (json_object_get_int(json_object_object_get(e, "vmid")) == vmid)
			return e;
	}
	return NULL;
}

static void expect_resource(struct cluster *c, int vmid, double now, const char *name,
			    const char *status)
{
	json_object *list = NULL;
	json_object *e = resource_of(c, vmid, now, &list);
	cr_assert_not_null(e, "VM %d not in /cluster/resources", vmid);
	if (name)
		cr_expect_str_eq(jstr(e, "name"), name, "at +%.0f s", now - T0);
	else
		cr_expect_null(jstr(e, "name"), "at +%.0f s: no name yet", now - T0);
	cr_expect_str_eq(jstr(e, "status"), status, "at +%.0f s", now - T0);
	json_object_put(list);
}

/* pvestatd: /cluster/resources takes names and status every 10 s; a new
 * guest is listed at once, without a name, status "unknown"; the node's
 * own list reads the configs. The updates come at the nodes' uptime
 * 10k s; the scenario's nodes came up a day before T0, so at T0 + 10k. */
Test(cluster, resources_lag_behind_the_node_lists)
{
	struct cluster *c = load("demo.json");
	char *u = start_task(c, "POST", "/nodes/pve1/qemu/9024/clone",
			     "{\"newid\":\"130\",\"name\":\"n1\"}", T0 + 1);
	free(wait_task(c, u, T0 + 1, NULL));
	free(u);
	expect_resource(c, 130, T0 + 5, NULL, "unknown");
	struct sim_resp r;
	call(c, "GET", "/nodes/pve1/qemu", NULL, T0 + 5, &r);
	bool named = false;
	for (size_t i = 0; i < json_object_array_length(r.data); i++) {
		json_object *e = json_object_array_get_idx(r.data, i);
		if (json_object_get_int(json_object_object_get(e, "vmid")) == 130)
			named = jstr(e, "name") && strcmp(jstr(e, "name"), "n1") == 0 &&
				strcmp(jstr(e, "status"), "stopped") == 0;
	}
	cr_assert(named, "the node list is current");
	sim_resp_clear(&r);
	expect_resource(c, 130, T0 + 11, "n1", "stopped");
	/* a rename and a start show at the next update */
	call(c, "PUT", "/nodes/pve1/qemu/130/config", "{\"name\":\"n2\"}", T0 + 12, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	sim_resp_clear(&r);
	u = start_task(c, "POST", "/nodes/pve1/qemu/130/status/start", NULL, T0 + 12);
	free(wait_task(c, u, T0 + 12, NULL));
	free(u);
	expect_resource(c, 130, T0 + 16, "n1", "stopped");
	expect_resource(c, 130, T0 + 21, "n2", "running");
	cluster_free(c);
}

Test(cluster, upid_fields_match_task_status)
{
	struct cluster *c = load("demo.json");
	char *u = start_task(c, "POST", "/nodes/pve1/qemu/190/status/stop", NULL, T0 + 7);
	unsigned pid, pstart, start;
	char type[32], id[32], user[64];
	cr_assert_eq(sscanf(u, "UPID:pve1:%8X:%8X:%8X:%31[^:]:%31[^:]:%63[^:]:", &pid, &pstart,
			    &start, type, id, user),
		     6, "%s", u);
	char path[512];
	snprintf(path, sizeof(path), "/nodes/pve1/tasks/%s/status", u);
	struct sim_resp r;
	call(c, "GET", path, NULL, T0 + 7, &r);
	cr_assert_str_eq(jstr(r.data, "status"), "running");
	cr_assert_null(jstr(r.data, "exitstatus"));
	cr_assert_eq(json_object_get_int64(json_object_object_get(r.data, "pid")), pid);
	cr_assert_eq(json_object_get_int64(json_object_object_get(r.data, "pstart")), pstart);
	cr_assert_eq(json_object_get_int64(json_object_object_get(r.data, "starttime")), start);
	cr_assert_eq(start, (unsigned)(T0 + 7));
	cr_assert_str_eq(jstr(r.data, "type"), "qmstop");
	cr_assert_str_eq(type, "qmstop");
	cr_assert_str_eq(jstr(r.data, "id"), "190");
	cr_assert_str_eq(jstr(r.data, "user"), "root@pam!pvagent");
	cr_assert_str_eq(jstr(r.data, "upid"), u);
	sim_resp_clear(&r);
	/* an unknown task */
	call(c, "GET", "/nodes/pve1/tasks/UPID:pve1:00000001:00000001:00000001:x:1:root@pam:/status",
	     NULL, T0 + 8, &r);
	expect_error(&r, 400, "Parameter verification failed.");
	cr_assert_str_eq(jstr(r.errors, "upid"), "no such task");
	sim_resp_clear(&r);
	/* its log: PVE answers the open error as the only line */
	call(c, "GET", "/nodes/pve1/tasks/UPID:pve1:00000001:00000001:00000001:x:1:root@pam:/log",
	     NULL, T0 + 8, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(json_object_array_length(r.data), 1);
	cr_assert_str_eq(jstr(json_object_array_get_idx(r.data, 0), "t"),
			 "unable to open file - No such file or directory");
	sim_resp_clear(&r);
	free(u);
	cluster_free(c);
}

Test(cluster, pve3_openvz_power_and_config)
{
	struct cluster *c = load("pve3.json");
	struct sim_resp r;
	char *u = start_task(c, "POST", "/nodes/pve1/openvz/101/status/shutdown", NULL, T0);
	cr_assert(strstr(u, ":vzshutdown:101:"), "%s", u);
	free(wait_task(c, u, T0, NULL));
	free(u);
	call(c, "GET", "/nodes/pve1/openvz/101/status/current", NULL, T0 + 5, &r);
	cr_assert_str_eq(jstr(r.data, "status"), "stopped");
	sim_resp_clear(&r);
	call(c, "POST", "/nodes/pve1/openvz/101/status/stop", NULL, T0 + 5, &r);
	expect_error(&r, 500, "CT 101 not running");
	sim_resp_clear(&r);
	call(c, "PUT", "/nodes/pve1/openvz/101/config", "{\"memory\":\"1024\"}", T0 + 5, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	sim_resp_clear(&r);
	json_object *conf = get_config(c, "/nodes/pve1/openvz/101/config", T0 + 5);
	cr_assert_str_eq(jstr(conf, "memory"), "1024");
	json_object_put(conf);
	/* a stopped container migrates without online */
	u = start_task(c, "POST", "/nodes/pve1/openvz/101/migrate", "{\"target\":\"pve2\"}", T0 + 5);
	char *st = wait_task(c, u, T0 + 5, NULL);
	cr_assert_str_eq(st, "OK");
	cr_assert_str_eq(cluster_guest(c, 101)->node, "pve2");
	free(st);
	free(u);
	cluster_free(c);
}

Test(cluster, clones_get_an_address_at_first_boot)
{
	struct cluster *c = load("demo.json");
	char *u = start_task(c, "POST", "/nodes/pve1/qemu/9014/clone", "{\"newid\":\"140\"}", T0);
	free(wait_task(c, u, T0, NULL));
	free(u);
	u = start_task(c, "POST", "/nodes/pve1/qemu/9024/clone",
		       "{\"newid\":\"141\",\"full\":\"1\"}", T0);
	free(wait_task(c, u, T0, NULL));
	free(u);
	struct sim_resp r;
	call(c, "PUT", "/nodes/pve1/qemu/141/config",
	     "{\"ipconfig0\":\"ip=127.0.1.77/24,gw=127.0.1.1\",\"ciuser\":\"root\"}", T0 + 500,
	     &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	sim_resp_clear(&r);
	u = start_task(c, "POST", "/nodes/pve1/qemu/140/status/start", NULL, T0 + 500);
	free(wait_task(c, u, T0 + 500, NULL));
	free(u);
	u = start_task(c, "POST", "/nodes/pve1/qemu/141/status/start", NULL, T0 + 500);
	free(wait_task(c, u, T0 + 500, NULL));
	free(u);
	cr_assert_str_eq(cluster_guest(c, 140)->fixture, "freebsd-14");
	cr_assert_str_eq(cluster_guest(c, 140)->address, "127.0.1.100");
	cr_assert_str_eq(cluster_guest(c, 141)->address, "127.0.1.77");
	call(c, "GET", "/nodes/pve1/qemu/140/agent/network-get-interfaces", NULL, T0 + 520, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	json_object *nic = json_object_array_get_idx(json_object_object_get(r.data, "result"), 1);
	cr_assert_str_eq(jstr(nic, "name"), "vtnet0");
	json_object *ip = json_object_array_get_idx(json_object_object_get(nic, "ip-addresses"), 0);
	cr_assert_str_eq(jstr(ip, "ip-address"), "127.0.1.100");
	sim_resp_clear(&r);
	json_object *st = cluster_state(c, T0 + 520);
	json_object *gs = json_object_object_get(st, "guests");
	bool seen = false;
	for (size_t i = 0; i < json_object_array_length(gs); i++) {
		json_object *g = json_object_array_get_idx(gs, i);
		if (json_object_get_int(json_object_object_get(g, "vmid")) != 141)
			continue;
		seen = true;
		cr_assert_str_eq(jstr(g, "address"), "127.0.1.77");
		json_object *boot = json_object_object_get(g, "boot");
		cr_assert_str_eq(jstr(boot, "state"), "up");
		cr_assert_str_eq(jstr(boot, "nic"), "ens18");
	}
	cr_assert(seen);
	json_object_put(st);
	cluster_free(c);
}

/* ---- PVE 9: node versions, HA rules, disarmed HA --------------------------------- */

/* Three nodes, three HA VMs on a: 100 and 101 kept together, 100 and 102
 * kept apart (102 on c), plus an HA container 200 in positive affinity
 * with 102. */
#define HA9 \
	"{\"pve_version\":\"%s\",\"nodes\":[{\"name\":\"a\",\"version\":\"%s\"},{\"name\":" \
	"\"b\",\"version\":\"8.4.1\"},{\"name\":\"c\"}],\"storages\":[{\"id\":\"ceph\",\"type\":" \
	"\"rbd\",\"content\":\"images,rootdir\"}],\"guests\":[" \
	"{\"vmid\":100,\"node\":\"a\",\"status\":\"running\",\"config\":{\"memory\":\"512\"," \
	"\"machine\":\"pc-i440fx-9.2\",\"virtio0\":\"ceph:vm-100-disk-0,size=4G\"}}," \
	"{\"vmid\":101,\"node\":\"a\",\"status\":\"running\",\"config\":{\"memory\":\"512\"," \
	"\"machine\":\"pc-i440fx-9.2\",\"virtio0\":\"ceph:vm-101-disk-0,size=4G\"}}," \
	"{\"vmid\":102,\"node\":\"c\",\"status\":\"running\",\"config\":{\"memory\":\"512\"," \
	"\"virtio0\":\"ceph:vm-102-disk-0,size=4G\"}}," \
	"{\"vmid\":200,\"node\":\"c\",\"type\":\"lxc\",\"status\":\"running\",\"config\":" \
	"{\"hostname\":\"ct\",\"memory\":512,\"ostype\":\"debian\",\"arch\":\"amd64\"," \
	"\"rootfs\":\"ceph:vm-200-disk-0,size=2G\"}}]," \
	"\"ha\":[{\"sid\":\"vm:100\"},{\"sid\":\"vm:101\"},{\"sid\":\"vm:102\"}," \
	"{\"sid\":\"ct:200\"}]%s}"
#define HA9_RULES \
	",\"ha_rules\":[{\"rule\":\"together\",\"type\":\"resource-affinity\",\"resources\":" \
	"\"vm:100,vm:101\",\"affinity\":\"positive\"},{\"rule\":\"apart\",\"type\":" \
	"\"resource-affinity\",\"resources\":\"vm:100,vm:102\",\"affinity\":\"negative\"}," \
	"{\"rule\":\"ct-with-102\",\"type\":\"resource-affinity\",\"resources\":" \
	"\"vm:102,ct:200\",\"affinity\":\"positive\"},{\"rule\":\"pin\",\"type\":" \
	"\"node-affinity\",\"resources\":\"vm:101\",\"nodes\":\"a:2,b,c\",\"strict\":1}]"

static struct cluster *load_ha9(const char *extra)
{
	char text[4096];
	snprintf(text, sizeof text, HA9, "9.1", "9.1.2", extra);
	return load_text(text);
}

Test(cluster, node_versions)
{
	struct cluster *c = load_ha9("");
	struct sim_resp r;
	call(c, "GET", "/version", NULL, T0, &r);
	cr_assert_eq(r.status, 200);
	cr_expect_str_eq(jstr(r.data, "version"), "9.1.2", "the node the request reached: a");
	cr_expect_str_eq(jstr(r.data, "release"), "9.1");
	cr_expect_not_null(jstr(r.data, "repoid"));
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/b/version", NULL, T0, &r);
	cr_assert_eq(r.status, 200);
	cr_expect_str_eq(jstr(r.data, "version"), "8.4.1");
	cr_expect_str_eq(jstr(r.data, "release"), "8.4");
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/c/version", NULL, T0, &r);
	cr_expect_str_eq(jstr(r.data, "version"), "9.1.1", "the scenario's pve_version");
	sim_resp_clear(&r);
	cluster_free(c);
}

/* A scenario the loader refuses, with a message holding want. */
static void load_refused(const char *text, const char *want)
{
	char *err = NULL;
	char tmpl[] = "/tmp/pvesim-test-XXXXXX";
	int fd = mkstemp(tmpl);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct cluster *c = cluster_load(tmpl, T0, &err);
	unlink(tmpl);
	cr_expect_null(c, "loaded: %s", text);
	cluster_free(c);
	cr_expect(err && strstr(err, want), "'%s' lacks '%s'", err ? err : "", want);
	free(err);
}

/* The PVE 9 keys, checked: a node two majors away is no rolling upgrade;
 * HA groups are PVE 8's, rules, disarming and volume chains PVE 9's;
 * rules name HA resources and nodes of the scenario. */
Test(cluster, ha9_scenario_errors)
{
	char text[4096];
	load_refused("{\"pve_version\":\"9.1\",\"nodes\":[{\"name\":\"a\",\"version\":\"7.4\"}]}",
		     "$.nodes[0]: invalid version '7.4'");
	snprintf(text, sizeof text, HA9, "8.4", "8.4.1", HA9_RULES);
	load_refused(text, "$.ha_rules: HA rules are PVE 9 (this is 8.4: use ha[].group)");
	snprintf(text, sizeof text, HA9, "8.4", "8.4.1", ",\"ha_disarm\":\"freeze\"");
	load_refused(text, "$.ha_disarm: disarming HA is PVE 9");
	snprintf(text, sizeof text, HA9, "9.1", "9.1.1", ",\"ha_disarm\":\"off\"");
	load_refused(text, "$.ha_disarm: resource mode must be freeze or ignore");
	snprintf(text, sizeof text, HA9, "9.1", "9.1.1",
		 ",\"ha_rules\":[{\"rule\":\"x\",\"type\":\"resource-affinity\","
		 "\"resources\":\"vm:100,vm:999\",\"affinity\":\"negative\"}]");
	load_refused(text, "$.ha_rules[0]: resources 'vm:100,vm:999': each must be an HA "
			   "resource of $.ha");
	snprintf(text, sizeof text, HA9, "9.1", "9.1.1",
		 ",\"ha_rules\":[{\"rule\":\"x\",\"type\":\"node-affinity\","
		 "\"resources\":\"vm:100\",\"nodes\":\"a:x\"}]");
	load_refused(text, "$.ha_rules[0]: nodes 'a:x': NODE[:PRIORITY],...");
	snprintf(text, sizeof text, HA9, "9.1", "9.1.1",
		 ",\"ha_rules\":[{\"rule\":\"x\",\"type\":\"resource-affinity\","
		 "\"resources\":\"vm:100,vm:101\"}]");
	load_refused(text, "$.ha_rules[0]: missing required key 'affinity'");
	load_refused("{\"pve_version\":\"9.1\",\"nodes\":[{\"name\":\"a\"}],\"guests\":"
		     "[{\"vmid\":100,\"node\":\"a\",\"config\":{\"memory\":\"512\"}}],"
		     "\"ha\":[{\"sid\":\"vm:100\",\"group\":\"g\"}]}",
		     "$.ha[0]: PVE 9.1 has no HA groups");
	load_refused("{\"pve_version\":\"9.1\",\"nodes\":[{\"name\":\"a\"}],\"storages\":"
		     "[{\"id\":\"s\",\"type\":\"lvmthin\",\"content\":\"images\","
		     "\"snapshot_as_volume_chain\":true}]}",
		     "$.storages[0]: snapshot_as_volume_chain is for dir and lvm storages on PVE 9");
}

/* qemu-server's precondition on 9: dependent-ha-resources (positive
 * partners) and, per node, the negative partners on it as
 * blocking-ha-resources (that node left out of allowed_nodes), as
 * pve-ha-manager's get_resource_motion_info says; pve-container's own
 * precondition the same with hyphenated keys. */
Test(cluster, ha9_precondition)
{
	struct cluster *c = load_ha9(HA9_RULES);
	struct sim_resp r;
	call(c, "GET", "/nodes/a/qemu/100/migrate", NULL, T0, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	cr_expect_str_eq(json_object_to_json_string_ext(
				 json_object_object_get(r.data, "dependent-ha-resources"),
				 JSON_C_TO_STRING_PLAIN),
			 "[\"vm:101\"]");
	json_object *na = json_object_object_get(r.data, "not_allowed_nodes");
	cr_expect_str_eq(json_object_to_json_string_ext(
				 json_object_object_get(json_object_object_get(na, "c"),
							"blocking-ha-resources"),
				 JSON_C_TO_STRING_PLAIN),
			 "[{\"sid\":\"vm:102\",\"cause\":\"resource-affinity\"}]");
	cr_expect_str_eq(json_object_to_json_string_ext(json_object_object_get(r.data,
									       "allowed_nodes"),
							JSON_C_TO_STRING_PLAIN),
			 "[\"b\"]");
	sim_resp_clear(&r);
	/* 101 inherits 100's negative partner (get_affinitive_resources) */
	call(c, "GET", "/nodes/a/qemu/101/migrate", NULL, T0, &r);
	na = json_object_object_get(r.data, "not_allowed_nodes");
	cr_expect_not_null(json_object_object_get(json_object_object_get(na, "c"),
						  "blocking-ha-resources"));
	sim_resp_clear(&r);
	/* 200 takes its partner 102's negative partner 100, not 100's partner
	 * 101 (one step, as the rules' implicit negative inference) */
	call(c, "GET", "/nodes/c/lxc/200/migrate", NULL, T0, &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	cr_expect_str_eq(json_object_to_json_string_ext(r.data, JSON_C_TO_STRING_PLAIN),
			 "{\"running\":1,\"dependent-ha-resources\":[\"vm:102\"],"
			 "\"allowed-nodes\":[\"b\"],\"not-allowed-nodes\":{\"a\":"
			 "{\"blocking-ha-resources\":[{\"sid\":\"vm:100\",\"cause\":"
			 "\"resource-affinity\"}]}}}");
	sim_resp_clear(&r);
	cluster_free(c);
	/* PVE 8.4: no HA rules, no HA fields, no LXC precondition */
	char text[4096];
	snprintf(text, sizeof text, HA9, "8.4", "8.4.1", "");
	c = load_text(text);
	call(c, "GET", "/nodes/a/qemu/100/migrate", NULL, T0, &r);
	cr_expect_null(json_object_object_get(r.data, "dependent-ha-resources"));
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/c/lxc/200/migrate", NULL, T0, &r);
	cr_expect_neq(r.status, 200);
	sim_resp_clear(&r);
	cluster_free(c);
}

/* QEMU by node version: GET capabilities/qemu/machines lists the machine
 * types of the node's QEMU (a, c on 9.1: 10.1 newest, 10.0+pve1; b on
 * 8.4: 9.2+pve1 newest); a running VM runs its node's newest type, or its
 * pinned one (vm 100: pc-i440fx-9.2), with its node's running-qemu; a
 * live migration of an unpinned VM from 9.1 to 8.4 fails as qemu-server
 * fails it on the target, the pinned one's goes. */
Test(cluster, machine_types_by_version)
{
	struct cluster *c = load_text(
		"{\"pve_version\":\"9.1\",\"nodes\":[{\"name\":\"a\",\"version\":\"9.1.2\"},"
		"{\"name\":\"b\",\"version\":\"8.4.1\"}],\"storages\":[{\"id\":\"ceph\",\"type\":"
		"\"rbd\",\"content\":\"images\"}],\"guests\":["
		"{\"vmid\":100,\"node\":\"a\",\"status\":\"running\",\"config\":{\"memory\":\"512\","
		"\"machine\":\"pc-i440fx-9.2\",\"virtio0\":\"ceph:vm-100-disk-0,size=4G\"}},"
		"{\"vmid\":102,\"node\":\"a\",\"status\":\"running\",\"config\":{\"memory\":\"512\","
		"\"virtio0\":\"ceph:vm-102-disk-0,size=4G\"}}]}");
	struct sim_resp r;
	call(c, "GET", "/nodes/a/capabilities/qemu/machines", NULL, T0, &r);
	cr_assert_eq(r.status, 200);
	cr_expect_str_eq(jstr(json_object_array_get_idx(r.data, 0), "id"), "pc-q35-10.1");
	bool pve1 = false, ten = false;
	for (size_t i = 0; i < json_object_array_length(r.data); i++)
		pve1 |= strcmp(jstr(json_object_array_get_idx(r.data, i), "id"),
			       "pc-i440fx-10.0+pve1") == 0;
	cr_expect(pve1);
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/b/capabilities/qemu/machines", NULL, T0, &r);
	cr_expect_str_eq(jstr(json_object_array_get_idx(r.data, 0), "id"), "pc-q35-9.2+pve1");
	for (size_t i = 0; i < json_object_array_length(r.data); i++)
		ten |= strncmp(jstr(json_object_array_get_idx(r.data, i), "version"), "10.", 3) == 0;
	cr_expect_not(ten, "QEMU 9.2 has no 10.x machine type");
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/a/qemu/102/status/current", NULL, T0, &r);
	cr_expect_str_eq(jstr(r.data, "running-machine"), "pc-i440fx-10.1+pve0");
	cr_expect_str_eq(jstr(r.data, "running-qemu"), "10.1.2");
	sim_resp_clear(&r);
	call(c, "GET", "/nodes/a/qemu/100/status/current", NULL, T0, &r);
	cr_expect_str_eq(jstr(r.data, "running-machine"), "pc-i440fx-9.2+pve0");
	sim_resp_clear(&r);
	char *u = start_task(c, "POST", "/nodes/a/qemu/102/migrate",
			     "{\"target\":\"b\",\"online\":\"1\"}", T0);
	char *st = wait_task(c, u, T0, NULL);
	char *log = task_log_text(c, u, T0 + 60, NULL);
	cr_expect(strstr(log, "[b] Installed QEMU version '9.2.0' is too old to run machine type "
			      "'pc-i440fx-10.1+pve0', please upgrade node 'b'\n"), "%s", log);
	cr_expect_str_eq(st, "migration problems");
	cr_expect_str_eq(cluster_guest(c, 102)->node, "a");
	free(log);
	free(st);
	free(u);
	u = start_task(c, "POST", "/nodes/a/qemu/100/migrate", "{\"target\":\"b\",\"online\":\"1\"}",
		       T0 + 60);
	st = wait_task(c, u, T0 + 60, NULL);
	cr_expect_str_eq(st, "OK");
	call(c, "GET", "/nodes/b/qemu/100/status/current", NULL, T0 + 200, &r);
	cr_expect_str_eq(jstr(r.data, "running-machine"), "pc-i440fx-9.2+pve0", "kept");
	cr_expect_str_eq(jstr(r.data, "running-qemu"), "9.2.0");
	sim_resp_clear(&r);
	free(st);
	free(u);
	cluster_free(c);
}

/* A task request that must end OK by its simulated time. */
static void task_ok(struct cluster *c, const char *path, const char *params, double now)
{
	char *u = start_task(c, "POST", path, params, now);
	char *st = wait_task(c, u, now, NULL);
	cr_expect_str_eq(st, "OK", "%s", path);
	free(st);
	free(u);
}

/* The CRM applies node-affinity rules after it carried a migration out:
 * vm:100 under a rule preferring a (failback, the default) is moved back
 * to a after its requested move to b; vm:101 under a strict rule naming
 * a and c is moved off b again; with failback 0 vm:100 stays on b. */
Test(cluster, ha9_crm_applies_node_affinity)
{
	for (int fb = 1; fb >= 0; fb--) {
		struct cluster *c = load_ha9(
			",\"ha_rules\":[{\"rule\":\"home\",\"type\":\"node-affinity\","
			"\"resources\":\"vm:100\",\"nodes\":\"a:2,b:1\"},{\"rule\":\"keep\","
			"\"type\":\"node-affinity\",\"resources\":\"vm:101\",\"nodes\":\"a,c\","
			"\"strict\":1}]");
		if (!fb) /* failback 0 on vm:100's HA resource */
			json_object_object_add(cluster_ha_entry(c, "vm:100"), "failback",
					       json_object_new_int(0));
		task_ok(c, "/nodes/a/qemu/100/migrate", "{\"target\":\"b\",\"online\":\"1\"}", T0);
		struct sim_resp r;
		call(c, "GET", "/cluster/resources", NULL, T0 + 300, &r);
		sim_resp_clear(&r);
		cr_expect_str_eq(cluster_guest(c, 100)->node, fb ? "a" : "b",
				 "failback %d: back to the preferred node, or stays", fb);
		if (fb) {
			task_ok(c, "/nodes/a/qemu/101/migrate", "{\"target\":\"b\",\"online\":\"1\"}",
				T0 + 300);
			call(c, "GET", "/cluster/resources", NULL, T0 + 600, &r);
			sim_resp_clear(&r);
			cr_expect_str_neq(cluster_guest(c, 101)->node, "b",
					  "moved off a node the strict rule leaves out");
		}
		cluster_free(c);
	}
}

/* The task of type for vmid on node (GET /nodes/NODE/tasks, newest
 * first): its list entry (a new reference), asserted there. */
static json_object *node_task(struct cluster *c, const char *node, const char *type, int vmid,
			      double now)
{
	char path[64], params[128];
	snprintf(path, sizeof path, "/nodes/%s/tasks", node);
	snprintf(params, sizeof params, "{\"vmid\":\"%d\",\"typefilter\":\"%s\",\"source\":"
		 "\"all\"}", vmid, type);
	struct sim_resp r;
	call(c, "GET", path, params, now, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(json_object_array_length(r.data), 1, "one %s task on %s", type, node);
	json_object *e = json_object_get(json_object_array_get_idx(r.data, 0));
	sim_resp_clear(&r);
	return e;
}

static long long entry_int(json_object *e, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(e, key, &v), "no %s", key);
	return json_object_get_int64(v);
}

/* An HA container's migration as PVE runs it: the API call logs
 * pve-container's "Requesting HA migration for CT 200 to node a" and runs
 * `ha-manager migrate ct:200 a`; the CRM's LRM shuts the container down
 * (vzshutdown), migrates it offline (vzmigrate: no shutdown or start of
 * its own) and the target's LRM starts it (vzstart) after that ended, all
 * as root@pam (pve-ha-manager Resources/PVECT.pm migrate). */
Test(cluster, ha_ct_migration_is_shutdown_offline_migration_start)
{
	struct cluster *c = load_ha9("");
	char *u = start_task(c, "POST", "/nodes/c/lxc/200/migrate",
			     "{\"target\":\"a\",\"restart\":\"1\"}", T0);
	cr_assert(strstr(u, ":hamigrate:200:"), "%s", u);
	char *st = wait_task(c, u, T0, NULL);
	cr_expect_str_eq(st, "OK");
	char *log = task_log_text(c, u, T0 + 1, NULL);
	cr_expect(strstr(log, "Requesting HA migration for CT 200 to node a\n"), "%s", log);
	cr_expect_null(strstr(log, "relocat"), "%s", log);
	free(log);
	free(st);
	free(u);
	cr_expect_str_eq(guest_status(c, "lxc", "a", 200, T0 + 120), "running");
	json_object *sd = node_task(c, "c", "vzshutdown", 200, T0 + 120);
	json_object *mg = node_task(c, "c", "vzmigrate", 200, T0 + 120);
	json_object *up = node_task(c, "a", "vzstart", 200, T0 + 120);
	cr_expect_str_eq(jstr(sd, "user"), "root@pam");
	cr_expect_str_eq(jstr(mg, "user"), "root@pam");
	cr_expect_str_eq(jstr(up, "user"), "root@pam");
	cr_expect_leq(entry_int(sd, "endtime"), entry_int(mg, "starttime"),
		      "migrated once shut down");
	cr_expect_leq(entry_int(mg, "endtime"), entry_int(up, "starttime"),
		      "started once migrated");
	log = task_log_text(c, jstr(mg, "upid"), T0 + 120, NULL);
	cr_expect(strstr(log, "starting migration of CT 200 to node 'a'"), "%s", log);
	cr_expect_null(strstr(log, "shutdown CT"), "an offline migration:\n%s", log);
	cr_expect_null(strstr(log, "start container on target node"), "%s", log);
	free(log);
	json_object_put(sd);
	json_object_put(mg);
	json_object_put(up);
	cluster_free(c);
}

/* The CRM places the HA guests every round, whatever put them where they
 * are: vm:101, moved to b by a plain migration while its resource was
 * ignored, is moved off b (its strict rule names a and c) once it is
 * started again; nothing is moved while it stays ignored. */
Test(cluster, ha9_crm_rounds_move_a_misplaced_guest)
{
	struct cluster *c = load_ha9(",\"ha_rules\":[{\"rule\":\"keep\",\"type\":"
				     "\"node-affinity\",\"resources\":\"vm:101\",\"nodes\":"
				     "\"a,c\",\"strict\":1}]");
	json_object *e = cluster_ha_entry(c, "vm:101");
	json_object_object_add(e, "state", json_object_new_string("ignored"));
	char *u = start_task(c, "POST", "/nodes/a/qemu/101/migrate",
			     "{\"target\":\"b\",\"online\":\"1\"}", T0);
	cr_assert(strstr(u, ":qmigrate:101:"), "unmanaged: a plain migration: %s", u);
	char *st = wait_task(c, u, T0, NULL);
	cr_expect_str_eq(st, "OK");
	free(st);
	free(u);
	struct sim_resp r;
	call(c, "GET", "/cluster/resources", NULL, T0 + 300, &r);
	sim_resp_clear(&r);
	cr_expect_str_eq(cluster_guest(c, 101)->node, "b", "ignored: the CRM leaves it");
	/* ha-manager set vm:101 --state started */
	json_object_object_add(e, "state", json_object_new_string("started"));
	call(c, "GET", "/cluster/resources", NULL, T0 + 600, &r);
	sim_resp_clear(&r);
	cr_expect_str_neq(cluster_guest(c, 101)->node, "b", "moved off b by a round");
	json_object *mg = node_task(c, "b", "qmigrate", 101, T0 + 600);
	cr_expect_str_eq(jstr(mg, "user"), "root@pam", "the CRM's migration");
	cr_expect_geq(entry_int(mg, "starttime"), (long long)T0 + 300);
	json_object_put(mg);
	cluster_free(c);
}

/* `ha-manager crm-command node-maintenance ACTION NODE` run on node a at
 * now (the CRM's rounds due by then first): its exit code. */
static int maintenance(struct cluster *c, const char *node, const char *action, double now)
{
	json_object *argv = json_object_new_array();
	cr_assert_not_null(argv);
	const char *words[] = {"ha-manager", "crm-command", "node-maintenance", action, node};
	for (size_t i = 0; i < sizeof words / sizeof *words; i++)
		json_object_array_add(argv, json_object_new_string(words[i]));
	char *out = NULL;
	int code = cluster_node_shell(c, "a", argv, now, &out);
	free(out);
	json_object_put(argv);
	return code;
}

/* HA maintenance of a node (ha-manager crm-command node-maintenance
 * enable a): its LRM says so, the CRM's next round moves its HA guests
 * away (vm:100 with failback to its next-best node b, vm:101 under its
 * strict rule to c) and none comes back while it lasts; once disabled
 * each goes back to a. */
Test(cluster, ha9_maintenance_moves_away_and_back)
{
	struct cluster *c = load_ha9(
		",\"ha_rules\":[{\"rule\":\"home\",\"type\":\"node-affinity\","
		"\"resources\":\"vm:100\",\"nodes\":\"a:2,b:1\"},{\"rule\":\"keep\","
		"\"type\":\"node-affinity\",\"resources\":\"vm:101\",\"nodes\":\"a,c\","
		"\"strict\":1}]");
	cr_assert_eq(maintenance(c, "nosuch", "enable", T0), 255);
	cr_assert_eq(maintenance(c, "a", "enable", T0), 0);
	struct sim_resp r;
	call(c, "GET", "/cluster/ha/status/current", NULL, T0 + 1, &r);
	bool said = false;
	for (size_t i = 0; i < json_object_array_length(r.data); i++) {
		json_object *x = json_object_array_get_idx(r.data, i);
		said |= strcmp(jstr(x, "id"), "lrm:a") == 0 && strstr(jstr(x, "status"), "maintenance");
	}
	cr_expect(said, "lrm:a in maintenance mode");
	sim_resp_clear(&r);
	for (double t = T0 + 30; t <= T0 + 600; t += 30) {
		call(c, "GET", "/cluster/resources", NULL, t, &r);
		sim_resp_clear(&r);
		if (t >= T0 + 120) {
			cr_expect_str_eq(cluster_guest(c, 100)->node, "b", "at %.0f", t - T0);
			cr_expect_str_eq(cluster_guest(c, 101)->node, "c", "at %.0f", t - T0);
		}
	}
	cr_assert_eq(maintenance(c, "a", "disable", T0 + 600), 0);
	call(c, "GET", "/cluster/resources", NULL, T0 + 900, &r);
	sim_resp_clear(&r);
	cr_expect_str_eq(cluster_guest(c, 100)->node, "a", "back from maintenance");
	cr_expect_str_eq(cluster_guest(c, 101)->node, "a", "back from maintenance");
	cr_expect_str_eq(cluster_guest(c, 102)->node, "c", "never on a");
	cluster_free(c);
}

/* `ha-manager migrate` on 9: a negative partner on the target fails the
 * hamigrate task with ha-manager's words and nothing moves; otherwise the
 * CRM moves the positive partners along ("also migrate resource"). */
Test(cluster, ha9_migrate_affinity)
{
	struct cluster *c = load_ha9(HA9_RULES);
	char *u = start_task(c, "POST", "/nodes/a/qemu/100/migrate",
			     "{\"target\":\"c\",\"online\":\"1\"}", T0);
	char *st = wait_task(c, u, T0, NULL);
	cr_expect_str_eq(st, "command 'ha-manager migrate vm:100 c' failed: exit code 255");
	char *log = task_log_text(c, u, T0 + 5, NULL);
	cr_expect(strstr(log, "cannot migrate resource 'vm:100' to node 'c':\n\n- resource "
			      "'vm:102' on target node 'c' in negative affinity with resource "
			      "'vm:100'\n"), "%s", log);
	free(log);
	free(st);
	free(u);
	cr_expect_str_eq(cluster_guest(c, 100)->node, "a");
	u = start_task(c, "POST", "/nodes/a/qemu/100/migrate", "{\"target\":\"b\",\"online\":\"1\"}",
		       T0 + 10);
	st = wait_task(c, u, T0 + 10, NULL);
	cr_expect_str_eq(st, "OK");
	log = task_log_text(c, u, T0 + 15, NULL);
	cr_expect(strstr(log, "also migrate resource 'vm:101' in positive affinity with resource "
			      "'vm:100' to target node 'b'"), "%s", log);
	free(log);
	free(st);
	free(u);
	struct sim_resp r;
	call(c, "GET", "/cluster/resources", NULL, T0 + 120, &r);
	sim_resp_clear(&r);
	cr_expect_str_eq(cluster_guest(c, 100)->node, "b");
	cr_expect_str_eq(cluster_guest(c, 101)->node, "b", "moved along by the CRM");
	cluster_free(c);
}

/* A disarmed HA stack: status/current says so in its fencing entry; a
 * hamigrate is accepted and nothing ever migrates. On 9 an armed stack has
 * its fencing entry too, and no ha groups exist. */
Test(cluster, ha9_disarmed)
{
	struct cluster *c = load_ha9(",\"ha_disarm\":\"freeze\"");
	struct sim_resp r;
	call(c, "GET", "/cluster/ha/status/current", NULL, T0, &r);
	cr_assert_eq(r.status, 200);
	json_object *fe = NULL;
	for (size_t i = 0; i < json_object_array_length(r.data); i++)
		if (strcmp(jstr(json_object_array_get_idx(r.data, i), "id"), "fencing") == 0)
			fe = json_object_array_get_idx(r.data, i);
	cr_assert_not_null(fe);
	cr_expect_str_eq(jstr(fe, "armed-state"), "disarmed");
	cr_expect_str_eq(jstr(fe, "resource_mode"), "freeze");
	cr_expect_str_eq(jstr(fe, "status"), "disarmed, resource mode: freeze (CRM watchdog "
					     "released)");
	sim_resp_clear(&r);
	char *u = start_task(c, "POST", "/nodes/a/qemu/100/migrate",
			     "{\"target\":\"b\",\"online\":\"1\"}", T0);
	char *st = wait_task(c, u, T0, NULL);
	cr_expect_str_eq(st, "OK");
	free(st);
	free(u);
	call(c, "GET", "/nodes/a/tasks", "{\"typefilter\":\"qmigrate\",\"source\":\"all\"}",
	     T0 + 600, &r);
	cr_expect_eq(json_object_array_length(r.data), 0, "the CRM started nothing");
	sim_resp_clear(&r);
	cr_expect_str_eq(cluster_guest(c, 100)->node, "a");
	cluster_free(c);
	c = load_ha9("");
	call(c, "GET", "/cluster/ha/status/current", NULL, T0, &r);
	fe = NULL;
	for (size_t i = 0; i < json_object_array_length(r.data); i++)
		if (strcmp(jstr(json_object_array_get_idx(r.data, i), "id"), "fencing") == 0)
			fe = json_object_array_get_idx(r.data, i);
	cr_expect_str_eq(jstr(fe, "armed-state"), "armed");
	sim_resp_clear(&r);
	cluster_free(c);
}
