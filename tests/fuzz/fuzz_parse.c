/* fuzz_parse.c - fuzz targets for pvagent's parsers: the INI dialect,
 * pvagent.conf, templates with expansion, PVE property strings and the
 * hardware read from a config answer, task UPIDs and log lines, and OS
 * facts with detection and the virtio plan. Besides not crashing, each
 * checks what its header promises about the result. */
#include "fuzz.h"

#include "conf.h"
#include "ini.h"
#include "osprof.h"
#include "pvecfg.h"
#include "task.h"
#include "tmpl.h"
#include "util.h"

#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Call fn on each '\n'-separated line of the input (as a C string). */
static int each_line(const uint8_t *d, size_t n, int (*fn)(const char *line))
{
	char *text = fuzz_str(d, n);
	if (!text)
		return fuzz_fail("out of memory");
	int rc = 0;
	char *save = NULL;
	for (char *l = strtok_r(text, "\n", &save); l && rc == 0; l = strtok_r(NULL, "\n", &save))
		rc = fn(l);
	free(text);
	return rc;
}

/* Messages about a file start with its name. */
static int names_file(const char *what, const char *path, const char *err)
{
	if (!err)
		return fuzz_fail("%s: failed without a message", what);
	if (strncmp(err, path, strlen(path)) != 0 && strcmp(err, "out of memory") != 0)
		return fuzz_fail("%s: message does not name the file: %s", what, err);
	return 0;
}

/* ---- ini ----------------------------------------------------------------- */

static const struct ini_key_spec fuzz_keys[] = {
	{"url", INI_KEY_REQUIRED}, {"line", INI_KEY_LIST}, {"net[n]", 0}, {NULL, 0},
};
static const struct ini_section_spec fuzz_spec[] = {
	{"pve", INI_SEC_REQUIRED, fuzz_keys},
	{"file", INI_SEC_LABEL, fuzz_keys},
	{"vars", INI_SEC_ANYKEY, NULL},
	{NULL, 0, NULL},
};

int fuzz_ini(const uint8_t *d, size_t n)
{
	struct ini ini;
	char *err = NULL;
	if (ini_parse("fuzz.ini", (const char *)d, n, &ini, &err) < 0) {
		int rc = names_file("ini", "fuzz.ini", err);
		free(err);
		return rc;
	}
	int rc = 0, prev = 0;
	for (size_t i = 0; i < ini.n_sections && rc == 0; i++) {
		const struct ini_section *s = &ini.sections[i];
		const struct ini_section *f = ini_find(&ini, s->name, s->label);
		if (!f || f > s || strcmp(f->name, s->name) != 0)
			rc = fuzz_fail("ini: ini_find does not find section %zu [%s]", i, s->name);
		if (s->line <= prev || s->line > ini.n_lines)
			rc = fuzz_fail("ini: section %zu at line %d after line %d (of %d)", i, s->line,
				       prev, ini.n_lines);
		prev = s->line;
		for (size_t k = 0; k < s->n_entries && rc == 0; k++) {
			const struct ini_entry *e = &s->entries[k], *g = ini_get(s, e->key);
			if (!g || g > e)
				rc = fuzz_fail("ini: ini_get does not find key %s", e->key);
			if (e->line <= prev || e->line > ini.n_lines)
				rc = fuzz_fail("ini: key %s at line %d after line %d", e->key, e->line,
					       prev);
			prev = e->line;
		}
		char *title = ini_section_title(s);
		if (!title)
			rc = fuzz_fail("out of memory");
		free(title);
	}
	struct sbuf errs = {0};
	if (rc == 0 && ini_validate(&ini, fuzz_spec, &errs) < 0)
		rc = fuzz_fail("out of memory");
	sbuf_free(&errs);
	ini_free(&ini);
	return rc;
}

/* ---- pvagent.conf ----------------------------------------------------------- */

int fuzz_conf(const uint8_t *d, size_t n)
{
	char *path = fuzz_file(d, n, "pvagent.conf");
	if (!path)
		return fuzz_fail("conf: cannot write the input file");
	struct conf c;
	char *err = NULL;
	int rc = 0;
	if (conf_load(path, &c, &err) < 0)
		rc = names_file("conf", path, err);
	else if (!c.pve.url || !c.paths.state || !c.ssh.known_hosts || !c.paths.templates)
		rc = fuzz_fail("conf: loaded without a url, state, known_hosts or template path");
	else
		conf_free(&c);
	free(err);
	fuzz_file_done(path);
	return rc;
}

