/* image.c - the image catalogue: files, checks, checksums (see image.h). */
#include "image.h"

#include "ini.h"
#include "util.h"

#include <ctype.h>
#include <curl/curl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* required for a VM image (kind qemu); a container image needs appliance */
static const char *const vm_required[] = {"url", "checksum_algorithm", "format", "user",
					  "cloudinit", NULL};
static const struct ini_key_spec image_keys[] = {
	{"description", 0}, {"kind", 0}, {"os", INI_KEY_REQUIRED}, {"os_version", INI_KEY_REQUIRED},
	{"url", 0}, {"checksums", 0}, {"checksum_algorithm", 0}, {"format", 0},
	{"compression", 0}, {"user", 0}, {"cloudinit", 0}, {"profile", INI_KEY_REQUIRED},
	{"appliance", 0}, {NULL, 0},
};
static const struct ini_section_spec image_spec[] = {
	{"image", INI_SEC_REQUIRED, image_keys},
	{"vm", INI_SEC_ANYKEY, NULL},
	{NULL, 0, NULL},
};

static const struct {
	const char *name;
	size_t hexlen;
} algos[] = {{"md5", 32},    {"sha1", 40},    {"sha224", 56},
	     {"sha256", 64}, {"sha384", 96}, {"sha512", 128}};

static size_t algo_hexlen(const char *a)
{
	for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++)
		if (strcmp(a, algos[i].name) == 0)
			return algos[i].hexlen;
	return 0;
}

static bool one_of(const char *v, const char *const *l)
{
	for (; *l; l++)
		if (strcmp(v, *l) == 0)
			return true;
	return false;
}

static bool http_url(const char *u)
{
	return (strncmp(u, "http://", 7) == 0 && u[7]) || (strncmp(u, "https://", 8) == 0 && u[8]);
}

struct ctx {
	const char *path;
	const struct ini_section *s;
	struct sbuf errs;
	int n, oom;
};

/* One problem of entry e (NULL: the section): msg (taken). */
static void ierr_msg(struct ctx *x, const struct ini_entry *e, char *msg)
{
	if (!msg || ini_errf(&x->errs, x->path, e ? e->line : x->s->line, x->s,
			     e ? e->key : NULL, "%s", msg) < 0)
		x->oom = 1;
	free(msg);
	x->n++;
}
#define IERR(x, e, ...) ierr_msg(x, e, strprintf(__VA_ARGS__))

/* Copy of key's value (checked by ok when given), or NULL when absent. */
static char *take(struct ctx *x, const char *key, const char *const *ok, const char *what)
{
	const struct ini_entry *e = ini_get(x->s, key);
	if (!e)
		return NULL;
	if (ok && !one_of(e->value, ok))
		IERR(x, e, "'%s': %s", e->value, what);
	char *v = strdup(e->value);
	if (!v)
		x->oom = 1;
	return v;
}

