/* simtls.h - the simulator's fresh self-signed TLS certificate and its
 * PVE-style SHA-256 fingerprint. */
#ifndef PVESIM_SIMTLS_H
#define PVESIM_SIMTLS_H

struct simtls {
	char *cert_pem;    /* PEM certificate */
	char *key_pem;     /* PEM private key */
	char *fingerprint; /* SHA-256 of the DER certificate, "AA:BB:..." */
};

/* Make a certificate for the IPv4 address ip (also "localhost"), valid
 * for a day. Returns 0, or -1 with a malloc'd *err. */
int simtls_make(struct simtls *t, const char *ip, char **err);
void simtls_free(struct simtls *t);

#endif
