/* test_pool.c - static address pools: [pool "NAME"] parsing and its
 * refusals (file, line, key), the address arithmetic (IPv4 and IPv6),
 * tags and free stretches (pool.c); and through the real tool against the
 * simulator: 20 parallel `up --pool` in one process and across two
 * processes get 20 distinct addresses of the range, written into ipconfig0
 * with the gateway; an exhausted pool fails before anything is created; an
 * address a guest holds by hand (its tag) is passed over; `down` then `up`
 * reuses the freed address; `--pool` with `--set ipconfig0` and an unknown
 * pool are refused before any request; and a claim made from a stale
 * listing that collides with another guest's backs off to the next
 * address, holding nothing of the lost one; `doctor` names each guest
 * whose config sets an address of a range by hand without the pool's tag,
 * and the address; 6 ups on 3 addresses at once, with --local and through
 * pvagentd, as separate processes and as one: 3 guests with distinct
 * addresses, every other up exit 1 with nothing left in the simulator and
 * no job left open. */
#include "clirun.h"
#include "conf.h"
#include "ctl_client.h"
#include "pool.h"
#include "pool_claim.h"
#include "procstat.h"
#include "simcli.h"
#include "simproc.h"
#include "sshd.h"
#include "store.h"
#include "util.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- parsing ---------------------------------------------------------------- */

static char *conf_dir;

static void conf_fini(void)
{
	if (conf_dir) {
		if (test_remove_tree(conf_dir) < 0)
			fprintf(stderr, "cannot remove %s\n", conf_dir);
		free(conf_dir);
		conf_dir = NULL;
	}
}

/* Load a pvagent.conf of [pve] plus pools; the error text (or NULL). */
static char *load_pools(const char *pools, struct conf *c)
{
	if (!conf_dir) {
		char t[] = "/tmp/pvagent-test-pool.XXXXXX";
		cr_assert_not_null(mkdtemp(t));
		conf_dir = strdup(t);
	}
	char *path = strprintf("%s/pvagent.conf", conf_dir);
	char *secret = strprintf("%s/token.secret", conf_dir);
	cr_assert_eq(test_write_file(secret, "x\n", 0600), 0);
	char *text = strprintf("[pve]\nurl = https://127.0.0.1:8006\ninsecure = yes\n"
			       "token_id = a@pve!t\ntoken_secret_file = %s\n%s", secret, pools);
	free(secret);
	cr_assert_eq(test_write_file(path, text, 0600), 0);
	char *err = NULL;
	int rc = conf_load(path, c, &err);
	free(path);
	free(text);
	if (rc == 0)
		cr_assert_null(err);
	return err;
}

static void refused(const char *pools, const char *want)
{
	struct conf c;
	char *err = load_pools(pools, &c);
	cr_assert_not_null(err, "accepted:\n%s", pools);
	cr_assert_not_null(strstr(err, want), "'%s' not in:\n%s", want, err);
	free(err);
}

TestSuite(pool_conf, .fini = conf_fini);

Test(pool_conf, ipv4_and_ipv6_pools_load)
{
	struct conf c;
	char *err = load_pools("[pool \"lan\"]\ncidr = 192.0.2.0/24\ngateway = 192.0.2.1\n"
			       "range = 192.0.2.100-192.0.2.199\ndns = 192.0.2.53, 192.0.2.54\n"
			       "searchdomain = example.org\n"
			       "[pool \"v6\"]\ncidr = 2001:db8::/64\ngateway = 2001:db8::1\n"
			       "range = 2001:db8::100-2001:db8::1ff\n", &c);
	cr_assert_null(err, "%s", err);
	cr_assert_eq(c.n_pools, 2);
	const struct ip_pool *p = conf_pool(&c, "lan");
	cr_assert_not_null(p);
	cr_assert_eq(pool_size(p), 100);
	cr_assert_str_eq(p->dns, "192.0.2.53 192.0.2.54");
	cr_assert_str_eq(p->searchdomain, "example.org");
	const struct ip_pool *v6 = conf_pool(&c, "v6");
	cr_assert_eq(pool_size(v6), 256);
	struct pool_ip a;
	cr_assert_eq(pool_ip_parse("2001:db8::100", &a), 0);
	char *ipc = pool_ipconfig(v6, &a);
	cr_assert_str_eq(ipc, "ip6=2001:db8::100/64,gw6=2001:db8::1");
	free(ipc);
	cr_assert_null(conf_pool(&c, "nosuch"));
	conf_free(&c);
}

