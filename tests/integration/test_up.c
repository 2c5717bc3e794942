/* test_up.c - Criterion tests of up and down: the config
 * difference (agent/cfgdiff.c: property strings normalised, MACs kept), the
 * LXC <-> OpenVZ translation, request checks, and the up/down workflows end to end
 * against the PVE simulator (clone+configure+start+address, converge on
 * re-run, lxc and OpenVZ, down of running and missing guests). Simulator
 * tests assert on the simulator's state and request log. The inject step
 * of up runs against a real sshd guest (tests/support/guestenv, as root):
 * files changed then unchanged on a re-run, a failed write leaving every
 * file as it was, no SSH at all without file sections or with no_inject,
 * the bounded wait for SSH (simulated time) and no retry on a host key
 * mismatch. */
#include <criterion/criterion.h>

#include "clirun.h"
#include "guestenv.h"
#include "log.h"
#include "pvecheck.h"
#include "cfgdiff.h"
#include "uprun.h"
#include "simclock.h"
#include "simproc.h"
#include "sshd.h"
#include "tmpl.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static json_object *J(const char *s)
{
	json_object *o = json_tokener_parse(s);
	cr_assert_not_null(o, "bad test JSON: %s", s);
	return o;
}

static void kv(struct tmpl_kvlist *l, const char *k, const char *v)
{
	cr_assert_eq(tmpl_kvlist_add(l, k, v, 0), 0);
}

static const struct cfg_change *find_change(const struct cfg_change *c, size_t n,
					    const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(c[i].key, key))
			return &c[i];
	return NULL;
}

/* ---- config difference ---------------------------------------------------- */

Test(provision_diff, equal_after_normalising)
{
	json_object *cur = J("{\"cores\":2,\"memory\":\"2048\",\"agent\":\"1\","
			     "\"net0\":\"virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=1\","
			     "\"scsi0\":\"local-lvm:vm-101-disk-0,discard=on,iothread=1,size=32G\","
			     "\"ide2\":\"local-lvm:vm-101-cloudinit,media=cdrom\","
			     "\"onboot\":0,\"description\":\"web1: test\\n\","
			     "\"sshkeys\":\"ssh-ed25519%20AAAAC3xyz%20me%40host%0A\","
			     "\"boot\":\"order=scsi0\",\"digest\":\"abc\"}");
	struct tmpl_kvlist d = {0};
	kv(&d, "cores", "2");
	kv(&d, "memory", "2048");
	kv(&d, "agent", "1");
	kv(&d, "net0", "virtio,bridge=vmbr0,firewall=yes");
	kv(&d, "scsi0", "local-lvm:vm-101-disk-0,iothread=1,discard=on");
	kv(&d, "ide2", "local-lvm:cloudinit");
	kv(&d, "onboot", "no");
	kv(&d, "description", "web1: test");
	kv(&d, "sshkeys", "ssh-ed25519%20AAAAC3xyz%20me%40host");
	kv(&d, "boot", "order=scsi0");
	struct cfg_change *ch = NULL;
	size_t n = 99;
	char *err = NULL;
	cr_assert_eq(cfgdiff(GUEST_QEMU, cur, &d, &ch, &n, &err), 0);
	for (size_t i = 0; i < n; i++)
		cr_log_error("unexpected change %s: %s -> %s", ch[i].key,
			     ch[i].old_value ? ch[i].old_value : "-", ch[i].new_value);
	cr_assert_eq(n, 0);
	cfgdiff_free(ch, n);
	tmpl_kvlist_free(&d);
	json_object_put(cur);
}

Test(provision_diff, changes_and_mac_kept)
{
	json_object *cur = J("{\"cores\":1,\"memory\":\"512\","
			     "\"net0\":\"e1000=BC:24:11:00:00:09,bridge=vmbr0\","
			     "\"virtio0\":\"local-lvm:vm-101-disk-0,size=8G\"}");
	struct tmpl_kvlist d = {0};
	kv(&d, "cores", "1");
	kv(&d, "cores", "4"); /* the last one wins (--set after [pve]) */
	kv(&d, "memory", "2048");
	kv(&d, "net0", "virtio,bridge=vmbr0");
	kv(&d, "ciuser", "root");
	kv(&d, "ipconfig0", "ip=10.0.0.5/24,gw=10.0.0.1");
	kv(&d, "virtio0", "local-lvm:vm-101-disk-0,cache=writeback");
	struct cfg_change *ch = NULL;
	size_t n = 0;
	cr_assert_eq(cfgdiff(GUEST_QEMU, cur, &d, &ch, &n, NULL), 0);
	cr_assert_eq(n, 6);
	const struct cfg_change *c = find_change(ch, n, "cores");
	cr_assert_str_eq(c->old_value, "1");
	cr_assert_str_eq(c->new_value, "4");
	c = find_change(ch, n, "net0");
	cr_assert_not_null(c);
	cr_assert_str_eq(c->new_value, "virtio=BC:24:11:00:00:09,bridge=vmbr0");
	c = find_change(ch, n, "ciuser");
	cr_assert_null(c->old_value);
	cr_assert_str_eq(c->new_value, "root");
	cr_assert_not_null(find_change(ch, n, "virtio0"));
	cr_assert_not_null(find_change(ch, n, "ipconfig0"));
	cr_assert_not_null(find_change(ch, n, "memory"));
	cfgdiff_free(ch, n);
	tmpl_kvlist_free(&d);
	json_object_put(cur);
}

Test(provision_diff, create_only_keys_skipped_for_lxc)
{
	json_object *cur = J("{\"hostname\":\"ct1\",\"memory\":1024,\"unprivileged\":1,"
			     "\"rootfs\":\"local-lvm:vm-120-disk-0,size=8G\","
			     "\"net0\":\"name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:20,ip=dhcp,type=veth\"}");
	struct tmpl_kvlist d = {0};
	kv(&d, "hostname", "ct1");
	kv(&d, "memory", "1024");
	kv(&d, "unprivileged", "1");
	kv(&d, "rootfs", "local-lvm:8");
	kv(&d, "net0", "name=eth0,bridge=vmbr0,ip=dhcp");
	kv(&d, "ssh-public-keys", "ssh-ed25519 AAAA me@host");
	kv(&d, "swap", "512");
	struct cfg_change *ch = NULL;
	size_t n = 0;
	cr_assert_eq(cfgdiff(GUEST_LXC, cur, &d, &ch, &n, NULL), 0);
	cr_assert_eq(n, 1, "only swap differs, got %zu", n);
	cr_assert_str_eq(ch[0].key, "swap");
	cfgdiff_free(ch, n);
	tmpl_kvlist_free(&d);
	json_object_put(cur);
}

Test(provision_diff, keep_mac)
{
	char *s = cfgdiff_keep_mac("virtio,bridge=vmbr0", "e1000=AA:BB:CC:00:11:22,bridge=vmbr1");
	cr_assert_str_eq(s, "virtio=AA:BB:CC:00:11:22,bridge=vmbr0");
	free(s);
	s = cfgdiff_keep_mac("model=virtio,bridge=vmbr0", "virtio,macaddr=AA:BB:CC:00:11:22");
	cr_assert_str_eq(s, "virtio=AA:BB:CC:00:11:22,bridge=vmbr0");
	free(s);
	/* a MAC given in the template is kept as given */
	s = cfgdiff_keep_mac("virtio=02:00:00:00:00:01,bridge=vmbr0", "e1000=AA:BB:CC:00:11:22");
	cr_assert_str_eq(s, "virtio=02:00:00:00:00:01,bridge=vmbr0");
	free(s);
	s = cfgdiff_keep_mac("virtio,bridge=vmbr0", NULL);
	cr_assert_str_eq(s, "virtio,bridge=vmbr0");
	free(s);
	/* lxc: hwaddr */
	s = cfgdiff_keep_mac("name=eth0,bridge=vmbr0,ip=dhcp",
			       "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:20,ip=dhcp");
	cr_assert_not_null(strstr(s, "hwaddr=BC:24:11:00:00:20"));
	free(s);
}

/* ---- LXC <-> OpenVZ ---------------------------------------------------------- */

Test(provision_ct, lxc_to_openvz)
{
	struct tmpl_kvlist in = {0}, out = {0};
	kv(&in, "hostname", "ct1");
	kv(&in, "memory", "1024");
	kv(&in, "swap", "512");
	kv(&in, "cores", "2");
	kv(&in, "rootfs", "local:8");
	kv(&in, "net0", "name=eth0,bridge=vmbr0,ip=10.0.0.7/24,gw=10.0.0.1");
	kv(&in, "unprivileged", "1");
	char *err = NULL;
	cr_assert_eq(cfgdiff_ct_translate(GUEST_OPENVZ, &in, &out, &err), 0, "%s", err);
	cr_assert_str_eq(tmpl_kvlist_get(&out, "hostname"), "ct1");
	cr_assert_str_eq(tmpl_kvlist_get(&out, "cpus"), "2");
	cr_assert_str_eq(tmpl_kvlist_get(&out, "disk"), "8");
	cr_assert_str_eq(tmpl_kvlist_get(&out, "storage"), "local");
	cr_assert_str_eq(tmpl_kvlist_get(&out, "netif"), "ifname=eth0,bridge=vmbr0");
	cr_assert_str_eq(tmpl_kvlist_get(&out, "ip_address"), "10.0.0.7");
	cr_assert_null(tmpl_kvlist_get(&out, "unprivileged"));
	cr_assert_null(tmpl_kvlist_get(&out, "rootfs"));
	tmpl_kvlist_free(&out);
	tmpl_kvlist_free(&in);

	kv(&in, "mp0", "local:4,mp=/data");
	cr_assert_eq(cfgdiff_ct_translate(GUEST_OPENVZ, &in, &out, &err), -1);
	cr_assert_not_null(strstr(err, "mp0"));
	free(err);
	tmpl_kvlist_free(&in);
}

Test(provision_ct, openvz_to_lxc)
{
	struct tmpl_kvlist in = {0}, out = {0};
	kv(&in, "hostname", "ct2");
	kv(&in, "disk", "8");
	kv(&in, "cpus", "1");
	kv(&in, "netif", "ifname=eth0,bridge=vmbr0,mac=02:00:00:00:00:02");
	kv(&in, "storage", "local-lvm");
	kv(&in, "quotatime", "0");
	char *err = NULL;
	cr_assert_eq(cfgdiff_ct_translate(GUEST_LXC, &in, &out, &err), 0, "%s", err);
	cr_assert_str_eq(tmpl_kvlist_get(&out, "rootfs"), "local-lvm:8");
	cr_assert_str_eq(tmpl_kvlist_get(&out, "cores"), "1");
	cr_assert_str_eq(tmpl_kvlist_get(&out, "net0"),
			 "name=eth0,bridge=vmbr0,hwaddr=02:00:00:00:00:02");
	cr_assert_null(tmpl_kvlist_get(&out, "quotatime"));
	cr_assert_null(tmpl_kvlist_get(&out, "storage"));
	tmpl_kvlist_free(&out);
	tmpl_kvlist_free(&in);
}

