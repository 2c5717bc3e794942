/* confparse.c - make bench: pvagent.conf parsing time against the number of
 * sections. A config with N [window "wN"] sections is loaded (parse,
 * validation, duplicate-section check, window values) for N = 5,000 and
 * 20,000; four times the sections must cost well under sixteen times the
 * time (quadratic), so the ratio is the target: at most 8 (linear ~4).
 * The same for the keys of one section whose keys are not fixed (a
 * template's [pve]): 5,000 and 20,000 keys through ini_parse and
 * ini_validate (the duplicate-key check). */
#include "conf.h"
#include "ini.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUNS 3

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int rc = fputs(text, f) < 0;
	rc |= fclose(f) != 0;
	rc |= chmod(path, mode) != 0;
	return rc ? -1 : 0;
}

/* Best of RUNS: seconds to load a config of n window sections. */
static double load_time(const char *dir, unsigned n)
{
	struct sbuf b = {0};
	int rc = sbuf_add(&b, "[pve]\nurl = https://127.0.0.1:8006\ntoken_id = a@pve!b\n"
			      "token_secret_file = secret\n");
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = sbuf_addf(&b, "[window \"%u\"]\nnode=pve%u\nstart=02:00\nduration=1h\n",
			       i, i % 7);
	char *path = strprintf("%s/pvagent.conf", dir);
	if (rc < 0 || !path || write_text(path, sbuf_str(&b), 0644) < 0) {
		fprintf(stderr, "confparse: cannot write the config\n");
		sbuf_free(&b);
		free(path);
		return -1;
	}
	sbuf_free(&b);
	double best = -1;
	for (int r = 0; r < RUNS; r++) {
		struct conf c;
		char *err = NULL;
		double t0 = now();
		int lrc = conf_load(path, &c, &err);
		double t = now() - t0;
		if (lrc < 0) {
			fprintf(stderr, "confparse: %s\n", err ? err : "load failed");
			free(err);
			free(path);
			return -1;
		}
		if (c.n_windows != n) {
			fprintf(stderr, "confparse: %zu windows, expected %u\n", c.n_windows, n);
			conf_free(&c);
			free(path);
			return -1;
		}
		conf_free(&c);
		if (best < 0 || t < best)
			best = t;
	}
	free(path);
	return best;
}

/* Best of RUNS: seconds to parse and validate one section of n keys. */
static double keys_time(unsigned n)
{
	static const struct ini_section_spec spec[] = {{"pve", INI_SEC_ANYKEY, NULL}, {NULL, 0, NULL}};
	struct sbuf b = {0};
	int rc = sbuf_add(&b, "[pve]\n");
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = sbuf_addf(&b, "k%u = %u\n", i, i);
	if (rc < 0) {
		sbuf_free(&b);
		return -1;
	}
	double best = -1;
	for (int r = 0; r < RUNS; r++) {
		struct ini ini;
		struct sbuf errs = {0};
		char *err = NULL;
		double t0 = now();
		int nerr = -1;
		if (ini_parse("bench.tmpl", b.s, b.len, &ini, &err) == 0) {
			nerr = ini_validate(&ini, spec, &errs);
			ini_free(&ini);
		}
		double t = now() - t0;
		free(err);
		sbuf_free(&errs);
		if (nerr != 0) {
			fprintf(stderr, "confparse: the keys did not validate\n");
			sbuf_free(&b);
			return -1;
		}
		if (best < 0 || t < best)
			best = t;
	}
	sbuf_free(&b);
	return best;
}

int main(void)
{
	char dir[] = "/tmp/bench_confparse.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("confparse: mkdtemp");
		return 1;
	}
	char *secret = strprintf("%s/secret", dir);
	int rc = 1;
	if (secret && write_text(secret, "0f1e2d3c-aaaa-bbbb-cccc-000011112222\n", 0600) == 0) {
		double small = load_time(dir, 5000), big = load_time(dir, 20000);
		if (small > 0 && big > 0) {
			double ratio = big / small;
			printf("config parse: 20000 sections in %.1f ms, 5000 in %.1f ms: ratio %.1f "
			       "(linear ~4, quadratic ~16; target <= 8)\n",
			       big * 1e3, small * 1e3, ratio);
			rc = ratio <= 8 ? 0 : 1;
		}
	}
	double ks = keys_time(5000), kb = keys_time(20000);
	if (ks > 0 && kb > 0) {
		double ratio = kb / ks;
		printf("one section's keys: 20000 in %.1f ms, 5000 in %.1f ms: ratio %.1f (target <= 8)\n",
		       kb * 1e3, ks * 1e3, ratio);
		if (ratio > 8)
			rc = 1;
	} else {
		rc = 1;
	}
	free(secret);
	char *cmd = strprintf("rm -rf '%s'", dir);
	if (!cmd || system(cmd) != 0)
		rc = 1;
	free(cmd);
	return rc;
}
