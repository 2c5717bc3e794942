/* ini.c - INI parsing and table-driven validation (see ini.h for the
 * syntax). */
#include "ini.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

char *ini_section_title(const struct ini_section *sec)
{
	if (sec->label)
		return strprintf("[%s \"%s\"]", sec->name, sec->label);
	return strprintf("[%s]", sec->name);
}

static int ini_verrf(struct sbuf *errs, const char *path, int line,
		     const struct ini_section *sec, const char *key,
		     const char *fmt, va_list ap)
	__attribute__((format(printf, 6, 0)));

static int ini_verrf(struct sbuf *errs, const char *path, int line,
		     const struct ini_section *sec, const char *key,
		     const char *fmt, va_list ap)
{
	if (errs->len && sbuf_addc(errs, '\n') < 0)
		return -1;
	if (sbuf_add(errs, path) < 0)
		return -1;
	if (line > 0 && sbuf_addf(errs, ":%d", line) < 0)
		return -1;
	if (sbuf_add(errs, ": ") < 0)
		return -1;
	if (sec) {
		char *t = ini_section_title(sec);
		if (!t)
			return -1;
		int rc = sbuf_addf(errs, "%s%s%s: ", t, key ? " " : "",
				   key ? key : "");
		free(t);
		if (rc < 0)
			return -1;
	} else if (key && sbuf_addf(errs, "%s: ", key) < 0) {
		return -1;
	}
	return sbuf_vaddf(errs, fmt, ap);
}

