/* wf_params.c - every workflow's params, declared once (wf_params.h), as
 * redis declares its commands: the member, its type and range, whether a
 * socket peer of pvagentd may set it, and the command-line options that
 * set it with their argument and help line. The engine checks every job's
 * params by these tables (job_submit), pvagentd every submitted job's
 * (submit_check.c), the CLI builds a job command's options, fills its
 * params and prints its help from them (cli_args.c, cli_help.c), and the
 * workflows read them with job.h's typed readers.
 *
 * To add a param: its row here (key, type, range, peer flag, and OPT:
 * its option, argument and help line), and the read in its workflow's
 * open. An option whose syntax its type does not say (a bus's name, a
 * NODE=HOST[:PORT]) names its value function below. Pure. */
#include "wf_params.h"

#include "bench.h"
#include "up_check.h"
#include "wf_virtio.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PEER JOB_PARAM_PEER
#define ZERO JOB_PARAM_ZERO
#define TEXT JOB_PARAM_TEXT
#define VMID_MAX 999999999
#define MIB_MAX BENCH_MAX_SIZE_MIB

/* A param's options, in the order help lists them; an option by its type,
 * or with a value function of its own. */
#define OPTS(...) ((const struct job_param_opt[]){__VA_ARGS__, {0}})
#define OPT(name, c, arg, help) {name, c, arg, help, NULL}
#define OPTV(name, c, arg, help, fn) {name, c, arg, help, fn}

/* ---- the values an option's type does not say ------------------------------------ */

