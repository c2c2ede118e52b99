#!/bin/bash
# The control socket's audit trail (issue 39, point 12), against a real
# build/rerandd and a real systemd-journald: every command that changes
# something (hold, release, now, ...) is a journal entry with rerandd's
# MESSAGE_ID=cab9b5e72e464ba4b70373f2caa67f02 and the peer's uid, pid and
# systemd unit (SO_PEERCRED, the pid's cgroup), so `journalctl
# MESSAGE_ID=...` lists who asked for what; a read-only `rerand status` is not.
#
# What is real and what stands in, and why:
#  - journald is Debian's own systemd-journald, run in a mount namespace of
#    this test's (unshare -m) over a tmpfs /run/systemd, /run/log and
#    /var/log/journal: the host has no journald of its own here, and a test
#    must not write into the host's journal either way;
#  - rerandd's stderr is a journald stream (systemd-cat) and JOURNAL_STREAM
#    names it, as systemd does for a unit with StandardError=journal (the
#    variable is set by hand: there is no PID 1 systemd here to set it);
#  - the client runs in a cgroup made for it, rerand-audit-test-PID.scope
#    (named like the scopes systemd makes), so that its unit is known; made
#    in each cgroup hierarchy sd_pid_get_unit() may read, removed at exit.
# Nothing is staged (Kernel= does not exist) and nothing reboots.
# Then SignKey= (issue 39, point 12): two instances locked down by their
# fixtures build and sign a real kernel's image (the builder as nobody,
# kexec-tools a STAND-IN that only keeps what it is handed, nothing loaded):
# each use of the key is an entry with MESSAGE_ID=fa64ec5659fc4be7861305738ea60d86,
# a PKCS#11 URI's PIN never in it.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${RERAND_AUDIT_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "not ok 1 - run as root: the test runs journald in a mount namespace"; echo "1..1"; exit 1; }
	exec unshare -m --propagation private env RERAND_AUDIT_NS=1 "$0" "$@"
fi
. "$top/tests/lib/rerandd.sh"
cg_name=rerand-audit-test-$$.scope
cg_dirs=()
audit_cleanup() {
	local d
	[ -n "${jpid:-}" ] && kill "$jpid" 2>/dev/null
	rerandd_cleanup
	for d in ${cg_dirs[@]+"${cg_dirs[@]}"}; do rmdir "$d" 2>/dev/null; done
}
rerandd_test audit audit_cleanup

rerandd_need_bins
JOURNALD=/lib/systemd/systemd-journald
[ -x "$JOURNALD" ] || bail "$JOURNALD is missing (package systemd)"
for t in systemd-cat journalctl; do command -v $t >/dev/null || bail "$t is missing (package systemd)"; done

# ---- a journald of this namespace's own ----------------------------------------------
for d in /run/systemd /run/log /var/log/journal; do
	mkdir -p "$d" && mount -t tmpfs tmpfs "$d" || bail "cannot mount a tmpfs on $d in the test's namespace"
done
"$JOURNALD" >"$tmp/journald.out" 2>&1 &
jpid=$!
wait_for 10 test -S /run/systemd/journal/stdout || bail "journald did not come up: $(tail -3 "$tmp/journald.out")"
J=(journalctl -D /run/log/journal --no-pager)

# ---- the client's cgroup ---------------------------------------------------------------
if [ -e /sys/fs/cgroup/cgroup.procs ]; then
	cg_roots=(/sys/fs/cgroup)                           # unified (Debian 12 and 13)
else
	cg_roots=()                                         # hybrid or legacy
	for d in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified; do [ -e "$d/cgroup.procs" ] && cg_roots+=("$d"); done
