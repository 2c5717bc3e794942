/* cliworld.h - test support for the suites that run the pvagent tool as a
 * user does (test_pvagent, test_cli_names): a real sshd guest (guestenv,
 * FreeBSD 14 fixture) on a given loopback address, the simulator (time
 * scale 100) whose cluster holds the template VM "fbsd-base" (9014) and a
 * running guest "cli1" (150) without a guest agent, whose description
 * names template clitest, plus the guests a suite adds; the templates
 * clitest (address from the guest agent), clistatic (the guest's address)
 * and cliip (${ip}); a pvagent.conf with the [ssh] settings of the guest. */
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

/* Why the world cannot run here (not root, no binaries), or NULL. */
const char *cli_world_unavailable(void);
/* Start it on addr; more_guests: scenario guest objects to add (JSON,
 * each starting with ",", may be NULL). 0, or -1 after saying why on
 * stderr. */
int cli_world_start(struct cli_world *w, const char *addr, const char *more_guests);
/* Stop the simulator (0, or -1 when it did not exit cleanly); the guest
 * stays for the suite's cleanup. */
int cli_world_stop(struct cli_world *w);
/* Stop whatever still runs (a suite's .fini). */
void cli_world_cleanup(struct cli_world *w);

/* The last --json object of out holding "command" (new reference), or
 * NULL. */
json_object *cli_final_json(const char *out);
/* The string at a path of keys (array indexes as numbers), or NULL. */
const char *cli_jpath(json_object *o, const char *const *keys);

#endif
