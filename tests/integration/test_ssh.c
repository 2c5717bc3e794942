/* test_ssh.c - Criterion tests for agent/ssh* against a real OpenSSH sshd
 * (tests/support/sshd.*) chrooted into a busybox tree: exec, quoting of
 * hostile values, host key policies, identities and ssh-agent, SFTP read
 * and atomic write with backup, a guest dying mid-write, timeouts. Each
 * test starts its own sshd on its own 127.0.1.N address. */
#include "ssh.h"
#include "sshd.h"
#include "util.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>


/* The test's sshd and agent: each test runs in its own process, and the
 * suite's fini stops them even when an assertion ends the test early. */
static struct sshd sd;
static struct sshagent ag;

static void cleanup(void)
{
	unsetenv("SSH_AUTH_SOCK");
	sshagent_stop(&ag);
	sshd_stop(&sd);
}

TestSuite(ssh, .fini = cleanup);

/* ---- helpers --------------------------------------------------------------- */

static void start(struct sshd *d, const char *addr, const struct sshd_opts *o)
{
	struct sshd_opts def = {0};
	if (o)
		def = *o;
	def.addr = addr;
	cr_assert_eq(sshd_start(d, &def), 0, "cannot start the test sshd (see stderr)");
}

static char *etc_path(const struct sshd *d, const char *name)
{
	char *p = strprintf("%s/%s", d->etc, name);
	cr_assert_not_null(p);
	return p;
}

/* Options for d with a known_hosts in its scratch dir. */
static struct ssh_opts opts_for(const struct sshd *d, const char *known_hosts)
{
	struct ssh_opts o = {
		.host = d->addr,
		.port = d->port,
		.user = "root",
		.identity = d->identity,
		.known_hosts = known_hosts,
		.policy = SSH_HKP_STRICT,
		.connect_timeout_ms = 10000,
		.op_timeout_ms = 10000,
	};
	return o;
}

/* Connect to d trusting its real host key. */
static struct ssh_session *connect_ok(struct sshd *d, char **kh_out)
{
	char *kh = etc_path(d, "known_hosts");
	cr_assert_eq(sshd_write_known_hosts(d, kh, NULL, false), 0);
	struct ssh_opts o = opts_for(d, kh);
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	int rc = ssh_connect(&o, &s, &e);
	cr_assert_eq(rc, 0, "connect: %s", ssh_error_str(&e));
	cr_assert_not_null(s);
	if (kh_out)
		*kh_out = kh;
	else
		free(kh);
	return s;
}

static void put_host_file(struct sshd *d, const char *guest_path, const char *text,
			  unsigned uid, unsigned gid, mode_t mode)
{
	char *p = sshd_path(d, guest_path);
	cr_assert_not_null(p);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	const char *mk[] = {"mkdir", "-p", p, NULL};
	cr_assert_eq(test_run(mk, NULL, NULL), 0);
	*slash = '/';
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
	size_t n = strlen(text);
	cr_assert_eq(write(fd, text, n), (ssize_t)n);
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(chown(p, uid, gid), 0);
	cr_assert_eq(chmod(p, mode), 0);
	free(p);
}

static char *host_file(struct sshd *d, const char *guest_path, struct stat *st)
{
	char *p = sshd_path(d, guest_path);
	cr_assert_not_null(p);
	char *text = NULL;
	if (read_file(p, &text, NULL) < 0)
		text = NULL;
	if (st && text)
		cr_assert_eq(stat(p, st), 0);
	free(p);
	return text;
}

static int count_temp_files(struct sshd *d, const char *guest_dir)
{
	char *p = sshd_path(d, guest_dir);
	cr_assert_not_null(p);
	char *cmd = strprintf("ls -a %s | grep -c '\\.pvagent\\.tmp\\.' || true", p);
	const char *argv[] = {"sh", "-c", cmd, NULL};
	char *out = NULL;
	cr_assert_eq(test_run(argv, NULL, &out), 0);
	int n = atoi(out);
	free(out);
	free(cmd);
	free(p);
	return n;
}

/* ---- pure functions ----------------------------------------------------------- */

