/* bench_int.h - private to the benchmark's files: what bench.c (running),
 * bench_parse.c (parsers), bench_result.c (results and their forms) and
 * bench_store.c (state.db) share besides bench.h. */
#ifndef PVAGENT_BENCH_INT_H
#define PVAGENT_BENCH_INT_H

#include "bench.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- scanning remote output (bench_parse.c) --------------------------------- */

bool benchi_is_digit(char c);
/* ' ', '\t', '\r' or '\n'. */
bool benchi_is_space(char c);
/* The first byte of [p, end) that is not a space, or end. */
const char *benchi_skip_space(const char *p, const char *end);
/* Digits only (no sign), no overflow; *p moves past them. */
bool benchi_parse_u64(const char **p, const char *end, uint64_t *v);
/* The first non-empty line of text, trimmed and cut for a message;
 * malloc'd ("(empty)" when there is none), NULL when out of memory. */
char *benchi_first_line(const char *text);
/* The last non-empty line of text, trimmed and cut for a message;
 * malloc'd, NULL when there is none or out of memory. */
char *benchi_last_line_of(const char *text);
/* The last non-empty line of a command's stderr, else of its stdout, else
 * "no output", for a message; malloc'd, NULL when out of memory. */
char *benchi_remote_msg(const struct ssh_result *o);

/* ---- results (bench_result.c) ------------------------------------------------- */

/* Append a copy of s to r's notes. */
int benchi_add_note_str(struct bench_result *r, const char *s);
/* r's figures / notes as the JSON arrays of bench_result_json; NULL when
 * out of memory. */
json_object *benchi_figures_json(const struct bench_result *r);
json_object *benchi_notes_json(const struct bench_result *r);
/* Such an array -> r (added to what r holds); where names the array in
 * messages. */
int benchi_figures_from_json(json_object *a, const char *where, struct bench_result *r,
			     char **err);
int benchi_notes_from_json(json_object *a, const char *where, struct bench_result *r,
			   char **err);

#endif
