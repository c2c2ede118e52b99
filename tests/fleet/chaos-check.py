#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# The chaos test's independent checker (tests/fleet/test-fleet-chaos.sh).  It shares
# no code with rerandd or rerand-fleetd: it reads only the history the test wrote
# down from outside the code under test:
#   EVENTS  "<unix ms> HOST REBOOT|DOWN|BOOT [...]" lines: REBOOT is the moment the
#           host's RebootCommand ran (the host goes down), BOOT the moment its
#           runner started it again (up); times from the real clock, never a
#           host's faked one
#   OBS     tests/fleet/observer.py's etcd watch: "<ms> <revision> <count> PUT|DELETE
#           <key> <value>", every change to the group's keys in revision order
#   FAULTS  "<ms> KIND TARGET" lines, one per injected fault
# and asserts the guarantee:
#   1. never more hosts down at once than K (MaxConcurrent);
#   2. a host that is down holds a slot key naming it from its reboot until it is
#      up again (the slot does not free itself while its host is down);
#   3. every host rerandomizes (goes down and comes up) after the faults heal;
#   4. no slot key is left at the end (etcd's own answer, FINAL_KEYS), and the
#      observer's revisions only grow.
# It prints key=value figures, one "VIOLATION ..." line per breach, and exits 1 if
# there is any.
import argparse
import collections
import sys

# the observer sees a change when etcd's watch delivers it, a little after the
# commit; a key put before the reboot must show up within this much
OBS_LAG_MS = 2000


def read_events(path):
    out = []
    for line in open(path):
        p = line.split()
        if len(p) >= 3 and p[0].isdigit():
            out.append((int(p[0]), p[1], p[2], p[3:]))
    out.sort(key=lambda e: e[0])
    return out


def read_obs(path):
    out = []
    for line in open(path):
        p = line.split(None, 5)
        if len(p) >= 5 and p[0].isdigit() and p[1].isdigit() and p[3] in ("PUT", "DELETE"):
            # a slot's value is "HOLDER FENCE": the holder is what names a host
            out.append((int(p[0]), int(p[1]), int(p[2]), p[3], p[4],
                        p[5].split()[0] if len(p) > 5 and p[5].split() else "-"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", required=True)
    ap.add_argument("--obs", required=True)
    ap.add_argument("--faults", required=True)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--heal", type=int, required=True, help="unix ms when the last fault healed")
    ap.add_argument("--final-keys", type=int, required=True)
    ap.add_argument("--base-keys", type=int, default=0,
                    help="keys under the prefix that stay (the group's marker)")
    ap.add_argument("--ids", required=True, help="HOST=MACHINE-ID,...")
    a = ap.parse_args()
    ids = dict(x.split("=", 1) for x in a.ids.split(","))
    hosts = sorted(ids)
    events = [e for e in read_events(a.events) if e[1] in ids]
    obs = read_obs(a.obs)
    bad = []

    # ---- down intervals: REBOOT .. the next BOOT (open at the end: still down)
    downs = collections.defaultdict(list)
    since = {}
    for t, h, kind, _ in events:
        if kind == "REBOOT" and h not in since:
            since[h] = t
        elif kind == "BOOT" and h in since:
            downs[h].append((since.pop(h), t))
    end = max([e[0] for e in events] + [o[0] for o in obs] + [0])
    for h, t in since.items():
        downs[h].append((t, None))
        bad.append("host %s went down at %d and never came up" % (h, t))

    # 1. the sweep: ends before starts at the same millisecond (a boot logged in the
    # millisecond another host's reboot did is not an overlap)
    edges = []
    for h, iv in downs.items():
        for s, e in iv:
            edges.append((s, 1, h))
            edges.append((e if e is not None else end + 1, 0, h))
    edges.sort(key=lambda x: (x[0], x[1]))
    cur, mx, at, who = set(), 0, 0, []
    for t, kind, h in edges:
        if kind:
            cur.add(h)
            if len(cur) > mx:
                mx, at, who = len(cur), t, sorted(cur)
        else:
            cur.discard(h)
    if mx > a.k:
        bad.append("%d hosts down at once at %d (%s), MaxConcurrent=%d" % (mx, at, " ".join(who), a.k))

    # 2. each down interval is covered by a slot key naming the host
    lapses = 0
    for h, iv in sorted(downs.items()):
        for s, e in iv:
            keys = {}
            ok_at_start = None
            lapse = None
            for t, rev, cnt, kind, key, val in obs:
                if e is not None and t > e:
                    break
                if t > s + OBS_LAG_MS and ok_at_start is None:
                    ok_at_start = ids[h] in keys.values()
                if kind == "PUT":
                    keys[key] = val
                else:
                    keys.pop(key, None)
                if t > s + OBS_LAG_MS and ok_at_start and ids[h] not in keys.values() and lapse is None:
                    lapse = (t, rev, key)
            if ok_at_start is None:
                ok_at_start = ids[h] in keys.values()
            if not ok_at_start:
                lapses += 1
                bad.append("host %s went down at %d without a slot naming %s" % (h, s, ids[h]))
            elif lapse:
                lapses += 1
                bad.append("host %s's slot lapsed while it was down: %s gone at revision %d (%d ms "
                           "into a down time of %s ms)" % (h, lapse[2], lapse[1], lapse[0] - s,
                                                          e - s if e else "unbounded"))

    # 3. every host went down and came up again after the heal
    healed = {}
    for h in hosts:
        for s, e in downs.get(h, []):
            if s >= a.heal and e is not None:
                healed[h] = e
                break
    for h in hosts:
        if h not in healed:
            bad.append("host %s did not rerandomize after the faults healed" % h)

    # 4. the end state and the observer's own consistency
    if a.final_keys != 0:
        bad.append("%d slot key(s) left held at the end" % a.final_keys)
    last_rev = 0
    for o in obs:
        if o[1] < last_rev:
            bad.append("observer: revision %d after %d" % (o[1], last_rev))
            break
        last_rev = o[1]
    if obs and obs[-1][2] != a.base_keys:
        bad.append("observer: %d key(s) under the prefix after its last event" % (obs[-1][2] - a.base_keys))
    obs_max = max([o[2] for o in obs] + [0])

    faults = collections.Counter()
    for line in open(a.faults):
        p = line.split()
        if len(p) >= 2 and p[0].isdigit():
            faults[p[1]] += 1
    reboots = sum(1 for e in events if e[2] == "REBOOT")
    print("hosts=%d" % len(hosts))
    print("reboots=%d" % reboots)
    print("etcd_changes=%d" % len(obs))
    print("operations=%d" % (reboots + len(obs)))
    print("faults=%d" % sum(faults.values()))
    print("faults_by_kind=%s" % ",".join("%s:%d" % kv for kv in sorted(faults.items())))
    print("max_down=%d" % mx)
    print("obs_max=%d" % obs_max)
    print("last_revision=%d" % last_rev)
    print("lapses=%d" % lapses)
    print("heal_ms=%d" % (max(healed.values()) - a.heal if len(healed) == len(hosts) else -1))
    for b in bad:
        print("VIOLATION " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
