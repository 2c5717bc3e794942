/* guestd.c - a fixture guest for shell scripts (the demo, end-to-end
 * tests): starts a guestenv (tests/support/guestenv.h: the fixture tree
 * behind a private chrooted sshd on a loopback address) with its boot file
 * watcher, prints one JSON line when ready, and runs until SIGTERM or
 * SIGINT, then removes everything and exits 0.
 *
 *   guestd --fixture NAME --addr 127.0.1.N [--port P] [--authorize PUB]...
 *          [--guests-dir DIR]
 *
 *   --port P        sshd's port (default 0: a free one); guestds on
 *                   different addresses may share one port
 *   --authorize PUB also authorize this public key file for root (besides
 *                   the key guestd makes, "identity")
 *   --guests-dir    the fixtures (default $PVAGENT_GUESTS or tests/guests)
 *
 * Ready line: {"root": the guest's "/" on the host (give it to the
 * simulator: pvesim --guest-root VMID=ROOT), "port", "known_hosts" (a file
 * trusting the guest's host key), "identity" (a private key root may log in
 * with), "addr"}. The sshd listens while the simulator's boot file says the
 * guest is up (until the simulator writes one: listening). Needs root.
 * Exit: 0 after a clean stop, 1 when the guest cannot start or stop
 * cleanly, 2 on a usage error. */
#include "guestenv.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: guestd --fixture NAME --addr 127.0.1.N [--port P] [--authorize PUB]...\n"
		   "              [--guests-dir DIR]\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"fixture", required_argument, NULL, 'f'},
		{"addr", required_argument, NULL, 'a'},
		{"port", required_argument, NULL, 'p'},
		{"authorize", required_argument, NULL, 'k'},
		{"guests-dir", required_argument, NULL, 'g'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct guestenv_opts go = {0};
	struct sshd_opts so = {0};
	/* at most one key per argument, NULL-terminated */
	const char **keys = calloc((size_t)argc + 1, sizeof *keys);
	size_t nkeys = 0;
	if (!keys) {
		fprintf(stderr, "guestd: out of memory\n");
		return 1;
	}
	int opt, rc = 2;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f': go.fixture = optarg; break;
		case 'a': go.addr = optarg; break;
		case 'g': go.guests_dir = optarg; break;
		case 'k': keys[nkeys++] = optarg; break;
		case 'p': {
			char *end;
			errno = 0;
			long p = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || p < 0 || p > 65535) {
				fprintf(stderr, "guestd: --port %s: expected 0 to 65535\n", optarg);
				goto out;
			}
			so.port = (int)p;
			break;
		}
		case 'h': usage(stdout); rc = 0; goto out;
		default: usage(stderr); goto out;
		}
	}
	if (!go.fixture || !go.addr || optind != argc) {
		usage(stderr);
		goto out;
	}
	so.authorized = nkeys ? keys : NULL;
	go.sshd = &so;

	/* Block the stop signals before any thread starts, then wait for one
	 * (the sshd children unblock them before exec). */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = 1;
	struct guestenv ge;
	if (guestenv_start(&ge, &go) < 0) {
		fprintf(stderr, "guestd: cannot start the %s guest on %s\n", go.fixture, go.addr);
		goto out;
	}
	if (guestenv_watch_start(&ge) < 0) {
		fprintf(stderr, "guestd: cannot watch %s/.pvagent-facts\n", ge.sd.root);
		guestenv_stop(&ge);
		goto out;
	}
	json_object *ready = json_object_new_object();
	json_object_object_add(ready, "root", json_object_new_string(ge.sd.root));
	json_object_object_add(ready, "port", json_object_new_int(ge.sd.port));
	json_object_object_add(ready, "known_hosts", json_object_new_string(ge.known_hosts));
	json_object_object_add(ready, "identity", json_object_new_string(ge.sd.identity));
	json_object_object_add(ready, "addr", json_object_new_string(ge.sd.addr));
	printf("%s\n", json_object_to_json_string_ext(ready, JSON_C_TO_STRING_PLAIN |
								JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
	json_object_put(ready);

	int sig = 0;
	while (sigwait(&stop, &sig) != 0)
		;
	rc = guestenv_stop(&ge) < 0 ? 1 : 0;
out:
	free(keys);
	return rc;
}