Test(pool_conf, bad_pools_refused_with_line_and_key)
{
	const char *h = "[pool \"lan\"]\ncidr = 192.0.2.0/24\ngateway = 192.0.2.1\n";
	char *t = strprintf("%srange = 192.0.3.10-192.0.3.20\n", h);
	refused(t, "pvagent.conf:9: [pool \"lan\"] range: 192.0.3.10 lies outside the cidr "
		   "192.0.2.0/24");
	free(t);
	refused("[pool \"lan\"]\ncidr = 192.0.2.0/24\ngateway = 198.51.100.1\n"
		"range = 192.0.2.10-192.0.2.20\n",
		"pvagent.conf:8: [pool \"lan\"] gateway: 198.51.100.1 lies outside the cidr");
	refused("[pool \"lan\"]\ncidr = 192.0.2.0/24\ngateway = 192.0.2.15\n"
		"range = 192.0.2.10-192.0.2.20\n",
		"gateway: 192.0.2.15 lies inside the range");
	refused("[pool \"lan\"]\ncidr = 192.0.2.5/24\ngateway = 192.0.2.1\n"
		"range = 192.0.2.10-192.0.2.20\n",
		"cidr: '192.0.2.5/24': host bits are set; the network is 192.0.2.0/24");
	refused("[pool \"lan\"]\ncidr = 192.0.2.0/33\ngateway = 192.0.2.1\n"
		"range = 192.0.2.10-192.0.2.20\n", "cidr: '192.0.2.0/33': expected NETWORK/PREFIX");
	refused("[pool \"lan\"]\ncidr = 192.0.2.0/24\ngateway = 192.0.2.1\n"
		"range = 192.0.2.30-192.0.2.20\n", "range: '192.0.2.30-192.0.2.20': the start "
		"comes after the end");
	refused("[pool \"lan\"]\ncidr = 192.0.2.0/24\ngateway = 192.0.2.1\n"
		"range = 192.0.2.0-192.0.2.20\n", "includes the network or the broadcast address");
	refused("[pool \"lan\"]\ncidr = 192.0.2.0/24\ngateway = 192.0.2.1\n",
		"range: missing required key");
	refused("[pool \"lan\"]\ncidr = 192.0.2.0/24\ngateway = 192.0.2.1\n"
		"range = 192.0.2.10-192.0.2.20\ndns = 192.0.2.x\n",
		"dns: '192.0.2.x' is not an IPv4 or IPv6 address");
	refused("[pool \"lan\"]\ncidr = 2001:db8::/64\ngateway = 2001:db8::1\n"
		"range = 2001:db8::10-192.0.2.20\n", "range: 192.0.2.20 lies outside the cidr");
	refused("[pool \"a\"]\ncidr = 192.0.2.0/24\ngateway = 192.0.2.1\n"
		"range = 192.0.2.10-192.0.2.20\n"
		"[pool \"b\"]\ncidr = 192.0.2.0/24\ngateway = 192.0.2.1\n"
		"range = 192.0.2.20-192.0.2.30\n",
		"pvagent.conf:13: [pool \"b\"] range: overlaps the range of [pool \"a\"] (line 6)");
}

/* ---- arithmetic ----------------------------------------------------------------- */

static struct ip_pool mkpool(const char *net, unsigned prefix, const char *gw, const char *a,
			     const char *b)
{
	struct ip_pool p = {0};
	cr_assert_eq(pool_ip_parse(net, &p.net), 0);
	p.prefix = prefix;
	cr_assert_eq(pool_ip_parse(gw, &p.gateway), 0);
	cr_assert_eq(pool_ip_parse(a, &p.start), 0);
	cr_assert_eq(pool_ip_parse(b, &p.end), 0);
	return p;
}

static char *ipstr(const struct pool_ip *a)
{
	char *s = pool_ip_str(a);
	cr_assert_not_null(s);
	return s;
}

