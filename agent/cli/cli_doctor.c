/* cli_doctor.c - `pvagent doctor`: checks a configured installation and
 * says what to fix, one line per check (or --json): the API reachable and
 * its certificate pinned, each node's PVE version (mixed versions noted,
 * with both guest-agent privileges and the node to add each through),
 * every privilege each command needs on the paths it uses (asked of PVE:
 * GET /access/permissions, the table in pveprivs.h, each table path made
 * concrete: every storage pvagent uses, the node, the bridge) with the
 * grant line for that version, the storages the commands use (image
 * build's defaults, the templates' [source] storage, ostemplate and iso):
 * there, enabled, with the content each use needs, bridges, the template
 * VMs the templates clone, the datacenter's user-tag-access against the
 * tags pvagent writes, the SSH identity and its mode, clock skew, the HA
 * stack's armed state, the addresses of the pools' ranges that guests
 * hold by hand (pool_strays), and the daemon's socket. Exit 0 when all is
 * well, 1 when something needs fixing. A check PVE cannot answer (a route
 * it lacks: 501, or no right to ask: then the privilege it needs is
 * named) says "unknown" and fails nothing. */
#include "cli.h"
#include "guest.h"
#include "json.h"
#include "output.h"
#include "pool_claim.h"
#include "pveprivs.h"
#include "storage_pick.h"
#include "tmpl.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SKEW_MAX 30.0 /* seconds between this host's clock and a node's */

enum verdict { V_OK, V_NOTE, V_UNKNOWN, V_FIX };

/* A storage the commands and templates use: the content types they need
 * ("images,import") and, for each use, its content and who ("image build
 * --storage", "template debian-13"). */
struct use {
	char *storage;
	struct sbuf content;
	char **use_content, **use_who; /* pairs */
	size_t n;
};

struct doctor {
	struct cli *cli;
	bool migrate;
	int major;
	json_object *checks;
	bool fix;
	char *node; /* the node storages and bridges are read on (malloc'd) */
	char *bridge; /* the first bridge, if any: the path privileges are
			 asked on */
	json_object *storages;  /* the node's storages as PVE lists them */
	struct use *uses;       /* the storages pvagent uses there */
	size_t n_uses;
	struct tmpl_info *tmpls; /* the configured templates */
	size_t n_tmpls;
	char *tmpl_err;         /* why they cannot be listed */
	bool told_acl;          /* "holds nothing" said (once is enough) */
	/* mid-upgrade: the nodes whose PVE major wants the other guest-agent
	 * privilege than the node doctor talks to ("pve3"), that privilege
	 * (pveprivs_agent_priv) and their major; empty when none */
	struct sbuf agent_nodes;
	const char *agent_priv;
	int agent_major;
};

static void check(struct doctor *d, enum verdict v, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void check(struct doctor *d, enum verdict v, const char *name, const char *fmt, ...)
{
	static const char *const words[] = {"ok", "note", "unknown", "FIX"};
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	const char *text = rc == 0 ? sbuf_str(&b) : "out of memory";
	d->fix = d->fix || v == V_FIX;
	if (d->cli->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "check", json_object_new_string(name));
		json_object_object_add(o, "state", json_object_new_string(
			v == V_FIX ? "fix" : words[v]));
		json_object_object_add(o, "detail", json_object_new_string(text));
		json_object_array_add(d->checks, o);
	} else {
		printf("%-8s %-22s %s\n", words[v], name, text);
	}
	sbuf_free(&b);
}

/* A failed request: unknown when PVE lacks the route or refuses to say;
 * refused, what doctor could not do ("read pve1's clock") and the
 * privilege that needs ("Sys.Audit on /nodes/pve1"), when known. */
static void request_failed(struct doctor *d, const char *name, const char *what,
			   const char *needs, struct pve_error *e)
{
	bool unknown = e->kind == PVE_ERR_NOT_IMPLEMENTED || e->kind == PVE_ERR_PERM;
	/* PVE's words alone for what it will not say: no grant advice here */
	char *m = unknown ? NULL : pve_error_format(e);
	if (e->kind == PVE_ERR_PERM && what && needs)
		check(d, V_UNKNOWN, name, "cannot %s: needs %s (%s has not)", what, needs,
		      pve_identity(d->cli->pve));
	else if (unknown)
		check(d, V_UNKNOWN, name, "%s%s%s", e->what ? e->what : "", e->what ? ": " : "",
		      e->message ? e->message : "refused");
	else
		check(d, V_FIX, name, "%s", m ? m : "failed");
	free(m);
	pve_error_clear(e);
}

static void check_api(struct doctor *d)
{
	const struct conf *c = &d->cli->conf;
	struct pve_error e = {0};
	if (pve_login(d->cli->pve, &e) < 0) {
		request_failed(d, "api", NULL, NULL, &e);
		return;
	}
	check(d, c->pve.insecure ? V_FIX : V_OK, "api", "%s as %s, %s", c->pve.url,
	      pve_identity(d->cli->pve),
	      c->pve.insecure ? "certificate NOT checked (insecure = yes): set fingerprint"
	      : c->pve.fingerprint ? "certificate pinned" : "certificate checked against a CA");
}

