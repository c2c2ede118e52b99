#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# `make bench`, scale part (issue 15, part 4): the stage's placement code
# (bench/scale.c, src/shared/ hosted) and `rerand entropy` on synthetic
# memory maps of 1 GiB to 12 TiB with 10, 100 and 1000 holes.
# Usage: bench/scale.sh OUT_DIR [ENTROPY_REPS]; writes OUT_DIR/data/scale.tsv
# and OUT_DIR/data/scale-entropy.tsv (bench/report_scale.py reads them).
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP" || exit 2
OUT=${1:?usage: bench/scale.sh OUT_DIR [ENTROPY_REPS]}
REPS=${2:-21}
die() { echo "bench/scale.sh: $*" >&2; exit 1; }

[ -x build/rerand ] && [ -s build/librerand.a ] || die "build first: make all"
mkdir -p "$OUT/data" "$OUT/scale" || die "cannot create $OUT"
# The hosted build of src/shared/ as the tools link it (build/librerand.a).
gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -Iinclude -Isrc -Isrc/shared -D_GNU_SOURCE \
	-o "$OUT/scale/scale" bench/scale.c build/librerand.a ||
	die "cannot build bench/scale.c"
"$OUT/scale/scale" "$OUT/scale" >"$OUT/data/scale.tsv" || die "bench/scale.c failed"
[ "$(grep -c '^scale' "$OUT/data/scale.tsv")" -eq 12 ] || die "bench/scale.c: want 12 maps in $OUT/data/scale.tsv"

# `rerand entropy` on each map as a dmesg e820 table: wall time of the whole
# command (process start, reading and parsing the table, the selection for
# rerand and the stock rule), interleaved across maps, REPS rounds; and its
# CPU time (user + system, from getrusage of the child).
python3 - "$OUT" "$REPS" "$TOP/build/rerand" <<'EOP' || die "timing rerand entropy failed"
import glob, json, os, resource, statistics, subprocess, sys, time
out, reps, rerand = sys.argv[1], int(sys.argv[2]), sys.argv[3]
maps = sorted(glob.glob(os.path.join(out, 'scale', 'e820-*.txt')))
times = {m: [] for m in maps}
cpu = {m: [] for m in maps}
res = {}
for _ in range(reps):
    for m in maps:
        cmd = [rerand, 'entropy', '--size', str(64 << 20), '--memmap', m,
               '--cmdline', 'console=ttyS0,115200 quiet', '--json']
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        t1 = time.perf_counter()
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[m].append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
        if p.returncode != 0:
            sys.exit('%s: exit %d: %s' % (' '.join(cmd), p.returncode, p.stderr.strip()))
        times[m].append(t1 - t0)
        res[m] = json.loads(p.stdout)
with open(os.path.join(out, 'data', 'scale-entropy.tsv'), 'w') as f:
    for m in maps:
        gib, holes = os.path.basename(m)[5:-4].split('-')
        t = sorted(times[m])
        j = res[m]
        f.write('entropy\t%s\t%s\t%d\t%d\t%.6f\t%.6f\t%.6f\t%.6f\n' % (
            gib, holes, j['memmap']['ram_entries'], j['rerand']['phys_slots'],
            statistics.median(t), t[0], t[-1], statistics.median(cpu[m])))
EOP
