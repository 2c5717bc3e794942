/* wf_params.c - every workflow's params, declared once (wf_params.h), as
 * redis declares its commands: the member, its type and range, whether a
 * socket peer of pvagentd may set it, and the command's options that set
 * it. The engine checks every job's params by these tables (job_submit),
 * pvagentd every submitted job's (submit_check.c), the workflows read
 * them with job.h's typed readers and the commands write them with
 * job_params.h's one writer. To add a param: its row here, the option in
 * its command's table, the read in its workflow's open. Pure. */
#include "wf_params.h"

#include "bench.h"
#include "up_check.h"

#include <string.h>

#define PEER JOB_PARAM_PEER
#define ZERO JOB_PARAM_ZERO
#define TEXT JOB_PARAM_TEXT
#define VMID_MAX 999999999
#define MIB_MAX BENCH_MAX_SIZE_MIB

static const struct job_param up_params[] = {
	{"name", JOB_PARAM_STR, PEER, 0, 0, NULL},
	{"template", JOB_PARAM_STR, PEER, 0, 0, "template"},
	{"template_path", JOB_PARAM_STR, PEER, 0, 0, NULL},
	{"node", JOB_PARAM_STR, PEER, 0, 0, "node"},
	{"storage", JOB_PARAM_STR, PEER, 0, 0, "storage"},
	/* ${pubkey}: the key of whoever runs the job (pvagentd's own) */
	{"pubkey", JOB_PARAM_STR, 0, 0, 0, NULL},
	{"pool", JOB_PARAM_STR, PEER, 0, 0, "pool"},
	{"vmid", JOB_PARAM_INT, PEER | ZERO, 100, VMID_MAX, "vmid"},
	{"vmid_min", JOB_PARAM_INT, PEER | ZERO, 100, VMID_MAX, NULL},
	{"vmid_max", JOB_PARAM_INT, PEER | ZERO, 100, VMID_MAX, NULL},
	{"no_start", JOB_PARAM_BOOL, PEER, 0, 0, "no-start"},
	{"full", JOB_PARAM_BOOL, PEER, 0, 0, "full"},
	{"no_inject", JOB_PARAM_BOOL, PEER, 0, 0, "no-inject"},
	{"retemplate", JOB_PARAM_BOOL, PEER, 0, 0, "retemplate"},
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0, "dry-run"},
	{"no_wait_ssh", JOB_PARAM_BOOL, PEER, 0, 0, "no-wait-ssh"},
	{"ssh_wait_s", JOB_PARAM_NUM, PEER, 0, 86400, NULL},
	{"sets", JOB_PARAM_KV_LIST, PEER, 0, 0, "set"},
	{"vars", JOB_PARAM_KV_LIST, PEER, 0, 0, "var"},
	{0},
};

static const struct job_param down_params[] = {
	{"purge", JOB_PARAM_BOOL, PEER, 0, 0, "purge"},
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0, "dry-run"},
	{0},
};

/* The guest a guest command works on (target.h): template, address, vars. */
#define TARGET_PARAMS                                                   \
	{"template", JOB_PARAM_STR, PEER, 0, 0, "template"},            \
	{"address", JOB_PARAM_STR, PEER, 0, 0, "address"},              \
	{"vars", JOB_PARAM_KV_MAP, PEER, 0, 0, "var"}

static const struct job_param inject_params[] = {
	TARGET_PARAMS,
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0, "dry-run"},
	{"parent", JOB_PARAM_INT, ZERO, 1, 9.2e18, NULL}, /* up's inject step's own */
	{0},
};

static const struct job_param bench_params[] = {
	TARGET_PARAMS,
	{"size_mib", JOB_PARAM_INT, PEER, 1, MIB_MAX, "size"},
	{0},
};

