/* test_drain_plan.c - the pure drain planner: 12 mixed guests onto two
 * targets with a pinned guest, a template and one that fits nowhere
 * (largest first, most headroom, never overcommitted, storage, CPUs,
 * allowed nodes, --to), the migration planner's refusals (one reason when
 * every node gives it) and upgraded nodes first, the sliding-window schedule (not chunks; the
 * per-target limit), plus the plan time for 1,000 guests on 16 nodes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "drain_plan.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

static const char *const ALL_ST[] = {"local", "local-lvm", "shared"};
static const char *const SHARED_ST[] = {"local", "shared"};

static const struct dp_node NODES[] = {
	{"pve1", true, 64 * GiB, 30 * GiB, 16, ALL_ST, 3, false},
	{"pve2", true, 32 * GiB, 4 * GiB, 8, ALL_ST, 3, false},    /* 28 GiB free */
	{"pve3", true, 16 * GiB, 2 * GiB, 4, SHARED_ST, 2, false}, /* 14 GiB free, no local-lvm */
	{"pve4", false, 64 * GiB, 0, 16, ALL_ST, 3, false},
};

static const char *const LVM[] = {"local-lvm"};

/* 12 guests on pve1: qemu and lxc, running and stopped, one template, one
 * pinned, one too large for any target. */
static const struct dp_guest GUESTS[] = {
	{"web1", 100, GUEST_QEMU, true, false, false, 4 * GiB, 2, 0, NULL, 0, NULL, 0, NULL, 0},
	{"web2", 101, GUEST_QEMU, true, false, false, 4 * GiB, 2, 0, NULL, 0, NULL, 0, NULL, 0},
	{"db1", 102, GUEST_QEMU, true, false, false, 8 * GiB, 4, 32 * GiB, LVM, 1, NULL, 0, NULL, 0},
	{"db2", 103, GUEST_QEMU, true, false, false, 6 * GiB, 4, 0, NULL, 0, NULL, 0, NULL, 0},
	{"cache", 104, GUEST_QEMU, true, false, false, 2 * GiB, 1, 0, NULL, 0, NULL, 0, NULL, 0},
	{"huge", 105, GUEST_QEMU, true, false, false, 40 * GiB, 8, 0, NULL, 0, NULL, 0, NULL, 0},
	{"tmpl", 9000, GUEST_QEMU, false, true, false, 2 * GiB, 2, 0, NULL, 0, NULL, 0, NULL, 0},
	{"pinned", 106, GUEST_QEMU, true, false, true, 1 * GiB, 1, 0, NULL, 0, NULL, 0, NULL, 0},
	{"ct1", 200, GUEST_LXC, true, false, false, 1 * GiB, 1, 8 * GiB, LVM, 1, NULL, 0, NULL, 0},
	{"ct2", 201, GUEST_LXC, true, false, false, 512 * MiB, 1, 0, NULL, 0, NULL, 0, NULL, 0},
	{"ct3", 202, GUEST_LXC, false, false, false, 512 * MiB, 1, 0, NULL, 0, NULL, 0, NULL, 0},
	{"cold", 107, GUEST_QEMU, false, false, false, 16 * GiB, 2, 0, NULL, 0, NULL, 0, NULL, 0},
};

static const struct dp_move *move_of(const struct dp_plan *p, const char *name)
{
	for (size_t i = 0; i < p->n_moves; i++)
		if (strcmp(GUESTS[p->moves[i].guest].name, name) == 0)
			return &p->moves[i];
	return NULL;
}

static const char *target_of(const struct dp_plan *p, const char *name)
{
	const struct dp_move *m = move_of(p, name);
	cr_assert_not_null(m, "%s not in the plan", name);
	return m->status == DP_MOVE ? NODES[m->target].name : dp_status_name(m->status);
}

