/* ssh.c - the SSH layer on libssh2 1.10 (see ssh.h): connect with
 * timeouts, known_hosts checking (strict/tofu), public-key and agent auth,
 * exec with capped output, SFTP read and atomic write with backup. The
 * quoting of what reaches a remote shell is in ssh_quote.c.
 *
 * libssh2 1.10 has no posix-rename API and sends its rename flags only to
 * SFTP v5+ servers, so against OpenSSH (SFTP v3) a plain rename cannot
 * replace an existing file. The atomic replace therefore sends the
 * posix-rename@openssh.com extended request itself on the SFTP channel
 * (sftp_posix_rename below), between two synchronous SFTP calls. */
#include "ssh.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 30000L
#define DEFAULT_KEEPALIVE_S 15
#define DEFAULT_MAX_OUTPUT ((size_t)1 << 20)
#define IO_CHUNK 32768
#define SFTP_WRITE_CHUNK 30000

/* Every libssh2 allocation of a session is linked into the session's
 * arena, so that what libssh2 1.10 never frees (an SFTP handle whose channel
 * died cannot be closed, and sftp_shutdown frees no handle) is released by
 * ssh_close() after libssh2_session_free(). */
struct blk {
	struct blk *prev, *next;
};
#define BLK_HDR ((sizeof(struct blk) + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) * \
		 _Alignof(max_align_t))

struct ssh_session {
	struct blk arena;        /* circular list of libssh2 allocations */
	LIBSSH2_SESSION *sess;
	LIBSSH2_SFTP *sftp;
	int fd;
	char *host;
	int port;
	char *user;
	char *target;            /* "host" or "[host]:port" */
	char *host_fp;
	long op_timeout_ms;
	int keepalive_s;
	size_t max_output;
	enum ssh_err_kind broken; /* SSH_OK while usable */
	char *broken_msg;
	uint32_t ext_id;         /* request ids of our own SFTP extended requests */
	int sftp_dead;           /* the SFTP channel failed: close handles, then
				  * drop it (sftp_ready starts a new one) */
};

/* ---- errors --------------------------------------------------------------- */

void ssh_error_clear(struct ssh_error *e)
{
	if (!e)
		return;
	free(e->msg);
	e->msg = NULL;
	e->kind = SSH_OK;
	e->sftp_status = 0;
}

const char *ssh_err_kind_name(enum ssh_err_kind k)
{
	switch (k) {
	case SSH_OK: return "ok";
	case SSH_ERR_CONFIG: return "config";
	case SSH_ERR_CONNECT: return "connect";
	case SSH_ERR_TIMEOUT: return "timeout";
	case SSH_ERR_HOSTKEY_UNKNOWN: return "hostkey-unknown";
	case SSH_ERR_HOSTKEY_CHANGED: return "hostkey-changed";
	case SSH_ERR_AUTH: return "auth";
	case SSH_ERR_NOENT: return "noent";
	case SSH_ERR_REMOTE: return "remote";
	case SSH_ERR_IO: return "io";
	}
	return "unknown";
}

int ssh_error_exit_code(const struct ssh_error *e)
{
	switch (e->kind) {
	case SSH_OK: return 0;
	case SSH_ERR_CONFIG: return 2;
	case SSH_ERR_CONNECT:
	case SSH_ERR_TIMEOUT:
	case SSH_ERR_HOSTKEY_UNKNOWN:
	case SSH_ERR_HOSTKEY_CHANGED:
	case SSH_ERR_AUTH: return 4;
	case SSH_ERR_NOENT:
	case SSH_ERR_REMOTE:
	case SSH_ERR_IO: return 1;
	}
	return 1;
}

const char *ssh_error_str(const struct ssh_error *e)
{
	return e->msg ? e->msg : ssh_err_kind_name(e->kind);
}

__attribute__((format(printf, 3, 4)))
static int fail(struct ssh_error *e, enum ssh_err_kind kind, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (e) {
		free(e->msg);
		e->kind = kind;
		e->sftp_status = 0;
		e->msg = rc == 0 ? log_redact(sbuf_str(&b)) : NULL;
	}
	sbuf_free(&b);
	return -1;
}

static int fail_oom(struct ssh_error *e)
{
	return fail(e, SSH_ERR_IO, "out of memory");
}

/* ---- small helpers ----------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;

static void do_init(void)
{
	init_rc = libssh2_init(0);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *lib_errmsg(LIBSSH2_SESSION *sess)
{
	char *msg = NULL;
	libssh2_session_last_error(sess, &msg, NULL, 0);
	return msg && *msg ? msg : "unknown libssh2 error";
}

static void put_u32(struct sbuf *b, uint32_t v, int *bad)
{
	char c[4] = {(char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v};
	if (sbuf_addn(b, c, 4) < 0)
		*bad = 1;
}

static void put_str(struct sbuf *b, const char *s, size_t n, int *bad)
{
	put_u32(b, (uint32_t)n, bad);
	if (sbuf_addn(b, s, n) < 0)
		*bad = 1;
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

char *ssh_fingerprint(const unsigned char *blob, size_t len)
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	if (!EVP_Digest(blob, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
		return NULL;
	unsigned char b64[64];
	int n = EVP_EncodeBlock(b64, md, 32);
	if (n <= 0)
		return NULL;
	while (n > 0 && b64[n - 1] == '=')
		n--;
	return strprintf("SHA256:%.*s", n, (const char *)b64);
}

/* Decode base64 text; *out malloc'd. */
static int b64_decode(const char *in, size_t inlen, unsigned char **out, size_t *outlen)
{
	while (inlen && (in[inlen - 1] == '\n' || in[inlen - 1] == '\r' || in[inlen - 1] == ' '))
		inlen--;
	if (inlen % 4 != 0 || inlen > (size_t)1 << 28)
		return -1;
	unsigned char *buf = malloc(inlen / 4 * 3 + 1);
	if (!buf)
		return -1;
	int n = EVP_DecodeBlock(buf, (const unsigned char *)in, (int)inlen);
	if (n < 0) {
		free(buf);
		return -1;
	}
	size_t pad = 0;
	if (inlen >= 1 && in[inlen - 1] == '=')
		pad++;
	if (inlen >= 2 && in[inlen - 2] == '=')
		pad++;
	*out = buf;
	*outlen = (size_t)n - pad;
	return 0;
}

static char *b64_encode(const unsigned char *in, size_t len)
{
	if (len > (size_t)1 << 28)
		return NULL;
	char *out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	EVP_EncodeBlock((unsigned char *)out, in, (int)len);
	return out;
}

/* ---- session state --------------------------------------------------------------- */

static int check_usable(struct ssh_session *s, struct ssh_error *err)
{
	if (s->broken == SSH_OK)
		return 0;
	return fail(err, s->broken, "%s", s->broken_msg ? s->broken_msg : "session unusable");
}

/* Record a transport-level failure: the session cannot be used any more. */
static int break_session(struct ssh_session *s, struct ssh_error *err,
			 enum ssh_err_kind kind, const char *what)
{
	if (kind == SSH_ERR_TIMEOUT)
		fail(err, kind, "%s on %s timed out", what, s->target);
	else
		fail(err, kind, "connection to %s lost during %s: %s", s->target,
		     what, lib_errmsg(s->sess));
	if (s->broken == SSH_OK) {
		s->broken = kind;
		free(s->broken_msg);
		s->broken_msg = err && err->msg ? strdup(err->msg) : NULL;
	}
	return -1;
}

const char *ssh_session_target(const struct ssh_session *s)
{
	return s->target;
}

const char *ssh_session_host_fp(const struct ssh_session *s)
{
	return s->host_fp;
}

int ssh_keepalive(struct ssh_session *s, struct ssh_error *err)
{
	if (check_usable(s, err) < 0)
		return -1;
	int next = 0;
	int rc = s->keepalive_s > 0 ? libssh2_keepalive_send(s->sess, &next) : 0;
	if (rc != 0 && rc != LIBSSH2_ERROR_EAGAIN)
		return break_session(s, err, SSH_ERR_CONNECT, "keepalive");
	return 0;
}

/* Wait until the socket is ready for what libssh2 is blocked on, at most
 * WAIT_SLICE_MS: libssh2 may already hold in its buffers what the caller
 * waits for (a read of one channel or stream pulls every packet off the
 * socket), so the caller retries its libssh2 call after every slice
 * instead of sleeping on a socket that stays quiet. Fails with a timeout
 * once the deadline (0: none) has passed. Sends keepalives (libssh2 keeps
 * their interval) while waiting. */
