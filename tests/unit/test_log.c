/* test_log.c - Criterion tests for agent/log.*: levels, verbosity, output
 * format, the secret registry and the credential-pattern masks. */
#include "log.h"
#include "util.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct capture {
	struct sbuf text;
	int lines;
	enum log_level last;
};

static void cap_sink(void *ctx, enum log_level lvl, const char *line)
{
	struct capture *c = ctx;
	cr_assert_eq(sbuf_add(&c->text, line), 0);
	cr_assert_eq(sbuf_addc(&c->text, '\n'), 0);
	c->lines++;
	c->last = lvl;
}

static void expect_redact(const char *in, const char *want)
{
	char *out = log_redact(in);
	cr_assert_not_null(out);
	cr_expect_str_eq(out, want, "redact(%s)", in);
	free(out);
}

Test(log, levels_and_verbosity)
{
	cr_expect_eq(log_level_from_verbosity(0), LOGL_INFO);
	cr_expect_eq(log_level_from_verbosity(1), LOGL_DEBUG);
	cr_expect_eq(log_level_from_verbosity(5), LOGL_TRACE);
	cr_expect_eq(log_level_from_verbosity(-1), LOGL_WARN);
	cr_expect_eq(log_level_from_verbosity(-3), LOGL_ERROR);
	cr_expect_str_eq(log_level_name(LOGL_WARN), "warning");

	struct capture c = {0};
	log_set_sink(cap_sink, &c);
	log_set_level(LOGL_WARN);
	log_info("hidden");
	log_debug("hidden");
	log_warn("shown %d", 1);
	log_error("shown %s", "two");
	cr_expect_eq(c.lines, 2);
	cr_expect_str_eq(sbuf_str(&c.text), "shown 1\nshown two\n");
	log_set_level(LOGL_TRACE);
	log_trace("t");
	cr_expect_eq(c.lines, 3);
	cr_expect_eq(c.last, LOGL_TRACE);
	log_set_sink(NULL, NULL);
	sbuf_free(&c.text);
}

Test(log, stderr_format, .init = cr_redirect_stderr)
{
	log_set_level(LOGL_INFO);
	log_info("hello");
	log_warn("careful");
	log_error("bad %d", 3);
	fflush(stderr);
	cr_assert_stderr_eq_str("pvagent: hello\npvagent: warning: careful\npvagent: bad 3\n");
}

/* A sink that prints some lines itself (the CLI's live progress): it
 * runs under the log's lock and writes with log_sink_stderr, which takes
 * none, so the line comes out (a second lock would hang here; the
 * suite's timeout fails it), redacted, formatted as the default's. */
static void above_sink(void *ctx, enum log_level lvl, const char *line)
{
	(*(int *)ctx)++;
	log_sink_stderr(lvl, line);
}

Test(log, a_sink_writes_to_stderr_without_a_second_lock, .init = cr_redirect_stderr,
     .timeout = 10)
{
	int calls = 0;
	log_set_level(LOGL_DEBUG);
	log_set_sink(above_sink, &calls);
	cr_assert_eq(log_secret_add("hunter2-secret"), 0);
	log_debug("step %d with hunter2-secret", 1);
	log_info("done");
	log_secret_remove("hunter2-secret");
	log_set_sink(NULL, NULL);
	log_set_level(LOGL_INFO);
	fflush(stderr);
	cr_expect_eq(calls, 2);
	cr_assert_stderr_eq_str("pvagent: debug: step 1 with ***\npvagent: done\n");
}

Test(log, registered_secret_masked_everywhere)
{
	struct capture c = {0};
	log_set_sink(cap_sink, &c);
	cr_assert_eq(log_secret_add("s3cr3t-t0ken"), 0);
	log_info("token is s3cr3t-t0ken and again s3cr3t-t0ken.");
	cr_expect_str_eq(sbuf_str(&c.text), "token is *** and again ***.\n");
	log_secret_remove("s3cr3t-t0ken");
	expect_redact("s3cr3t-t0ken", "s3cr3t-t0ken");
	log_set_sink(NULL, NULL);
	sbuf_free(&c.text);
}