Test(drain_plan, twelve_guests_two_targets)
{
	struct dp_input in = {
		.source = "pve1", .nodes = NODES, .n_nodes = 4, .guests = GUESTS, .n_guests = 12,
		.reserve = 1 * GiB,
	};
	struct dp_plan p;
	cr_assert_eq(drain_plan(&in, &p), 0);
	cr_assert_eq(p.n_moves, 12);
	/* stays, said why */
	cr_expect_str_eq(target_of(&p, "tmpl"), "template");
	cr_expect_str_eq(target_of(&p, "pinned"), "pinned");
	/* fits nowhere: the reason per node */
	const struct dp_move *h = move_of(&p, "huge");
	cr_expect_eq(h->status, DP_NOWHERE);
	cr_expect_eq(p.n_nowhere, 1);
	cr_expect(strstr(h->why, "pve2: 8 CPUs, the guest has 8 vCPUs") == NULL, "%s", h->why);
	cr_expect(strstr(h->why, "pve2: 27648 MiB free after the reserve, needs 40960 MiB"),
		  "%s", h->why);
	cr_expect(strstr(h->why, "pve3: 4 CPUs, the guest has 8 vCPUs"), "%s", h->why);
	cr_expect(strstr(h->why, "pve4: offline"), "%s", h->why);
	/* largest first onto the most headroom: db1 (8G, local-lvm) to pve2 */
	cr_expect_str_eq(target_of(&p, "db1"), "pve2");
	cr_expect_str_eq(GUESTS[p.moves[0].guest].name, "huge");
	cr_expect_str_eq(GUESTS[p.moves[1].guest].name, "cold");
	cr_expect_eq(move_of(&p, "db1"), &p.moves[2], "db1 is the third largest");
	/* local-lvm only where it exists */
	cr_expect_str_eq(target_of(&p, "ct1"), "pve2");
	cr_expect_eq(move_of(&p, "ct1")->method, MIG_RESTART);
	cr_expect_eq(move_of(&p, "ct3")->method, MIG_OFFLINE);
	cr_expect_eq(move_of(&p, "web1")->method, MIG_ONLINE);
	/* never overcommitted: what each target takes fits after the reserve */
	uint64_t took[4] = {0};
	for (size_t i = 0; i < p.n_moves; i++)
		if (p.moves[i].status == DP_MOVE && GUESTS[p.moves[i].guest].running)
			took[p.moves[i].target] += GUESTS[p.moves[i].guest].memory;
	cr_expect_leq(took[1], 28 * GiB - 1 * GiB);
	cr_expect_leq(took[2], 14 * GiB - 1 * GiB);
	cr_expect_eq(took[0] + took[3], 0);
	cr_expect_eq(p.free_after[1], 28 * GiB - took[1]);
	cr_expect_eq(p.free_after[2], 14 * GiB - took[2]);
	/* both targets used */
	cr_expect_gt(took[1], 0);
	cr_expect_gt(took[2], 0);
	drain_plan_free(&p);
}

Test(drain_plan, to_and_allowed_nodes)
{
	static const char *const only3[] = {"pve3"};
	static const char *const allowed2[] = {"pve2"};
	struct dp_guest g[] = {
		{"a", 1, GUEST_QEMU, true, false, false, 1 * GiB, 1, 0, NULL, 0, allowed2, 1, NULL, 0},
		{"b", 2, GUEST_QEMU, true, false, false, 1 * GiB, 1, 0, NULL, 0, NULL, 0, NULL, 0},
	};
	struct dp_input in = {
		.source = "pve1", .nodes = NODES, .n_nodes = 4, .guests = g, .n_guests = 2,
		.to = only3, .n_to = 1,
	};
	struct dp_plan p;
	cr_assert_eq(drain_plan(&in, &p), 0);
	cr_expect_eq(p.moves[0].status, DP_NOWHERE);
	cr_expect(strstr(p.moves[0].why, "pve3: not among PVE's allowed nodes"), "%s",
		  p.moves[0].why);
	cr_expect_eq(p.moves[1].status, DP_MOVE);
	cr_expect_str_eq(NODES[p.moves[1].target].name, "pve3");
	drain_plan_free(&p);
}

/* migrate_plan()'s refusals per node: the same one from every node is said
 * once; a refused node is never chosen. */
