/* bench.c - running the in-guest disk benchmark over SSH (bench.h): the
 * steps of a run (prepare, write, read, diskinfo, fio, cleanup), their
 * commands and timing. The parsers of their output are in bench_parse.c,
 * the result and its text and JSON forms in bench_result.c, the bench
 * table of state.db in bench_store.c. */
#include "bench_int.h"

#include "clock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB ((uint64_t)1048576)
#define DISKINFO_MIN_TIMEOUT_MS 300000L
#define FIO_EXTRA_TIMEOUT_MS 120000L
#define FIO_MAX_RUNTIME_S 3600u

/* ---- running ------------------------------------------------------------------- */

struct run {
	struct ssh_session *s;
	const struct bench_request *req;
	struct bench_result *res;
	char **err;
	enum os_family os;
	const char *dir;          /* without trailing '/' ("" for /) */
	const char *disk;         /* raw disk without /dev/, or NULL */
	long data_timeout_ms;
	unsigned fio_runtime_s;
	uint64_t bytes;           /* size in bytes */
	char count[24];           /* size in MiB as text */
	double baseline_s;        /* time of an empty command; < 0: not measured */
	bool broken;              /* the session failed: nothing more can run */
	char *tmpdir, *file;
};

static void emit(struct run *r, const char *step, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void emit(struct run *r, const char *step, const char *fmt, ...)
{
	if (!r->req->on_event)
		return;
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0)
		r->req->on_event(r->req->event_ctx, step, sbuf_str(&b));
	sbuf_free(&b);
}

/* A note in the result and as an event. */
static void note(struct run *r, const char *step, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note(struct run *r, const char *step, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0 && benchi_add_note_str(r->res, sbuf_str(&b)) == 0)
		emit(r, step, "%s", sbuf_str(&b)); /* the event line says "note:" */
	sbuf_free(&b);
}

static void fail(struct run *r, enum job_outcome o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct run *r, enum job_outcome o, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (r->err) {
		free(*r->err);
		*r->err = rc == 0 ? sbuf_steal(&b) : NULL;
	}
	sbuf_free(&b);
	r->res->outcome = o;
}

/* Run a script (ssh_build_script: each %s an argument, quoted): 0 when
 * the command ran, whatever its exit status; -1 with *e otherwise (a
 * transport failure also marks the run broken). elapsed (may be NULL) gets
 * the wall time of the exec. */
static int exec_script(struct run *r, const char *script, const char *const *args,
		       long timeout_ms, struct ssh_result *out, double *elapsed,
		       struct ssh_error *e)
{
	memset(out, 0, sizeof *out);
	char *cmd = ssh_build_script(script, args);
	if (!cmd) {
		e->kind = SSH_ERR_IO;
		e->msg = strprintf("cannot build the command: %s", strerror(errno));
		return -1;
	}
	struct ssh_exec_opts xo = {.timeout_ms = timeout_ms};
	double t0 = pve_clock_now(NULL);
	int rc = ssh_exec_cmdline(r->s, cmd, &xo, out, e);
	double t1 = pve_clock_now(NULL);
	free(cmd);
	if (elapsed)
		*elapsed = t1 - t0;
	if (rc < 0) {
		if (e->kind != SSH_ERR_IO)
			r->broken = true;
		ssh_result_free(out);
		return -1;
	}
	return 0;
}

/* exec_script, failing the run with "STEP: SSH error". */
static int run_script(struct run *r, const char *step, const char *script,
		      const char *const *args, long timeout_ms, struct ssh_result *out,
		      double *elapsed)
{
	struct ssh_error e = {0};
	if (exec_script(r, script, args, timeout_ms, out, elapsed, &e) == 0)
		return 0;
	fail(r, job_outcome_failure(ssh_error_outcome(&e)), "%s: %s", step, ssh_error_str(&e));
	ssh_error_clear(&e);
	return -1;
}

