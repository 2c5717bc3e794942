/* job_params.h - the contract between a command and its job: what params
 * a workflow takes (struct job_param, one table per workflow, declared in
 * wf_params.c and named by struct job_workflow's .params), checked in one
 * place (job_params_check: unknown members, types, ranges, what a socket
 * peer of pvagentd may set), and written through one generic writer
 * (job_param_set_*) that refuses a member the table does not declare.
 * The typed readers a workflow's open uses are in job.h (job_param_*).
 *
 * Pure (json-c and the base only): pvagentd links it to check what a peer
 * submits with the same tables and the same messages as job_submit. */
#ifndef PVAGENT_JOB_PARAMS_H
#define PVAGENT_JOB_PARAMS_H

#include "conf.h"
#include "err.h"
#include "tmpl.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

enum job_param_type {
	JOB_PARAM_BOOL = 0, /* true or false */
	JOB_PARAM_INT,      /* an integer */
	JOB_PARAM_NUM,      /* a number (seconds) */
	JOB_PARAM_STR,      /* a string */
	JOB_PARAM_STR_LIST, /* an array of strings */
	JOB_PARAM_KV_LIST,  /* an array of [key, value] strings (up's --set, --var) */
	JOB_PARAM_KV_MAP,   /* an object of strings (a guest command's --var) */
};

#define JOB_PARAM_PEER 0x1u  /* a socket peer of pvagentd may set it */
#define JOB_PARAM_ZERO 0x2u  /* 0 means "none" and is in range too */
#define JOB_PARAM_TEXT 0x4u  /* a text of lines (a script): newlines and tabs
				are not the control characters it refuses */

/* An option of the command line that sets a param: all the CLI needs
 * to take it (cmd_args_parse builds its getopt list and fills the params
 * from these), to describe it (its help) and to complete it. */
struct job_param_opt {
	const char *name;  /* the long option ("storage-map") */
	char short_name;   /* its short form ('t'), or 0 */
	const char *arg;   /* its argument, as help names it ("MiB/s"); NULL:
			      it takes none (a BOOL's, or a value of its own) */
	const char *help;  /* one line: what it does, with its default */
	/* The value it gives the param (a new reference in *v) when its
	 * param's type alone does not say it (a bus's name, a storage id,
	 * a KV's [key, value] of another syntax than NAME=VALUE), or NULL:
	 * by the type. 0, or -1 with *why (static: what it expects,
	 * "expected a storage id"). Pure. */
	int (*value)(const struct job_param_opt *o, const char *arg, json_object **v,
		     const char **why);
};

struct job_param {
	const char *key;
	enum job_param_type type;
	unsigned flags;
	double min, max;       /* INT and NUM: the range (both 0: any) */
	/* the command's options that set it ({NULL}-ended, in the order
	 * its help lists them), or NULL: the command or the engine sets it.
	 * What the property test (test_job_contract) walks. */
	const struct job_param_opt *opts;
};

/* What job_submit does with an unfinished job of the same workflow and
 * subject: part of the contract, since pvagentd's peer policy asks it too
 * (a submit that would take over another peer's job is an owner's act). */
enum job_resume {
	JOB_RESUME_SAME = 0, /* resumed when its params are the same, else
				superseded (job_for_subject) */
	JOB_RESUME_SUBJECT,  /* resumed whatever its params (virtio: its
				journal is the guest's state) */
	JOB_RESUME_NONE,     /* left alone: every request a new job (inject,
				bench: a rerun does it again) */
};

/* A workflow's params: its name and its table ({NULL}-ended). */
struct job_params_decl {
	const char *workflow;
	const struct job_param *params;
	/* the param naming the node a job runs on, which pvagentd's per-node
	 * limit counts (up: "node"), or NULL: none */
	const char *queue_node;
	/* What the members say together, checked as the command checks its
	 * request (up: names, --set keys and values against PVE's schema, the
	 * template expanded, the pool), with conf; pure. pvagentd calls it on
	 * what a peer submitted (the file members resolved). NULL: none. 0,
	 * or -1 with err. */
	int (*check)(const char *subject, json_object *params, const struct conf *conf,
		     struct pve_error *err);
	enum job_resume resume;
};

/* The member key of d, or NULL. */
const struct job_param *job_param_find(const struct job_params_decl *d, const char *key);
/* The option of d's params called name (*param: its param, when not
 * NULL), or NULL. */
const struct job_param_opt *job_param_opt_find(const struct job_params_decl *d, const char *name,
					       const struct job_param **param);
/* The type's name, for messages ("a string"). */
const char *job_param_type_name(enum job_param_type t);

/* Check params (a JSON object) of a job of d on subject: every member
 * declared (with peer: one a socket peer may set), of its type, in its
 * range, no string with a control character (but a TEXT's newlines and
 * tabs). 0, or -1 with *why
 * (malloc'd: "WF SUBJECT: \"KEY\" ..."). The same words for the CLI's
 * job_submit and for pvagentd. */
int job_params_check(const struct job_params_decl *d, const char *subject, json_object *params,
		     bool peer, char **why);

/* The one writer: member key of params set to v (taken; NULL: out of
 * memory), when d declares key with v's type. 0, or -1 (not declared, of
 * another type, or out of memory: a programming error, logged). The typed
 * forms leave a NULL string or list out. */
int job_param_put(const struct job_params_decl *d, json_object *params, const char *key,
		  json_object *v);
int job_param_set_str(const struct job_params_decl *d, json_object *params, const char *key,
		      const char *v);
int job_param_set_int(const struct job_params_decl *d, json_object *params, const char *key,
		      long long v);
int job_param_set_num(const struct job_params_decl *d, json_object *params, const char *key,
		      double v);
int job_param_set_bool(const struct job_params_decl *d, json_object *params, const char *key,
		       bool v);
/* A KV_LIST or KV_MAP member from l (a KV_MAP with no items is left
 * out). */
int job_param_set_kv(const struct job_params_decl *d, json_object *params, const char *key,
		     const struct tmpl_kvlist *l);
int job_param_set_strv(const struct job_params_decl *d, json_object *params, const char *key,
		       const char *const *v, size_t n);

/* Member key of params (KV_LIST or KV_MAP) into *l (zeroed first;
 * absent: empty). 0, or -1 (not of its type, or out of memory). */
int job_params_kv(json_object *params, const char *key, struct tmpl_kvlist *l);

#endif
