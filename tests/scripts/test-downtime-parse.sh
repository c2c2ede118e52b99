#!/bin/bash
# bench/downtime-parse.sh on made-up serial logs of the downtime guest: each
# reboot is measured from its "go" to the next boot's "up" (first copy of
# each marker kept), and a reboot during which the host's stamps went back
# (a wall-clock step: seen on 4 Dec 2026, 152 s) is not measured but named
# in downtime-clockstep, never reported as a negative downtime.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/lib/tap.sh"

# mklog DIR STEPBACK: 4 reboots (plan "s r r s"), 40 s apart; with STEPBACK
# the host clock goes 150 s back in the middle of reboot 3.
mklog() {
	local d=$1/downtime t=1000 i m
	mkdir -p "$d" "$1/data"
	echo "s r r s" >"$d/plan"
	echo 0 >"$d/qemu-rc"
	{
		for i in 1 2 3 4; do
			m=$(echo "s r r s" | cut -d' ' -f$i)
			echo "$t.100000 [  50.000000] RRB go $i $m"
			echo "$t.100100 RRB go $i $m"
			t=$((t + 20))
			[ "$2" = 1 ] && [ "$i" = 3 ] && t=$((t - 150))
			echo "$t.000000 some boot line"
			t=$((t + 10 + i))
			echo "$t.500000 [  $((10 + i)).250000] RRB up $i boot-id-$i"
			echo "$t.500100 RRB up $i boot-id-$i"
			t=$((t + 5))
		done
		echo "$t.000000 RRB done 4"
	} >"$d/serial.log"
}

mklog "$tmp/a" 0
out=$("$top/bench/downtime-parse.sh" "$tmp/a" 2>&1); rc=$?
got=$(cut -f2,3,4,5 "$tmp/a/data/downtime.tsv" | tr '\t\n' ' |')
want="1 s 31.400 11.250|2 r 32.400 12.250|3 r 33.400 13.250|4 s 34.400 14.250|"
[ "$rc" = 0 ] && [ "$got" = "$want" ] && ok "4 reboots measured, first copy of each marker, kernel clock kept: $got" ||
	{ nok "clean log: rc=$rc got '$got' want '$want'"; echo "$out" | sed 's/^/#   /'; }
[ ! -e "$tmp/a/data/downtime-clockstep" ] && ok "no clock step, no downtime-clockstep file" ||
	nok "downtime-clockstep written for a clean log"

mklog "$tmp/b" 1
out=$("$top/bench/downtime-parse.sh" "$tmp/b" 2>&1); rc=$?
got=$(cut -f2 "$tmp/b/data/downtime.tsv" | tr '\n' ' ')
[ "$rc" = 0 ] && [ "$got" = "1 2 4 " ] && ok "the reboot with the clock step is left out: measured $got" ||
	{ nok "clock step: rc=$rc measured '$got', want '1 2 4 '"; echo "$out" | sed 's/^/#   /'; }
[ "$(cat "$tmp/b/data/downtime-clockstep" 2>/dev/null)" = 3 ] && ok "downtime-clockstep names reboot 3" ||
	nok "downtime-clockstep: '$(cat "$tmp/b/data/downtime-clockstep" 2>/dev/null)'"
awk -F'\t' '$4 < 0 { bad = 1 } END { exit bad }' "$tmp/b/data/downtime.tsv" &&
	ok "no negative downtime reported" || nok "a negative downtime in downtime.tsv"
[ ! -e "$tmp/b/data/downtime-lost" ] && ok "a clock step is not counted as a lost marker" ||
	nok "downtime-lost: '$(cat "$tmp/b/data/downtime-lost")'"
echo "$out" | grep -q 'reboot(s) 3 during which the host clock went back' &&
	ok "the parser says which reboot the clock step cost" || nok "no message about the clock step"
echo "1..$n"
