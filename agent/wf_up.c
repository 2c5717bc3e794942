/* wf_up.c - the `up` workflow on the job engine: one job per guest name,
 * as a table of steps (find, clone or create, config, resize, start,
 * address, inject). What each step learns (VMID, node, changes, address,
 * inject's summary) goes into the job's vars, so that a resumed job
 * continues where it stopped and reports the whole run. wf_up.h
 * documents the behaviour; the CLI (agent/cli/cli_up.c) turns requests
 * into these jobs. */
#include "wf_up.h"
#include "wf_params.h"

#include "cfgdiff.h"

#include "json.h"
#include "log.h"
#include "pvecfg.h"
#include "pvekeys.h"
#include "pveperm.h"
#include "pool_claim.h"
#include "task.h"
#include "util.h"
#include "up_check.h"
#include "target.h"
#include "wf_inject.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEF_SSH_WAIT_S 300.0

struct up_ctx {
	struct up_result own_res;    /* wf_result_take takes it */
	struct up_result *res;       /* &own_res, once opened */
	struct tmpl *tmpl;           /* loaded from its params */
	const struct conf *conf;
	struct tmpl_kvlist sets, vars;
	const char *node, *storage, *pubkey; /* borrowed from the params */
	int vmid, vmid_min, vmid_max;
	bool no_start, full, no_inject, retemplate, dry_run, no_wait_ssh;
	double ssh_wait_s;
	enum guest_type t;
	struct guest_ref g;          /* the guest, once known */
	struct guest_list listing;   /* the find step's (this run only) */
	bool have_listing;
	const struct ip_pool *pool;  /* the pool the address comes from, or NULL */
	struct pool_ip pool_ip;      /* its address, once claimed (vars: pool_ip) */
	bool have_ip;
};


/* ---- result and vars ------------------------------------------------------------------- */

static int dup_into(char **dst, const char *src)
{
	free(*dst);
	*dst = src ? strdup(src) : NULL;
	return src && !*dst ? -1 : 0;
}

/* The result as the vars say (a resumed job reports the whole run). */
static int result_from_vars(struct job *j, struct up_ctx *u)
{
	json_object *v = job_vars(j);
	struct up_result *r = u->res;
	r->vmid = json_int0(v, "vmid");
	r->type = u->t;
	r->claims = json_int0(v, "claims");
	if (dup_into(&r->node, json_str(v, "node")) < 0 ||
	    dup_into(&r->address, json_str(v, "address")) < 0 ||
	    dup_into(&r->pending, json_str(v, "pending")) < 0)
		return -1;
	json_object *d;
	if (!r->n_diff && json_object_object_get_ex(v, "diff", &d) &&
	    json_object_is_type(d, json_type_array)) {
		size_t n = json_object_array_length(d);
		r->diff = calloc(n ? n : 1, sizeof *r->diff);
		if (!r->diff)
			return -1;
		for (size_t i = 0; i < n; i++) {
			r->diff[i] = strdup(json_object_get_string(json_object_array_get_idx(d, i)));
			if (!r->diff[i])
				return -1;
			r->n_diff++;
		}
	}
	json_object *inj;
	if (json_object_object_get_ex(v, "inject", &inj)) {
		r->inject.ran = true;
		r->inject.status = (enum inject_status)json_int0(inj, "status");
		if (job_outcome_parse(json_str(inj, "outcome"), &r->inject.outcome) < 0)
			r->inject.outcome = JOB_OUT_FAILED;
		if (dup_into(&r->inject.summary, json_str(inj, "summary")) < 0)
			return -1;
	}
	return 0;
}

static int add_diff_line(struct job *j, struct up_ctx *u, const struct cfg_change *ch)
{
	struct up_result *r = u->res;
	char **nd = realloc(r->diff, (r->n_diff + 1) * sizeof *nd);
	if (!nd)
		return -1;
	r->diff = nd;
	const char *old = ch->old_value ? ch->old_value : "(unset)";
	/* never show secrets; sshkeys as the keys read, not as PVE encodes them */
	bool secret = strcmp(ch->key, "cipassword") == 0 || strcmp(ch->key, "password") == 0;
	bool keys = strcmp(ch->key, "sshkeys") == 0;
	char *o = keys && ch->old_value ? str_pct_decode_trim(old) : NULL;
	char *n = keys && ch->new_value ? str_pct_decode_trim(ch->new_value) : NULL;
	r->diff[r->n_diff] = strprintf("%s: %s -> %s", ch->key, secret ? "***" : o ? o : old,
				       secret ? "***" : n ? n : ch->new_value);
	free(o);
	free(n);
	if (!r->diff[r->n_diff])
		return -1;
	r->n_diff++;
	json_object *d;
	if (!json_object_object_get_ex(job_vars(j), "diff", &d)) {
		d = json_object_new_array();
		if (!d)
			return -1;
		json_object_object_add(job_vars(j), "diff", d);
	}
	json_object_array_add(d, json_object_new_string(r->diff[r->n_diff - 1]));
	job_diff(j, r->diff[r->n_diff - 1]);
	return 0;
}

/* The guest is known: ctx, result, vars and event identity. */
static int know_guest(struct job *j, struct up_ctx *u, struct guest_ref *g)
{
	if (&u->g != g) {
		guest_ref_clear(&u->g);
		u->g = *g;
		memset(g, 0, sizeof *g);
	}
	u->res->vmid = u->g.vmid;
	u->res->type = u->g.type;
	if (dup_into(&u->res->node, u->g.node) < 0 || job_set_guest(j, u->g.vmid, u->g.node) < 0)
		return pve_error_oom(job_err(j));
	return 0;
}

/* ---- open and close ---------------------------------------------------------------------- */

static int up_open(struct job *j, void *ctx)
{
	struct up_ctx *u = ctx;
	json_object *v = job_vars(j);
	struct pve_error *err = job_err(j);
	u->conf = job_env(j)->conf;
	u->res = &u->own_res;
	if (!(u->res->name = strdup(job_subject(j))))
		return pve_error_oom(err);
	const char *path = job_param_str(j, "template_path");
	char *msg = NULL;
	if (!path || tmpl_load_file(path, &u->tmpl, &msg) < 0) {
		pve_error_set(err, PVE_ERR_CONFIG, "template %s: %s", path ? path : "(none)",
			      msg ? msg : "cannot load it");
		free(msg);
		return -1;
	}
	if (job_param_kv(j, "sets", &u->sets) < 0 || job_param_kv(j, "vars", &u->vars) < 0)
		return pve_error_oom(err);
	u->node = job_param_str(j, "node");
	u->storage = job_param_str(j, "storage");
	u->pubkey = job_param_str(j, "pubkey");
	u->vmid = (int)job_param_int(j, "vmid");
	u->vmid_min = (int)job_param_int(j, "vmid_min");
	u->vmid_max = (int)job_param_int(j, "vmid_max");
	u->no_start = job_param_bool(j, "no_start");
	u->full = job_param_bool(j, "full");
	u->no_inject = job_param_bool(j, "no_inject");
	u->retemplate = job_param_bool(j, "retemplate");
	u->dry_run = job_param_bool(j, "dry_run");
	u->no_wait_ssh = job_param_bool(j, "no_wait_ssh");
	u->ssh_wait_s = job_param_num(j, "ssh_wait_s");
	const char *type = json_str(v, "type");
	if (type && guest_type_parse(type, &u->t) < 0)
		type = NULL;
	if (json_int0(v, "vmid")) {
		/* a resumed job: the guest its earlier run found or made */
		u->g.vmid = json_int0(v, "vmid");
		u->g.type = u->t;
		if (dup_into(&u->g.node, json_str(v, "node")) < 0 ||
		    dup_into(&u->g.name, job_subject(j)) < 0)
			return pve_error_oom(err);
		job_set_guest(j, u->g.vmid, u->g.node);
	}
	const char *pool = job_param_str(j, "pool");
	if (pool && !(u->pool = u->conf ? conf_pool(u->conf, pool) : NULL)) {
		pve_error_set(err, PVE_ERR_CONFIG, "pool %s: no [pool \"%s\"] in the configuration",
			      pool, pool);
		return -1;
	}
	if (u->pool && json_str(v, "pool_ip"))
		u->have_ip = pool_ip_parse(json_str(v, "pool_ip"), &u->pool_ip) == 0;
	if (json_flag(v, "created"))
		job_set_left(j, "VM %d on %s was created and is left as it is", u->g.vmid,
			     u->g.node ? u->g.node : "?");
	return result_from_vars(j, u) < 0 ? pve_error_oom(err) : 0;
}

static void up_close(struct job *j, void *ctx)
{
	struct up_ctx *u = ctx;
	up_result_free(&u->own_res);
	tmpl_free(u->tmpl);
	tmpl_kvlist_free(&u->sets);
	tmpl_kvlist_free(&u->vars);
	guest_ref_clear(&u->g);
	guest_list_free(&u->listing);
}

/* ---- template expansion -------------------------------------------------------------------- */

