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
	{"VM.Migrate", "/vms", "migrate, drain, undrain", true, false},
	{"Sys.Audit", "/nodes", "migrate, drain, undrain (and nodes' figures)", true, false},
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
