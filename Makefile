# pvagent build: the agent library (agent/) and its two programs (agent/cli/,
# agent/daemon/), the PVE simulator, Criterion tests (sanitizer build), demo,
# benchmarks, lint, install.
#
#   make            pvagent, pvagentd, tests/pvesim/pvesim, tests/guests/guestd
#                   (release flags)
#   make deps       every dependency (CI); make deps-demo|test|bench|lint|fuzz: one
#                   target's (each target runs its own first); as root on Debian
#                   names the packages, then installs them
#   make test       sanitizer build, every Criterion suite and end-to-end script
#   make demo       the whole flow against the bundled simulator
#   make bench      benchmarks (ratios and counts)
#   make lab        real Debian guests under QEMU/TCG (tests/lab): builds the
#                   image once (cached in /var/cache/pvagent-lab), runs the suite
#   make lint       cppcheck and clang-tidy, zero findings
#   make install    PREFIX=/usr/local DESTDIR= (UNITDIR for the systemd unit)
#   make deb        Debian package (conf/debian/) in build/deb/, checked by lintian
#   make deb-test   (root, CI) the package installed with dpkg -i, run, purged

CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR   = $(PREFIX)/bin
SBINDIR  = $(PREFIX)/sbin
MANDIR   = $(PREFIX)/share/man
DATADIR  = $(PREFIX)/share/pvagent
SYSCONFDIR ?= /etc
UNITDIR ?= $(SYSCONFDIR)/systemd/system

AGENT_PKGS = libcurl json-c libssh2 sqlite3 openssl
# what pvagentd links (its jobs run in pvagent): its link fails when
# anything it pulls from libpvagent.a needs more
DAEMON_PKGS = json-c sqlite3
SIM_PKGS   = libmicrohttpd gnutls json-c libpcre2-8
TEST_PKGS  = criterion

# Debian packages behind each purpose: what `make demo` needs (build and
# run against the simulator, with its own sshd for the fixture guest), what
# `make test` adds (Criterion; Chromium, in which test_report renders the
# report's page), `make bench` (the 1 s poller's Python
# modules: proxmoxer and the requests backend it uses), `make lint` and
# `make fuzz` (LLVM). `make deps` (CI) is all of it.
DEMO_DEB_PKGS = build-essential pkg-config \
	libcurl4-openssl-dev libssl-dev libjson-c-dev libssh2-1-dev libsqlite3-dev \
	libmicrohttpd-dev libgnutls28-dev libpcre2-dev \
	openssh-server openssh-client busybox-static jq
DEMO_CMDS = cc make pkg-config sshd ssh-keygen busybox jq
TEST_DEB_PKGS  = $(DEMO_DEB_PKGS) libcriterion-dev chromium
TEST_CMDS      = $(DEMO_CMDS) chromium
# make journey: the simulator's control routes (curl), the image file it
# serves (python3), the pseudo-terminal (script, from bsdutils)
JOURNEY_DEB_PKGS = $(TEST_DEB_PKGS) curl python3 bsdutils
JOURNEY_CMDS     = $(TEST_CMDS) curl python3 script
BENCH_DEB_PKGS = $(DEMO_DEB_PKGS) python3-proxmoxer python3-requests
LINT_DEB_PKGS  = $(TEST_DEB_PKGS) clang cppcheck clang-tidy
LINT_CMDS      = $(TEST_CMDS) clang cppcheck clang-tidy
# Python modules of Debian's /usr/bin/python3 (the bench's 1 s poller)
PY_MODS  = proxmoxer requests

WARN    = -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter
STD     = -std=c11 -D_GNU_SOURCE
CFLAGS  ?= -O2 -g
SANFLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

pc_cflags = $(shell pkg-config --cflags $(1) 2>/dev/null)
pc_libs   = $(shell pkg-config --libs $(1) 2>/dev/null)

