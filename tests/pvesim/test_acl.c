/* test_acl.c - the simulator's permission model (acl.h) against PVE's
 * rules, each test on PVE 8.4 and on 9.1: the built-in roles' privilege
 * lists, propagate, the most specific
 * path winning, NoAccess, privilege-separated tokens, root@pam; the
 * scenario's "acl", "roles" and "privsep" with their refusals; and the
 * checks the routes make with it: each qemu config key group, SDN.Use on
 * the bridge for clone, create and config, Datastore.AllocateSpace, the
 * rollback's privileges, and lists that show only what the caller may see. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "acl.h"
#include "clirun.h"
#include "cluster.h"
#include "pvevers.h"
#include "simapi.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T0 1700000000.0


/* The names in a set, sorted as PVE's lists are below: space separated. */
static char *names(acl_privset s)
{
	const char *v[64];
	size_t n = 0;
	for (int i = 0; acl_priv_name(i); i++)
		if (s >> i & 1)
			v[n++] = acl_priv_name(i);
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			const char *t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	struct sbuf b = {0};
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(sbuf_addf(&b, "%s%s", i ? " " : "", v[i]), 0);
	char *out = b.len ? sbuf_steal(&b) : strdup("");
	sbuf_free(&b);
	return out;
}

static void role_is(const struct acl *a, const char *role, const char *want)
{
	acl_privset s;
	cr_assert(acl_role_privs(a, role, &s), "no role %s", role);
	char *got = names(s);
	cr_assert_str_eq(got, want, "%s", role);
	free(got);
}

/* pve-access-control's create_roles(), as `pveum role list` shows them:
 * 8.2 (PVE 8.4) and 9.1 differ in the VM category only */
ON_EACH_PVE_VERSION(acl, builtin_roles_have_the_versions_privileges)
{
	struct acl *a = acl_new(pv->major);
	cr_assert_not_null(a);
	if (pv->major >= 9) {
		role_is(a, "PVEVMAdmin",
			"VM.Allocate VM.Audit VM.Backup VM.Clone VM.Config.CDROM VM.Config.CPU "
			"VM.Config.Cloudinit VM.Config.Disk VM.Config.HWType VM.Config.Memory "
			"VM.Config.Network VM.Config.Options VM.Console VM.GuestAgent.Audit "
			"VM.GuestAgent.FileRead VM.GuestAgent.FileSystemMgmt "
			"VM.GuestAgent.FileWrite VM.GuestAgent.Unrestricted VM.Migrate "
			"VM.PowerMgmt VM.Replicate VM.Snapshot VM.Snapshot.Rollback");
		role_is(a, "PVEVMUser",
			"VM.Audit VM.Backup VM.Config.CDROM VM.Config.Cloudinit VM.Console "
			"VM.GuestAgent.Audit VM.GuestAgent.FileRead VM.GuestAgent.FileSystemMgmt "
			"VM.GuestAgent.FileWrite VM.PowerMgmt");
		role_is(a, "PVEAuditor", "Datastore.Audit Mapping.Audit Pool.Audit SDN.Audit "
					 "Sys.Audit VM.Audit VM.GuestAgent.Audit");
	} else {
		role_is(a, "PVEVMAdmin",
			"VM.Allocate VM.Audit VM.Backup VM.Clone VM.Config.CDROM VM.Config.CPU "
			"VM.Config.Cloudinit VM.Config.Disk VM.Config.HWType VM.Config.Memory "
			"VM.Config.Network VM.Config.Options VM.Console VM.Migrate VM.Monitor "
			"VM.PowerMgmt VM.Snapshot VM.Snapshot.Rollback");
		role_is(a, "PVEVMUser", "VM.Audit VM.Backup VM.Config.CDROM VM.Config.Cloudinit "
					"VM.Console VM.PowerMgmt");
		role_is(a, "PVEAuditor", "Datastore.Audit Mapping.Audit Pool.Audit SDN.Audit "
					 "Sys.Audit VM.Audit");
	}
	role_is(a, "PVEDatastoreUser", "Datastore.AllocateSpace Datastore.Audit");
	role_is(a, "PVEDatastoreAdmin", "Datastore.Allocate Datastore.AllocateSpace "
				     "Datastore.AllocateTemplate Datastore.Audit");
	role_is(a, "PVESDNUser", "SDN.Audit SDN.Use");
	role_is(a, "PVESDNAdmin", "SDN.Allocate SDN.Audit SDN.Use");
	role_is(a, "PVESysAdmin", "Sys.Audit Sys.Console Sys.Syslog");
	role_is(a, "PVEPoolUser", "Pool.Audit");
	role_is(a, "PVEPoolAdmin", "Pool.Allocate Pool.Audit");
	role_is(a, "PVEUserAdmin", "Group.Allocate Realm.AllocateUser User.Modify");
	role_is(a, "PVEMappingUser", "Mapping.Audit Mapping.Use");
	role_is(a, "PVETemplateUser", "VM.Audit VM.Clone");
	role_is(a, "NoAccess", "");
	acl_privset s;
	cr_assert_not(acl_role_privs(a, "PVESysUser", &s), "Sys has no user privileges");
	cr_assert_not(acl_role_privs(a, "PVEUserUser", &s));
	/* PVEAdmin: every admin, user and audit privilege but Mapping.Modify;
	 * none of the root ones (Sys.PowerMgmt, Sys.Modify, ..., Permissions.Modify) */
	cr_assert(acl_role_privs(a, "PVEAdmin", &s));
	char *admin = names(s);
	cr_assert(strstr(admin, "VM.Snapshot.Rollback") && strstr(admin, "SDN.Use") &&
		  strstr(admin, "Mapping.Use") && strstr(admin, "Realm.AllocateUser"), "%s", admin);
	cr_assert(!strstr(admin, "Mapping.Modify") && !strstr(admin, "Sys.Modify") &&
		  !strstr(admin, "Sys.PowerMgmt") && !strstr(admin, "Permissions.Modify") &&
		  !strstr(admin, "Realm.Allocate "), "%s", admin);
	free(admin);
	cr_assert(acl_role_privs(a, "Administrator", &s));
	int n = 0, known = 0;
	for (int i = 0; acl_priv_name(i); i++) {
		n += (int)(s >> i & 1);
		known += acl_priv_valid(pv->major, acl_priv_name(i));
	}
	cr_assert_eq(n, pv->nprivs, "PVE %s has %d privileges, Administrator all of them: %d",
		     pv->ver, pv->nprivs, n);
	cr_assert_eq(known, pv->nprivs);
	cr_assert(acl_priv_valid(pv->major, "Sys.Incoming") &&
		  acl_priv_valid(pv->major, "Permissions.Modify"));
	/* pve-access-control 07069454 (9.0.2) dropped VM.Monitor; 922f7105 and
	 * 5f7544fe added VM.GuestAgent.* and VM.Replicate */
	bool nine = pv->major >= 9;
	cr_assert_eq(acl_priv_valid(pv->major, "VM.Monitor"), !nine);
	cr_assert_eq(acl_priv_valid(pv->major, "VM.GuestAgent.Audit"), nine);
	cr_assert_eq(acl_priv_valid(pv->major, "VM.Replicate"), nine);
	acl_free(a);
}

