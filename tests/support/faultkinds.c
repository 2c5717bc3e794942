/* faultkinds.c - the fault kinds of the fault matrices (faultkinds.h). */
#include "faultkinds.h"

#include "util.h"

const struct fault_kind fault_kinds[] = {
	{"500", "\"action\":\"status\",\"status\":500,\"message\":\"internal error\""},
	{"503", "\"action\":\"status\",\"status\":503,\"message\":\"service unavailable\""},
	{"no_worker_upid", "\"action\":\"no_worker_upid\""},
	{"timeout", "\"action\":\"timeout\""},
	{"reset", "\"action\":\"reset\""},
	{"delay", "\"action\":\"delay\",\"ms\":2500"},
	{"task_fail", "\"action\":\"task_fail\",\"message\":\"injected task failure\""},
	{"500 after", "\"action\":\"status\",\"status\":500,\"message\":\"internal error\","
		      "\"after\":true"},
	{"503 after", "\"action\":\"status\",\"status\":503,\"message\":\"unavailable\","
		      "\"after\":true"},
	{"timeout after", "\"action\":\"timeout\",\"after\":true"},
	{"reset after", "\"action\":\"reset\",\"after\":true"},
};

const size_t n_fault_kinds = sizeof fault_kinds / sizeof fault_kinds[0];

char *fault_rule(const char *method, const char *rx, int nth, const struct fault_kind *k)
{
	return strprintf("{\"method\":\"%s\",\"path\":\"%s\",\"nth\":%d,%s}", method, rx, nth,
			 k->spec);
}
