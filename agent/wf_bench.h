/* wf_bench.h - `bench` as a job of the engine (wf_bench.c): connect,
 * detect the OS and the boot disk, measure, store the result. */
#ifndef PVAGENT_WF_BENCH_H
#define PVAGENT_WF_BENCH_H

#include "bench.h"
#include "job.h"
#include "ssh.h"
#include "store.h"

#include <json-c/json.h>
#include <signal.h>

extern const struct job_workflow wf_bench;

struct bench_job_request {
	const char *name;           /* the guest */
	int vmid;
	const struct ssh_opts *ssh;
	json_object *config;        /* its PVE config: the boot disk, bus and NIC */
	unsigned size_mib;          /* 0: the default */
	const char *db;             /* state.db to store the result in, or NULL */
	/* The job's events (event.h): the detect step's summary names the OS,
	 * disk, bus and NIC; bench's phases are notes. May be NULL. */
	job_event_fn on_event;
	void *event_ctx;
};

struct bench_job_result {
	struct bench_result now;    /* the figures */
	enum job_outcome outcome;   /* the mains turn it into an exit code */
	char *error;                /* what failed, or NULL */
};
void bench_job_result_free(struct bench_job_result *r);

/* Run the benchmark as a job kept in store (may be NULL); cli_args (may be
 * NULL) is the command line kept with it. 0 (r->outcome done), or -1 with
 * r->outcome and r->error. */
int bench_job_run(struct store *store, volatile sig_atomic_t *stop,
		  const struct bench_job_request *req, const char *const *cli_args,
		  struct bench_job_result *r);

/* A bench_event_fn (bench.h) for a bench run inside a job (ctx: the
 * struct job): each phase's result becomes a note of the current step
 * ("write: sequential write: 23.8 MB/s ..."). */
void bench_job_phase(void *job, const char *phase, const char *text);

/* The boot disk of a qemu config as the guest names it ("ad0", "vtbd0",
 * "sda") and the bus and NIC labels ("ide", "virtio-blk", "virtio-scsi",
 * "sata", "scsi"; "e1000", "virtio", "-"). *name NULL when the profile
 * (may be NULL) cannot tell; labels static. */
void bench_guest_disk(json_object *config, const struct os_profile *p, char **name,
		      const char **bus, const char **nic);

#endif
