/* wf_image.c - `pvagent image build` on the job engine: the template VM of
 * a catalogue image (image.h) made through the API alone. Steps: resolve
 * (the checksum from --checksum or the published file; an existing
 * template ends the job unless --rebuild), download (download-url onto a
 * file storage as import content, checksum verified by PVE), create (the
 * VM with its disk imported from that file, the cloud-init drive and the
 * image's settings), resize, template (converted), replace (--rebuild: the
 * old template removed, or kept under another name while linked clones
 * depend on it, only now that the new one is complete; the new one takes
 * the name), cleanup (the downloaded file removed). A failure undoes the
 * done steps: no VM and no file are left. A container image (kind lxc)
 * is the newest template of its appliance in the node's catalogue, which
 * the download step fetches (POST /nodes/N/aplinfo); the VM steps skip. Every task is recorded, so a
 * killed build resumes and re-attaches to its download. */
#include "wf_image.h"
#include "wf_params.h"

#include "image.h"
#include "json.h"
#include "log.h"
#include "task.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct image_ctx {
	struct image *im;
	const char *node, *storage, *import_storage; /* borrowed from params */
	struct guest_ref g;                          /* the new VM, once made */
	char *userinfo; /* --url's user:password, a secret while the job runs */
};

static int image_open(struct job *j, void *ctx)
{
	struct image_ctx *x = ctx;
	json_object *v = job_vars(j);
	char *msg = NULL;
	const char *path = job_param_str(j, "image_path");
	if (!path || image_load_file(path, &x->im, &msg) < 0) {
		pve_error_set(job_err(j), PVE_ERR_CONFIG, "image %s: %s", job_subject(j),
			      msg ? msg : "no catalogue file");
		free(msg);
		return -1;
	}
	/* [image] mirror: the catalogue's files from there (image.h) */
	const struct conf *conf = job_env(j)->conf;
	if (image_use_mirror(x->im, conf ? conf->image.mirror : NULL) < 0)
		return pve_error_oom(job_err(j));
	/* a mirror's user:password in --url is never shown (logs, errors:
	 * wget's command line in a failed download's log) */
	size_t uil;
	const char *ui = url_userinfo(job_param_str(j, "url"), &uil);
	if (ui) {
		x->userinfo = strndup(ui, uil);
		if (!x->userinfo)
			return pve_error_oom(job_err(j));
		log_secret_add(x->userinfo);
	}
	x->node = job_param_str(j, "node");
	x->storage = job_param_str(j, "storage");
	x->import_storage = job_param_str(j, "import_storage");
	long long id = 0;
	if (json_int(v, "vmid", &id) && id > 0) {
		x->g.vmid = (int)id;
		x->g.type = GUEST_QEMU;
		x->g.node = x->node ? strdup(x->node) : NULL;
		x->g.name = json_str(v, "build_name") ? strdup(json_str(v, "build_name")) : NULL;
		job_set_guest(j, x->g.vmid, x->node);
	}
	if (!x->node || !x->storage || !x->import_storage) {
		pve_error_set(job_err(j), PVE_ERR_CONFIG, "image build: node and storages needed");
		return -1;
	}
	return 0;
}

static void image_close(struct job *j, void *ctx)
{
	(void)j;
	struct image_ctx *x = ctx;
	image_free(x->im);
	guest_ref_clear(&x->g);
	if (x->userinfo)
		log_secret_remove(x->userinfo);
	free(x->userinfo);
}

/* ---- resolve ------------------------------------------------------------------- */

/* The checksum: --checksum, or the published file's line for the image. */
static int resolve_sum(struct job *j, struct image_ctx *x, const char *url, char **algo,
		       char **hex)
{
	const char *arg = job_param_str(j, "checksum");
	const char *why = NULL;
	if (arg)
		return image_checksum_arg(arg, algo, hex, &why) == 0
			       ? 0
			       : job_fail(j, PVE_ERR_CONFIG, "--checksum %s: %s", arg, why);
	if (!x->im->checksums)
		return job_fail(j, PVE_ERR_CONFIG, "image %s publishes no checksum file: give "
				"--checksum ALGO:HEX", x->im->name);
	char *sums = NULL, *err = NULL;
	if (image_fetch(x->im->checksums, 4u << 20, 60, &sums, &err) < 0) {
		job_fail(j, PVE_ERR_CONNECT, "the checksum file: %s", err ? err : "?");
		free(err);
		return -1;
	}
	char *file = image_url_file(url);
	*hex = file ? image_checksum_find(sums, file) : NULL;
	free(sums);
	if (!*hex) {
		job_fail(j, PVE_ERR_CONFIG, "%s lists no checksum for %s: give --checksum ALGO:HEX",
			 x->im->checksums, file ? file : url);
		free(file);
		return -1;
	}
	free(file);
	*algo = strdup(x->im->algo);
	return *algo ? 0 : pve_error_oom(job_err(j));
}

