/* window.c - maintenance windows: their occurrences, and the params of
 * the drain and undrain jobs they (and the CLI's drain and undrain)
 * submit (window.h). Pure: the configuration, the calendar and json-c
 * only, so that pvagentd links nothing else for them. */
#include "window.h"

#include "wf_params.h"

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
	/* (undrain's members are drain's) */
	const struct job_params_decl *d = &wf_drain_params_decl;
	json_object *o = json_object_new_object();
	if (o && (job_param_set_strv(d, o, "to", to, n_to) < 0 ||
		  job_param_set_int(d, o, "max_workers", max_workers) < 0 ||
		  job_param_set_int(d, o, "per_target", per_target) < 0 ||
		  job_param_set_bool(d, o, "partial", partial) < 0 ||
		  job_param_set_bool(d, o, "dry_run", dry_run) < 0 ||
		  (deadline > 0 && job_param_set_num(d, o, "deadline", deadline) < 0))) {
		json_object_put(o);
		return NULL;
	}
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
