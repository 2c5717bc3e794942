/* procstat.c - /proc/PID/status for tests and benches (procstat.h). */
#include "procstat.h"

#include "util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int procstat_wait_sleeping(pid_t pid)
{
	for (int i = 0; i < 1000; i++) {
		char *text = status_text(pid);
		bool s = text && strstr(text, "\nState:\tS");
		free(text);
		if (s)
			return 0;
		struct timespec ts = {0, 1000L * 1000};
		nanosleep(&ts, NULL); /* polling a state, bounded */
	}
	return -1;
}
