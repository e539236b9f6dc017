# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The demo server is static: no dynamic loader to single-step through at start-up.
TARGET_LDFLAGS_demo_server := -static
