#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# boot.sh KDIR OUTDIR -- COMMAND [ARGS...]
#   Boots the kernel unpacked in KDIR (fetch.sh: boot/vmlinuz-*, {usr/,}lib/modules/*)
#   under QEMU and runs COMMAND there as root, in this directory, on the host's own files:
#   the host's / is mounted read-only over 9p under a tmpfs overlay (the guest may write
#   anywhere; nothing reaches the host), except OUTDIR, shared read-write. COMMAND's
#   stdout and stderr go to OUTDIR/output, its exit status to OUTDIR/status, the console
#   to OUTDIR/console.log (with them, each line stamped with the host's time). Exits with
#   COMMAND's status, 125 when the guest did not run it.
#   Prints one line of times, measured with the host's clock (the guest's runs slow
#   under TCG): "boot Xs run Ys total Zs".
# Env: PTBPF_KERNEL_CACHE (initramfs cache, as fetch.sh), KERNEL_MEM (MiB, 1024),
#      KERNEL_SMP (2), KERNEL_TIMEOUT (s, 1200), KERNEL_VERBOSE=1 (console on stderr).
set -euo pipefail

CACHE=${PTBPF_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ptbpf/kernels}
die() { echo "boot.sh: $*" >&2; exit 125; }
[ $# -ge 4 ] && [ "$3" = "--" ] || die "usage: boot.sh KDIR OUTDIR -- COMMAND [ARGS...]"
KDIR=$(readlink -f "$1") OUT=$(readlink -f "$2"); shift 3
for tool in qemu-system-x86_64 cpio depmod modprobe; do
	command -v $tool >/dev/null || die "no $tool (apt-get install qemu-system-x86 cpio kmod busybox-static)"
done
file -bL /bin/busybox 2>/dev/null | grep -q 'statically linked' ||
	die "/bin/busybox is missing or not static (apt-get install busybox-static)"

VMLINUZ=$(ls "$KDIR"/boot/vmlinuz-* 2>/dev/null | head -1)
[ -n "$VMLINUZ" ] || die "no boot/vmlinuz-* in $KDIR"
KVER=${VMLINUZ##*/vmlinuz-}
MODDIR=
for d in "$KDIR/lib/modules/$KVER" "$KDIR/usr/lib/modules/$KVER"; do [ -d "$d" ] && MODDIR=$d; done
[ -n "$MODDIR" ] || die "no modules for $KVER in $KDIR"
grep -qE '^CONFIG_9P_FS=[ym]' "$KDIR/boot/config-$KVER" ||
	die "$KVER has no 9p file system: use Debian's generic amd64 image, not -cloud-amd64"
mkdir -p "$OUT" && rm -f "$OUT/output" "$OUT/status" "$OUT/console.log"

# ---- the initramfs: busybox, the modules 9p and overlayfs need, /init (cached) ----
INITRD=$CACHE/initrd/$KVER-$(sha1sum "$0" | cut -c1-12).cpio.gz
if [ ! -f "$INITRD" ]; then
	T=$(mktemp -d "${TMPDIR:-/tmp}/ptbpf-initrd.XXXXXX")
	trap 'rm -rf "$T"' EXIT
	R=$T/root
	mkdir -p "$R"/{bin,dev,proc,sys,lower,upper,newroot,modules}
	cp /bin/busybox "$R/bin/busybox"
	# modprobe's dependency order, from a private depmod of the kernel's modules
	M=$T/m/lib/modules/$KVER
	mkdir -p "$M" && ln -s "$MODDIR/kernel" "$M/kernel"
	cp "$MODDIR"/modules.order "$MODDIR"/modules.builtin* "$M/"
	depmod -b "$T/m" "$KVER"
	for mod in virtio_pci 9pnet_virtio 9p overlay; do
		modprobe -d "$T/m" -S "$KVER" --show-depends "$mod"
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r ko; do
		name=$(basename "$ko"); name=${name%.xz}; name=${name%.zst}
		case $ko in
		*.xz) xz -dc "$ko" ;; *.zst) zstd -qdc "$ko" ;; *) cat "$ko" ;;
		esac > "$R/modules/$name"
		echo "$name" >> "$R/modules/order"
	done
	touch "$R/modules/order"
	cat > "$R/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
