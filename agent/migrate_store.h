/* migrate_store.h - what state.db keeps about migrations (table
 * "migrations", schema 3 in store.c): each finished migration's length and
 * sizes, read back as the speeds measured between two nodes for the
 * estimates of later ones (maintenance windows); and table "homes": the
 * node a drained guest came from (PVE keeps it too, as the guest's
 * pvagent-home-NODE tag). */
#ifndef PVAGENT_MIGRATE_STORE_H
#define PVAGENT_MIGRATE_STORE_H

#include "store.h"

#include <stdint.h>

struct mig_record {
	int vmid;
	const char *name, *src, *dst, *method;
	double ts, seconds;
	uint64_t mem_bytes, disk_bytes;
	long downtime_ms, probe_gap_ms;  /* < 0: unknown */
};

int migstore_add(struct store *s, const struct mig_record *r, char **err);

/* Speeds measured between src and dst (the last 20 migrations): memory
 * bytes/s of online ones and disk bytes/s; <= 0 when none was measured.
 * An online migration's time is split between memory and disks by the
 * default speeds' proportions. 0 or -1. */
int migstore_speeds(struct store *s, const char *src, const char *dst, double *mem_bps,
		    double *disk_bps, char **err);

/* The guest's home (a drain moved it away from there); home NULL forgets
 * it. 0 or -1. */
int migstore_set_home(struct store *s, int vmid, const char *name, const char *home,
		      double ts, char **err);

/* The guests a drain of node set out to move whose migration job did not
 * end done (failed, needs attention, interrupted, superseded), since the
 * last undrain of node that did: name and the newest such job. A rerun
 * of the drain looks at where they are now (a guest that moved without
 * its home tag gets it). 0 or -1. */
struct migstore_moved {
	char *name;
	long long job;
	char *target;     /* NULL when its params had none */
};
int migstore_drain_unfinished(struct store *s, const char *node, struct migstore_moved **out,
			      size_t *n, char **err);
void migstore_moved_free(struct migstore_moved *v, size_t n);

/* The tasks a drain of node started for migrations whose jobs did not end
 * done (killed, interrupted, cancelled, superseded by a rerun) while the
 * step that started them had not finished (a cancel that followed its
 * task to the end closed that step): a rerun waits for them before it
 * plans, and a resumed drain before it moves, or it plans a guest its
 * earlier run is moving. *upids (malloc'd, each too) and *n. 0 or -1. */
int migstore_drain_tasks(struct store *s, const char *node, char ***upids, size_t *n,
			 char **err);

#endif
