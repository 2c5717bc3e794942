/* test_conf.c - pvagent.conf: values and defaults, path resolution, secret
 * files (mode 0644 refused), every validation message, the search order,
 * and the shipped example loading with every key documented. Each test
 * works in its own scratch directory (Criterion forks per test, so chdir and
 * setenv stay local). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "util.h"

static char dir[64];
static char repo[4096];

static void setup(void)
{
	cr_assert_not_null(getcwd(repo, sizeof repo));
	strcpy(dir, "/tmp/test_conf.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	unsetenv("PVAGENT_CONF");
	cr_assert_eq(setenv("HOME", dir, 1), 0);
}

static void teardown(void)
{
	char *cmd = NULL;
	cr_assert_gt(asprintf(&cmd, "rm -rf '%s'", dir), 0);
	cr_expect_eq(system(cmd), 0);
	free(cmd);
}

/* Write DIR/name with mode; returns the malloc'd path. */
static char *put(const char *name, const char *text, mode_t mode)
{
	char *p = NULL;
	cr_assert_gt(asprintf(&p, "%s/%s", dir, name), 0);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f, "%s", p);
	cr_assert(fputs(text, f) >= 0);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(p, mode), 0);
	return p;
}

#define PVE_OK                                                   \
	"[pve]\nurl = https://pve1.example.com:8006\n"           \
	"token_id = pvagent@pve!auto\ntoken_secret_file = secret\n"

static const char *const FP =
	"5f:2b:0c:86:7e:41:9a:d3:10:6e:b8:72:f4:19:c1:0a:3d:55:e7:90:2b:6c:44:81:af:03:9e:d2:7b:16:c8:e5";

/* Load text written as DIR/pvagent.conf; on failure returns the message
 * with "DIR/" removed from its front. */
static char *load_err(const char *text)
{
	free(put("secret", "0f1e2d3c-aaaa-bbbb-cccc-000011112222\n", 0600));
	char *p = put("pvagent.conf", text, 0644);
	struct conf c;
	char *err = NULL;
	int rc = conf_load(p, &c, &err);
	free(p);
	if (rc == 0 && c.windows_error) {
		/* a bad [window]: the file loads; the windows' commands refuse */
		err = strdup(c.windows_error);
		conf_free(&c);
		rc = -1;
	}
	cr_assert_eq(rc, -1, "loaded although invalid");
	cr_assert_not_null(err);
	size_t dl = strlen(dir);
	/* strip every "DIR/" */
	struct sbuf b = {0};
	for (const char *s = err; *s;) {
		if (strncmp(s, dir, dl) == 0 && s[dl] == '/')
			s += dl + 1;
		else
			cr_assert_eq(sbuf_addc(&b, *s++), 0);
	}
	free(err);
	return sbuf_steal(&b);
}

static void expect_err(const char *text, const char *want)
{
	char *e = load_err(text);
	cr_expect_str_eq(e, want);
	free(e);
}

