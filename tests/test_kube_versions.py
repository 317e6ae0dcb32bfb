"""What kube-scheduler 1.36 decides differently from 1.30, rule by rule: each scenario is
simulated under both releases (``--kube-version``) with the conformance procedure, and both
answers are checked. The expected 1.36 texts are the real v1.36.2's (../shared/conformance4 and
its differences map, §4-§5); the 1.30 ones are v1.30.12's.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubesched.features import FEATURES_1_30, FEATURES_1_36, Features
from kubesched.objects import load_manifests
from kubesched.simulation import Simulator, step_to_json

NODE = """
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}{labels}}}}}
spec: {{{spec}}}
status: {{capacity: {{cpu: "{cpu}", memory: {memory}, pods: "110"}}}}
"""


def node(name: str, cpu: str = "4", memory: str = "8Gi", labels: str = "", spec: str = "") -> str:
    return NODE.format(name=name, cpu=cpu, memory=memory, labels=(", " + labels) if labels else "", spec=spec)


def run(tmp_path: Path, docs: list[str], features: Features) -> list[dict[str, Any]]:
    f = tmp_path / "s.yaml"
    f.write_text("\n---\n".join(textwrap.dedent(d) for d in docs))
    objs = load_manifests([f], controllers="none", features=features)
    result = Simulator(objs, deterministic=True, features=features).run()
    assert result.trace()["oracle"] == features.oracle
    return [step_to_json(s) for s in result.steps]


TAINTED = [node("n1", spec="taints: [{key: dedicated, value: gpu, effect: NoSchedule}]"), """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: i}]}
"""]

OVERSIZE = [node("n1"), """
apiVersion: v1
kind: Pod
metadata: {name: low}
spec: {nodeName: n1, priority: 0, containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
""", """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
""", """
apiVersion: v1
kind: Pod
metadata: {name: big}
spec: {priorityClassName: high, containers: [{name: c, image: i, resources: {requests: {cpu: "8"}}}]}
"""]

PINNED = [node("n1", cpu="2"), node("n2"), node("n3"), """
apiVersion: v1
kind: Pod
metadata: {name: running}
spec: {nodeName: n1, containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
""", """
apiVersion: v1
kind: Pod
metadata: {name: ds}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]
  containers: [{name: c, image: i, resources: {requests: {cpu: "2"}}}]
"""]

PV_AFFINITY = [node("n1"), """
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [other]}]}]}}
  claimRef: {namespace: default, name: data}
""", """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, annotations: {pv.kubernetes.io/bind-completed: "yes"}}
spec: {accessModes: [ReadWriteOnce], storageClassName: local, volumeName: pv1, resources: {requests: {storage: 1Gi}}}
""", """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: i}]
  volumes: [{name: v, persistentVolumeClaim: {claimName: data}}]
"""]

DECLARED = [node("n1"), """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: i, restartPolicyRules: [{action: RestartAllContainers, exitCodes: {operator: In, values: [42]}}]}]
"""]

POD_LEVEL = [node("n1", cpu="2"), """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  resources: {requests: {cpu: "3"}}
  containers: [{name: c, image: i, resources: {requests: {cpu: 100m}}}]
"""]

SIDECAR_PORT = [node("n1"), """
apiVersion: v1
kind: Pod
metadata: {name: running}
spec:
  nodeName: n1
  initContainers: [{name: proxy, image: i, restartPolicy: Always, ports: [{containerPort: 80, hostPort: 8080}]}]
  containers: [{name: c, image: i}]