Test(drain_plan, planner_refusals)
{
	static const char *const held[] = {"snapshot holds it", "snapshot holds it",
					   "snapshot holds it", "snapshot holds it"};
	static const char *const not2[] = {NULL, "HA rule", NULL, NULL};
	struct dp_guest g[] = {
		{"a", 1, GUEST_QEMU, true, false, false, 1 * GiB, 1, 0, NULL, 0, NULL, 0, held, 0},
		{"b", 2, GUEST_QEMU, true, false, false, 1 * GiB, 1, 0, NULL, 0, NULL, 0, not2, 0},
	};
	static const struct dp_node nodes[] = {
		{"pve1", true, 64 * GiB, 30 * GiB, 16, ALL_ST, 3, false},
		{"pve2", true, 32 * GiB, 4 * GiB, 8, ALL_ST, 3, false},
		{"pve3", true, 16 * GiB, 2 * GiB, 4, ALL_ST, 3, false},
	};
	struct dp_input in = {
		.source = "pve1", .nodes = nodes, .n_nodes = 3, .guests = g, .n_guests = 2,
	};
	struct dp_plan p;
	cr_assert_eq(drain_plan(&in, &p), 0);
	cr_expect_eq(p.n_nowhere, 1);
	cr_expect_eq(p.moves[0].status, DP_NOWHERE);
	cr_expect_str_eq(p.moves[0].why, "snapshot holds it");
	cr_expect_eq(p.moves[1].status, DP_MOVE);
	cr_expect_str_eq(nodes[p.moves[1].target].name, "pve3", "pve2 has more headroom but "
			 "is refused");
	drain_plan_free(&p);
}

/* A rolling upgrade: a node on an older PVE is taken only when no
 * upgraded node fits, even with more headroom. */
Test(drain_plan, upgraded_nodes_first)
{
	static const struct dp_node nodes[] = {
		{"pve1", true, 64 * GiB, 30 * GiB, 16, ALL_ST, 3, false},
		{"old", true, 64 * GiB, 0, 16, ALL_ST, 3, true},   /* 64 GiB free, older */
		{"new", true, 8 * GiB, 2 * GiB, 16, ALL_ST, 3, false}, /* 6 GiB free */
	};
	struct dp_guest g[] = {
		{"a", 1, GUEST_QEMU, false, false, false, 4 * GiB, 1, 0, NULL, 0, NULL, 0, NULL, 0},
		{"b", 2, GUEST_LXC, true, false, false, 6 * GiB, 1, 0, NULL, 0, NULL, 0, NULL, 0},
	};
	struct dp_input in = {
		.source = "pve1", .nodes = nodes, .n_nodes = 3, .guests = g, .n_guests = 2,
		.reserve = 1 * GiB,
	};
	struct dp_plan p;
	cr_assert_eq(drain_plan(&in, &p), 0);
	cr_expect_eq(p.n_nowhere, 0);
	/* b (6 GiB running) does not fit the upgraded node after the reserve,
	 * so it goes to the older one; a (stopped) goes to the upgraded one */
	cr_expect_eq(p.moves[0].guest, 1);
	cr_expect_str_eq(nodes[p.moves[0].target].name, "old");
	cr_expect_str_eq(nodes[p.moves[1].target].name, "new");
	drain_plan_free(&p);
}

Test(drain_plan, sliding_window_not_chunks)
{
	/* K = 2: chunks would take max(10,1) + max(1,1) = 11; a sliding window
	 * starts the third and fourth when the short one ends: 10 */
	double d[] = {10, 1, 1, 1};
	size_t t[] = {0, 1, 1, 1};
	double st[4];
	cr_expect_float_eq(drain_schedule(d, t, 4, 2, 0, 0, st), 10, 1e-9);
	cr_expect_float_eq(st[2], 1, 1e-9);
	cr_expect_float_eq(st[3], 2, 1e-9);
	/* per_target 1: the three into node 1 run one after another */
	cr_expect_float_eq(drain_schedule(d, t, 4, 4, 1, 0, st), 10, 1e-9);
	cr_expect_float_eq(st[3], 2, 1e-9);
	size_t same[] = {0, 0, 0, 0};
	cr_expect_float_eq(drain_schedule(d, same, 4, 4, 1, 0, NULL), 13, 1e-9);
	cr_expect_float_eq(drain_schedule(d, NULL, 4, 1, 0, 0, NULL), 13, 1e-9);
	/* a deadline at 11.5, one at a time: the 10 s one (ends 10) and the
	 * next (ends 11) start; the third would end at 12: not started, nor
	 * the fourth (its latest start, 10.5, passes while the second runs) */
	cr_expect_float_eq(drain_schedule(d, NULL, 4, 1, 0, 11.5, st), 11, 1e-9);
	cr_expect_float_eq(st[1], 10, 1e-9);
	cr_expect_float_eq(st[2], -1, 1e-9);
	cr_expect_float_eq(st[3], -1, 1e-9);
}

