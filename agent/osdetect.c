/* osdetect.c - the guest's OS over SSH (osdetect.h): the detection
 * commands run, their facts handed to osprof's pure detection. */
#include "osdetect.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "util.h"

/* One fact: the output of cmd when it ran and exited 0. */
static int add_fact(struct ssh_session *s, struct os_facts *f, const char *cmd,
		    struct ssh_error *e)
{
	struct ssh_result out = {0};
	if (ssh_exec_cmdline(s, cmd, NULL, &out, e) < 0) {
		ssh_result_free(&out);
		return -1;
	}
	int rc = 0;
	if (out.exit_status == 0)
		rc = os_facts_add(f, cmd, sbuf_str(&out.out));
	else
		log_debug("detect: '%s' exited %d: %s", cmd, out.exit_status, sbuf_str(&out.err));
	ssh_result_free(&out);
	if (rc < 0) {
		e->kind = SSH_ERR_IO;
		return -1;
	}
	return 0;
}

static char *describe_os(const struct os_info *oi)
{
	if (oi->pretty)
		return strdup(oi->pretty);
	return strprintf("%s %s", oi->name ? oi->name : (oi->id ? oi->id : "?"),
			 oi->version ? oi->version : "?");
}

int guest_os_detect(struct ssh_session *s, struct guest_os *g, struct ssh_error *se,
		    char **err)
{
	memset(g, 0, sizeof *g);
	*err = NULL;
	for (size_t i = 0; osprof_detect_cmds[i]; i++) {
		if (add_fact(s, &g->facts, osprof_detect_cmds[i], se) < 0) {
			*err = strprintf("running '%s'", osprof_detect_cmds[i]);
			return -1;
		}
	}
	char *why = NULL;
	if (osprof_detect(&g->facts, &g->os, &why) < 0) {
		*err = strprintf("cannot tell the guest's OS: %s", why ? why : "unknown");
		free(why);
		return -1;
	}
	if (!(g->desc = describe_os(&g->os))) {
		*err = strdup("out of memory");
		return -1;
	}
	if (osprof_for(&g->os, &g->profile, &why) == 0) {
		g->have_profile = true;
	} else {
		g->no_profile = strprintf("no virtio profile for %s: %s", g->desc,
					  why ? why : "unsupported");
		if (!g->no_profile) {
			free(why);
			*err = strdup("out of memory");
			return -1;
		}
	}
	free(why);
	return 0;
}

void guest_os_free(struct guest_os *g)
{
	if (!g)
		return;
	os_facts_free(&g->facts);
	os_info_free(&g->os);
	free(g->desc);
	free(g->no_profile);
	memset(g, 0, sizeof *g);
}

enum job_outcome guest_os_failure(const char *err, const struct ssh_error *se, char **msg)
{
	bool ssh = se && se->kind != SSH_OK;
	*msg = strprintf("detect: %s%s%s", err ? err : "out of memory", ssh ? ": " : "",
			 ssh ? ssh_error_str(se) : "");
	return ssh ? ssh_error_outcome(se) : JOB_OUT_FAILED;
}
