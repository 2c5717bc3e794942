/* pve.h - the Proxmox VE REST API client: authentication (API token, or
 * ticket + CSRF token renewed before expiry and once on a 401), TLS
 * (system store, CA file, or SHA-256 whole-certificate pinning checked during
 * the handshake), form encoding, JSON decoding, error classification and
 * the retry policy.
 *
 * One struct pve holds one libcurl handle (keep-alive). A client is used by
 * one thread at a time; several clients may run in parallel threads.
 *
 * Every function returning int returns 0 on success and -1 on failure unless
 * documented otherwise; on failure the struct pve_error passed in is filled
 * (clear it with pve_error_clear()). Messages never contain a secret. */
#ifndef PVAGENT_PVE_H
#define PVAGENT_PVE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "clock.h"
#include "err.h"

/* Classify an HTTP answer from its status and PVE's message (reason phrase
 * or body "message"). has_param_errors: the body had a non-empty "errors"
 * object. Pure; exposed for tests. 2xx gives PVE_OK. */
enum pve_err_kind pve_classify(int http_status, const char *message,
			       bool has_param_errors);

/* Decode one HTTP answer as the client does: status, reason phrase (may be
 * NULL) and body. On 2xx sets *data to the unwrapped "data" member (new
 * reference, NULL for JSON null) and returns 0. Otherwise fills err (kind,
 * http_status, message preferring the body's "message", then the reason
 * phrase; param_errors from "errors") and returns -1. Exposed for tests. */
int pve_decode_response(int http_status, const char *reason, const char *body,
			size_t body_len, json_object **data, struct pve_error *err);

/* ---- parameters ----------------------------------------------------------- */

/* A small ordered list of form parameters. Zero-initialise:
 * struct pve_params p = {0}; Adding never loses data silently: on out of
 * memory the add returns -1 and the list is marked failed, and a request
 * given a failed list is refused with PVE_ERR_INTERNAL, so callers may add
 * several parameters and check once. */
struct pve_param {
	char *key;
	char *value;
};
struct pve_params {
	struct pve_param *v;
	size_t n, cap;
	bool failed;
};