Test(conf, full_file_values_and_paths, .init = setup, .fini = teardown)
{
	free(put("secret", "0f1e2d3c-aaaa-bbbb-cccc-000011112222\n", 0600));
	free(put("id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n", 0600));
	char *text = NULL;
	cr_assert_gt(asprintf(&text,
		PVE_OK
		"fingerprint = %s\n"
		"node = pve1\ntimeout = 2m\n\n"
		"[ssh]\nuser = admin\nidentity = id_ed25519\nknown_hosts = ~/kh\n"
		"host_key_policy = tofu\ntimeout = 45\nport = 2222\n\n"
		"[paths]\ntemplates = tmpl:/usr/share/t\nstate = /var/tmp/st\nsocket = run/s.sock\n\n"
		"[daemon]\nworkers = 8\nnode_jobs = 3\nsocket_group = pvagent\nmetrics_file = m.prom\n"
		"max_clients = 16\nkeep_jobs = 30d\nkeep_jobs_max = 500\n\n"
		"[migrate]\nmax_workers = 3\nbwlimit = 100000\nwith_local_disks = no\n"
		"memory_reserve = 2048\nper_target = 3\nprobe_port = 2222\n"
		"target_storage = local-lvm\ntimeout = 2h\n\n"
		"[window \"night\"]\nnode = pve2\ndays = mon-fri\nstart = 02:30\nduration = 90m\n"
		"to = pve1,pve3\nmax_workers = 1\n\n"
		"[window \"weekend\"]\nnode = pve3\ndays = fri-mon\nstart = 23:00\nduration = 1d\n", FP), 0);
	char *p = put("pvagent.conf", text, 0644);
	free(text);
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(p, &c, &err), 0, "%s", err);
	char *want = NULL;

	cr_expect_str_eq(c.path, p);
	cr_expect_str_eq(c.pve.url, "https://pve1.example.com:8006");
	cr_expect_str_eq(c.pve.token_id, "pvagent@pve!auto");
	cr_assert_gt(asprintf(&want, "%s/secret", dir), 0);
	cr_expect_str_eq(c.pve.token_secret_file, want);
	free(want);
	cr_expect_str_eq(c.pve.token_secret, "0f1e2d3c-aaaa-bbbb-cccc-000011112222");
	cr_expect_null(c.pve.user);
	cr_expect_null(c.pve.password);
	cr_expect_str_eq(c.pve.fingerprint,
			 "5F:2B:0C:86:7E:41:9A:D3:10:6E:B8:72:F4:19:C1:0A:3D:55:E7:90:2B:6C:44:81:AF:03:9E:D2:7B:16:C8:E5");
	cr_expect_eq(c.pve.insecure, 0);
	cr_expect_str_eq(c.pve.node, "pve1");
	cr_expect_eq(c.pve.timeout, 120);

	cr_expect_str_eq(c.ssh.user, "admin");
	cr_assert_gt(asprintf(&want, "%s/id_ed25519", dir), 0);
	cr_expect_str_eq(c.ssh.identity, want);
	free(want);
	cr_assert_gt(asprintf(&want, "%s/kh", dir), 0);
	cr_expect_str_eq(c.ssh.known_hosts, want);
	free(want);
	cr_expect_eq(c.ssh.host_key_policy, CONF_HKP_TOFU);
	cr_expect_eq(c.ssh.timeout, 45);
	cr_expect_eq(c.ssh.port, 2222);

	cr_assert_eq(c.paths.n_templates, 2);
	cr_assert_gt(asprintf(&want, "%s/tmpl", dir), 0);
	cr_expect_str_eq(c.paths.templates[0], want);
	free(want);
	cr_expect_str_eq(c.paths.templates[1], "/usr/share/t");
	cr_expect_null(c.paths.templates[2]);
	cr_expect_str_eq(c.paths.state, "/var/tmp/st");
	cr_assert_gt(asprintf(&want, "%s/run/s.sock", dir), 0);
	cr_expect_str_eq(c.paths.socket, want);
	free(want);

	cr_expect_eq(c.daemon.workers, 8);
	cr_expect_eq(c.daemon.node_jobs, 3);
	cr_expect_eq(c.daemon.max_clients, 16);
	cr_expect_eq(c.daemon.keep_jobs, 30u * 86400);
	cr_expect_eq(c.daemon.keep_jobs_max, 500);
	cr_expect(c.daemon.metrics_file && strstr(c.daemon.metrics_file, "/m.prom"));
	cr_expect_str_eq(c.daemon.socket_group, "pvagent");
	cr_expect_eq(c.migrate.max_workers, 3);
	cr_expect_eq(c.migrate.bwlimit, 100000);
	cr_expect_eq(c.migrate.with_local_disks, 0);
	cr_expect_str_eq(c.migrate.target_storage, "local-lvm");
	cr_expect_eq(c.migrate.timeout, 7200);
	cr_expect_eq(c.migrate.memory_reserve, 2048);
	cr_expect_eq(c.migrate.per_target, 3);
	cr_expect_eq(c.migrate.probe_port, 2222);

	cr_assert_eq(c.n_windows, 2);
	const struct conf_window *w = &c.windows[0];
	cr_expect_str_eq(w->name, "night");
	cr_expect_str_eq(w->node, "pve2");
	cr_expect_eq(w->days, 0x3e); /* mon..fri */
	cr_expect_eq(w->start, 150);
	cr_expect_eq(w->duration, 5400);
	cr_assert_eq(w->n_to, 2);
	cr_expect_str_eq(w->to[0], "pve1");
	cr_expect_str_eq(w->to[1], "pve3");
	cr_expect_null(w->to[2]);
	cr_expect_eq(w->max_workers, 1);
	cr_expect_eq(w->line, 41);
	w = &c.windows[1];
	cr_expect_eq(w->days, 0x63); /* fri, sat, sun, mon (wraps) */
	cr_expect_eq(w->duration, 86400);
	cr_expect_eq(w->n_to, 0);
	conf_free(&c);
	free(p);
}