Test(provision_misc, status_names_and_outcomes)
{
	cr_assert_str_eq(up_status_name(UP_CREATED), "created");
	cr_assert_str_eq(up_status_name(UP_ABSENT), "absent");
	struct up_result r[3] = {{.status = UP_CREATED},
				 {.status = UP_FAILED, .outcome = JOB_OUT_UNREACHABLE},
				 {.status = UP_FAILED, .outcome = JOB_OUT_NEEDS_ATTENTION}};
	cr_assert_eq(up_results_outcome(r, 1), JOB_OUT_DONE);
	cr_assert_eq(up_results_outcome(r, 2), JOB_OUT_UNREACHABLE);
	cr_assert_eq(up_results_outcome(r, 3), JOB_OUT_NEEDS_ATTENTION, "the most serious");
	struct pve_error e = {0};
	pve_error_set(&e, PVE_ERR_CONNECT, "no route");
	cr_assert_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	pve_error_set(&e, PVE_ERR_API, "boom");
	cr_assert_eq(pve_error_outcome(&e), JOB_OUT_FAILED);
	e.ambiguous = true;
	cr_assert_eq(pve_error_outcome(&e), JOB_OUT_NEEDS_ATTENTION);
	pve_error_clear(&e);
}

/* ---- against the simulator ---------------------------------------------- */

#define DEMO "tests/pvesim/scenarios/demo.json"
#define PVE3 "tests/pvesim/scenarios/pve3.json"
#define PUBKEY "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGZha2VrZXlmb3J0ZXN0cw pvagent@test"

/* Events, recorded (provision serialises the callback). */
struct evlog {
	int begins, dones, in_flight, max_in_flight;
	int steps, diffs, progress;
	struct sbuf text;
};

static void on_event(void *ctx, const struct job_event *ev)
{
	struct evlog *l = ctx;
	switch (ev->kind) {
	case JOB_EV_BEGIN:
		l->begins++;
		if (++l->in_flight > l->max_in_flight)
			l->max_in_flight = l->in_flight;
		break;
	case JOB_EV_DONE:
		l->dones++;
		l->in_flight--;
		break;
	case JOB_EV_STEP:
		l->steps++;
		cr_assert_geq(ev->elapsed_s, 0);
		sbuf_addf(&l->text, "%s %s %.1fs %s\n", ev->name, ev->step, ev->elapsed_s,
			  ev->text ? ev->text : "");
		break;
	case JOB_EV_DIFF:
		l->diffs++;
		sbuf_addf(&l->text, "%s diff %s\n", ev->name, ev->text);
		break;
	case JOB_EV_NOTE:
		break;
	case JOB_EV_PROGRESS:
		l->progress += !job_event_is_start(ev);
		if (ev->step && !strcmp(ev->step, "inject"))
			sbuf_addf(&l->text, "%s progress inject %s\n", ev->name,
				  ev->text ? ev->text : "");
		break;
	}
}

struct fx {
	struct simproc sp;
	struct simclock sc;
	struct pve_clock clk;
	struct pve_opts opts;
	struct pve *c;
	struct evlog ev;
	struct tmpl *t;
};

/* Name without '-', '.' and '_', lower case, so a template VM is found
 * however the scenario spells it ("ubuntu-24.04-base" = "ubuntu2404-base"). */
static void squash(const char *s, char *out, size_t n)
{
	size_t j = 0;
	for (; *s && j + 1 < n; s++)
		if (*s != '-' && *s != '.' && *s != '_')
			out[j++] = (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
	out[j] = 0;
}

/* Replace the first occurrence of from by to in *text (reallocated). */
static void subst(char **text, const char *from, const char *to)
{
	char *at = strstr(*text, from);
	cr_assert_not_null(at, "template text lacks '%s'", from);
	char *n = strprintf("%.*s%s%s", (int)(at - *text), *text, to, at + strlen(from));
	cr_assert_not_null(n);
	free(*text);
	*text = n;
}

/* Load a shipped template through a copy in the simulator's directory:
 * the [source] clone VM is renamed to the scenario's spelling if needed,
 * and the NULL-terminated from/to pairs of edits are applied. */
static void load_tmpl(struct fx *f, const char *path, const char *const *edits)
{
	char *text = NULL, *err = NULL;
	cr_assert_eq(read_file(path, &text, NULL), 0, "cannot read %s", path);
	char *cl = strstr(text, "\nclone = ");
	if (cl) {
		cl += 9;
		size_t n = strcspn(cl, "\n");
		char *want = strndup(cl, n);
		char wq[64], hq[64];
		squash(want, wq, sizeof wq);
		struct guest_list l;
		struct pve_error e = {0};
		cr_assert_eq(guest_list(f->c, NULL, &l, &e), 0);
		const char *have = NULL;
		for (size_t i = 0; i < l.n && !have; i++) {
			if (!l.v[i].template || !l.v[i].name)
				continue;
			squash(l.v[i].name, hq, sizeof hq);
			if (!strcmp(hq, wq))
				have = l.v[i].name;
		}
		cr_assert_not_null(have, "no template VM like %s in the scenario", want);
		char *from = strprintf("clone = %s\n", want), *to = strprintf("clone = %s\n", have);
		subst(&text, from, to);
		free(from);
		free(to);
		guest_list_free(&l);
		free(want);
	}
	for (size_t i = 0; edits && edits[i]; i += 2)
		subst(&text, edits[i], edits[i + 1]);
	const char *base = strrchr(path, '/');
	char *copy = strprintf("%s/%s", f->sp.dir, base ? base + 1 : path);
	FILE *o = fopen(copy, "w");
	cr_assert_not_null(o);
	fputs(text, o);
	cr_assert_eq(fclose(o), 0);
	tmpl_free(f->t);
	f->t = NULL;
	cr_assert_eq(tmpl_load_file(copy, &f->t, &err), 0, "%s", err ? err : "?");
	free(copy);
	free(text);
}

/* The Ubuntu 24.04 VM template with a static cloud-init address (the
 * simulator hands out no DHCP leases). */
static const char *const ubuntu_static[] = {
	"ipconfig0 = ip=dhcp", "ipconfig0 = ip=10.20.0.5/24,gw=10.20.0.1",
	"address = agent", "address = cloud-init", NULL};

/* The running fixture, so that a failed assertion (which ends the test
 * early) still stops its simulator in the suite's teardown; tests keep
 * the fixture itself in a static, as the teardown runs after the failed
 * assertion has unwound the test's stack. */
static struct fx *live_fx;

static void fx_cleanup(void)
{
	if (!live_fx)
		return;
	struct fx *f = live_fx;
	live_fx = NULL;
	pve_free(f->c);
	(void)simproc_stop(&f->sp);
}

TestSuite(provision_sim, .fini = fx_cleanup);

static void fx_start(struct fx *f, const char *scenario, const char *tmpl_file,
		     const char *const *edits)
{
	memset(f, 0, sizeof *f);
	cr_assert_eq(simproc_start(&f->sp, scenario, NULL), 0, "simulator did not start");
	live_fx = f;
	simclock_init(&f->sc, &f->sp);
	f->clk = f->sc.clock;
	f->opts = (struct pve_opts){
		.url = f->sp.url,
		.token_id = f->sp.token_id,
		.token_secret = f->sp.token_secret,
		.fingerprint = f->sp.fingerprint,
		.retry_base_ms = 50,
		.retry_max_ms = 200,
		.clock = &f->clk,
	};
	struct pve_error e = {0};
	f->c = pve_new(&f->opts, &e);
	cr_assert_not_null(f->c, "pve_new: %s", e.message ? e.message : "?");
	if (tmpl_file)
		load_tmpl(f, tmpl_file, edits);
	else
		(void)edits;
}

static void fx_stop(struct fx *f)
{
	live_fx = NULL;
	pve_free(f->c);
	tmpl_free(f->t);
	sbuf_free(&f->ev.text);
	cr_assert_eq(simproc_stop(&f->sp), 0, "simulator did not exit cleanly");
	simclock_destroy(&f->sc);
}

static struct up_request up_req(struct fx *f, const char *const *names, size_t n)
{
	return (struct up_request){
		.names = names,
		.n_names = n,
		.tmpl = f->t,
		.pubkey = PUBKEY,
	};
}

/* The run environment of f's up requests: one client, f's clock, its
 * event sink. */
static struct test_up_env up_env_of(struct fx *f)
{
	return (struct test_up_env){
		.parallel = 1,
		.pve_opts = &f->opts,
		.client = f->c,
		.wait = {.clock = &f->clk, .poll_s = 1},
		.on_event = on_event,
		.event_ctx = &f->ev,
	};
}

static const char *js(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_string(v) : NULL;
}

/* The cluster part of GET /_sim/state. */
static json_object *st_cluster(json_object *st)
{
	json_object *cl;
	return json_object_object_get_ex(st, "cluster", &cl) ? cl : st;
}

static json_object *st_guest(json_object *st, int vmid)
{
	json_object *gs = NULL;
	if (!json_object_object_get_ex(st_cluster(st), "guests", &gs))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(gs); i++) {
		json_object *g = json_object_array_get_idx(gs, i), *v;
		if (json_object_object_get_ex(g, "vmid", &v) && json_object_get_int(v) == vmid)
			return g;
	}
	return NULL;
}

static const char *st_conf(json_object *st, int vmid, const char *key)
{
	json_object *g = st_guest(st, vmid), *c;
	if (!g || !json_object_object_get_ex(g, "config", &c))
		return NULL;
	return js(c, key);
}

static void show_failure(const struct up_result *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].status == UP_FAILED)
			cr_log_error("%s: %s", r[i].name,
				     r[i].error.message ? r[i].error.message : "?");
}

