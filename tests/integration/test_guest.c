/* test_guest.c - Criterion tests of agent/guest.c: pure helpers (names,
 * addresses) and, against the PVE simulator (tests/pvesim), VMID claims
 * (parallel, "already exists", lost answers), what a finished create or
 * clone returns without looking it up, lock waits, power (start without a
 * status read when the guest is known stopped), delete, finding by name
 * and the PVE version switch. Every simulator test checks
 * the simulator's state and request log, not only return codes. */
#include <criterion/criterion.h>

#include "guest.h"
#include "log.h"
#include "simclock.h"
#include "simproc.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- pure helpers ---------------------------------------------------------- */

Test(guest_pure, type_names)
{
	enum guest_type t;
	cr_assert_str_eq(guest_type_name(GUEST_QEMU), "qemu");
	cr_assert_str_eq(guest_type_name(GUEST_LXC), "lxc");
	cr_assert_str_eq(guest_type_name(GUEST_OPENVZ), "openvz");
	cr_assert_eq(guest_type_parse("lxc", &t), 0);
	cr_assert_eq(t, GUEST_LXC);
	cr_assert_eq(guest_type_parse("openvz", &t), 0);
	cr_assert_eq(t, GUEST_OPENVZ);
	cr_assert_eq(guest_type_parse("kvm", &t), -1);
	cr_assert_eq(guest_type_parse(NULL, &t), -1);
	cr_assert_eq(guest_container_type(8), GUEST_LXC);
	cr_assert_eq(guest_container_type(4), GUEST_LXC);
	cr_assert_eq(guest_container_type(3), GUEST_OPENVZ);
	cr_assert_eq(guest_container_type(2), GUEST_OPENVZ);
}

Test(guest_pure, names_are_dns_names)
{
	const char *why = NULL;
	cr_assert(guest_name_valid("web1", &why));
	cr_assert_null(why);
	cr_assert(guest_name_valid("a", NULL));
	cr_assert(guest_name_valid("Web-01", NULL));
	char label63[64], label64[65];
	memset(label63, 'a', 63);
	label63[63] = 0;
	memset(label64, 'a', 64);
	label64[64] = 0;
	cr_assert(guest_name_valid(label63, NULL));
	cr_assert_not(guest_name_valid(label64, &why));
	cr_assert_not_null(strstr(why, "63"));
	cr_assert_not(guest_name_valid("", &why));
	cr_assert_not(guest_name_valid(NULL, &why));
	cr_assert_not(guest_name_valid("-web", &why));
	cr_assert_not(guest_name_valid("web-", &why));
	cr_assert_not(guest_name_valid("web_1", &why));
	cr_assert(guest_name_valid("web.example", NULL));
	cr_assert(guest_name_valid("a.b-c.d9", NULL));
	cr_assert_not(guest_name_valid("web..example", &why));
	cr_assert_not(guest_name_valid(".web", &why));
	cr_assert_not(guest_name_valid("web.", &why));
	cr_assert_not(guest_name_valid("web.-x", &why));
	cr_assert_not(guest_name_valid("web-.x", &why));
	char dotted[80];
	snprintf(dotted, sizeof dotted, "%s.x", label64);
	cr_assert_not(guest_name_valid(dotted, &why));
	cr_assert_not_null(strstr(why, "63"));
	cr_assert(guest_arg_is_vmid("190", NULL));
	cr_assert_not(guest_arg_is_vmid("190a", NULL));
	cr_assert_not(guest_arg_is_vmid("", NULL));
	cr_assert_not(guest_name_valid("web 1", &why));
	cr_assert_not(guest_name_valid("w\xc3\xa9" "b", &why));
	cr_assert_not(guest_name_valid("a;rm", &why));
}

static json_object *J(const char *s)
{
	json_object *o = json_tokener_parse(s);
	cr_assert_not_null(o, "bad test JSON: %s", s);
	return o;
}

Test(guest_pure, pick_address_qemu_agent)
{
	json_object *a = J("[{\"name\":\"lo\",\"ip-addresses\":[{\"ip-address\":\"127.0.0.1\","
			   "\"ip-address-type\":\"ipv4\",\"prefix\":8}]},"
			   "{\"name\":\"vtnet0\",\"hardware-address\":\"bc:24:11:00:00:01\","
			   "\"ip-addresses\":[{\"ip-address\":\"fe80::1\",\"ip-address-type\":"
			   "\"ipv6\"},{\"ip-address\":\"2001:db8::5\",\"ip-address-type\":\"ipv6\"},"
			   "{\"ip-address\":\"10.1.2.3\",\"ip-address-type\":\"ipv4\"}]}]");
	char *ip = guest_pick_address(a);
	cr_assert_str_eq(ip, "10.1.2.3");
	free(ip);
	json_object_put(a);

	/* only IPv6: the global one, never link-local */
	a = J("[{\"name\":\"eth0\",\"ip-addresses\":[{\"ip-address\":\"fe80::1\"},"
	      "{\"ip-address\":\"2001:db8::5\"}]}]");
	ip = guest_pick_address(a);
	cr_assert_str_eq(ip, "2001:db8::5");
	free(ip);
	json_object_put(a);

	/* the simulator's loopback guest addresses are usable */
	a = J("[{\"name\":\"em0\",\"ip-addresses\":[{\"ip-address\":\"127.0.1.7\"}]}]");
	ip = guest_pick_address(a);
	cr_assert_str_eq(ip, "127.0.1.7");
	free(ip);
	json_object_put(a);

	a = J("[{\"name\":\"lo\",\"ip-addresses\":[{\"ip-address\":\"127.0.0.1\"}]},"
	      "{\"name\":\"eth0\",\"ip-addresses\":[{\"ip-address\":\"169.254.1.1\"}]}]");
	cr_assert_null(guest_pick_address(a));
	json_object_put(a);
	cr_assert_null(guest_pick_address(NULL));
	a = J("{}");
	cr_assert_null(guest_pick_address(a));
	json_object_put(a);
}

