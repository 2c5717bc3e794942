/* test_image.c - the image catalogue and `pvagent image`: every shipped
 * catalogue file loads; bad catalogue files, --url and --checksum are
 * refused with the key and the reason; published checksum files of both
 * forms are read. Through the real tool against the simulator, with the
 * image files a loopback HTTP server of the test serves: `image build` of
 * every catalogue entry makes its template VM (disk imported at the
 * image's size, cloud-init drive, template, tag) and removes the
 * downloaded file; a catalogue whose published checksum file is served
 * builds without --checksum; a wrong checksum, a 404 and a storage without
 * import content fail with PVE's reason and leave no VM and no file; a
 * second build finds the template; --rebuild replaces it; `image rm`
 * removes it; `up` from a built image's template gets a pool address; `up` of a
 * template whose image is not built says so and exits 2 before any
 * change; a build killed (SIGKILL) once each task of it was sent and
 * recorded, then run again, finishes with one download and one create.
 * With [image] mirror, a build needs neither --url nor --checksum (image
 * and checksum file from the mirror), and `templates` (one request) marks
 * the image's template to build first, then ready. */
#include "clirun.h"
#include "faultkinds.h"
#include "httpserve.h"
#include "image.h"
#include "simcli.h"
#include "simproc.h"
#include "store.h"
#include "sshd.h"
#include "util.h"

#include <criterion/criterion.h>
#include <gnutls/crypto.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const shipped[] = {"debian-12",  "debian-13",    "freebsd-14",
				      "freebsd-15", "ubuntu-24.04", "ubuntu-26.04"};
#define N_SHIPPED (sizeof shipped / sizeof shipped[0])

/* ---- the catalogue --------------------------------------------------------------- */

Test(image_catalogue, every_shipped_image_loads)
{
	const char *dirs[] = {"templates", NULL};
	struct image_info *l = NULL;
	size_t n = 0;
	char *err = NULL;
	cr_assert_eq(image_list(dirs, &l, &n, &err), 0);
	cr_assert_eq(n, N_SHIPPED + 4);
	size_t vm = 0;
	for (size_t i = 0; i < n; i++) {
		cr_assert_not_null(l[i].image, "%s: %s", l[i].name, l[i].error);
		const struct image *im = l[i].image;
		if (im->lxc) {
			/* the container counterparts: debian-12-ct is debian-12-standard */
			size_t nl = strlen(im->name);
			cr_assert(nl > 3 && strcmp(im->name + nl - 3, "-ct") == 0, "%s", im->name);
			char *want = strprintf("%.*s-standard", (int)(nl - 3), im->name);
			cr_assert_str_eq(im->appliance, want);
			free(want);
			continue;
		}
		cr_assert_str_eq(l[i].name, shipped[vm++]);
		cr_assert(strncmp(im->url, "https://", 8) == 0, "%s", im->url);
		cr_assert_not_null(im->checksums);
		cr_assert_str_eq(im->format, "qcow2");
		cr_assert_not_null(im->disk);
		/* FreeBSD publishes its images xz-compressed only */
		cr_assert_eq(im->compression != NULL, strncmp(im->name, "freebsd", 7) == 0);
	}
	cr_assert_eq(vm, N_SHIPPED);
	image_list_free(l, n);
}

/* [image] mirror: a VM image's file and checksum file from MIRROR/NAME/;
 * no mirror, or a container image: as published */
Test(image_catalogue, a_mirror_replaces_the_sites)
{
	const char *dirs[] = {"templates", NULL};
	struct image *im = NULL;
	char *err = NULL;
	cr_assert_eq(image_load(dirs, "debian-13", &im, &err), 0, "%s", err);
	char *url = strdup(im->url);
	cr_assert_eq(image_use_mirror(im, NULL), 0);
	cr_assert_str_eq(im->url, url);
	cr_assert_eq(image_use_mirror(im, "http://127.0.0.1:8080/m"), 0);
	cr_assert_str_eq(im->url, "http://127.0.0.1:8080/m/debian-13/debian-13-genericcloud-amd64.qcow2");
	cr_assert_str_eq(im->checksums, "http://127.0.0.1:8080/m/debian-13/SHA512SUMS");
	free(url);
	image_free(im);
	cr_assert_eq(image_load(dirs, "debian-13-ct", &im, &err), 0, "%s", err);
	cr_assert_eq(image_use_mirror(im, "http://127.0.0.1:8080/m"), 0);
	cr_assert_null(im->url);
	cr_assert_str_eq(im->appliance, "debian-13-standard");
	image_free(im);
}

static char *tmpdir;

static void cat_fini(void)
{
	if (tmpdir)
		test_remove_tree(tmpdir);
	free(tmpdir);
	tmpdir = NULL;
}

static void bad_image(const char *text, const char *want)
{
	if (!tmpdir) {
		char t[] = "/tmp/pvagent-test-image.XXXXXX";
		cr_assert_not_null(mkdtemp(t));
		tmpdir = strdup(t);
	}
	char *p = strprintf("%s/bad.image", tmpdir);
	cr_assert_eq(test_write_file(p, text, 0644), 0);
	struct image *im = NULL;
	char *err = NULL;
	cr_assert_eq(image_load_file(p, &im, &err), -1, "accepted:\n%s", text);
	cr_assert_not_null(strstr(err, want), "'%s' not in:\n%s", want, err);
	free(err);
	free(p);
}

