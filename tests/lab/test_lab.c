/* test_lab.c - the lab (tests/README.md "Lab", make lab): pvagent against real Debian 12
 * guests that the simulator runs as QEMU/TCG processes from their PVE config
 * (tests/pvesim/qemu_guest.c), on the images of tests/lab/image.sh
 * ($LAB_IMAGE_DIR). Asserts device names, drivers and outcomes seen by the
 * real kernel, never speed; prints boot and conversion times. Guests listen
 * on 127.0.4.N port 22 (QEMU user networking's host forward). The
 * simulator keeps what download-url fetches as real files (the scenario's
 * "files"), so a template built through the API from an image served on
 * loopback boots as QEMU too, and a guest with a static ipconfig0 (a pool
 * address) is forwarded on that address: the lab guests have no
 * cloud-init, the address is where the simulated network puts them. */
#include "clirun.h"
#include "httpserve.h"
#include "simproc.h"
#include "util.h"

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BOOT_TIMEOUT 600 /* s: TCG on a shared 2-core machine */

struct lab {
	struct simproc sim;
	char *dir, *conf, *tdir;
	const char *bin, *images;
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static const char *lab_unavailable(void)
{
	const char *img = getenv("LAB_IMAGE_DIR");
	if (!img || !*img)
		return "LAB_IMAGE_DIR is not set (run make lab)";
	if (geteuid() != 0)
		return "needs root";
	return NULL;
}

static void put(const char *path, mode_t mode, char *text)
{
	cr_assert(path && text, "out of memory");
	cr_assert_eq(test_write_file(path, text, mode), 0, "cannot write %s", path);
	free(text);
}

/* A simulator whose cluster holds `guests` (scenario guest objects, JSON),
 * a pvagent.conf with the lab key, templates in tdir. Time scale 1: the
 * guests are real. */
/* The test's directory (made once; lab_start uses it). */
static const char *lab_dir(struct lab *l)
{
	if (!l->dir) {
		char tmpl[] = "/tmp/pvagent-lab.XXXXXX";
		cr_assert(mkdtemp(tmpl), "mkdtemp: %s", strerror(errno));
		l->dir = strdup(tmpl);
	}
	return l->dir;
}

static void lab_start(struct lab *l, const char *guests)
{
	char *dir = l->dir;
	memset(l, 0, sizeof *l);
	l->dir = dir;
	const char *why = lab_unavailable();
	if (why)
		cr_skip_test("%s", why);
	l->images = getenv("LAB_IMAGE_DIR");
	const char *bin = getenv("PVAGENT_BIN");
	l->bin = bin ? bin : "build/san/pvagent";
	lab_dir(l);
	char *files = strprintf("%s/files", l->dir);
	cr_assert_eq(mkdir(files, 0755), 0, "%s: %s", files, strerror(errno));
	char *scen = strprintf("%s/scenario.json", l->dir);
	put(scen, 0644,
	    strprintf("{\"pve_version\": \"9.1\", \"cluster_name\": \"lab\", \"files\": \"%s\",\n"
		      " \"nodes\": [{\"name\": \"pve1\", \"cpus\": 2, \"memory_mib\": 24576,"
		      " \"online\": true, \"ip\": \"10.10.0.11\"}],\n"
		      " \"storages\": [{\"id\": \"local-lvm\", \"type\": \"lvmthin\", \"shared\": false,"
		      " \"nodes\": [\"pve1\"], \"content\": \"images,rootdir\", \"size_gib\": 100},\n"
		      "  {\"id\": \"local\", \"type\": \"dir\", \"shared\": false,"
		      " \"nodes\": [\"pve1\"], \"content\": \"iso,vztmpl,import\", \"size_gib\": 100}],\n"
		      " \"tokens\": [{\"id\": \"root@pam!pvagent\","
		      " \"secret\": \"0b7c2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\", \"privs\": \"all\"}],\n"
		      " \"users\": [], \"ha\": [], \"faults\": [],\n \"guests\": [%s]}\n",
		      files, guests));
	free(files);
	static const char *const real_time[] = {"--time-scale", "1", NULL};
	cr_assert_eq(simproc_start(&l->sim, scen, real_time), 0, "the simulator did not start");
	free(scen);
	l->tdir = strprintf("%s/templates", l->dir);
	cr_assert_eq(mkdir(l->tdir, 0755), 0);
	char *secret = strprintf("%s/token.secret", l->dir);
	put(secret, 0600, strprintf("%s\n", l->sim.token_secret));
	l->conf = strprintf("%s/pvagent.conf", l->dir);
	/* the guests' host key is the image's: tofu takes it at first contact */
	put(l->conf, 0600,
	    strprintf("[pve]\nurl = %s\ntoken_id = %s\ntoken_secret_file = %s\n"
		      "fingerprint = %s\nnode = pve1\n"
		      "[ssh]\nuser = root\nidentity = %s/id_ed25519\nknown_hosts = %s/known_hosts\n"
		      "host_key_policy = tofu\ntimeout = 30s\n"
		      "[paths]\ntemplates = %s\nstate = %s\n"
		      "[pool \"lab\"]\ncidr = 127.0.4.0/24\ngateway = 127.0.4.1\n"
		      "range = 127.0.4.100-127.0.4.119\n",
		      l->sim.url, l->sim.token_id, secret, l->sim.fingerprint, l->images, l->dir,
		      l->tdir, l->dir));
	free(secret);
}

static void lab_stop(struct lab *l)
{
	if (!l->dir)
		return;
	cr_expect_eq(simproc_stop(&l->sim), 0, "the simulator did not exit cleanly");
	char *cmd = strprintf("rm -rf '%s'", l->dir);
	if (cmd && system(cmd) != 0)
		fprintf(stderr, "lab: cannot remove %s\n", l->dir);
	free(cmd);
	free(l->dir);
	free(l->conf);
	free(l->tdir);
	l->dir = NULL;
}

/* A scenario guest on image (uuid.raw or devname.raw) at 127.0.4.host, on
 * IDE with an e1000 NIC, agent on. */
static char *lab_guest(int vmid, const char *name, int host, const char *image, bool tmpl)
{
	const char *why = lab_unavailable();
	if (why)
		cr_skip_test("%s", why);
	return strprintf("{\"vmid\": %d, \"node\": \"pve1\", \"type\": \"qemu\","
			 " \"address\": \"127.0.4.%d\", \"qemu\": {\"image\": \"%s/%s\"},"
			 " \"config\": {\"name\": \"%s\", \"memory\": \"512\", \"cores\": 1,"
			 " \"ostype\": \"l26\", \"agent\": \"1\", \"boot\": \"order=ide0;net0\",%s"
			 " \"ide0\": \"local-lvm:%s-%d-disk-0,size=2G\","
			 " \"net0\": \"e1000=BC:24:11:00:04:%02d,bridge=vmbr0\"}}",
			 vmid, host, getenv("LAB_IMAGE_DIR"), image, name, tmpl ? " \"template\": 1," : "",
			 tmpl ? "base" : "vm", vmid, host);
}

/* Seconds until address:22 sends an SSH banner, or -1 after timeout_s. A
 * real guest's boot has no event to wait on: its port is tried every 0.5 s
 * (QEMU's forward accepts before the guest listens, so the banner counts). */
static double wait_ssh(const char *address, double timeout_s)
{
	double t0 = now_s();
	while (now_s() - t0 < timeout_s) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(22)};
		inet_pton(AF_INET, address, &sa.sin_addr);
		char buf[8] = {0};
		bool ok = false;
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			if (poll(&p, 1, 3000) == 1 && recv(fd, buf, 4, 0) == 4)
				ok = memcmp(buf, "SSH-", 4) == 0;
		}
		if (fd >= 0)
			close(fd);
		if (ok)
			return now_s() - t0;
		struct timespec ts = {0, 500 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return -1;
}