static void check_versions(struct doctor *d, json_object *nodes)
{
	struct pve_error e = {0};
	if (guest_pve_major(d->cli->pve, &d->major, &e) < 0) {
		request_failed(d, "version", NULL, NULL, &e);
		return;
	}
	const struct pve_version *first = NULL;
	bool mixed = false;
	for (size_t i = 0; i < json_object_array_length(nodes); i++) {
		const char *n = json_str(json_object_array_get_idx(nodes, i), "node");
		const struct pve_version *v = NULL;
		if (!n)
			continue;
		if (pve_node_version(d->cli->pve, n, &v, &e) < 0) {
			if (e.kind == PVE_ERR_NOT_IMPLEMENTED) {
				pve_error_clear(&e);
				check(d, V_UNKNOWN, "node version", "%s: PVE %d (cluster; the node "
				      "does not say)", n, d->major);
				continue;
			}
			request_failed(d, "node version", NULL, NULL, &e);
			continue;
		}
		if (!first)
			first = v;
		else if (first->major != v->major || first->minor != v->minor)
			mixed = true;
		if (d->major && strcmp(pveprivs_agent_priv(v->major), pveprivs_agent_priv(d->major))) {
			d->agent_priv = pveprivs_agent_priv(v->major);
			d->agent_major = v->major;
			sbuf_addf(&d->agent_nodes, "%s%s", d->agent_nodes.len ? ", " : "", n);
		}
		check(d, V_OK, "node version", "%s: %s", n, v->version ? v->version : "?");
	}
	if (mixed)
		check(d, V_NOTE, "node version", "mixed versions: a running VM migrates live only to a "
		      "node whose QEMU runs its machine type; drain prefers the upgraded ones");
}

/* Is word one of list's comma-separated items? */
static bool in_csv(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, ",");
		if (len == n && strncmp(p, word, n) == 0)
			return true;
		p += len + (p[len] == ',');
	}
	return false;
}

/* A table path's last part written as a placeholder ("/storage/IMPORT",
 * "/nodes/NODE"): capitals and '_' only. */
static bool placeholder(const char *path, const char *parent)
{
	size_t n = strlen(parent);
	if (strncmp(path, parent, n) != 0 || path[n] != '/' || !path[n + 1])
		return false;
	for (const char *p = path + n + 1; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || *p == '_'))
			return false;
	return true;
}

/* The concrete paths a table path stands for, where doctor knows what
 * pvagent will use: "/storage" every storage it uses (a placeholder under
 * it that starts with IMPORT: image build's import storage), "/nodes" or
 * "/nodes/NODE" the node, the local zone its bridge; anything else as it
 * is. strv (each malloc'd); -1 when out of memory. */
static int need_paths(const struct doctor *d, const char *path, char ***v, size_t *n)
{
	if (strcmp(path, "/storage") == 0 || placeholder(path, "/storage")) {
		bool import = strncmp(path, "/storage/IMPORT", 15) == 0;
		for (size_t i = 0; i < d->n_uses; i++) {
			const struct use *u = &d->uses[i];
			bool imports = false;
			for (size_t k = 0; k < u->n; k++)
				imports = imports || strstr(u->use_who[k], "--import-storage");
			if (import && !imports)
				continue;
			if (strv_add(v, n, strprintf("/storage/%s", u->storage)) < 0)
				return -1;
		}
		if (*n)
			return 0;
	} else if ((strcmp(path, "/nodes") == 0 || placeholder(path, "/nodes")) && d->node) {
		return strv_add(v, n, strprintf("/nodes/%s", d->node));
	} else if (strcmp(path, "/sdn/zones/localnetwork") == 0 && d->bridge) {
		return strv_add(v, n, strprintf("%s/%s", path, d->bridge));
	}
	return strv_add(v, n, strdup(path));
}

/* The token holds nothing on path: the ACL lines, not the role, are what
 * is missing: on / when it holds nothing wherever doctor looked
 * (anywhere), else on that path. */
static void no_acl(struct doctor *d, const char *path, bool anywhere)
{
	const char *id = pve_identity(d->cli->pve), *on = anywhere ? "/" : path;
	size_t ul = strcspn(id, "!");
	check(d, V_FIX, "privileges", "%s holds nothing on %s%s: pveum acl modify %s --users %.*s "
	      "--roles " PVEPRIVS_ROLE "; pveum acl modify %s --tokens '%s' --roles " PVEPRIVS_ROLE,
	      id, path, anywhere ? " (nor, likely, elsewhere)" : "", on, (int)ul, id, on, id);
}

/* What the token holds on path, asked of PVE once per path: the object
 * of its privileges (borrowed from *cache), or NULL when the request
 * failed (said). */
struct perm_cache {
	char **paths;
	json_object **perms;
	size_t n;
};