Test(guest_pure, pick_address_lxc_interfaces)
{
	json_object *a = J("[{\"name\":\"lo\",\"inet\":\"127.0.0.1/8\",\"hwaddr\":\"00:00:00:00:00:00\"},"
			   "{\"name\":\"eth0\",\"inet\":\"192.168.5.20/24\",\"inet6\":\"fe80::2/64\","
			   "\"hwaddr\":\"bc:24:11:00:00:02\"}]");
	char *ip = guest_pick_address(a);
	cr_assert_str_eq(ip, "192.168.5.20");
	free(ip);
	json_object_put(a);
}

Test(guest_pure, config_address)
{
	json_object *c = J("{\"ipconfig0\":\"ip=10.0.0.5/24,gw=10.0.0.1\"}");
	char *ip = guest_config_address(c, GUEST_QEMU);
	cr_assert_str_eq(ip, "10.0.0.5");
	free(ip);
	json_object_put(c);
	c = J("{\"ipconfig0\":\"ip=dhcp\"}");
	cr_assert_null(guest_config_address(c, GUEST_QEMU));
	json_object_put(c);
	c = J("{\"net0\":\"name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=172.16.0.9/16,type=veth\"}");
	ip = guest_config_address(c, GUEST_LXC);
	cr_assert_str_eq(ip, "172.16.0.9");
	free(ip);
	json_object_put(c);
	c = J("{\"ip_address\":\"10.9.8.7 10.9.8.8\"}");
	ip = guest_config_address(c, GUEST_OPENVZ);
	cr_assert_str_eq(ip, "10.9.8.7");
	free(ip);
	json_object_put(c);
	c = J("{}");
	cr_assert_null(guest_config_address(c, GUEST_OPENVZ));
	cr_assert_null(guest_config_address(c, GUEST_QEMU));
	json_object_put(c);
}

Test(guest_pure, ref_copy_and_clear)
{
	struct guest_ref a = {.vmid = 101, .type = GUEST_LXC, .template = true};
	a.node = strdup("pve1");
	a.name = strdup("ct1");
	a.lock = strdup("create");
	struct guest_ref b;
	cr_assert_eq(guest_ref_copy(&b, &a), 0);
	cr_assert_eq(b.vmid, 101);
	cr_assert_str_eq(b.node, "pve1");
	cr_assert_str_eq(b.name, "ct1");
	cr_assert_str_eq(b.lock, "create");
	cr_assert_null(b.status);
	cr_assert(b.template);
	cr_assert_neq(a.node, b.node);
	guest_ref_clear(&a);
	cr_assert_null(a.node);
	cr_assert_eq(a.vmid, 0);
	guest_ref_clear(&b);
	guest_ref_clear(&b); /* twice is fine */
}

/* ---- against the simulator ---------------------------------------------- */

#define DEMO "tests/pvesim/scenarios/demo.json"
#define PVE3 "tests/pvesim/scenarios/pve3.json"

struct fx {
	struct simproc sp;
	struct simclock sc;
	struct pve_clock clk;
	struct pve_opts opts;
	struct pve *c;
	struct guest_wait w;
};

/* The running fixture, so that a failed assertion (which ends the test
 * early) still stops its simulator in the suite's teardown. */
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

TestSuite(guest_sim, .fini = fx_cleanup);

static void fx_start(struct fx *f, const char *scenario)
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
	f->w = (struct guest_wait){.clock = &f->clk, .poll_s = 1};
}

static void fx_stop(struct fx *f)
{
	live_fx = NULL;
	pve_free(f->c);
	cr_assert_eq(simproc_stop(&f->sp), 0, "simulator did not exit cleanly");
	simclock_destroy(&f->sc);
}

/* The cluster part of GET /_sim/state. */
static json_object *st_cluster(json_object *st)
{
	json_object *cl;
	return json_object_object_get_ex(st, "cluster", &cl) ? cl : st;
}

/* Simulator guest object by vmid (borrowed from st), or NULL. */
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

static const char *js(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_string(v) : NULL;
}

static const char *req_param(json_object *r, const char *k)
{
	json_object *p;
	if (!json_object_object_get_ex(r, "params", &p))
		return NULL;
	return js(p, k);
}

/* Name without '-' and '.', lower case ("ubuntu-24.04-base" ->
 * "ubuntu2404base"), so tests find a template however the scenario spells
 * it. */