#define WAIT_SLICE_MS 200
static int wait_socket(struct ssh_session *s, int64_t deadline, const char *what,
		       struct ssh_error *err)
{
	int dir = libssh2_session_block_directions(s->sess);
	struct pollfd p = {.fd = s->fd, .events = 0};
	if (dir & LIBSSH2_SESSION_BLOCK_INBOUND)
		p.events |= POLLIN;
	if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		p.events |= POLLOUT;
	if (!p.events)
		p.events = POLLIN;
	int ms = WAIT_SLICE_MS;
	if (deadline) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return break_session(s, err, SSH_ERR_TIMEOUT, what);
		if (left < ms)
			ms = (int)left;
	}
	int n;
	while ((n = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return fail(err, SSH_ERR_IO, "poll: %s", strerror(errno));
	if (n == 0 && s->keepalive_s > 0) {
		int next = 0;
		int rc = libssh2_keepalive_send(s->sess, &next);
		if (rc != 0 && rc != LIBSSH2_ERROR_EAGAIN)
			return break_session(s, err, SSH_ERR_CONNECT, what);
	}
	return 0;
}

/* After connecting, the session stays non-blocking: every call waits in
 * wait_socket() with its own deadline. */
static void nonblocking_mode(struct ssh_session *s)
{
	libssh2_session_set_blocking(s->sess, 0);
}

/* ---- libssh2 allocation arena ------------------------------------------------ */

static void blk_link(struct ssh_session *s, struct blk *b)
{
	b->next = s->arena.next;
	b->prev = &s->arena;
	s->arena.next->prev = b;
	s->arena.next = b;
}

static void blk_unlink(struct blk *b)
{
	b->prev->next = b->next;
	b->next->prev = b->prev;
}

static LIBSSH2_ALLOC_FUNC(arena_alloc)
{
	struct ssh_session *s = *abstract;
	if (count > (size_t)-1 - BLK_HDR)
		return NULL;
	struct blk *b = malloc(BLK_HDR + count);
	if (!b)
		return NULL;
	blk_link(s, b);
	return (char *)b + BLK_HDR;
}

static LIBSSH2_FREE_FUNC(arena_free)
{
	(void)abstract;
	if (!ptr)
		return;
	struct blk *b = (struct blk *)(void *)((char *)ptr - BLK_HDR);
	blk_unlink(b);
	free(b);
}

static LIBSSH2_REALLOC_FUNC(arena_realloc)
{
	struct ssh_session *s = *abstract;
	if (!ptr)
		return arena_alloc(count, abstract);
	if (count > (size_t)-1 - BLK_HDR)
		return NULL;
	struct blk *b = (struct blk *)(void *)((char *)ptr - BLK_HDR);
	blk_unlink(b);
	struct blk *nb = realloc(b, BLK_HDR + count);
	if (!nb) {
		blk_link(s, b);
		return NULL;
	}
	blk_link(s, nb);
	return (char *)nb + BLK_HDR;
}

/* Free what libssh2 left allocated (after libssh2_session_free). */
static void arena_release(struct ssh_session *s)
{
	size_t n = 0;
	struct blk *b = s->arena.next;
	while (b && b != &s->arena) {
		struct blk *next = b->next;
		free(b);
		b = next;
		n++;
	}
	s->arena.next = s->arena.prev = &s->arena;
	if (n)
		log_debug("released %zu allocation(s) libssh2 left behind for %s", n,
			  s->target ? s->target : "?");
}

/* ---- connect --------------------------------------------------------------------- */

static int tcp_connect(const char *host, int port, int64_t deadline, int *fd_out,
		       struct ssh_error *err)
{
	char portstr[16];
	snprintf(portstr, sizeof portstr, "%d", port);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	int grc = getaddrinfo(host, portstr, &hints, &res);
	if (grc != 0)
		return fail(err, SSH_ERR_CONNECT, "cannot resolve %s: %s", host,
			    gai_strerror(grc));
	int last = ECONNREFUSED;
	int timed_out = 0;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				ai->ai_protocol);
		if (fd < 0) {
			last = errno;
			continue;
		}
		int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
		if (rc < 0 && errno == EINPROGRESS) {
			for (;;) {
				int64_t left = deadline - now_ms();
				if (left <= 0) {
					timed_out = 1;
					errno = ETIMEDOUT;
					rc = -1;
					break;
				}
				struct pollfd p = {.fd = fd, .events = POLLOUT};
				int n = poll(&p, 1, (int)left);
				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0) {
					rc = -1;
					break;
				}
				if (n == 0)
					continue;
				int soerr = 0;
				socklen_t sl = sizeof soerr;
				if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
					soerr = errno;
				errno = soerr;
				rc = soerr ? -1 : 0;
				break;
			}
		}
		if (rc == 0) {
			int fl = fcntl(fd, F_GETFL);
			if (fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0) {
				freeaddrinfo(res);
				*fd_out = fd;
				return 0;
			}
		}
		last = errno;
		close(fd);
		if (timed_out)
			break;
	}
	freeaddrinfo(res);
	if (timed_out)
		return fail(err, SSH_ERR_TIMEOUT, "connecting to %s port %d timed out", host, port);
	return fail(err, SSH_ERR_CONNECT, "cannot connect to %s port %d: %s", host, port,
		    strerror(last));
}

/* Host key types libssh2 1.10 knows, in our order of preference. */
static const struct {
	int kh_type;        /* LIBSSH2_KNOWNHOST_KEY_* */
	int hk_type;        /* LIBSSH2_HOSTKEY_TYPE_* */
	const char *method; /* host key algorithm */
	const char *label;  /* as ssh-keygen -l shows it */
	int default_pref;   /* offered when the host is not known */
} key_types[] = {
	{LIBSSH2_KNOWNHOST_KEY_ED25519, LIBSSH2_HOSTKEY_TYPE_ED25519, "ssh-ed25519", "ED25519", 1},
	{LIBSSH2_KNOWNHOST_KEY_ECDSA_256, LIBSSH2_HOSTKEY_TYPE_ECDSA_256, "ecdsa-sha2-nistp256", "ECDSA", 1},
	{LIBSSH2_KNOWNHOST_KEY_ECDSA_384, LIBSSH2_HOSTKEY_TYPE_ECDSA_384, "ecdsa-sha2-nistp384", "ECDSA", 1},
	{LIBSSH2_KNOWNHOST_KEY_ECDSA_521, LIBSSH2_HOSTKEY_TYPE_ECDSA_521, "ecdsa-sha2-nistp521", "ECDSA", 1},
	{LIBSSH2_KNOWNHOST_KEY_SSHRSA, LIBSSH2_HOSTKEY_TYPE_RSA, "ssh-rsa", "RSA", 1},
	{LIBSSH2_KNOWNHOST_KEY_SSHDSS, LIBSSH2_HOSTKEY_TYPE_DSS, "ssh-dss", "DSA", 0},
};
#define N_KEY_TYPES (sizeof key_types / sizeof key_types[0])

struct known {
	LIBSSH2_KNOWNHOSTS *kh;
	int exists;                  /* the file exists */
	char *old_fp[N_KEY_TYPES];   /* fingerprint of the known key per type, or NULL */
	int any;                     /* some entry names this host */
};

static void known_free(struct known *k)
{
	if (k->kh)
		libssh2_knownhost_free(k->kh);
	for (size_t i = 0; i < N_KEY_TYPES; i++)
		free(k->old_fp[i]);
	memset(k, 0, sizeof *k);
}

/* Fingerprint of a known_hosts entry (its base64 key). */
static char *entry_fp(const struct libssh2_knownhost *ext)
{
	if (!ext || !ext->key)
		return NULL;
	unsigned char *blob = NULL;
	size_t len = 0;
	if (b64_decode(ext->key, strlen(ext->key), &blob, &len) < 0)
		return NULL;
	char *fp = ssh_fingerprint(blob, len);
	free(blob);
	return fp;
}

/* Load known_hosts line by line (a line libssh2 cannot parse, such as
 * @cert-authority, is skipped rather than ending the load) and find the key
 * types recorded for host:port. */
static int known_load(LIBSSH2_SESSION *sess, const struct ssh_opts *o, int port,
		      struct known *k, struct ssh_error *err)
{
	memset(k, 0, sizeof *k);
	k->kh = libssh2_knownhost_init(sess);
	if (!k->kh)
		return fail_oom(err);
	char *text = NULL;
	size_t len = 0;
	if (read_file(o->known_hosts, &text, &len) < 0) {
		if (errno != ENOENT)
			return fail(err, SSH_ERR_CONFIG, "cannot read known_hosts %s: %s",
				    o->known_hosts, strerror(errno));
	} else {
		k->exists = 1;
		size_t lineno = 0;
		for (char *p = text; p < text + len;) {
			char *nl = memchr(p, '\n', (size_t)(text + len - p));
			size_t n = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
			/* libssh2 looks one byte past the length for a '\n' to
			 * drop: end each line with a NUL instead. */
			if (nl)
				*nl = '\0';
			while (n && p[n - 1] == '\r')
				p[--n] = '\0';
			lineno++;
			char *q = p;
			while (q < p + n && (*q == ' ' || *q == '\t'))
				q++;
			if (q < p + n && *q != '#') {
				if (*q == '@')
					log_debug("%s:%zu: marker lines are not supported, skipped",
						  o->known_hosts, lineno);
				else if (libssh2_knownhost_readline(k->kh, q, (size_t)(p + n - q),
								    LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0)
					log_debug("%s:%zu: not understood by libssh2, skipped",
						  o->known_hosts, lineno);
			}
			p = nl ? nl + 1 : text + len;
		}
		free(text);
	}
	/* Probe each type with a key that cannot match: MISMATCH means the
	 * host has an entry of that type (libssh2 handles hashed names). */
	static const char probe[1] = {0};
	for (size_t i = 0; i < N_KEY_TYPES; i++) {
		struct libssh2_knownhost *ext = NULL;
		int rc = libssh2_knownhost_checkp(k->kh, o->host, port, probe, sizeof probe,
						  LIBSSH2_KNOWNHOST_TYPE_PLAIN |
						  LIBSSH2_KNOWNHOST_KEYENC_RAW | key_types[i].kh_type,
						  &ext);
		if (rc == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
			k->any = 1;
			k->old_fp[i] = entry_fp(ext);
			if (!k->old_fp[i])
				k->old_fp[i] = strdup("(unreadable key)");
			if (!k->old_fp[i])
				return fail_oom(err);
		}
	}
	return 0;
}

static int set_hostkey_prefs(LIBSSH2_SESSION *sess, const struct known *k,
			     struct ssh_error *err)
{
	struct sbuf b = {0};
	int bad = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < N_KEY_TYPES; i++) {
			int known = k->old_fp[i] != NULL;
			if (pass == 0 ? !known : (known || !key_types[i].default_pref))
				continue;
			if ((b.len && sbuf_addc(&b, ',') < 0) || sbuf_add(&b, key_types[i].method) < 0)
				bad = 1;
		}
	}
	if (bad) {
		sbuf_free(&b);
		return fail_oom(err);
	}
	int rc = libssh2_session_method_pref(sess, LIBSSH2_METHOD_HOSTKEY, sbuf_str(&b));
	sbuf_free(&b);
	if (rc != 0)
		return fail(err, SSH_ERR_CONFIG, "cannot set host key preferences: %s",
			    lib_errmsg(sess));
	return 0;
}

