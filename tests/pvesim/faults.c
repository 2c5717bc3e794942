/* faults.c - fault rules: parsing and validation, matching requests by
 * method and path regex, nth / seeded-probability firing (see faults.h). */
#include "faults.h"

#include "util.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct rule {
	char *method;
	char *path;
	pcre2_code *re;
	long nth;
	double probability; /* < 0: not set */
	uint64_t rng;
	long times;         /* < 0: unlimited */
	bool after;
	enum fault_action action;
	int status;
	char *message;
	long delay_ms;
	long matched, fired;
};

struct faults {
	struct rule *v;
	size_t n, cap;
};

static const struct {
	const char *name;
	enum fault_action action;
} actions[] = {
	{"status", FAULT_STATUS},         {"no_worker_upid", FAULT_NO_WORKER_UPID},
	{"timeout", FAULT_TIMEOUT},       {"reset", FAULT_RESET},
	{"delay", FAULT_DELAY},           {"task_fail", FAULT_TASK_FAIL},
};

struct faults *faults_new(void)
{
	return calloc(1, sizeof(struct faults));
}

static void rule_clear(struct rule *r)
{
	free(r->method);
	free(r->path);
	free(r->message);
	pcre2_code_free(r->re);
	memset(r, 0, sizeof *r);
}

void faults_clear(struct faults *f)
{
	for (size_t i = 0; i < f->n; i++)
		rule_clear(&f->v[i]);
	f->n = 0;
}

void faults_free(struct faults *f)
{
	if (!f)
		return;
	faults_clear(f);
	free(f->v);
	free(f);
}

/* splitmix64: small, seedable, good enough for reproducible fault dice */
static double rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) / (double)(1ULL << 53);
}

static int bad(char **err, const char *where, const char *key, const char *what)
{
	*err = strprintf("%s.%s: %s", where, key, what);
	return -1;
}

static int get_int(json_object *rule, const char *key, long min, long max,
		   long *out, const char *where, char **err)
{
	json_object *v;
	if (!json_object_object_get_ex(rule, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_int))
		return bad(err, where, key, "expected an integer");
	int64_t x = json_object_get_int64(v);
	if (x < min || x > max) {
		*err = strprintf("%s.%s: %lld is out of range %ld..%ld", where, key,
				 (long long)x, min, max);
		return -1;
	}
	*out = (long)x;
	return 1;
}