#define GOOD_HEAD                                                                               \
	"[image]\nos = debian\nos_version = 13\nchecksum_algorithm = sha512\nuser = debian\n"  \
	"cloudinit = nocloud\nprofile = debian\n"

TestSuite(image_catalogue, .fini = cat_fini);

Test(image_catalogue, bad_entries_and_arguments_refused)
{
	bad_image(GOOD_HEAD "url = ftp://x/y.qcow2\nformat = qcow2\n[vm]\ndisk = scsi0\n",
		  "bad.image:8: [image] url: 'ftp://x/y.qcow2': not an http(s) URL");
	bad_image(GOOD_HEAD "url = https://x/y.qcow2\nformat = iso\n[vm]\ndisk = scsi0\n",
		  "[image] format: 'iso': PVE imports qcow2, raw or vmdk");
	bad_image(GOOD_HEAD "url = https://x/y.qcow2\nformat = qcow2\ncompression = rar\n"
			    "[vm]\ndisk = scsi0\n",
		  "[image] compression: 'rar': expected none, xz, gz, bz2 or zst");
	bad_image(GOOD_HEAD "url = https://x/y.qcow2\nformat = qcow2\n[vm]\ndisk = ide0\n",
		  "[vm] disk: 'ide0': expected scsiN, virtioN or sataN");
	char *algo = NULL, *hex = NULL;
	const char *why = NULL;
	cr_assert_eq(image_checksum_arg("sha256:abc", &algo, &hex, &why), -1);
	cr_assert_str_eq(why, "the checksum is not hexadecimal of the algorithm's length");
	cr_assert_eq(image_checksum_arg("crc32:abcd", &algo, &hex, &why), -1);
	cr_assert_eq(image_checksum_arg("abcd", &algo, &hex, &why), -1);
	cr_assert_eq(image_checksum_arg("MD5:0123456789ABCDEF0123456789abcdef", &algo, &hex, &why),
		     -1); /* algorithm names are lower case */
	cr_assert_eq(image_checksum_arg("md5:0123456789ABCDEF0123456789abcdef", &algo, &hex, &why),
		     0);
	cr_assert_str_eq(hex, "0123456789abcdef0123456789abcdef");
	free(algo);
	free(hex);
	const char *sums = "aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000 *a.img\n"
			   "SHA512 (FreeBSD-x.qcow2.xz) = ABCDEF0123456789abcdef0123456789\n"
			   "bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000  b.img\n";
	char *s = image_checksum_find(sums, "b.img");
	cr_assert_str_eq(s, "bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000");
	free(s);
	s = image_checksum_find(sums, "FreeBSD-x.qcow2.xz");
	cr_assert_str_eq(s, "abcdef0123456789abcdef0123456789");
	free(s);
	cr_assert_null(image_checksum_find(sums, "c.img"));
}

/* ---- through the tool --------------------------------------------------------------- */

static struct simproc sim;
static struct httpserve hs;
static char *keydir;

static void cli_fini(void)
{
	httpserve_stop(&hs);
	simproc_stop(&sim);
}

TestSuite(image_cli, .fini = cli_fini, .timeout = 240);

/* The world: the simulator (images scenario), the file server, the shipped
 * templates and images in the templates directory, an SSH key, a pool;
 * with mirror, [image] mirror = the file server's /mirror/. */
