"""OpportunisticBatching end to end (1.36; schedule_one.go: schedulePod / findNodesThatFitPod with
the profile's OpportunisticBatch): pods of one signature that go one per node take the next node
of the previous cycle's priority list, checked by the filters alone and never scored; anything
in between — another signature, another profile's pod, a failure, 500 ms, a pod that still fits
where the last one went — breaks the batch. 1.30 and the default profile never batch.

The runs are the timeline's (the scheduling queue on a virtual clock: pods created at the same
second are scheduled at the same instant) unless a test drives the scheduler itself."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node, make_pod

from kubesched.config import parse_config
from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features, features_for
from kubesched.objects import ClusterObjects, Node, Pod
from kubesched.simulation import Simulator
from kubesched.timeline import TimelineResult, TimelineSimulator

PTS_LIST = {"name": "PodTopologySpread", "args": {"defaultingType": "List"}}
GATE_OFF = features_for("1.36", ["OpportunisticBatching=false"])


def nodes(count: int = 6) -> list[Node]:
    return [make_node().name(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110).obj() for i in range(count)]


def web(name: str, features: Features = FEATURES_1_36, *, second: int = 0, port: int | None = 8080,
        cpu: str = "1", scheduler: str | None = None, label: str = "web") -> Pod:
    """A replica that fits once per node (its host port), created ``second`` s after the start."""
    b = make_pod().name(name).label("app", label).creation(f"2024-01-01T00:00:{second:02d}Z")
    b = b.host_port(port) if port is not None else b
    b = b.req(cpu=cpu)
    if scheduler:
        b = b.scheduler_name(scheduler)
    return b.obj(features)


def run(pods: list[Pod], features: Features = FEATURES_1_36, *, profiles: list[dict[str, Any]] | None = None,
        node_list: list[Node] | None = None) -> tuple[list[tuple[str, str | None, str]], TimelineSimulator,
                                                      TimelineResult]:
    """The timeline's attempts as (pod, node, hint), the simulator and its result."""
    cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "profiles": profiles if profiles is not None else [{"pluginConfig": [PTS_LIST]}]},
                       features=features)
    objs = ClusterObjects(nodes=node_list or nodes(), pods=pods,
                          latest_timestamp=max(p.meta.creation_timestamp or 0.0 for p in pods))
    sim = TimelineSimulator(objs, cfg, features=features, deterministic=True)
    result = sim.run()
    return [(s.attempt.pod.name, s.attempt.node, s.attempt.node_hint) for s in result.steps], sim, result


def placed(steps: list[tuple[str, str | None, str]]) -> list[str | None]:
    return [node for _, node, _ in steps]


@pytest.mark.parametrize(("features", "profiles", "want"), [
    pytest.param(FEATURES_1_36, None, ["n0", "n5", "n4", "n3", "n2"],
                 id="1.36 puts replicas on the previous list's next nodes, in heap order"),
    pytest.param(GATE_OFF, None, ["n0", "n1", "n2", "n3", "n4"],
                 id="1.36 without the gate scores every pod: the first tied node found wins"),
    pytest.param(FEATURES_1_30, None, ["n0", "n1", "n2", "n3", "n4"], id="1.30 has no batching"),
    pytest.param(FEATURES_1_36, [{}], ["n0", "n1", "n2", "n3", "n4"],
                 id="the default profile never batches: System spreading signs no pod"),
    pytest.param(FEATURES_1_36, [{"plugins": {"multiPoint": {"disabled": [{"name": "PodTopologySpread"}]}}}],
                 ["n0", "n5", "n4", "n3", "n2"], id="a profile without PodTopologySpread batches"),
])
def test_one_per_node_replicas_take_the_batch_s_next_node(features: Features, profiles: list[dict[str, Any]] | None,
                                                           want: list[str]) -> None:
    steps, _, _ = run([web(f"p{i}", features) for i in range(5)], features, profiles=profiles)
    assert placed(steps) == want


