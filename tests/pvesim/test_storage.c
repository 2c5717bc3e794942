/* test_storage.c - the simulator's download-url and import-from against
 * files a loopback HTTP server of the test serves (httpserve.h): a qcow2
 * downloaded with its checksum verified becomes an import volume of its
 * virtual size, and a disk imported from it gets that size; a second
 * download with the same checksum is not fetched again; a wrong checksum,
 * a 404, a non-loopback host, a file that is not what its extension says
 * and compression of import content fail the task with PVE's words and
 * leave no volume; a storage that is not file based, a content type the
 * storage lacks and a bad file name are refused at once; import-from of an
 * ISO volume or without the STORAGE:0 syntax is refused; deleting the
 * volume removes it; aplinfo lists the scenario's appliances and downloads
 * one with its sha512sum verified into the template cache, a wrong sum
 * failing the task, an unknown template and a storage without vztmpl
 * refused; with the scenario's "files" (the lab) a downloaded file is a
 * real one, a disk imported from it is a file of its own (the import may
 * go), and each is removed with its volume. */
#include "clirun.h"
#include "httpserve.h"
#include "simcli.h"
#include "simproc.h"
#include "util.h"

#include <criterion/criterion.h>
#include <gnutls/crypto.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct simproc sp;
static struct httpserve hs;

static void fini(void)
{
	httpserve_stop(&hs);
	simproc_stop(&sp);
}

TestSuite(storage, .fini = fini, .timeout = 60);

static void start(void)
{
	cr_assert_eq(httpserve_start(&hs), 0);
	cr_assert_eq(simproc_start(&sp, "tests/pvesim/scenarios/images.json", NULL), 0);
}

static void stop(void)
{
	httpserve_stop(&hs);
	cr_assert_eq(simproc_stop(&sp), 0, "simulator did not exit cleanly");
}

/* A qcow2 header of virtual size vsize (bytes), padded to 512 bytes. */
static void qcow2(unsigned char *b, unsigned long long vsize)
{
	memset(b, 0, 512);
	b[0] = (unsigned char)'Q';
	b[1] = (unsigned char)'F';
	b[2] = (unsigned char)'I';
	b[3] = 0xfb;
	b[7] = 3; /* version */
	for (int i = 0; i < 8; i++)
		b[24 + i] = (unsigned char)(vsize >> (56 - 8 * i));
}

/* POST download-url with form; the UPID, or NULL with *status set. */
static char *download(const char *storage, const char *form, long *status, char **msg)
{
	char *path = strprintf("/nodes/pve1/storage/%s/download-url", storage);
	json_object *ans = NULL;
	cr_assert_eq(sim_api(&sp, "POST", path, form, status, &ans), 0);
	free(path);
	char *upid = NULL;
	json_object *d = NULL;
	if (*status == 200 && json_object_object_get_ex(ans, "data", &d))
		upid = strdup(json_object_get_string(d));
	if (msg)
		*msg = strdup(ans ? json_object_to_json_string(ans) : "");
	json_object_put(ans);
	return upid;
}

/* Run the task to its end: its exit status, and *log its lines. */
static char *task_end(const char *upid, char **log)
{
	cr_assert_eq(simproc_advance(&sp, 30), 0);
	char *st = strprintf("/nodes/pve1/tasks/%s/status", upid);
	char *lp = strprintf("/nodes/pve1/tasks/%s/log?limit=500", upid);
	long status = 0;
	json_object *a = NULL, *d = NULL, *v = NULL;
	cr_assert_eq(sim_api(&sp, "GET", st, NULL, &status, &a), 0);
	cr_assert_eq(status, 200);
	cr_assert(json_object_object_get_ex(a, "data", &d) &&
		  json_object_object_get_ex(d, "exitstatus", &v), "task not ended");
	char *exit = strdup(json_object_get_string(v));
	json_object_put(a);
	a = NULL;
	cr_assert_eq(sim_api(&sp, "GET", lp, NULL, &status, &a), 0);
	struct sbuf b = {0};
	json_object_object_get_ex(a, "data", &d);
	for (size_t i = 0; i < json_object_array_length(d); i++)
		sbuf_addf(&b, "%s\n", json_object_get_string(json_object_object_get(
					       json_object_array_get_idx(d, i), "t")));
	*log = sbuf_steal(&b);
	sbuf_free(&b);
	json_object_put(a);
	free(st);
	free(lp);
	return exit;
}

