/* fuzz_main.c - the libFuzzer entry point around one target body, chosen
 * at build time with -DFUZZ_FN=fuzz_NAME (make fuzz builds one binary per
 * target). A broken property aborts, so libFuzzer keeps the input as a
 * crash artifact like any memory error. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef FUZZ_FN
#error "build with -DFUZZ_FN=fuzz_NAME"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	int rc = FUZZ_FN(d, n);
	if (rc < 0) {
		fprintf(stderr, "fuzz: property failed: %s\n", fuzz_failure());
		abort();
	}
	if (rc > 0) {
		fprintf(stderr, "fuzz: cannot run: %s\n", fuzz_failure());
		exit(2);
	}
	return 0;
}