Test(drain_plan, thousand_guests_sixteen_nodes_fast)
{
	static struct dp_node nodes[16];
	static char names[16][16];
	static struct dp_guest guests[1000];
	static char gnames[1000][16];
	for (int i = 0; i < 16; i++) {
		snprintf(names[i], sizeof names[i], "n%d", i);
		nodes[i] = (struct dp_node){names[i], true, 512 * GiB, 8 * GiB, 64, ALL_ST, 3, false};
	}
	for (int i = 0; i < 1000; i++) {
		snprintf(gnames[i], sizeof gnames[i], "g%d", i);
		guests[i] = (struct dp_guest){gnames[i], 100 + i, GUEST_QEMU, true, false, false,
					      (uint64_t)(1 + i % 8) * GiB, 2, 0, NULL, 0, NULL, 0, NULL, 0};
	}
	struct dp_input in = {.source = "n0", .nodes = nodes, .n_nodes = 16, .guests = guests,
			      .n_guests = 1000, .reserve = 1 * GiB};
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	struct dp_plan p;
	cr_assert_eq(drain_plan(&in, &p), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	cr_expect_eq(p.n_nowhere, 0);
	cr_expect_lt(ms, 50.0, "plan took %.1f ms", ms);
	drain_plan_free(&p);
}

/* HA's positive partners are one unit: every member must fit the one
 * target, their memory counted together; the partner is planned "with"
 * its unit's first, never on its own. */
Test(drain_plan, ha_units)
{
	static const struct dp_node nodes[] = {
		{"pve1", true, 64 * GiB, 30 * GiB, 16, ALL_ST, 3, false},
		{"big", true, 16 * GiB, 2 * GiB, 16, ALL_ST, 3, false},    /* 13 GiB after reserve */
		{"small", true, 8 * GiB, 1 * GiB, 16, SHARED_ST, 2, false}, /* 6 GiB, no local-lvm */
	};
	struct dp_guest g[] = {
		{"lead", 1, GUEST_QEMU, true, false, false, 4 * GiB, 1, 0, NULL, 0, NULL, 0, NULL, 0},
		{"part", 2, GUEST_QEMU, true, false, false, 4 * GiB, 1, 0, LVM, 1, NULL, 0, NULL, 1},
		{"solo", 3, GUEST_QEMU, true, false, false, 5 * GiB, 1, 0, NULL, 0, NULL, 0, NULL, 0},
		{"big1", 4, GUEST_QEMU, true, false, false, 7 * GiB, 1, 0, NULL, 0, NULL, 0, NULL, 0},
		{"big2", 5, GUEST_QEMU, true, false, false, 7 * GiB, 1, 0, NULL, 0, NULL, 0, NULL, 4},
	};
	struct dp_input in = {
		.source = "pve1", .nodes = nodes, .n_nodes = 3, .guests = g, .n_guests = 5,
		.reserve = 1 * GiB,
	};
	struct dp_plan p;
	cr_assert_eq(drain_plan(&in, &p), 0);
	const struct dp_move *by[5] = {0};
	for (size_t i = 0; i < p.n_moves; i++)
		by[p.moves[i].guest] = &p.moves[i];
	for (size_t i = 0; i < 5; i++)
		cr_assert_not_null(by[i], "guest %zu not in the plan", i);
	/* big1 + big2 need 14 GiB together: nowhere, and big2 with it */
	cr_expect_eq(by[3]->status, DP_NOWHERE);
	cr_expect(strstr(by[3]->why, "big: 13312 MiB free after the reserve, needs 14336 MiB with "
				     "its HA partners"), "%s", by[3]->why);
	cr_expect_eq(by[4]->status, DP_NOWHERE);
	cr_expect_str_eq(by[4]->why, "HA moves it with big1, which fits nowhere");
	/* solo (larger, first) takes "big"; lead + part (8 GiB together, part on
	 * local-lvm, which "small" lacks) still fit there, exactly */
	cr_expect_eq(by[2]->status, DP_MOVE);
	cr_expect_str_eq(nodes[by[2]->target].name, "big");
	cr_expect_eq(by[0]->status, DP_MOVE);
	cr_expect_str_eq(nodes[by[0]->target].name, "big");
	cr_expect_eq(by[1]->status, DP_WITH);
	cr_expect_eq(by[1]->target, by[0]->target);
	cr_expect_eq(p.n_nowhere, 2);
	cr_expect_eq(p.free_after[1], 14 * GiB - 5 * GiB - 8 * GiB, "the unit's 8 GiB counted");
	drain_plan_free(&p);
}
