/* test_inventory.c - inventory.h against the simulator (demo scenario):
 * the guest list is one request (GET /cluster/resources) whatever the
 * number of guests; the configs of `list --long` are read with at most the
 * given number at once and more than one at once, the simulator holding
 * each answer 300 ms (--latency) so that the reads in flight together are
 * the ones answered together (the request log's times). */
#include "inventory.h"
#include "json.h"
#include "simproc.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static struct simproc sim;

static void cleanup(void)
{
	simproc_stop(&sim);
}

TestSuite(inventory, .fini = cleanup, .timeout = 120);

static struct pve *client(struct pve_opts *o)
{
	*o = (struct pve_opts){
		.url = sim.url,
		.token_id = sim.token_id,
		.token_secret = sim.token_secret,
		.fingerprint = sim.fingerprint,
	};
	struct pve_error e = {0};
	struct pve *c = pve_new(o, &e);
	cr_assert_not_null(c, "pve_new: %s", e.message ? e.message : "?");
	return c;
}

/* The times of the logged config reads, in order. */
static size_t config_times(double *t, size_t max)
{
	json_object *log = simproc_requests(&sim);
	size_t n = 0;
	for (size_t i = 0; log && i < json_object_array_length(log) && n < max; i++) {
		json_object *r = json_object_array_get_idx(log, i), *tv = NULL;
		const char *path = json_str(r, "path");
		size_t pl = path ? strlen(path) : 0;
		if (pl > 7 && strcmp(path + pl - 7, "/config") == 0 &&
		    json_object_object_get_ex(r, "time", &tv))
			t[n++] = json_object_get_double(tv);
	}
	json_object_put(log);
	return n;
}

Test(inventory, the_list_is_one_request_and_configs_are_read_a_bounded_few_at_once)
{
	const char *args[] = {"--latency", "300", NULL};
	cr_assert_eq(simproc_start(&sim, "tests/pvesim/scenarios/demo.json", args), 0);
	struct pve_opts o;
	struct pve *c = client(&o);
	struct pve_error e = {0};
	json_object *g = NULL;
	cr_assert_eq(inventory_guests(c, NULL, &g, &e), 0, "%s", e.message ? e.message : "");
	size_t n = json_object_array_length(g);
	cr_assert_geq(n, 5, "the demo's guests");
	json_object *log = simproc_requests(&sim);
	cr_assert_eq(simproc_count_requests(log, "GET", "/cluster/resources", -1), 1);
	cr_assert_eq(json_object_array_length(log), 1, "one request in all");
	json_object_put(log);
	cr_assert_null(json_object_object_get(json_object_array_get_idx(g, 0), "disk_bus"));
	/* three at once */
	cr_assert_eq(inventory_guests_hw(c, &o, 3, g, &e), 0, "%s", e.message ? e.message : "");
	for (size_t i = 0; i < n; i++) {
		json_object *x = json_object_array_get_idx(g, i);
		if (strcmp(json_str(x, "name"), "fbsd9-legacy") == 0) {
			cr_expect_str_eq(json_str(x, "disk_bus"), "ide");
			cr_expect_str_eq(json_str(x, "nic_model"), "e1000");
		}
		cr_expect_not_null(json_str(x, "disk_bus"), "%s", json_str(x, "name"));
	}
	double t[64];
	size_t k = config_times(t, 64);
	cr_assert_eq(k, n, "one config read per guest");
	/* answers at most 150 ms apart were in flight together (each is held
	 * 300 ms; the next round comes 300 ms later) */
	size_t most = 0;
	for (size_t i = 0; i < k; i++) {
		size_t together = 0;
		for (size_t j = 0; j < k; j++)
			together += t[j] >= t[i] && t[j] - t[i] < 0.15;
		most = together > most ? together : most;
	}
	cr_expect_leq(most, 3, "%zu config reads at once with a bound of 3", most);
	cr_expect_geq(most, 2, "the config reads went one at a time");
	json_object_put(g);
	pve_free(c);
	cr_assert_eq(simproc_stop(&sim), 0);
}
