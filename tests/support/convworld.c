/* convworld.c - a convertible guest against the simulator (convworld.h). */
#include "convworld.h"

#include "clirun.h"
#include "job.h"
#include "wf_params.h"
#include "ssh.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The admin's own token, for what the test does as the admin. */
#define ADMIN_SECRET "0c3a1d2e-5f6a-4b7c-8d9e-0f1a2b3c4d5e"

static const char *fixture_mac(const char *fixture)
{
	if (strcmp(fixture, "ubuntu-24.04") == 0)
		return "BC:24:11:5E:2A:7C";
	if (strcmp(fixture, "ubuntu-9.04") == 0)
		return "52:54:00:3A:9C:1E";
	if (strcmp(fixture, "ubuntu-12.04") == 0)
		return "52:54:00:7D:41:E2";
	if (strcmp(fixture, "ubuntu-26.04") == 0)
		return "BC:24:11:26:04:7C";
	if (strcmp(fixture, "debian-13") == 0)
		return "BC:24:11:13:0D:13";
	return "BC:24:11:00:01:90";
}

static int write_scenario(struct conv_world *w)
{
	const struct conv_world_opts *o = &w->o;
	bool bsd = strncmp(o->fixture, "freebsd", 7) == 0;
	char *scen = strprintf(
		"{\"pve_version\": \"9.1\", \"cluster_name\": \"t\",\n"
		" \"nodes\": [{\"name\": \"pve1\", \"cpus\": 8, \"memory_mib\": 32768, \"online\": true,"
		" \"ip\": \"10.10.0.11\"}],\n"
		" \"storages\": [{\"id\": \"local-lvm\", \"type\": \"lvmthin\", \"shared\": false,"
		" \"nodes\": [\"pve1\"], \"content\": \"images,rootdir\", \"size_gib\": 500},\n"
		"  {\"id\": \"local\", \"type\": \"dir\", \"shared\": false,"
		" \"nodes\": [\"pve1\"], \"content\": \"iso,vztmpl,backup\", \"size_gib\": 100}],\n"
		" \"tokens\": [{\"id\": \"root@pam!pvagent\","
		" \"secret\": \"6b1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\", \"privs\": \"all\"},\n"
		"  {\"id\": \"" ADMIN_TOKEN "\", \"secret\": \"" ADMIN_SECRET "\","
		" \"privs\": \"all\"}],\n"
		" \"users\": [], \"ha\": %s, \"faults\": [],\n"
		" \"guests\": [{\"vmid\": 190, \"node\": \"pve1\", \"type\": \"qemu\", \"status\": \"%s\",\n"
		"   \"fixture\": \"%s\", \"address\": \"%s\", \"root\": \"%s\",\n"
		"   \"config\": {\"name\": \"g190\", \"memory\": \"1024\", \"cores\": 1, \"ostype\": \"%s\","
		" \"boot\": \"order=%s;net0\", \"%s\": \"%s\","
		" \"net0\": \"%s=%s,bridge=vmbr0\"%s}}]}\n",
		o->ha ? o->ha : "[]", o->status ? o->status : "running", o->fixture, w->ge.sd.addr,
		w->ge.sd.root, bsd ? "other" : "l26", o->disk_key ? o->disk_key : "ide0",
		o->disk_key ? o->disk_key : "ide0",
		o->ide0 ? o->ide0 : "local-lvm:vm-190-disk-0,size=16G",
		o->nic_model ? o->nic_model : "e1000", fixture_mac(o->fixture),
		o->extra ? o->extra : "");
	int rc = scen ? test_write_file(w->scenario, scen, 0644) : -1;
	free(scen);
	return rc;
}

/* The simulator, its clock, the watcher and the client. */
static int sim_up(struct conv_world *w)
{
	if (simproc_start(&w->sp, w->scenario, w->o.sim_args) < 0) {
		fprintf(stderr, "convworld: the simulator did not start\n");
		return -1;
	}
	w->sim_up = true;
	if (guestenv_watch_start(&w->ge) < 0) {
		fprintf(stderr, "convworld: the boot watcher did not start\n");
		return -1;
	}
	simclock_init(&w->sc, &w->sp);
	w->clock_up = true;
	w->clk = w->sc.clock;
	w->po = (struct pve_opts){
		.url = w->sp.url,
		.token_id = w->sp.token_id,
		.token_secret = w->sp.token_secret,
		.fingerprint = w->sp.fingerprint,
		.retry_base_ms = 50,
		.retry_max_ms = 200,
		.timeout_ms = w->o.timeout_ms,
		.clock = &w->clk,
	};
	struct pve_error e = {0};
	w->c = pve_new(&w->po, &e);
	if (!w->c) {
		fprintf(stderr, "convworld: pve_new: %s\n", e.message ? e.message : "?");
		pve_error_clear(&e);
		return -1;
	}
	return 0;
}

