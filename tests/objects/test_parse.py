"""Manifest dict -> typed object: the API server's v1 defaulting and the field paths of
validation errors, for every supported kind."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched.errors import FieldError
from kubesched.objects import LabelSelector, NodeCondition, PodCondition, Requirement, Taint, Toleration
from kubesched.objects.parse import PARSERS, parse_time

GI = 2**30


def pod_m(**spec: Any) -> dict[str, Any]:
    m = make_pod().name("p").manifest()
    m["metadata"].pop("namespace")
    m["spec"].update(spec)
    return m


def node_m(**status: Any) -> dict[str, Any]:
    m = make_node().name("n").manifest()
    m["status"].update(status)
    return m


PV = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "pv"},
    "spec": {"capacity": {"storage": "1Gi"}, "csi": {"driver": "d", "volumeHandle": "h"}, "claimRef": {"name": "c"}},
}
PVC = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "c"},
    "spec": {"resources": {"requests": {"storage": "1.5"}}},
}
SC = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "p"}
PC = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "pc"}, "value": 5}
RC = {
    "apiVersion": "v1",
    "kind": "ReplicationController",
    "metadata": {"name": "rc"},
    "spec": {"template": {"metadata": {"labels": {"app": "web"}}}},
}
NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"env": "prod"}}}
CSID = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "d"}}
PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "b"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
    "status": {"disruptedPods": {"p1": "2024-01-01T00:00:00Z"}},
}


def parse(m: dict[str, Any]) -> Any:
    return PARSERS[m["kind"]][1](m)


# (id, manifest, getter, expected)
DEFAULTS: list[tuple[str, dict[str, Any], Callable[[Any], Any], Any]] = [
    ("a pod without a namespace is in default", pod_m(), lambda p: p.namespace, "default"),
    ("a pod without a scheduler name uses default-scheduler", pod_m(), lambda p: p.scheduler_name, "default-scheduler"),
    (
        "an empty scheduler name is default-scheduler",
        pod_m(schedulerName=""),
        lambda p: p.scheduler_name,
        "default-scheduler",
    ),
    (
        "a pod without a preemption policy preempts lower priorities",
        pod_m(),
        lambda p: p.preemption_policy,
        "PreemptLowerPriority",
    ),
    ("a pod without priority has priority 0 before admission", pod_m(), lambda p: p.priority, 0),
    ("a pod without a phase is Pending", pod_m(), lambda p: p.phase, "Pending"),
    ("the termination grace period defaults to 30 s", pod_m(), lambda p: p.termination_grace_period_seconds, 30),
    ("a pod without nodeSelector has None, not {}", pod_m(), lambda p: p.node_selector, None),
    ("an empty nodeSelector is kept as {}", pod_m(nodeSelector={}), lambda p: p.node_selector, {}),
    (
        "a toleration without operator is Equal",
        pod_m(tolerations=[{"key": "k", "value": "v"}]),
        lambda p: p.tolerations,
        (Toleration("k", "Equal", "v"),),
    ),
    (
        "a port without protocol is TCP",
        pod_m(containers=[{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]),
        lambda p: (p.containers[0].ports[0].protocol, p.containers[0].ports[0].host_port),
        ("TCP", 8080),
    ),
    (
        "a container port without hostPort has host port 0",
        pod_m(containers=[{"name": "c", "ports": [{"containerPort": 80}]}]),
        lambda p: p.containers[0].ports[0].host_port,
        0,
    ),
    (
        "a volume without a source is an emptyDir",
        pod_m(volumes=[{"name": "v"}]),
        lambda p: p.volumes[0].kind,
        "emptyDir",
    ),
    ("a scheduling gate is read by name", pod_m(schedulingGates=[{"name": "g"}]), lambda p: p.scheduling_gates, ("g",)),
    (
        "a creationTimestamp is read as RFC 3339",
        {**pod_m(), "metadata": {"name": "p", "creationTimestamp": "2024-01-01T00:00:01Z"}},
        lambda p: p.meta.creation_timestamp,
        1704067201.0,
    ),
    (
        "a null pod condition reads as an empty one (it used to crash)",
        {**pod_m(), "status": {"conditions": [None]}},
        lambda p: p.conditions,
        (PodCondition("", ""),),
    ),
    (
        "a null node condition reads as an empty one (it used to crash)",
        node_m(conditions=[None]),
        lambda n: n.conditions,
        (NodeCondition("", ""),),
    ),
    (
        "a node without allocatable gets allocatable = capacity",
        node_m(capacity={"cpu": "4", "memory": "1Gi"}),
        lambda n: dict(n.allocatable),
        {"cpu": 4000, "memory": GI},
    ),
    (
        "a node's allocatable is kept when set",
        node_m(capacity={"cpu": "4"}, allocatable={"cpu": "3500m"}),
        lambda n: dict(n.allocatable),
        {"cpu": 3500},
    ),
    (
        "a node is cluster-scoped even if a namespace is written",
        {**node_m(), "metadata": {"name": "n", "namespace": "x"}},
        lambda n: n.meta.namespace,
        "",
    ),
    (
        "a taint keeps its effect",
        {**node_m(), "spec": {"taints": [{"key": "k", "effect": "NoExecute"}]}},
        lambda n: n.taints,
        (Taint("k", "", "NoExecute"),),
    ),
    ("a node is schedulable by default", node_m(), lambda n: n.unschedulable, False),
    ("a PV claimRef without namespace is in default", PV, lambda v: v.claim_ref, ("default", "c")),
    ("a PV's source kind is its source field", PV, lambda v: (v.kind, v.volume_mode), ("csi", "Filesystem")),
    ("a PVC's storage request is rounded up to bytes", PVC, lambda c: c.requested_storage, 2),
    ("a PVC without storageClassName has None (not '')", PVC, lambda c: c.storage_class_name, None),
    ("a PVC without a namespace is in default", PVC, lambda c: c.namespace, "default"),
    ("a StorageClass without volumeBindingMode is Immediate", SC, lambda s: s.volume_binding_mode, "Immediate"),
    (
        "a PriorityClass without preemptionPolicy preempts lower priorities",
        PC,
        lambda p: p.preemption_policy,
        "PreemptLowerPriority",
    ),
    ("a PriorityClass is not the global default unless it says so", PC, lambda p: p.global_default, False),
    (
        "a ReplicationController without selector selects its template labels",
        RC,
        lambda w: w.selector,
        LabelSelector({"app": "web"}),
    ),
    (
        "a Namespace gets the kubernetes.io/metadata.name label",
        NS,
        lambda n: dict(n.meta.labels),
        {"env": "prod", "kubernetes.io/metadata.name": "team"},
    ),
    ("a CSIDriver requires attach by default", CSID, lambda d: (d.attach_required, d.storage_capacity), (True, False)),
    (
        "a PDB keeps its disrupted pods and defaults disruptionsAllowed to 0",
        PDB,
        lambda b: (b.disruptions_allowed, b.disrupted_pods, b.namespace),
        (0, frozenset({"p1"}), "default"),
    ),
]


@pytest.mark.parametrize("manifest, getter, expected", [d[1:] for d in DEFAULTS], ids=[d[0] for d in DEFAULTS])
def test_defaulting(manifest: dict[str, Any], getter: Callable[[Any], Any], expected: Any) -> None:
    assert getter(parse(copy.deepcopy(manifest))) == expected


def test_node_affinity_is_parsed() -> None:
    m = pod_m(
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["3"]}]}]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 7, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}}
                ],
            }
        }
    )
    na = parse(m).affinity.node_affinity
    assert na.required.terms[0].match_expressions == (Requirement("gen", "Gt", ("3",)),)
    assert na.preferred[0].weight == 7
    assert na.preferred[0].preference.match_expressions == (Requirement("z", "Exists"),)


# (id, manifest, path, message)
ERRORS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "a missing metadata.name is required",
        {**pod_m(), "metadata": {}},
        "metadata.name",
        "Required value: name is required",
    ),
    (
        "an empty metadata.name is required",
        {**pod_m(), "metadata": {"name": ""}},
        "metadata.name",
        "Required value: name is required",
    ),
    (
        "a numeric metadata.name is a type error",
        {**pod_m(), "metadata": {"name": 5}},
        "metadata.name",
        "must be a string, got int",
    ),
    ("metadata must be an object", {**pod_m(), "metadata": "p"}, "metadata", "must be an object, got str"),
    ("a pod needs containers", pod_m(containers=[]), "spec.containers", "Required value"),
    ("containers must be a list", pod_m(containers={"name": "c"}), "spec.containers", "must be a list, got dict"),
    ("a container needs a name", pod_m(containers=[{"image": "x"}]), "spec.containers[0].name", "Required value"),
    ("an init container needs a name", pod_m(initContainers=[{}]), "spec.initContainers[0].name", "Required value"),
    ("a container must be an object", pod_m(containers=["c"]), "spec.containers[0]", "must be an object, got str"),
    ("a non-integer priority is rejected", pod_m(priority="high"), "spec.priority", "must be an integer, got 'high'"),
    (
        "an unknown preemption policy is rejected",
        pod_m(preemptionPolicy="Sometimes"),
        "spec.preemptionPolicy",
        'Unsupported value: \'Sometimes\': supported values: "Never", "PreemptLowerPriority"',
    ),
    (
        "a toleration operator must be Equal or Exists",
        pod_m(tolerations=[{"key": "k", "operator": "In"}]),
        "spec.tolerations[0].operator",
        'Unsupported value: \'In\': supported values: "Equal", "Exists"',
    ),
    (
        "an Exists toleration may not have a value",
        pod_m(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
        "spec.tolerations[0].operator",
        "value must be empty when `operator` is 'Exists'",
    ),
    (
        "a toleration effect must be known",
        pod_m(tolerations=[{"key": "k", "effect": "Never"}]),
        "spec.tolerations[0].effect",
        "Unsupported value: 'Never'",
    ),
    (
        "a host port must be within 0-65535",
        pod_m(containers=[{"name": "c", "ports": [{"containerPort": 80, "hostPort": 70000}]}]),
        "spec.containers[0].ports[0].hostPort",
        "Invalid value: 70000: must be between 1 and 65535, inclusive",
    ),
    (
        "a container port is required",
        pod_m(containers=[{"name": "c", "ports": [{"hostPort": 80}]}]),
        "spec.containers[0].ports[0].containerPort",
        "Required value",
    ),
    (
        "a port protocol must be TCP, UDP or SCTP",
        pod_m(containers=[{"name": "c", "ports": [{"containerPort": 80, "protocol": "HTTP"}]}]),
        "spec.containers[0].ports[0].protocol",
        'Unsupported value: \'HTTP\': supported values: "SCTP", "TCP", "UDP"',
    ),
    (
        "a preferred node affinity weight must be an integer",
        pod_m(
            affinity={
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": "heavy", "preference": {}}]
                }
            }
        ),
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        "must be an integer, got 'heavy'",
    ),
    (
        "a pod affinity weight must be 1-100",
        pod_m(
            affinity={
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 0, "podAffinityTerm": {"topologyKey": "z"}}
                    ]
                }
            }
        ),
        "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        "must be in the range 1-100",
    ),
    (
        "a pod affinity term needs a topology key",
        pod_m(
            affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}}
        ),
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        "Required value: can not be empty",
    ),
    (
        "a pod affinity selector error names its path",
        pod_m(
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "z", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}
                    ]
                }
            }
        ),
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
        ".labelSelector.matchExpressions[0].values",
        "must be specified when `operator` is 'In' or 'NotIn'",
    ),
    (
        "a spread constraint needs a positive maxSkew",
        pod_m(topologySpreadConstraints=[{"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}]),
        "spec.topologySpreadConstraints[0].maxSkew",
        "must be greater than zero",
    ),
    (
        "a spread constraint needs a known whenUnsatisfiable",
        pod_m(topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "Maybe"}]),
        "spec.topologySpreadConstraints[0].whenUnsatisfiable",
        'Unsupported value: \'Maybe\': supported values: "DoNotSchedule", "ScheduleAnyway"',
    ),
    (
        "a spread constraint's minDomains must be positive",
        pod_m(
            topologySpreadConstraints=[
                {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 0}
            ]
        ),
        "spec.topologySpreadConstraints[0].minDomains",
        "must be greater than zero",
    ),
    (
        "a spread constraint's policies are Honor or Ignore",
        pod_m(
            topologySpreadConstraints=[
                {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "Always"}
            ]
        ),
        "spec.topologySpreadConstraints[0].nodeTaintsPolicy",
        'Unsupported value: \'Always\': supported values: "Honor", "Ignore"',
    ),
    (
        "a volume may have one source only",
        pod_m(volumes=[{"name": "v", "emptyDir": {}, "hostPath": {"path": "/"}}]),
        "spec.volumes[0]",
        "may not specify more than 1 volume type, got emptyDir, hostPath",
    ),
    (
        "a PVC volume needs a claim name",
        pod_m(volumes=[{"name": "v", "persistentVolumeClaim": {}}]),
        "spec.volumes[0].persistentVolumeClaim.claimName",
        "Required value",
    ),
    (
        "a label value must not be a boolean",
        {**pod_m(), "metadata": {"name": "p", "labels": {"a": True}}},
        "metadata.labels.a",
        "must be a string, got bool",
    ),
    (
        "a creationTimestamp must be RFC 3339",
        {**pod_m(), "metadata": {"name": "p", "creationTimestamp": "2024-01-01"}},
        "metadata.creationTimestamp",
        "must be an RFC 3339 timestamp, got '2024-01-01'",
    ),
    (
        "a startTime needs a time zone",
        {**pod_m(), "status": {"startTime": "2024-01-01T00:00:00"}},
        "status.startTime",
        "must be an RFC 3339 timestamp, got '2024-01-01T00:00:00'",
    ),
    (
        "a pod condition must be an object",
        {**pod_m(), "status": {"conditions": [[]]}},
        "status.conditions[0]",
        "must be an object, got list",
    ),
    (
        "a node capacity must be a valid quantity",
        node_m(capacity={"cpu": "four"}),
        "status.capacity.cpu",
        'Invalid value: "four": quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    (
        "a node capacity may not be negative",
        node_m(capacity={"memory": "-1Gi"}),
        "status.capacity.memory",
        "must be greater than or equal to 0",
    ),
    (
        "a taint needs a key",
        {**node_m(), "spec": {"taints": [{"effect": "NoSchedule"}]}},
        "spec.taints[0].key",
        "Required value",
    ),
    (
        "a taint effect must be known",
        {**node_m(), "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}},
        "spec.taints[0].effect",
        'Unsupported value: \'Sometimes\': supported values: "NoExecute", "NoSchedule", "PreferNoSchedule"',
    ),
    (
        "a taint needs an effect",
        {**node_m(), "spec": {"taints": [{"key": "k"}]}},
        "spec.taints[0].effect",
        'Unsupported value: \'\': supported values: "NoExecute", "NoSchedule", "PreferNoSchedule"',
    ),
    (
        "unschedulable must be a boolean",
        {**node_m(), "spec": {"unschedulable": "yes"}},
        "spec.unschedulable",
        "must be a boolean, got 'yes'",
    ),
    ("a StorageClass needs a provisioner", {**SC, "provisioner": ""}, "provisioner", "Required value"),
    (
        "a StorageClass binding mode must be known",
        {**SC, "volumeBindingMode": "Later"},
        "volumeBindingMode",
        'Unsupported value: \'Later\': supported values: "Immediate", "WaitForFirstConsumer"',
    ),
    ("a PriorityClass needs a value", {**PC, "value": None}, "value", "Required value"),
    (
        "a PriorityClass preemption policy must be known",
        {**PC, "preemptionPolicy": "Always"},
        "preemptionPolicy",
        'Unsupported value: \'Always\': supported values: "Never", "PreemptLowerPriority"',
    ),
    (
        "a PVC storage request must be a quantity",
        {**PVC, "spec": {"resources": {"requests": {"storage": "big"}}}},
        "spec.resources.requests.storage",
        'Invalid value: "big": quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
]


@pytest.mark.parametrize("manifest, path, message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_field_errors(manifest: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(FieldError) as exc:
        parse(copy.deepcopy(manifest))
    assert (exc.value.path, exc.value.message) == (path, message)
    assert str(exc.value) == f"{path}: {message}"


@pytest.mark.parametrize(
    "raw, expected",
    [
        pytest.param(None, None, id="an absent time is None"),
        pytest.param("2024-01-01T00:00:00Z", 1704067200.0, id="Z is UTC"),
        pytest.param("2024-01-01T01:00:00+01:00", 1704067200.0, id="an offset is honoured"),
        pytest.param("2024-01-01T00:00:00.250Z", 1704067200.25, id="fractional seconds are kept"),
    ],
)
def test_parse_time(raw: Any, expected: float | None) -> None:
    assert parse_time(raw, "t") == expected


@pytest.mark.parametrize(
    "raw",
    [
        "2024-01-01",
        "2024-01-01 00:00:00Z",
        "2024-01-01t00:00:00z",
        "2024-13-01T00:00:00Z",
        "yesterday",
        1704067200,
        "2024-01-01T00:00:00+0100",
    ],
    ids=lambda r: f"{r!r} is not an RFC 3339 timestamp",
)
def test_parse_time_rejects(raw: Any) -> None:
    with pytest.raises(FieldError):
        parse_time(raw, "t")


def test_parse_time_accepts_yaml_datetimes() -> None:
    import datetime as dt

    assert parse_time(dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "t") == 1704067200.0
    assert parse_time(dt.datetime(2024, 1, 1), "t") == 1704067200.0  # a naive YAML timestamp is UTC


def test_supported_kinds_and_api_versions() -> None:
    assert {k: v[0] for k, v in PARSERS.items()} == {
        "Pod": ("v1",),
        "Node": ("v1",),
        "PersistentVolume": ("v1",),
        "PersistentVolumeClaim": ("v1",),
        "Service": ("v1",),
        "ReplicationController": ("v1",),
        "ReplicaSet": ("apps/v1",),
        "StatefulSet": ("apps/v1",),
        "Deployment": ("apps/v1",),
        "DaemonSet": ("apps/v1",),
        "Job": ("batch/v1",),
        "StorageClass": ("storage.k8s.io/v1", "storage.k8s.io/v1beta1"),
        "CSINode": ("storage.k8s.io/v1", "storage.k8s.io/v1beta1"),
        "CSIDriver": ("storage.k8s.io/v1", "storage.k8s.io/v1beta1"),
        "PriorityClass": ("scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1"),
        "PodDisruptionBudget": ("policy/v1", "policy/v1beta1"),
        "Namespace": ("v1",),
    }


# ------------------------------------------------------------------ parse_pod with the previous version
def _live_pod(cpu: str = "100m") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "1"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                                     "ports": [{"containerPort": 80}]}],
                     "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Pending"}}


def _bound(raw: dict[str, Any]) -> None:
    raw["spec"]["nodeName"] = "n1"
    raw["metadata"]["resourceVersion"] = "2"


def _more_cpu(raw: dict[str, Any]) -> None:
    raw["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "300m"


def _sidecar(raw: dict[str, Any]) -> None:
    raw["spec"]["initContainers"][0]["restartPolicy"] = "Always"


def _overhead(raw: dict[str, Any]) -> None:
    raw["spec"]["overhead"] = {"cpu": "50m"}


PREV_UPDATES = [
    ("a bind leaves the containers as they were parsed", _bound, True),
    ("a changed container request is parsed again", _more_cpu, False),
    ("an init container turned sidecar is parsed again", _sidecar, False),
    ("an added overhead is parsed again", _overhead, False),
]


@pytest.mark.parametrize("update, reused", [u[1:] for u in PREV_UPDATES], ids=[u[0] for u in PREV_UPDATES])
def test_parse_pod_with_the_previous_version_equals_a_fresh_parse(update: Callable[[dict[str, Any]], None],
                                                                   reused: bool) -> None:
    from kubesched.objects.parse import parse_pod

    prev = parse_pod(_live_pod())
    raw = _live_pod()
    update(raw)
    fresh, incremental = parse_pod(copy.deepcopy(raw)), parse_pod(raw, prev)
    fields = ("containers", "init_containers", "overhead", "requests", "non_zero_cpu", "non_zero_memory",
              "score_requests", "node_name", "meta", "phase")
    assert {f: getattr(incremental, f) for f in fields} == {f: getattr(fresh, f) for f in fields}
    assert (incremental.containers is prev.containers) == reused
    assert incremental.raw is raw


# ------------------------------------------------------------------ parse_pod of JSON-decoded pods
def _other_pod(raw: dict[str, Any]) -> None:
    raw["metadata"].update(name="q", uid="u2")


def _tolerating(raw: dict[str, Any]) -> None:
    raw["spec"]["tolerations"] = [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]


def _own_volume_mount(raw: dict[str, Any]) -> None:
    # The service account token's projected volume is named per pod (kube-api-access-xxxxx).
    raw["spec"]["containers"][0]["volumeMounts"] = [{"name": "kube-api-access-x7k2p", "mountPath": "/var/run/secrets"}]
    raw["spec"]["containers"][0]["env"] = [{"name": "POD", "value": "q"}]


def _another_image(raw: dict[str, Any]) -> None:
    raw["spec"]["containers"][0]["image"] = "nginx:1.28"


def _another_port(raw: dict[str, Any]) -> None:
    raw["spec"]["containers"][0]["ports"][0]["hostPort"] = 8080


SHARED = [
    ("another pod of the same template shares its containers", _other_pod, True),
    ("a pod whose containers differ only where scheduling does not read shares them", _own_volume_mount, True),
    ("a pod with another image parses its own", _another_image, False),
    ("a pod with another host port parses its own", _another_port, False),
    ("a pod with another container request parses its own", _more_cpu, False),
    ("a pod whose init container is a sidecar parses its own", _sidecar, False),
    ("a pod with an overhead parses its own", _overhead, False),
]


@pytest.mark.parametrize("update, shared", [s[1:] for s in SHARED], ids=[s[0] for s in SHARED])
def test_json_decoded_pods_of_one_template_share_what_a_fresh_parse_gives(
        update: Callable[[dict[str, Any]], None], shared: bool) -> None:
    from kubesched.objects.parse import parse_pod

    first = _live_pod()
    _tolerating(first)
    a = parse_pod(first, json_decoded=True)
    raw = _live_pod()
    _tolerating(raw)
    update(raw)
    b, fresh = parse_pod(raw, json_decoded=True), parse_pod(copy.deepcopy(raw))
    fields = ("containers", "init_containers", "overhead", "requests", "non_zero_cpu", "non_zero_memory",
              "score_requests", "tolerations", "meta")
    assert {f: getattr(b, f) for f in fields} == {f: getattr(fresh, f) for f in fields}
    assert (b.containers is a.containers) == shared
    assert b.tolerations is a.tolerations  # the same tolerations in every case


def test_pods_not_marked_json_decoded_never_share() -> None:
    from kubesched.objects.parse import parse_pod

    a, b = parse_pod(_live_pod()), parse_pod(_live_pod())
    assert a.containers == b.containers and a.containers is not b.containers


def test_an_invalid_pod_is_refused_every_time_it_is_parsed() -> None:
    from kubesched.errors import FieldError
    from kubesched.objects.parse import parse_pod

    raw = _live_pod()
    raw["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    for _ in range(2):
        with pytest.raises(FieldError):
            parse_pod(copy.deepcopy(raw), json_decoded=True)


class _Reads(dict[str, Any]):
    """A container recording which of its fields are read."""

    def __init__(self, raw: dict[str, Any], seen: set[str]) -> None:
        super().__init__(raw)
        self.seen = seen

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self.seen.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.seen.add(key)
        return super().__getitem__(key)


@pytest.mark.parametrize("init", [False, True], ids=["a container", "an init container"])
def test_the_resources_cache_is_keyed_by_every_field_a_container_parse_reads(init: bool) -> None:
    """_containers_key keeps _CONTAINER_FIELDS of each container: the parse must read no other
    (a field it read but the key left out would let two different containers share a parse)."""
    from kubesched.objects.parse import _CONTAINER_FIELDS, _container

    seen: set[str] = set()
    raw = {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}},
           "ports": [{"containerPort": 80, "hostPort": 81, "protocol": "UDP", "hostIP": "1.2.3.4"}],
           "env": [{"name": "A", "value": "b"}], "volumeMounts": [{"name": "v", "mountPath": "/v"}],
           "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}], "command": ["x"]}
    if init:
        raw["restartPolicy"] = "Always"
    _container(_Reads(raw, seen), "spec.containers[0]", init=init)
    assert seen <= set(_CONTAINER_FIELDS)


def _node_raw(name: str, cpu: str = "4") -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": "2026-11-20T10:00:00Z"},
            "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                       "allocatable": {"cpu": cpu, "memory": "15Gi", "pods": "110"}}}


@pytest.mark.parametrize("other_cpu, shared", [("4", True), ("8", False)],
                         ids=["a node of the same shape shares its parsed capacity",
                              "a node of another shape parses its own"])
def test_json_decoded_nodes_share_what_a_fresh_parse_gives(other_cpu: str, shared: bool) -> None:
    from kubesched.objects.parse import parse_node

    a = parse_node(_node_raw("a"), json_decoded=True)
    b, fresh = parse_node(_node_raw("b", other_cpu), json_decoded=True), parse_node(_node_raw("b", other_cpu))
    assert (b.capacity, b.allocatable, b.meta) == (fresh.capacity, fresh.allocatable, fresh.meta)
    assert (b.allocatable is a.allocatable) == shared
    assert fresh.allocatable is not a.allocatable  # not JSON-decoded: never shared


def test_a_timestamp_seen_before_reads_the_same_and_an_invalid_one_is_refused_every_time() -> None:
    from kubesched.errors import FieldError
    from kubesched.objects.parse import parse_time

    assert parse_time("2026-11-20T10:00:00Z", "t") == parse_time("2026-11-20T10:00:00Z", "t") == 1795168800.0
    assert parse_time("2026-11-20T11:00:00+01:00", "t") == 1795168800.0
    for _ in range(2):
        with pytest.raises(FieldError, match="RFC 3339"):
            parse_time("2026-11-20 10:00:00", "t")


@pytest.mark.parametrize("other_zone, shared", [("a", True), ("b", False)],
                         ids=["a pod of the same affinity shares its parse", "a pod of another affinity parses its own"])
def test_json_decoded_pods_share_an_affinity_equal_to_a_fresh_parse(other_zone: str, shared: bool) -> None:
    from kubesched.objects.parse import parse_pod

    def with_affinity(name: str, zone: str) -> dict[str, Any]:
        raw = _live_pod()
        raw["metadata"]["name"] = name
        raw["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": [zone]}]}]}}}
        return raw

    a = parse_pod(with_affinity("p", "a"), json_decoded=True)
    b, fresh = parse_pod(with_affinity("q", other_zone), json_decoded=True), parse_pod(with_affinity("q", other_zone))
    assert b.affinity == fresh.affinity and (b.affinity is a.affinity) == shared