/* A failed remote command: "STEP: WHAT failed (exit N): last line". */
static void fail_remote(struct run *r, const char *step, const char *what,
			const struct ssh_result *o)
{
	char *m = benchi_remote_msg(o);
	if (o->exit_signal)
		fail(r, JOB_OUT_FAILED, "%s: %s killed by signal %s: %s", step, what, o->exit_signal, m ? m : "");
	else
		fail(r, JOB_OUT_FAILED, "%s: %s failed (exit %d): %s", step, what, o->exit_status, m ? m : "");
	free(m);
}

/* The time of an empty command, measured twice, the shorter kept. */
static int baseline(struct run *r, const char *step, double *out)
{
	if (r->baseline_s < 0) {
		double best = -1;
		for (int i = 0; i < 2; i++) {
			struct ssh_result o;
			double t;
			if (run_script(r, step, "true", NULL, 0, &o, &t) < 0)
				return -1;
			ssh_result_free(&o);
			best = best < 0 || t < best ? t : best;
		}
		r->baseline_s = best;
	}
	*out = r->baseline_s;
	return 0;
}

/* Seconds of a copy: dd's own time if it printed one (and prefer_dd),
 * else the exec's wall time less the empty-command time. */
static int copy_seconds(struct run *r, const char *step, const struct bench_dd *dd,
			bool prefer_dd, double elapsed, double *secs)
{
	if (prefer_dd && dd->seconds > 0) {
		*secs = dd->seconds;
		return 0;
	}
	double base;
	if (baseline(r, step, &base) < 0)
		return -1;
	double s = elapsed - base;
	if (s < elapsed / 2) {
		note(r, step, "%s took %.3f s, hardly more than an empty SSH command (%.3f s): the "
			      "figure is rough; a larger --size gives a better one",
		     step, elapsed, base);
		s = s > 0 ? s : elapsed;
	}
	*secs = s > 1e-6 ? s : 1e-6;
	return 0;
}

static int prepare(struct run *r)
{
	char *tmpl = strprintf("%s/pvagent-bench.XXXXXX", r->dir);
	const char *args[] = {tmpl, NULL};
	struct ssh_result o;
	int rc = -1;
	if (!tmpl) {
		fail(r, JOB_OUT_FAILED, "prepare: out of memory");
		return -1;
	}
	if (run_script(r, "prepare", "mktemp -d %s", args, 0, &o, NULL) < 0)
		goto out;
	if (o.exit_status != 0) {
		char *m = benchi_remote_msg(&o);
		fail(r, JOB_OUT_FAILED, "prepare: cannot make a directory in %s (mktemp -d, exit %d): %s",
		     *r->dir ? r->dir : "/", o.exit_status, m ? m : "");
		free(m);
		goto free_out;
	}
	/* mktemp prints the path: the template with the X's replaced by
	 * letters and digits. */
	const char *p = sbuf_str(&o.out);
	size_t n = strlen(p);
	while (n && benchi_is_space(p[n - 1]))
		n--;
	size_t pre = strlen(tmpl) - strlen("XXXXXX");
	bool ok = n == strlen(tmpl) && memcmp(p, tmpl, pre) == 0;
	for (size_t i = pre; ok && i < n; i++)
		ok = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		     benchi_is_digit(p[i]);
	if (!ok) {
		char *m = benchi_first_line(p);
		fail(r, JOB_OUT_FAILED, "prepare: mktemp -d printed '%s', not a directory like %s", m ? m : "",
		     tmpl);
		free(m);
		goto free_out;
	}
	r->tmpdir = strndup(p, n);
	r->file = r->tmpdir ? strprintf("%s/data", r->tmpdir) : NULL;
	if (!r->file) {
		fail(r, JOB_OUT_FAILED, "prepare: out of memory");
		goto free_out;
	}
	emit(r, "prepare", "test file %s (%u MiB)", r->file, r->res->size_mib);
	rc = 0;
free_out:
	ssh_result_free(&o);
out:
	free(tmpl);
	return rc;
}

