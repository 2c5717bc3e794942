/* store.c - state.db (see store.h): opening with WAL and a busy timeout,
 * the schema version and its migrations, and the rows of jobs, steps and
 * events. */
#include "store.h"

#include "util.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS 5000

struct store {
	sqlite3 *db;
	char *path;
	/* One connection for every thread: a transaction (store_tx_begin)
	 * and each single write hold this lock, so that no other thread's
	 * statement lands inside another's transaction. Recursive: the writes
	 * inside a transaction take it again. */
	pthread_mutex_t mu;
	bool mu_ok;
	bool durable;   /* the open transaction is synced to disk (FULL) */
};

static void lock(struct store *s)
{
	if (s->mu_ok)
		pthread_mutex_lock(&s->mu);
}

static void unlock(struct store *s)
{
	if (s->mu_ok)
		pthread_mutex_unlock(&s->mu);
}

static int db_fail(struct store *s, char **err, const char *what)
{
	err_setf(err, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
	return -1;
}

/* ---- names ------------------------------------------------------------------- */

static const char *const job_states[] = {
	"queued", "running", "interrupted", "done", "failed", "needs-attention", "cancelled",
};
static const char *const step_states[] = {
	"pending", "running", "done", "skipped", "undone", "failed",
};

static int parse_name(const char *const *names, size_t n, const char *s, int *out)
{
	for (size_t i = 0; s && i < n; i++) {
		if (strcmp(names[i], s) == 0) {
			*out = (int)i;
			return 0;
		}
	}
	return -1;
}

const char *job_state_name(enum job_state s)
{
	return (size_t)s < sizeof job_states / sizeof *job_states ? job_states[s] : "?";
}

int job_state_parse(const char *s, enum job_state *out)
{
	int v;
	if (parse_name(job_states, sizeof job_states / sizeof *job_states, s, &v) < 0)
		return -1;
	*out = (enum job_state)v;
	return 0;
}

bool job_state_open(enum job_state s)
{
	return s == JOB_QUEUED || s == JOB_RUNNING || s == JOB_INTERRUPTED ||
	       s == JOB_NEEDS_ATTENTION;
}

const char *step_state_name(enum step_state s)
{
	return (size_t)s < sizeof step_states / sizeof *step_states ? step_states[s] : "?";
}

int step_state_parse(const char *s, enum step_state *out)
{
	int v;
	if (parse_name(step_states, sizeof step_states / sizeof *step_states, s, &v) < 0)
		return -1;
	*out = (enum step_state)v;
	return 0;
}

/* ---- open and migrate ---------------------------------------------------------- */

/* Each migration takes the schema from version i to i + 1. Version 1 is
 * the bench table of the first releases (which had no meta table). */
static const char *const migrations[STORE_SCHEMA_VERSION] = {
	/* 0 -> 1 */
	"CREATE TABLE IF NOT EXISTS bench("
	"id INTEGER PRIMARY KEY, guest TEXT NOT NULL, vmid INTEGER NOT NULL, "
	"ts INTEGER NOT NULL, bus TEXT, nic TEXT, size_mib INTEGER NOT NULL, "
	"figures TEXT NOT NULL, notes TEXT NOT NULL DEFAULT '[]');"
	"CREATE INDEX IF NOT EXISTS bench_guest_ts ON bench(guest, vmid, ts);",
	/* 1 -> 2: the job engine */
	"CREATE TABLE jobs("
	"id INTEGER PRIMARY KEY, workflow TEXT NOT NULL, subject TEXT NOT NULL, "
	"params TEXT NOT NULL, vars TEXT NOT NULL DEFAULT '{}', state TEXT NOT NULL, "
	"created REAL NOT NULL, started REAL, ended REAL, error TEXT, pid INTEGER);"
	"CREATE INDEX jobs_open ON jobs(workflow, subject, state);"
	"CREATE TABLE steps("
	"job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE, idx INTEGER NOT NULL, "
	"name TEXT NOT NULL, state TEXT NOT NULL, upid TEXT, attempts INTEGER NOT NULL "
	"DEFAULT 0, result TEXT, error TEXT, started REAL, ended REAL, "
	"PRIMARY KEY(job, idx));"
	"CREATE TABLE events("
	"id INTEGER PRIMARY KEY, job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE, "
	"time REAL NOT NULL, step TEXT, kind TEXT NOT NULL, percent REAL, message TEXT);"
	"CREATE INDEX events_job ON events(job, id);",
	/* 2 -> 3: migrations (migrate_store.h) */
	"CREATE TABLE migrations("
	"id INTEGER PRIMARY KEY, vmid INTEGER NOT NULL, name TEXT NOT NULL, "
	"src TEXT NOT NULL, dst TEXT NOT NULL, method TEXT NOT NULL, ts REAL NOT NULL, "
	"seconds REAL NOT NULL, mem_bytes INTEGER NOT NULL, disk_bytes INTEGER NOT NULL, "
	"downtime_ms INTEGER, probe_gap_ms INTEGER);"
	"CREATE INDEX migrations_pair ON migrations(src, dst, ts);"
	"CREATE TABLE homes("
	"vmid INTEGER PRIMARY KEY, name TEXT NOT NULL, home TEXT NOT NULL, ts REAL NOT NULL);",
	/* 3 -> 4: job IDs never reused (AUTOINCREMENT: a pruned job's ID is
	 * not given again, and sqlite_sequence keeps the highest given), the
	 * table made again as SQLite's ALTER TABLE procedure says (foreign
	 * keys are off while migrating: steps and events keep their rows) */
	"CREATE TABLE jobs_new("
	"id INTEGER PRIMARY KEY AUTOINCREMENT, workflow TEXT NOT NULL, subject TEXT NOT NULL, "
	"params TEXT NOT NULL, vars TEXT NOT NULL DEFAULT '{}', state TEXT NOT NULL, "
	"created REAL NOT NULL, started REAL, ended REAL, error TEXT, pid INTEGER);"
	"INSERT INTO jobs_new SELECT id, workflow, subject, params, vars, state, created, "
	"started, ended, error, pid FROM jobs;"
	"DROP TABLE jobs;"
	"ALTER TABLE jobs_new RENAME TO jobs;"
	"CREATE INDEX jobs_open ON jobs(workflow, subject, state);",
	/* 4 -> 5: who owns a job pvagentd runs (its peer policy), kept
	 * across the daemon's restarts; NULL: none recorded */
	"ALTER TABLE jobs ADD COLUMN owner INTEGER;",
};

static int exec(struct store *s, const char *sql, char **err, const char *what)
{
	char *msg = NULL;
	if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		err_setf(err, "%s: %s: %s", s->path, what, msg ? msg : sqlite3_errmsg(s->db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* 1 when the table exists, 0 when not, -1 on error. */
static int table_exists(struct store *s, const char *name, char **err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "schema");
	}
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_fail(s, err, "schema");
	return rc == SQLITE_ROW;
}

int store_schema_version(struct store *s, int *version, char **err)
{
	int meta = table_exists(s, "meta", err);
	if (meta < 0)
		return -1;
	if (!meta) {
		int bench = table_exists(s, "bench", err);
		if (bench < 0)
			return -1;
		*version = bench ? 1 : 0;
		return 0;
	}
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key='schema_version'", -1, &st,
			       NULL) != SQLITE_OK)
		return db_fail(s, err, "schema version");
	int rc = sqlite3_step(st);
	*version = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_fail(s, err, "schema version");
	return 0;
}