Test(conf, defaults_and_password_auth, .init = setup, .fini = teardown)
{
	free(put("pw", "hunter2", 0400));
	char *p = put("pvagent.conf",
		      "[pve]\nurl = https://10.0.0.1:8006/\nuser = root@pam\npassword_file = pw\n", 0644);
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(p, &c, &err), 0, "%s", err);
	cr_expect_str_eq(c.pve.url, "https://10.0.0.1:8006");
	cr_expect_str_eq(c.pve.user, "root@pam");
	cr_expect_str_eq(c.pve.password, "hunter2");
	cr_expect_null(c.pve.token_id);
	cr_expect_null(c.pve.fingerprint);
	cr_expect_null(c.pve.ca_file);
	cr_expect_null(c.pve.node);
	cr_expect_eq(c.pve.timeout, 30);
	cr_expect_str_eq(c.ssh.user, "root");
	cr_expect_null(c.ssh.identity);
	cr_expect_str_eq(c.ssh.known_hosts, "/var/lib/pvagent/known_hosts");
	cr_expect_eq(c.ssh.host_key_policy, CONF_HKP_STRICT);
	cr_expect_eq(c.ssh.timeout, 30);
	cr_expect_eq(c.ssh.port, 22);
	cr_assert_eq(c.paths.n_templates, 2);
	cr_expect_str_eq(c.paths.templates[0], "./templates");
	cr_expect_str_eq(c.paths.templates[1], "/usr/local/share/pvagent/templates");
	cr_expect_str_eq(c.paths.state, "/var/lib/pvagent");
	cr_expect_str_eq(c.paths.socket, "/run/pvagent/pvagentd.sock");
	cr_expect_eq(c.daemon.workers, 2);
	cr_expect_eq(c.daemon.node_jobs, 2);
	cr_expect_null(c.daemon.metrics_file);
	cr_expect_eq(c.daemon.max_clients, 64);
	cr_expect_eq(c.daemon.keep_jobs, 90u * 86400);
	cr_expect_eq(c.daemon.keep_jobs_max, 10000);
	cr_expect_null(c.daemon.socket_group);
	cr_expect_eq(c.migrate.max_workers, 2);
	cr_expect_eq(c.migrate.bwlimit, 0);
	cr_expect_eq(c.migrate.with_local_disks, 1);
	cr_expect_eq(c.migrate.timeout, 3600);
	cr_expect_eq(c.migrate.memory_reserve, 1024);
	cr_expect_eq(c.migrate.per_target, 2);
	cr_expect_eq(c.migrate.probe_port, 0);
	cr_expect_eq(c.n_windows, 0);
	conf_free(&c);
	free(p);
}

Test(conf, insecure_allows_http, .init = setup, .fini = teardown)
{
	free(put("secret", "s3cret\n", 0600));
	char *p = put("pvagent.conf", PVE_OK "insecure = yes\n", 0644);
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(p, &c, &err), 0, "%s", err);
	cr_expect_eq(c.pve.insecure, 1);
	conf_free(&c);
	free(p);
	p = put("pvagent.conf",
		"[pve]\nurl = http://127.0.0.1:8006\ninsecure = yes\n"
		"token_id = a@pve!b\ntoken_secret_file = secret\n", 0644);
	cr_assert_eq(conf_load(p, &c, &err), 0, "%s", err);
	cr_expect_str_eq(c.pve.url, "http://127.0.0.1:8006");
	conf_free(&c);
	free(p);
}

/* ---- secrets ------------------------------------------------------------ */

Test(secrets, group_readable_secret_refused, .init = setup, .fini = teardown)
{
	free(put("secret", "s3cret\n", 0644));
	char *p = put("pvagent.conf", PVE_OK, 0644);
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(p, &c, &err), -1);
	char *want = NULL;
	cr_assert_gt(asprintf(&want,
		"%s/pvagent.conf:4: [pve] token_secret_file: %s/secret: permissions 0644 are too open "
		"(group or others have access); run: chmod 600 %s/secret", dir, dir, dir), 0);
	cr_expect_str_eq(err, want);
	cr_expect_null(c.pve.url, "conf not zeroed on failure");
	free(want);
	free(err);
	free(p);
}

/* ---- trust and size limits (issue 11) ------------------------------------ */

/* Load DIR/pvagent.conf (already written); the message must be
 * "DIR/pvagent.conf: " + tail. */
static void expect_conf_refused(const char *path, const char *tail)
{
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(path, &c, &err), -1, "%s loaded", path);
	cr_assert_not_null(err);
	char *want = NULL;
	cr_assert_gt(asprintf(&want, "%s: %s", path, tail), 0);
	cr_expect_str_eq(err, want);
	cr_expect_null(c.pve.url);
	free(want);
	free(err);
}

Test(trust, group_writable_config_refused, .init = setup, .fini = teardown)
{
	free(put("secret", "0f1e2d3c-aaaa-bbbb-cccc-000011112222\n", 0600));
	char *p = put("pvagent.conf", PVE_OK, 0664);
	char *tail = NULL;
	cr_assert_gt(asprintf(&tail, "writable by group or others (mode 0664); run: chmod go-w %s", p), 0);
	expect_conf_refused(p, tail);
	free(tail);
	cr_assert_eq(chmod(p, 0602), 0);
	cr_assert_gt(asprintf(&tail, "writable by group or others (mode 0602); run: chmod go-w %s", p), 0);
	expect_conf_refused(p, tail);
	free(tail);
	free(p);
}

