/* ha_crm.h - the simulator's HA manager as pvagent meets it (pve-ha-manager
 * 5.2 src/PVE/HA/Manager.pm, Resources/PVEVM.pm, Resources/PVECT.pm): the
 * CRM's rounds every HA_CRM_PERIOD s of simulated time, which place every
 * started HA-managed guest where select_service_node wants it (off a node
 * in HA maintenance and back once it leaves it, off a node a strict
 * node-affinity rule leaves out, to the rule's highest-priority node with
 * failback), the CRM's migrations (a VM live or offline; a container by
 * its LRM's shutdown, an offline migration and a start on the target), and
 * HA maintenance of a node (ha-manager crm-command node-maintenance). The
 * service status it keeps (state, target, maintenance node) is its own. */
#ifndef PVESIM_HA_CRM_H
#define PVESIM_HA_CRM_H

#include "cluster.h"

/* Seconds between two CRM rounds (PVE's CRM and LRM loops run every 10 s). */
#define HA_CRM_PERIOD 10.0

/* Run the CRM rounds due by now, each at its own time with the tasks due
 * before it run first, then the tasks due by now (tasks_advance). Called
 * around every request and by /_sim/advance. No rounds while the HA stack
 * is disarmed (its CRM carries nothing out). */
void ha_crm_advance(struct cluster *c, double now);

/* The CRM carries out a migration of g to target starting at `at`, as
 * root@pam: a VM is migrated (online when it runs, with local disks); a
 * running container is shut down by its LRM (vzshutdown), migrated
 * offline (vzmigrate) and started on the target (vzstart) once the
 * migration ends (on the source when it failed). 0, or -1 when the
 * migration could not start (the guest stays). */
int ha_crm_migrate(struct cluster *c, struct sim_guest *g, const char *target, double at);

/* A migration task the CRM started ended (mig_end's call for a task whose
 * args say "ha_crm"): the container's start, the service free again. */
struct sim_task;
void ha_crm_migration_end(struct cluster *c, struct sim_task *t, struct sim_guest *g, bool ok);

/* HA maintenance of a node (ha-manager crm-command node-maintenance
 * enable|disable NODE, nodeshell.c; a scenario's ha_maintenance): its LRM
 * says "maintenance mode", the next round moves its HA guests away (each
 * remembers the node) and, once disabled, back. */

/* Where the CRM's next round puts g (select_service_node with node
 * preference "none"), or NULL to leave it where it is. On 9.x the
 * node-affinity rules count; on every version a node in maintenance is
 * left and its guests go back to it after. */
const char *ha_select_node(const struct cluster *c, const struct sim_guest *g);
/* Where the CRM recovers g of a fenced node (recover_fenced_service:
 * select_service_node with "best-score"; the same rules, load and
 * maintenance as ha_select_node, its lost node not a candidate). NULL:
 * none qualifies (PVE logs "recovery policy: no node found" and retries). */
const char *ha_recovery_node(const struct cluster *c, const struct sim_guest *g);

#endif
