# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# perfdata_tool: synthesizes and rewrites captures for the perf.data integration tests.
PERFDATA_TOOL := $(OUTPUT)/tests/perfdata_tool

all: $(PERFDATA_TOOL)

$(PERFDATA_TOOL): tests/tools/perfdata_tool.c $(DECODER_LIB) $(USER_LIB)
	$(call msg,BINARY,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(call compile,-Iperfdata -Idecoder -Iuser/pt) $< $(USER_LIB) $(DECODER_LIB) $(LDFLAGS) \
		$(PTBPF_LDLIBS) $(LDLIBS_CAPSTONE) -o $@