Test(provision_sim, clone_configure_start_address)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	const char *names[] = {"web1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct tmpl_kvlist sets = {0};
	tmpl_kvlist_add(&sets, "size", "40G", 0);
	req.sets = &sets;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0, "%s", e.message ? e.message : "");
	cr_assert_eq(res[0].status, UP_CREATED);
	cr_assert_gt(res[0].vmid, 0);
	cr_assert_not_null(res[0].node);
	cr_assert_str_eq(res[0].address, "10.20.0.5");
	cr_assert_eq(res[0].claims, 1);
	const char *want_steps[] = {"find", "clone", "config", "resize", "start", "address"};
	cr_assert_eq(res[0].n_steps, 6, "steps: %zu\n%s", res[0].n_steps, sbuf_str(&f.ev.text));
	for (size_t i = 0; i < 6; i++)
		cr_assert_str_eq(res[0].steps[i].step, want_steps[i]);
	cr_assert_eq(f.ev.steps, 6);
	cr_assert_gt(f.ev.diffs, 0);

	int vmid = res[0].vmid;
	json_object *st = simproc_state(&f.sp);
	json_object *g = st_guest(st, vmid);
	cr_assert_not_null(g);
	cr_assert_str_eq(js(g, "name"), "web1");
	cr_assert_str_eq(js(g, "status"), "running");
	cr_assert_str_eq(st_conf(st, vmid, "cores"), "2");
	cr_assert_str_eq(st_conf(st, vmid, "memory"), "2048");
	cr_assert_str_eq(st_conf(st, vmid, "ciuser"), "root");
	cr_assert_str_eq(st_conf(st, vmid, "ipconfig0"), "ip=10.20.0.5/24,gw=10.20.0.1");
	cr_assert_not_null(st_conf(st, vmid, "sshkeys"));
	cr_assert_not_null(strstr(st_conf(st, vmid, "sshkeys"), "ssh-ed25519"),
			   "sshkeys: %s", st_conf(st, vmid, "sshkeys"));
	const char *net0 = st_conf(st, vmid, "net0");
	cr_assert_not_null(net0);
	cr_assert_eq(strncmp(net0, "virtio=", 7), 0, "virtio NIC with a MAC: %s", net0);
	cr_assert_not_null(strstr(st_conf(st, vmid, "scsi0"), "size=40G"), "%s",
			   st_conf(st, vmid, "scsi0"));
	cr_assert_eq(simproc_count_named(st, "web1"), 1);
	json_object_put(st);

	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "*/clone", -1), 1, "exactly one clone");
	cr_assert_eq(simproc_count_requests(log, "POST", "*/status/start", -1), 1);
	cr_assert_eq(simproc_count_requests(log, "PUT", "*/resize", 200), 1);
	cr_assert_eq(simproc_count_requests(log, "PUT", "*/config", 200), 1, "one config change");
	json_object_put(log);
	cr_assert_gt(f.ev.progress, 0, "the clone reported progress");
	up_results_free(res, 1);

	/* again, same size: nothing changes */
	rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_eq(res[0].status, UP_UNCHANGED);
	cr_assert_eq(res[0].vmid, vmid);
	log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "PUT", "*/resize", -1), 1, "no second resize");
	cr_assert_eq(simproc_count_requests(log, "PUT", "*/config", -1), 1, "no second config change");
	cr_assert_eq(simproc_count_requests(log, "POST", "*/clone", -1), 1);
	json_object_put(log);
	up_results_free(res, 1);
	tmpl_kvlist_free(&sets);
	fx_stop(&f);
}

/* Issue 11: values are checked against the PVE schema before any request:
 * a bad --set value, a bad size and a template value made bad by --var are
 * refused with the key in the message, and PVE sees no POST or PUT. */
Test(provision_sim, bad_values_refused_before_any_request)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", NULL);
	const char *names[] = {"s1"};
	char *longdesc = malloc(8194);
	cr_assert_not_null(longdesc);
	memset(longdesc, 'd', 8193);
	longdesc[8193] = '\0';
	static const struct {
		const char *key, *value, *want;
	} cases[] = {
		{"cores", "abc", "--set cores=abc: 'abc': must be an integer"},
		{"cores", "0", "--set cores=0: 0 is below the minimum 1"},
		{"memory", "-5", "--set memory=-5: -5 is below the minimum 16"},
		{"net0", "virtio,bridge=vmbr0,evil=1", "--set net0=virtio,bridge=vmbr0,evil=1: evil: unknown key"},
		{"net0", "virtio=zz:00:00:00:00:01,bridge=vmbr0", "is not a unicast MAC address"},
		{"ostype", "beos", "--set ostype=beos: 'beos' is not one of: other, "},
		{"size", "banana", "--set size=banana: 'banana' is not a size"},
		{"size", "64", "--set size=64: give the size with its unit, K, M, G or T (e.g. 64G)"},
		{"memory", "2G", "--set memory=2G: memory is a number of MiB, without a unit (2048"},
		{"description", NULL, "8193 characters long, at most 8192 allowed"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct up_request req = up_req(&f, names, 1);
		struct test_up_env env = up_env_of(&f);
		struct tmpl_kvlist sets = {0};
		cr_assert_eq(tmpl_kvlist_add(&sets, cases[i].key,
					     cases[i].value ? cases[i].value : longdesc, 0), 0);
		req.sets = &sets;
		struct up_result *res = NULL;
		struct pve_error e = {0};
		cr_assert_eq(test_up_run(&req, &env, &res, &e), -1, "%s accepted", cases[i].key);
		cr_assert_null(res);
		cr_expect_eq(e.kind, PVE_ERR_CONFIG);
		cr_expect(e.message && strstr(e.message, cases[i].want), "%s: %s", cases[i].key,
			  e.message ? e.message : "(none)");
		pve_error_clear(&e);
		tmpl_kvlist_free(&sets);
	}
	free(longdesc);
	/* a template value that only --var makes bad: file, line and key */
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct tmpl_kvlist vars = {0};
	cr_assert_eq(tmpl_kvlist_add(&vars, "bridge", "vmbr0,evil=1", 0), 0);
	req.vars = &vars;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	cr_assert_eq(test_up_run(&req, &env, &res, &e), -1);
	cr_expect(e.message && strstr(e.message, "ubuntu-24.04.tmpl:35: [pve] net0: ") &&
			  strstr(e.message, ": [pve] net0: evil: unknown key (known: bridge, firewall,"),
		  "%s", e.message ? e.message : "(none)");
	pve_error_clear(&e);
	tmpl_kvlist_free(&vars);

	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*", -1), 0, "nothing created");
	cr_expect_eq(simproc_count_requests(log, "PUT", "*", -1), 0, "nothing changed");
	cr_expect_eq(simproc_count_requests(log, "DELETE", "*", -1), 0);
	json_object_put(log);
	json_object *st = simproc_state(&f.sp);
	cr_expect_eq(simproc_count_named(st, "s1"), 0);
	json_object_put(st);
	fx_stop(&f);
}

/* Issue 36: keys PVE lets root@pam alone set (qemu-server's "only root can
 * set" keys: args, hookscript, affinity, ...) are refused to an API token
 * up front, in the dry run too, with PVE's reason; the simulator refuses
 * them to a token as PVE does. */
Test(provision_sim, root_only_keys_refused_to_a_token_before_any_request)
{
	/* the rule: qemu-server's lists, create_vm's own parameters and the
	 * request's meta ones pass; pve-container's devN is root@pam's */
	static const struct {
		enum pvekey_kind kind;
		const char *key;
		int root;
	} rule[] = {
		{PVEKEY_QEMU, "args", 1},     {PVEKEY_QEMU, "hookscript", 1},
		{PVEKEY_QEMU, "vmgenid", 1},  {PVEKEY_QEMU, "cores", 0},
		{PVEKEY_QEMU, "pool", 0},     {PVEKEY_QEMU, "storage", 0},
		{PVEKEY_QEMU, "scsi3", 0},    {PVEKEY_QEMU, "ipconfig1", 0},
		{PVEKEY_QEMU, "tags", 0},     {PVEKEY_LXC, "dev0", 1},
		{PVEKEY_LXC, "hookscript", 0},
	};
	for (size_t i = 0; i < sizeof rule / sizeof rule[0]; i++) {
		char *why = NULL;
		cr_expect_eq(pvecheck_root_only(rule[i].kind, rule[i].key, &why), rule[i].root, "%s",
			     rule[i].key);
		cr_expect_eq(why != NULL, rule[i].root, "%s", rule[i].key);
		free(why);
	}
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", NULL);
	const char *names[] = {"s1"};
	struct conf cf = {0};
	cf.pve.token_id = (char *)f.sp.token_id;
	static const struct {
		const char *key, *value;
	} cases[] = {
		{"args", "-no-reboot"},
		{"hookscript", "local:snippets/hook.pl"},
		{"affinity", "0-1"},
	};
	for (size_t dry = 0; dry < 2; dry++)
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			struct up_request req = up_req(&f, names, 1);
			struct test_up_env env = up_env_of(&f);
			env.conf = &cf;
			req.no_inject = true;
			req.dry_run = dry;
			struct tmpl_kvlist sets = {0};
			cr_assert_eq(tmpl_kvlist_add(&sets, cases[i].key, cases[i].value, 0), 0);
			req.sets = &sets;
			struct up_result *res = NULL;
			struct pve_error e = {0};
			cr_assert_eq(test_up_run(&req, &env, &res, &e), -1, "%s accepted", cases[i].key);
			cr_assert_null(res);
			char *want = strprintf("--set %s: only root can set '%s' config", cases[i].key,
					       cases[i].key);
			cr_expect_eq(e.kind, PVE_ERR_CONFIG);
			cr_expect(e.message && strstr(e.message, want), "%s", e.message);
			free(want);
			pve_error_clear(&e);
			tmpl_kvlist_free(&sets);
		}
	/* others' keys pass: the dry run plans */
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	env.conf = &cf;
	req.no_inject = true;
	req.dry_run = true;
	struct tmpl_kvlist sets = {0};
	cr_assert_eq(tmpl_kvlist_add(&sets, "cores", "2", 0), 0);
	cr_assert_eq(tmpl_kvlist_add(&sets, "size", "40G", 0), 0);
	req.sets = &sets;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	cr_assert_eq(test_up_run(&req, &env, &res, &e), 0, "%s", e.message ? e.message : "");
	up_results_free(res, 1);
	pve_error_clear(&e);
	tmpl_kvlist_free(&sets);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*", -1), 0, "nothing created");
	cr_expect_eq(simproc_count_requests(log, "PUT", "*", -1), 0, "nothing changed");
	json_object_put(log);
	/* the simulator, as PVE: a token is refused args, even root@pam's */
	long status = 0;
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&f.sp, "PUT", "/nodes/pve1/qemu/190/config", "args=-no-reboot",
			     &status, &ans), 0);
	cr_expect_eq(status, 500, "%s", json_object_to_json_string(ans));
	cr_expect(strstr(json_object_to_json_string(ans), "only root can set 'args' config"),
		  "%s", json_object_to_json_string(ans));
	json_object_put(ans);
	fx_stop(&f);
}

