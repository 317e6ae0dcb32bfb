"""Replays the conformance corpus' expected traces and checks NodeResourcesFit /
NodeResourcesBalancedAllocation against the real kube-scheduler's recorded reasons and
scores (only these two plugins; the trace decides placements and victims)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from kubesched._runtime.handle import FrameworkHandle
from kubesched.features import FEATURES_1_30
from kubesched.framework import CycleState
from kubesched.objects import Pod
from kubesched.objects.manifests import load_manifests
from kubesched.plugins.noderesources import BALANCED_NAME, FIT_NAME, new_balanced_allocation, new_fit

CORPUS = Path(__file__).resolve().parents[4] / "shared" / "conformance"
# Filter plugins that run after NodeResourcesFit (default profile order): a node failing
# one of them passed NodeResourcesFit.
AFTER_FIT = {"VolumeRestrictions", "EBSLimits", "GCEPDLimits", "NodeVolumeLimits", "AzureDiskLimits",
             "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity"}


@dataclass
class Report:
    checked_filters: int = 0
    checked_scores: int = 0
    mismatches: list[str] = field(default_factory=list)


def replay(name: str) -> Report:
    rep = Report()
    objs = load_manifests([CORPUS / "scenarios" / f"{name}.yaml"], features=FEATURES_1_30)
    expected = json.loads((CORPUS / "expected" / f"{name}.json").read_text())
    running = [p for p in objs.pods if p.node_name and not p.is_terminal]
    pending = {p.key: p for p in objs.pods if not p.node_name}
    by_key = {p.key: p for p in running}
    handle = FrameworkHandle.for_nodes(objs.nodes, running, features=FEATURES_1_30)
    fit = new_fit(None, handle)
    ba = new_balanced_allocation(None, handle)
    nominated = any(p.nominated_node_name for p in pending.values())
    for i, step in enumerate(expected["steps"]):
        pod: Pod = pending[step["pod"]]
        state = CycleState()
        infos = {ni.name: ni for ni in handle.snapshot.list()}
        table = handle.snapshot.table
        fit.pre_filter(state, pod)
        nominated = nominated or bool(step.get("nominatedNode"))
        failures = list(step["failures"].values())
        # Every node with one identical status and none feasible: most likely a PreFilter
        # rejection, in which case no Filter ran at all.
        prefilter_rejected = not step["feasible"] and all(f == failures[0] for f in failures)
        if not nominated:  # filters then ran without nominated pods added
            for node, f in step["failures"].items():
                ni = infos[node]
                st = fit.filter(state, pod, ni)
                batch = bool(fit.filter_batch(state, pod, table, np.array([ni.index], np.int64))[0])
                got = list(st.reasons) if st is not None else []
                if f["plugin"] == FIT_NAME:
                    rep.checked_filters += 1
                    if sorted(got) != sorted(f["reasons"]) or batch:
                        rep.mismatches.append(f"{name} step {i} {pod.key} {node}: fit {got} want {f['reasons']}")
                elif f["plugin"] in AFTER_FIT and not prefilter_rejected:
                    rep.checked_filters += 1
                    if got or not batch:
                        rep.mismatches.append(f"{name} step {i} {pod.key} {node}: fit {got}, should pass")
            for node in step["feasible"]:
                rep.checked_filters += 1
                if fit.filter(state, pod, infos[node]) is not None:
                    rep.mismatches.append(f"{name} step {i} {pod.key} {node}: fit fails, node is feasible")
        if step["scores"]:
            nodes = [infos[n] for n in step["scores"]]
            rows = np.array([ni.index for ni in nodes], np.int64)
            fit.pre_score(state, pod, nodes)
            ba.pre_score(state, pod, nodes)
            fb = fit.score_batch(state, pod, table, rows)
            bb = ba.score_batch(state, pod, table, rows)
            for j, ni in enumerate(nodes):
                want = step["scores"][ni.name]
                for plugin, score, score_b in ((FIT_NAME, fit.score(state, pod, ni), fb[j]),
                                               (BALANCED_NAME, ba.score(state, pod, ni), bb[j])):
                    if plugin in want:
                        rep.checked_scores += 1
                        if score != want[plugin] or score_b != want[plugin]:
                            rep.mismatches.append(f"{name} step {i} {pod.key} {ni.name}: {plugin} {score}/{score_b} "
                                                  f"want {want[plugin]}")
        for victim in step["victims"]:
            handle.cache.remove_pod(by_key.pop(victim))
        if step["outcome"] == "Scheduled":
            bound = dataclasses.replace(pod, node_name=step["node"])
            handle.cache.add_pod(bound)
            by_key[bound.key] = bound
    return rep


def scenario_names() -> list[str]:
    return sorted(p.stem for p in (CORPUS / "expected").glob("*.json")) if CORPUS.is_dir() else []


@pytest.mark.skipif(not CORPUS.is_dir(), reason="conformance corpus not available")
@pytest.mark.parametrize("name", scenario_names(), ids=lambda n: f"scenario {n}: Fit reasons and Fit/Balanced scores match")
def test_conformance_corpus(name: str) -> None:
    rep = replay(name)
    assert not rep.mismatches, "\n".join(rep.mismatches[:20])