Test(trust, config_of_another_user_refused, .init = setup, .fini = teardown)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to chown the file to nobody");
	free(put("secret", "0f1e2d3c-aaaa-bbbb-cccc-000011112222\n", 0600));
	char *p = put("pvagent.conf", PVE_OK, 0644);
	cr_assert_eq(chown(p, 65534, 65534), 0);
	expect_conf_refused(p, "owned by uid 65534, not by you (uid 0) or root");
	free(p);
}

Test(trust, secret_file_symlink_named, .init = setup, .fini = teardown)
{
	free(put("real-secret", "0f1e2d3c-aaaa-bbbb-cccc-000011112222\n", 0600));
	char *link = NULL;
	cr_assert_gt(asprintf(&link, "%s/secret", dir), 0);
	cr_assert_eq(symlink("real-secret", link), 0);
	char *p = put("pvagent.conf", PVE_OK, 0644);
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(p, &c, &err), -1);
	char *want = NULL;
	cr_assert_gt(asprintf(&want, "%s:4: [pve] token_secret_file: %s: is a symbolic link; name "
				     "the file itself, not a link to it", p, link), 0);
	cr_expect_str_eq(err, want);
	free(want);
	free(err);
	free(link);
	free(p);
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(limits, dev_zero_and_big_configs_refused, .init = setup, .fini = teardown)
{
	double t0 = mono();
	/* reads nothing: refused from fstat; the bound is only against a
	 * hang (the old code grew to gigabytes here) */
	expect_conf_refused("/dev/zero", "not a regular file (a character device)");
	cr_expect_lt(mono() - t0, 5.0);
	char *fifo = NULL;
	cr_assert_gt(asprintf(&fifo, "%s/fifo", dir), 0);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	expect_conf_refused(fifo, "not a regular file (a FIFO)");
	free(fifo);
	/* 1 MiB + 1 */
	char *big = malloc(1024 * 1024 + 2);
	cr_assert_not_null(big);
	memset(big, '#', 1024 * 1024 + 1);
	big[1024 * 1024 + 1] = '\0';
	char *p = put("pvagent.conf", big, 0644);
	free(big);
	expect_conf_refused(p, "too large (1048577 bytes; at most 1048576)");
	free(p);
}

Test(messages, empty_config_name_and_openssl_fingerprint, .init = setup, .fini = teardown)
{
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load("", &c, &err), -1);
	cr_expect_str_eq(err, "the configuration file name is empty: give -c the path of a "
			      "pvagent.conf (see man pvagent.conf)");
	free(err);
	free(put("secret", "0f1e2d3c-aaaa-bbbb-cccc-000011112222\n", 0600));
	char *text = NULL;
	cr_assert_gt(asprintf(&text, PVE_OK "fingerprint = sha256 Fingerprint=%s\n", FP), 0);
	char *p = put("pvagent.conf", text, 0644);
	free(text);
	cr_assert_eq(conf_load(p, &c, &err), 0, "%s", err);
	cr_expect_str_eq(c.pve.fingerprint,
			 "5F:2B:0C:86:7E:41:9A:D3:10:6E:B8:72:F4:19:C1:0A:3D:55:E7:90:2B:6C:44:81:AF:03:"
			 "9E:D2:7B:16:C8:E5");
	conf_free(&c);
	free(p);
}

Test(secrets, identity_mode_and_secret_content, .init = setup, .fini = teardown)
{
	free(put("key", "x", 0640));
	free(put("secret", "s3cret\n", 0600));
	char *e = load_err(PVE_OK "[ssh]\nidentity = key\n");
	char *want = NULL;
	cr_assert_gt(asprintf(&want, "pvagent.conf:6: [ssh] identity: key: permissions 0640 are too open "
				     "(group or others have access); run: chmod 600 key"), 0);
	cr_expect_str_eq(e, want);
	free(want);
	free(e);

	free(put("pw", "\n\n", 0600));
	e = load_err("[pve]\nurl = https://h\nuser = root@pam\npassword_file = pw\n");
	cr_expect_str_eq(e, "pvagent.conf:4: [pve] password_file: pw: file is empty");
	free(e);
	free(put("pw", "line1\nline2\n", 0600));
	e = load_err("[pve]\nurl = https://h\nuser = root@pam\npassword_file = pw\n");
	cr_expect_str_eq(e, "pvagent.conf:4: [pve] password_file: pw: must hold one line without control characters");
	free(e);
	e = load_err("[pve]\nurl = https://h\nuser = root@pam\npassword_file = missing\n");
	cr_expect_str_eq(e, "pvagent.conf:4: [pve] password_file: missing: No such file or directory");
	free(e);
}