/* A key only PVE 9 has passes the check made before the version is known
 * and is refused once up reads it: on an 8.4 cluster --set allow-ksm
 * stops before anything is created, saying which version has it. */
Test(provision_sim, key_of_another_version_named_before_anything_is_made)
{
	char *demo = NULL;
	size_t len = 0;
	cr_assert_eq(read_file(DEMO, &demo, &len), 0);
	char *at = strstr(demo, "\"pve_version\": \"9.1\"");
	cr_assert_not_null(at, "demo.json is a 9.1 scenario");
	memcpy(at + strlen("\"pve_version\": \""), "8.4", 3);
	char path[] = "/tmp/pvagent-demo84-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(test_write_file(path, demo, 0600), 0);
	free(demo);
	static struct fx f;
	fx_start(&f, path, "templates/ubuntu-24.04.tmpl", NULL);
	unlink(path);
	const char *names[] = {"k1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct tmpl_kvlist sets = {0};
	cr_assert_eq(tmpl_kvlist_add(&sets, "allow-ksm", "0", 0), 0);
	req.sets = &sets;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	(void)test_up_run(&req, &env, &res, &e);
	cr_assert_not_null(res, "%s", e.message ? e.message : "");
	cr_assert_eq(res[0].status, UP_FAILED);
	cr_expect(res[0].error.message &&
			  strstr(res[0].error.message,
				 "--set 'allow-ksm' is a PVE 9 parameter; this cluster runs PVE 8"),
		  "%s", res[0].error.message ? res[0].error.message : "(none)");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*", -1), 0, "nothing created");
	json_object_put(log);
	up_results_free(res, 1);
	pve_error_clear(&e);
	tmpl_kvlist_free(&sets);
	fx_stop(&f);
}

/* Issue 11: --set size below the template's disk warns that disks never
 * shrink (the disk keeps its size; no resize is sent). */
Test(provision_sim, smaller_size_warned_disk_kept)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	const char *names[] = {"web2"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct tmpl_kvlist sets = {0};
	tmpl_kvlist_add(&sets, "size", "10G", 0);
	req.sets = &sets;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0, "%s", e.message ? e.message : "");
	cr_expect(strstr(sbuf_str(&f.ev.text), "web2 resize") &&
			  strstr(sbuf_str(&f.ev.text), "scsi0 kept (larger than 10G; disks never shrink)"),
		  "%s", sbuf_str(&f.ev.text));
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "PUT", "*/resize", -1), 0);
	json_object_put(log);
	json_object *st = simproc_state(&f.sp);
	cr_expect(strstr(st_conf(st, res[0].vmid, "scsi0"), "size=32G"), "%s",
		  st_conf(st, res[0].vmid, "scsi0"));
	json_object_put(st);
	up_results_free(res, 1);
	tmpl_kvlist_free(&sets);
	fx_stop(&f);
}

/* The requests of one `up` that clones, configures and starts (task polls
 * and log reads aside): one listing finds both the name and the clone
 * source; the finished clone is known without looking it up; one listing
 * after it for the duplicate-name race (it must postdate the clone); a
 * guest known stopped is started without reading its status first, and
 * runs once its qmstart task ended well (no status read after it). */
Test(provision_sim, clone_up_request_budget)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	json_object *log = simproc_requests(&f.sp);
	size_t before = json_object_array_length(log);
	json_object_put(log);
	const char *names[] = {"budget1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0, "%s", e.message ? e.message : "");
	cr_assert_eq(res[0].status, UP_CREATED);
	static const char *const want[][2] = {
		{"GET", "/version"},
		{"GET", "/cluster/resources"},
		{"GET", "/cluster/nextid"},
		{"POST", "/clone"},
		{"GET", "/cluster/resources"},
		{"GET", "/config"},
		{"PUT", "/config"},
		{"POST", "/status/start"},
	};
	size_t nw = sizeof want / sizeof want[0];
	log = simproc_requests(&f.sp);
	size_t k = 0;
	struct sbuf seen = {0};
	for (size_t i = before; i < json_object_array_length(log); i++) {
		json_object *r = json_object_array_get_idx(log, i);
		const char *m = js(r, "method"), *p = js(r, "path");
		if (strstr(p, "/tasks/"))
			continue;
		sbuf_addf(&seen, "%s %s\n", m, p);
		size_t lp = strlen(p), ls = k < nw ? strlen(want[k][1]) : 0;
		if (k < nw && !strcmp(m, want[k][0]) && lp >= ls && !strcmp(p + lp - ls, want[k][1]))
			k++;
		else
			k = nw + 1; /* out of order or extra */
	}
	cr_assert_eq(k, nw, "requests:\n%s", sbuf_str(&seen));
	sbuf_free(&seen);
	json_object_put(log);
	up_results_free(res, 1);
	fx_stop(&f);
}

Test(provision_sim, rerun_converges_without_second_guest)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	const char *names[] = {"conv1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	int vmid = res[0].vmid;
	char *node = strdup(res[0].node);
	up_results_free(res, 1);

	/* same again: nothing to do */
	rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_eq(res[0].status, UP_UNCHANGED, "%s", up_status_name(res[0].status));
	cr_assert_eq(res[0].vmid, vmid);
	cr_assert_eq(res[0].n_diff, 0);
	cr_assert_eq(res[0].claims, 0);
	up_results_free(res, 1);

	/* drift: stopped, fewer cores */
	long status = 0;
	json_object *ans = NULL;
	char *p = strprintf("/nodes/%s/qemu/%d/status/stop", node, vmid);
	cr_assert_eq(sim_api(&f.sp, "POST", p, "", &status, &ans), 0);
	cr_assert_eq(status, 200);
	json_object_put(ans);
	free(p);
	simproc_advance(&f.sp, 30);
	p = strprintf("/nodes/%s/qemu/%d/config", node, vmid);
	cr_assert_eq(sim_api(&f.sp, "PUT", p, "cores=1", &status, &ans), 0);
	cr_assert_eq(status, 200);
	json_object_put(ans);
	free(p);

	rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_eq(res[0].status, UP_CONVERGED);
	cr_assert_eq(res[0].vmid, vmid);
	cr_assert_eq(res[0].n_diff, 1, "diff:\n%s", sbuf_str(&f.ev.text));
	cr_assert_str_eq(res[0].diff[0], "cores: 1 -> 2");
	up_results_free(res, 1);

	json_object *st = simproc_state(&f.sp);
	cr_assert_eq(simproc_count_named(st, "conv1"), 1, "never a second guest");
	cr_assert_str_eq(js(st_guest(st, vmid), "status"), "running");
	cr_assert_str_eq(st_conf(st, vmid, "cores"), "2");
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "*/clone", -1), 1, "cloned once in three runs");
	cr_assert_eq(simproc_count_requests(log, "POST", "*/status/start", 200), 2);
	json_object_put(log);
	free(node);
	fx_stop(&f);
}

Test(provision_sim, parallel_rollout_caps_in_flight)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	const char *names[] = {"pa", "pb", "pc", "pd", "pe"};
	struct up_request req = up_req(&f, names, 5);
	struct test_up_env env = up_env_of(&f);
	env.parallel = 2;
	env.client = NULL;
	req.no_start = true;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 5);
	cr_assert_eq(rc, 0);
	cr_assert_eq(f.ev.begins, 5);
	cr_assert_eq(f.ev.dones, 5);
	cr_assert_leq(f.ev.max_in_flight, 2);
	cr_assert_eq(f.ev.max_in_flight, 2, "two ran at once");
	json_object *st = simproc_state(&f.sp);
	for (size_t i = 0; i < 5; i++) {
		cr_assert_eq(res[i].status, UP_CREATED);
		cr_assert_str_eq(res[i].name, names[i]);
		cr_assert_null(res[i].address, "--no-start: no address");
		for (size_t j = 0; j < i; j++)
			cr_assert_neq(res[i].vmid, res[j].vmid);
		cr_assert_eq(simproc_count_named(st, names[i]), 1);
		cr_assert_str_eq(js(st_guest(st, res[i].vmid), "status"), "stopped");
	}
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "*/clone", 200), 5);
	cr_assert_eq(simproc_count_requests(log, "POST", "*/status/start", -1), 0);
	json_object_put(log);
	up_results_free(res, 5);
	fx_stop(&f);
}

/* PVE's nextid answers every worker the same VMID until the first clone
 * exists: the workers of one run never send a clone for a VMID another of
 * them holds. */
Test(provision_sim, parallel_workers_never_claim_the_same_vmid)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	const char *names[] = {"va", "vb", "vc", "vd", "ve", "vf", "vg", "vh"};
	struct up_request req = up_req(&f, names, 8);
	struct test_up_env env = up_env_of(&f);
	env.parallel = 4;
	env.client = NULL;
	req.no_start = true;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 8);
	cr_assert_eq(rc, 0);
	cr_assert_eq(f.ev.max_in_flight, 4, "four ran at once");
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/clone", -1), 8,
		     "one clone request per guest, none refused as 'already exists'");
	cr_expect_eq(simproc_count_requests(log, "GET", "*/cluster/nextid", -1), 8);
	json_object_put(log);
	up_results_free(res, 8);
	fx_stop(&f);
}

Test(provision_sim, lxc_up_on_pve8)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04-ct.tmpl", NULL);
	const char *names[] = {"ct1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct tmpl_kvlist sets = {0};
	tmpl_kvlist_add(&sets, "net0", "name=eth0,bridge=vmbr0,ip=10.30.0.9/24", 0);
	req.sets = &sets;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_eq(res[0].status, UP_CREATED);
	cr_assert_eq(res[0].type, GUEST_LXC);
	cr_assert_str_eq(res[0].address, "10.30.0.9");
	int vmid = res[0].vmid;
	json_object *st = simproc_state(&f.sp);
	json_object *g = st_guest(st, vmid);
	cr_assert_str_eq(js(g, "type"), "lxc");
	cr_assert_str_eq(js(g, "status"), "running");
	cr_assert_str_eq(st_conf(st, vmid, "hostname"), "ct1");
	cr_assert_not_null(strstr(st_conf(st, vmid, "net0"), "name=eth0"));
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "*/lxc", 200), 1);
	cr_assert_eq(simproc_count_requests(log, "PUT", "*/config", -1), 0, "created as the template says");
	cr_assert_eq(simproc_count_requests(log, "GET", "*/interfaces", 200), 1);
	json_object_put(log);
	up_results_free(res, 1);
	tmpl_kvlist_free(&sets);
	fx_stop(&f);
}

