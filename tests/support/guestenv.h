/* guestenv.h - test support: a fixture guest reachable over a real sshd.
 *
 * guestenv_start() takes tests/guests/<fixture>/root, starts a private
 * sshd on a 127.0.1.N address chrooted into a copy of it (sshd.h), and
 * completes the copy into something the agent can talk to:
 *   /bin/        busybox plus the stand-ins of tests/guests/bin (uname,
 *                freebsd-version, lsb_release, kldstat, pkg, pkg_add,
 *                update-initramfs, lsinitramfs, diskinfo, gpart, dumpfs,
 *                blkid, ip), which answer from the fixture's facts file
 *   /.pvagent-facts/facts    a copy of tests/guests/<fixture>/facts;
 *                 fixture    the fixture's name;
 *                 fail-pkg, fail-update-initramfs: create to make those
 *                 stand-ins fail
 *   files the real OS has and the fixture leaves out: /etc/os-release
 *   (from the facts, where the OS has one), /boot (and /boot/kernel on
 *   FreeBSD), and on Linux /etc/hostname and a stock /etc/hosts.
 * A client key (authorized for root) and a known_hosts for this sshd are
 * made in the sshd's scratch directory.
 *
 * The guest can be taken down and brought back (pause/resume) without
 * losing its files, and guestenv_follow() does that from the PVE
 * simulator's boot model: the guest's sshd listens only while the
 * simulator says the guest is up and reachable. Point the simulator's
 * scenario guest "root" at ge->sd.root so the boot model reads the very
 * files the agent edits.
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

struct guestenv {
	struct sshd sd;           /* sd.root is the guest's "/" */
	char *fixture;
	char *known_hosts;        /* sd.etc/known_hosts (the ed25519 host key) */
	bool up;                  /* sshd is listening */
};

int guestenv_start(struct guestenv *ge, const struct guestenv_opts *o);
/* Stop sshd and remove everything. Safe on a zeroed struct. */
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

/* A listing of the guest tree for before/after comparisons: one line per
 * file, directory and symlink (path, type, mode, owner, size, content
 * hash or link target), sorted; /bin, /dev, /tmp and /.pvagent-facts are
 * left out. malloc'd. Not thread-safe (nftw has no context pointer). */
char *guestenv_snapshot(const struct guestenv *ge);

#endif
