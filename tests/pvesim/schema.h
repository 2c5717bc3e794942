/* schema.h - the official PVE API schema (apidata): loading, route lookup
 * and PVE-style parameter validation, for the simulator. */
#ifndef PVESIM_SCHEMA_H
#define PVESIM_SCHEMA_H

#include <json-c/json.h>

struct schema;
struct schema_method;

/* Load a schema file: the plain JSON array (pve8-apidata.json, the 3.4
 * OpenVZ file) or PVE's own apidata.js with its JavaScript wrapper
 * ("const apiSchema = [...];" or "var pveapi = [...];"). NULL and a
 * malloc'd *err on failure. */
struct schema *schema_load(const char *path, char **err);
void schema_free(struct schema *s);

/* Find the method for an HTTP method and a concrete path below /api2/json
 * ("/nodes/pve1/qemu/100/config"). Returns NULL if the schema has no such
 * path or the path has no such method. On success, if path_params is not
 * NULL, sets it to a new object of the placeholders' values
 * ({"node":"pve1","vmid":"100"}). */
const struct schema_method *schema_find(const struct schema *s,
					const char *method, const char *path,
					json_object **path_params);

/* Does the schema know this path at all (any method)? */
int schema_has_path(const struct schema *s, const char *path);

/* Check params (object: name -> string as form-decoded, or typed JSON
 * value) against the method: unknown and missing parameters, type, ranges,
 * enums, lengths, patterns, named formats, property strings key by key.
 * Returns the number of parameters at fault; when > 0 sets *errors to a new
 * object {"param": "PVE-style message"}. */
int schema_check(const struct schema_method *m, json_object *params,
		 json_object **errors);

const char *schema_method_name(const struct schema_method *m);

/* Added by the schema module (the declarations above are unchanged): */

/* The method's schema path, with placeholders ("/nodes/{node}/qemu"). */
const char *schema_method_path(const struct schema_method *m);

/* 1 if the file follows PVE 2.x/3.x rules (pve-vmid minimum 1 and the old
 * pve-vmid/pve-configid checks), detected from the schema itself. */
int schema_is_legacy(const struct schema *s);

/* schema_check on path_params merged with params, as PVE's RESTHandler
 * does; a parameter that repeats a placeholder is rejected with "duplicate
 * parameter (already defined in URI)". Returns like schema_check. */
int schema_check_request(const struct schema_method *m, json_object *path_params,
			 json_object *params, json_object **errors);

/* Compile every regex of the schema now instead of on first use (they are
 * translated from Perl at load). Returns how many PCRE2 could not compile
 * (0 expected; such a pattern accepts every value), -1 on bad input. */
int schema_precompile(const struct schema *s);

/* The PVE major version the file describes (3, 8 or 9), detected from the
 * schema itself; it decides what the schema names but does not list (the
 * privileges a pve-priv value may name). */
int schema_pve_major(const struct schema *s);

/* schema_check and schema_check_request return -1 (and leave *errors
 * NULL) if memory ran out. */

#endif
