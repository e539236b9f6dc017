# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# ptbpf build. Sources are found by wildcard, so adding a file to a room is enough:
#   bpf/*.bpf.c      -> build/bpf/*.bpf.o -> build/skel/*.skel.h
#   decoder/*.c      -> build/libptbpf-decoder.a
#   user/*.c         -> build/libptbpf-user.a (all but main.o) + build/ptbpf
#   tests/unit/test_*.c      -> build/tests/test_* (cmocka)
#   tests/targets/*.c, *.cc  -> build/targets/*   (programs the tests trace)
#   tests/bench/*.c          -> build/bench/*
# Per-room extras live in */*.mk fragments next to the sources they build.

# SANITIZE=1: ptbpf, its libraries and the tests with AddressSanitizer (leaks included)
# and UndefinedBehaviorSanitizer, every report fatal, into build-asan/ so the normal
# build stays as it is (`make test SANITIZE=1`). Traced programs stay uninstrumented.
ifeq ($(SANITIZE),1)
OUTPUT ?= build-asan
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all
# Exit statuses no test expects (a decode error exits 1, as a plain ASan report would).
# A test may take three times as long: the instrumented decoder runs some 3x slower.
SANITIZE_ENV := ASAN_OPTIONS=exitcode=86:detect_leaks=1 LSAN_OPTIONS=exitcode=87 \
		UBSAN_OPTIONS=exitcode=88:print_stacktrace=1 TEST_TIMEOUT=$${TEST_TIMEOUT:-1800}
endif
OUTPUT ?= build
ABS_OUTPUT := $(abspath $(OUTPUT))

ARCH ?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
ifneq ($(ARCH),x86)
$(error ptbpf supports x86_64 only (Intel PT, x86 single-step encoder); ARCH=$(ARCH) is not supported)
endif

CC ?= gcc
CXX ?= g++
CLANG ?= clang
BPFTOOL ?= bpftool
# Debian's interpreter when present: a version manager's shim costs seconds per call.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
VERSION := 0.1.0

ifeq ($(V),1)
	Q =
	msg =
else
	Q = @
	msg = @printf '  %-8s %s%s\n' "$(1)" "$(patsubst $(ABS_OUTPUT)/%,%,$(2))" "$(if $(3), $(3))";
	MAKEFLAGS += --no-print-directory
endif

# Flags the build needs are kept apart from the user's CFLAGS/CPPFLAGS/LDFLAGS, so that
# `make CFLAGS=-O1` changes optimisation only, not the language, warnings or deps.
CFLAGS ?= -O2 -g
PTBPF_CPPFLAGS = -Iinclude -I$(OUTPUT) -D_GNU_SOURCE -DPTBPF_VERSION='"$(VERSION)"'
PTBPF_CFLAGS = -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	       -fno-omit-frame-pointer -MMD -MP $(if $(WERROR),-Werror) $(SANITIZE_FLAGS)
# Libraries through pkg-config where Debian ships a .pc (libipt and libiberty do not).
# Recursive (=): evaluated only when linking, so a host without pkg-config still
# reaches the dependency check of `make demo` / `make test`.
PKG_CONFIG ?= pkg-config
# Only what decoding needs is linked. The libraries of the other commands (capstone,
# libcurl, libcrypto, libmicrohttpd, libsystemd, libcyaml, libyaml, libdebuginfod: 25 ms
# of every start, linked) are loaded on first use (include/lazylib.h); their headers are
# still needed to build (deps/packages). --as-needed on the ptbpf binary: a library none
# of its code calls costs every run its loading and relocations.
PTBPF_PKGS := libbpf libelf zlib libzstd json-c
PTBPF_LDLIBS = $(shell $(PKG_CONFIG) --libs $(PTBPF_PKGS)) -lipt -liberty -lpthread -lm
# test tools that disassemble by themselves link capstone
LDLIBS_CAPSTONE = $(shell $(PKG_CONFIG) --libs capstone)
LDLIBS_CMOCKA = $(shell $(PKG_CONFIG) --libs cmocka)