static int migrate(struct store *s, char **err)
{
	if (exec(s, "BEGIN IMMEDIATE", err, "migration") < 0)
		return -1;
	int v;
	if (store_schema_version(s, &v, err) < 0)
		goto fail;
	if (v > STORE_SCHEMA_VERSION) {
		err_setf(err, "%s: schema version %d is newer than this pvagent's (%d)", s->path, v,
			STORE_SCHEMA_VERSION);
		goto fail;
	}
	if (v == STORE_SCHEMA_VERSION)
		return exec(s, "COMMIT", err, "migration");
	for (; v < STORE_SCHEMA_VERSION; v++) {
		if (exec(s, migrations[v], err, "migration") < 0)
			goto fail;
	}
	char *sql = strprintf("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"
			      "INSERT OR REPLACE INTO meta VALUES('schema_version', %d);",
			      STORE_SCHEMA_VERSION);
	if (!sql) {
		err_setf(err, "%s: out of memory", s->path);
		goto fail;
	}
	int rc = exec(s, sql, err, "migration");
	free(sql);
	if (rc < 0)
		goto fail;
	return exec(s, "COMMIT", err, "migration");
fail:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

char *store_path(const char *state_dir)
{
	size_t n = strlen(state_dir);
	while (n > 1 && state_dir[n - 1] == '/')
		n--;
	return strprintf("%.*s/state.db", (int)n, state_dir);
}

/* mkdir -p of the directory part of path, mode 0700 for what it makes. */
static int make_parent(const char *path)
{
	char *dir = strdup(path);
	if (!dir)
		return -1;
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir) {
		free(dir);
		return 0;
	}
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
				free(dir);
				return -1;
			}
			if (!c)
				break;
			*p = c;
		}
	}
	free(dir);
	return 0;
}

