/* test_tmpl.c - templates: the shipped ones load and expand to the expected
 * PVE parameters; each kind of template error gives its exact FILE:LINE
 * message; ${var} rules; the compiled-in PVE key table matches the schema
 * when ../shared/pve-api is present. Run from the repository root. */
#include <criterion/criterion.h>
#include <regex.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "pvecheck.h"
#include "pvekeys.h"
#include "tmpl.h"
#include "util.h"

#define DATA "tests/unit/data/"

static const char *const shipped[] = {"templates", NULL};

static struct tmpl *load_ok(const char *path)
{
	struct tmpl *t = NULL;
	char *err = NULL;
	int rc = tmpl_load_file(path, &t, &err);
	cr_assert_eq(rc, 0, "%s: %s", path, err ? err : "(no message)");
	cr_assert_null(err);
	return t;
}

/* Load a template that must fail; compare the whole message. */
static void load_fails(const char *path, const char *want)
{
	struct tmpl *t = NULL;
	char *err = NULL;
	cr_assert_eq(tmpl_load_file(path, &t, &err), -1, "%s loaded", path);
	cr_assert_null(t);
	cr_assert_not_null(err);
	cr_expect_str_eq(err, want);
	free(err);
}

static const char *get(const struct tmpl_kvlist *l, const char *k)
{
	return tmpl_kvlist_get(l, k);
}

/* The built-ins up supplies: name, vmid, node, pubkey, and storage where
 * the template names none (the configured disk storage; local-lvm without
 * a configuration: the shipped templates name none). */
static void std_vars(struct tmpl_kvlist *v, const struct tmpl *t, const char *name,
		     const char *vmid)
{
	cr_assert_eq(tmpl_kvlist_set(v, "name", name), 0);
	cr_assert_eq(tmpl_kvlist_set(v, "vmid", vmid), 0);
	cr_assert_eq(tmpl_kvlist_set(v, "node", "pve1"), 0);
	cr_assert_eq(tmpl_kvlist_set(v, "pubkey", "ssh-ed25519 AAAAC3Nza pvagent@host"), 0);
	cr_assert_eq(tmpl_vars_storage(t, v, NULL, conf_disk_storage(NULL)), 0);
}

/* ---- shipped templates ---------------------------------------------------- */

Test(shipped, all_load_and_list_sorted)
{
	struct tmpl_info *list = NULL;
	size_t n = 0;
	char *err = NULL;
	cr_assert_eq(tmpl_list(shipped, &list, &n, &err), 0, "%s", err);
	static const char *const want[] = {"debian-12",       "debian-13",    "debian-7-openvz",
					   "freebsd-14",      "freebsd-15",   "freebsd-9.0",
					   "ubuntu-24.04",    "ubuntu-24.04-ct", "ubuntu-26.04",
					   "ubuntu-9.04"};
	cr_assert_eq(n, 10);
	for (size_t i = 0; i < n; i++) {
		cr_expect_str_eq(list[i].name, want[i]);
		cr_expect_null(list[i].error, "%s: %s", list[i].name, list[i].error);
		cr_expect_not_null(list[i].tmpl);
	}
	tmpl_list_free(list, n);
}

/* [source] image: the template VM `pvagent image build` makes */
Test(shipped, image_templates_clone_the_built_image)
{
	struct tmpl *t = load_ok("templates/debian-13.tmpl");
	cr_expect_str_eq(t->source.image, "debian-13");
	cr_expect_str_eq(t->source.clone.value, "debian-13-image");
	cr_expect_str_eq(t->guest.pool, "lan");
	tmpl_free(t);
}

Test(shipped, freebsd_90_source_on_ide)
{
	struct tmpl *t = load_ok("templates/freebsd-9.0.tmpl");
	cr_expect_str_eq(t->name, "freebsd-9.0");
	cr_expect_eq(t->kind, TMPL_QEMU);
	cr_expect_str_eq(t->os, "freebsd");
	cr_expect_str_eq(t->os_version, "9.0");
	cr_expect_str_eq(t->source.clone.value, "freebsd-9.0-base");
	cr_expect_eq(t->source.bus, TMPL_BUS_IDE);
	cr_expect_str_eq(t->source.nic, "e1000");
	cr_expect_eq(t->source.full, 1);
	cr_expect_eq(t->guest.address, TMPL_ADDR_STATIC);
	cr_expect_str_eq(t->guest.user, "root");
	cr_expect_eq(t->guest.port, 0, "no port in the template: pvagent.conf [ssh] port applies");
	cr_expect_eq(t->ci.present, 0);

	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	char *err = NULL;
	std_vars(&v, t, "bsd9", "120");
	/* ip has no default */
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), -1);
	cr_expect_str_eq(err, "templates/freebsd-9.0.tmpl:36: [guest] ip: ${ip} has no value: pass --var ip=VALUE");
	free(err);
	cr_assert_eq(tmpl_var_arg(&v, "ip=127.0.1.9", &err), 0);
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), 0, "%s", err);
	cr_expect_str_eq(in.guest.ip.value, "127.0.1.9");
	cr_expect_str_eq(get(&in.pve, "agent"), "0");
	cr_expect_str_eq(get(&in.pve, "description"),
			 "bsd9: FreeBSD 9.0 (pvagent template freebsd-9.0)");
	cr_assert_eq(in.n_files, 1);
	cr_expect_str_eq(in.files[0].path, "/etc/rc.conf");
	cr_expect_eq(in.files[0].style, TMPL_FILE_SHVAR);
	cr_expect_str_eq(get(&in.files[0].entries, "hostname"), "bsd9");
	cr_expect_str_eq(get(&in.files[0].entries, "sshd_enable"), "YES");
	tmpl_inst_free(&in);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

Test(shipped, freebsd_14_expands_in_order_with_cloud_init)
{
	struct tmpl *t = load_ok("templates/freebsd-14.tmpl");
	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	char *err = NULL;
	std_vars(&v, t, "bsd14", "121");
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), 0, "%s", err);
	static const char *const keys[] = {"description", "memory", "cores", "cpu", "ostype",
					   "agent", "net0", "ide2", "boot", "onboot",
					   "ciuser", "ipconfig0", "sshkeys"};
	cr_assert_eq(in.pve.n, sizeof keys / sizeof keys[0]);
	for (size_t i = 0; i < in.pve.n; i++)
		cr_expect_str_eq(in.pve.items[i].key, keys[i]);
	cr_expect_str_eq(get(&in.pve, "net0"), "virtio,bridge=vmbr0");
	cr_expect_str_eq(get(&in.pve, "ide2"), "local-lvm:cloudinit");
	cr_expect_str_eq(get(&in.pve, "sshkeys"), "ssh-ed25519%20AAAAC3Nza%20pvagent%40host");
	cr_expect_str_eq(get(&in.pve, "ipconfig0"), "ip=dhcp");
	cr_expect_eq(in.source.bus, TMPL_BUS_VIRTIO);
	cr_expect_str_eq(in.source.clone.value, "freebsd-14-base");
	cr_expect_str_eq(in.source.storage.value, "local-lvm");
	cr_expect_eq(in.guest.address, TMPL_ADDR_AGENT);
	cr_assert_eq(in.n_files, 2);
	cr_expect_str_eq(in.files[0].path, "/boot/loader.conf");
	cr_expect_str_eq(get(&in.files[0].entries, "virtio_console_load"), "YES");
	cr_expect_str_eq(in.files[1].path, "/etc/rc.conf");
	cr_expect_str_eq(get(&in.files[1].entries, "qemu_guest_agent_flags"),
			 "-d -v -l /var/log/qemu-ga.log");
	tmpl_inst_free(&in);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

