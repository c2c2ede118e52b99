#!/usr/bin/python3
# tests/daemon/k8s-manifests.py KIND FILE: checks the example Kubernetes
# manifests (etc/examples/k8s) as kubectl decoded them (FILE: the JSON
# objects `kubectl annotate --local -o json` printed, one after another).
#   drain  rerand-drain-rbac.yaml: a ServiceAccount, a ClusterRole granting
#          exactly what the example hooks' kubectl calls need (no more, no
#          less), bound to that ServiceAccount, and its token Secret;
#   kured  kured-rerand.yaml: kured's ServiceAccount, what kured asks the
#          API server for, and a DaemonSet running kured with rerand's
#          sentinel and reboot commands, in the host's PID namespace,
#          privileged (kured enters /proc/1/ns/mnt with nsenter).
# Says what is wrong on stderr and exits 1; 0 when all holds.
import json
import shlex
import sys

# What kubectl asks for (kubernetes/kubectl: pkg/drain/cordon.go patches the
# node it got; pkg/drain/drain.go lists the node's pods in all namespaces,
# gets each while waiting for it to go, creates pods/eviction; filters.go
# gets a DaemonSet-controlled pod's DaemonSet; pkg/cmd/wait gets, lists and
# watches the node): (apiGroup, resource, verb).
DRAIN = {
    ("", "nodes", "get"), ("", "nodes", "patch"),
    ("", "nodes", "list"), ("", "nodes", "watch"),
    ("", "pods", "list"), ("", "pods", "get"),
    ("", "pods/eviction", "create"),
    ("apps", "daemonsets", "get"),
}
# kured (kubereboot/kured cmd/kured/main.go) drains with kubectl's drain
# package (no kubectl wait), patches its node (annotations, labels), and
# keeps its lock on its own DaemonSet (pkg/daemonsetlock: get, update).
KURED_CLUSTER = {
    ("", "nodes", "get"), ("", "nodes", "patch"),
    ("", "pods", "list"), ("", "pods", "get"),
    ("", "pods/eviction", "create"),
    ("apps", "daemonsets", "get"),
}
KURED_ROLE = {("apps", "daemonsets", "update")}

errors = []


def err(msg):
    errors.append(msg)


def load(path):
    text = open(path).read()
    dec = json.JSONDecoder()
    objs, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return objs
        o, i = dec.raw_decode(text, i)
        objs.extend(o["items"] if o.get("kind") == "List" else [o])


def one(objs, kind, name=None):
    found = [o for o in objs if o.get("kind") == kind and
             (name is None or o["metadata"].get("name") == name)]
    if len(found) != 1:
        err("want one %s%s, found %d" % (kind, " " + name if name else "", len(found)))
        return None
    return found[0]


def grants(role):
    """The (group, resource, verb) a Role or ClusterRole grants; names its
    wildcards and resourceNames, which a least grant has none of (but the
    lock's)."""
    out = set()
    for r in role.get("rules", []):
        for g in r.get("apiGroups", []):
            for res in r.get("resources", []):
                for v in r.get("verbs", []):
                    if "*" in (g, res, v):
                        err("%s %s: a wildcard in %s/%s %s" % (role["kind"], role["metadata"]["name"], g, res, v))
                    out.add((g, res, v))
    return out


def compare(what, have, want):
    for g in sorted(have - want):
        err("%s grants %s/%s %s, more than needed" % (what, g[0] or "core", g[1], g[2]))
    for g in sorted(want - have):
        err("%s lacks %s/%s %s" % (what, g[0] or "core", g[1], g[2]))


def bound(objs, binding_kind, role_kind, role_name, sa, ns):
    b = [o for o in objs if o.get("kind") == binding_kind and
         o["roleRef"].get("kind") == role_kind and o["roleRef"].get("name") == role_name]
    if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa and
               s.get("namespace") == ns for o in b for s in o.get("subjects", [])):
        err("no %s binds %s %s to ServiceAccount %s/%s" % (binding_kind, role_kind, role_name, ns, sa))


