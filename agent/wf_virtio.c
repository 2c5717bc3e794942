/* wf_virtio.c - the IDE/e1000 -> virtio conversion as a workflow
 * (wf_virtio.h): the journal that lets a killed run resume, the guest-side
 * phases through inject, the PVE steps applying convert_plan.h's target,
 * the checks after the switch and the rollback. */
#include "wf_virtio.h"
#include "wf_params.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "diff.h"
#include "wf_bench.h"
#include "wf_inject.h"
#include "inject.h"
#include "job.h"
#include "log.h"
#include "pvecfg.h"
#include "pveperm.h"
#include "pvekeys.h"
#include "rewrite.h"
#include "util.h"

#define SNAPSHOT_NAME "pvagent_virtio"

/* ---- names ---------------------------------------------------------------------- */

int convert_bus_parse(const char *s, enum convert_bus *out)
{
	if (strcmp(s, "virtio-blk") == 0)
		*out = CONVERT_BUS_BLK;
	else if (strcmp(s, "virtio-scsi") == 0)
		*out = CONVERT_BUS_SCSI;
	else
		return -1;
	return 0;
}

static const char *vbus_name(enum vbus b)
{
	return b == VBUS_VIRTIO_SCSI ? "virtio-scsi" : "virtio-blk";
}


/* ---- journal ----------------------------------------------------------------------- */

/* The journal is the job's vars (store.h): {"config": the saved config,
 * "bus", "files": {path: original text, or null for a file the
 * conversion created}}; how far the conversion got is the engine's step
 * states. job_save() writes it to state.db at once. */
struct journal {
	struct job *job;
	json_object *o;   /* the job's vars (borrowed) */
};

static int journal_save(const struct journal *j)
{
	return job_save(j->job);
}

static json_object *journal_files(struct journal *j)
{
	json_object *f = NULL;
	if (!json_object_object_get_ex(j->o, "files", &f) || !json_object_is_type(f, json_type_object)) {
		f = json_object_new_object();
		json_object_object_add(j->o, "files", f);
	}
	return f;
}

/* ---- the run ----------------------------------------------------------------------- */

/* What a virtio job asks: its params, read in open (open_request). */
struct convert_request {
	const struct guest_ref *guest;   /* the guest when found already (its
					    VMID goes in the params), or NULL */
	enum convert_bus bus;
	bool dry_run;
	bool keep_snapshot;              /* keep the pvagent_virtio snapshot after
					    a conversion that worked (default:
					    deleted once verified: a snapshot
					    keeps PVE from migrating local
					    LVM-thin disks) */
	bool bench;                      /* benchmark before and after */
	unsigned bench_size_mib;         /* 0: bench.h's default */
	double verify_timeout_s;         /* SSH back after a start; 0: 300 */
};

struct run {
	struct convert_request q;     /* what the job's params ask */
	struct pve *pve;              /* the job's client */
	const struct ssh_opts *ssh;   /* the guest's address and keys (a dry
					 run: host NULL when no address was
					 found, address_error says why) */
	const char *address_error;
	char *bench_db;               /* state.db for the figures, or NULL */
	enum job_outcome outcome;     /* what the failure means, as the lower
					 module that failed says it */
	struct guest_ref g;           /* our copy (status changes) */
	struct guest_wait w;
	struct journal j;
	json_object *saved;           /* borrowed from the journal */
	struct convert_target t;
	struct ssh_session *s;
	struct guest_os det;          /* OS detection */
	struct os_facts facts;        /* label facts */
	struct virtio_plan vp;
	bool have_plan;
	bool pve_shown;               /* the PVE side was reported for shown_bus */
	enum vbus shown_bus;
	char **paths;                 /* the plan's files, absolute */
	size_t n_paths;
	bool files_restored;          /* the originals are back (rollback or undo) */
	bool undo_failed;             /* prepare's undo left files changed (a
					 failed rollback needs attention) */
	bool rollback_ran;            /* in this process (verify's, or switch's) */
	bool rolled_back;             /* and it worked */
	enum rw_phase phase;          /* for the inject edit */
	const char *step;
	char emul[32];          /* emulated()'s text */
	struct guest_target gt;       /* the guest found from the params */
	struct tmpl_kvlist vars;
};

/* convert_target_make for the saved config on the cluster's PVE version
 * (its drive options: 9 dropped cyls, heads, secs, trans). */
static int target_for(struct run *r, enum vbus bus, struct convert_target *t, char **err)
{
	int major = 0;
	struct pve_error e = {0};
	if (guest_pve_major(r->pve, &major, &e) < 0) {
		memset(t, 0, sizeof *t);
		*err = pve_error_format(&e);
		pve_error_clear(&e);
		return -1;
	}
	return convert_target_make(r->saved, bus, major, t, err);
}

/* What the guest runs on before the switch, for messages ("IDE/e1000",
 * "SATA/rtl8139"); kept in r. */
static const char *emulated(struct run *r)
{
	snprintf(r->emul, sizeof r->emul, "%s/%s",
		 r->t.sata ? "SATA" : r->t.scsi_ctl ? "SCSI" : "IDE",
		 r->t.nic_model ? r->t.nic_model : "e1000");
	return r->emul;
}


/* The step failures are named by (r->step: the engine's step, or the
 * part of it under way, such as "rollback"). */
static void step_begin(struct run *r, const char *step)
{
	r->step = step;
}

/* A note about a file of the guest. */
static void note_path(struct run *r, const char *path, const char *text)
{
	if (path)
		job_note(r->j.job, "%s: %s", path, text ? text : "");
	else
		job_note(r->j.job, "%s", text ? text : "");
}

/* The job's error for a failure of the current step (the first one
 * wins), classified as o. */
static int failf(struct run *r, enum job_outcome o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int failf(struct run *r, enum job_outcome o, const char *fmt, ...)
{
	if (job_error(r->j.job)->kind == PVE_OK) {
		va_list ap;
		va_start(ap, fmt);
		struct sbuf b = {0};
		sbuf_vaddf(&b, fmt, ap);
		va_end(ap);
		char *m = sbuf_steal(&b);
		r->outcome = job_outcome_failure(o);
		job_fail_outcome(r->j.job, r->outcome, m ? m : "out of memory");
		free(m);
	}
	return -1;
}

/* target_for, its failure recorded as the step's. */
static int target_or_fail(struct run *r, enum vbus bus, struct convert_target *t)
{
	char *err = NULL;
	if (target_for(r, bus, t, &err) == 0)
		return 0;
	failf(r, JOB_OUT_FAILED, "%s", err ? err : "out of memory");
	free(err);
	return -1;
}

static int fail_pve(struct run *r, struct pve_error *e, const char *what)
{
	char *hint = pve_perm_hint(e->message);
	failf(r, pve_error_outcome(e), "%s: %s%s", what, e->message ? e->message : "PVE error",
	      hint ? hint : "");
	free(hint);
	pve_error_clear(e);
	return -1;
}

static int fail_ssh(struct run *r, struct ssh_error *e, const char *what)
{
	failf(r, ssh_error_outcome(e), "%s: %s", what, ssh_error_str(e));
	ssh_error_clear(e);
	return -1;
}

/* ---- SSH ------------------------------------------------------------------------------ */

static void close_session(struct run *r)
{
	ssh_close(r->s);
	r->s = NULL;
}

/* Connect, waiting for the guest to answer up to timeout_s (0: one
 * attempt) as up's inject does (ssh_wait_connect, target.h). */
static int connect_wait(struct run *r, double timeout_s, struct ssh_error *e)
{
	close_session(r);
	const struct ssh_wait w = {.limit_s = timeout_s, .poll_s = r->w.poll_s}; /* real time */
	return ssh_wait_connect(r->ssh, &w, &r->s, e, NULL);
}

/* Run a fixed command line; *out malloc'd stdout. -1 (e filled) only when
 * it could not run; *status its exit status. */
static int run_cmd(struct run *r, const char *cmdline, char **out, int *status,
		   struct ssh_error *e)
{
	struct ssh_result res = {0};
	*out = NULL;
	if (ssh_exec_cmdline(r->s, cmdline, NULL, &res, e) < 0) {
		ssh_result_free(&res);
		return -1;
	}
	*status = res.exit_status;
	*out = strdup(sbuf_str(&res.out));
	if (res.exit_status != 0)
		log_debug("convert: '%s' exited %d: %s", cmdline, res.exit_status,
			  sbuf_str(&res.err));
	ssh_result_free(&res);
	if (!*out) {
		e->kind = SSH_ERR_IO;
		return -1;
	}
	return 0;
}

/* ---- the plan ------------------------------------------------------------------------- */

/* gfedit_plan_fn: the current phase's transform of a file. */
static int plan_edit(void *ctx, struct gfedit *e, const struct gfile *f, char **text)
{
	struct run *r = ctx;
	struct sbuf notes = {0};
	char *out = NULL, *err = NULL;
	bool absent = !f->existed && **text == '\0';
	int rc = virtio_transform(&r->vp, r->phase, f->path, absent ? NULL : *text, &out, &notes,
				  &err);
	if (rc == 0 && notes.len && r->phase == RW_PREPARE) {
		/* one note per line: entries left for the switch */
		const char *p = sbuf_str(&notes);
		while (*p) {
			size_t n = strcspn(p, "\n");
			char *line = strndup(p, n);
			if (line)
				note_path(r, f->path, line);
			free(line);
			p += n + (p[n] ? 1 : 0);
		}
	}
	sbuf_free(&notes);
	if (rc < 0) {
		gfedit_fail(e, "plan", f->path, NULL, "%s", err ? err : "out of memory");
		free(err);
		free(out);
		return -1;
	}
	free(err);
	free(*text);
	*text = out ? out : strdup("");
	return *text ? 0 : gfedit_fail(e, "plan", f->path, NULL, "out of memory");
}

/* One phase's edits through the transactional editor (gfedit.h): read,
 * plan, and (not dry_run) write and verify, every file put back when
 * either fails; the originals of the files written are recorded. */
static int run_phase(struct run *r, enum rw_phase phase, bool dry_run, size_t *changed)
{
	r->phase = phase;
	struct gfedit e = {.on_event = inject_job_event, .event_ctx = r->j.job};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < r->n_paths; i++)
		if (!gfedit_add(&e, r->paths[i], "virtio"))
			rc = gfedit_fail(&e, "plan", NULL, NULL, "out of memory");
	if (rc == 0)
		rc = gfedit_read(&e, r->s);
	if (rc == 0)
		rc = gfedit_plan(&e, plan_edit, r);
	if (changed)
		*changed = e.n_changed;
	if (rc == 0 && !dry_run && e.n_changed) {
		rc = gfedit_write(&e, r->s);
		if (rc == 0)
			rc = gfedit_verify(&e, r->s);
		if (rc < 0) {
			struct ssh_session *s = r->s;
			bool own = false; /* a new session of the rollback's is closed here */
			gfedit_restore(&e, &s, &own, r->ssh);
			if (own)
				ssh_close(s);
		}
	}
	if (rc == 0 && !dry_run) {
		json_object *files = journal_files(&r->j);
		bool added = false;
		for (size_t i = 0; i < e.n_files; i++) {
			const struct gfile *f = &e.files[i];
			if (f->state != GF_WRITTEN || json_object_object_get_ex(files, f->path, NULL))
				continue;
			json_object_object_add(files, f->path,
					       f->existed ? json_object_new_string(f->old_text) : NULL);
			added = true;
		}
		if (added && journal_save(&r->j) < 0)
			rc = failf(r, JOB_OUT_NEEDS_ATTENTION, "cannot record the original files in job %lld",
				   job_id(r->j.job));
	} else if (rc < 0) {
		failf(r, e.outcome, "%s%s", e.error ? e.error : "failed",
		      e.partial ? "" : " (files left as they were)");
	}
	gfedit_free(&e);
	return rc;
}