static int volumes(const char *content, const char *volid)
{
	char *path = strprintf("/nodes/pve1/storage/local/content?content=%s", content);
	long status = 0;
	json_object *a = NULL, *d = NULL;
	cr_assert_eq(sim_api(&sp, "GET", path, NULL, &status, &a), 0);
	free(path);
	int n = 0;
	json_object_object_get_ex(a, "data", &d);
	for (size_t i = 0; i < json_object_array_length(d); i++)
		n += strcmp(json_object_get_string(json_object_object_get(
				    json_object_array_get_idx(d, i), "volid")), volid) == 0;
	json_object_put(a);
	return n;
}

/* Download name (served) as import content; the task's exit and log. */
static char *fetch_import(const char *name, const char *extra, char **log)
{
	char *form = strprintf("content=import&filename=%s&url=%s/%s%s", name, hs.base, name,
			       extra ? extra : "");
	long status = 0;
	char *msg = NULL;
	char *upid = download("local", form, &status, &msg);
	cr_assert_not_null(upid, "%ld %s", status, msg);
	free(msg);
	free(form);
	char *exit = task_end(upid, log);
	free(upid);
	return exit;
}

Test(storage, download_verified_then_imported)
{
	start();
	unsigned char img[512];
	qcow2(img, 3ULL << 30);
	char *sum = httpserve_put_sum(&hs, "deb.qcow2", img, sizeof img, 256);
	cr_assert_not_null(sum);
	char *extra = strprintf("&checksum=%s&checksum-algorithm=sha256", sum);
	char *log = NULL;
	char *exit = fetch_import("deb.qcow2", extra, &log);
	cr_assert_str_eq(exit, "OK", "%s", log);
	cr_assert_not_null(strstr(log, "downloading http://127.0.0.1:"), "%s", log);
	cr_assert_not_null(strstr(log, "/var/lib/vz/import/deb.qcow2"), "%s", log);
	cr_assert_not_null(strstr(log, "calculating checksum...OK, checksum verified"), "%s", log);
	cr_assert_eq(volumes("import", "local:import/deb.qcow2"), 1);
	free(exit);
	free(log);
	/* again with the same checksum: not fetched again */
	exit = fetch_import("deb.qcow2", extra, &log);
	cr_assert_str_eq(exit, "OK");
	cr_assert_not_null(strstr(log, "OK, got correct file already, no need to download"), "%s",
			   log);
	free(exit);
	free(log);
	/* without a checksum: PVE refuses to overwrite */
	exit = fetch_import("deb.qcow2", NULL, &log);
	cr_assert_not_null(strstr(exit, "refusing to override existing file"), "%s", exit);
	free(exit);
	free(log);
	/* a VM disk imported from it has its virtual size */
	long status = 0;
	json_object *a = NULL;
	cr_assert_eq(sim_api(&sp, "POST", "/nodes/pve1/qemu",
			     "vmid=700&name=imp&scsi0=local-lvm%3A0%2Cimport-from%3Dlocal%3Aimport%2F"
			     "deb.qcow2%2Cdiscard%3Don", &status, &a), 0);
	cr_assert_eq(status, 200, "%s", json_object_to_json_string(a));
	json_object_put(a);
	cr_assert_eq(simproc_advance(&sp, 60), 0);
	char *disk = simproc_config_key(&sp, 700, "scsi0");
	cr_assert_not_null(disk);
	cr_assert_not_null(strstr(disk, "local-lvm:vm-700-disk-0"), "%s", disk);
	cr_assert_not_null(strstr(disk, "size=3G"), "%s", disk);
	cr_assert_not_null(strstr(disk, "discard=on"), "%s", disk);
	cr_assert_null(strstr(disk, "import-from"), "%s", disk);
	free(disk);
	/* the volume deleted */
	cr_assert_eq(sim_api(&sp, "DELETE", "/nodes/pve1/storage/local/content/local:import/deb.qcow2",
			     NULL, &status, &a), 0);
	cr_assert_eq(status, 200, "%s", json_object_to_json_string(a));
	json_object_put(a);
	cr_assert_eq(simproc_advance(&sp, 5), 0);
	cr_assert_eq(volumes("import", "local:import/deb.qcow2"), 0);
	free(extra);
	free(sum);
	stop();
}

