/* cli_setup.c - `pvagent setup URL`: the first command on a new host.
 * Logs in once as an administrator (password from --password-file or the
 * terminal, never from argv, never stored; a login that needs a second
 * factor is said as such), pins the certificate (--fingerprint, or shown
 * and confirmed on a terminal), reads the PVE version and makes what
 * pveprivs.h says: the role with what every command needs on that version
 * (--minimal: the guest commands' only), the user, a privilege-separated
 * token and the ACLs of both on "/", and "import" added to local's content
 * when no storage takes it (image build's downloads). The token's secret is written (0600,
 * beside the configuration) the moment PVE shows it; the configuration is
 * edited in place (conf_edit.h: the keys setup owns set, the rest kept; the
 * storages the node really has for image build's disks and downloads) and
 * the token is tried with GET /nodes. Each step looks first and changes
 * only what is missing: a role only gains privileges (append), so a second
 * run changes nothing and a partial run is completed by the next.
 * --dry-run prints the pveum lines for that version instead (no login with
 * --pve-version). */
#include "cli.h"
#include "conf_edit.h"
#include "guest.h"
#include "ini.h"
#include "json.h"
#include "log.h"
#include "output.h"
#include "pveprivs.h"
#include "storage_pick.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#define SYSTEM_CONF "/etc/pvagent/pvagent.conf"
#define CONF_HEADER "# pvagent configuration: `pvagent setup` sets the keys it owns\n" \
		    "# ([pve] url, token_id, token_secret_file, fingerprint, node, storage,\n" \
		    "# import_storage; [ssh] identity)\n" \
		    "# and keeps everything else as written; check it with: pvagent doctor\n"

struct setup {
	struct cli *cli;
	const char *url_arg, *user, *password_file, *fingerprint_arg;
	char *url;             /* url_arg as every command loads it */
	bool migrate, minimal, force, dry_run, no_storage_change;
	int pve_version;       /* --pve-version; 0: ask PVE */
	char *conf_path, *dir, *secret_path;
	struct conf_edit conf; /* the configuration as read (or the header) */
	bool conf_exists;
	char fingerprint[96];
	char *password;
	struct pve *admin;
	int major;
	char *secret;          /* the token's secret (from the file or new) */
	bool secret_written;   /* by this run */
	json_object *steps;    /* [{"step", "state"}] for --json */
};

/* One line per step: "role PVAgent: created". */
static void said(struct setup *s, const char *step, const char *state)
{
	if (s->cli->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "step", json_object_new_string(step));
		json_object_object_add(o, "state", json_object_new_string(state));
		json_object_array_add(s->steps, o);
	} else {
		/* a dry run's standard output is the pveum lines alone */
		fprintf(s->dry_run ? stderr : stdout, "%-28s %s\n", step, state);
	}
}

/* A step failed: say which, with PVE's words; its exit code. */
static int step_failed(struct setup *s, const char *step, struct pve_error *e)
{
	char *m = pve_error_format(e);
	size_t sl = strlen(step);
	bool named = m && strncmp(m, step, sl) == 0 && m[sl] == ':'; /* "login: ..." */
	cli_error(pve_err_kind_name(e->kind), "setup", "%s%s%s%s%s%s", named ? "" : step,
		  named ? "" : ": ", m ? m : "failed",
		  s->secret_written ? "; the token's secret is kept in " : "; nothing written",
		  s->secret_written ? s->secret_path : "",
		  s->secret_written ? ": run setup again to finish" : "");
	free(m);
	int code = cli_exit_code(pve_error_outcome(e));
	pve_error_clear(e);
	return code ? code : 1;
}

/* ---- the certificate --------------------------------------------------------- */

static void fp_format(const unsigned char md[32], char out[96])
{
	for (size_t i = 0; i < 32; i++)
		snprintf(out + i * 3, 4, "%02X%s", md[i], i < 31 ? ":" : "");
}

/* Host and port of a normalised url ("https://h:8006", "https://h"):
 * malloc'd "h:port" (443 without a port, as for every request). */
static char *url_hostport(const char *url)
{
	const char *h = url + strlen("https://");
	size_t n = strlen(h);
	const char *close = h[0] == '[' ? memchr(h, ']', n) : NULL;
	const char *colon = close ? (close[1] == ':' ? close + 1 : NULL) : memchr(h, ':', n);
	return colon ? strdup(h) : strprintf("%s:443", h);
}

/* The URL as every command loads it ([pve] url: https://HOST[:PORT], no
 * path): HOST and HOST:PORT get https:// (and PVE's port 8006 when none
 * is given), a trailing '/' or "/api2/json" is dropped. A URL with
 * user:password@ is refused without being echoed. NULL and a usage error
 * said otherwise. */