static void world_start_with(struct simcli *w, bool mirror)
{
	cr_assert_eq(httpserve_start(&hs), 0);
	char t[] = "/tmp/pvagent-test-imagekey.XXXXXX";
	cr_assert_not_null(mkdtemp(t));
	keydir = strdup(t);
	char *cmd = strprintf("ssh-keygen -q -t ed25519 -N '' -f '%s/id_ed25519'", keydir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	char *extra = strprintf("[ssh]\nidentity = %s/id_ed25519\n"
				"[pool \"lan\"]\ncidr = 10.9.0.0/24\ngateway = 10.9.0.1\n"
				"range = 10.9.0.10-10.9.0.20\n%s%s%s", keydir,
				mirror ? "[image]\nmirror = " : "", mirror ? hs.base : "",
				mirror ? "/mirror/\n" : "");
	simcli_start(w, &sim, "tests/pvesim/scenarios/images.json", extra);
	free(extra);
	cmd = strprintf("cp -r templates/. '%s' && chmod -R go-w '%s'", w->tdir, w->tdir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

static void world_start(struct simcli *w)
{
	world_start_with(w, false);
}

static void world_free(struct simcli *w)
{
	httpserve_stop(&hs);
	simcli_free(w);
	cr_assert_eq(test_remove_tree(keydir), 0);
	free(keydir);
	keydir = NULL;
}


/* A qcow2 image of vsize bytes (its header), served as name; its
 * "sha256:HEX". */
static char *serve_qcow2(const char *name, unsigned long long vsize)
{
	char *arg = httpserve_put_qcow2(&hs, name, vsize);
	cr_assert_not_null(arg);
	return arg;
}

/* Is config c's name name? */
static bool named(json_object *c, const char *name)
{
	const char *n = json_object_get_string(json_object_object_get(c, "name"));
	return n && strcmp(n, name) == 0;
}

/* The config of the guest named name (new reference), or NULL. */
static json_object *config_of(const char *name)
{
	json_object *st = simproc_state(&sim), *cl = NULL, *gs = NULL, *found = NULL;
	cr_assert(st && json_object_object_get_ex(st, "cluster", &cl) &&
		  json_object_object_get_ex(cl, "guests", &gs));
	for (size_t i = 0; !found && i < json_object_array_length(gs); i++) {
		json_object *c = NULL, *g = json_object_array_get_idx(gs, i);
		if (json_object_object_get_ex(g, "config", &c) &&
		    named(c, name))
			found = json_object_get(c);
	}
	json_object_put(st);
	return found;
}

/* The VMID of the guest named name, 0 when none. */
static int vmid_of(const char *name)
{
	json_object *st = simproc_state(&sim), *cl = NULL, *gs = NULL;
	cr_assert(st && json_object_object_get_ex(st, "cluster", &cl) &&
		  json_object_object_get_ex(cl, "guests", &gs));
	int id = 0;
	for (size_t i = 0; !id && i < json_object_array_length(gs); i++) {
		json_object *c = NULL, *g = json_object_array_get_idx(gs, i);
		if (json_object_object_get_ex(g, "config", &c) &&
		    named(c, name))
			id = json_object_get_int(json_object_object_get(g, "vmid"));
	}
	json_object_put(st);
	return id;
}

/* Import volumes on local now. */
static int import_volumes(void)
{
	long status = 0;
	json_object *a = NULL, *d = NULL;
	cr_assert_eq(sim_api(&sim, "GET", "/nodes/pve1/storage/local/content?content=import", NULL,
			     &status, &a), 0);
	json_object_object_get_ex(a, "data", &d);
	int n = (int)json_object_array_length(d);
	json_object_put(a);
	return n;
}

static const char *cfg(json_object *c, const char *k)
{
	return json_object_get_string(json_object_object_get(c, k));
}

Test(image_cli, build_every_catalogue_entry)
{
	struct simcli w = {0};
	world_start(&w);
	for (size_t i = 0; i < N_SHIPPED; i++) {
		char *file = strprintf("%s.qcow2", shipped[i]);
		char *sum = serve_qcow2(file, (unsigned long long)(i + 1) << 30);
		char *url = strprintf("%s/%s", hs.base, file);
		char *out = NULL;
		cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", shipped[i], "--url", url,
				"--checksum", sum, NULL), 0, "%s", out);
		free(out);
		char *vm = strprintf("%s-image", shipped[i]);
		json_object *c = config_of(vm);
		cr_assert_not_null(c, "no VM %s", vm);
		cr_assert(cfg(c, "template") && strcmp(cfg(c, "template"), "1") == 0);
		cr_assert_str_eq(cfg(c, "tags"), "pvagent-image");
		bool fbsd = strncmp(shipped[i], "freebsd", 7) == 0;
		const char *disk = cfg(c, fbsd ? "virtio0" : "scsi0");
		cr_assert_not_null(disk, "%s", json_object_to_json_string(c));
		cr_assert_not_null(strstr(disk, "size=16G"), "%s", disk); /* grown to disk_size */
		cr_assert_not_null(strstr(cfg(c, "ide2"), "cloudinit"));
		cr_assert_str_eq(cfg(c, "citype"), fbsd ? "configdrive2" : "nocloud");
		cr_assert_str_eq(cfg(c, "cpu"), "x86-64-v2-AES");
		cr_assert_str_eq(cfg(c, "serial0"), "socket");
		cr_assert_not_null(strstr(cfg(c, "description"), sum + 7));
		json_object_put(c);
		cr_assert_eq(import_volumes(), 0, "the downloaded file of %s was left", shipped[i]);
		free(vm);
		free(url);
		free(sum);
		free(file);
	}
	/* again: found, nothing sent */
	int posts = simproc_count(&sim, "POST", "", -1);
	char *out = NULL;
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "debian-13", "--url",
			"http://127.0.0.1:1/x.qcow2", "--checksum",
			"sha256:0000000000000000000000000000000000000000000000000000000000000000",
			NULL), 0, "%s", out);
	cr_assert_not_null(strstr(out, "debian-13-image exists"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sim, "POST", "", -1), posts);
	/* up from the template of a built image, with its pool address */
	cr_assert_eq(simcli_pv(&w, &out, "--local", "--json", "up", "web1", "-t", "debian-13",
			       "--no-start", NULL), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\"address\":\"10.9.0.10\""), "%s", out);
	free(out);
	world_free(&w);
}

/* `templates`' HERE of template name (--json), malloc'd; the request
 * count of each call is one GET of the cluster's resources */
static char *here_of(struct simcli *w, const char *name)
{
	int gets = simproc_count(&sim, "GET", "", -1), res = simproc_count(&sim, "GET",
									    "/cluster/resources", -1);
	char *out = NULL;
	cr_assert_eq(simcli_pv(w, &out, "--json", "templates", NULL), 0, "%s", out);
	cr_assert_eq(simproc_count(&sim, "GET", "", -1), gets + 1, "one request");
	cr_assert_eq(simproc_count(&sim, "GET", "/cluster/resources", -1), res + 1);
	json_object *o = json_tokener_parse(out), *a = NULL;
	cr_assert(o && json_object_object_get_ex(o, "templates", &a), "%s", out);
	char *here = NULL;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *t = json_object_array_get_idx(a, i);
		if (named(t, name))
			here = strdup(json_object_get_string(json_object_object_get(t, "here")));
	}
	json_object_put(o);
	free(out);
	cr_assert_not_null(here, "%s not listed", name);
	return here;
}

/* [image] mirror: `image build debian-13` with neither --url nor
 * --checksum fetches the published checksum file from the mirror, and PVE
 * downloads the image from there (the simulator reaches loopback only, so
 * the catalogue's own site would fail) */