int store_open(const char *path, struct store **out, char **err)
{
	*out = NULL;
	struct store *s = calloc(1, sizeof *s);
	if (!s || !(s->path = strdup(path))) {
		free(s);
		err_setf(err, "%s: out of memory", path);
		return -1;
	}
	pthread_mutexattr_t ma;
	if (pthread_mutexattr_init(&ma) == 0) {
		if (pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE) == 0 &&
		    pthread_mutex_init(&s->mu, &ma) == 0)
			s->mu_ok = true;
		pthread_mutexattr_destroy(&ma);
	}
	if (!s->mu_ok) {
		err_setf(err, "%s: cannot make a lock", path);
		goto fail;
	}
	if (make_parent(path) < 0) {
		err_setf(err, "%s: cannot create its directory: %s", path, strerror(errno));
		goto fail;
	}
	int rc = sqlite3_open_v2(path, &s->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
				 NULL);
	if (rc != SQLITE_OK) {
		err_setf(err, "%s: %s", path, s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		goto fail;
	}
	if (sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS) != SQLITE_OK) {
		db_fail(s, err, "busy timeout");
		goto fail;
	}
	/* WAL answers the mode now in effect; a file system that cannot do WAL
	 * keeps the rollback journal, which still works. */
	if (exec(s, "PRAGMA journal_mode=WAL", err, "journal mode") < 0 ||
	    exec(s, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF", err, "pragmas") < 0 ||
	    /* foreign keys on after the migrations: a table made again must
	     * not take its referencing rows with it */
	    migrate(s, err) < 0 || exec(s, "PRAGMA foreign_keys=ON", err, "pragmas") < 0 ||
	    /* pruning by age and reading the unfinished jobs (an index, not a
	     * schema change: any version of the file may have it) */
	    exec(s, "CREATE INDEX IF NOT EXISTS jobs_state_ended ON jobs(state, ended)", err,
		 "index") < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	store_close(s);
	return -1;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	sqlite3_close(s->db);
	if (s->mu_ok)
		pthread_mutex_destroy(&s->mu);
	free(s->path);
	free(s);
}

int store_tx_begin(struct store *s, bool durable, char **err)
{
	lock(s);
	if (durable && exec(s, "PRAGMA synchronous=FULL", err, "synchronous") < 0) {
		unlock(s);
		return -1;
	}
	s->durable = durable;
	if (exec(s, "BEGIN IMMEDIATE", err, "transaction") < 0) {
		if (durable)
			sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
		unlock(s);
		return -1;
	}
	return 0;
}

int store_tx_commit(struct store *s, char **err)
{
	int rc = exec(s, "COMMIT", err, "commit");
	if (rc < 0)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	if (s->durable)
		sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
	s->durable = false;
	unlock(s);
	return rc;
}

sqlite3 *store_db(struct store *s)
{
	return s->db;
}

const char *store_file(const struct store *s)
{
	return s->path;
}

/* ---- helpers for rows --------------------------------------------------------- */

static int bind_text(sqlite3_stmt *st, int i, const char *v)
{
	return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

static int bind_time(sqlite3_stmt *st, int i, double t)
{
	return t > 0 ? sqlite3_bind_double(st, i, t) : sqlite3_bind_null(st, i);
}

/* A text column as a malloc'd copy; NULL stays NULL. -1 when out of memory. */
static int col_text(sqlite3_stmt *st, int i, char **out)
{
	const unsigned char *v = sqlite3_column_text(st, i);
	*out = NULL;
	if (!v)
		return 0;
	*out = strdup((const char *)v);
	return *out ? 0 : -1;
}

static int run_done(struct store *s, sqlite3_stmt *st, char **err, const char *what)
{
	int rc = sqlite3_step(st);
	if (rc != SQLITE_DONE) {
		err_setf(err, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	return 0;
}

/* ---- jobs ------------------------------------------------------------------------ */

void store_job_free(struct store_job *j)
{
	if (!j)
		return;
	free(j->workflow);
	free(j->subject);
	free(j->params);
	free(j->vars);
	free(j->error);
	memset(j, 0, sizeof *j);
}

void store_jobs_free(struct store_job *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		store_job_free(&v[i]);
	free(v);
}

/* ---- the job lock ------------------------------------------------------------------ */

struct store_job_lock {
	int fd;
	char *path;
};

/* "<directory of state.db>/job-ID.lock" (malloc'd; NULL when out of
 * memory). */
static char *job_lock_path(const struct store *s, long long id)
{
	const char *slash = strrchr(s->path, '/');
	if (!slash)
		return strprintf("job-%lld.lock", id);
	return strprintf("%.*s/job-%lld.lock", (int)(slash - s->path), s->path, id);
}

/* The pid a lock file names (0 when none or unreadable). */
static long lock_file_pid(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *end;
	long pid = strtol(buf, &end, 10);
	return pid > 0 && (*end == '\n' || *end == '\0') ? pid : 0;
}

/* Is the file open at fd the one at path now (not removed by a holder
 * letting go)? */
static bool same_file(int fd, const char *path)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

int store_job_lock(struct store *s, long long id, struct store_job_lock **out, long *holder,
		   char **err)
{
	*out = NULL;
	*holder = 0;
	char *path = job_lock_path(s, id);
	struct store_job_lock *l = calloc(1, sizeof *l);
	if (!path || !l) {
		free(path);
		free(l);
		err_setf(err, "%s: out of memory", s->path);
		return -1;
	}
	for (;;) {
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0) {
			err_setf(err, "%s: %s", path, strerror(errno));
			break;
		}
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
			int e = errno;
			*holder = lock_file_pid(fd);
			close(fd);
			if (e == EAGAIN || e == EACCES) {
				free(path);
				free(l);
				return 0;
			}
			err_setf(err, "%s: lock: %s", path, strerror(e));
			break;
		}
		if (!same_file(fd, path)) {
			close(fd); /* its holder let go and removed it: take the new one */
			continue;
		}
		char pid[32];
		int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
		if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
			err_setf(err, "%s: %s", path, strerror(errno));
			close(fd);
			break;
		}
		l->fd = fd;
		l->path = path;
		*out = l;
		return 1;
	}
	free(path);
	free(l);
	return -1;
}

void store_job_unlock(struct store_job_lock *l)
{
	if (!l)
		return;
	/* removed while still held: nobody takes the old file after this */
	unlink(l->path);
	close(l->fd);
	free(l->path);
	free(l);
}

/* Open job id's lock file without making it: fd, -2 when there is none,
 * -1 error. */
static int open_lock_file(struct store *s, long long id, char **path, char **err)
{
	*path = job_lock_path(s, id);
	if (!*path) {
		err_setf(err, "%s: out of memory", s->path);
		return -1;
	}
	int fd = open(*path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (errno == ENOENT)
		return -2;
	err_setf(err, "%s: %s", *path, strerror(errno));
	return -1;
}

/* Is the lock on fd held by someone: 1 (*holder), 0 no, -1 error. */
static int lock_held(int fd, const char *path, long *holder, char **err)
{
	/* asked, never taken: a check that held the lock for a moment (as
	 * flock's shared lock did) made a job starting then fail as "running
	 * in process N" */
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0) {
		err_setf(err, "%s: lock: %s", path, strerror(errno));
		return -1;
	}
	if (fl.l_type == F_UNLCK)
		return 0;
	*holder = lock_file_pid(fd);
	return 1;
}

int store_job_running(struct store *s, long long id, long *holder, char **err)
{
	*holder = 0;
	char *path = NULL;
	int fd = open_lock_file(s, id, &path, err);
	if (fd < 0) {
		free(path);
		return fd == -2 ? 0 : -1;
	}
	int rc = lock_held(fd, path, holder, err);
	close(fd);
	free(path);
	return rc;
}

int store_job_signal(struct store *s, long long id, int sig, long *holder, char **err)
{
	*holder = 0;
	char *path = NULL;
	int fd = open_lock_file(s, id, &path, err);
	if (fd < 0) {
		free(path);
		return fd == -2 ? 0 : -1;
	}
	int rc = lock_held(fd, path, holder, err);
	long pid = *holder;
	if (rc == 1 && pid <= 0) {
		err_setf(err, "%s: held, but names no process", path);
		rc = -1;
	}
	int pfd = -1;
	if (rc == 1) {
		pfd = pidfd_open((pid_t)pid, 0);
		if (pfd < 0 && errno != ESRCH) {
			err_setf(err, "%s: pidfd_open %ld: %s", path, pid, strerror(errno));
			rc = -1;
		}
	}
	/* The pidfd is of the process with that pid now. If the lock is
	 * still held and the file still names that pid, its holder is alive
	 * with that pid, so the pidfd is the holder's: a holder that died
	 * before let go of the lock, and a process that took its pid later
	 * is not the one the pidfd names (it was opened on the live one). */
	if (rc == 1) {
		long again = 0;
		rc = pfd < 0 ? 0 : lock_held(fd, path, &again, err);
		if (rc == 1 && (again != pid || !same_file(fd, path))) {
			err_setf(err, "%s: another process took it while signalling; try again",
				 path);
			rc = -1;
		}
	}
	if (rc == 1 && pidfd_send_signal(pfd, sig, NULL, 0) < 0) {
		if (errno == ESRCH) {
			rc = 0;
		} else {
			err_setf(err, "process %ld: %s", pid, strerror(errno));
			rc = -1;
		}
	}
	if (pfd >= 0)
		close(pfd);
	close(fd);
	free(path);
	return rc;
}

int store_job_resumable(struct store *s, const struct store_job *j, long *holder, char **err)
{
	*holder = 0;
	if (!job_state_open(j->state))
		return 0;
	int r = store_job_running(s, j->id, holder, err);
	return r < 0 ? -1 : !r;
}

static int store_job_insert_locked(struct store *s, const char *workflow, const char *subject,
		     const char *params, double now, long long *id, char **err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO jobs(workflow, subject, params, state, created) "
			       "VALUES(?, ?, ?, 'queued', ?)",
			       -1, &st, NULL) != SQLITE_OK ||
	    bind_text(st, 1, workflow) != SQLITE_OK || bind_text(st, 2, subject) != SQLITE_OK ||
	    bind_text(st, 3, params ? params : "{}") != SQLITE_OK ||
	    sqlite3_bind_double(st, 4, now) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "new job");
	}
	if (run_done(s, st, err, "new job") < 0)
		return -1;
	*id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int store_job_insert(struct store *s, const char *workflow, const char *subject,
		     const char *params, double now, long long *id, char **err)
{
	lock(s);
	int rc = store_job_insert_locked(s, workflow, subject, params, now, id, err);
	unlock(s);
	return rc;
}

