/* json.c - member readers for json-c objects (see json.h). */
#include "json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *json_str(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

const char *json_text(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v) || !v)
		return NULL;
	return json_object_get_string(v);
}

char *json_scalar_dup(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v) || !v)
		return NULL;
	if (json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_array))
		return NULL;
	return strdup(json_object_get_string(v));
}

bool json_int(json_object *o, const char *key, long long *out)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, key, &v) || !v)
		return false;
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return true;
	}
	if (json_object_is_type(v, json_type_boolean)) {
		*out = json_object_get_boolean(v) ? 1 : 0;
		return true;
	}
	if (json_object_is_type(v, json_type_string)) {
		const char *s = json_object_get_string(v);
		char *end;
		errno = 0;
		long long n = strtoll(s, &end, 10);
		if (errno || end == s || *end)
			return false;
		*out = n;
		return true;
	}
	return false;
}

bool json_flag(json_object *o, const char *key)
{
	long long v = 0;
	return json_int(o, key, &v) && v;
}

int json_int0(json_object *o, const char *key)
{
	long long v = 0;
	return json_int(o, key, &v) ? (int)v : 0;
}

int json_add(json_object *o, const char *key, json_object *v)
{
	if (json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		return -1;
	}
	return 0;
}

int json_add_str(json_object *o, const char *key, const char *s)
{
	json_object *v = s ? json_object_new_string(s) : NULL;
	if (s && !v)
		return -1;
	return json_add(o, key, v);
}