static int volume_there(struct pve *c, const char *node, const char *storage,
			const char *content, const char *volid, struct pve_error *err);

/* A container image: the newest template of its appliance that the node's
 * catalogue lists (GET /nodes/N/aplinfo); there already: the job ends. */
static enum step_rc resolve_appliance(struct job *j, struct image_ctx *x)
{
	struct pve_error *err = job_err(j);
	char *n = pve_path_escape(x->node);
	json_object *d = NULL;
	if (!n || pve_getf(job_pve(j), &d, NULL, err, "/nodes/%s/aplinfo", n) < 0) {
		if (!n)
			pve_error_oom(err);
		free(n);
		return STEP_RC_FAIL;
	}
	free(n);
	size_t pl = strlen(x->im->appliance);
	const char *best = NULL;
	for (size_t i = 0; json_object_is_type(d, json_type_array) && i < json_object_array_length(d);
	     i++) {
		const char *t = json_str(json_object_array_get_idx(d, i), "template");
		if (t && strncmp(t, x->im->appliance, pl) == 0 && t[pl] == '_' &&
		    (!best || strverscmp(t, best) > 0))
			best = t;
	}
	enum step_rc rc = STEP_RC_FAIL;
	char *volid = best ? strprintf("%s:vztmpl/%s", x->import_storage, best) : NULL;
	int there = volid ? volume_there(job_pve(j), x->node, x->import_storage, "vztmpl", volid,
					 err)
			  : -1;
	if (!best)
		job_fail(j, PVE_ERR_NOT_FOUND, "the appliance catalogue of %s lists no %s_*: run "
			 "'pveam update' on the node", x->node, x->im->appliance);
	else if (there < 0)
		;
	else if (job_set_str(j, "template", best) < 0 || job_set_str(j, "volid", volid) < 0)
		pve_error_oom(err);
	else if (there) {
		job_summary(j, "%s is there already", volid);
		rc = STEP_RC_END;
	} else {
		job_summary(j, "%s", best);
		rc = STEP_RC_OK;
	}
	free(volid);
	json_object_put(d);
	return rc;
}

static enum step_rc step_resolve(struct job *j)
{
	struct image_ctx *x = job_ctx(j);
	struct pve_error *err = job_err(j);
	if (x->im->lxc)
		return resolve_appliance(j, x);
	const char *given = job_param_str(j, "url"), *url = given ? given : x->im->url;
	if (x->im->compression && !given)
		return job_fail(j, PVE_ERR_CONFIG,
				"image %s is published %s-compressed, and PVE's download-url "
				"decompresses only ISO images: give --url of an uncompressed copy "
				"(and --checksum ALGO:HEX of it)",
				x->im->name, x->im->compression);
	char *algo = NULL, *hex = NULL;
	if (resolve_sum(j, x, url, &algo, &hex) < 0)
		return STEP_RC_FAIL;
	char *final = image_vm_name(x->im->name);
	struct guest_ref old = {0};
	int found = final ? guest_find(job_pve(j), final, &old, err) : pve_error_oom(err);
	enum step_rc rc = STEP_RC_FAIL;
	bool rebuild = job_param_bool(j, "rebuild");
	char *file = strprintf("%s-%.12s.%s", x->im->name, hex, x->im->format);
	char *volid = file ? strprintf("%s:import/%s", x->import_storage, file) : NULL;
	char *build = final ? strprintf("%s%s", final, found == 1 ? "-new" : "") : NULL;
	if (found < 0) {
		rc = STEP_RC_FAIL; /* err says why */
	} else if (found == 1 && !rebuild) {
		job_set_guest(j, old.vmid, old.node);
		job_summary(j, "%s exists (VMID %d on %s); --rebuild replaces it", final, old.vmid,
			    old.node);
		rc = STEP_RC_END;
	} else if (!volid || !build || job_set_str(j, "algo", algo) < 0 || job_set_str(j, "sum", hex) < 0 ||
		   job_set_str(j, "url", url) < 0 || job_set_str(j, "file", file) < 0 ||
		   job_set_str(j, "volid", volid) < 0 || job_set_str(j, "final_name", final) < 0 ||
		   job_set_str(j, "build_name", build) < 0 ||
		   (found == 1 && job_set_int(j, "old_vmid", old.vmid) < 0)) {
		pve_error_oom(err);
	} else {
		job_summary(j, "%s:%s", algo, hex);
		rc = STEP_RC_OK;
	}
	guest_ref_clear(&old);
	free(algo);
	free(hex);
	free(final);
	free(file);
	free(volid);
	free(build);
	return rc;
}