static int known_append(const struct ssh_opts *o, const char *target, const char *key,
			size_t keylen, struct ssh_error *err)
{
	/* The key type is the first string of the blob. */
	if (keylen < 4 || get_u32((const unsigned char *)key) > keylen - 4)
		return fail(err, SSH_ERR_CONNECT, "malformed host key from %s", target);
	uint32_t tlen = get_u32((const unsigned char *)key);
	char *b64 = b64_encode((const unsigned char *)key, keylen);
	if (!b64)
		return fail_oom(err);
	char *line = strprintf("%s %.*s %s\n", target, (int)tlen, key + 4, b64);
	free(b64);
	if (!line)
		return fail_oom(err);
	int fd = open(o->known_hosts, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT) {
		/* Create the directory (one level, private) and retry. */
		char *dir = strdup(o->known_hosts);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		if (slash && slash != dir) {
			*slash = '\0';
			if (mkdir(dir, 0700) == 0 || errno == EEXIST)
				fd = open(o->known_hosts, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
					  0600);
		}
		free(dir);
	}
	if (fd < 0) {
		int e = errno;
		free(line);
		return fail(err, SSH_ERR_IO, "cannot record the host key in %s: %s",
			    o->known_hosts, strerror(e));
	}
	/* Keep the file line-structured if its last line has no newline. */
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		char last = '\n';
		if (pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n')
			rc = write(fd, "\n", 1) == 1 ? 0 : -1;
	}
	size_t n = strlen(line);
	if (rc == 0)
		rc = write(fd, line, n) == (ssize_t)n ? 0 : -1;
	if (rc == 0)
		rc = fsync(fd);
	int e = errno;
	if (close(fd) < 0 && rc == 0) {
		rc = -1;
		e = errno;
	}
	free(line);
	if (rc < 0)
		return fail(err, SSH_ERR_IO, "cannot record the host key in %s: %s",
			    o->known_hosts, strerror(e));
	return 0;
}

static int check_host_key(struct ssh_session *s, const struct ssh_opts *o, struct known *k,
			  struct ssh_error *err)
{
	size_t keylen = 0;
	int type = 0;
	const char *key = libssh2_session_hostkey(s->sess, &keylen, &type);
	if (!key || !keylen)
		return fail(err, SSH_ERR_CONNECT, "no host key from %s", s->target);
	size_t ti = N_KEY_TYPES;
	for (size_t i = 0; i < N_KEY_TYPES; i++)
		if (key_types[i].hk_type == type)
			ti = i;
	s->host_fp = ssh_fingerprint((const unsigned char *)key, keylen);
	if (!s->host_fp)
		return fail_oom(err);
	if (ti == N_KEY_TYPES)
		return fail(err, SSH_ERR_CONNECT, "host key of %s has a type libssh2 cannot check",
			    s->target);
	const char *label = key_types[ti].label;
	struct libssh2_knownhost *ext = NULL;
	int rc = libssh2_knownhost_checkp(k->kh, s->host, s->port, key, keylen,
					  LIBSSH2_KNOWNHOST_TYPE_PLAIN |
					  LIBSSH2_KNOWNHOST_KEYENC_RAW | key_types[ti].kh_type,
					  &ext);
	if (rc == LIBSSH2_KNOWNHOST_CHECK_MATCH) {
		log_debug("host key of %s matches %s: %s (%s)", s->target, o->known_hosts,
			  s->host_fp, label);
		return 0;
	}
	if (rc == LIBSSH2_KNOWNHOST_CHECK_FAILURE)
		return fail(err, SSH_ERR_CONFIG, "cannot check the host key of %s against %s: %s",
			    s->target, o->known_hosts, lib_errmsg(s->sess));
	if (rc == LIBSSH2_KNOWNHOST_CHECK_MISMATCH || k->any) {
		struct sbuf old = {0};
		int bad = 0;
		for (size_t i = 0; i < N_KEY_TYPES; i++) {
			if (!k->old_fp[i])
				continue;
			if (sbuf_addf(&old, "%s%s (%s)", old.len ? ", " : "", k->old_fp[i],
				      key_types[i].label) < 0)
				bad = 1;
		}
		if (bad) {
			sbuf_free(&old);
			return fail_oom(err);
		}
		fail(err, SSH_ERR_HOSTKEY_CHANGED,
		     "HOST KEY CHANGED for %s: %s has %s, the server presented %s (%s); "
		     "refusing to connect (possible man-in-the-middle). If the guest was "
		     "reinstalled, remove the old entry: ssh-keygen -R '%s' -f %s",
		     s->target, o->known_hosts, sbuf_str(&old), s->host_fp, label, s->target,
		     o->known_hosts);
		sbuf_free(&old);
		return -1;
	}
	if (o->policy != SSH_HKP_TOFU)
		return fail(err, SSH_ERR_HOSTKEY_UNKNOWN,
			    "host key of %s is not in %s (policy strict): %s (%s); "
			    "verify it and add it, or use host_key_policy = tofu",
			    s->target, o->known_hosts, s->host_fp, label);
	if (known_append(o, s->target, key, keylen, err) < 0)
		return -1;
	log_info("recorded host key of %s in %s: %s (%s)", s->target, o->known_hosts,
		 s->host_fp, label);
	return 0;
}

/* Is the identity an RSA key? From FILE.pub, else from the private key
 * (PEM header or the OpenSSH container's public key). */
static int identity_is_rsa(const char *path)
{
	char *pubpath = strprintf("%s.pub", path);
	char *text = NULL;
	size_t len = 0;
	int rsa = 0;
	if (pubpath && read_file(pubpath, &text, &len) == 0) {
		rsa = strncmp(text, "ssh-rsa ", 8) == 0;
		free(text);
		free(pubpath);
		return rsa;
	}
	free(pubpath);
	if (read_file(path, &text, &len) < 0)
		return 0;
	static const char hdr[] = "-----BEGIN OPENSSH PRIVATE KEY-----";
	if (strstr(text, "-----BEGIN RSA PRIVATE KEY-----")) {
		rsa = 1;
	} else if (strncmp(text, hdr, sizeof hdr - 1) == 0) {
		struct sbuf b64 = {0};
		const char *p = text + sizeof hdr - 1;
		const char *end = strstr(p, "-----END");
		int bad = 0;
		for (; end && p < end; p++)
			if (*p != '\n' && *p != '\r' && *p != ' ' && sbuf_addc(&b64, *p) < 0)
				bad = 1;
		unsigned char *blob = NULL;
		size_t bl = 0;
		if (!bad && b64_decode(sbuf_str(&b64), b64.len, &blob, &bl) == 0) {
			/* "openssh-key-v1\0" cipher kdf kdfopts nkeys pubkey(type ...) */
			size_t off = 15;
			for (int i = 0; i < 3 && off + 4 <= bl; i++)
				off += 4 + get_u32(blob + off);
			off += 4; /* nkeys */
			if (off + 8 <= bl) {
				size_t tl = get_u32(blob + off + 4);
				rsa = tl == 7 && off + 8 + tl <= bl &&
				      memcmp(blob + off + 8, "ssh-rsa", 7) == 0;
			}
			free(blob);
		}
		sbuf_free(&b64);
	}
	free(text);
	return rsa;
}

#define RSA_MSG(file) "RSA identity %s cannot be used: libssh2 1.10 signs with ssh-rsa " \
	"(SHA-1), which OpenSSH >= 8.8 refuses; use an ed25519 key", (file)

