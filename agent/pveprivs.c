/* pveprivs.c - what pvagent needs of PVE, per command and version (see
 * pveprivs.h). The rows follow pvagent(1)'s PRIVILEGES (qemu-server 8.4
 * and 9.1, pve-access-control); the paths are the parents pvagent's
 * requests meet each privilege under (/vms/ID, /storage/S,
 * /sdn/zones/localnetwork/BRIDGE, /nodes/NODE). */
#include "pveprivs.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

#define GUESTS "up, virtio, down, list, show, inject, bench, ssh, migrate, drain"

static const struct pvepriv_need needs[] = {
	{"VM.Audit", "/vms", GUESTS, false, false},
	{"VM.Allocate", "/vms", "up, down", false, false},
	{"VM.Clone", "/vms", "up", false, false},
	{"VM.Config.Disk", "/vms", "up, virtio", false, false},
	{"VM.Config.CDROM", "/vms", "up", false, false},
	{"VM.Config.CPU", "/vms", "up", false, false},
	{"VM.Config.Memory", "/vms", "up", false, false},
	{"VM.Config.Network", "/vms", "up, virtio", false, false},
	{"VM.Config.HWType", "/vms", "up, virtio", false, false},
	{"VM.Config.Options", "/vms", "up", false, false},
	{"VM.Config.Cloudinit", "/vms", "up", false, false},
	{"VM.PowerMgmt", "/vms", "up, virtio, down", false, false},
	{"VM.Snapshot", "/vms", "virtio", false, false},
	{NULL, "/vms", "up, list, show, inject, bench, ssh (address = agent)", false, false},
	{"Datastore.AllocateSpace", "/storage", "up", false, false},
	{"SDN.Use", "/sdn/zones/localnetwork", "up, virtio", false, false},
	{"VM.Migrate", "/vms", "migrate, drain, undrain, rolling", true, false},
	{"Sys.Audit", "/nodes", "migrate, drain, undrain, rolling (and nodes' figures)", true, false},
	/* rolling's reads of the cluster: GET /cluster/status (pve-manager
	 * API2/Cluster.pm get_status), /cluster/ha/resources and
	 * /cluster/ha/status/current (pve-ha-manager API2/HA/Resources.pm
	 * index, Status.pm status): Sys.Audit on /; /cluster/ceph/status takes
	 * it or Datastore.Audit there (API2/Cluster/Ceph.pm) */
	{"Sys.Audit", "/", "rolling: the cluster's status, HA, Ceph", true, false},
	/* download-url (pve-storage Status.pm download_url): AllocateTemplate
	 * on the storage and Sys.AccessNetwork on the node (or Sys.Audit with
	 * Sys.Modify on /); deleting the downloaded file (Content.pm delete):
	 * Datastore.Allocate on the storage */
	{"Datastore.AllocateTemplate", "/storage", "image build", false, true},
	{"Sys.AccessNetwork", "/nodes", "image build", false, true},
	{"Datastore.Allocate", "/storage", "image build", false, true},
};

const char *pveprivs_agent_priv(int major)
{
	return major >= 9 ? "VM.GuestAgent.Audit" : "VM.Monitor";
}

const struct pvepriv_need *pveprivs_need(size_t i)
{
	return i < sizeof needs / sizeof needs[0] ? &needs[i] : NULL;
}

const char *pveprivs_need_priv(const struct pvepriv_need *n, int major)
{
	return n->priv ? n->priv : pveprivs_agent_priv(major);
}

/* Is need n in the role made with extras? */
static bool granted(const struct pvepriv_need *n, unsigned extras)
{
	return !(n->migrate && !(extras & PVEPRIVS_MIGRATE)) &&
	       !(n->image && !(extras & PVEPRIVS_IMAGE));
}

bool pveprivs_in_role(const char *priv, int major, unsigned extras)
{
	for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
		if (granted(&needs[i], extras) &&
		    strcmp(pveprivs_need_priv(&needs[i], major), priv) == 0)
			return true;
	return false;
}

char *pveprivs_role_privs(int major, unsigned extras)
{
	struct sbuf b = {0};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof needs / sizeof needs[0]; i++) {
		const char *p = pveprivs_need_priv(&needs[i], major);
		if (!granted(&needs[i], extras))
			continue;
		bool seen = false;
		for (size_t j = 0; j < i; j++)
			seen = seen || strcmp(pveprivs_need_priv(&needs[j], major), p) == 0;
		if (!seen)
			rc = sbuf_addf(&b, "%s%s", b.len ? " " : "", p);
	}
	char *out = rc == 0 ? sbuf_steal(&b) : NULL;
	sbuf_free(&b);
	return out;
}

char *pveprivs_pveum_lines(int major, unsigned extras)
{
	char *privs = pveprivs_role_privs(major, extras);
	char *out = privs ? strprintf(
		"pveum role add " PVEPRIVS_ROLE " --privs \"%s\"\n"
		"pveum user add " PVEPRIVS_USER " --comment \"pvagent\"\n"
		"pveum user token add " PVEPRIVS_USER " " PVEPRIVS_TOKEN " --privsep 1\n"
		"pveum acl modify / --users " PVEPRIVS_USER " --roles " PVEPRIVS_ROLE "\n"
		"pveum acl modify / --tokens '" PVEPRIVS_USER "!" PVEPRIVS_TOKEN "' --roles "
		PVEPRIVS_ROLE "\n", privs) : NULL;
	free(privs);
	return out;
}

