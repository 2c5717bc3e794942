/* submit_check.c - the params a peer of pvagentd may submit, and the
 * files they may make the daemon read (submit_check.h). */
#include "submit_check.h"

#include "ctl_server.h"
#include "json.h"
#include "tmpl.h"
#include "up_check.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The members each workflow's launcher writes (wf_up_params,
 * wf_down_params, wf_inject_params, wf_bench_params, convert_params,
 * wf_migrate_params, wf_drain_params, wf_image_params). A drain's own migrations
 * ("parent") are made by the drain, never submitted. */
static const struct wf_members {
	const char *wf;
	const char *const members[24];
} table[] = {
	{"up", {"name", "template", "template_path", "node", "storage", "pubkey", "pool", "vmid",
		"vmid_min", "vmid_max", "no_start", "full", "no_inject", "retemplate", "dry_run",
		"no_wait_ssh", "ssh_wait_s", "sets", "vars", NULL}},
	{"down", {"purge", "dry_run", NULL}},
	{"inject", {"template", "address", "vars", "dry_run", NULL}},
	{"bench", {"template", "address", "vars", "size_mib", NULL}},
	{"virtio", {"template", "address", "vars", "vmid", "bus", "keep_snapshot", "bench",
		    "bench_size_mib", "verify_timeout_s", "dry_run", NULL}},
	{"migrate", {"target", "storage_map", "bwlimit", "max_downtime", "dry_run", NULL}},
	{"drain", {"to", "max_workers", "per_target", "partial", "dry_run", "deadline", NULL}},
	{"undrain", {"to", "max_workers", "per_target", "partial", "dry_run", "deadline", NULL}},
	{"rolling", {"nodes", "mode", "version", "script", "window", "self", "max_workers",
		     "wait_s", "node_ssh", NULL}},
	{"image", {"image", "image_path", "node", "storage", "import_storage", "url", "checksum",
		   "vmid", "rebuild", NULL}},
};

/* May the peer read a file of this mode, owner and group? */
static bool peer_reads(const struct stat *st, const struct submit_peer *p)
{
	if (st->st_uid == p->uid)
		return st->st_mode & S_IRUSR;
	if (ctl_uid_in_group(p->uid, p->gid, st->st_gid))
		return st->st_mode & S_IRGRP;
	return st->st_mode & S_IROTH;
}

/* Is path inside dir (both resolved)? */
static bool inside(const char *real, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return true;
	return strncmp(real, dir, n) == 0 && real[n] == '/';
}

/* What a name resolves to in the template directories: a template
 * (DIR/NAME.tmpl, as tmpl_load finds it) or a catalogue image
 * (DIR/images/NAME.image, as image_load does). */
struct named_kind {
	const char *member, *sub, *ext; /* the param; DIR/sub NAME ext */
};
static const struct named_kind template_kind = {"template", "", ".tmpl"};
static const struct named_kind image_kind = {"image", "images/", ".image"};

/* Name v of kind k, resolved in dirs: 0 with *path (the file, resolved;
 * NULL when no directory has it), or -1 (*why). */
static int resolve_named(const struct named_kind *k, const char *v, const struct submit_peer *p,
			 const char *const *dirs, char **path, char **why)
{
	*path = NULL;
	if (!tmpl_name_valid(v)) {
		err_setf(why, "\"%s\": a %s is a name from the template directories "
			 "(letters, digits, '.', '_', '-'; no path, no '..')", k->member, k->member);
		return -1;
	}
	for (size_t i = 0; dirs && dirs[i]; i++) {
		char *file = strprintf("%s/%s%s%s", dirs[i], k->sub, v, k->ext);
		if (!file) {
			err_setf(why, "out of memory");
			return -1;
		}
		if (access(file, F_OK) < 0) {
			free(file);
			continue;
		}
		char *real = realpath(file, NULL), *dir = realpath(dirs[i], NULL);
		struct stat st;
		int rc = 0;
		if (!real || !dir || !inside(real, dir)) {
			err_setf(why, "\"%s\": %s '%s' %s", k->member, k->member, v,
				 real && dir ? "leads out of its directory" : "cannot be resolved");
			rc = -1;
		} else if (stat(real, &st) < 0 || !S_ISREG(st.st_mode) || !peer_reads(&st, p)) {
			err_setf(why, "\"%s\": %s '%s' is not a file uid %u may read", k->member,
				 k->member, v, (unsigned)p->uid);
			rc = -1;
		}
		free(dir);
		free(file);
		if (rc == 0)
			*path = real;
		else
			free(real);
		return rc;
	}
	return 0;
}

/* A subject: a guest's name or VMID, or a node's name. */
static bool subject_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-')
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == n;
}

/* Replace member key of o with a string (NULL: remove it). 0 or -1. */
static int set_member(json_object *o, const char *key, const char *v)
{
	json_object_object_del(o, key);
	return v ? json_object_object_add(o, key, json_object_new_string(v)) : 0;
}

/* An image build for a non-root peer: the image is a catalogue name, its
 * file the daemon's own resolution of it. 0 or -1 (*why). */
static int check_image(const char *subject, json_object *params, const struct submit_peer *peer,
		       const struct conf *conf, char **why)
{
	const char *name = json_str(params, "image");
	char *path = NULL;
	if (!name || strcmp(name, subject) != 0) {
		err_setf(why, "image %s: \"image\" is not the subject's name", subject);
		return -1;
	}
	if (resolve_named(&image_kind, name, peer, (const char *const *)conf->paths.templates,
			  &path, why) < 0)
		return -1;
	if (!path) {
		err_setf(why, "image %s: no such image in the catalogue", subject);
		return -1;
	}
	int rc = set_member(params, "image_path", path);
	if (rc < 0)
		err_setf(why, "out of memory");
	free(path);
	return rc;
}

