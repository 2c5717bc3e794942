/* server.c - the simulator's HTTPS front end (see server.h).
 *
 * libmicrohttpd runs one thread per connection; all shared state (cluster,
 * tickets, faults, request log, clock offset) sits behind one mutex, and
 * deliberate waits (PVE's 3 s login-failure delay, injected delays) happen
 * outside it. Request flow: parse parameters (query, form or JSON body) ->
 * fault rules -> authentication (API token, or ticket cookie plus CSRF
 * header on non-GET) -> schema check -> cluster model -> PVE-shaped JSON
 * answer -> request log line. */
#include "server.h"

#include "auth.h"
#include "faults.h"
#include "schema.h"
#include "simapi.h"
#include "simtls.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API_PREFIX "/api2/json"
#define MAX_BODY (4u << 20)
#define LOGIN_FAIL_DELAY 3.0 /* seconds of simulated time, as PVE */

struct server {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock;
	struct cluster *cluster;
	struct schema *schema;
	struct faults *faults;
	struct auth *auth;
	FILE *log;
	double scale;
	unsigned latency_ms;
	struct timespec t0;
	double sim0, offset;
	long requests;
	struct simtls tls;
	char *url;
	struct MHD_Daemon *shell; /* --node-shell-listen, or NULL */
	char *shell_url;
};

struct conn {
	struct sbuf body;
	int too_big;
};

/* ---- clock ---------------------------------------------------------------- */

static double sim_now(const struct server *sv)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	double real = (double)(t.tv_sec - sv->t0.tv_sec) + (double)(t.tv_nsec - sv->t0.tv_nsec) / 1e9;
	return sv->sim0 + real * sv->scale + sv->offset;
}

static double net_clock(void *ctx)
{
	return sim_now(ctx);
}

static void real_sleep(double seconds)
{
	if (seconds <= 0)
		return;
	struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- parameters ------------------------------------------------------------ */

/* Decode application/x-www-form-urlencoded text into obj (strings). */
static int form_decode(const char *text, size_t len, json_object *obj)
{
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && text[j] != '&')
			j++;
		if (j > i) {
			char *pair = strndup(text + i, j - i);
			if (!pair)
				return -1;
			for (char *p = pair; *p; p++)
				if (*p == '+')
					*p = ' ';
			char *eq = strchr(pair, '=');
			char *val = eq ? eq + 1 : pair + strlen(pair);
			if (eq)
				*eq = '\0';
			MHD_http_unescape(pair);
			MHD_http_unescape(val);
			json_object_object_add(obj, pair, json_object_new_string(val));
			free(pair);
		}
		i = j + 1;
	}
	return 0;
}

static enum MHD_Result add_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	(void)kind;
	json_object_object_add(cls, key, json_object_new_string(value ? value : ""));
	return MHD_YES;
}

/* Parameters of a request: the query string, plus a form or JSON body.
 * Returns NULL with *msg set for a body it cannot read. */
