/* test_cli_names.c - guests named by VMID or by a dotted DNS name, down
 * of several guests, an unknown --node, virtio on a container, show and
 * ssh, inject by VMID: the real
 * pvagent ($PVAGENT_BIN) against the simulator (tests/support/simproc),
 * with an sshd guest for the [ssh] settings (127.0.1.239-249). */
#include "cli.h"
#include "clirun.h"
#include "cliworld.h"
#include "simproc.h"
#include "sshd.h"
#include "util.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct cli_world cw;

static void cleanup(void)
{
	cli_world_cleanup(&cw);
}

TestSuite(cli_names, .fini = cleanup, .timeout = 120);

/* cli1 and fbsd-base, and: old1 (190, stopped), old2 (191, running), ct1
 * (195, a running container) */
static const char more_guests[] = ",\n"
	"  {\"vmid\": 190, \"node\": \"pve1\", \"type\": \"qemu\", \"status\": \"stopped\",\n"
	"   \"config\": {\"name\": \"old1\", \"memory\": \"512\", \"cores\": 1,"
	" \"scsi0\": \"local-lvm:vm-190-disk-0,size=8G\"}},\n"
	"  {\"vmid\": 191, \"node\": \"pve1\", \"type\": \"qemu\", \"status\": \"running\",\n"
	"   \"config\": {\"name\": \"old2\", \"memory\": \"512\", \"cores\": 1,"
	" \"scsi0\": \"local-lvm:vm-191-disk-0,size=8G\"}},\n"
	"  {\"vmid\": 195, \"node\": \"pve1\", \"type\": \"lxc\", \"status\": \"running\",\n"
	"   \"config\": {\"hostname\": \"ct1\", \"memory\": \"512\", \"cores\": 1,"
	" \"rootfs\": \"local-lvm:vm-195-disk-0,size=8G\","
	" \"net0\": \"name=eth0,bridge=vmbr0,ip=10.10.0.95/24\"}}";

Test(cli_names, down_by_vmid_and_several)
{
	cli_world_start(&cw, "127.0.1.240", more_guests);
	char *out = NULL;

	/* an all-digits argument is a VMID */
	cr_assert_eq(simproc_named(&cw.sim, "old1"), 1);
	int rc = cli_pv(&cw, &out, "down", "190", "--yes", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "old1"), "the result names the guest: %s", out);
	cr_expect_null(strstr(out, "does not exist"), "%s", out);
	free(out);
	cr_expect_eq(simproc_named(&cw.sim, "old1"), 0, "VMID 190 was not deleted");

	/* several: each its own job, results per guest; the worst exit */
	rc = cli_pv(&cw, &out, "--json", "down", "old2", "cli1", "-y", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	json_object *o = cli_final_json(out);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"guests", "0", "name", NULL}), "old2");
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"guests", "1", "name", NULL}), "cli1");
	json_object_put(o);
	free(out);
	cr_expect_eq(simproc_named(&cw.sim, "old2"), 0);
	cr_expect_eq(simproc_named(&cw.sim, "cli1"), 0);

	/* a name given twice is a usage error */
	rc = cli_pv(&cw, &out, "down", "a1", "A1", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	free(out);
	cli_world_stop(&cw);
}