static void squash(const char *s, char *out, size_t n)
{
	size_t j = 0;
	for (; *s && j + 1 < n; s++)
		if (*s != '-' && *s != '.' && *s != '_')
			out[j++] = (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
	out[j] = 0;
}

static int find_template(struct fx *f, const char *name, struct guest_ref *g)
{
	struct pve_error e = {0};
	struct guest_list l;
	char want[64], have[64];
	squash(name, want, sizeof want);
	cr_assert_eq(guest_list(f->c, NULL, &l, &e), 0);
	memset(g, 0, sizeof *g);
	for (size_t i = 0; i < l.n; i++) {
		if (!l.v[i].template || !l.v[i].name)
			continue;
		squash(l.v[i].name, have, sizeof have);
		if (!strcmp(have, want)) {
			cr_assert_eq(guest_ref_copy(g, &l.v[i]), 0);
			break;
		}
	}
	guest_list_free(&l);
	cr_assert_gt(g->vmid, 0, "template %s not in the scenario", name);
	return g->vmid;
}

Test(guest_sim, version_list_and_find)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct pve_error e = {0};
	int major = 0;
	cr_assert_eq(guest_pve_major(f.c, &major, &e), 0);
	cr_assert_eq(major, 9);
	cr_assert_eq(guest_pve_major(f.c, &major, &e), 0); /* cached */
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "GET", "/version", -1), 1, "version asked once");
	json_object_put(log);

	struct guest_list l;
	cr_assert_eq(guest_list(f.c, NULL, &l, &e), 0);
	cr_assert_geq(l.n, 4);
	for (size_t i = 1; i < l.n; i++)
		cr_assert_lt(l.v[i - 1].vmid, l.v[i].vmid, "sorted by vmid");
	guest_list_free(&l);

	struct guest_ref g, t;
	find_template(&f, "freebsd14-base", &t);
	cr_assert_eq(guest_find(f.c, t.name, &g, &e), 1);
	cr_assert_eq(g.vmid, t.vmid);
	guest_ref_clear(&t);
	cr_assert(g.template);
	cr_assert_eq(g.type, GUEST_QEMU);
	cr_assert_not_null(g.node);
	guest_ref_clear(&g);
	cr_assert_eq(guest_find(f.c, "no-such-guest", &g, &e), 0);
	cr_assert_null(g.node);
	fx_stop(&f);
}

Test(guest_sim, version_pve3)
{
	struct fx f;
	fx_start(&f, PVE3);
	struct pve_error e = {0};
	int major = 0;
	cr_assert_eq(guest_pve_major(f.c, &major, &e), 0);
	cr_assert_eq(major, 3);
	cr_assert_eq(guest_container_type(major), GUEST_OPENVZ);
	fx_stop(&f);
}

/* Create a small qemu guest with a chosen name. */
static int mkparams(void *ctx, int vmid, struct pve_params *p, struct pve_error *err)
{
	(void)ctx;
	(void)err;
	pve_params_add(p, "memory", "512");
	pve_params_addf(p, "description", "made for VMID %d", vmid);
	return 0;
}

static int create_named(struct fx *f, struct pve *c, const char *name, int *claims,
			struct pve_error *e)
{
	struct guest_create_req cr = {
		.type = GUEST_QEMU,
		.node = "pve1",
		.name = name,
		.params = mkparams,
	};
	struct guest_ref g;
	int rc = guest_create(c, &cr, &f->w, &g, claims, e);
	int vmid = rc == 0 ? g.vmid : -1;
	if (rc == 0) {
		cr_assert_str_eq(g.name, name);
		cr_assert_null(g.lock);
	}
	guest_ref_clear(&g);
	return vmid;
}

struct par_arg {
	struct fx *f;
	char name[32];
	int vmid;
	int claims;
	struct pve_error err;
};

static void *par_create(void *a)
{
	struct par_arg *pa = a;
	struct pve_error e = {0};
	struct pve *c = pve_new(&pa->f->opts, &e); /* one client per thread */
	if (!c) {
		pve_error_move(&pa->err, &e);
		pa->vmid = -1;
		return NULL;
	}
	pa->vmid = create_named(pa->f, c, pa->name, &pa->claims, &pa->err);
	pve_free(c);
	return NULL;
}

Test(guest_sim, ten_parallel_claims_get_distinct_vmids)
{
	struct fx f;
	fx_start(&f, DEMO);
	enum { N = 10 };
	struct par_arg a[N];
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		memset(&a[i], 0, sizeof a[i]);
		a[i].f = &f;
		snprintf(a[i].name, sizeof a[i].name, "par%d", i);
	}
	for (int i = 0; i < N; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, par_create, &a[i]), 0);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	int total_claims = 0;
	json_object *st = simproc_state(&f.sp);
	for (int i = 0; i < N; i++) {
		cr_assert_gt(a[i].vmid, 0, "%s failed: %s", a[i].name,
			     a[i].err.message ? a[i].err.message : "?");
		total_claims += a[i].claims;
		for (int j = 0; j < i; j++)
			cr_assert_neq(a[i].vmid, a[j].vmid, "VMID %d twice", a[i].vmid);
		json_object *g = st_guest(st, a[i].vmid);
		cr_assert_not_null(g);
		cr_assert_str_eq(js(g, "name"), a[i].name);
		cr_assert_eq(simproc_count_named(st, a[i].name), 1);
		pve_error_clear(&a[i].err);
	}
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "/nodes/pve1/qemu", 200), N,
		     "exactly %d creates succeeded", N);
	cr_assert_eq(simproc_count_requests(log, "POST", "/nodes/pve1/qemu", -1), total_claims,
		     "every create request is counted as a claim");
	json_object_put(log);
	fx_stop(&f);
}