static int authenticate(struct ssh_session *s, const struct ssh_opts *o, struct ssh_error *err)
{
	LIBSSH2_SESSION *sess = s->sess;
	unsigned ulen = (unsigned)strlen(s->user);
	char *methods = libssh2_userauth_list(sess, s->user, ulen);
	if (!methods) {
		if (libssh2_userauth_authenticated(sess))
			return 0;
		int e = libssh2_session_last_errno(sess);
		if (e == LIBSSH2_ERROR_TIMEOUT)
			return fail(err, SSH_ERR_TIMEOUT, "authentication to %s timed out", s->target);
		return fail(err, SSH_ERR_CONNECT, "authentication to %s failed: %s", s->target,
			    lib_errmsg(sess));
	}
	if (!strstr(methods, "publickey"))
		return fail(err, SSH_ERR_AUTH,
			    "%s does not offer public-key authentication for %s (offers: %s)",
			    s->target, s->user, methods);
	struct sbuf why = {0};
	int bad = 0;
	int ok = 0;
	if (o->identity) {
		if (access(o->identity, R_OK) < 0) {
			int e = errno;
			sbuf_free(&why);
			return fail(err, SSH_ERR_CONFIG, "identity %s: %s", o->identity, strerror(e));
		}
		int rc = libssh2_userauth_publickey_fromfile_ex(sess, s->user, ulen, NULL,
								o->identity, NULL);
		if (rc == 0) {
			ok = 1;
			log_debug("authenticated to %s as %s with %s", s->target, s->user,
				  o->identity);
		} else if (rc == LIBSSH2_ERROR_TIMEOUT) {
			sbuf_free(&why);
			return fail(err, SSH_ERR_TIMEOUT, "authentication to %s timed out", s->target);
		} else if (rc == LIBSSH2_ERROR_FILE) {
			bad |= sbuf_addf(&why, "identity %s cannot be loaded (unreadable, encrypted "
				   "or unsupported format; put encrypted keys in ssh-agent)",
				   o->identity) < 0;
		} else if (rc == LIBSSH2_ERROR_AUTHENTICATION_FAILED ||
			   rc == LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED) {
			if (identity_is_rsa(o->identity))
				bad |= sbuf_addf(&why, RSA_MSG(o->identity)) < 0;
			else
				bad |= sbuf_addf(&why, "identity %s was refused", o->identity) < 0;
		} else {
			sbuf_free(&why);
			return fail(err, SSH_ERR_CONNECT, "authentication to %s failed: %s",
				    s->target, lib_errmsg(sess));
		}
	}
	const char *sock = getenv("SSH_AUTH_SOCK");
	if (!ok && sock && *sock) {
		LIBSSH2_AGENT *ag = libssh2_agent_init(sess);
		int tried = 0, rsa = 0;
		if (!ag) {
			bad = 1;
		} else if (libssh2_agent_connect(ag) != 0) {
			bad |= sbuf_addf(&why, "%scannot connect to ssh-agent (SSH_AUTH_SOCK)",
					 why.len ? "; " : "") < 0;
		} else {
			if (libssh2_agent_list_identities(ag) != 0) {
				bad |= sbuf_addf(&why, "%scannot list ssh-agent identities",
						 why.len ? "; " : "") < 0;
			} else {
				struct libssh2_agent_publickey *id = NULL, *prev = NULL;
				while (!ok && libssh2_agent_get_identity(ag, &id, prev) == 0) {
					tried++;
					if (libssh2_agent_userauth(ag, s->user, id) == 0) {
						ok = 1;
						log_debug("authenticated to %s as %s with an ssh-agent key",
							  s->target, s->user);
					} else if (id->blob_len >= 11 &&
						   memcmp(id->blob + 4, "ssh-rsa", 7) == 0) {
						rsa++;
					}
					prev = id;
				}
				if (!ok)
					bad |= sbuf_addf(&why, "%sssh-agent: %d key(s) refused%s",
							 why.len ? "; " : "", tried,
							 rsa ? " (RSA keys in the agent cannot be used: "
							 "libssh2 1.10 signs with ssh-rsa (SHA-1), which "
							 "OpenSSH >= 8.8 refuses; use an ed25519 key)" : "") < 0;
			}
			libssh2_agent_disconnect(ag);
		}
		if (ag)
			libssh2_agent_free(ag);
	} else if (!ok && !o->identity) {
		bad |= sbuf_add(&why, "no identity configured and SSH_AUTH_SOCK is not set") < 0;
	}
	if (ok) {
		sbuf_free(&why);
		return 0;
	}
	if (bad) {
		sbuf_free(&why);
		return fail_oom(err);
	}
	fail(err, SSH_ERR_AUTH, "authentication as %s to %s failed: %s", s->user, s->target,
	     sbuf_str(&why));
	sbuf_free(&why);
	return -1;
}

int ssh_connect(const struct ssh_opts *o, struct ssh_session **out, struct ssh_error *err)
{
	*out = NULL;
	if (!o || !o->host || !*o->host || !o->known_hosts || !*o->known_hosts)
		return fail(err, SSH_ERR_CONFIG, "ssh: host and known_hosts are required");
	int port = o->port > 0 ? o->port : 22;
	if (port > 65535)
		return fail(err, SSH_ERR_CONFIG, "ssh: bad port %d", port);
	pthread_once(&init_once, do_init);
	if (init_rc != 0)
		return fail(err, SSH_ERR_IO, "libssh2 initialisation failed");

	struct ssh_session *s = calloc(1, sizeof *s);
	if (!s)
		return fail_oom(err);
	s->arena.next = s->arena.prev = &s->arena;
	s->fd = -1;
	s->port = port;
	s->op_timeout_ms = o->op_timeout_ms ? o->op_timeout_ms : DEFAULT_TIMEOUT_MS;
	s->keepalive_s = o->keepalive_s ? (o->keepalive_s > 0 ? o->keepalive_s : 0)
					: DEFAULT_KEEPALIVE_S;
	s->max_output = o->max_output ? o->max_output : DEFAULT_MAX_OUTPUT;
	s->host = strdup(o->host);
	s->user = strdup(o->user && *o->user ? o->user : "root");
	s->target = port == 22 ? strdup(o->host) : strprintf("[%s]:%d", o->host, port);
	if (!s->host || !s->user || !s->target) {
		ssh_close(s);
		return fail_oom(err);
	}
	long cto = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : DEFAULT_TIMEOUT_MS;
	int64_t deadline = now_ms() + cto;
	struct known k = {0};

	s->sess = libssh2_session_init_ex(arena_alloc, arena_free, arena_realloc, s);
	if (!s->sess) {
		ssh_close(s);
		return fail_oom(err);
	}
	if (known_load(s->sess, o, port, &k, err) < 0 || set_hostkey_prefs(s->sess, &k, err) < 0)
		goto bad;
	if (tcp_connect(s->host, port, deadline, &s->fd, err) < 0)
		goto bad;
	libssh2_session_set_blocking(s->sess, 1);
	int64_t left = deadline - now_ms();
	libssh2_session_set_timeout(s->sess, left > 0 ? (long)left : 1);
	int rc = libssh2_session_handshake(s->sess, s->fd);
	if (rc == LIBSSH2_ERROR_TIMEOUT) {
		fail(err, SSH_ERR_TIMEOUT, "SSH handshake with %s timed out", s->target);
		goto bad;
	}
	if (rc != 0) {
		fail(err, SSH_ERR_CONNECT, "SSH handshake with %s failed: %s", s->target,
		     lib_errmsg(s->sess));
		goto bad;
	}
	if (check_host_key(s, o, &k, err) < 0)
		goto bad;
	known_free(&k);
	left = deadline - now_ms();
	libssh2_session_set_timeout(s->sess, left > 0 ? (long)left : 1);
	if (authenticate(s, o, err) < 0)
		goto bad;
	if (s->keepalive_s > 0)
		libssh2_keepalive_config(s->sess, 1, (unsigned)s->keepalive_s);
	nonblocking_mode(s);
	log_debug("connected to %s as %s", s->target, s->user);
	*out = s;
	return 0;
bad:
	known_free(&k);
	s->broken = err ? err->kind : SSH_ERR_CONNECT;
	ssh_close(s);
	return -1;
}

void ssh_close(struct ssh_session *s)
{
	if (!s)
		return;
	if (s->sess) {
		/* A broken session (timeout, lost transport) has nothing more to
		 * say to the server, which may not answer a channel close until
		 * its command ends: shut the socket so libssh2's teardown fails
		 * fast and frees everything. (If libssh2_session_free times out
		 * instead, it frees nothing, the OpenSSL cipher state included.) */
		if (s->broken != SSH_OK && s->fd >= 0)
			shutdown(s->fd, SHUT_RDWR);
		libssh2_session_set_blocking(s->sess, 1);
		libssh2_session_set_timeout(s->sess, 2000);
		if (s->sftp)
			libssh2_sftp_shutdown(s->sftp);
		if (s->fd >= 0 && s->broken == SSH_OK)
			libssh2_session_disconnect(s->sess, "pvagent done");
		libssh2_session_free(s->sess);
	}
	arena_release(s);
	if (s->fd >= 0)
		close(s->fd);
	free(s->host);
	free(s->user);
	free(s->target);
	free(s->host_fp);
	free(s->broken_msg);
	free(s);
}

