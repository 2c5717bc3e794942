/* cli_help.c - what each command's options do, in one line each, for
 * `pvagent help COMMAND`, `COMMAND -h` and `COMMAND --help`. The options
 * themselves are the command table's (cmd_entry.longopts): this table only
 * describes them, and test_cli_help checks that every option of every
 * command has a line here and appears in pvagent(1). */
#include "cli.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct opt_doc {
	const char *cmd;  /* a command's name */
	const char *opt;  /* its long option */
	const char *arg;  /* what the argument is, or NULL */
	const char *text; /* what it does, with its default */
};

/* The options inject, virtio, bench and ssh share (cli_guest.c). */
#define GUEST_OPTS(c)                                                                           \
	{c, "template", "NAME",                                                                 \
	 "the guest's template (default: the one its description names)"},                      \
		{c, "var", "K=V", "set the template variable K (repeatable)"},                  \
		{c, "address", "A", "the guest's address (default: as the template says)"}

static const struct opt_doc docs[] = {
	{"list", "node", "N", "only the guests of node N"},
	{"list", "long", NULL, "also each guest's disk bus and NICs (its config, 8 read at once)"},
	{"templates", "long", NULL,
	 "also each template's source (cut to the terminal's width as the rest; --json: whole)"},
	{"up", "template", "NAME", "the template to provision from (required)"},
	{"up", "node", "N", "the node to create the guests on (default: [pve] node)"},
	{"up", "vmid", "ID", "the VMID to claim (default: the next free one)"},
	{"up", "storage", "S", "the storage for the guest's disks (default: the template's)"},
	{"up", "set", "KEY=VAL", "override a [pve] key of the template, e.g. cores=4 (repeatable)"},
	{"up", "var", "K=V", "set the template variable K (repeatable)"},
	{"up", "parallel", "K", "work on at most K guests at once (default 4)"},
	{"up", "no-start", NULL, "create and configure, but leave the guest stopped"},
	{"up", "full", NULL, "a full clone instead of a linked one"},
	{"up", "no-inject", NULL, "skip the guest-side setup over SSH"},
	{"up", "no-wait-ssh", NULL, "try SSH once: a guest not answering yet is done without "
	 "its files (default: wait 300 s)"},
	{"up", "retemplate", NULL, "reconfigure a guest made from another template"},
	{"up", "dry-run", NULL, "print the plan, key by key; change nothing"},
	{"up", "pool", "NAME", "a static address from [pool NAME]: its lowest free one"},
	{"down", "purge", NULL, "also remove the guest from backup jobs, replication and HA"},
	{"down", "dry-run", NULL, "print what would be deleted; change nothing"},
	{"down", "yes", NULL, "delete without asking (needed without a terminal)"},
	{"inject", "dry-run", NULL, "show each file's diff; write nothing"},
	GUEST_OPTS("inject"),
	{"virtio", "bench", NULL, "measure the disk before and after, side by side"},
	{"virtio", "dry-run", NULL, "print the whole plan (file diffs, config change); change nothing"},
	{"virtio", "disk-bus", "BUS", "virtio-blk or virtio-scsi (default: chosen for the OS)"},
	{"virtio", "keep-snapshot", NULL, "keep the pvagent_virtio snapshot as a way back"},
	{"virtio", "size", "MiB", "the --bench test file's size (default 256)"},
	{"virtio", "timeout", "S", "seconds the converted guest has to prove itself (default 300)"},
	GUEST_OPTS("virtio"),
	{"bench", "size", "MiB", "the test file's size (default 256)"},
	GUEST_OPTS("bench"),
	GUEST_OPTS("ssh"),
	{"migrate", "storage", "S", "move every local disk to storage S on the target"},
	{"migrate", "storage-map", "SRC:DST,...", "move local disks storage by storage"},
	{"migrate", "bwlimit", "MiB/s", "limit the migration's bandwidth"},
	{"migrate", "max-downtime", "MS", "the VM's migrate_downtime for this migration"},
	{"migrate", "dry-run", NULL, "check and print the plan; send nothing"},
	{"migrate", "force-ha", NULL, "an HA-managed guest: let HA migrate it without the storage "
	 "map and bandwidth limit given (HA takes neither)"},
	{"rolling", "wait", NULL, "each node's update is the admin's: wait until it has rebooted "
	 "(and runs --version)"},
	{"rolling", "run", NULL, "update each node over SSH: apt-get update, dist-upgrade, a reboot "
	 "when the kernel or QEMU changed"},
	{"rolling", "run-script", "FILE", "the major upgrade: run FILE on each node (after its "
	 "pveXtoY --full passes) instead of dist-upgrade"},
	{"rolling", "version", "V", "the version each node runs after its update (9, 9.1, 9.1.2)"},
	{"rolling", "window", "W", "start each node only while window W is open; its drain ends "
	 "with it"},
	{"rolling", "max-workers", "K", "migrations at once (default [migrate] max_workers)"},
	{"rolling", "node-ssh", "NODE=HOST[:PORT]", "reach NODE's SSH there (default: its address "
	 "in /cluster/status, port 22; repeatable)"},
	{"drain", "to", "N1,N2,...", "move guests only to these nodes (default: every other one)"},
	{"drain", "max-workers", "K", "migrations at once (default [migrate] max_workers)"},
	{"drain", "partial", NULL, "move what fits even when some guest fits nowhere"},
	{"drain", "dry-run", NULL, "print the plan: target, method, estimate per guest"},
	{"drain", "window", "W", "run maintenance window W's drain (its targets and limits)"},
	{"undrain", "max-workers", "K", "migrations at once (default [migrate] max_workers)"},
	{"undrain", "dry-run", NULL, "print which guests would come home"},
	{"undrain", "window", "W", "bring home what window W drained, with its limits"},
	{"setup", "user", "U", "the administrator to log in as once (default root@pam)"},
	{"setup", "password-file", "F", "read the password from F, mode 0600 (default: ask)"},
	{"setup", "fingerprint", "FP", "the certificate's SHA-256 fingerprint to pin (default: ask)"},
	{"setup", "minimal", NULL, "grant the guest commands' privileges only, not those of "
				   "migrate, drain and image build"},
	{"setup", "migrate", NULL, "with --minimal: also grant what migrate and drain need"},
	{"setup", "force", NULL, "replace a token whose secret is lost"},
	{"setup", "no-storage-change", NULL, "print the pvesm line that adds import to local's "
					     "content instead of adding it"},
	{"setup", "dry-run", NULL, "print the pveum lines for this PVE version; change nothing"},
	{"setup", "pve-version", "N", "with --dry-run: the lines for PVE N (8, 9), without a login"},
	{"doctor", "migrate", NULL, "also check what migrate and drain need"},
	{"jobs", "limit", "N", "show the N most recent jobs (default 20)"},
	{"jobs", "before", "ID", "the page of jobs older than job ID (--json: next_before)"},
	{"jobs", "prune", NULL, "delete finished jobs past [daemon] keep_jobs, keep_jobs_max"},
	{"jobs", "older-than", "AGE", "with --prune: ended more than AGE ago (default keep_jobs)"},
	{"image", "node", "N", "the node that downloads and builds (default [pve] node)"},
	{"image", "storage", "S", "the template's disk storage (default [pve] storage, "
				    "else local-lvm)"},
	{"image", "import-storage", "S", "where the node downloads the image (default [pve] "
					   "import_storage, else local)"},
	{"image", "url", "URL", "download from URL instead (a mirror; needs --checksum)"},
	{"image", "checksum", "ALGO:HEX", "the image's checksum (default: its published file)"},
	{"image", "vmid", "ID", "the template VM's VMID (default: the next free one)"},
	{"image", "rebuild", NULL, "replace the template, once the new one is complete"},
	{"image", "yes", NULL, "rm: delete without asking (needed without a terminal)"},
	{"job", "follow", NULL, "follow a running job's events until it ends"},
	{"report", "html", "FILE", "write the report as a self-contained HTML page to FILE "
				   "(\"-\": stdout)"},
	{"cancel", "stop-task", NULL,
	 "stop the PVE task its step started (the tasks API); say what that left"},
};

