/* pvecfg.c - PVE property strings and the disks/NICs of a guest config
 * (see pvecfg.h). */
#include "pvecfg.h"

#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

void propstr_free(struct propstr *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].key);
		free(p->v[i].value);
	}
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

static int propstr_append(struct propstr *p, const char *key, size_t klen, const char *val,
			  size_t vlen)
{
	struct propkv *nv = realloc(p->v, (p->n + 1) * sizeof *nv);
	if (!nv)
		return -1;
	p->v = nv;
	struct propkv kv = {key ? strndup(key, klen) : NULL, strndup(val, vlen)};
	if ((key && !kv.key) || !kv.value) {
		free(kv.key);
		free(kv.value);
		return -1;
	}
	p->v[p->n++] = kv;
	return 0;
}

int propstr_parse(const char *s, struct propstr *out)
{
	out->v = NULL;
	out->n = 0;
	while (*s) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		if (len == 0)
			goto fail;
		const char *eq = memchr(s, '=', len);
		int rc = eq ? propstr_append(out, s, (size_t)(eq - s), eq + 1,
					     len - (size_t)(eq - s) - 1)
			    : propstr_append(out, NULL, 0, s, len);
		if (rc < 0)
			goto fail;
		s += len;
		if (*s == ',') {
			s++;
			if (!*s)
				goto fail;
		}
	}
	return 0;
fail:
	propstr_free(out);
	return -1;
}

static struct propkv *find(const struct propstr *p, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (key ? (p->v[i].key && strcmp(p->v[i].key, key) == 0) : !p->v[i].key)
			return &p->v[i];
	return NULL;
}

const char *propstr_get(const struct propstr *p, const char *key)
{
	const struct propkv *kv = find(p, key);
	return kv ? kv->value : NULL;
}

int propstr_set(struct propstr *p, const char *key, const char *value)
{
	struct propkv *kv = find(p, key);
	if (!kv)
		return propstr_append(p, key, key ? strlen(key) : 0, value, strlen(value));
	char *v = strdup(value);
	if (!v)
		return -1;
	free(kv->value);
	kv->value = v;
	return 0;
}

char *propstr_format(const struct propstr *p)
{
	struct sbuf b = {0};
	int rc = 0;
	for (size_t i = 0; i < p->n && rc == 0; i++) {
		if (i)
			rc |= sbuf_addc(&b, ',');
		if (p->v[i].key)
			rc |= sbuf_addf(&b, "%s=", p->v[i].key);
		rc |= sbuf_add(&b, p->v[i].value);
	}
	if (rc) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

/* How many entries of p are key=value (key NULL: a leading value). */
static size_t count_kv(const struct propstr *p, const char *key, const char *value)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n; i++)
		n += (key ? p->v[i].key && strcmp(p->v[i].key, key) == 0 : !p->v[i].key) &&
		     strcmp(p->v[i].value, value) == 0;
	return n;
}

bool propstr_equal(const char *a, const char *b)
{
	struct propstr pa, pb;
	if (propstr_parse(a, &pa) < 0)
		return false;
	if (propstr_parse(b, &pb) < 0) {
		propstr_free(&pa);
		return false;
	}
	/* The same entries as multisets: with a key given twice (or two
	 * values without a key), looking up the first one only made a string
	 * unequal to itself. */
	bool eq = pa.n == pb.n;
	for (size_t i = 0; eq && i < pa.n; i++)
		eq = count_kv(&pa, pa.v[i].key, pa.v[i].value) ==
		     count_kv(&pb, pa.v[i].key, pa.v[i].value);
	propstr_free(&pa);
	propstr_free(&pb);
	return eq;
}

static const struct {
	const char *prefix;
	enum disk_bus bus;
	int max;
} buses[] = {
	{"ide", BUS_IDE, 3}, {"sata", BUS_SATA, 5}, {"scsi", BUS_SCSI, 30}, {"virtio", BUS_VIRTIO, 15},
};

enum disk_bus pvecfg_disk_key(const char *key, int *index)
{
	for (size_t i = 0; i < sizeof buses / sizeof buses[0]; i++) {
		size_t pl = strlen(buses[i].prefix);
		if (strncmp(key, buses[i].prefix, pl) != 0)
			continue;
		const char *d = key + pl;
		if (!*d || strspn(d, "0123456789") != strlen(d) || strlen(d) > 2 ||
		    (d[0] == '0' && d[1]))
			return BUS_NONE;
		int n = atoi(d);
		if (n > buses[i].max)
			return BUS_NONE;
		if (index)
			*index = n;
		return buses[i].bus;
	}
	return BUS_NONE;
}

