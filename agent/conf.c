/* conf.c - pvagent.conf loading and validation (see conf.h). Every problem
 * is reported as "FILE:LINE: [section] key: what", all of them at once. */
#include "conf.h"
#include "calendar.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ini.h"
#include "log.h"
#include "util.h"

#define SYSTEM_CONF "/etc/pvagent/pvagent.conf"
#define LOCAL_CONF "./conf/pvagent.conf"

static const struct ini_key_spec pve_keys[] = {
	{"url", INI_KEY_REQUIRED},
	{"token_id", 0},
	{"token_secret_file", 0},
	{"user", 0},
	{"password_file", 0},
	{"fingerprint", 0},
	{"ca_file", 0},
	{"insecure", 0},
	{"node", 0},
	{"storage", 0},
	{"import_storage", 0},
	{"timeout", 0},
	{NULL, 0},
};
static const struct ini_key_spec ssh_keys[] = {
	{"user", 0},
	{"identity", 0},
	{"known_hosts", 0},
	{"host_key_policy", 0},
	{"timeout", 0},
	{"port", 0},
	{NULL, 0},
};
static const struct ini_key_spec paths_keys[] = {
	{"templates", 0},
	{"state", 0},
	{"socket", 0},
	{NULL, 0},
};
static const struct ini_key_spec daemon_keys[] = {
	{"workers", 0},
	{"node_jobs", 0},
	{"socket_group", 0},
	{"metrics_file", 0},
	{"max_clients", 0},
	{"keep_jobs", 0},
	{"keep_jobs_max", 0},
	{NULL, 0},
};
static const struct ini_key_spec migrate_keys[] = {
	{"max_workers", 0},
	{"bwlimit", 0},
	{"with_local_disks", 0},
	{"target_storage", 0},
	{"timeout", 0},
	{"memory_reserve", 0},
	{"per_target", 0},
	{"probe_port", 0},
	{NULL, 0},
};
static const struct ini_key_spec image_keys[] = {
	{"mirror", 0},
	{NULL, 0},
};
static const struct ini_key_spec window_keys[] = {
	{"node", INI_KEY_REQUIRED},
	{"schedule", 0},
	{"action", 0},
	{"days", 0},
	{"start", 0},
	{"duration", INI_KEY_REQUIRED},
	{"to", 0},
	{"max_workers", 0},
	{NULL, 0},
};
static const struct ini_key_spec pool_keys[] = {
	{"cidr", INI_KEY_REQUIRED},
	{"gateway", INI_KEY_REQUIRED},
	{"range", INI_KEY_REQUIRED},
	{"dns", 0},
	{"searchdomain", 0},
	{NULL, 0},
};
static const struct ini_section_spec conf_spec[] = {
	{"pve", INI_SEC_REQUIRED, pve_keys},
	{"ssh", 0, ssh_keys},
	{"paths", 0, paths_keys},
	{"daemon", 0, daemon_keys},
	{"migrate", 0, migrate_keys},
	{"image", 0, image_keys},
	{"window", INI_SEC_LABEL, window_keys},
	{"pool", INI_SEC_LABEL, pool_keys},
	{NULL, 0, NULL},
};

/* ---- small parsers ------------------------------------------------------- */

int conf_parse_duration(const char *s, unsigned *out)
{
	if (*s < '0' || *s > '9')
		return -1;
	unsigned long long v = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (unsigned)(*s - '0');
		if (v > UINT_MAX)
			return -1;
	}
	unsigned long long mul = 1;
	if (*s) {
		switch (*s) {
		case 's': mul = 1; break;
		case 'm': mul = 60; break;
		case 'h': mul = 3600; break;
		case 'd': mul = 86400; break;
		default: return -1;
		}
		if (s[1])
			return -1;
	}
	v *= mul;
	if (v == 0 || v > UINT_MAX)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int conf_parse_bool(const char *s)
{
	static const char *const yes[] = {"yes", "true", "on", "1"};
	static const char *const no[] = {"no", "false", "off", "0"};
	for (size_t i = 0; i < 4; i++) {
		if (strcmp(s, yes[i]) == 0)
			return 1;
		if (strcmp(s, no[i]) == 0)
			return 0;
	}
	return -1;
}

/* Decimal in [min, max]. */
static int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	if (*s < '0' || *s > '9')
		return -1;
	unsigned long long v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (unsigned)(*s - '0');
		if (v > max)
			return -1;
	}
	if (v < min)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int all_chars(const char *s, const char *extra)
{
	if (!*s)
		return 0;
	for (; *s; s++) {
		char c = *s;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || strchr(extra, c)))
			return 0;
	}
	return 1;
}

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