char *pveprivs_grant_line(const char *priv)
{
	return strprintf("pveum role modify " PVEPRIVS_ROLE " --append 1 --privs \"%s\"", priv);
}

/* ---- what each request pvagent sends needs (a 403's hint) ---------------
 * PVE's texts name the path and privilege only for a plain check
 * ("Permission check failed (/vms/100, VM.Allocate)"; check_any joins the
 * alternatives with "|"); an `or` check (exec_api2_perm_check, pve-access-
 * control RPCEnvironment.pm) raises the bare "Permission check failed".
 * So a 403 is explained from this table, keyed by method and path pattern
 * ({x} matches one segment). needs: clauses separated by ";" are all
 * required; alternatives within a clause by "|"; an alternative is
 * "PRIV[+PRIV...] PATH" (all of those privileges on PATH). major: 0 for
 * every version, 8 for 8.x and before, 9 for 9.x on (the schemas of
 * pve-manager 8.4 and 9.1, ../pve-api). */
struct pvereq_rule {
	const char *method, *pattern;
	int major;
	const char *needs;
};

#define VMP "/nodes/{node}/{type}/{vmid}"
static const struct pvereq_rule rules[] = {
	{"POST", "/nodes/{node}/storage/{storage}/download-url", 0,
	 "Datastore.AllocateTemplate /storage/{storage}; Sys.AccessNetwork /nodes/{node} | "
	 "Sys.Audit+Sys.Modify /"},
	{"DELETE", "/nodes/{node}/storage/{storage}/content/{volume}", 0,
	 "Datastore.Allocate /storage/{storage}"},
	{"GET", "/nodes/{node}/storage/{storage}/content", 0,
	 "Datastore.Audit /storage/{storage} | Datastore.AllocateSpace /storage/{storage}"},
	{"GET", "/nodes/{node}/storage/{storage}/status", 0,
	 "Datastore.Audit /storage/{storage} | Datastore.AllocateSpace /storage/{storage}"},
	{"POST", VMP "/clone", 0, "VM.Clone /vms/{vmid}; VM.Allocate /vms/NEWID"},
	{"POST", VMP "/migrate", 0, "VM.Migrate /vms/{vmid}"},
	{"GET", VMP "/migrate", 0, "VM.Migrate /vms/{vmid}"},
	{"POST", VMP "/status/{action}", 0, "VM.PowerMgmt /vms/{vmid}"},
	{"GET", VMP "/status/current", 0, "VM.Audit /vms/{vmid}"},
	{"GET", VMP "/config", 0, "VM.Audit /vms/{vmid}"},
	{"DELETE", VMP, 0, "VM.Allocate /vms/{vmid}"},
	{"POST", VMP "/template", 0, "VM.Allocate /vms/{vmid}"},
	{"PUT", VMP "/resize", 0, "VM.Config.Disk /vms/{vmid}"},
	{"POST", VMP "/snapshot", 0, "VM.Snapshot /vms/{vmid}"},
	{"DELETE", VMP "/snapshot/{snap}", 0, "VM.Snapshot /vms/{vmid}"},
	{"POST", VMP "/snapshot/{snap}/rollback", 0,
	 "VM.Snapshot /vms/{vmid} | VM.Snapshot.Rollback /vms/{vmid}"},
	{"GET", VMP "/agent/network-get-interfaces", 8, "VM.Monitor /vms/{vmid}"},
	{"GET", VMP "/agent/network-get-interfaces", 9,
	 "VM.GuestAgent.Audit /vms/{vmid} | VM.GuestAgent.Unrestricted /vms/{vmid}"},
	{"GET", "/nodes/{node}/time", 0, "Sys.Audit /nodes/{node}"},
	{"GET", "/cluster/ha/rules", 9, "Sys.Audit /"},
	{"GET", "/cluster/ha/status/current", 0, "Sys.Audit /"},
	{"GET", "/cluster/options", 0, "Sys.Audit /"},
};
#undef VMP

/* Does path (no query) match pattern? */
static bool path_matches(const char *pattern, const char *path)
{
	while (*pattern && *path) {
		if (*pattern != '/' || *path != '/')
			return false;
		pattern++;
		path++;
		size_t pn = strcspn(pattern, "/"), sn = strcspn(path, "/");
		if (!sn || (pattern[0] != '{' && (pn != sn || strncmp(pattern, path, pn) != 0)))
			return false;
		pattern += pn;
		path += sn;
	}
	return !*pattern && !*path;
}

