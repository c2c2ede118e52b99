#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Self-test of the end-to-end checker (lib.sh e2e_check) on made-up serial
# logs, no QEMU: each defect must turn its TAP line into "not ok".
set -u
. "$(dirname "$0")/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RAM="00001000-0009fbff,00100000-3ffdefff"
OKV='rc=0 {"randomized": true, "result": "ok", "sources": ["rdrand"], "phys_slots": 100, "virt_slots": 400, "stage_cycles": 1}'

# gen_line GEN TEXT PHYS LOADFLAGS [VERIFY] [RAM]
gen_line() {
	local end
	end=$(printf '%x' $(( $3 + 0xfffff )))
	printf '%s.5 E2E-GEN gen=%s text=%s code=0x%x-%s loadflags=0x%s ram=%s verify=%s\n' \
		"$((1000 + $1 * 10))" "$1" "$2" "$3" "$end" "$4" "${6:-$RAM}" "${5:-none}"
}

# fw_e820: the firmware's map as the firmware-booted kernel prints it (1 GiB, SeaBIOS)
fw_e820() {
	echo "1000.1 [    0.000000] BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable"
	echo "1000.1 [    0.000000] BIOS-e820: [mem 0x000000000009fc00-0x000000000009ffff] reserved"
	echo "1000.1 [    0.000000] BIOS-e820: [mem 0x0000000000100000-0x000000003ffdefff] usable"
	echo "1000.1 [    0.000000] BIOS-e820: [mem 0x000000003ffdf000-0x000000003fffffff] reserved"
}

# A clean 6-generation log; arguments replace generation lines (GEN=LINE).
good_log() {
	local mode=$1 g v p lf=02 ver=none
	[ "$mode" = rerand ] && ver=$OKV
	echo "1000.0 E2E-HOST-START"
	fw_e820
	for g in 0 1 2 3 4 5; do
		v=$(printf 'ffffffff%x' $((0x81000000 + (g + 1) * 0x4200000)))
		p=$((0x2000000 + g * 0x1400000))
		gen_line "$g" "$v" "$p" "$lf" "$ver"
	done
	echo "1070.0 E2E-DONE gen=5"
	echo "1071.0 E2E-HOST-END"
}

n=0
# expect NAME WANT(ok|not-ok) PATTERN RC MODE NOKASLR GENS < LOG
expect() {
	local name=$1 want=$2 pat=$3 rc=$4 mode=$5 nok=$6 gens=$7 log="$tmp/log.$n" out line
	n=$((n + 1))
	cat >"$log"
	out=$(E2E_RUN_MEM=1 e2e_check t "$log" "$rc" "$gens" "$mode" "$nok")
	line=$(grep -E '^(not )?ok - ' <<<"$out" | grep -F -- "$pat" | head -n1)
	local got=none
	case "$line" in "not ok"*) got=not-ok ;; "ok"*) got=ok ;; esac
	if [ "$got" = "$want" ]; then
		echo "ok - harness: $name"
	else
		echo "not ok - harness: $name (line '$pat' is $got, want $want)"
		sed 's/^/#   /' <<<"$out"
	fi
}

good_log stock | expect "a clean stock log passes" ok "generations booted" 0 stock 0 5
good_log stock | expect "a clean stock log has distinct bases" ok "virtual bases distinct" 0 stock 0 5
good_log rerand | expect "a clean rerand log passes verify" ok "rerand verify randomized" 0 rerand 0 5
good_log rerand | expect "a clean rerand log has distinct physical bases" ok "physical bases distinct" 0 rerand 0 5

good_log stock | grep -v 'gen=3 ' | expect "a missing generation fails" not-ok "generations booted" 0 stock 0 5
good_log stock | grep -v -e 'gen=[45] ' -e E2E-DONE |
	expect "a hang (timeout) fails" not-ok "generations booted" 124 stock 0 5
good_log stock | grep -v -e 'gen=[45] ' -e E2E-DONE |
	expect "QEMU ending early (triple fault) fails" not-ok "generations booted" 0 stock 0 5
{ good_log stock | grep -v -e 'gen=[5] ' -e E2E-DONE; echo "1060.0 E2E-FAIL gen=4 kexec -l: no memory"; } |
	expect "a guest E2E-FAIL fails" not-ok "generations booted" 0 stock 0 5
good_log stock | sed 's/\(gen=2 text=[0-9a-f]*\)00000 /\110000 /' |
	expect "a misaligned virtual base fails" not-ok "2 MiB aligned" 0 stock 0 5
