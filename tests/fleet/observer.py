#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# The fleet tests' independent witness: it reads a group's keys from etcd with
# etcdctl (a snapshot, then a watch from the next revision, so every change is
# seen in revision order) and logs "<unix ms> <revision> <count> <PUT|DELETE> <key> <value>"
# for each event.  The count is the number of keys under the prefix after it.
import base64
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import time

IDLE_RESTART_S = 3.0

def die_with_parent():
    # a watch left behind by an observer that was SIGKILLed would retry forever:
    # PR_SET_PDEATHSIG (1) makes the kernel kill it with its parent
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)

def record(msg, keys, rev, log):
    """Apply one watch response to keys, log each event; the new last revision."""
    for e in msg.get("Events") or []:
        kv = e["kv"]
        k = base64.b64decode(kv["key"]).decode()
        kind = "DELETE" if e.get("type", 0) == 1 else "PUT"
        if kind == "PUT":
            keys[k] = base64.b64decode(kv.get("value", "")).decode()
        else:
            keys.pop(k, None)
        rev = max(rev, kv.get("mod_revision", rev))
        log.write("%d %d %d %s %s %s\n" % (time.time() * 1000, rev, len(keys), kind, k, keys.get(k, "-")))
    return rev

def main():
    if len(sys.argv) != 4:
        print("usage: observer.py ENDPOINTS PREFIX LOG", file=sys.stderr)
        return 2
    endpoints, prefix, log_path = sys.argv[1:]
    # the caller's environment goes on (a test tags its processes through it)
    env = dict(os.environ, ETCDCTL_API="3")
    ctl = ["etcdctl", "--endpoints=" + endpoints, "--dial-timeout=1s", "--command-timeout=2s"]
    log = open(log_path, "a", buffering=1)
    keys = {}
    stop = []
    child = []

    def on_term(*_):
        # the watch blocks in a read: end it and leave at once
        stop.append(1)
        for c in child:
            c.kill()
        log.flush()
        os._exit(0)
    signal.signal(signal.SIGTERM, on_term)

    # the snapshot: retried while etcd is still starting
    rev = None
    while rev is None and not stop:
        p = subprocess.run(ctl + ["get", "--prefix", prefix, "-w", "json"], env=env,
                           capture_output=True, text=True)
        if p.returncode == 0:
            snap = json.loads(p.stdout)
            rev = snap["header"]["revision"]
            for kv in snap.get("kvs", []):
                keys[base64.b64decode(kv["key"]).decode()] = base64.b64decode(kv.get("value", "")).decode()
        else:
            time.sleep(0.2)
    log.write("%d %d %d SNAPSHOT - -\n" % (time.time() * 1000, rev or 0, len(keys)))

    # The watch, restarted from the last revision seen if etcdctl exits, and also
    # after IDLE_RESTART_S without a word: a watch whose members all died reconnects
    # with a growing back-off and would report the changes after an outage late.
    # The restart replays everything after the last revision, so nothing is lost.
    while not stop:
        w = subprocess.Popen(ctl + ["watch", "--prefix", prefix, "--rev=%d" % (rev + 1), "-w", "json"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             preexec_fn=die_with_parent)
        child[:] = [w]
        fd = w.stdout.fileno()
        buf = b""
        heard = time.monotonic()
        try:
            while not stop:
                ready, _, _ = select.select([fd], [], [], 0.5)
                if not ready:
                    if time.monotonic() - heard > IDLE_RESTART_S:
                        break
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                heard = time.monotonic()
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    line = line.strip()
                    if line.startswith(b"{"):
                        rev = record(json.loads(line), keys, rev, log)
        finally:
            w.kill()
            w.wait()
        if not stop:
            time.sleep(0.2)
    return 0

if __name__ == "__main__":
    sys.exit(main())
