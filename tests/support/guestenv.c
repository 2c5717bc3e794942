/* guestenv.c - fixture guests behind a real sshd for tests (guestenv.h):
 * start and stop, guest file access, pause/resume, following the PVE
 * simulator's boot model (on request or with the inotify watcher), tree
 * snapshots. */
#include "guestenv.h"

#include "osprof.h"
#include "util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SSHD_BIN "/usr/sbin/sshd"
#define READY_DEADLINE_MS 10000

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *guestenv_path(const struct guestenv *ge, const char *guest_path)
{
	return sshd_path(&ge->sd, guest_path);
}

bool guestenv_exists(const struct guestenv *ge, const char *guest_path)
{
	char *p = guestenv_path(ge, guest_path);
	struct stat st;
	bool r = p && lstat(p, &st) == 0;
	free(p);
	return r;
}

int guestenv_read(const struct guestenv *ge, const char *guest_path, char **text)
{
	*text = NULL;
	char *p = guestenv_path(ge, guest_path);
	int rc = p ? read_file(p, text, NULL) : -1;
	free(p);
	return rc;
}

static int write_host_file(const char *path, const char *text, unsigned mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, (mode_t)mode);
	if (fd < 0) {
		fprintf(stderr, "guestenv: cannot create %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t n = strlen(text);
	int rc = write(fd, text, n) == (ssize_t)n ? 0 : -1;
	if (close(fd) < 0)
		rc = -1;
	if (rc < 0)
		fprintf(stderr, "guestenv: cannot write %s: %s\n", path, strerror(errno));
	return rc;
}

int guestenv_write(const struct guestenv *ge, const char *guest_path, const char *text,
		   unsigned mode)
{
	char *p = guestenv_path(ge, guest_path);
	int rc = p ? write_host_file(p, text, mode) : -1;
	free(p);
	return rc;
}

/* mkdir -p of a guest directory (no fork: cheap under the sanitizers). */
static int mkdir_guest(const struct guestenv *ge, const char *guest_path, unsigned mode)
{
	char *p = guestenv_path(ge, guest_path);
	if (!p)
		return -1;
	size_t skip = strlen(ge->sd.root);
	int rc = 0;
	for (char *q = p + skip + 1; rc == 0; q++) {
		if (*q != '/' && *q != '\0')
			continue;
		char c = *q;
		*q = '\0';
		if (mkdir(p, (mode_t)mode) < 0 && errno != EEXIST) {
			fprintf(stderr, "guestenv: cannot create %s: %s\n", p, strerror(errno));
			rc = -1;
		}
		*q = c;
		if (!c)
			break;
	}
	if (rc == 0 && chmod(p, (mode_t)mode) < 0) {
		fprintf(stderr, "guestenv: cannot chmod %s: %s\n", p, strerror(errno));
		rc = -1;
	}
	free(p);
	return rc;
}

/* Copy every stand-in into the chroot's /bin, replacing busybox links. */
static int install_standins(const struct guestenv *ge, const char *bindir)
{
	DIR *d = opendir(bindir);
	if (!d) {
		fprintf(stderr, "guestenv: cannot open %s: %s\n", bindir, strerror(errno));
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *src = strprintf("%s/%s", bindir, e->d_name);
		char *gp = strprintf("/bin/%s", e->d_name);
		char *dst = gp ? guestenv_path(ge, gp) : NULL;
		if (!src || !dst) {
			rc = -1;
		} else {
			if (unlink(dst) < 0 && errno != ENOENT) {
				fprintf(stderr, "guestenv: cannot replace %s: %s\n", dst,
					strerror(errno));
				rc = -1;
			}
			char *text = NULL;
			if (rc == 0 && read_file(src, &text, NULL) < 0) {
				fprintf(stderr, "guestenv: cannot read %s: %s\n", src, strerror(errno));
				rc = -1;
			}
			if (rc == 0 && (write_host_file(dst, text, 0755) < 0 || chmod(dst, 0755) < 0))
				rc = -1;
			free(text);
		}
		free(src);
		free(gp);
		free(dst);
	}
	closedir(d);
	return rc;
}

static const char ubuntu_hosts[] =
	"127.0.0.1\tlocalhost\n"
	"127.0.1.1\t%s\n"
	"\n"
	"# The following lines are desirable for IPv6 capable hosts\n"
	"::1     ip6-localhost ip6-loopback\n"
	"fe00::0 ip6-localnet\n"
	"ff00::0 ip6-mcastprefix\n"
	"ff02::1 ip6-allnodes\n"
	"ff02::2 ip6-allrouters\n";

/* The files the OS has and the fixture leaves out. */
static int complete_tree(const struct guestenv *ge, const char *facts_text)
{
	struct os_facts f = {0};
	char *err = NULL;
	int rc = -1;
	char *host = NULL, *hosts = NULL;
	if (os_facts_parse("facts", facts_text, &f, &err) < 0) {
		fprintf(stderr, "guestenv: %s\n", err ? err : "cannot parse the facts");
		goto out;
	}
	const char *un = os_facts_get(&f, "uname -sr");
	bool freebsd = un && strncmp(un, "FreeBSD ", 8) == 0;
	const char *osr = os_facts_get(&f, "cat /etc/os-release");
	if (osr && strstr(osr, "ID=") && !strstr(osr, "No such file") &&
	    !guestenv_exists(ge, "/etc/os-release") &&
	    guestenv_write(ge, "/etc/os-release", osr, 0644) < 0)
		goto out;
	if (mkdir_guest(ge, "/boot", 0755) < 0 || mkdir_guest(ge, "/var/tmp", 01777) < 0)
		goto out;
	if (freebsd) {
		if (mkdir_guest(ge, "/boot/kernel", 0755) < 0)
			goto out;
	} else {
		/* "ubuntu-24.04" -> "ubuntu2404" */
		host = calloc(1, strlen(ge->fixture) + 1);
		if (!host)
			goto out;
		for (size_t i = 0, j = 0; ge->fixture[i]; i++)
			if (ge->fixture[i] != '.' && ge->fixture[i] != '-')
				host[j++] = ge->fixture[i];
		char *line = strprintf("%s\n", host);
		hosts = strprintf(ubuntu_hosts, host);
		int bad = !line || !hosts;
		if (!bad && !guestenv_exists(ge, "/etc/hostname"))
			bad = guestenv_write(ge, "/etc/hostname", line, 0644) < 0;
		if (!bad && !guestenv_exists(ge, "/etc/hosts"))
			bad = guestenv_write(ge, "/etc/hosts", hosts, 0644) < 0;
		free(line);
		if (bad)
			goto out;
	}
	rc = 0;
out:
	free(err);
	free(host);
	free(hosts);
	os_facts_free(&f);
	return rc;
}

/* The login shell sshd runs commands with (root's shell from the real
 * passwd): busybox sh runs its own applets before searching PATH, so the
 * stand-ins named like an applet (uname, ip, blkid) are made shell
 * functions calling /bin/NAME before the command line is evaluated. */
static int install_login_shell(const struct guestenv *ge, const char *bindir)
{
	struct passwd *pw = getpwnam("root");
	const char *shell = pw && pw->pw_shell && pw->pw_shell[0] == '/' ? pw->pw_shell : "/bin/sh";
	struct sbuf b = {0};
	int bad = sbuf_add(&b, "#!/bin/busybox sh\n"
			       "# login shell of a pvagent test guest (tests/support/guestenv.c)\n") < 0;
	DIR *d = opendir(bindir);
	if (!d) {
		fprintf(stderr, "guestenv: cannot open %s: %s\n", bindir, strerror(errno));
		sbuf_free(&b);
		return -1;
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && !strpbrk(e->d_name, "-."))
			bad |= sbuf_addf(&b, "%s() { /bin/%s \"$@\"; }\n", e->d_name, e->d_name) < 0;
	closedir(d);
	bad |= sbuf_add(&b, "if [ \"$1\" = -c ] && [ $# -ge 2 ]; then\n"
			    "\teval \"$2\"\n"
			    "\texit\n"
			    "fi\n"
			    "exec /bin/busybox sh \"$@\"\n") < 0;
	char *path = guestenv_path(ge, shell);
	int rc = -1;
	if (!bad && path && (unlink(path) == 0 || errno == ENOENT))
		rc = write_host_file(path, sbuf_str(&b), 0755);
	else
		fprintf(stderr, "guestenv: cannot install the login shell %s\n", path ? path : shell);
	free(path);
	sbuf_free(&b);
	return rc;
}

int guestenv_start(struct guestenv *ge, const struct guestenv_opts *o)
{
	memset(ge, 0, sizeof *ge);
	const char *gdir = o->guests_dir ? o->guests_dir : getenv("PVAGENT_GUESTS");
	if (!gdir)
		gdir = "tests/guests";
	char *root = strprintf("%s/%s/root", gdir, o->fixture);
	char *facts = strprintf("%s/%s/facts", gdir, o->fixture);
	char *bindir = strprintf("%s/bin", gdir);
	char *facts_text = NULL;
	int rc = -1;
	if (!root || !facts || !bindir || !(ge->fixture = strdup(o->fixture)))
		goto out;
	struct stat st;
	if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "guestenv: no fixture tree %s (run from the repository root "
				"or set PVAGENT_GUESTS)\n", root);
		goto out;
	}
	if (read_file(facts, &facts_text, NULL) < 0) {
		fprintf(stderr, "guestenv: cannot read %s: %s\n", facts, strerror(errno));
		goto out;
	}
	struct sshd_opts so = {0};
	if (o->sshd)
		so = *o->sshd;
	so.root = root;
	so.addr = o->addr;
	if (sshd_start(&ge->sd, &so) < 0)
		goto out;
	ge->up = true;
	if (install_standins(ge, bindir) < 0 || install_login_shell(ge, bindir) < 0 ||
	    mkdir_guest(ge, "/.pvagent-facts", 0755) < 0 ||
	    guestenv_write(ge, "/.pvagent-facts/facts", facts_text, 0644) < 0)
		goto out;
	char *fx = strprintf("%s\n", o->fixture);
	int bad = !fx || guestenv_write(ge, "/.pvagent-facts/fixture", fx, 0644) < 0;
	free(fx);
	if (bad || complete_tree(ge, facts_text) < 0)
		goto out;
	ge->known_hosts = strprintf("%s/known_hosts", ge->sd.etc);
	if (!ge->known_hosts || sshd_write_known_hosts(&ge->sd, ge->known_hosts, NULL, false) < 0)
		goto out;
	rc = 0;