static json_object *perms_on(struct doctor *d, struct perm_cache *pc, const char *path,
			     bool *failed)
{
	*failed = false;
	for (size_t i = 0; i < pc->n; i++)
		if (strcmp(pc->paths[i], path) == 0) {
			*failed = !pc->perms[i];
			return pc->perms[i];
		}
	char **np = realloc(pc->paths, (pc->n + 1) * sizeof *np);
	if (np)
		pc->paths = np;
	json_object **nv = np ? realloc(pc->perms, (pc->n + 1) * sizeof *nv) : NULL;
	if (nv)
		pc->perms = nv;
	char *copy = nv ? strdup(path) : NULL;
	struct pve_error e = {0};
	if (!copy) {
		pve_error_set(&e, PVE_ERR_INTERNAL, "out of memory");
		request_failed(d, "privileges", NULL, NULL, &e);
		*failed = true;
		return NULL;
	}
	struct pve_params p = {0};
	pve_params_add(&p, "path", path);
	json_object *perm = NULL, *at = NULL;
	int rc = pve_get(d->cli->pve, "/access/permissions", &p, &perm, &e);
	pve_params_free(&p);
	if (rc < 0) {
		request_failed(d, "privileges", NULL, NULL, &e);
	} else {
		json_object_object_get_ex(perm, path, &at);
		at = at ? json_object_get(at) : json_object_new_object();
	}
	json_object_put(perm);
	pc->paths[pc->n] = copy;
	pc->perms[pc->n++] = at;
	*failed = !at;
	return at;
}

/* Mid-upgrade (pve9-truth-second-pass.md, 10): each node checks the
 * guest-agent privilege of its own major (VM.Monitor on 8,
 * VM.GuestAgent.Audit on 9) and its user.cfg parser drops the name it does
 * not know, so the node doctor talks to can neither show nor grant the
 * other one: unknown, naming both privileges and the node to add each
 * through (the first node of the other major). */
static void check_agent_other_major(struct doctor *d)
{
	if (!d->agent_priv)
		return;
	const char *nodes = sbuf_str(&d->agent_nodes);
	size_t first = strcspn(nodes, ",");
	check(d, V_UNKNOWN, "privilege",
	      "%s on /vms (guests' agent addresses on PVE %d nodes: %s) cannot be checked through "
	      "a PVE %d node, which neither shows nor keeps it: add it to role " PVEPRIVS_ROLE
	      " through %.*s (its web interface: Datacenter, Permissions, Roles); %s, for the "
	      "PVE %d nodes, through the node pvagent talks to (checked above)",
	      d->agent_priv, d->agent_major, nodes, d->major, (int)first, nodes,
	      pveprivs_agent_priv(d->major), d->major);
}

static void check_privileges(struct doctor *d)
{
	struct perm_cache pc = {0};
	bool all = true, held = false; /* held: something on some path asked */
	char **told = NULL;             /* the paths "holds nothing" was said of */
	size_t ntold = 0;
	/* pass 0 asks PVE about every path; pass 1 says what is missing */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; pveprivs_need(i); i++) {
			const struct pvepriv_need *n = pveprivs_need(i);
			const char *priv = pveprivs_need_priv(n, d->major);
			char **paths = NULL;
			size_t np = 0;
			if (need_paths(d, n->path, &paths, &np) < 0) {
				struct pve_error e = {0};
				pve_error_set(&e, PVE_ERR_INTERNAL, "out of memory");
				request_failed(d, "privileges", NULL, NULL, &e);
				all = false;
				strv_free(paths, np);
				pass = 2;
				break;
			}
			for (size_t k = 0; k < np; k++) {
				bool failed;
				json_object *at = perms_on(d, &pc, paths[k], &failed);
				bool none = failed || json_object_object_length(at) == 0;
				held = held || !none;
				if (pass == 0)
					continue;
				if (failed) {
					all = false;
					continue;
				}
				if (json_object_object_get_ex(at, priv, NULL))
					continue;
				bool note = n->migrate && !d->migrate;
				all = all && note;
				bool said = d->told_acl;
				for (size_t t = 0; t < ntold && !said; t++)
					said = strcmp(told[t], paths[k]) == 0;
				if (none && !note && !said) {
					no_acl(d, paths[k], !held);
					d->told_acl = !held;
					strv_add(&told, &ntold, strdup(paths[k]));
				}
				if (none)
					continue;
				char *line = pveprivs_grant_line(priv);
				check(d, note ? V_NOTE : V_FIX, "privilege",
				      "%s on %s missing (%s): %s", priv, paths[k], n->commands,
				      line ? line : "grant it");
				free(line);
			}
			strv_free(paths, np);
		}
	}
	for (size_t i = 0; i < pc.n; i++)
		json_object_put(pc.perms[i]);
	strv_free(pc.paths, pc.n);
	strv_free(told, ntold);
	free(pc.perms);
	if (all)
		check(d, V_OK, "privileges", "every privilege pvagent's commands need (PVE %d%s)",
		      d->major,
		      d->migrate ? ", with migrate" : "; migrate, drain and rolling: doctor --migrate");
	check_agent_other_major(d);
}

/* ---- storages ------------------------------------------------------------------ */

