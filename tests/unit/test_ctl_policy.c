/* test_ctl_policy.c - the peer policy's client side, walked over the two
 * tables: the command table (cli_commands: CMD_READONLY) and pvagentd's
 * request table (ctl.c: CTL_READ, CTL_SUBMIT, CTL_OWNER). Every command
 * is declared read-only or says what it changes; a read-only command
 * sends pvagentd only CTL_READ requests (cli_daemon_call refuses the
 * others unsent), and every request that is not CTL_READ is sent by some
 * command that is not read-only; and cli_daemon_call is the CLI's only
 * way to send one. No daemon: the client's end is one side of a
 * socketpair. */
#include "cli.h"
#include "ctl.h"
#include "ctl_client.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The commands that change something without being a job command
 * (CMD_JOBS) or resume (CMD_RESUME), and what: one added without
 * CMD_READONLY must be said here. */
static const char *const changers[][2] = {
	{"cancel", "sends pvagentd cancel, or records the job cancelled in the store"},
	{"jobs", "--prune deletes finished jobs from the store"},
	{"setup", "makes PVE's role, user, token and ACLs and writes the configuration"},
	{"ssh", "runs a shell or a command in a guest"},
};

static const char *changer(const char *name)
{
	for (size_t i = 0; i < sizeof changers / sizeof *changers; i++)
		if (strcmp(changers[i][0], name) == 0)
			return changers[i][1];
	return NULL;
}

Test(ctl_policy, every_command_is_read_only_or_says_what_it_changes)
{
	size_t n_ro = 0;
	for (const struct cmd_entry *const *c = cli_commands(); *c; c++) {
		const struct cmd_entry *e = *c;
		bool ro = e->flags & CMD_READONLY, job = e->flags & (CMD_JOBS | CMD_RESUME);
		if (ro) {
			cr_assert(!job && !e->wf, "%s: read-only, yet it makes or resumes jobs", e->name);
			cr_assert_null(changer(e->name), "%s: read-only, yet it %s", e->name,
				       changer(e->name));
			n_ro++;
		} else {
			cr_assert(job || changer(e->name),
				  "%s changes nothing it says: flag it CMD_READONLY, or say here what "
				  "it changes", e->name);
		}
	}
	cr_assert_geq(n_ro, 1);
	cr_assert_eq(cli_find_command("report")->flags & CMD_READONLY, CMD_READONLY);
	cr_assert_eq(cli_find_command("cancel")->flags & CMD_READONLY, 0);
}

/* Every request that is not CTL_READ is one a command that is not
 * read-only sends: submit (the job commands), resume, cancel. */
Test(ctl_policy, every_request_that_changes_is_sent_by_a_command_that_does)
{
	for (int op = 0; op < CTL_OP__COUNT; op++) {
		const struct ctl_op_def *def = ctl_op_def((enum ctl_op)op);
		cr_assert_not_null(def);
		if (def->flags & CTL_READ)
			continue;
		bool sent = false;
		for (const struct cmd_entry *const *c = cli_commands(); *c && !sent; c++) {
			const struct cmd_entry *e = *c;
			if (e->flags & CMD_READONLY)
				continue;
			sent = ((def->flags & CTL_SUBMIT) && (e->flags & CMD_JOBS)) ||
			       (op == CTL_OP_RESUME && (e->flags & CMD_RESUME)) ||
			       strcmp(e->name, def->name) == 0;
		}
		cr_assert(sent, "no command that changes something sends '%s'", def->name);
	}
}

/* Bytes waiting on fd now (0: none). */
static size_t waiting(int fd, char *buf, size_t n)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 0) != 1)
		return 0;
	ssize_t r = recv(fd, buf, n - 1, MSG_DONTWAIT);
	cr_assert_geq(r, 0, "%s", strerror(errno));
	buf[r] = '\0';
	return (size_t)r;
}

/* Through cli_daemon_call as command name: op's request. 1 sent (and
 * answered), -1 refused (*err); *line what reached the daemon's end. */
static int send_as(const char *name, enum ctl_op op, char **err, char *line, size_t n)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct ctl_client c = {.fd = sv[0]};
	struct cli cli = {.cmd = cli_find_command(name)};
	cr_assert_not_null(cli.cmd, "%s", name);
	/* the answer is there before it is asked for: the call never waits */
	const char *ans_line = "{\"id\":1,\"ok\":true}\n";
	cr_assert_eq(write(sv[1], ans_line, strlen(ans_line)), (ssize_t)strlen(ans_line));
	json_object *req = cli_daemon_request(op), *ans = NULL;
	cr_assert_not_null(req);
	*err = NULL;
	int r = cli_daemon_call(&cli, &c, req, &ans, err);
	line[0] = '\0';
	(void)waiting(sv[1], line, n);
	json_object_put(req);
	json_object_put(ans);
	ctl_client_close(&c);
	close(sv[1]);
	return r;
}