good_log stock | sed 's/gen=4 \(text=[0-9a-f]*\) code=0x[0-9a-f]*-[0-9a-f]*/gen=4 \1 code=0x40200000-402fffff/' |
	expect "kernel code outside RAM fails" not-ok "inside guest RAM" 0 stock 0 5
good_log stock | sed 's/gen=4 \(text=[0-9a-f]*\) code=0x[0-9a-f]*-[0-9a-f]*/gen=4 \1 code=0x3fe00000-3fefffff/' |
	expect "kernel code inside RAM passes" ok "inside guest RAM" 0 stock 0 5
# The guest's own ram= (its /proc/iomem) is no bound: code it calls RAM but
# outside the firmware's map fails, and so does a log without that map, a
# kexec'd kernel's map (printed after generation 0), or a map beyond -m.
good_log stock | sed 's/gen=4 \(text=[0-9a-f]*\) code=0x[0-9a-f]*-[0-9a-f]* \(loadflags=0x[0-9]*\) ram=[^ ]*/gen=4 \1 code=0x40200000-402fffff \2 ram=00001000-0009fbff,00100000-7fffffff/' |
	expect "kernel code in the guest's own RAM but outside the firmware's map fails" not-ok "inside guest RAM" 0 stock 0 5
good_log stock | grep -v BIOS-e820 |
	expect "a log without the firmware's e820 map fails" not-ok "inside guest RAM" 0 stock 0 5
# newer kernels (7.3) print RAM as "]  System RAM" (and the gaps as "[gap ...]")
good_log stock | sed '/BIOS-e820/s/\] usable$/]  System RAM/; /BIOS-e820.*0x000000000009fc00-/i 1000.1 [    0.000000] BIOS-e820: [gap 0x000000000009fc00-0x000000000009ffff]' |
	expect "the firmware's map as 7.3 prints it (System RAM, gaps) is read" ok "inside guest RAM" 0 stock 0 5
good_log stock | sed '/BIOS-e820/s/\] usable$/]  System RAMS/' |
	expect "a RAM type the kernel never prints is not read as RAM" not-ok "inside guest RAM" 0 stock 0 5
good_log stock | sed 's/gen=4 \(text=[0-9a-f]*\) code=0x[0-9a-f]*-[0-9a-f]*/gen=4 \1 code=0x40200000-402fffff/' |
	sed '/E2E-GEN gen=0 /a 1011.0 [    0.000000] BIOS-e820: [mem 0x0000000040000000-0x000000007fffffff] usable' |
	expect "a kexec'd kernel's e820 map is not the firmware's" not-ok "inside guest RAM" 0 stock 0 5
good_log stock | sed '/BIOS-e820.*0x0000000000100000-/a 1000.1 [    0.000000] BIOS-e820: [mem 0x0000000100000000-0x000000013fffffff] usable' |
	expect "a firmware map larger than QEMU's -m fails" not-ok "inside guest RAM" 0 stock 0 5
good_log stock | sed 's/gen=[34] text=[0-9a-f]*/&X/; s/text=[0-9a-f]*X/text=ffffffff85200000/' |
	expect "two repeated virtual bases fail" not-ok "virtual bases distinct" 0 stock 0 5
good_log stock | sed 's/gen=3 text=[0-9a-f]*/gen=3 text=ffffffff85200000/' |
	expect "one repeated virtual base is allowed" ok "virtual bases distinct" 0 stock 0 5
good_log rerand | sed 's/\(gen=[345] text=[0-9a-f]*\) code=0x[0-9a-f]*-/\1 code=0x2000000-/' |
	expect "repeated physical bases fail in rerand mode" not-ok "physical bases distinct" 0 rerand 0 5
good_log rerand | sed 's/gen=2 \(.*\)loadflags=0x02/gen=2 \1loadflags=0x00/' |
	expect "KASLR_FLAG clear fails in rerand mode" not-ok "rerand verify randomized" 0 rerand 0 5
good_log rerand | sed 's/\(gen=3 .*verify=\)rc=0 \(.*\)"randomized": true/\1rc=1 \2"randomized": false/' |
	expect "verify not randomized fails in rerand mode" not-ok "rerand verify randomized" 0 rerand 0 5
good_log rerand | sed 's/\(gen=1 .*verify=\).*/\1rc=1 (no output: rerand: not found)/' |
	expect "verify without output fails in rerand mode" not-ok "rerand verify randomized" 0 rerand 0 5
