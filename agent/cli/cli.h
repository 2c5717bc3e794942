/* cli.h - what the parts of the pvagent command-line tool share
 * (cli_env.c: configuration, client, store, errors and exit codes;
 * pvagent.c: global options; cli_table.c: the command table,
 * nodes/list/templates; cli_args.c: parsing and dispatch; cli_run.c: the
 * one runner of a command's jobs; cli_up.c: up/down; cli_guest.c: inject,
 * virtio, bench; ...). Not part of the library: agent/cli/ is linked into
 * pvagent only. */
#ifndef PVAGENT_CLI_H
#define PVAGENT_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "conf.h"
#include "ctl_client.h"
#include "job.h"
#include "up_result.h"
#include "pve.h"

#include <signal.h>

#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130

struct cli {
	const char *conf_path;
	bool json;
	bool local;            /* --local: never through pvagentd */
	int verbosity;
	struct conf conf;
	bool conf_loaded;
	struct pve *pve;
	struct store *store;   /* state.db, opened on first use */
	bool store_failed;
	const char *subject;   /* the guest a guest command is about: the
				  "name" of its --json error object */
	struct cli_jobs *jobs; /* a job command's jobs, as its handler appends
				  them (cli_job_add) */
	bool outcome_said;     /* pvagentd says this outcome to the client (a
				  submitted job not stored): no --json
				  error object */
	const struct cmd_entry *cmd; /* the command running (cmd_dispatch) */
};

/* A job command's jobs (cli_run.c): its handler parses and checks its
 * command line and appends each job's {subject, params} (cli_job_add),
 * nothing else; cmd_dispatch then sends them to pvagentd when one answers
 * (cli_daemon_submit), or runs them here (cli_run_here). A handler that
 * appends none has done its work (image list, a down of guests none of
 * which exists). */
struct cli_jobs {
	const struct job_workflow *wf;
	json_object *jobs;     /* [{"subject": S, "params": P}, ...] */
	unsigned parallel;     /* here: at most this many at once (0: 1) */
	bool not_kept;         /* here: not kept in the store (as a dry run's:
				  rolling's plan) */
	/* here, before each runs: what the handler read already (migrate's
	 * node list and guest), which the jobs own (done frees it), or NULL */
	void (*attach)(struct job *j, void *ctx);
	void (*done)(void *ctx);
	void *ctx;
};
/* Append one job of the command's workflow (params taken; NULL: out of
 * memory). 0, or 1 (said). */
int cli_job_add(struct cli *cli, const char *subject, json_object *params);
/* What the handler read for its jobs (see struct cli_jobs). */
void cli_jobs_attach(struct cli *cli, void (*attach)(struct job *j, void *ctx),
		     void (*done)(void *ctx), void *ctx);
struct cmd_entry;
/* The jobs a handler appended, run here: each made (job_submit: an
 * unfinished job of the same request is resumed) in one env (cli_jobs_env)
 * after what the one who runs a job adds (the workflow's "pubkey": ours;
 * then its own check, as pvagentd makes it), then cli_run_jobs. Its exit
 * code. */
int cli_run_here(struct cli *cli, const struct cmd_entry *e, struct cli_jobs *jobs);
/* The one runner of jobs made (submitted or loaded: resume) in an env of
 * cli_jobs_env: at most parallel at once (0: 1), on cli's PVE client or,
 * for a command with CMD_OWN_CLIENT or several at once, clients of their
 * own; then printed by their command's render (cli_command_of). Its exit
 * code. */
int cli_run_jobs(struct cli *cli, const struct job_workflow *wf, struct job **jobs, size_t n,
		 unsigned parallel);
/* The env wf's jobs run in here: stored unless a dry run, events through
 * pp (a dry run's as "would change", with the guest files' diffs), a
 * migration's tasks waiting as long as [migrate] timeout says. 0, or -1
 * (out of memory). */
struct event_print;
int cli_jobs_env(struct cli *cli, const struct job_workflow *wf, bool dry_run,
		 struct event_print *pp, struct job_env *env);

