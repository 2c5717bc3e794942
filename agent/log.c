/* log.c - leveled logging with secret redaction (see log.h): the level, the
 * output sink, the registry of secrets and the credential-pattern masks. */
#include "log.h"

#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MASK "***"

/* One registered secret (raw or percent-encoded form) with a use count. */
struct secret {
	char *s;
	size_t len;
	unsigned refs;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER; /* secrets */
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER; /* level, sink */
static struct secret *secrets;
static size_t n_secrets, cap_secrets;

static enum log_level cur_level = LOGL_INFO;
static log_sink_fn sink_fn;
static void *sink_ctx;
static const char *ident = "pvagent";

void log_set_level(enum log_level lvl)
{
	pthread_mutex_lock(&out_mu);
	cur_level = lvl;
	pthread_mutex_unlock(&out_mu);
}

enum log_level log_get_level(void)
{
	pthread_mutex_lock(&out_mu);
	enum log_level l = cur_level;
	pthread_mutex_unlock(&out_mu);
	return l;
}

int log_enabled(enum log_level lvl)
{
	return lvl <= log_get_level();
}

enum log_level log_level_from_verbosity(int v)
{
	if (v <= -2)
		return LOGL_ERROR;
	if (v == -1)
		return LOGL_WARN;
	if (v == 0)
		return LOGL_INFO;
	if (v == 1)
		return LOGL_DEBUG;
	return LOGL_TRACE;
}

const char *log_level_name(enum log_level lvl)
{
	switch (lvl) {
	case LOGL_ERROR: return "error";
	case LOGL_WARN: return "warning";
	case LOGL_INFO: return "info";
	case LOGL_DEBUG: return "debug";
	case LOGL_TRACE: return "trace";
	}
	return "?";
}

void log_set_sink(log_sink_fn fn, void *ctx)
{
	pthread_mutex_lock(&out_mu);
	sink_fn = fn;
	sink_ctx = ctx;
	pthread_mutex_unlock(&out_mu);
}

/* Caller holds out_mu (log_vmsg, or a sink it called). */
static void print_stderr(enum log_level lvl, const char *line)
{
	if (lvl == LOGL_INFO || lvl == LOGL_ERROR) /* an error: "pvagent COMMAND: text" */
		fprintf(stderr, "%s: %s\n", ident, line);
	else
		fprintf(stderr, "%s: %s: %s\n", ident, log_level_name(lvl), line);
}

void log_set_ident(const char *id)
{
	pthread_mutex_lock(&out_mu);
	ident = id ? id : "pvagent";
	pthread_mutex_unlock(&out_mu);
}

/* ---- secret registry ---------------------------------------------------- */

static int unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

/* Percent-encoded form of s (every byte but unreserved ones as %XX). */
static char *pct_encode(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	struct sbuf b = {0};
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
		if (unreserved(*p) ? sbuf_addc(&b, (char)*p) : sbuf_addn(&b, e, 3)) {
			sbuf_free(&b);
			return NULL;
		}
	}
	return sbuf_steal(&b);
}

/* Caller holds reg_mu. */
static int secret_ref(const char *s)
{
	for (size_t i = 0; i < n_secrets; i++) {
		if (strcmp(secrets[i].s, s) == 0) {
			secrets[i].refs++;
			return 0;
		}
	}
	if (n_secrets == cap_secrets) {
		size_t cap = cap_secrets ? cap_secrets * 2 : 8;
		struct secret *v = realloc(secrets, cap * sizeof *v);
		if (!v)
			return -1;
		secrets = v;
		cap_secrets = cap;
	}
	char *copy = strdup(s);
	if (!copy)
		return -1;
	/* Keep the list sorted longest first so a secret containing another
	 * one is masked whole. */
	size_t len = strlen(s), at = 0;
	while (at < n_secrets && secrets[at].len >= len)
		at++;
	memmove(secrets + at + 1, secrets + at, (n_secrets - at) * sizeof *secrets);
	secrets[at] = (struct secret){copy, len, 1};
	n_secrets++;
	return 0;
}

/* Caller holds reg_mu. */
static void secret_unref(const char *s)
{
	for (size_t i = 0; i < n_secrets; i++) {
		if (strcmp(secrets[i].s, s) != 0)
			continue;
		if (--secrets[i].refs == 0) {
			free(secrets[i].s);
			memmove(secrets + i, secrets + i + 1,
				(n_secrets - i - 1) * sizeof *secrets);
			n_secrets--;
		}
		return;
	}
}

int log_secret_add(const char *secret)
{
	if (!secret || !*secret)
		return 0;
	char *enc = pct_encode(secret);
	pthread_mutex_lock(&reg_mu);
	int rc = secret_ref(secret);
	if (rc == 0 && enc && strcmp(enc, secret) != 0 && secret_ref(enc) < 0) {
		secret_unref(secret);
		rc = -1;
	}
	pthread_mutex_unlock(&reg_mu);
	if (!enc)
		rc = -1;
	free(enc);
	return rc;
}

void log_secret_remove(const char *secret)
{
	if (!secret || !*secret)
		return;
	char *enc = pct_encode(secret);
	pthread_mutex_lock(&reg_mu);
	secret_unref(secret);
	if (enc && strcmp(enc, secret) != 0)
		secret_unref(enc);
	pthread_mutex_unlock(&reg_mu);
	free(enc);
}

void log_secret_clear(void)
{
	pthread_mutex_lock(&reg_mu);
	for (size_t i = 0; i < n_secrets; i++)
		free(secrets[i].s);
	free(secrets);
	secrets = NULL;
	n_secrets = cap_secrets = 0;
	pthread_mutex_unlock(&reg_mu);
}

