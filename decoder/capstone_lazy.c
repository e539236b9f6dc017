// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Capstone loaded on first use (include/capstone_lazy.h): `ptbpf --version` and a
 * decode with --no-fast never load it (elfutils loads libdebuginfod the same way). The
 * soname is the header's.
 */
#include <dlfcn.h>
#include <pthread.h>

#include "capstone_lazy.h"
#include "log.h"

#define CS_SONAME_STR(v) #v
#define CS_SONAME(v) "libcapstone.so." CS_SONAME_STR(v)

static struct capstone_fns cs;
static int load_err;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;

static void cs_load(void)
{
	void *h = dlopen(CS_SONAME(CS_API_MAJOR), RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		elog("capstone: cannot load %s: %s: install libcapstone%d\n",
		     CS_SONAME(CS_API_MAJOR), dlerror(), CS_API_MAJOR);
		load_err = -1;
		return;
	}
	cs.open = (__typeof__(cs.open))dlsym(h, "cs_open");
	cs.option = (__typeof__(cs.option))dlsym(h, "cs_option");
	cs.malloc = (__typeof__(cs.malloc))dlsym(h, "cs_malloc");
	cs.free = (__typeof__(cs.free))dlsym(h, "cs_free");
	cs.close = (__typeof__(cs.close))dlsym(h, "cs_close");
	cs.strerror = (__typeof__(cs.strerror))dlsym(h, "cs_strerror");
	cs.disasm_iter = (__typeof__(cs.disasm_iter))dlsym(h, "cs_disasm_iter");
	if (!cs.open || !cs.option || !cs.malloc || !cs.free || !cs.close || !cs.strerror ||
	    !cs.disasm_iter) {
		elog("capstone: %s lacks a function ptbpf uses: install libcapstone%d\n",
		     CS_SONAME(CS_API_MAJOR), CS_API_MAJOR);
		load_err = -1;
	}
	/* never closed: the library lives as long as the process */
}

const struct capstone_fns *capstone_lazy(void)
{
	pthread_once(&cs_once, cs_load);
	return load_err ? NULL : &cs;
}