Test(image_cli, build_from_a_mirror)
{
	struct simcli w = {0};
	world_start_with(&w, true);
	char *top = strprintf("%s/mirror", hs.dir), *sub = strprintf("%s/debian-13", top);
	cr_assert(mkdir(top, 0755) == 0 && mkdir(sub, 0755) == 0);
	free(top);
	const char *file = "debian-13-genericcloud-amd64.qcow2";
	char *rel = strprintf("mirror/debian-13/%s", file), *path = strprintf("%s/%s", hs.dir, rel);
	free(serve_qcow2(rel, 3ULL << 30));
	char *img = NULL;
	size_t len = 0;
	cr_assert_eq(read_file(path, &img, &len), 0);
	char *hex = httpserve_put_sum(&hs, rel, img, len, 512);
	cr_assert_not_null(hex);
	char *sums = strprintf("%s  %s\n", hex, file);
	cr_assert_eq(httpserve_put(&hs, "mirror/debian-13/SHA512SUMS", sums, strlen(sums)), 0);
	/* templates marks what the cluster has for each: the image template
	 * needs its build; a template VM and a container template there; OpenVZ
	 * not on PVE 8 */
	const char *want[][2] = {{"debian-13", "image-build"}, {"freebsd-14", "ready"},
				 {"ubuntu-24.04-ct", "ready"}, {"debian-7-openvz", "pve-2-3-only"}};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		char *h = here_of(&w, want[i][0]);
		cr_expect_str_eq(h, want[i][1], "%s", want[i][0]);
		free(h);
	}
	char *out = NULL;
	cr_assert_eq(setenv("COLUMNS", "80", 1), 0);
	cr_assert_eq(simcli_pv(&w, &out, "templates", NULL), 0, "%s", out);
	cr_assert_eq(unsetenv("COLUMNS"), 0);
	cr_expect(strstr(out, "HERE") && strstr(out, "\ndebian-13 ") &&
		  strstr(out, "can be provisioned on this cluster now") &&
		  strstr(out, "'pvagent image build IMAGE'"), "%s", out);
	for (const char *l = out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
		cr_expect_leq(strcspn(l, "\n"), 80, "wider than 80:\n%s", out);
	free(out);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "debian-13", NULL), 0, "%s",
		     out);
	free(out);
	char *h = here_of(&w, "debian-13");
	cr_expect_str_eq(h, "ready");
	free(h);
	json_object *c = config_of("debian-13-image");
	cr_assert_not_null(c);
	cr_assert_not_null(strstr(cfg(c, "scsi0"), "size=16G"), "%s", cfg(c, "scsi0"));
	cr_assert_not_null(strstr(cfg(c, "description"), hex), "%s", cfg(c, "description"));
	json_object_put(c);
	cr_assert_eq(import_volumes(), 0);
	free(sums);
	free(hex);
	free(img);
	free(path);
	free(rel);
	free(sub);
	world_free(&w);
}

Test(image_cli, published_checksums_and_rebuild)
{
	struct simcli w = {0};
	world_start(&w);
	char *sum = serve_qcow2("loop.qcow2", 2ULL << 30);
	char *sums = strprintf("%s *loop.qcow2\n", sum + 7);
	cr_assert_eq(httpserve_put(&hs, "SHA256SUMS", sums, strlen(sums)), 0);
	char *img = strprintf("%s/images/loop.image", w.tdir);
	char *text = strprintf("[image]\nos = debian\nos_version = 13\nurl = %s/loop.qcow2\n"
			       "checksums = %s/SHA256SUMS\nchecksum_algorithm = sha256\n"
			       "format = qcow2\nuser = debian\ncloudinit = nocloud\nprofile = debian\n"
			       "[vm]\nmemory = 1024\ndisk = scsi0\n", hs.base, hs.base);
	cr_assert_eq(test_write_file(img, text, 0644), 0);
	char *out = NULL;
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "loop", NULL), 0, "%s", out);
	free(out);
	json_object *c = config_of("loop-image");
	cr_assert_not_null(c);
	cr_assert_not_null(strstr(cfg(c, "scsi0"), "size=2G"), "%s", cfg(c, "scsi0"));
	cr_assert_str_eq(cfg(c, "memory"), "1024");
	json_object_put(c);
	int old = vmid_of("loop-image");
	/* --rebuild: a new template under the name, the old one gone */
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "loop", "--rebuild", NULL), 0, "%s",
		     out);
	free(out);
	int new = vmid_of("loop-image");
	cr_assert(new > 0 && new != old, "old %d new %d", old, new);
	cr_assert_null(config_of("loop-image-new"));
	cr_assert_null(simproc_config_key(&sim, old, "name"), "the old template stayed");
	/* rm: refused without a terminal and without --yes; on a terminal
	 * "n" keeps it; then --yes removes it */
	char *nm = NULL;
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "rm", "loop", NULL), 2, "%s", out);
	cr_assert_not_null(strstr(out, "--yes"), "%s", out);
	free(out);
	nm = simproc_config_key(&sim, new, "name");
	cr_assert_not_null(nm, "refused, yet removed");
	free(nm);
	int rc = test_pvagent_pty_answer(w.bin, w.conf, "n", &out, "--local", "image", "rm", "loop",
					 NULL);
	cr_assert_eq(rc, 2, "%s", out);
	cr_assert_not_null(strstr(out, "[y/N]"), "%s", out);
	cr_assert_not_null(strstr(out, "loop-image (VM "), "the question names the VM:\n%s", out);
	free(out);
	nm = simproc_config_key(&sim, new, "name");
	cr_assert_not_null(nm, "answered n, yet removed");
	free(nm);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "loop", "--yes", NULL), 2,
		     "%s", out);
	cr_assert_not_null(strstr(out, "--yes is for image rm"), "%s", out);
	free(out);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "rm", "loop", "--yes", NULL), 0, "%s", out);
	free(out);
	cr_assert_null(config_of("loop-image"));
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "rm", "loop", "--yes", NULL), 2, "%s", out);
	cr_assert_not_null(strstr(out, "no template VM loop-image"), "%s", out);
	free(out);
	free(img);
	free(text);
	free(sums);
	free(sum);
	world_free(&w);
}

