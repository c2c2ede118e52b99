#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Sample `rerand status` latency: run RERAND status every 50 ms until the
file STOP exists (at most 300 s; from when SOCK appears); append one line per sample to OUT:
"<start, ms of CLOCK_BOOTTIME (/proc/uptime's clock)> <ms of the whole
client run> <ms for rerandd to answer on the socket> <exit status>".  The second figure is the control protocol alone (connect,
"status\\n", read to EOF), without the client's fork and exec, so a loaded
host's process start-up is told apart from a daemon that does not answer."""
import os, socket, subprocess, sys, time

rerand, sock, out, stop = sys.argv[1:5]
end = time.monotonic() + 300
with open(out, "a", buffering=1) as f:
    while not os.path.exists(stop) and time.monotonic() < end:
        if not os.path.exists(sock):         # rerandd not up yet
            time.sleep(0.01)
            continue
        start = time.clock_gettime(time.CLOCK_BOOTTIME)
        t0 = time.monotonic()
        rc = subprocess.run([rerand, "status"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode
        t1 = time.monotonic()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(30)
            s.connect(sock)
            s.sendall(b"status\n")
            got = b""
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got += b
            if not got.startswith(b"ok\n"):
                rc = rc or 1
        except OSError:
            rc = rc or 2
        finally:
            s.close()
        t2 = time.monotonic()
        f.write("%d %d %d %d\n" % (start * 1000, (t1 - t0) * 1000, (t2 - t1) * 1000, rc))
        time.sleep(0.05)