/* The plan's files as absolute paths; netplan's *.yaml listed on the guest. */
static int plan_paths(struct run *r)
{
	for (const char *const *f = virtio_plan_files(&r->vp); *f; f++) {
		const char *star = strstr(*f, "*.yaml");
		if (!star) {
			if (strv_add(&r->paths, &r->n_paths, strprintf("/%s", *f)) < 0)
				return failf(r, JOB_OUT_FAILED, "out of memory");
			continue;
		}
		char *dir = strndup(*f, (size_t)(star - *f));
		char *cmd = dir ? strprintf("ls /%s", dir) : NULL;
		char *out = NULL;
		int status = 0;
		struct ssh_error e = {0};
		if (!cmd || run_cmd(r, cmd, &out, &status, &e) < 0) {
			free(dir);
			free(cmd);
			return fail_ssh(r, &e, "listing netplan files");
		}
		const char *p = status == 0 ? out : "";
		while (*p) {
			size_t n = strcspn(p, "\n");
			if (n > 5 && strncmp(p + n - 5, ".yaml", 5) == 0 && !memchr(p, '/', n) &&
			    strv_add(&r->paths, &r->n_paths, strprintf("/%s%.*s", dir, (int)n, p)) < 0) {
				free(dir);
				free(cmd);
				free(out);
				return failf(r, JOB_OUT_FAILED, "out of memory");
			}
			p += n + (p[n] ? 1 : 0);
		}
		free(dir);
		free(cmd);
		free(out);
	}
	if (!r->paths && strv_add(&r->paths, &r->n_paths, strdup("/etc/fstab")) < 0)
		return failf(r, JOB_OUT_FAILED, "out of memory");
	/* NULL-terminated for inject (n_paths does not count the NULL) */
	char **v = realloc(r->paths, (r->n_paths + 1) * sizeof *v);
	if (!v)
		return failf(r, JOB_OUT_FAILED, "out of memory");
	r->paths = v;
	v[r->n_paths] = NULL;
	return 0;
}

static enum vbus choose_bus(struct run *r)
{
	if (r->q.bus == CONVERT_BUS_BLK)
		return VBUS_VIRTIO_BLK;
	if (r->q.bus == CONVERT_BUS_SCSI)
		return VBUS_VIRTIO_SCSI;
	/* Linux with virtio-scsi: PVE's default for new Linux guests;
	 * FreeBSD: virtio-blk (the kmod of 8.x/9.x has no virtio_scsi) */
	const struct os_profile *p = &r->det.profile;
	if (p->family == OS_LINUX && p->scsi == VS_YES)
		return VBUS_VIRTIO_SCSI;
	return VBUS_VIRTIO_BLK;
}

/* Detect, choose the bus, read fstab and the label facts, plan. */
static int plan_guest(struct run *r)
{
	struct ssh_error se = {0};
	char *derr = NULL, *msg = NULL;
	guest_os_free(&r->det);
	if (guest_os_detect(r->s, &r->det, &se, &derr) < 0) {
		enum job_outcome o = guest_os_failure(derr, &se, &msg);
		failf(r, o, "%s", msg ? msg : "cannot detect the OS");
		ssh_error_clear(&se);
		free(derr);
		free(msg);
		return -1;
	}
	if (job_set_str(r->j.job, "os", r->det.desc) < 0)
		return failf(r, JOB_OUT_FAILED, "out of memory");
	if (!r->det.have_profile)
		return failf(r, JOB_OUT_FAILED, "%s has no usable virtio drivers: pvagent leaves it on IDE/e1000",
			     r->det.desc ? r->det.desc : "the guest's OS");
	/* disks on an emulated SCSI controller stay on SCSI: virtio-scsi */
	struct convert_target probe;
	char *err = NULL;
	if (target_or_fail(r, VBUS_VIRTIO_SCSI, &probe) < 0)
		return -1;
	bool scsi_ctl = probe.scsi_ctl;
	convert_target_free(&probe);
	const char *scsihw = json_text(r->saved, "scsihw");
	if (scsi_ctl && r->q.bus == CONVERT_BUS_BLK)
		return failf(r, JOB_OUT_FAILED, "the disks are on an emulated SCSI controller (%s): "
			     "they move to virtio-scsi under the same keys, not to virtio-blk",
			     scsihw ? scsihw : "lsi");
	if (scsi_ctl && r->det.profile.family == OS_FREEBSD && scsihw &&
	    strcmp(scsihw, "megasas") == 0)
		return failf(r, JOB_OUT_FAILED, "FreeBSD names MegaRAID SAS disks mfidN (mfi(4)) and "
			     "virtio-scsi ones daN: pvagent does not rename them; megasas stays");
	enum vbus bus = scsi_ctl ? VBUS_VIRTIO_SCSI : choose_bus(r);
	const char *jbus = json_text(r->j.o, "bus");
	if (jbus && r->q.bus == CONVERT_BUS_AUTO && !scsi_ctl)
		bus = strcmp(jbus, "virtio-scsi") == 0 ? VBUS_VIRTIO_SCSI : VBUS_VIRTIO_BLK;
	if (osprof_check_bus(&r->det.profile, bus, &err) < 0) {
		failf(r, JOB_OUT_FAILED, "%s", err ? err : "bus not supported");
		free(err);
		return -1;
	}
	free(err);
	if (job_set_str(r->j.job, "bus", vbus_name(bus)) < 0)
		return failf(r, JOB_OUT_FAILED, "out of memory");
	err = NULL;
	if (!r->t.set.n && !r->t.delete_keys && target_or_fail(r, bus, &r->t) < 0)
		return -1;
	/* label facts for fstab */
	char *fstab = NULL;
	size_t flen = 0;
	struct ssh_error e = {0};
	if (ssh_read_file(r->s, "/etc/fstab", &fstab, &flen, NULL, &e) < 0 && e.kind != SSH_ERR_NOENT)
		return fail_ssh(r, &e, "reading /etc/fstab");
	ssh_error_clear(&e);
	char **cmds = NULL;
	int rc = osprof_fact_cmds(&r->det.profile, fstab, &cmds, &err);
	for (size_t i = 0; rc == 0 && cmds[i]; i++) {
		char *out = NULL;
		int status = 0;
		if (run_cmd(r, cmds[i], &out, &status, &e) < 0) {
			rc = fail_ssh(r, &e, cmds[i]);
			break;
		}
		if (status == 0 && os_facts_add(&r->facts, cmds[i], out) < 0)
			rc = failf(r, JOB_OUT_FAILED, "out of memory");
		free(out);
	}
	osprof_cmds_free(cmds);
	free(fstab);
	if (rc < 0) {
		if (err)
			failf(r, JOB_OUT_FAILED, "%s", err);
		free(err);
		return -1;
	}
	free(err);
	/* an emulated SCSI controller names its disks as virtio-scsi does
	 * (sdX, daN): nothing to rename */
	if (virtio_plan_init_from(&r->vp, &r->det.profile,
				  r->t.sata ? DBUS_SATA : r->t.scsi_ctl ? DBUS_VIRTIO_SCSI : DBUS_IDE,
				  r->t.nic_model ? r->t.nic_model : "e1000", bus,
				  r->t.ndisks, r->t.nnics, &r->facts, &err) < 0) {
		failf(r, JOB_OUT_FAILED, "%s", err ? err : "out of memory");
		free(err);
		return -1;
	}
	r->have_plan = true;
	return plan_paths(r);
}

