/* test_pve.c - Criterion tests for agent/pve.* (and task_wait against the
 * simulator): form encoding, sshkeys double encoding, error classification
 * from canned answers, error formatting and exit codes, fingerprints,
 * backoff, client options; then integration tests against tests/pvesim:
 * TLS pinning before credentials, token and ticket auth, CSRF, each retry
 * and non-retry class, no re-issued task, task waits. */
#include "log.h"
#include "pve.h"
#include "simproc.h"
#include "task.h"
#include "util.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------- */

struct capture {
	struct sbuf text;
	int warnings;
};

static void cap_sink(void *ctx, enum log_level lvl, const char *line)
{
	struct capture *c = ctx;
	if (lvl == LOGL_WARN)
		c->warnings++;
	cr_assert_eq(sbuf_add(&c->text, line), 0);
	cr_assert_eq(sbuf_addc(&c->text, '\n'), 0);
}

/* Fake clock: sleeping advances time, nothing really waits. With sp set,
 * a sleep also moves the simulator's clock by as much. */
struct fake_clock {
	double t;
	double slept[64];
	int n;
	double total;
	struct simproc *sp;
};

static double fake_now(void *ctx)
{
	return ((struct fake_clock *)ctx)->t;
}

static void fake_sleep(void *ctx, double s)
{
	struct fake_clock *f = ctx;
	if (f->n < 64)
		f->slept[f->n] = s;
	f->n++;
	f->t += s;
	f->total += s;
	if (f->sp)
		cr_assert_eq(simproc_advance(f->sp, s), 0);
}

/* The formatted error for assertion messages (kept until the next call). */
static const char *etext(const struct pve_error *e)
{
	static char *last;
	free(last);
	last = pve_error_format(e);
	return last ? last : "?";
}

/* ---- form encoding ---------------------------------------------------------- */

Test(form, encodes_in_order_with_booleans_and_ints)
{
	struct pve_params p = {0};
	cr_assert_eq(pve_params_add(&p, "name", "web 01"), 0);
	cr_assert_eq(pve_params_add_int(&p, "vmid", 100), 0);
	cr_assert_eq(pve_params_add_bool(&p, "full", true), 0);
	cr_assert_eq(pve_params_add_bool(&p, "online", false), 0);
	cr_assert_eq(pve_params_add(&p, "net0", "virtio=AA:BB:CC:DD:EE:FF,bridge=vmbr0"), 0);
	cr_assert_eq(pve_params_addf(&p, "description", "a&b=c+d/%s", "é"), 0);
	char *f = pve_form_encode(&p);
	cr_assert_not_null(f);
	cr_expect_str_eq(f, "name=web%2001&vmid=100&full=1&online=0"
			    "&net0=virtio%3DAA%3ABB%3ACC%3ADD%3AEE%3AFF%2Cbridge%3Dvmbr0"
			    "&description=a%26b%3Dc%2Bd%2F%C3%A9");
	cr_expect_str_eq(pve_params_get(&p, "full"), "1");
	cr_expect_null(pve_params_get(&p, "nope"));
	cr_expect_not(p.failed);
	free(f);
	pve_params_free(&p);

	f = pve_form_encode(NULL);
	cr_expect_str_eq(f, "");
	free(f);
	struct pve_params empty = {0};
	f = pve_form_encode(&empty);
	cr_expect_str_eq(f, "");
	free(f);
}

Test(form, sshkeys_double_encoded)
{
	struct pve_params p = {0};
	cr_assert_eq(pve_params_add_sshkeys(&p, "sshkeys",
					    "ssh-ed25519 AAAAC3Nza+/= me@host\n"
					    "ssh-ed25519 BBBB other"),
		     0);
	/* The value itself is percent-encoded with %20 for spaces ... */
	cr_expect_str_eq(pve_params_get(&p, "sshkeys"),
			 "ssh-ed25519%20AAAAC3Nza%2B%2F%3D%20me%40host%0Assh-ed25519%20BBBB%20other");
	/* ... and form encoding encodes it again. */
	char *f = pve_form_encode(&p);
	cr_expect_str_eq(f, "sshkeys=ssh-ed25519%2520AAAAC3Nza%252B%252F%253D%2520me%2540host"
			    "%250Assh-ed25519%2520BBBB%2520other");
	free(f);
	pve_params_free(&p);
}

Test(form, failed_list_is_sticky)
{
	struct pve_params p = {0};
	cr_expect_eq(pve_params_add(&p, "k", NULL), -1);
	cr_expect(p.failed);
	cr_expect_eq(pve_params_add(&p, "a", "b"), 0);
	cr_expect(p.failed);
	pve_params_free(&p);
	cr_expect_not(p.failed);
}

Test(form, path_escape_keeps_upid)
{
	char *e = pve_path_escape("UPID:pve1:000A1B2C:0123ABCD:65F0A1B2:qmclone:9000:root@pam!tok:");
	cr_expect_str_eq(e, "UPID:pve1:000A1B2C:0123ABCD:65F0A1B2:qmclone:9000:root@pam!tok:");
	free(e);
	e = pve_path_escape("a b/c?d#e");
	cr_expect_str_eq(e, "a%20b%2Fc%3Fd%23e");
	free(e);
	e = pve_percent_encode("a b");
	cr_expect_str_eq(e, "a%20b");
	free(e);
}

/* ---- classification ------------------------------------------------------------ */

Test(classify, canned_answers)
{
	static const struct {
		int st;
		const char *msg;
		bool params;
		enum pve_err_kind want;
	} cases[] = {
		{200, NULL, false, PVE_OK},
		{401, "authentication failure", false, PVE_ERR_AUTH},
		{403, "Permission check failed (/vms/100, VM.Allocate)", false, PVE_ERR_PERM},
		{400, "Parameter verification failed.", true, PVE_ERR_PARAM},
		{400, "bad request", false, PVE_ERR_BAD_REQUEST},
		{500, "VM 100 already exists on node 'pve1'", false, PVE_ERR_EXISTS},
		{500, "unable to create VM 107: config file already exists", false, PVE_ERR_EXISTS},
		{500, "unable to create VM 106 - VM 106 already exists on node 'pve2'", false,
		 PVE_ERR_EXISTS},
		{500, "VM is locked (clone)", false, PVE_ERR_LOCKED},
		{500, "CT is locked (migrate)", false, PVE_ERR_LOCKED},
		{500, "can't lock file '/var/lock/qemu-server/lock-101.conf' - got timeout", false,
		 PVE_ERR_TRANSIENT},
		{500, "got no worker upid - start worker failed", false, PVE_ERR_TRANSIENT},
		{502, "Bad Gateway", false, PVE_ERR_TRANSIENT},
		{503, "Service Unavailable", false, PVE_ERR_TRANSIENT},
		{504, "Gateway Timeout", false, PVE_ERR_TRANSIENT},
		{596, "Connection timed out", false, PVE_ERR_TRANSIENT},
		{500, "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist", false,
		 PVE_ERR_NOT_FOUND},
		{500, "no such VM ('100')", false, PVE_ERR_NOT_FOUND},
		{404, "Not Found", false, PVE_ERR_NOT_FOUND},
		{500, "detected modified configuration - file changed by other user? Try again.",
		 false, PVE_ERR_CONFLICT},
		{501, "Method 'GET /x' not implemented", false, PVE_ERR_NOT_IMPLEMENTED},
		{500, "storage 'local' does not support content-type 'images'", false, PVE_ERR_API},
		{500, NULL, false, PVE_ERR_API},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		cr_expect_eq(pve_classify(cases[i].st, cases[i].msg, cases[i].params), cases[i].want,
			     "%d %s -> %s", cases[i].st, cases[i].msg ? cases[i].msg : "",
			     pve_err_kind_name(pve_classify(cases[i].st, cases[i].msg, cases[i].params)));
	cr_expect(pve_err_retryable(PVE_ERR_TRANSIENT));
	cr_expect(pve_err_retryable(PVE_ERR_CONNECT));
	cr_expect_not(pve_err_retryable(PVE_ERR_PARAM));
	cr_expect_not(pve_err_retryable(PVE_ERR_EXISTS));
	cr_expect_not(pve_err_retryable(PVE_ERR_PERM));
	cr_expect_not(pve_err_retryable(PVE_ERR_AUTH));
}

static int decode(int st, const char *reason, const char *body, json_object **d,
		  struct pve_error *e)
{
	return pve_decode_response(st, reason, body, body ? strlen(body) : 0, d, e);
}

Test(decode, success_unwraps_data)
{
	json_object *d = NULL;
	struct pve_error e = {0};
	cr_assert_eq(decode(200, "OK", "{\"data\":{\"vmid\":100}}", &d, &e), 0);
	cr_assert_not_null(d);
	json_object *v = NULL;
	cr_expect(json_object_object_get_ex(d, "vmid", &v));
	cr_expect_eq(json_object_get_int(v), 100);
	json_object_put(d);
	cr_assert_eq(decode(200, "OK", "{\"data\":null}", &d, &e), 0);
	cr_expect_null(d);
	cr_assert_eq(decode(200, "OK", "{\"data\":\"UPID:a:1:2:3:t:i:u:\"}", &d, &e), 0);
	cr_expect_str_eq(json_object_get_string(d), "UPID:a:1:2:3:t:i:u:");
	json_object_put(d);
	cr_expect_eq(decode(200, "OK", "<html>proxy</html>", &d, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_PROTOCOL);
	cr_expect_eq(decode(200, "OK", "{\"nodata\":1}", &d, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_PROTOCOL);
	cr_expect_null(d);
	pve_error_clear(&e);
}

Test(decode, param_errors_reported_per_parameter)
{
	json_object *d = NULL;
	struct pve_error e = {0};
	const char *body = "{\"data\":null,\"errors\":{\"net0\":\"invalid format - format error\\n"
			   "net0.model: value 'virtioo' does not have a value in the enumeration\\n\","
			   "\"memory\":\"value must have a minimum value of 16\\n\"}}";
	cr_assert_eq(decode(400, "Parameter verification failed.", body, &d, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_PARAM);
	cr_expect_eq(e.http_status, 400);
	cr_expect_str_eq(e.message, "Parameter verification failed.");
	cr_assert_not_null(e.param_errors);
	cr_expect_eq(json_object_object_length(e.param_errors), 2);
	e.what = strdup("POST /nodes/pve1/qemu");
	char *f = pve_error_format(&e);
	cr_assert_not_null(f);
	cr_expect(strstr(f, "POST /nodes/pve1/qemu: Parameter verification failed. (HTTP 400)") == f,
		  "%s", f);
	cr_expect(strstr(f, "\n  memory: value must have a minimum value of 16") != NULL, "%s", f);
	cr_expect(strstr(f, "\n  net0: invalid format") != NULL, "%s", f);
	free(f);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_FAILED);
	pve_error_clear(&e);
	cr_expect_eq(e.kind, PVE_OK);
	cr_expect_null(e.param_errors);
}

/* A 403 says what is missing, where, and what to grant; so does a task
 * that failed on a permission check (PVE's config worker). */
Test(decode, permission_refusal_names_privilege_path_and_grant)
{
	struct pve_error e = {0};
	cr_assert_eq(decode(403, "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)\n",
			    "{\"data\":null}", NULL, &e),
		     -1);
	cr_expect_eq(e.kind, PVE_ERR_PERM);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_FAILED);
	char *f = pve_error_format(&e);
	cr_assert_not_null(f);
	cr_expect(strstr(f, "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use) "
			    "(HTTP 403)\n  the API token lacks the privilege SDN.Use on "
			    "/sdn/zones/localnetwork/vmbr0; grant it there"),
		  "%s", f);
	cr_expect(strstr(f, "pveum role modify PVAgent --append 1 --privs SDN.Use"), "%s", f);
	cr_expect(strstr(f, "pveum acl modify /sdn/zones/localnetwork/vmbr0 --tokens"), "%s", f);
	free(f);
	pve_error_clear(&e);
	/* check_any: one of them */
	pve_error_set(&e, PVE_ERR_TASK, "task failed: Permission check failed (/vms/190, "
					"VM.Config.Cloudinit|VM.Config.Network)");
	f = pve_error_format(&e);
	cr_expect(strstr(f, "lacks the privilege (one of) VM.Config.Cloudinit|VM.Config.Network on "
			    "/vms/190") && strstr(f, "--privs VM.Config.Cloudinit,"),
		  "%s", f);
	free(f);
	/* other errors get no such line */
	pve_error_set(&e, PVE_ERR_API, "VM 100 already exists");
	f = pve_error_format(&e);
	cr_expect(!strstr(f, "lacks"), "%s", f);
	free(f);
	pve_error_clear(&e);
}

Test(decode, message_from_body_or_reason)
{
	struct pve_error e = {0};
	/* Real PVE: message in the reason phrase, body {"data":null}. */
	cr_assert_eq(decode(500, "VM 100 already exists on node 'pve1'\n", "{\"data\":null}", NULL, &e),
		     -1);
	cr_expect_eq(e.kind, PVE_ERR_EXISTS);
	cr_expect_str_eq(e.message, "VM 100 already exists on node 'pve1'");
	/* Simulator style: message in the body wins. */
	cr_assert_eq(decode(500, "Internal Server Error",
			    "{\"data\":null,\"message\":\"VM is locked (clone)\\n\"}", NULL, &e),
		     -1);
	cr_expect_eq(e.kind, PVE_ERR_LOCKED);
	cr_expect_str_eq(e.message, "VM is locked (clone)");
	/* Empty body, no reason. */
	cr_assert_eq(decode(503, NULL, NULL, NULL, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_TRANSIENT);
	cr_expect_str_eq(e.message, "HTTP 503");
	/* 400 without errors object. */
	cr_assert_eq(decode(400, "bad", "{\"data\":null,\"errors\":{}}", NULL, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_BAD_REQUEST);
	cr_expect_null(e.param_errors);
	pve_error_clear(&e);
}

Test(errors, no_secret_in_messages_and_outcomes)
{
	cr_assert_eq(log_secret_add("0c5f4e2a-secret"), 0);
	struct pve_error e = {0};
	pve_error_set(&e, PVE_ERR_AUTH, "token 0c5f4e2a-secret refused; header PVEAPIToken=a@b!c=xyz");
	cr_expect_str_eq(e.message, "token *** refused; header PVEAPIToken=a@b!c=***");
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	e.kind = PVE_ERR_PIN;
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	e.kind = PVE_ERR_CONFIG;
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_USAGE);
	e.kind = PVE_ERR_TASK_TIMEOUT;
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_NEEDS_ATTENTION);
	e.kind = PVE_ERR_CONNECT;
	e.ambiguous = true;
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_NEEDS_ATTENTION);
	e.ambiguous = false;
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	e.kind = PVE_ERR_TASK;
	e.detail = strdup("line one\nline 0c5f4e2a-secret two");
	char *f = pve_error_format(&e);
	cr_expect(strstr(f, "task log (last lines):\n    line one\n    line *** two") != NULL, "%s", f);
	cr_expect_null(strstr(f, "0c5f4e2a-secret"));
	free(f);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_FAILED);
	pve_error_clear(&e);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_DONE);
	struct pve_error a = {0}, b = {0};
	pve_error_set(&a, PVE_ERR_API, "x");
	pve_error_move(&b, &a);
	cr_expect_null(a.message);
	cr_expect_str_eq(b.message, "x");
	pve_error_clear(&b);
	log_secret_remove("0c5f4e2a-secret");
}

