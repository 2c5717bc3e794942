/* event.c - names and the JSON form of struct job_event (see event.h). */
#include "event.h"

const char *job_ev_kind_name(enum job_ev_kind k)
{
	switch (k) {
	case JOB_EV_BEGIN: return "begin";
	case JOB_EV_STEP: return "step";
	case JOB_EV_PROGRESS: return "progress";
	case JOB_EV_DIFF: return "diff";
	case JOB_EV_NOTE: return "note";
	case JOB_EV_DONE: return "done";
	}
	return "?";
}

json_object *job_event_json(const struct job_event *ev)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "event", json_object_new_string(job_ev_kind_name(ev->kind)));
	if (ev->job)
		json_object_object_add(o, "job", json_object_new_int64(ev->job));
	json_object_object_add(o, "name", json_object_new_string(ev->name ? ev->name : ""));
	if (ev->vmid)
		json_object_object_add(o, "vmid", json_object_new_int(ev->vmid));
	if (ev->node)
		json_object_object_add(o, "node", json_object_new_string(ev->node));
	if (ev->step)
		json_object_object_add(o, "step", json_object_new_string(ev->step));
	if (ev->kind == JOB_EV_STEP)
		json_object_object_add(o, "seconds", json_object_new_double(ev->elapsed_s));
	if (ev->kind == JOB_EV_PROGRESS && ev->percent >= 0)
		json_object_object_add(o, "percent", json_object_new_double(ev->percent));
	if (ev->path)
		json_object_object_add(o, "path", json_object_new_string(ev->path));
	if (ev->text)
		json_object_object_add(o, "text", json_object_new_string(ev->text));
	if (ev->time > 0)
		json_object_object_add(o, "time", json_object_new_double(ev->time));
	return o;
}

bool job_event_is_start(const struct job_event *ev)
{
	return ev->kind == JOB_EV_PROGRESS && !(ev->percent >= 0) && !ev->text;
}