Test(cli_names, dotted_names_up_and_down)
{
	cli_world_start(&cw, "127.0.1.241", more_guests);
	char *out = NULL;
	int rc = cli_pv(&cw, &out, "up", "web.example.org", "-t", "clistatic", "--no-inject", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	free(out);
	cr_expect_eq(simproc_named(&cw.sim, "web.example.org"), 1);
	rc = cli_pv(&cw, &out, "down", "web.example.org", "--yes", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	free(out);
	cr_expect_eq(simproc_named(&cw.sim, "web.example.org"), 0);

	/* up takes names only: digits would read as a VMID */
	rc = cli_pv(&cw, &out, "up", "1234", "-t", "clistatic", "--no-inject", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "VMID"), "%s", out);
	free(out);
	/* not DNS names */
	rc = cli_pv(&cw, &out, "up", "a..b", "-t", "clistatic", "--no-inject", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	free(out);
	rc = cli_pv(&cw, &out, "down", "-a.b", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	free(out);
	cli_world_stop(&cw);
}

Test(cli_names, unknown_node_and_virtio_on_a_container)
{
	cli_world_start(&cw, "127.0.1.242", more_guests);
	char *out = NULL;
	int rc = cli_pv(&cw, &out, "list", "--node", "nosuch", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "no node 'nosuch' in the cluster; nodes: pve1"), "%s", out);
	free(out);
	rc = cli_pv(&cw, &out, "up", "n1", "-t", "clistatic", "--node", "nosuch", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "no node 'nosuch' in the cluster; nodes: pve1"), "%s", out);
	free(out);
	cr_expect_eq(simproc_named(&cw.sim, "n1"), 0);
	rc = cli_pv(&cw, &out, "list", "--node", "pve1", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	free(out);

	rc = cli_pv(&cw, &out, "virtio", "ct1", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "containers have no emulated disks"), "%s", out);
	cr_expect_null(strstr(out, "converting to virtio"), "%s", out);
	free(out);
	/* by VMID too */
	rc = cli_pv(&cw, &out, "virtio", "195", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "containers have no emulated disks"), "%s", out);
	free(out);
	cli_world_stop(&cw);
}

Test(cli_names, ssh_runs_a_command)
{
	if (access("/usr/bin/ssh", X_OK) < 0 && access("/bin/ssh", X_OK) < 0)
		cr_skip_test("no ssh client");
	cli_world_start(&cw, "127.0.1.243", more_guests);
	char *out = NULL;
	/* the template names the address; the words are quoted one by one */
	int rc = cli_pv(&cw, &out, "ssh", "cli1", "-t", "clistatic", "--", "echo", "hello", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "hello\n"), "%s", out);
	free(out);
	rc = cli_pv(&cw, &out, "ssh", "150", "-t", "clistatic", "--", "echo", "a  b;", "$HOME", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "a  b; $HOME\n"), "%s", out);
	free(out);
	rc = cli_pv(&cw, &out, "ssh", "nosuch", "--", "true", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	free(out);
	cli_world_stop(&cw);
}

Test(cli_names, show_text_and_json)
{
	cli_world_start(&cw, "127.0.1.244", more_guests);
	char *out = NULL;
	int rc = cli_pv(&cw, &out, "show", "cli1", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "vmid: 150\n"), "%s", out);
	cr_expect(strstr(out, "status: running\n"), "%s", out);
	cr_expect(strstr(out, "template: clitest\n"), "%s", out);
	cr_expect(strstr(out, "disk bus: virtio"), "%s", out);
	cr_expect(strstr(out, "address: unknown\n"), "no guest agent: %s", out);
	cr_expect(strstr(out, "  cores = 1\n"), "%s", out);
	free(out);

	rc = cli_pv(&cw, &out, "--json", "show", "195", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	json_object *o = cli_final_json(out);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"name", NULL}), "ct1");
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"type", NULL}), "lxc");
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"config", "hostname", NULL}), "ct1");
	json_object_put(o);
	free(out);

	rc = cli_pv(&cw, &out, "show", "nosuch", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	free(out);
	cli_world_stop(&cw);
}

Test(cli_names, inject_by_vmid_uses_the_guests_name)
{
	cli_world_start(&cw, "127.0.1.245", more_guests);
	char *out = NULL;
	int rc = cli_pv(&cw, &out, "inject", "150", "--address", cw.ge.sd.addr, NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "cli1: changed"), "%s", out);
	free(out);
	char *rcconf = NULL;
	cr_assert_eq(guestenv_read(&cw.ge, "/etc/rc.conf", &rcconf), 0);
	cr_expect(strstr(rcconf, "hostname=\"cli1\"\n"), "%s", rcconf);
	free(rcconf);
	rc = cli_pv(&cw, &out, "inject", "999", "--address", cw.ge.sd.addr, NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "no guest with VMID 999"), "%s", out);
	free(out);
	cli_world_stop(&cw);
}

