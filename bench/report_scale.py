#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, scale part: the section "Scale" of docs/performance.md and
docs/performance-scale.png from bench/scale.sh's data.  Run after
bench/report.py (which rewrites the file): the section goes between its
markers, replacing an older one, or at the end.  Without data it leaves the
document alone."""
import os
import subprocess
import sys

import mdsection

BEGIN = '<!-- scale: bench/report_scale.py -->'
END = '<!-- /scale -->'
GOAL_US = 1000.0


def size_name(gib):
    return '%d TiB' % (gib // 1024) if gib >= 1024 else '%d GiB' % gib


def load(out):
    sel, ent = {}, {}
    with open(os.path.join(out, 'data', 'scale.tsv')) as f:
        for line in f:
            c = line.rstrip('\n').split('\t')
            if c[0] != 'scale':
                continue
            sel[(int(c[1]), int(c[2]))] = {
                'ram': int(c[3]), 'avoid': int(c[4]), 'slots': int(c[5]),
                'dropped': c[6] == '1', 'reps': int(c[7]),
                'med': int(c[8]) / 1e3, 'min': int(c[9]) / 1e3, 'p99': int(c[10]) / 1e3,
                'parse': int(c[11]) / 1e3, 'count': int(c[12]) / 1e3, 'at': int(c[13]) / 1e3}
    path = os.path.join(out, 'data', 'scale-entropy.tsv')
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                c = line.rstrip('\n').split('\t')
                ent[(int(c[1]), int(c[2]))] = {
                    'ram': int(c[3]), 'slots': int(c[4]), 'med': float(c[5]) * 1e3,
                    'min': float(c[6]) * 1e3, 'max': float(c[7]) * 1e3,
                    'cpu': float(c[8]) * 1e3}
    return sel, ent


def chart(out, docs, sel, ent):
    sizes = sorted({k[0] for k in sel})
    dat = os.path.join(out, 'data', 'scale.dat')
    with open(dat, 'w') as f:
        for s in sizes:
            f.write('# %s\n' % size_name(s))
            for h in sorted(h for (g, h) in sel if g == s):
                r = sel[(s, h)]
                e = ent.get((s, h), {})
                f.write('%d %d %.3f %.3f\n' % (h, r['ram'] + r['avoid'], r['med'],
                                               e.get('med', float('nan'))))
            f.write('\n\n')
    png = os.path.join(docs, 'performance-scale.png')
    plots_sel = ', '.join("'%s' index %d using 2:3 with linespoints title '%s'" %
                          (dat, i, size_name(s)) for i, s in enumerate(sizes))
    plots_ent = ', '.join("'%s' index %d using 2:4 with linespoints title '%s'" %
                          (dat, i, size_name(s)) for i, s in enumerate(sizes))
    script = """
