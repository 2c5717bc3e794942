/* up_check.c - an up job's params and the checks an up request passes
 * before any request to PVE (up_check.h): the params written
 * (wf_up_params, by up's table), guest names, --set keys and values
 * against the PVE schema, the template expanded for each name, the
 * address pool. The CLI makes the checks before it runs or submits;
 * pvagentd makes them again on what a peer submitted (up_check_params),
 * so a raw socket peer gets the same refusals. Nothing here talks to PVE
 * or a guest: pvagentd links it. */
#include "up_check.h"

#include "guestname.h"
#include "json.h"
#include "pvecheck.h"
#include "pvekeys.h"
#include "util.h"
#include "wf_params.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- params ------------------------------------------------------------------------ */

json_object *wf_up_params(const struct up_request *req, const char *name)
{
	const struct job_params_decl *d = &wf_up_params_decl;
	json_object *o = json_object_new_object();
	if (!o || job_param_set_str(d, o, "name", name) < 0 ||
	    job_param_set_str(d, o, "template", req->tmpl->name) < 0 ||
	    job_param_set_str(d, o, "template_path", req->tmpl->path) < 0 ||
	    job_param_set_str(d, o, "node", req->node) < 0 ||
	    job_param_set_str(d, o, "storage", req->storage) < 0 ||
	    job_param_set_str(d, o, "pubkey", req->pubkey) < 0 ||
	    job_param_set_str(d, o, "pool", req->pool ? req->pool : req->tmpl->guest.pool) < 0 ||
	    job_param_set_int(d, o, "vmid", req->vmid) < 0 ||
	    job_param_set_int(d, o, "vmid_min", req->vmid_min) < 0 ||
	    job_param_set_int(d, o, "vmid_max", req->vmid_max) < 0 ||
	    job_param_set_bool(d, o, "no_start", req->no_start) < 0 ||
	    job_param_set_bool(d, o, "full", req->full) < 0 ||
	    job_param_set_bool(d, o, "no_inject", req->no_inject) < 0 ||
	    job_param_set_bool(d, o, "retemplate", req->retemplate) < 0 ||
	    job_param_set_bool(d, o, "dry_run", req->dry_run) < 0 ||
	    job_param_set_num(d, o, "ssh_wait_s", req->ssh_wait_s) < 0 ||
	    (req->no_wait_ssh && job_param_set_bool(d, o, "no_wait_ssh", true) < 0) ||
	    job_param_set_kv(d, o, "sets", req->sets) < 0 ||
	    job_param_set_kv(d, o, "vars", req->vars) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* ---- checks ------------------------------------------------------------------------ */

bool wf_up_wants_inject(size_t n_files, bool no_inject, bool no_start)
{
	return n_files > 0 && !no_inject && !no_start;
}

/* Every value as it will be sent, checked against the PVE schema before
 * any request: --set KEY=VAL, the size to grow to, and the template
 * expanded for each name (the VMID and node are not known yet: a VMID and
 * node of the right form stand in for them). */
static int check_values(const struct up_request *req, const struct conf *conf,
			enum pvekey_kind kk, struct pve_error *err)
{
	static const struct pvekey_val size_val = {.type = PVEKEY_T_STRING, .format = "disk-size"};
	const struct tmpl_kvlist *lists[] = {req->sets, req->vars};
	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; lists[l] && i < lists[l]->n; i++)
			for (const char *p = lists[l]->items[i].value; *p; p++)
				if ((unsigned char)*p < 0x20 || *p == 0x7f) {
					pve_error_set(err, PVE_ERR_CONFIG, "%s %s: the value holds a "
						      "control character (0x%02x)",
						      l ? "--var" : "--set", lists[l]->items[i].key,
						      (unsigned)(unsigned char)*p);
					return -1;
				}
	for (size_t i = 0; req->sets && i < req->sets->n; i++) {
		const struct tmpl_kv *kv = &req->sets->items[i];
		char *why = NULL;
		int r = strcmp(kv->key, "size") == 0 ? pvecheck_value(&size_val, kv->value, &why)
						     : pvecheck_param(0, kk, kv->key, kv->value, &why);
		if (r < 0)
			return pve_error_oom(err);
		if (r > 0) {
			pve_error_set(err, PVE_ERR_CONFIG, "--set %s=%s: %s", kv->key, kv->value, why);
			free(why);
			return -1;
		}
	}
	char id[24];
	snprintf(id, sizeof id, "%d", req->vmid > 0 ? req->vmid : req->vmid_min > 0 ? req->vmid_min : 100);
	for (size_t i = 0; i < req->n_names; i++) {
		struct tmpl_kvlist vars = {0};
		struct tmpl_inst inst;
		char *msg = NULL;
		int r = 0;
		for (size_t j = 0; req->vars && j < req->vars->n && r == 0; j++)
			r = tmpl_kvlist_set(&vars, req->vars->items[j].key, req->vars->items[j].value);
		if (r == 0)
			r = tmpl_kvlist_set(&vars, "name", req->names[i]);
		if (r == 0)
			r = tmpl_kvlist_set(&vars, "vmid", id);
		if (r == 0)
			r = tmpl_kvlist_set(&vars, "node", req->node ? req->node : "node");
		if (r == 0)
			r = tmpl_vars_storage(req->tmpl, &vars, req->storage,
					      conf_disk_storage(conf));
		if (r == 0 && req->pubkey)
			r = tmpl_kvlist_set(&vars, "pubkey", req->pubkey);
		if (r < 0) {
			tmpl_kvlist_free(&vars);
			return pve_error_oom(err);
		}
		r = tmpl_expand(req->tmpl, &vars, &inst, &msg);
		tmpl_kvlist_free(&vars);
		if (r < 0) {
			pve_error_set(err, PVE_ERR_CONFIG, "%s", msg ? msg : "out of memory");
			free(msg);
			return -1;
		}
		tmpl_inst_free(&inst);
	}
	return 0;
}

/* The pool up gives addresses from (--pool, else the template's [guest]
 * pool): it must exist, the guests be VMs, and ipconfig0 not be set by
 * --set as well. 0, or -1 with err (PVE_ERR_CONFIG). */
static int check_pool(const struct up_request *req, const struct conf *conf,
		      struct pve_error *err)
{
	const char *name = req->pool ? req->pool : req->tmpl->guest.pool;
	const char *from = req->pool ? "--pool" : "the template's [guest] pool";
	if (!name)
		return 0;
	if (!conf || !conf_pool(conf, name)) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "%s %s: no [pool \"%s\"] in the configuration%s%s", from, name, name,
			      conf && conf->path ? " " : "", conf && conf->path ? conf->path : "");
		return -1;
	}
	if (req->tmpl->kind != TMPL_QEMU) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "%s %s: only VMs take a pool address (cloud-init's ipconfig0); "
			      "template %s makes containers",
			      from, name, req->tmpl->name ? req->tmpl->name : "?");
		return -1;
	}
	if (req->sets && tmpl_kvlist_get(req->sets, "ipconfig0")) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "--set ipconfig0: the address comes from pool %s (%s); give one or "
			      "the other",
			      name, from);
		return -1;
	}
	return 0;
}

