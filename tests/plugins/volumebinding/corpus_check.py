"""Replays the conformance corpus' traces and checks the volume plugins' PreFilter/Filter
verdicts against the real kube-scheduler's per-node failures (shared by
test_volume_corpus.py; also runnable as a script for a summary).

For every step, the cluster state is rebuilt from the trace (pods bound by earlier steps,
preemption victims removed, nominations followed), the volume plugins run PreFilter and
Filter in the default profile's order, and each node's outcome must agree with the expected
trace:
- a node failed by a volume plugin: that plugin is the first volume plugin to reject it, with
  the same reasons (or the pod is rejected at PreFilter with that status);
- a feasible node, or one failed by a plugin after the volume plugins in the Filter order:
  every volume plugin passes;
- a node failed by an earlier plugin: nothing is known about the volume plugins.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from kubesched._runtime.handle import FrameworkHandle
from kubesched.cluster.memory import MemoryObjects
from kubesched.features import FEATURES_1_30
from kubesched.framework import CycleState, NodeInfo, PodInfo, Status
from kubesched.objects import Pod, load_manifests
from kubesched.plugins import nodevolumelimits, volumebinding, volumerestrictions, volumezone

CORPUS = Path(__file__).resolve().parents[4] / "shared" / "conformance"

# Default Filter order of the volume plugins (facts 1.2).
VOLUME_PLUGINS = ("VolumeRestrictions", "EBSLimits", "GCEPDLimits", "NodeVolumeLimits", "AzureDiskLimits",
                  "VolumeBinding", "VolumeZone")
BEFORE = {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit"}
AFTER = {"PodTopologySpread", "InterPodAffinity"}


def scenario_names() -> list[str]:
    """The volumes/volumelimits scenarios and every other scenario where a volume plugin
    rejected a node (features.json)."""
    if not (CORPUS / "features.json").exists():
        return []
    features = json.loads((CORPUS / "features.json").read_text())
    return sorted(name for name, f in features.items()
                  if name.endswith(("-volumes", "-volumelimits")) or set(f["plugins"]) & set(VOLUME_PLUGINS))


def _plugins(handle: FrameworkHandle) -> list[Any]:
    return [
        volumerestrictions.new(None, handle),
        nodevolumelimits.new_ebs(None, handle),
        nodevolumelimits.new_gce_pd(None, handle),
        nodevolumelimits.new_csi(None, handle),
        nodevolumelimits.new_azure_disk(None, handle),
        volumebinding.new(None, handle),
        volumezone.new(None, handle),
    ]


def _fmt(s: Status | None) -> tuple[str, tuple[str, ...]] | None:
    return None if s is None else (s.plugin, s.reasons)


def check_scenario(name: str) -> list[str]:
    """Mismatches (empty when the volume plugins agree with the trace everywhere)."""
    objs = load_manifests([CORPUS / "scenarios" / f"{name}.yaml"], features=FEATURES_1_30)
    expected = json.loads((CORPUS / "expected" / f"{name}.json").read_text())
    objects = MemoryObjects.from_cluster(objs)
    pods_by_key = {p.key: p for p in objs.pods}
    running: dict[str, Pod] = {p.key: p for p in objs.pods if p.node_name and not p.is_terminal}
    nominated: dict[str, str] = {p.key: p.nominated_node_name for p in objs.pods
                                 if not p.node_name and p.nominated_node_name}
    problems: list[str] = []
    for i, step in enumerate(expected["steps"]):
        pod = pods_by_key[step["pod"]]
        handle = FrameworkHandle.for_nodes(objs.nodes, list(running.values()), objects, features=FEATURES_1_30)
        plugins = _plugins(handle)
        state = CycleState()
        pre: Status | None = None
        skipped: set[str] = set()
        for p in plugins:
            _, s = p.pre_filter(state, pod)
            if s is not None and s.is_skip():
                skipped.add(p.name)
            elif s is not None and not s.is_success():
                pre = s.with_plugin(p.name)
                break
        failures: dict[str, Any] = step["failures"]
        feasible = set(step["feasible"])
        for ni in handle.snapshot.list():
            node = ni.name
            want = failures.get(node)
            if want is None and node not in feasible:
                continue  # not evaluated (PreFilterResult, nominated node first)
            if want is not None and want["plugin"] in BEFORE:
                continue
            if want is not None and want["plugin"] not in VOLUME_PLUGINS and want["plugin"] not in AFTER:
                continue
            if pre is not None:
                got = _fmt(pre)
            else:
                got = _fmt(_filter_with_nominated(plugins, skipped, state, pod, ni, nominated, pods_by_key, running))
            exp = None if want is None or want["plugin"] in AFTER else (want["plugin"], tuple(want["reasons"]))
            if got != exp:
                problems.append(f"{name} step {i} {step['pod']} on {node}: expected {exp}, got {got}")
        # Apply the step's outcome.
        for v in step["victims"]:
            running.pop(v, None)
        if step["outcome"] == "Scheduled":
            running[pod.key] = dataclasses.replace(pod, node_name=step["node"])
            nominated.pop(pod.key, None)
        elif step["nominatedNode"]:
            chosen = step["nominatedNode"]
            for k, n in list(nominated.items()):
                if n == chosen and pods_by_key[k].priority < pod.priority:
                    del nominated[k]
            nominated[pod.key] = chosen
        else:
            nominated.pop(pod.key, None)
    return problems


def _run_filters(plugins: list[Any], skipped: set[str], state: CycleState, pod: Pod, ni: NodeInfo) -> Status | None:
    for p in plugins:
        if p.name in skipped:
            continue
        s = p.filter(state, pod, ni)
        if s is not None and not s.is_success():
            return s.with_plugin(p.name)
    return None


def _filter_with_nominated(plugins: list[Any], skipped: set[str], state: CycleState, pod: Pod, ni: NodeInfo,
                           nominated: dict[str, str], pods_by_key: dict[str, Pod],
                           running: dict[str, Pod]) -> Status | None:
    """RunFilterPluginsWithNominatedPods for the volume plugins only."""
    noms = [pods_by_key[k] for k, n in nominated.items()
            if n == ni.name and k != pod.key and k not in running and pods_by_key[k].priority >= pod.priority]
    if noms:
        ni2 = ni.clone()
        st2 = state.clone()
        for q in noms:
            pi = PodInfo(dataclasses.replace(q, node_name=ni.name))
            ni2.add_pod_info(pi)
            for p in plugins:
                ext = p.pre_filter_extensions() if hasattr(p, "pre_filter_extensions") else None
                if ext is not None and p.name not in skipped:
                    ext.add_pod(st2, pod, pi, ni2)
        s = _run_filters(plugins, skipped, st2, pod, ni2)
        if s is not None:
            return s
    return _run_filters(plugins, skipped, state, pod, ni)


if __name__ == "__main__":
    total = 0
    for n in (sys.argv[1:] or scenario_names()):
        probs = check_scenario(n)
        total += len(probs)
        print(f"{n}: {'PASS' if not probs else f'{len(probs)} mismatches'}")
        for p in probs[:5]:
            print("   ", p)
    print("total mismatches:", total)