/* The boot disk's name in the guest on the old or the new bus. */
static char *boot_disk_name(const struct run *r, bool virtio)
{
	enum dbus b = !virtio ? (r->t.sata ? DBUS_SATA : r->t.scsi_ctl ? DBUS_VIRTIO_SCSI : DBUS_IDE)
		    : r->vp.bus == VBUS_VIRTIO_SCSI ? DBUS_VIRTIO_SCSI : DBUS_VIRTIO_BLK;
	return osprof_disk_name(&r->det.profile, b, r->t.boot_index);
}

/* The benchmark on the old or the new bus: its figures in the job's vars
 * ("bench_before", "bench_after") and, with a store, in state.db. */
static void run_bench(struct run *r, bool virtio)
{
	const struct convert_request *q = &r->q;
	const char *key = virtio ? "bench_after" : "bench_before";
	step_begin(r, virtio ? "bench-after" : "bench-before");
	char *disk = boot_disk_name(r, virtio);
	struct bench_request bq = {
		.os = r->det.os.family,
		.size_mib = q->bench_size_mib,
		.raw_disk = disk,
		.bus = virtio ? vbus_name(r->vp.bus) : r->t.sata ? "sata" : r->t.scsi_ctl ? "scsi" : "ide",
		.nic = r->t.nnics ? (virtio ? "virtio" : r->t.nic_model) : "-",
		.on_event = bench_job_phase,
		.event_ctx = r->j.job,
	};
	struct bench_result res = {0};
	job_set_str(r->j.job, key, NULL);
	char *err = NULL;
	if (bench_run(r->s, &bq, &res, &err) < 0) {
		job_note(r->j.job, "benchmark %s the switch failed: %s", virtio ? "after" : "before",
			 err ? err : "error");
	} else {
		job_summary(r->j.job, "%s on %s/%s", disk ? disk : "?", bq.bus, bq.nic);
		json_object *fig = bench_result_json(&res);
		if (!fig || json_add(job_vars(r->j.job), key, fig) < 0)
			job_note(r->j.job, "the figures were not kept in the job: out of memory");
		if (r->bench_db && bench_store(r->bench_db, r->g.name ? r->g.name : "", r->g.vmid,
					       &res, &err) < 0)
			job_note(r->j.job, "the figures were not stored in %s: %s", r->bench_db,
				 err ? err : "error");
	}
	bench_result_free(&res);
	free(err);
	free(disk);
}

/* ---- prepare ---------------------------------------------------------------------------- */

static int install_kmod(struct run *r)
{
	const struct os_profile *p = &r->det.profile;
	if (!p->kmod_pkg || !p->kmod_check)
		return 0;
	struct ssh_stat st;
	struct ssh_error e = {0};
	if (ssh_stat(r->s, p->kmod_check, &st, &e) == 0) {
		job_note(r->j.job, "%s is installed (%s)", p->kmod_pkg, p->kmod_check);
		return 0;
	}
	if (e.kind != SSH_ERR_NOENT)
		return fail_ssh(r, &e, p->kmod_check);
	ssh_error_clear(&e);
	struct ssh_result out = {0};
	struct ssh_exec_opts xo = {.timeout_ms = 600000};
	if (ssh_exec_cmdline(r->s, p->kmod_install, &xo, &out, &e) < 0) {
		ssh_result_free(&out);
		return fail_ssh(r, &e, p->kmod_install);
	}
	int status = out.exit_status;
	char *why = strdup(out.err.len ? sbuf_str(&out.err) : sbuf_str(&out.out));
	ssh_result_free(&out);
	if (why) /* one line */
		why[strcspn(why, "\n")] = '\0';
	if (status != 0) {
		failf(r, JOB_OUT_FAILED, "cannot install %s ('%s' exited %d: %s); nothing on PVE was changed",
		      p->kmod_pkg, p->kmod_install, status, why && *why ? why : "no message");
		free(why);
		return -1;
	}
	free(why);
	if (ssh_stat(r->s, p->kmod_check, &st, &e) < 0) {
		failf(r, JOB_OUT_FAILED, "'%s' ran but %s is missing; nothing on PVE was changed",
		      p->kmod_install, p->kmod_check);
		ssh_error_clear(&e);
		return -1;
	}
	job_note(r->j.job, "installed %s", p->kmod_pkg);
	return 0;
}

/* Linux: rebuild the initramfs and check the modules are in it. */
static int rebuild_initramfs(struct run *r)
{
	const struct os_profile *p = &r->det.profile;
	if (p->family != OS_LINUX || !p->initramfs_update)
		return 0;
	struct ssh_error e = {0};
	char *out = NULL;
	int status = 0;
	const char *const *mods = NULL;
	size_t nmods = 0;
	osprof_initramfs_modules(p, r->vp.bus, &mods, &nmods);
	/* up to date already? */
	static const char list[] = "lsinitramfs /boot/initrd.img-$(uname -r)";
	if (run_cmd(r, list, &out, &status, &e) < 0)
		return fail_ssh(r, &e, list);
	bool all = status == 0;
	for (size_t i = 0; all && i < nmods; i++) {
		char *ko = strprintf("/%s.ko", mods[i]);
		all = ko && strstr(out, ko) != NULL;
		free(ko);
	}
	free(out);
	out = NULL;
	if (all)
		return 0;
	struct ssh_result rr = {0};
	struct ssh_exec_opts xo = {.timeout_ms = 600000};
	if (ssh_exec_cmdline(r->s, p->initramfs_update, &xo, &rr, &e) < 0) {
		ssh_result_free(&rr);
		return fail_ssh(r, &e, p->initramfs_update);
	}
	status = rr.exit_status;
	char *why = strdup(sbuf_str(&rr.err));
	ssh_result_free(&rr);
	if (why)
		why[strcspn(why, "\n")] = '\0';
	if (status != 0) {
		failf(r, JOB_OUT_FAILED, "'%s' exited %d: %s", p->initramfs_update, status,
		      why && *why ? why : "no message");
		free(why);
		return -1;
	}
	free(why);
	if (run_cmd(r, list, &out, &status, &e) < 0)
		return fail_ssh(r, &e, list);
	for (size_t i = 0; i < nmods; i++) {
		char *ko = strprintf("/%s.ko", mods[i]);
		bool in = status == 0 && ko && strstr(out, ko);
		free(ko);
		if (!in) {
			free(out);
			return failf(r, JOB_OUT_FAILED, "the rebuilt initramfs has no %s module", mods[i]);
		}
	}
	free(out);
	job_note(r->j.job, "initramfs rebuilt with the virtio modules");
	return 0;
}

/* Put every file this conversion changed back to its original text. */
static int restore_files(struct run *r)
{
	json_object *files = journal_files(&r->j);
	int rc = 0;
	json_object_object_foreach(files, path, orig) {
		struct ssh_error e = {0};
		int one;
		if (!orig) {
			one = ssh_remove(r->s, path, &e);
		} else {
			const char *t = json_object_get_string(orig);
			one = ssh_write_file_atomic(r->s, path, t, strlen(t), 0, 0, NULL, &e);
		}
		if (one < 0) {
			log_error("rollback: %s: %s", path, ssh_error_str(&e));
			rc = -1;
		} else {
			job_note(r->j.job, "restored %s", path);
		}
		ssh_error_clear(&e);
	}
	if (rc == 0 && r->have_plan && r->det.profile.family == OS_LINUX &&
	    r->det.profile.initramfs_update && json_object_object_length(files) > 0) {
		struct ssh_result rr = {0};
		struct ssh_error e = {0};
		struct ssh_exec_opts xo = {.timeout_ms = 600000};
		if (ssh_exec_cmdline(r->s, r->det.profile.initramfs_update, &xo, &rr, &e) < 0 ||
		    rr.exit_status != 0)
			job_note(r->j.job, "'%s' failed after the restore; the old initramfs "
					       "also holds the virtio modules, which is harmless",
			      r->det.profile.initramfs_update);
		ssh_result_free(&rr);
		ssh_error_clear(&e);
	}
	return rc;
}

/* ---- verify ------------------------------------------------------------------------------ */

static bool word_in(const char *list, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = list; (p = strstr(p, word)) != NULL; p += wl) {
		bool start = p == list || strchr(" \t\n/", p[-1]);
		bool end = strchr(" \t\n", p[wl]) != NULL;
		if (start && end)
			return true;
	}
	return false;
}

/* The mount points of "mount -p" (FreeBSD) or /proc/mounts (Linux). */
static bool mounted(const char *table, const char *mp)
{
	const char *p = table;
	while (*p) {
		size_t n = strcspn(p, "\n");
		char dev[256], at[1024];
		char *line = strndup(p, n);
		bool hit = line && sscanf(line, "%255s %1023s", dev, at) == 2 && strcmp(at, mp) == 0;
		free(line);
		if (hit)
			return true;
		p += n + (p[n] ? 1 : 0);
	}
	return false;
}