static json_object *request_params(struct MHD_Connection *con, const struct conn *cc,
				   const char **msg)
{
	json_object *p = json_object_new_object();
	if (!p)
		return NULL;
	MHD_get_connection_values(con, MHD_GET_ARGUMENT_KIND, add_query_arg, p);
	if (cc->body.len == 0)
		return p;
	const char *ct = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Content-Type");
	if (ct && strncasecmp(ct, "application/json", 16) == 0) {
		json_object *body = json_tokener_parse(cc->body.s);
		if (!body || !json_object_is_type(body, json_type_object)) {
			json_object_put(body);
			json_object_put(p);
			*msg = "request body is not a JSON object";
			return NULL;
		}
		json_object_object_foreach(body, k, v)
			json_object_object_add(p, k, json_object_get(v));
		json_object_put(body);
		return p;
	}
	if (form_decode(cc->body.s, cc->body.len, p) < 0) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

/* A copy of params with secrets masked, for the request log. */
static json_object *masked_params(json_object *params)
{
	static const char *secret[] = {"password", "new-password", "cipassword", NULL};
	json_object *m = json_object_new_object();
	json_object_object_foreach(params, k, v) {
		int is_secret = 0;
		for (size_t i = 0; secret[i]; i++)
			is_secret |= strcmp(k, secret[i]) == 0;
		json_object_object_add(m, k, is_secret ? json_object_new_string("***")
						       : json_object_get(v));
	}
	return m;
}

/* ---- answers --------------------------------------------------------------- */

static enum MHD_Result send_json(struct MHD_Connection *con, int status, json_object *body,
				 const char *set_cookie)
{
	/* PVE's JSON (Perl's JSON module) does not escape "/" */
	const char *text =
		json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
							     JSON_C_TO_STRING_NOSLASHESCAPE);
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text,
								 MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "application/json;charset=UTF-8");
	MHD_add_response_header(r, "Cache-Control", "max-age=0");
	MHD_add_response_header(r, "Server", "pve-api-daemon/3.0");
	if (set_cookie)
		MHD_add_response_header(r, "Set-Cookie", set_cookie);
	enum MHD_Result ret = MHD_queue_response(con, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

/* PVE's JSON formatter: {"data": ...} on success; on error data is null,
 * with "message" and, for parameter errors, "errors". */
static json_object *answer_body(int status, json_object *data, const char *message,
				json_object *errors)
{
	json_object *b = json_object_new_object();
	json_object_object_add(b, "data", data);
	if (status >= 300) {
		if (message) {
			char *m = strprintf("%s\n", message);
			json_object_object_add(b, "message", json_object_new_string(m ? m : message));
			free(m);
		}
		if (errors)
			json_object_object_add(b, "errors", errors);
	} else {
		json_object_put(errors);
	}
	return b;
}

/* One request-log line. status: what the request did (the model's answer,
 * or the refusal); sent: the HTTP status actually answered (0 when the
 * connection was closed without an answer), which differs from status when
 * a fault replaced or lost the answer after the request ran. */
static void log_request(struct server *sv, double now, const char *method, const char *path,
			json_object *params, int status, int sent, const char *upid,
			const char *auth, const char *userid)
{
	if (!sv->log)
		return;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "time", json_object_new_double(now));
	json_object_object_add(o, "method", json_object_new_string(method));
	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "params", params ? masked_params(params) : json_object_new_object());
	json_object_object_add(o, "status", json_object_new_int(status));
	json_object_object_add(o, "sent", json_object_new_int(sent));
	json_object_object_add(o, "upid", upid ? json_object_new_string(upid) : NULL);
	json_object_object_add(o, "auth", json_object_new_string(auth));
	json_object_object_add(o, "userid", userid ? json_object_new_string(userid) : NULL);
	fprintf(sv->log, "%s\n",
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						      JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(sv->log);
	json_object_put(o);
}

/* ---- /_sim control routes -------------------------------------------------- */

static enum MHD_Result sim_control(struct server *sv, struct MHD_Connection *con,
				   const char *method, const char *path, const struct conn *cc)
{
	json_object *data = NULL, *body = NULL;
	int status = 200;
	char *msg = NULL;

	if (strcmp(method, "POST") == 0 && cc->body.len) {
		body = json_tokener_parse(cc->body.s);
		if (!body) {
			status = 400;
			msg = strdup("body is not JSON");
			goto out;
		}
	}
	pthread_mutex_lock(&sv->lock);
	double now = sim_now(sv);
	if (strcmp(path, "/_sim/state") == 0 && strcmp(method, "GET") == 0) {
		data = json_object_new_object();
		json_object_object_add(data, "now", json_object_new_double(now));
		json_object_object_add(data, "requests", json_object_new_int64(sv->requests));
		json_object_object_add(data, "cluster", cluster_state(sv->cluster, now));
		json_object_object_add(data, "faults", faults_state(sv->faults));
	} else if (strcmp(path, "/_sim/time") == 0 && strcmp(method, "GET") == 0) {
		data = json_object_new_double(now);
	} else if (strcmp(path, "/_sim/fault") == 0 && strcmp(method, "POST") == 0) {
		if (faults_add(sv->faults, body, "fault", &msg) < 0)
			status = 400;
	} else if (strcmp(path, "/_sim/fault") == 0 && strcmp(method, "DELETE") == 0) {
		faults_clear(sv->faults);
	} else if (strcmp(path, "/_sim/advance") == 0 && strcmp(method, "POST") == 0) {
		json_object *s = NULL;
		if (!body || !json_object_object_get_ex(body, "seconds", &s) ||
		    json_object_get_double(s) < 0) {
			status = 400;
			msg = strdup("expected {\"seconds\": N} with N >= 0");
		} else {
			sv->offset += json_object_get_double(s);
			cluster_advance(sv->cluster, sim_now(sv));
			data = json_object_new_double(sim_now(sv));
		}
	} else if (strcmp(path, "/_sim/node-shell") == 0 && strcmp(method, "GET") == 0) {
		/* where the nodes' SSH stand-ins forward their commands */
		data = sv->shell_url ? json_object_new_string(sv->shell_url) : NULL;
	} else if (!cluster_sim_control(sv->cluster, method, path, body, now, &data, &status,
					&msg)) {
		status = 501;
		msg = strprintf("Method '%s %s' not implemented", method, path);
	}
	pthread_mutex_unlock(&sv->lock);
out:
	json_object_put(body);
	json_object *ans = answer_body(status, data, msg, NULL);
	enum MHD_Result r = send_json(con, status, ans, NULL);
	json_object_put(ans);
	free(msg);
	return r;
}

