/* pool.h - static address pools ([pool "NAME"] in pvagent.conf): their
 * definition and validation, the address arithmetic (IPv4 and IPv6), the
 * PVE tag that records a guest's address, and the choice of the lowest free
 * address of a range. Pure: no requests (pool_claim.h talks to PVE).
 *
 *   [pool "lan"]
 *   cidr = 192.0.2.0/24            network of the guests (IPv4 or IPv6)
 *   gateway = 192.0.2.1            inside cidr
 *   range = 192.0.2.100-192.0.2.199  the addresses handed out, inside cidr,
 *                                  overlapping no other pool's range
 *   dns = 192.0.2.53 192.0.2.54    optional: PVE's nameserver (one or more)
 *   searchdomain = example.org     optional
 *
 * A guest holds an address of a pool when PVE lists it with the tag
 * pool_tag() gives ("ip-192.0.2.100"; IPv6 with '-' for ':', as PVE's tags
 * allow no ':'), which the claim sets together with ipconfig0. */
#ifndef PVAGENT_POOL_H
#define PVAGENT_POOL_H

#include "ini.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pool_ip {
	int family;             /* 4 or 6 */
	unsigned char b[16];    /* network order; IPv4 in b[0..3] */
};

struct ip_pool {
	char *name;
	int line;               /* of the section header */
	struct pool_ip net;     /* cidr's network address */
	unsigned prefix;
	struct pool_ip gateway;
	struct pool_ip start, end;
	char *dns;              /* space-separated, or NULL */
	char *searchdomain;     /* or NULL */
};

/* "192.0.2.5" or "2001:db8::5" -> 0; -1 for anything else. */
int pool_ip_parse(const char *s, struct pool_ip *out);
/* Text form, malloc'd (NULL when out of memory). */
char *pool_ip_str(const struct pool_ip *a);
/* Order within one family; a different family orders by family. */
int pool_ip_cmp(const struct pool_ip *a, const struct pool_ip *b);

/* Load one [pool "NAME"] section (its keys already checked by the ini
 * spec conf.c gives): every problem appended to errs as "PATH:LINE: [pool
 * "NAME"] key: what". Returns the number of problems, -1 when memory ran
 * out. *out is filled either way (pool_free it). */
int pool_load(const char *path, const struct ini_section *s, struct ip_pool *out,
	      struct sbuf *errs);
/* Ranges of different pools that overlap: one problem per pair, at the
 * later pool's range line. Returns the number, -1 when memory ran out. */
int pool_check_overlaps(const char *path, const struct ini *ini, const struct ip_pool *p,
			size_t n, struct sbuf *errs);
void pool_free(struct ip_pool *p);

/* Is a inside p's range? */
bool pool_in_range(const struct ip_pool *p, const struct pool_ip *a);
/* The number of addresses of the range, UINT64_MAX when larger. */
uint64_t pool_size(const struct ip_pool *p);

/* The tag recording address a ("ip-192.0.2.5", "ip-2001-db8--5"), and
 * back: 0 when tag is such a tag. */
char *pool_tag(const struct pool_ip *a);
int pool_tag_parse(const char *tag, struct pool_ip *out);
/* The first address tag in a PVE tag list (';', ',' or ' ' separated) that
 * lies in p's range: 1 (and *out), 0 none. */
int pool_tags_find(const struct ip_pool *p, const char *tags, struct pool_ip *out);
/* tags with the address tag of a added (and any other address tag of p's
 * range removed), ';'-separated; malloc'd. a NULL: only the removal. */
char *pool_tags_with(const struct ip_pool *p, const char *tags, const struct pool_ip *a);

/* Does the tag list hold a's address tag? */
bool pool_tags_have(const char *tags, const struct pool_ip *a);
/* The addresses a config value sets by hand: the ip= and ip6= options of a
 * VM's ipconfigN or a container's netN ("ip=A/P,gw=G"; dhcp, auto and
 * manual set none), at most 2, into out. Their number. */
size_t pool_value_ips(const char *value, struct pool_ip out[2]);

/* PVE's ipconfig0 value for address a of p: "ip=A/P,gw=G" (IPv6: "ip6=A/P,
 * gw6=G"). malloc'd. */
char *pool_ipconfig(const struct ip_pool *p, const struct pool_ip *a);

/* The lowest address of p's range that is not in used[0..n) (any order),
 * after passing over skip free ones: 0 and *out, or 1 when there is none. */
int pool_pick(const struct ip_pool *p, const struct pool_ip *used, size_t n, size_t skip,
	      struct pool_ip *out);

/* The free stretches of p's range around used[0..n) (any order), as
 * "A-B" or "A" strings in *out (malloc'd array of malloc'd strings), at
 * most max of them (the rest counted in *more). -1 when memory ran out. */
int pool_free_ranges(const struct ip_pool *p, const struct pool_ip *used, size_t n, size_t max,
		     char ***out, size_t *n_out, size_t *more);

#endif