static int build_vars(struct up_ctx *u, const char *name, int vmid, const char *node,
		      struct tmpl_kvlist *vars)
{
	memset(vars, 0, sizeof *vars);
	for (size_t i = 0; i < u->vars.n; i++)
		if (tmpl_kvlist_set(vars, u->vars.items[i].key, u->vars.items[i].value) < 0)
			return -1;
	char id[24];
	snprintf(id, sizeof id, "%d", vmid);
	if (tmpl_kvlist_set(vars, "name", name) < 0 || tmpl_kvlist_set(vars, "vmid", id) < 0)
		return -1;
	if (node && tmpl_kvlist_set(vars, "node", node) < 0)
		return -1;
	if (tmpl_vars_storage(u->tmpl, vars, u->storage, conf_disk_storage(u->conf)) < 0)
		return -1;
	if (u->pubkey && tmpl_kvlist_set(vars, "pubkey", u->pubkey) < 0)
		return -1;
	return 0;
}

static int expand(struct up_ctx *u, const char *name, int vmid, const char *node,
		  struct tmpl_inst *inst, struct pve_error *err)
{
	struct tmpl_kvlist vars;
	memset(inst, 0, sizeof *inst);
	if (build_vars(u, name, vmid, node, &vars) < 0) {
		tmpl_kvlist_free(&vars);
		return pve_error_oom(err);
	}
	char *msg = NULL;
	int rc = tmpl_expand(u->tmpl, &vars, inst, &msg);
	tmpl_kvlist_free(&vars);
	if (rc < 0) {
		pve_error_set(err, PVE_ERR_CONFIG, "template %s: %s",
			      u->tmpl->name ? u->tmpl->name : "?", msg ? msg : "expansion failed");
		free(msg);
		tmpl_inst_free(inst);
		memset(inst, 0, sizeof *inst);
		return -1;
	}
	free(msg);
	return 0;
}

/* The pool's address in d: ipconfig0 (the template's replaced), the
 * address tag in tags when d sets tags (else the claim's tag stays as PVE
 * has it), nameserver and searchdomain when the pool has them. -1: OOM. */
static int pool_params(const struct up_ctx *u, struct tmpl_kvlist *d)
{
	char *ipc = pool_ipconfig(u->pool, &u->pool_ip);
	const char *tags = tmpl_kvlist_get(d, "tags");
	char *t = tags ? pool_tags_with(u->pool, tags, &u->pool_ip) : NULL;
	int rc = ipc && (!tags || t) && tmpl_kvlist_set(d, "ipconfig0", ipc) == 0 &&
			 (!t || tmpl_kvlist_set(d, "tags", t) == 0) &&
			 (!u->pool->dns || tmpl_kvlist_set(d, "nameserver", u->pool->dns) == 0) &&
			 (!u->pool->searchdomain ||
			  tmpl_kvlist_set(d, "searchdomain", u->pool->searchdomain) == 0)
		 ? 0
		 : -1;
	free(ipc);
	free(t);
	return rc;
}

/* Desired PVE parameters for a guest of type t: the template's expanded
 * [pve] (+ cloud-init), then --set, translated between LXC and OpenVZ when
 * the template was written for the other one. */
static int desired_params(struct up_ctx *u, const struct tmpl_inst *inst, enum guest_type t,
			  struct tmpl_kvlist *out, struct pve_error *err)
{
	struct tmpl_kvlist d = {0};
	for (size_t i = 0; i < inst->pve.n; i++)
		if (tmpl_kvlist_set(&d, inst->pve.items[i].key, inst->pve.items[i].value) < 0)
			goto nomem;
	for (size_t i = 0; i < u->sets.n; i++) {
		if (strcmp(u->sets.items[i].key, "size") == 0)
			continue;
		if (tmpl_kvlist_set(&d, u->sets.items[i].key, u->sets.items[i].value) < 0)
			goto nomem;
	}
	if (u->have_ip && pool_params(u, &d) < 0)
		goto nomem;
	enum tmpl_kind k = u->tmpl->kind;
	if ((t == GUEST_OPENVZ && k == TMPL_LXC) || (t == GUEST_LXC && k == TMPL_OPENVZ)) {
		char *msg = NULL;
		if (cfgdiff_ct_translate(t, &d, out, &msg) < 0) {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "template %s is for %s but this PVE runs %s containers: %s",
				      u->tmpl->name ? u->tmpl->name : "?", tmpl_kind_name(k),
				      guest_type_name(t), msg ? msg : "out of memory");
			free(msg);
			tmpl_kvlist_free(&d);
			return -1;
		}
		tmpl_kvlist_free(&d);
		return 0;
	}
	*out = d;
	return 0;
nomem:
	tmpl_kvlist_free(&d);
	return pve_error_oom(err);
}

/* ---- find ------------------------------------------------------------------------------------ */

/* The desired parameters of guest name (vmid, node): the template
 * expanded for it, then desired_params. 0 or -1 (err set). */
static int desired_for(struct up_ctx *u, const char *name, int vmid, const char *node,
		       struct tmpl_kvlist *desired, struct pve_error *err)
{
	struct tmpl_inst inst;
	memset(desired, 0, sizeof *desired);
	if (expand(u, name, vmid, node, &inst, err) < 0)
		return -1;
	int rc = desired_params(u, &inst, u->t, desired, err);
	tmpl_inst_free(&inst);
	return rc;
}

/* cfgdiff with its message as err. 0 or -1. */
static int diff_config(const struct up_ctx *u, json_object *conf,
		       const struct tmpl_kvlist *desired, struct cfg_change **ch, size_t *nch,
		       struct pve_error *err)
{
	char *derr = NULL;
	if (cfgdiff(u->t, conf, desired, ch, nch, &derr) < 0) {
		pve_error_set(err, PVE_ERR_INTERNAL, "%s", derr ? derr : "config difference");
		free(derr);
		return -1;
	}
	return 0;
}

static enum guest_type tmpl_guest_type(enum tmpl_kind k, int major)
{
	return k == TMPL_QEMU ? GUEST_QEMU : guest_container_type(major);
}

static int up_plan(struct job *j, struct up_ctx *u, bool exists);
static int plan_add(struct job *j, struct up_ctx *u, char *line);

/* A guest made from another template (its description names the one it
 * was made from) is not converged to this one unless --retemplate: its
 * ostype, boot order and disks belong to the other. 0 (same, unknown, or
 * --retemplate), or -1 with err set (PVE_ERR_CONFIG, nothing changed). */
static int check_template(struct job *j, struct up_ctx *u, const struct guest_ref *g)
{
	struct pve_error *err = job_err(j);
	json_object *conf = NULL;
	if (guest_get_config(job_pve(j), g, &conf, err) < 0)
		return -1;
	char *made_from = inject_template_from_description(json_str(conf, "description"));
	json_object_put(conf);
	if (!made_from)
		return errno == ENOMEM ? pve_error_oom(err) : 0;
	int rc = 0;
	const char *want = u->tmpl->name ? u->tmpl->name : "?";
	if (strcmp(made_from, want) != 0) {
		if (u->retemplate) {
			job_progress(j, -1, "made from template %s; --retemplate: converging it to %s",
				     made_from, want);
		} else {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "'%s' (VMID %d) was made from template %s, not %s; nothing "
				      "changed (pass --retemplate to reconfigure it as %s: its "
				      "ostype, boot order and disks may then no longer fit its OS)",
				      job_subject(j), g->vmid, made_from, want, want);
			rc = -1;
		}
	}
	free(made_from);
	return rc;
}