Test(provision_sim, openvz_up_on_pve3)
{
	static struct fx f;
	fx_start(&f, PVE3, "templates/debian-7-openvz.tmpl", NULL);
	const char *names[] = {"ovz1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct tmpl_kvlist vars = {0};
	tmpl_kvlist_add(&vars, "ip", "10.0.3.50", 0);
	req.vars = &vars;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_eq(res[0].status, UP_CREATED);
	cr_assert_eq(res[0].type, GUEST_OPENVZ);
	cr_assert_str_eq(res[0].address, "10.0.3.50");
	int vmid = res[0].vmid;
	json_object *st = simproc_state(&f.sp);
	json_object *g = st_guest(st, vmid);
	cr_assert_str_eq(js(g, "type"), "openvz");
	cr_assert_str_eq(js(g, "status"), "running");
	cr_assert_str_eq(st_conf(st, vmid, "hostname"), "ovz1");
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "*/openvz", 200), 1);
	cr_assert_eq(simproc_count_requests(log, "POST", "*/lxc", -1), 0);
	json_object_put(log);
	up_results_free(res, 1);
	tmpl_kvlist_free(&vars);
	fx_stop(&f);
}

Test(provision_sim, down_running_and_missing)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	const char *names[] = {"gone1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	req.no_start = false;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	int vmid = res[0].vmid;
	up_results_free(res, 1);

	const struct test_up_env denv = {.client = f.c, .wait = {.clock = &f.clk, .poll_s = 1}};
	struct up_result r;
	cr_assert_eq(test_down_run("gone1", true, false, &denv, &r), 0, "%s", r.error.message ? r.error.message : "");
	cr_assert_eq(r.status, UP_DELETED);
	cr_assert_eq(r.vmid, vmid);
	cr_assert_eq(r.n_steps, 3);
	up_result_free(&r);
	json_object *st = simproc_state(&f.sp);
	cr_assert_null(st_guest(st, vmid));
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "*/status/shutdown", -1), 1);
	char *dpath = strprintf("*/qemu/%d", vmid);
	cr_assert_eq(simproc_count_requests(log, "DELETE", dpath, 200), 1);
	free(dpath);
	json_object_put(log);

	/* missing: not found (exit 2), absent, nothing sent but lookups */
	cr_assert_eq(test_down_run("gone1", true, false, &denv, &r), -1);
	cr_assert_eq(r.status, UP_ABSENT);
	cr_assert_eq(r.outcome, JOB_OUT_USAGE);
	cr_assert_eq(r.error.kind, PVE_ERR_NOT_FOUND);
	cr_assert_str_eq(r.error.message, "no guest named 'gone1'");
	up_result_free(&r);
	log = simproc_requests(&f.sp);
	int del = 0;
	for (size_t i = 0; i < json_object_array_length(log); i++)
		if (!strcmp(js(json_object_array_get_idx(log, i), "method"), "DELETE"))
			del++;
	cr_assert_eq(del, 1, "one DELETE in all");
	json_object_put(log);
	fx_stop(&f);
}

Test(provision_sim, names_checked_before_anything_is_sent)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	struct up_result *res = NULL;
	struct pve_error e = {0};
	json_object *log = simproc_requests(&f.sp);
	size_t before = json_object_array_length(log);
	json_object_put(log);
	const char *bad[] = {"ok1", "bad_name"};
	struct up_request req = up_req(&f, bad, 2);
	struct test_up_env env = up_env_of(&f);
	cr_assert_eq(test_up_run(&req, &env, &res, &e), -1);
	cr_assert_null(res);
	cr_assert_eq(e.kind, PVE_ERR_CONFIG);
	cr_assert_not_null(strstr(e.message, "bad_name"));
	pve_error_clear(&e);
	const char *dup[] = {"same", "SAME"};
	req = up_req(&f, dup, 2);
	cr_assert_eq(test_up_run(&req, &env, &res, &e), -1);
	cr_assert_not_null(strstr(e.message, "twice"), "%s", e.message);
	pve_error_clear(&e);
	const char *two[] = {"a1", "a2"};
	req = up_req(&f, two, 2);
	req.vmid = 500;
	cr_assert_eq(test_up_run(&req, &env, &res, &e), -1);
	cr_assert_eq(e.kind, PVE_ERR_CONFIG);
	pve_error_clear(&e);
	struct tmpl_kvlist sets = {0};
	tmpl_kvlist_add(&sets, "nonsense", "1", 0);
	req = up_req(&f, two, 1);
	req.sets = &sets;
	cr_assert_eq(test_up_run(&req, &env, &res, &e), -1);
	cr_assert_not_null(strstr(e.message, "nonsense"));
	pve_error_clear(&e);
	tmpl_kvlist_free(&sets);
	log = simproc_requests(&f.sp);
	cr_assert_eq(json_object_array_length(log), before, "nothing sent to PVE");
	json_object_put(log);
	fx_stop(&f);
}

Test(provision_sim, duplicate_name_in_cluster_fails_naming_vmids)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	long status = 0;
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&f.sp, "POST", "/nodes/pve1/qemu",
			     "vmid=911&name=twin&memory=256", &status, &ans), 0);
	cr_assert_eq(status, 200);
	json_object_put(ans);
	cr_assert_eq(sim_api(&f.sp, "POST", "/nodes/pve2/qemu",
			     "vmid=912&name=twin&memory=256", &status, &ans), 0);
	cr_assert_eq(status, 200);
	json_object_put(ans);
	simproc_advance(&f.sp, 30);
	const char *names[] = {"twin"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct up_result *res = NULL;
	struct pve_error e = {0};
	cr_assert_eq(test_up_run(&req, &env, &res, &e), -1);
	cr_assert_eq(res[0].status, UP_FAILED);
	cr_assert_not_null(strstr(res[0].error.message, "911"));
	cr_assert_not_null(strstr(res[0].error.message, "912"));
	up_results_free(res, 1);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "*/clone", -1), 0);
	json_object_put(log);
	fx_stop(&f);
}

struct same_arg {
	struct fx *f;
	struct up_result *res;
	int rc;
};

static void *up_same(void *a)
{
	struct same_arg *sa = a;
	static const char *const names[] = {"samename"};
	struct up_request req = up_req(sa->f, names, 1);
	struct test_up_env env = up_env_of(sa->f);
	env.client = NULL; /* each run its own client, like two processes */
	req.no_start = true;
	env.on_event = NULL;
	struct pve_error e = {0};
	sa->rc = test_up_run(&req, &env, &sa->res, &e);
	pve_error_clear(&e);
	return NULL;
}

Test(provision_sim, two_runs_for_one_name_leave_one_guest)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	struct same_arg a[2] = {{&f, NULL, -1}, {&f, NULL, -1}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, up_same, &a[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	show_failure(a[0].res, 1);
	show_failure(a[1].res, 1);
	cr_assert_eq(a[0].rc, 0);
	cr_assert_eq(a[1].rc, 0);
	cr_assert_eq(a[0].res[0].vmid, a[1].res[0].vmid, "both runs end on one guest");
	json_object *st = simproc_state(&f.sp);
	cr_assert_eq(simproc_count_named(st, "samename"), 1, "never two guests of one name");
	cr_assert_not_null(st_guest(st, a[0].res[0].vmid));
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	int clones = simproc_count_requests(log, "POST", "*/clone", 200);
	int deletes = 0;
	for (size_t i = 0; i < json_object_array_length(log); i++)
		if (!strcmp(js(json_object_array_get_idx(log, i), "method"), "DELETE"))
			deletes++;
	cr_assert_eq(clones - deletes, 1, "%d clones, %d deletes", clones, deletes);
	json_object_put(log);
	up_results_free(a[0].res, 1);
	up_results_free(a[1].res, 1);
	fx_stop(&f);
}

Test(provision_sim, nic_model_change_keeps_mac)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/freebsd-9.0.tmpl", NULL);
	const char *names[] = {"bsd9"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct tmpl_kvlist vars = {0}, sets = {0};
	tmpl_kvlist_add(&vars, "ip", "10.40.0.9", 0);
	tmpl_kvlist_add(&sets, "net0", "virtio,bridge=vmbr0", 0);
	req.vars = &vars;
	req.sets = &sets;
	req.no_start = true;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	const char *line = NULL;
	for (size_t i = 0; i < res[0].n_diff; i++)
		if (!strncmp(res[0].diff[i], "net0: ", 6))
			line = res[0].diff[i];
	cr_assert_not_null(line, "net0 changed");
	/* "net0: e1000=MAC,bridge=vmbr0 -> virtio=MAC,bridge=vmbr0" */
	const char *o = strstr(line, "e1000="), *n = strstr(line, "-> virtio=");
	cr_assert_not_null(o, "%s", line);
	cr_assert_not_null(n, "%s", line);
	cr_assert_eq(strncasecmp(o + 6, n + 10, 17), 0, "MAC kept: %s", line);
	json_object *st = simproc_state(&f.sp);
	const char *net0 = st_conf(st, res[0].vmid, "net0");
	cr_assert_eq(strncasecmp(net0, n + 3, 24), 0, "%s vs %s", net0, n + 3);
	json_object_put(st);
	up_results_free(res, 1);
	tmpl_kvlist_free(&vars);
	tmpl_kvlist_free(&sets);
	fx_stop(&f);
}

Test(provision_sim, create_from_iso)
{
	static struct fx f;
	fx_start(&f, DEMO, NULL, NULL);
	char *path = strprintf("%s/iso-test.tmpl", f.sp.dir);
	FILE *o = fopen(path, "w");
	cr_assert_not_null(o);
	fputs("[template]\nkind = qemu\nos = freebsd\nos_version = 14.1\n"
	      "[source]\niso = local:iso/FreeBSD-14.1-RELEASE-amd64-disc1.iso\n"
	      "storage = local-lvm\n"
	      "[pve]\nmemory = 1024\ncores = 1\nostype = other\nvirtio0 = ${storage}:16\n"
	      "net0 = virtio,bridge=vmbr0\nboot = order=virtio0;ide2\n"
	      "[guest]\naddress = static\nip = 10.50.0.3\n",
	      o);
	cr_assert_eq(fclose(o), 0);
	char *err = NULL;
	cr_assert_eq(tmpl_load_file(path, &f.t, &err), 0, "%s", err ? err : "?");
	free(path);
	const char *names[] = {"iso1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	req.node = "pve2";
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_eq(res[0].status, UP_CREATED);
	cr_assert_str_eq(res[0].node, "pve2");
	cr_assert_str_eq(res[0].address, "10.50.0.3");
	cr_assert_eq(res[0].n_diff, 0, "created as the template says");
	int vmid = res[0].vmid;
	json_object *st = simproc_state(&f.sp);
	cr_assert_str_eq(js(st_guest(st, vmid), "status"), "running");
	cr_assert_not_null(strstr(st_conf(st, vmid, "ide2"), "FreeBSD-14.1"));
	cr_assert_not_null(strstr(st_conf(st, vmid, "virtio0"), "size=16G"));
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "/nodes/pve2/qemu", 200), 1);
	cr_assert_eq(simproc_count_requests(log, "PUT", "*/config", -1), 0);
	json_object_put(log);
	up_results_free(res, 1);
	fx_stop(&f);
}