/* ---- validation messages ------------------------------------------------ */

Test(validate, url, .init = setup, .fini = teardown)
{
	expect_err("[pve]\nurl = http://pve1:8006\ntoken_id = a@pve!b\ntoken_secret_file = secret\n",
		   "pvagent.conf:2: [pve] url: 'http://pve1:8006': must be https:// (plain http:// only with insecure = yes)");
	expect_err("[pve]\nurl = pve1:8006\ntoken_id = a@pve!b\ntoken_secret_file = secret\n",
		   "pvagent.conf:2: [pve] url: 'pve1:8006': must start with https://, e.g. https://pve1.example.com:8006");
	expect_err("[pve]\nurl = https://pve1:99999\ntoken_id = a@pve!b\ntoken_secret_file = secret\n",
		   "pvagent.conf:2: [pve] url: 'https://pve1:99999' is not a valid URL: expected https://HOST[:PORT] with no path");
	expect_err("[pve]\nurl = https://pve1/api2/json\ntoken_id = a@pve!b\ntoken_secret_file = secret\n",
		   "pvagent.conf:2: [pve] url: 'https://pve1/api2/json' is not a valid URL: expected https://HOST[:PORT] with no path");
}

/* [image] mirror: http(s) with a host, kept without its trailing '/' */
Test(validate, image_mirror, .init = setup, .fini = teardown)
{
	const char *want = "is not a mirror URL: expected http(s)://HOST[:PORT][/PATH], without "
			   "query or fragment";
	const char *bad[] = {"ftp://m/x", "http://", "https:///x", "http://m/x?y=1", "http://m/a b"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *text = NULL, *w = NULL;
		cr_assert_gt(asprintf(&text, PVE_OK "[image]\nmirror = %s\n", bad[i]), 0);
		cr_assert_gt(asprintf(&w, "pvagent.conf:6: [image] mirror: '%s' %s", bad[i], want), 0);
		expect_err(text, w);
		free(text);
		free(w);
	}
	free(put("secret", "0f1e2d3c-aaaa-bbbb-cccc-000011112222\n", 0600));
	char *p = put("pvagent.conf", PVE_OK "[image]\nmirror = http://127.0.0.1:8080/images//\n",
		      0644);
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(p, &c, &err), 0, "%s", err);
	cr_expect_str_eq(c.image.mirror, "http://127.0.0.1:8080/images");
	conf_free(&c);
	free(p);
}

Test(validate, fingerprint_and_trust, .init = setup, .fini = teardown)
{
	expect_err(PVE_OK "fingerprint = AB:CD\n",
		   "pvagent.conf:5: [pve] fingerprint: 'AB:CD' is not a SHA-256 fingerprint "
		   "(32 colon-separated hex pairs, as pvenode cert info or openssl x509 -fingerprint -sha256 show it)");
	/* SHA-1 length (20 pairs) */
	expect_err(PVE_OK "fingerprint = 5F:2B:0C:86:7E:41:9A:D3:10:6E:B8:72:F4:19:C1:0A:3D:55:E7:90\n",
		   "pvagent.conf:5: [pve] fingerprint: '5F:2B:0C:86:7E:41:9A:D3:10:6E:B8:72:F4:19:C1:0A:3D:55:E7:90' "
		   "is not a SHA-256 fingerprint (32 colon-separated hex pairs, as "
		   "pvenode cert info or openssl x509 -fingerprint -sha256 show it)");
	expect_err(PVE_OK "insecure = 1\n",
		   "pvagent.conf:5: [pve] insecure: '1': write insecure = yes to turn certificate checks off, or leave it out");
	char *text = NULL;
	cr_assert_gt(asprintf(&text, PVE_OK "fingerprint = %s\ninsecure = yes\n", FP), 0);
	expect_err(text, "pvagent.conf:6: [pve] insecure: insecure = yes contradicts fingerprint; remove one of them");
	free(text);
	expect_err(PVE_OK "ca_file = nope.pem\n",
		   "pvagent.conf:5: [pve] ca_file: nope.pem: No such file or directory");
}