/* ---- download ------------------------------------------------------------------- */

/* Is volid on storage of node (GET .../content?content=CONTENT)? 1, 0,
 * -1. */
static int volume_there(struct pve *c, const char *node, const char *storage,
			const char *content, const char *volid, struct pve_error *err)
{
	char *n = pve_path_escape(node), *s = pve_path_escape(storage);
	json_object *d = NULL;
	int rc = n && s ? pve_getf(c, &d, NULL, err, "/nodes/%s/storage/%s/content?content=%s",
				   n, s, content)
			: pve_error_oom(err);
	free(n);
	free(s);
	if (rc < 0)
		return -1;
	int found = 0;
	for (size_t i = 0; json_object_is_type(d, json_type_array) && i < json_object_array_length(d);
	     i++) {
		const char *v = json_str(json_object_array_get_idx(d, i), "volid");
		found = found || (v && strcmp(v, volid) == 0);
	}
	json_object_put(d);
	return found;
}

static int running_task(struct job *j, struct image_ctx *x, const char *type, const char *file);

/* DELETE the volume (an imgdel task); absent is done, and so is a delete
 * whose answer was lost once the file is gone. */
static int delete_volume(struct job *j, const char *node, const char *storage, const char *volid)
{
	struct pve_error *err = job_err(j);
	int there = volume_there(job_pve(j), node, storage, "import", volid, err);
	if (there <= 0)
		return there;
	char *n = pve_path_escape(node), *s = pve_path_escape(storage), *v = pve_path_escape(volid);
	char *path = n && s && v ? strprintf("/nodes/%s/storage/%s/content/%s", n, s, v) : NULL;
	int rc = path ? guest_node_task(job_pve(j), "DELETE", path, NULL, "imgdel", job_wait(j),
					NULL, err)
		      : pve_error_oom(err);
	free(n);
	free(s);
	free(v);
	free(path);
	if (rc < 0) {
		/* the answer lost after the delete was made (its task may still
		 * run): read back, so that a removed file is not reported left */
		struct pve_error e = {0};
		pve_error_move(&e, err);
		if (running_task(j, job_ctx(j), "imgdel", storage) >= 0 &&
		    volume_there(job_pve(j), node, storage, "import", volid, err) == 0) {
			pve_error_clear(&e);
			return 0;
		}
		pve_error_clear(err);
		pve_error_move(err, &e);
	}
	return rc;
}

/* A request whose answer was lost: its task if it still runs (GET
 * /nodes/N/tasks, active, of type, with id: a download's is the file
 * name, an imgdel's the storage) is waited for, so that the file is not
 * fetched twice nor taken for left while it is being removed. 1 (waited
 * for, and it ended well), 0 (none runs) or -1. */
static int running_task(struct job *j, struct image_ctx *x, const char *type, const char *file)
{
	struct pve_error *err = job_err(j);
	char *n = pve_path_escape(x->node);
	json_object *d = NULL;
	int rc = n ? pve_getf(job_pve(j), &d, NULL, err,
			      "/nodes/%s/tasks?source=active&typefilter=%s", n, type)
		   : pve_error_oom(err);
	free(n);
	const char *upid = NULL;
	for (size_t i = 0; rc == 0 && json_object_is_type(d, json_type_array) &&
			   i < json_object_array_length(d) && !upid;
	     i++) {
		json_object *t = json_object_array_get_idx(d, i);
		const char *id = json_str(t, "id");
		if (id && file && strcmp(id, file) == 0)
			upid = json_str(t, "upid");
	}
	if (upid) {
		log_info("%s: waiting for the %s task an earlier request started (%s)",
			 job_subject(j), type, upid);
		struct guest_wait wa = *job_wait(j);
		wa.attach = true;
		rc = guest_wait_task(job_pve(j), upid, type, &wa, NULL, err) < 0 ? -1 : 1;
	}
	json_object_put(d);
	return rc;
}