/* ---- options, fingerprints, backoff -------------------------------------------------- */

Test(fingerprint, parse)
{
	unsigned char fp[32];
	const char *ok = "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:"
			 "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89";
	cr_assert_eq(pve_parse_fingerprint(ok, fp), 0);
	cr_expect_eq(fp[0], 0xAB);
	cr_expect_eq(fp[31], 0x89);
	cr_expect_eq(pve_parse_fingerprint("abcdef0123456789abcdef0123456789"
					   "abcdef0123456789abcdef0123456789",
					   fp),
		     0);
	cr_expect_eq(pve_parse_fingerprint("AB:CD", fp), -1);
	cr_expect_eq(pve_parse_fingerprint("ZZ:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:"
					   "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89",
					   fp),
		     -1);
	cr_expect_eq(pve_parse_fingerprint("A:BCD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:"
					   "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89",
					   fp),
		     -1); /* colons separate whole bytes */
	cr_expect_eq(pve_parse_fingerprint(NULL, fp), -1);
	/* openssl x509 -noout -fingerprint -sha256 prints it with a prefix */
	memset(fp, 0, 32);
	cr_expect_eq(pve_parse_fingerprint("sha256 Fingerprint=AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:"
					   "23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:"
					   "45:67:89",
					   fp),
		     0);
	cr_expect_eq(fp[0], 0xAB);
	cr_expect_eq(pve_parse_fingerprint("sha1 Fingerprint=AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:"
					   "23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:"
					   "45:67:89",
					   fp),
		     -1);
}

Test(backoff, bounded_with_jitter)
{
	for (int a = 1; a <= 10; a++) {
		long lo = pve_backoff_ms(a, 500, 5000, 0.0);
		long hi = pve_backoff_ms(a, 500, 5000, 0.999999);
		long d = 500L << (a - 1 < 4 ? a - 1 : 4);
		if (d > 5000)
			d = 5000;
		cr_expect_eq(lo, d / 2, "attempt %d lo %ld", a, lo);
		cr_expect(hi <= d && hi >= d - 1, "attempt %d hi %ld", a, hi);
	}
	cr_expect_eq(pve_backoff_ms(100, 500, 5000, 0.5), 3750);
}

static struct pve *new_client(const struct pve_opts *o, struct pve_error *e)
{
	struct pve *c = pve_new(o, e);
	return c;
}

Test(opts, config_errors)
{
	struct pve_error e = {0};
	struct pve_opts o = {0};
	cr_expect_null(new_client(&o, &e));
	cr_expect_eq(e.kind, PVE_ERR_CONFIG);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_USAGE);

	o.url = "http://pve:8006";
	o.token_id = "root@pam!t";
	o.token_secret = "s";
	cr_expect_null(new_client(&o, &e));
	cr_expect(strstr(e.message, "https") != NULL, "%s", e.message);

	o.url = "pve";
	o.token_secret = NULL;
	cr_expect_null(new_client(&o, &e));
	cr_expect(strstr(e.message, "token") != NULL, "%s", e.message);

	o.token_id = "root-pam";
	o.token_secret = "s";
	cr_expect_null(new_client(&o, &e));
	cr_expect_eq(e.kind, PVE_ERR_CONFIG);

	o.token_id = NULL;
	o.token_secret = NULL;
	cr_expect_null(new_client(&o, &e));
	cr_expect(strstr(e.message, "no PVE credentials") != NULL, "%s", e.message);

	o.user = "root@pam";
	cr_expect_null(new_client(&o, &e));
	cr_expect(strstr(e.message, "password") != NULL, "%s", e.message);

	o.password = "pw";
	o.fingerprint = "AB:CD";
	cr_expect_null(new_client(&o, &e));
	cr_expect(strstr(e.message, "fingerprint") != NULL, "%s", e.message);

	o.fingerprint = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789";
	o.insecure = true;
	cr_expect_null(new_client(&o, &e));
	cr_expect(strstr(e.message, "insecure") != NULL, "%s", e.message);

	o.insecure = false;
	o.ca_file = "/nonexistent/ca.pem";
	cr_expect_null(new_client(&o, &e));
	cr_expect(strstr(e.message, "ca_file") != NULL, "%s", e.message);

	/* a URL's userinfo is refused and never echoed (issue 36) */
	o.ca_file = NULL;
	const char *const with_userinfo[] = {"https://root:Sekr1t@pve:8006", "root:Sekr1t@pve",
					     "http://root:Sekr1t@pve:8006/api2/json"};
	for (size_t i = 0; i < 3; i++) {
		o.url = with_userinfo[i];
		cr_expect_null(new_client(&o, &e));
		cr_expect_eq(e.kind, PVE_ERR_CONFIG, "%s", with_userinfo[i]);
		cr_expect(e.message && !strstr(e.message, "Sekr1t") && !strstr(e.message, "root:") &&
				  strstr(e.message, "***@pve"),
			  "%s: %s", with_userinfo[i], e.message);
	}
	pve_error_clear(&e);
}

Test(opts, url_normalised)
{
	struct pve_error e = {0};
	struct pve_opts o = {.token_id = "root@pam!t", .token_secret = "sec-123"};
	static const char *in[][2] = {
		{"pve.example.com", "https://pve.example.com:8006"},
		{"pve.example.com:443", "https://pve.example.com:443"},
		{"https://10.0.0.1:8006/api2/json/", "https://10.0.0.1:8006"},
		{"https://pve/", "https://pve"},
		{"[::1]", "https://[::1]:8006"},
	};
	for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
		o.url = in[i][0];
		struct pve *c = pve_new(&o, &e);
		cr_assert_not_null(c, "%s: %s", in[i][0], e.message);
		cr_expect_str_eq(pve_url(c), in[i][1]);
		cr_expect_str_eq(pve_identity(c), "root@pam!t");
		pve_free(c);
	}
}

static char *write_secret(const char *content, mode_t mode)
{
	char *path = strdup("/tmp/pvagent-test-secret-XXXXXX");
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

Test(opts, secret_files)
{
	struct pve_error e = {0};
	char *loose = write_secret("tok-secret-1\n", 0644);
	char *tight = write_secret("tok-secret-2\n", 0600);
	struct pve_opts o = {.url = "pve", .token_id = "root@pam!t", .token_secret_file = loose};
	cr_expect_null(pve_new(&o, &e));
	cr_expect_eq(e.kind, PVE_ERR_CONFIG);
	cr_expect(strstr(e.message, "too open (group or others have access)") != NULL, "%s", e.message);

	o.token_secret_file = tight;
	struct pve *c = pve_new(&o, &e);
	cr_assert_not_null(c, "%s", e.message);
	/* The secret is registered while the client lives. */
	char *r = log_redact("x tok-secret-2 y");
	cr_expect_str_eq(r, "x *** y");
	free(r);
	pve_free(c);
	r = log_redact("x tok-secret-2 y");
	cr_expect_str_eq(r, "x tok-secret-2 y");
	free(r);

	o.token_secret_file = "/nonexistent/secret";
	cr_expect_null(pve_new(&o, &e));
	cr_expect_eq(e.kind, PVE_ERR_CONFIG);
	pve_error_clear(&e);
	unlink(loose);
	unlink(tight);
	free(loose);
	free(tight);
}

Test(opts, insecure_warns_every_time)
{
	struct capture cap = {0};
	log_set_sink(cap_sink, &cap);
	struct pve_error e = {0};
	struct pve_opts o = {.url = "pve", .user = "root@pam", .password = "pw", .insecure = true};
	for (int i = 0; i < 2; i++) {
		struct pve *c = pve_new(&o, &e);
		cr_assert_not_null(c);
		pve_free(c);
	}
	cr_expect_eq(cap.warnings, 2);
	cr_expect(strstr(sbuf_str(&cap.text), "DISABLED") != NULL);
	log_set_sink(NULL, NULL);
	sbuf_free(&cap.text);
}

/* Nothing listens on port 1: connection refused, retried with backoff
 * (slept on a fake clock), then exit code 4. */
Test(net, connection_refused_is_retried_then_exit_4)
{
	struct fake_clock fc = {0};
	struct pve_clock clk = {fake_now, fake_sleep, &fc};
	struct pve_error e = {0};
	struct pve_opts o = {.url = "https://127.0.0.1:1",
			     .token_id = "root@pam!t",
			     .token_secret = "sec",
			     .max_attempts = 3,
			     .retry_base_ms = 200,
			     .retry_max_ms = 1000,
			     .clock = &clk};
	struct pve *c = pve_new(&o, &e);
	cr_assert_not_null(c);
	json_object *d = NULL;
	cr_expect_eq(pve_get(c, "/version", NULL, &d, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_CONNECT, "%s", e.message);
	cr_expect_eq(e.attempts, 3);
	cr_expect_eq(pve_request_count(c), 3);
	cr_expect_eq(fc.n, 2);
	cr_expect(fc.slept[0] >= 0.1 && fc.slept[0] <= 0.2, "%f", fc.slept[0]);
	cr_expect(fc.slept[1] >= 0.2 && fc.slept[1] <= 0.4, "%f", fc.slept[1]);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	cr_expect_not(e.ambiguous);
	char *f = pve_error_format(&e);
	cr_expect(strstr(f, "GET /version: cannot reach https://127.0.0.1:1") == f, "%s", f);
	free(f);
	/* POST: nothing was sent, so not ambiguous either; no_retry honoured. */
	struct pve_call_opts once = {.no_retry = true};
	cr_expect_eq(pve_request(c, "POST", "/nodes/x/qemu", NULL, &once, NULL, &e), -1);
	cr_expect_eq(e.attempts, 1);
	cr_expect_not(e.ambiguous);
	pve_error_clear(&e);
	pve_free(c);
	/* unreachable_once (the command line's client): a PVE that never
	 * answered it is tried once, without a backoff, and said unreachable */
	o.unreachable_once = true;
	fc.n = 0;
	c = pve_new(&o, &e);
	cr_assert_not_null(c);
	cr_expect_eq(pve_get(c, "/version", NULL, &d, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_CONNECT, "%s", e.message);
	cr_expect_eq(e.attempts, 1);
	cr_expect_eq(fc.n, 0, "no backoff slept");
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	pve_error_clear(&e);
	pve_free(c);
}

/* ==== a scripted HTTPS mock of PVE (self-signed certificate, OpenSSL) ======
 * Serves each connection in its own thread, records every request, answers
 * /access/ticket and checks credentials like PVE (token, or ticket cookie
 * plus CSRF header on non-GET), serves task status from a script and task
 * logs from a line list, and lets rules override answers (status, reset). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <strings.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#define MOCK_MAX_REQ 256
#define MOCK_MAX_CONN 64

struct mreq {
	char *method, *target, *auth, *cookie, *csrf, *body;
	int status;
};

struct mrule {
	const char *method;  /* NULL: any */
	const char *path;    /* exact path without query; trailing '*': prefix */
	int nth;             /* fire on the nth match only; 0: every match */
	int status;          /* 0 with reset */
	const char *reason;
	const char *body;    /* NULL: {"data":null} */
	bool reset;          /* close without answering */
	int hits;
	bool hang;           /* never answer (the client times out) */
};

struct mock {
	SSL_CTX *ctx;
	X509 *cert;
	EVP_PKEY *key;
	int lfd, port;
	char url[64], fp[100], cert_path[64];
	pthread_t acceptor;
	pthread_t conn_th[MOCK_MAX_CONN];
	int conn_fd[MOCK_MAX_CONN];
	int nconn;
	int handshakes;
	pthread_mutex_t mu;
	bool stopping;
	struct mreq *req; /* MOCK_MAX_REQ entries, heap */
	int nreq;
	struct mrule rules[16];
	int nrules;
	/* auth */
	const char *token;   /* full expected Authorization header value */
	const char *user_form; /* expected /access/ticket body */
	int tickets;
	char ticket[64], csrf[64];
	/* tasks */
	const char *upid;
	const char *statuses[16]; /* status answers in order; the last repeats */
	int nstatus, status_calls;
	const char *log[64];
	int log_from[64];   /* line i is in the log from task request n on
			       (status and log requests counted, 0: always) */
	int nlog;
	int log_missing;    /* the first log requests: PVE's answer for a log
			       file not there yet */
	int task_calls;
};

static void mock_gen_cert(struct mock *m)
{
	m->key = EVP_EC_gen("P-256");
	cr_assert_not_null(m->key);
	X509 *x = X509_new();
	cr_assert_not_null(x);
	cr_assert(X509_set_version(x, 2));
	cr_assert(ASN1_INTEGER_set(X509_get_serialNumber(x), 4711));
	cr_assert(X509_gmtime_adj(X509_getm_notBefore(x), -3600));
	cr_assert(X509_gmtime_adj(X509_getm_notAfter(x), 86400));
	cr_assert(X509_set_pubkey(x, m->key));
	X509_NAME *nm = X509_get_subject_name(x);
	cr_assert(X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC,
					     (const unsigned char *)"localhost", -1, -1, 0));
	cr_assert(X509_set_issuer_name(x, nm));
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name,
						  "DNS:localhost,IP:127.0.0.1");
	cr_assert_not_null(ext);
	cr_assert(X509_add_ext(x, ext, -1));
	X509_EXTENSION_free(ext);
	cr_assert(X509_sign(x, m->key, EVP_sha256()));
	m->cert = x;
	unsigned char md[32];
	unsigned n = 0;
	cr_assert(X509_digest(x, EVP_sha256(), md, &n));
	for (unsigned i = 0; i < 32; i++)
		sprintf(m->fp + (size_t)i * 3, "%02X%s", md[i], i == 31 ? "" : ":");
	snprintf(m->cert_path, sizeof m->cert_path, "%s", "/tmp/pvagent-mock-cert-XXXXXX");
	int fd = mkstemp(m->cert_path);
	cr_assert(fd >= 0);
	FILE *f = fdopen(fd, "w");
	cr_assert_not_null(f);
	cr_assert(PEM_write_X509(f, x));
	cr_assert_eq(fclose(f), 0);
}