/* Does any line of table name an old (emulated) disk as its device? */
static const char *old_device_in(const struct run *r, const char *table)
{
	for (size_t i = 0; i < r->vp.disks.n; i++) {
		const char *old = r->vp.disks.v[i].from;
		if (strcmp(old, r->vp.disks.v[i].to) == 0)
			continue;
		char *dev = strprintf("/dev/%s", old);
		bool hit = false;
		for (const char *p = dev ? strstr(table, dev) : NULL; p && !hit;
		     p = strstr(p + 1, dev)) {
			char c = p[strlen(dev)];
			hit = (p == table || p[-1] == '\n') &&
			      (c == ' ' || c == '\t' || c == 's' || c == 'p' ||
			       (c >= '1' && c <= '9' && r->det.profile.family == OS_LINUX));
		}
		free(dev);
		if (hit)
			return old;
	}
	return NULL;
}

static int verify_guest(struct run *r)
{
	struct ssh_error e = {0};
	char *fstab = NULL;
	size_t flen;
	if (ssh_read_file(r->s, "/etc/fstab", &fstab, &flen, NULL, &e) < 0)
		return fail_ssh(r, &e, "reading /etc/fstab");
	struct rw_fstab_ent *ents = NULL;
	size_t n = 0;
	char *err = NULL;
	if (rw_fstab_parse("/etc/fstab", fstab, &ents, &n, &err) < 0) {
		free(fstab);
		failf(r, JOB_OUT_FAILED, "%s", err ? err : "out of memory");
		free(err);
		return -1;
	}
	free(fstab);
	bool bsd = r->det.profile.family == OS_FREEBSD;
	char *disks = NULL, *mounts = NULL, *nics = NULL;
	int status = 0, rc = 0;
	size_t len;
	if (bsd) {
		if (run_cmd(r, "sysctl -n kern.disks", &disks, &status, &e) < 0 ||
		    run_cmd(r, "mount -p", &mounts, &status, &e) < 0 ||
		    run_cmd(r, "ifconfig -l", &nics, &status, &e) < 0)
			rc = fail_ssh(r, &e, "reading the guest's devices");
	} else if (ssh_read_file(r->s, "/proc/partitions", &disks, &len, NULL, &e) < 0 ||
		   ssh_read_file(r->s, "/proc/mounts", &mounts, &len, NULL, &e) < 0) {
		rc = fail_ssh(r, &e, "reading the guest's devices");
	}
	/* the kernel sees the new disks and none of the old ones */
	for (size_t i = 0; rc == 0 && i < r->vp.disks.n; i++) {
		const char *to = r->vp.disks.v[i].to, *from = r->vp.disks.v[i].from;
		if (!word_in(disks, to))
			rc = failf(r, JOB_OUT_FAILED, "the guest does not see its disk %s", to);
		else if (strcmp(from, to) != 0 && word_in(disks, from))
			rc = failf(r, JOB_OUT_FAILED, "the guest still sees the emulated disk %s", from);
	}
	/* every file system of fstab is mounted, none from an old device */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct rw_fstab_ent *f = &ents[i];
		if (strcmp(f->type, "swap") == 0 || strcmp(f->file, "none") == 0 ||
		    (f->opts && strstr(f->opts, "noauto")) || f->file[0] != '/' ||
		    strcmp(f->type, "proc") == 0 || strcmp(f->type, "tmpfs") == 0 ||
		    strcmp(f->type, "sysfs") == 0 || strcmp(f->type, "devpts") == 0 ||
		    strcmp(f->type, "fdescfs") == 0 || strcmp(f->type, "procfs") == 0)
			continue;
		if (!mounted(mounts, f->file))
			rc = failf(r, JOB_OUT_FAILED, "%s (fstab line %zu, %s) is not mounted", f->file, f->line,
				   f->spec);
	}
	const char *old = rc == 0 ? old_device_in(r, mounts) : NULL;
	if (old)
		rc = failf(r, JOB_OUT_FAILED, "a file system is still mounted from the emulated disk %s", old);
	for (size_t i = 0; rc == 0 && bsd && i < r->vp.nics.n; i++) {
		if (!word_in(nics, r->vp.nics.v[i].to))
			rc = failf(r, JOB_OUT_FAILED, "the guest has no NIC %s", r->vp.nics.v[i].to);
		else if (word_in(nics, r->vp.nics.v[i].from))
			rc = failf(r, JOB_OUT_FAILED, "the guest still has the emulated NIC %s",
				   r->vp.nics.v[i].from);
	}
	rw_fstab_ents_free(ents, n);
	free(disks);
	free(mounts);
	free(nics);
	return rc;
}

/* ---- PVE steps ------------------------------------------------------------------------------ */

static int read_config(struct run *r, json_object **cfg)
{
	struct pve_error e = {0};
	if (guest_get_config(r->pve, &r->g, cfg, &e) < 0)
		return fail_pve(r, &e, "reading the config");
	return 0;
}

static int apply_target(struct run *r)
{
	struct pve_error e = {0};
	json_object *cur = NULL;
	if (read_config(r, &cur) < 0)
		return -1;
	bool done = convert_target_applied(&r->t, cur);
	json_object_put(cur);
	if (done)
		return 0;
	job_progress(r->j.job, -1, "changing the config of VM %d: disks and NICs to virtio",
		     r->g.vmid);
	if (r->t.delete_keys) {
		/* only keys still present (a resumed run may find some gone) */
		struct pve_params none = {0};
		if (guest_set_config(r->pve, &r->g, &none, r->t.delete_keys, NULL, false,
				     &r->w, &e) < 0 &&
		    !(e.message && strstr(e.message, "does not exist")))
			return fail_pve(r, &e, r->t.sata ? "removing the SATA disks from the config"
							   : "removing the IDE disks from the config");
		pve_error_clear(&e);
	}
	if (guest_set_config(r->pve, &r->g, &r->t.set, NULL, NULL, false, &r->w, &e) < 0)
		return fail_pve(r, &e, "adding the virtio devices");
	if (read_config(r, &cur) < 0)
		return -1;
	done = convert_target_applied(&r->t, cur);
	json_object_put(cur);
	if (!done)
		return failf(r, JOB_OUT_FAILED, "PVE took the change but the config does not show it");
	return 0;
}

static int power(struct run *r, bool on)
{
	struct pve_error e = {0};
	bool forced = false;
	job_progress(r->j.job, -1, on ? "starting VM %d" : "shutting VM %d down", r->g.vmid);
	int rc = on ? guest_start(r->pve, &r->g, &r->w, &e)
		    : guest_shutdown(r->pve, &r->g, &r->w, &forced, &e);
	if (rc < 0)
		return fail_pve(r, &e, on ? "starting the guest" : "shutting the guest down");
	if (forced)
		job_note(r->j.job, "the guest did not shut down cleanly in time: stopped");
	return 0;
}

/* ---- rollback ----------------------------------------------------------------------------- */

/* "ufs:/dev/vtbd0s1a": the root file system of the original fstab as the
 * guest names it on virtio (labels and ids are the same on both buses). */
static char *root_on_virtio(struct run *r)
{
	json_object *orig = NULL;
	const char *text = NULL;
	if (json_object_object_get_ex(journal_files(&r->j), "/etc/fstab", &orig) && orig)
		text = json_object_get_string(orig);
	char *cur = NULL;
	struct ssh_error e = {0};
	if (!text && r->s && ssh_read_file(r->s, "/etc/fstab", &cur, NULL, NULL, &e) == 0)
		text = cur;
	ssh_error_clear(&e);
	struct rw_fstab_ent *ents = NULL;
	size_t n = 0;
	char *err = NULL, *out = NULL;
	if (text && rw_fstab_parse("/etc/fstab", text, &ents, &n, &err) == 0) {
		for (size_t i = 0; i < n && !out; i++) {
			if (strcmp(ents[i].file, "/") != 0)
				continue;
			const char *spec = ents[i].spec;
			char *mapped = strncmp(spec, "/dev/", 5) == 0
					       ? rw_map_device(&r->vp.disks, spec + 5) : NULL;
			out = mapped ? strprintf("%s:/dev/%s", ents[i].type, mapped)
				     : strprintf("%s:%s", ents[i].type, spec);
			free(mapped);
		}
		rw_fstab_ents_free(ents, n);
	}
	free(err);
	free(cur);
	return out;
}

static char *recovery_text(struct run *r, json_object *current)
{
	struct sbuf b = {0};
	int vmid = r->g.vmid;
	sbuf_addf(&b, "The guest %s (VMID %d on %s) is in an unknown state.\n",
		  r->g.name ? r->g.name : "?", vmid, r->g.node);
	sbuf_addf(&b, "Saved config (the state before the conversion): job %lld in state.db "
		      "(pvagent job %lld)\n",
		  job_id(r->j.job), job_id(r->j.job));
	if (current) {
		sbuf_add(&b, "PVE config now:\n");
		json_object_object_foreach(current, k, v) {
			if (strcmp(k, "digest") != 0)
				sbuf_addf(&b, "  %s: %s\n", k, json_object_get_string(v));
		}
	}
	sbuf_add(&b, "To go back to IDE/e1000 by hand on the node:\n");
	sbuf_addf(&b, "  qm stop %d\n", vmid);
	char *del = NULL;
	struct pve_params set = {0};
	if (current && convert_restore_plan(r->saved, current, &del, &set) == 0) {
		if (del)
			sbuf_addf(&b, "  qm set %d --delete %s\n", vmid, del);
		for (size_t i = 0; i < set.n; i++) {
			char *q = ssh_quote(set.v[i].value);
			sbuf_addf(&b, "  qm set %d --%s %s\n", vmid, set.v[i].key, q ? q : "?");
			free(q);
		}
	} else {
		sbuf_addf(&b, "  restore every key of the saved config with qm set %d\n", vmid);
	}
	free(del);
	pve_params_free(&set);
	sbuf_addf(&b, "  qm start %d\n", vmid);
	json_object *files = journal_files(&r->j);
	if (json_object_object_length(files)) {
		sbuf_add(&b, "Guest files changed (originals in the journal and in FILE.pvagent.bak):");
		json_object_object_foreach(files, path, orig) {
			(void)orig;
			sbuf_addf(&b, " %s", path);
		}
		sbuf_add(&b, "\n");
	}
	char *root = r->have_plan && r->det.profile.family == OS_FREEBSD ? root_on_virtio(r) : NULL;
	if (root)
		sbuf_addf(&b, "If the guest stops at mountroot> on virtio, type at the loader prompt "
			      "(before the kernel boots):\n  set vfs.root.mountfrom=%s\n  boot\n"
			      "or at the mountroot> prompt: %s\n", root, root);
	free(root);
	sbuf_addf(&b, "Then run pvagent virtio again (it resumes job %lld), or 'pvagent cancel "
		      "%lld' once the guest is back.",
		  job_id(r->j.job), job_id(r->j.job));
	return sbuf_steal(&b);
}