/* ---- API requests ------------------------------------------------------------ */

struct identity {
	const char *kind;   /* "token", "ticket" or "none" for the log */
	char *userid;
};

static void identity_clear(struct identity *id)
{
	free(id->userid);
}

/* Authenticate (under the lock). Returns 0, or an HTTP status with *msg. */
static int authenticate(struct server *sv, struct MHD_Connection *con, const char *method,
			double now, struct identity *id, const char **msg)
{
	const char *authz = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization");
	id->kind = "none";
	if (authz) {
		char *tid, *secret;
		if (!auth_parse_token_header(authz, &tid, &secret)) {
			*msg = "invalid authorization header";
			return 401;
		}
		id->kind = "token";
		bool ok = cluster_check_token(sv->cluster, tid, secret);
		free(secret);
		if (!ok) {
			free(tid);
			*msg = "invalid token value!";
			return 401;
		}
		id->userid = tid;
		return 0;
	}
	const char *ticket = MHD_lookup_connection_value(con, MHD_COOKIE_KIND, "PVEAuthCookie");
	if (!ticket) {
		*msg = "No ticket";
		return 401;
	}
	id->kind = "ticket";
	const char *userid, *csrf;
	switch (auth_check_ticket(sv->auth, ticket, now, &userid, &csrf)) {
	case AUTH_OK:
		break;
	case AUTH_EXPIRED:
		*msg = "permission denied - invalid PVE ticket (expired)";
		return 401;
	default:
		*msg = "permission denied - invalid PVE ticket";
		return 401;
	}
	if (strcmp(method, "GET") != 0) {
		const char *h = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
							    "CSRFPreventionToken");
		if (!h || strcmp(h, csrf) != 0) {
			*msg = "Permission denied - invalid csrf token";
			return 401;
		}
	}
	id->userid = strdup(userid);
	return 0;
}

/* POST /access/ticket: password login or ticket renewal (password = a
 * valid ticket); for a user with TFA ("tfa": true in the scenario) the
 * password login answers NeedTFA with a half-authenticated ticket, which
 * only the TFA step (tfa-challenge = that ticket, password = "totp:CODE")
 * turns into a ticket. Runs under the lock; *fail_delay is set on
 * failure. */
