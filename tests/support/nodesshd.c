/* nodesshd.c - one test sshd per simulated node, its commands forwarded to
 * the simulator (nodesshd.h). */
#include "nodesshd.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Write text to the chroot path of sd (replacing a link busybox made). */
static int put(const struct sshd *sd, const char *path, const char *text, mode_t mode)
{
	char *p = sshd_path(sd, path);
	if (!p)
		return -1;
	unlink(p);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	size_t n = strlen(text);
	int rc = fd >= 0 && write(fd, text, n) == (ssize_t)n ? 0 : -1;
	if (fd >= 0 && close(fd) < 0)
		rc = -1;
	if (rc == 0 && chmod(p, mode) < 0)
		rc = -1;
	if (rc < 0)
		fprintf(stderr, "nodesshd: cannot write %s: %s\n", p, strerror(errno));
	free(p);
	return rc;
}

/* The simulator's node names and its node-shell URL. */
static int sim_nodes(struct nodesshd *ns, struct simproc *sp, char **url)
{
	long status = 0;
	json_object *ans = NULL, *d = NULL;
	if (sim_http(sp, "GET", "/_sim/node-shell", NULL, NULL, NULL, &status, &ans) < 0 ||
	    status != 200 || !json_object_object_get_ex(ans, "data", &d) ||
	    !json_object_is_type(d, json_type_string)) {
		fprintf(stderr, "nodesshd: the simulator has no node shell (start it with "
				"--node-shell-listen 127.0.0.1:0)\n");
		json_object_put(ans);
		return -1;
	}
	*url = strdup(json_object_get_string(d));
	json_object_put(ans);
	json_object *st = simproc_state(sp), *cl = NULL, *nodes = NULL;
	if (!*url || !st || !json_object_object_get_ex(st, "cluster", &cl) ||
	    !json_object_object_get_ex(cl, "nodes", &nodes)) {
		fprintf(stderr, "nodesshd: cannot read the simulator's nodes\n");
		json_object_put(st);
		return -1;
	}
	size_t n = json_object_array_length(nodes);
	ns->names = calloc(n ? n : 1, sizeof *ns->names);
	ns->sshd = calloc(n ? n : 1, sizeof *ns->sshd);
	for (size_t i = 0; ns->names && ns->sshd && i < n; i++) {
		json_object *name = NULL;
		json_object_object_get_ex(json_object_array_get_idx(nodes, i), "name", &name);
		if (!(ns->names[i] = strdup(json_object_get_string(name) ? json_object_get_string(name)
									 : "?")))
			break;
		ns->n = i + 1;
	}
	json_object_put(st);
	return ns->names && ns->sshd && ns->n == n ? 0 : -1;
}

/* Install the stand-ins and the node's identity into sd's chroot. */
static int install(const struct sshd *sd, const char *node, const char *url, const char *dir)
{
	char *fwd_path = strprintf("%s/forward", dir), *list_path = strprintf("%s/commands", dir);
	char *fwd = NULL, *list = NULL;
	int rc = -1;
	if (!fwd_path || !list_path || read_file(fwd_path, &fwd, NULL) < 0 ||
	    read_file(list_path, &list, NULL) < 0) {
		fprintf(stderr, "nodesshd: cannot read %s/forward and commands (run from the "
				"repository root or set PVESIM_NODESHELL)\n", dir);
		goto out;
	}
	char *etc = sshd_path(sd, "/etc/pvesim");
	rc = etc && (mkdir(etc, 0755) == 0 || errno == EEXIST) ? 0 : -1;
	free(etc);
	char *nl = strprintf("%s\n", node), *ul = strprintf("%s\n", url);
	if (rc == 0)
		rc = nl && ul && put(sd, "/etc/pvesim/node", nl, 0644) == 0 &&
				     put(sd, "/etc/pvesim/node-shell", ul, 0644) == 0
			     ? 0 : -1;
	free(nl);
	free(ul);
	for (char *save = NULL, *cmd = rc == 0 ? strtok_r(list, "\n", &save) : NULL; cmd && rc == 0;
	     cmd = strtok_r(NULL, "\n", &save)) {
		char *p = strprintf("/bin/%s", cmd);
		rc = p ? put(sd, p, fwd, 0755) : -1;
		free(p);
	}
out:
	free(fwd_path);
	free(list_path);
	free(fwd);
	free(list);
	return rc;
}

int nodesshd_start(struct nodesshd *ns, struct simproc *sp)
{
	memset(ns, 0, sizeof *ns);
	const char *dir = getenv("PVESIM_NODESHELL");
	char *url = NULL;
	int rc = sim_nodes(ns, sp, &url);
	for (size_t i = 0; rc == 0 && i < ns->n; i++) {
		char addr[32];
		snprintf(addr, sizeof addr, "127.0.38.%zu", i + 1);
		struct sshd_opts o = {.addr = addr};
		rc = sshd_start(&ns->sshd[i], &o);
		if (rc == 0)
			rc = install(&ns->sshd[i], ns->names[i], url,
				     dir ? dir : "tests/pvesim/nodeshell");
	}
	free(url);
	if (rc < 0)
		nodesshd_stop(ns);
	return rc;
}

struct sshd *nodesshd_for(struct nodesshd *ns, const char *node)
{
	for (size_t i = 0; i < ns->n; i++)
		if (strcmp(ns->names[i], node) == 0)
			return &ns->sshd[i];
	return NULL;
}

int nodesshd_run(struct nodesshd *ns, const char *node, const char *cmd, char **out)
{
	struct sshd *sd = nodesshd_for(ns, node);
	if (!sd) {
		fprintf(stderr, "nodesshd: no node '%s'\n", node);
		return -1;
	}
	char port[16], dest[64];
	snprintf(port, sizeof port, "%d", sd->port);
	snprintf(dest, sizeof dest, "root@%s", sd->addr);
	const char *const argv[] = {"ssh", "-F", "/dev/null", "-i", sd->identity, "-p", port,
				    "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
				    "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
				    dest, cmd, NULL};
	return test_run(argv, NULL, out);
}

int nodesshd_stop(struct nodesshd *ns)
{
	int rc = 0;
	for (size_t i = 0; ns->sshd && i < ns->n; i++)
		if (sshd_stop(&ns->sshd[i]) < 0)
			rc = -1;
	for (size_t i = 0; ns->names && i < ns->n; i++)
		free(ns->names[i]);
	free(ns->names);
	free(ns->sshd);
	memset(ns, 0, sizeof *ns);
	return rc;
}