Test(validate, credentials, .init = setup, .fini = teardown)
{
	expect_err("[pve]\nurl = https://h\n",
		   "pvagent.conf:1: [pve]: no credentials: set token_id and token_secret_file, or user and password_file");
	expect_err("[pve]\nurl = https://h\ntoken_id = a@pve!b\n",
		   "pvagent.conf:1: [pve] token_secret_file: missing (token_id is set)");
	expect_err("[pve]\nurl = https://h\ntoken_id = a@pve!b\ntoken_secret_file = secret\nuser = root@pam\n",
		   "pvagent.conf:5: [pve] user: use either token_id and token_secret_file, or user and password_file, not both");
	expect_err("[pve]\nurl = https://h\ntoken_id = pvagent\ntoken_secret_file = secret\n",
		   "pvagent.conf:3: [pve] token_id: 'pvagent' is not a token id (USER@REALM!TOKENNAME)");
	expect_err("[pve]\nurl = https://h\nuser = root\npassword_file = secret\n",
		   "pvagent.conf:3: [pve] user: 'root' is not a PVE user (USER@REALM, e.g. root@pam)");
}

Test(validate, durations_numbers_enums, .init = setup, .fini = teardown)
{
	expect_err(PVE_OK "timeout = 0\n",
		   "pvagent.conf:5: [pve] timeout: '0' is not a duration (a positive number of seconds, or with s, m, h or d)");
	expect_err(PVE_OK "[ssh]\ntimeout = 5x\nhost_key_policy = yolo\n",
		   "pvagent.conf:7: [ssh] host_key_policy: 'yolo': must be strict or tofu\n"
		   "pvagent.conf:6: [ssh] timeout: '5x' is not a duration (a positive number of seconds, or with s, m, h or d)");
	expect_err(PVE_OK "[ssh]\nport = 0\n",
		   "pvagent.conf:6: [ssh] port: '0' is not an integer from 1 to 65535");
	expect_err(PVE_OK "[ssh]\nport = 65536\n",
		   "pvagent.conf:6: [ssh] port: '65536' is not an integer from 1 to 65535");
	expect_err(PVE_OK "[ssh]\nuser = root\nport = 22x\n",
		   "pvagent.conf:7: [ssh] port: '22x' is not an integer from 1 to 65535");
	expect_err(PVE_OK "[ssh]\nport = -1\n",
		   "pvagent.conf:6: [ssh] port: '-1' is not an integer from 1 to 65535");
	expect_err(PVE_OK "[daemon]\nworkers = 0\n",
		   "pvagent.conf:6: [daemon] workers: '0' is not an integer from 1 to 256");
	expect_err(PVE_OK "[daemon]\nworkers = 2\nnode_jobs = x\n",
		   "pvagent.conf:7: [daemon] node_jobs: 'x' is not an integer from 1 to 256");
	expect_err(PVE_OK "[daemon]\nmax_clients = 0\n",
		   "pvagent.conf:6: [daemon] max_clients: '0' is not an integer from 1 to 65536");
	expect_err(PVE_OK "[daemon]\nkeep_jobs = forever\n",
		   "pvagent.conf:6: [daemon] keep_jobs: 'forever' is not a duration (a positive number "
		   "of seconds, or with s, m, h or d)");
	expect_err(PVE_OK "[migrate]\nwith_local_disks = maybe\n",
		   "pvagent.conf:6: [migrate] with_local_disks: 'maybe' is not yes or no");
	expect_err(PVE_OK "[paths]\ntemplates = a::b\n",
		   "pvagent.conf:6: [paths] templates: empty directory in the list (use ':' between directories)");
}

/* One bad [window] stops only the commands that use windows: the file
 * loads, with the error kept in windows_error (the other sections still
 * fail the load). */
Test(validate, bad_window_only_for_windows, .init = setup, .fini = teardown)
{
	free(put("secret", "0f1e2d3c-aaaa-bbbb-cccc-000011112222\n", 0600));
	char *p = put("pvagent.conf", PVE_OK "[window \"w\"]\nnode = pve2\nduration = 1h\n", 0644);
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(p, &c, &err), 0, "%s", err ? err : "");
	cr_assert_not_null(c.windows_error);
	cr_expect(strstr(c.windows_error, "[window \"w\"] schedule: required"), "%s",
		  c.windows_error);
	conf_free(&c);
	free(p);
}

Test(validate, windows, .init = setup, .fini = teardown)
{
	expect_err(PVE_OK "[window \"w\"]\nnode = pve2\nduration = 1h\n",
		   "pvagent.conf:5: [window \"w\"] schedule: required (or days and start)");
	expect_err(PVE_OK "[window \"w\"]\nnode = pve2\nstart = 25:00\nduration = 1h\ndays = someday\n",
		   "pvagent.conf:9: [window \"w\"] days: 'someday': expected daily, or days like mon-fri or sat,sun\n"
		   "pvagent.conf:7: [window \"w\"] start: '25:00': expected HH:MM (24-hour, local time)");
	expect_err(PVE_OK "[window]\nnode = pve2\n",
		   "pvagent.conf:5: [window]: needs a name: [window \"NAME\"]");
}