Test(log, percent_encoded_form_masked)
{
	cr_assert_eq(log_secret_add("p@ss word&x"), 0);
	expect_redact("body: username=root%40pam&pw=p%40ss%20word%26x", "body: username=root%40pam&pw=***");
	expect_redact("raw p@ss word&x", "raw ***");
	log_secret_clear();
	expect_redact("raw p@ss word&x", "raw p@ss word&x");
}

Test(log, longest_secret_first_and_refcount)
{
	cr_assert_eq(log_secret_add("abcd"), 0);
	cr_assert_eq(log_secret_add("abcdefgh"), 0);
	expect_redact("x abcdefgh y abcd z", "x *** y *** z");
	/* Two registrations of one string need two removals. */
	cr_assert_eq(log_secret_add("abcd"), 0);
	log_secret_remove("abcd");
	expect_redact("abcd", "***");
	log_secret_remove("abcd");
	expect_redact("abcd", "abcd");
	log_secret_remove("abcdefgh");
	expect_redact("abcdefgh", "abcdefgh");
	/* Empty strings are ignored, not matched everywhere. */
	cr_expect_eq(log_secret_add(""), 0);
	expect_redact("plain", "plain");
}

Test(log, credential_patterns_masked_without_registration)
{
	expect_redact("Authorization: PVEAPIToken=root@pam!pvagent=0c5f4e2a-1111-2222-3333-444455556666",
		      "Authorization: PVEAPIToken=root@pam!pvagent=***");
	expect_redact("Cookie: PVEAuthCookie=PVE:root@pam:65A1B2C3::sig+/=; path=/",
		      "Cookie: PVEAuthCookie=***; path=/");
	expect_redact("POST /access/ticket username=root%40pam&password=hunter2&x=1",
		      "POST /access/ticket username=root%40pam&password=***&x=1");
	expect_redact("ciuser=u&cipassword=topsecret", "ciuser=u&cipassword=***");
	expect_redact("CSRFPreventionToken: 65A1B2C3:abcdef", "CSRFPreventionToken: ***");
	expect_redact("{\"ticket\":\"PVE:root@pam:X::Y\",\"CSRFPreventionToken\":\"C:D\",\"username\":\"root@pam\"}",
		      "{\"ticket\":\"***\",\"CSRFPreventionToken\":\"***\",\"username\":\"root@pam\"}");
	expect_redact("{\"password\": \"a\\\"b\"}", "{\"password\": \"***\"}");
	expect_redact("PASSWORD=Mixed", "PASSWORD=***");
	/* Words alone are not secrets. */
	expect_redact("the password was refused", "the password was refused");
	expect_redact("password=", "password=");
	expect_redact("PVEAPIToken", "PVEAPIToken");
	char *e = log_redact(NULL);
	cr_assert_str_eq(e, "");
	free(e);
}

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		if (log_secret_add("racing-secret") < 0)
			return (void *)1;
		log_info("line racing-secret %d", i);
		log_secret_remove("racing-secret");
	}
	return NULL;
}

static void count_sink(void *ctx, enum log_level lvl, const char *line)
{
	(void)lvl;
	int *bad = ctx;
	/* Every thread holds a registration while it logs, so the secret is
	 * always registered when its line is redacted. */
	if (strstr(line, "racing-secret"))
		__atomic_add_fetch(bad, 1, __ATOMIC_RELAXED);
}

Test(log, threads_share_registry)
{
	int bad = 0;
	log_set_sink(count_sink, &bad);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (int i = 0; i < 4; i++) {
		void *r = NULL;
		cr_assert_eq(pthread_join(t[i], &r), 0);
		cr_expect_null(r);
	}
	cr_expect_eq(bad, 0);
	expect_redact("racing-secret", "racing-secret");
	log_set_sink(NULL, NULL);
}
