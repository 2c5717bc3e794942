/* routes_storage.c - storage downloads and volumes as pve-storage has them:
 * POST /nodes/{node}/storage/{storage}/download-url (API2/Storage/Status.pm
 * download_url and PVE::Tools::download_file_from_url: a "download" task
 * that fetches the URL, verifies the checksum, decompresses where PVE can,
 * checks an image as an untrusted one and stores the file as a volume of
 * its content), DELETE .../content/{volume} (an "imgdel" task), and the
 * source of a disk's import-from (import volumes and their formats), and
 * GET/POST /nodes/{node}/aplinfo (Nodes.pm aplinfo, apl_download: the
 * scenario's "appliances" listed, one downloaded into a storage's template
 * cache as download-url downloads, its sha512sum required), and PUT
 * /storage/{storage} (Config.pm update: the content list only).
 *
 * The simulator fetches only http:// URLs on loopback (127.0.0.0/8), at the
 * moment of the request and in real time, so that tests serve their own
 * files; any other host is refused as unreachable (wget's "unable to
 * resolve host address"), https:// as wget without a trusted certificate
 * would. The task's log and duration then run in simulated time. */
#include "cluster.h"
#include "qemu_guest.h"
#include "tasks.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <strings.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FETCH_MAX ((size_t)512 * 1024 * 1024) /* bytes a download may have */
#define FETCH_MAX_FILES ((size_t)3 << 30) /* with the scenario's "files": a
					     real disk image (the lab) */
#define FETCH_TIMEOUT_MS 10000
#define DOWNLOAD_RATE (100.0 * 1024 * 1024) /* bytes per simulated second */

/* ---- the fetch ----------------------------------------------------------- */

struct fetch {
	int http_status;       /* 0: no HTTP answer */
	char *reason;          /* "Not Found" */
	struct sbuf body;
	char *wget_error;      /* wget's last lines when it fails, or NULL */
	int wget_exit;         /* 0 ok, 4 network, 5 TLS, 8 HTTP error */
};

static void fetch_free(struct fetch *f)
{
	free(f->reason);
	sbuf_free(&f->body);
	free(f->wget_error);
}

/* Write all of buf; -1 on error. */
static int send_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