/* up --node onto a node without shared storage with the template VM:
 * PVE refuses a clone there ("can't clone to non-shared storage"), so the
 * clone is made on the template's node and migrated offline. */
Test(provision_sim, clone_to_a_node_without_shared_storage_is_cloned_then_moved)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	const char *names[] = {"far1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	req.node = "pve2";
	req.no_start = true;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_eq(res[0].status, UP_CREATED);
	cr_assert_str_eq(res[0].node, "pve2");
	int vmid = res[0].vmid;
	json_object *st = simproc_state(&f.sp);
	cr_expect_str_eq(js(st_guest(st, vmid), "node"), "pve2");
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	cr_expect_eq(simproc_count_requests(log, "POST", "/nodes/pve1/qemu/9024/clone", 200), 1,
		     "cloned on the template's node");
	cr_expect_eq(simproc_count_requests(log, "POST", "*/migrate", 200), 1, "then moved");
	json_object_put(log);
	up_results_free(res, 1);
	fx_stop(&f);
}

/* A container template written for LXC makes an OpenVZ container on PVE 3
 * (the same command on both). */
Test(provision_sim, lxc_template_on_pve3_makes_openvz)
{
	static struct fx f;
	fx_start(&f, PVE3, NULL, NULL);
	char *path = strprintf("%s/ct-test.tmpl", f.sp.dir);
	FILE *o = fopen(path, "w");
	cr_assert_not_null(o);
	fputs("[template]\nkind = lxc\nos = debian\nos_version = 7\n"
	      "[source]\nostemplate = local:vztmpl/debian-7.0-standard_7.0-2_amd64.tar.gz\n"
	      "storage = local\n"
	      "[pve]\nhostname = ${name}\nmemory = 512\nswap = 256\ncores = 2\n"
	      "rootfs = ${storage}:4\nnet0 = name=eth0,bridge=vmbr0,ip=10.60.0.7/24\n"
	      "unprivileged = 1\n"
	      "[guest]\naddress = agent\n",
	      o);
	cr_assert_eq(fclose(o), 0);
	char *err = NULL;
	cr_assert_eq(tmpl_load_file(path, &f.t, &err), 0, "%s", err ? err : "?");
	free(path);
	const char *names[] = {"ct3"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_eq(res[0].type, GUEST_OPENVZ);
	cr_assert_str_eq(res[0].address, "10.60.0.7");
	int vmid = res[0].vmid;
	json_object *st = simproc_state(&f.sp);
	cr_assert_str_eq(js(st_guest(st, vmid), "type"), "openvz");
	cr_assert_str_eq(st_conf(st, vmid, "cpus"), "2");
	cr_assert_str_eq(st_conf(st, vmid, "disk"), "4");
	cr_assert_not_null(strstr(st_conf(st, vmid, "netif"), "bridge=vmbr0"));
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "*/openvz", 200), 1);
	json_object_put(log);
	up_results_free(res, 1);
	/* again: converged, nothing to change */
	rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_eq(res[0].status, UP_UNCHANGED, "%s", up_status_name(res[0].status));
	up_results_free(res, 1);
	fx_stop(&f);
}

Test(provision_sim, converge_running_guest_reports_pending_keys)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	const char *names[] = {"run1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_null(res[0].pending, "a fresh guest has nothing pending");
	int vmid = res[0].vmid;
	char *p = strprintf("/nodes/%s/qemu/%d/config", res[0].node, vmid);
	up_results_free(res, 1);
	/* drift while running */
	long status = 0;
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&f.sp, "PUT", p, "memory=1024", &status, &ans), 0);
	cr_assert_eq(status, 200);
	json_object_put(ans);
	free(p);
	rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_eq(res[0].status, UP_CONVERGED);
	cr_assert_eq(res[0].n_diff, 1);
	cr_assert_str_eq(res[0].diff[0], "memory: 1024 -> 2048");
	json_object *st = simproc_state(&f.sp);
	json_object *g = st_guest(st, vmid), *pend;
	cr_assert_str_eq(js(g, "status"), "running");
	/* memory is not hot-pluggable here: PVE keeps it pending */
	cr_assert(json_object_object_get_ex(g, "pending", &pend));
	cr_assert_str_eq(js(pend, "memory"), "2048");
	cr_assert_not_null(res[0].pending);
	cr_assert_str_eq(res[0].pending, "memory");
	json_object_put(st);
	up_results_free(res, 1);
	fx_stop(&f);
}

struct ten_arg {
	struct fx *f;
	const char *name[1];
	char buf[16];
	struct up_result *res;
	int rc;
};

static void *up_one_run(void *a)
{
	struct ten_arg *ta = a;
	struct up_request req = up_req(ta->f, ta->name, 1);
	struct test_up_env env = up_env_of(ta->f);
	env.client = NULL; /* own client, like a separate process */
	req.no_start = true;
	env.on_event = NULL;
	struct pve_error e = {0};
	ta->rc = test_up_run(&req, &env, &ta->res, &e);
	pve_error_clear(&e);
	return NULL;
}

/* Ten `pvagent up` runs started at once all succeed with distinct VMIDs. */
Test(provision_sim, ten_runs_at_once_get_distinct_vmids)
{
	static struct fx f;
	fx_start(&f, DEMO, "templates/ubuntu-24.04.tmpl", ubuntu_static);
	enum { N = 10 };
	struct ten_arg a[N];
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		memset(&a[i], 0, sizeof a[i]);
		a[i].f = &f;
		snprintf(a[i].buf, sizeof a[i].buf, "ten%d", i);
		a[i].name[0] = a[i].buf;
	}
	for (int i = 0; i < N; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, up_one_run, &a[i]), 0);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	json_object *st = simproc_state(&f.sp);
	for (int i = 0; i < N; i++) {
		show_failure(a[i].res, 1);
		cr_assert_eq(a[i].rc, 0, "%s failed", a[i].buf);
		cr_assert_eq(a[i].res[0].status, UP_CREATED);
		for (int j = 0; j < i; j++)
			cr_assert_neq(a[i].res[0].vmid, a[j].res[0].vmid);
		cr_assert_eq(simproc_count_named(st, a[i].buf), 1);
	}
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "*/clone", 200), N, "exactly %d clones ran", N);
	json_object_put(log);
	for (int i = 0; i < N; i++)
		up_results_free(a[i].res, 1);
	fx_stop(&f);
}

/* ---- up runs inject: a real sshd guest (tests/support/guestenv) -------------------- */

/* The test's guest and state the suite's fini undoes even when an
 * assertion ends the test early (each test runs in its own process). */
static struct guestenv ge;
static char *immutable; /* host path made immutable by a test */

static void set_immutable(const char *path, bool on)
{
	const char *argv[] = {"chattr", on ? "+i" : "-i", path, NULL};
	char *out = NULL;
	int rc = test_run(argv, NULL, &out);
	if (rc != 0)
		fprintf(stderr, "chattr %s %s: %s\n", on ? "+i" : "-i", path, out ? out : "");
	free(out);
	if (on)
		cr_assert_eq(rc, 0, "chattr +i needs a file system with attributes");
}

static void inj_cleanup(void)
{
	if (immutable) {
		set_immutable(immutable, false);
		free(immutable);
		immutable = NULL;
	}
	guestenv_stop(&ge);
	fx_cleanup();
}

TestSuite(provision_inject, .fini = inj_cleanup, .timeout = 120);

static void sshguest_start(const char *fixture, const char *addr)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (sshd with ChrootDirectory)");
	struct guestenv_opts o = {.fixture = fixture, .addr = addr};
	cr_assert_eq(guestenv_start(&ge, &o), 0, "cannot start guest %s (see stderr)", fixture);
}

/* A FreeBSD 14 template cloned from the demo scenario's freebsd-14-base
 * whose guest answers SSH at addr:port (static address); with_files adds
 * a [loader.conf] and an [rc.conf] section. */
static void inj_tmpl(struct fx *f, const char *addr, int port, bool with_files)
{
	char *path = strprintf("%s/inj.tmpl", f->sp.dir);
	char *text = strprintf(
		"[template]\nkind = qemu\nos = freebsd\nos_version = 14.1\n"
		"[source]\nclone = freebsd-14-base\nfull = yes\nstorage = local-lvm\n"
		"[pve]\ndescription = ${name}: FreeBSD 14.1 (pvagent template inj)\ncores = 2\n"
		"[guest]\nuser = root\nport = %d\naddress = static\nip = %s\n%s",
		port, addr,
		with_files ? "[loader.conf]\nvirtio_console_load = \"YES\"\n"
			     "[rc.conf]\nsshd_enable = \"YES\"\n"
			   : "");
	cr_assert(path && text);
	FILE *o = fopen(path, "w");
	cr_assert_not_null(o);
	cr_assert_eq(fputs(text, o) < 0, 0);
	cr_assert_eq(fclose(o), 0);
	char *err = NULL;
	tmpl_free(f->t);
	f->t = NULL;
	cr_assert_eq(tmpl_load_file(path, &f->t, &err), 0, "%s", err ? err : "?");
	free(text);
	free(path);
}

/* f on the demo scenario, the guest (FreeBSD 14) answering SSH at addr,
 * and inj_tmpl's template for it. */
static void inj_start(struct fx *f, const char *addr, bool with_files)
{
	sshguest_start("freebsd-14", addr);
	fx_start(f, DEMO, NULL, NULL);
	inj_tmpl(f, ge.sd.addr, ge.sd.port, with_files);
}

/* pvagent.conf [ssh] for the guest: its client key and known_hosts. */
static struct conf inj_conf(void)
{
	struct conf c = {0};
	c.ssh.user = "root";
	c.ssh.identity = ge.sd.identity;
	c.ssh.known_hosts = ge.known_hosts;
	c.ssh.host_key_policy = CONF_HKP_STRICT;
	c.ssh.timeout = 10;
	return c;
}

