#!/bin/bash
# One build path for every image that can boot (issue 39, points 1 and 7),
# with real build/rerandd and build/rerand on a real Debian kernel;
# kexec-tools REPLACED by a stand-in that only records (nothing is loaded on
# this machine), RerandBinary= a hostile wrapper of the real rerand, as in
# test-builder-daemon.sh.  Checks:
#  - the Debian kernel hook (debian/hooks/kernel-hook, run as root as dpkg
#    runs it) builds nothing itself: it asks rerandd (`rerand build`), which
#    builds through its own sandboxed path; a builder that leaves a process
#    behind to rewrite its output changes nothing that is cached, and the
#    process is gone when the hook returns; without rerandd the hook exits 0,
#    says so, and caches nothing;
#  - with SignKey=, a builder's output that fails the check is never handed
#    to sbsign (a recording wrapper of the real sbsign), and what sbsign
#    signs is the checked root-only copy, not the builder's file;
#  - sbsign runs as the checks' user (issue 39, point 2): /proc/PID/status
#    of the real sbsign, read while it runs (the wrapper starts it and
#    reads it once it has exec'd), shows that uid, no capabilities, an
#    empty bounding set, no_new_privs and a seccomp filter; it is handed
#    the checked copy, the key and the certificate as descriptors (the key
#    a sealed memfd) and cannot read the key file itself, write the key's
#    memfd, or write the image cache; its signed output is checked again;
#  - the builder is pid 1 of a PID namespace of its own; a fork bomb is held
#    by RLIMIT_NPROC, and a chain of forks that outruns any sweep (each
#    process forks and exits) is gone once the build is done;
#  - rerandd.service bounds its tasks and memory (TasksMax=, MemoryMax=) and
#    allows the builder's PID namespace (RestrictNamespaces=pid), checked by
#    systemd-analyze when it is there.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test onepath onepath_cleanup
# the hook under test (RERAND_TEST_HOOK: another one, a test of the test)
HOOK=${RERAND_TEST_HOOK:-$top/debian/hooks/kernel-hook}
# what a failed containment would leave running
onepath_cleanup() {
	pkill -KILL -f "$tmp/.*/marker-" 2>/dev/null
	rerandd_cleanup
}

rerandd_need_bins
rerandd_need_builder "rerandd cannot switch the builder to another user"
command -v python3 >/dev/null || bail "python3 is needed for the hostile builder"
command -v sbsign >/dev/null || bail "sbsign (sbsigntool) is needed for SignKey="
rerandd_kernel
OTHER=$kdir/vmlinuz-6.12.118+deb12-cloud-amd64
[ -r "$OTHER" ] || bail "$OTHER: a second kernel is needed"
chmod 0755 "$tmp"
openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=rerand onepath db" -days 30 \
	-keyout "$tmp/db.key" -out "$tmp/db.crt" 2>/dev/null || bail "openssl req"
chmod 0600 "$tmp/db.key"