static bool storage_id_ok(const char *s, size_t n)
{
	if (n == 0 || !isalpha((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
			return false;
	return true;
}

bool migrate_map_valid(const char *map, const char **why)
{
	static const char *bad = "expected a storage id, or SRC:DST pairs separated by ','";
	if (!map || !*map) {
		*why = bad;
		return false;
	}
	bool pairs = strchr(map, ':') != NULL;
	for (const char *p = map;;) {
		const char *e = strchrnul(p, ',');
		const char *colon = memchr(p, ':', (size_t)(e - p));
		if (pairs != (colon != NULL) ||
		    (colon && (!storage_id_ok(p, (size_t)(colon - p)) ||
			       !storage_id_ok(colon + 1, (size_t)(e - colon - 1)))) ||
		    (!colon && (!storage_id_ok(p, (size_t)(e - p)) || *e))) {
			*why = bad;
			return false;
		}
		if (!*e)
			return true;
		p = e + 1;
	}
}

/* --storage: one storage id (migrate_map_valid's without a ':') */
static int storage_id(const struct job_param_opt *o, const char *arg, json_object **v,
		      const char **why)
{
	const char *w = NULL;
	if (!migrate_map_valid(arg, &w) || strchr(arg, ':')) {
		*why = "expected a storage id";
		return -1;
	}
	return (*v = json_object_new_string(arg)) ? 0 : -1;
}

/* --storage-map: SRC:DST,... (or one storage id) */
static int storage_map(const struct job_param_opt *o, const char *arg, json_object **v,
		       const char **why)
{
	const char *w = NULL;
	if (!migrate_map_valid(arg, &w)) {
		*why = "expected SRC:DST,...";
		return -1;
	}
	return (*v = json_object_new_string(arg)) ? 0 : -1;
}

/* --disk-bus: its name as enum convert_bus */
static int disk_bus(const struct job_param_opt *o, const char *arg, json_object **v,
		    const char **why)
{
	static const struct {
		const char *name;
		enum convert_bus bus;
	} buses[] = {{"virtio-blk", CONVERT_BUS_BLK}, {"virtio-scsi", CONVERT_BUS_SCSI}};
	for (size_t i = 0; i < sizeof buses / sizeof *buses; i++)
		if (strcmp(arg, buses[i].name) == 0)
			return (*v = json_object_new_int(buses[i].bus)) ? 0 : -1;
	*why = "virtio-blk or virtio-scsi";
	return -1;
}

/* --size: MiB from 1 to the bench's largest file */
static int size_mib(const struct job_param_opt *o, const char *arg, json_object **v,
		    const char **why)
{
	char *end = NULL;
	errno = 0;
	unsigned long x = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || x == 0 || x > MIB_MAX) {
		*why = "expected MiB from 1 to 1048576";
		return -1;
	}
	return (*v = json_object_new_int64((long long)x)) ? 0 : -1;
}

/* --timeout: seconds from 1 to a day */
static int seconds(const struct job_param_opt *o, const char *arg, json_object **v,
		   const char **why)
{
	char *end = NULL;
	double x = strtod(arg, &end);
	if (end == arg || *end || x < 1 || x > 86400) {
		*why = "seconds from 1 to 86400";
		return -1;
	}
	return (*v = json_object_new_double(x)) ? 0 : -1;
}

/* --wait, --run: the mode is the option's name */
static int mode_of(const struct job_param_opt *o, const char *arg, json_object **v,
		   const char **why)
{
	return (*v = json_object_new_string(o->name)) ? 0 : -1;
}

/* --node-ssh NODE=HOST[:PORT]: [NODE, "HOST[:PORT]"] (a node's name is no
 * template variable's: '-' and '.' in it too) */
static int node_ssh(const struct job_param_opt *o, const char *arg, json_object **v,
		    const char **why)
{
	const char *eq = strchr(arg, '='), *colon = eq ? strrchr(eq + 1, ':') : NULL;
	char *end = NULL;
	long port = colon ? strtol(colon + 1, &end, 10) : 22;
	if (!eq || eq == arg || !eq[1] || eq[1] == ':' ||
	    (colon && (*end || port < 1 || port > 65535))) {
		*why = "NODE=HOST or NODE=HOST:PORT, not";
		return -1;
	}
	*v = json_object_new_array();
	if (!*v || json_object_array_add(*v, json_object_new_string_len(arg, (int)(eq - arg))) ||
	    json_object_array_add(*v, json_object_new_string(eq + 1))) {
		json_object_put(*v);
		*v = NULL;
		return -1;
	}
	return 0;
}

/* ---- the tables --------------------------------------------------------------------- */

static const struct job_param up_params[] = {
	{"name", JOB_PARAM_STR, PEER, 0, 0, NULL},
	{"template", JOB_PARAM_STR, PEER, 0, 0,
	 OPTS(OPT("template", 't', "NAME", "the template to provision from (required)"))},
	{"template_path", JOB_PARAM_STR, PEER, 0, 0, NULL},
	{"node", JOB_PARAM_STR, PEER, 0, 0,
	 OPTS(OPT("node", 'n', "N", "the node to create the guests on (default: [pve] node)"))},
	{"vmid", JOB_PARAM_INT, PEER | ZERO, 100, VMID_MAX,
	 OPTS(OPT("vmid", 0, "ID", "the VMID to claim (default: the next free one)"))},
	{"storage", JOB_PARAM_STR, PEER, 0, 0,
	 OPTS(OPT("storage", 0, "S", "the storage for the guest's disks (default: the "
		  "template's)"))},
	{"sets", JOB_PARAM_KV_LIST, PEER, 0, 0,
	 OPTS(OPT("set", 0, "KEY=VAL", "override a [pve] key of the template, e.g. cores=4 "
		  "(repeatable)"))},
	{"vars", JOB_PARAM_KV_LIST, PEER, 0, 0,
	 OPTS(OPT("var", 0, "K=V", "set the template variable K (repeatable)"))},
	{"no_start", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("no-start", 0, NULL, "create and configure, but leave the guest stopped"))},
	{"full", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("full", 0, NULL, "a full clone instead of a linked one"))},
	{"no_inject", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("no-inject", 0, NULL, "skip the guest-side setup over SSH"))},
	{"retemplate", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("retemplate", 0, NULL, "reconfigure a guest made from another template"))},
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("dry-run", 0, NULL, "print the plan, key by key; change nothing"))},
	{"pool", JOB_PARAM_STR, PEER, 0, 0,
	 OPTS(OPT("pool", 0, "NAME", "a static address from [pool NAME]: its lowest free one"))},
	{"no_wait_ssh", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("no-wait-ssh", 0, NULL, "try SSH once: a guest not answering yet is done "
		  "without its files (default: wait 300 s)"))},
	/* ${pubkey}: the key of whoever runs the job (pvagentd's own) */
	{"pubkey", JOB_PARAM_STR, 0, 0, 0, NULL},
	{"vmid_min", JOB_PARAM_INT, PEER | ZERO, 100, VMID_MAX, NULL},
	{"vmid_max", JOB_PARAM_INT, PEER | ZERO, 100, VMID_MAX, NULL},
	{"ssh_wait_s", JOB_PARAM_NUM, PEER, 0, 86400, NULL},
	{0},
};

static const struct job_param down_params[] = {
	{"purge", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("purge", 0, NULL, "also remove the guest from backup jobs, replication and "
		  "HA"))},
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("dry-run", 0, NULL, "print what would be deleted; change nothing"))},
	{0},
};

/* The guest a guest command works on (target.h): its template, its vars
 * and its address, each where its command's help lists it. */
#define TARGET_TEMPLATE                                                                  \
	{"template", JOB_PARAM_STR, PEER, 0, 0,                                          \
	 OPTS(OPT("template", 't', "NAME", "the guest's template (default: the one its " \
		  "description names)"))}
#define TARGET_VARS                                                                      \
	{"vars", JOB_PARAM_KV_MAP, PEER, 0, 0,                                           \
	 OPTS(OPT("var", 0, "K=V", "set the template variable K (repeatable)"))}
