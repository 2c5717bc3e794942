/* simcli.c - the pvagent tool against the simulator (see simcli.h). */
#include "simcli.h"

#include "clirun.h"
#include "util.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void simcli_start(struct simcli *w, struct simproc *sim, const char *scenario,
		  const char *extra)
{
	const char *bin = getenv("PVAGENT_BIN");
	w->bin = bin ? bin : "build/san/pvagent";
	w->sim = sim;
	if (access(w->bin, X_OK) < 0)
		cr_skip_test("no pvagent binary (make build/san/pvagent)");
	char t[] = "/tmp/pvagent-test-simcli.XXXXXX";
	cr_assert_not_null(mkdtemp(t));
	w->dir = strdup(t);
	const char *args[] = {"--time-scale", "1000", NULL};
	cr_assert_eq(simproc_start(sim, scenario, args), 0);
	w->tdir = strprintf("%s/templates", w->dir);
	cr_assert_eq(mkdir(w->tdir, 0755), 0);
	char *secret = strprintf("%s/token.secret", w->dir);
	char *body = strprintf("%s\n", sim->token_secret);
	cr_assert_eq(test_write_file(secret, body, 0600), 0);
	free(body);
	w->conf = strprintf("%s/pvagent.conf", w->dir);
	char *conf = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			       "fingerprint = %s\nnode = pve1\n"
			       "[paths]\ntemplates = %s\nstate = %s\nsocket = %s/none.sock\n%s",
			       sim->url, sim->token_id, secret, sim->fingerprint, w->tdir, w->dir,
			       w->dir, extra ? extra : "");
	cr_assert_eq(test_write_file(w->conf, conf, 0600), 0);
	free(conf);
	free(secret);
}

char *simcli_scenario_with(const char *base, const char *key, const char *value,
			   const char *dir)
{
	json_object *sc = json_object_from_file(base), *v = json_tokener_parse(value);
	cr_assert(sc && v, "%s or the value of %s does not parse", base, key);
	json_object_object_add(sc, key, v);
	char *path = strprintf("%s/scenario.json", dir);
	cr_assert_eq(json_object_to_file(path, sc), 0);
	json_object_put(sc);
	return path;
}

void simcli_api_ok(struct simproc *sp, const char *method, const char *path, const char *form)
{
	long status = 0;
	json_object *a = NULL;
	cr_assert_eq(sim_api(sp, method, path, form, &status, &a), 0, "%s %s: no answer", method,
		     path);
	cr_assert_eq(status, 200, "%s %s: %ld %s", method, path, status,
		     a ? json_object_to_json_string(a) : "");
	json_object_put(a);
}

void simcli_free(struct simcli *w)
{
	cr_assert_eq(simproc_stop(w->sim), 0, "simulator did not exit cleanly");
	cr_assert_eq(test_remove_tree(w->dir), 0, "cannot remove %s", w->dir);
	free(w->dir);
	free(w->conf);
	free(w->tdir);
}

int simcli_pv(const struct simcli *w, char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = test_pvagentv(w->bin, w->conf, out, ap);
	va_end(ap);
	cr_assert_geq(rc, 0, "pvagent did not run cleanly:\n%s", *out ? *out : "");
	return rc;
}
