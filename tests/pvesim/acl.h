/* acl.h - PVE's permission model in the simulator (PVE::AccessControl and
 * PVE::RPCEnvironment of pve-access-control 8.2 for PVE 8.x and earlier,
 * 9.1 for PVE 9.x): the privileges of each version, the built-in roles with
 * their exact privilege lists, the scenario's custom
 * roles, ACL entries (path, role, propagate) of users and API tokens,
 * the path lookup (the most specific path with an entry that applies
 * wins; an entry on a parent applies only with propagate; NoAccess takes
 * everything), privilege-separated tokens (the token's rights intersected
 * with its user's), and root@pam, who has every privilege. Pools and
 * groups are not modelled. */
#ifndef PVESIM_ACL_H
#define PVESIM_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A set of privileges, one bit each (acl_priv_index). */
typedef uint64_t acl_privset;

struct acl;

/* A model of PVE major version pve_major (9: 47 privileges; 8 and
 * earlier: 8.x's 42). */
struct acl *acl_new(int pve_major);
void acl_free(struct acl *a);

/* The privilege's bit index (the same on every version), or -1 when no
 * version has such a privilege. */
int acl_priv_index(const char *name);
/* Does PVE pve_major know the privilege (PVE::AccessControl::verify_privname)? */
bool acl_priv_valid(int pve_major, const char *name);
/* Every privilege of PVE pve_major. */
acl_privset acl_version_privs(int pve_major);
/* Name of bit i, NULL past the last (the names of every version). */
const char *acl_priv_name(int i);

/* A role's privileges (built-in or custom). False when there is no such
 * role. */
bool acl_role_privs(const struct acl *a, const char *role, acl_privset *out);
/* Parse a privilege list ("VM.Audit,VM.Allocate", ";" or space separated;
 * "all" is every privilege of a's version). 0, or -1 with *err naming the
 * first privilege a's version does not know (malloc'd; NULL when memory
 * ran out). */
int acl_parse_privs(const struct acl *a, const char *list, acl_privset *out, char **err);
/* Add a custom role as `pveum role add` does. -1 with *err when the name
 * is a built-in role's, is taken, or a privilege is unknown to a's
 * version. */
int acl_add_role(struct acl *a, const char *name, const char *privs, char **err);
/* The same as PVE reads a role from user.cfg (parse_user_config): a
 * privilege the version does not know (VM.Monitor on 9.x, after an
 * upgrade from 8) is dropped with "user config - ignore invalid privilege
 * 'NAME'" written to warn; the role is kept, even with none left. */
int acl_load_role(struct acl *a, const char *name, const char *privs, FILE *warn,
		  char **err);

/* Add a user ("name@realm") or a token ("name@realm!token"; privsep as
 * `pveum user token add --privsep`). -1 with *err when taken or malformed. */
int acl_add_subject(struct acl *a, const char *id, bool privsep, char **err);
/* pveum acl modify PATH --roles ROLE [--propagate 0|1] for a subject
 * added before. -1 with *err (unknown role, bad path, unknown subject). */
int acl_grant(struct acl *a, const char *id, const char *path, const char *role,
	      bool propagate, char **err);
/* The same with a plain privilege set for a role (a scenario's "privs"
 * shorthand). */
int acl_grant_privs(struct acl *a, const char *id, const char *path, acl_privset privs,
		    bool propagate, char **err);

/* The privileges userid (user or token id) has on path, as
 * RPCEnvironment::permissions computes them. Unknown subjects have none;
 * root@pam has all; a token whose user the scenario does not list is
 * judged by its own entries alone. */
acl_privset acl_privs_at(const struct acl *a, const char *userid, const char *path);
bool acl_check(const struct acl *a, const char *userid, const char *path, const char *priv);

/* ---- changes through the access API (routes_access.c) -------------------
 * An ACL entry granted by role name follows that role: changed, deleted
 * (its entries stay and grant nothing, as in PVE) or made anew. */

/* A built-in role (PVE::AccessControl::role_is_special). */
bool acl_role_special(const struct acl *a, const char *role);
/* Every role's name, the built-in ones first (each and the array
 * malloc'd). 0 or -1 (out of memory, *names freed by the caller). */
int acl_role_names(const struct acl *a, char ***names, size_t *n);
/* POST /access/roles: -1 with *err "role 'X' already exists" or
 * "invalid privilege 'X'". */
int acl_role_create(struct acl *a, const char *name, const char *privs, char **err);
/* PUT /access/roles/{roleid}: privs replace the role's (or are added with
 * append); NULL: none. -1 with *err as PVE's Role.pm says it. */
int acl_role_update(struct acl *a, const char *name, const char *privs, bool append,
		    char **err);
int acl_role_delete(struct acl *a, const char *name, char **err);

bool acl_subject_exists(const struct acl *a, const char *id);
/* Subject i (user or token, in the order added): its id, NULL past the
 * last. */
const char *acl_subject_at(const struct acl *a, size_t i, bool *token, bool *privsep);
/* Remove a subject and its ACL entries (a token deleted). */
void acl_remove_subject(struct acl *a, const char *id);
/* Entry j of subject id: false past the last. role is NULL for a
 * scenario's plain privilege set. */
bool acl_entry_at(const struct acl *a, const char *id, size_t j, const char **path,
		  const char **role, bool *propagate);
/* PUT /access/acl for one subject and role: add (or set the propagate
 * flag of) the entry, or with del remove it (no entry: nothing to do).
 * -1 with *err. */
int acl_modify(struct acl *a, const char *id, const char *path, const char *role,
	       bool propagate, bool del, char **err);

#endif