int image_load_file(const char *path, struct image **out, char **err)
{
	*out = NULL;
	*err = NULL;
	struct ini ini;
	if (ini_load(path, &ini, err) < 0)
		return -1;
	struct ctx x = {.path = path};
	struct image *im = calloc(1, sizeof *im);
	int n = ini_validate(&ini, image_spec, &x.errs);
	if (!im || n < 0) {
		x.oom = 1;
	} else if (n == 0) {
		static const char *const fmts[] = {"qcow2", "raw", "vmdk", NULL};
		static const char *const comps[] = {"none", "xz", "gz", "bz2", "zst", NULL};
		static const char *const cis[] = {"nocloud", "configdrive2", NULL};
		const char *slash = strrchr(path, '/');
		const char *base = slash ? slash + 1 : path;
		size_t bl = strlen(base);
		im->name = bl > 6 && strcmp(base + bl - 6, ".image") == 0 ? strndup(base, bl - 6)
									    : strdup(base);
		im->path = strdup(path);
		x.s = ini_find(&ini, "image", NULL);
		static const char *const kinds[] = {"qemu", "lxc", NULL};
		char *kind = take(&x, "kind", kinds, "expected qemu or lxc");
		im->lxc = kind && strcmp(kind, "lxc") == 0;
		free(kind);
		im->appliance = take(&x, "appliance", NULL, NULL);
		for (const char *const *k = vm_required; !im->lxc && *k; k++)
			if (!ini_get(x.s, *k))
				IERR(&x, NULL, "%s: missing (a VM image needs it)", *k);
		if (im->lxc && !im->appliance)
			IERR(&x, NULL, "%s", "appliance: missing (kind lxc: the aplinfo template name)");
		if (!im->lxc && im->appliance)
			IERR(&x, ini_get(x.s, "appliance"), "%s", "only for kind lxc");
		im->description = take(&x, "description", NULL, NULL);
		im->os = take(&x, "os", NULL, NULL);
		im->os_version = take(&x, "os_version", NULL, NULL);
		im->url = take(&x, "url", NULL, NULL);
		im->checksums = take(&x, "checksums", NULL, NULL);
		im->algo = take(&x, "checksum_algorithm", NULL, NULL);
		im->format = take(&x, "format", fmts, "PVE imports qcow2, raw or vmdk");
		im->compression = take(&x, "compression", comps,
				       "expected none, xz, gz, bz2 or zst");
		im->user = take(&x, "user", NULL, NULL);
		im->cloudinit = take(&x, "cloudinit", cis, "expected nocloud or configdrive2");
		im->profile = take(&x, "profile", NULL, NULL);
		if (im->url && !http_url(im->url))
			IERR(&x, ini_get(x.s, "url"), "'%s': not an http(s) URL", im->url);
		if (im->checksums && !http_url(im->checksums))
			IERR(&x, ini_get(x.s, "checksums"), "'%s': not an http(s) URL",
			     im->checksums);
		if (im->algo && !algo_hexlen(im->algo))
			IERR(&x, ini_get(x.s, "checksum_algorithm"),
			     "'%s': expected md5, sha1, sha224, sha256, sha384 or sha512", im->algo);
		if (im->compression && strcmp(im->compression, "none") == 0) {
			free(im->compression);
			im->compression = NULL;
		}
		x.s = ini_find(&ini, "vm", NULL);
		if (im->lxc && x.s)
			IERR(&x, NULL, "%s", "a container image has no [vm] section");
		for (size_t i = 0; x.s && i < x.s->n_entries; i++) {
			const struct ini_entry *e = &x.s->entries[i];
			if (strcmp(e->key, "disk") == 0)
				im->disk = strdup(e->value);
			else if (strcmp(e->key, "disk_size") == 0)
				im->disk_size = strdup(e->value);
			else if (tmpl_kvlist_add(&im->vm, e->key, e->value, e->line) < 0)
				x.oom = 1;
		}
		x.s = x.s ? x.s : ini_find(&ini, "image", NULL);
		if (!im->disk && !im->lxc)
			IERR(&x, NULL, "%s", "[vm] disk: missing (the disk key: scsi0, virtio0, ...)");
		else if (im->disk && strncmp(im->disk, "scsi", 4) != 0 &&
			 strncmp(im->disk, "virtio", 6) != 0 && strncmp(im->disk, "sata", 4) != 0)
			IERR(&x, ini_get(x.s, "disk"), "'%s': expected scsiN, virtioN or sataN",
			     im->disk);
		if (!im->name || !im->path)
			x.oom = 1;
	}
	ini_free(&ini);
	if (x.oom || x.n || n) {
		*err = x.oom ? strdup("out of memory") : sbuf_steal(&x.errs);
		sbuf_free(&x.errs);
		image_free(im);
		return -1;
	}
	sbuf_free(&x.errs);
	*out = im;
	return 0;
}

void image_free(struct image *im)
{
	if (!im)
		return;
	char **fields[] = {&im->name,	    &im->path,	      &im->appliance, &im->description,
			   &im->os,	    &im->os_version,  &im->url,	      &im->checksums,
			   &im->algo,	    &im->format,      &im->compression, &im->user,
			   &im->cloudinit, &im->profile,     &im->disk,      &im->disk_size};
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		free(*fields[i]);
	tmpl_kvlist_free(&im->vm);
	free(im);
}