static enum step_rc up_find(struct job *j)
{
	struct up_ctx *u = job_ctx(j);
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	const char *name = job_subject(j);
	const struct pve_version *ver = NULL;
	if (pve_version(c, &ver, err) < 0)
		return STEP_RC_FAIL;
	int major = ver->major;
	char *why = NULL;
	if (tmpl_check_version(u->tmpl, &u->sets, major, ver->minor, &why) < 0) {
		if (!why)
			return pve_error_oom(err);
		pve_error_set(err, PVE_ERR_CONFIG, "%s", why);
		free(why);
		return STEP_RC_FAIL;
	}
	u->t = tmpl_guest_type(u->tmpl->kind, major);
	u->res->type = u->t;
	if (job_set_str(j, "type", guest_type_name(u->t)) < 0)
		return pve_error_oom(err);
	/* One listing: the guest by name (two of that name are an error),
	 * and the clone source. */
	if (guest_list(c, NULL, &u->listing, err) < 0)
		return STEP_RC_FAIL;
	u->have_listing = true;
	struct guest_ref g = {0};
	int found = guest_list_find_name(&u->listing, name, &g, err);
	if (found < 0)
		return STEP_RC_FAIL;
	/* the cluster listing's status (and name) can be 10 s old: read them */
	if (found && guest_refresh(c, &g, err) < 0) {
		guest_ref_clear(&g);
		if (err->kind != PVE_ERR_NOT_FOUND)
			return STEP_RC_FAIL;
		pve_error_clear(err); /* deleted meanwhile */
		found = 0;
	}
	if (found && (!g.name || strcasecmp(g.name, name) != 0)) {
		log_debug("%s: VMID %d was renamed to '%s'", name, g.vmid, g.name ? g.name : "");
		guest_ref_clear(&g);
		found = 0;
	}
	if (found) {
		enum step_rc rc = STEP_RC_FAIL;
		if (g.template)
			pve_error_set(err, PVE_ERR_CONFIG,
				      "'%s' is a template VM (VMID %d on %s); choose another name",
				      name, g.vmid, g.node);
		else if (g.type != u->t)
			pve_error_set(err, PVE_ERR_CONFIG,
				      "'%s' exists as %s %d on %s, but template %s makes a %s guest",
				      name, guest_type_name(g.type), g.vmid, g.node,
				      u->tmpl->name ? u->tmpl->name : "?", guest_type_name(u->t));
		else if (u->vmid > 0 && g.vmid != u->vmid)
			pve_error_set(err, PVE_ERR_CONFIG,
				      "'%s' exists as VMID %d, not %d; leave --vmid out to converge it",
				      name, g.vmid, u->vmid);
		else if (check_template(j, u, &g) == 0)
			rc = STEP_RC_OK;
		if (rc == STEP_RC_FAIL) {
			guest_ref_clear(&g);
			return rc;
		}
		if (u->node && g.node && strcmp(u->node, g.node) != 0)
			log_warn("%s: exists on %s, not on %s; converging it there (use migrate to "
				 "move it)",
				 name, g.node, u->node);
		if (know_guest(j, u, &g) < 0)
			return STEP_RC_FAIL;
	}
	/* an exhausted pool fails before anything is created */
	struct pool_ip first;
	if (u->pool && !found && pool_check_free(u->pool, &u->listing, &first, err) < 0)
		return STEP_RC_FAIL;
	if (u->pool && !found && u->dry_run) {
		char *a = pool_ip_str(&first);
		int pr = plan_add(j, u, a ? strprintf("give it %s of pool %s (the lowest free now; "
						       "claimed at PVE: ipconfig0 and its tag)",
						       a, u->pool->name)
					  : NULL);
		free(a);
		if (pr < 0)
			return STEP_RC_FAIL;
	}
	if (job_set_bool(j, "exists", found) < 0)
		return pve_error_oom(err);
	job_summary(j, found ? "exists" : "new");
	if (u->dry_run)
		return up_plan(j, u, found) < 0 ? STEP_RC_FAIL : STEP_RC_END;
	/* the address from the guest agent needs its own privilege: ask
	 * before anything is made (a new guest's ACL comes from /vms or /) */
	if (u->t == GUEST_QEMU && !u->no_start && u->tmpl->guest.address == TMPL_ADDR_AGENT) {
		char *path = found ? strprintf("/vms/%d", u->g.vmid) : strdup("/vms");
		if (!path)
			return pve_error_oom(err);
		int rc = pveperm_check_agent(c, major, path, err);
		free(path);
		if (rc < 0)
			return STEP_RC_FAIL;
	}
	return STEP_RC_OK;
}

/* ---- clone and create ------------------------------------------------------------------------- */

/* The node to create on when none was given: the first online node. */
static int pick_node(struct pve *c, char **node, struct pve_error *err)
{
	json_object *d = NULL;
	if (pve_get(c, "/nodes", NULL, &d, err) < 0)
		return -1;
	const char *best = NULL;
	size_t n = json_object_is_type(d, json_type_array) ? json_object_array_length(d) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *it = json_object_array_get_idx(d, i);
		const char *nm = json_str(it, "node"), *st = json_str(it, "status");
		if (nm && (!st || strcmp(st, "online") == 0) && (!best || strcmp(nm, best) < 0))
			best = nm;
	}
	if (!best) {
		json_object_put(d);
		pve_error_set(err, PVE_ERR_CONFIG, "no online node to create on; give --node");
		return -1;
	}
	*node = strdup(best);
	json_object_put(d);
	return *node ? 0 : pve_error_oom(err);
}

/* The template VM named by [source] clone (a VMID or a name), looked up
 * in the find step's listing (the same moment's view of the cluster), or
 * in a fresh one when this run did not make it. */
static int find_source(struct pve *c, struct up_ctx *u, const char *clone, struct guest_ref *src,
		       struct pve_error *err)
{
	if (!u->have_listing) {
		if (guest_list(c, NULL, &u->listing, err) < 0)
			return -1;
		u->have_listing = true;
	}
	bool digits = *clone != 0;
	for (const char *p = clone; *p; p++)
		digits = digits && isdigit((unsigned char)*p);
	int r = digits ? guest_list_find_vmid(&u->listing, atoi(clone), src, err)
		       : guest_list_find_name(&u->listing, clone, src, err);
	if (r < 0)
		return -1;
	if (r == 0 && u->tmpl->source.image) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "template VM '%s' of image %s is not built: run 'pvagent image build "
			      "%s' first",
			      clone, u->tmpl->source.image, u->tmpl->source.image);
		return -1;
	}
	if (r == 0) {
		pve_error_set(err, PVE_ERR_NOT_FOUND,
			      "template VM '%s' not found in the cluster (PVE lists only the guests "
			      "the API token has VM.Audit on: /vms/VMID)",
			      clone);
		return -1;
	}
	if (src->type != GUEST_QEMU) {
		pve_error_set(err, PVE_ERR_CONFIG, "'%s' (VMID %d) is a %s container, not a VM",
			      clone, src->vmid, guest_type_name(src->type));
		guest_ref_clear(src);
		return -1;
	}
	return 0;
}

struct create_ctx {
	struct up_ctx *u;
	const char *name;
	const char *node;
};

static int create_params(void *ctx, int vmid, struct pve_params *p, struct pve_error *err)
{
	struct create_ctx *cc = ctx;
	struct up_ctx *u = cc->u;
	struct tmpl_inst inst;
	if (expand(u, cc->name, vmid, cc->node, &inst, err) < 0)
		return -1;
	struct tmpl_kvlist d;
	if (desired_params(u, &inst, u->t, &d, err) < 0) {
		tmpl_inst_free(&inst);
		return -1;
	}
	for (size_t i = 0; i < d.n; i++)
		pve_params_add(p, d.items[i].key, d.items[i].value);
	if (u->t == GUEST_QEMU) {
		if (inst.source.iso.value && !tmpl_kvlist_get(&d, "ide2") &&
		    !tmpl_kvlist_get(&d, "cdrom"))
			pve_params_addf(p, "ide2", "%s,media=cdrom", inst.source.iso.value);
	} else {
		if (inst.source.ostemplate.value)
			pve_params_add(p, "ostemplate", inst.source.ostemplate.value);
		if (u->t == GUEST_OPENVZ && inst.source.storage.value &&
		    !tmpl_kvlist_get(&d, "storage"))
			pve_params_add(p, "storage", inst.source.storage.value);
	}
	tmpl_kvlist_free(&d);
	tmpl_inst_free(&inst);
	if (p->failed)
		return pve_error_oom(err);
	return 0;
}

/* After creating: if a concurrent run created a guest of the same name,
 * keep the lowest VMID and delete ours when it is not that one. u->g is
 * replaced by the survivor. This needs a listing made after our guest
 * exists: the find step's listing predates both guests of such a race. */
static int resolve_duplicates(struct job *j, struct up_ctx *u, bool *replaced)
{
	struct pve_error *err = job_err(j);
	*replaced = false;
	struct guest_list l;
	if (guest_list(job_pve(j), NULL, &l, err) < 0)
		return -1;
	size_t keep = (size_t)-1;
	int same = 0;
	for (size_t i = 0; i < l.n; i++) {
		if (!l.v[i].name || strcasecmp(l.v[i].name, job_subject(j)) != 0 || l.v[i].template)
			continue;
		same++;
		if (keep == (size_t)-1 || l.v[i].vmid < l.v[keep].vmid)
			keep = i;
	}
	int rc = 0;
	if (same > 1 && keep != (size_t)-1 && l.v[keep].vmid != u->g.vmid) {
		log_warn("%s: another run created VM %d with the same name; removing ours (%d)",
			 job_subject(j), l.v[keep].vmid, u->g.vmid);
		rc = guest_delete(job_pve(j), &u->g, true, job_wait(j), NULL, err);
		if (rc == 0) {
			*replaced = true;
			rc = know_guest(j, u, &l.v[keep]);
		}
	}
	guest_list_free(&l);
	return rc;
}

/* A resumed clone/create step: the task its earlier run started (UPID
 * recorded: wait for it), or a request sent without an answer (look for a
 * guest of our name on the VMID it claimed). 1: the guest is ours now
 * (u->g), 0: send, -1: error. */
static int resume_claim(struct job *j, struct up_ctx *u, const char *step, const char *node)
{
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	const char *upid = job_step_upid(j);
	char key[64];
	snprintf(key, sizeof key, "%s_vmid", step);
	int vmid = json_int0(job_vars(j), key);
	if (upid) {
		/* a create's UPID names the new guest (a clone's names its source) */
		struct task_upid tu;
		if (vmid <= 0 && task_upid_parse(upid, &tu) == 0) {
			vmid = atoi(tu.id);
			task_upid_free(&tu);
		}
		log_info("%s: waiting for the %s task an earlier run started (%s)", job_subject(j),
			 step, upid);
		struct guest_wait wa = *job_wait(j);
		wa.attach = true;
		if (guest_wait_task(c, upid, step, &wa, NULL, err) < 0)
			return -1;
	} else if (job_step_attempts(j) == 0 || vmid <= 0) {
		return 0;
	} else {
		job_settle(j);
		if (!guest_vmid_is_named(c, vmid, job_subject(j), job_wait(j)))
			return 0;
	}
	struct guest_ref g = {0};
	int r = guest_find_by_vmid(c, vmid, &g, err);
	if (r < 0)
		return -1;
	if (r == 0) {
		g.vmid = vmid;
		g.type = u->t;
		if (dup_into(&g.node, node) < 0 || dup_into(&g.name, job_subject(j)) < 0) {
			guest_ref_clear(&g);
			return pve_error_oom(err);
		}
	}
	if (guest_wait_unlocked(c, &g, job_wait(j), err) < 0) {
		guest_ref_clear(&g);
		return -1;
	}
	log_info("%s: VM %d made by the earlier run is ours", job_subject(j), vmid);
	return know_guest(j, u, &g) < 0 ? -1 : 1;
}

