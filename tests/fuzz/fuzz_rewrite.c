/* fuzz_rewrite.c - fuzz targets for the rewrite.h transforms. Each input is
 * a guest file; the transform runs with fixed, realistic names (em0 ->
 * vtnet0, eth0 -> ens3, ad0/ada0 -> vtbd0, sda -> vda, a few labels) and
 * must keep the contract of rewrite.h, not merely not crash:
 *   - idempotent: f(f(x)) == f(x), per phase, and the second pass accepts
 *     what the first one wrote;
 *   - staged equals direct: FINAL(SWITCH(PREPARE(x))) == FINAL(x), and
 *     FINAL accepts every input PREPARE accepts (the staged result may end
 *     with the newline PREPARE added when it appended a line after a last
 *     line without one: rewrite.h keeps a missing final newline "unless a
 *     line has to be appended");
 *   - lines it does not own (per transform below) survive byte for byte
 *     and in order. */
#include "fuzz.h"

#include "osprof.h"
#include "rewrite.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lines --------------------------------------------------------------- */

struct fline {
	const char *s;
	size_t len; /* without the '\n' */
};

struct flines {
	struct fline *v;
	size_t n;
};

static int flines_split(const char *text, struct flines *ls)
{
	ls->v = NULL;
	ls->n = 0;
	size_t cap = 0;
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		if (ls->n == cap) {
			cap = cap ? cap * 2 : 16;
			struct fline *v = realloc(ls->v, cap * sizeof *v);
			if (!v) {
				free(ls->v);
				ls->v = NULL;
				return -1;
			}
			ls->v = v;
		}
		ls->v[ls->n++] = (struct fline){p, len};
		p += len;
		if (*p)
			p++;
	}
	return 0;
}

static int fline_has(const struct fline *l, const char *word)
{
	size_t wl = strlen(word);
	for (size_t i = 0; i + wl <= l->len; i++)
		if (memcmp(l->s + i, word, wl) == 0)
			return 1;
	return 0;
}

static int fline_has_any(const struct fline *l, const char *const *words)
{
	for (; *words; words++)
		if (fline_has(l, *words))
			return 1;
	return 0;
}

/* "line N: 'a' / 'b'" for the first line where a and b differ. */
static void first_diff(const char *a, const char *b, char *buf, size_t size)
{
	size_t line = 1, i = 0;
	while (a[i] && a[i] == b[i]) {
		if (a[i] == '\n')
			line++;
		i++;
	}
	size_t s = i;
	while (s > 0 && a[s - 1] != '\n')
		s--;
	size_t la = strcspn(a + s, "\n"), lb = strcspn(b + s, "\n");
	snprintf(buf, size, "line %zu: '%.*s'%s / '%.*s'%s", line, (int)la, a + s,
		 a[s + la] ? "" : " (no newline)", (int)lb, b + s, b[s + lb] ? "" : " (no newline)");
}

/* staged is direct plus the final newline that input lacks */
static int newline_added(const char *in, const char *direct, const char *staged)
{
	size_t n = strlen(in), d = strlen(direct);
	return n && in[n - 1] != '\n' && strlen(staged) == d + 1 && staged[d] == '\n' &&
	       memcmp(staged, direct, d) == 0;
}

/* ---- the generic property check -------------------------------------------- */

struct xform {
	const char *name;
	int phased; /* PREPARE/SWITCH/FINAL differ; else only one phase is run */
	int (*apply)(const char *in, enum rw_phase ph, char **out, char **err);
	/* Mark the input lines the transform may change or drop (mask[i] = 1);
	 * NULL: it owns none (it only adds lines). */
	void (*owned)(const struct flines *ls, char *mask);
};

static int keeps_unowned(const struct xform *x, enum rw_phase ph, const char *in,
			 const char *out)
{
	struct flines li, lo;
	if (flines_split(in, &li) < 0)
		return fuzz_fail("out of memory");
	if (flines_split(out, &lo) < 0) {
		free(li.v);
		return fuzz_fail("out of memory");
	}
	char *mask = calloc(li.n ? li.n : 1, 1);
	if (!mask) {
		free(li.v);
		free(lo.v);
		return fuzz_fail("out of memory");
	}
	if (x->owned)
		x->owned(&li, mask);
	int rc = 0;
	size_t j = 0;
	for (size_t i = 0; i < li.n && rc == 0; i++) {
		if (mask[i])
			continue;
		while (j < lo.n && !(lo.v[j].len == li.v[i].len &&
				     memcmp(lo.v[j].s, li.v[i].s, li.v[i].len) == 0))
			j++;
		if (j == lo.n)
			rc = fuzz_fail("%s %s: line %zu '%.*s' is not its own, yet it was dropped, "
				       "changed or moved", x->name, rw_phase_name(ph), i + 1,
				       (int)li.v[i].len, li.v[i].s);
		j++;
	}
	free(mask);
	free(li.v);
	free(lo.v);
	return rc;
}

