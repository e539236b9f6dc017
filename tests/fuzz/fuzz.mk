# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# libFuzzer harnesses (tests/fuzz/fuzz_*.c), built with Debian's clang against the
# decoder's sources compiled again with -fsanitize=fuzzer-no-link,address,undefined:
#   make fuzz                    builds $(OUTPUT)/fuzz/fuzz_*
#   make fuzz FUZZ_SECONDS=N     ... and runs each for N seconds (tests/fuzz/run.sh)
#   make fuzz FUZZ_SECONDS=N FUZZ=elf   only the harnesses whose name contains "elf"

FUZZ_CC ?= clang
FUZZ_OUT := $(OUTPUT)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -g -O1 -std=gnu11 -fno-omit-frame-pointer -Wall -Wextra \
	       -Wno-unused-parameter -Wno-missing-field-initializers -MMD -MP $(FUZZ_SAN)
FUZZ_CPPFLAGS := -Iinclude $(addprefix -I,$(wildcard decoder perfdata)) -Itests/fuzz \
		 -I$(OUTPUT) -D_GNU_SOURCE -DPTBPF_VERSION='"$(VERSION)"'
# decoder/log.c is replaced by the harnesses' silent sink (fuzz_common.c)
FUZZ_LIB_SRCS := $(filter-out %/log.c,$(wildcard decoder/*.c perfdata/*.c))
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(FUZZ_LIB_SRCS) tests/fuzz/fuzz_common.c)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(FUZZ_OUT)/%,$(filter-out %/fuzz_common.c,$(FUZZ_SRCS)))

.PHONY: fuzz
fuzz: $(FUZZ_BINS)
ifneq ($(FUZZ_SECONDS),)
	$(Q)FUZZ_OUT=$(abspath $(FUZZ_OUT)) tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ)
endif

$(FUZZ_OUT)/obj/%.o: %.c $(GENERATED_HDRS)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_OUT)/fuzz_%: $(FUZZ_OUT)/obj/tests/fuzz/fuzz_%.o $(FUZZ_LIB_OBJS)
	$(call msg,FUZZ-LD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ $(PTBPF_LDLIBS) -o $@

-include $(wildcard $(FUZZ_OUT)/obj/*/*.d $(FUZZ_OUT)/obj/*/*/*.d)