/* A template that names no disk storage, as the shipped ones: its
 * ${storage} is the configured disk storage for every command that expands
 * it, not only up (inject and show of a guest made from it failed with
 * "${storage} has no value" and showed no address). */
Test(cli_names, inject_and_show_expand_storage_as_up_does)
{
	cli_world_start(&cw, "127.0.1.239", ",\n"
			"  {\"vmid\": 160, \"node\": \"pve1\", \"type\": \"qemu\","
			" \"status\": \"running\",\n"
			"   \"config\": {\"name\": \"st1\", \"memory\": \"1024\", \"cores\": 1,"
			" \"description\": \"st1: FreeBSD 14.1 (pvagent template clistore)\","
			" \"virtio0\": \"local-lvm:vm-160-disk-0,size=16G\"}}");
	char *t = strprintf("%s/templates/clistore.tmpl", cw.ge.sd.etc);
	char *text = strprintf("[template]\nkind = qemu\nos = freebsd\nos_version = 14.1\n"
			       "[source]\nclone = fbsd-base\n"
			       "[pve]\nide2 = ${storage}:cloudinit\n"
			       "[rc.conf]\npvagent_cli_test = \"YES\"\n"
			       "[guest]\nuser = root\nport = %d\naddress = static\nip = %s\n",
			       cw.ge.sd.port, cw.ge.sd.addr);
	cr_assert_eq(test_write_file(t, text, 0644), 0);
	free(t);
	free(text);
	char *out = NULL;
	int rc = cli_pv(&cw, &out, "inject", "st1", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "st1: changed"), "%s", out);
	free(out);
	rc = cli_pv(&cw, &out, "show", "st1", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	char *want = strprintf("address: %s\n", cw.ge.sd.addr);
	cr_expect(strstr(out, want), "show found the template's address: %s", out);
	free(want);
	free(out);
	cli_world_stop(&cw);
}

/* cli1 was made from clitest (its description says so): up with another
 * template changes nothing and exits 2; --retemplate converges it. */