int faults_add(struct faults *f, json_object *spec, const char *where, char **err)
{
	static const char *known[] = {"method", "path", "nth", "probability", "seed",
				      "times", "after", "action", "status", "message",
				      "ms", NULL};
	struct rule r = {.probability = -1, .times = -1, .status = 500};
	json_object *v;

	if (!json_object_is_type(spec, json_type_object)) {
		*err = strprintf("%s: a fault must be a JSON object", where);
		return -1;
	}
	json_object_object_foreach(spec, key, val) {
		(void)val;
		size_t i = 0;
		while (known[i] && strcmp(known[i], key) != 0)
			i++;
		if (!known[i])
			return bad(err, where, key, "unknown key");
	}
	if (json_object_object_get_ex(spec, "method", &v)) {
		const char *m = json_object_get_string(v);
		if (!json_object_is_type(v, json_type_string) ||
		    (strcmp(m, "GET") != 0 && strcmp(m, "POST") != 0 && strcmp(m, "PUT") != 0 &&
		     strcmp(m, "DELETE") != 0))
			return bad(err, where, "method", "expected GET, POST, PUT or DELETE");
		if (!(r.method = strdup(m)))
			goto oom;
	}
	if (!json_object_object_get_ex(spec, "path", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		rule_clear(&r);
		return bad(err, where, "path", "required: a regular expression string");
	}
	if (!(r.path = strdup(json_object_get_string(v))))
		goto oom;
	int ec;
	PCRE2_SIZE eo;
	r.re = pcre2_compile((PCRE2_SPTR)r.path, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
	if (!r.re) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(ec, msg, sizeof msg);
		*err = strprintf("%s.path: bad regex at offset %zu: %s", where, (size_t)eo,
				 (char *)msg);
		rule_clear(&r);
		return -1;
	}
	if (!json_object_object_get_ex(spec, "action", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		rule_clear(&r);
		return bad(err, where, "action", "required: status, no_worker_upid, timeout, "
			   "reset, delay or task_fail");
	}
	size_t ai = 0;
	while (ai < sizeof actions / sizeof actions[0] &&
	       strcmp(actions[ai].name, json_object_get_string(v)) != 0)
		ai++;
	if (ai == sizeof actions / sizeof actions[0]) {
		rule_clear(&r);
		return bad(err, where, "action", "expected status, no_worker_upid, timeout, "
			   "reset, delay or task_fail");
	}
	r.action = actions[ai].action;

	long status = 500, seed = 0;
	if (get_int(spec, "nth", 1, 1000000, &r.nth, where, err) < 0 ||
	    get_int(spec, "times", 1, 1000000, &r.times, where, err) < 0 ||
	    get_int(spec, "status", 400, 599, &status, where, err) < 0 ||
	    get_int(spec, "seed", 0, 0x7fffffffL, &seed, where, err) < 0 ||
	    get_int(spec, "ms", 0, 600000, &r.delay_ms, where, err) < 0) {
		rule_clear(&r);
		return -1;
	}
	r.status = (int)status;
	r.rng = (uint64_t)seed;
	if (r.nth && r.times < 0)
		r.times = 1;
	if (json_object_object_get_ex(spec, "probability", &v)) {
		if (!json_object_is_type(v, json_type_double) &&
		    !json_object_is_type(v, json_type_int)) {
			rule_clear(&r);
			return bad(err, where, "probability", "expected a number");
		}
		r.probability = json_object_get_double(v);
		if (r.probability < 0 || r.probability > 1 || r.nth) {
			rule_clear(&r);
			return bad(err, where, "probability",
				   "must be within 0..1 and not combined with nth");
		}
	}
	if (json_object_object_get_ex(spec, "after", &v)) {
		if (!json_object_is_type(v, json_type_boolean)) {
			rule_clear(&r);
			return bad(err, where, "after", "expected true or false");
		}
		r.after = json_object_get_boolean(v);
		if (r.after && r.action != FAULT_STATUS && r.action != FAULT_RESET &&
		    r.action != FAULT_TIMEOUT) {
			rule_clear(&r);
			return bad(err, where, "after", "only for status, timeout and reset");
		}
	}
	if (json_object_object_get_ex(spec, "message", &v)) {
		if (!json_object_is_type(v, json_type_string)) {
			rule_clear(&r);
			return bad(err, where, "message", "expected a string");
		}
		if (!(r.message = strdup(json_object_get_string(v))))
			goto oom;
	}
	if (r.action == FAULT_TASK_FAIL && !r.message) {
		rule_clear(&r);
		return bad(err, where, "message", "required for task_fail");
	}
	if (r.action == FAULT_DELAY && !json_object_object_get_ex(spec, "ms", &v)) {
		rule_clear(&r);
		return bad(err, where, "ms", "required for delay");
	}
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 8;
		struct rule *nv = realloc(f->v, cap * sizeof *nv);
		if (!nv)
			goto oom;
		f->v = nv;
		f->cap = cap;
	}
	f->v[f->n++] = r;
	return 0;
oom:
	rule_clear(&r);
	*err = strprintf("%s: out of memory", where);
	return -1;
}

static bool rule_matches(const struct rule *r, const char *method, const char *path)
{
	if (r->method && strcmp(r->method, method) != 0)
		return false;
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(r->re, NULL);
	if (!md)
		return false;
	int rc = pcre2_match(r->re, (PCRE2_SPTR)path, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
	pcre2_match_data_free(md);
	return rc >= 0;
}

bool faults_match(struct faults *f, const char *method, const char *path,
		  struct fault_hit *hit)
{
	memset(hit, 0, sizeof *hit);
	for (size_t i = 0; i < f->n; i++) {
		struct rule *r = &f->v[i];
		if (!rule_matches(r, method, path))
			continue;
		r->matched++;
		if (r->times >= 0 && r->fired >= r->times)
			continue;
		bool fire = r->nth ? r->matched == r->nth
			  : r->probability >= 0 ? rng_next(&r->rng) < r->probability
			  : true;
		if (!fire)
			continue;
		r->fired++;
		hit->action = r->action;
		hit->status = r->status;
		hit->delay_ms = r->delay_ms;
		hit->after = r->after;
		const char *msg = r->message;
		if (!msg && r->action == FAULT_NO_WORKER_UPID)
			msg = "got no worker upid - start worker failed";
		if (!msg && r->action == FAULT_TIMEOUT)
			msg = "got timeout";
		if (!msg && r->action == FAULT_STATUS)
			msg = "injected fault";
		hit->message = msg ? strdup(msg) : NULL;
		return true;
	}
	return false;
}

void fault_hit_clear(struct fault_hit *hit)
{
	free(hit->message);
	memset(hit, 0, sizeof *hit);
}

json_object *faults_state(const struct faults *f)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < f->n; i++) {
		const struct rule *r = &f->v[i];
		json_object *o = json_object_new_object();
		if (!o)
			break;
		json_object_object_add(o, "method", r->method ? json_object_new_string(r->method) : NULL);
		json_object_object_add(o, "path", json_object_new_string(r->path));
		for (size_t k = 0; k < sizeof actions / sizeof actions[0]; k++)
			if (actions[k].action == r->action)
				json_object_object_add(o, "action",
						       json_object_new_string(actions[k].name));
		json_object_object_add(o, "matched", json_object_new_int64(r->matched));
		json_object_object_add(o, "fired", json_object_new_int64(r->fired));
		json_object_array_add(a, o);
	}
	return a;
}