# The library (agent/*.c, libpvagent.a) and the two programs on it, each
# in its own folder: agent/cli/ (pvagent) and agent/daemon/ (pvagentd).
# The library includes nothing of either; the tests link all three.
CLI_MAIN    = agent/cli/pvagent.c
DAEMON_MAIN = agent/daemon/pvagentd.c
AGENT_SRC   = $(wildcard agent/*.c)
CLI_SRC     = $(filter-out $(CLI_MAIN),$(wildcard agent/cli/*.c))
DAEMON_SRC  = $(filter-out $(DAEMON_MAIN),$(wildcard agent/daemon/*.c))
SIM_MAIN    = tests/pvesim/pvesim.c
SIM_SRC     = $(filter-out $(SIM_MAIN) tests/pvesim/test_%.c,$(wildcard tests/pvesim/*.c))
# agent modules the simulator links: plain helpers only (its boot model
# reads guest files and fixture facts with its own parsers, bootread.c)
SIM_AGENT   = agent/util.c
# tests/support: what test and bench programs share (libsupport.a), and
# the part that uses Criterion (libcrsupport.a: cr_assert, parameterized
# suites), linked by the Criterion suites only, so that guestd (built by
# `all`, so by the demo) and the benches build without Criterion
SUPPORT_CR_SRC = tests/support/cliworld.c tests/support/simcli.c tests/support/pvevers.c
SUPPORT_SRC = $(filter-out $(SUPPORT_CR_SRC),$(wildcard tests/support/*.c))
# unit suites need no service; integration suites start the simulator or
# an sshd (on loopback); the simulator's own suites are in tests/pvesim
UNIT_TESTS  = $(wildcard tests/unit/test_*.c)
INTEGRATION_TESTS = $(wildcard tests/integration/test_*.c)
SIM_TESTS   = $(wildcard tests/pvesim/test_*.c)

# Two build trees: release (build/rel) and sanitizer (build/san).
REL = build/rel
SAN = build/san

objs = $(patsubst %.c,$(1)/%.o,$(2))

# header dependencies: each object's .d (included at the end)
DEPFLAGS     = -MMD -MP
AGENT_CFLAGS = $(STD) $(WARN) $(DEPFLAGS) -Iagent $(call pc_cflags,$(AGENT_PKGS))
SIM_CFLAGS   = $(STD) $(WARN) $(DEPFLAGS) -Itests/pvesim -Iagent $(call pc_cflags,$(SIM_PKGS))
TEST_INC     = -Iagent -Iagent/cli -Iagent/daemon -Itests/pvesim -Itests/support
TEST_CFLAGS  = $(STD) $(WARN) $(DEPFLAGS) $(TEST_INC) \
	$(call pc_cflags,$(AGENT_PKGS) $(SIM_PKGS) $(TEST_PKGS))
AGENT_LIBS = $(call pc_libs,$(AGENT_PKGS)) -lpthread
DAEMON_LIBS = $(call pc_libs,$(DAEMON_PKGS)) -lpthread
SIM_LIBS   = $(call pc_libs,$(SIM_PKGS)) -lpthread -lm
TEST_LIBS  = $(call pc_libs,$(TEST_PKGS))

PROGS = $(if $(wildcard $(CLI_MAIN)),pvagent) $(if $(wildcard $(DAEMON_MAIN)),pvagentd) \
	tests/pvesim/pvesim tests/guests/guestd

.PHONY: all deps deps-demo deps-test deps-journey deps-bench deps-lint deps-fuzz test test-run demo demo-run bench bench-run lint install clean
# Keep the objects of test and bench programs (make would delete them as
# intermediate files and rebuild them on every run).
.PRECIOUS: build/%.o
all: $(PROGS)

# ---- release tree ---------------------------------------------------------
$(REL)/agent/%.o: agent/%.c $(REL)/agent/%.d
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(AGENT_CFLAGS) -c $< -o $@
$(REL)/tests/pvesim/%.o: tests/pvesim/%.c $(REL)/tests/pvesim/%.d
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SIM_CFLAGS) -c $< -o $@
# where pvagentd finds the pvagent it runs jobs with, once installed
$(REL)/agent/daemon/jobproc.o $(SAN)/agent/daemon/jobproc.o: AGENT_CFLAGS += -DPVAGENT_CLI='"$(BINDIR)/pvagent"'
# and the shipped templates' directory, the last of the default search path
$(REL)/agent/conf.o $(SAN)/agent/conf.o: AGENT_CFLAGS += -DPVAGENT_TEMPLATES='"$(DATADIR)/templates"'
# Both are built in: a stamp holding them is rewritten when PREFIX changes
# (make, then make install PREFIX=/usr), so those objects are rebuilt.
INSTALL_PATHS = $(BINDIR) $(DATADIR)
.PHONY: FORCE
%/paths.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(INSTALL_PATHS)' | cmp -s - $@ || echo '$(INSTALL_PATHS)' >$@
$(REL)/agent/daemon/jobproc.o $(REL)/agent/conf.o: $(REL)/paths.stamp
$(SAN)/agent/daemon/jobproc.o $(SAN)/agent/conf.o: $(SAN)/paths.stamp
# libpvagent.a, libpvcli.a (the CLI but its main), libpvdaemon.a (the
# daemon but its main), in each tree
$(foreach t,$(REL) $(SAN),$(eval $(t)/libpvagent.a: $(call objs,$(t),$(AGENT_SRC))) \
	$(eval $(t)/libpvcli.a: $(call objs,$(t),$(CLI_SRC))) \
	$(eval $(t)/libpvdaemon.a: $(call objs,$(t),$(DAEMON_SRC))))
$(foreach t,$(REL) $(SAN),$(t)/libpvagent.a $(t)/libpvcli.a $(t)/libpvdaemon.a):
	@mkdir -p $(dir $@)
	rm -f $@; ar rcs $@ $^
pvagent: $(call objs,$(REL),$(CLI_MAIN)) $(REL)/libpvcli.a $(REL)/libpvagent.a
	$(CC) $(CFLAGS) -o $@ $^ $(AGENT_LIBS)
# the daemon links only what it uses (its jobs run in pvagent): json-c,
# SQLite and pthread, no libcurl, libssh2 or OpenSSL pages in its memory
pvagentd: $(call objs,$(REL),$(DAEMON_MAIN)) $(REL)/libpvdaemon.a $(REL)/libpvagent.a
	$(CC) $(CFLAGS) -Wl,--as-needed -o $@ $^ $(DAEMON_LIBS)
tests/pvesim/pvesim: $(call objs,$(REL),$(SIM_MAIN) $(SIM_SRC) $(SIM_AGENT))
	$(CC) $(CFLAGS) -o $@ $^ $(SIM_LIBS)

$(REL)/tests/%.o: tests/%.c $(REL)/tests/%.d
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TEST_CFLAGS) -c $< -o $@
$(foreach t,$(REL) $(SAN),$(eval $(t)/libsupport.a: $(call objs,$(t),$(SUPPORT_SRC))) \
	$(eval $(t)/libcrsupport.a: $(call objs,$(t),$(SUPPORT_CR_SRC))))
$(foreach t,$(REL) $(SAN),$(t)/libsupport.a $(t)/libcrsupport.a):
	@mkdir -p $(dir $@)
	rm -f $@; ar rcs $@ $^
# bench programs link the two programs' parts too (ctl_client, the
# daemon's modules), before the library they use; the Criterion suites
# add libcrsupport.a first
BENCH_LIBA = libsupport.a libpvcli.a libpvdaemon.a libpvagent.a
TEST_LIBA = libcrsupport.a $(BENCH_LIBA)
$(REL)/tests/bench/%: $(REL)/tests/bench/%.o $(addprefix $(REL)/,$(BENCH_LIBA))
	$(CC) $(CFLAGS) -o $@ $^ $(AGENT_LIBS) $(SIM_LIBS)
# fixture guests for shell scripts (the demo): needs root to run
GUESTD_LIBA = libsupport.a libpvagent.a
tests/guests/guestd: $(REL)/tests/guests/guestd.o $(addprefix $(REL)/,$(GUESTD_LIBA))
	$(CC) $(CFLAGS) -o $@ $^ $(AGENT_LIBS)

# ---- sanitizer tree (tests) -----------------------------------------------
$(SAN)/agent/%.o: agent/%.c $(SAN)/agent/%.d
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) $(AGENT_CFLAGS) -c $< -o $@
$(SAN)/tests/pvesim/%.o: tests/pvesim/%.c $(SAN)/tests/pvesim/%.d
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) $(SIM_CFLAGS) -c $< -o $@
$(SAN)/tests/pvesim/test_%.o: tests/pvesim/test_%.c $(SAN)/tests/pvesim/test_%.d
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) $(TEST_CFLAGS) -c $< -o $@
$(SAN)/tests/%.o: tests/%.c $(SAN)/tests/%.d
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) $(TEST_CFLAGS) -c $< -o $@
$(SAN)/libpvesim.a: $(call objs,$(SAN),$(SIM_SRC))
	@mkdir -p $(dir $@)
	rm -f $@; ar rcs $@ $^
$(SAN)/pvesim: $(call objs,$(SAN),$(SIM_MAIN) $(SIM_AGENT)) $(SAN)/libpvesim.a
	$(CC) $(SANFLAGS) -o $@ $^ $(SIM_LIBS)
$(SAN)/pvagent: $(call objs,$(SAN),$(CLI_MAIN)) $(SAN)/libpvcli.a $(SAN)/libpvagent.a
	$(CC) $(SANFLAGS) -o $@ $^ $(AGENT_LIBS)
$(SAN)/pvagentd: $(call objs,$(SAN),$(DAEMON_MAIN)) $(SAN)/libpvdaemon.a $(SAN)/libpvagent.a
	$(CC) $(SANFLAGS) -o $@ $^ $(DAEMON_LIBS)
$(SAN)/guestd: $(SAN)/tests/guests/guestd.o $(addprefix $(SAN)/,$(GUESTD_LIBA))
	$(CC) $(SANFLAGS) -o $@ $^ $(AGENT_LIBS)
$(SAN)/tests/unit/test_%: $(SAN)/tests/unit/test_%.o $(addprefix $(SAN)/,$(TEST_LIBA))
	$(CC) $(SANFLAGS) -o $@ $^ $(TEST_LIBS) $(AGENT_LIBS) $(SIM_LIBS)
$(SAN)/tests/integration/test_%: $(SAN)/tests/integration/test_%.o $(addprefix $(SAN)/,$(TEST_LIBA))
	$(CC) $(SANFLAGS) -o $@ $^ $(TEST_LIBS) $(AGENT_LIBS) $(SIM_LIBS)
$(SAN)/tests/lab/test_%: $(SAN)/tests/lab/test_%.o $(addprefix $(SAN)/,$(TEST_LIBA))
	$(CC) $(SANFLAGS) -o $@ $^ $(TEST_LIBS) $(AGENT_LIBS) $(SIM_LIBS)
$(SAN)/tests/pvesim/test_%: $(SAN)/tests/pvesim/test_%.o $(SAN)/libcrsupport.a $(SAN)/libsupport.a $(SAN)/libpvesim.a $(SAN)/libpvagent.a
	$(CC) $(SANFLAGS) -o $@ $^ $(TEST_LIBS) $(AGENT_LIBS) $(SIM_LIBS)

TEST_BINS = $(patsubst %.c,$(SAN)/%,$(UNIT_TESTS) $(INTEGRATION_TESTS) $(SIM_TESTS))
SAN_PROGS = $(SAN)/pvesim $(SAN)/guestd $(if $(wildcard $(CLI_MAIN)),$(SAN)/pvagent) \
	$(if $(wildcard $(DAEMON_MAIN)),$(SAN)/pvagentd)

# test, demo and bench first make sure the dependencies are installed
# (`deps`), then build and run in a sub-make: pkg-config's flags are read
# when make parses this file, so they must be read after the install.

# The README's test command. Checks the library's layers, runs every
# suite, then the end-to-end scripts.
test: deps-test
	@$(MAKE) --no-print-directory test-run
test-run: check-layers $(SAN_PROGS) $(TEST_BINS)
	@PVESIM_BIN=$(abspath $(SAN)/pvesim) PVAGENT_BIN=$(abspath $(SAN)/pvagent) \
	  PVAGENTD_BIN=$(abspath $(SAN)/pvagentd) \
	  GUESTD_BIN=$(abspath $(SAN)/guestd) sh tests/run-tests.sh $(TEST_BINS) $(wildcard tests/e2e/*.sh)

# make lab: real guests (tests/lab, tests/README.md "Lab"). Not part of make test: it
# needs QEMU and about half an hour of TCG. lab-deps installs what the image
# build and the guests need; the image is built once per machine (its
# content hash names it in /var/cache/pvagent-lab).
LAB_DEB_PKGS = qemu-system-x86 qemu-utils mmdebstrap e2fsprogs fdisk grub-pc-bin openssh-client
LAB_BINS = $(patsubst %.c,$(SAN)/%,$(wildcard tests/lab/test_*.c))
.PHONY: lab lab-deps lab-run lab-image
lab-deps:
	@missing=""; for p in $(LAB_DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends $$missing || \
	    { apt-get update && apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends $$missing; }; \
	  else echo "make lab needs: apt-get install$$missing"; exit 1; fi; fi
lab-image: lab-deps
	@bash tests/lab/image.sh >/dev/null
lab: deps-test lab-deps
	@$(MAKE) --no-print-directory lab-run
lab-run: $(SAN_PROGS) $(LAB_BINS)
	@PVESIM_BIN=$(abspath $(SAN)/pvesim) PVAGENT_BIN=$(abspath $(SAN)/pvagent) \
	  TEST_LOGDIR=$(SAN)/lab-logs sh tests/lab/run.sh $(LAB_BINS)

demo: deps-demo
	@$(MAKE) --no-print-directory demo-run
demo-run: all
	@bash tests/e2e/demo.sh

BENCH_BINS = $(patsubst %.c,$(REL)/%,$(wildcard tests/bench/*.c))
bench: deps-bench
	@$(MAKE) --no-print-directory bench-run
bench-run: all $(BENCH_BINS)
	@sh tests/bench/run.sh

# No file of the library includes a header of a layer above its own
# (agent/README.md's layer table; no dependencies, well under a second).
.PHONY: check-layers
check-layers:
	@sh tests/tools/layers.sh && echo "layers: agent/README.md's layer table holds"

lint: deps-lint
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	  --inline-suppr --std=c11 -D_GNU_SOURCE $(TEST_INC) \
	  --library=tests/tools/json-c.cfg --suppress=missingIncludeSystem \
	  agent tests/pvesim tests/support tests/guests/guestd.c
	printf '%s\n' $(wildcard agent/*.c agent/cli/*.c agent/daemon/*.c tests/pvesim/*.c tests/support/*.c tests/unit/*.c tests/integration/*.c \
	  tests/bench/*.c tests/guests/*.c) | xargs -P $$(nproc) -I{} clang-tidy --quiet --warnings-as-errors='*' \
	  {} -- $(STD) $(TEST_INC) \
	  $(call pc_cflags,$(AGENT_PKGS) $(SIM_PKGS) $(TEST_PKGS))

# ---- fuzzing (tests/fuzz) --------------------------------------------------
# make fuzz: one libFuzzer binary per target (clang, ASan + UBSan) in
# build/fuzz/bin/, each run in turn for FUZZ_SECONDS over its checked-in
# corpus and regression inputs (tests/fuzz/corpus/T, tests/fuzz/regress/T);
# prints executions, exec/s, coverage and findings per target. New inputs
# go to build/fuzz/corpus/T, findings to build/fuzz/findings/T. make test
# needs none of this: test_fuzz_replay (gcc, sanitizer tree) replays the
# same bodies over the same inputs once. Debian 12's libFuzzer runtime is
# in libclang-rt-14-dev (clang only recommends it).
FUZZ_DEB_PKGS = $(TEST_DEB_PKGS) clang libclang-rt-14-dev
FUZZ_SECONDS ?= 60
FUZZ       = build/fuzz
FUZZ_CC    = clang
FUZZ_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_SRC   = $(filter-out tests/fuzz/fuzz_main.c,$(wildcard tests/fuzz/*.c))
FUZZ_NAMES = $(notdir $(wildcard tests/fuzz/corpus/*))
.PHONY: fuzz fuzz-run

$(FUZZ)/%.o: %.c $(FUZZ)/%.d
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(TEST_CFLAGS) -c $< -o $@
$(FUZZ)/libfuzz.a: $(call objs,$(FUZZ),$(FUZZ_SRC) $(AGENT_SRC) $(SIM_SRC))
	rm -f $@; ar rcs $@ $^
$(FUZZ)/bin/%: tests/fuzz/fuzz_main.c tests/fuzz/fuzz.h $(FUZZ)/libfuzz.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $(TEST_CFLAGS) -DFUZZ_FN=fuzz_$* -o $@ $< \
	  $(FUZZ)/libfuzz.a $(AGENT_LIBS) $(SIM_LIBS)

fuzz: deps-fuzz
	@$(MAKE) --no-print-directory fuzz-run
fuzz-run: $(addprefix $(FUZZ)/bin/,$(FUZZ_NAMES))
	@sh tests/fuzz/run.sh $(FUZZ) $(FUZZ_SECONDS) $(FUZZ_NAMES)

# the replay suite links the target bodies and the simulator
$(SAN)/tests/unit/test_fuzz_replay: $(SAN)/tests/unit/test_fuzz_replay.o \
	  $(call objs,$(SAN),$(FUZZ_SRC)) $(SAN)/libcrsupport.a $(SAN)/libsupport.a $(SAN)/libpvesim.a $(SAN)/libpvagent.a
	$(CC) $(SANFLAGS) -o $@ $^ $(TEST_LIBS) $(AGENT_LIBS) $(SIM_LIBS)

# deps-PURPOSE: the packages that purpose needs (above); installs what is
# missing when run as root on Debian, saying which packages first,
# otherwise prints the apt-get line and fails. deps: all of them (CI).
DEPS = sh tests/tools/deps.sh
deps-demo:
	@$(DEPS) "$(DEMO_DEB_PKGS)" "$(DEMO_CMDS)" "$(AGENT_PKGS) $(SIM_PKGS)"
deps-test:
	@$(DEPS) "$(TEST_DEB_PKGS)" "$(TEST_CMDS)" "$(AGENT_PKGS) $(SIM_PKGS) $(TEST_PKGS)"
deps-bench:
	@$(DEPS) "$(BENCH_DEB_PKGS)" "$(DEMO_CMDS)" "$(AGENT_PKGS) $(SIM_PKGS)" "$(PY_MODS)"
deps-lint:
	@$(DEPS) "$(LINT_DEB_PKGS)" "$(LINT_CMDS)" "$(AGENT_PKGS) $(SIM_PKGS) $(TEST_PKGS)"
deps-journey:
	@$(DEPS) "$(JOURNEY_DEB_PKGS)" "$(JOURNEY_CMDS)" "$(AGENT_PKGS) $(SIM_PKGS) $(TEST_PKGS)"
deps-fuzz:
	@$(DEPS) "$(FUZZ_DEB_PKGS)" "$(DEMO_CMDS) clang" "$(AGENT_PKGS) $(SIM_PKGS) $(TEST_PKGS)"
deps: deps-test deps-journey deps-bench deps-lint deps-fuzz

# what install builds first (make deb: the two programs only)
INSTALL_DEPS ?= all
install: $(INSTALL_DEPS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man1 \
	  $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DATADIR)/templates \
	  $(DESTDIR)$(SYSCONFDIR)/pvagent $(DESTDIR)$(UNITDIR)
	$(if $(wildcard pvagent),install -m 0755 pvagent $(DESTDIR)$(BINDIR)/)
	$(if $(wildcard pvagentd),install -m 0755 pvagentd $(DESTDIR)$(SBINDIR)/)
	$(if $(wildcard conf/man/*.1),install -m 0644 $(wildcard conf/man/*.1) $(DESTDIR)$(MANDIR)/man1/)
	$(if $(wildcard conf/man/*.5),install -m 0644 $(wildcard conf/man/*.5) $(DESTDIR)$(MANDIR)/man5/)
	$(if $(wildcard conf/man/*.8),install -m 0644 $(wildcard conf/man/*.8) $(DESTDIR)$(MANDIR)/man8/)
	sed 's|@SBINDIR@|$(SBINDIR)|g' conf/pvagentd.service >$(DESTDIR)$(UNITDIR)/pvagentd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/pvagentd.service
	$(if $(wildcard templates/*.tmpl),install -m 0644 $(wildcard templates/*.tmpl) $(DESTDIR)$(DATADIR)/templates/)
	$(if $(wildcard templates/images/*.image),install -d $(DESTDIR)$(DATADIR)/templates/images && install -m 0644 $(wildcard templates/images/*.image) $(DESTDIR)$(DATADIR)/templates/images/)
	$(if $(wildcard conf/pvagent.conf.example),install -m 0644 conf/pvagent.conf.example $(DESTDIR)$(SYSCONFDIR)/pvagent/)
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0644 conf/pvagent.bash-completion $(DESTDIR)$(PREFIX)/share/bash-completion/completions/pvagent

# make deb: a Debian package of the tree as it is (conf/debian/ becomes
# debian/), built with dpkg-buildpackage into build/deb/, then lintian.
DEB_TOOLS = debhelper lintian dpkg-dev fakeroot
DEB_VERSION = $(shell sed -n '1s/.*(\(.*\)).*/\1/p' conf/debian/changelog)
.PHONY: deb deb-test
# make deb-test (CI, as root, on a throwaway machine): build the package,
# dpkg -i it, run the installed daemon against the simulator, purge it.
deb-test:
	@bash tests/pkg/deb-install.sh
deb:
	@for p in $(DEB_TOOLS); do dpkg -s $$p >/dev/null 2>&1 || \
	  { echo "make deb needs: apt-get install $(DEB_TOOLS)"; exit 1; }; done
	rm -rf build/deb && mkdir -p build/deb/pvagent-$(DEB_VERSION)
	git ls-files -co --exclude-standard | grep -v '^conf/debian/' | \
	  tar -cf - -T - | tar -xf - -C build/deb/pvagent-$(DEB_VERSION)
	cp -r conf/debian build/deb/pvagent-$(DEB_VERSION)/debian
	cd build/deb/pvagent-$(DEB_VERSION) && dpkg-buildpackage -us -uc -b
	lintian --info build/deb/pvagent_$(DEB_VERSION)_*.deb

# the header dependencies the compiler wrote (-MMD -MP). Each .d is a
# target (so never intermediate): an object without its .d (built before,
# or the .d lost) is rebuilt.
DEPFILES = $(foreach t,$(REL) $(SAN) $(FUZZ),\
	$(patsubst %.c,$(t)/%.d,$(wildcard agent/*.c agent/*/*.c tests/*/*.c)))
$(DEPFILES):
-include $(wildcard $(DEPFILES))

clean:
	rm -rf build pvagent pvagentd tests/pvesim/pvesim tests/guests/guestd

# make sandbox: the simulator and SSH guests in the background, to try
# pvagent by hand (tests/sandbox/sandbox.sh); make sandbox-stop ends it.
.PHONY: sandbox sandbox-stop
sandbox: deps-demo
	@$(MAKE) --no-print-directory all
	@bash tests/sandbox/sandbox.sh start
sandbox-stop:
	@bash tests/sandbox/sandbox.sh stop

# make bench-counts: the benchmarks' request counts only (no timings, for CI):
# a migration, an up, and the real-config corpus's dry runs against show;
# fails when a count is over its target.
.PHONY: bench-counts
bench-counts: all $(REL)/tests/bench/migrate
	@PVESIM_BIN=$${PVESIM_BIN:-tests/pvesim/pvesim} $(REL)/tests/bench/migrate --counts && \
	  bash tests/bench/up.sh --counts && bash tests/bench/corpus.sh

# make journey: a user's first day on each cluster model, as installed
# (tests/journey/run.sh: make install into build/journey/root, pvagentd as
# its unit starts it, only the token setup makes; as root, models in
# parallel). Not in make test; logs in build/journey/.
.PHONY: journey
journey: deps-journey
	@bash tests/journey/run.sh
