# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The trigger programs use atomics whose result is read (fetch-and-add: nth, max),
# which need the v3 BPF instruction set (Linux 5.12+). Their copy for older kernels is
# built for v2, where clang refuses such an atomic: none can slip in.
$(OUTPUT)/bpf/trigger.bpf.o: BPF_CFLAGS += -mcpu=v3
$(OUTPUT)/bpf/trigger_noatomics.bpf.o: BPF_CFLAGS += -mcpu=v2