Test(pool_addr, lowest_free_skips_used_and_wraps_octets)
{
	struct ip_pool p = mkpool("10.0.0.0", 16, "10.0.0.1", "10.0.0.254", "10.0.1.2");
	struct pool_ip used[2], got;
	cr_assert_eq(pool_ip_parse("10.0.0.254", &used[0]), 0);
	cr_assert_eq(pool_ip_parse("10.0.0.255", &used[1]), 0);
	cr_assert_eq(pool_pick(&p, used, 2, 0, &got), 0);
	char *s = ipstr(&got);
	cr_assert_str_eq(s, "10.0.1.0");
	free(s);
	cr_assert_eq(pool_pick(&p, used, 2, 2, &got), 0); /* rank 2 among the free */
	s = ipstr(&got);
	cr_assert_str_eq(s, "10.0.1.2");
	free(s);
	cr_assert_eq(pool_pick(&p, used, 2, 3, &got), 1);
	cr_assert_eq(pool_size(&p), 5);
	char **fr = NULL;
	size_t n = 0, more = 0;
	cr_assert_eq(pool_free_ranges(&p, used, 2, 8, &fr, &n, &more), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(fr[0], "10.0.1.0-10.0.1.2");
	free(fr[0]);
	free(fr);
}

Test(pool_addr, ipv6_tags_round_trip_and_big_ranges)
{
	struct ip_pool p = mkpool("2001:db8::", 48, "2001:db8::1", "2001:db8::100",
				  "2001:db8:0:1::ff");
	cr_assert_eq(pool_size(&p), UINT64_MAX);
	struct pool_ip a, b;
	cr_assert_eq(pool_ip_parse("2001:db8::100", &a), 0);
	char *tag = pool_tag(&a);
	cr_assert_str_eq(tag, "ip-2001-db8--100");
	cr_assert_eq(pool_tag_parse(tag, &b), 0);
	cr_assert_eq(pool_ip_cmp(&a, &b), 0);
	char *tags = pool_tags_with(&p, "web;ip-2001-db8--101;prod", &a);
	cr_assert_str_eq(tags, "web;prod;ip-2001-db8--100");
	cr_assert_eq(pool_tags_find(&p, tags, &b), 1);
	cr_assert_eq(pool_ip_cmp(&a, &b), 0);
	free(tags);
	free(tag);
	cr_assert_eq(pool_tag_parse("ip-notanaddress", &b), -1);
	cr_assert_eq(pool_tags_find(&p, "ip-10.0.0.1;x", &b), 0);
	struct pool_ip got;
	cr_assert_eq(pool_pick(&p, &a, 1, 0, &got), 0);
	char *s = ipstr(&got);
	cr_assert_str_eq(s, "2001:db8::101");
	free(s);
}

/* ---- through the tool ------------------------------------------------------------ */

static struct simproc sim;
static pid_t kids[2] = {-1, -1};
static pid_t daemon_pid = -1;

static void cli_fini(void)
{
	test_kill(&kids[0]);
	test_kill(&kids[1]);
	test_kill(&daemon_pid);
	simproc_stop(&sim);
}

TestSuite(pool_cli, .fini = cli_fini, .timeout = 240);

static const char pool_tmpl[] =
	"[template]\nkind = qemu\nos = ubuntu\nos_version = 24.04\n"
	"[source]\nclone = ubuntu-24.04-base\nfull = no\n"
	"[pve]\nmemory = 512\ntags = web\n"
	"[guest]\naddress = agent\n";

/* The pool lan on range, then the sections more (or NULL). */
static void world_start_with(struct simcli *w, const char *range, const char *more)
{
	char *extra = strprintf("[pool \"lan\"]\ncidr = 10.9.0.0/24\ngateway = 10.9.0.1\n"
				"range = %s\ndns = 10.9.0.53\n%s", range, more ? more : "");
	simcli_start(w, &sim, "tests/pvesim/scenarios/demo.json", extra);
	free(extra);
	char *tp = strprintf("%s/poolvm.tmpl", w->tdir);
	cr_assert_eq(test_write_file(tp, pool_tmpl, 0644), 0);
	free(tp);
}

static void world_start(struct simcli *w, const char *range)
{
	world_start_with(w, range, NULL);
}


/* The guests named PREFIXn: their ipconfig0 addresses, in ips[name index]
 * (n names), asserting each is "ip=A/24,gw=10.9.0.1" with the address tag
 * and the template's tag kept. Returns how many have one. */
static size_t addresses(const char *prefix, size_t n, char ips[][32])
{
	json_object *st = simproc_state(&sim), *cl = NULL, *gs = NULL;
	cr_assert(st && json_object_object_get_ex(st, "cluster", &cl) &&
		  json_object_object_get_ex(cl, "guests", &gs));
	size_t found = 0;
	for (size_t i = 0; i < n; i++)
		ips[i][0] = 0;
	for (size_t i = 0; i < json_object_array_length(gs); i++) {
		json_object *g = json_object_array_get_idx(gs, i), *c = NULL;
		if (!json_object_object_get_ex(g, "config", &c))
			continue;
		const char *name = json_object_get_string(json_object_object_get(c, "name"));
		size_t pl = strlen(prefix);
		if (!name || strncmp(name, prefix, pl) != 0)
			continue;
		unsigned idx = (unsigned)atoi(name + pl);
		cr_assert_lt(idx, n);
		const char *ipc = json_object_get_string(json_object_object_get(c, "ipconfig0"));
		const char *tags = json_object_get_string(json_object_object_get(c, "tags"));
		if (!ipc)
			continue;
		unsigned a, b, cc, d;
		char tail[64];
		cr_assert_eq(sscanf(ipc, "ip=%u.%u.%u.%u/24,%63s", &a, &b, &cc, &d, tail), 5,
			     "%s: ipconfig0 %s", name, ipc);
		cr_assert_str_eq(tail, "gw=10.9.0.1", "%s: ipconfig0 %s", name, ipc);
		snprintf(ips[idx], sizeof ips[idx], "%u.%u.%u.%u", a, b, cc, d);
		char *tag = strprintf("ip-%s", ips[idx]);
		cr_assert(tags && strstr(tags, tag), "%s: tags '%s' lack %s", name, tags, tag);
		cr_assert(strstr(tags, "web"), "%s: the template's tag lost: '%s'", name, tags);
		cr_assert_str_eq(json_object_get_string(json_object_object_get(c, "nameserver")),
				 "10.9.0.53");
		free(tag);
		found++;
	}
	json_object_put(st);
	return found;
}

static void assert_distinct_in(char ips[][32], size_t n, unsigned lo, unsigned hi)
{
	for (size_t i = 0; i < n; i++) {
		unsigned d = 0;
		cr_assert_eq(sscanf(ips[i], "10.9.0.%u", &d), 1, "guest %zu: '%s'", i, ips[i]);
		cr_assert(d >= lo && d <= hi, "guest %zu: %s outside the range", i, ips[i]);
		for (size_t k = 0; k < i; k++)
			cr_assert_str_neq(ips[i], ips[k], "guests %zu and %zu share %s", k, i, ips[i]);
	}
}

Test(pool_cli, twenty_parallel_ups_in_one_process)
{
	struct simcli w = {0};
	world_start(&w, "10.9.0.100-10.9.0.139");
	const char *argv[40] = {w.bin, "-c", w.conf, "--local", "--json", "up"};
	size_t n = 6;
	char names[20][16];
	for (int i = 0; i < 20; i++) {
		snprintf(names[i], sizeof names[i], "p%d", i);
		argv[n++] = names[i];
	}
	const char *tail[] = {"-t", "poolvm", "--pool", "lan", "--no-start", "--parallel", "20"};
	for (size_t i = 0; i < 7; i++)
		argv[n++] = tail[i];
	argv[n] = NULL;
	char *out = NULL;
	int rc = test_run(argv, NULL, &out);
	cr_assert_null(strstr(out, "Sanitizer"), "%s", out);
	cr_assert_eq(rc, 0, "%s", out);
	char ips[20][32];
	cr_assert_eq(addresses("p", 20, ips), 20);
	assert_distinct_in(ips, 20, 100, 119);
	/* reported at once, from the pool */
	cr_assert_not_null(strstr(out, "\"address\":\"10.9.0.1"), "%s", out);
	free(out);
	simcli_free(&w);
}

Test(pool_cli, twenty_ups_across_two_processes)
{
	struct simcli w = {0};
	world_start(&w, "10.9.0.100-10.9.0.139");
	char outp[2][256];
	for (int k = 0; k < 2; k++) {
		snprintf(outp[k], sizeof outp[k], "%s/out%d", w.dir, k);
		const char *argv[32] = {w.bin, "-c", w.conf, "--local", "up"};
		size_t n = 5;
		static char names[2][10][16];
		for (int i = 0; i < 10; i++) {
			snprintf(names[k][i], sizeof names[k][i], "q%d", k * 10 + i);
			argv[n++] = names[k][i];
		}
		const char *tail[] = {"-t", "poolvm", "--pool", "lan", "--no-start", "--parallel",
				      "10", NULL};
		for (size_t i = 0; i < 8; i++)
			argv[n++] = tail[i];
		kids[k] = test_spawn(argv, outp[k]);
		cr_assert_gt(kids[k], 0);
	}
	for (int k = 0; k < 2; k++) {
		int st = 0;
		cr_assert_eq(waitpid(kids[k], &st, 0), kids[k]);
		kids[k] = -1;
		char *text = NULL;
		cr_assert_eq(read_file(outp[k], &text, NULL), 0);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "process %d:\n%s", k, text);
		cr_assert_null(strstr(text, "Sanitizer"), "%s", text);
		free(text);
	}
	char ips[20][32];
	cr_assert_eq(addresses("q", 20, ips), 20);
	assert_distinct_in(ips, 20, 100, 139);
	simcli_free(&w);
}

