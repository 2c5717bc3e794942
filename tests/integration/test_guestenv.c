/* test_guestenv.c - the test guest harness itself (tests/support/guestenv.*):
 * the stand-ins that answer from the boot file (sysctl, mount, swapinfo,
 * ifconfig, ip addr) run inside real sshd chroots, and the boot file
 * watcher driven by a real simulator (tests/support/simproc.h) started
 * with --guest-root: its sshd answers exactly while the simulated guest is
 * up, and sessions do not survive a stop or a restart. Each test has its
 * own 127.0.1.17N address. Run from the repository root, as root. */
#include "guestenv.h"
#include "simproc.h"
#include "ssh.h"
#include "util.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct guestenv ge;
static struct simproc sim;

static void cleanup(void)
{
	guestenv_stop(&ge);
	simproc_stop(&sim);
}

TestSuite(guestenv, .fini = cleanup, .timeout = 120);

static void start(const char *fixture, const char *addr)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (sshd with ChrootDirectory)");
	struct guestenv_opts o = {.fixture = fixture, .addr = addr};
	cr_assert_eq(guestenv_start(&ge, &o), 0, "cannot start guest %s (see stderr)", fixture);
}

static struct ssh_session *login(void)
{
	struct ssh_opts so = guestenv_ssh_opts(&ge);
	struct ssh_session *s = NULL;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_connect(&so, &s, &e), 0, "%s", ssh_error_str(&e));
	return s;
}

/* stdout and stderr of a command line, and its exit status. */
static char *run(struct ssh_session *s, const char *cmdline, int *status)
{
	struct ssh_result out;
	struct ssh_error e = {0};
	cr_assert_eq(ssh_exec_cmdline(s, cmdline, NULL, &out, &e), 0, "%s: %s", cmdline,
		     ssh_error_str(&e));
	*status = out.exit_status;
	char *t = strprintf("%s%s", sbuf_str(&out.out), sbuf_str(&out.err));
	ssh_result_free(&out);
	return t;
}

static void expect_out(struct ssh_session *s, const char *cmdline, int want_status,
		       const char *want)
{
	int st = -1;
	char *o = run(s, cmdline, &st);
	cr_expect_eq(st, want_status, "%s: exit %d: %s", cmdline, st, o);
	cr_expect_str_eq(o, want, "%s", cmdline);
	free(o);
}

/* ---- stand-ins answering from the boot file ---------------------------------- */

Test(guestenv, freebsd_standins_follow_the_boot_file)
{
	start("freebsd-9.0", "127.0.1.170");
	struct ssh_session *s = login();
	/* no simulator yet: no boot file */
	expect_out(s, "ifconfig -l", 0, "lo0\n");
	expect_out(s, "sysctl -n hw.physmem", 0, "1073741824\n");
	cr_assert_eq(guestenv_write(&ge, "/.pvagent-facts/boot",
				    "state up\nreachable yes\nboot-id 1\ndisk-bus virtio-blk\n"
				    "nic-model virtio\ndisk vtbd0\nnic vtnet0\nmac bc:24:11:00:01:90\n"
				    "address 127.0.1.170\n"
				    "mount /dev/ufsid/4f13ff5d2bf8a1c6 / ufs\n"
				    "mount /dev/ufsid/4f13ff6031d7e2a9 /usr ufs\n"
				    "swap /dev/vtbd0s1b\n",
				    0644), 0);
	expect_out(s, "sysctl -n kern.disks", 0, "vtbd0\n");
	expect_out(s, "sysctl kern.disks hw.physmem kern.ostype", 0,
		   "kern.disks: vtbd0\nhw.physmem: 1073741824\nkern.ostype: FreeBSD\n");
	expect_out(s, "sysctl -n kern.nosuch", 1, "sysctl: unknown oid 'kern.nosuch'\n");
	expect_out(s, "mount -p", 0,
		   "/dev/ufsid/4f13ff5d2bf8a1c6 /               ufs     rw              1 1\n"
		   "devfs                   /dev            devfs   rw              0 0\n"
		   "/dev/ufsid/4f13ff6031d7e2a9 /usr            ufs     rw              2 2\n");
	expect_out(s, "mount", 0,
		   "/dev/ufsid/4f13ff5d2bf8a1c6 on / (ufs, local)\n"
		   "devfs on /dev (devfs, local, multilabel)\n"
		   "/dev/ufsid/4f13ff6031d7e2a9 on /usr (ufs, local)\n");
	expect_out(s, "swapinfo", 0,
		   "Device          1K-blocks     Used    Avail Capacity\n"
		   "/dev/vtbd0s1b     1048576        0  1048576      0%\n");
	expect_out(s, "ifconfig -l", 0, "vtnet0 lo0\n");
	expect_out(s, "ifconfig vtnet0", 0,
		   "vtnet0: flags=8843<UP,BROADCAST,RUNNING,SIMPLEX,MULTICAST> metric 0 mtu 1500\n"
		   "\toptions=c00b8<VLAN_MTU,VLAN_HWTAGGING,JUMBO_MTU,VLAN_HWCSUM,VLAN_HWTSO,"
		   "LINKSTATE>\n"
		   "\tether bc:24:11:00:01:90\n"
		   "\tinet 127.0.1.170 netmask 0xffffff00 broadcast 127.0.1.255\n"
		   "\tmedia: Ethernet 10Gbase-T <full-duplex>\n"
		   "\tstatus: active\n");
	expect_out(s, "ifconfig em0", 1, "ifconfig: interface em0 does not exist\n");
	int st;
	char *o = run(s, "ifconfig lo0", &st);
	cr_expect(st == 0 && strstr(o, "\tinet 127.0.0.1 netmask 0xff000000"), "%s", o);
	free(o);
	/* Linux-only commands are not there */
	o = run(s, "ip -o addr", &st);
	cr_expect_eq(st, 127, "%s", o);
	free(o);
	ssh_close(s);
}