def test_a_hinted_pod_is_filtered_on_its_node_alone_and_not_scored() -> None:
    cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "profiles": [{"pluginConfig": [PTS_LIST]}]}, features=FEATURES_1_36)
    pods = [web("p0"), web("p1")]
    sim = TimelineSimulator(ClusterObjects(nodes=nodes(), pods=pods, latest_timestamp=pods[0].meta.creation_timestamp
                                           or 0.0), cfg, features=FEATURES_1_36, deterministic=True)
    result = sim.run()
    first, second = (s.attempt for s in result.steps)
    assert (first.node_hint, len(first.feasible), first.scores is not None) == ("", 6, True)
    assert (second.node_hint, second.feasible, second.scores) == ("n5", ["n5"], None)
    batch = sim.profiles["default-scheduler"].batch
    assert batch is not None and batch.batched_pods == 1


def test_the_batch_is_used_up_then_a_new_one_starts() -> None:
    # Three nodes, five replicas: p0 n0, p1 n2, p2 n1 (the list is empty now), p3 and p4 fit nowhere.
    steps, sim, _ = run([web(f"p{i}") for i in range(5)], node_list=nodes(3))
    assert steps[:3] == [("p0", "n0", ""), ("p1", "n2", "n2"), ("p2", "n1", "n1")]
    assert all(node is None for _, node, _ in steps[3:])


@pytest.mark.parametrize(("pods", "profiles", "want", "flushed"), [
    pytest.param([web("p0"), web("p1"), web("db", label="db"), web("p2")], None,
                 [("p0", "n0", ""), ("p1", "n5", "n5"), ("db", "n1", ""), ("p2", "n2", "")],
                 "pod_incompatible",
                 id="a pod of another signature in between breaks the batch"),
    pytest.param([web("p0"), web("p1"), web("big", cpu="100", port=None), web("p2")], None,
                 [("p0", "n0", ""), ("p1", "n5", "n5"), ("big", None, ""), ("p2", "n1", ""), ("big", None, "")],
                 "pod_skipped",
                 id="a pod that fails in between breaks the batch"),
    pytest.param([web("p0"), web("p1"), web("o", scheduler="other", port=9090), web("p2")],
                 [{"schedulerName": "default-scheduler", "pluginConfig": [PTS_LIST]},
                  {"schedulerName": "other", "pluginConfig": [PTS_LIST]}],
                 [("p0", "n0", ""), ("p1", "n5", "n5"), ("o", "n1", ""), ("p2", "n2", "")],
                 "pod_skipped",
                 id="a pod of another profile in between breaks the batch"),
    pytest.param([web("p0"), web("p1"), web("p2", second=1)], None,
                 [("p0", "n0", ""), ("p1", "n5", "n5"), ("p2", "n1", "")],
                 "expired",
                 id="a batch older than 500 ms is dropped"),
])
def test_anything_in_between_breaks_the_batch(pods: list[Pod], profiles: list[dict[str, Any]] | None,
                                              want: list[tuple[str, str | None, str]], flushed: str) -> None:
    steps, sim, _ = run(pods, profiles=profiles)
    assert steps == want
    batch = sim.profiles["default-scheduler"].batch
    assert batch is not None and batch.flushes[flushed] >= 1


def test_pods_that_still_fit_where_the_last_one_went_are_scored() -> None:
    # No host port: the previous pod's node still fits, so its score may have changed.
    steps, sim, _ = run([web(f"p{i}", port=None) for i in range(4)])
    assert [hint for _, _, hint in steps] == ["", "", "", ""]
    batch = sim.profiles["default-scheduler"].batch
    assert batch is not None and batch.flushes["node_not_full"] == 3


