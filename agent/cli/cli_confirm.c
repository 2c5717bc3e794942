/* cli_confirm.c - the question a deleting command (down, image rm) asks
 * before it deletes anything: on a terminal (stdin and stderr) what will
 * go, then "[y/N]"; --yes answers it for scripts; without a terminal and
 * without --yes the command is refused before any request that changes
 * anything. Through pvagentd the client asks before it submits (the
 * daemon never prompts). */
#include "cli_confirm.h"

#include "cli.h"

#include "guest.h"
#include "pvecfg.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

bool cli_can_ask(void)
{
	return isatty(STDIN_FILENO) && isatty(STDERR_FILENO);
}

int cli_confirm_needed(const char *cmd, const char *what)
{
	if (cli_can_ask())
		return 0;
	return cli_error("usage", cmd, "%s: deleted only when confirmed; without a terminal to "
			 "ask on, give --yes (or -y); nothing deleted", what);
}

int cli_confirm(const char *cmd, const char *question)
{
	fprintf(stderr, "%s [y/N] ", question);
	fflush(stderr);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, stdin);
	bool yes = false;
	if (n > 0) {
		char *s = line;
		while (isspace((unsigned char)*s))
			s++;
		s[strcspn(s, " \t\r\n")] = '\0';
		yes = strcasecmp(s, "y") == 0 || strcasecmp(s, "yes") == 0;
	} else {
		fputc('\n', stderr);
	}
	free(line);
	if (yes)
		return 0;
	return cli_error("usage", cmd, "not confirmed; nothing deleted");
}

/* Is key one of a guest config's volumes (qemu disks, EFI and TPM state,
 * unused volumes; a container's root and mount points)? */
static bool volume_key(const char *key)
{
	static const char *const prefixes[] = {"ide", "sata", "scsi", "virtio", "efidisk",
					       "tpmstate", "unused", "mp"};
	if (strcmp(key, "rootfs") == 0)
		return true;
	for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
		size_t n = strlen(prefixes[i]);
		if (strncmp(key, prefixes[i], n) == 0 && key[n] && strspn(key + n, "0123456789") ==
								      strlen(key + n))
			return true;
	}
	return false;
}

char *cli_guest_volumes(json_object *config)
{
	struct sbuf b = {0};
	json_object_object_foreach(config, key, val)
	{
		const char *s = json_object_get_string(val);
		struct propstr p = {0};
		if (!volume_key(key) || !s || propstr_parse(s, &p) < 0) {
			propstr_free(&p);
			continue;
		}
		const char *vol = propstr_get(&p, NULL), *media = propstr_get(&p, "media");
		const char *size = propstr_get(&p, "size");
		/* a CD-ROM drive's image is not the guest's: PVE keeps it */
		if (vol && strcmp(vol, "none") != 0 && !(media && strcmp(media, "cdrom") == 0))
			sbuf_addf(&b, "%s%s%s%s%s", b.len ? ", " : "", vol, size ? " (" : "",
				  size ? size : "", size ? ")" : "");
		propstr_free(&p);
	}
	return b.len ? sbuf_steal(&b) : (sbuf_free(&b), strdup("no disks"));
}

int cli_guest_deletion(struct cli *cli, const char *arg, char **out)
{
	struct guest_ref g = {0};
	struct pve_error e = {0};
	json_object *config = NULL;
	char *line = NULL;
	int found = guest_find(cli->pve, arg, &g, &e);
	if (found < 0) {
		char *m = pve_error_format(&e);
		line = strprintf("%s: cannot be looked up: %s", arg, m ? m : "error");
		free(m);
	} else if (found == 0) {
		line = strprintf("%s: no such guest (nothing to delete)", arg);
	} else if (guest_get_config(cli->pve, &g, &config, &e) < 0) {
		char *m = pve_error_format(&e);
		line = strprintf("%s (VMID %d on %s): its disks cannot be read: %s",
				 g.name ? g.name : arg, g.vmid, g.node ? g.node : "?", m ? m : "error");
		free(m);
	} else {
		char *vols = cli_guest_volumes(config);
		line = strprintf("%s (%s %d on %s): %s", g.name ? g.name : arg,
				 g.type == GUEST_QEMU ? "VM" : "container", g.vmid,
				 g.node ? g.node : "?", vols ? vols : "?");
		free(vols);
	}
	json_object_put(config);
	pve_error_clear(&e);
	guest_ref_clear(&g);
	*out = line;
	return found;
}