out:
	free(root);
	free(facts);
	free(bindir);
	free(facts_text);
	if (rc < 0)
		guestenv_stop(ge);
	return rc;
}

static int watch_end(struct guestenv *ge, bool keep_state);

int guestenv_stop(struct guestenv *ge)
{
	int rc = watch_end(ge, false);
	if (sshd_stop(&ge->sd) < 0)
		rc = -1;
	free(ge->fixture);
	free(ge->known_hosts);
	memset(ge, 0, sizeof *ge);
	return rc;
}

struct ssh_opts guestenv_ssh_opts(const struct guestenv *ge)
{
	struct ssh_opts o = {
		.host = ge->sd.addr,
		.port = ge->sd.port,
		.user = "root",
		.identity = ge->sd.identity,
		.known_hosts = ge->known_hosts,
		.policy = SSH_HKP_STRICT,
		.connect_timeout_ms = 10000,
		.op_timeout_ms = 10000,
	};
	return o;
}

/* ---- down and up ------------------------------------------------------------- */

int guestenv_pause(struct guestenv *ge)
{
	if (!ge->up)
		return 0;
	if (sshd_kill_sessions(&ge->sd) < 0)
		fprintf(stderr, "guestenv: could not list the sshd sessions\n");
	if (ge->sd.pid > 0) {
		if (kill(ge->sd.pid, SIGTERM) < 0 && errno != ESRCH) {
			fprintf(stderr, "guestenv: kill sshd: %s\n", strerror(errno));
			return -1;
		}
		int st;
		while (waitpid(ge->sd.pid, &st, 0) < 0) {
			if (errno != EINTR) {
				fprintf(stderr, "guestenv: waitpid sshd: %s\n", strerror(errno));
				return -1;
			}
		}
		ge->sd.pid = 0;
	}
	ge->up = false;
	return 0;
}