static char *hdr_value(const char *head, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
		if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':') {
			const char *v = p + 3 + n;
			while (*v == ' ')
				v++;
			const char *e = strstr(v, "\r\n");
			return strndup(v, e ? (size_t)(e - v) : strlen(v));
		}
	}
	return NULL;
}

static void mock_reply(SSL *ssl, int status, const char *reason, const char *body)
{
	char *r = strprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json;charset=UTF-8\r\n"
			    "Content-Length: %zu\r\n\r\n%s",
			    status, reason, strlen(body), body);
	cr_assert_not_null(r);
	SSL_write(ssl, r, (int)strlen(r));
	free(r);
}

static const char *form_get(const char *form, const char *key, char *buf, size_t cap)
{
	size_t kn = strlen(key);
	for (const char *p = form; p && *p;) {
		if (strncmp(p, key, kn) == 0 && p[kn] == '=') {
			const char *v = p + kn + 1, *e = strchr(v, '&');
			size_t n = e ? (size_t)(e - v) : strlen(v);
			if (n >= cap)
				n = cap - 1;
			memcpy(buf, v, n);
			buf[n] = '\0';
			return buf;
		}
		p = strchr(p, '&');
		if (p)
			p++;
	}
	return NULL;
}

/* Decide the answer for one request; called with m->mu held. Returns
 * false to reset the connection. */
static bool mock_answer(struct mock *m, struct mreq *q, int *st, const char **reason,
			char **body)
{
	char path[512];
	size_t pl = strcspn(q->target, "?");
	snprintf(path, sizeof path, "%.*s", (int)pl, q->target);
	if (strncmp(path, "/api2/json", 10) == 0)
		memmove(path, path + 10, strlen(path + 10) + 1);
	struct mrule *fire = NULL;
	for (int i = 0; i < m->nrules; i++) {
		struct mrule *r = &m->rules[i];
		size_t n = strlen(r->path);
		bool pm = r->path[n - 1] == '*' ? strncmp(path, r->path, n - 1) == 0
						: strcmp(path, r->path) == 0;
		if (!pm || (r->method && strcmp(r->method, q->method) != 0))
			continue;
		r->hits++;
		if (!fire && (r->nth == 0 || r->nth == r->hits))
			fire = r;
	}
	*reason = "OK";
	if (strcmp(path, "/access/ticket") == 0) {
		if (fire && fire->reset)
			return false;
		if (fire) {
			*st = fire->status;
			*reason = fire->reason ? fire->reason : "error";
			*body = strdup(fire->body ? fire->body : "{\"data\":null}");
			return true;
		}
		if (!m->user_form || strcmp(q->body ? q->body : "", m->user_form) != 0) {
			*st = 401;
			*reason = "authentication failure";
			*body = strdup("{\"data\":null}");
			return true;
		}
		m->tickets++;
		snprintf(m->ticket, sizeof m->ticket, "PVE:root@pam:%08X::sig%d+/=", m->tickets,
			 m->tickets);
		snprintf(m->csrf, sizeof m->csrf, "%08X:csrf%d", m->tickets, m->tickets);
		*st = 200;
		*body = strprintf("{\"data\":{\"ticket\":\"%s\",\"CSRFPreventionToken\":\"%s\","
				  "\"username\":\"root@pam\"}}",
				  m->ticket, m->csrf);
		return true;
	}
	/* Authentication as PVE checks it. */
	bool ok = false;
	if (m->token && q->auth && strcmp(q->auth, m->token) == 0)
		ok = true;
	if (q->cookie && m->tickets) {
		char want[128];
		snprintf(want, sizeof want, "PVEAuthCookie=%s", m->ticket);
		ok = strcmp(q->cookie, want) == 0 &&
		     (strcmp(q->method, "GET") == 0 || (q->csrf && strcmp(q->csrf, m->csrf) == 0));
	}
	if (!ok) {
		*st = 401;
		*reason = "No ticket";
		*body = strdup("{\"data\":null}");
		return true;
	}
	if (fire && fire->reset)
		return false;
	if (fire && fire->hang) {
		*st = -2;
		return true;
	}
	if (fire) {
		*st = fire->status;
		*reason = fire->reason ? fire->reason : "error";
		*body = strdup(fire->body ? fire->body : "{\"data\":null}");
		return true;
	}
	size_t len = strlen(path);
	if (m->upid && len > 7 && strcmp(path + len - 7, "/status") == 0 &&
	    strstr(path, "/tasks/")) {
		int i = m->status_calls < m->nstatus ? m->status_calls : m->nstatus - 1;
		m->status_calls++;
		m->task_calls++;
		if (i < 0) {
			*st = 500;
			*body = strdup("{\"data\":null}");
			return true;
		}
		const char *s = m->statuses[i];
		if (strncmp(s, "HTTP", 4) == 0) { /* "HTTP 400 message" */
			*st = atoi(s + 5);
			*reason = strchr(s + 5, ' ') + 1;
			*body = strdup("{\"data\":null}");
			return true;
		}
		*st = 200;
		if (strcmp(s, "running") == 0)
			*body = strprintf("{\"data\":{\"status\":\"running\",\"upid\":\"%s\"}}", m->upid);
		else
			*body = strprintf("{\"data\":{\"status\":\"stopped\",\"exitstatus\":\"%s\","
					  "\"upid\":\"%s\"}}",
					  s, m->upid);
		return true;
	}
	if (m->upid && len > 4 && strcmp(path + len - 4, "/log") == 0 && strstr(path, "/tasks/")) {
		char b[32];
		const char *qs = strchr(q->target, '?');
		int start = atoi(form_get(qs ? qs + 1 : "", "start", b, sizeof b) ?: "0");
		int limit = atoi(form_get(qs ? qs + 1 : "", "limit", b, sizeof b) ?: "50");
		struct sbuf o = {0};
		int calls = ++m->task_calls;
		if (calls <= m->log_missing) {
			*st = 200;
			*body = strdup("{\"data\":[{\"n\":1,\"t\":\"unable to open file - No "
				       "such file or directory\"}],\"total\":1}");
			return true;
		}
		int vis = 0;
		while (vis < m->nlog && m->log_from[vis] <= calls)
			vis++;
		sbuf_add(&o, "{\"data\":[");
		for (int i = start; i < vis && i < start + limit; i++) {
			json_object *s = json_object_new_string(m->log[i]);
			sbuf_addf(&o, "%s{\"n\":%d,\"t\":%s}", i > start ? "," : "", i + 1,
				  json_object_to_json_string(s));
			json_object_put(s);
		}
		sbuf_addf(&o, "],\"total\":%d}", vis);
		*st = 200;
		*body = sbuf_steal(&o);
		return true;
	}
	if (strcmp(path, "/version") == 0) {
		*st = 200;
		*body = strdup("{\"data\":{\"version\":\"8.4.1\",\"release\":\"8.4\",\"repoid\":\"x\"}}");
		return true;
	}
	*st = 501;
	*reason = "Method not implemented";
	*body = strdup("{\"data\":null}");
	return true;
}

struct conn_arg {
	struct mock *m;
	int fd;
};

