// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The last place the decoder looks for a binary or its debug info: the debuginfod
 * servers of DEBUGINFOD_URLS (elfutils' libdebuginfod, which also keeps its cache in the
 * usual place, $DEBUGINFOD_CACHE_PATH or ~/.cache/debuginfod_client). Used after
 * --sysroot and the local build-id caches, by build-id only. libdebuginfod (and the
 * libcurl, GnuTLS and Kerberos under it: 18 ms of every start) is loaded only when a
 * lookup gets here with DEBUGINFOD_URLS set.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>
#include <gelf.h>

#include "lazylib.h"
#include "log.h"
#include "ptd.h"

#define DEBUGINFOD_SYMS(X)                                                                         \
	X(debuginfod_begin) X(debuginfod_end) X(debuginfod_find_debuginfo)                        \
	X(debuginfod_find_executable)
DEBUGINFOD_SYMS(LAZYLIB_STATIC_POINTER)
static const struct lazylib_sym debuginfod_syms[] = { DEBUGINFOD_SYMS(LAZYLIB_SYM) {} };
static struct lazylib lib_debuginfod = {
	"libdebuginfod.so.1", "libdebuginfod1", "DEBUGINFOD_URLS", debuginfod_syms,
};

/* A client is not to be shared between threads: one per lookup, under one lock so that
 * two decoder threads do not fetch the same file twice. */
static pthread_mutex_t debuginfod_lock = PTHREAD_MUTEX_INITIALIZER;

int ptd_debuginfod_find(bool debuginfo, const uint8_t *build_id, uint32_t size, char **path)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	char hex[2 * 64 + 1];
	debuginfod_client *c;
	uint32_t i;
	int fd;

	*path = NULL;
	if (!urls || !*urls || !size || size > 64)
		return -ENOSYS;
	if (lazylib_load(&lib_debuginfod))
		return -ENOSYS;	/* said once; the binary is looked for nowhere else */
	for (i = 0; i < size; i++)
		sprintf(hex + 2 * i, "%02x", build_id[i]);
	pthread_mutex_lock(&debuginfod_lock);
	c = sym_debuginfod_begin();
	if (!c) {
		pthread_mutex_unlock(&debuginfod_lock);
		return -ENOMEM;
	}
	/* the hex form (length 0): as debuginfod-find passes it */
	if (debuginfo)
		fd = sym_debuginfod_find_debuginfo(c, (const unsigned char *)hex, 0, path);
	else
		fd = sym_debuginfod_find_executable(c, (const unsigned char *)hex, 0, path);
	sym_debuginfod_end(c);
	pthread_mutex_unlock(&debuginfod_lock);
	if (fd < 0) {
		dlog("debuginfod: %s %s: %s\n", debuginfo ? "debuginfo" : "executable", hex,
		     strerror(-fd));
		*path = NULL;
		return fd;
	}
	close(fd);
	vlog("debuginfod: %s %s -> %s\n", debuginfo ? "debuginfo" : "executable", hex, *path);
	return 0;
}

bool ptd_elf_has_symtab(const char *path)
{
	Elf_Scn *scn = NULL;
	bool found = false;
	GElf_Shdr shdr;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && !found && (scn = elf_nextscn(elf, scn)))
		found = gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB;
	elf_end(elf);
	close(fd);
	return found;
}