/* Parse a copy's dd output and check its byte count. */
static int dd_result(struct run *r, const char *step, const struct ssh_result *o,
		     uint64_t want, bool exact, struct bench_dd *dd)
{
	char *perr = NULL;
	const char *text = o->err.len ? sbuf_str(&o->err) : sbuf_str(&o->out);
	if (bench_parse_dd(text, MIB, dd, &perr) < 0) {
		fail(r, JOB_OUT_FAILED, "%s: %s", step, perr ? perr : "dd output not understood");
		free(perr);
		return -1;
	}
	if ((exact && dd->bytes != want) || dd->bytes == 0) {
		fail(r, JOB_OUT_FAILED, "%s: dd copied %" PRIu64 " bytes, not %" PRIu64, step, dd->bytes, want);
		return -1;
	}
	return 0;
}

static int step_write(struct run *r)
{
	const char *args[] = {r->file, r->count, r->file, NULL};
	const char *script;
	if (r->os == OS_LINUX) {
		script = "LC_ALL=C dd if=/dev/zero of=%s bs=1048576 count=%s conv=fsync";
		args[2] = NULL;
	} else {
		script = "dd if=/dev/zero of=%s bs=1048576 count=%s && fsync %s";
	}
	struct ssh_result o;
	double elapsed;
	if (run_script(r, "write", script, args, r->data_timeout_ms, &o, &elapsed) < 0)
		return -1;
	int rc = -1;
	struct bench_dd dd;
	double secs;
	if (o.exit_status != 0) {
		fail_remote(r, "write", r->os == OS_LINUX ? "dd" : "dd && fsync", &o);
		goto out;
	}
	if (dd_result(r, "write", &o, r->bytes, true, &dd) < 0 ||
	    copy_seconds(r, "write", &dd, r->os == OS_LINUX, elapsed, &secs) < 0)
		goto out;
	double mbps = (double)dd.bytes / secs / 1e6;
	if (bench_add_figure(r->res, "seq_write_mbps", mbps) < 0) {
		fail(r, JOB_OUT_FAILED, "write: out of memory");
		goto out;
	}
	emit(r, "write", "sequential write: %.1f MB/s (%s MiB in %.2f s)", mbps, r->count, secs);
	rc = 0;
out:
	ssh_result_free(&o);
	return rc;
}

/* FreeBSD without a raw disk: may the file be read (larger than RAM)? 1
 * yes, 0 no (noted), -1 failure. */
static int file_beats_ram(struct run *r)
{
	struct ssh_result o;
	if (run_script(r, "read", "sysctl -n hw.physmem", NULL, 0, &o, NULL) < 0)
		return -1;
	const char *p = sbuf_str(&o.out), *end = p + strlen(p);
	p = benchi_skip_space(p, end);
	uint64_t mem = 0;
	bool ok = o.exit_status == 0 && benchi_parse_u64(&p, end, &mem) &&
		  benchi_skip_space(p, end) == end;
	int rc = 0;
	if (!ok) {
		char *m = benchi_remote_msg(&o);
		note(r, "read", "sequential read skipped: no raw disk device given, and the RAM size "
				"is unknown (sysctl -n hw.physmem: %s)", m ? m : "");
		free(m);
	} else if (r->bytes <= mem) {
		note(r, "read", "sequential read skipped: no raw disk device given, and the %s MiB "
				"file is not larger than RAM (%" PRIu64 " MiB), so FreeBSD would read it "
				"from its cache; name the disk, or use a --size above RAM",
		     r->count, (uint64_t)(mem / MIB));
	} else {
		rc = 1;
	}
	ssh_result_free(&o);
	return rc;
}