static void power(struct lab *l, int vmid, const char *action)
{
	char *path = strprintf("/nodes/pve1/qemu/%d/status/%s", vmid, action);
	long st = 0;
	cr_assert_eq(sim_api(&l->sim, "POST", path, "", &st, NULL), 0);
	cr_assert_eq(st, 200, "%s of %d: HTTP %ld", action, vmid, st);
	free(path);
	/* tasks end when the simulator is next asked: end this one (qmstart
	 * starts the QEMU process, qmstop kills it) now */
	cr_assert_eq(simproc_advance(&l->sim, 2), 0);
}

/* Start vmid and wait for SSH; the boot time in seconds. */
static double boot(struct lab *l, int vmid, const char *address)
{
	power(l, vmid, "start");
	double t = wait_ssh(address, BOOT_TIMEOUT);
	cr_assert(t >= 0, "VM %d: no SSH on %s after %d s", vmid, address, BOOT_TIMEOUT);
	return t;
}

/* Run pvagent; its exit status, its output in *out. */
#define PVAGENT(l, out, ...) test_pvagent((l)->bin, (l)->conf, (out), __VA_ARGS__, NULL)

/* pvagent's output into the suite's log, for a reader of a failure */
static void show(const char *what, const char *out)
{
	printf("---- %s\n%s---- end of %s\n", what, out ? out : "", what);
	fflush(stdout);
}

