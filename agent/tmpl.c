/* tmpl.c - template loading, validation, listing and ${var} expansion (the
 * rules are in tmpl.h). Load-time checks cover everything that does not
 * depend on variable values; tmpl_expand checks the rest. */
#include "tmpl.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "ini.h"
#include "log.h"
#include "pvecheck.h"
#include "pvekeys.h"
#include "util.h"

/* ---- tables -------------------------------------------------------------- */

static const struct ini_key_spec template_keys[] = {
	{"kind", INI_KEY_REQUIRED},
	{"os", INI_KEY_REQUIRED},
	{"os_version", INI_KEY_REQUIRED},
	{"description", 0},
	{NULL, 0},
};
static const struct ini_key_spec source_keys[] = {
	{"clone", 0}, {"iso", 0}, {"ostemplate", 0}, {"full", 0},
	{"storage", 0}, {"bus", 0}, {"nic", 0}, {"image", 0}, {NULL, 0},
};
static const struct ini_key_spec guest_keys[] = {
	{"user", 0}, {"port", 0}, {"address", INI_KEY_REQUIRED}, {"ip", 0},
	{"pool", 0}, {NULL, 0},
};
static const struct ini_key_spec ci_keys[] = {
	{"ciuser", 0}, {"sshkeys", INI_KEY_LIST}, {"ipconfig[n]", 0},
	{"nameserver", 0}, {"searchdomain", 0}, {"citype", 0}, {NULL, 0},
};
static const struct ini_key_spec file_keys[] = {
	{"line", INI_KEY_LIST | INI_KEY_REQUIRED}, {NULL, 0},
};
static const struct ini_section_spec tmpl_spec[] = {
	{"template", INI_SEC_REQUIRED, template_keys},
	{"source", INI_SEC_REQUIRED, source_keys},
	{"vars", INI_SEC_ANYKEY, NULL},
	{"pve", INI_SEC_ANYKEY, NULL},
	{"guest", INI_SEC_REQUIRED, guest_keys},
	{"cloud-init", 0, ci_keys},
	{"loader.conf", INI_SEC_ANYKEY, NULL},
	{"rc.conf", INI_SEC_ANYKEY, NULL},
	{"sysctl.conf", INI_SEC_ANYKEY, NULL},
	{"file", INI_SEC_LABEL, file_keys},
	{NULL, 0, NULL},
};

static const struct {
	const char *section;
	const char *path;
	enum tmpl_file_style style;
	const char *os; /* NULL: any */
} named_files[] = {
	{"loader.conf", "/boot/loader.conf", TMPL_FILE_SHVAR, "freebsd"},
	{"rc.conf", "/etc/rc.conf", TMPL_FILE_SHVAR, "freebsd"},
	{"sysctl.conf", "/etc/sysctl.conf", TMPL_FILE_KV, NULL},
};

static const char *const builtins[] = {"name", "vmid", "node", "storage", "pubkey"};

/* [pve] keys a template may not set, and why. */
static const struct {
	const char *key;
	const char *why;
} reserved[] = {
	{"vmid", "set by pvagent (use --vmid)"},
	{"node", "set by pvagent (use --node)"},
	{"ostemplate", "set it in [source] ostemplate"},
	{"storage", "set it in [source] storage"},
	{"password", "secrets do not belong in templates"},
	{"cipassword", "secrets do not belong in templates"},
	{"delete", "an update control parameter, not a setting"},
	{"digest", "an update control parameter, not a setting"},
	{"revert", "an update control parameter, not a setting"},
	{"skiplock", "an update control parameter, not a setting"},
	{"force", "an update control parameter, not a setting"},
	{"background_delay", "an update control parameter, not a setting"},
	{"archive", "restores are not templates"},
	{"restore", "restores are not templates"},
	{"live-restore", "restores are not templates"},
	{"unique", "restores are not templates"},
	{"ignore-unpack-errors", "restores are not templates"},
	{"start", "pvagent starts the guest itself"},
	{"lock", "managed by PVE"},
	{"template", "pvagent provisions guests, not PVE templates"},
};

/* On qemu these are [cloud-init] keys. */
static int is_ci_key(const char *k)
{
	return strcmp(k, "ciuser") == 0 || strcmp(k, "sshkeys") == 0 ||
	       strcmp(k, "citype") == 0 || strcmp(k, "nameserver") == 0 ||
	       strcmp(k, "searchdomain") == 0 || ini_key_matches("ipconfig[n]", k);
}

const char *tmpl_kind_name(enum tmpl_kind k)
{
	switch (k) {
	case TMPL_QEMU: return "qemu";
	case TMPL_LXC: return "lxc";
	case TMPL_OPENVZ: return "openvz";
	}
	return "?";
}

/* ---- key/value lists ----------------------------------------------------- */

int tmpl_kvlist_add(struct tmpl_kvlist *l, const char *key, const char *value,
		    int line)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct tmpl_kv *it = realloc(l->items, cap * sizeof *it);
		if (!it)
			return -1;
		l->items = it;
		l->cap = cap;
	}
	struct tmpl_kv *kv = &l->items[l->n];
	kv->key = strdup(key);
	kv->value = strdup(value);
	kv->line = line;
	if (!kv->key || !kv->value) {
		free(kv->key);
		free(kv->value);
		return -1;
	}
	l->n++;
	return 0;
}

const char *tmpl_kvlist_get(const struct tmpl_kvlist *l, const char *key)
{
	for (size_t i = l->n; i-- > 0;)
		if (strcmp(l->items[i].key, key) == 0)
			return l->items[i].value;
	return NULL;
}

int tmpl_kvlist_set(struct tmpl_kvlist *l, const char *key, const char *value)
{
	for (size_t i = l->n; i-- > 0;)
		if (strcmp(l->items[i].key, key) == 0) {
			char *v = strdup(value);
			if (!v)
				return -1;
			free(l->items[i].value);
			l->items[i].value = v;
			return 0;
		}
	return tmpl_kvlist_add(l, key, value, 0);
}

int tmpl_vars_storage(const struct tmpl *t, struct tmpl_kvlist *vars, const char *given,
		      const char *fallback)
{
	const char *st = given ? given
		       : t->source.storage.value || tmpl_kvlist_get(vars, "storage") ? NULL
		       : fallback;
	return st ? tmpl_kvlist_set(vars, "storage", st) : 0;
}

void tmpl_kvlist_free(struct tmpl_kvlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->items[i].key);
		free(l->items[i].value);
	}
	free(l->items);
	memset(l, 0, sizeof *l);
}