static struct acl *model(int major)
{
	struct acl *a = acl_new(major);
	cr_assert_not_null(a);
	char *err = NULL;
	cr_assert_eq(acl_add_subject(a, "u@pve", false, &err), 0);
	cr_assert_eq(acl_add_subject(a, "u@pve!sep", true, &err), 0);
	cr_assert_eq(acl_add_subject(a, "u@pve!full", false, &err), 0);
	cr_assert_eq(acl_add_subject(a, "root@pam!sep", true, &err), 0);
	cr_assert_eq(acl_add_subject(a, "root@pam!full", false, &err), 0);
	return a;
}

static void grant(struct acl *a, const char *id, const char *path, const char *role, bool prop)
{
	char *err = NULL;
	cr_assert_eq(acl_grant(a, id, path, role, prop, &err), 0, "%s", err ? err : "");
}

ON_EACH_PVE_VERSION(acl, propagate_and_the_most_specific_path)
{
	struct acl *a = model(pv->major);
	grant(a, "u@pve", "/vms", "PVEVMUser", false);
	cr_assert(acl_check(a, "u@pve", "/vms", "VM.PowerMgmt"));
	cr_assert_not(acl_check(a, "u@pve", "/vms/100", "VM.PowerMgmt"),
		      "an entry without propagate holds on its own path only");
	grant(a, "u@pve", "/", "PVEAdmin", true);
	cr_assert(acl_check(a, "u@pve", "/vms/100", "VM.Allocate"), "propagated from /");
	cr_assert(acl_check(a, "u@pve", "/storage/local-lvm", "Datastore.AllocateSpace"));
	/* /vms (own path): only its entry, / no longer counts there */
	cr_assert_not(acl_check(a, "u@pve", "/vms", "VM.Allocate"));
	grant(a, "u@pve", "/vms/100", "PVEAuditor", true);
	cr_assert(acl_check(a, "u@pve", "/vms/100", "VM.Audit"));
	cr_assert_not(acl_check(a, "u@pve", "/vms/100", "VM.Allocate"),
		      "the most specific path replaces what is above it");
	cr_assert(acl_check(a, "u@pve", "/vms/101", "VM.Allocate"));
	cr_assert(acl_check(a, "u@pve", "/vms/1000", "VM.Allocate"),
		  "/vms/100 is no prefix of /vms/1000");
	/* two roles on one path add up; NoAccess takes everything */
	grant(a, "u@pve", "/vms/100", "PVEVMUser", true);
	cr_assert(acl_check(a, "u@pve", "/vms/100", "VM.PowerMgmt"));
	grant(a, "u@pve", "/storage", "NoAccess", true);
	cr_assert_not(acl_check(a, "u@pve", "/storage/local-lvm", "Datastore.Audit"));
	/* paths as PVE normalises them */
	cr_assert(acl_check(a, "u@pve", "//vms//100/", "VM.PowerMgmt"));
	cr_assert_eq(acl_privs_at(a, "nobody@pve", "/"), 0);
	acl_free(a);
}