/* The download-url (or aplinfo) POST whose answer was lost (err
 * ambiguous): taken effect when the file is there or its task runs
 * (waited for); else sent once more, as up's clone is. 0 or -1. */
static int download_lost_answer(struct job *j, struct image_ctx *x, const char *path,
				const struct pve_params *p)
{
	struct pve_error *err = job_err(j);
	json_object *v = job_vars(j);
	const char *volid = json_str(v, "volid"), *content = x->im->lxc ? "vztmpl" : "import";
	for (int resent = 0;; resent++) {
		/* given up on by us, it may still be on its way */
		if (err->kind == PVE_ERR_TIMEOUT)
			job_settle(j);
		struct pve_error saved = {0};
		pve_error_move(&saved, err);
		int t = volume_there(job_pve(j), x->node, x->import_storage, content, volid, err);
		if (t == 0)
			t = running_task(j, x, "download", json_str(v, x->im->lxc ? "template" : "file"));
		if (t != 0) {
			pve_error_clear(&saved); /* took effect (1), or err says why not */
			return t > 0 ? 0 : -1;
		}
		pve_error_move(err, &saved);
		if (resent) {
			/* no file, no task: nothing to undo here */
			err->ambiguous = false;
			return -1;
		}
		log_info("%s: %s; the download did not start: sending it again", job_subject(j),
			 err->message ? err->message : "no answer");
		pve_error_clear(err);
		if (guest_node_task(job_pve(j), "POST", path, p, "download", job_wait(j), NULL,
				    err) == 0)
			return 0;
		if (!err->ambiguous)
			return -1;
	}
}

static enum step_rc step_download(struct job *j)
{
	struct image_ctx *x = job_ctx(j);
	json_object *v = job_vars(j);
	struct pve_error *err = job_err(j);
	const char *volid = json_str(v, "volid");
	if (!job_step_upid(j) && job_step_attempts(j) > 0) {
		/* sent by an earlier run, its answer lost: once it can no
		 * longer be on its way, its task if it runs */
		job_settle(j);
		if (running_task(j, x, "download", json_str(v, x->im->lxc ? "template" : "file")) < 0)
			return STEP_RC_FAIL;
	}
	int there = job_step_upid(j) ? 0 : volume_there(job_pve(j), x->node, x->import_storage,
							x->im->lxc ? "vztmpl" : "import", volid,
							err);
	if (there < 0)
		return STEP_RC_FAIL;
	/* a container template is what the build makes: it stays */
	job_set_left(j, x->im->lxc ? NULL : "the downloaded file %s on %s", volid, x->node);
	if (there) {
		job_summary(j, "%s is there already", volid);
		return STEP_RC_OK;
	}
	struct pve_params p = {0};
	if (x->im->lxc) {
		pve_params_add(&p, "storage", x->import_storage);
		pve_params_add(&p, "template", json_str(v, "template"));
	} else {
		pve_params_add(&p, "url", json_str(v, "url"));
		pve_params_add(&p, "content", "import");
		pve_params_add(&p, "filename", json_str(v, "file"));
		pve_params_add(&p, "checksum", json_str(v, "sum"));
		pve_params_add(&p, "checksum-algorithm", json_str(v, "algo"));
	}
	char *n = pve_path_escape(x->node), *s = pve_path_escape(x->import_storage);
	char *path = !n || !s ? NULL
		     : x->im->lxc ? strprintf("/nodes/%s/aplinfo", n)
				  : strprintf("/nodes/%s/storage/%s/download-url", n, s);
	int rc = path && !p.failed ? guest_node_task(job_pve(j), "POST", path, &p, "download",
						     job_wait(j), NULL, err)
				   : pve_error_oom(err);
	if (rc < 0 && err->ambiguous)
		rc = download_lost_answer(j, x, path, &p);
	pve_params_free(&p);
	free(n);
	free(s);
	free(path);
	if (rc < 0) {
		job_set_left(j, NULL); /* PVE removes a failed download's file */
		return STEP_RC_FAIL;
	}
	job_summary(j, "%s", volid);
	return STEP_RC_OK;
}