Test(image_cli, failures_leave_nothing)
{
	struct simcli w = {0};
	world_start(&w);
	char *sum = serve_qcow2("d.qcow2", 1ULL << 30);
	char *url = strprintf("%s/d.qcow2", hs.base);
	char *missing = strprintf("%s/missing.qcow2", hs.base);
	char *out = NULL;
	int vms = simproc_count(&sim, "POST", "/nodes/pve1/qemu", -1);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "debian-12", "--url", url,
			"--checksum",
			"sha256:1111111111111111111111111111111111111111111111111111111111111111",
			NULL), 1, "%s", out);
	cr_assert_not_null(strstr(out, "checksum mismatch: got '"), "%s", out);
	free(out);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "debian-12", "--url", missing,
			"--checksum", sum, NULL), 1, "%s", out);
	cr_assert_not_null(strstr(out, "download failed: command 'wget"), "%s", out);
	cr_assert_not_null(strstr(out, "exit code 8"), "%s", out);
	free(out);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "debian-12", "--url", url,
			"--checksum", sum, "--import-storage", "shared", NULL), 1, "%s", out);
	cr_assert_not_null(strstr(out, "storage 'shared' is not configured for content-type "
				       "'import'"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sim, "POST", "/nodes/pve1/qemu", -1), vms);
	cr_assert_null(config_of("debian-12-image"));
	cr_assert_eq(import_volumes(), 0);
	/* a mirror's user:password in --url is never shown: not by a refused
	 * --url, not in PVE's failed download (-vv included) */
	char *secret_url = strprintf("http://mirror:Sekr1t@%s/missing.qcow2", hs.base + 7);
	cr_assert_eq(simcli_pv(&w, &out, "-vv", "--local", "image", "build", "debian-12", "--url",
			       secret_url, "--checksum", sum, NULL), 1, "%s", out);
	cr_assert_null(strstr(out, "Sekr1t"), "%s", out);
	cr_assert_not_null(strstr(out, "download failed"), "%s", out);
	free(out);
	free(secret_url);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "debian-12", "--url",
			       "ftp://mirror:Sekr1t@x/y.qcow2", NULL), 2, "%s", out);
	cr_assert_null(strstr(out, "Sekr1t"), "%s", out);
	cr_assert_not_null(strstr(out, "--url ftp://***@x/y.qcow2: not an http(s) URL"), "%s", out);
	free(out);
	/* refused before any request */
	int all = simproc_count(&sim, "GET", "", -1);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "freebsd-15", NULL), 2, "%s", out);
	cr_assert_not_null(strstr(out, "published xz-compressed"), "%s", out);
	free(out);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "debian-12", "--url",
			"ftp://x/y.qcow2", NULL), 2, "%s", out);
	cr_assert_not_null(strstr(out, "--url ftp://x/y.qcow2: not an http(s) URL"), "%s", out);
	free(out);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "debian-12", "--checksum",
			"sha256:abc", NULL), 2, "%s", out);
	cr_assert_not_null(strstr(out, "--checksum sha256:abc: the checksum is not hexadecimal"),
			   "%s", out);
	free(out);
	/* up of a template whose image is not built */
	cr_assert_eq(simcli_pv(&w, &out, "--local", "up", "web1", "-t", "ubuntu-26.04", NULL), 2, "%s",
		     out);
	cr_assert_not_null(strstr(out, "run 'pvagent image build ubuntu-26.04' first"), "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sim, "GET", "", -1) - all > 0, 1); /* up looked */
	cr_assert_eq(simproc_count(&sim, "POST", "/nodes/pve1/qemu", -1), vms);
	free(url);
	free(missing);
	free(sum);
	world_free(&w);
}

Test(image_cli, killed_at_each_step_then_resumed)
{
	struct simcli w = {0};
	world_start(&w);
	static const char *const steps[] = {"download", "create", "resize", "template", "cleanup"};
	static const char *const names[] = {"debian-12", "debian-13", "ubuntu-24.04", "ubuntu-26.04",
					    "freebsd-15"};
	char *db = store_path(w.dir);
	for (size_t i = 0; i < 5; i++) {
		char *file = strprintf("%s.qcow2", names[i]);
		char *sum = serve_qcow2(file, 1ULL << 30);
		char *url = strprintf("%s/%s", hs.base, file);
		char *outp = strprintf("%s/kill.out", w.dir);
		int dl = simproc_count(&sim, "POST", "/download-url", -1);
		int cr = simproc_count(&sim, "POST", "/nodes/pve1/qemu", -1);
		const char *argv[] = {w.bin, "-c", w.conf, "--local", "image", "build", names[i],
				      "--url", url, "--checksum", sum, NULL};
		pid_t pid = test_spawn(argv, outp);
		cr_assert_gt(pid, 0);
		cr_assert_eq(test_wait_step_sent(db, names[i], steps[i], true, pid), 0,
			     "%s: step %s never recorded its task", names[i], steps[i]);
		test_kill(&pid);
		char *out = NULL;
		cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", names[i], "--url", url,
				       "--checksum", sum, NULL), 0, "%s after a kill in %s:\n%s",
			     names[i], steps[i], out);
		free(out);
		char *vm = strprintf("%s-image", names[i]);
		json_object *c = config_of(vm);
		cr_assert_not_null(c, "%s: no template after the resume", vm);
		cr_assert(cfg(c, "template") && strcmp(cfg(c, "template"), "1") == 0);
		json_object_put(c);
		cr_assert_eq(simproc_count(&sim, "POST", "/download-url", -1) - dl, 1,
			     "%s: downloaded twice", names[i]);
		cr_assert_eq(simproc_count(&sim, "POST", "/nodes/pve1/qemu", -1) - cr, 1,
			     "%s: created twice", names[i]);
		cr_assert_eq(import_volumes(), 0);
		free(vm);
		free(outp);
		free(url);
		free(sum);
		free(file);
	}
	free(db);
	world_free(&w);
}

