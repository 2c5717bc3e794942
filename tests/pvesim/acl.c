/* acl.c - PVE's permission model per version (see acl.h): privileges and roles as
 * PVE::AccessControl builds them, ACL entries, the path walk of
 * PVE::AccessControl::roles and the token intersection of
 * PVE::RPCEnvironment::permissions. */
#include "acl.h"

#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PVE::AccessControl's $privgroups, per category the privileges of each
 * level; the built-in roles are made from these exactly as create_roles()
 * makes them. The VM category differs by version: pve-access-control 8.2
 * (stable-bookworm) has VM.Monitor; 9.x (master) dropped it (07069454) and
 * added VM.GuestAgent.* (922f7105) and VM.Replicate (5f7544fe). The other
 * categories are the same on both. */
struct privgroup {
	const char *cat;
	const char *const *root, *const *admin, *const *user, *const *audit;
};

#define L(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE ((const char *const[]){NULL})
static const struct privgroup vm8 = {
	"VM", NONE,
	L("VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network",
	  "VM.Config.HWType", "VM.Config.Options", "VM.Allocate", "VM.Clone", "VM.Migrate",
	  "VM.Monitor", "VM.Snapshot", "VM.Snapshot.Rollback"),
	L("VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup", "VM.PowerMgmt"),
	L("VM.Audit")};
static const struct privgroup vm9 = {
	"VM", NONE,
	L("VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network",
	  "VM.Config.HWType", "VM.Config.Options", "VM.Allocate", "VM.Clone",
	  "VM.GuestAgent.Unrestricted", "VM.Migrate", "VM.Replicate", "VM.Snapshot",
	  "VM.Snapshot.Rollback"),
	L("VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup",
	  "VM.GuestAgent.FileRead", "VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.FileWrite",
	  "VM.PowerMgmt"),
	L("VM.Audit", "VM.GuestAgent.Audit")};
static const struct privgroup common[] = {
	{"Sys", L("Sys.PowerMgmt", "Sys.Modify", "Sys.Incoming", "Sys.AccessNetwork"),
	 L("Sys.Console", "Sys.Syslog"), NONE, L("Sys.Audit")},
	{"Datastore", NONE, L("Datastore.Allocate", "Datastore.AllocateTemplate"),
	 L("Datastore.AllocateSpace"), L("Datastore.Audit")},
	{"SDN", NONE, L("SDN.Allocate", "SDN.Audit"), L("SDN.Use"), L("SDN.Audit")},
	{"User", L("Realm.Allocate"), L("User.Modify", "Group.Allocate", "Realm.AllocateUser"),
	 NONE, NONE},
	{"Pool", NONE, L("Pool.Allocate"), L("Pool.Audit"), L("Pool.Audit")},
	{"Mapping", NONE, L("Mapping.Modify"), L("Mapping.Use"), L("Mapping.Audit")},
};
#undef L
#undef NONE
#define NCOMMON (sizeof common / sizeof common[0])

/* Group i (0 = VM, then the common ones) of a PVE major version; NULL past
 * the last. Majors before 9 have 8.x's list. */
static const struct privgroup *group_of(int major, size_t i)
{
	if (i == 0)
		return major >= 9 ? &vm9 : &vm8;
	return i <= NCOMMON ? &common[i - 1] : NULL;
}

/* Every privilege of any version once: 8.x's in the order above, then what
 * 9.x adds, then Permissions.Modify (in no group). A set's bit i is
 * priv_names[i]. Filled on first use (init_privs). */
#define MAXPRIV 64
static const char *priv_names[MAXPRIV + 1];
static int npriv;

static void add_priv(const char *p)
{
	for (int i = 0; i < npriv; i++)
		if (strcmp(priv_names[i], p) == 0)
			return;
	if (npriv < MAXPRIV)
		priv_names[npriv++] = p;
}

static void add_version(int major)
{
	for (size_t g = 0; group_of(major, g); g++) {
		const struct privgroup *pg = group_of(major, g);
		const char *const *lv[] = {pg->root, pg->admin, pg->user, pg->audit};
		for (size_t l = 0; l < 4; l++)
			for (const char *const *p = lv[l]; *p; p++)
				add_priv(*p);
	}
}

static void fill_privs(void)
{
	add_version(8);
	add_version(9);
	add_priv("Permissions.Modify");
}

/* Once, whichever thread comes first (the schema checker runs on several). */
static void init_privs(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, fill_privs);
}

int acl_priv_index(const char *name)
{
	init_privs();
	for (int i = 0; name && i < npriv; i++)
		if (strcmp(priv_names[i], name) == 0)
			return i;
	return -1;
}

