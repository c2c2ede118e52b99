#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# scripts/kernels.sh without ../shared: which packages it asks
# fetch-kernel.sh for, from which suite, on a bookworm and on a trixie host,
# and that the set it gathers gives every role, twolists from a 7.x kernel.
# Mocked: fetch-kernel.sh (a stub in a copy of the tree that records its
# RERAND_SUITE and package and writes an empty kernel named as Debian's
# packages resolve today) and the host's release (RERAND_HOST_SUITE): the
# real fetch is scripts/fetch-kernel.sh's, run by make check itself.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# tree HOST: a copy of kernels.sh beside the stub, no ../shared beside it.
tree() {
	local t=$tmp/$1/rerand
	mkdir -p "$t/scripts"
	cp "$top/scripts/kernels.sh" "$t/scripts/"
	cat >"$t/scripts/fetch-kernel.sh" <<'STUB'
#!/bin/bash
echo "${RERAND_SUITE:-host} $1" >>"$RERAND_KERNEL_CACHE/asked"
case "$1" in
linux-image-cloud-amd64) v=6.1.0-57-cloud-amd64; [ "$RERAND_SUITE" = trixie-backports ] && v=7.3.4+deb13-cloud-amd64 ;;
linux-image-amd64) v=6.1.0-57-amd64 ;;
linux-image-6.12-cloud-amd64) v=6.12.118+deb12-cloud-amd64 ;;
*) echo "stub: unknown $1" >&2; exit 1 ;;
esac
d=$RERAND_KERNEL_CACHE/linux-image-$v
mkdir -p "$d" && echo "$v" >"$d/vmlinuz-$v" && : >"$d/config-$v" && echo "linux-image-$v 1 0" >"$d/PACKAGE"
echo "$d/vmlinuz-$v"
STUB
	chmod +x "$t/scripts/fetch-kernel.sh"
	mkdir -p "$tmp/$1/cache"
	echo "$t"
}

want_bookworm="host linux-image-cloud-amd64
host linux-image-amd64
host linux-image-6.12-cloud-amd64
trixie-backports linux-image-cloud-amd64"
want_trixie="bookworm-security linux-image-cloud-amd64
bookworm-security linux-image-amd64
bookworm-security linux-image-6.12-cloud-amd64
trixie-backports linux-image-cloud-amd64"
for host in bookworm trixie; do
	t=$(tree "$host")
	c=$tmp/$host/cache
	dir=$(RERAND_KERNELS="" RERAND_HOST_SUITE=$host RERAND_KERNEL_CACHE=$c "$t/scripts/kernels.sh" 2>"$c/err")
	rc=$?
	want=want_$host
	check "$host host: asks for Debian 12's three kernels from $( [ $host = bookworm ] && echo "its own apt" || echo bookworm-security) and the cloud kernel of trixie-backports (rc $rc)" \
		test "$(cat "$c/asked" 2>/dev/null)" = "${!want}"
	[ -n "$dir" ] && [ -s "$dir/SHA256SUMS" ] || { nok "$host host: no kernel set with SHA256SUMS: $(tail -n 1 "$c/err")"; continue; }
	for role in cloud61:vmlinuz-6.1.0-57-cloud-amd64 generic61:vmlinuz-6.1.0-57-amd64 \
		cloud612:vmlinuz-6.12.118+deb12-cloud-amd64 twolists:vmlinuz-7.3.4+deb13-cloud-amd64 \
		newest:vmlinuz-7.3.4+deb13-cloud-amd64; do
		got=$(RERAND_KERNELS="" RERAND_HOST_SUITE=$host RERAND_KERNEL_CACHE=$c "$t/scripts/kernels.sh" pick "${role%%:*}" 2>&1)
		check "$host host: pick ${role%%:*} is ${role#*:} (got ${got##*/})" test "${got##*/}" = "${role#*:}"
	done
done
# A suite the stub cannot serve is the fetch's failure, named.
t=$(tree bad)
err=$(RERAND_KERNELS="" RERAND_FETCH_KERNELS="forky:linux-image-nosuch" RERAND_KERNEL_CACHE=$tmp/bad/cache \
	"$t/scripts/kernels.sh" 2>&1 >/dev/null)
rc=$?
check "an unknown package fails naming it and its suite (rc $rc: ${err##*$'\n'})" \
	eval '[ $rc -ne 0 ] && [[ $err == *"cannot fetch linux-image-nosuch of forky"* ]]'
done_
