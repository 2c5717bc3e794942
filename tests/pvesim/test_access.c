/* test_access.c - the simulator's access-control API (routes_access.c)
 * over HTTPS as pveum drives it: a role made, changed with append,
 * refused for an unknown privilege with PVE's parameter message; a user
 * and a privilege-separated token whose secret is answered once and
 * authenticates at once; ACL entries that grant what the role holds now
 * (a role changed later changes them); the refusals and their texts; and
 * the permission checks (a read-only token may list roles but not make
 * one). Also GET /nodes/{node}/network and /time (routes_nodeinfo.c).
 * Suite options, on scenarios/doctor-tags.json (user-tag-access
 * user-allow=list,user-allow-list=prod): the datacenter options
 * (cluster_options.c): GET /cluster/options parsed as pve-cluster gives
 * it and refused without Sys.Audit; PUT sets and deletes; the tags of a
 * create and a config update checked as assert_tag_permissions does
 * (listed, free, existing, registered, none; removing a tag too;
 * Sys.Modify on / passes everything). */
#include <criterion/criterion.h>

#include "simproc.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SCENARIO "tests/pvesim/scenarios/demo.json"
#define AUDIT "audit@pve!ro=0f9e8d7c-6b5a-4f3e-9d2c-1b0a9f8e7d6c"

static struct simproc sp;

static void start(void)
{
	cr_assert_eq(simproc_start(&sp, SCENARIO, NULL), 0, "simulator did not start");
}

static void stop(void)
{
	cr_assert_eq(simproc_stop(&sp), 0, "simulator did not stop cleanly");
}

/* cppcheck-suppress unknownMacro */
TestSuite(access, .init = start, .fini = stop, .timeout = 60);

/* One request as token "ID=SECRET" (NULL: the scenario's root token). */
static long call_as(const char *token, const char *method, const char *path, const char *form,
		    json_object **body)
{
	long st = 0;
	json_object *b = NULL;
	if (!token) {
		cr_assert_eq(sim_api(&sp, method, path, form, &st, &b), 0, "%s %s", method, path);
	} else {
		char *auth = strprintf("Authorization: PVEAPIToken=%s", token);
		char *full = strprintf("/api2/json%s", path);
		const char *h[] = {auth, NULL};
		cr_assert_eq(sim_http(&sp, method, full, form ? "application/x-www-form-urlencoded"
							      : NULL,
				      form, h, &st, &b),
			     0);
		free(auth);
		free(full);
	}
	if (body)
		*body = b;
	else
		json_object_put(b);
	return st;
}

static long call(const char *method, const char *path, const char *form, json_object **body)
{
	return call_as(NULL, method, path, form, body);
}

static const char *msg(json_object *b)
{
	json_object *m = NULL;
	json_object_object_get_ex(b, "message", &m);
	return m ? json_object_get_string(m) : "";
}

static const char *err_of(json_object *b, const char *param)
{
	json_object *e = NULL, *v = NULL;
	json_object_object_get_ex(b, "errors", &e);
	json_object_object_get_ex(e, param, &v);
	return v ? json_object_get_string(v) : "";
}

/* GET /access/permissions for id on path: has it priv? */
static bool has_priv(const char *id, const char *path, const char *priv)
{
	char *q = strprintf("/access/permissions?userid=%s&path=%s", id, path);
	json_object *b = NULL, *d, *p;
	cr_assert_eq(call("GET", q, NULL, &b), 200);
	free(q);
	bool has = json_object_object_get_ex(b, "data", &d) &&
		   json_object_object_get_ex(d, path, &p) &&
		   json_object_object_get_ex(p, priv, NULL);
	json_object_put(b);
	return has;
}

