#!/bin/bash
# rerand as an administrator scripts it (issue 27): exit codes distinct per
# meaning, one table per command behind the usage line, --help, the man page
# and the bash completion.  Needs no kernel and no rerandd: setup_data trees
# and a minimal PE file are made here.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
R=$top/build/rerand
MAN=$top/docs/rerand.8
COMP=$top/build/rerand.bash
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
# run ARGS...: rc, stdout and stderr of rerand into $rc, $tmp/out, $tmp/err
run() { "$R" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
export RERAND_CONTROL_SOCKET=$tmp/no-rerandd

# ---- 1. exit codes ----------------------------------------------------------
# A status record (tests/cli/test-cli.sh's layout): DIR RESULT FLAGS SOURCES [VERSION SIZE]
mkrec() {
	mkdir -p "$1/0" "$1/1"
	echo 0x9 >"$1/0/type"; : >"$1/0/data"
	echo 0x52520001 >"$1/1/type"
	python3 -c "import struct,sys; sys.stdout.buffer.write(b'RERANDST'+struct.pack('<HHIIIIIIIQQ',${5:-2},${6:-56},$2,$3,$4,0,3,5,1,480,470))" >"$1/1/data"
}
mkrec "$tmp/sd-rand" 1 0 0x2d
mkrec "$tmp/sd-nok" 2 0 0x2d
mkrec "$tmp/sd-weak" 1 0x10 0x08
mkrec "$tmp/sd-bad" 1 0 0x2d 3 56
mkdir -p "$tmp/sd-none/0"; echo 0x9 >"$tmp/sd-none/0/type"
mkdir -p "$tmp/sd-short/1"; echo 0x52520001 >"$tmp/sd-short/1/type"; head -c 30 /dev/zero >"$tmp/sd-short/1/data"
want_rc() { # DESC WANT ARGS...
	local d=$1 w=$2; shift 2
	run "$@"
	if [ "$rc" = "$w" ]; then ok "$d: exit $rc"; else nok "$d: exit $rc, want $w ($(head -c 200 "$tmp/err"))"; fi
}
want_rc "verify: randomized" 0 verify --setup-data "$tmp/sd-rand"
want_rc "verify: not randomized (nokaslr)" 1 verify --setup-data "$tmp/sd-nok"
want_rc "verify: no record" 2 verify --setup-data "$tmp/sd-none"
want_rc "verify: weak" 3 verify --setup-data "$tmp/sd-weak"
want_rc "verify: a record of an unknown version is malformed" 4 verify --setup-data "$tmp/sd-bad"
want_rc "verify: a 30-byte record is malformed" 4 verify --setup-data "$tmp/sd-short"
check "verify: the 30-byte record's error names its file" grep -q "sd-short/1/data: status record is 30 bytes" "$tmp/err"
want_rc "verify: a --setup-data directory that does not exist" 5 verify --setup-data "$tmp/nonexistent"
check "verify: ... says so, naming it" grep -q "$tmp/nonexistent: no such directory" "$tmp/err"
want_rc "verify: an operand is a usage error" 64 verify extra
want_rc "verify: an unknown option is a usage error" 64 verify --frob
want_rc "unknown command" 64 frobnicate
want_rc "help of an unknown command" 64 help frobnicate
for c in image inspect load verify status now due hold release fleet entropy; do
	want_rc "$c --no-such-option: usage error" 64 "$c" --no-such-option
	check "$c --no-such-option: the error names it" grep -q -- "unknown option '--no-such-option'" "$tmp/err"
done
want_rc "due without rerandd: cannot say (kured's contract)" 3 due
want_rc "status without rerandd: failure, not a usage error" 1 status
# A PE file that is no kernel: MZ, PE32+ headers, no sections.
python3 - "$tmp/pe.efi" <<'EOF'
import struct, sys
b = bytearray(0x400)
b[0:2] = b'MZ'; struct.pack_into('<I', b, 0x3c, 0x40); b[0x40:0x44] = b'PE\0\0'
struct.pack_into('<HHIIIHH', b, 0x44, 0x8664, 0, 0, 0, 0, 240, 0x22)
struct.pack_into('<H', b, 0x58, 0x20b); struct.pack_into('<I', b, 0x58 + 60, 0x200)
struct.pack_into('<I', b, 0x58 + 108, 16)
open(sys.argv[1], 'wb').write(b)
EOF
want_rc "inspect: a PE file that is no kernel" 2 inspect "$tmp/pe.efi"
check "inspect: ... is still described" grep -q "PE image, neither a kernel nor a rerand image" "$tmp/out"
head -c 4096 /dev/urandom >"$tmp/random.bin"
want_rc "inspect: random bytes" 1 inspect "$tmp/random.bin"
want_rc "inspect: no FILE" 64 inspect
sed -n '/^\.SH EXIT STATUS/,/^\.SH [^E]/p' "$MAN" >"$tmp/exit.man"
miss=; for c in 0 1 2 3 4 5 64; do grep -qx "\.B $c" "$tmp/exit.man" || miss="$miss $c"; done
check "every exit code is in the man page's EXIT STATUS${miss:+ (missing:$miss)}" test -z "$miss"

# ---- 5. one table per command: usage, --help, man page, completion ----------
cmds=$("$R" --help | sed -n 's/^  \([a-z-]\+\)\( .*\)\?$/\1/p')
check "--help lists the sixteen commands (release: unhold's old name)" test "$(echo $cmds)" = "image cache-key inspect load verify status now due hold unhold release fleet entropy doctor build history"
# the man page as text: \- is -, fonts dropped
sed 's/\\-/-/g; s/\\f[BIRP]//g' "$MAN" >"$tmp/man.txt"
# its SYNOPSIS, one block per command (`rerand fleet status` is fleet's)
awk '/^\.SH SYNOPSIS/{s=1; next} /^\.SH /{s=0} s && /^\.B rerand [a-z]/{c=$3} s && c{print c" "$0}' \
	"$tmp/man.txt" >"$tmp/synopsis"
for c in $cmds; do
	"$R" "$c" --help >"$tmp/help.$c" 2>&1; hrc=$?
	"$R" help "$c" >"$tmp/help2.$c" 2>&1
	check "$c --help exits 0 and equals 'rerand help $c'" bash -c "[ $hrc = 0 ] && cmp -s '$tmp/help.$c' '$tmp/help2.$c'"
	check "$c --help: the usage line is the first" bash -c "head -1 '$tmp/help.$c' | grep -q '^Usage: rerand $c'"
	# every option line has a description, beside it or on the next line
	check "$c --help: every option has a description" python3 - "$tmp/help.$c" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().split('\n')
i = lines.index('Options:') + 1
bad = []
while i < len(lines) and lines[i]:
    l = lines[i]
    if re.match(r'^  (-., |    )--', l):
        if len(re.split(r'  +', l.strip())) < 2 and not re.match(r'^ {6,}[^ -]', lines[i + 1]):
            bad.append(l)
    i += 1
sys.exit(1 if bad else 0)
EOF
	opts=$(sed -n '/^Options:/,/^$/p' "$tmp/help.$c" | grep -oE -- '--[a-z0-9-]+' | sort -u)
	missing=; for o in $opts; do
		[ "$o" = --help ] && continue
		grep -q "^$c .*$o\b" "$tmp/synopsis" || missing="$missing $o"
	done
	check "$c: every option of --help is in the man page's synopsis of $c${missing:+ (missing:$missing)}" test -z "$missing"
	bad=; for o in $(grep "^$c " "$tmp/synopsis" | grep -oE -- '--[a-z0-9-]+' | sort -u); do
		line=$(grep -E -- "(^| )$o(\[|$| )" "$tmp/help.$c" | head -1)
		case $line in
		*"$o["*) args=("$o=short") ;;
		*"$o "[!\ ]*) args=("$o" x) ;;
		*) args=("$o") ;;
		esac
		timeout 20 "$R" "$c" "${args[@]}" </dev/null >/dev/null 2>"$tmp/acc.err"
		grep -q "unknown option\|needs an argument" "$tmp/acc.err" && bad="$bad $o"
	done
	check "$c: every option in the man page's synopsis of $c is accepted${bad:+ (refused:$bad)}" test -z "$bad"
	compopts=$(awk -v c="	$c)" '$0==c{s=1} s && /opts=/{print; exit}' "$COMP")
	cmiss=; for o in $opts; do case " ${compopts//\'/ } " in *" $o "*|*" $o= "*) ;; *) cmiss="$cmiss $o";; esac; done
	check "$c: the bash completion offers every option of --help${cmiss:+ (missing:$cmiss)}" test -z "$cmiss"
