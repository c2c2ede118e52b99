#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make bench-fleet` (bench/fleet.sh), issue 43 point 1: the table of the
fleet at scale from OUT/runs (each rollout's events, etcd's /metrics before
and after, the lease/watcher samples, the chaos checker's output), written to
OUT/fleet.md and as the section "Fleet at scale" of docs/performance.md
(between its markers, or at the end).  Also usable on one run directory:
    report_fleet.py --run DIR K   prints the run's figures as key=value
(tests/fleet/test-fleet-bench.sh)."""
import math
import os
import re
import statistics
import sys

import mdsection

BEGIN = '<!-- fleet: bench/report_fleet.py -->'
END = '<!-- /fleet -->'
ROLLOUT_GOAL = 1.05
IDLE_GOAL = 1.0          # requests per idle host per 5 minutes
RSS_GOAL_KIB = 4096
CPU_GOAL_S = 1.0


def kv(path):
    out = {}
    if os.path.exists(path):
        for line in open(path):
            if '=' in line:
                k, v = line.rstrip('\n').split('=', 1)
                out[k] = v
    return out


def metrics(path):
    """{name: summed value} for the series we use (all label sets summed)."""
    want = ('etcd_server_client_requests_total', 'process_cpu_seconds_total',
            'process_resident_memory_bytes', 'etcd_mvcc_db_total_size_in_bytes',
            'etcd_debugging_mvcc_watcher_total')
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        if line.startswith('#'):
            continue
        m = re.match(r'^([a-z_]+)(\{[^}]*\})? (\S+)$', line.strip())
        if m and m.group(1) in want:
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
    return out


def members(d, tag):
    return [metrics(os.path.join(d, 'metrics-%s-e%d' % (tag, i))) for i in (1, 2, 3)]


def etcd_cost(d):
    """requests, window s, etcd CPU s (3 members), max RSS, max db size, members seen."""
    b, a = members(d, 'before'), members(d, 'after')
    tb = int(open(os.path.join(d, 't-before')).read())
    ta = int(open(os.path.join(d, 't-after')).read())
    req = sum(x.get('etcd_server_client_requests_total', 0) - y.get('etcd_server_client_requests_total', 0)
              for x, y in zip(a, b))
    cpu = sum(x.get('process_cpu_seconds_total', 0) - y.get('process_cpu_seconds_total', 0)
              for x, y in zip(a, b))
    rss = max([x.get('process_resident_memory_bytes', 0) for x in a] + [0])
    db = max([x.get('etcd_mvcc_db_total_size_in_bytes', 0) for x in a] + [0])
    seen = sum(1 for x in a if x)
    return req, (ta - tb) / 1000.0, cpu, rss, db, seen


def pct(xs, p):
    if not xs:
        return float('nan')
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(p / 100.0 * len(xs))) - 1)]


def run_figures(d, k):
    """The figures of one rollout directory."""
    ev = []
    due = None
    hdr = {}
    for line in open(os.path.join(d, 'events')):
        p = line.split()
        if len(p) < 3 or not p[0].isdigit():
            continue
        t = int(p[0])
        if p[2] == 'DUE':
            due = t
            hdr = dict(x.split('=', 1) for x in p[3:] if '=' in x)
            continue
        ev.append((t, p[1], p[2], p[3:]))
    ev.sort()
    n = int(hdr.get('hosts', 0))
    down_ms = int(hdr.get('down_ms', 0))
    confirm_ms = int(hdr.get('confirm_ms', 0))
    cycle = down_ms + confirm_ms
    acq, rel, attempts, errors = {}, {}, {}, 0
    for t, h, e, rest in ev:
        if e == 'ACQUIRED' and h not in acq:
            acq[h] = t
            for x in rest:
                if x.startswith('attempts='):
                    attempts[h] = int(x.split('=', 1)[1])
        elif e == 'RELEASED':
            rel[h] = t
        elif e in ('ERROR', 'ABORT', 'GAVE_UP'):
            errors += 1
    f = {'hosts': n, 'k': k, 'down_ms': down_ms, 'confirm_ms': confirm_ms,
         'completed': len(rel), 'errors': errors}
    rounds = -(-n // k) if k else 0
    f['rounds_ideal'] = rounds
    f['ideal_s'] = rounds * cycle / 1000.0
    if due is not None and len(rel) == n and n:
        f['rollout_s'] = (max(rel.values()) - due) / 1000.0
        f['ratio'] = f['rollout_s'] / f['ideal_s'] if f['ideal_s'] else float('nan')
    else:
        f['rollout_s'] = float('nan')
        f['ratio'] = float('nan')
    lat = [(t - due) / 1000.0 for t in acq.values()] if due is not None else []
    f['acq_median_s'] = statistics.median(lat) if lat else float('nan')
    f['acq_p99_s'] = pct(lat, 99)
    # fairness: the round (1-based, in units of downtime + confirmation) in
    # which each host got its slot; ideally the last gets it in round ceil(N/K)
    f['max_round'] = max(int((t - due) // cycle) + 1 for t in acq.values()) if acq and cycle else 0
    f['max_attempts'] = max(attempts.values()) if attempts else 0
    f['attempts_total'] = sum(attempts.values())
    # hand-over: the j-th slot taken (j >= K) against the release that made room
    a = sorted(acq.values())
    r = sorted(rel.values())
    gaps = [(a[j] - r[j - k]) / 1000.0 for j in range(k, len(a)) if j - k < len(r)]
    f['handover_median_s'] = statistics.median(gaps) if gaps else float('nan')
    f['handover_p99_s'] = pct(gaps, 99)
    chk = kv(os.path.join(d, 'check'))
    f['max_down'] = int(chk.get('max_down', -1))
    f['obs_max'] = int(chk.get('obs_max', -1))
    f['violations'] = sum(1 for line in open(os.path.join(d, 'check')) if line.startswith('VIOLATION')) \
        if os.path.exists(os.path.join(d, 'check')) else -1
    f['check_rc'] = open(os.path.join(d, 'check-rc')).read().strip() if os.path.exists(os.path.join(d, 'check-rc')) else '?'
    if os.path.exists(os.path.join(d, 't-before')):
        req, win, cpu, rss, db, seen = etcd_cost(d)
        f.update(req=req, win_s=win, req_per_s=req / win if win else float('nan'),
                 req_per_host=req / n if n else float('nan'), etcd_cpu=cpu / win if win else float('nan'),
                 etcd_rss=rss, etcd_db=db, members=seen)
    loads = []
    for tag in ('before', 'after'):
        lp = os.path.join(d, 'load-' + tag)
        if os.path.exists(lp):
            p = open(lp).read().split()
            loads.append(p[1] if len(p) > 1 else '?')
    f['load'] = ' → '.join(loads) if loads else '?'
    leases, watchers = [], []
    sp = os.path.join(d, 'samples')
    if os.path.exists(sp):
        for line in open(sp):
            m = re.search(r'leases=(\d+)', line)
            if m:
                leases.append(int(m.group(1)))
            m = re.search(r'watchers=([\d.e+]+)', line)
            if m:
                watchers.append(float(m.group(1)))
    f['leases_max'] = max(leases) if leases else -1
    f['watchers_max'] = int(max(watchers)) if watchers else -1
    return f


def fmt(x, spec='%.2f'):
    return '–' if x is None or (isinstance(x, float) and math.isnan(x)) else spec % x


def mib(b):
    return '%.1f MiB' % (b / 1048576.0) if b >= 1048576 else '%.0f KiB' % (b / 1024.0)


def verdict(ok):
    return '**holds**' if ok else '**does not hold**'


def main():
    if len(sys.argv) == 4 and sys.argv[1] == '--run':
        for key, v in sorted(run_figures(sys.argv[2], int(sys.argv[3])).items()):
            print('%s=%s' % (key, v))
        return 0
    if len(sys.argv) != 3:
        print('usage: report_fleet.py OUT DOCS | --run DIR K', file=sys.stderr)
        return 2
    out, docs = sys.argv[1], sys.argv[2]
    prm = kv(os.path.join(out, 'params'))
    scale = int(prm.get('scale', '100'))
    runs, skipped, idle = [], [], {}
    rdir = os.path.join(out, 'runs')
    quiet = None
    if os.path.exists(os.path.join(rdir, 'quiet', 't-after')):
        q = etcd_cost(os.path.join(rdir, 'quiet'))
        quiet = dict(req=q[0], win=q[1], cpu=q[2] / q[1] if q[1] else float('nan'), rss=q[3])
    names = sorted(os.listdir(rdir), key=lambda s: [int(x) if x.isdigit() else x for x in re.split(r'(\d+)', s)])
    for name in names:
        d = os.path.join(rdir, name)
        m = re.match(r'^(\d+)-(\d+)$', name)
        if m:
            n, k = int(m.group(1)), int(m.group(2))
            if os.path.exists(os.path.join(d, 'skipped')):
                skipped.append((n, k, open(os.path.join(d, 'skipped')).read().strip()))
            elif os.path.exists(os.path.join(d, 'events')):
                runs.append(run_figures(d, k))
        m = re.match(r'^idle-(\d+)$', name)
        if m and os.path.exists(os.path.join(d, 't-after')):
            n = int(m.group(1))
            req, win, cpu, rss, db, seen = etcd_cost(d)
            # each host's breaker read every 5 min / scale: the window is
            # win * scale seconds of a real fleet
            # the hosts read the breaker during idle_s only (the metrics'
            # window adds the threads' start and end, which ask nothing)
            poll = float(prm.get('idle_s', win))
            per5 = req / n / (poll * scale / 300.0) if poll else float('nan')
            # etcd's own background work (raft heartbeats, the quiet
            # window's CPU) does not speed up with the scale: only the rest
            base = quiet['cpu'] if quiet else 0.0
            rate = cpu / win if win else float('nan')
            idle[n] = dict(req=req, win=poll, per5=per5, req_s_real=req / poll / scale if poll else float('nan'),
                           cpu_real=base + max(rate - base, 0.0) / scale, rss=rss, db=db)
    fleetd = [kv(os.path.join(out, 'fleetd', f)) for f in sorted(os.listdir(os.path.join(out, 'fleetd')))
              if f.startswith('idle-')] if os.path.isdir(os.path.join(out, 'fleetd')) else []
    fleetd = [x for x in fleetd if 'rss_kib' in x]

    cyc = (int(prm.get('down_ms', 0)), int(prm.get('confirm_ms', 0)))
    L = [BEGIN, '## 10. Fleet at scale', '']
    L.append('Written by `make bench-fleet` (bench/fleet.sh, bench/report_fleet.py; also a part of `make bench`); '
             'issue 43 point 1. A real 3-member etcd cluster (Debian\'s etcd-server %s, 127.0.0.1:2481-2486, '
             'data on disk in a temp dir) and N simulated hosts, all due at once, each running rerand-fleetd\'s '
             'own client code (libfleetd, its own curl handle and connection) driven the way rerandd drives its '
             'helper: acquire with back-off and a breaker read after each refusal, the slot moved to its down '
             'lease (`down`), a new client after the "reboot" that resumes the token and reads the breaker, the '
             'confirmation, the release. Only the reboot is simulated. The hosts are threads of one process '
             '(build/bench/fleet-bench): a rerandd and a rerand-fleetd per host would be 2,000 processes for '
             'N = 1,000 on this %s-CPU machine, which would measure the scheduler rather than the fleet.'
             % (prm.get('etcd', '?'), prm.get('nproc', '?')))
    L.append('')
    L.append('**Time is scaled down %d×**: the simulated downtime is %d ms and the confirmation %d ms (%d s and '
             '%d s of a real fleet), the back-off (RetryBase=5s, RetryMax=5min) and rerandd\'s 5-minute breaker '
             'poll are divided by %d too, so the *number* of requests per reboot and per idle host is a real '
             'fleet\'s, and request *rates* are %d× a real fleet\'s (both are given). LockTTL=15 s and '
             'DownTTL=30 s (etcd leases are whole seconds) outlast the scaled reboot. Run %s to %s, load average '
             '%s at the start, %s at the end%s.'
             % (scale, cyc[0], cyc[1], cyc[0] * scale // 1000, cyc[1] * scale // 1000, scale, scale,
                prm.get('start', '?'), prm.get('end', '?'), prm.get('load_start', '?'),
                prm.get('load_end', '?').strip(),
                ''.join('; runs added %s' % v for k, v in prm.items() if k == 'appended')))
    L.append('')
    L.append('| N | K | rollout | ideal ⌈N/K⌉×(down+confirm) | ÷ ideal | most down at once | most slot keys (etcd watch) '
             '| fairness: latest round ÷ ⌈N/K⌉ | due → slot median / p99 | slot freed → taken median / p99 '
             '| etcd requests/s (real fleet) | requests per host | etcd CPU (3 members) | etcd RSS (max member) '
             '| db size | leases alive (max) | watchers | client errors | load average (1 min) before → after |')
    L.append('|' + '---|' * 19)
    for f in runs:
        L.append('| %d | %d | %s s | %s s | %s× | %d %s | %d | %d ÷ %d | %s / %s s | %s / %s s | %s (%s) | %s | %s '
                 '| %s | %s | %d | %d | %d | %s |' % (
                     f['hosts'], f['k'], fmt(f['rollout_s'], '%.1f'), fmt(f['ideal_s'], '%.1f'),
                     fmt(f['ratio'], '%.3f'), f['max_down'],
                     '(ok)' if 0 <= f['max_down'] <= f['k'] and f['violations'] == 0 else '**VIOLATION**',
                     f['obs_max'], f['max_round'], f['rounds_ideal'],
                     fmt(f['acq_median_s']), fmt(f['acq_p99_s']),
                     fmt(f['handover_median_s'], '%.3f'), fmt(f['handover_p99_s'], '%.3f'),
                     fmt(f.get('req_per_s'), '%.0f'), fmt(f.get('req_per_s', float('nan')) / scale, '%.2f'),
                     fmt(f.get('req_per_host'), '%.1f'),
                     fmt(f.get('etcd_cpu'), '%.2f') + ' CPU', mib(f.get('etcd_rss', 0)), mib(f.get('etcd_db', 0)),
                     f['leases_max'], f['watchers_max'], f['errors'], f['load']))
    L.append('')
    for n, k, why in skipped:
        L.append('- N = %d, K = %d: not run: %s (BENCH_FLEET_MAX_S; the ideal alone is the run).' % (n, k, why))
    if not any(f['hosts'] >= 1000 for f in runs):
        L.append('- N = 1,000: not run in this run (BENCH_FLEET_NS=%s).' % ' '.join(
            sorted({str(f['hosts']) for f in runs}, key=int)))
    L.append('')
    L.append('Columns: *rollout* from all hosts due to the last release (all confirmed); *most down at once* is '
             'the chaos checker\'s invariant (tests/fleet/chaos-check.py, unchanged: hosts between REBOOT and '
             'BOOT, every down host named by a slot key, no key left at the end); *latest round* is the round '
             '(in units of downtime + confirmation) in which the unluckiest host got its slot; *due → slot* is '
             'each host\'s wait (all due at once, so it spreads over the whole rollout by design); *slot freed '
             '→ taken* is the hand-over: the j-th slot taken against the release that made room for it (the '
             'polling\'s cost: there is no queue, a waiting host finds a free slot at its next try); requests '
             'are etcd\'s own `etcd_server_client_requests_total`, summed over the members, before and after '
             'the run, and include the setup (start-up release and breaker read of every host).')
    L.append('The bench runs at nice 19 on a machine it shares: where the load average (last column) is far '
             'above its %s CPUs, the hosts and etcd got a fraction of a CPU each, and the rollout ratio and '
             'hand-over of that run are upper bounds, not the design\'s cost. *Leases alive* counts every lease, '
             'also those an acquire grants before it tries the free slots and revokes after losing every race: '
             'when all N hosts are due at once, nearly all of them do that in the first round. *Client errors* '
             'are the hosts\' ERROR and ABORT lines: a request without an answer within Timeout=; an acquire '
             'whose lease expired before it could revoke it after losing its races (etcd then answers the '
             'revoke `requested lease not found`); a slot taken whose lease ran out before its `down` (the host '
             'does not reboot, fail closed). Each is retried after the back-off, as rerandd does. The last two '
             'need an acquire slower than LockTTL=: 15 s here, which etcd\'s unscaled latency under load can '
             'reach when an acquire tries up to K slots one transaction after another, but not the default '
             '15 min. At N = 1,000 the %s CPUs run the three members and all 1,000 clients at %d× a real '
             'fleet\'s request rate (the requests/s column): with K = 50, where an acquire that sees free slots races for up to K of them one '
             'transaction after another, that saturates this machine, and the ratio measures the machine more than the design.'
             % (prm.get('nproc', '?'), prm.get('nproc', '?'), scale))
    L.append('')
    if idle:
        L.append('**Idle** (nothing due; each host\'s rerandd asks its helper for the breaker every 5 minutes, '
                 'daemon/coord.h `BREAKER_POLL_MS`, scaled):')
        L.append('')
        L.append('| N | window | etcd requests | per idle host per 5 min | etcd requests/s, real fleet | '
                 'etcd CPU (3 members), real fleet | etcd RSS (max member) |')
        L.append('|---|---|---|---|---|---|---|')
        for n in sorted(idle):
            i = idle[n]
            L.append('| %d | %.0f s (%.0f min real) | %d | %.2f | %.3f | %.4f CPU | %s |' % (
                n, i['win'], i['win'] * scale / 60.0, i['req'], i['per5'], i['req_s_real'], i['cpu_real'],
                mib(i['rss'])))
        L.append('')
        if quiet:
            L.append('With no host at all etcd served %d requests in %.0f s and used %.3f CPU.' % (
                quiet['req'], quiet['win'], quiet['cpu']))
            L.append('')
    if fleetd:
        rss = max(int(x['rss_kib']) for x in fleetd)
        cpu = max(float(x['cpu_s_per_day']) for x in fleetd)
        L.append('**rerand-fleetd idle** (%d real helpers, each opened with the settings and asked for the '
                 'breaker as rerandd does, then left idle for %s s; CPU from schedstat over every thread): '
                 'VmRSS %s KiB (RssAnon %s KiB, the rest the shared libraries\' pages: libcurl, '
                 'OpenSSL, json-c), CPU idle %s ns over the window, %s ns per breaker read, so %.3f s/day '
                 'with 288 breaker reads a day.' % (
                     len(fleetd), fleetd[0].get('window_s', '?'), ', '.join(x['rss_kib'] for x in fleetd),
                     ', '.join(x.get('rss_anon_kib', '?') for x in fleetd),
                     ', '.join(x['idle_ns'] for x in fleetd), ', '.join(x['breaker_ns'] for x in fleetd), cpu))
        L.append('')
    # goals
    L.append('| goal | limit | measured | verdict | note |')
    L.append('|---|---|---|---|---|')
    big = [f for f in runs if f['hosts'] >= 1000]
    if big:
        worst = max(big, key=lambda f: f['ratio'] if not math.isnan(f['ratio']) else 1e9)
        L.append('| rollout ÷ ideal at N = 1,000 | ≤ %.2f× | %s (worst: K = %d) | %s | %s |' % (
            ROLLOUT_GOAL, ', '.join('K = %d: %s×' % (f['k'], fmt(f['ratio'], '%.3f')) for f in big), worst['k'],
            verdict(all(f['ratio'] <= ROLLOUT_GOAL for f in big)),
            'N = 1,000 with K = 1 not run' if any(n == 1000 and k == 1 for n, k, _ in skipped) else ''))
    else:
        L.append('| rollout ÷ ideal at N = 1,000 | ≤ %.2f× | not measured | **not measured** | N = 1,000 not run; '
                 'smaller N: %s |' % (ROLLOUT_GOAL, ', '.join('N = %d K = %d: %s×' % (f['hosts'], f['k'],
                                                                                      fmt(f['ratio'], '%.3f')) for f in runs)))
    ok = all(0 <= f['max_down'] <= f['k'] and f['violations'] == 0 for f in runs)
    L.append('| most hosts down at once | ≤ K | %s | %s | every run; the chaos checker\'s invariants |' % (
        ', '.join('%d of %d' % (f['max_down'], f['k']) for f in runs), verdict(ok and bool(runs))))
    if idle:
        worst = max(i['per5'] for i in idle.values())
        L.append('| etcd requests per idle host | ≤ %g per 5 min | %.2f per 5 min | %s | one breaker read = '
                 'one range request over the breaker keys and the failure records (two more only '
                 'past 64 records) |' % (
                     IDLE_GOAL, worst, verdict(worst <= IDLE_GOAL)))
    if fleetd:
        L.append('| rerand-fleetd idle RSS | ≤ 4 MiB | %.2f MiB | %s | VmRSS after %s s idle |' % (
            rss / 1024.0, verdict(rss <= RSS_GOAL_KIB), fleetd[0].get('window_s', '?')))
        L.append('| rerand-fleetd idle CPU | ≤ %g s/day | %.3f s/day | %s | idle rate × 86,400 + 288 breaker reads |' % (
            CPU_GOAL_S, cpu, verdict(cpu <= CPU_GOAL_S)))
    L.append(END)
    sec = '\n'.join(L) + '\n'
    open(os.path.join(out, 'fleet.md'), 'w').write(sec)
    md, text = mdsection.read_doc(docs)
    open(md, 'w').write(mdsection.splice(text, BEGIN, END, sec))
    print(sec)
    return 0


if __name__ == '__main__':
    sys.exit(main())
