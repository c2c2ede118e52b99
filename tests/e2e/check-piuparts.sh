#!/bin/bash
# run-check: long only
# run-check: long timeout 10800
# SPDX-License-Identifier: GPL-2.0-only
# piuparts, Debian's install/remove/purge tester, on the package as Debian's
# builders make it (`make deb-chroot SUITE=...`), for bookworm and trixie
# (issue 38, point 8).  Real piuparts, real debootstrap from the mirror
# (RRS_MIRROR), nothing mocked.  `make check-piuparts` runs it alone.
#   install, then purge: piuparts' own verdict, with ONLY the leftovers that
#   Debian's own systemd-timesyncd leaves the same way in the same run
#   ignored (systemd's postinst makes /var/lib/private, /etc/vconsole.conf,
#   ...): each is checked to be a leftover of that baseline, so a file of
#   rerand's left behind still fails.
#   install, remove, install again (piuparts --install-remove-install).
#   the upgrade: the package of an earlier commit (scripts/old-deb.sh:
#   RRS_OLD_COMMIT, by default the last 0.1, built by that commit's own
#   deb-chroot.sh) in a local repository piuparts' chroot sees
#   (--bindmount, --extra-repo), so that its install-upgrade-purge test
#   installs it with apt-get, upgrades it to this tree's package from the
#   file, then purges and looks for leftovers (--no-install-purge-test:
#   the run above did that).
# Usage: check-piuparts.sh [short|long] (the same: both releases).
# RRP_SUITES: the releases (default bookworm trixie).  RRP_DEB_SUITE and
# RRP_OLD_DEB_SUITE (RRP_DEB_bookworm=PATH ...): other packages to test for
# SUITE than `make deb-chroot`'s and scripts/old-deb.sh's (a `make deb` of
# this host's release, say); each run says which it tested.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/tap.sh"
mirror=${RRS_MIRROR:-http://deb.debian.org/debian}
suites=${RRP_SUITES:-bookworm trixie}
plan $(( $(wc -w <<<"$suites") * 6 ))
command -v piuparts >/dev/null || { for s in $suites; do for i in 1 2 3 4 5 6; do nok "$s: piuparts is not installed (scripts/deps.sh check-long)"; done; done; exit 1; }
work=$(mktemp -d /tmp/rerand-piuparts.XXXXXX)
trap 'rm -rf "$work"' EXIT

# leftovers LOG: the "left files" lines of a piuparts log, one path a line
leftovers() {
	awk '/FAIL: Package purging left files on system:/ { s = 1; next }
	     s && /^  \// { sub(/^  /, ""); sub(/\t.*/, ""); sub(/ -> .*/, ""); print; next }
	     s { s = 0 }' "$1" | sort -u
}

for s in $suites; do
	out=$top/build/deb-$s
	v=RRP_DEB_$s; given=${!v:-}
	deb=${given:-$(ls -t "$out"/rerand_*_amd64.deb 2>/dev/null | head -n 1)}
	[ -z "$given" ] || echo "# $s: the package given by $v"
	if [ -z "$deb" ]; then
		make -s -C "$top" deb-chroot SUITE="$s" >"$work/deb-$s.log" 2>&1
		deb=$(ls -t "$out"/rerand_*_amd64.deb 2>/dev/null | head -n 1)
	fi
	if [ -z "$deb" ]; then
		for i in 1 2 3 4 5 6; do nok "$s: no package (make deb-chroot SUITE=$s: $(tail -n 1 "$work/deb-$s.log"))"; done
		continue
	fi
	echo "# $s: $deb"
	# the baseline: a Debian package with the same systemd dependency.
	# Its chroot, as debootstrap made it, is saved (-s) and every later
	# run of this release starts from it (-b), as piuparts.debian.org's
	# runs start from a base tarball: one debootstrap per release.
	tgz=$work/base-$s.tar.gz
	piuparts -d "$s" -m "$mirror" --no-upgrade-test -a --tmpdir "$work" -s "$tgz" systemd-timesyncd \
		>"$work/base-$s.log" 2>&1
	base=(-b "$tgz")
	[ -s "$tgz" ] || base=()
	leftovers "$work/base-$s.log" >"$work/base-$s.left"
	echo "# $s: systemd-timesyncd's own leftovers: $(tr '\n' ' ' <"$work/base-$s.left")"
	ign=()
	while read -r p; do ign+=(--ignore="$p"); done <"$work/base-$s.left"
	piuparts -d "$s" -m "$mirror" ${base[@]+"${base[@]}"} --no-upgrade-test --tmpdir "$work" ${ign[@]+"${ign[@]}"} "$deb" \
		>"$work/rr-$s.log" 2>&1
	rc=$?
	leftovers "$work/rr-$s.log" >"$work/rr-$s.left"
	check "$s: piuparts install and purge passes ($(basename "$deb"), exit $rc)" \
		grep -q 'PASS: All tests' "$work/rr-$s.log"
	[ "$rc" = 0 ] || grep -E 'FAIL|ERROR' "$work/rr-$s.log" | head -n 10 | sed 's/^/#   /'
	check "$s: rerand leaves no file after purge that systemd-timesyncd does not ($(tr '\n' ' ' <"$work/rr-$s.left"))" \
		test ! -s "$work/rr-$s.left"
	check "$s: the package's maintainer scripts ran (user rerand created, rerandd enabled)" \
		bash -c "grep -q \"Creating user 'rerand'\" '$work/rr-$s.log' && grep -q 'multi-user.target.wants/rerandd.service' '$work/rr-$s.log'"
	piuparts -d "$s" -m "$mirror" ${base[@]+"${base[@]}"} --no-upgrade-test --install-remove-install --tmpdir "$work" \
		${ign[@]+"${ign[@]}"} "$deb" >"$work/rri-$s.log" 2>&1
	check "$s: piuparts install, remove, install again passes (exit $?)" \
		grep -q 'PASS: All tests' "$work/rri-$s.log"
	# The upgrade from the earlier commit's package.
	v=RRP_OLD_DEB_$s; old=${!v:-}
	[ -z "$old" ] || echo "# $s: the earlier package given by $v"
	if [ -n "$old" ] || old=$("$top/scripts/old-deb.sh" "${RRS_OLD_COMMIT:-}" "$s" 2>"$work/old-$s.err"); then
		repo=$work/repo-$s
		mkdir -p "$repo" && cp "$old" "$repo/" &&
			(cd "$repo" && dpkg-scanpackages -m . /dev/null >Packages 2>/dev/null)
		ov=$(dpkg-deb -f "$old" Version) nv=$(dpkg-deb -f "$deb" Version)
		echo "# $s: upgrade from $old ($ov) to $(basename "$deb") ($nv)"
		check "$s: the earlier package $ov is older than this tree's $nv" dpkg --compare-versions "$nv" gt "$ov"
		piuparts -d "$s" -m "$mirror" ${base[@]+"${base[@]}"} --no-install-purge-test --bindmount "$repo" \
			--extra-repo "deb [trusted=yes] file://$repo ./" --tmpdir "$work" \
			${ign[@]+"${ign[@]}"} "$deb" >"$work/up-$s.log" 2>&1
		rc=$?
		# (piuparts says "Can't test upgrade" and passes when apt does not
		# know the old one: that is a failure here.)
		check "$s: piuparts installs $ov with apt-get, upgrades to $nv, purges: passes (exit $rc)" \
			grep -q 'PASS: Installation, upgrade and purging tests' "$work/up-$s.log"
		[ "$rc" = 0 ] || grep -E 'FAIL|ERROR|Can.t test' "$work/up-$s.log" | head -n 10 | sed 's/^/#   /'
	else
		nok "$s: no package of the earlier commit: $(tail -n 1 "$work/old-$s.err")"
		nok "$s: piuparts upgrade not run (no earlier package)"
	fi
	mkdir -p "$top/build/piuparts"
	cp "$work"/*-"$s".log "$top/build/piuparts/" 2>/dev/null
done
done_