static int undo_download(struct job *j)
{
	struct image_ctx *x = job_ctx(j);
	if (x->im->lxc)
		return 1; /* the template is the result, complete */
	if (delete_volume(j, x->node, x->import_storage, json_str(job_vars(j), "volid")) < 0)
		return -1;
	if (!x->g.vmid)
		job_set_left(j, NULL); /* and no VM stayed (undo_create) */
	return 0;
}

/* What a build has made so far, once its VM is made: the VM, a template
 * (done: its name taken, or still the build's name) and the file. */
static void left_made(struct job *j, struct image_ctx *x, bool template, bool named)
{
	json_object *v = job_vars(j);
	const char *volid = json_str(v, "volid");
	if (!template)
		job_set_left(j, "VM %d (%s) on %s, not yet a template; the downloaded file %s",
			     x->g.vmid, json_str(v, "build_name"), x->node, volid);
	else if (!named)
		job_set_left(j, "VM %d (%s) on %s, a template not yet named %s; the downloaded "
			     "file %s", x->g.vmid, json_str(v, "build_name"), x->node,
			     json_str(v, "final_name"), volid);
	else
		job_set_left(j, "the downloaded file %s on %s (the template VM %d, %s, is done)",
			     volid, x->node, x->g.vmid, json_str(v, "final_name"));
}

/* ---- create ---------------------------------------------------------------------- */

static int create_params(void *ctx, int vmid, struct pve_params *p, struct pve_error *err)
{
	struct job *j = ctx;
	struct image_ctx *x = job_ctx(j);
	json_object *v = job_vars(j);
	const struct image *im = x->im;
	(void)vmid;
	for (size_t i = 0; i < im->vm.n; i++)
		pve_params_add(p, im->vm.items[i].key, im->vm.items[i].value);
	pve_params_addf(p, im->disk, "%s:0,import-from=%s,discard=on", x->storage,
			json_str(v, "volid"));
	pve_params_addf(p, "ide2", "%s:cloudinit", x->storage);
	pve_params_addf(p, "boot", "order=%s", im->disk);
	pve_params_add(p, "citype", im->cloudinit);
	pve_params_add(p, "ciuser", im->user);
	pve_params_addf(p, "tags", "%s", IMAGE_TAG);
	char *url = url_shown(json_str(v, "url"));
	pve_params_addf(p, "description", "pvagent image %s (%s:%s from %s)", im->name,
			json_str(v, "algo"), json_str(v, "sum"), url ? url : "?");
	free(url);
	return p->failed ? pve_error_oom(err) : 0;
}

static enum step_rc step_create(struct job *j)
{
	struct image_ctx *x = job_ctx(j);
	if (x->im->lxc)
		return STEP_RC_SKIP;
	struct pve_error *err = job_err(j);
	const char *name = json_str(job_vars(j), "build_name");
	if (x->g.vmid) {
		/* a resumed job: the VM its earlier run made */
		struct guest_ref g = {0};
		int r = guest_find_by_vmid(job_pve(j), x->g.vmid, &g, err);
		bool ours = r == 1 && g.name && strcmp(g.name, name) == 0;
		guest_ref_clear(&g);
		if (r < 0)
			return STEP_RC_FAIL;
		if (ours) {
			job_summary(j, "VM %d", x->g.vmid);
			return STEP_RC_OK;
		}
		guest_ref_clear(&x->g);
	}
	const char *upid = job_step_upid(j);
	if (upid || job_step_attempts(j) > 0) {
		/* killed after the create was sent: its task (the UPID names the
		 * new VMID), or, the answer lost, a VM of our name */
		struct guest_ref g = {0};
		int r = 0;
		if (upid) {
			struct task_upid tu;
			struct guest_wait wa = *job_wait(j);
			wa.attach = true;
			if (task_upid_parse(upid, &tu) == 0) {
				g.vmid = atoi(tu.id);
				task_upid_free(&tu);
			}
			if (guest_wait_task(job_pve(j), upid, "create", &wa, NULL, err) < 0)
				return STEP_RC_FAIL;
			r = g.vmid > 0 ? guest_find_by_vmid(job_pve(j), g.vmid, &g, err) : 0;
		} else {
			job_settle(j);
			r = guest_find(job_pve(j), name, &g, err);
		}
		if (r < 0)
			return STEP_RC_FAIL;
		if (r == 1) {
			guest_ref_clear(&x->g);
			x->g = g;
			if (job_set_int(j, "vmid", x->g.vmid) < 0 ||
			    job_set_guest(j, x->g.vmid, x->g.node) < 0)
				return pve_error_oom(err);
			job_summary(j, "VM %d (made by the earlier run)", x->g.vmid);
			return STEP_RC_OK;
		}
	}
	long long want = job_param_int(j, "vmid");
	struct guest_create_req cr = {
		.type = GUEST_QEMU,
		.node = x->node,
		.name = name,
		.vmid = {.vmid = (int)want},
		.params = create_params,
		.params_ctx = j,
	};
	if (guest_create(job_pve(j), &cr, job_wait(j), &x->g, NULL, err) < 0)
		return STEP_RC_FAIL;
	if (job_set_int(j, "vmid", x->g.vmid) < 0 || job_set_guest(j, x->g.vmid, x->g.node) < 0)
		return pve_error_oom(err);
	left_made(j, x, false, false);
	job_summary(j, "VM %d from %s", x->g.vmid, json_str(job_vars(j), "volid"));
	return STEP_RC_OK;
}

