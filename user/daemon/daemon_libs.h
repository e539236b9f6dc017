/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's libraries, loaded on first use (include/lazylib.h): libcyaml and libyaml
 * (the configuration: config_load() loads them), libsystemd (sd_notify: the daemon
 * loads it at start) and libmicrohttpd (the metrics endpoint, and `decode --open`).
 * Linked, they cost every `ptbpf decode` their start-up. Call them as sym_NAME after
 * lazylib_load() of their library has returned 0.
 */
#ifndef PTBPF_DAEMON_LIBS_H
#define PTBPF_DAEMON_LIBS_H

#include <cyaml/cyaml.h>
#include <microhttpd.h>
#include <systemd/sd-daemon.h>
#include <yaml.h>

#include "lazylib.h"

#define CYAML_SYMS(X) X(cyaml_load_file) X(cyaml_free) X(cyaml_mem) X(cyaml_strerror)
#define YAML_SYMS(X)                                                                               \
	X(yaml_parser_initialize) X(yaml_parser_set_input_file) X(yaml_parser_parse)              \
	X(yaml_parser_delete) X(yaml_event_delete)
#define SYSTEMD_SYMS(X) X(sd_notify) X(sd_watchdog_enabled)
#define MHD_SYMS(X)                                                                                \
	X(MHD_start_daemon) X(MHD_stop_daemon) X(MHD_create_response_from_buffer)                  \
	X(MHD_create_response_from_fd64) X(MHD_add_response_header) X(MHD_queue_response)         \
	X(MHD_destroy_response)

CYAML_SYMS(LAZYLIB_PROTOTYPE)
YAML_SYMS(LAZYLIB_PROTOTYPE)
SYSTEMD_SYMS(LAZYLIB_PROTOTYPE)
MHD_SYMS(LAZYLIB_PROTOTYPE)
extern struct lazylib lib_cyaml, lib_yaml, lib_systemd, lib_microhttpd;

#endif /* PTBPF_DAEMON_LIBS_H */