#define TARGET_ADDRESS                                                                   \
	{"address", JOB_PARAM_STR, PEER, 0, 0,                                           \
	 OPTS(OPT("address", 0, "A", "the guest's address (default: as the template "    \
		  "says)"))}

static const struct job_param inject_params[] = {
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("dry-run", 0, NULL, "show each file's diff; write nothing"))},
	TARGET_TEMPLATE,
	TARGET_VARS,
	TARGET_ADDRESS,
	{"parent", JOB_PARAM_INT, ZERO, 1, 9.2e18, NULL}, /* up's inject step's own */
	{0},
};

static const struct job_param bench_params[] = {
	{"size_mib", JOB_PARAM_INT, PEER, 1, MIB_MAX,
	 OPTS(OPTV("size", 0, "MiB", "the test file's size (default 256)", size_mib))},
	TARGET_ADDRESS,
	TARGET_TEMPLATE,
	TARGET_VARS,
	{0},
};

static const struct job_param virtio_params[] = {
	{"bench", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("bench", 0, NULL, "measure the disk before and after, side by side"))},
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("dry-run", 0, NULL, "print the whole plan (file diffs, config change); "
		  "change nothing"))},
	{"bus", JOB_PARAM_INT, PEER | ZERO, 1, 2, /* enum convert_bus */
	 OPTS(OPTV("disk-bus", 0, "BUS", "virtio-blk or virtio-scsi (default: chosen for the "
		   "OS)", disk_bus))},
	{"keep_snapshot", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("keep-snapshot", 0, NULL, "keep the pvagent_virtio snapshot as a way back"))},
	{"bench_size_mib", JOB_PARAM_INT, PEER, 1, MIB_MAX,
	 OPTS(OPTV("size", 0, "MiB", "the --bench test file's size (default 256)", size_mib))},
	TARGET_ADDRESS,
	TARGET_TEMPLATE,
	{"verify_timeout_s", JOB_PARAM_NUM, PEER, 1, 86400,
	 OPTS(OPTV("timeout", 0, "S", "seconds the converted guest has to prove itself "
		   "(default 300)", seconds))},
	TARGET_VARS,
	{"vmid", JOB_PARAM_INT, PEER | ZERO, 100, VMID_MAX, NULL},
	{0},
};

static const struct job_param migrate_params[] = {
	{"target", JOB_PARAM_STR, PEER, 0, 0, NULL},
	{"storage_map", JOB_PARAM_STR, PEER, 0, 0,
	 OPTS(OPTV("storage", 0, "S", "move every local disk to storage S on the target",
		   storage_id),
	      OPTV("storage-map", 0, "SRC:DST,...", "move local disks storage by storage",
		   storage_map))},
	{"bwlimit", JOB_PARAM_INT, PEER, 1, 1 << 20,
	 OPTS(OPT("bwlimit", 0, "MiB/s", "limit the migration's bandwidth"))},
	{"max_downtime", JOB_PARAM_INT, PEER, 1, 600000,
	 OPTS(OPT("max-downtime", 0, "MS", "the VM's migrate_downtime for this migration"))},
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("dry-run", 0, NULL, "check and print the plan; send nothing"))},
	{"force_ha", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("force-ha", 0, NULL, "an HA-managed guest: let HA migrate it without the "
		  "storage map and bandwidth limit given (HA takes neither)"))},
	/* a drain's own migrations: made by the drain, never submitted */
	{"home", JOB_PARAM_STR, 0, 0, 0, NULL},
	{"unhome", JOB_PARAM_BOOL, 0, 0, 0, NULL},
	{"parent", JOB_PARAM_INT, ZERO, 1, 9.2e18, NULL}, /* 0: not stored */
	/* the probe's port and the guest's address (tests, the bench) */
	{"probe_port", JOB_PARAM_INT, 0, 1, 65535, NULL},
	{"address", JOB_PARAM_STR, 0, 0, 0, NULL},
	{0},
};

#define MAX_WORKERS_OPT \
	OPTS(OPT("max-workers", 0, "K", "migrations at once (default [migrate] max_workers)"))

static const struct job_param drain_params[] = {
	{"to", JOB_PARAM_STR_LIST, PEER, 0, 0,
	 OPTS(OPT("to", 0, "N1,N2,...", "move guests only to these nodes (default: every other "
		  "one)"))},
	{"max_workers", JOB_PARAM_INT, PEER | ZERO, 1, 64, MAX_WORKERS_OPT},
	{"per_target", JOB_PARAM_INT, PEER | ZERO, 1, 64, NULL},
	{"partial", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("partial", 0, NULL, "move what fits even when some guest fits nowhere"))},
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("dry-run", 0, NULL, "print the plan: target, method, estimate per guest"))},
	{"deadline", JOB_PARAM_NUM, PEER | ZERO, 1, 1e11, NULL}, /* unix seconds */
	/* a rolling run's own drains: made by its node's job */
	{"parent", JOB_PARAM_INT, ZERO, 1, 9.2e18, NULL},
	{0},
};

