/* jobq.c - the job queue and its worker, node and guest limits and
 * latest starts (jobq.h). */
#include "jobq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void jobq_init(struct jobq *s, unsigned workers, unsigned node_jobs)
{
	memset(s, 0, sizeof *s);
	s->workers = workers;
	s->node_jobs = node_jobs;
}

static void item_free(struct jobq_item *it)
{
	for (size_t i = 0; i < it->n_guests; i++)
		free(it->guests[i]);
	free(it->guests);
	free(it->node);
	free(it);
}

struct jobq_item *jobq_add(struct jobq *s, const char *const *guests, size_t n_guests,
			     const char *node, void *data)
{
	struct jobq_item *it = calloc(1, sizeof *it);
	if (!it)
		return NULL;
	it->guests = calloc(n_guests + 1, sizeof *it->guests);
	bool bad = !it->guests || (node && !(it->node = strdup(node)));
	for (size_t i = 0; !bad && i < n_guests; i++, it->n_guests++)
		bad = !(it->guests[i] = strdup(guests[i]));
	if (bad) {
		item_free(it);
		return NULL;
	}
	it->data = data;
	it->start_by = HUGE_VAL;
	it->ticket = ++s->last_ticket;
	it->prev = s->tail;
	if (s->tail)
		s->tail->next = it;
	else
		s->head = it;
	s->tail = it;
	s->n_queued++;
	return it;
}

static bool shares_guest(const struct jobq_item *a, const struct jobq_item *b,
			 const char **which)
{
	for (size_t i = 0; i < a->n_guests; i++)
		for (size_t k = 0; k < b->n_guests; k++)
			if (strcmp(a->guests[i], b->guests[k]) == 0) {
				if (which)
					*which = a->guests[i];
				return true;
			}
	return false;
}

const struct jobq_item *jobq_blocker(const struct jobq *s, const struct jobq_item *it,
				       const char **guest)
{
	/* the items before it in the queue (running or not) come first */
	for (const struct jobq_item *o = s->head; o && o != it; o = o->next)
		if (shares_guest(it, o, guest))
			return o;
	return NULL;
}

static size_t on_node(const struct jobq *s, const char *node)
{
	size_t n = 0;
	for (const struct jobq_item *o = s->head; o; o = o->next)
		n += o->running && o->node && strcmp(o->node, node) == 0;
	return n;
}

struct jobq_item *jobq_next(struct jobq *s)
{
	if (s->workers && s->n_running >= s->workers)
		return NULL;
	for (struct jobq_item *it = s->head; it; it = it->next) {
		if (it->running || jobq_blocker(s, it, NULL))
			continue;
		if (it->node && s->node_jobs && on_node(s, it->node) >= s->node_jobs)
			continue;
		it->running = true;
		s->n_running++;
		s->n_queued--;
		return it;
	}
	return NULL;
}

struct jobq_item *jobq_late(const struct jobq *s, double now)
{
	for (struct jobq_item *it = s->head; it; it = it->next)
		if (!it->running && it->start_by < now)
			return it;
	return NULL;
}

void jobq_remove(struct jobq *s, struct jobq_item *it)
{
	if (it->prev)
		it->prev->next = it->next;
	else
		s->head = it->next;
	if (it->next)
		it->next->prev = it->prev;
	else
		s->tail = it->prev;
	if (it->running)
		s->n_running--;
	else
		s->n_queued--;
	item_free(it);
}

struct jobq_item *jobq_find(const struct jobq *s, unsigned long long ticket)
{
	for (struct jobq_item *it = s->head; it; it = it->next)
		if (it->ticket == ticket)
			return it;
	return NULL;
}

void jobq_free(struct jobq *s)
{
	for (struct jobq_item *it = s->head, *next; it; it = next) {
		next = it->next;
		item_free(it);
	}
	s->head = s->tail = NULL;
	s->n_running = s->n_queued = 0;
}
