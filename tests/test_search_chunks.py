"""The search for feasible nodes evaluates the batch filters in chunks of rows from the start
index (findNodesThatPassFilters with one worker, at a cost that grows with numNodesToFind
rather than with the cluster): on random clusters of 100-700 nodes, where sampling decides,
every cycle must give exactly what the node-by-node one-worker loop gives (the general path,
RunFilterPluginsWithNominatedPods per node) — the feasible nodes in order, every failure's
status, the rejecting plugins and nextStartNodeIndex — whatever the chunk sizes: the default
ones, one row at first (many chunks), or every row at once (the former all-rows evaluation)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod

from kubesched.framework import CycleState, PodInfo, Status
from kubesched.objects import Node, Pod
from kubesched.scheduler import Attempt, Diagnosis, Scheduler

from .test_scheduler import make_scheduler

ZONES = ["a", "b", "c"]
HOSTNAME = "kubernetes.io/hostname"


def _cluster(rng: random.Random) -> tuple[list[Node], list[Pod]]:
    nodes: list[Node] = []
    for i in range(rng.randint(100, 700)):
        b = make_node().name(f"node-{i:03d}").capacity(cpu=rng.choice(["1", "2", "4"]), memory="8Gi",
                                                       pods=rng.choice([2, 3, 110, 110]))
        b = b.label(HOSTNAME, f"node-{i:03d}")
        if rng.random() < 0.95:
            b = b.label("zone", rng.choice(ZONES))
        if rng.random() < 0.1:
            b = b.taint("dedicated", "x")
        if rng.random() < 0.03:
            b = b.unschedulable()
        nodes.append(b.obj())
    # Long runs of full nodes: the pass rate varies along the order, so chunks are resized.
    full_from = rng.randrange(len(nodes))
    full_to = min(len(nodes), full_from + rng.randint(0, len(nodes)))
    running: list[Pod] = []
    for j in range(rng.randint(0, len(nodes))):
        at = rng.randrange(full_from, full_to) if full_to > full_from and rng.random() < 0.7 \
            else rng.randrange(len(nodes))
        b = make_pod().name(f"run-{j}").uid(f"run-{j}").node(nodes[at].name).req(cpu=rng.choice(["100m", "900m"]))
        if rng.random() < 0.4:
            b = b.label("app", rng.choice(["x", "y"]))
        if rng.random() < 0.1:
            b = b.affinity({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": HOSTNAME}]}})
        running.append(b.obj())
    return nodes, running


def _incoming(rng: random.Random, i: int) -> Pod:
    p = make_pod().name(f"incoming-{i}").uid(f"incoming-{i}").label("app", rng.choice(["x", "y"]))
    p = p.req(cpu=rng.choice(["100m", "500m", "1500m", "3"])).priority(rng.choice([0, 10, 100]))
    if rng.random() < 0.3:
        p = p.node_affinity_in("zone", rng.sample(ZONES, rng.randint(1, 2)))
    if rng.random() < 0.3:
        p = p.spread(1, "zone", selector={"matchLabels": {"app": "x"}})
    if rng.random() < 0.3:
        p = p.affinity({**p.m["spec"].get("affinity", {}), "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": HOSTNAME}]}})
    if rng.random() < 0.3:
        p = p.toleration(key="dedicated", operator="Exists")
    return p.obj()


def _node_by_node(s: Scheduler) -> None:
    """Force the general path: every active filter plugin run node by node."""
    fwk = s.profiles["default-scheduler"]

    def batch_filters(state: CycleState) -> tuple[list[Any], list[Any]]:
        active = [p for p in fwk.filter if p.name not in state.skip_filter_plugins]
        return ([], active) if active else ([], [])

    fwk.batch_filters = batch_filters  # type: ignore[method-assign]


def _observed(s: Scheduler, a: Attempt) -> tuple[Any, ...]:
    return (a.outcome, a.node, [ni.name for ni in a.feasible_nodes],
            {n: (st.code, st.reasons, st.plugin) for n, st in a.diagnosis.node_to_status.items()},
            sorted(a.diagnosis.unschedulable_plugins), s.next_start_node_index, a.message)


@pytest.mark.parametrize("chunks", ["default", "one row first", "all rows at once"])
@pytest.mark.parametrize("seed", range(12), ids=lambda s: f"random cluster {s}")
def test_the_chunked_search_equals_the_node_by_node_loop(seed: int, chunks: str, monkeypatch: Any) -> None:
    rng = random.Random(seed)
    nodes, running = _cluster(rng)
    percentage = rng.choice([0, 0, 1, 5, 10, 30, 100])
    tested = make_scheduler(nodes, running, percentage=percentage)
    reference = make_scheduler(nodes, running, percentage=percentage)
    _node_by_node(reference)
    if chunks == "one row first":
        monkeypatch.setattr(Scheduler, "_first_chunk", staticmethod(lambda k, n: 1))
    elif chunks == "all rows at once":
        monkeypatch.setattr(Scheduler, "_first_chunk", staticmethod(lambda k, n: n))
    start = rng.randrange(len(nodes))
    tested.next_start_node_index = reference.next_start_node_index = start
    # Nominated pods of several priorities on some nodes, a few crowded (they count for pods
    # of lower or equal priority: RunFilterPluginsWithNominatedPods), changed between cycles
    # (the scheduler keeps its view of them in step with the nominator's change log).
    nominees: list[Pod] = []

    def nominate(pod: Pod, at: str) -> None:
        for s in (tested, reference):
            s.nominator.add(PodInfo(pod), at)

    def new_nominee(j: int) -> Pod:
        nominee = make_pod().name(f"nominee-{j}").uid(f"nominee-{j}").req(cpu=rng.choice(["500m", "2"]))
        return nominee.priority(rng.choice([0, 10, 50, 1000])).obj()

    crowded = rng.sample(nodes, 3)
    for j in range(rng.randint(0, 40)):
        nominees.append(new_nominee(j))
        nominate(nominees[-1], rng.choice(crowded if rng.random() < 0.3 else nodes).name)
    for i in range(8):
        pod = _incoming(rng, i)
        for _ in range(rng.randint(0, 4)):
            change = rng.random()
            if change < 0.4 and nominees:  # moved, or cleared
                nominate(rng.choice(nominees), rng.choice(nodes).name if rng.random() < 0.8 else "")
            elif change < 0.6 and nominees:
                gone = nominees.pop(rng.randrange(len(nominees)))
                for s in (tested, reference):
                    s.nominator.delete(gone)
            else:
                nominees.append(new_nominee(100 + 10 * i + len(nominees)))
                nominate(nominees[-1], rng.choice(nodes).name)
        if rng.random() < 0.4:
            # The pod itself nominated (a preemptor retried): never added to its own filtering.
            nominate(pod, rng.choice(crowded).name)
        got = _observed(tested, tested.schedule_one(pod))
        want = _observed(reference, reference.schedule_one(pod))
        assert got == want, f"cycle {i}"


def test_deferred_statuses_enter_the_map_when_read_in_recording_order() -> None:
    d = Diagnosis()
    first, second = Status.unschedulable("a"), Status.unschedulable("b")
    d.node_to_status["nominated"] = first
    d.defer_statuses(np.array(["n2", "nominated", "n1"], object), np.array([second, second, second], object))
    # "nominated" is in both: the count must not take it twice.
    assert d.status_count() == 3
    assert list(d.node_to_status.items()) == [("nominated", second), ("n2", second), ("n1", second)]
    fresh = Diagnosis()
    fresh.defer_statuses(np.array(["x", "y"], object), np.array([first, second], object))
    assert fresh.status_count() == 2 and fresh._deferred  # counted without building the map
    assert fresh.node_to_status == {"x": first, "y": second}