static char *setup_url(const char *in)
{
	const char *sep = strstr(in, "://");
	if (sep && strncasecmp(in, "https://", 8) != 0) {
		cli_error("usage", "setup", "URL: only https:// is taken (the password and the "
			  "token are sent over it)");
		return NULL;
	}
	const char *h = sep ? sep + 3 : in;
	size_t hl = strcspn(h, "/");
	if (memchr(h, '@', hl)) {
		cli_error("usage", "setup", "URL: a user or password in it (USER:PASSWORD@HOST) "
			  "is not taken: give --user and --password-file");
		return NULL;
	}
	char *path = strdup(h + hl);
	if (!path) {
		cli_error("internal", "setup", "out of memory");
		return NULL;
	}
	size_t pl = strlen(path);
	while (pl && path[pl - 1] == '/')
		path[--pl] = '\0';
	static const char api[] = "/api2/json";
	if (pl >= sizeof api - 1 && strcmp(path + pl - (sizeof api - 1), api) == 0)
		path[pl -= sizeof api - 1] = '\0';
	while (pl && path[pl - 1] == '/')
		path[--pl] = '\0';
	bool v6 = h[0] == '[';
	const char *close = v6 ? memchr(h, ']', hl) : NULL;
	bool port = v6 ? close && close + 1 < h + hl && close[1] == ':' : memchr(h, ':', hl) != NULL;
	char *url = NULL;
	if (pl)
		cli_error("usage", "setup", "URL '%s': a path is not taken (expected HOST, "
			  "HOST:PORT or https://HOST[:PORT])", in);
	else if (!hl || (v6 && !close))
		cli_error("usage", "setup", "URL '%s': no host (expected HOST, HOST:PORT or "
			  "https://HOST[:PORT])", in);
	else if (!(url = strprintf("https://%.*s%s", (int)hl, h, port || sep ? "" : ":8006")))
		cli_error("internal", "setup", "out of memory");
	free(path);
	return url;
}

/* The SHA-256 fingerprint of the certificate the server shows, read with
 * no verification (it is shown to be confirmed, never trusted as such). */
static int peer_fingerprint(const char *url, char out[96], char **why)
{
	char *hp = url_hostport(url);
	SSL_CTX *ctx = hp ? SSL_CTX_new(TLS_client_method()) : NULL;
	BIO *b = ctx ? BIO_new_ssl_connect(ctx) : NULL;
	SSL *ssl = NULL;
	X509 *cert = NULL;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	int rc = -1;
	if (b && BIO_get_ssl(b, &ssl) > 0 && ssl && BIO_set_conn_hostname(b, hp) > 0 &&
	    BIO_do_connect(b) > 0 && BIO_do_handshake(b) > 0 &&
	    (cert = SSL_get_peer_certificate(ssl)) && X509_digest(cert, EVP_sha256(), md, &n) &&
	    n == 32) {
		fp_format(md, out);
		rc = 0;
	} else {
		unsigned long e = ERR_get_error();
		char buf[256];
		ERR_error_string_n(e, buf, sizeof buf);
		err_setf(why, "no TLS connection to %s (%s)", hp ? hp : url,
			 e ? buf : "connection failed");
	}
	X509_free(cert);
	BIO_free_all(b);
	SSL_CTX_free(ctx);
	ERR_clear_error();
	free(hp);
	return rc;
}

/* A line from the terminal (echo off for a secret); NULL at its end. */
static char *tty_line(FILE *tty, const char *prompt, bool secret)
{
	struct termios old, quiet;
	bool restore = false;
	fputs(prompt, tty);
	fflush(tty);
	if (secret && tcgetattr(fileno(tty), &old) == 0) {
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		restore = tcsetattr(fileno(tty), TCSAFLUSH, &quiet) == 0;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, tty);
	if (restore) {
		tcsetattr(fileno(tty), TCSAFLUSH, &old);
		fputc('\n', tty);
	}
	if (n < 0) {
		free(line);
		return NULL;
	}
	line[strcspn(line, "\r\n")] = '\0';
	return line;
}

static FILE *open_tty(void)
{
	return isatty(STDIN_FILENO) ? fopen("/dev/tty", "r+") : NULL;
}

static int pin_certificate(struct setup *s)
{
	unsigned char md[32];
	if (s->fingerprint_arg) {
		if (pve_parse_fingerprint(s->fingerprint_arg, md) < 0)
			return cli_error("usage", "setup", "--fingerprint '%s': "
					 "expected 32 hex bytes (AA:BB:...)", s->fingerprint_arg);
		fp_format(md, s->fingerprint);
		return 0;
	}
	char *why = NULL;
	if (peer_fingerprint(s->url, s->fingerprint, &why) < 0) {
		cli_error("unreachable", "setup", "certificate: %s; nothing written",
			  why ? why : "failed");
		free(why);
		return 4;
	}
	FILE *tty = open_tty();
	if (!tty)
		return cli_error("usage", "setup",
				 "%s shows the certificate %s; without a terminal "
				 "to confirm it, give --fingerprint (compare `pvenode cert info` "
				 "on the host); nothing written", s->url, s->fingerprint);
	fprintf(tty, "%s shows a certificate with the SHA-256 fingerprint\n  %s\n"
		"(on the host: pvenode cert info)\n", s->url, s->fingerprint);
	char *ans = tty_line(tty, "Is it the host's? [y/N] ", false);
	fclose(tty);
	bool yes = ans && (strcmp(ans, "y") == 0 || strcmp(ans, "yes") == 0);
	free(ans);
	if (!yes)
		return cli_error("usage", "setup", "certificate not confirmed; "
				 "nothing written");
	return 0;
}

