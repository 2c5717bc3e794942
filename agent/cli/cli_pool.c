/* cli_pool.c - `pvagent pool list`: each [pool] of the configuration with
 * its size, the addresses held and by which guest (from one cluster
 * listing: the address tags, pool_claim.h), and the free stretches. */
#include "cli.h"

#include "output.h"
#include "pool_claim.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STRETCHES 64 /* free stretches shown per pool */

/* One pool as JSON: name, cidr, gateway, range, size, used [{address,
 * vmid, name, node}], free [stretches], free_more. NULL on OOM. */
static json_object *pool_json(const struct ip_pool *p, const struct pool_usage *u)
{
	json_object *o = json_object_new_object(), *used = json_object_new_array(),
		    *fr = json_object_new_array();
	char *net = pool_ip_str(&p->net), *gw = pool_ip_str(&p->gateway),
	     *a = pool_ip_str(&p->start), *b = pool_ip_str(&p->end);
	struct pool_ip *ips = calloc(u->n + 1, sizeof *ips);
	char **st = NULL;
	size_t nst = 0, more = 0;
	bool ok = o && used && fr && net && gw && a && b && ips;
	for (size_t i = 0; ok && i < u->n; i++) {
		ips[i] = u->v[i].ip;
		json_object *h = json_object_new_object();
		char *ip = pool_ip_str(&u->v[i].ip);
		ok = h && ip;
		if (ok) {
			json_object_object_add(h, "address", json_object_new_string(ip));
			json_object_object_add(h, "vmid", json_object_new_int(u->v[i].vmid));
			json_object_object_add(h, "name", u->v[i].name
					       ? json_object_new_string(u->v[i].name) : NULL);
			json_object_object_add(h, "node", u->v[i].node
					       ? json_object_new_string(u->v[i].node) : NULL);
			json_object_array_add(used, h);
		} else {
			json_object_put(h);
		}
		free(ip);
	}
	ok = ok && pool_free_ranges(p, ips, u->n, MAX_STRETCHES, &st, &nst, &more) == 0;
	for (size_t i = 0; ok && i < nst; i++)
		json_object_array_add(fr, json_object_new_string(st[i]));
	if (ok) {
		char *cidr = strprintf("%s/%u", net, p->prefix), *range = strprintf("%s-%s", a, b);
		json_object_object_add(o, "name", json_object_new_string(p->name));
		json_object_object_add(o, "cidr", cidr ? json_object_new_string(cidr) : NULL);
		json_object_object_add(o, "gateway", json_object_new_string(gw));
		json_object_object_add(o, "range", range ? json_object_new_string(range) : NULL);
		json_object_object_add(o, "size", json_object_new_uint64(pool_size(p)));
		json_object_object_add(o, "used", json_object_get(used));
		json_object_object_add(o, "free", json_object_get(fr));
		json_object_object_add(o, "free_more", json_object_new_int64((int64_t)more));
		free(cidr);
		free(range);
	}
	for (size_t i = 0; i < nst; i++)
		free(st[i]);
	free(st);
	free(ips);
	free(net);
	free(gw);
	free(a);
	free(b);
	json_object_put(used);
	json_object_put(fr);
	if (!ok) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static void pool_print(json_object *o)
{
	json_object *used = NULL, *fr = NULL;
	json_object_object_get_ex(o, "used", &used);
	json_object_object_get_ex(o, "free", &fr);
	size_t nu = json_object_array_length(used);
	uint64_t size = (uint64_t)json_object_get_uint64(json_object_object_get(o, "size"));
	printf("pool %s: %s in %s, gateway %s: %" PRIu64 " addresses, %zu used, %s%" PRIu64
	       " free\n",
	       json_str(o, "name"), json_str(o, "range"), json_str(o, "cidr"), json_str(o, "gateway"),
	       size, nu, size == UINT64_MAX ? ">= " : "", size == UINT64_MAX ? size : size - nu);
	if (nu) {
		const char *hdr[] = {"ADDRESS", "VMID", "NAME", "NODE"};
		struct table *t = table_new(4, hdr);
		for (size_t i = 0; t && i < nu; i++) {
			json_object *h = json_object_array_get_idx(used, i);
			char id[24];
			snprintf(id, sizeof id, "%d", json_object_get_int(json_object_object_get(h, "vmid")));
			const char *row[] = {json_str(h, "address"), id,
					     json_str(h, "name") ? json_str(h, "name") : "-",
					     json_str(h, "node") ? json_str(h, "node") : "-"};
			table_add(t, row);
		}
		if (t)
			table_print(t, stdout);
		table_free(t);
	}
	size_t nf = json_object_array_length(fr);
	printf("free:");
	for (size_t i = 0; i < nf; i++)
		printf(" %s", json_object_get_string(json_object_array_get_idx(fr, i)));
	long long more = json_object_get_int64(json_object_object_get(o, "free_more"));
	if (more)
		printf(" (and %lld more stretches)", more);
	printf("%s\n", nf ? "" : " none");
}

static int cmd_pool(struct cli *cli, const struct cmd_args *a)
{
	if (strcmp(a->argv[0], "list") != 0)
		return cli_usage_error("pool", "unknown subcommand (pool list)", a->argv[0]);
	int rc = cli_connect_pve(cli);
	if (rc)
		return rc;
	if (!cli->conf.n_pools) {
		cli_error("usage", "pool", "no [pool \"NAME\"] sections in %s (man pvagent.conf)",
			  cli->conf.path ? cli->conf.path : "the configuration");
		return EXIT_USAGE;
	}
	struct guest_list l = {0};
	struct pve_error e = {0};
	if (guest_list(cli->pve, NULL, &l, &e) < 0) {
		rc = cli_fail_pve(cli, "pool", &e);
		pve_error_clear(&e);
		return rc;
	}
	json_object *arr = json_object_new_array();
	for (size_t i = 0; arr && i < cli->conf.n_pools; i++) {
		struct pool_usage u;
		json_object *o = NULL;
		if (pool_usage_from_list(&cli->conf.pools[i], &l, &u) == 0) {
			o = pool_json(&cli->conf.pools[i], &u);
			pool_usage_free(&u);
		}
		if (!o) {
			json_object_put(arr);
			arr = NULL;
			break;
		}
		json_object_array_add(arr, o);
	}
	guest_list_free(&l);
	if (!arr) {
		fprintf(stderr, "pvagent pool: out of memory\n");
		return 1;
	}
	if (cli->json) {
		out_json_ok("pool", "pools", json_object_get(arr));
	} else {
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			if (i)
				printf("\n");
			pool_print(json_object_array_get_idx(arr, i));
		}
	}
	json_object_put(arr);
	return 0;
}

const struct cmd_entry cmd_pool_entry = {
	"pool", "list", "static address pools: addresses held (and by whom) and free", NULL, NULL,
	NULL, 1, 1, "subcommand", cmd_pool, "pvagent pool list\npvagent --json pool list",
	.wf = NULL,
	.flags = CMD_READONLY,
};
