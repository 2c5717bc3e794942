/* window.c - maintenance windows: their occurrences (window.h). Pure: the
 * configuration and the calendar only, so that pvagentd links nothing
 * else for them. */
#include "window.h"

#include <stdlib.h>

int window_next(const struct conf_window *w, time_t now, time_t *start, time_t *end)
{
	time_t s;
	/* the first start after now - duration: open now when it is not after now */
	if (cal_next(&w->cal, now - (time_t)w->duration, &s) < 0)
		return -1;
	*start = s;
	*end = s + (time_t)w->duration;
	return 0;
}

int window_next_due(const struct conf *c, time_t now, size_t *index, time_t *start,
		    time_t *end)
{
	bool any = false;
	for (size_t i = 0; i < c->n_windows; i++) {
		time_t s, e;
		if (window_next(&c->windows[i], now, &s, &e) < 0)
			continue;
		time_t key = s < now ? now : s;
		time_t best = *start < now ? now : *start;
		if (!any || key < best) {
			*index = i;
			*start = s;
			*end = e;
			any = true;
		}
	}
	return any ? 0 : -1;
}