static const struct job_param virtio_params[] = {
	TARGET_PARAMS,
	{"vmid", JOB_PARAM_INT, PEER | ZERO, 100, VMID_MAX, NULL},
	{"bus", JOB_PARAM_INT, PEER | ZERO, 1, 2, "disk-bus"}, /* enum convert_bus */
	{"keep_snapshot", JOB_PARAM_BOOL, PEER, 0, 0, "keep-snapshot"},
	{"bench", JOB_PARAM_BOOL, PEER, 0, 0, "bench"},
	{"bench_size_mib", JOB_PARAM_INT, PEER, 1, MIB_MAX, "size"},
	{"verify_timeout_s", JOB_PARAM_NUM, PEER, 1, 86400, "timeout"},
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0, "dry-run"},
	{0},
};

static const struct job_param migrate_params[] = {
	{"target", JOB_PARAM_STR, PEER, 0, 0, NULL},
	{"storage_map", JOB_PARAM_STR, PEER, 0, 0, "storage-map,storage"},
	{"bwlimit", JOB_PARAM_INT, PEER, 1, 1 << 20, "bwlimit"},           /* MiB/s */
	{"max_downtime", JOB_PARAM_INT, PEER, 1, 600000, "max-downtime"},  /* ms */
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0, "dry-run"},
	{"force_ha", JOB_PARAM_BOOL, PEER, 0, 0, "force-ha"},
	/* a drain's own migrations: made by the drain, never submitted */
	{"home", JOB_PARAM_STR, 0, 0, 0, NULL},
	{"unhome", JOB_PARAM_BOOL, 0, 0, 0, NULL},
	{"parent", JOB_PARAM_INT, ZERO, 1, 9.2e18, NULL}, /* 0: not stored */
	/* the probe's port and the guest's address (tests, the bench) */
	{"probe_port", JOB_PARAM_INT, 0, 1, 65535, NULL},
	{"address", JOB_PARAM_STR, 0, 0, 0, NULL},
	{0},
};

static const struct job_param drain_params[] = {
	{"to", JOB_PARAM_STR_LIST, PEER, 0, 0, "to"},
	{"max_workers", JOB_PARAM_INT, PEER | ZERO, 1, 64, "max-workers"},
	{"per_target", JOB_PARAM_INT, PEER | ZERO, 1, 64, NULL},
	{"partial", JOB_PARAM_BOOL, PEER, 0, 0, "partial"},
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0, "dry-run"},
	{"deadline", JOB_PARAM_NUM, PEER | ZERO, 1, 1e11, NULL}, /* unix seconds */
	/* a rolling run's own drains: made by its node's job */
	{"parent", JOB_PARAM_INT, ZERO, 1, 9.2e18, NULL},
	{0},
};

/* undrain: drain's members (wf_drain_params writes both), the targets
 * and partial set by no option of its own */
static const struct job_param undrain_params[] = {
	{"to", JOB_PARAM_STR_LIST, PEER, 0, 0, NULL},
	{"max_workers", JOB_PARAM_INT, PEER | ZERO, 1, 64, "max-workers"},
	{"per_target", JOB_PARAM_INT, PEER | ZERO, 1, 64, NULL},
	{"partial", JOB_PARAM_BOOL, PEER, 0, 0, NULL},
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0, "dry-run"},
	{"deadline", JOB_PARAM_NUM, PEER | ZERO, 1, 1e11, NULL},
	{"parent", JOB_PARAM_INT, ZERO, 1, 9.2e18, NULL},
	{0},
};

/* rolling: the run, and each node's child job (rolling-node: the run's
 * params but "nodes", with its parent and its window's deadline) */
#define ROLLING_PARAMS                                                          \
	{"mode", JOB_PARAM_STR, PEER, 0, 0, "wait,run"}, /* plan, wait or run */ \
	{"version", JOB_PARAM_STR, PEER, 0, 0, "version"},                     \
	{"script", JOB_PARAM_STR, PEER | TEXT, 0, 0, "run-script"}, /* its text */ \
	{"window", JOB_PARAM_STR, PEER, 0, 0, "window"},                       \
	{"self", JOB_PARAM_STR, PEER, 0, 0, NULL}, /* the node pvagent runs on */ \
	{"max_workers", JOB_PARAM_INT, PEER | ZERO, 1, 64, "max-workers"},    \
	{"wait_s", JOB_PARAM_INT, PEER | ZERO, 1, 864000, NULL},               \
	{"node_ssh", JOB_PARAM_KV_MAP, PEER, 0, 0, "node-ssh"},                \
	/* seconds between reads of a node's state (the bench's faster clock) */ \
	{"poll_s", JOB_PARAM_NUM, 0, 0, 0, NULL}