/* ---- templates ------------------------------------------------------------ */

static int has_ctl(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static int kvlist_clean(const char *what, const struct tmpl_kvlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (has_ctl(l->items[i].value))
			return fuzz_fail("tmpl: %s %s holds a control character after expansion", what,
					 l->items[i].key);
	return 0;
}

/* Expand with the built-ins and, when all is true, every declared
 * variable set; every value must come out without control characters. */
static int expand(const struct tmpl *t, int all)
{
	struct tmpl_kvlist v = {0};
	static const char *const builtins[][2] = {
		{"name", "web1"},
		{"vmid", "100"},
		{"node", "pve1"},
		{"pubkey", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFuzz pvagent@host"},
	};
	int rc = 0;
	for (size_t i = 0; i < sizeof builtins / sizeof builtins[0] && rc == 0; i++)
		if (tmpl_kvlist_set(&v, builtins[i][0], builtins[i][1]) < 0)
			rc = fuzz_fail("out of memory");
	for (size_t i = 0; all && i < t->vars.n && rc == 0; i++)
		if (tmpl_kvlist_set(&v, t->vars.items[i].key, "192.0.2.7") < 0)
			rc = fuzz_fail("out of memory");
	struct tmpl_inst in;
	char *err = NULL;
	if (rc == 0 && tmpl_expand(t, &v, &in, &err) == 0) {
		rc = kvlist_clean("[pve]", &in.pve);
		for (size_t i = 0; i < in.n_files && rc == 0; i++)
			rc = kvlist_clean(in.files[i].section, &in.files[i].entries);
		if (rc == 0 && (has_ctl(in.source.clone.value) || has_ctl(in.guest.ip.value)))
			rc = fuzz_fail("tmpl: [source] clone or [guest] ip holds a control character");
		tmpl_inst_free(&in);
	} else if (rc == 0 && !err) {
		rc = fuzz_fail("tmpl: expansion failed without a message");
	}
	free(err);
	tmpl_kvlist_free(&v);
	return rc;
}

int fuzz_tmpl(const uint8_t *d, size_t n)
{
	char *path = fuzz_file(d, n, "fuzz.tmpl");
	if (!path)
		return fuzz_fail("tmpl: cannot write the input file");
	struct tmpl *t = NULL;
	char *err = NULL;
	int rc;
	if (tmpl_load_file(path, &t, &err) < 0) {
		rc = names_file("tmpl", path, err);
	} else {
		rc = expand(t, 0);
		if (rc == 0)
			rc = expand(t, 1);
		tmpl_free(t);
	}
	free(err);
	fuzz_file_done(path);
	return rc;
}

/* ---- property strings and hardware ---------------------------------------------- */

static int same_key(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

static int propstr_line(const char *s)
{
	struct propstr p;
	if (propstr_parse(s, &p) < 0)
		return 0;
	int rc = 0;
	char *back = propstr_format(&p);
	if (!back)
		rc = fuzz_fail("out of memory");
	else if (strcmp(back, s) != 0)
		rc = fuzz_fail("propstr: '%s' prints back as '%s'", s, back);
	else if (!propstr_equal(s, s))
		rc = fuzz_fail("propstr: '%s' is not equal to itself", s);
	free(back);
	/* the first entry of each key is the one propstr_get sees */
	for (size_t i = 0; i < p.n && rc == 0; i++) {
		const char *v = propstr_get(&p, p.v[i].key);
		size_t j = 0;
		while (!same_key(p.v[j].key, p.v[i].key))
			j++;
		if (v != p.v[j].value)
			rc = fuzz_fail("propstr: '%s': get(%s) is not the first entry", s,
				       p.v[i].key ? p.v[i].key : "(leading)");
	}
	if (rc == 0 && (propstr_set(&p, "size", "32G") < 0 ||
			strcmp(propstr_get(&p, "size"), "32G") != 0))
		rc = fuzz_fail("propstr: '%s': set size=32G does not read back", s);
	propstr_free(&p);
	return rc;
}

int fuzz_propstr(const uint8_t *d, size_t n)
{
	return each_line(d, n, propstr_line);
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v = NULL;
	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* The input is the "data" of GET /nodes/N/qemu/V/config: any JSON value. */
int fuzz_pvecfg_hw(const uint8_t *d, size_t n)
{
	char *text = fuzz_str(d, n);
	if (!text)
		return fuzz_fail("out of memory");
	enum json_tokener_error jerr;
	json_object *cfg = json_tokener_parse_verbose(text, &jerr);
	free(text);
	if (!cfg && jerr != json_tokener_success)
		return 0; /* not JSON ("null" is, and parses to NULL) */
	struct pvecfg_hw hw;
	int rc = 0;
	if (pvecfg_hw_read(cfg, &hw) < 0) {
		json_object_put(cfg);
		return 0;
	}
	for (size_t i = 0; i < hw.n_disks && rc == 0; i++) {
		const struct pvecfg_disk *k = &hw.disks[i];
		int idx = -1;
		if (pvecfg_disk_key(k->key, &idx) != k->bus || idx != k->index)
			rc = fuzz_fail("pvecfg: disk %s read as bus %d index %d", k->key, k->bus,
				       k->index);
		else if (i && (hw.disks[i - 1].bus > k->bus ||
			       (hw.disks[i - 1].bus == k->bus && hw.disks[i - 1].index >= k->index)))
			rc = fuzz_fail("pvecfg: disks not sorted at %s", k->key);
	}
	for (size_t i = 1; i < hw.n_nics && rc == 0; i++)
		if (atoi(hw.nics[i - 1].key + 3) > atoi(hw.nics[i].key + 3))
			rc = fuzz_fail("pvecfg: NICs not sorted at %s", hw.nics[i].key);
	const struct pvecfg_disk *boot = pvecfg_boot_disk(&hw, jstr(cfg, "boot"), jstr(cfg, "bootdisk"));
	if (rc == 0 && boot && boot->cdrom)
		rc = fuzz_fail("pvecfg: boots from the cdrom %s", boot->key);
	char *ds = pvecfg_hw_disk_summary(&hw, jstr(cfg, "boot")), *ns = pvecfg_hw_nic_summary(&hw);
	if (rc == 0 && (!ds || !ns))
		rc = fuzz_fail("out of memory");
	else if (rc == 0 && (strcmp(ds, "-") == 0) != !pvecfg_boot_disk(&hw, jstr(cfg, "boot"), NULL))
		rc = fuzz_fail("pvecfg: disk summary '%s' disagrees with the boot disk", ds);
	else if (rc == 0 && (strcmp(ns, "-") == 0) != (hw.n_nics == 0))
		rc = fuzz_fail("pvecfg: NIC summary '%s' for %zu NICs", ns, hw.n_nics);
	free(ds);
	free(ns);
	pvecfg_hw_free(&hw);
	json_object_put(cfg);
	return rc;
}

/* ---- tasks ------------------------------------------------------------------ */

static int upid_same(const struct task_upid *a, const struct task_upid *b)
{
	return strcmp(a->node, b->node) == 0 && a->pid == b->pid && a->pstart == b->pstart &&
	       a->starttime == b->starttime && strcmp(a->type, b->type) == 0 &&
	       strcmp(a->id, b->id) == 0 && strcmp(a->user, b->user) == 0;
}

/* A percentage is -1 (not in the line) or within 0..100, never NaN (a
 * "(nan%)" line, or sizes too large for a double, once gave NaN:
 * tests/fuzz/regress/task/percent-nan). */
static int pct_ok(double v)
{
	return v == -1 || (v >= 0 && v <= 100);
}

static int task_line(const char *line)
{
	struct task_upid u, again;
	int rc = 0;
	if (task_upid_parse(line, &u) == 0) {
		char *s = task_upid_format(&u);
		if (!s)
			rc = fuzz_fail("out of memory");
		else if (task_upid_parse(s, &again) < 0)
			rc = fuzz_fail("task: UPID '%s' formats as '%s', which does not parse", line, s);
		else {
			if (!upid_same(&u, &again))
				rc = fuzz_fail("task: UPID '%s' formats as '%s', which parses differently",
					       line, s);
			task_upid_free(&again);
		}
		free(s);
		task_upid_free(&u);
	}
	struct task_progress p;
	enum task_line_kind k = task_parse_line(line, &p);
	if (rc == 0 && !pct_ok(p.percent))
		rc = fuzz_fail("task: '%s' gives percent %g", line, p.percent);
	if (rc == 0 && (k == TASK_LINE_TRANSFER || k == TASK_LINE_MIGRATION) &&
	    !(p.total >= 0 && p.transferred >= 0))
		rc = fuzz_fail("task: '%s' gives %g of %g bytes", line, p.transferred, p.total);
	if (rc == 0 && k == TASK_LINE_DOWNTIME && p.downtime_ms < 0)
		rc = fuzz_fail("task: '%s' gives downtime %ld ms", line, p.downtime_ms);
	if (rc == 0 && k == TASK_LINE_FINISHED && p.duration_s < 0)
		rc = fuzz_fail("task: '%s' gives duration %ld s", line, p.duration_s);
	double bytes;
	const char *end = NULL;
	if (rc == 0 && task_parse_size(line, &bytes, &end) == 0 &&
	    (!(bytes >= 0) || !end || end <= line || end > line + strlen(line)))
		rc = fuzz_fail("task: size '%s' gives %g bytes", line, bytes);
	return rc;
}

int fuzz_task(const uint8_t *d, size_t n)
{
	return each_line(d, n, task_line);
}

/* ---- OS facts ----------------------------------------------------------------- */

/* A plan's targets are never themselves renamed: otherwise no transform
 * driven by it could be idempotent. */
static int plan_closed(const struct virtio_plan *vp)
{
	for (size_t i = 0; i < vp->disks.n; i++) {
		char *m = rw_map_device(&vp->disks, vp->disks.v[i].to);
		if (m) {
			int rc = fuzz_fail("osfacts: disk %s -> %s, which is renamed again to %s",
					   vp->disks.v[i].from, vp->disks.v[i].to, m);
			free(m);
			return rc;
		}
	}
	for (size_t i = 0; i < vp->nics.n; i++)
		if (name_map_get(&vp->nics, vp->nics.v[i].to))
			return fuzz_fail("osfacts: NIC %s -> %s, which is renamed again",
					 vp->nics.v[i].from, vp->nics.v[i].to);
	return 0;
}

static int plan(const struct os_profile *p, const struct os_facts *f)
{
	int rc = 0;
	for (int bus = VBUS_VIRTIO_BLK; bus <= VBUS_VIRTIO_SCSI && rc == 0; bus++) {
		struct virtio_plan vp;
		char *err = NULL;
		if (virtio_plan_init(&vp, p, (enum vbus)bus, 3, 2, f, &err) == 0) {
			rc = plan_closed(&vp);
			virtio_plan_free(&vp);
		}
		free(err);
	}
	char **cmds = NULL, *err = NULL;
	if (rc == 0 && osprof_fact_cmds(p, os_facts_get(f, "cat /etc/fstab"), &cmds, &err) == 0 &&
	    !cmds)
		rc = fuzz_fail("osfacts: no command list");
	osprof_cmds_free(cmds);
	free(err);
	return rc;
}

int fuzz_osfacts(const uint8_t *d, size_t n)
{
	char *text = fuzz_str(d, n);
	if (!text)
		return fuzz_fail("out of memory");
	struct os_facts f = {0};
	struct os_info oi;
	struct os_profile p;
	char *perr = NULL, *derr = NULL, *ferr = NULL;
	int rc = 0;
	if (os_facts_parse("facts", text, &f, &perr) == 0 && osprof_detect(&f, &oi, &derr) == 0) {
		if (oi.family == OS_UNKNOWN || !oi.id)
			rc = fuzz_fail("osfacts: detected without a family or id");
		if (rc == 0 && osprof_for(&oi, &p, &ferr) == 0) {
			char *desc = osprof_describe(&p);
			rc = desc ? plan(&p, &f) : fuzz_fail("out of memory");
			free(desc);
		}
		os_info_free(&oi);
	}
	free(perr);
	free(derr);
	free(ferr);
	os_facts_free(&f);
	free(text);
	return rc;
}