Test(cli_names, up_with_another_template_is_refused_unless_retemplate)
{
	cli_world_start(&cw, "127.0.1.246", more_guests);
	char *out = NULL;
	int rc = cli_pv(&cw, &out, "up", "cli1", "-t", "clistatic", "--no-inject", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	cr_expect(strstr(out, "was made from template clitest, not clistatic; nothing changed"),
		  "%s", out);
	cr_expect(strstr(out, "--retemplate"), "the way out is named: %s", out);
	free(out);
	json_object *log = simproc_requests(&cw.sim);
	cr_expect_eq(simproc_count_requests(log, "PUT", "*/qemu/150/config", -1), 0);
	cr_expect_eq(simproc_count_requests(log, "POST", "*/qemu/150/config", -1), 0);
	json_object_put(log);

	/* -t twice with different values is a usage error, before anything */
	rc = cli_pv(&cw, &out, "up", "cli1", "-t", "clitest", "-t", "clistatic", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	free(out);

	rc = cli_pv(&cw, &out, "--json", "up", "cli1", "-t", "clistatic", "--no-inject", "--retemplate",
		NULL);
	cr_expect_eq(rc, 0, "%s", out);
	free(out);
	json_object *d = NULL, *v = NULL;
	long st = 0;
	cr_assert_eq(sim_api(&cw.sim, "GET", "/nodes/pve1/qemu/150/config", NULL, &st,
			     &d), 0);
	cr_assert_eq(st, 200);
	cr_assert(json_object_object_get_ex(d, "data", &v) &&
		  json_object_object_get_ex(v, "description", &v), "%s",
		  json_object_to_json_string(d));
	cr_expect(strstr(json_object_get_string(v), "(pvagent template clistatic)"), "%s",
		  json_object_get_string(v));
	json_object_put(d);
	/* and from now on the same template converges it quietly */
	rc = cli_pv(&cw, &out, "up", "cli1", "-t", "clistatic", "--no-inject", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	free(out);
	cli_world_stop(&cw);
}

/* Requests that change something (anything but GET) in the log so far. */
static int writes(void)
{
	json_object *log = simproc_requests(&cw.sim);
	int n = simproc_count_requests(log, "POST", "*", -1) +
		simproc_count_requests(log, "PUT", "*", -1) +
		simproc_count_requests(log, "DELETE", "*", -1);
	json_object_put(log);
	return n;
}

/* up and down --dry-run: the plan, key by key, from reads only; no job
 * stored. */
Test(cli_names, dry_run_plans_send_nothing)
{
	cli_world_start(&cw, "127.0.1.247", more_guests);
	char *out = NULL;
	int w0 = writes();
	int rc = cli_pv(&cw, &out, "up", "new1", "-t", "clistatic", "--set", "size=40G", "--dry-run",
			NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "would clone VM 9014 (fbsd-base) on pve1 as VMID "), "%s", out);
	cr_expect(strstr(out, "would change description: (unset) -> new1: FreeBSD 14.1 (pvagent "
			      "template clistatic)"), "%s", out);
	cr_expect(strstr(out, "would grow virtio0 to 40G"), "%s", out);
	cr_expect(strstr(out, "would start it"), "%s", out);
	cr_expect(strstr(out, "would inject the template's 1 guest file section over SSH"), "%s",
		  out);
	cr_expect(strstr(out, "planned"), "%s", out);
	free(out);
	cr_expect_eq(simproc_named(&cw.sim, "new1"), 0);

	/* an existing guest: only the keys that differ; JSON carries the plan */
	rc = cli_pv(&cw, &out, "--json", "up", "cli1", "-t", "clitest", "--set", "cores=3", "--set",
		"size=8G", "--dry-run", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	json_object *o = cli_final_json(out);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"guests", "0", "status", NULL}),
			 "planned");
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"guests", "0", "changes", "0", NULL}),
			 "cores: 1 -> 3");
	cr_expect_null(cli_jpath(o, (const char *const[]){"guests", "0", "changes", "1", NULL}));
	const char *p0 = cli_jpath(o, (const char *const[]){"guests", "0", "plan", "0", NULL});
	cr_expect(p0 && strstr(p0, "leave virtio0 as it is: larger than 8G, and disks never "
				   "shrink"), "%s", out);
	json_object_put(o);
	free(out);

	rc = cli_pv(&cw, &out, "down", "cli1", "--purge", "--dry-run", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "would shut down VM 150 on pve1"), "%s", out);
	cr_expect(strstr(out, "would delete VM 150 and its disks, and remove it from backup jobs"),
		  "%s", out);
	free(out);
	cr_expect_eq(simproc_named(&cw.sim, "cli1"), 1);
	cr_expect_eq(writes(), w0, "a dry run sent a request that changes something");
	rc = cli_pv(&cw, &out, "jobs", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect_null(strstr(out, "cli1"), "a dry run stored a job:\n%s", out);
	free(out);
	cli_world_stop(&cw);
}

/* ---- the terminal's view ------------------------------------------------ */

/* A tiny terminal: printable bytes, \r, \n, ESC[nA (up), ESC[J (clear to
 * the end of the screen), ESC[2K (clear the line). rows[] is the screen
 * (scrollback included); max_live the most lines that looked live ("NAME:
 * starting", "NAME: STEP", "...%", "... done", "NAME: waiting for a free
 * slot") on the screen at once, counted before each erase. */
struct screen {
	char **rows;
	size_t n, row, col;
	int max_live;
};

static bool live_looking(const char *line)
{
	/* "  NAME: STEP": a step that has started */
	const char *c = strstr(line, ": ");
	bool started = c && c[2] && !strchr(c + 2, ' ') && strcmp(c + 2, "begin") != 0;
	return strstr(line, ": starting") || strstr(line, "%") || strstr(line, " done") ||
	       strstr(line, ": waiting for a free slot") || started;
}

static void count_live(struct screen *sc)
{
	int n = 0;
	for (size_t i = 0; i < sc->n; i++)
		n += live_looking(sc->rows[i]);
	if (n > sc->max_live)
		sc->max_live = n;
}

static char *row_at(struct screen *sc, size_t r)
{
	while (sc->n <= r) {
		sc->rows = realloc(sc->rows, (sc->n + 1) * sizeof *sc->rows);
		cr_assert_not_null(sc->rows);
		sc->rows[sc->n] = calloc(1, 512);
		cr_assert_not_null(sc->rows[sc->n]);
		sc->n++;
	}
	return sc->rows[r];
}