static int port_accepts(const char *addr, int port)
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

/* The same sshd command line as sshd.c: its config, log and port. */
int guestenv_resume(struct guestenv *ge)
{
	if (ge->up)
		return 0;
	if (!ge->sd.config || !ge->sd.log_path) {
		fprintf(stderr, "guestenv: resume without a started guest\n");
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "guestenv: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigset_t none; /* the caller may block SIGTERM for sigwait */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execl(SSHD_BIN, SSHD_BIN, "-D", "-f", ge->sd.config, "-E", ge->sd.log_path,
		      (char *)NULL);
		_exit(127);
	}
	ge->sd.pid = pid;
	long long deadline = mono_ms() + READY_DEADLINE_MS;
	while (mono_ms() < deadline) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			ge->sd.pid = 0;
			fprintf(stderr, "guestenv: sshd exited when resuming on %s:%d (see %s)\n",
				ge->sd.addr, ge->sd.port, ge->sd.log_path);
			return -1;
		}
		if (port_accepts(ge->sd.addr, ge->sd.port) == 0) {
			ge->up = true;
			return 0;
		}
		poll(NULL, 0, 5); /* retry interval of a deadline-bounded wait */
	}
	fprintf(stderr, "guestenv: sshd did not accept on %s:%d within %d ms\n", ge->sd.addr,
		ge->sd.port, READY_DEADLINE_MS);
	return -1;
}

