/* test_server.c - the simulator's HTTPS front end, run as a real process:
 * ready line and certificate fingerprint, token and ticket auth, CSRF,
 * ticket expiry and renewal, login-failure delay, schema answers, 501,
 * every fault kind, the request log, /_sim routes, clean SIGTERM stop,
 * refused starts (bad scenario, bad --guest-root). */
#include "simproc.h"
#include "util.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCENARIO "tests/pvesim/scenarios/server-test.json"

static struct simproc sp;

static void start(const char *const *extra)
{
	cr_assert_eq(simproc_start(&sp, SCENARIO, extra), 0, "simulator did not start");
}

static void stop(void)
{
	cr_assert_eq(simproc_stop(&sp), 0, "simulator did not stop cleanly");
}

static const char *str_at(json_object *o, const char *k1, const char *k2)
{
	json_object *v = o;
	if (k1 && !json_object_object_get_ex(v, k1, &v))
		return NULL;
	if (k2 && !json_object_object_get_ex(v, k2, &v))
		return NULL;
	return json_object_get_string(v);
}

static const char *message_of(json_object *body)
{
	return str_at(body, "message", NULL);
}

static long api(const char *method, const char *path, const char *form, json_object **body)
{
	long st = 0;
	json_object *b = NULL;
	cr_assert_eq(sim_api(&sp, method, path, form, &st, &b), 0, "%s %s: no answer", method, path);
	if (body)
		*body = b;
	else
		json_object_put(b);
	return st;
}

/* POST /access/ticket; returns the status and sets ticket and csrf. */
static long login(const char *user, const char *password, char **ticket, char **csrf)
{
	CURL *c = curl_easy_init();
	char *u = curl_easy_escape(c, user, 0), *p = curl_easy_escape(c, password, 0);
	char *form = strprintf("username=%s&password=%s", u, p);
	curl_free(u);
	curl_free(p);
	curl_easy_cleanup(c);
	long st = 0;
	json_object *b = NULL;
	cr_assert_eq(sim_http(&sp, "POST", "/api2/json/access/ticket",
			      "application/x-www-form-urlencoded", form, NULL, &st, &b), 0);
	free(form);
	if (ticket)
		*ticket = st == 200 ? strdup(str_at(b, "data", "ticket")) : NULL;
	if (csrf)
		*csrf = st == 200 ? strdup(str_at(b, "data", "CSRFPreventionToken")) : NULL;
	json_object_put(b);
	return st;
}

static long with_ticket(const char *method, const char *path, const char *ticket,
			const char *csrf, const char *form, json_object **body)
{
	char *cookie = strprintf("Cookie: PVEAuthCookie=%s", ticket);
	char *ch = csrf ? strprintf("CSRFPreventionToken: %s", csrf) : NULL;
	const char *hdrs[] = {cookie, ch, NULL};
	char *full = strprintf("/api2/json%s", path);
	long st = 0;
	json_object *b = NULL;
	cr_assert_eq(sim_http(&sp, method, full, form ? "application/x-www-form-urlencoded" : NULL,
			      form, hdrs, &st, &b), 0);
	free(cookie);
	free(ch);
	free(full);
	if (body)
		*body = b;
	else
		json_object_put(b);
	return st;
}

static double elapsed_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

Test(server, ready_line_and_fingerprint_match_the_certificate)
{
	start(NULL);
	regex_t re;
	cr_assert_eq(regcomp(&re, "^https://127\\.0\\.0\\.1:[0-9]+$", REG_EXTENDED | REG_NOSUB), 0);
	cr_expect_eq(regexec(&re, sp.url, 0, NULL, 0), 0, "url %s", sp.url);
	regfree(&re);
	cr_assert_eq(regcomp(&re, "^([0-9A-F]{2}:){31}[0-9A-F]{2}$", REG_EXTENDED | REG_NOSUB), 0);
	cr_expect_eq(regexec(&re, sp.fingerprint, 0, NULL, 0), 0, "fingerprint %s", sp.fingerprint);
	regfree(&re);
	cr_expect_str_eq(sp.token_id, "root@pam!pvagent");
	cr_expect_str_eq(sp.token_secret, "5f0c1e64-2a4b-4d7e-9c1f-0a6b3c2d1e00");

	/* The fingerprint is SHA-256 over the DER form of the served cert. */
	char *pem = NULL;
	size_t len = 0;
	cr_assert_eq(read_file(sp.cert_path, &pem, &len), 0);
	gnutls_x509_crt_t crt;
	gnutls_datum_t in = {(unsigned char *)pem, (unsigned)len}, der = {0};
	cr_assert_eq(gnutls_x509_crt_init(&crt), 0);
	cr_assert_eq(gnutls_x509_crt_import(crt, &in, GNUTLS_X509_FMT_PEM), 0);
	cr_assert_eq(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_DER, &der), 0);
	unsigned char md[32];
	cr_assert_eq(gnutls_hash_fast(GNUTLS_DIG_SHA256, der.data, der.size, md), 0);
	struct sbuf fp = {0};
	for (int i = 0; i < 32; i++)
		sbuf_addf(&fp, "%s%02X", i ? ":" : "", md[i]);
	cr_expect_str_eq(sbuf_str(&fp), sp.fingerprint);
	sbuf_free(&fp);
	gnutls_free(der.data);
	gnutls_x509_crt_deinit(crt);
	free(pem);
	stop();
}