static int check(const struct xform *x, const uint8_t *d, size_t n)
{
	static const enum rw_phase phases[] = {RW_PREPARE, RW_SWITCH, RW_FINAL};
	char *in = fuzz_str(d, n);
	if (!in)
		return fuzz_fail("out of memory");
	char *once[3] = {NULL, NULL, NULL};
	char diff[512];
	int rc = 0;
	for (size_t i = 0; i < (x->phased ? 3u : 1u) && rc == 0; i++) {
		enum rw_phase ph = phases[i];
		char *err = NULL, *twice = NULL;
		if (x->apply(in, ph, &once[i], &err) < 0) {
			free(err); /* refusing malformed input is fine */
			continue;
		}
		if (x->apply(once[i], ph, &twice, &err) < 0) {
			rc = fuzz_fail("%s %s: the second pass refuses the first pass's output: %s",
				       x->name, rw_phase_name(ph), err ? err : "?");
		} else if (strcmp(twice, once[i]) != 0) {
			first_diff(once[i], twice, diff, sizeof diff);
			rc = fuzz_fail("%s %s: not idempotent, the second pass changes %s", x->name,
				       rw_phase_name(ph), diff);
		} else {
			rc = keeps_unowned(x, ph, in, once[i]);
		}
		free(err);
		free(twice);
	}
	if (rc == 0 && x->phased && once[0]) {
		char *sw = NULL, *fin = NULL, *err = NULL;
		if (!once[2])
			rc = fuzz_fail("%s: FINAL refuses an input PREPARE accepts", x->name);
		else if (x->apply(once[0], RW_SWITCH, &sw, &err) < 0)
			rc = fuzz_fail("%s: SWITCH refuses PREPARE's output: %s", x->name,
				       err ? err : "?");
		else if (x->apply(sw, RW_FINAL, &fin, &err) < 0)
			rc = fuzz_fail("%s: FINAL refuses SWITCH's output: %s", x->name,
				       err ? err : "?");
		else if (strcmp(fin, once[2]) != 0 && !newline_added(in, once[2], fin)) {
			first_diff(once[2], fin, diff, sizeof diff);
			rc = fuzz_fail("%s: FINAL(SWITCH(PREPARE(x))) differs from FINAL(x) at %s",
				       x->name, diff);
		}
		free(err);
		free(sw);
		free(fin);
	}
	for (size_t i = 0; i < 3; i++)
		free(once[i]);
	free(in);
	return rc;
}

/* ---- the transforms with their fixed parameters ------------------------------ */

static void own_words(const struct flines *ls, char *mask, const char *const *words)
{
	for (size_t i = 0; i < ls->n; i++)
		mask[i] = (char)fline_has_any(&ls->v[i], words);
}

/* loader.conf (strict) and rc.conf (shell) variables: FreeBSD 9.0's
 * virtio-kmod lines from its OS profile. */
static void kmod_lines(const struct rw_kv **kv, size_t *n)
{
	const struct os_profile p = {.family = OS_FREEBSD};
	osprof_loader_lines(&p, VBUS_VIRTIO_BLK, kv, n);
}

static void own_kv(const struct flines *ls, char *mask)
{
	const struct rw_kv *kv;
	size_t n;
	kmod_lines(&kv, &n);
	for (size_t i = 0; i < ls->n; i++)
		for (size_t k = 0; k < n && !mask[i]; k++)
			mask[i] = (char)fline_has(&ls->v[i], kv[k].key);
}

static int kv_ensure(const char *in, int strict, char **out, char **err)
{
	const struct rw_kv *kv;
	size_t n;
	kmod_lines(&kv, &n);
	return rw_kv_ensure(strict ? "boot/loader.conf" : "etc/rc.conf", in, kv, n, strict, out,
			    err);
}

static int apply_loader(const char *in, enum rw_phase ph, char **out, char **err)
{
	return kv_ensure(in, 1, out, err);
}

static int apply_rcvars(const char *in, enum rw_phase ph, char **out, char **err)
{
	return kv_ensure(in, 0, out, err);
}

/* After ensuring, every key reads back as its value. */
static int kv_reads_back(const uint8_t *d, size_t n, int strict)
{
	char *in = fuzz_str(d, n), *out = NULL, *err = NULL;
	if (!in)
		return fuzz_fail("out of memory");
	int rc = 0;
	if (kv_ensure(in, strict, &out, &err) == 0) {
		const struct rw_kv *kv;
		size_t nk;
		kmod_lines(&kv, &nk);
		for (size_t k = 0; k < nk && rc == 0; k++) {
			char *v = NULL;
			if (rw_kv_get("f", out, kv[k].key, strict, &v, &err) < 0)
				rc = fuzz_fail("kv: get %s refuses ensure's output: %s", kv[k].key,
					       err ? err : "?");
			else if (!v || strcmp(v, kv[k].value) != 0)
				rc = fuzz_fail("kv: %s reads back as '%s', not '%s'", kv[k].key,
					       v ? v : "(unset)", kv[k].value);
			free(v);
		}
	}
	free(err);
	free(out);
	free(in);
	return rc;
}