# The stage's slot counts (OKV: phys 100, virt 400) against rerand entropy
# on the guest's map (E2E-ENTROPY): virtual equal, physical at most the map's.
# ent_log PHYS VIRT [SED]: a clean rerand log with E2E-ENTROPY lines
ent_log() {
	good_log rerand | sed "/E2E-GEN gen=[1-5] /{h;s/E2E-GEN \(gen=[0-9]*\) .*/E2E-ENTROPY \1 {\"rerand\":{\"phys_slots\":$1,\"virt_slots\":$2,\"total_bits\":15.3}}/;p;g}" | sed "${3:-}"
}
# expect_ent NAME WANT < LOG
expect_ent() {
	local out line got=none
	n=$((n + 1))
	cat >"$tmp/log.$n"
	out=$(e2e_check_entropy t "$tmp/log.$n" 5)
	line=$(grep -E '^(not )?ok - ' <<<"$out" | head -n1)
	case "$line" in "not ok"*) got=not-ok ;; "ok"*) got=ok ;; esac
	if [ "$got" = "$2" ]; then echo "ok - harness: $1"; else
		echo "not ok - harness: $1 (slot-count line is $got, want $2)"; sed 's/^/#   /' <<<"$out"; fi
}
ent_log 120 400 | expect_ent "stage slot counts within rerand entropy's pass" ok
ent_log 100 400 | expect_ent "stage physical slots equal to the map's count pass" ok
ent_log 90 400 | expect_ent "stage physical slots above the map's count fail" not-ok
ent_log 120 401 | expect_ent "stage virtual slots unequal to the map's count fail" not-ok
ent_log 120 400 '/E2E-ENTROPY gen=3 /d' | expect_ent "a generation without E2E-ENTROPY fails" not-ok
ent_log 120 400 's/\(E2E-GEN gen=2 .*\)"phys_slots": 100, /\1/' | expect_ent "a verify record without phys_slots fails" not-ok
ent_log 120 400 '/E2E-GEN gen=4 /s/"phys_slots": 100/"phys_slots": 0/' | expect_ent "zero physical slots from the stage fail" not-ok
ent_log 120 400 's/E2E-ENTROPY gen=5 .*/E2E-ENTROPY gen=5 rerand: \/boot\/image: cannot open/' | expect_ent "rerand entropy failing in the guest fails" not-ok

# Entropy sources (-cpu qemu64): kernel-seed exactly when rngseed=N > 0.
KSV='rc=0 {"randomized":true,"result":"randomized","sources":"kernel-seed+rdtsc","weak":false,"entropy_grade":"seed"}'
# rerand load writes no header seed where the kernel or kexec-tools adds a node
BSV='rc=0 {"randomized":true,"result":"randomized","sources":"seed+kernel-seed+rdtsc","weak":false,"entropy_grade":"seed"}'
NSV='rc=0 {"randomized":true,"result":"randomized","sources":"seed+rdtsc","weak":false,"entropy_grade":"seed"}'
ks_log() { # RNGSEED VERIFY
	good_log rerand | sed "s/ verify=.*/ rngseed=$1 verify=$2/"
}
ks_log 1 "$KSV" | E2E_RUN_CPU=qemu64 expect "kernel-seed named with a node passes" ok "entropy sources" 0 rerand 0 5
ks_log 0 "$NSV" | E2E_RUN_CPU=qemu64 expect "no node, no kernel-seed passes" ok "entropy sources" 0 rerand 0 5
ks_log 1 "$NSV" | E2E_RUN_CPU=qemu64 expect "a node but no kernel-seed fails" not-ok "entropy sources" 0 rerand 0 5
ks_log 0 "$KSV" | E2E_RUN_CPU=qemu64 expect "kernel-seed without a node fails" not-ok "entropy sources" 0 rerand 0 5
ks_log 1 "$BSV" | E2E_RUN_CPU=qemu64 expect "a header seed beside a node fails" not-ok "entropy sources" 0 rerand 0 5
ks_log 0 "${NSV/\"seed\"\}/\"hardware\"\}}" | E2E_RUN_CPU=qemu64 expect "no RDRAND but graded hardware fails" not-ok "entropy sources" 0 rerand 0 5
ks_log 0 "${NSV/,\"entropy_grade\":\"seed\"/}" | E2E_RUN_CPU=qemu64 expect "no entropy_grade at all fails" not-ok "entropy sources" 0 rerand 0 5
LKV='rc=0 {"randomized":true,"result":"randomized","sources":"kernel-seed+rdtsc","weak":false,"entropy_grade":"seed"}'
LWV='rc=0 {"randomized":true,"result":"randomized","sources":"rdtsc","weak":true,"entropy_grade":"tsc-only"}'
ks_log 1 "$LKV" | E2E_LOADER=kexec E2E_RUN_CPU=qemu64 expect "staged by kexec: kernel-seed without seed passes" ok "entropy sources" 0 rerand 0 5
ks_log 1 "$BSV" | E2E_LOADER=kexec E2E_RUN_CPU=qemu64 expect "staged by kexec: a zero header seed named fails" not-ok "entropy sources" 0 rerand 0 5
ks_log 0 "$LWV" | E2E_LOADER=kexec E2E_RUN_CPU=qemu64 expect "staged by kexec, no node: RDTSC alone and weak passes" ok "entropy sources" 0 rerand 0 5
ks_log 0 "${LWV/\"weak\":true/\"weak\":false}" | E2E_LOADER=kexec E2E_RUN_CPU=qemu64 expect "RDTSC alone but not weak fails" not-ok "entropy sources" 0 rerand 0 5
ks_log 1 "${LKV/false/true}" | E2E_LOADER=kexec E2E_RUN_CPU=qemu64 expect "kernel-seed but weak fails" not-ok "entropy sources" 0 rerand 0 5
good_log rerand | sed "s/ verify=.*/ verify=$KSV/" |
	E2E_RUN_CPU=qemu64 expect "a guest line without rngseed= fails" not-ok "entropy sources" 0 rerand 0 5
