/* job_params.c - a workflow's params checked and written by its table
 * (job_params.h). Pure: pvagentd links it. */
#include "job_params.h"

#include "log.h"
#include "util.h"

#include <math.h>
#include <string.h>

const struct job_param *job_param_find(const struct job_params_decl *d, const char *key)
{
	for (const struct job_param *p = d && key ? d->params : NULL; p && p->key; p++)
		if (strcmp(p->key, key) == 0)
			return p;
	return NULL;
}

const struct job_param_opt *job_param_opt_find(const struct job_params_decl *d, const char *name,
					       const struct job_param **param)
{
	for (const struct job_param *p = d->params; p->key; p++)
		for (const struct job_param_opt *o = p->opts; o && o->name; o++)
			if (strcmp(o->name, name) == 0) {
				if (param)
					*param = p;
				return o;
			}
	return NULL;
}

const char *job_param_type_name(enum job_param_type t)
{
	switch (t) {
	case JOB_PARAM_BOOL: return "true or false";
	case JOB_PARAM_INT: return "an integer";
	case JOB_PARAM_NUM: return "a number";
	case JOB_PARAM_STR: return "a string";
	case JOB_PARAM_STR_LIST: return "an array of strings";
	case JOB_PARAM_KV_LIST: return "arrays of [key, value] strings";
	case JOB_PARAM_KV_MAP: return "an object of strings";
	}
	return "?";
}

static bool is_str(json_object *v)
{
	return json_object_is_type(v, json_type_string);
}

/* Is v of type t? */
static bool of_type(json_object *v, enum job_param_type t)
{
	switch (t) {
	case JOB_PARAM_BOOL: return json_object_is_type(v, json_type_boolean);
	case JOB_PARAM_INT: return json_object_is_type(v, json_type_int);
	case JOB_PARAM_NUM:
		return json_object_is_type(v, json_type_int) ||
		       (json_object_is_type(v, json_type_double) && isfinite(json_object_get_double(v)));
	case JOB_PARAM_STR: return is_str(v);
	case JOB_PARAM_STR_LIST:
		if (!json_object_is_type(v, json_type_array))
			return false;
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (!is_str(json_object_array_get_idx(v, i)))
				return false;
		return true;
	case JOB_PARAM_KV_LIST:
		if (!json_object_is_type(v, json_type_array))
			return false;
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			json_object *p = json_object_array_get_idx(v, i);
			if (!json_object_is_type(p, json_type_array) || json_object_array_length(p) != 2 ||
			    !is_str(json_object_array_get_idx(p, 0)) ||
			    !is_str(json_object_array_get_idx(p, 1)))
				return false;
		}
		return true;
	case JOB_PARAM_KV_MAP:
		if (!json_object_is_type(v, json_type_object))
			return false;
		json_object_object_foreach(v, k, x) {
			(void)k;
			if (!is_str(x))
				return false;
		}
		return true;
	}
	return false;
}

static bool in_range(const struct job_param *p, json_object *v)
{
	if ((p->type != JOB_PARAM_INT && p->type != JOB_PARAM_NUM) || (p->min == 0 && p->max == 0))
		return true;
	double x = json_object_get_double(v);
	if ((p->flags & JOB_PARAM_ZERO) && x == 0)
		return true;
	return x >= p->min && x <= p->max;
}

/* The first control character of a string in v (at any depth), or 0;
 * text: newlines and tabs are not. */
static int control_char(json_object *v, bool text)
{
	if (is_str(v)) {
		for (const char *s = json_object_get_string(v); *s; s++)
			if (((unsigned char)*s < 0x20 || *s == 0x7f) &&
			    !(text && (*s == '\n' || *s == '\t')))
				return (unsigned char)*s;
	} else if (json_object_is_type(v, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			int c = control_char(json_object_array_get_idx(v, i), text);
			if (c)
				return c;
		}
	} else if (json_object_is_type(v, json_type_object)) {
		json_object_object_foreach(v, k, x) {
			(void)k;
			int c = control_char(x, text);
			if (c)
				return c;
		}
	}
	return 0;
}

