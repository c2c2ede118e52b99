#!/bin/bash
# The rerand command as a user meets it: refusals with clear messages and no
# output file, inspect, load (with a stand-in for kexec, because staging a
# kernel on this machine is forbidden: the stand-in records what kexec-tools
# would have been given), and verify against fake setup_data trees.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
R=$top/build/rerand
# The kernels: RERAND_KERNELS (run-check sets it), ../shared/kernels, or
# Debian's packages fetched once (scripts/kernels.sh); none is a failure.
K=$("$top/scripts/kernels.sh" 2>"${TMPDIR:-/tmp}/test-cli.kernels.$$") || K=""
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }

# expect_fail DESC FILE PATTERN ARGS...: non-zero exit, message names FILE
# and matches PATTERN, and no output file appears.
expect_fail() {
	local desc=$1 file=$2 pat=$3; shift 3
	rm -f "$tmp/out.img"
	"$R" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
	local rc=$?
	if [ $rc -ne 0 ] && grep -qF -- "$file" "$tmp/stderr" && grep -qiE -- "$pat" "$tmp/stderr" &&
	   [ ! -e "$tmp/out.img" ] && [ -z "$(ls "$tmp" | grep '^out.img.tmp')" ]; then
		ok "$desc: exit $rc, '$(head -1 "$tmp/stderr")'"
	else
		nok "$desc (exit $rc)"; sed 's/^/#   /' "$tmp/stderr"
	fi
}

if [ -z "$K" ]; then
	nok "kernels to read: scripts/kernels.sh: $(tail -n1 "${TMPDIR:-/tmp}/test-cli.kernels.$$")"
fi
rm -f "${TMPDIR:-/tmp}/test-cli.kernels.$$"

check "--help exits 0 and lists the commands" bash -c "'$R' --help | grep -q 'image KERNEL'"
"$R" frobnicate 2>/dev/null; check "unknown command exits 64 (a usage error)" test $? -eq 64

# --- refusals -------------------------------------------------------------
head -c 100000 /dev/urandom >"$tmp/random.bin"
expect_fail "random bytes refused" "$tmp/random.bin" "not a kernel" image "$tmp/random.bin" -o "$tmp/out.img"
expect_fail "missing file refused" "$tmp/nonexistent" "cannot open" image "$tmp/nonexistent" -o "$tmp/out.img"

