/* up_result.h - what an `up` or `down` job made of one guest, as the up
 * and down workflows fill it (wf_up.h) and the CLI prints it. */
#ifndef PVAGENT_UP_RESULT_H
#define PVAGENT_UP_RESULT_H

#include "guest.h"
#include "inject.h"
#include "job.h"
#include "pve.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

enum up_status {
	UP_FAILED = 0,
	UP_CREATED,     /* a new guest */
	UP_CONVERGED,   /* existed; config changed and/or started */
	UP_UNCHANGED,   /* existed and matched */
	UP_DELETED,     /* down: deleted */
	UP_ABSENT,      /* down: did not exist */
	UP_PLANNED,     /* --dry-run: plan[] and diff[] say what would be done */
};
const char *up_status_name(enum up_status s); /* "created", ... */

struct up_step {
	char *step;       /* "clone" */
	double elapsed_s;
};

/* The inject step of one guest. */
struct up_inject {
	bool ran;                 /* the step ran (the template has guest
				     files; not no_inject, not no_start) */
	enum inject_status status; /* INJ_CHANGED, INJ_UNCHANGED, INJ_FAILED or
				      INJ_FAILED_PARTIAL */
	enum job_outcome outcome; /* inject's */
	char *failed_step;        /* "connect", "detect", "write", ... when
				     failed, else NULL */
	char *summary;            /* inject_result_summary(), or the SSH wait's
				     failure */
};

struct up_result {
	char *name;
	int vmid;               /* 0 if none */
	char *node;             /* or NULL */
	enum guest_type type;
	char *address;          /* or NULL (--no-start, down) */
	enum up_status status;
	struct up_step *steps;  /* the steps done, with their times */
	size_t n_steps;
	double elapsed_s;       /* every step's time, the failed one's too */
	char **diff;            /* "key: old -> new" lines applied */
	char *pending;          /* keys PVE applies at the next restart
				   (changed while running), comma separated,
				   or NULL */
	size_t n_diff;
	char **plan;            /* --dry-run: what would be done, step by step
				   ("clone VM 9014 (fbsd-base) on pve1 as VMID
				   101, full, onto local-lvm") */
	size_t n_plan;
	int claims;             /* create/clone requests issued */
	struct up_inject inject;
	long long job;          /* its job in the store, 0 when not stored */
	enum job_outcome outcome;
	char *left;             /* what a failure left behind, or NULL */
	char *failed_step;      /* the step it failed (or was interrupted) in */
	struct pve_error error; /* kind PVE_OK unless failed; a failed inject:
				   what "inject", the message starting with
				   the inject step that failed, and a kind
				   whose outcome is inject's */
};
void up_result_free(struct up_result *r);
/* {"name", "status", "vmid", "node", "type", "address", "steps" {step:
 * seconds}, "changes", "pending", "inject" {"status", "outcome",
 * "summary", "failed_step"} or null, "job", "outcome", "left"}; the CLI
 * adds the members every result has (output.h out_result_members). New
 * reference, NULL when out of memory. */
json_object *up_result_json(const struct up_result *r);
void up_results_free(struct up_result *r, size_t n);

/* The outcome of a set of results: the most serious one (needs attention
 * > unreachable > failed > usage > interrupted > done). */
/* The word of r's RESULT column: its status, but the outcome its exit
 * code means where that is not the status's ("needs attention": exit 3,
 * "interrupted"/"cancelled" are the CLI's). */
const char *up_result_word(const struct up_result *r);
enum job_outcome up_results_outcome(const struct up_result *r, size_t n);

#endif
