#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# deps/ensure.sh build|test|kernels: checks what deps/packages lists for that set (test
# and kernels include build). Nothing missing: silent, exit 0. On Debian or Ubuntu as root: one
# line naming what it installs, then apt-get installs it. Elsewhere, or not root:
# prints the exact command to run and exits 2.
set -u
here=$(cd "$(dirname "$0")" && pwd)
want=${1:-build}
case $want in build|test|kernels) ;; *) echo "usage: $0 build|test|kernels" >&2; exit 2 ;; esac

have() {
	local kind=${1%%:*} what=${1#*:}
	case $kind in
	cmd) PATH=$PATH:/usr/sbin:/sbin command -v "$what" >/dev/null 2>&1 ;;
	pc) command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "$what" ;;
	h) compgen -G "/usr/include/$what" >/dev/null || compgen -G "/usr/include/*/$what" >/dev/null ;;
	f) compgen -G "$what" >/dev/null ;;
	*) echo "deps/packages: unknown check '$1'" >&2; return 1 ;;
	esac
}

missing() {
	local set pkg check
	while read -r set pkg check; do
		case $set in ''|'#'*) continue ;; esac
		[ "$set" = build ] || [ "$set" = "$want" ] || continue
		have "$check" || printf '%s\n' "$pkg"
	done <"$here/packages"
}

pkgs=$(missing | tr '\n' ' ')
pkgs=${pkgs% }
[ -z "$pkgs" ] && exit 0

debian_like=0
if [ -r /etc/os-release ]; then
	. /etc/os-release
	case " ${ID:-} ${ID_LIKE:-} " in *" debian "*|*" ubuntu "*) debian_like=1 ;; esac
fi
cmd="apt-get install -y --no-install-recommends $pkgs"
if [ "$debian_like" != 1 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ptbpf: missing build dependencies (Debian package names): $pkgs;" \
	     "install your distribution's equivalents" >&2
	exit 2
fi
if [ "$(id -u)" != 0 ]; then
	echo "ptbpf: missing packages: $pkgs; install them as root: sudo apt-get update && sudo $cmd" >&2
	exit 2
fi

echo "ptbpf: installing the packages the $want needs: $pkgs" >&2
log=$(mktemp "${TMPDIR:-/tmp}/ptbpf-apt.XXXXXX")
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt or dpkg (unattended-upgrades) instead of failing on its lock.
if ! { apt-get -o DPkg::Lock::Timeout=300 update && \
       apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends $pkgs; } >"$log" 2>&1; then
	tail -n 5 "$log" >&2
	echo "ptbpf: apt-get failed (full log: $log); run: apt-get update && $cmd" >&2
	exit 2
fi
rm -f "$log"
still=$(missing | tr '\n' ' ')
if [ -n "$still" ]; then
	echo "ptbpf: still missing after apt-get: $still(deps/packages names a check this system does not meet)" >&2
	exit 2
fi
