/* pve.c - the PVE REST API client (see pve.h): libcurl handle and TLS setup
 * (OpenSSL verify callback for SHA-256 certificate pinning), token and
 * ticket authentication, form encoding, response decoding, error
 * classification, the retry loop and user-facing error formatting. */
#include "pve.h"

#include "json.h"
#include "log.h"
#include "util.h"

#include <stdarg.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_BODY (64L * 1024 * 1024)
#define DEF_CONNECT_TIMEOUT_MS 10000L
#define DEF_TIMEOUT_MS 30000L
#define DEF_ATTEMPTS 4
#define DEF_RETRY_BASE_MS 500L
#define DEF_RETRY_MAX_MS 5000L
#define DEF_RENEW_S 3600.0

static bool has_ci(const char *s, const char *needle)
{
	return s && strcasestr(s, needle) != NULL;
}

enum pve_err_kind pve_classify(int st, const char *msg, bool has_param_errors)
{
	if (st >= 200 && st < 300)
		return PVE_OK;
	if (st == 401)
		return PVE_ERR_AUTH;
	if (st == 403)
		return PVE_ERR_PERM;
	if (st == 501)
		return PVE_ERR_NOT_IMPLEMENTED;
	if (st == 502 || st == 503 || st == 504 || st == 596)
		return PVE_ERR_TRANSIENT;
	if (has_ci(msg, "got no worker upid") || has_ci(msg, "got timeout"))
		return PVE_ERR_TRANSIENT;
	if (st == 400 && has_param_errors)
		return PVE_ERR_PARAM;
	if (has_ci(msg, "already exists"))
		return PVE_ERR_EXISTS;
	if (has_ci(msg, "is locked"))
		return PVE_ERR_LOCKED;
	if (has_ci(msg, "detected modified configuration"))
		return PVE_ERR_CONFLICT;
	if (st == 404 || has_ci(msg, "does not exist") || has_ci(msg, "no such ") ||
	    has_ci(msg, "unable to find configuration file"))
		return PVE_ERR_NOT_FOUND;
	if (st >= 400 && st < 500)
		return PVE_ERR_BAD_REQUEST;
	return PVE_ERR_API;
}

static char *trimmed_dup(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return strndup(s, n);
}

int pve_decode_response(int status, const char *reason, const char *body, size_t len,
			json_object **data, struct pve_error *err)
{
	json_object *root = NULL;
	if (data)
		*data = NULL;
	if (body && len) {
		json_tokener *tok = json_tokener_new();
		if (!tok) {
			pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
			return -1;
		}
		root = json_tokener_parse_ex(tok, body, (int)(len > INT32_MAX ? INT32_MAX : len));
		if (json_tokener_get_error(tok) != json_tokener_success) {
			if (root)
				json_object_put(root);
			root = NULL;
		}
		json_tokener_free(tok);
	}
	if (status >= 200 && status < 300) {
		json_object *d = NULL;
		if (!root || !json_object_is_type(root, json_type_object) ||
		    !json_object_object_get_ex(root, "data", &d)) {
			pve_error_set(err, PVE_ERR_PROTOCOL,
				      "answer is not a PVE JSON object with \"data\" (HTTP %d)",
				      status);
			if (err)
				err->http_status = status;
			if (root)
				json_object_put(root);
			return -1;
		}
		if (data)
			*data = d ? json_object_get(d) : NULL;
		json_object_put(root);
		return 0;
	}

	json_object *m = NULL, *errs = NULL;
	const char *msg = NULL;
	if (root && json_object_is_type(root, json_type_object)) {
		if (json_object_object_get_ex(root, "message", &m) &&
		    json_object_is_type(m, json_type_string) && *json_object_get_string(m))
			msg = json_object_get_string(m);
		if (json_object_object_get_ex(root, "errors", &errs) &&
		    (!json_object_is_type(errs, json_type_object) ||
		     json_object_object_length(errs) == 0))
			errs = NULL;
	}
	if (!msg && reason && *reason)
		msg = reason;
	char *m2 = msg ? trimmed_dup(msg) : strprintf("HTTP %d", status);
	enum pve_err_kind k = pve_classify(status, m2, errs != NULL);
	pve_error_set(err, k, "%s", m2 ? m2 : "error");
	free(m2);
	if (err) {
		err->http_status = status;
		if (errs)
			err->param_errors = json_object_get(errs);
	}
	if (root)
		json_object_put(root);
	return -1;
}

/* ---- parameters ----------------------------------------------------------- */

int pve_params_add(struct pve_params *p, const char *key, const char *value)
{
	if (!key || !value) {
		p->failed = true;
		errno = EINVAL;
		return -1;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 8;
		struct pve_param *v = realloc(p->v, cap * sizeof *v);
		if (!v) {
			p->failed = true;
			return -1;
		}
		p->v = v;
		p->cap = cap;
	}
	char *k = strdup(key), *val = strdup(value);
	if (!k || !val) {
		free(k);
		free(val);
		p->failed = true;
		return -1;
	}
	p->v[p->n].key = k;
	p->v[p->n].value = val;
	p->n++;
	return 0;
}

int pve_params_addf(struct pve_params *p, const char *key, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0)
		rc = pve_params_add(p, key, sbuf_str(&b));
	else
		p->failed = true;
	sbuf_free(&b);
	return rc;
}

int pve_params_add_int(struct pve_params *p, const char *key, long long v)
{
	return pve_params_addf(p, key, "%lld", v);
}

int pve_params_add_bool(struct pve_params *p, const char *key, bool v)
{
	return pve_params_add(p, key, v ? "1" : "0");
}

int pve_params_add_sshkeys(struct pve_params *p, const char *key, const char *keys)
{
	char *enc = keys ? pve_percent_encode(keys) : NULL;
	if (!enc) {
		p->failed = true;
		return -1;
	}
	int rc = pve_params_add(p, key, enc);
	free(enc);
	return rc;
}

const char *pve_params_get(const struct pve_params *p, const char *key)
{
	const char *v = NULL;
	for (size_t i = 0; p && i < p->n; i++)
		if (strcmp(p->v[i].key, key) == 0)
			v = p->v[i].value;
	return v;
}