static bool name_ok(const char *n)
{
	if (!*n)
		return false;
	for (; *n; n++)
		if (!isalnum((unsigned char)*n) && !strchr("._-", *n))
			return false;
	return true;
}

int image_load(const char *const *dirs, const char *name, struct image **out, char **err)
{
	*out = NULL;
	*err = NULL;
	if (!name_ok(name)) {
		*err = strprintf("'%s' is not an image name ('pvagent image list' shows them)", name);
		return -1;
	}
	struct sbuf tried = {0};
	for (size_t i = 0; dirs && dirs[i]; i++) {
		char *p = strprintf("%s/images/%s.image", dirs[i], name);
		struct stat st;
		if (p && stat(p, &st) == 0) {
			int rc = image_load_file(p, out, err);
			free(p);
			sbuf_free(&tried);
			return rc;
		}
		sbuf_addf(&tried, "%s%s/images", tried.len ? ", " : "", dirs[i]);
		free(p);
	}
	*err = strprintf("no image '%s' (searched %s; 'pvagent image list' shows them)", name,
			 tried.len ? sbuf_str(&tried) : "no directories");
	sbuf_free(&tried);
	return -1;
}

static int cmp_info(const void *a, const void *b)
{
	return strcmp(((const struct image_info *)a)->name, ((const struct image_info *)b)->name);
}

int image_list(const char *const *dirs, struct image_info **out, size_t *n, char **err)
{
	*out = NULL;
	*n = 0;
	*err = NULL;
	size_t cap = 0;
	for (size_t i = 0; dirs && dirs[i]; i++) {
		char *d = strprintf("%s/images", dirs[i]);
		DIR *dh = d ? opendir(d) : NULL;
		for (struct dirent *de; dh && (de = readdir(dh));) {
			size_t l = strlen(de->d_name);
			if (l <= 6 || strcmp(de->d_name + l - 6, ".image") != 0)
				continue;
			char *name = strndup(de->d_name, l - 6);
			bool seen = false;
			for (size_t k = 0; name && k < *n; k++)
				seen = seen || strcmp((*out)[k].name, name) == 0;
			if (!name || seen) {
				free(name);
				continue;
			}
			if (*n == cap) {
				cap = cap ? cap * 2 : 16;
				struct image_info *nv = realloc(*out, cap * sizeof *nv);
				if (!nv) {
					free(name);
					break;
				}
				*out = nv;
			}
			if (!*out) {
				free(name);
				break;
			}
			char *p = strprintf("%s/%s", d, de->d_name);
			struct image_info *it = &(*out)[(*n)++];
			it->name = name;
			it->image = NULL;
			it->error = NULL;
			if (!p || image_load_file(p, &it->image, &it->error) < 0)
				it->image = NULL;
			free(p);
		}
		if (dh)
			closedir(dh);
		free(d);
	}
	if (*n)
		qsort(*out, *n, sizeof **out, cmp_info);
	return 0;
}

void image_list_free(struct image_info *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(l[i].name);
		image_free(l[i].image);
		free(l[i].error);
	}
	free(l);
}

int image_checksum_arg(const char *arg, char **algo, char **hex, const char **why)
{
	*algo = *hex = NULL;
	const char *colon = strchr(arg, ':');
	if (!colon) {
		*why = "expected ALGO:HEX (sha256:..., sha512:...)";
		return -1;
	}
	char *a = strndup(arg, (size_t)(colon - arg));
	size_t want = a ? algo_hexlen(a) : 0;
	if (!want) {
		free(a);
		*why = "the algorithm is one of md5, sha1, sha224, sha256, sha384, sha512";
		return -1;
	}
	const char *h = colon + 1;
	bool ok = strlen(h) == want;
	for (const char *p = h; ok && *p; p++)
		ok = isxdigit((unsigned char)*p) != 0;
	if (!ok) {
		free(a);
		*why = "the checksum is not hexadecimal of the algorithm's length";
		return -1;
	}
	char *x = strdup(h);
	for (char *p = x; p && *p; p++)
		*p = (char)tolower((unsigned char)*p);
	if (!x) {
		free(a);
		*why = "out of memory";
		return -1;
	}
	*algo = a;
	*hex = x;
	return 0;
}

