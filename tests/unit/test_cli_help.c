/* test_cli_help.c - the pvagent tool's --version, help, COMMAND --help,
 * the final --json error object of usage, configuration and
 * unknown-command errors, pvagentd's hidden `submitted`, and the bash
 * completion script (bash -n, then its function run for real
 * candidates). Runs $PVAGENT_BIN (default
 * build/san/pvagent); no PVE: the config's url is a closed loopback port. */
#include "clirun.h"
#include "ctl.h"
#include "sshd.h"
#include "store.h"
#include "util.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/pvagent-help-XXXXXX";
static char *conf, *tdir;

static const char *bin(void)
{
	const char *b = getenv("PVAGENT_BIN");
	return b && *b ? b : "build/san/pvagent";
}

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	tdir = strprintf("%s/templates", dir);
	cr_assert_eq(mkdir(tdir, 0700), 0);
	char *t = strprintf("%s/helptest.tmpl", tdir), *secret = strprintf("%s/secret", dir);
	cr_assert_eq(test_write_file(t, "[template]\nkind = qemu\nos = freebsd\nos_version = 14.1\n"
				     "[source]\nclone = fbsd-base\n", 0644), 0);
	cr_assert_eq(test_write_file(secret, "00000000-0000-0000-0000-000000000000\n", 0600), 0);
	conf = strprintf("%s/pvagent.conf", dir);
	char fp[96] = "";
	for (int i = 0; i < 32; i++)
		strcat(fp, i ? ":00" : "00");
	char *text = strprintf("[pve]\nurl = https://127.0.0.1:9\ntoken_id = root@pam!t\n"
			       "token_secret_file = %s\nfingerprint = %s\nnode = pve1\n"
			       "[paths]\ntemplates = %s\nstate = %s\n", secret, fp, tdir, dir);
	cr_assert_eq(test_write_file(conf, text, 0600), 0);
	free(text);
	free(t);
	free(secret);
}

static void teardown(void)
{
	char *cmd = strprintf("rm -rf '%s'", dir);
	int rc = system(cmd);
	(void)rc;
	free(cmd);
	free(conf);
	free(tdir);
}

TestSuite(cli_help, .init = setup, .fini = teardown, .timeout = 60);

/* Run pvagent with these arguments (no -c unless given). */
static int run(char **out, const char *const *args)
{
	const char *argv[16] = {bin()};
	size_t n = 1;
	for (; args[n - 1]; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	int rc = test_run(argv, NULL, out);
	cr_assert(rc < 0 || !*out || !strstr(*out, "Sanitizer"), "%s", *out);
	return rc;
}
#define RUN(out, ...) run(out, (const char *const[]){__VA_ARGS__, NULL})

/* The last line of out that is a JSON object. */
static json_object *final_json(const char *out)
{
	const char *p = out, *last = NULL;
	for (const char *l = p; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (*l == '{')
			last = l;
	cr_assert_not_null(last, "no JSON object in: %s", out);
	size_t n = strcspn(last, "\n");
	char *line = strndup(last, n);
	json_object *o = json_tokener_parse(line);
	free(line);
	cr_assert_not_null(o, "not JSON: %s", last);
	return o;
}

static const char *str(json_object *o, const char *k1, const char *k2)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, k1, &v))
		return NULL;
	if (k2 && !json_object_object_get_ex(v, k2, &v))
		return NULL;
	return json_object_get_string(v);
}

Test(cli_help, version)
{
	char *out = NULL;
	cr_assert_eq(RUN(&out, "--version"), 0);
	cr_assert_str_eq(out, "pvagent " PVAGENT_VERSION "\n");
	free(out);
	cr_assert_eq(RUN(&out, "version"), 0);
	cr_assert_str_eq(out, "pvagent " PVAGENT_VERSION "\n");
	free(out);
}