static int store_job_update_locked(struct store *s, const struct store_job *j, char **err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
			       "UPDATE jobs SET state=?, vars=?, error=?, started=?, ended=?, pid=? "
			       "WHERE id=?",
			       -1, &st, NULL) != SQLITE_OK ||
	    bind_text(st, 1, job_state_name(j->state)) != SQLITE_OK ||
	    bind_text(st, 2, j->vars ? j->vars : "{}") != SQLITE_OK ||
	    bind_text(st, 3, j->error) != SQLITE_OK || bind_time(st, 4, j->started) != SQLITE_OK ||
	    bind_time(st, 5, j->ended) != SQLITE_OK ||
	    (j->pid ? sqlite3_bind_int64(st, 6, j->pid) : sqlite3_bind_null(st, 6)) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 7, j->id) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "job update");
	}
	return run_done(s, st, err, "job update");
}

int store_job_update(struct store *s, const struct store_job *j, char **err)
{
	lock(s);
	int rc = store_job_update_locked(s, j, err);
	unlock(s);
	return rc;
}

#define OPEN_STATES "('queued', 'running', 'interrupted', 'needs-attention')"
#define FINISHED_STATES "('done', 'failed', 'cancelled')"
#define JOB_COLS                                                                         \
	"id, workflow, subject, params, vars, state, created, started, ended, error, pid, owner"