Test(guest_sim, already_exists_moves_to_next_vmid)
{
	struct fx f;
	fx_start(&f, DEMO);
	cr_assert_eq(simproc_fault(&f.sp,
				   "{\"method\":\"POST\",\"path\":\"^/nodes/[^/]+/qemu$\",\"nth\":1,"
				   "\"action\":\"status\",\"status\":500,\"message\":\"unable to "
				   "create VM 1 - VM 1 already exists on node 'pve2'\"}"),
		     0);
	struct pve_error e = {0};
	int claims = 0;
	int vmid = create_named(&f, f.c, "exists1", &claims, &e);
	cr_assert_gt(vmid, 0, "%s", e.message ? e.message : "?");
	cr_assert_eq(claims, 2);
	json_object *log = simproc_requests(&f.sp);
	int first = -1, second = -1;
	for (size_t i = 0; i < json_object_array_length(log); i++) {
		json_object *r = json_object_array_get_idx(log, i);
		if (strcmp(js(r, "method"), "POST") != 0 || strcmp(js(r, "path"), "/nodes/pve1/qemu") != 0)
			continue;
		const char *v = req_param(r, "vmid");
		cr_assert_not_null(v);
		if (first < 0)
			first = atoi(v);
		else
			second = atoi(v);
	}
	json_object_put(log);
	cr_assert_eq(second, first + 1, "the next VMID after %d, got %d", first, second);
	cr_assert_eq(vmid, second);
	json_object *st = simproc_state(&f.sp);
	cr_assert_null(st_guest(st, first), "nothing was created at %d", first);
	cr_assert_eq(simproc_count_named(st, "exists1"), 1);
	json_object_put(st);
	fx_stop(&f);
}

Test(guest_sim, fixed_vmid_taken_fails)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct guest_ref t;
	int tid = find_template(&f, "ubuntu2404-base", &t);
	guest_ref_clear(&t);
	struct guest_create_req cr = {
		.type = GUEST_QEMU, .node = "pve1", .name = "fixed1", .vmid = {.vmid = tid}};
	struct guest_ref g;
	struct pve_error e = {0};
	int claims = 0;
	cr_assert_eq(guest_create(f.c, &cr, &f.w, &g, &claims, &e), -1);
	cr_assert_eq(e.kind, PVE_ERR_EXISTS);
	cr_assert_not_null(strstr(e.message, "is taken"), "%s", e.message);
	cr_assert_eq(claims, 1);
	pve_error_clear(&e);
	json_object *st = simproc_state(&f.sp);
	cr_assert_eq(simproc_count_named(st, "fixed1"), 0);
	json_object_put(st);
	fx_stop(&f);
}

Test(guest_sim, lost_answer_create_is_recognised_as_ours)
{
	struct fx f;
	fx_start(&f, DEMO);
	cr_assert_eq(simproc_fault(&f.sp, "{\"method\":\"POST\",\"path\":\"^/nodes/[^/]+/qemu$\","
					  "\"nth\":1,\"action\":\"reset\",\"after\":true}"),
		     0);
	struct pve_error e = {0};
	int claims = 0;
	int vmid = create_named(&f, f.c, "lost1", &claims, &e);
	cr_assert_gt(vmid, 0, "%s", e.message ? e.message : "?");
	json_object *st = simproc_state(&f.sp);
	cr_assert_eq(simproc_count_named(st, "lost1"), 1, "no duplicate");
	json_object_put(st);
	json_object *log = simproc_requests(&f.sp);
	/* the first create ran; its lost answer was resolved by looking, so
	 * the request was never sent again */
	int posts = 0;
	for (size_t i = 0; i < json_object_array_length(log); i++) {
		json_object *r = json_object_array_get_idx(log, i);
		if (strcmp(js(r, "method"), "POST") != 0 || strcmp(js(r, "path"), "/nodes/pve1/qemu") != 0)
			continue;
		posts++;
		cr_assert_eq(atoi(req_param(r, "vmid")), vmid, "same VMID resent");
	}
	cr_assert_eq(posts, 1);
	json_object_put(log);
	fx_stop(&f);
}

Test(guest_sim, lost_answer_clone_is_recognised_as_ours)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct guest_ref t;
	find_template(&f, "ubuntu2404-base", &t);
	char *rx = strprintf("{\"method\":\"POST\",\"path\":\"^/nodes/[^/]+/qemu/%d/clone$\","
			     "\"nth\":1,\"action\":\"reset\",\"after\":true}",
			     t.vmid);
	cr_assert_eq(simproc_fault(&f.sp, rx), 0);
	free(rx);
	struct guest_clone_req cr = {.source = &t, .name = "lostclone", .full = true};
	struct guest_ref g;
	struct pve_error e = {0};
	int claims = 0;
	cr_assert_eq(guest_clone(f.c, &cr, &f.w, &g, &claims, &e), 0, "%s",
		     e.message ? e.message : "?");
	cr_assert_null(g.lock);
	json_object *st = simproc_state(&f.sp);
	cr_assert_eq(simproc_count_named(st, "lostclone"), 1, "no duplicate");
	json_object *sg = st_guest(st, g.vmid);
	cr_assert_not_null(sg);
	cr_assert_null(js(sg, "lock"));
	json_object_put(st);
	char *path = strprintf("/nodes/%s/qemu/%d/clone", t.node, t.vmid);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", path, -1), 1,
		     "sent once: the lost answer was resolved by looking");
	json_object_put(log);
	free(path);
	guest_ref_clear(&g);
	guest_ref_clear(&t);
	fx_stop(&f);
}

static void count_lock_progress(void *ctx, const char *step, double pct, const char *text)
{
	(void)pct;
	if (step && !strcmp(step, "lock") && text && strstr(text, "clone"))
		++*(int *)ctx;
}