/* ---- exec ---------------------------------------------------------------------------- */

void ssh_result_free(struct ssh_result *r)
{
	if (!r)
		return;
	sbuf_free(&r->out);
	sbuf_free(&r->err);
	free(r->exit_signal);
	memset(r, 0, sizeof *r);
}

/* Drain one stream into b (up to cap). Returns bytes read (>0), 0 at EOF,
 * LIBSSH2_ERROR_EAGAIN, or another negative error. */
static ssize_t drain(LIBSSH2_CHANNEL *ch, int stream, struct sbuf *b, size_t cap,
		     bool *truncated, char *buf)
{
	ssize_t n = libssh2_channel_read_ex(ch, stream, buf, IO_CHUNK);
	if (n > 0) {
		size_t room = b->len < cap ? cap - b->len : 0;
		size_t take = (size_t)n < room ? (size_t)n : room;
		if (take < (size_t)n)
			*truncated = true;
		if (take && sbuf_addn(b, buf, take) < 0)
			return LIBSSH2_ERROR_ALLOC;
	}
	return n;
}

int ssh_exec_cmdline(struct ssh_session *s, const char *cmdline, const struct ssh_exec_opts *xo,
		     struct ssh_result *res, struct ssh_error *err)
{
	memset(res, 0, sizeof *res);
	res->exit_status = -1;
	if (check_usable(s, err) < 0)
		return -1;
	long tmo = xo && xo->timeout_ms ? xo->timeout_ms : s->op_timeout_ms;
	int64_t deadline = tmo > 0 ? now_ms() + tmo : 0;
	const char *what = "command";
	LIBSSH2_SESSION *sess = s->sess;
	LIBSSH2_CHANNEL *ch = NULL;
	char *buf = malloc(IO_CHUNK);
	if (!buf)
		return fail_oom(err);
	log_trace("exec on %s: %s", s->target, cmdline);
	int rc;
	while (!(ch = libssh2_channel_open_session(sess))) {
		if (libssh2_session_last_errno(sess) != LIBSSH2_ERROR_EAGAIN)
			goto transport;
		if (wait_socket(s, deadline, what, err) < 0)
			goto out;
	}
	while ((rc = libssh2_channel_exec(ch, cmdline)) == LIBSSH2_ERROR_EAGAIN)
		if (wait_socket(s, deadline, what, err) < 0)
			goto out;
	if (rc != 0) {
		if (rc == LIBSSH2_ERROR_CHANNEL_REQUEST_DENIED) {
			fail(err, SSH_ERR_REMOTE, "%s refused to run a command", s->target);
			goto out;
		}
		goto transport;
	}
	const char *in = xo ? xo->input : NULL;
	size_t inleft = in ? xo->input_len : 0;
	bool eof_sent = false;
	bool out_eof = false, err_eof = false;
	for (;;) {
		bool progress = false;
		if (inleft) {
			ssize_t w = libssh2_channel_write(ch, in, inleft);
			if (w > 0) {
				in += w;
				inleft -= (size_t)w;
				progress = true;
			} else if (w != LIBSSH2_ERROR_EAGAIN) {
				/* The command may exit without reading its input. */
				inleft = 0;
			}
		}
		if (!inleft && !eof_sent) {
			rc = libssh2_channel_send_eof(ch);
			if (rc == 0 || rc != LIBSSH2_ERROR_EAGAIN)
				eof_sent = true;
		}
		if (!out_eof) {
			ssize_t n = drain(ch, 0, &res->out, s->max_output, &res->truncated, buf);
			if (n > 0)
				progress = true;
			else if (n == 0)
				out_eof = libssh2_channel_eof(ch) != 0;
			else if (n == LIBSSH2_ERROR_ALLOC)
				goto oom;
			else if (n != LIBSSH2_ERROR_EAGAIN)
				goto transport;
		}
		if (!err_eof) {
			ssize_t n = drain(ch, SSH_EXTENDED_DATA_STDERR, &res->err, s->max_output,
					  &res->truncated, buf);
			if (n > 0)
				progress = true;
			else if (n == 0)
				err_eof = libssh2_channel_eof(ch) != 0;
			else if (n == LIBSSH2_ERROR_ALLOC)
				goto oom;
			else if (n != LIBSSH2_ERROR_EAGAIN)
				goto transport;
		}
		if (out_eof && err_eof)
			break;
		if (deadline && now_ms() >= deadline) {
			break_session(s, err, SSH_ERR_TIMEOUT, what);
			goto out;
		}
		/* wait_socket() returns after a short slice at the latest, so
		 * data libssh2 already buffered is read on the next pass. */
		if (!progress && wait_socket(s, deadline, what, err) < 0)
			goto out;
	}
	while (libssh2_channel_close(ch) == LIBSSH2_ERROR_EAGAIN)
		if (wait_socket(s, deadline, what, err) < 0)
			goto out;
	while (libssh2_channel_wait_closed(ch) == LIBSSH2_ERROR_EAGAIN)
		if (wait_socket(s, deadline, what, err) < 0)
			goto out;
	res->exit_status = libssh2_channel_get_exit_status(ch);
	char *sig = NULL;
	size_t siglen = 0;
	if (libssh2_channel_get_exit_signal(ch, &sig, &siglen, NULL, NULL, NULL, NULL) == 0 &&
	    sig) {
		res->exit_signal = strndup(sig, siglen);
		libssh2_free(sess, sig);
		res->exit_status = -1;
		if (!res->exit_signal)
			goto oom;
	}
	while (libssh2_channel_free(ch) == LIBSSH2_ERROR_EAGAIN)
		if (wait_socket(s, deadline, what, err) < 0)
			goto out_nofree;
	ch = NULL;
	free(buf);
	nonblocking_mode(s);
	log_debug("exec on %s: exit %d%s%s, %zu+%zu bytes of output%s", s->target,
		  res->exit_status, res->exit_signal ? " signal " : "",
		  res->exit_signal ? res->exit_signal : "", res->out.len, res->err.len,
		  res->truncated ? " (truncated)" : "");
	return 0;
oom:
	fail_oom(err);
	goto out;
transport:
	break_session(s, err, libssh2_session_last_errno(sess) == LIBSSH2_ERROR_TIMEOUT
			      ? SSH_ERR_TIMEOUT : SSH_ERR_CONNECT, what);
out:
	/* A channel left mid-way is freed with the session (which is broken
	 * after a transport error or timeout); otherwise free it here. */
	if (ch && s->broken == SSH_OK) {
		libssh2_session_set_blocking(sess, 1);
		libssh2_session_set_timeout(sess, 2000);
		libssh2_channel_free(ch);
	}
out_nofree:
	free(buf);
	if (s->broken == SSH_OK)
		nonblocking_mode(s);
	ssh_result_free(res);
	res->exit_status = -1;
	return -1;
}

int ssh_exec(struct ssh_session *s, const char *const *argv, struct ssh_result *res,
	     struct ssh_error *err)
{
	memset(res, 0, sizeof *res);
	res->exit_status = -1;
	char *cmd = ssh_build_argv(argv);
	if (!cmd)
		return errno == EINVAL ? fail(err, SSH_ERR_CONFIG, "exec: empty command")
				       : fail_oom(err);
	int rc = ssh_exec_cmdline(s, cmd, NULL, res, err);
	free(cmd);
	return rc;
}

int ssh_exec_script(struct ssh_session *s, const char *script, const char *const *args,
		    struct ssh_result *res, struct ssh_error *err)
{
	memset(res, 0, sizeof *res);
	res->exit_status = -1;
	char *cmd = ssh_build_script(script, args);
	if (!cmd)
		return errno == EINVAL
			       ? fail(err, SSH_ERR_CONFIG,
				      "exec: script placeholders (%%s) do not match the arguments")
			       : fail_oom(err);
	int rc = ssh_exec_cmdline(s, cmd, NULL, res, err);
	free(cmd);
	return rc;
}

/* ---- SFTP ------------------------------------------------------------------------------- */

static const char *fx_name(unsigned long st)
{
	switch (st) {
	case LIBSSH2_FX_EOF: return "end of file";
	case LIBSSH2_FX_NO_SUCH_FILE: return "no such file";
	case LIBSSH2_FX_PERMISSION_DENIED: return "permission denied";
	case LIBSSH2_FX_FAILURE: return "failure";
	case LIBSSH2_FX_BAD_MESSAGE: return "bad message";
	case LIBSSH2_FX_OP_UNSUPPORTED: return "operation not supported";
	case LIBSSH2_FX_NO_SUCH_PATH: return "no such path";
	case LIBSSH2_FX_FILE_ALREADY_EXISTS: return "file exists";
	case LIBSSH2_FX_WRITE_PROTECT: return "write protected";
	case LIBSSH2_FX_NO_SPACE_ON_FILESYSTEM: return "no space left";
	case LIBSSH2_FX_QUOTA_EXCEEDED: return "quota exceeded";
	case LIBSSH2_FX_NOT_A_DIRECTORY: return "not a directory";
	}
	return "error";
}