/* Set by SIGINT/SIGTERM: jobs stop between steps (job.h); cli_cancelled
 * also by SIGUSR1, `pvagent cancel`'s signal (directly or through
 * pvagentd). */
extern volatile sig_atomic_t cli_stop, cli_cancelled;
/* How a stopped job is said: "cancelled" or "interrupted". */
const char *cli_stop_word(void);

/* Exit codes (pvagent(1) EXIT STATUS): 0 done, 1 failed with nothing left, 2 usage, 3 needs
 * attention, 4 unreachable, 130 interrupted (resumable). */
int cli_exit_code(enum job_outcome o);
/* The one of two exit codes to say first, as job_outcome_worse ranks
 * their outcomes (several jobs' codes: the command's). */
int cli_exit_worse(int a, int b);
/* state.db under [paths] state; NULL (said once) when it cannot be
 * opened: jobs then run without being recorded. */
struct store *cli_store(struct cli *cli);

/* Every command's job events (event.h) as lines or JSON lines
 * (cli_progress.c); then each command prints its result. */
struct live_line;
struct event_print {
	struct cli *cli;
	bool tty;          /* a live line per guest in flight, redrawn in place */
	bool file_diffs;   /* print the diffs of guest files (dry runs, -v) */
	bool dry_run;      /* config changes are "would change" */
	struct live_line *live; /* the live lines (tty) */
	size_t n_live, drawn;
};
void on_job_event(void *ctx, const struct job_event *ev);
/* A job environment of this command line: state.db, events printed by
 * pp, the stop flag, the configuration; job_env_init'ed (0, or -1). */
int cli_job_env(struct cli *cli, struct event_print *pp, struct job_env *env);
/* Jobs of these guests about to run at most parallel at once: on a
 * terminal each guest's live line says it waits for its turn until its job
 * begins (drawn with the first event). */
void cli_progress_waiting(struct event_print *pp, const char *const *names, size_t n,
			  unsigned parallel);
/* Erase the live lines still drawn (atexit: none is left on the screen). */
void cli_progress_at_exit(void);
/* Erase the live lines and forget them (before the result is printed). */
void end_progress_line(struct event_print *pp);
/* The terminal's width: stdout's, else $COLUMNS (a daemon's child draws
 * for its client's terminal), else 80. */
unsigned cli_term_columns(void);
/* Is our output a terminal (progress redrawn in place)? $PVAGENT_TTY
 * (set by the daemon for its children) wins over isatty(1). */
bool cli_stdout_tty(void);
void print_results(struct cli *cli, const char *cmd, const struct up_result *r, size_t n,
		   int code);

/* "pvagent CMD: WHAT 'ARG'" on stderr; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *what, const char *arg);
/* Every usage and configuration error goes through here: the message on
 * stderr as given ("pvagent CMD: ..."), and kept (the first one) for the
 * final JSON object with --json. Returns EXIT_USAGE. */