done
# the check above can fail: an option the man page names that rerand refuses
timeout 20 "$R" image --no-such-option x >/dev/null 2>"$tmp/acc.err"
check "the acceptance check sees a refused option" grep -q "unknown option" "$tmp/acc.err"
run image "$tmp/k"
check "image without -o: exit 64, the error says '-o IMAGE' is missing" bash -c "[ $rc = 64 ] && grep -q -- '-o IMAGE, the image to write, is missing' '$tmp/err'"
run image -o "$tmp/x.img"
check "image without KERNEL: the error says KERNEL is missing" bash -c "[ $rc = 64 ] && grep -q 'the KERNEL to read is missing' '$tmp/err'"
(cd "$tmp" && "$R" image "$tmp/random.bin" -o - >/dev/null 2>"$tmp/err"); rc=$?
check "image -o -: refused (exit $rc), no file named '-'" bash -c "[ $rc = 64 ] && [ ! -e '$tmp/-' ] && grep -q 'not to standard output' '$tmp/err'"
run entropy --size 64M --memmap "$top/tests/data/maps/qemu-ovmf-3g.dmesg" --cmdline "" --json
check "entropy --size 64M (docs/performance.md) is 64 MiB" grep -q '"mem_size":67108864,' "$tmp/out"
run entropy --size 64Q --memmap "$top/tests/data/maps/qemu-ovmf-3g.dmesg"
check "entropy --size 64Q: usage error" test "$rc" = 64
check "docs/performance.md's entropy command line is accepted" bash -c "
	grep -o 'rerand entropy --size [0-9A-Za-z]*' '$top/docs/performance.md' | while read -r _ _ _ s; do
		'$R' entropy --size \$s --memmap '$top/tests/data/maps/qemu-ovmf-3g.dmesg' --cmdline '' >/dev/null || exit 1; done"
