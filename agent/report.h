/* report.h - what a drain, an undrain, a window's run or a rolling run did,
 * read from the job store only (store.h: the job, its steps and vars, and
 * its child jobs: those whose params name it "parent", recursively): one
 * lane per job that works on a node (its steps are the node's phases),
 * one move per guest a job set out to move (a drain's or undrain's vars
 * "moves", each completed from its migration job: the migrate step's
 * start and end, PVE's downtime, the gap the probe saw), and per guest
 * where it is at the end against its home. A rolling run plugs in as a
 * job with a child job per node whose own children are its drain and
 * undrain.
 *
 * The model has a JSON form (`pvagent report --json`, and what pvagentd
 * answers a "report" request with); the renderers take the model:
 * report_html.c (a self-contained page), the CLI's text. */
#ifndef PVAGENT_REPORT_H
#define PVAGENT_REPORT_H

#include "store.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* What became of a move. */
enum report_kind {
	REPORT_MOVED = 0, /* on its target (or, moved earlier, tagged there) */
	REPORT_FAILED,    /* tried and failed, or needs attention */
	REPORT_REFUSED,   /* never tried: fits nowhere, or the window closes first */
	REPORT_STAYED,    /* not to move: a template, pinned */
	REPORT_PENDING,   /* planned and not (yet) run: a dry run, an unfinished job */
};
/* "moved", "failed", "refused", "stayed", "pending" */
const char *report_kind_name(enum report_kind k);

/* One step of a lane's job: a phase on its node. Times 0: unknown. */
struct report_step {
	char *name;
	char *state;          /* step_state_name() */
	double started, ended;
	char *result;         /* its summary, or NULL */
	char *error;          /* its error's message, or NULL */
};

/* A job of the tree that works on a node (not a migration). */
struct report_lane {
	long long job;
	char *workflow;       /* "drain", "undrain", rolling's */
	char *node;           /* the job's subject */
	char *state;          /* job_state_name() */
	double started, ended;
	struct report_step *steps;
	size_t n_steps;
};

/* One guest a job set out to move (or kept where it was). */
struct report_move {
	int vmid;
	char *name, *type;
	char *from, *to;      /* to: NULL when it has no target */
	char *method;         /* "online", "offline", "restart", "none", or NULL */
	char *status;         /* as the job recorded it ("moved", "fits nowhere", ...) */
	enum report_kind kind;
	double started, ended; /* its migration (the migrate step); 0 unknown */
	long long downtime_ms; /* PVE's measured downtime; -1 none recorded */
	long long gap_ms;     /* the longest gap the probe saw; -1 none */
	char *why;            /* a failure's or a refusal's reason, or NULL */
	long long job;        /* its migration job, 0 none */
	long long by;         /* the job that planned it (a lane's) */
	char *home;           /* the node it belongs on, or NULL */
};

/* Per guest (by VMID), in the order first met: where it ended up. */
struct report_guest {
	int vmid;
	char *name, *type;
	char *home;           /* NULL when no job named one */
	char *at;             /* where it is at the end, as the moves leave it */
	bool away;            /* home known and at another node */
	size_t n_moves, n_failed;
	long long downtime_ms; /* the sum of its moves' (-1: none recorded) */
};

struct report {
	long long id;
	char *workflow, *subject, *state;
	char *kind;           /* "drain", "undrain", "window" (a drain with a
				 deadline), "rolling", "migrate", or the workflow */
	double created, started, ended;
	double deadline;      /* a window's end (unix seconds), 0 none */
	char *error;          /* the root job's error message, or NULL */
	char *left;           /* what it left, when it failed, or NULL */
	double t0, t1;        /* the span of everything recorded */
	struct report_lane *lanes;
	size_t n_lanes;
	struct report_move *moves;
	size_t n_moves;
	struct report_guest *guests; /* derived (report_derive) */
	size_t n_guests;
	/* derived */
	size_t n_moved, n_failed, n_refused, n_stayed, n_pending, n_away;
	long long downtime_ms; /* the sum of the moves' recorded downtimes, -1 none */
	long long max_gap_ms;  /* the longest gap clients saw, -1 none */
};

/* Read job id and its tree from the store into *out. 1 built, 0 no such
 * job (nothing set), -1 error (*err). */
int report_build(struct store *s, long long id, struct report *out, char **err);
void report_free(struct report *r);

/* The model as JSON (new reference, NULL on OOM), and back: 0, or -1 with
 * *err naming the member that is missing or of the wrong type. */
json_object *report_json(const struct report *r);
int report_from_json(json_object *o, struct report *out, char **err);

/* "12:03:04" (local time) of unix time t into buf (at least 24 bytes);
 * "-" when t is 0. With the date when with_date. */
const char *report_clock(char *buf, size_t n, double t, bool with_date);

/* A figure in milliseconds as str_duration() writes it ("51ms", "1.2s"),
 * "-" when negative (none recorded); buf at least 24 bytes. */
const char *report_ms(char *buf, size_t n, long long ms);

#endif