static int step_read(struct run *r)
{
	struct ssh_result o;
	char *dev = NULL;
	const char *src = r->file;
	if (r->os == OS_LINUX) {
		if (run_script(r, "read", "sync && echo 3 > /proc/sys/vm/drop_caches", NULL,
			       r->data_timeout_ms, &o, NULL) < 0)
			return -1;
		if (o.exit_status != 0) {
			char *m = benchi_remote_msg(&o);
			note(r, "read", "page cache not dropped (%s): the sequential read may be "
					"served from memory", m ? m : "");
			free(m);
		}
		ssh_result_free(&o);
	} else if (r->disk) {
		dev = strprintf("/dev/%s", r->disk);
		if (!dev) {
			fail(r, JOB_OUT_FAILED, "read: out of memory");
			return -1;
		}
		src = dev;
	} else {
		int rc = file_beats_ram(r);
		if (rc <= 0)
			return rc;
	}
	const char *args[] = {src, r->count, NULL};
	const char *script = r->os == OS_LINUX
				     ? "LC_ALL=C dd if=%s of=/dev/null bs=1048576 count=%s"
				     : "dd if=%s of=/dev/null bs=1048576 count=%s";
	double elapsed;
	int rc = -1;
	if (run_script(r, "read", script, args, r->data_timeout_ms, &o, &elapsed) < 0) {
		free(dev);
		return -1;
	}
	struct bench_dd dd;
	double secs;
	if (o.exit_status != 0) {
		fail_remote(r, "read", dev ? "dd of the raw disk" : "dd", &o);
		goto out;
	}
	if (dd_result(r, "read", &o, r->bytes, !dev, &dd) < 0 ||
	    copy_seconds(r, "read", &dd, true, elapsed, &secs) < 0)
		goto out;
	if (dev && dd.bytes < r->bytes)
		note(r, "read", "%s holds only %" PRIu64 " bytes: the read is shorter than %s MiB",
		     dev, dd.bytes, r->count);
	double mbps = (double)dd.bytes / secs / 1e6;
	if (bench_add_figure(r->res, "seq_read_mbps", mbps) < 0) {
		fail(r, JOB_OUT_FAILED, "read: out of memory");
		goto out;
	}
	emit(r, "read", "sequential read%s%s: %.1f MB/s (%.2f s)", dev ? " of " : "",
	     dev ? dev : "", mbps, secs);
	rc = 0;
out:
	ssh_result_free(&o);
	free(dev);
	return rc;
}

static int step_diskinfo(struct run *r)
{
	if (!r->disk) {
		note(r, "diskinfo", "diskinfo -c -t skipped: no raw disk device given");
		return 0;
	}
	char *dev = strprintf("/dev/%s", r->disk);
	if (!dev) {
		fail(r, JOB_OUT_FAILED, "diskinfo: out of memory");
		return -1;
	}
	const char *args[] = {dev, NULL};
	long t = r->data_timeout_ms > DISKINFO_MIN_TIMEOUT_MS ? r->data_timeout_ms
							      : DISKINFO_MIN_TIMEOUT_MS;
	struct ssh_result o;
	if (run_script(r, "diskinfo", "diskinfo -c -t %s", args, t, &o, NULL) < 0) {
		free(dev);
		return -1;
	}
	if (o.exit_status != 0) {
		char *m = benchi_remote_msg(&o);
		note(r, "diskinfo", "diskinfo -c -t %s failed (exit %d): %s", dev, o.exit_status,
		     m ? m : "");
		free(m);
	} else {
		struct bench_result tmp = {0};
		char *perr = NULL;
		if (bench_parse_diskinfo(sbuf_str(&o.out), &tmp, &perr) < 0) {
			note(r, "diskinfo", "%s", perr ? perr : "diskinfo output not understood");
		} else {
			for (size_t i = 0; i < tmp.n_figs; i++)
				if (bench_add_figure(r->res, tmp.figs[i].key, tmp.figs[i].value) < 0)
					note(r, "diskinfo", "out of memory");
			emit(r, "diskinfo", "diskinfo -c -t %s: %zu figures", dev, tmp.n_figs);
		}
		free(perr);
		bench_result_free(&tmp);
	}
	ssh_result_free(&o);
	free(dev);
	return 0;
}

