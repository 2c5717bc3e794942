/* nodelife.h - a node's life over simulated time (nodelife.c): its
 * upgrade (pve-manager and QEMU change at once, the kernel at the next
 * boot), its reboot (offline, its guests stopped, HA recovery when it stays
 * away past the fencing delay, back online and quorate after reboot_s),
 * the /_sim/ control routes for both, the Ceph model (ceph.c) and the
 * commands the nodes' SSH stand-ins forward (nodeshell.c). */
#ifndef PVESIM_NODELIFE_H
#define PVESIM_NODELIFE_H

#include "cluster.h"

/* What `apt-get dist-upgrade` makes a node (the scenario's "upgrade"). */
struct node_upgrade {
	char *version;   /* pve-manager, "9.1.1" */
	char *qemu;      /* pve-qemu-kvm, "10.1.2"; NULL: by version */
	char *kernel;    /* the kernel installed, "6.17.2-1-pve"; NULL: by version */
	double reboot_s; /* seconds a reboot takes (also before the upgrade) */
};

/* Seconds a node is offline on reboot when its scenario says nothing. */
#define NODE_REBOOT_S 60.0
/* Seconds from a node's loss to the CRM fencing it and recovering its HA
 * services elsewhere: pve-ha-manager's NodeStatus.pm fence_delay (60 s in
 * state unknown) after the dead LRM's agent lock has expired (pmxcfs lock
 * timeout, 120 s) - the later of the two. */
#define HA_FENCE_AFTER 120.0

/* The kernel node n runs ("6.8.12-9-pve"), by its scenario or version. */
const char *node_kernel(const struct cluster *c, const struct sim_node *n);
/* More than half of all votes online (corosync votequorum), as
 * /cluster/status's quorate says; the CRM fences only then. */
bool cluster_quorate(const struct cluster *c);
/* Uptime of node n at now (seconds since it last came up); 0 offline. */
long long node_uptime_at(const struct cluster *c, const struct sim_node *n, double now);
/* pveversion's line: "pve-manager/8.4.1/2a5fa54a8503f96d (running kernel:
 * 6.8.12-9-pve)"; malloc'd. */
char *node_pveversion_line(const struct cluster *c, const struct sim_node *n);

/* apt-get dist-upgrade on n at now: its packages become the upgrade's (1),
 * or it has none or already has it (0: nothing to do). */
int node_upgrade_apply(struct cluster *c, struct sim_node *n, double now);
/* Reboot n at now: offline, its guests stopped (HA ones recovered on other
 * nodes if it stays away HA_FENCE_AFTER), online again after its reboot_s
 * with the installed kernel. 0, or -1 with *err (already rebooting,
 * offline in the scenario). */
int node_reboot(struct cluster *c, struct sim_node *n, double now, char **err);
/* Run what is due by now in time order: tasks, fencing and recovery (the
 * node ha_crm.c's ha_recovery_node picks), nodes coming back (calls
 * tasks_advance). The simulator calls it through ha_crm_advance, between
 * the CRM's rounds. */
void nodes_advance(struct cluster *c, double now);
/* GET /cluster/config/nodes: each node's corosync entry (quorum_votes). */
bool routes_nodelife(struct cluster *c, const struct sim_req *req, struct path_parts *pp,
		     struct sim_resp *r);
/* The node's life for GET /_sim/state (added to its object o). */
void node_life_state(const struct cluster *c, const struct sim_node *n, double now,
		     json_object *o);
void node_life_free(struct sim_node *n);

/* "8.4" -> "8.4.1" (the release's first point version, as /version
 * answers it; 3.x and MAJOR.MINOR.PATCH as given); malloc'd. */
char *pve_full_version(const char *v);

/* ---- Ceph (ceph.c) -------------------------------------------------------- */
struct sim_ceph;
/* The scenario's "ceph" object ({"fsid", "flags": [..], "osds_per_node"});
 * NULL with *err (a message without the file) when it does not read. */
struct sim_ceph *ceph_new(json_object *spec, const char *jpath, char **err);
void ceph_free(struct sim_ceph *ceph);
/* Set or clear flag (ceph osd set|unset FLAG): 0, or -1 for a flag Ceph
 * does not know. */
int ceph_set_flag(struct sim_ceph *ceph, const char *flag, bool on);
bool ceph_flag(const struct sim_ceph *ceph, const char *flag);
/* GET/PUT /cluster/ceph/... (and its answer without Ceph). */
bool routes_ceph(struct cluster *c, const struct sim_req *req, struct path_parts *pp,
		 struct sim_resp *r);
json_object *ceph_state(const struct cluster *c);

/* ---- the nodes' shell commands (nodeshell.c) -------------------------------- */
/* Run argv (a command the node's SSH stand-in forwarded) on node n at now:
 * its output into *out (malloc'd) and its exit code; recorded for
 * GET /_sim/node-commands. */
int nodeshell_run(struct cluster *c, struct sim_node *n, json_object *argv, double now,
		  char **out);
/* The commands recorded so far (new reference). */
json_object *nodeshell_log(const struct cluster *c);

#endif
