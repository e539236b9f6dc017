// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Capstone loaded on first use (include/capstone_lazy.h, include/lazylib.h):
 * `ptbpf --version` and a decode with --no-fast never load it. The soname is the
 * header's.
 */
#include "capstone_lazy.h"
#include "lazylib.h"

#define CS_STR(v) #v
#define CS_SONAME(v) "libcapstone.so." CS_STR(v)
#define CS_PACKAGE(v) "libcapstone" CS_STR(v)

static struct capstone_fns cs;

static const struct lazylib_sym cs_syms[] = {
	{ "cs_open", (void **)&cs.open },
	{ "cs_option", (void **)&cs.option },
	{ "cs_malloc", (void **)&cs.malloc },
	{ "cs_free", (void **)&cs.free },
	{ "cs_close", (void **)&cs.close },
	{ "cs_strerror", (void **)&cs.strerror },
	{ "cs_disasm_iter", (void **)&cs.disasm_iter },
	{}
};

static struct lazylib lib_capstone = {
	CS_SONAME(CS_API_MAJOR), CS_PACKAGE(CS_API_MAJOR), "disassembly (capstone)", cs_syms,
};

const struct capstone_fns *capstone_lazy(void)
{
	return lazylib_load(&lib_capstone) ? NULL : &cs;
}