/* The end of clone and create: the guest is ours, a race's twin removed. */
static enum step_rc made(struct job *j, struct up_ctx *u)
{
	if (job_set_bool(j, "created", true) < 0 || job_set_int(j, "claims", u->res->claims) < 0)
		return pve_error_oom(job_err(j));
	job_set_left(j, "VM %d on %s was created and is left as it is", u->g.vmid, u->g.node);
	job_summary(j, "VM %d on %s", u->g.vmid, u->g.node);
	bool replaced;
	if (resolve_duplicates(j, u, &replaced) < 0)
		return STEP_RC_FAIL;
	if (replaced) {
		job_set_bool(j, "created", false);
		job_set_left(j, NULL);
	}
	return STEP_RC_OK;
}

/* Is storage shared, as node sees it (GET /nodes/NODE/storage/ID/status)? */
static int storage_shared(struct pve *c, const char *node, const char *storage, bool *shared,
			  struct pve_error *err)
{
	char *n = pve_path_escape(node), *s = pve_path_escape(storage);
	json_object *d = NULL;
	int rc = n && s ? pve_getf(c, &d, NULL, err, "/nodes/%s/storage/%s/status", n, s)
			: pve_error_oom(err);
	free(n);
	free(s);
	if (rc < 0)
		return -1;
	long long v = 0;
	*shared = json_int(d, "shared", &v) && v != 0;
	json_object_put(d);
	return 0;
}

/* Does a clone of src for node want need the move step? PVE clones onto
 * another node only to shared storage ("can't clone to non-shared
 * storage"; a linked clone, storage NULL, never): else it is cloned on the
 * source's node and migrated. 0, or -1 (err). */
static int clone_moves(struct pve *c, const char *want, const struct guest_ref *src,
		       const char *storage, bool *move, struct pve_error *err)
{
	*move = false;
	if (strcmp(want, src->node) == 0)
		return 0;
	bool shared = false;
	if (storage && storage_shared(c, want, storage, &shared, err) < 0)
		return -1;
	*move = !shared;
	return 0;
}

static bool wants_clone(struct job *j, struct up_ctx *u, const struct tmpl_inst *inst)
{
	return !json_flag(job_vars(j), "exists") && u->t == GUEST_QEMU && inst->source.clone.value;
}

static enum step_rc up_clone(struct job *j)
{
	struct up_ctx *u = job_ctx(j);
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	struct tmpl_inst inst;
	/* expand once before touching PVE so template errors cost nothing */
	if (expand(u, job_subject(j), 0, u->node, &inst, err) < 0)
		return STEP_RC_FAIL;
	enum step_rc rc = STEP_RC_SKIP;
	struct guest_ref src = {0};
	char *node = NULL;
	if (!wants_clone(j, u, &inst))
		goto out;
	rc = STEP_RC_FAIL;
	if (find_source(c, u, inst.source.clone.value, &src, err) < 0)
		goto out;
	bool full = u->full || inst.source.full;
	const char *want = u->node ? u->node : src.node;
	bool move = false;
	if (clone_moves(c, want, &src, full ? inst.source.storage.value : NULL, &move, err) < 0)
		goto out;
	node = strdup(move ? src.node : want);
	if (!node || job_set_str(j, "move_to", move ? want : NULL) < 0) {
		pve_error_oom(err);
		goto out;
	}
	int r = resume_claim(j, u, "clone", node);
	if (r < 0)
		goto out;
	if (r == 0) {
		struct guest_clone_req cr = {
			.source = &src,
			.name = job_subject(j),
			.target = node,
			.storage = full ? inst.source.storage.value : NULL,
			.full = full,
			.vmid = {.vmid = u->vmid, .range_min = u->vmid_min, .range_max = u->vmid_max},
		};
		struct guest_ref g;
		if (guest_clone(c, &cr, job_wait(j), &g, &u->res->claims, err) < 0)
			goto out;
		if (know_guest(j, u, &g) < 0)
			goto out;
	}
	rc = made(j, u);
out:
	free(node);
	guest_ref_clear(&src);
	tmpl_inst_free(&inst);
	return rc;
}

/* A clone made on its source's node because the node asked for has no
 * shared storage with it: an offline migration there (the guest is
 * stopped; its disks are copied to the same storage on the target). */
static enum step_rc up_move(struct job *j)
{
	struct up_ctx *u = job_ctx(j);
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	const char *to = json_str(job_vars(j), "move_to");
	if (!to || !u->g.node || !u->g.vmid)
		return STEP_RC_SKIP;
	char *from = strdup(u->g.node);
	if (!from)
		return pve_error_oom(err);
	/* resumed after the migration: the guest is there already */
	int on = strcmp(from, to) == 0 ? 1 : guest_on_node(c, &u->g, to, NULL, err);
	if (on < 0) {
		free(from);
		return STEP_RC_FAIL;
	}
	if (!on) {
		struct pve_params p = {0};
		pve_params_add(&p, "target", to);
		struct task_result tr = {0};
		int rc = p.failed ? pve_error_oom(err)
				  : guest_migrate(c, &u->g, &p, job_wait(j), &tr, err);
		task_result_free(&tr);
		pve_params_free(&p);
		if (rc < 0) {
			free(from);
			return STEP_RC_FAIL;
		}
	}
	if (dup_into(&u->g.node, to) < 0 || know_guest(j, u, &u->g) < 0) {
		free(from);
		return pve_error_oom(err);
	}
	job_set_left(j, "VM %d on %s was created and is left as it is", u->g.vmid, u->g.node);
	job_summary(j, "VM %d from %s to %s (no shared storage: cloned there, migrated offline)",
		    u->g.vmid, from, to);
	free(from);
	return STEP_RC_OK;
}

static enum step_rc up_create(struct job *j)
{
	struct up_ctx *u = job_ctx(j);
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	struct tmpl_inst inst;
	if (expand(u, job_subject(j), 0, u->node, &inst, err) < 0)
		return STEP_RC_FAIL;
	enum step_rc rc = STEP_RC_SKIP;
	char *node = NULL;
	if (json_flag(job_vars(j), "exists") || wants_clone(j, u, &inst))
		goto out;
	rc = STEP_RC_FAIL;
	if (u->t == GUEST_QEMU && !inst.source.iso.value) {
		pve_error_set(err, PVE_ERR_CONFIG, "template %s: a VM needs [source] clone or iso",
			      u->tmpl->name ? u->tmpl->name : "?");
		goto out;
	}
	if (u->t != GUEST_QEMU && !inst.source.ostemplate.value) {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "template %s: a container needs [source] ostemplate",
			      u->tmpl->name ? u->tmpl->name : "?");
		goto out;
	}
	if (u->node)
		node = strdup(u->node);
	else if (json_str(job_vars(j), "create_node"))
		node = strdup(json_str(job_vars(j), "create_node"));
	else if (pick_node(c, &node, err) < 0)
		goto out;
	if (!node || job_set_str(j, "create_node", node) < 0) {
		pve_error_oom(err);
		goto out;
	}
	int r = resume_claim(j, u, "create", node);
	if (r < 0)
		goto out;
	if (r == 0) {
		struct create_ctx cc = {u, job_subject(j), node};
		struct guest_create_req cr = {
			.type = u->t,
			.node = node,
			.name = job_subject(j),
			.vmid = {.vmid = u->vmid, .range_min = u->vmid_min, .range_max = u->vmid_max},
			.params = create_params,
			.params_ctx = &cc,
		};
		struct guest_ref g;
		if (guest_create(c, &cr, job_wait(j), &g, &u->res->claims, err) < 0)
			goto out;
		if (know_guest(j, u, &g) < 0)
			goto out;
	}
	rc = made(j, u);
out:
	free(node);
	tmpl_inst_free(&inst);
	return rc;
}

/* ---- pool address ------------------------------------------------------------------------------ */

/* The tags of the clone source ([source] clone) in the find listing,
 * malloc'd into *tags (NULL when it has none or is not found). */
static int source_tags(struct job *j, struct up_ctx *u, char **tags)
{
	struct pve_error *err = job_err(j);
	struct tmpl_inst inst;
	if (expand(u, job_subject(j), u->g.vmid, u->g.node, &inst, err) < 0)
		return -1;
	struct guest_ref src = {0};
	struct pve_error lerr = {0};
	int rc = 0;
	if (inst.source.clone.value &&
	    find_source(job_pve(j), u, inst.source.clone.value, &src, &lerr) == 0 && src.tags &&
	    !(*tags = strdup(src.tags)))
		rc = pve_error_oom(err);
	pve_error_clear(&lerr);
	guest_ref_clear(&src);
	tmpl_inst_free(&inst);
	return rc;
}

