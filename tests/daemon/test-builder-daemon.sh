#!/bin/bash
# rerandd's image builder as it runs: real build/rerandd and build/rerand on
# a real Debian kernel, kexec-tools REPLACED by a stand-in that only records
# (nothing is loaded on this machine), RerandBinary= a wrapper that writes
# the builder's own /proc/self/status and open fds to its output (which
# rerandd logs) before it execs the real rerand.  Checks: run as root,
# rerandd builds as ImageUser= (nobody) with no capabilities in any set,
# an empty bounding set, no_new_privs and a seccomp filter (which kills a
# builder calling kexec_file_load), handed the kernel and its output
# as fds 3 and 4, unable to read the state directory; the image it wrote is
# staged; a builder that fails, a missing ImageUser= and a RerandBinary=
# of another stage leave nothing in the cache and say why; a process the
# builder leaves behind (setsid, its output open) is killed before rerandd
# goes on (the builder's reaper, daemon/reaper.c), and could not have
# changed the cached image anyway (rerandd checks and caches a copy only
# root holds); an image whose stage bytes are not rerandd's own (one byte
# changed, its stage hash field left as rerandd's) is refused and never
# cached or staged.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test buildd linger_cleanup
# the linger case's leftover, should the reaper fail to kill it
linger_cleanup() {
	local p
	p=$(cat "$tmp/linger/linger/pid" 2>/dev/null) && kill -KILL "$p" 2>/dev/null
	rerandd_cleanup
}

rerandd_need_bins
rerandd_need_builder "rerandd cannot switch the builder to another user"
rerandd_kernel
NOBODY_UID=$(id -u nobody)
chmod 0755 "$tmp"

