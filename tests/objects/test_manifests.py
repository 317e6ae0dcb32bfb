"""Loading manifests (files, directories, multi-document YAML, List dumps) and the admission
the API server would have applied (README §1): namespaces, Priority, DefaultTolerationSeconds,
creationTimestamp/startTime defaulting, duplicates."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.errors import ManifestError
from kubesched.objects import ClusterObjects, Pod, Toleration, load_manifests
from kubesched.objects.manifests import EPOCH_2024

NOT_READY = Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute", 300)
UNREACHABLE = Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute", 300)


def pod(name: str, ns: str | None = None, **spec: Any) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if ns is not None:
        md["namespace"] = ns
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": {"containers": [{"name": "c"}], **spec}}


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"capacity": {"cpu": "1"}}}


def pclass(name: str, value: int, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


def write(path: Path, *docs: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def load(tmp_path: Path, *docs: Any) -> ClusterObjects:
    return load_manifests([write(tmp_path / "m.yaml", *docs)])


def by_name(objs: ClusterObjects) -> dict[str, Pod]:
    return {p.name: p for p in objs.pods}


def error(tmp_path: Path, *docs: Any) -> ManifestError:
    with pytest.raises(ManifestError) as exc:
        load(tmp_path, *docs)
    return exc.value


# ------------------------------------------------------------------ files and documents
def test_multi_document_yaml_keeps_document_order_and_sources(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_text(
        textwrap.dedent("""\
        # a comment before the first document
        apiVersion: v1
        kind: Node
        metadata: {name: n1}
        ---
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: p1}
        spec: {containers: [{name: c}]}
        ---
        apiVersion: v1
        kind: Node
        metadata: {name: n2}
        """)
    )
    objs = load_manifests([f])
    assert [n.name for n in objs.nodes] == ["n1", "n2"]
    assert [p.name for p in objs.pods] == ["p1"]
    src = objs.source_of(objs.pods[0])
    assert src is not None and (src.file, src.document) == (str(f), 2)  # the empty document still counts
    n2 = objs.source_of(objs.nodes[1])
    assert n2 is not None and n2.document == 3


def test_directories_are_walked_in_sorted_order(tmp_path: Path) -> None:
    write(tmp_path / "b" / "2.yaml", pod("p3"))
    write(tmp_path / "a.yml", pod("p1"))
    write(tmp_path / "b" / "1.yaml", pod("p2"))
    (tmp_path / "c.json").write_text(json.dumps(node("n1")))
    (tmp_path / "notes.txt").write_text("not a manifest: [")
    (tmp_path / "d.yaml.bak").write_text("not a manifest: [")
    objs = load_manifests([tmp_path])
    assert [p.name for p in objs.pods] == ["p1", "p2", "p3"]
    assert [n.name for n in objs.nodes] == ["n1"]


def test_several_paths_are_read_in_the_given_order(tmp_path: Path) -> None:
    a = write(tmp_path / "z.yaml", pod("first"))
    b = write(tmp_path / "a.yaml", pod("second"))
    objs = load_manifests([a, str(b)])
    assert [p.name for p in objs.pods] == ["first", "second"]


def test_an_empty_file_has_no_objects(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("")
    objs = load_manifests([tmp_path / "empty.yaml"])
    assert objs.pods == [] and objs.nodes == []


def test_kind_list_dump(tmp_path: Path) -> None:
    """kubectl get nodes,pods -A -o yaml: a v1 List whose items carry kind and apiVersion."""
    dump = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": [node("n1"), pod("p1", "team"), pclass("high", 100)],
    }
    objs = load(tmp_path, dump)
    assert [n.name for n in objs.nodes] == ["n1"]
    assert [(p.namespace, p.name, p.priority) for p in objs.pods] == [("team", "p1", 0)]
    assert [pc.name for pc in objs.priority_classes] == ["high"]
    src = objs.source_of(objs.nodes[0])
    assert src is not None and src.document == 0


def test_typed_list_items_inherit_kind_and_api_version(tmp_path: Path) -> None:
    """GET /api/v1/nodes returns a NodeList whose items have neither kind nor apiVersion."""
    dump = {
        "apiVersion": "v1",
        "kind": "NodeList",
        "items": [{"metadata": {"name": "n1"}}, {"metadata": {"name": "n2"}}],
    }
    pods = {
        "apiVersion": "v1",
        "kind": "PodList",
        "items": [{"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}],
    }
    pcs = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClassList",
        "items": [{"metadata": {"name": "x"}, "value": 1}],
    }
    objs = load(tmp_path, dump, pods, pcs)
    assert [n.name for n in objs.nodes] == ["n1", "n2"]
    assert [p.name for p in objs.pods] == ["p"]
    assert [pc.value for pc in objs.priority_classes] == [1]


def test_an_empty_list_has_no_objects(tmp_path: Path) -> None:
    objs = load(tmp_path, {"apiVersion": "v1", "kind": "List", "items": None})
    assert objs.pods == []


# ------------------------------------------------------------------ namespaces
def test_namespaces_are_defaulted_and_created(tmp_path: Path) -> None:
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c", "namespace": "data"},
        "spec": {},
    }
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"env": "prod"}}}
    objs = load(tmp_path, pod("a"), pod("b", "team"), pvc, ns)
    assert [p.namespace for p in objs.pods] == ["default", "team"]
    labels = {n.name: dict(n.meta.labels) for n in objs.namespaces}
    assert labels == {
        "team": {"env": "prod", "kubernetes.io/metadata.name": "team"},
        "default": {"kubernetes.io/metadata.name": "default"},
        "data": {"kubernetes.io/metadata.name": "data"},
    }


# ------------------------------------------------------------------ priority admission
PRIORITY_CASES: list[Any] = [
    (
        "a pod takes its class's value and preemption policy",
        [pclass("low", 10, preemptionPolicy="Never"), pod("p", priorityClassName="low")],
        (10, "Never", "low"),
    ),
    (
        "a pod without a class takes the global default class",
        [pclass("dflt", 7, globalDefault=True), pod("p")],
        (7, "PreemptLowerPriority", "dflt"),
    ),
    (
        "of several global defaults the lowest value wins",
        [
            pclass("b", 9, globalDefault=True),
            pclass("a", 3, globalDefault=True),
            pclass("c", 5, globalDefault=True),
            pod("p"),
        ],
        (3, "PreemptLowerPriority", "a"),
    ),
    (
        "a named class wins over the global default",
        [pclass("dflt", 7, globalDefault=True), pclass("x", 1), pod("p", priorityClassName="x")],
        (1, "PreemptLowerPriority", "x"),
    ),
    (
        "without any class a pod has priority 0 and preempts lower priorities",
        [pclass("x", 1), pod("p")],
        (0, "PreemptLowerPriority", ""),
    ),
    (
        "system-node-critical always exists",
        [pod("p", priorityClassName="system-node-critical")],
        (2000001000, "PreemptLowerPriority", "system-node-critical"),
    ),
    (
        "system-cluster-critical always exists",
        [pod("p", priorityClassName="system-cluster-critical")],
        (2000000000, "PreemptLowerPriority", "system-cluster-critical"),
    ),
    (
        "a pod may repeat its class's value",
        [pclass("x", 5), pod("p", priorityClassName="x", priority=5)],
        (5, "PreemptLowerPriority", "x"),
    ),
    (
        "a pod may repeat its class's preemption policy",
        [pclass("x", 5, preemptionPolicy="Never"), pod("p", priorityClassName="x", preemptionPolicy="Never")],
        (5, "Never", "x"),
    ),
    ("a pod without a class may say priority 0", [pod("p", priority=0)], (0, "PreemptLowerPriority", "")),
    (
        "a pod without a class may say PreemptLowerPriority",
        [pod("p", preemptionPolicy="PreemptLowerPriority")],
        (0, "PreemptLowerPriority", ""),
    ),
    (
        "a null spec.priority is not an explicit priority",
        [pclass("x", 5), pod("p", priorityClassName="x", priority=None)],
        (5, "PreemptLowerPriority", "x"),
    ),
    (
        "a null spec.preemptionPolicy is not an explicit policy",
        [pclass("x", 5, preemptionPolicy="Never"), pod("p", priorityClassName="x", preemptionPolicy=None)],
        (5, "Never", "x"),
    ),
    (
        "a class declared after the pod still applies",
        [pod("p", priorityClassName="late"), pclass("late", 42)],
        (42, "PreemptLowerPriority", "late"),
    ),
]


@pytest.mark.parametrize("docs, expected", [c[1:] for c in PRIORITY_CASES], ids=[c[0] for c in PRIORITY_CASES])
def test_priority_admission(tmp_path: Path, docs: list[Any], expected: tuple[int, str, str]) -> None:
    p = by_name(load(tmp_path, *docs))["p"]
    assert (p.priority, p.preemption_policy, p.priority_class_name) == expected


PRIORITY_ERRORS: list[Any] = [
    (
        "a pod naming an unknown class is rejected",
        [pod("p", priorityClassName="nope")],
        0,
        "spec.priorityClassName",
        "no PriorityClass with name nope was found",
    ),
    (
        "a pod contradicting its class's value is rejected",
        [pclass("x", 5), pod("p", priorityClassName="x", priority=6)],
        1,
        "spec.priority",
        "the integer value of priority (6) must not be provided in pod spec; priority admission controller computed 5 "
        "from the given PriorityClass name",
    ),
    (
        "a pod contradicting the global default's value is rejected",
        [pclass("d", 5, globalDefault=True), pod("p", priority=0)],
        1,
        "spec.priority",
        "the integer value of priority (0) must not be provided in pod spec; priority admission controller computed 5 "
        "from the given PriorityClass name",
    ),
    (
        "a pod without any class may not set a priority",
        [pod("p", priority=100)],
        0,
        "spec.priority",
        "the integer value of priority (100) must not be provided in pod spec; "
        "priority admission controller computed 0 "
        "from the given PriorityClass name",
    ),
    (
        "a pod contradicting its class's preemption policy is rejected",
        [pclass("x", 5), pod("p", priorityClassName="x", preemptionPolicy="Never")],
        1,
        "spec.preemptionPolicy",
        "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller "
        "computed PreemptLowerPriority from the given PriorityClass name",
    ),
    (
        "a pod without any class may not set preemptionPolicy Never",
        [pod("p", preemptionPolicy="Never")],
        0,
        "spec.preemptionPolicy",
        "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller "
        "computed PreemptLowerPriority from the given PriorityClass name",
    ),
    (
        "an unknown system- class is rejected",
        [pclass("system-foo", 1)],
        0,
        "metadata.name",
        "system-foo is not a known system priority class",
    ),
    (
        "a system class with another value is rejected",
        [pclass("system-node-critical", 5)],
        0,
        "value",
        "value of system-node-critical PriorityClass must be 2000001000",
    ),
    (
        "a user class above 1e9 is rejected",
        [pclass("huge", 1000000001)],
        0,
        "value",
        "maximum allowed value of a user defined priority is 1000000000",
    ),
]


@pytest.mark.parametrize(
    "docs, document, field, message", [c[1:] for c in PRIORITY_ERRORS], ids=[c[0] for c in PRIORITY_ERRORS]
)
def test_priority_admission_errors(tmp_path: Path, docs: list[Any], document: int, field: str, message: str) -> None:
    e = error(tmp_path, *docs)
    assert (e.document, e.field, e.message) == (document, field, message)
    assert str(e) == f"{tmp_path / 'm.yaml'}: document {document}: {field}: {message}"


def test_a_system_class_written_with_its_value_is_accepted(tmp_path: Path) -> None:
    objs = load(
        tmp_path,
        pclass("system-cluster-critical", 2000000000),
        pclass("top", 1000000000),
        pod("p", priorityClassName="system-cluster-critical"),
    )
    assert by_name(objs)["p"].priority == 2000000000


def test_errors_inside_a_list_name_the_item(tmp_path: Path) -> None:
    dump = {"apiVersion": "v1", "kind": "List", "items": [pod("ok"), pod("p", priorityClassName="nope")]}
    e = error(tmp_path, node("n"), dump)
    assert (e.document, e.field) == (1, "items[1].spec.priorityClassName")


# ------------------------------------------------------------------ DefaultTolerationSeconds
TOLERATION_CASES: list[Any] = [
    ("a pod without tolerations gets both 300 s tolerations", [], [NOT_READY, UNREACHABLE]),
    (
        "a toleration of everything (empty key and effect) prevents both",
        [{"operator": "Exists"}],
        [Toleration("", "Exists")],
    ),
    (
        "an empty key with effect NoExecute prevents both",
        [{"operator": "Exists", "effect": "NoExecute"}],
        [Toleration("", "Exists", "", "NoExecute")],
    ),
    (
        "an empty key with effect NoSchedule prevents neither",
        [{"operator": "Exists", "effect": "NoSchedule"}],
        [Toleration("", "Exists", "", "NoSchedule"), NOT_READY, UNREACHABLE],
    ),
    (
        "tolerating not-ready NoExecute adds only unreachable",
        [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}],
        [Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute", 10), UNREACHABLE],
    ),
    (
        "tolerating unreachable with any effect adds only not-ready",
        [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}],
        [Toleration("node.kubernetes.io/unreachable", "Exists"), NOT_READY],
    ),
    (
        "tolerating not-ready NoSchedule does not count",
        [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
        [Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoSchedule"), NOT_READY, UNREACHABLE],
    ),
    (
        "the operator is not looked at",
        [{"key": "node.kubernetes.io/not-ready", "value": "x", "effect": "NoExecute"}],
        [Toleration("node.kubernetes.io/not-ready", "Equal", "x", "NoExecute"), UNREACHABLE],
    ),
    (
        "other tolerations are kept first",
        [{"key": "gpu", "operator": "Exists"}],
        [Toleration("gpu", "Exists"), NOT_READY, UNREACHABLE],
    ),
]


@pytest.mark.parametrize(
    "tolerations, expected", [c[1:] for c in TOLERATION_CASES], ids=[c[0] for c in TOLERATION_CASES]
)
def test_default_toleration_seconds(tmp_path: Path, tolerations: list[Any], expected: list[Toleration]) -> None:
    p = by_name(load(tmp_path, pod("p", tolerations=tolerations)))["p"]
    assert list(p.tolerations) == expected


# ------------------------------------------------------------------ timestamps
def test_creation_timestamps_count_every_pod_document_across_files(tmp_path: Path) -> None:
    with_ts = pod("b")
    with_ts["metadata"]["creationTimestamp"] = "2023-06-01T00:00:00Z"
    f1 = write(tmp_path / "1.yaml", pod("a"), node("n"), with_ts)
    f2 = write(tmp_path / "2.yaml", {"apiVersion": "v1", "kind": "List", "items": [pod("c")]}, pod("d"))
    ps = by_name(load_manifests([f1, f2]))
    assert ps["a"].meta.creation_timestamp == EPOCH_2024 + 1
    assert ps["b"].meta.creation_timestamp == 1685577600.0  # kept as written
    assert ps["c"].meta.creation_timestamp == EPOCH_2024 + 3
    assert ps["d"].meta.creation_timestamp == EPOCH_2024 + 4
    assert EPOCH_2024 == 1704067200.0  # 2024-01-01T00:00:00Z


def test_start_time_defaults_to_creation_for_running_pods(tmp_path: Path) -> None:
    running = pod("running", nodeName="n")
    explicit = pod("explicit", nodeName="n")
    explicit["status"] = {"startTime": "2024-02-01T00:00:00Z"}
    done = pod("done", nodeName="n")
    done["status"] = {"phase": "Succeeded"}
    objs = load(tmp_path, pod("pending"), running, explicit, done)
    ps = by_name(objs)
    assert ps["pending"].start_time is None
    assert ps["running"].start_time == EPOCH_2024 + 2
    assert ps["explicit"].start_time == 1706745600.0
    assert ps["done"].start_time is None
    assert objs.latest_timestamp == 1706745600.0


def test_latest_timestamp_is_the_latest_creation_or_start(tmp_path: Path) -> None:
    objs = load(tmp_path, pod("a"), pod("b"), pod("c"))
    assert objs.latest_timestamp == EPOCH_2024 + 3


def test_uids_are_defaulted_deterministically(tmp_path: Path) -> None:
    given = pod("given")
    given["metadata"]["uid"] = "u-1"
    first = by_name(load(tmp_path, pod("a"), given))
    second = by_name(load(tmp_path, pod("a"), given))
    assert first["given"].uid == "u-1"
    assert first["a"].uid and first["a"].uid == second["a"].uid
    assert len(first["a"].uid) == 36


def test_admitted_pods_keep_their_source(tmp_path: Path) -> None:
    objs = load(tmp_path, node("n"), pod("p"))
    src = objs.source_of(objs.pods[0])
    assert src is not None and src.document == 1


# ------------------------------------------------------------------ duplicates and errors
def test_duplicates_are_rejected_naming_the_first_definition(tmp_path: Path) -> None:
    f1 = write(tmp_path / "1.yaml", pod("p"))
    f2 = write(tmp_path / "2.yaml", node("n"), pod("p", "default"))
    with pytest.raises(ManifestError) as exc:
        load_manifests([f1, f2])
    assert str(exc.value) == (
        f"{f2}: document 1: metadata.name: duplicate Pod default/p (first defined in {f1}: document 0)"
    )


def test_same_names_in_other_namespaces_or_kinds_are_not_duplicates(tmp_path: Path) -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "x"}, "spec": {}}
    ss = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "x"}, "spec": {}}
    objs = load(tmp_path, pod("p"), pod("p", "other"), node("p"), rs, ss)
    assert len(objs.pods) == 2 and len(objs.workloads) == 2


def test_duplicate_nodes_are_rejected(tmp_path: Path) -> None:
    e = error(tmp_path, node("n"), node("n"))
    assert (e.document, e.field) == (1, "metadata.name")
    assert "duplicate Node n" in e.message


LOAD_ERRORS: list[Any] = [
    (
        "an unknown kind is rejected",
        [{"apiVersion": "apps/v1", "kind": "Deploymnet", "metadata": {"name": "d"}}],
        0,
        "kind",
        "unsupported kind 'Deploymnet' (supported: CSIDriver, CSINode, DaemonSet, Deployment, DeviceClass, Job, "
        "Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, PodDisruptionBudget, PriorityClass, "
        "ReplicaSet, ReplicationController, ResourceClaim, ResourceClaimTemplate, ResourceSlice, Service, "
        "StatefulSet, StorageClass; --ignore-unknown-kinds skips it)",
    ),
    (
        "a non-string kind is rejected",
        [{"apiVersion": "v1", "kind": ["Pod"], "metadata": {"name": "d"}}],
        0,
        "kind",
        None,
    ),
    (
        "a missing kind is rejected",
        [node("n"), {"apiVersion": "v1", "metadata": {"name": "d"}}],
        1,
        "kind",
        "Required value: kind is missing",
    ),
    (
        "an unsupported apiVersion is rejected",
        [{**node("n"), "apiVersion": "v2"}],
        0,
        "apiVersion",
        "unsupported apiVersion 'v2' for kind Node (expected v1)",
    ),
    (
        "a missing apiVersion is rejected",
        [{"kind": "Node", "metadata": {"name": "n"}}],
        0,
        "apiVersion",
        "unsupported apiVersion None for kind Node (expected v1)",
    ),
    ("a document must be an object", ["just text"], 0, "", "a document must be an object, got str"),
    ("a document that is a list is rejected", [[node("n")]], 0, "", "a document must be an object, got list"),
    (
        "List items must be a list",
        [{"apiVersion": "v1", "kind": "List", "items": {"a": 1}}],
        0,
        "items",
        "must be a list",
    ),
    (
        "a List item must be an object",
        [{"apiVersion": "v1", "kind": "List", "items": [node("n"), 3]}],
        0,
        "items[1]",
        "must be an object",
    ),
    (
        "a field error names its path",
        [node("n"), pod("p", containers=[{"name": "c", "resources": {"requests": {"cpu": "x"}}}])],
        1,
        "spec.containers[0].resources.requests.cpu",
        None,
    ),
]


@pytest.mark.parametrize(
    "docs, document, field, message", [c[1:] for c in LOAD_ERRORS], ids=[c[0] for c in LOAD_ERRORS]
)
def test_load_errors(tmp_path: Path, docs: list[Any], document: int, field: str, message: str | None) -> None:
    e = error(tmp_path, *docs)
    assert (e.file, e.document, e.field) == (str(tmp_path / "m.yaml"), document, field)
    if message is not None:
        assert e.message == message


@pytest.mark.parametrize(
    "text, document, line",
    [
        pytest.param("a: [1\n", 0, 2, id="an unclosed flow list in the only document"),
        pytest.param(
            "kind: Node\n---\nkind: Pod\n---\nmetadata: {name: [\n", 2, 6, id="an error in the third document"
        ),
        pytest.param("---\nkind: Node\n---\n\tkey: value\n", 1, 4, id="a tab indentation after a leading separator"),
        pytest.param(
            "# scenario 0001\n---\nkind: Node\nmetadata: {name: [\n",
            0,
            5,
            id="comments then a separator open the first document, not the second (it used to say document 1)",
        ),
        pytest.param(
            "# c\n---\nkind: Node\n...\n---\nkind: Pod\n---\nx: !!python/name:os.system\n",
            2,
            8,
            id="an unknown tag is located in its document",
        ),
    ],
)
def test_invalid_yaml_names_the_document_and_line(tmp_path: Path, text: str, document: int, line: int) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(ManifestError) as exc:
        load_manifests([f])
    assert exc.value.document == document
    assert exc.value.message.startswith(f"invalid YAML (line {line}, ")
    assert "\n" not in str(exc.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as exc:
        load_manifests([tmp_path / "nope.yaml"])
    assert str(exc.value) == f"{tmp_path / 'nope.yaml'}: no such file or directory"


def test_undecodable_file(tmp_path: Path) -> None:
    f = tmp_path / "bin.yaml"
    f.write_bytes(b"\xff\xfe\x00kind")
    with pytest.raises(ManifestError) as exc:
        load_manifests([f])
    # The document and line of the first byte that is not UTF-8 (tests/test_fuzz_inputs.py).
    assert exc.value.document == 0
    assert exc.value.message == "cannot read: not UTF-8: byte 0xff at line 1, column 1"


def test_a_pod_read_from_a_cluster_keeps_its_priority_when_its_class_is_missing(tmp_path: Path) -> None:
    # Running pods in a dump were admitted when their class existed; they keep their priority
    # and the loader says so (never silently 0).
    f = tmp_path / "dump.yaml"
    f.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: running, namespace: default, uid: u1, resourceVersion: '7'}\n"
                 "spec: {nodeName: n1, priorityClassName: high, priority: 1000, containers: [{name: c, image: x}]}\n")
    objs = load_manifests([f])
    assert objs.pods[0].priority == 1000
    assert objs.notes[0] == (f"{f}: document 0: pod default/running names PriorityClass high which is not in the "
                             "input; using its spec.priority 1000")


def test_a_pod_to_create_naming_a_missing_class_is_still_an_error(tmp_path: Path) -> None:
    f = tmp_path / "new.yaml"
    f.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: new, namespace: default}\n"
                 "spec: {priorityClassName: high, priority: 1000, containers: [{name: c, image: x}]}\n")
    with pytest.raises(ManifestError, match="no PriorityClass with name high was found"):
        load_manifests([f])
