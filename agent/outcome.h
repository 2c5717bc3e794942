/* outcome.h - what a failed or finished piece of work means for its
 * caller: the one classification every layer returns (the PVE client's
 * errors, SSH, inject, bench, the conversion, the job engine). Only the
 * mains turn an outcome into an exit code and words (cli_exit_code). */
#ifndef PVAGENT_OUTCOME_H
#define PVAGENT_OUTCOME_H

enum job_outcome {
	JOB_OUT_DONE = 0,
	JOB_OUT_FAILED,           /* failed; nothing left half-done */
	JOB_OUT_USAGE,            /* bad request or configuration */
	JOB_OUT_NEEDS_ATTENTION,  /* failed and left something behind */
	JOB_OUT_UNREACHABLE,      /* PVE or a guest could not be reached or refused us */
	JOB_OUT_INTERRUPTED,      /* stopped between steps; resumable */
};

/* "done", "failed", "usage", "needs-attention", "unreachable",
 * "interrupted" (stable: --json output and the store). */
const char *job_outcome_name(enum job_outcome o);
/* Inverse of job_outcome_name(); -1 for an unknown name. */
int job_outcome_parse(const char *s, enum job_outcome *out);
/* A failure a lower module classified as o: o, or failed when o says done
 * (a failure is never done). */
enum job_outcome job_outcome_failure(enum job_outcome o);
/* The one of a and b a caller must hear about first: needs-attention,
 * unreachable, failed, usage, interrupted, done. */
enum job_outcome job_outcome_worse(enum job_outcome a, enum job_outcome b);

#endif
