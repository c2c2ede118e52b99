#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# rerand-fleetd's own idle cost (bench/fleet.sh, issue 43): talk to a running
# helper the way rerandd does when nothing is due (src/common/fleet.h's line
# protocol: the settings with "open", a breaker read, then nothing but the
# breaker read every 5 minutes, daemon/coord.h BREAKER_POLL_MS), and measure
# the helper's CPU (schedstat, every thread, ns) and VmRSS:
#   idle_ns     CPU over WINDOW seconds with the connection open and nothing asked
#   breaker_ns  CPU per breaker read (the mean of READS reads)
#   rss_kib     VmRSS after the window (and its RssAnon, RssFile parts)
# and prints them with cpu_s_per_day = idle rate x 86400 + 288 breaker reads.
#   fleetd-idle.py PID SOCKET WINDOW READS KEY=VALUE...
import os
import socket
import sys
import time
import urllib.parse

SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/,=+@"


def enc(s):
    if s == "":
        return "-"
    return "".join(c if c in SAFE else "".join("%%%02X" % b for b in c.encode()) for c in s)


def cpu_ns(pid):
    t = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
            t += int(f.read().split()[0])
    return t


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def rss_kib(pid):
    return status_kib(pid, "VmRSS")


def main():
    if len(sys.argv) < 6:
        print("usage: fleetd-idle.py PID SOCKET WINDOW READS KEY=VALUE...", file=sys.stderr)
        return 2
    pid, path, window, reads, kvs = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), \
        int(sys.argv[4]), sys.argv[5:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    f = s.makefile("rwb")
    if f.readline().decode().strip() != "RERAND-FLEET 1":
        print("fleetd-idle: %s: no RERAND-FLEET 1 greeting" % path, file=sys.stderr)
        return 1
    seq = [0]

    def ask(verb, args=()):
        seq[0] += 1
        f.write(("Q %d %s%s\n" % (seq[0], verb, "".join(" " + enc(a) for a in args))).encode())
        f.flush()
        line = f.readline().decode()
        p = line.split(" ")
        if len(p) < 4 or p[0] != "R" or int(p[1]) != seq[0]:
            print("fleetd-idle: %s: unexpected reply %r" % (verb, line), file=sys.stderr)
            sys.exit(1)
        return int(p[2])

    if ask("open", kvs) < 0:
        print("fleetd-idle: the helper refused the settings", file=sys.stderr)
        return 1
    ask("breaker")
    rss_open = rss_kib(pid)
    c0, t0 = cpu_ns(pid), time.monotonic()
    time.sleep(window)
    c1, t1 = cpu_ns(pid), time.monotonic()
    rss = rss_kib(pid)
    for _ in range(reads):
        if ask("breaker") < 0:
            print("fleetd-idle: a breaker read failed", file=sys.stderr)
            return 1
    c2 = cpu_ns(pid)
    idle_rate = (c1 - c0) / (t1 - t0)            # ns per second
    per_read = (c2 - c1) / max(reads, 1)
    print("window_s=%.1f" % (t1 - t0))
    print("idle_ns=%d" % (c1 - c0))
    print("breaker_ns=%d" % per_read)
    print("rss_kib_open=%d" % rss_open)
    print("rss_kib=%d" % rss)
    print("rss_anon_kib=%d" % status_kib(pid, "RssAnon"))
    print("rss_file_kib=%d" % status_kib(pid, "RssFile"))
    print("rss_kib_after_reads=%d" % rss_kib(pid))
    print("cpu_s_per_day=%.3f" % ((idle_rate * 86400 + per_read * 86400 / 300) / 1e9))
    return 0


if __name__ == "__main__":
    sys.exit(main())
