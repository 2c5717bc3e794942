/* test_ini.c - the INI dialect: syntax, line numbers, error messages, and
 * table-driven validation (unknown/duplicate/required sections and keys). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ini.h"

static void parse_ok(const char *text, struct ini *ini)
{
	char *err = NULL;
	int rc = ini_parse("f.ini", text, strlen(text), ini, &err);
	cr_assert_eq(rc, 0, "%s", err ? err : "");
	cr_assert_null(err);
}

static void parse_fails(const char *text, size_t len, const char *want)
{
	struct ini ini;
	char *err = NULL;
	cr_assert_eq(ini_parse("f.ini", text, len, &ini, &err), -1);
	cr_assert_not_null(err);
	cr_expect_str_eq(err, want);
	cr_expect_eq(ini.n_sections, 0);
	free(err);
}

Test(parse, sections_entries_lines)
{
	struct ini ini;
	parse_ok("\xef\xbb\xbf# comment\n"
		 "; another\n"
		 "[pve]\r\n"
		 "  url =  https://pve1:8006  \r\n"
		 "empty =\n"
		 "\n"
		 "[window \"night shift\"]\n"
		 "node=pve2\n"
		 "note = a # not a comment ; nor this\n"
		 "\t[ loader.conf ]\n"
		 "virtio_load = \"YES\"\n",
		 &ini);
	cr_assert_eq(ini.n_sections, 3);
	cr_expect_eq(ini.n_lines, 11);
	const struct ini_section *s = &ini.sections[0];
	cr_expect_str_eq(s->name, "pve");
	cr_expect_null(s->label);
	cr_expect_eq(s->line, 3);
	cr_assert_eq(s->n_entries, 2);
	cr_expect_str_eq(s->entries[0].key, "url");
	cr_expect_str_eq(s->entries[0].value, "https://pve1:8006");
	cr_expect_eq(s->entries[0].line, 4);
	cr_expect_str_eq(s->entries[1].value, "");
	s = &ini.sections[1];
	cr_expect_str_eq(s->name, "window");
	cr_expect_str_eq(s->label, "night shift");
	cr_expect_str_eq(ini_get(s, "node")->value, "pve2");
	cr_expect_str_eq(ini_get(s, "note")->value, "a # not a comment ; nor this");
	cr_expect_eq(ini_get(s, "note")->line, 9);
	cr_expect_null(ini_get(s, "nope"));
	s = &ini.sections[2];
	cr_expect_str_eq(s->name, "loader.conf");
	cr_expect_str_eq(ini_get(s, "virtio_load")->value, "\"YES\"");
	cr_expect_eq(ini_find(&ini, "window", "night shift"), &ini.sections[1]);
	cr_expect_null(ini_find(&ini, "window", NULL));
	cr_expect_eq(ini_find(&ini, "pve", NULL), &ini.sections[0]);
	ini_free(&ini);
	cr_expect_null(ini.sections);
}

Test(parse, keeps_duplicates_in_order)
{
	struct ini ini;
	parse_ok("[a]\nk = 1\nk = 2\n[a]\nk = 3\n", &ini);
	cr_assert_eq(ini.n_sections, 2);
	cr_expect_str_eq(ini.sections[0].entries[1].value, "2");
	cr_expect_str_eq(ini_get(&ini.sections[0], "k")->value, "1");
	ini_free(&ini);
}

Test(parse, no_trailing_newline_and_empty)
{
	struct ini ini;
	parse_ok("[a]\nk = v", &ini);
	cr_expect_str_eq(ini.sections[0].entries[0].value, "v");
	ini_free(&ini);
	parse_ok("", &ini);
	cr_expect_eq(ini.n_sections, 0);
	ini_free(&ini);
}

Test(parse, errors_name_file_and_line)
{
	parse_fails("k = v\n", 6, "f.ini:1: k: key outside any section");
	parse_fails("[a]\n\njust words\n", 16, "f.ini:3: expected '=' after the key");
	parse_fails("[a]\nk:v\n", 8, "f.ini:2: column 2: invalid character in a key");
	parse_fails("[a]\n= v\n", 8, "f.ini:2: expected 'key = value' or '[section]'");
	parse_fails("[a\n", 3, "f.ini:1: expected ']' to end the section header");
	/* an unquoted label: the syntax said */
	parse_fails("[x]\n[pool lan]\n", 15, "f.ini:2: expected ']' to end the section header: a "
		    "label is written in double quotes, [pool \"lan\"]");
	parse_fails("[]\n", 3, "f.ini:1: section name expected after '['");
	parse_fails("[a] x\n", 6, "f.ini:1: unexpected text after ']'");
	parse_fails("[a \"x]\n", 7, "f.ini:1: unterminated section label (missing '\"')");
	parse_fails("[a \"\"]\n", 7, "f.ini:1: empty section label");
	parse_fails("[a]\nk = a\0b\n", 10, "f.ini:2: NUL byte in file");
	parse_fails("[a]\nk = a\033b\n", 10, "f.ini:2: control character 0x1b in file");
}

Test(parse, load_missing_file)
{
	struct ini ini;
	char *err = NULL;
	cr_assert_eq(ini_load("/nonexistent/x.conf", &ini, &err), -1);
	cr_expect_str_eq(err, "/nonexistent/x.conf: No such file or directory");
	free(err);
}