cat >"$tmp/fake-kexec" <<'EOF'
#!/bin/sh
# STAND-IN for kexec-tools (test-builder-daemon.sh): records, loads nothing.
[ "$1" = --version ] && { echo "kexec-tools 2.0.25"; exit 0; }
d=$(dirname "$(dirname "$0")")
for a in "$@"; do
	case $a in /proc/self/fd/*) cat "$a" >"$d/staged.img" ;; esac
done
printf '%s\n' "$*" >>"$d/kexec.log"
exit 0
EOF
# The builder wrapper: MODE in its own file name's directory (ok, fail).
cat >"$tmp/wrap" <<EOF
#!/bin/bash
if [ "\$1" = image ]; then
	grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|Seccomp_filters):' /proc/self/status |
		tr -s '\t ' ' ' | sed 's/^/BUILDER /' >&2
	sed -n 's/^Max \(cpu time\|file size\|address space\|core file size\)  *\([^ ]*\)  *\([^ ]*\).*/BUILDER limit \1: \2 \3/p' /proc/self/limits >&2
	echo "BUILDER fd3 \$(readlink /proc/self/fd/3)" >&2
	echo "BUILDER fd4 \$(readlink /proc/self/fd/4)" >&2
	# its parent, the reaper, outside the builder's PID namespace: \$PPID
	# is 0 there, its pid is in the builder's own status as /proc shows it
	while read -r k v; do case \$k in PPid:) pp=\$v;; NSpid:) echo "BUILDER NSpid: \$v" >&2;; esac; done </proc/self/status
	grep -E '^(Uid|CapPrm|CapEff|CapBnd|NoNewPrivs):' /proc/\$pp/status |
		tr -s '\t ' ' ' | sed 's/^/BUILDER parent /' >&2
	ls "\${0%/bin/*}/state/images" >/dev/null 2>&1 && echo "BUILDER state readable" >&2 ||
		echo "BUILDER state unreadable" >&2
	mode=\$(cat "\${0%/bin/*}/mode" 2>/dev/null)
	if [ "\$mode" = fail ]; then echo "half an image" >&4; echo "BUILDER failing on purpose" >&2; exit 1; fi
	# as a subverted decompressor would: kexec_file_load (320), with a bad
	# fd so that nothing could load even without the filter
	if [ "\$mode" = kexec ]; then
		echo "half an image" >&4
		exec python3 -c 'import ctypes, sys; r = ctypes.CDLL(None).syscall(320, -1, -1, 0, b"", 0); print("BUILDER survived kexec_file_load:", r, file=sys.stderr)'
	fi
	# a swapped stage: the real image, then one byte of its stage (0x300
	# into the protected-mode part, past the 64-bit entry) changed in place
	# through fd 4, its stage hash field left as rerandd's
	if [ "\$mode" = swap ]; then
		$R "\$@" || exit
		exec python3 -c 'import os; o = 0x400 + 0x300; b = os.pread(4, 1, o); os.pwrite(4, bytes([b[0] ^ 0xff]), o); print("BUILDER swapped the stage byte at", hex(o))'
	fi
	if [ "\$mode" = linger ]; then
		$R "\$@" || exit
		# left behind, in a session of its own, with the output open: once
		# the file it wrote is no longer the temporary one (renamed into
		# the cache, or unlinked), it appends to it, then stays (its pid
		# in linger/pid, its command line naming linger/)
		out=\${0%/bin/*}/linger
		setsid sh -c 'echo \$\$ >"\$0/pid"
			i=0; while [ \$i -lt 600 ]; do case \$(readlink /proc/self/fd/4) in *.tmp??????) sleep 0.1; i=\$((i+1));; *) break;; esac; done
			echo "\$(readlink /proc/self/fd/4)" >"\$0/target"; printf "written by what the builder left behind" >&4; echo done >"\$0/wrote"
			i=0; while [ \$i -lt 1200 ]; do sleep 0.1; i=\$((i+1)); done' "\$out" \
			</dev/null >/dev/null 2>&1 &
		# gone only once the leftover is surely running
		i=0; while [ ! -s "\$out/pid" ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i+1)); done
		exit 0
	fi
fi
exec $R "\$@"
EOF
chmod 0755 "$tmp/fake-kexec" "$tmp/wrap"
rerandd_no_reboot "$tmp/no-reboot"

# inst ID MODE [IMAGE_USER]: an unlocked instance staging $KERNEL
inst() {
	local id=$1 hd=$tmp/$1
	rerandd_dirs "$hd" bin pre post
	cp "$tmp/fake-kexec" "$hd/bin/kexec"
	cp "$tmp/wrap" "$hd/bin/rerand"
	echo "$2" >"$hd/mode"
	rerandd_fixtures "$hd" "root=/dev/vda1 ro console=ttyS0"
	echo 0 >"$hd/crash_size"
	echo 0 >"$hd/crash_loaded"
	rerandd_unlocked "$hd"
	mkfifo "$hd/uevents"
	R=$hd/bin/rerand RERANDD_IMAGE_USER=${3:-nobody} rerandd_conf "$hd" "$hd/bin/kexec" "$hd/no-setup-data" <<EOF
PreRebootDirectory=$hd/pre
PostBootDirectory=$hd/post
KexecCrashSize=$hd/crash_size
KexecCrashLoaded=$hd/crash_loaded
ProcVmcore=$hd/no-vmcore
Uevents=$hd/uevents
Lockdown=$hd/lockdown
SecureBoot=$hd/SecureBoot

[Stage]
Kernel=$KERNEL
Initrd=none
CommandLine=console=ttyS0 quiet

[Crash]
Mode=off

$(rerandd_policy MaxLayoutAge=30d)

$(rerandd_reboot_by "$tmp/no-reboot $hd")
EOF
}
st() { rerandd_status "$tmp/$1"; }
status_has() { st "$1" 2>/dev/null | grep -qF -- "$2"; }
cache() { find "$tmp/$1/state/images" -mindepth 1 2>/dev/null | sed 's|.*/||' | tr '\n' ' '; }

inst good ok
inst fail fail
inst nouser ok rerand-no-such-user
inst linger linger
inst kexec kexec
inst swap swap
mkdir -p "$tmp/linger/linger" && chmod 0777 "$tmp/linger/linger"
rerandd_up "$tmp/good" "$tmp/fail" "$tmp/nouser" "$tmp/linger" "$tmp/kexec" "$tmp/swap"

# ---- the builder's identity ------------------------------------------------------------------
wait_for 60 status_has good "staged:            yes" || true
log=$tmp/good/log
b() { sed -n "s/.*BUILDER $1 //p" "$log" | head -1; }
check "good: staged, with the image the builder wrote ($(cache good))" \
	eval 'status_has good "staged:            yes" && cmp -s "$tmp/good/staged.img" "$tmp"/good/state/images/*.img'

check "builder uid is nobody's in all four ($(b Uid:))" \
	test "$(b Uid:)" = "$NOBODY_UID $NOBODY_UID $NOBODY_UID $NOBODY_UID"
G=$(id -g nobody)
check "builder gid is nobody's in all four, no supplementary groups ($(b Gid:); Groups: '$(b Groups:)')" \
	eval 'test "$(b Gid:)" = "$G $G $G $G" && grep -Eq "BUILDER Groups: ?$" "$log"'
for set in CapInh CapPrm CapEff CapBnd CapAmb; do
	check "builder $set is empty ($(b $set:))" test "$(b $set:)" = 0000000000000000
done
check "builder has no_new_privs ($(b NoNewPrivs:))" test "$(b NoNewPrivs:)" = 1
# 2: filter mode, the builder's own allow-list (daemon/sandbox.c) on top of
# whatever this shell runs under; tests/kernel/test_sandbox.c checks what it
# allows and kills
own=$(sed -n 's/^Seccomp_filters:[[:space:]]*//p' /proc/self/status)
check "builder runs under a seccomp filter of its own (Seccomp: $(b Seccomp:), filters $(b Seccomp_filters:), this test's ${own:-?})" \
	eval 'test "$(b Seccomp:)" = 2 && { [ -z "$own" ] || [ "$(b Seccomp_filters:)" = $((own + 1)) ]; }'
# Under rerandd.service the builder loads its filter through the unit's own:
# seccomp(2) must be on the unit's SystemCallFilter= (@system-service lacks
# it), or every stage fails with "cannot load the image builder's seccomp
# filter".  The groups are expanded by this machine's systemd-analyze.
expand_filter() {
	local n
	for n in "$@"; do
		case $n in
		@*) systemd-analyze syscall-filter "$n" 2>/dev/null | sed -n '2,$p' | sed 's/^ *//; s/ *#.*//' |
			grep -v '^$' | while read -r m; do expand_filter "$m"; done ;;
		*) echo "$n" ;;
		esac
	done
}
if command -v systemd-analyze >/dev/null && systemd-analyze syscall-filter @system-service >/dev/null 2>&1; then
	unit_calls=$(expand_filter $(sed -n 's/^SystemCallFilter=\([^~].*\)/\1/p' "$top/systemd/rerandd.service") | sort -u)
	check "rerandd.service's SystemCallFilter= allows seccomp, for the builder's filter ($(wc -l <<<"$unit_calls") calls)" \
		grep -qx seccomp <<<"$unit_calls"