/* A command in the guest through `pvagent ssh` (the system ssh with
 * pvagent's identity); its output (malloc'd), asserting exit 0. */
static char *guest_sh(struct lab *l, const char *name, const char *address, const char *cmd)
{
	char *out = NULL;
	int rc = PVAGENT(l, &out, "ssh", name, "--address", address, "--", "sh", "-c", cmd);
	cr_assert_eq(rc, 0, "in %s: %s: exit %d\n%s", name, cmd, rc, out ? out : "");
	/* the system ssh's word on a host key it adds is no output of cmd */
	static const char added[] = "Warning: Permanently added ";
	if (strncmp(out, added, sizeof added - 1) == 0) {
		const char *nl = strchr(out, '\n');
		memmove(out, nl ? nl + 1 : out + strlen(out), strlen(nl ? nl + 1 : "") + 1);
	}
	return out;
}

/* The guest's config in the simulator (new reference). */
static json_object *sim_config(struct lab *l, int vmid)
{
	json_object *st = simproc_state(&l->sim), *found = NULL;
	json_object *guests = json_object_object_get(json_object_object_get(st, "cluster"), "guests");
	for (size_t i = 0; guests && i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		if (json_object_get_int(json_object_object_get(g, "vmid")) == vmid)
			found = json_object_get(json_object_object_get(g, "config"));
	}
	json_object_put(st);
	cr_assert(found, "VM %d not in the simulator's state", vmid);
	return found;
}

static const char *cfg(json_object *c, const char *k)
{
	json_object *v = json_object_object_get(c, k);
	return v ? json_object_get_string(v) : NULL;
}

/* The run directory of vmid's QEMU (its console.log), malloc'd. */
static char *qemu_dir(struct lab *l, int vmid)
{
	json_object *st = simproc_state(&l->sim);
	json_object *guests = json_object_object_get(json_object_object_get(st, "cluster"), "guests");
	char *dir = NULL;
	for (size_t i = 0; guests && i < json_object_array_length(guests); i++) {
		json_object *g = json_object_array_get_idx(guests, i);
		json_object *q = json_object_object_get(g, "qemu");
		if (json_object_get_int(json_object_object_get(g, "vmid")) == vmid && q)
			dir = strdup(json_object_get_string(json_object_object_get(q, "dir")));
	}
	json_object_put(st);
	cr_assert(dir, "VM %d has no QEMU run directory", vmid);
	return dir;
}

/* What the real kernel sees: block devices with their drivers, NICs with
 * MAC and driver, the mounts of /, /srv and the marker on /srv. */
static const char facts_cmd[] =
	"for b in /sys/block/sd? /sys/block/vd?; do [ -e $b ] && echo block $(basename $b) "
	"$(basename $(readlink -f $b/device/driver)); done; "
	"for n in /sys/class/net/en*; do echo nic $(cat $n/address) "
	"$(basename $(readlink -f $n/device/driver)); done; "
	"echo ip $(ip -4 -o addr show scope global | awk '{print $4}'); "
	"echo root $(findmnt -n -o SOURCE /); echo srv $(findmnt -n -o SOURCE /srv); "
	"cat /srv/lab-marker";

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

/* one test per process: its world, stopped by the suite's fini whatever
 * the test's end (the guests' QEMU processes die with the simulator) */
static struct lab L;

static void lab_fini(void)
{
	lab_stop(&L);
}

TestSuite(lab, .timeout = 2400, .fini = lab_fini);

/* The test's world with one lab guest (lab_guest's arguments). */
static struct lab *lab_with(int vmid, const char *name, int host, const char *image, bool tmpl)
{
	char *g = lab_guest(vmid, name, host, image, tmpl);
	lab_start(&L, g);
	free(g);
	return &L;
}

/* UUID variant on IDE + e1000: converted; the real kernel then sees vda
 * (virtio_blk) and the NIC on virtio_net with the same MAC and address,
 * every fstab mount is there, and bench runs real dd. */