static int login(struct server *sv, json_object *params, double now, json_object **data,
		 const char **msg, char **cookie, double *fail_delay)
{
	json_object *u = NULL, *pw = NULL, *realm = NULL;
	json_object_object_get_ex(params, "username", &u);
	json_object_object_get_ex(params, "password", &pw);
	json_object_object_get_ex(params, "realm", &realm);
	const char *user = u ? json_object_get_string(u) : "";
	const char *pass = pw ? json_object_get_string(pw) : "";
	char *userid = (realm && !strchr(user, '@'))
		? strprintf("%s@%s", user, json_object_get_string(realm)) : strdup(user);
	json_object *chal = NULL;
	json_object_object_get_ex(params, "tfa-challenge", &chal);
	bool ok = false, half = false;
	if (!userid)
		return 500;
	if (chal) {
		/* the TFA step (authenticate_2nd_new): the half ticket and a
		 * response; the simulator has no TOTP secret, so any six-digit
		 * "totp:" code passes */
		ok = auth_check_tfa_ticket(sv->auth, json_object_get_string(chal), userid, now) &&
		     strncmp(pass, "totp:", 5) == 0 && strlen(pass) == 11 &&
		     strspn(pass + 5, "0123456789") == 6;
	} else if (strncmp(pass, "PVE:", 4) == 0) {
		const char *tu, *tc;
		/* a half ticket renewed: "incomplete ticket" */
		if (auth_check_ticket(sv->auth, pass, now, &tu, &tc) == AUTH_OK &&
		    strcmp(tu, userid) == 0)
			ok = true;
	} else {
		ok = cluster_check_password(sv->cluster, userid, pass);
		half = ok && cluster_user_tfa(sv->cluster, userid);
	}
	if (!ok) {
		free(userid);
		*msg = "authentication failure";
		*fail_delay = LOGIN_FAIL_DELAY / sv->scale;
		return 401;
	}
	char *ticket = NULL, *csrf = NULL;
	if (auth_issue(sv->auth, userid, half, now, &ticket, &csrf) < 0) {
		free(userid);
		return 500;
	}
	*data = json_object_new_object();
	json_object_object_add(*data, "username", json_object_new_string(userid));
	json_object_object_add(*data, "ticket", json_object_new_string(ticket));
	json_object_object_add(*data, "CSRFPreventionToken", json_object_new_string(csrf));
	if (half) /* create_ticket_do: NeedTFA and no cap */
		json_object_object_add(*data, "NeedTFA", json_object_new_int(1));
	json_object_object_add(*data, "clustername", json_object_new_string("pvesim"));
	*cookie = strprintf("PVEAuthCookie=%s; path=/; secure", ticket);
	free(ticket);
	free(csrf);
	free(userid);
	return 0;
}

