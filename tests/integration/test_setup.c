/* test_setup.c - `pvagent setup URL` and `pvagent doctor` against the
 * simulator's access API (demo scenario, root@pam's password from it):
 * a fresh setup whose token runs nodes, list and up --dry-run without a
 * 403; a second run that changes nothing and makes no token (the request
 * log and the token list say so); a privilege added by hand and sections
 * and comments added to pvagent.conf by hand kept by a second run; a lost
 * secret refused, then replaced with --force; a token answer lost after
 * PVE made it, replaced in the same run; a refused step after the token
 * that keeps its secret; a wrong password, a missing --fingerprint without
 * a terminal, a configuration directory that cannot be made, which change
 * nothing; the URL forms normalised and userinfo never echoed; an
 * administrator with TFA told the ways out; the --dry-run pveum lines, with
 * and without a login, each turned into its API call and accepted; doctor
 * all well on the set-up cluster, then naming a privilege taken from the
 * role and its grant line. Every setup runs with -vv, and no output holds
 * the token's secret. */
#include <criterion/criterion.h>

#include "clirun.h"
#include "httpserve.h"
#include "pve.h"
#include "pveprivs.h"
#include "pvevers.h"
#include "simproc.h"
#include "sshd.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct simproc sp;
static char *dir, *conf, *secret, *pw, *key;

static const char *bin(void)
{
	const char *b = getenv("PVAGENT_BIN");
	return b ? b : "build/san/pvagent";
}

static void start_scenario(const char *scenario)
{
	cr_assert_eq(simproc_start(&sp, scenario, NULL), 0, "simulator did not start");
	char tmpl[] = "/tmp/pvagent-setup-XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	dir = strdup(tmpl);
	conf = strprintf("%s/etc/pvagent.conf", dir);
	secret = strprintf("%s/etc/token.secret", dir);
	key = strprintf("%s/etc/id_ed25519", dir);
	pw = strprintf("%s/pw", dir);
	cr_assert_eq(test_write_file(pw, "demo-root-password\n", 0600), 0);
}

static void start(void)
{
	start_scenario("tests/pvesim/scenarios/demo.json");
}

static void stop(void)
{
	cr_assert_eq(simproc_stop(&sp), 0, "simulator did not stop cleanly");
	char *rm = strprintf("rm -rf '%s'", dir);
	cr_assert_eq(system(rm), 0);
	free(rm);
	free(dir);
	free(conf);
	free(secret);
	free(key);
	free(pw);
}

/* cppcheck-suppress unknownMacro */
TestSuite(setup, .init = start, .fini = stop, .timeout = 120);

/* pvagent -c CONF ARGS... (NULL-terminated): its exit status. */
static int pv(char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = test_pvagentv(bin(), conf, out, ap);
	va_end(ap);
	cr_assert_neq(rc, -2, "sanitizer report:\n%s", *out);
	cr_assert_neq(rc, -1, "pvagent did not run");
	return rc;
}

static char *slurp(const char *path);

/* No output of setup holds the token's secret, at any trace level. */
static void no_secret_in(const char *out)
{
	char *sec = slurp(secret);
	if (sec) {
		sec[strcspn(sec, "\n")] = '\0';
		cr_assert(*sec && !strstr(out, sec), "the secret in the output:\n%s", out);
	}
	free(sec);
}

/* pvagent -vv setup URL with the password file and the fingerprint. */
static int setup_at(char **out, const char *url, const char *extra, const char *extra2)
{
	int rc = pv(out, "-vv", "setup", url, "--password-file", pw, "--fingerprint",
		    sp.fingerprint, extra, extra2, NULL);
	no_secret_in(*out);
	return rc;
}

static int setup(char **out, const char *extra)
{
	return setup_at(out, sp.url, extra, NULL);
}

/* The requests that change the access configuration so far. */
static int changes(void)
{
	return simproc_count(&sp, "POST", "/access/roles", -1) +
	       simproc_count(&sp, "PUT", "/access/roles/" PVEPRIVS_ROLE, -1) +
	       simproc_count(&sp, "POST", "/access/users", -1) +
	       simproc_count(&sp, "POST", "/token/" PVEPRIVS_TOKEN, -1) +
	       simproc_count(&sp, "DELETE", "/token/" PVEPRIVS_TOKEN, -1) +
	       simproc_count(&sp, "PUT", "/access/acl", -1);
}

static size_t tokens(void)
{
	long st = 0;
	json_object *b = NULL;
	cr_assert_eq(sim_api(&sp, "GET", "/access/users/" PVEPRIVS_USER "/token", NULL, &st, &b),
		     0);
	cr_assert_eq(st, 200);
	size_t n = json_object_array_length(json_object_object_get(b, "data"));
	json_object_put(b);
	return n;
}

static char *slurp(const char *path)
{
	char *s = NULL;
	return read_file(path, &s, NULL) == 0 ? s : NULL;
}

static void mode_is_0600(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "%s missing", path);
	cr_assert_eq(st.st_mode & 0777, 0600, "%s: mode %o", path, st.st_mode & 0777);
}

static int forbidden(void)
{
	return simproc_count(&sp, "GET", "", 403) + simproc_count(&sp, "POST", "", 403) +
	       simproc_count(&sp, "PUT", "", 403) + simproc_count(&sp, "DELETE", "", 403);
}

static int pve_major(void)
{
	long st = 0;
	json_object *b = NULL;
	cr_assert_eq(sim_api(&sp, "GET", "/version", NULL, &st, &b), 0);
	int major = atoi(json_object_get_string(
		json_object_object_get(json_object_object_get(b, "data"), "version")));
	json_object_put(b);
	return major;
}

