/* event.h - the one event type every workflow emits (through the job
 * engine, job.h) and its JSON form. The CLI renders events as lines or
 * JSON; the store keeps them (store.h events table). */
#ifndef PVAGENT_EVENT_H
#define PVAGENT_EVENT_H

#include <json-c/json.h>
#include <stdbool.h>

enum job_ev_kind {
	JOB_EV_BEGIN,     /* work on the subject begins */
	JOB_EV_STEP,      /* a step ended: step, elapsed_s, text (its summary) */
	JOB_EV_PROGRESS,  /* inside a step: step, percent (-1 unknown), text */
	JOB_EV_DIFF,      /* one config difference: text "cores: 1 -> 2"; or, with
			     path, a file's change as a unified diff */
	JOB_EV_NOTE,      /* something worth telling: text */
	JOB_EV_DONE,      /* the job ended: text is its result word */
};

/* "begin", "step", "progress", "diff", "note", "done". */
const char *job_ev_kind_name(enum job_ev_kind k);

struct job_event {
	enum job_ev_kind kind;
	long long job;            /* job id in the store; 0 when not stored */
	const char *workflow;     /* "up", "down", ... */
	const char *name;         /* the subject: a guest name */
	int vmid;                 /* 0 until known */
	const char *node;         /* NULL until known */
	const char *step;         /* the step, or NULL */
	double elapsed_s;         /* JOB_EV_STEP: the step's duration */
	double percent;           /* JOB_EV_PROGRESS: 0..100, < 0 unknown (with
				     neither percent nor text: the step has
				     started, for live lines; never stored,
				     printed as JSON or sent to pvagentd) */
	const char *text;         /* may be NULL */
	const char *path;         /* JOB_EV_DIFF of a file: its path; else NULL */
	double time;              /* unix seconds */
	const void *result;       /* JOB_EV_DONE: the workflow's result */
};

/* Called from worker threads, never concurrently for one sink (the engine
 * serialises the calls). Everything in ev is borrowed for the call. */
typedef void (*job_event_fn)(void *ctx, const struct job_event *ev);

/* {"event":KIND,"job":N,"name":...,"vmid":...,"node":...,"step":...,
 *  "seconds":... (step),"percent":... (progress),"path":... (a file's
 *  diff),"text":...,"time":...};
 * members without a value are left out. NULL when out of memory. */
json_object *job_event_json(const struct job_event *ev);
/* Is ev a step's start (a progress event with neither percent nor text)? */
bool job_event_is_start(const struct job_event *ev);

#endif
