/* power.h - the power routes that VMs and containers share (power.c). */
#ifndef PVESIM_POWER_H
#define PVESIM_POWER_H

#include "cluster.h"

/* Seconds from an HA power request (hastart/hastop) to the node's LRM
 * carrying it out. */
#define HA_DELAY 5.0

/* What a guest type's power routes differ in: qemu-server's and
 * pve-container's own start, stop, shutdown and reboot. */
struct power_kind {
	/* the answer (500) to starting a template */
	const char *template_msg;
	/* Do action ("start", "stop", "shutdown" or "reboot"; no template
	 * to start) as the type's API call does it and answer r. */
	void (*direct)(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
		       const char *action, struct sim_resp *r);
};

/* POST .../status/ACTION of g: VM.PowerMgmt, 501 for an action of no
 * power route, the template refusal, then an HA-managed guest's start,
 * stop or shutdown as an HA request (a hastart/hastop task that ends at
 * once, carried out by power_ha_carry_out), anything else k->direct. */
void power_route(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
		 const char *action, const struct power_kind *k, struct sim_resp *r);

/* The node's LRM carrying out an HA request for g HA_DELAY seconds after
 * req->now, as root@pam: action "start", "stop" or "shutdown" with k's
 * real task (nothing when g is already so, or a template to start). */
void power_ha_carry_out(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
			const char *action, const struct power_kind *k);

#endif