static void *mock_conn(void *arg)
{
	struct conn_arg *ca = arg;
	struct mock *m = ca->m;
	int fd = ca->fd;
	free(ca);
	SSL *ssl = SSL_new(m->ctx);
	if (!ssl)
		return NULL;
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	pthread_mutex_lock(&m->mu);
	m->handshakes++;
	pthread_mutex_unlock(&m->mu);
	struct sbuf in = {0};
	for (;;) {
		char *hend;
		while (!(hend = strstr(sbuf_str(&in), "\r\n\r\n"))) {
			char buf[4096];
			int n = SSL_read(ssl, buf, sizeof buf);
			if (n <= 0)
				goto done;
			sbuf_addn(&in, buf, (size_t)n);
		}
		if (!in.s)
			goto done;
		size_t hlen = (size_t)(hend - in.s) + 4;
		char *head = strndup(in.s, hlen);
		char *cl = hdr_value(head, "Content-Length");
		size_t blen = cl ? strtoul(cl, NULL, 10) : 0;
		free(cl);
		while (in.len < hlen + blen) {
			char buf[4096];
			int n = SSL_read(ssl, buf, sizeof buf);
			if (n <= 0) {
				free(head);
				goto done;
			}
			sbuf_addn(&in, buf, (size_t)n);
		}
		struct mreq q = {0};
		char *sp1 = strchr(head, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
		q.method = strndup(head, sp1 ? (size_t)(sp1 - head) : 0);
		q.target = sp2 ? strndup(sp1 + 1, (size_t)(sp2 - sp1 - 1)) : strdup("");
		q.auth = hdr_value(head, "Authorization");
		q.cookie = hdr_value(head, "Cookie");
		q.csrf = hdr_value(head, "CSRFPreventionToken");
		q.body = strndup(in.s + hlen, blen);
		free(head);
		/* Drop the consumed request from the buffer. */
		size_t rest = in.len - hlen - blen;
		memmove(in.s, in.s + hlen + blen, rest);
		in.len = rest;
		in.s[rest] = '\0';

		int st = 0;
		const char *reason = "OK";
		char *body = NULL;
		pthread_mutex_lock(&m->mu);
		bool answer = mock_answer(m, &q, &st, &reason, &body);
		q.status = answer ? st : -1;
		if (m->nreq < MOCK_MAX_REQ)
			m->req[m->nreq++] = q;
		else
			free(q.method), free(q.target), free(q.auth), free(q.cookie), free(q.csrf),
				free(q.body);
		pthread_mutex_unlock(&m->mu);
		if (!answer) {
			free(body);
			break;
		}
		if (st == -2) /* hang: wait for the next request or the hang-up */
			continue;
		mock_reply(ssl, st, reason, body ? body : "");
		free(body);
	}
done:
	sbuf_free(&in);
	SSL_free(ssl); /* no close_notify: a reset looks like one */
	shutdown(fd, SHUT_RDWR);
	return NULL;
}

static void *mock_accept(void *arg)
{
	struct mock *m = arg;
	for (;;) {
		int fd = accept(m->lfd, NULL, NULL);
		pthread_mutex_lock(&m->mu);
		if (fd < 0 || m->stopping || m->nconn == MOCK_MAX_CONN) {
			pthread_mutex_unlock(&m->mu);
			if (fd >= 0)
				close(fd);
			return NULL;
		}
		struct conn_arg *ca = malloc(sizeof *ca);
		cr_assert_not_null(ca);
		*ca = (struct conn_arg){m, fd};
		m->conn_fd[m->nconn] = fd;
		cr_assert_eq(pthread_create(&m->conn_th[m->nconn], NULL, mock_conn, ca), 0);
		m->nconn++;
		pthread_mutex_unlock(&m->mu);
	}
}

/* The recorded requests outlive mock_stop() so tests can inspect them;
 * they are freed when the next mock starts or the test ends. */
static struct mreq *pending_req;
static int pending_n;

static void mock_free_requests(void)
{
	for (int i = 0; i < pending_n; i++) {
		struct mreq *q = &pending_req[i];
		free(q->method), free(q->target), free(q->auth), free(q->cookie), free(q->csrf),
			free(q->body);
	}
	free(pending_req);
	pending_req = NULL;
	pending_n = 0;
}

static void mock_fini(void)
{
	mock_free_requests();
}

TestSuite(mock, .fini = mock_fini);

static void mock_start(struct mock *m)
{
	mock_free_requests();
	signal(SIGPIPE, SIG_IGN); /* the client may hang up first */
	memset(m, 0, sizeof *m);
	m->req = calloc(MOCK_MAX_REQ, sizeof *m->req);
	cr_assert_not_null(m->req);
	pthread_mutex_init(&m->mu, NULL);
	mock_gen_cert(m);
	m->ctx = SSL_CTX_new(TLS_server_method());
	cr_assert_not_null(m->ctx);
	cr_assert(SSL_CTX_use_certificate(m->ctx, m->cert));
	cr_assert(SSL_CTX_use_PrivateKey(m->ctx, m->key));
	m->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(m->lfd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(m->lfd, (struct sockaddr *)&a, sizeof a), 0);
	socklen_t al = sizeof a;
	cr_assert_eq(getsockname(m->lfd, (struct sockaddr *)&a, &al), 0);
	cr_assert_eq(listen(m->lfd, 16), 0);
	m->port = ntohs(a.sin_port);
	snprintf(m->url, sizeof m->url, "https://127.0.0.1:%d", m->port);
	cr_assert_eq(pthread_create(&m->acceptor, NULL, mock_accept, m), 0);
}

static void mock_stop(struct mock *m)
{
	pthread_mutex_lock(&m->mu);
	m->stopping = true;
	for (int i = 0; i < m->nconn; i++)
		shutdown(m->conn_fd[i], SHUT_RDWR);
	pthread_mutex_unlock(&m->mu);
	shutdown(m->lfd, SHUT_RDWR);
	pthread_join(m->acceptor, NULL);
	for (int i = 0; i < m->nconn; i++) {
		pthread_join(m->conn_th[i], NULL);
		close(m->conn_fd[i]);
	}
	close(m->lfd);
	pending_req = m->req;
	pending_n = m->nreq;
	SSL_CTX_free(m->ctx);
	X509_free(m->cert);
	EVP_PKEY_free(m->key);
	unlink(m->cert_path);
	pthread_mutex_destroy(&m->mu);
}

static void mock_rule(struct mock *m, struct mrule r)
{
	cr_assert(m->nrules < 16);
	m->rules[m->nrules++] = r;
}

/* Requests matching method and path prefix. */
static int mock_count(struct mock *m, const char *method, const char *prefix)
{
	int n = 0;
	pthread_mutex_lock(&m->mu);
	for (int i = 0; i < m->nreq; i++)
		if ((!method || strcmp(m->req[i].method, method) == 0) &&
		    strncmp(m->req[i].target, prefix, strlen(prefix)) == 0)
			n++;
	pthread_mutex_unlock(&m->mu);
	return n;
}

#define MOCK_TOKEN_SECRET "0c5f4e2a-aaaa-bbbb-cccc-444455556666"

static struct pve *mock_client(struct mock *m, bool ticket, const struct pve_clock *clk)
{
	struct pve_error e = {0};
	struct pve_opts o = {.url = m->url,
			     .fingerprint = m->fp,
			     .max_attempts = 4,
			     .retry_base_ms = 1,
			     .retry_max_ms = 2,
			     .clock = clk};
	if (ticket) {
		o.user = "root@pam";
		o.password = "hunter2 pw";
		m->user_form = "username=root%40pam&password=hunter2%20pw";
	} else {
		o.token_id = "root@pam!pvagent";
		o.token_secret = MOCK_TOKEN_SECRET;
		m->token = "PVEAPIToken=root@pam!pvagent=" MOCK_TOKEN_SECRET;
	}
	struct pve *c = pve_new(&o, &e);
	cr_assert_not_null(c, "%s", e.message);
	return c;
}

/* ---- mock-server tests ------------------------------------------------------ */

Test(mock, pin_mismatch_refuses_before_any_request)
{
	struct mock m;
	mock_start(&m);
	struct pve_error e = {0};
	struct pve_opts o = {.url = m.url,
			     .token_id = "root@pam!pvagent",
			     .token_secret = MOCK_TOKEN_SECRET,
			     .fingerprint = "00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:"
					    "00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF",
			     .retry_base_ms = 1};
	struct pve *c = pve_new(&o, &e);
	cr_assert_not_null(c);
	cr_expect_eq(pve_get(c, "/version", NULL, NULL, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_PIN, "%s: %s", pve_err_kind_name(e.kind), e.message);
	cr_expect_eq(e.attempts, 1, "a pin mismatch is not retried");
	cr_expect(strstr(e.message, m.fp) != NULL, "message names the server's fingerprint: %s",
		  e.message);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	pve_free(c);
	mock_stop(&m);
	cr_expect_eq(m.handshakes, 0);
	cr_expect_eq(m.nreq, 0, "no request (and so no credential) reached the server");
	pve_error_clear(&e);
}

Test(mock, ca_file_verification_and_system_store)
{
	struct mock m;
	mock_start(&m);
	struct pve_error e = {0};
	char url[64];
	snprintf(url, sizeof url, "https://localhost:%d", m.port);
	m.token = "PVEAPIToken=root@pam!pvagent=" MOCK_TOKEN_SECRET;
	struct pve_opts o = {.url = url,
			     .token_id = "root@pam!pvagent",
			     .token_secret = MOCK_TOKEN_SECRET,
			     .retry_base_ms = 1};
	/* System store: the self-signed certificate is not trusted. */
	struct pve *c = pve_new(&o, &e);
	cr_assert_not_null(c);
	cr_expect_eq(pve_login(c, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_TLS, "%s: %s", pve_err_kind_name(e.kind), e.message);
	cr_expect(strstr(e.message, "ca_file") != NULL, "%s", e.message);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	pve_free(c);
	cr_expect_eq(m.nreq, 0);
	/* With the certificate as ca_file it is. */
	o.ca_file = m.cert_path;
	c = pve_new(&o, &e);
	cr_assert_not_null(c, "%s", e.message);
	cr_expect_eq(pve_login(c, &e), 0, "%s", e.message);
	pve_free(c);
	mock_stop(&m);
	cr_expect_eq(m.nreq, 1);
	pve_error_clear(&e);
}

Test(mock, token_auth_header_no_csrf_and_no_secret_in_logs)
{
	struct mock m;
	mock_start(&m);
	struct capture cap = {0};
	log_set_sink(cap_sink, &cap);
	log_set_level(LOGL_TRACE);
	struct pve *c = mock_client(&m, false, NULL);
	struct pve_error e = {0};
	json_object *d = NULL;
	cr_assert_eq(pve_get(c, "/version", NULL, &d, &e), 0, "%s", e.message);
	json_object *v = NULL;
	cr_expect(json_object_object_get_ex(d, "release", &v));
	cr_expect_str_eq(json_object_get_string(v), "8.4");
	json_object_put(d);
	struct pve_params p = {0};
	pve_params_add(&p, "name", "x y");
	cr_expect_eq(pve_post(c, "/nodes/pve1/qemu", &p, NULL, &e), -1); /* 501 from the mock */
	cr_expect_eq(e.kind, PVE_ERR_NOT_IMPLEMENTED);
	pve_params_free(&p);
	pve_free(c);
	mock_stop(&m);
	cr_assert_eq(m.nreq, 2);
	cr_expect_str_eq(m.req[0].auth, "PVEAPIToken=root@pam!pvagent=" MOCK_TOKEN_SECRET);
	cr_expect_null(m.req[0].csrf);
	cr_expect_null(m.req[1].csrf, "tokens need no CSRF token");
	cr_expect_str_eq(m.req[1].body, "name=x%20y");
	cr_expect(strstr(sbuf_str(&cap.text), "-> GET /version") != NULL, "%s", sbuf_str(&cap.text));
	cr_expect_null(strstr(sbuf_str(&cap.text), MOCK_TOKEN_SECRET));
	log_set_sink(NULL, NULL);
	sbuf_free(&cap.text);
	pve_error_clear(&e);
}

Test(mock, ticket_login_csrf_only_on_non_get)
{
	struct mock m;
	mock_start(&m);
	struct capture cap = {0};
	log_set_sink(cap_sink, &cap);
	log_set_level(LOGL_TRACE);
	mock_rule(&m, (struct mrule){"PUT", "/nodes/pve1/qemu/100/config", 0, 200, "OK", NULL, false, 0, false});
	mock_rule(&m, (struct mrule){"DELETE", "/nodes/pve1/qemu/100", 0, 200, "OK", NULL, false, 0, false});
	struct pve *c = mock_client(&m, true, NULL);
	struct pve_error e = {0};
	cr_assert_eq(pve_get(c, "/version", NULL, NULL, &e), 0, "%s", e.message);
	struct pve_params p = {0};
	pve_params_add(&p, "memory", "2048");
	cr_assert_eq(pve_put(c, "/nodes/pve1/qemu/100/config", &p, NULL, &e), 0, "%s", e.message);
	pve_params_free(&p);
	pve_params_add_bool(&p, "purge", true);
	cr_assert_eq(pve_delete(c, "/nodes/pve1/qemu/100", &p, NULL, &e), 0, "%s", e.message);
	pve_params_free(&p);
	char ticket[64], csrf[64];
	snprintf(ticket, sizeof ticket, "%s", m.ticket);
	snprintf(csrf, sizeof csrf, "%s", m.csrf);
	pve_free(c);
	mock_stop(&m);
	cr_assert_eq(m.nreq, 4);
	cr_expect_str_eq(m.req[0].method, "POST");
	cr_expect_str_eq(m.req[0].target, "/api2/json/access/ticket");
	cr_expect_null(m.req[0].cookie);
	cr_expect_str_eq(m.req[1].method, "GET");
	cr_expect_not_null(m.req[1].cookie);
	cr_expect_null(m.req[1].csrf, "no CSRF token on GET");
	cr_expect_str_eq(m.req[2].method, "PUT");
	cr_expect_str_eq(m.req[2].body, "memory=2048");
	cr_expect_str_eq(m.req[2].csrf, csrf);
	cr_expect_str_eq(m.req[3].method, "DELETE");
	cr_expect_str_eq(m.req[3].target, "/api2/json/nodes/pve1/qemu/100?purge=1");
	cr_expect_str_eq(m.req[3].csrf, csrf);
	cr_expect_eq(m.tickets, 1);
	const char *logged = sbuf_str(&cap.text);
	cr_expect_null(strstr(logged, "hunter2"), "%s", logged);
	cr_expect_null(strstr(logged, ticket), "%s", logged);
	cr_expect_null(strstr(logged, csrf), "%s", logged);
	log_set_sink(NULL, NULL);
	sbuf_free(&cap.text);
	pve_error_clear(&e);
}

Test(mock, ticket_renewed_before_expiry)
{
	struct mock m;
	mock_start(&m);
	struct fake_clock fc = {.t = 1000};
	struct pve_clock clk = {fake_now, fake_sleep, &fc};
	struct pve *c = mock_client(&m, true, &clk);
	struct pve_error e = {0};
	cr_assert_eq(pve_get(c, "/version", NULL, NULL, &e), 0, "%s", e.message);
	fc.t += 3599;
	cr_assert_eq(pve_get(c, "/version", NULL, NULL, &e), 0, "%s", e.message);
	cr_expect_eq(m.tickets, 1);
	fc.t += 2; /* one hour old: renewed before PVE's two hours run out */
	cr_assert_eq(pve_get(c, "/version", NULL, NULL, &e), 0, "%s", e.message);
	cr_expect_eq(m.tickets, 2);
	pve_free(c);
	mock_stop(&m);
	cr_expect_eq(mock_count(&m, "POST", "/api2/json/access/ticket"), 2);
	for (int i = 0; i < m.nreq; i++)
		cr_expect_neq(m.req[i].status, 401, "no request was refused");
	pve_error_clear(&e);
}

Test(mock, ticket_renewed_once_on_401)
{
	struct mock m;
	mock_start(&m);
	struct pve *c = mock_client(&m, true, NULL);
	struct pve_error e = {0};
	cr_assert_eq(pve_get(c, "/version", NULL, NULL, &e), 0, "%s", e.message);
	/* The server forgets the ticket (restart, expiry): 401, login, resend. */
	pthread_mutex_lock(&m.mu);
	strcpy(m.ticket, "forgotten");
	pthread_mutex_unlock(&m.mu);
	cr_assert_eq(pve_get(c, "/version", NULL, NULL, &e), 0, "%s", e.message);
	cr_expect_eq(m.tickets, 2);
	cr_expect_eq(e.kind, PVE_OK);
	/* A password that stops working: exit 4 naming the user, not the secret. */
	m.user_form = "username=root%40pam&password=changed";
	pthread_mutex_lock(&m.mu);
	strcpy(m.ticket, "forgotten");
	pthread_mutex_unlock(&m.mu);
	cr_expect_eq(pve_get(c, "/version", NULL, NULL, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_AUTH);
	cr_expect(strstr(e.message, "password of user root@pam was refused") != NULL, "%s",
		  e.message);
	cr_expect_null(strstr(e.message, "hunter2"));
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	pve_free(c);
	mock_stop(&m);
	/* 1 login + GET, 401 GET + login + GET, 401 GET + refused login. */
	cr_expect_eq(m.nreq, 7);
	pve_error_clear(&e);
}

Test(mock, token_refused_names_token_not_secret)
{
	struct mock m;
	mock_start(&m);
	struct pve *c = mock_client(&m, false, NULL);
	m.token = "PVEAPIToken=root@pam!pvagent=other";
	struct pve_error e = {0};
	cr_expect_eq(pve_login(c, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_AUTH);
	cr_expect(strstr(e.message, "API token root@pam!pvagent was refused") != NULL, "%s",
		  e.message);
	cr_expect_null(strstr(e.message, MOCK_TOKEN_SECRET));
	char *f = pve_error_format(&e);
	cr_expect_null(strstr(f, MOCK_TOKEN_SECRET));
	free(f);
	cr_expect_eq(e.attempts, 1, "401 with a token is not retried");
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	pve_free(c);
	mock_stop(&m);
	pve_error_clear(&e);
}

/* Each retryable class: first answer fails, the retry succeeds. */
static void retry_case(struct mrule r, const char *method)
{
	struct mock m;
	mock_start(&m);
	mock_rule(&m, r);
	mock_rule(&m, (struct mrule){NULL, "/nodes/pve1/qemu", 0, 200, "OK", "{\"data\":\"done\"}",
				     false, 0, false});
	struct pve *c = mock_client(&m, false, NULL);
	struct pve_error e = {0};
	json_object *d = NULL;
	int rc = pve_request(c, method, "/nodes/pve1/qemu", NULL, NULL, &d, &e);
	cr_expect_eq(rc, 0, "%d %s: %s", r.status, r.reason ? r.reason : "reset",
		     e.message ? e.message : "");
	cr_expect_str_eq(d ? json_object_get_string(d) : "", "done");
	if (d)
		json_object_put(d);
	pve_free(c);
	mock_stop(&m);
	cr_expect_eq(mock_count(&m, method, "/api2/json/nodes/pve1/qemu"), 2,
		     "%d %s: sent twice", r.status, r.reason ? r.reason : "reset");
	pve_error_clear(&e);
}

Test(mock, retry_classes)
{
	static const struct {
		const char *reason;
		int st;
		bool reset;
	} cls[] = {
		{"Service Unavailable", 503, false},
		{"Bad Gateway", 502, false},
		{"Gateway Timeout", 504, false},
		{"Connection timed out", 596, false},
		{"got no worker upid - start worker failed", 500, false},
		{"can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout", 500, false},
		{NULL, 0, true},
	};
	for (size_t i = 0; i < sizeof cls / sizeof *cls; i++) {
		struct mrule r = {NULL, "/nodes/pve1/qemu", 1, cls[i].st, cls[i].reason, NULL,
				  cls[i].reset, 0, false};
		retry_case(r, "GET");
		retry_case(r, "POST");
	}
}

static void no_retry_case_of(const char *method, int st, const char *reason, const char *body,
			     enum pve_err_kind want)
{
	struct mock m;
	mock_start(&m);
	mock_rule(&m, (struct mrule){NULL, "/nodes/pve1/qemu", 0, st, reason, body, false, 0, false});
	struct pve *c = mock_client(&m, false, NULL);
	struct pve_error e = {0};
	cr_expect_eq(pve_request(c, method, "/nodes/pve1/qemu", NULL, NULL, NULL, &e), -1);
	cr_expect_eq(e.kind, want, "%d %s: got %s", st, reason, pve_err_kind_name(e.kind));
	cr_expect_eq(e.attempts, 1);
	cr_expect_eq(e.http_status, st);
	cr_expect_not(e.ambiguous);
	pve_free(c);
	mock_stop(&m);
	cr_expect_eq(mock_count(&m, method, "/api2/json/nodes/pve1/qemu"), 1, "%s %d %s", method,
		     st, reason);
	pve_error_clear(&e);
}

static void no_retry_case(int st, const char *reason, const char *body, enum pve_err_kind want)
{
	no_retry_case_of("POST", st, reason, body, want);
}

/* A 500 with no known reason: a GET is asked again (its answer may come
 * the next time), a POST is not (it may have taken effect); PVE's
 * definite answers are never asked again. */
Test(mock, a_plain_500_on_a_get_is_retried)
{
	struct mrule r = {NULL, "/nodes/pve1/qemu", 1, 500, "Internal Server Error", NULL, false, 0,
			  false};
	retry_case(r, "GET");
	r.reason = "storage 'x' does not support content-type 'images'";
	retry_case(r, "GET");
	no_retry_case_of("POST", 500, "Internal Server Error", NULL, PVE_ERR_API);
	no_retry_case_of("GET", 500, "Configuration file 'nodes/pve1/qemu-server/100.conf' does "
			 "not exist", NULL, PVE_ERR_NOT_FOUND);
	no_retry_case_of("GET", 403, "Permission check failed (/vms/100, VM.Audit)", NULL,
			 PVE_ERR_PERM);
	no_retry_case_of("GET", 400, "Parameter verification failed.",
			 "{\"data\":null,\"errors\":{\"vmid\":\"invalid format\"}}", PVE_ERR_PARAM);
}

Test(mock, non_retry_classes)
{
	no_retry_case(400, "Parameter verification failed.",
		      "{\"data\":null,\"errors\":{\"vmid\":\"invalid format\"}}", PVE_ERR_PARAM);
	no_retry_case(500, "VM 100 already exists on node 'pve1'", NULL, PVE_ERR_EXISTS);
	no_retry_case(403, "Permission check failed (/vms/100, VM.Allocate)", NULL, PVE_ERR_PERM);
	no_retry_case(500, "VM is locked (clone)", NULL, PVE_ERR_LOCKED);
	no_retry_case(500, "storage 'x' does not support content-type 'images'", NULL, PVE_ERR_API);
}

Test(mock, retries_are_bounded)
{
	struct mock m;
	mock_start(&m);
	mock_rule(&m, (struct mrule){NULL, "/nodes/pve1/qemu", 0, 503, "Service Unavailable", NULL,
				     false, 0, false});
	struct fake_clock fc = {0};
	struct pve_clock clk = {fake_now, fake_sleep, &fc};
	struct pve *c = mock_client(&m, false, &clk);
	struct pve_error e = {0};
	cr_expect_eq(pve_get(c, "/nodes/pve1/qemu", NULL, NULL, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_TRANSIENT);
	cr_expect_eq(e.attempts, 4);
	cr_expect_eq(fc.n, 3, "backoff between attempts only");
	pve_free(c);
	mock_stop(&m);
	cr_expect_eq(m.nreq, 4);
	pve_error_clear(&e);
}

struct ours_ctx {
	int calls;
	bool answer;
};

static bool exists_cb(struct pve *c, void *ctx)
{
	(void)c;
	struct ours_ctx *o = ctx;
	o->calls++;
	return o->answer;
}

/* Lost answer, then "already exists": checked with the caller before it
 * counts as success. */
Test(mock, retried_create_already_exists_is_checked)
{
	for (int variant = 0; variant < 3; variant++) {
		struct mock m;
		mock_start(&m);
		if (variant == 2)
			mock_rule(&m, (struct mrule){"POST", "/nodes/pve1/qemu", 1, 503,
						     "Service Unavailable", NULL, false, 0, false});
		else
			mock_rule(&m, (struct mrule){"POST", "/nodes/pve1/qemu", 1, 0, NULL, NULL,
						     true, 0, false});
		mock_rule(&m, (struct mrule){"POST", "/nodes/pve1/qemu", 0, 500,
					     "VM 100 already exists on node 'pve1'", NULL, false, 0, false});
		struct pve *c = mock_client(&m, false, NULL);
		struct pve_error e = {0};
		struct ours_ctx oc = {0, variant != 1};
		struct pve_call_opts co = {.exists_is_ours = exists_cb, .exists_ctx = &oc};
		json_object *d = NULL;
		int rc = pve_request(c, "POST", "/nodes/pve1/qemu", NULL, &co, &d, &e);
		cr_expect_eq(oc.calls, 1, "variant %d", variant);
		if (variant == 1) {
			cr_expect_eq(rc, -1);
			cr_expect_eq(e.kind, PVE_ERR_EXISTS);
			cr_expect(e.ambiguous);
			cr_expect_eq(pve_error_outcome(&e), JOB_OUT_NEEDS_ATTENTION);
		} else {
			cr_expect_eq(rc, 1, "variant %d: %s", variant, e.message ? e.message : "");
			cr_expect_null(d);
		}
		/* Without the callback it stays an error. */
		m.rules[0].hits = 0;
		m.rules[1].hits = 0;
		cr_expect_eq(pve_post(c, "/nodes/pve1/qemu", NULL, NULL, &e), -1);
		cr_expect_eq(e.kind, PVE_ERR_EXISTS);
		cr_expect(e.ambiguous);
		pve_free(c);
		mock_stop(&m);
		cr_expect_eq(mock_count(&m, "POST", "/api2/json/nodes/pve1/qemu"), 4);
		pve_error_clear(&e);
	}
}

Test(mock, timeouts_retried_for_get_only)
{
	struct mock m;
	mock_start(&m);
	mock_rule(&m, (struct mrule){NULL, "/nodes/pve1/qemu", 1, 0, NULL, NULL, false, 0, true});
	mock_rule(&m, (struct mrule){NULL, "/nodes/pve1/qemu", 0, 200, "OK", "{\"data\":[]}", false,
				     0, false});
	struct pve *c = mock_client(&m, false, NULL);
	struct pve_error e = {0};
	struct pve_call_opts co = {.timeout_ms = 300};
	json_object *d = NULL;
	/* GET: the first answer never comes; the retry gets one. */
	cr_expect_eq(pve_request(c, "GET", "/nodes/pve1/qemu", NULL, &co, &d, &e), 0, "%s",
		     etext(&e));
	cr_expect_eq(e.attempts, 2);
	if (d)
		json_object_put(d);
	/* POST: a request that may have been applied is not sent again. */
	m.rules[0].hits = 0;
	m.rules[0].method = "POST";
	cr_expect_eq(pve_request(c, "POST", "/nodes/pve1/qemu", NULL, &co, NULL, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_TIMEOUT, "%s", etext(&e));
	cr_expect_eq(e.attempts, 1);
	cr_expect(e.ambiguous);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_NEEDS_ATTENTION);
	pve_free(c);
	mock_stop(&m);
	cr_expect_eq(mock_count(&m, "GET", "/api2/json/nodes/pve1/qemu"), 2);
	cr_expect_eq(mock_count(&m, "POST", "/api2/json/nodes/pve1/qemu"), 1);
	pve_error_clear(&e);
}

/* ---- tasks against the mock --------------------------------------------------- */

#define MOCK_UPID "UPID:pve1:0000A1B2:0123ABCD:65F0A1B2:qmclone:9000:root@pam!pvagent:"
#define MOCK_TASK_PATH "/api2/json/nodes/pve1/tasks/" MOCK_UPID

static void mock_task(struct mock *m)
{
	m->upid = MOCK_UPID;
	mock_rule(m, (struct mrule){"POST", "/nodes/pve1/qemu/9000/clone", 0, 200, "OK",
				    "{\"data\":\"" MOCK_UPID "\"}", false, 0, false});
}

struct prog {
	double pct[32];
	int n;
	double last;
};

static void prog_cb(void *ctx, const struct task_progress *p)
{
	struct prog *pr = ctx;
	if (pr->n < 32)
		pr->pct[pr->n] = p->percent;
	pr->n++;
	pr->last = p->percent;
}

/* A clone task read through its log: PVE cannot open the log on the
 * first request, the next ones show it growing, "TASK OK" comes with the
 * seventh. With `percentages` the log has the copy's "transferred" lines
 * (0% with the second request, 50% with the third, 100% with the fourth),
 * otherwise none. The sleeps before the requests go to fc; the status is
 * never asked. */
static void clone_task_reads(bool percentages, struct fake_clock *fc, struct prog *pr)
{
	struct mock m;
	mock_start(&m);
	mock_task(&m);
	m.statuses[0] = "running";
	m.nstatus = 1;
	m.log_missing = 1;
	int nl = 0;
	m.log_from[nl] = 2;
	m.log[nl++] = "create full clone of drive scsi0 (local-lvm:base-9000-disk-0)";
	if (percentages) {
		m.log_from[nl] = 2;
		m.log[nl++] = "transferred 0.0 B of 4.0 GiB (0.00%)";
		m.log_from[nl] = 3;
		m.log[nl++] = "transferred 2.0 GiB of 4.0 GiB (50.00%)";
		m.log_from[nl] = 4;
		m.log[nl++] = "transferred 4.0 GiB of 4.0 GiB (100.00%)";
	}
	m.log_from[nl] = 7;
	m.log[nl++] = "TASK OK";
	m.nlog = nl;
	struct pve_clock clk = {fake_now, fake_sleep, fc};
	struct pve *c = mock_client(&m, false, NULL);
	struct pve_error e = {0};
	struct task_result res;
	struct task_wait_opts wo = {.clock = &clk, .progress = prog_cb, .progress_ctx = pr};
	struct pve_params p = {0};
	pve_params_add_int(&p, "newid", 101);
	cr_assert_eq(task_run(c, "POST", "/nodes/pve1/qemu/9000/clone", &p, NULL, &wo, &res, &e), 0,
		     "%s", e.message);
	pve_params_free(&p);
	cr_expect_str_eq(res.exitstatus, "OK");
	cr_expect_eq(res.polls, 0);
	cr_expect_eq(res.log_reads, 7);
	cr_expect_eq(res.downtime_ms, -1);
	task_result_free(&res);
	pve_free(c);
	mock_stop(&m);
	cr_expect_eq(mock_count(&m, "POST", "/api2/json/nodes/pve1/qemu/9000/clone"), 1);
	cr_expect_eq(mock_count(&m, "GET", MOCK_TASK_PATH "/status"), 0);
	cr_expect_eq(mock_count(&m, "GET", MOCK_TASK_PATH "/log"), 7);
	pve_error_clear(&e);
}

Test(mock, task_ok_after_not_yet_visible_backs_off)
{
	/* No percentages: 1 s, then 1 s doubling to 2 s. */
	struct fake_clock fc = {0};
	struct prog pr = {0};
	clone_task_reads(false, &fc, &pr);
	const double want[] = {1, 1, 2, 2, 2, 2, 2};
	cr_assert_eq(fc.n, 7);
	for (int i = 0; i < 7; i++)
		cr_expect_float_eq(fc.slept[i], want[i], 1e-9, "sleep %d = %f", i, fc.slept[i]);
	cr_expect_eq(pr.n, 0);
}

Test(mock, task_progress_places_a_read_after_the_estimated_end)
{
	/* 0% with the read at 2 s (written about 1.5 s), 50% at 4 s (about
	 * 3 s): the end is estimated at 4.5 s and read just after; past it
	 * the tail is followed, request n never before n s. */
	struct fake_clock fc = {0};
	struct prog pr = {0};
	clone_task_reads(true, &fc, &pr);
	const double want[] = {1, 1, 2, 0.6, 0.4, 1, 1};
	cr_assert_eq(fc.n, 7);
	for (int i = 0; i < 7; i++)
		cr_expect_float_eq(fc.slept[i], want[i], 1e-9, "sleep %d = %f", i, fc.slept[i]);
	cr_expect_eq(pr.n, 3);
	cr_expect_float_eq(pr.pct[0], 0.0, 1e-9);
	cr_expect_float_eq(pr.pct[1], 50.0, 1e-9);
	cr_expect_float_eq(pr.pct[2], 100.0, 1e-9);
}

Test(mock, task_silent_log_asks_the_status)
{
	/* A log that never gets its last line (a killed worker): after 10 s
	 * of silence the status is asked every other time and ends it; then
	 * the rest of the log is read. */
	struct mock m;
	mock_start(&m);
	mock_task(&m);
	for (int i = 0; i < 9; i++)
		m.statuses[i] = "running";
	m.statuses[9] = "unexpected status";
	m.nstatus = 10;
	m.log[0] = "starting";
	m.nlog = 1;
	struct fake_clock fc = {0};
	struct pve_clock clk = {fake_now, fake_sleep, &fc};
	struct pve *c = mock_client(&m, false, NULL);
	struct pve_error e = {0};
	struct task_result res;
	struct task_wait_opts wo = {.clock = &clk};
	cr_expect_eq(task_wait(c, MOCK_UPID, &wo, &res, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_TASK);
	cr_expect_str_eq(res.exitstatus, "unexpected status");
	cr_expect_eq(res.polls, 10);
	/* reads at 1, 2, 4, ... 12 s; from 14 s status and log in turn, the
	 * tenth status at 50 s; then the rest of the log */
	cr_expect_float_eq(fc.t, 50.0, 1e-9, "%f", fc.t);
	cr_expect_eq(res.log_reads, 7 + 9 + 1, "%u log reads", res.log_reads);
	task_result_free(&res);
	pve_free(c);
	mock_stop(&m);
	pve_error_clear(&e);
}

Test(mock, task_warnings_are_success_and_shown)
{
	struct mock m;
	mock_start(&m);
	mock_task(&m);
	m.statuses[0] = "WARNINGS: 2";
	m.nstatus = 1;
	m.log[0] = "starting migration of VM 9000 to node 'pve2'";
	m.log[1] = "WARN: no efidisk configured";
	m.log[2] = "2024-05-01 10:00:03 migration active, transferred 1.0 GiB of 2.0 GiB VM-state, 100 MiB/s";
	m.log[3] = "2024-05-01 10:00:09 average migration speed: 457.0 MiB/s - downtime 73 ms";
	m.log[4] = "2024-05-01 10:00:10 migration finished successfully (duration 00:00:18)";
	m.log[5] = "WARN: something else";
	m.log[6] = "TASK WARNINGS: 2";
	m.nlog = 7;
	struct capture cap = {0};
	log_set_sink(cap_sink, &cap);
	struct fake_clock fc = {0};
	struct pve_clock clk = {fake_now, fake_sleep, &fc};
	struct pve *c = mock_client(&m, false, NULL);
	struct pve_error e = {0};
	struct task_result res;
	struct task_wait_opts wo = {.clock = &clk};
	cr_assert_eq(task_wait(c, MOCK_UPID, &wo, &res, &e), 0, "%s", e.message);
	cr_expect_eq(res.polls, 0, "the log's last line ended it");
	cr_expect_eq(res.log_reads, 1);
	cr_expect_eq(res.warnings, 2);
	cr_assert_eq(res.n_warning_lines, 2);
	cr_expect_str_eq(res.warning_lines[1], "WARN: something else");
	cr_expect_eq(res.downtime_ms, 73);
	cr_expect_eq(res.duration_s, 18);
	cr_expect_eq(cap.warnings, 2);
	cr_expect(strstr(sbuf_str(&cap.text), "qmclone 9000 on pve1: WARN: no efidisk configured") !=
		  NULL, "%s", sbuf_str(&cap.text));
	task_result_free(&res);
	pve_free(c);
	mock_stop(&m);
	log_set_sink(NULL, NULL);
	sbuf_free(&cap.text);
	pve_error_clear(&e);
}

Test(mock, task_failure_carries_log_tail)
{
	struct mock m;
	mock_start(&m);
	mock_task(&m);
	m.statuses[0] = "running";
	m.statuses[1] = "clone failed: can't activate LV";
	m.nstatus = 2;
	for (int i = 0; i < 30; i++) {
		static char lines[30][32];
		snprintf(lines[i], sizeof lines[i], "line %d", i);
		m.log[i] = lines[i];
	}
	m.log[30] = "TASK ERROR: clone failed: can't activate LV";
	m.nlog = 31;
	struct fake_clock fc = {0};
	struct pve_clock clk = {fake_now, fake_sleep, &fc};
	struct pve *c = mock_client(&m, false, NULL);
	struct pve_error e = {0};
	struct task_wait_opts wo = {.clock = &clk, .tail_lines = 3};
	cr_expect_eq(task_run(c, "POST", "/nodes/pve1/qemu/9000/clone", NULL, NULL, &wo, NULL, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_TASK);
	cr_expect_str_eq(e.message, "qmclone 9000 on pve1 failed: clone failed: can't activate LV");
	cr_expect_str_eq(e.upid, MOCK_UPID);
	cr_expect_str_eq(e.detail, "line 28\nline 29\nTASK ERROR: clone failed: can't activate LV");
	char *f = pve_error_format(&e);
	cr_expect(strstr(f, "task log (last lines):\n    line 28\n") != NULL, "%s", f);
	free(f);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_FAILED);
	pve_free(c);
	mock_stop(&m);
	cr_expect_eq(mock_count(&m, "POST", "/api2/json/nodes/pve1/qemu/9000/clone"), 1,
		     "a failed task is not started again");
	pve_error_clear(&e);
}

Test(mock, task_poll_fault_does_not_reissue_and_timeout_leaves_task)
{
	struct mock m;
	mock_start(&m);
	mock_task(&m);
	m.statuses[0] = "running";
	m.nstatus = 1;
	mock_rule(&m, (struct mrule){"GET", "/nodes/pve1/tasks/*", 2, 503, "Service Unavailable",
				     NULL, false, 0, false});
	struct fake_clock fc = {0};
	struct pve_clock clk = {fake_now, fake_sleep, &fc};
	struct pve *c = mock_client(&m, false, NULL);
	struct pve_error e = {0};
	struct task_wait_opts wo = {.clock = &clk, .timeout_s = 5};
	cr_expect_eq(task_run(c, "POST", "/nodes/pve1/qemu/9000/clone", NULL, NULL, &wo, NULL, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_TASK_TIMEOUT, "%s", e.message);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_NEEDS_ATTENTION);
	cr_expect(strstr(e.message, "still running") != NULL);
	cr_expect(fc.t >= 5 && fc.t < 7, "%f", fc.t);
	pve_free(c);
	mock_stop(&m);
	cr_expect_eq(mock_count(&m, "POST", "/api2/json/nodes/pve1/qemu/9000/clone"), 1);
	pve_error_clear(&e);
}

Test(mock, task_start_null_and_garbage)
{
	struct mock m;
	mock_start(&m);
	mock_rule(&m, (struct mrule){"POST", "/nodes/pve1/qemu/100/config", 0, 200, "OK", NULL, false, 0, false});
	mock_rule(&m, (struct mrule){"POST", "/nodes/pve1/qemu/101/config", 0, 200, "OK",
				     "{\"data\":{\"x\":1}}", false, 0, false});
	struct pve *c = mock_client(&m, false, NULL);
	struct pve_error e = {0};
	char *upid = (char *)"x";
	cr_expect_eq(task_start(c, "POST", "/nodes/pve1/qemu/100/config", NULL, NULL, &upid, &e), 0);
	cr_expect_null(upid);
	cr_expect_eq(task_start(c, "POST", "/nodes/pve1/qemu/101/config", NULL, NULL, &upid, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_PROTOCOL);
	cr_expect_null(upid);
	pve_free(c);
	mock_stop(&m);
	pve_error_clear(&e);
}

/* ==== integration tests against the PVE simulator (tests/pvesim) ============
 * Skipped only when $PVESIM_BIN is unset and build/san/pvesim is missing. */

#define SIM_SCENARIO "tests/pvesim/scenarios/demo.json"
#define SIM_PASSWORD "demo-root-password"
#define SIM_AUDIT_TOKEN "audit@pve!ro"
#define SIM_AUDIT_SECRET "0f9e8d7c-6b5a-4f3e-9d2c-1b0a9f8e7d6c"

/* The running simulator, stopped by the suite's fini when a failed
 * assertion ended the test early (so no simulator is left behind). */
static struct simproc *running_sim;

static void sim_start(struct simproc *sp, const char *const *extra)
{
	if (!getenv("PVESIM_BIN") && access("build/san/pvesim", X_OK) != 0)
		cr_skip_test("no simulator: set PVESIM_BIN or make build/san/pvesim");
	cr_assert_eq(simproc_start(sp, SIM_SCENARIO, extra), 0, "simulator did not start");
	running_sim = sp;
}

static void sim_stop(struct simproc *sp)
{
	running_sim = NULL;
	cr_expect_eq(simproc_stop(sp), 0, "simulator did not exit cleanly");
}

static void sim_fini(void)
{
	if (running_sim) {
		struct simproc *sp = running_sim;
		running_sim = NULL;
		simproc_stop(sp);
	}
	log_set_sink(NULL, NULL);
}

TestSuite(sim, .fini = sim_fini);

static struct pve *sim_client(struct simproc *sp, bool ticket, const struct pve_clock *clk)
{
	struct pve_error e = {0};
	struct pve_opts o = {.url = sp->url,
			     .fingerprint = sp->fingerprint,
			     .retry_base_ms = 1,
			     .retry_max_ms = 5,
			     .clock = clk};
	if (ticket) {
		o.user = "root@pam";
		o.password = SIM_PASSWORD;
	} else {
		o.token_id = sp->token_id;
		o.token_secret = sp->token_secret;
	}
	struct pve *c = pve_new(&o, &e);
	cr_assert_not_null(c, "%s", e.message);
	return c;
}

/* Requests in the simulator's log matching method and path (exact, or
 * prefix when path ends in '*'); with_status >= 0 also matches status. */
static int sim_count(struct simproc *sp, const char *method, const char *path, int with_status)
{
	json_object *a = simproc_requests(sp);
	cr_assert_not_null(a);
	int n = 0;
	size_t pl = strlen(path);
	bool prefix = pl && path[pl - 1] == '*';
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *r = json_object_array_get_idx(a, i), *m = NULL, *p = NULL, *s = NULL;
		json_object_object_get_ex(r, "method", &m);
		json_object_object_get_ex(r, "path", &p);
		json_object_object_get_ex(r, "status", &s);
		const char *ps = json_object_get_string(p);
		if (method && strcmp(json_object_get_string(m), method) != 0)
			continue;
		if (prefix ? strncmp(ps, path, pl - 1) != 0 : strcmp(ps, path) != 0)
			continue;
		if (with_status >= 0 && json_object_get_int(s) != with_status)
			continue;
		n++;
	}
	json_object_put(a);
	return n;
}

/* Requests whose "auth" field is not "none". */
static int sim_count_authed(struct simproc *sp)
{
	json_object *a = simproc_requests(sp);
	cr_assert_not_null(a);
	int n = 0;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *au = NULL;
		if (json_object_object_get_ex(json_object_array_get_idx(a, i), "auth", &au) &&
		    strcmp(json_object_get_string(au), "none") != 0)
			n++;
	}
	json_object_put(a);
	return n;
}

static int sim_total(struct simproc *sp)
{
	json_object *a = simproc_requests(sp);
	cr_assert_not_null(a);
	int n = (int)json_object_array_length(a);
	json_object_put(a);
	return n;
}

static void sim_fault(struct simproc *sp, const char *json)
{
	cr_assert_eq(simproc_fault(sp, json), 0, "fault %s refused", json);
}

static struct pve_params clone_params(int newid, const char *name)
{
	struct pve_params p = {0};
	pve_params_add_int(&p, "newid", newid);
	pve_params_add(&p, "name", name);
	pve_params_add_bool(&p, "full", false);
	cr_assert_not(p.failed);
	return p;
}

Test(sim, pin_mismatch_refuses_before_any_credential)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct pve_error e = {0};
	struct pve_opts o = {.url = sp.url,
			     .token_id = sp.token_id,
			     .token_secret = sp.token_secret,
			     .fingerprint = "00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:"
					    "00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF"};
	struct pve *c = pve_new(&o, &e);
	cr_assert_not_null(c);
	cr_expect_eq(pve_login(c, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_PIN, "%s", e.message);
	cr_expect(strstr(e.message, sp.fingerprint) != NULL, "%s", e.message);
	pve_free(c);
	/* The same with a password: nothing reaches /access/ticket either. */
	o.token_id = NULL;
	o.token_secret = NULL;
	o.user = "root@pam";
	o.password = SIM_PASSWORD;
	c = pve_new(&o, &e);
	cr_assert_not_null(c);
	cr_expect_eq(pve_login(c, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_PIN, "%s", e.message);
	pve_free(c);
	cr_expect_eq(sim_total(&sp), 0, "the simulator saw no request");
	cr_expect_eq(sim_count_authed(&sp), 0);
	/* And the right pin works. */
	c = sim_client(&sp, false, NULL);
	cr_expect_eq(pve_login(c, &e), 0, "%s", e.message);
	pve_free(c);
	cr_expect_eq(sim_count(&sp, "GET", "/version", 200), 1);
	pve_error_clear(&e);
	sim_stop(&sp);
}

Test(sim, ca_file_is_verified)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct pve_error e = {0};
	struct pve_opts o = {.url = sp.url,
			     .token_id = sp.token_id,
			     .token_secret = sp.token_secret,
			     .ca_file = sp.cert_path};
	struct pve *c = pve_new(&o, &e);
	cr_assert_not_null(c, "%s", e.message);
	int rc = pve_login(c, &e);
	/* The simulator's certificate may not name 127.0.0.1; either it
	 * verifies, or it fails as TLS (never silently accepted). */
	cr_expect(rc == 0 || e.kind == PVE_ERR_TLS, "%s", e.message);
	pve_free(c);
	o.ca_file = NULL;
	c = pve_new(&o, &e);
	cr_assert_not_null(c);
	cr_expect_eq(pve_login(c, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_TLS, "system store must not trust the simulator: %s",
		     e.message);
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
}

Test(sim, ticket_login_and_csrf_on_post)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct pve *c = sim_client(&sp, true, NULL);
	struct pve_error e = {0};
	json_object *d = NULL;
	cr_assert_eq(pve_get(c, "/nodes", NULL, &d, &e), 0, "%s", e.message);
	cr_expect(json_object_is_type(d, json_type_array));
	json_object_put(d);
	/* A POST is refused by the simulator without the CSRF token. */
	struct pve_params p = clone_params(150, "csrf-check");
	char *upid = NULL;
	cr_assert_eq(task_start(c, "POST", "/nodes/pve1/qemu/9000/clone", &p, NULL, &upid, &e), 0,
		     "%s", e.message);
	cr_expect_not_null(upid);
	free(upid);
	pve_params_free(&p);
	cr_expect_eq(sim_count(&sp, "POST", "/access/ticket", 200), 1);
	cr_expect_eq(sim_count(&sp, "POST", "/nodes/pve1/qemu/9000/clone", 200), 1);
	cr_expect_eq(sim_count(&sp, NULL, "*", 401), 0);
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
}

Test(sim, ticket_renewed_on_401_after_expiry)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	const char *extra[] = {"--time-scale", "100", NULL};
	sim_start(&sp, extra);
	struct pve *c = sim_client(&sp, true, NULL);
	struct pve_error e = {0};
	cr_assert_eq(pve_get(c, "/version", NULL, NULL, &e), 0, "%s", e.message);
	/* Two hours pass on the server only: the ticket expires there. */
	cr_assert_eq(simproc_advance(&sp, 7300), 0);
	cr_assert_eq(pve_get(c, "/version", NULL, NULL, &e), 0, "%s", e.message);
	cr_expect_eq(sim_count(&sp, "POST", "/access/ticket", 200), 2);
	cr_expect_eq(sim_count(&sp, "GET", "/version", 401), 1);
	cr_expect_eq(sim_count(&sp, "GET", "/version", 200), 2);
	pve_free(c);
	/* A wrong password: exit 4, the user named, the password not. */
	struct pve_opts o = {.url = sp.url, .fingerprint = sp.fingerprint, .user = "root@pam",
			     .password = "wrong-password-x"};
	c = pve_new(&o, &e);
	cr_assert_not_null(c);
	cr_expect_eq(pve_login(c, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_AUTH);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	char *f = pve_error_format(&e);
	cr_expect(strstr(f, "root@pam") != NULL, "%s", f);
	cr_expect_null(strstr(f, "wrong-password-x"), "%s", f);
	free(f);
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
}

Test(sim, ticket_renewed_before_expiry)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct fake_clock sc = {.sp = &sp, .t = 100};
	struct pve_clock clk = {fake_now, fake_sleep, &sc};
	struct pve *c = sim_client(&sp, true, &clk);
	struct pve_error e = {0};
	cr_assert_eq(pve_get(c, "/version", NULL, NULL, &e), 0, "%s", e.message);
	for (int i = 0; i < 5; i++) {
		/* 25 simulated minutes at a time: 125 min in all, past the
		 * 2 h ticket lifetime, without a single 401. */
		fake_sleep(&sc, 1500);
		cr_assert_eq(pve_get(c, "/version", NULL, NULL, &e), 0, "%s", e.message);
	}
	/* Logins at t=100 and t=4600 (the first ticket was an hour old). */
	cr_expect_eq(sim_count(&sp, "POST", "/access/ticket", 200), 2);
	cr_expect_eq(sim_count(&sp, NULL, "*", 401), 0);
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
}

Test(sim, token_refused_exit_4)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct pve_error e = {0};
	struct pve_opts o = {.url = sp.url,
			     .fingerprint = sp.fingerprint,
			     .token_id = sp.token_id,
			     .token_secret = "11111111-2222-3333-4444-555555555555"};
	struct pve *c = pve_new(&o, &e);
	cr_assert_not_null(c);
	cr_expect_eq(pve_get(c, "/version", NULL, NULL, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_AUTH);
	cr_expect(strstr(e.message, sp.token_id) != NULL, "%s", e.message);
	cr_expect_null(strstr(e.message, "11111111-2222"), "%s", e.message);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_UNREACHABLE);
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
}

static void sim_retry_get(struct simproc *sp, struct pve *c, const char *fault, int expect_sent)
{
	struct pve_error e = {0};
	int before = sim_count(sp, "GET", "/nodes", -1);
	sim_fault(sp, fault);
	json_object *d = NULL;
	cr_expect_eq(pve_get(c, "/nodes", NULL, &d, &e), 0, "%s: %s", fault,
		     e.message ? e.message : "");
	cr_expect(json_object_is_type(d, json_type_array), "%s", fault);
	if (d)
		json_object_put(d);
	cr_expect_eq(sim_count(sp, "GET", "/nodes", -1) - before, expect_sent, "%s", fault);
	pve_error_clear(&e);
}

Test(sim, retry_classes_on_get)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct pve *c = sim_client(&sp, false, NULL);
	unsigned long n0 = pve_request_count(c);
	sim_retry_get(&sp, c, "{\"method\":\"GET\",\"path\":\"^/nodes$\",\"nth\":1,\"action\":\"status\",\"status\":503,\"message\":\"Service Unavailable\"}", 2);
	sim_retry_get(&sp, c, "{\"method\":\"GET\",\"path\":\"^/nodes$\",\"nth\":1,\"action\":\"status\",\"status\":502,\"message\":\"Bad Gateway\"}", 2);
	sim_retry_get(&sp, c, "{\"method\":\"GET\",\"path\":\"^/nodes$\",\"nth\":1,\"action\":\"status\",\"status\":504,\"message\":\"Gateway Timeout\"}", 2);
	sim_retry_get(&sp, c, "{\"method\":\"GET\",\"path\":\"^/nodes$\",\"nth\":1,\"action\":\"timeout\"}", 2);
	sim_retry_get(&sp, c, "{\"method\":\"GET\",\"path\":\"^/nodes$\",\"nth\":1,\"action\":\"no_worker_upid\"}", 2);
	cr_expect_eq(pve_request_count(c) - n0, 10);
	/* A reset connection: retried too. On a reused connection libcurl
	 * itself resends an idempotent GET once, so use a fresh client (new
	 * connection) to see our own retry. */
	pve_free(c);
	c = sim_client(&sp, false, NULL);
	struct pve_error e = {0};
	sim_fault(&sp, "{\"method\":\"GET\",\"path\":\"^/nodes$\",\"nth\":1,\"action\":\"reset\"}");
	n0 = pve_request_count(c);
	json_object *d = NULL;
	cr_expect_eq(pve_get(c, "/nodes", NULL, &d, &e), 0, "reset: %s", etext(&e));
	if (d)
		json_object_put(d);
	cr_expect_eq(pve_request_count(c) - n0, 2, "sent %lu", pve_request_count(c) - n0);
	cr_expect_eq(e.attempts, 2, "attempts %d", e.attempts);
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
}

/* Issue 36: the command line's client (unreachable_once) says a refused
 * connection at once, but a reset after its first request went out is a
 * transient answer: asked again as on any later GET. */
Test(sim, a_reset_on_the_first_request_is_retried_a_refusal_is_not)
{
	static struct simproc sp;
	sim_start(&sp, NULL);
	struct pve_error e = {0};
	/* copies: the simulator's are freed when it stops */
	char *url = strdup(sp.url), *fp = strdup(sp.fingerprint), *tid = strdup(sp.token_id),
	     *sec = strdup(sp.token_secret);
	cr_assert(url && fp && tid && sec);
	struct pve_opts o = {.url = url,
			     .fingerprint = fp,
			     .token_id = tid,
			     .token_secret = sec,
			     .retry_base_ms = 1,
			     .retry_max_ms = 5,
			     .unreachable_once = true};
	struct pve *c = pve_new(&o, &e);
	cr_assert_not_null(c, "%s", e.message);
	sim_fault(&sp, "{\"method\":\"GET\",\"path\":\"^/nodes$\",\"nth\":1,"
		       "\"action\":\"reset\"}");
	json_object *d = NULL;
	cr_expect_eq(pve_get(c, "/nodes", NULL, &d, &e), 0, "reset: %s", etext(&e));
	json_object_put(d);
	cr_expect_eq(e.attempts, 2, "attempts %d", e.attempts);
	cr_expect_eq(sim_count(&sp, "GET", "/nodes", -1), 2);
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
	/* the simulator gone: its port refuses, said at once */
	c = pve_new(&o, &e);
	cr_assert_not_null(c, "%s", e.message);
	cr_expect_eq(pve_get(c, "/nodes", NULL, &d, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_CONNECT, "%s", etext(&e));
	cr_expect_eq(e.attempts, 1, "attempts %d", e.attempts);
	pve_free(c);
	pve_error_clear(&e);
	free(url);
	free(fp);
	free(tid);
	free(sec);
}

static void sim_no_retry(struct simproc *sp, struct pve *c, const char *path,
			 const struct pve_params *p, enum pve_err_kind want, int status)
{
	struct pve_error e = {0};
	int before = sim_count(sp, "POST", path, -1);
	cr_expect_eq(pve_post(c, path, p, NULL, &e), -1);
	cr_expect_eq(e.kind, want, "%s: %s %s", path, pve_err_kind_name(e.kind),
		     e.message ? e.message : "");
	cr_expect_eq(e.http_status, status);
	cr_expect_eq(e.attempts, 1);
	cr_expect_eq(sim_count(sp, "POST", path, -1) - before, 1, "%s sent once", path);
	pve_error_clear(&e);
}

Test(sim, non_retry_classes)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct pve *c = sim_client(&sp, false, NULL);
	/* 400 with per-parameter errors. */
	struct pve_params p = {0};
	pve_params_add(&p, "name", "no-newid");
	struct pve_error e = {0};
	cr_expect_eq(pve_post(c, "/nodes/pve1/qemu/9000/clone", &p, NULL, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_PARAM, "%s", e.message);
	json_object *pe = NULL;
	cr_expect(e.param_errors && json_object_object_get_ex(e.param_errors, "newid", &pe),
		  "param errors name newid");
	char *f = pve_error_format(&e);
	cr_expect(strstr(f, "\n  newid: ") != NULL, "%s", f);
	free(f);
	cr_expect_eq(e.attempts, 1);
	pve_params_free(&p);
	/* 500 "already exists": VM 190 exists. */
	p = clone_params(190, "dup");
	sim_no_retry(&sp, c, "/nodes/pve1/qemu/9000/clone", &p, PVE_ERR_EXISTS, 500);
	pve_params_free(&p);
	pve_free(c);
	/* 403 for a token without the privilege. */
	struct pve_opts o = {.url = sp.url, .fingerprint = sp.fingerprint,
			     .token_id = SIM_AUDIT_TOKEN, .token_secret = SIM_AUDIT_SECRET};
	c = pve_new(&o, &e);
	cr_assert_not_null(c);
	p = clone_params(151, "no-priv");
	sim_no_retry(&sp, c, "/nodes/pve1/qemu/9000/clone", &p, PVE_ERR_PERM, 403);
	pve_params_free(&p);
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
}

/* A config change sent with a digest that no longer matches: PVE's
 * "detected modified configuration" is classified where the answer is
 * decoded (PVE_ERR_CONFLICT, "conflict"), a definite answer: sent once,
 * never ambiguous, even when the caller stops on a maybe-applied request;
 * with the digest read again the same change goes through. */
Test(sim, digest_conflict_is_its_own_kind)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct pve *c = sim_client(&sp, false, NULL);
	static const char path[] = "/nodes/pve1/qemu/190/config";
	json_object *cfg = NULL, *d = NULL;
	struct pve_error e = {0};
	cr_assert_eq(pve_get(c, path, NULL, &cfg, &e), 0, "%s", e.message);
	cr_assert(json_object_object_get_ex(cfg, "digest", &d));
	char *digest = strdup(json_object_get_string(d));
	cr_assert_not_null(digest);
	json_object_put(cfg);

	struct pve_params p = {0};
	pve_params_add(&p, "description", "changed meanwhile");
	cr_assert_eq(pve_put(c, path, &p, NULL, &e), 0, "%s", e.message);
	pve_params_free(&p);

	pve_params_add(&p, "description", "ours");
	pve_params_add(&p, "digest", digest);
	const struct pve_call_opts co = {.stop_if_maybe_applied = true};
	cr_expect_eq(pve_request(c, "PUT", path, &p, &co, NULL, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_CONFLICT, "%s: %s", pve_err_kind_name(e.kind), e.message);
	cr_expect_str_eq(pve_err_kind_name(e.kind), "conflict");
	cr_expect_eq(e.http_status, 500);
	cr_expect_not(e.ambiguous, "a digest conflict is a definite answer");
	cr_expect_eq(e.attempts, 1, "not retried");
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_FAILED);
	enum pve_err_kind k;
	cr_expect(pve_err_kind_parse("conflict", &k) == 0 && k == PVE_ERR_CONFLICT);
	pve_params_free(&p);
	free(digest);

	cr_assert_eq(pve_get(c, path, NULL, &cfg, &e), 0, "%s", e.message);
	cr_assert(json_object_object_get_ex(cfg, "digest", &d));
	pve_params_add(&p, "description", "ours");
	pve_params_add(&p, "digest", json_object_get_string(d));
	cr_expect_eq(pve_request(c, "PUT", path, &p, &co, NULL, &e), 0, "%s", e.message);
	pve_params_free(&p);
	json_object_put(cfg);
	cr_expect_eq(sim_count(&sp, "PUT", path, 500), 1, "the conflicting PUT was sent once");
	pve_error_clear(&e);
	pve_free(c);
	sim_stop(&sp);
}

static bool sim_exists_ours(struct pve *c, void *ctx)
{
	const char *name = ctx;
	json_object *cfg = NULL, *n = NULL;
	struct pve_error e = {0};
	bool ours = pve_get(c, "/nodes/pve1/qemu/152/config", NULL, &cfg, &e) == 0 && cfg &&
		    json_object_object_get_ex(cfg, "name", &n) &&
		    strcmp(json_object_get_string(n), name) == 0;
	if (cfg)
		json_object_put(cfg);
	pve_error_clear(&e);
	return ours;
}

Test(sim, no_reissued_task_after_faults)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct fake_clock sc = {.sp = &sp};
	struct pve_clock clk = {fake_now, fake_sleep, &sc};
	struct pve *c = sim_client(&sp, false, NULL);
	struct pve_error e = {0};
	struct task_wait_opts wo = {.clock = &clk};
	const char *path = "/nodes/pve1/qemu/9000/clone";

	/* 503 before the clone ran, then a fault while polling the task: one
	 * task, two POSTs, never a third. */
	sim_fault(&sp, "{\"method\":\"POST\",\"path\":\"/clone$\",\"nth\":1,\"action\":\"status\",\"status\":503,\"message\":\"Service Unavailable\"}");
	sim_fault(&sp, "{\"method\":\"GET\",\"path\":\"/tasks/.*/status$\",\"nth\":2,\"action\":\"status\",\"status\":503,\"message\":\"Service Unavailable\"}");
	struct pve_params p = clone_params(151, "retry-me");
	cr_expect_eq(task_run(c, "POST", path, &p, NULL, &wo, NULL, &e), 0, "%s", e.message);
	pve_params_free(&p);
	cr_expect_eq(sim_count(&sp, "POST", path, -1), 2);
	cr_expect_eq(sim_count(&sp, "POST", path, 200), 1);

	/* "got no worker upid": retried, one task. */
	sim_fault(&sp, "{\"method\":\"POST\",\"path\":\"/clone$\",\"nth\":1,\"action\":\"no_worker_upid\"}");
	p = clone_params(153, "worker");
	cr_expect_eq(task_run(c, "POST", path, &p, NULL, &wo, NULL, &e), 0, "%s", e.message);
	pve_params_free(&p);
	cr_expect_eq(sim_count(&sp, "POST", path, -1), 4);
	cr_expect_eq(sim_count(&sp, "POST", path, 200), 2);

	/* The clone runs but its answer is lost: the retry meets "already
	 * exists", which counts as done only because the VM is ours. */
	sim_fault(&sp, "{\"method\":\"POST\",\"path\":\"/clone$\",\"nth\":1,\"action\":\"reset\",\"after\":true}");
	p = clone_params(152, "lost-answer");
	struct pve_call_opts co = {.exists_is_ours = sim_exists_ours, .exists_ctx = (void *)"lost-answer"};
	char *upid = NULL;
	cr_expect_eq(task_start(c, "POST", path, &p, &co, &upid, &e), 1, "%s",
		     e.message ? e.message : "");
	cr_expect_null(upid);
	pve_params_free(&p);
	/* Two POSTs: the lost one (which ran) and the retry refused with
	 * "already exists"; no third. */
	cr_expect_eq(sim_count(&sp, "POST", path, -1), 6);
	cr_expect_eq(sim_count(&sp, "POST", path, 500), 2, "no worker upid + already exists");
	/* Same again for someone else's VM of that id: an error, exit 3. */
	sim_fault(&sp, "{\"method\":\"POST\",\"path\":\"/clone$\",\"nth\":1,\"action\":\"reset\",\"after\":true}");
	p = clone_params(154, "other-name");
	co.exists_ctx = (void *)"never-this";
	struct pve_params p2 = clone_params(154, "other-name");
	(void)p2;
	pve_params_free(&p2);
	cr_expect_eq(task_start(c, "POST", path, &p, &co, &upid, &e), -1);
	cr_expect_eq(e.kind, PVE_ERR_EXISTS, "%s", e.message ? e.message : "");
	cr_expect(e.ambiguous);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_NEEDS_ATTENTION);
	pve_params_free(&p);
	json_object *st = simproc_state(&sp);
	cr_assert_not_null(st);
	json_object_put(st);
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
}

static void sim_prog(void *ctx, const struct task_progress *p)
{
	struct prog *pr = ctx;
	if (pr->n < 32)
		pr->pct[pr->n] = p->percent;
	pr->n++;
	pr->last = p->percent;
}

Test(sim, task_wait_ok_poll_schedule_and_progress)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct fake_clock sc = {.sp = &sp};
	struct pve_clock clk = {fake_now, fake_sleep, &sc};
	struct pve *c = sim_client(&sp, false, NULL);
	struct pve_error e = {0};
	struct prog pr = {0};
	struct task_wait_opts wo = {.clock = &clk, .progress = sim_prog, .progress_ctx = &pr};
	struct task_result res;
	struct pve_params p = {0};
	pve_params_add_int(&p, "newid", 160);
	pve_params_add(&p, "name", "full-clone");
	pve_params_add_bool(&p, "full", true);
	cr_assert_eq(task_run(c, "POST", "/nodes/pve1/qemu/9000/clone", &p, NULL, &wo, &res, &e), 0,
		     "%s", e.message ? e.message : "");
	pve_params_free(&p);
	cr_expect_str_eq(res.exitstatus, "OK");
	cr_expect(sc.n >= 2);
	cr_expect_float_eq(sc.slept[0], 1.0, 1e-9, "the first read after 1 s");
	double t = 0;
	for (int i = 0; i < sc.n && i < 64; i++) {
		t += sc.slept[i];
		cr_expect(sc.slept[i] >= 0.15 - 1e-9 && t >= i + 1 - 1e-9, "sleep %d = %f", i,
			  sc.slept[i]);
	}
	/* Log reads only, the last of them with "TASK OK". */
	cr_expect_eq(res.polls, 0);
	cr_expect_eq(res.log_reads, (unsigned)sc.n);
	/* The clone log's percentages reached the callback in order. */
	cr_expect(pr.n >= 10, "progress lines seen: %d", pr.n);
	for (int i = 1; i < pr.n && i < 32; i++)
		cr_expect(pr.pct[i] >= pr.pct[i - 1], "progress never goes back");
	cr_expect_float_eq(pr.last, 100.0, 1e-6, "n=%d last %f", pr.n, pr.last);
	task_result_free(&res);
	cr_expect_eq(sim_count(&sp, "POST", "/nodes/pve1/qemu/9000/clone", -1), 1);
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
}

