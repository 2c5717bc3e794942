/* image.h - the image catalogue (templates/images/NAME.image, one small
 * INI file per distribution's official cloud image): loading and
 * validation with file, line and key; the published checksum file and
 * `--checksum ALGO:HEX`; the names a built template VM carries.
 *
 *   [image]
 *   description = Debian 13 (trixie), the official genericcloud image
 *   os = debian                   os_version = 13
 *   url = https://.../debian-13-genericcloud-amd64.qcow2   (http or https)
 *   checksums = https://.../SHA512SUMS   the published checksum file
 *   checksum_algorithm = sha512   md5 sha1 sha224 sha256 sha384 sha512
 *   format = qcow2                qcow2 | raw | vmdk (what PVE imports)
 *   compression = none            none | xz | gz | bz2 | zst
 *   user = debian                 the image's default cloud-init user
 *   cloudinit = nocloud           nocloud | configdrive2 (PVE's citype)
 *   profile = debian              pvagent's guest-side OS profile
 *   [vm]                          PVE keys of the template VM (memory,
 *                                 cores, cpu, scsihw, serial0, vga, agent,
 *                                 ostype, bios, net0, ...); disk = the
 *                                 disk key (scsi0, virtio0), disk_size
 *
 * A container image ([image] kind = lxc) names an appliance of PVE's
 * catalogue instead (aplinfo): appliance = debian-13-standard, the newest
 * template of that name (debian-13-standard_13.1-2_amd64.tar.zst) is
 * downloaded into a storage's template cache; it needs os, os_version and
 * profile, and no [vm].
 *
 * PVE's download-url decompresses only ISO images, so an image published
 * compressed (FreeBSD's .qcow2.xz) is built from an uncompressed copy
 * given with --url and --checksum. */
#ifndef PVAGENT_IMAGE_H
#define PVAGENT_IMAGE_H

#include "tmpl.h"

#include <stdbool.h>
#include <stddef.h>

struct image {
	char *name;            /* "debian-13" (the file's name) */
	bool lxc;              /* kind = lxc: a container template (appliance) */
	char *appliance;       /* lxc: the aplinfo name before '_' */
	char *path;
	char *description, *os, *os_version;
	char *url, *checksums, *algo;
	char *format;          /* qcow2, raw, vmdk */
	char *compression;     /* NULL: none */
	char *user, *cloudinit, *profile;
	char *disk;            /* "scsi0" */
	char *disk_size;       /* "8G", or NULL */
	struct tmpl_kvlist vm; /* the other [vm] keys, in file order */
};

/* Load one file. 0, or -1 with *err "FILE:LINE: [section] key: what". */
int image_load_file(const char *path, struct image **out, char **err);
/* NAME from the first of dirs (each the templates directory: the images
 * are in its images/ subdirectory) holding images/NAME.image. -1 with *err
 * (naming the directories searched when there is none). */
int image_load(const char *const *dirs, const char *name, struct image **out, char **err);
void image_free(struct image *im);
/* Every image of dirs (an earlier directory hides a later one's), sorted;
 * those that fail to load with error set. */
struct image_info {
	char *name;
	struct image *image;
	char *error;
};
int image_list(const char *const *dirs, struct image_info **out, size_t *n, char **err);
void image_list_free(struct image_info *l, size_t n);

/* "sha256:HEX" -> algo and lower-case hex (malloc'd); -1 with *why. */
int image_checksum_arg(const char *arg, char **algo, char **hex, const char **why);
/* The checksum of file in a published checksum file: "HEX  FILE",
 * "HEX *FILE" (sha256sum) or "SHA512 (FILE) = HEX" (BSD). malloc'd lower
 * case, or NULL when the file is not listed. */
char *image_checksum_find(const char *sums, const char *file);
/* The last path element of a URL ("debian-13-genericcloud-amd64.qcow2"),
 * malloc'd. */
char *image_url_file(const char *url);

/* [image] mirror (pvagent.conf(5)): a VM image's file and its checksum
 * file fetched from MIRROR/NAME/FILE, FILE the last path element of url
 * and checksums, instead of the publisher's site (a local copy, an
 * offline site). mirror NULL or a container image: nothing changes. 0, or
 * -1 out of memory (im unchanged). */
int image_use_mirror(struct image *im, const char *mirror);

/* The template VM a build makes: "NAME-image", tagged IMAGE_TAG. */
char *image_vm_name(const char *name);
#define IMAGE_TAG "pvagent-image"

/* GET url (http or https, at most max bytes, timeout_s) into *out. 0, or
 * -1 with *why (malloc'd). */
int image_fetch(const char *url, size_t max, long timeout_s, char **out, char **why);

#endif