/* A container image: the newest template of its appliance in the node's
 * catalogue, downloaded into the template cache; a second build finds it. */
Test(image_cli, container_image_from_the_appliance_catalogue)
{
	struct simcli w = {0};
	cr_assert_eq(httpserve_start(&hs), 0);
	static const char body[] = "a debian 13 container";
	char *sha = httpserve_put_sum(&hs, "ct.tar.zst", body, sizeof body - 1, 512);
	cr_assert_not_null(sha);
	char *apl = strprintf("[{\"template\":\"debian-13-standard_13.0-1_amd64.tar.zst\","
			      "\"type\":\"lxc\",\"location\":\"%s/old\",\"sha512sum\":\"%s\"},"
			      "{\"template\":\"debian-13-standard_13.1-2_amd64.tar.zst\","
			      "\"type\":\"lxc\",\"location\":\"%s/ct.tar.zst\","
			      "\"sha512sum\":\"%s\"}]", hs.base, sha, hs.base, sha);
	char *scen = simcli_scenario_with("tests/pvesim/scenarios/images.json", "appliances", apl,
					  hs.dir);
	simcli_start(&w, &sim, scen, NULL);
	char *cmd = strprintf("cp -r templates/. '%s' && chmod -R go-w '%s'", w.tdir, w.tdir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	char *out = NULL;
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "debian-13-ct", NULL), 0,
		     "%s", out);
	cr_assert_not_null(strstr(out, "container template local:vztmpl/debian-13-standard_13.1-2_"
				       "amd64.tar.zst"), "%s", out);
	free(out);
	long status = 0;
	json_object *a = NULL, *d = NULL;
	cr_assert_eq(sim_api(&sim, "GET", "/nodes/pve1/storage/local/content?content=vztmpl", NULL,
			     &status, &a), 0);
	cr_assert(json_object_object_get_ex(a, "data", &d));
	cr_assert_not_null(strstr(json_object_to_json_string(d), "debian-13-standard_13.1-2"));
	json_object_put(a);
	int posts = simproc_count(&sim, "POST", "/aplinfo", -1);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "debian-13-ct", NULL), 0,
		     "%s", out);
	free(out);
	cr_assert_eq(simproc_count(&sim, "POST", "/aplinfo", -1), posts);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "build", "debian-13-ct", "--url",
			       "http://127.0.0.1/x.qcow2", NULL), 2, "%s", out);
	free(out);
	httpserve_stop(&hs);
	simcli_free(&w);
	free(scen);
	free(apl);
	free(sha);
}

/* ---- issue 36: outcomes that match what is left -------------------------------------- */

/* pvagent --local image build NAME --url URL --checksum SUM [--rebuild]:
 * its exit code, its output in *out. */
static int build(struct simcli *w, char **out, const char *name, const char *url,
		 const char *sum, bool rebuild)
{
	return rebuild ? simcli_pv(w, out, "--local", "image", "build", name, "--url", url,
				   "--checksum", sum, "--rebuild", NULL)
		       : simcli_pv(w, out, "--local", "image", "build", name, "--url", url,
				   "--checksum", sum, NULL);
}

static void clear_faults(void)
{
	long status = 0;
	cr_assert_eq(sim_http(&sim, "DELETE", "/_sim/fault", NULL, NULL, NULL, &status, NULL), 0);
	cr_assert_eq(status, 200);
}

/* A build of name that fails at the fault rule: exit 1, each done step
 * undone, nothing left (no VM, no file, no "left:"). */
static void fails_clean(struct simcli *w, const char *name, const char *url, const char *sum,
			const char *rule, const char *want)
{
	cr_assert_eq(simproc_fault(&sim, rule), 0, "%s", rule);
	char *out = NULL;
	cr_assert_eq(simcli_pv(w, &out, "--local", "image", "build", name, "--url", url,
			       "--checksum", sum, NULL), 1, "%s: %s", rule, out);
	cr_assert(strstr(out, want), "%s: %s", rule, out);
	cr_assert(strstr(out, "undo download") && strstr(out, "undone"), "%s: %s", rule, out);
	cr_assert_null(strstr(out, "left:"), "%s: %s", rule, out);
	cr_assert_null(strstr(out, "needs attention"), "%s: %s", rule, out);
	free(out);
	char *vm = strprintf("%s-image", name);
	cr_assert_null(config_of(vm), "%s: the VM stayed", rule);
	free(vm);
	cr_assert_eq(import_volumes(), 0, "%s: the file stayed", rule);
	clear_faults();
}