Test(guest_sim, config_waits_for_clone_lock)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct guest_ref t;
	find_template(&f, "ubuntu2404-base", &t);
	/* someone else starts a full clone; it holds the "clone" lock */
	long status = 0;
	json_object *ans = NULL;
	char *path = strprintf("/nodes/%s/qemu/%d/clone", t.node, t.vmid);
	cr_assert_eq(sim_api(&f.sp, "POST", path, "newid=4242&name=locked1&full=1", &status, &ans), 0);
	cr_assert_eq(status, 200);
	json_object_put(ans);
	free(path);
	json_object *st = simproc_state(&f.sp);
	cr_assert_str_eq(js(st_guest(st, 4242), "lock"), "clone");
	json_object_put(st);

	struct guest_ref g = {.vmid = 4242, .type = GUEST_QEMU};
	g.node = strdup(t.node);
	struct pve_params p = {0};
	pve_params_add(&p, "cores", "3");
	struct pve_error e = {0};
	int lock_progress = 0;
	struct guest_wait w = f.w;
	w.progress = count_lock_progress;
	w.progress_ctx = &lock_progress;
	cr_assert_eq(guest_set_config(f.c, &g, &p, NULL, NULL, false, &w, &e), 0, "%s",
		     e.message ? e.message : "?");
	pve_params_free(&p);
	cr_assert_gt(lock_progress, 0, "the lock wait reported progress");
	st = simproc_state(&f.sp);
	json_object *sg = st_guest(st, 4242);
	cr_assert_null(js(sg, "lock"));
	json_object *conf;
	cr_assert(json_object_object_get_ex(sg, "config", &conf));
	cr_assert_str_eq(js(conf, "cores"), "3");
	json_object_put(st);
	path = strprintf("/nodes/%s/qemu/4242/config", t.node);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_geq(simproc_count_requests(log, "PUT", path, -1), 2, "refused while locked, then sent again");
	cr_assert_eq(simproc_count_requests(log, "PUT", path, 200), 1);
	cr_assert_geq(simproc_count_requests(log, "GET", "/nodes/pve1/qemu/4242/status/current", -1) +
			      simproc_count_requests(log, "GET", "/nodes/pve2/qemu/4242/status/current", -1),
		      1, "the lock was polled");
	json_object_put(log);
	free(path);
	guest_ref_clear(&g);
	guest_ref_clear(&t);
	fx_stop(&f);
}

Test(guest_sim, lock_wait_is_bounded)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct guest_ref t;
	find_template(&f, "ubuntu2404-base", &t);
	long status = 0;
	json_object *ans = NULL;
	char *path = strprintf("/nodes/%s/qemu/%d/clone", t.node, t.vmid);
	cr_assert_eq(sim_api(&f.sp, "POST", path, "newid=4343&name=locked2&full=1", &status, &ans), 0);
	cr_assert_eq(status, 200);
	json_object_put(ans);
	free(path);
	struct guest_ref g = {.vmid = 4343, .type = GUEST_QEMU};
	g.node = strdup(t.node);
	struct guest_wait w = f.w;
	w.lock_timeout_s = 0.5; /* shorter than any full clone */
	w.poll_s = 0.1;
	struct pve_error e = {0};
	cr_assert_eq(guest_wait_unlocked(f.c, &g, &w, &e), -1);
	cr_assert_eq(e.kind, PVE_ERR_LOCKED);
	cr_assert_not_null(strstr(e.message, "clone"), "%s", e.message);
	pve_error_clear(&e);
	guest_ref_clear(&g);
	guest_ref_clear(&t);
	fx_stop(&f);
}

Test(guest_sim, start_shutdown_delete_and_missing)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct pve_error e = {0};
	int vmid = create_named(&f, f.c, "power1", NULL, &e);
	cr_assert_gt(vmid, 0, "%s", e.message ? e.message : "?");
	struct guest_ref g;
	cr_assert_eq(guest_find(f.c, "power1", &g, &e), 1);
	cr_assert_eq(guest_start(f.c, &g, &f.w, &e), 0, "%s", e.message ? e.message : "?");
	cr_assert_str_eq(g.status, "running");
	cr_assert_eq(guest_start(f.c, &g, &f.w, &e), 0, "already running is fine");
	json_object *st = simproc_state(&f.sp);
	cr_assert_str_eq(js(st_guest(st, vmid), "status"), "running");
	json_object_put(st);
	bool forced = true, deleted = false;
	cr_assert_eq(guest_shutdown(f.c, &g, &f.w, &forced, &e), 0, "%s",
		     e.message ? e.message : "?");
	cr_assert_str_eq(g.status, "stopped");
	cr_assert_eq(guest_delete(f.c, &g, true, &f.w, &deleted, &e), 0, "%s",
		     e.message ? e.message : "?");
	cr_assert(deleted);
	st = simproc_state(&f.sp);
	cr_assert_null(st_guest(st, vmid));
	json_object_put(st);
	/* again: does not exist -> done */
	cr_assert_eq(guest_delete(f.c, &g, true, &f.w, &deleted, &e), 0, "%s",
		     e.message ? e.message : "?");
	cr_assert_not(deleted);
	char *sp = strprintf("/nodes/pve1/qemu/%d/status/start", vmid);
	char *dp = strprintf("/nodes/pve1/qemu/%d", vmid);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", sp, -1), 1, "second start sent nothing");
	cr_assert_eq(simproc_count_requests(log, "DELETE", dp, 200), 1);
	json_object_put(log);
	free(sp);
	free(dp);
	guest_ref_clear(&g);
	fx_stop(&f);
}

