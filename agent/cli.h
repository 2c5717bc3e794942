/* cli.h - what the parts of the pvagent command-line tool share
 * (pvagent.c: global options, configuration, inventory, up/down, the
 * command table; cli_guest.c: inject, virtio, bench). Not part of the
 * library: these are linked into pvagent only. */
#ifndef PVAGENT_CLI_H
#define PVAGENT_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include "conf.h"
#include "job.h"
#include "provision.h"
#include "pve.h"

#include <signal.h>

#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130

struct cli {
	const char *conf_path;
	bool json;
	int verbosity;
	struct conf conf;
	bool conf_loaded;
	struct pve *pve;
	struct store *store;   /* state.db, opened on first use */
	bool store_failed;
};

/* Set by SIGINT/SIGTERM: jobs stop between steps (job.h). */
extern volatile sig_atomic_t cli_stop;

/* Exit codes (README): 0 done, 1 failed with nothing left, 2 usage, 3 needs
 * attention, 4 unreachable, 130 interrupted (resumable). */
int cli_exit_code(enum job_outcome o);
/* state.db under [paths] state; NULL (said once) when it cannot be
 * opened: jobs then run without being recorded. */
struct store *cli_store(struct cli *cli);
/* Client options from the loaded configuration. */
struct pve_opts cli_pve_opts(const struct conf *c);

/* up/down output: events as lines or JSON, then the results. */
struct up_print {
	struct cli *cli;
	bool tty;          /* progress lines are redrawn in place */
	bool progress_shown;
};
void on_up_event(void *ctx, const struct job_event *ev);
void end_progress_line(struct up_print *pp);
void print_results(struct cli *cli, const char *cmd, const struct up_result *r, size_t n,
		   int code);

/* "pvagent CMD: WHAT 'ARG'" on stderr; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *what, const char *arg);
/* Report a PVE error and return its exit code. */
int cli_fail_pve(struct cli *cli, const char *cmd, struct pve_error *e);
/* Load the configuration (once); 0 or an exit code (said). */
int cli_load_conf(struct cli *cli);
/* Load the configuration (once) and open the PVE client; 0 or an exit code. */
int cli_connect_pve(struct cli *cli);
/* Parse "--opt" style options of a subcommand; returns the option
 * character, -1 at the end, '?' on a usage error (already reported). */
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);
/* The public half of [ssh] identity, for ${pubkey}; NULL if there is none. */
char *cli_read_pubkey(const struct conf *c);

int cmd_inject(struct cli *cli, int argc, char **argv);
int cmd_virtio(struct cli *cli, int argc, char **argv);
int cmd_bench(struct cli *cli, int argc, char **argv);
int cmd_jobs(struct cli *cli, int argc, char **argv);
int cmd_job(struct cli *cli, int argc, char **argv);
int cmd_resume(struct cli *cli, int argc, char **argv);
int cmd_cancel(struct cli *cli, int argc, char **argv);

#endif