/* The shipped templates and a state directory added to the configuration. */
static void add_paths(void)
{
	FILE *f = fopen(conf, "a");
	cr_assert_not_null(f);
	char *cwd = getcwd(NULL, 0);
	fprintf(f, "[paths]\ntemplates = %s/templates\nstate = %s/state\n", cwd, dir);
	fclose(f);
	free(cwd);
}

/* An SSH key where setup looks for one (beside the configuration). */
static void make_key(void)
{
	char *etc = strprintf("%s/etc", dir);
	cr_assert_eq(mkdir(etc, 0700), 0);
	free(etc);
	cr_assert_eq(test_keygen(key, "ed25519", 0), 0);
}

Test(setup, fresh_then_again_changes_nothing_and_the_token_works)
{
	char *out = NULL;
	make_key();
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	cr_assert(strstr(out, "created"), "%s", out);
	free(out);
	mode_is_0600(conf);
	mode_is_0600(secret);
	int made = changes();
	cr_assert_eq(made, 4, "role, user, token, ACL (one PUT for both): %d", made);
	char *conf1 = slurp(conf), *secret1 = slurp(secret);
	cr_assert(conf1 && strstr(conf1, "token_id = " PVEPRIVS_USER "!" PVEPRIVS_TOKEN));
	cr_assert(strstr(conf1, "identity = "), "%s", conf1);

	/* again: nothing changes, no new token, the files as they were */
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(changes(), made);
	cr_assert_eq(tokens(), 1);
	char *conf2 = slurp(conf), *secret2 = slurp(secret);
	cr_assert_str_eq(conf2, conf1);
	cr_assert_str_eq(secret2, secret1);
	free(conf1);
	free(conf2);
	free(secret1);
	free(secret2);

	/* the token runs the commands with what the role grants */
	int before = forbidden();
	cr_assert_eq(pv(&out, "nodes", NULL), 0, "%s", out);
	cr_assert(strstr(out, "pve1"), "%s", out);
	free(out);
	cr_assert_eq(pv(&out, "list", NULL), 0, "%s", out);
	cr_assert(strstr(out, "fbsd9-legacy"), "%s", out);
	free(out);
	add_paths();
	cr_assert_eq(pv(&out, "up", "web1", "-t", "freebsd-14", "--dry-run", NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(forbidden(), before, "a request of the token got a 403");
}

Test(setup, a_lost_secret_needs_force)
{
	char *out = NULL;
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(unlink(secret), 0);
	cr_assert_eq(setup(&out, NULL), 1, "%s", out);
	cr_assert(strstr(out, "--force") && strstr(out, "nothing written"), "%s", out);
	free(out);
	cr_assert_neq(access(secret, F_OK), 0, "no secret written");
	cr_assert_eq(simproc_count(&sp, "DELETE", "/token/" PVEPRIVS_TOKEN, -1), 0);

	cr_assert_eq(setup(&out, "--force"), 0, "%s", out);
	cr_assert(strstr(out, "replaced"), "%s", out);
	free(out);
	mode_is_0600(secret);
	cr_assert_eq(simproc_count(&sp, "DELETE", "/token/" PVEPRIVS_TOKEN, 200), 1);
	cr_assert_eq(tokens(), 1);
	cr_assert_eq(pv(&out, "nodes", NULL), 0, "%s", out);
	free(out);
}

Test(setup, a_wrong_password_writes_nothing)
{
	char *out = NULL;
	cr_assert_eq(test_write_file(pw, "not-the-password\n", 0600), 0);
	int rc = setup(&out, NULL);
	cr_assert_eq(rc, 4, "unreachable/auth exit code: %d\n%s", rc, out);
	cr_assert(strstr(out, "login") && strstr(out, "nothing written"), "%s", out);
	free(out);
	cr_assert_neq(access(conf, F_OK), 0);
	cr_assert_neq(access(secret, F_OK), 0);
	char *etc = strprintf("%s/etc", dir);
	cr_assert_neq(access(etc, F_OK), 0, "not even the directory");
	free(etc);
	cr_assert_eq(changes(), 0);
}

Test(setup, no_fingerprint_and_no_terminal_is_refused)
{
	char *out = NULL;
	int rc = pv(&out, "setup", sp.url, "--password-file", pw, NULL);
	cr_assert_eq(rc, 2, "%s", out);
	cr_assert(strstr(out, "--fingerprint") && strstr(out, sp.fingerprint), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sp, "POST", "/access/ticket", -1), 0, "no password sent");
	cr_assert_neq(access(conf, F_OK), 0);
}

/* `pveum ...` -> its API call with the scenario's root token. */
static void pveum_call(const char *line)
{
	char w[16][1024];
	size_t n = 0;
	for (const char *p = line; *p && n < 16;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		size_t l = 0;
		char q = 0;
		for (; *p && (q || *p != ' ') && l < 1023; p++) {
			if (!q && (*p == '"' || *p == '\''))
				q = *p;
			else if (q && *p == q)
				q = 0;
			else
				w[n][l++] = *p;
		}
		w[n++][l] = '\0';
	}
	cr_assert_geq(n, 4, "%s", line);
	char *path = NULL, *form = NULL, *privs = NULL;
	const char *method = "POST";
	if (strcmp(w[1], "role") == 0 && strcmp(w[2], "add") == 0 && n == 6) {
		privs = pve_percent_encode(w[5]);
		path = strdup("/access/roles");
		form = strprintf("roleid=%s&privs=%s", w[3], privs);
	} else if (strcmp(w[1], "user") == 0 && strcmp(w[2], "add") == 0) {
		path = strdup("/access/users");
		form = strprintf("userid=%s&comment=%s", w[3], w[5]);
	} else if (strcmp(w[1], "user") == 0 && strcmp(w[2], "token") == 0 && n == 8) {
		path = strprintf("/access/users/%s/token/%s", w[4], w[5]);
		form = strprintf("privsep=%s", w[7]);
	} else if (strcmp(w[1], "acl") == 0 && strcmp(w[2], "modify") == 0 && n == 8) {
		method = "PUT";
		path = strdup("/access/acl");
		form = strprintf("path=%s&%s=%s&roles=%s", w[3], w[4] + 2, w[5], w[7]);
	} else {
		cr_assert_fail("a pveum line this test does not know: %s", line);
	}
	long st = 0;
	json_object *b = NULL;
	cr_assert_eq(sim_api(&sp, method, path, form, &st, &b), 0);
	cr_assert_eq(st, 200, "%s -> %s %s: %s", line, method, path,
		     json_object_to_json_string(b));
	json_object_put(b);
	free(path);
	free(form);
	free(privs);
}

Test(setup, dry_run_lines_are_accepted_one_by_one)
{
	char *out = NULL;
	cr_assert_eq(setup(&out, "--dry-run"), 0, "%s", out);
	cr_assert_eq(changes(), 0, "a dry run changes nothing");
	cr_assert_neq(access(conf, F_OK), 0);
	int lines = 0;
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
		if (strncmp(l, "pveum ", 6) == 0) {
			pveum_call(l);
			lines++;
		}
	free(out);
	cr_assert_eq(lines, 5);
	/* what they made grants the token the version's agent privilege */
	char *q = strprintf("/access/permissions?userid=%s&path=/vms",
			    PVEPRIVS_USER "!" PVEPRIVS_TOKEN);
	long st = 0;
	json_object *b = NULL;
	cr_assert_eq(sim_api(&sp, "GET", q, NULL, &st, &b), 0);
	free(q);
	json_object *vms = json_object_object_get(json_object_object_get(b, "data"), "/vms");
	cr_assert(json_object_object_get_ex(vms, pveprivs_agent_priv(pve_major()), NULL), "%s",
		  json_object_to_json_string(b));
	json_object_put(b);
}

static char *demo_fresh(const char *ver);
static char *demo_variant(const char *ver, bool import);

TestSuite(setup_doctor, .fini = stop, .timeout = 120);

Test(setup_doctor, doctor_all_well_then_names_a_missing_privilege)
{
	char *scenario = demo_fresh(NULL);
	start_scenario(scenario);
	unlink(scenario);
	free(scenario);
	char *out = NULL;
	make_key();
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(pv(&out, "doctor", NULL), 0, "%s", out);
	cr_assert(strstr(out, "every privilege"), "%s", out);
	free(out);

	/* VM.Clone taken from the role through the API */
	char *privs = pveprivs_role_privs(pve_major(), PVEPRIVS_ALL);
	char *at = strstr(privs, "VM.Clone ");
	memmove(at, at + 9, strlen(at + 9) + 1);
	char *enc = pve_percent_encode(privs), *form = strprintf("privs=%s", enc);
	long st = 0;
	cr_assert_eq(sim_api(&sp, "PUT", "/access/roles/" PVEPRIVS_ROLE, form, &st, NULL), 0);
	cr_assert_eq(st, 200);
	free(privs);
	free(enc);
	free(form);
	cr_assert_eq(pv(&out, "doctor", NULL), 1, "%s", out);
	cr_assert(strstr(out, "VM.Clone on /vms missing"), "%s", out);
	cr_assert(strstr(out, "pveum role modify PVAgent --append 1 --privs \"VM.Clone\""), "%s",
		  out);
	free(out);
	cr_assert_eq(pv(&out, "--json", "doctor", NULL), 1, "%s", out);
	cr_assert(strstr(out, "\"state\":\"fix\""), "%s", out);
	free(out);

	/* the token's ACL taken away: the ACL line is what doctor gives */
	cr_assert_eq(sim_api(&sp, "PUT", "/access/acl",
			     "path=/&roles=" PVEPRIVS_ROLE "&tokens=" PVEPRIVS_USER "!" PVEPRIVS_TOKEN
			     "&delete=1", &st, NULL), 0);
	cr_assert_eq(st, 200);
	cr_assert_eq(pv(&out, "doctor", NULL), 1, "%s", out);
	cr_assert(strstr(out, "pveum acl modify / --tokens '" PVEPRIVS_USER "!" PVEPRIVS_TOKEN
			      "' --roles " PVEPRIVS_ROLE), "%s", out);
	free(out);
	cr_assert_gt(forbidden(), 0, "the 403 counter the other tests rely on sees these");
}

/* Field of the entry whose idkey is id in the list GET path answers (the
 * root token's view), malloc'd. */
static char *listed(const char *path, const char *idkey, const char *id, const char *field)
{
	long st = 0;
	json_object *b = NULL;
	cr_assert_eq(sim_api(&sp, "GET", path, NULL, &st, &b), 0);
	cr_assert_eq(st, 200);
	json_object *d = json_object_object_get(b, "data");
	char *v = NULL;
	for (size_t i = 0; i < json_object_array_length(d); i++) {
		json_object *o = json_object_array_get_idx(d, i);
		if (strcmp(json_object_get_string(json_object_object_get(o, idkey)), id) == 0)
			v = strdup(json_object_get_string(json_object_object_get(o, field)));
	}
	json_object_put(b);
	cr_assert_not_null(v, "%s: no %s %s", path, idkey, id);
	return v;
}

/* The role's privileges as PVE lists them ("A,B,C"), malloc'd. */
static char *role_now(void)
{
	return listed("/access/roles", "roleid", PVEPRIVS_ROLE, "privs");
}

static bool role_has(const char *privs, const char *priv)
{
	size_t l = strlen(priv);
	for (const char *p = privs; (p = strstr(p, priv)); p += l)
		if ((p == privs || p[-1] == ',') && (p[l] == ',' || !p[l]))
			return true;
	return false;
}

Test(setup, a_privilege_added_by_hand_stays_and_only_the_missing_are_appended)
{
	char *out = NULL;
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	free(out);
	/* what pvagent(1) and doctor tell a user to type, through the API */
	long st = 0;
	cr_assert_eq(sim_api(&sp, "PUT", "/access/roles/" PVEPRIVS_ROLE,
			     "append=1&privs=VM.Backup", &st, NULL), 0);
	cr_assert_eq(st, 200);
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	cr_assert(strstr(out, "as it should be"), "%s", out);
	free(out);
	cr_assert_eq(setup(&out, "--minimal"), 0, "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sp, "PUT", "/access/roles/" PVEPRIVS_ROLE, -1), 1,
		     "only the hand-made PUT");
	char *privs = role_now();
	cr_assert(role_has(privs, "VM.Backup"), "%s", privs);
	cr_assert(role_has(privs, "Datastore.AllocateTemplate"), "%s", privs);
	free(privs);

	/* a role of an older setup (the guest commands' only) gains the rest,
	 * the hand-added privilege kept */
	char *minimal = pveprivs_role_privs(pve_major(), 0), *enc = pve_percent_encode(minimal);
	char *form = strprintf("privs=%s%%20VM.Backup", enc);
	cr_assert_eq(sim_api(&sp, "PUT", "/access/roles/" PVEPRIVS_ROLE, form, &st, NULL), 0);
	cr_assert_eq(st, 200);
	free(minimal);
	free(enc);
	free(form);
	privs = role_now();
	cr_assert(!role_has(privs, "Sys.AccessNetwork"), "%s", privs);
	free(privs);
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	cr_assert(strstr(out, "added ") && strstr(out, "Sys.AccessNetwork"), "%s", out);
	free(out);
	privs = role_now();
	char *all = pveprivs_role_privs(pve_major(), PVEPRIVS_ALL);
	for (char *p = strtok(all, " "); p; p = strtok(NULL, " "))
		cr_assert(role_has(privs, p), "%s lacks %s", privs, p);
	cr_assert(role_has(privs, "VM.Backup"), "%s", privs);
	free(all);
	free(privs);
	cr_assert_eq(pv(&out, "doctor", "--migrate", NULL), 1, "only the SSH key is missing:\n%s",
		     out);
	cr_assert(strstr(out, "every privilege"), "%s", out);
	free(out);
}

Test(setup, the_configuration_is_edited_in_place)
{
	char *out = NULL;
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	free(out);
	char *first = slurp(conf);
	cr_assert(first && !strstr(first, "rewrites"), "%s", first);
	static const char mine[] =
		"# my own notes: keep them\n"
		"\n"
		"[pool \"lan\"]\n"
		"cidr = 192.0.2.0/24\n"
		"gateway = 192.0.2.1\n"
		"range = 192.0.2.10-192.0.2.20\n"
		"\n"
		"[window \"night\"]\n"
		"node = pve1\n"
		"schedule = daily\n"
		"start = 02:00\n"
		"duration = 2h\n"
		"; the end\n";
	char *text = strprintf("%s%s", first, mine);
	cr_assert_eq(test_write_file(conf, text, 0640), 0);
	free(text);
	cr_assert_eq(pv(&out, "nodes", NULL), 0, "the hand-made part is valid:\n%s", out);
	free(out);
	cr_assert_eq(test_keygen(key, "ed25519", 0), 0); /* setup again adds the identity */
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	cr_assert(strstr(out, "updated"), "%s", out);
	free(out);
	char *second = slurp(conf);
	cr_assert(strstr(second, mine), "the hand-made part changed:\n%s", second);
	cr_assert(strstr(second, "identity = "), "%s", second);
	struct stat st;
	cr_assert_eq(stat(conf, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0640, "the mode is kept: %o", st.st_mode & 0777);
	cr_assert_eq(pv(&out, "nodes", NULL), 0, "%s", out);
	free(out);
	/* and again: nothing to change, not a byte */
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	free(out);
	char *third = slurp(conf);
	cr_assert_str_eq(third, second);
	free(first);
	free(second);
	free(third);

	/* a configuration setup cannot parse is refused before PVE is changed */
	cr_assert_eq(test_write_file(conf, "[pve]\nurl = x\n[pool lan]\n", 0600), 0);
	int before = changes();
	cr_assert_eq(setup(&out, "--force"), 2, "%s", out);
	cr_assert(strstr(out, "pvagent.conf:3") && strstr(out, "nothing written"), "%s", out);
	free(out);
	cr_assert_eq(changes(), before);
}

/* Storage local's content now, malloc'd. */
static char *local_content(void)
{
	return listed("/storage", "storage", "local", "content");
}

/* The demo cluster installed before PVE 9.0 and upgraded: local is iso,
 * vztmpl, backup, no import; no other storage takes it either. */
static void start_upgraded(void)
{
	char *scenario = demo_variant(NULL, false);
	start_scenario(scenario);
	unlink(scenario);
	free(scenario);
}

TestSuite(setup_upgraded, .init = start_upgraded, .fini = stop, .timeout = 120);

Test(setup_upgraded, import_content_added_to_local_or_its_line_printed)
{
	char *out = NULL;
	cr_assert_eq(setup(&out, "--no-storage-change"), 0, "%s", out);
	cr_assert(strstr(out, "pvesm set local --content iso,vztmpl,backup,import"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sp, "PUT", "/storage/local", -1), 0);
	char *c = local_content();
	cr_assert_str_eq(c, "iso,vztmpl,backup");
	free(c);
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	cr_assert(strstr(out, "import added"), "%s", out);
	free(out);
	c = local_content();
	cr_assert_str_eq(c, "iso,vztmpl,backup,import");
	free(c);
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	cr_assert(strstr(out, "local takes image build's downloads"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sp, "PUT", "/storage/local", 200), 1);
}

Test(setup, a_directory_that_cannot_be_made_changes_nothing)
{
	char *out = NULL;
	char *deep = strprintf("%s/no/such/pvagent.conf", dir);
	int rc = test_pvagent(bin(), deep, &out, "setup", sp.url, "--password-file", pw,
			      "--fingerprint", sp.fingerprint, NULL);
	cr_assert_eq(rc, 2, "%s", out);
	cr_assert(strstr(out, "nothing written"), "%s", out);
	free(out);
	free(deep);
	cr_assert_eq(changes(), 0);
}

Test(setup, a_lost_token_answer_is_replaced_in_the_same_run)
{
	char *out = NULL;
	/* PVE makes the token, then the answer with its secret is lost */
	cr_assert_eq(simproc_fault(&sp, "{\"method\": \"POST\", \"path\": \"/token/"
					PVEPRIVS_TOKEN "$\", \"nth\": 1, \"action\": \"reset\","
					" \"after\": true}"), 0);
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	cr_assert(strstr(out, "made again"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sp, "DELETE", "/token/" PVEPRIVS_TOKEN, 200), 1);
	cr_assert_eq(tokens(), 1);
	mode_is_0600(secret);
	cr_assert_eq(pv(&out, "nodes", NULL), 0, "%s", out);
	free(out);
}

/* sp.url without its scheme: "127.0.0.1:PORT". */
static const char *hostport(void)
{
	cr_assert_eq(strncmp(sp.url, "https://", 8), 0, "%s", sp.url);
	return sp.url + 8;
}

Test(setup, url_forms_are_written_as_every_command_loads_them)
{
	char *out = NULL;
	cr_assert_eq(setup_at(&out, hostport(), NULL, NULL), 0, "%s", out);
	free(out);
	char *text = slurp(conf), *want = strprintf("\nurl = %s\n", sp.url);
	cr_assert(strstr(text, want), "%s", text);
	free(text);
	cr_assert_eq(pv(&out, "nodes", NULL), 0, "%s", out);
	free(out);
	char *api = strprintf("%s/api2/json/", sp.url);
	cr_assert_eq(setup_at(&out, api, NULL, NULL), 0, "%s", out);
	free(out);
	free(api);
	text = slurp(conf);
	cr_assert(strstr(text, want), "%s", text);
	free(text);
	free(want);

	/* user:password@ is refused and never echoed; a path is refused */
	char *ui = strprintf("https://root:hunter2@%s", hostport());
	cr_assert_eq(setup_at(&out, ui, NULL, NULL), 2, "%s", out);
	cr_assert(!strstr(out, "hunter2") && strstr(out, "--password-file"), "%s", out);
	free(out);
	free(ui);
	char *path = strprintf("%s/pve", sp.url);
	cr_assert_eq(setup_at(&out, path, NULL, NULL), 2, "%s", out);
	cr_assert(strstr(out, "path"), "%s", out);
	free(out);
	free(path);
}

Test(setup, dry_run_with_a_version_needs_no_login)
{
	char *out = NULL;
	int rc = pv(&out, "setup", "pve.invalid", "--dry-run", "--pve-version", "9", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "VM.GuestAgent.Audit") && strstr(out, "Sys.AccessNetwork"), "%s",
		  out);
	free(out);
	rc = pv(&out, "setup", "pve.invalid", "--dry-run", "--pve-version", "8", "--minimal", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "VM.Monitor") && !strstr(out, "Sys.AccessNetwork"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sp, "POST", "/access/ticket", -1), 0);
	cr_assert_eq(pv(&out, "setup", "pve.invalid", "--pve-version", "9", NULL), 2, "%s", out);
	free(out);
}