/* ---- reading rows ------------------------------------------------------------------- */

/* One row into elem (zeroed before the call); 0, or -1 with *err set
 * (what it holds is freed by the caller's free function). */
typedef int (*row_fn)(struct store *s, sqlite3_stmt *st, void *elem, void *ctx, char **err);
typedef void (*rows_free_fn)(void *v, size_t n);

/* Run the prepared query st (finalized here): up to max rows (0: all),
 * each read by row into a growing array of elem_size elements at *out.
 * 0, or -1 with *err (what) and *out NULL. */
static int read_rows(struct store *s, sqlite3_stmt *st, const char *what, size_t elem_size,
		     size_t max, row_fn row, void *ctx, rows_free_fn free_rows, void **out,
		     size_t *n, char **err)
{
	*out = NULL;
	*n = 0;
	int rc = SQLITE_DONE;
	while ((max == 0 || *n < max) && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		char *nv = realloc(*out, (*n + 1) * elem_size);
		if (!nv) {
			err_setf(err, "%s: out of memory", s->path);
			goto fail;
		}
		*out = nv;
		void *elem = nv + *n * elem_size;
		memset(elem, 0, elem_size);
		(*n)++;
		if (row(s, st, elem, ctx, err) < 0)
			goto fail;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		db_fail(s, err, what);
		goto fail;
	}
	sqlite3_finalize(st);
	return 0;
fail:
	sqlite3_finalize(st);
	free_rows(*out, *n);
	*out = NULL;
	*n = 0;
	return -1;
}

