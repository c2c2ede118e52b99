#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench`, downtime part: the section "Whole-reboot downtime" of
docs/performance.md from bench/downtime.sh's data (run after bench/report.py,
like bench/report_scale.py: between its markers, or at the end).  Without
data it leaves the document alone."""
import os
import statistics
import sys

import mdsection

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


def read_stamps(out):
    """The guest's own stamps (bench/downtime-parse.sh: data/downtime-stamps.tsv):
    {(kind, n): fields}, and the clock they ran on (data/downtime-clock)."""
    st = {}
    path = os.path.join(out, 'data', 'downtime-stamps.tsv')
    if os.path.exists(path):
        for line in open(path):
            c = line.rstrip('\n').split('\t')
            if len(c) >= 3:
                st.setdefault((c[0], int(c[1])), c[2:])
    clock = 'wall'
    cf = os.path.join(out, 'data', 'downtime-clock')
    if os.path.exists(cf):
        clock = open(cf).read().strip() or 'wall'
    return st, clock


def split(st, plan):
    """Each reboot N split by the guest's TSC stamps: {n: dict}, seconds.
    The old system's stamps (its "up" N-1, "go" N, "stop" N, "final" N) and
    the new one's "up" N (TSC, CLOCK_MONOTONIC ns) and PID 1's start.  f, the
    TSC ticks per ns, is measured per boot between two stamps of it (its "up"
    and its last "final"); the new kernel's time zero is TSC_up - MONO_up * f:
    CLOCK_MONOTONIC starts with the kernel's TSC sched_clock, set up early in
    setup_arch(), so "kexec" below also holds the few early steps before it."""
    def ts(kind, n):
        v = st.get((kind, n))
        return (int(v[0]), int(v[1])) if v and len(v) >= 2 else None

    def freq(n):  # boot n: from its "up" to the "final" of reboot n + 1
        a, b = ts('up', n), ts('final', n + 1)
        if a and b and b[1] > a[1]:
            return (b[0] - a[0]) / (b[1] - a[1])
        return None

    rows = {}
    for n in range(1, len(plan) + 1):
        up0, go, stop, fin, up = ts('up', n - 1), ts('go', n), ts('stop', n), ts('final', n), ts('up', n)
        us = st.get(('ustart', n))
        fo = freq(n - 1)
        fn = freq(n) or fo
        if not (go and stop and fin and up and us and fo and fn) or not us[0].isdigit():
            continue
        kzero = up[0] - up[1] * fn
        r = {'mode': plan[n - 1], 'f': fo,
             'before': (stop[0] - go[0]) / fo / 1e9,
             'shutdown': (fin[0] - stop[0]) / fo / 1e9,
             'kexec': (kzero - fin[0]) / fo / 1e9,
             'kernel': int(us[0]) / 1e6,
             'userspace': (up[1] - int(us[0]) * 1000) / 1e9}
        r['downtime'] = r['shutdown'] + r['kexec'] + r['kernel'] + r['userspace']
        rs = st.get(('rerandd-stop', n))
        a, b = ts('stop-rerandd', n), ts('stopped-rerandd', n)
        if a and b:
            # rerandd's unit's own stamps (the root in RAM): its ExecStop=,
            # run as its stop begins, and its ExecStopPost=, once it is gone.
            r['rd_start'] = (a[1] - stop[1]) / 1e9
            r['rd_dur'] = (b[1] - a[1]) / 1e9
        elif rs and len(rs) >= 2 and rs[0] != '-' and rs[1] != '-':
            # The old boot's journal, CLOCK_MONOTONIC seconds like "stop"'s.
            r['rd_start'] = float(rs[0]) - stop[1] / 1e9
            r['rd_dur'] = float(rs[1]) - float(rs[0])
        rows[n] = r
    return rows


def stamp_pairs(rows):
    """Pair i (reboots 2i - 1 and 2i): (i, order, stock row, rerand row)."""
    out = []
    for i in range(1, max(rows, default=0) // 2 + 1):
        a, b = rows.get(2 * i - 1), rows.get(2 * i)
        if a and b and {a['mode'], b['mode']} == {'s', 'r'}:
            s, r = (a, b) if a['mode'] == 's' else (b, a)
            out.append((i, a['mode'] + b['mode'], s, r))
    return out


def runs(out):
    """The downtime runs of one `make bench` (scripts/bench.sh: OUT/dt/TAG,
    TAG icount-KERNEL, wall-KERNEL, det-as-is-I, det-busy-I): [(tag, dir)]."""
    base = os.path.join(out, 'dt')
    if not os.path.isdir(base):
        return []
    return [(t, os.path.join(base, t)) for t in sorted(os.listdir(base))
            if os.path.isdir(os.path.join(base, t))]


def run_stamps(rdir):
    """(stamps, plan) of one run, for split()."""
    st, clock = read_stamps(rdir)
    pf = os.path.join(rdir, 'downtime', 'plan')
    plan = open(pf).read().split() if os.path.exists(pf) else []
    return st, plan


def run_kernel(rdir):
    """The kernel a run booted, from bench/downtime.sh's first line."""
    try:
        for line in open(rdir + '.out'):
            if line.startswith('bench/downtime.sh: vmlinuz-'):
                return line.split()[1].rstrip(',')[len('vmlinuz-'):]
    except OSError:
        pass
    return '?'