static int sftp_status_fail(struct ssh_session *s, unsigned long st, const char *what,
			    const char *path, struct ssh_error *err)
{
	enum ssh_err_kind kind = st == LIBSSH2_FX_NO_SUCH_FILE || st == LIBSSH2_FX_NO_SUCH_PATH
					 ? SSH_ERR_NOENT : SSH_ERR_REMOTE;
	fail(err, kind, "%s %s on %s: %s", what, path, s->target, fx_name(st));
	if (err)
		err->sftp_status = st;
	return -1;
}

/* Drop the SFTP subsystem after its channel failed (once the handles of
 * the current operation are closed); the next call starts a new one if the
 * connection still works. libssh2 frees no open handle at shutdown. */
static void drop_sftp(struct ssh_session *s)
{
	s->sftp_dead = 0;
	if (!s->sftp)
		return;
	libssh2_session_set_blocking(s->sess, 1);
	libssh2_session_set_timeout(s->sess, 2000);
	libssh2_sftp_shutdown(s->sftp);
	s->sftp = NULL;
	nonblocking_mode(s);
}

static int is_transport_error(int e)
{
	switch (e) {
	case LIBSSH2_ERROR_SOCKET_NONE:
	case LIBSSH2_ERROR_SOCKET_SEND:
	case LIBSSH2_ERROR_SOCKET_RECV:
	case LIBSSH2_ERROR_SOCKET_DISCONNECT:
	case LIBSSH2_ERROR_SOCKET_TIMEOUT:
	case LIBSSH2_ERROR_BAD_SOCKET:
	case LIBSSH2_ERROR_TIMEOUT:
	case LIBSSH2_ERROR_DECRYPT:
	case LIBSSH2_ERROR_INVALID_MAC:
	case LIBSSH2_ERROR_KEX_FAILURE:
	case LIBSSH2_ERROR_PROTO:
		return 1;
	}
	return 0;
}

/* A failed libssh2 SFTP call: an SFTP status; a transport failure (the
 * session is broken); or a failed SFTP channel (dropped). */
static int sftp_fail(struct ssh_session *s, const char *what, const char *path,
		     struct ssh_error *err)
{
	int e = libssh2_session_last_errno(s->sess);
	if (e == LIBSSH2_ERROR_SFTP_PROTOCOL && s->sftp)
		return sftp_status_fail(s, libssh2_sftp_last_error(s->sftp), what, path, err);
	char *w = strprintf("%s %s", what, path);
	if (is_transport_error(e)) {
		break_session(s, err, e == LIBSSH2_ERROR_TIMEOUT ? SSH_ERR_TIMEOUT : SSH_ERR_CONNECT,
			      w ? w : what);
	} else {
		fail(err, SSH_ERR_CONNECT, "%s on %s failed, SFTP channel lost: %s", w ? w : what,
		     s->target, lib_errmsg(s->sess));
		s->sftp_dead = 1;
	}
	free(w);
	return -1;
}

/* A libssh2 SFTP call said EAGAIN: wait for the socket until the call's
 * deadline. libssh2 1.10 does not notice that the SFTP channel was closed
 * (the guest's SFTP server died) and would wait forever: check here. */
static int sftp_again(struct ssh_session *s, int64_t deadline, const char *what,
		      const char *path, struct ssh_error *err)
{
	LIBSSH2_CHANNEL *ch = s->sftp ? libssh2_sftp_get_channel(s->sftp) : NULL;
	if (s->sftp_dead)
		return fail(err, SSH_ERR_CONNECT, "%s %s on %s failed: SFTP channel lost", what,
			    path, s->target);
	if (ch && libssh2_channel_eof(ch)) {
		s->sftp_dead = 1;
		return fail(err, SSH_ERR_CONNECT,
			    "%s %s on %s failed: the SFTP server closed the channel", what, path,
			    s->target);
	}
	char *w = strprintf("%s %s", what, path);
	int rc = wait_socket(s, deadline, w ? w : what, err);
	free(w);
	return rc;
}

static int64_t op_deadline(const struct ssh_session *s)
{
	return s->op_timeout_ms > 0 ? now_ms() + s->op_timeout_ms : 0;
}

/* Run an SFTP call returning a number until it is not EAGAIN; rc is the
 * result, or SFTP_GAVE_UP after a timeout or a closed channel (err set). */
#define SFTP_GAVE_UP (-10000)
#define SFTP_CALL(s, rc, call, what, path, err)                                     \
	do {                                                                        \
		int64_t dl_ = op_deadline(s);                                       \
		while (((rc) = (call)) == LIBSSH2_ERROR_EAGAIN) {                   \
			if (sftp_again((s), dl_, (what), (path), (err)) < 0) {      \
				(rc) = SFTP_GAVE_UP;                                \
				break;                                              \
			}                                                           \
		}                                                                   \
	} while (0)
/* The same for calls returning a pointer (NULL with EAGAIN: retry). */
#define SFTP_CALL_PTR(s, ptr, call, what, path, err, gave_up)                        \
	do {                                                                        \
		int64_t dl_ = op_deadline(s);                                       \
		(gave_up) = 0;                                                      \
		while (!((ptr) = (call)) &&                                         \
		       libssh2_session_last_errno((s)->sess) == LIBSSH2_ERROR_EAGAIN) { \
			if (sftp_again((s), dl_, (what), (path), (err)) < 0) {      \
				(gave_up) = 1;                                      \
				break;                                              \
			}                                                           \
		}                                                                   \
	} while (0)
/* Finish a numeric call: 0 on success, -1 with err filled. */
#define SFTP_CHECK(s, rc, what, path, err) \
	((rc) == SFTP_GAVE_UP ? -1 : (rc) < 0 ? sftp_fail((s), (what), (path), (err)) : 0)

static int sftp_ready(struct ssh_session *s, struct ssh_error *err)
{
	if (check_usable(s, err) < 0)
		return -1;
	if (s->sftp_dead)
		drop_sftp(s);
	if (s->sftp)
		return 0;
	int gave_up;
	SFTP_CALL_PTR(s, s->sftp, libssh2_sftp_init(s->sess), "SFTP start", "", err, gave_up);
	if (gave_up)
		return -1;
	if (!s->sftp) {
		int e = libssh2_session_last_errno(s->sess);
		if (is_transport_error(e))
			return break_session(s, err, SSH_ERR_CONNECT, "SFTP start");
		return fail(err, SSH_ERR_REMOTE, "cannot start SFTP on %s: %s", s->target,
			    lib_errmsg(s->sess));
	}
	return 0;
}

/* Close a handle (errors reported only when report is set). */
static int close_handle(struct ssh_session *s, LIBSSH2_SFTP_HANDLE *h, const char *path,
			int report, struct ssh_error *err)
{
	if (!s->sftp)
		return report ? fail(err, SSH_ERR_CONNECT, "close %s on %s: SFTP channel lost",
				     path, s->target) : -1;
	struct ssh_error tmp = {0};
	int rc;
	SFTP_CALL(s, rc, libssh2_sftp_close_handle(h), "close", path, report ? err : &tmp);
	if (!report) {
		if (rc < 0 && rc != SFTP_GAVE_UP)
			sftp_fail(s, "close", path, &tmp);
		ssh_error_clear(&tmp);
		return rc < 0 ? -1 : 0;
	}
	return SFTP_CHECK(s, rc, "close", path, err);
}

static void attrs_to_stat(const LIBSSH2_SFTP_ATTRIBUTES *a, struct ssh_stat *st)
{
	memset(st, 0, sizeof *st);
	st->mode = (unsigned)a->permissions;
	st->uid = (unsigned)a->uid;
	st->gid = (unsigned)a->gid;
	st->size = a->filesize;
}

static int do_stat(struct ssh_session *s, const char *path, int type, struct ssh_stat *st,
		   struct ssh_error *err)
{
	LIBSSH2_SFTP_ATTRIBUTES a;
	memset(&a, 0, sizeof a);
	int rc;
	SFTP_CALL(s, rc, libssh2_sftp_stat_ex(s->sftp, path, (unsigned)strlen(path), type, &a),
		  "stat", path, err);
	if (SFTP_CHECK(s, rc, "stat", path, err) < 0)
		return -1;
	if (!(a.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) || !(a.flags & LIBSSH2_SFTP_ATTR_UIDGID))
		return fail(err, SSH_ERR_REMOTE, "stat %s on %s: no mode or owner", path, s->target);
	attrs_to_stat(&a, st);
	return 0;
}

int ssh_stat(struct ssh_session *s, const char *path, struct ssh_stat *st,
	     struct ssh_error *err)
{
	if (sftp_ready(s, err) < 0)
		return -1;
	return do_stat(s, path, LIBSSH2_SFTP_STAT, st, err);
}

static int read_handle(struct ssh_session *s, LIBSSH2_SFTP_HANDLE *h, const char *path,
		       struct sbuf *b, struct ssh_error *err)
{
	char *chunk = malloc(IO_CHUNK);
	if (!chunk)
		return fail_oom(err);
	for (;;) {
		ssize_t n;
		SFTP_CALL(s, n, libssh2_sftp_read(h, chunk, IO_CHUNK), "read", path, err);
		if (n == 0)
			break;
		if (n < 0) {
			free(chunk);
			return SFTP_CHECK(s, n, "read", path, err);
		}
		if (sbuf_addn(b, chunk, (size_t)n) < 0) {
			free(chunk);
			return fail_oom(err);
		}
	}
	free(chunk);
	return 0;
}

