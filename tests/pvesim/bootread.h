/* bootread.h - the boot model's own reading of what a fixture recorded
 * (ROOT/.pvagent-facts/facts: "$ command" lines, each followed by its
 * output), of the label facts in it ("gpart show -l", "dumpfs DEV",
 * "blkid") and of the guest's fstab, loader.conf and rc.conf, so that the simulator judges guests without the agent's
 * parsers (it links nothing of agent/ but util.c). Strict: a line that
 * does not read is an error naming the file, the line and the field. */
#ifndef PVESIM_BOOTREAD_H
#define PVESIM_BOOTREAD_H

#include <stddef.h>

/* Device it was installed on (no /dev/: "ad0s1a") -> label spec
 * ("/dev/ufsid/4f13ff5d2bf8a1c6", "/dev/gpt/rootfs", "UUID=..."). */
struct br_label {
	char *dev, *spec;
};
struct br_labels {
	struct br_label *v;
	size_t n;
};
void br_labels_free(struct br_labels *l);

struct br_fact {
	char *cmd, *out;
	size_t line; /* of the "$ command" line */
};
struct br_facts {
	struct br_fact *v;
	size_t n;
};
/* Parse the transcript text of file path. 0, or -1 with *err (malloc'd:
 * "PATH:LINE: ..."). */
int br_facts_parse(const char *path, const char *text, struct br_facts *f, char **err);
void br_facts_free(struct br_facts *f);

/* The label facts of one command's output, added to l. path and line name
 * the command in errors. 0, or -1 with *err (malloc'd). */
int br_gpart_labels(const char *path, size_t line, const char *out, struct br_labels *l,
		    char **err);
int br_dumpfs(const char *path, size_t line, const char *dev, const char *out,
	      struct br_labels *l, char **err);
int br_blkid(const char *path, size_t line, const char *out, struct br_labels *l, char **err);

/* loader.conf and rc.conf: blank lines, "# comment" lines and NAME=VALUE
 * or NAME="VALUE" assignments (NAME of letters, digits, '_' and '.', a
 * trailing "# comment" allowed). The value of the last assignment of name
 * into *value (malloc'd, quotes removed): 1; 0 when unset; -1 with *err
 * ("PATH:LINE: field ...") when a line does not read. name NULL: only
 * check every line. */
int br_var_get(const char *path, const char *text, const char *name, char **value,
	       char **err);

/* fstab: blank and comment lines, and entries of at least four fields
 * (spec, file, type, options) with numeric dump and pass fields where
 * given. 0, or -1 with *err ("PATH:LINE: field N (NAME): ..."). */
int br_fstab_check(const char *path, const char *text, char **err);

#endif
