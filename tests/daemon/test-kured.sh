#!/bin/bash
# The commands kured (Kubernetes' reboot daemon) would call to drive rerand,
# run by this script as kured's configuration names them.  kured itself
# never runs here (no cluster, no kured binary): what is exercised is
# rerand's side of the contract, against a real build/rerandd with procfs
# fixtures and a real kernel staged through a stand-in kexec (/bin/true:
# nothing is loaded on this host):
#  - `rerand due` (kured's --reboot-sentinel-command) exits 0 when the layout
#    is older than MaxLayoutAge although no window is configured, 1 when it
#    is not due (a hold, a young layout), 3 when rerandd cannot be asked;
#  - rerandd with no window never reboots by itself: kured decides when;
#  - `rerand now --wait` (kured's --reboot-command) fails at once on a hold,
#    and returns 0 once rerandd's reboot is under way (the RebootCommand, a
#    recorder here, was called);
#  - the example Kubernetes hooks (etc/examples/k8s) cordon, drain and
#    uncordon through kubectl.  kubectl is a stand-in that records its calls
#    (no cluster here).  Run by hand (RERAND_K8S_DIRECT=1) they start it
#    directly; under rerandd.service (INVOCATION_ID set) through systemd-run,
#    a stand-in here too (no systemd manager of the test's own) that records
#    its arguments and starts the command as a transient unit would: with an
#    empty environment but for --setenv=.  The real systemd-run, under the
#    shipped rerandd.service sandbox, runs in the fleet systemd guest
#    (tests/e2e/check-systemd-fleet.sh).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/rerandd.sh"
rerandd_test kured

rerandd_need_bins
rerandd_pick_kernel
chmod 0755 "$tmp"

# instance DIR AGE_S: a rerandd whose "boot" began AGE_S seconds ago, with
# MaxLayoutAge=1h, no maintenance window and RebootOutsideWindows=no (so it
# never reboots by itself), and a RebootCommand that records its call.
instance() {
	local hd=$1
	rerandd_dirs "$hd" pre post sd
	rerandd_procfs_fixtures "$hd" "console=ttyS0 root=/dev/vda1 ro" "$2"
	printf '#!/bin/sh\necho REBOOT >>"%s/reboot-called"\nexit 0\n' "$hd" >"$hd/reboot"
	chmod +x "$hd/reboot"
	rerandd_conf_local "$hd" /bin/true "$hd/sd" <<EOF

[Stage]
Kernel=$KERNEL
Initrd=none
CommandLine=console=ttyS0 root=/dev/vda1 ro

$(rerandd_policy MaxLayoutAge=1h MinRebootInterval=0)

$(rerandd_reboot_by "$hd/reboot" HookTimeout=20s)

[Crash]
Mode=off
EOF
	rerandd_up "$hd"
}

old=$tmp/old
young=$tmp/young
instance "$old" 7200
instance "$young" 60
rerandd_wait_staged 60 "$old"
rerandd_wait_staged 60 "$young"

due() { RERAND_CONTROL_SOCKET=$1/run/control "$R" due >"$tmp/due.out" 2>&1; echo $?; }
rc=$(due "$old")
check "due: an old layout with no window configured exits 0 (seen $rc: $(cat "$tmp/due.out"))" \
	test "$rc" = 0
check "due: it names the reason" grep -q '^due: layout-age$' "$tmp/due.out"
rc=$(due "$young")
check "due: a layout younger than MaxLayoutAge exits 1 (seen $rc: $(cat "$tmp/due.out"))" \
	test "$rc" = 1
check "due: it says when it will be due" grep -Eq '^not due: layout-age at 20[0-9-]+T' "$tmp/due.out"
rc=$(RERAND_CONTROL_SOCKET=$tmp/no-such-socket "$R" due 2>"$tmp/due.err"; echo $?)
check "due: rerandd unreachable exits 3, not 1 (seen $rc)" test "$rc" = 3
check "due: unreachable says so" grep -q 'cannot reach rerandd' "$tmp/due.err"
rc=$("$R" due extra 2>/dev/null; echo $?)
check "due: an argument is a usage error (exit 64, seen $rc)" test "$rc" = 64

sleep 3
check "rerandd with no window did not reboot by itself while due" test ! -e "$old/reboot-called"