Test(storage, failed_downloads_leave_no_volume)
{
	start();
	unsigned char img[512];
	qcow2(img, 1ULL << 30);
	cr_assert_eq(httpserve_put(&hs, "a.qcow2", img, sizeof img), 0);
	cr_assert_eq(httpserve_put(&hs, "fake.qcow2", "not an image", 12), 0);
	char *log = NULL, *exit;
	exit = fetch_import("a.qcow2", "&checksum=00ff&checksum-algorithm=sha256", &log);
	cr_assert_not_null(strstr(exit, "checksum mismatch: got '"), "%s", exit);
	cr_assert_not_null(strstr(exit, "' != expect '00ff'"), "%s", exit);
	free(exit);
	free(log);
	exit = fetch_import("missing.qcow2", NULL, &log);
	cr_assert_not_null(strstr(exit, "download failed: command 'wget --progress=dot:giga -O "
					"/var/lib/vz/import/missing.qcow2.tmp_dwnl."), "%s", exit);
	cr_assert_not_null(strstr(exit, "failed: exit code 8"), "%s", exit);
	cr_assert_not_null(strstr(log, "ERROR 404: Not Found."), "%s", log);
	free(exit);
	free(log);
	exit = fetch_import("fake.qcow2", NULL, &log);
	cr_assert_str_eq(exit, "failed to verify file: failed to query file information with "
			       "qemu-img");
	free(exit);
	free(log);
	exit = fetch_import("a.qcow2", "&compression=gz", &log);
	cr_assert_str_eq(exit, "decompression not supported for import");
	free(exit);
	free(log);
	/* anything but loopback is unreachable */
	long status = 0;
	char *msg = NULL;
	char *upid = download("local", "content=import&filename=x.qcow2&url=http://192.0.2.1/x.qcow2",
			      &status, &msg);
	cr_assert_not_null(upid, "%s", msg);
	free(msg);
	exit = task_end(upid, &log);
	cr_assert_not_null(strstr(exit, "exit code 4"), "%s", exit);
	cr_assert_not_null(strstr(log, "unable to resolve host address '192.0.2.1'"), "%s", log);
	free(exit);
	free(log);
	free(upid);
	cr_assert_eq(volumes("import", "local:import/a.qcow2"), 0);
	cr_assert_eq(volumes("import", "local:import/fake.qcow2"), 0);
	/* refused before any task */
	cr_assert_null(download("local-lvm", "content=import&filename=a.qcow2&url=http://127.0.0.1/a",
				&status, &msg));
	cr_assert_not_null(strstr(msg, "can't upload to storage type 'lvmthin', not a file based "
				       "storage!"), "%s", msg);
	free(msg);
	cr_assert_null(download("shared", "content=import&filename=a.qcow2&url=http://127.0.0.1/a",
				&status, &msg));
	cr_assert_not_null(strstr(msg, "storage 'shared' is not configured for content-type "
				       "'import'"), "%s", msg);
	free(msg);
	cr_assert_null(download("local", "content=import&filename=a.img&url=http://127.0.0.1/a",
				&status, &msg));
	cr_assert_eq(status, 400);
	cr_assert_not_null(strstr(msg, "invalid filename or wrong extension"), "%s", msg);
	free(msg);
	/* pve-storage's ISO and container template extensions, in any case
	 * ($ISO_EXT_RE_0, $VZTMPL_EXT_RE_1: .tar and .tar.bz2 too): taken
	 * (the task then fails on the unreachable host); others refused */
	static const char *const names[][2] = {
		{"iso", "x.ISO"},	 {"iso", "x.Img"},	    {"vztmpl", "ct.tar"},
		{"vztmpl", "ct.TAR.BZ2"}, {"vztmpl", "ct.tar.Zst"}, {"vztmpl", "ct.tgz"},
		{"vztmpl", "ct.tar.lz"},  {"iso", "x.iso.gz"}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		bool ok = i < 5;
		char *form = strprintf("content=%s&filename=%s&url=http://192.0.2.1/f", names[i][0],
				       names[i][1]);
		upid = download("local", form, &status, &msg);
		cr_assert_eq(upid != NULL, ok, "%s: %ld %s", form, status, msg);
		if (ok) {
			exit = task_end(upid, &log);
			cr_assert_not_null(strstr(exit, "exit code 4"), "%s", exit);
			free(exit);
			free(log);
		} else {
			cr_assert_not_null(strstr(msg, "wrong file extension"), "%s", msg);
		}
		free(upid);
		free(msg);
		free(form);
	}
	/* import-from refusals */
	json_object *a = NULL;
	cr_assert_eq(sim_api(&sp, "POST", "/nodes/pve1/qemu",
			     "vmid=701&scsi0=local-lvm%3A0%2Cimport-from%3Dlocal%3Aiso%2F"
			     "FreeBSD-14.1-RELEASE-amd64-disc1.iso", &status, &a), 0);
	cr_assert_eq(status, 400);
	cr_assert_not_null(strstr(json_object_to_json_string(a), "has wrong type 'iso'"));
	json_object_put(a);
	cr_assert_eq(sim_api(&sp, "POST", "/nodes/pve1/qemu",
			     "vmid=702&scsi0=local-lvm%3A4%2Cimport-from%3Dlocal%3Aimport%2Fa.qcow2",
			     &status, &a), 0);
	cr_assert_eq(status, 400);
	cr_assert_not_null(strstr(json_object_to_json_string(a), "requires special syntax"));
	json_object_put(a);
	stop();
}

