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

CPPFLAGS := -Iinclude -Iuser -I$(OUTPUT) -D_GNU_SOURCE -DPTBPF_VERSION='"$(VERSION)"'
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	  -fno-omit-frame-pointer -MMD -MP
LDLIBS := -lbpf -lipt -lelf -ldw -lz -ljson-c -lcapstone -liberty -lpthread -lm

# clang's own system include dirs, after the BPF target's, so <linux/*.h> and
# <asm/*.h> resolve for -target bpf (libbpf-bootstrap's CLANG_BPF_SYS_INCLUDES).
CLANG_BPF_SYS_INCLUDES ?= $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Iinclude \
	      -I$(OUTPUT) $(CLANG_BPF_SYS_INCLUDES) -Wall -MMD -MP

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/skel/%.skel.h,$(BPF_SRCS))

DECODER_SRCS := $(wildcard decoder/*.c)
DECODER_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(DECODER_SRCS))
DECODER_LIB := $(OUTPUT)/libptbpf-decoder.a

USER_SRCS := $(filter-out user/main.c,$(wildcard user/*.c))
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

# Extra rules and variables of each room (generated headers, special targets...).
include $(sort $(wildcard bpf/*.mk user/*.mk decoder/*.mk tests/*.mk tests/*/*.mk))

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all clean test bench demo vmlinux unit targets

all: $(PTBPF) $(UNIT_BINS) $(TARGET_BINS) $(BENCH_BINS)

$(OUTPUT) $(OUTPUT)/bpf $(OUTPUT)/skel $(OUTPUT)/decoder $(OUTPUT)/user $(OUTPUT)/tests \
$(OUTPUT)/tests/unit $(OUTPUT)/targets $(OUTPUT)/bench:
	$(Q)mkdir -p $@

# BPF: .bpf.c -> .bpf.o -> .skel.h
$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c vmlinux/$(ARCH)/vmlinux.h $(GENERATED_HDRS) | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)llvm-strip -g $@

$(OUTPUT)/skel/%.skel.h: $(OUTPUT)/bpf/%.bpf.o | $(OUTPUT)/skel
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# decoder/ as a static library that user/ and the tests link.
$(OUTPUT)/decoder/%.o: decoder/%.c $(GENERATED_HDRS) | $(OUTPUT)/decoder
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(DECODER_LIB): $(DECODER_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# user/: everything but main.o goes into a library the unit tests can link.
$(OUTPUT)/user/%.o: user/%.c $(GENERATED_HDRS) | $(SKELS) $(OUTPUT)/user
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(USER_LIB): $(USER_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(PTBPF): $(OUTPUT)/user/main.o $(USER_LIB) $(DECODER_LIB)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# Unit tests (cmocka).
$(OUTPUT)/tests/unit/%.o: tests/unit/%.c $(GENERATED_HDRS) | $(SKELS) $(OUTPUT)/tests/unit
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) -c $< -o $@

$(OUTPUT)/tests/test_%: $(OUTPUT)/tests/unit/test_%.o $(UNIT_HELPER_OBJS) $(USER_LIB) $(DECODER_LIB) | $(OUTPUT)/tests
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -lcmocka -o $@

# Benchmarks.
$(OUTPUT)/bench/%: tests/bench/%.c $(USER_LIB) $(DECODER_LIB) $(GENERATED_HDRS) | $(SKELS) $(OUTPUT)/bench
	$(call msg,BENCH,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $< $(USER_LIB) $(DECODER_LIB) $(LDLIBS) -o $@

# Traced programs.
$(OUTPUT)/targets/%: tests/targets/%.c | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CC) $(or $(TARGET_CFLAGS_$*),$(TARGET_CFLAGS)) -MMD -MP $< $(TARGET_LDFLAGS_$*) -o $@

$(OUTPUT)/targets/%: tests/targets/%.cc | $(OUTPUT)/targets
	$(call msg,TARGET,$@)
	$(Q)$(CXX) $(or $(TARGET_CFLAGS_$*),$(TARGET_CFLAGS)) -MMD -MP $< $(TARGET_LDFLAGS_$*) -o $@

unit: $(UNIT_BINS)
targets: $(TARGET_BINS)

test: all
	$(Q)PTBPF=$(ABS_OUTPUT)/ptbpf BUILD=$(ABS_OUTPUT) PYTHON=$(PYTHON) tests/run.sh

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

-include $(wildcard $(OUTPUT)/*/*.d $(OUTPUT)/*/*/*.d)

# The quick-start demo (README): a real capture of a bundled program where the
# capture path exists; until then, what this host can do.
demo: all
	$(Q)PTBPF=$(ABS_OUTPUT)/ptbpf BUILD=$(ABS_OUTPUT) PYTHON=$(PYTHON) tests/demo.sh