/* fio splits --filename at ':'; a literal one is written "\:". */
static char *fio_filename_arg(const char *file)
{
	struct sbuf b = {0};
	int bad = sbuf_add(&b, "--filename=") < 0;
	for (const char *p = file; *p && !bad; p++)
		bad = (*p == ':' ? sbuf_add(&b, "\\:") : sbuf_addc(&b, *p)) < 0;
	if (bad) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

static bool mentions(const struct ssh_result *o, const char *what)
{
	return strstr(sbuf_str(&o->err), what) || strstr(sbuf_str(&o->out), what);
}

static int step_fio(struct run *r)
{
	struct ssh_result o;
	if (run_script(r, "fio", "fio --version", NULL, 0, &o, NULL) < 0)
		return -1;
	if (o.exit_status == 127 ||
	    (o.exit_status != 0 && (mentions(&o, "not found") || mentions(&o, "No such file")))) {
		ssh_result_free(&o);
		note(r, "fio", "fio not installed, random reads skipped");
		return 0;
	}
	if (o.exit_status != 0) {
		char *m = benchi_remote_msg(&o);
		note(r, "fio", "fio --version failed (exit %d): %s; random reads skipped",
		     o.exit_status, m ? m : "");
		free(m);
		ssh_result_free(&o);
		return 0;
	}
	char *ver = benchi_last_line_of(sbuf_str(&o.out));
	ssh_result_free(&o);
	char *fname = fio_filename_arg(r->file);
	char *size = strprintf("--size=%sM", r->count);
	char *rt = strprintf("--runtime=%u", r->fio_runtime_s);
	int rc = -1;
	if (!fname || !size || !rt) {
		fail(r, JOB_OUT_FAILED, "fio: out of memory");
		goto out;
	}
	const char *args[] = {fname, size, rt, NULL};
	long t = (long)r->fio_runtime_s * 1000 + FIO_EXTRA_TIMEOUT_MS;
	if (run_script(r, "fio",
		       "fio --name=rr %s --rw=randread --bs=4k %s %s --time_based --direct=1 "
		       "--output-format=json",
		       args, t, &o, NULL) < 0)
		goto out;
	rc = 0;
	if (o.exit_status != 0) {
		char *m = benchi_remote_msg(&o);
		if (mentions(&o, "output-format"))
			note(r, "fio", "%s cannot print JSON (--output-format needs fio 2.1 or "
				       "later), random reads skipped", ver ? ver : "fio");
		else
			note(r, "fio", "fio failed (exit %d): %s; random reads skipped",
			     o.exit_status, m ? m : "");
		free(m);
	} else {
		double iops, bw;
		char *perr = NULL;
		if (bench_parse_fio(sbuf_str(&o.out), &iops, &bw, &perr) < 0)
			note(r, "fio", "%s; random reads skipped", perr ? perr : "fio output not understood");
		else if (bench_add_figure(r->res, "rand_read_iops", iops) < 0) {
			fail(r, JOB_OUT_FAILED, "fio: out of memory");
			rc = -1;
		} else
			emit(r, "fio", "random 4 KiB reads: %.0f IOPS (%s)", iops, ver ? ver : "fio");
		free(perr);
	}
	ssh_result_free(&o);
out:
	free(ver);
	free(fname);
	free(size);
	free(rt);
	return rc;
}

/* Remove the test file and directory. 0 done; -1 not done (the message
 * of a failed run is extended, or the run fails as needs-attention). */
static int cleanup(struct run *r, bool failed)
{
	if (!r->tmpdir)
		return 0;
	char *why = NULL;
	if (r->broken) {
		why = strdup("the connection failed");
	} else {
		struct ssh_result o;
		struct ssh_error e = {0};
		const char *args[] = {r->file, r->tmpdir, NULL};
		if (exec_script(r, "rm -f %s && rmdir %s", args, 0, &o, NULL, &e) < 0) {
			why = strdup(ssh_error_str(&e));
			ssh_error_clear(&e);
		} else if (o.exit_status != 0) {
			why = benchi_remote_msg(&o);
			ssh_result_free(&o);
		} else {
			ssh_result_free(&o);
			emit(r, "cleanup", "removed %s", r->tmpdir);
			return 0;
		}
	}
	if (failed) {
		char *old = r->err ? *r->err : NULL;
		if (r->err) {
			*r->err = strprintf("%s; and %s is left on the guest (%s): remove it with "
					    "rm -rf %s", old ? old : "bench failed", r->tmpdir,
					    why ? why : "", r->tmpdir);
			free(old);
		}
	} else {
		fail(r, JOB_OUT_NEEDS_ATTENTION, "cleanup: %s is left on the guest (%s): remove it with rm -rf %s",
		     r->tmpdir, why ? why : "", r->tmpdir);
	}
	free(why);
	return -1;
}

static bool valid_dir(const char *d)
{
	if (d[0] != '/' || strlen(d) > 3000)
		return false;
	for (const unsigned char *p = (const unsigned char *)d; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static bool valid_disk(const char *d)
{
	if (!*d || *d == '/' || strlen(d) > 64 || strstr(d, ".."))
		return false;
	for (const char *p = d; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || benchi_is_digit(*p) ||
		      *p == '.' || *p == '_' || *p == '-' || *p == '/'))
			return false;
	return true;
}

int bench_run(struct ssh_session *s, const struct bench_request *req, struct bench_result *res,
	      char **err)
{
	memset(res, 0, sizeof *res);
	struct run r = {.s = s, .req = req, .res = res, .err = err, .os = req->os,
			.baseline_s = -1};
	unsigned size = req->size_mib ? req->size_mib : BENCH_DEFAULT_SIZE_MIB;
	res->size_mib = size;
	res->bus = strdup(req->bus ? req->bus : "?");
	res->nic = strdup(req->nic ? req->nic : "?");
	char *dir = strdup(req->dir ? req->dir : BENCH_DEFAULT_DIR);
	if (!res->bus || !res->nic || !dir) {
		fail(&r, JOB_OUT_FAILED, "bench: out of memory");
		free(dir);
		return -1;
	}
	size_t dl = strlen(dir);
	while (dl > 0 && dir[dl - 1] == '/')
		dir[--dl] = '\0';
	r.dir = dir;
	const char *disk = req->raw_disk;
	if (disk && strncmp(disk, "/dev/", 5) == 0)
		disk += 5;
	bool ok = false;
	if (req->os != OS_FREEBSD && req->os != OS_LINUX)
		fail(&r, JOB_OUT_USAGE, "bench: the guest OS is not known (FreeBSD or Linux)");
	else if (size > BENCH_MAX_SIZE_MIB)
		fail(&r, JOB_OUT_USAGE, "bench: --size %u MiB is more than %u MiB", size, BENCH_MAX_SIZE_MIB);
	else if (!valid_dir(req->dir ? req->dir : BENCH_DEFAULT_DIR))
		fail(&r, JOB_OUT_USAGE, "bench: the test directory must be an absolute path without control "
			    "characters");
	else if (disk && req->os == OS_FREEBSD && !valid_disk(disk))
		fail(&r, JOB_OUT_USAGE, "bench: '%s' is not a disk device name (like ad0, vtbd0 or da0)",
		     req->raw_disk);
	else
		ok = true;
	if (!ok) {
		free(dir);
		return -1;
	}
	r.disk = req->os == OS_FREEBSD ? disk : NULL;
	r.bytes = (uint64_t)size * MIB;
	snprintf(r.count, sizeof r.count, "%u", size);
	r.data_timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : 60000L + (long)size * 1000L;
	r.fio_runtime_s = req->fio_runtime_s ? req->fio_runtime_s : BENCH_DEFAULT_FIO_RUNTIME_S;
	if (r.fio_runtime_s > FIO_MAX_RUNTIME_S)
		r.fio_runtime_s = FIO_MAX_RUNTIME_S;

	int rc = -1;
	if (prepare(&r) == 0 && step_write(&r) == 0 && step_read(&r) == 0 &&
	    (r.os != OS_FREEBSD || step_diskinfo(&r) == 0) && step_fio(&r) == 0)
		rc = 0;
	if (cleanup(&r, rc < 0) < 0)
		rc = -1;
	if (rc == 0) {
		res->ts = (long long)time(NULL);
		res->outcome = JOB_OUT_DONE;
	}
	free(r.tmpdir);
	free(r.file);
	free(dir);
	return rc;
}
