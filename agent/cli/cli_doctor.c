/* cli_doctor.c - `pvagent doctor`: checks a configured installation and
 * says what to fix, one line per check (or --json): the API reachable and
 * its certificate pinned, each node's PVE version (mixed versions noted),
 * every privilege each command needs on the paths it uses (asked of PVE:
 * GET /access/permissions, the table in pveprivs.h) with the grant line
 * for that version, storages and their content types, bridges, the
 * template VMs the templates clone, the SSH identity and its mode, clock
 * skew, the HA stack's armed state, and the daemon's socket. Exit 0 when
 * all is well, 1 when something needs fixing. A check PVE cannot answer
 * (a route it lacks: 501, or no right to ask) says "unknown" and fails
 * nothing. */
#include "cli.h"
#include "guest.h"
#include "json.h"
#include "output.h"
#include "pveprivs.h"
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

struct doctor {
	struct cli *cli;
	bool migrate;
	int major;
	json_object *checks;
	bool fix;
	char *node; /* the node storages and bridges are read on (malloc'd) */
	char *storage, *bridge; /* the first with images, the first bridge, if
				   any: the paths privileges are asked on */
	bool told_acl;          /* "holds nothing" said (once is enough) */
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

/* A failed request: unknown when PVE lacks the route or refuses to say. */
static void request_failed(struct doctor *d, const char *name, struct pve_error *e)
{
	bool unknown = e->kind == PVE_ERR_NOT_IMPLEMENTED || e->kind == PVE_ERR_PERM;
	/* PVE's words alone for what it will not say: no grant advice here */
	char *m = unknown ? NULL : pve_error_format(e);
	if (unknown)
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
		request_failed(d, "api", &e);
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
		request_failed(d, "version", &e);
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
			request_failed(d, "node version", &e);
			continue;
		}
		if (!first)
			first = v;
		else if (first->major != v->major || first->minor != v->minor)
			mixed = true;
		check(d, V_OK, "node version", "%s: %s", n, v->version ? v->version : "?");
	}
	if (mixed)
		check(d, V_NOTE, "node version", "mixed versions: live migration goes only to a node "
		      "of the same or a newer version; drain prefers the upgraded ones");
}

/* The path a need is asked on: its table path made concrete where doctor
 * knows what pvagent will use (the storage, the bridge, the node). */
static char *need_path(const struct doctor *d, const char *path)
{
	if (strcmp(path, "/storage") == 0 && d->storage)
		return strprintf("/storage/%s", d->storage);
	if (strcmp(path, "/sdn/zones/localnetwork") == 0 && d->bridge)
		return strprintf("%s/%s", path, d->bridge);
	if (strcmp(path, "/nodes") == 0 && d->node)
		return strprintf("/nodes/%s", d->node);
	return strdup(path);
}

/* The token holds nothing on path: the ACL lines, not the role, are what
 * is missing. */
static void no_acl(struct doctor *d, const char *path)
{
	const char *id = pve_identity(d->cli->pve);
	size_t ul = strcspn(id, "!");
	check(d, V_FIX, "privileges", "%s holds nothing on %s (nor, likely, elsewhere): "
	      "pveum acl modify / --users %.*s "
	      "--roles " PVEPRIVS_ROLE "; pveum acl modify / --tokens '%s' --roles " PVEPRIVS_ROLE,
	      id, path, (int)ul, id, id);
}

static void check_privileges(struct doctor *d)
{
	const char *done[8];
	size_t ndone = 0;
	bool all = true;
	for (size_t i = 0; pveprivs_need(i); i++) {
		const char *tpath = pveprivs_need(i)->path;
		bool seen = false;
		for (size_t k = 0; k < ndone; k++)
			seen = seen || strcmp(done[k], tpath) == 0;
		if (seen || ndone == 8)
			continue;
		done[ndone++] = tpath;
		char *path = need_path(d, tpath);
		struct pve_params p = {0};
		pve_params_add(&p, "path", path ? path : tpath);
		json_object *perm = NULL, *at = NULL;
		struct pve_error e = {0};
		int rc = path ? pve_get(d->cli->pve, "/access/permissions", &p, &perm, &e) : -1;
		pve_params_free(&p);
		if (rc < 0) {
			if (!path)
				pve_error_set(&e, PVE_ERR_INTERNAL, "out of memory");
			request_failed(d, "privileges", &e);
			free(path);
			all = false;
			continue;
		}
		json_object_object_get_ex(perm, path, &at);
		bool none = !at || json_object_object_length(at) == 0;
		for (size_t j = i; pveprivs_need(j); j++) {
			const struct pvepriv_need *n = pveprivs_need(j);
			const char *priv = pveprivs_need_priv(n, d->major);
			if (strcmp(n->path, tpath) != 0 || json_object_object_get_ex(at, priv, NULL))
				continue;
			bool note = n->migrate && !d->migrate;
			all = all && note;
			if (none && !note && !d->told_acl) {
				no_acl(d, path);
				d->told_acl = true;
			}
			if (none)
				continue;
			char *line = pveprivs_grant_line(priv);
			check(d, note ? V_NOTE : V_FIX, "privilege",
			      "%s on %s missing (%s): %s", priv, path, n->commands,
			      line ? line : "grant it");
			free(line);
		}
		json_object_put(perm);
		free(path);
	}
	if (all)
		check(d, V_OK, "privileges", "every privilege pvagent's commands need (PVE %d%s)",
		      d->major, d->migrate ? ", with migrate" : "; migrate and drain: doctor --migrate");
}

