/* pvecfgfile.c - reads a guest config file as PVE writes it (see
 * pvecfgfile.h): qemu-server PVE/QemuServer.pm parse_vm_config and
 * pve-container PVE/LXC/Config.pm parse_pct_config, strict. */
#include "pvecfgfile.h"

#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct rd {
	const char *name;
	unsigned line;
	char **err;
	bool qemu;
};

static int rfail(struct rd *r, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int rfail(struct rd *r, const char *field, const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	int rc = sbuf_addf(&b, "%s:%u: ", r->name, r->line);
	if (rc == 0 && field)
		rc = sbuf_addf(&b, "%s: ", field);
	if (rc == 0)
		rc = sbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	*r->err = rc < 0 ? NULL : sbuf_steal(&b);
	sbuf_free(&b);
	return -1;
}

/* PVE::Tools::decode_text: %XX escapes. */
static int decode_text(const char *s, size_t n, struct sbuf *out)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
		    isxdigit((unsigned char)s[i + 2])) {
			char hex[3] = {s[i + 1], s[i + 2], 0};
			if (sbuf_addc(out, (char)strtol(hex, NULL, 16)) < 0)
				return -1;
			i += 2;
		} else if (sbuf_addc(out, s[i]) < 0) {
			return -1;
		}
	}
	return 0;
}

/* The section being read: where its keys go, and its description. */
struct section {
	json_object *keys;
	bool pending, special, snapshot;
	struct sbuf descr;
	bool has_descr;
};

/* A section ends: its description (trailing white space stripped) becomes
 * its `description` key, as $finish_description does. */
static int finish_description(struct section *s)
{
	if (!s->has_descr || !s->keys)
		goto out;
	char *d = sbuf_steal(&s->descr);
	if (!d)
		return -1;
	size_t n = strlen(d);
	while (n && isspace((unsigned char)d[n - 1]))
		d[--n] = '\0';
	json_object_object_add(s->keys, "description", json_object_new_string(d));
	free(d);
out:
	sbuf_free(&s->descr);
	s->has_descr = false;
	return 0;
}

static bool key_ok(const char *k, size_t n, bool qemu)
{
	/* qemu: ^[a-z][a-z_\-]*\d*$; lxc: ^[a-z][a-z_]*\d*$ */
	if (n == 0 || !islower((unsigned char)k[0]))
		return false;
	size_t i = 1;
	while (i < n && (islower((unsigned char)k[i]) || k[i] == '_' || (qemu && k[i] == '-')))
		i++;
	while (i < n && isdigit((unsigned char)k[i]))
		i++;
	return i == n;
}

