/* guestname.c - guest names and VMID arguments (guestname.h). */
#include "guestname.h"

#include "pvecheck.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

bool guest_name_valid(const char *name, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	if (!name || !*name) {
		*why = "a guest name must not be empty";
		return false;
	}
	if (!pvecheck_dns_name(name)) {
		*why = "a guest name is a DNS name: labels of 1 to 63 letters, digits and '-' (not "
		       "first or last) joined by '.', at most 253 characters";
		return false;
	}
	*why = NULL;
	return true;
}

bool guest_arg_is_vmid(const char *arg, int *vmid)
{
	if (!arg || !*arg || strlen(arg) > 9)
		return false;
	for (const char *p = arg; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	if (vmid)
		*vmid = atoi(arg);
	return true;
}