static int is_var_name(const char *s, size_t n)
{
	if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
			s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

int tmpl_var_arg(struct tmpl_kvlist *vars, const char *arg, char **err)
{
	*err = NULL;
	const char *eq = strchr(arg, '=');
	if (!eq || !is_var_name(arg, (size_t)(eq - arg))) {
		*err = strdup("expected NAME=VALUE (NAME: letters, digits, '_')");
		return -1;
	}
	/* as in a template: a value holds no control character (a newline
	 * in ciuser or description would reach PVE's config as it is) */
	for (const char *p = eq + 1; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			*err = strprintf("%.*s: the value holds a control character (0x%02x)",
					 (int)(eq - arg), arg, (unsigned)(unsigned char)*p);
			return -1;
		}
	char *name = strndup(arg, (size_t)(eq - arg));
	const char *had = name ? tmpl_kvlist_get(vars, name) : NULL;
	if (had && strcmp(had, eq + 1) != 0) {
		/* the last one winning silently hides a typo */
		*err = strprintf("given twice ('%s=%s' and '%s')", name, had, arg);
		free(name);
		return -1;
	}
	if (!name || tmpl_kvlist_set(vars, name, eq + 1) < 0) {
		free(name);
		*err = strdup("out of memory");
		return -1;
	}
	free(name);
	return 0;
}

/* ---- error context ------------------------------------------------------- */

struct ctx {
	const char *path;
	const struct tmpl *t;
	const struct tmpl_kvlist *vars; /* NULL while loading */
	struct sbuf errs;
	int nerr;
	int oom;
	int addr_line; /* [guest] address */
};

static void xerr(struct ctx *x, int line, const char *title, const char *key,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void xerr(struct ctx *x, int line, const char *title, const char *key,
		 const char *fmt, ...)
{
	struct sbuf *b = &x->errs;
	int rc = 0;
	if (b->len)
		rc |= sbuf_addc(b, '\n');
	rc |= sbuf_add(b, x->path);
	if (line > 0)
		rc |= sbuf_addf(b, ":%d", line);
	rc |= sbuf_add(b, ": ");
	if (title)
		rc |= sbuf_addf(b, "%s%s%s: ", title, key ? " " : "", key ? key : "");
	else if (key)
		rc |= sbuf_addf(b, "%s: ", key);
	va_list ap;
	va_start(ap, fmt);
	rc |= sbuf_vaddf(b, fmt, ap);
	va_end(ap);
	if (rc)
		x->oom = 1;
	x->nerr++;
}

static void *chk(struct ctx *x, void *p)
{
	if (!p)
		x->oom = 1;
	return p;
}

static int is_builtin(const char *name)
{
	for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
		if (strcmp(builtins[i], name) == 0)
			return 1;
	return 0;
}

static int has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

/* Value of a variable during expansion, or NULL. */
static const char *var_value(const struct ctx *x, const char *name)
{
	const char *v = tmpl_kvlist_get(x->vars, name);
	if (v)
		return v;
	if (strcmp(name, "storage") == 0 && x->t->source.storage.value)
		return x->t->source.storage.value;
	v = tmpl_kvlist_get(&x->t->vars, name);
	return v && *v ? v : NULL;
}

/* Expand kv->value. While loading (x->vars NULL) references are checked to
 * be declared and replaced by nothing, so that the literal text can still be
 * checked. *refs (if not NULL) counts the references. Returns a malloc'd
 * string, or NULL after reporting. */
static char *expand(struct ctx *x, const char *title, const struct tmpl_kv *kv,
		    int *refs)
{
	struct sbuf b = {0};
	const char *s = kv->value;
	int nref = 0, bad = 0;
	if (sbuf_add(&b, "") < 0)
		goto oom;
	while (*s && !bad) {
		if (s[0] == '$' && s[1] == '$' && s[2] == '{') {
			if (sbuf_add(&b, "${") < 0)
				goto oom;
			s += 3;
			continue;
		}
		if (s[0] != '$' || s[1] != '{') {
			if (sbuf_addc(&b, *s++) < 0)
				goto oom;
			continue;
		}
		const char *name = s + 2, *end = strchr(name, '}');
		if (!end) {
			xerr(x, kv->line, title, kv->key,
			     "unterminated ${ (write $${ for a literal ${)");
			bad = 1;
			break;
		}
		size_t n = (size_t)(end - name);
		if (!is_var_name(name, n)) {
			xerr(x, kv->line, title, kv->key, "bad variable name ${%.*s}",
			     (int)n, name);
			bad = 1;
			break;
		}
		char *vn = strndup(name, n);
		if (!vn)
			goto oom;
		nref++;
		if (!x->vars) {
			if (!is_builtin(vn) && !tmpl_kvlist_get(&x->t->vars, vn)) {
				xerr(x, kv->line, title, kv->key, "unknown variable ${%s}", vn);
				bad = 1;
			}
		} else {
			const char *v = var_value(x, vn);
			if (!v) {
				if (strcmp(vn, "pubkey") == 0)
					xerr(x, kv->line, title, kv->key,
					     "${pubkey} has no value: set [ssh] identity in "
					     "pvagent.conf (its .pub file is the key the guest "
					     "gets)");
				else
					xerr(x, kv->line, title, kv->key,
					     "${%s} has no value: pass --var %s=VALUE", vn, vn);
				bad = 1;
			} else if (sbuf_add(&b, v) < 0) {
				free(vn);
				goto oom;
			}
		}
		free(vn);
		s = end + 1;
	}
	if (bad) {
		sbuf_free(&b);
		return NULL;
	}
	if (refs)
		*refs = nref;
	if (x->vars && has_ctl(b.s)) {
		xerr(x, kv->line, title, kv->key,
		     "value holds a control character after expansion (newline, TAB, ...)");
		sbuf_free(&b);
		return NULL;
	}
	return sbuf_steal(&b);
oom:
	x->oom = 1;
	sbuf_free(&b);
	return NULL;
}

/* ---- value checks -------------------------------------------------------- */

static int all_chars(const char *s, const char *extra)
{
	if (!*s)
		return 0;
	for (; *s; s++) {
		char c = *s;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || (c && strchr(extra, c))))
			return 0;
	}
	return 1;
}

/* Check v against the PVE schema of key (pvecheck.h), a key of section
 * title ("[pve]", "[cloud-init]"); reports and returns 1 when it does not
 * suit. */