const char *pvecfg_bus_name(enum disk_bus b)
{
	switch (b) {
	case BUS_IDE: return "ide";
	case BUS_SATA: return "sata";
	case BUS_SCSI: return "scsi";
	case BUS_VIRTIO: return "virtio";
	default: return "-";
	}
}

static const char *const nic_models[] = {
	"e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551",
	"i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3",
	NULL,
};

static bool is_nic_model(const char *s)
{
	for (size_t i = 0; nic_models[i]; i++)
		if (strcmp(nic_models[i], s) == 0)
			return true;
	return false;
}

static bool is_net_key(const char *key)
{
	const char *d = key + 3;
	return strncmp(key, "net", 3) == 0 && *d && strspn(d, "0123456789") == strlen(d) &&
	       strlen(d) <= 2;
}

static int cmp_disk(const void *a, const void *b)
{
	const struct pvecfg_disk *x = a, *y = b;
	return x->bus != y->bus ? (int)x->bus - (int)y->bus : x->index - y->index;
}

static int cmp_nic(const void *a, const void *b)
{
	const struct pvecfg_nic *x = a, *y = b;
	return atoi(x->key + 3) - atoi(y->key + 3);
}

static int read_disk(struct pvecfg_hw *hw, const char *key, enum disk_bus bus, int index,
		     const char *val)
{
	struct propstr p;
	if (propstr_parse(val, &p) < 0)
		return -1;
	const char *vol = propstr_get(&p, NULL);
	if (!vol)
		vol = propstr_get(&p, "file");
	const char *media = propstr_get(&p, "media");
	struct pvecfg_disk *nd = realloc(hw->disks, (hw->n_disks + 1) * sizeof *nd);
	if (!nd) {
		propstr_free(&p);
		return -1;
	}
	hw->disks = nd;
	struct pvecfg_disk d = {strdup(key), bus, index, strdup(vol ? vol : ""),
				media && strcmp(media, "cdrom") == 0};
	propstr_free(&p);
	if (!d.key || !d.volume) {
		free(d.key);
		free(d.volume);
		return -1;
	}
	hw->disks[hw->n_disks++] = d;
	return 0;
}

static int read_nic(struct pvecfg_hw *hw, const char *key, const char *val)
{
	struct propstr p;
	if (propstr_parse(val, &p) < 0)
		return -1;
	const char *model = propstr_get(&p, "model"), *mac = propstr_get(&p, "macaddr");
	for (size_t i = 0; !model && i < p.n; i++) {
		const char *k = p.v[i].key ? p.v[i].key : p.v[i].value;
		if (is_nic_model(k)) {
			model = k;
			if (p.v[i].key && !mac)
				mac = p.v[i].value;
		}
	}
	const char *bridge = propstr_get(&p, "bridge");
	struct pvecfg_nic *nn = realloc(hw->nics, (hw->n_nics + 1) * sizeof *nn);
	if (!nn) {
		propstr_free(&p);
		return -1;
	}
	hw->nics = nn;
	struct pvecfg_nic n = {strdup(key), strdup(model ? model : "?"),
			       mac ? strdup(mac) : NULL, bridge ? strdup(bridge) : NULL};
	propstr_free(&p);
	if (!n.key || !n.model || (mac && !n.mac) || (bridge && !n.bridge)) {
		free(n.key);
		free(n.model);
		free(n.mac);
		free(n.bridge);
		return -1;
	}
	hw->nics[hw->n_nics++] = n;
	return 0;
}

int pvecfg_hw_read(json_object *config, struct pvecfg_hw *out)
{
	memset(out, 0, sizeof *out);
	/* PVE's answer, not ours: "data" may be null, an array, ... */
	if (!json_object_is_type(config, json_type_object)) {
		errno = EINVAL;
		return -1;
	}
	json_object_object_foreach(config, key, v) {
		const char *val = json_object_get_string(v);
		if (!val)
			continue; /* a JSON null: the key is not set */
		int index = 0;
		enum disk_bus bus = pvecfg_disk_key(key, &index);
		int rc = 0;
		if (bus != BUS_NONE)
			rc = read_disk(out, key, bus, index, val);
		else if (is_net_key(key))
			rc = read_nic(out, key, val);
		else if (strcmp(key, "scsihw") == 0 && !(out->scsihw = strdup(val)))
			rc = -1;
		else if (strcmp(key, "bootdisk") == 0 && !(out->bootdisk = strdup(val)))
			rc = -1;
		if (rc < 0) {
			pvecfg_hw_free(out);
			return -1;
		}
	}
	if (out->n_disks)
		qsort(out->disks, out->n_disks, sizeof *out->disks, cmp_disk);
	if (out->n_nics)
		qsort(out->nics, out->n_nics, sizeof *out->nics, cmp_nic);
	return 0;
}

