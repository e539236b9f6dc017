#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# run.sh [KERNEL...]: the kernel matrix. Runs guest.sh on each KERNEL and prints, per
# kernel, its checks, then its boot and run times (host clock), then a summary.
#   KERNEL: bullseye (Linux 5.10), bookworm (6.1), trixie (6.12): Debian's generic
#   amd64 kernel of that suite, fetched once (fetch.sh) and booted in QEMU (boot.sh);
#   host: the running kernel, without QEMU. Default: bullseye bookworm trixie host.
# Exit 0 when every kernel passed, 1 when a check failed, 2 when a kernel could not be
# fetched or booted. Env: BUILD (default build), PYTHON, KERNEL_* (boot.sh),
# PTBPF_KERNEL_CACHE (fetch.sh). `make test-kernels KERNELS="bookworm"` runs a subset.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top" || exit 2
export BUILD=${BUILD:-$top/build} PYTHON=${PYTHON:-python3}
[ -x "$BUILD/ptbpf" ] && [ -x "$BUILD/kernels/kcore_check" ] ||
	{ echo "run.sh: build first (make -j2)" >&2; exit 2; }
[ $# -gt 0 ] || set -- bullseye bookworm trixie host
# A guest sees the host's / over 9p but mounts its own /tmp, /run, /dev, /proc and /sys
# (boot.sh): a tree or build there is not the guest's to run.
if [ "$*" != host ]; then
	for p in "$top" "$BUILD"; do
		case $(realpath -m "$p")/ in
		/tmp/* | /run/* | /dev/* | /proc/* | /sys/*)
			echo "run.sh: $p is on a path the QEMU guests mount their own (/tmp, /run," \
				"/dev, /proc, /sys): clone or build elsewhere, or run KERNELS=host" >&2
			exit 2
			;;
		esac
	done
fi
OUT=$(mktemp -d "${TMPDIR:-/tmp}/ptbpf-kernels.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
worst=0 summary=()
t_all=$EPOCHREALTIME

for k in "$@"; do
	echo "==== $k"
	t0=$EPOCHREALTIME
	if [ "$k" = host ]; then
		"$here/guest.sh"
		rc=$? times="boot - run $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1fs", b - a }')"
		release=$(uname -r)
	else
		line=$("$here/fetch.sh" "$k" | tail -1)
		kdir=${line#* }
		if [ -z "$line" ] || [ ! -d "$kdir" ]; then
			summary+=("$k: not fetched")
			worst=2
			continue
		fi
		release=$(basename "$(ls "$kdir"/boot/vmlinuz-* | head -1)" | sed 's/^vmlinuz-//')
		times=$("$here/boot.sh" "$kdir" "$OUT/$k" -- env BUILD="$BUILD" PYTHON="$PYTHON" \
			"$here/guest.sh")
		rc=$?
		[ -f "$OUT/$k/output" ] && cat "$OUT/$k/output"
	fi
	echo "---- $k ($release): $times, exit $rc"
	case $rc in
	0) summary+=("$k ($release): passed; $times") ;;
	125) summary+=("$k ($release): did not boot; $times"); worst=2 ;;
	*) summary+=("$k ($release): FAILED; $times"); [ $worst = 2 ] || worst=1 ;;
	esac
done
echo "==== kernel matrix ($(awk -v a="$t_all" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0fs", b - a }') in all)"
printf '  %s\n' "${summary[@]}"
exit $worst