Test(guestenv, linux_standins_follow_the_boot_file)
{
	start("ubuntu-24.04", "127.0.1.171");
	cr_assert_eq(guestenv_write(&ge, "/.pvagent-facts/boot",
				    "state up\nreachable yes\nboot-id 1\ndisk-bus virtio-blk\n"
				    "nic-model virtio\ndisk vda\nnic ens18\nmac bc:24:11:00:90:24\n"
				    "address 127.0.1.171\nmount /dev/vda2 / ext4\n",
				    0644), 0);
	char *proc = guestenv_path(&ge, "/proc");
	cr_assert_not_null(proc);
	cr_assert_eq(mkdir(proc, 0755), 0);
	free(proc);
	cr_assert_eq(guestenv_write(&ge, "/proc/mounts",
				    "/dev/vda2 / ext4 rw,relatime 0 0\n"
				    "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n",
				    0644), 0);
	struct ssh_session *s = login();
	expect_out(s, "ip -o addr", 0,
		   "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever "
		   "preferred_lft forever\n"
		   "2: ens18    inet 127.0.1.171/24 brd 127.0.1.255 scope global ens18\\       "
		   "valid_lft forever preferred_lft forever\n");
	expect_out(s, "ip -o addr show ens18", 0,
		   "2: ens18    inet 127.0.1.171/24 brd 127.0.1.255 scope global ens18\\       "
		   "valid_lft forever preferred_lft forever\n");
	expect_out(s, "ip addr show dev ens18", 0,
		   "2: ens18: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP "
		   "group default qlen 1000\n"
		   "    link/ether bc:24:11:00:90:24 brd ff:ff:ff:ff:ff:ff\n"
		   "    inet 127.0.1.171/24 brd 127.0.1.255 scope global ens18\n"
		   "       valid_lft forever preferred_lft forever\n");
	expect_out(s, "ip -o addr show dev eth0", 1, "Device \"eth0\" does not exist.\n");
	/* ip -o link still answers from the facts */
	int st;
	char *o = run(s, "ip -o link", &st);
	cr_expect(st == 0 && strstr(o, "2: ens18: "), "%s", o);
	free(o);
	expect_out(s, "mount", 0,
		   "/dev/vda2 on / type ext4 (rw,relatime)\n"
		   "proc on /proc type proc (rw,nosuid,nodev,noexec,relatime)\n");
	expect_out(s, "sysctl -n kern.disks", 255,
		   "sysctl: cannot stat /proc/sys/kern/disks: No such file or directory\n");
	o = run(s, "ifconfig; swapinfo", &st);
	cr_expect_eq(st, 127, "%s", o);
	free(o);
	ssh_close(s);
}