cat >"$tmp/fake-kexec" <<'EOF'
#!/bin/sh
# STAND-IN for kexec-tools (test-onepath-daemon.sh): records, loads nothing.
[ "$1" = --version ] && { echo "kexec-tools 2.0.25"; exit 0; }
d=$(dirname "$(dirname "$0")")
printf '%s\n' "$*" >>"$d/kexec.log"
exit 0
EOF
# sbsign as rerandd runs it (RERAND_SBSIGN), as CheckUser= (nobody): it
# records what it was given (its arguments, where fd 3, its input, leads)
# and what it can reach, starts the real sbsign, and reads the real
# sbsign's /proc status once it has exec'd (comm "sbsign"), before it is
# reaped; its exit status is sbsign's.  In signlog/, which nobody may write.
mkdir -p "$tmp/signlog"
chmod 0777 "$tmp/signlog"
sed -e "s|@LOG@|$tmp/signlog|g" -e "s|@KEY@|$tmp/db.key|g" >"$tmp/sbsign-rec" <<'EOF'
#!/bin/sh
d=@LOG@
n=$$
in=$(readlink /proc/self/fd/3)
printf '%s IN %s\n' "$*" "$in" >>"$d/sbsign.log"
{
	for f in 3 4 5 6; do printf 'fd%s %s %s\n' "$f" "$(readlink /proc/self/fd/$f)" \
		"$(stat -L -c %a /proc/self/fd/$f)"; done
	if cat @KEY@ >/dev/null 2>&1; then echo "keyfile readable"; else echo "keyfile unreadable"; fi
	if (printf x >>/proc/self/fd/4) 2>/dev/null; then echo "keymemfd writable"; else echo "keymemfd unwritable"; fi
	if (: >"${in%/*}/probe-$n") 2>/dev/null; then echo "cache writable"; else echo "cache unwritable"; fi
} >"$d/reach.$n"
# the instance badsig: sbsign's output is not a signed image
case $in in */badsig/*) printf 'not a signed image' >/proc/self/fd/6; exit 0 ;; esac
sbsign "$@" &
p=$!
i=0
while [ $i -lt 100000 ]; do
	c=
	read -r c 2>/dev/null </proc/$p/comm
	[ "$c" = sbsign ] && break
	i=$((i + 1))
done
while read -r k v; do
	case $k in Name:|State:|Uid:|Gid:|CapPrm:|CapEff:|CapBnd:|NoNewPrivs:|Seccomp:) echo "$k $v" ;; esac
done 2>/dev/null </proc/$p/status >"$d/status.$n"
wait $p
EOF
# The builder: MODE in the instance's file "mode".
#  linger   the real image, then a process left behind that rewrites the
#           output once it is no longer the temporary file
#  garbage  not an image, exit 0
#  bomb     the real image, then forks until refused (the count in
#           bomb/forks), then a chain of forks that outruns any sweep
cat >"$tmp/wrap" <<EOF
#!/bin/bash
if [ "\$1" = image ]; then
	d=\${0%/bin/*}
	# this shell's own status (read by bash itself, not a child's)
	while read -r k v; do [ "\$k" = NSpid: ] && { a=(\$v); echo "BUILDER NSpid: \${a[*]}" >&2; }; done </proc/self/status
	mode=\$(cat "\$d/mode" 2>/dev/null)
	case \$mode in
	garbage)
		echo "not an image at all" >&4
		exit 0 ;;
	linger)
		$R "\$@" || exit
		setsid sh -c 'i=0; while [ \$i -lt 600 ]; do case \$(readlink /proc/self/fd/4) in *.tmp??????) sleep 0.1; i=\$((i+1));; *) break;; esac; done
			printf "written by what the builder left behind" >&4; echo done >"\$0/wrote"
			i=0; while [ \$i -lt 1200 ]; do sleep 0.1; i=\$((i+1)); done' "\$d/marker-linger" \
			</dev/null >/dev/null 2>&1 &
		sleep 0.5
		exit 0 ;;
	bomb)
		$R "\$@" || exit
		# children that sleep, until fork is refused (at most 400)
		python3 -c '
import os, sys, time
n = 0
while n < 400:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
open(sys.argv[1], "w").write("%d\n" % n)' "\$d/bomb/forks" "\$d/marker-bomb"
		# each process forks and exits at once: a sweep that lists and
		# kills children always finds the last one gone (ends by itself
		# after 120 s)
		setsid python3 -c '
import os, sys, time
end = time.time() + 120
while time.time() < end:
    if os.fork():
        os._exit(0)' "\$d/marker-chain" </dev/null >/dev/null 2>&1 &
		sleep 1
		exit 0 ;;
	esac
fi
exec $R "\$@"
EOF
chmod 0755 "$tmp/fake-kexec" "$tmp/wrap" "$tmp/sbsign-rec"
rerandd_no_reboot "$tmp/no-reboot"
export RERAND_SBSIGN=$tmp/sbsign-rec

# inst ID MODE KERNEL [locked]: an instance staging KERNEL; locked: under
# lockdown with SignKey= (signed here)
inst() {
	local id=$1 hd=$tmp/$1 sign=
	rerandd_dirs "$hd" bin pre post bomb
	cp "$tmp/fake-kexec" "$hd/bin/kexec"
	cp "$tmp/wrap" "$hd/bin/rerand"
	echo "$2" >"$hd/mode"
	rerandd_fixtures "$hd" "root=/dev/vda1 ro console=ttyS0"
	echo 0 >"$hd/crash_size"
	echo 0 >"$hd/crash_loaded"
	if [ "${4:-}" = locked ]; then
		printf 'none [integrity] confidentiality\n' >"$hd/lockdown"
		printf '\x06\x00\x00\x00\x01' >"$hd/SecureBoot"
		sign="SignKey=$tmp/db.key
SignCert=$tmp/db.crt"
	else
		rerandd_unlocked "$hd"
	fi
	mkfifo "$hd/uevents"
	chmod 0777 "$hd/bomb"
	R=$hd/bin/rerand RERANDD_IMAGE_USER=nobody rerandd_conf "$hd" "$hd/bin/kexec" "$hd/no-setup-data" <<EOF
PreRebootDirectory=$hd/pre
PostBootDirectory=$hd/post
KexecCrashSize=$hd/crash_size
KexecCrashLoaded=$hd/crash_loaded
ProcVmcore=$hd/no-vmcore
Uevents=$hd/uevents
Lockdown=$hd/lockdown
SecureBoot=$hd/SecureBoot

[Stage]
Kernel=$3
Initrd=none
CommandLine=console=ttyS0 quiet
$sign

[Crash]
Mode=off

$(rerandd_policy MaxLayoutAge=30d)

$(rerandd_reboot_by "$tmp/no-reboot $hd")
EOF
}
st() { rerandd_status "$tmp/$1"; }
status_has() { st "$1" 2>/dev/null | grep -qF -- "$2"; }
cache() { find "$tmp/$1/state/images" -mindepth 1 2>/dev/null | sed 's|.*/||' | tr '\n' ' '; }
running() { pgrep -f "$tmp/$1/marker-$2" >/dev/null; }