Test(server, token_auth)
{
	start(NULL);
	json_object *b = NULL;
	cr_expect_eq(api("GET", "/version", NULL, &b), 200);
	cr_expect_str_eq(str_at(b, "data", "release"), "9.1");
	json_object_put(b);

	long st = 0;
	cr_assert_eq(sim_http(&sp, "GET", "/api2/json/version", NULL, NULL, NULL, &st, &b), 0);
	cr_expect_eq(st, 401, "no credentials: %ld", st);
	cr_expect_str_eq(message_of(b), "No ticket\n");
	json_object_put(b);

	const char *bad[] = {"Authorization: PVEAPIToken=root@pam!pvagent=wrong", NULL};
	cr_assert_eq(sim_http(&sp, "GET", "/api2/json/version", NULL, NULL, bad, &st, &b), 0);
	cr_expect_eq(st, 401);
	cr_expect_str_eq(message_of(b), "invalid token value!\n");
	json_object_put(b);
	stop();
}

Test(server, ticket_login_csrf_and_renewal)
{
	start(NULL);
	char *ticket = NULL, *csrf = NULL;
	cr_assert_eq(login("root@pam", "correct horse battery staple", &ticket, &csrf), 200);
	cr_expect(strncmp(ticket, "PVE:root@pam:", 13) == 0, "ticket %s", ticket);

	cr_expect_eq(with_ticket("GET", "/nodes", ticket, NULL, NULL, NULL), 200);
	/* Non-GET needs the CSRF header... */
	json_object *b = NULL;
	cr_expect_eq(with_ticket("POST", "/nodes/pve1/qemu/100/status/start", ticket, NULL,
				 "", &b), 401);
	cr_expect_str_eq(message_of(b), "Permission denied - invalid csrf token\n");
	json_object_put(b);
	/* ...and the right one. */
	cr_expect_eq(with_ticket("POST", "/nodes/pve1/qemu/100/status/start", ticket, csrf,
				 "", NULL), 200);

	/* Renewal: the ticket itself as the password gives a new ticket. */
	char *t2 = NULL, *c2 = NULL;
	cr_assert_eq(login("root@pam", ticket, &t2, &c2), 200);
	cr_expect_str_neq(t2, ticket);
	cr_expect_eq(with_ticket("GET", "/nodes", t2, NULL, NULL, NULL), 200);
	free(ticket);
	free(csrf);
	free(t2);
	free(c2);
	stop();
}

Test(server, ticket_expires_after_two_hours_of_simulated_time)
{
	start(NULL);
	char *ticket = NULL, *csrf = NULL;
	cr_assert_eq(login("root@pam", "correct horse battery staple", &ticket, &csrf), 200);
	cr_assert_eq(simproc_advance(&sp, 7100), 0);
	cr_expect_eq(with_ticket("GET", "/nodes", ticket, NULL, NULL, NULL), 200);
	cr_assert_eq(simproc_advance(&sp, 200), 0);
	json_object *b = NULL;
	cr_expect_eq(with_ticket("GET", "/nodes", ticket, NULL, NULL, &b), 401);
	cr_expect_str_eq(message_of(b), "permission denied - invalid PVE ticket (expired)\n");
	json_object_put(b);
	/* An expired ticket cannot be renewed either. */
	cr_expect_eq(login("root@pam", ticket, NULL, NULL), 401);
	free(ticket);
	free(csrf);
	stop();
}

Test(server, failed_login_waits_pves_delay_scaled)
{
	const char *args[] = {"--time-scale", "10", NULL};
	start(args);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(login("root@pam", "wrong", NULL, NULL), 401);
	double waited = elapsed_since(&t0);
	cr_expect_geq(waited, 0.29, "3 s at time-scale 10 is 0.3 s; answered after %.3f s", waited);
	cr_expect_eq(login("nobody@pam", "x", NULL, NULL), 401);
	stop();
}