/* Client, watcher and simulator down; -1 when one of them failed. */
static int sim_down(struct conv_world *w)
{
	int rc = 0;
	if (guestenv_watch_stop(&w->ge) < 0)
		rc = -1;
	pve_free(w->c);
	w->c = NULL;
	if (w->sim_up && simproc_stop(&w->sp) < 0)
		rc = -1;
	w->sim_up = false;
	if (w->clock_up)
		simclock_destroy(&w->sc);
	w->clock_up = false;
	return rc;
}

/* Run a shell command line; 0 when it exited 0. */
static int sh(char *cmd)
{
	int rc = cmd && system(cmd) == 0 ? 0 : -1;
	if (rc < 0)
		fprintf(stderr, "convworld: failed: %s\n", cmd ? cmd : "(out of memory)");
	free(cmd);
	return rc;
}

/* The words of a command line quoted for sh (ssh_quote), or NULL. */
struct qw {
	char *a, *b;
};

static bool qw_make(struct qw *q, const char *a, const char *b)
{
	q->a = ssh_quote(a);
	q->b = ssh_quote(b ? b : "");
	return q->a && q->b;
}

static void qw_free(struct qw *q)
{
	free(q->a);
	free(q->b);
	q->a = q->b = NULL;
}

int conv_world_start(struct conv_world *w, const struct conv_world_opts *o)
{
	memset(w, 0, sizeof *w);
	w->o = *o;
	struct guestenv_opts go = {.fixture = o->fixture, .addr = o->addr};
	if (guestenv_start(&w->ge, &go) < 0) {
		fprintf(stderr, "convworld: guest %s did not start on %s\n", o->fixture, o->addr);
		return -1;
	}
	w->scenario = strprintf("%s/scenario.json", w->ge.sd.etc);
	w->state = strprintf("%s/state", w->ge.sd.etc);
	if (!w->scenario || !w->state || write_scenario(w) < 0)
		return -1;
	struct qw q = {0};
	int rc = qw_make(&q, w->state, NULL) ? sh(strprintf("mkdir -p %s", q.a)) : -1;
	qw_free(&q);
	if (rc < 0)
		return -1;
	if (o->keep_pristine) {
		w->pristine = strprintf("%s/pristine", w->ge.sd.dir);
		/* /bin (busybox and the stand-ins) is never written */
		rc = w->pristine && qw_make(&q, w->ge.sd.root, w->pristine)
			     ? sh(strprintf("cp -a %s %s && rm -rf %s/bin", q.a, q.b, q.b))
			     : -1;
		qw_free(&q);
		if (rc < 0)
			return -1;
	}
	w->so = guestenv_ssh_opts(&w->ge);
	return sim_up(w);
}

int conv_world_reset(struct conv_world *w)
{
	if (!w->pristine) {
		fprintf(stderr, "convworld: reset without keep_pristine\n");
		return -1;
	}
	int rc = sim_down(w);
	if (rc < 0)
		fprintf(stderr, "convworld: the simulator or the watcher failed\n");
	struct qw q = {0}, s = {0};
	bool ok = qw_make(&q, w->ge.sd.root, w->pristine) && qw_make(&s, w->state, NULL);
	if (!ok || sh(strprintf("find %s -mindepth 1 -maxdepth 1 ! -name bin -exec rm -rf {} + && "
				"cp -a %s/. %s && rm -rf %s && mkdir -p %s",
				q.a, q.b, q.a, s.a, s.a)) < 0)
		rc = -1;
	qw_free(&q);
	qw_free(&s);
	if (rc < 0 || sim_up(w) < 0)
		return -1;
	sbuf_free(&w->events);
	w->hook = NULL;
	w->hook_fired = 0;
	w->hook_ctx = NULL;
	free(w->root_fstab);
	free(w->broken_fstab);
	w->root_fstab = w->broken_fstab = NULL;
	return rc;
}

int conv_world_stop(struct conv_world *w)
{
	int rc = sim_down(w);
	if (guestenv_stop(&w->ge) < 0)
		rc = -1;
	free(w->scenario);
	free(w->state);
	free(w->pristine);
	free(w->root_fstab);
	free(w->broken_fstab);
	sbuf_free(&w->events);
	memset(w, 0, sizeof *w);
	return rc;
}

