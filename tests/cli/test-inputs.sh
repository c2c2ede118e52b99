#!/bin/bash
# Inputs refused before they can hurt (issue 24, point 4):
#  - `rerand image` whose output is its input (same path, a hard link, a
#    symbolic link; --relocs and signing inputs too) is refused and the
#    kernel file is left byte for byte as it was;
#  - FIFOs, sockets and devices given as inputs are refused at once (a FIFO
#    used to hang `rerand inspect`), by every command that reads a file and
#    for the inputs other programs open by path (kexec's --initrd, sbsign's
#    key and certificates);
#  - `rerand load` refuses a command line the stage cannot boot (more than
#    4 memmap= regions, or an avoid table that overflows on this memory map)
#    before kexec runs.  kexec is a stand-in here (staging a kernel on this
#    host is forbidden); it records whether it was called at all.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
R=$top/build/rerand
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/lib/tap.sh"

# The kernel by role, not by build (scripts/kernels.sh: RERAND_KERNELS,
# ../shared/kernels or Debian's packages): Debian 12's 6.1 cloud kernel,
# whatever its build number that day.  None is a failure, never a skip.
kernel=$("$top/scripts/kernels.sh" pick cloud61 2>"$tmp/kernels.err") ||
	bail "a 6.1 cloud kernel to read: scripts/kernels.sh pick cloud61: $(tail -n1 "$tmp/kernels.err")"

# refused DESC PATTERN ARGS...: exit 1 within 10 s, stderr matches PATTERN.
refused() {
	local desc=$1 pat=$2; shift 2
	local t0=$SECONDS
	timeout 10 "$R" "$@" >"$tmp/stdout" 2>"$tmp/stderr" </dev/null
	rc=$?
	if [ $rc -eq 1 ] && grep -qE -- "$pat" "$tmp/stderr"; then
		ok "$desc: exit $rc in $((SECONDS - t0)) s, '$(head -1 "$tmp/stderr")'"
	else
		nok "$desc (exit $rc; 124 is a hang)"; sed 's/^/#   /' "$tmp/stderr"
	fi
}

# --- output == input ------------------------------------------------------------
cp "$kernel" "$tmp/k"
ln "$tmp/k" "$tmp/k-hard"
ln -s k "$tmp/k-sym"
sum_before=$(sha256sum <"$tmp/k")
refused "image K -o K refused" "k: the output \(-o\) is the same file as the kernel .*k \(device" \
	image "$tmp/k" -o "$tmp/k"
refused "image K -o HARDLINK-TO-K refused" "k-hard: the output \(-o\) is the same file as the kernel" \
	image "$tmp/k" -o "$tmp/k-hard"
refused "image K -o SYMLINK-TO-K refused" "k-sym: the output \(-o\) is the same file as the kernel" \
	image "$tmp/k" -o "$tmp/k-sym"
refused "image SYMLINK -o K refused" "the same file as the kernel .*k-sym" \
	image "$tmp/k-sym" -o "$tmp/k"
exec 5<"$tmp/k" 6>>"$tmp/k-hard"
refused "image --kernel-fd K --output-fd K refused" \
	"the output \(--output-fd\) is the same file as the kernel" \
	image --kernel-fd 5 --output-fd 6 "$tmp/k" -o "$tmp/k-hard"
exec 5<&- 6>&-
printf 'not a key\n' >"$tmp/key"; printf 'not a cert\n' >"$tmp/cert"
RERAND_SBSIGN=/bin/false refused "image -o KEY (the signing key) refused" \
	"the same file as the --sign-key" \
	image "$tmp/k" -o "$tmp/key" --sign-key "$tmp/key" --sign-cert "$tmp/cert"
