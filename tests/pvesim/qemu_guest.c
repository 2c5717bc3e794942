/* qemu_guest.c - scenario guests that run as real QEMU (TCG) processes
 * (qemu_guest.h, tests/README.md "Lab"): the command line from the PVE config as
 * qemu-server builds it (drives per bus with scsihw, net0 model and MAC,
 * boot order, memory, cores, the agent's virtio-serial port), the qcow2
 * overlay that is the guest's disk, the process's life (start, ACPI
 * shutdown through QMP, kill, reaping) and the guest agent's socket. */
#include "qemu_guest.h"

#include "cluster.h"
#include "scenario.h"
#include "tasks.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define QEMU_BIN "qemu-system-x86_64"
#define QEMU_IMG "qemu-img"
#define AGENT_WAIT_MS 3000
#define QMP_WAIT_MS 3000
#define KILL_WAIT_MS 5000

struct qemu_guest {
	char *image, *format; /* what the overlay is made on */
	char *dir;            /* overlay, sockets, logs; NULL until first needed */
	char *volid;          /* the config's volume that is this disk */
	unsigned ssh_port;
	pid_t pid;            /* 0: not running */
	unsigned agent_seq;
};

struct qemu_guest *qemu_guest_new(const char *image, const char *format)
{
	struct qemu_guest *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->image = strdup(image);
	q->format = strdup(format ? format : "raw");
	q->ssh_port = 22;
	if (!q->image || !q->format) {
		qemu_guest_free(q);
		return NULL;
	}
	return q;
}

static const char *const run_files[] = {"disk.qcow2", "qmp.sock", "qga.sock", "console.log",
					"qemu.log", NULL};

void qemu_guest_free(struct qemu_guest *q)
{
	if (!q)
		return;
	qemu_guest_kill(q);
	if (q->dir) {
		for (size_t i = 0; run_files[i]; i++) {
			char *p = strprintf("%s/%s", q->dir, run_files[i]);
			if (p && unlink(p) < 0 && errno != ENOENT)
				fprintf(stderr, "pvesim: cannot remove %s: %s\n", p, strerror(errno));
			free(p);
		}
		if (rmdir(q->dir) < 0)
			fprintf(stderr, "pvesim: cannot remove %s: %s\n", q->dir, strerror(errno));
	}
	free(q->image);
	free(q->format);
	free(q->dir);
	free(q->volid);
	free(q);
}

/* ---- processes ------------------------------------------------------------------ */