ON_EACH_PVE_VERSION(acl, privsep_tokens_intersect_with_their_user)
{
	struct acl *a = model(pv->major);
	grant(a, "u@pve", "/", "PVEVMUser", true);
	grant(a, "u@pve!sep", "/", "PVEVMAdmin", true);
	grant(a, "u@pve!full", "/", "PVEAuditor", true);
	cr_assert(acl_check(a, "u@pve!sep", "/vms/100", "VM.PowerMgmt"), "both have it");
	cr_assert_not(acl_check(a, "u@pve!sep", "/vms/100", "VM.Allocate"), "only the token");
	cr_assert_not(acl_check(a, "u@pve!sep", "/vms/100", "VM.Config.Disk"));
	/* without privsep a token has its user's rights, its own ACL is ignored */
	cr_assert(acl_check(a, "u@pve!full", "/vms/100", "VM.PowerMgmt"));
	cr_assert_not(acl_check(a, "u@pve!full", "/nodes/pve1", "Sys.Audit"));
	/* root@pam: everything; its tokens: everything, or their ACL with privsep */
	cr_assert(acl_check(a, "root@pam", "/anything", "Sys.PowerMgmt"));
	cr_assert(acl_check(a, "root@pam!full", "/vms/100", "Permissions.Modify"));
	cr_assert_not(acl_check(a, "root@pam!sep", "/vms/100", "VM.Audit"));
	grant(a, "root@pam!sep", "/vms", "PVEAuditor", true);
	cr_assert(acl_check(a, "root@pam!sep", "/vms/100", "VM.Audit"));
	cr_assert_not(acl_check(a, "root@pam!sep", "/vms/100", "VM.PowerMgmt"));
	acl_free(a);
}

ON_EACH_PVE_VERSION(acl, custom_roles_and_refusals)
{
	struct acl *a = model(pv->major);
	char *err = NULL;
	cr_assert_eq(acl_add_role(a, "Mine", "VM.Audit, SDN.Use;Sys.Audit", &err), 0);
	acl_privset s;
	cr_assert(acl_role_privs(a, "Mine", &s));
	char *n = names(s);
	cr_assert_str_eq(n, "SDN.Use Sys.Audit VM.Audit");
	free(n);
	cr_assert_eq(acl_add_role(a, "PVEVMAdmin", "VM.Audit", &err), -1);
	cr_assert_str_eq(err, "role 'PVEVMAdmin' already exists");
	free(err);
	err = NULL;
	cr_assert_eq(acl_add_role(a, "Bad", "VM.Audit,VM.Fly", &err), -1);
	cr_assert_str_eq(err, "invalid privilege 'VM.Fly'");
	free(err);
	err = NULL;
	/* what `pveum role add` refuses on the other version */
	const char *other = pv->major >= 9 ? "VM.Monitor" : "VM.GuestAgent.Audit";
	char *list = strprintf("VM.Audit %s", other), *want = strprintf("invalid privilege '%s'",
									  other);
	cr_assert_eq(acl_add_role(a, "Other", list, &err), -1);
	cr_assert_str_eq(err, want);
	free(err);
	free(list);
	free(want);
	err = NULL;
	cr_assert_eq(acl_add_role(a, "Agent", pv->agent, &err), 0);
	cr_assert_eq(acl_grant(a, "u@pve", "/", "Nope", true, &err), -1);
	cr_assert_str_eq(err, "role 'Nope' does not exist");
	free(err);
	err = NULL;
	cr_assert_eq(acl_grant(a, "u@pve", "vms", "Mine", true, &err), -1);
	cr_assert_str_eq(err, "invalid ACL path 'vms'");
	free(err);
	err = NULL;
	cr_assert_eq(acl_add_subject(a, "u@pve", true, &err), -1);
	cr_assert_str_eq(err, "'u@pve' already exists");
	free(err);
	acl_free(a);
}

/* ---- through the cluster model --------------------------------------------- */

/* One node, local-lvm, other and local (a CT template), template 9000 (disk, NIC on vmbr0), VM
 * 100 stopped with an IDE disk, a CD-ROM and a NIC, VM 101; %s: the
 * credentials and roles. */
static const char base[] =
	"{\"pve_version\": \"%s\", \"nodes\": [{\"name\": \"pve1\", \"cpus\": 8,"
	" \"memory_mib\": 32768, \"online\": true, \"ip\": \"10.0.0.1\"}],"
	" \"storages\": [{\"id\": \"local-lvm\", \"type\": \"lvmthin\", \"shared\": false,"
	" \"nodes\": [\"pve1\"], \"content\": \"images,rootdir\", \"size_gib\": 500},"
	" {\"id\": \"other\", \"type\": \"lvmthin\", \"shared\": false,"
	" \"nodes\": [\"pve1\"], \"content\": \"images\", \"size_gib\": 100},"
	" {\"id\": \"local\", \"type\": \"dir\", \"shared\": false, \"nodes\": [\"pve1\"],"
	" \"content\": \"vztmpl,import\", \"size_gib\": 10, \"volumes\": [{\"volid\":"
	" \"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\", \"size_mib\": 120},"
	" {\"volid\": \"local:import/d13.qcow2\", \"size_mib\": 300}]}],"
	" %s,"
	" \"guests\": ["
	"  {\"vmid\": 9000, \"node\": \"pve1\", \"type\": \"qemu\", \"config\": {\"name\": \"base\","
	"   \"template\": 1, \"memory\": \"1024\", \"virtio0\": \"local-lvm:base-9000-disk-0,size=8G\","
	"   \"net0\": \"virtio=BC:24:11:00:90:00,bridge=vmbr0\"}},"
	"  {\"vmid\": 100, \"node\": \"pve1\", \"type\": \"qemu\", \"config\": {\"name\": \"vm\","
	"   \"memory\": \"1024\", \"ide0\": \"local-lvm:vm-100-disk-0,size=8G\","
	"   \"ide2\": \"none,media=cdrom\", \"net0\": \"e1000=BC:24:11:00:01:00,bridge=vmbr0\"}},"
	"  {\"vmid\": 101, \"node\": \"pve1\", \"type\": \"qemu\", \"config\": {\"name\": \"other\","
	"   \"memory\": \"512\"}}]}";