ctl() { RERAND_CONTROL_SOCKET=$old/run/control "$R" "$@"; }
ctl hold >/dev/null
rc=$(due "$old")
check "due: held exits 1 (seen $rc: $(cat "$tmp/due.out"))" test "$rc" = 1
check "due: held says blocked by hold" grep -q 'blocked by hold' "$tmp/due.out"
t0=$(date +%s)
ctl now --wait --timeout 60 >"$tmp/now.out" 2>&1
rc=$?
check "now --wait: a hold fails it (exit 1, seen $rc) at once ($(($(date +%s) - t0)) s)" \
	test "$rc" = 1 -a $(($(date +%s) - t0)) -lt 10
check "now --wait: it says a hold is in place" grep -q 'hold is in place' "$tmp/now.out"
check "now --wait: nothing rebooted while held" test ! -e "$old/reboot-called"
ctl release >/dev/null
rc=$(ctl now --wait --timeout 120 >"$tmp/now.out" 2>&1; echo $?)
check "now --wait: released, it returns 0 once the reboot is under way (seen $rc: $(tr '\n' ' ' <"$tmp/now.out"))" \
	test "$rc" = 0
check "now --wait: the RebootCommand was called once" test "$(cat "$old/reboot-called" 2>/dev/null)" = REBOOT
rc=$(ctl now --timeout x 2>/dev/null; echo $?)
check "now: a bad --timeout is a usage error (exit 64, seen $rc)" test "$rc" = 64

# ---- the example hooks, with a stand-in kubectl that records its calls --------
k=$tmp/k8s
mkdir -p "$k/pre" "$k/post"
cp "$top"/etc/examples/k8s/pre-reboot.d/* "$top/etc/examples/k8s/lib-k8s.sh" "$k/pre/"
cp "$top"/etc/examples/k8s/post-boot.d/* "$top/etc/examples/k8s/lib-k8s.sh" "$k/post/"
cat >"$k/kubectl" <<EOF
#!/bin/sh
echo "\$KUBECONFIG \$*" >>"$k/calls"
case "\$1" in drain) [ -e "$k/drain-fails" ] && exit 1 ;; esac
exit 0
EOF
chmod +x "$k/kubectl"
hook() { env -u INVOCATION_ID RERAND_K8S_DIRECT=1 KUBECTL="$k/kubectl" RERAND_K8S_NODE=node-7 \
	KUBECONFIG=/etc/kubernetes/admin.conf "$@"; }
hook "$k/pre/50-k8s-drain" >/dev/null 2>&1
rc=$?
check "drain hook: exit 0 when the drain succeeds (seen $rc)" test "$rc" = 0
check "drain hook: cordon, then drain of the node, with the kubeconfig" diff -u - "$k/calls" <<'EOF'
/etc/kubernetes/admin.conf cordon node-7
/etc/kubernetes/admin.conf drain node-7 --ignore-daemonsets --delete-emptydir-data --timeout=300s
EOF
rm -f "$k/calls"; touch "$k/drain-fails"
hook "$k/pre/50-k8s-drain" >/dev/null 2>"$k/err"
rc=$?
check "drain hook: a failed drain exits non-zero, which cancels the reboot (seen $rc)" test "$rc" != 0
check "drain hook: ... and uncordons the node again" eval 'tail -n1 "$k/calls" | grep -qx "/etc/kubernetes/admin.conf uncordon node-7"'
rm -f "$k/calls"
hook "$k/post/50-k8s-uncordon" >/dev/null 2>&1
rc=$?
check "uncordon hook: exit 0 (seen $rc)" test "$rc" = 0
check "uncordon hook: waits for Ready, then uncordons" diff -u - "$k/calls" <<'EOF'
/etc/kubernetes/admin.conf wait --for=condition=Ready node/node-7 --timeout=120s
/etc/kubernetes/admin.conf uncordon node-7
EOF

# The example drop-in: rerandd must not stop a hook inside kubectl's own
# timeouts (a drain stopped half-way leaves the node cordoned; an uncordon
# hook stopped fails the boot).  Read from the hooks and from rerandd's own
# view of the drop-in (--dump-config), in seconds.
secs() { # secs DURATION: Ns, Nmin or Nh in seconds
	case "$1" in
	*min) echo $((${1%min} * 60)) ;; *h) echo $((${1%h} * 3600)) ;;
	*s) echo "${1%s}" ;; *) echo 0 ;;
	esac
}
drain_t=$(sed -n 's/.*RERAND_K8S_DRAIN_TIMEOUT:-\([0-9]*s\).*/\1/p' "$k/pre/50-k8s-drain")
ready_t=$(sed -n 's/.*RERAND_K8S_READY_TIMEOUT:-\([0-9]*s\).*/\1/p' "$k/post/50-k8s-uncordon")
hook_t=$("$RERANDD" --dump-config --config "$top/etc/rerand.conf" \
	--config-dir "$top/etc/examples/k8s/rerand.conf.d" 2>&1 | sed -n 's/^HookTimeout=//p')
