/* fuzz_sim.c - fuzz targets for the PVE simulator's input checks: the
 * schema checker (a request against PVE 8 and PVE 3.4 schemas) and the
 * scenario loader. */
#include "fuzz.h"

#include "cluster.h"
#include "scenario.h"
#include "schema.h"
#include "simapi.h"
#include "util.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- schema checker ---------------------------------------------------------- */

/* Both schemas, loaded on first use from $PVE_API_DIR or ../shared/pve-api
 * (as the simulator finds them from the repository root). */
static struct schema *schemas[2];
static int schemas_state; /* 0 not tried, 1 loaded, -1 missing */
static char schemas_why[512];

static void schemas_free(void)
{
	for (size_t i = 0; i < 2; i++)
		schema_free(schemas[i]);
}

static int schemas_load(void)
{
	static const char *const files[] = {"pve8-apidata.json",
					    "pve3-openvz-apidata.generated.json"};
	if (schemas_state)
		return schemas_state;
	const char *dir = getenv("PVE_API_DIR");
	if (!dir || !*dir)
		dir = "../shared/pve-api";
	schemas_state = 1;
	for (size_t i = 0; i < 2 && schemas_state == 1; i++) {
		char *path = strprintf("%s/%s", dir, files[i]), *err = NULL;
		if (!path || access(path, R_OK) != 0 || !(schemas[i] = schema_load(path, &err))) {
			snprintf(schemas_why, sizeof schemas_why, "schema %s/%s: %s", dir, files[i],
				 err ? err : "not readable (set PVE_API_DIR)");
			schemas_state = -1;
		}
		free(err);
		free(path);
	}
	atexit(schemas_free);
	return schemas_state;
}

/* One schema's verdict on the request; the count of faults matches the
 * errors object (one member per parameter at fault). */
static int check_one(const struct schema *s, const char *method, const char *path,
		     json_object *params)
{
	json_object *pp = NULL, *errors = NULL;
	const struct schema_method *m = schema_find(s, method, path, &pp);
	if (!m)
		return 0;
	int rc = 0;
	if (!schema_has_path(s, path))
		rc = fuzz_fail("schema: %s %s found, but schema_has_path says no", method, path);
	int n = rc ? 0 : schema_check_request(m, pp, params, &errors);
	if (n < 0)
		rc = fuzz_fail("out of memory");
	else if (n == 0 && errors)
		rc = fuzz_fail("schema: %s %s: no faults, yet an errors object", method, path);
	else if (n > 0 && (!json_object_is_type(errors, json_type_object) ||
			   json_object_object_length(errors) != n))
		rc = fuzz_fail("schema: %s %s: %d faults, %d errors", method, path, n,
			       errors ? json_object_object_length(errors) : -1);
	json_object_put(errors);
	json_object_put(pp);
	return rc;
}

/* Input: "METHOD /path" then one parameter per line, "name=value" (a form
 * value, a string) or "name:=JSON" (a typed value from a JSON body). */
int fuzz_sim_schema(const uint8_t *d, size_t n)
{
	if (schemas_load() < 0)
		return fuzz_unavailable("%s", schemas_why);
	char *text = fuzz_str(d, n);
	json_object *params = json_object_new_object();
	int rc = text && params ? 0 : fuzz_fail("out of memory");
	char *save = NULL;
	char *first = rc ? NULL : strtok_r(text, "\n", &save);
	char *sp = first ? strchr(first, ' ') : NULL;
	if (sp) {
		*sp = '\0';
		for (char *l = strtok_r(NULL, "\n", &save); l && rc == 0; l = strtok_r(NULL, "\n", &save)) {
			char *eq = strchr(l, '=');
			if (!eq)
				continue;
			int typed = eq > l && eq[-1] == ':';
			*(typed ? eq - 1 : eq) = '\0';
			json_object *v = typed ? json_tokener_parse(eq + 1) : json_object_new_string(eq + 1);
			/* a typed value that is not JSON goes in as null */
			if ((!typed && !v) || json_object_object_add(params, l, v) < 0)
				rc = fuzz_fail("out of memory");
		}
		for (size_t i = 0; i < 2 && rc == 0; i++)
			rc = check_one(schemas[i], first, sp + 1, params);
	}
	json_object_put(params);
	free(text);
	return rc;
}

/* ---- scenario loader --------------------------------------------------------- */

int fuzz_sim_scenario(const uint8_t *d, size_t n)
{
	char *path = fuzz_file(d, n, "scenario.json");
	struct cluster *c = calloc(1, sizeof *c);
	if (!path || !c) {
		fuzz_file_done(path);
		free(c);
		return fuzz_fail("scenario: cannot write the input file");
	}
	char *err = NULL;
	int rc = 0;
	if (scenario_load(c, path, &err) < 0) {
		if (err && strncmp(err, path, strlen(path)) != 0)
			rc = fuzz_fail("scenario: message does not name the file: %s", err);
	} else if (!c->version || c->major < 2 || c->major > 9) {
		rc = fuzz_fail("scenario: loaded without a PVE version");
	}
	free(err);
	cluster_free(c);
	fuzz_file_done(path);
	return rc;
}
