/* conf.h - pvagent.conf: search, parsing, validation, defaults, and reading
 * of the secret files it names. Key names are a contract (man pvagent.conf);
 * conf/pvagent.conf.example documents every key.
 *
 * Value rules:
 *   durations   N (seconds) or N followed by s, m, h or d; must be > 0
 *   booleans    yes/no, true/false, on/off, 1/0 ([pve] insecure: yes/no only)
 *   paths       a relative path is taken relative to the directory of the
 *               configuration file; "~/" is the user's home directory
 * The configuration file itself must be a regular file of at most
 * INI_MAX_BYTES, owned by the user or root and not writable by group or
 * others (ini_load). Secret files (token_secret_file, password_file, [ssh]
 * identity) must be regular files (not symbolic links) of at most
 * CONF_SECRET_MAX bytes owned by the user (or root) with no group or other
 * permission bits (as ssh requires of private keys). -v (log_debug) names
 * the file that was loaded. */
#ifndef PVAGENT_CONF_H
#define PVAGENT_CONF_H

#include "calendar.h"
#include "pool.h"

#include <stddef.h>

#define CONF_SECRET_MAX 65536 /* bytes of a secret file */

enum conf_host_key_policy {
	CONF_HKP_STRICT, /* unknown or changed host key: refuse */
	CONF_HKP_TOFU,   /* unknown: record it; changed: refuse */
};

/* [window "NAME"]: drain a node at the start, bring it back at the end. */
struct conf_window {
	char *name;
	char *node;            /* node to drain */
	unsigned days;         /* bit d set = weekday d (0 Sunday .. 6 Saturday) */
	int start;             /* minutes after local midnight */
	unsigned duration;     /* seconds */
	char **to;             /* target nodes (NULL-terminated; n_to may be 0) */
	size_t n_to;
	unsigned max_workers;  /* 0: from [migrate] */
	int line;              /* line of the section header */
	char *schedule;        /* PVE calendar event as given, or NULL (days + start) */
	int schedule_line;
	struct cal_event cal;  /* when it opens (from schedule, or days + start) */
};

struct conf {
	char *path; /* the file that was loaded */
	struct {
		char *url;               /* "https://host:8006", no trailing '/' */
		char *token_id;          /* "user@realm!name", or NULL */
		char *token_secret_file;
		char *token_secret;      /* contents of token_secret_file */
		char *user;              /* "root@pam", or NULL (token auth) */
		char *password_file;
		char *password;          /* contents of password_file */
		char *fingerprint;       /* "AA:BB:...", upper case, or NULL */
		char *ca_file;           /* or NULL */
		int insecure;            /* 1: no certificate check (and http://) */
		char *node;              /* default node, or NULL */
		char *storage;           /* the disk storage of guests and
					  * images, or NULL (conf_disk_storage) */
		char *import_storage;    /* image build's downloads, or NULL
					  * (conf_import_storage) */
		unsigned timeout;        /* seconds, per HTTP request; default 30 */
	} pve;
	struct {
		char *user;              /* default "root" */
		char *identity;          /* private key path, or NULL */
		char *known_hosts;       /* default STATE/known_hosts */
		enum conf_host_key_policy host_key_policy; /* default strict */
		unsigned timeout;        /* seconds; default 30 */
		unsigned port;           /* guest sshd port, 1..65535; default 22
					  * (a template's [guest] port wins) */
	} ssh;
	struct {
		char **templates;        /* search path, NULL-terminated */
		size_t n_templates;
		char *state;             /* directory; default /var/lib/pvagent */
		char *socket;            /* default /run/pvagent/pvagentd.sock */
	} paths;
	struct {
		unsigned workers;        /* jobs in flight; default 2 */
		unsigned node_jobs;      /* jobs in flight per node; default 2 */
		char *socket_group;      /* or NULL: the daemon's own group */
		char *metrics_file;      /* Prometheus text file, or NULL: none */
		unsigned max_clients;    /* connections of peers other than root;
					  * default 64 */
		unsigned keep_jobs;      /* seconds a finished job is kept; default
					  * 90 days */
		unsigned keep_jobs_max;  /* finished jobs kept; default 10,000 */
	} daemon;
	struct {
		unsigned max_workers;    /* parallel migrations; default 2 */
		unsigned bwlimit;        /* KiB/s; 0: PVE's own limit */
		int with_local_disks;    /* a running VM's local disks copied
					  * live; default 1 */
		char *target_storage;    /* or NULL: same storage */
		unsigned timeout;        /* seconds per migration; default 3600 */
		unsigned memory_reserve; /* MiB kept free on a target; default 1024 */
		unsigned per_target;     /* migrations into one node at once; default 2 */
		unsigned probe_port;     /* TCP port probed for the downtime clients
					  * see; 0: the [ssh] port */
	} migrate;
	struct {
		char *mirror;            /* base URL that replaces the image
					  * catalogue's sites (image.h), no
					  * trailing '/'; or NULL */
	} image;
	struct conf_window *windows;
	size_t n_windows;
	char *windows_error;            /* what is wrong with the [window]
					   sections, or NULL: the commands that
					   use windows refuse to run with it */
	struct ip_pool *pools;          /* [pool "NAME"] (pool.h) */
	size_t n_pools;
};

/* The pool called name, or NULL. */
const struct ip_pool *conf_pool(const struct conf *c, const char *name);
/* The storage guests' and images' disks go on: [pve] storage (setup writes
 * the one the node has: local-lvm, local-zfs, local-btrfs), else local-lvm,
 * a fresh LVM-thin install's. c may be NULL. */
const char *conf_disk_storage(const struct conf *c);
/* The storage image build downloads into: [pve] import_storage, else
 * local. c may be NULL. */
const char *conf_import_storage(const struct conf *c);
/* The public key of [ssh] identity (IDENTITY.pub, first line) for the
 * templates' ${pubkey}; malloc'd, NULL when none is configured or
 * readable. */
char *conf_read_pubkey(const struct conf *c);

/* Load the configuration. path NULL means search: $PVAGENT_CONF,
 * ./conf/pvagent.conf, /etc/pvagent/pvagent.conf (the first that exists;
 * -c is the caller passing path). Returns 0; -1 with *err "FILE:LINE:
 * [section] key: what" (several problems: one per line); -2 when searching
 * found no file (*err lists the places tried). *out is zeroed on failure. */
int conf_load(const char *path, struct conf *out, char **err);

/* The defaults alone, as an empty file would give them (no path, no
 * [pve]): what a command that needs no cluster uses when the search found
 * no file (image list). 0, or -1 (out of memory). */
int conf_defaults(struct conf *out);

/* Free everything; secrets are overwritten first. */
void conf_free(struct conf *c);

/* Helpers shared with templates and the CLI. */
/* "30", "30s", "5m", "2h", "1d" -> seconds (> 0). Returns 0, or -1 if the
 * text is not such a duration or overflows. */
int conf_parse_duration(const char *s, unsigned *out);
/* yes/no, true/false, on/off, 1/0 -> 1/0; -1 if none of these. */
int conf_parse_bool(const char *s);

#endif