fi
[ ${#cg_roots[@]} -gt 0 ] || bail "no cgroup hierarchy to put the client in"
for d in "${cg_roots[@]}"; do
	mkdir "$d/$cg_name" || bail "cannot make the cgroup $d/$cg_name"
	cg_dirs+=("$d/$cg_name")
done
# in_unit PIDFILE CMD...: CMD as a process of the test's scope, its pid in PIDFILE
in_unit() {
	local pf=$1
	shift
	sh -c 'pf=$1; shift; for d in $CG_DIRS; do echo $$ >"$d/cgroup.procs" || exit 99; done; echo $$ >"$pf"; exec "$@"' \
		sh "$pf" "$@"
}
export CG_DIRS="${cg_dirs[*]}"

# ---- rerandd, its stderr the journal ----------------------------------------------------
hd=$tmp/h
rerandd_dirs "$hd" pre post
rerandd_fixtures "$hd" "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro"
rerandd_no_reboot "$hd/no-reboot"
rerandd_conf_local "$hd" /bin/false "$hd/no-setup-data" <<EOF

[Stage]
Kernel=$hd/no-such-kernel
Initrd=none

$(rerandd_policy MaxLayoutAge=30d)

$(rerandd_reboot_by "$hd/no-reboot $hd")

[Crash]
Mode=off
EOF
systemd-cat -t rerandd sh -c 'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$@"' sh \
	"$RERANDD" --config "$hd/rerand.conf" --config-dir "$hd/conf.d" &
rerandd_pids+=($!)
rerandd_wait_up "$hd"
check "rerandd's ordinary lines reach this journal through its stderr stream" \
	wait_for 10 sh -c '"$@" -t rerandd _TRANSPORT=stdout -o cat | grep -q .' sh "${J[@]}"
st() { RERAND_CONTROL_SOCKET=$hd/run/control "$@"; }

in_unit "$tmp/hold.pid" env RERAND_CONTROL_SOCKET="$hd/run/control" "$R" hold --reason "audit check" >/dev/null ||
	bail "rerand hold failed"
in_unit "$tmp/status.pid" env RERAND_CONTROL_SOCKET="$hd/run/control" "$R" status >/dev/null ||
	bail "rerand status failed"
in_unit "$tmp/unhold.pid" env RERAND_CONTROL_SOCKET="$hd/run/control" "$R" unhold >/dev/null ||
	bail "rerand unhold failed"
in_unit "$tmp/now.pid" env RERAND_CONTROL_SOCKET="$hd/run/control" "$R" now >/dev/null ||
	bail "rerand now failed"
ID=cab9b5e72e464ba4b70373f2caa67f02
# the entries of the audit MESSAGE_ID as JSON lines
audit() { "${J[@]}" MESSAGE_ID=$ID -o json 2>/dev/null; }
wait_for 10 sh -c '[ "$("$@" MESSAGE_ID='$ID' -o cat | wc -l)" -ge 3 ]' sh "${J[@]}"
audit >"$tmp/audit.json"
echo "# $("${J[@]}" MESSAGE_ID=$ID -o cat | tr '\n' '|')"
# entry VERB PIDFILE: the one audit entry of VERB has the peer uid 0, the
# client's pid and the test's scope as its unit, and says so in MESSAGE too
entry() {
	python3 - "$tmp/audit.json" "$1" "$(cat "$2")" "$cg_name" <<'EOF'
import json, sys
path, verb, pid, unit = sys.argv[1:]
es = [json.loads(l) for l in open(path) if l.strip()]
mine = [e for e in es if e.get("RERAND_COMMAND") == verb]
if len(mine) != 1:
    sys.exit("%d entries for %s" % (len(mine), verb))
e = mine[0]
want = {"RERAND_PEER_UID": "0", "RERAND_PEER_PID": pid, "RERAND_PEER_UNIT": unit,
        "SYSLOG_IDENTIFIER": "rerandd", "PRIORITY": "5"}
bad = {k: e.get(k) for k, v in want.items() if e.get(k) != v}
if bad:
    sys.exit("%s: %s, want %s" % (verb, bad, want))
if ("from uid 0 pid %s unit %s" % (pid, unit)) not in e["MESSAGE"]:
    sys.exit("MESSAGE: %r" % e["MESSAGE"])
EOF
}
check "journal: \`rerand hold\` has MESSAGE_ID=$ID, uid 0, its pid and unit $cg_name" entry hold "$tmp/hold.pid"
check "journal: \`rerand unhold\` likewise" entry unhold "$tmp/unhold.pid"
check "journal: \`rerand now\` likewise" entry now "$tmp/now.pid"
check "journal: the hold's reason is in the entry (RERAND_COMMAND_ARG)" \
	python3 -c "import json,sys; sys.exit(not any(json.loads(l).get('RERAND_COMMAND_ARG')=='audit check' for l in open('$tmp/audit.json') if l.strip()))"
check "journal: a read-only \`rerand status\` is no audit entry (debug level only)" \
	python3 -c "import json,sys; sys.exit(any(json.loads(l).get('RERAND_COMMAND','').startswith('status') for l in open('$tmp/audit.json') if l.strip()))"
check "journal: the audit entries are native ones (fields), not stderr stream lines" \
	eval '! "${J[@]}" -t rerandd _TRANSPORT=stdout -o cat | grep -q "control command"'
check "rerandd never asked for a reboot" test ! -e "$hd/reboot-called"

# ---- SignKey=: every use of the key is an entry of its own -----------------------------
# Two instances locked down by their fixtures (lockdown integrity, Secure Boot
# on), so that rerandd signs what it builds: one with a key file (sbsign signs),
# one with a PKCS#11 URI carrying a PIN in its query (sbsign cannot load the
# engine here and fails: a use all the same, and the PIN must not be logged).
rerandd_need_builder "rerandd builds the image to sign as ImageUser="
rerandd_kernel
command -v sbsign >/dev/null && command -v openssl >/dev/null || bail "sbsign and openssl are needed for SignKey="
openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=rerand audit db" -days 30 \
	-keyout "$tmp/db.key" -out "$tmp/db.crt" 2>/dev/null || bail "openssl req"
chmod 0600 "$tmp/db.key"
sign_inst() { # DIR KEY
	rerandd_dirs "$1" state/images bin pre post
	rerandd_keeper_kexec "$1/bin/kexec"
	rerandd_fixtures "$1" "root=/dev/vda1 ro console=ttyS0"
	printf 'none [integrity] confidentiality\n' >"$1/lockdown"
	printf '\x06\x00\x00\x00\x01' >"$1/SecureBoot"
	mkfifo "$1/uevents"
	rerandd_no_reboot "$1/no-reboot"
	rerandd_conf_local "$1" "$1/bin/kexec" "$1/no-setup-data" <<EOF
Uevents=$1/uevents
Lockdown=$1/lockdown
SecureBoot=$1/SecureBoot

[Stage]
Kernel=$KERNEL
Initrd=none
CommandLine=console=ttyS0 quiet
SignKey=$2
SignCert=$tmp/db.crt

[Crash]
Mode=off

$(rerandd_policy MaxLayoutAge=30d)

$(rerandd_reboot_by "$1/no-reboot $1")
EOF
}
PIN=271828
sign_inst "$tmp/sk" "$tmp/db.key"
sign_inst "$tmp/p11" "pkcs11:token=rerand-audit;object=db?pin-value=$PIN"
for d in "$tmp/sk" "$tmp/p11"; do
	systemd-cat -t "rerandd-${d##*/}" sh -c 'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$@"' sh \
		"$RERANDD" --config "$d/rerand.conf" --config-dir "$d/conf.d" &
	rerandd_pids+=($!)
done
SID=fa64ec5659fc4be7861305738ea60d86
wait_for 240 sh -c '[ "$("$@" MESSAGE_ID='$SID' -o cat | wc -l)" -ge 2 ]' sh "${J[@]}"
"${J[@]}" MESSAGE_ID=$SID -o json >"$tmp/sign.json" 2>/dev/null
echo "# $("${J[@]}" MESSAGE_ID=$SID -o cat | tr '\n' '|')"
signed() { # KEY RESULT_PREFIX: the one entry of KEY names it, the certificate, the kernel and a cached image
	python3 - "$tmp/sign.json" "$1" "$2" "$tmp/db.crt" "$KERNEL" <<'EOF'
import json, sys
path, key, res, cert, kernel = sys.argv[1:]
es = [json.loads(l) for l in open(path) if l.strip()]
mine = [e for e in es if e.get("RERAND_SIGN_KEY") == key]
if len(mine) != 1:
    sys.exit("%d entries for %s: %r" % (len(mine), key, [e.get("RERAND_SIGN_KEY") for e in es]))
e = mine[0]
if not (e.get("RERAND_SIGN_RESULT", "").startswith(res) and e.get("RERAND_SIGN_CERT") == cert and
        e.get("RERAND_KERNEL") == kernel and "/state/images/" in e.get("RERAND_IMAGE", "") and
        e.get("_TRANSPORT") == "journal"):
    sys.exit("%r" % e)
EOF
}
check "journal: SignKey= (a key file) used: MESSAGE_ID=$SID, the key, certificate, kernel, cached image, signed" \
	signed "$tmp/db.key" signed
check "journal: SignKey= (a PKCS#11 URI) whose sbsign failed is an entry too, the URI without its query" \
	signed "pkcs11:token=rerand-audit;object=db" failed
check "journal: the PIN of the URI's query is in no entry" \
	eval '! "${J[@]}" -o json 2>/dev/null | grep -q "pin-value=$PIN"'
check "journal: no key material in any entry" \
	eval '! "${J[@]}" -o json 2>/dev/null | grep -q "PRIVATE KEY"'
done_

