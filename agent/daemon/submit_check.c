/* submit_check.c - the files a command line submitted to pvagentd may
 * make it read (submit_check.h). */
#include "submit_check.h"

#include "ctl_server.h"
#include "tmpl.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The long option naming a file (a template) in the commands the daemon
 * runs (up, inject, bench, virtio: pvagent.c, cli_guest.c), and its short
 * letter. */
#define TEMPLATE_LONG "template"
#define TEMPLATE_SHORT 't'
/* The short letters that take a value in those commands' getopt strings
 * ("t:n:" of up, "t:" of the others), so that the rest of "-nt1" is a
 * value, not more letters; neither is a flag in another one. */
static const char value_letters[] = "tn";

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

/* The value of a template option at argv position pos. 0 or -1 (*why). */
static int check_template(const char *v, size_t pos, const struct submit_peer *p,
			  const char *const *dirs, char **why)
{
	if (!v) {
		err_setf(why, "argument %zu: the template option has no value", pos);
		return -1;
	}
	if (!tmpl_name_valid(v)) {
		err_setf(why, "argument %zu: a template is a name from the template directories "
			 "(letters, digits, '.', '_', '-'; no path, no '..')", pos);
		return -1;
	}
	for (size_t i = 0; dirs && dirs[i]; i++) {
		char *path = strprintf("%s/%s.tmpl", dirs[i], v);
		if (!path) {
			err_setf(why, "out of memory");
			return -1;
		}
		if (access(path, F_OK) < 0) {
			free(path);
			continue;
		}
		char *real = realpath(path, NULL), *dir = realpath(dirs[i], NULL);
		struct stat st;
		int rc = 0;
		if (!real || !dir || !inside(real, dir)) {
			err_setf(why, "argument %zu: template '%s' %s", pos, v,
				 real && dir ? "leads out of its directory" : "cannot be resolved");
			rc = -1;
		} else if (stat(real, &st) < 0 || !S_ISREG(st.st_mode) || !peer_reads(&st, p)) {
			err_setf(why, "argument %zu: template '%s' is not a file uid %u may read", pos,
				 v, (unsigned)p->uid);
			rc = -1;
		}
		free(real);
		free(dir);
		free(path);
		return rc;
	}
	return 0; /* none: the command says so, having read nothing */
}

int submit_check(const char *const *argv, size_t argc, const struct submit_peer *peer,
		 const char *const *dirs, char **why)
{
	*why = NULL;
	if (peer->uid == 0 || peer->uid == geteuid())
		return 0;
	for (size_t i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (a[0] != '-' || a[1] == '\0')
			continue;
		const char *v = NULL;
		size_t pos = i;
		if (a[1] == '-') {
			/* --template, --template=V and the prefixes getopt takes */
			size_t n = strcspn(a + 2, "=");
			if (n == 0 || strncmp(a + 2, TEMPLATE_LONG, n) != 0 ||
			    n > strlen(TEMPLATE_LONG))
				continue;
			v = a[2 + n] == '=' ? a + 3 + n : i + 1 < argc ? argv[++i] : NULL;
		} else {
			/* a cluster of letters: -dt NAME, -tNAME */
			size_t k = 1;
			while (a[k] && !strchr(value_letters, a[k]))
				k++;
			/* (another option's value, next, is looked at as an
			 * argument of its own: at worst a refusal too many) */
			if (a[k] != TEMPLATE_SHORT)
				continue;
			v = a[k + 1] ? a + k + 1 : i + 1 < argc ? argv[++i] : NULL;
		}
		if (check_template(v, pos, peer, dirs, why) < 0)
			return -1;
	}
	return 0;
}
