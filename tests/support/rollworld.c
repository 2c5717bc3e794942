/* rollworld.c - test support: issue 37's cluster for a rolling run, with a
 * test sshd per node, a job store and a configuration (rollworld.h). */
#include "rollworld.h"

#include "clirun.h"
#include "conf.h"
#include "store.h"
#include "util.h"
#include "wf_rolling.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The first sshd's identity authorized on every node's, and node_ssh. */
static int share_identity(struct rollworld *w)
{
	char *pub = strprintf("%s.pub", w->ns.sshd[0].identity), *key = NULL;
	int rc = read_file(pub, &key, NULL);
	if (rc != 0)
		fprintf(stderr, "rollworld: cannot read %s\n", pub);
	free(pub);
	w->node_ssh = json_object_new_object();
	for (size_t i = 0; rc == 0 && i < w->ns.n; i++) {
		struct sshd *sd = &w->ns.sshd[i];
		char *ak = strprintf("%s/authorized_keys", sd->etc);
		FILE *fp = fopen(ak, "a");
		if (!fp || fputs(key, fp) < 0 || fclose(fp) != 0) {
			fprintf(stderr, "rollworld: cannot write %s\n", ak);
			rc = -1;
		}
		free(ak);
		char *at = strprintf("%s:%d", sd->addr, sd->port);
		json_object_object_add(w->node_ssh, w->ns.names[i], json_object_new_string(at));
		free(at);
	}
	free(key);
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

/* The scenario with every guest that has an address listening on one
 * port, written into dir: its path, or NULL. */
static char *probed_scenario(struct rollworld *w)
{
	w->probe_port = free_port();
	json_object *s = json_object_from_file(ROLLWORLD_SCENARIO), *guests = NULL;
	if (!w->probe_port || !s || !json_object_object_get_ex(s, "guests", &guests)) {
		fprintf(stderr, "rollworld: no free port or no %s\n", ROLLWORLD_SCENARIO);
		json_object_put(s);
		return NULL;
	}
	for (size_t i = 0; i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		if (json_object_object_get_ex(g, "address", NULL))
			json_object_object_add(g, "listen_port",
					       json_object_new_int64(w->probe_port));
	}
	char *path = strprintf("%s/scenario.json", w->dir);
	if (json_object_to_file(path, s) != 0) {
		fprintf(stderr, "rollworld: cannot write %s\n", path);
		free(path);
		path = NULL;
	}
	json_object_put(s);
	return path;
}

int rollworld_start(struct rollworld *w, bool daemon, bool probe)
{
	memset(w, 0, sizeof *w);
	snprintf(w->dir, sizeof w->dir, "/tmp/pvagent-test-rolling.XXXXXX");
	if (!mkdtemp(w->dir)) {
		perror("rollworld: mkdtemp");
		w->dir[0] = '\0';
		return -1;
	}
	char *scen = probe ? probed_scenario(w) : strdup(ROLLWORLD_SCENARIO);
	/* a probe needs the real time its downtime takes (scaled) */
	bool simtime = !daemon && !probe;
	const char *args[] = {"--node-shell-listen", "127.0.0.1:0", "--time-scale",
			      simtime ? "1" : daemon ? "100" : "20", NULL};
	int rc = scen ? migfx_start(&w->f, scen, args, simtime) : -1;
	free(scen);
	if (rc != 0)
		return -1;
	if (probe)
		w->f.conf.migrate.probe_port = w->probe_port;
	if (nodesshd_start(&w->ns, &w->f.sp) != 0 || share_identity(w) != 0) {
		fprintf(stderr, "rollworld: the nodes' sshd did not start\n");
		return -1;
	}
	w->f.conf.ssh.identity = w->ns.sshd[0].identity;
	w->f.conf.ssh.known_hosts = strprintf("%s/known_hosts", w->dir);
	w->f.conf.ssh.host_key_policy = CONF_HKP_TOFU;
	w->f.conf.ssh.timeout = 30;
	w->db = strprintf("%s/state.db", w->dir);
	char *serr = NULL;
	if (!daemon && store_open(w->db, &w->f.env.store, &serr) != 0) {
		fprintf(stderr, "rollworld: %s\n", serr ? serr : w->db);
		free(serr);
		return -1;
	}
	w->scen = json_object_from_file(ROLLWORLD_SCENARIO);
	if (!w->scen) {
		fprintf(stderr, "rollworld: cannot read %s\n", ROLLWORLD_SCENARIO);
		return -1;
	}
	return 0;
}

int rollworld_stop(struct rollworld *w)
{
	int rc = 0;
	store_close(w->f.env.store);
	w->f.env.store = NULL;
	free(w->f.conf.ssh.known_hosts);
	w->f.conf.ssh.known_hosts = NULL;
	w->f.conf.ssh.identity = NULL;
	if (nodesshd_stop(&w->ns) != 0)
		rc = -1;
	if (w->dir[0] && test_remove_tree(w->dir) != 0) {
		fprintf(stderr, "rollworld: cannot remove %s\n", w->dir);
		rc = -1;
	}
	free(w->db);
	json_object_put(w->node_ssh);
	json_object_put(w->scen);
	if (migfx_stop(&w->f) != 0)
		rc = -1;
	memset(w, 0, sizeof *w);
	return rc;
}

json_object *rollworld_run_params(const struct rollworld *w)
{
	struct rolling_request q = {.mode = "run", .version = "9.1", .max_workers = 4,
				    .node_ssh = w->node_ssh, .wait_s = 1800};
	return wf_rolling_params(&q);
}

char *rollworld_write_conf(const struct rollworld *w)
{
	const struct migfx *f = &w->f;
	char *secret = strprintf("%s/token.secret", w->dir);
	char *body = strprintf("%s\n", f->sp.token_secret);
	char *path = strprintf("%s/pvagent.conf", w->dir);
	char *conf = strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			       "fingerprint = %s\ntimeout = 10\n[ssh]\nidentity = %s\n"
			       "known_hosts = %s\nhost_key_policy = tofu\n[paths]\ntemplates = %s\n"
			       "state = %s\nsocket = %s/pvagentd.sock\n[daemon]\nworkers = 2\n"
			       "[migrate]\nprobe_port = %u\nmax_workers = 4\n",
			       f->sp.url, f->sp.token_id, secret, f->sp.fingerprint,
			       f->conf.ssh.identity, f->conf.ssh.known_hosts, w->dir, w->dir,
			       w->dir, w->probe_port ? w->probe_port : 1);
	if (test_write_file(secret, body, 0600) != 0 || test_write_file(path, conf, 0600) != 0) {
		fprintf(stderr, "rollworld: cannot write %s or %s\n", secret, path);
		free(path);
		path = NULL;
	}
	free(conf);
	free(body);
	free(secret);
	return path;
}

struct job *rollworld_run_job(struct migfx *f, json_object *params, enum job_outcome *out)
{
	struct job *j = NULL;
	struct pve_error e = {0};
	int rc = job_new(&f->env, &wf_rolling, "cluster", params, &j, &e);
	json_object_put(params);
	if (rc != 0) {
		fprintf(stderr, "rollworld: job_new: %s\n", e.message ? e.message : "?");
		pve_error_clear(&e);
		return NULL;
	}
	wf_rolling_attach(j, &f->opts);
	*out = job_run(j, f->c);
	return j;
}
