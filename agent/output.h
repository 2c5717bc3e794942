/* output.h - what the CLI prints: aligned text tables for people, and
 * JSON lines (one object per event, then a final result object) for
 * --json. */
#ifndef PVAGENT_OUTPUT_H
#define PVAGENT_OUTPUT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

struct table;

/* A table with ncols columns and these headers (copied). NULL on OOM. */
struct table *table_new(size_t ncols, const char *const *headers);
/* Add a row of ncols cells (copied; NULL prints as "-"). 0 or -1. */
int table_add(struct table *t, const char *const *cells);
/* Print with columns padded to their widest cell, two spaces apart. */
void table_print(const struct table *t, FILE *f);
void table_free(struct table *t);

/* Print o as one compact JSON line on f and flush. */
void out_json_line(FILE *f, json_object *o);
/* Has out_json_line printed a final result object (one with "result")? */
bool out_json_result_printed(void);

/* "1.5 GiB" style byte count into buf (at least 16 bytes). */
const char *out_bytes(char *buf, size_t len, double bytes);

#endif
