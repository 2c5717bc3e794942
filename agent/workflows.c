/* workflows.c - every workflow the engine can run or resume, by name. */
#include "workflows.h"

#include "wf_bench.h"
#include "wf_image.h"
#include "wf_inject.h"
#include "wf_drain.h"
#include "wf_migrate.h"
#include "wf_rolling.h"
#include "wf_up.h"
#include "wf_virtio.h"

#include <string.h>

static const struct job_workflow *const workflows[] = {
	&wf_up,
	&wf_down,
	&wf_virtio,
	&wf_inject,
	&wf_bench,
	&wf_migrate,
	&wf_drain,
	&wf_undrain,
	&wf_image,
	&wf_rolling,
	&wf_rolling_node,
	NULL,
};

const struct job_workflow *job_workflow_find(const char *name)
{
	for (const struct job_workflow *const *w = workflows; name && *w; w++)
		if (strcmp((*w)->name, name) == 0)
			return *w;
	return NULL;
}