Test(pool_cli, exhaustion_hand_set_and_reuse)
{
	struct simcli w = {0};
	world_start(&w, "10.9.0.10-10.9.0.13");
	char *out = NULL;
	/* a guest holding 10.9.0.10 by hand: its tag says so */
	long status = 0;
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&sim, "PUT", "/nodes/pve1/qemu/190/config",
			     "ipconfig0=ip%3D10.9.0.10%2F24&tags=ip-10.9.0.10", &status, &ans), 0);
	cr_assert_eq(status, 200, "%s", json_object_to_json_string(ans));
	json_object_put(ans);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "up", "e0", "e1", "e2", "-t", "poolvm", "--pool",
			"lan", "--no-start", "--parallel", "1", NULL), 0, "%s", out);
	free(out);
	char ips[4][32];
	cr_assert_eq(addresses("e", 4, ips), 3);
	cr_assert_str_eq(ips[0], "10.9.0.11", "the hand-set 10.9.0.10 was handed out");
	cr_assert_str_eq(ips[1], "10.9.0.12");
	cr_assert_str_eq(ips[2], "10.9.0.13");
	/* exhausted: fails before anything is created */
	int clones = simproc_count(&sim, "POST", "/clone", -1);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "up", "e3", "-t", "poolvm", "--pool", "lan",
			"--no-start", NULL), 1, "%s", out);
	cr_assert_not_null(strstr(out, "pool lan is exhausted: its 4 addresses "
				       "(10.9.0.10-10.9.0.13) are held"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sim, "POST", "/clone", -1), clones);
	cr_assert_eq(simproc_named(&sim, "e3"), 0);
	/* pool list: who holds what */
	cr_assert_eq(simcli_pv(&w, &out, "pool", "list", NULL), 0, "%s", out);
	cr_assert_not_null(strstr(out, "4 addresses, 4 used, 0 free"), "%s", out);
	cr_assert_not_null(strstr(out, "e1"), "%s", out);
	cr_assert_not_null(strstr(out, "free: none"), "%s", out);
	free(out);
	/* down frees the address; the next up takes it */
	cr_assert_eq(simcli_pv(&w, &out, "--local", "down", "e1", "--yes", NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "--json", "pool", "list", NULL), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\"free\":[\"10.9.0.12\"]"), "%s", out);
	free(out);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "up", "e3", "-t", "poolvm", "--pool", "lan",
			"--no-start", NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(addresses("e", 4, ips), 3);
	cr_assert_str_eq(ips[3], "10.9.0.12");
	simcli_free(&w);
}

