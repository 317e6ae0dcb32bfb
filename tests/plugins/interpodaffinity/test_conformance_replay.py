"""Replays the conformance corpus (../shared/conformance) and checks InterPodAffinity alone
against the real kube-scheduler v1.30.12's recorded filter reasons and scores.

The expected trace decides placements, nominations and victims; each step rebuilds the
plugin's view: PreFilter, Filter on every node the trace lists (with nominated pods of
higher or equal priority added through AddPod first, as RunFilterPluginsWithNominatedPods
does), PreScore/Score/NormalizeScore over the feasible nodes when the trace scored them.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kubesched._cache import Cache
from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.features import FEATURES_1_30
from kubesched.framework import CycleState, NodeInfo, NodeScore, PodInfo, Status
from kubesched.objects import Pod, load_manifests
from kubesched.plugins.interpodaffinity import NAME, InterPodAffinity, new

CORPUS = Path(__file__).resolve().parents[4] / "shared" / "conformance"
WEIGHT = 2


def _scenarios() -> list[Any]:
    features_file = CORPUS / "features.json"
    if not features_file.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"conformance corpus not found at {CORPUS}"))]
    features = json.loads(features_file.read_text())
    return [pytest.param(name, id=f"scenario {name} replays InterPodAffinity's reasons and scores")
            for name in sorted(features)]


def _filter(pl: InterPodAffinity, state: CycleState, pod: Pod, ni: NodeInfo, nominated: list[Pod]) -> Status | None:
    """RunFilterPluginsWithNominatedPods, for this plugin only."""
    if nominated:
        cloned = state.clone()
        for q in nominated:
            assert pl.add_pod(cloned, pod, PodInfo(q), ni) is None
        st = pl.filter(cloned, pod, ni)
        if st is not None:
            return st
    return pl.filter(state, pod, ni)


def replay(name: str) -> tuple[int, list[str]]:
    objs = load_manifests([CORPUS / "scenarios" / f"{name}.yaml"], features=FEATURES_1_30)
    expected = json.loads((CORPUS / "expected" / f"{name}.json").read_text())
    running = {p.key: p for p in objs.pods if p.node_name and not p.is_terminal}
    pending = {p.key: p for p in objs.pods if not p.node_name}
    nominated = {k: p.nominated_node_name for k, p in pending.items() if p.nominated_node_name}
    cache = Cache(max(len(objs.nodes), 1))
    cache.add_nodes(objs.nodes)
    for p in running.values():
        cache.add_pod(p)
    handle = FrameworkHandle(cache, MemoryObjects.from_cluster(objs), features=FEATURES_1_30)
    pl = new(None, handle)
    checked = 0
    mismatches: list[str] = []
    for i, step in enumerate(expected["steps"]):
        pod = pending[step["pod"]]
        where = f"{name} step {i} {pod.key}"
        infos = {ni.name: ni for ni in handle.snapshot.list()}
        table = handle.snapshot.table
        state = CycleState()
        _, pre = pl.pre_filter(state, pod)
        skipped = pre is not None and pre.is_skip()
        assert pre is None or skipped
        failures: dict[str, Any] = step["failures"]
        prefilter_rejected = bool(failures) and not step["feasible"] and all(
            f == next(iter(failures.values())) and f["plugin"] != NAME for f in failures.values())
        for node_name in [*step["feasible"], *failures]:
            f = failures.get(node_name)
            if f is not None and f["plugin"] != NAME:
                continue
            if prefilter_rejected:
                continue
            ni = infos[node_name]
            noms = [pending[k] for k, n in nominated.items()
                    if n == node_name and k != pod.key and pending[k].priority >= pod.priority]
            got = None if skipped else _filter(pl, state, pod, ni, noms)
            if not skipped and not noms:
                batch = bool(pl.filter_batch(state, pod, table, np.array([ni.index], np.int64))[0])
                if batch != (got is None):
                    mismatches.append(f"{where} {node_name}: batch {batch} vs filter {got}")
            checked += 1
            want = None if f is None else (f["reasons"])
            if (None if got is None else list(got.reasons)) != want:
                mismatches.append(f"{where} {node_name}: got {got}, want {want}")
        if step["scores"]:
            feasible = [infos[n] for n in step["scores"]]
            st = pl.pre_score(state, pod, feasible)
            want_scores = {n: s.get(NAME) for n, s in step["scores"].items()}
            checked += 1
            if any(v is None for v in want_scores.values()):
                if not (st is not None and st.is_skip()):
                    mismatches.append(f"{where}: PreScore {st}, want Skip")
            elif st is not None:
                mismatches.append(f"{where}: PreScore {st}, want scores {want_scores}")
            else:
                scores = [NodeScore(ni.name, pl.score(state, pod, ni)) for ni in feasible]
                raw = pl.score_batch(state, pod, table, np.array([ni.index for ni in feasible], np.int64))
                normalized = pl.normalize_score_batch(state, pod, raw)
                pl.normalize_score(state, pod, scores)
                got_scores = {s.name: s.score * WEIGHT for s in scores}
                if got_scores != want_scores or [int(b) * WEIGHT for b in normalized] != list(got_scores.values()):
                    mismatches.append(f"{where}: scores {got_scores} (batch {list(normalized)}), want {want_scores}")
        # Apply the step's outcome as the trace records it.
        for victim in step["victims"]:
            cache.remove_pod(running.pop(victim))
            nominated.pop(victim, None)
        if step["nominatedNode"]:
            nominated[pod.key] = step["nominatedNode"]
            for k, n in list(nominated.items()):
                if n == step["nominatedNode"] and pending[k].priority < pod.priority:
                    del nominated[k]
        if step["outcome"] == "Scheduled":
            bound = dataclasses.replace(pod, node_name=step["node"])
            cache.add_pod(bound)
            running[bound.key] = bound
            nominated.pop(pod.key, None)
        elif not step["nominatedNode"] and pod.preemption_policy != "Never":
            nominated.pop(pod.key, None)
    return checked, mismatches


@pytest.mark.parametrize("name", _scenarios())
def test_conformance_replay(name: str) -> None:
    _, mismatches = replay(name)
    assert mismatches == []