good_log stock | grep -v 'gen=[2345] ' | sed 's/E2E-DONE gen=5/E2E-DONE gen=1/; s/gen=1 text=[0-9a-f]*/gen=1 text=ffffffff81000000/' |
	expect "nokaslr at ffffffff81000000 passes" ok "nokaslr keeps" 0 stock 1 1
good_log stock | grep -v 'gen=[2345] ' | sed 's/E2E-DONE gen=5/E2E-DONE gen=1/' |
	expect "nokaslr elsewhere fails" not-ok "nokaslr keeps" 0 stock 1 1
# The no-slot run: generation 1 must say no-slot and sit at 2 MiB.
NOSV='rc=1 {"randomized":false,"result":"not-randomized","why":"no-slot","sources":"kernel-seed+rdtsc","weak":false,"phys_slots":0,"virt_slots":482}'
noslot_log() { # PHYS VERIFY
	echo "1000.0 E2E-HOST-START"
	fw_e820
	gen_line 0 ffffffff8ce00000 $((0x1c600000)) 83 'rc=2 {"randomized":false,"result":"absent"}'
	gen_line 1 ffffffffb6a00000 "$1" 02 "$2"
	echo "1020.0 E2E-DONE gen=1"
	echo "1021.0 E2E-HOST-END"
}
noslot_log $((0x200000)) "$NOSV" | expect "no-slot record passes" ok "says no-slot" 0 rerand noslot 1
noslot_log $((0x200000)) "$NOSV" | expect "no-slot at 2 MiB passes" ok "runs at the lowest place" 0 rerand noslot 1
noslot_log $((0xc800000)) 'rc=0 {"randomized":true,"result":"randomized","phys_slots":1}' |
	expect "a randomized record fails the no-slot check" not-ok "says no-slot" 0 rerand noslot 1
noslot_log $((0x200000)) "${NOSV/rc=1/rc=0}" | expect "no-slot with verify exit 0 fails" not-ok "says no-slot" 0 rerand noslot 1
noslot_log $((0x200000)) "${NOSV/no-slot/nokaslr}" | expect "not-randomized for another reason fails the no-slot check" not-ok "says no-slot" 0 rerand noslot 1
noslot_log $((0x1000000)) "$NOSV" | expect "no-slot at 16 MiB fails the place check" not-ok "runs at the lowest place" 0 rerand noslot 1
noslot_log $((0x200000)) "$NOSV" | sed 's/code=0x200000-[0-9a-f]*/code=0x200000-3c00000/' |
	expect "code reaching the avoided region fails" not-ok "runs at the lowest place" 0 rerand noslot 1
noslot_log $((0x200000)) "$NOSV" | grep -v -e 'gen=1 ' -e E2E-DONE |
	expect "a stage reset (no generation 1) fails" not-ok "generations booted" 0 rerand noslot 1
