/* rollfx.c - rolling.json with a test sshd per node, and the migrations
 * the simulator ran (rollfx.h). */
#include "rollfx.h"

#include "clirun.h"
#include "json.h"
#include "store.h"
#include "util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Authorize the first sshd's identity on every node's sshd and note where
 * each node's SSH is. 0, or -1. */
static int one_identity(struct rollfx *w)
{
	char *pub = strprintf("%s.pub", w->ns.sshd[0].identity), *key = NULL;
	int rc = pub && read_file(pub, &key, NULL) == 0 ? 0 : -1;
	if (rc < 0)
		fprintf(stderr, "rollfx: cannot read %s\n", pub ? pub : "the identity");
	w->node_ssh = json_object_new_object();
	for (size_t i = 0; rc == 0 && i < w->ns.n; i++) {
		struct sshd *sd = &w->ns.sshd[i];
		char *ak = strprintf("%s/authorized_keys", sd->etc);
		FILE *fp = ak ? fopen(ak, "a") : NULL;
		if (!fp || fputs(key, fp) < 0)
			rc = -1;
		if (fp && fclose(fp) != 0)
			rc = -1;
		if (rc < 0)
			fprintf(stderr, "rollfx: cannot write %s\n", ak ? ak : "authorized_keys");
		free(ak);
		char *at = strprintf("%s:%d", sd->addr, sd->port);
		if (!at || !w->node_ssh)
			rc = -1;
		else
			json_object_object_add(w->node_ssh, w->ns.names[i], json_object_new_string(at));
		free(at);
	}
	free(key);
	free(pub);
	return rc;
}

/* A port free on the loopback now (the kernel's pick), or 0. */
static unsigned free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	unsigned port = 0;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* The scenario with every guest that has an address listening on port,
 * written to path. 0, or -1 after saying why. */
static int probed_scenario(const char *path, unsigned port)
{
	json_object *s = json_object_from_file(ROLLFX_SCENARIO), *guests = NULL;
	int rc = port && s && json_object_object_get_ex(s, "guests", &guests) ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		if (json_object_object_get_ex(g, "address", NULL))
			json_object_object_add(g, "listen_port", json_object_new_int64(port));
	}
	if (rc == 0 && json_object_to_file(path, s) != 0)
		rc = -1;
	if (rc < 0)
		fprintf(stderr, "rollfx: no free port, or cannot write %s\n", path);
	json_object_put(s);
	return rc;
}

/* rollfx_start's, and with probe rollfx_start_probed's. */
static int start(struct rollfx *w, const char *scale, bool store, bool probe)
{
	memset(w, 0, sizeof *w);
	if (geteuid() != 0)
		return 1;
	char scen[64];
	snprintf(scen, sizeof scen, "%s", ROLLFX_SCENARIO);
	if (probe) {
		snprintf(scen, sizeof scen, "/tmp/pvagent-test-rollfx-%ld.json", (long)getpid());
		w->probe_port = free_port();
		if (probed_scenario(scen, w->probe_port) < 0)
			return -1;
	}
	const char *args[] = {"--node-shell-listen", "127.0.0.1:0", "--time-scale",
			      scale ? scale : "1", NULL};
	int started = migfx_start(&w->f, scen, args, !scale);
	if (probe && (started < 0 || !(w->f.scenario_copy = strdup(scen))))
		unlink(scen); /* else migfx_stop removes it */
	if (started < 0)
		return -1;
	if (probe)
		w->f.conf.migrate.probe_port = w->probe_port;
	if (nodesshd_start(&w->ns, &w->f.sp) < 0) {
		fprintf(stderr, "rollfx: the nodes' sshd did not start\n");
		migfx_stop(&w->f);
		return -1;
	}
	snprintf(w->dir, sizeof w->dir, "/tmp/pvagent-test-rolling.XXXXXX");
	int rc = one_identity(w);
	if (rc == 0 && !mkdtemp(w->dir)) {
		perror("rollfx: mkdtemp");
		w->dir[0] = '\0';
		rc = -1;
	}
	w->f.conf.ssh.identity = w->ns.sshd[0].identity;
	w->f.conf.ssh.known_hosts = rc == 0 ? strprintf("%s/known_hosts", w->dir) : NULL;
	w->f.conf.ssh.host_key_policy = CONF_HKP_TOFU;
	w->f.conf.ssh.timeout = 30;
	w->db = rc == 0 ? strprintf("%s/state.db", w->dir) : NULL;
	char *serr = NULL;
	if (rc == 0 && store && store_open(w->db, &w->f.env.store, &serr) < 0) {
		fprintf(stderr, "rollfx: %s\n", serr ? serr : "store_open");
		rc = -1;
	}
	free(serr);
	if (rc == 0 && !(w->scen = json_object_from_file(ROLLFX_SCENARIO))) {
		fprintf(stderr, "rollfx: cannot read %s\n", ROLLFX_SCENARIO);
		rc = -1;
	}
	if (rc < 0)
		rollfx_stop(w);
	return rc;
}

int rollfx_start(struct rollfx *w, const char *scale, bool store)
{
	return start(w, scale, store, false);
}

