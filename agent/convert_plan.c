/* convert_plan.c - the PVE side of a virtio conversion (convert_plan.h):
 * the config check, the target config, whether it is applied and the
 * rollback's keys. Pure: config in, plan out. */
#include "convert_plan.h"

#include <stdlib.h>
#include <string.h>

#include "guest.h"
#include "json.h"
#include "pvecfg.h"
#include "pvekeys.h"
#include "rewrite.h"
#include "util.h"

void convert_target_free(struct convert_target *t)
{
	free(t->delete_keys);
	pve_params_free(&t->set);
	strv_free(t->lines, t->n_lines);
	free(t->boot_key);
	memset(t, 0, sizeof *t);
}

/* e1000e is driven like e1000 (FreeBSD em, Linux e1000e keeps the slot
 * name): one family for a conversion. */
static const char *nic_driver(const char *model)
{
	return strcmp(model, "e1000e") == 0 ? "e1000" : model;
}

/* The NIC models pvagent moves to virtio (the guest's NIC keeps its PCI
 * slot and MAC; FreeBSD renames em/re/vmx to vtnet); the model's name as a
 * static string, or NULL. */
static const char *nic_model_moves(const char *model)
{
	static const char *const moves[] = {"e1000", "e1000e", "rtl8139", "vmxnet3"};
	for (size_t i = 0; model && i < sizeof moves / sizeof *moves; i++)
		if (strcmp(model, moves[i]) == 0)
			return moves[i];
	return NULL;
}

/* The same drive value with only the options the target bus's drive
 * format has on PVE major (pvekeys.h): an IDE disk's model=, ssd= or wwn=
 * does not exist on virtio-blk and PVE would refuse the value. The options
 * another version has on that bus (cyls, heads, secs, trans, which PVE 9
 * dropped) are listed in *dropped ("cyls=1024,heads=16"; NULL: none). */
static char *disk_value_for(const char *value, enum vbus bus, int major, char **dropped)
{
	const char *bus_name = bus == VBUS_VIRTIO_SCSI ? "scsi" : "virtio";
	struct propstr in, out = {0}, gone = {0};
	*dropped = NULL;
	if (propstr_parse(value, &in) < 0)
		return NULL;
	int rc = 0;
	for (size_t i = 0; i < in.n && rc == 0; i++) {
		const char *k = in.v[i].key;
		if (!k || pvekey_drive_option(major, bus_name, k))
			rc = propstr_set(&out, k, in.v[i].value);
		else if (pvekey_drive_option(0, bus_name, k))
			rc = propstr_set(&gone, k, in.v[i].value);
	}
	if (rc == 0 && gone.n && !(*dropped = propstr_format(&gone)))
		rc = -1;
	propstr_free(&gone);
	char *s = rc == 0 ? propstr_format(&out) : NULL;
	propstr_free(&in);
	propstr_free(&out);
	return s;
}

/* net value with model virtio and the same MAC, other options kept. */
static char *nic_value_virtio(const char *value)
{
	struct propstr in, out = {0};
	if (propstr_parse(value, &in) < 0)
		return NULL;
	int rc = 0;
	for (size_t i = 0; i < in.n && rc == 0; i++) {
		const char *k = in.v[i].key;
		if (k && nic_model_moves(k))
			rc = propstr_set(&out, "virtio", in.v[i].value);
		else if (k && strcmp(k, "model") == 0)
			rc = propstr_set(&out, "model", "virtio");
		else
			rc = propstr_set(&out, k, in.v[i].value);
	}
	char *s = rc == 0 ? propstr_format(&out) : NULL;
	propstr_free(&in);
	propstr_free(&out);
	return s;
}

/* "order=ide0;ide2;net0" with each moved key replaced. */
static char *boot_order_map(const char *boot, const struct name_map *keys)
{
	struct sbuf b = {0};
	const char *p = boot;
	while (*p) {
		size_t n = strcspn(p, ";=,");
		char *tok = strndup(p, n);
		if (!tok) {
			sbuf_free(&b);
			return NULL;
		}
		const char *to = name_map_get(keys, tok);
		sbuf_add(&b, to ? to : tok);
		free(tok);
		p += n;
		if (*p)
			sbuf_addc(&b, *p++);
	}
	return sbuf_steal(&b);
}

/* PVE's Windows ostypes (qemu-server's windows_version: win*, wxp, w2k*). */
static bool ostype_windows(const char *os)
{
	return os && (strncmp(os, "win", 3) == 0 || strcmp(os, "wxp") == 0 ||
		      strncmp(os, "w2k", 3) == 0);
}

/* An emulated SCSI controller (scsihw unset: LSI 53C895A, PVE's default;
 * lsi53c810, megasas, pvscsi): its disks move to virtio-scsi under the
 * same keys. */