Test(cli_help, help_lists_every_command)
{
	char *out = NULL;
	cr_assert_eq(RUN(&out, "help"), 0);
	cr_assert_not_null(strstr(out, "  up         provision guests"), "%s", out);
	cr_assert_not_null(strstr(out, "  migrate    "), "%s", out);
	cr_assert_null(strstr(out, "__complete"));
	free(out);
	cr_assert_eq(RUN(&out, "help", "nosuch"), 2);
	cr_assert_not_null(strstr(out, "unknown command 'nosuch'"), "%s", out);
	cr_assert_not_null(strstr(out, "  down       "), "%s", out);
	free(out);
	cr_assert_eq(RUN(&out, "nosuch"), 2);
	cr_assert_not_null(strstr(out, "pvagent: unknown command 'nosuch'"), "%s", out);
	cr_assert_not_null(strstr(out, "  templates  "), "%s", out);
	free(out);
}

/* pvagentd's own `submitted` (a submitted job's child): in neither help
 * nor completion, and refused without --local. */
Test(cli_help, the_daemons_own_command_is_hidden)
{
	char *out = NULL;
	cr_assert_eq(RUN(&out, "help"), 0);
	cr_assert_null(strstr(out, "submitted"), "%s", out);
	free(out);
	cr_assert_eq(RUN(&out, "__complete", "commands"), 0);
	cr_assert_null(strstr(out, "submitted"), "%s", out);
	free(out);
	cr_assert_eq(RUN(&out, "-c", conf, "submitted", "up", "x9"), 2);
	cr_assert_not_null(strstr(out, "pvagent submitted: pvagentd's own command: it runs with "
				   "--local only"), "%s", out);
	free(out);
}

/* COMMAND --help and help COMMAND: no configuration needed */
Test(cli_help, command_help_without_a_config)
{
	char *out = NULL, *out2 = NULL;
	cr_assert_eq(RUN(&out, "-c", "/nonexistent/pvagent.conf", "up", "--help"), 0);
	cr_assert(strncmp(out, "usage: pvagent up NAME... -t TEMPLATE", 37) == 0, "%s", out);
	cr_assert_not_null(strstr(out, "\noptions:\n  -t, --template NAME       the template "
				   "to provision from (required)\n"), "%s", out);
	cr_assert_not_null(strstr(out, "      --no-start            create and configure, but "
				   "leave the guest stopped\n"), "%s", out);
	cr_assert_not_null(strstr(out, "\nexamples:\n  pvagent up web1 -t ubuntu-24.04\n"), "%s", out);
	cr_assert_eq(RUN(&out2, "-c", "/nonexistent/pvagent.conf", "help", "up"), 0);
	cr_assert_str_eq(out, out2);
	free(out);
	free(out2);
	cr_assert_eq(RUN(&out, "down", "web1", "--help"), 0);
	cr_assert_not_null(strstr(out, "usage: pvagent down NAME|VMID... [--purge] [--dry-run] [--yes]\n"), "%s", out);
	free(out);
}

/* The lines of out, each malloc'd, NULL-terminated. */
static char **lines_of(const char *out)
{
	size_t n = 0, cap = 8;
	char **v = malloc(cap * sizeof *v);
	cr_assert_not_null(v);
	for (const char *p = out; *p;) {
		size_t len = strcspn(p, "\n");
		if (n + 2 > cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof *v);
			cr_assert_not_null(v);
		}
		v[n++] = strndup(p, len);
		p += len + (p[len] == '\n');
	}
	v[n] = NULL;
	return v;
}

static void lines_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Walks the command table (pvagent __complete commands, then each command's
 * options): COMMAND -h, COMMAND --help and help COMMAND all exit 0 with the
 * same text, and every option of every command is in it with a line that
 * says what it does, and in pvagent(1). */