Test(shipped, ubuntu_2404_scsi_single_iothread)
{
	struct tmpl *t = load_ok("templates/ubuntu-24.04.tmpl");
	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	char *err = NULL;
	std_vars(&v, t, "noble1", "130");
	cr_assert_eq(tmpl_var_arg(&v, "bridge=vmbr1", &err), 0);
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), 0, "%s", err);
	cr_expect_str_eq(get(&in.pve, "scsihw"), "virtio-scsi-single");
	cr_expect_str_eq(get(&in.pve, "scsi0"), "local-lvm:vm-130-disk-0,iothread=1,discard=on");
	cr_expect_str_eq(get(&in.pve, "net0"), "virtio,bridge=vmbr1");
	cr_expect_str_eq(get(&in.pve, "ciuser"), "root");
	cr_expect_str_eq(get(&in.pve, "ipconfig0"), "ip=dhcp");
	cr_expect_str_eq(get(&in.pve, "agent"), "1");
	cr_expect_eq(in.source.bus, TMPL_BUS_SCSI);
	cr_expect_str_eq(in.source.clone.value, "ubuntu-24.04-base");
	tmpl_inst_free(&in);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

/* No [ssh] identity, so no ${pubkey}: the message says what to set. */
Test(shipped, ubuntu_2404_without_a_pubkey_says_to_set_the_identity)
{
	struct tmpl *t = load_ok("templates/ubuntu-24.04.tmpl");
	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	char *err = NULL;
	cr_assert_eq(tmpl_kvlist_set(&v, "name", "noble2"), 0);
	cr_assert_eq(tmpl_kvlist_set(&v, "vmid", "131"), 0);
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), -1);
	cr_expect(err && strstr(err, "${pubkey} has no value: set [ssh] identity in pvagent.conf"),
		  "%s", err ? err : "(none)");
	cr_expect(err && !strstr(err, "--var pubkey"), "%s", err ? err : "(none)");
	free(err);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

Test(shipped, ubuntu_904_on_ide)
{
	struct tmpl *t = load_ok("templates/ubuntu-9.04.tmpl");
	cr_expect_str_eq(t->source.clone.value, "ubuntu-9.04-base");
	cr_expect_eq(t->source.bus, TMPL_BUS_IDE);
	cr_expect_str_eq(get(&t->pve, "ostype"), "l26");
	cr_assert_eq(t->n_files, 1);
	cr_expect_str_eq(t->files[0].path, "/etc/sysctl.conf");
	cr_expect_eq(t->files[0].style, TMPL_FILE_KV);
	tmpl_free(t);
}

Test(shipped, ubuntu_2404_ct_storage_override)
{
	struct tmpl *t = load_ok("templates/ubuntu-24.04-ct.tmpl");
	cr_expect_eq(t->kind, TMPL_LXC);
	cr_expect_str_eq(t->source.ostemplate.value,
			 "local:vztmpl/ubuntu-24.04-standard_24.04-2_amd64.tar.zst");
	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	char *err = NULL;
	std_vars(&v, t, "ct1", "140");
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), 0, "%s", err);
	cr_expect_str_eq(get(&in.pve, "rootfs"), "local-lvm:8");
	cr_expect_str_eq(get(&in.pve, "hostname"), "ct1");
	cr_expect_str_eq(get(&in.pve, "net0"), "name=eth0,bridge=vmbr0,ip=dhcp");
	cr_expect_str_eq(get(&in.pve, "unprivileged"), "1");
	cr_expect_str_eq(get(&in.pve, "ssh-public-keys"), "ssh-ed25519 AAAAC3Nza pvagent@host");
	tmpl_inst_free(&in);
	/* --var storage and a declared var override the defaults (up gives
	 * the configured storage only where --var names none) */
	tmpl_kvlist_free(&v);
	cr_assert_eq(tmpl_var_arg(&v, "storage=fast-zfs", &err), 0);
	std_vars(&v, t, "ct1", "140");
	cr_assert_eq(tmpl_var_arg(&v, "disk=16", &err), 0);
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), 0, "%s", err);
	cr_expect_str_eq(get(&in.pve, "rootfs"), "fast-zfs:16");
	cr_expect_str_eq(in.source.storage.value, "fast-zfs");
	tmpl_inst_free(&in);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

/* ${storage}, as every command that expands a template takes it: --storage,
 * else --var storage, else the template's [source] storage, else the
 * configured disk storage. */
Test(shipped, storage_variable_precedence)
{
	struct tmpl *t = load_ok("templates/ubuntu-24.04-ct.tmpl"); /* names none */
	struct tmpl *openvz = load_ok("templates/debian-7-openvz.tmpl"); /* local */
	struct tmpl_kvlist v = {0};
	cr_assert_eq(tmpl_vars_storage(t, &v, NULL, "local-zfs"), 0);
	cr_expect_str_eq(get(&v, "storage"), "local-zfs");
	cr_assert_eq(tmpl_kvlist_set(&v, "storage", "fast-zfs"), 0); /* --var */
	cr_assert_eq(tmpl_vars_storage(t, &v, NULL, "local-zfs"), 0);
	cr_expect_str_eq(get(&v, "storage"), "fast-zfs");
	cr_assert_eq(tmpl_vars_storage(t, &v, "ceph", "local-zfs"), 0); /* --storage */
	cr_expect_str_eq(get(&v, "storage"), "ceph");
	tmpl_kvlist_free(&v);
	cr_assert_eq(tmpl_vars_storage(openvz, &v, NULL, "local-zfs"), 0);
	cr_expect_null(get(&v, "storage"), "the template's own storage is its default");
	tmpl_kvlist_free(&v);
	tmpl_free(t);
	tmpl_free(openvz);
}

