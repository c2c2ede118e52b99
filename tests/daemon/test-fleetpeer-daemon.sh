#!/bin/bash
# rerand-fleetd knows rerandd by more than its uid (issue 39 point 2): real
# build/rerand-fleetd with --peer-cgroup, the check --peer-unit=rerandd.service
# makes under systemd (systemd/rerand-fleetd.service), pointed at a cgroup v2
# directory this test makes (no systemd unit here: the cgroup STANDS IN for
# rerandd.service's).  rerandd is REPLACED by tests/fleet/fleetd-ask.py, which
# speaks its line protocol, started inside that cgroup.  No network: "open"
# names an endpoint nothing listens on, only the replies' arrival counts.
#   rerandd's stand-in in the cgroup connects and is answered;
#   a uid-0 process outside the cgroup connects: refused (no greeting, the
#   journal says why), and the stand-in's connection stays: its next request
#   is answered on the same connection, nothing replaced it;
#   without --peer-cgroup (as before) the same uid-0 intruder would take
#   the connection over: shown on a second helper.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test fleetpeer cleanup
FLEETD=$top/build/rerand-fleetd
cg=
cleanup() {
	local p
	if [ -n "$cg" ] && [ -d "$cg" ]; then
		for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		sleep 0.2
		rmdir "$cg" 2>/dev/null
	fi
	rerandd_cleanup
}
[ -x "$FLEETD" ] || bail "$FLEETD is missing: make all"
[ "$(id -u)" = 0 ] || bail "not root: the test makes a cgroup and connects as uid 0"
command -v python3 >/dev/null || bail "python3 is needed"
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then root=/sys/fs/cgroup
elif [ -e /sys/fs/cgroup/unified/cgroup.controllers ]; then root=/sys/fs/cgroup/unified
else bail "no cgroup v2 hierarchy (/sys/fs/cgroup or /sys/fs/cgroup/unified) to stand in for rerandd.service's"
fi
cg=$root/rerand-test-fleetpeer.$$
mkdir "$cg" || bail "cannot make the cgroup $cg"

ASK="$top/tests/fleet/fleetd-ask.py"
OPEN=(Backend=etcd Endpoints=http://127.0.0.1:9 Group=test)
fleetd() { # NAME [ARG...]: a helper on $tmp/NAME.sock, its log $tmp/NAME.log
	local n=$1
	shift
	"$FLEETD" --socket "$tmp/$n.sock" "$@" >>"$tmp/$n.log" 2>&1 &
	rerandd_pids+=($!)
	wait_for 10 test -S "$tmp/$n.sock" || bail "rerand-fleetd $n did not come up: $(tail -3 "$tmp/$n.log")"
}
# rerandd's stand-in on NAME, inside the cgroup: open, wait for $tmp/NAME.go, open again
legit() {
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
		python3 "$ASK" "$tmp/$1.sock" "${OPEN[@]}" -- wait:"$tmp/$1.go" open:x >"$tmp/$1.ask" 2>&1 &
	rerandd_pids+=($!)
}
# a uid-0 process outside the cgroup: what it reads from the helper
intruder() {
	python3 - "$tmp/$1.sock" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(sys.argv[1])
try:
    print("greeting: %r" % s.recv(100).decode(errors="replace").strip())
except Exception as e:
    print("greeting: none (%s)" % e)
EOF
}

# ---- with the check -----------------------------------------------------------------------
fleetd checked --peer-cgroup "$cg"
legit checked
wait_for 30 grep -q '^open ' "$tmp/checked.ask" || true
check "rerandd's stand-in in the cgroup is answered ($(head -1 "$tmp/checked.ask" | cut -c1-80))" \
	grep -q '^open ' "$tmp/checked.ask"
out=$(intruder checked)
check "a uid-0 process outside the cgroup gets no greeting ($out)" \
	eval '[[ $out != *RERAND-FLEET* ]]'
check "the helper says why it refused it" \
	grep -q "refused a client with uid 0, pid [0-9]*: not in rerandd's unit (pid [0-9]* is not in $cg)" "$tmp/checked.log"
touch "$tmp/checked.go"
wait_for 30 eval '[ "$(grep -c "^open " "$tmp/checked.ask")" = 2 ] || grep -q "no reply" "$tmp/checked.ask"' || true
check "the stand-in's connection stays: its next request is answered ($(tail -1 "$tmp/checked.ask" | cut -c1-80))" \
	eval '[ "$(grep -c "^open " "$tmp/checked.ask")" = 2 ] && ! grep -q "no reply" "$tmp/checked.ask"'
check "nothing replaced rerandd's connection" eval '! grep -q "a new connection replaces it" "$tmp/checked.log"'

# ---- the helper unprivileged, as its unit runs it (DynamicUser=): it may not signal root ----
chmod 0755 "$tmp"
mkdir -m 0777 "$tmp/np"
fleetd_np() {
	setpriv --reuid=nobody --regid="$NG" --clear-groups "$FLEETD" --socket "$tmp/np/np.sock" \
		--peer-cgroup "$cg" >>"$tmp/np.log" 2>&1 &
	rerandd_pids+=($!)
	wait_for 10 test -S "$tmp/np/np.sock" || bail "rerand-fleetd as nobody did not come up: $(tail -3 "$tmp/np.log")"
}
NG=$(id -g nobody)
fleetd_np
sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
	python3 "$ASK" "$tmp/np/np.sock" "${OPEN[@]}" -- >"$tmp/np.ask" 2>&1
check "the helper as nobody answers rerandd's stand-in (root, in the cgroup) ($(head -1 "$tmp/np.ask" | cut -c1-80))" \
	grep -q '^open ' "$tmp/np.ask"
out=$(python3 - "$tmp/np/np.sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(sys.argv[1])
try:
    print("greeting: %r" % s.recv(100).decode(errors="replace").strip())
except Exception as e:
    print("greeting: none (%s)" % e)
PY
)
check "the helper as nobody refuses a uid-0 process outside the cgroup ($out)" \
	eval '[[ $out != *RERAND-FLEET* ]]'

# ---- without it: the old rule, any uid-0 peer -----------------------------------------------
fleetd open
legit open
wait_for 30 grep -q '^open ' "$tmp/open.ask" || true
out=$(intruder open)
check "without --peer-cgroup a uid-0 intruder is greeted ($out): what the check stops" \
	eval '[[ $out == *RERAND-FLEET* ]]'
check "... and replaces rerandd's connection" grep -q "a new connection replaces it" "$tmp/open.log"

# ---- --peer-unit ----------------------------------------------------------------------------
out=$("$FLEETD" --socket "$tmp/bad.sock" --peer-unit ../x 2>&1); rc=$?
check "--peer-unit refuses a name with a slash (exit $rc: $out)" \
	bash -c "[ $rc = 2 ] && grep -q 'not a unit name' <<<'$out'"
done_
