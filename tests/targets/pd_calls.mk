# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pd_calls: no libc and no PIE, so its control flow is only what its source says.
TARGET_CFLAGS_pd_calls := -O0 -g -fno-pie -fcf-protection=none -fno-stack-protector
TARGET_LDFLAGS_pd_calls := -nostdlib -static -no-pie
