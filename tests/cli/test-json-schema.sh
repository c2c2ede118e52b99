#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Every --json output held to its documented schema (docs/json/*.schema.json,
# JSON Schema draft 7, checked with Debian's python3-jsonschema under the
# system's /usr/bin/python3, as a user's tools would read it; issue 40):
#  - rerand verify on status records of every result (randomized, weak,
#    seed grade, kernel seed, crash, nokaslr, no-slot) and the absent,
#    malformed and unreadable answers;
#  - rerand inspect on every test kernel, its image, a signed image and a
#    UKI; rerand entropy on every captured memory map; rerand doctor on
#    this machine;
#  - rerand status --json, fleet status --json and history --json with no
#    rerandd (the error object; a real rerandd's history in
#    tests/daemon/test-history-daemon.sh);
#  - every status and fleet status document the unit tests format
#    (RERAND_JSON_DUMP: test_status, test_state, test_crash_daemon,
#    test_escape, test_fleet build rerandd's views in many states).
# The schemas forbid members they do not list: a new key is documented in
# its schema first.  RERAND_JSON_SCHEMAS=DIR checks against other schemas
# (the test of this test).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
R=$top/build/rerand
SCH=${RERAND_JSON_SCHEMAS:-$top/docs/json}
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/lib/tap.sh"

[ -x "$R" ] || bail "build/rerand missing: make all"
"$PY" -c 'import jsonschema' 2>/dev/null ||
	bail "python3-jsonschema is missing for $PY (scripts/deps.sh check installs it)"
for t in test_status test_state test_crash_daemon test_escape test_fleet; do
	[ -x "$top/build/tests/$t" ] || bail "build/tests/$t missing: make unit-tests"
done