const char *acl_priv_name(int i)
{
	init_privs();
	return i >= 0 && i < npriv ? priv_names[i] : NULL;
}

/* The set of one privilege; empty for a name no version has. */
static acl_privset bit(const char *name)
{
	int i = acl_priv_index(name);
	return i < 0 ? 0 : (acl_privset)1 << i;
}

static acl_privset set_of(const char *const *list)
{
	acl_privset s = 0;
	for (const char *const *p = list; *p; p++)
		s |= bit(*p);
	return s;
}

acl_privset acl_version_privs(int major)
{
	acl_privset s = bit("Permissions.Modify");
	for (size_t g = 0; group_of(major, g); g++) {
		const struct privgroup *pg = group_of(major, g);
		s |= set_of(pg->root) | set_of(pg->admin) | set_of(pg->user) | set_of(pg->audit);
	}
	return s;
}

bool acl_priv_valid(int major, const char *name)
{
	int i = acl_priv_index(name);
	return i >= 0 && (acl_version_privs(major) >> i & 1);
}

/* create_roles(): PVE<Cat>Admin (admin, user, audit), PVEAdmin (all of
 * those but Mapping.Modify), PVE<Cat>User (user and audit, where the
 * category has user privileges), PVEAuditor (every audit), PVETemplateUser,
 * NoAccess and Administrator (everything). */
static bool builtin_role(int major, const char *role, acl_privset *out)
{
	*out = 0;
	if (strcmp(role, "Administrator") == 0) {
		*out = acl_version_privs(major);
		return true;
	}
	if (strcmp(role, "NoAccess") == 0)
		return true;
	if (strcmp(role, "PVETemplateUser") == 0) {
		*out = set_of((const char *const[]){"VM.Clone", "VM.Audit", NULL});
		return true;
	}
	bool admin = strcmp(role, "PVEAdmin") == 0, auditor = strcmp(role, "PVEAuditor") == 0;
	bool found = admin || auditor;
	for (size_t g = 0; group_of(major, g); g++) {
		const struct privgroup *pg = group_of(major, g);
		acl_privset aua = set_of(pg->admin) | set_of(pg->user) | set_of(pg->audit);
		char name[48];
		snprintf(name, sizeof name, "PVE%sAdmin", pg->cat);
		if (strcmp(role, name) == 0) {
			*out = aua;
			return true;
		}
		snprintf(name, sizeof name, "PVE%sUser", pg->cat);
		if (pg->user[0] && strcmp(role, name) == 0) {
			*out = set_of(pg->user) | set_of(pg->audit);
			return true;
		}
		if (admin)
			*out |= aua;
		if (auditor)
			*out |= set_of(pg->audit);
	}
	if (admin)
		*out &= ~bit("Mapping.Modify");
	return found;
}

struct role {
	char *name;
	acl_privset privs;
};

struct entry {
	char *path; /* normalised: "/", "/vms/100" */
	char *role; /* the role granted (its privileges follow it), or NULL for
		       a scenario's plain privilege set */
	acl_privset privs;
	bool noaccess;
	bool propagate;
};

struct subject {
	char *id;
	bool token, privsep;
	struct entry *e;
	size_t n;
};

struct acl {
	int major; /* the PVE version's privileges and built-in roles */
	struct role *roles;
	size_t nroles;
	struct subject *subj;
	size_t nsubj;
};

struct acl *acl_new(int pve_major)
{
	init_privs();
	struct acl *a = calloc(1, sizeof(struct acl));
	if (a)
		a->major = pve_major;
	return a;
}

void acl_free(struct acl *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nroles; i++)
		free(a->roles[i].name);
	for (size_t i = 0; i < a->nsubj; i++) {
		for (size_t j = 0; j < a->subj[i].n; j++) {
			free(a->subj[i].e[j].path);
			free(a->subj[i].e[j].role);
		}
		free(a->subj[i].e);
		free(a->subj[i].id);
	}
	free(a->roles);
	free(a->subj);
	free(a);
}

bool acl_role_privs(const struct acl *a, const char *role, acl_privset *out)
{
	if (builtin_role(a->major, role, out))
		return true;
	for (size_t i = 0; i < a->nroles; i++)
		if (strcmp(a->roles[i].name, role) == 0) {
			*out = a->roles[i].privs;
			return true;
		}
	return false;
}

/* Split a privilege list as PVE's split_list does ("," ";" or spaces);
 * each name goes to one(name, arg), which stops the walk by returning -1. */