# hook: rerandd stages OTHER; the hook asks it for KERNEL's image
inst hook linger "$OTHER"
inst garbage garbage "$KERNEL" locked
inst signok ok "$KERNEL" locked
inst badsig ok "$KERNEL" locked
rerandd_up "$tmp/hook" "$tmp/garbage" "$tmp/signok" "$tmp/badsig"

# ---- the kernel hook goes through rerandd -----------------------------------------------------
KEY=$("$R" cache-key "$KERNEL") || bail "rerand cache-key $KERNEL"
SHA=$(sha256sum <"$KERNEL" | cut -c1-64)
wait_for 60 status_has hook "staged:            yes" || true
hd=$tmp/hook
herr=$(RERAND_STATE_DIR=$hd/state RERAND_BIN=$hd/bin/rerand RERAND_CONTROL_SOCKET=$hd/run/control \
	RERAND_IMAGE_USER=nobody timeout 300 sh "$HOOK" add 6.1-onepath "$KERNEL" 2>&1)
hrc=$?
img=$hd/state/images/$KEY.img
check "hook: exit 0 and nothing on stderr (exit $hrc: ${herr:-nothing})" test "$hrc" = 0 -a -z "$herr"
check "hook: rerandd built the image itself, at the hook's request (its log)" \
	grep -qF "building $img from $(readlink -f "$KERNEL") (build only, not staged)" "$hd/log"
check "hook: rerandd's builder ran as nobody without capabilities" \
	grep -q "built $img as nobody without capabilities" "$hd/log"
check "hook: the builder was pid 1 of a PID namespace of its own ($(sed -n 's/.*BUILDER NSpid: //p' "$hd/log" | tr '\n' ';'))" \
	eval 'grep -Eq "BUILDER NSpid: [0-9]+ 1\$" "$hd/log"'
check "hook: the image is cached under rerand cache-key's name, with its record ($(cache hook))" \
	test -f "$img" -a -f "$img.sha256"
check "hook: the cached image is the one checked (its .sha256 record holds)" \
	bash -c "cd '${img%/*}' && sha256sum --quiet -c '${img##*/}.sha256'"
check "hook: what the builder left behind was gone when the hook returned" eval '! running hook linger'
check "hook: ... and never wrote to the builder's file" test ! -e "$hd/marker-linger/wrote"
check "hook: the cached image never held the leftover's bytes" \
	bash -c "! grep -q 'written by what the builder left behind' '$img'"