int fuzz_rw_kv(const uint8_t *d, size_t n)
{
	static const struct xform loader = {"loader.conf", 0, apply_loader, own_kv};
	static const struct xform rcvars = {"rc.conf variables", 0, apply_rcvars, own_kv};
	int rc = check(&loader, d, n);
	if (rc == 0)
		rc = check(&rcvars, d, n);
	if (rc == 0)
		rc = kv_reads_back(d, n, 1);
	if (rc == 0)
		rc = kv_reads_back(d, n, 0);
	return rc;
}

static const char *const rc_words[] = {"em0", "vtnet0", NULL};

static void own_rc(const struct flines *ls, char *mask)
{
	own_words(ls, mask, rc_words);
}

static int apply_rcconf(const char *in, enum rw_phase ph, char **out, char **err)
{
	return rw_rcconf_nic("etc/rc.conf", in, "em0", "vtnet0", ph, out, err);
}

int fuzz_rw_rcconf(const uint8_t *d, size_t n)
{
	static const struct xform x = {"rc.conf NIC", 1, apply_rcconf, own_rc};
	return check(&x, d, n);
}

/* fstab and GRUB: whole-disk renames as a FreeBSD 9 plan makes them (ada0
 * and its legacy ad0 alias) plus a Linux disk, and labels known under the
 * old and under the new name. Every device they touch is a /dev/ path. */
struct devmaps {
	struct name_map disks, labels;
	struct rw_devmaps dm;
};

static const struct rw_devmaps *devmaps(void)
{
	static struct devmaps m;
	static int ready;
	if (!ready) {
		static const char *const disks[][2] = {
			{"ada0", "vtbd0"}, {"ad0", "vtbd0"}, {"ada1", "vtbd1"}, {"sda", "vda"},
		};
		static const char *const labels[][2] = {
			{"ad0s1a", "/dev/ufsid/4f13ff5d2bf8a1c6"},
			{"ada0p2", "/dev/gpt/rootfs"},
			{"vtbd0s1d", "/dev/ufsid/4f13ff5e6e0b97d3"},
			{"sda1", "UUID=0f6a2d1e-3c4b-4a5d-9e8f-1a2b3c4d5e6f"},
		};
		for (size_t i = 0; i < sizeof disks / sizeof disks[0]; i++)
			if (name_map_add(&m.disks, disks[i][0], disks[i][1]) < 0)
				return NULL;
		for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
			if (name_map_add(&m.labels, labels[i][0], labels[i][1]) < 0)
				return NULL;
		m.dm = (struct rw_devmaps){&m.disks, &m.labels};
		ready = 1;
	}
	return &m.dm;
}

static const char *const dev_words[] = {"/dev/", NULL};

static void own_dev(const struct flines *ls, char *mask)
{
	own_words(ls, mask, dev_words);
}

static int apply_fstab(const char *in, enum rw_phase ph, char **out, char **err)
{
	const struct rw_devmaps *dm = devmaps();
	struct sbuf notes = {0};
	if (!dm)
		return -1;
	int rc = rw_fstab("etc/fstab", in, dm, ph, out, &notes, err);
	sbuf_free(&notes);
	return rc;
}

/* rw_fstab_parse accepts exactly what rw_fstab accepts. */
static int fstab_parse_agrees(const uint8_t *d, size_t n)
{
	char *in = fuzz_str(d, n), *out = NULL, *err = NULL, *perr = NULL;
	if (!in)
		return fuzz_fail("out of memory");
	struct rw_fstab_ent *e = NULL;
	size_t ne = 0;
	int a = apply_fstab(in, RW_PREPARE, &out, &err);
	int b = rw_fstab_parse("etc/fstab", in, &e, &ne, &perr);
	int rc = 0;
	if (a != b)
		rc = fuzz_fail("fstab: rw_fstab says %d ('%s'), rw_fstab_parse %d ('%s')", a,
			       err ? err : "", b, perr ? perr : "");
	rw_fstab_ents_free(e, ne);
	free(perr);
	free(err);
	free(out);
	free(in);
	return rc;
}

int fuzz_rw_fstab(const uint8_t *d, size_t n)
{
	static const struct xform x = {"fstab", 1, apply_fstab, own_dev};
	if (!devmaps())
		return fuzz_fail("out of memory");
	int rc = check(&x, d, n);
	return rc == 0 ? fstab_parse_agrees(d, n) : rc;
}