static int each_priv(const char *list, int (*one)(const char *name, void *arg), void *arg)
{
	const char *p = list;
	while (*p) {
		while (*p == ',' || *p == ' ' || *p == ';')
			p++;
		size_t n = strcspn(p, ", ;");
		if (!n)
			break;
		char *name = strndup(p, n);
		if (!name || one(name, arg) < 0) {
			free(name);
			return -1;
		}
		free(name);
		p += n;
	}
	return 0;
}

struct parse {
	int major;
	acl_privset set;
	FILE *warn; /* NULL: an invalid name is an error */
	char *err;
};

static int parse_one(const char *name, void *arg)
{
	struct parse *ps = arg;
	if (acl_priv_valid(ps->major, name)) {
		ps->set |= bit(name);
		return 0;
	}
	if (ps->warn) {
		fprintf(ps->warn, "user config - ignore invalid privilege '%s'\n", name);
		return 0;
	}
	ps->err = strprintf("invalid privilege '%s'", name);
	return -1;
}

int acl_parse_privs(const struct acl *a, const char *list, acl_privset *out, char **err)
{
	*out = 0;
	if (strcmp(list, "all") == 0) {
		*out = acl_version_privs(a->major);
		return 0;
	}
	struct parse ps = {a->major, 0, NULL, NULL};
	if (each_priv(list, parse_one, &ps) < 0) {
		*err = ps.err;
		return -1;
	}
	*out = ps.set;
	return 0;
}

/* A custom role; warn as for struct parse. */
static int add_role(struct acl *a, const char *name, const char *privlist, FILE *warn,
		    char **err)
{
	acl_privset s;
	if (!*name || strchr(name, ' ') || strchr(name, ',')) {
		*err = strprintf("invalid role name '%s'", name);
		return -1;
	}
	if (acl_role_privs(a, name, &s)) {
		*err = strprintf("role '%s' already exists", name);
		return -1;
	}
	struct parse ps = {a->major, 0, warn, NULL};
	if (strcmp(privlist, "all") == 0)
		ps.set = acl_version_privs(a->major);
	else if (each_priv(privlist, parse_one, &ps) < 0) {
		*err = ps.err;
		return -1;
	}
	struct role *r = realloc(a->roles, (a->nroles + 1) * sizeof *r);
	if (!r)
		return -1;
	a->roles = r;
	r[a->nroles].name = strdup(name);
	if (!r[a->nroles].name)
		return -1;
	r[a->nroles++].privs = ps.set;
	return 0;
}

int acl_add_role(struct acl *a, const char *name, const char *privlist, char **err)
{
	return add_role(a, name, privlist, NULL, err);
}

int acl_load_role(struct acl *a, const char *name, const char *privlist, FILE *warn,
		  char **err)
{
	return add_role(a, name, privlist, warn, err);
}

static struct subject *find_subject(const struct acl *a, const char *id)
{
	for (size_t i = 0; a && id && i < a->nsubj; i++)
		if (strcmp(a->subj[i].id, id) == 0)
			return &a->subj[i];
	return NULL;
}

int acl_add_subject(struct acl *a, const char *id, bool privsep, char **err)
{
	const char *at = strchr(id, '@'), *bang = strchr(id, '!');
	if (!at || at == id || !at[1] || (bang && (bang < at || !bang[1]))) {
		*err = strprintf("invalid user or token id '%s'", id);
		return -1;
	}
	if (find_subject(a, id)) {
		*err = strprintf("'%s' already exists", id);
		return -1;
	}
	struct subject *s = realloc(a->subj, (a->nsubj + 1) * sizeof *s);
	if (!s)
		return -1;
	a->subj = s;
	s += a->nsubj;
	memset(s, 0, sizeof *s);
	s->id = strdup(id);
	if (!s->id)
		return -1;
	s->token = bang != NULL;
	s->privsep = privsep;
	a->nsubj++;
	return 0;
}

/* PVE::AccessControl::normalize_path: one slash between components, none
 * at the end; NULL for what is not an absolute path. */
static char *normalize(const char *path)
{
	if (!path || path[0] != '/')
		return NULL;
	struct sbuf b = {0};
	int rc = 0;
	for (const char *p = path; *p && rc == 0;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n)
			rc = sbuf_addc(&b, '/') < 0 || sbuf_addn(&b, p, n) < 0 ? -1 : 0;
		p += n;
	}
	if (rc == 0 && !b.len)
		rc = sbuf_addc(&b, '/');
	char *out = rc == 0 ? sbuf_steal(&b) : NULL;
	sbuf_free(&b);
	return out;
}