Test(lab, uuid_ide_to_virtio)
{
	struct lab *l = lab_with(311, "lab-uuid", 11, "uuid.raw", false);
	double t_ide = boot(l, 311, "127.0.4.11");
	char *before = guest_sh(l, "lab-uuid", "127.0.4.11", facts_cmd);
	cr_assert(has_line(before, "block sda sd"), "before: %s", before);
	cr_assert(has_line(before, "nic bc:24:11:00:04:11 e1000"), "before: %s", before);
	cr_assert(strstr(before, "pvagent lab /srv"), "before: %s", before);
	const char *ipl = strstr(before, "\nip ");
	cr_assert(ipl && strstr(ipl, "10.0.2."), "before: %s", before);
	char *ip_before = strndup(ipl + 1, strcspn(ipl + 1, "\n"));

	double t0 = now_s();
	char *out = NULL;
	int rc = PVAGENT(l, &out, "virtio", "lab-uuid", "--address", "127.0.4.11", "--disk-bus",
			 "virtio-blk");
	double t_conv = now_s() - t0;
	show("pvagent virtio lab-uuid", out);
	cr_assert_eq(rc, 0, "virtio: exit %d\n%s", rc, out);
	free(out);
	json_object *c = sim_config(l, 311);
	cr_assert(cfg(c, "virtio0") && !cfg(c, "ide0"), "config: %s", json_object_to_json_string(c));
	cr_assert(cfg(c, "net0") && strncmp(cfg(c, "net0"), "virtio=BC:24:11:00:04:11", 24) == 0,
		  "net0: %s", cfg(c, "net0"));
	json_object_put(c);

	char *after = guest_sh(l, "lab-uuid", "127.0.4.11", facts_cmd);
	cr_assert(has_line(after, "block vda virtio_blk"), "after: %s", after);
	cr_assert(!strstr(after, "block sda"), "after: %s", after);
	cr_assert(has_line(after, "nic bc:24:11:00:04:11 virtio_net"), "after: %s", after);
	cr_assert(has_line(after, ip_before), "address changed: %s vs %s", ip_before, after);
	cr_assert(has_line(after, "root /dev/vda1") && has_line(after, "srv /dev/vda2"), "after: %s",
		  after);
	cr_assert(strstr(after, "pvagent lab /srv"), "after: %s", after);

	/* the address pvagent reads from the real guest agent */
	long st = 0;
	json_object *ag = NULL;
	cr_assert_eq(sim_api(&l->sim, "GET", "/nodes/pve1/qemu/311/agent/network-get-interfaces",
			     NULL, &st, &ag), 0);
	cr_assert_eq(st, 200);
	const char *ags = json_object_to_json_string(ag);
	cr_assert(strstr(ags, "127.0.4.11") && strstr(ags, "bc:24:11:00:04:11"), "agent: %s", ags);
	json_object_put(ag);

	rc = PVAGENT(l, &out, "bench", "lab-uuid", "--address", "127.0.4.11", "--size", "16");
	cr_assert_eq(rc, 0, "bench: exit %d\n%s", rc, out);
	cr_assert(strstr(out, "MB/s") && strstr(out, "virtio"), "bench: %s", out);
	free(out);
	double t_virtio = -1;
	power(l, 311, "stop");
	t_virtio = boot(l, 311, "127.0.4.11");
	printf("lab: uuid variant: boot to SSH on IDE %.0f s, on virtio %.0f s; conversion %.0f s\n",
	       t_ide, t_virtio, t_conv);
	free(before);
	free(after);
	free(ip_before);
	}

/* fstab by device name: pvagent rewrites it before the switch and the
 * guest boots on virtio with every mount. */
Test(lab, devname_fstab_rewritten)
{
	struct lab *l = lab_with(312, "lab-dev", 12, "devname.raw", false);
	boot(l, 312, "127.0.4.12");
	char *fst = guest_sh(l, "lab-dev", "127.0.4.12", "cat /etc/fstab");
	cr_assert(strstr(fst, "/dev/sda2 /srv"), "fstab: %s", fst);
	free(fst);
	double t0 = now_s();
	char *out = NULL;
	int rc = PVAGENT(l, &out, "virtio", "lab-dev", "--address", "127.0.4.12", "--disk-bus",
			 "virtio-blk");
	show("pvagent virtio lab-dev", out);
	cr_assert_eq(rc, 0, "virtio: exit %d\n%s", rc, out);
	free(out);
	fst = guest_sh(l, "lab-dev", "127.0.4.12", "cat /etc/fstab");
	cr_assert(!strstr(fst, "/dev/sda"), "fstab still names /dev/sda: %s", fst);
	char *after = guest_sh(l, "lab-dev", "127.0.4.12", facts_cmd);
	cr_assert(has_line(after, "block vda virtio_blk"), "after: %s", after);
	cr_assert(has_line(after, "srv /dev/vda2"), "after: %s", after);
	printf("lab: device-name variant: conversion %.0f s\n", now_s() - t0);
	free(fst);
	free(after);
	}