Test(shipped, debian_7_openvz)
{
	struct tmpl *t = load_ok("templates/debian-7-openvz.tmpl");
	cr_expect_eq(t->kind, TMPL_OPENVZ);
	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	char *err = NULL;
	std_vars(&v, t, "wheezy", "150");
	cr_assert_eq(tmpl_var_arg(&v, "ip=127.0.1.20", &err), 0);
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), 0, "%s", err);
	cr_expect_str_eq(get(&in.pve, "netif"), "ifname=eth0,bridge=vmbr0");
	cr_expect_str_eq(get(&in.pve, "disk"), "8");
	cr_expect_str_eq(get(&in.pve, "memory"), "512");
	cr_expect_str_eq(get(&in.pve, "swap"), "512");
	cr_expect_str_eq(in.source.ostemplate.value,
			 "local:vztmpl/debian-7.0-standard_7.0-2_amd64.tar.gz");
	cr_expect_str_eq(in.source.storage.value, "local");
	cr_expect_str_eq(in.guest.ip.value, "127.0.1.20");
	/* OpenVZ is PVE 2.x/3.x only: refused by the version, named with it */
	cr_expect_eq(tmpl_check_version(t, NULL, 3, 4, &err), 0);
	cr_assert_eq(tmpl_check_version(t, NULL, 9, 1, &err), -1);
	cr_expect_str_eq(err, "template debian-7-openvz makes OpenVZ containers, which need "
			      "PVE 2.x/3.x (this cluster runs PVE 9.1)");
	free(err);
	tmpl_inst_free(&in);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

/* ---- one template per kind of error ---------------------------------------- */

Test(errors, unknown_section)
{
	load_fails(DATA "tmpl-unknown-section.tmpl",
		   DATA "tmpl-unknown-section.tmpl:15: [extra]: unknown section");
}

Test(errors, unknown_key)
{
	load_fails(DATA "tmpl-unknown-key.tmpl",
		   DATA "tmpl-unknown-key.tmpl:14: [guest] host: unknown key");
}

Test(errors, unknown_pve_key)
{
	load_fails(DATA "tmpl-unknown-pvekey.tmpl",
		   DATA "tmpl-unknown-pvekey.tmpl:11: [pve] virtio16: not a PVE qemu parameter (PVE 9.1 and 8.4 schemas)");
}

Test(errors, unsafe_value)
{
	load_fails(DATA "tmpl-unsafe-value.tmpl",
		   DATA "tmpl-unsafe-value.tmpl:17: [rc.conf] hostname: '`' is not allowed here: "
			"the value is written inside double quotes in a file that sh reads");
}

Test(errors, control_character)
{
	load_fails(DATA "tmpl-control-char.tmpl",
		   DATA "tmpl-control-char.tmpl:10: [pve] description: value holds a control character (TAB)");
}

Test(errors, missing_required_key)
{
	load_fails(DATA "tmpl-missing-key.tmpl",
		   DATA "tmpl-missing-key.tmpl:1: [template] os: missing required key");
}

Test(errors, unknown_variable)
{
	load_fails(DATA "tmpl-unknown-var.tmpl",
		   DATA "tmpl-unknown-var.tmpl:14: [pve] net0: unknown variable ${brige}");
}

Test(errors, create_only_key_after_clone)
{
	load_fails(DATA "tmpl-create-only.tmpl",
		   DATA "tmpl-create-only.tmpl:11: [pve] pool: PVE accepts it only when creating a guest, not after a clone");
}

Test(errors, boolean_type)
{
	load_fails(DATA "tmpl-bad-type.tmpl",
		   DATA "tmpl-bad-type.tmpl:10: [pve] onboot: 'yes': must be 0 or 1 (a PVE boolean)");
}

Test(errors, reserved_key)
{
	load_fails(DATA "tmpl-reserved.tmpl",
		   DATA "tmpl-reserved.tmpl:10: [pve] vmid: not allowed in a template: set by pvagent (use --vmid)");
}

Test(errors, duplicate_key)
{
	load_fails(DATA "tmpl-duplicate-key.tmpl",
		   DATA "tmpl-duplicate-key.tmpl:11: [pve] memory: duplicate key (first at line 10)");
}

Test(errors, syntax)
{
	load_fails(DATA "tmpl-syntax.tmpl",
		   DATA "tmpl-syntax.tmpl:9: expected ']' to end the section header");
}

Test(errors, missing_file)
{
	load_fails(DATA "no-such.tmpl", DATA "no-such.tmpl: No such file or directory");
}

/* ---- written in a scratch directory --------------------------------------- */

static char scratch[64];

static void mkscratch(void)
{
	strcpy(scratch, "/tmp/test_tmpl.XXXXXX");
	cr_assert_not_null(mkdtemp(scratch));
}

static void rmscratch(void)
{
	char *cmd = NULL;
	cr_assert_gt(asprintf(&cmd, "rm -rf '%s'", scratch), 0);
	cr_expect_eq(system(cmd), 0);
	free(cmd);
}

static char *write_tmpl(const char *dir, const char *name, const char *text)
{
	char *p = NULL;
	cr_assert_gt(asprintf(&p, "%s/%s.tmpl", dir, name), 0);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f, "%s", p);
	cr_assert_eq(fputs(text, f) >= 0, 1);
	cr_assert_eq(fclose(f), 0);
	return p;
}

#define QEMU_HEAD                                                          \
	"[template]\nkind = qemu\nos = freebsd\nos_version = 14.1\n\n"     \
	"[source]\nclone = freebsd14-base\n\n[guest]\naddress = agent\n\n"

/* Load text as a template; returns NULL and *err on failure. */
static struct tmpl *load_text(const char *text, char **err)
{
	char *p = write_tmpl(scratch, "t", text);
	struct tmpl *t = NULL;
	*err = NULL;
	if (tmpl_load_file(p, &t, err) < 0)
		t = NULL;
	free(p);
	return t;
}

/* Message without the "DIR/t.tmpl:" prefix. */
static const char *msg(const char *err)
{
	const char *p = strstr(err, "t.tmpl:");
	return p ? p + 7 : err;
}

Test(vars, escape_dollar_and_file_lines, .init = mkscratch, .fini = rmscratch)
{
	struct tmpl *t = load_ok(DATA "tmpl-file-lines.tmpl");
	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	char *err = NULL;
	std_vars(&v, t, "web1", "101");
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), 0, "%s", err);
	cr_assert_eq(in.n_files, 1);
	cr_expect_str_eq(in.files[0].path, "/etc/motd");
	cr_expect_eq(in.files[0].style, TMPL_FILE_LINES);
	cr_assert_eq(in.files[0].entries.n, 2);
	cr_expect_str_eq(in.files[0].entries.items[0].value, "welcome to web1");
	cr_expect_str_eq(in.files[0].entries.items[1].value, "${literal} and $(date) are text");
	tmpl_inst_free(&in);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

Test(vars, undeclared_var_argument, .init = mkscratch, .fini = rmscratch)
{
	char *err = NULL;
	struct tmpl *t = load_text(QEMU_HEAD "[vars]\nbridge = vmbr0\nip =\n\n[pve]\nmemory = 512\n", &err);
	cr_assert_not_null(t, "%s", err);
	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	std_vars(&v, t, "x", "100");
	cr_assert_eq(tmpl_var_arg(&v, "colour=blue", &err), 0);
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), -1);
	cr_expect_str_eq(msg(err), " --var colour: the template has no such variable (it declares: bridge, ip)");
	free(err);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

