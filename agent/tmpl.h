/* tmpl.h - guest templates (templates/NAME.tmpl): loading and validation,
 * listing, and ${var} expansion into the PVE parameters to send.
 *
 * A template is INI (see ini.h) with these sections:
 *   [template]   kind = qemu|lxc|openvz, os, os_version, description
 *   [source]     clone (template VM id or name) | image (a catalogue image:
 *                clone its built template VM) | iso | ostemplate, full,
 *                storage, bus (ide|sata|scsi|virtio: the bus the source
 *                boots on), nic (e1000|e1000e|rtl8139|vmxnet3|virtio)
 *   [vars]       NAME = DEFAULT; an empty default means --var NAME=VALUE is
 *                required. Defaults are literal (not expanded).
 *   [pve]        PVE config keys, sent in file order after expansion
 *   [guest]      user (default: [ssh] user of pvagent.conf), port
 *                (default: [ssh] port of pvagent.conf, itself 22),
 *                address = agent|static|cloud-init, ip (for static),
 *                pool (qemu: a pvagent.conf [pool "NAME"] gives the
 *                address, in ipconfig0)
 *   [cloud-init] ciuser, sshkeys (repeatable, one public key each),
 *                ipconfig0.., nameserver, searchdomain, citype (qemu only)
 *   [loader.conf], [rc.conf]   (FreeBSD) NAME = VALUE shell variables
 *                ensured in /boot/loader.conf, /etc/rc.conf (written
 *                NAME="VALUE"; surrounding double quotes in the template
 *                are optional)
 *   [sysctl.conf]  NAME = VALUE ensured in /etc/sysctl.conf
 *   [file "/ABS/PATH"]  line = TEXT (repeatable): lines ensured present
 *
 * Duplicate keys are errors except the list keys [cloud-init] sshkeys and
 * [file] line. Duplicate sections are errors.
 *
 * Expansion: ${NAME} in any value of [source] (except storage), [pve],
 * [guest], [cloud-init] and the file sections; $${ is a literal "${"; a '$'
 * not followed by '{' is literal. Names: the built-ins, which the caller
 * supplies (name: guest name, vmid, node, storage: defaults to [source]
 * storage, pubkey: the OpenSSH public key matching pvagent.conf [ssh]
 * identity), and those declared in [vars]. A reference to anything else is
 * a load error; --var for an undeclared name is an expansion error, and so
 * is a referenced variable that ends up without a value.
 *
 * Value safety: no value (as written or after expansion) may hold a control
 * character (newline, NUL, TAB, ...). Values are never pasted into a shell
 * command: guest files are written over SFTP and any value passed as a
 * command argument is single-quoted by the caller, so "$(", backticks and
 * the like are ordinary text in [pve] and [file] values. The exception is
 * [loader.conf]/[rc.conf]: rc.conf is sourced by sh inside double quotes,
 * so there values may not contain '"', '\\', '`' or '$', and names must be
 * shell identifiers.
 *
 * [pve] keys are checked against the compiled-in PVE schema names
 * (pvekeys.h) for the kind: a clone is configured after cloning, so its keys
 * must be config keys; create-only keys need iso/ostemplate. Keys pvagent
 * sets itself (vmid, node, delete, digest, force, ...), the [source] keys
 * (ostemplate, storage) and secrets (password, cipassword) are refused; on
 * qemu the cloud-init keys belong in [cloud-init]. Boolean, integer and
 * number parameters are type-checked.
 *
 * Errors are malloc'd "FILE:LINE: [section] key: what is wrong" messages,
 * several problems one per line. */
#ifndef PVAGENT_TMPL_H
#define PVAGENT_TMPL_H

#include <stddef.h>

enum tmpl_kind { TMPL_QEMU, TMPL_LXC, TMPL_OPENVZ }; /* = enum pvekey_kind */

enum tmpl_bus {
	TMPL_BUS_UNSET,
	TMPL_BUS_IDE,
	TMPL_BUS_SATA,
	TMPL_BUS_SCSI,
	TMPL_BUS_VIRTIO,
};

enum tmpl_addr {
	TMPL_ADDR_AGENT,     /* ask PVE: QEMU guest agent, container interfaces */
	TMPL_ADDR_STATIC,    /* [guest] ip */
	TMPL_ADDR_CLOUDINIT, /* the ip= of [cloud-init] ipconfig0 */
};

enum tmpl_file_style {
	TMPL_FILE_SHVAR, /* NAME="VALUE" lines (loader.conf, rc.conf) */
	TMPL_FILE_KV,    /* NAME=VALUE lines (sysctl.conf) */
	TMPL_FILE_LINES, /* whole lines (key "line", value the line) */
};

/* One key/value with the line it came from (0 when not from a file). */
struct tmpl_kv {
	char *key;
	char *value;
	int line;
};

/* Ordered key/value list. */
struct tmpl_kvlist {
	struct tmpl_kv *items;
	size_t n;
	size_t cap;
};

int tmpl_kvlist_add(struct tmpl_kvlist *l, const char *key, const char *value,
		    int line);
/* Value of the last item with this key, or NULL. */
const char *tmpl_kvlist_get(const struct tmpl_kvlist *l, const char *key);
/* Add or replace (in place) key's value. */
int tmpl_kvlist_set(struct tmpl_kvlist *l, const char *key, const char *value);
void tmpl_kvlist_free(struct tmpl_kvlist *l);
/* "K=V" (a --var or --set argument) -> set K. -1 with *err on a malformed
 * one, or a K given before with another value. */
int tmpl_var_arg(struct tmpl_kvlist *vars, const char *arg, char **err);