static struct cluster *world(const struct test_pve *pv, const char *creds, char **err)
{
	char path[] = "/tmp/pvesim-acl-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	char *text = strprintf(base, pv->ver, creds);
	cr_assert_eq(test_write_file(path, text, 0600), 0);
	free(text);
	struct cluster *c = cluster_load(path, T0, err);
	unlink(path);
	return c;
}

/* A privsep token t@pve!t whose role Tok has every privilege pvagent uses
 * on pv's version but `drop`; its user has Administrator. */
static struct cluster *least(const struct test_pve *pv, const char *drop, const char *extra_acl)
{
	const char *const all[] = {
		"VM.Audit", "VM.Allocate", "VM.Clone", "VM.Config.Disk", "VM.Config.CDROM",
		"VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType",
		"VM.Config.Options", "VM.Config.Cloudinit", "VM.PowerMgmt", "VM.Snapshot",
		"VM.Snapshot.Rollback", "VM.Migrate", pv->agent, "Datastore.Audit",
		"Datastore.AllocateSpace", "SDN.Use", "Sys.Audit", NULL};
	struct sbuf b = {0};
	for (size_t i = 0; all[i]; i++)
		if (!drop || strcmp(all[i], drop) != 0)
			cr_assert_eq(sbuf_addf(&b, "%s%s", b.len ? "," : "", all[i]), 0);
	char *creds = strprintf(
		"\"roles\": {\"Tok\": \"%s\"},"
		" \"users\": [{\"id\": \"t@pve\", \"password\": \"pw\","
		"  \"acl\": [{\"path\": \"/\", \"role\": \"Administrator\"}]}],"
		" \"tokens\": [{\"id\": \"t@pve!t\", \"secret\": \"s\", \"privsep\": true,"
		"  \"acl\": [{\"path\": \"/\", \"role\": \"Tok\"}%s]}]",
		sbuf_str(&b), extra_acl ? extra_acl : "");
	sbuf_free(&b);
	char *err = NULL;
	struct cluster *c = world(pv, creds, &err);
	cr_assert_not_null(c, "%s", err ? err : "?");
	free(creds);
	return c;
}

static void as(struct cluster *c, const char *who, const char *method, const char *path,
	       const char *params, struct sim_resp *r)
{
	json_object *p = json_tokener_parse(params ? params : "{}");
	cr_assert_not_null(p);
	struct sim_req req = {.method = method, .path = path, .params = p, .userid = who,
			      .now = T0};
	memset(r, 0, sizeof *r);
	cluster_handle(c, &req, r);
	json_object_put(p);
}

static void refused(struct sim_resp *r, const char *msg)
{
	cr_assert_eq(r->status, 403, "status %d (%s), want 403 %s", r->status,
		     r->message ? r->message : "", msg);
	cr_assert_str_eq(r->message, msg);
	sim_resp_clear(r);
}

static void allowed(struct sim_resp *r, const char *what)
{
	cr_assert(r->status == 0 || r->status == 200, "%s: %d %s", what, r->status,
		  r->message ? r->message : "");
	sim_resp_clear(r);
}

