/* pveprivs.h - the one table of what pvagent needs of PVE: for each
 * command the privileges and the ACL paths PVE checks them on, per PVE
 * major version (the guest-agent address: VM.Monitor on 8.x and before,
 * VM.GuestAgent.Audit on 9.x), and the role that holds them (README.md
 * "Connect a real host", pvagent(1) PRIVILEGES; setup --minimal leaves
 * out what only migrate, drain, rolling and image build need). `setup`
 * makes that role, `doctor` checks it, and `setup --dry-run` prints it as
 * pveum lines. */
#ifndef PVAGENT_PVEPRIVS_H
#define PVAGENT_PVEPRIVS_H

#include <stdbool.h>
#include <stddef.h>

#define PVEPRIVS_ROLE "PVAgent"
#define PVEPRIVS_USER "pvagent@pve"
#define PVEPRIVS_TOKEN "auto"

/* One privilege one or more commands need. */
struct pvepriv_need {
	const char *priv;     /* "VM.Clone"; NULL: the version's guest-agent
				 privilege (pveprivs_agent_priv) */
	const char *path;     /* the ACL path pvagent's requests meet it on,
				 as a parent of every such path ("/vms") */
	const char *commands; /* "up, virtio" */
	bool migrate;         /* only migrate, drain, undrain and rolling need it */
	bool image;           /* only image build needs it */
};

/* What a role holds beyond what the guest commands need (setup grants
 * both unless --minimal). */
#define PVEPRIVS_MIGRATE 0x1u /* migrate, drain, undrain, rolling */
#define PVEPRIVS_IMAGE 0x2u   /* image build */
#define PVEPRIVS_ALL (PVEPRIVS_MIGRATE | PVEPRIVS_IMAGE)

/* The privilege that reads a guest agent's addresses on PVE major. */
const char *pveprivs_agent_priv(int major);
/* Need i of the table (NULL past the last); its privilege on major. */
const struct pvepriv_need *pveprivs_need(size_t i);
const char *pveprivs_need_priv(const struct pvepriv_need *n, int major);

/* The role's privileges on major, space separated in the table's order
 * (each once): what the guest commands need and the extras
 * (PVEPRIVS_MIGRATE, PVEPRIVS_IMAGE). malloc'd. */
char *pveprivs_role_privs(int major, unsigned extras);
/* Is priv one of the role's on major? */
bool pveprivs_in_role(const char *priv, int major, unsigned extras);

/* The pveum lines that make role, user, token and ACLs on major, one per
 * line ('\n' after each), as README gives them. malloc'd. */
char *pveprivs_pveum_lines(int major, unsigned extras);
/* The line that adds priv to the role: `pveum role modify PVAgent
 * --append 1 --privs "PRIV"`. malloc'd. */
char *pveprivs_grant_line(const char *priv);

/* What PVE checks on a request pvagent sends (method "POST", path
 * "/nodes/pve1/storage/local/download-url", a query left out) on PVE
 * major (0: unknown, each version's named): "Datastore.AllocateTemplate on
 * /storage/local, and Sys.AccessNetwork on /nodes/pve1 (or Sys.Audit and
 * Sys.Modify on /): pveum role modify ..." (the grant line for the clauses
 * that want one privilege). malloc'd; NULL for a request not in the table
 * (or out of memory). */
char *pveprivs_request_needs(const char *method, const char *path, int major);

#endif
