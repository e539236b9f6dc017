#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# fetch.sh SUITE... : download and unpack the newest generic amd64 kernel of each Debian
# suite (bullseye: 5.10, bookworm: 6.1, trixie: 6.12) into the cache, and print one line
# per kernel: "SUITE DIR" (DIR holds boot/vmlinuz-* and lib/modules/*).
#
# Only Debian's archive is used, through `apt-get download` with an apt configuration of
# our own (a directory in the cache naming just that suite), so the host's apt setup is
# neither read nor changed. The generic images, not -cloud-amd64: those lack 9p.
# Cache: $PTBPF_KERNEL_CACHE (default ~/.cache/ptbpf/kernels); a kernel already there is
# not downloaded again. The suite's package index is refreshed once a day.
set -euo pipefail

CACHE=${PTBPF_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ptbpf/kernels}
MIRROR=${PTBPF_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

die() { echo "fetch.sh: $*" >&2; exit 2; }
[ $# -ge 1 ] || die "usage: fetch.sh SUITE... (bullseye bookworm trixie)"
[ -r "$KEYRING" ] || die "no $KEYRING (apt-get install debian-archive-keyring)"

# apt options that put every file apt reads or writes under $1
apt_opts() {
	local a=$1
	echo "-o Dir::Etc=$a/etc -o Dir::Etc::sourcelist=$a/etc/sources.list" \
	     "-o Dir::Etc::sourceparts=$a/etc/sources.list.d -o Dir::Etc::preferencesparts=$a/etc/none" \
	     "-o Dir::State=$a/state -o Dir::State::status=$a/state/status -o Dir::Cache=$a/cache" \
	     "-o Dir::Etc::trusted=$KEYRING -o Dir::Etc::trustedparts=$a/etc/none" \
	     "-o APT::Architecture=amd64 -o APT::Architectures::=amd64 -o Acquire::Languages=none" \
	     "-o Debug::NoLocking=1 -o APT::Sandbox::User=root"
}

fetch_suite() {
	local suite=$1 a=$CACHE/apt/$1 opts pkg deb dir
	mkdir -p "$a"/etc/sources.list.d "$a"/etc/none "$a"/state/lists/partial \
		 "$a"/cache/archives/partial
	: > "$a/state/status"
	echo "deb [signed-by=$KEYRING] $MIRROR $suite main" > "$a/etc/sources.list"
	opts=$(apt_opts "$a")
	# shellcheck disable=SC2086
	if [ -z "$(find "$a/state/lists" -name '*_Packages*' -mmin -1440 2>/dev/null)" ]; then
		apt-get $opts -q update >&2 || die "$suite: apt-get update failed (is $MIRROR reachable?)"
	fi
	# the metapackage names the suite's current kernel: linux-image-amd64 -> linux-image-X-amd64
	# shellcheck disable=SC2086
	pkg=$(apt-cache $opts depends linux-image-amd64 | awk '$1=="Depends:" && $2 ~ /^linux-image-[0-9].*-amd64$/ {print $2; exit}')
	[ -n "$pkg" ] || die "$suite: no linux-image-*-amd64 behind linux-image-amd64"
	dir=$CACHE/$pkg
	if [ ! -d "$dir" ]; then
		mkdir -p "$CACHE/debs"
		deb=$(ls "$CACHE/debs/${pkg}_"*.deb 2>/dev/null | head -1 || true)
		if [ -z "$deb" ]; then
			# shellcheck disable=SC2086
			(cd "$CACHE/debs" && apt-get $opts -q download "$pkg" >&2) ||
				die "$suite: apt-get download $pkg failed"
			deb=$(ls "$CACHE/debs/${pkg}_"*.deb | head -1)
		fi
		rm -rf "$dir.tmp"
		dpkg-deb -x "$deb" "$dir.tmp" && mv "$dir.tmp" "$dir"
	fi
	echo "$suite $dir"
}

for s in "$@"; do
	fetch_suite "$s"
done