def load_of(rdir):
    def one(f):
        try:
            return open(f).read().split()[0]
        except (OSError, IndexError):
            return '?'
    return one(rdir + '.load-start'), one(rdir + '.load-end')


def determinism(dt_runs):
    """The determinism runs (det-as-is-I, det-busy-I: one pair each, the
    same kernel): per run the stock and rerand downtime and kexec segment,
    and how far apart each figure lies over all runs, in %: (max - min) / min."""
    rows = []
    for tag, rdir in dt_runs:
        if not tag.startswith('det-'):
            continue
        pairs = stamp_pairs(split(*run_stamps(rdir)))
        if not pairs:
            rows.append((tag, rdir, None, None))
            continue
        i, o, s_, r = pairs[0]
        rows.append((tag, rdir, s_, r))
    good = [x for x in rows if x[2]]
    if len(good) < 2:
        return None
    spread = []
    for name, key, which in (('stock downtime', 'downtime', 2), ('rerand downtime', 'downtime', 3),
                             ('stock kexec', 'kexec', 2), ('rerand kexec', 'kexec', 3)):
        v = [x[which][key] for x in good]
        spread.append((name, 100.0 * (max(v) - min(v)) / min(v)))
    return {'rows': rows, 'spread': spread, 'ok': all(v <= 1.0 for k, v in spread) and len(good) == len(rows),
            'n_as_is': sum(t.startswith('det-as-is') for t, d, a, b in rows),
            'n_busy': sum(t.startswith('det-busy') for t, d, a, b in rows),
            'kernel': run_kernel(good[0][1])}


def determinism_section(dt_runs):
    d = determinism(dt_runs)
    if not d:
        return []
    L = ['', '### Does the icount clock repeat?', '',
         'The same pair (one stock reboot, one rerand reboot, %s), each run a fresh QEMU from the '
         'same initrd: %d run(s) with the host as the rest of `make bench` left it, then %d with '
         'every CPU also kept busy by a busy loop at QEMU\'s priority. Load average (1 min) at '
         'the start and the end of each run.' % (d['kernel'], d['n_as_is'], d['n_busy']), '',
         '| run | load | stock downtime s | rerand downtime s | stock kexec → kernel s '
         '| rerand kexec → kernel s |', '|---|---|---|---|---|---|']
    for tag, rdir, s_, r in d['rows']:
        la, lb = load_of(rdir)
        if s_ is None:
            L.append('| %s | %s → %s | not measured | | | |' % (tag, la, lb))
            continue
        L.append('| %s | %s → %s | %.4f | %.4f | %.4f | %.4f |' % (
            tag, la, lb, s_['downtime'], r['downtime'], s_['kexec'], r['kexec']))
    L += ['', 'Spread over the runs, (max − min) ÷ min: %s. The goal: within 1 %%: **%s**.' % (
        ', '.join('%s %.3f %%' % (k, v) for k, v in d['spread']),
        'holds' if d['ok'] else 'does not hold')]
    return L


