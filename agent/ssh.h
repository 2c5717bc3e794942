/* ssh.h - the SSH layer (libssh2 1.10): one session per guest per job,
 * host key checking against an OpenSSH known_hosts file (strict or
 * trust-on-first-use), public-key and ssh-agent authentication, command
 * execution with exit status and capped output, and SFTP file reading and
 * atomic writing with a one-time backup.
 *
 * Quoting: every argument that reaches a remote shell goes through
 * ssh_quote(), the only quoting function. The remote command line is parsed
 * by the login shell of the SSH user; ssh_quote() produces POSIX sh words
 * ('...' with ' written as '\''), which csh/tcsh also accept except for
 * embedded newlines.
 *
 * Host keys: known_hosts is read line by line (plain and hashed names,
 * ed25519/ecdsa/rsa keys; @cert-authority/@revoked lines are skipped). The
 * host key algorithms offered are those known_hosts holds for the host,
 * then the others, so a host known by its ed25519 key is not asked for its
 * ECDSA key. A host known only under another key type counts as changed.
 * tofu appends a plain "host" or "[host]:port" line (file created 0600).
 *
 * Timeouts: connect_timeout_ms bounds TCP connect + handshake + auth; every
 * later libssh2 call gets op_timeout_ms (a command: the whole command).
 * A closed SFTP channel (the guest's SFTP server died) is detected at once
 * rather than after the timeout, and only SFTP is restarted.
 *
 * A session is used by one thread at a time; different sessions may be used
 * from different threads. Functions return 0 on success and -1 on failure,
 * filling the struct ssh_error passed in (clear it with ssh_error_clear()).
 * Error messages never contain a secret. After a timeout or a transport
 * failure the session is marked broken and every later call fails at once
 * with the same kind; close it and connect again. */
#ifndef PVAGENT_SSH_H
#define PVAGENT_SSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "outcome.h"
#include "util.h"

/* ---- errors --------------------------------------------------------------- */

enum ssh_err_kind {
	SSH_OK = 0,
	SSH_ERR_CONFIG,          /* bad options or unusable local files (usage) */
	SSH_ERR_CONNECT,         /* resolve/connect/handshake failed, connection lost (unreachable) */
	SSH_ERR_TIMEOUT,         /* connect or operation timed out (unreachable) */
	SSH_ERR_HOSTKEY_UNKNOWN, /* strict policy, host not in known_hosts (unreachable) */
	SSH_ERR_HOSTKEY_CHANGED, /* known_hosts holds another key (unreachable) */
	SSH_ERR_AUTH,            /* no identity accepted (unreachable) */
	SSH_ERR_NOENT,           /* remote file does not exist (failed) */
	SSH_ERR_REMOTE,          /* the guest refused an operation (SFTP status) (failed) */
	SSH_ERR_IO,              /* local I/O (known_hosts, memory) (failed) */
};

struct ssh_error {
	enum ssh_err_kind kind;
	char *msg;               /* malloc'd, one line, or NULL */
	unsigned long sftp_status; /* LIBSSH2_FX_* for SFTP failures, else 0 */
};

void ssh_error_clear(struct ssh_error *e);
/* "connect", "timeout", "hostkey-unknown", "hostkey-changed", "auth",
 * "noent", "remote", "io", "config", "ok". */
const char *ssh_err_kind_name(enum ssh_err_kind k);
/* Unreachable for connect, timeout, host key and auth; usage for config;
 * failed otherwise; done for SSH_OK. */
enum job_outcome ssh_error_outcome(const struct ssh_error *e);
/* The message, or the kind's name when there is none; never NULL. */
const char *ssh_error_str(const struct ssh_error *e);

/* ---- sessions ------------------------------------------------------------- */

enum ssh_host_key_policy {
	SSH_HKP_STRICT, /* unknown or changed host key: refuse */
	SSH_HKP_TOFU,   /* unknown: append to known_hosts; changed: refuse */
};

struct ssh_opts {
	const char *host;         /* name or address */
	int port;                 /* 0: 22 */
	const char *user;         /* NULL: "root" */
	const char *identity;     /* private key file (ed25519 recommended), or NULL */
	const char *known_hosts;  /* OpenSSH known_hosts file (required) */
	enum ssh_host_key_policy policy;
	long connect_timeout_ms;  /* TCP connect + handshake + auth; 0: 30000 */
	long op_timeout_ms;       /* each command or SFTP request; 0: 30000; <0: none */
	int keepalive_s;          /* 0: 15; <0: off */
	size_t max_output;        /* per stream (stdout, stderr); 0: 1 MiB */
};

struct ssh_session;

/* Connect, check the host key, authenticate: the identity file first, then
 * (when SSH_AUTH_SOCK is set) the agent's identities. An RSA identity is
 * reported clearly when the server refuses it: libssh2 1.10 can only sign
 * with ssh-rsa (SHA-1), which OpenSSH >= 8.8 refuses by default. */
int ssh_connect(const struct ssh_opts *o, struct ssh_session **out,
		struct ssh_error *err);
/* Disconnect and free; NULL is fine. */
void ssh_close(struct ssh_session *s);

