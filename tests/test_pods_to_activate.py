"""PodsToActivate: a plugin asks, during a successful cycle, for other pods to move to activeQ."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched._runtime.registry import Registry, in_tree_registry
from kubesched.config import parse_config
from kubesched.framework import PODS_TO_ACTIVATE_KEY, CycleState, NodeInfo, Status
from kubesched.objects import Pod, load_manifests
from kubesched.timeline import TimelineSimulator

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {capacity: {cpu: "4", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: follower, namespace: default, creationTimestamp: "2024-01-01T00:00:00Z"}
spec: {containers: [{name: c, image: x}]}
---
apiVersion: v1
kind: Pod
metadata: {name: leader, namespace: default, creationTimestamp: "2024-01-01T00:00:05Z"}
spec: {containers: [{name: c, image: x}]}
"""


class WaitForLeader:
    """Rejects 'follower' until 'leader' is bound; when 'leader' is reserved, activates 'follower'."""

    name = "WaitForLeader"

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.leader_bound = False

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if pod.name == "follower" and not self.leader_bound:
            return Status.unschedulable("waiting for the leader")
        return None

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if pod.name == "leader":
            self.leader_bound = True
            follower = self.handle.objects.pod("default", "follower")
            state.read(PODS_TO_ACTIVATE_KEY).map[follower.key] = follower
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        pass


def test_an_activated_pod_is_retried_at_once_instead_of_after_the_five_minute_flush(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(CLUSTER)
    reg = Registry(in_tree_registry())
    reg.register("WaitForLeader", lambda args, handle: WaitForLeader(handle))
    cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "profiles": [{"plugins": {"filter": {"enabled": [{"name": "WaitForLeader"}]},
                                                  "reserve": {"enabled": [{"name": "WaitForLeader"}]}}}]})
    res = TimelineSimulator(load_manifests([f]), cfg, seed=1, registry=reg).run()
    assert res.final == {"default/follower": "n1", "default/leader": "n1"}
    scheduled = {e.pod: e.time - res.start for e in res.events if e.reason == "Scheduled"}
    # The follower failed at t=0 (nothing in the cluster changes for its rejector plugin); the
    # leader's activation brings it back right after t=5, not at the 5-minute flush.
    assert scheduled["default/leader"] == 5.0
    assert scheduled["default/follower"] < 60.0
