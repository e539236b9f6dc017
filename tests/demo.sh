#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make demo`: until the capture path lands, show what this host can do.
set -u
: "${PTBPF:=build/ptbpf}"
exec "$PTBPF" doctor
