/* output.c - text tables and JSON lines for the CLI (see output.h). */
#include "output.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct table {
	size_t ncols, nrows, cap;
	char **cells; /* (nrows + 1) * ncols, row 0 = headers */
};

static int add_row(struct table *t, const char *const *cells)
{
	if (t->nrows + 1 >= t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char **nc = realloc(t->cells, cap * t->ncols * sizeof *nc);
		if (!nc)
			return -1;
		t->cells = nc;
		t->cap = cap;
	}
	char **row = t->cells + t->nrows * t->ncols;
	for (size_t i = 0; i < t->ncols; i++) {
		row[i] = strdup(cells[i] ? cells[i] : "-");
		if (!row[i]) {
			while (i--)
				free(row[i]);
			return -1;
		}
	}
	t->nrows++;
	return 0;
}

struct table *table_new(size_t ncols, const char *const *headers)
{
	struct table *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->ncols = ncols;
	if (add_row(t, headers) < 0) {
		free(t);
		return NULL;
	}
	return t;
}

int table_add(struct table *t, const char *const *cells)
{
	return add_row(t, cells);
}

/* A cell in w columns: cut with "..." when longer (not inside a UTF-8
 * sequence), padded unless last. */
static void print_cell(FILE *f, const char *cell, size_t w, bool last)
{
	size_t l = strlen(cell);
	if (l > w && w > 3) {
		size_t k = w - 3;
		while (k > 0 && ((unsigned char)cell[k] & 0xC0) == 0x80)
			k--;
		fprintf(f, last ? "%.*s...\n" : "%.*s...%*s  ", (int)k, cell, (int)(w - 3 - k), "");
	} else if (last) {
		fprintf(f, "%s\n", cell);
	} else {
		fprintf(f, "%-*s  ", (int)w, cell);
	}
}

void table_print_fit(const struct table *t, FILE *f, size_t width)
{
	size_t *w = calloc(t->ncols, sizeof *w), total = 2 * (t->ncols - 1);
	if (!w)
		return;
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++) {
			size_t l = strlen(t->cells[r * t->ncols + c]);
			if (l > w[c])
				w[c] = l;
		}
	for (size_t c = 0; c < t->ncols; c++)
		total += w[c];
	/* the widest column gives a column at a time, down to its header
	 * (and room for "...") */
	while (width && total > width) {
		size_t widest = t->ncols;
		for (size_t c = 0; c < t->ncols; c++) {
			size_t min = strlen(t->cells[c]) > 6 ? strlen(t->cells[c]) : 6;
			if (w[c] > min && (widest == t->ncols || w[c] > w[widest]))
				widest = c;
		}
		if (widest == t->ncols)
			break;
		w[widest]--;
		total--;
	}
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++)
			print_cell(f, t->cells[r * t->ncols + c], w[c], c + 1 == t->ncols);
	free(w);
}

void table_print(const struct table *t, FILE *f)
{
	table_print_fit(t, f, 0);
}

void table_free(struct table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

static bool result_printed;

static json_object *str_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

void out_result_members(json_object *o, const char *name, int vmid, const char *node, int exit,
			const char *err_kind, const char *err_message, const char *err_step)
{
	json_object_object_add(o, "name", str_or_null(name));
	json_object_object_add(o, "vmid", vmid > 0 ? json_object_new_int(vmid) : NULL);
	json_object_object_add(o, "node", str_or_null(node));
	json_object_object_add(o, "result", json_object_new_string(exit ? "error" : "ok"));
	json_object_object_add(o, "exit", json_object_new_int(exit));
	json_object *e = NULL;
	if (err_kind) {
		e = json_object_new_object();
		json_object_object_add(e, "kind", json_object_new_string(err_kind));
		json_object_object_add(e, "message", str_or_null(err_message ? err_message : "failed"));
		json_object_object_add(e, "step", str_or_null(err_step));
	}
	json_object_object_add(o, "error", e);
}

bool out_json_result_printed(void)
{
	return result_printed;
}

void out_json_line(FILE *f, json_object *o)
{
	result_printed = result_printed || json_object_object_get_ex(o, "result", NULL);
	fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							   JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(f);
}

void out_json_ok(const char *cmd, const char *key, json_object *v)
{
	json_object *o = json_object_new_object();
	if (!o) {
		json_object_put(v);
		return;
	}
	json_object_object_add(o, "result", json_object_new_string("ok"));
	json_object_object_add(o, "command", json_object_new_string(cmd));
	json_object_object_add(o, key, v);
	json_object_object_add(o, "exit", json_object_new_int(0));
	out_json_line(stdout, o);
	json_object_put(o);
}

void out_json_relayed(const char *line)
{
	json_object *o = json_tokener_parse(line);
	if (o && json_object_is_type(o, json_type_object) &&
	    json_object_object_get_ex(o, "result", NULL))
		result_printed = true;
	json_object_put(o);
}

const char *out_bytes(char *buf, size_t len, double bytes)
{
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	size_t u = 0;
	while (bytes >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
	return buf;
}
