# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# kcore_check: the kernel matrix's check of the --kernel kcore copy against the live
# kernel (tests/kernels/guest.sh), with its BPF reader of kernel memory; and
# `make test-kernels`, the matrix itself (tests/kernels/run.sh).
KCORE_CHECK := $(OUTPUT)/kernels/kcore_check

all: $(KCORE_CHECK)

$(OUTPUT)/kernels/kread.bpf.o: tests/kernels/kread.bpf.c vmlinux/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)llvm-strip -g $@

$(OUTPUT)/kernels/kread.skel.h: $(OUTPUT)/kernels/kread.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(KCORE_CHECK): tests/kernels/kcore_check.c $(OUTPUT)/kernels/kread.skel.h $(USER_LIB) $(DECODER_LIB)
	$(call msg,BINARY,$@)
	$(Q)$(call compile,-Iuser/pt -I$(OUTPUT)/kernels) $< $(USER_LIB) $(DECODER_LIB) \
		$(LDFLAGS) $(PTBPF_LDLIBS) $(LDLIBS_CAPSTONE) -o $@

.PHONY: test-kernels deps-kernels
deps-kernels:
	$(Q)deps/ensure.sh kernels

# KERNELS="bullseye host" runs some of them.
test-kernels: deps-kernels
	$(Q)$(MAKE) all
	$(Q)BUILD=$(ABS_OUTPUT) PYTHON=$(PYTHON) tests/kernels/run.sh $(KERNELS)
