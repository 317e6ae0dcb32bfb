"""Workload controllers and kinds outside the scheduler's concern (kubesched.objects.workloads,
kubesched.objects.kinds, load_manifests): the pods v1.30's controllers would create for a
Deployment, ReplicaSet, ReplicationController, StatefulSet, DaemonSet or Job that lacks them,
what suppresses them, how they are admitted and scheduled; ignored and unknown kinds; the
examples/dump and examples/whatif inputs end to end."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.errors import ManifestError
from kubesched.objects import ClusterObjects, Pod, Toleration, load_manifests
from kubesched.objects.manifests import EPOCH_2024, Controllers, IgnoredObject
from kubesched.objects.parse import parse_time
from kubesched.simulation import Simulator
from kubesched.timeline import TimelineSimulator

ROOT = Path(__file__).resolve().parents[2]
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SUFFIX = f"[{ALPHABET}]{{5}}"
T = "2024-03-01T00:00:00Z"
T_S = 1709251200.0

API = {"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1",
       "Job": "batch/v1", "ReplicationController": "v1"}


# ------------------------------------------------------------------ builders
def node(name: str, zone: str | None = None, *, cpu: str = "4", taints: list[Any] | None = None,
         labels: dict[str, str] | None = None, unschedulable: bool = False) -> dict[str, Any]:
    lbl = {"kubernetes.io/hostname": name, **(labels or {})}
    if zone:
        lbl["topology.kubernetes.io/zone"] = zone
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": lbl}, "spec": spec,
            "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}


def ctrl(kind: str, name: str, *, ns: str | None = None, labels: dict[str, str] | None = None,
         pod_spec: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
         status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A controller manifest whose template carries ``labels`` (default app=<name>), selected by them."""
    labels = labels if labels is not None else {"app": name}
    pspec = pod_spec if pod_spec is not None else {"containers": [{"name": "c", "image": "img"}]}
    if kind == "Job":
        pspec = {"restartPolicy": "Never", **pspec}
    body: dict[str, Any] = {"template": {"metadata": {"labels": labels}, "spec": pspec}, **spec}
    if kind != "Job":
        body.setdefault("selector", labels if kind == "ReplicationController" else {"matchLabels": labels})
    md: dict[str, Any] = {"name": name, **(meta or {})}
    if ns:
        md["namespace"] = ns
    doc = {"apiVersion": API[kind], "kind": kind, "metadata": md, "spec": body}
    if status is not None:
        doc["status"] = status
    return doc


def pod(name: str, *, owner: tuple[str, str] | None = None, labels: dict[str, str] | None = None,
        node_name: str | None = None, phase: str | None = None, ns: str | None = None,
        meta: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, **(meta or {})}
    if ns:
        md["namespace"] = ns
    if labels:
        md["labels"] = labels
    if owner:
        md["ownerReferences"] = [{"apiVersion": API.get(owner[0], "v1"), "kind": owner[0], "name": owner[1],
                                  "controller": True}]
    s: dict[str, Any] = {"containers": [{"name": "c"}], **spec}
    if node_name:
        s["nodeName"] = node_name
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": s}
    if phase:
        doc["status"] = {"phase": phase}
    return doc


def write(path: Path, *docs: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def load(tmp_path: Path, *docs: Any, controllers: Controllers = "auto",
         ignore_unknown_kinds: bool = False) -> ClusterObjects:
    return load_manifests([write(tmp_path / "m.yaml", *docs)], controllers=controllers,
                          ignore_unknown_kinds=ignore_unknown_kinds)


def pods_of(objs: ClusterObjects, controller: str) -> list[Pod]:
    keys = objs.generated.get(controller, [])
    by_key = {p.key: p for p in objs.pods}
    return [by_key[k] for k in keys]


def counts(objs: ClusterObjects) -> dict[str, int]:
    return {k: len(v) for k, v in objs.generated.items()}


# ------------------------------------------------------------------ how many pods each controller gets
DS_TOLERATIONS_NEEDED = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]

