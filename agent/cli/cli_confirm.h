/* cli_confirm.h - the question down and image rm ask before deleting
 * (cli_confirm.c). */
#ifndef PVAGENT_CLI_CONFIRM_H
#define PVAGENT_CLI_CONFIRM_H

#include <json-c/json.h>
#include <stdbool.h>

struct cli;

/* Are stdin and stderr a terminal (someone to ask)? */
bool cli_can_ask(void);
/* Without a terminal: refuse (said: "WHAT: deleted only when confirmed;
 * ... give --yes"; EXIT_USAGE); with one 0. */
int cli_confirm_needed(const char *cmd, const char *what);
/* Ask question on stderr, "[y/N]", and read the answer on stdin: 0 for
 * y or yes, else EXIT_USAGE (said: nothing deleted). */
int cli_confirm(const char *cmd, const char *question);
/* The volumes of a guest config ("local-lvm:vm-101-disk-0 (32G), ..."),
 * CD-ROM drives left out; "no disks" when it has none. malloc'd. */
char *cli_guest_volumes(json_object *config);
/* What deleting guest arg (name or VMID) removes, as one line
 * ("web1 (VM 101 on pve1): local-lvm:vm-101-disk-0 (32G)") in *out
 * (malloc'd; also for an absent guest or a failed look-up). Returns 1
 * found, 0 absent, -1 not looked up. cli->pve must be connected. */
int cli_guest_deletion(struct cli *cli, const char *arg, char **out);

#endif
