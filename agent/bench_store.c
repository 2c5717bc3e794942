/* bench_store.c - the bench table of state.db (see bench.h): its path,
 * storing a result and reading the last one of a guest back. */
#include "bench_int.h"

#include "store.h"

#include <errno.h>
#include <json-c/json.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- storage ------------------------------------------------------------------- */

char *bench_db_path(const char *state_dir)
{
	return store_path(state_dir);
}

/* The bench table lives in state.db (store.h), which creates and migrates
 * it. */
static int db_open(const char *path, struct store **st, sqlite3 **db, char **err)
{
	if (store_open(path, st, err) < 0)
		return -1;
	*db = store_db(*st);
	return 0;
}

int bench_store(const char *db_path, const char *guest, int vmid,
		const struct bench_result *res, char **err)
{
	if (!guest || !*guest) {
		err_setf(err, "bench_store: no guest name");
		return -1;
	}
	json_object *figs = benchi_figures_json(res), *notes = benchi_notes_json(res);
	struct store *store = NULL;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (!figs || !notes) {
		err_setf(err, "out of memory");
		goto out;
	}
	if (db_open(db_path, &store, &db, err) < 0)
		goto out;
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO bench(guest, vmid, ts, bus, nic, size_mib, figures, notes) "
			       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, guest, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, vmid) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 3, res->ts) != SQLITE_OK ||
	    (res->bus ? sqlite3_bind_text(st, 4, res->bus, -1, SQLITE_TRANSIENT)
		      : sqlite3_bind_null(st, 4)) != SQLITE_OK ||
	    (res->nic ? sqlite3_bind_text(st, 5, res->nic, -1, SQLITE_TRANSIENT)
		      : sqlite3_bind_null(st, 5)) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 6, res->size_mib) != SQLITE_OK ||
	    sqlite3_bind_text(st, 7, json_object_to_json_string_ext(figs, JSON_C_TO_STRING_PLAIN), -1,
			      SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_text(st, 8, json_object_to_json_string_ext(notes, JSON_C_TO_STRING_PLAIN), -1,
			      SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE) {
		err_setf(err, "%s: cannot store the result: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	store_close(store);
	json_object_put(figs);
	json_object_put(notes);
	return rc;
}

/* A JSON column of row id; NULL with *err when it does not parse. */
static json_object *column_json(sqlite3_stmt *st, int col, const char *db_path, long long id,
				const char *name, char **err)
{
	const char *text = (const char *)sqlite3_column_text(st, col);
	json_object *o = text ? json_tokener_parse(text) : NULL;
	if (!o)
		err_setf(err, "%s: bench row %lld: %s is not JSON", db_path, id, name);
	return o;
}

int bench_last(const char *db_path, const char *guest, int vmid, struct bench_result *res,
	       char **err)
{
	memset(res, 0, sizeof *res);
	if (access(db_path, F_OK) < 0) {
		if (errno == ENOENT)
			return 0;
		err_setf(err, "%s: %s", db_path, strerror(errno));
		return -1;
	}
	struct store *store = NULL;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	json_object *figs = NULL, *notes = NULL;
	int rc = -1;
	if (db_open(db_path, &store, &db, err) < 0)
		return -1;
	if (sqlite3_prepare_v2(db,
			       "SELECT id, ts, bus, nic, size_mib, figures, notes FROM bench "
			       "WHERE guest = ?1 AND vmid = ?2 ORDER BY ts DESC, id DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, guest, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, vmid) != SQLITE_OK) {
		err_setf(err, "%s: cannot query: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	int step = sqlite3_step(st);
	if (step == SQLITE_DONE) {
		rc = 0;
		goto out;
	}
	if (step != SQLITE_ROW) {
		err_setf(err, "%s: cannot query: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	long long id = sqlite3_column_int64(st, 0);
	res->ts = sqlite3_column_int64(st, 1);
	const char *bus = (const char *)sqlite3_column_text(st, 2);
	const char *nic = (const char *)sqlite3_column_text(st, 3);
	long long size = sqlite3_column_int64(st, 4);
	if (size < 0 || size > BENCH_MAX_SIZE_MIB) {
		err_setf(err, "%s: bench row %lld: size_mib %lld out of range", db_path, id, size);
		goto out;
	}
	res->size_mib = (unsigned)size;
	if ((bus && !(res->bus = strdup(bus))) || (nic && !(res->nic = strdup(nic)))) {
		err_setf(err, "out of memory");
		goto out;
	}
	char *where = strprintf("%s: bench row %lld: figures", db_path, id);
	figs = column_json(st, 5, db_path, id, "figures", err);
	int bad = !where || !figs || benchi_figures_from_json(figs, where, res, err) < 0;
	free(where);
	if (bad)
		goto out;
	where = strprintf("%s: bench row %lld: notes", db_path, id);
	notes = column_json(st, 6, db_path, id, "notes", err);
	bad = !where || !notes || benchi_notes_from_json(notes, where, res, err) < 0;
	free(where);
	if (bad)
		goto out;
	rc = 1;
out:
	sqlite3_finalize(st);
	store_close(store);
	json_object_put(figs);
	json_object_put(notes);
	if (rc < 1)
		bench_result_free(res);
	return rc;
}