/* The tags the guest has when the listing does not show it yet: a created
 * guest's are the template's, a clone's its source's. malloc'd or NULL
 * (none); -1 (err) on OOM or a template error. */
static int made_tags(struct job *j, struct up_ctx *u, char **tags)
{
	struct pve_error *err = job_err(j);
	struct tmpl_kvlist d;
	*tags = NULL;
	if (desired_for(u, job_subject(j), u->g.vmid, u->g.node, &d, err) < 0)
		return -1;
	const char *t = tmpl_kvlist_get(&d, "tags");
	int rc = 0;
	if (t)
		rc = (*tags = strdup(t)) ? 0 : pve_error_oom(err);
	else if (u->have_listing)
		rc = source_tags(j, u, tags);
	tmpl_kvlist_free(&d);
	return rc;
}

/* The pool was exhausted by other claims between the check before the
 * clone (or create) and this claim: the guest this job made for it is
 * removed, so that the loser of the race leaves nothing (exit 1), and the
 * error says so; one that cannot be removed is left (needs attention). */
static enum step_rc pool_lost(struct job *j, struct up_ctx *u)
{
	struct pve_error *err = job_err(j), derr = {0};
	if (guest_delete(job_pve(j), &u->g, true, job_wait(j), NULL, &derr) < 0) {
		log_warn("%s: VM %d made for the pool could not be removed: %s", job_subject(j),
			 u->g.vmid, derr.message ? derr.message : "?");
		pve_error_clear(&derr);
		return STEP_RC_FAIL;
	}
	char *m = strprintf("%s; VM %d made for it on %s was removed",
			    err->message ? err->message : "the pool is exhausted", u->g.vmid,
			    u->g.node);
	if (!m)
		return pve_error_oom(err);
	pve_error_set(err, PVE_ERR_API, "%s", m);
	free(m);
	job_set_bool(j, "created", false);
	job_set_left(j, NULL);
	return STEP_RC_FAIL;
}

/* The guest's address from its pool, claimed at PVE (pool_claim.h): kept
 * when it holds one already, else the lowest free one written into its
 * config and checked against every other guest's. */
static enum step_rc up_pool(struct job *j)
{
	struct up_ctx *u = job_ctx(j);
	struct pve_error *err = job_err(j);
	if (!u->pool)
		return STEP_RC_SKIP;
	char *tags = NULL;
	if (made_tags(j, u, &tags) < 0)
		return STEP_RC_FAIL;
	struct pool_claim_req cr = {
		.pool = u->pool,
		.g = &u->g,
		.tags = tags,
		.listing = u->have_listing ? &u->listing : NULL,
		.w = job_wait(j),
	};
	struct pool_ip ip;
	int rc = pool_claim(job_pve(j), &cr, &ip, err);
	free(tags);
	if (rc == 1 && json_flag(job_vars(j), "created"))
		return pool_lost(j, u);
	if (rc != 0)
		return STEP_RC_FAIL;
	char *a = pool_ip_str(&ip);
	if (!a || job_set_str(j, "pool_ip", a) < 0) {
		free(a);
		return pve_error_oom(err);
	}
	u->pool_ip = ip;
	u->have_ip = true;
	job_summary(j, "%s from pool %s", a, u->pool->name);
	free(a);
	return STEP_RC_OK;
}

/* ---- config and resize ------------------------------------------------------------------------- */

static enum step_rc up_config(struct job *j)
{
	struct up_ctx *u = job_ctx(j);
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	struct tmpl_kvlist desired = {0};
	struct cfg_change *ch = NULL;
	size_t nch = 0;
	json_object *conf = NULL;
	enum step_rc rc = STEP_RC_FAIL;
	if (desired_for(u, job_subject(j), u->g.vmid, u->g.node, &desired, err) < 0)
		goto out;
	for (int attempt = 0;; attempt++) {
		json_object_put(conf);
		conf = NULL;
		cfgdiff_free(ch, nch);
		ch = NULL;
		nch = 0;
		if (guest_get_config(c, &u->g, &conf, err) < 0 ||
		    diff_config(u, conf, &desired, &ch, &nch, err) < 0)
			goto out;
		if (!nch)
			break;
		struct pve_params p = {0};
		for (size_t i = 0; i < nch; i++)
			pve_params_add(&p, ch[i].key, ch[i].new_value);
		const char *digest = json_str(conf, "digest");
		int sr = guest_set_config(c, &u->g, &p, NULL, digest, false, job_wait(j), err);
		pve_params_free(&p);
		if (sr < 0 && attempt < 4 && (err->kind == PVE_ERR_CONFLICT || err->ambiguous)) {
			/* changed under us (by the lock holder we waited for, or by
			 * our own request whose answer was lost): compare anew */
			log_debug("%s: config changed meanwhile, or unknown; comparing again",
				  job_subject(j));
			pve_error_clear(err);
			continue;
		}
		if (sr < 0)
			goto out;
		for (size_t i = 0; i < nch; i++)
			if (add_diff_line(j, u, &ch[i]) < 0) {
				pve_error_oom(err);
				goto out;
			}
		if (job_set_bool(j, "changed", true) < 0) {
			pve_error_oom(err);
			goto out;
		}
		if (!job_left(j))
			job_set_left(j, "VM %d's config was changed (%zu key%s) and is left so",
				     u->g.vmid, nch, nch == 1 ? "" : "s");
		break;
	}
	if (nch && u->g.status && strcmp(u->g.status, "running") == 0) {
		char *pending = NULL;
		if (guest_pending(c, &u->g, &pending, err) < 0) {
			/* only a report: the change itself went through */
			log_debug("%s: pending changes unknown: %s", job_subject(j),
				  err->message ? err->message : "?");
			pve_error_clear(err);
		} else if (pending) {
			free(u->res->pending);
			u->res->pending = pending;
			job_set_str(j, "pending", pending);
			job_progress(j, -1, "applied at the next restart: %s", pending);
		}
	}
	job_summary(j, "%zu change%s", nch, nch == 1 ? "" : "s");
	rc = STEP_RC_OK;
out:
	json_object_put(conf);
	cfgdiff_free(ch, nch);
	tmpl_kvlist_free(&desired);
	return rc;
}

/* The disk to grow: lxc rootfs, openvz disk, qemu the boot disk. */
static char *grow_disk(json_object *conf, enum guest_type t)
{
	if (t == GUEST_LXC)
		return strdup("rootfs");
	if (t == GUEST_OPENVZ)
		return strdup("disk");
	struct pvecfg_hw hw;
	if (pvecfg_hw_read(conf, &hw) < 0)
		return NULL;
	const struct pvecfg_disk *d =
		pvecfg_boot_disk(&hw, json_str(conf, "boot"), json_str(conf, "bootdisk"));
	char *key = d ? strdup(d->key) : NULL;
	pvecfg_hw_free(&hw);
	return key;
}

static enum step_rc up_resize(struct job *j)
{
	struct up_ctx *u = job_ctx(j);
	struct pve_error *err = job_err(j);
	const char *size = tmpl_kvlist_get(&u->sets, "size");
	if (!size)
		return STEP_RC_SKIP;
	json_object *conf = NULL;
	if (guest_get_config(job_pve(j), &u->g, &conf, err) < 0)
		return STEP_RC_FAIL;
	char *disk = grow_disk(conf, u->t);
	json_object_put(conf);
	if (!disk) {
		pve_error_set(err, PVE_ERR_CONFIG, "VM %d has no disk to resize", u->g.vmid);
		return STEP_RC_FAIL;
	}
	bool grown = false, larger = false;
	int r = guest_resize(job_pve(j), &u->g, disk, size, job_wait(j), &grown, &larger, err);
	if (r == 0) {
		if (grown)
			job_set_bool(j, "changed", true);
		if (larger) {
			log_warn("%s: %s is larger than %s and stays so: disks never shrink",
				 job_subject(j), disk, size);
			job_note(j, "%s is larger than --set size=%s: disks never shrink, it keeps "
				    "its size", disk, size);
			job_summary(j, "%s kept (larger than %s; disks never shrink)", disk, size);
		} else {
			job_summary(j, "%s %s", disk, grown ? size : "unchanged");
		}
	}
	free(disk);
	return r < 0 ? STEP_RC_FAIL : STEP_RC_OK;
}

/* ---- start and address ---------------------------------------------------------------------------- */

static enum step_rc up_start(struct job *j)
{
	struct up_ctx *u = job_ctx(j);
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	if (u->no_start)
		return STEP_RC_SKIP;
	/* "stopped" is believed (just created, or the listing says so; if it
	 * started meanwhile, guest_start takes PVE's "already running" as
	 * success). "running" or unknown is read again: a listing can lag. */
	bool stopped = u->g.status && strcmp(u->g.status, "stopped") == 0;
	if (!stopped && guest_refresh(c, &u->g, err) < 0)
		return STEP_RC_FAIL;
	if (u->g.status && strcmp(u->g.status, "running") == 0)
		return STEP_RC_SKIP;
	if (guest_start(c, &u->g, job_wait(j), err) < 0)
		return STEP_RC_FAIL;
	if (job_set_bool(j, "changed", true) < 0)
		return pve_error_oom(err);
	job_summary(j, "running");
	return STEP_RC_OK;
}

