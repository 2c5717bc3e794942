/* osprof_int.h - private to osprof.c, osprof_detect.c and virtio_plan.c:
 * what the three share besides osprof.h. */
#ifndef PVAGENT_OSPROF_INT_H
#define PVAGENT_OSPROF_INT_H

#include "osprof.h"

/* *err = strdup(msg) when err is not NULL (defined in osprof.c). */
void osprofi_set_err(char **err, const char *msg);

#endif