ON_EACH_PVE_VERSION(acl, scenario_acl_refusals_name_the_path)
{
	static const struct {
		const char *creds, *want;
	} bad[] = {
		{"\"tokens\": [{\"id\": \"a@pve!t\", \"secret\": \"s\", \"acl\": [{\"path\": \"/\","
		 " \"role\": \"PVEFly\"}]}]",
		 "$.tokens[0].acl[0]: role 'PVEFly' does not exist"},
		{"\"tokens\": [{\"id\": \"a@pve!t\", \"secret\": \"s\", \"acl\": [{\"path\": \"vms\","
		 " \"role\": \"PVEAuditor\"}]}]",
		 "$.tokens[0].acl[0]: invalid ACL path 'vms'"},
		{"\"tokens\": [{\"id\": \"a@pve!t\", \"secret\": \"s\", \"acl\": [{\"path\": \"/\","
		 " \"role\": \"PVEAuditor\", \"propagate\": 1}]}]",
		 "$.tokens[0].acl[0]: 'propagate' must be a boolean, not integer"},
		{"\"tokens\": [{\"id\": \"a@pve!t\", \"secret\": \"s\", \"acl\": [{\"path\": \"/\","
		 " \"roles\": \"PVEAuditor\"}]}]",
		 "$.tokens[0].acl[0]: unknown key 'roles'"},
		{"\"roles\": {\"PVEAdmin\": \"VM.Audit\"}",
		 "$.roles.PVEAdmin: role 'PVEAdmin' already exists"},
		{"\"users\": [{\"id\": \"u@pve\", \"password\": \"p\", \"privs\": \"VM.Fly\"}]",
		 "$.users[0].privs: invalid privilege 'VM.Fly'"},
		{"\"users\": [{\"id\": \"u@pve\", \"password\": \"p\", \"privsep\": true}]",
		 "$.users[0]: unknown key 'privsep'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *err = NULL;
		struct cluster *c = world(pv, bad[i].creds, &err);
		cr_assert_null(c, "%s loads", bad[i].creds);
		cr_assert_not_null(err);
		cr_assert(strstr(err, bad[i].want), "got '%s', want '%s'", err, bad[i].want);
		free(err);
	}
}

/* Each of qemu-server's key groups asks its own privilege on /vms/100. */
ON_EACH_PVE_VERSION(acl, config_key_groups)
{
	static const struct {
		const char *priv, *params;
	} groups[] = {
		{"VM.Config.CPU", "{\"cores\": \"2\"}"},
		{"VM.Config.CPU", "{\"numa0\": \"cpus=0\"}"},
		{"VM.Config.Memory", "{\"balloon\": \"512\"}"},
		{"VM.Config.HWType", "{\"scsihw\": \"virtio-scsi-pci\"}"},
		{"VM.Config.Options", "{\"description\": \"x\"}"},
		{"VM.Config.Options", "{\"bios\": \"ovmf\"}"},
		{"VM.Config.Disk", "{\"boot\": \"order=ide0\"}"},
		{"VM.Config.Network", "{\"net1\": \"virtio,bridge=vmbr0\"}"},
		{"VM.PowerMgmt", "{\"freeze\": \"1\"}"},
		/* the worker's drive checks: the old value, then the new one */
		{"VM.Config.Disk", "{\"delete\": \"ide0\"}"},
		{"VM.Config.CDROM", "{\"ide2\": \"none,media=cdrom\"}"},
	};
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
		struct cluster *c = least(pv, groups[i].priv, NULL);
		struct sim_resp r;
		char msg[96];
		snprintf(msg, sizeof msg, "Permission check failed (/vms/100, %s)", groups[i].priv);
		as(c, "t@pve!t", "PUT", "/nodes/pve1/qemu/100/config", groups[i].params, &r);
		refused(&r, msg);
		cluster_free(c);
		c = least(pv, NULL, NULL);
		as(c, "t@pve!t", "PUT", "/nodes/pve1/qemu/100/config", groups[i].params, &r);
		allowed(&r, groups[i].params);
		cluster_free(c);
	}
	/* cloud-init keys: VM.Config.Cloudinit or VM.Config.Network */
	struct cluster *c = least(pv, "VM.Config.Cloudinit", NULL);
	struct sim_resp r;
	as(c, "t@pve!t", "PUT", "/nodes/pve1/qemu/100/config", "{\"ciuser\": \"x\"}", &r);
	allowed(&r, "ciuser with VM.Config.Network");
	cluster_free(c);
	c = least(pv, "VM.Config.Network", ",{\"path\": \"/vms\", \"role\": \"PVEAuditor\"}");
	as(c, "t@pve!t", "PUT", "/nodes/pve1/qemu/100/config", "{\"ciuser\": \"x\"}", &r);
	refused(&r, "Permission check failed (/vms/100, VM.Config.Cloudinit|VM.Config.Network)");
	/* startup also needs Sys.Modify on / */
	cluster_free(c);
	c = least(pv, NULL, NULL);
	as(c, "t@pve!t", "PUT", "/nodes/pve1/qemu/100/config", "{\"startup\": \"order=1\"}", &r);
	refused(&r, "Permission check failed (/, Sys.Modify)");
	/* POST: the worker's refusal is the qmconfig task's failure */
	cluster_free(c);
	c = least(pv, "VM.Config.Disk", NULL);
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu/100/config",
	   "{\"delete\": \"ide0\", \"virtio0\": \"local-lvm:vm-100-disk-0\"}", &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	cr_assert_not_null(r.upid);
	char *tpath = strprintf("/nodes/pve1/tasks/%s/status", r.upid);
	sim_resp_clear(&r);
	cluster_advance(c, T0 + 10);
	as(c, "t@pve!t", "GET", tpath, NULL, &r);
	free(tpath);
	json_object *es = NULL;
	cr_assert(json_object_object_get_ex(r.data, "exitstatus", &es), "task ended");
	cr_assert_str_eq(json_object_get_string(es),
			 "Permission check failed (/vms/100, VM.Config.Disk)");
	sim_resp_clear(&r);
	cr_assert_not_null(cfg_str(cluster_guest(c, 100)->config, "ide0"), "nothing changed");
	cluster_free(c);
}

ON_EACH_PVE_VERSION(acl, sdn_use_on_the_bridge)
{
	struct cluster *c = least(pv, "SDN.Use", ",{\"path\": \"/sdn/zones/localnetwork/vmbr1\","
					     " \"role\": \"PVESDNUser\"}");
	struct sim_resp r;
	/* clone: every NIC of the source */
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu/9000/clone", "{\"newid\": 200}", &r);
	refused(&r, "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)");
	cr_assert_null(cluster_guest(c, 200), "no guest made");
	/* config: the new NIC, then (in the worker) the old one */
	as(c, "t@pve!t", "PUT", "/nodes/pve1/qemu/101/config",
	   "{\"net0\": \"virtio,bridge=vmbr0\"}", &r);
	refused(&r, "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)");
	as(c, "t@pve!t", "PUT", "/nodes/pve1/qemu/101/config",
	   "{\"net0\": \"virtio,bridge=vmbr1\"}", &r);
	allowed(&r, "vmbr1 is granted");
	as(c, "t@pve!t", "PUT", "/nodes/pve1/qemu/100/config",
	   "{\"net0\": \"virtio=BC:24:11:00:01:00,bridge=vmbr1\"}", &r);
	refused(&r, "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)");
	/* a tag: the VLAN's path, reached by the bridge's propagating entry */
	as(c, "t@pve!t", "PUT", "/nodes/pve1/qemu/101/config",
	   "{\"net1\": \"virtio,bridge=vmbr1,tag=7\"}", &r);
	allowed(&r, "vmbr1/7 through propagate");
	as(c, "t@pve!t", "PUT", "/nodes/pve1/qemu/101/config",
	   "{\"net2\": \"virtio,bridge=vmbr0,trunks=5;8-9\"}", &r);
	refused(&r, "Permission check failed (/sdn/zones/localnetwork/vmbr0/5, SDN.Use)");
	/* create */
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu",
	   "{\"vmid\": 300, \"net0\": \"virtio,bridge=vmbr0\"}", &r);
	refused(&r, "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)");
	cr_assert_null(cluster_guest(c, 300));
	/* root@pam is never asked */
	as(c, "root@pam", "POST", "/nodes/pve1/qemu/9000/clone", "{\"newid\": 201}", &r);
	allowed(&r, "root clones");
	cluster_free(c);
}