Test(sim, migration_downtime_and_duration)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct fake_clock sc = {.sp = &sp};
	struct pve_clock clk = {fake_now, fake_sleep, &sc};
	struct pve *c = sim_client(&sp, false, NULL);
	struct pve_error e = {0};
	struct capture cap = {0};
	log_set_sink(cap_sink, &cap);
	struct prog pr = {0};
	struct task_wait_opts wo = {.clock = &clk, .progress = sim_prog, .progress_ctx = &pr};
	struct task_result res;
	struct pve_params p = {0};
	pve_params_add(&p, "target", "pve2");
	pve_params_add_bool(&p, "online", true);
	pve_params_add_bool(&p, "with-local-disks", true);
	cr_assert_eq(task_run(c, "POST", "/nodes/pve1/qemu/190/migrate", &p, NULL, &wo, &res, &e), 0,
		     "%s", etext(&e));
	pve_params_free(&p);
	cr_expect_str_eq(res.exitstatus, "OK");
	cr_expect_eq(res.warnings, 0);
	cr_expect_eq(res.downtime_ms, 40, "downtime %ld", res.downtime_ms);
	cr_expect_geq(res.duration_s, 0);
	cr_expect_geq(pr.n, 1);
	task_result_free(&res);
	log_set_sink(NULL, NULL);
	sbuf_free(&cap.text);
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
}