check "RERAND_CONTROL_SOCKET is in the man page" grep -q '^\.B RERAND_CONTROL_SOCKET' "$MAN"
check "the completion file is bash" bash -n "$COMP"
bc=/usr/share/bash-completion/bash_completion
if [ -r "$bc" ]; then
	got=$(bash -c "source '$bc'; source '$COMP'; COMP_WORDS=(rerand image --co); COMP_CWORD=2; COMP_LINE='rerand image --co'; COMP_POINT=\${#COMP_LINE}; _rerand rerand --co image; echo \"\${COMPREPLY[*]}\"
		COMP_WORDS=(rerand image --codec ''); COMP_CWORD=3; COMP_LINE='rerand image --codec '; COMP_POINT=\${#COMP_LINE}; _rerand rerand '' --codec; echo \"\${COMPREPLY[*]}\"
		COMP_WORDS=(rerand h); COMP_CWORD=1; COMP_LINE='rerand h'; COMP_POINT=\${#COMP_LINE}; _rerand rerand h rerand; echo \"\${COMPREPLY[*]}\"" 2>&1)
	check "bash completes 'rerand image --co', '--codec ' and 'h' ($(echo $got))" \
		test "$(echo $got)" = "--codec lz4 none help hold history"
else
	ok "# SKIP bash-completion is not installed ($bc): the completion is checked as text only"
fi

# ---- 8. versions, section 8, --socket, a hint for non-root ---------------------
ver=$(head -n 1 "$top/debian/changelog" | cut -d'(' -f2 | cut -d')' -f1)
check "rerand --version is debian/changelog's ($ver)" test "$("$R" --version)" = "rerand $ver"
check "rerand-fleetd --version is the same" test "$("$top/build/rerand-fleetd" --version 2>&1)" = "rerand-fleetd $ver"
check "rerand's man page is in section 8" bash -c "head -1 '$MAN' | grep -q '^\.TH RERAND 8 ' && [ ! -e '$top/docs/rerand.1' ]"
check "no page still points at rerand(1)" bash -c "! grep -rn 'rerand (1)\|rerand(1)\|rerand\.1' '$top/docs' '$top/README.md' '$top/systemd' '$top/kexec' '$top/Makefile' '$top/debian'"
make -s -C "$top" install DESTDIR="$tmp/root" PREFIX=/usr BASHCOMPDIR=/usr/share/bash-completion/completions \
	>"$tmp/install.log" 2>&1
check "make install puts rerand.8 in man8 and the bash completion in place" \
	bash -c "[ -f '$tmp/root/usr/share/man/man8/rerand.8' ] && [ ! -e '$tmp/root/usr/share/man/man1' ] && \
		cmp -s '$tmp/root/usr/share/bash-completion/completions/rerand' '$COMP'"
# a stand-in for rerandd: answers one line ("ok" and what it was asked)
python3 - "$tmp/ctl.sock" <<'EOF' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o600); s.listen(4)
for _ in range(3):
    c, _ = s.accept(); line = c.recv(100).decode()
    if line.startswith("status json"):
        c.sendall(b'ok\n{"randomized":true,"weak":true,"next_reboot":"0xffffffffffffffff"}\n')
    else:
        c.sendall(("ok\nasked: " + line).encode())
    c.close()
EOF
srv=$!
for _ in $(seq 50); do [ -S "$tmp/ctl.sock" ] && break; sleep 0.1; done
run status --socket "$tmp/ctl.sock"
check "status --socket PATH talks to PATH, not \$RERAND_CONTROL_SOCKET" bash -c "[ $rc = 0 ] && grep -qx 'asked: status' '$tmp/out'"
run hold --socket "$tmp/ctl.sock"
check "hold --socket PATH" bash -c "[ $rc = 0 ] && grep -qx 'asked: hold' '$tmp/out'"
run status --socket "$tmp/ctl.sock" --json=pretty
check "status --json=pretty: rerandd's line indented, the same object (exit $rc)" python3 -c "
import json, sys; t = open(sys.argv[1]).read()
assert t.count(chr(10)) == 5 and json.loads(t) == {'randomized': True, 'weak': True, 'next_reboot': '0xffffffffffffffff'}, t" "$tmp/out"
kill $srv 2>/dev/null; wait $srv 2>/dev/null
# rerandd not there: --json still prints one object, with the reason
run status --json
check "status --json without rerandd: exit $rc, one JSON object with an error member on stdout, the reason on stderr" python3 -c "
import json, sys; d = json.load(open(sys.argv[1])); e = open(sys.argv[2]).read()
assert sys.argv[3] == '1' and list(d) == ['error'] and 'cannot reach rerandd' in d['error'] and 'cannot reach rerandd' in e, (d, e)" "$tmp/out" "$tmp/err" "$rc"
run fleet status --json=pretty
check "fleet status --json=pretty without rerandd: exit $rc, an object with an error member" python3 -c "
import json, sys; d = json.load(open(sys.argv[1])); assert sys.argv[2] == '1' and 'error' in d, d" "$tmp/out" "$rc"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	# the socket rerandd makes: 0600 root's, in a directory anyone may enter
	chmod 0755 "$tmp"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$R" status --socket "$tmp/ctl.sock" \
		>/dev/null 2>"$tmp/err"; rc=$?
	check "status as a user who is not root: exit $rc, a hint: $(cat "$tmp/err")" \
		bash -c "[ $rc = 1 ] && grep -q 'Permission denied (rerandd.s control socket is root.s only: run rerand as root' '$tmp/err'"
else
	ok "# SKIP not root or no setpriv: the non-root hint needs a user to switch to"
fi

# ---- 2. JSON: "0x..." strings for addresses and offsets, sizes as numbers, one segments type, pretty -----
run verify --json --setup-data "$tmp/sd-weak"
check "verify --json: a weak boot is randomized:true, weak:true (as rerandd's status)" python3 -c "
import json, sys; d = json.load(open(sys.argv[1])); assert d['randomized'] is True and d['weak'] is True, d" "$tmp/out"
run verify --json=pretty --setup-data "$tmp/sd-rand"
check "verify --json=pretty: indented, the same object as --json=short (exit $rc)" python3 -c "
import json, subprocess, sys
p = open(sys.argv[1]).read()
s = subprocess.run([sys.argv[2], 'verify', '--json=short', '--setup-data', sys.argv[3]], capture_output=True, text=True).stdout
assert p.count(chr(10)) > 5 and s.count(chr(10)) == 1 and json.loads(p) == json.loads(s), (p, s)" "$tmp/out" "$R" "$tmp/sd-rand"
run verify --json=long --setup-data "$tmp/sd-rand"
check "verify --json=long: usage error" test "$rc" = 64
# The kernel by role, not by build (scripts/kernels.sh: RERAND_KERNELS,
# ../shared/kernels or Debian's packages): Debian 12's 6.1 cloud kernel,
# whatever its build number that day.  None is a failure, never a skip.
if kern=$("$top/scripts/kernels.sh" pick cloud61 2>"$tmp/kernels.err"); then
	"$R" image "$kern" -o "$tmp/k.img" 2>"$tmp/err" || nok "image: $(cat "$tmp/err")"
	"$R" inspect --json "$kern" >"$tmp/kj" 2>&1
	"$R" inspect --json=pretty "$tmp/k.img" >"$tmp/ij" 2>&1
	check "inspect --json: segments is an array of objects for a kernel and an image alike, addresses and offsets as 0x strings, byte sizes as numbers" python3 -c "
import json, sys
k = json.load(open(sys.argv[1])); i = json.load(open(sys.argv[2]))
hexs = lambda v: isinstance(v, str) and v.startswith('0x') and int(v, 16) >= 0
num = lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**53
for d in (k, i):
    assert isinstance(d['segments'], list) and len(d['segments']) == d['nr_segments'] > 0, d
    for s in d['segments']:
        assert hexs(s['offset']) and all(num(s[f]) for f in ('filesz', 'memsz')), s
    assert hexs(d['entry_offset']), d
    assert all(num(d[f]) for f in ('mem_size', 'file_size', 'decoded_size')), d
assert all(num(s['stored_size']) for s in i['segments'])
assert all(hexs(s['vaddr']) and hexs(s['paddr']) for s in k['segments'])
assert int(k['segments'][0]['vaddr'], 16) >= 2**63, 'a kernel vaddr is past 2^53: a string keeps it exact'
assert [s['offset'] for s in k['segments']] == [s['offset'] for s in i['segments']]
assert k['mem_size'] == i['mem_size']" "$tmp/kj" "$tmp/ij"
	check "inspect --json (short) stays one line with the stage hash as the kernel hooks grep it" \
		bash -c "'$R' inspect --json '$tmp/k.img' | grep -c . | grep -qx 1 && '$R' inspect --json '$tmp/k.img' | grep -q '\"stage_sha256\":\"[0-9a-f]\{64\}\"'"
else
	nok "a 6.1 cloud kernel for inspect --json of a kernel and an image: scripts/kernels.sh pick cloud61: $(tail -n1 "$tmp/kernels.err")"
fi
echo "1..$n"
