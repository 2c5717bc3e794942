/* bench.h - `pvagent bench NAME [--size MiB]`: the in-guest disk benchmark
 * run over SSH, its results (figures with units and direction), their text
 * and JSON forms, the side-by-side table `virtio --bench` prints, and their
 * store in state.db so later runs compare with earlier ones.
 *
 * What bench_run does on the guest (one SSH command each; every value that
 * reaches the guest's shell goes through ssh_quote(); the FreeBSD commands
 * are plain enough for csh, root's shell before FreeBSD 14, while the Linux
 * ones use a POSIX shell's VAR=value prefix):
 *   prepare   `mktemp -d DIR/pvagent-bench.XXXXXX` (DIR: req->dir, default
 *             /var/tmp): a fresh root-only directory for the test file
 *             DIR/pvagent-bench.XXXXXX/data, so a symlink planted under a
 *             fixed name in a world-writable directory is never followed.
 *   write     Linux: `LC_ALL=C dd if=/dev/zero of=FILE bs=1048576 count=N
 *             conv=fsync`; the figure is bytes / dd's own time (which
 *             includes the fsync), or the agent's time when dd printed none
 *             (busybox).
 *             FreeBSD: `dd if=/dev/zero of=FILE bs=1048576 count=N && fsync
 *             FILE` (dd has no conv=fsync before 13; fsync(1) is in base
 *             since 4.3); the figure is bytes / the command's wall time on
 *             the agent's monotonic clock, less the time of an empty command
 *             (`true`, measured twice, the shorter kept).
 *             Either way dd's byte count (summary line, or full records x
 *             block size) must be N MiB.
 *   read      Linux: `sync && echo 3 > /proc/sys/vm/drop_caches` (when that
 *             fails, e.g. not root, a note says the read may come from
 *             memory), then `LC_ALL=C dd if=FILE of=/dev/null bs=1048576
 *             count=N`.
 *             FreeBSD (no page cache drop exists): with req->raw_disk, the
 *             raw device read-only, `dd if=/dev/DISK of=/dev/null
 *             bs=1048576 count=N`; without it, the file only when it is
 *             larger than RAM (`sysctl -n hw.physmem`), else skipped with a
 *             note. The figure is bytes / dd's own time.
 *   diskinfo  FreeBSD with raw_disk: `diskinfo -c -t /dev/DISK`: the
 *             command overhead, the seek times and the transfer rates
 *             (bench_parse_diskinfo). A failure is a note, not an error.
 *   fio       `fio --version`; not installed: note "fio not installed,
 *             random reads skipped". Else `fio --name=rr --filename=FILE
 *             --rw=randread --bs=4k --size=NM --runtime=T --time_based
 *             --direct=1 --output-format=json`; the read IOPS. A fio
 *             without JSON output (before 2.1) or failing: a note.
 *   cleanup   `rm -f FILE && rmdir TMPDIR`, also after any failure while the
 *             connection works; when it cannot run, the error names the
 *             directory left behind.
 *
 * Figures (key, label, unit, higher is better), in this order:
 *   seq_write_mbps "sequential write" MB/s; seq_read_mbps "sequential
 *   read" MB/s; rand_read_iops "random 4 KiB reads" IOPS; from diskinfo:
 *   diskinfo_overhead_ms "diskinfo: command overhead" ms (per sector),
 *   diskinfo_seek_{full,half,quarter}_ms "diskinfo: full/half/quarter
 *   stroke seek", diskinfo_seek_short_{fwd,back}_ms "diskinfo: short
 *   forward/backward seek", diskinfo_seq_{outer,inner}_ms "diskinfo:
 *   sequential sector, outer/inner" (ms, lower is better),
 *   diskinfo_transfer_{outside,middle,inside}_mbps "diskinfo: transfer,
 *   outside/middle/inside" MB/s. MB = 10^6 bytes (diskinfo's kbytes are
 *   1024 bytes and are converted).
 *
 * Timeouts: each data command gets req->timeout_ms (0: 60 s plus 1 s per
 * MiB, i.e. at least 1 MB/s); diskinfo at least 300 s; fio its runtime
 * plus 120 s. A timeout breaks the session (ssh.h): nothing more runs.
 *
 * Storage: `<[paths] state>/state.db` (bench_db_path), table
 *   bench(id INTEGER PRIMARY KEY, guest TEXT, vmid INTEGER, ts INTEGER,
 *         bus TEXT, nic TEXT, size_mib INTEGER, figures TEXT, notes TEXT)
 * figures and notes being JSON arrays (bench_result_json's "figures" and
 * "notes"); opened with a 5 s busy timeout in WAL mode, the table created
 * when missing.
 *
 * Functions return 0 on success and -1 on failure with *err (malloc'd, one
 * line; err may be NULL) unless they say otherwise. */