Test(access, role_user_token_acl_as_pveum_makes_them)
{
	json_object *b = NULL;
	cr_assert_eq(call("POST", "/access/roles", "roleid=PVAgent&privs=VM.Audit%20VM.Allocate",
			  NULL),
		     200);
	cr_assert_eq(call("PUT", "/access/roles/PVAgent", "append=1&privs=VM.Clone", NULL), 200);
	cr_assert_eq(call("GET", "/access/roles/PVAgent", NULL, &b), 200);
	json_object *d = json_object_object_get(b, "data");
	cr_assert(json_object_object_get_ex(d, "VM.Clone", NULL) &&
		  json_object_object_get_ex(d, "VM.Audit", NULL) &&
		  json_object_object_length(d) == 3, "%s", json_object_to_json_string(d));
	json_object_put(b);

	cr_assert_eq(call("POST", "/access/users", "userid=pvagent@pve&comment=pvagent", NULL),
		     200);
	cr_assert_eq(call("POST", "/access/users/pvagent@pve/token/auto", "privsep=1", &b), 200);
	const char *value = json_object_get_string(
		json_object_object_get(json_object_object_get(b, "data"), "value"));
	cr_assert(value && strlen(value) == 36, "a UUID secret: %s", value ? value : "none");
	char *tok = strprintf("pvagent@pve!auto=%s", value);
	json_object_put(b);
	/* the secret is answered once: GET shows the token without it */
	cr_assert_eq(call("GET", "/access/users/pvagent@pve/token/auto", NULL, &b), 200);
	cr_assert_not(json_object_object_get_ex(json_object_object_get(b, "data"), "value", NULL));
	json_object_put(b);

	/* it authenticates at once, with nothing granted yet */
	cr_assert_eq(call_as(tok, "GET", "/nodes/pve1/qemu/9014/status/current", NULL, NULL), 403);
	cr_assert_eq(call("PUT", "/access/acl",
			  "path=/&roles=PVAgent&users=pvagent@pve&tokens=pvagent@pve!auto", NULL),
		     200);
	cr_assert_eq(call_as(tok, "GET", "/nodes/pve1/qemu/9014/status/current", NULL, NULL), 200);
	cr_assert(has_priv("pvagent@pve!auto", "/vms/9014", "VM.Clone"));

	/* the role changed: what its entries grant changes with it */
	cr_assert_eq(call("PUT", "/access/roles/PVAgent", "privs=VM.Allocate", NULL), 200);
	cr_assert_eq(call_as(tok, "GET", "/nodes/pve1/qemu/9014/status/current", NULL, &b), 403);
	cr_assert_str_eq(msg(b), "Permission check failed (/vms/9014, VM.Audit)\n");
	json_object_put(b);
	cr_assert_not(has_priv("pvagent@pve!auto", "/vms/9014", "VM.Clone"));

	cr_assert_eq(call("GET", "/access/acl", NULL, &b), 200);
	int mine = 0;
	json_object *arr = json_object_object_get(b, "data");
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		const char *ug = json_object_get_string(json_object_object_get(e, "ugid"));
		if (strncmp(ug, "pvagent@pve", 11) == 0) {
			cr_assert_str_eq(json_object_get_string(json_object_object_get(e, "roleid")),
					 "PVAgent");
			mine++;
		}
	}
	cr_assert_eq(mine, 2, "the user's and the token's entry");
	json_object_put(b);

	/* deleted, the token no longer authenticates */
	cr_assert_eq(call("DELETE", "/access/users/pvagent@pve/token/auto", NULL, NULL), 200);
	cr_assert_eq(call_as(tok, "GET", "/version", NULL, NULL), 401);
	free(tok);
}