static int read_password(struct setup *s)
{
	char *why = NULL;
	if (s->password_file) {
		size_t len = 0;
		if (read_small_file(s->password_file, CONF_SECRET_MAX, RF_PRIVATE, &s->password, &len,
				    &why) < 0) {
			cli_error("config", "setup", "--password-file %s: %s",
				  s->password_file, why ? why : "out of memory");
			free(why);
			return EXIT_USAGE;
		}
		s->password[strcspn(s->password, "\r\n")] = '\0';
		return 0;
	}
	FILE *tty = open_tty();
	if (!tty)
		return cli_error("usage", "setup", "needs --password-file or a "
				 "terminal to ask %s's password", s->user);
	char *prompt = strprintf("Password of %s: ", s->user);
	s->password = prompt ? tty_line(tty, prompt, true) : NULL;
	free(prompt);
	fclose(tty);
	if (!s->password)
		return cli_error("usage", "setup", "no password given");
	return 0;
}

/* ---- the steps ---------------------------------------------------------------- */

/* Is w (l bytes) an item of list (separated by ',', ';' or ' ')? */
static bool list_has(const char *list, const char *w, size_t l)
{
	for (const char *p = list; *p;) {
		p += strspn(p, ", ;");
		size_t n = strcspn(p, ", ;");
		if (n && n == l && strncmp(p, w, l) == 0)
			return true;
		p += n;
	}
	return false;
}

/* The role's privileges: what the commands need (pveprivs.h), without
 * what only migrate (drain, rolling) and image build need with --minimal. */
static unsigned role_extras(const struct setup *s)
{
	return s->minimal ? (s->migrate ? PVEPRIVS_MIGRATE : 0) : PVEPRIVS_ALL;
}

/* The role gains what it lacks (POST, or PUT with append=1: PVE's
 * update_role replaces the role without it) and never loses a privilege,
 * whoever granted it. */
/* Does the listing at path hold an entry whose key is id? 1, 0, or -1
 * (e filled). */
static int list_holds(struct setup *s, const char *path, const char *key, const char *id,
		      struct pve_error *e)
{
	json_object *l = NULL;
	if (pve_get(s->admin, path, NULL, &l, e) < 0)
		return -1;
	bool have = false;
	for (size_t i = 0; i < json_object_array_length(l); i++) {
		const char *v = json_str(json_object_array_get_idx(l, i), key);
		have = have || (v && strcmp(v, id) == 0);
	}
	json_object_put(l);
	return have;
}

/* After a POST that made id failed: is it there all the same (PVE made it
 * and the answer was lost, or the resent request was refused as a
 * duplicate)? A listing that cannot be read says no. */
static bool made_after_all(struct setup *s, const char *path, const char *key, const char *id)
{
	struct pve_error e = {0};
	int have = list_holds(s, path, key, id, &e);
	pve_error_clear(&e);
	return have > 0;
}

static int ensure_role(struct setup *s)
{
	struct pve_error e = {0};
	json_object *roles = NULL;
	char *want = pveprivs_role_privs(s->major, role_extras(s));
	if (!want)
		pve_error_oom(&e);
	if (!want || pve_get(s->admin, "/access/roles", NULL, &roles, &e) < 0) {
		free(want);
		return step_failed(s, "role " PVEPRIVS_ROLE, &e);
	}
	const char *have = NULL;
	for (size_t i = 0; i < json_object_array_length(roles); i++) {
		json_object *r = json_object_array_get_idx(roles, i);
		const char *id = json_str(r, "roleid");
		if (id && strcmp(id, PVEPRIVS_ROLE) == 0)
			have = json_text(r, "privs") ? json_text(r, "privs") : "";
	}
	struct sbuf missing = {0};
	int rc = sbuf_add(&missing, "");
	for (const char *p = want; rc == 0 && *p;) {
		size_t n = strcspn(p, " ");
		if (!have || !list_has(have, p, n))
			rc = sbuf_addf(&missing, "%s%.*s", missing.len ? " " : "", (int)n, p);
		p += n + (p[n] == ' ');
	}
	if (rc < 0) {
		rc = cli_error("internal", "setup", "out of memory");
	} else if (have && !missing.len) {
		said(s, "role " PVEPRIVS_ROLE, "as it should be");
	} else {
		struct pve_params p = {0};
		if (!have)
			pve_params_add(&p, "roleid", PVEPRIVS_ROLE);
		else
			pve_params_add_bool(&p, "append", true);
		pve_params_add(&p, "privs", sbuf_str(&missing));
		int r = have ? pve_put(s->admin, "/access/roles/" PVEPRIVS_ROLE, &p, NULL, &e)
			     : pve_post(s->admin, "/access/roles", &p, NULL, &e);
		pve_params_free(&p);
		char *what = have ? strprintf("added %s", sbuf_str(&missing)) : NULL;
		if (r < 0 && (have || !made_after_all(s, "/access/roles", "roleid", PVEPRIVS_ROLE)))
			rc = step_failed(s, "role " PVEPRIVS_ROLE, &e);
		else
			said(s, "role " PVEPRIVS_ROLE, !have ? "created" : what ? what : "added");
		pve_error_clear(&e);
		free(what);
	}
	sbuf_free(&missing);
	json_object_put(roles);
	free(want);
	return rc;
}

