# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make install`: the binary, the daemon's systemd unit and its example configuration
# (never over an existing one). DESTDIR for staging; PREFIX for the binary.
PREFIX ?= /usr/local
UNITDIR ?= /etc/systemd/system
SYSCONFDIR ?= /etc
# The unit's ReadWritePaths=: systemd refuses to start a unit (226/NAMESPACE) whose
# ReadWritePaths= does not exist, and ProtectSystem=strict keeps the daemon from making it.
SPOOLDIR ?= /var/spool/ptbpf

.PHONY: install
install: $(PTBPF)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX)/bin/ptbpf)
	$(Q)install -D -m 0755 $(PTBPF) $(DESTDIR)$(PREFIX)/bin/ptbpf
	$(Q)install -d -m 0755 $(DESTDIR)$(UNITDIR)
	$(Q)sed 's|@BINDIR@|$(PREFIX)/bin|g' user/daemon/ptbpf.service.in > $(DESTDIR)$(UNITDIR)/ptbpf.service
	$(Q)chmod 0644 $(DESTDIR)$(UNITDIR)/ptbpf.service
	$(Q)install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/ptbpf $(DESTDIR)$(SYSCONFDIR)/ptbpf/rules.d
	$(Q)install -d -m 0700 $(DESTDIR)$(SPOOLDIR)
	$(Q)[ -e $(DESTDIR)$(SYSCONFDIR)/ptbpf/ptbpf.yaml ] || \
		install -m 0644 user/daemon/ptbpf.yaml $(DESTDIR)$(SYSCONFDIR)/ptbpf/ptbpf.yaml