int ini_errf(struct sbuf *errs, const char *path, int line,
	     const struct ini_section *sec, const char *key, const char *fmt,
	     ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = ini_verrf(errs, path, line, sec, key, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- parsing ------------------------------------------------------------- */

static char *dupn(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

static struct ini_section *add_section(struct ini *ini)
{
	if (ini->n_sections == ini->cap) {
		size_t cap = ini->cap ? ini->cap * 2 : 8;
		struct ini_section *s = realloc(ini->sections, cap * sizeof *s);
		if (!s)
			return NULL;
		ini->sections = s;
		ini->cap = cap;
	}
	struct ini_section *sec = &ini->sections[ini->n_sections++];
	memset(sec, 0, sizeof *sec);
	return sec;
}

static struct ini_entry *add_entry(struct ini_section *sec)
{
	if (sec->n_entries == sec->cap) {
		size_t cap = sec->cap ? sec->cap * 2 : 8;
		struct ini_entry *e = realloc(sec->entries, cap * sizeof *e);
		if (!e)
			return NULL;
		sec->entries = e;
		sec->cap = cap;
	}
	struct ini_entry *e = &sec->entries[sec->n_entries++];
	memset(e, 0, sizeof *e);
	return e;
}

/* Parse "[name]" or "[name "label"]" from s[0..n). Returns NULL on success
 * or a description of what is wrong: static, or *msg (malloc'd; "" when
 * out of memory). */
static const char *parse_header(const char *s, size_t n, struct ini *ini, char **msg)
{
	size_t i = 1;
	while (i < n && is_blank(s[i]))
		i++;
	size_t ns = i;
	while (i < n && is_name_char(s[i]))
		i++;
	size_t ne = i;
	if (ne == ns)
		return "section name expected after '['";
	while (i < n && is_blank(s[i]))
		i++;
	const char *label = NULL;
	size_t llen = 0;
	if (i < n && s[i] == '"') {
		size_t ls = ++i;
		while (i < n && s[i] != '"')
			i++;
		if (i >= n)
			return "unterminated section label (missing '\"')";
		label = s + ls;
		llen = i - ls;
		if (llen == 0)
			return "empty section label";
		i++;
		while (i < n && is_blank(s[i]))
			i++;
	}
	if (i < n && is_name_char(s[i]) && !label) {
		/* [pool lan]: the label unquoted, its fix said */
		size_t ws = i;
		while (i < n && s[i] != ']' && !is_blank(s[i]))
			i++;
		*msg = strprintf("expected ']' to end the section header: a label is written in "
				 "double quotes, [%.*s \"%.*s\"]", (int)(ne - ns), s + ns,
				 (int)(i - ws), s + ws);
		return *msg ? *msg : "";
	}
	if (i >= n || s[i] != ']')
		return "expected ']' to end the section header";
	i++;
	while (i < n && is_blank(s[i]))
		i++;
	if (i < n)
		return "unexpected text after ']'";
	struct ini_section *sec = add_section(ini);
	if (!sec)
		return "";
	sec->name = dupn(s + ns, ne - ns);
	if (label)
		sec->label = dupn(label, llen);
	if (!sec->name || (label && !sec->label))
		return "";
	return NULL;
}

int ini_parse(const char *path, const char *text, size_t len, struct ini *out,
	      char **err)
{
	struct ini ini = {0};
	*err = NULL;
	memset(out, 0, sizeof *out);
	ini.path = strdup(path);
	if (!ini.path)
		goto oom;
	size_t pos = 0;
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		pos = 3;
	int line = 0;
	while (pos < len) {
		line++;
		size_t eol = pos;
		while (eol < len && text[eol] != '\n')
			eol++;
		const char *s = text + pos, *line_start = s;
		size_t n = eol - pos;
		pos = eol < len ? eol + 1 : eol;
		if (n && s[n - 1] == '\r')
			n--;
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)s[i];
			if (c == 0) {
				*err = strprintf("%s:%d: NUL byte in file", path, line);
				goto fail;
			}
			if ((c < 0x20 && c != '\t') || c == 0x7f) {
				*err = strprintf("%s:%d: control character 0x%02x in file",
						 path, line, c);
				goto fail;
			}
		}
		while (n && is_blank(*s)) {
			s++;
			n--;
		}
		while (n && is_blank(s[n - 1]))
			n--;
		if (n == 0 || s[0] == '#' || s[0] == ';')
			continue;
		if (s[0] == '[') {
			char *msg = NULL;
			const char *what = parse_header(s, n, &ini, &msg);
			if (what && !*what)
				goto oom;
			if (what) {
				*err = strprintf("%s:%d: %s", path, line, what);
				free(msg);
				goto fail;
			}
			ini.sections[ini.n_sections - 1].line = line;
			continue;
		}
		size_t ke = 0;
		while (ke < n && is_name_char(s[ke]))
			ke++;
		size_t i = ke;
		while (i < n && is_blank(s[i]))
			i++;
		if (ke == 0 || i >= n || s[i] != '=') {
			if (ke == 0)
				*err = strprintf("%s:%d: expected 'key = value' or '[section]'",
						 path, line);
			/* the line did not parse: what it holds is not quoted (it
			 * may be a secret, and the reader of the message may not
			 * be allowed to read the file: pvagentd's peers) */
			else if (i < n && s[i] != '=' && i == ke)
				*err = strprintf("%s:%d: column %zu: invalid character in a key",
						 path, line, (size_t)(s - line_start) + ke + 1);
			else
				*err = strprintf("%s:%d: expected '=' after the key", path, line);
			goto fail;
		}
		if (ini.n_sections == 0) {
			*err = strprintf("%s:%d: %.*s: key outside any section",
					 path, line, (int)ke, s);
			goto fail;
		}
		i++;
		while (i < n && is_blank(s[i]))
			i++;
		struct ini_entry *e = add_entry(&ini.sections[ini.n_sections - 1]);
		if (!e)
			goto oom;
		e->key = dupn(s, ke);
		e->value = dupn(s + i, n - i);
		e->line = line;
		if (!e->key || !e->value)
			goto oom;
	}
	ini.n_lines = line;
	*out = ini;
	return 0;
oom:
	free(*err);
	*err = strprintf("%s: out of memory", path);
fail:
	ini_free(&ini);
	return -1;
}

int ini_load(const char *path, struct ini *out, char **err)
{
	char *text = NULL;
	size_t len = 0;
	*err = NULL;
	memset(out, 0, sizeof *out);
	char *why = NULL;
	if (read_small_file(path, INI_MAX_BYTES, RF_TRUSTED, &text, &len, &why) < 0) {
		*err = strprintf("%s: %s", path, why ? why : "out of memory");
		free(why);
		return -1;
	}
	int rc = ini_parse(path, text, len, out, err);
	free(text);
	return rc;
}

void ini_free(struct ini *ini)
{
	for (size_t i = 0; i < ini->n_sections; i++) {
		struct ini_section *s = &ini->sections[i];
		for (size_t j = 0; j < s->n_entries; j++) {
			free(s->entries[j].key);
			free(s->entries[j].value);
		}
		free(s->entries);
		free(s->name);
		free(s->label);
	}
	free(ini->sections);
	free(ini->path);
	memset(ini, 0, sizeof *ini);
}

static int streq_opt(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

const struct ini_section *ini_find(const struct ini *ini, const char *name,
				   const char *label)
{
	for (size_t i = 0; i < ini->n_sections; i++)
		if (strcmp(ini->sections[i].name, name) == 0 &&
		    streq_opt(ini->sections[i].label, label))
			return &ini->sections[i];
	return NULL;
}

const struct ini_entry *ini_get(const struct ini_section *s, const char *key)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n_entries; i++)
		if (strcmp(s->entries[i].key, key) == 0)
			return &s->entries[i];
	return NULL;
}

/* ---- validation ---------------------------------------------------------- */

int ini_key_matches(const char *spec, const char *key)
{
	size_t sl = strlen(spec);
	if (sl > 3 && strcmp(spec + sl - 3, "[n]") == 0) {
		size_t pl = sl - 3;
		if (strncmp(spec, key, pl) != 0)
			return 0;
		const char *d = key + pl;
		if (*d < '0' || *d > '9' || (d[0] == '0' && d[1]))
			return 0;
		for (; *d; d++)
			if (*d < '0' || *d > '9')
				return 0;
		return 1;
	}
	return strcmp(spec, key) == 0;
}

static const struct ini_key_spec *find_key(const struct ini_key_spec *keys,
					   const char *key)
{
	for (; keys && keys->key; keys++)
		if (ini_key_matches(keys->key, key))
			return keys;
	return NULL;
}