int cli_error(const char *kind, const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Keep msg (malloc'd, taken) as the error of --json's final object when
 * none is kept yet, without saying it (it was said already). */
void cli_error_note(const char *kind, const char *cmd, char *msg);
/* With --json, a command that failed with an error said by cli_error and
 * printed no final object prints it; the kept message is freed. Returns rc. */
int cli_finish_error(struct cli *cli, const char *cmd, int rc);
/* Ctrl-C and SIGTERM set cli_stop (a second one quits at once); SIGUSR1
 * (pvagent cancel) sets cli_stop and cli_cancelled. */
void cli_catch_stop_signals(void);
/* The command being run: cli_error's prefix when it is given none. */
void cli_set_command(const char *name);
/* out_result_members of a job: its subject, guest, exit code and error
 * (kind, message, the step it failed in). */
void cli_job_result_members(json_object *o, struct job *j, int code);
/* The renderers (cmd_entry.render) of the job commands: their jobs'
 * result as the command prints it, after it ran them or resume did
 * (code: the jobs' exit code); each returns the exit code. Up's and
 * down's print one table of their guests (cli_up.c); the others' one job
 * (jobs[0]): migrate, drain and undrain from its params and vars
 * (cli_migrate.c), bench (1 when its figures cannot be read), inject and
 * virtio (cli_guest.c), image (cli_image.c). */
int cli_up_result(struct cli *cli, struct job *const *jobs, size_t n, int code);
int cli_down_result(struct cli *cli, struct job *const *jobs, size_t n, int code);
int cli_migration_result(struct cli *cli, struct job *const *jobs, size_t n, int code);
int cli_bench_result(struct cli *cli, struct job *const *jobs, size_t n, int code);
int cli_inject_result(struct cli *cli, struct job *const *jobs, size_t n, int code);
int cli_virtio_result(struct cli *cli, struct job *const *jobs, size_t n, int code);
/* Report a PVE error and return its exit code. */
int cli_fail_pve(struct cli *cli, const char *cmd, struct pve_error *e);
/* arg as a number from min to max into *out: 0, or EXIT_USAGE (said). */
int cli_parse_count(const char *cmd, const char *opt, const char *arg, long min, long max,
		    long *out);
/* Load the configuration (once); 0 or an exit code (said). */
int cli_load_conf(struct cli *cli);
/* Is node one of the cluster's (connecting first; NULL: only connect)?
 * 0, or an exit code (said: 2 naming the nodes there are, the nearest
 * first; from, when not NULL, says where the name came from: "[pve]
 * node"). */
int cli_check_node(struct cli *cli, const char *cmd, const char *node, const char *from);
/* The same, and the node list read (GET /nodes: node, status, mem,
 * maxmem, ...) into *keep when node is known (the caller's to put). */
int cli_check_node_keep(struct cli *cli, const char *cmd, const char *node, const char *from,
			json_object **keep);
/* Does guest name (or VMID) exist (connecting first)? 0, or an exit code
 * (said: 2, "no guest named ...", as its command says it). For a command
 * submitted to pvagentd: said before a job is stored, as in this process. */
int cli_check_guest(struct cli *cli, const char *cmd, const char *name);
/* Load the configuration (once) and open the PVE client; 0 or an exit code. */
int cli_connect_pve(struct cli *cli);
/* A command's options and arguments, parsed by the command table's
 * declaration (pvagent.c): the options in the order given, then the
 * positional arguments, their number already checked. */
struct cmd_opt {
	int opt;           /* the option character */
	const char *val;   /* its argument, or NULL */
};
struct cmd_args {
	const char *cmd;
	struct cmd_opt *v; /* the command's own options (a job command's:
			      those that set no param) */
	size_t n;
	/* a job command's params as its options give them, by its
	 * workflow's table (wf_params.c): each option's value of its
	 * param's type, checked against its range; a copy is what the
	 * handler appends (cmd_args_params). NULL: not a job command. */
	json_object *params;
	int argc;          /* positional arguments */
	char **argv;
	char **cmdline;    /* the whole command line from the command's name */
};

/* What a command is, besides its handler (cmd_entry.flags). */
#define CMD_JOBS 0x1u    /* its handler parses and checks its command line
			    and appends each job's {subject, params} of its
			    workflow (.wf, cli_job_add): cmd_dispatch sends
			    them to pvagentd when one answers, else runs them
			    here (cli_run_here); a handler that appends none
			    (image list) has done its work */
#define CMD_RESUME 0x2u  /* it names a stored job (ID), which pvagentd
			    resumes when one answers */
#define CMD_GUESTS 0x4u  /* its result names every guest, one never found
			    too (up, down) */
#define CMD_MIGRATES 0x8u /* its tasks are migrations: they wait as long
			     as [migrate] timeout says */
#define CMD_OWN_CLIENT 0x10u /* its jobs are long (up, down, image build):
				each runs on a PVE client of its own made
				from the configuration, which retries an
				unreachable PVE */
#define CMD_DIFFS 0x20u  /* its events print the guest files' diffs (inject;
			    every command's dry run does) */
#define CMD_READONLY 0x40u /* it changes nothing (in PVE, the guests, the
			      store or pvagentd's queue): the peer policy's
			      reader; the CLI's daemon client sends it only
			      requests pvagentd declares CTL_READ
			      (cli_daemon_call), so it can never cancel,
			      resume or submit */

/* One command, declared as tmux declares its cmd_entry: the options and
 * the number of arguments it takes, the handler that builds a request
 * from them and runs it (or hands its jobs on) and prints, and for a job
 * command its workflow. A job command's options are its workflow's
 * params' (their rows in wf_params.c name each option, its argument and
 * help line) and, in longopts, its own: those that set no param (how it
 * runs here: "parallel"; what it asks: "yes"). */
struct cmd_entry {
	const char *name;
	const char *usage;             /* "NAME [--purge]" */
	const char *help;
	const char *shortopts;         /* its own, for getopt ("t:n:") */
	const struct option *longopts; /* its own (not its params'); NULL: none */
	const char *repeatable;        /* its own that may be given more than once
					  (a list param's option may be too) */
	int min_args, max_args;        /* positional arguments; max -1: any number */
	const char *arg_name;          /* what they are, for messages ("guest name") */
	int (*run)(struct cli *cli, const struct cmd_args *a);
	const char *examples;          /* "pvagent up web1 -t ubuntu-24.04\n...": help */
	const struct job_workflow *wf; /* the workflow of its jobs, or NULL */
	/* its jobs' result as it prints it, also for `resume` (they ran:
	 * code their exit code); returns the exit code */
	int (*render)(struct cli *cli, struct job *const *jobs, size_t n, int code);
	unsigned flags;                /* CMD_* */
};

/* A command's options as getopt takes them: its workflow's params' (in
 * their table's order) then its own, each with the param it sets. */
struct job_param;
struct job_param_opt;
struct cmd_opts {
	struct option *longopts;            /* {0}-ended */
	char *shortopts;
	const struct job_param **param;     /* each option's param, NULL: its own */
	const struct job_param_opt **popt;  /* and its row there */
	size_t n;
};
/* e's options into *o (free with cmd_opts_free): 0, or -1 (out of
 * memory). */
int cmd_opts_build(const struct cmd_entry *e, struct cmd_opts *o);
void cmd_opts_free(struct cmd_opts *o);
/* A copy of a job command's params (a->params; empty when it has none):
 * what its handler adds to and appends. NULL: out of memory. */
json_object *cmd_args_params(const struct cmd_args *a);

/* Parse argv (argv[0] the command's name) by e into *a (free with
 * cmd_args_free): a job command's param options into a->params, by type
 * (BOOL true; INT and NUM in the row's range; STR; STR_LIST "A,B"
 * appended; KV_LIST and KV_MAP from K=V; or the option's value function),
 * its own options into a->v. 0, or EXIT_USAGE after saying what is
 * wrong. */
int cmd_args_parse(const struct cmd_entry *e, int argc, char **argv, struct cmd_args *a);
/* The "options:" part of a command's help: each option with its argument
 * and one line saying what it does (cli_help.c). */
void cli_print_options(FILE *f, const struct cmd_entry *e);
void cmd_args_free(struct cmd_args *a);

/* The command entries of cli_guest.c and cli_jobs.c. */
extern const struct cmd_entry cmd_inject_entry, cmd_virtio_entry, cmd_bench_entry,
	cmd_ssh_entry, cmd_show_entry;
extern const struct cmd_entry cmd_migrate_entry, cmd_drain_entry, cmd_undrain_entry,
	cmd_windows_entry;
extern const struct cmd_entry cmd_jobs_entry, cmd_job_entry, cmd_resume_entry, cmd_cancel_entry;
/* pvagentd's own (--local only; in neither help nor completion). */
extern const struct cmd_entry cmd_submitted_entry;
extern const struct cmd_entry cmd_up_entry, cmd_down_entry, cmd_status_entry;
/* cli_setup.c and cli_doctor.c */
extern const struct cmd_entry cmd_setup_entry, cmd_doctor_entry;
extern const struct cmd_entry cmd_pool_entry;  /* cli_pool.c */
extern const struct cmd_entry cmd_image_entry; /* cli_image.c */
/* cli_rolling.c: the command, and its job's result as it and `resume` print it. */
extern const struct cmd_entry cmd_rolling_entry;
int cli_rolling_result(struct cli *cli, struct job *const *jobs, size_t n, int code);
extern const struct cmd_entry cmd_report_entry; /* cli_report.c */
/* An image build's result, as `image build` and `resume` print it. */
int cli_image_result(struct cli *cli, struct job *const *jobs, size_t n, int code);

/* pvagentd (cli_daemon.c). Run by the daemon: send the engine's events to
 * it ($PVAGENT_EVENT_FD). */
void cli_daemon_child_init(void);
/* ... and at its end this process's PVE request counts (pve_stats). */
void cli_daemon_child_end(void);
/* A submitted job's child (`pvagent submitted`) tells the daemon, before
 * anything else, that it stored the job as id, or (id 0) why it could not
 * (error; the daemon says it to the client). false: not run by the
 * daemon (or out of memory), nothing told. */
bool cli_daemon_stored(long long id, const char *error);
/* A job command's jobs (CMD_JOBS: jobs, as its handler appended them)
 * or resume's job ID (CMD_RESUME: a) with a daemon answering: submitted
 * there, printing what it prints; *handled false (and 0) when they are to
 * run in this process (--local, no daemon). */
int cli_daemon_submit(struct cli *cli, const struct cmd_entry *e, const struct cmd_args *a,
		      const struct cli_jobs *jobs, bool *handled);
/* Watch job id in the daemon: 0 (then cli_daemon_follow), or non-zero
 * when the daemon does not run it (or none answers). */
int cli_daemon_watch(struct cli *cli, long long id, struct ctl_client *c);
/* The daemon's queued commands (the JSON array of its "jobs" answer):
 * 1 with *queued, 0 when no daemon answers. */
int cli_daemon_queued(struct cli *cli, json_object **queued);
void cli_daemon_print_queued(json_object *queued);
/* Cancel job id in the daemon: *handled false when no daemon has it. */
int cli_daemon_cancel(struct cli *cli, long long id, bool *handled);
/* Print its events after since (unix time) until it ends: its exit code. */
int cli_daemon_follow(struct cli *cli, struct ctl_client *c, double since);
/* A request of op to pvagentd: {"id":1,"op":NAME} (NULL: out of memory). */
json_object *cli_daemon_request(enum ctl_op op);
/* The one way a request goes to pvagentd (ctl_client_call's result):
 * refused here, unsent (-1, *err), when its op is unknown or the running
 * command (cli->cmd) is CMD_READONLY and the op is not CTL_READ. */
int cli_daemon_call(struct cli *cli, struct ctl_client *c, json_object *req,
		    json_object **answer, char **err);

/* The command table (cli_table.c): every command in help's order,
 * NULL-ended (pvagentd's hidden `submitted` is not in it); one by name,
 * or NULL; the list of commands, and one command's help. */
const struct cmd_entry *const *cli_commands(void);
const struct cmd_entry *cli_find_command(const char *name);
/* The command whose jobs are of wf, or NULL. */
const struct cmd_entry *cli_command_of(const struct job_workflow *wf);
void cli_usage(FILE *f);
void cli_command_help(FILE *f, const struct cmd_entry *e);

/* Parse argv by e and run it (cli_args.c): a job command's handler
 * appends its jobs, which go to pvagentd when one answers, else run here
 * (cli_run_here); resume's job goes to pvagentd too; any other command's
 * handler does its work. */
int cmd_dispatch(struct cli *cli, const struct cmd_entry *e, int argc, char **argv);

#endif