int pve_params_add(struct pve_params *p, const char *key, const char *value);
int pve_params_addf(struct pve_params *p, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int pve_params_add_int(struct pve_params *p, const char *key, long long v);
/* Booleans go on the wire as 0/1, as PVE requires. */
int pve_params_add_bool(struct pve_params *p, const char *key, bool v);
/* SSH public keys (cloud-init "sshkeys"): PVE wants the value itself
 * percent-encoded (space as %20, newline %0A); form encoding then encodes
 * it again. Pass the keys as plain text, one per line. */
int pve_params_add_sshkeys(struct pve_params *p, const char *key, const char *keys);
/* Value of the last parameter named key, or NULL. */
const char *pve_params_get(const struct pve_params *p, const char *key);
void pve_params_free(struct pve_params *p);

/* Percent-encode s for a form value: everything but A-Z a-z 0-9 - . _ ~
 * becomes %XX (space is %20). malloc'd; NULL when out of memory. */
char *pve_percent_encode(const char *s);
/* "k1=v1&k2=v2" with keys and values percent-encoded; "" for an empty or
 * NULL list. malloc'd; NULL when out of memory. */
char *pve_form_encode(const struct pve_params *p);
/* Escape one path segment (a node name, a UPID) for use in an API path:
 * characters outside RFC 3986 pchar are percent-encoded. malloc'd. */
char *pve_path_escape(const char *segment);

/* ---- client --------------------------------------------------------------- */

struct pve_opts {
	const char *url;          /* "https://host:8006"; "host" alone means
				     https://host:8006; a trailing "/api2/json"
				     is accepted. http:// is refused. */
	/* API token (preferred) ... */
	const char *token_id;     /* "user@realm!name" */
	const char *token_secret; /* or token_secret_file */
	const char *token_secret_file;
	/* ... or user + password (ticket auth). */
	const char *user;         /* "root@pam" */
	const char *password;     /* or password_file */
	const char *password_file;
	/* TLS. With fingerprint set, the server certificate's SHA-256 (colon
	 * hex as PVE shows it; colons optional) must match during the
	 * handshake, before any credential is sent; it replaces CA and host
	 * name verification. Otherwise the certificate is verified against
	 * ca_file or the system store. insecure disables verification and
	 * logs a warning on every pve_new(). */
	const char *fingerprint;
	const char *ca_file;
	bool insecure;
	long connect_timeout_ms;  /* 0: 10000 */
	long timeout_ms;          /* whole request; 0: 30000 */
	int max_attempts;         /* per call, for retryable failures; 0: 4 */
	bool unreachable_once;    /* a connection refused (or a name not
				     resolved) before PVE ever answered this
				     client is not retried: a command line
				     says "unreachable" at once */
	long retry_base_ms;       /* first backoff; 0: 500 (doubles, with jitter) */
	long retry_max_ms;        /* backoff cap; 0: 5000 */
	double ticket_renew_s;    /* renew the ticket after this age; 0: 3600
				     (PVE tickets live 7200 s) */
	const struct pve_clock *clock; /* NULL: real time (copied) */
};

struct pve;

/* Create a client. The first call initialises libcurl and sets SIGPIPE to
 * SIG_IGN if it still has its default action (see pve.c). Checks the options (PVE_ERR_CONFIG: missing URL or
 * credentials, bad fingerprint, unreadable secret file, a secret file
 * readable by group or others) and registers the secrets with log.h. No
 * network traffic happens here. NULL and err filled on failure. */
struct pve *pve_new(const struct pve_opts *o, struct pve_error *err);
void pve_free(struct pve *c);

/* Authenticate now: ticket login with user/password, or GET /version with
 * a token. Optional: requests log in lazily. Lets a daemon pay PVE's 3 s
 * 401 penalty at start and a CLI fail fast with exit code 4. */
int pve_login(struct pve *c, struct pve_error *err);

/* Did the last login answer NeedTFA (the user has two-factor
 * authentication; the login failed with PVE_ERR_AUTH)? */
bool pve_login_needs_tfa(const struct pve *c);

/* Base URL without /api2/json, e.g. "https://127.0.0.1:8006". */
const char *pve_url(const struct pve *c);
/* Identity used: token id or user. */
const char *pve_identity(const struct pve *c);
/* How long one request may take (pve_opts.timeout_ms), in seconds: an
 * unanswered request may still take effect until then. */
double pve_request_timeout_s(const struct pve *c);
/* Requests sent so far (each attempt counts). */
unsigned long pve_request_count(const struct pve *c);
/* Counts of this process, every client together: requests sent (each
 * attempt) by method, and retries by the kind of error that caused them
 * (pvagentd's metrics). */
struct pve_stats {
	unsigned long get, post, put, del, other;
	unsigned long retries[PVE_ERR_INTERNAL + 1];
};
void pve_stats_get(struct pve_stats *out);

/* Per-call options for pve_request(). */
struct pve_call_opts {
	bool no_retry;            /* one attempt only */
	long timeout_ms;          /* overrides pve_opts.timeout_ms when > 0 */
	/* For creates: when an attempt whose outcome was unknown (reset,
	 * timeout, 502/504/596 after sending) is retried and the retry answers
	 * "already exists", this is asked whether the existing object is the
	 * one the earlier attempt made (same name). If it returns true the call
	 * succeeds with return value 1 and *data NULL; otherwise, or without
	 * this callback, the "already exists" error is returned with
	 * err->ambiguous set. The callback may use the client. */
	bool (*exists_is_ours)(struct pve *c, void *ctx);
	void *exists_ctx;
	/* For task-starting requests: do not resend after an attempt that may
	 * have taken effect (5xx without a known reason, "got no worker upid",
	 * "got timeout", reset or timeout after sending): return that failure
	 * with err->ambiguous set,
	 * so that the caller looks at PVE first. Failures before anything was
	 * sent (connection refused) are still retried. */
	bool stop_if_maybe_applied;
};

/* One API call. method: "GET", "POST", "PUT" or "DELETE"; path below
 * /api2/json ("/nodes/pve1/qemu"); params form-encoded (query string for
 * GET/DELETE, body for POST/PUT; NULL for none). On success *data (if data
 * is not NULL) gets the unwrapped "data" member (new reference; NULL for
 * JSON null) and 0 is returned; 1 as described for exists_is_ours.
 *
 * Retries (with exponential backoff and jitter, at most max_attempts):
 * connection failures, 502/503/504/596, "got no worker upid" and "got
 * timeout"; a request timeout only for GET. A 401 with a ticket renews the
 * ticket once and resends. Nothing else is retried, and a successful
 * answer (for instance one carrying a UPID) is never sent again. */
int pve_request(struct pve *c, const char *method, const char *path,
		const struct pve_params *params, const struct pve_call_opts *copts,
		json_object **data, struct pve_error *err);

int pve_get(struct pve *c, const char *path, const struct pve_params *params,
	    json_object **data, struct pve_error *err);
/* pve_get() of a path made printf-style from fmt (values escaped by the
 * caller: pve_path_escape()). */
int pve_getf(struct pve *c, json_object **data, const struct pve_params *params,
	     struct pve_error *err, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int pve_post(struct pve *c, const char *path, const struct pve_params *params,
	     json_object **data, struct pve_error *err);
int pve_put(struct pve *c, const char *path, const struct pve_params *params,
	    json_object **data, struct pve_error *err);
int pve_delete(struct pve *c, const char *path, const struct pve_params *params,
	       json_object **data, struct pve_error *err);

/* ---- versions ------------------------------------------------------------- */

/* A PVE version as GET /version and GET /nodes/{node}/version give it. */
struct pve_version {
	int major, minor, patch;  /* "9.1.2" -> 9, 1, 2; "3.4-16" -> 3, 4, 16 */
	char *version;            /* the answer's "version" ("9.1.2") */
	char *release;            /* its "release" ("9.1"), or NULL */
};
/* Parse a version string ("9.1.2", "8.4", "3.4-16"; digits, '.', one
 * optional '-' part). 0, or -1 when s is not one (out untouched). */
int pve_version_parse(const char *s, int *major, int *minor, int *patch);
/* Order of two versions: <0, 0, >0 by major, minor, patch. */
int pve_version_cmp(const struct pve_version *a, const struct pve_version *b);
/* The cluster's version: GET /version (the node the client talks to),
 * asked once per client (a token pve_login() fills it too). *out is
 * borrowed and valid until pve_free(). */
int pve_version(struct pve *c, const struct pve_version **out, struct pve_error *err);
/* A node's version: GET /nodes/{node}/version, asked once per node per
 * client. *out borrowed as for pve_version(). */
int pve_node_version(struct pve *c, const char *node, const struct pve_version **out,
		     struct pve_error *err);

/* The names this client gave the guests it made (guest.c): while
 * /cluster/resources shows one of them without a name (PVE's status lag),
 * its name is known without reading its node's list. Kept per client, as
 * the versions are: a bounded ring of the last PVE_MADE_MAX, keyed by
 * node, kind ("qemu", "lxc", "openvz") and VMID. remember replaces an
 * entry of the same key (out of memory: nothing kept, it is a shortcut
 * only); forget drops it (a guest deleted); name is borrowed, valid until
 * the entry changes, NULL when this client made no such guest. */
#define PVE_MADE_MAX 64
void pve_made_remember(struct pve *c, const char *node, const char *kind, int vmid,
		       const char *name);
void pve_made_forget(struct pve *c, const char *node, const char *kind, int vmid);
const char *pve_made_name(const struct pve *c, const char *node, const char *kind, int vmid);

/* Parse a fingerprint ("AA:BB:..", 32 bytes, colons optional, any case)
 * into out. Returns 0 or -1. */
int pve_parse_fingerprint(const char *s, unsigned char out[32]);

/* Backoff before retry number attempt (1 = first retry): uniformly random
 * in [d/2, d] where d = min(base * 2^(attempt-1), max). r is a random
 * value in [0, 1). Pure; exposed for tests. */
long pve_backoff_ms(int attempt, long base_ms, long max_ms, double r);

/* Release libcurl's global state (end of program; optional). */
void pve_global_cleanup(void);

#endif