/* ---- loading context ----------------------------------------------------- */

struct ctx {
	struct ini ini;
	struct sbuf errs;
	int nerr;
	int oom;
	char *dir; /* directory of the conf file */
	struct conf *c;
};

static void cerr(struct ctx *x, int line, const struct ini_section *sec,
		 const char *key, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void cerr(struct ctx *x, int line, const struct ini_section *sec,
		 const char *key, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	struct sbuf m = {0};
	if (sbuf_vaddf(&m, fmt, ap) < 0)
		x->oom = 1;
	va_end(ap);
	msg = sbuf_steal(&m);
	if (!msg || ini_errf(&x->errs, x->ini.path, line, sec, key, "%s", msg) < 0)
		x->oom = 1;
	free(msg);
	x->nerr++;
}

static void *chk(struct ctx *x, void *p)
{
	if (!p)
		x->oom = 1;
	return p;
}

static char *xstrdup(struct ctx *x, const char *s)
{
	return chk(x, strdup(s));
}

/* A path from the file: "~/" -> $HOME, relative -> the conf file's dir. */
static char *resolve_path(struct ctx *x, const struct ini_section *sec,
			  const struct ini_entry *e, const char *v)
{
	if (!*v) {
		cerr(x, e->line, sec, e->key, "empty path");
		return NULL;
	}
	if (v[0] == '~' && (v[1] == '/' || v[1] == '\0')) {
		const char *home = getenv("HOME");
		if (!home || !*home) {
			cerr(x, e->line, sec, e->key, "%s: $HOME is not set", v);
			return NULL;
		}
		return chk(x, strprintf("%s%s", home, v + 1));
	}
	if (v[0] == '/')
		return xstrdup(x, v);
	return chk(x, strprintf("%s/%s", x->dir, v));
}

static const struct ini_entry *get(const struct ini_section *s, const char *k)
{
	return ini_get(s, k);
}

/* Duration key: keeps *out (the default) when absent. */
static void get_duration(struct ctx *x, const struct ini_section *s,
			 const char *key, unsigned *out)
{
	const struct ini_entry *e = get(s, key);
	if (e && conf_parse_duration(e->value, out) < 0)
		cerr(x, e->line, s, key,
		     "'%s' is not a duration (a positive number of seconds, or with s, m, h or d)",
		     e->value);
}

static void get_uint(struct ctx *x, const struct ini_section *s,
		     const char *key, unsigned min, unsigned max, unsigned *out)
{
	const struct ini_entry *e = get(s, key);
	if (e && parse_uint(e->value, min, max, out) < 0)
		cerr(x, e->line, s, key, "'%s' is not an integer from %u to %u",
		     e->value, min, max);
}

static void get_bool(struct ctx *x, const struct ini_section *s,
		     const char *key, int *out)
{
	const struct ini_entry *e = get(s, key);
	if (!e)
		return;
	int b = conf_parse_bool(e->value);
	if (b < 0)
		cerr(x, e->line, s, key, "'%s' is not yes or no", e->value);
	else
		*out = b;
}

/* String matching a character class; *out replaced (old value freed). */
static void get_word(struct ctx *x, const struct ini_section *s,
		     const char *key, const char *extra, const char *what,
		     char **out)
{
	const struct ini_entry *e = get(s, key);
	if (!e)
		return;
	if (!all_chars(e->value, extra)) {
		cerr(x, e->line, s, key, "'%s' is not a valid %s", e->value, what);
		return;
	}
	free(*out);
	*out = xstrdup(x, e->value);
}

static void get_path(struct ctx *x, const struct ini_section *s,
		     const char *key, char **out)
{
	const struct ini_entry *e = get(s, key);
	if (!e)
		return;
	char *p = resolve_path(x, s, e, e->value);
	if (p) {
		free(*out);
		*out = p;
	}
}

/* ---- secret files -------------------------------------------------------- */

/* Check that path is a private regular file (not a link: a link's target
 * is not what the config names); with content != NULL also keep its one
 * line. Reports through cerr on failure. */
static int read_secret(struct ctx *x, const struct ini_section *s,
		       const struct ini_entry *e, const char *path,
		       char **content)
{
	char *text = NULL, *why = NULL;
	size_t len = 0;
	if (read_small_file(path, CONF_SECRET_MAX, RF_PRIVATE | RF_NOFOLLOW, &text, &len,
			    &why) < 0) {
		if (!why)
			x->oom = 1;
		else
			cerr(x, e->line, s, e->key, "%s: %s", path, why);
		free(why);
		return -1;
	}
	int rc = -1;
	size_t n = len;
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ' ||
		     text[n - 1] == '\t'))
		n--;
	int bad = 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
			bad = 1;
	if (!content) {
		rc = 0;
	} else if (n == 0) {
		cerr(x, e->line, s, e->key, "%s: file is empty", path);
	} else if (bad) {
		cerr(x, e->line, s, e->key,
		     "%s: must hold one line without control characters", path);
	} else {
		*content = chk(x, strndup(text, n));
		rc = *content ? 0 : -1;
	}
	explicit_bzero(text, len);
	free(text);
	return rc;
}

