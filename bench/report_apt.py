#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, apt part (issue 28, goal 4): the section "`apt install` of a
kernel package" of docs/performance.md from bench/apt-install.sh's data, between
its markers (or at the end), and its goal row in the Goals table that
bench/report.py wrote (run after it).  Without data it leaves the document
alone."""
import os
import statistics
import sys

import mdsection

BEGIN = '<!-- apt: bench/report_apt.py -->'
END = '<!-- /apt -->'
GOAL = '| `apt install` of a kernel package with rerand\'s hook ÷ without'
LIMIT = 1.1


def read(out, name):
    f = os.path.join(out, 'data', name)
    return open(f).read() if os.path.exists(f) else ''


def pairs_of(rows):
    """{pair: {mode: row}} for the pairs whose two installs both ran and
    were checked (the hook built the image, or did not)."""
    by = {}
    for r in rows:
        by.setdefault(r['pair'], {})[r['mode']] = r
    out = []
    for p in sorted(by):
        m = by[p]
        if set(m) == {'hook', 'bare'} and all(x['ok'] for x in m.values()):
            order = sorted(m.values(), key=lambda x: x['n'])
            out.append((p, ' then '.join('with' if x['mode'] == 'hook' else 'without' for x in order),
                        m['bare']['s'], m['hook']['s'], m['hook']['s'] / m['bare']['s'], m['hook']))
    return out


def main():
    out, docs = sys.argv[1], sys.argv[2]
    tsv = read(out, 'apt.tsv')
    setup = read(out, 'apt-setup.txt').splitlines()
    if not tsv and not setup:
        return
    rows = []
    for line in tsv.splitlines():
        c = line.split('\t')
        if len(c) < 8:
            continue
        rows.append({'n': int(c[0]), 'pair': int(c[1]), 'mode': c[2], 'rc': int(c[3]),
                     'ok': c[4] == 'ok' and c[3] == '0', 's': float(c[5]),
                     'img': c[6], 'initrd': c[7],
                     'wall': float(c[8]) if len(c) > 8 and float(c[8]) >= 0 else None})
    P = pairs_of(rows)
    gk, deb, planned, modules = (setup + ['?'] * 4)[:4]
    wall = read(out, 'apt-wall.txt').split()
    fail = read(out, 'apt-fail.txt').strip()
    L = [BEGIN, '## 9. `apt install` of a kernel package', '']
    L.append('rerand builds the image of a new kernel when the kernel package is installed '
             '(its hook `/etc/kernel/postinst.d/rerand`), not at reboot, so this is what the hook '
             'makes a user wait for. `bench/apt-install.sh` boots a Debian 12 guest (the base root '
             'of `tests/e2e/lib-systemd.sh` with kmod, initramfs-tools, busybox and zstd; this tree '
             'installed as its package installs it, with the kernel hooks of '
             '`debian/rerand.install`; rerandd not running) and its agent (`bench/apt/agent.sh`) '
             'runs `apt-get install ./%s` %s times in alternating pairs: *with* the hook in place '
             'and *without* it (the file moved aside), purging the package after each install so '
             'that every install does the same work. After each install the agent checks that the '
             'hook built the image under `/var/lib/rerand/images` with its key and checksum (with) '
             'or built nothing (without); a run that fails the check is not counted. initramfs-tools '
             'as configured by default (MODULES=%s) builds the initramfs in both.' % (
                 deb, 2 * int(planned) if planned.isdigit() else planned, modules))
    L.append('')
    L.append('The root is the initramfs (root in RAM, no disk) and QEMU runs TCG, 1 vCPU, with '
             '`-icount shift=0,sleep=off,align=off`: the guest\'s clock advances with the '
             'instructions it executes, one virtual nanosecond each, so the times below are '
             'virtual seconds that host load does not change (a 1 GHz, one-instruction-per-cycle '
             'machine: slower than real hardware, in the same proportion for both modes). Guest '
             'kernel %s.%s' % (gk, ' The guest took %s s of host wall time (QEMU exit %s).' % (
                 wall[0], wall[1]) if len(wall) >= 2 else ''))
    L.append('')
    dl = read(out, 'apt-deadline.txt').strip()
    if dl:
        L.append('QEMU\'s timeout was cut to the run\'s deadline (`BENCH_DEADLINE`, %s UTC); '
                 '%s.' % (dl, 'the plan ended before it' if not fail else 'the guest was stopped there'))
        L.append('')
    if fail:
        L.append('**The guest stopped before the end of its plan:** `%s`; the whole, checked pairs '
                 'before it are below.' % fail)
        L.append('')
    L.append('| pair | order | without hook s | with hook s | with ÷ without |')
    L.append('|---|---|---|---|---|')
    for p in P:
        L.append('| %d | %s | %.1f | %.1f | %.3f× |' % p[:5])
    ratio = worst = None
    if P:
        mb = statistics.median(p[2] for p in P)
        mh = statistics.median(p[3] for p in P)
        ratio = statistics.median(p[4] for p in P)
        worst = max(p[4] for p in P)
        L.append('| median | | %.1f | %.1f | %.3f× |' % (mb, mh, ratio))
        L.append('')
        imgs = sorted({p[5]['img'] for p in P})
        hw = [r['wall'] for r in rows if r['wall'] is not None]
        L.append('The hook\'s share: %.1f virtual s (median with − median without). Image %s bytes, '
                 'initramfs %s bytes.%s' % (mh - mb, ', '.join(imgs), P[0][5]['initrd'],
                 ' One install took %.0f s of host wall time (median of %d; TCG with -icount '
                 'is slow, and the host\'s load only stretches it).' % (statistics.median(hw), len(hw))
                 if hw else ''))
    L.append('')
    holds = ratio is not None and ratio <= LIMIT
    few = planned.isdigit() and len(P) < int(planned)
    note = ('median of %d pair ratio(s), worst %.3f×%s' % (
        len(P), worst, '; fewer than the %s pairs planned' % planned if few else '')) if P else \
        'no whole, checked pair (above)'
    verdict = 'not measured in this run' if ratio is None else \
        ('**holds**' if holds else '**does not hold**')
    row = '%s | ≤ %.1f× | %s | %s | %s |' % (GOAL, LIMIT, '%.3f×' % ratio if ratio else 'n/a',
                                           verdict, note)
    L.append('| goal | limit | measured | verdict | note |')
    L.append('|---|---|---|---|---|')
    L.append(row)
    L.append(END)
    sec = '\n'.join(L) + '\n'

    md, text = mdsection.read_doc(docs)
    text = mdsection.splice(text, BEGIN, END, sec)
    # The same row in the Goals table (bench/report.py's "## Goals" section):
    # after its last row, replacing one a previous run put there.
    lines = text.split('\n')
    try:
        g = next(i for i, l in enumerate(lines) if l.startswith('## Goals'))
    except StopIteration:
        g = None
    if g is not None:
        i = g + 1
        while i < len(lines) and not lines[i].startswith('|'):
            i += 1
        j = i
        while j < len(lines) and lines[j].startswith('|'):
            j += 1
        if j > i:
            tab = [l for l in lines[i:j] if not l.startswith(GOAL)] + [row]
            lines[i:j] = tab
    open(md, 'w').write('\n'.join(lines))


if __name__ == '__main__':
    main()