# Rooms: each folder is compiled with its own include path, so that a header used
# across rooms shows here. include/ (cross-room APIs) is on every path.
#   decoder/          libipt decoding, images, symbols, call stacks, FXT
#   perfdata/         the perf.data codec and struct capture
#   user/             the commands and helpers the backends share
#   user/pt/          Intel PT backend: PMU, data ring, kcore, host info
#   user/singlestep/  the software backend (ptrace, x86 encoder of PT packets)
#   user/daemon/      fleet mode (upload.c: the uploader of spooled captures)
#   user/s3/          S3 client on libcurl
ROOM_INC_decoder := -Idecoder
ROOM_INC_perfdata := -Iperfdata
# doctor reads the PT PMU's capabilities; captures and decode s3:// use the S3 client and
# the upload layout and config
ROOM_INC_user := -Iuser -Iuser/pt -Iuser/s3 -Iuser/daemon
ROOM_INC_user/pt := -Iuser/pt -Iuser		# backend.h, target, privs, vdso
ROOM_INC_user/singlestep := -Iuser/singlestep -Iuser -Iuser/pt	# the PMU format parser
ROOM_INC_user/daemon := -Iuser/daemon -Iuser -Iuser/s3	# the uploader on the S3 client
ROOM_INC_user/s3 := -Iuser/s3
room_inc = $(ROOM_INC_$(patsubst %/,%,$(dir $(1))))
# tests see every room: they test each one's internals.
TEST_INC := -Idecoder -Iperfdata -Iuser -Iuser/pt -Iuser/singlestep -Iuser/daemon -Iuser/s3 \
	    -Itests/unit

compile = $(CC) $(PTBPF_CPPFLAGS) $(1) $(CPPFLAGS) $(PTBPF_CFLAGS) $(CFLAGS)

# clang's own system include dirs, after the BPF target's, so <linux/*.h> and
# <asm/*.h> resolve for -target bpf (libbpf-bootstrap's CLANG_BPF_SYS_INCLUDES).
CLANG_BPF_SYS_INCLUDES ?= $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS = -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Iinclude \
	     -I$(OUTPUT) $(CLANG_BPF_SYS_INCLUDES) -Wall -MMD -MP $(if $(WERROR),-Werror)

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/skel/%.skel.h,$(BPF_SRCS))

# The decoder library holds decoder/ and perfdata/: each uses the other (captures
# are read into the decoder's session; the writer names images by build-id).
DECODER_SRCS := $(wildcard decoder/*.c perfdata/*.c)
DECODER_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(DECODER_SRCS))
DECODER_LIB := $(OUTPUT)/libptbpf-decoder.a

USER_SRCS := $(filter-out user/main.c,$(wildcard user/*.c user/*/*.c))
USER_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(USER_SRCS))
USER_LIB := $(OUTPUT)/libptbpf-user.a
PTBPF := $(OUTPUT)/ptbpf

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
UNIT_HELPER_SRCS := $(filter-out tests/unit/test_%.c,$(wildcard tests/unit/*.c))
UNIT_HELPER_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(UNIT_HELPER_SRCS))

BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(OUTPUT)/bench/%,$(BENCH_SRCS))

# Programs the tests trace: unoptimised, frame pointers, symbols, unless a fragment
# sets TARGET_CFLAGS_<name> / TARGET_LDFLAGS_<name>.
TARGET_C_SRCS := $(wildcard tests/targets/*.c)
TARGET_CXX_SRCS := $(wildcard tests/targets/*.cc)
TARGET_BINS := $(patsubst tests/targets/%.c,$(OUTPUT)/targets/%,$(TARGET_C_SRCS)) \
	       $(patsubst tests/targets/%.cc,$(OUTPUT)/targets/%,$(TARGET_CXX_SRCS))
TARGET_CFLAGS := -O0 -g -fno-omit-frame-pointer -pthread

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all clean test bench demo vmlinux unit targets deps deps-test

# The default goal, before any fragment can define a rule.
all: $(PTBPF) $(UNIT_BINS) $(TARGET_BINS) $(BENCH_BINS)

# Extra rules and variables of each room (generated headers, special targets...),
# read after `all` so that none of them becomes the default goal.
include $(sort $(wildcard bpf/*.mk user/*.mk user/*/*.mk decoder/*.mk perfdata/*.mk \
			  tests/*.mk tests/*/*.mk))