Test(access, refusals_say_what_pve_says)
{
	json_object *b = NULL;
	/* PVE 8 has no VM.GuestAgent.Audit: refused in parameter verification */
	cr_assert_eq(call("POST", "/access/roles", "roleid=Bad&privs=VM.Audit,VM.Bogus", &b), 400);
	cr_assert_str_eq(err_of(b, "privs"), "invalid format - invalid privilege 'VM.Bogus'\n");
	json_object_put(b);
	cr_assert_eq(call("GET", "/access/roles/Bad", NULL, &b), 500);
	cr_assert_str_eq(msg(b), "role 'Bad' does not exist\n");
	json_object_put(b);

	cr_assert_eq(call("POST", "/access/roles", "roleid=PVEMine&privs=VM.Audit", &b), 400);
	cr_assert(strstr(err_of(b, "roleid"), "'PVE' namespace"), "%s", err_of(b, "roleid"));
	json_object_put(b);
	cr_assert_eq(call("POST", "/access/roles", "roleid=R1&privs=VM.Audit", NULL), 200);
	cr_assert_eq(call("POST", "/access/roles", "roleid=R1&privs=VM.Audit", &b), 500);
	cr_assert_str_eq(msg(b), "create role failed: role 'R1' already exists\n");
	json_object_put(b);
	cr_assert_eq(call("PUT", "/access/roles/PVEVMAdmin", "privs=VM.Audit", &b), 500);
	cr_assert_str_eq(msg(b), "auto-generated role 'PVEVMAdmin' cannot be modified\n");
	json_object_put(b);

	cr_assert_eq(call("PUT", "/access/acl", "path=/&roles=Nope&users=root@pam", &b), 500);
	cr_assert_str_eq(msg(b), "ACL update failed: role 'Nope' does not exist\n");
	json_object_put(b);
	cr_assert_eq(call("PUT", "/access/acl", "path=/&roles=R1", &b), 400);
	cr_assert_str_eq(err_of(b, "tokens"), "either 'users', 'groups' or 'tokens' is required.");
	json_object_put(b);
	cr_assert_eq(call("PUT", "/access/acl", "path=/&roles=R1&tokens=root@pam!none", &b), 500);
	cr_assert_str_eq(msg(b), "ACL update failed: no such token 'none' for user 'root@pam'\n");
	json_object_put(b);

	cr_assert_eq(call("POST", "/access/users/nobody@pve/token/tk", NULL, &b), 500);
	cr_assert_str_eq(msg(b), "no such user ('nobody@pve')\n");
	json_object_put(b);
	cr_assert_eq(call("POST", "/access/users/root@pam/token/pvagent", NULL, &b), 400);
	cr_assert_str_eq(err_of(b, "tokenid"), "Token already exists.");
	json_object_put(b);
}

Test(access, a_read_only_token_reads_but_changes_nothing)
{
	json_object *b = NULL;
	cr_assert_eq(call_as(AUDIT, "GET", "/access/roles", NULL, &b), 200);
	cr_assert_gt(json_object_array_length(json_object_object_get(b, "data")), 10);
	json_object_put(b);
	cr_assert_eq(call_as(AUDIT, "POST", "/access/roles", "roleid=X&privs=VM.Audit", &b), 403);
	cr_assert_str_eq(msg(b), "Permission check failed (/access, Sys.Modify)\n");
	json_object_put(b);
	cr_assert_eq(call_as(AUDIT, "POST", "/access/users", "userid=x@pve", &b), 403);
	cr_assert_str_eq(msg(b), "Permission check failed (/access/realm/pve, Realm.AllocateUser)\n");
	json_object_put(b);
	cr_assert_eq(call_as(AUDIT, "PUT", "/access/acl", "path=/vms&roles=PVEAdmin&users=root@pam",
			     &b),
		     403);
	cr_assert_str_eq(msg(b), "Permission check failed (/vms, Permissions.Modify)\n");
	json_object_put(b);
	cr_assert_eq(call_as(AUDIT, "POST", "/access/users/root@pam/token/xx", NULL, &b), 403);
	json_object_put(b);
	/* Sys.Audit on /access/groups (propagated from /) shows every user */
	cr_assert_eq(call_as(AUDIT, "GET", "/access/users", NULL, &b), 200);
	json_object *arr = json_object_object_get(b, "data");
	cr_assert_eq(json_object_array_length(arr), 1);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(
				 json_object_array_get_idx(arr, 0), "userid")),
			 "root@pam");
	json_object_put(b);
}

