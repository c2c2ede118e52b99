#!/bin/bash
# UKIs and the Debian package's kernel hooks as a user meets them:
#  - rerand image/inspect/load on a UKI made by tests/mkuki.sh from systemd-
#    boot's stub (load runs a stand-in for kexec that prints what it got:
#    nothing is ever loaded here);
#  - debian/hooks, run against a real build/rerandd (it stages another
#    kernel; kexec-tools replaced by a stand-in that only records): postinst.d
#    has rerandd build the image where it caches it
#    (STATE/images/SHA256.STAGE.img), never runs the builder itself,
#    postrm.d removes it, kernel-install's plugin does the same for a UKI,
#    with a bad kernel a warning and exit 0.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
R=$top/build/rerand
K=${RERAND_KERNELS:-}
STUB=/usr/lib/systemd/boot/efi/linuxx64.efi.stub
H=$top/debian/hooks
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/lib/tap.sh"

if [ -z "$K" ]; then skip "RERAND_KERNELS not set: UKI tests need a kernel"; done_; fi
[ -r "$STUB" ] || { nok "$STUB missing (scripts/deps.sh check: systemd-boot-efi)"; done_; }
k=$("$top/scripts/kernels.sh" pick cloud61 2>"$tmp/kernels.err") ||
	bail "a 6.1 cloud kernel: scripts/kernels.sh pick cloud61: $(tail -n1 "$tmp/kernels.err")"

# --- UKI: image, inspect, load -----------------------------------------------
printf 'UCODE' > "$tmp/ucode"; printf 'INITRD' > "$tmp/initrd"
"$top/tests/mkuki.sh" -o "$tmp/k.efi" -k "$k" -u "$tmp/ucode" -i "$tmp/initrd" -c "root=/dev/vda console=ttyS0"
"$R" image "$k" -o "$tmp/bare.img"
check "rerand image of a UKI: exit 0" "$R" image "$tmp/k.efi" -o "$tmp/uki.img"
check "the image from the UKI is byte-identical to the image from its .linux" cmp -s "$tmp/bare.img" "$tmp/uki.img"
# --kernel-fd/--output-fd: what rerandd's builder and the kernel hook run
"$R" image "$k" --kernel-fd 3 -o "$tmp/named.img" --output-fd 4 3<"$k" 4>"$tmp/fd.img"; rc=$?
check "image --kernel-fd 3 --output-fd 4: exit $rc, the same bytes as from the paths, nothing at the named path" \
	bash -c "[ $rc -eq 0 ] && cmp -s '$tmp/bare.img' '$tmp/fd.img' && [ ! -e '$tmp/named.img' ]"
"$R" image "$k" --kernel-fd 3x -o "$tmp/x.img" 2>"$tmp/err"; rc=$?
check "image --kernel-fd 3x: usage error (exit $rc): $(cat "$tmp/err")" \
	bash -c "[ $rc -eq 64 ] && grep -q \"kernel-fd: '3x' is not an open file descriptor number\" '$tmp/err'"
"$R" image "$k" --kernel-fd 9 -o "$tmp/x.img" 2>"$tmp/err"; rc=$?
check "image --kernel-fd 9 (not open): exit $rc naming the kernel: $(cat "$tmp/err")" \
	bash -c "[ $rc -eq 1 ] && grep -q '$k: cannot stat: Bad file descriptor' '$tmp/err' && [ ! -e '$tmp/x.img' ]"
"$R" image "$k" -o "$tmp/x.img" --output-fd 4 --sign-key /k --sign-cert /c 4>"$tmp/x2.img" 2>"$tmp/err"; rc=$?
check "image --output-fd with --sign-key is refused (exit $rc): $(cat "$tmp/err")" \
	bash -c "[ $rc -eq 64 ] && grep -q 'output-fd writes an unsigned image' '$tmp/err' && [ ! -s '$tmp/x2.img' ]"
"$R" inspect "$tmp/k.efi" > "$tmp/insp"
check "inspect: '$(head -1 "$tmp/insp")'" grep -q "unified kernel image" "$tmp/insp"
check "inspect names the command line" grep -qF "command line:   root=/dev/vda console=ttyS0" "$tmp/insp"
check "inspect --json: type uki, .ucode 5 bytes" bash -c "'$R' inspect --json '$tmp/k.efi' |
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"type\"]==\"uki\" and d[\"sections\"][\".ucode\"]==5 and d[\"kernel_version\"].startswith(\"6.1.0-57-cloud-amd64\"), d'"