static enum MHD_Result api_request(struct server *sv, struct MHD_Connection *con,
				   const char *method, const char *path, struct conn *cc)
{
	const char *msg = NULL;
	json_object *params = request_params(con, cc, &msg);
	if (!params) {
		json_object *ans = answer_body(400, NULL, msg ? msg : "out of memory", NULL);
		enum MHD_Result r = send_json(con, 400, ans, NULL);
		json_object_put(ans);
		return r;
	}

	struct fault_hit hit;
	pthread_mutex_lock(&sv->lock);
	sv->requests++;
	bool faulted = faults_match(sv->faults, method, path, &hit);
	pthread_mutex_unlock(&sv->lock);
	if (faulted && hit.action == FAULT_DELAY)
		real_sleep((double)hit.delay_ms / 1000.0);

	struct identity id = {0};
	struct sim_resp resp = {0};
	char *cookie = NULL;
	double fail_delay = 0;
	bool lose_answer = false;

	pthread_mutex_lock(&sv->lock);
	double now = sim_now(sv);
	int status = 0, model_status = 0;
	if (faulted && !hit.after && (hit.action == FAULT_STATUS || hit.action == FAULT_TIMEOUT ||
				      hit.action == FAULT_NO_WORKER_UPID || hit.action == FAULT_RESET)) {
		status = hit.action == FAULT_STATUS ? hit.status
		       : hit.action == FAULT_TIMEOUT ? 596 : 500;
		lose_answer = hit.action == FAULT_RESET;
		resp.message = hit.message ? strdup(hit.message) : NULL;
		id.kind = "none";
	} else if (strcmp(path, "/access/ticket") == 0 && strcmp(method, "POST") == 0) {
		id.kind = "none";
		status = login(sv, params, now, &resp.data, &msg, &cookie, &fail_delay);
	} else {
		status = authenticate(sv, con, method, now, &id, &msg);
	}
	if (!status && strcmp(path, "/access/ticket") != 0) {
		json_object *pp = NULL;
		const struct schema_method *m = sv->schema
			? schema_find(sv->schema, method, path, &pp) : NULL;
		int bad = m ? schema_check_request(m, pp, params, &resp.errors) : 0;
		if (pp) {
			json_object_object_foreach(pp, k, v)
				if (!json_object_object_get_ex(params, k, NULL))
					json_object_object_add(params, k, json_object_get(v));
			json_object_put(pp);
		}
		if (bad < 0) {
			status = 500;
			msg = "out of memory";
		} else if (bad > 0) {
			status = 400;
			msg = "Parameter verification failed.";
		} else if (!m && sv->schema && cluster_pve_major(sv->cluster) >= 4) {
			status = 501;
			resp.message = strprintf("Method '%s %s' not implemented", method, path);
		} else {
			struct sim_req req = {
				.method = method, .path = path, .params = params,
				.userid = id.userid,
				.task_fail = faulted && hit.action == FAULT_TASK_FAIL ? hit.message : NULL,
				.now = now,
			};
			cluster_handle(sv->cluster, &req, &resp);
			status = model_status = resp.status ? resp.status : 200;
			if (faulted && hit.after) {
				lose_answer = hit.action == FAULT_RESET;
				status = hit.action == FAULT_TIMEOUT ? 596 : hit.status;
				free(resp.message);
				resp.message = hit.message ? strdup(hit.message) : NULL;
				json_object_put(resp.data);
				resp.data = NULL;
			}
		}
	}
	if (!status)
		status = 200;
	log_request(sv, now, method, path, params, model_status ? model_status : status,
		    lose_answer ? 0 : status, resp.upid, id.kind, id.userid);
	pthread_mutex_unlock(&sv->lock);

	if (fail_delay > 0)
		real_sleep(fail_delay);
	enum MHD_Result r = MHD_NO;
	if (!lose_answer) {
		json_object *ans = answer_body(status, resp.data, resp.message ? resp.message : msg,
					       resp.errors);
		/* Task logs and lists carry the full count beside the page, as PVE. */
		if (resp.has_total && status < 300)
			json_object_object_add(ans, "total", json_object_new_int64(resp.total));
		resp.data = NULL;
		resp.errors = NULL;
		r = send_json(con, status, ans, cookie);
		json_object_put(ans);
	}
	sim_resp_clear(&resp);
	if (faulted)
		fault_hit_clear(&hit);
	identity_clear(&id);
	free(cookie);
	json_object_put(params);
	return r;
}

/* A request's first call makes its state, the next ones gather its body:
 * true with *r the answer to give MHD until the request is complete. */
static bool gather(void **con_cls, const char *upload, size_t *upload_size,
		   enum MHD_Result *r)
{
	struct conn *cc = *con_cls;
	*r = MHD_YES;
	if (!cc) {
		if (!(cc = calloc(1, sizeof *cc)))
			*r = MHD_NO;
		*con_cls = cc;
		return true;
	}
	if (!*upload_size)
		return false;
	if (cc->body.len + *upload_size > MAX_BODY)
		cc->too_big = 1;
	else if (sbuf_addn(&cc->body, upload, *upload_size) < 0)
		*r = MHD_NO;
	*upload_size = 0;
	return true;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *con, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct server *sv = cls;
	enum MHD_Result more;
	(void)version;
	if (gather(con_cls, upload, upload_size, &more))
		return more;
	struct conn *cc = *con_cls;
	if (cc->too_big) {
		json_object *ans = answer_body(413, NULL, "request body too large", NULL);
		enum MHD_Result r = send_json(con, 413, ans, NULL);
		json_object_put(ans);
		return r;
	}
	if (strncmp(url, "/_sim/", 6) == 0)
		return sim_control(sv, con, method, url, cc);
	if (strncmp(url, API_PREFIX "/", sizeof API_PREFIX) != 0) {
		json_object *ans = answer_body(404, NULL, "no such API root (use /api2/json)", NULL);
		enum MHD_Result r = send_json(con, 404, ans, NULL);
		json_object_put(ans);
		return r;
	}
	if (sv->latency_ms) {
		/* this connection's thread only: concurrent requests overlap as
		 * on a real cluster */
		struct timespec d = {(time_t)(sv->latency_ms / 1000),
				     (long)(sv->latency_ms % 1000) * 1000000L};
		while (nanosleep(&d, &d) < 0 && errno == EINTR)
			continue;
	}
	const char *path = url + sizeof API_PREFIX - 1;
	size_t plen = strlen(path);
	char *p = strndup(path, plen > 1 && path[plen - 1] == '/' ? plen - 1 : plen);
	if (!p)
		return MHD_NO;
	enum MHD_Result r = api_request(sv, con, method, p, cc);
	free(p);
	return r;
}