static int ensure_user(struct setup *s)
{
	struct pve_error e = {0};
	int have = list_holds(s, "/access/users", "userid", PVEPRIVS_USER, &e);
	if (have < 0)
		return step_failed(s, "user " PVEPRIVS_USER, &e);
	if (have) {
		said(s, "user " PVEPRIVS_USER, "exists");
		return 0;
	}
	struct pve_params p = {0};
	pve_params_add(&p, "userid", PVEPRIVS_USER);
	pve_params_add(&p, "comment", "pvagent");
	int r = pve_post(s->admin, "/access/users", &p, NULL, &e);
	pve_params_free(&p);
	if (r < 0 && !made_after_all(s, "/access/users", "userid", PVEPRIVS_USER))
		return step_failed(s, "user " PVEPRIVS_USER, &e);
	pve_error_clear(&e);
	said(s, "user " PVEPRIVS_USER, "created");
	return 0;
}

#define TOKEN_LIST "/access/users/" PVEPRIVS_USER "/token"
#define TOKEN_PATH TOKEN_LIST "/" PVEPRIVS_TOKEN
#define TOKEN_ID PVEPRIVS_USER "!" PVEPRIVS_TOKEN

/* Does the secret authenticate the token? 1 yes, 0 no (401), -1 cannot
 * say (e filled). */
static int secret_works(struct setup *s, const char *secret, struct pve_error *e)
{
	struct pve_opts o = {.url = s->url, .token_id = TOKEN_ID, .token_secret = secret,
			     .fingerprint = s->fingerprint};
	struct pve *t = pve_new(&o, e);
	if (!t)
		return -1;
	int rc = pve_login(t, e) == 0 ? 1 : e->kind == PVE_ERR_AUTH ? 0 : -1;
	if (rc == 0)
		pve_error_clear(e);
	pve_free(t);
	return rc;
}

/* The secret into its file (0600) the moment PVE shows it: PVE shows a
 * token's secret once, and a later step may fail. */
static int keep_secret(struct setup *s)
{
	char *why = NULL, *line = strprintf("%s\n", s->secret);
	int rc = line ? conf_write_atomic(s->secret_path, line, 0600, &why) : -1;
	if (line) {
		explicit_bzero(line, strlen(line));
		free(line);
	}
	if (rc < 0) {
		cli_error("io", "setup", "token secret: %s; the token %s is made: run setup again "
			  "with --force to replace it", why ? why : "out of memory", TOKEN_ID);
		free(why);
		return 1;
	}
	s->secret_written = true;
	said(s, s->secret_path, "written (0600)");
	return 0;
}

/* POST the token. Its answer carries the secret, which nobody knows
 * before: the answer is never traced (the level is held at debug for the
 * request, so -vv prints its status line only). */
static int post_token(struct setup *s, json_object **d, struct pve_error *e)
{
	struct pve_params p = {0};
	pve_params_add_bool(&p, "privsep", true);
	pve_params_add(&p, "comment", "pvagent");
	enum log_level lvl = log_get_level();
	if (lvl > LOGL_DEBUG)
		log_set_level(LOGL_DEBUG);
	int r = pve_post(s->admin, TOKEN_PATH, &p, d, e);
	log_set_level(lvl);
	pve_params_free(&p);
	return r;
}