static const struct up_step *step_of(const struct up_result *r, const char *name)
{
	for (size_t i = 0; i < r->n_steps; i++)
		if (!strcmp(r->steps[i].step, name))
			return &r->steps[i];
	return NULL;
}

/* Has text a line that starts with head and ends with tail? */
static bool has_line(const char *text, const char *head, const char *tail)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t n = strcspn(l, "\n"), h = strlen(head), t = strlen(tail);
		if (n >= h + t && !strncmp(l, head, h) && !strncmp(l + n - t, tail, t))
			return true;
	}
	return false;
}

static char *guest_text(const char *path)
{
	char *t = NULL;
	cr_assert_eq(guestenv_read(&ge, path, &t), 0, "cannot read %s in the guest", path);
	return t;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

Test(provision_inject, up_injects_then_rerun_is_unchanged)
{
	static struct fx f;
	inj_start(&f, "127.0.1.140", true);
	struct conf c = inj_conf();
	const char *names[] = {"inj1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	env.conf = &c;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0, "%s", e.message ? e.message : "");
	cr_assert_eq(res[0].status, UP_CREATED);
	cr_assert_str_eq(res[0].address, ge.sd.addr);
	const char *want_steps[] = {"find", "clone", "config", "start", "address", "inject"};
	cr_assert_eq(res[0].n_steps, 6, "steps:\n%s", sbuf_str(&f.ev.text));
	for (size_t i = 0; i < 6; i++)
		cr_assert_str_eq(res[0].steps[i].step, want_steps[i]);
	cr_assert(res[0].inject.ran);
	cr_assert_eq(res[0].inject.status, INJ_CHANGED);
	cr_assert_eq(res[0].inject.outcome, JOB_OUT_DONE);
	cr_assert_null(res[0].inject.failed_step);
	cr_assert_str_eq(res[0].inject.summary,
			 "changed: FreeBSD 14.1-RELEASE-p5: /boot/loader.conf, /etc/rc.conf");
	const char *t = sbuf_str(&f.ev.text);
	cr_assert(strstr(t, "inj1 inject ") && strstr(t, "changed: FreeBSD 14.1-RELEASE-p5"),
		  "the inject step and its summary are reported:\n%s", t);
	cr_assert(has_line(t, "inj1 detect ", "s FreeBSD 14.1-RELEASE-p5"),
		  "inject's own steps are the step events of its job:\n%s", t);
	cr_assert_eq(count_of(t, "waiting for SSH"), 0, "the guest answered at once:\n%s", t);
	cr_assert_eq(up_results_outcome(res, 1), JOB_OUT_DONE);
	/* the files in the guest */
	char *rcconf = guest_text("/etc/rc.conf");
	cr_expect(strstr(rcconf, "sshd_enable=\"YES\"\n"), "%s", rcconf);
	cr_expect(strstr(rcconf, "hostname=\"inj1\"\n"), "%s", rcconf);
	free(rcconf);
	char *loader = guest_text("/boot/loader.conf");
	cr_expect(strstr(loader, "virtio_console_load=\"YES\"\n"), "%s", loader);
	free(loader);
	cr_expect(guestenv_exists(&ge, "/etc/rc.conf.pvagent.bak"));
	int vmid = res[0].vmid;
	up_results_free(res, 1);

	/* again: the guest matches, and inject runs and says so */
	char *before = guestenv_snapshot(&ge);
	cr_assert_not_null(before);
	rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0);
	cr_assert_eq(res[0].status, UP_UNCHANGED, "%s", up_status_name(res[0].status));
	cr_assert_eq(res[0].vmid, vmid);
	cr_assert(res[0].inject.ran);
	cr_assert_eq(res[0].inject.status, INJ_UNCHANGED);
	cr_assert_not_null(step_of(&res[0], "inject"));
	cr_assert(!strncmp(res[0].inject.summary, "unchanged: FreeBSD 14.1-RELEASE-p5: ", 36), "%s",
		  res[0].inject.summary);
	char *after = guestenv_snapshot(&ge);
	cr_assert_str_eq(after, before, "the second run changed the guest");
	free(before);
	free(after);
	up_results_free(res, 1);
	json_object *st = simproc_state(&f.sp);
	cr_assert_eq(simproc_count_named(st, "inj1"), 1);
	json_object_put(st);
	fx_stop(&f);
}

/* The event sink of an up that is stopped once its inject job has read
 * the guest's files: what a kill does between two of inject's steps. */
struct stop_at_read {
	struct evlog *ev;
	volatile sig_atomic_t stop;
};

static void stop_after_read(void *ctx, const struct job_event *ev)
{
	struct stop_at_read *s = ctx;
	on_event(s->ev, ev);
	if (ev->kind == JOB_EV_STEP && !strcmp(ev->workflow, "inject") && !strcmp(ev->step, "read"))
		s->stop = 1;
}

/* up's inject step is an inject job of its own, a child of the up job: an
 * up interrupted during it is resumed by the same command, which resumes
 * that inject job where it stopped (one inject job, each of its steps run
 * once) and ends done. */
Test(provision_inject, up_interrupted_in_inject_resumes_the_same_inject_job)
{
	static struct fx f;
	inj_start(&f, "127.0.1.147", true);
	struct conf c = inj_conf();
	char *db = strprintf("%s/state.db", f.sp.dir), *serr = NULL;
	struct store *st = NULL;
	cr_assert_eq(store_open(db, &st, &serr), 0, "%s", serr ? serr : "?");
	struct stop_at_read sr = {.ev = &f.ev};
	const char *names[] = {"inj7"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	env.conf = &c;
	env.store = st;
	env.on_event = stop_after_read;
	env.event_ctx = &sr;
	env.stop = &sr.stop;
	char *before = guestenv_snapshot(&ge);
	cr_assert_not_null(before);
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	cr_assert_eq(rc, -1);
	cr_assert_not_null(res, "%s", e.message ? e.message : "");
	cr_assert_eq(res[0].outcome, JOB_OUT_INTERRUPTED, "%s",
		     job_outcome_name(res[0].outcome));
	cr_assert_str_eq(res[0].failed_step, "inject");
	long long up_id = res[0].job;
	cr_assert_gt(up_id, 0);
	up_results_free(res, 1);
	char *mid = guestenv_snapshot(&ge);
	cr_assert_str_eq(mid, before, "stopped after the read: nothing written yet");
	free(mid);
	free(before);
	const char *one = "SELECT count(*) FROM jobs WHERE workflow = 'inject'";
	cr_assert_eq(test_db_int(db, one, NULL), 1);
	char *id = strprintf("%lld", up_id);
	cr_assert_eq(test_db_int(db, "SELECT count(*) FROM jobs WHERE workflow = 'inject' AND "
				 "state = 'interrupted' AND json_extract(params, '$.parent') = "
				 "CAST(? AS INTEGER)", id), 1, "the up job's child, interrupted");

	/* the same command again */
	sr.stop = 0;
	env.on_event = on_event;
	env.event_ctx = &f.ev;
	rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0, "%s", e.message ? e.message : "");
	cr_assert_eq(res[0].job, up_id, "the interrupted up job was resumed");
	cr_assert_eq(res[0].status, UP_CREATED);
	cr_assert_eq(res[0].inject.status, INJ_CHANGED);
	cr_assert_str_eq(res[0].inject.summary,
			 "changed: FreeBSD 14.1-RELEASE-p5: /boot/loader.conf, /etc/rc.conf");
	cr_assert_not_null(step_of(&res[0], "inject"));
	up_results_free(res, 1);
	cr_assert_eq(test_db_int(db, one, NULL), 1, "no second inject job");
	cr_assert_eq(test_db_int(db, "SELECT count(*) FROM jobs WHERE workflow = 'inject' AND "
				 "state = 'done' AND json_extract(params, '$.parent') = "
				 "CAST(? AS INTEGER)", id), 1, "the same inject job, done");
	cr_assert_eq(test_db_int(db, "SELECT count(*) FROM jobs WHERE workflow = 'up'", NULL), 1);
	/* each of inject's steps ran once, across the two runs */
	const char *steps[] = {"connect", "detect", "read", "plan", "write", "verify"};
	for (size_t i = 0; i < 6; i++)
		cr_assert_eq(test_db_int(db, "SELECT count(*) FROM events e JOIN jobs j ON e.job = "
					 "j.id WHERE j.workflow = 'inject' AND e.kind = 'step' AND "
					 "e.step = ?", steps[i]), 1, "step %s", steps[i]);
	char *rcconf = guest_text("/etc/rc.conf");
	cr_expect(strstr(rcconf, "hostname=\"inj7\"\n"), "%s", rcconf);
	free(rcconf);
	free(id);
	free(db);
	store_close(st);
	fx_stop(&f);
}

Test(provision_inject, failed_inject_fails_up_naming_the_step_files_unchanged)
{
	static struct fx f;
	inj_start(&f, "127.0.1.141", true);
	struct conf c = inj_conf();
	/* root ignores permission bits: make /boot immutable so that writing
	 * /boot/loader.conf fails (after /etc/rc.conf... whichever order,
	 * nothing may stay changed) */
	immutable = guestenv_path(&ge, "/boot");
	cr_assert_not_null(immutable);
	set_immutable(immutable, true);
	char *before = guestenv_snapshot(&ge);
	cr_assert_not_null(before);
	const char *names[] = {"inj2"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	env.conf = &c;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	cr_assert_eq(rc, -1);
	cr_assert_not_null(res);
	cr_assert_eq(res[0].status, UP_FAILED);
	cr_assert(res[0].inject.ran);
	cr_assert_eq(res[0].inject.status, INJ_FAILED);
	cr_assert_eq(res[0].inject.outcome, JOB_OUT_FAILED);
	cr_assert_str_eq(res[0].inject.failed_step, "write");
	cr_assert_null(step_of(&res[0], "inject"), "a failed step is not reported as done");
	char *msg = pve_error_format(&res[0].error);
	cr_assert(!strncmp(msg, "inject: write /boot/loader.conf: ", 33), "%s", msg);
	cr_assert(strstr(msg, "restored") || strstr(msg, "no file was changed"), "%s", msg);
	free(msg);
	/* the guest files are as they were, but the VM up created stays */
	cr_assert_eq(up_results_outcome(res, 1), JOB_OUT_NEEDS_ATTENTION);
	cr_assert(res[0].left && strstr(res[0].left, "was created"), "%s",
		  res[0].left ? res[0].left : "(nothing left?)");
	char *after = guestenv_snapshot(&ge);
	cr_assert_str_eq(after, before, "inject left the guest changed");
	free(before);
	free(after);
	up_results_free(res, 1);
	fx_stop(&f);
}

/* Bind a TCP socket on addr (port 0: any) and report its port; listening
 * when listen_too, else closed again (a port where nothing listens). */
static int tcp_port(const char *addr, bool listen_too, int *fd_out)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	cr_assert_eq(inet_pton(AF_INET, addr, &sa.sin_addr), 1);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0, "bind %s: %s", addr,
		     strerror(errno));
	socklen_t sl = sizeof sa;
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	if (listen_too) {
		cr_assert_eq(listen(fd, 8), 0);
		*fd_out = fd;
	} else {
		close(fd);
		*fd_out = -1;
	}
	return ntohs(sa.sin_port);
}

