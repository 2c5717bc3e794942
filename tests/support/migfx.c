/* migfx.c - simulator, client, configuration and job environment for the
 * migration suites (migfx.h). */
#include "migfx.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int migfx_start(struct migfx *f, const char *scenario, const char *const *extra_args,
		bool simtime)
{
	memset(f, 0, sizeof *f);
	if (simproc_start(&f->sp, scenario, extra_args) < 0)
		return -1;
	f->simtime = simtime;
	if (simtime)
		simclock_init(&f->sc, &f->sp);
	f->opts = (struct pve_opts){
		.url = f->sp.url,
		.token_id = f->sp.token_id,
		.token_secret = f->sp.token_secret,
		.fingerprint = f->sp.fingerprint,
		.retry_base_ms = 50,
		.retry_max_ms = 200,
		.clock = simtime ? &f->sc.clock : NULL,
	};
	struct pve_error e = {0};
	if (!(f->c = pve_new(&f->opts, &e))) {
		fprintf(stderr, "migfx: pve_new: %s\n", e.message ? e.message : "?");
		pve_error_clear(&e);
		return -1;
	}
	f->conf.migrate.memory_reserve = 1024;
	f->conf.migrate.with_local_disks = 1; /* as conf_load's default */
	f->conf.migrate.probe_port = 1;
	f->conf.migrate.timeout = 600;
	f->conf.migrate.per_target = 2;
	f->env.conf = &f->conf;
	f->env.clock = simtime ? &f->sc.clock : NULL;
	f->env.wait.clock = f->env.clock;
	f->env.wait.poll_s = simtime ? 1.0 : 0.2;
	return job_env_init(&f->env);
}

int migfx_stop(struct migfx *f)
{
	job_env_fini(&f->env);
	pve_free(f->c);
	f->c = NULL;
	if (f->simtime)
		simclock_destroy(&f->sc);
	int rc = simproc_stop(&f->sp);
	if (f->scenario_copy) {
		unlink(f->scenario_copy);
		free(f->scenario_copy);
		f->scenario_copy = NULL;
	}
	return rc;
}

/* The element of array a whose "name", "id" or "vmid" is key, or NULL. */
static json_object *keyed(json_object *a, const char *key)
{
	static const char *const ids[] = {"name", "id", "vmid"};
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *e = json_object_array_get_idx(a, i), *v = NULL;
		for (size_t k = 0; k < sizeof ids / sizeof *ids; k++)
			if (json_object_object_get_ex(e, ids[k], &v) &&
			    strcmp(json_object_get_string(v), key) == 0)
				return e;
	}
	return NULL;
}

static int merge(json_object *base, json_object *change)
{
	json_object_object_foreach(change, k, v)
	{
		json_object *b = NULL, *copy = NULL;
		json_object_object_get_ex(base, k, &b);
		if (json_object_is_type(b, json_type_object) &&
		    json_object_is_type(v, json_type_object)) {
			if (merge(b, v) < 0)
				return -1;
		} else if (json_object_is_type(b, json_type_array) &&
			   json_object_is_type(v, json_type_object)) {
			json_object_object_foreach(v, ek, ev)
			{
				json_object *e = keyed(b, ek);
				if (!e) {
					fprintf(stderr, "migfx: no %s '%s' in the scenario\n", k, ek);
					return -1;
				}
				if (merge(e, ev) < 0)
					return -1;
			}
		} else if (json_object_is_type(b, json_type_array) &&
			   json_object_is_type(v, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(v); i++) {
				if (json_object_deep_copy(json_object_array_get_idx(v, i), &copy,
							  NULL) < 0)
					return -1;
				json_object_array_add(b, copy);
				copy = NULL;
			}
		} else {
			if (json_object_deep_copy(v, &copy, NULL) < 0)
				return -1;
			json_object_object_add(base, k, copy);
		}
	}
	return 0;
}

int migfx_start_with(struct migfx *f, const char *scenario, const char *changes,
		     bool simtime)
{
	json_object *base = json_object_from_file(scenario);
	json_object *change = json_tokener_parse(changes);
	char path[] = "/tmp/pvagent-migfx-XXXXXX.json";
	int rc = -1, fd = -1;
	if (!base || !change || !json_object_is_type(change, json_type_object)) {
		fprintf(stderr, "migfx: cannot read %s or the changes\n", scenario);
		goto out;
	}
	if (merge(base, change) < 0 || (fd = mkstemps(path, 5)) < 0)
		goto out;
	close(fd);
	if (json_object_to_file_ext(path, base, JSON_C_TO_STRING_PRETTY) < 0) {
		unlink(path);
		goto out;
	}
	rc = migfx_start(f, path, NULL, simtime);
	if (!(f->scenario_copy = strdup(path))) {
		unlink(path);
		rc = -1;
	}
out:
	json_object_put(base);
	json_object_put(change);
	return rc;
}