static int value_problem(struct ctx *x, const char *title, int line, const char *key,
			 const char *v)
{
	if (!*v) {
		xerr(x, line, title, key, "empty value (leave the key out instead)");
		return 1;
	}
	char *why = NULL;
	int rc = pvecheck_param(0, (enum pvekey_kind)x->t->kind, key, v, &why);
	if (rc < 0)
		x->oom = 1;
	else if (rc > 0)
		xerr(x, line, title, key, "%s", why);
	free(why);
	return rc != 0;
}

static int is_shell_ident(const char *s)
{
	return is_var_name(s, strlen(s));
}

/* Checks on a final (or, at load, literal-only) value by where it goes. */
static void check_shvar_value(struct ctx *x, const char *title,
			      const struct tmpl_kv *kv, const char *v)
{
	const char *bad = strpbrk(v, "\"\\`$");
	if (bad)
		xerr(x, kv->line, title, kv->key,
		     "'%c' is not allowed here: the value is written inside double quotes in a file that sh reads",
		     *bad);
}

static void check_ipconfig(struct ctx *x, const char *title,
			   const struct tmpl_kv *kv, const char *v)
{
	const char *p = v;
	while (*p) {
		size_t n = strcspn(p, ",");
		const char *eq = memchr(p, '=', n);
		size_t kl = eq ? (size_t)(eq - p) : n;
		int ok = eq && eq + 1 < p + n &&
			 ((kl == 2 && (!strncmp(p, "ip", 2) || !strncmp(p, "gw", 2))) ||
			  (kl == 3 && (!strncmp(p, "ip6", 3) || !strncmp(p, "gw6", 3))));
		if (!ok) {
			xerr(x, kv->line, title, kv->key,
			     "'%s': expected ip=CIDR|dhcp[,gw=IP][,ip6=CIDR|auto|dhcp][,gw6=IP]", v);
			return;
		}
		p += n;
		if (*p == ',')
			p++;
	}
}

static void check_sshkey(struct ctx *x, const char *title,
			 const struct tmpl_kv *kv, const char *v)
{
	const char *sp = strchr(v, ' ');
	if (!(strncmp(v, "ssh-", 4) == 0 || strncmp(v, "ecdsa-", 6) == 0 ||
	      strncmp(v, "sk-", 3) == 0) || !sp || !sp[1] || sp[1] == ' ')
		xerr(x, kv->line, title, kv->key,
		     "expected an OpenSSH public key line (TYPE BASE64 [COMMENT])");
}

