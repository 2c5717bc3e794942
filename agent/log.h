/* log.h - leveled logging to stderr (or a test sink) with secret redaction.
 *
 * Every line logged passes through log_redact(): strings registered as
 * secrets (API token secret, password, ticket, CSRF token) are replaced by
 * "***", and well-known credential patterns are masked even when their value
 * was never registered:
 *   PVEAPIToken=USER@REALM!NAME=SECRET   -> PVEAPIToken=USER@REALM!NAME=***
 *   PVEAuthCookie=TICKET                 -> PVEAuthCookie=***
 *   password=VALUE (also cipassword=...) -> password=***
 *   CSRFPreventionToken: VALUE / =VALUE  -> CSRFPreventionToken: ***
 *   "password":"..", "ticket":"..", "CSRFPreventionToken":".." in JSON
 * Error messages shown to users must go through log_redact() too (the pve
 * module does this for every message it builds).
 *
 * Thread-safe: the level, sink and secret registry are shared by all threads
 * and guarded by one mutex; a line is written with a single call. */
#ifndef PVAGENT_LOG_H
#define PVAGENT_LOG_H

#include <stdarg.h>

/* Named LOGL_* to stay clear of <syslog.h>'s LOG_INFO/LOG_DEBUG. */
enum log_level {
	LOGL_ERROR = 0,
	LOGL_WARN,
	LOGL_INFO,
	LOGL_DEBUG,
	LOGL_TRACE,
};

/* Lines above this level are dropped. Default LOGL_INFO. */
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
int log_enabled(enum log_level lvl);

/* Map the command line's verbosity (number of -v minus number of -q) to a
 * level: 0 info, 1 debug, >=2 trace, -1 warn, <=-2 error. */
enum log_level log_level_from_verbosity(int verbosity);

/* Name of a level: "error", "warning", "info", "debug", "trace". */
const char *log_level_name(enum log_level lvl);

/* Where lines go. The default writes "IDENT: LEVEL: text\n" to stderr (no
 * "LEVEL: " for info and errors: "pvagent COMMAND: text"). A sink
 * receives the already redacted text
 * without prefix or newline; pass NULL to restore stderr. Used by tests and
 * by the daemon (to turn lines into events). */
typedef void (*log_sink_fn)(void *ctx, enum log_level lvl, const char *line);
/* The sink runs under the log's lock (lines never interleave): it must not
 * log itself nor call log_set_*; a lock it takes comes after the log's. */
void log_set_sink(log_sink_fn fn, void *ctx);

/* Only from inside a sink: its line (already redacted) on stderr as the
 * default sink writes it (the CLI's live progress prints log lines above
 * its live lines). The sink is called with the log's lock held, so it must
 * not call log_msg and friends, and this takes no lock. */
void log_sink_stderr(enum log_level lvl, const char *line);

/* Program name used as the stderr prefix (default "pvagent"); the string
 * must outlive its use. */
void log_set_ident(const char *ident);

void log_msg(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level lvl, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

#define log_error(...) log_msg(LOGL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOGL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOGL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOGL_DEBUG, __VA_ARGS__)
#define log_trace(...) log_msg(LOGL_TRACE, __VA_ARGS__)

/* Register a secret. Registrations are counted: each log_secret_add must be
 * matched by a log_secret_remove of an equal string. The percent-encoded
 * form of the secret (as it would appear in a form body) is covered too.
 * Empty strings are ignored. Returns 0, or -1 when out of memory (the
 * pattern masking still applies). */
int log_secret_add(const char *secret);
void log_secret_remove(const char *secret);
/* Forget every registered secret (tests, end of program). */
void log_secret_clear(void);

/* Redacted copy of s (malloc'd; NULL only when out of memory). */
char *log_redact(const char *s);

#endif