static int job_row(struct store *s, sqlite3_stmt *st, void *elem, void *ctx, char **err)
{
	(void)ctx;
	struct store_job *j = elem;
	j->id = sqlite3_column_int64(st, 0);
	if (col_text(st, 1, &j->workflow) < 0 || col_text(st, 2, &j->subject) < 0 ||
	    col_text(st, 3, &j->params) < 0 || col_text(st, 4, &j->vars) < 0 ||
	    col_text(st, 9, &j->error) < 0) {
		err_setf(err, "%s: out of memory", s->path);
		return -1;
	}
	const char *state = (const char *)sqlite3_column_text(st, 5);
	if (job_state_parse(state, &j->state) < 0) {
		err_setf(err, "%s: jobs row %lld: state '%s' unknown", s->path, j->id,
			state ? state : "");
		return -1;
	}
	j->created = sqlite3_column_double(st, 6);
	j->started = sqlite3_column_double(st, 7);
	j->ended = sqlite3_column_double(st, 8);
	j->pid = (long)sqlite3_column_int64(st, 10);
	j->owner = sqlite3_column_type(st, 11) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 11);
	return 0;
}

static void jobs_free(void *v, size_t n)
{
	store_jobs_free(v, n);
}

/* Run a prepared job query; up to max rows into *out. */
static int job_query(struct store *s, sqlite3_stmt *st, struct store_job **out, size_t *n,
		     size_t max, char **err)
{
	void *v = NULL;
	int rc = read_rows(s, st, "jobs", sizeof **out, max, job_row, NULL, jobs_free, &v, n, err);
	*out = v;
	return rc;
}

static int job_one(struct store *s, sqlite3_stmt *st, struct store_job *out, char **err)
{
	struct store_job *v = NULL;
	size_t n = 0;
	if (job_query(s, st, &v, &n, 1, err) < 0)
		return -1;
	if (!n)
		return 0;
	*out = v[0];
	free(v);
	return 1;
}

int store_job_get(struct store *s, long long id, struct store_job *out, char **err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, "SELECT " JOB_COLS " FROM jobs WHERE id=?", -1, &st, NULL) !=
		    SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, id) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "jobs");
	}
	return job_one(s, st, out, err);
}

int store_job_set_owner(struct store *s, long long id, long long uid, char **err)
{
	sqlite3_stmt *st = NULL;
	lock(s);
	int rc = sqlite3_prepare_v2(s->db, "UPDATE jobs SET owner=? WHERE id=?", -1, &st, NULL);
	if (rc == SQLITE_OK && (sqlite3_bind_int64(st, 1, uid) != SQLITE_OK ||
				sqlite3_bind_int64(st, 2, id) != SQLITE_OK))
		rc = SQLITE_ERROR;
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	int r = rc == SQLITE_OK ? 0 : db_fail(s, err, "jobs");
	sqlite3_finalize(st);
	unlock(s);
	return r;
}

int store_job_pruned(struct store *s, long long id, char **err)
{
	/* the highest ID ever given (AUTOINCREMENT's record); only pruning
	 * deletes a job */
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT ?1 > 0 AND ?1 <= (SELECT seq FROM sqlite_sequence WHERE "
			       "name='jobs') AND NOT EXISTS (SELECT 1 FROM jobs WHERE id=?1)",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, id) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "jobs");
	}
	int rc = sqlite3_step(st);
	int pruned = rc == SQLITE_ROW && sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return db_fail(s, err, "jobs");
	return pruned;
}

