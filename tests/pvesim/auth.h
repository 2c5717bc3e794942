/* auth.h - the simulator's ticket store: PVE-format tickets with their
 * CSRF prevention tokens, expiring after two hours of simulated time, and
 * parsing of the PVEAPIToken authorization header. */
#ifndef PVESIM_AUTH_H
#define PVESIM_AUTH_H

#include <stdbool.h>

#define AUTH_TICKET_LIFETIME 7200.0 /* seconds of simulated time, as PVE */

struct auth;

struct auth *auth_new(void);
void auth_free(struct auth *a);

/* Issue a ticket for userid (tfa: the half-authenticated ticket of a user
 * with two-factor authentication, which no request but the TFA step
 * accepts). *ticket and *csrf are malloc'd. Returns 0 or -1 (out of
 * memory). */
int auth_issue(struct auth *a, const char *userid, bool tfa, double now, char **ticket,
	       char **csrf);

enum auth_ticket_result { AUTH_OK, AUTH_UNKNOWN, AUTH_EXPIRED };

/* Look a ticket up at time now; on AUTH_OK sets the borrowed userid and
 * csrf token. */
enum auth_ticket_result auth_check_ticket(const struct auth *a, const char *ticket,
					  double now, const char **userid, const char **csrf);

/* Is ticket userid's half-authenticated ticket, still valid at now (the
 * tfa-challenge of the TFA step)? */
bool auth_check_tfa_ticket(const struct auth *a, const char *ticket, const char *userid,
			   double now);

/* Split "PVEAPIToken=USER@REALM!NAME=SECRET" into malloc'd id and secret.
 * Returns false if the header is not of that form. */
bool auth_parse_token_header(const char *header, char **id, char **secret);

#endif
