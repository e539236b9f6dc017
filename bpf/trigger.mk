# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The trigger programs use atomics whose result is read (fetch-and-add: nth, max),
# which need the v3 BPF instruction set (Linux 5.12+).
$(OUTPUT)/bpf/trigger.bpf.o: BPF_CFLAGS += -mcpu=v3
