/* routes_access.c - the access-control API as pve-access-control's
 * API2/Role.pm, User.pm and ACL.pm answer it: GET/POST /access/roles,
 * GET/PUT/DELETE /access/roles/{roleid}, GET/POST /access/users, GET
 * /access/users/{userid}/token, GET/POST/DELETE
 * /access/users/{userid}/token/{tokenid} (the secret answered once, by
 * POST; the token authenticates at once), GET/PUT /access/acl. Each
 * changes the scenario's ACL model (acl.h) and checks what PVE checks,
 * with its messages ("create role failed: role 'X' already exists").
 * Groups and pools are not modelled: a group named is refused as absent.
 * POST /access/ticket (password login) is the front end's (server.c). */
#include "cluster.h"
#include "acl.h"
#include "util.h"

#include <ctype.h>
#include <gnutls/crypto.h>
#include <stdlib.h>
#include <string.h>

/* PVE::Tools::split_list: items separated by ',', ';' or white space;
 * each malloc'd into *out (a NULL-terminated array). -1 out of memory. */
static int split_items(const char *s, char ***out)
{
	size_t n = 0;
	char **v = calloc(1, sizeof *v);
	for (const char *p = s ? s : ""; v && *p;) {
		while (*p == ',' || *p == ';' || isspace((unsigned char)*p))
			p++;
		size_t l = strcspn(p, ",; \t\r\n");
		if (!l)
			break;
		char **nv = realloc(v, (n + 2) * sizeof *nv);
		if (!nv || !(nv[n] = strndup(p, l))) {
			v = nv ? nv : v;
			v[n] = NULL;
			for (size_t i = 0; i < n; i++)
				free(v[i]);
			free(v);
			return -1;
		}
		v = nv;
		v[++n] = NULL;
		p += l;
	}
	*out = v;
	return v ? 0 : -1;
}

static void items_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* The user of a token id ("a@pve!t" -> "a@pve"), malloc'd. */
static char *token_user(const char *id)
{
	return strndup(id, strcspn(id, "!"));
}

/* 'userid-group' ['User.Modify'] without groups: User.Modify on
 * /access/groups. */
static bool may_modify_users(const struct sim_req *req)
{
	return priv_has(req, "/access/groups", "User.Modify");
}

/* ['or', ['userid-param', 'self'], ['userid-group', ['User.Modify']]]:
 * the user itself (a token is not its user), or User.Modify. */
