# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# fxtcheck: the tests' FXT reader and validator (tests/tools/fxtcheck.c). It includes no
# header of the project's code, so that it stays independent of ptbpf's writer; zlib only.
# Its strict UTF-8 check (utf8_check.h) is shared with the FXT strings fuzz harness.
FXTCHECK_TOOL := $(OUTPUT)/tests/fxtcheck

all: $(FXTCHECK_TOOL)

$(FXTCHECK_TOOL): tests/tools/fxtcheck.c tests/tools/utf8_check.h
	$(call msg,BINARY,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(call compile,) $< $(LDFLAGS) $(shell $(PKG_CONFIG) --libs zlib) -o $@
