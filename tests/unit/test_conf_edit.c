/* test_conf_edit.c - pvagent.conf edited in place (conf_edit.h): a key
 * rewritten, added to its section, a section added, labelled sections
 * ([pool "lan"]) found; every other byte (comments, blank lines, CRLF,
 * odd spacing) kept; a text ini.h refuses is refused; the atomic write
 * keeps the file's mode. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf_edit.h"
#include "util.h"

static const char *const user_text =
	"# my cluster\n"
	"[pve]\n"
	"url = https://old:8006\n"
	"  node=pve1   \n"
	"\n"
	"; kept\n"
	"[pool \"lan\"]\r\n"
	"cidr = 192.0.2.0/24\r\n"
	"[window \"night\"]\n"
	"node = pve2\n"
	"duration = 1h";

static char *edit(const char *text, const char *sec, const char *label, const char *key,
		  const char *value, bool *changed)
{
	struct conf_edit e;
	char *err = NULL;
	cr_assert_eq(conf_edit_load(&e, "c.conf", text, strlen(text), &err), 0, "%s", err);
	cr_assert_eq(conf_edit_set(&e, sec, label, key, value, &err), 0, "%s", err);
	char *out = conf_edit_text(&e);
	*changed = e.changed;
	conf_edit_free(&e);
	return out;
}

Test(conf_edit, a_key_rewritten_in_its_line_the_rest_kept)
{
	bool ch;
	char *out = edit(user_text, "pve", NULL, "url", "https://new:8006", &ch);
	cr_assert(ch);
	char *want = strprintf("# my cluster\n[pve]\nurl = https://new:8006\n%s",
			       strstr(user_text, "  node=pve1"));
	cr_assert_str_eq(out, want);
	free(want);
	free(out);
	/* the indentation of the line stays, the same value changes nothing */
	out = edit(user_text, "pve", NULL, "node", "pve3", &ch);
	cr_assert(strstr(out, "\n  node = pve3\n\n; kept\n"), "%s", out);
	free(out);
	out = edit(user_text, "pve", NULL, "node", "pve1", &ch);
	cr_assert(!ch);
	cr_assert_str_eq(out, user_text);
	free(out);
}

Test(conf_edit, a_key_added_after_the_sections_last_and_labels_found)
{
	bool ch;
	char *out = edit(user_text, "pve", NULL, "fingerprint", "AA:BB", &ch);
	cr_assert(strstr(out, "  node=pve1   \nfingerprint = AA:BB\n\n; kept\n"), "%s", out);
	free(out);
	out = edit(user_text, "pool", "lan", "gateway", "192.0.2.1", &ch);
	cr_assert(strstr(out, "cidr = 192.0.2.0/24\r\ngateway = 192.0.2.1\n[window"), "%s", out);
	free(out);
	/* a last line without its newline gets one before the added key */
	out = edit(user_text, "window", "night", "to", "pve3", &ch);
	cr_assert(strstr(out, "duration = 1h\nto = pve3\n"), "%s", out);
	cr_assert_eq(strncmp(out, user_text, strlen(user_text)), 0);
	free(out);
}

Test(conf_edit, a_section_added_at_the_end)
{
	bool ch;
	char *out = edit(user_text, "ssh", NULL, "identity", "/k", &ch);
	char *want = strprintf("%s\n\n[ssh]\nidentity = /k\n", user_text);
	cr_assert_str_eq(out, want);
	free(want);
	free(out);
	out = edit("", "pve", NULL, "url", "https://h:8006", &ch);
	cr_assert_str_eq(out, "[pve]\nurl = https://h:8006\n");
	free(out);
	out = edit("[pve]\n", "pool", "a b", "cidr", "x", &ch);
	cr_assert_str_eq(out, "[pve]\n\n[pool \"a b\"]\ncidr = x\n");
	free(out);
}

Test(conf_edit, what_ini_refuses_is_refused)
{
	struct conf_edit e;
	char *err = NULL;
	const char *bad = "[pve]\nurl = x\n[pool lan]\n";
	cr_assert_eq(conf_edit_load(&e, "c.conf", bad, strlen(bad), &err), -1);
	cr_assert(err && strstr(err, "c.conf:3:"), "%s", err);
	free(err);
	cr_assert_eq(conf_edit_load(&e, "c.conf", "[pve]\n", 6, &err), 0);
	cr_assert_eq(conf_edit_set(&e, "pve", NULL, "url", "a\nb", &err), -1);
	cr_assert(err && strstr(err, "url"), "%s", err);
	free(err);
	cr_assert_eq(conf_edit_set(&e, "pool", "a\"b", "cidr", "x", &err), -1);
	free(err);
	cr_assert(!e.changed);
	conf_edit_free(&e);
}

Test(conf_edit, the_atomic_write_keeps_the_mode)
{
	char dir[] = "/tmp/pvagent-confedit-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *p = strprintf("%s/c.conf", dir), *why = NULL, *got = NULL;
	cr_assert_eq(conf_write_atomic(p, "a\n", 0, &why), 0, "%s", why);
	struct stat st;
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(chmod(p, 0640), 0);
	cr_assert_eq(conf_write_atomic(p, "b\n", 0, &why), 0, "%s", why);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0640);
	cr_assert_eq(conf_write_atomic(p, "b\n", 0600, &why), 0, "%s", why);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(read_file(p, &got, NULL), 0);
	cr_assert_str_eq(got, "b\n");
	free(got);
	char *q = strprintf("%s/no/c.conf", dir);
	cr_assert_eq(conf_write_atomic(q, "b\n", 0600, &why), -1);
	cr_assert(why && strstr(why, q), "%s", why);
	free(why);
	free(q);
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(rmdir(dir), 0);
	free(p);
}

Test(conf_edit, sets_one_after_another)
{
	struct conf_edit e;
	char *err = NULL;
	cr_assert_eq(conf_edit_load(&e, "c.conf", "# h\n", 4, &err), 0, "%s", err);
	cr_assert_eq(conf_edit_set(&e, "pve", NULL, "url", "u", &err), 0, "%s", err);
	cr_assert_eq(conf_edit_set(&e, "pve", NULL, "node", "n", &err), 0, "%s", err);
	cr_assert_eq(conf_edit_set(&e, "ssh", NULL, "identity", "k", &err), 0, "%s", err);
	cr_assert_eq(conf_edit_set(&e, "pve", NULL, "url", "v", &err), 0, "%s", err);
	cr_assert_eq(conf_edit_set(&e, "ssh", NULL, "port", "22", &err), 0, "%s", err);
	char *t = conf_edit_text(&e), *v = conf_edit_get(&e, "pve", NULL, "url");
	cr_assert_str_eq(t, "# h\n\n[pve]\nurl = v\nnode = n\n\n[ssh]\nidentity = k\nport = 22\n");
	cr_assert_str_eq(v, "v");
	free(v);
	cr_assert_null(conf_edit_get(&e, "pve", NULL, "storage"));
	cr_assert_null(conf_edit_get(&e, "pool", "x", "cidr"));
	free(t);
	conf_edit_free(&e);
}