Test(server, schema_errors_answer_400_like_pve)
{
	start(NULL);
	if (access("../shared/pve-api/pve8-apidata.json", R_OK) != 0 && !getenv("PVE_API_DIR")) {
		stop();
		cr_skip_test("no PVE API schema in ../shared/pve-api: schema checks are off");
	}
	json_object *b = NULL;
	cr_expect_eq(api("POST", "/nodes/pve1/qemu", "vmid=abc&bogus=1", &b), 400);
	cr_expect_str_eq(message_of(b), "Parameter verification failed.\n");
	cr_expect_str_eq(str_at(b, "errors", "vmid"), "type check ('integer') failed - got 'abc'");
	cr_expect_str_eq(str_at(b, "errors", "bogus"),
			 "property is not defined in schema and the schema does not allow "
			 "additional properties");
	json_object *data = NULL;
	cr_expect(json_object_object_get_ex(b, "data", &data) && data == NULL);
	json_object_put(b);
	stop();
}

Test(server, unknown_route_answers_501_naming_it)
{
	start(NULL);
	json_object *b = NULL;
	cr_expect_eq(api("GET", "/nodes/pve1/bogus", NULL, &b), 501);
	cr_expect_str_eq(message_of(b), "Method 'GET /nodes/pve1/bogus' not implemented\n");
	json_object_put(b);
	stop();
}

Test(server, fault_status_fires_on_nth_match_only)
{
	start(NULL);
	cr_assert_eq(simproc_fault(&sp, "{\"method\":\"GET\",\"path\":\"^/version$\",\"nth\":2,"
				       "\"action\":\"status\",\"status\":503,"
				       "\"message\":\"service unavailable\"}"), 0);
	json_object *b = NULL;
	cr_expect_eq(api("GET", "/version", NULL, NULL), 200);
	cr_expect_eq(api("GET", "/version", NULL, &b), 503);
	cr_expect_str_eq(message_of(b), "service unavailable\n");
	json_object_put(b);
	cr_expect_eq(api("GET", "/version", NULL, NULL), 200);
	cr_expect_eq(api("GET", "/nodes", NULL, NULL), 200, "other paths are not matched");
	stop();
}

Test(server, fault_kinds)
{
	start(NULL);
	json_object *b = NULL;
	long st = 0;
	/* libcurl sends a request again, once, when a reused keep-alive
	 * connection closes without a byte of answer: fire twice. */
	cr_assert_eq(simproc_fault(&sp, "{\"path\":\"^/nodes$\",\"times\":2,\"action\":\"reset\"}"), 0);
	cr_expect_eq(sim_api(&sp, "GET", "/nodes", NULL, &st, NULL), -1, "connection reset");
	cr_expect_eq(api("GET", "/nodes", NULL, NULL), 200, "the next one is served");

	cr_assert_eq(simproc_fault(&sp, "{\"path\":\"status/start$\",\"nth\":1,"
				       "\"action\":\"no_worker_upid\"}"), 0);
	cr_expect_eq(api("POST", "/nodes/pve1/qemu/100/status/start", "", &b), 500);
	cr_expect_str_eq(message_of(b), "got no worker upid - start worker failed\n");
	json_object_put(b);

	cr_assert_eq(simproc_fault(&sp, "{\"path\":\"^/cluster/resources$\",\"nth\":1,"
				       "\"action\":\"timeout\"}"), 0);
	cr_expect_eq(api("GET", "/cluster/resources", NULL, &b), 596);
	cr_expect_str_eq(message_of(b), "got timeout\n");
	json_object_put(b);

	cr_assert_eq(simproc_fault(&sp, "{\"path\":\"^/cluster/status$\",\"nth\":1,"
				       "\"action\":\"delay\",\"ms\":300}"), 0);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(api("GET", "/cluster/status", NULL, NULL), 200);
	cr_expect_geq(elapsed_since(&t0), 0.29);

	/* task_fail: the request succeeds, the task it started fails. */
	cr_assert_eq(simproc_fault(&sp, "{\"path\":\"status/start$\",\"nth\":1,"
				       "\"action\":\"task_fail\",\"message\":\"start failed: "
				       "QEMU exited with code 1\"}"), 0);
	cr_expect_eq(api("POST", "/nodes/pve1/qemu/100/status/start", "", &b), 200);
	const char *upid = str_at(b, "data", NULL);
	cr_assert(upid && strncmp(upid, "UPID:pve1:", 10) == 0, "upid %s", upid);
	CURL *c = curl_easy_init();
	char *eu = curl_easy_escape(c, upid, 0);
	char *path = strprintf("/nodes/pve1/tasks/%s/status", eu);
	curl_free(eu);
	curl_easy_cleanup(c);
	json_object_put(b);
	cr_assert_eq(simproc_advance(&sp, 600), 0);
	cr_expect_eq(api("GET", path, NULL, &b), 200);
	cr_expect_str_eq(str_at(b, "data", "status"), "stopped");
	cr_expect_str_eq(str_at(b, "data", "exitstatus"), "start failed: QEMU exited with code 1");
	json_object_put(b);
	free(path);
	stop();
}

