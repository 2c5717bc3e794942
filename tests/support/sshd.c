/* sshd.c - private OpenSSH sshd in a busybox chroot for tests (sshd.h). */
#include "sshd.h"

#include "util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SSHD_BIN "/usr/sbin/sshd"
#define TEST_BASE "/var/lib/pvagent-test"
#define START_DEADLINE_MS 10000

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Poll interval while waiting for a port or socket to accept. */
static void short_wait(void)
{
	poll(NULL, 0, 5);
}

int test_run(const char *const *argv, const char *const *env, char **out)
{
	int pipefd[2] = {-1, -1};
	if (out) {
		*out = NULL;
		if (pipe2(pipefd, O_CLOEXEC) < 0) {
			fprintf(stderr, "test_run: pipe: %s\n", strerror(errno));
			return -1;
		}
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "test_run: fork: %s\n", strerror(errno));
		if (out) {
			close(pipefd[0]);
			close(pipefd[1]);
		}
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0)
			dup2(devnull, 0);
		if (out) {
			dup2(pipefd[1], 1);
			dup2(pipefd[1], 2);
		}
		for (size_t i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	struct sbuf b = {0};
	if (out) {
		close(pipefd[1]);
		char chunk[4096];
		for (;;) {
			ssize_t n = read(pipefd[0], chunk, sizeof chunk);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			if (sbuf_addn(&b, chunk, (size_t)n) < 0)
				break;
		}
		close(pipefd[0]);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			sbuf_free(&b);
			return -1;
		}
	}
	if (out)
		*out = sbuf_steal(&b);
	else
		sbuf_free(&b);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int test_keygen(const char *path, const char *type, int bits)
{
	char bitstr[16];
	snprintf(bitstr, sizeof bitstr, "%d", bits);
	const char *argv[] = {"ssh-keygen", "-q", "-t", type, "-N", "", "-C", "pvagent-test",
			      "-f", path, bits > 0 ? "-b" : NULL, bitstr, NULL};
	char *out = NULL;
	int rc = test_run(argv, NULL, &out);
	if (rc != 0)
		fprintf(stderr, "ssh-keygen -t %s -f %s failed (%d): %s\n", type, path, rc,
			out ? out : "");
	free(out);
	return rc == 0 ? 0 : -1;
}

char *test_key_fp(const char *pub_path)
{
	const char *argv[] = {"ssh-keygen", "-l", "-E", "sha256", "-f", pub_path, NULL};
	char *out = NULL;
	if (test_run(argv, NULL, &out) != 0) {
		fprintf(stderr, "ssh-keygen -l -f %s failed: %s\n", pub_path, out ? out : "");
		free(out);
		return NULL;
	}
	/* "256 SHA256:xxx comment (ED25519)" */
	char *fp = NULL;
	char *p = strchr(out, ' ');
	if (p) {
		p++;
		size_t n = strcspn(p, " \n");
		fp = strndup(p, n);
	}
	free(out);
	return fp;
}

static char *dir_join(const char *a, const char *b)
{
	return strprintf("%s/%s", a, b);
}

static int write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		fprintf(stderr, "cannot create %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t n = strlen(text);
	int rc = write(fd, text, n) == (ssize_t)n ? 0 : -1;
	if (close(fd) < 0)
		rc = -1;
	if (rc < 0)
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
	return rc;
}

