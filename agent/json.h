/* json.h - reading members of json-c objects as PVE sends them (numbers
 * as strings and the other way round) and adding members, written once
 * for every module. */
#ifndef PVAGENT_JSON_H
#define PVAGENT_JSON_H

#include <json-c/json.h>
#include <stdbool.h>

/* A string member, or NULL (absent, null, or of another type). */
const char *json_str(json_object *o, const char *key);
/* Any non-null member as text (numbers in their JSON form), or NULL.
 * Borrowed from o. */
const char *json_text(json_object *o, const char *key);
/* A scalar member (string, number, boolean) as a malloc'd string; NULL
 * for absent, null, objects and arrays, or out of memory. */
char *json_scalar_dup(json_object *o, const char *key);
/* An integer member that may come as a number, a boolean or a decimal
 * string. false when absent or not an integer. */
bool json_int(json_object *o, const char *key, long long *out);
/* json_int as a flag (true when not 0) and as an int (0 when absent or
 * not an integer): params' booleans and numbers. */
bool json_flag(json_object *o, const char *key);
int json_int0(json_object *o, const char *key);

/* Add v (taken; NULL adds a null member) under key: 0, or -1 with v
 * released. json_add_str: a copy of s (NULL: a null member). */
int json_add(json_object *o, const char *key, json_object *v);
int json_add_str(json_object *o, const char *key, const char *s);

#endif