int store_job_find_open(struct store *s, const char *workflow, const char *subject,
			struct store_job *out, char **err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT " JOB_COLS " FROM jobs WHERE workflow=? AND subject=? AND "
			       "state IN " OPEN_STATES " ORDER BY id DESC",
			       -1, &st, NULL) != SQLITE_OK ||
	    bind_text(st, 1, workflow) != SQLITE_OK || bind_text(st, 2, subject) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "jobs");
	}
	return job_one(s, st, out, err);
}

int store_jobs_list(struct store *s, size_t limit, struct store_job **out, size_t *n,
		    char **err)
{
	return store_jobs_page(s, 0, limit, out, n, err);
}

int store_jobs_page(struct store *s, long long before, size_t limit, struct store_job **out,
		    size_t *n, char **err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, "SELECT " JOB_COLS " FROM jobs WHERE id < ? ORDER BY id "
			       "DESC LIMIT ?", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, before > 0 ? before : LLONG_MAX) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, limit ? (long long)limit : 50) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "jobs");
	}
	return job_query(s, st, out, n, limit ? limit : 50, err);
}

int store_jobs_unfinished(struct store *s, struct store_job **out, size_t *n, char **err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, "SELECT " JOB_COLS " FROM jobs WHERE state IN "
			       OPEN_STATES " ORDER BY id", -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "jobs");
	}
	return job_query(s, st, out, n, 0, err);
}

int store_jobs_children(struct store *s, long long parent, struct store_job **out, size_t *n,
			char **err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, "SELECT " JOB_COLS " FROM jobs WHERE "
			       "json_extract(params, '$.parent') = ? ORDER BY id", -1, &st,
			       NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, parent) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "jobs");
	}
	return job_query(s, st, out, n, 0, err);
}

/* The first column of sql's first row (with ?1, if it has one, bound to
 * a), or 0 when it has none. 0, or -1 with *err. */
static int prune_query(struct store *s, const char *sql, long long a, long long *out,
		       char **err)
{
	sqlite3_stmt *st = NULL;
	*out = 0;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK ||
	    (sqlite3_bind_parameter_count(st) && sqlite3_bind_int64(st, 1, a) != SQLITE_OK)) {
		sqlite3_finalize(st);
		return db_fail(s, err, "prune");
	}
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_fail(s, err, "prune");
}

static int store_jobs_prune_locked(struct store *s, double older_than, size_t keep_max,
				   size_t *pruned, char **err)
{
	/* the newest finished job beyond keep_max (0: none), from the index
	 * (counted first: the daily case has nothing beyond) */
	long long finished = 0, cutoff = 0;
	if (keep_max &&
	    prune_query(s, "SELECT count(*) FROM jobs WHERE state IN " FINISHED_STATES, 0,
			&finished, err) < 0)
		return -1;
	if (keep_max && finished > (long long)keep_max &&
	    prune_query(s, "SELECT id FROM jobs WHERE state IN " FINISHED_STATES " ORDER BY id "
			"DESC LIMIT 1 OFFSET ?1", (long long)keep_max, &cutoff, err) < 0)
		return -1;
	/* one statement, so one commit; their steps and events go with them
	 * (ON DELETE CASCADE) */
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db, "DELETE FROM jobs WHERE state IN " FINISHED_STATES " AND "
			       "(ended < ?1 OR (ended IS NULL AND created < ?1) OR id <= ?2)", -1,
			       &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_double(st, 1, older_than) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, cutoff) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "prune");
	}
	if (run_done(s, st, err, "prune") < 0)
		return -1;
	*pruned = (size_t)sqlite3_changes(s->db);
	return 0;
}

int store_jobs_prune(struct store *s, double older_than, size_t keep_max, size_t *pruned,
		     char **err)
{
	*pruned = 0;
	lock(s);
	int rc = store_jobs_prune_locked(s, older_than, keep_max, pruned, err);
	unlock(s);
	return rc;
}

/* ---- steps ------------------------------------------------------------------------ */

void store_steps_free(struct store_step *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].name);
		free(v[i].upid);
		free(v[i].result);
		free(v[i].error);
	}
	free(v);
}

