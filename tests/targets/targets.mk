# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Traced programs: static where startup would otherwise dominate the stepped
# instructions (the dynamic loader alone runs ~100k instructions); vdso_clock stays
# dynamic on purpose, and tailcall is built -O2 for its sibling call.
TARGET_LDFLAGS_recurse := -static
TARGET_LDFLAGS_sigjmp := -static
# static-pie, not -static: crtbeginT.o would register .eh_frame and the first throw
# would sort every FDE of the binary (millions of instructions); static-pie finds
# FDEs through PT_GNU_EH_FRAME.
TARGET_CFLAGS_cxxexc := -O0 -g -fno-omit-frame-pointer -fPIE
TARGET_LDFLAGS_cxxexc := -static-pie
TARGET_LDFLAGS_threads := -static
TARGET_LDFLAGS_forkexec := -static
TARGET_LDFLAGS_tailcall := -static
TARGET_CFLAGS_tailcall := -O2 -g -fno-omit-frame-pointer
TARGET_LDFLAGS_ticker := -static
TARGET_LDFLAGS_survivor := -static
TARGET_LDFLAGS_lat_server := -static
# usdt_app uses include/ptbpf.h (on <sys/sdt.h>, Debian's systemtap-sdt-dev)
TARGET_CFLAGS_usdt_app := -O0 -g -fno-omit-frame-pointer -Iinclude
TARGET_LDFLAGS_usdt_app := -static
TARGET_LDFLAGS_mt_sleepers := -static