static enum step_rc up_address(struct job *j)
{
	struct up_ctx *u = job_ctx(j);
	struct pve_error *err = job_err(j);
	if (u->have_ip) {
		/* the pool's address: known at once, no guest agent to wait for */
		char *a = pool_ip_str(&u->pool_ip);
		if (!a || dup_into(&u->res->address, a) < 0 || job_set_str(j, "address", a) < 0) {
			free(a);
			return pve_error_oom(err);
		}
		job_summary(j, "%s (pool %s)", a, u->pool->name);
		free(a);
		return STEP_RC_OK;
	}
	if (u->no_start)
		return STEP_RC_SKIP;
	struct tmpl_inst inst;
	if (expand(u, job_subject(j), u->g.vmid, u->g.node, &inst, err) < 0)
		return STEP_RC_FAIL;
	enum guest_addr_source as = GUEST_ADDR_AGENT;
	const char *sip = NULL;
	if (inst.guest.address == TMPL_ADDR_STATIC ||
	    (inst.guest.address == TMPL_ADDR_CLOUDINIT && inst.guest.ip.value)) {
		as = GUEST_ADDR_STATIC;
		sip = inst.guest.ip.value;
	}
	if (as == GUEST_ADDR_STATIC && (!sip || !*sip))
		as = GUEST_ADDR_CONFIG;
	char *addr = NULL;
	int r = guest_address(job_pve(j), &u->g, as, sip, job_wait(j), &addr, err);
	tmpl_inst_free(&inst);
	if (r < 0)
		return STEP_RC_FAIL;
	free(u->res->address);
	u->res->address = addr;
	if (job_set_str(j, "address", addr) < 0)
		return pve_error_oom(err);
	job_summary(j, "%s", addr);
	return STEP_RC_OK;
}

/* ---- inject ------------------------------------------------------------------------------------------ */

/* Record a failed inject step: the result, the vars, and an error with
 * inject's outcome (usage: configuration, unreachable: cannot reach or
 * authenticate, needs-attention: files left changed, failed otherwise). */
static enum step_rc inject_failed(struct job *j, struct up_ctx *u, enum inject_status st,
				  enum job_outcome o, const char *step, const char *msg)
{
	struct up_inject *ui = &u->res->inject;
	ui->ran = true;
	ui->status = st;
	ui->outcome = job_outcome_failure(o);
	free(ui->failed_step);
	ui->failed_step = step ? strdup(step) : NULL;
	free(ui->summary);
	ui->summary = strprintf("failed: %s", msg ? msg : "?");
	job_fail_outcome(j, ui->outcome, msg);
	job_err(j)->what = strdup("inject");
	return STEP_RC_FAIL;
}

/* Progress of the SSH wait: one event when it starts, then one every
 * this many seconds (the live line is redrawn; `pvagent job` folds them) */
#define SSH_WAIT_PROGRESS_S 10.0

struct ssh_wait_said {
	struct job *j;
	const char *host;
	double limit, said;
};

static void on_ssh_retry(void *ctx, double waited, unsigned attempts, const struct ssh_error *e)
{
	struct ssh_wait_said *w = ctx;
	if (attempts == 1)
		log_info("%s: no SSH answer from %s yet (%s); waiting up to %.0f s",
			 job_subject(w->j), w->host, ssh_error_str(e), w->limit);
	if (waited - w->said >= SSH_WAIT_PROGRESS_S) {
		/* what changes first, so a cut live line still says it */
		job_progress(w->j, -1, "waiting for SSH on %s (%.0f s of %.0f, attempt %u): %s",
			     w->host, waited, w->limit, attempts, ssh_error_str(e));
		w->said = waited;
	}
}

/* Connect once the guest answers (ssh_wait_connect, target.h, for up to
 * ssh_wait_s). A wait that runs out leaves a running guest without its
 * files: needs-attention, saying so; with no_wait_ssh one attempt, and no
 * answer is done (1). */
static int wait_ssh(struct job *j, struct up_ctx *u, const struct ssh_opts *so,
		    struct ssh_session **out)
{
	const struct guest_wait *gw = job_wait(j);
	double limit = u->ssh_wait_s > 0 ? u->ssh_wait_s : DEF_SSH_WAIT_S;
	struct ssh_wait_said said = {j, so->host, limit, -SSH_WAIT_PROGRESS_S};
	const struct ssh_wait w = {
		.limit_s = u->no_wait_ssh ? 0 : limit,
		.poll_s = gw->poll_s,
		.clock = gw->clock,
		.on_retry = on_ssh_retry,
		.ctx = &said,
	};
	struct ssh_error e = {0};
	unsigned attempts = 0;
	if (ssh_wait_connect(so, &w, out, &e, &attempts) == 0)
		return 0;
	const char *user = so->user ? so->user : "root";
	int port = so->port ? so->port : 22;
	bool retryable = ssh_wait_retryable(&e);
	if (retryable && u->no_wait_ssh) {
		job_note(j, "%s port %d does not answer SSH yet (%s): its files are not written; "
			 "'pvagent inject %s' once it answers", so->host, port, ssh_error_str(&e),
			 job_subject(j));
		ssh_error_clear(&e);
		return 1;
	}
	char *msg;
	enum job_outcome o = ssh_error_outcome(&e);
	if (retryable) {
		/* the guest exists and runs: what is left is its files */
		o = JOB_OUT_NEEDS_ATTENTION;
		msg = strprintf("connect: %s@%s port %d did not answer SSH within %.0f s "
				"(%u attempt%s): %s; VM %d on %s runs without its guest files: "
				"'pvagent inject %s' once it answers, or 'pvagent down %s'",
				user, so->host, port, limit, attempts, attempts == 1 ? "" : "s",
				ssh_error_str(&e), u->g.vmid, u->g.node ? u->g.node : "?",
				job_subject(j), job_subject(j));
	} else {
		msg = strprintf("connect: %s@%s port %d: %s", user, so->host, port,
				ssh_error_str(&e));
	}
	inject_failed(j, u, INJ_FAILED, o, "connect",
		      msg ? msg : ssh_error_str(&e));
	free(msg);
	ssh_error_clear(&e);
	return -1;
}

static int store_inject(struct job *j, const struct up_inject *ui)
{
	json_object *o = json_object_new_object();
	if (!o)
		return -1;
	json_object_object_add(o, "status", json_object_new_int(ui->status));
	json_object_object_add(o, "outcome", json_object_new_string(job_outcome_name(ui->outcome)));
	if (ui->summary)
		json_object_object_add(o, "summary", json_object_new_string(ui->summary));
	json_object_object_add(job_vars(j), "inject", o);
	return 0;
}

/* The params of up's inject job: the template's file, the address found,
 * the vars the expansion had (--var, ${pubkey}, --storage), this job as
 * its parent. NULL on OOM. */
static json_object *inject_params(struct job *j, struct up_ctx *u)
{
	const struct job_params_decl *d = &wf_inject_params_decl;
	struct tmpl_kvlist vars = {0};
	json_object *p = json_object_new_object();
	int bad = !p;
	for (size_t i = 0; !bad && i < u->vars.n; i++)
		bad |= tmpl_kvlist_set(&vars, u->vars.items[i].key, u->vars.items[i].value) < 0;
	bad |= u->pubkey && tmpl_kvlist_set(&vars, "pubkey", u->pubkey) < 0;
	bad |= u->storage && tmpl_kvlist_set(&vars, "storage", u->storage) < 0;
	/* a path, not a name (tmpl_load) */
	char *path = strchr(u->tmpl->path, '/') ? strdup(u->tmpl->path)
						 : strprintf("./%s", u->tmpl->path);
	if (bad || !path || job_param_set_str(d, p, "template", path) < 0 ||
	    job_param_set_str(d, p, "address", u->res->address) < 0 ||
	    job_param_set_kv(d, p, "vars", &vars) < 0 ||
	    (job_id(j) && job_param_set_int(d, p, "parent", job_id(j)) < 0)) {
		json_object_put(p);
		p = NULL;
	}
	free(path);
	tmpl_kvlist_free(&vars);
	return p;
}

/* The inject job of this step: the one an earlier run made (its ID in the
 * vars "inject_job"), unless it ended failed or cancelled (its rollback
 * left nothing), else a new one, its ID kept before it runs. */
static int inject_job(struct job *j, struct up_ctx *u, struct job **out)
{
	struct pve_error *err = job_err(j);
	long long id = 0;
	json_int(job_vars(j), "inject_job", &id);
	int r = job_load_child(j, id, &wf_inject, out);
	if (r != 0)
		return r < 0 ? -1 : 0;
	json_object *p = inject_params(j, u);
	r = p ? job_submit(job_env(j), &wf_inject, job_subject(j), p, out, err)
	      : pve_error_oom(err);
	json_object_put(p);
	if (r < 0)
		return -1;
	if (job_id(*out) && (job_set_int(j, "inject_job", job_id(*out)) < 0 || job_save(j) < 0))
		return pve_error_oom(err);
	return 0;
}