static void render(struct screen *sc, const char *s)
{
	memset(sc, 0, sizeof *sc);
	for (; *s; s++) {
		if (*s == '\033' && s[1] == '[') {
			const char *p = s + 2;
			unsigned long num = strtoul(p, (char **)&p, 10);
			if (*p == 'A') {
				sc->row = num > sc->row ? 0 : sc->row - num;
			} else if (*p == 'J') {
				count_live(sc);
				memset(row_at(sc, sc->row) + sc->col, 0, 512 - sc->col);
				for (size_t i = sc->row + 1; i < sc->n; i++)
					free(sc->rows[i]);
				sc->n = sc->row + 1;
			} else if (*p == 'K') {
				memset(row_at(sc, sc->row), 0, 512);
			}
			s = p;
			continue;
		}
		if (*s == '\r') {
			sc->col = 0;
		} else if (*s == '\n') {
			sc->row++;
			sc->col = 0;
			row_at(sc, sc->row);
		} else if (sc->col < 511) {
			char *r = row_at(sc, sc->row);
			r[sc->col++] = *s;
		}
	}
	count_live(sc);
}

static void screen_free(struct screen *sc)
{
	for (size_t i = 0; i < sc->n; i++)
		free(sc->rows[i]);
	free(sc->rows);
}

/* up of two guests at once on a terminal: each has its own live line while
 * both are in flight, and what stays on the screen is the permanent lines
 * and the table, nothing half overwritten. */
Test(cli_names, parallel_progress_on_a_terminal)
{
	cli_world_start(&cw, "127.0.1.248", more_guests);
	char *out = NULL;
	int rc = test_pvagent_pty(cw.bin, cw.conf, 100, &out, "up", "tty1", "tty2", "-t",
				  "clistatic", "--parallel", "2", "--no-inject", NULL);
	cr_assert_neq(rc, -2, "sanitizer report:\n%s", out);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "\033[2K"), "live lines are cleared before they are drawn:\n%s", out);
	struct screen sc;
	render(&sc, out);
	cr_expect_geq(sc.max_live, 2, "the two guests never had a live line each:\n%s", out);
	size_t steps = 0;
	for (size_t i = 0; i < sc.n; i++) {
		const char *l = sc.rows[i];
		cr_expect(!live_looking(l), "a live line stayed on the screen: '%s'", l);
		cr_expect(!(strstr(l, "tty1") && strstr(l, "tty2")), "a line mixes both: '%s'", l);
		steps += strncmp(l, "  tty", 5) == 0 && strstr(l, " clone ");
	}
	cr_expect_eq(steps, 2, "one clone step line per guest");
	cr_expect(sc.n >= 3 && strstr(sc.rows[sc.n - 4], "NAME") && strstr(sc.rows[sc.n - 3], "created") &&
			  strstr(sc.rows[sc.n - 2], "created"),
		  "the table ends the output:\n%s", out);
	screen_free(&sc);
	free(out);

	/* not a terminal: plain lines, no escape sequences */
	rc = cli_pv(&cw, &out, "down", "tty1", "tty2", "--yes", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect_null(strchr(out, '\033'), "%s", out);
	free(out);

	/* one at a time: until its job begins, tty4's live line says it waits */
	rc = test_pvagent_pty(cw.bin, cw.conf, 100, &out, "up", "tty3", "tty4", "-t", "clistatic",
			      "--parallel", "1", "--no-inject", NULL);
	cr_assert_neq(rc, -2, "sanitizer report:\n%s", out);
	cr_expect_eq(rc, 0, "%s", out);
	const char *begin = strstr(out, "tty4: begin");
	cr_assert_not_null(begin, "%s", out);
	size_t waiting = 0;
	for (const char *p = strstr(out, "\033[2K  tty4: "); p && p < begin;
	     p = strstr(p + 1, "\033[2K  tty4: ")) {
		const char *text = p + strlen("\033[2K  tty4: ");
		cr_expect(strncmp(text, "waiting for a free slot (parallel 1)\r", 37) == 0 ||
				  strncmp(text, "waiting for a free slot (parallel 1)\n", 37) == 0,
			  "tty4 before its turn: '%.*s'", (int)strcspn(text, "\r\n"), text);
		waiting++;
	}
	cr_expect_gt(waiting, 0, "tty4 never said it waits:\n%s", out);
	free(out);
	cli_world_stop(&cw);
}

