/* wf_bench.c - `pvagent bench` as a job (wf_bench.h): open finds the guest
 * from the job's params (target.h); connect, detect the OS and which disk
 * to read, measure (bench.h), store the figures in state.db, every result
 * in the job's vars. A stopped benchmark leaves nothing: bench_run removes
 * its test directory; a resume or a rerun measures again. */
#include "wf_bench.h"
#include "wf_params.h"

#include "osdetect.h"
#include "log.h"
#include "pvecfg.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct bench_ctx {
	struct guest_target gt;
	struct tmpl_kvlist tvars;
	unsigned size_mib;
	char *db;                /* state.db for the figures, or NULL */
	struct ssh_session *s;
	struct guest_os det;
	char *disk;
	const char *bus, *nic;
};

json_object *wf_bench_params(const struct target_req *req, unsigned size_mib)
{
	json_object *p = json_object_new_object();
	const struct job_params_decl *d = &wf_bench_params_decl;
	if (!p || target_params_add(d, p, req) < 0 ||
	    (size_mib && job_param_set_int(d, p, "size_mib", size_mib) < 0)) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

static int bench_open(struct job *j, void *ctx)
{
	struct bench_ctx *x = ctx;
	struct pve_error *err = job_err(j);
	x->size_mib = (unsigned)job_param_int(j, "size_mib"); /* 0: bench.h's default */
	if (guest_target_open_job(j, true, false, &x->gt, &x->tvars) < 0)
		return -1;
	if (job_env(j)->store && !(x->db = bench_db_path(job_env(j)->conf->paths.state)))
		return pve_error_oom(err);
	return 0;
}

void bench_guest_disk(json_object *config, const struct os_profile *p, char **name,
		      const char **bus, const char **nic)
{
	struct pvecfg_hw hw = {0};
	*name = NULL;
	*bus = "-";
	*nic = "-";
	if (!config || pvecfg_hw_read(config, &hw) < 0)
		return;
	json_object *v = NULL;
	const char *boot = json_object_object_get_ex(config, "boot", &v) ? json_object_get_string(v)
									: NULL;
	const char *bootdisk = json_object_object_get_ex(config, "bootdisk", &v)
				       ? json_object_get_string(v) : NULL;
	const struct pvecfg_disk *d = pvecfg_boot_disk(&hw, boot, bootdisk);
	if (d) {
		bool vscsi = hw.scsihw && strncmp(hw.scsihw, "virtio-scsi", 11) == 0;
		unsigned idx = 0; /* among the non-cdrom disks of its bus, in PVE order */
		for (const struct pvecfg_disk *x = hw.disks; x < d; x++)
			idx += !x->cdrom && x->bus == d->bus;
		enum dbus db = DBUS_IDE;
		switch (d->bus) {
		case BUS_IDE: *bus = "ide"; db = DBUS_IDE; break;
		case BUS_VIRTIO: *bus = "virtio-blk"; db = DBUS_VIRTIO_BLK; break;
		case BUS_SCSI: *bus = vscsi ? "virtio-scsi" : "scsi"; db = DBUS_VIRTIO_SCSI; break;
		case BUS_SATA: *bus = "sata"; break;
		default: break;
		}
		if (p && d->bus != BUS_SATA && (d->bus != BUS_SCSI || vscsi))
			*name = osprof_disk_name(p, db, idx);
	}
	if (hw.n_nics && hw.nics[0].model)
		*nic = strcmp(hw.nics[0].model, "virtio") == 0 ? "virtio"
		     : strcmp(hw.nics[0].model, "e1000") == 0 ? "e1000"
		     : strcmp(hw.nics[0].model, "e1000e") == 0 ? "e1000e" : "other";
	pvecfg_hw_free(&hw);
}


void bench_job_phase(void *job, const char *phase, const char *text)
{
	job_note(job, "%s: %s", phase, text ? text : "");
}

/* The session to the guest: connected once per process (a resumed job's
 * first step may be any). STEP_RC_OK, or the job failed. */
static enum step_rc ensure_session(struct job *j, struct bench_ctx *x)
{
	if (x->s)
		return STEP_RC_OK;
	struct ssh_error e = {0};
	if (ssh_connect(&x->gt.ssh, &x->s, &e) < 0) {
		x->s = NULL;
		enum step_rc rc = job_fail_outcome(j, ssh_error_outcome(&e), ssh_error_str(&e));
		ssh_error_clear(&e);
		return rc;
	}
	return STEP_RC_OK;
}

/* The guest's OS and which disk, bus and NIC it runs on, detected once
 * per process. */
static enum step_rc ensure_detected(struct job *j, struct bench_ctx *x)
{
	if (x->det.desc)
		return STEP_RC_OK;
	if (ensure_session(j, x) != STEP_RC_OK)
		return STEP_RC_FAIL;
	struct ssh_error se = {0};
	char *err = NULL, *msg = NULL;
	if (guest_os_detect(x->s, &x->det, &se, &err) < 0) {
		enum step_rc rc = job_fail_outcome(j, guest_os_failure(err, &se, &msg),
						   msg ? msg : "detect: out of memory");
		guest_os_free(&x->det);
		ssh_error_clear(&se);
		free(err);
		free(msg);
		return rc;
	}
	free(x->disk);
	bench_guest_disk(x->gt.config, x->det.have_profile ? &x->det.profile : NULL, &x->disk,
			 &x->bus, &x->nic);
	return STEP_RC_OK;
}

static enum step_rc st_connect(struct job *j)
{
	struct bench_ctx *x = job_ctx(j);
	if (ensure_session(j, x) != STEP_RC_OK)
		return STEP_RC_FAIL;
	job_summary(j, "%s", x->gt.ssh.host);
	return STEP_RC_OK;
}

static enum step_rc st_detect(struct job *j)
{
	struct bench_ctx *x = job_ctx(j);
	guest_os_free(&x->det);
	if (ensure_detected(j, x) != STEP_RC_OK)
		return STEP_RC_FAIL;
	job_summary(j, "%s, %s (%s/%s)", x->det.desc, x->disk ? x->disk : "no raw disk", x->bus,
		    x->nic);
	return STEP_RC_OK;
}

static enum step_rc st_measure(struct job *j)
{
	struct bench_ctx *x = job_ctx(j);
	if (ensure_detected(j, x) != STEP_RC_OK)
		return STEP_RC_FAIL;
	struct bench_request q = {
		.os = x->det.os.family,
		.size_mib = x->size_mib,
		.raw_disk = x->disk,
		.bus = x->bus,
		.nic = x->nic,
		.on_event = bench_job_phase,
		.event_ctx = j,
	};
	char *err = NULL;
	struct bench_result now = {0};
	enum step_rc rc = STEP_RC_OK;
	if (bench_run(x->s, &q, &now, &err) < 0) {
		rc = job_fail_outcome(j, now.outcome, err);
	} else {
		json_object *o = bench_result_json(&now);
		if (!o || json_object_object_add(job_vars(j), "bench", o) < 0) {
			json_object_put(o);
			rc = pve_error_oom(job_err(j));
		} else {
			job_summary(j, "%u MiB on %s", now.size_mib, x->bus);
		}
	}
	free(err);
	bench_result_free(&now);
	return rc;
}

/* The figures in the job's vars under key: 1, 0 none, -1 (*err). */
static int vars_figures(struct job *j, const char *key, struct bench_result *out, char **err)
{
	json_object *o = NULL;
	if (!json_object_object_get_ex(job_vars(j), key, &o) || !o)
		return 0;
	return bench_result_from_json(o, out, err) < 0 ? -1 : 1;
}

static enum step_rc st_store(struct job *j)
{
	struct bench_ctx *x = job_ctx(j);
	if (!x->db)
		return STEP_RC_SKIP;
	const char *name = x->gt.ref.name ? x->gt.ref.name : job_subject(j);
	struct bench_result now = {0}, last = {0};
	char *serr = NULL;
	if (vars_figures(j, "bench", &now, &serr) != 1) {
		enum step_rc rc = job_fail(j, PVE_ERR_INTERNAL, "%s: the figures: %s", name,
					   serr ? serr : "not measured");
		free(serr);
		bench_result_free(&now);
		return rc;
	}
	/* the run before this one, for the comparison; then this one */
	int had = bench_last(x->db, name, x->gt.ref.vmid, &last, &serr);
	if (had < 0) {
		log_warn("%s: cannot read earlier results: %s", name, serr ? serr : "error");
		free(serr);
		serr = NULL;
	} else if (had > 0 &&
		   json_object_object_add(job_vars(j), "before", bench_result_json(&last)) < 0) {
		log_warn("%s: out of memory for the earlier results", name);
	}
	enum step_rc rc = STEP_RC_OK;
	if (bench_store(x->db, name, x->gt.ref.vmid, &now, &serr) < 0) {
		/* the figures are there; only their record is not */
		log_warn("%s: the result was not stored in %s: %s", name, x->db,
			 serr ? serr : "error");
		rc = STEP_RC_SKIP;
	} else {
		job_summary(j, "stored");
	}
	free(serr);
	bench_result_free(&now);
	bench_result_free(&last);
	return rc;
}

static void bench_close(struct job *j, void *ctx)
{
	(void)j;
	struct bench_ctx *x = ctx;
	ssh_close(x->s);
	guest_os_free(&x->det);
	free(x->disk);
	free(x->db);
	guest_target_free(&x->gt);
	tmpl_kvlist_free(&x->tvars);
}

static const struct job_step_def bench_steps[] = {
	{"connect", st_connect, NULL, 0},
	{"detect", st_detect, NULL, 0},
	{"measure", st_measure, NULL, 0},
	{"store", st_store, NULL, 0},
};

const struct job_workflow wf_bench = {
	.name = "bench",
	.params = &wf_bench_params_decl,
	.steps = bench_steps,
	.n_steps = sizeof bench_steps / sizeof *bench_steps,
	.ctx_size = sizeof(struct bench_ctx),
	.open = bench_open,
	.close = bench_close,
};

int wf_bench_result(struct job *j, struct bench_result *now, struct bench_result *before,
		    bool *have_before, char **err)
{
	*have_before = false;
	int r = vars_figures(j, "bench", now, err);
	if (r <= 0)
		return r;
	int b = vars_figures(j, "before", before, err);
	if (b < 0) {
		bench_result_free(now);
		return -1;
	}
	*have_before = b > 0;
	return 1;
}