#ifndef PVAGENT_BENCH_H
#define PVAGENT_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "osprof.h"
#include "outcome.h"
#include "ssh.h"

#define BENCH_DEFAULT_SIZE_MIB 256u
#define BENCH_MAX_SIZE_MIB 1048576u /* 1 TiB */
#define BENCH_DEFAULT_DIR "/var/tmp"
#define BENCH_DEFAULT_FIO_RUNTIME_S 10u

/* ---- results --------------------------------------------------------------- */

struct bench_figure {
	char *key;             /* "seq_write_mbps" */
	char *label;           /* "sequential write" */
	char *unit;            /* "MB/s", "IOPS", "ms" */
	double value;
	bool higher_is_better;
};

struct bench_result {
	long long ts;          /* Unix time (UTC) the run ended */
	char *bus;             /* "ide", "virtio-blk" (the request's label) */
	char *nic;             /* "e1000", "virtio" */
	unsigned size_mib;     /* test file size */
	struct bench_figure *figs;
	size_t n_figs;
	char **notes;          /* what was skipped and why, caveats */
	size_t n_notes;
	enum job_outcome outcome; /* bench_run: done, or what its failure means */
};

/* Free everything and zero the struct; a zeroed struct is fine. */
void bench_result_free(struct bench_result *r);
/* The figure with this key, or NULL. */
const struct bench_figure *bench_get(const struct bench_result *r, const char *key);
/* Add (or replace) a figure with one of the keys listed above (label,
 * unit and direction from the table). -1 (errno EINVAL) for another key. */
int bench_add_figure(struct bench_result *r, const char *key, double value);
/* Add (or replace) any figure (copies the strings). */
int bench_add_figure_full(struct bench_result *r, const char *key, const char *label,
			  const char *unit, double value, bool higher_is_better);