Test(guest_sim, duplicate_names_are_an_error)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct pve_error e = {0};
	long status = 0;
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&f.sp, "POST", "/nodes/pve1/qemu",
			     "vmid=901&name=twin&memory=256", &status, &ans), 0);
	cr_assert_eq(status, 200);
	json_object_put(ans);
	cr_assert_eq(sim_api(&f.sp, "POST", "/nodes/pve2/qemu",
			     "vmid=902&name=twin&memory=256", &status, &ans), 0);
	cr_assert_eq(status, 200, "%ld %s", status, json_object_to_json_string(ans));
	json_object_put(ans);
	simproc_advance(&f.sp, 30);
	struct guest_ref g;
	cr_assert_eq(guest_find(f.c, "twin", &g, &e), -1);
	cr_assert_not_null(strstr(e.message, "901"), "%s", e.message);
	cr_assert_not_null(strstr(e.message, "902"), "%s", e.message);
	pve_error_clear(&e);
	fx_stop(&f);
}

Test(guest_sim, shutdown_that_fails_falls_back_to_stop)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct pve_error e = {0};
	int vmid = create_named(&f, f.c, "stubborn", NULL, &e);
	cr_assert_gt(vmid, 0, "%s", e.message ? e.message : "?");
	struct guest_ref g;
	cr_assert_eq(guest_find_by_vmid(f.c, vmid, &g, &e), 1);
	cr_assert_eq(guest_start(f.c, &g, &f.w, &e), 0, "%s", e.message ? e.message : "?");
	cr_assert_eq(simproc_fault(&f.sp, "{\"method\":\"POST\",\"path\":\"/status/shutdown$\","
					  "\"action\":\"task_fail\",\"message\":\"VM quit/powerdown "
					  "failed - got timeout\"}"),
		     0);
	bool forced = false;
	cr_assert_eq(guest_shutdown(f.c, &g, &f.w, &forced, &e), 0, "%s",
		     e.message ? e.message : "?");
	cr_assert(forced);
	cr_assert_str_eq(g.status, "stopped");
	json_object *st = simproc_state(&f.sp);
	cr_assert_str_eq(js(st_guest(st, vmid), "status"), "stopped");
	json_object_put(st);
	char *sd = strprintf("/nodes/pve1/qemu/%d/status/shutdown", vmid);
	char *sp = strprintf("/nodes/pve1/qemu/%d/status/stop", vmid);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", sd, -1), 1, "shutdown sent once, never again");
	cr_assert_eq(simproc_count_requests(log, "POST", sp, 200), 1);
	json_object_put(log);
	free(sd);
	free(sp);
	guest_ref_clear(&g);
	fx_stop(&f);
}

Test(guest_sim, address_from_guest_agent)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct pve_error e = {0};
	struct guest_ref g;
	cr_assert_eq(guest_find_by_vmid(f.c, 190, &g, &e), 1);
	/* no agent configured: the address step fails fast, naming the cause */
	struct guest_wait w = f.w;
	w.address_timeout_s = 5;
	char *addr = NULL;
	json_object *log = simproc_requests(&f.sp);
	size_t before = json_object_array_length(log);
	json_object_put(log);
	cr_assert_eq(guest_address(f.c, &g, GUEST_ADDR_AGENT, NULL, &w, &addr, &e), -1);
	cr_assert_eq(e.kind, PVE_ERR_CONFIG);
	cr_assert_not_null(strstr(e.message, "agent=1"), "%s", e.message);
	pve_error_clear(&e);
	log = simproc_requests(&f.sp);
	cr_assert_eq(json_object_array_length(log), before + 1, "asked once, no polling");
	json_object_put(log);
	/* enable the agent, restart, ask again */
	struct pve_params p = {0};
	pve_params_add(&p, "agent", "1");
	cr_assert_eq(guest_set_config(f.c, &g, &p, NULL, NULL, false, &f.w, &e), 0, "%s",
		     e.message ? e.message : "?");
	pve_params_free(&p);
	cr_assert_eq(guest_stop(f.c, &g, &f.w, &e), 0, "%s", e.message ? e.message : "?");
	cr_assert_eq(guest_start(f.c, &g, &f.w, &e), 0, "%s", e.message ? e.message : "?");
	w.address_timeout_s = 120;
	cr_assert_eq(guest_address(f.c, &g, GUEST_ADDR_AGENT, NULL, &w, &addr, &e), 0, "%s",
		     e.message ? e.message : "?");
	cr_assert_str_eq(addr, "127.0.1.90");
	free(addr);
	log = simproc_requests(&f.sp);
	cr_assert_geq(simproc_count_requests(log, "GET", "/nodes/pve1/qemu/190/agent/network-get-interfaces",
				200),
		      1);
	json_object_put(log);
	/* static and config sources need no guest */
	cr_assert_eq(guest_address(f.c, &g, GUEST_ADDR_STATIC, "192.0.2.7/24", &w, &addr, &e), 0);
	cr_assert_str_eq(addr, "192.0.2.7");
	free(addr);
	cr_assert_eq(guest_address(f.c, &g, GUEST_ADDR_CONFIG, NULL, &w, &addr, &e), -1,
		     "no ipconfig0 in this config");
	pve_error_clear(&e);
	guest_ref_clear(&g);
	fx_stop(&f);
}