/* ---- sections ------------------------------------------------------------ */

static int check_url(struct ctx *x, const struct ini_section *s,
		     const struct ini_entry *e, int insecure)
{
	const char *v = e->value;
	const char *rest;
	if (strncmp(v, "https://", 8) == 0) {
		rest = v + 8;
	} else if (strncmp(v, "http://", 7) == 0) {
		if (!insecure) {
			cerr(x, e->line, s, e->key,
			     "'%s': must be https:// (plain http:// only with insecure = yes)",
			     v);
			return -1;
		}
		rest = v + 7;
	} else {
		cerr(x, e->line, s, e->key,
		     "'%s': must start with https://, e.g. https://pve1.example.com:8006", v);
		return -1;
	}
	size_t hl;
	if (rest[0] == '[') {
		hl = 1;
		while (rest[hl] && (is_hex(rest[hl]) || rest[hl] == ':' || rest[hl] == '.'))
			hl++;
		if (rest[hl] != ']' || hl == 1)
			goto bad;
		hl++;
	} else {
		hl = 0;
		while (rest[hl] && (all_chars((char[]){rest[hl], 0}, ".-_")))
			hl++;
		if (hl == 0)
			goto bad;
	}
	const char *p = rest + hl;
	if (*p == ':') {
		char port[8];
		size_t n = 0;
		p++;
		while (p[n] >= '0' && p[n] <= '9' && n < sizeof port - 1) {
			port[n] = p[n];
			n++;
		}
		port[n] = '\0';
		unsigned pv;
		if (n == 0 || parse_uint(port, 1, 65535, &pv) < 0)
			goto bad;
		p += n;
	}
	if (*p == '/' && p[1] == '\0')
		p++;
	if (*p)
		goto bad;
	free(x->c->pve.url);
	x->c->pve.url = chk(x, strndup(v, (size_t)(p - v) - (p[-1] == '/')));
	return 0;
bad:
	cerr(x, e->line, s, e->key,
	     "'%s' is not a valid URL: expected https://HOST[:PORT] with no path", v);
	return -1;
}

