# Sourced by the example Kubernetes hooks (pre-reboot.d/50-k8s-drain,
# post-boot.d/50-k8s-uncordon).  Settings, from the environment or from
# /etc/rerand/k8s.env (KEY=VALUE lines):
#   RERAND_K8S_NODE     the node's name in the cluster (default: hostname)
#   KUBECONFIG          kubectl's credentials (default:
#                       /etc/rerand/k8s/kubeconfig): those of the
#                       rerand-drain ServiceAccount that rerand-drain-rbac.yaml
#                       (beside this file) creates with the least a drain
#                       needs.  Not the kubelet's (/etc/kubernetes/kubelet.conf):
#                       the Node authorizer does not let a kubelet evict pods
#                       or read DaemonSets, so its drain fails.
#   KUBECTL             the kubectl to run (default: kubectl on PATH)
#   RERAND_K8S_DRAIN_TIMEOUT  kubectl drain --timeout (default 300s)
#   RERAND_K8S_READY_TIMEOUT  kubectl wait --timeout for Ready (default 120s)
# rerandd stops a hook after its HookTimeout= (default 1min): install
# rerand.conf.d/50-k8s-hooks.conf (6min) with the hooks, and keep it above
# both timeouts.
# rerandd runs its hooks inside its own sandbox, which has no network
# (PrivateNetwork=yes): under rerandd.service kubectl is started as a
# transient unit of its own through systemd-run, outside the sandbox
# (systemd-run asks the service manager over its AF_UNIX socket in
# /run/systemd, which the sandbox allows; docs/fleet.md says why).
# RERAND_K8S_DIRECT=1 runs kubectl directly instead (a hook run by hand).
# With kured, install none of this: kured drains and uncordons itself.
[ -r /etc/rerand/k8s.env ] && . /etc/rerand/k8s.env
node=${RERAND_K8S_NODE:-$(hostname)}
: "${KUBECONFIG:=/etc/rerand/k8s/kubeconfig}"
: "${KUBECTL:=kubectl}"
export KUBECONFIG
k8s_hook=$(basename "$0")
case "$KUBECONFIG" in
*/kubelet.conf | */kubelet/kubeconfig)
	echo "$k8s_hook: KUBECONFIG=$KUBECONFIG looks like the kubelet's own credentials," \
		"which the Node authorizer does not let drain a node; use the rerand-drain" \
		"ServiceAccount's (rerand-drain-rbac.yaml)" >&2 ;;
esac
if [ ! -r "$KUBECONFIG" ]; then
	echo "$k8s_hook: KUBECONFIG=$KUBECONFIG: cannot read it; write the rerand-drain" \
		"ServiceAccount's kubeconfig there (docs/fleet.md, \"Kubernetes drain hooks\")" >&2
	exit 1
fi

k8s() {
	if [ -n "${INVOCATION_ID:-}" ] && [ "${RERAND_K8S_DIRECT:-0}" != 1 ]; then
		systemd-run --quiet --wait --pipe --collect --service-type=exec \
			--setenv=KUBECONFIG="$KUBECONFIG" -- "$KUBECTL" "$@"
	else
		"$KUBECTL" "$@"
	fi
}