/* The inject job ended: its result into ours, its failure ours. */
static enum step_rc inject_ended(struct job *j, struct up_ctx *u, struct job *ij,
				 enum job_outcome o)
{
	json_object *v = job_vars(ij), *res = NULL;
	json_object_object_get_ex(v, "result", &res);
	const char *sum = json_str(v, "summary");
	enum inject_status st = INJ_FAILED;
	if (json_str(res, "status") && inject_status_parse(json_str(res, "status"), &st) < 0)
		st = INJ_FAILED;
	if (o == JOB_OUT_INTERRUPTED) /* so is this job: its resume resumes that one */
		return job_fail(j, PVE_ERR_INTERNAL, "inject job %lld interrupted", job_id(ij));
	if (o != JOB_OUT_DONE) {
		const struct pve_error *e = job_error(ij);
		const char *msg = json_str(res, "error") ? json_str(res, "error") : e->message;
		const char *step = json_str(res, "failed_step") ? json_str(res, "failed_step")
								: job_failed_step(ij);
		return inject_failed(j, u, st == INJ_FAILED_PARTIAL ? st : INJ_FAILED, o, step,
				     msg ? msg : "inject failed");
	}
	struct up_inject *ui = &u->res->inject;
	ui->ran = true;
	ui->status = st;
	ui->outcome = JOB_OUT_DONE;
	if (dup_into(&ui->summary, sum ? sum : "") < 0 || store_inject(j, ui) < 0 ||
	    (st == INJ_CHANGED && job_set_bool(j, "changed", true) < 0)) {
		pve_error_oom(job_err(j));
		return STEP_RC_FAIL;
	}
	job_summary(j, "%s", ui->summary);
	return STEP_RC_OK;
}

/* The inject step: once the guest answers SSH, its files and hostname as
 * an inject job of their own, a child of this one (its steps, resume and
 * events are inject's). */
static enum step_rc up_inject(struct job *j)
{
	struct up_ctx *u = job_ctx(j);
	struct pve_error *err = job_err(j);
	if (!wf_up_wants_inject(u->tmpl->n_files, u->no_inject, u->no_start))
		return STEP_RC_SKIP;
	struct tmpl_inst inst;
	if (expand(u, job_subject(j), u->g.vmid, u->g.node, &inst, err) < 0)
		return STEP_RC_FAIL;
	struct ssh_opts so;
	enum step_rc rc = STEP_RC_FAIL;
	if (inject_ssh_opts(u->conf, &inst, u->res->address, &so) < 0) {
		inject_failed(j, u, INJ_FAILED, JOB_OUT_USAGE, "connect",
			      "connect: no SSH settings ([ssh] known_hosts) or no address");
		goto out;
	}
	struct ssh_session *s = NULL;
	int w = wait_ssh(j, u, &so, &s);
	ssh_close(s); /* it answers: the inject job connects itself */
	if (w < 0)
		goto out;
	if (w > 0) { /* --no-wait-ssh and no answer yet: done without files */
		struct up_inject *ui = &u->res->inject;
		free(ui->summary);
		ui->summary = strprintf("not written: no SSH answer yet (pvagent inject %s)",
					job_subject(j));
		if (!ui->summary || store_inject(j, ui) < 0) {
			pve_error_oom(err);
			goto out;
		}
		job_summary(j, "%s", ui->summary);
		rc = STEP_RC_SKIP;
		goto out;
	}
	struct job *ij = NULL;
	if (inject_job(j, u, &ij) == 0)
		rc = inject_ended(j, u, ij, job_run(ij, job_pve(j)));
	job_free(ij);
out:
	tmpl_inst_free(&inst);
	return rc;
}

/* ---- the plan (--dry-run) -------------------------------------------------------------------------- */

/* One line of the plan (line is taken; NULL: out of memory), shown as a
 * note "would LINE". */
static int plan_add(struct job *j, struct up_ctx *u, char *line)
{
	struct up_result *r = u->res;
	char **np = line ? realloc(r->plan, (r->n_plan + 1) * sizeof *np) : NULL;
	if (!np) {
		free(line);
		return pve_error_oom(job_err(j));
	}
	r->plan = np;
	r->plan[r->n_plan++] = line;
	job_note(j, "would %s", line);
	return 0;
}

/* The template VM's config as its clone would have it: each disk's
 * volume renamed as PVE names the new one (a full clone:
 * STORAGE:vm-ID-disk-N, onto storage when given; a linked one:
 * STORE:base-volume/vm-ID-disk-N), its options kept. 0 or -1 (memory). */
static int plan_clone_disks(json_object *conf, int vmid, bool full, const char *storage)
{
	struct pvecfg_hw hw;
	if (pvecfg_hw_read(conf, &hw) < 0)
		return -1;
	int rc = 0, n = 0;
	for (size_t i = 0; rc == 0 && i < hw.n_disks; i++) {
		const struct pvecfg_disk *d = &hw.disks[i];
		const char *colon = d->volume ? strchr(d->volume, ':') : NULL;
		if (d->cdrom || !colon)
			continue;
		struct propstr ps;
		if (propstr_parse(json_str(conf, d->key), &ps) < 0) {
			rc = -1;
			break;
		}
		char *vol = full ? strprintf("%.*s:vm-%d-disk-%d",
					     storage ? (int)strlen(storage) : (int)(colon - d->volume),
					     storage ? storage : d->volume, vmid, n)
				 : strprintf("%s/vm-%d-disk-%d", d->volume, vmid, n);
		n++;
		char *val = NULL;
		if (!vol || propstr_set(&ps, NULL, vol) < 0 || !(val = propstr_format(&ps)))
			rc = -1;
		else
			json_object_object_add(conf, d->key, json_object_new_string(val));
		free(vol);
		free(val);
		propstr_free(&ps);
	}
	pvecfg_hw_free(&hw);
	return rc;
}

/* The new guest: what it is made from, where, as which VMID. *base gets
 * the config it starts from (the template VM's; an empty one when
 * created), vmid and node what the steps would use. */
static int plan_make(struct job *j, struct up_ctx *u, const struct tmpl_inst *inst,
		     json_object **base, int *vmid, char **node)
{
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	struct guest_vmid_policy pol = {.vmid = u->vmid, .range_min = u->vmid_min,
					.range_max = u->vmid_max};
	if (guest_next_free_vmid(c, &pol, vmid, err) < 0)
		return -1;
	if (!wants_clone(j, u, inst)) {
		if (!u->node && pick_node(c, node, err) < 0)
			return -1;
		if (u->node && !(*node = strdup(u->node)))
			return pve_error_oom(err);
		const char *from = inst->source.iso.value        ? inst->source.iso.value
				   : inst->source.ostemplate.value ? inst->source.ostemplate.value
								   : "nothing";
		*base = json_object_new_object();
		if (!*base)
			return pve_error_oom(err);
		return plan_add(j, u, strprintf("create %s %d '%s' on %s from %s",
						u->t == GUEST_QEMU ? "VM" : "container", *vmid,
						job_subject(j), *node, from));
	}
	struct guest_ref src = {0};
	if (find_source(c, u, inst->source.clone.value, &src, err) < 0)
		return -1;
	bool full = u->full || inst->source.full;
	const char *want = u->node ? u->node : src.node;
	const char *st = full ? inst->source.storage.value : NULL;
	bool move = false;
	int rc = -1;
	if (clone_moves(c, want, &src, st, &move, err) < 0)
		goto out;
	if (!(*node = strdup(want))) {
		pve_error_oom(err);
		goto out;
	}
	if (plan_add(j, u, strprintf("clone VM %d (%s) on %s as VMID %d '%s', %s%s%s", src.vmid,
				     src.name ? src.name : "?", move ? src.node : want, *vmid,
				     job_subject(j), full ? "full" : "linked",
				     st ? " onto " : "", st ? st : "")) < 0)
		goto out;
	if (move && plan_add(j, u, strprintf("migrate it offline to %s (storage %s is not shared "
					     "with %s)", want, st ? st : "?", want)) < 0)
		goto out;
	rc = guest_get_config(c, &src, base, err);
	if (rc == 0) {
		json_object_object_del(*base, "template");
		json_object_object_add(*base, "name", json_object_new_string(job_subject(j)));
		if (plan_clone_disks(*base, *vmid, full, st) < 0)
			rc = pve_error_oom(err);
	}
out:
	guest_ref_clear(&src);
	return rc;
}

/* A note when the memory of the desired config (MiB) is more than node
 * has in all (its maxmem in GET /nodes, the one request this adds): PVE
 * takes such a value, and the guest then does not start. A failed read
 * says nothing; the plan goes on. */
static void memory_note(struct job *j, const char *node, const struct tmpl_kvlist *desired)
{
	const char *m = tmpl_kvlist_get(desired, "memory");
	if (m && strncmp(m, "current=", 8) == 0)
		m += 8; /* PVE 9's property string */
	long long mib = m ? strtoll(m, NULL, 10) : 0, maxmem = 0;
	json_object *d = NULL;
	struct pve_error e = {0};
	if (!node || !*node || mib <= 0 || pve_get(job_pve(j), "/nodes", NULL, &d, &e) < 0) {
		pve_error_clear(&e);
		return;
	}
	size_t n = json_object_is_type(d, json_type_array) ? json_object_array_length(d) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *it = json_object_array_get_idx(d, i);
		const char *nm = json_str(it, "node");
		if (nm && strcmp(nm, node) == 0 && json_int(it, "maxmem", &maxmem) && maxmem > 0 &&
		    mib > maxmem / (1024 * 1024))
			job_note(j, "memory %lld MiB is more than node %s has in all (%lld MiB): the "
				 "guest would not start", mib, node, maxmem / (1024 * 1024));
	}
	json_object_put(d);
}

