/* guestnet.h - the guests' own TCP port as clients see it: for a guest
 * with an address and a listen_port in the scenario, the simulator holds a
 * listener on ADDRESS:PORT (a loopback address) that accepts and closes
 * connections, and closes it while the guest is down in a migration (its
 * downtime, in simulated time), so a probe sees a real gap. One thread,
 * its own lock; times come from the server's clock callback. */
#ifndef PVESIM_GUESTNET_H
#define PVESIM_GUESTNET_H

struct guestnet;

typedef double (*guestnet_clock_fn)(void *ctx);

/* Start the thread (no endpoints yet). NULL on failure. */
struct guestnet *guestnet_start(guestnet_clock_fn now, void *ctx);
/* Serve addr:port from now on (port 0: a free one); *bound gets the port.
 * 0, or -1 (the address cannot be bound). */
int guestnet_listen(struct guestnet *n, const char *addr, unsigned port, unsigned *bound);
/* addr:port is closed from `from` to `to` (simulated seconds). */
void guestnet_down(struct guestnet *n, const char *addr, unsigned port, double from, double to);
void guestnet_stop(struct guestnet *n);

#endif