check "hook: the index names the kernel ($(cat "$hd/state/kernels/6.1-onepath" 2>/dev/null | cut -c1-16))" \
	test "$(cat "$hd/state/kernels/6.1-onepath" 2>/dev/null)" = "$SHA"
check "hook: nothing temporary left in the cache ($(ls -A "$hd/state/images" | tr '\n' ' '))" \
	bash -c "! ls -A '$hd/state/images' | grep -q -e tmp -e chk -e '^\.'"
# the staged image (OTHER's) is untouched by the hook's build
check "hook: rerandd still has OTHER staged" status_has hook "staged:            yes (kernel $OTHER"

# no rerandd: the package manager is not broken, nothing is built
nd=$tmp/nodaemon
mkdir -p "$nd"
nerr=$(RERAND_STATE_DIR=$nd/state RERAND_BIN=$R RERAND_CONTROL_SOCKET=$nd/control \
	sh "$HOOK" add 6.1-onepath "$KERNEL" 2>&1)
nrc=$?
check "no rerandd: the hook exits 0 and says rerandd builds it later (exit $nrc: $nerr)" \
	eval '[ $nrc = 0 ] && grep -q "rerandd is not running.*rerandd builds the image of kernel 6.1-onepath in its sandbox when it stages it" <<<"$nerr"'
check "no rerandd: no image, nothing temporary ($(ls -A "$nd/state/images" 2>/dev/null | tr '\n' ' '))" \
	test -z "$(ls -A "$nd/state/images" 2>/dev/null)"
check "no rerandd: the index names the kernel" test "$(cat "$nd/state/kernels/6.1-onepath" 2>/dev/null)" = "$SHA"

# ---- check before sign ------------------------------------------------------------------------
wait_for 60 status_has garbage "stage error:" || true
check "garbage: the stage error is the check's (not an image)" \
	eval 'st garbage | grep -q "stage error: .*\.img\.chk"'
check "garbage: sbsign was never run on it ($(grep -c "$tmp/garbage/" "$tmp/signlog/sbsign.log" 2>/dev/null) runs)" \
	eval '! grep -qF "$tmp/garbage/" "$tmp/signlog/sbsign.log" 2>/dev/null'
check "garbage: nothing cached ($(cache garbage))" test -z "$(cache garbage)"
wait_for 60 status_has signok "staged:            yes" || true
sin=$(grep -F "$tmp/signok/" "$tmp/signlog/sbsign.log" 2>/dev/null | head -n 1 | awk '{print $NF}')
check "signok: signed here and staged" status_has signok "staged:            yes"
check "signok: sbsign signed the checked root-only copy (.chk), not the builder's file (${sin##*/})" \
	bash -c "[[ '$sin' == $tmp/signok/state/images/*.signed.img.chk* ]]"
check "signok: rerandd says it checked, then signed" grep -q "as nobody without capabilities, checked, then signed by sbsign" "$tmp/signok/log"
# sbsign as the checks' user: the real sbsign's status while it ran
sfile=$(ls "$tmp"/signlog/status.* 2>/dev/null | head -n 1)
sstat() { sed -n "s/^$1: //p" "$sfile" 2>/dev/null | tr -s ' \t' ' '; }
rfile=${sfile/status./reach.}
nob=$(id -u nobody)
check "signok: the real sbsign's status was read while it ran (Name $(sstat Name), State $(sstat State))" \
	eval '[ "$(sstat Name)" = sbsign ] && [[ "$(sstat State)" != Z* ]]'
check "signok: sbsign ran as nobody, every uid (Uid: $(sstat Uid); Gid: $(sstat Gid))" \
	test "$(sstat Uid)" = "$nob $nob $nob $nob"
check "signok: sbsign had no capability (CapPrm: $(sstat CapPrm); CapEff: $(sstat CapEff))" \
	test "$(sstat CapPrm) $(sstat CapEff)" = "0000000000000000 0000000000000000"
check "signok: sbsign's bounding set was empty (CapBnd: $(sstat CapBnd))" \
	test "$(sstat CapBnd)" = 0000000000000000
check "signok: sbsign ran with no_new_privs and a seccomp filter (NoNewPrivs: $(sstat NoNewPrivs); Seccomp: $(sstat Seccomp))" \
	test "$(sstat NoNewPrivs) $(sstat Seccomp)" = "1 2"
