"""Questions about a Kubernetes cluster's pods: ``kubectl get pods -A -o json`` loaded as a nested
dict (``dev``), or ``kubectl get pods -A -o wide`` as one string (``test``).

What a notebook holds when someone looks into a cluster that misbehaves: every pod of every
namespace, from Deployments (named after their ReplicaSet's hash), StatefulSets, DaemonSets (one
pod a node) and Jobs, each on a node with an IP, its containers' images, requests, readiness and
restarts. Most pods run; some crash-loop (their phase still ``Running``), wait for an image or a
node, were OOM-killed and restarted, or finished as Jobs do. Apps and namespaces whose names extend
another's stand beside each other (``cart`` and ``cart-worker``, ``shop`` and ``shop-staging``),
and pods on the host's network share their node's IP. Pods are added until the indented JSON (or
the table) is about the length asked for. Kinds of question:

- ``count``: one namespace's running pods with a container not ready, or one node's pods
  (``dev``); one node's pods whose status is not ``Running``, or one namespace's pods not fully
  ready (``test``);
- ``total``: one namespace's CPU requests in millicores, or memory requests in MiB (``dev``); the
  restarts of one Deployment's pods, or of one namespace's (``test``);
- ``top``: the node with the most running pods, or the pod with the most restarts (``dev``); the
  node with the most ``Running`` pods, or the namespace with the most pods that are not (``test``)
  (a clear leader);
- ``lookup``: the image of one pod's container, or one pod's IP (``dev``); one pod's IP, or its
  node (``test``).

Every answer is computed from the pods the generator wrote. Score: ``exact``.

Splits: ``dev`` is a ``List`` of ``Pod`` items, each with ``metadata`` (``name``, ``namespace``,
``labels``, ``ownerReferences``, ``creationTimestamp``), ``spec`` (``containers`` with ``image`` and
``resources.requests`` such as ``250m``, ``1`` or ``0.5`` CPUs and ``128Mi`` or ``1Gi``,
``nodeName``) and ``status`` (``phase``, ``podIP``, ``hostIP``, ``containerStatuses`` with
``ready``, ``restartCount``, ``state`` and ``lastState``) on GKE-named nodes; ``test`` is the wide
table (``NAMESPACE``, ``NAME``, ``READY`` as ``1/2``, ``STATUS``, ``RESTARTS`` as ``3 (2d4h
ago)``, ``AGE``, ``IP``, ``NODE``, ``NOMINATED NODE``, ``READINESS GATES``) in columns padded as
kubectl pads them, on EKS-named nodes: other containers, fields, apps and wording.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .tasks import Task, TaskRef, as_text, asked_task, draw_question, family

__all__ = ["KINDS", "make"]

KINDS = ("count", "total", "top", "lookup")

_Container = tuple[str, ...]  # name, image, CPU request, memory request (dev); name (test)
_App = tuple[str, str, str, tuple[_Container, ...], float]  # namespace, app, controller, containers, weight

_REG = "registry.northwind.io"
_DEV_APPS: tuple[_App, ...] = (
    (
        "shop",
        "storefront",
        "Deployment",
        (
            ("storefront", f"{_REG}/shop/storefront:2.14.1", "250m", "256Mi"),
            ("envoy", "envoyproxy/envoy:v1.29.2", "100m", "64Mi"),
        ),
        2.0,
    ),
    ("shop", "cart", "Deployment", (("cart", f"{_REG}/shop/cart:1.8.0", "200m", "192Mi"),), 1.5),
    ("shop", "cart-worker", "Deployment", (("worker", f"{_REG}/shop/cart:1.8.0", "500m", "512Mi"),), 1.0),
    ("shop", "catalog", "Deployment", (("catalog", f"{_REG}/shop/catalog:3.2.7", "1", "1Gi"),), 1.2),
    (
        "shop",
        "redis",
        "StatefulSet",
        (
            ("redis", "redis:7.2.4-alpine", "100m", "128Mi"),
            ("metrics", "oliver006/redis_exporter:v1.58.0", "50m", "32Mi"),
        ),
        0.4,
    ),
    (
        "shop-staging",
        "storefront",
        "Deployment",
        (("storefront", f"{_REG}/shop/storefront:2.15.0-rc.1", "100m", "128Mi"),),
        0.6,
    ),
    ("shop-staging", "cart", "Deployment", (("cart", f"{_REG}/shop/cart:1.9.0-rc.3", "100m", "128Mi"),), 0.5),
    (
        "payments",
        "payments-api",
        "Deployment",
        (("api", f"{_REG}/payments/api:5.0.3", "500m", "384Mi"),),
        1.2,
    ),
    (
        "payments",
        "payments-api-canary",
        "Deployment",
        (("api", f"{_REG}/payments/api:5.1.0-rc.2", "500m", "384Mi"),),
        0.3,
    ),
    (
        "payments",
        "ledger-sync",
        "Job",
        (("sync", f"{_REG}/payments/ledger-sync:0.9.4", "0.5", "256Mi"),),
        0.8,
    ),
    (
        "monitoring",
        "prometheus",
        "StatefulSet",
        (
            ("prometheus", "quay.io/prometheus/prometheus:v2.51.1", "1500m", "4Gi"),
            (
                "config-reloader",
                "quay.io/prometheus-operator/prometheus-config-reloader:v0.72.0",
                "10m",
                "25Mi",
            ),
        ),
        0.3,
    ),
    ("monitoring", "grafana", "Deployment", (("grafana", "grafana/grafana:10.4.1", "100m", "128Mi"),), 0.3),
    (
        "monitoring",
        "node-exporter",
        "DaemonSet",
        (("node-exporter", "quay.io/prometheus/node-exporter:v1.7.0", "50m", "64Mi"),),
        0.0,
    ),
    (
        "kube-system",
        "kube-dns",
        "Deployment",
        (
            ("kubedns", "gke.gcr.io/k8s-dns-kube-dns:1.23.0-gke.9", "100m", "70Mi"),
            ("dnsmasq", "gke.gcr.io/k8s-dns-dnsmasq-nanny:1.23.0-gke.9", "150m", "20Mi"),
        ),
        0.3,
    ),
    (
        "kube-system",
        "kube-proxy",
        "DaemonSet",
        (("kube-proxy", "gke.gcr.io/kube-proxy-amd64:v1.29.1-gke.1589018", "100m", "0"),),
        0.0,
    ),
    (
        "kube-system",
        "metrics-server",
        "Deployment",
        (("metrics-server", "gke.gcr.io/metrics-server:v0.7.0-gke.3", "43m", "55Mi"),),
        0.1,
    ),
)
_TEST_APPS: tuple[_App, ...] = (
    ("checkout", "checkout-api", "Deployment", (("api",), ("linkerd-proxy",)), 2.0),
    ("checkout", "checkout-api-worker", "Deployment", (("worker",),), 1.2),
    ("checkout", "pricing", "Deployment", (("pricing",),), 1.0),
    ("search", "search-gateway", "Deployment", (("gateway",), ("linkerd-proxy",)), 1.2),
    ("search", "opensearch", "StatefulSet", (("opensearch",),), 0.4),
    ("data", "kafka", "StatefulSet", (("kafka",), ("jmx-exporter",)), 0.4),
    ("data", "postgres", "StatefulSet", (("postgres",),), 0.2),
    ("data", "etl-nightly", "Job", (("etl",),), 1.0),
    ("observability", "otel-collector", "Deployment", (("otel-collector",),), 0.6),
    ("observability", "loki", "StatefulSet", (("loki",),), 0.3),
    ("observability", "promtail", "DaemonSet", (("promtail",),), 0.0),
    ("kube-system", "coredns", "Deployment", (("coredns",),), 0.3),
    ("kube-system", "aws-node", "DaemonSet", (("aws-node",), ("aws-eks-nodeagent",)), 0.0),
    ("kube-system", "kube-proxy", "DaemonSet", (("kube-proxy",),), 0.0),
    ("cert-manager", "cert-manager", "Deployment", (("cert-manager-controller",),), 0.2),
    ("cert-manager", "cert-manager-webhook", "Deployment", (("cert-manager-webhook",),), 0.2),
    ("ci", "gitlab-runner", "Deployment", (("gitlab-runner",),), 0.3),
)
_HOST_NETWORK = ("kube-proxy", "aws-node", "node-exporter")
_STATES = (
    "Running",
    "NotReady",
    "CrashLoopBackOff",
    "Restarted",
    "Pending",
    "ImagePullBackOff",
    "ContainerCreating",
    "Terminating",
)
_STATE_WEIGHT = (70, 3, 6, 10, 2, 2, 1, 1)
_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"  # the letters of generated names
_NOW = datetime(2024, 6, 14, 9, 30, 12)  # when the pods were listed (UTC)
_EPOCH = datetime(1970, 1, 1)


@dataclass
class Pod:
    app: int
    name: str
    node: int  # -1: not scheduled
    ip: str
    created: datetime
    state: str  # one of _STATES, or Completed / Error for a Job's pods
    tag: str = ""  # dev: the image tag of an older ReplicaSet's pods, else ""
    restarts: list[int] = field(default_factory=list)  # per container
    restarted: datetime | None = None
    uid: str = ""


def _word(rng: random.Random, k: int) -> str:
    return "".join(rng.choice(_SUFFIX) for _ in range(k))


def _hex(rng: random.Random, k: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(k))


def _nodes(split: str, rng: random.Random, k: int) -> list[tuple[str, str]]:
    """Each node's name and internal IP."""
    out = []
    for i in range(k):
        if split == "dev":
            pool = "default-pool" if i % 3 else "highmem-pool"
            out.append((f"gke-prod-eu-{pool}-{_hex(rng, 8)}-{_word(rng, 4)}", f"10.156.0.{i + 2}"))
        else:
            ip = f"10.42.{rng.randrange(16, 48)}.{rng.randrange(2, 254)}"
            out.append((f"ip-{ip.replace('.', '-')}.eu-north-1.compute.internal", ip))
    return out