/* ---- simulator boot model ----------------------------------------------------- */

int guestenv_follow(struct guestenv *ge, struct simproc *sp, int vmid)
{
	json_object *st = simproc_state(sp);
	if (!st) {
		fprintf(stderr, "guestenv: no simulator state\n");
		return -1;
	}
	json_object *guests = NULL, *cl = NULL;
	if (json_object_object_get_ex(st, "cluster", &cl))
		json_object_object_get_ex(cl, "guests", &guests);
	else
		json_object_object_get_ex(st, "guests", &guests);
	int reachable = -1;
	size_t n = guests && json_object_is_type(guests, json_type_array)
			   ? json_object_array_length(guests) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		json_object *v = NULL, *boot = NULL, *r = NULL;
		if (!json_object_object_get_ex(g, "vmid", &v) || json_object_get_int(v) != vmid)
			continue;
		reachable = 0;
		if (json_object_object_get_ex(g, "boot", &boot) &&
		    json_object_object_get_ex(boot, "reachable", &r))
			reachable = json_object_get_boolean(r) ? 1 : 0;
	}
	json_object_put(st);
	if (reachable < 0) {
		fprintf(stderr, "guestenv: the simulator has no guest %d\n", vmid);
		return -1;
	}
	int rc = reachable ? guestenv_resume(ge) : guestenv_pause(ge);
	return rc < 0 ? -1 : reachable;
}

/* ---- boot file watcher --------------------------------------------------------- */

struct guestenv_watch {
	pthread_t thread;
	int ifd;          /* inotify on ROOT/.pvagent-facts */
	int stop_fd;      /* eventfd: stop the thread */
	char *boot;       /* host path of /.pvagent-facts/boot */
	bool seen;        /* a boot file was applied */
	bool stopped;     /* ... and it said "state stopped" */
	long boot_id;     /* ... its boot-id (-1: none) */
	bool spawned;     /* the thread started the running sshd */
	bool restart;     /* it took that sshd down when ending */
	bool failed;      /* applying a file failed once */
};

/* Apply the boot file as it is now (absent: nothing to do). */
static int watch_apply(struct guestenv *ge, struct guestenv_watch *w, bool in_thread)
{
	char *text = NULL;
	if (read_file(w->boot, &text, NULL) < 0) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "guestenv: cannot read %s: %s\n", w->boot, strerror(errno));
		return -1;
	}
	bool stopped = false, reachable = false;
	long boot_id = -1;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strcmp(line, "state stopped") == 0)
			stopped = true;
		else if (strcmp(line, "reachable yes") == 0)
			reachable = true;
		else if (strncmp(line, "boot-id ", 8) == 0)
			boot_id = strtol(line + 8, NULL, 10);
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	/* a restart since the last file: the old sessions die */
	bool restarted = w->seen && !stopped &&
			 (w->stopped || (boot_id >= 0 && w->boot_id >= 0 && boot_id != w->boot_id));
	int rc = 0;
	if (!reachable || restarted)
		rc = guestenv_pause(ge);
	if (rc == 0 && reachable && !ge->up) {
		rc = guestenv_resume(ge);
		w->spawned = in_thread && rc == 0;
	}
	w->seen = true;
	w->stopped = stopped;
	if (boot_id >= 0) /* a stopped guest's file has none */
		w->boot_id = boot_id;
	return rc;
}

