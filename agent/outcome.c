/* outcome.c - outcome names and their order (outcome.h). */
#include "outcome.h"

#include <string.h>

static const enum job_outcome all[] = {
	JOB_OUT_DONE,		 JOB_OUT_FAILED,      JOB_OUT_USAGE,
	JOB_OUT_NEEDS_ATTENTION, JOB_OUT_UNREACHABLE, JOB_OUT_INTERRUPTED,
};

const char *job_outcome_name(enum job_outcome o)
{
	switch (o) {
	case JOB_OUT_DONE: return "done";
	case JOB_OUT_FAILED: return "failed";
	case JOB_OUT_USAGE: return "usage";
	case JOB_OUT_NEEDS_ATTENTION: return "needs-attention";
	case JOB_OUT_UNREACHABLE: return "unreachable";
	case JOB_OUT_INTERRUPTED: return "interrupted";
	}
	return "?";
}

int job_outcome_parse(const char *s, enum job_outcome *out)
{
	for (size_t i = 0; s && i < sizeof all / sizeof *all; i++)
		if (strcmp(s, job_outcome_name(all[i])) == 0) {
			*out = all[i];
			return 0;
		}
	return -1;
}

enum job_outcome job_outcome_failure(enum job_outcome o)
{
	return o == JOB_OUT_DONE ? JOB_OUT_FAILED : o;
}

static int rank(enum job_outcome o)
{
	switch (o) {
	case JOB_OUT_NEEDS_ATTENTION: return 5;
	case JOB_OUT_UNREACHABLE: return 4;
	case JOB_OUT_FAILED: return 3;
	case JOB_OUT_USAGE: return 2;
	case JOB_OUT_INTERRUPTED: return 1;
	case JOB_OUT_DONE: return 0;
	}
	return 0;
}

enum job_outcome job_outcome_worse(enum job_outcome a, enum job_outcome b)
{
	return rank(b) > rank(a) ? b : a;
}