Test(ssh, quote_function)
{
	struct {
		const char *in, *want;
	} cases[] = {
		{"", "''"},
		{"abc", "'abc'"},
		{"it's", "'it'\\''s'"},
		{"'", "''\\'''"},
		{"$(id) `id` \"x\"", "'$(id) `id` \"x\"'"},
		{"a\nb", "'a\nb'"},
		{"-n", "'-n'"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *q = ssh_quote(cases[i].in);
		cr_assert_not_null(q);
		cr_expect_str_eq(q, cases[i].want);
		free(q);
	}
	const char *argv[] = {"printf", "%s", "a b", NULL};
	char *c = ssh_build_argv(argv);
	cr_expect_str_eq(c, "'printf' '%s' 'a b'");
	free(c);
	const char *none[] = {NULL};
	errno = 0;
	cr_expect_null(ssh_build_argv(none));
	cr_expect_eq(errno, EINVAL);

	const char *args[] = {"x y", "it's", NULL};
	c = ssh_build_script("cp -- %s %s && printf '%%d' 1", args);
	cr_expect_str_eq(c, "cp -- 'x y' 'it'\\''s' && printf '%d' 1");
	free(c);
	const char *one[] = {"a", NULL};
	errno = 0;
	cr_expect_null(ssh_build_script("echo %s %s", one)); /* too few args */
	cr_expect_eq(errno, EINVAL);
	cr_expect_null(ssh_build_script("echo", one));       /* too many */
	cr_expect_null(ssh_build_script("printf %d %s", one)); /* stray % */
	cr_expect_null(ssh_build_script("echo %", NULL));
}

Test(ssh, error_kinds_and_outcomes)
{
	struct ssh_error e = {0};
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_DONE);
	enum ssh_err_kind four[] = {SSH_ERR_CONNECT, SSH_ERR_TIMEOUT, SSH_ERR_HOSTKEY_UNKNOWN,
				    SSH_ERR_HOSTKEY_CHANGED, SSH_ERR_AUTH};
	for (size_t i = 0; i < 5; i++) {
		e.kind = four[i];
		cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_UNREACHABLE, "%s", ssh_err_kind_name(four[i]));
	}
	e.kind = SSH_ERR_CONFIG;
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_USAGE);
	e.kind = SSH_ERR_NOENT;
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_FAILED);
	e.kind = SSH_ERR_REMOTE;
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_FAILED);
	cr_expect_str_eq(ssh_err_kind_name(SSH_ERR_HOSTKEY_CHANGED), "hostkey-changed");
	cr_expect_str_eq(ssh_error_str(&e), "remote");
}

/* ---- exec ---------------------------------------------------------------------- */