Test(setup, a_refused_step_is_named_and_the_next_run_completes_it)
{
	char *out = NULL;
	cr_assert_eq(simproc_fault(&sp, "{\"method\": \"PUT\", \"path\": \"/access/acl$\", \"nth\": 1,"
					" \"action\": \"status\", \"status\": 403,"
					" \"message\": \"Permission check failed (/, Permissions.Modify)\"}"),
		     0);
	cr_assert_eq(setup(&out, NULL), 1, "%s", out);
	cr_assert(strstr(out, "ACL /") && strstr(out, "Permissions.Modify") &&
		  strstr(out, "secret is kept in"), "%s", out);
	free(out);
	cr_assert_neq(access(conf, F_OK), 0);
	/* the token's secret was written the moment PVE showed it */
	mode_is_0600(secret);
	cr_assert_eq(simproc_count(&sp, "DELETE", "/token/" PVEPRIVS_TOKEN, -1), 0);
	cr_assert_eq(tokens(), 1);

	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	cr_assert(strstr(out, "role " PVEPRIVS_ROLE) && strstr(out, "as it should be"), "%s", out);
	cr_assert(strstr(out, "user " PVEPRIVS_USER) && strstr(out, "exists"), "%s", out);
	cr_assert(strstr(out, "its secret is in the file"), "%s", out);
	free(out);
	mode_is_0600(conf);
	cr_assert_eq(pv(&out, "nodes", NULL), 0, "%s", out);
	free(out);
}