/* The rollback after a failure past the start of the switch: the job's
 * error says the failure and how the rollback ended, its "left" the
 * recovery when it failed. */
static int rollback(struct run *r)
{
	const char *m = job_error(r->j.job)->message;
	char *what = m ? strdup(m) : NULL;
	r->rollback_ran = true;
	const char *was = r->step;
	step_begin(r, "rollback");
	job_note(r->j.job, "%s failed: %s; rolling back to %s", was ? was : "?",
	      what ? what : "error", emulated(r));
	close_session(r);
	struct pve_error e = {0};
	json_object *cur = NULL;
	char *del = NULL;
	struct pve_params set = {0};
	const char *failed = NULL;
	if (guest_stop(r->pve, &r->g, &r->w, &e) < 0)
		failed = "stopping the guest";
	else if (guest_get_config(r->pve, &r->g, &cur, &e) < 0)
		failed = "reading the config";
	else if (convert_restore_plan(r->saved, cur, &del, &set) < 0)
		failed = "planning the restore (out of memory)";
	else if (del && guest_set_config(r->pve, &r->g, &(struct pve_params){0}, del, NULL,
					 false, &r->w, &e) < 0)
		failed = "removing the virtio devices";
	else if (set.n && guest_set_config(r->pve, &r->g, &set, NULL, NULL, false, &r->w,
					   &e) < 0)
		failed = "restoring the saved config";
	json_object_put(cur);
	cur = NULL;
	free(del);
	pve_params_free(&set);
	if (!failed) {
		if (guest_get_config(r->pve, &r->g, &cur, &e) < 0) {
			failed = "reading the restored config";
		} else {
			char *d2 = NULL;
			struct pve_params s2 = {0};
			if (convert_restore_plan(r->saved, cur, &d2, &s2) < 0 || d2 || s2.n)
				failed = "checking the restored config (it differs from the saved one)";
			free(d2);
			pve_params_free(&s2);
		}
	}
	if (!failed && guest_start(r->pve, &r->g, &r->w, &e) < 0)
		failed = "starting the guest on its emulated disks and NICs";
	struct ssh_error se = {0};
	double timeout = r->q.verify_timeout_s > 0 ? r->q.verify_timeout_s : 300;
	if (!failed && connect_wait(r, timeout, &se) < 0)
		failed = "reaching the guest over SSH on its emulated disks and NICs";
	if (!failed && restore_files(r) < 0)
		failed = "restoring the guest's files";
	char *msg = NULL;
	if (failed) {
		const char *why = e.message ? e.message : se.kind ? ssh_error_str(&se) : "";
		char *hint = pve_perm_hint(e.message ? e.message : what);
		msg = strprintf("%s failed: %s; then the rollback failed %s: %s%s", was ? was : "?",
				what ? what : "error", failed, why, hint ? hint : "");
		free(hint);
		json_object *now = NULL;
		struct pve_error e2 = {0};
		if (guest_get_config(r->pve, &r->g, &now, &e2) < 0)
			now = NULL;
		pve_error_clear(&e2);
		char *recovery = recovery_text(r, now);
		job_set_left(r->j.job, "%s", recovery ? recovery : "out of memory");
		free(recovery);
		json_object_put(now);
		r->outcome = JOB_OUT_NEEDS_ATTENTION;
	} else {
		char *hint = pve_perm_hint(what);
		msg = strprintf("%s failed: %s; rolled back: the guest runs on %s with its original "
				"files%s", was ? was : "?", what ? what : "error", emulated(r),
				hint ? hint : "");
		free(hint);
		r->rolled_back = true;
		job_set_bool(r->j.job, "rolled_back", true);
		r->outcome = JOB_OUT_FAILED;
		job_note(r->j.job, "rolled back: the guest is back on %s", emulated(r));
	}
	job_fail_outcome(r->j.job, r->outcome, msg ? msg : "out of memory");
	free(msg);
	json_object_put(cur);
	pve_error_clear(&e);
	ssh_error_clear(&se);
	free(what);
	return -1;
}

/* ---- the workflow --------------------------------------------------------------------------- */

static int take_snapshot(struct run *r)
{
	step_begin(r, "snapshot");
	struct pve_error e = {0};
	bool existed = false;
	if (guest_snapshot(r->pve, &r->g, SNAPSHOT_NAME,
			   "before pvagent virtio (IDE/e1000 config and disks)", &r->w, &existed,
			   &e) == 0) {
		/* ours to delete when the rollback puts the guest back as it was */
		if (job_set_str(r->j.job, "snapshot", SNAPSHOT_NAME) < 0 ||
		    job_set_bool(r->j.job, "snapshot_taken", !existed) < 0)
			return failf(r, JOB_OUT_FAILED, "out of memory");
		if (existed)
			job_summary(r->j.job, "%s exists already, from an earlier run: kept as it is "
					      "(delete it with: qm delsnapshot %d %s)",
				    SNAPSHOT_NAME, r->g.vmid, SNAPSHOT_NAME);
		else if (r->q.keep_snapshot)
			job_summary(r->j.job, "%s taken, kept after the conversion (delete it with: "
					      "qm delsnapshot %d %s)",
				    SNAPSHOT_NAME, r->g.vmid, SNAPSHOT_NAME);
		else
			job_summary(r->j.job, "%s taken, deleted once the guest works on virtio",
				    SNAPSHOT_NAME);
		return 0;
	}
	if (pve_error_outcome(&e) == JOB_OUT_UNREACHABLE) /* stop here */
		return fail_pve(r, &e, "snapshot");
	job_note(r->j.job, "no snapshot taken (%s): the rollback relies on the saved config "
			       "and the file backups", e.message ? e.message : "refused");
	pve_error_clear(&e);
	job_summary(r->j.job, "none");
	return 0;
}

static int dry_run(struct run *r)
{
	step_begin(r, "prepare");
	size_t n1 = 0;
	if (r->det.profile.kmod_install)
		job_note(r->j.job, "would install %s unless %s exists: %s",
		      r->det.profile.kmod_pkg, r->det.profile.kmod_check, r->det.profile.kmod_install);
	if (run_phase(r, RW_PREPARE, true, &n1) < 0)
		return -1;
	if (r->det.profile.family == OS_LINUX && r->det.profile.initramfs_update)
		job_note(r->j.job, "would run %s", r->det.profile.initramfs_update);
	job_note(r->j.job, "prepare: %zu file%s to change while on %s", n1,
		 n1 == 1 ? "" : "s", emulated(r));
	step_begin(r, "config");
	for (size_t i = 0; (!r->pve_shown || r->shown_bus != r->vp.bus) && i < r->t.n_lines; i++)
		job_diff(r->j.job, r->t.lines[i]);
	job_note(r->j.job, "config: %u disk%s, %u NIC%s to %s", r->t.ndisks,
		 r->t.ndisks == 1 ? "" : "s", r->t.nnics, r->t.nnics == 1 ? "" : "s",
		 vbus_name(r->vp.bus));
	r->outcome = JOB_OUT_DONE;
	return 0;
}

static int journal_start(struct run *r, json_object *config)
{
	json_object *o = r->j.o;
	json_object_object_add(o, "vmid", json_object_new_int(r->g.vmid));
	json_object_object_add(o, "node", json_object_new_string(r->g.node));
	json_object_object_add(o, "config", json_object_get(config));
	json_object_object_add(o, "files", json_object_new_object());
	json_object_object_get_ex(o, "config", &r->saved);
	return journal_save(&r->j) < 0 ? failf(r, JOB_OUT_FAILED, "cannot store the journal") : 0;
}

/* ---- the steps -------------------------------------------------------------------------- */

static double verify_timeout(const struct run *r)
{
	return r->q.verify_timeout_s > 0 ? r->q.verify_timeout_s : 300;
}

/* A failed step (its error recorded by failf or the rollback). */
static enum step_rc step_failed(struct job *j, struct run *r)
{
	if (job_error(j)->kind == PVE_OK)
		failf(r, JOB_OUT_FAILED, "%s failed", r->step ? r->step : "?");
	return STEP_RC_FAIL;
}

/* The session and the plan, made again when this process has none (a
 * resumed job). */
