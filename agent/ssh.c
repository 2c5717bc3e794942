/* ssh.c - SSH sessions on libssh2 1.10 (see ssh.h): errors, connect with
 * timeouts, known_hosts checking (strict/tofu), public-key and agent auth,
 * the allocation arena, keepalive and the waiting every later call does.
 * Command execution is in ssh_exec.c, SFTP in ssh_sftp.c, the quoting of
 * what reaches a remote shell in ssh_quote.c; what they share of a session
 * is in ssh_int.h. */
#include "ssh_int.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 30000L
#define DEFAULT_KEEPALIVE_S 15
#define DEFAULT_MAX_OUTPUT ((size_t)1 << 20)

#define BLK_HDR ((sizeof(struct blk) + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) * \
		 _Alignof(max_align_t))

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

enum job_outcome ssh_error_outcome(const struct ssh_error *e)
{
	switch (e->kind) {
	case SSH_OK: return JOB_OUT_DONE;
	case SSH_ERR_CONFIG: return JOB_OUT_USAGE;
	case SSH_ERR_CONNECT:
	case SSH_ERR_TIMEOUT:
	case SSH_ERR_HOSTKEY_UNKNOWN:
	case SSH_ERR_HOSTKEY_CHANGED:
	case SSH_ERR_AUTH: return JOB_OUT_UNREACHABLE;
	case SSH_ERR_NOENT:
	case SSH_ERR_REMOTE:
	case SSH_ERR_IO: return JOB_OUT_FAILED;
	}
	return JOB_OUT_FAILED;
}

const char *ssh_error_str(const struct ssh_error *e)
{
	return e->msg ? e->msg : ssh_err_kind_name(e->kind);
}

int sshi_fail(struct ssh_error *e, enum ssh_err_kind kind, const char *fmt, ...)
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

