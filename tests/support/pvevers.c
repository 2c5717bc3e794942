/* pvevers.c - the PVE versions the suites run on (see pvevers.h). */
#include "pvevers.h"

const struct test_pve test_pve_versions[TEST_PVE_VERSIONS] = {
	{"9.1", 9, 47, "VM.GuestAgent.Audit", "pve9-apidata.json"},
	{"8.4", 8, 42, "VM.Monitor", "pve8-apidata.json"},
};
int test_pve_index[TEST_PVE_VERSIONS] = {0, 1};
