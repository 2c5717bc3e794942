/* simproc.c - run and talk to the PVE simulator from tests (simproc.h). */
#include "simproc.h"

#include "util.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void simproc_clear(struct simproc *sp)
{
	if (sp->curl)
		curl_easy_cleanup(sp->curl);
	free(sp->dir);
	free(sp->url);
	free(sp->fingerprint);
	free(sp->token_id);
	free(sp->token_secret);
	free(sp->log_path);
	free(sp->cert_path);
	free(sp->stderr_path);
	memset(sp, 0, sizeof *sp);
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *p = strprintf("%s/%s", dir, e->d_name);
		if (p)
			unlink(p);
		free(p);
	}
	closedir(d);
	rmdir(dir);
}

static void print_file(const char *path)
{
	char *text = NULL;
	if (path && read_file(path, &text, NULL) == 0 && *text)
		fprintf(stderr, "--- simulator stderr ---\n%s------------------------\n", text);
	free(text);
}

/* Read one line from fd within timeout_ms. */
static char *read_line(int fd, int timeout_ms)
{
	struct sbuf b = {0};
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = timeout_ms - ((t.tv_sec - t0.tv_sec) * 1000 +
					  (t.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		char c;
		ssize_t n = read(fd, &c, 1);
		if (n <= 0)
			break;
		if (c == '\n')
			return sbuf_steal(&b);
		if (sbuf_addc(&b, c) < 0)
			break;
	}
	sbuf_free(&b);
	return NULL;
}

static char *dupfield(json_object *o, const char *k)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return strdup(json_object_get_string(v));
}

