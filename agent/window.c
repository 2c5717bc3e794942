/* window.c - maintenance windows: their occurrences, and the params of
 * the drain and undrain jobs they (and the CLI's drain and undrain)
 * submit (window.h). Pure: the configuration, the calendar and json-c
 * only, so that pvagentd links nothing else for them. */
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

json_object *wf_drain_params(const char *const *to, size_t n_to, unsigned max_workers,
			     unsigned per_target, bool partial, bool dry_run, double deadline)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	if (!o || !a) {
		json_object_put(o);
		json_object_put(a);
		return NULL;
	}
	for (size_t i = 0; i < n_to; i++)
		json_object_array_add(a, json_object_new_string(to[i]));
	json_object_object_add(o, "to", a);
	json_object_object_add(o, "max_workers", json_object_new_int64(max_workers));
	json_object_object_add(o, "per_target", json_object_new_int64(per_target));
	json_object_object_add(o, "partial", json_object_new_boolean(partial));
	json_object_object_add(o, "dry_run", json_object_new_boolean(dry_run));
	if (deadline > 0)
		json_object_object_add(o, "deadline", json_object_new_double(deadline));
	return o;
}

json_object *window_drain_params(const struct conf *c, const struct conf_window *w,
				 time_t end)
{
	unsigned k = w->max_workers ? w->max_workers : c->migrate.max_workers;
	return wf_drain_params((const char *const *)w->to, w->n_to, k, c->migrate.per_target,
			       true, false, (double)end);
}

json_object *window_undrain_params(const struct conf *c, const struct conf_window *w)
{
	unsigned k = w->max_workers ? w->max_workers : c->migrate.max_workers;
	return wf_drain_params(NULL, 0, k, c->migrate.per_target, false, false, 0);
}