""", """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: i, ports: [{containerPort: 80, hostPort: 8080}]}]}
"""]

MESSAGES = [
    pytest.param(TAINTED,
                 "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/1 nodes are "
                 "available: 1 Preemption is not helpful for scheduling.",
                 "0/1 nodes are available: 1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: "
                 "0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
                 id="a taint is reported as one generic reason and DynamicResources' PostFilter speaks first"),
    pytest.param(OVERSIZE,
                 "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu.",
                 "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are "
                 "available: 1 Preemption is not helpful for scheduling.",
                 id="a request above the node's allocatable is unresolvable, so preemption is not tried"),
    pytest.param(PINNED,
                 "0/3 nodes are available: 1 Insufficient cpu. preemption: 0/3 nodes are available: 1 No preemption "
                 "victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
                 "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new "
                 "claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption victims found for "
                 "incoming pod, 2 Preemption is not helpful for scheduling.",
                 id="nodes a PreFilterResult excluded count in the message"),
    pytest.param(PV_AFFINITY,
                 "0/1 nodes are available: 1 node(s) had volume node affinity conflict. preemption: 0/1 nodes are "
                 "available: 1 Preemption is not helpful for scheduling.",
                 "0/1 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity. no new claims to "
                 "deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
                 id="a bound PV's node affinity conflict has 1.36's words"),
    pytest.param(DECLARED, None,
                 "0/1 nodes are available: 1 node(s) didn't match Pod's required features. no new claims to deallocate, "
                 "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
                 id="a pod needing a node feature fits only nodes declaring it"),
    pytest.param(POD_LEVEL, None,
                 "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are "
                 "available: 1 Preemption is not helpful for scheduling.",
                 id="pod-level resources replace the containers' requests"),
    pytest.param(SIDECAR_PORT, None,
                 "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. no new claims "
                 "to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
                 id="a sidecar's host port is taken on its node"),
]


@pytest.mark.parametrize(("docs", "message_130", "message_136"), MESSAGES)
def test_the_failed_scheduling_message_is_each_release_s_own(tmp_path: Path, docs: list[str], message_130: str | None,
                                                             message_136: str) -> None:
    old = run(tmp_path, docs, FEATURES_1_30)[-1]
    new = run(tmp_path, docs, FEATURES_1_36)[-1]
    if message_130 is None:
        assert old["outcome"] == "Scheduled"  # 1.30 had no such rule
    else:
        assert old["message"] == message_130
    assert new["outcome"] == "Unschedulable"
    assert new["message"] == message_136


def test_the_pinned_pod_s_excluded_nodes_show_in_failures_without_a_plugin(tmp_path: Path) -> None:
    step = run(tmp_path, PINNED, FEATURES_1_36)[-1]
    assert step["failures"]["n2"] == {"plugin": "", "reasons": ["node(s) didn't satisfy plugin(s) [NodeAffinity]"]}
    assert "n2" not in run(tmp_path, PINNED, FEATURES_1_30)[-1]["failures"]


def _balanced(pod_requests: str) -> list[str]:
    return [node("n1", cpu="4", memory="8Gi"), node("n2", cpu="4", memory="8Gi"), """
apiVersion: v1
kind: Pod
metadata: {name: running}
spec: {nodeName: n1, containers: [{name: c, image: i, resources: {requests: {cpu: "3", memory: 1Gi}}}]}
""", f"""
apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec: {{containers: [{{name: c, image: i{pod_requests}}}]}}
"""]


def test_balanced_allocation_scores_the_change_of_balance(tmp_path: Path) -> None:
    docs = _balanced(", resources: {requests: {cpu: 500m, memory: 1Gi}}")
    old = run(tmp_path, docs, FEATURES_1_30)[-1]["scores"]["n1"]["NodeResourcesBalancedAllocation"]
    new = run(tmp_path, docs, FEATURES_1_36)[-1]["scores"]["n1"]["NodeResourcesBalancedAllocation"]
    # alloc 4 cpu / 8Gi, used 3 cpu / 1Gi, pod 500m / 1Gi: |0.875 - 0.25| / 2 -> 68 (1.30);
    # before the pod |0.75 - 0.125| / 2 -> 68 too, so 1.36 gives 50 + (50 + 68 - 68) / 2 = 75.
    assert (old, new) == (68, 75)


def test_balanced_allocation_skips_a_best_effort_pod(tmp_path: Path) -> None:
    docs = _balanced("")
    assert "NodeResourcesBalancedAllocation" in run(tmp_path, docs, FEATURES_1_30)[-1]["scores"]["n1"]
    assert "NodeResourcesBalancedAllocation" not in run(tmp_path, docs, FEATURES_1_36)[-1]["scores"]["n1"]


def test_dynamic_resources_scores_every_node_zero_in_the_default_profile(tmp_path: Path) -> None:
    docs = _balanced("")
    assert run(tmp_path, docs, FEATURES_1_36)[-1]["scores"]["n2"]["DynamicResources"] == 0
    assert "DynamicResources" not in run(tmp_path, docs, FEATURES_1_30)[-1]["scores"]["n2"]


def test_equal_top_scores_go_to_the_heap_s_root_not_the_smallest_name(tmp_path: Path) -> None:
    # Preferred node affinity makes the totals, in scan order a, b, c, d: low, mid, top, top.
    # Go's container/heap puts d at the root ([5, 6, 7, 7] -> index 3); 1.30's conformance
    # procedure takes the smallest name among the ties (c).
    nodes = [node("a"), node("b", labels="tier: mid"), node("c", labels="tier: top"), node("d", labels="tier: top")]
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: i}]
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 50, preference: {matchExpressions: [{key: tier, operator: In, values: [mid, top]}]}}
      - {weight: 50, preference: {matchExpressions: [{key: tier, operator: In, values: [top]}]}}
"""
    assert run(tmp_path, [*nodes, pod], FEATURES_1_30)[-1]["node"] == "c"
    assert run(tmp_path, [*nodes, pod], FEATURES_1_36)[-1]["node"] == "d"