int bench_add_note(struct bench_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- running --------------------------------------------------------------- */

/* Progress: step is "prepare", "write", "read", "diskinfo", "fio" or
 * "cleanup"; text a one-line summary ("sequential write: 25.0 MB/s") or a
 * note. Both borrowed for the call. */
typedef void (*bench_event_fn)(void *ctx, const char *step, const char *text);

struct bench_request {
	enum os_family os;       /* OS_FREEBSD or OS_LINUX (from detection) */
	unsigned size_mib;       /* 0: BENCH_DEFAULT_SIZE_MIB; at most BENCH_MAX_SIZE_MIB */
	const char *dir;         /* where the private test directory is made:
				    an existing absolute path; NULL: /var/tmp */
	const char *raw_disk;    /* FreeBSD: the disk for the raw read and
				    diskinfo, "ad0", "vtbd0" or "/dev/da0"
				    (letters, digits, '.', '_', '-', '/' after
				    /dev/); NULL: both skipped, with a note.
				    Ignored on Linux */
	const char *bus;         /* labels for output: "ide", "virtio-blk"; */
	const char *nic;         /* "e1000", "virtio" (NULL: "?") */
	unsigned fio_runtime_s;  /* 0: BENCH_DEFAULT_FIO_RUNTIME_S */
	long timeout_ms;         /* per data command; 0: 60 s + 1 s per MiB */
	bench_event_fn on_event; /* may be NULL */
	void *event_ctx;
};

/* Run the benchmark on an open session. *res is always filled (zeroed
 * first; free it with bench_result_free): on success with ts, labels, size,
 * the figures measured and the notes; on failure (-1, *err says which step
 * and why; res->outcome failed, usage for a bad request, needs-attention
 * when only the removal of the test directory failed, unreachable when the
 * guest could not be reached)
 * with what was measured before. A failure that leaves the test directory
 * on the guest names it in *err. A failed run is not meant to be stored. */
int bench_run(struct ssh_session *s, const struct bench_request *req,
	      struct bench_result *res, char **err);

/* ---- output ---------------------------------------------------------------- */

/* The result as text:
 *   ide/e1000, 256 MiB, 2026-11-30 12:00:00 UTC
 *   sequential write      25.0 MB/s
 *   sequential read       30.0 MB/s
 *   random 4 KiB reads    4700 IOPS
 *   note: ...
 * Values: >= 100 no decimals, >= 10 one, >= 1 two, else three. */
int bench_print(const struct bench_result *r, FILE *f);

/* Side by side, one row per figure (before's order, then figures only
 * after has), the label with its unit, a column per run titled "BUS/NIC"
 * (when both titles are equal, each gets its run's UTC time "YYYY-MM-DD
 * HH:MM"), and the gain: after/before when higher is better, before/after
 * otherwise, as "4.80x"; "-" where a side is missing or not positive:
 *   figure                     ide/e1000  virtio-blk/virtio   gain
 *   sequential write (MB/s)         25.0                120  4.80x
 * Then the notes of each side ("note (ide/e1000): ..."). */
int bench_compare_table(const struct bench_result *before, const struct bench_result *after,
			FILE *f);
/* The same with the caller's column titles (NULL: as above). */
int bench_compare_table_titled(const struct bench_result *before, const char *title_before,
			       const struct bench_result *after, const char *title_after,
			       FILE *f);

/* {"ts", "time" (ISO 8601 UTC), "bus", "nic", "size_mib", "figures":
 * [{"key", "label", "unit", "value", "higher_is_better"}], "notes": [...]}.
 * New reference; NULL when out of memory. */
struct json_object;
struct json_object *bench_result_json(const struct bench_result *r);
/* {"before": result, "after": result, "rows": [{"key", "label", "unit",
 * "before", "after", "gain"}]} with null for a missing side or gain. */
struct json_object *bench_compare_json(const struct bench_result *before,
				       const struct bench_result *after);
/* Back from bench_result_json's form (every member checked; what is
 * wrong is named by its JSON path). */
int bench_result_from_json(const struct json_object *o, struct bench_result *r, char **err);

/* ---- storage --------------------------------------------------------------- */

/* "<state_dir>/state.db" (malloc'd; NULL when out of memory). */
char *bench_db_path(const char *state_dir);
/* Append one result for guest (name) and vmid (the directory holding
 * db_path must exist). */
int bench_store(const char *db_path, const char *guest, int vmid,
		const struct bench_result *res, char **err);
/* The latest stored result of guest and vmid (highest ts, then the last
 * stored): 1 and *res filled, 0 when there is none (or no database yet),
 * -1 on error. Call it before bench_store for "compared with the last
 * run". */
int bench_last(const char *db_path, const char *guest, int vmid,
	       struct bench_result *res, char **err);

/* ---- parsers (pure; exposed for tests) -------------------------------------- */

struct bench_dd {
	uint64_t bytes;          /* bytes copied: the summary line's, else
				    full records out x block size */
	double seconds;          /* dd's own time; < 0 when it printed none */
	uint64_t full_in, part_in, full_out, part_out; /* "N+M records in/out" */
	bool have_records;
	bool have_summary;       /* a "bytes ... copied/transferred" line */
};
/* dd's stderr: GNU ("B bytes (X MB, Y MiB) copied, S s, R MB/s", older
 * "B bytes (X MB) copied, S seconds, R MB/s"), busybox (records only, or
 * "B bytes (X.YMB) copied, S seconds, R.RMB/s"), FreeBSD ("B bytes
 * transferred in S secs (R bytes/sec)"). bs is the block size for a
 * records-only output. Other lines are ignored; output with neither
 * records nor a summary is rejected. */
int bench_parse_dd(const char *out, uint64_t bs, struct bench_dd *dd, char **err);
/* `diskinfo -c -t` output: the "calculated command overhead" line, the
 * "Seek times:" lines and the "Transfer rates:" lines become figures of r.
 * -1 when none is found or a known line holds no number. */
int bench_parse_diskinfo(const char *out, struct bench_result *r, char **err);
/* fio --output-format=json (text before the first line starting with '{'
 * is skipped): the read IOPS and bandwidth (KiB/s) summed over the jobs.
 * -1 for non-JSON, no jobs, a job with an error, missing numbers. */
int bench_parse_fio(const char *out, double *iops, double *bw_kib, char **err);

#endif
