#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# A FleetLock test server (Python 3 standard library only).  No FleetLock server
# ships in Debian (airlock and the Kubernetes ones are not packaged), so the fleet
# tests use this one.  It implements the protocol as Zincati documents it
# (docs/development/fleetlock/protocol.md) and checks requests strictly:
#   - POST only, to /v1/pre-reboot (RecursiveLock) or /v1/steady-state (UnlockIfHeld);
#   - the "fleet-lock-protocol" header with the value "true";
#   - a JSON object body {"client_params": {"id": <non-empty string>,
#     "group": <string matching ^[a-zA-Z0-9.-]+$>}} and nothing else;
#   - errors as {"kind": ..., "value": ...} with a 4xx/5xx status, kinds from a
#     small fixed set.
# A counting semaphore of K owned, recursive slots per group.  GET /debug/state
# (not part of the protocol; for the tests) returns the holders, the highest
# number of simultaneous holders seen, the count of rejected requests, and the
# log of grants and releases as [unix ms, "lock"|"unlock", id].
# With CERT KEY [CA] after the port file it serves HTTPS (and with CA, requires a
# client certificate signed by it), as a FleetLock server behind TLS would.
import json
import os
import re
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GROUP_RE = re.compile(r"^[a-zA-Z0-9.-]+$")
lock = threading.Lock()
state = {"holders": {}, "max_seen": 0, "rejected": 0, "granted": 0, "fail": False, "log": []}
SLOTS = 1


def error(kind, value):
    return {"kind": kind, "value": value}


def check_request(handler, raw):
    """None if the request follows the protocol, else (status, error body)."""
    if handler.headers.get("fleet-lock-protocol") != "true":
        return 400, error("missing_protocol_header", "the fleet-lock-protocol header must be \"true\"")
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return 400, error("bad_body", "the body is not JSON")
    if not isinstance(body, dict) or set(body) != {"client_params"}:
        return 400, error("bad_body", "the body must be an object with client_params only")
    cp = body["client_params"]
    if not isinstance(cp, dict) or set(cp) != {"id", "group"}:
        return 400, error("bad_body", "client_params must hold id and group only")
    if not isinstance(cp["id"], str) or not cp["id"]:
        return 400, error("bad_id", "id must be a non-empty string")
    if not isinstance(cp["group"], str) or not GROUP_RE.match(cp["group"]):
        return 400, error("bad_group", "group must match ^[a-zA-Z0-9.-]+$")
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        if self.path != "/debug/state":
            return self.reply(404, error("not_found", "no such endpoint"))
        with lock:
            self.reply(200, {k: state[k] for k in ("holders", "max_seen", "rejected", "granted", "log")})

    def do_PUT(self):
        self.reply(405, error("method_not_allowed", "use POST"))

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, 65536))
        if self.path == "/debug/fail":
            with lock:
                state["fail"] = raw.strip() == b"on"
            return self.reply(200, {"fail": state["fail"]})
        if self.path not in ("/v1/pre-reboot", "/v1/steady-state"):
            return self.reply(404, error("not_found", "no such endpoint"))
        bad = check_request(self, raw)
        with lock:
            if bad:
                state["rejected"] += 1
                return self.reply(*bad)
            if state["fail"]:
                return self.reply(500, error("internal_error", "the lock store is unavailable"))
            cp = json.loads(raw)["client_params"]
            holders = state["holders"].setdefault(cp["group"], [])
            now = int(time.time() * 1000)
            if self.path == "/v1/pre-reboot":
                if cp["id"] in holders:
                    return self.reply(200, {})
                if len(holders) >= SLOTS:
                    return self.reply(409, error("failed_lock_semaphore_full",
                                                 "semaphore currently full, all slots are locked already"))
                holders.append(cp["id"])
                state["granted"] += 1
                state["max_seen"] = max(state["max_seen"], len(holders))
                state["log"].append((now, "lock", cp["id"]))
                return self.reply(200, {})
            if cp["id"] in holders:
                holders.remove(cp["id"])
                state["log"].append((now, "unlock", cp["id"]))
            return self.reply(200, {})


def main():
    global SLOTS
    if len(sys.argv) not in (3, 5, 6):
        print("usage: fleetlock-server.py SLOTS PORTFILE [CERT KEY [CA]]", file=sys.stderr)
        return 2
    SLOTS = int(sys.argv[1])
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if len(sys.argv) >= 5:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[3], sys.argv[4])
        if len(sys.argv) == 6:
            ctx.load_verify_locations(sys.argv[5])
            ctx.verify_mode = ssl.CERT_REQUIRED
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
