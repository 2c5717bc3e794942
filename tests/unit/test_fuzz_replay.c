/* test_fuzz_replay.c - every input of tests/fuzz/corpus/TARGET/ and
 * tests/fuzz/regress/TARGET/ run once through its fuzz target body
 * (tests/fuzz/, the same code libFuzzer drives in make fuzz), so the seed
 * corpora and the reproducers of past findings stay green under the
 * sanitizer build. A broken property fails with the input's file name;
 * each input's name is printed before it runs, so a sanitizer report
 * (which ends the process) follows the name of its input. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../fuzz/fuzz.h"
#include "util.h"

static char *fuzz_path(const char *sub, const char *target)
{
	const char *slash = strrchr(__FILE__, '/');
	int dir = slash ? (int)(slash - __FILE__) : 0;
	return strprintf("%.*s%s../fuzz/%s%s%s", dir, __FILE__, slash ? "/" : "", sub,
			 target ? "/" : "", target ? target : "");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the regular files in dir (none if it does not exist). */
static size_t list_dir(const char *dir, char ***names)
{
	*names = NULL;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char **v = realloc(*names, (n + 1) * sizeof *v);
		cr_assert_not_null(v);
		*names = v;
		cr_assert_not_null(v[n] = strdup(e->d_name));
		n++;
	}
	closedir(d);
	if (n)
		qsort(*names, n, sizeof **names, cmp_str);
	return n;
}

/* Replay one directory; returns the number of inputs run. */
static size_t replay_dir(const struct fuzz_target *t, const char *sub)
{
	char *dir = fuzz_path(sub, t->name);
	cr_assert_not_null(dir);
	char **names;
	size_t n = list_dir(dir, &names), ran = 0;
	for (size_t i = 0; i < n; i++) {
		char *path = strprintf("%s/%s", dir, names[i]);
		cr_assert_not_null(path);
		struct stat st;
		char *data = NULL;
		size_t len = 0;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			cr_assert_eq(read_file(path, &data, &len), 0, "reading %s", path);
			fprintf(stderr, "fuzz replay: %s\n", path);
			int rc = t->fn((const uint8_t *)data, len);
			cr_expect_eq(rc, 0, "%s: %s", path, fuzz_failure());
			free(data);
			ran++;
		}
		free(path);
		free(names[i]);
	}
	free(names);
	free(dir);
	return ran;
}

static void replay(const char *name)
{
	const struct fuzz_target *t = fuzz_targets;
	while (t->name && strcmp(t->name, name) != 0)
		t++;
	cr_assert_not_null(t->name, "no fuzz target %s", name);
	/* the empty input first: it also tells whether the target can run */
	int rc = t->fn((const uint8_t *)"", 0);
	if (rc > 0)
		cr_skip_test("%s: %s", name, fuzz_failure());
	cr_expect_eq(rc, 0, "%s: the empty input: %s", name, fuzz_failure());
	size_t seeds = replay_dir(t, "corpus");
	replay_dir(t, "regress");
	cr_assert_gt(seeds, 0, "tests/fuzz/corpus/%s holds no input", name);
}

#define REPLAY(name) \
	Test(fuzz_replay, name) { replay(#name); }
FUZZ_TARGETS(REPLAY)

/* The targets and the corpus directories match. */
Test(fuzz_replay, every_target_has_a_test_and_a_corpus)
{
	char *dir = fuzz_path("corpus", NULL);
	cr_assert_not_null(dir);
	char **names;
	size_t n = list_dir(dir, &names), ntargets = 0;
	for (const struct fuzz_target *t = fuzz_targets; t->name; t++) {
		ntargets++;
		int found = 0;
		for (size_t i = 0; i < n; i++)
			found |= strcmp(names[i], t->name) == 0;
		cr_expect(found, "target %s has no directory in %s", t->name, dir);
	}
	cr_expect_eq(n, ntargets, "%zu corpus directories for %zu targets", n, ntargets);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(dir);
}
