/* qemu_guest.h - a scenario guest that runs as a real qemu-system-x86_64
 * (TCG) process (tests/README.md "Lab"): its command line made from the PVE config
 * as qemu-server makes it, its disk a qcow2 overlay of the scenario's image,
 * power through the process and QMP, the guest agent endpoints answered by
 * the real qemu-guest-agent. */
#ifndef PVESIM_QEMU_GUEST_H
#define PVESIM_QEMU_GUEST_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct cluster;
struct sim_guest;
struct qemu_guest;

/* A guest backed by image (raw or qcow2 per format; NULL: raw). NULL on
 * allocation failure. Nothing is made on disk until the first start or
 * clone. */
struct qemu_guest *qemu_guest_new(const char *image, const char *format);
/* The backend of a clone of src: its disk an overlay of src's, attached to
 * the clone's drive holding volid. NULL with *err on failure. */
struct qemu_guest *qemu_guest_clone(struct qemu_guest *src, int src_vmid, const char *volid,
				    char **err);

/* Kills the process (if any) and removes the overlay, sockets and logs. */
void qemu_guest_free(struct qemu_guest *q);

/* The argument vector (NULL-terminated, malloc'd strings; free with
 * qemu_argv_free) for config, the guest's files in dir, its SSH forward
 * from address:ssh_port to the guest's port 22, and the volume (volid) that
 * is the guest's real disk. NULL with *err for a config it cannot run. */
char **qemu_guest_argv(json_object *config, int vmid, const char *dir, const char *disk,
		       const char *volid, const char *address, unsigned ssh_port, char **err);
void qemu_argv_free(char **argv);

/* Start the process from g's current config. -1 with *err. */
int qemu_guest_start(struct sim_guest *g, char **err);
/* SIGTERM, then SIGKILL after 5 s; reaps it. No-op when not running. */
void qemu_guest_kill(struct qemu_guest *q);
/* ACPI power button through QMP. -1 with *err. */
int qemu_guest_powerdown(struct qemu_guest *q, char **err);
bool qemu_guest_alive(struct qemu_guest *q);
long qemu_guest_pid(const struct qemu_guest *q);
/* Its run directory (disk.qcow2, console.log, qemu.log, sockets), NULL
 * before the first start or clone. */
const char *qemu_guest_dir(const struct qemu_guest *q);
/* Every QEMU-backed guest whose process has exited since is stopped, and a
 * shutdown task of it still running ends at now. */
void qemu_guests_poll(struct cluster *c, double now);
/* A guest agent command (guest-ping, guest-network-get-interfaces, ...)
 * answered by the real agent: its "return" value, or NULL with *err when
 * it does not answer within a few seconds. IPv4 addresses of QEMU's user
 * network (10.0.2.0/24) are answered as the guest's address, the one its
 * SSH forward listens on. */
json_object *qemu_guest_agent(struct sim_guest *g, const char *cmd, char **err);

#endif