Test(setup, the_migrate_token_plans_migrate_and_drain_without_a_403)
{
	char *out = NULL;
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	free(out);
	int before = forbidden();
	static const char *const cmds[][4] = {
		{"show", "fbsd9-legacy", NULL},
		{"down", "190", "--dry-run", NULL},
		{"migrate", "fbsd9-legacy", "pve2", "--dry-run"},
		{"drain", "pve1", "--dry-run", NULL},
	};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		cr_assert_eq(pv(&out, cmds[i][0], cmds[i][1], cmds[i][2], cmds[i][3], NULL), 0,
			     "%s: %s", cmds[i][0], out);
		free(out);
	}
	cr_assert_eq(forbidden(), before, "a request of the token got a 403");
	cr_assert_eq(simproc_named(&sp, "fbsd9-legacy"), 1, "dry runs change nothing");
}

/* Items of a privilege list (space or comma separated) as a sorted,
 * space-joined string. */
static char *sorted_set(const char *list)
{
	char *items[64];
	size_t n = 0;
	for (const char *p = list; *p && n < 64;) {
		p += strspn(p, " ,\"\\\n");
		size_t l = strcspn(p, " ,\"\\\n");
		if (l)
			items[n++] = strndup(p, l);
		p += l;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(items[j - 1], items[j]) > 0; j--) {
			char *t = items[j];
			items[j] = items[j - 1];
			items[j - 1] = t;
		}
	struct sbuf b = {0};
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(sbuf_addf(&b, "%s%s", i ? " " : "", items[i]), 0);
		free(items[i]);
	}
	char *s = b.len ? sbuf_steal(&b) : strdup("");
	sbuf_free(&b);
	return s;
}