int ssh_read_file(struct ssh_session *s, const char *path, char **data, size_t *len,
		  struct ssh_stat *st, struct ssh_error *err)
{
	*data = NULL;
	if (len)
		*len = 0;
	if (sftp_ready(s, err) < 0)
		return -1;
	LIBSSH2_SFTP_HANDLE *h;
	int gave_up;
	SFTP_CALL_PTR(s, h, libssh2_sftp_open_ex(s->sftp, path, (unsigned)strlen(path),
						 LIBSSH2_FXF_READ, 0, LIBSSH2_SFTP_OPENFILE),
		      "open", path, err, gave_up);
	if (gave_up)
		return -1;
	if (!h)
		return sftp_fail(s, "open", path, err);
	LIBSSH2_SFTP_ATTRIBUTES a;
	memset(&a, 0, sizeof a);
	struct sbuf b = {0};
	int rc;
	SFTP_CALL(s, rc, libssh2_sftp_fstat_ex(h, &a, 0), "stat", path, err);
	rc = SFTP_CHECK(s, rc, "stat", path, err);
	if (rc == 0 && !LIBSSH2_SFTP_S_ISREG(a.permissions))
		rc = fail(err, SSH_ERR_REMOTE, "read %s on %s: not a regular file", path, s->target);
	if (rc == 0)
		rc = read_handle(s, h, path, &b, err);
	if (close_handle(s, h, path, rc == 0, err) < 0)
		rc = -1;
	if (rc < 0) {
		sbuf_free(&b);
		return -1;
	}
	if (st)
		attrs_to_stat(&a, st);
	if (len)
		*len = b.len;
	*data = sbuf_steal(&b);
	return *data ? 0 : fail_oom(err);
}

static int do_remove(struct ssh_session *s, const char *path, struct ssh_error *err)
{
	int rc;
	SFTP_CALL(s, rc, libssh2_sftp_unlink_ex(s->sftp, path, (unsigned)strlen(path)), "remove",
		  path, err);
	if (rc == SFTP_GAVE_UP)
		return -1;
	if (rc < 0) {
		struct ssh_error e2 = {0};
		sftp_fail(s, "remove", path, &e2);
		if (e2.kind == SSH_ERR_NOENT) {
			ssh_error_clear(&e2);
			return 0;
		}
		if (err) {
			ssh_error_clear(err);
			*err = e2;
		} else {
			ssh_error_clear(&e2);
		}
		return -1;
	}
	return 0;
}

int ssh_remove(struct ssh_session *s, const char *path, struct ssh_error *err)
{
	if (sftp_ready(s, err) < 0)
		return -1;
	return do_remove(s, path, err);
}