Test(cli_help, every_option_of_every_command_is_described)
{
	char *cmds = NULL, *man = NULL;
	cr_assert_eq(RUN(&cmds, "__complete", "commands"), 0);
	cr_assert_eq(read_file("conf/man/pvagent.1", &man, NULL), 0, "conf/man/pvagent.1");
	char **cv = lines_of(cmds);
	size_t ncmd = 0, nopt = 0;
	for (char **c = cv; *c; c++, ncmd++) {
		char *help = NULL, *h1 = NULL, *h2 = NULL, *opts = NULL;
		cr_assert_eq(RUN(&help, "help", *c), 0, "help %s", *c);
		cr_assert_eq(RUN(&h1, *c, "-h"), 0, "%s -h", *c);
		cr_assert_eq(RUN(&h2, *c, "--help"), 0, "%s --help", *c);
		cr_assert_str_eq(help, h1, "%s -h", *c);
		cr_assert_str_eq(help, h2, "%s --help", *c);
		size_t hl = strlen(help);
		cr_assert(hl > 2 && help[hl - 1] == '\n' && help[hl - 2] != '\n',
			  "pvagent %s --help does not end with one newline:\n%s", *c, help);
		cr_assert_eq(RUN(&opts, "__complete", "options", *c), 0);
		char **ov = lines_of(opts);
		for (char **o = ov; *o; o++) {
			if (strcmp(*o, "--help") == 0)
				continue;
			nopt++;
			/* "  -t, --template NAME   text" or "      --dry-run   text", the
			 * text maybe on the next line when the head is long */
			char *head = strprintf("%s ", *o), *alone = strprintf("%s\n", *o);
			const char *at = strstr(help, head);
			if (!at)
				at = strstr(help, alone);
			cr_assert_not_null(at, "pvagent help %s does not show %s:\n%s", *c, *o, help);
			const char *eol = strchr(at, '\n');
			const char *text = at + strlen(*o);
			while (text < eol && *text != ' ')
				text++; /* past " ARG" */
			const char *words = text;
			while (words < eol && *words == ' ')
				words++;
			if (words == eol) { /* the text is on the next line */
				words = eol + 1;
				while (*words == ' ')
					words++;
			}
			cr_assert(*words && *words != '\n' && *words != '-',
				  "pvagent help %s: %s has no description:\n%s", *c, *o, help);
			/* in the man page every '-' of an option is "\-" */
			struct sbuf esc = {0};
			for (const char *p = *o; *p; p++)
				cr_assert_eq(*p == '-' ? sbuf_add(&esc, "\\-") : sbuf_addc(&esc, *p), 0);
			cr_assert_not_null(strstr(man, sbuf_str(&esc)),
					   "pvagent(1) does not mention %s (of %s)", *o, *c);
			sbuf_free(&esc);
			free(head);
			free(alone);
		}
		lines_free(ov);
		free(help);
		free(h1);
		free(h2);
		free(opts);
	}
	cr_assert_gt(ncmd, 15);
	cr_assert_gt(nopt, 40);
	lines_free(cv);
	free(cmds);
	free(man);
}

/* The global options after the command, as git and docker take them:
 * --json, -c/--config (also --config=F), -v; not after "--". */
Test(cli_help, global_options_after_the_command)
{
	char *out = NULL, *out2 = NULL;
	/* (helptest lacks a [guest] section: listed as invalid, exit 1) */
	int rc = RUN(&out, "templates", "--json", "-c", conf);
	cr_assert_eq(RUN(&out2, "--json", "-c", conf, "templates"), rc, "%s", out2);
	/* the same final object (the warning before it says how many ms
	 * curl took to be refused: not compared) */
	json_object *o = final_json(out), *o2 = final_json(out2);
	cr_assert_not_null(o, "%s", out);
	cr_assert_not_null(o2, "%s", out2);
	cr_assert_str_eq(json_object_to_json_string(o), json_object_to_json_string(o2));
	json_object_put(o2);
	cr_assert_str_eq(str(o, "command", NULL), "templates");
	json_object_put(o);
	free(out);
	free(out2);
	char *eq = strprintf("--config=%s", conf);
	cr_assert_eq(RUN(&out, "templates", eq, "-v"), rc, "%s", out);
	cr_assert_not_null(strstr(out, "helptest"), "%s", out);
	cr_assert_not_null(strstr(out, conf), "-v says the configuration loaded:\n%s", out);
	free(out);
	free(eq);
	/* a command's error in JSON, the option given last (the guest the
	 * command names is no option) */
	cr_assert_eq(RUN(&out, "-c", conf, "list", "--json"), 4, "%s", out);
	o = final_json(out);
	cr_assert_not_null(o, "%s", out);
	cr_assert_str_eq(str(o, "command", NULL), "list");
	json_object_put(o);
	free(out);
	/* after "--" it is an argument */
	cr_assert_eq(RUN(&out, "-c", conf, "up", "x", "-t", "helptest", "--", "--json"), 2);
	cr_assert_null(strchr(out, '{'), "no JSON: %s", out);
	free(out);
	cr_assert_eq(RUN(&out, "templates", "-c"), 2, "%s", out);
	cr_assert_not_null(strstr(out, "option '-c' needs an argument"), "%s", out);
	free(out);
}