/* MODULES=dep initramfs built on IDE, the guest's update-initramfs made a
 * no-op: pvagent's own check of the rebuilt initramfs (lsinitramfs) refuses
 * before the switch, nothing on PVE changed. Then with lsinitramfs made to
 * claim the virtio modules as well (forced: the rebuild really skipped),
 * the real kernel cannot find its root on virtio; pvagent sees it never
 * answer and rolls back to IDE with its files restored. */
Test(lab, dep_initramfs_rollback)
{
	struct lab *l = lab_with(313, "lab-dep", 13, "uuid.raw", false);
	boot(l, 313, "127.0.4.13");
	static const char sums[] = "md5sum /etc/fstab /etc/initramfs-tools/modules /boot/initrd.img-*";
	char *sum0 = guest_sh(l, "lab-dep", "127.0.4.13", sums);
	char *conf = guest_sh(l, "lab-dep", "127.0.4.13",
			      "grep ^MODULES= /etc/initramfs-tools/initramfs.conf; "
			      "lsinitramfs /boot/initrd.img-$(uname -r) | grep -c virtio || true");
	cr_assert(has_line(conf, "MODULES=dep") && has_line(conf, "0"), "initramfs: %s", conf);
	free(conf);
	free(guest_sh(l, "lab-dep", "127.0.4.13",
		      "mv /usr/sbin/update-initramfs /usr/sbin/update-initramfs.lab && "
		      "printf '#!/bin/sh\nexit 0\n' >/usr/sbin/update-initramfs && "
		      "chmod 755 /usr/sbin/update-initramfs"));
	char *out = NULL;
	int rc = PVAGENT(l, &out, "virtio", "lab-dep", "--address", "127.0.4.13", "--disk-bus",
			 "virtio-blk");
	show("pvagent virtio lab-dep (no-op update-initramfs)", out);
	cr_assert_eq(rc, 1, "virtio: exit %d (1: failed, nothing changed)\n%s", rc, out);
	cr_assert(strstr(out, "the rebuilt initramfs has no virtio"), "%s", out);
	free(out);
	json_object *c = sim_config(l, 313);
	cr_assert(cfg(c, "ide0") && !cfg(c, "virtio0"), "config: %s", json_object_to_json_string(c));
	json_object_put(c);

	free(guest_sh(l, "lab-dep", "127.0.4.13",
		      "ls=$(command -v lsinitramfs) && mv $ls $ls.lab && "
		      "printf '#!/bin/sh\n%s.lab \"$@\"\nfor m in virtio virtio_ring virtio_pci "
		      "virtio_pci_modern_dev virtio_pci_legacy_dev virtio_blk virtio_scsi virtio_net; "
		      "do echo usr/lib/modules/lab/$m.ko; done\n' $ls >$ls && chmod 755 $ls"));
	double t0 = now_s();
	rc = PVAGENT(l, &out, "virtio", "lab-dep", "--address", "127.0.4.13", "--disk-bus",
		     "virtio-blk", "--timeout", "240");
	double t_conv = now_s() - t0;
	show("pvagent virtio lab-dep (initramfs without virtio)", out);
	cr_assert_eq(rc, 1, "virtio: exit %d (1: failed, rolled back)\n%s", rc, out);
	free(out);
	char *dir = qemu_dir(l, 313), *log = strprintf("%s/console.log", dir), *text = NULL;
	size_t len = 0;
	cr_assert_eq(read_file(log, &text, &len), 0, "%s", log);
	cr_assert(strstr(text, "Gave up waiting for root file system device") ||
			  strstr(text, "does not exist.  Dropping to a shell") ||
			  strstr(text, "does not exist. Dropping to a shell"),
		  "the console shows no failed root (%s)", log);
	free(text);
	free(log);
	free(dir);
	c = sim_config(l, 313);
	cr_assert(cfg(c, "ide0") && !cfg(c, "virtio0"), "config: %s", json_object_to_json_string(c));
	cr_assert(strncmp(cfg(c, "net0"), "e1000=BC:24:11:00:04:13", 23) == 0, "net0: %s",
		  cfg(c, "net0"));
	json_object_put(c);
	char *after = guest_sh(l, "lab-dep", "127.0.4.13", facts_cmd);
	cr_assert(has_line(after, "block sda sd") && has_line(after, "root /dev/sda1"), "after: %s",
		  after);
	char *sum1 = guest_sh(l, "lab-dep", "127.0.4.13", sums);
	cr_assert_str_eq(sum1, sum0, "files not restored: before\n%s\nafter\n%s", sum0, sum1);
	printf("lab: MODULES=dep rollback: conversion with rollback %.0f s\n", t_conv);
	free(after);
	free(sum0);
	free(sum1);
}

