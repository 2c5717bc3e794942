/* submit_check.h - what a peer of pvagentd may submit (pvagentd(8),
 * CONTROL PROTOCOL). The daemon runs a submitted command line as
 * root; a peer other than root (or the daemon's own user) may make it
 * read no file the peer could not read itself:
 *
 * - a template (-t, --template and its abbreviations, in any command) is
 *   a name (letters, digits, '.', '_', '-', not starting with '.'; no '/',
 *   so no path and no '..') resolved as tmpl_load() does, in the
 *   configured template directories; the file it resolves to, symlinks
 *   followed, must lie inside that directory and be readable by the peer
 *   by its mode (owner, group, others);
 * - no other option of the commands the daemon runs names a file; one
 *   that does is added to this module's table.
 *
 * The refusal names the option and the argument's position, never what
 * the file holds. */
#ifndef PVAGENT_SUBMIT_CHECK_H
#define PVAGENT_SUBMIT_CHECK_H

#include <stddef.h>
#include <sys/types.h>

struct submit_peer {
	uid_t uid;
	gid_t gid; /* its primary group (SO_PEERCRED) */
};

/* argv: the command line from the command's name on (argc entries).
 * dirs: the template directories, NULL-terminated. 0: it may run; -1:
 * refused, *why (malloc'd) says why. */
int submit_check(const char *const *argv, size_t argc, const struct submit_peer *peer,
		 const char *const *dirs, char **why);

#endif