/* README's hand-typed role is the table's role of its version: every
 * `pveum role add PVAgent` block there holds the privileges pveprivs.c
 * gives PVE 8 or PVE 9 (setup and doctor use that table). */
Test(pveprivs, readme_roles_are_the_tables)
{
	char *text = NULL;
	cr_assert_eq(read_file("README.md", &text, NULL), 0);
	char *t8 = NULL, *t9 = NULL, *p8 = pveprivs_role_privs(8, PVEPRIVS_ALL),
	     *p9 = pveprivs_role_privs(9, PVEPRIVS_ALL);
	t8 = sorted_set(p8);
	t9 = sorted_set(p9);
	int found = 0;
	for (char *at = text; (at = strstr(at, "\npveum role add " PVEPRIVS_ROLE " --privs \""));
	     found++) {
		at += strlen("\npveum role add " PVEPRIVS_ROLE " --privs \"");
		char *end = strchr(at, '"');
		cr_assert_not_null(end);
		char *list = strndup(at, (size_t)(end - at)), *got = sorted_set(list);
		cr_assert(strcmp(got, t8) == 0 || strcmp(got, t9) == 0,
			  "README role: %s\ntable, PVE 8: %s\ntable, PVE 9: %s", got, t8, t9);
		free(list);
		free(got);
		at = end;
	}
	cr_assert_gt(found, 0, "README has no pveum role add " PVEPRIVS_ROLE " line");
	cr_assert(strstr(t8, "VM.Monitor") && !strstr(t9, "VM.Monitor") &&
		  strstr(t9, "VM.GuestAgent.Audit") && !strstr(t8, "VM.GuestAgent"));
	free(text);
	free(t8);
	free(t9);
	free(p8);
	free(p9);
}