static int undo_create(struct job *j)
{
	struct image_ctx *x = job_ctx(j);
	if (!x->g.vmid)
		return 0;
	if (guest_delete(job_pve(j), &x->g, true, job_wait(j), NULL, job_err(j)) < 0)
		return -1;
	guest_ref_clear(&x->g); /* gone: the file is what is left */
	job_set_left(j, "the downloaded file %s on %s", json_str(job_vars(j), "volid"), x->node);
	return 0;
}

/* ---- resize and template -------------------------------------------------------------- */

static enum step_rc step_resize(struct job *j)
{
	struct image_ctx *x = job_ctx(j);
	if (x->im->lxc)
		return STEP_RC_SKIP;
	if (!x->im->disk_size)
		return STEP_RC_SKIP;
	bool grown = false;
	if (guest_resize(job_pve(j), &x->g, x->im->disk, x->im->disk_size, job_wait(j), &grown,
			 NULL, job_err(j)) < 0)
		return STEP_RC_FAIL;
	job_summary(j, "%s %s", x->im->disk, grown ? x->im->disk_size : "unchanged");
	return STEP_RC_OK;
}

static enum step_rc step_template(struct job *j)
{
	struct image_ctx *x = job_ctx(j);
	if (x->im->lxc)
		return STEP_RC_SKIP;
	if (guest_make_template(job_pve(j), &x->g, job_wait(j), job_err(j)) < 0)
		return STEP_RC_FAIL;
	long long old = 0;
	left_made(j, x, true, !json_int(job_vars(j), "old_vmid", &old) || old <= 0);
	job_summary(j, "VM %d is a template", x->g.vmid);
	return STEP_RC_OK;
}

/* ---- replace and cleanup ----------------------------------------------------------------- */

int wf_image_clones(struct pve *c, int vmid, char ***names, size_t *n, struct pve_error *err)
{
	*names = NULL;
	*n = 0;
	struct guest_list l;
	if (guest_list(c, NULL, &l, err) < 0)
		return -1;
	char *base = strprintf("base-%d-disk-", vmid);
	int rc = base ? 0 : pve_error_oom(err);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		if (l.v[i].type != GUEST_QEMU || l.v[i].vmid == vmid || l.v[i].template)
			continue;
		json_object *conf = NULL;
		if (guest_get_config(c, &l.v[i], &conf, err) < 0) {
			rc = -1;
			break;
		}
		bool uses = false;
		json_object_object_foreach(conf, k, val) {
			(void)k;
			const char *s = json_object_get_string(val);
			uses = uses || (s && base && strstr(s, base));
		}
		json_object_put(conf);
		if (!uses)
			continue;
		char **nv = realloc(*names, (*n + 1) * sizeof *nv);
		char *nm = strprintf("%s (VMID %d)", l.v[i].name ? l.v[i].name : "?", l.v[i].vmid);
		if (!nv || !nm) {
			if (nv)
				*names = nv;
			free(nm);
			rc = pve_error_oom(err);
			break;
		}
		*names = nv;
		(*names)[(*n)++] = nm;
	}
	free(base);
	guest_list_free(&l);
	if (rc < 0) {
		for (size_t i = 0; i < *n; i++)
			free((*names)[i]);
		free(*names);
		*names = NULL;
		*n = 0;
	}
	return rc;
}

