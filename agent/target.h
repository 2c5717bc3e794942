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
#include "job.h"
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
	struct store *memory;           /* or NULL: without --address, the
					   address an earlier job that ended
					   done reached the guest at (its
					   --address, --var ip, or what up
					   found) stands for ${ip} and is used
					   where PVE cannot tell the address */
	const struct tmpl_kvlist *vars; /* --var K=V (may be NULL) */
	bool tmpl_optional;             /* without a template, go on with the
					   [ssh] settings alone */
	double address_timeout_s;       /* looking it up; 0: 60 */
	bool qemu_only;                 /* a container is a usage error */
	bool address_optional;          /* an address not found is no error:
					   gt->address stays NULL (no SSH
					   options), gt->address_error says
					   why (a dry run shows what it can) */
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
	char *address_error;            /* address_optional and none found:
					   why, else NULL */
	char *address_from;             /* remembered: which job gave it
					   ("virtio job 12's --address"), else
					   NULL */
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

/* Waiting for a guest to answer SSH (after its start, a reboot, a
 * switch of its disks): the one policy of up's inject step and virtio.
 * Refused and timed-out connections are tried again every poll_s until
 * limit_s has passed since the first attempt, each attempt's connect
 * timeout cut to the time left (at least 1 s); a host key or
 * authentication failure ends the wait at once. limit_s <= 0: one
 * attempt, with the options' own connect timeout. */
struct ssh_wait {
	double limit_s;
	double poll_s;                  /* 0: 1 */
	const struct pve_clock *clock;  /* NULL: real time */
	/* after each failed attempt that is tried again (may be NULL):
	 * seconds waited so far, attempts made, the last error */
	void (*on_retry)(void *ctx, double waited_s, unsigned attempts,
			 const struct ssh_error *e);
	void *ctx;
};
/* Is an SSH error one the wait tries again (refused, timed out)? */
bool ssh_wait_retryable(const struct ssh_error *e);
/* Connect as w says: 0 with *out, or -1 with *e (the last attempt's
 * error); *attempts (may be NULL) says how many were made. */
int ssh_wait_connect(const struct ssh_opts *so, const struct ssh_wait *w,
		     struct ssh_session **out, struct ssh_error *e, unsigned *attempts);

/* A job's params for a guest command (the members of req a user gives:
 * "template", "address", "vars" {K: V}), added to p by d's table (the
 * guest command's workflow's: job_params.h). 0, or -1 on OOM. */
int target_params_add(const struct job_params_decl *d, json_object *p,
		      const struct target_req *req);
/* A guest command's job open (job.h): the guest the job's params ask for
 * (its params "template", "address" and "vars" on its subject, with
 * tmpl_optional and qemu_only), opened with the env's conf and the job's PVE client; the
 * job's guest set (job_set_guest) and its vars' "name" (the guest's name,
 * also when the subject is a VMID). 0, or -1 with job_err(j) set. gt and
 * vars are the caller's to free, also on failure. */
int guest_target_open_job(struct job *j, bool tmpl_optional, bool qemu_only,
			  struct guest_target *gt, struct tmpl_kvlist *vars);
/* The same with what a workflow adds to the params' request: how's
 * tmpl_optional, qemu_only, address_optional (a dry run that shows what
 * it can without the guest's address), address_timeout_s, config_check
 * and check_arg (its other members are not used). */
int guest_target_open_job_as(struct job *j, const struct target_req *how,
			     struct guest_target *gt, struct tmpl_kvlist *vars);

#endif