noslot_log $((0x200000)) "$NOSV" | grep -v -e 'gen=1 ' -e E2E-DONE |
	expect "a stage reset fails the no-slot check too" not-ok "says no-slot" 0 rerand noslot 1

# Without build/rerand the harness fails: "auto" never turns into stock kexec.
# The kernel below is never booted: the suites must stop before QEMU.
mkdir -p "$tmp/k" && : >"$tmp/k/vmlinuz-none"
out=$(E2E_RERAND="$tmp/no-rerand" e2e_mode_auto 2>&1)
rc=$?
e2e_tap "$([ "$rc" -ne 0 ] && grep -qF "$tmp/no-rerand is not built" <<<"$out"; echo $?)" \
	"harness: auto mode without build/rerand is an error naming it" "rc $rc: $out"
out=$(E2E_RERAND="$tmp/no-rerand" RERAND_KERNELS="$tmp/k" "$E2E_DIR/check-core.sh" short 2>&1)
e2e_tap "$(grep -q "^not ok - e2e core: .*$tmp/no-rerand is not built" <<<"$out" && ! grep -q '^ok ' <<<"$out"; echo $?)" \
	"harness: check-core without build/rerand says not ok and boots nothing" "$(tr '\n' ' ' <<<"$out" | cut -c1-200)"
out=$(E2E_RERAND="$tmp/no-rerand" "$E2E_DIR/run.sh" --kernel "$tmp/k/vmlinuz-none" 2>&1)
rc=$?
e2e_tap "$([ "$rc" -ne 0 ] && grep -qF "is not built" <<<"$out"; echo $?)" \
	"harness: run.sh without build/rerand exits non-zero" "rc $rc: $out"

# The schema check of the guests' rerand verify --json (e2e_check_schema):
# what this tree's rerand verify prints for a record passes; the harness's
# own shorthand (OKV: "result":"ok"), a log without verify output, and a
# document with an address-like member fail.
schema_expect() { # NAME WANT(ok|not-ok) < LOG
	local out got=none
	cat >"$tmp/schema.log"
	out=$(e2e_check_schema t "$tmp/schema.log")
	case "$out" in "not ok"*) got=not-ok ;; "ok"*) got=ok ;; esac
	e2e_tap "$([ "$got" = "$2" ]; echo $?)" "harness: $1" "the schema line is $got, want $2: $out"
}
R=$E2E_TOP/build/rerand
if [ -x "$R" ]; then
	mkdir -p "$tmp/sd/0" && echo 0x52520001 >"$tmp/sd/0/type"
	python3 -c "import struct,sys; sys.stdout.buffer.write(b'RERANDST'+struct.pack('<HHIIIIIIIQQ',2,56,1,0,0x2d,0,3,5,1,480,470))" >"$tmp/sd/0/data"
	REALV="rc=0 $("$R" verify --json --setup-data "$tmp/sd")"
	{ for g in 1 2; do gen_line "$g" ffffffff81000000 $((0x2000000 + g * 0x200000)) 02 "$REALV"; done; } |
		schema_expect "this tree's rerand verify --json passes the guests' schema check" ok
	{ for g in 1 2; do gen_line "$g" ffffffff81000000 $((0x2000000 + g * 0x200000)) 02 "$OKV"; done; } |
		schema_expect "a verify document the schema does not describe fails the guests' schema check" not-ok
	gen_line 1 ffffffff81000000 $((0x2000000)) 02 "${REALV%\}},\"base\":\"0xffffffff9a000000\"}" |
		schema_expect "an undocumented member (an address) fails the guests' schema check" not-ok
	gen_line 1 ffffffff81000000 $((0x2000000)) 02 none | schema_expect "a log without verify output fails the guests' schema check" not-ok
else
	e2e_tap 1 "harness: the guests' schema check needs $R (make all)"
fi

# The systemd guests' distinct-bases rule (e2e_bases_by_chance): one chance
# repeat of one kind passes; a repeat of both kinds or two of one fails.
for c in "0 0 ok" "1 0 ok" "0 1 ok" "1 1 not-ok" "0 2 not-ok" "2 0 not-ok"; do
	set -- $c
	e2e_bases_by_chance "$1" "$2" && got=ok || got=not-ok
	e2e_tap "$([ "$got" = "$3" ]; echo $?)" "harness: systemd guests' bases rule: virtual repeats $1, physical $2 is $3" "got $got"
done