Test(validate, structure, .init = setup, .fini = teardown)
{
	expect_err(PVE_OK "colour = blue\n[extras]\nx = 1\n",
		   "pvagent.conf:5: [pve] colour: unknown key\n"
		   "pvagent.conf:6: [extras]: unknown section");
	expect_err(PVE_OK "url = https://other\n",
		   "pvagent.conf:5: [pve] url: duplicate key (first at line 2)");
	expect_err("[ssh]\nuser = root\n",
		   "pvagent.conf:2: [pve]: missing required section");
	expect_err("[pve]\nurl\n", "pvagent.conf:2: expected '=' after the key");
}

/* ---- search order ------------------------------------------------------- */

static void write_conf_at(const char *rel, const char *node)
{
	char *text = NULL;
	cr_assert_gt(asprintf(&text, PVE_OK "node = %s\n", node), 0);
	free(put(rel, text, 0644));
	free(text);
}

Test(search, order, .init = setup, .fini = teardown)
{
	free(put("secret", "s\n", 0600));
	cr_assert_eq(chdir(dir), 0);
	struct conf c;
	char *err = NULL;
	/* nothing anywhere (no /etc/pvagent/pvagent.conf on a test machine) */
	if (access("/etc/pvagent/pvagent.conf", F_OK) == 0)
		cr_skip_test("/etc/pvagent/pvagent.conf exists here");
	cr_assert_eq(conf_load(NULL, &c, &err), -2);
	cr_expect_str_eq(err, "no configuration file: tried -c, $PVAGENT_CONF, ./conf/pvagent.conf "
			      "and /etc/pvagent/pvagent.conf; start from conf/pvagent.conf.example "
			      "(man pvagent.conf), or try it against the simulator: make sandbox");
	free(err);

	cr_assert_eq(mkdir("conf", 0700), 0);
	write_conf_at("conf/pvagent.conf", "local");
	write_conf_at("env.conf", "env");
	write_conf_at("explicit.conf", "explicit");
	free(put("conf/secret", "s\n", 0600));

	cr_assert_eq(conf_load(NULL, &c, &err), 0, "%s", err);
	cr_expect_str_eq(c.pve.node, "local");
	cr_expect_str_eq(c.path, "./conf/pvagent.conf");
	conf_free(&c);

	cr_assert_eq(setenv("PVAGENT_CONF", "env.conf", 1), 0);
	cr_assert_eq(conf_load(NULL, &c, &err), 0, "%s", err);
	cr_expect_str_eq(c.pve.node, "env");
	conf_free(&c);

	cr_assert_eq(conf_load("explicit.conf", &c, &err), 0, "%s", err);
	cr_expect_str_eq(c.pve.node, "explicit");
	conf_free(&c);

	cr_assert_eq(setenv("PVAGENT_CONF", "gone.conf", 1), 0);
	cr_assert_eq(conf_load(NULL, &c, &err), -1);
	cr_expect_str_eq(err, "gone.conf: No such file or directory");
	free(err);
}

/* ---- the shipped example ------------------------------------------------ */

Test(example, loads_and_documents_every_key, .init = setup, .fini = teardown)
{
	char *path = NULL, *text = NULL;
	cr_assert_gt(asprintf(&path, "%s/conf/pvagent.conf.example", repo), 0);
	cr_assert_eq(read_file(path, &text, NULL), 0, "%s", path);
	free(path);
	static const char *const keys[] = {
		"url", "token_id", "token_secret_file", "user", "password_file", "fingerprint",
		"ca_file", "insecure", "node", "timeout", "identity", "known_hosts",
		"host_key_policy", "port", "templates", "state", "socket", "workers", "node_jobs",
		"socket_group", "metrics_file", "max_clients", "keep_jobs", "keep_jobs_max",
		"max_workers", "bwlimit", "with_local_disks", "target_storage", "memory_reserve",
		"per_target", "probe_port", "mirror", "schedule", "action", "duration", "to",
	};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		char *a = NULL, *b = NULL;
		cr_assert_gt(asprintf(&a, "\n%s = ", keys[i]), 0);
		cr_assert_gt(asprintf(&b, "\n#%s = ", keys[i]), 0);
		cr_expect(strstr(text, a) || strstr(text, b), "key %s not in the example", keys[i]);
		free(a);
		free(b);
	}
	/* point the secret paths into the scratch directory and load it */
	struct sbuf b = {0};
	const char *from = "/etc/pvagent/token.secret";
	const char *at = strstr(text, from);
	cr_assert_not_null(at);
	cr_assert_eq(sbuf_addn(&b, text, (size_t)(at - text)), 0);
	cr_assert_eq(sbuf_add(&b, "token.secret"), 0);
	cr_assert_eq(sbuf_add(&b, at + strlen(from)), 0);
	free(text);
	free(put("token.secret", "0f1e2d3c-aaaa-bbbb-cccc-000011112222\n", 0600));
	char *sshdir = NULL;
	cr_assert_gt(asprintf(&sshdir, "%s/.ssh", dir), 0);
	cr_assert_eq(mkdir(sshdir, 0700), 0);
	free(sshdir);
	free(put(".ssh/id_ed25519", "key\n", 0600));
	char *p = put("pvagent.conf", sbuf_str(&b), 0644);
	sbuf_free(&b);
	struct conf c;
	char *err = NULL;
	cr_assert_eq(conf_load(p, &c, &err), 0, "%s", err);
	cr_expect_eq(c.ssh.host_key_policy, CONF_HKP_TOFU);
	cr_expect_not_null(c.pve.fingerprint);
	conf_free(&c);
	free(p);
}

