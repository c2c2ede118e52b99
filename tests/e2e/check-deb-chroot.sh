#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The package builds where Debian builds packages: a root holding only the
# essential packages, build-essential and debian/control's Build-Depends.
#
# short (make check, about a minute): the unit tests dh_auto_test runs, run
# here as debian/rules runs them (no test kernels) but with PATH holding only
# the programs of those packages and their dependencies (dpkg -L of each,
# as installed on this host).  Every binary must pass, and say SKIP no more
# often than with this host's whole PATH: a tool the tests run that
# Build-Depends does not name shows up as a failure or an extra skip, as it
# would in a clean build root.  So that this cannot pass by building a PATH
# that hides nothing or runs nothing: the PATH must lack a tool this host has
# (qemu-system-x86_64) and hold lz4 and zstd only through Build-Depends, and
# test_readers must fail with lz4 and zstd taken out of it.
#
# long (make check-long, minutes each): the real thing, scripts/deb-chroot.sh
# for bookworm and trixie (debootstrap --variant=buildd, apt-get build-dep,
# dpkg-buildpackage -b with its tests, the release's own lintian --pedantic);
# each .deb must put the units where that release's systemd.pc says.
set -u
. "$(dirname "$0")/lib.sh"
what=${1:-short}
case "$what" in short|long) ;; *) echo "usage: $0 short|long" >&2; exit 2 ;; esac
cd "$E2E_TOP"

# installed_of NAME: NAME if installed, else the installed package that
# provides it (debhelper-compat is debhelper's); nothing when neither.
# From one dpkg-query of every installed package (apt-cache is slow here).
installed_of() {
	[ -n "${inst_list:-}" ] || inst_list=$(dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Provides}\n' |
		awk -F'|' '$1 ~ /^ii/ { print $2 "|" $3 }')
	echo "$inst_list" | awk -F'|' -v n="$1" '
		$1 == n { print $1; found = 1; exit }
		{ k = split($2, pr, /, */); for (i = 1; i <= k; i++) { sub(/ .*/, "", pr[i]); if (pr[i] == n && !prov) prov = $1 } }
		END { if (!found && prov) { print prov; found = 1 } exit !found }'
}

# build_deps: debian/control's Build-Depends, one entry a line, the
# alternatives of an entry joined by | (parsed by dpkg's own Dpkg::Deps).
build_deps() {
	perl -MDpkg::Control::Info -MDpkg::Deps -e '
		my $src = Dpkg::Control::Info->new("debian/control")->get_source;
		my $d = deps_parse($src->{"Build-Depends"}, reduce_arch => 1, build_dep => 1)
			or die "debian/control: Build-Depends does not parse\n";
		for my $x ($d->get_deps) {
			my @alt = $x->isa("Dpkg::Deps::OR") ? $x->get_deps : ($x);
			print join("|", map { $_->{package} } @alt), "\n";
		}'
}

# closure PKG...: PKG... and everything they depend on (Depends,
# Pre-Depends, recursively) as installed here, one a line.
closure() {
	apt-cache depends --recurse --installed --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances "$@" | grep -v '^[[:space:]<]' | sed 's/:amd64$//' | sort -u
}