struct tmpl_source {
	struct tmpl_kv clone;      /* value NULL when absent (all of these) */
	struct tmpl_kv iso;
	struct tmpl_kv ostemplate;
	struct tmpl_kv storage;
	int full;                  /* full clone (default 1) */
	enum tmpl_bus bus;         /* bus the source boots on */
	char *nic;                 /* NIC model of the source, or NULL */
	char *image;               /* [source] image = NAME (catalogue, image.h):
				      clone is then NAME-image, the VM
				      `pvagent image build NAME` makes */
};

struct tmpl_guest {
	char *user;                /* NULL: use [ssh] user from pvagent.conf */
	unsigned port;             /* 0 (unset): [ssh] port of pvagent.conf */
	enum tmpl_addr address;
	struct tmpl_kv ip;         /* static address (value NULL if none) */
	char *pool;                /* [pool "NAME"] of pvagent.conf whose
				      address the guest gets (ipconfig0), or
				      NULL; the template only, not expanded */
};

struct tmpl_cloudinit {
	int present;               /* the template has [cloud-init] */
	struct tmpl_kvlist params; /* ciuser, citype, ipconfigN, nameserver,
				      searchdomain, in file order */
	struct tmpl_kvlist sshkeys;/* one public key per item */
};

struct tmpl_file {
	char *section;             /* "[rc.conf]", "[file \"/etc/x\"]" */
	char *path;                /* path in the guest */
	enum tmpl_file_style style;
	struct tmpl_kvlist entries;
	int line;                  /* of the section header */
};

struct tmpl {
	char *name;                /* "freebsd-14" */
	char *path;                /* the file */
	enum tmpl_kind kind;
	char *os;                  /* "freebsd", "ubuntu", "debian", ... */
	char *os_version;          /* "14.1", "24.04" */
	char *description;         /* or NULL */
	struct tmpl_source source;
	struct tmpl_kvlist vars;   /* [vars]: declared names and defaults */
	struct tmpl_kvlist pve;    /* [pve] as written */
	struct tmpl_guest guest;
	struct tmpl_cloudinit ci;
	struct tmpl_file *files;
	size_t n_files;
};

/* A template after expansion: every value final and checked. */
struct tmpl_inst {
	/* PVE parameters in order: [pve] in file order, then (qemu) the
	 * [cloud-init] values in file order, then sshkeys: all keys joined
	 * with newlines and percent-encoded as PVE's "urlencoded" format
	 * requires (still to be form-encoded like any other value). */
	struct tmpl_kvlist pve;
	struct tmpl_source source; /* clone/iso/ostemplate expanded */
	struct tmpl_guest guest;   /* ip: expanded; for address=cloud-init the
				      address taken from ipconfig0 */
	struct tmpl_file *files;   /* values expanded */
	size_t n_files;
};

/* Load and validate one file. */
int tmpl_load_file(const char *path, struct tmpl **out, char **err);
/* Load NAME from the first directory of dirs (NULL-terminated) holding
 * NAME.tmpl. A name containing '/' is taken as a file path. */
int tmpl_load(const char *const *dirs, const char *name, struct tmpl **out,
	      char **err);
/* Is name a template name (letters, digits, '.', '_', '-'; not starting
 * with '.'), as opposed to a path? 1 or 0. */
int tmpl_name_valid(const char *name);
void tmpl_free(struct tmpl *t);

/* Every NAME.tmpl in dirs (an earlier directory hides a later one's file of
 * the same name), sorted by name. Templates that fail to load are listed
 * with tmpl NULL and error set. Missing directories are skipped. */
struct tmpl_info {
	char *name;
	char *path;
	struct tmpl *tmpl;
	char *error;
};
int tmpl_list(const char *const *dirs, struct tmpl_info **out, size_t *n,
	      char **err);
void tmpl_list_free(struct tmpl_info *list, size_t n);

/* Set ${storage} in vars for expanding t: given (--storage) when not NULL,
 * else --var storage (already in vars) or t's [source] storage, else
 * fallback (the configured disk storage, conf_disk_storage: the node's
 * local-lvm, local-zfs...). Every command that expands a template takes
 * it from here (up, its check, and the guest commands' target). 0, or -1
 * when memory ran out. */
int tmpl_vars_storage(const struct tmpl *t, struct tmpl_kvlist *vars, const char *given,
		      const char *fallback);

/* Expand with vars (built-ins name, vmid, node, [storage], [pubkey], and
 * --var values) and check every result. */
int tmpl_expand(const struct tmpl *t, const struct tmpl_kvlist *vars,
		struct tmpl_inst *out, char **err);
void tmpl_inst_free(struct tmpl_inst *inst);

/* Templates load with the keys any PVE version has (pvekeys.h); once the
 * cluster's version (major.minor) is known, check that an OpenVZ template
 * meets PVE 2.x/3.x (OpenVZ left PVE with 4.0: "template debian-7-openvz
 * makes OpenVZ containers, which need PVE 2.x/3.x (this cluster runs PVE
 * 9.1)"), and that each [pve] key and each --set key in sets (may be
 * NULL) is that version's: -1 with *err (malloc'd) naming the first one
 * that only another version has ("[pve] 'allow-ksm' is a PVE 9 parameter;
 * this cluster runs PVE 8"), -1 with *err NULL when memory ran out, else
 * 0. */
int tmpl_check_version(const struct tmpl *t, const struct tmpl_kvlist *sets, int major,
		       int minor, char **err);

const char *tmpl_kind_name(enum tmpl_kind k);   /* "qemu", "lxc", "openvz" */

#endif
