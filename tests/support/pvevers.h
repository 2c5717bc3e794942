/* pvevers.h - the PVE versions the simulator models and the suites run on
 * (9.1, the default, and 8.4), with what differs between them that tests
 * assert, and ON_EACH_PVE_VERSION to run one Criterion test on each. */
#ifndef TESTS_PVEVERS_H
#define TESTS_PVEVERS_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

struct test_pve {
	const char *ver;    /* a scenario's "pve_version": "9.1" */
	int major;          /* 9 */
	int nprivs;         /* the privileges pve-access-control has: 47 */
	const char *agent;  /* the guest agent's address needs: VM.GuestAgent.Audit */
	const char *schema; /* the API schema file: pve9-apidata.json */
};

#define TEST_PVE_VERSIONS 2
extern const struct test_pve test_pve_versions[TEST_PVE_VERSIONS];
/* 0 .. TEST_PVE_VERSIONS-1: a parameterized test's parameters (Criterion
 * runs each test in a new process, where a pointer would not hold). */
extern int test_pve_index[TEST_PVE_VERSIONS];

/* The parameters of suite/name: one per version. */
#define PVE_VERSION_PARAMS(suite, name)                                          \
	ParameterizedTestParameters(suite, name)                                 \
	{                                                                        \
		return cr_make_param_array(int, test_pve_index, TEST_PVE_VERSIONS); \
	}

/* A test run once per version, its body a function of
 * `const struct test_pve *pv`:
 *   ON_EACH_PVE_VERSION(acl, builtin_roles) { ... pv->major ... } */
#define ON_EACH_PVE_VERSION(suite, name)                                         \
	static void suite##_##name##_on(const struct test_pve *pv);              \
	PVE_VERSION_PARAMS(suite, name)                                          \
	ParameterizedTest(const int *vi_, suite, name)                           \
	{                                                                        \
		suite##_##name##_on(&test_pve_versions[*vi_]);                   \
	}                                                                        \
	static void suite##_##name##_on(const struct test_pve *pv)

#endif