/* The last live line on_job_event drew for name in out ("" when none). */
static char *last_live(const char *out, const char *name)
{
	char *key = strprintf("\033[2K  %s: ", name), *last = strdup("");
	for (const char *p = strstr(out, key); p; p = strstr(p + 1, key)) {
		const char *text = p + strlen(key);
		free(last);
		last = strndup(text, strcspn(text, "\r\n"));
	}
	free(key);
	return last;
}

/* The events of guests one after the other (--parallel 1), and of a
 * virtio switch, as on_job_event draws them on a terminal: a guest waiting
 * for its turn says so, a step that has started shows its name at once (no
 * "find done" while the clone waits for PVE), a step's own progress
 * replaces what the step before it said. */
Test(cli_names, live_lines_say_what_each_guest_does_now)
{
	struct cli c = {0};
	struct event_print pp = {.cli = &c, .tty = true};
	char path[] = "/tmp/test_cli_names.live.XXXXXX";
	int fd = mkstemp(path), saved = dup(STDOUT_FILENO);
	cr_assert(fd >= 0 && saved >= 0);
	fflush(stdout);
	cr_assert_eq(dup2(fd, STDOUT_FILENO), STDOUT_FILENO);
	const char *const names[] = {"w1", "w2"};
	cli_progress_waiting(&pp, names, 2, 1);
	struct job_event ev = {.kind = JOB_EV_BEGIN, .name = "w1", .percent = -1};
	on_job_event(&pp, &ev);
	ev = (struct job_event){.kind = JOB_EV_STEP, .name = "w1", .step = "find", .percent = -1};
	on_job_event(&pp, &ev);
	ev = (struct job_event){.kind = JOB_EV_PROGRESS, .name = "w1", .step = "clone", .percent = -1};
	cr_assert(job_event_is_start(&ev));
	on_job_event(&pp, &ev);
	fflush(stdout);
	char *out = NULL;
	cr_assert_eq(read_file(path, &out, NULL), 0);
	char *w1 = last_live(out, "w1"), *w2 = last_live(out, "w2");
	cr_expect_str_eq(w1, "clone", "%s", out);
	cr_expect_str_eq(w2, "waiting for a free slot (parallel 1)", "%s", out);
	free(w1);
	free(w2);
	free(out);
	/* virtio's switch: its own progress after the file plan's */
	ev = (struct job_event){.kind = JOB_EV_PROGRESS, .name = "w1", .step = "switch",
				.percent = -1, .text = "plan: 0 of 3 files to change"};
	on_job_event(&pp, &ev);
	ev.text = "shutting VM 190 down";
	on_job_event(&pp, &ev);
	ev = (struct job_event){.kind = JOB_EV_DONE, .name = "w1", .percent = -1, .text = "done"};
	on_job_event(&pp, &ev);
	ev = (struct job_event){.kind = JOB_EV_BEGIN, .name = "w2", .percent = -1};
	on_job_event(&pp, &ev);
	end_progress_line(&pp);
	fflush(stdout);
	cr_assert_eq(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
	close(saved);
	close(fd);
	cr_assert_eq(read_file(path, &out, NULL), 0);
	unlink(path);
	w1 = last_live(out, "w1");
	w2 = last_live(out, "w2");
	cr_expect_str_eq(w1, "switch       shutting VM 190 down", "%s", out);
	cr_expect_str_eq(w2, "starting", "%s", out);
	free(w1);
	free(w2);
	free(out);
}

/* The members every result has (name, vmid, node, result, exit, error
 * {kind, message, step}), in each guest of a job command and at the top of
 * a guest command, on success and on every kind of failure. */
static void expect_shape(json_object *o, const char *name, const char *result, int exit,
			 const char *kind, const char *step)
{
	const char *s = json_object_to_json_string(o);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"name", NULL}), name, "%s", s);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"result", NULL}), result, "%s", s);
	json_object *v;
	cr_expect(json_object_object_get_ex(o, "vmid", &v), "%s", s);
	cr_expect(json_object_object_get_ex(o, "node", &v), "%s", s);
	cr_expect(json_object_object_get_ex(o, "exit", &v) && json_object_get_int(v) == exit, "%s",
		  s);
	cr_assert(json_object_object_get_ex(o, "error", &v), "%s", s);
	if (!kind) {
		cr_expect_null(v, "%s", s);
		return;
	}
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"error", "kind", NULL}), kind, "%s", s);
	cr_expect_not_null(cli_jpath(o, (const char *const[]){"error", "message", NULL}), "%s", s);
	if (step)
		cr_expect_str_eq(cli_jpath(o, (const char *const[]){"error", "step", NULL}), step,
				 "%s", s);
	else
		cr_expect_null(cli_jpath(o, (const char *const[]){"error", "step", NULL}), "%s", s);
}