static void *watch_main(void *arg)
{
	struct guestenv *ge = arg;
	struct guestenv_watch *w = ge->watch;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		struct pollfd p[2] = {{.fd = w->ifd, .events = POLLIN},
				      {.fd = w->stop_fd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "guestenv: watcher poll: %s\n", strerror(errno));
			w->failed = true;
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		ssize_t n = read(w->ifd, buf, sizeof buf);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			fprintf(stderr, "guestenv: watcher read: %s\n", strerror(errno));
			w->failed = true;
			break;
		}
		bool boot = false;
		for (char *q = buf; q < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)q;
			boot |= ev->len && strcmp(ev->name, "boot") == 0;
			q += sizeof *ev + ev->len;
		}
		/* several events at once: the file as it is now (its boot-id
		 * tells a restart this read did not see) */
		if (boot && watch_apply(ge, w, true) < 0)
			w->failed = true;
	}
	/* an sshd forked here gets SIGTERM when this thread ends: take it
	 * down properly now and let the caller start it again */
	if (w->spawned && ge->up) {
		w->restart = true;
		if (guestenv_pause(ge) < 0)
			w->failed = true;
	}
	return NULL;
}

static void watch_free(struct guestenv_watch *w)
{
	if (w->ifd >= 0)
		close(w->ifd);
	if (w->stop_fd >= 0)
		close(w->stop_fd);
	free(w->boot);
	free(w);
}