/* undrain: drain's members (wf_drain_params writes both), the targets
 * and partial set by no option of its own */
static const struct job_param undrain_params[] = {
	{"to", JOB_PARAM_STR_LIST, PEER, 0, 0, NULL},
	{"max_workers", JOB_PARAM_INT, PEER | ZERO, 1, 64, MAX_WORKERS_OPT},
	{"per_target", JOB_PARAM_INT, PEER | ZERO, 1, 64, NULL},
	{"partial", JOB_PARAM_BOOL, PEER, 0, 0, NULL},
	{"dry_run", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("dry-run", 0, NULL, "print which guests would come home"))},
	{"deadline", JOB_PARAM_NUM, PEER | ZERO, 1, 1e11, NULL},
	{"parent", JOB_PARAM_INT, ZERO, 1, 9.2e18, NULL},
	{0},
};

/* rolling: the run, and each node's child job (rolling-node: the run's
 * params but "nodes", with its parent and its window's deadline). The
 * mode "plan" is its argument's; --run-script's FILE is read by the
 * command, which puts its text. */
#define ROLLING_PARAMS                                                                   \
	{"mode", JOB_PARAM_STR, PEER, 0, 0, /* plan, wait or run */                       \
	 OPTS(OPTV("wait", 0, NULL, "each node's update is the admin's: wait until it has " \
		   "rebooted (and runs --version)", mode_of),                             \
	      OPTV("run", 0, NULL, "update each node over SSH: apt-get update, "           \
		   "dist-upgrade, a reboot when the kernel or QEMU changed", mode_of))},   \
	{"script", JOB_PARAM_STR, PEER | TEXT, 0, 0, /* its text */                       \
	 OPTS(OPT("run-script", 0, "FILE", "the major upgrade: run FILE on each node "      \
		  "(after its pveXtoY --full passes) instead of dist-upgrade"))},         \
	{"version", JOB_PARAM_STR, PEER, 0, 0,                                            \
	 OPTS(OPT("version", 0, "V", "the version each node runs after its update (9, "    \
		  "9.1, 9.1.2)"))},                                                       \
	{"window", JOB_PARAM_STR, PEER, 0, 0,                                             \
	 OPTS(OPT("window", 0, "W", "start each node only while window W is open; its "    \
		  "drain ends with it"))},                                                \
	{"self", JOB_PARAM_STR, PEER, 0, 0, NULL}, /* the node pvagent runs on */          \
	{"max_workers", JOB_PARAM_INT, PEER | ZERO, 1, 64, MAX_WORKERS_OPT},              \
	{"wait_s", JOB_PARAM_INT, PEER | ZERO, 1, 864000, NULL},                          \
	{"node_ssh", JOB_PARAM_KV_MAP, PEER, 0, 0,                                        \
	 OPTS(OPTV("node-ssh", 0, "NODE=HOST[:PORT]", "reach NODE's SSH there (default: "  \
		   "its address in /cluster/status, port 22; repeatable)", node_ssh))},   \
	/* seconds between reads of a node's state (the bench's faster clock) */          \
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
	{"node", JOB_PARAM_STR, PEER, 0, 0,
	 OPTS(OPT("node", 'n', "N", "the node that downloads and builds (default [pve] "
		  "node)"))},
	{"storage", JOB_PARAM_STR, PEER, 0, 0,
	 OPTS(OPT("storage", 's', "S", "the template's disk storage (default [pve] storage, "
		  "else local-lvm)"))},
	{"import_storage", JOB_PARAM_STR, PEER, 0, 0,
	 OPTS(OPT("import-storage", 0, "S", "where the node downloads the image (default "
		  "[pve] import_storage, else local)"))},
	{"url", JOB_PARAM_STR, PEER, 0, 0,
	 OPTS(OPT("url", 0, "URL", "download from URL instead (a mirror; needs --checksum)"))},
	{"checksum", JOB_PARAM_STR, PEER, 0, 0,
	 OPTS(OPT("checksum", 0, "ALGO:HEX", "the image's checksum (default: its published "
		  "file)"))},
	{"vmid", JOB_PARAM_INT, PEER | ZERO, 100, VMID_MAX,
	 OPTS(OPT("vmid", 0, "ID", "the template VM's VMID (default: the next free one)"))},
	{"rebuild", JOB_PARAM_BOOL, PEER, 0, 0,
	 OPTS(OPT("rebuild", 0, NULL, "replace the template, once the new one is complete"))},
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