Test(cli_names, json_results_have_one_shape)
{
	cli_world_start(&cw, "127.0.1.249", more_guests);
	char *out = NULL;
	json_object *o, *g;
	/* success, in a job command's guest list */
	int rc = cli_pv(&cw, &out, "--json", "up", "js1", "-t", "clistatic", "--no-inject", NULL);
	cr_expect_eq(rc, 0, "%s", out);
	o = cli_final_json(out);
	cr_assert(json_object_object_get_ex(o, "guests", &g));
	expect_shape(json_object_array_get_idx(g, 0), "js1", "ok", 0, NULL, NULL);
	json_object_put(o);
	free(out);
	/* a PVE failure in a step: the step is named */
	cr_assert_eq(simproc_fault(&cw.sim, "{\"method\":\"POST\",\"path\":\"/clone$\",\"nth\":1,"
					    "\"action\":\"status\",\"status\":400}"),
		     0);
	rc = cli_pv(&cw, &out, "--json", "up", "js2", "-t", "clistatic", "--no-inject", NULL);
	cr_expect_eq(rc, 1, "%s", out);
	o = cli_final_json(out);
	cr_assert(json_object_object_get_ex(o, "guests", &g));
	expect_shape(json_object_array_get_idx(g, 0), "js2", "error", 1, "bad-request", "clone");
	json_object_put(o);
	free(out);
	/* an unknown guest of a guest command: named at the top */
	rc = cli_pv(&cw, &out, "--json", "virtio", "nosuch", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	o = cli_final_json(out);
	expect_shape(o, "nosuch", "error", 2, "not-found", NULL);
	json_object_put(o);
	free(out);
	/* a migration to a node the cluster does not have: refused before
	 * any job, naming the nodes there are */
	rc = cli_pv(&cw, &out, "--json", "migrate", "cli1", "nosuch", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	o = cli_final_json(out);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"error", "kind", NULL}), "not-found");
	cr_expect(strstr(cli_jpath(o, (const char *const[]){"error", "message", NULL}),
			 "no node 'nosuch' in the cluster"), "%s", out);
	cr_expect(strstr(cli_jpath(o, (const char *const[]){"error", "message", NULL}),
			 "; nodes: pve1"), "%s", out);
	cr_expect_not(json_object_object_get_ex(o, "migration", NULL), "%s", out);
	json_object_put(o);
	free(out);
	/* a job that does not exist; a usage error */
	rc = cli_pv(&cw, &out, "--json", "job", "999", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	o = cli_final_json(out);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"error", "kind", NULL}), "not-found");
	json_object_put(o);
	free(out);
	rc = cli_pv(&cw, &out, "--json", "inject", "js1", "--var", "oops", NULL);
	cr_expect_eq(rc, 2, "%s", out);
	o = cli_final_json(out);
	cr_expect_str_eq(cli_jpath(o, (const char *const[]){"error", "kind", NULL}), "usage");
	json_object_put(o);
	free(out);
	cli_world_stop(&cw);
}
