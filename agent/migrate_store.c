/* migrate_store.c - migrations and homes in state.db (migrate_store.h). */
#include "migrate_store.h"

#include "migrate_plan.h"
#include "util.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static int fail(sqlite3 *db, sqlite3_stmt *st, char **err, const char *what)
{
	err_setf(err, "state.db: %s: %s", what, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return -1;
}

int migstore_add(struct store *s, const struct mig_record *r, char **err)
{
	sqlite3 *db = store_db(s);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO migrations(vmid, name, src, dst, method, ts, seconds, "
			       "mem_bytes, disk_bytes, downtime_ms, probe_gap_ms) "
			       "VALUES(?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int(st, 1, r->vmid) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, r->name, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_text(st, 3, r->src, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_text(st, 4, r->dst, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_text(st, 5, r->method, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_double(st, 6, r->ts) != SQLITE_OK ||
	    sqlite3_bind_double(st, 7, r->seconds) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 8, (sqlite3_int64)r->mem_bytes) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 9, (sqlite3_int64)r->disk_bytes) != SQLITE_OK ||
	    (r->downtime_ms >= 0 ? sqlite3_bind_int64(st, 10, r->downtime_ms)
				 : sqlite3_bind_null(st, 10)) != SQLITE_OK ||
	    (r->probe_gap_ms >= 0 ? sqlite3_bind_int64(st, 11, r->probe_gap_ms)
				  : sqlite3_bind_null(st, 11)) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		return fail(db, st, err, "recording the migration");
	sqlite3_finalize(st);
	return 0;
}

int migstore_speeds(struct store *s, const char *src, const char *dst, double *mem_bps,
		    double *disk_bps, char **err)
{
	sqlite3 *db = store_db(s);
	sqlite3_stmt *st = NULL;
	*mem_bps = *disk_bps = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT method, seconds, mem_bytes, disk_bytes FROM migrations "
			       "WHERE src = ? AND dst = ? ORDER BY ts DESC LIMIT 20",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, src, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, dst, -1, SQLITE_TRANSIENT) != SQLITE_OK)
		return fail(db, st, err, "reading migration speeds");
	double mem_b = 0, mem_s = 0, disk_b = 0, disk_s = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *method = (const char *)sqlite3_column_text(st, 0);
		double secs = sqlite3_column_double(st, 1) - 3.0; /* the fixed part */
		double mem = (double)sqlite3_column_int64(st, 2);
		double disk = (double)sqlite3_column_int64(st, 3);
		if (secs <= 0)
			continue;
		bool online = method && strcmp(method, mig_method_name(MIG_ONLINE)) == 0;
		double want_m = online ? mem / (100.0 * 1048576) : 0;
		double want_d = disk / (200.0 * 1048576);
		if (want_m + want_d <= 0)
			continue;
		/* split the measured time in the proportions of the defaults */
		double sm = secs * want_m / (want_m + want_d), sd = secs - sm;
		if (online && mem > 0 && sm > 0) {
			mem_b += mem;
			mem_s += sm;
		}
		if (disk > 0 && sd > 0) {
			disk_b += disk;
			disk_s += sd;
		}
	}
	if (rc != SQLITE_DONE)
		return fail(db, st, err, "reading migration speeds");
	sqlite3_finalize(st);
	if (mem_s > 0)
		*mem_bps = mem_b / mem_s;
	if (disk_s > 0)
		*disk_bps = disk_b / disk_s;
	return 0;
}

int migstore_set_home(struct store *s, int vmid, const char *name, const char *home,
		      double ts, char **err)
{
	sqlite3 *db = store_db(s);
	sqlite3_stmt *st = NULL;
	if (!home) {
		if (sqlite3_prepare_v2(db, "DELETE FROM homes WHERE vmid = ?", -1, &st, NULL) !=
			    SQLITE_OK ||
		    sqlite3_bind_int(st, 1, vmid) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE)
			return fail(db, st, err, "forgetting a home");
		sqlite3_finalize(st);
		return 0;
	}
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO homes(vmid, name, home, ts) "
				   "VALUES(?,?,?,?)", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int(st, 1, vmid) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_text(st, 3, home, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_double(st, 4, ts) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE)
		return fail(db, st, err, "recording a home");
	sqlite3_finalize(st);
	return 0;
}

int migstore_drain_unfinished(struct store *s, const char *node, struct migstore_moved **out,
			      size_t *n, char **err)
{
	sqlite3 *db = store_db(s);
	sqlite3_stmt *st = NULL;
	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT subject, max(id), json_extract(params, '$.target') FROM jobs WHERE workflow = 'migrate' AND "
			       "json_extract(params, '$.home') = ?1 AND state != 'done' AND id > "
			       "coalesce((SELECT max(id) FROM jobs WHERE workflow = 'undrain' AND "
			       "subject = ?1 AND state = 'done'), 0) GROUP BY subject ORDER BY min(id)",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, node, -1, SQLITE_TRANSIENT) != SQLITE_OK)
		return fail(db, st, err, "reading a drain's migrations");
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		const char *target = (const char *)sqlite3_column_text(st, 2);
		struct migstore_moved *nv = realloc(*out, (*n + 1) * sizeof *nv);
		if (nv) {
			*out = nv;
			nv[*n] = (struct migstore_moved){0};
		}
		if (!nv || !name || !(nv[*n].name = strdup(name)) ||
		    (target && !(nv[*n].target = strdup(target)))) {
			if (nv)
				free(nv[*n].name);
			sqlite3_finalize(st);
			migstore_moved_free(*out, *n);
			*out = NULL;
			*n = 0;
			err_setf(err, "out of memory");
			return -1;
		}
		nv[(*n)++].job = sqlite3_column_int64(st, 1);
	}
	if (rc != SQLITE_DONE) {
		migstore_moved_free(*out, *n);
		*out = NULL;
		*n = 0;
		return fail(db, st, err, "reading a drain's migrations");
	}
	sqlite3_finalize(st);
	return 0;
}

void migstore_moved_free(struct migstore_moved *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].name);
		free(v[i].target);
	}
	free(v);
}

int migstore_drain_tasks(struct store *s, const char *node, char ***upids, size_t *n,
			 char **err)
{
	sqlite3 *db = store_db(s);
	sqlite3_stmt *st = NULL;
	*upids = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT s.upid FROM steps s JOIN jobs j ON s.job = j.id WHERE "
			       "j.workflow = 'migrate' AND json_extract(j.params, '$.home') = ?1 AND "
			       "j.state != 'done' AND s.upid IS NOT NULL AND s.state = 'running' AND "
			       "j.id > coalesce((SELECT max(id) FROM jobs WHERE workflow = 'undrain' "
			       "AND subject = ?1 AND state = 'done'), 0) ORDER BY j.id, s.idx",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, node, -1, SQLITE_TRANSIENT) != SQLITE_OK)
		return fail(db, st, err, "reading a drain's tasks");
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *u = (const char *)sqlite3_column_text(st, 0);
		char **nv = realloc(*upids, (*n + 1) * sizeof *nv);
		if (nv)
			*upids = nv;
		if (!nv || !u || !(nv[*n] = strdup(u))) {
			sqlite3_finalize(st);
			strv_free(*upids, *n);
			*upids = NULL;
			*n = 0;
			err_setf(err, "out of memory");
			return -1;
		}
		(*n)++;
	}
	if (rc != SQLITE_DONE) {
		strv_free(*upids, *n);
		*upids = NULL;
		*n = 0;
		return fail(db, st, err, "reading a drain's tasks");
	}
	sqlite3_finalize(st);
	return 0;
}
