/* test_cli_inject.c - the command-line tool (agent/cli/) run as a user
 * runs it ($PVAGENT_BIN, default build/san/pvagent) against the PVE
 * simulator and a real sshd guest (tests/support/guestenv, as root):
 * `inject --address` for a guest whose address PVE cannot tell (no guest
 * agent), its refusals, and `up` running inject (text and --json output,
 * exit codes, --no-inject). Each test has its own simulator, guest and
 * 127.0.1.N address; the tool's own sanitizer reports fail the test. */
#include "cliworld.h"
#include "simproc.h"
#include "sshd.h"
#include "util.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct cli_world cw;

static void cleanup(void)
{
	cli_world_cleanup(&cw);
}

TestSuite(pvagent_cli, .fini = cleanup, .timeout = 120);

Test(pvagent_cli, inject_address_for_a_guest_pve_cannot_locate)
{
	cli_world_start(&cw, "127.0.1.150", NULL);
	char *out = NULL;

	/* no guest agent: the address is unknown, and the tool says what to do */
	int rc = cli_pv(&cw, &out, "inject", "cli1", NULL);
	cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
	cr_expect(strstr(out, "--address"), "%s", out);
	free(out);

	/* refusals before anything is looked up */
	rc = cli_pv(&cw, &out, "inject", "cli1", "--address", "-oProxyCommand=x", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "bad --address"), "%s", out);
	free(out);
	rc = cli_pv(&cw, &out, "inject", "nosuch", "--address", cw.ge.sd.addr, NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "no guest named 'nosuch'"), "%s", out);
	free(out);

	/* dry run: diffs, nothing written */
	char *before = guestenv_snapshot(&cw.ge);
	rc = cli_pv(&cw, &out, "inject", "cli1", "--address", cw.ge.sd.addr, "--dry-run", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "+pvagent_cli_test=\"YES\""), "%s", out);
	cr_expect(strstr(out, "cli1: dry-run: FreeBSD 14.1-RELEASE-p5: 1 of 1 file would change: "
			      "/etc/rc.conf"), "%s", out);
	free(out);
	char *after = guestenv_snapshot(&cw.ge);
	cr_expect_str_eq(after, before, "the dry run changed the guest");
	free(before);
	free(after);

	/* the template comes from the description; files changed */
	rc = cli_pv(&cw, &out, "inject", "cli1", "--address", cw.ge.sd.addr, NULL);
	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "cli1: changed: FreeBSD 14.1-RELEASE-p5: /etc/rc.conf"), "%s", out);
	free(out);
	char *rcconf = NULL;
	cr_assert_eq(guestenv_read(&cw.ge, "/etc/rc.conf", &rcconf), 0);
	cr_expect(strstr(rcconf, "pvagent_cli_test=\"YES\"\n"), "%s", rcconf);
	cr_expect(strstr(rcconf, "hostname=\"cli1\"\n"), "%s", rcconf);
	free(rcconf);

	/* again, as JSON: unchanged */
	rc = cli_pv(&cw, &out, "--json", "inject", "cli1", "--address", cw.ge.sd.addr, NULL);
	cr_assert_eq(rc, 0, "%s", out);
	json_object *o = cli_final_json(out);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"result", NULL}), "ok");
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"status", NULL}), "unchanged");
	json_object_put(o);
	free(out);

	/* a template whose address is ${ip}: --address stands for it */
	rc = cli_pv(&cw, &out, "inject", "cli1", "-t", "cliip", "--address", cw.ge.sd.addr, NULL);
	cr_expect_eq(rc, 0, "--address satisfies ${ip}: %s", out);
	free(out);
	cli_world_stop(&cw);
}

Test(pvagent_cli, up_runs_inject_and_no_inject_skips_it)
{
	cli_world_start(&cw, "127.0.1.151", NULL);
	char *out = NULL;

	/* --no-inject: created, the guest's files untouched */
	char *before = guestenv_snapshot(&cw.ge);
	int rc = cli_pv(&cw, &out, "--json", "up", "cli2", "-t", "clistatic", "--no-inject", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	json_object *o = cli_final_json(out);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"guests", "0", "status", NULL}),
			 "created");
	cr_expect_null(cli_jpath(o, (const char *const[]){"guests", "0", "inject", NULL}));
	json_object_put(o);
	free(out);
	char *after = guestenv_snapshot(&cw.ge);
	cr_expect_str_eq(after, before, "--no-inject changed the guest");
	free(before);
	free(after);

	/* up again without it: converged by inject, the step printed */
	rc = cli_pv(&cw, &out, "up", "cli2", "-t", "clistatic", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "cli2: inject "), "%s", out);
	cr_expect(strstr(out, "changed: FreeBSD 14.1-RELEASE-p5: /etc/rc.conf"), "%s", out);
	cr_expect(strstr(out, "converged"), "%s", out);
	free(out);
	char *rcconf = NULL;
	cr_assert_eq(guestenv_read(&cw.ge, "/etc/rc.conf", &rcconf), 0);
	cr_expect(strstr(rcconf, "hostname=\"cli2\"\n"), "%s", rcconf);
	free(rcconf);

	/* and again: unchanged, inject included */
	rc = cli_pv(&cw, &out, "--json", "up", "cli2", "-t", "clistatic", NULL);
	cr_assert_eq(rc, 0, "%s", out);
	o = cli_final_json(out);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"guests", "0", "status", NULL}),
			 "unchanged");
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"guests", "0", "inject", "status", NULL}),
			 "unchanged");
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"exit", NULL}), "0");
	json_object_put(o);
	free(out);

	/* a guest whose host key is not the known one: exit 4 at once, naming
	 * the inject step (the bounded wait for SSH is not for this) */
	char *other = strprintf("%s/other_key", cw.ge.sd.etc);
	char *other_pub = strprintf("%s.pub", other);
	cr_assert_eq(test_keygen(other, "ed25519", 0), 0);
	const char *pubs[] = {other_pub, NULL};
	cr_assert_eq(sshd_write_known_hosts(&cw.ge.sd, cw.ge.known_hosts, pubs, false), 0);
	rc = cli_pv(&cw, &out, "--json", "up", "cli2", "-t", "clistatic", NULL);
	cr_expect_eq(rc, 4, "%s", out);
	o = cli_final_json(out);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"result", NULL}), "error");
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"guests", "0", "inject", "failed_step",
							NULL}),
			 "connect");
	const char *err = cli_jpath(o, (const char *const[]){"guests", "0", "error", "message", NULL});
	cr_expect(err && !strncmp(err, "inject: connect: ", 17), "%s", err ? err : out);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"guests", "0", "error", "step", NULL}),
			 "inject");
	json_object_put(o);
	free(out);
	free(other);
	free(other_pub);
	cli_world_stop(&cw);
}
