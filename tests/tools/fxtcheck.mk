# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# fxtcheck: the tests' FXT reader and validator (tests/tools/fxtcheck.c), independent of
# ptbpf's writer; it needs only zlib.
FXTCHECK_TOOL := $(OUTPUT)/tests/fxtcheck

all: $(FXTCHECK_TOOL)

$(FXTCHECK_TOOL): tests/tools/fxtcheck.c | $(OUTPUT)/tests
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) -D_GNU_SOURCE $< -lz -o $@