static void check_storages(struct doctor *d)
{
	struct pve_error e = {0};
	json_object *st = NULL;
	char *esc = pve_path_escape(d->node);
	if (!esc || pve_getf(d->cli->pve, &st, NULL, &e, "/nodes/%s/storage", esc) < 0) {
		free(esc);
		request_failed(d, "storages", &e);
		return;
	}
	free(esc);
	bool images = false;
	struct sbuf b = {0};
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *s = json_object_array_get_idx(st, i);
		const char *id = json_str(s, "storage"), *content = json_str(s, "content");
		if (id && content && strstr(content, "images") && !d->storage)
			d->storage = strdup(id);
		images = images || (content && strstr(content, "images"));
		sbuf_addf(&b, "%s%s (%s)", b.len ? ", " : "", id ? id : "?", content ? content : "");
	}
	check(d, images ? V_OK : V_FIX, "storages", "%s: %s%s", d->node,
	      b.len ? sbuf_str(&b) : "none visible",
	      images ? "" : "; none holds images (grant Datastore.AllocateSpace on /storage/S)");
	sbuf_free(&b);
	json_object_put(st);
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
		request_failed(d, "bridges", &e);
		return;
	}
	struct sbuf b = {0};
	for (size_t i = 0; i < json_object_array_length(net); i++) {
		const char *br = json_text(json_object_array_get_idx(net, i), "iface");
		if (br && !d->bridge)
			d->bridge = strdup(br);
		sbuf_addf(&b, "%s%s", b.len ? ", " : "", br ? br : "?");
	}
	check(d, b.len ? V_OK : V_FIX, "bridges", "%s: %s", d->node, b.len ? sbuf_str(&b) : "none");
	sbuf_free(&b);
	json_object_put(net);
}

static void check_templates(struct doctor *d)
{
	struct tmpl_info *list = NULL;
	size_t n = 0;
	char *err = NULL;
	if (tmpl_list((const char *const *)d->cli->conf.paths.templates, &list, &n, &err) < 0) {
		check(d, V_FIX, "templates", "%s", err ? err : "cannot list");
		free(err);
		return;
	}
	if (n == 0) {
		check(d, V_NOTE, "templates", "none in the configured directories ([paths] "
		      "templates)");
		tmpl_list_free(list, n);
		return;
	}
	struct pve_error e = {0};
	struct pve_params p = {0};
	pve_params_add(&p, "type", "vm");
	json_object *res = NULL;
	int rc = pve_get(d->cli->pve, "/cluster/resources", &p, &res, &e);
	pve_params_free(&p);
	if (rc < 0) {
		request_failed(d, "template VMs", &e);
		tmpl_list_free(list, n);
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
	tmpl_list_free(list, n);
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
		request_failed(d, "clock", &e);
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
		request_failed(d, "ha", &e);
		return;
	}
	const char *armed = NULL;
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *o = json_object_array_get_idx(st, i);
		const char *type = json_str(o, "type");
		if (type && strcmp(type, "fencing") == 0)
			armed = json_str(o, "armed-state");
	}
	if (!armed)
		check(d, V_UNKNOWN, "ha", "PVE does not say whether the HA stack is armed");
	else
		check(d, strcmp(armed, "armed") == 0 ? V_OK : V_NOTE, "ha", "fencing %s%s", armed,
		      strcmp(armed, "armed") == 0 ? "" : ": HA migrations of HA guests wait");
	json_object_put(st);
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
		request_failed(&d, "nodes", &e);
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
		if (d.node) {
			check_storages(&d);
			check_bridges(&d);
		}
		check_privileges(&d);
		if (d.node)
			check_clock(&d);
		check_templates(&d);
		check_ha(&d);
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
	free(d.storage);
	free(d.bridge);
	return rc;
}

static const struct option doctor_opts[] = {{"migrate", no_argument, NULL, 'm'}, {0}};

const struct cmd_entry cmd_doctor_entry = {
	"doctor", "[--migrate]",
	"check the installation: API, versions, privileges, storages, bridges, template VMs, "
	"SSH identity, clock, HA, daemon socket",
	"", doctor_opts, NULL, 0, 0, NULL, cmd_doctor,
	"pvagent doctor\npvagent doctor --migrate\npvagent --json doctor",
};
