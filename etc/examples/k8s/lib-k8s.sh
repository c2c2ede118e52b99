# Sourced by the example Kubernetes hooks (pre-reboot.d/50-k8s-drain,
# post-boot.d/50-k8s-uncordon).  Settings, from the environment or from
# /etc/rerand/k8s.env (KEY=VALUE lines):
#   RERAND_K8S_NODE     the node's name in the cluster (default: hostname)
#   KUBECONFIG          kubectl's credentials (default: the kubelet's,
#                       /etc/kubernetes/kubelet.conf)
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
[ -r /etc/rerand/k8s.env ] && . /etc/rerand/k8s.env
node=${RERAND_K8S_NODE:-$(hostname)}
: "${KUBECONFIG:=/etc/kubernetes/kubelet.conf}"
: "${KUBECTL:=kubectl}"
export KUBECONFIG

k8s() {
	if [ -n "${INVOCATION_ID:-}" ] && [ "${RERAND_K8S_DIRECT:-0}" != 1 ]; then
		systemd-run --quiet --wait --pipe --collect --service-type=exec \
			--setenv=KUBECONFIG="$KUBECONFIG" -- "$KUBECTL" "$@"
	else
		"$KUBECTL" "$@"
	fi
}
