/* auth.c - ticket store and API-token header parsing (see auth.h).
 * Tickets look like PVE's: "PVE:root@pam:6745A2B1::<base64 signature>",
 * CSRF tokens like "6745A2B1:<base64>"; the half-authenticated ticket of a
 * user with TFA carries the challenge instead of the user name, as
 * create_ticket_do makes it ("PVE:!tfa!{...}:6745A2B1::<signature>"). The signatures are random and the
 * store remembers them, so a ticket cannot be forged by editing it. */
#include "auth.h"

#include "util.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>

struct ticket {
	char *ticket, *csrf, *userid;
	double issued;
	bool tfa; /* half-authenticated: only the TFA step takes it */
};

struct auth {
	struct ticket *v;
	size_t n, cap;
};

struct auth *auth_new(void)
{
	return calloc(1, sizeof(struct auth));
}

void auth_free(struct auth *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++) {
		free(a->v[i].ticket);
		free(a->v[i].csrf);
		free(a->v[i].userid);
	}
	free(a->v);
	free(a);
}

static char *random_b64(size_t nbytes)
{
	unsigned char raw[64];
	gnutls_datum_t in = {raw, (unsigned)nbytes}, out = {0};
	if (nbytes > sizeof raw || gnutls_rnd(GNUTLS_RND_NONCE, raw, nbytes) < 0 ||
	    gnutls_base64_encode2(&in, &out) < 0)
		return NULL;
	char *s = strndup((char *)out.data, out.size);
	gnutls_free(out.data);
	return s;
}

int auth_issue(struct auth *a, const char *userid, bool tfa, double now, char **ticket,
	       char **csrf)
{
	*ticket = *csrf = NULL;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		struct ticket *nv = realloc(a->v, cap * sizeof *nv);
		if (!nv)
			return -1;
		a->v = nv;
		a->cap = cap;
	}
	unsigned long stamp = (unsigned long)now;
	char *sig = random_b64(48), *csig = random_b64(24);
	struct ticket t = {
		/* PVE::Ticket::assemble_rsa_ticket escapes ':' in the data */
		.ticket = !sig ? NULL
			: tfa ? strprintf("PVE:!tfa!{\"totp\"%%3Atrue}:%08lX::%s", stamp, sig)
			      : strprintf("PVE:%s:%08lX::%s", userid, stamp, sig),
		.csrf = csig ? strprintf("%08lX:%s", stamp, csig) : NULL,
		.userid = strdup(userid),
		.issued = now,
		.tfa = tfa,
	};
	free(sig);
	free(csig);
	if (!t.ticket || !t.csrf || !t.userid ||
	    !(*ticket = strdup(t.ticket)) || !(*csrf = strdup(t.csrf))) {
		free(t.ticket);
		free(t.csrf);
		free(t.userid);
		free(*ticket);
		*ticket = NULL;
		return -1;
	}
	a->v[a->n++] = t;
	return 0;
}

enum auth_ticket_result auth_check_ticket(const struct auth *a, const char *ticket,
					  double now, const char **userid, const char **csrf)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct ticket *t = &a->v[i];
		if (strcmp(t->ticket, ticket) != 0)
			continue;
		if (t->tfa) /* verify_ticket without the user as AAD fails */
			return AUTH_UNKNOWN;
		if (now - t->issued > AUTH_TICKET_LIFETIME || now < t->issued - 300)
			return AUTH_EXPIRED;
		*userid = t->userid;
		*csrf = t->csrf;
		return AUTH_OK;
	}
	return AUTH_UNKNOWN;
}

bool auth_check_tfa_ticket(const struct auth *a, const char *ticket, const char *userid,
			   double now)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct ticket *t = &a->v[i];
		if (t->tfa && strcmp(t->ticket, ticket) == 0)
			return strcmp(t->userid, userid) == 0 && now - t->issued <= AUTH_TICKET_LIFETIME &&
			       now >= t->issued - 300;
	}
	return false;
}

bool auth_parse_token_header(const char *h, char **id, char **secret)
{
	static const char prefix[] = "PVEAPIToken=";
	*id = *secret = NULL;
	if (strncmp(h, prefix, sizeof prefix - 1) != 0)
		return false;
	h += sizeof prefix - 1;
	const char *bang = strchr(h, '!');
	const char *eq = bang ? strchr(bang, '=') : NULL;
	if (!bang || !eq || eq == bang + 1 || !eq[1] || bang == h)
		return false;
	*id = strndup(h, (size_t)(eq - h));
	*secret = strdup(eq + 1);
	if (!*id || !*secret) {
		free(*id);
		free(*secret);
		*id = *secret = NULL;
		return false;
	}
	return true;
}
