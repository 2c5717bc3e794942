/* cliworld.h - test support for the suites that run the pvagent tool as a
 * user does (test_pvagent, test_cli_names): a real sshd guest (guestenv,
 * FreeBSD 14 fixture) on a given loopback address, the simulator (time
 * scale 100) whose cluster holds the template VM "fbsd-base" (9014) and a
 * running guest "cli1" (150) without a guest agent, whose description
 * names template clitest, plus the guests a suite adds; the templates
 * clitest (address from the guest agent), clistatic (the guest's address)
 * and cliip (${ip}); a pvagent.conf with the [ssh] settings of the guest;
 * running the tool in it. Unlike the other support modules, these act on
 * the running Criterion test: they skip it where the world cannot run and
 * fail it where each suite would assert anyway. */
#ifndef TESTS_CLIWORLD_H
#define TESTS_CLIWORLD_H

#include "guestenv.h"
#include "simproc.h"

#include <json-c/json.h>

struct cli_world {
	struct guestenv ge;
	struct simproc sim;
	char *conf;       /* pvagent.conf */
	const char *bin;  /* the pvagent under test ($PVAGENT_BIN) */
};

/* Start it on addr; more_guests: scenario guest objects to add (JSON,
 * each starting with ",", may be NULL). Skips the test where it cannot
 * run (not root, no binaries); fails it, having said why on stderr, when
 * it does not start. */
void cli_world_start(struct cli_world *w, const char *addr, const char *more_guests);
/* Stop the simulator, failing the test when it does not exit cleanly;
 * the guest stays for the suite's cleanup. */
void cli_world_stop(struct cli_world *w);
/* Stop whatever still runs (a suite's .fini). */
void cli_world_cleanup(struct cli_world *w);

/* Run pvagent -c CONF ARGS... (NULL-terminated) in w; *out gets stdout
 * and stderr. Returns the exit status; fails the test when the tool could
 * not run or its output has a sanitizer report. */
int cli_pv(struct cli_world *w, char **out, ...);

/* The last --json object of out holding "command" (new reference); fails
 * the test when there is none. */
json_object *cli_final_json(const char *out);
/* The string at a path of keys (array indexes as numbers), or NULL. */
const char *cli_jpath(json_object *o, const char *const *keys);

#endif