cat > "$tmp/kexec" <<'EOS'
#!/bin/sh
# stand-in for kexec: prints its arguments and the initrd's bytes
for a; do echo "ARG $a"; case $a in --initrd=*) echo "INITRD $(cat "${a#--initrd=}")";; esac; done
EOS
chmod +x "$tmp/kexec"
"$R" load "$tmp/uki.img" --uki "$tmp/k.efi" --kexec "$tmp/kexec" > "$tmp/out" 2>&1
check "load --uki: the initrd is .ucode then .initrd" grep -qx "INITRD UCODEINITRD" "$tmp/out"
check "load --uki: the command line is .cmdline" grep -qx "ARG --append=root=/dev/vda console=ttyS0" "$tmp/out"
"$R" load "$tmp/uki.img" --uki "$tmp/k.efi" --kexec "$tmp/kexec" --initrd "$tmp/ucode" --append "x=1" > "$tmp/out" 2>&1
check "load --uki with --initrd and --append: those win" \
	bash -c "grep -qx 'INITRD UCODE' '$tmp/out' && grep -qx 'ARG --append=x=1' '$tmp/out'"
"$R" load "$tmp/uki.img" --uki "$tmp/k.efi" --kexec "$tmp/kexec" --reuse-cmdline > "$tmp/out" 2>&1
check "load --uki --reuse-cmdline: no --append" bash -c "! grep -q -- --append '$tmp/out' && grep -qx 'ARG --reuse-cmdline' '$tmp/out'"
head -c 100000 "$tmp/k.efi" > "$tmp/cut.efi"
"$R" load "$tmp/uki.img" --uki "$tmp/cut.efi" --kexec "$tmp/kexec" > "$tmp/out" 2>&1; rc=$?
check "load --uki of a truncated UKI: exit $rc, '$(head -1 "$tmp/out")', kexec not run" \
	bash -c "[ $rc -eq 1 ] && grep -q '$tmp/cut.efi: PE section .linux' '$tmp/out' && ! grep -q ARG '$tmp/out'"
"$R" image "$tmp/cut.efi" -o "$tmp/cut.img" 2> "$tmp/err"; rc=$?
check "image of a truncated UKI: exit $rc, no output: '$(cat "$tmp/err")'" \
	bash -c "[ $rc -eq 1 ] && [ ! -e '$tmp/cut.img' ] && grep -q 'runs past the end of the file' '$tmp/err'"
"$R" image "$STUB" -o "$tmp/stub.img" 2> "$tmp/err"; rc=$?
check "image of the bare stub: exit $rc, '$(cat "$tmp/err")'" \
	bash -c "[ $rc -eq 1 ] && grep -q 'not a kernel' '$tmp/err'"

# --- kernel hooks (debian/hooks), through a real rerandd ---------------------
# The hooks build nothing: they ask rerandd (`rerand build`), which builds as
# it stages (tests/daemon/test-onepath-daemon.sh checks that path's sandbox).
RERANDD=$top/build/rerandd
OTHER=$K/vmlinuz-6.12.118+deb12-cloud-amd64
. "$top/tests/lib/rerandd.sh"
trap 'rerandd_cleanup; rm -rf "$tmp"' EXIT
rd=$tmp/rd
chmod 0755 "$tmp"
rerandd_dirs "$rd" bin pre post
printf '#!/bin/sh\n# STAND-IN for kexec-tools: records, loads nothing\n[ "$1" = --version ] && { echo "kexec-tools 2.0.25"; exit 0; }\necho "$*" >>"%s/kexec.log"\n' "$rd" >"$rd/bin/kexec"
chmod 0755 "$rd/bin/kexec"
rerandd_no_reboot "$rd/no-reboot"
rerandd_fixtures "$rd" "root=/dev/vda1 ro console=ttyS0"
rerandd_unlocked "$rd"
mkfifo "$rd/uevents"
rerandd_conf_local "$rd" "$rd/bin/kexec" "$rd/no-setup-data" <<EOF
Uevents=$rd/uevents
Lockdown=$rd/lockdown
SecureBoot=$rd/SecureBoot

[Stage]
Kernel=$OTHER
Initrd=none

[Crash]
Mode=off

$(rerandd_policy MaxLayoutAge=30d)

$(rerandd_reboot_by "$rd/no-reboot $rd")
EOF
rerandd_up "$rd"
export RERAND_STATE_DIR=$rd/state RERAND_BIN=$R RERAND_KERNEL_HOOK=$H/kernel-hook
export RERAND_CONTROL_SOCKET=$rd/run/control
sha=$(sha256sum "$k" | cut -d' ' -f1)
st=$("$R" inspect --json "$tmp/bare.img" | grep -o '"stage_sha256":"[0-9a-f]*"' | cut -d'"' -f4)
DEB_MAINT_PARAMS="'configure' ''" "$H/postinst.d/rerand" 6.1.0-57-cloud-amd64 "$k"; rc=$?
check "postinst.d/rerand VERSION IMAGE: exit $rc, image at images/SHA256.STAGE.img" \
	bash -c "[ $rc -eq 0 ] && cmp -s '$tmp/bare.img' '$rd/state/images/$sha.$st.img'"
check "rerandd built it at the hook's request" \
	grep -qF "building $rd/state/images/$sha.$st.img from $(readlink -f "$k") (build only, not staged)" "$rd/log"
check "the image's SHA-256 is recorded beside it (sha256sum -c)" \
	bash -c "cd '$rd/state/images' && [ \"\$(cat '$sha.$st.img.sha256')\" = \"\$(sha256sum '$sha.$st.img')\" ] &&
		 sha256sum --quiet -c '$sha.$st.img.sha256' && ! ls -A | grep -q tmp"
# what the hook runs itself: a wrapper around rerand records each command
printf '#!/bin/sh\necho "$1" >>"%s/hook-cmds"\nexec %s "$@"\n' "$tmp" "$R" >"$tmp/rerand-wrap"
chmod 0755 "$tmp/rerand-wrap"
RERAND_BIN=$tmp/rerand-wrap "$H/kernel-hook" add 6.1-id "$k"; rc=$?
check "the hook runs no builder and no parser itself, only 'rerand build' (exit $rc: $(tr '\n' ' ' <"$tmp/hook-cmds" 2>/dev/null))" \
	test "$rc:$(tr '\n' ' ' <"$tmp/hook-cmds" 2>/dev/null)" = "0:build "
# the same kernel under a second version shares the image: its index goes
"$H/kernel-hook" remove 6.1-id
check "the index names the kernel's SHA-256" grep -qx "$sha" "$rd/state/kernels/6.1.0-57-cloud-amd64"
check "the state directories are 0700" bash -c "[ \$(stat -c %a '$rd/state/images') = 700 ]"
DEB_MAINT_PARAMS="'abort-upgrade' '1'" "$H/postinst.d/rerand" 9.9 "$k"
check "postinst.d on abort-upgrade does nothing" test ! -e "$rd/state/kernels/9.9"
DEB_MAINT_PARAMS="'purge'" "$H/postrm.d/rerand" 6.1.0-57-cloud-amd64
check "postrm.d on purge (after remove) does nothing" test -e "$rd/state/images/$sha.$st.img"
DEB_MAINT_PARAMS="'remove'" "$H/postrm.d/rerand" 6.1.0-57-cloud-amd64; rc=$?
check "postrm.d/rerand VERSION on remove: exit $rc, image and index gone" \
	bash -c "[ $rc -eq 0 ] && [ ! -e '$rd/state/images/$sha.$st.img' ] && [ ! -e '$rd/state/images/$sha.$st.img.sha256' ] && [ ! -e '$rd/state/kernels/6.1.0-57-cloud-amd64' ]"
"$H/postinst.d/rerand" 2> "$tmp/err"; rc=$?
check "postinst.d without a version: exit $rc, '$(cat "$tmp/err")'" bash -c "[ $rc -eq 2 ] && grep -q 'did not pass a version' '$tmp/err'"
head -c 4096 "$k" > "$tmp/vmlinuz-bad"
"$H/postinst.d/rerand" bad "$tmp/vmlinuz-bad" 2> "$tmp/err"; rc=$?
check "postinst.d on a kernel rerand cannot use: exit $rc (apt goes on), says why: '$(head -1 "$tmp/err")'" \
	bash -c "[ $rc -eq 0 ] && grep -q '$tmp/vmlinuz-bad' '$tmp/err' && [ ! -e '$rd/state/kernels/bad' ] &&
		! ls '$rd/state/images' | grep -q \"^\$(sha256sum <'$tmp/vmlinuz-bad' | cut -c1-64)\""

# kernel-install: COMMAND VERSION ENTRY_DIR KERNEL_IMAGE, a UKI here
usha=$(sha256sum "$tmp/k.efi" | cut -d' ' -f1)
"$H/60-rerand.install" add 6.1.0-57-cloud-amd64 "$tmp/entry" "$tmp/k.efi"; rc=$?
check "60-rerand.install add (a UKI): exit $rc, the image equals the bare kernel's" \
	bash -c "[ $rc -eq 0 ] && cmp -s '$tmp/bare.img' '$rd/state/images/$usha.$st.img'"
"$H/60-rerand.install" remove 6.1.0-57-cloud-amd64 "$tmp/entry"; rc=$?
check "60-rerand.install remove: exit $rc, image gone" bash -c "[ $rc -eq 0 ] && [ ! -e '$rd/state/images/$usha.$st.img' ]"
done_