Test(guest_sim, failed_clone_task_is_not_sent_again)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct guest_ref t;
	find_template(&f, "ubuntu2404-base", &t);
	cr_assert_eq(simproc_fault(&f.sp, "{\"method\":\"POST\",\"path\":\"/clone$\",\"nth\":1,"
					  "\"action\":\"task_fail\",\"message\":\"clone failed: "
					  "can't lock file '/var/lock/pve-manager/pve-storage-"
					  "local-lvm' - got timeout\"}"),
		     0);
	struct guest_clone_req cr = {.source = &t, .name = "failclone", .full = true};
	struct guest_ref g;
	struct pve_error e = {0};
	int claims = 0;
	cr_assert_eq(guest_clone(f.c, &cr, &f.w, &g, &claims, &e), -1);
	cr_assert_eq(e.kind, PVE_ERR_TASK, "%s", pve_err_kind_name(e.kind));
	cr_assert_not_null(e.upid);
	cr_assert_eq(claims, 1);
	pve_error_clear(&e);
	char *path = strprintf("/nodes/%s/qemu/%d/clone", t.node, t.vmid);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", path, -1), 1, "a started task is never re-issued");
	json_object_put(log);
	free(path);
	guest_ref_clear(&t);
	fx_stop(&f);
}

Test(guest_sim, no_worker_upid_is_retried_once_without_duplicate)
{
	struct fx f;
	fx_start(&f, DEMO);
	cr_assert_eq(simproc_fault(&f.sp, "{\"method\":\"POST\",\"path\":\"^/nodes/[^/]+/qemu$\","
					  "\"nth\":1,\"action\":\"no_worker_upid\"}"),
		     0);
	struct pve_error e = {0};
	int claims = 0;
	int vmid = create_named(&f, f.c, "worker1", &claims, &e);
	cr_assert_gt(vmid, 0, "%s", e.message ? e.message : "?");
	cr_assert_eq(claims, 2, "looked (nothing created), then sent again with the same VMID");
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", "/nodes/pve1/qemu", -1), 2);
	cr_assert_eq(simproc_count_requests(log, "POST", "/nodes/pve1/qemu", 200), 1);
	json_object_put(log);
	json_object *st = simproc_state(&f.sp);
	cr_assert_eq(simproc_count_named(st, "worker1"), 1);
	json_object_put(st);
	fx_stop(&f);
}

Test(guest_sim, delete_waits_for_lock_then_deletes)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct guest_ref t;
	find_template(&f, "ubuntu2404-base", &t);
	long status = 0;
	json_object *ans = NULL;
	char *path = strprintf("/nodes/%s/qemu/%d/clone", t.node, t.vmid);
	cr_assert_eq(sim_api(&f.sp, "POST", path, "newid=4545&name=busy1&full=1", &status, &ans), 0);
	cr_assert_eq(status, 200);
	json_object_put(ans);
	free(path);
	struct guest_ref g;
	struct pve_error e = {0};
	cr_assert_eq(guest_find_by_vmid(f.c, 4545, &g, &e), 1);
	bool deleted = false;
	cr_assert_eq(guest_delete(f.c, &g, true, &f.w, &deleted, &e), 0, "%s",
		     e.message ? e.message : "?");
	cr_assert(deleted);
	json_object *st = simproc_state(&f.sp);
	cr_assert_null(st_guest(st, 4545));
	json_object_put(st);
	path = strprintf("/nodes/%s/qemu/4545", t.node);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_geq(simproc_count_requests(log, "DELETE", path, -1), 2, "refused while locked first");
	cr_assert_eq(simproc_count_requests(log, "DELETE", path, 200), 1);
	json_object_put(log);
	free(path);
	guest_ref_clear(&g);
	guest_ref_clear(&t);
	fx_stop(&f);
}

/* Requests from index from on whose path contains needle (method NULL:
 * any); needle NULL: every request that is not a task poll or log read. */
static int count_since(json_object *log, size_t from, const char *method, const char *needle)
{
	int n = 0;
	for (size_t i = from; i < json_object_array_length(log); i++) {
		json_object *r = json_object_array_get_idx(log, i);
		const char *p = js(r, "path");
		if (method && strcmp(js(r, "method"), method) != 0)
			continue;
		if (needle ? strstr(p, needle) != NULL : strstr(p, "/tasks/") == NULL)
			n++;
	}
	return n;
}

/* A clone whose task we waited on is known without looking: no listing and
 * no status read after it, and the ref says what PVE holds. */
