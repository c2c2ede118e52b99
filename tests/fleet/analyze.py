#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Summarize a fleet test run as key=value lines: what the simulated hosts saw
# (their own log) and what the etcd observer saw (its log, optional).
#   hosts_max     most hosts at once between ACQUIRED and RELEASING/ABORT
#   completed     distinct hosts that logged COMPLETE
#   reboots       REBOOT events;  resumed_held  RESUMED held=1 events
#   acquired      ACQUIRED events; errors  ERROR events
#   obs_max       most keys under the group prefix at any revision
import sys

def main():
    sim = sys.argv[1]
    obs = sys.argv[2] if len(sys.argv) > 2 else None
    events = []
    for line in open(sim):
        parts = line.split(None, 3)
        if len(parts) >= 3 and parts[0].isdigit():
            events.append((int(parts[0]), parts[1], parts[2], parts[3].strip() if len(parts) > 3 else ""))
    # ends before starts at the same millisecond: the log order is causal
    order = {"RELEASING": 0, "ABORT": 0, "ACQUIRED": 1}
    holding, cur, hmax = set(), 0, 0
    for t, host, ev, _ in sorted(events, key=lambda e: (e[0], order.get(e[2], 2))):
        if ev == "ACQUIRED" and host not in holding:
            holding.add(host)
        elif ev in ("RELEASING", "ABORT") and host in holding:
            holding.discard(host)
        hmax = max(hmax, len(holding))
    count = lambda name, detail=None: sum(1 for e in events if e[2] == name and (detail is None or detail in e[3]))
    print("hosts_max=%d" % hmax)
    print("completed=%d" % len({e[1] for e in events if e[2] == "COMPLETE"}))
    print("reboots=%d" % count("REBOOT"))
    print("resumed_held=%d" % count("RESUMED", "held=1"))
    print("acquired=%d" % count("ACQUIRED"))
    print("errors=%d" % count("ERROR"))
    print("aborts=%d" % count("ABORT"))
    if events:
        print("span_ms=%d" % (max(e[0] for e in events) - min(e[0] for e in events)))
    if obs:
        omax = 0
        for line in open(obs):
            p = line.split()
            if len(p) >= 3 and p[2].isdigit():
                omax = max(omax, int(p[2]))
        print("obs_max=%d" % omax)

if __name__ == "__main__":
    main()