static int append_file(struct sbuf *b, const char *path)
{
	char *text = NULL;
	if (read_file(path, &text, NULL) < 0) {
		fprintf(stderr, "cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	int rc = sbuf_add(b, text);
	if (rc == 0 && (b->len == 0 || b->s[b->len - 1] != '\n'))
		rc = sbuf_addc(b, '\n');
	free(text);
	return rc;
}

static void print_log(const struct sshd *sd)
{
	char *text = NULL;
	if (sd->log_path && read_file(sd->log_path, &text, NULL) == 0)
		fprintf(stderr, "--- sshd log %s ---\n%s------------------\n", sd->log_path, text);
	free(text);
}

static int free_port(const char *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
	socklen_t sl = sizeof sa;
	int port = -1;
	if (inet_pton(AF_INET, addr, &sa.sin_addr) == 1 &&
	    bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static int try_connect(const char *addr, int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int rc = -1;
	if (inet_pton(AF_INET, addr, &sa.sin_addr) == 1)
		rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	close(fd);
	return rc;
}

/* OpenSSH's sftp-server (and the libraries ldd names) in the chroot,
 * behind /bin/sftp-cut: dd (N bytes, unbuffered) | sftp-server. */
static int add_sftp_cut(const struct sshd *sd, long n)
{
	static const char server[] = "/usr/lib/openssh/sftp-server";
	const char *ldd[] = {"ldd", server, NULL};
	char *out = NULL;
	if (test_run(ldd, NULL, &out) != 0) {
		fprintf(stderr, "sshd: ldd %s failed: %s\n", server, out ? out : "");
		free(out);
		return -1;
	}
	int rc = 0;
	const char *cp1[] = {"cp", "-L", "--parents", server, sd->root, NULL};
	if (test_run(cp1, NULL, NULL) != 0)
		rc = -1;
	for (char *line = strtok(out, "\n"); rc == 0 && line; line = strtok(NULL, "\n")) {
		char *path = strchr(line, '/');
		if (!path)
			continue;
		path[strcspn(path, " (")] = '\0';
		const char *cp[] = {"cp", "-L", "--parents", path, sd->root, NULL};
		if (test_run(cp, NULL, NULL) != 0) {
			fprintf(stderr, "sshd: cannot copy %s into the chroot\n", path);
			rc = -1;
		}
	}
	free(out);
	char *script = strprintf("#!/bin/sh\ndd bs=65536 iflag=count_bytes count=%ld 2>/dev/null | %s\n", n, server);
	char *path = dir_join(sd->root, "bin/sftp-cut");
	if (rc == 0 && (!script || !path || write_text(path, script, 0755) < 0))
		rc = -1;
	free(script);
	free(path);
	return rc;
}

/* Copy the chroot tree, add busybox, the user's login shell, /dev/null
 * and /tmp. */
static int make_chroot(const struct sshd *sd, const struct sshd_opts *o)
{
	if (o->root) {
		char *src = strprintf("%s/.", o->root);
		const char *cp[] = {"cp", "-a", src, sd->root, NULL};
		char *out = NULL;
		int rc = src ? test_run(cp, NULL, &out) : -1;
		if (rc != 0)
			fprintf(stderr, "sshd: cannot copy %s into the chroot: %s\n", o->root,
				out ? out : "");
		free(src);
		free(out);
		if (rc != 0)
			return -1;
		/* ChrootDirectory: root-owned, not writable by group or others. */
		if (chown(sd->root, 0, 0) < 0 || chmod(sd->root, 0755) < 0) {
			fprintf(stderr, "sshd: cannot fix %s: %s\n", sd->root, strerror(errno));
			return -1;
		}
	}
	const char *bb = access("/bin/busybox", X_OK) == 0 ? "/bin/busybox"
			 : access("/usr/bin/busybox", X_OK) == 0 ? "/usr/bin/busybox" : NULL;
	if (!bb) {
		fprintf(stderr, "sshd: busybox is not installed (make deps installs "
				"busybox-static)\n");
		return -1;
	}
	char *bin = dir_join(sd->root, "bin");
	char *dst = dir_join(sd->root, "bin/busybox");
	int rc = -1;
	if (!bin || !dst || (mkdir(bin, 0755) < 0 && errno != EEXIST)) {
		fprintf(stderr, "sshd: cannot create %s\n", bin ? bin : "bin");
		goto out;
	}
	const char *cp[] = {"cp", bb, dst, NULL};
	if (test_run(cp, NULL, NULL) != 0) {
		fprintf(stderr, "sshd: cannot copy %s to %s\n", bb, dst);
		goto out;
	}
	/* busybox --install -s /bin inside the chroot, so that the links
	 * point to /bin/busybox there; existing files (stand-ins) stay. */
	pid_t pid = fork();
	if (pid < 0)
		goto out;
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		if (chroot(sd->root) < 0 || chdir("/") < 0)
			_exit(126);
		execl("/bin/busybox", "/bin/busybox", "--install", "-s", "/bin", (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "sshd: busybox does not run inside the chroot %s (it must be "
				"static: make deps installs busybox-static)\n", sd->root);
		goto out;
	}
	char *sh = dir_join(sd->root, "bin/sh");
	int have_sh = sh && access(sh, F_OK) == 0;
	free(sh);
	if (!have_sh) {
		fprintf(stderr, "sshd: no /bin/sh in the chroot after busybox --install\n");
		goto out;
	}
	/* sshd runs commands with root's login shell from the real passwd. */
	struct passwd *pw = getpwnam("root");
	if (pw && pw->pw_shell && pw->pw_shell[0] == '/') {
		char *shell = strprintf("%s%s", sd->root, pw->pw_shell);
		if (shell && access(shell, F_OK) < 0) {
			char *d = strdup(shell);
			char *slash = d ? strrchr(d, '/') : NULL;
			if (slash) {
				*slash = '\0';
				const char *mk[] = {"mkdir", "-p", d, NULL};
				if (test_run(mk, NULL, NULL) != 0)
					fprintf(stderr, "sshd: cannot create %s\n", d);
			}
			free(d);
			if (write_text(shell, "#!/bin/sh\nexec /bin/sh \"$@\"\n", 0755) < 0) {
				free(shell);
				goto out;
			}
		}
		free(shell);
	}
	/* Tools (ls -l, sftp-server) look up uid 0: a minimal passwd/group
	 * unless the tree has its own. */
	static const struct {
		const char *path, *text;
	} ids[] = {
		{"etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"},
		{"etc/group", "root:x:0:\nwheel:x:0:root\n"},
	};
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		char *etc = dir_join(sd->root, "etc");
		char *f = dir_join(sd->root, ids[i].path);
		int ok = etc && f && (mkdir(etc, 0755) == 0 || errno == EEXIST) &&
			 (access(f, F_OK) == 0 || write_text(f, ids[i].text, 0644) == 0);
		free(etc);
		free(f);
		if (!ok) {
			fprintf(stderr, "sshd: cannot create %s in the chroot\n", ids[i].path);
			goto out;
		}
	}
	if (o->sftp_cut_after > 0 && add_sftp_cut(sd, o->sftp_cut_after) < 0)
		goto out;
	char *dev = dir_join(sd->root, "dev");
	char *null = dir_join(sd->root, "dev/null");
	char *tmp = dir_join(sd->root, "tmp");
	if (dev && null && tmp) {
		if (mkdir(dev, 0755) < 0 && errno != EEXIST)
			fprintf(stderr, "sshd: cannot create %s: %s\n", dev, strerror(errno));
		if (access(null, F_OK) < 0 &&
		    (mknod(null, S_IFCHR | 0666, makedev(1, 3)) < 0 || chmod(null, 0666) < 0))
			fprintf(stderr, "sshd: note: no /dev/null in the chroot: %s\n",
				strerror(errno));
		if ((mkdir(tmp, 01777) == 0 || errno == EEXIST) && chmod(tmp, 01777) < 0)
			fprintf(stderr, "sshd: cannot chmod %s\n", tmp);
	}
	free(dev);
	free(null);
	free(tmp);
	rc = 0;
out:
	free(bin);
	free(dst);
	return rc;
}

static int write_config(struct sshd *sd, const struct sshd_opts *o)
{
	struct sbuf c = {0};
	int bad = 0;
	bad |= sbuf_addf(&c,
			 "# private test sshd (tests/support/sshd.c)\n"
			 "Port %d\n"
			 "ListenAddress %s\n"
			 "HostKey %s/ssh_host_ed25519_key\n",
			 sd->port, sd->addr, sd->etc) < 0;
	if (o->ecdsa_host_key)
		bad |= sbuf_addf(&c, "HostKey %s/ssh_host_ecdsa_key\n", sd->etc) < 0;
	bad |= sbuf_addf(&c,
			 "PidFile %s/sshd.pid\n"
			 "AuthorizedKeysFile %s/authorized_keys\n"
			 "StrictModes no\n"
			 "UsePAM no\n"
			 "PermitRootLogin prohibit-password\n"
			 "PubkeyAuthentication yes\n"
			 "PasswordAuthentication no\n"
			 "KbdInteractiveAuthentication no\n"
			 "ChrootDirectory %s\n"
			 "Subsystem sftp %s\n"
			 "AllowTcpForwarding no\n"
			 "X11Forwarding no\n"
			 "PrintMotd no\n"
			 "UseDNS no\n"
			 "MaxStartups 100\n"
			 "LogLevel VERBOSE\n",
			 sd->etc, sd->etc, sd->root,
			 o->sftp_cut_after > 0 ? "/bin/sftp-cut" : "internal-sftp") < 0;
	if (o->extra_config)
		bad |= sbuf_addf(&c, "%s\n", o->extra_config) < 0;
	int rc = bad ? -1 : write_text(sd->config, sbuf_str(&c), 0600);
	sbuf_free(&c);
	return rc;
}

static int make_keys(struct sshd *sd, const struct sshd_opts *o)
{
	char *hk = dir_join(sd->etc, "ssh_host_ed25519_key");
	char *ek = dir_join(sd->etc, "ssh_host_ecdsa_key");
	sd->identity = dir_join(sd->etc, "id_ed25519");
	sd->host_key_pub = dir_join(sd->etc, "ssh_host_ed25519_key.pub");
	char *idpub = dir_join(sd->etc, "id_ed25519.pub");
	char *ak = dir_join(sd->etc, "authorized_keys");
	int rc = -1;
	struct sbuf keys = {0};
	if (!hk || !ek || !sd->identity || !sd->host_key_pub || !idpub || !ak)
		goto out;
	if (test_keygen(hk, "ed25519", 0) < 0 || test_keygen(sd->identity, "ed25519", 0) < 0)
		goto out;
	if (o->ecdsa_host_key) {
		if (test_keygen(ek, "ecdsa", 256) < 0)
			goto out;
		sd->ecdsa_key_pub = strprintf("%s.pub", ek);
		if (!sd->ecdsa_key_pub)
			goto out;
	}
	sd->host_fp = test_key_fp(sd->host_key_pub);
	if (!sd->host_fp || append_file(&keys, idpub) < 0)
		goto out;
	for (size_t i = 0; o->authorized && o->authorized[i]; i++)
		if (append_file(&keys, o->authorized[i]) < 0)
			goto out;
	rc = write_text(ak, sbuf_str(&keys), 0600);
out:
	sbuf_free(&keys);
	free(hk);
	free(ek);
	free(idpub);
	free(ak);
	return rc;
}

static int spawn_sshd(struct sshd *sd, const struct sshd_opts *o)
{
	char *errpath = dir_join(sd->etc, "sshd.stderr");
	if (!errpath)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		free(errpath);
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		int efd = open(errpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (devnull >= 0)
			dup2(devnull, 0);
		if (efd >= 0) {
			dup2(efd, 1);
			dup2(efd, 2);
		}
		/* Die with the test process even if it never calls sshd_stop;
		 * take no blocked signals from a caller waiting in sigwait. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		struct rlimit nocore = {0, 0};
		setrlimit(RLIMIT_CORE, &nocore);
		if (o->fsize_limit > 0) {
			struct rlimit fl = {(rlim_t)o->fsize_limit, (rlim_t)o->fsize_limit};
			setrlimit(RLIMIT_FSIZE, &fl);
		}
		signal(SIGXFSZ, SIG_DFL);
		execl(SSHD_BIN, SSHD_BIN, "-D", "-f", sd->config, "-E", sd->log_path,
		      (char *)NULL);
		_exit(127);
	}
	free(errpath);
	sd->pid = pid;
	return 0;
}

/* Wait until the port accepts; 1 if sshd exited (e.g. port taken). */
static int wait_ready(struct sshd *sd)
{
	long long deadline = mono_ms() + START_DEADLINE_MS;
	while (mono_ms() < deadline) {
		int st;
		pid_t w = waitpid(sd->pid, &st, WNOHANG);
		if (w == sd->pid) {
			sd->pid = 0;
			return 1;
		}
		if (try_connect(sd->addr, sd->port) == 0)
			return 0;
		short_wait();
	}
	fprintf(stderr, "sshd on %s:%d did not accept within %d ms\n", sd->addr, sd->port,
		START_DEADLINE_MS);
	return -1;
}

int sshd_start(struct sshd *sd, const struct sshd_opts *o)
{
	static const struct sshd_opts none = {0};
	memset(sd, 0, sizeof *sd);
	if (!o)
		o = &none;
	if (geteuid() != 0) {
		fprintf(stderr, "sshd: the test sshd needs root (ChrootDirectory)\n");
		return -1;
	}
	if (access(SSHD_BIN, X_OK) < 0) {
		fprintf(stderr, "sshd: %s is not installed (make deps installs openssh-server)\n",
			SSHD_BIN);
		return -1;
	}
	const char *probe[] = {"ssh-keygen", "-?", NULL};
	char *pout = NULL;
	int prc = test_run(probe, NULL, &pout);
	free(pout);
	if (prc == 127) {
		fprintf(stderr, "sshd: ssh-keygen is not installed (make deps installs "
				"openssh-client)\n");
		return -1;
	}
	const char *addr = o->addr ? o->addr : "127.0.0.1";
	if (strncmp(addr, "127.", 4) != 0) {
		fprintf(stderr, "sshd: %s is not a loopback address\n", addr);
		return -1;
	}
	if ((mkdir("/run/sshd", 0755) < 0 && errno != EEXIST) ||
	    (mkdir(TEST_BASE, 0755) < 0 && errno != EEXIST) || chmod(TEST_BASE, 0755) < 0) {
		fprintf(stderr, "sshd: cannot create /run/sshd or %s: %s\n", TEST_BASE,
			strerror(errno));
		return -1;
	}
	char templ[] = TEST_BASE "/XXXXXX";
	if (!mkdtemp(templ) || chmod(templ, 0755) < 0) {
		fprintf(stderr, "sshd: mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	sd->dir = strdup(templ);
	sd->addr = strdup(addr);
	sd->etc = sd->dir ? dir_join(sd->dir, "etc") : NULL;
	sd->root = sd->dir ? dir_join(sd->dir, "root") : NULL;
	sd->config = sd->etc ? dir_join(sd->etc, "sshd_config") : NULL;
	sd->log_path = sd->etc ? dir_join(sd->etc, "sshd.log") : NULL;
	if (!sd->dir || !sd->addr || !sd->etc || !sd->root || !sd->config || !sd->log_path)
		goto bad;
	if (mkdir(sd->etc, 0700) < 0 || mkdir(sd->root, 0755) < 0) {
		fprintf(stderr, "sshd: mkdir in %s: %s\n", sd->dir, strerror(errno));
		goto bad;
	}
	if (make_keys(sd, o) < 0 || make_chroot(sd, o) < 0)
		goto bad;
	if (o->port < 0 || o->port > 65535) {
		fprintf(stderr, "sshd: port %d out of range\n", o->port);
		goto bad;
	}
	/* a given port someone else listens on would look ready at once */
	if (o->port && try_connect(sd->addr, o->port) == 0) {
		fprintf(stderr, "sshd: %s:%d is taken\n", sd->addr, o->port);
		goto bad;
	}
	for (int attempt = 0; attempt < (o->port ? 1 : 8); attempt++) {
		sd->port = o->port ? o->port : free_port(sd->addr);
		if (sd->port <= 0) {
			fprintf(stderr, "sshd: no free port on %s\n", sd->addr);
			goto bad;
		}
		if (write_config(sd, o) < 0 || spawn_sshd(sd, o) < 0)
			goto bad;
		int r = wait_ready(sd);
		if (r == 0)
			return 0;
		if (r < 0)
			goto bad;
		/* sshd exited: retry on another port if it lost the port race. */
		char *log = NULL;
		int taken = read_file(sd->log_path, &log, NULL) == 0 &&
			    strstr(log, "Address already in use");
		free(log);
		if (!taken || o->port) {
			fprintf(stderr, "sshd exited at start%s\n",
				taken ? ": the port is taken" : "");
			goto bad;
		}
	}
bad:
	print_log(sd);
	sshd_stop(sd);
	return -1;
}

/* Every descendant of pid, from /proc. */
static int descendants(pid_t top, pid_t **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	int grew = 1;
	while (grew) {
		grew = 0;
		DIR *d = opendir("/proc");
		if (!d)
			return -1;
		struct dirent *e;
		while ((e = readdir(d))) {
			char *end;
			long pid = strtol(e->d_name, &end, 10);
			if (*end || pid <= 0)
				continue;
			char path[64];
			snprintf(path, sizeof path, "/proc/%ld/stat", pid);
			char *st = NULL;
			if (read_file(path, &st, NULL) < 0)
				continue;
			char *rp = strrchr(st, ')');
			long ppid = -1;
			char state;
			if (!rp || sscanf(rp + 1, " %c %ld", &state, &ppid) != 2)
				ppid = -1;
			free(st);
			int known = 0, parent_ok = ppid == top;
			for (size_t i = 0; i < *n; i++) {
				if ((*out)[i] == pid)
					known = 1;
				if ((*out)[i] == ppid)
					parent_ok = 1;
			}
			if (known || !parent_ok)
				continue;
			if (*n == cap) {
				cap = cap ? cap * 2 : 16;
				pid_t *np = realloc(*out, cap * sizeof *np);
				if (!np) {
					closedir(d);
					return -1;
				}
				*out = np;
			}
			(*out)[(*n)++] = (pid_t)pid;
			grew = 1;
		}
		closedir(d);
	}
	return 0;
}

int sshd_kill_sessions(struct sshd *sd)
{
	if (sd->pid <= 0)
		return 0;
	pid_t *pids = NULL;
	size_t n = 0;
	if (descendants(sd->pid, &pids, &n) < 0) {
		free(pids);
		return -1;
	}
	int killed = 0;
	for (size_t i = 0; i < n; i++)
		if (kill(pids[i], SIGKILL) == 0)
			killed++;
	free(pids);
	return killed;
}

int sshd_stop(struct sshd *sd)
{
	int rc = 0;
	if (sd->pid > 0) {
		sshd_kill_sessions(sd);
		if (kill(sd->pid, SIGTERM) < 0)
			rc = -1;
		int st;
		while (waitpid(sd->pid, &st, 0) < 0 && errno == EINTR)
			;
		sd->pid = 0;
	}
	if (sd->dir && strncmp(sd->dir, TEST_BASE "/", sizeof TEST_BASE) == 0) {
		const char *rm[] = {"rm", "-rf", "--one-file-system", sd->dir, NULL};
		if (test_run(rm, NULL, NULL) != 0) {
			fprintf(stderr, "sshd: cannot remove %s\n", sd->dir);
			rc = -1;
		}
	}
	free(sd->dir);
	free(sd->root);
	free(sd->addr);
	free(sd->config);
	free(sd->log_path);
	free(sd->host_key_pub);
	free(sd->host_fp);
	free(sd->ecdsa_key_pub);
	free(sd->identity);
	free(sd->etc);
	memset(sd, 0, sizeof *sd);
	return rc;
}

char *sshd_path(const struct sshd *sd, const char *guest_path)
{
	return strprintf("%s%s%s", sd->root, guest_path[0] == '/' ? "" : "/", guest_path);
}

char *sshd_known_line(const struct sshd *sd, const char *pub_path)
{
	char *text = NULL;
	if (read_file(pub_path, &text, NULL) < 0) {
		fprintf(stderr, "cannot read %s: %s\n", pub_path, strerror(errno));
		return NULL;
	}
	/* "TYPE BASE64 comment" -> "TYPE BASE64" */
	char *sp = strchr(text, ' ');
	char *sp2 = sp ? strpbrk(sp + 1, " \n") : NULL;
	if (sp2)
		*sp2 = '\0';
	char *line = strprintf("[%s]:%d %s", sd->addr, sd->port, text);
	free(text);
	return line;
}

int sshd_write_known_hosts(const struct sshd *sd, const char *path, const char *const *pubs,
			   bool hashed)
{
	const char *def[] = {sd->host_key_pub, NULL};
	if (!pubs)
		pubs = def;
	struct sbuf b = {0};
	for (size_t i = 0; pubs[i]; i++) {
		char *line = sshd_known_line(sd, pubs[i]);
		if (!line || sbuf_addf(&b, "%s\n", line) < 0) {
			free(line);
			sbuf_free(&b);
			return -1;
		}
		free(line);
	}
	int rc = write_text(path, sbuf_str(&b), 0600);
	sbuf_free(&b);
	if (rc == 0 && hashed) {
		const char *argv[] = {"ssh-keygen", "-H", "-f", path, NULL};
		char *out = NULL;
		if (test_run(argv, NULL, &out) != 0) {
			fprintf(stderr, "ssh-keygen -H failed: %s\n", out ? out : "");
			rc = -1;
		}
		free(out);
		char *old = strprintf("%s.old", path);
		if (old)
			unlink(old);
		free(old);
	}
	return rc;
}

/* ---- ssh-agent ---------------------------------------------------------------- */

static int unix_connect(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		close(fd);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	close(fd);
	return rc;
}

int sshagent_start(struct sshagent *a, const char *dir)
{
	memset(a, 0, sizeof *a);
	a->sock = dir_join(dir, "agent.sock");
	if (!a->sock)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execlp("ssh-agent", "ssh-agent", "-D", "-a", a->sock, (char *)NULL);
		_exit(127);
	}
	a->pid = pid;
	long long deadline = mono_ms() + START_DEADLINE_MS;
	while (mono_ms() < deadline) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			a->pid = 0;
			fprintf(stderr, "ssh-agent exited at start (is openssh-client installed?)\n");
			sshagent_stop(a);
			return -1;
		}
		if (unix_connect(a->sock) == 0)
			return 0;
		short_wait();
	}
	fprintf(stderr, "ssh-agent did not listen on %s\n", a->sock);
	sshagent_stop(a);
	return -1;
}

int sshagent_add(struct sshagent *a, const char *key_path)
{
	char *env = strprintf("SSH_AUTH_SOCK=%s", a->sock);
	const char *e[] = {env, NULL};
	const char *argv[] = {"ssh-add", "-q", key_path, NULL};
	char *out = NULL;
	int rc = env ? test_run(argv, e, &out) : -1;
	if (rc != 0)
		fprintf(stderr, "ssh-add %s failed (%d): %s\n", key_path, rc, out ? out : "");
	free(out);
	free(env);
	return rc == 0 ? 0 : -1;
}

int sshagent_stop(struct sshagent *a)
{
	if (a->pid > 0) {
		kill(a->pid, SIGTERM);
		int st;
		while (waitpid(a->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	if (a->sock)
		unlink(a->sock);
	free(a->sock);
	memset(a, 0, sizeof *a);
	return 0;
}