EXPANSION_CASES: list[Any] = [
    ("a Deployment without replicas gets one pod",
     [ctrl("Deployment", "web")], "auto", {"Deployment default/web": 1}),
    ("a Deployment with 3 replicas gets 3 pods",
     [ctrl("Deployment", "web", replicas=3)], "auto", {"Deployment default/web": 3}),
    ("a paused Deployment gets no pods",
     [ctrl("Deployment", "web", replicas=3, paused=True)], "auto", {}),
    ("a Deployment scaled to zero gets its ReplicaSet but no pods",
     [ctrl("Deployment", "web", replicas=0)], "auto", {}),
    ("a Deployment that owns a ReplicaSet gets nothing and the ReplicaSet creates its missing replicas",
     [ctrl("Deployment", "web", replicas=2),
      ctrl("ReplicaSet", "web-abc", replicas=2, labels={"app": "web", "pod-template-hash": "abc"},
           meta={"ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                      "controller": True}]})],
     "auto", {"ReplicaSet default/web-abc": 2}),
    ("a Deployment whose ReplicaSet's pods are in the input gets nothing, even without the ReplicaSet",
     [ctrl("Deployment", "web", replicas=3),
      pod("web-abc-xyz12", owner=("ReplicaSet", "web-abc"), labels={"app": "web", "pod-template-hash": "abc"})],
     "auto", {}),
    ("a Deployment adopts an orphan ReplicaSet its selector matches",
     [ctrl("Deployment", "web", replicas=3),
      ctrl("ReplicaSet", "old", replicas=0, labels={"app": "web"}, meta={"labels": {"app": "web"}})],
     "auto", {}),
    ("a ReplicaSet with all its pods gets nothing",
     [ctrl("ReplicaSet", "rs", replicas=2), *(pod(f"rs-{c * 5}", owner=("ReplicaSet", "rs"), labels={"app": "rs"})
                                              for c in "ab")],
     "auto", {}),
    ("a StatefulSet with all its pods gets nothing",
     [ctrl("StatefulSet", "db", replicas=2), *(pod(f"db-{i}", owner=("StatefulSet", "db"), labels={"app": "db"})
                                               for i in range(2))],
     "auto", {}),
    ("a DaemonSet running on every node gets nothing",
     [node("n1"), node("n2"), ctrl("DaemonSet", "agent"),
      *(pod(f"agent-{n}", owner=("DaemonSet", "agent"), labels={"app": "agent"}, node_name=n) for n in ("n1", "n2"))],
     "auto", {}),
    ("a Job with all the pods it wants gets nothing",
     [ctrl("Job", "j", parallelism=2, completions=4),
      *(pod(f"j-{c * 5}", owner=("Job", "j"), labels={"app": "j"}) for c in "ab")],
     "auto", {}),
    ("pods owned by a controller of the same name in another namespace do not count",
     [ctrl("Job", "j"), pod("j-aaaaa", ns="other", owner=("Job", "j"), labels={"app": "j"})],
     "auto", {"Job default/j": 1}),
    ("a ReplicaSet with one of its pods gets the two missing replicas",
     [ctrl("ReplicaSet", "rs", replicas=3), pod("rs-aaaaa", owner=("ReplicaSet", "rs"), labels={"app": "rs"})],
     "auto", {"ReplicaSet default/rs": 2}),
    ("a ReplicaSet adopts orphan pods its selector matches",
     [ctrl("ReplicaSet", "rs", replicas=2), pod("a", labels={"app": "rs"}), pod("b", labels={"app": "rs"})],
     "all", {}),
    ("terminal and terminating pods of a ReplicaSet are replaced",
     [ctrl("ReplicaSet", "rs", replicas=2),
      pod("done", owner=("ReplicaSet", "rs"), labels={"app": "rs"}, node_name="n1", phase="Succeeded"),
      pod("leaving", owner=("ReplicaSet", "rs"), labels={"app": "rs"}, meta={"deletionTimestamp": T}),
      node("n1")],
     "auto", {"ReplicaSet default/rs": 2}),
    ("a ReplicationController gets its replicas",
     [ctrl("ReplicationController", "rc", replicas=2)], "all", {"ReplicationController default/rc": 2}),
    ("a StatefulSet gets only its missing ordinals",
     [ctrl("StatefulSet", "db", replicas=3), pod("db-1", owner=("StatefulSet", "db"), labels={"app": "db"})],
     "auto", {"StatefulSet default/db": 2}),
    ("a DaemonSet gets one pod per node",
     [node("n1"), node("n2"), node("n3"), ctrl("DaemonSet", "agent")], "auto", {"DaemonSet default/agent": 3}),
    ("a DaemonSet skips the nodes that already run its pod",
     [node("n1"), node("n2"), ctrl("DaemonSet", "agent"),
      pod("agent-aaaaa", owner=("DaemonSet", "agent"), labels={"app": "agent"}, node_name="n1")],
     "auto", {"DaemonSet default/agent": 1}),
    ("a DaemonSet skips a node its pending pod already targets by node affinity",
     [node("n1"), node("n2"), ctrl("DaemonSet", "agent"),
      pod("agent-aaaaa", owner=("DaemonSet", "agent"), labels={"app": "agent"},
          affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
              {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}})],
     "auto", {"DaemonSet default/agent": 1}),
    ("a DaemonSet skips a node whose NoSchedule taint it does not tolerate",
     [node("n1"), node("gpu", taints=DS_TOLERATIONS_NEEDED), ctrl("DaemonSet", "agent")],
     "auto", {"DaemonSet default/agent": 1}),
    ("a DaemonSet tolerating a node's taint runs there",
     [node("n1"), node("gpu", taints=DS_TOLERATIONS_NEEDED),
      ctrl("DaemonSet", "agent", pod_spec={"containers": [{"name": "c"}],
                                            "tolerations": [{"key": "dedicated", "operator": "Exists"}]})],
     "auto", {"DaemonSet default/agent": 2}),
    ("a DaemonSet runs on cordoned and pressured nodes, which its default tolerations cover",
     [node("n1", unschedulable=True,
           taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                   {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]),
      ctrl("DaemonSet", "agent")],
     "auto", {"DaemonSet default/agent": 1}),
    ("a DaemonSet ignores PreferNoSchedule taints when choosing nodes",
     [node("n1", taints=[{"key": "k", "effect": "PreferNoSchedule"}]), ctrl("DaemonSet", "agent")],
     "auto", {"DaemonSet default/agent": 1}),
    ("a DaemonSet honours its nodeSelector",
     [node("n1", labels={"disk": "ssd"}), node("n2"),
      ctrl("DaemonSet", "agent", pod_spec={"containers": [{"name": "c"}], "nodeSelector": {"disk": "ssd"}})],
     "auto", {"DaemonSet default/agent": 1}),
    ("a DaemonSet honours its required node affinity",
     [node("n1", "a"), node("n2", "b"),
      ctrl("DaemonSet", "agent", pod_spec={"containers": [{"name": "c"}], "affinity": {"nodeAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
              {"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["a"]}]}]}}}})],
     "auto", {"DaemonSet default/agent": 1}),
    ("a DaemonSet whose template names a node creates its pod there, bound",
     [node("n1"), node("n2"), ctrl("DaemonSet", "agent", pod_spec={"containers": [{"name": "c"}], "nodeName": "n2"})],
     "auto", {"DaemonSet default/agent": 1}),
    ("a Job gets parallelism pods",
     [ctrl("Job", "j", parallelism=2, completions=5)], "auto", {"Job default/j": 2}),
    ("a Job's pods are capped by its completions",
     [ctrl("Job", "j", parallelism=3, completions=2)], "auto", {"Job default/j": 2}),
    ("a Job without parallelism or completions gets one pod",
     [ctrl("Job", "j")], "auto", {"Job default/j": 1}),
    ("a Job's succeeded completions count against the pods it still needs",
     [ctrl("Job", "j", parallelism=3, completions=4, status={"succeeded": 2})], "auto", {"Job default/j": 2}),
    ("a work-queue Job gets no new pod once one succeeded",
     [ctrl("Job", "j", parallelism=2, status={"succeeded": 1})], "auto", {}),
    ("a Job with an active pod gets only the missing ones",
     [ctrl("Job", "j", parallelism=3, completions=10),
      pod("j-aaaaa", owner=("Job", "j"), labels={"app": "j"})], "auto", {"Job default/j": 2}),
    ("a suspended Job gets no pods",
     [ctrl("Job", "j", parallelism=2, suspend=True)], "auto", {}),
    ("a completed Job gets no pods",
     [ctrl("Job", "j", status={"conditions": [{"type": "Complete", "status": "True"}]})], "auto", {}),
    ("controllers none synthesizes nothing",
     [node("n1"), ctrl("Deployment", "web"), ctrl("DaemonSet", "agent"), ctrl("Job", "j")], "none", {}),
    ("auto leaves a lone ReplicaSet as written, as the conformance format means it",
     [ctrl("ReplicaSet", "rs", replicas=2)], "auto", {}),
    ("auto expands a ReplicaSet when the input has a Deployment",
     [ctrl("ReplicaSet", "rs", replicas=2), ctrl("Deployment", "web", replicas=0)], "auto",
     {"ReplicaSet default/rs": 2}),
    ("auto expands a StatefulSet when a pod has a controller reference",
     [ctrl("StatefulSet", "db", replicas=2), pod("x-aaaaa", owner=("ReplicaSet", "x"))],
     "auto", {"StatefulSet default/db": 2}),
    ("controllers all expands a lone StatefulSet",
     [ctrl("StatefulSet", "db", replicas=2)], "all", {"StatefulSet default/db": 2}),
]


@pytest.mark.parametrize("docs, mode, expected", [c[1:] for c in EXPANSION_CASES], ids=[c[0] for c in EXPANSION_CASES])
def test_controller_expansion(tmp_path: Path, docs: list[Any], mode: Controllers, expected: dict[str, int]) -> None:
    objs = load(tmp_path, *docs, controllers=mode)
    assert counts(objs) == expected
    for controller, keys in objs.generated.items():
        for p in pods_of(objs, controller):
            # Pending, unless the template names its node (then the pod is created bound there).
            assert p.node_name == p.raw["spec"].get("nodeName", "") and p.phase == "Pending"
            assert p.meta.controller_ref() is not None
        assert len(set(keys)) == len(keys)


def test_a_lone_replica_set_left_as_written_is_reported(tmp_path: Path) -> None:
    objs = load(tmp_path, ctrl("ReplicaSet", "rs", replicas=2), ctrl("ReplicationController", "rc", replicas=1),
                pod("rc-pod", labels={"app": "rc"}))
    assert objs.not_expanded == ["ReplicaSet default/rs"]  # the RC adopted its orphan: nothing missing
    assert [p.name for p in objs.pods] == ["rc-pod"]


# ------------------------------------------------------------------ what the pods look like
def test_deployment_creates_a_replica_set_and_its_pods(tmp_path: Path) -> None:
    objs = load(tmp_path, ctrl("Deployment", "web", ns="shop", replicas=3, meta={"uid": "d-uid"}))
    (rs,) = objs.workloads
    assert re.fullmatch(r"web-[4-9bcdf]{6,10}", rs.name), rs.name
    h = rs.name.removeprefix("web-")
    assert rs.kind == "ReplicaSet" and rs.namespace == "shop"
    ref = rs.meta.controller_ref()
    assert ref is not None
    assert (ref.kind, ref.name, ref.uid, ref.api_version) == ("Deployment", "web", "d-uid", "apps/v1")
    assert rs.selector is not None and dict(rs.selector.match_labels) == {"app": "web", "pod-template-hash": h}
    assert objs.generated_objects == [f"ReplicaSet shop/{rs.name}"]
    pods = pods_of(objs, "Deployment shop/web")
    assert len(pods) == 3
    for p in pods:
        assert re.fullmatch(rf"{rs.name}-{SUFFIX}", p.name), p.name
        assert dict(p.labels) == {"app": "web", "pod-template-hash": h}
        assert p.raw["metadata"]["generateName"] == f"{rs.name}-"
        pref = p.meta.controller_ref()
        assert pref is not None and (pref.kind, pref.name, pref.uid) == ("ReplicaSet", rs.name, rs.meta.uid)
    assert len({p.uid for p in pods}) == 3 and all(p.uid for p in pods)
    # Stable: the same input gives the same names and uids.
    again = load(tmp_path, ctrl("Deployment", "web", ns="shop", replicas=3, meta={"uid": "d-uid"}))
    assert [(p.name, p.uid) for p in again.pods] == [(p.name, p.uid) for p in pods]


def test_a_changed_template_gives_another_pod_template_hash(tmp_path: Path) -> None:
    a = load(tmp_path, ctrl("Deployment", "web"))
    b = load(tmp_path, ctrl("Deployment", "web", pod_spec={"containers": [{"name": "c", "image": "other"}]}))
    assert a.workloads[0].name != b.workloads[0].name


def test_replica_set_pods_are_owned_by_it_with_the_template_labels(tmp_path: Path) -> None:
    objs = load(tmp_path, ctrl("ReplicaSet", "rs", replicas=2, labels={"app": "rs", "tier": "x"}), controllers="all")
    for p in pods_of(objs, "ReplicaSet default/rs"):
        assert re.fullmatch(rf"rs-{SUFFIX}", p.name)
        assert dict(p.labels) == {"app": "rs", "tier": "x"}
        ref = p.meta.controller_ref()
        assert ref is not None and (ref.api_version, ref.kind, ref.name) == ("apps/v1", "ReplicaSet", "rs")


def test_statefulset_pods_have_ordinal_names_identity_labels_and_claims(tmp_path: Path) -> None:
    set_ = ctrl("StatefulSet", "db", replicas=3, serviceName="db",
                volumeClaimTemplates=[{"metadata": {"name": "data"},
                                       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                                                "resources": {"requests": {"storage": "10Gi"}}}}],
                pod_spec={"containers": [{"name": "c"}], "volumes": [{"name": "cfg", "configMap": {"name": "x"}}]},
                meta={"creationTimestamp": T})
    existing = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data-db-0"},
                "spec": {"storageClassName": "slow", "resources": {"requests": {"storage": "1Gi"}}}}
    objs = load(tmp_path, set_, existing, controllers="all")
    pods = pods_of(objs, "StatefulSet default/db")
    assert [p.name for p in pods] == ["db-0", "db-1", "db-2"]
    for i, p in enumerate(pods):
        assert p.labels["statefulset.kubernetes.io/pod-name"] == p.name
        assert p.labels["apps.kubernetes.io/pod-index"] == str(i)
        assert p.labels["controller-revision-hash"].startswith("db-")
        assert p.raw["spec"]["hostname"] == p.name and p.raw["spec"]["subdomain"] == "db"
        assert [(v.name, v.claim_name) for v in p.volumes] == [("data", f"data-{p.name}"), ("cfg", None)]
    # OrderedReady: created one after the other, after the set.
    assert [p.meta.creation_timestamp for p in pods] == [T_S + 1, T_S + 2, T_S + 3]
    # data-db-0 existed: kept as it is; the others are new, unbound, of the template's class.
    claims = {c.name: c for c in objs.pvcs}
    assert claims["data-db-0"].storage_class_name == "slow"
    for name in ("data-db-1", "data-db-2"):
        c = claims[name]
        assert (c.storage_class_name, c.volume_name, c.requested_storage) == ("fast", "", 10 * 2**30)
        assert dict(c.meta.labels) == {"app": "db"}
    assert objs.generated_objects == ["PersistentVolumeClaim default/data-db-1",
                                      "PersistentVolumeClaim default/data-db-2"]


def test_statefulset_ordinals_start_and_parallel_policy(tmp_path: Path) -> None:
    objs = load(tmp_path, ctrl("StatefulSet", "db", replicas=2, ordinals={"start": 5}, podManagementPolicy="Parallel",
                               meta={"creationTimestamp": T}), controllers="all")
    pods = pods_of(objs, "StatefulSet default/db")
    assert [(p.name, p.labels["apps.kubernetes.io/pod-index"]) for p in pods] == [("db-5", "5"), ("db-6", "6")]
    assert [p.meta.creation_timestamp for p in pods] == [T_S + 1, T_S + 1]


def test_a_class_less_claim_template_gets_the_default_storage_class(tmp_path: Path) -> None:
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "p",
          "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}
    objs = load(tmp_path, sc, ctrl("StatefulSet", "db", volumeClaimTemplates=[
        {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]), controllers="all")
    (claim,) = objs.pvcs
    assert (claim.name, claim.storage_class_name) == ("data-db-0", "standard")


DAEMON_DEFAULTS = [
    Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
    Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute"),
    Toleration("node.kubernetes.io/disk-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/memory-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/pid-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"),
]

DAEMON_TOLERATION_CASES: list[Any] = [
    ("a DaemonSet pod gets the default DaemonSet tolerations and no DefaultTolerationSeconds ones",
     {}, DAEMON_DEFAULTS),
    ("a hostNetwork DaemonSet pod also tolerates network-unavailable",
     {"hostNetwork": True},
     [*DAEMON_DEFAULTS, Toleration("node.kubernetes.io/network-unavailable", "Exists", "", "NoSchedule")]),
    ("a template toleration with seconds for a default one is replaced by the default",
     {"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                       "tolerationSeconds": 30}]},
     DAEMON_DEFAULTS),
    ("the template's own tolerations come first",
     {"tolerations": [{"key": "dedicated", "operator": "Exists"}]},
     [Toleration("dedicated", "Exists"), *DAEMON_DEFAULTS]),
]


@pytest.mark.parametrize("extra, expected", [c[1:] for c in DAEMON_TOLERATION_CASES],
                         ids=[c[0] for c in DAEMON_TOLERATION_CASES])
def test_daemonset_pod_tolerations(tmp_path: Path, extra: dict[str, Any], expected: list[Toleration]) -> None:
    objs = load(tmp_path, node("n1"), ctrl("DaemonSet", "agent", pod_spec={"containers": [{"name": "c"}], **extra}))
    (p,) = pods_of(objs, "DaemonSet default/agent")
    assert list(p.tolerations) == expected


def test_daemonset_pods_require_their_node_and_keep_the_rest_of_the_affinity(tmp_path: Path) -> None:
    preferred = [{"weight": 5, "preference": {"matchExpressions": [{"key": "k", "operator": "Exists"}]}}]
    affinity = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    objs = load(tmp_path, node("n1"), node("n2"),
                ctrl("DaemonSet", "agent", ns="kube-system",
                     pod_spec={"containers": [{"name": "c"}], "affinity": affinity},
                     meta={"annotations": {"deprecated.daemonset.template.generation": "4"}}))
    pods = pods_of(objs, "DaemonSet kube-system/agent")
    for p, target in zip(pods, ["n1", "n2"], strict=True):
        assert re.fullmatch(rf"agent-{SUFFIX}", p.name)
        na = p.raw["spec"]["affinity"]["nodeAffinity"]
        assert na["requiredDuringSchedulingIgnoredDuringExecution"] == {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [target]}]}]}
        assert na["preferredDuringSchedulingIgnoredDuringExecution"] == preferred
        assert p.labels["pod-template-generation"] == "4" and p.labels["controller-revision-hash"]
    # The template itself is unchanged.
    assert objs.controllers[0].raw["spec"]["template"]["spec"]["affinity"] == affinity


def test_job_pods(tmp_path: Path) -> None:
    objs = load(tmp_path, ctrl("Job", "migrate", parallelism=2, completions=2, meta={"uid": "job-uid"},
                               pod_spec={"restartPolicy": "OnFailure", "containers": [{"name": "c"}]}))
    pods = pods_of(objs, "Job default/migrate")
    assert len(pods) == 2
    for p in pods:
        assert re.fullmatch(rf"migrate-{SUFFIX}", p.name)
        assert p.raw["spec"]["restartPolicy"] == "OnFailure"
        assert dict(p.labels) == {"app": "migrate", "batch.kubernetes.io/controller-uid": "job-uid",
                                  "batch.kubernetes.io/job-name": "migrate", "controller-uid": "job-uid",
                                  "job-name": "migrate"}
        ref = p.meta.controller_ref()
        assert ref is not None and (ref.api_version, ref.kind, ref.uid) == ("batch/v1", "Job", "job-uid")


def test_indexed_job_pods_take_the_lowest_free_indexes(tmp_path: Path) -> None:
    running = pod("j-1-aaaaa", owner=("Job", "j"), labels={"app": "j"},
                  meta={"annotations": {"batch.kubernetes.io/job-completion-index": "1"}})
    objs = load(tmp_path, ctrl("Job", "j", completionMode="Indexed", completions=6, parallelism=3,
                               status={"completedIndexes": "0,2-3"}), running)
    pods = pods_of(objs, "Job default/j")
    assert [p.meta.annotations["batch.kubernetes.io/job-completion-index"] for p in pods] == ["4", "5"]
    for p in pods:
        index = p.labels["batch.kubernetes.io/job-completion-index"]
        assert re.fullmatch(rf"j-{index}-{SUFFIX}", p.name) and p.raw["spec"]["hostname"] == f"j-{index}"


# ------------------------------------------------------------------ admission, timestamps, order
def test_generated_pods_are_admitted_like_pod_documents(tmp_path: Path) -> None:
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    objs = load(tmp_path, pc, ctrl("Deployment", "web", pod_spec={"priorityClassName": "high",
                                                                   "containers": [{"name": "c"}]}))
    (p,) = objs.pods
    assert (p.priority, p.preemption_policy) == (1000, "PreemptLowerPriority")
    assert [t.key for t in p.tolerations] == ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    assert all(t.toleration_seconds == 300 for t in p.tolerations)


def test_pods_of_a_controller_with_a_timestamp_are_created_a_second_after_it(tmp_path: Path) -> None:
    objs = load(tmp_path, ctrl("Deployment", "web", replicas=2, meta={"creationTimestamp": T}))
    assert [p.meta.creation_timestamp for p in objs.pods] == [T_S + 1, T_S + 1]
    assert objs.latest_timestamp == T_S + 1
    assert objs.pods[0].raw["metadata"]["creationTimestamp"] == "2024-03-01T00:00:01Z"
    assert parse_time(objs.pods[0].raw["metadata"]["creationTimestamp"], "t") == T_S + 1


def test_a_controller_syncing_now_creates_its_pods_after_the_inputs_latest_timestamp(tmp_path: Path) -> None:
    # The node joined ten minutes after the DaemonSet: its pod is created when it joins.
    late = node("late")
    late["metadata"]["creationTimestamp"] = "2024-03-01T00:10:00Z"
    objs = load(tmp_path, late, ctrl("DaemonSet", "agent", meta={"creationTimestamp": T}))
    (p,) = objs.pods
    assert p.meta.creation_timestamp == T_S + 601


def test_generated_pods_take_their_controllers_place_in_document_order(tmp_path: Path) -> None:
    objs = load(tmp_path, pod("first"), ctrl("Deployment", "web", replicas=2), pod("last"))
    names = [p.name for p in objs.pods]
    assert names[0] == "first" and names[-1] == "last" and len(names) == 4
    assert [p.meta.creation_timestamp for p in objs.pods] == [EPOCH_2024 + i for i in (1, 2, 3, 4)]
    src = objs.source_of(objs.pods[1])
    assert src is not None and src.document == 1


def test_generated_pods_create_their_namespace(tmp_path: Path) -> None:
    objs = load(tmp_path, ctrl("Deployment", "web", ns="shop"))
    assert "shop" in {n.name for n in objs.namespaces}


# ------------------------------------------------------------------ invalid controllers
EXPANDING = "(while creating the pods its controller would create; --controllers none reads it as written)"
TEMPLATE_ERRORS: list[Any] = [
    ("a template without containers names the template field",
     [ctrl("Deployment", "web", pod_spec={})], 0, "spec.template.spec.containers", "Required value"),
    ("an invalid quantity in a template names the container field",
     [ctrl("DaemonSet", "ds", pod_spec={"containers": [{"name": "c", "resources": {"requests": {"cpu": "x"}}}]})],
     0, "spec.template.spec.containers[0].resources.requests.cpu", None),
    ("a template error inside a List names the item",
     [{"apiVersion": "v1", "kind": "List", "items": [node("n"), ctrl("Job", "j", pod_spec={"containers": [{}]})]}],
     0, "items[1].spec.template.spec.containers[0].name", "Required value"),
    ("a Deployment without a template is rejected",
     [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
       "spec": {"selector": {"matchLabels": {"a": "b"}}}}], 0, "spec.template", "Required value"),
    ("a Deployment without a selector is rejected",
     [{**ctrl("Deployment", "d"), "spec": {"template": ctrl("Deployment", "d")["spec"]["template"]}}],
     0, "spec.selector", "Required value"),
    ("a selector that does not select the template is rejected",
     [ctrl("Deployment", "d", selector={"matchLabels": {"app": "other"}})], 0, "spec.template.metadata.labels",
     "Invalid value: map[app:d]: `selector` does not match template `labels`"),
    ("a Deployment template may only restart Always",
     [ctrl("Deployment", "d", pod_spec={"restartPolicy": "Never", "containers": [{"name": "c"}]})], 0,
     "spec.template.spec.restartPolicy", 'Unsupported value: "Never": supported values: "Always"'),
    ("a Job template must not restart Always",
     [ctrl("Job", "j", pod_spec={"restartPolicy": "Always", "containers": [{"name": "c"}]})], 0,
     "spec.template.spec.restartPolicy", 'Unsupported value: "Always": supported values: "OnFailure", "Never"'),
    ("negative replicas are rejected",
     [ctrl("Deployment", "d", replicas=-1)], 0, "spec.replicas",
     "Invalid value: -1: must be greater than or equal to 0"),
    ("an Indexed Job needs completions",
     [ctrl("Job", "j", completionMode="Indexed", parallelism=2)], 0, "spec.completions",
     "Required value: when completion mode is Indexed"),
    ("a claim template without a name is rejected",
     [ctrl("StatefulSet", "s", volumeClaimTemplates=[{"spec": {}}]), ctrl("Deployment", "d")], 0,
     "spec.volumeClaimTemplates[0].metadata.name", "Required value"),
    ("an unknown PriorityClass in a template is reported at the template field",
     [node("n"), ctrl("Deployment", "d", pod_spec={"priorityClassName": "nope", "containers": [{"name": "c"}]})],
     1, "spec.template.spec.priorityClassName", "no PriorityClass with name nope was found"),
]


@pytest.mark.parametrize("docs, document, field, message", [c[1:] for c in TEMPLATE_ERRORS],
                         ids=[c[0] for c in TEMPLATE_ERRORS])
def test_invalid_controllers(tmp_path: Path, docs: list[Any], document: int, field: str, message: str | None) -> None:
    with pytest.raises(ManifestError) as exc:
        load(tmp_path, *docs)
    e = exc.value
    assert (e.file, e.document, e.field) == (str(tmp_path / "m.yaml"), document, field)
    if message is not None:
        assert e.message in (message, f"{message} {EXPANDING}")
    if field.startswith("spec.template") and "priorityClassName" not in field:
        assert e.message.endswith(EXPANDING)  # an error met creating the pods offers --controllers none


def test_a_lone_replica_set_is_not_validated_as_a_controller(tmp_path: Path) -> None:
    # Read as written (a selector for default spreading): its template is not a controller's.
    objs = load(tmp_path, ctrl("ReplicaSet", "rs", pod_spec={}))
    assert objs.pods == [] and objs.not_expanded == []


# ------------------------------------------------------------------ ignored and unknown kinds
def other(api_version: str, kind: str, name: str, ns: str | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if ns:
        md["namespace"] = ns
    return {"apiVersion": api_version, "kind": kind, "metadata": md}


IGNORED_CASES: list[Any] = [
    ("a ConfigMap is ignored", other("v1", "ConfigMap", "cfg", "kube-system"), "ConfigMap", "kube-system/cfg"),
    ("a Secret is ignored", other("v1", "Secret", "s"), "Secret", "s"),
    ("a core Event is ignored", other("v1", "Event", "e.1"), "Event", "e.1"),
    ("an events.k8s.io Event is ignored", other("events.k8s.io/v1", "Event", "e.2"), "Event", "e.2"),
    ("a ClusterRoleBinding is ignored", other("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "b"),
     "ClusterRoleBinding", "b"),
    ("an EndpointSlice is ignored", other("discovery.k8s.io/v1", "EndpointSlice", "x"), "EndpointSlice", "x"),
    ("an autoscaling/v2 HPA is ignored", other("autoscaling/v2", "HorizontalPodAutoscaler", "h"),
     "HorizontalPodAutoscaler", "h"),
    ("an autoscaling/v1 HPA is ignored", other("autoscaling/v1", "HorizontalPodAutoscaler", "h"),
     "HorizontalPodAutoscaler", "h"),
    ("a CronJob is ignored", other("batch/v1", "CronJob", "nightly"), "CronJob", "nightly"),
    ("a CustomResourceDefinition is ignored", other("apiextensions.k8s.io/v1", "CustomResourceDefinition", "w.x.io"),
     "CustomResourceDefinition", "w.x.io"),
    ("a webhook configuration is ignored",
     other("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "v"),
     "ValidatingWebhookConfiguration", "v"),
    ("a Lease is ignored", other("coordination.k8s.io/v1", "Lease", "l"), "Lease", "l"),
    ("a ControllerRevision is ignored", other("apps/v1", "ControllerRevision", "r"), "ControllerRevision", "r"),
    ("an Event without a name is reported by its generateName",
     {"apiVersion": "v1", "kind": "Event", "metadata": {"generateName": "e-"}}, "Event", "e-"),
]


@pytest.mark.parametrize("doc, kind, name", [c[1:] for c in IGNORED_CASES], ids=[c[0] for c in IGNORED_CASES])
def test_kinds_irrelevant_to_scheduling_are_skipped_and_reported(tmp_path: Path, doc: dict[str, Any], kind: str,
                                                                name: str) -> None:
    objs = load(tmp_path, node("n"), doc)
    assert objs.ignored == [IgnoredObject(str(tmp_path / "m.yaml"), 1, kind, name, doc["apiVersion"], True)]
    assert [n.name for n in objs.nodes] == ["n"]


UNKNOWN_CASES: list[Any] = [
    ("a misspelt kind", other("apps/v1", "Deploymnet", "d"), "kind", "unsupported kind 'Deploymnet'"),
    ("a custom resource", other("example.com/v1", "Widget", "w"), "kind", "unsupported kind 'Widget'"),
    ("an ignorable kind in another group is a custom resource", other("example.com/v1", "ConfigMap", "c"), "kind",
     "unsupported kind 'ConfigMap'"),
    ("a custom resource named like a kind kubesched reads", other("example.com/v1", "Deployment", "d"), "apiVersion",
     "unsupported apiVersion 'example.com/v1' for kind Deployment"),
]


@pytest.mark.parametrize("doc, field, message", [c[1:] for c in UNKNOWN_CASES], ids=[c[0] for c in UNKNOWN_CASES])
def test_unknown_kinds_are_errors_unless_ignored(tmp_path: Path, doc: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ManifestError) as exc:
        load(tmp_path, node("n"), {"apiVersion": "v1", "kind": "List", "items": [doc]})
    assert (exc.value.document, exc.value.field) == (1, f"items[0].{field}")
    assert exc.value.message.startswith(message)
    objs = load(tmp_path, node("n"), {"apiVersion": "v1", "kind": "List", "items": [doc]}, ignore_unknown_kinds=True)
    (ignored,) = objs.ignored
    assert (ignored.document, ignored.kind, ignored.name, ignored.known) == (1, doc["kind"], doc["metadata"]["name"],
                                                                            False)


def test_a_wrong_version_of_a_kind_kubesched_reads_stays_an_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as exc:
        load(tmp_path, other("apps/v1beta1", "Deployment", "d"), ignore_unknown_kinds=True)
    assert exc.value.field == "apiVersion"


def test_a_non_string_kind_stays_an_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as exc:
        load(tmp_path, {"apiVersion": "v1", "kind": ["Pod"], "metadata": {"name": "p"}}, ignore_unknown_kinds=True)
    assert exc.value.field == "kind"


# ------------------------------------------------------------------ scheduling the generated pods
def big_node(name: str, zone: str) -> dict[str, Any]:
    """Capacity so large that resource scores cannot tell nodes apart."""
    d = node(name, zone)
    d["status"]["capacity"] = {"cpu": "1000", "memory": "1000Gi", "pods": "110"}
    return d


SPREAD_POD: dict[str, Any] = {
    "containers": [{"name": "c", "resources": {"requests": {"cpu": "10m", "memory": "10Mi"}}}]}


@pytest.mark.parametrize("deterministic", [True, False], ids=["in the conformance procedure", "on the queue's clock"])
def test_a_deployments_replicas_spread_over_zones_through_their_generated_replica_set(
        tmp_path: Path, deterministic: bool) -> None:
    nodes = [big_node("n-a", "a"), big_node("n-b", "b"), big_node("n-c", "c")]
    objs = load(tmp_path, *nodes, ctrl("Deployment", "web", replicas=3, pod_spec=SPREAD_POD))
    sim = Simulator(objs, deterministic=True) if deterministic else TimelineSimulator(objs, seed=1)
    final = sim.run().final
    assert len(final) == 3
    assert sorted(n for n in final.values() if n) == ["n-a", "n-b", "n-c"]


def test_without_a_controller_the_same_pods_are_not_spread(tmp_path: Path) -> None:
    # The contrast: bare pods with the same labels have no default selector, every node
    # scores the same and the conformance procedure's tie-break picks the lowest name.
    nodes = [big_node("n-a", "a"), big_node("n-b", "b"), big_node("n-c", "c")]
    bare = [pod(f"web-{i}", labels={"app": "web"}, **SPREAD_POD) for i in range(3)]
    final = Simulator(load(tmp_path, *nodes, *bare), deterministic=True).run().final
    assert sorted(final.values()) == ["n-a", "n-a", "n-a"]  # type: ignore[type-var]


def test_daemonset_pods_land_one_per_node_and_respect_taints(tmp_path: Path) -> None:
    nodes = [node("n1"), node("n2"), node("gpu", taints=DS_TOLERATIONS_NEEDED), node("full", cpu="1")]
    busy = pod("hog", node_name="full", containers=[{"name": "c", "resources": {"requests": {"cpu": "1"}}}])
    agent = ctrl("DaemonSet", "agent", ns="kube-system",
                 pod_spec={"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]})
    objs = load(tmp_path, *nodes, busy, agent)
    pods = pods_of(objs, "DaemonSet kube-system/agent")
    targets = {p.key: p.raw["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
               ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0] for p in pods}
    assert sorted(targets.values()) == ["full", "n1", "n2"]  # not the tainted gpu node
    result = Simulator(objs, deterministic=True).run()
    for key, target in targets.items():
        if target == "full":
            assert result.final[key] is None
        else:
            assert result.final[key] == target
    (failed,) = [s.attempt for s in result.steps if s.attempt.outcome != "Scheduled"]
    # NodeAffinity's PreFilterResult narrows the search to the one node the pod requires; 1.36
    # counts the other nodes in the message.
    assert failed.message == ("0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) "
                              "[NodeAffinity]. no new claims to deallocate, preemption: 0/4 nodes are available: "
                              "1 No preemption victims found for incoming pod, 3 Preemption is not helpful for "
                              "scheduling.")


# ------------------------------------------------------------------ the CLI and the examples
def run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_simulate_reports_ignored_and_generated_objects(tmp_path: Path) -> None:
    f = write(tmp_path / "m.yaml", node("n1"), ctrl("Deployment", "web", replicas=2), other("v1", "ConfigMap", "a"),
              other("v1", "ConfigMap", "b"), other("v1", "Secret", "s"), other("example.com/v1", "Widget", "w"))
    r = run("simulate", str(f), "--seed", "1", "--ignore-unknown-kinds")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == "ignored 4 objects: 2 ConfigMap, 1 Secret, 1 Widget (unknown kind)"
    assert lines[1] == ("generated 2 pods from 1 controller, the pods their controllers would create next "
                        "(--controllers none reads the input as written):")
    assert re.fullmatch(r"  Deployment default/web: 2 pods \(it controls no ReplicaSet in the input: its controller "
                        r"creates ReplicaSet web-\w+ with 2 replicas\)", lines[2])
    r = run("simulate", str(f), "--seed", "1", "--ignore-unknown-kinds", "-o", "json")
    out = json.loads(r.stdout)
    assert [(i["kind"], i["name"], i["known"]) for i in out["ignored"]] == [
        ("ConfigMap", "a", True), ("ConfigMap", "b", True), ("Secret", "s", True), ("Widget", "w", False)]
    (keys,) = out["generated"].values()
    assert list(out["generated"]) == ["Deployment default/web"] and all(out["placements"][k] == "n1" for k in keys)
    assert len(out["generatedObjects"]) == 1 and out["generatedObjects"][0].startswith("ReplicaSet default/web-")


def test_simulate_without_ignore_unknown_kinds_names_the_unknown_kind(tmp_path: Path) -> None:
    f = write(tmp_path / "m.yaml", node("n1"), other("example.com/v1", "Widget", "w"))
    r = run("simulate", str(f))
    assert r.exit_code == 2
    assert r.stderr.startswith(f"error: {f}: document 1: kind: unsupported kind 'Widget' (supported: ")
    assert r.stderr.rstrip().endswith("--ignore-unknown-kinds skips it)")


@pytest.mark.parametrize("mode, pods", [("auto", 0), ("all", 2), ("none", 0)],
                         ids=["auto leaves a lone StatefulSet as written", "all expands it", "none leaves it"])
def test_simulate_controllers_option(tmp_path: Path, mode: str, pods: int) -> None:
    f = write(tmp_path / "m.yaml", node("n1"), ctrl("StatefulSet", "db", replicas=2))
    out = json.loads(run("simulate", str(f), "--controllers", mode, "-o", "json").stdout)
    assert len(out["placements"]) == pods
    assert out["notExpanded"] == (["StatefulSet default/db"] if mode == "auto" else [])


def test_the_dump_example_simulates_with_every_pending_pod_placed_or_explained() -> None:
    objs = load_manifests([ROOT / "examples" / "dump"])
    assert {i.kind for i in objs.ignored} >= {"ConfigMap", "Secret", "Event", "Endpoints", "EndpointSlice", "CronJob",
                                              "HorizontalPodAutoscaler", "ServiceAccount"}
    assert all(i.known for i in objs.ignored)
    # Every controller has its pods, except kube-proxy on the node that just joined.
    assert list(objs.generated) == ["DaemonSet kube-system/kube-proxy"]
    pending = [p.key for p in objs.pods if not p.node_name and not p.is_terminal]
    result = TimelineSimulator(objs, seed=1).run()
    for key in pending:
        assert result.final[key] or result.pending.get(key), key
    (proxy,) = objs.generated["DaemonSet kube-system/kube-proxy"]
    assert result.final[proxy] == "worker-3"
    assert result.final["shop/web-6b7f9c5d84-tz8rh"] == "worker-3"  # the zone with no web replica
    assert result.final["shop/analytics-5f6d8b7c9d-q2w8e"] is None
    assert "3 Insufficient cpu" in result.pending["shop/analytics-5f6d8b7c9d-q2w8e"]
    r = run("simulate", str(ROOT / "examples" / "dump"), "--seed", "1")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("ignored 14 objects: 3 ConfigMap, 3 Event, ")
    assert "generated 1 pod from 1 controller, " in r.stdout
    assert "  DaemonSet kube-system/kube-proxy: 1 pod (no pod of it on a node it targets)" in r.stdout


def test_the_whatif_example_places_the_deployment() -> None:
    r = run("simulate", str(ROOT / "examples" / "whatif"), "-o", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    (pods,) = out["generated"].values()
    assert len(pods) == 4 and all(out["placements"][k] for k in pods)
    # Three zones, four replicas: every zone gets one, the tight node-c no more than one.
    placed = sorted(out["placements"][k] for k in pods)
    assert set(placed) == {"node-a", "node-b", "node-c"} and placed.count("node-c") == 1
