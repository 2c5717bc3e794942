/* procstat.c - /proc/PID/status for tests and benches (procstat.h). */
#include "procstat.h"

#include "ctl_client.h"
#include "util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char *status_text(pid_t pid)
{
	char *path = strprintf("/proc/%d/status", (int)pid), *text = NULL;
	if (path && read_file(path, &text, NULL) < 0)
		text = NULL;
	free(path);
	return text;
}

long procstat_field(pid_t pid, const char *key)
{
	char *text = status_text(pid), *k = strprintf("\n%s:", key);
	const char *p = text && k ? strstr(text, k) : NULL;
	long v = p ? strtol(p + strlen(k), NULL, 10) : -1;
	free(k);
	free(text);
	return v;
}

int procstat_wait_state(pid_t pid, char state, int ms)
{
	char want[] = {'\n', 'S', 't', 'a', 't', 'e', ':', '\t', state, '\0'};
	for (int i = 0; i < ms; i++) {
		char *text = status_text(pid);
		bool s = text && strstr(text, want);
		free(text);
		if (s)
			return 0;
		struct timespec ts = {0, 1000L * 1000};
		nanosleep(&ts, NULL); /* polling a state, bounded */
	}
	return -1;
}

int procstat_wait_sleeping(pid_t pid)
{
	return procstat_wait_state(pid, 'S', 1000);
}

pid_t procstat_daemon(const char *dbin, const char *bin, const char *conf, const char *log,
		      const char *sock, struct ctl_client *c)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0)
			dup2(fd, 2);
		setenv("PVAGENT_BIN", bin, 1);
		execl(dbin, dbin, "-c", conf, "-f", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 3000; i++) {
		char *err = NULL;
		int r = ctl_client_connect(sock, c, &err);
		free(err);
		if (r == 0)
			return pid;
		struct timespec ts = {0, 10L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling for the socket, bounded */
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}