/* Record that who uses storage for content (merged per storage). */
static void use_storage(struct doctor *d, const char *storage, const char *content,
			const char *who)
{
	struct use *u = NULL;
	for (size_t i = 0; i < d->n_uses && !u; i++)
		if (strcmp(d->uses[i].storage, storage) == 0)
			u = &d->uses[i];
	if (!u) {
		struct use *nv = realloc(d->uses, (d->n_uses + 1) * sizeof *nv);
		char *id = nv ? strdup(storage) : NULL;
		if (nv)
			d->uses = nv;
		if (!id)
			return; /* out of memory: one check fewer */
		u = &d->uses[d->n_uses++];
		*u = (struct use){.storage = id};
	}
	if (!in_csv(sbuf_str(&u->content), content))
		sbuf_addf(&u->content, "%s%s", u->content.len ? "," : "", content);
	size_t n = u->n;
	if (strv_add(&u->use_who, &n, strdup(who)) == 0 &&
	    strv_add(&u->use_content, &u->n, strdup(content)) < 0)
		free(u->use_who[--n]); /* out of memory: one use fewer */
}

/* Who of u uses one of the contents (comma-separated; NULL: any), each
 * once, ", "-separated into b. */
static void users_of(const struct use *u, const char *contents, struct sbuf *b)
{
	for (size_t i = 0; i < u->n; i++) {
		bool seen = false;
		for (size_t k = 0; k < i && !seen; k++)
			seen = strcmp(u->use_who[k], u->use_who[i]) == 0 &&
			       (!contents || in_csv(contents, u->use_content[k]));
		if (!seen && (!contents || in_csv(contents, u->use_content[i])))
			sbuf_addf(b, "%s%s", b->len ? ", " : "", u->use_who[i]);
	}
}

/* The storage of a volume ID ("local:vztmpl/x.tar.zst" -> "local"), used
 * for content. */
static void use_volume(struct doctor *d, const char *volid, const char *content,
		       const char *who)
{
	size_t n = volid ? strcspn(volid, ":") : 0;
	if (!n || !volid[n] || strstr(volid, "${"))
		return;
	char *id = strndup(volid, n);
	if (id)
		use_storage(d, id, content, who);
	free(id);
}

/* The storages the commands use: image build's (its defaults,
 * conf_disk_storage and conf_import_storage: a build that names others is
 * checked by PVE then), and each template's [source] storage, or the
 * configured disk storage where it names none (a full clone's target:
 * images; a container's root: rootdir), ostemplate (vztmpl) and iso. */
static void collect_uses(struct doctor *d)
{
	const struct conf *cf = &d->cli->conf;
	use_storage(d, conf_disk_storage(cf), "images", "image build --storage");
	use_storage(d, conf_import_storage(cf), "import", "image build --import-storage");
	for (size_t i = 0; i < d->n_tmpls; i++) {
		const struct tmpl *t = d->tmpls[i].tmpl;
		if (!t || t->kind == TMPL_OPENVZ)
			continue;
		char *who = strprintf("template %s", d->tmpls[i].name);
		if (!who)
			return;
		const char *st = t->source.storage.value ? t->source.storage.value
							  : conf_disk_storage(cf);
		bool disk = t->kind == TMPL_LXC || t->source.iso.value || t->source.full;
		if (st && disk)
			use_storage(d, st, t->kind == TMPL_LXC ? "rootdir" : "images", who);
		use_volume(d, t->source.ostemplate.value, "vztmpl", who);
		use_volume(d, t->source.iso.value, "iso", who);
		free(who);
	}
}

/* Each storage a command uses: there, enabled and active, with the
 * content its uses need. */
static void check_uses(struct doctor *d)
{
	for (size_t i = 0; i < d->n_uses; i++) {
		const struct use *u = &d->uses[i];
		struct sbuf all = {0};
		users_of(u, NULL, &all);
		const char *want = sbuf_str(&u->content), *who = sbuf_str(&all);
		json_object *s = storage_find(d->storages, u->storage);
		if (!s) {
			struct sbuf alt = {0};
			storage_ids_with(d->storages, want, &alt);
			char *first = strndup(want, strcspn(want, ","));
			if (first && !alt.len)
				storage_ids_with(d->storages, first, &alt);
			check(d, V_FIX, "storage", "%s (%s; %s) is not on %s, or %s may not see it "
			      "(Datastore.Audit or Datastore.AllocateSpace on /storage/%s): %s%s",
			      u->storage, want, who, d->node, pve_identity(d->cli->pve), u->storage,
			      alt.len ? "name one it has instead: " : "the node has no storage with ",
			      alt.len ? sbuf_str(&alt) : (first ? first : want));
			free(first);
			sbuf_free(&alt);
			sbuf_free(&all);
			continue;
		}
		long long active = 1;
		json_int(s, "active", &active);
		if (!storage_enabled(s)) {
			/* (a BTRFS install disables local: local-btrfs takes its place) */
			struct sbuf alt = {0};
			storage_ids_with(d->storages, want, &alt);
			check(d, V_FIX, "storage", "%s (%s) is disabled on %s: pvesm set %s "
			      "--disable 0%s%s", u->storage, who, d->node, u->storage,
			      alt.len ? ", or name one with its content instead: " : "",
			      alt.len ? sbuf_str(&alt) : "");
			sbuf_free(&alt);
			sbuf_free(&all);
			continue;
		}
		if (!active) {
			check(d, V_FIX, "storage", "%s (%s) is not active on %s: see pvesm status",
			      u->storage, who, d->node);
			sbuf_free(&all);
			continue;
		}
		const char *has = json_str(s, "content");
		struct sbuf miss = {0};
		for (const char *p = want; *p;) {
			size_t len = strcspn(p, ",");
			char *c = strndup(p, len);
			if (c && !storage_has_content(s, c))
				sbuf_addf(&miss, "%s%s", miss.len ? "," : "", c);
			free(c);
			p += len + (p[len] == ',');
		}
		struct sbuf needy = {0};
		users_of(u, sbuf_str(&miss), &needy);
		if (miss.len)
			check(d, V_FIX, "storage", "%s has no '%s' content (%s): pvesm set %s "
			      "--content %s%s%s", u->storage, sbuf_str(&miss), sbuf_str(&needy),
			      u->storage, has ? has : "", has && *has ? "," : "", sbuf_str(&miss));
		else
			check(d, V_OK, "storage", "%s (%s): %s", u->storage, want, who);
		sbuf_free(&needy);
		sbuf_free(&miss);
		sbuf_free(&all);
	}
}