Test(vars, newline_from_var_refused, .init = mkscratch, .fini = rmscratch)
{
	char *err = NULL;
	struct tmpl *t = load_text(QEMU_HEAD "[vars]\nnote = x\n\n[pve]\ndescription = ${note}\n", &err);
	cr_assert_not_null(t, "%s", err);
	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	std_vars(&v, t, "x", "100");
	cr_assert_eq(tmpl_kvlist_set(&v, "note", "two\nlines"), 0);
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), -1);
	cr_expect_str_eq(msg(err), "16: [pve] description: value holds a control character after expansion (newline, TAB, ...)");
	free(err);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

Test(vars, type_checked_after_expansion, .init = mkscratch, .fini = rmscratch)
{
	char *err = NULL;
	struct tmpl *t = load_text(QEMU_HEAD "[vars]\nn = 2\n\n[pve]\ncores = ${n}\n", &err);
	cr_assert_not_null(t, "%s", err);
	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	std_vars(&v, t, "x", "100");
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), 0, "%s", err);
	cr_expect_str_eq(get(&in.pve, "cores"), "2");
	tmpl_inst_free(&in);
	cr_assert_eq(tmpl_var_arg(&v, "n=lots", &err), 0);
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), -1);
	cr_expect_str_eq(msg(err), "16: [pve] cores: 'lots': must be an integer");
	free(err);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

Test(vars, bad_references, .init = mkscratch, .fini = rmscratch)
{
	char *err = NULL;
	cr_assert_null(load_text(QEMU_HEAD "[pve]\ndescription = ${name\n", &err));
	cr_expect_str_eq(msg(err), "13: [pve] description: unterminated ${ (write $${ for a literal ${)");
	free(err);
	cr_assert_null(load_text(QEMU_HEAD "[pve]\ndescription = ${1x}\n", &err));
	cr_expect_str_eq(msg(err), "13: [pve] description: bad variable name ${1x}");
	free(err);
	cr_assert_null(load_text(QEMU_HEAD "[vars]\nvmid = 5\n", &err));
	cr_expect_str_eq(msg(err), "13: [vars] vmid: built-in variable; pvagent supplies it (use --var vmid=VALUE to override storage)");
	free(err);
	err = NULL;
	struct tmpl_kvlist v = {0};
	cr_expect_eq(tmpl_var_arg(&v, "no-equals", &err), -1);
	cr_expect_str_eq(err, "expected NAME=VALUE (NAME: letters, digits, '_')");
	free(err);
	/* --set and --var values: no control character, the key named */
	const char *bad[][2] = {{"ciuser=admin\nroot", "ciuser: the value holds a control character (0x0a)"},
				{"searchdomain=a\rb", "searchdomain: the value holds a control character (0x0d)"},
				{"cipassword=x\ty", "cipassword: the value holds a control character (0x09)"},
				{"description=x\x7f", "description: the value holds a control character (0x7f)"}};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err = NULL;
		cr_expect_eq(tmpl_var_arg(&v, bad[i][0], &err), -1, "%s", bad[i][0]);
		cr_expect_str_eq(err, bad[i][1]);
		free(err);
	}
	cr_expect_eq(v.n, 0, "nothing was set");
	/* the same key twice: the same value is fine, another one refused */
	cr_expect_eq(tmpl_var_arg(&v, "cores=4", &err), 0);
	cr_expect_eq(tmpl_var_arg(&v, "cores=4", &err), 0);
	cr_expect_eq(tmpl_var_arg(&v, "cores=8", &err), -1);
	cr_expect_str_eq(err, "given twice ('cores=4' and 'cores=8')");
	free(err);
	cr_expect_str_eq(tmpl_kvlist_get(&v, "cores"), "4");
	tmpl_kvlist_free(&v);
}

Test(rules, kind_specific, .init = mkscratch, .fini = rmscratch)
{
	char *err = NULL;
	cr_assert_null(load_text("[template]\nkind = lxc\nos = ubuntu\nos_version = 24.04\n\n"
				 "[source]\nostemplate = local:vztmpl/x.tar.zst\nbus = ide\n\n"
				 "[guest]\naddress = agent\n\n[cloud-init]\nciuser = root\n", &err));
	cr_expect(strstr(err, "t.tmpl:8: [source] bus: only for kind qemu\n"));
	cr_expect(strstr(err, "t.tmpl:13: [cloud-init]: only for kind qemu (PVE cloud-init is for VMs)"));
	free(err);
	cr_assert_null(load_text("[template]\nkind = qemu\nos = ubuntu\nos_version = 24.04\n\n"
				 "[source]\nclone = base\niso = local:iso/x.iso\n\n[guest]\naddress = agent\n", &err));
	cr_expect_str_eq(msg(err), "6: [source]: set only one of clone (a template VM) or iso");
	free(err);
	cr_assert_null(load_text("[template]\nkind = openvz\nos = debian\nos_version = 7\n\n"
				 "[source]\nostemplate = local:vztmpl/d.tar.gz\n\n[guest]\naddress = agent\n", &err));
	cr_expect_str_eq(msg(err), "10: [guest] address: agent: PVE 3 cannot report OpenVZ addresses; use static");
	free(err);
	cr_assert_null(load_text(QEMU_HEAD "[pve]\nsshkeys = x\n", &err));
	cr_expect_str_eq(msg(err), "13: [pve] sshkeys: not allowed in a template: set it in [cloud-init]");
	free(err);
	cr_assert_null(load_text("[template]\nkind = qemu\nos = ubuntu\nos_version = 24.04\n\n"
				 "[source]\nclone = base\n\n[guest]\naddress = agent\n\n[rc.conf]\na = b\n", &err));
	cr_expect_str_eq(msg(err), "12: [rc.conf]: only for os = freebsd");
	free(err);
	cr_assert_null(load_text(QEMU_HEAD "[file \"/etc/../shadow\"]\nline = x\n", &err));
	cr_expect_str_eq(msg(err), "12: [file \"/etc/../shadow\"]: expected an absolute path of letters, "
				   "digits and /._-+@ (no . or .. parts)");
	free(err);
	cr_assert_null(load_text(QEMU_HEAD "[cloud-init]\nipconfig0 = address=1.2.3.4\n", &err));
	cr_expect_str_eq(msg(err), "13: [cloud-init] ipconfig0: 'address=1.2.3.4': expected "
				   "ip=CIDR|dhcp[,gw=IP][,ip6=CIDR|auto|dhcp][,gw6=IP]");
	free(err);
}