static int ensure_token(struct setup *s)
{
	struct pve_error e = {0};
	int have = list_holds(s, TOKEN_LIST, "tokenid", PVEPRIVS_TOKEN, &e);
	if (have < 0)
		return step_failed(s, "token " TOKEN_ID, &e);
	if (have) {
		char *why = NULL;
		size_t len;
		if (read_small_file(s->secret_path, CONF_SECRET_MAX, RF_PRIVATE | RF_NOFOLLOW,
				    &s->secret, &len, &why) == 0) {
			s->secret[strcspn(s->secret, "\r\n")] = '\0';
			log_secret_add(s->secret);
			int ok = secret_works(s, s->secret, &e);
			if (ok < 0)
				return step_failed(s, "token " TOKEN_ID, &e);
			if (ok) {
				said(s, "token " TOKEN_ID, "exists; its secret is in the file");
				return 0;
			}
			free(why);
			why = strdup("it is not the token's secret");
		}
		if (!s->force) {
			cli_error("config", "setup", "token %s exists but its secret "
				  "is not at hand (%s: %s; PVE shows a secret only once): run again "
				  "with --force to replace the token; nothing written", TOKEN_ID,
				  s->secret_path, why ? why : "unreadable");
			free(why);
			return 1;
		}
		free(why);
		if (s->secret) {
			log_secret_remove(s->secret);
			free(s->secret);
			s->secret = NULL;
		}
		if (pve_delete(s->admin, TOKEN_PATH, NULL, NULL, &e) < 0)
			return step_failed(s, "token " TOKEN_ID " (replacing it)", &e);
	}
	json_object *d = NULL;
	bool lost = false;
	int r = post_token(s, &d, &e);
	if (r < 0 && (e.ambiguous || (e.message && strstr(e.message, "already exists")) ||
		      made_after_all(s, TOKEN_LIST, "tokenid", PVEPRIVS_TOKEN))) {
		/* the first answer was lost after PVE made the token (the retry got
		 * "Token already exists", or an error came back after it took
		 * effect): its secret is gone, so it is made again */
		pve_error_clear(&e);
		lost = true;
		r = pve_delete(s->admin, TOKEN_PATH, NULL, NULL, &e);
		if (r == 0)
			r = post_token(s, &d, &e);
	}
	if (r < 0)
		return step_failed(s, "token " TOKEN_ID, &e);
	const char *v = json_str(d, "value");
	if (!v || !(s->secret = strdup(v))) {
		json_object_put(d);
		pve_error_set(&e, PVE_ERR_PROTOCOL, "POST %s: no secret in the answer", TOKEN_PATH);
		return step_failed(s, "token " TOKEN_ID, &e);
	}
	log_secret_add(s->secret);
	json_object_put(d);
	said(s, "token " TOKEN_ID, lost ? "made again (the answer that carried its secret was lost)"
			  : have ? "replaced (--force)" : "created");
	return keep_secret(s);
}

/* Is there an entry for role on "/" (propagating) for ugid? */
static bool acl_has(json_object *acl, const char *type, const char *ugid)
{
	for (size_t i = 0; i < json_object_array_length(acl); i++) {
		json_object *a = json_object_array_get_idx(acl, i);
		const char *t = json_str(a, "type"), *u = json_str(a, "ugid"),
			   *r = json_str(a, "roleid"), *p = json_str(a, "path"),
			   *prop = json_text(a, "propagate");
		if (t && u && r && p && strcmp(t, type) == 0 && strcmp(u, ugid) == 0 &&
		    strcmp(r, PVEPRIVS_ROLE) == 0 && strcmp(p, "/") == 0 &&
		    (!prop || strcmp(prop, "0") != 0))
			return true;
	}
	return false;
}

static int ensure_acl(struct setup *s)
{
	struct pve_error e = {0};
	json_object *acl = NULL;
	if (pve_get(s->admin, "/access/acl", NULL, &acl, &e) < 0)
		return step_failed(s, "ACL /", &e);
	bool user = acl_has(acl, "user", PVEPRIVS_USER), tok = acl_has(acl, "token", TOKEN_ID);
	json_object_put(acl);
	if (user && tok) {
		said(s, "ACL / (user and token)", "as it should be");
		return 0;
	}
	struct pve_params p = {0};
	pve_params_add(&p, "path", "/");
	pve_params_add(&p, "roles", PVEPRIVS_ROLE);
	pve_params_add_bool(&p, "propagate", true);
	if (!user)
		pve_params_add(&p, "users", PVEPRIVS_USER);
	if (!tok)
		pve_params_add(&p, "tokens", TOKEN_ID);
	int r = pve_put(s->admin, "/access/acl", &p, NULL, &e);
	pve_params_free(&p);
	if (r < 0)
		return step_failed(s, "ACL /", &e);
	said(s, "ACL / (user and token)", "granted");
	return 0;
}

/* image build downloads into a storage with the "import" content type;
 * every cluster installed before PVE 9.0 has none (pve-installer added
 * import to local's content in 9.0.7): local gets it, with the
 * administrator's login, keeping its other types (--no-storage-change:
 * the pvesm line is printed instead). */