def guest_clock_section(out, plan, title=None):
    """The guest's own measurement: downtime from "shutdown begins" to
    multi-user.target, split, per pair and per reboot."""
    st, clock = read_stamps(out)
    rows = split(st, plan)
    if not rows:
        return []
    ic = clock.startswith('icount')
    cw = clock.split() + ['?', 'off']
    shift, sleep = cw[1], cw[2]  # "icount SHIFT SLEEP" (bench/downtime.sh)
    L = ['', '### %sDowntime on the guest\'s clock (%s)' % (title + ': ' if title else '',
        'QEMU -icount shift=%s,sleep=%s,align=off' % (shift, sleep) if ic else 'wall: no -icount'), '']
    L.append('The guest stamps its own TSC (`bench/downtime/rrb-tsc`, which runs on across kexec): '
             '*shutdown begins* is the `ExecStop=` of `rerand-bench-mark.service`, ordered after '
             '`multi-user.target`, so stopped before every service; *final* is systemd-shutdown\'s '
             'hook (`/usr/lib/systemd/system-shutdown/`) right before the kexec system call; the '
             'new kernel\'s time zero is its TSC at "up" less its CLOCK_MONOTONIC (which starts '
             'when the kernel sets up its TSC clock, early in `setup_arch()`, so *kexec → kernel* '
             'holds those first steps too); *kernel* ends when PID 1 starts, *userspace* at '
             '`multi-user.target`. Downtime = shutdown + kexec + kernel + userspace. *go → '
             'shutdown* is before the window: for rerand, rerandd\'s work between `rerand now` '
             'and its reboot request, while every service still runs.')
    if ic:
        L.append('')
        L.append('Under `-icount` the guest\'s clocks, the TSC among them, advance with the '
                 'instructions it executes (2^%s ns each), so the host\'s load, which only delays '
                 'them, does not change what the guest\'s CPU work measures. %s' % (shift, (
                     'While the guest idles (waiting for a timer, or for disk I/O, which the host '
                     'completes) its clock follows the host\'s (`sleep=on`): that part still moves '
                     'with the host.' if sleep == 'on' else
                     'Idle time is skipped (`sleep=off`): the clock jumps to the guest\'s next '
                     'timer whenever it idles; with no disk, nothing else waits on the host.')))
    pairs = stamp_pairs(rows)
    if pairs:
        L += ['', '| pair | order | stock s | rerand s | rerand ÷ stock | kexec → kernel, stock s '
              '| rerand s | rerand ÷ stock |', '|---|---|---|---|---|---|---|---|']
        for i, o, s, r in pairs:
            L.append('| %d | %s | %.3f | %.3f | %.3f× | %.3f | %.3f | %.2f× |' % (
                i, ' then '.join('stock' if c == 's' else 'rerand' for c in o), s['downtime'],
                r['downtime'], r['downtime'] / s['downtime'], s['kexec'], r['kexec'],
                r['kexec'] / s['kexec'] if s['kexec'] > 0 else float('nan')))
    L += ['', '| reboot | mode | go → shutdown s | shutdown s | kexec → kernel s | kernel s '
          '| userspace s | downtime s | rerandd stop: starts at s, takes s |',
          '|---|---|---|---|---|---|---|---|---|']
    for n in sorted(rows):
        r = rows[n]
        rd = ('%.3f, %.3f' % (r['rd_start'], r['rd_dur'])) if 'rd_dur' in r else 'n/a'
        L.append('| %d | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %s |' % (
            n, 'stock' if r['mode'] == 's' else 'rerand', r['before'], r['shutdown'], r['kexec'],
            r['kernel'], r['userspace'], r['downtime'], rd))
    fs = sorted(r['f'] for r in rows.values())
    L += ['', 'TSC rate measured in the guest (ticks per ns, per boot): %.6f–%.6f. *rerandd stop*: '
          'from its unit\'s `ExecStop=` to its `ExecStopPost=` (stamps of a drop-in; with a disk, '
          'PID 1\'s "Stopping" to "Stopped rerandd.service" in the old boot\'s journal), its start '
          'counted from shutdown begins.' % (fs[0], fs[-1])]
    return L


