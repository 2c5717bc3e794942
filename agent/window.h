/* window.h - maintenance windows ([window "NAME"] in pvagent.conf, conf.h):
 * when a window opens next (or is open now) and closes, which window is
 * due next, and the drain a window runs: a drain job whose deadline is the
 * window's end, so that no migration starts that would end after it
 * (wf_drain.h: window_drain_params). The daemon calls these; `pvagent
 * windows` lists them. */
#ifndef PVAGENT_WINDOW_H
#define PVAGENT_WINDOW_H

#include "conf.h"

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

#endif