Test(rules, cloud_init_address_and_ssh_keys, .init = mkscratch, .fini = rmscratch)
{
	char *err = NULL;
	struct tmpl *t = load_text(
		"[template]\nkind = qemu\nos = ubuntu\nos_version = 24.04\n\n"
		"[source]\nclone = 9000\nfull = no\n\n[guest]\naddress = cloud-init\n\n"
		"[cloud-init]\nciuser = ubuntu\nsshkeys = ssh-ed25519 AAAA a@b\n"
		"sshkeys = ssh-rsa BBBB c d\nipconfig0 = ip=10.0.0.5/24,gw=10.0.0.1\n", &err);
	cr_assert_not_null(t, "%s", err);
	cr_expect_eq(t->source.full, 0);
	cr_expect_eq(t->ci.sshkeys.n, 2);
	cr_expect_null(t->guest.user, "no [guest] user: the caller uses [ssh] user");
	cr_expect_eq(t->guest.port, 0, "no [guest] port: the caller uses [ssh] port");
	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	std_vars(&v, t, "x", "100");
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), 0, "%s", err);
	cr_expect_str_eq(in.guest.ip.value, "10.0.0.5");
	cr_expect_str_eq(get(&in.pve, "sshkeys"), "ssh-ed25519%20AAAA%20a%40b%0Assh-rsa%20BBBB%20c%20d");
	tmpl_inst_free(&in);
	tmpl_kvlist_free(&v);
	tmpl_free(t);

	cr_assert_null(load_text(
		"[template]\nkind = qemu\nos = ubuntu\nos_version = 24.04\n\n"
		"[source]\nclone = 9000\n\n[guest]\naddress = cloud-init\n\n"
		"[cloud-init]\nipconfig0 = ip=dhcp\n", &err));
	cr_expect_str_eq(msg(err), "12: [cloud-init] ipconfig0: no static ip= for [guest] address = cloud-init "
				   "(with dhcp use address = agent)");
	free(err);
}

Test(search, dirs_in_order_and_missing, .init = mkscratch, .fini = rmscratch)
{
	char *a = NULL, *b = NULL;
	cr_assert_gt(asprintf(&a, "%s/a", scratch), 0);
	cr_assert_gt(asprintf(&b, "%s/b", scratch), 0);
	cr_assert_eq(mkdir(a, 0700), 0);
	cr_assert_eq(mkdir(b, 0700), 0);
	free(write_tmpl(a, "one", QEMU_HEAD "[pve]\nmemory = 1024\n"));
	free(write_tmpl(b, "one", QEMU_HEAD "[pve]\nmemory = 2048\n"));
	free(write_tmpl(b, "two", QEMU_HEAD "[pve]\nbogus = 2\n"));
	const char *dirs[] = {"/nonexistent-dir", a, b, NULL};
	struct tmpl *t = NULL;
	char *err = NULL;
	cr_assert_eq(tmpl_load(dirs, "one", &t, &err), 0, "%s", err);
	cr_expect_str_eq(get(&t->pve, "memory"), "1024");
	tmpl_free(t);
	cr_assert_eq(tmpl_load(dirs, "three", &t, &err), -1);
	char *want = NULL;
	cr_assert_gt(asprintf(&want, "no template 'three' (looked in /nonexistent-dir, %s, %s)", a, b), 0);
	cr_expect_str_eq(err, want);
	free(want);
	free(err);
	cr_assert_eq(tmpl_load(dirs, "../etc/passwd", &t, &err), -1);
	free(err);
	cr_assert_eq(tmpl_load(dirs, ".hidden", &t, &err), -1);
	cr_expect_str_eq(err, ".hidden: not a template name (letters, digits, '.', '_', '-')");
	free(err);

	struct tmpl_info *list = NULL;
	size_t n = 0;
	cr_assert_eq(tmpl_list(dirs, &list, &n, &err), 0, "%s", err);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(list[0].name, "one");
	cr_expect_not_null(list[0].tmpl);
	cr_expect_str_eq(get(&list[0].tmpl->pve, "memory"), "1024");
	cr_expect_str_eq(list[1].name, "two");
	cr_expect_null(list[1].tmpl);
	cr_expect(strstr(list[1].error, "two.tmpl:13: [pve] bogus: not a PVE qemu parameter (PVE 9.1 and 8.4 schemas)"));
	tmpl_list_free(list, n);
	free(a);
	free(b);
}

Test(search, unsafe_and_device_templates_listed_invalid, .init = mkscratch, .fini = rmscratch)
{
	char *d = NULL;
	cr_assert_gt(asprintf(&d, "%s/t", scratch), 0);
	cr_assert_eq(mkdir(d, 0755), 0);
	char *ok = write_tmpl(d, "ok", QEMU_HEAD "[pve]\nmemory = 1024\n");
	char *gw = write_tmpl(d, "gw", QEMU_HEAD "[pve]\nmemory = 1024\n");
	cr_assert_eq(chmod(gw, 0666), 0);
	char *zero = NULL;
	cr_assert_gt(asprintf(&zero, "%s/zero.tmpl", d), 0);
	cr_assert_eq(symlink("/dev/zero", zero), 0);
	const char *dirs[] = {d, NULL};
	struct tmpl_info *list = NULL;
	size_t n = 0;
	char *err = NULL;
	cr_assert_eq(tmpl_list(dirs, &list, &n, &err), 0, "%s", err);
	cr_assert_eq(n, 3);
	cr_expect_str_eq(list[0].name, "gw");
	cr_expect_null(list[0].tmpl);
	char *want = NULL;
	cr_assert_gt(asprintf(&want, "%s: writable by group or others (mode 0666); run: chmod go-w %s",
			      gw, gw), 0);
	cr_expect_str_eq(list[0].error, want);
	free(want);
	cr_expect_not_null(list[1].tmpl, "%s", list[1].error);
	cr_expect_str_eq(list[2].name, "zero");
	cr_expect_null(list[2].tmpl);
	cr_assert_gt(asprintf(&want, "%s: not a regular file (a character device)", zero), 0);
	cr_expect_str_eq(list[2].error, want);
	free(want);
	tmpl_list_free(list, n);
	struct tmpl *t = NULL;
	cr_assert_eq(tmpl_load(dirs, "zero", &t, &err), -1);
	cr_expect(strstr(err, "not a regular file (a character device)"), "%s", err);
	free(err);
	free(ok);
	free(gw);
	free(zero);
	free(d);
}

/* Issue 11: values checked against the PVE 9.1 and 8.4 schemas at load; the listing
 * marks such templates invalid with file, line and key. */
