/* server.h - the simulator's HTTPS front end: libmicrohttpd over GnuTLS,
 * request parsing, authentication, schema check, fault injection, request
 * log, simulated clock and the /_sim control routes. */
#ifndef PVESIM_SERVER_H
#define PVESIM_SERVER_H

struct cluster;
struct schema;

struct server_opts {
	const char *listen;   /* "127.0.0.1:0" (loopback only) */
	const char *log_path; /* JSON lines, one per request, or NULL */
	double time_scale;    /* simulated seconds per real second */
	const char *cert_out; /* write the PEM certificate here, or NULL */
	unsigned latency_ms;  /* a fixed delay before each API answer (real
			       * time): a real cluster's round trip */
	const char *node_shell_listen; /* "127.0.0.1:0": a plain-HTTP listener
				    * for the nodes' SSH stand-ins
				    * (tests/pvesim/nodeshell/), or NULL */
};

struct server;

/* Start serving cluster c (schema s may be NULL: route checks only). The
 * server borrows c and s. Returns NULL with a malloc'd *err on failure. */
struct server *server_start(struct cluster *c, struct schema *s,
			    const struct server_opts *o, char **err);
const char *server_url(const struct server *sv);
const char *server_fingerprint(const struct server *sv);
/* "http://127.0.0.1:PORT" of the node-shell listener, or NULL. */
const char *server_node_shell_url(const struct server *sv);
void server_stop(struct server *sv);

#endif