Test(server, fault_after_runs_the_request_and_loses_the_answer)
{
	start(NULL);
	cr_assert_eq(simproc_fault(&sp, "{\"method\":\"POST\",\"path\":\"/status/start$\","
				       "\"nth\":1,\"after\":true,\"action\":\"status\","
				       "\"status\":502,\"message\":\"proxy error\"}"), 0);
	cr_expect_eq(api("POST", "/nodes/pve1/qemu/100/status/start", "", NULL), 502);
	json_object *reqs = simproc_requests(&sp);
	cr_assert_not_null(reqs);
	json_object *last = json_object_array_get_idx(reqs, json_object_array_length(reqs) - 1);
	cr_expect_eq(json_object_get_int(json_object_object_get(last, "status")), 200,
		     "the request ran");
	cr_expect_eq(json_object_get_int(json_object_object_get(last, "sent")), 502,
		     "but its answer was replaced");
	const char *upid = str_at(last, "upid", NULL);
	cr_expect(upid && strncmp(upid, "UPID:", 5) == 0, "the task was started: upid %s", upid);
	json_object_put(reqs);
	stop();
}

Test(server, probability_faults_are_reproducible_with_a_seed)
{
	int fired[2] = {0, 0};
	unsigned pattern[2] = {0, 0};
	for (int run = 0; run < 2; run++) {
		start(NULL);
		cr_assert_eq(simproc_fault(&sp, "{\"path\":\"^/version$\",\"probability\":0.5,"
					       "\"seed\":42,\"action\":\"status\",\"status\":503}"), 0);
		for (int i = 0; i < 16; i++)
			if (api("GET", "/version", NULL, NULL) == 503) {
				fired[run]++;
				pattern[run] |= 1u << i;
			}
		stop();
	}
	cr_expect_eq(pattern[0], pattern[1], "same seed, same faults");
	cr_expect(fired[0] > 0 && fired[0] < 16, "fired %d of 16", fired[0]);
}

Test(server, bad_fault_rule_is_refused_naming_the_field)
{
	start(NULL);
	long st = 0;
	json_object *b = NULL;
	cr_assert_eq(sim_http(&sp, "POST", "/_sim/fault", "application/json",
			      "{\"path\":\"^/x\",\"action\":\"explode\"}", NULL, &st, &b), 0);
	cr_expect_eq(st, 400);
	cr_expect_str_eq(message_of(b), "fault.action: expected status, no_worker_upid, timeout, "
					"reset, delay or task_fail\n");
	json_object_put(b);
	cr_assert_eq(sim_http(&sp, "POST", "/_sim/fault", "application/json",
			      "{\"path\":\"(\",\"action\":\"reset\"}", NULL, &st, &b), 0);
	cr_expect_eq(st, 400);
	cr_expect(strstr(message_of(b), "fault.path: bad regex"), "%s", message_of(b));
	json_object_put(b);
	stop();
}

Test(server, request_log_masks_secrets_and_records_upids)
{
	start(NULL);
	cr_expect_eq(login("root@pam", "correct horse battery staple", NULL, NULL), 200);
	cr_expect_eq(api("POST", "/nodes/pve1/qemu/100/status/start", "", NULL), 200);
	json_object *reqs = simproc_requests(&sp);
	cr_assert_eq(json_object_array_length(reqs), 2);
	json_object *l0 = json_object_array_get_idx(reqs, 0), *l1 = json_object_array_get_idx(reqs, 1);
	cr_expect_str_eq(str_at(l0, "path", NULL), "/access/ticket");
	cr_expect_str_eq(str_at(l0, "params", "password"), "***");
	cr_expect_str_eq(str_at(l0, "auth", NULL), "none");
	cr_expect_str_eq(str_at(l1, "auth", NULL), "token");
	cr_expect_str_eq(str_at(l1, "userid", NULL), "root@pam!pvagent");
	cr_expect(strncmp(str_at(l1, "upid", NULL), "UPID:pve1:", 10) == 0);
	json_object_put(reqs);
	char *text = NULL;
	cr_assert_eq(read_file(sp.log_path, &text, NULL), 0);
	cr_expect_null(strstr(text, "correct horse"), "the password is never logged");
	cr_expect_null(strstr(text, "5f0c1e64"), "the token secret is never logged");
	free(text);
	stop();
}

