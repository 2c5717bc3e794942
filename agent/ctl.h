/* ctl.h - the control protocol between pvagent and pvagentd (pvagentd(8),
 * CONTROL PROTOCOL): JSON lines over a unix socket, at most
 * CTL_MAX_LINE bytes a line. This module owns the framing (a line reader
 * with that cap), the requests' shape and the answers' shape; the socket
 * ends are ctl_server.h and ctl_client.h.
 *
 * Request: {"id":ANY,"op":"submit|jobs|job|cancel|resume|status|watch|report",...}
 * Answer:  {"id":ID,"ok":true,...} or
 *          {"id":ID,"ok":false,"error":CODE,"message":TEXT}
 * Streamed (after a submit, resume or watch answer): the engine's events
 * in their JSON form (event.h) with "id" and "ticket" added, and the
 * daemon's own kinds: "queued" (waiting, text says for what), "start"
 * (pid), "output" (fd 1 or 2, data: what the command printed), "exit"
 * (code: its exit code). */
#ifndef PVAGENT_CTL_H
#define PVAGENT_CTL_H

#include "util.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define PVAGENT_VERSION "0.9.0"
#define CTL_MAX_LINE ((size_t)1024 * 1024)

enum ctl_op {
	CTL_OP_SUBMIT,
	CTL_OP_JOBS,
	CTL_OP_JOB,
	CTL_OP_CANCEL,
	CTL_OP_RESUME,
	CTL_OP_STATUS,
	CTL_OP_WATCH,
	CTL_OP_REPORT,      /* {"job":ID}: the report model (report.h) as "report" */
	CTL_OP__COUNT
};

/* The peer policy, declared per request (as redis declares its commands'
 * flags): who of the peers the socket admits may send it. Each request
 * has exactly one of the first three; pvagentd checks them in one place
 * before the request's handler (control.c), and the CLI sends a
 * CMD_READONLY command's requests only when they are CTL_READ. */
#define CTL_READ 0x1u     /* any admitted peer: it changes nothing */
#define CTL_SUBMIT 0x2u   /* any admitted peer: it makes jobs, its own */
#define CTL_OWNER 0x4u    /* it acts on an existing job: only the job's owner
			     (the peer that submitted or resumed it), root
			     or the daemon's user */
#define CTL_NOT_STOPPING 0x8u /* refused ("stopping") while the daemon stops */
#define CTL_ACCESS (CTL_READ | CTL_SUBMIT | CTL_OWNER)

/* One request of the protocol: its name on the wire and its CTL_* flags. */
struct ctl_op_def {
	const char *name;
	unsigned flags;
};
/* The request op (< CTL_OP__COUNT), or NULL. */
const struct ctl_op_def *ctl_op_def(enum ctl_op op);
/* 0 and *out, or -1 for an unknown name. */
int ctl_op_parse(const char *name, enum ctl_op *out);

/* Lines out of a byte stream. Zero-initialise; max 0 means CTL_MAX_LINE. */
struct ctl_lines {
	struct sbuf buf;
	size_t pos;           /* start of the next line in buf */
	size_t open;          /* length of the unfinished line at its end */
	size_t max;
	bool discarding;      /* inside a line that is too long: dropped to its '\n' */
	bool too_long;        /* one such line to report */
};
/* Append bytes read. 0, or -1 when out of memory. */
int ctl_lines_feed(struct ctl_lines *l, const char *data, size_t n);
/* The next whole line (without '\n', NUL-terminated, valid until the next
 * feed or next call): 1. 0: none yet. -1: a line longer than the cap came
 * (it is dropped up to its newline; reported once). */
int ctl_lines_next(struct ctl_lines *l, char **line, size_t *len);
void ctl_lines_free(struct ctl_lines *l);

/* Parse a request line: an object with a string "op" that is known.
 * 0 with *req (owned) and *op; -1 with *code ("bad_request" or
 * "unknown_op") and *msg (malloc'd); *req is then the parsed object when
 * there was one (its "id" for the answer) or NULL. */
int ctl_request_parse(const char *line, size_t len, json_object **req, enum ctl_op *op,
		      const char **code, char **msg);

/* {"id":id,"ok":true} (id borrowed, may be NULL). NULL on OOM. */
json_object *ctl_ok(json_object *id);
/* {"id":id,"ok":false,"error":code,"message":...}. NULL on OOM. */
json_object *ctl_error(json_object *id, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* o as one line with '\n' appended to b. 0 or -1. */
int ctl_line_add(struct sbuf *b, json_object *o);

#endif