Test(pool_cli, bad_pool_input_refused_before_any_request)
{
	struct simcli w = {0};
	world_start(&w, "10.9.0.10-10.9.0.13");
	char *out = NULL;
	int before = simproc_count(&sim, "GET", "", -1);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "up", "b1", "-t", "poolvm", "--pool", "lan", "--set",
			"ipconfig0=ip=10.9.0.50/24", NULL), 2, "%s", out);
	cr_assert_not_null(strstr(out, "--set ipconfig0: the address comes from pool lan"), "%s",
			   out);
	free(out);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "up", "b1", "-t", "poolvm", "--pool", "nosuch",
			NULL), 2, "%s", out);
	cr_assert_not_null(strstr(out, "--pool nosuch: no [pool \"nosuch\"]"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sim, "GET", "", -1), before);
	cr_assert_eq(simproc_count(&sim, "POST", "", -1), 0);
	/* the dry run's plan names the address, from reads only */
	cr_assert_eq(simcli_pv(&w, &out, "--local", "up", "b1", "-t", "poolvm", "--pool", "lan",
			       "--dry-run", NULL), 0, "%s", out);
	cr_assert_not_null(strstr(out, "give it 10.9.0.10 of pool lan"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sim, "POST", "", -1) + simproc_count(&sim, "PUT", "", -1), 0);
	simcli_free(&w);
}

