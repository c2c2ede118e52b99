# rerand — GNU Make build.  `make`, `make check`, `make demo`, `make install`.
# V=1 for verbose commands.  PREFIX, DESTDIR, SYSCONFDIR, UNITDIR, SYSUSERSDIR, DOCDIR, CATALOGDIR as usual;
# MODPROBEDIR, LIBEXECDIR (watchdog-setup) too.

PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
SBINDIR     ?= $(PREFIX)/sbin
MANDIR      ?= $(PREFIX)/share/man
DOCDIR      ?= $(PREFIX)/share/doc/rerand
SYSCONFDIR  ?= /etc
UNITDIR     ?= $(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
SYSUSERSDIR ?= $(shell pkg-config --variable=sysusersdir systemd 2>/dev/null || echo /usr/lib/sysusers.d)
# journalctl --update-catalog reads it (Debian's systemd runs that by a trigger)
CATALOGDIR  ?= $(shell pkg-config --variable=catalogdir systemd 2>/dev/null || echo /usr/lib/systemd/catalog)
# kmod reads /usr/lib/modprobe.d (merged /usr: /lib/modprobe.d), not one under PREFIX
MODPROBEDIR ?= /usr/lib/modprobe.d
LIBEXECDIR  ?= $(PREFIX)/lib/rerand

CC          ?= gcc
CLANG       ?= clang
PKG_CONFIG  ?= pkg-config
O           := build
comma       := ,

ifeq ($(V),1)
Q :=
else
Q := @
endif

WARN        := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
CFLAGS      ?= -O2 -g
# One version for every program (--version): debian/changelog's.
VERSION     := $(shell head -n 1 debian/changelog | cut -d'(' -f2 | cut -d')' -f1)
CPPFLAGS    += -Iinclude -Isrc -Isrc/common -Isrc/shared -D_GNU_SOURCE -DRERAND_VERSION='"$(VERSION)"'
LIBS_PKG    := libelf liblzma libzstd liblz4 zlib lzo2 libcrypto nettle
LIB_CFLAGS  := $(shell $(PKG_CONFIG) --cflags $(LIBS_PKG) 2>/dev/null)
LIB_LIBS    := $(shell $(PKG_CONFIG) --libs $(LIBS_PKG) 2>/dev/null) \
               $(shell $(PKG_CONFIG) --libs bzip2 2>/dev/null || echo -lbz2) -lm -pthread
HOST_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) $(LIB_CFLAGS) -MMD -MP

