/* migfx.c - simulator, client, configuration and job environment for the
 * migration suites (migfx.h). */
#include "migfx.h"

#include <stdio.h>
#include <string.h>

int migfx_start(struct migfx *f, const char *scenario, const char *const *extra_args,
		bool simtime)
{
	memset(f, 0, sizeof *f);
	if (simproc_start(&f->sp, scenario, extra_args) < 0)
		return -1;
	f->simtime = simtime;
	if (simtime)
		simclock_init(&f->sc, &f->sp);
	f->opts = (struct pve_opts){
		.url = f->sp.url,
		.token_id = f->sp.token_id,
		.token_secret = f->sp.token_secret,
		.fingerprint = f->sp.fingerprint,
		.retry_base_ms = 50,
		.retry_max_ms = 200,
		.clock = simtime ? &f->sc.clock : NULL,
	};
	struct pve_error e = {0};
	if (!(f->c = pve_new(&f->opts, &e))) {
		fprintf(stderr, "migfx: pve_new: %s\n", e.message ? e.message : "?");
		pve_error_clear(&e);
		return -1;
	}
	f->conf.migrate.memory_reserve = 1024;
	f->conf.migrate.with_local_disks = 1; /* as conf_load's default */
	f->conf.migrate.probe_port = 1;
	f->conf.migrate.timeout = 600;
	f->conf.migrate.per_target = 2;
	f->env.conf = &f->conf;
	f->env.clock = simtime ? &f->sc.clock : NULL;
	f->env.wait.clock = f->env.clock;
	f->env.wait.poll_s = simtime ? 1.0 : 0.2;
	return job_env_init(&f->env);
}

int migfx_stop(struct migfx *f)
{
	job_env_fini(&f->env);
	pve_free(f->c);
	f->c = NULL;
	if (f->simtime)
		simclock_destroy(&f->sc);
	return simproc_stop(&f->sp);
}