static void check_storages(struct doctor *d)
{
	struct pve_error e = {0};
	if (storage_node_list(d->cli->pve, d->node, &d->storages, &e) < 0) {
		request_failed(d, "storages", "read the storages", "Datastore.Audit on /storage",
			       &e);
		return;
	}
	struct sbuf b = {0};
	for (size_t i = 0; i < json_object_array_length(d->storages); i++) {
		json_object *s = json_object_array_get_idx(d->storages, i);
		const char *id = json_str(s, "storage"), *content = json_str(s, "content");
		sbuf_addf(&b, "%s%s (%s)", b.len ? ", " : "", id ? id : "?", content ? content : "");
	}
	check(d, b.len ? V_OK : V_FIX, "storages", "%s: %s", d->node,
	      b.len ? sbuf_str(&b) : "none visible (grant Datastore.AllocateSpace on /storage/S)");
	sbuf_free(&b);
	check_uses(d);
}

/* qsort: vmbr0 (the installer's bridge) first, then by name. */
static int bridge_order(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	bool x0 = strcmp(x, "vmbr0") == 0, y0 = strcmp(y, "vmbr0") == 0;
	return x0 != y0 ? (x0 ? -1 : 1) : strcmp(x, y);
}

static void check_bridges(struct doctor *d)
{
	struct pve_error e = {0};
	json_object *net = NULL;
	char *esc = pve_path_escape(d->node);
	struct pve_params p = {0};
	pve_params_add(&p, "type", "any_bridge");
	int rc = esc ? pve_getf(d->cli->pve, &net, &p, &e, "/nodes/%s/network", esc) : -1;
	pve_params_free(&p);
	free(esc);
	if (rc < 0) {
		request_failed(d, "bridges", NULL, NULL, &e);
		return;
	}
	/* the host's bridges, each once, vmbr0 first and then by name (PVE's
	 * list is unordered: hash_to_array); on 9.x any_bridge also lists the
	 * SDN VNets (type "vnet"), whose ACL path is another zone's */
	char **names = NULL;
	size_t n = 0;
	for (size_t i = 0; i < json_object_array_length(net); i++) {
		json_object *o = json_object_array_get_idx(net, i);
		const char *br = json_text(o, "iface"), *type = json_text(o, "type");
		if (!br || (type && strcmp(type, "bridge") != 0 && strcmp(type, "OVSBridge") != 0))
			continue;
		bool seen = false;
		for (size_t k = 0; k < n && !seen; k++)
			seen = strcmp(names[k], br) == 0;
		if (!seen)
			strv_add(&names, &n, strdup(br));
	}
	if (n)
		qsort(names, n, sizeof *names, bridge_order);
	struct sbuf b = {0};
	for (size_t i = 0; i < n; i++)
		sbuf_addf(&b, "%s%s", b.len ? ", " : "", names[i]);
	if (n && !d->bridge)
		d->bridge = strdup(names[0]);
	check(d, b.len ? V_OK : V_FIX, "bridges", "%s: %s", d->node, b.len ? sbuf_str(&b) : "none");
	sbuf_free(&b);
	strv_free(names, n);
	json_object_put(net);
}