int simproc_start(struct simproc *sp, const char *scenario, const char *const *extra_args)
{
	memset(sp, 0, sizeof *sp);
	char tmpl[] = "/tmp/pvesim-test-XXXXXX";
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return -1;
	}
	sp->dir = strdup(tmpl);
	sp->log_path = strprintf("%s/requests.jsonl", tmpl);
	sp->cert_path = strprintf("%s/cert.pem", tmpl);
	sp->stderr_path = strprintf("%s/stderr", tmpl);
	if (!sp->dir || !sp->log_path || !sp->cert_path || !sp->stderr_path)
		goto fail;
	const char *bin = getenv("PVESIM_BIN");
	if (!bin)
		bin = "build/san/pvesim";
	const char *argv[32];
	size_t n = 0;
	argv[n++] = bin;
	argv[n++] = "--scenario";
	argv[n++] = scenario;
	argv[n++] = "--log";
	argv[n++] = sp->log_path;
	argv[n++] = "--cert-out";
	argv[n++] = sp->cert_path;
	for (size_t i = 0; extra_args && extra_args[i] && n < 31; i++)
		argv[n++] = extra_args[i];
	argv[n] = NULL;

	int out[2];
	if (pipe2(out, O_CLOEXEC) < 0)
		goto fail;
	sp->pid = fork();
	if (sp->pid < 0) {
		close(out[0]);
		close(out[1]);
		goto fail;
	}
	if (sp->pid == 0) {
		int errfd = open(sp->stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (errfd < 0 || dup2(out[1], 1) < 0 || dup2(errfd, 2) < 0)
			_exit(127);
		execv(bin, (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	close(out[1]);
	char *line = read_line(out[0], 20000);
	close(out[0]);
	json_object *ready = line ? json_tokener_parse(line) : NULL;
	free(line);
	if (!ready) {
		fprintf(stderr, "simproc: %s printed no ready line\n", bin);
		simproc_stop(sp);
		return -1;
	}
	sp->url = dupfield(ready, "url");
	sp->fingerprint = dupfield(ready, "fingerprint");
	sp->token_id = dupfield(ready, "token_id");
	sp->token_secret = dupfield(ready, "token_secret");
	json_object_put(ready);
	if (!sp->url || !sp->fingerprint) {
		fprintf(stderr, "simproc: ready line lacks url or fingerprint\n");
		simproc_stop(sp);
		return -1;
	}
	return 0;
fail:
	perror("simproc_start");
	if (sp->dir)
		remove_dir(sp->dir);
	simproc_clear(sp);
	return -1;
}

int simproc_stop(struct simproc *sp)
{
	int rc = 0;
	if (sp->pid > 0) {
		int st = 0;
		kill(sp->pid, SIGTERM);
		while (waitpid(sp->pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			rc = -1;
	}
	char *err = NULL;
	if (sp->stderr_path && read_file(sp->stderr_path, &err, NULL) == 0 &&
	    (strstr(err, "Sanitizer") || strstr(err, "runtime error:")))
		rc = -1;
	free(err);
	if (rc < 0) {
		fprintf(stderr, "simproc: the simulator did not exit cleanly\n");
		print_file(sp->stderr_path);
	}
	if (sp->dir)
		remove_dir(sp->dir);
	simproc_clear(sp);
	return rc;
}

static size_t collect(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	return sbuf_addn(userdata, ptr, size * nmemb) < 0 ? 0 : size * nmemb;
}

int sim_http(struct simproc *sp, const char *method, const char *path,
	     const char *content_type, const char *body, const char *const *headers,
	     long *status, json_object **body_out)
{
	if (!sp->curl && !(sp->curl = curl_easy_init()))
		return -1;
	CURL *c = sp->curl;
	struct sbuf resp = {0};
	struct curl_slist *hl = NULL;
	char *url = strprintf("%s%s", sp->url, path);
	char *ct = content_type ? strprintf("Content-Type: %s", content_type) : NULL;
	if (!url)
		return -1;
	for (size_t i = 0; headers && headers[i]; i++)
		hl = curl_slist_append(hl, headers[i]);
	if (ct)
		hl = curl_slist_append(hl, ct);
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_CAINFO, sp->cert_path);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	CURLcode rc = curl_easy_perform(c);
	long st = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_slist_free_all(hl);
	free(url);
	free(ct);
	*status = st;
	if (body_out)
		*body_out = resp.len ? json_tokener_parse(resp.s) : NULL;
	sbuf_free(&resp);
	return rc == CURLE_OK ? 0 : -1;
}

int sim_api(struct simproc *sp, const char *method, const char *path, const char *form_body,
	    long *status, json_object **body_out)
{
	char *auth = strprintf("Authorization: PVEAPIToken=%s=%s", sp->token_id, sp->token_secret);
	char *full = strprintf("/api2/json%s", path);
	const char *hdrs[] = {auth, NULL};
	int rc = -1;
	if (auth && full)
		rc = sim_http(sp, method, full,
			      form_body ? "application/x-www-form-urlencoded" : NULL, form_body,
			      hdrs, status, body_out);
	free(auth);
	free(full);
	return rc;
}

int simproc_fault(struct simproc *sp, const char *rule_json)
{
	long st = 0;
	if (sim_http(sp, "POST", "/_sim/fault", "application/json", rule_json, NULL, &st, NULL) < 0)
		return -1;
	return st == 200 ? 0 : -1;
}

int simproc_advance(struct simproc *sp, double seconds)
{
	char *body = strprintf("{\"seconds\":%.3f}", seconds);
	long st = 0;
	int rc = body ? sim_http(sp, "POST", "/_sim/advance", "application/json", body, NULL,
				 &st, NULL) : -1;
	free(body);
	return rc == 0 && st == 200 ? 0 : -1;
}

json_object *simproc_state(struct simproc *sp)
{
	long st = 0;
	json_object *b = NULL, *data = NULL;
	if (sim_http(sp, "GET", "/_sim/state", NULL, NULL, NULL, &st, &b) < 0 || st != 200) {
		json_object_put(b);
		return NULL;
	}
	if (json_object_object_get_ex(b, "data", &data))
		json_object_get(data);
	json_object_put(b);
	return data;
}

json_object *simproc_requests(struct simproc *sp)
{
	char *text = NULL;
	if (read_file(sp->log_path, &text, NULL) < 0)
		return NULL;
	json_object *a = json_object_new_array();
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line && a;
	     line = strtok_r(NULL, "\n", &save)) {
		json_object *o = json_tokener_parse(line);
		if (o)
			json_object_array_add(a, o);
	}
	free(text);
	return a;
}

static const char *str_of(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_string(v) : "";
}

int simproc_count_requests(json_object *log, const char *method, const char *path, int status)
{
	int n = 0;
	size_t ls = path[0] == '*' ? strlen(path + 1) : 0;
	for (size_t i = 0; i < json_object_array_length(log); i++) {
		json_object *r = json_object_array_get_idx(log, i), *v;
		const char *p = str_of(r, "path");
		size_t lp = strlen(p);
		if (strcmp(str_of(r, "method"), method) != 0)
			continue;
		if (path[0] == '*' ? lp < ls || strcmp(p + lp - ls, path + 1) != 0
				   : strcmp(p, path) != 0)
			continue;
		if (status >= 0 && (!json_object_object_get_ex(r, "status", &v) ||
				    json_object_get_int(v) != status))
			continue;
		n++;
	}
	return n;
}

char *simproc_config_key(struct simproc *sp, int vmid, const char *key)
{
	json_object *st = simproc_state(sp), *cl = NULL, *gs = NULL;
	char *out = NULL;
	if (st && json_object_object_get_ex(st, "cluster", &cl) &&
	    json_object_object_get_ex(cl, "guests", &gs)) {
		for (size_t i = 0; !out && i < json_object_array_length(gs); i++) {
			json_object *g = json_object_array_get_idx(gs, i), *v = NULL, *c = NULL;
			if (json_object_object_get_ex(g, "vmid", &v) && json_object_get_int(v) == vmid &&
			    json_object_object_get_ex(g, "config", &c) &&
			    json_object_object_get_ex(c, key, &v))
				out = strdup(json_object_get_string(v));
		}
	}
	json_object_put(st);
	return out;
}

int simproc_count_named(json_object *state, const char *name)
{
	json_object *cl = NULL, *gs = NULL;
	int n = 0;
	if (!json_object_object_get_ex(state, "cluster", &cl) ||
	    !json_object_object_get_ex(cl, "guests", &gs))
		return 0;
	for (size_t i = 0; i < json_object_array_length(gs); i++) {
		json_object *g = json_object_array_get_idx(gs, i), *c = NULL;
		const char *nm = str_of(g, "name");
		if (!*nm && json_object_object_get_ex(g, "config", &c))
			nm = str_of(c, "name");
		if (strcmp(nm, name) == 0)
			n++;
	}
	return n;
}