static int ensure_plan(struct run *r, double timeout_s)
{
	struct ssh_error se = {0};
	if (!r->s && connect_wait(r, timeout_s, &se) < 0)
		return fail_ssh(r, &se, "connecting to the guest");
	if (!r->have_plan && plan_guest(r) < 0)
		return -1;
	return 0;
}

/* The PVE side of the plan, from the saved config alone, before any
 * connection to the guest: what changes in the config (which disks move
 * to which bus or controller, which NIC model, scsihw). The bus is the
 * one asked, the SCSI one for an emulated controller, any when only NICs
 * move; else the guest's OS decides it later: virtio-blk is shown and a
 * note says so. */
static int show_pve_plan(struct run *r)
{
	struct convert_target t;
	if (target_or_fail(r, VBUS_VIRTIO_SCSI, &t) < 0)
		return -1;
	bool fixed = t.scsi_ctl || t.ndisks == 0 || r->q.bus == CONVERT_BUS_SCSI;
	enum vbus bus = fixed && r->q.bus != CONVERT_BUS_BLK ? VBUS_VIRTIO_SCSI : VBUS_VIRTIO_BLK;
	if (bus != VBUS_VIRTIO_SCSI) {
		convert_target_free(&t);
		if (target_or_fail(r, bus, &t) < 0)
			return -1;
	}
	/* a dry run's "would change" lines; a real run's notes (its diffs
	 * are the switch's, when the config changes) */
	for (size_t i = 0; i < t.n_lines; i++)
		if (r->q.dry_run)
			job_diff(r->j.job, t.lines[i]);
		else
			job_note(r->j.job, "PVE side: will change %s", t.lines[i]);
	if (t.scsi_ctl)
		job_note(r->j.job, "PVE side: %u SCSI disk%s keep%s %s key%s, the emulated "
			 "controller becomes virtio-scsi", t.ndisks, t.ndisks == 1 ? "" : "s",
			 t.ndisks == 1 ? "s" : "", t.ndisks == 1 ? "its" : "their",
			 t.ndisks == 1 ? "" : "s");
	else if (t.ndisks)
		job_note(r->j.job, "PVE side: %u %s disk%s to %s%s", t.ndisks, t.sata ? "SATA" : "IDE",
			 t.ndisks == 1 ? "" : "s", vbus_name(bus),
			 fixed || r->q.bus != CONVERT_BUS_AUTO
				 ? "" : " (shown; the guest's OS decides: virtio-scsi for Linux "
					"with virtio_scsi, virtio-blk otherwise)");
	if (t.nnics)
		job_note(r->j.job, "PVE side: %u %s NIC%s to virtio", t.nnics, t.nic_model,
			 t.nnics == 1 ? "" : "s");
	convert_target_free(&t);
	r->pve_shown = true;
	r->shown_bus = bus;
	return 0;
}

/* A dry run whose guest side could not be checked: the PVE side was
 * shown; exit 4 (the guest could not be reached), the error says why. */
static enum step_rc plan_only(struct job *j, struct run *r, const char *why)
{
	char *m = strprintf("dry run incomplete: the PVE side is shown above; the guest side (its "
			    "OS, drivers and files) could not be checked: %s", why);
	r->outcome = JOB_OUT_UNREACHABLE;
	job_fail_outcome(j, r->outcome, m ? m : "out of memory");
	free(m);
	job_set_bool(j, "plan_only", true);
	return STEP_RC_FAIL;
}

static enum step_rc st_preflight(struct job *j)
{
	struct run *r = job_ctx(j);
	const struct convert_request *q = &r->q;
	step_begin(r, "preflight");
	json_object *cfg = NULL;
	if (read_config(r, &cfg) < 0)
		return step_failed(j, r);
	json_object_object_del(cfg, "digest");
	int rc = journal_start(r, cfg);
	json_object_put(cfg);
	if (rc < 0)
		return step_failed(j, r);
	/* nothing to move? (judged on the saved config) */
	struct convert_target probe;
	if (target_or_fail(r, VBUS_VIRTIO_BLK, &probe) < 0)
		return step_failed(j, r);
	bool nothing = probe.ndisks == 0 && probe.nnics == 0;
	convert_target_free(&probe);
	if (nothing) {
		r->outcome = JOB_OUT_DONE;
		if (job_set_bool(j, "already_virtio", true) < 0) {
			failf(r, JOB_OUT_FAILED, "out of memory");
			return step_failed(j, r);
		}
		job_summary(r->j.job, "already virtio: no IDE or SATA disk, no emulated NIC");
		return STEP_RC_END;
	}
	if (!json_flag(job_vars(j), "resumed") && show_pve_plan(r) < 0)
		return step_failed(j, r);
	bool running = r->g.status && strcmp(r->g.status, "running") == 0;
	if (!running && q->dry_run) {
		char *why = strprintf("the guest is %s (--dry-run reads its files: start it)",
				      r->g.status ? r->g.status : "stopped");
		enum step_rc src = plan_only(j, r, why ? why : "the guest is not running");
		free(why);
		return src;
	}
	if (q->dry_run && !r->ssh->host) {
		return plan_only(j, r, r->address_error ? r->address_error
					: "its address is unknown; give the address with --address A");
	}
	if (q->dry_run) {
		struct ssh_error se = {0};
		if (connect_wait(r, 0, &se) < 0) { /* once: nothing waits on a dry run */
			char *m = strprintf("connecting to the guest: %s", ssh_error_str(&se));
			ssh_error_clear(&se);
			enum step_rc src = plan_only(j, r, m ? m : "connecting to the guest failed");
			free(m);
			return src;
		}
	}
	if (!running) {
		job_note(r->j.job, "the guest is %s: starting it on IDE/e1000",
		      r->g.status ? r->g.status : "stopped");
		if (power(r, true) < 0)
			return step_failed(j, r);
	}
	if (ensure_plan(r, running ? 30 : verify_timeout(r)) < 0)
		return step_failed(j, r);
	json_object_object_add(r->j.o, "bus", json_object_new_string(vbus_name(r->vp.bus)));
	json_object *changes = json_object_new_array();
	for (size_t i = 0; changes && i < r->t.n_lines; i++)
		if (json_object_array_add(changes, json_object_new_string(r->t.lines[i])) < 0) {
			json_object_put(changes);
			changes = NULL;
		}
	if (!changes || json_add(job_vars(j), "changes", changes) < 0) {
		failf(r, JOB_OUT_FAILED, "out of memory");
		return step_failed(j, r);
	}
	job_summary(r->j.job, "%s: %u %s disk%s, %u %s NIC%s -> %s",
		  r->det.desc ? r->det.desc : "?", r->t.ndisks,
		  r->t.sata ? "SATA" : r->t.scsi_ctl ? "SCSI" : "IDE",
		  r->t.ndisks == 1 ? "" : "s", r->t.nnics, r->t.nic_model ? r->t.nic_model : "e1000",
		  r->t.nnics == 1 ? "" : "s", vbus_name(r->vp.bus));
	if (q->dry_run)
		return dry_run(r) < 0 ? step_failed(j, r) : STEP_RC_END;
	/* every privilege the switch and the rollback need, before anything changes */
	struct pve_error pe = {0};
	if (pveperm_check_config(r->pve, r->g.vmid, &r->t.set, r->t.delete_keys, &pe) < 0) {
		fail_pve(r, &pe, "preflight");
		return step_failed(j, r);
	}
	if (journal_save(&r->j) < 0) {
		failf(r, JOB_OUT_FAILED, "cannot store the journal");
		return step_failed(j, r);
	}
	return STEP_RC_OK;
}

static enum step_rc st_kmod(struct job *j)
{
	struct run *r = job_ctx(j);
	step_begin(r, "prepare");
	if (ensure_plan(r, 30) < 0 || install_kmod(r) < 0)
		return step_failed(j, r);
	return r->det.profile.kmod_install ? STEP_RC_OK : STEP_RC_SKIP;
}

static enum step_rc st_snapshot(struct job *j)
{
	struct run *r = job_ctx(j);
	r->w = *job_wait(j);
	return take_snapshot(r) < 0 ? step_failed(j, r) : STEP_RC_OK;
}

/* Did this job take the snapshot (rather than find it from an earlier
 * run)? */
static bool snapshot_is_ours(struct job *j)
{
	long long taken = 0;
	return json_int(job_vars(j), "snapshot_taken", &taken) && taken;
}

/* Delete the snapshot: 0; -1 when it is left, with the line that says so
 * and how to delete it by hand in *left (malloc'd, NULL when out of
 * memory). */
static int delete_snapshot(struct job *j, struct run *r, char **left)
{
	*left = NULL;
	r->w = *job_wait(j);
	struct pve_error e = {0};
	if (guest_delete_snapshot(r->pve, &r->g, SNAPSHOT_NAME, &r->w, NULL, &e) < 0) {
		*left = strprintf("%s is left (%s): delete it with: qm delsnapshot %d %s",
				  SNAPSHOT_NAME, e.message ? e.message : "error", r->g.vmid,
				  SNAPSHOT_NAME);
		pve_error_clear(&e);
		return -1;
	}
	job_set_str(r->j.job, "snapshot", NULL);
	return 0;
}

/* snapshot's undo, after the later undos: when they put the guest back as
 * it was, the snapshot this job took is of that same guest and only holds
 * space (and stops PVE from migrating local LVM-thin disks): delete it.
 * One that existed before this job stays, and so does ours when the
 * rollback left something (it is the way back then, and a resume goes on
 * from there): both are kept (1). Never fails the job: a snapshot that
 * cannot be deleted is named with the qm line. */