int guestenv_watch_start(struct guestenv *ge)
{
	if (ge->watch) {
		fprintf(stderr, "guestenv: the watcher already runs\n");
		return -1;
	}
	if (!ge->sd.root) {
		fprintf(stderr, "guestenv: watch without a started guest\n");
		return -1;
	}
	struct guestenv_watch *w = calloc(1, sizeof *w);
	if (!w)
		return -1;
	w->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	w->stop_fd = eventfd(0, EFD_CLOEXEC);
	w->boot_id = -1;
	char *dir = guestenv_path(ge, "/.pvagent-facts");
	w->boot = guestenv_path(ge, "/.pvagent-facts/boot");
	int rc = -1;
	if (w->ifd < 0 || w->stop_fd < 0 || !dir || !w->boot) {
		fprintf(stderr, "guestenv: watcher setup: %s\n", strerror(errno));
	} else if (inotify_add_watch(w->ifd, dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
		fprintf(stderr, "guestenv: cannot watch %s: %s\n", dir, strerror(errno));
	} else if (watch_apply(ge, w, false) == 0) {
		/* changes from here on are events; the first apply ran before
		 * the thread, so a file replaced meanwhile is an event too */
		ge->watch = w;
		int e = pthread_create(&w->thread, NULL, watch_main, ge);
		if (e == 0)
			rc = 0;
		else
			fprintf(stderr, "guestenv: cannot start the watcher: %s\n", strerror(e));
	}
	free(dir);
	if (rc < 0) {
		ge->watch = NULL;
		watch_free(w);
	}
	return rc;
}

static int watch_end(struct guestenv *ge, bool keep_state)
{
	struct guestenv_watch *w = ge->watch;
	if (!w)
		return 0;
	uint64_t one = 1;
	if (write(w->stop_fd, &one, sizeof one) != (ssize_t)sizeof one) {
		/* the thread would go on using ge: keep it, report */
		fprintf(stderr, "guestenv: cannot stop the watcher: %s\n", strerror(errno));
		return -1;
	}
	int e = pthread_join(w->thread, NULL);
	if (e != 0) {
		fprintf(stderr, "guestenv: cannot join the watcher: %s\n", strerror(e));
		return -1;
	}
	int rc = w->failed ? -1 : 0;
	if (keep_state && w->restart && guestenv_resume(ge) < 0)
		rc = -1;
	ge->watch = NULL;
	watch_free(w);
	return rc;
}

int guestenv_watch_stop(struct guestenv *ge)
{
	return watch_end(ge, true);
}

/* ---- snapshot ------------------------------------------------------------------ */

static struct {
	struct sbuf *out;
	size_t skip;     /* length of the root prefix */
	int bad;
} snap;

static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static int snap_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	const char *rel = path + snap.skip;
	if (!*rel)
		return 0;
	static const char *const skip[] = {"/bin", "/dev", "/proc", "/tmp", "/.pvagent-facts",
					   NULL};
	for (size_t i = 0; skip[i]; i++) {
		size_t n = strlen(skip[i]);
		if (strncmp(rel, skip[i], n) == 0 && (rel[n] == '\0' || rel[n] == '/'))
			return type == FTW_D ? FTW_SKIP_SUBTREE : 0;
	}
	char kind = S_ISDIR(st->st_mode) ? 'd' : S_ISLNK(st->st_mode) ? 'l' : S_ISREG(st->st_mode) ? 'f' : '?';
	snap.bad |= sbuf_addf(snap.out, "%s %c %04o %u:%u", rel, kind,
			      (unsigned)(st->st_mode & 07777), (unsigned)st->st_uid,
			      (unsigned)st->st_gid) < 0;
	if (kind == 'f') {
		char *text = NULL;
		size_t len = 0;
		if (read_file(path, &text, &len) < 0) {
			snap.bad = 1;
		} else {
			snap.bad |= sbuf_addf(snap.out, " %zu %016llx", len,
					      (unsigned long long)fnv1a(text, len)) < 0;
			free(text);
		}
	} else if (kind == 'l') {
		char buf[4096];
		ssize_t n = readlink(path, buf, sizeof buf - 1);
		if (n < 0 || (size_t)n >= sizeof buf - 1)
			snap.bad = 1;
		else
			snap.bad |= sbuf_addf(snap.out, " -> %.*s", (int)n, buf) < 0;
	}
	snap.bad |= sbuf_addc(snap.out, '\n') < 0;
	return 0;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *guestenv_snapshot(const struct guestenv *ge)
{
	struct sbuf raw = {0};
	snap.out = &raw;
	snap.skip = strlen(ge->sd.root);
	snap.bad = 0;
	if (nftw(ge->sd.root, snap_one, 32, FTW_PHYS | FTW_ACTIONRETVAL) < 0 || snap.bad) {
		fprintf(stderr, "guestenv: cannot list %s\n", ge->sd.root);
		sbuf_free(&raw);
		return NULL;
	}
	/* sort the lines */
	size_t n = 0;
	for (size_t i = 0; i < raw.len; i++)
		n += raw.s[i] == '\n';
	char **lines = calloc(n ? n : 1, sizeof *lines);
	struct sbuf out = {0};
	char *res = NULL;
	if (!lines)
		goto done;
	size_t k = 0;
	for (char *p = raw.s; p && *p && k < n;) {
		char *nl = strchr(p, '\n');
		*nl = '\0';
		lines[k++] = p;
		p = nl + 1;
	}
	qsort(lines, k, sizeof *lines, cmp_lines);
	int bad = sbuf_add(&out, "") < 0;
	for (size_t i = 0; i < k; i++)
		bad |= sbuf_addf(&out, "%s\n", lines[i]) < 0;
	if (!bad)
		res = sbuf_steal(&out);
done:
	sbuf_free(&out);
	free(lines);
	sbuf_free(&raw);
	return res;
}

char *guestenv_scenario(const struct guestenv *ge, int vmid, const char *config_members)
{
	return strprintf(
		"{\"pve_version\": \"9.1\", \"cluster_name\": \"t\",\n"
		" \"nodes\": [{\"name\": \"pve1\", \"cpus\": 8, \"memory_mib\": 32768, \"online\": true,"
		" \"ip\": \"10.10.0.11\"}],\n"
		" \"storages\": [{\"id\": \"local-lvm\", \"type\": \"lvmthin\", \"shared\": false,"
		" \"nodes\": [\"pve1\"], \"content\": \"images,rootdir\", \"size_gib\": 500}],\n"
		" \"tokens\": [{\"id\": \"root@pam!pvagent\","
		" \"secret\": \"6b1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\", \"privs\": \"all\"}],\n"
		" \"users\": [], \"ha\": [], \"faults\": [],\n"
		" \"guests\": [{\"vmid\": %d, \"node\": \"pve1\", \"type\": \"qemu\","
		" \"status\": \"running\",\n"
		"   \"fixture\": \"%s\", \"address\": \"%s\", \"root\": \"%s\",\n"
		"   \"config\": {%s}}]}\n",
		vmid, ge->fixture, ge->sd.addr, ge->sd.root, config_members);
}