static bool scsihw_emulated(const char *scsihw)
{
	return !scsihw || strncmp(scsihw, "virtio-scsi", 11) != 0;
}

static bool key_touches_buses(const char *k)
{
	return pvecfg_disk_key(k, NULL) != BUS_NONE || key_indexed(k, "net") ||
	       strcmp(k, "boot") == 0 || strcmp(k, "bootdisk") == 0 || strcmp(k, "scsihw") == 0;
}

/* A drive that is not a disk to convert: a CD-ROM (media=cdrom, with or
 * without media: "ide2: none,media=cdrom"), or a cloud-init drive
 * (vm-N-cloudinit: PVE writes it anew from the config at each start). */
static bool not_a_disk(const struct pvecfg_disk *d)
{
	return d->cdrom || (d->volume && strstr(d->volume, "-cloudinit"));
}

/* The disks (CD-ROMs and cloud-init drives aside) of a config per bus:
 * IDE, SATA, on an emulated SCSI controller, on virtio (virtio-blk, or
 * SCSI behind virtio-scsi). mixed: moving them would rename other disks:
 * two emulated buses, or IDE/SATA disks beside virtio ones (the guest
 * names both sdX, or the new virtioN keys would collide). SCSI disks on
 * an emulated controller beside virtio-blk ones are not mixed: they keep
 * their keys and names, only the controller changes. */
struct bus_count {
	unsigned ide, sata, lsi, virt;
	bool mixed;
};

static struct bus_count count_buses(const struct pvecfg_hw *hw)
{
	struct bus_count c = {0};
	for (size_t i = 0; i < hw->n_disks; i++) {
		const struct pvecfg_disk *d = &hw->disks[i];
		if (not_a_disk(d))
			continue;
		bool emu_scsi = d->bus == BUS_SCSI && scsihw_emulated(hw->scsihw);
		c.ide += d->bus == BUS_IDE;
		c.sata += d->bus == BUS_SATA;
		c.lsi += emu_scsi;
		c.virt += d->bus == BUS_VIRTIO || (d->bus == BUS_SCSI && !emu_scsi);
	}
	c.mixed = !!c.ide + !!c.sata + !!c.lsi > 1 || ((c.ide || c.sata) && c.virt);
	return c;
}

static bool is_template(json_object *config)
{
	const char *t = json_text(config, "template");
	return t && strcmp(t, "0") != 0;
}

int convert_config_check(json_object *config, int vmid, const char *pending_keys, char **why)
{
	*why = NULL;
	struct pvecfg_hw hw = {0};
	if (pvecfg_hw_read(config, &hw) < 0)
		return -1;
	struct sbuf stay = {0};
	struct bus_count bc = count_buses(&hw);
	unsigned ide = bc.ide, sata = bc.sata, lsi = bc.lsi, e1000 = 0, nstay = 0;
	int rc = 0;
	for (size_t i = 0; i < hw.n_nics && rc == 0; i++) {
		const char *m = hw.nics[i].model;
		if (nic_model_moves(m))
			e1000++;
		else if (strcmp(m, "virtio") != 0 && ++nstay)
			rc = sbuf_addf(&stay, "%s%s (%s)", stay.len ? "; " : "", hw.nics[i].key, m);
	}
	pvecfg_hw_free(&hw);
	if (rc < 0) {
		sbuf_free(&stay);
		return -1;
	}
	/* what decides comes first: nothing emulated is nothing to do, for a
	 * template or a Windows guest too */
	if (!(ide || sata || lsi || e1000 || stay.len)) {
		sbuf_free(&stay);
		return 1;
	}
	rc = -1;
	const char *os = json_text(config, "ostype");
	if (is_template(config))
		*why = strdup("a template (template: 1): pvagent does not convert templates; its "
			      "disks are base volumes its linked clones read, and it never runs for "
			      "the guest side to be prepared: convert a clone (a full clone made "
			      "into a template again)");
	else if (ostype_windows(os))
		*why = strprintf("a Windows guest (ostype %s): pvagent does not convert Windows; it "
				 "boots from virtio only once the viostor (disk) and NetKVM (network) "
				 "drivers from the virtio-win ISO are installed while its disks and NICs "
				 "are still emulated", os);
	for (const char *p = pending_keys; p && *p && !*why;) {
		size_t n = strcspn(p, ",");
		char *k = strndup(p, n);
		if (!k)
			break;
		if (key_touches_buses(k))
			*why = strprintf("%s has a pending change (PVE applies it at the next restart): "
					 "pvagent converts only the config the guest runs; restart the "
					 "guest to apply it or revert it (qm revert %d --revert %s)", k,
					 vmid, k);
		free(k);
		p += n + (p[n] == ',');
	}
	if (!*why && stay.len) {
		const char *s = nstay > 1 ? "" : "s";
		*why = ide || sata || lsi || e1000
		     ? strprintf("%s stay%s emulated beside the disks and NICs pvagent would move: "
				 "pvagent converts only guests whose every NIC is e1000, e1000e, "
				 "rtl8139, vmxnet3 or virtio", sbuf_str(&stay), s)
		     : strprintf("nothing pvagent converts: %s stay%s emulated; pvagent converts "
				 "e1000, e1000e, rtl8139 and vmxnet3 NICs", sbuf_str(&stay), s);
	} else if (!*why && bc.mixed) {
		*why = strdup("its disks are on more than one bus (IDE, SATA, SCSI, virtio; CD-ROMs "
			      "and cloud-init drives aside): pvagent converts a guest whose disks "
			      "are all on IDE, all on SATA or on one emulated SCSI controller, "
			      "beside virtio-blk ones at most (the guest's device names would "
			      "shift)");
	} else if (!*why) {
		rc = 0;
	}
	sbuf_free(&stay);
	return rc;
}