static void completed(void *cls, struct MHD_Connection *con, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)con;
	(void)toe;
	struct conn *cc = *con_cls;
	if (cc) {
		sbuf_free(&cc->body);
		free(cc);
		*con_cls = NULL;
	}
}

/* ---- the nodes' shell listener (plain HTTP, loopback) ------------------------- */

static int parse_listen(const char *listen, struct sockaddr_in *sa, char **ip, char **err);

/* POST /run from a node's SSH stand-in (tests/pvesim/nodeshell/forward):
 * the body is the node's name and the command's argv, one per line; the
 * answer (200, text) is the exit code on the first line, then the
 * command's output. */
static enum MHD_Result shell_handle(void *cls, struct MHD_Connection *con, const char *url,
				    const char *method, const char *version, const char *upload,
				    size_t *upload_size, void **con_cls)
{
	struct server *sv = cls;
	enum MHD_Result more;
	(void)version;
	if (gather(con_cls, upload, upload_size, &more))
		return more;
	struct conn *cc = *con_cls;
	struct sbuf ans = {0};
	json_object *argv = json_object_new_array();
	char *node = NULL, *out = NULL;
	int code = -1;
	if (strcmp(method, "POST") == 0 && strcmp(url, "/run") == 0 && !cc->too_big && argv) {
		const char *p = cc->body.s ? cc->body.s : "";
		for (size_t i = 0; *p; i++) {
			size_t l = strcspn(p, "\n");
			if (i == 0)
				node = strndup(p, l);
			else
				json_object_array_add(argv, json_object_new_string_len(p, (int)l));
			p += l;
			p += *p == '\n';
		}
		pthread_mutex_lock(&sv->lock);
		code = cluster_node_shell(sv->cluster, node, argv, sim_now(sv), &out);
		pthread_mutex_unlock(&sv->lock);
	}
	if (code < 0)
		sbuf_addf(&ans, "255\npvesim: expected POST /run with a known node and a command\n");
	else
		sbuf_addf(&ans, "%d\n%s", code, out ? out : "");
	free(node);
	free(out);
	json_object_put(argv);
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		ans.len, ans.s ? ans.s : (char *)"", MHD_RESPMEM_MUST_COPY);
	sbuf_free(&ans);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "text/plain");
	enum MHD_Result r = MHD_queue_response(con, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return r;
}

