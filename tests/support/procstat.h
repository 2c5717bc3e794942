/* procstat.h - what tests and benches read of a process in /proc: a
 * field of /proc/PID/status, and a bounded wait for it to sleep. */
#ifndef PVAGENT_TEST_PROCSTAT_H
#define PVAGENT_TEST_PROCSTAT_H

#include <sys/types.h>

/* The number after "KEY:" in /proc/PID/status (VmRSS, VmHWM in KiB,
 * voluntary_ctxt_switches, ...), or -1. */
long procstat_field(pid_t pid, const char *key);
/* Bounded wait (1 s) until the process sleeps ("State: S"); 0, or -1 when
 * it never did. */
int procstat_wait_sleeping(pid_t pid);

#endif