Test(sim, task_failure_reports_log_tail)
{
	static struct simproc sp; /* static: sim_fini may stop it */
	sim_start(&sp, NULL);
	struct fake_clock sc = {.sp = &sp};
	struct pve_clock clk = {fake_now, fake_sleep, &sc};
	struct pve *c = sim_client(&sp, false, NULL);
	struct pve_error e = {0};
	struct task_wait_opts wo = {.clock = &clk, .tail_lines = 5};
	sim_fault(&sp, "{\"method\":\"POST\",\"path\":\"/clone$\",\"nth\":1,\"action\":\"task_fail\",\"message\":\"simulated storage failure\"}");
	struct pve_params p = clone_params(170, "doomed");
	cr_expect_eq(task_run(c, "POST", "/nodes/pve1/qemu/9000/clone", &p, NULL, &wo, NULL, &e), -1);
	pve_params_free(&p);
	cr_expect_eq(e.kind, PVE_ERR_TASK);
	cr_expect(strstr(e.message, "qmclone") != NULL, "%s", e.message);
	cr_expect(strstr(e.message, "simulated storage failure") != NULL, "%s", e.message);
	cr_expect_not_null(e.upid);
	cr_assert_not_null(e.detail);
	cr_expect(strstr(e.detail, "TASK ERROR: simulated storage failure") != NULL, "%s", e.detail);
	char *f = pve_error_format(&e);
	cr_expect(strstr(f, "task log (last lines):") != NULL, "%s", f);
	free(f);
	cr_expect_eq(pve_error_outcome(&e), JOB_OUT_FAILED);
	cr_expect_eq(sim_count(&sp, "POST", "/nodes/pve1/qemu/9000/clone", -1), 1,
		     "a failed task is not started again");
	pve_free(c);
	pve_error_clear(&e);
	sim_stop(&sp);
}