static int apply_grub(const char *in, enum rw_phase ph, char **out, char **err)
{
	const struct rw_devmaps *dm = devmaps();
	struct sbuf notes = {0};
	if (!dm)
		return -1;
	int rc = rw_grub("boot/grub/menu.lst", in, dm, ph, out, &notes, err);
	sbuf_free(&notes);
	return rc;
}

int fuzz_rw_grub(const uint8_t *d, size_t n)
{
	static const struct xform x = {"grub", 1, apply_grub, own_dev};
	if (!devmaps())
		return fuzz_fail("out of memory");
	return check(&x, d, n);
}

/* initramfs modules: the Linux virtio-blk list of osprof, and virtio-scsi's
 * ('-' and '_' alike). Appends only, so it owns no line. */
static int apply_modules(const char *in, enum rw_phase ph, char **out, char **err)
{
	const struct os_profile p = {.family = OS_LINUX};
	const char *const *blk, *const *scsi;
	size_t nb, ns;
	osprof_initramfs_modules(&p, VBUS_VIRTIO_BLK, &blk, &nb);
	osprof_initramfs_modules(&p, VBUS_VIRTIO_SCSI, &scsi, &ns);
	char *mid = NULL;
	if (rw_modules_ensure("etc/initramfs-tools/modules", in, blk, nb, &mid, err) < 0)
		return -1;
	int rc = rw_modules_ensure("etc/initramfs-tools/modules", mid, scsi, ns, out, err);
	free(mid);
	return rc;
}

int fuzz_rw_modules(const uint8_t *d, size_t n)
{
	static const struct xform x = {"initramfs modules", 0, apply_modules, NULL};
	return check(&x, d, n);
}

/* ifupdown: a stanza (its header and option lines up to a blank line,
 * comment or the next stanza keyword) is owned when its header names eth0
 * or ens3; so is any line naming them. */
static const char *const if_words[] = {"eth0", "ens3", NULL};

static void own_if(const struct flines *ls, char *mask)
{
	static const char *const starts[] = {"iface", "mapping", "auto", "source",
					     "source-directory", "rename", NULL};
	int in_owned = 0;
	for (size_t i = 0; i < ls->n; i++) {
		const struct fline *l = &ls->v[i];
		size_t w0 = 0;
		while (w0 < l->len && (l->s[w0] == ' ' || l->s[w0] == '\t'))
			w0++;
		size_t w1 = w0;
		while (w1 < l->len && l->s[w1] != ' ' && l->s[w1] != '\t')
			w1++;
		int stanza = w1 - w0 > 6 && memcmp(l->s + w0, "allow-", 6) == 0;
		for (size_t k = 0; starts[k] && !stanza; k++)
			stanza = strlen(starts[k]) == w1 - w0 && memcmp(l->s + w0, starts[k], w1 - w0) == 0;
		if (w0 == l->len || l->s[w0] == '#')
			in_owned = 0;
		else if (stanza)
			in_owned = fline_has_any(l, if_words);
		mask[i] = (char)(in_owned || fline_has_any(l, if_words));
	}
}

static int apply_interfaces(const char *in, enum rw_phase ph, char **out, char **err)
{
	return rw_interfaces_nic("etc/network/interfaces", in, "eth0", "ens3", ph, out, err);
}

int fuzz_rw_interfaces(const uint8_t *d, size_t n)
{
	static const struct xform x = {"interfaces", 1, apply_interfaces, own_if};
	return check(&x, d, n);
}

/* netplan: only adds lines. */
static int apply_netplan(const char *in, enum rw_phase ph, char **out, char **err)
{
	return rw_netplan_pin_mac("etc/netplan/50-cloud-init.yaml", in, "ens18",
				  "bc:24:11:00:00:01", out, err);
}

int fuzz_rw_netplan(const uint8_t *d, size_t n)
{
	static const struct xform x = {"netplan", 0, apply_netplan, NULL};
	return check(&x, d, n);
}

/* udev: rules setting NAME= are its own. */
static const char *const udev_words[] = {"NAME=\"", NULL};

static void own_udev(const struct flines *ls, char *mask)
{
	own_words(ls, mask, udev_words);
}

static int apply_udev(const char *in, enum rw_phase ph, char **out, char **err)
{
	static struct name_map nics;
	if (!nics.n && name_map_add(&nics, "eth0", "ens3") < 0)
		return -1;
	return rw_udev_net("etc/udev/rules.d/70-persistent-net.rules", in, &nics, out, err);
}

int fuzz_rw_udev(const uint8_t *d, size_t n)
{
	static const struct xform x = {"udev", 0, apply_udev, own_udev};
	return check(&x, d, n);
}
