// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Libraries loaded on first use (include/lazylib.h). Never closed: a loaded library
 * lives as long as the process, as a linked one would.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "lazylib.h"
#include "log.h"

static pthread_mutex_t lazylib_lock = PTHREAD_MUTEX_INITIALIZER;

static int lazylib_open(struct lazylib *lib)
{
	const struct lazylib_sym *s;
	void *h;

	h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		elog("%s needs %s: %s: install %s\n", lib->purpose, lib->soname, dlerror(),
		     lib->package);
		return -ENOENT;
	}
	for (s = lib->syms; s->name; s++) {
		*s->fn = dlsym(h, s->name);
		if (!*s->fn) {
			elog("%s needs %s: %s has no %s: install %s\n", lib->purpose, lib->soname,
			     lib->soname, s->name, lib->package);
			/* no function of a half-loaded library is ever called */
			for (s = lib->syms; s->name; s++)
				*s->fn = NULL;
			return -ENOENT;
		}
	}
	return 1;
}

int lazylib_load(struct lazylib *lib)
{
	int state = __atomic_load_n(&lib->state, __ATOMIC_ACQUIRE);

	if (!state) {
		pthread_mutex_lock(&lazylib_lock);
		state = lib->state;
		if (!state) {
			state = lazylib_open(lib);
			__atomic_store_n(&lib->state, state, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&lazylib_lock);
	}
	return state > 0 ? 0 : state;
}
