/* sshd.h - test support: run a private OpenSSH sshd (own config, own
 * ed25519 host key, own authorized_keys; nothing of the system's is used or
 * changed) on a loopback address and a random free port (or a given one),
 * chrooted into a copy of any directory tree with a busybox shell installed
 * in its bin/.
 * Also: ssh-keygen and ssh-agent helpers. Needs root (ChrootDirectory),
 * /usr/sbin/sshd, ssh-keygen and a static busybox (`make deps`).
 *
 * Layout: /var/lib/pvagent-test/XXXXXX/ (root-owned, 0755)
 *   etc/   sshd_config, host keys, authorized_keys, client key, pid, log
 *   root/  the chroot: a copy of opts.root, then bin/busybox and its applets
 *          (`busybox --install -s /bin` run inside, so files the tree
 *          already has in bin/ stay), what the tree lacks of etc/passwd and
 *          etc/group (uid 0), root's login shell from the real passwd as a
 *          wrapper to /bin/sh (sshd runs commands with it), dev/null, tmp/
 * sshd runs as a child of the caller with PR_SET_PDEATHSIG, so it dies with
 * a test that ends early; still call sshd_stop() (e.g. from a suite's fini)
 * to remove the directory.
 * Every function prints why it failed on stderr and returns -1. */
#ifndef TESTS_SSHD_H
#define TESTS_SSHD_H

#include <stdbool.h>
#include <sys/types.h>

struct sshd_opts {
	const char *root;          /* tree copied into the chroot, or NULL (empty) */
	const char *addr;          /* listen address in 127.0.0.0/8; NULL: 127.0.0.1 */
	int port;                  /* listen port; 0: a random free one */
	bool ecdsa_host_key;       /* also an ECDSA host key (libssh2 prefers it) */
	long fsize_limit;          /* >0: RLIMIT_FSIZE (bytes) for sshd and its
				    * sessions: a write beyond it kills the SFTP
				    * server mid-write (SIGXFSZ) */
	long sftp_cut_after;       /* >0: SFTP runs OpenSSH's sftp-server behind
				    * a dd passing N bytes: after them from the client
				    * the server sees EOF and exits, closing the
				    * channel (the guest "goes away" mid-write) */
	const char *const *authorized; /* extra public key files for root, or NULL */
	const char *extra_config;  /* appended to sshd_config, or NULL */
};

struct sshd {
	pid_t pid;
	char *dir;            /* /var/lib/pvagent-test/XXXXXX */
	char *root;           /* DIR/root: the chroot */
	char *addr;
	int port;
	char *config;         /* DIR/etc/sshd_config */
	char *log_path;       /* DIR/etc/sshd.log (LogLevel VERBOSE) */
	char *host_key_pub;   /* DIR/etc/ssh_host_ed25519_key.pub */
	char *host_fp;        /* its "SHA256:..." (from ssh-keygen -l) */
	char *ecdsa_key_pub;  /* or NULL */
	char *identity;       /* DIR/etc/id_ed25519, authorized for root */
	char *etc;            /* DIR/etc: scratch space for tests (keys, known_hosts) */
};

int sshd_start(struct sshd *sd, const struct sshd_opts *o);
/* Kill the sessions, SIGTERM + waitpid the listener, remove DIR.
 * Safe on a zeroed struct and after a failed start. */
int sshd_stop(struct sshd *sd);
/* SIGKILL every per-connection sshd process (the guest "goes away");
 * returns how many were killed, or -1. */
int sshd_kill_sessions(struct sshd *sd);
/* Host path of a path inside the chroot (malloc'd). */
char *sshd_path(const struct sshd *sd, const char *guest_path);
/* "[addr]:port TYPE BASE64" for a public key file (malloc'd). */
char *sshd_known_line(const struct sshd *sd, const char *pub_path);
/* Write a known_hosts file holding the given public keys for this sshd
 * (NULL-terminated list; NULL list: the real ed25519 host key), hashed
 * with ssh-keygen -H when asked. */
int sshd_write_known_hosts(const struct sshd *sd, const char *path,
			   const char *const *pubs, bool hashed);

/* Run argv (argv[0] a path or a name in PATH) with optional extra
 * environment ("K=V", NULL-terminated or NULL). *out (if not NULL) gets
 * stdout+stderr. Returns the exit status, or -1 if it could not run. */
int test_run(const char *const *argv, const char *const *env, char **out);
/* ssh-keygen -t TYPE [-b BITS] -N '' -f PATH (no passphrase). */
int test_keygen(const char *path, const char *type, int bits);
/* "SHA256:..." of a public key file via ssh-keygen -l (malloc'd). */
char *test_key_fp(const char *pub_path);

struct sshagent {
	pid_t pid;
	char *sock;
};
/* ssh-agent -D -a DIR/agent.sock; waits until the socket accepts. */
int sshagent_start(struct sshagent *a, const char *dir);
int sshagent_add(struct sshagent *a, const char *key_path);
int sshagent_stop(struct sshagent *a);

#endif