static void load_pve(struct ctx *x, const struct ini_section *s)
{
	struct conf *c = x->c;
	const struct ini_entry *e;

	e = get(s, "insecure");
	if (e) {
		if (strcmp(e->value, "yes") == 0)
			c->pve.insecure = 1;
		else if (strcmp(e->value, "no") != 0)
			cerr(x, e->line, s, e->key,
			     "'%s': write insecure = yes to turn certificate checks off, or leave it out",
			     e->value);
	}
	e = get(s, "url");
	if (e)
		check_url(x, s, e, c->pve.insecure);

	e = get(s, "fingerprint");
	if (e) {
		const char *v = e->value;
		/* as openssl x509 -noout -fingerprint -sha256 prints it */
		if (strncasecmp(v, "sha256 Fingerprint=", 19) == 0)
			v += 19;
		int ok = strlen(v) == 95;
		for (size_t i = 0; ok && i < 95; i++)
			ok = (i % 3 == 2) ? v[i] == ':' : is_hex(v[i]);
		if (!ok) {
			cerr(x, e->line, s, e->key,
			     "'%s' is not a SHA-256 fingerprint (32 colon-separated hex pairs, as "
			     "pvenode cert info or openssl x509 -fingerprint -sha256 show it)",
			     e->value);
		} else {
			c->pve.fingerprint = xstrdup(x, v);
			for (char *p = c->pve.fingerprint; p && *p; p++)
				if (*p >= 'a' && *p <= 'f')
					*p = (char)(*p - 'a' + 'A');
		}
	}
	get_path(x, s, "ca_file", &c->pve.ca_file);
	if (c->pve.ca_file && access(c->pve.ca_file, R_OK) < 0) {
		e = get(s, "ca_file");
		cerr(x, e->line, s, e->key, "%s: %s", c->pve.ca_file, strerror(errno));
	}
	if (c->pve.insecure && (c->pve.fingerprint || c->pve.ca_file)) {
		e = get(s, "insecure");
		cerr(x, e->line, s, e->key,
		     "insecure = yes contradicts %s; remove one of them",
		     c->pve.fingerprint ? "fingerprint" : "ca_file");
	}

	/* credentials: a token, or a user and password */
	const struct ini_entry *tid = get(s, "token_id"), *tsf = get(s, "token_secret_file");
	const struct ini_entry *usr = get(s, "user"), *pwf = get(s, "password_file");
	if ((tid || tsf) && (usr || pwf)) {
		const struct ini_entry *late = usr ? usr : pwf;
		cerr(x, late->line, s, late->key,
		     "use either token_id and token_secret_file, or user and password_file, not both");
	} else if (tid || tsf) {
		if (!tid)
			cerr(x, s->line, s, "token_id", "missing (token_secret_file is set)");
		else if (!tsf)
			cerr(x, s->line, s, "token_secret_file", "missing (token_id is set)");
		if (tid) {
			const char *v = tid->value, *at = strchr(v, '@');
			const char *bang = at ? strchr(at, '!') : NULL;
			if (!at || at == v || !bang || bang == at + 1 || !bang[1] ||
			    !all_chars(bang + 1, ".-_") || strchr(v, ' '))
				cerr(x, tid->line, s, tid->key,
				     "'%s' is not a token id (USER@REALM!TOKENNAME)", v);
			else
				c->pve.token_id = xstrdup(x, v);
		}
		get_path(x, s, "token_secret_file", &c->pve.token_secret_file);
	} else if (usr || pwf) {
		if (!usr)
			cerr(x, s->line, s, "user", "missing (password_file is set)");
		else if (!pwf)
			cerr(x, s->line, s, "password_file", "missing (user is set)");
		if (usr) {
			const char *v = usr->value, *at = strchr(v, '@');
			if (!at || at == v || !at[1] || strchr(v, ' ') || strchr(v, '!'))
				cerr(x, usr->line, s, usr->key,
				     "'%s' is not a PVE user (USER@REALM, e.g. root@pam)", v);
			else
				c->pve.user = xstrdup(x, v);
		}
		get_path(x, s, "password_file", &c->pve.password_file);
	} else {
		cerr(x, s->line, s, NULL,
		     "no credentials: set token_id and token_secret_file, or user and password_file");
	}
	get_word(x, s, "node", "-.", "node name", &c->pve.node);
	get_word(x, s, "storage", "-_.", "storage id", &c->pve.storage);
	get_word(x, s, "import_storage", "-_.", "storage id", &c->pve.import_storage);
	get_duration(x, s, "timeout", &c->pve.timeout);
}

static void load_ssh(struct ctx *x, const struct ini_section *s)
{
	struct conf *c = x->c;
	get_word(x, s, "user", "._-", "user name", &c->ssh.user);
	get_path(x, s, "identity", &c->ssh.identity);
	get_path(x, s, "known_hosts", &c->ssh.known_hosts);
	const struct ini_entry *e = get(s, "host_key_policy");
	if (e) {
		if (strcmp(e->value, "strict") == 0)
			c->ssh.host_key_policy = CONF_HKP_STRICT;
		else if (strcmp(e->value, "tofu") == 0)
			c->ssh.host_key_policy = CONF_HKP_TOFU;
		else
			cerr(x, e->line, s, e->key, "'%s': must be strict or tofu", e->value);
	}
	get_duration(x, s, "timeout", &c->ssh.timeout);
	get_uint(x, s, "port", 1, 65535, &c->ssh.port);
}

static void load_paths(struct ctx *x, const struct ini_section *s)
{
	struct conf *c = x->c;
	const struct ini_entry *e = get(s, "templates");
	if (e) {
		size_t n = 1;
		for (const char *p = e->value; *p; p++)
			n += *p == ':';
		char **list = chk(x, calloc(n + 1, sizeof *list));
		if (!list)
			return;
		const char *p = e->value;
		size_t i = 0;
		for (;;) {
			const char *end = strchrnul(p, ':');
			char *part = chk(x, strndup(p, (size_t)(end - p)));
			if (!part)
				break;
			if (!*part) {
				cerr(x, e->line, s, e->key,
				     "empty directory in the list (use ':' between directories)");
			} else {
				list[i] = resolve_path(x, s, e, part);
				if (list[i])
					i++;
			}
			free(part);
			if (!*end)
				break;
			p = end + 1;
		}
		for (size_t j = 0; j < c->paths.n_templates; j++)
			free(c->paths.templates[j]);
		free(c->paths.templates);
		c->paths.templates = list;
		c->paths.n_templates = i;
	}
	get_path(x, s, "state", &c->paths.state);
	get_path(x, s, "socket", &c->paths.socket);
}

