/* osdetect.h - the guest's OS, detected over an SSH session: the one call
 * bench, virtio and inject make (osdetect.c). Runs osprof_detect_cmds (a
 * command missing on the other OS gives no fact), then the pure
 * osprof_detect() and osprof_for() (osprof.h). The commands are fixed
 * strings; nothing of the guest reaches a shell. */
#ifndef PVAGENT_OSDETECT_H
#define PVAGENT_OSDETECT_H

#include <stdbool.h>

#include "osprof.h"
#include "outcome.h"
#include "ssh.h"

struct guest_os {
	struct os_facts facts;    /* the detection commands and their output */
	struct os_info os;        /* family OS_UNKNOWN until detected */
	bool have_profile;        /* osprof_for() gave a virtio profile */
	struct os_profile profile;
	char *desc;               /* "FreeBSD 9.0-RELEASE", NULL until detected */
	char *no_profile;         /* why there is no profile (malloc'd), or NULL */
};

/* Detect the OS of the guest behind s into *g (cleared first). 0; -1 with
 * *err (malloc'd, "running 'uname -sr': ..." or "cannot tell the guest's
 * OS: ...") and *se filled when an SSH error is behind it (kind SSH_OK
 * otherwise). An OS without a virtio profile is detected (have_profile
 * false, no_profile says why). */
int guest_os_detect(struct ssh_session *s, struct guest_os *g, struct ssh_error *se,
		    char **err);
void guest_os_free(struct guest_os *g);

/* A failed guest_os_detect as one message, "detect: ERR[: SSH error]"
 * (*msg, malloc'd; NULL when out of memory), and what it means: the SSH
 * layer's outcome (unreachable, ...) or failed. */
enum job_outcome guest_os_failure(const char *err, const struct ssh_error *se, char **msg);

#endif