check "signok: sbsign's key and certificate were sealed memfds, its input the checked copy, its output a memfd ($(tr '\n' ';' <"$rfile" 2>/dev/null))" \
	eval 'grep -Eq "^fd3 $tmp/signok/state/images/[^ ]*\.signed\.img\.chk[^ /]* 644\$" "$rfile" &&
	      grep -q "^fd4 /memfd:key (deleted) 404\$" "$rfile" &&
	      grep -q "^fd5 /memfd:certificate (deleted) 404\$" "$rfile" &&
	      grep -q "^fd6 /memfd:rerandd-signed (deleted) 602\$" "$rfile"'
check "signok: as sbsign, the key file cannot be read, the key's memfd not written, the cache not written" \
	eval 'grep -qx "keyfile unreadable" "$rfile" && grep -qx "keymemfd unwritable" "$rfile" &&
	      grep -qx "cache unwritable" "$rfile"'
check "signok: the staged image is the one sbsign signed, checked again: signature verified" \
	eval 'st signok | grep -q "signature verified"'

wait_for 60 status_has badsig "stage error:" || true
check "badsig: what sbsign wrote is checked again, and refused ($(st badsig | sed -n 's/.*stage error: *//p' | cut -c1-160))" \
	eval 'st badsig | grep -q "stage error: .*\.signed\.img\.chk"'
check "badsig: nothing cached, nothing staged ($(cache badsig))" \
	eval '[ -z "$(cache badsig)" ] && ! status_has badsig "staged:            yes"'

# ---- limits: the fork bomb and the chain --------------------------------------------------------
# alone: RLIMIT_NPROC counts every process of nobody, the other builders' too
inst bomb bomb "$KERNEL"
rerandd_up "$tmp/bomb"
wait_for 90 status_has bomb "staged:            yes" || true
forks=$(cat "$tmp/bomb/bomb/forks" 2>/dev/null)
check "bomb: the image is still built and staged" status_has bomb "staged:            yes"
check "bomb: fork was refused before 128 processes of the builder's user (${forks:-none} forked)" \
	eval '[ -n "$forks" ] && [ "$forks" -gt 0 ] && [ "$forks" -lt 128 ]'
wait_for 5 eval '! running bomb chain && ! running bomb bomb' || true
check "bomb: none of the forked sleepers is running once the build is done" eval '! running bomb bomb'
check "bomb: the chain of forks did not outlast the build" eval '! running bomb chain'
check "bomb: no process of nobody's started by the builder is left ($(pgrep -u nobody -f "$tmp/bomb" | wc -l))" \
	eval '[ "$(pgrep -u nobody -f "$tmp/bomb" | wc -l)" = 0 ]'

# ---- the unit ---------------------------------------------------------------------------------
u=$top/systemd/rerandd.service
tasks=$(sed -n 's/^TasksMax=//p' "$u")
mem=$(sed -n 's/^MemoryMax=//p' "$u")
check "rerandd.service: TasksMax= a finite number ($tasks)" eval '[[ "$tasks" =~ ^[0-9]+$ ]] && [ "$tasks" -ge 64 ]'
check "rerandd.service: MemoryMax= bounded ($mem)" eval '[[ "$mem" =~ ^[0-9]+[KMG]$ ]]'
check "rerandd.service: RestrictNamespaces= allows only pid ($(sed -n 's/^RestrictNamespaces=//p' "$u"))" \
	test "$(sed -n 's/^RestrictNamespaces=//p' "$u")" = pid
if command -v systemd-analyze >/dev/null && systemd-analyze verify --help 2>/dev/null | grep -q -- --man; then
	out=$(cd "$tmp" && sed 's|/usr/local/sbin/rerandd|/bin/true|' "$u" >rerandd.service &&
		systemd-analyze verify --man=no ./rerandd.service 2>&1)
	check "systemd-analyze verify accepts the unit's limits (${out:-no complaint})" \
		eval '! grep -Eqi "TasksMax|MemoryMax|RestrictNamespaces" <<<"$out"'
else
	skip "no systemd-analyze verify: the unit's settings are not parsed by systemd"
fi
done_