int convert_target_make(json_object *saved, enum vbus bus, int pve_major,
			struct convert_target *t, char **err)
{
	memset(t, 0, sizeof *t);
	*err = NULL;
	struct pvecfg_hw hw = {0};
	struct name_map keys = {0};
	struct sbuf del = {0};
	int rc = -1;
	if (pvecfg_hw_read(saved, &hw) < 0) {
		*err = strdup("out of memory");
		return -1;
	}
	const char *bootdisk = json_text(saved, "bootdisk");
	const char *boot = json_text(saved, "boot");
	/* IDE (or SATA) disks in PVE order ide0, ide1, ide3 (hw is sorted by
	 * key) */
	struct bus_count bc = count_buses(&hw);
	if (bc.mixed) {
		*err = strdup("the guest has disks on more than one bus (IDE, SATA, SCSI or virtio); "
			      "pvagent converts only guests whose disks are all on IDE, all on SATA "
			      "or on one emulated SCSI controller, beside virtio-blk ones at most");
		goto out;
	}
	t->sata = bc.sata > 0;
	t->scsi_ctl = bc.lsi > 0;
	t->ndisks = bc.ide + bc.sata + bc.lsi;
	/* an emulated SCSI controller: the disks keep their keys */
	enum disk_bus src = t->scsi_ctl ? BUS_NONE : t->sata ? BUS_SATA : BUS_IDE;
	const struct pvecfg_disk *bd = pvecfg_boot_disk(&hw, boot, bootdisk);
	unsigned idx = 0;
	for (size_t i = 0; t->scsi_ctl && i < hw.n_disks; i++) {
		const struct pvecfg_disk *d = &hw.disks[i];
		if (not_a_disk(d) || d->bus != BUS_SCSI)
			continue;
		if (d == bd && !(t->boot_key = strdup(d->key))) {
			*err = strdup("out of memory");
			goto out;
		}
		if (d == bd)
			t->boot_index = idx;
		idx++;
	}
	for (size_t i = 0; i < hw.n_disks; i++) {
		const struct pvecfg_disk *d = &hw.disks[i];
		if (not_a_disk(d) || d->bus != src)
			continue;
		char *nk = strprintf("%s%u", bus == VBUS_VIRTIO_SCSI ? "scsi" : "virtio", idx);
		const char *old = json_text(saved, d->key);
		char *dropped = NULL;
		char *nv = old ? disk_value_for(old, bus, pve_major, &dropped) : NULL;
		if (!nk || !nv || name_map_add(&keys, d->key, nk) < 0 ||
		    pve_params_add(&t->set, nk, nv) < 0 ||
		    strv_add(&t->lines, &t->n_lines,
			     strprintf("%s -> %s: %s", d->key, nk, nv)) < 0 ||
		    (dropped && strv_add(&t->lines, &t->n_lines,
					 strprintf("%s: %s dropped (PVE %d has no such drive "
						   "option)", d->key, dropped, pve_major)) < 0) ||
		    sbuf_addf(&del, "%s%s", del.len ? "," : "", d->key) < 0) {
			free(dropped);
			free(nk);
			free(nv);
			*err = strprintf("%s: cannot read '%s'", d->key, old ? old : "");
			goto out;
		}
		if (d == bd) {
			t->boot_key = strdup(nk);
			t->boot_index = idx;
		}
		free(dropped);
		free(nk);
		free(nv);
		idx++;
	}
	for (size_t i = 0; i < hw.n_nics; i++) {
		const struct pvecfg_nic *n = &hw.nics[i];
		const char *model = nic_model_moves(n->model);
		/* one driver at a time (e1000 and e1000e are both em); NICs of
		 * another model keep it, their names do not depend on the others */
		if (!model || (t->nic_model && strcmp(nic_driver(t->nic_model), nic_driver(model)) != 0))
			continue;
		if (!t->nic_model)
			t->nic_model = model;
		const char *old = json_text(saved, n->key);
		char *nv = old ? nic_value_virtio(old) : NULL;
		if (!nv || pve_params_add(&t->set, n->key, nv) < 0 ||
		    strv_add(&t->lines, &t->n_lines,
			     strprintf("%s: %s -> %s", n->key, old, nv)) < 0) {
			free(nv);
			*err = strprintf("%s: cannot read '%s'", n->key, old ? old : "");
			goto out;
		}
		free(nv);
		t->nnics++;
	}
	if (t->scsi_ctl) {
		/* same keys, same boot order: only the controller changes */
		pve_params_add(&t->set, "scsihw", "virtio-scsi-single");
		strv_add(&t->lines, &t->n_lines, strprintf("scsihw: %s -> virtio-scsi-single",
							   hw.scsihw ? hw.scsihw : "(default lsi)"));
	} else if (t->ndisks) {
		if (bus == VBUS_VIRTIO_SCSI) {
			const char *hwv = json_text(saved, "scsihw");
			if (!hwv || strncmp(hwv, "virtio-scsi", 11) != 0) {
				pve_params_add(&t->set, "scsihw", "virtio-scsi-single");
				strv_add(&t->lines, &t->n_lines,
					 strprintf("scsihw: %s -> virtio-scsi-single",
						   hwv ? hwv : "(default lsi)"));
			}
		}
		if (boot && strncmp(boot, "order=", 6) == 0) {
			char *nb = boot_order_map(boot, &keys);
			if (!nb || pve_params_add(&t->set, "boot", nb) < 0 ||
			    strv_add(&t->lines, &t->n_lines,
				     strprintf("boot: %s -> %s", boot, nb)) < 0) {
				free(nb);
				*err = strdup("out of memory");
				goto out;
			}
			free(nb);
		} else if (t->boot_key) {
			/* legacy "boot: cdn" + bootdisk (PVE <= 6.2 has no order=) */
			pve_params_add(&t->set, "bootdisk", t->boot_key);
			strv_add(&t->lines, &t->n_lines,
				 strprintf("bootdisk: %s -> %s", bootdisk ? bootdisk : "(none)",
					   t->boot_key));
		}
	}
	if (t->set.failed) {
		*err = strdup("out of memory");
		goto out;
	}
	t->delete_keys = del.len ? sbuf_steal(&del) : NULL;
	rc = 0;
out:
	sbuf_free(&del);
	name_map_free(&keys);
	pvecfg_hw_free(&hw);
	if (rc < 0)
		convert_target_free(t);
	return rc;
}