/* up from a template whose source VM is the lab image: clone, start,
 * address from the real guest agent, inject over real SSH. */
Test(lab, up_from_lab_template)
{
	struct lab *l = lab_with(9310, "lab-base", 14, "uuid.raw", true);
	char *tp = strprintf("%s/lab.tmpl", l->tdir);
	put(tp, 0644,
	    strdup("[template]\nkind = qemu\nos = debian\nos_version = 12\n"
		   "description = lab image\n"
		   "[source]\nclone = lab-base\nfull = yes\nstorage = local-lvm\nbus = ide\nnic = e1000\n"
		   "[pve]\ndescription = ${name}: Debian 12 (pvagent template lab)\n"
		   "memory = 512\nagent = 1\n"
		   "[file \"/etc/pvagent-lab.conf\"]\nline = made by pvagent up ${name}\n"
		   "[guest]\nuser = root\naddress = agent\n"));
	free(tp);
	double t0 = now_s();
	char *out = NULL;
	int rc = PVAGENT(l, &out, "up", "lab-up1", "-t", "lab");
	show("pvagent up lab-up1", out);
	cr_assert_eq(rc, 0, "up: exit %d\n%s", rc, out);
	free(out);
	json_object *st = simproc_state(&l->sim);
	json_object *guests = json_object_object_get(json_object_object_get(st, "cluster"), "guests");
	const char *addr = NULL;
	for (size_t i = 0; guests && i < json_object_array_length(guests); i++) {
		json_object *o = json_object_array_get_idx(guests, i);
		if (json_object_get_int(json_object_object_get(o, "vmid")) != 9310 &&
		    json_object_object_get(o, "qemu"))
			addr = json_object_get_string(json_object_object_get(o, "address"));
	}
	cr_assert(addr && strncmp(addr, "127.0.4.", 8) == 0, "clone address: %s", addr);
	char *f = guest_sh(l, "lab-up1", addr, "cat /etc/pvagent-lab.conf; hostname");
	cr_assert(has_line(f, "made by pvagent up lab-up1"), "file: %s", f);
	cr_assert(strstr(f, "lab-up1"), "hostname: %s", f);
	printf("lab: up from the lab template (clone, boot, agent, inject): %.0f s\n", now_s() - t0);
	free(f);
	json_object_put(st);
	}

/* Run a host command to exit 0 (its words into the suite's log). */
static void host_sh(const char *cmd)
{
	printf("lab: $ %s\n", cmd);
	fflush(stdout);
	int rc = system(cmd);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, cmd);
}

/* The first word a host command prints (malloc'd). */
static char *host_word(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	cr_assert(p, "%s", cmd);
	char buf[256] = "";
	char *ok = fgets(buf, sizeof buf, p);
	int rc = pclose(p);
	cr_assert(ok && rc == 0, "%s: exit %d", cmd, rc);
	return strndup(buf, strcspn(buf, " \t\n"));
}

/* Issue 26, a non-IDE source bus: the lab guest moved to SATA (its
 * initramfs given ahci on IDE first, the disk then attached as sata0 of a
 * second VM), converted to virtio with --bench: the real kernel sees vda
 * on virtio_blk and the gain table is printed. Issue 27: that converted
 * disk, served on loopback as a qcow2 cloud image, built into a template
 * VM through the API (`image build --url`: download-url, import-from,
 * template), and `up --pool` boots a full clone of it with the pool's
 * lowest address in ipconfig0, reached over SSH at that address. */
