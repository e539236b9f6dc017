# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The x86_64 syscall name table, generated from the system's UAPI header so that it
# matches the kernel headers the build uses (never typed by hand).
UNISTD_64_H ?= $(firstword $(wildcard /usr/include/x86_64-linux-gnu/asm/unistd_64.h \
				      /usr/include/asm/unistd_64.h))
GENERATED_HDRS += $(OUTPUT)/syscall_names.h

# Checked when the header is built, not when the Makefile is read, so that `make test`
# reaches its dependency check (deps/ensure.sh) on a host without linux-libc-dev.
$(OUTPUT)/syscall_names.h: $(UNISTD_64_H) user/syscalls.mk
	$(if $(UNISTD_64_H),,$(error cannot find asm/unistd_64.h (install linux-libc-dev)))
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q){ echo '/* Generated from $(UNISTD_64_H) by user/syscalls.mk. Do not edit. */'; \
	     sed -n 's/^#define __NR_\([a-z0-9_]*\)[[:space:]]\{1,\}\([0-9]\{1,\}\)$$/	{ "\1", \2 },/p' $<; \
	   } > $@.tmp && mv $@.tmp $@
