/* submit_check.h - what a peer of pvagentd may submit (pvagentd(8),
 * CONTROL PROTOCOL). A submitted job is a workflow, a subject and params
 * (the JSON object job_submit stores), never a command line; the
 * daemon's root child stores and runs it. A peer other than root (or
 * the daemon's own user) may make it read no file the peer could not
 * read itself:
 *
 * - params carry only the members the workflow declares a peer may set,
 *   of their types and ranges (its table, wf_params.c, checked by
 *   job_params_check: the words job_submit refuses them with); any other
 *   member is refused; then the workflow's own check of what they say
 *   together (up: as the CLI checks its request);
 * - a template ("template") is a name (letters, digits, '.', '_', '-',
 *   not starting with '.'; no '/', so no path and no '..') resolved as
 *   tmpl_load() does, in the configured template directories; the file it
 *   resolves to, symlinks followed, must lie inside that directory and be
 *   readable by the peer by its mode (owner, group, others); a
 *   workflow's "template_path" (up's) is the daemon's resolution of it,
 *   never the peer's;
 * - a public key ("pubkey", up's) is the daemon's ([ssh] identity of its
 *   configuration, the one its child runs with), for every peer, root
 *   too, never the submitter's; without one, a template that uses
 *   ${pubkey} is refused, naming the daemon's configuration;
 * - no other member names a file; one that does gets its check here.
 *
 * A refusal names the member, never what a file holds. */
#ifndef PVAGENT_SUBMIT_CHECK_H
#define PVAGENT_SUBMIT_CHECK_H

#include "conf.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct submit_peer {
	uid_t uid;
	gid_t gid; /* its primary group (SO_PEERCRED) */
};

/* Is wf a workflow the daemon runs (one wf_params.c declares: the
 * workflows pvagent runs, by name only)? */
bool submit_workflow_known(const char *wf);

/* Check (and complete) params of a job of workflow wf on subject,
 * submitted by peer. 0: it may be stored and run; -1: refused, *why
 * (malloc'd) says why (the workflow unknown to the daemon, a bad subject,
 * a member not the workflow's, a template the peer may not read). */
int submit_check(const char *wf, const char *subject, json_object *params,
		 const struct submit_peer *peer, const struct conf *conf, char **why);

#endif
