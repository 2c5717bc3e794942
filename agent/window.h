/* window.h - maintenance windows ([window "NAME"] in pvagent.conf, conf.h):
 * when a window opens next (or is open now) and closes, which window is
 * due next, and the drain a window runs: a drain job (wf_drain.h) whose
 * deadline is the window's end, so that no migration starts that would
 * end after it, and the undrain when it closes. The daemon calls these;
 * `pvagent windows` lists them. */
#ifndef PVAGENT_WINDOW_H
#define PVAGENT_WINDOW_H

#include "conf.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* The window's current occurrence when it is open at now (*start <= now <
 * *end), else its next one. 0, or -1 when it never opens again. */
int window_next(const struct conf_window *w, time_t now, time_t *start, time_t *end);

/* The window that opens first from now (an open one counts as opening
 * now): its index in c->windows and times. 0, or -1 when there is none. */
int window_next_due(const struct conf *c, time_t now, size_t *index, time_t *start,
		    time_t *end);

/* The params of a drain or undrain job (wf_drain.h: subject = NODE):
 * the target nodes (none: any), max_workers, per_target, partial, dry_run,
 * deadline (unix seconds; 0 none). NULL on OOM. */
json_object *wf_drain_params(const char *const *to, size_t n_to, unsigned max_workers,
			     unsigned per_target, bool partial, bool dry_run, double deadline);
/* The params of the drain a window runs when it opens (wf_drain_params
 * with its targets, max_workers or [migrate]'s, partial, deadline = end). */
json_object *window_drain_params(const struct conf *c, const struct conf_window *w,
				 time_t end);
/* The params of the undrain (wf_undrain) it runs when it closes. */
json_object *window_undrain_params(const struct conf *c, const struct conf_window *w);

#endif
