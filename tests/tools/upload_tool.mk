# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# upload_tool: runs the daemon's uploader on a spool (S3 integration tests, benchmark).
UPLOAD_TOOL := $(OUTPUT)/tests/upload_tool

all: $(UPLOAD_TOOL)

$(UPLOAD_TOOL): tests/tools/upload_tool.c $(USER_LIB) $(DECODER_LIB)
	$(call msg,BINARY,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(call compile,-Iuser/daemon -Iuser/s3) $< $(USER_LIB) $(DECODER_LIB) $(LDFLAGS) \
		$(PTBPF_LDLIBS) -o $@