static const struct job_param rolling_params[] = {
	ROLLING_PARAMS,
	{"nodes", JOB_PARAM_STR_LIST, PEER, 0, 0, NULL}, /* its arguments */
	{0},
};

static const struct job_param rolling_node_params[] = {
	ROLLING_PARAMS,
	{"parent", JOB_PARAM_INT, ZERO, 1, 9.2e18, NULL},
	{"deadline", JOB_PARAM_NUM, ZERO, 1, 1e11, NULL},
	{0},
};

static const struct job_param image_params[] = {
	{"image", JOB_PARAM_STR, PEER, 0, 0, NULL},
	{"image_path", JOB_PARAM_STR, PEER, 0, 0, NULL},
	{"node", JOB_PARAM_STR, PEER, 0, 0, "node"},
	{"storage", JOB_PARAM_STR, PEER, 0, 0, "storage"},
	{"import_storage", JOB_PARAM_STR, PEER, 0, 0, "import-storage"},
	{"url", JOB_PARAM_STR, PEER, 0, 0, "url"},
	{"checksum", JOB_PARAM_STR, PEER, 0, 0, "checksum"},
	{"vmid", JOB_PARAM_INT, PEER | ZERO, 100, VMID_MAX, "vmid"},
	{"rebuild", JOB_PARAM_BOOL, PEER, 0, 0, "rebuild"},
	{0},
};

/* DECL(workflow, table, ...): a workflow's declaration; the rest names
 * its queue_node, check and resume where they are not the default. */
#define DECL(wf, table, ...) {.workflow = wf, .params = table, __VA_ARGS__}

const struct job_params_decl wf_up_params_decl =
	DECL("up", up_params, .queue_node = "node", .check = up_check_params);
const struct job_params_decl wf_down_params_decl = DECL("down", down_params);
const struct job_params_decl wf_inject_params_decl =
	DECL("inject", inject_params, .resume = JOB_RESUME_NONE);
const struct job_params_decl wf_bench_params_decl =
	DECL("bench", bench_params, .resume = JOB_RESUME_NONE);
const struct job_params_decl wf_virtio_params_decl =
	DECL("virtio", virtio_params, .resume = JOB_RESUME_SUBJECT);
const struct job_params_decl wf_migrate_params_decl = DECL("migrate", migrate_params);
const struct job_params_decl wf_drain_params_decl = DECL("drain", drain_params);
const struct job_params_decl wf_undrain_params_decl = DECL("undrain", undrain_params);
const struct job_params_decl wf_image_params_decl = DECL("image", image_params);
const struct job_params_decl wf_rolling_params_decl = DECL("rolling", rolling_params);
const struct job_params_decl wf_rolling_node_params_decl =
	DECL("rolling-node", rolling_node_params);

static const struct job_params_decl *const decls[] = {
	&wf_up_params_decl,      &wf_down_params_decl,    &wf_virtio_params_decl,
	&wf_inject_params_decl,  &wf_bench_params_decl,   &wf_migrate_params_decl,
	&wf_drain_params_decl,   &wf_undrain_params_decl, &wf_image_params_decl,
	&wf_rolling_params_decl, NULL, /* (rolling-node: a run's own, never submitted) */
};

const struct job_params_decl *wf_params_find(const char *workflow)
{
	for (const struct job_params_decl *const *d = decls; workflow && *d; d++)
		if (strcmp((*d)->workflow, workflow) == 0)
			return *d;
	return NULL;
}

const struct job_params_decl *const *wf_params_all(void)
{
	return decls;
}