static const struct opt_doc *find_doc(const char *cmd, const char *opt)
{
	for (size_t i = 0; i < sizeof docs / sizeof *docs; i++)
		if (strcmp(docs[i].cmd, cmd) == 0 && strcmp(docs[i].opt, opt) == 0)
			return &docs[i];
	return NULL;
}

void cli_print_options(FILE *f, const struct cmd_entry *e)
{
	if (!e->longopts || !e->longopts[0].name)
		return;
	fprintf(f, "\noptions:\n");
	for (const struct option *o = e->longopts; o->name; o++) {
		const struct opt_doc *d = find_doc(e->name, o->name);
		int c = o->val > ' ' && o->val < 127 && e->shortopts && strchr(e->shortopts, o->val)
				? o->val : 0;
		char *head = c ? strprintf("-%c, --%s%s%s", c, o->name, d && d->arg ? " " : "",
					   d && d->arg ? d->arg : "")
			       : strprintf("    --%s%s%s", o->name, d && d->arg ? " " : "",
					   d && d->arg ? d->arg : "");
		/* a head longer than its column goes on a line of its own */
		if (head && strlen(head) > 24)
			fprintf(f, "  %s\n  %-24s  %s\n", head, "", d ? d->text : "");
		else
			fprintf(f, "  %-24s  %s\n", head ? head : o->name, d ? d->text : "");
		free(head);
	}
	fprintf(f, "  %-24s  %s\n", "-h, --help", "this text");
}