if [ -n "$K" ]; then
	# By role, not by build: Debian 12's 6.1 cloud (lz4) and generic (xz) kernels.
	cloud=$("$top/scripts/kernels.sh" pick cloud61) || nok "a 6.1 cloud kernel in $K"
	generic=$("$top/scripts/kernels.sh" pick generic61) || nok "a 6.1 generic (xz) kernel in $K"
	pm=$(( ($(od -An -tu1 -j 0x1f1 -N1 "$cloud") + 1) * 512 ))
	poff=$(od -An -tu4 -j 0x248 -N4 "$cloud"); plen=$(od -An -tu4 -j 0x24c -N4 "$cloud")
	head -c $((pm + poff + plen / 2)) "$cloud" >"$tmp/truncated"
	expect_fail "truncated kernel refused" "$tmp/truncated" "truncat|outside|past the end" image "$tmp/truncated" -o "$tmp/out.img"
	# xz carries a CRC; the lz4 legacy frame has no checksum at all, so
	# corruption there is only caught when it breaks the stream's structure.
	gpm=$(( ($(od -An -tu1 -j 0x1f1 -N1 "$generic") + 1) * 512 ))
	gpoff=$(od -An -tu4 -j 0x248 -N4 "$generic"); gplen=$(od -An -tu4 -j 0x24c -N4 "$generic")
	cp "$generic" "$tmp/corrupt"; chmod u+w "$tmp/corrupt"
	printf '\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad\xbe\xef' |
		dd of="$tmp/corrupt" bs=1 seek=$((gpm + gpoff + gplen / 2)) conv=notrunc status=none
	expect_fail "corrupt payload refused" "$tmp/corrupt" "corrupt|error|invalid|malformed" image "$tmp/corrupt" -o "$tmp/out.img"
	cp "$cloud" "$tmp/k32"; chmod u+w "$tmp/k32"
	printf '\x02' | dd of="$tmp/k32" bs=1 seek=$((0x236)) conv=notrunc status=none
	expect_fail "32-bit kernel refused" "$tmp/k32" "32-bit" image "$tmp/k32" -o "$tmp/out.img"

	# --- image and inspect ---------------------------------------------
	for k in "$K"/vmlinuz-*; do
		name=$(basename "$k")
		if "$R" image "$k" -o "$tmp/$name.img" 2>"$tmp/stderr"; then
			ok "image $name ($(stat -c %s "$k") -> $(stat -c %s "$tmp/$name.img") bytes)"
		else
			nok "image $name"; sed 's/^/#   /' "$tmp/stderr"; continue
		fi
		j=$("$R" inspect --json "$tmp/$name.img")
		check "inspect $name.img: rerand image, lz4, 2.15, 5-level capable" \
			python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d['type']=='rerand-image' and d['codec']=='lz4' and d['protocol']=='2.15' and d['xloadflags']&0x23==0x23 and d['virt_slots']>400 and d['init_size']>=d['file_size']-1024, d" "$j"
		kj=$("$R" inspect --json "$k")
		check "inspect $name: relocation counts match the image's" \
			python3 -c "import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); assert all(a[x]==b[x] for x in ('relocs64','inverse32','relocs32','reloc_layout','mem_size','entry_offset','virt_slots')), (a,b)" "$kj" "$j"
	done
	img=$tmp/$(basename "$cloud").img
	"$R" image "$cloud" --codec none -o "$tmp/none.img"
	check "--codec none stores the segments raw" \
		bash -c "'$R' inspect --json '$tmp/none.img' | grep -q '\"codec\":\"none\"'"
	"$R" image "$img" -o "$tmp/out.img" 2>"$tmp/stderr"
	check "an image is not accepted as a kernel" test ! -e "$tmp/out.img"
	# The bytes of an image do not depend on how many threads compressed it
	# (test_lz4par checks the library; this is the command, decode overlap included).
	"$R" image "$cloud" --threads 1 -o "$tmp/t1.img" && "$R" image "$cloud" --threads 3 -o "$tmp/t3.img"
	check "--threads 1 and --threads 3 write the same bytes" cmp -s "$tmp/t1.img" "$tmp/t3.img"
	check "--threads 3 writes the default image's bytes" cmp -s "$tmp/t3.img" "$img"
	rm -f "$tmp/t1.img" "$tmp/t3.img"
	"$R" image "$cloud" --threads 0 -o "$tmp/out.img" 2>"$tmp/stderr"
	rc=$?
	check "--threads 0 refused with exit 64 and says why" \
		bash -c "[ $rc -eq 64 ] && grep -q -- \"--threads: '0' is not 1 to 64\" '$tmp/stderr' && [ ! -e '$tmp/out.img' ]"

	# --- load with a stand-in kexec -------------------------------------
	cat >"$tmp/fake-kexec" <<'EOS'