else
	skip "no systemd-analyze syscall-filter: the unit's SystemCallFilter= is not expanded"
fi
check "builder limits: CPU 300 s, address space 2 GiB, files 512 MiB, no core ($(b 'limit cpu time:'); $(b 'limit address space:'); $(b 'limit file size:'); $(b 'limit core file size:'))" \
	test "$(b 'limit cpu time:'),$(b 'limit address space:'),$(b 'limit file size:'),$(b 'limit core file size:')" = \
		"300 300,2147483648 2147483648,536870912 536870912,0 0"
check "builder reads the kernel from fd 3 ($(b fd3))" test "$(b fd3)" = "$(readlink -f "$KERNEL")"
check "builder writes a temporary file beside the image on fd 4 ($(b fd4))" \
	bash -c "[[ '$(b fd4)' == $tmp/good/state/images/*.img.tmp* ]]"
check "rerandd logs who built the image" grep -q "built $tmp/good/state/images/.*\.img as nobody without capabilities" "$log"
check "builder cannot read the state directory" grep -q 'BUILDER state unreadable' "$log"
# its parent is the reaper rerandd forked (daemon/reaper.c), which holds no
# more than the builder
check "builder's parent (its reaper) runs as nobody with no capability, no_new_privs ($(b 'parent Uid:'); $(b 'parent CapPrm:') $(b 'parent CapEff:') $(b 'parent CapBnd:'); $(b 'parent NoNewPrivs:'))" \
	test "$(b 'parent Uid:');$(b 'parent CapPrm:');$(b 'parent CapEff:');$(b 'parent CapBnd:');$(b 'parent NoNewPrivs:')" = \
		"$NOBODY_UID $NOBODY_UID $NOBODY_UID $NOBODY_UID;0000000000000000;0000000000000000;0000000000000000;1"
check "good: no temporary file left in the cache ($(cache good))" \
	bash -c "! ls -A '$tmp/good/state/images' | grep -q tmp"

# ---- failures leave nothing ------------------------------------------------------------------
wait_for 60 status_has fail "stage error:" || true
check "fail: the stage error names the builder and its status" \
	bash -c "RERAND_CONTROL_SOCKET=$tmp/fail/run/control '$R' status | grep -q 'stage error: .*image $KERNEL (as nobody, no capabilities) failed (status 1)'"