def wall_section(out):
    """The host's time stamps of one run (data/downtime.tsv): the pairs."""
    path = os.path.join(out, 'data', 'downtime.tsv')
    if not os.path.exists(path):
        return []
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
    L = ['', '### On the host\'s clock (%s, no -icount)' % run_kernel(out), '']
    L.append('Downtime here: from the agent\'s "go" line right before the command to the new '
             'boot\'s first line from a unit ordered after `multi-user.target`, both time-stamped '
             'by the host on the serial console: the host\'s wall clock, which moves with its load.')
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
    st, plan = run_stamps(out)
    L.extend(guest_clock_section(out, plan, 'wall, ' + run_kernel(out)))
    return L


INTRO = ('The Debian 12 guest of `tests/e2e/lib-systemd.sh` (systemd as PID 1, rerandd, the e2e '
         'writer service, a getty; QEMU TCG, 1 vCPU, 3 GiB) reboots itself in alternating pairs '
         '(`bench/downtime.sh`, agent `bench/downtime/agent.sh`). *Stock*: `kexec -l` of the same '
         'kernel and initrd beforehand, then `systemctl kexec`. *rerand*: `rerand now`, after which '
         'rerandd restages with a fresh seed, runs its blocker command and reboots through that '
         'image. Its root is in RAM: the initrd (about 27 MiB, zstd, the size of a Debian cloud '
         'initrd) holds the whole root, systemd is its init, and no disk exists, because a disk\'s '
         'I/O completes in the host\'s time and would put the host\'s load back into the guest\'s '
         'clock. `/boot` and rerandd\'s cached image (built by the kernel hook, as at a kernel\'s '
         'installation) come from QEMU\'s fw_cfg at every boot before rerandd starts, so they are '
         'not in what kexec-tools\' purgatory hashes, as on a machine with a disk. Both modes boot '
         'the same initrd and run the same services.')


def main():
    out, docs = sys.argv[1], sys.argv[2]
    dt_runs = runs(out)
    if not dt_runs:
        return
    L = [BEGIN, '## 8. Whole-reboot downtime under systemd', '', INTRO]
    for tag, rdir in dt_runs:
        if tag.startswith('icount-'):
            st, plan = run_stamps(rdir)
            sec = guest_clock_section(rdir, plan, run_kernel(rdir))
            failed = os.path.join(rdir, 'data', 'downtime-failed')
            if os.path.exists(failed):
                sec += ['', '**This run failed** (`bench/downtime.sh`): %s' % open(failed).read().strip()]
            L.extend(sec or ['', '### %s: no whole pair measured' % run_kernel(rdir)])
    L.extend(determinism_section(dt_runs))
    for tag, rdir in dt_runs:
        if tag.startswith('wall-'):
            L.extend(wall_section(rdir))
    L.append(END)
    sec = '\n'.join(L) + '\n'
    md, text = mdsection.read_doc(docs)
    text = mdsection.splice(text, BEGIN, END, sec)
    open(md, 'w').write(text)


if __name__ == '__main__':
    main()
