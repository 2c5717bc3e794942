/* test_setup.c - `pvagent setup URL` and `pvagent doctor` against the
 * simulator's access API (demo scenario, root@pam's password from it):
 * a fresh setup whose token runs nodes, list and up --dry-run without a
 * 403; a second run that changes nothing and makes no token (the request
 * log and the token list say so); a lost secret refused, then replaced
 * with --force; a wrong password and a missing --fingerprint without a
 * terminal, which write nothing; the --dry-run pveum lines, each turned
 * into its API call and accepted; doctor all well on the set-up cluster,
 * then naming a privilege taken from the role and its grant line. */
#include <criterion/criterion.h>

#include "clirun.h"
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

static int setup(char **out, const char *extra)
{
	return pv(out, "setup", sp.url, "--password-file", pw, "--fingerprint", sp.fingerprint,
		  extra, NULL);
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
	FILE *f = fopen(conf, "a");
	cr_assert_not_null(f);
	char *cwd = getcwd(NULL, 0);
	fprintf(f, "[paths]\ntemplates = %s/templates\nstate = %s/state\n", cwd, dir);
	fclose(f);
	free(cwd);
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
	char w[16][256];
	size_t n = 0;
	for (const char *p = line; *p && n < 16;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		size_t l = 0;
		char q = 0;
		for (; *p && (q || *p != ' ') && l < 255; p++) {
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
	char *privs = pveprivs_role_privs(pve_major(), false);
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

Test(setup, a_rerun_without_migrate_keeps_what_migrate_needs)
{
	char *out = NULL;
	cr_assert_eq(setup(&out, "--migrate"), 0, "%s", out);
	free(out);
	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	cr_assert(strstr(out, "keeps what migrate needs"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sp, "PUT", "/access/roles/" PVEPRIVS_ROLE, -1), 0);
	cr_assert_eq(pv(&out, "doctor", "--migrate", NULL), 1, "only the SSH key is missing:\n%s",
		     out);
	cr_assert(strstr(out, "with migrate"), "%s", out);
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
		  strstr(out, "nothing written"), "%s", out);
	free(out);
	cr_assert_neq(access(conf, F_OK), 0);
	cr_assert_neq(access(secret, F_OK), 0);
	/* the token it made, whose secret no file holds, is gone again */
	cr_assert_eq(simproc_count(&sp, "DELETE", "/token/" PVEPRIVS_TOKEN, 200), 1);
	cr_assert_eq(tokens(), 0);

	cr_assert_eq(setup(&out, NULL), 0, "%s", out);
	cr_assert(strstr(out, "role " PVEPRIVS_ROLE) && strstr(out, "as it should be"), "%s", out);
	cr_assert(strstr(out, "user " PVEPRIVS_USER) && strstr(out, "exists"), "%s", out);
	free(out);
	mode_is_0600(conf);
	cr_assert_eq(pv(&out, "nodes", NULL), 0, "%s", out);
	free(out);
}

Test(setup, the_migrate_token_plans_migrate_and_drain_without_a_403)
{
	char *out = NULL;
	cr_assert_eq(setup(&out, "--migrate"), 0, "%s", out);
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
	char *t8 = NULL, *t9 = NULL, *p8 = pveprivs_role_privs(8, false),
	     *p9 = pveprivs_role_privs(9, false);
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

/* The demo cluster on PVE version ver (NULL: its own) as installed fresh:
 * demo.json with its pve_version replaced and local's content with
 * import (pve-installer 9.0.7 on; doctor's model of an upgraded install,
 * without it, is in test_doctor), written into a file whose path it
 * returns (malloc'd, freed by the caller). */
static char *demo_fresh(const char *ver)
{
	json_object *sc = json_object_from_file("tests/pvesim/scenarios/demo.json"), *st = NULL;
	cr_assert(sc && json_object_object_get_ex(sc, "storages", &st));
	if (ver)
		json_object_object_add(sc, "pve_version", json_object_new_string(ver));
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *s = json_object_array_get_idx(st, i), *c = NULL;
		const char *id = json_object_get_string(json_object_object_get(s, "id"));
		if (strcmp(id, "local") != 0 || !json_object_object_get_ex(s, "content", &c) ||
		    strstr(json_object_get_string(c), "import"))
			continue;
		char *with = strprintf("%s,import", json_object_get_string(c));
		json_object_object_add(s, "content", json_object_new_string(with));
		free(with);
	}
	char *path = strprintf("/tmp/pvagent-setup-demo-%s-%d.json", ver ? ver : "own",
			       (int)getpid());
	cr_assert_eq(json_object_to_file(path, sc), 0);
	json_object_put(sc);
	return path;
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

/* On 9.1 and on 8.4: the role setup --migrate makes holds what every
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
	cr_assert_eq(setup(&out, "--migrate"), 0, "%s", out);
	free(out);
	cr_assert_eq(doctor_migrate(&out), 0, "%s", out);
	free(out);
	char *all = pveprivs_role_privs(pv->major, true);
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
	cr_assert_geq(tried, 17);
	free(all);
	unlink(scenario);
	free(scenario);
}