#define ERR(...)                                                      \
	do {                                                          \
		if (ini_errf(errs, ini->path, __VA_ARGS__) < 0)       \
			return -1;                                    \
		nerr++;                                               \
	} while (0)

/* Duplicates in O(n log n) rather than comparing each item with all
 * before it (20,000 sections took seconds): items (a name and an optional
 * label) sorted with their positions; first[i] is then the position of the
 * first item equal to item i (i itself when it is the first). */
struct keyed {
	const char *name, *label;
	size_t i;
};

static int keyed_same(const struct keyed *x, const struct keyed *y)
{
	if (strcmp(x->name, y->name) != 0)
		return 0;
	return streq_opt(x->label, y->label);
}

static int keyed_cmp(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (!c && x->label != y->label)
		c = !x->label ? -1 : !y->label ? 1 : strcmp(x->label, y->label);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* Fills first[0..n) from k (sorted here). */
static void firsts(struct keyed *k, size_t n, size_t *first)
{
	qsort(k, n, sizeof *k, keyed_cmp);
	for (size_t j = 0; j < n; j++)
		first[k[j].i] = j && keyed_same(&k[j - 1], &k[j]) ? first[k[j - 1].i] : k[j].i;
}

/* first[i] for n sections (secs) or n entries of a section (ents: their
 * keys); NULL if memory ran out. */
static size_t *first_of(size_t n, const struct ini_section *secs, const struct ini_entry *ents)
{
	struct keyed *k = malloc((n ? n : 1) * sizeof *k);
	size_t *first = malloc((n ? n : 1) * sizeof *first);
	if (!k || !first) {
		free(k);
		free(first);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = secs ? (struct keyed){secs[i].name, secs[i].label, i}
			    : (struct keyed){ents[i].key, NULL, i};
	firsts(k, n, first);
	free(k);
	return first;
}

static int validate(const struct ini *ini, const struct ini_section_spec *specs,
		    struct sbuf *errs, const size_t *first)
{
	int nerr = 0;
	for (size_t i = 0; i < ini->n_sections; i++) {
		const struct ini_section *sec = &ini->sections[i];
		const struct ini_section_spec *sp = specs;
		while (sp->name && strcmp(sp->name, sec->name) != 0)
			sp++;
		if (!sp->name) {
			ERR(sec->line, sec, NULL, "unknown section");
			continue;
		}
		if ((sp->flags & INI_SEC_LABEL) && !sec->label) {
			ERR(sec->line, sec, NULL,
			    "needs a name: [%s \"NAME\"]", sec->name);
			continue;
		}
		if (!(sp->flags & INI_SEC_LABEL) && sec->label) {
			ERR(sec->line, sec, NULL, "takes no name: write [%s]",
			    sec->name);
			continue;
		}
		if (first[i] != i) {
			ERR(sec->line, sec, NULL, "duplicate section (first at line %d)",
			    ini->sections[first[i]].line);
			continue;
		}
		size_t *fe = first_of(sec->n_entries, NULL, sec->entries);
		if (!fe)
			return -1;
		for (size_t k = 0; k < sec->n_entries; k++) {
			const struct ini_entry *e = &sec->entries[k];
			const struct ini_key_spec *ks = find_key(sp->keys, e->key);
			if (!ks && !(sp->flags & INI_SEC_ANYKEY)) {
				if (ini_errf(errs, ini->path, e->line, sec, e->key, "unknown key") < 0)
					goto oom;
				nerr++;
				continue;
			}
			/* duplicates are refused in ANYKEY sections too */
			if ((!ks || !(ks->flags & INI_KEY_LIST)) && fe[k] != k) {
				if (ini_errf(errs, ini->path, e->line, sec, e->key,
					     "duplicate key (first at line %d)",
					     sec->entries[fe[k]].line) < 0)
					goto oom;
				nerr++;
			}
		}
		free(fe);
		for (const struct ini_key_spec *ks = sp->keys; ks && ks->key; ks++)
			if ((ks->flags & INI_KEY_REQUIRED) && !ini_get(sec, ks->key))
				ERR(sec->line, sec, ks->key, "missing required key");
		continue;
	oom:
		free(fe);
		return -1;
	}
	for (const struct ini_section_spec *sp = specs; sp->name; sp++) {
		if (!(sp->flags & INI_SEC_REQUIRED))
			continue;
		int found = 0;
		for (size_t i = 0; i < ini->n_sections && !found; i++)
			found = strcmp(ini->sections[i].name, sp->name) == 0;
		if (!found) {
			if (ini_errf(errs, ini->path, ini->n_lines > 0 ? ini->n_lines : 1,
				     NULL, NULL, "[%s]: missing required section",
				     sp->name) < 0)
				return -1;
			nerr++;
		}
	}
	return nerr;
}

int ini_validate(const struct ini *ini, const struct ini_section_spec *specs,
		 struct sbuf *errs)
{
	size_t *first = first_of(ini->n_sections, ini->sections, NULL);
	if (!first)
		return -1;
	int rc = validate(ini, specs, errs, first);
	free(first);
	return rc;
}