static void check_templates(struct doctor *d)
{
	struct tmpl_info *list = d->tmpls;
	size_t n = d->n_tmpls;
	if (d->tmpl_err) {
		check(d, V_FIX, "templates", "%s", d->tmpl_err);
		return;
	}
	if (n == 0) {
		check(d, V_NOTE, "templates", "none in the configured directories ([paths] "
		      "templates)");
		return;
	}
	struct pve_error e = {0};
	struct pve_params p = {0};
	pve_params_add(&p, "type", "vm");
	json_object *res = NULL;
	int rc = pve_get(d->cli->pve, "/cluster/resources", &p, &res, &e);
	pve_params_free(&p);
	if (rc < 0) {
		request_failed(d, "template VMs", NULL, NULL, &e);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct tmpl *t = list[i].tmpl;
		const char *want = t ? t->source.clone.value : NULL;
		if (!t) {
			check(d, V_FIX, "template", "%s: %s", list[i].name,
			      list[i].error ? list[i].error : "does not load");
			continue;
		}
		if (!want || strstr(want, "${"))
			continue;
		bool found = false;
		for (size_t j = 0; j < json_object_array_length(res) && !found; j++) {
			json_object *g = json_object_array_get_idx(res, j);
			const char *name = json_text(g, "name"), *vmid = json_text(g, "vmid");
			found = (name && strcmp(name, want) == 0) || (vmid && strcmp(vmid, want) == 0);
		}
		if (!found && t->source.image)
			check(d, V_NOTE, "template VM", "%s clones %s: not built yet ('pvagent image "
			      "build %s' makes it)", list[i].name, want, t->source.image);
		else
			check(d, found ? V_OK : V_FIX, "template VM", "%s clones %s: %s", list[i].name,
			      want, found ? "there" : "not found (pvagent-template(5), EXAMPLE: the template VMs)");
	}
	json_object_put(res);
}

/* Is tag in PVE's tag list v (an array, as GET /cluster/options gives it,
 * or a ';'-separated string)? */
static bool tag_listed(json_object *v, const char *tag)
{
	if (json_object_is_type(v, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			const char *t = json_object_get_string(json_object_array_get_idx(v, i));
			if (t && strcmp(t, tag) == 0)
				return true;
		}
		return false;
	}
	const char *p = v ? json_object_get_string(v) : NULL;
	size_t n = strlen(tag);
	while (p && *p) {
		size_t len = strcspn(p, ";");
		if (len == n && strncmp(p, tag, n) == 0)
			return true;
		p += len + (p[len] == ';');
	}
	return false;
}

/* The tags pvagent writes (image build: pvagent-image; drain:
 * pvagent-home-NODE; pools: ip-ADDRESS) against the datacenter's
 * user-tag-access and registered-tags, as pve-guest-common's
 * assert_tag_permissions judges them for a token without Sys.Modify on /
 * (default user-allow=free: any tag but a registered one). */
static void check_tags(struct doctor *d, json_object *nodes)
{
	struct pve_error e = {0};
	json_object *opt = NULL, *perm = NULL, *root = NULL, *uta = NULL, *reg = NULL, *list = NULL;
	if (pve_get(d->cli->pve, "/cluster/options", NULL, &opt, &e) < 0) {
		request_failed(d, "tags", "read the datacenter's user-tag-access",
			       "Sys.Audit on /", &e);
		return;
	}
	struct pve_params p = {0};
	pve_params_add(&p, "path", "/");
	int rc = pve_get(d->cli->pve, "/access/permissions", &p, &perm, &e);
	pve_params_free(&p);
	if (rc < 0) {
		request_failed(d, "tags", NULL, NULL, &e);
		json_object_put(opt);
		return;
	}
	json_object_object_get_ex(perm, "/", &root);
	bool privileged = json_object_object_get_ex(root, "Sys.Modify", NULL);
	json_object_object_get_ex(opt, "user-tag-access", &uta);
	json_object_object_get_ex(opt, "registered-tags", &reg);
	json_object_object_get_ex(uta, "user-allow-list", &list);
	const char *allow = json_str(uta, "user-allow");
	if (!allow)
		allow = "free";
	bool free_form = strcmp(allow, "free") == 0, none = strcmp(allow, "none") == 0;
	/* the tags, and who writes them */
	struct sbuf refused = {0}, want = {0};
	char **tags = NULL;
	size_t nt = 0;
	strv_add(&tags, &nt, strdup("pvagent-image"));
	for (size_t i = 0; i < json_object_array_length(nodes); i++) {
		const char *n = json_str(json_object_array_get_idx(nodes, i), "node");
		if (n)
			strv_add(&tags, &nt, strprintf("pvagent-home-%s", n));
	}
	for (size_t i = 0; i < nt; i++) {
		bool ok = privileged || ((free_form || (!none && tag_listed(list, tags[i]))) &&
					 !tag_listed(reg, tags[i]));
		if (!ok)
			sbuf_addf(&refused, "%s%s", refused.len ? ", " : "", tags[i]);
		sbuf_addf(&want, ";%s", tags[i]);
	}
	/* a pool's addresses: ip-ADDRESS, one tag per address */
	bool pools = d->cli->conf.n_pools > 0 && !privileged && !free_form;
	if (pools)
		sbuf_addf(&refused, "%sip-ADDRESS (pools)", refused.len ? ", " : "");
	const char *id = pve_identity(d->cli->pve);
	if (!refused.len) {
		check(d, V_OK, "tags", "%s", privileged ? "the token has Sys.Modify on /: any tag"
		      : "user-tag-access lets the token write pvagent's tags");
	} else if (pools) {
		check(d, V_FIX, "tags", "datacenter user-tag-access is user-allow=%s: PVE refuses %s "
		      "the tags %s: pvesh set /cluster/options --user-tag-access user-allow=free, "
		      "or Sys.Modify on / for %s: pveum role modify " PVEPRIVS_ROLE " --append 1 "
		      "--privs Sys.Modify", allow, id, sbuf_str(&refused), id);
	} else {
		/* the list PVE keeps, with pvagent's tags added */
		struct sbuf keep = {0};
		for (size_t i = 0; list && i < json_object_array_length(list); i++) {
			const char *t = json_object_get_string(json_object_array_get_idx(list, i));
			bool ours = false;
			for (size_t k = 0; t && k < nt; k++)
				ours = ours || strcmp(tags[k], t) == 0;
			if (t && !ours)
				sbuf_addf(&keep, "%s;", t);
		}
		check(d, V_FIX, "tags", "datacenter %s%s: PVE refuses %s the tags %s "
		      "(Sys.Modify on / for modifying tag): %s%s%s%s",
		      tag_listed(reg, "pvagent-image") ? "registered-tags hold pvagent's tags; "
		      : "", free_form ? "user-tag-access is free" : "user-tag-access",
		      id, sbuf_str(&refused),
		      free_form ? "take them out of registered-tags (pvesh set /cluster/options "
				  "--registered-tags ...)"
				: "pvesh set /cluster/options --user-tag-access "
				  "'user-allow=list,user-allow-list=",
		      free_form ? "" : sbuf_str(&keep), free_form ? "" : sbuf_str(&want) + 1,
		      free_form ? "" : "'");
		sbuf_free(&keep);
	}
	sbuf_free(&refused);
	sbuf_free(&want);
	strv_free(tags, nt);
	json_object_put(perm);
	json_object_put(opt);
}

