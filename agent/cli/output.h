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
/* The same in at most width columns (0: any): the widest columns narrowed
 * first, never below their header, their cells cut with "...". */
void table_print_fit(const struct table *t, FILE *f, size_t width);
void table_free(struct table *t);

/* Print o as one compact JSON line on f and flush. */
void out_json_line(FILE *f, json_object *o);
/* A line another process printed on our stdout (pvagentd's child, passed
 * on by the client): counted when it is a final result object. */
void out_json_relayed(const char *line);
/* Has out_json_line printed a final result object (one with "result"),
 * or was one relayed? */
bool out_json_result_printed(void);
/* A command's final object when it succeeded, on stdout:
 * {"result":"ok","command":cmd,key:v,"exit":0} (v taken). */
void out_json_ok(const char *cmd, const char *key, json_object *v);

/* The members every command's result has, for each guest (set on o,
 * replacing any there): "name", "vmid" (null until known, vmid 0),
 * "node" (null until known), "result" ("ok" when exit is 0, else
 * "error"), "exit" (its exit status), "error": null when err_kind is NULL,
 * else {"kind", "message", "step"} (step null outside a step). */
void out_result_members(json_object *o, const char *name, int vmid, const char *node, int exit,
			const char *err_kind, const char *err_message, const char *err_step);

/* "1.5 GiB" style byte count into buf (at least 16 bytes). */
const char *out_bytes(char *buf, size_t len, double bytes);

#endif