static void load_daemon(struct ctx *x, const struct ini_section *s)
{
	get_uint(x, s, "workers", 1, 256, &x->c->daemon.workers);
	get_uint(x, s, "node_jobs", 1, 256, &x->c->daemon.node_jobs);
	get_word(x, s, "socket_group", "._-", "group name", &x->c->daemon.socket_group);
	get_path(x, s, "metrics_file", &x->c->daemon.metrics_file);
	get_uint(x, s, "max_clients", 1, 65536, &x->c->daemon.max_clients);
	get_duration(x, s, "keep_jobs", &x->c->daemon.keep_jobs);
	get_uint(x, s, "keep_jobs_max", 1, 100000000, &x->c->daemon.keep_jobs_max);
}

static void load_migrate(struct ctx *x, const struct ini_section *s)
{
	struct conf *c = x->c;
	get_uint(x, s, "max_workers", 1, 64, &c->migrate.max_workers);
	get_uint(x, s, "bwlimit", 0, UINT_MAX, &c->migrate.bwlimit);
	get_bool(x, s, "with_local_disks", &c->migrate.with_local_disks);
	get_word(x, s, "target_storage", "-_.", "storage id", &c->migrate.target_storage);
	get_duration(x, s, "timeout", &c->migrate.timeout);
	get_uint(x, s, "memory_reserve", 0, 1u << 24, &c->migrate.memory_reserve);
	get_uint(x, s, "per_target", 1, 64, &c->migrate.per_target);
	get_uint(x, s, "probe_port", 1, 65535, &c->migrate.probe_port);
}

/* [image] mirror: http(s)://HOST[:PORT][/PATH], kept without a trailing
 * '/' (image_use_mirror appends /NAME/FILE) */
static void load_image(struct ctx *x, const struct ini_section *s)
{
	const struct ini_entry *e = get(s, "mirror");
	if (!e)
		return;
	const char *v = e->value;
	size_t scheme = strncmp(v, "https://", 8) == 0 ? 8 : strncmp(v, "http://", 7) == 0 ? 7 : 0;
	bool ok = scheme && v[scheme] && v[scheme] != '/';
	for (const char *p = v; ok && *p; p++)
		ok = *p > ' ' && *p < 0x7f && *p != '?' && *p != '#';
	if (!ok) {
		cerr(x, e->line, s, e->key, "'%s' is not a mirror URL: expected "
		     "http(s)://HOST[:PORT][/PATH], without query or fragment", v);
		return;
	}
	size_t n = strlen(v);
	while (n > scheme + 1 && v[n - 1] == '/')
		n--;
	free(x->c->image.mirror);
	x->c->image.mirror = chk(x, strndup(v, n));
}

static int parse_day(const char *s, size_t n)
{
	static const char *const names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
	for (int d = 0; d < 7; d++)
		if (n == 3 && strncmp(s, names[d], 3) == 0)
			return d;
	return -1;
}

/* "daily", "*", "mon-fri", "sat,sun", "mon,wed-fri" -> bit mask; 0 on error. */
static unsigned parse_days(const char *v)
{
	if (strcmp(v, "daily") == 0 || strcmp(v, "*") == 0)
		return 0x7f;
	unsigned mask = 0;
	const char *p = v;
	for (;;) {
		const char *end = strchrnul(p, ',');
		const char *dash = memchr(p, '-', (size_t)(end - p));
		int a, b;
		if (dash) {
			a = parse_day(p, (size_t)(dash - p));
			b = parse_day(dash + 1, (size_t)(end - dash - 1));
		} else {
			a = b = parse_day(p, (size_t)(end - p));
		}
		if (a < 0 || b < 0)
			return 0;
		for (int d = a;; d = (d + 1) % 7) {
			mask |= 1u << d;
			if (d == b)
				break;
		}
		if (!*end)
			return mask;
		p = end + 1;
	}
}