#!/bin/bash
# Stand-in for kexec-tools: records its arguments and the image it was given.
# An old version by default, so that kexec_load gets the seed in the header.
if [ "$1" = --version ]; then echo "kexec-tools ${FAKE_KEXEC_VERSION:-2.0.24}"; exit 0; fi
out=$FAKE_KEXEC_DIR/call.$$
printf '%s\n' "$@" >"$out.args"
for a in "$@"; do case $a in /proc/self/fd/*) cat "$a" >"$out.image";; esac; done
exit ${FAKE_KEXEC_RC:-0}
EOS
	chmod +x "$tmp/fake-kexec"
	mkdir -p "$tmp/calls"
	export FAKE_KEXEC_DIR=$tmp/calls
	echo initrd >"$tmp/initrd"
	"$R" load "$img" --initrd "$tmp/initrd" --append "console=ttyS0 quiet" --kexec "$tmp/fake-kexec"
	check "load runs kexec -l with the image from a memfd" bash -c "grep -qx -- -l $tmp/calls/*.args && grep -q '^/proc/self/fd/' $tmp/calls/*.args && grep -qx -- '--initrd=$tmp/initrd' $tmp/calls/*.args && grep -qx -- '--append=console=ttyS0 quiet' $tmp/calls/*.args"
	# kexec_file_load: on Linux >= 6.0 the kernel adds the seed (checked in
	# test-load-lockdown.sh); its copy is kept apart from the two below
	mkdir -p "$tmp/calls-s"
	FAKE_KEXEC_DIR=$tmp/calls-s "$R" load "$img" --file-syscall --reuse-cmdline --kexec "$tmp/fake-kexec"
	echo 268435456 >"$tmp/crash_size"
	RERAND_KEXEC_CRASH_SIZE_FILE=$tmp/crash_size "$R" load "$img" --crash --kexec "$tmp/fake-kexec"
	echo 33554432 >"$tmp/crash_small"
	RERAND_KEXEC_CRASH_SIZE_FILE=$tmp/crash_small "$R" load "$img" --crash --kexec "$tmp/fake-kexec" 2>"$tmp/stderr"
	rc=$?
	check "a 32 MiB crash region is refused with the size needed: $(cat "$tmp/stderr")" \
		bash -c "[ $rc -ne 0 ] && grep -q 'crash region is 32 MiB but the image needs at least [0-9]* MiB' '$tmp/stderr'"
	echo 0 >"$tmp/crash_none"
	RERAND_KEXEC_CRASH_SIZE_FILE=$tmp/crash_none "$R" load "$img" --crash --kexec "$tmp/fake-kexec" 2>"$tmp/stderr"
	rc=$?
	check "no crash region: refused, says crashkernel=" bash -c "[ $rc -ne 0 ] && grep -q 'crashkernel=' '$tmp/stderr'"
	check "--file-syscall adds -s, --crash uses -p" bash -c "grep -lx -- -s $tmp/calls-s/*.args | xargs grep -qx -- --reuse-cmdline && grep -qx -- -p $tmp/calls/*.args"
	check "two staged copies through kexec_load, each a full image" test "$(ls $tmp/calls/*.image | wc -l)" -eq 2
	python3 - "$img" $tmp/calls/*.image <<'EOP'
import sys, struct
ref = open(sys.argv[1], 'rb').read()
pm = (ref[0x1f1] + 1) * 512
hdr = pm + struct.unpack_from('<I', ref, pm + 0x18)[0]
seed = slice(hdr + 96, hdr + 128)
seeds = []
for p in sys.argv[2:]:
    b = open(p, 'rb').read()
    assert len(b) == len(ref), 'size differs'
    assert b[:seed.start] == ref[:seed.start] and b[seed.stop:] == ref[seed.stop:], 'image changed outside the seed'
    assert ref[seed] == bytes(32), 'seed on disk is not zero'
    assert b[seed] != bytes(32), 'seed not filled'
    seeds.append(b[seed])
assert len(set(seeds)) == len(seeds), 'seeds repeat'
EOP
	check "each load writes a fresh non-zero seed; the file on disk keeps a zero seed" test $? -eq 0
	FAKE_KEXEC_RC=1 "$R" load "$img" --kexec "$tmp/fake-kexec" 2>"$tmp/stderr"
	rc=$?
	check "a failing kexec gives a non-zero exit and says so (exit $rc)" bash -c "[ $rc -ne 0 ] && grep -q 'failed' '$tmp/stderr'"
fi

# --- verify ------------------------------------------------------------------
mkrec() { # DIR RESULT SOURCES
	mkdir -p "$1/0" "$1/1"
	echo 0x1 >"$1/0/type"; printf 'xxxx' >"$1/0/data"
	echo 0x52520001 >"$1/1/type"
	python3 -c "import struct,sys; sys.stdout.buffer.write(b'RERANDST'+struct.pack('<HHIIIIIIIQQQ',1,64,$2,1,$3,0,3,5,1,480,470,123456))" >"$1/1/data"
}
mkrec "$tmp/sd-rand" 1 0x0d
"$R" verify --setup-data "$tmp/sd-rand" >"$tmp/v.txt"; rc=$?
check "verify: randomized record exits 0 and shows sources" bash -c "[ $rc -eq 0 ] && grep -q 'seed+rdrand+rdtsc' '$tmp/v.txt'"
j=$("$R" verify --json --setup-data "$tmp/sd-rand")
check "verify --json is JSON with slot counts" python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d['randomized'] is True and d['phys_slots']==480 and d['virt_slots']==470 and d['sources']=='seed+rdrand+rdtsc', d" "$j"
mkrec "$tmp/sd-nok" 2 0x0d
"$R" verify --setup-data "$tmp/sd-nok" >/dev/null; rc=$?
check "verify: nokaslr record exits 1" test $rc -eq 1
"$R" verify --setup-data "$tmp/sd-nok" >"$tmp/v.txt"
check "verify: a nokaslr record says 'result: not-randomized (nokaslr)'" grep -q '^result: *not-randomized (nokaslr)$' "$tmp/v.txt"
check "verify --json: a nokaslr record is result not-randomized, why nokaslr, randomized false" bash -c "
	'$R' verify --json=short --setup-data '$tmp/sd-nok' | python3 -c 'import json,sys; d=json.load(sys.stdin); assert (d[\"result\"], d[\"why\"], d[\"randomized\"], d[\"weak\"]) == (\"not-randomized\", \"nokaslr\", False, False), d'"
check "verify --json: a version 1 record is read, its stage_cycles not shown" python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d['record_version']==1 and 'stage_cycles' not in d, d" "$j"
# Version 2 (56 bytes, no stage_cycles): DIR RESULT FLAGS SOURCES [VERSION SIZE]
mkrec2() {
	mkdir -p "$1/0" "$1/1"
	echo 0x9 >"$1/0/type"; : >"$1/0/data"
	echo 0x52520001 >"$1/1/type"
	python3 -c "import struct,sys; sys.stdout.buffer.write(b'RERANDST'+struct.pack('<HHIIIIIIIQQ',${5:-2},${6:-56},$2,$3,$4,0,3,5,1,480,470))" >"$1/1/data"
}
mkrec2 "$tmp/sd-ks" 1 0 0x2d
"$R" verify --setup-data "$tmp/sd-ks" >"$tmp/v.txt"; rc=$?
check "verify: a version 2 record with the kernel seed names it (exit $rc)" bash -c "[ $rc -eq 0 ] && grep -q 'entropy sources:  seed+kernel-seed+rdrand+rdtsc' '$tmp/v.txt' && ! grep -qi cycles '$tmp/v.txt'"
j=$("$R" verify --json --setup-data "$tmp/sd-ks")
check "verify --json: kernel-seed among the sources, record_version 2" python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d['sources']=='seed+kernel-seed+rdrand+rdtsc' and d['record_version']==2 and d['weak'] is False, d" "$j"
mkrec2 "$tmp/sd-weak" 1 0x10 0x08
"$R" verify --setup-data "$tmp/sd-weak" >"$tmp/v.txt"; rc=$?
j=$("$R" verify --json --setup-data "$tmp/sd-weak"); jrc=$?
check "verify: an RDTSC-only record says weak, in the one vocabulary (result weak, randomized and weak true, why empty)" bash -c "grep -q '^result: *weak (no source but RDTSC)$' '$tmp/v.txt' &&
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert (d[\"result\"], d[\"why\"], d[\"randomized\"], d[\"weak\"]) == (\"weak\", \"\", True, True), d' '$j'"
check "verify: an RDTSC-only record exits 3, not 0 (rc $rc, --json rc $jrc)" bash -c "[ $rc -eq 3 ] && [ $jrc -eq 3 ]"
# seed and RDTSC, no RDRAND or RDSEED (-cpu qemu64): its own grade
mkrec2 "$tmp/sd-seed" 1 0 0x09
"$R" verify --setup-data "$tmp/sd-seed" >"$tmp/v.txt"; rc=$?
"$R" verify --require-hwrng --setup-data "$tmp/sd-seed" >/dev/null; hrc=$?
"$R" verify --require-hwrng --setup-data "$tmp/sd-ks" >/dev/null; krc=$?
check "verify: seed+rdtsc says seed grade, exits 0 (rc $rc); --require-hwrng exits 6 (rc $hrc), 0 with RDRAND (rc $krc)" \
	bash -c "[ $rc -eq 0 ] && [ $hrc -eq 6 ] && [ $krc -eq 0 ] && grep -q 'seed grade: no RDRAND or RDSEED' '$tmp/v.txt'"
check "verify --json: entropy_grade seed, hardware, tsc-only" bash -c "
	'$R' verify --json=short --setup-data '$tmp/sd-seed' | grep -q '\"entropy_grade\":\"seed\"' &&
	'$R' verify --json=short --setup-data '$tmp/sd-ks' | grep -q '\"entropy_grade\":\"hardware\"' &&
	{ '$R' verify --json=short --setup-data '$tmp/sd-weak'; true; } | grep -q '\"entropy_grade\":\"tsc-only\"'"
mkrec2 "$tmp/sd-v3" 1 0 0x2d 3 56
"$R" verify --setup-data "$tmp/sd-v3" >/dev/null 2>"$tmp/stderr"; rc=$?
check "verify: an unknown record version exits 4 naming the file and version" bash -c "[ $rc -eq 4 ] && grep -q 'sd-v3/1/data: status record version 3 is not supported' '$tmp/stderr'"
mkrec2 "$tmp/sd-v2big" 1 0 0x2d 2 64
"$R" verify --setup-data "$tmp/sd-v2big" >/dev/null 2>"$tmp/stderr"; rc=$?
check "verify: a version 2 record claiming 64 bytes is refused (exit 4)" bash -c "[ $rc -eq 4 ] && grep -q 'claims 64 bytes' '$tmp/stderr'"
mkdir -p "$tmp/sd-none/0"; echo 0x9 >"$tmp/sd-none/0/type"
"$R" verify --setup-data "$tmp/sd-none" >/dev/null 2>&1; rc=$?
check "verify: no record exits 2" test $rc -eq 2
echo "1..$n"