/* The ip of "ip=10.0.0.5/24,gw=..." (malloc'd), NULL if none or dhcp. */
static char *ipconfig_ip(const char *v)
{
	const char *p = v;
	while (*p) {
		size_t n = strcspn(p, ",");
		if (n > 3 && strncmp(p, "ip=", 3) == 0) {
			size_t l = strcspn(p + 3, ",/");
			char *ip = strndup(p + 3, l);
			if (ip && (strcmp(ip, "dhcp") == 0 || strcmp(ip, "manual") == 0)) {
				free(ip);
				return NULL;
			}
			return ip;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return NULL;
}

static int is_file_path(const char *p)
{
	return p[0] == '/' && p[1] && p[strlen(p) - 1] != '/' &&
	       all_chars(p, "/._-+@") && !strstr(p, "/../") && !strstr(p, "//") &&
	       !(strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0) &&
	       !strstr(p, "/./");
}

/* ---- loading ------------------------------------------------------------- */

static int kv_set(struct ctx *x, struct tmpl_kv *kv, const struct ini_entry *e)
{
	if (!e)
		return 0;
	kv->key = chk(x, strdup(e->key));
	kv->value = chk(x, strdup(e->value));
	kv->line = e->line;
	return kv->key && kv->value ? 0 : -1;
}

static void kv_free(struct tmpl_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof *kv);
}

static void load_template(struct ctx *x, struct tmpl *t, const struct ini_section *s)
{
	const struct ini_entry *e = ini_get(s, "kind");
	if (e) {
		if (strcmp(e->value, "qemu") == 0)
			t->kind = TMPL_QEMU;
		else if (strcmp(e->value, "lxc") == 0)
			t->kind = TMPL_LXC;
		else if (strcmp(e->value, "openvz") == 0)
			t->kind = TMPL_OPENVZ;
		else
			xerr(x, e->line, "[template]", "kind", "'%s': must be qemu, lxc or openvz",
			     e->value);
	}
	e = ini_get(s, "os");
	if (e && !all_chars(e->value, "-_"))
		xerr(x, e->line, "[template]", "os", "'%s': letters, digits, '-' and '_' only",
		     e->value);
	else if (e)
		t->os = chk(x, strdup(e->value));
	e = ini_get(s, "os_version");
	if (e && !all_chars(e->value, ".-_"))
		xerr(x, e->line, "[template]", "os_version",
		     "'%s': letters, digits, '.', '-' and '_' only", e->value);
	else if (e)
		t->os_version = chk(x, strdup(e->value));
	e = ini_get(s, "description");
	if (e)
		t->description = chk(x, strdup(e->value));
}

static void load_vars(struct ctx *x, struct tmpl *t, const struct ini_section *s)
{
	for (size_t i = 0; s && i < s->n_entries; i++) {
		const struct ini_entry *e = &s->entries[i];
		if (!is_shell_ident(e->key))
			xerr(x, e->line, "[vars]", e->key,
			     "variable names use letters, digits and '_' and do not start with a digit");
		else if (is_builtin(e->key))
			xerr(x, e->line, "[vars]", e->key,
			     "built-in variable; pvagent supplies it (use --var %s=VALUE to override storage)",
			     e->key);
		else if (tmpl_kvlist_add(&t->vars, e->key, e->value, e->line) < 0)
			x->oom = 1;
	}
}

static void load_source(struct ctx *x, struct tmpl *t, const struct ini_section *s)
{
	const char *T = "[source]";
	struct tmpl_source *src = &t->source;
	kv_set(x, &src->clone, ini_get(s, "clone"));
	const struct ini_entry *img = ini_get(s, "image");
	if (img && src->clone.value) {
		xerr(x, img->line, T, "image", "give clone or image, not both");
	} else if (img && (!all_chars(img->value, "._-") || t->kind != TMPL_QEMU)) {
		xerr(x, img->line, T, "image", "'%s': %s", img->value,
		     t->kind != TMPL_QEMU ? "only for kind qemu" : "not an image name");
	} else if (img) {
		/* the template VM `pvagent image build NAME` makes (image.h) */
		src->image = chk(x, strdup(img->value));
		src->clone.key = chk(x, strdup("clone"));
		src->clone.value = chk(x, strprintf("%s-image", img->value));
		src->clone.line = img->line;
	}
	kv_set(x, &src->iso, ini_get(s, "iso"));
	kv_set(x, &src->ostemplate, ini_get(s, "ostemplate"));
	kv_set(x, &src->storage, ini_get(s, "storage"));
	src->full = 1;

	int n = !!src->clone.value + !!src->iso.value + !!src->ostemplate.value;
	const char *need = t->kind == TMPL_QEMU ? "clone (a template VM) or iso"
			   : t->kind == TMPL_LXC ? "ostemplate or clone"
						 : "ostemplate";
	if (n == 0)
		xerr(x, s->line, T, NULL, "set %s", need);
	else if (n > 1)
		xerr(x, s->line, T, NULL, "set only one of %s", need);
	if (t->kind != TMPL_QEMU && src->iso.value)
		xerr(x, src->iso.line, T, "iso", "only for kind qemu");
	if (t->kind == TMPL_QEMU && src->ostemplate.value)
		xerr(x, src->ostemplate.line, T, "ostemplate", "only for kind lxc or openvz");
	if (t->kind == TMPL_OPENVZ && src->clone.value)
		xerr(x, src->clone.line, T, "clone", "OpenVZ containers are created from an ostemplate");

	const struct tmpl_kv *vols[] = {&src->clone, &src->iso, &src->ostemplate};
	for (size_t i = 0; i < 3; i++) {
		if (!vols[i]->value)
			continue;
		int refs = 0;
		char *lit = expand(x, T, vols[i], &refs);
		if (lit && !refs && i > 0 && !strchr(lit, ':'))
			xerr(x, vols[i]->line, T, vols[i]->key,
			     "'%s': expected a volume id, STORAGE:%s/FILE", lit,
			     i == 1 ? "iso" : "vztmpl");
		if (lit && !refs && i == 0 && !all_chars(lit, ".-_"))
			xerr(x, vols[i]->line, T, vols[i]->key,
			     "'%s': expected a template VM id or name", lit);
		free(lit);
	}
	if (src->storage.value && !all_chars(src->storage.value, ".-_"))
		xerr(x, src->storage.line, T, "storage",
		     "'%s': expected a PVE storage id (no variables here)", src->storage.value);

	const struct ini_entry *e = ini_get(s, "full");
	if (e) {
		int b = conf_parse_bool(e->value);
		if (b < 0)
			xerr(x, e->line, T, "full", "'%s' is not yes or no", e->value);
		else if (!src->clone.value)
			xerr(x, e->line, T, "full", "only with clone");
		else
			src->full = b;
	}
	e = ini_get(s, "bus");
	if (e) {
		static const char *const names[] = {"ide", "sata", "scsi", "virtio"};
		size_t i = 0;
		while (i < 4 && strcmp(names[i], e->value) != 0)
			i++;
		if (t->kind != TMPL_QEMU)
			xerr(x, e->line, T, "bus", "only for kind qemu");
		else if (i == 4)
			xerr(x, e->line, T, "bus", "'%s': must be ide, sata, scsi or virtio", e->value);
		else
			src->bus = (enum tmpl_bus)(TMPL_BUS_IDE + i);
	}
	e = ini_get(s, "nic");
	if (e) {
		static const char *const names[] = {"e1000", "e1000e", "rtl8139", "vmxnet3", "virtio"};
		size_t i = 0;
		while (i < 5 && strcmp(names[i], e->value) != 0)
			i++;
		if (t->kind != TMPL_QEMU)
			xerr(x, e->line, T, "nic", "only for kind qemu");
		else if (i == 5)
			xerr(x, e->line, T, "nic",
			     "'%s': must be e1000, e1000e, rtl8139, vmxnet3 or virtio", e->value);
		else
			src->nic = chk(x, strdup(e->value));
	}
}

static void load_pve(struct ctx *x, struct tmpl *t, const struct ini_section *s)
{
	const char *T = "[pve]";
	int cloned = t->source.clone.value != NULL;
	for (size_t i = 0; s && i < s->n_entries; i++) {
		const struct ini_entry *e = &s->entries[i];
		const char *why = NULL;
		for (size_t r = 0; r < sizeof reserved / sizeof reserved[0] && !why; r++)
			if (strcmp(reserved[r].key, e->key) == 0)
				why = reserved[r].why;
		if (!why && t->kind == TMPL_QEMU && is_ci_key(e->key))
			why = "set it in [cloud-init]";
		const struct pvekey *k = pvekey_lookup((enum pvekey_kind)t->kind, e->key);
		if (why) {
			xerr(x, e->line, T, e->key, "not allowed in a template: %s", why);
			continue;
		}
		if (!k) {
			xerr(x, e->line, T, e->key, "not a PVE %s parameter (%s)",
			     tmpl_kind_name(t->kind),
			     t->kind == TMPL_OPENVZ ? "PVE 3.4 schema" : "PVE 9.1 and 8.4 schemas");
			continue;
		}
		if (cloned && !(k->where & PVEKEY_CONFIG)) {
			xerr(x, e->line, T, e->key,
			     "PVE accepts it only when creating a guest, not after a clone");
			continue;
		}
		if (!cloned && !(k->where & PVEKEY_CREATE)) {
			xerr(x, e->line, T, e->key,
			     "PVE accepts it only in config updates, not when creating a guest");
			continue;
		}
		struct tmpl_kv kv = {e->key, e->value, e->line};
		int refs = 0;
		char *lit = expand(x, T, &kv, &refs);
		if (lit && !refs)
			value_problem(x, T, e->line, e->key, lit);
		free(lit);
		if (tmpl_kvlist_add(&t->pve, e->key, e->value, e->line) < 0)
			x->oom = 1;
	}
}

static void load_guest(struct ctx *x, struct tmpl *t, const struct ini_section *s)
{
	const char *T = "[guest]";
	struct tmpl_guest *g = &t->guest;
	const struct ini_entry *e = ini_get(s, "user");
	if (e && !(is_shell_ident(e->value) || all_chars(e->value, "._-")))
		xerr(x, e->line, T, "user", "'%s' is not a user name", e->value);
	else if (e)
		g->user = chk(x, strdup(e->value));
	g->port = 0; /* unset: pvagent.conf [ssh] port */
	e = ini_get(s, "port");
	if (e) {
		char *end;
		errno = 0;
		long p = strtol(e->value, &end, 10);
		if (*end || errno || p < 1 || p > 65535 || e->value[0] < '0' || e->value[0] > '9')
			xerr(x, e->line, T, "port", "'%s': must be a port number (1-65535)", e->value);
		else
			g->port = (unsigned)p;
	}
	e = ini_get(s, "address");
	if (e) {
		if (strcmp(e->value, "agent") == 0)
			g->address = TMPL_ADDR_AGENT;
		else if (strcmp(e->value, "static") == 0)
			g->address = TMPL_ADDR_STATIC;
		else if (strcmp(e->value, "cloud-init") == 0)
			g->address = TMPL_ADDR_CLOUDINIT;
		else
			xerr(x, e->line, T, "address", "'%s': must be agent, static or cloud-init",
			     e->value);
		if (g->address == TMPL_ADDR_AGENT && t->kind == TMPL_OPENVZ)
			xerr(x, e->line, T, "address",
			     "agent: PVE 3 cannot report OpenVZ addresses; use static");
		if (g->address == TMPL_ADDR_CLOUDINIT && t->kind != TMPL_QEMU)
			xerr(x, e->line, T, "address", "cloud-init: only for kind qemu");
		x->addr_line = e->line;
	}
	kv_set(x, &g->ip, ini_get(s, "ip"));
	if (g->ip.value && g->address != TMPL_ADDR_STATIC)
		xerr(x, g->ip.line, T, "ip", "only with address = static");
	else if (!g->ip.value && g->address == TMPL_ADDR_STATIC && e &&
		 strcmp(e->value, "static") == 0)
		xerr(x, s->line, T, "ip", "missing (address = static needs it)");
	if (g->ip.value) {
		int refs = 0;
		char *lit = expand(x, T, &g->ip, &refs);
		if (lit && !refs && !all_chars(lit, ".:-"))
			xerr(x, g->ip.line, T, "ip", "'%s' is not an address", lit);
		free(lit);
	}
	e = ini_get(s, "pool");
	if (e) {
		if (!all_chars(e->value, "._-"))
			xerr(x, e->line, T, "pool", "'%s' is not a pool name ([pool \"NAME\"] of "
			     "pvagent.conf)", e->value);
		else if (t->kind != TMPL_QEMU)
			xerr(x, e->line, T, "pool", "only for kind qemu (the address goes to "
			     "cloud-init's ipconfig0)");
		else
			g->pool = chk(x, strdup(e->value));
	}
}

static void load_ci(struct ctx *x, struct tmpl *t, const struct ini_section *s)
{
	const char *T = "[cloud-init]";
	if (!s) {
		if (t->guest.address == TMPL_ADDR_CLOUDINIT && t->kind == TMPL_QEMU)
			xerr(x, x->addr_line, "[guest]", "address",
			     "cloud-init needs a [cloud-init] section with ipconfig0");
		return;
	}
	t->ci.present = 1;
	if (t->kind != TMPL_QEMU) {
		xerr(x, s->line, T, NULL, "only for kind qemu (PVE cloud-init is for VMs)");
		return;
	}
	for (size_t i = 0; i < s->n_entries; i++) {
		const struct ini_entry *e = &s->entries[i];
		struct tmpl_kv kv = {e->key, e->value, e->line};
		int refs = 0;
		char *lit = expand(x, T, &kv, &refs);
		if (lit && !refs) {
			if (strcmp(e->key, "sshkeys") == 0)
				check_sshkey(x, T, &kv, lit);
			else if (strncmp(e->key, "ipconfig", 8) == 0)
				check_ipconfig(x, T, &kv, lit);
			else if (strcmp(e->key, "citype") == 0 && strcmp(lit, "nocloud") != 0 &&
				 strcmp(lit, "configdrive2") != 0 && strcmp(lit, "opennebula") != 0)
				xerr(x, e->line, T, e->key,
				     "'%s': must be nocloud, configdrive2 or opennebula", lit);
			else if (strcmp(e->key, "ciuser") == 0 && !all_chars(lit, "._-"))
				xerr(x, e->line, T, e->key, "'%s' is not a user name", lit);
		}
		free(lit);
		if (strncmp(e->key, "ipconfig", 8) == 0 &&
		    !pvekey_lookup(PVEKEY_QEMU, e->key))
			xerr(x, e->line, T, e->key, "index out of range (ipconfig0 to ipconfig31)");
		struct tmpl_kvlist *l = strcmp(e->key, "sshkeys") == 0 ? &t->ci.sshkeys
									: &t->ci.params;
		if (tmpl_kvlist_add(l, e->key, e->value, e->line) < 0)
			x->oom = 1;
	}
	if (t->guest.address == TMPL_ADDR_CLOUDINIT) {
		const char *ipc = tmpl_kvlist_get(&t->ci.params, "ipconfig0");
		if (!ipc)
			xerr(x, s->line, T, "ipconfig0", "missing ([guest] address = cloud-init needs it)");
		else if (!strstr(ipc, "${")) {
			char *ip = ipconfig_ip(ipc);
			if (!ip)
				xerr(x, s->line, T, "ipconfig0",
				     "no static ip= for [guest] address = cloud-init (with dhcp use address = agent)");
			free(ip);
		}
	}
}

static void load_file(struct ctx *x, struct tmpl *t, const struct ini_section *s)
{
	struct tmpl_file *f = &t->files[t->n_files];
	char *title = chk(x, ini_section_title(s));
	if (!title)
		return;
	t->n_files++;
	f->section = title;
	f->line = s->line;
	if (strcmp(s->name, "file") == 0) {
		f->style = TMPL_FILE_LINES;
		f->path = chk(x, strdup(s->label));
		if (!is_file_path(s->label))
			xerr(x, s->line, title, NULL,
			     "expected an absolute path of letters, digits and /._-+@ (no . or .. parts)");
	} else {
		for (size_t i = 0; i < sizeof named_files / sizeof named_files[0]; i++) {
			if (strcmp(named_files[i].section, s->name) != 0)
				continue;
			f->style = named_files[i].style;
			f->path = chk(x, strdup(named_files[i].path));
			if (named_files[i].os && t->os && strcmp(t->os, named_files[i].os) != 0)
				xerr(x, s->line, title, NULL, "only for os = %s", named_files[i].os);
		}
	}
	for (size_t i = 0; i < s->n_entries; i++) {
		const struct ini_entry *e = &s->entries[i];
		const char *v = e->value;
		size_t vl = strlen(v);
		char *val = NULL;
		if (f->style == TMPL_FILE_SHVAR) {
			if (!is_shell_ident(e->key))
				xerr(x, e->line, title, e->key, "not a shell variable name");
			if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"')
				val = chk(x, strndup(v + 1, vl - 2));
			else
				val = chk(x, strdup(v));
		} else {
			val = chk(x, strdup(v));
		}
		if (!val)
			return;
		struct tmpl_kv kv = {e->key, val, e->line};
		int refs = 0;
		char *lit = expand(x, title, &kv, &refs);
		if (lit && f->style == TMPL_FILE_SHVAR)
			check_shvar_value(x, title, &kv, lit);
		free(lit);
		if (tmpl_kvlist_add(&f->entries, e->key, val, e->line) < 0)
			x->oom = 1;
		free(val);
	}
}

static void check_tabs(struct ctx *x, const struct ini *ini)
{
	for (size_t i = 0; i < ini->n_sections; i++) {
		const struct ini_section *s = &ini->sections[i];
		for (size_t j = 0; j < s->n_entries; j++)
			if (strchr(s->entries[j].value, '\t')) {
				char *title = ini_section_title(s);
				xerr(x, s->entries[j].line, title ? title : s->name,
				     s->entries[j].key, "value holds a control character (TAB)");
				free(title);
			}
	}
}

static char *name_from_path(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t n = strlen(b);
	if (n > 5 && strcmp(b + n - 5, ".tmpl") == 0)
		n -= 5;
	return strndup(b, n);
}

int tmpl_load_file(const char *path, struct tmpl **out, char **err)
{
	struct ini ini;
	*out = NULL;
	*err = NULL;
	if (ini_load(path, &ini, err) < 0)
		return -1;
	struct tmpl *t = calloc(1, sizeof *t);
	struct ctx x = {.path = path, .t = t};
	if (!t) {
		ini_free(&ini);
		*err = strdup("out of memory");
		return -1;
	}
	t->path = chk(&x, strdup(path));
	t->name = chk(&x, name_from_path(path));
	int n = ini_validate(&ini, tmpl_spec, &x.errs);
	if (n < 0)
		x.oom = 1;
	x.nerr = n > 0 ? n : 0;
	check_tabs(&x, &ini);
	if (!x.nerr && !x.oom) {
		size_t nf = 0;
		for (size_t i = 0; i < ini.n_sections; i++) {
			const char *sn = ini.sections[i].name;
			nf += strcmp(sn, "file") == 0 || strcmp(sn, "loader.conf") == 0 ||
			      strcmp(sn, "rc.conf") == 0 || strcmp(sn, "sysctl.conf") == 0;
		}
		t->files = nf ? chk(&x, calloc(nf, sizeof *t->files)) : NULL;
		load_template(&x, t, ini_find(&ini, "template", NULL));
		load_vars(&x, t, ini_find(&ini, "vars", NULL));
		load_source(&x, t, ini_find(&ini, "source", NULL));
		load_pve(&x, t, ini_find(&ini, "pve", NULL));
		load_guest(&x, t, ini_find(&ini, "guest", NULL));
		load_ci(&x, t, ini_find(&ini, "cloud-init", NULL));
		for (size_t i = 0; i < ini.n_sections && (t->files || !nf); i++) {
			const char *sn = ini.sections[i].name;
			if (strcmp(sn, "file") == 0 || strcmp(sn, "loader.conf") == 0 ||
			    strcmp(sn, "rc.conf") == 0 || strcmp(sn, "sysctl.conf") == 0)
				load_file(&x, t, &ini.sections[i]);
		}
	}
	ini_free(&ini);
	if (x.oom || x.nerr) {
		*err = x.oom ? strprintf("%s: out of memory", path) : sbuf_steal(&x.errs);
		sbuf_free(&x.errs);
		tmpl_free(t);
		return -1;
	}
	sbuf_free(&x.errs);
	*out = t;
	return 0;
}

int tmpl_name_valid(const char *name)
{
	return name[0] != '.' && all_chars(name, "._-");
}

/* The template in dirs whose name is nearest to a mistyped one, malloc'd,
 * or NULL. */
static char *closest_template(const char *const *dirs, const char *name)
{
	struct tmpl_info *list = NULL;
	size_t n = 0;
	char *lerr = NULL;
	if (tmpl_list(dirs, &list, &n, &lerr) < 0) {
		free(lerr);
		return NULL;
	}
	const char **names = n ? malloc(n * sizeof *names) : NULL;
	for (size_t i = 0; names && i < n; i++)
		names[i] = list[i].name;
	const char *near = names ? str_closest(name, names, n) : NULL;
	char *copy = near ? strdup(near) : NULL;
	free(names);
	tmpl_list_free(list, n);
	return copy;
}

/* "'KEY' is a PVE N parameter; this cluster runs PVE M" when key is known
 * to a version other than major only, else NULL (and NULL on no memory:
 * *oom set). */
static char *other_version(enum tmpl_kind kind, const char *key, int major, bool *oom)
{
	enum pvekey_kind k = (enum pvekey_kind)kind;
	if (pvekey_lookup_for(major, k, key) || !pvekey_lookup(k, key))
		return NULL;
	char *s = major >= 9 ? strprintf("'%s' is a PVE 8 parameter that PVE 9 dropped; this "
					 "cluster runs PVE %d", key, major)
			     : strprintf("'%s' is a PVE 9 parameter; this cluster runs PVE %d", key,
					 major);
	*oom = !s;
	return s;
}

int tmpl_check_version(const struct tmpl *t, const struct tmpl_kvlist *sets, int major,
		       int minor, char **err)
{
	*err = NULL;
	if (t->kind == TMPL_OPENVZ && major >= 4) {
		*err = strprintf("template %s makes OpenVZ containers, which need PVE 2.x/3.x (this "
				 "cluster runs PVE %d.%d)", t->name ? t->name : "?", major, minor);
		return -1;
	}
	bool oom = false;
	for (size_t i = 0; i < t->pve.n && !*err && !oom; i++) {
		char *why = other_version(t->kind, t->pve.items[i].key, major, &oom);
		if (why)
			*err = strprintf("template %s, line %d: [pve] %s", t->name ? t->name : "?",
					 t->pve.items[i].line, why);
		oom = oom || (why && !*err);
		free(why);
	}
	for (size_t i = 0; sets && i < sets->n && !*err && !oom; i++) {
		char *why = other_version(t->kind, sets->items[i].key, major, &oom);
		if (why)
			*err = strprintf("--set %s", why);
		oom = oom || (why && !*err);
		free(why);
	}
	if (oom) {
		free(*err);
		*err = NULL;
	}
	return *err || oom ? -1 : 0;
}

int tmpl_load(const char *const *dirs, const char *name, struct tmpl **out,
	      char **err)
{
	*out = NULL;
	*err = NULL;
	if (strchr(name, '/'))
		return tmpl_load_file(name, out, err);
	if (!tmpl_name_valid(name)) {
		*err = strprintf("%s: not a template name (letters, digits, '.', '_', '-')", name);
		return -1;
	}
	struct sbuf tried = {0};
	for (size_t i = 0; dirs && dirs[i]; i++) {
		log_debug("templates: looking for %s in %s", name, dirs[i]);
		char *p = strprintf("%s/%s.tmpl", dirs[i], name);
		if (!p)
			break;
		if (access(p, F_OK) == 0) {
			int rc = tmpl_load_file(p, out, err);
			free(p);
			sbuf_free(&tried);
			return rc;
		}
		if (sbuf_addf(&tried, "%s%s", tried.len ? ", " : "", dirs[i]) < 0) {
			free(p);
			break;
		}
		free(p);
	}
	char *near = closest_template(dirs, name);
	*err = strprintf("no template '%s' (looked in %s)%s%s%s", name,
			 tried.len ? tried.s : "no directories", near ? "; did you mean '" : "",
			 near ? near : "", near ? "'?" : "");
	free(near);
	sbuf_free(&tried);
	return -1;
}

static void source_free(struct tmpl_source *s)
{
	kv_free(&s->clone);
	kv_free(&s->iso);
	kv_free(&s->ostemplate);
	kv_free(&s->storage);
	free(s->nic);
	free(s->image);
	memset(s, 0, sizeof *s);
}

static void files_free(struct tmpl_file *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(f[i].section);
		free(f[i].path);
		tmpl_kvlist_free(&f[i].entries);
	}
	free(f);
}