static int rename_vm(struct job *j, struct guest_ref *g, const char *name)
{
	struct pve_params p = {0};
	pve_params_add(&p, "name", name);
	int rc = p.failed ? pve_error_oom(job_err(j))
			  : guest_set_config(job_pve(j), g, &p, NULL, NULL, false, job_wait(j),
					     job_err(j));
	pve_params_free(&p);
	return rc;
}

static enum step_rc step_replace(struct job *j)
{
	struct image_ctx *x = job_ctx(j);
	if (x->im->lxc)
		return STEP_RC_SKIP;
	struct pve_error *err = job_err(j);
	long long old = 0;
	if (!json_int(job_vars(j), "old_vmid", &old) || old <= 0)
		return STEP_RC_SKIP;
	const char *final = json_str(job_vars(j), "final_name");
	/* resumed after its task on the old template (removed, or renamed to
	 * be kept) was recorded: that task, then the new one's rename is a
	 * request of its own, not that task again */
	const char *upid = job_step_upid(j);
	struct task_upid tu;
	if (upid && task_upid_parse(upid, &tu) == 0) {
		bool of_old = atoi(tu.id) == old;
		task_upid_free(&tu);
		struct guest_wait wa = *job_wait(j);
		wa.attach = true;
		if (of_old && guest_wait_task(job_pve(j), upid, "replace", &wa, NULL, err) < 0)
			return STEP_RC_FAIL;
		if (of_old)
			job_step_resumed_task_done(j);
	}
	struct guest_ref og = {0};
	int r = guest_find_by_vmid(job_pve(j), (int)old, &og, err);
	if (r < 0)
		return STEP_RC_FAIL;
	enum step_rc rc = STEP_RC_FAIL;
	if (r == 1 && og.name && strcmp(og.name, final) == 0) {
		char **clones = NULL;
		size_t nc = 0;
		if (wf_image_clones(job_pve(j), og.vmid, &clones, &nc, err) < 0)
			goto out;
		int k;
		if (nc) {
			char *keep = strprintf("%s-%d", final, og.vmid);
			k = keep ? rename_vm(j, &og, keep) : pve_error_oom(err);
			job_note(j, "the old template VM %d has %zu linked clone%s: kept as %s", og.vmid,
				 nc, nc == 1 ? "" : "s", keep ? keep : "?");
			free(keep);
		} else {
			k = guest_delete(job_pve(j), &og, true, job_wait(j), NULL, err);
		}
		for (size_t i = 0; i < nc; i++)
			free(clones[i]);
		free(clones);
		if (k < 0)
			goto out;
	}
	if (strcmp(x->g.name ? x->g.name : "", final) != 0 && rename_vm(j, &x->g, final) < 0)
		goto out;
	left_made(j, x, true, true);
	job_summary(j, "VM %d is %s now", x->g.vmid, final);
	rc = STEP_RC_OK;
out:
	guest_ref_clear(&og);
	return rc;
}

static enum step_rc step_cleanup(struct job *j)
{
	struct image_ctx *x = job_ctx(j);
	if (x->im->lxc)
		return STEP_RC_SKIP;
	const char *volid = json_str(job_vars(j), "volid");
	if (delete_volume(j, x->node, x->import_storage, volid) < 0)
		return STEP_RC_FAIL;
	job_set_left(j, NULL);
	job_summary(j, "%s removed", volid);
	return STEP_RC_OK;
}

static const struct job_step_def image_steps[] = {
	{"resolve", step_resolve, NULL, 0},
	{"download", step_download, undo_download, JOB_STEP_TASK},
	{"create", step_create, undo_create, JOB_STEP_TASK},
	{"resize", step_resize, NULL, JOB_STEP_TASK},
	{"template", step_template, NULL, JOB_STEP_TASK},
	{"replace", step_replace, NULL, JOB_STEP_TASK | JOB_STEP_NO_UNDO},
	{"cleanup", step_cleanup, NULL, JOB_STEP_TASK | JOB_STEP_NO_UNDO},
};

const struct job_workflow wf_image = {
	.name = "image",
	.params = &wf_image_params_decl,
	.steps = image_steps,
	.n_steps = sizeof image_steps / sizeof image_steps[0],
	.ctx_size = sizeof(struct image_ctx),
	.open = image_open,
	.close = image_close,
	.undo_on_failure = true,
};