/* Nothing ever connected to a listening socket. */
static void expect_no_connection(int fd, const char *why)
{
	int c = accept(fd, NULL, NULL);
	int saved = errno;
	if (c >= 0)
		close(c);
	cr_expect(c < 0 && (saved == EAGAIN || saved == EWOULDBLOCK), "%s: SSH was attempted", why);
}

/* Guests whose template has no file sections (and --no-inject, and
 * --no-start) never touch SSH: a listener at the guest's address sees no
 * connection, and no SSH settings are needed. */
Test(provision_inject, no_file_sections_or_no_inject_never_touch_ssh)
{
	static struct fx f;
	fx_start(&f, DEMO, NULL, NULL);
	int fd;
	int port = tcp_port("127.0.1.143", true, &fd);
	inj_tmpl(&f, "127.0.1.143", port, false);
	const char *names[] = {"plain1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct up_result *res = NULL;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0, "%s", e.message ? e.message : "");
	cr_assert_eq(res[0].status, UP_CREATED);
	cr_assert_str_eq(res[0].address, "127.0.1.143");
	cr_assert(!res[0].inject.ran);
	cr_assert_null(step_of(&res[0], "inject"));
	up_results_free(res, 1);
	expect_no_connection(fd, "no file sections");

	/* file sections, but --no-inject: the same (no conf needed either) */
	inj_tmpl(&f, "127.0.1.143", port, true);
	names[0] = "plain2";
	req = up_req(&f, names, 1);
	req.no_inject = true;
	rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0, "%s", e.message ? e.message : "");
	cr_assert_eq(res[0].status, UP_CREATED);
	cr_assert(!res[0].inject.ran);
	cr_assert_null(step_of(&res[0], "inject"));
	up_results_free(res, 1);
	expect_no_connection(fd, "--no-inject");

	/* and --no-start: no address, no inject */
	names[0] = "plain3";
	req = up_req(&f, names, 1);
	req.no_start = true;
	rc = test_up_run(&req, &env, &res, &e);
	show_failure(res, 1);
	cr_assert_eq(rc, 0, "%s", e.message ? e.message : "");
	cr_assert(!res[0].inject.ran);
	up_results_free(res, 1);
	expect_no_connection(fd, "--no-start");
	close(fd);
	fx_stop(&f);
}

/* A template with guest files needs SSH settings: refused before anything
 * is sent to PVE. */
Test(provision_inject, guest_files_without_ssh_settings_refused_up_front)
{
	static struct fx f;
	fx_start(&f, DEMO, NULL, NULL);
	inj_tmpl(&f, "127.0.1.144", 22, true);
	json_object *log = simproc_requests(&f.sp);
	size_t before = json_object_array_length(log);
	json_object_put(log);
	const char *names[] = {"nossh1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	struct up_result *res = NULL;
	struct pve_error e = {0};
	cr_assert_eq(test_up_run(&req, &env, &res, &e), -1);
	cr_assert_null(res);
	cr_assert_eq(e.kind, PVE_ERR_CONFIG);
	cr_assert(strstr(e.message, "guest files to inject"), "%s", e.message);
	pve_error_clear(&e);
	struct conf c = {0}; /* no known_hosts */
	env.conf = &c;
	cr_assert_eq(test_up_run(&req, &env, &res, &e), -1);
	cr_assert(strstr(e.message, "known_hosts"), "%s", e.message);
	pve_error_clear(&e);
	log = simproc_requests(&f.sp);
	cr_assert_eq(json_object_array_length(log), before, "nothing was sent");
	json_object_put(log);
	fx_stop(&f);
}

/* up of one guest (name) whose address (addr) refuses SSH, with an
 * inject template and no known_hosts entry: test_up_run's return; *res
 * its results, *kh the known_hosts path to free. */
static int up_mute(struct fx *f, const char *addr, const char *name, double wait_s,
		   bool no_wait, struct up_result **res, char **kh)
{
	int fd;
	int port = tcp_port(addr, false, &fd);
	inj_tmpl(f, addr, port, true);
	static struct conf c;
	c = (struct conf){0};
	*kh = strprintf("%s/known_hosts", f->sp.dir);
	c.ssh.known_hosts = *kh;
	c.ssh.timeout = 10;
	static const char *names[1];
	names[0] = name;
	struct up_request req = up_req(f, names, 1);
	struct test_up_env env = up_env_of(f);
	env.conf = &c;
	req.ssh_wait_s = wait_s;
	req.no_wait_ssh = no_wait;
	struct pve_error e = {0};
	int rc = test_up_run(&req, &env, res, &e);
	pve_error_clear(&e);
	return rc;
}

/* A guest that never answers SSH: refused connections are retried every
 * poll_s (simulated time: the sleeps advance the simulator) until
 * ssh_wait_s; the guest exists and runs, so up needs attention (exit 3),
 * naming the VM and what is left, with one progress event per 10 s of
 * waiting, not one per attempt. */
Test(provision_inject, ssh_never_answers_bounded_wait_needs_attention)
{
	static struct fx f;
	fx_start(&f, DEMO, NULL, NULL);
	struct up_result *res = NULL;
	char *kh = NULL;
	cr_assert_eq(up_mute(&f, "127.0.1.145", "mute1", 25, false, &res, &kh), -1);
	cr_assert_str_eq(res[0].inject.failed_step, "connect");
	cr_assert_eq(res[0].inject.outcome, JOB_OUT_NEEDS_ATTENTION);
	cr_assert_eq(up_results_outcome(res, 1), JOB_OUT_NEEDS_ATTENTION);
	char *msg = pve_error_format(&res[0].error);
	cr_assert(!strncmp(msg, "inject: connect: root@127.0.1.145 port ", 39), "%s", msg);
	/* about one attempt a second (each costs a little simulated time) */
	const char *at = strstr(msg, "did not answer SSH within 25 s (");
	cr_assert(at, "%s", msg);
	int attempts = atoi(at + strlen("did not answer SSH within 25 s ("));
	cr_assert(attempts >= 15 && attempts <= 25, "%s", msg);
	char *vm = strprintf("VM %d on pve1 runs without its guest files: 'pvagent inject "
			     "mute1' once it answers", res[0].vmid);
	cr_assert(strstr(msg, vm), "%s", msg);
	free(vm);
	free(msg);
	const char *t = sbuf_str(&f.ev.text);
	size_t said = count_of(t, "waiting for SSH on 127.0.1.145");
	cr_assert(said >= 2 && said <= 3, "one progress line per 10 s, not %zu:\n%s", said, t);
	cr_assert(strstr(t, "waiting for SSH on 127.0.1.145 (0 s of 25, attempt 1): "), "%s", t);
	up_results_free(res, 1);
	free(kh);
	fx_stop(&f);
}

/* --no-wait-ssh: one attempt; a guest that does not answer yet is done,
 * its files left for `pvagent inject`. */
Test(provision_inject, no_wait_ssh_is_done_without_files)
{
	static struct fx f;
	fx_start(&f, DEMO, NULL, NULL);
	struct up_result *res = NULL;
	char *kh = NULL;
	cr_assert_eq(up_mute(&f, "127.0.1.147", "mute2", 0, true, &res, &kh), 0);
	cr_assert_eq(up_results_outcome(res, 1), JOB_OUT_DONE);
	cr_assert_eq(res[0].error.kind, PVE_OK);
	const char *t = sbuf_str(&f.ev.text);
	cr_expect_eq(count_of(t, "waiting for SSH"), 0, "%s", t);
	cr_expect_str_eq(res[0].inject.summary,
			 "not written: no SSH answer yet (pvagent inject mute2)");
	up_results_free(res, 1);
	free(kh);
	fx_stop(&f);
}

/* A host key that does not match known_hosts is not waited out: one
 * attempt, exit 4, the guest untouched. */
Test(provision_inject, host_key_mismatch_is_not_retried)
{
	static struct fx f;
	inj_start(&f, "127.0.1.146", true);
	char *other = strprintf("%s/other_key", ge.sd.etc);
	char *other_pub = strprintf("%s.pub", other);
	char *kh = strprintf("%s/wrong_known_hosts", ge.sd.etc);
	cr_assert(other && other_pub && kh);
	cr_assert_eq(test_keygen(other, "ed25519", 0), 0);
	const char *pubs[] = {other_pub, NULL};
	cr_assert_eq(sshd_write_known_hosts(&ge.sd, kh, pubs, false), 0);
	struct conf c = inj_conf();
	c.ssh.known_hosts = kh;
	char *before = guestenv_snapshot(&ge);
	const char *names[] = {"hk1"};
	struct up_request req = up_req(&f, names, 1);
	struct test_up_env env = up_env_of(&f);
	env.conf = &c;
	struct up_result *res = NULL;
	struct pve_error e = {0};
	cr_assert_eq(test_up_run(&req, &env, &res, &e), -1);
	cr_assert_eq(res[0].status, UP_FAILED);
	cr_assert_str_eq(res[0].inject.failed_step, "connect");
	cr_assert_eq(res[0].inject.outcome, JOB_OUT_UNREACHABLE);
	char *msg = pve_error_format(&res[0].error);
	cr_assert(!strncmp(msg, "inject: connect: root@127.0.1.146 port ", 39), "%s", msg);
	cr_assert_null(strstr(msg, "did not answer"), "%s", msg);
	free(msg);
	const char *t = sbuf_str(&f.ev.text);
	cr_assert_eq(count_of(t, "waiting for SSH"), 0, "retried a host key mismatch:\n%s", t);
	char *after = guestenv_snapshot(&ge);
	cr_assert_str_eq(after, before);
	free(before);
	free(after);
	up_results_free(res, 1);
	free(other);
	free(other_pub);
	free(kh);
	fx_stop(&f);
}