/* The demo cluster on PVE version ver (NULL: its own), installed fresh
 * (import: local's content with import, as pve-installer 9.0.7 on makes
 * it) or before PVE 9.0 and upgraded (without it; doctor's model of such an
 * install is in test_doctor): demo.json so changed, written into a file
 * whose path it returns (malloc'd, freed by the caller). */
static char *demo_variant(const char *ver, bool import)
{
	json_object *sc = json_object_from_file("tests/pvesim/scenarios/demo.json"), *st = NULL;
	cr_assert(sc && json_object_object_get_ex(sc, "storages", &st));
	if (ver)
		json_object_object_add(sc, "pve_version", json_object_new_string(ver));
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *s = json_object_array_get_idx(st, i), *c = NULL;
		const char *id = json_object_get_string(json_object_object_get(s, "id"));
		if (strcmp(id, "local") == 0 && json_object_object_get_ex(s, "content", &c))
			json_object_object_add(s, "content",
					       json_object_new_string(import ? "iso,vztmpl,backup,import"
									     : "iso,vztmpl,backup"));
	}
	char *path = strprintf("/tmp/pvagent-setup-demo-%s-%s-%d.json", ver ? ver : "own",
			       import ? "fresh" : "upgraded", (int)getpid());
	cr_assert_eq(json_object_to_file(path, sc), 0);
	json_object_put(sc);
	return path;
}

static char *demo_fresh(const char *ver)
{
	return demo_variant(ver, true);
}

static void put_role(const char *privs);

/* put_role of a malloc'd list, freed. */
static void put_role_privs(char *privs)
{
	cr_assert_not_null(privs);
	put_role(privs);
	free(privs);
}

static void put_role(const char *privs)
{
	char *enc = pve_percent_encode(privs), *form = strprintf("privs=%s", enc);
	long st = 0;
	cr_assert_eq(sim_api(&sp, "PUT", "/access/roles/" PVEPRIVS_ROLE, form, &st, NULL), 0);
	cr_assert_eq(st, 200, "PUT role privs=%s", privs);
	free(enc);
	free(form);
}

/* pvagent doctor --migrate (pv itself is a name the version tests' body
 * cannot see: ON_EACH_PVE_VERSION's parameter is called pv too). */
static int doctor_migrate(char **out)
{
	return pv(out, "doctor", "--migrate", NULL);
}

TestSuite(setup_versions, .fini = stop, .timeout = 300);

/* On 9.1 and on 8.4: the role setup makes holds what every
 * command needs (doctor --migrate is all well), and with each of its
 * privileges taken away in turn doctor exits 1 naming that privilege, its
 * path and the grant line for that version. */
