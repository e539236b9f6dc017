/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A shared library loaded on first use (decoder/lazylib.c), not when ptbpf starts. The
 * libraries only some commands need (libcurl, libcrypto, libmicrohttpd, libsystemd,
 * libcyaml, libyaml, libdebuginfod, capstone) cost every other run their loading and
 * relocations: 25 ms of CPU for `ptbpf --version` when they were all linked. As
 * systemd's dlopen_many_sym_or_warn(): a library is a table of the functions ptbpf
 * calls, each through a pointer named sym_FUNCTION, all resolved by lazylib_load(),
 * which the code calls before the first of them. A library's table is an X-macro list:
 *
 *	#define CURL_SYMS(X) X(curl_easy_init) X(curl_easy_cleanup)
 *	CURL_SYMS(LAZYLIB_PROTOTYPE)			(its header)
 *	CURL_SYMS(LAZYLIB_POINTER)			(its .c file)
 *	static const struct lazylib_sym curl_syms[] = { CURL_SYMS(LAZYLIB_SYM) {} };
 *	struct lazylib lib_curl = { "libcurl.so.4", "libcurl4", "s3:// access", curl_syms };
 */
#ifndef PTBPF_LAZYLIB_H
#define PTBPF_LAZYLIB_H

struct lazylib_sym {
	const char *name;
	void **fn;		/* where its address goes */
};

struct lazylib {
	const char *soname;	/* as the linker would have recorded it: "libcurl.so.4" */
	const char *package;	/* the Debian package that ships it, for the error */
	const char *purpose;	/* what needs it, for the error: "s3:// access" */
	const struct lazylib_sym *syms;	/* ends with { NULL } */
	int state;		/* 0 not tried, 1 loaded, else the negative errno */
};

#define LAZYLIB_PROTOTYPE(fn) extern __typeof__(fn) *sym_##fn;
#define LAZYLIB_POINTER(fn) __typeof__(fn) *sym_##fn;
#define LAZYLIB_STATIC_POINTER(fn) static __typeof__(fn) *sym_##fn;	/* one file's library */
#define LAZYLIB_SYM(fn) { #fn, (void **)&sym_##fn },

/*
 * Load the library and every function of its table, once (thread-safe; later calls
 * cost one atomic load). 0, or -ENOENT when it or one of its functions is missing: the
 * first failure says so on one line naming the package to install.
 */
int lazylib_load(struct lazylib *lib);

#endif /* PTBPF_LAZYLIB_H */
