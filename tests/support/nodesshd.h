/* nodesshd.h - test support: one test sshd (sshd.h) per node of a running
 * simulator, standing in for the nodes' own SSH: each chroot's bin/ holds
 * the commands of tests/pvesim/nodeshell/commands (apt-get, reboot,
 * ha-manager, ceph, pve8to9, pveversion, ...) as copies of
 * tests/pvesim/nodeshell/forward, which hand their argv to the simulator's
 * node-shell listener (the simulator must run with --node-shell-listen
 * 127.0.0.1:0) and print its answer; /etc/pvesim/node names the node.
 * Run from the repository root (or set PVESIM_NODESHELL to the directory).
 * Every function prints why it failed on stderr and returns -1. */
#ifndef TESTS_NODESSHD_H
#define TESTS_NODESSHD_H

#include "simproc.h"
#include "sshd.h"

#include <stddef.h>

struct nodesshd {
	size_t n;
	char **names;      /* the nodes, as the simulator lists them */
	struct sshd *sshd; /* sshd[i] stands in for names[i]'s SSH */
};

/* Start one sshd per node of sp, each on its own loopback address
 * (127.0.38.1, .2, ...: a node's address for a client that keeps one per
 * host) and a random port. */
int nodesshd_start(struct nodesshd *ns, struct simproc *sp);
/* The sshd of node, or NULL. */
struct sshd *nodesshd_for(struct nodesshd *ns, const char *node);
/* ssh root@NODE's address with the test key, running the remote command
 * line cmd; *out (if not NULL) gets stdout+stderr. The exit status (ssh's
 * 255 when it cannot connect), or -1. */
int nodesshd_run(struct nodesshd *ns, const char *node, const char *cmd, char **out);
/* Stop every sshd and free; safe on a zeroed struct. */
int nodesshd_stop(struct nodesshd *ns);

#endif
