#!/bin/bash
# Draw docs/entropy-histogram.png: how often each physical slot and virtual
# offset came up in 10^6 draws of the stage's selection code on the captured
# 1 GiB QEMU map, against the uniform expectation, with the range stock
# KASLR may use after a kexec (>= 512 MiB) shaded.
# Usage: scripts/entropy-histogram.sh [MAP] [OUT.png]   (needs gnuplot-nox)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
map=${1:-tests/data/maps/qemu-seabios-1g.memmap}
out=${2:-docs/entropy-histogram.png}
O=build
CC=${CC:-cc}

command -v gnuplot >/dev/null || { echo "entropy-histogram: gnuplot not found (apt install gnuplot-nox)" >&2; exit 1; }
[ -f $O/librerand.a ] || make $O/librerand.a
mkdir -p $O/tools
$CC -std=gnu11 -O2 -Wall -Wextra -Iinclude -Isrc -Isrc/shared -D_GNU_SOURCE \
	-o $O/tools/slotdist tools/slotdist.c $O/librerand.a -lm

data=$O/tools/slotdist.dat
$O/tools/slotdist "$map" 1000000 >"$data"
read -r draws k kv size < <(sed -n '1s/.*: \([0-9]*\) draws, \([0-9]*\) physical slots, \([0-9]*\) virtual slots, slot size \([0-9]*\) MiB/\1 \2 \3 \4/p' "$data")
# The top of RAM the slots can reach: last slot start plus its size.
ram_top=$(awk -v s="$size" 'NF == 4 && !/^#/ && blk == 0 { t = $2 + s } /^$/ { blk = 1 } END { print t }' "$data")

gnuplot <<EOF
set terminal pngcairo size 1200,900 font "DejaVu Sans,11" noenhanced
set output "$out"
set multiplot layout 2,1 title "rerand: $draws draws on a captured 1 GiB QEMU map (SeaBIOS, q35), 46 MiB kernel"
set style fill solid 0.85 noborder
set key top left opaque box
set grid ytics
set ylabel "draws per slot"
set xlabel "physical slot start (MiB)"
set xrange [0:$ram_top + 16]
set yrange [0:*]
set object 1 rect from 512, graph 0 to $ram_top, graph 1 behind fc rgb "#ffe0b0" fs solid 0.6 noborder
set label 1 "stock KASLR after kexec: only slots >= 512 MiB" at 520, graph 0.93 front
set title sprintf("physical: %d slots (%.1f bits), uniform expectation %.0f per slot\ngaps: starts whose 46 MiB would overlap the loaded image (768 MiB) or the initrd (896 MiB)", $k, log($k)/log(2), $draws/$k.0)
plot "$data" index 0 using 2:3:(2) with boxes lc rgb "#2060c0" title "rerand: draws per 2 MiB slot", \
     "$data" index 0 using 2:4 with lines lw 2 lc rgb "#d02020" title "uniform expectation"
unset object 1
unset label 1
set xrange [0:1024]
set xlabel "virtual offset from __START_KERNEL_map (MiB)"
set title sprintf("virtual: %d offsets (%.1f bits), uniform expectation %.0f per offset", $kv, log($kv)/log(2), $draws/$kv.0)
plot "$data" index 1 using 2:3:(2) with boxes lc rgb "#20a060" title "rerand: draws per 2 MiB offset", \
     "$data" index 1 using 2:4 with lines lw 2 lc rgb "#d02020" title "uniform expectation"
unset multiplot
EOF
echo "entropy-histogram: wrote $out ($k physical slots, $kv virtual offsets, $draws draws)"
