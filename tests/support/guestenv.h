/* guestenv.h - test support: a fixture guest reachable over a real sshd.
 *
 * guestenv_start() takes tests/guests/<fixture>/root, starts a private
 * sshd on a 127.0.1.N address chrooted into a copy of it (sshd.h), and
 * completes the copy into something the agent can talk to:
 *   /bin/        busybox plus every stand-in of tests/guests/bin (uname,
 *                freebsd-version, lsb_release, kldstat, pkg, pkg_add,
 *                update-initramfs, lsinitramfs, diskinfo, gpart, dumpfs,
 *                blkid, ip, sysctl, mount, swapinfo, ifconfig, ...), which
 *                answer from the fixture's facts file and from the boot
 *                file (tests/guests/README.md lists them)
 *   /.pvagent-facts/facts    a copy of tests/guests/<fixture>/facts;
 *                 fixture    the fixture's name;
 *                 boot       the simulator's boot verdict, once a
 *                            simulator drives this root
 *                            (tests/pvesim/bootfacts.h);
 *                 fail-pkg, fail-update-initramfs: create to make those
 *                 stand-ins fail
 *   files the real OS has and the fixture leaves out: /etc/os-release
 *   (from the facts, where the OS has one), /boot (and /boot/kernel on
 *   FreeBSD), and on Linux /etc/hostname and a stock /etc/hosts.
 * A client key (authorized for root) and a known_hosts for this sshd are
 * made in the sshd's scratch directory.
 *
 * The guest can be taken down and brought back (pause/resume) without
 * losing its files, and guestenv_follow() (on request) or the watcher
 * (guestenv_watch_start: on every change of /.pvagent-facts/boot) does
 * that from the PVE simulator's boot model: the guest's sshd listens only
 * while the simulator says the guest is up and reachable. Point the
 * simulator's scenario guest "root" (or pvesim --guest-root VMID=DIR) at
 * ge->sd.root so the boot model reads the very files the agent edits.
 *
 * Needs root, /usr/sbin/sshd, ssh-keygen and busybox-static (as sshd.h).
 * Every function prints why it failed on stderr and returns -1. */
#ifndef TESTS_GUESTENV_H
#define TESTS_GUESTENV_H

#include <stdbool.h>

#include "ssh.h"
#include "sshd.h"
#include "simproc.h"

struct guestenv_opts {
	const char *fixture;      /* "freebsd-9.0", "ubuntu-24.04", ... */
	const char *addr;         /* 127.0.1.N */
	const char *guests_dir;   /* NULL: $PVAGENT_GUESTS or "tests/guests" */
	const struct sshd_opts *sshd; /* more sshd options (root and addr are
					 set here), or NULL */
};

struct guestenv_watch;

struct guestenv {
	struct sshd sd;           /* sd.root is the guest's "/" */
	char *fixture;
	char *known_hosts;        /* sd.etc/known_hosts (the ed25519 host key) */
	bool up;                  /* sshd is listening */
	struct guestenv_watch *watch; /* the boot file watcher, or NULL */
};

int guestenv_start(struct guestenv *ge, const struct guestenv_opts *o);
/* Stop the watcher (if running) and sshd and remove everything. Safe on a
 * zeroed struct. */
int guestenv_stop(struct guestenv *ge);

/* Options for ssh_connect: root, the client key, strict host key check;
 * strings borrowed from ge. */
struct ssh_opts guestenv_ssh_opts(const struct guestenv *ge);

/* Host path of a guest path (malloc'd). */
char *guestenv_path(const struct guestenv *ge, const char *guest_path);
/* Read / write a guest file (write: create or replace, mode for new
 * files). read: *text malloc'd; -1 if missing. */
int guestenv_read(const struct guestenv *ge, const char *guest_path, char **text);
int guestenv_write(const struct guestenv *ge, const char *guest_path, const char *text,
		   unsigned mode);
bool guestenv_exists(const struct guestenv *ge, const char *guest_path);

/* The guest goes down: sessions killed, listener stopped, files kept. */
int guestenv_pause(struct guestenv *ge);
/* The guest comes back on the same address and port. */
int guestenv_resume(struct guestenv *ge);

/* Ask the simulator (GET /_sim/state: cluster.guests[].boot.reachable)
 * whether guest vmid is up and reachable and pause or resume the sshd to
 * match. Call it after each simulator action that starts, stops or
 * reconfigures the guest. Returns 1 (reachable), 0 (not) or -1. */
int guestenv_follow(struct guestenv *ge, struct simproc *sp, int vmid);

/* Follow the boot file as it changes: a thread waits (inotify, no polling)
 * on /.pvagent-facts/ and applies each new /.pvagent-facts/boot: "reachable
 * yes" resumes the sshd, anything else pauses it; a guest that went through
 * "state stopped", or whose "boot-id" changed (a restart the watcher did not
 * see), is paused before it is resumed, so sessions from before the restart
 * die. The current file is applied once before this returns (no file yet:
 * the sshd stays as it is). While the watcher runs, do not call
 * guestenv_pause, guestenv_resume or guestenv_follow. */
int guestenv_watch_start(struct guestenv *ge);
/* Stop the thread and free it; the sshd is left up or down as the watcher
 * last set it (one the watcher thread started is restarted from the
 * calling thread, dropping its sessions: PR_SET_PDEATHSIG follows the
 * thread that forked). Returns -1 if the watcher failed to apply a change
 * (printed on stderr when it happened). Safe when no watcher runs. */
int guestenv_watch_stop(struct guestenv *ge);

/* A listing of the guest tree for before/after comparisons: one line per
 * file, directory and symlink (path, type, mode, owner, size, content
 * hash or link target), sorted; /bin, /dev, /proc, /tmp and
 * /.pvagent-facts are left out. malloc'd. Not thread-safe (nftw has no
 * context pointer). */
char *guestenv_snapshot(const struct guestenv *ge);

/* A one-node PVE 8.4 scenario (node pve1, storage local-lvm, the token
 * root@pam!pvagent with every privilege) whose one guest is this fixture:
 * VMID vmid, qemu, running, at ge's address, its boot model reading ge's
 * root; config_members the members of its config object (JSON without
 * the braces). malloc'd; NULL when out of memory. */
char *guestenv_scenario(const struct guestenv *ge, int vmid, const char *config_members);

#endif