/* Keys PVE lets only root@pam itself set (pvecheck_root_only), from
 * --set or the template's [pve], refused up front, dry run included, with
 * PVE's reason, unless the configuration logs in as root@pam with its
 * password (an API token, root@pam's too, is refused them). */
static int check_root_only(const struct up_request *req, const struct conf *c,
			   enum pvekey_kind kk, struct pve_error *err)
{
	if (!c || (!c->pve.token_id && c->pve.user && strcmp(c->pve.user, "root@pam") == 0))
		return 0;
	const struct tmpl_kvlist *lists[] = {req->sets, &req->tmpl->pve};
	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; lists[l] && i < lists[l]->n; i++) {
			const char *k = lists[l]->items[i].key;
			if (strcmp(k, "size") == 0)
				continue; /* pvagent's own: the boot disk's growth */
			char *why = NULL;
			int r = pvecheck_root_only(kk, k, &why);
			if (r < 0)
				return pve_error_oom(err);
			if (r == 0)
				continue;
			pve_error_set(err, PVE_ERR_CONFIG, "%s %s: %s (PVE refuses it to %s; set it "
				      "as root@pam, or leave it out)",
				      l ? "template [pve]" : "--set", k, why,
				      c->pve.token_id ? c->pve.token_id
						      : c->pve.user ? c->pve.user : "this user");
			free(why);
			return -1;
		}
	return 0;
}

