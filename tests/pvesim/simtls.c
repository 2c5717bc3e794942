/* simtls.c - make the simulator's self-signed certificate with GnuTLS
 * (ECDSA P-256, SAN = the listen address and localhost) and compute the
 * fingerprint the way PVE shows it: SHA-256 over the DER certificate, in
 * colon-separated upper-case hex. */
#include "simtls.h"

#include "util.h"

#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *datum_str(const gnutls_datum_t *d)
{
	char *s = malloc(d->size + 1);
	if (s) {
		memcpy(s, d->data, d->size);
		s[d->size] = '\0';
	}
	return s;
}

static char *fingerprint_of(const gnutls_datum_t *der)
{
	unsigned char md[32];
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, der->data, der->size, md) < 0)
		return NULL;
	struct sbuf b = {0};
	for (size_t i = 0; i < sizeof md; i++)
		if (sbuf_addf(&b, "%s%02X", i ? ":" : "", md[i]) < 0) {
			sbuf_free(&b);
			return NULL;
		}
	return sbuf_steal(&b);
}

int simtls_make(struct simtls *t, const char *ip, char **err)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	gnutls_datum_t pem = {0}, kpem = {0}, der = {0};
	const char *step = "init";
	int rc;
	struct in_addr a4;

	memset(t, 0, sizeof *t);
	if (inet_pton(AF_INET, ip, &a4) != 1) {
		*err = strprintf("not an IPv4 address: '%s'", ip);
		return -1;
	}
	if ((rc = gnutls_x509_privkey_init(&key)) < 0)
		goto fail;
	step = "generate key";
	if ((rc = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
		GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0)
		goto fail;
	step = "certificate";
	if ((rc = gnutls_x509_crt_init(&crt)) < 0)
		goto fail;
	unsigned char serial[8];
	if ((rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof serial)) < 0)
		goto fail;
	serial[0] &= 0x7f;
	time_t now = time(NULL);
	static const char cn[] = "pvesim.invalid";
	static const char org[] = "pvagent PVE simulator";
	if ((rc = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
	    (rc = gnutls_x509_crt_set_serial(crt, serial, sizeof serial)) < 0 ||
	    (rc = gnutls_x509_crt_set_activation_time(crt, now - 3600)) < 0 ||
	    (rc = gnutls_x509_crt_set_expiration_time(crt, now + 86400)) < 0 ||
	    (rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0,
						cn, sizeof cn - 1)) < 0 ||
	    (rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0,
						org, sizeof org - 1)) < 0 ||
	    (rc = gnutls_x509_crt_set_key(crt, key)) < 0 ||
	    (rc = gnutls_x509_crt_set_basic_constraints(crt, 1, -1)) < 0 ||
	    (rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE |
						GNUTLS_KEY_KEY_CERT_SIGN)) < 0 ||
	    (rc = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0 ||
	    (rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, &a4,
						       sizeof a4, GNUTLS_FSAN_SET)) < 0 ||
	    (rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, "localhost",
						       9, GNUTLS_FSAN_APPEND)) < 0)
		goto fail;
	step = "sign";
	if ((rc = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0)
		goto fail;
	step = "export";
	if ((rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &pem)) < 0 ||
	    (rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_DER, &der)) < 0 ||
	    (rc = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &kpem)) < 0)
		goto fail;
	t->cert_pem = datum_str(&pem);
	t->key_pem = datum_str(&kpem);
	t->fingerprint = fingerprint_of(&der);
	gnutls_free(pem.data);
	gnutls_free(der.data);
	gnutls_free(kpem.data);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	if (!t->cert_pem || !t->key_pem || !t->fingerprint) {
		simtls_free(t);
		*err = strprintf("out of memory making the certificate");
		return -1;
	}
	return 0;
fail:
	*err = strprintf("certificate %s: %s", step, gnutls_strerror(rc));
	gnutls_free(pem.data);
	gnutls_free(der.data);
	gnutls_free(kpem.data);
	if (crt)
		gnutls_x509_crt_deinit(crt);
	if (key)
		gnutls_x509_privkey_deinit(key);
	return -1;
}

void simtls_free(struct simtls *t)
{
	free(t->cert_pem);
	free(t->key_pem);
	free(t->fingerprint);
	memset(t, 0, sizeof *t);
}