/* ---- redaction ---------------------------------------------------------- */

/* Pass 1: registered secrets. */
static int mask_registered(const char *s, struct sbuf *out)
{
	int rc = 0;
	pthread_mutex_lock(&reg_mu);
	for (const char *p = s; *p && rc == 0;) {
		size_t hit = 0;
		for (size_t i = 0; i < n_secrets; i++) {
			if (strncmp(p, secrets[i].s, secrets[i].len) == 0) {
				hit = secrets[i].len;
				break;
			}
		}
		if (hit) {
			rc = sbuf_add(out, MASK);
			p += hit;
		} else {
			size_t run = 1;
			rc = sbuf_addn(out, p, run);
			p += run;
		}
	}
	pthread_mutex_unlock(&reg_mu);
	return rc;
}

enum pat_kind {
	PAT_FORM,   /* NAME=value up to a delimiter */
	PAT_TOKEN,  /* PVEAPIToken=ID=secret */
	PAT_HEADER, /* NAME: value or NAME=value */
	PAT_JSON,   /* NAME" : "value" */
};

static const struct pattern {
	const char *needle;
	enum pat_kind kind;
} patterns[] = {
	{"PVEAPIToken", PAT_TOKEN},
	{"PVEAuthCookie=", PAT_FORM},
	{"password=", PAT_FORM},
	{"CSRFPreventionToken\"", PAT_JSON},
	{"CSRFPreventionToken", PAT_HEADER},
	{"password\"", PAT_JSON},
	{"ticket\"", PAT_JSON},
	{"secret\"", PAT_JSON},
};

static int value_end(char c)
{
	return c == '\0' || c == '&' || c == ';' || c == ',' || c == '"' ||
	       c == '\'' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Try one pattern at p. On a match, append the kept prefix and the mask to
 * out, and return the number of input bytes consumed; else 0. */
static size_t try_pattern(const struct pattern *pt, const char *p, struct sbuf *out,
			  int *err)
{
	size_t nl = strlen(pt->needle);
	if (strncasecmp(p, pt->needle, nl) != 0)
		return 0;
	size_t i = nl;
	switch (pt->kind) {
	case PAT_FORM:
		break;
	case PAT_TOKEN:
		if (p[i] != '=' && p[i] != ' ')
			return 0;
		i++;
		while (p[i] && p[i] != '=' && !value_end(p[i]))
			i++;
		if (p[i] != '=')
			return 0;
		i++;
		break;
	case PAT_HEADER:
		while (p[i] == ' ')
			i++;
		if (p[i] != ':' && p[i] != '=')
			return 0;
		i++;
		while (p[i] == ' ')
			i++;
		break;
	case PAT_JSON:
		while (p[i] == ' ')
			i++;
		if (p[i] != ':')
			return 0;
		i++;
		while (p[i] == ' ')
			i++;
		if (p[i] != '"')
			return 0;
		i++;
		break;
	}
	size_t v = i;
	if (pt->kind == PAT_JSON) {
		while (p[v] && p[v] != '"')
			v += (p[v] == '\\' && p[v + 1]) ? 2 : 1;
	} else {
		while (!value_end(p[v]))
			v++;
	}
	if (v == i)
		return 0;
	if (sbuf_addn(out, p, i) < 0 || sbuf_add(out, MASK) < 0)
		*err = -1;
	return v;
}

/* Pass 2: credential patterns. */
static int mask_patterns(const char *s, struct sbuf *out)
{
	int err = 0;
	for (const char *p = s; *p && !err;) {
		size_t used = 0;
		for (size_t k = 0; k < sizeof patterns / sizeof *patterns && !used; k++)
			used = try_pattern(&patterns[k], p, out, &err);
		if (used) {
			p += used;
		} else {
			err = sbuf_addc(out, *p);
			p++;
		}
	}
	return err;
}

char *log_redact(const char *s)
{
	struct sbuf a = {0}, b = {0};
	if (!s)
		s = "";
	if (mask_registered(s, &a) < 0 || mask_patterns(sbuf_str(&a), &b) < 0) {
		sbuf_free(&a);
		sbuf_free(&b);
		return NULL;
	}
	sbuf_free(&a);
	return sbuf_steal(&b);
}

/* ---- output ------------------------------------------------------------- */

void log_vmsg(enum log_level lvl, const char *fmt, va_list ap)
{
	if (!log_enabled(lvl))
		return;
	struct sbuf raw = {0};
	if (sbuf_vaddf(&raw, fmt, ap) < 0) {
		sbuf_free(&raw);
		fputs("pvagent: out of memory while logging\n", stderr);
		return;
	}
	char *line = log_redact(sbuf_str(&raw));
	sbuf_free(&raw);
	if (!line) {
		fputs("pvagent: out of memory while logging\n", stderr);
		return;
	}
	/* One lock, taken once: the sink runs under it and must not log
	 * (log_sink_stderr is its lock-free way to stderr). */
	pthread_mutex_lock(&out_mu);
	if (sink_fn)
		sink_fn(sink_ctx, lvl, line);
	else
		print_stderr(lvl, line);
	pthread_mutex_unlock(&out_mu);
	free(line);
}

void log_sink_stderr(enum log_level lvl, const char *line)
{
	print_stderr(lvl, line); /* out_mu is held: log_vmsg called the sink */
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(lvl, fmt, ap);
	va_end(ap);
}