static void load_window(struct ctx *x, const struct ini_section *s,
			struct conf_window *w)
{
	w->line = s->line;
	w->days = 0x7f;
	if (!all_chars(s->label, "._-"))
		cerr(x, s->line, s, NULL,
		     "window names use letters, digits, '.', '_' and '-'");
	w->name = xstrdup(x, s->label);
	get_word(x, s, "node", "-.", "node name", &w->node);
	const struct ini_entry *e = get(s, "days");
	if (e) {
		w->days = parse_days(e->value);
		if (!w->days)
			cerr(x, e->line, s, e->key,
			     "'%s': expected daily, or days like mon-fri or sat,sun", e->value);
	}
	e = get(s, "start");
	if (e) {
		const char *v = e->value;
		unsigned hh, mm;
		char hs[3] = {0}, ms[3] = {0};
		if (strlen(v) == 5 && v[2] == ':') {
			memcpy(hs, v, 2);
			memcpy(ms, v + 3, 2);
		}
		if (hs[0] && parse_uint(hs, 0, 23, &hh) == 0 && parse_uint(ms, 0, 59, &mm) == 0)
			w->start = (int)(hh * 60 + mm);
		else
			cerr(x, e->line, s, e->key, "'%s': expected HH:MM (24-hour, local time)", v);
	}
	get_duration(x, s, "duration", &w->duration);
	/* the schedule: PVE's calendar event, or days + start */
	e = get(s, "schedule");
	if (e && (get(s, "start") || get(s, "days"))) {
		cerr(x, e->line, s, e->key, "give schedule, or days and start, not both");
	} else if (e) {
		const char *why = NULL;
		w->schedule_line = e->line;
		if (cal_parse(e->value, &w->cal, &why) < 0)
			cerr(x, e->line, s, e->key, "'%s': %s (PVE calendar event, e.g. 'sun 02:00', "
				 "'mon..fri 22:30', '*-*-01 03:00')", e->value, why);
		w->schedule = xstrdup(x, e->value);
	} else if (!get(s, "start")) {
		cerr(x, s->line, s, "schedule", "required (or days and start)");
	} else {
		memset(&w->cal, 0, sizeof w->cal);
		w->cal.weekdays = (uint8_t)w->days;
		w->cal.months = 0x1ffe;
		w->cal.days = 0xfffffffe;
		w->cal.hours = 1u << (w->start / 60);
		w->cal.minutes = 1ull << (w->start % 60);
		w->cal.seconds = 1;
	}
	e = get(s, "action");
	if (e && strcmp(e->value, "drain") != 0)
		cerr(x, e->line, s, e->key, "'%s': the only action is drain (drain at the start, "
			 "undrain at the end)", e->value);
	e = get(s, "to");
	if (e) {
		size_t n = 1;
		for (const char *p = e->value; *p; p++)
			n += *p == ',';
		w->to = chk(x, calloc(n + 1, sizeof *w->to));
		const char *p = e->value;
		while (w->to) {
			const char *end = strchrnul(p, ',');
			char *node = chk(x, strndup(p, (size_t)(end - p)));
			if (!node)
				break;
			if (!all_chars(node, "-.")) {
				cerr(x, e->line, s, e->key,
				     "'%s' is not a node name (list nodes separated by ',')", node);
				free(node);
			} else {
				w->to[w->n_to++] = node;
			}
			if (!*end)
				break;
			p = end + 1;
		}
	}
	get_uint(x, s, "max_workers", 1, 64, &w->max_workers);
}

/* A [window] section, its errors into errs (not the file's): one bad
 * window stops only the commands that use windows (conf.windows_error). */
static void load_window_apart(struct ctx *x, const struct ini_section *s, struct sbuf *errs,
			      struct conf_window *w)
{
	struct sbuf file_errs = x->errs;
	int nerr = x->nerr;
	x->errs = *errs;
	load_window(x, s, w);
	*errs = x->errs;
	x->errs = file_errs;
	x->nerr = nerr;
}

/* A count of problems a module appended to x->errs itself (-1: no memory). */
static void count_problems(struct ctx *x, int n)
{
	if (n < 0)
		x->oom = 1;
	else
		x->nerr += n;
}

const char *conf_disk_storage(const struct conf *c)
{
	return c && c->pve.storage ? c->pve.storage : "local-lvm";
}

const char *conf_import_storage(const struct conf *c)
{
	return c && c->pve.import_storage ? c->pve.import_storage : "local";
}

const struct ip_pool *conf_pool(const struct conf *c, const char *name)
{
	for (size_t i = 0; name && i < c->n_pools; i++)
		if (strcmp(c->pools[i].name, name) == 0)
			return &c->pools[i];
	return NULL;
}

char *conf_read_pubkey(const struct conf *c)
{
	if (!c->ssh.identity)
		return NULL;
	char *path = strprintf("%s.pub", c->ssh.identity), *text = NULL;
	if (path && read_file(path, &text, NULL) < 0)
		text = NULL;
	free(path);
	if (text)
		text[strcspn(text, "\n")] = '\0';
	return text;
}

