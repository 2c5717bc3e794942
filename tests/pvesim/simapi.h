/* simapi.h - the contract between the simulator's HTTP front end (server.c:
 * TLS, auth, schema check, faults, request log) and its cluster model
 * (cluster.c and friends: scenario, guests, storages, tasks, boot model).
 *
 * The front end authenticates and schema-checks a request, then hands it to
 * cluster_handle() with the simulated time; the model never sees HTTP. */
#ifndef PVESIM_SIMAPI_H
#define PVESIM_SIMAPI_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct cluster;
struct acl;

/* One API request, already authenticated and (where the schema covers the
 * route) schema-checked. */
struct sim_req {
	const char *method;    /* "GET", "POST", "PUT" or "DELETE" */
	const char *path;      /* below /api2/json, no query: "/nodes/pve1/qemu" */
	json_object *params;   /* object: parameter name -> json string (form
				  values) or typed value (JSON body); includes
				  the path placeholders (node, vmid, upid) */
	const char *userid;    /* "root@pam" or the token id "root@pam!pvagent" */
	const char *privs;     /* NULL (the front end): the identity's rights are
				  the scenario's ACLs (acl.h); else a flat list
				  held on every path, "all" or "VM.Audit,Sys.Audit"
				  (the model's own requests as root, tests) */
	const struct acl *acl; /* set by cluster_handle: the scenario's ACLs */
	const char *task_fail; /* fault injection: if the request starts a task,
				  that task ends with this error; else NULL */
	double now;            /* simulated time, unix seconds */
};

/* The model's answer. The front end wraps it as PVE does:
 * 2xx -> {"data": data}; otherwise {"data": null, "message": message,
 * "errors": errors (if any)}. */
struct sim_resp {
	int status;           /* HTTP status; 0 means 200 */
	json_object *data;    /* owned; NULL is JSON null */
	char *message;        /* owned; error message ("VM 100 already exists") */
	json_object *errors;  /* owned; {"param": "message"} or NULL */
	char *upid;           /* owned; UPID of a task this request started */
	/* Added by the cluster model: when has_total, PVE puts "total": total
	 * beside "data" (task log and task lists answer this way). */
	bool has_total;
	long long total;
};

/* Load and validate a scenario file. On error returns NULL and sets *err
 * (malloc'd) to a message naming the file and the JSON path at fault,
 * e.g. "demo.json: $.guests[2].node: unknown node 'pve9'". */
struct cluster *cluster_load(const char *scenario_path, double now, char **err);
/* The same with guest roots set or replaced (pvesim --guest-root VMID=DIR):
 * the boot model reads and writes there (bootfacts.h). An unknown VMID or
 * a DIR that is not a directory is an error naming the option. */
struct sim_guest_root {
	int vmid;
	const char *dir;
};
/* A spare guest (pvesim --spare-guest FIXTURE@ADDR=DIR): a fixture tree
 * already behind an sshd at ADDR (tests/guests/guestd), waiting for the
 * first VM running that fixture to start without a root of its own (a
 * clone of a template VM): that VM takes ADDR and DIR for good, so `up`
 * gets a guest that answers SSH (make sandbox). */
struct sim_spare_guest {
	const char *fixture, *addr, *dir;
};
/* Add the spares; 0, or -1 with *err set (DIR not a directory, ADDR not a
 * loopback IPv4 address). */
int cluster_add_spares(struct cluster *c, const struct sim_spare_guest *sp, size_t n,
		       char **err);
struct cluster *cluster_load_with(const char *scenario_path, double now,
				  const struct sim_guest_root *roots, size_t nroots, char **err);
void cluster_free(struct cluster *c);

/* "8.4", "3.4", ... from the scenario; major version as a number. */
const char *cluster_pve_version(const struct cluster *c);
int cluster_pve_major(const struct cluster *c);

/* Credentials from the scenario: true when they match. What the identity
 * may do is the model's business (its ACLs, acl.h). */
bool cluster_check_token(const struct cluster *c, const char *token_id,
			 const char *secret);
bool cluster_check_password(const struct cluster *c, const char *userid,
			    const char *password);
/* Does the user have two-factor authentication ("tfa": true)? */
bool cluster_user_tfa(const struct cluster *c, const char *userid);
/* The first token of the scenario (printed on the startup line), or NULL. */
const char *cluster_first_token_id(const struct cluster *c);
const char *cluster_first_token_secret(const struct cluster *c);

/* Scenario "faults" array (borrowed, may be NULL); the front end applies
 * them. */
json_object *cluster_scenario_faults(const struct cluster *c);

/* Serve one request at simulated time req->now. Unknown or unimplemented
 * routes answer 501 "Method 'GET /x' not implemented". Fills *resp (which
 * the caller zeroed); free it with sim_resp_clear(). */
void cluster_handle(struct cluster *c, const struct sim_req *req,
		    struct sim_resp *resp);
void sim_resp_clear(struct sim_resp *resp);

/* Finish what is due by simulated time now (tasks and their effects: a
 * guest started or stopped, its boot file written). Requests do this
 * themselves; POST /_sim/advance calls it after moving the clock. */
void cluster_advance(struct cluster *c, double now);
/* Start the listeners of the guests with a listen_port (guestnet.h), on
 * the server's clock. 0, or -1 with *err. */
int cluster_net_start(struct cluster *c, double (*now)(void *), void *ctx, char **err);
void cluster_net_stop(struct cluster *c);

/* The model's own /_sim/ control routes (nodelife.c): POST
 * /_sim/node/upgrade, /_sim/node/reboot, /_sim/node/shell ({"node",
 * ...}), GET /_sim/node-commands. False when path is none of them; else
 * *data (new reference or NULL), or *status and *msg (malloc'd). */
bool cluster_sim_control(struct cluster *c, const char *method, const char *path,
			 json_object *body, double now, json_object **data, int *status,
			 char **msg);
/* Run a command a node's SSH stand-in forwarded (tests/pvesim/nodeshell/):
 * argv on node; *out its output (malloc'd); its exit code, or -1 for an
 * unknown node. */
int cluster_node_shell(struct cluster *c, const char *node, json_object *argv, double now,
		       char **out);

/* Whole cluster state for GET /_sim/state (new reference): nodes, storages,
 * guests with config, status, lock, boot model, tasks. */
json_object *cluster_state(struct cluster *c, double now);

#endif