/* "host" or "[host]:port", as known_hosts names it. */
const char *ssh_session_target(const struct ssh_session *s);
/* "SHA256:..." fingerprint of the server's host key. */
const char *ssh_session_host_fp(const struct ssh_session *s);
/* Send a keepalive if one is due (call during long idle waits). */
int ssh_keepalive(struct ssh_session *s, struct ssh_error *err);

/* ---- quoting and commands --------------------------------------------------- */

/* The single POSIX shell quoting function: 'arg' with each ' written as '\''
 * ("" becomes ''). Appends to b; returns 0 or -1 (out of memory). */
int ssh_quote_to(struct sbuf *b, const char *arg);
/* The same as a new string (NULL when out of memory). */
char *ssh_quote(const char *arg);

/* Command line from argv (NULL-terminated, at least one word): every word
 * quoted, joined with spaces. NULL on failure (errno EINVAL or ENOMEM). */
char *ssh_build_argv(const char *const *argv);
/* Command line from a fixed script in which each %s is replaced by the next
 * argument, quoted; %% is a literal %. Any other % sequence, or a count of
 * %s different from the number of args (NULL-terminated), is an error
 * (errno EINVAL). */
char *ssh_build_script(const char *script, const char *const *args);

struct ssh_result {
	int exit_status;     /* the command's exit status; -1 if none (signal) */
	char *exit_signal;   /* "KILL", "TERM", ... when killed by a signal, else NULL */
	struct sbuf out;     /* stdout (first max_output bytes) */
	struct sbuf err;     /* stderr (first max_output bytes) */
	bool truncated;      /* some output was dropped */
};
void ssh_result_free(struct ssh_result *r);

struct ssh_exec_opts {
	const void *input;   /* sent on stdin, then EOF (NULL: EOF at once) */
	size_t input_len;
	long timeout_ms;     /* 0: the session's op_timeout_ms; <0: none */
};

/* Run argv (each word quoted). A non-zero exit status is not an error:
 * 0 means the command ran and *res is filled. */
int ssh_exec(struct ssh_session *s, const char *const *argv,
	     struct ssh_result *res, struct ssh_error *err);
/* Run a script built by ssh_build_script(). */
int ssh_exec_script(struct ssh_session *s, const char *script,
		    const char *const *args, struct ssh_result *res,
		    struct ssh_error *err);
/* Run an already built command line (from ssh_build_*), with options. */
int ssh_exec_cmdline(struct ssh_session *s, const char *cmdline,
		     const struct ssh_exec_opts *xo, struct ssh_result *res,
		     struct ssh_error *err);

/* ---- files (SFTP) ------------------------------------------------------------- */

struct ssh_stat {
	unsigned mode;       /* st_mode: type and permission bits */
	unsigned uid, gid;
	uint64_t size;
};

/* stat (following symlinks). SSH_ERR_NOENT when missing. */
int ssh_stat(struct ssh_session *s, const char *path, struct ssh_stat *st,
	     struct ssh_error *err);
/* Read a whole regular file: *data malloc'd and NUL-terminated, *len
 * without the NUL; st may be NULL. SSH_ERR_NOENT when missing. */
int ssh_read_file(struct ssh_session *s, const char *path, char **data,
		  size_t *len, struct ssh_stat *st, struct ssh_error *err);

enum {
	SSH_WRITE_BACKUP = 1 << 0, /* keep PATH.pvagent.bak of the original, once */
	SSH_WRITE_MUST_EXIST = 1 << 1, /* fail with SSH_ERR_NOENT if PATH is missing */
};

#define SSH_BACKUP_SUFFIX ".pvagent.bak"
#define SSH_TEMP_INFIX ".pvagent.tmp."

/* Replace PATH atomically:
 *  - PATH (symlinks followed) must be a regular file or missing;
 *  - identical content: nothing is written (*changed = false);
 *  - stale PATH.pvagent.tmp.* files from an interrupted earlier write are
 *    removed;
 *  - with SSH_WRITE_BACKUP, if PATH exists and PATH.pvagent.bak does not,
 *    the original is copied there first (same procedure, same owner/mode);
 *    an existing backup is never overwritten;
 *  - the data goes to PATH.pvagent.tmp.RANDOM (created 0600), gets the
 *    original owner and mode (new file: create_mode, 0 meaning 0644, and the
 *    SSH user's owner), is fsync'ed and renamed over PATH with
 *    posix-rename@openssh.com (atomic replace);
 *  - on failure the temp file is removed when the connection still allows
 *    it; PATH is never left partly written.
 * changed may be NULL. */
int ssh_write_file_atomic(struct ssh_session *s, const char *path,
			  const void *data, size_t len, unsigned flags,
			  unsigned create_mode, bool *changed,
			  struct ssh_error *err);

/* Remove a remote file; a missing file is not an error. */
int ssh_remove(struct ssh_session *s, const char *path, struct ssh_error *err);

/* ---- helpers exposed for tests ------------------------------------------------- */

/* "SHA256:..." (unpadded base64, as OpenSSH prints it) of a key blob;
 * NULL when out of memory. */
char *ssh_fingerprint(const unsigned char *blob, size_t len);

#endif