/* The images scenario with two appliances served by hs (one with a wrong
 * sha512sum); its path (malloc'd, in hs's directory). */
static char *apl_scenario(const char *sha)
{
	char *txt = strprintf("[{\"template\":\"debian-13-standard_13.1-2_amd64.tar.zst\","
			      "\"type\":\"lxc\",\"os\":\"debian-13\",\"section\":\"system\","
			      "\"location\":\"%s/ct.tar.zst\",\"sha512sum\":\"%s\"},"
			      "{\"template\":\"bad-standard_1_amd64.tar.zst\",\"type\":\"lxc\","
			      "\"location\":\"%s/ct.tar.zst\",\"sha512sum\":\"%0128d\"}]",
			      hs.base, sha, hs.base, 0);
	char *path = simcli_scenario_with("tests/pvesim/scenarios/images.json", "appliances", txt,
					  hs.dir);
	free(txt);
	return path;
}

Test(storage, aplinfo_lists_and_downloads)
{
	cr_assert_eq(httpserve_start(&hs), 0);
	static const char body[] = "a container template";
	char *sha = httpserve_put_sum(&hs, "ct.tar.zst", body, sizeof body - 1, 512);
	cr_assert_not_null(sha);
	char *scen = apl_scenario(sha);
	cr_assert_eq(simproc_start(&sp, scen, NULL), 0);
	long status = 0;
	json_object *a = NULL, *d = NULL;
	cr_assert_eq(sim_api(&sp, "GET", "/nodes/pve1/aplinfo", NULL, &status, &a), 0);
	cr_assert_eq(status, 200);
	cr_assert(json_object_object_get_ex(a, "data", &d) && json_object_array_length(d) == 2);
	json_object_put(a);
	cr_assert_eq(sim_api(&sp, "POST", "/nodes/pve1/aplinfo",
			     "storage=local&template=debian-13-standard_13.1-2_amd64.tar.zst",
			     &status, &a), 0);
	cr_assert_eq(status, 200, "%s", json_object_to_json_string(a));
	json_object_object_get_ex(a, "data", &d);
	char *log = NULL, *exit = task_end(json_object_get_string(d), &log);
	json_object_put(a);
	cr_assert_str_eq(exit, "OK", "%s", log);
	cr_assert_not_null(strstr(log, "/var/lib/vz/template/cache/debian-13-standard_13.1-2_amd64"
				       ".tar.zst"), "%s", log);
	cr_assert_not_null(strstr(log, "calculating checksum...OK, checksum verified"), "%s", log);
	free(exit);
	free(log);
	cr_assert_eq(volumes("vztmpl", "local:vztmpl/debian-13-standard_13.1-2_amd64.tar.zst"), 1);
	cr_assert_eq(sim_api(&sp, "POST", "/nodes/pve1/aplinfo",
			     "storage=local&template=bad-standard_1_amd64.tar.zst", &status, &a), 0);
	json_object_object_get_ex(a, "data", &d);
	exit = task_end(json_object_get_string(d), &log);
	json_object_put(a);
	cr_assert_not_null(strstr(exit, "checksum mismatch"), "%s", exit);
	free(exit);
	free(log);
	cr_assert_eq(volumes("vztmpl", "local:vztmpl/bad-standard_1_amd64.tar.zst"), 0);
	cr_assert_eq(sim_api(&sp, "POST", "/nodes/pve1/aplinfo",
			     "storage=local&template=nosuch.tar.zst", &status, &a), 0);
	cr_assert_eq(status, 400);
	cr_assert_not_null(strstr(json_object_to_json_string(a), "no such template"));
	json_object_put(a);
	cr_assert_eq(sim_api(&sp, "POST", "/nodes/pve1/aplinfo",
			     "storage=local-lvm&template=bad-standard_1_amd64.tar.zst", &status, &a),
		     0);
	cr_assert_not_null(strstr(json_object_to_json_string(a), "does not support templates"));
	json_object_put(a);
	free(scen);
	free(sha);
	stop();
}

