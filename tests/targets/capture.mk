# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Static: the capture tests single-step it from its first instruction.
TARGET_LDFLAGS_cap_chain := -static