int job_params_check(const struct job_params_decl *d, const char *subject, json_object *params,
		     bool peer, char **why)
{
	const char *wf = d ? d->workflow : "?";
	*why = NULL;
	if (!params || !json_object_is_type(params, json_type_object)) {
		err_setf(why, "%s %s: \"params\" is not an object", wf, subject);
		return -1;
	}
	json_object_object_foreach(params, key, val) {
		const struct job_param *p = job_param_find(d, key);
		if (!p || (peer && !(p->flags & JOB_PARAM_PEER))) {
			err_setf(why, "%s %s: \"%.64s\" is not one of its params", wf, subject, key);
			return -1;
		}
		if (!val || !of_type(val, p->type)) {
			err_setf(why, "%s %s: \"%s\": expected %s", wf, subject, key,
				 job_param_type_name(p->type));
			return -1;
		}
		if (!in_range(p, val)) {
			err_setf(why, "%s %s: \"%s\": %s is not %s%.0f to %.0f", wf, subject, key,
				 json_object_get_string(val), p->flags & JOB_PARAM_ZERO ? "0 or " : "",
				 p->min, p->max);
			return -1;
		}
		int c = control_char(val, p->flags & JOB_PARAM_TEXT);
		if (c) {
			err_setf(why, "%s %s: \"%s\": a value holds a control character (0x%02x)", wf,
				 subject, key, (unsigned)c);
			return -1;
		}
	}
	return 0;
}

/* ---- the writer ---------------------------------------------------------------- */

int job_param_put(const struct job_params_decl *d, json_object *params, const char *key,
		  json_object *v)
{
	const struct job_param *p = job_param_find(d, key);
	if (!p || !v || !of_type(v, p->type)) {
		if (v)
			log_error("%s: param \"%s\" is %s", d ? d->workflow : "?", key,
				  p ? "of another type" : "not declared (wf_params.c)");
		json_object_put(v);
		return -1;
	}
	return json_object_object_add(params, key, v) == 0 ? 0 : -1;
}

int job_param_set_str(const struct job_params_decl *d, json_object *params, const char *key,
		      const char *v)
{
	return v ? job_param_put(d, params, key, json_object_new_string(v)) : 0;
}

int job_param_set_int(const struct job_params_decl *d, json_object *params, const char *key,
		      long long v)
{
	return job_param_put(d, params, key, json_object_new_int64(v));
}

int job_param_set_num(const struct job_params_decl *d, json_object *params, const char *key,
		      double v)
{
	return job_param_put(d, params, key, json_object_new_double(v));
}

int job_param_set_bool(const struct job_params_decl *d, json_object *params, const char *key,
		       bool v)
{
	return job_param_put(d, params, key, json_object_new_boolean(v));
}

int job_param_set_kv(const struct job_params_decl *d, json_object *params, const char *key,
		     const struct tmpl_kvlist *l)
{
	const struct job_param *p = job_param_find(d, key);
	size_t n = l ? l->n : 0;
	if (p && p->type == JOB_PARAM_KV_MAP) {
		if (!n)
			return 0;
		json_object *o = json_object_new_object();
		for (size_t i = 0; o && i < n; i++)
			if (json_object_object_add(o, l->items[i].key,
						   json_object_new_string(l->items[i].value)) < 0) {
				json_object_put(o);
				return -1;
			}
		return job_param_put(d, params, key, o);
	}
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < n; i++) {
		json_object *pair = json_object_new_array();
		if (!pair || json_object_array_add(a, pair) < 0) {
			json_object_put(pair);
			json_object_put(a);
			return -1;
		}
		json_object_array_add(pair, json_object_new_string(l->items[i].key));
		json_object_array_add(pair, json_object_new_string(l->items[i].value));
	}
	return job_param_put(d, params, key, a);
}

int job_param_set_strv(const struct job_params_decl *d, json_object *params, const char *key,
		       const char *const *v, size_t n)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < n; i++)
		if (json_object_array_add(a, json_object_new_string(v[i])) < 0) {
			json_object_put(a);
			return -1;
		}
	return job_param_put(d, params, key, a);
}

int job_params_kv(json_object *params, const char *key, struct tmpl_kvlist *l)
{
	json_object *v = NULL;
	memset(l, 0, sizeof *l);
	if (!json_object_object_get_ex(params, key, &v) || !v)
		return 0;
	if (of_type(v, JOB_PARAM_KV_MAP)) {
		json_object_object_foreach(v, k, x)
			if (tmpl_kvlist_set(l, k, json_object_get_string(x)) < 0)
				return -1;
		return 0;
	}
	if (!of_type(v, JOB_PARAM_KV_LIST))
		return -1;
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *p = json_object_array_get_idx(v, i);
		if (tmpl_kvlist_add(l, json_object_get_string(json_object_array_get_idx(p, 0)),
				    json_object_get_string(json_object_array_get_idx(p, 1)), 0) < 0)
			return -1;
	}
	return 0;
}