Test(server, sim_state_and_clock)
{
	start(NULL);
	json_object *s1 = simproc_state(&sp);
	cr_assert_not_null(s1);
	double t1 = json_object_get_double(json_object_object_get(s1, "now"));
	cr_expect_not_null(json_object_object_get(s1, "cluster"));
	cr_assert_eq(simproc_advance(&sp, 3600), 0);
	json_object *s2 = simproc_state(&sp);
	double t2 = json_object_get_double(json_object_object_get(s2, "now"));
	cr_expect_geq(t2 - t1, 3600.0);
	cr_expect_lt(t2 - t1, 3660.0);
	json_object_put(s1);
	json_object_put(s2);
	stop();
}

/* Run the simulator to its exit (a refused start); extra_args may be NULL. */
static int run_sim(const char *scenario, const char *const *env, const char *const *extra_args,
		   char **err_out)
{
	char errpath[] = "/tmp/pvesim-err-XXXXXX";
	int fd = mkstemp(errpath);
	cr_assert_geq(fd, 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd, 2);
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		for (size_t i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		const char *bin = getenv("PVESIM_BIN");
		if (!bin)
			bin = "build/san/pvesim";
		const char *argv[16] = {bin, "--scenario", scenario};
		for (size_t i = 0; extra_args && extra_args[i] && i < 12; i++)
			argv[3 + i] = extra_args[i];
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(fd);
	int st = 0;
	waitpid(pid, &st, 0);
	cr_assert_eq(read_file(errpath, err_out, NULL), 0);
	unlink(errpath);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(server, bad_scenario_is_refused_naming_the_json_path)
{
	char path[] = "/tmp/pvesim-bad-XXXXXX.json";
	int fd = mkstemps(path, 5);
	cr_assert_geq(fd, 0);
	const char *text =
		"{\"pve_version\":\"8.4\",\"nodes\":[{\"name\":\"pve1\",\"cpus\":8,"
		"\"memory_mib\":32768,\"online\":true}],\"storages\":[],\"tokens\":[],"
		"\"users\":[],\"guests\":[{\"vmid\":100,\"node\":\"pve9\",\"type\":\"qemu\","
		"\"config\":{}}],\"ha\":[],\"faults\":[]}";
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	char *err = NULL;
	cr_expect_eq(run_sim(path, NULL, NULL, &err), 2);
	cr_expect(strstr(err, "$.guests[0].node"), "message names the JSON path: %s", err);
	free(err);
	unlink(path);
}

Test(server, bad_guest_root_is_refused_naming_the_option)
{
	static const struct {
		const char *arg, *want;
	} cases[] = {
		{"190", "pvesim: --guest-root 190: expected VMID=DIR"},
		{"x=/tmp", "pvesim: --guest-root x=/tmp: expected VMID=DIR"},
		{"190=", "pvesim: --guest-root 190=: expected VMID=DIR"},
		{"999=/tmp", "pvesim: --guest-root 999=/tmp: the scenario has no guest 999"},
		{"100=/nonexistent/root", "pvesim: --guest-root 100=/nonexistent/root: No such file or "
					  "directory"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *args[] = {"--guest-root", cases[i].arg, NULL};
		char *err = NULL;
		cr_expect_eq(run_sim(SCENARIO, NULL, args, &err), 2, "%s", cases[i].arg);
		cr_expect(strstr(err, cases[i].want), "%s: stderr: %s", cases[i].arg, err);
		free(err);
	}
}

Test(server, without_a_schema_it_says_so_once_and_runs_on_route_checks)
{
	setenv("PVE_API_DIR", "/nonexistent-pve-api", 1);
	start(NULL);
	unsetenv("PVE_API_DIR");
	/* Parameters are not schema-checked: the model answers instead. */
	cr_expect_neq(api("GET", "/version", NULL, NULL), 400);
	cr_expect_eq(api("GET", "/nodes/pve1/bogus", NULL, NULL), 501);
	char *err = NULL;
	cr_assert_eq(read_file(sp.stderr_path, &err, NULL), 0);
	const char *first = strstr(err, "no PVE API schema file found");
	cr_expect_not_null(first, "stderr: %s", err);
	cr_expect_null(first ? strstr(first + 1, "no PVE API schema file found") : NULL);
	free(err);
	stop();
}