def _state(rng: random.Random, controller: str) -> str:
    if controller == "Job":
        return rng.choices(("Completed", "Error", "Running"), (85, 8, 7))[0]
    return rng.choices(_STATES, _STATE_WEIGHT)[0]


def _restarts(rng: random.Random, p: Pod, containers: int) -> None:
    p.restarts = [0] * containers
    if p.state == "CrashLoopBackOff":
        p.restarts[0] = rng.randint(5, 400)
    elif p.state == "Restarted" or (p.state == "Running" and rng.random() < 0.05):
        p.restarts[rng.randrange(containers)] = rng.randint(1, 6)
    if any(p.restarts):
        age = (_NOW - p.created).total_seconds()
        p.restarted = _NOW - timedelta(
            seconds=rng.uniform(0, age) if p.state != "CrashLoopBackOff" else rng.randint(5, 300)
        )
        p.restarted = p.restarted.replace(microsecond=0)


@dataclass
class _World:
    """What the pods of one listing share while they are drawn."""

    rng: random.Random
    dev: bool
    nodes: list[tuple[str, str]]
    born: dict[int, datetime]  # each app's first pod
    hashes: dict[int, list[str]]  # each Deployment's ReplicaSets, the current one first
    counts: list[int]
    ips: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)


def _pods(split: str, seed: str, n: int) -> tuple[list[Pod], list[tuple[str, str]]]:
    rng = random.Random(f"{seed}/{n}")
    dev = split == "dev"
    apps = _DEV_APPS if dev else _TEST_APPS
    nodes = _nodes(split, rng, max(2, min(60, round(n / (7 if dev else 12)))))
    daemons = [a for a, app in enumerate(apps) if app[2] == "DaemonSet"]
    weight = [app[4] * rng.uniform(0.5, 1.5) for app in apps]
    born = {a: _NOW - timedelta(minutes=rng.randint(30, 90 * 24 * 60)) for a in range(len(apps))}
    hashes = {a: [_word(rng, rng.choice((9, 10))) for _ in range(2)] for a in range(len(apps))}
    world = _World(rng, dev, nodes, born, hashes, [0] * len(apps), {ip for _, ip in nodes})
    out: list[Pod] = []
    for node in range(len(nodes)):  # a DaemonSet's pod on every node, as long as there is room
        for a in daemons:
            if len(out) < n // 2:
                out.append(_pod(world, a, node))
    while len(out) < n:
        a = rng.choices(range(len(apps)), weight)[0]
        if apps[a][2] == "Job" and world.counts[a] >= 4 + n // 60:  # the CronJob keeps a few finished jobs
            continue
        out.append(_pod(world, a, rng.randrange(len(nodes))))
    out.sort(key=lambda p: (apps[p.app][0], p.name))
    return out, nodes


