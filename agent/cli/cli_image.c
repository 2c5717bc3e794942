/* cli_image.c - `pvagent image list | show NAME | build NAME | rm NAME`:
 * the catalogue (image.h) and its template VMs (wf_image.h). */
#include "cli.h"
#include "cli_confirm.h"

#include "json.h"
#include "output.h"
#include "wf_image.h"
#include "wf_params.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const *tdirs(struct cli *cli)
{
	return (const char *const *)cli->conf.paths.templates;
}

static json_object *image_json(const struct image *im)
{
	json_object *o = json_object_new_object();
	const char *k[] = {"name", "description", "os", "os_version", "url", "checksums",
			   "checksum_algorithm", "format", "compression", "user", "cloudinit",
			   "profile", "disk", "disk_size", "path"};
	const char *v[] = {im->name, im->description, im->os, im->os_version, im->url,
			   im->checksums, im->algo, im->format, im->compression, im->user,
			   im->cloudinit, im->profile, im->disk, im->disk_size, im->path};
	for (size_t i = 0; o && i < sizeof k / sizeof k[0]; i++)
		json_object_object_add(o, k[i], v[i] ? json_object_new_string(v[i]) : NULL);
	json_object *vm = json_object_new_object();
	for (size_t i = 0; vm && i < im->vm.n; i++)
		json_object_object_add(vm, im->vm.items[i].key,
				       json_object_new_string(im->vm.items[i].value));
	if (o)
		json_object_object_add(o, "vm", vm);
	else
		json_object_put(vm);
	return o;
}

static int image_list_cmd(struct cli *cli)
{
	struct image_info *l = NULL;
	size_t n = 0;
	char *err = NULL;
	image_list(tdirs(cli), &l, &n, &err);
	free(err);
	int bad = 0;
	json_object *arr = cli->json ? json_object_new_array() : NULL;
	const char *hdr[] = {"IMAGE", "OS", "FORMAT", "USER", "CLOUD-INIT", "DESCRIPTION"};
	struct table *t = cli->json ? NULL : table_new(6, hdr);
	for (size_t i = 0; i < n; i++) {
		const struct image *im = l[i].image;
		bad += !im;
		if (arr) {
			json_object *o = im ? image_json(im) : json_object_new_object();
			if (o && !im) {
				json_object_object_add(o, "name", json_object_new_string(l[i].name));
				json_object_object_add(o, "error", json_object_new_string(l[i].error));
			}
			json_object_array_add(arr, o);
		} else if (t) {
			char os[96];
			snprintf(os, sizeof os, "%s %s", im ? im->os : "", im ? im->os_version : "");
			const char *row[] = {l[i].name, im ? os : "invalid", im ? im->format : "-",
					     im ? im->user : "-", im ? im->cloudinit : "-",
					     im ? (im->description ? im->description : "") : l[i].error};
			table_add(t, row);
		}
	}
	if (arr)
		out_json_ok("image", "images", arr);
	else if (t)
		table_print(t, stdout);
	table_free(t);
	image_list_free(l, n);
	return bad ? 1 : 0;
}

static int image_show_cmd(struct cli *cli, const char *name)
{
	struct image *im = NULL;
	char *err = NULL;
	if (image_load(tdirs(cli), name, &im, &err) < 0) {
		cli_error("usage", "image", "%s", err ? err : "cannot load the image");
		free(err);
		return EXIT_USAGE;
	}
	json_object *o = image_json(im);
	char *vmname = image_vm_name(im->name);
	if (o && vmname)
		json_object_object_add(o, "template_vm", json_object_new_string(vmname));
	if (cli->json) {
		out_json_ok("image", "image", o);
	} else {
		json_object_object_foreach(o, k, v)
		{
			if (json_object_is_type(v, json_type_object)) {
				json_object_object_foreach(v, vk, vv)
					printf("%-20s %s\n", vk, json_object_get_string(vv));
			} else if (v) {
				printf("%-20s %s\n", k, json_object_get_string(v));
			}
		}
		json_object_put(o);
	}
	free(vmname);
	image_free(im);
	return 0;
}

/* image build NAME [options]: its params the options', with the
 * configuration's node and storages where they give none, and the image */