/* The scenario's "files": downloads kept as real files (the lab's QEMU
 * guests run on them). */
Test(storage, files_kept_for_the_lab)
{
	cr_assert_eq(httpserve_start(&hs), 0);
	char t[] = "/tmp/pvesim-test-files.XXXXXX";
	cr_assert_not_null(mkdtemp(t));
	char *val = strprintf("\"%s\"", t);
	char *scen = simcli_scenario_with("tests/pvesim/scenarios/images.json", "files", val, t);
	cr_assert_eq(simproc_start(&sp, scen, NULL), 0);
	unsigned char img[512];
	qcow2(img, 1ULL << 30);
	img[200] = 0x5a;
	cr_assert_eq(httpserve_put(&hs, "lab.qcow2", img, sizeof img), 0);
	char *log = NULL, *exit = fetch_import("lab.qcow2", NULL, &log);
	cr_assert_str_eq(exit, "OK", "%s", log);
	free(exit);
	free(log);
	char *imp = strprintf("%s/local_import_lab.qcow2", t), *text = NULL;
	size_t len = 0;
	cr_assert_eq(read_file(imp, &text, &len), 0, "%s: not written", imp);
	cr_assert_eq(len, sizeof img);
	cr_assert_eq(memcmp(text, img, sizeof img), 0);
	free(text);
	simcli_api_ok(&sp, "POST", "/nodes/pve1/qemu",
		      "vmid=701&name=lab&virtio0=local-lvm%3A0%2Cimport-from%3Dlocal%3Aimport%2F"
		      "lab.qcow2");
	cr_assert_eq(simproc_advance(&sp, 60), 0);
	char *disk = strprintf("%s/local-lvm_vm-701-disk-0", t);
	cr_assert_eq(access(disk, R_OK), 0, "%s: the VM's disk is no file", disk);
	/* the import removed: the VM's disk stays; the VM removed: it goes */
	simcli_api_ok(&sp, "DELETE", "/nodes/pve1/storage/local/content/local:import/lab.qcow2",
		      NULL);
	cr_assert_eq(simproc_advance(&sp, 5), 0);
	cr_assert_neq(access(imp, F_OK), 0, "%s is left", imp);
	cr_assert_eq(access(disk, R_OK), 0, "%s went with the import", disk);
	simcli_api_ok(&sp, "DELETE", "/nodes/pve1/qemu/701", NULL);
	cr_assert_eq(simproc_advance(&sp, 30), 0);
	cr_assert_neq(access(disk, F_OK), 0, "%s is left with the VM gone", disk);
	stop();
	cr_assert_eq(test_remove_tree(t), 0);
	free(disk);
	free(imp);
	free(scen);
	free(val);
}