ON_EACH_PVE_VERSION(setup_versions, doctor_names_each_missing_privilege)
{
	char *scenario = demo_fresh(pv->ver);
	start_scenario(scenario);
	cr_assert_eq(pve_major(), pv->major);
	char *out = NULL;
	make_key();
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(doctor_migrate(&out), 0, "%s", out);
	free(out);
	char *all = pveprivs_role_privs(pv->major, PVEPRIVS_ALL);
	cr_assert_not_null(strstr(all, pv->agent), "%s lacks %s", all, pv->agent);
	size_t tried = 0;
	for (const char *p = all; *p;) {
		size_t len = strcspn(p, " ");
		char *priv = strndup(p, len);
		/* the role without priv */
		char *rest = strprintf("%.*s%s", (int)(p - all), all, p[len] ? p + len + 1 : "");
		put_role(*rest ? rest : "VM.Audit");
		cr_assert_eq(doctor_migrate(&out), 1, "without %s: %s", priv, out);
		char *missing = strprintf("%s on /", priv), *grant = pveprivs_grant_line(priv);
		cr_assert_not_null(strstr(out, missing), "without %s: %s", priv, out);
		cr_assert_not_null(strstr(out, grant), "without %s: %s", priv, out);
		free(missing);
		free(grant);
		free(out);
		free(rest);
		free(priv);
		tried++;
		p += len + (p[len] == ' ');
	}
	put_role(all);
	cr_assert_eq(doctor_migrate(&out), 0, "%s", out);
	free(out);
	cr_assert_geq(tried, 20);
	free(all);
	unlink(scenario);
	free(scenario);
}

/* An administrator with two-factor authentication: demo.json with
 * root@pam "tfa": true. */
static void start_tfa(void)
{
	char *text = NULL;
	cr_assert_eq(read_file("tests/pvesim/scenarios/demo.json", &text, NULL), 0);
	const char *needle = "\"password\": \"demo-root-password\"";
	char *at = strstr(text, needle);
	cr_assert_not_null(at);
	char *copy = strprintf("%.*s%s, \"tfa\": true%s", (int)(at - text), text, needle,
			       at + strlen(needle));
	char *path = strprintf("/tmp/pvagent-setup-tfa-%d.json", (int)getpid());
	cr_assert_eq(test_write_file(path, copy, 0600), 0);
	start_scenario(path);
	unlink(path);
	free(path);
	free(copy);
	free(text);
}

TestSuite(setup_tfa, .fini = stop, .timeout = 120);

Test(setup_tfa, the_second_factor_is_named_with_the_ways_out)
{
	start_tfa();
	char *out = NULL;
	cr_assert_eq(setup(&out, NULL), 4, "%s", out);
	cr_assert(strstr(out, "two-factor") && strstr(out, "--user") &&
		  strstr(out, "--dry-run --pve-version"), "%s", out);
	cr_assert(!strstr(out, "fresh ticket"), "%s", out);
	free(out);
	cr_assert_eq(changes(), 0);
	cr_assert_neq(access(conf, F_OK), 0);
	/* the half ticket is refused by every request, as PVE's */
	long st = 0;
	json_object *b = NULL;
	cr_assert_eq(sim_api(&sp, "POST", "/access/ticket",
			     "username=root%40pam&password=demo-root-password", &st, &b), 0);
	cr_assert_eq(st, 200);
	json_object *d = json_object_object_get(b, "data");
	cr_assert_eq(json_object_get_int(json_object_object_get(d, "NeedTFA")), 1);
	const char *t = json_object_get_string(json_object_object_get(d, "ticket"));
	cr_assert(t && strncmp(t, "PVE:!tfa!", 9) == 0, "%s", t);
	/* the TFA step turns it into a ticket */
	char *enc = pve_percent_encode(t), *form = strprintf(
		"username=root%%40pam&password=totp%%3A123456&tfa-challenge=%s", enc);
	json_object *b2 = NULL;
	cr_assert_eq(sim_api(&sp, "POST", "/access/ticket", form, &st, &b2), 0);
	cr_assert_eq(st, 200);
	json_object *d2 = json_object_object_get(b2, "data");
	cr_assert(!json_object_object_get_ex(d2, "NeedTFA", NULL));
	cr_assert_eq(strncmp(json_object_get_string(json_object_object_get(d2, "ticket")),
			     "PVE:root@pam:", 13), 0);
	free(enc);
	free(form);
	json_object_put(b);
	json_object_put(b2);
}

/* ---- image build with the token setup made -------------------------------- */

static struct httpserve hs;

static void start_images(void)
{
	start_scenario("tests/pvesim/scenarios/images.json");
	cr_assert_eq(httpserve_start(&hs), 0);
}

static void stop_images(void)
{
	httpserve_stop(&hs);
	stop();
}

/* (120 s as setup_tfa: with another timeout, Criterion's runner leaked 48
 * bytes when the two ran at once) */
TestSuite(setup_image, .fini = stop_images, .timeout = 120);

/* setup's role holds what image build needs on PVE (download-url:
 * Datastore.AllocateTemplate on the storage and Sys.AccessNetwork on the
 * node; the removal of the file: Datastore.Allocate): the build runs to
 * its template without a 403; with those taken from the role it stops at
 * download-url with PVE's 403. */