int sshi_fail_oom(struct ssh_error *e)
{
	return sshi_fail(e, SSH_ERR_IO, "out of memory");
}
/* ---- small helpers ----------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;

static void do_init(void)
{
	init_rc = libssh2_init(0);
}

int64_t sshi_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *sshi_lib_errmsg(LIBSSH2_SESSION *sess)
{
	char *msg = NULL;
	libssh2_session_last_error(sess, &msg, NULL, 0);
	return msg && *msg ? msg : "unknown libssh2 error";
}

uint32_t sshi_get_u32(const unsigned char *p)
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

int sshi_check_usable(struct ssh_session *s, struct ssh_error *err)
{
	if (s->broken == SSH_OK)
		return 0;
	return sshi_fail(err, s->broken, "%s", s->broken_msg ? s->broken_msg : "session unusable");
}

/* Record a transport-level failure: the session cannot be used any more. */
int sshi_break_session(struct ssh_session *s, struct ssh_error *err,
		       enum ssh_err_kind kind, const char *what)
{
	if (kind == SSH_ERR_TIMEOUT)
		sshi_fail(err, kind, "%s on %s timed out", what, s->target);
	else
		sshi_fail(err, kind, "connection to %s lost during %s: %s", s->target,
			  what, sshi_lib_errmsg(s->sess));
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
	if (sshi_check_usable(s, err) < 0)
		return -1;
	int next = 0;
	int rc = s->keepalive_s > 0 ? libssh2_keepalive_send(s->sess, &next) : 0;
	if (rc != 0 && rc != LIBSSH2_ERROR_EAGAIN)
		return sshi_break_session(s, err, SSH_ERR_CONNECT, "keepalive");
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
int sshi_wait_socket(struct ssh_session *s, int64_t deadline, const char *what,
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
		int64_t left = deadline - sshi_now_ms();
		if (left <= 0)
			return sshi_break_session(s, err, SSH_ERR_TIMEOUT, what);
		if (left < ms)
			ms = (int)left;
	}
	int n;
	while ((n = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return sshi_fail(err, SSH_ERR_IO, "poll: %s", strerror(errno));
	if (n == 0 && s->keepalive_s > 0) {
		int next = 0;
		int rc = libssh2_keepalive_send(s->sess, &next);
		if (rc != 0 && rc != LIBSSH2_ERROR_EAGAIN)
			return sshi_break_session(s, err, SSH_ERR_CONNECT, what);
	}
	return 0;
}

/* After connecting, the session stays non-blocking: every call waits in
 * sshi_wait_socket() with its own deadline. */
void sshi_nonblocking_mode(struct ssh_session *s)
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
		return sshi_fail(err, SSH_ERR_CONNECT, "cannot resolve %s: %s", host,
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
				int64_t left = deadline - sshi_now_ms();
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
		return sshi_fail(err, SSH_ERR_TIMEOUT, "connecting to %s port %d timed out", host,
				 port);
	return sshi_fail(err, SSH_ERR_CONNECT, "cannot connect to %s port %d: %s", host, port,
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
		return sshi_fail_oom(err);
	char *text = NULL;
	size_t len = 0;
	if (read_file(o->known_hosts, &text, &len) < 0) {
		if (errno != ENOENT)
			return sshi_fail(err, SSH_ERR_CONFIG, "cannot read known_hosts %s: %s",
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
				return sshi_fail_oom(err);
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
		return sshi_fail_oom(err);
	}
	int rc = libssh2_session_method_pref(sess, LIBSSH2_METHOD_HOSTKEY, sbuf_str(&b));
	sbuf_free(&b);
	if (rc != 0)
		return sshi_fail(err, SSH_ERR_CONFIG, "cannot set host key preferences: %s",
				 sshi_lib_errmsg(sess));
	return 0;
}

static int known_append(const struct ssh_opts *o, const char *target, const char *key,
			size_t keylen, struct ssh_error *err)
{
	/* The key type is the first string of the blob. */
	if (keylen < 4 || sshi_get_u32((const unsigned char *)key) > keylen - 4)
		return sshi_fail(err, SSH_ERR_CONNECT, "malformed host key from %s", target);
	uint32_t tlen = sshi_get_u32((const unsigned char *)key);
	char *b64 = b64_encode((const unsigned char *)key, keylen);
	if (!b64)
		return sshi_fail_oom(err);
	char *line = strprintf("%s %.*s %s\n", target, (int)tlen, key + 4, b64);
	free(b64);
	if (!line)
		return sshi_fail_oom(err);
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
		return sshi_fail(err, SSH_ERR_IO, "cannot record the host key in %s: %s",
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
		return sshi_fail(err, SSH_ERR_IO, "cannot record the host key in %s: %s",
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
		return sshi_fail(err, SSH_ERR_CONNECT, "no host key from %s", s->target);
	size_t ti = N_KEY_TYPES;
	for (size_t i = 0; i < N_KEY_TYPES; i++)
		if (key_types[i].hk_type == type)
			ti = i;
	s->host_fp = ssh_fingerprint((const unsigned char *)key, keylen);
	if (!s->host_fp)
		return sshi_fail_oom(err);
	if (ti == N_KEY_TYPES)
		return sshi_fail(err, SSH_ERR_CONNECT,
				 "host key of %s has a type libssh2 cannot check", s->target);
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
		return sshi_fail(err, SSH_ERR_CONFIG,
				 "cannot check the host key of %s against %s: %s", s->target,
				 o->known_hosts, sshi_lib_errmsg(s->sess));
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
			return sshi_fail_oom(err);
		}
		sshi_fail(err, SSH_ERR_HOSTKEY_CHANGED,
			  "HOST KEY CHANGED for %s: %s has %s, the server presented %s (%s); "
			  "refusing to connect (possible man-in-the-middle). If the guest was "
			  "reinstalled, remove the old entry: ssh-keygen -R '%s' -f %s",
			  s->target, o->known_hosts, sbuf_str(&old), s->host_fp, label, s->target,
			  o->known_hosts);
		sbuf_free(&old);
		return -1;
	}
	if (o->policy != SSH_HKP_TOFU)
		return sshi_fail(err, SSH_ERR_HOSTKEY_UNKNOWN,
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
				off += 4 + sshi_get_u32(blob + off);
			off += 4; /* nkeys */
			if (off + 8 <= bl) {
				size_t tl = sshi_get_u32(blob + off + 4);
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
			return sshi_fail(err, SSH_ERR_TIMEOUT, "authentication to %s timed out", s->target);
		return sshi_fail(err, SSH_ERR_CONNECT, "authentication to %s failed: %s", s->target,
				 sshi_lib_errmsg(sess));
	}
	if (!strstr(methods, "publickey"))
		return sshi_fail(err, SSH_ERR_AUTH,
				 "%s does not offer public-key authentication for %s (offers: %s)",
				 s->target, s->user, methods);
	struct sbuf why = {0};
	int bad = 0;
	int ok = 0;
	if (o->identity) {
		if (access(o->identity, R_OK) < 0) {
			int e = errno;
			sbuf_free(&why);
			return sshi_fail(err, SSH_ERR_CONFIG, "identity %s: %s", o->identity, strerror(e));
		}
		int rc = libssh2_userauth_publickey_fromfile_ex(sess, s->user, ulen, NULL,
								o->identity, NULL);
		if (rc == 0) {
			ok = 1;
			log_debug("authenticated to %s as %s with %s", s->target, s->user,
				  o->identity);
		} else if (rc == LIBSSH2_ERROR_TIMEOUT) {
			sbuf_free(&why);
			return sshi_fail(err, SSH_ERR_TIMEOUT, "authentication to %s timed out", s->target);
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
			return sshi_fail(err, SSH_ERR_CONNECT, "authentication to %s failed: %s",
					 s->target, sshi_lib_errmsg(sess));
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
		return sshi_fail_oom(err);
	}
	sshi_fail(err, SSH_ERR_AUTH, "authentication as %s to %s failed: %s", s->user, s->target,
		  sbuf_str(&why));
	sbuf_free(&why);
	return -1;
}

int ssh_connect(const struct ssh_opts *o, struct ssh_session **out, struct ssh_error *err)
{
	*out = NULL;
	if (!o || !o->host || !*o->host || !o->known_hosts || !*o->known_hosts)
		return sshi_fail(err, SSH_ERR_CONFIG, "ssh: host and known_hosts are required");
	int port = o->port > 0 ? o->port : 22;
	if (port > 65535)
		return sshi_fail(err, SSH_ERR_CONFIG, "ssh: bad port %d", port);
	pthread_once(&init_once, do_init);
	if (init_rc != 0)
		return sshi_fail(err, SSH_ERR_IO, "libssh2 initialisation failed");

	struct ssh_session *s = calloc(1, sizeof *s);
	if (!s)
		return sshi_fail_oom(err);
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
		return sshi_fail_oom(err);
	}
	long cto = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : DEFAULT_TIMEOUT_MS;
	int64_t deadline = sshi_now_ms() + cto;
	struct known k = {0};

	s->sess = libssh2_session_init_ex(arena_alloc, arena_free, arena_realloc, s);
	if (!s->sess) {
		ssh_close(s);
		return sshi_fail_oom(err);
	}
	if (known_load(s->sess, o, port, &k, err) < 0 || set_hostkey_prefs(s->sess, &k, err) < 0)
		goto bad;
	if (tcp_connect(s->host, port, deadline, &s->fd, err) < 0)
		goto bad;
	libssh2_session_set_blocking(s->sess, 1);
	int64_t left = deadline - sshi_now_ms();
	libssh2_session_set_timeout(s->sess, left > 0 ? (long)left : 1);
	int rc = libssh2_session_handshake(s->sess, s->fd);
	if (rc == LIBSSH2_ERROR_TIMEOUT) {
		sshi_fail(err, SSH_ERR_TIMEOUT, "SSH handshake with %s timed out", s->target);
		goto bad;
	}
	if (rc != 0) {
		sshi_fail(err, SSH_ERR_CONNECT, "SSH handshake with %s failed: %s", s->target,
			  sshi_lib_errmsg(s->sess));
		goto bad;
	}
	if (check_host_key(s, o, &k, err) < 0)
		goto bad;
	known_free(&k);
	left = deadline - sshi_now_ms();
	libssh2_session_set_timeout(s->sess, left > 0 ? (long)left : 1);
	if (authenticate(s, o, err) < 0)
		goto bad;
	if (s->keepalive_s > 0)
		libssh2_keepalive_config(s->sess, 1, (unsigned)s->keepalive_s);
	sshi_nonblocking_mode(s);
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