/* A claim picks from a listing made before another guest took the address
 * (as a second process would): its check finds two holders, it backs off
 * and takes the next address, and the other guest keeps its own. */
Test(pool_cli, stale_pick_collides_and_backs_off)
{
	const char *args[] = {"--time-scale", "1000", NULL};
	cr_assert_eq(simproc_start(&sim, "tests/pvesim/scenarios/demo.json", args), 0);
	struct pve_opts o = {.url = sim.url, .token_id = sim.token_id,
			     .token_secret = sim.token_secret, .fingerprint = sim.fingerprint};
	struct pve_error e = {0};
	struct pve *c = pve_new(&o, &e);
	cr_assert_not_null(c, "%s", e.message ? e.message : "?");
	long st = 0;
	cr_assert_eq(sim_api(&sim, "POST", "/nodes/pve1/qemu", "vmid=500&name=other&tags=legacy",
			     &st, NULL), 0);
	cr_assert_eq(st, 200);
	struct guest_list stale = {0};
	cr_assert_eq(guest_list(c, NULL, &stale, &e), 0, "%s", e.message ? e.message : "?");
	/* now VM 190 takes 10.9.0.10, after the listing */
	cr_assert_eq(sim_api(&sim, "PUT", "/nodes/pve1/qemu/190/config",
			     "ipconfig0=ip%3D10.9.0.10%2F24&tags=ip-10.9.0.10", &st, NULL), 0);
	cr_assert_eq(st, 200);
	struct ip_pool p = mkpool("10.9.0.0", 24, "10.9.0.1", "10.9.0.10", "10.9.0.20");
	p.name = (char *)"lan";
	struct guest_ref g = {0};
	cr_assert_eq(guest_find_by_vmid(c, 500, &g, &e), 1);
	struct guest_wait w = {.poll_s = 0.1};
	struct pool_claim_req req = {.pool = &p, .g = &g, .tags = NULL, .listing = &stale,
				     .w = &w};
	struct pool_ip got;
	int before = simproc_count(&sim, "PUT", "/qemu/500/config", -1);
	cr_assert_eq(pool_claim(c, &req, &got, &e), 0, "%s", e.message ? e.message : "?");
	/* VM 500 ranks second of the two holders: the second free address */
	char *a = ipstr(&got);
	cr_assert_str_eq(a, "10.9.0.12");
	free(a);
	/* written twice: the lost address, then the won one */
	cr_assert_eq(simproc_count(&sim, "PUT", "/qemu/500/config", -1), before + 2);
	char *ipc = simproc_config_key(&sim, 500, "ipconfig0");
	char *tags = simproc_config_key(&sim, 500, "tags");
	cr_assert_str_eq(ipc, "ip=10.9.0.12/24,gw=10.9.0.1");
	cr_assert_str_eq(tags, "legacy;ip-10.9.0.12");
	free(ipc);
	free(tags);
	tags = simproc_config_key(&sim, 190, "tags");
	cr_assert_str_eq(tags, "ip-10.9.0.10");
	free(tags);
	pool_claim_release(&got);
	guest_ref_clear(&g);
	guest_list_free(&stale);
	pve_free(c);
	cr_assert_eq(simproc_stop(&sim), 0);
}

/* doctor: an address of the range in a guest's ipconfig0 without the
 * pool's tag is named with the guest and the key; the pool's own guests
 * and a hand-set address with its tag are not; tagged, it is known. */
