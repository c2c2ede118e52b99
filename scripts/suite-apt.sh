#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Run apt-cache or apt-get against another Debian suite's archive than the
# machine's own, without touching the machine's apt configuration:
#
#   scripts/suite-apt.sh SUITE apt-cache ARGS...
#   scripts/suite-apt.sh SUITE apt-get download PACKAGE...
#
# A temporary sources list ("deb [signed-by=KEYRING] MIRROR SUITE main") with
# its own lists, cache, an empty dpkg status and no pins, kept in
# $RERAND_APT_CACHE (default ~/.cache/rerand-e2e/apt-SUITE) and refreshed with
# `apt-get update` when older than a day.  apt checks the suite's InRelease
# against the archive keyring ($RERAND_APT_KEYRING, default
# /usr/share/keyrings/debian-archive-keyring.gpg): a suite the keyring does
# not verify is an error naming the suite and the keyring, never a fallback
# to an unchecked index.  `apt-get download` then checks each .deb against
# that signed index, as scripts/fetch-kernel.sh relies on.
# $RERAND_APT_MIRROR (default $RRS_MIRROR or deb.debian.org) is the mirror;
# a SUITE-security suite comes from the security archive
# ($RERAND_APT_SECURITY_MIRROR, default deb.debian.org/debian-security),
# signed by the same keyring: bookworm serves its 6.12 kernel only there.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 SUITE apt-cache|apt-get ARGS..." >&2; exit 2; }
suite=$1; shift
case "$1" in apt-cache | apt-get) ;; *) echo "suite-apt: $1: only apt-cache and apt-get" >&2; exit 2 ;; esac
mirror=${RERAND_APT_MIRROR:-${RRS_MIRROR:-http://deb.debian.org/debian}}
[[ $suite != *-security ]] || mirror=${RERAND_APT_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
keyring=${RERAND_APT_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
dir=${RERAND_APT_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/rerand-e2e/apt-$suite}
die() { echo "suite-apt: $suite: $*" >&2; exit 1; }

[ -r "$keyring" ] || die "$keyring: no archive keyring (apt-get install debian-archive-keyring)"
mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/etc/sources.list.d" "$dir/etc/preferences.d"
printf 'deb [signed-by=%s] %s %s main\n' "$keyring" "$mirror" "$suite" >"$dir/sources.list.new"
cmp -s "$dir/sources.list.new" "$dir/sources.list" 2>/dev/null || rm -f "$dir/updated"
mv "$dir/sources.list.new" "$dir/sources.list"
: >>"$dir/status"
opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=$dir/etc/sources.list.d"
	-o "Dir::Etc::Preferences=$dir/etc/preferences" -o "Dir::Etc::PreferencesParts=$dir/etc/preferences.d"
	-o "Dir::State::Lists=$dir/lists" -o "Dir::State::status=$dir/status"
	-o "Dir::Cache=$dir/cache" -o "APT::Architecture=amd64" -o "APT::Architectures::=amd64"
	-o "Debug::NoLocking=1")
# The cache is the caller's (root's home under make check): apt's _apt
# sandbox user cannot write there, and would only warn and go on as root.
[ "$(id -u)" -ne 0 ] || opts+=(-o "APT::Sandbox::User=root")

# One update at a time per suite (parallel suites, clones), and none while
# another process reads the lists: a reader holds the lock shared until its
# apt-cache or apt-get exits (the exec keeps fd 9), an update holds it
# exclusive.  Without the shared hold, an update one clone started
# replaced the lists under another's apt-cache, which then found no
# libssl3 in bookworm (5 Dec 2026).
stale() { [ -z "$(find "$dir/updated" -mmin -1440 2>/dev/null)" ]; }
exec 9>"$dir/.lock"
flock -s 9
if stale; then
	flock -u 9
	flock 9
fi
if stale; then
	echo "suite-apt: apt-get update for $suite from $mirror (signed-by $keyring)" >&2
	if ! apt-get "${opts[@]}" update -q >"$dir/update.log" 2>&1 ||
		grep -qE '^(W|E): ' "$dir/update.log"; then
		grep -E '^(W|E): ' "$dir/update.log" >&2 || tail -n 5 "$dir/update.log" >&2
		die "apt-get update failed or the InRelease did not verify against $keyring (log: $dir/update.log)"
	fi
	ls "$dir/lists/"*"_dists_${suite}_InRelease" >/dev/null 2>&1 ||
		die "no verified InRelease of $suite from $mirror in $dir/lists"
	ls "$dir/lists/"*"_dists_${suite}_main_binary-amd64_Packages"* >/dev/null 2>&1 ||
		die "no Packages index of $suite main amd64 in $dir/lists"
	touch "$dir/updated"
fi
flock -s 9
exec "$@" "${opts[@]}"