static const struct ini_key_spec a_keys[] = {
	{"must", INI_KEY_REQUIRED},
	{"opt", 0},
	{"many", INI_KEY_LIST},
	{"ipconfig[n]", 0},
	{NULL, 0},
};
static const struct ini_key_spec w_keys[] = {{"node", INI_KEY_REQUIRED}, {NULL, 0}};
static const struct ini_section_spec spec[] = {
	{"a", INI_SEC_REQUIRED, a_keys},
	{"free", INI_SEC_ANYKEY, NULL},
	{"window", INI_SEC_LABEL, w_keys},
	{NULL, 0, NULL},
};

static char *validate(const char *text, int *n)
{
	struct ini ini;
	parse_ok(text, &ini);
	struct sbuf errs = {0};
	*n = ini_validate(&ini, spec, &errs);
	ini_free(&ini);
	return sbuf_steal(&errs);
}

Test(validate, clean_file)
{
	int n;
	char *e = validate("[a]\nmust = 1\nmany = x\nmany = y\nipconfig0 = a\nipconfig12 = b\n"
			   "[free]\nanything = 1\n[window \"w1\"]\nnode = n\n[window \"w2\"]\nnode = m\n",
			   &n);
	cr_expect_eq(n, 0);
	cr_expect_str_eq(e, "");
	free(e);
}

Test(validate, every_problem_reported_in_order)
{
	int n;
	char *e = validate("[a]\n"                  /* 1 */
			   "opt = 1\n"              /* 2 */
			   "opt = 2\n"              /* 3 */
			   "bogus = 3\n"            /* 4 */
			   "ipconfig01 = x\n"       /* 5 */
			   "[free]\n"               /* 6 */
			   "k = 1\n"                /* 7 */
			   "k = 2\n"                /* 8 */
			   "[window]\n"             /* 9 */
			   "[free \"x\"]\n"         /* 10 */
			   "[window \"w\"]\n"       /* 11 */
			   "[window \"w\"]\n"       /* 12 */
			   "node = 1\n"             /* 13 */
			   "[zzz]\n",               /* 14 */
			   &n);
	cr_expect_eq(n, 10);
	cr_expect_str_eq(e,
			 "f.ini:3: [a] opt: duplicate key (first at line 2)\n"
			 "f.ini:4: [a] bogus: unknown key\n"
			 "f.ini:5: [a] ipconfig01: unknown key\n"
			 "f.ini:1: [a] must: missing required key\n"
			 "f.ini:8: [free] k: duplicate key (first at line 7)\n"
			 "f.ini:9: [window]: needs a name: [window \"NAME\"]\n"
			 "f.ini:10: [free \"x\"]: takes no name: write [free]\n"
			 "f.ini:11: [window \"w\"] node: missing required key\n"
			 "f.ini:12: [window \"w\"]: duplicate section (first at line 11)\n"
			 "f.ini:14: [zzz]: unknown section");
	free(e);
}

Test(validate, missing_required_section)
{
	int n;
	char *e = validate("[free]\nx = 1\n", &n);
	cr_expect_eq(n, 1);
	cr_expect_str_eq(e, "f.ini:2: [a]: missing required section");
	free(e);
}

Test(validate, key_patterns)
{
	cr_expect(ini_key_matches("net[n]", "net0"));
	cr_expect(ini_key_matches("net[n]", "net31"));
	cr_expect_not(ini_key_matches("net[n]", "net"));
	cr_expect_not(ini_key_matches("net[n]", "net01"));
	cr_expect_not(ini_key_matches("net[n]", "net1x"));
	cr_expect_not(ini_key_matches("net[n]", "netx"));
	cr_expect(ini_key_matches("plain", "plain"));
	cr_expect_not(ini_key_matches("plain", "plain0"));
}

Test(validate, errf_format)
{
	struct sbuf b = {0};
	struct ini_section s = {.name = "pve", .label = NULL, .line = 3};
	struct ini_section w = {.name = "window", .label = "n", .line = 9};
	cr_assert_eq(ini_errf(&b, "x.conf", 4, &s, "url", "bad %s", "url"), 0);
	cr_assert_eq(ini_errf(&b, "x.conf", 9, &w, NULL, "odd"), 0);
	cr_assert_eq(ini_errf(&b, "x.conf", 0, NULL, "k", "no line"), 0);
	cr_assert_eq(ini_errf(&b, "x.conf", 2, NULL, NULL, "plain"), 0);
	cr_expect_str_eq(sbuf_str(&b), "x.conf:4: [pve] url: bad url\n"
				       "x.conf:9: [window \"n\"]: odd\n"
				       "x.conf: k: no line\n"
				       "x.conf:2: plain");
	sbuf_free(&b);
}

/* Random bytes drawn from INI-ish characters: the parser either accepts or
 * names a line, and never crashes or leaks (ASan/LSan watch this). */
Test(parse, random_input_is_safe)
{
	static const char alphabet[] = "[]\"=#; \t\r\nabcXYZ019._-\x01\xef\xbb\xbf";
	unsigned seed = 12345;
	char buf[256];
	for (int round = 0; round < 3000; round++) {
		size_t len = (size_t)(rand_r(&seed) % (int)sizeof buf);
		for (size_t i = 0; i < len; i++)
			buf[i] = alphabet[rand_r(&seed) % (int)(sizeof alphabet - 1)];
		struct ini ini;
		char *err = NULL;
		if (ini_parse("r.ini", buf, len, &ini, &err) == 0) {
			cr_assert_null(err);
			ini_free(&ini);
		} else {
			cr_assert_not_null(err);
			cr_assert(strncmp(err, "r.ini:", 6) == 0, "%s", err);
			free(err);
		}
	}
}