def check_drain(objs):
    sa = one(objs, "ServiceAccount")
    cr = one(objs, "ClusterRole")
    sec = one(objs, "Secret")
    if not (sa and cr and sec):
        return
    name, ns = sa["metadata"]["name"], sa["metadata"]["namespace"]
    if sa.get("automountServiceAccountToken") is not False:
        err("ServiceAccount %s: its token is for the hosts, not for pods (automountServiceAccountToken: false)" % name)
    compare("ClusterRole " + cr["metadata"]["name"], grants(cr), DRAIN)
    bound(objs, "ClusterRoleBinding", "ClusterRole", cr["metadata"]["name"], name, ns)
    if sec.get("type") != "kubernetes.io/service-account-token" or \
       sec["metadata"].get("annotations", {}).get("kubernetes.io/service-account.name") != name or \
       sec["metadata"].get("namespace") != ns:
        err("Secret %s is not a token of ServiceAccount %s/%s" % (sec["metadata"]["name"], ns, name))
    extra = {o["kind"] for o in objs} - {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Secret"}
    if extra:
        err("unexpected kinds: %s" % ", ".join(sorted(extra)))


def flag(args, name):
    vals = [a.split("=", 1)[1] for a in args if a.startswith(name + "=")]
    return vals[0] if len(vals) == 1 else None


def check_kured(objs):
    sa = one(objs, "ServiceAccount")
    ds = one(objs, "DaemonSet")
    cr = one(objs, "ClusterRole")
    role = one(objs, "Role")
    if not (sa and ds and cr and role):
        return
    name, ns = sa["metadata"]["name"], sa["metadata"]["namespace"]
    dsname, dsns = ds["metadata"]["name"], ds["metadata"].get("namespace")
    compare("ClusterRole " + cr["metadata"]["name"], grants(cr), KURED_CLUSTER)
    compare("Role " + role["metadata"]["name"], grants(role), KURED_ROLE)
    for r in role.get("rules", []):
        if r.get("resourceNames") != [dsname]:
            err("Role %s: its lock rule is not limited to DaemonSet %s" % (role["metadata"]["name"], dsname))
    if role["metadata"].get("namespace") != dsns:
        err("Role %s is not in the DaemonSet's namespace %s" % (role["metadata"]["name"], dsns))
    bound(objs, "ClusterRoleBinding", "ClusterRole", cr["metadata"]["name"], name, ns)
    bound(objs, "RoleBinding", "Role", role["metadata"]["name"], name, ns)
    pod = ds["spec"]["template"]["spec"]
    if pod.get("serviceAccountName") != name or dsns != ns:
        err("DaemonSet %s does not run as ServiceAccount %s/%s" % (dsname, ns, name))
    if pod.get("hostPID") is not True:
        err("DaemonSet %s: hostPID is not true (kured's nsenter -m/proc/1/ns/mnt needs the host's PID 1)" % dsname)
    c = [c for c in pod["containers"] if c.get("command", [""])[0].endswith("/kured")]
    if len(c) != 1:
        err("DaemonSet %s: no kured container" % dsname)
        return
    c = c[0]
    if c.get("securityContext", {}).get("privileged") is not True:
        err("kured container: not privileged (nsenter into the host's mount namespace)")
    if not any(e.get("name") == "KURED_NODE_ID" and
               e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName"
               for e in c.get("env", [])):
        err("kured container: KURED_NODE_ID is not the node's name (kured exits without it)")
    args = c["command"][1:] + c.get("args", [])
    # kured splits each command into words itself (google/shlex, no shell)
    want = {"--reboot-sentinel-command": ["/usr/bin/rerand", "due"],
            "--reboot-command": ["/usr/bin/rerand", "now", "--wait"]}
    for f, words in want.items():
        v = flag(args, f)
        if v is None or shlex.split(v) != words:
            err("kured: %s is %r, not %r" % (f, v, " ".join(words)))
    m = flag(args, "--reboot-method")
    if m not in (None, "command"):
        err("kured: --reboot-method=%s ignores --reboot-command" % m)
    for f, default in (("--ds-name", "kured"), ("--ds-namespace", "kube-system")):
        if (flag(args, f) or default) != (dsname if f == "--ds-name" else dsns):
            err("kured: %s does not name this DaemonSet (%s/%s), where its lock is" % (f, dsns, dsname))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("drain", "kured"):
        sys.stderr.write("usage: k8s-manifests.py drain|kured FILE\n")
        return 2
    objs = load(sys.argv[2])
    (check_drain if sys.argv[1] == "drain" else check_kured)(objs)
    for e in errors:
        sys.stderr.write("k8s-manifests: %s\n" % e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