static int ensure_import_storage(struct setup *s)
{
	struct pve_error e = {0};
	json_object *st = NULL;
	if (pve_get(s->admin, "/storage", NULL, &st, &e) < 0)
		return step_failed(s, "storage", &e);
	const char *local = NULL, *with = NULL;
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *o = json_object_array_get_idx(st, i);
		const char *id = json_str(o, "storage"), *type = json_str(o, "type");
		const char *content = json_text(o, "content") ? json_text(o, "content") : "";
		const char *dis = json_text(o, "disable");
		if (!id || (dis && strcmp(dis, "0") != 0))
			continue;
		if (!with && list_has(content, "import", 6))
			with = id;
		if (strcmp(id, "local") == 0 && type && strcmp(type, "dir") == 0)
			local = content;
	}
	char *want = local ? strprintf("%s%simport", local, *local ? "," : "") : NULL;
	char *line = want ? strprintf("pvesm set local --content %s", want) : NULL;
	char *said_text = NULL;
	int rc = 0;
	if (with) {
		said_text = strprintf("%s takes image build's downloads (import)", with);
	} else if (!local) {
		said_text = strdup("none takes import content, which image build needs: add it to "
				   "a file storage's content (pvesm set STORAGE --content ...,import)");
	} else if (!want || !line) {
		rc = cli_error("internal", "setup", "out of memory");
	} else if (s->no_storage_change) {
		said_text = strprintf("no storage takes import content, which image build needs: "
				      "on the host, %s", line);
	} else {
		struct pve_params p = {0};
		pve_params_add(&p, "content", want);
		int r = pve_put(s->admin, "/storage/local", &p, NULL, &e);
		pve_params_free(&p);
		if (r < 0)
			rc = step_failed(s, "storage local", &e);
		else
			said_text = strprintf("import added to its content for image build (%s)", want);
	}
	if (rc == 0 && said_text)
		said(s, with || !local ? "storage" : "storage local", said_text);
	else if (rc == 0)
		rc = cli_error("internal", "setup", "out of memory");
	free(said_text);
	free(line);
	free(want);
	json_object_put(st);
	return rc;
}

/* ---- the files ------------------------------------------------------------------ */

/* Before anything changes on PVE: the configuration's directory made
 * (0700), and the configuration read as one setup can edit (or the header
 * of a new one). A refusal here changes nothing. */
static int prepare_files(struct setup *s)
{
	struct stat st;
	if (mkdir(s->dir, 0700) < 0 && errno != EEXIST)
		return cli_error("io", "setup", "%s: %s; nothing written", s->dir, strerror(errno));
	if (stat(s->dir, &st) < 0 || !S_ISDIR(st.st_mode) || access(s->dir, W_OK | X_OK) < 0)
		return cli_error("io", "setup", "%s: %s; nothing written", s->dir,
				 errno ? strerror(errno) : "not a directory");
	char *text = NULL, *why = NULL;
	size_t len = 0;
	s->conf_exists = lstat(s->conf_path, &st) == 0;
	int rc = 0;
	if (s->conf_exists &&
	    read_small_file(s->conf_path, INI_MAX_BYTES, RF_TRUSTED, &text, &len, &why) < 0) {
		rc = cli_error("config", "setup", "%s: %s; nothing written", s->conf_path,
			       why ? why : "out of memory");
	} else if (conf_edit_load(&s->conf, s->conf_path, s->conf_exists ? text : CONF_HEADER,
				  s->conf_exists ? len : strlen(CONF_HEADER), &why) < 0) {
		rc = cli_error("config", "setup", "%s; setup edits the keys it owns in place and "
			       "keeps the rest, so it must parse: fix it or move it away; nothing "
			       "written", why ? why : "out of memory");
	}
	free(text);
	free(why);
	return rc;
}

/* The first online node the token sees (it answers: the check that
 * `pvagent nodes` works with it). */
static int token_node(struct setup *s, char **node)
{
	struct pve_error e = {0};
	struct pve_opts o = {.url = s->url, .token_id = TOKEN_ID, .token_secret = s->secret,
			     .fingerprint = s->fingerprint};
	struct pve *t = pve_new(&o, &e);
	json_object *nodes = NULL;
	if (!t || pve_get(t, "/nodes", NULL, &nodes, &e) < 0) {
		pve_free(t);
		return step_failed(s, "the token's first request (GET /nodes)", &e);
	}
	pve_free(t);
	*node = NULL;
	for (size_t i = 0; i < json_object_array_length(nodes) && !*node; i++) {
		json_object *n = json_object_array_get_idx(nodes, i);
		const char *st = json_str(n, "status"), *name = json_str(n, "node");
		if (name && st && strcmp(st, "online") == 0)
			*node = strdup(name);
	}
	json_object_put(nodes);
	return 0;
}

/* The node's storages (the administrator's view): malloc'd choices for
 * [pve] storage (images) and import_storage (import), either NULL. */