void pvecfg_hw_free(struct pvecfg_hw *hw)
{
	for (size_t i = 0; i < hw->n_disks; i++) {
		free(hw->disks[i].key);
		free(hw->disks[i].volume);
	}
	for (size_t i = 0; i < hw->n_nics; i++) {
		free(hw->nics[i].key);
		free(hw->nics[i].model);
		free(hw->nics[i].mac);
		free(hw->nics[i].bridge);
	}
	free(hw->disks);
	free(hw->nics);
	free(hw->scsihw);
	free(hw->bootdisk);
	memset(hw, 0, sizeof *hw);
}

/* hw's disk called key (len bytes), not a cdrom. */
static const struct pvecfg_disk *disk_named(const struct pvecfg_hw *hw, const char *key, size_t len)
{
	for (size_t i = 0; key && i < hw->n_disks; i++)
		if (!hw->disks[i].cdrom && strlen(hw->disks[i].key) == len &&
		    strncmp(hw->disks[i].key, key, len) == 0)
			return &hw->disks[i];
	return NULL;
}

const struct pvecfg_disk *pvecfg_boot_disk(const struct pvecfg_hw *hw, const char *boot,
					   const char *bootdisk)
{
	const char *order = boot ? strstr(boot, "order=") : NULL;
	if (order) {
		for (const char *s = order + 6; *s && *s != ',';) {
			size_t len = strcspn(s, ";,");
			const struct pvecfg_disk *d = disk_named(hw, s, len);
			if (d)
				return d;
			s += len;
			if (*s == ';')
				s++;
		}
	} else {
		/* legacy: "[legacy=]cdn"; bootorder_from_legacy gives only the
		 * bootdisk a disk's bootindex, and only with 'c' */
		const char *letters = boot ? boot : "cdn";
		if (strncmp(letters, "legacy=", 7) == 0)
			letters += 7;
		size_t n = strcspn(letters, ",");
		const struct pvecfg_disk *d =
			memchr(letters, 'c', n) && bootdisk ? disk_named(hw, bootdisk, strlen(bootdisk))
							    : NULL;
		if (d)
			return d;
	}
	for (size_t i = 0; i < hw->n_disks; i++)
		if (!hw->disks[i].cdrom)
			return &hw->disks[i];
	return NULL;
}

char *pvecfg_hw_disk_summary(const struct pvecfg_hw *hw, const char *boot)
{
	const struct pvecfg_disk *d = pvecfg_boot_disk(hw, boot, hw->bootdisk);
	if (!d)
		return strdup("-");
	if (d->bus == BUS_SCSI && hw->scsihw)
		return strprintf("scsi (%s)", hw->scsihw);
	if (d->bus == BUS_SCSI)
		return strdup("scsi (lsi)");
	return strdup(pvecfg_bus_name(d->bus));
}

char *pvecfg_hw_nic_summary(const struct pvecfg_hw *hw)
{
	if (!hw->n_nics)
		return strdup("-");
	struct sbuf b = {0};
	int rc = 0;
	for (size_t i = 0; i < hw->n_nics; i++) {
		bool seen = false;
		for (size_t j = 0; j < i; j++)
			seen |= strcmp(hw->nics[j].model, hw->nics[i].model) == 0;
		if (!seen)
			rc |= sbuf_addf(&b, "%s%s", b.len ? "," : "", hw->nics[i].model);
	}
	if (rc) {
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
}

int pvecfg_parse_size(const char *s, double *out)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	double m = 1;
	switch (toupper((unsigned char)*end)) {
	case 0: m = 1; break;
	case 'K': m = 1024.0; break;
	case 'M': m = 1024.0 * 1024; break;
	case 'G': m = 1024.0 * 1024 * 1024; break;
	case 'T': m = 1024.0 * 1024 * 1024 * 1024; break;
	default: return -1;
	}
	if (*end && end[1] && !(toupper((unsigned char)end[1]) == 'B' && !end[2]) &&
	    !(toupper((unsigned char)end[1]) == 'I' && toupper((unsigned char)end[2]) == 'B' &&
	      !end[3]))
		return -1;
	*out = v * m;
	return 0;
}