def test_a_sidecar_s_requests_count_in_its_node_s_non_zero_requests(tmp_path: Path) -> None:
    # The running pod: sidecar 200m + container 300m. 1.30's calculateResource counted 300m
    # (the sidecar only through the init maximum), 1.36 counts 500m: Fit's score on n1 differs.
    docs = [node("n1"), node("n2"), """
apiVersion: v1
kind: Pod
metadata: {name: running}
spec:
  nodeName: n1
  initContainers: [{name: s, image: i, restartPolicy: Always, resources: {requests: {cpu: 200m, memory: 1Gi}}}]
  containers: [{name: c, image: i, resources: {requests: {cpu: 300m, memory: 1Gi}}}]
""", """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 1, memory: 1Gi}}}]}
"""]
    old = run(tmp_path, docs, FEATURES_1_30)[-1]["scores"]["n1"]["NodeResourcesFit"]
    new = run(tmp_path, docs, FEATURES_1_36)[-1]["scores"]["n1"]["NodeResourcesFit"]
    # cpu (4000 - 1300) / 4000 -> 67 vs (4000 - 1500) / 4000 -> 62; memory: the sidecar's 1Gi
    # counted only through the init maximum (8Gi - 2Gi) / 8Gi -> 75 vs (8Gi - 3Gi) / 8Gi -> 62.
    assert (old, new) == ((67 + 75) // 2, (62 + 62) // 2)


def test_match_label_keys_are_merged_into_the_selector_at_admission(tmp_path: Path) -> None:
    # Anti-affinity against pods of the same "version" only: the running pod is version 1,
    # the new one version 2. 1.30's API server dropped matchLabelKeys (every app=web pod
    # repels); 1.36's merged "version In [2]" into the selector (only version-2 pods repel).
    docs = [node("n1"), """
apiVersion: v1
kind: Pod
metadata: {name: running, labels: {app: web, version: "1"}}
spec: {nodeName: n1, containers: [{name: c, image: i}]}
""", """
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {app: web, version: "2"}}
spec:
  containers: [{name: c, image: i}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [version]}
"""]
    assert run(tmp_path, docs, FEATURES_1_30)[-1]["outcome"] == "Unschedulable"
    assert run(tmp_path, docs, FEATURES_1_36)[-1]["node"] == "n1"


ZONED = [node("n1", labels="topology.kubernetes.io/zone: a, topology.kubernetes.io/region: r1"), """
apiVersion: v1
kind: Pod
metadata: {name: first, creationTimestamp: "2024-01-01T00:00:00Z"}
spec: {containers: [{name: c, image: i}]}
status: {nominatedNodeName: n1}
""", """
apiVersion: v1
kind: Pod
metadata: {name: second, creationTimestamp: "2024-01-01T00:00:01Z"}
spec:
  containers: [{name: c, image: i}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {topology.kubernetes.io/zone: a}}}
"""]


@pytest.mark.parametrize(("features", "second", "labels", "nominated"), [
    pytest.param(FEATURES_1_36, None, {"topology.kubernetes.io/zone": "a", "topology.kubernetes.io/region": "r1"}, "",
                 id="1.36: the binding copies the node's zone and region onto the pod and clears its nomination"),
    pytest.param(FEATURES_1_30, "n1", {}, "n1", id="v1.30: the bound pod keeps its labels and its nomination"),
])
def test_the_api_server_s_binding_relabels_the_pod_and_clears_its_nomination(
        tmp_path: Path, features: Features, second: str | None, labels: dict[str, str], nominated: str) -> None:
    # PodTopologyLabelsAdmission + ClearingNominatedNodeNameAfterBinding (1.35 beta): "second"
    # repels pods labelled zone=a -- which "first" becomes only through its binding in 1.36.
    f = tmp_path / "s.yaml"
    f.write_text("\n---\n".join(textwrap.dedent(d) for d in ZONED))
    objs = load_manifests([f], controllers="none", features=features)
    sim = Simulator(objs, deterministic=True, features=features)
    steps = [step_to_json(s) for s in sim.run().steps]
    assert steps[0]["node"] == "n1"
    assert steps[1].get("node") == second
    first = sim.current[next(p.uid for p in objs.pods if p.name == "first")]
    assert dict(first.meta.labels) == labels
    assert first.nominated_node_name == nominated