Test(pool_cli, doctor_names_addresses_set_by_hand)
{
	struct simcli w = {0};
	world_start(&w, "10.9.0.10-10.9.0.13");
	char *out = NULL;
	cr_assert_eq(simcli_pv(&w, &out, "--local", "up", "d0", "-t", "poolvm", "--pool", "lan",
			"--no-start", NULL), 0, "%s", out);
	free(out);
	/* by hand, no tag: unknown to the pool; outside the range: none of its business */
	simcli_api_ok(&sim, "PUT", "/nodes/pve1/qemu/190/config",
		      "ipconfig0=ip%3D10.9.0.12%2F24%2Cgw%3D10.9.0.1&ipconfig1=ip%3D10.9.0.200%2F24");
	/* by hand with its tag: known */
	simcli_api_ok(&sim, "PUT", "/nodes/pve1/qemu/9024/config",
		      "ipconfig0=ip%3D10.9.0.13%2F24&tags=ip-10.9.0.13");
	cr_assert_eq(simcli_pv(&w, &out, "doctor", NULL), 1, "%s", out);
	cr_assert_not_null(strstr(out, "pool lan: 10.9.0.12 is set by hand in ipconfig0 of "
				       "fbsd9-legacy (VMID 190, pve1), without the tag "
				       "ip-10.9.0.12"), "%s", out);
	cr_assert_null(strstr(out, "10.9.0.200"), "%s", out);
	cr_assert_null(strstr(out, "10.9.0.13 is set"), "%s", out);
	cr_assert_null(strstr(out, "10.9.0.10 is set"), "%s", out);
	free(out);
	/* up passes over neither (the allocator knows tags only) but doctor said so;
	 * tagged, the address is the pool's and doctor is content */
	simcli_api_ok(&sim, "PUT", "/nodes/pve1/qemu/190/config", "tags=ip-10.9.0.12");
	simcli_pv(&w, &out, "--json", "doctor", NULL);
	cr_assert_null(strstr(out, "\"check\":\"pool address\""), "%s", out);
	cr_assert_not_null(strstr(out, "\"check\":\"pools\",\"state\":\"ok\""), "%s", out);
	free(out);
	simcli_free(&w);
}

/* The guests in the simulator's state, whatever their names. */
static size_t all_guests(void)
{
	json_object *st = simproc_state(&sim), *cl = NULL, *gs = NULL;
	cr_assert(st && json_object_object_get_ex(st, "cluster", &cl) &&
		  json_object_object_get_ex(cl, "guests", &gs));
	size_t n = json_object_array_length(gs);
	json_object_put(st);
	return n;
}

/* Issue 36: more ups than free addresses, at once, as separate processes
 * and in one with --parallel, each with --local or through pvagentd: as
 * many guests as addresses are made, each with its own address; every
 * other up exits 1 and leaves no guest (one whose clone was made before
 * the pool ran out removes it and says so). Final state only: which ups
 * lose, and whether a loser cloned first, follows the clock. */
enum { N_UPS = 6, M_FREE = 3 };

static void contended(struct simcli *w, const char *prefix, bool local, bool one_process)
{
	char names[N_UPS][16], outp[N_UPS][256];
	pid_t pids[N_UPS];
	size_t procs = one_process ? 1 : N_UPS;
	size_t guests_before = all_guests();
	for (size_t k = 0; k < procs; k++) {
		snprintf(outp[k], sizeof outp[k], "%s/%s%zu.out", w->dir, prefix, k);
		const char *argv[24] = {w->bin, "-c", w->conf};
		size_t n = 3;
		if (local)
			argv[n++] = "--local";
		argv[n++] = "up";
		for (size_t i = 0; i < N_UPS; i++) {
			snprintf(names[i], sizeof names[i], "%s%zu", prefix, i);
			if (one_process || i == k)
				argv[n++] = names[i];
		}
		const char *tail[] = {"-t", "poolvm", "--pool", "lan", "--no-start", "--parallel",
				      "6", NULL};
		for (size_t i = 0; i < 8; i++)
			argv[n++] = tail[i];
		pids[k] = test_spawn(argv, outp[k]);
		cr_assert_gt(pids[k], 0);
	}
	int ok = 0, failed = 0;
	for (size_t k = 0; k < procs; k++) {
		int st = 0;
		cr_assert_eq(waitpid(pids[k], &st, 0), pids[k]);
		char *text = NULL;
		cr_assert_eq(read_file(outp[k], &text, NULL), 0);
		cr_assert(WIFEXITED(st), "%s", text);
		cr_assert_null(strstr(text, "Sanitizer"), "%s", text);
		cr_assert_null(strstr(text, "needs attention"), "%s", text);
		if (WEXITSTATUS(st) == 0) {
			ok++;
		} else {
			cr_assert_eq(WEXITSTATUS(st), 1, "%s", text);
			cr_assert(strstr(text, "pool lan is exhausted"), "%s", text);
			failed++;
		}
		free(text);
	}
	if (!one_process)
		cr_assert(ok == M_FREE && failed == N_UPS - M_FREE, "%d made, %d failed", ok, failed);
	else
		cr_assert_eq(failed, 1, "one process: its exit says the losers");
	char ips[N_UPS][32];
	cr_assert_eq(addresses(prefix, N_UPS, ips), M_FREE, "as many guests as addresses have one");
	int made = 0;
	for (size_t i = 0; i < N_UPS; i++)
		made += simproc_named(&sim, names[i]);
	cr_assert_eq(made, M_FREE, "a loser's guest was left");
	cr_assert_eq(all_guests(), guests_before + M_FREE, "a guest without its name was left");
	char held[M_FREE][32];
	size_t nh = 0;
	for (size_t i = 0; i < N_UPS; i++)
		if (ips[i][0])
			memcpy(held[nh++], ips[i], sizeof held[0]);
	assert_distinct_in(held, nh, 10, 12);
}