Test(guest_sim, finished_clone_needs_no_lookup)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct guest_ref t;
	find_template(&f, "ubuntu2404-base", &t);
	json_object *log = simproc_requests(&f.sp);
	size_t before = json_object_array_length(log);
	json_object_put(log);
	struct guest_clone_req cr = {.source = &t, .name = "known1", .full = true};
	struct guest_ref g;
	struct pve_error e = {0};
	int claims = 0;
	cr_assert_eq(guest_clone(f.c, &cr, &f.w, &g, &claims, &e), 0, "%s",
		     e.message ? e.message : "?");
	cr_assert_eq(claims, 1);
	cr_assert_str_eq(g.name, "known1");
	cr_assert_str_eq(g.node, t.node);
	cr_assert_eq(g.type, GUEST_QEMU);
	cr_assert_str_eq(g.status, "stopped");
	cr_assert_null(g.lock);
	cr_assert_not(g.template);
	json_object *st = simproc_state(&f.sp);
	json_object *sg = st_guest(st, g.vmid);
	cr_assert_not_null(sg);
	cr_assert_str_eq(js(sg, "name"), "known1");
	cr_assert_str_eq(js(sg, "node"), t.node);
	cr_assert_str_eq(js(sg, "status"), "stopped");
	cr_assert_null(js(sg, "lock"));
	json_object_put(st);
	log = simproc_requests(&f.sp);
	cr_assert_eq(count_since(log, before, NULL, "/cluster/resources"), 0, "no listing");
	cr_assert_eq(count_since(log, before, NULL, "/status/current"), 0, "no status read");
	cr_assert_eq(count_since(log, before, NULL, NULL), 2, "nextid and the clone, no more");
	cr_assert_eq(count_since(log, before, "GET", "/cluster/nextid"), 1);
	json_object_put(log);
	guest_ref_clear(&g);
	guest_ref_clear(&t);
	fx_stop(&f);
}

/* A ref believed stopped is started without reading its status first,
 * nor after its qmstart task ended well; a stale belief (it runs already)
 * costs a start task that qemu fails with "already running", which counts
 * as success once the status confirms it. */
Test(guest_sim, start_believes_stopped_and_survives_a_stale_belief)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct pve_error e = {0};
	int vmid = create_named(&f, f.c, "power2", NULL, &e);
	cr_assert_gt(vmid, 0, "%s", e.message ? e.message : "?");
	struct guest_ref g;
	cr_assert_eq(guest_find(f.c, "power2", &g, &e), 1);
	cr_assert_str_eq(g.status, "stopped");
	char *sp = strprintf("/nodes/pve1/qemu/%d/status/start", vmid);
	json_object *log = simproc_requests(&f.sp);
	size_t before = json_object_array_length(log);
	json_object_put(log);
	cr_assert_eq(guest_start(f.c, &g, &f.w, &e), 0, "%s", e.message ? e.message : "?");
	cr_assert_str_eq(g.status, "running");
	log = simproc_requests(&f.sp);
	/* its qmstart task ended well: it runs, nothing read to say so */
	cr_assert_eq(count_since(log, before, NULL, NULL), 1, "the start alone");
	cr_assert_eq(count_since(log, before, "POST", "/status/start"), 1);
	cr_assert_eq(count_since(log, before, "GET", "/status/current"), 0);
	before = json_object_array_length(log);
	json_object_put(log);

	/* stale: still believed stopped */
	free(g.status);
	g.status = strdup("stopped");
	cr_assert_not_null(g.status);
	cr_assert_eq(guest_start(f.c, &g, &f.w, &e), 0, "%s", e.message ? e.message : "?");
	cr_assert_str_eq(g.status, "running");
	log = simproc_requests(&f.sp);
	cr_assert_eq(count_since(log, before, "POST", "/status/start"), 1, "sent once, not again");
	cr_assert_eq(simproc_count_requests(log, "POST", sp, -1), 2);
	json_object_put(log);
	json_object *st = simproc_state(&f.sp);
	cr_assert_str_eq(js(st_guest(st, vmid), "status"), "running");
	json_object_put(st);

	/* believed running (or unknown): read, and left alone */
	cr_assert_eq(guest_start(f.c, &g, &f.w, &e), 0);
	free(g.status);
	g.status = NULL;
	cr_assert_eq(guest_start(f.c, &g, &f.w, &e), 0);
	cr_assert_str_eq(g.status, "running");
	log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", sp, -1), 2, "a running guest is not started");
	json_object_put(log);
	free(sp);
	guest_ref_clear(&g);
	fx_stop(&f);
}

static int mkparams_start(void *ctx, int vmid, struct pve_params *p, struct pve_error *err)
{
	(void)ctx;
	(void)err;
	(void)vmid;
	pve_params_add(p, "memory", "512");
	pve_params_add(p, "start", "1");
	return 0;
}

/* A create that asked PVE to start the guest leaves its status unknown, so
 * that guest_start reads it and sends nothing. */
Test(guest_sim, create_with_start_leaves_status_unknown)
{
	struct fx f;
	fx_start(&f, DEMO);
	struct guest_create_req cr = {
		.type = GUEST_QEMU,
		.node = "pve1",
		.name = "started1",
		.params = mkparams_start,
	};
	struct guest_ref g;
	struct pve_error e = {0};
	cr_assert_eq(guest_create(f.c, &cr, &f.w, &g, NULL, &e), 0, "%s",
		     e.message ? e.message : "?");
	cr_assert_null(g.status, "status unknown: %s", g.status ? g.status : "");
	cr_assert_null(g.lock);
	json_object *st = simproc_state(&f.sp);
	cr_assert_str_eq(js(st_guest(st, g.vmid), "status"), "running");
	json_object_put(st);
	cr_assert_eq(guest_start(f.c, &g, &f.w, &e), 0, "%s", e.message ? e.message : "?");
	cr_assert_str_eq(g.status, "running");
	char *sp = strprintf("/nodes/pve1/qemu/%d/status/start", g.vmid);
	json_object *log = simproc_requests(&f.sp);
	cr_assert_eq(simproc_count_requests(log, "POST", sp, -1), 0, "running already: nothing sent");
	json_object_put(log);
	free(sp);
	guest_ref_clear(&g);
	fx_stop(&f);
}
