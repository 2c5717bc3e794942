/* pveperm.c - privileges a config change or the guest agent's address
 * needs, checked up front against GET /access/permissions (see pveperm.h). */
#include "pveperm.h"

#include "pveprivs.h"

#include "util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool drive_key(const char *k)
{
	static const char *const buses[] = {"ide", "sata", "scsi", "virtio", "unused", NULL};
	for (size_t i = 0; buses[i]; i++)
		if (key_indexed(k, buses[i]))
			return true;
	return strcmp(k, "boot") == 0 || strcmp(k, "bootdisk") == 0 ||
	       strcmp(k, "efidisk0") == 0 || strcmp(k, "tpmstate0") == 0;
}

/* The privileges the token has on path, as PVE reports them ({PRIV: 1}):
 * 1, 0 (PVE cannot say: *privs NULL), -1. */
static int have(struct pve *c, const char *path, json_object **privs, struct pve_error *err)
{
	struct pve_params p = {0};
	pve_params_add(&p, "path", path);
	json_object *d = NULL;
	int rc = pve_get(c, "/access/permissions", &p, &d, err);
	pve_params_free(&p);
	*privs = NULL;
	if (rc < 0) {
		if (err->kind == PVE_ERR_NOT_IMPLEMENTED || err->kind == PVE_ERR_NOT_FOUND ||
		    err->kind == PVE_ERR_PARAM || err->kind == PVE_ERR_BAD_REQUEST) {
			pve_error_clear(err);
			return 0;
		}
		return -1;
	}
	json_object *o = NULL;
	if (json_object_is_type(d, json_type_object) && json_object_object_get_ex(d, path, &o) &&
	    json_object_is_type(o, json_type_object))
		*privs = json_object_get(o);
	json_object_put(d);
	return *privs ? 1 : 0; /* an answer of another shape: PVE cannot say */
}

/* -1 with the 403-like error when priv is not in privs. */
static int need(json_object *privs, const char *path, const char *priv, struct pve_error *err)
{
	if (!privs || json_object_object_get_ex(privs, priv, NULL))
		return 0;
	pve_error_set(err, PVE_ERR_PERM, "Permission check failed (%s, %s)", path, priv);
	return -1;
}

/* SDN.Use for a NIC value on /sdn/zones/localnetwork/BRIDGE (PVE 8
 * check_vnet_access without SDN zones; a tagged NIC's path is the bridge's
 * child, which a propagating entry on the bridge covers). */
static int bridge_ok(struct pve *c, const char *net, struct pve_error *err)
{
	const char *b = strstr(net, "bridge=");
	if (!b || (b != net && b[-1] != ','))
		return 0;
	b += 7;
	char *path = strprintf("/sdn/zones/localnetwork/%.*s", (int)strcspn(b, ","), b);
	if (!path)
		return pve_error_oom(err);
	json_object *privs = NULL;
	int rc = have(c, path, &privs, err);
	if (rc > 0)
		rc = need(privs, path, "SDN.Use", err);
	json_object_put(privs);
	free(path);
	return rc < 0 ? -1 : 0;
}

int pveperm_check_config(struct pve *c, int vmid, const struct pve_params *set,
			 const char *delete_keys, struct pve_error *err)
{
	char path[32];
	snprintf(path, sizeof path, "/vms/%d", vmid);
	json_object *privs = NULL;
	int rc = have(c, path, &privs, err);
	if (rc <= 0)
		return rc;
	rc = need(privs, path, "VM.PowerMgmt", err);
	if (rc == 0 && delete_keys && *delete_keys)
		rc = need(privs, path, "VM.Config.Disk", err); /* drives only */
	for (size_t i = 0; rc == 0 && set && i < set->n; i++) {
		const char *k = set->v[i].key;
		if (drive_key(k))
			rc = need(privs, path, "VM.Config.Disk", err);
		else if (key_indexed(k, "net"))
			rc = need(privs, path, "VM.Config.Network", err);
		else if (strcmp(k, "scsihw") == 0)
			rc = need(privs, path, "VM.Config.HWType", err);
	}
	json_object_put(privs);
	for (size_t i = 0; rc == 0 && set && i < set->n; i++)
		if (key_indexed(set->v[i].key, "net") && set->v[i].value)
			rc = bridge_ok(c, set->v[i].value, err);
	return rc;
}

int pveperm_check_agent(struct pve *c, int major, const char *path, struct pve_error *err)
{
	json_object *privs = NULL;
	int rc = have(c, path, &privs, err);
	if (rc <= 0)
		return rc;
	/* PVE 9 checks either of the two (any => 1) */
	if (major >= 9 && json_object_object_get_ex(privs, "VM.GuestAgent.Unrestricted", NULL))
		rc = 0;
	else
		rc = need(privs, path, pveprivs_agent_priv(major), err);
	json_object_put(privs);
	return rc;
}