/* Does any string in v (params, at any depth) hold a control character?
 * Then *why names the member. A newline in a value would reach PVE's
 * config, or a guest's file, as it is. */
static bool control_chars_in(const char *wf, const char *subject, const char *member,
			     json_object *v, char **why)
{
	if (json_object_is_type(v, json_type_string)) {
		for (const char *p = json_object_get_string(v); *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f) {
				err_setf(why, "%s %s: \"%s\": a value holds a control character "
					 "(0x%02x)", wf, subject, member, (unsigned)(unsigned char)*p);
				return true;
			}
	} else if (json_object_is_type(v, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (control_chars_in(wf, subject, member, json_object_array_get_idx(v, i), why))
				return true;
	} else if (json_object_is_type(v, json_type_object)) {
		json_object_object_foreach(v, k, x) {
			(void)k;
			if (control_chars_in(wf, subject, member, x, why))
				return true;
		}
	}
	return false;
}

static bool control_chars(const char *wf, const char *subject, json_object *params, char **why)
{
	json_object_object_foreach(params, key, val)
		if (control_chars_in(wf, subject, key, val, why))
			return true;
	return false;
}

/* An up job's params checked as the CLI checks its request (names, --set
 * keys and values against PVE's schema, the pool): a raw socket peer gets
 * the same refusals before a job is stored. 0 or -1 (*why). */
static int check_up(const char *wf, const char *subject, json_object *params,
		    const struct conf *conf, char **why)
{
	if (strcmp(wf, "up") != 0)
		return 0;
	struct pve_error e = {0};
	if (up_check_params(subject, params, conf, &e) == 0)
		return 0;
	/* a template's ${pubkey} without a key: the daemon's file to edit */
	bool key = e.message && strstr(e.message, "${pubkey}") && !json_str(params, "pubkey");
	err_setf(why, "%s%s%s%s", e.message ? e.message : "up: refused",
		 key ? " (pvagentd's configuration: " : "", key && conf->path ? conf->path : "",
		 key ? ")" : "");
	pve_error_clear(&e);
	return -1;
}

/* up's "pubkey": the daemon's own ([ssh] identity's .pub), never the
 * submitter's; none without an identity (a template that needs one is
 * then refused by check_up). 0, or -1 (*why). */
static int daemon_pubkey(json_object *params, const struct conf *conf, char **why)
{
	char *pubkey = conf_read_pubkey(conf);
	int rc = set_member(params, "pubkey", pubkey);
	if (rc < 0)
		err_setf(why, "out of memory");
	free(pubkey);
	return rc;
}

static const struct wf_members *members_of(const char *wf)
{
	for (size_t i = 0; wf && i < sizeof table / sizeof table[0]; i++)
		if (strcmp(table[i].wf, wf) == 0)
			return &table[i];
	return NULL;
}

bool submit_workflow_known(const char *wf)
{
	return members_of(wf) != NULL;
}

int submit_check(const char *wf, const char *subject, json_object *params,
		 const struct submit_peer *peer, const struct conf *conf, char **why)
{
	*why = NULL;
	const struct wf_members *m = members_of(wf);
	if (!m) {
		err_setf(why, "the daemon does not run '%.64s' (up, down, inject, virtio, bench, "
			 "migrate, drain, undrain, rolling, image)", wf);
		return -1;
	}
	if (!subject || !subject_valid(subject)) {
		err_setf(why, "%s: the subject is not a guest's or a node's name", wf);
		return -1;
	}
	if (!params || !json_object_is_type(params, json_type_object)) {
		err_setf(why, "%s %s: \"params\" is not an object", wf, subject);
		return -1;
	}
	json_object_object_foreach(params, key, val) {
		(void)val;
		bool known = false;
		for (size_t i = 0; m->members[i] && !known; i++)
			known = strcmp(m->members[i], key) == 0;
		if (!known) {
			err_setf(why, "%s %s: \"%.64s\" is not one of its params", wf, subject, key);
			return -1;
		}
	}
	if (control_chars(wf, subject, params, why))
		return -1;
	/* up's key is the daemon's, whoever submits: its child runs with the
	 * daemon's configuration, and the submitting CLI sends none */
	if (strcmp(wf, "up") == 0 && daemon_pubkey(params, conf, why) < 0)
		return -1;
	if (peer->uid == 0 || peer->uid == geteuid())
		return check_up(wf, subject, params, conf, why);
	if (strcmp(wf, "image") == 0)
		return check_image(subject, params, peer, conf, why);
	json_object *t = json_object_object_get(params, "template");
	if (t && !json_object_is_type(t, json_type_string)) {
		err_setf(why, "%s %s: \"template\" is not a name", wf, subject);
		return -1;
	}
	char *path = NULL;
	if (t && resolve_named(&template_kind, json_object_get_string(t), peer,
			       (const char *const *)conf->paths.templates, &path, why) < 0)
		return -1;
	if (strcmp(wf, "up") != 0) {
		free(path);
		return 0;
	}
	if (!path) {
		err_setf(why, "up %s: %s", subject, t ? "no such template in the template directories"
						   : "no template");
		return -1;
	}
	/* the peer's own idea of the file: only the same file */
	const char *given = json_str(params, "template_path");
	char *real = given ? realpath(given, NULL) : NULL;
	bool same = !given || (real && strcmp(real, path) == 0);
	free(real);
	if (!same) {
		err_setf(why, "up %s: \"template_path\" is not the file of template '%s'", subject,
			 json_object_get_string(t));
		free(path);
		return -1;
	}
	int rc = set_member(params, "template_path", path);
	if (rc < 0)
		err_setf(why, "out of memory");
	free(path);
	return rc < 0 ? rc : check_up(wf, subject, params, conf, why);
}
