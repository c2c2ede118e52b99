#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, downtime part: the section "Whole-reboot downtime" of
docs/performance.md from bench/downtime.sh's data (run after bench/report.py,
like bench/report_scale.py: between its markers, or at the end).  Without
data it leaves the document alone."""
import os
import statistics
import sys

BEGIN = '<!-- downtime: bench/report_downtime.py -->'
END = '<!-- /downtime -->'


def phases(steps):
    """Where each reboot's time went: before the new kernel's clock started
    (shutdown, kexec, purgatory, stage or decompressor) and after it (the
    kernel's boot and systemd until multi-user.target)."""
    rows = [s for s in steps if s[3] >= 0]
    if not rows:
        return []
    L = ['', '### Where the time goes', '',
         'Each reboot split at the new kernel\'s clock, which the agent\'s kernel-log copy of '
         '"up" carries: *before* is the old system\'s shutdown, kexec, kexec-tools\' purgatory '
         'and the stage (rerand) or the kernel\'s own decompressor (stock), up to the new '
         'kernel\'s time zero; *after* is the new kernel\'s boot and systemd up to '
         '`multi-user.target`, the same kernel and services in both modes.', '',
         '| reboot | mode | downtime s | before s | after s |', '|---|---|---|---|---|']
    for n, m, tot, ut in rows:
        L.append('| %d | %s | %.1f | %.1f | %.1f |' % (n, 'stock' if m == 's' else 'rerand',
                                                     tot, tot - ut, ut))
    L.append('')
    L.append('| mode | reboots | before, median (min–max) s | after, median (min–max) s |')
    L.append('|---|---|---|---|')
    for m, name in (('s', 'stock'), ('r', 'rerand')):
        b = [tot - ut for n, mm, tot, ut in rows if mm == m]
        a = [ut for n, mm, tot, ut in rows if mm == m]
        if b:
            L.append('| %s | %d | %.1f (%.1f–%.1f) | %.1f (%.1f–%.1f) |' % (
                name, len(b), statistics.median(b), min(b), max(b),
                statistics.median(a), min(a), max(a)))
    return L


def main():
    out, docs = sys.argv[1], sys.argv[2]
    path = os.path.join(out, 'data', 'downtime.tsv')
    if not os.path.exists(path):
        return
    steps = []
    for line in open(path):
        c = line.rstrip('\n').split('\t')
        if c[0] == 'downtime':
            # The fifth column (the new kernel's clock at multi-user) came
            # with the kernel-log markers; older data has none (-1).
            steps.append((int(c[1]), c[2], float(c[3]), float(c[4]) if len(c) > 4 else -1.0))
    steps.sort()
    # Pair i is steps 2i - 1 and 2i of the plan (s r, r s, ...); a pair with
    # a step missing (bench/downtime-parse.sh: downtime-lost) is left out.
    by = {s[0]: s for s in steps}
    pairs = []
    for i in range(1, (max(by) + 1) // 2 + 1 if by else 1):
        a, b = by.get(2 * i - 1), by.get(2 * i)
        if not a or not b:
            continue
        m = {a[1]: a[2], b[1]: b[2]}
        if set(m) == {'s', 'r'}:
            pairs.append((i, a[1] + b[1], m['s'], m['r'], m['r'] / m['s']))
    def data(name):  # an optional file of bench/downtime*.sh, '' when absent
        f = os.path.join(out, 'data', name)
        return open(f).read() if os.path.exists(f) else ''

    lost = data('downtime-lost').split()
    L = [BEGIN, '## 8. Whole-reboot downtime under systemd', '']
    L.append('The Debian 12 guest of `tests/e2e/lib-systemd.sh` (systemd as PID 1, rerandd, '
             'the e2e writer service, a getty; NVMe root, no initrd, QEMU TCG, 1 vCPU) reboots '
             'itself in alternating pairs (`bench/downtime.sh`, agent `bench/downtime/agent.sh`). '
             '*Stock*: `kexec -l` of the same kernel beforehand, then `systemctl kexec`. '
             '*rerand*: `rerand now`, after which rerandd decides, runs its blocker command and '
             'reboots through the image it keeps staged. Downtime: from the agent\'s "go" line '
             'right before the command to the new boot\'s first line from a unit ordered after '
             '`multi-user.target`, both time-stamped by the host on the serial console; it '
             'includes the old system\'s shutdown, kexec-tools\' purgatory, the stage (rerand), '
             'the kernel\'s boot and systemd\'s start-up.')
    L.append('')
    cut = data('downtime-cut').split('\t')
    if len(cut) >= 4:
        L.append('**This run was cut short:** its deadline (`BENCH_DEADLINE`, %s UTC) stopped the '
                 'guest during reboot %s of the %s planned; %s reboots were measured, and only '
                 'the whole pairs below count.' % (cut[2], cut[3].strip(), cut[1], cut[0]))
        L.append('')
    step = data('downtime-clockstep').split()
    if step:
        L.append('During reboot(s) %s the host\'s clock went back (a serial-console stamp below '
                 'the one before it), so they are not measured, and their pair(s) are left '
                 'out below.' % ', '.join(step))
        L.append('')
    stopped = data('downtime-stopped').strip()
    if stopped:
        L.append('QEMU did not exit within %s s of the guest\'s last marker ("RRB done", before '
                 'its `systemctl poweroff`) and was stopped (`bench/downtime.sh`); every reboot of '
                 'the plan had been logged by then.' % stopped)
        L.append('')
    if lost:
        L.append('Reboot(s) %s of the plan happened, but a marker of each (its "go" or the next '
                 'boot\'s "up" line) never reached the serial console, so they are not measured, '
                 'and their pair(s) are left out below.' % ', '.join(lost))
        L.append('')
    L.append('| pair | order | stock s | rerand s | rerand ÷ stock |')
    L.append('|---|---|---|---|---|')
    for p in pairs:
        L.append('| %d | %s | %.1f | %.1f | %.2f× |' % (p[0], ' then '.join(
            'stock' if c == 's' else 'rerand' for c in p[1]), p[2], p[3], p[4]))
    if pairs and len(pairs) < 10:
        ms = statistics.median(p[2] for p in pairs)
        mr = statistics.median(p[3] for p in pairs)
        L.append('| median | | %.1f | %.1f | %.2f× |' % (ms, mr, mr / ms))
        L.append('')
        over = sum(p[4] > 1.1 for p in pairs)
        L.append('Only %d whole pair(s) measured (`BENCH_DOWNTIME_PAIRS`, `BENCH_DEADLINE`, lost '
                 'markers or a host clock step: above). %s; the median (≤ 1.0×) is shown for these pairs only.' % (
                     len(pairs), '**Every pair ≤ 1.1× does not hold**: %d pair(s) over it' % over
                     if over else 'Every pair ≤ 1.1× holds for these pairs, not shown for 10'))
    elif pairs:
        ms = statistics.median(p[2] for p in pairs)
        mr = statistics.median(p[3] for p in pairs)
        worst = max(p[4] for p in pairs)
        over = sum(p[4] > 1.1 for p in pairs)
        L.append('| median | | %.1f | %.1f | %.2f× |' % (ms, mr, mr / ms))
        L.append('')
        L.append('| goal | limit | measured | verdict |')
        L.append('|---|---|---|---|')
        L.append('| downtime rerand ÷ stock, every pair | ≤ 1.1× | worst %.2f×, %d of %d pairs over 1.1× '
                 '| **%s** |' % (worst, over, len(pairs), 'holds' if over == 0 else 'does not hold'))
        L.append('| downtime rerand ÷ stock, medians | ≤ 1.0× | %.2f× | **%s** |' % (
            mr / ms, 'holds' if mr <= ms else 'does not hold'))
    L.extend(phases(steps))
    L.append(END)
    sec = '\n'.join(L) + '\n'
    md = os.path.join(docs, 'performance.md')
    text = open(md).read() if os.path.exists(md) else ''
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + sec.rstrip('\n') + text[text.index(END) + len(END):]
    else:
        text = text.rstrip('\n') + '\n\n' + sec
    open(md, 'w').write(text)


if __name__ == '__main__':
    main()