/* ---- helpers ------------------------------------------------------------ */

Test(helpers, durations_and_booleans)
{
	unsigned v = 0;
	cr_expect_eq(conf_parse_duration("30", &v), 0);
	cr_expect_eq(v, 30);
	cr_expect_eq(conf_parse_duration("30s", &v), 0);
	cr_expect_eq(v, 30);
	cr_expect_eq(conf_parse_duration("5m", &v), 0);
	cr_expect_eq(v, 300);
	cr_expect_eq(conf_parse_duration("2h", &v), 0);
	cr_expect_eq(v, 7200);
	cr_expect_eq(conf_parse_duration("1d", &v), 0);
	cr_expect_eq(v, 86400);
	cr_expect_eq(conf_parse_duration("0", &v), -1);
	cr_expect_eq(conf_parse_duration("", &v), -1);
	cr_expect_eq(conf_parse_duration("-1", &v), -1);
	cr_expect_eq(conf_parse_duration("1.5h", &v), -1);
	cr_expect_eq(conf_parse_duration("10ms", &v), -1);
	cr_expect_eq(conf_parse_duration("99999999999", &v), -1);
	cr_expect_eq(conf_parse_duration("50000d", &v), -1);
	cr_expect_eq(conf_parse_bool("yes"), 1);
	cr_expect_eq(conf_parse_bool("on"), 1);
	cr_expect_eq(conf_parse_bool("0"), 0);
	cr_expect_eq(conf_parse_bool("false"), 0);
	cr_expect_eq(conf_parse_bool("Yes"), -1);
}

/* Mutated copies of a full configuration: each loads or fails with a
 * message naming the file; no crash, no leak on any error path. */
Test(robust, mutated_configs, .init = setup, .fini = teardown)
{
	free(put("secret", "0f1e2d3c\n", 0600));
	free(put("id", "k\n", 0600));
	char *orig = NULL;
	cr_assert_gt(asprintf(&orig,
		PVE_OK "fingerprint = %s\nnode = pve1\ntimeout = 2m\n"
		"[ssh]\nuser = admin\nidentity = id\nknown_hosts = ~/kh\nhost_key_policy = tofu\ntimeout = 45\n"
		"[paths]\ntemplates = t1:t2\nstate = st\nsocket = s.sock\n"
		"[daemon]\nworkers = 8\nsocket_group = pvagent\n"
		"[migrate]\nmax_workers = 3\nbwlimit = 10\nwith_local_disks = yes\n"
		"target_storage = local-lvm\ntimeout = 2h\n"
		"[window \"n\"]\nnode = pve2\ndays = mon-fri\nstart = 02:30\nduration = 90m\n"
		"to = pve1,pve3\nmax_workers = 1\n", FP), 0);
	static const char alphabet[] = "[]\"=#:,-~/ \n0a9smhd";
	size_t len = strlen(orig);
	unsigned seed = 777;
	int ok = 0, bad = 0;
	for (int round = 0; round < 600; round++) {
		char *text = strdup(orig);
		cr_assert_not_null(text);
		int edits = 1 + rand_r(&seed) % 3;
		for (int e = 0; e < edits; e++)
			text[(size_t)rand_r(&seed) % len] =
				alphabet[rand_r(&seed) % (int)(sizeof alphabet - 1)];
		char *p = put("m.conf", text, 0644);
		free(text);
		struct conf c;
		char *err = NULL;
		if (conf_load(p, &c, &err) == 0) {
			ok++;
			conf_free(&c);
		} else {
			bad++;
			cr_assert_not_null(err);
			cr_assert(strncmp(err, p, strlen(p)) == 0, "%s", err);
			free(err);
		}
		free(p);
	}
	free(orig);
	cr_expect_gt(ok, 0);
	cr_expect_gt(bad, 0);
}