/* Write all of buf on the SFTP channel. */
static int chan_write_all(struct ssh_session *s, LIBSSH2_CHANNEL *ch, const char *p, size_t n,
			  int64_t deadline, const char *path, struct ssh_error *err)
{
	while (n) {
		ssize_t w = libssh2_channel_write(ch, p, n);
		if (w == LIBSSH2_ERROR_EAGAIN) {
			if (sftp_again(s, deadline, "rename", path, err) < 0)
				return -1;
			continue;
		}
		if (w < 0)
			return sftp_fail(s, "rename", path, err);
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read exactly n bytes from the SFTP channel. */
static int chan_read_exact(struct ssh_session *s, LIBSSH2_CHANNEL *ch, unsigned char *p,
			   size_t n, int64_t deadline, const char *path, struct ssh_error *err)
{
	while (n) {
		ssize_t r = libssh2_channel_read(ch, (char *)p, n);
		if (r == LIBSSH2_ERROR_EAGAIN || (r == 0 && !libssh2_channel_eof(ch))) {
			if (sftp_again(s, deadline, "rename", path, err) < 0)
				return -1;
			continue;
		}
		if (r < 0)
			return sftp_fail(s, "rename", path, err);
		if (r == 0) {
			s->sftp_dead = 1;
			return fail(err, SSH_ERR_CONNECT, "rename %s on %s failed: the SFTP server "
				    "closed the channel", path, s->target);
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* posix-rename@openssh.com: rename(2) on the server, replacing the target
 * atomically. Sent directly on the SFTP channel (libssh2 1.10 has no API
 * for it); at this point no libssh2 SFTP request is outstanding. */
static int sftp_posix_rename(struct ssh_session *s, const char *from, const char *to,
			     struct ssh_error *err)
{
	LIBSSH2_CHANNEL *ch = libssh2_sftp_get_channel(s->sftp);
	static const char ext[] = "posix-rename@openssh.com";
	uint32_t id = 0x7a000000u | (s->ext_id++ & 0xffffffu);
	struct sbuf body = {0}, pkt = {0};
	int bad = 0;
	if (sbuf_addc(&body, (char)200) < 0) /* SSH_FXP_EXTENDED */
		bad = 1;
	put_u32(&body, id, &bad);
	put_str(&body, ext, sizeof ext - 1, &bad);
	put_str(&body, from, strlen(from), &bad);
	put_str(&body, to, strlen(to), &bad);
	put_u32(&pkt, (uint32_t)body.len, &bad);
	if (sbuf_addn(&pkt, sbuf_str(&body), body.len) < 0)
		bad = 1;
	sbuf_free(&body);
	if (bad) {
		sbuf_free(&pkt);
		return fail_oom(err);
	}
	int64_t deadline = op_deadline(s);
	int rc = chan_write_all(s, ch, pkt.s, pkt.len, deadline, from, err);
	sbuf_free(&pkt);
	if (rc < 0)
		return -1;
	/* Skip any reply that is not ours (there should be none). */
	for (int skipped = 0; skipped < 64; skipped++) {
		unsigned char hdr[4];
		if (chan_read_exact(s, ch, hdr, 4, deadline, from, err) < 0)
			return -1;
		uint32_t plen = get_u32(hdr);
		if (plen < 5 || plen > (1u << 20))
			return break_session(s, err, SSH_ERR_CONNECT, "rename (bad SFTP reply)");
		unsigned char *rest = malloc(plen);
		if (!rest)
			return fail_oom(err);
		if (chan_read_exact(s, ch, rest, plen, deadline, from, err) < 0) {
			free(rest);
			return -1;
		}
		uint32_t rid = get_u32(rest + 1);
		if (rest[0] != 101 /* SSH_FXP_STATUS */ || rid != id || plen < 9) {
			free(rest);
			continue;
		}
		uint32_t code = get_u32(rest + 5);
		free(rest);
		if (code == 0)
			return 0;
		char *what = strprintf("rename to %s:", to);
		sftp_status_fail(s, code, what ? what : "rename", from, err);
		free(what);
		return -1;
	}
	return break_session(s, err, SSH_ERR_CONNECT, "rename (no SFTP reply)");
}

static int random_hex(char *out, size_t nbytes)
{
	unsigned char r[16];
	if (nbytes > sizeof r)
		return -1;
	size_t got = 0;
	while (got < nbytes) {
		ssize_t n = getrandom(r + got, nbytes - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t)n;
	}
	for (size_t i = 0; i < nbytes; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	return 0;
}

struct owner {
	int have;       /* 0: new file, keep the SSH user's owner */
	unsigned uid, gid;
	unsigned perms; /* permission bits (07777) */
};

/* Write data to target through a temp file + fsync + posix-rename. */
static int put_atomic(struct ssh_session *s, const char *target, const void *data, size_t len,
		      const struct owner *own, struct ssh_error *err)
{
	char rnd[33];
	if (random_hex(rnd, 8) < 0)
		return fail(err, SSH_ERR_IO, "getrandom: %s", strerror(errno));
	char *tmp = strprintf("%s%s%s", target, SSH_TEMP_INFIX, rnd);
	if (!tmp)
		return fail_oom(err);
	int rc = -1, crc;
	int gave_up;
	LIBSSH2_SFTP_HANDLE *h;
	SFTP_CALL_PTR(s, h, libssh2_sftp_open_ex(s->sftp, tmp, (unsigned)strlen(tmp),
						 LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT |
						 LIBSSH2_FXF_EXCL | LIBSSH2_FXF_TRUNC,
						 0600, LIBSSH2_SFTP_OPENFILE),
		      "create", tmp, err, gave_up);
	if (!h) {
		if (!gave_up)
			sftp_fail(s, "create", tmp, err);
		free(tmp);
		return -1;
	}
	/* One request at a time: when libssh2 1.10 pipelines several write
	 * requests and one fails, it drops the others even if one was only
	 * partly sent, which desynchronises the SFTP stream (every later
	 * request then times out). A call of at most one chunk (its
	 * MAX_SFTP_OUTGOING_SIZE, 30000) is acknowledged before it returns. */
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t n;
		SFTP_CALL(s, n, libssh2_sftp_write(h, p, left < SFTP_WRITE_CHUNK ? left
									: SFTP_WRITE_CHUNK),
			  "write", tmp, err);
		if (n < 0) {
			SFTP_CHECK(s, n, "write", tmp, err);
			goto out;
		}
		p += n;
		left -= (size_t)n;
	}
	LIBSSH2_SFTP_ATTRIBUTES a;
	if (own->have) {
		memset(&a, 0, sizeof a);
		SFTP_CALL(s, crc, libssh2_sftp_fstat_ex(h, &a, 0), "stat", tmp, err);
		if (SFTP_CHECK(s, crc, "stat", tmp, err) < 0)
			goto out;
		if (a.uid != own->uid || a.gid != own->gid) {
			memset(&a, 0, sizeof a);
			a.flags = LIBSSH2_SFTP_ATTR_UIDGID;
			a.uid = own->uid;
			a.gid = own->gid;
			SFTP_CALL(s, crc, libssh2_sftp_fstat_ex(h, &a, 1), "chown", tmp, err);
			if (SFTP_CHECK(s, crc, "chown", tmp, err) < 0)
				goto out;
		}
	}
	memset(&a, 0, sizeof a);
	a.flags = LIBSSH2_SFTP_ATTR_PERMISSIONS;
	a.permissions = own->perms & 07777;
	SFTP_CALL(s, crc, libssh2_sftp_fstat_ex(h, &a, 1), "chmod", tmp, err);
	if (SFTP_CHECK(s, crc, "chmod", tmp, err) < 0)
		goto out;
	SFTP_CALL(s, crc, libssh2_sftp_fsync(h), "fsync", tmp, err);
	if (crc == SFTP_GAVE_UP)
		goto out;
	if (crc < 0) {
		int e = libssh2_session_last_errno(s->sess);
		if (e == LIBSSH2_ERROR_SFTP_PROTOCOL &&
		    libssh2_sftp_last_error(s->sftp) == LIBSSH2_FX_OP_UNSUPPORTED) {
			log_warn("%s does not support fsync@openssh.com; %s written without fsync",
				 s->target, target);
		} else {
			sftp_fail(s, "fsync", tmp, err);
			goto out;
		}
	}
	crc = close_handle(s, h, tmp, 1, err);
	h = NULL;
	if (crc < 0)
		goto out;
	if (sftp_posix_rename(s, tmp, target, err) < 0)
		goto out;
	rc = 0;
out:
	if (h && s->sftp)
		close_handle(s, h, tmp, 0, NULL);
	if (rc < 0 && s->sftp && !s->sftp_dead && s->broken == SSH_OK) {
		struct ssh_error e2 = {0};
		if (do_remove(s, tmp, &e2) < 0)
			log_warn("could not remove %s on %s (%s); the next write removes it", tmp,
				 s->target, ssh_error_str(&e2));
		ssh_error_clear(&e2);
	} else if (rc < 0) {
		log_warn("%s may be left on %s; the next write removes it", tmp, s->target);
	}
	free(tmp);
	return rc;
}

/* Remove TARGET.pvagent.tmp.* and TARGET.pvagent.bak.pvagent.tmp.* left by
 * an interrupted write. */
static int clean_stale(struct ssh_session *s, const char *target, struct ssh_error *err)
{
	const char *slash = strrchr(target, '/');
	char *dir = slash ? (slash == target ? strdup("/") : strndup(target, (size_t)(slash - target)))
			  : strdup(".");
	const char *base = slash ? slash + 1 : target;
	char *pfx1 = strprintf("%s%s", base, SSH_TEMP_INFIX);
	char *pfx2 = strprintf("%s%s%s", base, SSH_BACKUP_SUFFIX, SSH_TEMP_INFIX);
	char *name = malloc(4096);
	struct sbuf stale = {0};
	int rc = 0;
	if (!dir || !pfx1 || !pfx2 || !name) {
		rc = fail_oom(err);
		goto done;
	}
	LIBSSH2_SFTP_HANDLE *d;
	int gave_up;
	SFTP_CALL_PTR(s, d, libssh2_sftp_open_ex(s->sftp, dir, (unsigned)strlen(dir), 0, 0,
						 LIBSSH2_SFTP_OPENDIR),
		      "list", dir, err, gave_up);
	if (!d) {
		rc = gave_up ? -1 : sftp_fail(s, "list", dir, err);
		goto done;
	}
	for (;;) {
		LIBSSH2_SFTP_ATTRIBUTES a;
		int n;
		SFTP_CALL(s, n, libssh2_sftp_readdir_ex(d, name, 4096, NULL, 0, &a), "list", dir,
			  err);
		if (n == 0)
			break;
		if (n < 0) {
			rc = SFTP_CHECK(s, n, "list", dir, err);
			break;
		}
		if ((strncmp(name, pfx1, strlen(pfx1)) == 0 || strncmp(name, pfx2, strlen(pfx2)) == 0) &&
		    (sbuf_add(&stale, name) < 0 || sbuf_addc(&stale, '\0') < 0)) {
			rc = fail_oom(err);
			break;
		}
	}
	if (close_handle(s, d, dir, rc == 0, err) < 0)
		rc = -1;
	for (size_t off = 0; rc == 0 && off < stale.len; off += strlen(stale.s + off) + 1) {
		char *path = strprintf("%s%s%s", dir, strcmp(dir, "/") ? "/" : "", stale.s + off);
		if (!path) {
			rc = fail_oom(err);
			break;
		}
		log_info("removing %s on %s, left by an interrupted write", path, s->target);
		rc = do_remove(s, path, err);
		free(path);
	}
done:
	sbuf_free(&stale);
	free(dir);
	free(pfx1);
	free(pfx2);
	free(name);
	return rc;
}

int ssh_write_file_atomic(struct ssh_session *s, const char *path, const void *data,
			  size_t len, unsigned flags, unsigned create_mode, bool *changed,
			  struct ssh_error *err)
{
	if (changed)
		*changed = false;
	if (sftp_ready(s, err) < 0)
		return -1;
	char *target = strdup(path);
	char *orig = NULL;
	size_t olen = 0;
	char *bak = NULL;
	int rc = -1;
	struct ssh_stat st = {0};
	struct ssh_error e2 = {0};
	if (!target)
		return fail_oom(err);
	/* Follow a symlink: replace the file it names, keep the link. */
	if (do_stat(s, target, LIBSSH2_SFTP_LSTAT, &st, &e2) == 0 &&
	    LIBSSH2_SFTP_S_ISLNK(st.mode)) {
		char *real = malloc(4096);
		if (!real) {
			fail_oom(err);
			goto out;
		}
		int n;
		SFTP_CALL(s, n, libssh2_sftp_symlink_ex(s->sftp, target, (unsigned)strlen(target),
							real, 4096, LIBSSH2_SFTP_REALPATH),
			  "resolve", target, err);
		if (n < 0 || n >= 4096) {
			free(real);
			if (n < 0)
				SFTP_CHECK(s, n, "resolve", target, err);
			else
				fail(err, SSH_ERR_REMOTE, "resolve %s on %s: path too long", target,
				     s->target);
			goto out;
		}
		real[n] = '\0';
		free(target);
		target = real;
	} else if (e2.kind != SSH_OK && e2.kind != SSH_ERR_NOENT) {
		goto pass_e2;
	}
	ssh_error_clear(&e2);
	struct owner own = {0};
	int exists = 0;
	if (ssh_read_file(s, target, &orig, &olen, &st, &e2) == 0) {
		exists = 1;
		own.have = 1;
		own.uid = st.uid;
		own.gid = st.gid;
		own.perms = st.mode & 07777;
	} else if (e2.kind == SSH_ERR_NOENT && !(flags & SSH_WRITE_MUST_EXIST)) {
		own.perms = create_mode ? create_mode & 07777 : 0644;
	} else {
		goto pass_e2;
	}
	ssh_error_clear(&e2);
	if (exists && olen == len && (len == 0 || memcmp(orig, data, len) == 0)) {
		log_debug("%s on %s already has the wanted content", target, s->target);
		rc = 0;
		goto out;
	}
	if (clean_stale(s, target, err) < 0)
		goto out;
	if ((flags & SSH_WRITE_BACKUP) && exists) {
		bak = strprintf("%s%s", target, SSH_BACKUP_SUFFIX);
		if (!bak) {
			fail_oom(err);
			goto out;
		}
		struct ssh_stat bst;
		if (do_stat(s, bak, LIBSSH2_SFTP_LSTAT, &bst, &e2) == 0) {
			log_debug("keeping the existing backup %s on %s", bak, s->target);
		} else if (e2.kind == SSH_ERR_NOENT) {
			ssh_error_clear(&e2);
			if (put_atomic(s, bak, orig, olen, &own, err) < 0)
				goto out;
			log_debug("backup %s written on %s", bak, s->target);
		} else {
			goto pass_e2;
		}
	}
	if (put_atomic(s, target, data, len, &own, err) < 0)
		goto out;
	if (changed)
		*changed = true;
	log_debug("wrote %s on %s (%zu bytes)", target, s->target, len);
	rc = 0;
	goto out;
pass_e2:
	if (err) {
		ssh_error_clear(err);
		*err = e2;
		e2 = (struct ssh_error){0};
	}
out:
	ssh_error_clear(&e2);
	free(target);
	free(orig);
	free(bak);
	return rc;
}
