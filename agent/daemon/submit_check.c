/* submit_check.c - the params a peer of pvagentd may submit, and the
 * files they may make the daemon read (submit_check.h). */
#include "submit_check.h"

#include "ctl_server.h"
#include "json.h"
#include "tmpl.h"
#include "util.h"
#include "wf_params.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The workflow's own check of what its members say together (up's:
 * as the CLI checks its request), so a raw socket peer gets the same
 * refusals before a job is stored. 0 or -1 (*why). */
static int check_together(const struct job_params_decl *d, const char *subject,
			  json_object *params, const struct conf *conf, char **why)
{
	struct pve_error e = {0};
	if (!d->check || d->check(subject, params, conf, &e) == 0)
		return 0;
	/* a template's ${pubkey} without a key: the daemon's file to edit */
	bool key = e.message && strstr(e.message, "${pubkey}") && !json_str(params, "pubkey");
	err_setf(why, "%s%s%s%s", e.message ? e.message : "refused",
		 key ? " (pvagentd's configuration: " : "", key && conf->path ? conf->path : "",
		 key ? ")" : "");
	pve_error_clear(&e);
	return -1;
}

/* "pubkey" (up's ${pubkey}): the daemon's own ([ssh] identity's .pub),
 * never the submitter's; none without an identity (a template that needs
 * one is then refused by its check). 0, or -1 (*why). */
static int daemon_pubkey(json_object *params, const struct conf *conf, char **why)
{
	char *pubkey = conf_read_pubkey(conf);
	int rc = set_member(params, "pubkey", pubkey);
	if (rc < 0)
		err_setf(why, "out of memory");
	free(pubkey);
	return rc;
}

bool submit_workflow_known(const char *wf)
{
	return wf_params_find(wf) != NULL;
}

int submit_check(const char *wf, const char *subject, json_object *params,
		 const struct submit_peer *peer, const struct conf *conf, char **why)
{
	*why = NULL;
	const struct job_params_decl *d = wf_params_find(wf);
	if (!d) {
		err_setf(why, "the daemon does not run '%.64s' (up, down, inject, virtio, bench, "
			 "migrate, drain, undrain, rolling, image)", wf);
		return -1;
	}
	if (!subject || !subject_valid(subject)) {
		err_setf(why, "%s: the subject is not a guest's or a node's name", wf);
		return -1;
	}
	/* the members a peer may set, of their types and ranges: the engine's
	 * check (job_submit's words) */
	if (job_params_check(d, subject, params, true, why) < 0)
		return -1;
	/* the key is the daemon's, whoever submits: its child runs with the
	 * daemon's configuration, and the submitting CLI sends none */
	if (job_param_find(d, "pubkey") && daemon_pubkey(params, conf, why) < 0)
		return -1;
	if (peer->uid == 0 || peer->uid == geteuid())
		return check_together(d, subject, params, conf, why);
	if (job_param_find(d, "image_path"))
		return check_image(subject, params, peer, conf, why);
	/* a template: a name in the template directories, which the peer may
	 * read; a workflow that loads it ("template_path") needs one there */
	const char *t = json_str(params, "template");
	bool loads = job_param_find(d, "template_path") != NULL;
	char *path = NULL;
	if (t && resolve_named(&template_kind, t, peer, (const char *const *)conf->paths.templates,
			       &path, why) < 0)
		return -1;
	if (!loads) {
		free(path);
		return check_together(d, subject, params, conf, why);
	}
	if (!path) {
		err_setf(why, "%s %s: %s", wf, subject,
			 t ? "no such template in the template directories" : "no template");
		return -1;
	}
	/* the peer's own idea of the file: only the same file */
	const char *given = json_str(params, "template_path");
	char *real = given ? realpath(given, NULL) : NULL;
	bool same = !given || (real && strcmp(real, path) == 0);
	free(real);
	if (!same) {
		err_setf(why, "%s %s: \"template_path\" is not the file of template '%s'", wf,
			 subject, t);
		free(path);
		return -1;
	}
	int rc = set_member(params, "template_path", path);
	if (rc < 0)
		err_setf(why, "out of memory");
	free(path);
	return rc < 0 ? rc : check_together(d, subject, params, conf, why);
}