Test(access, node_network_and_time)
{
	json_object *b = NULL;
	cr_assert_eq(call("GET", "/nodes/pve1/network?type=bridge", NULL, &b), 200);
	json_object *arr = json_object_object_get(b, "data");
	cr_assert_eq(json_object_array_length(arr), 1);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(
				 json_object_array_get_idx(arr, 0), "iface")),
			 "vmbr0");
	json_object_put(b);
	/* a node's clock is this host's, whatever simulated time did */
	cr_assert_eq(simproc_advance(&sp, 86400), 0);
	long long before = (long long)time(NULL);
	cr_assert_eq(call("GET", "/nodes/pve1/time", NULL, &b), 200);
	long long after = (long long)time(NULL);
	json_object *t = json_object_object_get(b, "data");
	long long node = json_object_get_int64(json_object_object_get(t, "time"));
	cr_assert(node >= before && node <= after, "node time %lld, host %lld..%lld", node, before,
		  after);
	cr_assert_eq(json_object_get_int64(json_object_object_get(t, "localtime")), node);
	json_object_put(b);
	cr_assert_eq(call("GET", "/nodes/pve1/network?type=nonsense", NULL, NULL), 400);
}

/* root@pam's password from the scenario: a ticket, and with it (and the
 * CSRF token) a role made as the web UI or pveum would. */
Test(access, a_password_login_makes_a_role)
{
	long st = 0;
	json_object *b = NULL;
	cr_assert_eq(sim_http(&sp, "POST", "/api2/json/access/ticket",
			      "application/x-www-form-urlencoded",
			      "username=root@pam&password=demo-root-password", NULL, &st, &b),
		     0);
	cr_assert_eq(st, 200);
	json_object *d = json_object_object_get(b, "data");
	char *cookie = strprintf("Cookie: PVEAuthCookie=%s",
				 json_object_get_string(json_object_object_get(d, "ticket")));
	char *csrf = strprintf("CSRFPreventionToken: %s",
			       json_object_get_string(
				       json_object_object_get(d, "CSRFPreventionToken")));
	json_object_put(b);
	const char *h[] = {cookie, csrf, NULL};
	cr_assert_eq(sim_http(&sp, "POST", "/api2/json/access/roles",
			      "application/x-www-form-urlencoded", "roleid=ByTicket&privs=VM.Audit",
			      h, &st, NULL),
		     0);
	cr_assert_eq(st, 200);
	cr_assert_eq(call("GET", "/access/roles/ByTicket", NULL, NULL), 200);
	free(cookie);
	free(csrf);
}

/* ---- the datacenter options ------------------------------------------------------ */

#define AGENT "pvagent@pve!auto=5a1c3e2d-7b4f-4e6a-9c8d-0e1f2a3b4c5d"
#define NOAUDIT "pvagent@pve!noaudit=1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e"

static void start_tags(void)
{
	cr_assert_eq(simproc_start(&sp, "tests/pvesim/scenarios/doctor-tags.json", NULL), 0,
		     "simulator did not start");
}

TestSuite(options, .init = start_tags, .fini = stop, .timeout = 60);

/* As pvagent's token: st, and when 403 the tag its message names. */
static void tags_refused(const char *method, const char *path, const char *form,
			 const char *tag)
{
	json_object *b = NULL;
	long st = call_as(AGENT, method, path, form, &b);
	const char *m = msg(b);
	if (!tag) {
		cr_assert_eq(st, 200, "%s %s %s: %ld %s", method, path, form, st, m);
	} else {
		char *want = strprintf("Permission check failed (/, Sys.Modify for modifying tag "
				       "'%s')", tag);
		cr_assert_eq(st, 403, "%s %s %s: %ld %s", method, path, form, st, m);
		cr_assert(strstr(m, want), "%s", m);
		free(want);
	}
	json_object_put(b);
}

