"""Snapshots of a live cluster (kubesched.cluster.snapshot) through the local API server:

- every public conformance scenario (corpus 1, and corpus 3 with its configurations), loaded
  into the API server as the cluster it describes, then read back through the API, decides
  exactly as its manifests do (the whole trace, with --deterministic and --kube-version 1.30);
- a snapshot only LISTs (the recorded requests), in pages (``limit`` + ``continue``);
- it is consistent at one resourceVersion: what changes while it is read is not in it; a
  revision compacted meanwhile (410) starts it over, a bounded number of times;
- a resource the server does not serve is skipped with a note, a 403 is an error naming the
  verb, the resource and the ClusterRole, a malformed object is an error naming it.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from corpora import conformance_checker

from kubesched.cluster.live import ApiClient, ClusterConfig
from kubesched.cluster.snapshot import (
    ALL_SNAPSHOT_RESOURCES,
    DRA_SNAPSHOT_RESOURCES,
    SNAPSHOT_CALLS,
    SNAPSHOT_RESOURCES,
    USER_AGENT,
    Snapshot,
    snapshot_resources,
    take_snapshot,
)
from kubesched.config import load_config
from kubesched.errors import ApiError, KubeschedError, ManifestError
from kubesched.features import FEATURES_1_30, FEATURES_1_36
from kubesched.objects import load_manifests
from kubesched.simulation import Simulator
from kubesched.testing.apiserver import LocalApiServer

from .snapshot_helpers import load_into, read_scenario, snapshot_of

SHARED = Path(__file__).resolve().parents[3] / "shared"
CORPUS = SHARED / "conformance"
CORPUS3_ARCHIVE = SHARED / "conformance3" / "corpus.tar.xz"


@pytest.fixture(scope="module")
def server() -> Iterator[LocalApiServer]:
    """One API server for the module; each test starts from a new, empty cluster."""
    with LocalApiServer() as api:
        yield api


@pytest.fixture
def api(server: LocalApiServer) -> LocalApiServer:
    server.store.reset()
    server.clear_faults()
    server.requests.clear()
    return server


def _client(api: LocalApiServer) -> ApiClient:
    return ApiClient(ClusterConfig(server=api.url), qps=0, user_agent=USER_AGENT, calls=SNAPSHOT_CALLS)


def _node(name: str, cpu: str = "4", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def _pod(name: str, node: str = "", cpu: str = "1") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause",
                                            "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _names(snap: Snapshot, plural: str) -> list[str]:
    return [o["metadata"]["name"] for rl in snap.lists if rl.resource.plural == plural for o in rl.items]


# ------------------------------------------------------------------------------ the corpora
def _corpus1() -> list[Any]:
    names = sorted(p.stem for p in (CORPUS / "scenarios").glob("*.yaml")) if CORPUS.exists() else []
    return [pytest.param(n, id=n) for n in names] or [pytest.param(None, marks=pytest.mark.skip("no corpus"))]


def _corpus3() -> list[Any]:
    if not CORPUS3_ARCHIVE.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no corpus at {CORPUS3_ARCHIVE}"))]
    with tarfile.open(CORPUS3_ARCHIVE) as tar:
        names = sorted(Path(m.name).stem for m in tar.getmembers()
                       if m.isfile() and Path(m.name).parent.name == "scenarios" and m.name.endswith(".yaml"))
    return [pytest.param(n, id=n) for n in names]


@pytest.fixture(scope="module")
def corpus3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("conformance3")
    with tarfile.open(CORPUS3_ARCHIVE) as tar:
        tar.extractall(root, filter="data")
    return root


def _same_decisions(api: LocalApiServer, corpus: Path, name: str) -> None:
    """The cluster the scenario's manifests make, read back through the API, decides as the
    real kube-scheduler did on those manifests: the corpus's expected trace, every field the
    contract checks (tests/test_conformance.py holds the manifests to the same trace, so the
    two decide alike; one simulation per scenario keeps this within CI's time)."""
    features = FEATURES_1_30
    config_file = corpus / "configs" / f"{name}.yaml"
    config = load_config(config_file, features=features) if config_file.exists() else None
    scenario = read_scenario(corpus / "scenarios" / f"{name}.yaml")
    load_into(api, scenario, features)
    snap = snapshot_of(api, features, page_size=100)  # large clusters' pods come in several pages
    from_api = load_manifests([snap.inputs()], controllers="none", features=features)
    got = json.loads(json.dumps(Simulator(from_api, config, deterministic=True, features=features).run().trace()))
    check = conformance_checker()
    expected = json.loads((corpus / "expected" / f"{name}.json").read_text())
    diff = check.compare(expected, got, check.FIELDS)
    assert diff is None, f"{diff[0]}: {diff[1]}"
    assert {c.verb for c in api.calls(user_agent=USER_AGENT)} == {"list"}


@pytest.mark.parametrize("name", _corpus1())
def test_a_corpus1_cluster_read_through_the_api_decides_as_its_manifests(api: LocalApiServer, name: str) -> None:
    _same_decisions(api, CORPUS, name)


@pytest.mark.parametrize("name", _corpus3())
def test_a_corpus3_cluster_read_through_the_api_decides_as_its_manifests(api: LocalApiServer, corpus3: Path,
                                                                         name: str) -> None:
    _same_decisions(api, corpus3, name)


# ------------------------------------------------------------------------------ reading
def test_the_snapshot_only_lists_and_its_client_refuses_anything_else(api: LocalApiServer) -> None:
    api.create(_node("n1"))
    api.create(_pod("p", "n1"))
    with _client(api) as client:
        take_snapshot(client)
        with pytest.raises(KubeschedError, match="undeclared API call"):
            client.request("create", "pods", namespace="default", body=_pod("q"))
        with pytest.raises(KubeschedError, match="undeclared API call"):
            client.request("get", "pods", namespace="default", name="p")
    calls = api.calls()
    assert calls and {(c.verb, c.subresource) for c in calls} == {("list", "")}
    assert sorted(c.resource for c in calls) == sorted(ALL_SNAPSHOT_RESOURCES)


def test_small_pages_read_everything_in_several_pages(api: LocalApiServer) -> None:
    for i in range(7):
        api.create(_node(f"n{i}"))
        api.create(_pod(f"p{i}", f"n{i}"))
    with _client(api) as client:
        whole = take_snapshot(client)
        api.requests.clear()
        paged = take_snapshot(client, page_size=3)
    assert [rl.items for rl in paged.lists] == [rl.items for rl in whole.lists]
    assert {rl.resource.plural: rl.pages for rl in paged.lists if rl.pages > 1} == {
        "nodes": 3, "pods": 3, "namespaces": 2}  # 7, 7 and 4 objects in pages of 3
    assert len(api.calls(resource="pods")) == 3 and len(api.calls(resource="nodes")) == 3
    assert _names(paged, "nodes") == [f"n{i}" for i in range(7)]


def test_items_carry_kind_and_api_version_and_the_dump_is_a_kubectl_list(api: LocalApiServer) -> None:
    api.create(_node("n1"))
    with _client(api) as client:
        snap = take_snapshot(client, resources=("nodes", "priorityclasses"))
    dump = snap.as_list()
    assert dump["kind"] == "List" and dump["apiVersion"] == "v1" and dump["metadata"] == {"resourceVersion": ""}
    assert [(i["kind"], i["apiVersion"], i["metadata"]["name"]) for i in dump["items"]] == [
        ("Node", "v1", "n1"), ("PriorityClass", "scheduling.k8s.io/v1", "system-cluster-critical"),
        ("PriorityClass", "scheduling.k8s.io/v1", "system-node-critical")]


def test_pods_keep_the_order_they_were_written_in(api: LocalApiServer) -> None:
    for name in ("zeta", "alpha", "mid"):
        api.create(_pod(name))
    with _client(api) as client:
        snap = take_snapshot(client, resources=("pods",))
    assert _names(snap, "pods") == ["zeta", "alpha", "mid"]


# ------------------------------------------------------------------------------ consistency
def test_what_changes_after_the_first_list_is_not_in_later_lists(api: LocalApiServer) -> None:
    api.create(_node("n1", labels={"v": "1"}))
    api.create(_pod("a", "n1"))
    api.create(_pod("b", "n1"))
    changed: list[str] = []

    def meanwhile(plural: str, done: int, total: int, objects: int) -> None:
        if plural == "pods" and not changed:  # nodes were read; pods are next
            api.create(_pod("new", "n1"))
            api.delete("pods", "a", "default", {"gracePeriodSeconds": 0})
            api.patch("pods", "b", {"metadata": {"labels": {"changed": "yes"}}}, "default")
            api.patch("nodes", "n1", {"metadata": {"labels": {"v": "2"}}})
            changed.append(plural)

    with _client(api) as client:
        snap = take_snapshot(client, resources=("nodes", "pods"), progress=meanwhile)
    assert changed and snap.attempts == 1
    assert _names(snap, "pods") == ["a", "b"]
    pods = {o["metadata"]["name"]: o for rl in snap.lists for o in rl.items if o["kind"] == "Pod"}
    assert "changed" not in (pods["b"]["metadata"].get("labels") or {})
    assert all(int(o["metadata"]["resourceVersion"]) <= int(snap.resource_version) for _, o in snap.items())


def test_pages_after_a_change_are_still_read_at_the_first_revision(api: LocalApiServer) -> None:
    for name in ("a", "b", "c", "d"):
        api.create(_pod(name, "n1"))
    seen: list[int] = []

    def meanwhile(plural: str, done: int, total: int, objects: int) -> None:
        if plural == "pods" and objects == 2 and not seen:  # after the first page of two pods
            api.delete("pods", "c", "default", {"gracePeriodSeconds": 0})
            api.create(_pod("e", "n1"))
            seen.append(objects)

    with _client(api) as client:
        snap = take_snapshot(client, resources=("pods",), page_size=2, progress=meanwhile)
    assert seen and _names(snap, "pods") == ["a", "b", "c", "d"]


def test_a_revision_compacted_mid_snapshot_starts_it_over(api: LocalApiServer) -> None:
    api.create(_node("n1"))
    api.create(_pod("a", "n1"))
    compacted: list[str] = []

    def meanwhile(plural: str, done: int, total: int, objects: int) -> None:
        if plural == "pods" and not compacted:
            api.create(_pod("b", "n1"))
            api.compact()  # the revision of the nodes' list is gone: 410 on the pods' Exact LIST
            compacted.append(plural)

    with _client(api) as client:
        snap = take_snapshot(client, resources=("nodes", "pods"), progress=meanwhile)
    assert snap.attempts == 2
    assert _names(snap, "pods") == ["a", "b"]
    assert [c.code for c in api.calls(resource="pods")] == [410, 200]


def test_a_revision_expiring_every_time_is_a_clear_error(api: LocalApiServer) -> None:
    api.create(_node("n1"))

    def meanwhile(plural: str, done: int, total: int, objects: int) -> None:
        if plural == "pods":
            api.create(_pod(f"p{len(api.calls(resource='pods'))}"))
            api.compact()

    with _client(api) as client, pytest.raises(ApiError, match=r"the snapshot expired 3 times") as err:
        take_snapshot(client, resources=("nodes", "pods"), progress=meanwhile)
    assert err.value.status == 410
    assert len(api.calls(resource="nodes")) == 3


# ------------------------------------------------------------------------------ refusals
def test_a_resource_the_server_does_not_serve_is_skipped_with_a_note() -> None:
    with LocalApiServer(unserved=DRA_SNAPSHOT_RESOURCES) as api, _client(api) as client:
        api.create(_node("n1"))
        snap = take_snapshot(client)
    assert snap.skipped == ("deviceclasses.resource.k8s.io", "resourceslices.resource.k8s.io",
                            "resourceclaims.resource.k8s.io", "resourceclaimtemplates.resource.k8s.io")
    assert snap.notes()[0] == f"deviceclasses.resource.k8s.io is not served by {api.url}: skipped"
    assert [rl.resource.plural for rl in snap.lists] == list(SNAPSHOT_RESOURCES)


def test_a_forbidden_list_names_the_verb_the_resource_and_the_cluster_role(api: LocalApiServer) -> None:
    api.fail_next(1, 403, verbs=["list"], resources=["csidrivers"])
    with _client(api) as client, pytest.raises(ApiError) as err:
        take_snapshot(client)
    message = str(err.value)
    assert err.value.status == 403
    assert message.startswith(f"{api.url}: forbidden to list csidrivers.storage.k8s.io at the cluster scope")
    assert "apply deploy/snapshot/rbac.yaml (ClusterRole kubesched-snapshot)" in message


def test_the_release_decides_which_kinds_are_listed() -> None:
    assert snapshot_resources(FEATURES_1_30) == SNAPSHOT_RESOURCES
    assert snapshot_resources(FEATURES_1_36) == ALL_SNAPSHOT_RESOURCES


def test_a_malformed_object_from_the_api_is_an_error_naming_it(api: LocalApiServer) -> None:
    api.create(_node("n1"))
    # What the API server serves but kubesched cannot read: written behind its validation.
    api.store._objects["nodes"][("", "n1")]["status"]["allocatable"]["cpu"] = "lots"
    snap = snapshot_of(api, FEATURES_1_36)
    with pytest.raises(ManifestError) as err:
        load_manifests([snap.inputs()], features=FEATURES_1_36)
    assert str(err.value).startswith(f"{api.url}: nodes n1: status.allocatable.cpu: ")
