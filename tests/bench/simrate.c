/* simrate.c - benchmark: the simulator's request rate with one keep-alive
 * HTTPS client, for a simple GET and for a schema-checked POST. It must
 * stay above 2,000 requests/s so it never limits the agent's benchmarks. */
#include "simproc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int rate(struct simproc *sp, const char *method, const char *path, const char *form,
		int n, long want, double *out)
{
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		long st = 0;
		if (sim_api(sp, method, path, form, &st, NULL) < 0 || st != want) {
			fprintf(stderr, "simrate: %s %s answered %ld (want %ld)\n", method, path, st,
				want);
			return -1;
		}
	}
	*out = n / (now_s() - t0);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3000;
	struct simproc sp;
	if (n <= 0 || simproc_start(&sp, "tests/pvesim/scenarios/server-test.json", NULL) < 0)
		return 1;
	double get_rate = 0, post_rate = 0;
	long st = 0;
	/* Warm up the connection (TLS handshake) before timing. */
	int rc = sim_api(&sp, "GET", "/version", NULL, &st, NULL);
	if (rc == 0)
		rc = rate(&sp, "GET", "/version", NULL, n, 200, &get_rate);
	if (rc == 0)
		rc = rate(&sp, "PUT", "/nodes/pve1/qemu/100/config",
			  "description=bench&cores=2&net0=virtio%3DBC%3A24%3A11%3A00%3A01%3A00%2Cbridge%3Dvmbr0",
			  n, 200, &post_rate);
	if (simproc_stop(&sp) < 0)
		rc = -1;
	if (rc < 0)
		return 1;
	printf("simulator GET /version:                    %8.0f requests/s (target > 2000) %s\n",
	       get_rate, get_rate > 2000 ? "ok" : "BELOW TARGET");
	printf("simulator PUT qemu config (schema-checked): %8.0f requests/s (target > 2000) %s\n",
	       post_rate, post_rate > 2000 ? "ok" : "BELOW TARGET");
	return get_rate > 2000 && post_rate > 2000 ? 0 : 1;
}