def _name(w: _World, a: int) -> tuple[str, datetime, str]:
    """A new pod's name, when it was created, and ``old`` where it is an older ReplicaSet's."""
    rng = w.rng
    _, app, controller, _, _ = (_DEV_APPS if w.dev else _TEST_APPS)[a]
    w.counts[a] += 1
    alive = int((_NOW - w.born[a]).total_seconds())
    created, tag, name = w.born[a] + timedelta(seconds=rng.randint(0, alive)), "", ""
    while not name or name in w.names:
        if controller == "Deployment":
            tag = "old" if rng.random() < 0.15 else ""
            name = f"{app}-{w.hashes[a][1 if tag else 0]}-{_word(rng, 5)}"
        elif controller == "StatefulSet":
            name = f"{app}-{w.counts[a] - 1}"
        elif controller == "DaemonSet":
            name = f"{app}-{_word(rng, 5)}"
        else:
            created = _NOW - timedelta(minutes=rng.randint(5, 20 * 24 * 60))
            name = f"{app}-{int((created - _EPOCH).total_seconds()) // 3600 * 60}-{_word(rng, 5)}"
    w.names.add(name)
    return name, created.replace(microsecond=0), tag


def _pod(w: _World, a: int, node: int) -> Pod:
    rng = w.rng
    _, app, controller, containers, _ = (_DEV_APPS if w.dev else _TEST_APPS)[a]
    name, created, tag = _name(w, a)
    p = Pod(a, name, node, "", created, _state(rng, controller), tag)
    if controller == "DaemonSet" and p.state in ("Pending", "Terminating"):
        p.state = "Running"
    if p.state == "Pending":
        p.node = -1
    elif app in _HOST_NETWORK:
        p.ip = w.nodes[node][1]
    elif p.state != "ContainerCreating":
        while not p.ip or p.ip in w.ips:
            p.ip = (
                f"10.52.{node}.{rng.randrange(2, 254)}"
                if w.dev
                else f"10.42.{rng.randrange(16, 48)}.{rng.randrange(2, 254)}"
            )
        w.ips.add(p.ip)
    _restarts(rng, p, len(containers))
    p.uid = "-".join(_hex(rng, k) for k in (8, 4, 4, 4, 12))
    return p