Test(lab, sata_to_virtio_then_image_build_and_pool_address)
{
	const char *why = lab_unavailable();
	if (why)
		cr_skip_test("%s", why);
	struct lab *l = &L;
	char *sata = strprintf("%s/sata.qcow2", lab_dir(l));
	/* the scenario names it now; its disk is 315's once prepared */
	cr_assert_eq(test_write_file(sata, "", 0600), 0, "%s", sata);
	char *g1 = lab_guest(315, "lab-prep", 15, "uuid.raw", false);
	char *g2 = strprintf("{\"vmid\": 316, \"node\": \"pve1\", \"type\": \"qemu\","
			     " \"address\": \"127.0.4.16\","
			     " \"qemu\": {\"image\": \"%s\", \"format\": \"qcow2\"},"
			     " \"config\": {\"name\": \"lab-sata\", \"memory\": \"512\", \"cores\": 1,"
			     " \"ostype\": \"l26\", \"agent\": \"1\", \"boot\": \"order=sata0;net0\","
			     " \"sata0\": \"local-lvm:vm-316-disk-0,size=2G\","
			     " \"net0\": \"e1000=BC:24:11:00:04:16,bridge=vmbr0\"}}",
			     sata);
	char *both = strprintf("%s, %s", g1, g2);
	lab_start(l, both);
	free(g1);
	free(g2);
	free(both);

	/* on IDE: ahci into the MODULES=dep initramfs (no virtio_blk in it: the
	 * agent's virtio-serial brings virtio_pci and virtio_console only) */
	double t0 = now_s();
	boot(l, 315, "127.0.4.15");
	char *m = guest_sh(l, "lab-prep", "127.0.4.15",
			   "echo ahci >>/etc/initramfs-tools/modules && update-initramfs -u >/dev/null"
			   " && lsinitramfs /boot/initrd.img-$(uname -r) | grep -c '/ahci\\.ko' &&"
			   " { lsinitramfs /boot/initrd.img-$(uname -r) | grep -c '/virtio_blk\\.ko' ||"
			   " true; } && sync");
	cr_assert(has_line(m, "1") && has_line(m, "0"), "initramfs: %s", m);
	free(m);
	power(l, 315, "stop");
	char *dir = qemu_dir(l, 315), *cmd = strprintf("cp '%s/disk.qcow2' '%s'", dir, sata);
	host_sh(cmd);
	free(cmd);
	free(dir);
	printf("lab: SATA source prepared (IDE boot, ahci in the initramfs) in %.0f s\n",
	       now_s() - t0);

	/* on SATA: the real kernel's disk is behind ahci */
	double t_sata = boot(l, 316, "127.0.4.16");
	char *before = guest_sh(l, "lab-sata", "127.0.4.16",
				"test -d /sys/module/ahci && echo ahci; readlink -f /sys/block/sda; "
				"findmnt -n -o SOURCE /");
	cr_assert(has_line(before, "ahci") && strstr(before, "/ata") &&
			  has_line(before, "/dev/sda1"),
		  "on SATA: %s", before);
	free(before);
	t0 = now_s();
	char *out = NULL;
	int rc = PVAGENT(l, &out, "virtio", "lab-sata", "--address", "127.0.4.16", "--disk-bus",
			 "virtio-blk", "--bench", "--size", "16");
	double t_conv = now_s() - t0;
	show("pvagent virtio lab-sata --bench", out);
	cr_assert_eq(rc, 0, "virtio: exit %d\n%s", rc, out);
	cr_assert(strstr(out, "gain") && strstr(out, "sata"), "no gain table: %s", out);
	const char *gl = strstr(out, "figure");
	printf("lab: SATA -> virtio-blk: %.0f s, boot on SATA %.0f s; measured:\n%s", t_conv,
	       t_sata, gl ? gl : out);
	free(out);
	json_object *c = sim_config(l, 316);
	cr_assert(cfg(c, "virtio0") && !cfg(c, "sata0"), "config: %s",
		  json_object_to_json_string(c));
	json_object_put(c);
	char *after = guest_sh(l, "lab-sata", "127.0.4.16", facts_cmd);
	cr_assert(has_line(after, "block vda virtio_blk") && !strstr(after, "block sda"),
		  "after: %s", after);
	cr_assert(has_line(after, "root /dev/vda1") && strstr(after, "pvagent lab /srv"),
		  "after: %s", after);
	free(after);

	/* its disk as a cloud image on loopback; built into a template */
	free(guest_sh(l, "lab-sata", "127.0.4.16", "sync"));
	power(l, 316, "stop");
	static struct httpserve hs;
	cr_assert_eq(httpserve_start(&hs), 0);
	dir = qemu_dir(l, 316);
	cmd = strprintf("qemu-img convert -c -O qcow2 '%s/disk.qcow2' '%s/lab-debian.qcow2'", dir,
			hs.dir);
	t0 = now_s();
	host_sh(cmd);
	free(cmd);
	free(dir);
	cmd = strprintf("sha256sum '%s/lab-debian.qcow2'", hs.dir);
	char *hex = host_word(cmd), *sum = strprintf("sha256:%s", hex);
	free(cmd);
	free(hex);
	char *ip = strprintf("%s/images", l->tdir);
	cr_assert_eq(mkdir(ip, 0755), 0);
	free(ip);
	put(ip = strprintf("%s/images/lab-debian.image", l->tdir), 0644,
	    strdup("[image]\ndescription = the lab's Debian 12 guest on virtio, as a cloud image\n"
		   "os = debian\nos_version = 12\nurl = http://127.0.0.1:1/lab-debian.qcow2\n"
		   "checksum_algorithm = sha256\nformat = qcow2\nuser = root\n"
		   "cloudinit = nocloud\nprofile = debian\n"
		   "[vm]\nmemory = 512\ncores = 1\nostype = l26\nagent = 1\ndisk = virtio0\n"
		   "net0 = virtio,bridge=vmbr0\n"));
	free(ip);
	put(ip = strprintf("%s/lab-pool.tmpl", l->tdir), 0644,
	    strdup("[template]\nkind = qemu\nos = debian\nos_version = 12\n"
		   "description = the lab image built through the API\n"
		   "[source]\nimage = lab-debian\nfull = yes\nstorage = local-lvm\nbus = virtio\n"
		   "nic = virtio\n"
		   "[pve]\ndescription = ${name}: lab image (pvagent template lab-pool)\n"
		   "memory = 512\n"
		   "[guest]\nuser = root\naddress = agent\n"));
	free(ip);
	char *url = strprintf("%s/lab-debian.qcow2", hs.base);
	rc = PVAGENT(l, &out, "image", "build", "lab-debian", "--url", url, "--checksum", sum,
		     "--storage", "local-lvm", "--import-storage", "local");
	show("pvagent image build lab-debian", out);
	cr_assert_eq(rc, 0, "image build: exit %d\n%s", rc, out);
	cr_assert(strstr(out, "template VM lab-debian-image"), "%s", out);
	free(out);
	free(url);
	free(sum);
	printf("lab: image build from loopback (convert, download-url, import-from, template): "
	       "%.0f s\n", now_s() - t0);
	httpserve_stop(&hs);

	/* up --pool: the lowest address of the range, SSH there */
	t0 = now_s();
	rc = PVAGENT(l, &out, "up", "lab-pool1", "-t", "lab-pool", "--pool", "lab");
	show("pvagent up lab-pool1 --pool lab", out);
	cr_assert_eq(rc, 0, "up: exit %d\n%s", rc, out);
	cr_assert(strstr(out, "127.0.4.100"), "the pool address is not reported: %s", out);
	free(out);
	double t_ssh = wait_ssh("127.0.4.100", BOOT_TIMEOUT);
	cr_assert(t_ssh >= 0, "no SSH at the pool address 127.0.4.100");
	char *f = guest_sh(l, "lab-pool1", "127.0.4.100", facts_cmd);
	cr_assert(has_line(f, "block vda virtio_blk") && strstr(f, "pvagent lab /srv"), "%s", f);
	free(f);
	int vmid = 0;
	json_object *st = simproc_state(&l->sim);
	json_object *gs = json_object_object_get(json_object_object_get(st, "cluster"), "guests");
	for (size_t i = 0; gs && i < json_object_array_length(gs); i++) {
		json_object *g = json_object_array_get_idx(gs, i);
		const char *n = cfg(json_object_object_get(g, "config"), "name");
		if (n && strcmp(n, "lab-pool1") == 0)
			vmid = json_object_get_int(json_object_object_get(g, "vmid"));
	}
	json_object_put(st);
	cr_assert(vmid > 0, "no guest lab-pool1");
	c = sim_config(l, vmid);
	cr_assert(cfg(c, "ipconfig0") && strstr(cfg(c, "ipconfig0"), "ip=127.0.4.100/24"),
		  "ipconfig0: %s", cfg(c, "ipconfig0"));
	json_object_put(c);
	printf("lab: up --pool from the built template: SSH at 127.0.4.100 after %.0f s\n",
	       now_s() - t0);
	free(sata);
}
