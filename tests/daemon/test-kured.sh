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
#  - kured without surprises (issue 38): `rerand due` says "not due" (1)
#    wherever `rerand now --wait` would be refused or stall: held, stopped
#    after MaxFailures, nothing staged, the BlockerCommand= saying no (the
#    fleet's breaker: tests/fleet/test-fleet-breaker.sh); there the reboot
#    command exits 1, which kured takes for a failed reboot (it exits, and
#    restarted uncordons the node and gives its lock back), and withdraws
#    its request: nothing reboots later by itself for it;
#  - the example manifests (etc/examples/k8s/*.yaml) decoded by kubectl
#    (Debian's, where it is installed) and their RBAC held to what kubectl's
#    drain and kured ask the API server for;
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

# instance DIR AGE_S [KEXEC [KEY=VALUE...]]: a rerandd whose "boot" began
# AGE_S seconds ago, with MaxLayoutAge=1h, no maintenance window and
# RebootOutsideWindows=no (so it never reboots by itself), a RebootCommand
# that records its call, KEXEC as kexec-tools (default /bin/true: staging
# succeeds, nothing is loaded) and KEY=VALUE... in [Policy].
instance() {
	local hd=$1 age=$2 kx=${3:-/bin/true}
	shift 2
	[ $# -gt 0 ] && shift
	rerandd_dirs "$hd" pre post sd
	rerandd_procfs_fixtures "$hd" "console=ttyS0 root=/dev/vda1 ro" "$age"
	printf '#!/bin/sh\necho REBOOT >>"%s/reboot-called"\nexit 0\n' "$hd" >"$hd/reboot"
	chmod +x "$hd/reboot"
	rerandd_conf_local "$hd" "$kx" "$hd/sd" <<EOF

[Stage]
Kernel=$KERNEL
Initrd=none
CommandLine=console=ttyS0 root=/dev/vda1 ro

$(rerandd_policy MaxLayoutAge=1h MinRebootInterval=0 "$@")

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
check "now --wait: refused, it withdrew its request (says so; trigger_now=0 in the state)" \
	eval 'grep -q "request is withdrawn" "$tmp/now.out" && grep -qx trigger_now=0 "$old/state/state"'
ctl unhold >/dev/null
sleep 3
check "now --wait: released after the refusal, rerandd does not reboot by itself (kured has uncordoned the node)" \
	test ! -e "$old/reboot-called"
rc=$(ctl now --wait --timeout 120 >"$tmp/now.out" 2>&1; echo $?)
check "now --wait: released, it returns 0 once the reboot is under way (seen $rc: $(tr '\n' ' ' <"$tmp/now.out"))" \
	test "$rc" = 0
check "now --wait: the RebootCommand was called once" test "$(cat "$old/reboot-called" 2>/dev/null)" = REBOOT
rc=$(ctl now --timeout x 2>/dev/null; echo $?)
check "now: a bad --timeout is a usage error (exit 64, seen $rc)" test "$rc" = 64

# ---- kured without surprises: not due wherever the reboot command is refused --
# kured (cmd/kured/main.go, pkg/checkers, pkg/reboot) asks the sentinel every
# minute and at each --period: 0 drains the node and runs the reboot command;
# a reboot command that exits non-zero makes kured exit ("Unable to reboot
# node"), and the DaemonSet's restart uncordons the node and gives the lock
# back; 0 makes kured wait for the node to go down, for ever.  So: "not due"
# (1) wherever the reboot command would fail, and the reboot command 0 only
# when the reboot is under way, 1 otherwise with nothing left pending.
state_edit() { # FILE SED-ARGS...: as rerandd writes it, end= (its digest) made again
	local f=$1
	shift
	sed -i "$@" -e '/^end=/d' "$f"
	printf 'end=%s\n' "$(sha256sum <"$f" | cut -d' ' -f1)" >>"$f"
}
stopped=$tmp/stopped unstaged=$tmp/unstaged blocked=$tmp/blocked
instance "$stopped" 7200 /bin/true MaxFailures=2
instance "$unstaged" 7200 /bin/false
printf '#!/bin/sh\n[ -e "%s/block" ] || exit 0\nexit 1\n' \
	"$blocked" >"$tmp/blocker"
chmod +x "$tmp/blocker"
mkdir -p "$blocked" && touch "$blocked/block"
instance "$blocked" 7200 /bin/true "BlockerCommand=$tmp/blocker"
rerandd_wait_staged 60 "$stopped"
rerandd_wait_staged 60 "$blocked"
# stopped: the state of a machine whose last 2 rerandomizations failed
kill -TERM "$(cat "$stopped/pid")"
wait_for 30 bash -c "! kill -0 $(cat "$stopped/pid") 2>/dev/null" || true
state_edit "$stopped/state/state" -e 's/^failures=.*/failures=2/' -e 's/^total_failures=.*/total_failures=2/'
rerandd_up "$stopped"
wait_for 20 bash -c "RERAND_CONTROL_SOCKET=$stopped/run/control '$R' due | grep -q stopped" || true
rc=$(due "$stopped")
check "due: stopped after MaxFailures exits 1 (seen $rc: $(cat "$tmp/due.out"))" \
	eval '[ $rc = 1 ] && grep -q "^not due: stopped after 2 failures in a row (MaxFailures=2)" "$tmp/due.out"'

rc=$(due "$unstaged")
check "due: nothing staged (the stage fails) exits 1 (seen $rc: $(cat "$tmp/due.out"))" \
	eval '[ $rc = 1 ] && grep -qx "not due: layout-age is due but blocked by nothing-staged" "$tmp/due.out"'
t0=$(date +%s)
rc=$(RERAND_CONTROL_SOCKET=$unstaged/run/control "$R" now --wait --timeout 4 >"$tmp/now.out" 2>&1; echo $?)
check "now --wait: nothing staged, it fails (exit 1, seen $rc) after its --timeout ($(($(date +%s) - t0)) s)" \
	eval '[ $rc = 1 ] && grep -q "did not start within 4 s" "$tmp/now.out"'
rc=$(due "$unstaged")
check "now --wait: ... and withdrew its request: due names layout-age again, not requested ($(cat "$tmp/due.out"))" \
	eval '[ $rc = 1 ] && grep -qx "not due: layout-age is due but blocked by nothing-staged" "$tmp/due.out" &&
	      grep -qx trigger_now=0 "$unstaged/state/state"'
check "now --wait: nothing staged, nothing rebooted" test ! -e "$unstaged/reboot-called"

rc=$(due "$blocked")
check "due: the BlockerCommand= says no: exits 1 and says why (seen $rc: $(cat "$tmp/due.out"))" \
	eval '[ $rc = 1 ] && grep -q "^not due: layout-age is due but reboot blocked by BlockerCommand: .*blocker: exit status 1" "$tmp/due.out"'
t0=$(date +%s)
rc=$(RERAND_CONTROL_SOCKET=$blocked/run/control "$R" now --wait --timeout 120 >"$tmp/now.out" 2>&1; echo $?)
t1=$(($(date +%s) - t0))
check "now --wait: blocked by the BlockerCommand=, it fails at once (exit 1, seen $rc, in $t1 s of its 120)" \
	eval '[ $rc = 1 ] && [ $t1 -lt 30 ] && grep -q "blocked by blocker-command" "$tmp/now.out" &&
	      grep -q "request is withdrawn" "$tmp/now.out"'
rm -f "$blocked/block"
sleep 4
check "now --wait: the blocker lifted after the refusal, rerandd does not reboot by itself" \
	test ! -e "$blocked/reboot-called"
# the blockers' verdict is kept 10 s (kured's two loops asking at once get
# one run): after it, due again, and the reboot command goes through
wait_for 60 bash -c "RERAND_CONTROL_SOCKET=$blocked/run/control '$R' due >/dev/null" || true
rc=$(due "$blocked")
check "due: the blocker lifted, due again once its verdict is 10 s old (seen $rc: $(cat "$tmp/due.out"))" test "$rc" = 0
rc=$(RERAND_CONTROL_SOCKET=$blocked/run/control "$R" now --wait --timeout 120 >"$tmp/now.out" 2>&1; echo $?)
check "now --wait: then exit 0 with the reboot under way (seen $rc), the RebootCommand called" \
	eval '[ $rc = 0 ] && [ "$(cat "$blocked/reboot-called" 2>/dev/null)" = REBOOT ]'

# ---- the example manifests (kubectl, offline) ---------------------------------
# `kubectl apply --dry-run=client` needs an API server even so (discovery for
# the REST mapping, /openapi/v2 for validation): with none it fails before
# reading a document.  Offline, `kubectl annotate --local --dry-run=client`
# reads every document (bad YAML fails it) and decodes each one's metadata
# into its Go type (ObjectMeta: a wrong type there fails it); the rest of
# each object, kubectl keeps as it is, unchecked, and k8s-manifests.py
# holds it to what rerand needs: the RBAC rules to what kubectl's drain (pkg/drain: cordon
# and uncordon get and patch the node, the drain lists and gets pods,
# creates pods/eviction, gets DaemonSets; pkg/cmd/wait: get, list, watch
# the node) and kured (its lock: get and update of its DaemonSet) ask for.
kubectl=${RERAND_TEST_KUBECTL:-$(command -v kubectl)}
if [ -z "$kubectl" ]; then
	check "manifests: kubectl is installed (Debian: kubectl on trixie, kubernetes-client on bookworm; scripts/deps.sh check)" false
else
	kver=$("$kubectl" version --client 2>/dev/null | head -n 1)
	kpkg=$(dpkg -S "$(readlink -f "$kubectl")" 2>/dev/null | cut -d: -f1 | head -n 1)
	echo "# kubectl: $kubectl ($kver; package ${kpkg:-none})"
	# kubectl_local FILE: the documents as kubectl decoded them, JSON on stdout
	kubectl_local() {
		env -u KUBECONFIG HOME="$tmp" "$kubectl" annotate --local --dry-run=client \
			-f "$1" -o json rerand.example/checked=yes
	}
	manifest_check() { # FILE KIND: kubectl decodes it, and tests/daemon/k8s-manifests.py passes
		kubectl_local "$1" >"$tmp/m.json" 2>"$tmp/m.err" &&
			python3 "$top/tests/daemon/k8s-manifests.py" "$2" "$tmp/m.json" 2>>"$tmp/m.err"
	}
	for m in rerand-drain-rbac:drain kured-rerand:kured; do
		f=$top/etc/examples/k8s/${m%%:*}.yaml
		manifest_check "$f" "${m##*:}"
		rc=$?
		check "manifests: ${m%%:*}.yaml decoded by kubectl and its RBAC as drain needs (exit $rc: $(tail -n 2 "$tmp/m.err" | tr '\n' ' '))" \
			test "$rc" = 0
	done
	# known-bad copies: each check must be able to fail
	sed 's/verbs: \["get", "list"\]/verbs: ["get", "list", "delete"]/' \
		"$top/etc/examples/k8s/rerand-drain-rbac.yaml" >"$tmp/bad-verb.yaml"
	check "manifests: a copy granting pods delete is refused (more than a drain needs)" \
		eval '! manifest_check "$tmp/bad-verb.yaml" drain 2>/dev/null'
	sed '/resources: \["pods\/eviction"\]/,+1d' \
		"$top/etc/examples/k8s/rerand-drain-rbac.yaml" >"$tmp/bad-evict.yaml"
	check "manifests: a copy without pods/eviction create is refused (less than a drain needs)" \
		eval '! manifest_check "$tmp/bad-evict.yaml" drain 2>/dev/null'
	sed 's/^  namespace: kube-system/  namespace: [kube-system]/' \
		"$top/etc/examples/k8s/rerand-drain-rbac.yaml" >"$tmp/bad-type.yaml"
	check "manifests: kubectl refuses a copy whose metadata has a field of the wrong type" \
		eval '! kubectl_local "$tmp/bad-type.yaml" >/dev/null 2>&1'
	sed 's|--reboot-command=/usr/bin/rerand now --wait|--reboot-command=/bin/systemctl reboot|' \
		"$top/etc/examples/k8s/kured-rerand.yaml" >"$tmp/bad-kured.yaml"
	check "manifests: a kured copy whose reboot command is not rerand's is refused" \
		eval '! manifest_check "$tmp/bad-kured.yaml" kured 2>/dev/null'
fi

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
# the rerand-drain ServiceAccount's kubeconfig (a stand-in: kubectl is one)
kc=$k/kubeconfig
printf 'apiVersion: v1\nkind: Config\n' >"$kc"
hook() { env -u INVOCATION_ID RERAND_K8S_DIRECT=1 KUBECTL="$k/kubectl" RERAND_K8S_NODE=node-7 \
	KUBECONFIG="$kc" "$@"; }
hook "$k/pre/50-k8s-drain" >/dev/null 2>&1
rc=$?
check "drain hook: exit 0 when the drain succeeds (seen $rc)" test "$rc" = 0
check "drain hook: cordon, then drain of the node, with the kubeconfig" diff -u - "$k/calls" <<EOF
$kc cordon node-7
$kc drain node-7 --ignore-daemonsets --delete-emptydir-data --timeout=300s
EOF
rm -f "$k/calls"; touch "$k/drain-fails"
hook "$k/pre/50-k8s-drain" >/dev/null 2>"$k/err"
rc=$?
check "drain hook: a failed drain exits non-zero, which cancels the reboot (seen $rc)" test "$rc" != 0
check "drain hook: ... and uncordons the node again" eval 'tail -n1 "$k/calls" | grep -qx "$kc uncordon node-7"'
rm -f "$k/calls" "$k/drain-fails"
# without a readable kubeconfig: no kubectl call, exit 1 (the reboot is
# cancelled), the file named; the default is the ServiceAccount's
env -u INVOCATION_ID -u KUBECONFIG RERAND_K8S_DIRECT=1 KUBECTL="$k/kubectl" RERAND_K8S_NODE=node-7 \
	"$k/pre/50-k8s-drain" >/dev/null 2>"$k/err"
rc=$?
check "drain hook: no readable kubeconfig (default /etc/rerand/k8s/kubeconfig): exit 1, no kubectl call, the file named (seen $rc: $(cat "$k/err"))" \
	eval '[ $rc = 1 ] && [ ! -e "$k/calls" ] && grep -q "KUBECONFIG=/etc/rerand/k8s/kubeconfig: cannot read it" "$k/err"'
cp "$kc" "$k/kubelet.conf"
env -u INVOCATION_ID RERAND_K8S_DIRECT=1 KUBECTL="$k/kubectl" RERAND_K8S_NODE=node-7 \
	KUBECONFIG="$k/kubelet.conf" "$k/pre/50-k8s-drain" >/dev/null 2>"$k/err"
check "drain hook: the kubelet's kubeconfig draws a warning naming the ServiceAccount" \
	grep -q "kubelet's own credentials.*rerand-drain" "$k/err"
rm -f "$k/calls"
hook "$k/post/50-k8s-uncordon" >/dev/null 2>&1
rc=$?
check "uncordon hook: exit 0 (seen $rc)" test "$rc" = 0
check "uncordon hook: waits for Ready, then uncordons" diff -u - "$k/calls" <<EOF
$kc wait --for=condition=Ready node/node-7 --timeout=120s
$kc uncordon node-7
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
	KUBECTL="$k/kubectl" RERAND_K8S_NODE=node-7 KUBECONFIG="$kc" "$@"; }
svc "$k/pre/50-k8s-drain" >/dev/null 2>&1; rc1=$?
svc "$k/post/50-k8s-uncordon" >/dev/null 2>&1; rc2=$?
check "hooks under rerandd.service: exit 0 (drain $rc1, uncordon $rc2)" test "$rc1$rc2" = 00
check "hooks under rerandd.service: each kubectl call goes through systemd-run --wait --pipe, KUBECONFIG passed by --setenv" \
	diff -u - "$k/sdrun" <<EOF
--quiet --wait --pipe --collect --service-type=exec --setenv=KUBECONFIG=$kc -- $k/kubectl cordon node-7
--quiet --wait --pipe --collect --service-type=exec --setenv=KUBECONFIG=$kc -- $k/kubectl drain node-7 --ignore-daemonsets --delete-emptydir-data --timeout=300s
--quiet --wait --pipe --collect --service-type=exec --setenv=KUBECONFIG=$kc -- $k/kubectl wait --for=condition=Ready node/node-7 --timeout=120s
--quiet --wait --pipe --collect --service-type=exec --setenv=KUBECONFIG=$kc -- $k/kubectl uncordon node-7
EOF
check "hooks under rerandd.service: kubectl saw the kubeconfig in its clean environment" diff -u - "$k/calls" <<EOF
$kc cordon node-7
$kc drain node-7 --ignore-daemonsets --delete-emptydir-data --timeout=300s
$kc wait --for=condition=Ready node/node-7 --timeout=120s
$kc uncordon node-7
EOF
done_