# -- the files ----------------------------------------------------------------------------------


def _stamp(t: datetime) -> str:
    return f"{t:%Y-%m-%dT%H:%M:%SZ}"


def _image(container: _Container, p: Pod) -> str:
    image = container[1]
    if p.tag and image.startswith(_REG):
        repo, version = image.rsplit(":", 1)
        major, minor, *_ = version.split(".")
        image = f"{repo}:{major}.{int(minor) - 1}.{len(p.name) % 7}"
    return image


def _ready(p: Pod, k: int) -> bool:
    if p.state in ("Running", "Restarted", "Terminating"):
        return True
    return p.state in ("NotReady", "CrashLoopBackOff") and k > 0


def _status_of(p: Pod, k: int, container: _Container, rng: random.Random) -> dict:
    image = _image(container, p)
    out: dict = {
        "containerID": f"containerd://{_hex(rng, 64)}",
        "image": image,
        "imageID": f"{image.split(':')[0]}@sha256:{_hex(rng, 64)}",
        "lastState": {},
    }
    if p.restarts[k]:
        reason = "Error" if p.state == "CrashLoopBackOff" else rng.choice(("OOMKilled", "Error"))
        out["lastState"] = {
            "terminated": {
                "exitCode": 137 if reason == "OOMKilled" else 1,
                "reason": reason,
                "finishedAt": _stamp(p.restarted),
            }
        }
    out |= {"name": container[0], "ready": _ready(p, k), "restartCount": p.restarts[k]}
    if p.state in ("Completed", "Error"):
        code = 0 if p.state == "Completed" else 1
        out["state"] = {
            "terminated": {
                "exitCode": code,
                "reason": p.state,
                "startedAt": _stamp(p.created),
                "finishedAt": _stamp(p.created + timedelta(seconds=40 + len(p.name))),
            }
        }
    elif (p.state == "CrashLoopBackOff" and k == 0) or p.state in ("ImagePullBackOff", "ContainerCreating"):
        out.pop("containerID")
        reason = "CrashLoopBackOff" if p.state == "CrashLoopBackOff" else p.state
        out["state"] = {"waiting": {"reason": reason}}
    else:
        out["state"] = {"running": {"startedAt": _stamp(p.restarted if p.restarts[k] else p.created)}}
    return out