void tmpl_free(struct tmpl *t)
{
	if (!t)
		return;
	free(t->name);
	free(t->path);
	free(t->os);
	free(t->os_version);
	free(t->description);
	source_free(&t->source);
	tmpl_kvlist_free(&t->vars);
	tmpl_kvlist_free(&t->pve);
	free(t->guest.user);
	free(t->guest.pool);
	kv_free(&t->guest.ip);
	tmpl_kvlist_free(&t->ci.params);
	tmpl_kvlist_free(&t->ci.sshkeys);
	files_free(t->files, t->n_files);
	free(t);
}

/* ---- listing ------------------------------------------------------------- */

static int info_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tmpl_info *)a)->name,
		      ((const struct tmpl_info *)b)->name);
}

int tmpl_list(const char *const *dirs, struct tmpl_info **out, size_t *n,
	      char **err)
{
	struct tmpl_info *list = NULL;
	size_t cnt = 0, cap = 0;
	*out = NULL;
	*n = 0;
	*err = NULL;
	for (size_t d = 0; dirs && dirs[d]; d++) {
		log_debug("templates: listing %s", dirs[d]);
		DIR *dir = opendir(dirs[d]);
		if (!dir) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			*err = strprintf("%s: %s", dirs[d], strerror(errno));
			goto fail;
		}
		struct dirent *de;
		while ((de = readdir(dir))) {
			size_t l = strlen(de->d_name);
			if (l <= 5 || strcmp(de->d_name + l - 5, ".tmpl") != 0 ||
			    de->d_name[0] == '.')
				continue;
			int seen = 0;
			for (size_t i = 0; i < cnt && !seen; i++)
				seen = strncmp(list[i].name, de->d_name, l - 5) == 0 &&
				       list[i].name[l - 5] == '\0';
			if (seen)
				continue;
			if (cnt == cap) {
				size_t nc = cap ? cap * 2 : 16;
				struct tmpl_info *nl = realloc(list, nc * sizeof *nl);
				if (!nl) {
					closedir(dir);
					goto oom;
				}
				list = nl;
				cap = nc;
			}
			struct tmpl_info *ti = &list[cnt];
			memset(ti, 0, sizeof *ti);
			ti->name = strndup(de->d_name, l - 5);
			ti->path = strprintf("%s/%s", dirs[d], de->d_name);
			cnt++;
			if (!ti->name || !ti->path) {
				closedir(dir);
				goto oom;
			}
			if (tmpl_load_file(ti->path, &ti->tmpl, &ti->error) < 0 && !ti->error) {
				closedir(dir);
				goto oom;
			}
		}
		closedir(dir);
	}
	if (cnt)
		qsort(list, cnt, sizeof *list, info_cmp);
	*out = list;
	*n = cnt;
	return 0;