# make_path DIR EXCLUDE...: DIR filled with links to every program in
# */bin and */sbin of the essential packages, build-essential and the
# Build-Depends (each entry's first installed alternative), with their
# dependencies, less the Build-Depends EXCLUDE... (as if debian/control did
# not name them).  Fails naming a Build-Depends entry this host lacks.
make_path() {
	local dir=$1 e alt p pkgs=() closure
	shift
	for e in $(build_deps); do
		p=""
		for alt in ${e//|/ }; do
			p=$(installed_of "$alt") && break
		done
		[ -n "$p" ] || { echo "Build-Depends entry $e: not installed on this host (apt-get build-dep .)"; return 1; }
		case " $* " in *" $p "*) continue ;; esac
		pkgs+=("$p")
	done
	pkgs+=(build-essential $(dpkg-query -W -f='${Essential} ${Package}\n' | awk '$1 == "yes" { print $2 }'))
	closure=$(closure "${pkgs[@]}")
	mkdir -p "$dir"
	local f progs=()
	# One dpkg -L for all (it lists what it knows and complains of the rest).
	while read -r f; do
		[ -x "$f" ] && [ ! -d "$f" ] && progs+=("$f")
	done < <(dpkg -L $closure 2>/dev/null | grep -E '^(/usr)?/s?bin/[^/]+$' | sort -u)
	[ ${#progs[@]} -gt 0 ] || { echo "no programs in the packages of the Build-Depends"; return 1; }
	ln -sf -t "$dir" -- "${progs[@]}"
}

# run_units PATHDIR OUTDIR [BIN...]: each unit binary (default: all) as
# dh_auto_test runs it, with PATH=PATHDIR; TAP in OUTDIR/NAME.tap, exit
# status in OUTDIR/NAME.rc.
run_units() {
	local pathdir=$1 out=$2 t
	shift 2
	mkdir -p "$out"
	[ $# -gt 0 ] || set -- "$E2E_TOP"/build/tests/test_*
	for t in "$@"; do
		case $t in *.d) continue ;; esac
		[ -x "$t" ] || continue
		env -i PATH="$pathdir" HOME="$out" TMPDIR="$out" LANG=C.UTF-8 "$t" >"$out/${t##*/}.tap" 2>&1
		echo $? >"$out/${t##*/}.rc"
	done
}

short() {
	local dir=$E2E_BUILD/deb-chroot-short t name extra
	rm -rf "$dir"
	mkdir -p "$dir"
	ls "$E2E_TOP"/build/tests/test_* >/dev/null 2>&1 ||
		{ echo "not ok - deb-chroot: no unit test binaries in build/tests (make unit-tests)"; return; }
	local err
	if ! err=$(make_path "$dir/bin"); then
		echo "not ok - deb-chroot: $err"; return
	fi
	# Not vacuous: the PATH hides what a build root would not have, and
	# has what only the Build-Depends bring.
	if command -v qemu-system-x86_64 >/dev/null && [ -e "$dir/bin/qemu-system-x86_64" ]; then
		echo "not ok - deb-chroot: the Build-Depends PATH holds qemu-system-x86_64: it hides nothing"; return
	fi
	command -v qemu-system-x86_64 >/dev/null ||
		{ echo "not ok - deb-chroot: qemu-system-x86_64 missing on this host (scripts/deps.sh check): nothing to hide"; return; }
	echo "ok - deb-chroot: PATH of the essential packages, build-essential and Build-Depends: $(ls "$dir/bin" | wc -l) programs, no qemu-system-x86_64"

	# The check must see a missing tool: without lz4 and zstd (which
	# only Build-Depends bring), test_readers must fail.
	make_path "$dir/bin-nolz" lz4 zstd >/dev/null || { echo "not ok - deb-chroot: PATH without lz4 and zstd"; return; }
	if [ -e "$dir/bin-nolz/lz4" ] || [ -e "$dir/bin-nolz/zstd" ] || [ ! -e "$dir/bin/lz4" ] || [ ! -e "$dir/bin/zstd" ]; then
		echo "not ok - deb-chroot: lz4 and zstd do not come from Build-Depends alone (lz4, zstd: with $(ls "$dir/bin" | grep -cxE 'lz4|zstd') of 2, without $(ls "$dir/bin-nolz" | grep -cxE 'lz4|zstd') of 2)"
	else
		run_units "$dir/bin-nolz" "$dir/nolz" "$E2E_TOP/build/tests/test_readers"
		if grep -q '^not ok .*lz4' "$dir/nolz/test_readers.tap" && grep -q '^not ok .*zstd' "$dir/nolz/test_readers.tap" &&
			[ "$(cat "$dir/nolz/test_readers.rc")" != 0 ]; then
			echo "ok - deb-chroot: without lz4 and zstd in Build-Depends test_readers fails (the check sees a missing tool)"
		else
			echo "not ok - deb-chroot: test_readers passed with lz4 and zstd out of PATH: this check cannot see a missing tool"
		fi
	fi

	run_units "$dir/bin" "$dir/deps"
	for t in "$dir"/deps/*.tap; do
		name=$(basename "$t" .tap)
		if [ "$(cat "$dir/deps/$name.rc")" != 0 ] || grep -q '^not ok ' "$t"; then
			echo "not ok - deb-chroot: $name fails with only the Build-Depends' programs (exit $(cat "$dir/deps/$name.rc")):"
			grep -A3 '^not ok ' "$t" | head -n 12 | sed 's/^/#   /'
			continue
		fi
		if grep -qiE '^ok [^#]*# *skip' "$t"; then
			# The same binary with this host's PATH: skips beyond those are
			# tools the Build-Depends lack.
			run_units "$PATH" "$dir/full" "$E2E_TOP/build/tests/$name"
			extra=$(diff <(grep -iE '^ok [^#]*# *skip' "$dir/full/$name.tap") \
				<(grep -iE '^ok [^#]*# *skip' "$t") | sed -n 's/^> //p')
			if [ -n "$extra" ]; then
				echo "not ok - deb-chroot: $name skips more with only the Build-Depends' programs:"
				echo "$extra" | head -n 5 | sed 's/^/#   /'
					continue
			fi
		fi
		echo "ok - deb-chroot: $name: $(grep -c '^ok ' "$t") ok ($(grep -ciE '^ok [^#]*# *skip' "$t") skipped, as with the host's PATH) with only the Build-Depends' programs"
	done
	return 0
}

# long_suite SUITE: scripts/deb-chroot.sh SUITE; its .deb's units where
# the root's systemd.pc says (bookworm /lib, trixie /usr/lib).
long_suite() {
	local suite=$1
	local out=$E2E_TOP/build/deb-$suite want deb
	case $suite in bookworm) want=./lib/systemd/system/ ;; *) want=./usr/lib/systemd/system/ ;; esac
	if ! "$E2E_TOP/scripts/deb-chroot.sh" "$suite" >"$E2E_BUILD/deb-chroot-$suite.log" 2>&1; then
		echo "not ok - deb-chroot $suite: scripts/deb-chroot.sh failed (log: $E2E_BUILD/deb-chroot-$suite.log)"
		tail -n 15 "$E2E_BUILD/deb-chroot-$suite.log" | sed 's/^/#   /'
		return
	fi
	echo "ok - deb-chroot $suite: $(grep -E '^dh_auto_test: ' "$out/build.log" | tail -n 1)"
	echo "ok - deb-chroot $suite: lintian --pedantic: no error or warning ($(grep -cE '^[IPX]: ' "$out/lintian.txt") info/pedantic/experimental lines)"
	deb=$(ls "$out"/rerand_*_amd64.deb)
	if dpkg-deb -c "$deb" | awk '{ print $6 }' | grep -qx "${want}rerandd.service"; then
		echo "ok - deb-chroot $suite: rerandd.service in ${want#.}"
	else
		echo "not ok - deb-chroot $suite: rerandd.service not in ${want#.}:"
		dpkg-deb -c "$deb" | grep 'systemd/system/' | sed 's/^/#   /'
	fi
}

mkdir -p "$E2E_BUILD"
short
if [ "$what" = long ]; then
	long_suite bookworm
	long_suite trixie
fi
exit 0
