/* cli.h - what the parts of the pvagent command-line tool share
 * (pvagent.c: global options, configuration, inventory, up/down, the
 * command table; cli_guest.c: inject, virtio, bench). Not part of the
 * library: these are linked into pvagent only. */
#ifndef PVAGENT_CLI_H
#define PVAGENT_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include "conf.h"
#include "pve.h"

#define EXIT_USAGE 2

struct cli {
	const char *conf_path;
	bool json;
	int verbosity;
	struct conf conf;
	bool conf_loaded;
	struct pve *pve;
};

/* "pvagent CMD: WHAT 'ARG'" on stderr; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *what, const char *arg);
/* Report a PVE error and return its exit code. */
int cli_fail_pve(struct cli *cli, const char *cmd, struct pve_error *e);
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

#endif
