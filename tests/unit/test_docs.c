/* test_docs.c - the README a newcomer reads (issue 28): README.md stays
 * within 16 KiB; every relative link of README.md and of the documents
 * the rest moved to (tests/README.md, agent/README.md,
 * tests/pvesim/README.md, ...) names a file that exists; README.md links
 * each of those documents and the man pages; and its command table lists
 * every command of the tool's command table (`pvagent __complete
 * commands`, $PVAGENT_BIN, default build/san/pvagent); the man pages run
 * no words together. Run from the tree. */
#include "sshd.h"
#include "util.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
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

/* The arguments of a man page's font macro line (".BR a \"b c\" d"): the
 * words, a quoted one as one. */
static size_t macro_args(const char *l, char args[][128], size_t max)
{
	size_t n = 0;
	while (*l && n < max) {
		while (*l == ' ')
			l++;
		if (!*l)
			break;
		bool q = *l == '"';
		const char *s = l + q, *e = q ? strchr(s, '"') : strchr(s, ' ');
		if (!e)
			e = s + strlen(s);
		snprintf(args[n++], 128, "%.*s", (int)(e - s), s);
		l = *e ? e + 1 : e;
	}
	return n;
}

static bool word_end(const char *a)
{
	size_t n = strlen(a);
	while (n && strchr(".,;:", a[n - 1]))
		n--;
	if (n >= 4 && a[n - 4] == '\\' && a[n - 3] == '(')
		return false; /* a special character: \(dq is '"' */
	return n >= 2 && isalnum((unsigned char)a[n - 1]) && isalnum((unsigned char)a[n - 2]);
}

/* An alternating font macro (.BR, .IR, ...) joins its arguments without a
 * space: ".BR \-\-migrate . Then it writes" printed "--migrate.Thenitwrites"
 * (issue 33). Two words side by side in one is such a slip. */
Test(docs, man_pages_run_no_words_together)
{
	const char *pages[] = {"conf/man/pvagent.1", "conf/man/pvagent.conf.5",
			       "conf/man/pvagent-template.5", "conf/man/pvagentd.8"};
	for (size_t p = 0; p < sizeof pages / sizeof *pages; p++) {
		char *text = slurp(pages[p]);
		int line = 0;
		for (char *l = text, *nl; l && *l; l = nl ? nl + 1 : NULL) {
			nl = strchr(l, '\n');
			if (nl)
				*nl = '\0';
			line++;
			if (l[0] != '.' || !strchr("BIR", l[1]) || !strchr("BIR", l[2]) || l[1] == l[2] ||
			    l[3] != ' ')
				continue;
			char args[32][128];
			size_t n = macro_args(l + 4, args, 32);
			for (size_t i = 0; i + 1 < n; i++)
				cr_expect(!(word_end(args[i]) && isalpha((unsigned char)args[i + 1][0]) &&
					    isalpha((unsigned char)args[i + 1][1])),
					  "%s:%d: '%s' and '%s' run together: %s", pages[p], line,
					  args[i], args[i + 1], l);
		}
		free(text);
	}
}