Test(ssh, exec_status_stdout_stderr_and_cap)
{
	start(&sd, "127.0.1.10", NULL);
	struct ssh_session *s = connect_ok(&sd, NULL);
	struct ssh_result r;
	struct ssh_error e = {0};

	const char *cmd[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
	cr_assert_eq(ssh_exec(s, cmd, &r, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_eq(r.exit_status, 3);
	cr_expect_str_eq(sbuf_str(&r.out), "out\n");
	cr_expect_str_eq(sbuf_str(&r.err), "err\n");
	cr_expect_not(r.truncated);
	cr_expect_null(r.exit_signal);
	ssh_result_free(&r);

	/* The remote shell is busybox inside the chroot. */
	const char *which[] = {"sh", "-c", "readlink /bin/sh; test -e /etc/passwd-real || echo chrooted", NULL};
	cr_assert_eq(ssh_exec(s, which, &r, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_str_eq(sbuf_str(&r.out), "/bin/busybox\nchrooted\n");
	ssh_result_free(&r);

	/* Big output on both streams at once does not deadlock. */
	const char *big[] = {"sh", "-c", "yes o | head -c 3000000; yes e | head -c 3000000 >&2", NULL};
	cr_assert_eq(ssh_exec(s, big, &r, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_eq(r.exit_status, 0);
	cr_expect_eq(r.out.len, (size_t)1 << 20, "stdout capped at the 1 MiB default");
	cr_expect_eq(r.err.len, (size_t)1 << 20);
	cr_expect(r.truncated);
	ssh_result_free(&r);

	/* stdin, and a signal-killed command. */
	struct ssh_exec_opts xo = {.input = "hello\nworld", .input_len = 11};
	cr_assert_eq(ssh_exec_cmdline(s, "cat", &xo, &r, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_str_eq(sbuf_str(&r.out), "hello\nworld");
	ssh_result_free(&r);
	cr_assert_eq(ssh_exec_cmdline(s, "kill -9 $$", NULL, &r, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_eq(r.exit_status, -1);
	cr_expect_str_eq(r.exit_signal ? r.exit_signal : "(none)", "KILL");
	ssh_result_free(&r);
	ssh_close(s);

	/* A small cap from the options. */
	char *kh = etc_path(&sd, "known_hosts");
	struct ssh_opts o = opts_for(&sd, kh);
	o.max_output = 10;
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	const char *yes[] = {"sh", "-c", "yes | head -n 100; echo done >&2", NULL};
	cr_assert_eq(ssh_exec(s, yes, &r, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_str_eq(sbuf_str(&r.out), "y\ny\ny\ny\ny\n");
	cr_expect_str_eq(sbuf_str(&r.err), "done\n");
	cr_expect(r.truncated);
	cr_expect_eq(r.exit_status, 0);
	ssh_result_free(&r);
	ssh_close(s);
	free(kh);
	sshd_stop(&sd);
}

Test(ssh, hostile_values_round_trip)
{
	start(&sd, "127.0.1.11", NULL);
	struct ssh_session *s = connect_ok(&sd, NULL);
	const char *values[] = {
		"$(touch /tmp/pwned)",
		"`touch /tmp/pwned`",
		"'; touch /tmp/pwned; echo '",
		"\"; touch /tmp/pwned; echo \"",
		"it's a \"quote\" \\ backslash",
		"line1\nline2\n",
		"\n",
		"  spaces  and\ttabs ",
		"",
		"-n",
		"--",
		"$HOME ${PATH} $1 $@ * ? [a] ~root",
		"a;b|c&d>e<f(g)h{i}j!k#l",
		"%s %d %%",
		"\x01\x7f\xc3\xa9",
		NULL,
	};
	for (size_t i = 0; values[i]; i++) {
		struct ssh_result r;
		struct ssh_error e = {0};
		const char *argv[] = {"printf", "%s", values[i], NULL};
		cr_assert_eq(ssh_exec(s, argv, &r, &e), 0, "%s", ssh_error_str(&e));
		cr_expect_eq(r.exit_status, 0, "value %zu: %s", i, sbuf_str(&r.err));
		cr_expect_eq(r.out.len, strlen(values[i]), "value %zu", i);
		cr_expect_str_eq(sbuf_str(&r.out), values[i], "value %zu", i);
		ssh_result_free(&r);

		const char *args[] = {values[i], values[i], NULL};
		cr_assert_eq(ssh_exec_script(s, "printf '%%s|' %s; printf %%s %s", args, &r, &e), 0,
			     "%s", ssh_error_str(&e));
		char *want = strprintf("%s|%s", values[i], values[i]);
		cr_expect_str_eq(sbuf_str(&r.out), want, "script value %zu", i);
		free(want);
		ssh_result_free(&r);
	}
	/* Nothing was executed by the values. */
	char *pwned = sshd_path(&sd, "/tmp/pwned");
	cr_expect_neq(access(pwned, F_OK), 0, "a hostile value ran a command");
	free(pwned);
	ssh_close(s);
	sshd_stop(&sd);
}

/* ---- host keys --------------------------------------------------------------------- */

Test(ssh, hostkey_strict_unknown_refused)
{
	start(&sd, "127.0.1.12", NULL);
	char *kh = etc_path(&sd, "known_hosts"); /* does not exist */
	struct ssh_opts o = opts_for(&sd, kh);
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_connect(&o, &s, &e), -1);
	cr_expect_null(s);
	cr_expect_eq(e.kind, SSH_ERR_HOSTKEY_UNKNOWN, "%s", ssh_error_str(&e));
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_UNREACHABLE);
	cr_expect(strstr(ssh_error_str(&e), sd.host_fp) != NULL, "%s", ssh_error_str(&e));
	cr_expect_neq(access(kh, F_OK), 0, "strict must not create known_hosts");
	ssh_error_clear(&e);

	/* An existing file with other hosts only: still unknown. */
	cr_assert_eq(sshd_write_known_hosts(&sd, kh, NULL, false), 0);
	char *text = NULL;
	cr_assert_eq(read_file(kh, &text, NULL), 0);
	char *other = strprintf("# comment\n@cert-authority *.example ssh-ed25519 AAAA\n"
				"127.0.0.99 %s", strchr(text, ' ') + 1);
	int fd = open(kh, O_WRONLY | O_TRUNC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, other, strlen(other)), (ssize_t)strlen(other));
	close(fd);
	cr_assert_eq(ssh_connect(&o, &s, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_HOSTKEY_UNKNOWN, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);
	free(text);
	free(other);
	free(kh);
	sshd_stop(&sd);
}

Test(ssh, hostkey_tofu_records_then_accepts)
{
	start(&sd, "127.0.1.13", NULL);
	char *kh = etc_path(&sd, "sub/known_hosts"); /* neither dir nor file exists */
	struct ssh_opts o = opts_for(&sd, kh);
	o.policy = SSH_HKP_TOFU;
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_str_eq(ssh_session_host_fp(s), sd.host_fp);
	ssh_close(s);
	struct stat st;
	cr_assert_eq(stat(kh, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600);
	char *text = NULL;
	cr_assert_eq(read_file(kh, &text, NULL), 0);
	char *want = sshd_known_line(&sd, sd.host_key_pub);
	char *want_nl = strprintf("%s\n", want);
	cr_expect_str_eq(text, want_nl, "recorded line in OpenSSH format");
	free(want_nl);
	/* OpenSSH itself finds the entry. */
	char *target = strprintf("[%s]:%d", sd.addr, sd.port);
	const char *argv[] = {"ssh-keygen", "-F", target, "-f", kh, NULL};
	char *out = NULL;
	cr_expect_eq(test_run(argv, NULL, &out), 0, "ssh-keygen -F: %s", out);
	free(out);

	/* Now known: strict accepts it, and tofu does not append again. */
	o.policy = SSH_HKP_STRICT;
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	ssh_close(s);
	o.policy = SSH_HKP_TOFU;
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	ssh_close(s);
	char *text2 = NULL;
	cr_assert_eq(read_file(kh, &text2, NULL), 0);
	cr_expect_str_eq(text2, text);
	free(text2);
	free(text);
	free(want);
	free(target);
	free(kh);
	sshd_stop(&sd);
}

static void expect_changed(struct sshd *d, const char *kh, enum ssh_host_key_policy pol,
			   const char *old_fp)
{
	struct ssh_opts o = opts_for(d, kh);
	o.policy = pol;
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_connect(&o, &s, &e), -1, "a changed key must be refused");
	cr_expect_null(s);
	cr_expect_eq(e.kind, SSH_ERR_HOSTKEY_CHANGED, "%s", ssh_error_str(&e));
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_UNREACHABLE);
	cr_expect(strstr(ssh_error_str(&e), old_fp) != NULL, "old fp %s in: %s", old_fp,
		  ssh_error_str(&e));
	cr_expect(strstr(ssh_error_str(&e), d->host_fp) != NULL, "new fp %s in: %s",
		  d->host_fp, ssh_error_str(&e));
	ssh_error_clear(&e);
}

Test(ssh, hostkey_changed_refused_strict_and_tofu)
{
	start(&sd, "127.0.1.14", NULL);
	char *other = etc_path(&sd, "other_host_key");
	cr_assert_eq(test_keygen(other, "ed25519", 0), 0);
	char *other_pub = strprintf("%s.pub", other);
	char *old_fp = test_key_fp(other_pub);
	cr_assert_not_null(old_fp);
	cr_assert_str_neq(old_fp, sd.host_fp);
	char *kh = etc_path(&sd, "known_hosts");
	const char *pubs[] = {other_pub, NULL};
	cr_assert_eq(sshd_write_known_hosts(&sd, kh, pubs, false), 0);
	char *before = NULL;
	cr_assert_eq(read_file(kh, &before, NULL), 0);

	expect_changed(&sd, kh, SSH_HKP_STRICT, old_fp);
	expect_changed(&sd, kh, SSH_HKP_TOFU, old_fp);
	char *after = NULL;
	cr_assert_eq(read_file(kh, &after, NULL), 0);
	cr_expect_str_eq(after, before, "tofu must not touch known_hosts on a changed key");

	/* The same through a hashed entry. */
	cr_assert_eq(sshd_write_known_hosts(&sd, kh, pubs, true), 0);
	expect_changed(&sd, kh, SSH_HKP_TOFU, old_fp);

	/* Known with another key type only (an ECDSA key): also a change. */
	char *ec = etc_path(&sd, "other_ecdsa");
	cr_assert_eq(test_keygen(ec, "ecdsa", 256), 0);
	char *ec_pub = strprintf("%s.pub", ec);
	char *ec_fp = test_key_fp(ec_pub);
	const char *pubs2[] = {ec_pub, NULL};
	cr_assert_eq(sshd_write_known_hosts(&sd, kh, pubs2, false), 0);
	expect_changed(&sd, kh, SSH_HKP_TOFU, ec_fp);

	free(ec);
	free(ec_pub);
	free(ec_fp);
	free(before);
	free(after);
	free(other);
	free(other_pub);
	free(old_fp);
	free(kh);
	sshd_stop(&sd);
}

Test(ssh, hostkey_hashed_entry_accepted)
{
	start(&sd, "127.0.1.15", NULL);
	char *kh = etc_path(&sd, "known_hosts");
	cr_assert_eq(sshd_write_known_hosts(&sd, kh, NULL, true), 0);
	char *text = NULL;
	cr_assert_eq(read_file(kh, &text, NULL), 0);
	cr_expect(strncmp(text, "|1|", 3) == 0, "hashed: %s", text);
	free(text);
	struct ssh_opts o = opts_for(&sd, kh);
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	ssh_close(s);
	free(kh);
	sshd_stop(&sd);
}

Test(ssh, hostkey_type_order_with_ecdsa_server)
{
	struct sshd_opts so = {.ecdsa_host_key = true};
	start(&sd, "127.0.1.16", &so);
	char *kh = etc_path(&sd, "known_hosts");
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	/* Only the ed25519 key is known: libssh2 alone would negotiate ECDSA. */
	cr_assert_eq(sshd_write_known_hosts(&sd, kh, NULL, false), 0);
	struct ssh_opts o = opts_for(&sd, kh);
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_str_eq(ssh_session_host_fp(s), sd.host_fp);
	ssh_close(s);
	/* Only the ECDSA key is known (hashed). */
	const char *pubs[] = {sd.ecdsa_key_pub, NULL};
	cr_assert_eq(sshd_write_known_hosts(&sd, kh, pubs, true), 0);
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	char *ec_fp = test_key_fp(sd.ecdsa_key_pub);
	cr_expect_str_eq(ssh_session_host_fp(s), ec_fp);
	free(ec_fp);
	ssh_close(s);
	/* Unknown host with tofu records the ed25519 key (our preference). */
	unlink(kh);
	o.policy = SSH_HKP_TOFU;
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_str_eq(ssh_session_host_fp(s), sd.host_fp);
	ssh_close(s);
	free(kh);
	sshd_stop(&sd);
}

/* ---- authentication -------------------------------------------------------------------- */

Test(ssh, auth_wrong_identity)
{
	start(&sd, "127.0.1.17", NULL);
	char *kh = etc_path(&sd, "known_hosts");
	cr_assert_eq(sshd_write_known_hosts(&sd, kh, NULL, false), 0);
	char *wrong = etc_path(&sd, "id_wrong");
	cr_assert_eq(test_keygen(wrong, "ed25519", 0), 0);
	struct ssh_opts o = opts_for(&sd, kh);
	o.identity = wrong;
	unsetenv("SSH_AUTH_SOCK");
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_connect(&o, &s, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_AUTH, "%s", ssh_error_str(&e));
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_UNREACHABLE);
	cr_expect(strstr(ssh_error_str(&e), wrong) != NULL, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);

	/* A missing identity file is a configuration error. */
	char *missing = etc_path(&sd, "id_missing");
	o.identity = missing;
	cr_assert_eq(ssh_connect(&o, &s, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_CONFIG, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);
	/* No identity and no agent. */
	o.identity = NULL;
	cr_assert_eq(ssh_connect(&o, &s, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_AUTH, "%s", ssh_error_str(&e));
	cr_expect(strstr(ssh_error_str(&e), "SSH_AUTH_SOCK") != NULL, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);
	free(missing);
	free(wrong);
	free(kh);
	sshd_stop(&sd);
}

/* An RSA key (1024 bits: quick to make, still accepted by OpenSSH 9.2)
 * authorized for root on the running sshd. */
static char *authorize_rsa_key(void)
{
	char *rsa = etc_path(&sd, "id_rsa");
	cr_assert_eq(test_keygen(rsa, "rsa", 1024), 0);
	char *cmd = strprintf("cat %s.pub >> %s/authorized_keys", rsa, sd.etc);
	const char *argv[] = {"sh", "-c", cmd, NULL};
	cr_assert_eq(test_run(argv, NULL, NULL), 0);
	free(cmd);
	return rsa;
}

Test(ssh, auth_rsa_identity_explained)
{
	/* The RSA key is authorized: only its SHA-1 signature is refused. */
	start(&sd, "127.0.1.18", NULL);
	char *rsa = authorize_rsa_key();
	char *kh = etc_path(&sd, "known_hosts");
	cr_assert_eq(sshd_write_known_hosts(&sd, kh, NULL, false), 0);
	struct ssh_opts o = opts_for(&sd, kh);
	o.identity = rsa;
	unsetenv("SSH_AUTH_SOCK");
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_connect(&o, &s, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_AUTH, "%s", ssh_error_str(&e));
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_UNREACHABLE);
	char *want = strprintf("RSA identity %s cannot be used: libssh2 1.10 signs with ssh-rsa "
			       "(SHA-1), which OpenSSH >= 8.8 refuses; use an ed25519 key", rsa);
	cr_expect(strstr(ssh_error_str(&e), want) != NULL, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);
	/* Without the .pub file the type is read from the private key. */
	char *pub = strprintf("%s.pub", rsa);
	cr_assert_eq(unlink(pub), 0);
	cr_assert_eq(ssh_connect(&o, &s, &e), -1);
	cr_expect(strstr(ssh_error_str(&e), want) != NULL, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);
	free(pub);
	free(want);
	free(rsa);
	free(kh);
	sshd_stop(&sd);

	/* Control: a server that still accepts ssh-rsa takes such a key, so
	 * the message names the real cause. */
	struct sshd_opts so = {.extra_config = "PubkeyAcceptedAlgorithms +ssh-rsa"};
	start(&sd, "127.0.1.18", &so);
	rsa = authorize_rsa_key();
	kh = etc_path(&sd, "known_hosts");
	cr_assert_eq(sshd_write_known_hosts(&sd, kh, NULL, false), 0);
	o = opts_for(&sd, kh);
	o.identity = rsa;
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	ssh_close(s);
	free(rsa);
	free(kh);
	sshd_stop(&sd);
}

Test(ssh, auth_ssh_agent)
{
	start(&sd, "127.0.1.19", NULL);
	char *kh = etc_path(&sd, "known_hosts");
	cr_assert_eq(sshd_write_known_hosts(&sd, kh, NULL, false), 0);
	cr_assert_eq(sshagent_start(&ag, sd.etc), 0);
	cr_assert_eq(setenv("SSH_AUTH_SOCK", ag.sock, 1), 0);
	struct ssh_opts o = opts_for(&sd, kh);
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};

	/* Empty agent, no identity: refused, and says so. */
	o.identity = NULL;
	cr_assert_eq(ssh_connect(&o, &s, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_AUTH, "%s", ssh_error_str(&e));
	cr_expect(strstr(ssh_error_str(&e), "ssh-agent") != NULL, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);

	cr_assert_eq(sshagent_add(&ag, sd.identity), 0);
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	ssh_close(s);

	/* A wrong identity file falls back to the agent. */
	char *wrong = etc_path(&sd, "id_wrong");
	cr_assert_eq(test_keygen(wrong, "ed25519", 0), 0);
	o.identity = wrong;
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	struct ssh_result r;
	const char *argv[] = {"echo", "via agent", NULL};
	cr_assert_eq(ssh_exec(s, argv, &r, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_str_eq(sbuf_str(&r.out), "via agent\n");
	ssh_result_free(&r);
	ssh_close(s);

	unsetenv("SSH_AUTH_SOCK");
	sshagent_stop(&ag);
	free(wrong);
	free(kh);
	sshd_stop(&sd);
}

/* ---- files --------------------------------------------------------------------------------- */

Test(ssh, read_file_and_missing)
{
	start(&sd, "127.0.1.20", NULL);
	put_host_file(&sd, "/etc/fstab", "/dev/ada0p2 / ufs rw 1 1\n", 0, 0, 0644);
	struct ssh_session *s = connect_ok(&sd, NULL);
	char *data = NULL;
	size_t len = 0;
	struct ssh_stat st;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_read_file(s, "/etc/fstab", &data, &len, &st, &e), 0, "%s",
		     ssh_error_str(&e));
	cr_expect_str_eq(data, "/dev/ada0p2 / ufs rw 1 1\n");
	cr_expect_eq(len, strlen(data));
	cr_expect_eq(st.mode & 07777, 0644);
	cr_expect(S_ISREG(st.mode));
	free(data);

	cr_assert_eq(ssh_read_file(s, "/etc/no-such-file", &data, &len, NULL, &e), -1);
	cr_expect_null(data);
	cr_expect_eq(e.kind, SSH_ERR_NOENT, "%s", ssh_error_str(&e));
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_FAILED);
	cr_expect(strstr(ssh_error_str(&e), "/etc/no-such-file") != NULL, "%s", ssh_error_str(&e));
	cr_expect(strstr(ssh_error_str(&e), "no such file") != NULL, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);
	cr_assert_eq(ssh_read_file(s, "/etc", &data, &len, NULL, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_REMOTE, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);

	/* The session stays usable after SFTP errors. */
	cr_assert_eq(ssh_stat(s, "/etc/fstab", &st, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_eq(st.size, 25);
	ssh_close(s);
	sshd_stop(&sd);
}

Test(ssh, write_atomic_keeps_owner_mode_and_backup_once)
{
	start(&sd, "127.0.1.21", NULL);
	put_host_file(&sd, "/etc/rc.conf", "ifconfig_em0=\"DHCP\"\n", 1234, 5678, 0640);
	struct ssh_session *s = connect_ok(&sd, NULL);
	struct ssh_error e = {0};
	bool changed = false;
	const char *v2 = "ifconfig_em0=\"DHCP\"\nifconfig_vtnet0=\"DHCP\"\n";
	cr_assert_eq(ssh_write_file_atomic(s, "/etc/rc.conf", v2, strlen(v2), SSH_WRITE_BACKUP,
					   0, &changed, &e), 0, "%s", ssh_error_str(&e));
	cr_expect(changed);
	struct stat st;
	char *text = host_file(&sd, "/etc/rc.conf", &st);
	cr_expect_str_eq(text, v2);
	cr_expect_eq(st.st_uid, 1234);
	cr_expect_eq(st.st_gid, 5678);
	cr_expect_eq(st.st_mode & 07777, 0640);
	free(text);
	text = host_file(&sd, "/etc/rc.conf.pvagent.bak", &st);
	cr_expect_str_eq(text, "ifconfig_em0=\"DHCP\"\n");
	cr_expect_eq(st.st_uid, 1234);
	cr_expect_eq(st.st_gid, 5678);
	cr_expect_eq(st.st_mode & 07777, 0640);
	free(text);

	/* A second change keeps the first backup. */
	const char *v3 = "ifconfig_vtnet0=\"DHCP\"\n";
	cr_assert_eq(ssh_write_file_atomic(s, "/etc/rc.conf", v3, strlen(v3), SSH_WRITE_BACKUP,
					   0, &changed, &e), 0, "%s", ssh_error_str(&e));
	cr_expect(changed);
	text = host_file(&sd, "/etc/rc.conf", NULL);
	cr_expect_str_eq(text, v3);
	free(text);
	text = host_file(&sd, "/etc/rc.conf.pvagent.bak", NULL);
	cr_expect_str_eq(text, "ifconfig_em0=\"DHCP\"\n", "the first backup is kept");
	free(text);

	/* Identical content: nothing written, not even the inode changes. */
	struct stat before, after;
	char *p = sshd_path(&sd, "/etc/rc.conf");
	cr_assert_eq(stat(p, &before), 0);
	cr_assert_eq(ssh_write_file_atomic(s, "/etc/rc.conf", v3, strlen(v3), SSH_WRITE_BACKUP,
					   0, &changed, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_not(changed);
	cr_assert_eq(stat(p, &after), 0);
	cr_expect_eq(before.st_ino, after.st_ino);
	free(p);
	text = host_file(&sd, "/etc/rc.conf.pvagent.bak", NULL);
	cr_expect_str_eq(text, "ifconfig_em0=\"DHCP\"\n");
	free(text);
	cr_expect_eq(count_temp_files(&sd, "/etc"), 0);

	/* A new file: create_mode, no backup; MUST_EXIST refuses. */
	cr_assert_eq(ssh_write_file_atomic(s, "/etc/new.conf", "x\n", 2, SSH_WRITE_BACKUP, 0600,
					   &changed, &e), 0, "%s", ssh_error_str(&e));
	text = host_file(&sd, "/etc/new.conf", &st);
	cr_expect_str_eq(text, "x\n");
	cr_expect_eq(st.st_mode & 07777, 0600);
	free(text);
	text = host_file(&sd, "/etc/new.conf.pvagent.bak", NULL);
	cr_expect_null(text);
	cr_expect_eq(ssh_write_file_atomic(s, "/etc/absent.conf", "x", 1, SSH_WRITE_MUST_EXIST, 0,
					   &changed, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_NOENT, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);

	/* A symlink is followed: the target changes, the link stays. */
	put_host_file(&sd, "/etc/real.conf", "old\n", 0, 0, 0644);
	char *link = sshd_path(&sd, "/etc/link.conf");
	cr_assert_eq(symlink("real.conf", link), 0);
	cr_assert_eq(ssh_write_file_atomic(s, "/etc/link.conf", "new\n", 4, SSH_WRITE_BACKUP, 0,
					   &changed, &e), 0, "%s", ssh_error_str(&e));
	struct stat lst;
	cr_assert_eq(lstat(link, &lst), 0);
	cr_expect(S_ISLNK(lst.st_mode));
	text = host_file(&sd, "/etc/real.conf", NULL);
	cr_expect_str_eq(text, "new\n");
	free(text);
	text = host_file(&sd, "/etc/real.conf.pvagent.bak", NULL);
	cr_expect_str_eq(text, "old\n");
	free(text);
	free(link);
	cr_expect_eq(count_temp_files(&sd, "/etc"), 0);
	ssh_close(s);
	sshd_stop(&sd);
}

/* Write data (1 MiB) over /boot/loader.conf and expect a failure. */
static void big_write_fails(struct ssh_session *s, const char *orig, struct ssh_error *e)
{
	size_t big = 1 << 20;
	char *data = malloc(big);
	cr_assert_not_null(data);
	memset(data, 'v', big);
	bool changed = true;
	int rc = ssh_write_file_atomic(s, "/boot/loader.conf", data, big, SSH_WRITE_BACKUP, 0,
				       &changed, e);
	free(data);
	cr_assert_eq(rc, -1, "the write must fail");
	cr_expect_not(changed);
	cr_log_info("interrupted write: %s: %s", ssh_err_kind_name(e->kind), ssh_error_str(e));
	char *text = host_file(&sd, "/boot/loader.conf", NULL);
	cr_expect_str_eq(text, orig, "the original is intact");
	free(text);
	text = host_file(&sd, "/boot/loader.conf.pvagent.bak", NULL);
	cr_expect_str_eq(text, orig, "the backup was written before");
	free(text);
}

static void next_write_cleans_up(struct ssh_session *s, const char *orig)
{
	const char *v2 = "# loader.conf\nautoboot_delay=\"3\"\nvirtio_load=\"YES\"\n";
	struct ssh_error e = {0};
	bool changed = false;
	cr_assert_eq(ssh_write_file_atomic(s, "/boot/loader.conf", v2, strlen(v2),
					   SSH_WRITE_BACKUP, 0, &changed, &e), 0, "%s",
		     ssh_error_str(&e));
	cr_expect(changed);
	char *text = host_file(&sd, "/boot/loader.conf", NULL);
	cr_expect_str_eq(text, v2);
	free(text);
	text = host_file(&sd, "/boot/loader.conf.pvagent.bak", NULL);
	cr_expect_str_eq(text, orig, "the first backup is kept");
	free(text);
	cr_expect_eq(count_temp_files(&sd, "/boot"), 0);
}

Test(ssh, guest_closes_mid_write_original_intact)
{
	/* The guest's SFTP server sees EOF after 200000 bytes from the
	 * client, in the middle of the 1 MiB transfer, and exits. */
	struct sshd_opts so = {.sftp_cut_after = 200000};
	start(&sd, "127.0.1.22", &so);
	const char *orig = "# loader.conf\nautoboot_delay=\"3\"\n";
	put_host_file(&sd, "/boot/loader.conf", orig, 0, 0, 0644);
	struct ssh_session *s = connect_ok(&sd, NULL);
	struct ssh_error e = {0};
	big_write_fails(s, orig, &e);
	cr_expect_eq(e.kind, SSH_ERR_CONNECT, "%s", ssh_error_str(&e));
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_UNREACHABLE);
	ssh_error_clear(&e);
	/* The server died before anyone could remove the temp file. */
	cr_expect_eq(count_temp_files(&sd, "/boot"), 1);
	/* The next write (same session, a new SFTP channel) removes it. */
	next_write_cleans_up(s, orig);
	ssh_close(s);
	sshd_stop(&sd);
}

Test(ssh, guest_write_error_mid_write_original_intact)
{
	/* A file write beyond 64 KiB fails on the guest (EFBIG, as a full
	 * disk would) in the middle of the transfer. */
	struct sshd_opts so = {.fsize_limit = 65536};
	start(&sd, "127.0.1.26", &so);
	const char *orig = "# loader.conf\nautoboot_delay=\"3\"\n";
	put_host_file(&sd, "/boot/loader.conf", orig, 0, 0, 0644);
	struct ssh_session *s = connect_ok(&sd, NULL);
	struct ssh_error e = {0};
	big_write_fails(s, orig, &e);
	cr_expect_eq(e.kind, SSH_ERR_REMOTE, "%s", ssh_error_str(&e));
	cr_expect_eq(e.sftp_status, 4 /* LIBSSH2_FX_FAILURE */);
	ssh_error_clear(&e);
	/* The session is still usable and removed its temp file at once. */
	cr_expect_eq(count_temp_files(&sd, "/boot"), 0);
	next_write_cleans_up(s, orig);
	ssh_close(s);
	sshd_stop(&sd);
}

/* ---- any tree as the guest's root ----------------------------------------------------------- */

Test(ssh, chroot_into_a_fixture_tree)
{
	const char *guests = getenv("PVAGENT_GUESTS") ? getenv("PVAGENT_GUESTS") : "tests/guests";
	char *root = strprintf("%s/freebsd-10/root", guests);
	char *fstab_src = strprintf("%s/etc/fstab", root);
	char *want = NULL;
	if (read_file(fstab_src, &want, NULL) < 0) {
		free(root);
		free(fstab_src);
		cr_skip_test("no fixture tree in %s (run from the repository root)", guests);
	}
	struct sshd_opts so = {.root = root};
	start(&sd, "127.0.1.27", &so);
	struct ssh_session *s = connect_ok(&sd, NULL);
	struct ssh_error e = {0};
	char *got = NULL;
	size_t len;
	cr_assert_eq(ssh_read_file(s, "/etc/fstab", &got, &len, NULL, &e), 0, "%s",
		     ssh_error_str(&e));
	cr_expect_str_eq(got, want);
	free(got);
	/* The remote shell sees the same tree. */
	struct ssh_result r;
	const char *cat[] = {"cat", "/etc/fstab", NULL};
	cr_assert_eq(ssh_exec(s, cat, &r, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_str_eq(sbuf_str(&r.out), want);
	ssh_result_free(&r);
	/* Writes go to the copy, never to the fixture. */
	cr_assert_eq(ssh_write_file_atomic(s, "/etc/fstab", "x\n", 2, SSH_WRITE_BACKUP, 0, NULL,
					   &e), 0, "%s", ssh_error_str(&e));
	char *after = NULL;
	cr_assert_eq(read_file(fstab_src, &after, NULL), 0);
	cr_expect_str_eq(after, want);
	char *bak = host_file(&sd, "/etc/fstab.pvagent.bak", NULL);
	cr_expect_str_eq(bak, want);
	free(bak);
	free(after);
	ssh_close(s);
	free(want);
	free(root);
	free(fstab_src);
	sshd_stop(&sd);
}

/* ---- connection failures and timeouts --------------------------------------------------------- */

Test(ssh, connection_killed_between_operations)
{
	start(&sd, "127.0.1.23", NULL);
	struct ssh_session *s = connect_ok(&sd, NULL);
	struct ssh_result r;
	struct ssh_error e = {0};
	const char *argv[] = {"true", NULL};
	cr_assert_eq(ssh_exec(s, argv, &r, &e), 0, "%s", ssh_error_str(&e));
	ssh_result_free(&r);
	cr_assert_gt(sshd_kill_sessions(&sd), 0);
	cr_assert_eq(ssh_exec(s, argv, &r, &e), -1);
	cr_expect(e.kind == SSH_ERR_CONNECT, "%s: %s", ssh_err_kind_name(e.kind),
		  ssh_error_str(&e));
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_UNREACHABLE);
	ssh_error_clear(&e);
	char *data = NULL;
	size_t len;
	cr_assert_eq(ssh_read_file(s, "/etc/x", &data, &len, NULL, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_CONNECT, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);
	ssh_close(s);
	sshd_stop(&sd);
}

Test(ssh, exec_timeout)
{
	start(&sd, "127.0.1.24", NULL);
	struct ssh_session *s = connect_ok(&sd, NULL);
	struct ssh_result r;
	struct ssh_error e = {0};
	struct ssh_exec_opts xo = {.timeout_ms = 300};
	cr_assert_eq(ssh_exec_cmdline(s, "sleep 20", &xo, &r, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_TIMEOUT, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);
	const char *argv[] = {"true", NULL};
	cr_expect_eq(ssh_exec(s, argv, &r, &e), -1, "a timed-out session is not reused");
	cr_expect_eq(e.kind, SSH_ERR_TIMEOUT);
	ssh_error_clear(&e);
	ssh_close(s);

	/* Keepalives sent while a command runs do not disturb it. */
	char *kh = etc_path(&sd, "known_hosts");
	struct ssh_opts o = opts_for(&sd, kh);
	o.keepalive_s = 1;
	cr_assert_eq(ssh_connect(&o, &s, &e), 0, "%s", ssh_error_str(&e));
	const char *sl[] = {"sh", "-c", "sleep 2; echo slept", NULL};
	cr_assert_eq(ssh_exec(s, sl, &r, &e), 0, "%s", ssh_error_str(&e));
	cr_expect_str_eq(sbuf_str(&r.out), "slept\n");
	ssh_result_free(&r);
	cr_expect_eq(ssh_keepalive(s, &e), 0, "%s", ssh_error_str(&e));
	ssh_close(s);
	free(kh);
	sshd_stop(&sd);
}

Test(ssh, connect_refused_and_timeout)
{
	/* Refused: a port nobody listens on. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	inet_pton(AF_INET, "127.0.1.25", &sa.sin_addr);
	socklen_t sl = sizeof sa;
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	int port = ntohs(sa.sin_port);
	struct ssh_opts o = {.host = "127.0.1.25", .port = port, .known_hosts = "/nonexistent",
			     .connect_timeout_ms = 2000};
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_connect(&o, &s, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_CONNECT, "%s", ssh_error_str(&e));
	cr_expect_eq(ssh_error_outcome(&e), JOB_OUT_UNREACHABLE);
	ssh_error_clear(&e);
	/* Timeout: a listener that accepts (backlog) but never speaks SSH. */
	cr_assert_eq(listen(fd, 4), 0);
	o.connect_timeout_ms = 300;
	cr_assert_eq(ssh_connect(&o, &s, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_TIMEOUT, "%s", ssh_error_str(&e));
	ssh_error_clear(&e);
	close(fd);
	/* Bad options. */
	struct ssh_opts bad = {.host = "127.0.0.1"};
	cr_assert_eq(ssh_connect(&bad, &s, &e), -1);
	cr_expect_eq(e.kind, SSH_ERR_CONFIG);
	ssh_error_clear(&e);
}
