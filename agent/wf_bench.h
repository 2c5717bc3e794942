/* wf_bench.h - `bench` as a job of the engine (wf_bench.c): connect,
 * detect the OS and the boot disk, measure, store the result. */
#ifndef PVAGENT_WF_BENCH_H
#define PVAGENT_WF_BENCH_H

#include "bench.h"
#include "job.h"
#include "ssh.h"
#include "target.h"

#include <json-c/json.h>
#include <stdbool.h>

extern const struct job_workflow wf_bench;

/* Params (subject = the guest's name or VMID): "template", "address",
 * "vars" (target.h, target_params_add), "size_mib" (1 to
 * BENCH_MAX_SIZE_MIB; absent: the default). The job opens with the env's
 * conf and the job's PVE client: the guest found, its template expanded,
 * its address and SSH options (target.h). Vars left: vmid, node, "bench"
 * (the figures, bench_result_json) once measured, "before" (the guest's
 * figures stored before this run, when there were any). The figures go
 * into state.db (bench.h) when the env has a store. */
json_object *wf_bench_params(const struct target_req *req, unsigned size_mib);

/* The figures of a bench job (vars "bench"): 1 (into *now; *before and
 * *have_before the earlier run's, when the job read one), 0 none (it did
 * not measure), -1 with *err. */
int wf_bench_result(struct job *j, struct bench_result *now, struct bench_result *before,
		    bool *have_before, char **err);

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
