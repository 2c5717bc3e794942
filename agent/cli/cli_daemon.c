/* cli_daemon.c - the command-line tool with pvagentd: a job command is
 * submitted to the daemon when its socket answers (unless --local), and
 * what the daemon's pvagent child prints comes back and is printed here,
 * so output, progress and exit code are those of an in-process run
 * (--json: the final objects of several jobs merged into one);
 * Ctrl-C detaches (the job goes on). Also `status`, `job ID --follow`,
 * and the child's side: its engine events go to the daemon on
 * $PVAGENT_EVENT_FD (jobproc.h). */
#include "cli.h"

#include "ctl_client.h"
#include "json.h"
#include "log.h"
#include "output.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the daemon's child: events to the daemon ------------------------------ */

static int event_fd = -1;

/* o (NULL: nothing) as one line to the daemon. */
static void send_event(json_object *o)
{
	struct sbuf b = {0};
	if (o && ctl_line_add(&b, o) == 0) {
		size_t off = 0;
		while (off < b.len) {
			ssize_t w = write(event_fd, b.s + off, b.len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break; /* the daemon has gone: the job goes on */
			off += (size_t)w;
		}
	}
	sbuf_free(&b);
}

static void tap_event(void *ctx, const struct job_event *ev)
{
	(void)ctx;
	if (job_event_is_start(ev))
		return; /* for live lines only: the child draws them */
	json_object *o = job_event_json(ev);
	if (o && ev->workflow)
		json_object_object_add(o, "workflow", json_object_new_string(ev->workflow));
	send_event(o);
	json_object_put(o);
}

void cli_daemon_child_init(void)
{
	const char *v = getenv("PVAGENT_EVENT_FD");
	char *end = NULL;
	long fd = v ? strtol(v, &end, 10) : -1;
	if (!v || !end || *end || fd < 3 || fd > 1024)
		return;
	event_fd = (int)fd;
	job_event_tap(tap_event, NULL);
}

void cli_daemon_child_end(void)
{
	if (event_fd < 0)
		return;
	job_event_tap(NULL, NULL);
	struct pve_stats st;
	pve_stats_get(&st);
	json_object *o = json_object_new_object(), *rq = json_object_new_object(),
		    *rt = json_object_new_object();
	const char *names[] = {"GET", "POST", "PUT", "DELETE", "other"};
	unsigned long counts[] = {st.get, st.post, st.put, st.del, st.other};
	for (size_t i = 0; i < 5; i++)
		if (counts[i])
			json_object_object_add(rq, names[i], json_object_new_int64((int64_t)counts[i]));
	for (size_t k = 0; k < sizeof st.retries / sizeof st.retries[0]; k++)
		if (st.retries[k])
			json_object_object_add(rt, pve_err_kind_name((enum pve_err_kind)k),
					       json_object_new_int64((int64_t)st.retries[k]));
	json_object_object_add(o, "event", json_object_new_string("stats"));
	json_object_object_add(o, "requests", rq);
	json_object_object_add(o, "retries", rt);
	send_event(o); /* the daemon may have gone: the counts are lost then */
	json_object_put(o);
}

bool cli_daemon_stored(long long id, const char *error)
{
	if (event_fd < 0)
		return false;
	json_object *o = json_object_new_object();
	if (o) {
		json_object_object_add(o, "event", json_object_new_string("stored"));
		if (id > 0)
			json_object_object_add(o, "job", json_object_new_int64(id));
		else
			json_object_object_add(o, "error", json_object_new_string(error));
	}
	send_event(o);
	json_object_put(o);
	return o != NULL;
}

/* ---- talking to the daemon ------------------------------------------------------ */

static volatile sig_atomic_t detach;

static void on_detach_signal(int sig)
{
	(void)sig;
	detach = 1;
}

/* Connect: 0 connected, 1 no daemon, or an exit code (said). */
static int connect_daemon(struct cli *cli, struct ctl_client *c, bool quiet)
{
	int rc = cli_load_conf(cli);
	if (rc)
		return rc;
	char *err = NULL;
	int r = ctl_client_connect(cli->conf.paths.socket, c, &err);
	if (r < 0) {
		if (!quiet)
			log_warn("cannot reach pvagentd: %s", err ? err : "error");
		free(err);
		return 1;
	}
	return r;
}

json_object *cli_daemon_request(enum ctl_op op)
{
	const struct ctl_op_def *def = ctl_op_def(op);
	json_object *req = def ? json_object_new_object() : NULL;
	if (req && (json_add(req, "id", json_object_new_int(1)) < 0 ||
		    json_add_str(req, "op", def->name) < 0)) {
		json_object_put(req);
		return NULL;
	}
	return req;
}

int cli_daemon_call(struct cli *cli, struct ctl_client *c, json_object *req,
		    json_object **answer, char **err)
{
	*answer = NULL;
	enum ctl_op op;
	const char *name = json_str(req, "op");
	if (!req || ctl_op_parse(name, &op) < 0) {
		err_setf(err, "not a request of pvagentd: op '%s'", name ? name : "(none)");
		return -1;
	}
	/* the peer policy's reader: never more than CTL_READ */
	if (cli->cmd && (cli->cmd->flags & CMD_READONLY) && !(ctl_op_def(op)->flags & CTL_READ)) {
		err_setf(err, "pvagent %s changes nothing: it may not send pvagentd '%s' (a bug)",
			 cli->cmd->name, name);
		return -1;
	}
	return ctl_client_call(c, req, answer, err);
}

static void write_all(FILE *f, const char *s, size_t n)
{
	if (n && fwrite(s, 1, n, f) != n)
		return;
	fflush(f);
}

/* --json: each ticket's child prints its events and then its final
 * object. The events pass on as they come; the finals are held until
 * every ticket has exited and then printed as the command's one final
 * object, as in this process (`up a b`: one object, each guest in its
 * "guests"). */
struct relay {
	size_t n;             /* tickets, in the order of the submitted jobs */
	json_object *tickets; /* the daemon's answer's ticket IDs */
	json_object *jobs;    /* the submitted jobs ("subject"): the guests */
	const char *command;  /* the workflow's name */
	struct sbuf *pending; /* per ticket: its stdout up to its newline */
	char **final;         /* per ticket: its final object's line */
	struct sbuf *said;    /* per ticket: its stderr, for a child that
				 printed no final object */
};

static int relay_init(struct relay *r, const char *command, json_object *tickets,
		      json_object *jobs, size_t n)
{
	*r = (struct relay){.n = n, .command = command, .tickets = tickets, .jobs = jobs};
	r->pending = calloc(n, sizeof *r->pending);
	r->final = calloc(n, sizeof *r->final);
	r->said = calloc(n, sizeof *r->said);
	return r->pending && r->final && r->said ? 0 : -1;
}

static void relay_free(struct relay *r)
{
	for (size_t i = 0; i < r->n; i++) {
		if (r->pending)
			sbuf_free(&r->pending[i]);
		if (r->final)
			free(r->final[i]);
		if (r->said)
			sbuf_free(&r->said[i]);
	}
	free(r->pending);
	free(r->final);
	free(r->said);
}

/* The index of ticket in r (0 when it is not one of them). */
static size_t relay_index(const struct relay *r, long long ticket)
{
	for (size_t i = 0; r->tickets && i < r->n; i++)
		if (json_object_get_int64(json_object_array_get_idx(r->tickets, i)) == ticket)
			return i;
	return 0;
}

/* What the child of ticket wrote on its stderr: its last lines kept. */
static void relay_stderr(struct relay *r, long long ticket, const char *data, size_t n)
{
	struct sbuf *said = &r->said[relay_index(r, ticket)];
	enum { KEEP = 4096 };
	if (said->len + n > 2 * KEEP) { /* the tail only: an error is one line */
		char *tail = strdup(sbuf_str(said) + (said->len > KEEP ? said->len - KEEP : 0));
		sbuf_reset(said);
		if (tail)
			sbuf_add(said, tail);
		free(tail);
	}
	sbuf_addn(said, data, n);
}

/* The error a child that printed no final object said last on stderr
 * ("pvagent CMD: [error: ]MESSAGE": its MESSAGE, as an error object holds
 * it), or NULL. malloc'd. */
static char *relay_said(const struct relay *r, size_t k)
{
	const char *s = sbuf_str(&r->said[k]), *end = s + strlen(s);
	while (end > s && end[-1] == '\n')
		end--;
	const char *line = end;
	while (line > s && line[-1] != '\n')
		line--;
	if (line == end)
		return NULL;
	const char *colon = strncmp(line, "pvagent", 7) == 0 ? strstr(line, ": ") : NULL;
	if (colon && colon < end)
		line = colon + 2;
	if (strncmp(line, "error: ", 7) == 0 && line + 7 < end)
		line += 7;
	return strndup(line, (size_t)(end - line));
}

static bool is_final(const char *line)
{
	json_object *o = *line == '{' ? json_tokener_parse(line) : NULL;
	bool yes = o && json_object_is_type(o, json_type_object) &&
		   json_object_object_get_ex(o, "result", NULL);
	json_object_put(o);
	return yes;
}

/* Data the child of ticket wrote on its stdout: whole lines on, a final
 * object held. */
static void relay_output(struct relay *r, long long ticket, const char *data, size_t n)
{
	size_t k = relay_index(r, ticket);
	struct sbuf *pending = &r->pending[k];
	for (const char *p = data, *end = data + n; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (sbuf_addn(pending, p, nl ? (size_t)(nl - p) : (size_t)(end - p)) < 0 || !nl)
			return;
		p = nl + 1;
		if (is_final(sbuf_str(pending))) {
			free(r->final[k]);
			r->final[k] = sbuf_steal(pending);
		} else {
			sbuf_addc(pending, '\n');
			write_all(stdout, sbuf_str(pending), pending->len);
		}
		sbuf_reset(pending);
	}
}

/* The result of ticket i whose child printed no final object: failed,
 * with the error it said (command: as the command's own object). */
static json_object *relay_unprinted(const struct relay *r, size_t i, int code, bool command)
{
	char *said = relay_said(r, i);
	json_object *g = json_object_new_object();
	if (g && command)
		json_object_object_add(g, "command",
				       r->command ? json_object_new_string(r->command) : NULL);
	const char *subject = r->jobs ? json_str(json_object_array_get_idx(r->jobs, i), "subject")
				      : NULL; /* (resume: none) */
	if (g)
		out_result_members(g, subject, 0, NULL, code ? code : 1, "failed",
				   said ? said : "failed (see standard error)", NULL);
	free(said);
	return g;
}

/* Every ticket exited with code the worst of theirs: the command's final
 * object. One ticket: its child's, as it printed it; several: one object
 * with every guest of theirs (a child that printed none: its guest with
 * the failure), as the command prints it in this process. */
static void relay_finish(struct relay *r, int code)
{
	for (size_t i = 0; i < r->n; i++)
		write_all(stdout, sbuf_str(&r->pending[i]), r->pending[i].len);
	if (r->n == 1 && r->final[0]) {
		out_json_relayed(r->final[0]);
		printf("%s\n", r->final[0]);
		fflush(stdout);
		return;
	}
	if (r->n == 1 && code) {
		/* its child ended before it printed one: the error it said,
		 * as its command's error object */
		json_object *o = relay_unprinted(r, 0, code, true);
		if (o)
			out_json_line(stdout, o);
		json_object_put(o);
		return;
	}
	json_object *guests = json_object_new_array(), *command = NULL;
	bool any = false;
	for (size_t i = 0; guests && i < r->n; i++) {
		json_object *f = r->final[i] ? json_tokener_parse(r->final[i]) : NULL, *g = NULL;
		any = any || f;
		if (f && !command)
			command = json_object_get(json_object_object_get(f, "command"));
		if (f && json_object_object_get_ex(f, "guests", &g)) {
			for (size_t k = 0; k < json_object_array_length(g); k++)
				json_object_array_add(guests,
						      json_object_get(json_object_array_get_idx(g, k)));
		} else if (f) { /* a guest command's error object: its guest's */
			json_object_object_del(f, "command");
			json_object_array_add(guests, json_object_get(f));
		} else {
			json_object_array_add(guests, relay_unprinted(r, i, code, false));
		}
		json_object_put(f);
	}
	json_object *o = guests && any ? json_object_new_object() : NULL;
	if (o) {
		json_object_object_add(o, "result", json_object_new_string(code ? "error" : "ok"));
		json_object_object_add(o, "command", json_object_get(command));
		json_object_object_add(o, "guests", json_object_get(guests));
		json_object_object_add(o, "exit", json_object_new_int(code));
		out_json_line(stdout, o);
	}
	json_object_put(o);
	json_object_put(command);
	json_object_put(guests);
}

/* Pass the daemon's stream for the tickets on: output to our
 * stdout/stderr (with --json through relay: one final object), waiting
 * notes to stderr; until each has exited (the worst code, as
 * cli_exit_worse), the connection ends (1) or Ctrl-C (detach:
 * EXIT_INTERRUPTED after saying how to follow). follow (relay NULL):
 * print engine events as `pvagent job` lines (or JSON lines) instead of
 * the submitter's output, those after since only. */
static int stream(struct cli *cli, struct ctl_client *c, struct relay *relay, double since)
{
	bool follow = !relay;
	size_t tickets = relay ? relay->n : 1;
	struct sigaction sa, old_int, old_term;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_detach_signal;
	sigemptyset(&sa.sa_mask);
	detach = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	long long job = 0;
	int rc = 1;
	size_t exits = 0;
	for (;;) {
		if (detach) {
			fflush(stdout);
			if (job)
				fprintf(stderr, "\npvagent: detached; job %lld goes on in pvagentd: "
						"follow it with 'pvagent job %lld --follow'\n", job, job);
			else
				fprintf(stderr, "\npvagent: detached; the command waits in pvagentd's "
						"queue ('pvagent status'); once it runs, 'pvagent jobs' "
						"names its job: follow it with 'pvagent job ID --follow'\n");
			rc = EXIT_INTERRUPTED;
			break;
		}
		json_object *m = NULL;
		char *err = NULL;
		int r = ctl_client_recv(c, &m, -1, &err);
		if (r == 0)
			continue;
		if (r < 0) {
			log_error("pvagentd: %s", err ? err : "connection lost");
			free(err);
			break;
		}
		const char *ev = json_str(m, "event");
		long long v = 0;
		if (!job && json_int(m, "job", &v) && v > 0)
			job = v;
		if (!ev) {
			json_object_put(m);
			continue;
		}
		if (strcmp(ev, "exit") == 0) {
			/* several tickets (up a b c): the worst exit code */
			int code = json_int(m, "code", &v) ? (int)v : 1;
			rc = exits++ == 0 ? code : cli_exit_worse(rc, code);
			json_object_put(m);
			if (exits < tickets)
				continue;
			if (relay && cli->json)
				relay_finish(relay, rc);
			break;
		}
		if (strcmp(ev, "queued") == 0) {
			log_info("%s", json_str(m, "text") ? json_str(m, "text") : "queued");
		} else if (strcmp(ev, "output") == 0) {
			json_object *d = NULL;
			if (!follow && json_object_object_get_ex(m, "data", &d) && json_int(m, "fd", &v)) {
				const char *s = json_object_get_string(d);
				size_t n = (size_t)json_object_get_string_len(d);
				long long t = 0;
				if (cli->json && v == 1 && json_int(m, "ticket", &t))
					relay_output(relay, t, s, n);
				else
					write_all(v == 2 ? stderr : stdout, s, n);
				if (relay && cli->json && v == 2 && json_int(m, "ticket", &t))
					relay_stderr(relay, t, s, n);
			}
		} else if (follow && strcmp(ev, "start") != 0) {
			json_object *t = NULL;
			double tm = json_object_object_get_ex(m, "time", &t) ? json_object_get_double(t)
									      : 0;
			if (tm > since && cli->json) {
				json_object_object_del(m, "id");
				json_object_object_del(m, "ticket");
				out_json_line(stdout, m);
			} else if (tm > since &&
				   !(strcmp(ev, "progress") == 0 &&
				     json_object_object_get_ex(m, "percent", NULL))) {
				char tb[32] = "?";
				time_t s = (time_t)tm;
				struct tm lt;
				if (localtime_r(&s, &lt))
					strftime(tb, sizeof tb, "%Y-%m-%d %H:%M:%S", &lt);
				printf("  %s %-8s %-8s %s\n", tb, ev,
				       json_str(m, "step") ? json_str(m, "step") : "",
				       json_str(m, "text") ? json_str(m, "text") : "");
				fflush(stdout);
			}
		}
		json_object_put(m);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}

/* The submit request of a job command: its jobs' params as its handler
 * appended them, never the command line; or resume's job ID. NULL with
 * *rc (said). */
static json_object *submit_request(const struct cmd_entry *e, const struct cmd_args *a,
				   const struct cli_jobs *jobs, int *rc)
{
	json_object *req = cli_daemon_request(jobs ? CTL_OP_SUBMIT : CTL_OP_RESUME);
	if (!req) {
		*rc = 1;
		return NULL;
	}
	if (!jobs) {
		char *end = NULL;
		long long id = a->argc == 1 ? strtoll(a->argv[0], &end, 10) : 0;
		if (!end || *end || id <= 0) {
			json_object_put(req);
			*rc = cli_usage_error("resume", "expected a job ID", a->argc ? a->argv[0] : "");
			return NULL;
		}
		json_object_object_add(req, "job", json_object_new_int64(id));
		return req;
	}
	json_object_object_add(req, "workflow", json_object_new_string(e->wf->name));
	json_object_object_add(req, "jobs", json_object_get(jobs->jobs));
	return req;
}

int cli_daemon_submit(struct cli *cli, const struct cmd_entry *e, const struct cmd_args *a,
		      const struct cli_jobs *jobs, bool *handled)
{
	*handled = false;
	if (cli->local)
		return 0;
	struct ctl_client c;
	int rc = connect_daemon(cli, &c, false);
	if (rc == 1)
		return 0; /* no daemon: in this process */
	*handled = true;
	if (rc)
		return rc;
	json_object *req = submit_request(e, a, jobs, &rc);
	if (!req) {
		ctl_client_close(&c);
		return rc;
	}
	json_object_object_add(req, "json", json_object_new_boolean(cli->json));
	/* live lines when stdout and stderr are the terminal: the child then
	 * writes both on one stream (jobproc.h), which we print on stdout */
	bool tty = !cli->json && cli_stdout_tty() && isatty(STDERR_FILENO);
	json_object_object_add(req, "tty", json_object_new_boolean(tty));
	if (tty) /* the child draws its live lines for our width */
		json_object_object_add(req, "columns", json_object_new_int((int)cli_term_columns()));
	json_object_object_add(req, "verbosity", json_object_new_int(cli->verbosity));
	json_object *ans = NULL;
	char *err = NULL;
	if (cli_daemon_call(cli, &c, req, &ans, &err) < 0) {
		log_error("pvagentd: %s", err ? err : "no answer");
		free(err);
		rc = 1;
	} else if (!json_object_get_boolean(json_object_object_get(ans, "ok"))) {
		const char *code = json_str(ans, "error");
		log_error("pvagentd: %s", json_str(ans, "message") ? json_str(ans, "message")
								    : "refused the job");
		/* refused, or nothing to resume (finished, unknown): usage */
		rc = code && (strcmp(code, "refused") == 0 || strcmp(code, "bad_request") == 0 ||
			      strcmp(code, "not_found") == 0)
			     ? EXIT_USAGE : 1;
	} else {
		json_object *t = json_object_object_get(ans, "tickets");
		size_t n = t && json_object_is_type(t, json_type_array) ? json_object_array_length(t)
									 : 0;
		n = n ? n : 1;
		/* said to a person (not to scripts): where the command runs */
		if (isatty(STDERR_FILENO) && !cli->json && cli->verbosity >= 0)
			log_info("submitted to pvagentd (ticket %s%s); Ctrl-C detaches, the job goes on",
				 json_text(ans, "ticket"), n > 1 ? " and on" : "");
		else
			log_debug("pvagentd: %zu ticket(s) from %s", n, json_text(ans, "ticket"));
		struct relay relay;
		if (relay_init(&relay, json_str(req, "workflow"), t,
			       json_object_object_get(req, "jobs"), n) < 0) {
			log_error("out of memory");
			rc = 1;
		} else {
			rc = stream(cli, &c, &relay, 0);
		}
		relay_free(&relay);
	}
	json_object_put(ans);
	json_object_put(req);
	ctl_client_close(&c);
	return rc;
}

/* ---- job ID --follow -------------------------------------------------------------- */

int cli_daemon_watch(struct cli *cli, long long id, struct ctl_client *c)
{
	int rc = connect_daemon(cli, c, true);
	if (rc)
		return rc;
	json_object *req = cli_daemon_request(CTL_OP_WATCH), *ans = NULL;
	json_object_object_add(req, "job", json_object_new_int64(id));
	char *err = NULL;
	rc = 0;
	if (cli_daemon_call(cli, c, req, &ans, &err) < 0) {
		log_warn("pvagentd: %s", err ? err : "no answer");
		free(err);
		rc = 1;
	} else if (!json_object_get_boolean(json_object_object_get(ans, "ok"))) {
		rc = 1; /* not in the daemon */
	}
	json_object_put(ans);
	json_object_put(req);
	if (rc)
		ctl_client_close(c);
	return rc;
}

int cli_daemon_cancel(struct cli *cli, long long id, bool *handled)
{
	*handled = false;
	struct ctl_client c;
	int rc = connect_daemon(cli, &c, true);
	if (rc)
		return 0;
	json_object *req = cli_daemon_request(CTL_OP_CANCEL), *ans = NULL;
	json_object_object_add(req, "job", json_object_new_int64(id));
	char *err = NULL;
	if (cli_daemon_call(cli, &c, req, &ans, &err) == 1 &&
	    json_object_get_boolean(json_object_object_get(ans, "ok"))) {
		*handled = true;
		const char *state = json_str(ans, "state");
		bool removed = state && strcmp(state, "removed") == 0;
		if (cli->json) {
			json_object *o = json_object_new_object();
			json_object_object_add(o, "result", json_object_new_string("ok"));
			json_object_object_add(o, "command", json_object_new_string("cancel"));
			json_object_object_add(o, "job", json_object_new_int64(id));
			json_object_object_add(o, "daemon", json_object_new_string(state ? state : ""));
			json_object_object_add(o, "exit", json_object_new_int(0));
			out_json_line(stdout, o);
			json_object_put(o);
		} else if (removed) {
			printf("job %lld: taken out of pvagentd's queue before it ran again\n", id);
		} else {
			printf("job %lld: pvagentd stops it after its current step and records it "
			       "cancelled; what its done steps did stays: see 'pvagent job %lld'\n",
			       id, id);
		}
	} else if (ans && json_str(ans, "error") && strcmp(json_str(ans, "error"), "forbidden") == 0) {
		/* pvagentd has it, and this user may not change it */
		*handled = true;
		rc = cli_error("job", "cancel", "pvagentd: %s",
			       json_str(ans, "message") ? json_str(ans, "message") : "forbidden");
	}
	free(err);
	json_object_put(ans);
	json_object_put(req);
	ctl_client_close(&c);
	return rc;
}

int cli_daemon_follow(struct cli *cli, struct ctl_client *c, double since)
{
	int rc = stream(cli, c, NULL, since);
	ctl_client_close(c);
	return rc;
}

/* ---- jobs: what waits in the daemon's queue ------------------------------------ */

int cli_daemon_queued(struct cli *cli, json_object **queued)
{
	*queued = NULL;
	struct ctl_client c;
	if (connect_daemon(cli, &c, true))
		return 0;
	json_object *req = cli_daemon_request(CTL_OP_JOBS), *ans = NULL;
	char *err = NULL;
	if (cli_daemon_call(cli, &c, req, &ans, &err) == 1 &&
	    json_object_get_boolean(json_object_object_get(ans, "ok")))
		*queued = json_object_get(json_object_object_get(ans, "queued"));
	free(err);
	json_object_put(ans);
	json_object_put(req);
	ctl_client_close(&c);
	return *queued ? 1 : 0;
}

static void print_items(const char *title, json_object *a);

void cli_daemon_print_queued(json_object *queued)
{
	print_items("\nqueued in pvagentd (not started yet)", queued);
}

/* ---- status --------------------------------------------------------------------------- */

static void print_items(const char *title, json_object *a)
{
	size_t n = a ? json_object_array_length(a) : 0;
	if (!n)
		return;
	printf("%s:\n", title);
	const char *hdr[] = {"TICKET", "JOBS", "PID", "TIME", "COMMAND"};
	struct table *t = table_new(5, hdr);
	for (size_t i = 0; t && i < n; i++) {
		json_object *o = json_object_array_get_idx(a, i), *v;
		struct sbuf jobs = {0}, cmd = {0};
		if (json_object_object_get_ex(o, "jobs", &v))
			for (size_t k = 0; k < json_object_array_length(v); k++)
				sbuf_addf(&jobs, "%s%s", k ? "," : "",
					  json_object_get_string(json_object_array_get_idx(v, k)));
		sbuf_addf(&cmd, "%s %s", json_str(o, "workflow") ? json_str(o, "workflow") : "?",
			  json_str(o, "subject") ? json_str(o, "subject") : "");
		char secs[32];
		json_object *s = NULL;
		snprintf(secs, sizeof secs, "%.1fs",
			 json_object_object_get_ex(o, "seconds", &s) ? json_object_get_double(s) : 0);
		const char *row[] = {json_text(o, "ticket"), jobs.len ? sbuf_str(&jobs) : NULL,
				     json_text(o, "pid"), secs, sbuf_str(&cmd)};
		table_add(t, row);
		sbuf_free(&jobs);
		sbuf_free(&cmd);
	}
	if (t)
		table_print(t, stdout);
	table_free(t);
}

static int cmd_status(struct cli *cli, const struct cmd_args *a)
{
	(void)a;
	struct ctl_client c;
	int rc = connect_daemon(cli, &c, false);
	if (rc == 1) {
		if (cli->json) {
			json_object *o = json_object_new_object();
			json_object_object_add(o, "command", json_object_new_string("status"));
			out_result_members(o, NULL, 0, NULL, 1, "not-running",
					   "pvagentd is not running", NULL);
			out_json_line(stdout, o);
			json_object_put(o);
		}
		log_error("pvagentd is not running (nothing answers on %s); jobs run in the "
			  "pvagent process", cli->conf.paths.socket);
		return 1;
	}
	if (rc)
		return rc;
	json_object *req = cli_daemon_request(CTL_OP_STATUS), *ans = NULL;
	char *err = NULL;
	rc = 0;
	if (cli_daemon_call(cli, &c, req, &ans, &err) < 0 ||
	    !json_object_get_boolean(json_object_object_get(ans, "ok"))) {
		log_error("pvagentd: %s", err ? err : json_str(ans, "message") ? json_str(ans, "message")
										   : "no answer");
		free(err);
		rc = 1;
	} else if (cli->json) {
		json_object_object_del(ans, "id");
		json_object_object_del(ans, "ok");
		out_json_ok("status", "daemon", json_object_get(ans));
	} else {
		json_object *w = json_object_object_get(ans, "workers"), *u = NULL;
		long secs = json_object_object_get_ex(ans, "uptime", &u)
				    ? (long)json_object_get_double(u) : 0;
		printf("pvagentd %s, pid %s, up %ldd %02ld:%02ld:%02ld\n", json_text(ans, "version"),
		       json_text(ans, "pid"), secs / 86400, secs % 86400 / 3600, secs % 3600 / 60,
		       secs % 60);
		printf("workers: %s of %s busy (at most %s per node); queue: %s\n",
		       json_text(w, "busy"), json_text(w, "total"), json_text(ans, "node_jobs"),
		       json_text(ans, "queue"));
		printf("config: %s; store: %s\n", json_text(ans, "config"), json_text(ans, "store"));
		print_items("running", json_object_object_get(ans, "running"));
		print_items("queued", json_object_object_get(ans, "queued"));
		json_object *win = json_object_object_get(ans, "windows");
		for (size_t i = 0; win && i < json_object_array_length(win); i++) {
			json_object *x = json_object_array_get_idx(win, i);
			long long next = 0;
			char when[64] = "never (no days)";
			struct tm lt;
			time_t t;
			if (json_int(x, "next", &next) && next > 0 && (t = (time_t)next, localtime_r(&t, &lt)))
				strftime(when, sizeof when, "%a %Y-%m-%d %H:%M", &lt);
			json_object *open = json_object_object_get(x, "open");
			char db[32];
			printf("window %s: node %s, %s %s, for %s\n", json_text(x, "name"),
			       json_text(x, "node"), open && json_object_get_boolean(open) ? "open since"
											 : "next",
			       when, str_duration(db, sizeof db,
						  json_object_get_double(json_object_object_get(x,
							  "duration"))));
		}
	}
	json_object_put(ans);
	json_object_put(req);
	ctl_client_close(&c);
	return rc;
}

const struct cmd_entry cmd_status_entry = {
	"status", "", "pvagentd: pid, uptime, version, workers, queue, running jobs", NULL, NULL,
	NULL, 0, 0, NULL, cmd_status, "pvagent status\npvagent --json status",
	.wf = NULL,
	.flags = CMD_READONLY,
};