/* Several clients in parallel threads, one per thread (libcurl's global
 * init happens once inside pve_new). */
struct par_arg {
	struct mock *m;
	int ok;
};

static void *par_worker(void *arg)
{
	struct par_arg *pa = arg;
	struct pve_error e = {0};
	struct pve_opts o = {.url = pa->m->url,
			     .fingerprint = pa->m->fp,
			     .token_id = "root@pam!pvagent",
			     .token_secret = MOCK_TOKEN_SECRET};
	struct pve *c = pve_new(&o, &e);
	if (!c)
		return NULL;
	for (int i = 0; i < 10; i++) {
		json_object *d = NULL;
		if (pve_get(c, "/version", NULL, &d, &e) == 0)
			pa->ok++;
		if (d)
			json_object_put(d);
	}
	pve_free(c);
	pve_error_clear(&e);
	return NULL;
}

Test(mock, parallel_clients_in_threads)
{
	struct mock m;
	mock_start(&m);
	m.token = "PVEAPIToken=root@pam!pvagent=" MOCK_TOKEN_SECRET;
	pthread_t t[4];
	struct par_arg pa[4];
	for (int i = 0; i < 4; i++) {
		pa[i] = (struct par_arg){&m, 0};
		cr_assert_eq(pthread_create(&t[i], NULL, par_worker, &pa[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(pthread_join(t[i], NULL), 0);
		cr_expect_eq(pa[i].ok, 10, "thread %d", i);
	}
	mock_stop(&m);
	cr_expect_eq(m.nreq, 40);
	/* One keep-alive connection per client. */
	cr_expect_eq(m.handshakes, 4);
}