static void check_ssh(struct doctor *d)
{
	const char *id = d->cli->conf.ssh.identity;
	struct stat st;
	if (!id)
		check(d, V_FIX, "ssh identity", "none configured: ssh-keygen -t ed25519 -N '' -f "
		      "KEY, then [ssh] identity = KEY");
	else if (stat(id, &st) < 0)
		check(d, V_FIX, "ssh identity", "%s: missing", id);
	else
		check(d, (st.st_mode & 077) ? V_FIX : V_OK, "ssh identity", "%s (mode %04o)%s", id,
		      (unsigned)(st.st_mode & 07777), (st.st_mode & 077) ? ": chmod 600" : "");
}

static void check_clock(struct doctor *d)
{
	struct pve_error e = {0};
	json_object *t = NULL;
	char *esc = pve_path_escape(d->node);
	if (!esc || pve_getf(d->cli->pve, &t, NULL, &e, "/nodes/%s/time", esc) < 0) {
		free(esc);
		char *what = strprintf("read %s's clock", d->node),
		     *needs = strprintf("Sys.Audit on /nodes/%s", d->node);
		request_failed(d, "clock", what, needs, &e);
		free(what);
		free(needs);
		return;
	}
	free(esc);
	json_object *v = NULL;
	json_object_object_get_ex(t, "time", &v);
	double skew = (double)json_object_get_int64(v) - (double)time(NULL);
	check(d, fabs(skew) > SKEW_MAX ? V_FIX : V_OK, "clock", "%s is %+.0f s from this host%s",
	      d->node, skew, fabs(skew) > SKEW_MAX ? ": run NTP on both" : "");
	json_object_put(t);
}

static void check_ha(struct doctor *d)
{
	struct pve_error e = {0};
	json_object *st = NULL;
	if (pve_get(d->cli->pve, "/cluster/ha/status/current", NULL, &st, &e) < 0) {
		request_failed(d, "ha", "read the HA stack's state", "Sys.Audit on /", &e);
		return;
	}
	const char *armed = NULL;
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *o = json_object_array_get_idx(st, i);
		const char *type = json_str(o, "type");
		if (type && strcmp(type, "fencing") == 0)
			armed = json_str(o, "armed-state");
	}
	/* standby: the CRM is idle, as it is wherever no guest is
	 * HA-managed (pve-ha-manager API2/HA/Status.pm); disarming and
	 * disarmed (PVE 9's maintenance of the HA stack) hold HA migrations */
	if (!armed)
		check(d, V_UNKNOWN, "ha", "PVE does not say whether the HA stack is armed");
	else if (strcmp(armed, "armed") == 0)
		check(d, V_OK, "ha", "fencing armed");
	else if (strcmp(armed, "standby") == 0)
		check(d, V_OK, "ha", "fencing standby: no HA resources, the CRM is idle");
	else
		check(d, V_NOTE, "ha", "fencing %s: HA migrations of HA guests wait", armed);
	json_object_put(st);
}

/* Addresses of a pool's range that a guest's config sets without the
 * pool's tag: the pool does not know them. */