def test_a_hint_that_no_longer_fits_is_dropped_for_a_full_cycle() -> None:
    """The hint is checked with the filters: when the cluster changed under it, the pod is
    scheduled over all nodes and that cycle's list becomes the batch."""
    cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "profiles": [{"pluginConfig": [PTS_LIST]}]}, features=FEATURES_1_36)
    pods = [web("p0"), web("p1"), web("p2")]
    sim = Simulator(ClusterObjects(nodes=nodes(), pods=pods, latest_timestamp=0.0), cfg, features=FEATURES_1_36,
                    deterministic=True)
    first = sim.scheduler.schedule_one(sim.current[pods[0].uid])
    # Someone else takes port 8080 on n5, the batch's next node.
    sim.cache.add_pod(make_pod().name("squatter").host_port(8080).node("n5").obj())
    second = sim.scheduler.schedule_one(sim.current[pods[1].uid])
    third = sim.scheduler.schedule_one(sim.current[pods[2].uid])
    assert [(a.node, a.node_hint) for a in (first, second, third)] == [("n0", ""), ("n1", "n5"), ("n4", "n4")]
    batch = sim.profiles["default-scheduler"].batch
    assert batch is not None and (batch.attempts["hint_not_used"], batch.attempts["hint_used"]) == (1, 1)


def test_the_conformance_procedure_steps_a_second_per_pod_so_its_batches_expire() -> None:
    # `simulate --deterministic` (Simulator) advances its clock by one second per attempt.
    cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "profiles": [{"pluginConfig": [PTS_LIST]}]}, features=FEATURES_1_36)
    pods = [web(f"p{i}") for i in range(3)]
    sim = Simulator(ClusterObjects(nodes=nodes(), pods=pods, latest_timestamp=0.0), cfg, features=FEATURES_1_36,
                    deterministic=True)
    result = sim.run()
    assert [s.attempt.node for s in result.steps] == ["n0", "n1", "n2"]
    batch = sim.profiles["default-scheduler"].batch
    assert batch is not None and batch.flushes["expired"] == 2


@pytest.mark.parametrize(("features", "want"), [
    pytest.param(FEATURES_1_36, {
        "scheduler_batch_attempts_total": [
            {"labels": {"profile": "default-scheduler", "result": "hint_used"}, "value": 2},
            {"labels": {"profile": "default-scheduler", "result": "no_hint"}, "value": 2}],
        "scheduler_batch_cache_flushed_total": [
            {"labels": {"profile": "default-scheduler", "reason": "expired"}, "value": 1}]},
        id="1.36 counts batch attempts and flushes per profile"),
    pytest.param(FEATURES_1_30, {}, id="1.30 has no batch metrics"),
])
def test_the_timeline_reports_kube_scheduler_s_batch_metrics(features: Features, want: dict[str, Any]) -> None:
    pods = [web("p0", features), web("p1", features), web("p2", features), web("p3", features, second=1)]
    _, _, result = run(pods, features)
    got = {k: v for k, v in result.metrics.as_dict("default-scheduler").items() if "batch" in k}
    assert got == want


def test_a_profile_that_signs_no_pod_counts_the_same_batch_metrics_without_signing() -> None:
    """The default profile (System spreading refuses every pod) skips the batch's bookkeeping;
    its attempts and flushes are what signing every pod and storing every list would count."""
    pods = [web("p0"), web("p1"), web("p2", port=None), web("p3", second=1), web("p4", cpu="9")]
    counts = []
    for fast in (True, False):
        cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                            "profiles": [{}]}, features=FEATURES_1_36)
        objs = ClusterObjects(nodes=nodes(), pods=pods, latest_timestamp=1.0)
        sim = TimelineSimulator(objs, cfg, features=FEATURES_1_36, deterministic=True)
        fwk = sim.profiles["default-scheduler"]
        assert fwk.signs_no_pod
        fwk.signs_no_pod = fast
        result = sim.run()
        batch = fwk.batch
        assert batch is not None
        counts.append((dict(batch.attempts), dict(batch.flushes), [s.attempt.node for s in result.steps]))
    assert counts[0] == counts[1]
    # Six attempts past PreFilter (the oversized p4 twice), four pods placed among several nodes.
    assert counts[0][:2] == ({"no_hint": 6}, {"pod_not_batchable": 4})