# ---- shared code (built twice) and the hosted library ----------------------
SHARED_SRCS := $(sort $(wildcard src/shared/*.c))
LIB_SRCS    := $(sort $(wildcard src/*.c))
# src/efistub.S: the bytes of the EFI entry stub the writer copies into images.
LIB_ASM_OBJS := $(O)/host/src/efistub.o
LIB_OBJS    := $(LIB_SRCS:%.c=$(O)/host/%.o) $(SHARED_SRCS:%.c=$(O)/host/%.o) $(LIB_ASM_OBJS)
LIBRERAND   := $(O)/librerand.a
# src/common/: the hosted code two programs share (the control protocol's
# header, the fleet protocol and [Fleet] keys, escaping, the logger).  rerandd, rerand-fleetd
# and the tests link libcommon.a; it depends on librerand only, and daemon/
# and fleetd/ include it, never each other.
COMMON_SRCS := $(sort $(wildcard src/common/*.c))
COMMON_OBJS := $(COMMON_SRCS:%.c=$(O)/host/%.o)
LIBCOMMON   := $(O)/libcommon.a

# ---- the purgatory stage -----------------------------------------------------
# Freestanding flags are assigned, not appended to the user's CFLAGS.
STAGE_CFLAGS := -std=gnu11 -Os -g0 -ffreestanding -fno-builtin -nostdlib \
	-fno-stack-protector -fno-stack-clash-protection -fcf-protection=none \
	-mno-red-zone -mno-mmx -mno-sse -mno-sse2 -mno-avx -mgeneral-regs-only \
	-fno-asynchronous-unwind-tables -fno-unwind-tables -fno-jump-tables \
	-fno-tree-loop-distribute-patterns \
	-fpie -fvisibility=hidden -fno-common -fno-exceptions \
	-Wall -Wextra -Wno-unused-parameter -Werror -Iinclude -Isrc/shared -MMD -MP
STAGE_SRCS  := $(sort $(wildcard kexec/stage/*.c)) $(SHARED_SRCS)
STAGE_ASM   := $(sort $(wildcard kexec/stage/*.S))
STAGE_OBJS  := $(STAGE_ASM:%.S=$(O)/stage/%.o) $(STAGE_SRCS:%.c=$(O)/stage/%.o)
STAGE_ELF   := $(O)/stage.elf
STAGE_BIN   := $(O)/stage.bin
# stage.bin as the bytes of rr_stage_blob (src/stage_blob.h)
STAGE_BLOB  := $(O)/host/src/stage_blob.o

# ---- the CLI -------------------------------------------------------------
CLI_SRCS    := $(sort $(wildcard kexec/*.c))
CLI_OBJS    := $(CLI_SRCS:%.c=$(O)/host/%.o) $(STAGE_BLOB)
RERAND      := $(O)/rerand
# bash completion, written by the built rerand from its command tables
BASH_COMPLETION := $(O)/rerand.bash
BASHCOMPDIR ?= $(shell $(PKG_CONFIG) --variable=completionsdir bash-completion 2>/dev/null || \
	echo /usr/share/bash-completion/completions)

# ---- rerandd ---------------------------------------------------------------
# daemon/main.c holds main() and wires the loop; evaluate.c, boot.c,
# sequence.c and confirm.c drive the daemon's own state (struct daemon) and
# call one another, so they are linked into rerandd only.  core.c (save,
# publish, stage) calls nothing above it, so it lives in libdaemon.a with
# everything else in daemon/, which the unit tests and fuzzers link, with
# the stage blob (daemon/stage_cache.c keys its image cache by its SHA-256).
# nettle: that SHA-256 (src/cachekey.c says why not libcrypto's).  libcrypto
# only for the signature checks of signed images (src/pesig.c), which
# rerandd-check alone makes: rerandd links its own copy of pesig.c that calls
# libcrypto through a table (src/pesig_crypto.h), which main() hands it with
# daemon/crypto_dl.c's loader, opening libcrypto with dlopen then, so that
# rerandd itself never maps it (issue 28); the unit tests and fuzzers link
# libcrypto.
DAEMON_PKGS := libsystemd libcap libseccomp inih json-c nettle
DAEMON_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(DAEMON_PKGS) libcrypto 2>/dev/null)
DAEMON_LIBS := $(shell $(PKG_CONFIG) --libs $(DAEMON_PKGS) libcrypto 2>/dev/null)
RERANDD_LIBS := $(shell $(PKG_CONFIG) --libs $(DAEMON_PKGS) 2>/dev/null)
DAEMON_SRCS := $(sort $(wildcard daemon/*.c))
DAEMON_MAIN_SRCS := daemon/main.c daemon/evaluate.c daemon/boot.c daemon/sequence.c \
	daemon/confirm.c daemon/shutdown.c daemon/commands.c
DAEMON_MAIN_OBJS := $(DAEMON_MAIN_SRCS:%.c=$(O)/host/%.o)
DAEMON_LIB_SRCS := $(filter-out $(DAEMON_MAIN_SRCS),$(DAEMON_SRCS))
DAEMON_LIB_OBJS := $(DAEMON_LIB_SRCS:%.c=$(O)/host/%.o)
LIBDAEMON   := $(O)/libdaemon.a
RERANDD     := $(if $(wildcard daemon/main.c),$(O)/rerandd)

# ---- rerand-fleetd: the fleet client, its own process (no capabilities, network) --
# fleetd/main.c holds main(); the client is libfleetd.a, which the unit tests
# link too.  It shares [Fleet] parsing, the protocol and escaping with rerandd
# through libcommon.a; it is built without daemon/'s headers and links none of its objects.
FLEETD_PKGS := libsystemd libcurl json-c
FLEETD_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(FLEETD_PKGS) 2>/dev/null)
FLEETD_LIBS := $(shell $(PKG_CONFIG) --libs $(FLEETD_PKGS) 2>/dev/null) -lpthread
FLEETD_LIB_SRCS := $(filter-out fleetd/main.c,$(sort $(wildcard fleetd/*.c)))
FLEETD_LIB_OBJS := $(FLEETD_LIB_SRCS:%.c=$(O)/host/%.o)
LIBFLEETD   := $(O)/libfleetd.a
FLEETD      := $(O)/rerand-fleetd

# ---- tests -----------------------------------------------------------------
# tests/unit: hermetic and fast (no kernel, no root, no network: `make
# check-unit`); tests/kernel: the unit tests that read the real kernels
# (RERAND_KERNELS, about 130 MB).  Both build into build/tests, where
# run-check.sh, debian/rules and check-deb-chroot.sh find every binary.
HERMETIC_SRCS := $(sort $(wildcard tests/unit/test_*.c))
KERNEL_TEST_SRCS := $(sort $(wildcard tests/kernel/test_*.c))
UNIT_SRCS   := $(HERMETIC_SRCS) $(KERNEL_TEST_SRCS)
UNIT_BINS   := $(patsubst %.c,$(O)/tests/%,$(notdir $(UNIT_SRCS)))
FUZZ_SRCS   := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS   := $(FUZZ_SRCS:tests/fuzz/%.c=$(O)/fuzz/%)
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	$(CPPFLAGS) $(LIB_CFLAGS) -MMD -MP

.PHONY: FORCE daemon-liar vm histogram all deps deb deb-chroot unit-tests fuzz-long kernels check check-long check-comeback check-kdump check-load check-upstream check-lifecycle \
	check-piuparts check-chaos check-unit bench-fleet fleet-test-helpers daemon-test-helpers e2e-test-helpers demo fuzz san-tests bench \
	install clean
all: $(RERAND) $(BASH_COMPLETION) $(STAGE_BIN) $(RERANDD) $(FLEETD)

# The version (-DRERAND_VERSION) lives in the compile line, not in a file a
# .d records: $(VERSION_STAMP) changes when debian/changelog's version
# does, and what prints it is built again.
VERSION_STAMP := $(O)/version.stamp
$(shell mkdir -p $(O); [ "$$(cat $(VERSION_STAMP) 2>/dev/null)" = "$(VERSION)" ] || echo "$(VERSION)" >$(VERSION_STAMP))
VERSION_USERS := $(O)/host/kexec/rerand.o $(patsubst %.c,$(O)/host/%.o,$(wildcard daemon/*.c)) \
	$(O)/host/fleetd/main.o
$(VERSION_USERS) $(patsubst $(O)/host/%,$(O)/san/obj/%,$(VERSION_USERS)): $(VERSION_STAMP)

$(O)/host/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(HOST_CFLAGS) -c -o $@ $<

$(O)/host/%.o: %.S
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AS      $<")
	$(Q)$(CC) -c -o $@ $<

$(LIBRERAND): $(LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(O)/stage/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC [stage] $<")
	$(Q)$(CC) $(STAGE_CFLAGS) -DRERAND_STAGE -c -o $@ $<

$(O)/stage/%.o: %.S
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AS [stage] $<")
	$(Q)$(CC) $(STAGE_CFLAGS) -D__ASSEMBLY__ -c -o $@ $<

# The link fails on any GOT, PLT or dynamic relocation (asserts in the
# linker script), and readelf double-checks the result.
$(STAGE_ELF): $(STAGE_OBJS) kexec/stage/stage.lds
	@$(if $(Q),echo "  LD [stage] $@")
	$(Q)ld -pie --no-dynamic-linker --no-warn-rwx-segments -z noexecstack -z norelro --no-undefined -nostdlib \
		-T kexec/stage/stage.lds -o $@ $(STAGE_OBJS)
	$(Q)if readelf -rW $@ | grep -q 'R_X86_64'; then \
		echo "stage: $@ has dynamic relocations:" >&2; readelf -rW $@ >&2; rm -f $@; exit 1; fi

$(STAGE_BIN): $(STAGE_ELF)
	$(Q)objcopy -O binary $< $@

# The stage blob's own module (src/stage_blob.h): the programs that build
# images (rerand, rerandd) and the tests link it; never in librerand.a,
# which rerand-fleetd links too.
$(STAGE_BLOB): src/stage_blob.S $(STAGE_BIN)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -c -DSTAGE_BIN='"$(STAGE_BIN)"' -o $@ $<

# json-c: --json=pretty re-prints the one-line JSON indented
CLI_JSONC_CFLAGS := $(shell $(PKG_CONFIG) --cflags json-c 2>/dev/null)
CLI_JSONC_LIBS := $(shell $(PKG_CONFIG) --libs json-c 2>/dev/null)
$(O)/host/kexec/%.o: HOST_CFLAGS += $(CLI_JSONC_CFLAGS)

$(RERAND): $(CLI_OBJS) $(LIBRERAND)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $(CLI_OBJS) $(LIBRERAND) $(LIB_LIBS) $(CLI_JSONC_LIBS)

$(BASH_COMPLETION): $(RERAND)
	$(Q)$(RERAND) --bash-completion >$@.tmp && mv $@.tmp $@

$(LIBDAEMON): $(DAEMON_LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBCOMMON): $(COMMON_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

# pesig_dl.o before the archives: librerand.a's pesig.o (linked to
# libcrypto) is then never pulled in.  Built with src/'s include paths
# only: src/ includes nothing above it (tests/scripts/test-includes.sh).
$(O)/host/daemon/pesig_dl.o: src/pesig.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (dlopen)")
	$(Q)$(CC) $(CPPFLAGS) -DRR_CRYPTO_DLOPEN $(HOST_CFLAGS) -c -o $@ $<

$(RERANDD): $(DAEMON_MAIN_OBJS) $(O)/host/daemon/pesig_dl.o $(LIBDAEMON) $(LIBCOMMON) $(LIBRERAND) $(STAGE_BLOB)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $(DAEMON_MAIN_OBJS) $(O)/host/daemon/pesig_dl.o $(STAGE_BLOB) \
		$(LIBDAEMON) $(LIBCOMMON) $(LIBRERAND) $(RERANDD_LIBS)

$(LIBFLEETD): $(FLEETD_LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(FLEETD): $(O)/host/fleetd/main.o $(LIBFLEETD) $(LIBCOMMON) $(LIBRERAND)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(LIBFLEETD) $(LIBCOMMON) $(LIBRERAND) $(FLEETD_LIBS)

$(O)/host/fleetd/%.o: HOST_CFLAGS += $(FLEETD_CFLAGS) -pthread

# The chaos test's deliberately broken helper (tests/fleet/test-fleet-chaos.sh): the
# slot's down lease (DownTTL=) switched off at build time, so that the test can
# show its checker catches a slot lapsing while its host is down.  Never installed.
FLEETD_BROKEN := $(O)/chaos-broken/rerand-fleetd
$(O)/chaos-broken/fleet_etcd.o: fleetd/fleet_etcd.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(HOST_CFLAGS) $(FLEETD_CFLAGS) -pthread \
		-DRERAND_TEST_NO_DOWN_TTL -c -o $@ $<
$(FLEETD_BROKEN): $(O)/host/fleetd/main.o $(O)/chaos-broken/fleet_etcd.o \
		$(filter-out $(O)/host/fleetd/fleet_etcd.o,$(FLEETD_LIB_OBJS)) $(LIBCOMMON) $(LIBRERAND)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(FLEETD_LIBS)

# A rerandd whose plan helper lies (tests/daemon/test-planguard-daemon.sh):
# stage_job.c built with RERAND_TEST_LYING_HELPER, so that the test can show
# rerandd refuses a plan naming an image outside its cache or another
# command line.  Never installed.
RERANDD_LIAR := $(O)/liar/rerandd
$(O)/liar/stage_job.o: daemon/stage_job.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) -Idaemon $(HOST_CFLAGS) $(DAEMON_CFLAGS) -DRERAND_TEST_LYING_HELPER -c -o $@ $<
$(RERANDD_LIAR): $(DAEMON_MAIN_OBJS) $(O)/liar/stage_job.o $(O)/host/daemon/pesig_dl.o \
		$(filter-out $(O)/host/daemon/stage_job.o,$(DAEMON_LIB_OBJS)) $(LIBCOMMON) $(LIBRERAND) \
		$(STAGE_BLOB)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(RERANDD_LIBS)
daemon-liar: $(RERANDD_LIAR)

$(O)/host/daemon/config_load.o: CPPFLAGS += -DRR_RERAND_BIN='"$(BINDIR)/rerand"'
# rerandd's built-in RerandBinary= follows BINDIR: `make install PREFIX=/usr`
# after a plain `make` rebuilds it (the stamp changes only with BINDIR).
$(O)/host/daemon/config.o: $(O)/bindir.stamp
$(O)/bindir.stamp: FORCE
	@mkdir -p $(O)
	@echo '$(BINDIR)' | cmp -s - $@ || echo '$(BINDIR)' > $@
FORCE:
$(O)/host/daemon/%.o: HOST_CFLAGS += $(DAEMON_CFLAGS)

# A test's dependency file is named after its source folder too
# (build/tests/kernel.test_x.d): one named test_x.d would name the folder
# the source was in when it was written, and a moved test would stop the
# build ("no rule to make tests/unit/test_x.c"), so those are not read.
UNIT_DEP_FILE = -MF $(@D)/$(notdir $(<D)).$(@F).d
define unit_test_recipe
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(UNIT_DEP_FILE) -Itests/unit -Idaemon -Ifleetd -DT_TOP='"$(CURDIR)"' $(HOST_CFLAGS) $(DAEMON_CFLAGS) $(FLEETD_CFLAGS) -o $@ $< \
		$(LIBFLEETD) $(LIBDAEMON) $(STAGE_BLOB) $(LIBCOMMON) $(LIBRERAND) $(DAEMON_LIBS) $(FLEETD_LIBS) $(LIB_LIBS)
endef
UNIT_DEPS := $(LIBRERAND) $(LIBCOMMON) $(LIBDAEMON) $(LIBFLEETD) $(STAGE_BLOB) tests/unit/test.h
$(O)/tests/%: tests/unit/%.c $(UNIT_DEPS)
	$(unit_test_recipe)
$(O)/tests/%: tests/kernel/%.c $(UNIT_DEPS)
	$(unit_test_recipe)

# The fleet tests' helpers (tests/fleet), never installed: fleet-sim, a
# simulated host on rerand-fleetd's client and the [Fleet] parser
# (test-fleet.sh), and wallstep.so, the per-process wall-clock step that
# test-fleet-chaos.sh preloads into rerandd and rerand-fleetd.
FLEET_SIM   := $(O)/tests/fleet/fleet-sim
WALLSTEP    := $(O)/tests/fleet/wallstep.so
# fleet-bench: N simulated hosts on libfleetd in one process, a thread each
# (bench/fleet.sh for `make bench-fleet`, tests/fleet/test-fleet-bench.sh).
FLEET_BENCH := $(O)/bench/fleet-bench
FLEET_TEST_HELPERS := $(FLEET_SIM) $(WALLSTEP) $(FLEET_BENCH)
$(FLEET_BENCH): bench/fleet-bench.c tests/fleet/fleet-conf.c tests/fleet/fleet-conf.h $(LIBFLEETD) $(LIBDAEMON) $(LIBCOMMON) $(LIBRERAND)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) -Idaemon -Ifleetd -Itests/fleet $(HOST_CFLAGS) $(FLEETD_CFLAGS) -pthread -o $@ $< tests/fleet/fleet-conf.c \
		$(LIBFLEETD) $(LIBDAEMON) $(LIBCOMMON) $(LIBRERAND) $(FLEETD_LIBS) $(LIB_LIBS)
$(FLEET_SIM): tests/fleet/fleet-sim.c tests/fleet/fleet-conf.c tests/fleet/fleet-conf.h $(LIBFLEETD) $(LIBDAEMON) $(LIBCOMMON) $(LIBRERAND)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) -Idaemon -Ifleetd -Itests/fleet $(HOST_CFLAGS) $(FLEETD_CFLAGS) -o $@ $< tests/fleet/fleet-conf.c \
		$(LIBFLEETD) $(LIBDAEMON) $(LIBCOMMON) $(LIBRERAND) $(FLEETD_LIBS) $(LIB_LIBS)
$(WALLSTEP): tests/fleet/wallstep.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -o $@ $< -ldl
fleet-test-helpers: $(FLEET_TEST_HELPERS)

# The daemon tests' helper, never installed: mock-logind, a stand-in for
# logind's inhibitor locks on the test's own bus (test-inhibit-daemon.sh).
MOCK_LOGIND := $(O)/tests/daemon/mock-logind
DAEMON_TEST_HELPERS := $(MOCK_LOGIND)
$(MOCK_LOGIND): tests/daemon/mock-logind.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter -Werror $(shell $(PKG_CONFIG) --cflags libsystemd) -o $@ $< \
		$(shell $(PKG_CONFIG) --libs libsystemd)
daemon-test-helpers: $(DAEMON_TEST_HELPERS)

# The rerandd guest's control-socket latency probe (tests/e2e/daemon-init.sh),
# static: the guest's initramfs has no C library of its own for it.
CTL_LATENCY := $(O)/tests/e2e/ctl-latency
E2E_TEST_HELPERS := $(CTL_LATENCY)
$(CTL_LATENCY): tests/e2e/ctl-latency.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) -std=gnu11 -static -O2 -Wall -Wextra -Werror -pthread -o $@ $<
e2e-test-helpers: $(E2E_TEST_HELPERS)

# Fuzzers link the real parsers, compiled once with the sanitizers
# (fuzzer-no-link) into their own objects; rerand-fleetd's client too, for
# its reply parsers (etcd's gateway, FleetLock, base64).
FUZZ_LIB_SRCS := $(LIB_SRCS) $(SHARED_SRCS) $(COMMON_SRCS) $(DAEMON_LIB_SRCS) $(FLEETD_LIB_SRCS)
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.c=$(O)/fuzzobj/%.o) $(LIB_ASM_OBJS)
.SECONDARY: $(FUZZ_LIB_OBJS)

# liblzma's limit in the fuzz build: 4 MiB is 64 times what the xz and lzma
# seeds ask for (tests/fuzz/make-lzma-seeds.sh), and a header asking for
# more is refused before anything is allocated.
$(O)/fuzzobj/src/codec.o: FUZZ_DEFS := -DRR_LZMA_MEMLIMIT_MIB=4
$(O)/fuzzobj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC [fuzz] $<")
	$(Q)$(CLANG) $(subst fuzzer$(comma),fuzzer-no-link$(comma),$(FUZZ_CFLAGS)) $(DAEMON_CFLAGS) \
		$(FLEETD_CFLAGS) $(FUZZ_DEFS) -c -o $@ $<

$(O)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB_OBJS) $(STAGE_BLOB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ    $<")
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -Idaemon -Ifleetd $(DAEMON_CFLAGS) $(FLEETD_CFLAGS) -o $@ $< \
		$(FUZZ_LIB_OBJS) $(STAGE_BLOB) $(DAEMON_LIBS) $(FLEETD_LIBS) $(LIB_LIBS)

# The unit tests again, built with ASan and UBSan (issue 24): every test and
# the code it links (librerand, libdaemon, libfleetd) compiled a second time
# into build/san, so that a heap overflow, a use after free, a leak or
# undefined behaviour in the product code the tests drive fails the test.
# scripts/run-check.sh runs them as "unit-san test_x" with its
# ASAN_OPTIONS/UBSAN_OPTIONS; programs the tests exec (build/rerand) stay
# the normal build.  Not in debian/rules' dh_auto_test (build/tests only).
SAN_CFLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1
SAN_HOST_CFLAGS := -std=gnu11 $(WARN) $(SAN_CFLAGS) $(LIB_CFLAGS) -MMD -MP
SAN_LIB_OBJS := $(LIB_SRCS:%.c=$(O)/san/obj/%.o) $(SHARED_SRCS:%.c=$(O)/san/obj/%.o) $(LIB_ASM_OBJS)
SAN_COMMON_OBJS := $(COMMON_SRCS:%.c=$(O)/san/obj/%.o)
SAN_DAEMON_OBJS := $(DAEMON_LIB_SRCS:%.c=$(O)/san/obj/%.o)
SAN_FLEETD_OBJS := $(FLEETD_LIB_SRCS:%.c=$(O)/san/obj/%.o)
SAN_LIBS    := $(O)/san/libfleetd.a $(O)/san/libdaemon.a $(O)/san/libcommon.a $(O)/san/librerand.a
SAN_UNIT_BINS := $(patsubst %.c,$(O)/san/tests/%,$(notdir $(UNIT_SRCS)))
SAN_HERMETIC_NAMES := $(patsubst %.c,%,$(notdir $(HERMETIC_SRCS)))
.SECONDARY: $(SAN_LIB_OBJS) $(SAN_COMMON_OBJS) $(SAN_DAEMON_OBJS) $(SAN_FLEETD_OBJS)

$(O)/san/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC [san] $<")
	$(Q)$(CC) $(CPPFLAGS) $(SAN_HOST_CFLAGS) $(DAEMON_CFLAGS) $(FLEETD_CFLAGS) -pthread -c -o $@ $<
$(O)/san/obj/daemon/config_load.o: CPPFLAGS += -DRR_RERAND_BIN='"$(BINDIR)/rerand"'
$(O)/san/obj/daemon/config.o: $(O)/bindir.stamp

$(O)/san/librerand.a: $(SAN_LIB_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^
$(O)/san/libcommon.a: $(SAN_COMMON_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^
$(O)/san/libdaemon.a: $(SAN_DAEMON_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^
$(O)/san/libfleetd.a: $(SAN_FLEETD_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

define san_test_recipe
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC [san] $<")
	$(Q)$(CC) $(CPPFLAGS) $(UNIT_DEP_FILE) -Itests/unit -Idaemon -Ifleetd -DT_TOP='"$(CURDIR)"' $(SAN_HOST_CFLAGS) $(DAEMON_CFLAGS) \
		$(FLEETD_CFLAGS) -o $@ $< $(SAN_LIBS) $(STAGE_BLOB) $(DAEMON_LIBS) $(FLEETD_LIBS) $(LIB_LIBS)
endef
SAN_UNIT_DEPS := $(SAN_LIBS) $(STAGE_BLOB) tests/unit/test.h
$(O)/san/tests/%: tests/unit/%.c $(SAN_UNIT_DEPS)
	$(san_test_recipe)
$(O)/san/tests/%: tests/kernel/%.c $(SAN_UNIT_DEPS)
	$(san_test_recipe)

san-tests: $(SAN_UNIT_BINS)

# The fast lane: tests/unit's hermetic tests under ASan and UBSan, through
# run-check.sh's "unit" mode (no kernels fetched; its sanitizer options; like
# `make check`, test_uniform's sanitizer run is left to check-long).  They
# exec build/rerand (test_entropy), hence $(RERAND).
check-unit: $(RERAND) $(addprefix $(O)/san/tests/,$(SAN_HERMETIC_NAMES))
	$(Q)scripts/run-check.sh unit "$(addprefix san/,$(SAN_HERMETIC_NAMES))"

deps:
	$(Q)scripts/deps.sh check

# The test kernels: ../shared/kernels, or Debian's packages fetched once into
# ~/.cache/rerand-e2e (scripts/kernels.sh); `make check` does this itself.
kernels:
	$(Q)scripts/kernels.sh

# The packages first, then the build in a new make: this make read
# pkg-config's flags (LIB_CFLAGS, lzo2's -I/usr/include/lzo) when it started,
# before a fresh machine had the -dev packages.
check check-long:
	$(Q)scripts/deps.sh check
	$(Q)$(MAKE) --no-print-directory all $(UNIT_BINS) $(SAN_UNIT_BINS) $(FUZZ_BINS) $(FLEETD_BROKEN) $(RERANDD_LIAR) \
		$(FLEET_TEST_HELPERS) $(DAEMON_TEST_HELPERS) $(E2E_TEST_HELPERS)
	$(Q)scripts/run-check.sh $(if $(filter check-long,$@),long,short)

# The comeback part of `make check` alone (issue 22): the watchdog unit test
# and the hang guest of tests/e2e/check-comeback.sh, as TAP with the summary.
check-comeback:
	$(Q)scripts/deps.sh check
	$(Q)$(MAKE) --no-print-directory all $(O)/tests/test_wdog $(E2E_TEST_HELPERS)
	$(Q)scripts/run-check.sh short "test_wdog check-comeback.sh"

# The kdump-tools guest alone (issue 38, point 4; long only: a real kdump
# in a Debian 12 guest under TCG, 15-30 minutes): tests/e2e/check-systemd-kdump.sh.
check-kdump:
	$(Q)scripts/deps.sh check
	$(Q)$(MAKE) --no-print-directory all $(E2E_TEST_HELPERS)
	$(Q)scripts/run-check.sh long "check-systemd-kdump.sh"

# The default confirmation deadline under host load alone (issue 38, point
# 5; long only: the Debian 12 guest under busy loops, 30-60 minutes):
# tests/e2e/check-systemd-load.sh.
check-load:
	$(Q)scripts/deps.sh check
	$(Q)$(MAKE) --no-print-directory all $(E2E_TEST_HELPERS)
	$(Q)scripts/run-check.sh long "check-systemd-load.sh"

# The kernel radar (issue 42): the newest cloud kernel of every Debian suite
# that has one, fetched from Debian's archive (network), read by rerand
# inspect and kexec'd 5 times on SeaBIOS (kexec_load) and OVMF (kexec_file)
# in QEMU TCG; one table at the end.  tests/e2e/check-upstream.sh.
check-upstream:
	$(Q)scripts/deps.sh check
	$(Q)$(MAKE) --no-print-directory all $(E2E_TEST_HELPERS)
	$(Q)scripts/run-check.sh long "check-upstream.sh"

# The lifecycle part of `make check` alone (issue 38: what stays loaded,
# whose reboots are rerand's, doctor, kdump), as TAP with the summary line.
# run-check.sh selects whole suites: test-crash-daemon.sh runs whole, its
# kdump-tools cases among the others; the Debian 13 guest's short run is a
# rerandomizing reboot, `systemctl reboot` into the staged image, then the
# hold, release and stop against the real kernel's kexec_loaded and the
# kexec-tools probe (debian/reboots.sh x_probe); the Debian 12 guest's ends
# with the package purged and nothing loaded.  About 40 minutes, mostly the
# two guests under TCG, one after the other.
LIFECYCLE_SUITES := test-lifecycle-daemon.sh test-doctor-daemon.sh test-crash-daemon.sh \
	test-comeback-daemon.sh check-systemd-trixie.sh check-systemd.sh
check-lifecycle:
	$(Q)scripts/deps.sh check
	$(Q)$(MAKE) --no-print-directory all $(DAEMON_TEST_HELPERS) $(E2E_TEST_HELPERS)
	$(Q)scripts/run-check.sh short "$(LIFECYCLE_SUITES)"

# piuparts on the packages built for bookworm and trixie (long only: about
# 15 minutes, debootstrap from the mirror): install and purge, install,
# remove, install again, and the upgrade from an earlier commit's package
# (scripts/old-deb.sh, built once and cached): `make check-piuparts`.
check-piuparts:
	$(Q)scripts/deps.sh check
	$(Q)scripts/run-check.sh long "check-piuparts.sh"

# The fleet chaos test alone: `make check-chaos` (about 3 min), `CHAOS=long` (30 min).
CHAOS ?= short
check-chaos:
	$(Q)$(MAKE) --no-print-directory all $(FLEETD_BROKEN) $(WALLSTEP)
	$(Q)RERAND_MODE=$(CHAOS) tests/fleet/test-fleet-chaos.sh

unit-tests: $(UNIT_BINS)

fuzz: $(FUZZ_BINS)
	$(Q)scripts/fuzz.sh $(FUZZ_BINS)

# A campaign: 10^7 executions per fast target, 10^5 per slow one; the
# inputs that reach new coverage are merged into tests/fuzz/corpus.
fuzz-long: $(FUZZ_BINS)
	$(Q)scripts/fuzz-long.sh $(FUZZ_BINS)

# The demo needs fewer packages than the tests: install those, then build.
demo:
	$(Q)scripts/deps.sh demo
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/e2e/demo.sh $(if $(KERNEL),--kernel $(KERNEL))

$(O)/tools/slotdist: tools/slotdist.c $(LIBRERAND)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(HOST_CFLAGS) -o $@ $< $(LIBRERAND) $(LIB_LIBS)

# docs/entropy-histogram.png, from the statistical test's draws.
histogram: $(LIBRERAND)
	$(Q)scripts/entropy-histogram.sh

# A throwaway Debian 12 VM (QEMU TCG, serial console) with rerand installed
# by `make install` and rerandd running under systemd.  KERNEL= a cloud
# kernel with NVMe and ext4 built in (default: a test kernel, or fetched).
vm:
	$(Q)scripts/deps.sh vm
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/e2e/debian-vm.sh $(if $(KERNEL),--kernel $(KERNEL))

bench:
	$(Q)scripts/deps.sh bench
	$(Q)$(MAKE) --no-print-directory all build/bench-guest/rrb-tsc build/bench-guest/rrb-fwcfg $(FLEET_BENCH)
	$(Q)scripts/bench.sh

# The fleet at scale alone (issue 43): a 3-member etcd on loopback, 10, 100
# and 1,000 simulated hosts (BENCH_FLEET_NS); build/bench-fleet/fleet.md and
# docs/performance.md's "Fleet at scale".  `make bench` runs it too.
bench-fleet:
	$(Q)$(MAKE) --no-print-directory all $(FLEET_BENCH)
	$(Q)bench/fleet.sh

# The downtime guest's stopwatch (bench/downtime.sh installs it in the guest):
# static, so that it runs from systemd-shutdown's hooks too.
build/bench-guest/rrb-tsc: bench/downtime/rrb-tsc.c
	@mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -O2 -Wall -Wextra -static -o $@ $<

# Its root in RAM fetches the root archive from QEMU's fw_cfg (bench/downtime.sh).
build/bench-guest/rrb-fwcfg: bench/downtime/rrb-fwcfg.c
	@mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -O2 -Wall -Wextra -static -o $@ $<

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(SYSCONFDIR)/rerand/rerand.conf.d $(DESTDIR)$(SYSCONFDIR)/rerand/pre-reboot.d
	install -d -m 0700 $(DESTDIR)$(SYSCONFDIR)/rerand/fleet-tls
	install -m 0755 $(RERAND) $(DESTDIR)$(BINDIR)/rerand
	install -m 0755 $(RERANDD) $(DESTDIR)$(SBINDIR)/rerandd
	install -m 0755 $(FLEETD) $(DESTDIR)$(SBINDIR)/rerand-fleetd
	install -m 0644 docs/rerand-fleetd.8 $(DESTDIR)$(MANDIR)/man8/rerand-fleetd.8
	sed 's|/usr/local/sbin|$(SBINDIR)|g' systemd/rerand-fleetd.service \
		> $(DESTDIR)$(UNITDIR)/rerand-fleetd.service
	install -m 0644 systemd/rerand-fleetd.socket $(DESTDIR)$(UNITDIR)/rerand-fleetd.socket
	# the journal's explanation of each MESSAGE_ID= (journalctl -x)
	install -d $(DESTDIR)$(CATALOGDIR)
	install -m 0644 systemd/rerand.catalog $(DESTDIR)$(CATALOGDIR)/rerand.catalog
	# per-host etcd roles for a fleet group (docs/fleet.md)
	install -d $(DESTDIR)$(DOCDIR)/examples/etcd
	install -m 0755 etc/examples/etcd/rerand-etcd-roles $(DESTDIR)$(DOCDIR)/examples/etcd/
	install -d $(DESTDIR)$(DOCDIR)/examples/k8s/pre-reboot.d $(DESTDIR)$(DOCDIR)/examples/k8s/post-boot.d
	install -m 0644 etc/examples/k8s/lib-k8s.sh $(DESTDIR)$(DOCDIR)/examples/k8s/lib-k8s.sh
	install -m 0755 etc/examples/k8s/pre-reboot.d/50-k8s-drain $(DESTDIR)$(DOCDIR)/examples/k8s/pre-reboot.d/
	install -m 0755 etc/examples/k8s/post-boot.d/50-k8s-uncordon $(DESTDIR)$(DOCDIR)/examples/k8s/post-boot.d/
	install -d $(DESTDIR)$(DOCDIR)/examples/k8s/rerand.conf.d
	install -m 0644 etc/examples/k8s/rerand.conf.d/50-k8s-hooks.conf $(DESTDIR)$(DOCDIR)/examples/k8s/rerand.conf.d/
	install -m 0644 etc/examples/k8s/rerand-drain-rbac.yaml etc/examples/k8s/kured-rerand.yaml \
		$(DESTDIR)$(DOCDIR)/examples/k8s/
	# the observability pack (docs/operations.md, "Alerts"): alert rules with
	# their promtool tests, and a Grafana dashboard
	install -d $(DESTDIR)$(DOCDIR)/examples/prometheus $(DESTDIR)$(DOCDIR)/examples/grafana
	install -m 0644 etc/prometheus/rerand.rules.yml etc/prometheus/rerand.rules.test.yml \
		$(DESTDIR)$(DOCDIR)/examples/prometheus/
	install -m 0644 etc/grafana/rerand-fleet.json $(DESTDIR)$(DOCDIR)/examples/grafana/
	install -m 0644 docs/rerand.8 $(DESTDIR)$(MANDIR)/man8/rerand.8
	install -d $(DESTDIR)$(BASHCOMPDIR)
	install -m 0644 $(BASH_COMPLETION) $(DESTDIR)$(BASHCOMPDIR)/rerand
	install -m 0644 docs/rerandd.8 $(DESTDIR)$(MANDIR)/man8/rerandd.8
	install -m 0644 docs/rerand.conf.5 $(DESTDIR)$(MANDIR)/man5/rerand.conf.5
	# the man pages point at these by their installed names (DOCDIR/NAME.md)
	install -m 0644 README.md docs/*.md docs/*.png $(DESTDIR)$(DOCDIR)/
	# the --json outputs' schemas (rerand(8), JSON)
	install -d $(DESTDIR)$(DOCDIR)/json
	install -m 0644 docs/json/*.schema.json $(DESTDIR)$(DOCDIR)/json/
	sed 's|/usr/local/sbin|$(SBINDIR)|g; s|/usr/local/bin|$(BINDIR)|g' systemd/rerandd.service \
		> $(DESTDIR)$(UNITDIR)/rerandd.service
	install -m 0644 systemd/sysusers.d/rerand.conf $(DESTDIR)$(SYSUSERSDIR)/rerand.conf
	# the hardware watchdog across a kexec (docs/operations.md)
	install -d $(DESTDIR)$(MODPROBEDIR) $(DESTDIR)$(LIBEXECDIR)
	install -m 0644 etc/modprobe.d/rerand.conf $(DESTDIR)$(MODPROBEDIR)/rerand.conf
	install -m 0755 libexec/watchdog-setup $(DESTDIR)$(LIBEXECDIR)/watchdog-setup
	test -e $(DESTDIR)$(SYSCONFDIR)/rerand/rerand.conf || \
		sed 's|/usr/local/bin|$(BINDIR)|g' etc/rerand.conf > $(DESTDIR)$(SYSCONFDIR)/rerand/rerand.conf

# rerand_VERSION_amd64.deb from debian/ (dh, compat 13), built in a copy of
# the tree under build/deb so that dpkg-buildpackage's ../ outputs stay in
# build/; the .deb is copied here.  The version is debian/changelog's, which
# is also every program's --version (VERSION above).
DEB_VERSION = $(shell dpkg-parsechangelog -S Version 2>/dev/null)
deb:
	$(Q)scripts/deps.sh deb
	$(Q)rm -rf $(O)/deb && mkdir -p $(O)/deb/rerand-$(DEB_VERSION)
	$(Q)tar -c --exclude=./build --exclude=./.git --exclude='./*.deb' . | \
		tar -x -C $(O)/deb/rerand-$(DEB_VERSION)
	$(Q)cd $(O)/deb/rerand-$(DEB_VERSION) && dpkg-buildpackage -b -us -uc
	$(Q)cp $(O)/deb/rerand_$(DEB_VERSION)_amd64.deb .
	@echo "deb: rerand_$(DEB_VERSION)_amd64.deb"

# The package built as Debian's build daemons build it: in a pristine
# debootstrap --variant=buildd root of SUITE (bookworm, trixie; default this
# machine's release) holding only build-essential and the Build-Depends,
# dpkg-buildpackage -b with its tests, then SUITE's own lintian --pedantic.
# Leaves build/deb-SUITE/rerand_VERSION_amd64.deb (and build.log,
# lintian.txt); the base root is cached in ~/.cache/rerand-e2e.
deb-chroot:
	$(Q)scripts/deps.sh deb-chroot
	$(Q)scripts/deb-chroot.sh $(SUITE)

clean:
	rm -rf $(O)

# Only the object trees: build/e2e and build/vm hold whole root file systems.
-include $(shell find $(O)/host $(O)/stage $(O)/tests $(O)/fuzz $(O)/fuzzobj $(O)/san $(O)/liar -name '*.d' ! -name 'test_*.d' \
	-type f 2>/dev/null)
