/* test_ctl.c - the daemon's pure parts: the control protocol's line
 * framing with its cap and its request parsing (ctl.c), the job queue's
 * worker, node and guest limits (jobq.c), and the metrics text
 * (metrics.c). */
#include "ctl.h"
#include "jobq.h"
#include "metrics.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *next_line(struct ctl_lines *l, int *r)
{
	char *line = NULL;
	size_t len = 0;
	*r = ctl_lines_next(l, &line, &len);
	return *r > 0 ? strndup(line, len) : NULL;
}

Test(ctl_lines, split_across_reads_and_several_in_one)
{
	struct ctl_lines l = {0};
	int r;
	cr_assert_eq(ctl_lines_feed(&l, "{\"a\":", 5), 0);
	cr_assert_null(next_line(&l, &r));
	cr_assert_eq(r, 0);
	cr_assert_eq(ctl_lines_feed(&l, "1}\nsecond\nthi", 13), 0);
	char *a = next_line(&l, &r), *b = next_line(&l, &r);
	cr_assert_str_eq(a, "{\"a\":1}");
	cr_assert_str_eq(b, "second");
	cr_assert_null(next_line(&l, &r));
	cr_assert_eq(ctl_lines_feed(&l, "rd\n", 3), 0);
	char *c = next_line(&l, &r);
	cr_assert_str_eq(c, "third");
	free(a);
	free(b);
	free(c);
	ctl_lines_free(&l);
}

Test(ctl_lines, a_line_over_the_cap_is_dropped_reported_once_and_the_next_is_kept)
{
	struct ctl_lines l = {.max = 16};
	int r;
	cr_assert_eq(ctl_lines_feed(&l, "ok\n0123456789", 13), 0);
	cr_assert_eq(ctl_lines_feed(&l, "0123456789", 10), 0); /* 20 > 16 */
	cr_assert_eq(ctl_lines_feed(&l, "more of it", 10), 0);
	char *a = next_line(&l, &r);
	cr_assert_str_eq(a, "ok");
	cr_assert_null(next_line(&l, &r));
	cr_assert_eq(r, -1, "reported");
	cr_assert_null(next_line(&l, &r));
	cr_assert_eq(r, 0, "once");
	cr_assert_eq(ctl_lines_feed(&l, "tail\nafter\n", 11), 0);
	char *b = next_line(&l, &r);
	cr_assert_str_eq(b, "after", "the rest of the long line is dropped to its newline");
	/* exactly the cap is fine */
	cr_assert_eq(ctl_lines_feed(&l, "0123456789abcdef\n", 17), 0);
	char *c = next_line(&l, &r);
	cr_assert_str_eq(c, "0123456789abcdef");
	free(a);
	free(b);
	free(c);
	ctl_lines_free(&l);
}

static void bad(const char *line, const char *code, const char *msg_part)
{
	json_object *req = NULL;
	enum ctl_op op;
	const char *c = NULL;
	char *msg = NULL;
	cr_assert_eq(ctl_request_parse(line, strlen(line), &req, &op, &c, &msg), -1, "%s", line);
	cr_assert_str_eq(c, code, "%s", line);
	cr_assert(msg && strstr(msg, msg_part), "%s: %s", line, msg ? msg : "(none)");
	free(msg);
	json_object_put(req);
}

Test(ctl_request, parsed_and_refused)
{
	json_object *req = NULL;
	enum ctl_op op;
	const char *c = NULL;
	char *msg = NULL;
	const char *ok = "{\"id\":\"x\",\"op\":\"watch\",\"job\":3}";
	cr_assert_eq(ctl_request_parse(ok, strlen(ok), &req, &op, &c, &msg), 0);
	cr_assert_eq(op, CTL_OP_WATCH);
	json_object_put(req);
	bad("nope", "bad_request", "not JSON");
	bad("[1]", "bad_request", "JSON object");
	bad("{\"id\":1}", "bad_request", "\"op\"");
	bad("{\"op\":5}", "bad_request", "\"op\"");
	bad("{\"op\":\"status\"} {}", "bad_request", "more than one");
	bad("{\"op\":\"reboot\"}", "unknown_op", "unknown op 'reboot'");
	json_object *e = ctl_error(NULL, "too_long", "at most %d", 5);
	cr_assert_str_eq(json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN),
			 "{\"ok\":false,\"error\":\"too_long\",\"message\":\"at most 5\"}");
	json_object_put(e);
}

/* The request table: every op has a name that parses back to it, exactly
 * one access class (what the daemon's one policy check goes by: an op
 * added without one fails here), and the unknown-op message names them
 * all. */
Test(ctl_request, every_op_is_declared_with_one_policy)
{
	for (int op = 0; op < CTL_OP__COUNT; op++) {
		const struct ctl_op_def *def = ctl_op_def((enum ctl_op)op);
		cr_assert(def && def->name && *def->name, "op %d is not declared", op);
		unsigned access = def->flags & CTL_ACCESS;
		cr_assert(access == CTL_READ || access == CTL_SUBMIT || access == CTL_OWNER,
			  "%s: flags %#x: one of read, submit, owner", def->name, def->flags);
		enum ctl_op back;
		cr_assert_eq(ctl_op_parse(def->name, &back), 0, "%s", def->name);
		cr_assert_eq((int)back, op, "%s", def->name);
		char *line = strprintf("{\"op\":\"%s\"}", def->name);
		json_object *req = NULL;
		const char *c = NULL;
		char *msg = NULL;
		cr_assert_eq(ctl_request_parse(line, strlen(line), &req, &back, &c, &msg), 0, "%s",
			     line);
		json_object_put(req);
		free(line);
		line = strprintf("%s%s", op ? ", " : "(", def->name); /* in the table's order */
		bad("{\"op\":\"nosuch\"}", "unknown_op", line);
		free(line);
	}
	cr_assert_null(ctl_op_def(CTL_OP__COUNT));
	/* what the policy says (pvagentd(8)) */
	cr_assert_eq(ctl_op_def(CTL_OP_CANCEL)->flags & CTL_ACCESS, CTL_OWNER);
	cr_assert_eq(ctl_op_def(CTL_OP_RESUME)->flags & CTL_ACCESS, CTL_OWNER);
	cr_assert_eq(ctl_op_def(CTL_OP_SUBMIT)->flags & CTL_ACCESS, CTL_SUBMIT);
	cr_assert_eq(ctl_op_def(CTL_OP_REPORT)->flags & CTL_ACCESS, CTL_READ);
	cr_assert(ctl_op_def(CTL_OP_SUBMIT)->flags & CTL_NOT_STOPPING);
	cr_assert(ctl_op_def(CTL_OP_RESUME)->flags & CTL_NOT_STOPPING);
	cr_assert(!(ctl_op_def(CTL_OP_CANCEL)->flags & CTL_NOT_STOPPING));
}