/* GET url (http://127.x.y.z[:port]/path) into f, as wget would. */
static void fetch_url(const char *url, size_t max, struct fetch *f)
{
	memset(f, 0, sizeof *f);
	if (strncmp(url, "https://", 8) == 0) {
		f->wget_exit = 5;
		f->wget_error = strdup("ERROR: cannot verify the certificate of the download host");
		return;
	}
	const char *host = url + 7; /* "http://" (the schema's pattern) */
	size_t hl = strcspn(host, ":/");
	char hostname[64] = "";
	if (hl < sizeof hostname) {
		memcpy(hostname, host, hl);
		hostname[hl] = 0;
	}
	unsigned port = 80;
	const char *p = host + hl;
	if (*p == ':')
		port = (unsigned)strtoul(p + 1, (char **)&p, 10);
	const char *path = *p == '/' ? p : "/";
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (!hostname[0] || inet_pton(AF_INET, hostname, &sa.sin_addr) != 1 ||
	    (ntohl(sa.sin_addr.s_addr) >> 24) != 127 || port == 0 || port > 65535) {
		f->wget_exit = 4;
		f->wget_error = strprintf("Resolving %s (%s)... failed: Temporary failure in name "
					  "resolution.\nwget: unable to resolve host address '%s'",
					  hostname, hostname, hostname);
		return;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		f->wget_exit = 4;
		f->wget_error = strprintf("Connecting to %s:%u... failed: %s.", hostname, port,
					  strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	char *reqtext = strprintf("GET %s HTTP/1.0\r\nHost: %s:%u\r\nUser-Agent: Wget/1.21.3\r\n"
				  "Accept: */*\r\n\r\n", path, hostname, port);
	struct sbuf raw = {0};
	int ok = reqtext && send_all(fd, reqtext, strlen(reqtext)) == 0;
	free(reqtext);
	while (ok) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int pr = poll(&pfd, 1, FETCH_TIMEOUT_MS);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			ok = 0;
			break;
		}
		char buf[65536];
		ssize_t n = recv(fd, buf, sizeof buf, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (raw.len + (size_t)n > max || sbuf_addn(&raw, buf, (size_t)n) < 0)
			ok = 0;
	}
	close(fd);
	const char *text = raw.len ? sbuf_str(&raw) : "";
	const char *hdr_end = raw.len ? strstr(text, "\r\n\r\n") : NULL;
	int status = 0;
	char reason[64] = "";
	if (ok && hdr_end && sscanf(text, "HTTP/%*s %d %63[^\r\n]", &status, reason) >= 1) {
		f->http_status = status;
		f->reason = strdup(reason);
		size_t off = (size_t)(hdr_end + 4 - text);
		if (status >= 200 && status < 300) {
			if (sbuf_addn(&f->body, text + off, raw.len - off) < 0)
				f->wget_exit = 4;
		} else {
			f->wget_exit = 8;
		}
	} else {
		f->wget_exit = 4;
		f->wget_error = strprintf("Connecting to %s:%u... connected.\nHTTP request sent, "
					  "awaiting response... No data received.", hostname, port);
	}
	sbuf_free(&raw);
}

/* ---- checks ----------------------------------------------------------------- */

/* Lower-case hex digest of data; malloc'd. */
static char *hex_digest(gnutls_digest_algorithm_t alg, const void *data, size_t len)
{
	unsigned char md[64];
	size_t n = gnutls_hash_get_len(alg);
	if (n > sizeof md || gnutls_hash_fast(alg, data, len, md) < 0)
		return NULL;
	char *hex = malloc(2 * n + 1);
	for (size_t i = 0; hex && i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return hex;
}

static uint64_t be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

/* PVE's file_size_info on an untrusted image (qemu-img info): the
 * virtual size into *size, or the error it dies with (malloc'd). */
static char *image_check(const char *format, const struct sbuf *b, const char *path,
			 uint64_t *size)
{
	const unsigned char *d = (const unsigned char *)(b->len ? sbuf_str(b) : "");
	*size = b->len;
	if (strcmp(format, "qcow2") == 0) {
		if (b->len < 72 || memcmp(d, "QFI\xfb", 4) != 0)
			return strdup("failed to query file information with qemu-img");
		if (be64(d + 8) != 0)
			return strprintf("backing file not allowed for untrusted image '%s'!", path);
		*size = be64(d + 24);
	} else if (strcmp(format, "vmdk") == 0) {
		if (b->len < 4 || (memcmp(d, "KDMV", 4) != 0 &&
				   !memmem(d, b->len < 1024 ? b->len : 1024, "# Disk DescriptorFile", 21)))
			return strdup("failed to query file information with qemu-img");
	}
	return NULL;
}

/* The directory of a file-based storage, as its plugin has it; NULL for
 * storages without a path. */
static char *storage_dir(const struct sim_storage *s)
{
	if (strcmp(s->id, "local") == 0 && strcmp(s->type, "dir") == 0)
		return strdup("/var/lib/vz");
	if (strcmp(s->type, "dir") == 0)
		return strprintf("/srv/%s", s->id);
	if (strcmp(s->type, "nfs") == 0 || strcmp(s->type, "cifs") == 0 ||
	    strcmp(s->type, "cephfs") == 0)
		return strprintf("/mnt/pve/%s", s->id);
	return NULL;
}

/* The format of a file of content type import by its extension
 * (UPLOAD_IMPORT_EXT_RE_1), or NULL. */
static const char *import_format(const char *name)
{
	static const char *const ext[] = {"ova", "qcow2", "raw", "vmdk"};
	const char *dot = strrchr(name, '.');
	for (size_t i = 0; dot && i < sizeof ext / sizeof ext[0]; i++)
		if (strcmp(dot + 1, ext[i]) == 0)
			return ext[i];
	return NULL;
}

/* Does name end with one of the extensions (NULL-terminated), in any case,
 * after at least one character? pve-storage's $ISO_EXT_RE_0 and
 * $VZTMPL_EXT_RE_1 are /i (src/PVE/Storage.pm). */
static bool ends_with_nocase(const char *name, const char *const *ext)
{
	size_t a = strlen(name);
	for (size_t i = 0; ext[i]; i++) {
		size_t b = strlen(ext[i]);
		if (a > b && strcasecmp(name + a - b, ext[i]) == 0)
			return true;
	}
	return false;
}

/* ---- download-url ------------------------------------------------------------- */

static const struct {
	const char *name;
	gnutls_digest_algorithm_t alg;
} digests[] = {{"md5", GNUTLS_DIG_MD5},       {"sha1", GNUTLS_DIG_SHA1},
	       {"sha224", GNUTLS_DIG_SHA224}, {"sha256", GNUTLS_DIG_SHA256},
	       {"sha384", GNUTLS_DIG_SHA384}, {"sha512", GNUTLS_DIG_SHA512}};

/* "md5=HEX;sha1=HEX;..." of data, malloc'd. */
static char *all_sums(const struct sbuf *b)
{
	struct sbuf o = {0};
	for (size_t i = 0; i < sizeof digests / sizeof digests[0]; i++) {
		char *h = hex_digest(digests[i].alg, b->len ? sbuf_str(b) : "", b->len);
		if (!h || sbuf_addf(&o, "%s%s=%s", i ? ";" : "", digests[i].name, h) < 0) {
			free(h);
			sbuf_free(&o);
			return NULL;
		}
		free(h);
	}
	return sbuf_steal(&o);
}

/* The digest of algo in sums, malloc'd, or NULL. */
static char *sum_of(const char *sums, const char *algo)
{
	size_t n = strlen(algo);
	for (const char *p = sums; p && *p;) {
		if (strncmp(p, algo, n) == 0 && p[n] == '=')
			return strndup(p + n + 1, strcspn(p + n + 1, ";"));
		p = strchr(p, ';');
		p = p ? p + 1 : NULL;
	}
	return NULL;
}

static void download_end(struct cluster *c, struct sim_task *t, bool ok)
{
	const char *path = t->args ? json_object_get_string(json_object_object_get(t->args, "path"))
				   : NULL;
	if (!ok && path)
		unlink(path); /* a task failed by a fault: PVE removes the file */
	if (!ok || !t->args)
		return;
	const char *volid = json_object_get_string(json_object_object_get(t->args, "volid"));
	const char *content = json_object_get_string(json_object_object_get(t->args, "content"));
	const char *format = json_object_get_string(json_object_object_get(t->args, "format"));
	const char *sums = json_object_get_string(json_object_object_get(t->args, "sums"));
	uint64_t size = (uint64_t)json_object_get_int64(json_object_object_get(t->args, "size"));
	if (!volid || cluster_volume(c, volid, t->node))
		return;
	struct sim_volume *v = volume_add(c, volid, t->node, 0, size, content);
	if (v && format) {
		free(v->format);
		v->format = strdup(format);
	}
	if (v && sums)
		v->sums = strdup(sums);
	if (v && path)
		v->path = strdup(path);
}

/* wget's lines for the fetch f, and its exit code (0: fetched). */
static int wget_log(struct sim_task *t, const char *url, const char *tmp, const struct fetch *f,
		    double *at)
{
	char *stamp = task_stamp(t, *at);
	task_log(t, *at, "--%s--  %s", stamp ? stamp : "", url);
	free(stamp);
	if (f->wget_exit && !f->http_status) {
		task_log(t, *at, "%s", f->wget_error ? f->wget_error : "download failed");
		return f->wget_exit;
	}
	task_log(t, *at, "HTTP request sent, awaiting response... %d %s", f->http_status,
		 f->reason ? f->reason : "");
	if (f->wget_exit) {
		stamp = task_stamp(t, *at);
		task_log(t, *at, "%s ERROR %d: %s.", stamp ? stamp : "", f->http_status,
			 f->reason ? f->reason : "");
		free(stamp);
		return f->wget_exit;
	}
	char *human = human_bytes(f->body.len);
	task_log(t, *at, "Length: %zu (%s) [application/octet-stream]", f->body.len,
		 human ? human : "?");
	free(human);
	task_log(t, *at, "Saving to: '%s'", tmp);
	*at += 0.2 + (double)f->body.len / DOWNLOAD_RATE;
	stamp = task_stamp(t, *at);
	task_log(t, *at, "%s - '%s' saved [%zu/%zu]", stamp ? stamp : "", tmp, f->body.len,
		 f->body.len);
	free(stamp);
	return 0;
}

struct dl {
	const char *url, *content, *sum, *algo, *compression, *format;
	const char *files; /* the cluster's files_dir for an import, or NULL */
	char *dest, *tmp, *volid;
	char *path; /* the real file written (files), or NULL */
	struct sim_volume *have; /* the file exists already */
	/* results */
	uint64_t size;
	char *sums;
};

/* The downloaded file as a real one in d->files (a disk imported from it
 * can then run as QEMU): d->path. 0, or -1 with errno. */
static int keep_file(struct dl *d, const struct sbuf *body)
{
	char *name = strdup(d->volid);
	for (char *q = name; q && *q; q++)
		if (*q == ':' || *q == '/')
			*q = '_';
	d->path = name ? strprintf("%s/%s", d->files, name) : NULL;
	free(name);
	FILE *f = d->path ? fopen(d->path, "wbe") : NULL;
	int ok = f && (body->len == 0 || fwrite(sbuf_str(body), 1, body->len, f) == body->len);
	int saved = errno;
	if (f && fclose(f) != 0 && ok) {
		ok = 0;
		saved = errno;
	}
	if (!ok && d->path) {
		unlink(d->path);
		free(d->path);
		d->path = NULL;
	}
	errno = saved ? saved : EIO;
	return ok ? 0 : -1;
}

/* The worker (download_file_from_url and its callers' checks): its log in
 * t from *at on; NULL when the file is there, else the error it dies with. */
static char *download_work(struct sim_task *t, struct dl *d, double *at)
{
	gnutls_digest_algorithm_t alg = GNUTLS_DIG_UNKNOWN;
	for (size_t i = 0; d->algo && i < sizeof digests / sizeof digests[0]; i++)
		if (strcmp(d->algo, digests[i].name) == 0)
			alg = digests[i].alg;
	if (d->compression && strcmp(d->content, "iso") != 0)
		return strprintf("decompression not supported for %s", d->content);
	if (d->compression) {
		/* KNOWN_COMPRESSION_FORMATS */
		static const char *const known[] = {"gz", "lzo", "zst", "bz2"};
		for (size_t i = 0; i < 4; i++)
			if (strcmp(d->compression, known[i]) == 0)
				return strdup("the simulator does not decompress downloads");
		return strdup("no decompression method found");
	}
	task_log(t, *at, "downloading %s to %s", d->url, d->dest);
	char *lw = d->sum ? strdup(d->sum) : NULL;
	for (char *q = lw; q && *q; q++)
		*q = (char)tolower((unsigned char)*q);
	char *err = NULL;
	if (d->have) {
		char *got = lw && d->algo ? sum_of(d->have->sums, d->algo) : NULL;
		if (!lw)
			err = strprintf("refusing to override existing file '%s'", d->dest);
		else if (got && strcmp(got, lw) == 0)
			task_log(t, *at, "calculating checksum of existing file...OK, got correct "
					 "file already, no need to download");
		else
			err = strprintf("checksum mismatch: got '%s' != expect '%s', aborting",
					got ? got : "?", d->sum);
		free(got);
		free(lw);
		return err;
	}
	struct fetch f;
	fetch_url(d->url, d->files ? FETCH_MAX_FILES : FETCH_MAX, &f);
	int rc = wget_log(t, d->url, d->tmp, &f, at);
	if (rc) {
		err = strprintf("download failed: command 'wget --progress=dot:giga -O %s %s' "
				"failed: exit code %d", d->tmp, d->url, rc);
	} else if (lw) {
		char *got = hex_digest(alg, f.body.len ? sbuf_str(&f.body) : "", f.body.len);
		if (got && strcmp(got, lw) == 0) {
			task_log(t, *at, "calculating checksum...OK, checksum verified");
		} else {
			task_log(t, *at, "calculating checksum...");
			err = strprintf("checksum mismatch: got '%s' != expect '%s'", got ? got : "?",
					d->sum);
		}
		free(got);
	}
	if (!err) {
		d->size = f.body.len;
		char *why = d->format ? image_check(d->format, &f.body, d->tmp, &d->size) : NULL;
		if (why)
			err = strprintf("failed to verify file: %s", why);
		free(why);
	}
	if (!err && !(d->sums = all_sums(&f.body)))
		err = strdup("out of memory");
	if (!err && d->files && keep_file(d, &f.body) < 0)
		err = strprintf("cannot write '%s': %s", d->dest, strerror(errno));
	if (!err)
		task_log(t, *at, "download of '%s' to '%s' finished", d->url, d->dest);
	fetch_free(&f);
	free(lw);
	return err;
}

/* The download task t: its log and end (the volume made when it ends
 * well), answered with its UPID. */
static void download_run(const struct sim_req *req, struct sim_task *t, struct dl *d,
			 struct sim_resp *r)
{
	double at = 0.1;
	char *err = download_work(t, d, &at);
	t->duration = at + 0.1;
	t->end = t->start + t->duration;
	if (err) {
		task_fail_at(t, at, err);
	} else if (!d->have && (t->args = json_object_new_object())) {
		json_object_object_add(t->args, "volid", json_object_new_string(d->volid));
		json_object_object_add(t->args, "content", json_object_new_string(d->content));
		if (d->format)
			json_object_object_add(t->args, "format", json_object_new_string(d->format));
		json_object_object_add(t->args, "sums", json_object_new_string(d->sums));
		json_object_object_add(t->args, "size", json_object_new_int64((int64_t)d->size));
		if (d->path)
			json_object_object_add(t->args, "path", json_object_new_string(d->path));
		t->on_end = download_end;
	} else if (d->path) {
		unlink(d->path); /* failed, or there already */
	}
	free(err);
	task_apply_fault(t, req->task_fail);
	resp_task(r, t);
}

/* download_url's checks before its worker: the file name normalised and
 * checked for the content type, the destination. 0, or -1 (r answered). */
static int download_target(struct sim_storage *s, const char *dir, const char *fname,
			   struct dl *d, struct sim_resp *r)
{
	const char *base = fname;
	for (const char *q = fname; *q; q++)
		if (*q == '/' || *q == '\\')
			base = q + 1;
	char *name = strdup(base);
	for (char *q = name; q && *q; q++)
		if (!isalnum((unsigned char)*q) && !strchr("_.-", *q))
			*q = '_';
	if (!name) {
		resp_error(r, 500, "out of memory");
		return -1;
	}
	const char *c = d->content, *sub = NULL;
	if (strcmp(c, "iso") == 0) {
		sub = "template/iso";
		if (!ends_with_nocase(name, (const char *const[]){".iso", ".img", NULL}))
			sub = NULL;
	} else if (strcmp(c, "vztmpl") == 0) {
		sub = "template/cache";
		if (!ends_with_nocase(name, (const char *const[]){".tar", ".tar.gz", ".tar.xz",
								 ".tar.zst", ".tar.bz2", NULL}))
			sub = NULL;
	} else if ((d->format = import_format(name))) {
		sub = "import";
	}
	if (!sub) {
		resp_param_error(r, "filename", "%s",
				 strcmp(c, "import") == 0 ? "invalid filename or wrong extension"
							  : "wrong file extension");
		free(name);
		return -1;
	}
	d->dest = strprintf("%s/%s/%s", dir, sub, name);
	d->volid = strprintf("%s:%s/%s", s->id, c, name);
	free(name);
	if (!d->dest || !d->volid) {
		resp_error(r, 500, "out of memory");
		return -1;
	}
	return 0;
}

static void route_download_url(struct cluster *c, const struct sim_req *req,
			       const char *node, struct sim_storage *s, struct sim_resp *r)
{
	struct dl d = {
		.url = param_str(req, "url"),
		.content = param_str(req, "content"),
		.sum = param_str(req, "checksum"),
		.algo = param_str(req, "checksum-algorithm"),
		.compression = param_str(req, "compression"),
		.files = strcmp(param_str(req, "content") ? param_str(req, "content") : "", "import") == 0
				 ? c->files_dir
				 : NULL,
	};
	char *sp = strprintf("/storage/%s", s->id), *np = strprintf("/nodes/%s", node);
	bool allowed = sp && np && priv_check(req, r, sp, "Datastore.AllocateTemplate");
	if (allowed && !(priv_has(req, "/", "Sys.Audit") && priv_has(req, "/", "Sys.Modify")) &&
	    !priv_has(req, np, "Sys.AccessNetwork")) {
		/* the 'or' of exec_api2_perm_check: raise_perm_exc() without
		 * arguments, so PVE names neither alternative */
		resp_error(r, 403, "Permission check failed");
		allowed = false;
	}
	free(sp);
	free(np);
	if (!allowed)
		return;
	char *dir = storage_dir(s);
	if (!dir) {
		resp_error(r, 500, "can't upload to storage type '%s', not a file based storage!",
			   s->type);
		return;
	}
	if (!storage_has_content(s, d.content)) {
		resp_error(r, 500, "storage '%s' is not configured for content-type '%s'", s->id,
			   d.content);
		free(dir);
		return;
	}
	struct sim_task *t = NULL;
	if (download_target(s, dir, param_str(req, "filename"), &d, r) == 0) {
		const char *wid = strrchr(d.volid, '/') + 1;
		t = task_new(c, node, "download", wid, req->userid, req->now, 3600);
		d.tmp = t ? strprintf("%s.tmp_dwnl.%u", d.dest, t->pid) : NULL;
		if (!t || !d.tmp)
			resp_error(r, 500, "out of memory");
	}
	if (t && d.tmp) {
		d.have = cluster_volume(c, d.volid, node);
		download_run(req, t, &d, r);
	} else if (t) {
		task_discard(c, t);
	}
	free(d.dest);
	free(d.tmp);
	free(d.volid);
	free(d.sums);
	free(d.path);
	free(dir);
}

/* ---- volumes --------------------------------------------------------------------- */

static void imgdel_end(struct cluster *c, struct sim_task *t, bool ok)
{
	const char *volid = t->args ? json_object_get_string(json_object_object_get(t->args, "volid"))
				    : NULL;
	struct sim_volume *v = ok && volid ? cluster_volume(c, volid, t->node) : NULL;
	if (v)
		volume_remove(c, v);
}

/* DELETE /nodes/{node}/storage/{storage}/content/{volume}: an imgdel task. */
static void route_content_delete(struct cluster *c, const struct sim_req *req, const char *node,
				 struct sim_storage *s, const char *volume, struct sim_resp *r)
{
	char *volid = strchr(volume, ':') ? strdup(volume) : strprintf("%s:%s", s->id, volume);
	struct sim_volume *v = volid ? cluster_volume(c, volid, node) : NULL;
	char *sp = strprintf("/storage/%s", s->id);
	if (!sp || !priv_check(req, r, sp, "Datastore.Allocate")) {
		free(sp);
		free(volid);
		return;
	}
	free(sp);
	if (!v) {
		resp_error(r, 500, "volume '%s' does not exist", volid ? volid : volume);
		free(volid);
		return;
	}
	char *id = v->vmid ? strprintf("%d@%s", v->vmid, s->id) : strdup(s->id);
	struct sim_task *t = id ? task_new(c, node, "imgdel", id, req->userid, req->now, 0.3) : NULL;
	free(id);
	if (t && (t->args = json_object_new_object())) {
		json_object_object_add(t->args, "volid", json_object_new_string(volid));
		task_log(t, 0.2, "Removed volume '%s'", volid);
		t->on_end = imgdel_end;
		task_apply_fault(t, req->task_fail);
	}
	free(volid);
	resp_task(r, t);
}

/* value without its import-from option (the rest of its options kept). */
static char *drop_import_from(const char *value)
{
	struct sbuf b = {0};
	const char *p = strchr(value, ',');
	int bad = sbuf_addn(&b, value, p ? (size_t)(p - value) : strlen(value)) < 0;
	while (p && !bad) {
		p++;
		size_t n = strcspn(p, ",");
		if (strncmp(p, "import-from=", 12) != 0)
			bad = sbuf_addn(&b, ",", 1) < 0 || sbuf_addn(&b, p, n) < 0;
		p = p[n] ? p + n : NULL;
	}
	char *out = bad ? NULL : sbuf_steal(&b);
	sbuf_free(&b);
	return out;
}

/* A disk imported from a real file (the scenario's "files") is the VM's
 * own file, a hard link beside it (the import file may go), and the VM
 * runs as QEMU on it (qemu_guest.h) with an SSH forward on 127.0.4.N. 0,
 * or -1 (said on stderr: the import itself is done). */
static int import_real(struct cluster *c, struct sim_guest *g, const struct sim_volume *src,
		       const char *volid)
{
	struct sim_volume *v = cluster_volume(c, volid, g->node);
	char *name = strdup(volid);
	for (char *q = name; q && *q; q++)
		if (*q == ':' || *q == '/')
			*q = '_';
	char *path = name ? strprintf("%s/%s", c->files_dir, name) : NULL;
	free(name);
	if (!v || !path || link(src->path, path) < 0) {
		fprintf(stderr, "pvesim: VM %d: cannot make its disk from %s: %s\n", g->vmid,
			src->path, path ? strerror(errno) : "out of memory");
		free(path);
		return -1;
	}
	v->path = path;
	if (!g->qemu && !(g->qemu = qemu_guest_new(path, src->format)))
		return -1;
	if (!g->address)
		g->address = cluster_unused_address(c, "127.0.4", 10);
	return 0;
}

/* qemu-server's $check_storage_access on an import-from source: a VM's
 * disk needs VM.Clone on its VM; any other volume pve-storage's
 * check_volume_access (Datastore.Allocate on its storage, or for an
 * import volume one of Datastore.AllocateSpace and Datastore.Audit). */
static bool import_source_access(const struct sim_req *req, const struct sim_volume *sv,
				 struct sim_resp *r)
{
	if (sv->vmid)
		return vm_priv_check(req, r, sv->vmid, "VM.Clone");
	char *sp = strprintf("/storage/%s", sv->storage);
	bool ok = sp && priv_has(req, sp, "Datastore.Allocate");
	if (sp && !ok && strcmp(sv->content, "import") == 0)
		ok = priv_check_any(req, r, sp,
				    (const char *const[]){"Datastore.AllocateSpace", "Datastore.Audit",
							  NULL});
	else if (sp && !ok)
		ok = priv_check(req, r, sp, "Datastore.Allocate");
	if (!sp)
		resp_error(r, 500, "out of memory");
	free(sp);
	return ok;
}

int storage_import_disk(struct cluster *c, const struct sim_req *req, struct sim_guest *g,
			const char *key, const char *value, char **out, double *cost,
			struct sbuf *log, struct sim_resp *r)
{
	char *src = prop_get(value, "import-from"), *vol = drive_volid(value);
	char *sid = vol ? volid_storage(vol) : NULL;
	struct sim_storage *s = sid ? cluster_storage(c, sid) : NULL;
	const char *colon = vol ? strchr(vol, ':') : NULL;
	struct sim_volume *sv = src ? cluster_volume(c, src, g->node) : NULL;
	char *sp = sid ? strprintf("/storage/%s", sid) : NULL;
	int rc = -1;
	if (!src || !vol || !sid) {
		resp_error(r, 500, "out of memory");
	} else if (!colon || strcmp(colon + 1, "0") != 0) {
		resp_param_error(r, key, "'import-from' requires special syntax - use <storage "
				 "ID>:0,import-from=<source>");
	} else if (!s || !storage_on_node(s, g->node)) {
		resp_error(r, 500, "storage '%s' does not exist", sid);
	} else if (!sv) {
		resp_error(r, 500, "cannot import from '%s' - could not get size of %s", src, src);
	} else if (strcmp(sv->content, "images") != 0 && strcmp(sv->content, "import") != 0) {
		resp_param_error(r, key, "%s has wrong type '%s' - needs to be 'images' or 'import'",
				 src, sv->content);
	} else if (strcmp(sv->format ? sv->format : "", "ova") == 0) {
		resp_param_error(r, key, "%s: extracting a disk from an OVA is not modelled by the "
				 "simulator", src);
	} else if (!storage_has_content(s, "images")) {
		resp_error(r, 500, "storage '%s' does not support vm images", sid);
	} else if (sp && priv_check(req, r, sp, "Datastore.AllocateSpace") &&
		   import_source_access(req, sv, r)) {
		const char *nv = volume_alloc(c, s, g->node, g->vmid, sv->size, "vm", "images");
		char *rest = drop_import_from(value), *sz = format_size(sv->size);
		char *withsize = rest && sz ? prop_set(rest, "size", sz) : NULL;
		const char *opts = withsize ? strchr(withsize, ',') : NULL;
		*out = nv && opts ? strprintf("%s%s", nv, opts) : NULL;
		if (!*out) {
			resp_error(r, 500, "out of memory");
		} else {
			rc = 0;
			if (sv->path && c->files_dir)
				import_real(c, g, sv, nv);
			if (cost)
				*cost += 0.5 + (double)sv->size / (200.0 * 1024 * 1024);
			char *h = human_bytes(sv->size);
			if (log)
				sbuf_addf(log, "importing disk '%s' to VM %d ...\ntransferred %s of %s "
					  "(100.00%%)\nSuccessfully imported disk as '%s:%s'\n",
					  src, g->vmid, h ? h : "?", h ? h : "?", key, nv);
			free(h);
		}
		free(rest);
		free(sz);
		free(withsize);
	}
	free(sp);
	free(src);
	free(vol);
	free(sid);
	return rc;
}

/* ---- aplinfo ------------------------------------------------------------------------ */

static json_object *appliance(const struct cluster *c, const char *template)
{
	for (size_t i = 0; c->appliances && i < json_object_array_length(c->appliances); i++) {
		json_object *a = json_object_array_get_idx(c->appliances, i);
		const char *t = json_object_get_string(json_object_object_get(a, "template"));
		if (t && template && strcmp(t, template) == 0)
			return a;
	}
	return NULL;
}

/* POST /nodes/{node}/aplinfo (Nodes.pm apl_download): the appliance's
 * location fetched as download-url fetches, its sha512sum required, into
 * the storage's template cache. */
static void route_apl_download(struct cluster *c, const struct sim_req *req, const char *node,
			       struct sim_resp *r)
{
	const char *tname = param_str(req, "template"), *sid = param_str(req, "storage");
	json_object *a = appliance(c, tname);
	struct sim_storage *s = sid ? cluster_storage(c, sid) : NULL;
	char *sp = sid ? strprintf("/storage/%s", sid) : NULL;
	if (!sp || !priv_check(req, r, sp, "Datastore.AllocateTemplate")) {
		free(sp);
		return;
	}
	free(sp);
	const char *type = a ? json_object_get_string(json_object_object_get(a, "type")) : NULL;
	char *dir = s ? storage_dir(s) : NULL;
	if (!a) {
		resp_param_error(r, "template", "no such template");
	} else if (!s || !storage_on_node(s, node)) {
		resp_error(r, 500, "storage '%s' does not exist", sid);
	} else if (type && strcmp(type, "lxc") != 0 && strcmp(type, "openvz") != 0) {
		resp_error(r, 500, "unknown template type '%s'", type);
	} else if (!storage_has_content(s, "vztmpl") || !dir) {
		resp_error(r, 500, "storage '%s' does not support templates", sid);
	} else {
		struct dl d = {
			.url = json_object_get_string(json_object_object_get(a, "location")),
			.content = "vztmpl",
			.sum = json_object_get_string(json_object_object_get(a, "sha512sum")),
			.algo = "sha512",
			.dest = strprintf("%s/template/cache/%s", dir, tname),
			.volid = strprintf("%s:vztmpl/%s", sid, tname),
		};
		struct sim_task *t = task_new(c, node, "download", tname, req->userid, req->now, 3600);
		d.tmp = t && d.dest ? strprintf("%s.tmp_dwnl.%u", d.dest, t->pid) : NULL;
		if (!t || !d.tmp || !d.volid) {
			resp_error(r, 500, "out of memory");
			if (t)
				task_discard(c, t);
		} else {
			d.have = cluster_volume(c, d.volid, node);
			download_run(req, t, &d, r);
		}
		free(d.dest);
		free(d.tmp);
		free(d.volid);
		free(d.sums);
	}
	free(dir);
}

/* The content types a storage type takes (pve-storage's plugins'
 * plugindata content). */
static const char *type_contents(const char *type)
{
	static const char *const t[][2] = {
		{"dir", "images,rootdir,vztmpl,iso,backup,snippets,import"},
		{"btrfs", "images,rootdir,vztmpl,iso,backup,snippets,import"},
		{"nfs", "images,rootdir,vztmpl,iso,backup,snippets,import"},
		{"cifs", "images,rootdir,vztmpl,iso,backup,snippets,import"},
		{"cephfs", "vztmpl,iso,backup,snippets,import"},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcmp(t[i][0], type) == 0)
			return t[i][1];
	return "images,rootdir"; /* lvm, lvmthin, zfspool, rbd */
}

/* PUT /storage/{storage} (pve-storage API2/Storage/Config.pm update):
 * Datastore.Allocate on /storage; the content list checked against the
 * type's (check_config), the rest of the storage options not modelled. */
static void route_storage_update(struct cluster *c, const struct sim_req *req, const char *id,
				 struct sim_resp *r)
{
	if (!priv_check(req, r, "/storage", "Datastore.Allocate"))
		return;
	struct sim_storage *st = cluster_storage(c, id);
	if (!st) {
		resp_error(r, 500, "storage '%s' does not exist", id);
		return;
	}
	json_object_object_foreach(req->params, k, v) {
		(void)v;
		if (strcmp(k, "storage") != 0 && strcmp(k, "content") != 0 &&
		    strcmp(k, "digest") != 0) {
			resp_error(r, 501, "pvesim: storage option '%s' is not modelled", k);
			return;
		}
	}
	const char *content = param_str(req, "content");
	struct sim_storage allowed = {.content = (char *)type_contents(st->type)};
	struct sbuf b = {0};
	for (const char *p = content ? content : ""; *p;) {
		p += strspn(p, ", ;");
		size_t n = strcspn(p, ", ;");
		if (!n)
			break;
		char *one = strndup(p, n);
		if (!one || !storage_has_content(&allowed, one)) {
			resp_param_error(r, "content", "storage does not support content type '%s'",
					 one ? one : "?");
			free(one);
			sbuf_free(&b);
			return;
		}
		sbuf_addf(&b, "%s%s", b.len ? "," : "", one);
		free(one);
		p += n;
	}
	if (content) {
		char *nc = b.len ? sbuf_steal(&b) : strdup("");
		if (!nc) {
			resp_error(r, 500, "out of memory");
			sbuf_free(&b);
			return;
		}
		free(st->content);
		st->content = nc;
	}
	sbuf_free(&b);
	json_object *o = json_object_new_object();
	jadd_str(o, "storage", st->id);
	jadd_str(o, "type", st->type);
	resp_data(r, o);
}

bool routes_storage(struct cluster *c, const struct sim_req *req, struct path_parts *pp,
		    struct sim_resp *r)
{
	char **s = pp->seg;
	if (pp->n == 2 && strcmp(s[0], "storage") == 0 && strcmp(req->method, "PUT") == 0) {
		route_storage_update(c, req, s[1], r);
		return true;
	}
	if (pp->n == 3 && strcmp(s[0], "nodes") == 0 && strcmp(s[2], "aplinfo") == 0) {
		struct sim_node *nd = route_node(c, s[1], r);
		if (!nd)
			return true;
		if (strcmp(req->method, "POST") == 0) {
			route_apl_download(c, req, nd->name, r);
		} else {
			json_object *arr = NULL;
			if (c->appliances)
				json_object_deep_copy(c->appliances, &arr, NULL);
			resp_data(r, arr ? arr : json_object_new_array());
		}
		return true;
	}
	size_t n = pp->n;
	if (n < 5 || strcmp(s[0], "nodes") != 0 || strcmp(s[2], "storage") != 0)
		return false;
	bool post = strcmp(req->method, "POST") == 0, del = strcmp(req->method, "DELETE") == 0;
	bool dl = n == 5 && post && strcmp(s[4], "download-url") == 0;
	/* the volume id's '/' arrives decoded: it is the rest of the path */
	bool cd = n >= 6 && del && strcmp(s[4], "content") == 0;
	if (!dl && !cd)
		return false;
	struct sim_node *nd = route_node(c, s[1], r);
	if (!nd)
		return true;
	struct sim_storage *st = cluster_storage(c, s[3]);
	if (!st || !storage_on_node(st, nd->name)) {
		resp_error(r, 500, "storage '%s' does not exist", s[3]);
		return true;
	}
	if (dl)
		route_download_url(c, req, nd->name, st, r);
	else {
		struct sbuf vol = {0};
		for (size_t i = 5; i < n; i++)
			sbuf_addf(&vol, "%s%s", i > 5 ? "/" : "", s[i]);
		if (vol.len)
			route_content_delete(c, req, nd->name, st, sbuf_str(&vol), r);
		else
			resp_error(r, 500, "out of memory");
		sbuf_free(&vol);
	}
	return true;
}