check "example drop-in: HookTimeout=$hook_t is above the drain's ${drain_t:-?} and the Ready wait's ${ready_t:-?}" \
	test -n "$drain_t" -a -n "$ready_t" -a "$(secs "${hook_t:-0}")" -gt "$(secs "${drain_t:-0}")" \
	-a "$(secs "${hook_t:-0}")" -gt "$(secs "${ready_t:-0}")"
rc=$("$RERANDD" --check-config --config "$top/etc/rerand.conf" \
	--config-dir "$top/etc/examples/k8s/rerand.conf.d" >"$tmp/k8s-check.out" 2>&1; echo $?)
check "example drop-in: rerandd --check-config accepts it (exit $rc: $(tail -n 1 "$tmp/k8s-check.out"))" test "$rc" = 0

# under rerandd.service: through systemd-run, out of rerandd's network-less sandbox
mkdir -p "$k/bin"
cat >"$k/bin/systemd-run" <<EOF
#!/bin/sh
# STAND-IN systemd-run: records its arguments, then runs the command after --
# as a transient service would, with only the --setenv= variables (and PATH).
echo "\$*" >>"$k/sdrun"
env=""
while [ \$# -gt 0 ] && [ "\$1" != -- ]; do
	case "\$1" in --setenv=*) env="\$env \${1#--setenv=}" ;; esac
	shift
done
shift
exec env -i PATH=/usr/bin:/bin \$env "\$@"
EOF
chmod +x "$k/bin/systemd-run"
rm -f "$k/calls" "$k/drain-fails"
svc() { env -u RERAND_K8S_DIRECT INVOCATION_ID=0123456789abcdef0123456789abcdef PATH="$k/bin:$PATH" \
	KUBECTL="$k/kubectl" RERAND_K8S_NODE=node-7 KUBECONFIG=/etc/kubernetes/kubelet.conf "$@"; }
svc "$k/pre/50-k8s-drain" >/dev/null 2>&1; rc1=$?
svc "$k/post/50-k8s-uncordon" >/dev/null 2>&1; rc2=$?
check "hooks under rerandd.service: exit 0 (drain $rc1, uncordon $rc2)" test "$rc1$rc2" = 00
check "hooks under rerandd.service: each kubectl call goes through systemd-run --wait --pipe, KUBECONFIG passed by --setenv" \
	diff -u - "$k/sdrun" <<EOF
--quiet --wait --pipe --collect --service-type=exec --setenv=KUBECONFIG=/etc/kubernetes/kubelet.conf -- $k/kubectl cordon node-7
--quiet --wait --pipe --collect --service-type=exec --setenv=KUBECONFIG=/etc/kubernetes/kubelet.conf -- $k/kubectl drain node-7 --ignore-daemonsets --delete-emptydir-data --timeout=300s
--quiet --wait --pipe --collect --service-type=exec --setenv=KUBECONFIG=/etc/kubernetes/kubelet.conf -- $k/kubectl wait --for=condition=Ready node/node-7 --timeout=120s
--quiet --wait --pipe --collect --service-type=exec --setenv=KUBECONFIG=/etc/kubernetes/kubelet.conf -- $k/kubectl uncordon node-7
EOF
check "hooks under rerandd.service: kubectl saw the kubeconfig in its clean environment" diff -u - "$k/calls" <<'EOF'
/etc/kubernetes/kubelet.conf cordon node-7
/etc/kubernetes/kubelet.conf drain node-7 --ignore-daemonsets --delete-emptydir-data --timeout=300s
/etc/kubernetes/kubelet.conf wait --for=condition=Ready node/node-7 --timeout=120s
/etc/kubernetes/kubelet.conf uncordon node-7
EOF
done_