# validate KIND FILE...: each FILE (one JSON document) against KIND's schema
validate() {
	local kind=$1; shift
	"$PY" "$top/tests/tools/json-validate.py" "$SCH/$kind.schema.json" "$@"
}
# vcheck NAME KIND FILE...: one TAP line for a set of documents
vcheck() {
	local name=$1 kind=$2; shift 2
	[ $# -gt 0 ] || { nok "$name: no document to check"; return; }
	validate "$kind" "$@" >"$tmp/why" 2>&1
	check "$name: $# document(s) match docs/json/$kind.schema.json$(grep -qx "ok $#" "$tmp/why" || echo ": $(head -c 400 "$tmp/why" | tr '\n' ' ')")" \
		grep -qx "ok $#" "$tmp/why"
}

# --- verify ------------------------------------------------------------------
# DIR VERSION SIZE RESULT FLAGS SOURCES: a record as the stage writes it
# (the layout of tests/cli/test-cli.sh; version 1 has stage_cycles)
mkrec() {
	mkdir -p "$1/0"
	echo 0x52520001 >"$1/0/type"
	if [ "$2" = 1 ]; then
		"$PY" -c "import struct,sys; sys.stdout.buffer.write(b'RERANDST'+struct.pack('<HHIIIIIIIQQQ',1,64,$4,$5,$6,0,3,5,1,480,470,123456))"
	else
		"$PY" -c "import struct,sys; sys.stdout.buffer.write(b'RERANDST'+struct.pack('<HHIIIIIIIQQ',2,56,$4,$5,$6,0,3,5,1,480,470))"
	fi >"$1/0/data"
}
i=0
for rec in "1 64 1 0 0x0d" "2 56 1 0 0x2d" "2 56 1 0x10 0x08" "2 56 1 0 0x09" "2 56 1 0x0b 0x0f" \
	"2 56 2 0 0x0d" "2 56 3 0 0x2d"; do
	mkrec "$tmp/sd$i" $rec
	"$R" verify --json --setup-data "$tmp/sd$i" >"$tmp/verify.$i.json" 2>/dev/null
	i=$((i + 1))
done
mkdir -p "$tmp/sd-none/0"; echo 0x1 >"$tmp/sd-none/0/type"; printf 'xx' >"$tmp/sd-none/0/data"
"$R" verify --json --setup-data "$tmp/sd-none" >"$tmp/verify.absent.json" 2>/dev/null
mkdir -p "$tmp/sd-bad/0"; echo 0x52520001 >"$tmp/sd-bad/0/type"; printf 'RERANDSTxx' >"$tmp/sd-bad/0/data"
"$R" verify --json --setup-data "$tmp/sd-bad" >"$tmp/verify.malformed.json" 2>/dev/null
"$R" verify --json --setup-data "$tmp/no-such-dir" >"$tmp/verify.unreadable.json" 2>/dev/null
check "verify: the fixtures give every result word (randomized, weak, not-randomized; absent, malformed, unreadable)" \
	bash -c "cat '$tmp'/verify.*.json | grep -o '\"result\":\"[a-z-]*\"' | sort -u | tr '\n' ' ' |
		grep -qx '\"result\":\"absent\" \"result\":\"malformed\" \"result\":\"not-randomized\" \"result\":\"randomized\" \"result\":\"unreadable\" \"result\":\"weak\" '"
vcheck "rerand verify --json" verify "$tmp"/verify.*.json

# --- inspect, entropy, doctor ------------------------------------------------
kdir=$("$top/scripts/kernels.sh" 2>"$tmp/k.err") || bail "the test kernels: $(tail -n1 "$tmp/k.err")"
j=0
for k in "$kdir"/vmlinuz-*; do
	"$R" inspect --json "$k" >"$tmp/inspect.k$j.json" || nok "inspect --json $k failed"
	j=$((j + 1))
done
k=$("$top/scripts/kernels.sh" pick cloud61 2>"$tmp/k.err") || bail "a 6.1 cloud kernel: $(tail -n1 "$tmp/k.err")"
"$R" image "$k" -o "$tmp/k.img" >/dev/null 2>&1 || bail "rerand image $k failed"
"$R" inspect --json "$tmp/k.img" >"$tmp/inspect.img.json"
openssl req -new -x509 -newkey rsa:2048 -nodes -subj "/CN=rerand schema test/" -days 1 \
	-keyout "$tmp/db.key" -out "$tmp/db.pem" >/dev/null 2>&1 || bail "openssl cannot make a throwaway key"
"$R" image "$k" -o "$tmp/s.img" --sign-key "$tmp/db.key" --sign-cert "$tmp/db.pem" >/dev/null 2>&1 ||
	bail "rerand image --sign-key failed"
"$R" inspect --json "$tmp/s.img" >"$tmp/inspect.signed.json"
"$R" inspect --json --trust-cert "$tmp/db.pem" "$tmp/s.img" >"$tmp/inspect.trusted.json"
printf 'UC' >"$tmp/ucode"; printf 'INITRD' >"$tmp/initrd"
"$top/tests/mkuki.sh" -o "$tmp/k.efi" -k "$k" -u "$tmp/ucode" -i "$tmp/initrd" -c "console=ttyS0" >/dev/null 2>&1 ||
	bail "tests/mkuki.sh could not make a UKI (systemd-boot-efi: scripts/deps.sh check)"
"$R" inspect --json "$tmp/k.efi" >"$tmp/inspect.uki.json"
vcheck "rerand inspect --json (every test kernel, an image, a signed one, a UKI)" inspect "$tmp"/inspect.*.json
j=0
for m in "$top"/tests/data/maps/*.dmesg; do
	"$R" entropy --json --kernel "$k" --memmap "$m" --cmdline "" >"$tmp/entropy.$j.json" 2>/dev/null ||
		nok "entropy --json --memmap $m failed"
	j=$((j + 1))
done
"$R" entropy --json --size 64M --memmap "$top/tests/data/maps/qemu-seabios-1g.dmesg" --cmdline "nokaslr" \
	>"$tmp/entropy.nokaslr.json" 2>/dev/null
vcheck "rerand entropy --json (every captured map, nokaslr)" entropy "$tmp"/entropy.*.json
RERAND_CONTROL_SOCKET=$tmp/no-rerandd "$R" doctor --json >"$tmp/doctor.json" 2>/dev/null
vcheck "rerand doctor --json (this machine, no rerandd)" doctor "$tmp/doctor.json"

# --- status and fleet status -------------------------------------------------
RERAND_CONTROL_SOCKET=$tmp/no-rerandd "$R" status --json >"$tmp/status.none.json" 2>/dev/null
RERAND_CONTROL_SOCKET=$tmp/no-rerandd "$R" fleet status --json >"$tmp/fleet.none.json" 2>/dev/null
RERAND_CONTROL_SOCKET=$tmp/no-rerandd "$R" history --json >"$tmp/history.none.json" 2>/dev/null
vcheck "rerand history --json (no rerandd: the error object; tests/daemon/test-history-daemon.sh holds a real rerandd's)" \
	history "$tmp/history.none.json"
mkdir -p "$tmp/dump"
for t in test_status test_state test_crash_daemon test_escape test_fleet; do
	RERAND_JSON_DUMP=$tmp/dump "$top/build/tests/$t" >/dev/null 2>&1 ||
		nok "build/tests/$t failed while dumping its JSON"
done
vcheck "rerand status --json (no rerandd, and every view the unit tests format)" status \
	"$tmp/status.none.json" "$tmp"/dump/status.*.json
vcheck "rerand fleet status --json (no rerandd, and the unit tests' groups)" fleet-status \
	"$tmp/fleet.none.json" "$tmp"/dump/fleet-status.*.json
check "the unit tests formatted at least 15 status documents ($(ls "$tmp"/dump/status.*.json 2>/dev/null | wc -l))" \
	[ "$(ls "$tmp"/dump/status.*.json 2>/dev/null | wc -l)" -ge 15 ]
done_