static int store_step_put_locked(struct store *s, long long job, const struct store_step *x, char **err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
			       "INSERT OR REPLACE INTO steps(job, idx, name, state, upid, attempts, "
			       "result, error, started, ended) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, job) != SQLITE_OK || sqlite3_bind_int(st, 2, x->idx) != SQLITE_OK ||
	    bind_text(st, 3, x->name) != SQLITE_OK ||
	    bind_text(st, 4, step_state_name(x->state)) != SQLITE_OK ||
	    bind_text(st, 5, x->upid) != SQLITE_OK || sqlite3_bind_int(st, 6, x->attempts) != SQLITE_OK ||
	    bind_text(st, 7, x->result) != SQLITE_OK || bind_text(st, 8, x->error) != SQLITE_OK ||
	    bind_time(st, 9, x->started) != SQLITE_OK || bind_time(st, 10, x->ended) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "step");
	}
	return run_done(s, st, err, "step");
}

int store_step_put(struct store *s, long long job, const struct store_step *x, char **err)
{
	lock(s);
	int rc = store_step_put_locked(s, job, x, err);
	unlock(s);
	return rc;
}

static int step_row(struct store *s, sqlite3_stmt *st, void *elem, void *ctx, char **err)
{
	struct store_step *x = elem;
	x->idx = sqlite3_column_int(st, 0);
	if (col_text(st, 1, &x->name) < 0 || col_text(st, 3, &x->upid) < 0 ||
	    col_text(st, 5, &x->result) < 0 || col_text(st, 6, &x->error) < 0) {
		err_setf(err, "%s: out of memory", s->path);
		return -1;
	}
	const char *state = (const char *)sqlite3_column_text(st, 2);
	if (step_state_parse(state, &x->state) < 0) {
		err_setf(err, "%s: steps row %lld/%d: state '%s' unknown", s->path,
			 *(const long long *)ctx, x->idx, state ? state : "");
		return -1;
	}
	x->attempts = sqlite3_column_int(st, 4);
	x->started = sqlite3_column_double(st, 7);
	x->ended = sqlite3_column_double(st, 8);
	return 0;
}

static void steps_free(void *v, size_t n)
{
	store_steps_free(v, n);
}

int store_steps_get(struct store *s, long long job, struct store_step **out, size_t *n,
		    char **err)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT idx, name, state, upid, attempts, result, error, started, "
			       "ended FROM steps WHERE job=? ORDER BY idx",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, job) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "steps");
	}
	void *v = NULL;
	int rc = read_rows(s, st, "steps", sizeof **out, 0, step_row, &job, steps_free, &v, n, err);
	*out = v;
	return rc;
}

/* ---- events ------------------------------------------------------------------------ */

void store_events_free(struct store_event *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].step);
		free(v[i].kind);
		free(v[i].message);
	}
	free(v);
}

static int store_event_add_locked(struct store *s, long long job, const struct store_event *ev, char **err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO events(job, time, step, kind, percent, message) "
			       "VALUES(?, ?, ?, ?, ?, ?)",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, job) != SQLITE_OK ||
	    sqlite3_bind_double(st, 2, ev->time) != SQLITE_OK ||
	    bind_text(st, 3, ev->step) != SQLITE_OK || bind_text(st, 4, ev->kind) != SQLITE_OK ||
	    (ev->percent >= 0 ? sqlite3_bind_double(st, 5, ev->percent)
			      : sqlite3_bind_null(st, 5)) != SQLITE_OK ||
	    bind_text(st, 6, ev->message) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "event");
	}
	return run_done(s, st, err, "event");
}

int store_event_add(struct store *s, long long job, const struct store_event *ev, char **err)
{
	lock(s);
	int rc = store_event_add_locked(s, job, ev, err);
	unlock(s);
	return rc;
}

static int event_row(struct store *s, sqlite3_stmt *st, void *elem, void *ctx, char **err)
{
	(void)ctx;
	struct store_event *e = elem;
	e->time = sqlite3_column_double(st, 0);
	e->percent = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 3);
	if (col_text(st, 1, &e->step) < 0 || col_text(st, 2, &e->kind) < 0 ||
	    col_text(st, 4, &e->message) < 0) {
		err_setf(err, "%s: out of memory", s->path);
		return -1;
	}
	return 0;
}

static void events_free(void *v, size_t n)
{
	store_events_free(v, n);
}

int store_events_get(struct store *s, long long job, struct store_event **out, size_t *n,
		     char **err)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT time, step, kind, percent, message FROM events WHERE job=? "
			       "ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, job) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(s, err, "events");
	}
	void *v = NULL;
	int rc = read_rows(s, st, "events", sizeof **out, 0, event_row, NULL, events_free, &v, n,
			   err);
	*out = v;
	return rc;
}