static int grant(struct acl *a, const char *id, const char *path, acl_privset privs,
		 bool noaccess, bool propagate, char **err)
{
	struct subject *s = find_subject(a, id);
	if (!s) {
		*err = strprintf("no user or token '%s'", id);
		return -1;
	}
	char *np = normalize(path);
	if (!np) {
		*err = strprintf("invalid ACL path '%s'", path);
		return -1;
	}
	struct entry *e = realloc(s->e, (s->n + 1) * sizeof *e);
	if (!e) {
		free(np);
		return -1;
	}
	s->e = e;
	s->e[s->n++] = (struct entry){np, NULL, privs, noaccess, propagate};
	return 0;
}

int acl_grant(struct acl *a, const char *id, const char *path, const char *role,
	      bool propagate, char **err)
{
	acl_privset p;
	if (!acl_role_privs(a, role, &p)) {
		*err = strprintf("role '%s' does not exist", role);
		return -1;
	}
	if (grant(a, id, path, p, strcmp(role, "NoAccess") == 0, propagate, err) < 0)
		return -1;
	struct subject *s = find_subject(a, id);
	return (s->e[s->n - 1].role = strdup(role)) ? 0 : -1;
}

int acl_grant_privs(struct acl *a, const char *id, const char *path, acl_privset privs,
		    bool propagate, char **err)
{
	return grant(a, id, path, privs, false, propagate, err);
}

/* PVE::AccessControl::roles for one subject's own entries: walk "/", then
 * each longer prefix of path; at each level the entries there that apply
 * (on the path itself, or propagating) replace what was found above.
 * NoAccess among the final ones leaves nothing. */
struct walk {
	acl_privset cur;
	bool noaccess;
};

static void walk_level(const struct subject *s, const char *np, size_t plen, bool final,
		       struct walk *w)
{
	acl_privset lvl = 0;
	bool any = false, na = false;
	for (size_t i = 0; i < s->n; i++) {
		const struct entry *e = &s->e[i];
		if (strlen(e->path) != plen || strncmp(e->path, np, plen) != 0 ||
		    !(final || e->propagate))
			continue;
		any = true;
		lvl |= e->privs;
		na = na || e->noaccess;
	}
	if (any) {
		w->cur = lvl;
		w->noaccess = na;
	}
}

static acl_privset own_privs(const struct subject *s, const char *np)
{
	struct walk w = {0, false};
	size_t len = strlen(np);
	walk_level(s, np, 1, len == 1, &w); /* "/" */
	for (size_t end = 2; len > 1 && end <= len; end++)
		if (end == len || np[end] == '/')
			walk_level(s, np, end, end == len, &w);
	return w.noaccess ? 0 : w.cur;
}

acl_privset acl_privs_at(const struct acl *a, const char *userid, const char *path)
{
	if (!userid)
		return 0;
	if (strcmp(userid, "root@pam") == 0)
		return acl_version_privs(a->major);
	char *np = normalize(path);
	const struct subject *s = find_subject(a, userid);
	if (!np || !s) {
		free(np);
		return 0;
	}
	acl_privset out;
	if (s->token) {
		char *user = strndup(userid, strcspn(userid, "!"));
		const struct subject *u = user ? find_subject(a, user) : NULL;
		bool root = user && strcmp(user, "root@pam") == 0;
		acl_privset up = root ? acl_version_privs(a->major) : u ? own_privs(u, np) : own_privs(s, np);
		free(user);
		out = s->privsep ? up & own_privs(s, np) : up;
	} else {
		out = own_privs(s, np);
	}
	free(np);
	return out;
}

bool acl_check(const struct acl *a, const char *userid, const char *path, const char *priv)
{
	int i = acl_priv_index(priv);
	return i >= 0 && (acl_privs_at(a, userid, path) >> i & 1);
}

/* ---- changes through the access API (routes_access.c) ------------------- */

/* An ACL entry names its role: a role changed, deleted or made anew
 * changes what the entries naming it grant (PVE reads the role at each
 * check; a deleted role's entries stay and grant nothing). */
static void refresh_role(struct acl *a, const char *role)
{
	acl_privset p = 0;
	if (!acl_role_privs(a, role, &p))
		p = 0;
	for (size_t i = 0; i < a->nsubj; i++)
		for (size_t j = 0; j < a->subj[i].n; j++)
			if (a->subj[i].e[j].role && strcmp(a->subj[i].e[j].role, role) == 0)
				a->subj[i].e[j].privs = p;
}

static struct role *custom_role(const struct acl *a, const char *name)
{
	for (size_t i = 0; i < a->nroles; i++)
		if (strcmp(a->roles[i].name, name) == 0)
			return &a->roles[i];
	return NULL;
}

bool acl_role_special(const struct acl *a, const char *role)
{
	acl_privset p;
	return builtin_role(a->major, role, &p);
}