ON_EACH_PVE_VERSION(acl, clone_snapshot_and_lists)
{
	/* VM.Clone on the source, VM.Allocate on the new VMID */
	struct cluster *c = least(pv, NULL, ",{\"path\": \"/vms/9000\", \"role\": \"PVEAuditor\"}");
	struct sim_resp r;
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu/9000/clone", "{\"newid\": 200}", &r);
	refused(&r, "Permission check failed (/vms/9000, VM.Clone)");
	cluster_free(c);
	c = least(pv, NULL, ",{\"path\": \"/vms/200\", \"role\": \"PVETemplateUser\"}");
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu/9000/clone", "{\"newid\": 200}", &r);
	/* the `or` of /vms/NEWID and /pool/POOL: PVE's bare text */
	refused(&r, "Permission check failed");
	/* Datastore.AllocateSpace on each disk's storage, or the target storage */
	cluster_free(c);
	c = least(pv, NULL, ",{\"path\": \"/storage/other\", \"role\": \"PVEAuditor\"}");
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu/9000/clone",
	   "{\"newid\": 200, \"full\": 1, \"storage\": \"other\"}", &r);
	refused(&r, "Permission check failed (/storage/other, Datastore.AllocateSpace)");
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu/9000/clone",
	   "{\"newid\": 200, \"full\": 1, \"storage\": \"local-lvm\"}", &r);
	allowed(&r, "clone onto local-lvm");
	/* rollback: VM.Snapshot or VM.Snapshot.Rollback */
	cluster_free(c);
	c = least(pv, "VM.Snapshot", NULL);
	as(c, "root@pam", "POST", "/nodes/pve1/qemu/100/snapshot", "{\"snapname\": \"s1\"}", &r);
	allowed(&r, "root's snapshot");
	cluster_advance(c, T0 + 30);
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu/100/snapshot", "{\"snapname\": \"s2\"}", &r);
	refused(&r, "Permission check failed (/vms/100, VM.Snapshot)");
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu/100/snapshot/s1/rollback", NULL, &r);
	allowed(&r, "rollback with VM.Snapshot.Rollback");
	/* lists: only what the caller may see */
	cluster_free(c);
	c = least(pv, NULL, ",{\"path\": \"/vms/101\", \"role\": \"NoAccess\"},"
			"{\"path\": \"/storage/other\", \"role\": \"NoAccess\"}");
	as(c, "t@pve!t", "GET", "/cluster/resources", NULL, &r);
	cr_assert_eq(r.status, 200);
	const char *txt = json_object_to_json_string_ext(
		r.data, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	cr_assert(strstr(txt, "qemu/100") && strstr(txt, "qemu/9000"), "%s", txt);
	cr_assert(!strstr(txt, "qemu/101"), "101 is hidden: %s", txt);
	cr_assert(strstr(txt, "storage/pve1/local-lvm") && !strstr(txt, "storage/pve1/other"),
		  "%s", txt);
	sim_resp_clear(&r);
	as(c, "t@pve!t", "GET", "/nodes/pve1/qemu", NULL, &r);
	txt = json_object_to_json_string_ext(r.data, JSON_C_TO_STRING_PLAIN);
	cr_assert(!strstr(txt, "\"vmid\":101"), "%s", txt);
	sim_resp_clear(&r);
	as(c, "t@pve!t", "GET", "/nodes/pve1/qemu/101/config", NULL, &r);
	refused(&r, "Permission check failed (/vms/101, VM.Audit)");
	cluster_free(c);
	/* a node's figures need Sys.Audit on /nodes/NODE (extract_node_stats) */
	c = least(pv, "Sys.Audit", NULL);
	as(c, "t@pve!t", "GET", "/nodes", NULL, &r);
	json_object *n0 = json_object_array_get_idx(r.data, 0);
	cr_assert_not_null(n0);
	cr_expect(json_object_object_get_ex(n0, "status", NULL));
	cr_expect_not(json_object_object_get_ex(n0, "maxmem", NULL), "figures without Sys.Audit");
	sim_resp_clear(&r);
	as(c, "t@pve!t", "GET", "/nodes/pve1/status", NULL, &r);
	refused(&r, "Permission check failed (/nodes/pve1, Sys.Audit)");
	cluster_free(c);
	c = least(pv, NULL, NULL);
	as(c, "t@pve!t", "GET", "/nodes", NULL, &r);
	cr_expect(json_object_object_get_ex(json_object_array_get_idx(r.data, 0), "maxmem", NULL));
	sim_resp_clear(&r);
	cluster_free(c);
}

/* What a rolling run reads of the cluster (agent/wf_rolling.c): its
 * status, HA's resources and status need Sys.Audit on / (pve-manager
 * PVE/API2/Cluster.pm get_status, pve-ha-manager API2/HA/Resources.pm
 * index and Status.pm status), Ceph's status Sys.Audit or Datastore.Audit
 * there (API2/Cluster/Ceph.pm), a node's status Sys.Audit on /nodes/NODE,
 * its version nothing (API2/Nodes.pm). */
