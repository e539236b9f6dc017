# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# perfdata_tool: synthesizes and rewrites captures for the perf.data integration tests.
# `all` first, so this fragment never becomes the default goal by accident.
PERFDATA_TOOL := $(OUTPUT)/tests/perfdata_tool

all: $(PERFDATA_TOOL)

$(PERFDATA_TOOL): tests/tools/perfdata_tool.c $(DECODER_LIB) | $(OUTPUT)/tests
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $< $(DECODER_LIB) $(LDLIBS) -o $@