static int push_name(char ***v, size_t *n, const char *name)
{
	char **nv = realloc(*v, (*n + 1) * sizeof *nv);
	if (!nv)
		return -1;
	*v = nv;
	if (!(nv[*n] = strdup(name)))
		return -1;
	++*n;
	return 0;
}

int acl_role_names(const struct acl *a, char ***names, size_t *n)
{
	*names = NULL;
	*n = 0;
	static const char *const top[] = {"Administrator", "NoAccess", "PVEAdmin",
					  "PVEAuditor", "PVETemplateUser"};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof top / sizeof top[0]; i++)
		rc = push_name(names, n, top[i]);
	for (size_t g = 0; rc == 0 && group_of(a->major, g); g++) {
		const struct privgroup *pg = group_of(a->major, g);
		char name[48];
		snprintf(name, sizeof name, "PVE%sAdmin", pg->cat);
		rc = push_name(names, n, name);
		snprintf(name, sizeof name, "PVE%sUser", pg->cat);
		if (rc == 0 && pg->user[0])
			rc = push_name(names, n, name);
	}
	for (size_t i = 0; rc == 0 && i < a->nroles; i++)
		rc = push_name(names, n, a->roles[i].name);
	return rc ? -1 : 0;
}

int acl_role_create(struct acl *a, const char *name, const char *privs, char **err)
{
	if (acl_add_role(a, name, privs ? privs : "", err) < 0)
		return -1;
	refresh_role(a, name);
	return 0;
}

int acl_role_update(struct acl *a, const char *name, const char *privs, bool append,
		    char **err)
{
	if (acl_role_special(a, name)) {
		*err = strprintf("auto-generated role '%s' cannot be modified", name);
		return -1;
	}
	struct role *r = custom_role(a, name);
	if (!r) {
		*err = strprintf("role '%s' does not exist", name);
		return -1;
	}
	acl_privset p = 0;
	if (privs && acl_parse_privs(a, privs, &p, err) < 0)
		return -1;
	r->privs = append ? r->privs | p : p;
	refresh_role(a, name);
	return 0;
}

int acl_role_delete(struct acl *a, const char *name, char **err)
{
	if (acl_role_special(a, name)) {
		*err = strprintf("auto-generated role '%s' cannot be deleted", name);
		return -1;
	}
	struct role *r = custom_role(a, name);
	if (!r) {
		*err = strprintf("role '%s' does not exist", name);
		return -1;
	}
	free(r->name);
	*r = a->roles[--a->nroles];
	refresh_role(a, name);
	return 0;
}

bool acl_subject_exists(const struct acl *a, const char *id)
{
	return find_subject(a, id) != NULL;
}

const char *acl_subject_at(const struct acl *a, size_t i, bool *token, bool *privsep)
{
	if (!a || i >= a->nsubj)
		return NULL;
	*token = a->subj[i].token;
	*privsep = a->subj[i].privsep;
	return a->subj[i].id;
}

void acl_remove_subject(struct acl *a, const char *id)
{
	struct subject *s = find_subject(a, id);
	if (!s)
		return;
	for (size_t j = 0; j < s->n; j++) {
		free(s->e[j].path);
		free(s->e[j].role);
	}
	free(s->e);
	free(s->id);
	*s = a->subj[--a->nsubj];
}

bool acl_entry_at(const struct acl *a, const char *id, size_t j, const char **path,
		  const char **role, bool *propagate)
{
	const struct subject *s = find_subject(a, id);
	if (!s || j >= s->n)
		return false;
	*path = s->e[j].path;
	*role = s->e[j].role;
	*propagate = s->e[j].propagate;
	return true;
}

int acl_modify(struct acl *a, const char *id, const char *path, const char *role,
	       bool propagate, bool del, char **err)
{
	struct subject *s = find_subject(a, id);
	char *np = normalize(path);
	if (!s || !np) {
		*err = !s ? strprintf("no user or token '%s'", id)
			  : strprintf("invalid ACL path '%s'", path);
		free(np);
		return -1;
	}
	for (size_t j = 0; j < s->n; j++) {
		struct entry *e = &s->e[j];
		if (!e->role || strcmp(e->role, role) != 0 || strcmp(e->path, np) != 0)
			continue;
		free(np);
		if (!del) {
			e->propagate = propagate;
			return 0;
		}
		free(e->path);
		free(e->role);
		memmove(e, e + 1, (s->n - j - 1) * sizeof *e);
		s->n--;
		return 0;
	}
	free(np);
	return del ? 0 : acl_grant(a, id, path, role, propagate, err);
}