static int image_build_cmd(struct cli *cli, const struct cmd_args *a)
{
	const struct job_params_decl *d = &wf_image_params_decl;
	json_object *p = a->params;
	const char *url = json_str(p, "url"), *checksum = json_str(p, "checksum");
	char *algo = NULL, *hex = NULL;
	const char *why = NULL;
	int rc = 0;
	if (url && strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
		char *shown = url_shown(url); /* never its userinfo */
		rc = cli_error("usage", "image", "--url %s: not an http(s) URL",
			       shown ? shown : "(the URL given)");
		free(shown);
		return rc;
	}
	if (checksum && image_checksum_arg(checksum, &algo, &hex, &why) < 0)
		return cli_error("usage", "image", "--checksum %s: %s", checksum, why);
	free(algo);
	free(hex);
	if ((rc = cli_load_conf(cli)))
		return rc;
	/* for a container image, the import storage is where its template goes */
	const char *node = json_str(p, "node") ? json_str(p, "node") : cli->conf.pve.node;
	if (!node)
		return cli_error("usage", "image", "give --node (or [pve] node in %s)",
				 cli->conf.path ? cli->conf.path : "the configuration");
	struct image *im = NULL;
	char *err = NULL;
	if (image_load(tdirs(cli), a->argv[1], &im, &err) < 0) {
		cli_error("usage", "image", "%s", err ? err : "cannot load the image");
		free(err);
		return EXIT_USAGE;
	}
	if (im->lxc && (url || checksum)) {
		cli_error("usage", "image", "image %s is a container template from PVE's appliance "
			  "catalogue: --url and --checksum are for VM images", im->name);
		image_free(im);
		return EXIT_USAGE;
	}
	if (im->compression && !url) {
		cli_error("usage", "image",
			  "image %s is published %s-compressed, and PVE's download-url "
			  "decompresses only ISO images: give --url of an uncompressed copy and "
			  "--checksum ALGO:HEX of it", im->name, im->compression);
		image_free(im);
		return EXIT_USAGE;
	}
	json_object *params = cmd_args_params(a);
	if (params && (job_param_set_str(d, params, "image", im->name) < 0 ||
		       job_param_set_str(d, params, "image_path", im->path) < 0 ||
		       job_param_set_str(d, params, "node", node) < 0 ||
		       (!json_str(p, "storage") &&
			job_param_set_str(d, params, "storage", conf_disk_storage(&cli->conf)) < 0) ||
		       (!json_str(p, "import_storage") &&
			job_param_set_str(d, params, "import_storage",
					  conf_import_storage(&cli->conf)) < 0))) {
		json_object_put(params);
		params = NULL;
	}
	rc = cli_job_add(cli, im->name, params);
	image_free(im);
	return rc;
}

/* What an image build did (its job: the image is the subject, the node a
 * param; a container template's volume is in the vars): the line or the
 * JSON object; returns code. Also what `resume` prints. */
int cli_image_result(struct cli *cli, struct job *const *jobs, size_t n, int code)
{
	struct job *j = jobs[0];
	const char *name = job_subject(j);
	const char *node = json_str(job_params(j), "node");
	/* a container image's vars name its appliance template; a VM image's
	 * volid is the downloaded file, removed by then */
	const char *volid = json_str(job_vars(j), "template") ? json_str(job_vars(j), "volid")
							      : NULL;
	char *vmname = image_vm_name(name);
	if (cli->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "command", json_object_new_string("image"));
		json_object_object_add(o, "image", json_object_new_string(name));
		json_object_object_add(o, "template_vm",
				       vmname ? json_object_new_string(vmname) : NULL);
		cli_job_result_members(o, j, code);
		out_json_line(stdout, o);
		json_object_put(o);
	} else if (code == 0 && volid) {
		printf("image %s: container template %s on %s\n", name, volid, node ? node : "?");
	} else if (code == 0) {
		printf("image %s: template VM %s (VMID %d) on %s\n", name, vmname ? vmname : "?",
		       job_vmid(j), node ? node : "?");
	} else {
		const struct pve_error *je = job_error(j);
		char *hint = pve_error_hint(je); /* a 403: what the token needs */
		fprintf(stderr, "pvagent: error: image %s: %s%s%s%s\n", name,
			je->message ? je->message : "failed", job_left(j) ? "; left: " : "",
			job_left(j) ? job_left(j) : "", hint ? hint : "");
		free(hint);
	}
	free(vmname);
	return code;
}

/* The template VM g of image name, its disks and the question (rm
 * without --yes, on a terminal): 0 to delete, or an exit code (said). */
static int image_rm_confirm(struct cli *cli, const char *name, const char *vmname,
			    const struct guest_ref *g)
{
	json_object *config = NULL;
	struct pve_error e = {0};
	if (guest_get_config(cli->pve, g, &config, &e) < 0) {
		int rc = cli_fail_pve(cli, "image", &e);
		pve_error_clear(&e);
		return rc;
	}
	char *vols = cli_guest_volumes(config);
	json_object_put(config);
	fprintf(stderr, "pvagent image rm deletes the template VM of image %s:\n  %s (VM %d on "
		"%s): %s\n", name, vmname, g->vmid, g->node ? g->node : "?", vols ? vols : "?");
	free(vols);
	return cli_confirm("image", "Delete it and its disks?");
}

