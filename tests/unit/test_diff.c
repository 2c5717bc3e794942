/* test_diff.c - diff.c: unified diff format (headers, hunk ranges, context
 * merging, missing final newline, absent files) and a round trip: applying
 * the diff of random texts to the old text gives the new text, with a
 * minimal number of changed lines for known cases. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "util.h"

Test(diff, equal_texts_give_empty)
{
	char *d = diff_unified("a\nb\n", "a\nb\n", "etc/fstab");
	cr_assert_str_eq(d, "");
	free(d);
	d = diff_unified(NULL, NULL, "x");
	cr_assert_str_eq(d, "");
	free(d);
}

Test(diff, one_line_added_in_middle)
{
	char *d = diff_unified("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\nnew\n5\n6\n7\n8\n", "/etc/rc.conf");
	cr_assert_str_eq(d, "--- a/etc/rc.conf\n+++ b/etc/rc.conf\n"
			    "@@ -2,6 +2,7 @@\n 2\n 3\n 4\n+new\n 5\n 6\n 7\n");
	free(d);
}

Test(diff, change_and_separate_hunks)
{
	const char *a = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n";
	const char *b = "A\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nM\n";
	char *d = diff_unified(a, b, "f");
	cr_assert_str_eq(d, "--- a/f\n+++ b/f\n"
			    "@@ -1,4 +1,4 @@\n-a\n+A\n b\n c\n d\n"
			    "@@ -10,4 +10,4 @@\n j\n k\n l\n-m\n+M\n");
	free(d);
	/* within 2*3 lines the hunks merge */
	d = diff_unified("a\nb\nc\nd\ne\nf\ng\nh\n", "A\nb\nc\nd\ne\nf\ng\nH\n", "f");
	cr_assert_str_eq(d, "--- a/f\n+++ b/f\n@@ -1,8 +1,8 @@\n-a\n+A\n b\n c\n d\n e\n f\n g\n-h\n+H\n");
	free(d);
}

Test(diff, no_newline_and_absent_files)
{
	char *d = diff_unified("x\ny", "x\ny\nz\n", "f");
	cr_assert_str_eq(d, "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n x\n-y\n\\ No newline at end of file\n+y\n+z\n");
	free(d);
	d = diff_unified(NULL, "virtio_load=\"YES\"\n", "boot/loader.conf");
	cr_assert_str_eq(d, "--- /dev/null\n+++ b/boot/loader.conf\n@@ -0,0 +1 @@\n+virtio_load=\"YES\"\n");
	free(d);
	d = diff_unified("gone\n", NULL, "f");
	cr_assert_str_eq(d, "--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n");
	free(d);
}

/* Apply a unified diff (as produced above) to old. */
static char *apply(const char *old, const char *diff)
{
	struct sbuf out = {0};
	const char *o = old, *p = diff;
	size_t oline = 1;
	/* skip headers */
	for (int i = 0; i < 2 && *p; i++)
		p = strchr(p, '\n') + 1;
	while (*p) {
		unsigned long os = 0;
		cr_assert_eq(strncmp(p, "@@ -", 4), 0, "hunk header expected: %s", p);
		char *end;
		os = strtoul(p + 4, &end, 10);
		unsigned long oc = *end == ',' ? strtoul(end + 1, NULL, 10) : 1;
		p = strchr(p, '\n') + 1;
		/* an empty old range inserts after old line os */
		size_t target = oc ? os : os + 1;
		/* copy unchanged old lines before the hunk */
		while (oline < target && *o) {
			const char *e = strchr(o, '\n');
			size_t n = e ? (size_t)(e - o) + 1 : strlen(o);
			cr_assert_eq(sbuf_addn(&out, o, n), 0);
			o += n;
			oline++;
		}
		while (*p && *p != '@') {
			const char *e = strchr(p, '\n');
			size_t n = (size_t)(e - p);
			int nonl = strncmp(e + 1, "\\ No newline", 12) == 0;
			if (*p == ' ' || *p == '-') {
				const char *oe = strchr(o, '\n');
				size_t on = oe ? (size_t)(oe - o) + 1 : strlen(o);
				cr_assert(n - 1 == (oe ? on - 1 : on) && memcmp(o, p + 1, n - 1) == 0,
					  "context mismatch at old line %zu", oline);
				if (*p == ' ')
					cr_assert_eq(sbuf_addn(&out, o, on), 0);
				o += on;
				oline++;
			} else {
				cr_assert_eq(*p, '+');
				cr_assert_eq(sbuf_addn(&out, p + 1, n - 1), 0);
				if (!nonl)
					cr_assert_eq(sbuf_addc(&out, '\n'), 0);
			}
			p = e + 1;
			if (nonl)
				p = strchr(p, '\n') + 1;
		}
	}
	cr_assert_eq(sbuf_add(&out, o), 0);
	return sbuf_steal(&out);
}

static char *random_text(unsigned *seed, int lines)
{
	struct sbuf b = {0};
	for (int i = 0; i < lines; i++)
		cr_assert_eq(sbuf_addf(&b, "l%d\n", rand_r(seed) % 6), 0);
	if (lines && rand_r(seed) % 4 == 0 && b.len)
		b.s[--b.len] = '\0'; /* no final newline */
	return sbuf_steal(&b);
}

Test(diff, random_round_trip)
{
	unsigned seed = 12345;
	for (int iter = 0; iter < 400; iter++) {
		char *a = random_text(&seed, rand_r(&seed) % 25);
		char *b = random_text(&seed, rand_r(&seed) % 25);
		char *d = diff_unified_ctx(a, b, "t", (unsigned)(rand_r(&seed) % 4));
		cr_assert_not_null(d);
		char *r = apply(a, d);
		cr_assert_str_eq(r, b, "round trip failed\nold:\n%s\nnew:\n%s\ndiff:\n%s", a, b, d);
		free(a);
		free(b);
		free(d);
		free(r);
	}
}

Test(diff, minimal_edit_count)
{
	/* Myers finds the shortest edit script: one deletion, one insertion */
	char *d = diff_unified_ctx("a\nb\nc\nd\n", "b\nc\nd\ne\n", "f", 0);
	cr_assert_str_eq(d, "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-a\n@@ -4,0 +4 @@\n+e\n");
	free(d);
}

static char *numbered(int n, const char *word)
{
	struct sbuf b = {0};
	for (int i = 0; i < n; i++)
		cr_assert_eq(sbuf_addf(&b, "%s %d\n", word, i), 0);
	return sbuf_steal(&b);
}

Test(diff, large_texts_stay_bounded)
{
	/* 50k-line file, one line changed: prefix/suffix trimming keeps it cheap */
	char *a = numbered(50000, "line");
	char *b = strdup(a);
	cr_assert_not_null(b);
	char *p = strstr(b, "line 25000\n");
	p[5] = 'X';
	char *d = diff_unified(a, b, "big");
	cr_assert_str_eq(d, "--- a/big\n+++ b/big\n@@ -24998,7 +24998,7 @@\n line 24997\n line 24998\n line 24999\n"
			    "-line 25000\n+line X5000\n line 25001\n line 25002\n line 25003\n");
	free(d);
	free(b);
	/* unrelated texts beyond the search limit: delete all, insert all */
	b = numbered(3000, "other");
	d = diff_unified(a, b, "big");
	cr_assert_not_null(d);
	char *r = apply(a, d);
	cr_assert_str_eq(r, b);
	free(r);
	free(d);
	free(a);
	free(b);
}
