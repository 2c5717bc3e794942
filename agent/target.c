/* target.c - the guest a guest command works on (target.h): find it,
 * read its config, load and expand its template, find its address, build
 * its SSH options. */
#include "target.h"

#include "inject.h"
#include "json.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void guest_target_free(struct guest_target *gt)
{
	free(gt->address);
	free(gt->address_error);
	free(gt->address_from);
	tmpl_inst_free(&gt->inst);
	tmpl_free(gt->tmpl);
	free(gt->tmpl_name);
	json_object_put(gt->config);
	guest_ref_clear(&gt->ref);
	memset(gt, 0, sizeof *gt);
}

static enum guest_addr_source addr_source(enum tmpl_addr a)
{
	return a == TMPL_ADDR_STATIC ? GUEST_ADDR_STATIC
	     : a == TMPL_ADDR_CLOUDINIT ? GUEST_ADDR_CONFIG : GUEST_ADDR_AGENT;
}

/* A host name or address, nothing a command line could take for an
 * option or split. */
static bool address_ok(const char *a)
{
	if (!a || !*a || *a == '-' || strlen(a) > 253)
		return false;
	for (const char *p = a; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return false;
	return true;
}

/* The address one stored job reached guest vmid at: --address (params),
 * the address up found (vars), or --var ip; NULL when it names none. */
static const char *job_address(const struct store_job *sj, int vmid, json_object **params,
			       json_object **vars, const char **how)
{
	*vars = sj->vars ? json_tokener_parse(sj->vars) : NULL;
	long long v = 0;
	if (!json_int(*vars, "vmid", &v) || v != vmid)
		return NULL;
	*params = sj->params ? json_tokener_parse(sj->params) : NULL;
	json_object *pv = NULL;
	const char *a = json_str(*params, "address");
	*how = "--address";
	if (!a && strcmp(sj->workflow, "up") == 0 && (a = json_str(*vars, "address")))
		*how = "the address it found";
	if (!a && json_object_object_get_ex(*params, "vars", &pv) && (a = json_str(pv, "ip")))
		*how = "--var ip";
	return a && address_ok(a) ? a : NULL;
}

/* The address guest vmid was last reached at by a job that ended done
 * (job_address; newest first, none from before a down of that VMID, which
 * was another guest): 1 with *addr and *from ("virtio job 12's --address")
 * malloc'd, 0 none (or the store cannot be read: said). */
static int remembered_address(struct store *st, int vmid, char **addr, char **from)
{
	*addr = *from = NULL;
	long long before = 0;
	bool more = true, gone = false;
	while (more && !gone && !*addr) {
		struct store_job *v = NULL;
		size_t n = 0;
		char *err = NULL;
		if (store_jobs_page(st, before, 200, &v, &n, &err) < 0) {
			log_warn("the job store: %s", err ? err : "cannot read it");
			free(err);
			return 0;
		}
		more = n == 200;
		for (size_t i = 0; i < n && !*addr; i++) {
			before = v[i].id;
			if (v[i].state != JOB_DONE)
				continue;
			json_object *params = NULL, *vars = NULL;
			const char *how = NULL;
			const char *a = job_address(&v[i], vmid, &params, &vars, &how);
			long long vv = 0;
			if (a) {
				*addr = strdup(a);
				*from = strprintf("%s job %lld's %s", v[i].workflow, v[i].id, how);
			} else if (strcmp(v[i].workflow, "down") == 0 && json_int(vars, "vmid", &vv) &&
				   vv == vmid) {
				gone = true; /* older jobs were about another guest */
			}
			json_object_put(params);
			json_object_put(vars);
			if (gone)
				break;
		}
		store_jobs_free(v, n);
	}
	if (*addr && *from)
		return 1;
	free(*addr);
	free(*from);
	*addr = *from = NULL;
	return 0;
}

/* The variables the template is expanded with: --var, then the guest's
 * name, VMID, node, ${storage} as up takes it (tmpl_vars_storage) and the
 * [ssh] public key; an address given stands for ${ip} when the template
 * declares it and --var does not set it. */
static int target_vars(const struct conf *conf, const struct target_req *req,
		       const struct guest_target *gt, const char *pubkey,
		       struct tmpl_kvlist *vars)
{
	char vmid[24];
	snprintf(vmid, sizeof vmid, "%d", gt->ref.vmid);
	for (size_t i = 0; req->vars && i < req->vars->n; i++)
		if (tmpl_kvlist_set(vars, req->vars->items[i].key, req->vars->items[i].value) < 0)
			return -1;
	if (req->address && tmpl_kvlist_get(&gt->tmpl->vars, "ip") && !tmpl_kvlist_get(vars, "ip") &&
	    tmpl_kvlist_set(vars, "ip", req->address) < 0)
		return -1;
	/* the guest's own name, also when it was given by VMID */
	if (tmpl_kvlist_set(vars, "name", gt->ref.name ? gt->ref.name : req->name) < 0 ||
	    tmpl_kvlist_set(vars, "vmid", vmid) < 0 ||
	    (gt->ref.node && tmpl_kvlist_set(vars, "node", gt->ref.node) < 0) ||
	    tmpl_vars_storage(gt->tmpl, vars, NULL, conf_disk_storage(conf)) < 0 ||
	    (pubkey && tmpl_kvlist_set(vars, "pubkey", pubkey) < 0))
		return -1;
	return 0;
}

/* Load and expand the template (-t, or the one the description names).
 * Without one to use and req->tmpl_optional: 0 with gt->tmpl NULL. */
static int target_template(const struct conf *conf, const struct target_req *req,
			   struct guest_target *gt, struct pve_error *err)
{
	json_object *d = NULL;
	if (req->tmpl_name)
		gt->tmpl_name = strdup(req->tmpl_name);
	else if (json_object_object_get_ex(gt->config, "description", &d))
		gt->tmpl_name = inject_template_from_description(json_object_get_string(d));
	if (req->tmpl_name && !gt->tmpl_name)
		return pve_error_oom(err);
	if (!gt->tmpl_name) {
		if (req->tmpl_optional)
			return 0;
		pve_error_set(err, PVE_ERR_CONFIG,
			      "%s was not made from a pvagent template: name one with -t TEMPLATE",
			      req->name);
		return -1;
	}
	char *msg = NULL;
	struct tmpl *t = NULL;
	int lr = tmpl_load((const char *const *)conf->paths.templates, gt->tmpl_name, &t, &msg);
	gt->tmpl = t;
	if (lr < 0) {
		if (req->tmpl_optional && !req->tmpl_name) {
			log_warn("%s: template %s (from the description) not used: %s", req->name,
				 gt->tmpl_name, msg ? msg : "cannot load it");
			free(msg);
			free(gt->tmpl_name);
			gt->tmpl_name = NULL;
			gt->tmpl = NULL;
			return 0;
		}
		pve_error_set(err, PVE_ERR_CONFIG, "%s", msg ? msg : "cannot load the template");
		free(msg);
		return -1;
	}
	char *pubkey = conf_read_pubkey(conf); /* for ${pubkey} */
	struct tmpl_kvlist vars = {0};
	int rc = 0;
	if (target_vars(conf, req, gt, pubkey, &vars) < 0) {
		rc = pve_error_oom(err);
	} else if (tmpl_expand(gt->tmpl, &vars, &gt->inst, &msg) < 0) {
		pve_error_set(err, PVE_ERR_CONFIG, "%s", msg ? msg : "out of memory");
		rc = -1;
	}
	free(msg);
	free(pubkey);
	tmpl_kvlist_free(&vars);
	return rc;
}

/* The address, none given: as the template says (the guest agent, the
 * config, its ${ip}), else mem, the one an earlier job reached it at (from
 * says which; both taken). 0, or -1 with err. */
static int find_address(struct pve *c, struct guest_target *gt, const struct target_req *req,
			char *mem, char *from, struct pve_error *err)
{
	struct guest_wait w = {
		.address_timeout_s = req->address_timeout_s > 0 ? req->address_timeout_s : 60,
	};
	enum guest_addr_source src = gt->tmpl ? addr_source(gt->tmpl->guest.address)
					      : GUEST_ADDR_AGENT;
	int rc = guest_address(c, &gt->ref, src, gt->tmpl ? gt->inst.guest.ip.value : NULL, &w,
			       &gt->address, err);
	if (rc < 0)
		gt->address = NULL;
	if (rc < 0 && mem) {
		log_info("%s: address %s, as %s gave it (%s)", req->name, mem, from,
			 err->message ? err->message : "PVE cannot tell it");
		pve_error_clear(err);
		gt->address = mem;
		gt->address_from = from;
		return 0;
	}
	if (rc == 0 && mem && gt->address && strcmp(gt->address, mem) == 0) {
		gt->address_from = from; /* the template's ${ip}: mem */
		from = NULL;
	}
	free(mem);
	free(from);
	if (rc < 0) {
		char *m = pve_error_format(err);
		pve_error_set(err, err->kind, "%s; give the address with --address A",
			      m ? m : "its address is unknown");
		free(m);
		return -1;
	}
	return 0;
}

int guest_target_open(struct pve *c, const struct conf *conf, const struct target_req *req,
		      struct guest_target *gt, struct pve_error *err)
{
	memset(gt, 0, sizeof *gt);
	if (req->address && !address_ok(req->address)) {
		pve_error_set(err, PVE_ERR_CONFIG, "bad --address '%s'", req->address);
		return -1;
	}
	int found = guest_find(c, req->name, &gt->ref, err);
	if (found < 0 || (found == 1 && guest_get_config(c, &gt->ref, &gt->config, err) < 0))
		return -1;
	if (found == 0)
		return guest_not_found(req->name, err);
	if (req->qemu_only && gt->ref.type != GUEST_QEMU) {
		pve_error_set(err, PVE_ERR_CONFIG, "%s is a container: containers have no "
			      "emulated disks", req->name);
		return -1;
	}
	/* no --address: the one an earlier job reached it at, for the
	 * template's ${ip} and where PVE cannot tell */
	char *mem = NULL, *mem_from = NULL;
	if (!req->address && req->memory)
		remembered_address(req->memory, gt->ref.vmid, &mem, &mem_from);
	struct target_req r = *req;
	if (!r.address)
		r.address = mem;
	int rc = target_template(conf, &r, gt, err);
	int cc = rc == 0 && req->config_check ? req->config_check(c, gt, req->check_arg, err) : 0;
	if (rc < 0 || cc != 0) {
		free(mem);
		free(mem_from);
		return rc < 0 || cc < 0 ? -1 : 0;
	}
	if (req->address) {
		gt->address = strdup(req->address);
		if (!gt->address)
			return pve_error_oom(err);
	} else if (find_address(c, gt, req, mem, mem_from, err) < 0) {
		if (!req->address_optional || !(gt->address_error = pve_error_format(err)))
			return -1;
		pve_error_clear(err);
		return 0;
	}
	if (inject_ssh_opts(conf, gt->tmpl ? &gt->inst : NULL, gt->address, &gt->ssh) < 0) {
		pve_error_set(err, PVE_ERR_CONFIG, "set [ssh] known_hosts (or [paths] state) in %s",
			      conf->path ? conf->path : "pvagent.conf");
		return -1;
	}
	return 0;
}

/* ---- waiting for SSH ------------------------------------------------------------------ */

bool ssh_wait_retryable(const struct ssh_error *e)
{
	return e->kind == SSH_ERR_CONNECT || e->kind == SSH_ERR_TIMEOUT;
}

int ssh_wait_connect(const struct ssh_opts *so, const struct ssh_wait *w,
		     struct ssh_session **out, struct ssh_error *e, unsigned *attempts)
{
	const struct pve_clock *clk = w->clock;
	double poll = w->poll_s > 0 ? w->poll_s : 1;
	long base_ms = so->connect_timeout_ms > 0 ? so->connect_timeout_ms : 30000;
	double t0 = pve_clock_now(clk);
	unsigned n = 0;
	*out = NULL;
	for (;;) {
		struct ssh_opts a = *so;
		if (w->limit_s > 0) {
			double left = w->limit_s - (pve_clock_now(clk) - t0);
			long ms = left > 1 ? (long)(left * 1000) : 1000;
			a.connect_timeout_ms = ms < base_ms ? ms : base_ms;
		}
		ssh_error_clear(e);
		n++;
		if (ssh_connect(&a, out, e) == 0)
			break;
		*out = NULL;
		if (!ssh_wait_retryable(e) || pve_clock_now(clk) - t0 + poll > w->limit_s)
			break;
		if (w->on_retry)
			w->on_retry(w->ctx, pve_clock_now(clk) - t0, n, e);
		pve_clock_sleep(clk, poll);
	}
	if (attempts)
		*attempts = n;
	return *out ? 0 : -1;
}

/* ---- as a job's params -------------------------------------------------------------- */

int target_params_add(const struct job_params_decl *d, json_object *p,
		      const struct target_req *req)
{
	return job_param_set_str(d, p, "template", req->tmpl_name) < 0 ||
			       job_param_set_str(d, p, "address", req->address) < 0 ||
			       job_param_set_kv(d, p, "vars", req->vars) < 0
		       ? -1 : 0;
}

int guest_target_open_job(struct job *j, bool tmpl_optional, bool qemu_only,
			  struct guest_target *gt, struct tmpl_kvlist *vars)
{
	const struct target_req how = {.tmpl_optional = tmpl_optional, .qemu_only = qemu_only};
	return guest_target_open_job_as(j, &how, gt, vars);
}

int guest_target_open_job_as(struct job *j, const struct target_req *how,
			     struct guest_target *gt, struct tmpl_kvlist *vars)
{
	struct pve_error *err = job_err(j);
	const struct conf *cf = job_env(j)->conf;
	/* the params by the workflow's table (checked before open) */
	struct target_req treq = {.name = job_subject(j), .vars = vars,
				  .tmpl_name = job_param_str(j, "template"),
				  .address = job_param_str(j, "address")};
	if (job_param_kv(j, "vars", vars) < 0)
		return pve_error_oom(err);
	treq.tmpl_optional = how->tmpl_optional;
	treq.qemu_only = how->qemu_only;
	treq.address_optional = how->address_optional;
	treq.address_timeout_s = how->address_timeout_s;
	treq.config_check = how->config_check;
	treq.check_arg = how->check_arg;
	treq.memory = job_env(j)->store;
	if (!cf || !job_pve(j))
		return pve_error_set(err, PVE_ERR_CONFIG, "%s needs the configuration and a PVE "
				     "connection", job_wf(j)->name), -1;
	if (guest_target_open(job_pve(j), cf, &treq, gt, err) < 0)
		return -1;
	if (job_set_guest(j, gt->ref.vmid, gt->ref.node) < 0 ||
	    (gt->ref.name && job_set_str(j, "name", gt->ref.name) < 0))
		return pve_error_oom(err);
	return 0;
}