Test(guestenv, old_ubuntu_has_net_tools_ifconfig)
{
	start("ubuntu-12.04", "127.0.1.172");
	cr_assert_eq(guestenv_write(&ge, "/.pvagent-facts/boot",
				    "state up\nreachable yes\nboot-id 1\nnic eth0\n"
				    "mac 52:54:00:7d:41:e2\naddress 127.0.1.172\n",
				    0644), 0);
	struct ssh_session *s = login();
	expect_out(s, "ifconfig eth0", 0,
		   "eth0      Link encap:Ethernet  HWaddr 52:54:00:7d:41:e2  \n"
		   "          inet addr:127.0.1.172  Bcast:127.0.1.255  Mask:255.255.255.0\n"
		   "          UP BROADCAST RUNNING MULTICAST  MTU:1500  Metric:1\n\n");
	/* iproute2 of 3.2 kernels: no lifetimes */
	expect_out(s, "ip -o addr show eth0", 0,
		   "2: eth0    inet 127.0.1.172/24 brd 127.0.1.255 scope global eth0\\       "
		   "valid_lft forever preferred_lft forever\n");
	ssh_close(s);
}

/* ---- the watcher, driven by the simulator --------------------------------------- */

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool accepts(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ge.sd.port)};
	cr_assert_eq(inet_pton(AF_INET, ge.sd.addr, &sa.sin_addr), 1);
	bool ok = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	close(fd);
	return ok;
}

/* Wait (bounded) until the guest's port accepts or refuses as wanted: the
 * watcher applies the boot file on its own thread. */
static void wait_reachable(bool want)
{
	long long deadline = mono_ms() + 10000;
	while (accepts() != want) {
		if (mono_ms() >= deadline) {
			char *bt = NULL;
			guestenv_read(&ge, "/.pvagent-facts/boot", &bt);
			cr_assert_fail("the sshd never became %s; the boot file:\n%s",
				       want ? "reachable" : "unreachable", bt ? bt : "(none)");
		}
		poll(NULL, 0, 10); /* retry interval of a deadline-bounded wait */
	}
}

/* Wait (bounded) until an open session fails a command: it was killed. */
static void wait_session_dead(struct ssh_session *s)
{
	long long deadline = mono_ms() + 10000;
	for (;;) {
		struct ssh_result out;
		struct ssh_error e = {0};
		int rc = ssh_exec_cmdline(s, "true", NULL, &out, &e);
		if (rc == 0)
			ssh_result_free(&out);
		ssh_error_clear(&e);
		if (rc < 0)
			return;
		cr_assert_lt(mono_ms(), deadline, "the session survived");
		poll(NULL, 0, 10);
	}
}

/* Log in, retrying (bounded) while a listener the watcher is replacing
 * drops the handshake. */
static struct ssh_session *login_retry(void)
{
	long long deadline = mono_ms() + 10000;
	struct ssh_opts so = guestenv_ssh_opts(&ge);
	for (;;) {
		struct ssh_session *s = NULL;
		struct ssh_error e = {0};
		if (ssh_connect(&so, &s, &e) == 0)
			return s;
		cr_assert_lt(mono_ms(), deadline, "%s", ssh_error_str(&e));
		ssh_error_clear(&e);
		poll(NULL, 0, 10);
	}
}

static void sim_call(const char *method, const char *path)
{
	long status = 0;
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&sim, method, path, "", &status, &ans), 0, "%s %s", method, path);
	cr_assert_eq(status, 200, "%s %s -> %ld %s", method, path, status,
		     ans ? json_object_to_json_string(ans) : "");
	json_object_put(ans);
	cr_assert_eq(simproc_advance(&sim, 60), 0);
}

static void sim_config(const char *form)
{
	long status = 0;
	cr_assert_eq(sim_api(&sim, "PUT", "/nodes/pve1/qemu/190/config", form, &status,
			     NULL), 0);
	cr_assert_eq(status, 200);
}

