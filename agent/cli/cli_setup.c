/* cli_setup.c - `pvagent setup URL`: the first command on a new host.
 * Logs in once as an administrator (password from --password-file or the
 * terminal, never from argv, never stored), pins the certificate
 * (--fingerprint, or shown and confirmed on a terminal), reads the PVE
 * version and makes exactly what pveprivs.h says: the role with that
 * version's privileges, the user, a privilege-separated token and the
 * ACLs of both on "/"; then writes the token's secret and a complete
 * configuration (both 0600) and checks that the token answers. Each step
 * looks first and changes only what differs, so a second run changes
 * nothing and a partial run is completed by the next. --dry-run prints the
 * pveum lines for that version instead. */
#include "cli.h"
#include "guest.h"
#include "json.h"
#include "log.h"
#include "output.h"
#include "pveprivs.h"
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
#define CONF_HEADER "# written by pvagent setup; it rewrites this file when run again\n"

struct setup {
	struct cli *cli;
	const char *url, *user, *password_file, *fingerprint_arg;
	bool migrate, force, dry_run;
	char *conf_path, *dir, *secret_path;
	char fingerprint[96];
	char *password;
	struct pve *admin;
	int major;
	char *secret;          /* the token's secret (from the file or new) */
	bool token_new;        /* made by this run: its secret is to be written */
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
	cli_error(pve_err_kind_name(e->kind), "setup", "%s%s%s; nothing written",
		  named ? "" : step, named ? "" : ": ", m ? m : "failed");
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

/* Host and port of url ("https://h:8006/...", "h"): malloc'd "h:port". */
static char *url_hostport(const char *url)
{
	const char *h = strstr(url, "://") ? strstr(url, "://") + 3 : url;
	size_t n = strcspn(h, "/");
	const char *close = h[0] == '[' ? memchr(h, ']', n) : NULL;
	const char *colon = close ? (close[1] == ':' ? close + 1 : NULL) : memchr(h, ':', n);
	return colon ? strndup(h, n) : strprintf("%.*s:8006", (int)n, h);
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

/* Each item of a is one of b's, and the other way round. */
static bool list_within(const char *a, const char *b)
{
	for (const char *p = a; *p;) {
		p += strspn(p, ", ;");
		size_t n = strcspn(p, ", ;");
		if (n && !list_has(b, p, n))
			return false;
		p += n;
	}
	return true;
}

static bool same_privs(const char *have, const char *want)
{
	return list_within(have, want) && list_within(want, have);
}

static int ensure_role(struct setup *s)
{
	struct pve_error e = {0};
	json_object *roles = NULL;
	char *want = pveprivs_role_privs(s->major, s->migrate);
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
	int rc = 0;
	if (have && !s->migrate && list_has(have, "VM.Migrate", 10)) {
		/* a role set up for migrate keeps it: a rerun without --migrate
		 * (to add the SSH key, say) takes nothing away */
		s->migrate = true;
		free(want);
		want = pveprivs_role_privs(s->major, true);
		said(s, "role " PVEPRIVS_ROLE, "keeps what migrate needs (it has VM.Migrate)");
	}
	if (!want) {
		rc = cli_error("internal", "setup", "out of memory");
	} else if (have && same_privs(have, want)) {
		said(s, "role " PVEPRIVS_ROLE, "as it should be");
	} else {
		struct pve_params p = {0};
		if (!have)
			pve_params_add(&p, "roleid", PVEPRIVS_ROLE);
		pve_params_add(&p, "privs", want);
		int r = have ? pve_put(s->admin, "/access/roles/" PVEPRIVS_ROLE, &p, NULL, &e)
			     : pve_post(s->admin, "/access/roles", &p, NULL, &e);
		pve_params_free(&p);
		if (r < 0)
			rc = step_failed(s, "role " PVEPRIVS_ROLE, &e);
		else
			said(s, "role " PVEPRIVS_ROLE, have ? "updated to this version's privileges"
							    : "created");
	}
	json_object_put(roles);
	free(want);
	return rc;
}

static int ensure_user(struct setup *s)
{
	struct pve_error e = {0};
	json_object *users = NULL;
	if (pve_get(s->admin, "/access/users", NULL, &users, &e) < 0)
		return step_failed(s, "user " PVEPRIVS_USER, &e);
	bool have = false;
	for (size_t i = 0; i < json_object_array_length(users); i++) {
		const char *id = json_str(json_object_array_get_idx(users, i), "userid");
		have = have || (id && strcmp(id, PVEPRIVS_USER) == 0);
	}
	json_object_put(users);
	if (have) {
		said(s, "user " PVEPRIVS_USER, "exists");
		return 0;
	}
	struct pve_params p = {0};
	pve_params_add(&p, "userid", PVEPRIVS_USER);
	pve_params_add(&p, "comment", "pvagent");
	int r = pve_post(s->admin, "/access/users", &p, NULL, &e);
	pve_params_free(&p);
	if (r < 0)
		return step_failed(s, "user " PVEPRIVS_USER, &e);
	said(s, "user " PVEPRIVS_USER, "created");
	return 0;
}

#define TOKEN_PATH "/access/users/" PVEPRIVS_USER "/token/" PVEPRIVS_TOKEN
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

static int ensure_token(struct setup *s)
{
	struct pve_error e = {0};
	json_object *toks = NULL;
	if (pve_get(s->admin, "/access/users/" PVEPRIVS_USER "/token", NULL, &toks, &e) < 0)
		return step_failed(s, "token " TOKEN_ID, &e);
	bool have = false;
	for (size_t i = 0; i < json_object_array_length(toks); i++) {
		const char *id = json_str(json_object_array_get_idx(toks, i), "tokenid");
		have = have || (id && strcmp(id, PVEPRIVS_TOKEN) == 0);
	}
	json_object_put(toks);
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
	struct pve_params p = {0};
	pve_params_add_bool(&p, "privsep", true);
	pve_params_add(&p, "comment", "pvagent");
	json_object *d = NULL;
	int r = pve_post(s->admin, TOKEN_PATH, &p, &d, &e);
	pve_params_free(&p);
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
	s->token_new = true;
	said(s, "token " TOKEN_ID, have ? "replaced (--force)" : "created");
	return 0;
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
	if (r < 0) {
		/* a token made by this run whose secret would be lost goes again */
		struct pve_error e2 = {0};
		if (s->token_new && pve_delete(s->admin, TOKEN_PATH, NULL, NULL, &e2) < 0)
			log_warn("token %s was made but could not be deleted again: run setup "
				 "with --force once the ACL step passes", TOKEN_ID);
		pve_error_clear(&e2);
		return step_failed(s, "ACL /", &e);
	}
	said(s, "ACL / (user and token)", "granted");
	return 0;
}

/* ---- the files ------------------------------------------------------------------ */

/* Write text to path (0600) through a temporary file renamed over it. */
static int write_private(const char *path, const char *text, char **why)
{
	char *tmp = strprintf("%s.tmp.%ld", path, (long)getpid());
	int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600) : -1;
	size_t len = strlen(text), off = 0;
	while (fd >= 0 && off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	bool ok = fd >= 0 && off == len && fsync(fd) == 0;
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	if (ok && rename(tmp, path) != 0)
		ok = false;
	if (!ok) {
		err_setf(why, "%s: %s", path, strerror(errno));
		if (tmp)
			unlink(tmp);
	}
	free(tmp);
	return ok ? 0 : -1;
}

static char *conf_text(struct setup *s, const char *node, const char *identity)
{
	return strprintf(CONF_HEADER "# PVE %d at %s; check it with: pvagent doctor\n"
			 "[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
			 "fingerprint = %s\n%s%s%s"
			 "[ssh]\n%s%s%shost_key_policy = tofu\n",
			 s->major, s->url, s->url, TOKEN_ID, s->secret_path, s->fingerprint,
			 node ? "node = " : "", node ? node : "", node ? "\n" : "",
			 identity ? "identity = " : "", identity ? identity : "",
			 identity ? "\n" : "");
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

static int write_files(struct setup *s)
{
	char *node = NULL, *why = NULL, *old = NULL, *text = NULL;
	int rc = token_node(s, &node);
	if (rc)
		return rc;
	if (mkdir(s->dir, 0700) < 0 && errno != EEXIST) {
		cli_error("io", "setup", "%s: %s", s->dir, strerror(errno));
		free(node);
		return 1;
	}
	char *key = strprintf("%s/id_ed25519", s->dir);
	struct stat st;
	bool have_key = key && stat(key, &st) == 0;
	text = conf_text(s, node, have_key ? key : NULL);
	bool exists = read_file(s->conf_path, &old, NULL) == 0;
	if (!text) {
		rc = cli_error("internal", "setup", "out of memory");
	} else if (exists && strcmp(old, text) == 0) {
		said(s, s->conf_path, "as it should be");
	} else if (exists && strncmp(old, CONF_HEADER, strlen(CONF_HEADER)) != 0 && !s->force) {
		rc = cli_error("config", "setup", "%s exists and was not written by "
			       "setup: move it away or run again with --force to replace it%s",
			       s->conf_path, s->token_new ? "" : "; nothing written");
	}
	if (rc == 0 && s->token_new) {
		char *line = strprintf("%s\n", s->secret);
		if (!line || write_private(s->secret_path, line, &why) < 0)
			rc = cli_error("io", "setup", "token secret: %s",
				       why ? why : "out of memory");
		else
			said(s, s->secret_path, "written (0600)");
		free(line);
	}
	if (rc == 0 && text && !(exists && strcmp(old, text) == 0)) {
		if (write_private(s->conf_path, text, &why) < 0)
			rc = cli_error("io", "setup", "configuration: %s", why);
		else
			said(s, s->conf_path, exists ? "rewritten (0600)" : "written (0600)");
	}
	if (rc == 0 && !s->cli->json) {
		if (!have_key)
			printf("no SSH identity for the guests yet: make one with\n"
			       "  ssh-keygen -t ed25519 -N '' -f %s\n"
			       "and run this setup again (it adds the identity to %s)\n",
			       key ? key : "KEY", s->conf_path);
		printf("next: pvagent -c %s doctor\n", s->conf_path);
	}
	free(key);
	free(node);
	free(old);
	free(text);
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
		memset(s->password, 0, strlen(s->password));
	}
	if (s->secret) {
		log_secret_remove(s->secret);
		memset(s->secret, 0, strlen(s->secret));
	}
	free(s->password);
	free(s->secret);
	pve_free(s->admin);
	free(s->conf_path);
	free(s->dir);
	free(s->secret_path);
	json_object_put(s->steps);
}

static int run_setup(struct setup *s)
{
	int rc = setup_paths(s);
	if (!rc)
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
		return step_failed(s, "login", &e);
	said(s, "login", s->user);
	if (guest_pve_major(s->admin, &s->major, &e) < 0)
		return step_failed(s, "version", &e);
	char ver[16];
	snprintf(ver, sizeof ver, "PVE %d", s->major);
	said(s, "version", ver);
	if (s->dry_run) {
		char *lines = pveprivs_pveum_lines(s->major, s->migrate);
		if (!lines)
			return cli_error("internal", "setup", "out of memory");
		fputs(lines, stdout);
		free(lines);
		return 0;
	}
	rc = ensure_role(s);
	if (!rc)
		rc = ensure_user(s);
	if (!rc)
		rc = ensure_token(s);
	if (!rc)
		rc = ensure_acl(s);
	if (!rc)
		rc = write_files(s);
	return rc;
}

static int cmd_setup(struct cli *cli, const struct cmd_args *a)
{
	struct setup s = {.cli = cli, .url = a->argv[0], .user = "root@pam"};
	for (size_t i = 0; i < a->n; i++) {
		switch (a->v[i].opt) {
		case 'u': s.user = a->v[i].val; break;
		case 'p': s.password_file = a->v[i].val; break;
		case 'f': s.fingerprint_arg = a->v[i].val; break;
		case 'm': s.migrate = true; break;
		case 'F': s.force = true; break;
		case 'd': s.dry_run = true; break;
		}
	}
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
	{"force", no_argument, NULL, 'F'},          {"dry-run", no_argument, NULL, 'd'},
	{0},
};

const struct cmd_entry cmd_setup_entry = {
	"setup",
	"URL [--user U] [--password-file F] [--fingerprint FP] [--migrate] [--force] [--dry-run]",
	"connect to a PVE host: role, user, API token and ACLs, then the configuration",
	"u:p:f:", setup_opts, NULL, 1, 1, "URL", cmd_setup,
	"pvagent setup https://pve1.example.com:8006\n"
	"pvagent -c ~/.config/pvagent.conf setup pve1 --password-file ~/.pvepw "
	"--fingerprint 5F:2B:...:E5\n"
	"pvagent setup pve1 --migrate --dry-run",
};
