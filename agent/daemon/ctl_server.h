/* ctl_server.h - the daemon's end of the control socket (ctl.h): the
 * listening socket (mode 0660, group [daemon] socket_group), the peer
 * check every connection passes before a request is read (SO_PEERCRED:
 * root, the daemon's own user, or a member of that group; as OpenBSD
 * vmd's control.c does), and per connection the line reader and a
 * bounded output queue written without blocking. */
#ifndef PVAGENT_CTL_SERVER_H
#define PVAGENT_CTL_SERVER_H

#include "ctl.h"

#include <stdbool.h>
#include <sys/types.h>

struct ctl_listener {
	int fd;
	char *path;
	gid_t gid;          /* the allowed group */
	bool have_group;
};

/* Is uid a member of gid: peer_gid (its primary group, as SO_PEERCRED
 * gave it) or one of the user's groups? */
bool ctl_uid_in_group(uid_t uid, gid_t peer_gid, gid_t gid);

/* Listen on path (a stale socket nobody answers on is replaced; one that
 * answers is an error). group NULL: the daemon's own group. 0, or -1
 * with *err. */
int ctl_listen(const char *path, const char *group, struct ctl_listener *out, char **err);
/* Close and unlink the socket. */
void ctl_listener_close(struct ctl_listener *l);

/* Output a connection may have queued before it is dropped (a watcher
 * that does not read). */
#define CTL_MAX_QUEUED ((size_t)64 * 1024 * 1024)

struct ctl_conn {
	int fd;
	uid_t uid;
	gid_t gid;          /* the peer's primary group */
	pid_t pid;
	struct ctl_lines in;
	struct sbuf out;
	size_t out_pos;
	bool rd_eof;        /* the peer will send no more (it may still read) */
	bool eof;           /* gone: an error, or it closed both ends */
};

/* Accept one connection (non-blocking) and check its peer. 1: *c filled,
 * allowed. 0: nothing to accept. -1: refused (an error line was written
 * and the socket closed; *who says who, malloc'd) or accept failed
 * (*who NULL). */
int ctl_accept(struct ctl_listener *l, struct ctl_conn *c, char **who);
/* Read what there is. 0 (c->rd_eof when it sent its last byte), or -1
 * when the peer has gone (c->eof). */
int ctl_conn_read(struct ctl_conn *c);
/* Queue o as a line and write what can be written. 0, or -1 (dropped:
 * gone, or too much queued). */
int ctl_conn_send(struct ctl_conn *c, json_object *o);
/* Write what is queued. 0, or -1 (gone). */
int ctl_conn_flush(struct ctl_conn *c);
bool ctl_conn_pending(const struct ctl_conn *c);
void ctl_conn_close(struct ctl_conn *c);
/* Write answer (consumed) without waiting and close: a connection that
 * is not served (too many). */
void ctl_conn_turn_away(struct ctl_conn *c, json_object *answer);

#endif