/* image rm NAME: the template VM, when no linked clone depends on it. */
static int image_rm_cmd(struct cli *cli, const char *name, bool yes)
{
	char *what = yes ? NULL : strprintf("the template VM of image %s and its disks", name);
	int rc = yes ? 0 : what ? cli_confirm_needed("image", what) : 1;
	free(what);
	if (rc || (rc = cli_connect_pve(cli)))
		return rc;
	char *vmname = image_vm_name(name);
	struct guest_ref g = {0};
	struct pve_error e = {0};
	int r = vmname ? guest_find(cli->pve, vmname, &g, &e) : pve_error_oom(&e);
	if (r < 0) {
		rc = cli_fail_pve(cli, "image", &e);
	} else if (r == 0 || !g.template) {
		rc = cli_error("usage", "image", "no template VM %s (of image %s)%s",
			       vmname, name, r ? ": the VM of that name is no template" : "");
	} else {
		char **clones = NULL;
		size_t n = 0;
		bool failed = wf_image_clones(cli->pve, g.vmid, &clones, &n, &e) < 0;
		if (!failed && n) {
			struct sbuf b = {0};
			for (size_t i = 0; i < n; i++)
				sbuf_addf(&b, "%s%s", i ? ", " : "", clones[i]);
			fprintf(stderr, "pvagent: error: image %s: template VM %d has %zu linked "
					"clone%s, which need it: %s\n",
				name, g.vmid, n, n == 1 ? "" : "s", b.len ? sbuf_str(&b) : "?");
			sbuf_free(&b);
			rc = 1;
		} else if (!failed && !yes && (rc = image_rm_confirm(cli, name, vmname, &g))) {
			/* said */
		} else if (failed || guest_delete(cli->pve, &g, true, NULL, NULL, &e) < 0) {
			rc = cli_fail_pve(cli, "image", &e);
		} else if (cli->json) {
			out_json_ok("image", "removed", json_object_new_int(g.vmid));
		} else {
			printf("image %s: template VM %s (VMID %d) removed\n", name, vmname, g.vmid);
		}
		for (size_t i = 0; i < n; i++)
			free(clones[i]);
		free(clones);
	}
	pve_error_clear(&e);
	guest_ref_clear(&g);
	free(vmname);
	return rc;
}

/* The configuration, or where none is found (no -c, none in the places
 * searched) the defaults: the catalogue needs no cluster. 0 or an exit
 * code (said). */
static int catalogue_conf(struct cli *cli)
{
	if (cli->conf_loaded || cli->conf_path)
		return cli_load_conf(cli);
	char *err = NULL;
	int r = conf_load(NULL, &cli->conf, &err);
	free(err);
	if (r == -2 && conf_defaults(&cli->conf) == 0)
		r = 0;
	cli->conf_loaded = r == 0;
	return r == 0 ? 0 : cli_load_conf(cli); /* says why */
}

static int cmd_image(struct cli *cli, const struct cmd_args *a)
{
	const char *sub = a->argv[0];
	bool one = a->argc == 2;
	bool yes = false;
	for (size_t i = 0; i < a->n; i++)
		yes = yes || a->v[i].opt == 'y';
	if (yes && strcmp(sub, "rm") != 0)
		return cli_usage_error("image", "--yes is for image rm, not", sub);
	if (strcmp(sub, "list") == 0 && a->argc == 1) {
		int rc = catalogue_conf(cli);
		return rc ? rc : image_list_cmd(cli);
	}
	if (strcmp(sub, "show") == 0 && one) {
		int rc = catalogue_conf(cli);
		return rc ? rc : image_show_cmd(cli, a->argv[1]);
	}
	if (strcmp(sub, "build") == 0 && one)
		return image_build_cmd(cli, a);
	if (strcmp(sub, "rm") == 0 && one)
		return image_rm_cmd(cli, a->argv[1], yes);
	return cli_usage_error("image", "expected list, show NAME, build NAME or rm NAME", sub);
}

/* the option of image that sets no param (build's are its params') */
static const struct option image_opts[] = {{"yes", no_argument, NULL, 'y'}, {0}};

const struct cmd_entry cmd_image_entry = {
	"image",
	"list | show NAME | build NAME [--node N] [--storage S] [--import-storage S] [--url URL] "
	"[--checksum ALGO:HEX] [--vmid ID] [--rebuild] | rm NAME [--yes]",
	"template VMs from the distributions' official cloud images, through the API",
	"y", image_opts, NULL, 1, 2, "subcommand and image", cmd_image,
	"pvagent image list\npvagent image show debian-13\npvagent image build debian-13\n"
	"pvagent image build freebsd-15 --url http://mirror/FreeBSD-15.0-RELEASE-amd64-"
	"BASIC-CLOUDINIT-ufs.qcow2 --checksum sha512:...\npvagent image rm debian-13\n"
	"pvagent image rm debian-13 --yes",
	.wf = &wf_image,
	.render = cli_image_result,
	.flags = CMD_JOBS | CMD_OWN_CLIENT,
};