set terminal pngcairo size 1100,420 font ',10'
set output '%s'
set multiplot layout 1,2
set logscale x
set logscale y
set grid
set key top left
set xlabel 'regions in the map (RAM ranges + avoided ranges)'
set ylabel 'microseconds (median)'
set title "stage placement (parse, apply, count, last slot), hosted"
plot %s
set ylabel 'milliseconds (median)'
set title "rerand entropy --memmap (whole command, wall)"
plot %s
unset multiplot
""" % (png, plots_sel, plots_ent)
    r = subprocess.run(['gnuplot'], input=script, text=True, capture_output=True)
    if r.returncode != 0:
        sys.exit('report_scale: gnuplot failed: ' + r.stderr)


OUT = '.'


def section(sel, ent):
    L = []
    L.append(BEGIN)
    L.append('## 7. Scale: placement on large memory maps')
    L.append('')
    L.append('`bench/scale.c` builds fake machines the way the stage sees them through its '
             'map callback — boot_params with 128 e820 entries and the rest in a '
             '`SETUP_E820_EXT` node (as kexec-tools passes them), a command line, an initrd '
             'and 60 setup_data nodes of 48 bytes, one page apart — with 1 GiB to 12 TiB of '
             'RAM from 1 MiB up cut by 10, 100 or 1000 holes of 2 MiB into equal pieces, and '
             'times the stage\'s placement work from `src/shared/` (hosted build, '
             '`build/librerand.a`) in the stage\'s order: `rr_bootparams_parse`, '
             '`rr_cmdline_parse`, the image avoided, `rr_memmap_apply_cmdline` (*parse*), '
             '`rr_phys_slot_count` (*count*), `rr_phys_slot_at` for the last slot, the '
             'longest walk a draw can make (*last slot*), for a 64 MiB kernel. Medians over '
             'the reps shown. `rerand entropy --size 64M --memmap FILE` reads the same maps '
             'as dmesg e820 tables (no setup_data there); its column is the whole command\'s '
             'wall time and CPU time, process start included (`bench/scale.sh`).')
    L.append('')
    try:
        load = open(os.path.join(OUT, 'data', 'load-start')).read().split()[0]
        ncpu = open(os.path.join(OUT, 'data', 'nproc')).read().strip()
        L.append('Load average %s on %s CPUs when the run started.' % (load, ncpu))
        L.append('')
    except OSError:
        pass
    L.append('![scale](performance-scale.png)')
    L.append('')
    L.append('| RAM | holes | RAM ranges kept | avoided ranges | physical slots | reps | '
             'placement µs (min–p99) | parse µs | count µs | last slot µs | `rerand entropy` ms wall | '
             'CPU ms |')
    L.append('|---|---|---|---|---|---|---|---|---|---|---|---|')
    for (g, h) in sorted(sel):
        r = sel[(g, h)]
        e = ent.get((g, h))
        L.append('| %s | %d | %d%s | %d | %d | %d | %.1f (%.1f–%.1f) | %.1f | %.1f | %.1f | %s | %s |' % (
            size_name(g), h, r['ram'], ' (RAM dropped)' if r['dropped'] else '', r['avoid'],
            r['slots'], r['reps'], r['med'], r['min'], r['p99'], r['parse'], r['count'],
            r['at'],
            '%.1f (%.1f–%.1f)' % (e['med'], e['min'], e['max']) if e else 'n/a',
            '%.0f' % e['cpu'] if e else 'n/a'))
    L.append('')
    # Growth, computed from this run.
    sizes = sorted({k[0] for k in sel})
    holes = sorted({k[1] for k in sel})
    lo, hi = holes[0], holes[-1]
    by_regions = ['%s %.1f×' % (size_name(g), sel[(g, hi)]['med'] / sel[(g, lo)]['med'])
                  for g in sizes if (g, lo) in sel and (g, hi) in sel]
    # Against the smallest map with slots at that hole count (a map without
    # any has no last slot to find, so it does less).
    def smallest(h):
        return next((g for g in sizes if sel.get((g, h), {}).get('slots')), None)
    by_size = ['%d holes %.2f× (from %s)' % (h, sel[(sizes[-1], h)]['med'] / sel[(smallest(h), h)]['med'],
                                            size_name(smallest(h)))
               for h in holes if smallest(h) is not None and (sizes[-1], h) in sel]
    slots_ratio = (sel[(sizes[-1], lo)]['slots'] / sel[(sizes[0], lo)]['slots']
                   if sel[(sizes[0], lo)]['slots'] else float('inf'))
    big = sel.get((sizes[-1], hi))
    L.append('**Cost follows the regions, not the slots.** From %d to %d holes the placement '
             'time grows %s; from %s to %s of RAM (%s times the slots at %d holes) it changes '
             '%s. Every step is a walk over the ranges: slots inside a free interval are '
             'counted by arithmetic, never visited.' % (
                 lo, hi, ', '.join(by_regions), size_name(sizes[0]), size_name(sizes[-1]),
                 '{:,}'.format(round(slots_ratio)) if slots_ratio != float('inf') else '∞',
                 lo, ', '.join(by_size)))
    L.append('')
    if big:
        verdict = 'holds' if big['med'] <= GOAL_US and not big['dropped'] else 'does not hold'
        L.append('| goal | limit | measured | verdict |')
        L.append('|---|---|---|---|')
        L.append('| placement on a %s, %d-hole map, host | ≤ 1 ms | %.1f µs median (p99 %.1f µs), '
                 '%d RAM ranges kept%s | **%s** |' % (
                     size_name(sizes[-1]), hi, big['med'], big['p99'], big['ram'],
                     ', some RAM dropped' if big['dropped'] else '', verdict))
        L.append('')
    L.append('What changed for this (measured once, with this harness, on the commit before '
             'the change, same machine under load): the RAM table held 256 ranges, so a '
             '1000-hole map lost three quarters of its RAM (12 TiB: 1,600,742 slots instead '
             'of 6,259,314) and filling it re-sorted the table on every add (0.3–0.6 ms of '
             'parsing); the slot walk scanned each table for its next range, O(n²): 89–105 µs '
             'per count at 256 ranges, 0.5–0.8 ms in all. Now the table holds 2048 RAM ranges '
             '(32 KiB more in the stage\'s bss), and a table already in start order — what '
             '`rr_memmap_apply_cmdline` leaves and what firmware gives — is walked in index '
             'order, which visits the ranges in exactly the order the scan did (ties by '
             'index), so the slots and their numbering, hence the uniform draw, are unchanged '
             '(`tests/unit/test_select.c` compares every slot on random maps given out of '
             'order, in start order unmerged, and normalized). An unsorted table still works, '
             'by the O(n²) scan.')
    L.append(END)
    return '\n'.join(L) + '\n'


def main():
    global OUT
    out, docs = sys.argv[1], sys.argv[2]
    OUT = out
    if not os.path.exists(os.path.join(out, 'data', 'scale.tsv')):
        return
    sel, ent = load(out)
    chart(out, docs, sel, ent)
    md, text = mdsection.read_doc(docs)
    text = mdsection.splice(text, BEGIN, END, section(sel, ent))
    with open(md, 'w') as f:
        f.write(text)


if __name__ == '__main__':
    main()