/* The catalogue of images is the tree's: `image list` needs no
 * configuration (none given, none where one is searched). */
Test(cli_help, image_list_without_a_configuration)
{
	if (getenv("PVAGENT_CONF") || access("conf/pvagent.conf", F_OK) == 0 ||
	    access("/etc/pvagent/pvagent.conf", F_OK) == 0)
		cr_skip_test("a configuration would be found");
	char *out = NULL;
	cr_assert_eq(RUN(&out, "image", "list"), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\ndebian-13 "), "%s", out);
	free(out);
	cr_assert_eq(RUN(&out, "image", "show", "debian-13"), 0, "%s", out);
	free(out);
	/* one named that does not exist is still an error */
	cr_assert_eq(RUN(&out, "-c", "/nonexistent/pvagent.conf", "image", "list"), 2, "%s", out);
	free(out);
}

/* A mistyped command, option, template or node is answered with the
 * nearest one. */
Test(cli_help, did_you_mean)
{
	char *out = NULL;
	cr_assert_eq(RUN(&out, "lsit"), 2);
	cr_assert_not_null(strstr(out, "unknown command 'lsit' (did you mean 'list'?)"), "%s", out);
	free(out);
	cr_assert_eq(RUN(&out, "--json", "migrte"), 2);
	json_object *o = final_json(out);
	cr_assert_str_eq(str(o, "error", "message"), "unknown command 'migrte' (did you mean "
			 "'migrate'?)");
	json_object_put(o);
	free(out);
	cr_assert_eq(RUN(&out, "-c", conf, "--json", "up", "x", "-t", "helptest", "--nodee", "n"), 2);
	cr_assert_not_null(strstr(out, "pvagent up: unknown option '--nodee' (did you mean "
				  "'--node'?)"), "%s", out);
	o = final_json(out);
	cr_assert_str_eq(str(o, "error", "message"), "unknown option '--nodee' (did you mean "
			 "'--node'?)");
	json_object_put(o);
	free(out);
	cr_assert_eq(RUN(&out, "-c", conf, "up", "x", "-t", "helptset"), 2);
	cr_assert_not_null(strstr(out, "no template 'helptset'"), "%s", out);
	cr_assert_not_null(strstr(out, "did you mean 'helptest'?"), "%s", out);
	free(out);
	/* far from everything: no guess */
	cr_assert_eq(RUN(&out, "zzzzzz"), 2);
	cr_assert_null(strstr(out, "did you mean"), "%s", out);
	free(out);
}

Test(cli_help, json_usage_error_object)
{
	char *out = NULL;
	cr_assert_eq(RUN(&out, "-c", conf, "--json", "up"), 2);
	cr_assert_not_null(strstr(out, "pvagent up: needs at least one guest name\n"), "%s", out);
	json_object *o = final_json(out);
	cr_assert_str_eq(str(o, "result", NULL), "error");
	cr_assert_str_eq(str(o, "command", NULL), "up");
	cr_assert_str_eq(str(o, "exit", NULL), "2");
	cr_assert_str_eq(str(o, "error", "kind"), "usage");
	cr_assert_str_eq(str(o, "error", "message"), "needs at least one guest name");
	json_object_put(o);
	free(out);

	cr_assert_eq(RUN(&out, "--json", "nosuchcmd"), 2);
	o = final_json(out);
	cr_assert_str_eq(str(o, "command", NULL), "nosuchcmd");
	cr_assert_str_eq(str(o, "error", "kind"), "unknown-command");
	cr_assert_str_eq(str(o, "error", "message"), "unknown command 'nosuchcmd'");
	json_object_put(o);
	free(out);

	cr_assert_eq(RUN(&out, "-c", "/nonexistent/pvagent.conf", "--json", "nodes"), 2);
	o = final_json(out);
	cr_assert_str_eq(str(o, "command", NULL), "nodes");
	cr_assert_str_eq(str(o, "error", "kind"), "config");
	json_object_put(o);
	free(out);

	/* an error from PVE (nothing listens): one final object, the same shape */
	int rc = RUN(&out, "-c", conf, "--json", "nodes");
	cr_assert_eq(rc, 4, "%d: %s", rc, out);
	o = final_json(out);
	cr_assert_str_eq(str(o, "result", NULL), "error");
	cr_assert_str_eq(str(o, "exit", NULL), "4");
	cr_assert_str_eq(str(o, "error", "kind"), "connect");
	const char *first = strstr(out, "\"result\"");
	cr_assert(first && !strstr(first + 1, "\"result\""), "one final object: %s", out);
	json_object_put(o);
	free(out);

	cr_assert_eq(RUN(&out, "-c", conf, "--json", "up", "x", "-t", "helptest", "--bogus"), 2);
	o = final_json(out);
	cr_assert_str_eq(str(o, "error", "message"), "unknown option '--bogus'");
	json_object_put(o);
	free(out);
}

Test(cli_help, complete_subcommand)
{
	char *out = NULL;
	cr_assert_eq(RUN(&out, "-c", conf, "__complete", "templates"), 0);
	cr_assert_str_eq(out, "helptest\n");
	free(out);
	/* no PVE answers: quietly nothing, at once */
	cr_assert_eq(RUN(&out, "-c", conf, "__complete", "guests"), 0);
	cr_assert_str_eq(out, "");
	free(out);
	cr_assert_eq(RUN(&out, "__complete", "options", "down"), 0);
	cr_assert_str_eq(out, "--purge\n--dry-run\n--yes\n--config\n--json\n--local\n--verbose\n"
			      "--quiet\n--help\n");
	free(out);
}

/* Run the completion function for words (the last the one completed). */
static char *complete_words(const char *words)
{
	char *script = strprintf("source conf/pvagent.bash-completion && "
				 "COMP_WORDS=(%s %s) && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && "
				 "_pvagent && printf '%%s\\n' \"${COMPREPLY[@]}\"", bin(), words);
	const char *argv[] = {"bash", "--norc", "-c", script, NULL};
	char *out = NULL;
	cr_assert_eq(test_run(argv, NULL, &out), 0, "%s", out ? out : "");
	free(script);
	return out;
}

Test(cli_help, bash_completion)
{
	const char *argv[] = {"bash", "-n", "conf/pvagent.bash-completion", NULL};
	char *out = NULL;
	cr_assert_eq(test_run(argv, NULL, &out), 0, "%s", out ? out : "");
	free(out);
	out = complete_words("u");
	cr_assert_str_eq(out, "up\nundrain\n");
	free(out);
	out = complete_words("up --");
	/* a job command's: its params' (wf_params.c), then its own */
	cr_assert_str_eq(out, "--template\n--node\n--vmid\n--storage\n--set\n--var\n"
			      "--no-start\n--full\n--no-inject\n--retemplate\n--dry-run\n--pool\n"
			      "--no-wait-ssh\n--parallel\n--config\n--json\n--local\n--verbose\n"
			      "--quiet\n--help\n");
	free(out);
	char *w = strprintf("-c %s up web1 -t h", conf);
	out = complete_words(w);
	cr_assert_str_eq(out, "helptest\n");
	free(out);
	free(w);

	/* job IDs from the store: job takes any (newest first), resume and
	 * cancel the unfinished ones */
	char *path = store_path(dir), *err = NULL;
	struct store *st = NULL;
	cr_assert_eq(store_open(path, &st, &err), 0, "%s", err);
	long long id = 0;
	for (int i = 0; i < 3; i++)
		cr_assert_eq(store_job_insert(st, "down", "web1", "{}", 1, &id, &err), 0, "%s", err);
	cr_assert_eq(sqlite3_exec(store_db(st), "UPDATE jobs SET state = 'done' WHERE id = 1", NULL,
				  NULL, NULL), SQLITE_OK);
	store_close(st);
	w = strprintf("-c %s job ''", conf);
	out = complete_words(w);
	cr_assert_str_eq(out, "3\n2\n1\n");
	free(out);
	free(w);
	w = strprintf("-c %s resume ''", conf);
	out = complete_words(w);
	cr_assert_str_eq(out, "2\n3\n");
	free(out);
	free(w);
	cr_assert_eq(unlink(path), 0);
	free(path);
}
