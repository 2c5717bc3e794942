/* maintenance.c - pvagentd's maintenance windows ([window] in the
 * configuration, window.h): a drain of the window's node queued when
 * an occurrence opens (its end the deadline), its undrain when it
 * closes, as jobs of the daemon's own; their state kept by name across
 * a reload. */
#include "pvagentd_int.h"

#include "log.h"
#include "window.h"

#include <stdlib.h>
#include <string.h>

/* The window state for d->conf's windows, kept by name across a reload
 * (a reload during an open window does not drain it again). */
int windows_sync(struct daemon *d)
{
	struct dwin *nw = calloc(d->conf.n_windows ? d->conf.n_windows : 1, sizeof *nw);
	if (!nw)
		return -1;
	for (size_t i = 0; i < d->conf.n_windows; i++) {
		if (!(nw[i].name = strdup(d->conf.windows[i].name))) {
			for (size_t k = 0; k < i; k++)
				free(nw[k].name);
			free(nw);
			return -1;
		}
		for (size_t k = 0; k < d->n_win; k++)
			if (strcmp(d->win[k].name, nw[i].name) == 0) {
				nw[i].drained = d->win[k].drained;
				nw[i].end = d->win[k].end;
			}
	}
	for (size_t k = 0; k < d->n_win; k++)
		free(d->win[k].name);
	free(d->win);
	d->win = nw;
	d->n_win = d->conf.n_windows;
	return 0;
}

/* Queue the window's drain of its node (its end the deadline) or its
 * undrain as a job of the daemon's own; the node's name is its exclusion
 * key, so an undrain waits for the drain of its window to end. */
static void window_queue(struct daemon *d, const struct conf_window *w, bool undrain,
			 time_t end)
{
	const char *wf = undrain ? "undrain" : "drain";
	json_object *params = undrain ? window_undrain_params(&d->conf, w)
				      : window_drain_params(&d->conf, w, end);
	char *err = NULL;
	if (!params || !djob_queue(d, 0, wf, w->node, NULL, params, &err)) {
		log_error("window %s: cannot queue its %s: %s", w->name, wf,
			  err ? err : "out of memory");
		free(err);
		return;
	}
	log_info("window %s: %s %s queued", w->name, wf, w->node);
}

/* Queue what the windows ask for now: a drain when one opens (once per
 * occurrence), the undrain when it closes. The seconds until the next
 * such moment, or -1 when none is ahead. */
double windows_tick(struct daemon *d)
{
	time_t now = time(NULL);
	double next = -1;
	for (size_t i = 0; i < d->n_win && i < d->conf.n_windows; i++) {
		const struct conf_window *w = &d->conf.windows[i];
		struct dwin *s = &d->win[i];
		if (s->end && now >= s->end) {
			window_queue(d, w, true, 0);
			s->end = 0;
		}
		time_t start, end;
		if (window_next(w, now, &start, &end) == 0) {
			if (start <= now && now < end && s->drained != start) {
				window_queue(d, w, false, end);
				s->drained = start;
				s->end = end;
			}
			time_t at = start > now ? start : end;
			if (next < 0 || (double)(at - now) < next)
				next = (double)(at - now);
		}
		if (s->end && (next < 0 || (double)(s->end - now) < next))
			next = (double)(s->end - now);
	}
	return next;
}
