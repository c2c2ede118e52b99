#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
# ctl-latency.py SOCKET SECONDS [COMMAND]: ask rerandd's control socket COMMAND
# (default "status") every 0.1 s for SECONDS, the way `rerand status` does
# (connect, one line, read to EOF), and time each answer from connect to EOF.
# One process for every sample: the figures are rerandd's answer time, not the
# cost of starting a client on a loaded machine.  Prints one line:
# "samples N worst MS failed F ms: MS MS ...".
import socket, sys, time

path, secs = sys.argv[1], float(sys.argv[2])
cmd = (sys.argv[3] if len(sys.argv) > 3 else "status") + "\n"
lat, failed = [], 0
end = time.monotonic() + secs
while time.monotonic() < end:
    t = time.monotonic()
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(path)
        s.sendall(cmd.encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
        if not data.startswith(b"ok\n"):
            failed += 1
    except OSError:
        failed += 1
    lat.append(int((time.monotonic() - t) * 1000))
    time.sleep(0.1)
print("samples %d worst %d failed %d ms: %s" % (len(lat), max(lat), failed, " ".join(map(str, lat))))