echo "PTBPF-KERNEL init"
for m in $(cat /modules/order); do insmod /modules/$m || echo "init: insmod $m failed"; done
OUT=; for a in $(cat /proc/cmdline); do case $a in ptbpf.out=*) OUT=${a#ptbpf.out=};; esac; done
O=trans=virtio,version=9p2000.L,msize=262144
off() { sync; poweroff -f; }
mount -t 9p -o $O,cache=loose,ro hostroot /lower || { echo "init: cannot mount the host root"; off; }
mount -t tmpfs -o mode=755 tmpfs /upper && mkdir -p /upper/u /upper/w
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w /newroot ||
	{ echo "init: overlay failed"; off; }
N=/newroot
mount -t proc proc $N/proc; mount -t sysfs sys $N/sys; mount -t devtmpfs dev $N/dev
mkdir -p $N/dev/pts $N/dev/shm; mount -t devpts devpts $N/dev/pts; mount -t tmpfs tmpfs $N/dev/shm
mount -t tmpfs tmpfs $N/run; mount -t tmpfs tmpfs $N/tmp
mount -t debugfs debugfs $N/sys/kernel/debug
mount -t tracefs tracefs $N/sys/kernel/tracing
mount -t bpf bpf $N/sys/fs/bpf
mount -t cgroup2 cgroup2 $N/sys/fs/cgroup
mkdir -p $N$OUT && mount -t 9p -o $O out $N$OUT || { echo "init: cannot mount $OUT"; off; }
echo "PTBPF-KERNEL start"
chroot $N /bin/sh $OUT/cmd.sh
echo "PTBPF-KERNEL end"
off
INIT
	chmod +x "$R/init"
	mkdir -p "$CACHE/initrd"
	(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD.tmp"
	mv "$INITRD.tmp" "$INITRD"
	rm -rf "$T"; trap - EXIT
fi

{
	echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb"
	printf 'cd %q || exit 1\n' "$PWD"
	printf 'ulimit -l unlimited\n'
	# the output also goes to the console, where each line gets the host's time
	printf '{ '; printf '%q ' "$@"; printf '</dev/null; echo $? > %q/status; } 2>&1 |\n' "$OUT"
	printf '\ttee %q/output > /dev/console\n' "$OUT"
} > "$OUT/cmd.sh"

# One host thread for all vCPUs (thread=single): with a thread per vCPU, a 6.12 guest
# panicked at boot now and then, RIP one byte into a jump its other vCPU had just patched
# in (__schedule+0x411, "e9 <03> 01 00 00": text_poke_bp()'s int3 handled after the poke
# was done), which real CPUs rule out and multi-threaded TCG did not here.
QEMU=(qemu-system-x86_64 -accel tcg,thread=single -cpu max -m "${KERNEL_MEM:-1024}" -smp "${KERNEL_SMP:-2}"
	-nographic -no-reboot -nic none -kernel "$VMLINUZ" -initrd "$INITRD"
	-append "console=ttyS0 panic=-1 loglevel=4 ptbpf.out=$OUT"
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$OUT,mount_tag=out,security_model=none,multidevs=remap"
	-pidfile "$OUT/qemu.pid")

# Lines of the console, each stamped with the host's clock.
t0=$EPOCHREALTIME
set +e
timeout -k 5 "${KERNEL_TIMEOUT:-1200}" "${QEMU[@]}" </dev/null 2>&1 | while IFS= read -r line; do
	line=${line%$'\r'}
	printf '%s %s\n' "$EPOCHREALTIME" "$line" >> "$OUT/console.log"
	[ -z "${KERNEL_VERBOSE:-}" ] || printf '%s\n' "$line" >&2
done
t1=$EPOCHREALTIME
set -e
mark() { awk -v m="$1" '$2 == "PTBPF-KERNEL" && $3 == m { print $1; exit }' "$OUT/console.log"; }
ts=$(mark start) te=$(mark end)
secs() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fs", b - a }' || echo "?"; }
echo "boot $(secs "$t0" "$ts") run $(secs "$ts" "$te") total $(secs "$t0" "$t1")"
if [ ! -f "$OUT/status" ]; then
	echo "boot.sh: $KVER did not run the command; the console's end:" >&2
	tail -n 25 "$OUT/console.log" | cut -d' ' -f2- >&2
	exit 125
fi
exit "$(cat "$OUT/status")"