static int node_storages(struct setup *s, const char *node, char **disk, char **import)
{
	struct pve_error e = {0};
	json_object *st = NULL;
	if (storage_node_list(s->admin, node, &st, &e) < 0)
		return step_failed(s, "storages", &e);
	char *had_disk = conf_edit_get(&s->conf, "pve", NULL, "storage");
	char *had_import = conf_edit_get(&s->conf, "pve", NULL, "import_storage");
	const char *d = storage_pick(st, had_disk, "images"), *i = storage_pick(st, had_import,
										 "import");
	*disk = d ? strdup(d) : NULL;
	*import = i ? strdup(i) : NULL;
	free(had_disk);
	free(had_import);
	json_object_put(st);
	return 0;
}

/* The keys setup owns set in place, the rest of the file kept. */
static int write_files(struct setup *s)
{
	char *node = NULL, *why = NULL;
	char *disk = NULL, *import = NULL;
	int rc = token_node(s, &node);
	if (!rc && node)
		rc = node_storages(s, node, &disk, &import);
	if (rc) {
		free(node);
		return rc;
	}
	char *key = strprintf("%s/id_ed25519", s->dir);
	struct stat st;
	bool have_key = key && stat(key, &st) == 0;
	const char *const set[][3] = {
		{"pve", "url", s->url},
		{"pve", "token_id", TOKEN_ID},
		{"pve", "token_secret_file", s->secret_path},
		{"pve", "fingerprint", s->fingerprint},
		{"pve", "node", node},
		{"pve", "storage", disk},
		{"pve", "import_storage", import},
		{"ssh", "identity", have_key ? key : NULL},
		/* a new file only: the user's choice is kept */
		{"ssh", "host_key_policy", s->conf_exists ? NULL : "tofu"},
	};
	for (size_t i = 0; rc == 0 && i < sizeof set / sizeof set[0]; i++)
		if (set[i][2] && conf_edit_set(&s->conf, set[i][0], NULL, set[i][1], set[i][2],
					       &why) < 0)
			rc = cli_error("config", "setup", "%s", why ? why : "out of memory");
	char *text = rc ? NULL : conf_edit_text(&s->conf);
	if (rc == 0 && !text)
		rc = cli_error("internal", "setup", "out of memory");
	if (rc == 0 && s->conf_exists && !s->conf.changed) {
		said(s, s->conf_path, "as it should be");
	} else if (rc == 0) {
		free(why);
		why = NULL;
		if (conf_write_atomic(s->conf_path, text, 0, &why) < 0)
			rc = cli_error("io", "setup", "configuration: %s%s%s", why,
				       s->secret_written ? "; the token's secret is kept in " : "",
				       s->secret_written ? s->secret_path : "");
		else
			said(s, s->conf_path, s->conf_exists ? "updated (the rest kept as written)"
							      : "written (0600)");
	}
	if (rc == 0 && !s->cli->json) {
		if (!have_key)
			printf("no SSH identity for the guests yet: make one with\n"
			       "  ssh-keygen -t ed25519 -N '' -f %s\n"
			       "and run this setup again (it adds the identity to %s)\n",
			       key ? key : "KEY", s->conf_path);
		printf("next: pvagent -c %s doctor\n", s->conf_path);
	}
	free(text);
	free(key);
	free(node);
	free(disk);
	free(import);
	free(why);
	return rc ? 1 : 0; /* a refusal here is no usage error */
}

/* ---- the command ------------------------------------------------------------------ */

static int setup_paths(struct setup *s)
{
	const char *env = getenv("PVAGENT_CONF");
	const char *c = s->cli->conf_path ? s->cli->conf_path : env ? env : SYSTEM_CONF;
	if (!*c)
		return cli_error("usage", "setup", "an empty configuration path");
	const char *slash = strrchr(c, '/');
	s->conf_path = strdup(c);
	s->dir = slash ? strndup(c, slash == c ? 1 : (size_t)(slash - c)) : strdup(".");
	s->secret_path = s->dir ? strprintf("%s/token.secret", s->dir) : NULL;
	if (!s->conf_path || !s->dir || !s->secret_path)
		return cli_error("internal", "setup", "out of memory");
	return 0;
}

static void setup_free(struct setup *s)
{
	if (s->password) {
		log_secret_remove(s->password);
		explicit_bzero(s->password, strlen(s->password));
	}
	if (s->secret) {
		log_secret_remove(s->secret);
		explicit_bzero(s->secret, strlen(s->secret));
	}
	free(s->password);
	free(s->secret);
	pve_free(s->admin);
	conf_edit_free(&s->conf);
	free(s->url);
	free(s->conf_path);
	free(s->dir);
	free(s->secret_path);
	json_object_put(s->steps);
}

static int print_lines(int major, unsigned extras)
{
	char *lines = pveprivs_pveum_lines(major, extras);
	if (!lines)
		return cli_error("internal", "setup", "out of memory");
	fputs(lines, stdout);
	free(lines);
	return 0;
}