/* What up would do, key by key, with reads only: the guest to make (or
 * the one that exists), its config changes (shown as diff lines), the
 * disk, the start, inject. The job ends after it (vars "planned"). */
static int up_plan(struct job *j, struct up_ctx *u, bool exists)
{
	struct pve *c = job_pve(j);
	struct pve_error *err = job_err(j);
	struct tmpl_kvlist desired = {0};
	struct cfg_change *ch = NULL;
	size_t nch = 0;
	json_object *conf = NULL;
	char *node = NULL, *disk = NULL;
	int vmid = u->g.vmid, rc = -1;
	if (!exists) {
		struct tmpl_inst probe;
		if (expand(u, job_subject(j), 0, u->node, &probe, err) < 0)
			goto out;
		rc = plan_make(j, u, &probe, &conf, &vmid, &node);
		tmpl_inst_free(&probe);
		if (rc < 0)
			goto out;
		rc = -1;
	} else if (!(node = strdup(u->g.node ? u->g.node : "")) ||
		   guest_get_config(c, &u->g, &conf, err) < 0) {
		if (!node)
			pve_error_oom(err);
		goto out;
	}
	if (desired_for(u, job_subject(j), vmid, node, &desired, err) < 0 ||
	    diff_config(u, conf, &desired, &ch, &nch, err) < 0)
		goto out;
	memory_note(j, node, &desired);
	for (size_t i = 0; i < nch; i++)
		if (add_diff_line(j, u, &ch[i]) < 0) {
			pve_error_oom(err);
			goto out;
		}
	if (nch == 0 && exists && plan_add(j, u, strdup("leave the config as it is (it matches)")) < 0)
		goto out;
	const char *size = tmpl_kvlist_get(&u->sets, "size");
	if (size) {
		int cmp = 0;
		if (!(disk = grow_disk(conf, u->t))) {
			pve_error_set(err, PVE_ERR_CONFIG, "%s has no disk to resize", job_subject(j));
			goto out;
		}
		if (guest_disk_compare(conf, u->t, disk, size, &cmp, err) < 0)
			goto out;
		if (plan_add(j, u, cmp < 0 ? strprintf("grow %s to %s", disk, size)
				  : cmp == 0 ? strprintf("leave %s at %s", disk, size)
					     : strprintf("leave %s as it is: larger than %s, and disks "
							 "never shrink", disk, size)) < 0)
			goto out;
	}
	bool running = exists && u->g.status && strcmp(u->g.status, "running") == 0;
	if (!u->no_start && !running && plan_add(j, u, strdup("start it and wait for its address")) < 0)
		goto out;
	if (wf_up_wants_inject(u->tmpl->n_files, u->no_inject, u->no_start) &&
	    plan_add(j, u, strprintf("inject the template's %zu guest file section%s over SSH "
				     "(their diffs: pvagent inject %s --dry-run, once it runs)",
				     u->tmpl->n_files, u->tmpl->n_files == 1 ? "" : "s",
				     job_subject(j))) < 0)
		goto out;
	/* the VMID and node it would take, for the result's table */
	if (job_set_bool(j, "planned", true) < 0 ||
	    (!exists && (json_object_object_add(job_vars(j), "plan_vmid",
						json_object_new_int(vmid)) < 0 ||
			 (node && *node && job_set_str(j, "plan_node", node) < 0)))) {
		pve_error_oom(err);
		goto out;
	}
	job_summary(j, "plan: %zu step%s, %zu config change%s", u->res->n_plan,
		    u->res->n_plan == 1 ? "" : "s", nch, nch == 1 ? "" : "s");
	rc = 0;
out:
	json_object_put(conf);
	cfgdiff_free(ch, nch);
	tmpl_kvlist_free(&desired);
	free(node);
	free(disk);
	return rc;
}

/* ---- the table ------------------------------------------------------------------------------------------ */

static const struct job_step_def up_steps[] = {
	{"find", up_find, NULL, 0},
	{"clone", up_clone, NULL, JOB_STEP_TASK},
	{"move", up_move, NULL, JOB_STEP_TASK},
	{"create", up_create, NULL, JOB_STEP_TASK},
	{"pool", up_pool, NULL, 0},
	{"config", up_config, NULL, JOB_STEP_TASK},
	{"resize", up_resize, NULL, JOB_STEP_TASK},
	{"start", up_start, NULL, JOB_STEP_TASK},
	{"address", up_address, NULL, 0},
	{"inject", up_inject, NULL, 0},
};

const struct job_workflow wf_up = {
	.name = "up",
	.params = &wf_up_params_decl,
	.steps = up_steps,
	.n_steps = sizeof up_steps / sizeof *up_steps,
	.ctx_size = sizeof(struct up_ctx),
	.open = up_open,
	.close = up_close,
};

/* ---- results ---------------------------------------------------------------------------------------------- */

/* What an interrupted job leaves, in r->left: the step it stopped in, the
 * PVE task of that step that goes on without us, the guest made so far. */
static void say_interrupted(struct job *j, struct up_result *r, const struct store_step *st,
			    size_t n)
{
	const struct store_step *at = NULL;
	for (size_t i = 0; i < n && !at; i++)
		if (st[i].state == STEP_RUNNING)
			at = &st[i];
	struct sbuf b = {0};
	int bad = 0;
	if (at)
		bad |= sbuf_addf(&b, "stopped in step %s", at->name);
	if (at && at->upid)
		bad |= sbuf_addf(&b, "; its PVE task %s goes on without pvagent", at->upid);
	if (job_vmid(j) > 0 && !r->left) /* left names it already */
		bad |= sbuf_addf(&b, "%sVM %d on %s exists", b.len ? "; " : "", job_vmid(j),
				 job_node(j) ? job_node(j) : "?");
	if (r->left)
		bad |= sbuf_addf(&b, "%s%s", b.len ? "; " : "", r->left);
	if (b.len && !bad) {
		free(r->left);
		r->left = sbuf_steal(&b);
	}
	sbuf_free(&b);
}

/* Complete r from a finished job (both workflows). */
static void result_finish(struct job *j, struct up_result *r)
{
	for (size_t i = 0; i < r->n_steps; i++)
		free(r->steps[i].step);
	free(r->steps);
	r->steps = NULL;
	r->n_steps = 0;
	size_t n;
	const struct store_step *st = job_steps(j, &n);
	r->steps = calloc(n ? n : 1, sizeof *r->steps);
	r->elapsed_s = 0;
	for (size_t i = 0; i < n; i++)
		r->elapsed_s += job_step_elapsed(j, i);
	for (size_t i = 0; r->steps && i < n; i++) {
		if (st[i].state != STEP_DONE)
			continue;
		r->steps[r->n_steps].step = strdup(st[i].name);
		r->steps[r->n_steps].elapsed_s = job_step_elapsed(j, i);
		if (r->steps[r->n_steps].step)
			r->n_steps++;
	}
	r->job = job_id(j);
	r->outcome = job_outcome(j);
	dup_into(&r->failed_step, job_failed_step(j));
	dup_into(&r->left, job_left(j));
	if (r->outcome == JOB_OUT_INTERRUPTED)
		say_interrupted(j, r, st, n);
	pve_error_clear(&r->error);
	json_object *v = job_vars(j);
	if (r->outcome != JOB_OUT_DONE) {
		json_object *eo = pve_error_to_json(job_error(j));
		pve_error_from_json(eo, &r->error);
		json_object_put(eo);
		if (r->outcome == JOB_OUT_INTERRUPTED && r->error.kind == PVE_OK)
			pve_error_set(&r->error, PVE_ERR_INTERNAL, "interrupted");
		/* down of a guest that does not exist: not found, and absent */
		bool absent = r->error.kind == PVE_ERR_NOT_FOUND &&
			      json_object_object_get_ex(v, "deleted", NULL) && !json_flag(v, "deleted");
		r->status = absent ? UP_ABSENT : UP_FAILED;
	} else if (json_flag(v, "planned")) {
		r->status = UP_PLANNED;
		if (!r->vmid)
			r->vmid = json_int0(v, "plan_vmid");
		if (!r->node && dup_into(&r->node, json_str(v, "plan_node")) < 0)
			pve_error_oom(&r->error);
	} else if (json_object_object_get_ex(v, "deleted", NULL)) {
		r->status = json_flag(v, "deleted") ? UP_DELETED : UP_ABSENT;
	} else {
		r->status = json_flag(v, "created")   ? UP_CREATED
			    : json_flag(v, "changed") ? UP_CONVERGED
						  : UP_UNCHANGED;
	}
}

int wf_result_take(struct job *j, struct up_result *r)
{
	struct up_result *own;
	if (job_wf(j) == &wf_down) {
		own = wf_down_own_result(j);
	} else {
		struct up_ctx *u = job_ctx(j);
		own = &u->own_res;
	}
	*r = *own;
	memset(own, 0, sizeof *own);
	if (!r->name) { /* never opened (no PVE client) */
		r->status = UP_FAILED;
		if (!(r->name = strdup(job_subject(j))))
			return -1;
	}
	result_finish(j, r);
	return 0;
}