Test(ctl_policy, a_read_only_command_sends_only_read_requests)
{
	char line[512];
	for (const struct cmd_entry *const *c = cli_commands(); *c; c++) {
		if (!((*c)->flags & CMD_READONLY))
			continue;
		for (int op = 0; op < CTL_OP__COUNT; op++) {
			const struct ctl_op_def *def = ctl_op_def((enum ctl_op)op);
			char *err = NULL;
			int r = send_as((*c)->name, (enum ctl_op)op, &err, line, sizeof line);
			char *want = strprintf("\"op\":\"%s\"", def->name);
			if (def->flags & CTL_READ) {
				cr_assert_eq(r, 1, "%s: %s: %s", (*c)->name, def->name, err);
				cr_assert(strstr(line, want), "%s: %s not sent: %s", (*c)->name,
					  def->name, line);
			} else {
				cr_assert_eq(r, -1, "%s sent %s", (*c)->name, def->name);
				cr_assert(err && strstr(err, "changes nothing"), "%s", err);
				cr_assert_str_eq(line, "", "%s: %s reached the daemon", (*c)->name,
						 def->name);
			}
			free(want);
			free(err);
		}
	}
}

Test(ctl_policy, a_command_that_changes_sends_what_it_needs)
{
	char line[512], *err = NULL;
	cr_assert_eq(send_as("cancel", CTL_OP_CANCEL, &err, line, sizeof line), 1, "%s", err);
	cr_assert(strstr(line, "\"op\":\"cancel\""), "%s", line);
	cr_assert_eq(send_as("resume", CTL_OP_RESUME, &err, line, sizeof line), 1, "%s", err);
	cr_assert(strstr(line, "\"op\":\"resume\""), "%s", line);
	cr_assert_eq(send_as("up", CTL_OP_SUBMIT, &err, line, sizeof line), 1, "%s", err);
	cr_assert(strstr(line, "\"op\":\"submit\""), "%s", line);
}

Test(ctl_policy, a_request_of_no_known_op_is_never_sent)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct ctl_client c = {.fd = sv[0]};
	struct cli cli = {.cmd = cli_find_command("cancel")};
	json_object *req = json_tokener_parse("{\"id\":1,\"op\":\"reboot\"}"), *ans = NULL;
	char *err = NULL, line[64];
	cr_assert_eq(cli_daemon_call(&cli, &c, req, &ans, &err), -1);
	cr_assert(err && strstr(err, "op 'reboot'"), "%s", err);
	cr_assert_eq(waiting(sv[1], line, sizeof line), 0);
	free(err);
	json_object_put(req);
	ctl_client_close(&c);
	close(sv[1]);
}

/* No file of the CLI but ctl_client.c (the socket's end) and
 * cli_daemon.c (in cli_daemon_call, once) sends a request itself: a
 * read-only command cannot go around the check. Run from the tree. */
Test(ctl_policy, only_cli_daemon_call_sends_requests)
{
	DIR *dir = opendir("agent/cli");
	cr_assert_not_null(dir, "agent/cli (run from the tree)");
	size_t calls = 0;
	for (struct dirent *de; (de = readdir(dir));) {
		size_t n = strlen(de->d_name);
		if (n < 3 || strcmp(de->d_name + n - 2, ".c") != 0 ||
		    strcmp(de->d_name, "ctl_client.c") == 0)
			continue;
		char *path = strprintf("agent/cli/%s", de->d_name), *text = NULL;
		cr_assert_eq(read_file(path, &text, NULL), 0, "%s", path);
		for (const char *p = text; (p = strstr(p, "ctl_client_")); p++) {
			bool sends = strncmp(p, "ctl_client_call(", 16) == 0 ||
				     strncmp(p, "ctl_client_send(", 16) == 0;
			cr_assert(!sends || strcmp(de->d_name, "cli_daemon.c") == 0,
				  "%s sends a request itself: use cli_daemon_call", path);
			calls += sends;
		}
		free(text);
		free(path);
	}
	closedir(dir);
	cr_assert_eq(calls, 1, "cli_daemon.c: one ctl_client_call, in cli_daemon_call");
}