# BPF: .bpf.c -> .bpf.o -> .skel.h
$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c vmlinux/$(ARCH)/vmlinux.h $(GENERATED_HDRS)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)llvm-strip -g $@

$(OUTPUT)/skel/%.skel.h: $(OUTPUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# Every room's objects: the room's own include path (room_inc), skeletons first.
$(OUTPUT)/%.o: %.c $(GENERATED_HDRS) | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(call compile,$(call room_inc,$*)) -c $< -o $@

$(DECODER_LIB): $(DECODER_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# user/: everything but main.o goes into a library the unit tests can link.
$(USER_LIB): $(USER_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(PTBPF): $(OUTPUT)/user/main.o $(USER_LIB) $(DECODER_LIB)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $(SANITIZE_FLAGS) $(LDFLAGS) $^ -Wl,--as-needed $(PTBPF_LDLIBS) -o $@

# Unit tests (cmocka) see the internals of every room.
$(OUTPUT)/tests/unit/%.o: tests/unit/%.c $(GENERATED_HDRS) | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(call compile,$(TEST_INC)) -c $< -o $@

$(OUTPUT)/tests/test_%: $(OUTPUT)/tests/unit/test_%.o $(UNIT_HELPER_OBJS) $(USER_LIB) $(DECODER_LIB)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(SANITIZE_FLAGS) $(LDFLAGS) $^ $(PTBPF_LDLIBS) $(LDLIBS_CMOCKA) -o $@

# Benchmarks.
$(OUTPUT)/bench/%: tests/bench/%.c $(USER_LIB) $(DECODER_LIB) $(GENERATED_HDRS) | $(SKELS)
	$(call msg,BENCH,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(call compile,$(TEST_INC)) $< $(USER_LIB) $(DECODER_LIB) $(LDFLAGS) $(PTBPF_LDLIBS) -o $@

# Traced programs: their own flags (TARGET_CFLAGS), not the project's.
$(OUTPUT)/targets/%: tests/targets/%.c
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(or $(TARGET_CFLAGS_$*),$(TARGET_CFLAGS)) -MMD -MP $< $(TARGET_LDFLAGS_$*) -o $@

$(OUTPUT)/targets/%: tests/targets/%.cc
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(or $(TARGET_CFLAGS_$*),$(TARGET_CFLAGS)) -MMD -MP $< $(TARGET_LDFLAGS_$*) -o $@

unit: $(UNIT_BINS)
targets: $(TARGET_BINS)

# The quick-start commands first install what is missing (deps/packages), then build
# in a sub-make that reads the Makefile again with the packages in place.
deps:
	$(Q)deps/ensure.sh build
deps-test:
	$(Q)deps/ensure.sh test

test: deps-test
	$(Q)$(MAKE) all
	$(Q)$(SANITIZE_ENV) PTBPF=$(ABS_OUTPUT)/ptbpf BUILD=$(ABS_OUTPUT) PYTHON=$(PYTHON) tests/run.sh

bench: all
	$(Q)PTBPF=$(ABS_OUTPUT)/ptbpf BUILD=$(ABS_OUTPUT) PYTHON=$(PYTHON) tests/bench/run.sh

# Regenerate the checked-in BTF header from the running kernel.
vmlinux:
	$(call msg,GEN,vmlinux/$(ARCH)/vmlinux.h)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h.tmp
	$(Q)mv vmlinux/$(ARCH)/vmlinux.h.tmp vmlinux/$(ARCH)/vmlinux.h

clean:
	$(call msg,CLEAN)
	$(Q)rm -rf $(OUTPUT)

-include $(wildcard $(OUTPUT)/*/*.d $(OUTPUT)/*/*/*.d $(OUTPUT)/*/*/*/*.d)

# The quick-start demo (README): a real capture of a bundled program where the
# capture path exists; until then, what this host can do.
demo: deps
	$(Q)$(MAKE) all
	$(Q)PTBPF=$(ABS_OUTPUT)/ptbpf BUILD=$(ABS_OUTPUT) PYTHON=$(PYTHON) tests/demo.sh