Test(setup_image, the_token_setup_made_builds_an_image)
{
	start_images();
	char *out = NULL;
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	free(out);
	add_paths();
	int before = forbidden();
	char *sum = httpserve_put_qcow2(&hs, "d13.qcow2", 1ULL << 30);
	cr_assert_not_null(sum);
	char *url = strprintf("%s/d13.qcow2", hs.base);
	cr_assert_eq(pv(&out, "--local", "image", "build", "debian-13", "--url", url, "--checksum",
			sum, NULL), 0, "%s", out);
	free(out);
	cr_assert_eq(forbidden(), before, "a request of the token got a 403");
	cr_assert_eq(simproc_named(&sp, "debian-13-image"), 1);
	cr_assert_eq(simproc_count(&sp, "DELETE", "", 200), 1, "the file removed");
	free(url);
	free(sum);

	/* the role without the image privileges: PVE refuses the download */
	put_role_privs(pveprivs_role_privs(pve_major(), PVEPRIVS_MIGRATE));
	sum = httpserve_put_qcow2(&hs, "d12.qcow2", 1ULL << 30);
	url = strprintf("%s/d12.qcow2", hs.base);
	cr_assert_eq(pv(&out, "--local", "image", "build", "debian-12", "--url", url, "--checksum",
			sum, NULL), 1, "%s", out);
	cr_assert(strstr(out, "Datastore.AllocateTemplate"), "%s", out);
	free(out);
	cr_assert_gt(forbidden(), before);
	cr_assert_eq(simproc_named(&sp, "debian-12-image"), 0);
	free(url);
	free(sum);

	/* the storage's privileges but not the node's: download-url's `or`
	 * refuses with PVE's bare text, and pvagent names both ways from its
	 * own table */
	char *privs = pveprivs_role_privs(pve_major(), PVEPRIVS_MIGRATE);
	char *more = strprintf("%s Datastore.AllocateTemplate Datastore.Allocate", privs);
	put_role_privs(more);
	free(privs);
	sum = httpserve_put_qcow2(&hs, "d11.qcow2", 1ULL << 30);
	url = strprintf("%s/d11.qcow2", hs.base);
	cr_assert_eq(pv(&out, "--local", "image", "build", "debian-12", "--url", url, "--checksum",
			sum, NULL), 1, "%s", out);
	cr_assert(strstr(out, "Permission check failed") && !strstr(out, "failed (/"), "%s", out);
	cr_assert(strstr(out, "download-url (403): the token needs Datastore.AllocateTemplate on "
			      "/storage/"), "%s", out);
	cr_assert(strstr(out, ", and Sys.AccessNetwork on /nodes/pve1 (or Sys.Audit and Sys.Modify "
			      "on /): pveum role modify PVAgent"), "%s", out);
	free(out);
	free(url);
	free(sum);
}

/* A ZFS install (pve-installer: local-zfs, no local-lvm) first installed
 * before PVE 9.0 (local without import): demo.json so changed. setup adds
 * import to local and writes the storages the node has; image build of
 * the token setup made, without --storage, puts the template on local-zfs. */
Test(setup_image, a_zfs_install_gets_its_storages_written_and_used)
{
	char *text = NULL;
	cr_assert_eq(read_file("tests/pvesim/scenarios/demo.json", &text, NULL), 0);
	struct sbuf b = {0};
	for (const char *p = text; *p;) {
		if (strncmp(p, "local-lvm", 9) == 0) {
			sbuf_add(&b, "local-zfs");
			p += 9;
		} else if (strncmp(p, "lvmthin", 7) == 0) {
			sbuf_add(&b, "zfspool");
			p += 7;
		} else if (strncmp(p, "backup,import", 13) == 0) {
			sbuf_add(&b, "backup");
			p += 13;
		} else {
			sbuf_addc(&b, *p++);
		}
	}
	free(text);
	char *path = strprintf("/tmp/pvagent-setup-zfs-%d.json", (int)getpid());
	cr_assert_eq(test_write_file(path, sbuf_str(&b), 0600), 0);
	sbuf_free(&b);
	start_scenario(path);
	cr_assert_eq(httpserve_start(&hs), 0);
	unlink(path);
	free(path);

	char *out = NULL;
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	cr_assert(strstr(out, "import added"), "%s", out);
	free(out);
	char *c = slurp(conf);
	cr_assert(strstr(c, "\nstorage = local-zfs\n") && strstr(c, "\nimport_storage = local\n"),
		  "%s", c);
	free(c);
	add_paths();
	int before = forbidden();
	char *sum = httpserve_put_qcow2(&hs, "d13.qcow2", 1ULL << 30);
	char *url = strprintf("%s/d13.qcow2", hs.base);
	cr_assert_eq(pv(&out, "--local", "image", "build", "debian-13", "--url", url, "--checksum",
			sum, NULL), 0, "%s", out);
	free(out);
	free(url);
	free(sum);
	cr_assert_eq(forbidden(), before, "a request of the token got a 403");
	long st = 0;
	json_object *bd = NULL;
	cr_assert_eq(sim_api(&sp, "GET", "/cluster/resources?type=vm", NULL, &st, &bd), 0);
	json_object *d = json_object_object_get(bd, "data");
	int vmid = 0;
	for (size_t i = 0; i < json_object_array_length(d); i++) {
		json_object *o = json_object_array_get_idx(d, i);
		const char *n = json_object_get_string(json_object_object_get(o, "name"));
		if (n && strcmp(n, "debian-13-image") == 0)
			vmid = json_object_get_int(json_object_object_get(o, "vmid"));
	}
	json_object_put(bd);
	cr_assert_gt(vmid, 0);
	char *disk = simproc_config_key(&sp, vmid, "scsi0");
	cr_assert(disk && strncmp(disk, "local-zfs:", 10) == 0, "%s", disk ? disk : "(no scsi0)");
	free(disk);

	/* a storage chosen by hand stays; one the node lacks is replaced */
	c = slurp(conf);
	char *at = strstr(c, "\nstorage = local-zfs\n");
	cr_assert_not_null(at);
	char *mine = strprintf("%.*s\nstorage = shared\n%s", (int)(at - c), c, at + 22);
	cr_assert_eq(test_write_file(conf, mine, 0600), 0);
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	free(out);
	free(c);
	c = slurp(conf);
	cr_assert(strstr(c, "\nstorage = shared\n"), "%s", c);
	free(c);
	free(mine);
}
