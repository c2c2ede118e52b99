#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Talk to a running rerand-fleetd the way rerandd does (src/common/fleet.h, the line
# protocol): wait for the greeting, send "open" with the [Fleet] settings given as
# KEY=VALUE arguments, then each verb after "--", one at a time.  Prints one line
# per reply: "VERB RC STATE MESSAGE" (fields decoded).  Exit 0 when every reply
# came, 1 otherwise.  For the tests of rerand-fleetd itself (test-fleet-tls.sh),
# where rerandd's own state machine is not what is tested.  "wait:PATH" sends
# nothing: it waits (up to 120 s) until PATH exists, the connection kept open.
# "failed:CAUSE TIME" sends the failure report's two arguments.
#   fleetd-ask.py SOCKET KEY=VALUE... -- VERB[:ARG]...
import os
import socket
import sys
import time
import urllib.parse

SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/,=+@"
STATES = ["disabled", "idle", "waiting", "held", "error"]


def enc(s):
    if s == "":
        return "-"
    return "".join(c if c in SAFE else "".join("%%%02X" % b for b in c.encode()) for c in s)


def dec(s):
    return "" if s == "-" else urllib.parse.unquote(s)


def main():
    if len(sys.argv) < 3 or "--" not in sys.argv:
        print(__doc__ or "usage: fleetd-ask.py SOCKET KEY=VALUE... -- VERB...", file=sys.stderr)
        return 2
    i = sys.argv.index("--")
    path, kvs, verbs = sys.argv[1], sys.argv[2:i], sys.argv[i + 1:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    f = s.makefile("rwb")
    greeting = f.readline().decode().strip()
    if greeting != "RERAND-FLEET 1":
        print("bad greeting: %r" % greeting, file=sys.stderr)
        return 1
    reqs = [("open", kvs)] + [(v.split(":", 1)[0], v.split(":", 1)[1:]) for v in verbs]
    # "failed:CAUSE TIME": its two arguments
    reqs = [(v, a[0].split(" ") if v == "failed" and a else a) for v, a in reqs]
    seq = 0
    for verb, args in reqs:
        if verb == "wait":
            until = time.time() + 120
            while not os.path.exists(args[0]) and time.time() < until:
                time.sleep(0.1)
            print("wait %s" % ("done" if os.path.exists(args[0]) else "timed out"))
            sys.stdout.flush()
            continue
        seq += 1
        f.write(("Q %d %s%s\n" % (seq, verb, "".join(" " + enc(a) for a in args))).encode())
        f.flush()
        line = f.readline().decode().rstrip("\n")
        if not line:
            print("%s: no reply (the helper closed the connection)" % verb)
            return 1
        p = line.split(" ")
        if p[0] != "R" or int(p[1]) != seq:
            print("%s: unexpected reply %r" % (verb, line))
            return 1
        state = STATES[int(p[3])] if p[3].isdigit() and int(p[3]) < len(STATES) else p[3]
        print("%s %s %s %s" % (verb, dec(p[2]), state, dec(p[7])))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