/* The login failed: with TFA, the ways that need none. */
static int login_failed(struct setup *s, struct pve_error *e)
{
	if (!s->admin || !pve_login_needs_tfa(s->admin))
		return step_failed(s, "login", e);
	pve_error_clear(e);
	cli_error("auth", "setup", "login: %s has two-factor authentication, and setup cannot "
		  "give a second factor; either give --user (and its --password-file) of an "
		  "administrator without it, or make the role, user, token and ACLs by hand "
		  "with the lines `pvagent setup %s --dry-run --pve-version N` prints (N: 9 for "
		  "PVE 9.x, 8 for 8.x) and write the configuration as README.md shows; "
		  "nothing written", s->user, s->url);
	return 4; /* as any refused login */
}

static int run_setup(struct setup *s)
{
	int rc = setup_paths(s);
	if (rc)
		return rc;
	if (!(s->url = setup_url(s->url_arg)))
		return EXIT_USAGE;
	if (s->dry_run && s->pve_version) /* the lines of that version, no login */
		return print_lines(s->pve_version, role_extras(s));
	rc = pin_certificate(s);
	if (!rc)
		rc = read_password(s);
	if (rc)
		return rc;
	log_secret_add(s->password);
	struct pve_error e = {0};
	struct pve_opts o = {.url = s->url, .user = s->user, .password = s->password,
			     .fingerprint = s->fingerprint};
	if (!(s->admin = pve_new(&o, &e)) || pve_login(s->admin, &e) < 0)
		return login_failed(s, &e);
	said(s, "login", s->user);
	if (guest_pve_major(s->admin, &s->major, &e) < 0)
		return step_failed(s, "version", &e);
	char ver[16];
	snprintf(ver, sizeof ver, "PVE %d", s->major);
	said(s, "version", ver);
	if (s->dry_run)
		return print_lines(s->major, role_extras(s));
	rc = prepare_files(s);
	if (!rc)
		rc = ensure_role(s);
	if (!rc)
		rc = ensure_user(s);
	if (!rc)
		rc = ensure_token(s);
	if (!rc)
		rc = ensure_acl(s);
	if (!rc && !s->minimal)
		rc = ensure_import_storage(s);
	if (!rc)
		rc = write_files(s);
	return rc;
}

static int cmd_setup(struct cli *cli, const struct cmd_args *a)
{
	struct setup s = {.cli = cli, .url_arg = a->argv[0], .user = "root@pam"};
	for (size_t i = 0; i < a->n; i++) {
		switch (a->v[i].opt) {
		case 'u': s.user = a->v[i].val; break;
		case 'p': s.password_file = a->v[i].val; break;
		case 'f': s.fingerprint_arg = a->v[i].val; break;
		case 'm': s.migrate = true; break;
		case 'M': s.minimal = true; break;
		case 'F': s.force = true; break;
		case 'd': s.dry_run = true; break;
		case 'S': s.no_storage_change = true; break;
		case 'V': {
			char *end = NULL;
			long v = strtol(a->v[i].val, &end, 10);
			if (end == a->v[i].val || (*end && *end != '.') || v < 1 || v > 99)
				return cli_error("usage", "setup", "--pve-version '%s': expected "
						 "PVE's major version (8, 9)", a->v[i].val);
			s.pve_version = (int)v;
			break;
		}
		}
	}
	if (s.pve_version && !s.dry_run)
		return cli_error("usage", "setup", "--pve-version is for --dry-run (setup itself "
				 "asks PVE)");
	s.steps = json_object_new_array();
	int rc = s.steps ? run_setup(&s) : 1;
	if (cli->json && rc == 0) {
		out_json_ok("setup", "steps", json_object_get(s.steps));
	}
	setup_free(&s);
	return rc;
}

static const struct option setup_opts[] = {
	{"user", required_argument, NULL, 'u'},     {"password-file", required_argument, NULL, 'p'},
	{"fingerprint", required_argument, NULL, 'f'}, {"migrate", no_argument, NULL, 'm'},
	{"minimal", no_argument, NULL, 'M'},        {"force", no_argument, NULL, 'F'},
	{"dry-run", no_argument, NULL, 'd'},        {"pve-version", required_argument, NULL, 'V'},
	{"no-storage-change", no_argument, NULL, 'S'},
	{0},
};

const struct cmd_entry cmd_setup_entry = {
	"setup",
	"URL [--user U] [--password-file F] [--fingerprint FP] [--minimal [--migrate]] "
	"[--no-storage-change] [--force] [--dry-run [--pve-version N]]",
	"connect to a PVE host: role, user, API token and ACLs, then the configuration",
	"u:p:f:", setup_opts, NULL, 1, 1, "URL", cmd_setup,
	"pvagent setup https://pve1.example.com:8006\n"
	"pvagent -c ~/.config/pvagent.conf setup pve1 --password-file ~/.pvepw "
	"--fingerprint 5F:2B:...:E5\n"
	"pvagent setup pve1 --dry-run --pve-version 9",
	.wf = NULL,
};
