/* fuzz.h - the fuzz target bodies (one per parser and pure transform) and
 * their shared helpers. The same bodies are wrapped in
 * LLVMFuzzerTestOneInput by fuzz_main.c (clang libFuzzer builds, make fuzz)
 * and replayed over tests/fuzz/corpus/NAME/ and tests/fuzz/regress/NAME/ by
 * tests/unit/test_fuzz_replay.c (make test).
 *
 * A body returns 0 when the input passed every property, -1 after
 * fuzz_fail() recorded which property broke, and 1 when it cannot run here
 * (a missing PVE schema file; fuzz_failure() says why). Memory errors are
 * the sanitizers' business. */
#ifndef PVAGENT_FUZZ_H
#define PVAGENT_FUZZ_H

#include <stddef.h>
#include <stdint.h>

typedef int (*fuzz_fn)(const uint8_t *d, size_t n);

struct fuzz_target {
	const char *name; /* directory name under corpus/ and regress/ */
	fuzz_fn fn;
};

/* FUZZ_TARGETS as a table, ending with {NULL, NULL}. */
extern const struct fuzz_target fuzz_targets[];

/* Every target: X(name) for the body int fuzz_name(const uint8_t *, size_t).
 * Parsers are in fuzz_parse.c, the simulator's checks in fuzz_sim.c, the
 * rewrite transforms with their properties in fuzz_rewrite.c. */
#define FUZZ_TARGETS(X)                                                      \
	X(ini) X(conf) X(tmpl) X(propstr) X(pvecfg_hw) X(task) X(osfacts)    \
	X(sim_schema) X(sim_scenario)                                        \
	X(rw_kv) X(rw_rcconf) X(rw_fstab) X(rw_grub) X(rw_modules)           \
	X(rw_interfaces) X(rw_netplan) X(rw_udev)

#define FUZZ_DECLARE(name) int fuzz_##name(const uint8_t *d, size_t n);
FUZZ_TARGETS(FUZZ_DECLARE)
#undef FUZZ_DECLARE

/* ---- helpers (fuzz.c) ---------------------------------------------------- */

/* Record a property failure; returns -1 (so: return fuzz_fail(...);). */
int fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Record why a target cannot run here; returns 1. */
int fuzz_unavailable(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last message recorded ("" if none). */
const char *fuzz_failure(void);

/* The input as a NUL-terminated string (an embedded NUL ends it, as it
 * would for the C string APIs under test); malloc'd, NULL when out of
 * memory. */
char *fuzz_str(const uint8_t *d, size_t n);

/* Write the input to NAME in this process's private temporary directory
 * (made on first use, removed at exit) and return the file's path
 * (malloc'd), or NULL with errno set. Remove it with fuzz_file_done(). */
char *fuzz_file(const uint8_t *d, size_t n, const char *name);
void fuzz_file_done(char *path);

#endif
