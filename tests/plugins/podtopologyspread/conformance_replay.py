"""Replays the conformance corpus' expected traces and checks PodTopologySpread against the
real kube-scheduler's recorded filter reasons and scores (placements and victims come from
the trace itself, so one plugin can be checked in isolation).

Checked per step: every node whose recorded failure is PodTopologySpread's gets exactly
those reasons; every feasible node passes; every node PodTopologySpread scored gets its
normalized score x 2 (the default weight). Filter checks are skipped on nodes with
nominated pods (the framework then runs the filters with those pods added).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.framework import Code, CycleState, NodeScore
from kubesched.objects import Pod
from kubesched.objects.manifests import load_manifests
from kubesched.plugins.podtopologyspread import NAME, new

CORPUS = Path("/work/shared/conformance")
WEIGHT = 2
# Filter plugins that run after PodTopologySpread in the default profile: a node failing
# one of them passed PodTopologySpread.
AFTER = {"InterPodAffinity"}


@dataclass
class Report:
    checked_filters: int = 0
    checked_scores: int = 0
    mismatches: list[str] = field(default_factory=list)


def replay(name: str) -> Report:
    rep = Report()
    objs = load_manifests([CORPUS / "scenarios" / f"{name}.yaml"])
    expected = json.loads((CORPUS / "expected" / f"{name}.json").read_text())
    running = [p for p in objs.pods if p.node_name and not p.is_terminal]
    pending = {p.key: p for p in objs.pods if not p.node_name}
    by_key = {p.key: p for p in running}
    handle = FrameworkHandle.for_nodes(objs.nodes, running, MemoryObjects.from_cluster(objs))
    plugin = new(None, handle)
    nominated: dict[str, str] = {k: p.nominated_node_name for k, p in pending.items() if p.nominated_node_name}
    for i, step in enumerate(expected["steps"]):
        pod: Pod = pending[step["pod"]]
        state = CycleState()
        infos = {ni.name: ni for ni in handle.snapshot.list()}
        table = handle.snapshot.table
        _, pf = plugin.pre_filter(state, pod)
        skipped = pf is not None and pf.code == Code.SKIP
        busy = {n for k, n in nominated.items() if k != pod.key}
        checks = [(n, f) for n, f in step["failures"].items()]
        checks += [(n, None) for n in step["feasible"]]
        for node, f in checks:
            if node in busy:
                continue
            if f is not None and f["plugin"] != NAME and f["plugin"] not in AFTER:
                continue
            rep.checked_filters += 1
            ni = infos[node]
            if skipped:
                got: list[str] = []
                batch = True
            else:
                st = plugin.filter(state, pod, ni)
                got = list(st.reasons) if st is not None else []
                batch = bool(plugin.filter_batch(state, pod, table, np.array([ni.index], np.int64))[0])
            want = f["reasons"] if f is not None and f["plugin"] == NAME else []
            if got != want or batch != (not want):
                rep.mismatches.append(f"{name} step {i} {pod.key} {node}: filter {got} (batch {batch}) want {want}")
        if step["scores"]:
            nodes = [infos[n] for n in step["scores"]]
            st = plugin.pre_score(state, pod, nodes)
            scored = any(NAME in s for s in step["scores"].values())
            if (st is not None and st.code == Code.SKIP) == scored:
                rep.mismatches.append(f"{name} step {i} {pod.key}: pre_score {st}, scored upstream: {scored}")
            elif scored:
                rows = np.array([ni.index for ni in nodes], np.int64)
                raw = plugin.score_batch(state, pod, table, rows)
                norm = plugin.normalize_score_batch(state, pod, raw.copy())
                lst = [NodeScore(ni.name, plugin.score(state, pod, ni)) for ni in nodes]
                plugin.normalize_score(state, pod, lst)
                for j, ni in enumerate(nodes):
                    rep.checked_scores += 1
                    want_score = step["scores"][ni.name][NAME]
                    if lst[j].score * WEIGHT != want_score or int(norm[j]) * WEIGHT != want_score:
                        rep.mismatches.append(f"{name} step {i} {pod.key} {ni.name}: score {lst[j].score}/"
                                              f"{int(norm[j])} x{WEIGHT} want {want_score}")
        for victim in step["victims"]:
            handle.cache.remove_pod(by_key.pop(victim))
        if step.get("nominatedNode"):
            nominated[pod.key] = step["nominatedNode"]
        if step["outcome"] == "Scheduled":
            nominated.pop(pod.key, None)
            bound = dataclasses.replace(pod, node_name=step["node"])
            handle.cache.add_pod(bound)
            by_key[bound.key] = bound
    return rep


def scenario_names() -> list[str]:
    return sorted(p.stem for p in (CORPUS / "expected").glob("*.json"))


if __name__ == "__main__":
    total = Report()
    for n in scenario_names():
        try:
            r = replay(n)
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            print("ERROR", n, type(e).__name__, e)
            continue
        total.checked_filters += r.checked_filters
        total.checked_scores += r.checked_scores
        total.mismatches += r.mismatches
    print(total.checked_filters, total.checked_scores, len(total.mismatches))
    for m in total.mismatches[:60]:
        print(m)
