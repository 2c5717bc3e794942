/* wf_image.h - the `image build` workflow (wf_image.c) and what `image rm`
 * shares with it. */
#ifndef PVAGENT_WF_IMAGE_H
#define PVAGENT_WF_IMAGE_H

#include "image.h"
#include "job.h"

#include <stdbool.h>

extern const struct job_workflow wf_image;

struct image_build_req {
	const struct image *image;
	const char *node;           /* where the template VM is made */
	const char *storage;        /* its disks (default local-lvm) */
	const char *import_storage; /* a file storage with content import (default local) */
	const char *url;            /* overrides the image's URL (a mirror), or NULL */
	const char *checksum;       /* "ALGO:HEX", or NULL: the published file's */
	int vmid;                   /* > 0: this VMID */
	bool rebuild;               /* replace an existing template once the new one is done */
};

/* The guests with a disk on a base volume of template vmid (linked
 * clones), as "NAME (VMID N)" in *names (malloc'd). Reads every VM's
 * config. 0 or -1. */
int wf_image_clones(struct pve *c, int vmid, char ***names, size_t *n, struct pve_error *err);

#endif