Test(schema, bad_values_listed_invalid, .init = mkscratch, .fini = rmscratch)
{
	char *d = NULL;
	cr_assert_gt(asprintf(&d, "%s/t", scratch), 0);
	cr_assert_eq(mkdir(d, 0755), 0);
	char *longdesc = malloc(8193 + 32);
	cr_assert_not_null(longdesc);
	strcpy(longdesc, "description = ");
	size_t l = strlen(longdesc);
	memset(longdesc + l, 'x', 8193);
	strcpy(longdesc + l + 8193, "\n");
	struct sbuf b = {0};
	cr_assert_eq(sbuf_addf(&b, QEMU_HEAD "[pve]\nmemory = -5\n"
				   "net0 = virtio,bridge=vmbr0,evil=1\n%s"
				   "net1 = e1000=01:00:00:00:00:01,bridge=vmbr0\n"
				   "scsi0 = local-lvm:vm-1-disk-0,iothread=maybe\n"
				   "ostype = beos\ncores = 2\nnet2 = model=virtio,tag=5000\n",
			       longdesc), 0);
	free(longdesc);
	char *bad = write_tmpl(d, "bad", sbuf_str(&b));
	sbuf_free(&b);
	free(write_tmpl(d, "good", QEMU_HEAD "[pve]\nmemory = 2048\n"
			"net0 = virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1,tag=20\n"
			"scsi0 = local-lvm:vm-${vmid}-disk-0,iothread=1,discard=on,size=32G\n"
			"description = ok\nostype = l26\n"));
	const char *dirs[] = {d, NULL};
	struct tmpl_info *list = NULL;
	size_t n = 0;
	char *err = NULL;
	cr_assert_eq(tmpl_list(dirs, &list, &n, &err), 0, "%s", err);
	cr_assert_eq(n, 2);
	cr_expect_null(list[0].tmpl);
	cr_assert_not_null(list[0].error);
	char *want = NULL;
	cr_assert_gt(asprintf(&want,
		"%s:13: [pve] memory: -5 is below the minimum 16\n"
		"%s:14: [pve] net0: evil: unknown key (known: bridge, firewall, link_down, macaddr, "
		"model, mtu, queues, rate, tag, trunks)\n"
		"%s:15: [pve] description: 8193 characters long, at most 8192 allowed\n"
		"%s:16: [pve] net1: macaddr: '01:00:00:00:00:01' is not a unicast MAC address "
		"(XX:XX:XX:XX:XX:XX, first byte even)\n"
		"%s:17: [pve] scsi0: iothread: 'maybe': must be 1 or 0 (or yes/no, on/off, true/false)\n"
		"%s:18: [pve] ostype: 'beos' is not one of: other, wxp, w2k, w2k3, w2k8, wvista, win7, "
		"win8, win10, win11, l24, l26, solaris\n"
		"%s:20: [pve] net2: tag: 5000 is above the maximum 4094",
		bad, bad, bad, bad, bad, bad, bad), 0);
	cr_expect_str_eq(list[0].error, want);
	free(want);
	cr_expect_not_null(list[1].tmpl, "%s", list[1].error);
	tmpl_list_free(list, n);
	free(bad);
	free(d);
}

/* [cloud-init] values are PVE parameters too: checked after expansion. */
Test(schema, cloud_init_values_checked, .init = mkscratch, .fini = rmscratch)
{
	char *err = NULL;
	struct tmpl *t = load_text(QEMU_HEAD "[vars]\ndns = 192.0.2.53\n\n"
				   "[cloud-init]\nnameserver = ${dns}\n", &err);
	cr_assert_not_null(t, "%s", err);
	struct tmpl_kvlist v = {0};
	struct tmpl_inst in;
	std_vars(&v, t, "x", "100");
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), 0, "%s", err);
	tmpl_inst_free(&in);
	cr_assert_eq(tmpl_var_arg(&v, "dns=192.0.2.999", &err), 0);
	cr_assert_eq(tmpl_expand(t, &v, &in, &err), -1);
	cr_expect_str_eq(msg(err), "16: [cloud-init] nameserver: '192.0.2.999' is not a list of "
				   "IP addresses");
	free(err);
	tmpl_kvlist_free(&v);
	tmpl_free(t);
}