#ifndef PVAGENT_TEMPLATES
#define PVAGENT_TEMPLATES "/usr/local/share/pvagent/templates" /* $(DATADIR)/templates */
#endif

static int set_defaults(struct conf *c)
{
	c->pve.timeout = 30;
	c->ssh.timeout = 30;
	c->ssh.port = 22;
	c->ssh.host_key_policy = CONF_HKP_STRICT;
	c->daemon.workers = 2;
	c->daemon.node_jobs = 2;
	c->daemon.max_clients = 64;
	c->daemon.keep_jobs = 90 * 86400;
	c->daemon.keep_jobs_max = 10000;
	c->migrate.max_workers = 2;
	c->migrate.with_local_disks = 1;
	c->migrate.timeout = 3600;
	c->migrate.memory_reserve = 1024;
	c->migrate.per_target = 2;
	c->ssh.user = strdup("root");
	c->paths.state = strdup("/var/lib/pvagent");
	c->paths.socket = strdup("/run/pvagent/pvagentd.sock");
	c->paths.templates = calloc(3, sizeof *c->paths.templates);
	if (!c->ssh.user || !c->paths.state || !c->paths.socket || !c->paths.templates)
		return -1;
	c->paths.templates[0] = strdup("./templates");
	c->paths.templates[1] = strdup(PVAGENT_TEMPLATES);
	c->paths.n_templates = 2;
	return c->paths.templates[0] && c->paths.templates[1] ? 0 : -1;
}

int conf_defaults(struct conf *out)
{
	memset(out, 0, sizeof *out);
	if (set_defaults(out) < 0) {
		conf_free(out);
		return -1;
	}
	return 0;
}

/* Which file to load; -2 when the search found nothing. */
static int find_conf(const char *path, char **found, char **err)
{
	if (path) {
		*found = strdup(path);
		return *found ? 0 : -1;
	}
	const char *env = getenv("PVAGENT_CONF");
	if (env && *env) {
		*found = strdup(env);
		return *found ? 0 : -1;
	}
	if (access(LOCAL_CONF, F_OK) == 0) {
		*found = strdup(LOCAL_CONF);
		return *found ? 0 : -1;
	}
	if (access(SYSTEM_CONF, F_OK) == 0) {
		*found = strdup(SYSTEM_CONF);
		return *found ? 0 : -1;
	}
	*err = strprintf("no configuration file: tried -c, $PVAGENT_CONF, %s and %s; start "
			 "from conf/pvagent.conf.example (man pvagent.conf), or try it against "
			 "the simulator: make sandbox", LOCAL_CONF, SYSTEM_CONF);
	return -2;
}