oom:
	*err = strdup("out of memory");
fail:
	tmpl_list_free(list, cnt);
	return -1;
}

void tmpl_list_free(struct tmpl_info *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(list[i].name);
		free(list[i].path);
		tmpl_free(list[i].tmpl);
		free(list[i].error);
	}
	free(list);
}

/* ---- expansion ----------------------------------------------------------- */

/* PVE's urlencoded format: only [-%a-zA-Z0-9_.!~*'()]; encode all else. */
static int pct_encode(struct sbuf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		int keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			   (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' ||
			   *p == '.' || *p == '~';
		if (keep ? sbuf_addc(b, (char)*p) < 0
			 : sbuf_addf(b, "%%%c%c", hex[*p >> 4], hex[*p & 15]) < 0)
			return -1;
	}
	return 0;
}

static int expand_kv(struct ctx *x, const char *title, const struct tmpl_kv *in,
		     struct tmpl_kv *out)
{
	if (!in->value)
		return 0;
	char *v = expand(x, title, in, NULL);
	if (!v)
		return -1;
	out->key = chk(x, strdup(in->key));
	out->value = v;
	out->line = in->line;
	return out->key ? 0 : -1;
}

int tmpl_expand(const struct tmpl *t, const struct tmpl_kvlist *vars,
		struct tmpl_inst *out, char **err)
{
	static const struct tmpl_kvlist none = {0};
	struct ctx x = {.path = t->path, .t = t, .vars = vars ? vars : &none};
	memset(out, 0, sizeof *out);
	*err = NULL;