static bool token_access(const struct sim_req *req, const char *userid, struct sim_resp *r)
{
	if (strcmp(req->userid, userid) == 0 || may_modify_users(req))
		return true;
	resp_error(r, 403, "Permission check failed");
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "A,B,C" of a privilege set, sorted as Role.pm joins them. */
static char *privs_text(acl_privset p)
{
	const char *names[64] = {0};
	size_t n = 0;
	for (int i = 0; acl_priv_name(i) && n < 64; i++)
		if (p >> i & 1)
			names[n++] = acl_priv_name(i);
	qsort(names, n, sizeof names[0], cmp_str);
	struct sbuf b = {0};
	for (size_t i = 0; i < n; i++)
		if ((i && sbuf_addc(&b, ',') < 0) || sbuf_add(&b, names[i]) < 0) {
			sbuf_free(&b);
			return NULL;
		}
	char *s = b.len ? sbuf_steal(&b) : strdup("");
	sbuf_free(&b);
	return s;
}

/* pve-roleid: [A-Za-z0-9.\-_]+ */
static bool roleid_ok(const char *id)
{
	if (!*id)
		return false;
	for (const char *p = id; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr(".-_", *p))
			return false;
	return true;
}

/* An acl.h refusal as PVE words it: "WHAT failed: MSG" (500), err freed. */
static void acl_refusal(struct sim_resp *r, const char *what, char *err)
{
	if (what)
		resp_error(r, 500, "%s failed: %s", what, err ? err : "out of memory");
	else
		resp_error(r, 500, "%s", err ? err : "out of memory");
	free(err);
}

/* ---- roles ------------------------------------------------------------------ */

static void roles_index(struct cluster *c, struct sim_resp *r)
{
	char **names;
	size_t n;
	json_object *out = json_object_new_array();
	if (acl_role_names(c->acl, &names, &n) < 0 || !out) {
		json_object_put(out);
		out = NULL;
	}
	for (size_t i = 0; out && i < n; i++) {
		acl_privset p = 0;
		acl_role_privs(c->acl, names[i], &p);
		char *t = privs_text(p);
		json_object *o = json_object_new_object();
		if (!t || !o) {
			free(t);
			json_object_put(o);
			json_object_put(out);
			out = NULL;
			break;
		}
		jadd_str(o, "roleid", names[i]);
		jadd_str(o, "privs", t);
		json_object_object_add(o, "special",
				       json_object_new_int(acl_role_special(c->acl, names[i])));
		json_object_array_add(out, o);
		free(t);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (out)
		resp_data(r, out);
	else
		resp_error(r, 500, "out of memory");
}

static void role_read(struct cluster *c, const char *id, struct sim_resp *r)
{
	acl_privset p;
	if (!acl_role_privs(c->acl, id, &p)) {
		resp_error(r, 500, "role '%s' does not exist", id);
		return;
	}
	json_object *o = json_object_new_object();
	for (int i = 0; o && acl_priv_name(i); i++)
		if (p >> i & 1)
			json_object_object_add(o, acl_priv_name(i), json_object_new_int(1));
	resp_data(r, o);
}

static void roles_route(struct cluster *c, const struct sim_req *req, const char *id,
			struct sim_resp *r)
{
	const char *m = req->method;
	if (!id && strcmp(m, "GET") == 0) {
		roles_index(c, r);
		return;
	}
	if (id && strcmp(m, "GET") == 0) {
		role_read(c, id, r);
		return;
	}
	if (!priv_check(req, r, "/access", "Sys.Modify"))
		return;
	const char *privs = param_str(req, "privs");
	char *err = NULL;
	if (!id) {
		id = param_str(req, "roleid");
		if (!id || !roleid_ok(id)) {
			resp_param_error(r, "roleid", "invalid format - value does not look like a "
						      "valid role id");
		} else if (strncasecmp(id, "PVE", 3) == 0) {
			resp_param_error(r, "roleid", "cannot use role ID starting with the "
						      "(case-insensitive) 'PVE' namespace");
		} else if (acl_role_create(c->acl, id, privs, &err) < 0) {
			acl_refusal(r, "create role", err);
		} else {
			resp_data(r, NULL);
		}
		return;
	}
	bool special = acl_role_special(c->acl, id);
	if (strcmp(m, "PUT") == 0) {
		if (param_str(req, "append") && !privs)
			resp_param_error(r, "append", "parameter 'append' requires 'privs'");
		else if (acl_role_update(c->acl, id, privs, param_bool(req, "append", false),
					 &err) < 0)
			acl_refusal(r, special ? NULL : "update role", err);
		else
			resp_data(r, NULL);
	} else if (strcmp(m, "DELETE") == 0) {
		if (acl_role_delete(c->acl, id, &err) < 0)
			acl_refusal(r, special ? NULL : "delete role", err);
		else
			resp_data(r, NULL);
	} else {
		resp_error(r, 501, "Method '%s %s' not implemented", m, req->path);
	}
}

/* ---- users and tokens ---------------------------------------------------------- */

/* A user that exists: a subject of the ACL model that is no token. */
static bool user_exists(const struct cluster *c, const char *userid)
{
	for (size_t i = 0;; i++) {
		bool tok, ps;
		const char *id = acl_subject_at(c->acl, i, &tok, &ps);
		if (!id)
			return false;
		if (!tok && strcmp(id, userid) == 0)
			return true;
	}
}

/* pve-userid: NAME@REALM, NAME without white space, ':', '/' or '!'. */
static bool userid_ok(const char *id)
{
	const char *at = strrchr(id, '@');
	if (!at || at == id || strlen(id) > 64 || !isalpha((unsigned char)at[1]))
		return false;
	for (const char *p = id; p < at; p++)
		if (isspace((unsigned char)*p) || strchr(":/!", *p))
			return false;
	for (const char *p = at + 1; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr(".-_", *p))
			return false;
	return true;
}

static void users_index(struct cluster *c, const struct sim_req *req, struct sim_resp *r)
{
	bool all = may_modify_users(req) || priv_has(req, "/access/groups", "Sys.Audit");
	char *me = token_user(req->userid);
	json_object *out = json_object_new_array();
	for (size_t i = 0; me && out; i++) {
		bool tok, ps;
		const char *id = acl_subject_at(c->acl, i, &tok, &ps);
		if (!id)
			break;
		if (tok || !(all || strcmp(id, me) == 0))
			continue;
		json_object *o = json_object_new_object();
		jadd_str(o, "userid", id);
		jadd_int(o, "enable", 1);
		jadd_int(o, "expire", 0);
		json_object_array_add(out, o);
	}
	if (me && out)
		resp_data(r, out);
	else {
		json_object_put(out);
		resp_error(r, 500, "out of memory");
	}
	free(me);
}

static void user_create(struct cluster *c, const struct sim_req *req, struct sim_resp *r)
{
	const char *id = param_str(req, "userid");
	if (!id || !userid_ok(id)) {
		resp_param_error(r, "userid", "invalid format - value does not look like a valid "
					      "user name");
		return;
	}
	char *realm = strprintf("/access/realm/%s", strrchr(id, '@') + 1);
	bool ok = realm && priv_check(req, r, realm, "Realm.AllocateUser") &&
		  priv_check(req, r, "/access/groups", "User.Modify");
	free(realm);
	if (!ok)
		return;
	if (param_str(req, "groups")) {
		resp_error(r, 500, "create user failed: no such group '%s'", param_str(req, "groups"));
		return;
	}
	char *err = NULL;
	if (acl_subject_exists(c->acl, id))
		resp_error(r, 500, "create user failed: user '%s' already exists", id);
	else if (acl_add_subject(c->acl, id, false, &err) < 0)
		acl_refusal(r, "create user", err);
	else
		resp_data(r, NULL);
}

/* A token's secret as PVE::TokenConfig::generate_token makes it: a UUID. */
static char *token_value(void)
{
	unsigned char b[16];
	if (gnutls_rnd(GNUTLS_RND_KEY, b, sizeof b) < 0)
		return NULL;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	return strprintf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
			 b[12], b[13], b[14], b[15]);
}

static json_object *token_info(bool privsep)
{
	json_object *o = json_object_new_object();
	jadd_int(o, "privsep", privsep);
	jadd_int(o, "expire", 0);
	return o;
}

/* The token's privsep flag; false when it does not exist. */
static bool token_find(const struct cluster *c, const char *full, bool *privsep)
{
	for (size_t i = 0;; i++) {
		bool tok;
		const char *id = acl_subject_at(c->acl, i, &tok, privsep);
		if (!id)
			return false;
		if (tok && strcmp(id, full) == 0)
			return true;
	}
}

static void token_create(struct cluster *c, const struct sim_req *req, const char *full,
			 struct sim_resp *r)
{
	bool privsep = param_bool(req, "privsep", true), old;
	if (token_find(c, full, &old)) {
		resp_param_error(r, "tokenid", "Token already exists.");
		return;
	}
	char *value = token_value(), *err = NULL;
	struct sim_cred *cr = calloc(1, sizeof *cr);
	if (!value || !cr || !(cr->id = strdup(full)) || ptrvec_push(&c->tokens, cr) < 0) {
		if (cr)
			free(cr->id);
		free(cr);
		free(value);
		resp_error(r, 500, "out of memory");
		return;
	}
	cr->secret = value;
	if (acl_add_subject(c->acl, full, privsep, &err) < 0) {
		ptrvec_remove(&c->tokens, c->tokens.n - 1);
		free(cr->id);
		free(cr->secret);
		free(cr);
		acl_refusal(r, NULL, err);
		return;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "info", token_info(privsep));
	jadd_str(o, "value", value);
	jadd_str(o, "full-tokenid", full);
	resp_data(r, o);
}

static void token_delete(struct cluster *c, const char *full, struct sim_resp *r)
{
	for (size_t i = 0; i < c->tokens.n; i++) {
		struct sim_cred *cr = c->tokens.v[i];
		if (strcmp(cr->id, full) != 0)
			continue;
		ptrvec_remove(&c->tokens, i);
		free(cr->id);
		free(cr->secret);
		free(cr);
		break;
	}
	acl_remove_subject(c->acl, full);
	resp_data(r, NULL);
}

static void token_index(struct cluster *c, const char *userid, struct sim_resp *r)
{
	size_t ul = strlen(userid);
	json_object *out = json_object_new_array();
	for (size_t i = 0; out; i++) {
		bool tok, ps;
		const char *id = acl_subject_at(c->acl, i, &tok, &ps);
		if (!id)
			break;
		if (!tok || strncmp(id, userid, ul) != 0 || id[ul] != '!')
			continue;
		json_object *o = token_info(ps);
		jadd_str(o, "tokenid", id + ul + 1);
		json_object_array_add(out, o);
	}
	resp_data(r, out);
}

static void users_route(struct cluster *c, const struct sim_req *req, struct path_parts *pp,
			struct sim_resp *r)
{
	const char *m = req->method;
	if (pp->n == 2) {
		if (strcmp(m, "GET") == 0)
			users_index(c, req, r);
		else if (strcmp(m, "POST") == 0)
			user_create(c, req, r);
		else
			resp_error(r, 501, "Method '%s %s' not implemented", m, req->path);
		return;
	}
	const char *userid = pp->seg[2];
	if (!token_access(req, userid, r))
		return;
	if (!user_exists(c, userid)) {
		resp_error(r, 500, "no such user ('%s')", userid);
		return;
	}
	if (pp->n == 4) {
		token_index(c, userid, r);
		return;
	}
	char *full = strprintf("%s!%s", userid, pp->seg[4]);
	bool privsep, exists = full && token_find(c, full, &privsep);
	if (!full)
		resp_error(r, 500, "out of memory");
	else if (strcmp(m, "POST") == 0)
		token_create(c, req, full, r);
	else if (!exists)
		resp_error(r, 500, "no such token '%s' for user '%s'", pp->seg[4], userid);
	else if (strcmp(m, "GET") == 0)
		resp_data(r, token_info(privsep));
	else if (strcmp(m, "DELETE") == 0)
		token_delete(c, full, r);
	else
		resp_error(r, 501, "Method '%s %s' not implemented", m, req->path);
	free(full);
}

/* ---- ACL ------------------------------------------------------------------------ */

static void acl_index(struct cluster *c, const struct sim_req *req, struct sim_resp *r)
{
	bool audit = priv_has(req, "/access", "Sys.Audit");
	json_object *out = json_object_new_array();
	for (size_t i = 0; out; i++) {
		bool tok, ps;
		const char *id = acl_subject_at(c->acl, i, &tok, &ps);
		if (!id)
			break;
		const char *path, *role;
		bool prop;
		for (size_t j = 0; acl_entry_at(c->acl, id, j, &path, &role, &prop); j++) {
			/* a scenario's plain privilege set names no role: PVE has none */
			if (!role || !(audit || priv_has(req, path, "Permissions.Modify")))
				continue;
			json_object *o = json_object_new_object();
			jadd_str(o, "path", path);
			jadd_str(o, "roleid", role);
			jadd_str(o, "type", tok ? "token" : "user");
			jadd_str(o, "ugid", id);
			jadd_int(o, "propagate", prop);
			json_object_array_add(out, o);
		}
	}
	resp_data(r, out);
}

/* PUT /access/acl: every name checked before anything changes, as PVE
 * writes user.cfg only after the whole loop. */
static void acl_update(struct cluster *c, const struct sim_req *req, struct sim_resp *r)
{
	const char *path = param_str(req, "path");
	const char *users = param_str(req, "users"), *tokens = param_str(req, "tokens");
	if (!users && !tokens && !param_str(req, "groups")) {
		resp_param_error(r, "users", "either 'users', 'groups' or 'tokens' is required.");
		json_object_object_add(r->errors, "groups", json_object_new_string(
			"either 'users', 'groups' or 'tokens' is required."));
		json_object_object_add(r->errors, "tokens", json_object_new_string(
			"either 'users', 'groups' or 'tokens' is required."));
		return;
	}
	if (!path || path[0] != '/') {
		resp_param_error(r, "path", "invalid ACL path '%s'", path ? path : "");
		return;
	}
	if (!priv_check(req, r, path, "Permissions.Modify"))
		return;
	if (param_str(req, "groups")) {
		resp_error(r, 500, "ACL update failed: group '%s' does not exist",
			   param_str(req, "groups"));
		return;
	}
	bool del = param_bool(req, "delete", false), prop = param_bool(req, "propagate", true);
	char **roles = NULL, **uv = NULL, **tv = NULL;
	if (split_items(param_str(req, "roles"), &roles) < 0 || split_items(users, &uv) < 0 ||
	    split_items(tokens, &tv) < 0) {
		resp_error(r, 500, "out of memory");
		goto out;
	}
	acl_privset p;
	for (size_t i = 0; roles[i]; i++)
		if (!acl_role_privs(c->acl, roles[i], &p)) {
			resp_error(r, 500, "ACL update failed: role '%s' does not exist", roles[i]);
			goto out;
		}
	for (size_t i = 0; uv[i]; i++)
		if (!user_exists(c, uv[i])) {
			resp_error(r, 500, "ACL update failed: user '%s' does not exist", uv[i]);
			goto out;
		}
	for (size_t i = 0; tv[i]; i++) {
		bool ps;
		char *u = token_user(tv[i]);
		if (u && !strchr(tv[i], '!'))
			resp_error(r, 500, "ACL update failed: invalid API token ID '%s'", tv[i]);
		else if (u && !user_exists(c, u))
			resp_error(r, 500, "ACL update failed: no such user ('%s')", u);
		else if (u && !token_find(c, tv[i], &ps))
			resp_error(r, 500, "ACL update failed: no such token '%s' for user '%s'",
				   strchr(tv[i], '!') + 1, u);
		free(u);
		if (r->status)
			goto out;
	}
	for (size_t i = 0; roles[i]; i++) {
		char **who[] = {uv, tv};
		for (size_t k = 0; k < 2; k++)
			for (size_t j = 0; who[k][j]; j++) {
				char *err = NULL;
				if (acl_modify(c->acl, who[k][j], path, roles[i], prop, del, &err) < 0) {
					acl_refusal(r, "ACL update", err);
					goto out;
				}
			}
	}
	resp_data(r, NULL);
out:
	items_free(roles);
	items_free(uv);
	items_free(tv);
}

bool routes_access(struct cluster *c, const struct sim_req *req, struct path_parts *pp,
		   struct sim_resp *r)
{
	char **s = pp->seg;
	size_t n = pp->n;
	if (n < 2 || strcmp(s[0], "access") != 0)
		return false;
	if (strcmp(s[1], "roles") == 0 && n <= 3) {
		roles_route(c, req, n == 3 ? s[2] : NULL, r);
		return true;
	}
	if (strcmp(s[1], "users") == 0 &&
	    (n == 2 || (n == 4 && strcmp(s[3], "token") == 0 && strcmp(req->method, "GET") == 0) ||
	     (n == 5 && strcmp(s[3], "token") == 0))) {
		users_route(c, req, pp, r);
		return true;
	}
	if (n == 2 && strcmp(s[1], "acl") == 0) {
		if (strcmp(req->method, "GET") == 0)
			acl_index(c, req, r);
		else if (strcmp(req->method, "PUT") == 0)
			acl_update(c, req, r);
		else
			return false;
		return true;
	}
	return false;
}