int conf_load(const char *path, struct conf *out, char **err)
{
	struct sbuf win_errs = {0}; /* the [window] sections' errors (windows_error) */
	struct ctx x = {0};
	char *file = NULL;
	*err = NULL;
	memset(out, 0, sizeof *out);
	x.c = out;
	if (path && !*path) {
		*err = strdup("the configuration file name is empty: give -c the path of a "
			      "pvagent.conf (see man pvagent.conf)");
		return -1;
	}
	int rc = find_conf(path, &file, err);
	if (rc < 0) {
		if (rc == -1 && !*err)
			*err = strdup("out of memory");
		return rc;
	}
	if (ini_load(file, &x.ini, err) < 0) {
		free(file);
		return -1;
	}
	log_debug("configuration: %s", file);
	out->path = file;
	const char *slash = strrchr(file, '/');
	x.dir = slash ? strndup(file, slash == file ? 1 : (size_t)(slash - file)) : strdup(".");
	if (!x.dir || set_defaults(out) < 0)
		x.oom = 1;
	int n = x.oom ? 0 : ini_validate(&x.ini, conf_spec, &x.errs);
	if (n < 0)
		x.oom = 1;
	x.nerr = n > 0 ? n : 0;
	size_t nwin = 0;
	for (size_t i = 0; i < x.ini.n_sections; i++)
		nwin += strcmp(x.ini.sections[i].name, "window") == 0;
	if (!x.oom && !x.nerr && nwin) {
		out->windows = chk(&x, calloc(nwin, sizeof *out->windows));
	}
	size_t npool = 0;
	for (size_t i = 0; i < x.ini.n_sections; i++)
		npool += strcmp(x.ini.sections[i].name, "pool") == 0;
	if (!x.oom && !x.nerr && npool)
		out->pools = chk(&x, calloc(npool, sizeof *out->pools));
	if (!x.oom && !x.nerr) {
		for (size_t i = 0; i < x.ini.n_sections; i++) {
			const struct ini_section *s = &x.ini.sections[i];
			if (strcmp(s->name, "pve") == 0)
				load_pve(&x, s);
			else if (strcmp(s->name, "ssh") == 0)
				load_ssh(&x, s);
			else if (strcmp(s->name, "paths") == 0)
				load_paths(&x, s);
			else if (strcmp(s->name, "daemon") == 0)
				load_daemon(&x, s);
			else if (strcmp(s->name, "migrate") == 0)
				load_migrate(&x, s);
			else if (strcmp(s->name, "image") == 0)
				load_image(&x, s);
			else if (strcmp(s->name, "window") == 0)
				load_window_apart(&x, s, &win_errs, &out->windows[out->n_windows++]);
			else if (strcmp(s->name, "pool") == 0 && out->pools)
				count_problems(&x, pool_load(x.ini.path, s,
							     &out->pools[out->n_pools++], &x.errs));
		}
		if (out->n_pools)
			count_problems(&x, pool_check_overlaps(x.ini.path, &x.ini, out->pools,
							       out->n_pools, &x.errs));
	}
	/* derived defaults, then secrets (only for an otherwise valid file) */
	if (!x.oom && !x.nerr && !out->ssh.known_hosts)
		out->ssh.known_hosts = chk(&x, strprintf("%s/known_hosts", out->paths.state));
	if (!x.oom && !x.nerr) {
		const struct ini_section *s = ini_find(&x.ini, "pve", NULL);
		const struct ini_entry *e;
		if ((e = get(s, "token_secret_file")) && out->pve.token_secret_file)
			read_secret(&x, s, e, out->pve.token_secret_file, &out->pve.token_secret);
		if ((e = get(s, "password_file")) && out->pve.password_file)
			read_secret(&x, s, e, out->pve.password_file, &out->pve.password);
		s = ini_find(&x.ini, "ssh", NULL);
		if ((e = get(s, "identity")) && out->ssh.identity) {
			if (access(out->ssh.identity, F_OK) < 0 && errno == ENOENT)
				cerr(&x, e->line, s, e->key, "%s: no such file; make the key with: "
				     "ssh-keygen -t ed25519 -N '' -f %s", out->ssh.identity,
				     out->ssh.identity);
			else
				read_secret(&x, s, e, out->ssh.identity, NULL);
		}
	}
	free(x.dir);
	ini_free(&x.ini);
	if (x.oom || x.nerr) {
		*err = x.oom ? strdup("out of memory") : sbuf_steal(&x.errs);
		sbuf_free(&x.errs);
		sbuf_free(&win_errs);
		conf_free(out);
		return -1;
	}
	sbuf_free(&x.errs);
	if (win_errs.len) {
		/* kept for the commands that use windows; the rest run */
		out->windows_error = sbuf_steal(&win_errs);
		if (!out->windows_error) {
			*err = strdup("out of memory");
			conf_free(out);
			return -1;
		}
	}
	sbuf_free(&win_errs);
	return 0;
}

static void free_secret(char *s)
{
	if (!s)
		return;
	volatile char *p = s;
	while (*p)
		*p++ = 0;
	free(s);
}

void conf_free(struct conf *c)
{
	free(c->path);
	free(c->pve.url);
	free(c->pve.token_id);
	free(c->pve.token_secret_file);
	free_secret(c->pve.token_secret);
	free(c->pve.user);
	free(c->pve.password_file);
	free_secret(c->pve.password);
	free(c->pve.fingerprint);
	free(c->pve.ca_file);
	free(c->pve.node);
	free(c->pve.storage);
	free(c->pve.import_storage);
	free(c->ssh.user);
	free(c->ssh.identity);
	free(c->ssh.known_hosts);
	for (size_t i = 0; c->paths.templates && c->paths.templates[i]; i++)
		free(c->paths.templates[i]);
	free(c->paths.templates);
	free(c->paths.state);
	free(c->paths.socket);
	free(c->daemon.socket_group);
	free(c->daemon.metrics_file);
	free(c->migrate.target_storage);
	free(c->image.mirror);
	for (size_t i = 0; i < c->n_windows; i++) {
		struct conf_window *w = &c->windows[i];
		free(w->name);
		free(w->node);
		free(w->schedule);
		for (size_t j = 0; j < w->n_to; j++)
			free(w->to[j]);
		free(w->to);
	}
	free(c->windows);
	free(c->windows_error);
	for (size_t i = 0; i < c->n_pools; i++)
		pool_free(&c->pools[i]);
	free(c->pools);
	memset(c, 0, sizeof *c);
}