void pve_params_free(struct pve_params *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].key);
		free(p->v[i].value);
	}
	free(p->v);
	memset(p, 0, sizeof *p);
}

static const char hexdig[] = "0123456789ABCDEF";

static int pct_append(struct sbuf *b, const char *s, const char *keep)
{
	for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
		int ok = isalnum(*q) || *q == '-' || *q == '.' || *q == '_' || *q == '~' ||
			 (keep && strchr(keep, *q));
		if (*q >= 0x80)
			ok = 0;
		char e[3] = {'%', hexdig[*q >> 4], hexdig[*q & 15]};
		if (ok ? sbuf_addc(b, (char)*q) : sbuf_addn(b, e, 3))
			return -1;
	}
	return 0;
}

char *pve_percent_encode(const char *s)
{
	struct sbuf b = {0};
	if (pct_append(&b, s, NULL) < 0) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

char *pve_path_escape(const char *segment)
{
	struct sbuf b = {0};
	if (pct_append(&b, segment, "!$&'()*+,;=:@") < 0) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

char *pve_form_encode(const struct pve_params *p)
{
	struct sbuf b = {0};
	for (size_t i = 0; p && i < p->n; i++) {
		if ((i && sbuf_addc(&b, '&')) || pct_append(&b, p->v[i].key, NULL) ||
		    sbuf_addc(&b, '=') || pct_append(&b, p->v[i].value, NULL)) {
			sbuf_free(&b);
			return NULL;
		}
	}
	return sbuf_steal(&b);
}

/* ---- client ---------------------------------------------------------------- */

struct pve {
	CURL *curl;
	char *base;            /* https://host:port */
	char *token_id, *token_secret;
	char *user, *password;
	char *ca_file;
	char *ticket, *csrf;
	bool need_tfa;         /* the last login answered NeedTFA */
	char *reason;          /* reason phrase of the last answer */
	struct sbuf body;      /* body of the last answer */
	struct pve_clock clock;
	long connect_timeout_ms, timeout_ms;
	long retry_base_ms, retry_max_ms;
	double renew_s;
	double ticket_time;
	unsigned long nreq;
	uint64_t rng;
	int max_attempts;
	bool unreachable_once, answered; /* pve_opts; PVE answered once */
	int status;
	bool use_token;
	bool have_pin;
	bool insecure;
	bool pin_mismatch;     /* set by the verify callback */
	bool body_too_big;
	/* versions asked so far (pve_version, pve_node_version) */
	struct pve_version *cluster_version;
	struct node_version {
		char *node;
		struct pve_version v;
		struct node_version *next;
	} *node_versions;      /* a list: each handed out borrowed, never moved */
	/* the guests this client made (pve_made_remember) */
	struct made_ent {
		char *node, *kind, *name;
		int vmid;
	} made[PVE_MADE_MAX];
	size_t made_next;
	unsigned char pin[32];
	char server_fp[32 * 3];
	char errbuf[CURL_ERROR_SIZE];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init_once(void)
{
	/* CURLOPT_NOSIGNAL (needed with threads) also stops libcurl from
	 * ignoring SIGPIPE, which OpenSSL's writes to a connection the peer
	 * closed would raise: ignore it for the process, unless the program
	 * installed its own handler. */
	struct sigaction sa;
	if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
		signal(SIGPIPE, SIG_IGN);
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

void pve_global_cleanup(void)
{
	if (curl_init_rc == CURLE_OK)
		curl_global_cleanup();
}

const char *pve_url(const struct pve *c)
{
	return c->base;
}

bool pve_login_needs_tfa(const struct pve *c)
{
	return c->need_tfa;
}

const char *pve_identity(const struct pve *c)
{
	return c->use_token ? c->token_id : c->user;
}

double pve_request_timeout_s(const struct pve *c)
{
	return (double)c->timeout_ms / 1000.0;
}

unsigned long pve_request_count(const struct pve *c)
{
	return c->nreq;
}

static struct pve_stats stats; /* updated atomically */

static void count_request(const char *method)
{
	unsigned long *n = strcmp(method, "GET") == 0 ? &stats.get
			 : strcmp(method, "POST") == 0 ? &stats.post
			 : strcmp(method, "PUT") == 0 ? &stats.put
			 : strcmp(method, "DELETE") == 0 ? &stats.del : &stats.other;
	__atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
}

void pve_stats_get(struct pve_stats *out)
{
	unsigned long *src = (unsigned long *)&stats, *dst = (unsigned long *)out;
	for (size_t i = 0; i < sizeof stats / sizeof(unsigned long); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

int pve_parse_fingerprint(const char *s, unsigned char out[32])
{
	size_t n = 0;
	if (!s)
		return -1;
	/* "sha256 Fingerprint=AA:..." (openssl x509 -fingerprint -sha256),
	 * "SHA256:AA:..." */
	while (*s == ' ')
		s++;
	if (strncasecmp(s, "sha256 fingerprint=", 19) == 0)
		s += 19;
	else if (strncasecmp(s, "sha256:", 7) == 0)
		s += 7;
	while (*s) {
		if (*s == ':') {
			s++;
			continue;
		}
		if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]) || n >= 32)
			return -1;
		char h[3] = {s[0], s[1], 0};
		out[n++] = (unsigned char)strtoul(h, NULL, 16);
		s += 2;
	}
	return n == 32 ? 0 : -1;
}

long pve_backoff_ms(int attempt, long base_ms, long max_ms, double r)
{
	double d = (double)base_ms;
	for (int i = 1; i < attempt && d < (double)max_ms; i++)
		d *= 2;
	if (d > (double)max_ms)
		d = (double)max_ms;
	if (r < 0)
		r = 0;
	if (r >= 1)
		r = 0.999999;
	return (long)(d / 2 + r * d / 2);
}

static double rng_next(struct pve *c)
{
	uint64_t x = c->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	c->rng = x;
	return (double)((x * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static void secret_free(char **s)
{
	if (*s) {
		log_secret_remove(*s);
		explicit_bzero(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

static void drop_ticket(struct pve *c)
{
	secret_free(&c->ticket);
	secret_free(&c->csrf);
}

static void version_free(struct pve_version *v)
{
	if (!v)
		return;
	free(v->version);
	free(v->release);
	v->version = v->release = NULL;
}

/* ---- the guests this client made ------------------------------------------------- */

static void made_clear(struct made_ent *e)
{
	free(e->node);
	free(e->kind);
	free(e->name);
	memset(e, 0, sizeof *e);
}

static bool made_is(const struct made_ent *e, const char *node, const char *kind, int vmid)
{
	return e->node && e->vmid == vmid && node && kind && strcmp(e->node, node) == 0 &&
	       strcmp(e->kind, kind) == 0;
}

void pve_made_forget(struct pve *c, const char *node, const char *kind, int vmid)
{
	for (size_t i = 0; i < PVE_MADE_MAX; i++)
		if (made_is(&c->made[i], node, kind, vmid))
			made_clear(&c->made[i]);
}

void pve_made_remember(struct pve *c, const char *node, const char *kind, int vmid,
		       const char *name)
{
	if (!node || !kind || !name)
		return;
	pve_made_forget(c, node, kind, vmid);
	struct made_ent e = {strdup(node), strdup(kind), strdup(name), vmid};
	if (!e.node || !e.kind || !e.name) {
		made_clear(&e);
		return;
	}
	made_clear(&c->made[c->made_next]);
	c->made[c->made_next] = e;
	c->made_next = (c->made_next + 1) % PVE_MADE_MAX;
}

const char *pve_made_name(const struct pve *c, const char *node, const char *kind, int vmid)
{
	for (size_t i = 0; i < PVE_MADE_MAX; i++)
		if (made_is(&c->made[i], node, kind, vmid))
			return c->made[i].name;
	return NULL;
}

void pve_free(struct pve *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	drop_ticket(c);
	secret_free(&c->token_secret);
	secret_free(&c->password);
	free(c->token_id);
	free(c->user);
	free(c->base);
	free(c->ca_file);
	free(c->reason);
	sbuf_free(&c->body);
	version_free(c->cluster_version);
	free(c->cluster_version);
	for (struct node_version *e = c->node_versions, *next; e; e = next) {
		next = e->next;
		free(e->node);
		version_free(&e->v);
		free(e);
	}
	for (size_t i = 0; i < PVE_MADE_MAX; i++)
		made_clear(&c->made[i]);
	free(c);
}

/* Read a one-line secret file: a private regular file, not a link, owned
 * by the user or root (read_small_file RF_PRIVATE). */
#define PVE_SECRET_MAX 65536

static int read_secret(const char *path, const char *what, char **out, struct pve_error *err)
{
	char *s = NULL, *why = NULL;
	size_t len = 0;
	if (read_small_file(path, PVE_SECRET_MAX, RF_PRIVATE | RF_NOFOLLOW, &s, &len, &why) < 0) {
		pve_error_set(err, PVE_ERR_CONFIG, "%s %s: %s", what, path,
			      why ? why : "out of memory");
		free(why);
		return -1;
	}
	size_t all = len;
	while (len && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' '))
		s[--len] = '\0';
	if (!len || strlen(s) != len || strchr(s, '\n')) {
		explicit_bzero(s, all);
		free(s);
		pve_error_set(err, PVE_ERR_CONFIG, "%s %s must hold one non-empty line", what,
			      path);
		return -1;
	}
	*out = s;
	return 0;
}

static char *normalize_url(const char *url, struct pve_error *err)
{
	struct sbuf b = {0};
	if (!url || !*url) {
		pve_error_set(err, PVE_ERR_CONFIG, "no PVE url configured");
		return NULL;
	}
	char *shown = url_shown(url);
	if (!shown) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	if (strcmp(shown, url) != 0) {
		/* never echoed: the userinfo may be a password */
		pve_error_set(err, PVE_ERR_CONFIG,
			      "url %s: a user or password in the URL is not used; give token_id "
			      "and token_secret_file (or user and password_file)", shown);
		free(shown);
		return NULL;
	}
	free(shown);
	const char *sep = strstr(url, "://");
	int rc = 0;
	if (!sep) {
		const char *hostend = url;
		if (*url == '[') {
			hostend = strchr(url, ']');
			if (!hostend)
				hostend = url;
		}
		const char *slash = strchr(hostend, '/');
		const char *colon = strchr(hostend, ':');
		bool port = colon && (!slash || colon < slash);
		rc |= sbuf_add(&b, "https://");
		if (port) {
			rc |= sbuf_add(&b, url);
		} else {
			rc |= sbuf_addn(&b, url, slash ? (size_t)(slash - url) : strlen(url));
			rc |= sbuf_add(&b, ":8006");
			if (slash)
				rc |= sbuf_add(&b, slash);
		}
	} else if (strncasecmp(url, "https://", 8) == 0) {
		rc |= sbuf_add(&b, url);
	} else {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "url %s: only https:// is supported (credentials are sent)", url);
		return NULL;
	}
	if (rc) {
		sbuf_free(&b);
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	while (b.len > 8 && b.s[b.len - 1] == '/')
		b.s[--b.len] = '\0';
	if (b.len > 18 && strcmp(b.s + b.len - 10, "/api2/json") == 0) {
		b.len -= 10;
		b.s[b.len] = '\0';
	}
	while (b.len > 8 && b.s[b.len - 1] == '/')
		b.s[--b.len] = '\0';
	return sbuf_steal(&b);
}

/* OpenSSL: replaces chain verification by the pin. Runs during the
 * handshake, so a mismatch aborts before any request byte is sent. */
static int pin_verify_cb(X509_STORE_CTX *x, void *arg)
{
	struct pve *c = arg;
	X509 *cert = X509_STORE_CTX_get0_cert(x);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (!cert || !X509_digest(cert, EVP_sha256(), md, &n) || n != 32) {
		c->pin_mismatch = true;
		snprintf(c->server_fp, sizeof c->server_fp, "(none)");
		X509_STORE_CTX_set_error(x, X509_V_ERR_UNSPECIFIED);
		return 0;
	}
	for (size_t i = 0; i < 32; i++) {
		c->server_fp[i * 3] = hexdig[md[i] >> 4];
		c->server_fp[i * 3 + 1] = hexdig[md[i] & 15];
		c->server_fp[i * 3 + 2] = i == 31 ? '\0' : ':';
	}
	if (CRYPTO_memcmp(md, c->pin, 32) != 0) {
		c->pin_mismatch = true;
		X509_STORE_CTX_set_error(x, X509_V_ERR_CERT_REJECTED);
		return 0;
	}
	return 1;
}

static CURLcode ssl_ctx_cb(CURL *curl, void *sslctx, void *arg)
{
	(void)curl;
	SSL_CTX *ctx = sslctx;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_cert_verify_callback(ctx, pin_verify_cb, arg);
	return CURLE_OK;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct pve *c = arg;
	size_t n = size * nmemb;
	if (c->body.len + n > (size_t)MAX_BODY) {
		c->body_too_big = true;
		return 0;
	}
	if (sbuf_addn(&c->body, ptr, n) < 0)
		return 0;
	return n;
}

static size_t header_cb(char *buf, size_t size, size_t nitems, void *arg)
{
	struct pve *c = arg;
	size_t n = size * nitems;
	if (n > 5 && strncmp(buf, "HTTP/", 5) == 0) {
		/* "HTTP/1.1 500 VM 100 already exists\r\n" */
		const char *sp = memchr(buf, ' ', n);
		free(c->reason);
		c->reason = NULL;
		if (sp) {
			const char *end = buf + n;
			const char *r = sp + 1;
			while (r < end && isdigit((unsigned char)*r))
				r++;
			while (r < end && *r == ' ')
				r++;
			const char *e = end;
			while (e > r && (e[-1] == '\r' || e[-1] == '\n'))
				e--;
			c->reason = strndup(r, (size_t)(e - r));
			if (!c->reason)
				return 0;
		}
	}
	return n;
}

#define SETOPT(c, opt, val)                                                   \
	do {                                                                  \
		if (curl_easy_setopt((c)->curl, opt, val) != CURLE_OK)       \
			goto setopt_fail;                                     \
	} while (0)

static int setup_curl(struct pve *c, struct pve_error *err)
{
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK) {
		pve_error_set(err, PVE_ERR_INTERNAL, "libcurl initialisation failed");
		return -1;
	}
	c->curl = curl_easy_init();
	if (!c->curl) {
		pve_error_set(err, PVE_ERR_INTERNAL, "libcurl handle creation failed");
		return -1;
	}
	SETOPT(c, CURLOPT_NOSIGNAL, 1L);
	SETOPT(c, CURLOPT_ERRORBUFFER, c->errbuf);
	SETOPT(c, CURLOPT_WRITEFUNCTION, write_cb);
	SETOPT(c, CURLOPT_WRITEDATA, c);
	SETOPT(c, CURLOPT_HEADERFUNCTION, header_cb);
	SETOPT(c, CURLOPT_HEADERDATA, c);
	SETOPT(c, CURLOPT_PROTOCOLS_STR, "https");
	SETOPT(c, CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(c, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	SETOPT(c, CURLOPT_TCP_KEEPALIVE, 1L);
	SETOPT(c, CURLOPT_USERAGENT, "pvagent/1");
	if (c->have_pin) {
		curl_version_info_data *vi = curl_version_info(CURLVERSION_NOW);
		if (!vi || !vi->ssl_version || strncmp(vi->ssl_version, "OpenSSL", 7) != 0) {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "fingerprint pinning needs libcurl built with OpenSSL "
				      "(this one uses %s); use ca_file instead",
				      vi && vi->ssl_version ? vi->ssl_version : "no TLS");
			return -1;
		}
		SETOPT(c, CURLOPT_SSL_VERIFYPEER, 1L);
		SETOPT(c, CURLOPT_SSL_VERIFYHOST, 0L);
		/* The pin replaces the CA store: do not load it at all. */
		SETOPT(c, CURLOPT_CAINFO, NULL);
		SETOPT(c, CURLOPT_CAPATH, NULL);
		SETOPT(c, CURLOPT_SSL_CTX_FUNCTION, ssl_ctx_cb);
		SETOPT(c, CURLOPT_SSL_CTX_DATA, c);
	} else if (c->insecure) {
		SETOPT(c, CURLOPT_SSL_VERIFYPEER, 0L);
		SETOPT(c, CURLOPT_SSL_VERIFYHOST, 0L);
	} else {
		SETOPT(c, CURLOPT_SSL_VERIFYPEER, 1L);
		SETOPT(c, CURLOPT_SSL_VERIFYHOST, 2L);
		if (c->ca_file)
			SETOPT(c, CURLOPT_CAINFO, c->ca_file);
	}
	return 0;
setopt_fail:
	pve_error_set(err, PVE_ERR_INTERNAL, "libcurl option setup failed");
	return -1;
}

static int dup_opt(char **dst, const char *src, struct pve_error *err)
{
	if (!src || !*src)
		return 0;
	*dst = strdup(src);
	if (!*dst) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	return 0;
}

static int take_secret(struct pve *c, char **dst, const char *val, const char *file,
		       const char *what, struct pve_error *err)
{
	(void)c;
	if (val && *val) {
		if (dup_opt(dst, val, err) < 0)
			return -1;
	} else if (file && *file) {
		if (read_secret(file, what, dst, err) < 0)
			return -1;
	}
	if (*dst && log_secret_add(*dst) < 0) {
		explicit_bzero(*dst, strlen(*dst));
		free(*dst);
		*dst = NULL;
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	return 0;
}

struct pve *pve_new(const struct pve_opts *o, struct pve_error *err)
{
	struct pve *c = calloc(1, sizeof *c);
	if (!c) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	if (o->clock)
		c->clock = *o->clock;
	c->base = normalize_url(o->url, err);
	if (!c->base)
		goto fail;
	bool token = (o->token_id && *o->token_id);
	bool user = (o->user && *o->user);
	if (token) {
		if (dup_opt(&c->token_id, o->token_id, err) < 0 ||
		    take_secret(c, &c->token_secret, o->token_secret, o->token_secret_file,
				"token_secret_file", err) < 0)
			goto fail;
		if (!c->token_secret) {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "token_id %s is set but no token secret (token_secret_file)",
				      c->token_id);
			goto fail;
		}
		if (!strchr(c->token_id, '!') || !strchr(c->token_id, '@')) {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "token_id %s is not of the form user@realm!name", c->token_id);
			goto fail;
		}
		c->use_token = true;
	} else if (user) {
		if (dup_opt(&c->user, o->user, err) < 0 ||
		    take_secret(c, &c->password, o->password, o->password_file, "password_file",
				err) < 0)
			goto fail;
		if (!c->password) {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "user %s is set but no password (password_file)", c->user);
			goto fail;
		}
	} else {
		pve_error_set(err, PVE_ERR_CONFIG,
			      "no PVE credentials: set token_id and token_secret_file, "
			      "or user and password_file");
		goto fail;
	}
	if (o->fingerprint && *o->fingerprint) {
		if (o->insecure) {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "fingerprint and insecure exclude each other");
			goto fail;
		}
		if (pve_parse_fingerprint(o->fingerprint, c->pin) < 0) {
			pve_error_set(err, PVE_ERR_CONFIG,
				      "fingerprint '%s' is not a SHA-256 fingerprint "
				      "(32 hex bytes, e.g. AA:BB:...)",
				      o->fingerprint);
			goto fail;
		}
		c->have_pin = true;
	}
	if (dup_opt(&c->ca_file, o->ca_file, err) < 0)
		goto fail;
	if (c->ca_file && access(c->ca_file, R_OK) < 0) {
		pve_error_set(err, PVE_ERR_CONFIG, "ca_file %s: %s", c->ca_file, strerror(errno));
		goto fail;
	}
	c->insecure = o->insecure && !c->have_pin;
	c->connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms
							  : DEF_CONNECT_TIMEOUT_MS;
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEF_TIMEOUT_MS;
	c->max_attempts = o->max_attempts > 0 ? o->max_attempts : DEF_ATTEMPTS;
	c->unreachable_once = o->unreachable_once;
	c->retry_base_ms = o->retry_base_ms > 0 ? o->retry_base_ms : DEF_RETRY_BASE_MS;
	c->retry_max_ms = o->retry_max_ms > 0 ? o->retry_max_ms : DEF_RETRY_MAX_MS;
	if (c->retry_max_ms < c->retry_base_ms)
		c->retry_max_ms = c->retry_base_ms;
	c->renew_s = o->ticket_renew_s > 0 ? o->ticket_renew_s : DEF_RENEW_S;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	c->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
		 ((uint64_t)(uintptr_t)c << 7) ^ (uint64_t)getpid();
	if (!c->rng)
		c->rng = 0x9E3779B97F4A7C15ULL;
	if (setup_curl(c, err) < 0)
		goto fail;
	if (c->insecure)
		log_warn("TLS certificate verification of %s is DISABLED (insecure = yes); "
			 "set fingerprint or ca_file instead",
			 c->base);
	return c;
fail:
	pve_free(c);
	return NULL;
}

/* ---- one HTTP exchange ------------------------------------------------------ */

static bool is_get(const char *method)
{
	return strcmp(method, "GET") == 0;
}

/* Was a request that failed at the transport level possibly received? */
static bool curl_maybe_sent(CURLcode rc)
{
	switch (rc) {
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	default:
		return false;
	}
}

static void classify_curl(struct pve *c, CURLcode rc, bool connected, struct pve_error *err)
{
	const char *detail = c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc);
	if (c->pin_mismatch) {
		pve_error_set(err, PVE_ERR_PIN,
			      "certificate of %s does not match the configured fingerprint: "
			      "server has SHA-256 %s; nothing was sent",
			      c->base, c->server_fp);
		return;
	}
	switch (rc) {
	case CURLE_OUT_OF_MEMORY:
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return;
	case CURLE_SSL_CACERT_BADFILE:
		pve_error_set(err, PVE_ERR_CONFIG, "cannot load CA certificates (ca_file %s): %s",
			      c->ca_file ? c->ca_file : "system store", detail);
		return;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
		pve_error_set(err, PVE_ERR_TLS,
			      "TLS certificate of %s not trusted: %s; set ca_file to the "
			      "cluster CA (/etc/pve/pve-root-ca.pem) or fingerprint to the "
			      "node certificate's SHA-256 fingerprint",
			      c->base, detail);
		return;
	case CURLE_SSL_CONNECT_ERROR:
		if (strstr(detail, "SYSCALL") || strstr(detail, "reset") ||
		    strstr(detail, "EOF")) {
			pve_error_set(err, PVE_ERR_CONNECT, "cannot reach %s: %s", c->base, detail);
		} else {
			pve_error_set(err, PVE_ERR_TLS, "TLS handshake with %s failed: %s", c->base,
				      detail);
		}
		return;
	case CURLE_WRITE_ERROR:
		if (c->body_too_big) {
			pve_error_set(err, PVE_ERR_PROTOCOL, "answer larger than %ld bytes",
				      MAX_BODY);
			return;
		}
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory reading the answer");
		return;
	case CURLE_OPERATION_TIMEDOUT:
		if (!connected) {
			pve_error_set(err, PVE_ERR_CONNECT, "cannot reach %s: %s", c->base, detail);
			return;
		}
		pve_error_set(err, PVE_ERR_TIMEOUT, "no answer from %s in time: %s", c->base,
			      detail);
		return;
	default:
		pve_error_set(err, PVE_ERR_CONNECT, "cannot reach %s: %s", c->base, detail);
		return;
	}
}

struct attempt {
	bool maybe_applied; /* a non-GET may have taken effect */
	bool connected;     /* the request went out on a connection made */
};

/* Send one request and decode the answer. authed: add credentials. */
static int http_once(struct pve *c, const char *method, const char *path, const char *form,
		     bool authed, long timeout_ms, json_object **data, struct attempt *at,
		     struct pve_error *err)
{
	struct curl_slist *hdrs = NULL, *h;
	char *url = NULL, *auth = NULL;
	int ret = -1;
	bool body = strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0;
	at->maybe_applied = false;
	at->connected = false;

	if (!body && form && *form)
		url = strprintf("%s/api2/json%s?%s", c->base, path, form);
	else
		url = strprintf("%s/api2/json%s", c->base, path);
	if (!url)
		goto nomem;
#define ADDH(s)                                  \
	do {                                     \
		h = curl_slist_append(hdrs, (s)); \
		if (!h)                          \
			goto nomem;              \
		hdrs = h;                        \
	} while (0)
	ADDH("Accept: application/json");
	ADDH("Expect:");
	if (authed) {
		if (c->use_token)
			auth = strprintf("Authorization: PVEAPIToken=%s=%s", c->token_id,
					 c->token_secret);
		else
			auth = strprintf("Cookie: PVEAuthCookie=%s", c->ticket ? c->ticket : "");
		if (!auth)
			goto nomem;
		ADDH(auth);
		if (!c->use_token && !is_get(method)) {
			explicit_bzero(auth, strlen(auth));
			free(auth);
			auth = strprintf("CSRFPreventionToken: %s", c->csrf ? c->csrf : "");
			if (!auth)
				goto nomem;
			ADDH(auth);
		}
	}
#undef ADDH

	c->errbuf[0] = '\0';
	c->pin_mismatch = false;
	c->status = 0;
	free(c->reason);
	c->reason = NULL;
	sbuf_reset(&c->body);
	c->body_too_big = false;
	CURLcode rc = CURLE_OK;
#define SO(opt, val)                                                  \
	do {                                                          \
		if (rc == CURLE_OK)                                   \
			rc = curl_easy_setopt(c->curl, opt, val);     \
	} while (0)
	SO(CURLOPT_URL, url);
	SO(CURLOPT_HTTPHEADER, hdrs);
	SO(CURLOPT_TIMEOUT_MS, timeout_ms);
	/* libcurl silently resends a request once when a reused connection
	 * dies before any answer byte; for a POST that may already have
	 * started a task, that would be a hidden duplicate. Non-GET requests
	 * therefore go out on a fresh connection (later GETs reuse it). */
	SO(CURLOPT_FRESH_CONNECT, is_get(method) ? 0L : 1L);
	if (body) {
		SO(CURLOPT_POST, 1L);
		SO(CURLOPT_POSTFIELDS, form ? form : "");
		SO(CURLOPT_POSTFIELDSIZE, (long)strlen(form ? form : ""));
		SO(CURLOPT_CUSTOMREQUEST, strcmp(method, "PUT") == 0 ? "PUT" : NULL);
	} else {
		SO(CURLOPT_HTTPGET, 1L);
		SO(CURLOPT_CUSTOMREQUEST, is_get(method) ? NULL : method);
	}
#undef SO
	if (rc != CURLE_OK) {
		pve_error_set(err, PVE_ERR_INTERNAL, "libcurl request setup failed: %s",
			      curl_easy_strerror(rc));
		goto out;
	}

	if (log_enabled(LOGL_DEBUG))
		log_debug("-> %s %s%s%s", method, path, form && *form ? " " : "",
			  form ? form : "");
	double t0 = pve_clock_now(NULL);
	c->nreq++;
	count_request(method);
	rc = curl_easy_perform(c->curl);
	double ms = (pve_clock_now(NULL) - t0) * 1000.0;
	/* The header list and URL must not outlive this call in the handle. */
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
	if (rc != CURLE_OK) {
		double pre = 0;
		if (curl_easy_getinfo(c->curl, CURLINFO_PRETRANSFER_TIME, &pre) != CURLE_OK)
			pre = 0;
		bool connected = pre > 0;
		at->connected = connected;
		classify_curl(c, rc, connected, err);
		at->maybe_applied = !is_get(method) && connected && curl_maybe_sent(rc);
		log_debug("<- %s %s: %s (%.0f ms)", method, path, err->message ? err->message : "",
			  ms);
		goto out;
	}
	long st = 0;
	if (curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &st) != CURLE_OK)
		st = 0;
	c->status = (int)st;
	at->connected = true;
	log_debug("<- %ld %s %s%s%s (%.0f ms)", st, method, path, c->reason ? " " : "",
		  c->reason ? c->reason : "", ms);
	if (log_enabled(LOGL_TRACE))
		log_trace("<- body: %s", sbuf_str(&c->body));
	ret = pve_decode_response((int)st, c->reason, sbuf_str(&c->body), c->body.len, data, err);
	/* A proxy error may come after pvedaemon received the request. */
	if (ret < 0 && !is_get(method) && (st == 502 || st == 503 || st == 504 || st == 596))
		at->maybe_applied = true;
	goto out;
nomem:
	pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
out:
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	curl_slist_free_all(hdrs);
	free(url);
	return ret;
}

/* ---- authentication and the retry loop --------------------------------------- */

static int call(struct pve *c, const char *method, const char *path, const char *form,
		bool authed, const struct pve_call_opts *co, json_object **data,
		struct pve_error *err);

static int do_login(struct pve *c, struct pve_error *err)
{
	struct pve_params p = {0};
	pve_params_add(&p, "username", c->user);
	pve_params_add(&p, "password", c->password);
	char *form = p.failed ? NULL : pve_form_encode(&p);
	for (size_t i = 0; i < p.n; i++)
		explicit_bzero(p.v[i].value, strlen(p.v[i].value));
	pve_params_free(&p);
	if (!form) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	json_object *data = NULL;
	int rc = call(c, "POST", "/access/ticket", form, false, NULL, &data, err);
	explicit_bzero(form, strlen(form));
	free(form);
	if (rc < 0) {
		if (err->kind == PVE_ERR_AUTH)
			pve_error_set(err, PVE_ERR_AUTH,
				      "the password of user %s was refused by %s (HTTP 401); check "
				      "user and password_file",
				      c->user, c->base);
		return -1;
	}
	json_object *t = NULL, *x = NULL, *tfa = NULL;
	/* a user with TFA gets a half-authenticated ticket that no request
	 * takes (pve-access-control create_ticket_do) */
	c->need_tfa = data && json_object_object_get_ex(data, "NeedTFA", &tfa) &&
		      json_object_get_int(tfa) != 0;
	if (c->need_tfa) {
		json_object_put(data);
		pve_error_set(err, PVE_ERR_AUTH,
			      "user %s has two-factor authentication: %s asks for a second "
			      "factor, which pvagent cannot give",
			      c->user, c->base);
		return -1;
	}
	if (!data || !json_object_object_get_ex(data, "ticket", &t) ||
	    !json_object_is_type(t, json_type_string) ||
	    !json_object_object_get_ex(data, "CSRFPreventionToken", &x) ||
	    !json_object_is_type(x, json_type_string)) {
		if (data)
			json_object_put(data);
		pve_error_set(err, PVE_ERR_PROTOCOL,
			      "POST /access/ticket: answer without ticket and CSRF token");
		return -1;
	}
	drop_ticket(c);
	c->ticket = strdup(json_object_get_string(t));
	c->csrf = strdup(json_object_get_string(x));
	json_object_put(data);
	if (!c->ticket || !c->csrf || log_secret_add(c->ticket) < 0) {
		free(c->ticket);
		free(c->csrf);
		c->ticket = c->csrf = NULL;
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	if (log_secret_add(c->csrf) < 0) {
		free(c->csrf);
		c->csrf = NULL;
		drop_ticket(c);
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		return -1;
	}
	c->ticket_time = pve_clock_now(&c->clock);
	log_debug("logged in to %s as %s", c->base, c->user);
	return 0;
}

static int ensure_auth(struct pve *c, struct pve_error *err)
{
	if (c->use_token)
		return 0;
	if (c->ticket && pve_clock_now(&c->clock) - c->ticket_time < c->renew_s)
		return 0;
	if (c->ticket)
		log_debug("renewing the PVE ticket of %s", c->user);
	return do_login(c, err);
}

static int call(struct pve *c, const char *method, const char *path, const char *form,
		bool authed, const struct pve_call_opts *co, json_object **data,
		struct pve_error *err)
{
	bool relogged = false, earlier_unknown = false;
	int max = co && co->no_retry ? 1 : c->max_attempts;
	long tmo = co && co->timeout_ms > 0 ? co->timeout_ms : c->timeout_ms;
	int attempt = 0;
	for (;;) {
		struct attempt at;
		attempt++;
		if (authed && ensure_auth(c, err) < 0)
			return -1;
		pve_error_clear(err);
		int rc = http_once(c, method, path, form, authed, tmo, data, &at, err);
		err->attempts = attempt;
		c->answered = c->answered || rc == 0 || err->http_status > 0;
		if (rc == 0)
			return 0;
		if (err->kind == PVE_ERR_CONNECT && c->unreachable_once && !c->answered &&
		    !at.connected)
			return -1; /* never reached: asking again only makes the user wait
				    * (a reset after the connection was made is a
				    * transient answer, asked again as on any later GET) */
		if (err->kind == PVE_ERR_AUTH && authed) {
			if (!c->use_token && !relogged) {
				/* Expired or revoked ticket: renew once, resend. */
				relogged = true;
				attempt--;
				drop_ticket(c);
				log_debug("%s %s: 401, logging in again", method, path);
				continue;
			}
			if (c->use_token)
				pve_error_set(err, PVE_ERR_AUTH,
					      "API token %s was refused by %s (HTTP 401); check "
					      "token_id and token_secret_file",
					      c->token_id, c->base);
			else
				pve_error_set(err, PVE_ERR_AUTH,
					      "a fresh ticket of user %s was refused by %s (HTTP 401)",
					      c->user, c->base);
			err->http_status = 401;
			err->attempts = attempt;
			return -1;
		}
		if (err->kind == PVE_ERR_EXISTS && earlier_unknown) {
			if (co && co->exists_is_ours) {
				bool ours = co->exists_is_ours(c, co->exists_ctx);
				if (ours) {
					log_info("%s %s: an earlier attempt whose answer was lost "
						 "already did it",
						 method, path);
					pve_error_clear(err);
					if (data)
						*data = NULL;
					return 1;
				}
			}
			err->ambiguous = true;
			return -1;
		}
		/* A plain 5xx (no known reason such as "locked" or "already
		 * exists") may also come after the handler did its work; on a
		 * GET, which changes nothing, it is asked again as a 503 is (PVE's
		 * definite answers, not found, permission, parameters, are kinds
		 * of their own and never retried). */
		bool unknown_5xx = err->http_status >= 500 && err->kind == PVE_ERR_API;
		bool retry = pve_err_retryable(err->kind) ||
			     (is_get(method) && (err->kind == PVE_ERR_TIMEOUT || unknown_5xx));
		if (at.maybe_applied)
			earlier_unknown = true;
		if (co && co->stop_if_maybe_applied && !is_get(method) &&
		    (at.maybe_applied || err->kind == PVE_ERR_TRANSIENT || unknown_5xx)) {
			err->ambiguous = true;
			return -1;
		}
		if (!retry || attempt >= max) {
			if (earlier_unknown && !is_get(method))
				err->ambiguous = true;
			return -1;
		}
		long ms = pve_backoff_ms(attempt, c->retry_base_ms, c->retry_max_ms, rng_next(c));
		if ((size_t)err->kind < sizeof stats.retries / sizeof stats.retries[0])
			__atomic_fetch_add(&stats.retries[err->kind], 1, __ATOMIC_RELAXED);
		log_debug("%s %s: %s; retry %d of %d in %ld ms", method, path,
			  err->message ? err->message : pve_err_kind_name(err->kind), attempt,
			  max - 1, ms);
		pve_clock_sleep(&c->clock, (double)ms / 1000.0);
	}
}

int pve_request(struct pve *c, const char *method, const char *path,
		const struct pve_params *params, const struct pve_call_opts *copts,
		json_object **data, struct pve_error *err)
{
	struct pve_error tmp = {0};
	if (!err)
		err = &tmp;
	pve_error_clear(err);
	if (data)
		*data = NULL;
	bool known = method && (strcmp(method, "GET") == 0 || strcmp(method, "POST") == 0 ||
				strcmp(method, "PUT") == 0 || strcmp(method, "DELETE") == 0);
	if (!known || !path || path[0] != '/') {
		pve_error_set(err, PVE_ERR_INTERNAL, "bad request %s %s", method ? method : "?",
			      path ? path : "?");
		goto fail;
	}
	if (params && params->failed) {
		pve_error_set(err, PVE_ERR_INTERNAL, "%s %s: parameters incomplete (out of memory)",
			      method, path);
		goto fail;
	}
	char *form = pve_form_encode(params);
	if (!form) {
		pve_error_set(err, PVE_ERR_INTERNAL, "out of memory");
		goto fail;
	}
	int rc = call(c, method, path, form, true, copts, data, err);
	free(form);
	if (rc >= 0)
		return rc;
	if (!err->what)
		err->what = strprintf("%s %s", method, path);
fail:
	pve_error_clear(&tmp);
	return -1;
}

/* A version answer ({version, release, repoid}) into v; -1 with err
 * (when given) naming what for a bad one. */
static int version_from(json_object *d, struct pve_version *v, const char *what,
			struct pve_error *err)
{
	const char *s = json_str(d, "version"), *rel = json_str(d, "release");
	memset(v, 0, sizeof *v);
	if (pve_version_parse(s, &v->major, &v->minor, &v->patch) < 0 &&
	    pve_version_parse(rel, &v->major, &v->minor, &v->patch) < 0) {
		if (err)
			pve_error_set(err, PVE_ERR_PROTOCOL, "GET %s: no version in the answer "
				      "('%s')", what, s ? s : "");
		return -1;
	}
	if (!(v->version = strdup(s ? s : rel)) || (rel && !(v->release = strdup(rel)))) {
		version_free(v);
		return err ? pve_error_oom(err) : -1;
	}
	return 0;
}

int pve_login(struct pve *c, struct pve_error *err)
{
	if (!c->use_token) {
		pve_error_clear(err);
		drop_ticket(c);
		if (do_login(c, err) < 0) {
			if (!err->what)
				err->what = strdup("login");
			return -1;
		}
		return 0;
	}
	json_object *d = NULL;
	int rc = pve_get(c, "/version", NULL, &d, err);
	struct pve_version v;
	if (rc == 0 && !c->cluster_version && version_from(d, &v, NULL, NULL) == 0) {
		/* the answer is the version: keep it (only a cache: a bad answer or
		 * no memory leaves it to pve_version()) */
		if ((c->cluster_version = malloc(sizeof *c->cluster_version)))
			*c->cluster_version = v;
		else
			version_free(&v);
	}
	json_object_put(d);
	return rc < 0 ? -1 : 0;
}

int pve_version_parse(const char *s, int *major, int *minor, int *patch)
{
	int part[3] = {-1, -1, -1};
	size_t k = 0;
	const char *p = s;
	if (!s)
		return -1;
	for (;;) {
		if (!isdigit((unsigned char)*p))
			return -1;
		long n = 0;
		while (isdigit((unsigned char)*p) && n < 100000)
			n = n * 10 + (*p++ - '0');
		if (isdigit((unsigned char)*p))
			return -1;
		part[k++] = (int)n;
		if ((*p == '.' && k < 3) || (*p == '-' && k == 2)) {
			p++;
			continue;
		}
		if (*p)
			return -1;
		break;
	}
	if (k < 2)
		return -1;
	*major = part[0];
	*minor = part[1];
	*patch = part[2];
	return 0;
}

int pve_version_cmp(const struct pve_version *a, const struct pve_version *b)
{
	if (a->major != b->major)
		return a->major < b->major ? -1 : 1;
	if (a->minor != b->minor)
		return a->minor < b->minor ? -1 : 1;
	return (a->patch > b->patch) - (a->patch < b->patch);
}

int pve_version(struct pve *c, const struct pve_version **out, struct pve_error *err)
{
	if (!c->cluster_version) {
		json_object *d = NULL;
		struct pve_version v;
		if (pve_get(c, "/version", NULL, &d, err) < 0)
			return -1;
		int rc = version_from(d, &v, "/version", err);
		json_object_put(d);
		if (rc < 0)
			return -1;
		if (!(c->cluster_version = malloc(sizeof *c->cluster_version))) {
			version_free(&v);
			return pve_error_oom(err);
		}
		*c->cluster_version = v;
	}
	*out = c->cluster_version;
	return 0;
}

int pve_node_version(struct pve *c, const char *node, const struct pve_version **out,
		     struct pve_error *err)
{
	for (struct node_version *e = c->node_versions; e; e = e->next)
		if (strcmp(e->node, node) == 0) {
			*out = &e->v;
			return 0;
		}
	char *pn = pve_path_escape(node), *what = strprintf("/nodes/%s/version", node);
	json_object *d = NULL;
	struct pve_version v;
	int rc = -1;
	if (!pn || !what)
		pve_error_oom(err);
	else if (pve_getf(c, &d, NULL, err, "/nodes/%s/version", pn) == 0 &&
		 version_from(d, &v, what, err) == 0) {
		struct node_version *e = malloc(sizeof *e);
		char *name = strdup(node);
		if (!e || !name) {
			free(e);
			free(name);
			version_free(&v);
			pve_error_oom(err);
		} else {
			*e = (struct node_version){name, v, c->node_versions};
			c->node_versions = e;
			*out = &e->v;
			rc = 0;
		}
	}
	free(pn);
	free(what);
	json_object_put(d);
	return rc;
}

int pve_getf(struct pve *c, json_object **data, const struct pve_params *params,
	     struct pve_error *err, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int r = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (r < 0) {
		sbuf_free(&b);
		return pve_error_oom(err);
	}
	r = pve_get(c, sbuf_str(&b), params, data, err);
	sbuf_free(&b);
	return r;
}

int pve_get(struct pve *c, const char *path, const struct pve_params *params,
	    json_object **data, struct pve_error *err)
{
	return pve_request(c, "GET", path, params, NULL, data, err);
}

int pve_post(struct pve *c, const char *path, const struct pve_params *params,
	     json_object **data, struct pve_error *err)
{
	return pve_request(c, "POST", path, params, NULL, data, err);
}

int pve_put(struct pve *c, const char *path, const struct pve_params *params,
	    json_object **data, struct pve_error *err)
{
	return pve_request(c, "PUT", path, params, NULL, data, err);
}

int pve_delete(struct pve *c, const char *path, const struct pve_params *params,
	       json_object **data, struct pve_error *err)
{
	return pve_request(c, "DELETE", path, params, NULL, data, err);
}
