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
	{"VM.Audit", "/vms", GUESTS, false},
	{"VM.Allocate", "/vms", "up, down", false},
	{"VM.Clone", "/vms", "up", false},
	{"VM.Config.Disk", "/vms", "up, virtio", false},
	{"VM.Config.CDROM", "/vms", "up", false},
	{"VM.Config.CPU", "/vms", "up", false},
	{"VM.Config.Memory", "/vms", "up", false},
	{"VM.Config.Network", "/vms", "up, virtio", false},
	{"VM.Config.HWType", "/vms", "up, virtio", false},
	{"VM.Config.Options", "/vms", "up", false},
	{"VM.Config.Cloudinit", "/vms", "up", false},
	{"VM.PowerMgmt", "/vms", "up, virtio, down", false},
	{"VM.Snapshot", "/vms", "virtio", false},
	{NULL, "/vms", "up, list, show, inject, bench, ssh (address = agent)", false},
	{"Datastore.AllocateSpace", "/storage", "up", false},
	{"SDN.Use", "/sdn/zones/localnetwork", "up, virtio", false},
	{"VM.Migrate", "/vms", "migrate, drain, undrain", true},
	{"Sys.Audit", "/nodes", "migrate, drain, undrain (and nodes' figures)", true},
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

bool pveprivs_in_role(const char *priv, int major, bool migrate)
{
	for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
		if ((migrate || !needs[i].migrate) &&
		    strcmp(pveprivs_need_priv(&needs[i], major), priv) == 0)
			return true;
	return false;
}

char *pveprivs_role_privs(int major, bool migrate)
{
	struct sbuf b = {0};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof needs / sizeof needs[0]; i++) {
		const char *p = pveprivs_need_priv(&needs[i], major);
		if (!migrate && needs[i].migrate)
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

char *pveprivs_pveum_lines(int major, bool migrate)
{
	char *privs = pveprivs_role_privs(major, migrate);
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
