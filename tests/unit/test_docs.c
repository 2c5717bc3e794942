/* test_docs.c - the README a newcomer reads (issue 28): README.md stays
 * within 16 KiB; every relative link of README.md and of the documents
 * the rest moved to (tests/README.md, agent/README.md,
 * tests/pvesim/README.md, ...) names a file that exists; README.md links
 * each of those documents and the man pages; and its command table lists
 * every command of the tool's command table (`pvagent __complete
 * commands`, $PVAGENT_BIN, default build/san/pvagent). Run from the tree. */
#include "sshd.h"
#include "util.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define README_MAX 16384

/* The documents whose links are checked. */
static const char *const docs[] = {
	"README.md",	      "tests/README.md",	 "agent/README.md",
	"tests/pvesim/README.md", "tests/guests/README.md", "tests/realcfg/README.md",
};

/* What README.md must link to: where its former sections went. */
static const char *const moved[] = {
	"tests/README.md",	      "tests/pvesim/README.md",	 "agent/README.md",
	"tests/guests/README.md",     "tests/realcfg/README.md", "conf/man/pvagent.1",
	"conf/man/pvagent.conf.5",    "conf/man/pvagent-template.5", "conf/man/pvagentd.8",
	"conf/pvagent.conf.example",
};

static char *slurp(const char *path)
{
	char *text = NULL;
	cr_assert_eq(read_file(path, &text, NULL), 0, "cannot read %s (run from the tree)", path);
	return text;
}

/* The relative link targets of a Markdown text, "[text](target)", without
 * a "#fragment" or a "title": each malloc'd, in *out (n returned). Links
 * inside `code` and ``` blocks are not links. Absolute URLs and pure
 * fragments are left out. */
static size_t links_of(const char *text, char ***out)
{
	char **v = NULL;
	size_t n = 0;
	bool fence = false, code = false;
	for (const char *p = text; *p; p++) {
		if ((p == text || p[-1] == '\n') && strncmp(p, "```", 3) == 0) {
			fence = !fence;
			p += 2;
			continue;
		}
		if (fence)
			continue;
		if (*p == '`') {
			code = !code;
			continue;
		}
		if (*p == '\n' && p[1] == '\n')
			code = false; /* an unmatched backtick ends with its paragraph */
		if (code || p[0] != ']' || p[1] != '(')
			continue;
		const char *t = p + 2, *end = strchr(t, ')');
		cr_assert_not_null(end, "an unclosed link: %.40s", p);
		p = end;
		char *target = strndup(t, strcspn(t, " #)"));
		if (!*target || strstr(target, "://") || strncmp(target, "mailto:", 7) == 0) {
			free(target); /* a fragment of this page, or an absolute URL */
			continue;
		}
		v = realloc(v, (n + 1) * sizeof *v);
		cr_assert_not_null(v);
		v[n++] = target;
	}
	*out = v;
	return n;
}

Test(docs, readme_within_16k)
{
	struct stat st;
	cr_assert_eq(stat("README.md", &st), 0, "README.md (run from the tree)");
	cr_assert_leq(st.st_size, README_MAX,
		      "README.md is %lld bytes, more than %d: move the detail to the man pages "
		      "or tests/README.md",
		      (long long)st.st_size, README_MAX);
}

/* Every relative link names a file or directory that exists, relative to
 * the document's directory. */
Test(docs, relative_links_exist)
{
	size_t total = 0;
	for (size_t d = 0; d < sizeof docs / sizeof *docs; d++) {
		char *text = slurp(docs[d]);
		const char *slash = strrchr(docs[d], '/');
		char *dir = slash ? strndup(docs[d], (size_t)(slash - docs[d] + 1)) : strdup("");
		char **links = NULL;
		size_t n = links_of(text, &links);
		for (size_t i = 0; i < n; i++) {
			char *path = strprintf("%s%s", dir, links[i]);
			struct stat st;
			cr_expect_eq(stat(path, &st), 0, "%s links to %s: %s does not exist", docs[d],
				     links[i], path);
			free(path);
			free(links[i]);
		}
		total += n;
		free(links);
		free(dir);
		free(text);
	}
	cr_assert_gt(total, 10, "only %zu relative links found: the link reader is broken", total);
}

/* README.md points to where its former sections went. */
Test(docs, readme_links_the_moved_documents)
{
	char *text = slurp("README.md");
	char **links = NULL;
	size_t n = links_of(text, &links);
	for (size_t m = 0; m < sizeof moved / sizeof *moved; m++) {
		bool found = false;
		for (size_t i = 0; i < n && !found; i++)
			found = strcmp(links[i], moved[m]) == 0;
		cr_expect(found, "README.md does not link to %s", moved[m]);
	}
	for (size_t i = 0; i < n; i++)
		free(links[i]);
	free(links);
	free(text);
}

/* The first word of each table row's first cell in backticks:
 * "| `image list|show|build|rm` | ..." gives "image". */
static bool in_table(const char *text, const char *cmd)
{
	size_t len = strlen(cmd);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, "| `", 3) != 0)
			continue;
		const char *w = l + 3;
		if (strncmp(w, cmd, len) == 0 && strchr(" `\\", w[len]))
			return true;
	}
	return false;
}

Test(docs, readme_table_has_every_command)
{
	const char *bin = getenv("PVAGENT_BIN");
	const char *argv[] = {bin && *bin ? bin : "build/san/pvagent", "__complete", "commands", NULL};
	char *out = NULL;
	cr_assert_eq(test_run(argv, NULL, &out), 0, "pvagent __complete commands: %s", out);
	char *text = slurp("README.md");
	size_t n = 0;
	for (char *c = out, *nl; c && *c; c = nl ? nl + 1 : NULL) {
		nl = strchr(c, '\n');
		if (nl)
			*nl = '\0';
		if (!*c)
			continue;
		n++;
		cr_expect(in_table(text, c), "README.md's command table has no row for '%s'", c);
	}
	cr_assert_gt(n, 15, "only %zu commands from pvagent __complete commands", n);
	free(text);
	free(out);
}