Test(guestenv, watcher_follows_the_simulated_guest)
{
	const char *sim_bin = getenv("PVESIM_BIN");
	if (access(sim_bin ? sim_bin : "build/san/pvesim", X_OK) < 0)
		cr_skip_test("no simulator binary (make build/san/pvesim)");
	start("freebsd-9.0", "127.0.1.173");
	/* the scenario names no root: --guest-root gives it the guest's */
	char *scen = strprintf(
		"{\"pve_version\": \"9.1\", \"nodes\": [{\"name\": \"pve1\"}],\n"
		" \"storages\": [{\"id\": \"local-lvm\", \"type\": \"lvmthin\","
		" \"content\": \"images,rootdir\"}],\n"
		" \"tokens\": [{\"id\": \"root@pam!pvagent\","
		" \"secret\": \"6b1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\", \"privs\": \"all\"}],\n"
		" \"guests\": [{\"vmid\": 190, \"node\": \"pve1\", \"status\": \"stopped\",\n"
		"   \"fixture\": \"freebsd-9.0\", \"address\": \"%s\",\n"
		"   \"config\": {\"name\": \"fbsd9\", \"memory\": \"1024\", \"ostype\": \"other\","
		" \"boot\": \"order=ide0\", \"ide0\": \"local-lvm:vm-190-disk-0,size=16G\","
		" \"net0\": \"e1000=BC:24:11:00:01:90,bridge=vmbr0\"}}]}\n",
		ge.sd.addr);
	char *path = strprintf("%s/scenario.json", ge.sd.etc);
	char *root_arg = strprintf("190=%s", ge.sd.root);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fputs(scen, f) < 0, 0);
	cr_assert_eq(fclose(f), 0);
	const char *args[] = {"--guest-root", root_arg, NULL};
	cr_assert_eq(simproc_start(&sim, path, args), 0, "simulator did not start");

	/* the scenario's guest is stopped: the first apply takes the sshd down */
	cr_assert(accepts());
	cr_assert_eq(guestenv_watch_start(&ge), 0);
	cr_expect_not(ge.up);
	cr_expect_not(accepts());

	/* started: reachable, and the boot file says how */
	sim_call("POST", "/nodes/pve1/qemu/190/status/start");
	wait_reachable(true);
	struct ssh_session *s = login_retry();
	expect_out(s, "sysctl -n kern.disks; ifconfig -l; mount -p | head -n 1", 0,
		   "ad0 ada0\nem0 lo0\n/dev/ad0s1a             /               ufs     rw"
		   "              1 1\n");

	/* stopped: the listener goes and the open session with it */
	sim_call("POST", "/nodes/pve1/qemu/190/status/stop");
	wait_session_dead(s);
	ssh_close(s);
	wait_reachable(false);

	/* the disk on virtio-blk without the kmod: it hangs at mountroot */
	sim_config("virtio0=local-lvm%3Avm-190-disk-0%2Csize%3D16G&delete=ide0"
		   "&boot=order%3Dvirtio0");
	sim_call("POST", "/nodes/pve1/qemu/190/status/start");
	char *bt = NULL;
	cr_assert_eq(guestenv_read(&ge, "/.pvagent-facts/boot", &bt), 0);
	cr_expect(strstr(bt, "state mountroot\n") == bt, "%s", bt);
	free(bt);
	cr_expect_not(accepts());
	sim_call("POST", "/nodes/pve1/qemu/190/status/stop");
	sim_config("ide0=local-lvm%3Avm-190-disk-0%2Csize%3D16G&delete=virtio0"
		   "&boot=order%3Dide0");
	sim_call("POST", "/nodes/pve1/qemu/190/status/start");
	wait_reachable(true);

	/* a reboot (stop and start in one task): sessions from before die, the
	 * guest answers again */
	s = login_retry();
	sim_call("POST", "/nodes/pve1/qemu/190/status/reboot");
	wait_session_dead(s);
	ssh_close(s);
	wait_reachable(true);
	s = login_retry();
	expect_out(s, "sysctl -n kern.disks", 0, "ad0 ada0\n");
	ssh_close(s);

	/* stopping the watcher leaves the guest up */
	cr_assert_eq(guestenv_watch_stop(&ge), 0);
	cr_expect(ge.up);
	cr_expect(accepts());
	cr_assert_null(ge.watch);
	/* ... and changes are no longer followed */
	sim_call("POST", "/nodes/pve1/qemu/190/status/stop");
	cr_assert_eq(guestenv_read(&ge, "/.pvagent-facts/boot", &bt), 0);
	cr_expect_str_eq(bt, "state stopped\nreachable no\n");
	free(bt);
	cr_expect(accepts());
	/* a second watcher applies the current file at once */
	cr_assert_eq(guestenv_watch_start(&ge), 0);
	cr_expect_not(accepts());
	free(scen);
	free(path);
	free(root_arg);
	/* guestenv_stop (the suite's fini) ends the watcher */
}
