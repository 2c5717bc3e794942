/* jobproc.c - a job of pvagentd as a pvagent child process (jobproc.h). */
#include "jobproc.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef PVAGENT_CLI
#define PVAGENT_CLI "/usr/local/bin/pvagent"
#endif

char *jobproc_cli_path(void)
{
	const char *env = getenv("PVAGENT_BIN");
	if (env && *env)
		return strdup(env);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0 && (size_t)n < sizeof self - 1) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			char *p = strprintf("%s/pvagent", self);
			if (!p || access(p, X_OK) == 0)
				return p;
			free(p);
		}
	}
	return strdup(PVAGENT_CLI);
}

/* The child's stdin: text in a memory file, read from its start (the
 * daemon never blocks on it, whatever its size), or /dev/null. The fd,
 * or -1 with *err. */
static int input_fd(const char *text, char **err)
{
	if (!text) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			err_setf(err, "/dev/null: %s", strerror(errno));
		return fd;
	}
	int fd = memfd_create("pvagent-params", MFD_CLOEXEC);
	if (fd < 0) {
		err_setf(err, "memfd_create: %s", strerror(errno));
		return -1;
	}
	for (size_t off = 0, n = strlen(text); off < n;) {
		ssize_t w = write(fd, text + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err_setf(err, "the job's params: %s", w < 0 ? strerror(errno) : "short write");
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		err_setf(err, "the job's params: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
}

int jobproc_start(const struct jobproc_opts *o, const char *const *argv, struct jobproc *out,
		  char **err)
{
	out->pid = -1;
	out->out_fd = out->err_fd = out->ev_fd = -1;
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, pv[2] = {-1, -1}, in = -1;
	size_t n = 0;
	while (argv[n])
		n++;
	/* bin --local -c CONF [--json] [-v|-q]... ARGV... */
	int v = o->verbosity < -3 ? -3 : o->verbosity > 3 ? 3 : o->verbosity;
	const char **av = calloc(n + 10, sizeof *av);
	if (!av) {
		err_setf(err, "out of memory");
		return -1;
	}
	size_t k = 0;
	av[k++] = o->bin;
	av[k++] = "--local";
	av[k++] = "-c";
	av[k++] = o->conf;
	if (o->json)
		av[k++] = "--json";
	for (int i = 0; i < (v < 0 ? -v : v); i++)
		av[k++] = v < 0 ? "-q" : "-v";
	for (size_t i = 0; i < n; i++)
		av[k++] = argv[i];
	av[k] = NULL;
	if ((in = input_fd(o->input, err)) < 0)
		goto fail;
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 || pipe2(pv, O_CLOEXEC) < 0) {
		err_setf(err, "pipe: %s", strerror(errno));
		goto fail;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		err_setf(err, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(127);
		/* on a terminal, stdout and stderr are one stream: a log line
		 * said between erasing and redrawing the live lines must reach
		 * the client's screen between them, as it would on its own */
		if (dup2(in, 0) < 0 || dup2(po[1], 1) < 0 || dup2(o->tty ? po[1] : pe[1], 2) < 0 ||
		    dup2(pv[1], 3) < 0)
			_exit(127);
		char cols[16];
		snprintf(cols, sizeof cols, "%d", o->columns);
		if (setenv("PVAGENT_EVENT_FD", "3", 1) < 0 ||
		    setenv("PVAGENT_TTY", o->tty ? "1" : "0", 1) < 0 ||
		    (o->columns > 0 && setenv("COLUMNS", cols, 1) < 0))
			_exit(127);
		execv(o->bin, (char *const *)av);
		dprintf(2, "pvagentd: cannot run %s: %s\n", o->bin, strerror(errno));
		_exit(127);
	}
	free(av);
	close(in);
	close(po[1]);
	close(pe[1]);
	close(pv[1]);
	out->pid = pid;
	out->out_fd = po[0];
	out->err_fd = pe[0];
	out->ev_fd = pv[0];
	int fds[3] = {po[0], pe[0], pv[0]};
	for (int i = 0; i < 3; i++) {
		int fl = fcntl(fds[i], F_GETFL);
		/* the daemon reads once per poll wakeup, so an end left
		 * blocking would cost nothing: this cannot fail on a pipe */
		if (fl >= 0)
			(void)fcntl(fds[i], F_SETFL, fl | O_NONBLOCK);
	}
	return 0;
fail:
	free(av);
	if (in >= 0)
		close(in);
	close_pair(po);
	close_pair(pe);
	close_pair(pv);
	return -1;
}

void jobproc_close(struct jobproc *p)
{
	int *fds[3] = {&p->out_fd, &p->err_fd, &p->ev_fd};
	for (int i = 0; i < 3; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}