static bool section_name_ok(const char *s, size_t n)
{
	if (n < 2 || !isalpha((unsigned char)s[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

static int open_section(struct rd *r, struct pvecfg_file *f, struct section *cur,
			const char *name, size_t n)
{
	if (finish_description(cur) < 0)
		return -1;
	memset(cur, 0, sizeof *cur);
	char *nm = strndup(name, n);
	if (!nm)
		return -1;
	int rc = 0;
	bool pend = r->qemu ? strcasecmp(nm, "PENDING") == 0 : strcasecmp(nm, "pve:pending") == 0;
	if (pend) {
		if (json_object_object_length(f->pending) || json_object_array_length(f->pending_delete))
			rc = rfail(r, NULL, "duplicate section: [%s]", nm);
		cur->keys = f->pending;
		cur->pending = true;
	} else if (r->qemu && strncasecmp(nm, "special:", 8) == 0) {
		if (strcasecmp(nm + 8, "cloudinit") != 0)
			rc = rfail(r, NULL, "unknown special section: [%s]", nm);
		else if (json_object_object_length(f->cloudinit))
			rc = rfail(r, NULL, "duplicate special section: [%s]", nm);
		cur->keys = f->cloudinit;
		cur->special = true;
	} else if (section_name_ok(nm, n)) {
		if (json_object_object_get_ex(f->snapshots, nm, NULL))
			rc = rfail(r, NULL, "duplicate snapshot section: [%s]", nm);
		json_object *snap = json_object_new_object(), *conf = json_object_new_object();
		if (!snap || !conf) {
			json_object_put(snap);
			json_object_put(conf);
			rc = -1;
		} else {
			json_object_object_add(snap, "config", conf);
			json_object_object_add(f->snapshots, nm, snap);
			cur->keys = conf;
			cur->snapshot = true;
		}
	} else {
		rc = rfail(r, NULL, "unknown section: [%s]", nm);
	}
	free(nm);
	return rc;
}

/* `delete: a,!b` of [PENDING]. */
static int pending_delete(struct rd *r, struct pvecfg_file *f, const char *v)
{
	const char *p = v;
	while (*p) {
		size_t n = strcspn(p, ",; ");
		const char *k = p[0] == '!' ? p + 1 : p;
		size_t kn = n - (size_t)(k - p);
		if (n && !key_ok(k, kn, r->qemu))
			return rfail(r, "delete", "invalid key '%.*s'", (int)n, p);
		if (n) {
			char *d = strndup(p, n);
			if (!d)
				return -1;
			json_object_array_add(f->pending_delete, json_object_new_string(d));
			free(d);
		}
		p += n;
		p += strspn(p, ",; ");
	}
	return 0;
}

static int key_line(struct rd *r, struct pvecfg_file *f, struct section *cur, const char *key,
		    const char *val)
{
	if (strcmp(key, "description") == 0) {
		cur->has_descr = true;
		return decode_text(val, strlen(val), &cur->descr);
	}
	if (strcmp(key, "delete") == 0) {
		if (!cur->pending)
			return rfail(r, key, "only allowed in [%s]", r->qemu ? "PENDING" : "pve:pending");
		return pending_delete(r, f, val);
	}
	if (!*val)
		return rfail(r, key, "missing value");
	if (strcmp(key, "snaptime") == 0) {
		if (!cur->snapshot)
			return rfail(r, key, "only allowed in a snapshot section");
		char *end;
		errno = 0;
		long long t = strtoll(val, &end, 10);
		if (*end || errno || t < 0)
			return rfail(r, key, "not a time in seconds: '%s'", val);
		json_object_object_add(cur->keys, key, json_object_new_int64(t));
		return 0;
	}
	if (strcmp(key, "snapstate") == 0 && strcmp(val, "prepare") != 0 &&
	    strcmp(val, "delete") != 0)
		return rfail(r, key, "must be 'prepare' or 'delete', not '%s'", val);
	if (r->qemu && strcmp(key, "cdrom") == 0 && !cur->special)
		key = "ide2"; /* qemu-server: $key = 'ide2' if $key eq 'cdrom' */
	json_object_object_add(cur->keys, key, json_object_new_string(val));
	return 0;
}

static int read_line(struct rd *r, struct pvecfg_file *f, struct section *cur, const char *line,
		     size_t len)
{
	size_t n = len;
	while (n && isspace((unsigned char)line[n - 1]))
		n--;
	bool blank = true;
	for (size_t i = 0; i < n && blank; i++)
		blank = isspace((unsigned char)line[i]);
	if (blank)
		return 0;
	if (line[0] == '[' && line[n - 1] == ']')
		return open_section(r, f, cur, line + 1, n - 2);
	if (line[0] == '#') {
		cur->has_descr = true;
		if (decode_text(line + 1, len - 1, &cur->descr) < 0 || sbuf_addc(&cur->descr, '\n') < 0)
			return -1;
		return 0;
	}
	if (!r->qemu && strncmp(line, "lxc.", 4) == 0) {
		/* raw LXC keys: kept as written, as pve-container passes them on */
		size_t kn = strcspn(line, ":=");
		if (kn == n)
			return rfail(r, NULL, "unable to parse config: %.*s", (int)n, line);
		char *k = strndup(line, kn);
		size_t vs = kn + 1;
		while (vs < n && isspace((unsigned char)line[vs]))
			vs++;
		char *v = strndup(line + vs, n - vs);
		int rc = k && v ? 0 : -1;
		while (rc == 0 && *k && isspace((unsigned char)k[strlen(k) - 1]))
			k[strlen(k) - 1] = '\0';
		if (rc == 0)
			json_object_object_add(cur->keys, k, json_object_new_string(v));
		free(k);
		free(v);
		return rc;
	}
	const char *colon = memchr(line, ':', n);
	if (!colon || !key_ok(line, (size_t)(colon - line), r->qemu))
		return rfail(r, NULL, "unable to parse config: %.*s", (int)n, line);
	char *key = strndup(line, (size_t)(colon - line));
	const char *v = colon + 1;
	while (v < line + n && isspace((unsigned char)*v))
		v++;
	char *val = strndup(v, (size_t)(line + n - v));
	int rc = key && val ? key_line(r, f, cur, key, val) : -1;
	free(key);
	free(val);
	return rc;
}

/* Every `parent` names a snapshot of the file (PVE's snapshot tree). */
static int check_parents(struct rd *r, struct pvecfg_file *f)
{
	const char *p = json_object_get_string(json_object_object_get(f->config, "parent"));
	r->line = 0;
	if (p && !json_object_object_get_ex(f->snapshots, p, NULL))
		return rfail(r, "parent", "names no snapshot of the file: '%s'", p);
	json_object_object_foreach(f->snapshots, name, snap)
	{
		json_object *sc = json_object_object_get(snap, "config");
		const char *sp = json_object_get_string(json_object_object_get(sc, "parent"));
		if (sp && !json_object_object_get_ex(f->snapshots, sp, NULL))
			return rfail(r, "parent", "snapshot '%s' names no snapshot of the file: '%s'",
				     name, sp);
	}
	return 0;
}

/* A snapshot's parent, snaptime and description stand beside its config,
 * as the simulator keeps snapshots. */
static void lift_snapshot_keys(struct pvecfg_file *f)
{
	json_object_object_foreach(f->snapshots, name, snap)
	{
		(void)name;
		json_object *sc = json_object_object_get(snap, "config");
		static const char *const keys[] = {"parent", "snaptime", "description"};
		for (size_t i = 0; i < 3; i++) {
			json_object *v = NULL;
			if (json_object_object_get_ex(sc, keys[i], &v)) {
				json_object_object_add(snap, keys[i], json_object_get(v));
				json_object_object_del(sc, keys[i]);
			}
		}
		if (!json_object_object_get_ex(snap, "description", NULL))
			json_object_object_add(snap, "description", json_object_new_string(""));
	}
}

void pvecfg_file_free(struct pvecfg_file *f)
{
	json_object_put(f->config);
	json_object_put(f->pending);
	json_object_put(f->pending_delete);
	json_object_put(f->snapshots);
	json_object_put(f->cloudinit);
	memset(f, 0, sizeof *f);
}

int pvecfg_file_parse(const char *name, const char *text, bool qemu,
		      struct pvecfg_file *out, char **err)
{
	memset(out, 0, sizeof *out);
	*err = NULL;
	out->config = json_object_new_object();
	out->pending = json_object_new_object();
	out->pending_delete = json_object_new_array();
	out->snapshots = json_object_new_object();
	out->cloudinit = json_object_new_object();
	struct rd r = {.name = name, .err = err, .qemu = qemu};
	struct section cur = {.keys = out->config};
	int rc = out->config && out->pending && out->pending_delete && out->snapshots &&
			 out->cloudinit ? 0 : -1;
	const char *p = text;
	while (rc == 0 && *p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		r.line++;
		if (memchr(p, '\0', n))
			rc = rfail(&r, NULL, "NUL byte");
		else
			rc = read_line(&r, out, &cur, p, n);
		p += n + (e ? 1 : 0);
	}
	if (rc == 0)
		rc = finish_description(&cur);
	sbuf_free(&cur.descr);
	if (rc == 0)
		rc = check_parents(&r, out);
	if (rc == 0)
		lift_snapshot_keys(out);
	if (rc < 0)
		pvecfg_file_free(out);
	return rc;
}

int pvecfg_file_read(const char *path, bool qemu, struct pvecfg_file *out, char **err)
{
	char *text = NULL;
	size_t len = 0;
	*err = NULL;
	memset(out, 0, sizeof *out);
	if (read_file(path, &text, &len) < 0) {
		*err = strprintf("%s: cannot read: %s", path, strerror(errno));
		return -1;
	}
	int rc;
	if (strlen(text) != len) {
		*err = strprintf("%s: NUL byte in the file", path);
		rc = -1;
	} else {
		rc = pvecfg_file_parse(path, text, qemu, out, err);
	}
	free(text);
	return rc;
}
