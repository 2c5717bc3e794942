/* ssh_quote.c - the one quoting of everything that reaches a remote shell
 * (ssh.h): POSIX single quotes for an argument, a whole argv, and a script
 * with its arguments. Pure. */
#include "ssh.h"

#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ssh_quote_to(struct sbuf *b, const char *arg)
{
	if (sbuf_addc(b, '\'') < 0)
		return -1;
	for (const char *p = arg; *p; p++) {
		if (*p == '\'') {
			if (sbuf_add(b, "'\\''") < 0)
				return -1;
		} else if (sbuf_addc(b, *p) < 0) {
			return -1;
		}
	}
	return sbuf_addc(b, '\'');
}

char *ssh_quote(const char *arg)
{
	struct sbuf b = {0};
	if (ssh_quote_to(&b, arg) < 0) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

char *ssh_build_argv(const char *const *argv)
{
	if (!argv || !argv[0]) {
		errno = EINVAL;
		return NULL;
	}
	struct sbuf b = {0};
	for (size_t i = 0; argv[i]; i++) {
		if ((i && sbuf_addc(&b, ' ') < 0) || ssh_quote_to(&b, argv[i]) < 0) {
			sbuf_free(&b);
			errno = ENOMEM;
			return NULL;
		}
	}
	return sbuf_steal(&b);
}

char *ssh_build_script(const char *script, const char *const *args)
{
	struct sbuf b = {0};
	size_t used = 0;
	size_t nargs = 0;
	while (args && args[nargs])
		nargs++;
	for (const char *p = script; *p; p++) {
		int rc;
		if (*p != '%') {
			rc = sbuf_addc(&b, *p);
		} else if (p[1] == '%') {
			rc = sbuf_addc(&b, '%');
			p++;
		} else if (p[1] == 's' && used < nargs) {
			rc = ssh_quote_to(&b, args[used++]);
			p++;
		} else {
			sbuf_free(&b);
			errno = EINVAL;
			return NULL;
		}
		if (rc < 0) {
			sbuf_free(&b);
			errno = ENOMEM;
			return NULL;
		}
	}
	if (used != nargs) {
		sbuf_free(&b);
		errno = EINVAL;
		return NULL;
	}
	return sbuf_steal(&b);
}
