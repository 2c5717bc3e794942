/* clirun.h - test support: running the pvagent tool to its end from a
 * test (its output checked for sanitizer reports), writing the small
 * files a test sets up, processes that prove nothing signalled them, a
 * query on the store, and the simulator's request and guest counts, guest
 * facts and drain outcome the CLI tests assert on. */
#ifndef TESTS_CLIRUN_H
#define TESTS_CLIRUN_H

#include "simproc.h"

#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>

/* Write text to path with mode. 0, or -1 (errno). */
int test_write_file(const char *path, const char *text, mode_t mode);

/* Remove dir and everything below it (symbolic links not followed). 0, or
 * -1 (errno). */
int test_remove_tree(const char *dir);

/* Run `bin -c conf ARGS...` (NULL-terminated) to its end; *out gets its
 * stdout and stderr (malloc'd). Returns its exit status; -1 when it could
 * not run; -2 when its output has a sanitizer report (*out kept). */
int test_pvagent(const char *bin, const char *conf, char **out, ...);
int test_pvagentv(const char *bin, const char *conf, char **out, va_list ap);

/* The same on a pseudo-terminal of cols columns (stdin, stdout and stderr
 * are its slave side); *out gets everything written to it, escape
 * sequences included. A run that has not ended after
 * TEST_PTY_DEADLINE_S seconds (a hang) is killed: -3, *out what it wrote. */
#define TEST_PTY_DEADLINE_S 60
int test_pvagent_pty(const char *bin, const char *conf, unsigned short cols, char **out, ...);
/* The same (100 columns), typing answer and a newline once the tool asked
 * its "[y/N]" question. */
int test_pvagent_pty_answer(const char *bin, const char *conf, const char *answer, char **out,
			    ...);
/* Start argv (NULL-terminated; argv[0] the program's path) in the
 * background, its stdout and stderr into out_path. Its pid, or -1. */
pid_t test_spawn(const char *const *argv, const char *out_path);
/* SIGKILL the child *pid (when > 0), reap it, and set *pid to -1. */
void test_kill(pid_t *pid);
/* The first column of the first row of sql (one optional text parameter,
 * arg) on the SQLite file at path, read-only, as an integer; -1 when there
 * is no such row or file. */
long long test_db_int(const char *path, const char *sql, const char *arg);
/* The same as text (malloc'd), NULL when there is no such row or file. */
char *test_db_text(const char *path, const char *sql, const char *arg);
/* A child that only waits, and ends at any signal that ends a process by
 * default (SIGTERM): that it is still there proves nothing signalled it.
 * Its pid, or -1. The caller kills and reaps it. */
pid_t test_bystander(void);
/* Has the child pid neither ended nor been reaped (a zombie has ended)? */
bool test_alive_unreaped(pid_t pid);

/* Wait (bounded, 60 s, polling the state) until the step of the job of
 * subject in state.db db has been sent (attempts > 0) and, when want_upid,
 * has its UPID recorded. 0; -1 when it never was or process pid (> 0)
 * ended first. */
int test_wait_step_sent(const char *db, const char *subject, const char *step, bool want_upid,
			pid_t pid);

/* Requests in the simulator's log with method and a path ending in
 * suffix, of status (any when < 0). */
int simproc_count(struct simproc *sp, const char *method, const char *suffix, int status);
/* Guests of that name in the simulator's state. */
int simproc_named(struct simproc *sp, const char *name);
/* Guest vmid in the simulator's state: its node and the value of one key
 * of its config (each "" when there is none). */
void simproc_guest(struct simproc *sp, int vmid, char *node, size_t nn, const char *key,
		   char *val, size_t nv);
/* Migrations of guest vmid the simulator accepted (qemu and lxc). */
int simproc_migrations(struct simproc *sp, int vmid);
/* NULL when every guest of vmids is off node from, carries the tag
 * pvagent-home-FROM and was migrated at most once; else what is wrong
 * with the first that is not (malloc'd). */
char *simproc_not_drained(struct simproc *sp, const int *vmids, size_t n, const char *from);

#endif