/* In a child: stdin from /dev/null, stdout and stderr appended to log. */
static void child_stdio(const char *log)
{
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && in >= 0) {
		dup2(in, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
}

/* Run argv to its end with output to log (appended); 0 when it exits 0. */
static int run_wait(char *const argv[], const char *log, char **err)
{
	pid_t pid = fork();
	if (pid < 0) {
		err_setf(err, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		child_stdio(log);
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			err_setf(err, "waitpid: %s", strerror(errno));
			return -1;
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		err_setf(err, "%s failed (exit %d; see %s)", argv[0],
			 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), log);
		return -1;
	}
	return 0;
}

/* The run directory and the overlay on the image, once. */
static int prepare(struct qemu_guest *q, int vmid, char **err)
{
	if (q->dir)
		return 0;
	const char *tmp = getenv("TMPDIR");
	char *tmpl = strprintf("%s/pvesim-qemu-%d.XXXXXX", tmp && *tmp ? tmp : "/tmp", vmid);
	if (!tmpl || !mkdtemp(tmpl)) {
		err_setf(err, "cannot make a run directory: %s", strerror(errno));
		free(tmpl);
		return -1;
	}
	q->dir = tmpl;
	char *disk = strprintf("%s/disk.qcow2", q->dir);
	char *log = strprintf("%s/qemu.log", q->dir);
	int rc = -1;
	if (disk && log) {
		char *argv[] = {QEMU_IMG, "create", "-q", "-f", "qcow2", "-F", q->format, "-b",
				q->image, disk, NULL};
		rc = run_wait(argv, log, err);
	}
	free(disk);
	free(log);
	return rc;
}

bool qemu_guest_alive(struct qemu_guest *q)
{
	if (!q || q->pid <= 0)
		return false;
	int st;
	pid_t r = waitpid(q->pid, &st, WNOHANG);
	if (r == q->pid || (r < 0 && errno == ECHILD)) {
		q->pid = 0;
		return false;
	}
	return true;
}

const char *qemu_guest_dir(const struct qemu_guest *q)
{
	return q ? q->dir : NULL;
}

long qemu_guest_pid(const struct qemu_guest *q)
{
	return q && q->pid > 0 ? (long)q->pid : 0;
}

void qemu_guest_kill(struct qemu_guest *q)
{
	if (!qemu_guest_alive(q))
		return;
	kill(q->pid, SIGTERM);
	for (int waited = 0; waited < KILL_WAIT_MS; waited += 20) {
		int st;
		if (waitpid(q->pid, &st, WNOHANG) != 0) {
			q->pid = 0;
			return;
		}
		struct timespec ts = {0, 20L * 1000 * 1000};
		nanosleep(&ts, NULL); /* a process's end has no descriptor to wait on here */
	}
	kill(q->pid, SIGKILL);
	int st;
	while (waitpid(q->pid, &st, 0) < 0 && errno == EINTR)
		;
	q->pid = 0;
}

/* ---- the command line ----------------------------------------------------------- */

struct argv_b {
	char **v;
	size_t n, cap;
	bool oom;
};

static void arg(struct argv_b *b, char *s) /* takes s */
{
	if (!s || b->oom) {
		free(s);
		b->oom = true;
		return;
	}
	if (b->n + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 32;
		char **v = realloc(b->v, cap * sizeof *v);
		if (!v) {
			free(s);
			b->oom = true;
			return;
		}
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = s;
	b->v[b->n] = NULL;
}

static void arg2(struct argv_b *b, const char *opt, char *val)
{
	arg(b, strdup(opt));
	arg(b, val);
}

void qemu_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

/* bootindex of a device: its place in "order=a;b;c" (100, 101, ...), or
 * 100 for the legacy bootdisk; 0 when it has none. */
static int boot_index(json_object *config, const char *dev)
{
	const char *boot = cfg_str(config, "boot");
	char *order = boot ? prop_get(boot, "order") : NULL;
	if (order) {
		int idx = 0, found = 0;
		char *save = NULL;
		for (char *t = strtok_r(order, ";", &save); t && !found;
		     t = strtok_r(NULL, ";", &save), idx++)
			if (strcmp(t, dev) == 0)
				found = 100 + idx;
		free(order);
		return found;
	}
	const char *bootdisk = cfg_str(config, "bootdisk");
	return bootdisk && strcmp(bootdisk, dev) == 0 ? 100 : 0;
}

static char *bootopt(json_object *config, const char *dev)
{
	int bi = boot_index(config, dev);
	return bi ? strprintf(",bootindex=%d", bi) : strdup("");
}

static const char *nic_device(const char *model)
{
	static const char *const map[][2] = {
		{"virtio", "virtio-net-pci"}, {"e1000", "e1000"}, {"e1000e", "e1000e"},
		{"rtl8139", "rtl8139"},       {"vmxnet3", "vmxnet3"}, {NULL, NULL}};
	for (size_t i = 0; map[i][0]; i++)
		if (strcmp(model, map[i][0]) == 0)
			return map[i][1];
	return NULL;
}

/* The disk device for drive key k (ide0, sata1, scsi0, virtio0). */
static char *disk_device(struct argv_b *b, json_object *config, const char *k, bool *have_ahci,
			 bool *have_scsihw, char **err)
{
	int n = atoi(k + strcspn(k, "0123456789"));
	char *bo = bootopt(config, k);
	char *dev = NULL;
	if (!bo)
		return NULL;
	if (strncmp(k, "ide", 3) == 0) {
		dev = strprintf("ide-hd,bus=ide.%d,unit=%d,drive=drive-%s,id=%s%s", n / 2, n % 2, k, k,
				bo);
	} else if (strncmp(k, "sata", 4) == 0) {
		if (!*have_ahci) {
			arg2(b, "-device", strdup("ahci,id=ahci0,multifunction=on,bus=pci.0,addr=0x7"));
			*have_ahci = true;
		}
		dev = strprintf("ide-hd,bus=ahci0.%d,drive=drive-%s,id=%s%s", n, k, k, bo);
	} else if (strncmp(k, "scsi", 4) == 0) {
		const char *hw = cfg_str(config, "scsihw");
		const char *qdev = !hw || strcmp(hw, "lsi") == 0	   ? "lsi"
				   : strcmp(hw, "lsi53c810") == 0	   ? "lsi53c810"
				   : strcmp(hw, "megasas") == 0		   ? "megasas"
				   : strcmp(hw, "pvscsi") == 0		   ? "pvscsi"
				   : strncmp(hw, "virtio-scsi", 11) == 0 ? "virtio-scsi-pci"
									   : NULL;
		if (!qdev) {
			err_setf(err, "scsihw '%s' is not supported", hw);
			free(bo);
			return NULL;
		}
		if (!*have_scsihw) {
			arg2(b, "-device", strprintf("%s,id=scsihw0,bus=pci.0,addr=0x5", qdev));
			*have_scsihw = true;
		}
		dev = hw && strncmp(hw, "virtio-scsi", 11) == 0
			      ? strprintf("scsi-hd,bus=scsihw0.0,channel=0,scsi-id=0,lun=%d,drive=drive-%s,id=%s%s",
					  n, k, k, bo)
			      : strprintf("scsi-hd,bus=scsihw0.0,scsi-id=%d,drive=drive-%s,id=%s%s", n, k,
					  k, bo);
	} else if (strncmp(k, "virtio", 6) == 0) {
		dev = strprintf("virtio-blk-pci,drive=drive-%s,id=%s,bus=pci.0,addr=0x%x%s", k, k,
				0xa + n, bo);
	}
	free(bo);
	return dev;
}

char **qemu_guest_argv(json_object *config, int vmid, const char *dir, const char *disk,
		       const char *volid, const char *address, unsigned ssh_port, char **err)
{
	struct argv_b b = {0};
	const char *mem = cfg_str(config, "memory");
	const char *cores = cfg_str(config, "cores");
	const char *sockets = cfg_str(config, "sockets");
	int nc = cores ? atoi(cores) : 1, ns = sockets ? atoi(sockets) : 1;
	if (nc < 1 || ns < 1) {
		err_setf(err, "cores/sockets must be positive");
		return NULL;
	}
	arg(&b, strdup(QEMU_BIN));
	const char *name = cfg_str(config, "name");
	arg2(&b, "-name", strprintf("%s,debug-threads=on", name ? name : "vm"));
	arg(&b, strdup("-no-user-config"));
	arg(&b, strdup("-nodefaults"));
	arg2(&b, "-machine", strdup("pc"));
	arg2(&b, "-accel", strdup("tcg,tb-size=128"));
	arg2(&b, "-m", strdup(mem ? mem : "2048"));
	arg2(&b, "-smp", strprintf("%d,sockets=%d,cores=%d,maxcpus=%d", nc * ns, ns, nc, nc * ns));
	arg2(&b, "-display", strdup("none"));
	arg2(&b, "-chardev", strprintf("file,id=serial0,path=%s/console.log,append=on", dir));
	arg2(&b, "-serial", strdup("chardev:serial0"));
	arg2(&b, "-qmp", strprintf("unix:%s/qmp.sock,server=on,wait=off", dir));
	arg2(&b, "-boot", strdup("menu=off,strict=on,reboot-timeout=1000"));
	const char *agent = cfg_str(config, "agent");
	if (agent && (agent[0] == '1' || strncmp(agent, "enabled=1", 9) == 0)) {
		arg2(&b, "-chardev", strprintf("socket,path=%s/qga.sock,server=on,wait=off,id=qga0", dir));
		arg2(&b, "-device", strdup("virtio-serial,id=qga0,bus=pci.0,addr=0x8"));
		arg2(&b, "-device", strdup("virtserialport,chardev=qga0,name=org.qemu.guest_agent.0"));
	}
	/* drives: the one holding volid is the guest's disk; qemu-server's
	 * order (ide, sata, scsi, virtio) */
	static const struct {
		const char *bus;
		int max;
	} buses[] = {{"ide", 4}, {"sata", 6}, {"scsi", 31}, {"virtio", 16}};
	bool have_ahci = false, have_scsihw = false, attached = false;
	for (size_t i = 0; i < sizeof buses / sizeof buses[0] && !b.oom; i++)
		for (int n = 0; n < buses[i].max && !b.oom; n++) {
			char k[16];
			snprintf(k, sizeof k, "%s%d", buses[i].bus, n);
			const char *val = cfg_str(config, k);
			if (!val || drive_is_cdrom(val) || drive_is_cloudinit(val))
				continue;
			char *vol = drive_volid(val);
			bool ours = vol && volid && strcmp(vol, volid) == 0;
			free(vol);
			if (!ours)
				continue; /* only the image is a real disk */
			arg2(&b, "-drive",
			     strprintf("file=%s,if=none,id=drive-%s,format=qcow2,cache=writeback", disk, k));
			char *dev = disk_device(&b, config, k, &have_ahci, &have_scsihw, err);
			if (!dev) {
				qemu_argv_free(b.v);
				return NULL;
			}
			arg2(&b, "-device", dev);
			attached = true;
		}
	if (!attached && !b.oom) {
		err_setf(err, "no drive of the config holds the image's volume '%s'",
			 volid ? volid : "?");
		qemu_argv_free(b.v);
		return NULL;
	}
	const char *net = cfg_str(config, "net0");
	if (net && !b.oom) {
		size_t ml = strcspn(net, "=,");
		char *model = strndup(net, ml);
		const char *qdev = model ? nic_device(model) : NULL;
		if (!qdev) {
			err_setf(err, "net0 '%s': model not supported", net);
			free(model);
			qemu_argv_free(b.v);
			return NULL;
		}
		/* "virtio,bridge=..." without a MAC: PVE would have made one */
		char *mac = net[ml] == '=' ? strndup(net + ml + 1, strcspn(net + ml + 1, ","))
					   : scenario_mac(vmid, 0);
		char *bo = bootopt(config, "net0");
		arg2(&b, "-netdev",
		     strprintf("user,id=net0,hostfwd=tcp:%s:%u-:22", address ? address : "127.0.0.1",
			       ssh_port));
		arg2(&b, "-device",
		     mac && bo ? strprintf("%s,mac=%s,netdev=net0,bus=pci.0,addr=0x12,id=net0,romfile=%s",
					   qdev, mac, bo)
			       : NULL);
		free(model);
		free(mac);
		free(bo);
	}
	if (b.oom) {
		err_setf(err, "out of memory");
		qemu_argv_free(b.v);
		return NULL;
	}
	return b.v;
}

/* The drive of config holding a disk (first by qemu-server's bus order). */
static char *first_disk_volid(json_object *config)
{
	static const char *const pfx[] = {"ide", "sata", "scsi", "virtio"};
	for (size_t i = 0; i < 4; i++)
		for (int n = 0; n < 31; n++) {
			char k[16];
			snprintf(k, sizeof k, "%s%d", pfx[i], n);
			const char *v = cfg_str(config, k);
			if (v && !drive_is_cdrom(v) && !drive_is_cloudinit(v))
				return drive_volid(v);
		}
	return NULL;
}

static int unix_connect(const char *dir, const char *name, char **err);

/* Wait (up to 10 s) until QEMU's QMP socket accepts: QEMU is running. -1
 * with QEMU's last words when it exited instead (a busy host forward, a
 * bad option), as PVE's "start failed: QEMU exited with code 1". */
static int started(struct qemu_guest *q, char **err)
{
	for (int i = 0; i < 200; i++) {
		if (!qemu_guest_alive(q)) {
			char *log = strprintf("%s/qemu.log", q->dir), *text = NULL;
			size_t len = 0;
			if (log && read_file(log, &text, &len) == 0) {
				while (len > 0 && text[len - 1] == '\n')
					text[--len] = '\0';
				const char *last = strrchr(text, '\n');
				err_setf(err, "start failed: %s", last ? last + 1 : text);
			} else {
				err_setf(err, "start failed: QEMU exited");
			}
			free(text);
			free(log);
			return -1;
		}
		int fd = unix_connect(q->dir, "qmp.sock", NULL);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		struct timespec ts = {0, 50L * 1000 * 1000};
		nanosleep(&ts, NULL); /* QEMU says nothing when its socket is up */
	}
	return 0;
}

int qemu_guest_start(struct sim_guest *g, char **err)
{
	struct qemu_guest *q = g->qemu;
	if (qemu_guest_alive(q))
		return 0;
	if (!q->volid && !(q->volid = first_disk_volid(g->config))) {
		err_setf(err, "VM %d has no disk for its image", g->vmid);
		return -1;
	}
	if (prepare(q, g->vmid, err) < 0)
		return -1;
	char *disk = strprintf("%s/disk.qcow2", q->dir);
	char *log = strprintf("%s/qemu.log", q->dir);
	char **argv = disk ? qemu_guest_argv(g->config, g->vmid, q->dir, disk, q->volid,
					     g->address, q->ssh_port, err)
			   : NULL;
	free(disk);
	if (!argv || !log) {
		qemu_argv_free(argv);
		free(log);
		return -1;
	}
	FILE *lf = fopen(log, "a");
	if (lf) {
		fputs("$", lf);
		for (size_t i = 0; argv[i]; i++)
			fprintf(lf, " %s", argv[i]);
		fputs("\n", lf);
		fclose(lf);
	}
	pid_t pid = fork();
	if (pid == 0) {
		child_stdio(log);
		setpgid(0, 0);
		execvp(QEMU_BIN, argv);
		_exit(127);
	}
	int saved = errno;
	qemu_argv_free(argv);
	free(log);
	if (pid < 0) {
		err_setf(err, "fork: %s", strerror(saved));
		return -1;
	}
	q->pid = pid;
	return started(q, err);
}

struct qemu_guest *qemu_guest_clone(struct qemu_guest *src, int src_vmid, const char *volid,
				    char **err)
{
	if (prepare(src, src_vmid, err) < 0)
		return NULL;
	char *base = strprintf("%s/disk.qcow2", src->dir);
	struct qemu_guest *q = base ? qemu_guest_new(base, "qcow2") : NULL;
	free(base);
	if (!q || !(q->volid = strdup(volid))) {
		qemu_guest_free(q);
		err_setf(err, "out of memory");
		return NULL;
	}
	q->ssh_port = src->ssh_port;
	return q;
}

/* ---- sockets: QMP and the guest agent ----------------------------------------- */

static int unix_connect(const char *dir, const char *name, char **err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n = snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof sa.sun_path) {
		err_setf(err, "socket path too long: %s/%s", dir, name);
		return -1;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		err_setf(err, "%s: %s", sa.sun_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int send_all(int fd, const char *s)
{
	size_t len = strlen(s);
	while (len > 0) {
		ssize_t w = send(fd, s, len, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		len -= (size_t)w;
	}
	return 0;
}

static long long mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Next JSON object line from fd before deadline (ms, monotonic); NULL on
 * time-out or EOF. buf keeps what follows. */
static json_object *read_obj(int fd, struct sbuf *buf, long long deadline)
{
	for (;;) {
		const char *s = sbuf_str(buf);
		const char *nl = s ? strchr(s, '\n') : NULL;
		if (nl) {
			size_t n = (size_t)(nl - s);
			char *line = strndup(s, n);
			char *rest = strdup(nl + 1);
			sbuf_reset(buf);
			if (rest)
				sbuf_add(buf, rest);
			free(rest);
			/* the agent may send 0xff sync bytes: skip to the object */
			char *o = line ? strchr(line, '{') : NULL;
			json_object *j = o ? json_tokener_parse(o) : NULL;
			free(line);
			if (j)
				return j;
			continue;
		}
		long long left = deadline - mono_ms();
		if (left <= 0)
			return NULL;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int pr = poll(&p, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return NULL;
		char tmp[4096];
		ssize_t r = recv(fd, tmp, sizeof tmp, 0);
		if (r <= 0 || sbuf_addn(buf, tmp, (size_t)r) < 0)
			return NULL;
	}
}

int qemu_guest_powerdown(struct qemu_guest *q, char **err)
{
	if (!qemu_guest_alive(q)) {
		err_setf(err, "not running");
		return -1;
	}
	int fd = unix_connect(q->dir, "qmp.sock", err);
	if (fd < 0)
		return -1;
	struct sbuf buf = {0};
	long long dl = mono_ms() + QMP_WAIT_MS;
	json_object *greet = read_obj(fd, &buf, dl), *a = NULL, *b = NULL;
	if (greet && send_all(fd, "{\"execute\":\"qmp_capabilities\"}\n") == 0)
		a = read_obj(fd, &buf, dl);
	if (a && send_all(fd, "{\"execute\":\"system_powerdown\"}\n") == 0)
		while ((b = read_obj(fd, &buf, dl)) && json_object_object_get(b, "event")) {
			json_object_put(b);
			b = NULL;
		}
	int rc = b && json_object_object_get(b, "return") ? 0 : -1;
	if (rc < 0)
		err_setf(err, "QMP system_powerdown got no answer");
	json_object_put(greet);
	json_object_put(a);
	json_object_put(b);
	sbuf_free(&buf);
	close(fd);
	return rc;
}

static void rewrite_user_net(json_object *ifaces, const char *address)
{
	size_t n = json_object_is_type(ifaces, json_type_array) ? json_object_array_length(ifaces) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *ips =
			json_object_object_get(json_object_array_get_idx(ifaces, i), "ip-addresses");
		size_t m = json_object_is_type(ips, json_type_array) ? json_object_array_length(ips) : 0;
		for (size_t j = 0; j < m; j++) {
			json_object *a = json_object_array_get_idx(ips, j);
			const char *ip = json_object_get_string(json_object_object_get(a, "ip-address"));
			if (ip && strncmp(ip, "10.0.2.", 7) == 0 && address)
				json_object_object_add(a, "ip-address", json_object_new_string(address));
		}
	}
}

json_object *qemu_guest_agent(struct sim_guest *g, const char *cmd, char **err)
{
	struct qemu_guest *q = g->qemu;
	if (!qemu_guest_alive(q)) {
		err_setf(err, "VM %d is not running", g->vmid);
		return NULL;
	}
	int fd = unix_connect(q->dir, "qga.sock", err);
	if (fd < 0)
		return NULL;
	struct sbuf buf = {0};
	long long dl = mono_ms() + AGENT_WAIT_MS;
	unsigned id = (unsigned)getpid() * 1000u + ++q->agent_seq;
	char *sync = strprintf("{\"execute\":\"guest-sync\",\"arguments\":{\"id\":%u}}\n", id);
	json_object *res = NULL;
	bool synced = false;
	if (sync && send_all(fd, sync) == 0) {
		json_object *o;
		while (!synced && (o = read_obj(fd, &buf, dl))) {
			json_object *ret = json_object_object_get(o, "return");
			synced = ret && json_object_get_int64(ret) == (long long)id;
			json_object_put(o);
		}
	}
	free(sync);
	char *req = synced ? strprintf("{\"execute\":\"%s\"}\n", cmd) : NULL;
	if (req && send_all(fd, req) == 0) {
		json_object *o = read_obj(fd, &buf, dl);
		json_object *ret = o ? json_object_object_get(o, "return") : NULL;
		if (ret) {
			res = json_object_get(ret);
			if (strcmp(cmd, "guest-network-get-interfaces") == 0)
				rewrite_user_net(res, g->address);
		} else if (o) {
			err_setf(err, "agent error: %s", json_object_to_json_string(o));
		}
		json_object_put(o);
	}
	free(req);
	if (!res && !(err && *err))
		err_setf(err, "QEMU guest agent is not running");
	sbuf_free(&buf);
	close(fd);
	return res;
}

/* ---- following the processes ------------------------------------------------------ */

void qemu_guests_poll(struct cluster *c, double now)
{
	for (size_t i = 0; i < c->guests.n; i++) {
		struct sim_guest *g = c->guests.v[i];
		if (!g->qemu || !g->running || qemu_guest_alive(g->qemu))
			continue;
		/* it powered off (or died): a shutdown waiting for it is over */
		for (size_t k = 0; k < c->tasks.n; k++) {
			struct sim_task *t = c->tasks.v[k];
			if (t->vmid == g->vmid && !t->finished && strcmp(t->type, "qmshutdown") == 0 &&
			    t->end > now) {
				t->end = now < t->start ? t->start : now;
				t->duration = t->end - t->start;
			}
		}
		guest_stopped(c, g);
	}
}
