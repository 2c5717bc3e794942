/* target.h - the guest a guest command (inject, virtio, bench) works on
 * over SSH (target.c): found by name, its PVE config read, its template
 * (-t, or the one its description names) loaded and expanded for it, its
 * address (given, or found as the template says), and the SSH options
 * from the configuration's [ssh] and the template's [guest]. */
#ifndef PVAGENT_TARGET_H
#define PVAGENT_TARGET_H

#include "conf.h"
#include "err.h"
#include "guest.h"
#include "pve.h"
#include "ssh.h"
#include "tmpl.h"

#include <json-c/json.h>
#include <stdbool.h>

struct guest_target;

struct target_req {
	const char *name;               /* the guest's name, or its VMID */
	const char *tmpl_name;          /* -t TEMPLATE, or NULL: the one the
					   description names */
	const char *address;            /* --address, or NULL: look it up */
	const struct tmpl_kvlist *vars; /* --var K=V (may be NULL) */
	bool tmpl_optional;             /* without a template, go on with the
					   [ssh] settings alone */
	double address_timeout_s;       /* looking it up; 0: 60 */
	bool qemu_only;                 /* a container is a usage error */
	/* Run on the config before the address is looked up (may be NULL),
	 * with check_arg: 1 the command needs no address (gt->address stays
	 * NULL, no SSH options), 0 go on, -1 stop with *err. */
	int (*config_check)(struct pve *c, const struct guest_target *gt, void *check_arg,
			    struct pve_error *err);
	void *check_arg;
};

struct guest_target {
	struct guest_ref ref;
	json_object *config;            /* the guest's PVE config */
	char *tmpl_name;                /* or NULL (no template) */
	struct tmpl *tmpl;              /* or NULL (no template) */
	struct tmpl_inst inst;          /* tmpl expanded for this guest */
	char *address;
	struct ssh_opts ssh;            /* borrows from conf, inst and address */
};

/* Fill *gt for req. An address given satisfies the template's address
 * variable (${ip}, which its [guest] ip names) when the template declares
 * it and --var does not set it.
 * 0, or -1 with *err: PVE_ERR_CONFIG for a bad request or configuration
 * (bad address, no template to use, a template that does not load or
 * expand, no known_hosts), PVE_ERR_NOT_FOUND for no such guest, PVE's
 * errors otherwise. *gt is filled either way (guest_target_free). */
int guest_target_open(struct pve *c, const struct conf *conf, const struct target_req *req,
		      struct guest_target *gt, struct pve_error *err);
void guest_target_free(struct guest_target *gt);

#endif
