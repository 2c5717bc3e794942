/* simcli.h - test support for the suites that run the pvagent tool
 * against the simulator without a guest (test_pool, test_image): a
 * temporary directory with a templates directory, the simulator started on
 * a scenario (time scale 1000), a pvagent.conf pointing at it with extra
 * sections of the suite's, and running the tool there. These act on the
 * running Criterion test: they skip it without the binary and fail it
 * when something does not start. */
#ifndef TESTS_SIMCLI_H
#define TESTS_SIMCLI_H

#include "simproc.h"

struct simcli {
	char *dir;        /* temporary; state.db, the conf, keys */
	char *conf;
	char *tdir;       /* DIR/templates (made, empty) */
	const char *bin;  /* $PVAGENT_BIN or build/san/pvagent */
	struct simproc *sim;
};

/* Start sim on scenario and write the conf ([pve], [paths], then extra). */
void simcli_start(struct simcli *w, struct simproc *sim, const char *scenario,
		  const char *extra);
/* Stop the simulator (failing the test when it does not exit cleanly) and
 * remove the directory. */
void simcli_free(struct simcli *w);
/* pvagent -c CONF ARGS... (NULL-terminated): its exit status, *out its
 * output; fails the test when it did not run cleanly. */
int simcli_pv(const struct simcli *w, char **out, ...);

/* A copy of scenario base with member key set to the JSON text value,
 * written as DIR/scenario.json; its path (malloc'd). Fails the test when
 * it cannot be made. */
char *simcli_scenario_with(const char *base, const char *key, const char *value,
			   const char *dir);
/* One API request (form body or NULL) that must answer 200. */
void simcli_api_ok(struct simproc *sp, const char *method, const char *path, const char *form);

#endif