/* The segment of path that {name} in pattern stands for, appended to b. */
static int add_segment(struct sbuf *b, const char *pattern, const char *path, const char *name,
		       size_t nlen)
{
	while (*pattern && *path) {
		pattern++;
		path++;
		size_t pn = strcspn(pattern, "/"), sn = strcspn(path, "/");
		if (pn == nlen + 2 && strncmp(pattern + 1, name, nlen) == 0)
			return sbuf_addn(b, path, sn);
		pattern += pn;
		path += sn;
	}
	return sbuf_addn(b, name - 1, nlen + 2); /* not in the pattern: left as is */
}

/* One alternative "P1+P2 PATH" as "P1 and P2 on PATH" into b; *single set
 * to its privilege when it is one. */
static int add_alternative(struct sbuf *b, const char *alt, size_t n, const char *pattern,
			   const char *path, struct sbuf *single)
{
	while (n && *alt == ' ')
		alt++, n--;
	while (n && alt[n - 1] == ' ')
		n--;
	const char *sp = memchr(alt, ' ', n);
	if (!sp)
		return -1;
	size_t privlen = (size_t)(sp - alt);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < privlen;) {
		size_t k = strcspn(alt + i, "+ ");
		rc = sbuf_addf(b, "%s%.*s", i ? " and " : "", (int)k, alt + i);
		i += k + 1;
	}
	if (rc == 0 && single && !memchr(alt, '+', privlen))
		rc = sbuf_addf(single, "%s%.*s", single->len ? "," : "", (int)privlen, alt);
	rc |= sbuf_add(b, " on ");
	for (const char *p = sp + 1; rc == 0 && p < alt + n;) {
		const char *open = memchr(p, '{', (size_t)(alt + n - p));
		const char *close = open ? memchr(open, '}', (size_t)(alt + n - open)) : NULL;
		if (!open || !close) {
			rc = sbuf_addn(b, p, (size_t)(alt + n - p));
			break;
		}
		rc = sbuf_addn(b, p, (size_t)(open - p));
		if (rc == 0)
			rc = add_segment(b, pattern, path, open + 1, (size_t)(close - open - 1));
		p = close + 1;
	}
	return rc;
}

/* One rule's needs into b ("X on P, and Y on Q (or A and B on R)"); the
 * single privileges of its clauses' first alternatives into single. */
static int add_needs(struct sbuf *b, const struct pvereq_rule *r, const char *path,
		     struct sbuf *single)
{
	int rc = 0;
	const char *c = r->needs;
	for (bool first = true; rc == 0 && *c; first = false) {
		size_t cl = strcspn(c, ";");
		if (!first)
			rc = sbuf_add(b, ", and ");
		const char *a = c;
		for (bool afirst = true; rc == 0 && a < c + cl; afirst = false) {
			size_t al = strcspn(a, "|;");
			if (!afirst)
				rc = sbuf_add(b, " (or ");
			if (rc == 0)
				rc = add_alternative(b, a, al, r->pattern, path, afirst ? single : NULL);
			if (rc == 0 && !afirst)
				rc = sbuf_add(b, ")");
			a += al + (a[al] == '|');
		}
		c += cl + (c[cl] == ';');
		while (*c == ' ')
			c++;
	}
	return rc;
}

char *pveprivs_request_needs(const char *method, const char *path, int major)
{
	if (!method || !path)
		return NULL;
	char *clean = strndup(path, strcspn(path, "?"));
	if (!clean)
		return NULL;
	/* the guest paths: qemu and lxc alike */
	const char *t = NULL;
	if (strncmp(clean, "/nodes/", 7) == 0 && (t = strchr(clean + 7, '/')) &&
	    strncmp(t, "/qemu/", 6) != 0 && strncmp(t, "/lxc/", 5) != 0)
		t = NULL;
	struct sbuf b = {0}, single = {0};
	int rc = 0, found = 0, tagged = 0;
	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
		if (strcmp(rules[i].method, method) == 0 && path_matches(rules[i].pattern, clean) &&
		    (strstr(rules[i].pattern, "{type}") ? t != NULL : true))
			tagged += rules[i].major != 0;
	for (size_t i = 0; rc == 0 && i < sizeof rules / sizeof rules[0]; i++) {
		const struct pvereq_rule *r = &rules[i];
		if (strcmp(r->method, method) != 0 || !path_matches(r->pattern, clean) ||
		    (strstr(r->pattern, "{type}") && !t))
			continue;
		if (r->major && major && (r->major >= 9) != (major >= 9))
			continue;
		if (found++)
			rc = sbuf_add(&b, "; ");
		if (rc == 0 && r->major && !major && tagged > 1)
			rc = sbuf_addf(&b, "on PVE %s: ", r->major >= 9 ? "9.x" : "8.x");
		if (rc == 0)
			rc = add_needs(&b, r, clean, &single);
	}
	char *out = NULL;
	if (rc == 0 && found) {
		char *grant = single.len ? pveprivs_grant_line(sbuf_str(&single)) : NULL;
		out = !single.len || grant ? strprintf("%s%s%s", sbuf_str(&b), grant ? ": " : "",
						       grant ? grant : "")
					   : NULL;
		free(grant);
	}
	sbuf_free(&b);
	sbuf_free(&single);
	free(clean);
	return out;
}