static int un_snapshot(struct job *j)
{
	struct run *r = job_ctx(j);
	if (!snapshot_is_ours(j))
		return 1;
	if (r->undo_failed || r->outcome == JOB_OUT_NEEDS_ATTENTION) {
		job_note(j, "%s kept: the rollback did not put everything back", SNAPSHOT_NAME);
		return 1;
	}
	char *left = NULL;
	if (delete_snapshot(j, r, &left) < 0) {
		job_note(j, "%s", left ? left : SNAPSHOT_NAME " is left");
		free(left);
		return 1;
	}
	job_note(j, "%s deleted: the guest is as it was before it", SNAPSHOT_NAME);
	return 0;
}

static enum step_rc st_bench_before(struct job *j)
{
	struct run *r = job_ctx(j);
	if (!r->q.bench)
		return STEP_RC_SKIP;
	if (ensure_plan(r, 30) < 0)
		return step_failed(j, r);
	run_bench(r, false);
	return STEP_RC_OK;
}

static enum step_rc st_prepare(struct job *j)
{
	struct run *r = job_ctx(j);
	step_begin(r, "prepare");
	size_t n = 0;
	if (ensure_plan(r, 30) < 0)
		return step_failed(j, r);
	if (run_phase(r, RW_PREPARE, false, &n) < 0 || rebuild_initramfs(r) < 0) {
		if (json_object_object_length(journal_files(&r->j)) && restore_files(r) == 0) {
			r->files_restored = true;
			job_note(r->j.job, "files put back; nothing on PVE was changed");
		}
		return step_failed(j, r);
	}
	job_summary(r->j.job, "%zu file%s changed; the guest still boots on %s", n,
		  n == 1 ? "" : "s", emulated(r));
	return STEP_RC_OK;
}

/* prepare's undo: the original files, unless the rollback restored them. */
static int un_prepare(struct job *j)
{
	struct run *r = job_ctx(j);
	if (r->files_restored || !json_object_object_length(journal_files(&r->j)))
		return 0;
	struct ssh_error se = {0};
	if (!r->s && connect_wait(r, verify_timeout(r), &se) < 0) {
		ssh_error_clear(&se);
		r->undo_failed = true;
		return -1;
	}
	if (restore_files(r) < 0) {
		r->undo_failed = true;
		return -1;
	}
	r->files_restored = true;
	return 0;
}

/* The config switched (the target applied, after a shutdown) and the
 * guest started: idempotent, so a resumed job completes a switch it was
 * killed in. */
static int ensure_switched(struct run *r)
{
	json_object *cur = NULL;
	if (read_config(r, &cur) < 0)
		return -1;
	bool applied = convert_target_applied(&r->t, cur);
	json_object_put(cur);
	if (!applied) {
		close_session(r);
		if (power(r, false) < 0 || apply_target(r) < 0)
			return -1;
		for (size_t i = 0; i < r->t.n_lines; i++)
			job_diff(r->j.job, r->t.lines[i]);
	}
	return power(r, true);
}

/* The PVE side of a conversion needs the target, which comes from the
 * saved config and the bus: a resumed job computes it again. */
static int ensure_target(struct run *r)
{
	if (r->t.set.n || r->t.delete_keys)
		return 0;
	const char *jbus = json_text(r->j.o, "bus");
	enum vbus bus = jbus && strcmp(jbus, "virtio-scsi") == 0 ? VBUS_VIRTIO_SCSI : VBUS_VIRTIO_BLK;
	return target_or_fail(r, bus, &r->t);
}

static enum step_rc st_switch(struct job *j)
{
	struct run *r = job_ctx(j);
	r->w = *job_wait(j);
	step_begin(r, "switch");
	/* resumed after it sent a request (the shutdown, the config): the
	 * guest may be down, its files are edited (the edits again change
	 * nothing: only a guest still running before the switch needs them) */
	bool resumed = job_step_attempts(j) > 0 || job_step_upid(j);
	size_t n = 0;
	if (!resumed) {
		if (ensure_plan(r, 30) < 0)
			return step_failed(j, r);
		if (run_phase(r, RW_SWITCH, false, &n) < 0) {
			rollback(r);
			r->files_restored = r->rolled_back;
			return step_failed(j, r);
		}
	}
	if (ensure_target(r) < 0 || ensure_switched(r) < 0) {
		rollback(r);
		r->files_restored = r->rolled_back; /* prepare's undo has nothing to do */
		return step_failed(j, r);
	}
	job_summary(r->j.job, "config changed, guest started");
	return STEP_RC_OK;
}

/* switch's undo: the rollback to IDE/e1000, files included (verify's
 * failure ran it already). */
static int un_switch(struct job *j)
{
	struct run *r = job_ctx(j);
	if (!r->rollback_ran) {
		r->w = *job_wait(j);
		rollback(r);
		r->files_restored = r->rolled_back;
	}
	return r->rolled_back ? 0 : -1;
}

/* verify's failure: the rollback to the emulated devices (switch's undo,
 * run here so that the job's error says how it ended), unless a stop
 * ended the step or its own task's end is unknown (the engine undoes
 * nothing then). Its requests are recorded as verify's, with
 * "rollback_began" in the vars: a verify resumed after a kill in the
 * rollback waits for none of them (st_verify). The engine then undoes
 * the earlier steps as for any failure: switch's undo says how the
 * rollback ended (a failed one: needs attention, with what it left). */
static enum step_rc verify_failed(struct job *j, struct run *r)
{
	if (job_stopping(j) || (job_error(j)->ambiguous && job_step_upid(j)))
		return step_failed(j, r);
	if (job_set_bool(j, "rollback_began", true) < 0)
		return step_failed(j, r);
	rollback(r);
	job_set_str(j, "rollback_began", NULL);
	r->files_restored = r->rolled_back;
	/* the rollback's own end is known: the undo of the done steps runs */
	job_err(j)->ambiguous = false;
	return step_failed(j, r);
}

static enum step_rc st_verify(struct job *j)
{
	struct run *r = job_ctx(j);
	r->w = *job_wait(j);
	step_begin(r, "verify");
	if (json_flag(job_vars(j), "rollback_began")) {
		/* killed in its rollback: the rollback's requests are no task of
		 * verify's to wait for (an unanswered one has landed: the engine
		 * settled it first); the conversion is tried again */
		job_step_resumed_task_done(j);
		job_set_str(j, "rollback_began", NULL);
		job_set_str(j, "rolled_back", NULL);
	}
	/* a resumed job may find the switch undone or the guest stopped */
	if (ensure_target(r) < 0 || ensure_switched(r) < 0)
		return verify_failed(j, r);
	struct ssh_error se = {0};
	if (!r->s && connect_wait(r, verify_timeout(r), &se) < 0) {
		fail_ssh(r, &se, "the guest does not answer over SSH on virtio (it may hang "
				 "at mountroot or have no network)");
		return verify_failed(j, r);
	}
	if (!r->have_plan && plan_guest(r) < 0)
		return verify_failed(j, r);
	json_object *cur = NULL;
	if (read_config(r, &cur) < 0)
		return verify_failed(j, r);
	bool applied = convert_target_applied(&r->t, cur);
	json_object_put(cur);
	if (!applied) {
		failf(r, JOB_OUT_FAILED, "PVE's config no longer shows the virtio devices");
		return verify_failed(j, r);
	}
	if (verify_guest(r) < 0)
		return verify_failed(j, r);
	job_summary(r->j.job, "the guest runs on %s with all its file systems and NICs",
		  vbus_name(r->vp.bus));
	return STEP_RC_OK;
}

static enum step_rc st_finish(struct job *j)
{
	struct run *r = job_ctx(j);
	step_begin(r, "finish");
	size_t n = 0;
	if (ensure_plan(r, verify_timeout(r)) < 0 || run_phase(r, RW_FINAL, false, &n) < 0) {
		const char *e0 = job_error(j)->message;
		char *m = strprintf("converted and verified, but dropping the old names failed: %s",
				    e0 ? e0 : "error");
		r->outcome = JOB_OUT_NEEDS_ATTENTION;
		job_fail_outcome(j, r->outcome, m ? m : "out of memory");
		free(m);
		job_set_left(j, "The guest works on virtio; its files still hold the old names beside "
			     "the new ones. Run pvagent virtio %s again to finish (job %lld).",
			     r->g.name ? r->g.name : "NAME", job_id(j));
		return STEP_RC_FAIL;
	}
	job_summary(r->j.job, "%zu file%s cleaned of the old names", n, n == 1 ? "" : "s");
	r->outcome = JOB_OUT_DONE;
	return STEP_RC_OK;
}

static enum step_rc st_bench_after(struct job *j)
{
	struct run *r = job_ctx(j);
	if (!r->q.bench)
		return STEP_RC_SKIP;
	if (ensure_plan(r, verify_timeout(r)) < 0)
		return step_failed(j, r);
	run_bench(r, true);
	return STEP_RC_OK;
}

/* The conversion worked and is verified: the snapshot this job took is
 * deleted (it holds space, and PVE migrates no local LVM-thin disk a
 * snapshot holds), unless --keep-snapshot. A delete that fails is said
 * with the qm line and leaves the job done. */
