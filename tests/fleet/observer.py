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
import signal
import subprocess
import sys
import time

def die_with_parent():
    # a watch left behind by an observer that was SIGKILLed would retry forever:
    # PR_SET_PDEATHSIG (1) makes the kernel kill it with its parent
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)

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

    # the watch, restarted from the last revision seen if etcdctl ever exits
    while not stop:
        w = subprocess.Popen(ctl + ["watch", "--prefix", prefix, "--rev=%d" % (rev + 1), "-w", "json"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             preexec_fn=die_with_parent)
        child[:] = [w]
        try:
            for line in w.stdout:
                if stop:
                    break
                line = line.strip()
                if not line.startswith("{"):
                    continue
                msg = json.loads(line)
                for e in msg.get("Events") or []:
                    kv = e["kv"]
                    k = base64.b64decode(kv["key"]).decode()
                    kind = "DELETE" if e.get("type", 0) == 1 else "PUT"
                    if kind == "PUT":
                        keys[k] = base64.b64decode(kv.get("value", "")).decode()
                    else:
                        keys.pop(k, None)
                    rev = max(rev, kv.get("mod_revision", rev))
                    log.write("%d %d %d %s %s %s\n" % (time.time() * 1000, rev, len(keys), kind, k,
                                                        keys.get(k, "-")))
        finally:
            w.terminate()
            w.wait()
        if not stop:
            time.sleep(0.2)
    return 0

if __name__ == "__main__":
    sys.exit(main())