ON_EACH_PVE_VERSION(acl, rolling_reads_need_sys_audit_on_root)
{
	static const char *const root[] = {"/cluster/status", "/cluster/ha/resources",
					   "/cluster/ha/status/current"};
	struct cluster *c = least(pv, "Sys.Audit", NULL);
	struct sim_resp r;
	for (size_t i = 0; i < 3; i++) {
		as(c, "t@pve!t", "GET", root[i], NULL, &r);
		refused(&r, "Permission check failed (/, Sys.Audit)");
	}
	as(c, "t@pve!t", "GET", "/nodes/pve1/status", NULL, &r);
	refused(&r, "Permission check failed (/nodes/pve1, Sys.Audit)");
	/* Datastore.Audit is enough for Ceph's status (none here: PVE's 500) */
	as(c, "t@pve!t", "GET", "/cluster/ceph/status", NULL, &r);
	cr_expect_eq(r.status, 500, "%d %s", r.status, r.message ? r.message : "");
	sim_resp_clear(&r);
	as(c, "t@pve!t", "GET", "/nodes/pve1/version", NULL, &r);
	allowed(&r, "a node's version, without Sys.Audit");
	cluster_free(c);
	c = least(pv, NULL, NULL);
	for (size_t i = 0; i < 3; i++) {
		as(c, "t@pve!t", "GET", root[i], NULL, &r);
		allowed(&r, root[i]);
	}
	cluster_free(c);
}

/* GET /access/permissions: the caller's own privileges on a path, a
 * privsep token's being the intersection; another user's need Sys.Audit
 * on /access. */