/* Run argv until it stops itself after step (PVAGENT_STOP_AFTER), put the
 * fault rule, let it go on: its exit code; its output in *out. */
static int stopped_then_fault(struct simcli *w, const char *const *argv, const char *step,
			      const char *rule, char **out)
{
	char *outp = strprintf("%s/stop.out", w->dir);
	cr_assert_eq(setenv("PVAGENT_STOP_AFTER", step, 1), 0);
	pid_t pid = test_spawn(argv, outp);
	cr_assert_eq(unsetenv("PVAGENT_STOP_AFTER"), 0);
	cr_assert_gt(pid, 0);
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
	cr_assert(WIFSTOPPED(st), "never stopped after %s", step);
	cr_assert_eq(simproc_fault(&sim, rule), 0, "%s", rule);
	cr_assert_eq(kill(pid, SIGCONT), 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	cr_assert_eq(read_file(outp, out, NULL), 0);
	free(outp);
	return WEXITSTATUS(st);
}

Test(image_cli, each_failure_is_undone_and_the_outcome_says_what_is_left)
{
	struct simcli w = {0};
	world_start(&w);
	char *sum = serve_qcow2("f.qcow2", 1ULL << 30);
	char *url = strprintf("%s/f.qcow2", hs.base);
	/* storage full in the create's import task, a refused resize, a failed
	 * template task: every done step undone, exit 1, nothing left */
	fails_clean(&w, "debian-12", url, sum,
		    "{\"method\":\"POST\",\"path\":\"^/nodes/pve1/qemu$\",\"nth\":1,"
		    "\"action\":\"task_fail\",\"message\":\"import failed: No space left on device\"}",
		    "No space left on device");
	fails_clean(&w, "debian-12", url, sum,
		    "{\"method\":\"PUT\",\"path\":\"^/nodes/pve1/qemu/[0-9]+/resize$\",\"nth\":1,"
		    "\"action\":\"status\",\"status\":400,\"message\":\"resize refused\"}",
		    "resize refused");
	fails_clean(&w, "debian-12", url, sum,
		    "{\"method\":\"POST\",\"path\":\"^/nodes/pve1/qemu/[0-9]+/template$\",\"nth\":1,"
		    "\"action\":\"task_fail\",\"message\":\"cannot convert\"}",
		    "cannot convert");
	/* only the cleanup DELETE fails: the template is done, the file is left */
	cr_assert_eq(simproc_fault(&sim, "{\"method\":\"DELETE\",\"path\":"
				   "\"^/nodes/pve1/storage/local/content/\",\"action\":\"status\","
				   "\"status\":500,\"message\":\"storage busy\"}"), 0);
	char *out = NULL;
	cr_assert_eq(build(&w, &out, "debian-12", url, sum, false), 3, "%s", out);
	cr_assert(strstr(out, "left: the downloaded file local:import/"), "%s", out);
	cr_assert(strstr(out, "debian-12-image, is done"), "%s", out);
	cr_assert_null(strstr(out, "not yet a template"), "%s", out);
	free(out);
	json_object *c = config_of("debian-12-image");
	cr_assert(c && cfg(c, "template") && strcmp(cfg(c, "template"), "1") == 0);
	json_object_put(c);
	clear_faults();
	cr_assert_eq(build(&w, &out, "debian-12", url, sum, false), 0, "%s", out);
	free(out);
	cr_assert_eq(import_volumes(), 0, "the resumed job removed the file");
	cr_assert_eq(simproc_named(&sim, "debian-12-image"), 1);
	free(url);
	free(sum);
	world_free(&w);
}

/* --rebuild: the cluster lost after the new template was made (a reset on
 * every request of the replace step) ends needs-attention, and the same
 * command resumes it; a template task whose status cannot be read ends
 * needs-attention, and its resume sends the rename. */
Test(image_cli, a_rebuild_that_lost_the_cluster_or_its_task_is_resumed_to_the_end)
{
	struct simcli w = {0};
	world_start(&w);
	char *sum = serve_qcow2("r.qcow2", 1ULL << 30);
	char *url = strprintf("%s/r.qcow2", hs.base);
	char *out = NULL;
	cr_assert_eq(build(&w, &out, "debian-13", url, sum, false), 0, "%s", out);
	free(out);
	int old = vmid_of("debian-13-image");
	cr_assert_gt(old, 0);
	const char *argv[] = {w.bin, "-c", w.conf, "--local", "image", "build", "debian-13",
			      "--url", url, "--checksum", sum, "--rebuild", NULL};
	int rc = stopped_then_fault(&w, argv, "image:template",
				    "{\"path\":\".\",\"action\":\"reset\"}", &out);
	cr_assert_eq(rc, 3, "%s", out);
	cr_assert(strstr(out, "not yet named debian-13-image"), "%s", out);
	free(out);
	int made = vmid_of("debian-13-image-new");
	cr_assert_gt(made, 0, "the new template is there");
	clear_faults();
	int creates = simproc_count(&sim, "POST", "/nodes/pve1/qemu", -1);
	cr_assert_eq(build(&w, &out, "debian-13", url, sum, true), 0, "%s", out);
	cr_assert(strstr(out, "resumed"), "the same command resumed the job: %s", out);
	free(out);
	cr_assert_eq(simproc_count(&sim, "POST", "/nodes/pve1/qemu", -1), creates,
		     "no second VM was made");
	cr_assert_eq(vmid_of("debian-13-image"), made);
	cr_assert_eq(vmid_of("debian-13-image-new"), 0);
	cr_assert_null(simproc_config_key(&sim, old, "name"), "the old template stayed");
	cr_assert_eq(import_volumes(), 0);
	/* again, the new template's task unreadable (its status and log) */
	old = made;
	cr_assert_eq(simproc_fault(&sim, "{\"method\":\"GET\",\"path\":"
				   "\"^/nodes/pve1/tasks/[^/]*qmtemplate[^/]*/(status|log)$\","
				   "\"action\":\"status\",\"status\":500,\"message\":\"oops\"}"), 0);
	cr_assert_eq(build(&w, &out, "debian-13", url, sum, true), 3, "%s", out);
	free(out);
	made = vmid_of("debian-13-image-new");
	cr_assert_gt(made, 0);
	clear_faults();
	char *db = store_path(w.dir);
	long long id = test_db_int(db, "SELECT max(id) FROM jobs", NULL);
	free(db);
	char ids[24];
	snprintf(ids, sizeof ids, "%lld", id);
	cr_assert_eq(simcli_pv(&w, &out, "--local", "resume", ids, NULL), 0, "%s", out);
	cr_assert(strstr(out, "is debian-13-image now"), "%s", out);
	free(out);
	cr_assert_eq(vmid_of("debian-13-image"), made, "the resumed rename was sent");
	cr_assert_eq(vmid_of("debian-13-image-new"), 0);
	cr_assert_null(simproc_config_key(&sim, old, "name"), "the old template stayed");
	/* killed once the replace's delete of the old template was sent, run
	 * again after that delete ended: the rename is sent, not taken for
	 * the recorded delete */
	old = made;
	char *outp = strprintf("%s/kill.out", w.dir);
	db = store_path(w.dir);
	pid_t pid = test_spawn(argv, outp);
	cr_assert_gt(pid, 0);
	/* the newest job's replace (earlier jobs of the subject have one too) */
	bool sent = false;
	for (int i = 0; i < 3000 && !sent; i++) {
		sent = test_db_int(db, "SELECT count(*) FROM steps WHERE name = 'replace' AND upid "
				   "IS NOT NULL AND job = (SELECT max(id) FROM jobs)", NULL) == 1;
		int st;
		cr_assert(sent || waitpid(pid, &st, WNOHANG) == 0,
			  "the build ended before its replace");
		struct timespec ts = {0, 20L * 1000 * 1000};
		nanosleep(&ts, NULL); /* polling a state, bounded */
	}
	cr_assert(sent, "the replace never recorded its task");
	test_kill(&pid);
	free(db);
	free(outp);
	made = vmid_of("debian-13-image-new");
	cr_assert_gt(made, 0);
	for (int i = 0; i < 600; i++) {
		char *n = simproc_config_key(&sim, old, "name");
		free(n);
		if (!n)
			break;
		cr_assert_eq(simproc_advance(&sim, 1), 0);
	}
	cr_assert_null(simproc_config_key(&sim, old, "name"), "the delete never ended");
	cr_assert_eq(build(&w, &out, "debian-13", url, sum, true), 0, "%s", out);
	free(out);
	cr_assert_eq(vmid_of("debian-13-image"), made, "the rename after a resumed delete was sent");
	cr_assert_eq(vmid_of("debian-13-image-new"), 0);
	free(url);
	free(sum);
	world_free(&w);
}

/* Issue 36: a transient answer to download-url (500, 503, no worker UPID,
 * a reset; before or after the request took effect) is resent once, as
 * up's clone is, after looking whether the first took effect (the file, or
 * its download task): one download each, the template made. */
Test(image_cli, a_lost_download_answer_is_looked_at_then_sent_again_once)
{
	struct simcli w = {0};
	world_start(&w);
	char *sum = serve_qcow2("t.qcow2", 1ULL << 30);
	char *url = strprintf("%s/t.qcow2", hs.base);
	for (size_t i = 0; i < n_fault_kinds; i++) {
		const struct fault_kind *k = &fault_kinds[i];
		/* not transient (a failed task), or past the client's timeout */
		if (strstr(k->name, "task_fail") || strstr(k->name, "delay") ||
		    strstr(k->name, "timeout"))
			continue;
		bool after = strstr(k->name, "after") != NULL;
		char *rule = fault_rule("POST", "/download-url$", 1, k);
		cr_assert_eq(simproc_fault(&sim, rule), 0, "%s", rule);
		free(rule);
		int posts = simproc_count(&sim, "POST", "/download-url", -1);
		char *out = NULL;
		cr_assert_eq(build(&w, &out, "debian-12", url, sum, false), 0, "%s: %s", k->name, out);
		free(out);
		cr_assert_eq(simproc_count(&sim, "POST", "/download-url", -1) - posts, after ? 1 : 2,
			     "%s: download-url sent %d times", k->name,
			     simproc_count(&sim, "POST", "/download-url", -1) - posts);
		json_object *c = config_of("debian-12-image");
		cr_assert(c && cfg(c, "template") && strcmp(cfg(c, "template"), "1") == 0, "%s",
			  k->name);
		json_object_put(c);
		cr_assert_eq(import_volumes(), 0, "%s", k->name);
		cr_assert_eq(simcli_pv(&w, &out, "--local", "image", "rm", "debian-12", "--yes", NULL),
			     0, "%s", out);
		free(out);
		clear_faults();
	}
	free(url);
	free(sum);
	world_free(&w);
}