static void check_pools(struct doctor *d)
{
	const struct conf *cf = &d->cli->conf;
	if (!cf->n_pools)
		return;
	struct pool_stray *v = NULL;
	size_t n = 0;
	struct pve_error e = {0};
	if (pool_strays(d->cli->pve, cf->pools, cf->n_pools, &v, &n, &e) < 0) {
		request_failed(d, "pools", "read the guests' configurations", "VM.Audit on /vms",
			       &e);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct pool_holder *h = &v[i].h;
		char *a = pool_ip_str(&h->ip), *tag = pool_tag(&h->ip);
		check(d, V_FIX, "pool address",
		      "pool %s: %s is set by hand in %s of %s (VMID %d, %s), without the tag %s: "
		      "the pool may hand it out again; tag the guest %s or give it another address",
		      v[i].pool->name, a ? a : "?", v[i].key, h->name ? h->name : "an unnamed guest",
		      h->vmid, h->node ? h->node : "?", tag ? tag : "?", tag ? tag : "?");
		free(a);
		free(tag);
	}
	if (!n)
		check(d, V_OK, "pools", "%zu pool%s: no address of a range is set by hand outside "
		      "the pool", cf->n_pools, cf->n_pools == 1 ? "" : "s");
	pool_strays_free(v, n);
}

static void check_socket(struct doctor *d)
{
	const char *path = d->cli->conf.paths.socket;
	struct stat st;
	if (!path || stat(path, &st) < 0)
		check(d, V_NOTE, "daemon socket", "%s: none (pvagentd does not run; commands run "
		      "here)", path ? path : "-");
	else if (!S_ISSOCK(st.st_mode))
		check(d, V_FIX, "daemon socket", "%s is not a socket", path);
	else
		check(d, (st.st_mode & 002) ? V_FIX : V_OK, "daemon socket", "%s (mode %04o)%s",
		      path, (unsigned)(st.st_mode & 07777),
		      (st.st_mode & 002) ? ": writable by everyone; set [daemon] socket_group" : "");
}

static int cmd_doctor(struct cli *cli, const struct cmd_args *a)
{
	struct doctor d = {.cli = cli, .major = 0};
	for (size_t i = 0; i < a->n; i++)
		d.migrate = d.migrate || a->v[i].opt == 'm';
	int rc = cli_connect_pve(cli);
	if (rc)
		return rc;
	d.checks = json_object_new_array();
	check_api(&d);
	struct pve_error e = {0};
	json_object *nodes = NULL;
	if (!d.fix && pve_get(cli->pve, "/nodes", NULL, &nodes, &e) < 0)
		request_failed(&d, "nodes", NULL, NULL, &e);
	if (!d.fix) {
		check_versions(&d, nodes);
		for (size_t i = 0; !cli->conf.pve.node && i < json_object_array_length(nodes) &&
				   !d.node; i++) {
			json_object *n = json_object_array_get_idx(nodes, i);
			const char *st = json_str(n, "status");
			if (st && strcmp(st, "online") == 0 && json_str(n, "node"))
				d.node = strdup(json_str(n, "node"));
		}
		if (cli->conf.pve.node)
			d.node = strdup(cli->conf.pve.node);
		if (tmpl_list((const char *const *)cli->conf.paths.templates, &d.tmpls, &d.n_tmpls,
			      &d.tmpl_err) < 0 && !d.tmpl_err)
			d.tmpl_err = strdup("cannot list the templates");
		collect_uses(&d);
		if (d.node) {
			check_storages(&d);
			check_bridges(&d);
		}
		check_privileges(&d);
		if (d.node)
			check_clock(&d);
		check_templates(&d);
		check_tags(&d, nodes);
		check_ha(&d);
		check_pools(&d);
	}
	check_ssh(&d);
	check_socket(&d);
	rc = d.fix ? 1 : 0;
	if (cli->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "result", json_object_new_string(rc ? "fix" : "ok"));
		json_object_object_add(o, "command", json_object_new_string("doctor"));
		json_object_object_add(o, "checks", json_object_get(d.checks));
		json_object_object_add(o, "exit", json_object_new_int(rc));
		out_json_line(stdout, o);
		json_object_put(o);
	}
	json_object_put(nodes);
	json_object_put(d.checks);
	free(d.node);
	free(d.bridge);
	sbuf_free(&d.agent_nodes);
	json_object_put(d.storages);
	for (size_t i = 0; i < d.n_uses; i++) {
		free(d.uses[i].storage);
		sbuf_free(&d.uses[i].content);
		strv_free(d.uses[i].use_content, d.uses[i].n);
		strv_free(d.uses[i].use_who, d.uses[i].n);
	}
	free(d.uses);
	tmpl_list_free(d.tmpls, d.n_tmpls);
	free(d.tmpl_err);
	return rc;
}

static const struct option doctor_opts[] = {{"migrate", no_argument, NULL, 'm'}, {0}};

const struct cmd_entry cmd_doctor_entry = {
	"doctor", "[--migrate]",
	"check the installation: API, versions, privileges, the storages the commands use and "
	"their content, bridges, template VMs, tags, SSH identity, clock, HA, pools' hand-set "
	"addresses, daemon socket",
	"", doctor_opts, NULL, 0, 0, NULL, cmd_doctor,
	"pvagent doctor\npvagent doctor --migrate\npvagent --json doctor",
	.wf = NULL,
	.flags = CMD_READONLY,
};