check "fail: the builder's own message is in the log" grep -q 'BUILDER failing on purpose' "$tmp/fail/log"
check "fail: nothing in the cache, half-written or not ($(cache fail))" test -z "$(cache fail)"
check "fail: nothing staged" test ! -e "$tmp/fail/kexec.log"

wait_for 60 status_has nouser "stage error:" || true
check "nouser: the stage error names ImageUser= and the missing user" \
	bash -c "RERAND_CONTROL_SOCKET=$tmp/nouser/run/control '$R' status | grep -q 'stage error: .*ImageUser=rerand-no-such-user: no such user'"
check "nouser: no builder ran, nothing cached or staged" \
	bash -c "! grep -q BUILDER '$tmp/nouser/log' && [ -z '$(cache nouser)' ] && [ ! -e '$tmp/nouser/kexec.log' ]"

# ---- the seccomp filter kills a builder that tries kexec ------------------------------------
wait_for 60 status_has kexec "stage error:" || true
check "kexec: the builder calling kexec_file_load is killed by SIGSYS (status 128+31)" \
	bash -c "RERAND_CONTROL_SOCKET=$tmp/kexec/run/control '$R' status | grep -q 'stage error: .*image $KERNEL (as nobody, no capabilities) failed (status 159)'"
check "kexec: the call never returned to the builder" bash -c "! grep -q 'BUILDER survived' '$tmp/kexec/log'"
check "kexec: nothing cached or staged ($(cache kexec))" \
	bash -c "[ -z '$(cache kexec)' ] && [ ! -e '$tmp/kexec/kexec.log' ]"

# ---- a swapped stage is refused, whatever its stage hash says (issue 39) -------------------
wait_for 60 status_has swap "stage error:" || true
check "swap: the builder did change a byte of its image's stage" grep -q 'BUILDER swapped the stage byte at 0x700' "$tmp/swap/log"
check "swap: the stage error says the stage differs from rerandd's at that byte" \
	bash -c "RERAND_CONTROL_SOCKET=$tmp/swap/run/control '$R' status | grep -q 'stage error: .*its stage differs from the one rerandd links at byte 0x300 .*a swapped stage; not staged'"
check "swap: nothing cached or staged ($(cache swap))" \
	bash -c "[ -z '$(cache swap)' ] && [ ! -e '$tmp/swap/kexec.log' ]"

# ---- what the builder leaves behind is killed, and cannot change the image -------------------
wait_for 60 status_has linger "staged:            yes" || true
img=$(find "$tmp/linger/state/images" -name '*.img' | head -1)
lpid=$(cat "$tmp/linger/linger/pid" 2>/dev/null)
# its own check: a process whose command line names linger/, by pid and by
# a scan of every process
leftover() {
	{ [ -n "$lpid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$lpid/cmdline" | grep -qF "$tmp/linger/linger"; } ||
		pgrep -f "$tmp/linger/linger" >/dev/null
}
check "linger: staged, with the image cached ($(cache linger))" \
	eval 'status_has linger "staged:            yes" && [ -n "$img" ]'
check "linger: the builder did leave a process behind (pid ${lpid:-none})" test -n "$lpid"
wait_for 3 eval '! leftover' || true
check "linger: nothing the builder started is running once the build is done" eval '! leftover'
check "linger: the leftover never wrote to the builder's file ($(cat "$tmp/linger/linger/target" 2>/dev/null))" \
	test ! -e "$tmp/linger/linger/wrote"
check "linger: the cached image is still the one checked (its .sha256 record holds)" \
	bash -c "[ -n '$img' ] && cd '${img%/*}' && sha256sum --quiet -c '${img##*/}.sha256'"
check "linger: the cached image never held the leftover's bytes" \
	bash -c "[ -n '$img' ] && ! grep -q 'written by what the builder left behind' '$img'"
check "linger: no temporary file left in the cache ($(cache linger))" \
	bash -c "! ls -A '$tmp/linger/state/images' | grep -q -e tmp -e chk"

# ---- configuration ---------------------------------------------------------------------------
printf '[Daemon]\nImageUser=root\n' >"$tmp/root.conf"
out=$("$RERANDD" --check-config --config "$tmp/root.conf" --config-dir "$tmp/none" 2>&1); rc=$?
check "ImageUser=root is refused by --check-config (exit $rc)" \
	bash -c "[ $rc -ne 0 ] && grep -q 'ImageUser=root: the image builder parses kernel files and must not run as root' <<<'$out'"
done_