int up_request_check(const struct up_request *req, const struct conf *conf, struct pve_error *err)
{
	if (!req->tmpl || !req->n_names) {
		pve_error_set(err, PVE_ERR_CONFIG, "up: no template or no names");
		return -1;
	}
	for (size_t i = 0; i < req->n_names; i++) {
		const char *why;
		if (!guest_name_valid(req->names[i], &why)) {
			pve_error_set(err, PVE_ERR_CONFIG, "guest name '%s': %s", req->names[i], why);
			return -1;
		}
		if (guest_arg_is_vmid(req->names[i], NULL)) {
			pve_error_set(err, PVE_ERR_CONFIG, "guest name '%s': all digits would read as "
				      "a VMID; use a name with a letter (and --vmid ID to choose the VMID)",
				      req->names[i]);
			return -1;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcasecmp(req->names[i], req->names[j]) == 0) {
				pve_error_set(err, PVE_ERR_CONFIG, "guest name '%s' given twice",
					      req->names[i]);
				return -1;
			}
		}
	}
	if (req->vmid > 0 && req->n_names > 1) {
		pve_error_set(err, PVE_ERR_CONFIG, "--vmid works with one name only");
		return -1;
	}
	if ((req->vmid_min > 0) != (req->vmid_max > 0) || req->vmid_min > req->vmid_max) {
		pve_error_set(err, PVE_ERR_CONFIG, "bad VMID range %d-%d", req->vmid_min,
			      req->vmid_max);
		return -1;
	}
	if (wf_up_wants_inject(req->tmpl->n_files, req->no_inject, req->no_start) &&
	    (!conf || !conf->ssh.known_hosts)) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "template %s has guest files to inject over SSH: %s (or skip "
			      "inject)",
			      req->tmpl->name ? req->tmpl->name : "?",
			      conf ? "set [ssh] known_hosts" : "no SSH settings given");
		return -1;
	}
	enum pvekey_kind kk = req->tmpl->kind == TMPL_QEMU  ? PVEKEY_QEMU
			      : req->tmpl->kind == TMPL_LXC ? PVEKEY_LXC
							    : PVEKEY_OPENVZ;
	for (size_t i = 0; req->sets && i < req->sets->n; i++) {
		const char *k = req->sets->items[i].key, *v = req->sets->items[i].value;
		size_t d = strspn(v, "0123456789");
		if (strcmp(k, "size") == 0) {
			/* a size without its unit would be bytes: never meant (any
			 * other bad size is the schema check's) */
			if (d > 0 && !v[d]) {
				pve_error_set(err, PVE_ERR_CONFIG, "--set size=%s: give the size with "
					      "its unit, K, M, G or T (e.g. %sG)", v, v);
				return -1;
			}
			continue;
		}
		if (strcmp(k, "memory") == 0 && d > 0 && v[d] && isalpha((unsigned char)v[d])) {
			pve_error_set(err, PVE_ERR_CONFIG, "--set memory=%s: memory is a number of "
				      "MiB, without a unit (2048 for 2 GiB)", v);
			return -1;
		}
		static const char *const refused[] = {"vmid", "node", "delete", "digest", "force",
						      "skiplock", "revert"};
		bool is_refused = false;
		for (size_t r = 0; r < sizeof refused / sizeof *refused; r++)
			is_refused = is_refused || strcmp(k, refused[r]) == 0;
		if (!pvekey_lookup(kk, k) || is_refused) {
			pve_error_set(err, PVE_ERR_CONFIG, "--set %s: not a %s config key", k,
				      tmpl_kind_name(req->tmpl->kind));
			return -1;
		}
	}
	if (check_root_only(req, conf, kk, err) < 0 || check_values(req, conf, kk, err) < 0 ||
	    check_pool(req, conf, err) < 0)
		return -1;
	return 0;
}

int up_check_params(const char *name, json_object *params, const struct conf *conf,
		       struct pve_error *err)
{
	const char *path = json_str(params, "template_path");
	struct tmpl *t = NULL;
	struct tmpl_kvlist sets = {0}, vars = {0};
	char *msg = NULL;
	if (!path || tmpl_load_file(path, &t, &msg) < 0) {
		pve_error_set(err, PVE_ERR_CONFIG, "up %s: template %s: %s", name,
			      path ? path : "(none)", msg ? msg : "no template_path");
		free(msg);
		return -1;
	}
	int rc = -1;
	if (job_params_kv(params, "sets", &sets) < 0 || job_params_kv(params, "vars", &vars) < 0) {
		pve_error_set(err, PVE_ERR_CONFIG, "up %s: \"sets\" and \"vars\" are arrays of "
			      "[key, value] strings", name);
		goto out;
	}
	const char *names[] = {name};
	struct up_request req = {
		.names = names,
		.n_names = 1,
		.tmpl = t,
		.node = json_str(params, "node"),
		.storage = json_str(params, "storage"),
		.vmid = json_int0(params, "vmid"),
		.vmid_min = json_int0(params, "vmid_min"),
		.vmid_max = json_int0(params, "vmid_max"),
		.sets = &sets,
		.vars = &vars,
		.pubkey = json_str(params, "pubkey"),
		.no_start = json_flag(params, "no_start"),
		.pool = json_str(params, "pool"),
		.no_inject = json_flag(params, "no_inject"),
	};
	rc = up_request_check(&req, conf, err);
out:
	tmpl_kvlist_free(&sets);
	tmpl_kvlist_free(&vars);
	tmpl_free(t);
	return rc;
}
