/* simproc.h - test support: run the PVE simulator as a child process on a
 * random loopback port, talk HTTPS to it (trusting exactly its fresh
 * certificate), drive its /_sim control routes, and stop it, failing if it
 * did not exit cleanly (sanitizer reports included). */
#ifndef TESTS_SIMPROC_H
#define TESTS_SIMPROC_H

#include <json-c/json.h>
#include <sys/types.h>

struct simproc {
	pid_t pid;
	char *dir;          /* private temp directory */
	char *url;          /* https://127.0.0.1:PORT */
	char *fingerprint;  /* "AA:BB:..." */
	char *token_id, *token_secret;
	char *log_path;     /* request log (JSON lines) */
	char *cert_path;    /* the simulator's certificate (PEM) */
	char *stderr_path;
	void *curl;         /* one keep-alive handle for sim_http */
};

/* Start $PVESIM_BIN (default build/san/pvesim) with --scenario, --log,
 * --cert-out and the NULL-terminated extra_args (may be NULL). Returns 0,
 * or -1 after printing why on stderr. */
int simproc_start(struct simproc *sp, const char *scenario,
		  const char *const *extra_args);
/* SIGTERM, wait, remove the temp directory. Returns 0 if the simulator
 * exited 0 with no sanitizer report, else -1 (its stderr is printed). */
int simproc_stop(struct simproc *sp);

/* One HTTPS request to the simulator. path is the full path
 * ("/api2/json/version" or "/_sim/state"); body may be NULL; headers is a
 * NULL-terminated list of "Name: value" or NULL. Sets *status and, if
 * body_out is not NULL, the parsed JSON answer (NULL if not JSON).
 * Returns 0, or -1 when no HTTP answer came back (connection reset...). */
int sim_http(struct simproc *sp, const char *method, const char *path,
	     const char *content_type, const char *body,
	     const char *const *headers, long *status, json_object **body_out);
/* The same with the scenario's first API token. */
int sim_api(struct simproc *sp, const char *method, const char *path,
	    const char *form_body, long *status, json_object **body_out);

/* In a request log (simproc_requests): how many requests have this method
 * and path (exact, or a suffix when path starts with '*'), and status
 * (any when status < 0). */
int simproc_count_requests(json_object *log, const char *method, const char *path,
			   int status);
/* In a state (simproc_state): how many guests carry this name. */
int simproc_count_named(json_object *state, const char *name);

/* Config key of guest vmid in the simulator's state now (malloc'd), or
 * NULL when the guest or the key is absent. */
char *simproc_config_key(struct simproc *sp, int vmid, const char *key);

int simproc_fault(struct simproc *sp, const char *rule_json);
int simproc_advance(struct simproc *sp, double seconds);
json_object *simproc_state(struct simproc *sp);
/* The request log so far, one object per line (new array). */
json_object *simproc_requests(struct simproc *sp);

#endif