_PHASE = {
    "Pending": "Pending",
    "ImagePullBackOff": "Pending",
    "ContainerCreating": "Pending",
    "Completed": "Succeeded",
    "Error": "Failed",
}


def _item(p: Pod, nodes: list[tuple[str, str]], rng: random.Random) -> dict:
    namespace, app, controller, containers, _ = _DEV_APPS[p.app]
    labels: dict = {"app": app}
    owner = app
    if controller == "Deployment":
        labels["pod-template-hash"] = p.name.split("-")[-2]
        owner = p.name.rsplit("-", 1)[0]
        controller = "ReplicaSet"
    elif controller == "Job":
        owner = p.name.rsplit("-", 1)[0]
    meta: dict = {"creationTimestamp": _stamp(p.created)}
    if p.state == "Terminating":
        meta["deletionTimestamp"] = _stamp(_NOW - timedelta(seconds=12))
    meta |= {
        "labels": labels,
        "name": p.name,
        "namespace": namespace,
        "ownerReferences": [
            {
                "apiVersion": "batch/v1" if controller == "Job" else "apps/v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": controller,
                "name": owner,
                "uid": "-".join(_hex(rng, k) for k in (8, 4, 4, 4, 12)),
            }
        ],
        "resourceVersion": str(rng.randrange(10**7, 10**9)),
        "uid": p.uid,
    }
    spec: dict = {"containers": []}
    for name, _, cpu, memory in containers:
        requests = {"cpu": cpu} | ({"memory": memory} if memory != "0" else {})
        spec["containers"].append(
            {
                "image": _image((name, _, cpu, memory), p),
                "imagePullPolicy": "IfNotPresent",
                "name": name,
                "resources": {"requests": requests},
            }
        )
    if app in _HOST_NETWORK:
        spec["hostNetwork"] = True
    if p.node >= 0:
        spec["nodeName"] = nodes[p.node][0]
    spec |= {
        "restartPolicy": "Never" if controller == "Job" else "Always",
        "schedulerName": "default-scheduler",
        "serviceAccountName": app,
    }
    status: dict = {"phase": _PHASE.get(p.state, "Running"), "qosClass": "Burstable"}
    if p.node < 0:
        status["conditions"] = [
            {
                "lastProbeTime": None,
                "lastTransitionTime": _stamp(p.created),
                "message": f"0/{len(nodes)} nodes are available: 1 Insufficient cpu.",
                "reason": "Unschedulable",
                "status": "False",
                "type": "PodScheduled",
            }
        ]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
    status["containerStatuses"] = [_status_of(p, k, c, rng) for k, c in enumerate(containers)]
    status["hostIP"] = nodes[p.node][1]
    if p.ip:
        status |= {"podIP": p.ip, "podIPs": [{"ip": p.ip}]}
    status["startTime"] = _stamp(p.created)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _listing(pods: list[Pod], nodes: list[tuple[str, str]], seed: str) -> dict:
    rng = random.Random(seed)
    items = [_item(p, nodes, rng) for p in pods]
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def _human(d: timedelta) -> str:
    """A duration as kubectl writes ages (``HumanDuration``)."""
    seconds = int(d.total_seconds())
    minutes, hours = seconds // 60, seconds // 3600
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m" + (f"{seconds % 60}s" if seconds % 60 else "")
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h" + (f"{minutes % 60}m" if minutes % 60 else "")
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{hours // 24}d" + (f"{hours % 24}h" if hours % 24 else "")
    return f"{hours // 24}d"


_SHOWN = {"NotReady": "Running", "Restarted": "Running"}


def _row(p: Pod, nodes: list[tuple[str, str]]) -> list[str]:
    namespace, _, _, containers, _ = _TEST_APPS[p.app]
    k = len(containers)
    ready = (
        0
        if p.state in ("Pending", "ImagePullBackOff", "ContainerCreating", "Completed", "Error")
        else sum(_ready(p, i) for i in range(k))
    )
    restarts = str(sum(p.restarts))
    if p.restarted is not None:
        restarts += f" ({_human(_NOW - p.restarted)} ago)"
    return [
        namespace,
        p.name,
        f"{ready}/{k}",
        _SHOWN.get(p.state, p.state),
        restarts,
        _human(_NOW - p.created),
        p.ip or "<none>",
        nodes[p.node][0] if p.node >= 0 else "<none>",
        "<none>",
        "<none>",
    ]


def _table(pods: list[Pod], nodes: list[tuple[str, str]]) -> str:
    head = [
        "NAMESPACE",
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED NODE",
        "READINESS GATES",
    ]
    rows = [head] + [_row(p, nodes) for p in pods]
    widths = [max(len(r[i]) for r in rows) + 3 for i in range(len(head))]
    return "".join(
        "".join(cell.ljust(w) for cell, w in zip(r[:-1], widths, strict=False)) + r[-1] + "\n" for r in rows
    )


def _fit(split: str, seed: str, chars: int) -> tuple[list[Pod], list[tuple[str, str]], object]:
    per = 2400 if split == "dev" else 160
    n = max(4, chars // per)
    for _ in range(6):
        pods, nodes = _pods(split, seed, n)
        context = _listing(pods, nodes, seed) if split == "dev" else _table(pods, nodes)
        size = len(as_text(context))
        if 0.85 * chars <= size <= 1.1 * chars:
            break
        n = max(4, round(n * chars / size))
    return pods, nodes, context


# -- questions ----------------------------------------------------------------------------------

_Asked = tuple[str, object, dict] | None


def _leader(counts: dict) -> object:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
    return None if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) else ranked[0][0]


def _millicores(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else round(float(cpu) * 1000)


def _mib(memory: str) -> int:
    return int(memory[:-2]) * 1024 if memory.endswith("Gi") else int(memory.removesuffix("Mi"))


def _running(p: Pod) -> bool:
    """The pod's phase is ``Running`` (dev)."""
    return p.state not in _PHASE


def _shown(p: Pod) -> str:
    """The pod's STATUS column (test)."""
    return _SHOWN.get(p.state, p.state)


def _namespace(split: str, p: Pod) -> str:
    return (_DEV_APPS if split == "dev" else _TEST_APPS)[p.app][0]


def _ask_count(split: str, rng: random.Random, pods: list[Pod], nodes: list) -> _Asked:
    p = rng.choice(pods)
    ns = _namespace(split, p)
    if rng.random() < 0.5:
        mine = [x for x in pods if _namespace(split, x) == ns]
        if split == "dev":
            n = sum(_running(x) and x.state in ("NotReady", "CrashLoopBackOff") for x in mine)
            q = f"How many pods in namespace {ns} are in phase Running yet have a container not ready?"
            return q, n, {"namespace": ns}
        n = sum(x.state not in ("Running", "Restarted", "Terminating") for x in mine)
        q = f"In the {ns} namespace, count the pods whose READY shows fewer ready containers than it has."
        return q, n, {"namespace": ns}
    if p.node < 0:
        return None
    node = nodes[p.node][0]
    if split == "dev":
        n = sum(x.node == p.node for x in pods)
        return f"How many pods are scheduled on the node {node}?", n, {"node": node}
    n = sum(x.node == p.node and _shown(x) != "Running" for x in pods)
    return f"Count the pods on {node} whose STATUS is anything but Running.", n, {"node": node}


def _ask_total(split: str, rng: random.Random, pods: list[Pod], nodes: list) -> _Asked:
    p = rng.choice(pods)
    ns = _namespace(split, p)
    mine = [x for x in pods if _namespace(split, x) == ns]
    if split == "dev":
        containers = [c for x in mine for c in _DEV_APPS[x.app][3]]
        if rng.random() < 0.5:
            n = sum(_millicores(c[2]) for c in containers)
            q = f"What is the total CPU request, in millicores, of the containers of the pods in {ns}?"
            return q, n, {"namespace": ns, "resource": "cpu"}
        n = sum(_mib(c[3]) for c in containers if c[3] != "0")
        q = f"Adding up the memory requests of every container in namespace {ns}, how many MiB is that?"
        return q, n, {"namespace": ns, "resource": "memory"}
    _, app, controller, _, _ = _TEST_APPS[p.app]
    if controller == "Deployment" and rng.random() < 0.6:
        n = sum(sum(x.restarts) for x in pods if x.app == p.app)
        q = f"Add up the RESTARTS of the pods of Deployment {app} (named {app}-<replicaset hash>-<suffix>)."
        return q, n, {"deployment": app, "namespace": ns}
    n = sum(sum(x.restarts) for x in mine)
    return (
        f"Summing the RESTARTS column over namespace {ns}, how many restarts are there?",
        n,
        {"namespace": ns},
    )


def _ask_top(split: str, rng: random.Random, pods: list[Pod], nodes: list) -> _Asked:
    counts: dict = {}
    if rng.random() < 0.5:
        for x in pods:
            if x.node >= 0 and (_running(x) if split == "dev" else _shown(x) == "Running"):
                counts[nodes[x.node][0]] = counts.get(nodes[x.node][0], 0) + 1
        top = _leader(counts)
        if split == "dev":
            q = "Which node (spec.nodeName) runs the most pods whose phase is Running?"
        else:
            q = "Which NODE has the most pods with STATUS Running?"
        return None if top is None else (q, top, {"by": "node"})
    if split == "dev":
        top = _leader({x.name: sum(x.restarts) for x in pods})
        return (
            None
            if top is None
            else ("Which pod has the highest restartCount summed over its containers?", top, {"by": "pod"})
        )
    for x in pods:
        if _shown(x) != "Running":
            counts[_namespace(split, x)] = counts.get(_namespace(split, x), 0) + 1
    top = _leader(counts)
    q = "Which NAMESPACE has the most pods whose STATUS is not Running?"
    return None if top is None else (q, top, {"by": "namespace"})


def _ask_lookup(split: str, rng: random.Random, pods: list[Pod], nodes: list) -> _Asked:
    """Always a question (but in a listing of pods none of which has an IP yet)."""
    first = rng.random() < 0.5
    if split == "dev" and first:
        p = rng.choice(pods)
        container = rng.choice(_DEV_APPS[p.app][3])
        q = f"Which image does container {container[0]} of pod {p.name} (in {_namespace(split, p)}) run?"
        return q, _image(container, p), {"pod": p.name, "container": container[0]}
    if split == "test" and first:
        p = rng.choice([x for x in pods if x.node >= 0] or pods)
        return (
            None
            if p.node < 0
            else (
                f"Which node was pod {p.name} scheduled to?",
                nodes[p.node][0],
                {"pod": p.name, "column": "NODE"},
            )
        )
    p = rng.choice([x for x in pods if x.ip] or pods)
    if not p.ip:
        return None
    if split == "dev":
        return f"What is the podIP of {p.name} in namespace {_namespace(split, p)}?", p.ip, {"pod": p.name}
    return f"What IP does pod {p.name} have?", p.ip, {"pod": p.name, "column": "IP"}


_ASK = {"count": _ask_count, "total": _ask_total, "top": _ask_top, "lookup": _ask_lookup}


@family(
    "cluster",
    "a Kubernetes cluster's pods: kubectl's JSON listing as a nested dict (dev), or its wide table as a "
    "string (test)",
)
def make(ref: TaskRef) -> Task:
    rng = ref.rng()
    pods, nodes, context = _fit(ref.split, f"{rng.random()}", ref.chars)
    kind = KINDS[ref.index % len(KINDS)]

    kind, asked = draw_question(
        lambda kind_: _ASK[kind_](ref.split, rng, pods, nodes), kind, "lookup", nonzero=True, hidden=True
    )
    return asked_task(
        ref,
        context,
        kind,
        asked,
        container="nested dict (kubectl JSON)" if ref.split == "dev" else "string (kubectl wide table)",
        pods=len(pods),
    )