Test(schema, checker_cases)
{
	static const struct {
		enum pvekey_kind k;
		const char *param, *value, *want; /* want NULL: accepted */
	} cases[] = {
		{PVEKEY_QEMU, "memory", "2048", NULL},
		{PVEKEY_QEMU, "memory", "current=1024", NULL},
		{PVEKEY_QEMU, "memory", "current=8", "current: 8 is below the minimum 16"},
		{PVEKEY_QEMU, "cores", "2", NULL},
		{PVEKEY_QEMU, "cpulimit", "1.5", NULL},
		{PVEKEY_QEMU, "cpulimit", "200", "200 is above the maximum 128"},
		{PVEKEY_QEMU, "net0", "virtio,bridge=vmbr0", NULL},
		{PVEKEY_QEMU, "net0", "bridge=vmbr0", "model missing"},
		{PVEKEY_QEMU, "net0", "virtio,bridge=vmbr0,bridge=vmbr1", "bridge given twice"},
		{PVEKEY_QEMU, "net0", "virtio,model=e1000", "model given twice"},
		{PVEKEY_QEMU, "net0", "model=virtio,bridge=vm br0", "'vm br0' is not a bridge name"},
		{PVEKEY_QEMU, "scsi0", "volume=local:iso/x.iso,media=cdrom", NULL},
		{PVEKEY_QEMU, "scsi0", "local-lvm:32", NULL},
		{PVEKEY_QEMU, "scsi0", "nostorage", "is not a volume"},
		{PVEKEY_QEMU, "scsi0", "local-lvm:32,size=huge", "size: 'huge' is not a size"},
		{PVEKEY_QEMU, "machine", "q35", NULL},
		{PVEKEY_QEMU, "machine", "q36", "does not match"},
		{PVEKEY_QEMU, "bootdisk", "scsi0", NULL},
		{PVEKEY_QEMU, "bootdisk", "floppy0", "'floppy0' does not match"},
		{PVEKEY_QEMU, "onboot", "yes", "'yes': must be 0 or 1 (a PVE boolean)"},
		{PVEKEY_QEMU, "tags", "web;prod", NULL},
		{PVEKEY_LXC, "net0", "name=eth0,bridge=vmbr0,ip=10.0.0.2/24,gw=10.0.0.1", NULL},
		{PVEKEY_LXC, "net0", "name=eth0,ip=10.0.0.300/24", "ip: '10.0.0.300/24' is not a IPv4"},
		{PVEKEY_LXC, "memory", "-5", "-5 is below the minimum 16"},
		{PVEKEY_LXC, "hostname", "web-1.example.com", NULL},
		{PVEKEY_LXC, "hostname", "-bad", "is not a DNS name"},
		{PVEKEY_QEMU, "nosuch", "1", "not a PVE parameter"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *why = NULL;
		int rc = pvecheck_param(0, cases[i].k, cases[i].param, cases[i].value, &why);
		if (!cases[i].want) {
			cr_expect_eq(rc, 0, "%s=%s: %s", cases[i].param, cases[i].value, why);
		} else {
			cr_expect_eq(rc, 1, "%s=%s accepted", cases[i].param, cases[i].value);
			cr_expect(why && strstr(why, cases[i].want), "%s=%s: %s", cases[i].param,
				  cases[i].value, why ? why : "(none)");
		}
		free(why);
	}
}

/* Every pattern the generator translated from Perl compiles as a POSIX
 * extended regex (a pattern that did not would check nothing). */
static void compiles(const struct pvekey_val *v, const char *where)
{
	if (!v)
		return;
	if (v->pattern) {
		regex_t re;
		cr_expect_eq(regcomp(&re, v->pattern, REG_EXTENDED | REG_NOSUB), 0, "%s: %s", where,
			     v->pattern);
		regfree(&re);
	}
	for (size_t i = 0; i < v->n_props; i++)
		compiles(&v->props[i].v, where);
}

Test(schema, patterns_compile)
{
	size_t with_val = 0;
	for (size_t i = 0; i < pvekeys_count; i++) {
		compiles(pvekeys[i].val, pvekeys[i].name);
		with_val += pvekeys[i].val != NULL;
	}
	cr_expect_eq(with_val, pvekeys_count);
}

/* ---- PVE key table --------------------------------------------------------- */

Test(pvekeys, lookup)
{
	cr_expect_not_null(pvekey_lookup(PVEKEY_QEMU, "net0"));
	cr_expect_not_null(pvekey_lookup(PVEKEY_QEMU, "net31"));
	cr_expect_null(pvekey_lookup(PVEKEY_QEMU, "net32"));
	cr_expect_null(pvekey_lookup(PVEKEY_QEMU, "net01"));
	cr_expect_null(pvekey_lookup(PVEKEY_QEMU, "net"));
	cr_expect_not_null(pvekey_lookup(PVEKEY_QEMU, "virtio15"));
	cr_expect_null(pvekey_lookup(PVEKEY_QEMU, "virtio16"));
	cr_expect_not_null(pvekey_lookup(PVEKEY_QEMU, "ide3"));
	cr_expect_null(pvekey_lookup(PVEKEY_QEMU, "ide4"));
	cr_expect_not_null(pvekey_lookup(PVEKEY_QEMU, "efidisk0"));
	cr_expect_null(pvekey_lookup(PVEKEY_QEMU, "efidisk1"));
	cr_expect_eq(pvekey_lookup(PVEKEY_QEMU, "onboot")->type, PVEKEY_T_BOOLEAN);
	cr_expect_eq(pvekey_lookup(PVEKEY_QEMU, "memory")->type, PVEKEY_T_STRING);
	cr_expect_eq(pvekey_lookup(PVEKEY_QEMU, "pool")->where, PVEKEY_CREATE);
	cr_expect_not_null(pvekey_lookup(PVEKEY_LXC, "mp255"));
	cr_expect_null(pvekey_lookup(PVEKEY_LXC, "scsihw"));
	cr_expect_not_null(pvekey_lookup(PVEKEY_OPENVZ, "netif"));
	cr_expect_null(pvekey_lookup(PVEKEY_OPENVZ, "net0"));
	cr_expect_eq(pvekey_lookup(PVEKEY_OPENVZ, "disk")->type, PVEKEY_T_NUMBER);
}

static json_object *find_path(json_object *nodes, const char *path)
{
	size_t n = json_object_array_length(nodes);
	for (size_t i = 0; i < n; i++) {
		json_object *node = json_object_array_get_idx(nodes, i), *p, *ch;
		if (json_object_object_get_ex(node, "path", &p) &&
		    strcmp(json_object_get_string(p), path) == 0)
			return node;
		if (json_object_object_get_ex(node, "children", &ch)) {
			json_object *r = find_path(ch, path);
			if (r)
				return r;
		}
	}
	return NULL;
}

static json_object *props(json_object *root, const char *path, const char *method)
{
	json_object *node = find_path(root, path), *info, *m, *params, *pr;
	cr_assert_not_null(node, "%s not in schema", path);
	if (!json_object_object_get_ex(node, "info", &info) ||
	    !json_object_object_get_ex(info, method, &m))
		return NULL;
	cr_assert(json_object_object_get_ex(m, "parameters", &params));
	cr_assert(json_object_object_get_ex(params, "properties", &pr));
	return pr;
}

static const char *type_name(enum pvekey_type t)
{
	return t == PVEKEY_T_BOOLEAN ? "boolean" : t == PVEKEY_T_INTEGER ? "integer"
		: t == PVEKEY_T_NUMBER ? "number" : "string";
}

/* Every schema parameter is in the table with its type and where it is
 * accepted, and the table has nothing else. */
static void check_kind(json_object *root, enum pvekey_kind kind, const char *create,
		       const char *config, unsigned version)
{
	json_object *sets[3] = {props(root, create, "POST"), props(root, config, "PUT"),
				props(root, config, "POST")};
	unsigned where_of[3] = {PVEKEY_CREATE, PVEKEY_CONFIG, PVEKEY_CONFIG};
	size_t seen = 0;
	for (size_t i = 0; i < pvekeys_count; i++) {
		const struct pvekey *k = &pvekeys[i];
		if (k->kind != kind || !(k->versions & version))
			continue;
		seen++;
		char name[64];
		snprintf(name, sizeof name, "%s%s", k->name, k->max_index >= 0 ? "[n]" : "");
		unsigned where = 0;
		for (int s = 0; s < 3; s++) {
			json_object *p;
			if (sets[s] && json_object_object_get_ex(sets[s], name, &p)) {
				where |= where_of[s];
				json_object *ty, *desc;
				if (json_object_object_get_ex(p, "type", &ty))
					cr_expect_str_eq(json_object_get_string(ty), type_name(k->type),
							 "%s type", name);
				if (k->max_index >= 0 && json_object_object_get_ex(p, "description", &desc)) {
					const char *d = strstr(json_object_get_string(desc), "(n is 0 to ");
					if (d)
						cr_expect_geq(k->max_index, atoi(d + 11), "%s range", name);
				}
			}
		}
		cr_expect_eq(where, k->where, "%s: where %u in schema, %u in table", name, where, k->where);
	}
	size_t total = 0;
	for (int s = 0; s < 3; s++) {
		if (!sets[s])
			continue;
		json_object_object_foreach(sets[s], key, val) {
			(void)val;
			int dup = 0;
			for (int o = 0; o < s; o++)
				dup |= sets[o] && json_object_object_get_ex(sets[o], key, NULL);
			if (dup)
				continue;
			total++;
			char base[64];
			snprintf(base, sizeof base, "%s", key);
			size_t bl = strlen(base);
			int indexed = bl > 3 && strcmp(base + bl - 3, "[n]") == 0;
			if (indexed)
				base[bl - 3] = '\0';
			int found = 0;
			for (size_t i = 0; i < pvekeys_count && !found; i++)
				found = pvekeys[i].kind == kind && (pvekeys[i].versions & version) &&
					strcmp(pvekeys[i].name, base) == 0 &&
					(pvekeys[i].max_index >= 0) == indexed;
			cr_expect(found, "schema parameter %s missing from agent/pvekeys.c", key);
		}
	}
	cr_expect_eq(seen, total, "table has %zu entries, schema %zu", seen, total);
}

/* The rows of one version against that version's schema file. */
static void table_matches(const char *path, unsigned version)
{
	if (access(path, R_OK) != 0)
		cr_skip_test("%s not present", path);
	json_object *root = json_object_from_file(path);
	cr_assert_not_null(root, "cannot parse %s", path);
	check_kind(root, PVEKEY_QEMU, "/nodes/{node}/qemu", "/nodes/{node}/qemu/{vmid}/config",
		   version);
	check_kind(root, PVEKEY_LXC, "/nodes/{node}/lxc", "/nodes/{node}/lxc/{vmid}/config",
		   version);
	json_object_put(root);
}

Test(pvekeys, table_matches_pve8_schema)
{
	table_matches("../shared/pve-api/pve8-apidata.json", PVEKEY_PVE8);
}

Test(pvekeys, table_matches_pve9_schema)
{
	table_matches("../shared/pve-api/pve9-apidata.json", PVEKEY_PVE9);
}

/* A key or value of one version only: known before the version is (0),
 * and on its own version, not on the other. */
Test(pvekeys, per_version)
{
	cr_expect_not_null(pvekey_lookup_for(9, PVEKEY_QEMU, "allow-ksm"));
	cr_expect_null(pvekey_lookup_for(8, PVEKEY_QEMU, "allow-ksm"), "new in 9");
	cr_expect_not_null(pvekey_lookup(PVEKEY_QEMU, "allow-ksm"));
	cr_expect_null(pvekey_lookup_for(5, PVEKEY_LXC, "entrypoint"));
	cr_expect_not_null(pvekey_lookup_for(9, PVEKEY_LXC, "entrypoint"));
	cr_expect_not_null(pvekey_lookup_for(3, PVEKEY_OPENVZ, "netif"));
	cr_expect(pvekey_drive_option(8, "virtio", "cyls"));
	cr_expect_not(pvekey_drive_option(9, "virtio", "cyls"), "dropped in 9");
	cr_expect(pvekey_drive_option(0, "ide", "trans"));
	cr_expect(pvekey_drive_option(9, "virtio", "iothread"));
	/* agent's freeze-fs (9.x) */
	char *why = NULL;
	cr_expect_eq(pvecheck_param(9, PVEKEY_QEMU, "agent", "1,freeze-fs=0", &why), 0);
	cr_expect_eq(pvecheck_param(0, PVEKEY_QEMU, "agent", "1,freeze-fs=0", &why), 0);
	cr_expect_eq(pvecheck_param(8, PVEKEY_QEMU, "agent", "1,freeze-fs=0", &why), 1);
	cr_expect(why && strstr(why, "freeze-fs"), "%s", why ? why : "");
	free(why);
	why = NULL;
	cr_expect_eq(pvecheck_param(0, PVEKEY_QEMU, "ide0", "local-lvm:1,cyls=2", &why), 0,
		     "8.x has it");
	cr_expect_eq(pvecheck_param(9, PVEKEY_QEMU, "ide0", "local-lvm:1,cyls=2", &why), 1);
	free(why);
}

/* A template loads with a key of either version; once the cluster's
 * version is known, a key only another version has is named. */
Test(pvekeys, template_keys_checked_against_the_version, .init = mkscratch, .fini = rmscratch)
{
	char *err = NULL;
	struct tmpl *t = load_text(QEMU_HEAD "[pve]\nmemory = 1024\nallow-ksm = 0\n", &err);
	cr_assert_not_null(t, "%s", err ? err : "");
	cr_assert_eq(tmpl_check_version(t, NULL, 9, 0, &err), 0);
	cr_assert_eq(tmpl_check_version(t, NULL, 8, 0, &err), -1);
	cr_assert_not_null(err);
	cr_expect_str_eq(err, "template t, line 14: [pve] 'allow-ksm' is a PVE 9 parameter; "
			      "this cluster runs PVE 8");
	free(err);
	tmpl_free(t);
	t = load_text(QEMU_HEAD "[pve]\nmemory = 1024\n", &err);
	cr_assert_not_null(t, "%s", err ? err : "");
	struct tmpl_kvlist sets = {0};
	cr_assert_eq(tmpl_kvlist_add(&sets, "intel-tdx", "1", 0), 0);
	cr_assert_eq(tmpl_check_version(t, &sets, 9, 0, &err), 0);
	cr_assert_eq(tmpl_check_version(t, &sets, 8, 0, &err), -1);
	cr_expect_str_eq(err, "--set 'intel-tdx' is a PVE 9 parameter; this cluster runs PVE 8");
	free(err);
	tmpl_kvlist_free(&sets);
	tmpl_free(t);
}

Test(pvekeys, table_matches_pve3_openvz_schema)
{
	const char *path = "../shared/pve-api/pve3-openvz-apidata.generated.json";
	if (access(path, R_OK) != 0)
		cr_skip_test("%s not present", path);
	json_object *root = json_object_from_file(path);
	cr_assert_not_null(root, "cannot parse %s", path);
	check_kind(root, PVEKEY_OPENVZ, "/nodes/{node}/openvz", "/nodes/{node}/openvz/{vmid}/config",
		   PVEKEY_PVE8);
	json_object_put(root);
}

/* Mutated copies of every shipped template: each either loads (and then
 * expands or fails cleanly) or fails with a message naming the file; no
 * crash and no leak on any error path (ASan/LSan watch this). */
Test(robust, mutated_templates, .init = mkscratch, .fini = rmscratch)
{
	static const char *const names[] = {"freebsd-9.0", "freebsd-14", "ubuntu-9.04",
					    "ubuntu-24.04", "ubuntu-24.04-ct", "debian-7-openvz"};
	static const char alphabet[] = "[]\"=#$${}\t\n ab_-.:/0`\\";
	unsigned seed = 4242;
	int loaded = 0, failed = 0, expanded = 0;
	for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
		char *path = NULL, *orig = NULL;
		size_t len = 0;
		cr_assert_gt(asprintf(&path, "templates/%s.tmpl", names[n]), 0);
		cr_assert_eq(read_file(path, &orig, &len), 0);
		free(path);
		for (int round = 0; round < 150; round++) {
			char *text = strdup(orig);
			cr_assert_not_null(text);
			int edits = 1 + rand_r(&seed) % 3;
			for (int e = 0; e < edits; e++)
				text[(size_t)rand_r(&seed) % len] =
					alphabet[rand_r(&seed) % (int)(sizeof alphabet - 1)];
			char *p = write_tmpl(scratch, "m", text);
			free(text);
			struct tmpl *t = NULL;
			char *err = NULL;
			if (tmpl_load_file(p, &t, &err) == 0) {
				loaded++;
				struct tmpl_kvlist v = {0};
				struct tmpl_inst in;
				std_vars(&v, t, "m1", "111");
				if (tmpl_kvlist_get(&t->vars, "ip"))
					cr_assert_eq(tmpl_kvlist_set(&v, "ip", "10.0.0.9"), 0);
				if (tmpl_expand(t, &v, &in, &err) == 0) {
					expanded++;
					tmpl_inst_free(&in);
				}
				else
					free(err);
				tmpl_kvlist_free(&v);
				tmpl_free(t);
			} else {
				failed++;
				cr_assert_not_null(err);
				cr_assert(strncmp(err, p, strlen(p)) == 0, "%s", err);
				free(err);
			}
			free(p);
		}
		free(orig);
	}
	cr_expect_gt(expanded, 0);
	cr_expect_gt(loaded, expanded - 1);
	cr_expect_gt(failed, 0);
}