static struct jobq_item *add(struct jobq *s, const char *g1, const char *g2, const char *node)
{
	const char *g[] = {g1, g2};
	struct jobq_item *it = jobq_add(s, g, g2 ? 2 : 1, node, NULL);
	cr_assert_not_null(it);
	return it;
}

Test(jobq, workers_nodes_and_one_job_per_guest_in_order)
{
	struct jobq s;
	jobq_init(&s, 3, 2);
	struct jobq_item *a = add(&s, "web1", NULL, "pve1"), *b = add(&s, "web1", NULL, "pve1"),
			  *c = add(&s, "web2", "web3", "pve1"), *d = add(&s, "web4", NULL, "pve1"),
			  *e = add(&s, "web3", NULL, "pve2"), *f = add(&s, "web5", NULL, NULL);
	cr_assert_eq(jobq_next(&s), a);
	cr_assert_eq(jobq_next(&s), c, "b waits for web1");
	cr_assert_eq(jobq_next(&s), f, "d: pve1 is full; e waits for web3 (c)");
	cr_assert_null(jobq_next(&s), "3 workers");
	const char *g = NULL;
	cr_assert_eq(jobq_blocker(&s, b, &g), a);
	cr_assert_str_eq(g, "web1");
	cr_assert_eq(jobq_blocker(&s, e, &g), c);
	cr_assert_null(jobq_blocker(&s, d, &g), "d waits for its node only");
	jobq_remove(&s, f);
	cr_assert_null(jobq_next(&s), "a free worker, but nothing may start");
	jobq_remove(&s, a);
	cr_assert_eq(jobq_next(&s), b);
	cr_assert_null(jobq_next(&s));
	jobq_remove(&s, c);
	cr_assert_eq(jobq_next(&s), d, "d came before e");
	cr_assert_eq(jobq_next(&s), e);
	cr_assert_eq(s.n_running, 3);
	cr_assert_eq(s.n_queued, 0);
	struct jobq_item *h = add(&s, "web3", NULL, NULL);
	cr_assert_eq(jobq_find(&s, h->ticket), h);
	cr_assert_eq(h->ticket, 7);
	jobq_free(&s);
}

Test(metrics, text_format_and_atomic_file)
{
	struct metrics m = {.start_time = 100};
	cr_assert_eq(metrics_job(&m, "up", "done"), 0);
	cr_assert_eq(metrics_job(&m, "up", "done"), 0);
	cr_assert_eq(metrics_job(&m, "down", "fail\"ed"), 0);
	cr_assert_eq(metrics_step(&m, "up", "clone", 2.5), 0);
	cr_assert_eq(metrics_step(&m, "up", "clone", 1.5), 0);
	cr_assert_eq(metrics_exit(&m, 0), 0);
	cr_assert_eq(metrics_requests(&m, "GET", 7), 0);
	cr_assert_eq(metrics_requests(&m, "GET", 3), 0);
	cr_assert_eq(metrics_retries(&m, "transient", 2), 0);
	char *t = metrics_text(&m);
	cr_assert_not_null(t);
	cr_assert(strstr(t, "pvagent_jobs_total{workflow=\"up\",result=\"done\"} 2\n"), "%s", t);
	cr_assert(strstr(t, "result=\"fail\\\"ed\"} 1\n"), "%s", t);
	cr_assert(strstr(t, "pvagent_step_seconds_sum{workflow=\"up\",step=\"clone\"} 4\n"), "%s", t);
	cr_assert(strstr(t, "pvagent_step_seconds_count{workflow=\"up\",step=\"clone\"} 2\n"), "%s", t);
	cr_assert(strstr(t, "pvagent_daemon_jobs_total{exit=\"0\"} 1\n"), "%s", t);
	cr_assert(strstr(t, "pvagent_pve_requests_total{method=\"GET\"} 10\n"), "%s", t);
	cr_assert(strstr(t, "pvagent_pve_retries_total{kind=\"transient\"} 2\n"), "%s", t);
	char dir[] = "/tmp/pvagent-test-metrics.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[128], *err = NULL, *back = NULL;
	snprintf(path, sizeof path, "%s/m.prom", dir);
	cr_assert_eq(metrics_write(&m, path, &err), 0, "%s", err ? err : "");
	cr_assert_eq(read_file(path, &back, NULL), 0);
	cr_assert_str_eq(back, t);
	snprintf(path, sizeof path, "%s/nodir/m.prom", dir);
	cr_assert_eq(metrics_write(&m, path, &err), -1);
	cr_assert(err && strstr(err, "nodir"), "%s", err ? err : "");
	free(err);
	free(back);
	free(t);
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	metrics_free(&m);
}
