/* ctl_client.h - the CLI's end of the control socket (ctl.h): connect
 * (telling "no daemon" from an error), send a request, read answers and
 * streamed events one line at a time. */
#ifndef PVAGENT_CTL_CLIENT_H
#define PVAGENT_CTL_CLIENT_H

#include "ctl.h"

#include <json-c/json.h>

struct ctl_client {
	int fd;
	struct ctl_lines in;
};

/* 0 connected; 1 no daemon answers on path (no socket, or refused
 * connections); -1 error (*err: permission denied, ...). */
int ctl_client_connect(const char *path, struct ctl_client *c, char **err);
/* One request line. 0 or -1 (*err). */
int ctl_client_send(struct ctl_client *c, json_object *req, char **err);
/* The next line as JSON: 1 with *msg (owned); 0 when timeout_ms passed
 * (-1: no timeout) or a signal came; -1 the daemon closed or an error
 * (*err). */
int ctl_client_recv(struct ctl_client *c, json_object **msg, int timeout_ms, char **err);
/* Send req and read lines until its answer ("ok" member): 1 with *answer,
 * -1 (*err). Lines before the answer are dropped. */
int ctl_client_call(struct ctl_client *c, json_object *req, json_object **answer, char **err);
void ctl_client_close(struct ctl_client *c);

#endif