ON_EACH_PVE_VERSION(acl, access_permissions_route)
{
	char *err = NULL;
	struct cluster *c = world(pv,
		"\"users\": [{\"id\": \"u@pve\", \"password\": \"p\","
		" \"acl\": [{\"path\": \"/\", \"role\": \"PVEVMUser\"}]},"
		" {\"id\": \"v@pve\", \"password\": \"p\", \"privs\": \"VM.Audit\"}],"
		" \"tokens\": [{\"id\": \"u@pve!t\", \"secret\": \"s\","
		" \"acl\": [{\"path\": \"/vms\", \"role\": \"PVEVMAdmin\"}]}]",
		&err);
	cr_assert_not_null(c, "%s", err ? err : "?");
	struct sim_resp r;
	as(c, "u@pve!t", "GET", "/access/permissions", "{\"path\": \"/vms/100\"}", &r);
	cr_assert_eq(r.status, 200, "%s", r.message ? r.message : "");
	json_object *p = NULL;
	cr_assert(json_object_object_get_ex(r.data, "/vms/100", &p));
	cr_expect(json_object_object_get_ex(p, "VM.PowerMgmt", NULL), "both have it");
	cr_expect_not(json_object_object_get_ex(p, "VM.Allocate", NULL), "only the token has it");
	sim_resp_clear(&r);
	as(c, "u@pve", "GET", "/access/permissions", "{\"userid\": \"u@pve!t\", \"path\": \"/\"}",
	   &r);
	cr_assert_eq(r.status, 200, "a user may read its tokens'");
	cr_assert(json_object_object_get_ex(r.data, "/", &p));
	cr_expect_eq(json_object_object_length(p), 0, "the token has nothing on /");
	sim_resp_clear(&r);
	as(c, "v@pve", "GET", "/access/permissions", "{\"userid\": \"u@pve\"}", &r);
	refused(&r, "Permission check failed (/access, Sys.Audit)");
	as(c, "v@pve", "GET", "/access/permissions", NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_expect(json_object_object_get_ex(r.data, "/vms", NULL));
	sim_resp_clear(&r);
	cluster_free(c);
}

/* The guest agent's address: VM.Monitor on 8.4; on 9.x VM.GuestAgent.Audit
 * or VM.GuestAgent.Unrestricted, with PVE's text naming both. */
ON_EACH_PVE_VERSION(acl, guest_agent_route_needs_the_versions_privilege)
{
	static const char path[] = "/nodes/pve1/qemu/100/agent/network-get-interfaces";
	struct cluster *c = least(pv, pv->agent, NULL);
	struct sim_resp r;
	as(c, "t@pve!t", "GET", path, NULL, &r);
	refused(&r, pv->major >= 9 ? "Permission check failed (/vms/100, "
				    "VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)"
				  : "Permission check failed (/vms/100, VM.Monitor)");
	cluster_free(c);
	c = least(pv, pv->agent, ",{\"path\": \"/vms/100\", \"role\": \"PVEVMAdmin\"}");
	as(c, "t@pve!t", "GET", path, NULL, &r);
	cr_assert_eq(r.status, 500, "past the check: %d %s", r.status, r.message ? r.message : "");
	cr_assert_str_eq(r.message, "No QEMU guest agent configured");
	sim_resp_clear(&r);
	cluster_free(c);
}

/* A role the scenario stores (user.cfg) keeps only what its version knows:
 * PVE's parse_user_config drops the rest with a warning on stderr. On 9.x
 * this is the upgraded cluster whose role lost VM.Monitor. */
static void stored_roles_on(const struct test_pve *pv);
PVE_VERSION_PARAMS(acl, stored_roles_drop_what_the_version_does_not_know)
ParameterizedTest(const int *vi, acl, stored_roles_drop_what_the_version_does_not_know,
		  .init = cr_redirect_stderr)
{
	stored_roles_on(&test_pve_versions[*vi]);
}
static void stored_roles_on(const struct test_pve *pv)
{
	char *roles = strprintf("\"roles\": {\"Old\": \"VM.Audit VM.Monitor VM.Fly\"},"
				" \"tokens\": [{\"id\": \"t@pve!t\", \"secret\": \"s\", \"privsep\": false,"
				"  \"acl\": [{\"path\": \"/\", \"role\": \"Old\"}]}]");
	char *err = NULL;
	struct cluster *c = world(pv, roles, &err);
	free(roles);
	cr_assert_not_null(c, "%s", err ? err : "?");
	fflush(stderr);
	if (pv->major >= 9)
		cr_assert_stderr_eq_str("user config - ignore invalid privilege 'VM.Monitor'\n"
					"user config - ignore invalid privilege 'VM.Fly'\n");
	else
		cr_assert_stderr_eq_str("user config - ignore invalid privilege 'VM.Fly'\n");
	acl_privset have;
	cr_assert(acl_role_privs(c->acl, "Old", &have));
	char *n = names(have);
	cr_assert_str_eq(n, pv->major >= 9 ? "VM.Audit" : "VM.Audit VM.Monitor");
	free(n);
	struct sim_resp r;
	as(c, "t@pve!t", "GET", "/nodes/pve1/qemu/100/agent/network-get-interfaces", NULL, &r);
	if (pv->major >= 9)
		refused(&r, "Permission check failed (/vms/100, "
			    "VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)");
	else
		cr_assert_eq(r.status, 500, "8.4 keeps VM.Monitor: %s", r.message ? r.message : "");
	sim_resp_clear(&r);
	cluster_free(c);
	/* the same list through the API path (`pveum role add`) is refused */
	struct acl *a = model(pv->major);
	cr_assert_eq(acl_add_role(a, "Old", "VM.Audit VM.Monitor VM.Fly", &err), -1);
	cr_assert_str_eq(err, pv->major >= 9 ? "invalid privilege 'VM.Monitor'"
					    : "invalid privilege 'VM.Fly'");
	free(err);
	acl_free(a);
}

/* LXC create: PVE 9 (pve-container 6.0.6) makes a container unprivileged
 * unless asked otherwise and wants Sys.Modify on / for a privileged one;
 * PVE 8 defaults to privileged and asks nothing more. */
ON_EACH_PVE_VERSION(acl, lxc_create_privileged_or_not)
{
	static const char ct[] = "{\"vmid\": %d, \"hostname\": \"ct\", \"ostemplate\":"
				 " \"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\","
				 " \"rootfs\": \"local-lvm:4\"%s}";
	struct cluster *c = least(pv, NULL, NULL);
	struct sim_resp r;
	char *p = strprintf(ct, 300, "");
	as(c, "t@pve!t", "POST", "/nodes/pve1/lxc", p, &r);
	free(p);
	allowed(&r, "create without unprivileged");
	const char *up = cfg_str(cluster_guest(c, 300)->config, "unprivileged");
	if (pv->major >= 9)
		cr_assert(up && strcmp(up, "1") == 0, "9.x: unprivileged by default (%s)",
			  up ? up : "unset");
	else
		cr_assert_null(up, "8.4: privileged by default");
	p = strprintf(ct, 301, ", \"unprivileged\": \"0\"");
	as(c, "t@pve!t", "POST", "/nodes/pve1/lxc", p, &r);
	if (pv->major >= 9) {
		refused(&r, "Permission check failed (/, Sys.Modify)");
		cr_assert_null(cluster_guest(c, 301), "nothing created");
	} else {
		allowed(&r, "8.4: a privileged CT needs no Sys.Modify");
	}
	free(p);
	p = strprintf(ct, 302, ", \"unprivileged\": \"0\"");
	as(c, "root@pam", "POST", "/nodes/pve1/lxc", p, &r);
	free(p);
	allowed(&r, "root may create a privileged CT");
	cluster_free(c);
}

/* import-from checks its source too (qemu-server $check_storage_access,
 * pve-storage check_volume_access): an import volume wants
 * Datastore.Allocate, or one of Datastore.AllocateSpace and Datastore.Audit
 * (check_any: PVE names both), on its storage; a VM's disk VM.Clone on
 * that VM. */
ON_EACH_PVE_VERSION(acl, import_from_checks_the_source)
{
	static const char vm[] = "{\"vmid\": 300, \"scsi0\": \"local-lvm:0,import-from=%s\"}";
	char *imp = strprintf(vm, "local:import/d13.qcow2");
	char *disk = strprintf(vm, "local-lvm:vm-100-disk-0");
	struct cluster *c = least(pv, NULL, NULL);
	struct sim_resp r;
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu", imp, &r);
	allowed(&r, "import with Datastore.Audit on /storage/local");
	cluster_free(c);
	c = least(pv, NULL, ",{\"path\": \"/storage/local\", \"role\": \"NoAccess\"}");
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu", imp, &r);
	refused(&r, "Permission check failed (/storage/local, "
		    "Datastore.AllocateSpace|Datastore.Audit)");
	cluster_free(c);
	c = least(pv, "VM.Clone", NULL);
	as(c, "t@pve!t", "POST", "/nodes/pve1/qemu", disk, &r);
	refused(&r, "Permission check failed (/vms/100, VM.Clone)");
	cluster_free(c);
	free(imp);
	free(disk);
}