static enum step_rc st_del_snapshot(struct job *j)
{
	struct run *r = job_ctx(j);
	if (r->q.keep_snapshot || !snapshot_is_ours(j))
		return STEP_RC_SKIP;
	char *left = NULL;
	if (delete_snapshot(j, r, &left) < 0) {
		job_summary(j, "%s", left ? left : SNAPSHOT_NAME " is left");
		free(left);
		return STEP_RC_OK;
	}
	job_summary(j, "%s deleted (--keep-snapshot keeps it)", SNAPSHOT_NAME);
	return STEP_RC_OK;
}

int wf_virtio_config_check(struct pve *c, const struct guest_target *gt, struct pve_error *err)
{
	char *pending = NULL, *why = NULL;
	if (guest_pending(c, &gt->ref, &pending, err) < 0)
		return -1;
	int rc = convert_config_check(gt->config, gt->ref.vmid, pending, &why);
	free(pending);
	if (rc < 0) {
		if (why)
			pve_error_set(err, PVE_ERR_CONFIG, "%s is %s%s",
				      gt->ref.name ? gt->ref.name : "the guest",
				      strncmp(why, "a Windows", 9) == 0 ? "" : "not converted: ", why);
		else
			pve_error_oom(err);
		free(why);
	}
	return rc;
}

/* target.h's config_check for a new job (a resumed one goes on from its
 * journal whatever the config says now). */
static int open_check(struct pve *c, const struct guest_target *gt, void *arg,
		      struct pve_error *err)
{
	(void)arg;
	return wf_virtio_config_check(c, gt, err);
}

/* The request from the job's params: the guest found (by the subject,
 * its name), its template and address as asked (a dry run goes on
 * without an address, to show the PVE side). */
static int open_request(struct job *j, struct run *r)
{
	struct pve_error *err = job_err(j);
	struct job_env *env = job_env(j);
	struct convert_request *q = &r->q;
	q->dry_run = job_param_bool(j, "dry_run");
	const struct target_req how = {
		.tmpl_optional = true,
		.qemu_only = true,
		.address_optional = q->dry_run,
		.config_check = json_object_object_get_ex(job_vars(j), "config", NULL) ? NULL
											: open_check,
	};
	if (guest_target_open_job_as(j, &how, &r->gt, &r->vars) < 0)
		return -1;
	q->guest = &r->gt.ref;
	q->bus = (enum convert_bus)job_param_int(j, "bus");
	q->keep_snapshot = job_param_bool(j, "keep_snapshot");
	q->bench = job_param_bool(j, "bench");
	q->bench_size_mib = (unsigned)job_param_int(j, "bench_size_mib");
	q->verify_timeout_s = job_param_num(j, "verify_timeout_s");
	r->pve = job_pve(j);
	r->ssh = &r->gt.ssh;
	r->address_error = r->gt.address_error;
	if (env->store && !(r->bench_db = bench_db_path(env->conf->paths.state)))
		return pve_error_oom(err);
	r->w = env->wait;
	return guest_ref_copy(&r->g, q->guest) < 0 ? pve_error_oom(err) : 0;
}

/* The step a resumed job goes on from: the first neither done nor
 * skipped. */
static const char *resume_step(struct job *j)
{
	size_t n = 0;
	const struct store_step *st = job_steps(j, &n);
	for (size_t i = 0; i < n; i++)
		if (st[i].state != STEP_DONE && st[i].state != STEP_SKIPPED)
			return st[i].name;
	return "?";
}

static int virtio_open(struct job *j, void *ctx)
{
	struct run *r = ctx;
	if (open_request(j, r) < 0)
		return -1;
	r->j.job = j;
	r->j.o = job_vars(j);
	json_object *cfg;
	if (json_object_object_get_ex(r->j.o, "config", &cfg)) {
		/* resumed: the config saved before anything changed */
		r->saved = cfg;
		if (job_set_bool(j, "resumed", true) < 0)
			return pve_error_oom(job_err(j));
		job_note(r->j.job, "resuming an interrupted conversion (job %lld, at step %s)",
			 job_id(j), resume_step(j));
	}
	return 0;
}

static void virtio_close(struct job *j, void *ctx)
{
	(void)j;
	struct run *r = ctx;
	close_session(r);
	convert_target_free(&r->t);
	if (r->have_plan)
		virtio_plan_free(&r->vp);
	os_facts_free(&r->facts);
	guest_os_free(&r->det);
	strv_free(r->paths, r->n_paths);
	guest_ref_clear(&r->g);
	guest_target_free(&r->gt);
	tmpl_kvlist_free(&r->vars);
	free(r->bench_db);
}

static const struct job_step_def virtio_steps[] = {
	{"preflight", st_preflight, NULL, JOB_STEP_NO_UNDO},
	{"kmod", st_kmod, NULL, JOB_STEP_NO_UNDO},
	{"snapshot", st_snapshot, un_snapshot, JOB_STEP_TASK | JOB_STEP_NO_UNDO},
	{"bench-before", st_bench_before, NULL, JOB_STEP_NO_UNDO},
	{"prepare", st_prepare, un_prepare, 0},
	{"switch", st_switch, un_switch, JOB_STEP_TASK},
	{"verify", st_verify, NULL, JOB_STEP_TASK},
	{"finish", st_finish, NULL, JOB_STEP_NO_UNDO},
	{"bench-after", st_bench_after, NULL, JOB_STEP_NO_UNDO},
	{"del-snapshot", st_del_snapshot, NULL, JOB_STEP_TASK | JOB_STEP_NO_UNDO},
};

const struct job_workflow wf_virtio = {
	.name = "virtio",
	.params = &wf_virtio_params_decl,
	.steps = virtio_steps,
	.n_steps = sizeof virtio_steps / sizeof *virtio_steps,
	.ctx_size = sizeof(struct run),
	.open = virtio_open,
	.close = virtio_close,
	.undo_on_failure = true,
};


/* ---- the result ---------------------------------------------------------------------------- */

/* The conversion's state in words, from the job's outcome and what its
 * steps learned. */
static const char *result_status(struct job *j)
{
	json_object *v = job_vars(j);
	switch (job_outcome(j)) {
	case JOB_OUT_DONE:
		return json_flag(v, "already_virtio") ? "already-virtio"
		       : job_param_bool(j, "dry_run") ? "dry-run" : "converted";
	case JOB_OUT_NEEDS_ATTENTION:
		return "needs-attention";
	default:
		return json_flag(v, "plan_only") ? "dry-run-incomplete" : "failed";
	}
}

int wf_virtio_bench(struct job *j, struct bench_result *before, struct bench_result *after)
{
	memset(before, 0, sizeof *before);
	memset(after, 0, sizeof *after);
	json_object *bo = NULL, *ao = NULL;
	if (!json_object_object_get_ex(job_vars(j), "bench_before", &bo) ||
	    !json_object_object_get_ex(job_vars(j), "bench_after", &ao))
		return 0;
	char *err = NULL;
	if (bench_result_from_json(bo, before, &err) == 0 &&
	    bench_result_from_json(ao, after, &err) == 0)
		return 1;
	log_error("virtio job %lld: its benchmark figures: %s", job_id(j),
		  err ? err : "out of memory");
	free(err);
	bench_result_free(before);
	bench_result_free(after);
	return -1;
}

json_object *wf_virtio_result_json(struct job *j)
{
	size_t n = 0;
	const struct store_step *st = job_steps(j, &n);
	enum job_state state = job_state(j);
	if (!n || st[0].state == STEP_PENDING || state == JOB_QUEUED || state == JOB_RUNNING)
		return NULL; /* never begun here: its error says why */
	json_object *v = job_vars(j), *o = json_object_new_object(), *ch = NULL, *copy = NULL;
	if (!o)
		return NULL;
	const char *status = result_status(j);
	enum job_outcome out = job_outcome(j);
	bool bad = json_add_str(o, "status", status) < 0 ||
		   json_add_str(o, "outcome", job_outcome_name(out)) < 0 ||
		   json_add_str(o, "os", json_str(v, "os")) < 0 ||
		   json_add_str(o, "bus", json_str(v, "bus")) < 0 ||
		   json_add_str(o, "snapshot", json_str(v, "snapshot")) < 0;
	if (!bad && json_object_object_get_ex(v, "changes", &ch))
		bad = json_object_deep_copy(ch, &copy, NULL) < 0 || json_add(o, "changes", copy) < 0;
	else if (!bad)
		bad = json_add(o, "changes", json_object_new_array()) < 0;
	bad = bad || json_add(o, "resumed", json_object_new_boolean(json_flag(v, "resumed"))) < 0 ||
	      json_add(o, "rolled_back", json_object_new_boolean(json_flag(v, "rolled_back"))) < 0;
	if (!bad && out != JOB_OUT_DONE) {
		const char *m = job_error(j)->message;
		char *stopped = out == JOB_OUT_INTERRUPTED
					? strprintf("interrupted; resume with 'pvagent resume %lld' or "
						    "run the same command again", job_id(j))
					: NULL;
		bad = json_add_str(o, "failed_step", job_failed_step(j)) < 0 ||
		      json_add_str(o, "error", stopped ? stopped : m) < 0;
		free(stopped);
	}
	if (!bad && job_left(j))
		bad = json_add_str(o, "recovery", job_left(j)) < 0;
	struct bench_result before, after;
	if (!bad && wf_virtio_bench(j, &before, &after) == 1) {
		bad = json_add(o, "bench", bench_compare_json(&before, &after)) < 0;
		bench_result_free(&before);
		bench_result_free(&after);
	}
	if (bad) {
		json_object_put(o);
		return NULL;
	}
	return o;
}
