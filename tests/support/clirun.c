/* clirun.c - running pvagent from tests, test files, bystander
 * processes, the store's and the simulator's counts (clirun.h). */
#include "clirun.h"

#include "sshd.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int test_write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int bad = fputs(text, f) < 0;
	bad |= fclose(f) != 0;
	return bad || chmod(path, mode) < 0 ? -1 : 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int test_remove_tree(const char *dir)
{
	return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int test_pvagentv(const char *bin, const char *conf, char **out, va_list ap)
{
	const char *argv[32] = {bin, "-c", conf};
	size_t n = 3;
	/* ap comes started from the caller (the analyzer cannot see it) */
	// NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
	for (const char *a; (a = va_arg(ap, const char *));) {
		if (n + 1 >= sizeof argv / sizeof argv[0]) {
			fprintf(stderr, "test_pvagent: too many arguments\n");
			*out = NULL;
			return -1;
		}
		argv[n++] = a;
	}
	argv[n] = NULL;
	int rc = test_run(argv, NULL, out);
	if (rc >= 0 && *out && (strstr(*out, "Sanitizer") || strstr(*out, "runtime error")))
		return -2;
	return rc;
}

int test_pvagent(const char *bin, const char *conf, char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = test_pvagentv(bin, conf, out, ap);
	va_end(ap);
	return rc;
}

pid_t test_spawn(const char *const *argv, const char *out_path)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "test_spawn: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

void test_kill(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = -1;
}

/* The first column of sql's first row, as an integer (text NULL) or as
 * malloc'd text (text not NULL: NULL when none). */
static long long db_first(const char *path, const char *sql, const char *arg, char **text)
{
	sqlite3 *db = NULL;
	long long v = -1;
	if (text)
		*text = NULL;
	if (access(path, F_OK) == 0 &&
	    sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(db, 2000);
		sqlite3_stmt *st = NULL;
		if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
			if (arg)
				sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
			if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
				v = sqlite3_column_int64(st, 0);
				if (text)
					*text = strdup((const char *)sqlite3_column_text(st, 0));
			}
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

long long test_db_int(const char *path, const char *sql, const char *arg)
{
	return db_first(path, sql, arg, NULL);
}

char *test_db_text(const char *path, const char *sql, const char *arg)
{
	char *t = NULL;
	db_first(path, sql, arg, &t);
	return t;
}

pid_t test_bystander(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

bool test_alive_unreaped(pid_t pid)
{
	siginfo_t si = {0};
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0;
}

/* Run argv on a pseudo-terminal; with answer, typed (with a newline) once
 * "[y/N]" was written. */
static int pty_run(const char *const *argv, unsigned short cols, const char *answer, char **out)
{
	*out = NULL;
	struct winsize ws = {.ws_row = 60, .ws_col = cols};
	int master = -1, slave = -1;
	if (openpty(&master, &slave, NULL, NULL, &ws) < 0) {
		fprintf(stderr, "test_pvagent_pty: openpty: %s\n", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(master);
		close(slave);
		return -1;
	}
	if (pid == 0) {
		close(master);
		setsid();
		ioctl(slave, TIOCSCTTY, 0);
		dup2(slave, 0);
		dup2(slave, 1);
		dup2(slave, 2);
		if (slave > 2)
			close(slave);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(slave);
	struct sbuf b = {0};
	char chunk[4096];
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool hung = false;
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left = (TEST_PTY_DEADLINE_S - (now.tv_sec - t0.tv_sec)) * 1000L;
		if (left <= 0) {
			hung = true;
			break;
		}
		struct pollfd pfd = {master, POLLIN, 0};
		int pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			continue; /* the deadline, checked above */
		ssize_t r = read(master, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) /* EIO: every copy of the slave side is closed */
			break;
		if (sbuf_addn(&b, chunk, (size_t)r) < 0)
			break;
		if (answer && strstr(sbuf_str(&b), "[y/N]")) {
			/* typed as a person does: the line discipline echoes it */
			char *line = strprintf("%s\n", answer);
			if (!line || write(master, line, strlen(line)) != (ssize_t)strlen(line))
				fprintf(stderr, "test_pvagent_pty: cannot type the answer\n");
			free(line);
			answer = NULL;
		}
	}
	if (hung) /* its process group: a child it started holds the pty too */
		kill(-pid, SIGKILL);
	close(master);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*out = sbuf_steal(&b);
	if (!*out)
		*out = strdup("");
	if (*out && (strstr(*out, "Sanitizer") || strstr(*out, "runtime error")))
		return -2;
	if (hung)
		return -3;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int pty_runv(const char *bin, const char *conf, unsigned short cols, const char *answer,
		    char **out, va_list ap)
{
	const char *argv[32] = {bin, "-c", conf};
	size_t n = 3;
	// NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
	for (const char *a; (a = va_arg(ap, const char *));)
		if (n + 1 < sizeof argv / sizeof argv[0])
			argv[n++] = a;
	argv[n] = NULL;
	return pty_run(argv, cols, answer, out);
}

int test_pvagent_pty(const char *bin, const char *conf, unsigned short cols, char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = pty_runv(bin, conf, cols, NULL, out, ap);
	va_end(ap);
	return rc;
}

int test_pvagent_pty_answer(const char *bin, const char *conf, const char *answer, char **out,
			    ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = pty_runv(bin, conf, 100, answer, out, ap);
	va_end(ap);
	return rc;
}

int simproc_count(struct simproc *sp, const char *method, const char *suffix, int status)
{
	json_object *log = simproc_requests(sp);
	char *pat = strprintf("*%s", suffix);
	int n = pat ? simproc_count_requests(log, method, pat, status) : -1;
	free(pat);
	json_object_put(log);
	return n;
}

int simproc_named(struct simproc *sp, const char *name)
{
	json_object *st = simproc_state(sp);
	int n = simproc_count_named(st, name);
	json_object_put(st);
	return n;
}

void simproc_guest(struct simproc *sp, int vmid, char *node, size_t nn, const char *key,
		   char *val, size_t nv)
{
	json_object *st = simproc_state(sp), *cl = NULL, *guests = NULL;
	json_object_object_get_ex(st, "cluster", &cl);
	json_object_object_get_ex(cl, "guests", &guests);
	node[0] = val[0] = '\0';
	for (size_t i = 0; guests && i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i), *cfg = NULL, *v = NULL;
		if (!json_object_object_get_ex(g, "vmid", &v) || json_object_get_int(v) != vmid)
			continue;
		if (json_object_object_get_ex(g, "node", &v))
			snprintf(node, nn, "%s", json_object_get_string(v));
		if (json_object_object_get_ex(g, "config", &cfg) &&
		    json_object_object_get_ex(cfg, key, &v))
			snprintf(val, nv, "%s", json_object_get_string(v));
	}
	json_object_put(st);
}

int simproc_migrations(struct simproc *sp, int vmid)
{
	char q[64], l[64];
	snprintf(q, sizeof q, "/qemu/%d/migrate", vmid);
	snprintf(l, sizeof l, "/lxc/%d/migrate", vmid);
	return simproc_count(sp, "POST", q, 200) + simproc_count(sp, "POST", l, 200);
}

char *simproc_not_drained(struct simproc *sp, const int *vmids, size_t n, const char *from)
{
	char node[64], tags[256];
	char *tag = strprintf("pvagent-home-%s", from);
	char *why = NULL;
	for (size_t i = 0; tag && !why && i < n; i++) {
		simproc_guest(sp, vmids[i], node, sizeof node, "tags", tags, sizeof tags);
		int moves = simproc_migrations(sp, vmids[i]);
		if (!*node || strcmp(node, from) == 0)
			why = strprintf("%d is on '%s'", vmids[i], node);
		else if (!strstr(tags, tag))
			why = strprintf("%d moved to %s without its home tag (tags '%s')", vmids[i],
					node, tags);
		else if (moves > 1)
			why = strprintf("%d was migrated %d times", vmids[i], moves);
	}
	free(tag);
	return why;
}

int test_wait_step_sent(const char *dbpath, const char *subject, const char *step, bool want_upid,
			pid_t pid)
{
	for (int i = 0; i < 3000; i++) {
		sqlite3 *db = NULL;
		bool ok = false;
		if (access(dbpath, F_OK) == 0 &&
		    sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
			sqlite3_busy_timeout(db, 1000);
			sqlite3_stmt *st = NULL;
			if (sqlite3_prepare_v2(db,
					       "SELECT s.attempts, s.upid FROM steps s JOIN jobs j ON "
					       "s.job = j.id WHERE j.subject = ? AND s.name = ?",
					       -1, &st, NULL) == SQLITE_OK) {
				sqlite3_bind_text(st, 1, subject, -1, SQLITE_STATIC);
				sqlite3_bind_text(st, 2, step, -1, SQLITE_STATIC);
				if (sqlite3_step(st) == SQLITE_ROW)
					ok = sqlite3_column_int(st, 0) > 0 &&
					     (!want_upid || sqlite3_column_type(st, 1) != SQLITE_NULL);
			}
			sqlite3_finalize(st);
		}
		sqlite3_close(db);
		if (ok)
			return 0;
		int status;
		if (pid > 0 && waitpid(pid, &status, WNOHANG) != 0)
			return -1;
		struct timespec ts = {0, 20L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling a state, bounded */
	}
	return -1;
}
