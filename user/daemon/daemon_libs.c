// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The daemon's libraries, loaded on first use (daemon_libs.h). */
#include "daemon_libs.h"

CYAML_SYMS(LAZYLIB_POINTER)
YAML_SYMS(LAZYLIB_POINTER)
SYSTEMD_SYMS(LAZYLIB_POINTER)
MHD_SYMS(LAZYLIB_POINTER)

static const struct lazylib_sym cyaml_syms[] = { CYAML_SYMS(LAZYLIB_SYM) {} };
static const struct lazylib_sym yaml_syms[] = { YAML_SYMS(LAZYLIB_SYM) {} };
static const struct lazylib_sym systemd_syms[] = { SYSTEMD_SYMS(LAZYLIB_SYM) {} };
static const struct lazylib_sym mhd_syms[] = { MHD_SYMS(LAZYLIB_SYM) {} };

struct lazylib lib_cyaml = { "libcyaml.so.1", "libcyaml1", "the configuration", cyaml_syms };
struct lazylib lib_yaml = { "libyaml-0.so.2", "libyaml-0-2", "the configuration", yaml_syms };
struct lazylib lib_systemd = { "libsystemd.so.0", "libsystemd0", "the daemon", systemd_syms };
struct lazylib lib_microhttpd = {
	"libmicrohttpd.so.12", "libmicrohttpd12", "the HTTP server", mhd_syms,
};
