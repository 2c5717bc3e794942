/* procstat.h - the benches' processes: a field of /proc/PID/status, a
 * bounded wait for a process to sleep or stop, and pvagentd started and
 * connected to. */
#ifndef PVAGENT_TEST_PROCSTAT_H
#define PVAGENT_TEST_PROCSTAT_H

#include <sys/types.h>

/* The number after "KEY:" in /proc/PID/status (VmRSS, VmHWM in KiB,
 * voluntary_ctxt_switches, ...), or -1. */
long procstat_field(pid_t pid, const char *key);
/* Bounded wait (1 s) until the process sleeps ("State: S"); 0, or -1 when
 * it never did. */
int procstat_wait_sleeping(pid_t pid);
/* Bounded wait (about ms milliseconds) until the process is in state
 * ('S' sleeping, 'T' stopped, ...); 0, or -1 when it never was. */
int procstat_wait_state(pid_t pid, char state, int ms);

struct ctl_client;
/* Start `dbin -c conf -f` (its stderr to log, PVAGENT_BIN=bin) and connect
 * to sock (bounded wait: 30 s). The pid, with *c connected, or -1. */
pid_t procstat_daemon(const char *dbin, const char *bin, const char *conf, const char *log,
		      const char *sock, struct ctl_client *c);

#endif
