# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pt_tail: how the firing CPU's trace ends (tests/hw/freeze_physics.sh checks the freeze by it).
PT_TAIL := $(OUTPUT)/tests/pt_tail

all: $(PT_TAIL)

$(PT_TAIL): tests/tools/pt_tail.c $(DECODER_LIB)
	$(call msg,BINARY,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(call compile,-Iperfdata -Idecoder) $< $(DECODER_LIB) $(LDFLAGS) $(PTBPF_LDLIBS) -o $@