static int shell_start(struct server *sv, const char *listen, char **err)
{
	struct sockaddr_in sa;
	char *ip = NULL;
	if (parse_listen(listen, &sa, &ip, err) < 0) {
		free(ip);
		return -1;
	}
	sv->shell = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION |
					     MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
				     0, NULL, NULL, shell_handle, sv, MHD_OPTION_SOCK_ADDR,
				     (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, completed,
				     sv, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
	const union MHD_DaemonInfo *di =
		sv->shell ? MHD_get_daemon_info(sv->shell, MHD_DAEMON_INFO_BIND_PORT) : NULL;
	if (!di || !(sv->shell_url = strprintf("http://%s:%u", ip, (unsigned)di->port))) {
		*err = strprintf("--node-shell-listen %s: cannot listen", listen);
		free(ip);
		return -1;
	}
	free(ip);
	return 0;
}

/* ---- start / stop ------------------------------------------------------------ */

static int parse_listen(const char *listen, struct sockaddr_in *sa, char **ip, char **err)
{
	const char *colon = strrchr(listen, ':');
	if (!colon) {
		*err = strprintf("--listen %s: expected IP:PORT", listen);
		return -1;
	}
	*ip = strndup(listen, (size_t)(colon - listen));
	char *end;
	long port = strtol(colon + 1, &end, 10);
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	if (!*ip || *end || port < 0 || port > 65535 ||
	    inet_pton(AF_INET, *ip, &sa->sin_addr) != 1) {
		*err = strprintf("--listen %s: expected IPv4:PORT", listen);
		return -1;
	}
	if ((ntohl(sa->sin_addr.s_addr) >> 24) != 127) {
		*err = strprintf("--listen %s: the simulator only listens on loopback (127.0.0.0/8)",
				 listen);
		return -1;
	}
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

static int write_cert(const char *path, const char *pem, char **err)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(pem, f) < 0 || fclose(f) != 0) {
		*err = strprintf("%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

struct server *server_start(struct cluster *c, struct schema *s, const struct server_opts *o,
			    char **err)
{
	struct server *sv = calloc(1, sizeof *sv);
	char *ip = NULL;
	struct sockaddr_in sa;
	if (!sv) {
		*err = strdup("out of memory");
		return NULL;
	}
	pthread_mutex_init(&sv->lock, NULL);
	sv->cluster = c;
	sv->schema = s;
	sv->scale = o->time_scale > 0 ? o->time_scale : 1.0;
	sv->latency_ms = o->latency_ms;
	clock_gettime(CLOCK_MONOTONIC, &sv->t0);
	sv->sim0 = (double)time(NULL);
	if (!(sv->faults = faults_new()) || !(sv->auth = auth_new())) {
		*err = strdup("out of memory");
		goto fail;
	}
	json_object *sf = cluster_scenario_faults(c);
	for (size_t i = 0; sf && i < json_object_array_length(sf); i++) {
		char *where = strprintf("scenario: $.faults[%zu]", i);
		int rc = where ? faults_add(sv->faults, json_object_array_get_idx(sf, i), where, err)
			       : -1;
		free(where);
		if (rc < 0)
			goto fail;
	}
	if (cluster_net_start(c, net_clock, sv, err) < 0)
		goto fail;
	if (parse_listen(o->listen ? o->listen : "127.0.0.1:0", &sa, &ip, err) < 0)
		goto fail;
	if (simtls_make(&sv->tls, ip, err) < 0)
		goto fail;
	if (o->cert_out && write_cert(o->cert_out, sv->tls.cert_pem, err) < 0)
		goto fail;
	if (o->log_path && !(sv->log = fopen(o->log_path, "a"))) {
		*err = strprintf("%s: %s", o->log_path, strerror(errno));
		goto fail;
	}
	sv->mhd = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS |
			MHD_USE_ERROR_LOG,
		0, NULL, NULL, handle, sv,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
		MHD_OPTION_HTTPS_MEM_KEY, sv->tls.key_pem,
		MHD_OPTION_HTTPS_MEM_CERT, sv->tls.cert_pem,
		MHD_OPTION_NOTIFY_COMPLETED, completed, sv,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
		MHD_OPTION_END);
	if (!sv->mhd) {
		*err = strprintf("cannot listen on %s", o->listen ? o->listen : "127.0.0.1:0");
		goto fail;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(sv->mhd, MHD_DAEMON_INFO_BIND_PORT);
	if (!di || !(sv->url = strprintf("https://%s:%u", ip, (unsigned)di->port))) {
		*err = strdup("cannot read the listening port");
		goto fail;
	}
	if (o->node_shell_listen && shell_start(sv, o->node_shell_listen, err) < 0)
		goto fail;
	free(ip);
	return sv;
fail:
	free(ip);
	server_stop(sv);
	return NULL;
}

const char *server_url(const struct server *sv)
{
	return sv->url;
}

const char *server_fingerprint(const struct server *sv)
{
	return sv->tls.fingerprint;
}

const char *server_node_shell_url(const struct server *sv)
{
	return sv->shell_url;
}

void server_stop(struct server *sv)
{
	if (!sv)
		return;
	if (sv->mhd)
		MHD_stop_daemon(sv->mhd);
	if (sv->shell)
		MHD_stop_daemon(sv->shell);
	free(sv->shell_url);
	cluster_net_stop(sv->cluster);
	if (sv->log)
		fclose(sv->log);
	faults_free(sv->faults);
	auth_free(sv->auth);
	simtls_free(&sv->tls);
	pthread_mutex_destroy(&sv->lock);
	free(sv->url);
	free(sv);
}