void conv_world_cleanup(struct conv_world *w)
{
	(void)conv_world_stop(w);
}

bool conv_world_is_config_change(const struct job_event *ev)
{
	return ev->kind == JOB_EV_DIFF && !ev->path;
}

static void on_event(void *ctx, const struct job_event *ev)
{
	struct conv_world *w = ctx;
	sbuf_addf(&w->events, "%s %s%s%s: %s\n", job_ev_kind_name(ev->kind),
		  ev->step ? ev->step : "-", ev->path ? " " : "", ev->path ? ev->path : "",
		  ev->text ? ev->text : "");
	if (w->hook)
		w->hook(w, ev);
}

/* The world's state.db, opened (NULL after saying why). */
static struct store *store_of(struct conv_world *w)
{
	char *serr = NULL, *path = store_path(w->state);
	struct store *st = NULL;
	if (!path || store_open(path, &st, &serr) < 0) {
		fprintf(stderr, "convworld: store: %s\n", serr ? serr : "out of memory");
		st = NULL;
	}
	free(serr);
	free(path);
	return st;
}

/* The params of a virtio request of g190 at the guest's address, by the
 * workflow's table (the one writer, job_params.h). NULL after saying why. */
static json_object *run_params(struct conv_world *w, enum convert_bus bus, bool dry_run,
			       double verify_s)
{
	const struct job_params_decl *d = &wf_virtio_params_decl;
	const struct target_req treq = {.name = "g190", .address = w->so.host};
	json_object *p = json_object_new_object();
	bool ok = p && target_params_add(d, p, &treq) == 0 &&
		  job_param_set_int(d, p, "bus", bus) == 0 &&
		  job_param_set_num(d, p, "verify_timeout_s", verify_s > 0 ? verify_s : 20) == 0 &&
		  (!dry_run || job_param_set_bool(d, p, "dry_run", true) == 0) &&
		  (!w->keep_snapshot || job_param_set_bool(d, p, "keep_snapshot", true) == 0);
	if (!ok) {
		fprintf(stderr, "convworld: the job's params: out of memory\n");
		json_object_put(p);
		return NULL;
	}
	return p;
}

int conv_world_run(struct conv_world *w, enum convert_bus bus, bool dry_run, double verify_s,
		   json_object **res)
{
	*res = NULL;
	/* the configuration a pvagent.conf gives: the guest's SSH port, key
	 * and known_hosts, state.db's directory */
	struct conf c = {0};
	c.ssh.user = (char *)"root";
	c.ssh.identity = (char *)w->so.identity;
	c.ssh.known_hosts = (char *)w->so.known_hosts;
	c.ssh.port = (unsigned)w->so.port;
	c.ssh.timeout = 10;
	c.paths.state = w->state;
	json_object *p = run_params(w, bus, dry_run, verify_s);
	/* a dry run is not kept (as the CLI runs it) */
	struct store *st = dry_run || !p ? NULL : store_of(w);
	if (!p || (!dry_run && !st)) {
		json_object_put(p);
		return -2;
	}
	/* PVE waits on the simulator's clock (the SSH waits are real time) */
	struct job_env env = {.store = st, .conf = &c, .clock = w->po.clock,
			      .on_event = on_event, .event_ctx = w,
			      .wait = {.clock = w->po.clock, .shutdown_timeout_s = 60}};
	struct job *j = NULL;
	struct pve_error e = {0};
	int rc = -2;
	if (job_env_init(&env) < 0)
		fprintf(stderr, "convworld: job_env_init failed\n");
	else if (job_submit(&env, &wf_virtio, "g190", p, &j, &e) < 0)
		fprintf(stderr, "convworld: job_submit: %s\n", e.message ? e.message : "?");
	else {
		enum job_outcome o = job_run(j, w->c);
		*res = wf_virtio_result_json(j);
		if (*res)
			rc = o == JOB_OUT_DONE ? 0 : -1;
		else
			fprintf(stderr, "convworld: the job did not begin: %s\n",
				job_error(j)->message ? job_error(j)->message : "?");
	}
	job_free(j);
	job_env_fini(&env);
	pve_error_clear(&e);
	json_object_put(p);
	if (st)
		store_close(st);
	return rc;
}