static char *lower_hex(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)p[i]))
			return NULL;
	char *h = strndup(p, n);
	for (char *q = h; q && *q; q++)
		*q = (char)tolower((unsigned char)*q);
	return h;
}

char *image_checksum_find(const char *sums, const char *file)
{
	size_t fl = strlen(file);
	for (const char *line = sums; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
			len--;
		size_t hl = strspn(line, "0123456789abcdefABCDEF");
		const char *paren = memchr(line, '(', len);
		if (hl >= 32 && hl < len && line[hl] == ' ') {
			/* "HEX  FILE" or "HEX *FILE" */
			const char *f = line + hl + 1;
			if (*f == ' ' || *f == '*')
				f++;
			if ((size_t)(line + len - f) == fl && strncmp(f, file, fl) == 0)
				return lower_hex(line, hl);
		} else if (paren && (size_t)(line + len - paren) > fl + 4 &&
			   strncmp(paren + 1, file, fl) == 0 && strncmp(paren + 1 + fl, ") = ", 4) == 0) {
			/* "SHA512 (FILE) = HEX" */
			const char *h = paren + 1 + fl + 4;
			return lower_hex(h, (size_t)(line + len - h));
		}
		line = end ? end + 1 : NULL;
	}
	return NULL;
}

char *image_url_file(const char *url)
{
	size_t l = strcspn(url, "?#");
	const char *s = url;
	for (size_t i = 0; i < l; i++)
		if (url[i] == '/')
			s = url + i + 1;
	return strndup(s, (size_t)(url + l - s));
}

/* MIRROR/NAME/(the last element of url), malloc'd */
static char *mirrored(const char *mirror, const char *name, const char *url)
{
	char *file = image_url_file(url);
	char *m = file ? strprintf("%s/%s/%s", mirror, name, file) : NULL;
	free(file);
	return m;
}

int image_use_mirror(struct image *im, const char *mirror)
{
	if (!mirror || im->lxc || !im->url)
		return 0;
	char *url = mirrored(mirror, im->name, im->url);
	char *sums = im->checksums ? mirrored(mirror, im->name, im->checksums) : NULL;
	if (!url || (im->checksums && !sums)) {
		free(url);
		free(sums);
		return -1;
	}
	free(im->url);
	free(im->checksums);
	im->url = url;
	im->checksums = sums;
	return 0;
}

char *image_vm_name(const char *name)
{
	return strprintf("%s-image", name);
}

struct fetchbuf {
	struct sbuf b;
	size_t max;
	bool over;
};

static size_t on_data(char *p, size_t sz, size_t n, void *ctx)
{
	struct fetchbuf *f = ctx;
	if (f->b.len + sz * n > f->max) {
		f->over = true;
		return 0;
	}
	return sbuf_addn(&f->b, p, sz * n) < 0 ? 0 : sz * n;
}

int image_fetch(const char *url, size_t max, long timeout_s, char **out, char **why)
{
	*out = *why = NULL;
	if (!http_url(url)) {
		*why = strprintf("'%s': not an http(s) URL", url);
		return -1;
	}
	CURL *c = curl_easy_init();
	struct fetchbuf f = {.max = max};
	if (!c) {
		*why = strdup("cannot start libcurl");
		return -1;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
	CURLcode rc = curl_easy_perform(c);
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK || code != 200) {
		*why = f.over ? strprintf("%s: larger than %zu bytes", url, max)
		       : rc != CURLE_OK ? strprintf("%s: %s", url, curl_easy_strerror(rc))
					: strprintf("%s: HTTP %ld", url, code);
		sbuf_free(&f.b);
		return -1;
	}
	*out = f.b.len ? sbuf_steal(&f.b) : strdup("");
	sbuf_free(&f.b);
	return *out ? 0 : -1;
}