/* Are two config values the same (property strings in any order)? */
static bool value_same(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0 || propstr_equal(a, b);
}

bool convert_target_applied(const struct convert_target *t, json_object *current)
{
	return guest_config_shows(current, &t->set, t->delete_keys);
}

static bool is_unused_key(const char *k)
{
	return strncmp(k, "unused", 6) == 0;
}

/* Keys the rollback leaves alone: what is not a parameter of PVE's config
 * method (parent, snaptime, vmstate, runningmachine, runningcpu, meta: PVE
 * keeps them for itself and refuses them), PVE's bookkeeping that is (the
 * digest, the lock, the generation id; vmgenid is root@pam's alone) and
 * unusedN (deleting one destroys its volume). */
static bool meta_key(const char *k)
{
	const struct pvekey *pk = pvekey_lookup(PVEKEY_QEMU, k);
	return !pk || !(pk->where & PVEKEY_CONFIG) || strcmp(k, "digest") == 0 ||
	       strcmp(k, "lock") == 0 || strcmp(k, "vmgenid") == 0 || is_unused_key(k);
}

int convert_restore_plan(json_object *saved, json_object *current, char **delete_keys,
			 struct pve_params *set)
{
	struct sbuf del = {0};
	*delete_keys = NULL;
	json_object_object_foreach(current, k, v) {
		(void)v;
		if (meta_key(k) || json_object_object_get_ex(saved, k, NULL))
			continue;
		if (sbuf_addf(&del, "%s%s", del.len ? "," : "", k) < 0) {
			sbuf_free(&del);
			return -1;
		}
	}
	json_object_object_foreach(saved, k2, v2) {
		(void)v2;
		if (meta_key(k2))
			continue;
		const char *want = json_text(saved, k2);
		if (!value_same(json_text(current, k2), want))
			pve_params_add(set, k2, want ? want : "");
	}
	if (set->failed) {
		sbuf_free(&del);
		return -1;
	}
	*delete_keys = del.len ? sbuf_steal(&del) : NULL;
	return 0;
}