	for (size_t i = 0; i < x.vars->n; i++) {
		const char *k = x.vars->items[i].key;
		if (!is_builtin(k) && !tmpl_kvlist_get(&t->vars, k)) {
			struct sbuf have = {0};
			for (size_t j = 0; j < t->vars.n; j++)
				if (sbuf_addf(&have, "%s%s", j ? ", " : "", t->vars.items[j].key) < 0)
					x.oom = 1;
			xerr(&x, 0, NULL, NULL, "--var %s: the template has no such variable (%s%s)",
			     k, t->vars.n ? "it declares: " : "it declares none",
			     sbuf_str(&have));
			sbuf_free(&have);
		}
	}

	/* [pve] */
	for (size_t i = 0; i < t->pve.n; i++) {
		const struct tmpl_kv *kv = &t->pve.items[i];
		char *v = expand(&x, "[pve]", kv, NULL);
		if (!v)
			continue;
		if (!value_problem(&x, "[pve]", kv->line, kv->key, v) &&
		    tmpl_kvlist_add(&out->pve, kv->key, v, kv->line) < 0)
			x.oom = 1;
		free(v);
	}
	/* [cloud-init] */
	char *ipc0 = NULL;
	for (size_t i = 0; i < t->ci.params.n; i++) {
		const struct tmpl_kv *kv = &t->ci.params.items[i];
		char *v = expand(&x, "[cloud-init]", kv, NULL);
		if (!v)
			continue;
		int before = x.nerr;
		if (strncmp(kv->key, "ipconfig", 8) == 0)
			check_ipconfig(&x, "[cloud-init]", kv, v);
		else if (strcmp(kv->key, "ciuser") == 0 && !all_chars(v, "._-"))
			xerr(&x, kv->line, "[cloud-init]", kv->key, "'%s' is not a user name", v);
		if (x.nerr == before && t->kind == TMPL_QEMU)
			value_problem(&x, "[cloud-init]", kv->line, kv->key, v);
		if (x.nerr == before) {
			if (strcmp(kv->key, "ipconfig0") == 0 && !ipc0)
				ipc0 = chk(&x, strdup(v));
			if (tmpl_kvlist_add(&out->pve, kv->key, v, kv->line) < 0)
				x.oom = 1;
		}
		free(v);
	}
	if (t->ci.sshkeys.n) {
		struct sbuf keys = {0}, enc = {0};
		int line = t->ci.sshkeys.items[0].line;
		for (size_t i = 0; i < t->ci.sshkeys.n; i++) {
			const struct tmpl_kv *kv = &t->ci.sshkeys.items[i];
			char *v = expand(&x, "[cloud-init]", kv, NULL);
			if (!v)
				continue;
			check_sshkey(&x, "[cloud-init]", kv, v);
			if (sbuf_addf(&keys, "%s%s", keys.len ? "\n" : "", v) < 0)
				x.oom = 1;
			free(v);
		}
		if (pct_encode(&enc, sbuf_str(&keys)) < 0 ||
		    tmpl_kvlist_add(&out->pve, "sshkeys", sbuf_str(&enc), line) < 0)
			x.oom = 1;
		sbuf_free(&keys);
		sbuf_free(&enc);
	}
	/* [source] */
	expand_kv(&x, "[source]", &t->source.clone, &out->source.clone);
	expand_kv(&x, "[source]", &t->source.iso, &out->source.iso);
	expand_kv(&x, "[source]", &t->source.ostemplate, &out->source.ostemplate);
	const char *st = var_value(&x, "storage");
	if (st) {
		out->source.storage.key = chk(&x, strdup("storage"));
		out->source.storage.value = chk(&x, strdup(st));
		out->source.storage.line = t->source.storage.line;
		if (!all_chars(st, ".-_"))
			xerr(&x, t->source.storage.line, "[source]", "storage",
			     "'%s' is not a PVE storage id", st);
	}
	out->source.full = t->source.full;
	out->source.bus = t->source.bus;
	if (t->source.nic)
		out->source.nic = chk(&x, strdup(t->source.nic));
	if (t->source.image)
		out->source.image = chk(&x, strdup(t->source.image));
	if (out->source.clone.value && !all_chars(out->source.clone.value, ".-_"))
		xerr(&x, t->source.clone.line, "[source]", "clone",
		     "'%s': expected a template VM id or name", out->source.clone.value);
	/* [guest] */
	if (t->guest.user)
		out->guest.user = chk(&x, strdup(t->guest.user));
	out->guest.port = t->guest.port;
	out->guest.address = t->guest.address;
	if (t->guest.address == TMPL_ADDR_STATIC) {
		expand_kv(&x, "[guest]", &t->guest.ip, &out->guest.ip);
		if (out->guest.ip.value && !all_chars(out->guest.ip.value, ".:-"))
			xerr(&x, t->guest.ip.line, "[guest]", "ip", "'%s' is not an address",
			     out->guest.ip.value);
	} else if (t->guest.address == TMPL_ADDR_CLOUDINIT && ipc0) {
		char *ip = ipconfig_ip(ipc0);
		if (!ip) {
			xerr(&x, 0, "[guest]", "address",
			     "cloud-init: ipconfig0 has no static ip= ('%s')", ipc0);
		} else {
			out->guest.ip.key = chk(&x, strdup("ip"));
			out->guest.ip.value = ip;
		}
	}
	free(ipc0);
	/* file sections */
	if (t->n_files) {
		out->files = chk(&x, calloc(t->n_files, sizeof *out->files));
		for (size_t i = 0; out->files && i < t->n_files; i++) {
			const struct tmpl_file *f = &t->files[i];
			struct tmpl_file *o = &out->files[out->n_files++];
			o->section = chk(&x, strdup(f->section));
			o->path = chk(&x, strdup(f->path));
			o->style = f->style;
			o->line = f->line;
			for (size_t j = 0; j < f->entries.n; j++) {
				const struct tmpl_kv *kv = &f->entries.items[j];
				char *v = expand(&x, f->section, kv, NULL);
				if (!v)
					continue;
				if (f->style == TMPL_FILE_SHVAR)
					check_shvar_value(&x, f->section, kv, v);
				if (tmpl_kvlist_add(&o->entries, kv->key, v, kv->line) < 0)
					x.oom = 1;
				free(v);
			}
		}
	}
	if (x.oom || x.nerr) {
		*err = x.oom ? strprintf("%s: out of memory", t->path) : sbuf_steal(&x.errs);
		sbuf_free(&x.errs);
		tmpl_inst_free(out);
		return -1;
	}
	sbuf_free(&x.errs);
	return 0;
}

void tmpl_inst_free(struct tmpl_inst *inst)
{
	tmpl_kvlist_free(&inst->pve);
	source_free(&inst->source);
	free(inst->guest.user);
	kv_free(&inst->guest.ip);
	files_free(inst->files, inst->n_files);
	memset(inst, 0, sizeof *inst);
}
