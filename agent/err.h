/* err.h - the agent's one error type: what failed (the request, or the
 * step), its kind, PVE's HTTP status and message, per-parameter errors,
 * the task's UPID and log tail, and whether the request may have taken
 * effect. Every layer fills it and classifies it by outcome (outcome.h);
 * only the mains turn that into exit codes and words. It has a JSON form,
 * so jobs store it (store.h). */
#ifndef PVAGENT_ERR_H
#define PVAGENT_ERR_H

#include "outcome.h"

#include <json-c/json.h>
#include <stdbool.h>

/* Every failure is classified here, in one place. */
enum pve_err_kind {
	PVE_OK = 0,
	PVE_ERR_CONFIG,       /* bad client options (usage) */
	PVE_ERR_AUTH,         /* credential refused (401) (unreachable) */
	PVE_ERR_PERM,         /* authenticated but not permitted (403) */
	PVE_ERR_TLS,          /* certificate verification failed (unreachable) */
	PVE_ERR_PIN,          /* certificate fingerprint mismatch (unreachable) */
	PVE_ERR_CONNECT,      /* cannot resolve/connect, connection reset (unreachable) */
	PVE_ERR_TIMEOUT,      /* request timed out (unreachable) */
	PVE_ERR_TRANSIENT,    /* 502/503/504/596, "got no worker upid", "got timeout":
				 retried; this kind remains once retries ran out */
	PVE_ERR_PARAM,        /* 400 with per-parameter errors (param_errors) */
	PVE_ERR_BAD_REQUEST,  /* other 4xx */
	PVE_ERR_NOT_FOUND,    /* guest/config/route does not exist */
	PVE_ERR_LOCKED,       /* "VM is locked (...)" */
	PVE_ERR_CONFLICT,     /* "detected modified configuration": the config
				 digest sent no longer matches (nothing was
				 changed; read the config again) */
	PVE_ERR_EXISTS,       /* "already exists" */
	PVE_ERR_NOT_IMPLEMENTED, /* 501 */
	PVE_ERR_API,          /* any other PVE error (usually 500) */
	PVE_ERR_PROTOCOL,     /* unparsable or unexpected answer */
	PVE_ERR_TASK,         /* a PVE task ended with an error (task.h) */
	PVE_ERR_TASK_TIMEOUT, /* gave up waiting; the task is still running */
	PVE_ERR_INTERNAL,     /* out of memory, libcurl setup failure */
};

struct pve_error {
	enum pve_err_kind kind;
	int http_status;          /* 0 when there was no HTTP answer */
	char *what;               /* "POST /nodes/pve1/qemu" or NULL (malloc'd) */
	char *message;            /* redacted, one line (malloc'd) */
	json_object *param_errors; /* {"param": "message"} for PVE_ERR_PARAM, owned */
	int attempts;             /* requests sent for this call (set on success too) */
	bool ambiguous;           /* a non-GET may have reached PVE and taken
				     effect although no answer came back */
	char *upid;               /* task errors: the task's UPID (malloc'd) */
	char *detail;             /* task errors: last log lines, '\n'
				     separated (malloc'd), or NULL */
};

/* Free what the error holds and reset it to PVE_OK. Safe on a zeroed or
 * already cleared struct. */
void pve_error_clear(struct pve_error *e);
/* Fill e (cleared first) with kind and a printf message (redacted). */
void pve_error_set(struct pve_error *e, enum pve_err_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Fill e with PVE_ERR_INTERNAL "out of memory"; returns -1. */
int pve_error_oom(struct pve_error *e);
/* Move src into dst (dst cleared first, src left zeroed). */
void pve_error_move(struct pve_error *dst, struct pve_error *src);

/* "auth", "tls", "pin", "connect", ... (stable, used in --json output). */
const char *pve_err_kind_name(enum pve_err_kind k);
/* Would the client retry this kind (connection errors and transient)? */
bool pve_err_retryable(enum pve_err_kind k);
/* What a failure with this error means when nothing is left behind:
 * done for PVE_OK; usage for PVE_ERR_CONFIG and PVE_ERR_NOT_FOUND (what
 * was named does not exist: exit 2); needs-attention for a task
 * still running (PVE_ERR_TASK_TIMEOUT) or an ambiguous failure;
 * unreachable for auth, TLS, pin, connect and timeout; failed otherwise. */
enum job_outcome pve_error_outcome(const struct pve_error *e);
/* The message for users (malloc'd): "WHAT: MESSAGE", then one indented line
 * per parameter error ("  net0: invalid format"), then the task log tail.
 * NULL only when out of memory. */
char *pve_error_format(const struct pve_error *e);

/* For a text holding PVE's "Permission check failed (PATH, PRIV)": the
 * line that says which privilege on which path the token lacks and the
 * pveum lines that grant it ("\n  the API token lacks ..."; malloc'd);
 * NULL for any other text. pve_error_format adds it itself. */
char *pve_perm_hint(const char *text);
/* For a refusal (PVE_ERR_PERM or HTTP 403): that hint, or when PVE's text
 * names no path (the bare "Permission check failed" of an `or` check)
 * "\n  PVE refused METHOD PATH (403): the token needs ..." from what the
 * request in e->what needs (pveprivs_request_needs); malloc'd, NULL when
 * there is none. pve_error_format adds it itself. */
char *pve_error_hint(const struct pve_error *e);

/* The JSON form: {"kind","http_status","what","message","param_errors",
 * "ambiguous","upid","detail"} (absent members are left out). NULL when
 * out of memory. */
json_object *pve_error_to_json(const struct pve_error *e);
/* Fill e (cleared first) from that form; unknown kinds read as "api".
 * Returns 0, or -1 when o is not an object. */
int pve_error_from_json(json_object *o, struct pve_error *e);
/* Inverse of pve_err_kind_name(); -1 for an unknown name. */
int pve_err_kind_parse(const char *s, enum pve_err_kind *out);

#endif