int conv_world_open_job(struct conv_world *w)
{
	struct store *st = store_of(w);
	if (!st)
		return -1;
	char *serr = NULL;
	struct store_job *v = NULL;
	size_t n = 0;
	int open = 0;
	if (store_jobs_list(st, 100, &v, &n, &serr) < 0) {
		fprintf(stderr, "convworld: jobs: %s\n", serr ? serr : "?");
		free(serr);
		open = -1;
	}
	for (size_t i = 0; open == 0 && i < n; i++)
		open = strcmp(v[i].workflow, "virtio") == 0 && job_state_open(v[i].state);
	store_jobs_free(v, n);
	store_close(st);
	return open;
}

json_object *conv_world_guest(struct conv_world *w)
{
	json_object *st = simproc_state(&w->sp);
	if (!st)
		return NULL;
	json_object *cl = NULL, *guests = NULL, *ret = NULL;
	if (json_object_object_get_ex(st, "cluster", &cl))
		json_object_object_get_ex(cl, "guests", &guests);
	else
		json_object_object_get_ex(st, "guests", &guests);
	for (size_t i = 0; guests && !ret && i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i), *v = NULL;
		if (json_object_object_get_ex(g, "vmid", &v) && json_object_get_int(v) == 190)
			ret = json_object_get(g);
	}
	json_object_put(st);
	return ret;
}

/* guest 190's member a, then its member b, copied as a string. */
static char *guest_member(struct conv_world *w, const char *a, const char *b)
{
	json_object *g = conv_world_guest(w), *o = NULL, *v = NULL;
	char *out = NULL;
	if (g && json_object_object_get_ex(g, a, &o) && json_object_object_get_ex(o, b, &v))
		out = strdup(json_object_get_string(v));
	json_object_put(g);
	return out;
}

char *conv_world_config(struct conv_world *w, const char *key)
{
	return guest_member(w, "config", key);
}

char *conv_world_boot(struct conv_world *w)
{
	return guest_member(w, "boot", "state");
}

int conv_world_break_root(struct conv_world *w)
{
	char *text = NULL;
	if (guestenv_read(&w->ge, "/etc/fstab", &text) < 0) {
		fprintf(stderr, "convworld: the guest has no /etc/fstab\n");
		return -1;
	}
	struct sbuf b = {0};
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		const char *mp = strstr(p, "\t/\t");
		if (mp && mp < p + n && *p != '#')
			sbuf_addf(&b, "/dev/ad0s1a%.*s\n", (int)(p + n - mp), mp);
		else
			sbuf_addf(&b, "%.*s\n", (int)n, p);
		p += n + (p[n] ? 1 : 0);
	}
	int rc = guestenv_write(&w->ge, "/etc/fstab", sbuf_str(&b), 0644);
	free(w->root_fstab);
	free(w->broken_fstab);
	w->root_fstab = text;
	w->broken_fstab = sbuf_steal(&b);
	return rc;
}

void conv_world_break_root_hook(struct conv_world *w, const struct job_event *ev)
{
	if (!conv_world_is_config_change(ev) || w->hook_fired++)
		return;
	if (conv_world_break_root(w) < 0)
		fprintf(stderr, "convworld: cannot break the guest's fstab\n");
}

int conv_world_fix_root(struct conv_world *w)
{
	char *now = NULL;
	if (!w->broken_fstab)
		return 0;
	if (guestenv_read(&w->ge, "/etc/fstab", &now) < 0)
		return -1;
	int rc = 0;
	if (strcmp(now, w->broken_fstab) == 0)
		rc = guestenv_write(&w->ge, "/etc/fstab", w->root_fstab, 0644) < 0 ? -1 : 1;
	free(now);
	char *st = rc == 1 ? conv_world_boot(w) : NULL;
	if (st && strcmp(st, "up") != 0 && strcmp(st, "stopped") != 0) {
		/* it hangs at mountroot: the admin stops it (the rerun starts it) */
		long code = 0;
		static const char *const hdrs[] = {
			"Authorization: PVEAPIToken=" ADMIN_TOKEN "=" ADMIN_SECRET, NULL};
		if (sim_http(&w->sp, "POST", "/api2/json/nodes/pve1/qemu/190/status/stop",
			     "application/x-www-form-urlencoded", "", hdrs, &code, NULL) < 0 ||
		    code != 200 || simproc_advance(&w->sp, 30) < 0) {
			fprintf(stderr, "convworld: cannot stop the guest (HTTP %ld)\n", code);
			rc = -1;
		}
	}
	free(st);
	return rc;
}