Test(options, get_is_parsed_as_pve_cluster_gives_it)
{
	long st = 0;
	json_object *b = NULL, *d = NULL, *uta = NULL, *list = NULL;
	cr_assert_eq(sim_api(&sp, "GET", "/cluster/options", NULL, &st, &b), 0);
	cr_assert_eq(st, 200);
	cr_assert(json_object_object_get_ex(b, "data", &d) &&
		  json_object_object_get_ex(d, "user-tag-access", &uta) &&
		  json_object_object_get_ex(uta, "user-allow-list", &list));
	cr_assert_str_eq(json_object_get_string(json_object_object_get(uta, "user-allow")),
			 "list");
	cr_assert(json_object_is_type(list, json_type_array) &&
		  json_object_array_length(list) == 1);
	json_object_put(b);
	cr_assert_eq(call_as(NOAUDIT, "GET", "/cluster/options", NULL, &b), 403);
	cr_assert(strstr(msg(b), "Permission check failed (/, Sys.Audit)"), "%s", msg(b));
	json_object_put(b);
	/* PUT needs Sys.Modify on / */
	cr_assert_eq(call_as(AGENT, "PUT", "/cluster/options", "registered-tags=x", NULL), 403);
	cr_assert_eq(call_as(NULL, "PUT", "/cluster/options", "registered-tags=x%3By", NULL), 200);
	cr_assert_eq(sim_api(&sp, "GET", "/cluster/options", NULL, &st, &b), 0);
	json_object *reg = json_object_object_get(json_object_object_get(b, "data"),
						  "registered-tags");
	cr_assert_eq(json_object_array_length(reg), 2, "%s", json_object_to_json_string(b));
	json_object_put(b);
	cr_assert_eq(call_as(NULL, "PUT", "/cluster/options", "delete=registered-tags", NULL),
		     200);
	cr_assert_eq(sim_api(&sp, "GET", "/cluster/options", NULL, &st, &b), 0);
	cr_assert_null(json_object_object_get(json_object_object_get(b, "data"),
					      "registered-tags"));
	json_object_put(b);
}

Test(options, tags_of_creates_and_config_writes_are_checked)
{
	/* user-allow=list: only prod */
	tags_refused("POST", "/nodes/pve1/qemu", "vmid=120&tags=pvagent-image", "pvagent-image");
	tags_refused("POST", "/nodes/pve1/qemu", "vmid=120&tags=prod", NULL);
	cr_assert_eq(simproc_advance(&sp, 60), 0); /* its create task ends: unlocked */
	tags_refused("PUT", "/nodes/pve1/qemu/120/config", "tags=prod%3Bip-10.0.0.5",
		     "ip-10.0.0.5");
	/* Sys.Modify on / (root) passes any; removing it then is checked too */
	cr_assert_eq(call_as(NULL, "PUT", "/nodes/pve1/qemu/120/config", "tags=prod%3Bown", NULL),
		     200);
	tags_refused("PUT", "/nodes/pve1/qemu/120/config", "tags=prod", "own");
	tags_refused("PUT", "/nodes/pve1/qemu/120/config", "delete=tags", "own");
	/* existing: a tag some guest the caller may audit carries */
	cr_assert_eq(call_as(NULL, "PUT", "/cluster/options", "user-tag-access=user-allow%3Dexisting",
			     NULL), 200);
	tags_refused("POST", "/nodes/pve1/qemu", "vmid=121&tags=own", NULL);
	tags_refused("POST", "/nodes/pve1/qemu", "vmid=122&tags=new", "new");
	/* none: not even a listed one */
	cr_assert_eq(call_as(NULL, "PUT", "/cluster/options",
			     "user-tag-access=user-allow%3Dnone%2Cuser-allow-list%3Dprod", NULL),
		     200);
	tags_refused("POST", "/nodes/pve1/qemu", "vmid=123&tags=prod", "prod");
	/* free, the default: any tag but a registered one */
	cr_assert_eq(call_as(NULL, "PUT", "/cluster/options",
			     "delete=user-tag-access&registered-tags=admin", NULL), 200);
	tags_refused("POST", "/nodes/pve1/qemu", "vmid=124&tags=anything", NULL);
	tags_refused("POST", "/nodes/pve1/qemu", "vmid=125&tags=admin", "admin");
}