check "the kernel is unchanged byte for byte, its links still there" \
	bash -c "[ \"\$(sha256sum <'$tmp/k')\" = '$sum_before' ] && [ -L '$tmp/k-sym' ] &&
		 [ \"\$(stat -c %h '$tmp/k')\" = 2 ] && ! ls '$tmp' | grep -q tmp"
check "the key file is unchanged" grep -qx 'not a key' "$tmp/key"
"$R" image "$tmp/k" -o "$tmp/k2.img" 2>"$tmp/stderr"
check "image K -o another file still works" test -s "$tmp/k2.img"
# The image to load, from the pristine kernel (not $tmp/k, which the tests
# above would have destroyed before the refusal existed).
"$R" image "$kernel" -o "$tmp/k.img" || bail "image $kernel"

# --- FIFOs, sockets and devices ---------------------------------------------------
mkfifo "$tmp/fifo"
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$tmp/sock"
refused "inspect FIFO refused, not hung" "fifo: a FIFO, not a regular file" inspect "$tmp/fifo"
refused "image FIFO refused" "fifo: a FIFO, not a regular file" image "$tmp/fifo" -o "$tmp/o.img"
refused "image /dev/null refused" "/dev/null: a character device, not a regular file" \
	image /dev/null -o "$tmp/o.img"
refused "inspect a socket refused" "sock: a socket, not a regular file" inspect "$tmp/sock"
refused "image --relocs FIFO refused" "fifo: a FIFO" \
	image "$tmp/k" --relocs "$tmp/fifo" -o "$tmp/o.img"
RERAND_SBSIGN=/bin/false refused "image --sign-key FIFO refused before sbsign runs" \
	"fifo: the --sign-key is a FIFO, not a regular file" \
	image "$tmp/k" -o "$tmp/o.img" --sign-key "$tmp/fifo" --sign-cert "$tmp/cert"
RERAND_SBSIGN=/bin/false refused "image --sign-cert /dev/zero refused" \
	"/dev/zero: the --sign-cert is a character device" \
	image "$tmp/k" -o "$tmp/o.img" --sign-key "$tmp/key" --sign-cert /dev/zero
check "no output image was left by the refusals" test ! -e "$tmp/o.img"
refused "entropy --kernel FIFO refused" "fifo: a FIFO" entropy --kernel "$tmp/fifo"
refused "entropy --memmap FIFO refused" "fifo: a FIFO" entropy --size 64M --memmap "$tmp/fifo"
mkdir "$tmp/sd" "$tmp/sd/0"
mkfifo "$tmp/sd/0/type" "$tmp/sd/0/data"
timeout 10 "$R" verify --setup-data "$tmp/sd" >/dev/null 2>"$tmp/stderr" </dev/null
rc=$?
check "verify --setup-data with FIFO records does not hang and finds no record (exit $rc)" \
	test $rc -eq 2

# --- rerand load: inputs and command lines --------------------------------------
cat >"$tmp/fake-kexec" <<'EOS'
#!/bin/bash
if [ "$1" = --version ]; then echo "kexec-tools 2.0.25"; exit 0; fi
printf '%s\n' "$@" >"$FAKE_KEXEC_DIR/call.$$.args"
exit 0
EOS
chmod +x "$tmp/fake-kexec"
printf '[none] integrity confidentiality\n' >"$tmp/ld-none"
printf '\x06\x00\x00\x00\x00' >"$tmp/sb-off"
: >"$tmp/initrd"
# load NAME ENV... -- ARGS...: rerand load of $tmp/k.img with the stand-in.
load() {
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	rm -rf "$tmp/$name"; mkdir -p "$tmp/$name"
	env FAKE_KEXEC_DIR="$tmp/$name" RERAND_LOCKDOWN_FILE="$tmp/ld-none" \
		RERAND_SECUREBOOT_FILE="$tmp/sb-off" RERAND_BOOT_PARAMS_FILE= "${envs[@]}" \
		timeout 10 "$R" load "$tmp/k.img" --kexec "$tmp/fake-kexec" "$@" \
		>/dev/null 2>"$tmp/$name.err" </dev/null
	rc=$?
}
calls() { ls "$tmp/$1"/*.args 2>/dev/null | wc -l; }
err_has() { grep -qE -- "$2" "$tmp/$1.err"; }
refused_load() {
	local desc=$1 name=$2 pat=$3
	if [ $rc -eq 1 ] && [ "$(calls "$name")" = 0 ] && err_has "$name" "$pat"; then
		ok "$desc: exit $rc, kexec not run, '$(head -1 "$tmp/$name.err")'"
	else
		nok "$desc (exit $rc, $(calls "$name") kexec calls)"; sed 's/^/#   /' "$tmp/$name.err"
	fi
}
accepted_load() {
	local desc=$1 name=$2
	if [ $rc -eq 0 ] && [ "$(calls "$name")" = 1 ]; then
		ok "$desc: exit 0, kexec run once"
	else
		nok "$desc (exit $rc, $(calls "$name") kexec calls)"; sed 's/^/#   /' "$tmp/$name.err"
	fi
}

load fifo-initrd -- --initrd "$tmp/fifo" --append console=ttyS0
refused_load "load --initrd FIFO refused before kexec" fifo-initrd "fifo: the initrd is a FIFO, not a regular file"
load null-initrd -- --initrd /dev/null --append console=ttyS0
refused_load "load --initrd /dev/null refused" null-initrd "/dev/null: the initrd is a character device"
load fifo-uki -- --uki "$tmp/fifo"
refused_load "load --uki FIFO refused" fifo-uki "fifo: a FIFO, not a regular file"

m4="memmap=1M\$0x40000000 memmap=1M\$0x50000000 memmap=1M\$0x60000000,1M\$0x70000000"
load memmap5 -- --initrd "$tmp/initrd" --append "console=ttyS0 $m4 memmap=1M\$0x80000000"
refused_load "load: 5 memmap= regions refused with the reason" memmap5 \
	"k.img: the command line \(--append\) has 5 memmap= regions: the stage honours at most 4"
load memmap4 -- --initrd "$tmp/initrd" --append "console=ttyS0 $m4 memmap=2G"
accepted_load "load: 4 memmap= regions (and a memmap= limit) accepted" memmap4
printf 'BOOT_IMAGE=/vmlinuz %s memmap=1M$0x90000000 memmap=1M$0xa0000000 quiet\n' "$m4" >"$tmp/cmdline6"
load reuse6 RERAND_CMDLINE_FILE="$tmp/cmdline6" -- --reuse-cmdline
refused_load "load --reuse-cmdline: 6 memmap= regions in the running command line refused" reuse6 \
	"has 6 memmap= regions: the stage honours at most 4"

# The avoid table (128 ranges): 1 GiB pages for hugepages= are kept clear
# per RAM range; on a map of 130 separate RAM ranges of 1.5 GiB, each with
# one aligned GiB (as a saved dmesg e820 table), 130 pages need 130 ranges,
# 100 pages need 100.
python3 - "$tmp/e820-130" <<'EOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n")
    f.write("BIOS-e820: [mem 0x0000000000100000-0x000000003fffffff] usable\n")
    for i in range(130):
        s = (1 << 32) + i * (3 << 30)
        f.write("BIOS-e820: [mem 0x%016x-0x%016x] usable\n" % (s, s + (3 << 29) - 1))
EOF
load avoid130 RERAND_MEMMAP_SOURCE="$tmp/e820-130" -- --append "console=ttyS0 hugepagesz=1G hugepages=130"
refused_load "load: an avoid table overflow (130 x 1 GiB pages on 130 ranges) refused" avoid130 \
	"more than 128 separate ranges to keep clear on this memory map \(132 RAM ranges"
load avoid100 RERAND_MEMMAP_SOURCE="$tmp/e820-130" -- --append "console=ttyS0 hugepagesz=1G hugepages=100"
accepted_load "load: 100 x 1 GiB pages on the same map accepted" avoid100
load nomap RERAND_MEMMAP_SOURCE="$tmp/missing" -- --append console=ttyS0
refused_load "load: an unreadable RERAND_MEMMAP_SOURCE refused" nomap "missing"
done_
