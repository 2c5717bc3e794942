/* wf_bench.c - `pvagent bench` as a job (wf_bench.h): connect, detect the
 * OS and which disk to read, measure (bench.h), store the figures in
 * state.db. A stopped benchmark leaves nothing: bench_run removes its test
 * directory; a rerun measures again. */
#include "wf_bench.h"

#include "inject.h"
#include "log.h"
#include "pvecfg.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct bench_ctx {
	const struct bench_job_request *req;
	struct bench_job_result *res;
	struct ssh_session *s;
	struct inject_result det;
	char *disk;
	const char *bus, *nic;
};

void bench_job_result_free(struct bench_job_result *r)
{
	bench_result_free(&r->now);
	free(r->error);
	memset(r, 0, sizeof *r);
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

/* The job's error from a lower module's outcome and message (also the
 * result's). */
static enum step_rc failed(struct job *j, struct bench_ctx *x, enum job_outcome o,
			   const char *msg)
{
	free(x->res->error);
	x->res->error = strdup(msg ? msg : "failed");
	return job_fail_outcome(j, o, msg);
}

static enum step_rc st_connect(struct job *j)
{
	struct bench_ctx *x = job_ctx(j);
	struct ssh_error e = {0};
	if (ssh_connect(x->req->ssh, &x->s, &e) < 0) {
		enum step_rc rc = failed(j, x, ssh_error_outcome(&e), ssh_error_str(&e));
		ssh_error_clear(&e);
		return rc;
	}
	job_summary(j, "%s", x->req->ssh->host);
	return STEP_RC_OK;
}

static enum step_rc st_detect(struct job *j)
{
	struct bench_ctx *x = job_ctx(j);
	struct inject_request q = {.session = x->s, .ssh = x->req->ssh};
	inject_result_free(&x->det);
	if (inject_run(&q, &x->det) < 0)
		return failed(j, x, x->det.outcome, x->det.error ? x->det.error : "no OS");
	bench_guest_disk(x->req->config, x->det.have_profile ? &x->det.profile : NULL, &x->disk,
			 &x->bus, &x->nic);
	job_summary(j, "%s, %s (%s/%s)", x->det.os_desc ? x->det.os_desc : "?",
		    x->disk ? x->disk : "no raw disk", x->bus, x->nic);
	return STEP_RC_OK;
}

static enum step_rc st_measure(struct job *j)
{
	struct bench_ctx *x = job_ctx(j);
	struct bench_request q = {
		.os = x->det.os.family,
		.size_mib = x->req->size_mib,
		.raw_disk = x->disk,
		.bus = x->bus,
		.nic = x->nic,
		.on_event = bench_job_phase,
		.event_ctx = j,
	};
	char *err = NULL;
	bench_result_free(&x->res->now);
	if (bench_run(x->s, &q, &x->res->now, &err) < 0) {
		enum step_rc rc = failed(j, x, x->res->now.outcome, err);
		free(err);
		return rc;
	}
	job_summary(j, "%u MiB on %s", x->res->now.size_mib, x->bus);
	return STEP_RC_OK;
}

static enum step_rc st_store(struct job *j)
{
	struct bench_ctx *x = job_ctx(j);
	if (!x->req->db)
		return STEP_RC_SKIP;
	char *serr = NULL;
	if (bench_store(x->req->db, x->req->name, x->req->vmid, &x->res->now, &serr) < 0) {
		/* the figures are there; only their record is not */
		log_warn("%s: the result was not stored in %s: %s", x->req->name, x->req->db,
			 serr ? serr : "error");
		free(serr);
		return STEP_RC_SKIP;
	}
	job_summary(j, "stored");
	return STEP_RC_OK;
}

static void bench_close(struct job *j, void *ctx)
{
	(void)j;
	struct bench_ctx *x = ctx;
	ssh_close(x->s);
	inject_result_free(&x->det);
	free(x->disk);
}

static const struct job_step_def bench_steps[] = {
	{"connect", st_connect, NULL, 0},
	{"detect", st_detect, NULL, 0},
	{"measure", st_measure, NULL, 0},
	{"store", st_store, NULL, 0},
};

const struct job_workflow wf_bench = {
	.name = "bench",
	.steps = bench_steps,
	.n_steps = sizeof bench_steps / sizeof *bench_steps,
	.ctx_size = sizeof(struct bench_ctx),
	.close = bench_close,
};

int bench_job_run(struct store *store, volatile sig_atomic_t *stop,
		  const struct bench_job_request *req, const char *const *cli_args,
		  struct bench_job_result *r)
{
	memset(r, 0, sizeof *r);
	struct job_env env = {
		.store = store,
		.stop = stop,
		.on_event = req->on_event,
		.event_ctx = req->event_ctx,
	};
	struct job *j = NULL;
	struct pve_error e = {0};
	json_object *params = job_cli_params(cli_args);
	int made = job_env_init(&env) == 0 ? job_new(&env, &wf_bench, req->name ? req->name : "",
						     params, &j, &e)
					   : -1;
	json_object_put(params);
	if (made < 0) {
		r->outcome = JOB_OUT_FAILED;
		r->error = strdup(e.message ? e.message : "cannot make the job");
		pve_error_clear(&e);
		job_env_fini(&env);
		return -1;
	}
	struct bench_ctx *x = job_ctx(j);
	x->req = req;
	x->res = r;
	enum job_outcome o = job_run(j, NULL);
	if (o == JOB_OUT_INTERRUPTED && !r->error)
		r->error = strdup("interrupted");
	r->outcome = o;
	job_free(j);
	job_env_fini(&env);
	return o == JOB_OUT_DONE ? 0 : -1;
}