/* Remove the guests of prefix made, so that the pool is free again. */
static void down_all(struct simcli *w, const char *prefix, bool local)
{
	char *out = NULL;
	for (int i = 0; i < N_UPS; i++) {
		char name[16];
		snprintf(name, sizeof name, "%s%d", prefix, i);
		if (!simproc_named(&sim, name))
			continue;
		int rc = local ? simcli_pv(w, &out, "--local", "down", name, "--yes", NULL)
			       : simcli_pv(w, &out, "down", name, "--yes", NULL);
		cr_assert_eq(rc, 0, "%s", out);
		free(out);
	}
}

Test(pool_cli, more_ups_than_addresses_make_as_many_guests_as_addresses)
{
	struct simcli w = {0};
	world_start(&w, "10.9.0.10-10.9.0.12");
	contended(&w, "c", true, false);
	down_all(&w, "c", true);
	contended(&w, "d", true, true);
	simcli_free(&w);
}

/* The jobs in the store at db in one of states (an SQL list). */
static long long jobs_in(const char *db, const char *states)
{
	char *sql = strprintf("SELECT count(*) FROM jobs WHERE workflow = 'up' AND state IN %s",
			      states);
	long long n = test_db_int(db, sql, NULL);
	free(sql);
	return n;
}

#define OPEN_STATES "('queued', 'running', 'interrupted', 'needs-attention')"

/* The same through pvagentd (6 workers, all on one node): each up is a
 * job in its own `pvagent --local` child, so the claims race across
 * processes as the separate --local ones do; the store then holds 3 done
 * and 3 failed ups per round and none open. */
Test(pool_cli, more_ups_than_addresses_through_the_daemon)
{
	struct simcli w = {0};
	world_start_with(&w, "10.9.0.10-10.9.0.12", "[daemon]\nworkers = 6\nnode_jobs = 6\n");
	const char *dbin = getenv("PVAGENTD_BIN");
	dbin = dbin ? dbin : "build/san/pvagentd";
	if (access(dbin, X_OK) < 0)
		cr_skip_test("no pvagentd (make build/san/pvagentd)");
	char *sock = strprintf("%s/none.sock", w.dir), *log = strprintf("%s/pvagentd.log", w.dir);
	char *db = store_path(w.dir);
	struct ctl_client c;
	daemon_pid = procstat_daemon(dbin, w.bin, w.conf, log, sock, &c);
	cr_assert_gt(daemon_pid, 0, "pvagentd did not start (%s)", log);
	ctl_client_close(&c);
	const char *rounds[][2] = {{"s", "separate"}, {"o", "one"}};
	long long finished = 0;
	for (size_t r = 0; r < 2; r++) {
		contended(&w, rounds[r][0], false, r == 1);
		finished += N_UPS;
		/* the clients have their answers; the jobs' children end after
		 * writing their outcomes (bounded wait for that state) */
		for (int i = 0; i < 3000 && jobs_in(db, "('done', 'failed')") < finished; i++) {
			struct timespec ts = {0, 20L * 1000 * 1000};
			nanosleep(&ts, NULL); /* polling a state (the store), bounded */
		}
		cr_assert_eq(jobs_in(db, OPEN_STATES), 0, "round %s: a job left open", rounds[r][1]);
		cr_assert_eq(jobs_in(db, "('failed')"), (long long)(r + 1) * (N_UPS - M_FREE),
			     "round %s", rounds[r][1]);
		down_all(&w, rounds[r][0], false);
	}
	cr_assert_eq(kill(daemon_pid, SIGTERM), 0);
	int st = 0;
	cr_assert_eq(waitpid(daemon_pid, &st, 0), daemon_pid);
	daemon_pid = -1;
	char *text = NULL;
	cr_assert_eq(read_file(log, &text, NULL), 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pvagentd status %d:\n%s", st, text);
	cr_assert_null(strstr(text, "Sanitizer"), "%s", text);
	cr_assert_null(strstr(text, "runtime error"), "%s", text);
	free(text);
	free(db);
	free(log);
	free(sock);
	simcli_free(&w);
}