int rollfx_start_probed(struct rollfx *w, const char *scale, bool store)
{
	return start(w, scale, store, true);
}

int rollfx_stop(struct rollfx *w)
{
	int rc = 0;
	store_close(w->f.env.store);
	w->f.env.store = NULL;
	free(w->f.conf.ssh.known_hosts);
	w->f.conf.ssh.known_hosts = NULL;
	w->f.conf.ssh.identity = NULL;
	if (nodesshd_stop(&w->ns) < 0)
		rc = -1;
	if (w->dir[0] && w->dir[strlen(w->dir) - 1] != 'X') {
		char *cmd = strprintf("rm -rf '%s'", w->dir);
		if (!cmd || system(cmd) != 0)
			rc = -1;
		free(cmd);
	}
	free(w->db);
	w->db = NULL;
	json_object_put(w->node_ssh);
	json_object_put(w->scen);
	w->node_ssh = w->scen = NULL;
	if (migfx_stop(&w->f) < 0)
		rc = -1;
	return rc;
}

/* The task's target and downtime from its log into m. 0, or -1. */
static int task_log_facts(struct rollfx *w, const char *node, const char *upid, json_object *m)
{
	char *path = strprintf("/nodes/%s/tasks/%s/log?limit=100000", node, upid);
	long status = 0;
	json_object *body = NULL, *lines = NULL;
	int rc = path && sim_api(&w->f.sp, "GET", path, NULL, &status, &body) == 0 &&
			 status == 200 && json_object_object_get_ex(body, "data", &lines)
		 ? 0
		 : -1;
	if (rc < 0)
		fprintf(stderr, "rollfx: GET %s: %ld\n", path ? path : upid, status);
	long long downtime = -1;
	for (size_t i = 0; rc == 0 && i < json_object_array_length(lines); i++) {
		const char *t = json_str(json_object_array_get_idx(lines, i), "t"), *p;
		if (t && (p = strstr(t, " to node '")) && !json_object_object_get_ex(m, "to", NULL)) {
			p += strlen(" to node '");
			const char *q = strchr(p, '\'');
			if (q)
				json_object_object_add(m, "to",
						       json_object_new_string_len(p, (int)(q - p)));
		}
		if (t && (p = strstr(t, " - downtime ")))
			downtime = atoll(p + strlen(" - downtime "));
	}
	json_object_object_add(m, "downtime_ms", json_object_new_int64(downtime));
	json_object_put(body);
	free(path);
	return rc;
}

static int by_start(const void *a, const void *b)
{
	double x = json_object_get_double(json_object_object_get(*(json_object *const *)a, "start"));
	double y = json_object_get_double(json_object_object_get(*(json_object *const *)b, "start"));
	return x < y ? -1 : x > y;
}

int rollfx_migrations(struct rollfx *w, json_object **out)
{
	json_object *all = json_object_new_array();
	int rc = all ? 0 : -1;
	static const char *const types[] = {"qmigrate", "vzmigrate"};
	for (size_t i = 0; rc == 0 && i < w->ns.n; i++)
		for (size_t k = 0; rc == 0 && k < 2; k++) {
			char *path = strprintf("/nodes/%s/tasks?source=all&limit=100000&typefilter=%s",
					       w->ns.names[i], types[k]);
			long status = 0;
			json_object *body = NULL, *tasks = NULL;
			if (!path || sim_api(&w->f.sp, "GET", path, NULL, &status, &body) < 0 ||
			    status != 200 || !json_object_object_get_ex(body, "data", &tasks)) {
				fprintf(stderr, "rollfx: GET %s: %ld\n", path ? path : "tasks", status);
				rc = -1;
			}
			for (size_t n = 0; rc == 0 && n < json_object_array_length(tasks); n++) {
				json_object *t = json_object_array_get_idx(tasks, n);
				json_object *m = json_object_new_object();
				long long end = -1, start = 0;
				json_int(t, "endtime", &end);
				json_int(t, "starttime", &start);
				const char *upid = json_str(t, "upid"), *id = json_str(t, "id");
				const char *user = json_str(t, "user");
				if (!m || !upid || !id || !user) {
					json_object_put(m);
					fprintf(stderr, "rollfx: %s: a task without upid, id or user\n", path);
					rc = -1;
					break;
				}
				json_object_object_add(m, "upid", json_object_new_string(upid));
				json_object_object_add(m, "vmid",
						       json_object_new_int64(atoll(id)));
				json_object_object_add(m, "type", json_object_new_string(types[k]));
				json_object_object_add(m, "from", json_object_new_string(w->ns.names[i]));
				json_object_object_add(m, "start",
						       json_object_new_double((double)start));
				json_object_object_add(m, "end", json_object_new_double((double)end));
				json_object_object_add(m, "user", json_object_new_string(user));
				const char *es = json_str(t, "status");
				json_object_object_add(m, "ok", json_object_new_boolean(es && strcmp(es, "OK") == 0));
				rc = task_log_facts(w, w->ns.names[i], upid, m);
				json_object_array_add(all, m);
			}
			json_object_put(body);
			free(path);
		}
	if (rc < 0) {
		json_object_put(all);
		return -1;
	}
	json_object_array_sort(all, by_start);
	*out = all;
	return 0;
}
