/* clirun.h - test support: running the pvagent tool to its end from a
 * test (its output checked for sanitizer reports), writing the small
 * files a test sets up, and the simulator's request and guest counts the
 * CLI tests assert on. */
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
 * sequences included. */
int test_pvagent_pty(const char *bin, const char *conf, unsigned short cols, char **out, ...);
/* Start argv (NULL-terminated; argv[0] the program's path) in the
 * background, its stdout and stderr into out_path. Its pid, or -1. */
pid_t test_spawn(const char *const *argv, const char *out_path);
/* SIGKILL the child *pid (when > 0), reap it, and set *pid to -1. */
void test_kill(pid_t *pid);

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

#endif
